//! Execution: backends, the runner, the journal, the manifest, progress and `expr stop`.

mod adaptive;
pub mod agent;
pub mod allocator;
pub mod array;
pub mod backend;
mod calibrate;
mod campaign;
mod consumers;
pub mod escape;
pub mod host;
pub mod lock;
mod machine_check;
pub mod noise;
pub mod options;
mod point;
mod preflight;
mod probe;
pub mod progress;
pub mod reaper;
pub mod rows;
pub mod runner;
pub mod scratch;
pub mod signals;
pub mod slurm;
pub mod state;
pub mod stop;
pub mod vars;
