//! Diagnostics on stderr, in colour on a terminal (unless NO_COLOR).

use std::io::{IsTerminal, Write};

use crate::diag::{self, Diag};

fn color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Print diagnostics to stderr in text form.
pub fn print_diags(diags: &[Diag]) {
    if diags.is_empty() {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{}", diag::render(diags, color()));
}
