//! Collectors: turn a point's artifacts into numbers, naming the file and line of anything they
//! cannot read. A collector that finds nothing says so; it never invents a zero.

pub mod kernels;
pub mod steps;
