//! Command line: argument parsing and the edge where diagnostics are rendered.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use crate::diag::{self, Diag};
use crate::exit_codes;
use crate::load;
use crate::validate::Options;

#[derive(Parser, Debug)]
#[command(
    name = "expr",
    version = concat!(env!("CARGO_PKG_VERSION"), " (arguments that are not expr subcommands, as in `expr 1 + 2`, go to the system expr)"),
    about = "Declarative, version-controlled ML-systems benchmarks",
    after_help = "Exit codes:\n  0    every point ok (warnings allowed)\n  1    internal error\n  2    invalid experiment or command line\n  3    a point failed or has no data\n  4    preflight failed: nothing ran\n  5    compare --fail-on-regression: a significant regression beyond the limit\n  6    every point ran, but an `expect` of the experiment is not met\n  130  interrupted (SIGINT/SIGTERM)\n\nLiving beside POSIX expr: when the first argument is not one of the subcommands above or a\nglobal flag (`expr 1 + 2`, `expr length abc`, `expr \"$x\" : 'a.*'`), the arguments go untouched\nto the next `expr` on PATH after this one (or /usr/bin/expr), so shell scripts keep working\nwith this expr first on PATH."
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
    // what `expr run` submits to Slurm: the array's batch script (`mode="array"`), or the
    // allocation it makes
    Sbatch,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build, test, start servers, launch clients, collect artifacts, tear down.
    Run {
        /// The experiment file (KDL). With `--resume DIR` it may be left out: the run's own is used.
        #[arg(required_unless_present = "resume")]
        file: Option<PathBuf>,
        /// Select part of the matrix: lane=…, repeat=…, bench=…, or any setting or sweep axis (repeatable).
        #[arg(long = "only", value_name = "KEY=VALUE")]
        only: Vec<String>,
        /// Override a value: [bench.]key=value or host.NAME.PROPERTY=value (repeatable), validated like the file.
        /// `key=a,b,c` sweeps the setting, except a free-text setting that is not swept yet: it keeps its commas.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Result directory instead of the experiment's `output` template.
        #[arg(long, conflicts_with = "resume")]
        output: Option<String>,
        /// Continue a result directory: points that succeeded with the same command and code are skipped.
        #[arg(long, value_name = "DIR")]
        resume: Option<String>,
        /// Write into an existing result directory.
        #[arg(long)]
        force: bool,
        /// Skip the build phase.
        #[arg(long)]
        skip_build: bool,
        /// Skip the correctness tests.
        #[arg(long)]
        skip_tests: bool,
        /// Stop at the first failed point.
        #[arg(long)]
        fail_fast: bool,
        /// Stream every step's output, prefixed by host and step.
        #[arg(long, conflicts_with = "quiet")]
        verbose: bool,
        /// Only warnings, errors and the last line (where the results are, and the exit code).
        #[arg(long, short = 'q')]
        quiet: bool,
        /// Seconds between TERM and KILL at teardown.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=3600))]
        grace: u64,
        /// Accept matrices of more than 10,000 points.
        #[arg(long)]
        allow_large: bool,
        /// Refuse experiment files larger than this many MiB.
        #[arg(long, value_name = "MIB", default_value_t = crate::load::MAX_INPUT_MIB)]
        max_input_mib: u64,
        /// The history database (default: $EXPR_HISTORY, else the project's
        /// results/.expr-history.sqlite: the nearest directory above holding .git, or this one).
        #[arg(long, value_name = "PATH")]
        history: Option<PathBuf>,
    },
    /// Inside a Slurm array task (what an array run's batch script runs): plan the run's
    /// experiment again and run one point into the result directory.
    #[command(name = "__task", hide = true)]
    Task(TaskArgs),
    /// Compare two result directories: per lane and sweep point, the headline metric's means,
    /// the change, Welch's 95 % interval and a verdict.
    Compare {
        /// The baseline (A). Leave out with `--baseline last-ok`.
        #[arg(required_unless_present = "baseline")]
        a: Option<PathBuf>,
        /// The result to judge (B).
        b: Option<PathBuf>,
        /// `last-ok`: A is the newest run of B's experiment that ended ok, from the history.
        #[arg(long, value_name = "last-ok")]
        baseline: Option<String>,
        /// text (markdown) or json.
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
        /// Exit 5 when a significant regression is larger than PCT percent.
        #[arg(long, value_name = "PCT")]
        fail_on_regression: Option<f64>,
        /// The history database (for --baseline).
        #[arg(long, value_name = "PATH")]
        history: Option<PathBuf>,
    },
    /// The history of an experiment: a metric over runs (from the SQLite history), and a trend SVG.
    History {
        /// The experiment's name. Leave out with --import.
        #[arg(required_unless_present = "import")]
        experiment: Option<String>,
        /// Only this lane.
        #[arg(long)]
        lane: Option<String>,
        /// This metric (default: each bench's headline).
        #[arg(long)]
        metric: Option<String>,
        /// Only sweep points with this axis value (repeatable).
        #[arg(long = "where", value_name = "AXIS=VALUE")]
        wheres: Vec<String>,
        /// text (markdown) or json.
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
        /// Where to write the trend chart (default: history_<experiment>_<metric>.svg beside the database).
        #[arg(long, value_name = "PATH")]
        svg: Option<PathBuf>,
        /// Index existing result directories instead.
        #[arg(long, value_name = "DIR", num_args = 1..)]
        import: Vec<PathBuf>,
        /// The history database (default: $EXPR_HISTORY, else the project's results/.expr-history.sqlite).
        #[arg(long, value_name = "PATH")]
        history: Option<PathBuf>,
    },
    /// Stop every process a result directory's journal recorded that is still alive.
    Stop {
        /// A result directory whose journal names the process groups to stop.
        dir: PathBuf,
    },
    /// Re-render the reports of a (finished or partial) result directory, without re-running.
    Report {
        /// A result directory (finished or partial).
        dir: PathBuf,
        /// Render this minijinja template over the report data to stdout instead.
        #[arg(long)]
        template: Option<PathBuf>,
    },
    /// Dry run: print every step of the expanded matrix; runs nothing, writes nothing.
    Plan {
        /// The experiment file (KDL), or `-` for standard input.
        file: PathBuf,
        /// text (readable), json (the whole Plan), sh (a runnable commands.sh) or sbatch (what is submitted to Slurm).
        #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
        format: PlanFormat,
        /// Select part of the matrix: lane=…, repeat=…, bench=…, or any setting or sweep axis (repeatable).
        #[arg(long = "only", value_name = "KEY=VALUE")]
        only: Vec<String>,
        /// Override a value: [bench.]key=value or host.NAME.PROPERTY=value (repeatable), validated like the file.
        /// `key=a,b,c` sweeps the setting, except a free-text setting that is not swept yet: it keeps its commas.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Result directory instead of the experiment's `output` template.
        #[arg(long)]
        output: Option<String>,
        /// Accept matrices of more than 10,000 points.
        #[arg(long)]
        allow_large: bool,
        /// Refuse experiment files larger than this many MiB.
        #[arg(long, value_name = "MIB", default_value_t = crate::load::MAX_INPUT_MIB)]
        max_input_mib: u64,
    },
    /// Write a commented starter experiment that checks clean: recstore-e2e, ep-bench,
    /// dataset-rt or bench (the generic kind, runnable anywhere).
    Init {
        /// The kind of benchmark (`bench`, `recstore-e2e`, `ep-bench`, `dataset-rt`). A lone
        /// `expr init` is POSIX expr's string `init`: give the kind.
        #[arg(default_value = "bench")]
        kind: String,
        /// Where to write it (`-` for standard output); default `<kind>.kdl`.
        file: Option<PathBuf>,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Print a shell completion script: `expr completions bash > /etc/bash_completion.d/expr`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// List the result directories under DIR (default `results/`) and those the history
    /// indexes, newest first.
    Ls {
        /// The directory holding result directories.
        #[arg(default_value = "results")]
        dir: PathBuf,
        /// text (a table) or json.
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
        /// The history database (default: $EXPR_HISTORY, else the project's results/.expr-history.sqlite).
        #[arg(long, value_name = "PATH")]
        history: Option<PathBuf>,
    },
    /// Parse and validate experiment files; report every problem at once.
    Check {
        /// Experiment files (KDL); `-` reads standard input.
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
        /// Refuse experiment files larger than this many MiB.
        #[arg(long, value_name = "MIB", default_value_t = crate::load::MAX_INPUT_MIB)]
        max_input_mib: u64,
    },
}

/// Whether `expr FIRST …` is for this program: a subcommand or a global flag, or anything followed
/// by a `.kdl` file (a mistyped subcommand then gets clap's "did you mean"). Everything else is
/// the system `expr` (`expr 1 + 2`, `expr length abc`).
pub fn is_ours(args: &[OsString]) -> bool {
    let Some(s) = args.first().and_then(|a| a.to_str()) else {
        return false;
    };
    // `expr run : r`, `expr ls = ls`, `expr check + 1`: an operator second makes an expression,
    // whatever word comes first (`-` only with an operand after it that is no flag or file)
    let second = args.get(1).and_then(|a| a.to_str());
    let third = args.get(2).and_then(|a| a.to_str());
    let operator = matches!(
        second,
        Some("+" | "*" | "/" | "%" | ":" | "=" | "!=" | "<" | "<=" | ">" | ">=" | "&" | "|")
    ) || (second == Some("-")
        && args.len() == 3
        && third.is_some_and(|t| !t.starts_with('-') && !t.ends_with(".kdl")));
    if operator && args.len() >= 3 {
        return false;
    }
    if matches!(s, "-h" | "--help" | "-V" | "--version" | "help") {
        return true;
    }
    // a lone `init` writes a file: as `x=init; expr "$x"` it is POSIX expr's string (it prints
    // `init`); the starter needs its KIND or FILE (`expr init bench`)
    if s == "init" && args.len() == 1 {
        return false;
    }
    if Cli::command()
        .get_subcommands()
        .any(|c| c.get_name() == s || c.get_all_aliases().any(|a| a == s))
    {
        return true;
    }
    args.iter()
        .skip(1)
        .any(|a| a.to_str().is_some_and(|a| a.ends_with(".kdl")))
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
            max_input_mib,
        } => check(
            &files,
            format,
            resolved,
            &Options {
                allow_large,
                max_input_mib: Some(max_input_mib),
            },
        ),
        Command::Run {
            file,
            only,
            set,
            output,
            resume,
            force,
            skip_build,
            skip_tests,
            fail_fast,
            verbose,
            quiet,
            grace,
            allow_large,
            max_input_mib,
            history,
        } => {
            let limits = Options {
                allow_large,
                max_input_mib: Some(max_input_mib),
            };
            let file = match (file, &resume) {
                (Some(f), _) => f,
                (None, Some(dir)) => match resume_file(Path::new(dir), &set, force, &limits) {
                    Ok(f) => f,
                    Err(e) => {
                        let _ = writeln!(std::io::stderr(), "error: {e}");
                        return exit_codes::INVALID;
                    }
                },
                (None, None) => return exit_codes::INVALID,
            };
            let opts = crate::exec::runner::Options {
                resume: resume.is_some(),
                force,
                skip_build,
                skip_tests,
                fail_fast,
                verbose,
                quiet,
                grace,
                history_db: None,
                task_journal: None,
                array: None,
                points_of: None,
            };
            run_cmd(
                &file,
                &only,
                &set,
                output.or(resume).as_deref(),
                opts,
                &limits,
                history.as_deref(),
            )
        }
        Command::Task(t) => task(&t),
        Command::Compare {
            a,
            b,
            baseline,
            format,
            fail_on_regression,
            history,
        } => compare_cmd(
            a,
            b,
            baseline.as_deref(),
            format,
            fail_on_regression,
            history.as_deref(),
        ),
        Command::History {
            experiment,
            lane,
            metric,
            wheres,
            format,
            svg,
            import,
            history,
        } => history_cmd(
            experiment.as_deref(),
            lane.as_deref(),
            metric.as_deref(),
            &wheres,
            format,
            svg.as_deref(),
            &import,
            history.as_deref(),
        ),
        Command::Report { dir, template } => report(&dir, template.as_deref()),
        Command::Init { kind, file, force } => init(&kind, file.as_deref(), force),
        Command::Completions { shell } => {
            // into a buffer, then one write whose error is taken: a closed pipe (`| true`,
            // `| head`) is not a panic
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "expr", &mut buf);
            match std::io::stdout().write_all(&buf) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    let _ = writeln!(std::io::stderr(), "error: {e}");
                    exit_codes::INTERNAL
                }
                _ => exit_codes::OK,
            }
        }
        Command::Ls {
            dir,
            format,
            history,
        } => match crate::ls::list_with_warnings(&dir, history.as_deref()) {
            Ok((entries, warnings)) => {
                for w in &warnings {
                    let _ = writeln!(std::io::stderr(), "warning: {w}");
                }
                let text = match format {
                    CheckFormat::Json => {
                        serde_json::to_string_pretty(&entries).unwrap_or_default() + "\n"
                    }
                    CheckFormat::Text if entries.is_empty() => {
                        format!("no result directories under {}\n", dir.display())
                    }
                    CheckFormat::Text => crate::ls::text(&entries),
                };
                let _ = std::io::stdout().write_all(text.as_bytes());
                exit_codes::OK
            }
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                exit_codes::INVALID
            }
        },
        Command::Stop { dir } => match crate::exec::lock::lock_if_writable(&dir, "stop")
            .and_then(|lock| crate::exec::stop::stop(&dir).map(|r| (r, lock)))
            .map(|(r, _lock)| r)
        {
            Ok((mut lines, gone)) => {
                if lines.is_empty() {
                    lines.push("nothing recorded in the journal is still running".into());
                }
                for l in lines {
                    let _ = writeln!(std::io::stderr(), "{l}");
                }
                if gone {
                    exit_codes::OK
                } else {
                    exit_codes::POINT_FAILED
                }
            }
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                exit_codes::INVALID
            }
        },
        Command::Plan {
            file,
            format,
            only,
            set,
            output,
            allow_large,
            max_input_mib,
        } => plan(
            &file,
            format,
            &only,
            &set,
            output.as_deref(),
            &Options {
                allow_large,
                max_input_mib: Some(max_input_mib),
            },
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

/// `expr init KIND [FILE]`: a starter experiment.
fn init(kind: &str, file: Option<&Path>, force: bool) -> i32 {
    // `expr init -`: the file is stdout, the kind the default one
    let (kind, file) = match (kind, file) {
        ("-", None) => ("bench", Some(Path::new("-"))),
        other => other,
    };
    let Some(k) = crate::kinds::ALL.iter().find(|k| k.node == kind) else {
        let names: Vec<&str> = crate::kinds::ALL.iter().map(|k| k.node).collect();
        let _ = writeln!(
            std::io::stderr(),
            "error: `{kind}` is not a kind of benchmark; {}",
            crate::suggest::help_for(kind, &names, "the kind")
        );
        return exit_codes::INVALID;
    };
    let default = PathBuf::from(format!("{kind}.kdl"));
    let path = file.unwrap_or(&default);
    if path == Path::new("-") {
        let _ = std::io::stdout().write_all(k.starter().as_bytes());
        return exit_codes::OK;
    }
    if path.exists() && !force {
        let _ = writeln!(
            std::io::stderr(),
            "error: {} exists; pass --force to replace it, or name another file",
            path.display()
        );
        return exit_codes::INVALID;
    }
    if let Err(e) = std::fs::write(path, k.starter()) {
        let _ = writeln!(std::io::stderr(), "error: {}: {e}", path.display());
        return exit_codes::INVALID;
    }
    // as the user would type it next: quoted, and `./` before a name that looks like a flag
    let shown = path.display().to_string();
    let p = crate::shell::quote(&if shown.starts_with('-') {
        format!("./{shown}")
    } else {
        shown.clone()
    });
    let _ = writeln!(
        std::io::stderr(),
        "expr: wrote {shown}; next: `expr check {p}`, `expr plan {p}`, `expr run {p}`"
    );
    exit_codes::OK
}

/// The experiment a result directory was run with: its file when that still resolves to what the
/// journal recorded (or `--force`), else the recorded experiment itself.
fn resume_file(
    dir: &Path,
    set: &[String],
    force: bool,
    limits: &Options,
) -> Result<PathBuf, String> {
    if !dir.is_dir() {
        return Err(format!(
            "{}: no such result directory (`--resume` takes the directory a run wrote, e.g. results/NAME)",
            dir.display()
        ));
    }
    if !dir.join("journal.jsonl").is_file() {
        return Err(format!(
            "{}: not an expr result directory (it holds no journal.jsonl)",
            dir.display()
        ));
    }
    let events = crate::results::journal::read(&dir.join("journal.jsonl"));
    // the latest run into this directory recorded what it ran
    let header = events
        .iter()
        .rev()
        .find(|e| e["event"] == "header")
        .ok_or_else(|| {
            format!(
                "{}: the journal records no experiment (the run stopped before preflight): name the file, `expr run FILE --resume {}`",
                dir.display(),
                dir.display()
            )
        })?;
    let recorded = header["resolved"].as_str().unwrap_or("");
    let source = PathBuf::from(header["source"].as_str().unwrap_or(""));
    if source.is_file() {
        // with the run's own limits: `--allow-large` and `--max-input-mib` hold here too
        let loaded = load::load_file_with(&source, limits, set);
        if let Some(exp) = loaded
            .experiment
            .filter(|_| !loaded.diags.iter().any(Diag::is_error))
        {
            // compared as `run_cmd` compares them: comments (`// default`) do not count
            let now = strip_comments(&crate::resolved::to_kdl(&exp));
            let recorded = strip_comments(recorded);
            if now == recorded {
                return Ok(source);
            }
            let changed: Vec<String> = diff_lines(&recorded, &now);
            if force {
                let _ = writeln!(
                    std::io::stderr(),
                    "expr: {} changed since the run; resuming with it as it is now (--force)",
                    source.display()
                );
                return Ok(source);
            }
            return Err(format!(
                "{} changed since the run in {}:
{}
pass --force to resume with the file as it is now, or name another file",
                source.display(),
                dir.display(),
                changed.join(
                    "
"
                )
            ));
        }
    }
    // the file is gone (or no longer valid): the journal's copy is the experiment, unless it
    // holds secrets, which expr never writes down (the copy has `****` in their place)
    let secrets: Vec<String> = header["host_specs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|h| h["env"].as_array().into_iter().flatten())
        .filter_map(|kv| kv[0].as_str())
        .filter(|k| crate::shell::is_secret(k))
        .map(|k| format!("`{k}`"))
        .collect();
    if !secrets.is_empty() {
        return Err(format!(
            "{} is not there or not valid any more, and the journal's copy of the experiment has its secrets masked ({}); pass the experiment file to resume: `expr run FILE --resume {}`",
            source.display(),
            secrets.join(", "),
            dir.display()
        ));
    }
    let copy = dir.join("runtime").join("resumed.kdl");
    std::fs::create_dir_all(copy.parent().unwrap_or(dir)).map_err(|e| e.to_string())?;
    std::fs::write(&copy, recorded).map_err(|e| format!("{}: {e}", copy.display()))?;
    let _ = writeln!(
        std::io::stderr(),
        "expr: {} is not there or not valid any more; resuming the experiment the journal recorded ({})",
        source.display(),
        copy.display()
    );
    Ok(copy)
}

/// The lines that differ between two texts, as `- old` / `+ new` (at most 20).
/// A resolved experiment without its comments (`// default`, the file name on the first line):
/// a file and the journal's copy of it say the same thing with other comments.
fn strip_comments(resolved: &str) -> String {
    resolved
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| match l.find("  // ") {
            Some(i) => l[..i].trim_end(),
            None => l.trim_end(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn diff_lines(old: &str, new: &str) -> Vec<String> {
    let o: Vec<&str> = old.lines().collect();
    let n: Vec<&str> = new.lines().collect();
    let mut out = Vec::new();
    for l in &o {
        if !n.contains(l) {
            out.push(format!("  - {l}"));
        }
    }
    for l in &n {
        if !o.contains(l) {
            out.push(format!("  + {l}"));
        }
    }
    out.truncate(20);
    out
}

/// Load, validate and plan; the shared prefix of `plan` and `run`.
fn build_plan(
    file: &std::path::Path,
    only: &[String],
    set: &[String],
    output: Option<&str>,
    opts: &Options,
) -> Result<(crate::model::Experiment, crate::plan::Plan), i32> {
    let loaded = load::load_file_with(file, opts, set);
    print_diags(&loaded.diags);
    if loaded.has_errors() {
        return Err(exit_codes::INVALID);
    }
    let Some(exp) = loaded.experiment else {
        return Err(exit_codes::INVALID);
    };
    plan_of(exp, file, only, output, chrono::Local::now())
}

/// The plan of a loaded experiment at a start time.
fn plan_of(
    exp: crate::model::Experiment,
    file: &std::path::Path,
    only: &[String],
    output: Option<&str>,
    now: chrono::DateTime<chrono::Local>,
) -> Result<(crate::model::Experiment, crate::plan::Plan), i32> {
    let filter = crate::overrides::filter(&exp, only).map_err(|d| {
        print_diags(&d);
        exit_codes::INVALID
    })?;
    let plan = crate::plan::plan(&exp, &file.display().to_string(), &filter, output, now).map_err(
        |e| {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit_codes::INVALID
        },
    )?;
    if plan.points.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "error: no matrix point matches {}",
            only.join(" ")
        );
        // what each key does take, with the nearest value
        let all = crate::expand::expand(&exp, &Default::default());
        for o in only {
            let Some((k, v)) = o.split_once('=') else {
                continue;
            };
            let mut values: Vec<String> = Vec::new();
            for p in &all {
                let val = match k {
                    "lane" => Some(p.lane_name.clone()),
                    "repeat" => Some(p.repeat.to_string()),
                    "bench" => exp.benches.get(p.bench).map(|b| b.name.clone()),
                    _ => p.get(k).map(|x| x.to_string()),
                };
                if let Some(val) = val {
                    if !values.contains(&val) {
                        values.push(val);
                    }
                }
            }
            if values.iter().any(|x| x == v) {
                continue;
            }
            let hint = crate::suggest::did_you_mean(v, values.iter().map(String::as_str))
                .map(|s| format!(" — did you mean `{k}={s}`?"))
                .unwrap_or_default();
            let listed: Vec<String> = values.iter().take(12).map(|x| format!("`{x}`")).collect();
            let _ = writeln!(
                std::io::stderr(),
                "  `{k}` takes {}{}{hint}",
                if listed.is_empty() {
                    "no value in this matrix".to_string()
                } else {
                    listed.join(", ")
                },
                if values.len() > 12 { ", …" } else { "" }
            );
        }
        return Err(exit_codes::INVALID);
    }
    Ok((exp, plan))
}

fn run_cmd(
    file: &std::path::Path,
    only: &[String],
    set: &[String],
    output: Option<&str>,
    ropts: crate::exec::runner::Options,
    opts: &Options,
    history: Option<&std::path::Path>,
) -> i32 {
    let (mut exp, mut plan) = match build_plan(file, only, set, output, opts) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if ropts.resume {
        // a resumed run is the same run: its start time, and the points it was asked for
        // (`--only`) unless this command chooses again
        let headers: Vec<serde_json::Value> = crate::results::journal::read(
            &std::path::Path::new(&plan.output).join("journal.jsonl"),
        )
        .into_iter()
        .filter(|e| e["event"] == "header")
        .collect();
        // the same experiment (file and --set), or --force: an edited one is a different run
        let recorded = strip_comments(
            headers
                .last()
                .and_then(|h| h["resolved"].as_str())
                .unwrap_or(""),
        );
        let now = strip_comments(&crate::resolved::to_kdl(&exp));
        let edited = !recorded.is_empty() && now != recorded;
        if edited && !ropts.force {
            let _ = writeln!(
                std::io::stderr(),
                "error: {} is not the experiment the run in {} ran:\n{}\npass --force to resume with it as it is now (points whose command or settings changed run again, the rest are kept)",
                file.display(),
                plan.output,
                diff_lines(&recorded, &now).join("\n")
            );
            return exit_codes::INVALID;
        }
        let started = headers
            .first()
            .and_then(|h| h["started"].as_str())
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .map(|t| t.with_timezone(&chrono::Local));
        if let Some(started) = started {
            let out = plan.output.clone();
            match plan_of(exp.clone(), file, only, Some(&out), started) {
                Ok((e, p)) => {
                    exp = e;
                    plan = p;
                }
                Err(code) => return code,
            }
        }
        let asked: std::collections::BTreeSet<String> = headers
            .iter()
            .filter_map(|h| h["run_ids"].as_array())
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        // an edited experiment's matrix is its own: the earlier selection does not hold
        if only.is_empty() && !asked.is_empty() && !edited {
            let all = plan.points.len();
            plan.points.retain(|p| asked.contains(&p.run_id));
            if plan.points.len() < all {
                let _ = writeln!(
                    std::io::stderr(),
                    "resume: {} of {all} points, as the run chose them (`--only` chooses others)",
                    plan.points.len()
                );
            }
        }
    }
    // Slurm allocations the hosts are placed on: made now, their nodes' names and addresses
    // put into the experiment, and the plan made again with them (same start time)
    let mut granted: Vec<crate::exec::slurm::Granted> = Vec::new();
    let (arrays, used): (Vec<crate::model::Allocation>, Vec<crate::model::Allocation>) = exp
        .allocations
        .iter()
        .filter(|a| exp.has_hosts_on(&a.name))
        .cloned()
        .partition(|a| a.array);
    let mut ropts = ropts;
    if let Some(a) = arrays.first() {
        match array_run(&mut exp, &plan, a, file, set, only) {
            Ok(r) => {
                ropts.array = Some(crate::exec::array::ArrayRun {
                    grace: ropts.grace,
                    ..r
                })
            }
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                return exit_codes::INVALID;
            }
        }
    }
    if !used.is_empty() {
        let comment = crate::exec::slurm::comment(&plan.output);
        for a in &used {
            let _ = writeln!(
                std::io::stderr(),
                "expr: allocating `{}` ({} node(s)) with salloc",
                crate::render::comment(&a.name),
                a.nodes
            );
            crate::exec::signals::install();
            let stop = || crate::exec::signals::count() > 0;
            match crate::exec::slurm::allocate(a, &format!("expr-{}", exp.name), &comment, &stop) {
                Ok(g) => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "expr: `{}` is job {}: {}",
                        crate::render::comment(&a.name),
                        g.job,
                        g.nodes
                            .iter()
                            .map(|(n, ip)| format!("{n} ({ip})"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    granted.push(g);
                }
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "error: {e}");
                    for g in &granted {
                        let _ = crate::exec::slurm::cancel(&g.job);
                    }
                    return if crate::exec::signals::count() > 0 {
                        exit_codes::INTERRUPTED
                    } else {
                        exit_codes::PREFLIGHT
                    };
                }
            }
        }
        crate::exec::slurm::place(&mut exp, &granted);
        let started = chrono::DateTime::parse_from_rfc3339(&plan.started)
            .map(|t| t.with_timezone(&chrono::Local))
            .unwrap_or_else(|_| chrono::Local::now());
        match plan_of(exp.clone(), file, only, Some(&plan.output), started) {
            Ok((e, p)) => {
                exp = e;
                plan = p;
            }
            Err(code) => {
                for g in &granted {
                    let _ = crate::exec::slurm::cancel(&g.job);
                }
                return code;
            }
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "expr: {} points → {}",
        plan.points.len(),
        plan.output
    );
    let cancel_all = |granted: &[crate::exec::slurm::Granted]| {
        for g in granted {
            match crate::exec::slurm::cancel(&g.job) {
                Ok(()) => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "expr: cancelled job {} (`{}`)",
                        g.job,
                        g.alloc
                    );
                }
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "warning: {e}");
                }
            }
        }
    };
    ropts.history_db = Some(crate::history::path(history));
    match crate::exec::runner::Runner::new(&exp, &plan, ropts) {
        Ok(r) => {
            let mut at_end = crate::report::AtEnd::default();
            let code = r.run(&mut at_end).code;
            cancel_all(&granted);
            if !arrays.is_empty() {
                // whatever of the run is still queued (it should be nothing)
                let comment = crate::exec::slurm::comment(&plan.output);
                for (id, name) in crate::exec::slurm::jobs_with_comment(&comment) {
                    if crate::exec::slurm::cancel(&id).is_ok() {
                        let _ = writeln!(
                            std::io::stderr(),
                            "expr: cancelled job {id} ({})",
                            crate::render::comment(&name)
                        );
                    }
                }
            }
            let out = std::path::Path::new(&plan.output);
            // every run that got past preflight registers itself; the database never fails a run
            if out.join("journal.jsonl").is_file() {
                let db = crate::history::path(history);
                if let Some(w) = crate::history::register_quietly(&db, out, at_end.data.as_ref()) {
                    let _ = writeln!(std::io::stderr(), "warning: {w}");
                }
            }
            if std::path::Path::new(&plan.output).is_dir() {
                let _ = writeln!(
                    std::io::stderr(),
                    "expr: results in {} (exit {code})",
                    plan.output
                );
            } else {
                let _ = writeln!(std::io::stderr(), "expr: exit {code}");
            }
            code
        }
        Err(e) => {
            cancel_all(&granted);
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit_codes::INVALID
        }
    }
}

/// `mode="array"`: what the array needs, after checking that every point runs on its nodes and
/// that the tasks, planning the experiment's resolved copy, plan the same points.
fn array_run(
    exp: &mut crate::model::Experiment,
    plan: &crate::plan::Plan,
    a: &crate::model::Allocation,
    file: &std::path::Path,
    set: &[String],
    only: &[String],
) -> Result<crate::exec::array::ArrayRun, String> {
    let off: Vec<String> = plan
        .points
        .iter()
        .flat_map(|p| p.steps.iter())
        .chain(plan.setup.iter())
        .filter(|s| s.phase != crate::plan::Phase::Collect)
        .filter(|s| {
            exp.host(&s.host)
                .and_then(|h| h.slurm.as_ref())
                .is_none_or(|p| p.alloc != a.name)
        })
        .map(|s| format!("`{}` on `{}`", s.id, s.host))
        .take(3)
        .collect();
    if !off.is_empty() {
        return Err(format!(
            "`{}` is an array (mode=\"array\"): every step of a point runs in its task, on its nodes, but {} run(s) elsewhere; put those hosts on `{}` (`--set host.NAME.slurm={}`) or use mode=\"allocation\"",
            a.name,
            off.join(", "),
            a.name,
            a.name
        ));
    }
    let name = format!("expr-{}", exp.name);
    let comment = crate::exec::slurm::comment(&plan.output);
    let new_job = crate::exec::slurm::job_args(a, &name, &comment);
    for h in &mut exp.hosts {
        if let Some(p) = h.slurm.as_mut().filter(|p| p.alloc == a.name) {
            p.new_job = new_job.clone();
        }
    }
    // the tasks plan the same file with the same --set and --only; the file's content hash
    // makes a task refuse a file edited since the submission
    if file.as_os_str() == "-" {
        return Err(format!(
            "`{}` is an array (mode=\"array\"): its tasks read the experiment again, so it must be a file, not standard input",
            a.name
        ));
    }
    let text = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let cwd = std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?;
    let expr = std::env::current_exe()
        .map_err(|e| format!("the expr binary's path: {e}"))?
        .display()
        .to_string();
    Ok(crate::exec::array::ArrayRun {
        alloc: a.clone(),
        expr,
        cwd: cwd.display().to_string(),
        job_name: name,
        comment,
        file: cwd.join(file).display().to_string(),
        file_hash: crate::exec::array::file_hash(&text),
        sets: set.to_vec(),
        only: only.to_vec(),
        exclusive: plan
            .points
            .iter()
            .flat_map(|p| p.steps.iter())
            .any(|s| matches!(s.ready, Some(crate::plan::Ready::Tcp { .. }))),
        // `expr run`'s default; a run sets its own
        grace: 5,
    })
}

/// `plan --format sbatch`: the array's batch script, or the allocation `expr run` makes.
fn sbatch_text(
    exp: &mut crate::model::Experiment,
    plan: &crate::plan::Plan,
    file: &std::path::Path,
    set: &[String],
    only: &[String],
) -> Result<String, String> {
    let used: Vec<crate::model::Allocation> = exp
        .allocations
        .iter()
        .filter(|a| exp.has_hosts_on(&a.name))
        .cloned()
        .collect();
    if used.is_empty() {
        return Err("no host is on a Slurm allocation: there is nothing to submit (`--set slurm.NAME.nodes=1 --set host.HOST.slurm=NAME` moves a host onto one)".into());
    }
    if let Some(a) = used.iter().find(|a| a.array) {
        let r = array_run(exp, plan, a, file, set, only)?;
        let ids: Vec<&str> = plan.points.iter().map(|p| p.run_id.as_str()).collect();
        return Ok(crate::exec::array::script(
            &r,
            &plan.output,
            &plan.started,
            &ids,
        ));
    }
    let comment = crate::exec::slurm::comment(&plan.output);
    let mut o = String::from("# mode=\"allocation\": `expr run` submits no batch script. It makes each allocation\n# with salloc, runs every step on its node as\n#   srun --jobid=JOB --overlap --nodes=1 --ntasks=1 --nodelist=NODE --chdir=DIR --quiet bash -c LINE\n# (the lines: `expr plan --format sh`), and cancels the job on every exit.\n");
    for a in &used {
        let args = crate::exec::slurm::salloc_args(a, &format!("expr-{}", exp.name), &comment);
        o.push_str(&format!("salloc {}\n", crate::shell::join(&args)));
    }
    Ok(o)
}

/// What `expr __task` is given: the run's file, `--set`, `--only`, start time and `--grace`,
/// and the point to run.
#[derive(clap::Args, Debug)]
pub struct TaskArgs {
    /// The run's experiment file.
    pub experiment: PathBuf,
    /// The run's --set arguments.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The run's --only arguments.
    #[arg(long = "only", value_name = "KEY=VALUE")]
    pub only: Vec<String>,
    /// The file's content hash at submission.
    #[arg(long)]
    pub file_hash: String,
    #[arg(long)]
    pub output: String,
    /// The run's start time (RFC 3339): the plan's time.
    #[arg(long)]
    pub started: String,
    #[arg(long)]
    pub run_id: String,
    /// The run's --grace.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub grace: u64,
}

/// Inside an array task: plan the run's experiment file again (with the run's --set and
/// --only), keep this task's point and run it.
pub fn task(t: &TaskArgs) -> i32 {
    let (output, run_id) = (&t.output, &t.run_id);
    let code = task_inner(t);
    // a task that could not run its point says why in its fragment, which the run merges
    // (its task output alone would hide the reason)
    if let Err((code, why)) = code {
        let _ = writeln!(std::io::stderr(), "error: {why}");
        let f = crate::exec::array::fragment(std::path::Path::new(output), run_id);
        if !f.exists() {
            if let Ok(mut j) = crate::results::journal::Journal::open(&f) {
                j.write(
                    "point",
                    serde_json::json!({ "run_id": run_id, "status": "failed", "exit_code": code, "reason": format!("the array task could not run the point: {}", why.lines().next().unwrap_or("")) }),
                );
                j.write("end", serde_json::json!({ "exit_code": code }));
            }
        }
        return code;
    }
    code.unwrap_or(exit_codes::INTERNAL)
}

fn task_inner(t: &TaskArgs) -> Result<i32, (i32, String)> {
    let (experiment, set, only) = (t.experiment.as_path(), &t.set, &t.only);
    let (file_hash, output, started, run_id) = (&t.file_hash, &t.output, &t.started, &t.run_id);
    match std::fs::read(experiment) {
        Ok(t) if crate::exec::array::file_hash(&t) == *file_hash => {}
        Ok(_) => {
            return Err((
                exit_codes::INVALID,
                format!(
                    "{} changed since the array was submitted; this task does not run another experiment (resume the run to plan it again)",
                    experiment.display()
                ),
            ));
        }
        Err(e) => {
            return Err((
                exit_codes::INVALID,
                format!("{}: {e}", experiment.display()),
            ));
        }
    }
    let loaded = load::load_file_with(
        experiment,
        &Options {
            allow_large: true,
            max_input_mib: None,
        },
        set,
    );
    print_diags(&loaded.diags);
    let bad = loaded.has_errors();
    let Some(mut exp) = loaded.experiment.filter(|_| !bad) else {
        return Err((
            exit_codes::INVALID,
            format!(
                "{} does not load (its diagnostics are in the task output)",
                experiment.display()
            ),
        ));
    };
    let placed = match crate::exec::slurm::place_task(&mut exp) {
        Ok(v) => v,
        Err(e) => return Err((exit_codes::PREFLIGHT, e)),
    };
    let Ok(started) = chrono::DateTime::parse_from_rfc3339(started) else {
        return Err((
            exit_codes::INVALID,
            format!("--started `{started}` is not RFC 3339"),
        ));
    };
    let Ok((exp, mut plan)) = plan_of(
        exp,
        experiment,
        only,
        Some(output),
        started.with_timezone(&chrono::Local),
    ) else {
        return Err((
            exit_codes::INVALID,
            "the experiment does not plan (the diagnostics are in the task output)".into(),
        ));
    };
    let points_of = plan.points.len();
    plan.points.retain(|p| p.run_id == *run_id);
    plan.setup.clear();
    if plan.points.is_empty() {
        return Err((
            exit_codes::INVALID,
            format!("the experiment has no point `{run_id}`"),
        ));
    }
    let fragment = crate::exec::array::fragment(std::path::Path::new(output), run_id);
    let opts = crate::exec::runner::Options {
        grace: t.grace,
        task_journal: Some(fragment),
        points_of: Some(points_of),
        ..Default::default()
    };
    match crate::exec::runner::Runner::new(&exp, &plan, opts) {
        Ok(mut r) => {
            r.note_task(placed);
            Ok(r.run(&mut crate::results::NoFinish).code)
        }
        Err(e) => Err((exit_codes::INVALID, e)),
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
    let (mut exp, plan) = match build_plan(file, only, set, output, opts) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let text = match format {
        PlanFormat::Sbatch => match sbatch_text(&mut exp, &plan, file, set, only) {
            Ok(t) => t,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                return exit_codes::INVALID;
            }
        },
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

/// Rows for the points the journal recorded and manifest.csv lacks, from the run's own plan
/// (its experiment, start and output as the journal says); returns how many were added.
fn repair_manifest(dir: &std::path::Path) -> Result<usize, String> {
    use crate::results::manifest;
    let events = crate::results::journal::read(&dir.join("journal.jsonl"));
    let mut last: std::collections::BTreeMap<String, &serde_json::Value> = Default::default();
    for e in events.iter().filter(|e| e["event"] == "point") {
        if let Some(id) = e["run_id"].as_str() {
            last.insert(id.to_string(), e);
        }
    }
    // a manifest that does not read is rebuilt whole, and said
    let mut rows = match manifest::read_checked(&dir.join("manifest.csv")) {
        Ok(rows) => rows.unwrap_or_default(),
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "warning: {e}; manifest.csv is rebuilt from journal.jsonl"
            );
            Vec::new()
        }
    };
    if last.keys().all(|id| rows.iter().any(|r| &r.run_id == id)) {
        return Ok(0);
    }
    let (exp, header) = crate::report::gather::experiment_of(dir)?;
    let started = header["started"]
        .as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&chrono::Local))
        .unwrap_or_else(chrono::Local::now);
    let output = dir.display().to_string();
    let plan = crate::plan::plan(
        &exp,
        header["source"].as_str().unwrap_or(""),
        &Default::default(),
        Some(&output),
        started,
    )?;
    let mut added = 0;
    for p in &plan.points {
        let Some(e) = last.get(&p.run_id) else {
            continue;
        };
        if rows.iter().any(|r| r.run_id == p.run_id) {
            continue;
        }
        let log = p
            .steps
            .iter()
            .find(|s| s.phase == crate::plan::Phase::Launch)
            .map(|s| format!("{output}/logs/{}-{}.log", s.id, s.host))
            .unwrap_or_default();
        rows.push(crate::exec::rows::row(
            &exp,
            &plan,
            p,
            e["status"].as_str().unwrap_or("failed"),
            e["exit_code"].as_i64().map(|c| c as i32),
            e["reason"].as_str().unwrap_or(""),
            &log,
        ));
        added += 1;
    }
    let order: std::collections::HashMap<&str, usize> = plan
        .points
        .iter()
        .map(|p| (p.run_id.as_str(), p.index))
        .collect();
    rows.sort_by_key(|r| order.get(r.run_id.as_str()).copied().unwrap_or(usize::MAX));
    manifest::write(&dir.join("manifest.csv"), &rows)?;
    Ok(added)
}

fn report(dir: &std::path::Path, template: Option<&std::path::Path>) -> i32 {
    if let Some(t) = template {
        return match crate::report::render_template(dir, t) {
            Ok(text) => {
                let _ = std::io::stdout().write_all(text.as_bytes());
                exit_codes::OK
            }
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                exit_codes::INVALID
            }
        };
    }
    // a run (or another report) writing the directory now would mix its files with these
    let _lock = match crate::exec::lock::lock_if_writable(dir, "report") {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            return exit_codes::INTERNAL;
        }
    };
    // points the journal recorded that the manifest lacks (its last write failed, or expr was
    // killed before it): the manifest gets them back first, so every output agrees
    match repair_manifest(dir) {
        Ok(0) => {}
        Ok(n) => {
            let _ = writeln!(
                std::io::stderr(),
                "expr: manifest.csv lacked {n} point(s) the journal recorded; rewritten"
            );
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "warning: manifest.csv not repaired: {e}");
        }
    }
    match crate::report::write(dir) {
        Ok(w) => {
            let mut err = std::io::stderr();
            for warning in &w.warnings {
                let _ = writeln!(err, "warning: {warning}");
            }
            let _ = writeln!(
                err,
                "expr: wrote {} in {}",
                w.files.join(", "),
                dir.display()
            );
            if !w.missing.is_empty() {
                let _ = writeln!(err, "expr: {} point(s) without data:", w.missing.len());
                for m in &w.missing {
                    let _ = writeln!(err, "  {m}");
                }
            }
            for u in &w.unmet {
                let _ = writeln!(err, "expect not met: {u}");
            }
            // the codes of `expr run`: a failed point first, then an unmet expectation
            exit_codes::verdict(
                exit_codes::OK,
                exit_codes::Judged {
                    failed: w.failed,
                    unmet: w.unmet.len(),
                },
            )
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit_codes::INVALID
        }
    }
}

fn compare_cmd(
    a: Option<PathBuf>,
    b: Option<PathBuf>,
    baseline: Option<&str>,
    format: CheckFormat,
    fail_on_regression: Option<f64>,
    history: Option<&Path>,
) -> i32 {
    let fail = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INVALID
    };
    let (a, b) = match (baseline, a, b) {
        (Some("last-ok"), Some(only), None) | (Some("last-ok"), None, Some(only)) => {
            let exp = match crate::report::gather::experiment_of(&only) {
                Ok((e, _)) => e.name,
                Err(e) => return fail(e),
            };
            let db = crate::history::path(history);
            // a read: nothing is created when there is no database
            let found =
                crate::history::open_ro(&db).and_then(|c| crate::history::last_ok(&c, &exp, &only));
            match found {
                Ok(Some(p)) => (p, only),
                Ok(None) => {
                    return fail(format!(
                        "the history ({}) has no other run of `{exp}` that ended ok",
                        db.display()
                    ))
                }
                Err(e) => {
                    // not the command line's fault: the database is missing or damaged
                    let _ = writeln!(std::io::stderr(), "error: {e}");
                    return exit_codes::INTERNAL;
                }
            }
        }
        (Some("last-ok"), Some(_), Some(_)) => {
            return fail(
                "with `--baseline last-ok`, give only B (the baseline comes from the history)"
                    .into(),
            )
        }
        (Some(other), _, _) => return fail(format!("--baseline takes `last-ok`, not `{other}`")),
        (None, Some(a), Some(b)) => (a, b),
        _ => return fail("give two result directories, A and B, or `--baseline last-ok B`".into()),
    };
    let c = match crate::compare::compare(&a, &b) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let text = match format {
        CheckFormat::Json => serde_json::to_string_pretty(&c).unwrap_or_default() + "\n",
        CheckFormat::Text => crate::compare::text(&c),
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    if let Some(pct) = fail_on_regression {
        if !pct.is_finite() || pct < 0.0 {
            return fail(format!(
                "--fail-on-regression takes a percentage of 0 or more, not {pct}"
            ));
        }
        for r in c.unjudged() {
            let _ = writeln!(
                std::io::stderr(),
                "note: {} {} {} {} changed significantly, but its direction is unknown (set `direction=` on its collect): not judged as a regression",
                r.bench, r.lane, r.axes, r.metric
            );
        }
        let bad = c.regressions(pct);
        if !bad.is_empty() {
            for r in &bad {
                let _ = writeln!(
                    std::io::stderr(),
                    "regression: {} {} {} {}: {} (limit {pct} %)",
                    r.bench,
                    r.lane,
                    r.axes,
                    r.metric,
                    r.delta_pct
                        .map(|d| format!("{d:+.2} %"))
                        .unwrap_or_else(|| "from a zero baseline".into())
                );
            }
            return exit_codes::REGRESSION;
        }
    }
    exit_codes::OK
}

#[allow(clippy::too_many_arguments)]
fn history_cmd(
    experiment: Option<&str>,
    lane: Option<&str>,
    metric: Option<&str>,
    wheres: &[String],
    format: CheckFormat,
    svg: Option<&Path>,
    import: &[PathBuf],
    history: Option<&Path>,
) -> i32 {
    let fail = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INVALID
    };
    // the database's own troubles are not the command line's: exit 1
    let broken = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INTERNAL
    };
    let db = crate::history::path(history);
    if !import.is_empty() {
        let mut c = match crate::history::open(&db) {
            Ok(c) => c,
            Err(e) => return broken(e),
        };
        let mut code = exit_codes::OK;
        for d in import {
            match crate::history::register(&mut c, d) {
                Ok(_) => {
                    let _ = writeln!(std::io::stderr(), "indexed {}", d.display());
                }
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "error: {}: {e}", d.display());
                    code = exit_codes::INVALID;
                }
            }
        }
        let _ = writeln!(std::io::stderr(), "history: {}", db.display());
        return code;
    }
    let Some(experiment) = experiment else {
        return fail("name an experiment, or --import DIR…".into());
    };
    let mut filters = Vec::new();
    for w in wheres {
        match w.split_once('=') {
            Some((k, v)) if !k.is_empty() => filters.push((k.to_string(), v.to_string())),
            _ => return fail(format!("--where takes AXIS=VALUE, not `{w}`")),
        }
    }
    if !db.is_file() {
        return fail(format!(
            "no history database at {} (runs register there; `expr history --import DIR…` indexes existing result directories)",
            db.display()
        ));
    }
    let entries = match crate::history::open_ro(&db)
        .and_then(|c| crate::history::query(&c, experiment, lane, metric, &filters))
    {
        Ok(e) => e,
        Err(e) => return broken(e),
    };
    if entries.is_empty() {
        // the experiments it does hold, the nearest first
        let known: Vec<String> = crate::history::open_ro(&db)
            .and_then(|c| crate::history::runs(&c))
            .map(|runs| {
                let mut v: Vec<String> = runs.into_iter().map(|r| r.1).collect();
                v.sort();
                v.dedup();
                v
            })
            .unwrap_or_default();
        let hint = if known.iter().any(|k| k == experiment) {
            String::new()
        } else {
            match crate::suggest::did_you_mean(experiment, known.iter().map(String::as_str)) {
                Some(s) => format!(" — did you mean `{s}`?"),
                None if !known.is_empty() => format!(
                    "; it holds {}",
                    known
                        .iter()
                        .take(10)
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => String::new(),
            }
        };
        return fail(format!(
            "the history ({}) holds no run of `{experiment}`{}{hint}",
            db.display(),
            if lane.is_some() || metric.is_some() || !filters.is_empty() {
                " with that lane, metric or point"
            } else {
                ""
            }
        ));
    }
    let text = match format {
        CheckFormat::Json => serde_json::to_string_pretty(&entries).unwrap_or_default() + "\n",
        CheckFormat::Text => crate::history::text(&entries),
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    let name = entries[0].metric.clone();
    let safe = |s: &str| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    let path = svg.map(Path::to_path_buf).unwrap_or_else(|| {
        crate::history::parent_of(&db).join(format!(
            "history_{}_{}.svg",
            safe(experiment),
            safe(metric.unwrap_or(&name))
        ))
    });
    match crate::history::svg(&entries, &path, &format!("{experiment}: {name} over runs")) {
        Ok(()) => {
            let _ = writeln!(std::io::stderr(), "trend: {}", path.display());
        }
        // a chart asked for by name must be written
        Err(e) if svg.is_some() => return fail(format!("the trend chart was not written: {e}")),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "warning: no trend chart: {e}");
        }
    }
    exit_codes::OK
}
