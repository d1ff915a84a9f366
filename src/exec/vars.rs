//! Names every part of exec shares, in a leaf: the environment variables expr sets on what it
//! starts, and places inside a result directory.

/// The result directory of the run that started a process (absolute): `expr stop` on another
/// directory leaves the process alone while that run lives.
pub const RESULT_DIR_VAR: &str = "EXPR_RESULT_DIR";

/// The mark of a run's point (`<run mark>:<point>;`), kept by every descendant of a step, so
/// what leaves its process group is still found (`crate::exec::backend::escape`).
pub const MARK_VAR: &str = "EXPR_MARK";

/// Where Slurm array tasks write their journal fragments, inside the result directory.
pub const TASKS_DIR: &str = "runtime/array/tasks";

/// The hidden subcommand a run's sentinel runs as (`expr __watch DIR`).
pub const SENTINEL_SUBCOMMAND: &str = "__watch";

/// What a sentinel's lock says it does (a second process is told).
pub const SENTINEL_LOCK_WHAT: &str = "the sentinel of a killed run, stopping what it left";
