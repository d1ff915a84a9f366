//! Execution: the run (`run/`) over its state and recorder (`state/`), preflight and the
//! machines' checks (`preflight/`, `noise/`), where steps run (`backend/`, `slurm/`, behind the
//! `allocator/` interface), `expr stop` and the run's sentinel that does it when expr is killed, and the leaves they share (signals, the directory lock,
//! names).

pub mod allocator;
pub mod backend;
pub mod lock;
pub mod noise;
mod preflight;
pub mod run;
pub mod sentinel;
pub mod signals;
pub mod slurm;
pub mod state;
pub mod stop;
pub mod vars;
