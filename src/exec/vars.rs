//! Names every part of exec shares, in a leaf: the environment variables expr sets on what it
//! starts, and places inside a result directory.

/// The two variables every step's environment holds (the plan says them: they are the
/// kind contract's, below plan and exec).
pub use crate::kind_api::step::{MARK_VAR, RESULT_DIR_VAR};

/// Where Slurm array tasks write their journal fragments, inside the result directory.
pub const TASKS_DIR: &str = "runtime/array/tasks";

/// The hidden subcommand a run's sentinel runs as (`expr __watch DIR`).
pub const SENTINEL_SUBCOMMAND: &str = "__watch";

/// What a sentinel's lock says it does (a second process is told).
pub const SENTINEL_LOCK_WHAT: &str = "the sentinel of a killed run, stopping what it left";
