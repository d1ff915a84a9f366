//! What a run is asked to do: the options `expr run` (and an array task) hand the runner.

use std::path::PathBuf;

use crate::model::Allocation;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub resume: bool,
    pub force: bool,
    pub skip_build: bool,
    pub skip_tests: bool,
    pub fail_fast: bool,
    pub verbose: bool,
    /// Only warnings, errors and the last line on the terminal.
    pub quiet: bool,
    /// Seconds between TERM and KILL at teardown.
    pub grace: u64,
    /// The history database, which also caches each checkout's program flags by code
    /// fingerprint (`--help` is asked once per code version).
    pub history_db: Option<std::path::PathBuf>,
    /// Inside a Slurm array task: the journal fragment this task writes (the submitting run
    /// merges it into the journal); the plan holds the task's one point.
    pub task_journal: Option<PathBuf>,
    /// `mode="array"`: the points run as the tasks of one `sbatch --array`.
    pub array: Option<ArrayRun>,
    /// The run's number of points when the plan holds fewer (an array task's one point): the
    /// progress lines count `[4/10]`, as the run does.
    pub points_of: Option<usize>,
    /// `--noise`: the noise policy (`warn`, `refuse`, `off`) over the experiment's.
    pub noise: Option<String>,
    /// `--jobs`: how many points may run at once on disjoint resources (0 or 1: one at a time).
    pub jobs: usize,
    /// A `--jobs` worker: a thread of the run's process, sharing its ssh master connections.
    pub worker: bool,
    /// A `--jobs` worker's run's mark (`Header::mark`): the worker's own is `<mark>/<ns>`, so
    /// that `expr stop` finds what a worker's steps left by the run's mark.
    pub run_mark: Option<String>,
    /// The `--set` values the run was given: its journal header keeps them, so that `--resume`
    /// without `--set` resumes what ran.
    pub sets: Vec<String>,
    /// The `--only` selections the run was given: its journal header keeps them, so that
    /// `--resume … --only` replaces only the keys it names.
    pub only: Vec<String>,
    /// The experiment file is a temporary one (`expr bench`'s): the result directory keeps a
    /// copy under this name, written first, and the plan, the journal and commands.sh name it.
    pub keep_experiment: Option<&'static str>,
}

/// What the submitting run needs to make the array.
#[derive(Debug, Clone)]
pub struct ArrayRun {
    pub alloc: Allocation,
    /// The `expr` binary the tasks run (the nodes reach it at this path, as they reach the
    /// result directory: a shared filesystem).
    pub expr: String,
    /// The directory the run started in; tasks start there.
    pub cwd: String,
    pub job_name: String,
    pub comment: String,
    /// The experiment file (absolute), which each task plans again with the run's `--set` and
    /// `--only`, and its content hash at submission (a task refuses an edited file).
    pub file: String,
    pub file_hash: String,
    pub sets: Vec<String>,
    pub only: Vec<String>,
    /// Points start servers on fixed ports: tasks must not share a node.
    pub exclusive: bool,
    /// The run's `--grace`: seconds between TERM and KILL when a task tears its point down.
    pub grace: u64,
    /// The run's `--noise`: the policy each task applies to its node.
    pub noise: Option<String>,
}
