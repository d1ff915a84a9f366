//! Command line: argument parsing and the edge where diagnostics are rendered.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::diag::{self, Diag};
use crate::exit_codes;
use crate::load;
use crate::validate::Options;

#[derive(Parser, Debug)]
#[command(
    name = "expr",
    version,
    about = "Declarative, version-controlled ML-systems benchmarks"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum CheckFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Parse and validate experiment files; report every problem at once.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output format of the diagnostics.
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
        /// Print each experiment with every default filled in.
        #[arg(long)]
        resolved: bool,
        /// Accept matrices of more than 10,000 points.
        #[arg(long)]
        allow_large: bool,
    },
}

/// Entry point used by `main` and by tests.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit_codes::INVALID
            } else {
                exit_codes::OK
            };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Command::Check {
            files,
            format,
            resolved,
            allow_large,
        } => check(&files, format, resolved, &Options { allow_large }),
    }
}

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

fn check(files: &[PathBuf], format: CheckFormat, resolved: bool, opts: &Options) -> i32 {
    let mut all: Vec<Diag> = Vec::new();
    let mut out = std::io::stdout().lock();
    for f in files {
        let loaded = load::load_file(f, opts);
        if resolved && !loaded.has_errors() {
            if let Some(exp) = &loaded.experiment {
                let _ = writeln!(
                    out,
                    "// {} (resolved)\n{}",
                    f.display(),
                    crate::resolved::to_kdl(exp)
                );
            }
        }
        all.extend(loaded.diags);
    }
    match format {
        CheckFormat::Json => {
            let _ = writeln!(out, "{}", diag::render_json(&all));
        }
        CheckFormat::Text => {
            print_diags(&all);
            let errors = all.iter().any(Diag::is_error);
            let _ = writeln!(
                std::io::stderr(),
                "{}: {} file{} checked, {}",
                if errors { "error" } else { "ok" },
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                diag::summary(&all)
            );
        }
    }
    if all.iter().any(Diag::is_error) {
        exit_codes::INVALID
    } else {
        exit_codes::OK
    }
}
