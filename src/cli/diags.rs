//! Diagnostics on stderr, in colour on a terminal (unless NO_COLOR).

use std::io::{IsTerminal, Write};

use crate::model::diag::{self, Diag};

/// `--color`, as the command line gave it (auto until then).
static COLOR: std::sync::OnceLock<super::args::ColorWhen> = std::sync::OnceLock::new();

pub(super) fn set_color(c: super::args::ColorWhen) {
    let _ = COLOR.set(c);
}

fn color() -> bool {
    use super::args::ColorWhen;
    match COLOR.get().copied().unwrap_or(ColorWhen::Auto) {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            // an empty NO_COLOR is no request (no-color.org: "present and not an empty string")
            std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

/// Print diagnostics to stderr in text form.
pub fn print_diags(diags: &[Diag]) {
    if diags.is_empty() {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{}", diag::render(diags, color()));
}
