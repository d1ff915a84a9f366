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
/// The result directory is in use by another expr (a run writing it): `report` and `stop`
/// leave it alone.
pub const BUSY: i32 = 7;
/// What a step's shell exits with when it cannot enter the step's working directory (`cd DIR
/// || exit 200`, on an ssh host and in commands.sh): a code above 128, which `exit-ok=` never
/// accepts there, so that a missing directory fails a step that may exit 1 on purpose.
pub const CD_FAILED: i32 = 200;
/// Interrupted by SIGINT / SIGTERM.
pub const INTERRUPTED: i32 = 130;
/// Stopped by SIGHUP (the terminal or ssh session closed), after the same teardown: 128 + 1.
pub const HANGUP: i32 = 129;
/// Stopped by SIGQUIT, after the same teardown: 128 + 3.
pub const QUIT: i32 = 131;

/// Whether a code says a signal stopped the run.
pub fn interrupted(code: i32) -> bool {
    matches!(code, INTERRUPTED | HANGUP | QUIT)
}

/// A run's status word from its recorded exit code (None: no end recorded), one for `expr ls`
/// and the history: `error` is a run whose points may be fine but whose directory or report
/// could not be written whole (exit 1), not one whose points failed.
pub fn status_word(code: Option<i64>) -> &'static str {
    match code.map(|c| i32::try_from(c).unwrap_or(i32::MAX)) {
        Some(OK) => "ok",
        Some(c) if interrupted(c) => "interrupted",
        Some(EXPECTATION) => "expectations-unmet",
        Some(INTERNAL) => "error",
        Some(_) => "failed",
        None => "incomplete",
    }
}

/// [`status_word`] of a run whose report finds `failed` points now: a run that ended ok is
/// `failed` where one of its points failed or has no numbers since (its log changed).
pub fn status_after(code: Option<i64>, failed: usize) -> &'static str {
    match code {
        Some(0) if failed > 0 => "failed",
        _ => status_word(code),
    }
}

/// What a result directory's report found that decides an exit code.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Judged {
    /// Points that failed, were interrupted or ran without data.
    pub failed: usize,
    /// Expectations judged and not met.
    pub unmet: usize,
}

/// The exit code of `expr run` and `expr report`, in one place: the run's own code stands
/// (`OK` for a report of a finished directory); then a point without data or failed, then an
/// unmet expectation.
pub fn verdict(ran: i32, judged: Judged) -> i32 {
    if ran != OK {
        ran
    } else if judged.failed > 0 {
        POINT_FAILED
    } else if judged.unmet > 0 {
        EXPECTATION
    } else {
        OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_code_stands_then_failed_points_then_expectations() {
        let j = |failed, unmet| Judged { failed, unmet };
        assert_eq!(verdict(OK, j(0, 0)), OK);
        assert_eq!(verdict(OK, j(0, 2)), EXPECTATION);
        assert_eq!(verdict(OK, j(1, 2)), POINT_FAILED);
        assert_eq!(verdict(INTERRUPTED, j(1, 2)), INTERRUPTED);
        assert_eq!(verdict(PREFLIGHT, j(0, 0)), PREFLIGHT);
        assert_eq!(verdict(POINT_FAILED, j(0, 1)), POINT_FAILED);
    }
}
