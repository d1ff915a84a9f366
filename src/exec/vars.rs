//! The environment variables expr sets on what it starts: a leaf every part of exec may read.

/// The result directory of the run that started a process (absolute): `expr stop` on another
/// directory leaves the process alone while that run lives.
pub const RESULT_DIR_VAR: &str = "EXPR_RESULT_DIR";

/// The mark of a run's point (`<run mark>:<point>;`), kept by every descendant of a step, so
/// what leaves its process group is still found (`super::escape`).
pub const MARK_VAR: &str = "EXPR_MARK";
