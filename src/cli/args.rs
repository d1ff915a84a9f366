//! The command line's clap definitions: the subcommands, their flags and formats.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "expr",
    version = concat!(env!("CARGO_PKG_VERSION"), " (arguments that are not expr subcommands, as in `expr 1 + 2`, go to the system expr)"),
    about = "Declarative, version-controlled ML-systems benchmarks",
    after_help = "Exit codes:\n  0    every point ok (warnings allowed)\n  1    internal error\n  2    invalid experiment or command line\n  3    a point failed or has no data\n  4    preflight failed: nothing ran\n  5    compare --fail-on-regression: a significant regression beyond the limit, or a point B\n       measured nothing for that A measured\n  6    every point ran, but an `expect` of the experiment is not met\n  7    report/stop: the result directory is in use by a running expr\n  129  stopped by SIGHUP (the terminal or ssh session closed), after teardown and the report\n  130  interrupted (SIGINT/SIGTERM)\n  131  stopped by SIGQUIT, after teardown and the report\n\nLiving beside POSIX expr: when the first argument is not one of the subcommands above or a\nglobal flag (`expr 1 + 2`, `expr length abc`, `expr \"$x\" : 'a.*'`), or is a lone word other than\n`run` and `ls` (`x=stop; expr \"$x\"`), the arguments go untouched to the next `expr` on PATH\nafter this one (or /usr/bin/expr), so shell scripts keep working with this expr first on PATH."
)]
pub struct Cli {
    /// Colour in diagnostics: auto (on a terminal, unless NO_COLOR is set and not empty), always
    /// or never.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN")]
    pub color: ColorWhen,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum CheckFormat {
    Text,
    Json,
}

/// `compare` and `history`: a markdown table, JSON, a self-contained HTML page, or Markdown for
/// a pull-request comment or `$GITHUB_STEP_SUMMARY`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum PageFormat {
    Text,
    Json,
    Html,
    Github,
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
        /// The experiment file (KDL). With `--resume DIR` it may be left out: the run's own is
        /// used. Without either: the only file in experiments/ and examples/, or their list.
        file: Option<PathBuf>,
        /// Select part of the matrix: lane=…, repeat=…, bench=…, or any setting or sweep axis (repeatable: values of one key are alternatives, each key narrows).
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
        /// Write into an existing result directory: the earlier run's files (journal, manifest, reports, charts, logs/, outputs/, runtime/) are replaced once a point of this run measures; other files at its top stay.
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
        /// Run up to N points at once, never two on the same GPU (a step's `gpus=`) or on a host
        /// either takes whole (a step without GPUs, a server); a `pool`'s point runs on whichever
        /// member is free first. Local and ssh hosts, and nodes of a Slurm allocation; not with
        /// adaptive repeats or a kind whose points share servers. Default: the experiment's
        /// `jobs`, else 1.
        #[arg(long, short = 'j', value_name = "N",
              value_parser = clap::value_parser!(u16).range(1..=256))]
        jobs: Option<u16>,
        /// What preflight's machine checks do, over the experiment's `noise`: warn (and flag the
        /// points measured under noise), refuse (exit 4 before any point), off (record only).
        #[arg(long, value_name = "POLICY", value_parser = ["warn", "refuse", "off"])]
        noise: Option<String>,
        /// The report's language, over the experiment's `language` (recorded with the run, so
        /// `expr report` writes it in the same one): zh or en.
        #[arg(long, value_name = "LANG", value_parser = ["zh", "en"])]
        lang: Option<String>,
        /// Stream every step's output, prefixed by host and step.
        #[arg(long, short = 'v', conflicts_with = "quiet")]
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
        #[arg(long, value_name = "MIB", default_value_t = crate::parse::load::MAX_INPUT_MIB)]
        max_input_mib: u64,
        /// The history database (default: $EXPR_HISTORY, else the project's
        /// results/.expr-history.sqlite: the nearest directory above holding .git, or this one).
        #[arg(long, value_name = "PATH")]
        history: Option<PathBuf>,
        /// Also write JUnit XML here when the run ends: a case per point (failed with its
        /// reason) and per expectation at each point (failed with what was found).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Append a Markdown summary here when the run ends (for a pull request, or
        /// `--summary-md "$GITHUB_STEP_SUMMARY"`): the verdict, expectations, failed points and
        /// each lane's headline.
        #[arg(long, value_name = "FILE")]
        summary_md: Option<PathBuf>,
    },
    /// Find the commit that moved a metric: each probed commit of the benchmarked checkout is
    /// checked out in its own worktree, built and tested as `expr run` does, and measured until
    /// its 95 % intervals against the good and the bad reference decide.
    #[command(
        after_help = "Exit codes: 0 the first bad commit is found; 2 invalid experiment or command line; 3 not found (every commit in the remaining range skipped, no step between good and bad, a reference that does not build, or --max-runs reached); 130 interrupted (continue with --resume DIR).\n\nThe bisection directory holds bisect.jsonl (its journal), bisect.md and bisect.html (the result) and runs/ (one result directory per round, each registered in the history); one expr bisect at a time writes it. Each measured commit is checked out on every host (local, ssh, or a Slurm allocation's node) in a worktree at <git common dir>/expr-bisect/<commit> of that host's checkout, kept after the bisection as the build cache. The user's working tree and HEAD are never touched."
    )]
    Bisect(crate::bisect::Args),
    /// Time commands, hyperfine-style, without writing an experiment: `expr bench 'sleep 0.1'
    /// 'sleep 0.2'`. Each command is a lane of a `bench` run (its result directory, report,
    /// history and `compare` as any run's); a summary says which ran fastest.
    Bench(BenchArgs),
    /// Compare two result directories: per lane and sweep point, the headline metric's means,
    /// the change with its 95 % interval (of the ratio of means on the log scale; Welch's for
    /// the difference when a mean is not positive) and a verdict.
    Compare {
        /// The baseline (A). Leave out with `--baseline last-ok`.
        #[arg(required_unless_present = "baseline")]
        a: Option<PathBuf>,
        /// The result to judge (B).
        b: Option<PathBuf>,
        /// `last-ok`: A is the newest run of B's experiment that ended ok, from the history.
        #[arg(long, value_name = "last-ok")]
        baseline: Option<String>,
        /// text (markdown), json, html (a self-contained page, report.html's look), or github
        /// (Markdown for a pull-request comment or $GITHUB_STEP_SUMMARY).
        #[arg(long, value_enum, default_value_t = PageFormat::Text)]
        format: PageFormat,
        /// Exit 5 when a significant regression is larger than PCT percent, or when B measured
        /// nothing for a point A measured (it failed, or had no data).
        #[arg(long, value_name = "PCT")]
        fail_on_regression: Option<f64>,
        /// Also write JUnit XML here: a case per lane, point and metric, failed when it is a
        /// significant regression (beyond --fail-on-regression, when given) or a point B measured
        /// nothing for, skipped without an interval or a direction.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
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
        /// text (markdown; `github` writes the same), json, or html (a self-contained page: the change points, a trend chart per series with a selector, the runs).
        #[arg(long, value_enum, default_value_t = PageFormat::Text)]
        format: PageFormat,
        /// Find the change points of each series (lane × point × metric × machine): where its
        /// level moved, by how much with a 95 % interval, with what significance against that
        /// machine's run-to-run noise, between which commits, and the `expr bisect` that finds
        /// the commit.
        #[arg(long)]
        changes: bool,
        /// With --changes: run `expr bisect` over the newest change's commit range.
        #[arg(long, requires = "changes")]
        bisect: bool,
        /// Write the output (in --format) to this file instead of standard output.
        #[arg(long, value_name = "PATH")]
        output: Option<PathBuf>,
        /// Also write the trend chart of every series together as an SVG file here.
        #[arg(long, value_name = "PATH")]
        svg: Option<PathBuf>,
        /// Index existing result directories instead.
        #[arg(long, value_name = "DIR", num_args = 1..)]
        import: Vec<PathBuf>,
        /// The history database (default: $EXPR_HISTORY, else the project's results/.expr-history.sqlite).
        #[arg(long, value_name = "PATH")]
        history: Option<PathBuf>,
    },
    /// Stop every process a result directory's journal recorded that is still alive (a run's
    /// sentinel does it by itself when expr is killed; `EXPR_NO_SENTINEL=1` starts none).
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
        /// Write the report in this language instead of the run's (its experiment's `language`,
        /// else its first bench's kind's): zh or en.
        #[arg(long, value_name = "LANG", value_parser = ["zh", "en"])]
        lang: Option<String>,
        /// The history database that holds the run, updated with what the report finds
        /// (default: $EXPR_HISTORY, else the project's results/.expr-history.sqlite); a run it
        /// does not hold is not added.
        #[arg(long, value_name = "PATH")]
        history: Option<PathBuf>,
    },
    /// Dry run: print every step of the expanded matrix; runs nothing, writes nothing.
    Plan {
        /// The experiment file (KDL), or `-` for standard input.
        file: PathBuf,
        /// text (readable), json (the whole Plan), sh (a runnable commands.sh) or sbatch (what is submitted to Slurm).
        #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
        format: PlanFormat,
        /// Select part of the matrix: lane=…, repeat=…, bench=…, or any setting or sweep axis (repeatable: values of one key are alternatives, each key narrows).
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
        #[arg(long, value_name = "MIB", default_value_t = crate::parse::load::MAX_INPUT_MIB)]
        max_input_mib: u64,
    },
    /// Write a commented starter experiment of a kind that checks clean (`bench`, the generic
    /// kind, runs anywhere).
    Init {
        /// The kind of benchmark. A lone `expr init` is POSIX expr's string `init`: give the
        /// kind (`expr init bench`).
        #[arg(value_parser = kind_names())]
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
    /// List the result directories under DIR, newest first (without DIR: those under
    /// `results/` and those the history indexes).
    Ls {
        /// The directory holding result directories (default `results/`, with every run the
        /// history indexes elsewhere; a DIR given lists only what is under it).
        dir: Option<PathBuf>,
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
        #[arg(long, value_name = "MIB", default_value_t = crate::parse::load::MAX_INPUT_MIB)]
        max_input_mib: u64,
    },
}

/// expr's internal entry points, parsed apart from [`Cli`] so that neither `--help` nor the
/// shell completions offer them (clap's completion scripts listed hidden subcommands).
#[derive(Parser, Debug)]
#[command(name = "expr")]
pub enum Internal {
    /// Inside a Slurm array task (what an array run's batch script runs): plan the run's
    /// experiment again and run one point into the result directory.
    #[command(name = "__task")]
    Task(TaskArgs),
    /// A run's sentinel (what `expr run` starts): once the run ends without its teardown
    /// (killed), stop what its journal recorded, as `expr stop DIR` does.
    #[command(name = "__watch")]
    Watch {
        /// The run's result directory.
        dir: PathBuf,
    },
}

impl Internal {
    /// The names `expr FIRST` takes for an internal entry point.
    pub const NAMES: [&'static str; 2] = ["__task", "__watch"];
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
    /// The run's --noise (the policy the task applies to its node).
    #[arg(long, value_parser = ["warn", "refuse", "off"])]
    pub noise: Option<String>,
}

/// The kinds `expr init` takes, from the registry (shown by `--help`, completed by the shell),
/// and a hidden `-` (`expr init -`: the generic kind on standard output).
fn kind_names() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    let mut v: Vec<PossibleValue> = crate::kinds::all()
        .iter()
        .map(|k| PossibleValue::new(k.node))
        .collect();
    v.push(PossibleValue::new("-").hide(true));
    clap::builder::PossibleValuesParser::new(v)
}

/// `expr bench`'s arguments.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The commands to time (each one a lane).
    #[arg(required = true, value_name = "CMD")]
    pub commands: Vec<String>,
    /// Timed runs of each command.
    #[arg(short = 'r', long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub runs: u32,
    /// Untimed runs of each command before its timed ones.
    #[arg(short = 'w', long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub warmup: u32,
    /// `bash` (the shell's spawn time, measured, is subtracted) or `none` (the words run
    /// directly: no pipes or variables).
    #[arg(short = 'S', long, default_value = "bash", value_parser = ["bash", "none"])]
    pub shell: String,
    /// No shell: as `--shell none` (hyperfine's `-N`).
    #[arg(short = 'N', conflicts_with = "shell")]
    pub no_shell: bool,
    /// A name for each command, in order (default: the command itself).
    #[arg(short = 'n', long = "command-name", value_name = "NAME")]
    pub names: Vec<String>,
    /// Time runs that exit non-zero as well (hyperfine's `-i`): each run step gets
    /// `exit-ok="any"`; a signal or a timeout still fails the run.
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,
    /// A command run before each timed run (hyperfine's `--prepare`): not timed.
    #[arg(short = 'p', long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Write the results as hyperfine's JSON.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write the results as hyperfine's Markdown table.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Result directory (default `results/bench_MMDDHHMMSS_mmm`: the time to the millisecond).
    #[arg(long)]
    pub output: Option<String>,
    /// The history database (default: $EXPR_HISTORY, else the project's results/.expr-history.sqlite).
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
    /// Only warnings, errors and the summary (hyperfine's `--style basic` without the runs).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl BenchArgs {
    /// `bash` or `none` (`-N` is `--shell none`).
    pub(super) fn shell(&self) -> &str {
        if self.no_shell {
            "none"
        } else {
            &self.shell
        }
    }
}
