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

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum PlanFormat {
    Text,
    Json,
    Sh,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Dry run: print every step of the expanded matrix; runs nothing, writes nothing.
    Plan {
        file: PathBuf,
        /// text (readable), json (the whole Plan) or sh (a runnable commands.sh).
        #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
        format: PlanFormat,
        /// Select part of the matrix: lane=…, repeat=…, bench=… or AXIS=… (repeatable).
        #[arg(long = "only", value_name = "KEY=VALUE")]
        only: Vec<String>,
        /// Override a setting: [bench.]key=value (repeatable), validated like the file.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Result directory instead of the experiment's `output` template.
        #[arg(long)]
        output: Option<String>,
        /// Accept matrices of more than 10,000 points.
        #[arg(long)]
        allow_large: bool,
    },
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
        Command::Plan {
            file,
            format,
            only,
            set,
            output,
            allow_large,
        } => plan(
            &file,
            format,
            &only,
            &set,
            output.as_deref(),
            &Options { allow_large },
        ),
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

fn plan(
    file: &std::path::Path,
    format: PlanFormat,
    only: &[String],
    set: &[String],
    output: Option<&str>,
    opts: &Options,
) -> i32 {
    let loaded = load::load_file_with(file, opts, set);
    print_diags(&loaded.diags);
    if loaded.has_errors() {
        return exit_codes::INVALID;
    }
    let Some(exp) = loaded.experiment else {
        return exit_codes::INVALID;
    };
    let filter = match crate::overrides::filter(&exp, only) {
        Ok(f) => f,
        Err(d) => {
            print_diags(&d);
            return exit_codes::INVALID;
        }
    };
    let plan = match crate::plan::plan(
        &exp,
        &file.display().to_string(),
        &filter,
        output,
        chrono::Local::now(),
    ) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            return exit_codes::INVALID;
        }
    };
    if plan.points.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "error: no matrix point matches {}",
            only.join(" ")
        );
        return exit_codes::INVALID;
    }
    let text = match format {
        PlanFormat::Text => crate::render::text(&plan),
        PlanFormat::Json => crate::render::json(&plan),
        PlanFormat::Sh => crate::render::sh(&plan),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    // The process ends right after: freeing a large plan piece by piece only costs time.
    std::mem::forget(plan);
    exit_codes::OK
}
