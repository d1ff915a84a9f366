//! Exit codes, named so tests can assert them.

/// Everything succeeded (warnings allowed).
pub const OK: i32 = 0;
/// An internal error or an unusable command line.
pub const INTERNAL: i32 = 1;
/// The experiment is invalid.
pub const INVALID: i32 = 2;
/// At least one matrix point failed.
pub const POINT_FAILED: i32 = 3;
/// Preflight failed: a host unreachable, a repo or runner file missing, code that differs;
/// nothing ran and no point is counted.
pub const PREFLIGHT: i32 = 4;
/// `expr compare --fail-on-regression PCT`: a significant regression beyond PCT.
pub const REGRESSION: i32 = 5;
/// Every point ran, but an `expect` of the experiment is not met.
pub const EXPECTATION: i32 = 6;
/// Interrupted by SIGINT / SIGTERM.
pub const INTERRUPTED: i32 = 130;
