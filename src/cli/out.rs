//! A command's output on stdout (a leaf of cli/: the commands write through it).

use std::io::Write;

use crate::util::exit_codes;

/// A command's output on stdout, and whether it got there: a closed pipe (`| head`) is the
/// reader's choice and fine; any other failure (a full disk under `> file` or
/// `>> "$GITHUB_STEP_SUMMARY"`) is said, exit 1 — the output is lost, and a CI step must not
/// pass on it.
pub fn print(bytes: &[u8]) -> Result<(), i32> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = writeln!(std::io::stderr(), "error: writing the output: {e}");
            Err(exit_codes::INTERNAL)
        }
        _ => Ok(()),
    }
}
