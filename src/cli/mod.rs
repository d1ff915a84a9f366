//! Command line: argument parsing and the edge where diagnostics are rendered.

mod args;
mod array;
mod bench;
mod bisect;
mod check;
mod compare;
mod diags;
mod history;
mod init;
mod out;
mod plan;
mod report;
mod run;
mod task;

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use clap::{CommandFactory, Parser};

use crate::parse::validate::Options;
use crate::util::exit_codes;

pub use args::{CheckFormat, Cli, Command, PlanFormat, TaskArgs};
pub use diags::print_diags;
pub use task::task;

use bisect::bisect_cmd;
use check::check;
use compare::compare_cmd;
use history::history_cmd;
use init::init;
use plan::plan;
use report::report;
use run::{resume_file, run_cmd};

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
        Some("+" | "*" | "/" | "%" | ":" | "=" | "==" | "!=" | "<" | "<=" | ">" | ">=" | "&" | "|")
    ) || (second == Some("-")
        && args.len() == 3
        && third.is_some_and(|t| !t.starts_with('-') && !t.ends_with(".kdl")));
    if operator && args.len() >= 2 {
        return false;
    }
    if matches!(s, "-h" | "--help" | "-V" | "--version" | "help" | "--color")
        || s.starts_with("--color=")
    {
        return true;
    }
    // POSIX expr's own words and the ones GNU adds (`expr length "$f"`, `expr + "$f"`,
    // `expr -- "$f"`, `expr ( "$f" )`): an expression whatever its operands are
    if matches!(
        s,
        "length" | "substr" | "index" | "match" | "+" | "--" | "("
    ) {
        return false;
    }
    // a lone word is POSIX expr's string (`x=stop; expr "$x"` prints `stop`; a lone `init` wrote
    // bench.kdl), but for the subcommands that do their work without an argument: `run` (the
    // one experiment here) and `ls`
    if args.len() == 1 && s != "run" && s != "ls" {
        return false;
    }
    if args::Internal::NAMES.contains(&s)
        || Cli::command()
            .get_subcommands()
            .any(|c| c.get_name() == s || c.get_all_aliases().any(|a| a == s))
    {
        return true;
    }
    args.iter()
        .skip(1)
        .any(|a| a.to_str().is_some_and(|a| a.ends_with(".kdl")))
}

/// Before a lone word that names a subcommand goes to POSIX expr (`expr init` prints `init`):
/// where stderr is a terminal, how to reach the subcommand. Scripts (stderr not a terminal)
/// see POSIX expr's output alone.
pub fn lone_command_hint(args: &[OsString]) {
    use std::io::IsTerminal;
    let [one] = args else { return };
    let Some(w) = one.to_str() else { return };
    let ours = Cli::command()
        .get_subcommands()
        .any(|c| c.get_name() == w && !c.is_hide_set());
    if ours && std::io::stderr().is_terminal() {
        let _ = writeln!(
            std::io::stderr(),
            "expr: a lone `{w}` is POSIX expr's string, which it prints; `expr {w} --help` shows the command, `expr --help` lists them"
        );
    }
}

/// Before a word that is near a subcommand's name goes to POSIX expr (`expr compre a b`, which
/// it answers "syntax error"): where stderr is a terminal, the subcommand it may have meant.
pub fn typo_hint(args: &[OsString]) {
    use std::io::IsTerminal;
    let Some(w) = args.first().and_then(|a| a.to_str()) else {
        return;
    };
    let cmd = Cli::command();
    let names: Vec<&str> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name())
        .collect();
    if names.contains(&w) || !std::io::stderr().is_terminal() {
        return;
    }
    // (helper 78: `expr histroy t` was POSIX expr's "syntax error" alone)
    if let Some(m) = crate::util::suggest::did_you_mean(w, names.iter().copied()) {
        let _ = writeln!(
            std::io::stderr(),
            "expr: `{w}` is no expr subcommand (did you mean `{m}`?), so POSIX expr reads the line:"
        );
    }
}

/// Entry point used by `main` and by tests.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if args
        .get(1)
        .and_then(|a| a.to_str())
        .is_some_and(|a| args::Internal::NAMES.contains(&a))
    {
        return match args::Internal::try_parse_from(&args) {
            Ok(args::Internal::Task(t)) => task(&t),
            Ok(args::Internal::Watch { dir }) => crate::exec::sentinel::watch(&dir),
            Err(e) => {
                let _ = e.print();
                exit_codes::INVALID
            }
        };
    }
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
    diags::set_color(cli.color);
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
        cmd @ Command::Run { .. } => run_experiment(cmd),
        Command::Bisect(args) => bisect_cmd(args),
        Command::Bench(args) => bench::bench(args),
        Command::Compare {
            a,
            b,
            baseline,
            format,
            fail_on_regression,
            junit,
            history,
        } => compare_cmd(
            a,
            b,
            baseline.as_deref(),
            format,
            fail_on_regression,
            junit.as_deref(),
            history.as_deref(),
        ),
        Command::History {
            experiment,
            lane,
            metric,
            wheres,
            format,
            changes,
            bisect,
            output,
            svg,
            import,
            history,
        } => history_cmd(&history::HistoryArgs {
            experiment: experiment.as_deref(),
            lane: lane.as_deref(),
            metric: metric.as_deref(),
            wheres: &wheres,
            format,
            changes,
            bisect,
            output: output.as_deref(),
            svg: svg.as_deref(),
            import: &import,
            history: history.as_deref(),
        }),
        Command::Report {
            dir,
            template,
            lang,
            history,
        } => report(
            &dir,
            template.as_deref(),
            lang.as_deref().and_then(crate::util::lang::Lang::parse),
            history.as_deref(),
        ),
        Command::Init { kind, file, force } => init(&kind, file.as_deref(), force),
        Command::Completions { shell } => completions(shell),
        Command::Ls {
            dir,
            format,
            history,
        } => ls_cmd(dir.as_deref(), format, history.as_deref()),
        Command::Stop { dir } => lock_and_stop(&dir),

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

/// `expr run`: the experiment file (given, the resumed directory's, or the only one here), the
/// runner's options, then the run.
fn run_experiment(cmd: Command) -> i32 {
    let Command::Run {
        file,
        only,
        set,
        output,
        resume,
        force,
        skip_build,
        skip_tests,
        fail_fast,
        jobs,
        noise,
        lang,
        verbose,
        quiet,
        grace,
        allow_large,
        max_input_mib,
        history,
        junit,
        summary_md,
    } = cmd
    else {
        unreachable!("run_experiment is given Command::Run")
    };
    let limits = Options {
        allow_large,
        max_input_mib: Some(max_input_mib),
    };
    let mut set = set;
    let file = match (file, &resume) {
        (Some(f), _) => f,
        (None, Some(dir)) => match resume_file(Path::new(dir), &set, force, &limits) {
            Ok((f, sets)) => {
                set = sets;
                f
            }
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                return exit_codes::INVALID;
            }
        },
        (None, None) => match run::the_only_experiment() {
            Ok(f) => f,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "{e}");
                return exit_codes::INVALID;
            }
        },
    };
    let opts = crate::exec::run::runner::Options {
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
        noise,
        // 0: the experiment's `jobs`, else 1 (known once it is loaded)
        jobs: jobs.map_or(0, usize::from),
        worker: false,
        run_mark: None,
        sets: Vec::new(),
        only: Vec::new(),
        keep_experiment: None,
    };
    // `--resume DIR --only …`: the run's selection, its keys named now replaced
    let only = match &resume {
        Some(dir) if !only.is_empty() => run::resume_only(Path::new(dir), &only),
        _ => only,
    };
    run_cmd(
        &file,
        &only,
        &set,
        output.or(resume).as_deref(),
        opts,
        &limits,
        history.as_deref(),
        lang.as_deref().and_then(crate::util::lang::Lang::parse),
        &run::CiOut {
            junit: junit.as_deref(),
            summary_md: summary_md.as_deref(),
        },
    )
}

/// `expr completions SHELL`: the script on stdout.
fn completions(shell: clap_complete::Shell) -> i32 {
    // into a buffer, then one write whose error is taken
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "expr", &mut buf);
    // clap_complete's bash script lists a positional's hidden values too: `expr init -` (the
    // starter on stdout) is typed, not offered
    if shell == clap_complete::Shell::Bash {
        let text = String::from_utf8_lossy(&buf)
            .lines()
            .map(|l| match l.trim_start().starts_with("opts=") {
                true => l.replace(" bench -\"", " bench\""),
                false => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        buf = text.into_bytes();
    }
    out::print(&buf).err().unwrap_or(exit_codes::OK)
}

/// `expr ls [DIR]`: the result directories under DIR (default `results`), as text or JSON.
fn ls_cmd(dir: Option<&Path>, format: CheckFormat, history: Option<&Path>) -> i32 {
    // a folder named that is not there is a mistake (the default, `results`, is not yet)
    if let Some(d) = dir.filter(|d| !d.exists()) {
        let _ = writeln!(
            std::io::stderr(),
            "error: {}: no such directory",
            crate::util::markup::one_line(&d.display().to_string())
        );
        return exit_codes::INVALID;
    }
    match crate::history::ls::list_with_warnings(
        dir.unwrap_or(Path::new("results")),
        history,
        dir.is_none(),
    ) {
        Ok((mut entries, warnings)) => {
            // no end recorded, and a live expr holds the directory: running, not killed
            for e in entries
                .iter_mut()
                .filter(|e| e.status == "incomplete" && crate::exec::lock::held_by_a_run(&e.path))
            {
                e.status = "running".into();
            }
            for w in &warnings {
                let _ = writeln!(std::io::stderr(), "warning: {w}");
            }
            let text = match format {
                CheckFormat::Json => {
                    serde_json::to_string_pretty(&entries).unwrap_or_default() + "\n"
                }
                CheckFormat::Text if entries.is_empty() => format!(
                    "no result directories under {}\n",
                    dir.unwrap_or(Path::new("results")).display()
                ),
                CheckFormat::Text => crate::history::ls::text(&entries),
            };
            out::print(text.as_bytes()).err().unwrap_or(exit_codes::OK)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit_codes::INVALID
        }
    }
}

/// `expr stop DIR`: take DIR's lock (refused while a live run holds it), then stop.
fn lock_and_stop(dir: &Path) -> i32 {
    match crate::exec::lock::lock_if_writable(dir, "stop") {
        Err(e @ crate::exec::lock::LockError::Busy { .. }) if matches!(&e, crate::exec::lock::LockError::Busy { holder, .. } if crate::exec::lock::is_sentinel(holder)) =>
        {
            // a killed run's sentinel does what `expr stop` does: not a run to interrupt
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit_codes::BUSY
        }
        Err(crate::exec::lock::LockError::Busy { dir: d, holder }) => {
            // the run is alive: `expr stop` is for what a killed run left behind
            let _ = writeln!(
                std::io::stderr(),
                "error: {d} is held by a running expr ({holder}): it stops its own processes when told to; send it Ctrl-C (or `kill -INT` its pid). `expr stop` is for after expr itself was killed"
            );
            exit_codes::BUSY
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit_codes::INVALID
        }
        Ok(lock) => stop_cmd(dir, lock),
    }
}

/// `expr stop DIR`, holding its lock: stop what the journal recorded.
fn stop_cmd(dir: &Path, _lock: Option<crate::exec::lock::DirLock>) -> i32 {
    // a journal damaged (lines that are no event) may not record all it started: said, and
    // "nothing … is still running" is then not claimed of what it could not read
    let read = crate::results::journal::shared(&dir.join("journal.jsonl"));
    let bad = read.1.len();
    if let Some((n, why)) = read.1.first() {
        let _ = writeln!(
            std::io::stderr(),
            "warning: {}: {bad} line(s) of journal.jsonl are no event and were not read (line {n}: {why}); what they recorded cannot be stopped from it (the processes expr marked were looked for all the same)",
            dir.display()
        );
    }
    match crate::exec::stop::stop(dir) {
        Ok((mut lines, gone)) => {
            if lines.is_empty() {
                lines.push(if bad > 0 {
                    "nothing that the journal's readable lines record is still running".into()
                } else {
                    "nothing recorded in the journal is still running".into()
                });
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
    }
}
