//! A run, stage by stage: the loop that ties them (`runner`), the campaign over the plan's
//! points, the setup steps, one point's execution, its numbers and adaptive repeats, the
//! shells' calibration and Slurm array mode.

pub(in crate::exec) mod adaptive;
pub mod array;
pub(in crate::exec) mod calibrate;
pub(in crate::exec) mod campaign;
pub(in crate::exec) mod point;
pub(in crate::exec) mod pool;
pub mod runner;
pub(in crate::exec) mod setup;
