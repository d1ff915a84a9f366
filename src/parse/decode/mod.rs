//! The hand-written walker from `KdlDocument` to `Experiment` (see walker.rs), with placement
//! nodes and lanes/sweeps in their own files.

mod placement;
mod sweep;
mod walker;

pub use sweep::repeated_sweep_value;
pub use walker::{bench_params, decode, default_output, default_val, Decoder, Got};
