//! The run's state and its recorder: the `Runner` every unit of a run works on (hosts, journal,
//! manifest rows, progress), spawning and recording steps, and the small helpers they share.

pub(in crate::exec) mod consumers;
pub mod options;
pub mod progress;
pub mod rows;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::exec::backend::host::{self, Proc, Ssh};
use crate::exec::signals;
use crate::exec::state::options::Options;
use crate::exec::state::progress::Progress;
use crate::model::{Experiment, Host};
use crate::plan::{Phase, Plan, PlanPoint, Step};
use crate::results::event::{self, RunEvent};
use crate::results::journal::{self, Journal};
use crate::results::manifest;

/// Why the run stopped early.
#[derive(Debug, PartialEq)]
pub(super) enum Stop {
    Interrupted,
    Killed,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::Interrupted => "interrupted",
            Stop::Killed => "interrupted again, stopping at once",
        })
    }
}

/// The measured spawn time of one (host, directory) (see `calibrate`).
#[derive(Debug, Clone, Copy)]
pub struct Overhead {
    pub mean_ms: f64,
    pub sd_ms: f64,
    pub runs: usize,
    /// The mean CPU time of a run (user, system), where it was measured (this machine).
    pub cpu_ms: Option<(f64, f64)>,
}

pub struct Runner<'a> {
    /// What the run records through and how its steps start: what every unit of the run works
    /// through (point execution is `Recorder::run_point`).
    pub(super) rec: Recorder<'a>,
    pub(super) opts: Options,
    /// The shell's spawn time per (host, cwd), measured before the points of timed benches.
    pub(super) shell_overhead: HashMap<(String, String), crate::exec::state::Overhead>,
    /// This run made the result directory (so it may remove it when nothing ran).
    pub(super) created: bool,
    /// `--force`: where the earlier run's files wait until something runs ([`SET_ASIDE`]).
    pub(super) forced: Option<PathBuf>,
    /// The result directory's lock (none for an array task, inside its run's directory).
    pub(super) _lock: Option<crate::exec::lock::DirLock>,
    /// The noise policy, each host's machine record and the last between-points check.
    pub(super) noise: crate::exec::noise::NoiseState,
}

/// What `--skip-build` and `--skip-tests` leave out of a run's setup steps.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Skip {
    pub build: bool,
    pub tests: bool,
}

/// The run's recorder: the experiment and plan it carries out, the result directory, the
/// hosts' connections, the journal, the manifest and the terminal, and how a step is started,
/// watched, recorded and stopped. Point execution, setup steps, calibration and the sweeps of
/// escaped processes work through it; it knows nothing of the campaign (which points run, the
/// options that decide it) or of the noise policy.
pub struct Recorder<'a> {
    pub(super) exp: &'a Experiment,
    pub(super) plan: &'a Plan,
    pub(super) dir: PathBuf,
    pub(super) ssh: Ssh,
    pub(super) journal: Journal,
    pub(super) progress: Progress,
    /// manifest.csv, made from the point events (`crate::exec::state::consumers`).
    pub(super) manifest: crate::exec::state::consumers::Manifest,
    pub(super) survivors: Vec<String>,
    /// The run began with nothing in logs/ (not resumed): a point's earlier attempt can only be
    /// one of this run's, and these are the points that started (`set_aside_earlier` then
    /// lists logs/ — a read that grows with the points — only for them).
    pub(super) began_empty: Option<std::collections::HashSet<String>>,
    /// This process adopts what the run's processes leave (`crate::exec::backend::escape`),
    /// from when (clock ticks after boot), and runs one point at a time: what it adopted since a
    /// point's first step is that point's.
    pub(super) adopting: Option<u64>,
    /// --verbose: how far each log has been streamed.
    pub(super) tails: HashMap<PathBuf, u64>,
    /// The step running on each host, for the progress line.
    pub(super) running: BTreeMap<String, String>,
    /// When (clock ticks since boot) the first step spawned on this machine since the last
    /// sweep started: what it left started then or later, whatever pid it got (pids wrap).
    pub(super) since: Option<u64>,
    /// Files of the result directory that could not be written (a full disk), said at the end.
    pub(super) write_errors: Vec<String>,
    /// This process's mark: every step carries `EXPR_MARK=<mark>:<point>;` in its environment,
    /// so what leaves its process group is still found (`crate::exec::backend::escape`).
    pub(super) mark: String,
    /// What preflight learned of the checkouts: the flags each step's program takes, by step
    /// id, for the steps' optional flags.
    pub(super) known_flags: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// The config layout each host's checkout takes, per (host, file path), when it is not the
    /// planned one (an alternative of the step's schema check).
    pub(super) layouts: BTreeMap<(String, String), String>,
    /// Per step id: optional flags preflight found the checkout's program does not take.
    pub(super) left_out: BTreeMap<String, Vec<String>>,
    /// --verbose: each step's output streamed to the terminal.
    pub(super) verbose: bool,
    /// --grace: seconds between TERM and KILL.
    pub(super) grace_s: u64,
    /// How many points the progress lines count (an array task counts its run's).
    pub(super) points_of: usize,
    /// `--force` past preflight: the earlier run's files ([`SET_ASIDE`]), kept until a point of
    /// this run ends ok — a run that measures nothing (its build failed, a Ctrl-C) does not
    /// replace good results with none.
    pub(super) forced: Option<PathBuf>,
}

/// Whether an entry of a result directory is one a run writes (what `--force` replaces).
fn run_file(name: &str, is_file: bool) -> bool {
    matches!(
        name,
        "journal.jsonl"
            | "manifest.csv"
            | "summary.md"
            | "summary_e2e.csv"
            | "metrics.csv"
            | "summary.json"
            | "deployment.md"
            | "commands.sh"
            | "report.html"
            | "logs"
            | "outputs"
            | "runtime"
    ) || (name.ends_with(".svg") && is_file)
        || (name.starts_with('.') && name.ends_with(".tmp"))
}

/// The files and directories a run writes into its result directory, removed.
fn clear_run_files(dir: &Path) -> Result<(), String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !run_file(&name, e.path().is_file()) {
            continue;
        }
        let p = e.path();
        let r = if e.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        r.map_err(|err| format!("--force: cannot remove {}: {err}", p.display()))?;
    }
    Ok(())
}

/// Where `--force` keeps the earlier run's files until something runs (inside the result
/// directory: one rename each, on one filesystem).
pub const SET_ASIDE: &str = ".expr-forced";

/// `--force`: the earlier run's files moved into [`SET_ASIDE`], whole, so that a run in which
/// nothing ran (a failed preflight) or nothing ended ok puts them back. A set-aside a killed
/// run left is kept: it holds the results from before that run, which measured nothing (the
/// set-aside goes with its first point that ends ok), so the files in the directory are that
/// run's and go.
fn set_aside(dir: &Path) -> Result<PathBuf, String> {
    let aside = dir.join(SET_ASIDE);
    let err = |p: &Path, e: std::io::Error| format!("--force: cannot move {}: {e}", p.display());
    if aside.is_dir() {
        clear_run_files(dir)?;
        return Ok(aside);
    }
    std::fs::create_dir(&aside).map_err(|e| err(&aside, e))?;
    for e in std::fs::read_dir(dir).map_err(|e| err(dir, e))?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if run_file(&name, e.path().is_file()) {
            std::fs::rename(e.path(), aside.join(e.file_name())).map_err(|x| err(&e.path(), x))?;
        }
    }
    Ok(aside)
}

/// A `--force` run killed before a point of it ended ok (a kill -9: the set-aside goes only
/// with that point) left the earlier results in [`SET_ASIDE`] and files of its own that hold
/// no measurement: the earlier results come back. Said, or why they could not.
pub fn recover_forced(dir: &Path) -> Option<String> {
    let aside = dir.join(SET_ASIDE);
    if !aside.is_dir() {
        return None;
    }
    Some(match put_back(dir, &aside) {
        Ok(()) => format!(
            "expr: a `--force` run into {} was stopped before it measured anything: the results it had set aside are back",
            dir.display()
        ),
        Err(e) => format!(
            "warning: a `--force` run into {} was stopped before it measured anything; its earlier results are in {}: {e}",
            dir.display(),
            aside.display()
        ),
    })
}

/// A `--force` run that measured nothing: its files moved to `rel` inside the earlier run's
/// (`aside`), which then come back whole.
fn keep_earlier(dir: &Path, aside: &Path, rel: &Path) -> Result<(), String> {
    let keep = aside.join(rel);
    let err = |p: &Path, e: std::io::Error| format!("cannot move {}: {e}", p.display());
    std::fs::create_dir_all(&keep).map_err(|e| err(&keep, e))?;
    for e in std::fs::read_dir(dir).map_err(|e| err(dir, e))?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if run_file(&name, e.path().is_file()) {
            std::fs::rename(e.path(), keep.join(e.file_name())).map_err(|x| err(&e.path(), x))?;
        }
    }
    put_back(dir, aside)
}

/// A run that ran nothing: its own files go, and the earlier run's come back from `aside`.
pub fn put_back(dir: &Path, aside: &Path) -> Result<(), String> {
    clear_run_files(dir)?;
    let err = |p: &Path, e: std::io::Error| format!("cannot put back {}: {e}", p.display());
    for e in std::fs::read_dir(aside)
        .map_err(|e| err(aside, e))?
        .flatten()
    {
        std::fs::rename(e.path(), dir.join(e.file_name())).map_err(|x| err(&e.path(), x))?;
    }
    std::fs::remove_dir(aside).map_err(|e| err(aside, e))
}

/// Whether the filesystem of `dir` has no room left (less than a page free).
pub(super) fn disk_full(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs writes into the zeroed struct it is given; the path is NUL-terminated
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    rc == 0 && (st.f_bavail as u128) * (st.f_frsize as u128) < 4096
}

/// A mark unique to this expr process (pid and start time in ns).
fn new_mark() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}.{ns}", std::process::id())
}

/// Short, unique control-socket directory (unix socket paths are limited to ~100 bytes); made
/// when the first ssh connection opens. Earlier runs' masters are closed first
/// ([`crate::exec::backend::host::close_stale_masters`]).
fn control_dir() -> PathBuf {
    crate::exec::backend::host::close_stale_masters();
    std::env::temp_dir().join(format!("expr-cm-{}", std::process::id()))
}

/// The point's event with what every recorded end carries: its identity, status, cause (and
/// the cause in words) and command hash; the caller adds the rest.
pub fn point_event(
    p: &PlanPoint,
    status: &str,
    cause: crate::results::reason::Reason,
) -> event::Point {
    event::Point {
        run_id: Some(p.run_id.clone()),
        lane: Some(p.lane.clone()),
        repeat: Some(p.repeat),
        status: Some(status.to_string()),
        reason: Some(cause.render(crate::util::lang::Lang::En)),
        cause: Some(cause),
        command_hash: Some(point_hash(p)),
        ..Default::default()
    }
}

/// The identity of a point's commands: what `--resume` compares.
pub fn point_hash(p: &PlanPoint) -> String {
    // the point's identity as well as its commands: two lanes whose run ids swap (names that
    // slug alike get `_2` in file order) never pass for each other on --resume
    let mut s = format!("{}\u{1}{}\u{1}{}", p.bench, p.lane, p.repeat);
    for (k, v) in &p.axes {
        s.push_str(&format!("\u{1}{k}={v}"));
    }
    s.push('\n');
    for st in &p.steps {
        s.push_str(&st.host);
        s.push('\u{1}');
        s.push_str(&st.cwd);
        s.push('\u{1}');
        s.push_str(&st.exec_line());
        if let Some(f) = &st.file {
            s.push_str(&f.path);
            s.push_str(&f.content);
        }
        // which exits leave it ok: a point kept as ok on an exit its `exit-ok=` no longer
        // accepts would be a failure passed off as a result (helper 83); a step without one
        // hashes as before
        if let Some(x) = &st.extra().exit_ok {
            s.push_str("\u{1}exit-ok=");
            s.push_str(&x.text());
        }
        s.push('\n');
    }
    crate::util::hash::fnv1a(&s)
}

/// A directory expr made: its journal holds expr's events.
/// The result directory `dir` would be made inside: the nearest folder above it whose journal
/// is expr's.
fn inside_result_dir(dir: &Path) -> Option<std::path::PathBuf> {
    let abs = std::path::absolute(dir).ok()?;
    // through links too: the nearest folder that exists, resolved (`lk/nb` with `lk ->
    // r1/logs` is inside r1)
    let real = abs
        .ancestors()
        .skip(1)
        .find_map(|d| std::fs::canonicalize(d).ok())?;
    std::iter::once(real.as_path())
        .chain(real.ancestors().skip(1))
        .chain(abs.ancestors().skip(1))
        .find(|d| d.join("journal.jsonl").is_file() && is_result_dir(d))
        .map(Path::to_path_buf)
}

pub fn is_result_dir(dir: &Path) -> bool {
    journal::events(&dir.join("journal.jsonl"))
        .first()
        .is_some_and(|e| e.name().is_some())
}

pub(super) fn tail(path: &Path, lines: usize) -> String {
    // the end of the file only (a step's log may be gigabytes), bytes read lossily
    let text = crate::results::collect::end_of(path);
    // a line a progress bar redrew with `\r` is what the terminal showed last
    let v: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("EXPR_PGID="))
        .map(|l| l.split('\r').rfind(|p| !p.is_empty()).unwrap_or(""))
        .collect();
    // a secret the step printed is not repeated (the reason goes to the journal, manifest,
    // terminal and report); nor a control sequence, which drove the terminal it was shown on
    // (`\e]0;TITLE\a` set the window's title): escaped, `\x1b]0;TITLE\x07`
    let shown: String = v[v.len().saturating_sub(lines)..]
        .join("\n")
        .chars()
        .map(|c| match c {
            '\n' | '\t' => c.to_string(),
            c if c.is_control() => format!("\\x{:02x}", c as u32),
            c => c.to_string(),
        })
        .collect();
    crate::util::secret::mask_known(&shown)
}

/// An event with what a step printed of a secret masked in its text fields (a reason quoting a
/// cell or a log, a headline, a note): the journal, the manifest and the terminal get it so.
fn masked(ev: RunEvent) -> RunEvent {
    if !crate::util::secret::any() {
        return ev;
    }
    let mut v = ev.to_value();
    let before = v.clone();
    // the text fields that repeat what a step printed (a reason quoting a cell or a log tail,
    // the headline, notes): never a name, a path or a command, which a short secret would break
    if let Some(o) = v.as_object_mut() {
        for k in ["reason", "cause", "headline", "noise", "noise_of", "note"] {
            if let Some(x) = o.get_mut(k) {
                crate::util::secret::mask_value(x);
            }
        }
    }
    if v == before {
        ev
    } else {
        RunEvent::from_value(v)
    }
}

/// What a step prints of a secret is masked wherever expr repeats it: the experiment's secrets
/// and the secret-named variables of every step.
fn register_secrets_of(exp: &Experiment, plan: &Plan) {
    crate::util::secret::register_secrets(exp.secret_values());
    crate::util::secret::register_secrets(
        plan.setup
            .iter()
            .chain(plan.points.iter().flat_map(|p| p.steps.iter()))
            .flat_map(|s| s.env.iter())
            .filter(|(k, _)| crate::util::secret::is_secret(k))
            .map(|(_, v)| v.as_str()),
    );
}

/// An array task's journal fragment, inside the result directory the submitting run made.
fn open_task_journal(dir: &Path, fragment: &Path) -> Result<Journal, String> {
    if !dir.join("journal.jsonl").is_file() {
        return Err(format!(
            "{} has no journal.jsonl: an array task runs inside a result directory `expr run` made",
            dir.display()
        ));
    }
    if let Some(parent) = fragment.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    Journal::open(fragment).map_err(|e| format!("cannot open {}: {e}", fragment.display()))
}

/// Anything in `dir` but a lock file left by a run killed before it wrote.
fn has_entries(dir: &Path) -> bool {
    dir.exists()
        && std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name() != crate::exec::lock::LOCK_FILE)
            })
            .unwrap_or(false)
}

/// Refuse an existing directory (`exists`: it has entries) without --resume or --force, one not
/// expr's with --force, and a --resume without a journal.
fn refuse_to_overwrite(dir: &Path, opts: &Options, exists: bool) -> Result<(), String> {
    // another run's directory holds what that run wrote, not a run of its own (its report and
    // `expr stop` would read this one's files as theirs)
    if let Some(around) = inside_result_dir(dir) {
        return Err(format!(
            "{} is inside the result directory {}: a run's directory holds only what its run wrote; choose an `--output` outside it",
            dir.display(),
            around.display()
        ));
    }
    if exists && !opts.resume && !opts.force {
        let q = crate::util::shell::quote(&dir.display().to_string());
        // advice that works: --resume and --force are for expr's own result directories
        return Err(if is_result_dir(dir) {
            format!(
                "{} already exists; nothing in it is overwritten: use `--resume {q}` to continue it, `--force` to write into it, or `--output` for a new directory",
                dir.display()
            )
        } else {
            format!(
                "{} is not empty and is not a result directory of expr's; nothing in it is overwritten: choose an `--output` that does not exist yet (or an empty directory)",
                dir.display()
            )
        });
    }
    // --force writes into an existing result directory of expr's (its journal says so) or an
    // empty one: never over files expr did not write.
    if exists && opts.force && !opts.resume && !is_result_dir(dir) {
        return Err(format!(
            "{} is not empty and is not an expr result directory (no journal.jsonl with a header); --force only writes into expr's own result directories: choose another `--output`",
            dir.display()
        ));
    }
    if opts.resume && !dir.join("journal.jsonl").exists() {
        return Err(format!(
            "{} has no journal.jsonl to resume from",
            dir.display()
        ));
    }
    Ok(())
}

/// A resume starts where the run did: its relative paths (`repo "."`, the output, the history
/// database) are that directory's, and elsewhere every point would run again against another
/// checkout (a directory that is gone cannot be gone back to: then the resume runs here).
fn resume_where_it_ran(dir: &Path) -> Result<(), String> {
    let started_in = journal::events(&dir.join("journal.jsonl"))
        .into_iter()
        .rev()
        .find_map(|e| match e {
            RunEvent::Header(h) => h.cwd,
            _ => None,
        });
    let same = |a: &str| {
        let here = std::env::current_dir().and_then(|d| d.canonicalize());
        let there = Path::new(a).canonicalize();
        matches!((here, there), (Ok(h), Ok(t)) if h == t)
    };
    if let Some(c) = started_in.filter(|c| Path::new(c).is_dir() && !same(c)) {
        return Err(format!(
            "{} was run from {c}: a resume runs there too (its relative paths, such as `repo \".\"` and the output, are that directory's): `cd {}` and resume again",
            dir.display(),
            crate::util::shell::quote(&c)
        ));
    }
    Ok(())
}

/// A resume writes into the directory's own files and folders (the journal, the manifest,
/// logs/, outputs/, runtime/, the reports): a symbolic link among them would take its writes
/// outside the result directory. Refused, named with where it points.
pub(crate) fn refuse_links(dir: &Path) -> Result<(), String> {
    let mut places = vec![dir.to_path_buf()];
    places.extend(["logs", "outputs", "runtime"].map(|s| dir.join(s)));
    for place in places {
        let Ok(entries) = std::fs::read_dir(&place) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_symlink()) {
                let to = std::fs::read_link(e.path())
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into());
                return Err(format!(
                    "{} is a symbolic link (to {to}): a resume would write through it, outside the result directory; put the file or folder itself there, or run into a new directory",
                    e.path().display()
                ));
            }
        }
    }
    Ok(())
}

/// A killed run may have left servers (or a Slurm array) behind: stop the groups and jobs it
/// started (and only those that are still its own) before anything binds their ports or
/// writes into the directory again.
fn stop_what_was_left(dir: &Path, exp: &Experiment) {
    // this run's own jobs carry the directory's comment too: allocated before this, they stay
    let ours: Vec<String> = exp
        .hosts
        .iter()
        .filter_map(|h| h.place.as_ref()?.job.clone())
        .collect();
    match crate::exec::stop::stop_keeping(dir, &ours) {
        Ok((lines, _)) => {
            for l in lines {
                let _ = writeln!(std::io::stderr(), "resume: {l} (left by an earlier run)");
            }
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "resume: {e}");
        }
    }
}

/// The manifest rows of the run being resumed. The earlier run may have named the directory
/// otherwise (absolute, relative): its rows' paths take this run's spelling, so the manifest
/// names it one way.
fn resumed_rows(dir: &Path, plan: &Plan) -> Vec<manifest::Row> {
    let mut rows = manifest::read(&dir.join("manifest.csv"));
    let earlier: Vec<String> = journal::events(&dir.join("journal.jsonl"))
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::Header(h) => h.output,
            _ => None,
        })
        .collect();
    for r in rows.iter_mut() {
        let cols = r.cols.iter_mut().map(|(_, v)| v);
        for f in std::iter::once(&mut r.log_path).chain(cols) {
            if let Some(rest) = earlier
                .iter()
                .filter(|o| o.as_str() != plan.output)
                .find_map(|o| f.strip_prefix(&format!("{o}/")))
            {
                *f = format!("{}/{rest}", plan.output);
            }
        }
    }
    rows
}

impl<'a> Runner<'a> {
    /// Prepare the result directory. Refuses to touch an existing one without --resume/--force.
    pub fn new(exp: &'a Experiment, plan: &'a Plan, opts: Options) -> Result<Self, String> {
        register_secrets_of(exp, plan);
        let dir = PathBuf::from(&plan.output);
        if let Some(fragment) = &opts.task_journal {
            // an array task writes into the run's directory, which the submitting run made
            let journal = open_task_journal(&dir, fragment)?;
            return Ok(Self::fresh(
                exp,
                plan,
                opts,
                dir,
                journal,
                Vec::new(),
                false,
                None,
            ));
        }
        if dir.exists() && !dir.is_dir() {
            return Err(format!(
                "{} exists and is not a directory; expr writes only into a result directory of its own",
                dir.display()
            ));
        }
        // a directory expr has locked before: who holds it is the first thing to say
        let what = if opts.resume { "resume" } else { "run" };
        let early = if dir.join(crate::exec::lock::LOCK_FILE).is_file() {
            Some(crate::exec::lock::lock(&dir, what)?)
        } else {
            None
        };
        if let Some(said) = recover_forced(&dir) {
            let _ = writeln!(std::io::stderr(), "{said}");
        }
        let exists = has_entries(&dir);
        refuse_to_overwrite(&dir, &opts, exists)?;
        if opts.resume {
            resume_where_it_ran(&dir)?;
            refuse_links(&dir)?;
        }
        // one expr per result directory, from here on: a second run, --resume, report or
        // stop gets an error naming this process
        let created = !dir.exists();
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let lock = match early {
            Some(l) => l,
            None => crate::exec::lock::lock(&dir, what)?,
        };
        // a run that finished between the checks above and the lock: its directory is not ours
        if has_entries(&dir) && !exists && !opts.resume && !opts.force {
            return Err(format!(
                "{} was written by another expr meanwhile; nothing in it is overwritten: use `--output` for a new directory",
                dir.display()
            ));
        }
        if opts.resume || (opts.force && is_result_dir(&dir)) {
            stop_what_was_left(&dir, exp);
        }
        // --force starts the directory afresh: the earlier run's journal, manifest, reports,
        // logs and outputs go (expr's own files only; anything else in it stays), so the
        // directory never mixes two runs — set aside until something runs, so a failed
        // preflight leaves them as they were
        let forced = if opts.force && !opts.resume && exists {
            Some(set_aside(&dir)?)
        } else {
            None
        };
        if exp.hosts.iter().any(|h| h.place.is_some()) {
            let _ = std::fs::create_dir_all(dir.join(crate::exec::backend::STEP_IDS));
        }
        for sub in ["logs", "outputs", "runtime"] {
            std::fs::create_dir_all(dir.join(sub))
                .map_err(|e| format!("cannot create {}: {e}", dir.join(sub).display()))?;
        }
        let journal = Journal::open(&dir.join("journal.jsonl"))
            .map_err(|e| format!("cannot open the journal: {e}"))?;
        let rows = if opts.resume {
            resumed_rows(&dir, plan)
        } else {
            Vec::new()
        };
        let mut runner = Self::fresh(exp, plan, opts, dir, journal, rows, created, Some(lock));
        runner.forced = forced;
        Ok(runner)
    }

    /// A runner with nothing done yet: the state every run starts from.
    #[allow(clippy::too_many_arguments)]
    fn fresh(
        exp: &'a Experiment,
        plan: &'a Plan,
        opts: Options,
        dir: PathBuf,
        journal: Journal,
        rows: Vec<manifest::Row>,
        created: bool,
        lock: Option<crate::exec::lock::DirLock>,
    ) -> Self {
        let off = opts.task_journal.is_some();
        let began_empty = (!opts.resume
            && std::fs::read_dir(dir.join("logs")).is_ok_and(|mut d| d.next().is_none()))
        .then(Default::default);
        Runner {
            rec: Recorder {
                exp,
                plan,
                progress: Progress::new(plan.points.len() as u64, opts.verbose, opts.quiet),
                dir,
                ssh: Ssh::new(control_dir()),
                journal,
                manifest: crate::exec::state::consumers::Manifest::new(
                    PathBuf::from(&plan.output).join("manifest.csv"),
                    rows,
                    off,
                ),
                survivors: Vec::new(),
                began_empty,
                adopting: None,
                tails: HashMap::new(),
                running: BTreeMap::new(),
                mark: match &opts.run_mark {
                    Some(run) => format!("{run}/{}", new_mark()),
                    None => new_mark(),
                },
                write_errors: Vec::new(),
                since: None,
                known_flags: BTreeMap::new(),
                layouts: BTreeMap::new(),
                left_out: BTreeMap::new(),
                verbose: opts.verbose,
                grace_s: opts.grace,
                points_of: opts.points_of.unwrap_or(plan.points.len()),
                forced: None,
            },
            opts,
            shell_overhead: HashMap::new(),
            created,
            forced: None,
            _lock: lock,
            noise: Default::default(),
        }
    }
}

impl<'a> Recorder<'a> {
    /// Stop the processes marked with `prefix` on these hosts that outlived their groups (a
    /// `setsid`, a double fork), say so, and count what survives even KILL; then reap what the
    /// run adopted that has ended ([`crate::exec::backend::escape`]).
    pub(super) fn sweep_escaped(&mut self, hosts: &[String], prefix: &str, what: &str) {
        // the start of the first step spawned here since the last sweep bounds the scan
        let since = self.since.take().unwrap_or(0);
        for h in hosts {
            let host = self.host(h);
            match crate::exec::backend::escape::sweep(
                &self.ssh,
                host,
                prefix,
                self.grace(),
                None,
                since,
            ) {
                Ok((stopped, left)) => self.escaped(h, what, &stopped, &left, ""),
                Err(e) => self.progress.line(&format!(
                    "warning: cannot look for processes {what} left on `{h}`: {e}"
                )),
            }
        }
        // what the steps left without their marker (`env -i setsid`, `sudo`), adopted: stopped
        // now, not as the run ends (a server holding its port failed every later point)
        // (not what expr had as it started: a job of the script that exec'd it)
        if let Some(from) = self.adopting {
            let (stopped, left) =
                crate::exec::backend::escape::sweep_adopted(since.max(from), self.grace());
            let here = self.here();
            self.escaped(&here, what, &stopped, &left, " and without its marker");
        }
        crate::exec::backend::escape::reap_adopted();
    }

    /// The name of this machine among the hosts (`this machine` where none runs here).
    fn here(&self) -> String {
        self.plan
            .hosts
            .iter()
            .find(|h| h.runs_here())
            .map_or("this machine".to_string(), |h| h.name.clone())
    }

    /// Stop what the run left on this machine that neither its process groups nor its marker
    /// find (it cleared its environment) and that lost its parent, so the run adopted it
    /// (started at `since`, clock ticks after boot, or later).
    pub(crate) fn sweep_adopted(&mut self, since: u64) {
        self.sweep_adopted_of(since, "the run");
    }

    /// The same, for what `what` (a point, the points that ran at once) left.
    pub(crate) fn sweep_adopted_of(&mut self, since: u64, what: &str) {
        let (stopped, left) = crate::exec::backend::escape::sweep_adopted(since, self.grace());
        let here = self.here();
        self.escaped(&here, what, &stopped, &left, " and without its marker");
        crate::exec::backend::escape::reap_adopted();
    }

    /// Say what a sweep stopped on `h` (in the journal too) and count what is still alive.
    fn escaped(
        &mut self,
        h: &str,
        what: &str,
        stopped: &[crate::exec::backend::escape::Found],
        left: &[crate::exec::backend::escape::Found],
        how: &str,
    ) {
        if !stopped.is_empty() {
            self.progress.line(&format!(
                "warning: {what} left {} process(es) on `{h}` outside its process groups{how}; stopped: {}",
                stopped.len(),
                crate::exec::backend::escape::describe(stopped)
            ));
            self.journal.emit(&RunEvent::Escaped(event::Escaped {
                host: h.to_string(),
                what: what.to_string(),
                stopped: stopped
                    .iter()
                    .map(|(p, c)| event::EscapedProcess {
                        pid: i64::from(*p),
                        cmd: crate::util::secret::mask_known(c),
                    })
                    .collect(),
            }));
        }
        if !left.is_empty() {
            self.survivors.push(format!(
                "{} on {h} (left by {what}, alive after KILL)",
                crate::exec::backend::escape::describe(left)
            ));
        }
    }

    /// The step with the optional flags its checkout's program takes (asked at preflight), or
    /// `None` when it has none to add.
    pub(super) fn with_optional_flags(&self, s: &Step) -> Option<Step> {
        if s.extra().optional.is_empty() {
            return None;
        }
        let known = self.known_flags.get(&s.id)?;
        let mut t = s.clone();
        for (flag, value) in &s.extra().optional {
            if known.contains(flag) {
                t.argv.push(flag.clone());
                t.argv.push(value.clone());
            }
        }
        Some(t)
    }

    pub(super) fn host(&self, name: &str) -> &'a Host {
        let exp: &'a Experiment = self.exp;
        exp.host(name).unwrap_or(&exp.hosts[0])
    }

    pub(super) fn log_path(&self, s: &Step) -> PathBuf {
        self.dir
            .join("logs")
            .join(format!("{}-{}.log", s.id, s.host))
    }

    /// How many points the progress lines count.
    pub(super) fn points_of(&self) -> usize {
        self.points_of
    }

    /// What the consumers of the run's events look up.
    pub(super) fn cx(&self) -> crate::exec::state::consumers::Cx<'a> {
        crate::exec::state::consumers::Cx {
            exp: self.exp,
            plan: self.plan,
            points_of: self.points_of(),
        }
    }

    /// An event of the run, to each of its consumers: the journal, the manifest, the terminal.
    pub(super) fn publish(&mut self, ev: RunEvent) {
        use crate::exec::state::consumers::Consumer;
        let ev = masked(ev);
        self.measured(&ev);
        let cx = self.cx();
        self.journal.consume(&ev, &cx);
        self.manifest.consume(&ev, &cx);
        self.progress.consume(&ev, &cx);
    }

    /// An event an array task wrote, merged: appended to the journal as the task wrote it (its
    /// own time), and to the other consumers as typed.
    pub(super) fn publish_merged(&mut self, raw: serde_json::Value) {
        use crate::exec::state::consumers::Consumer;
        self.journal.append(&raw);
        let ev = masked(RunEvent::from_value(raw));
        self.measured(&ev);
        let cx = self.cx();
        self.manifest.consume(&ev, &cx);
        self.progress.consume(&ev, &cx);
    }

    /// A point of this run ended ok: what `--force` set aside is replaced for good.
    fn measured(&mut self, ev: &RunEvent) {
        if let (RunEvent::Point(p), Some(_)) = (ev, &self.forced) {
            if p.status.as_deref() == Some("ok") {
                if let Some(aside) = self.forced.take() {
                    let _ = std::fs::remove_dir_all(aside);
                    self.progress.line(
                        "--force: a point of this run measured: the earlier run's files (journal, manifest, reports, charts, logs/, outputs/, runtime/) are removed; other files at the directory's top stay",
                    );
                }
            }
        }
    }

    /// The end of a `--force` run no point of which ended ok: the earlier results come back,
    /// and this run's files go to `runtime/unmeasured-<time>/` among them. Said; whether they
    /// came back.
    pub(super) fn keep_earlier(&mut self) -> bool {
        let Some(aside) = self.forced.take() else {
            return false;
        };
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
        let rel = Path::new("runtime").join(format!("unmeasured-{stamp}"));
        let back = keep_earlier(&self.dir, &aside, &rel);
        let line = match &back {
            Ok(()) => format!(
                "--force: this run measured nothing: the earlier results in {} are as they were; this run's files are in {}",
                self.dir.display(),
                self.dir.join(&rel).display()
            ),
            Err(e) => format!(
                "--force: this run measured nothing; error: {e}: the earlier results are in {}",
                aside.display()
            ),
        };
        self.progress.line(&line);
        back.is_ok()
    }

    /// A point a resumed run keeps: counted (and said when `say`), and its row made again
    /// from the journal's event when a manifest cut short by a kill lacks it.
    pub(super) fn keep(&mut self, earlier: &Earlier, p: &PlanPoint, say: bool) {
        if say {
            self.progress.line(&format!(
                "{}: skipped, succeeded before with the same command and code",
                p.run_id
            ));
        }
        if !self.manifest.is_ok(&p.run_id) {
            self.replay(earlier, p);
        }
        self.progress.inc();
    }

    /// A point an earlier run of this directory recorded, to the manifest again (its manifest,
    /// cut short by a kill, lacks the row; the journal has the event): no new event, no line.
    pub(super) fn replay(&mut self, earlier: &Earlier, p: &PlanPoint) {
        use crate::exec::state::consumers::Consumer;
        let mut ev = earlier.event.clone();
        // the log as this run spells the directory (the earlier run may have named it
        // otherwise: absolute, relative), as every other row does
        let log = self.launch_log(p);
        ev.log = (!log.is_empty()).then_some(log);
        let cx = self.cx();
        self.manifest.consume(&RunEvent::Point(ev), &cx);
    }

    /// manifest.csv, where a write was put off and its time has come.
    pub(in crate::exec) fn manifest_if_due(&mut self) {
        let cx = self.cx();
        self.manifest.write_if_due(&cx);
    }

    /// Write manifest.csv in full now.
    pub(super) fn write_manifest(&mut self) {
        let cx = self.cx();
        self.manifest.write(&cx);
    }

    /// The log of a point's first launch step (the manifest's `log`), empty when it has none.
    pub(super) fn launch_log(&self, p: &PlanPoint) -> String {
        let launch = p
            .steps
            .iter()
            .find(|s| s.phase == Phase::Launch)
            .map(|s| self.log_path(s));
        // a point whose clients never started (its server was not ready): the log of the last
        // of its steps that wrote one, which says why
        match launch {
            Some(l) if !l.exists() => p
                .steps
                .iter()
                .filter(|s| s.phase != Phase::Teardown)
                .map(|s| self.log_path(s))
                .rfind(|l| l.is_file())
                .unwrap_or(l),
            other => other.unwrap_or_default(),
        }
        .display()
        .to_string()
    }

    /// A step srun ran to exit 0 that Slurm had killed (srun exits 0 after a node failure):
    /// the line of its log that says so.
    pub(super) fn killed_by_slurm(&self, s: &Step) -> Option<String> {
        let place = self.host(&s.host).place.as_ref()?;
        if place.here {
            return None;
        }
        let job = place.job.as_deref()?;
        crate::exec::slurm::killed_by_slurm(&self.log_path(s), job)
    }

    pub(super) fn used_hosts(&self) -> Vec<&'a Host> {
        let mut names: Vec<&str> = Vec::new();
        for s in self
            .plan
            .setup
            .iter()
            .chain(self.plan.points.iter().flat_map(|p| p.steps.iter()))
        {
            if !names.contains(&s.host.as_str()) {
                names.push(&s.host);
            }
        }
        names.into_iter().map(|n| self.host(n)).collect()
    }

    /// The Slurm jobs the run's hosts are on.
    pub(super) fn slurm_jobs(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .exp
            .hosts
            .iter()
            .filter_map(|h| h.place.as_ref().and_then(|p| p.job.clone()))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    pub(super) fn interrupted(&self) -> Option<Stop> {
        match signals::count() {
            0 => None,
            1 => Some(Stop::Interrupted),
            _ => Some(Stop::Killed),
        }
    }

    /// Run one step to completion (build, test, collect). Returns (status, exit code).
    pub(super) fn run_sync(&mut self, s: &Step, run_id: Option<&str>) -> (String, i32) {
        let collect;
        let s = if s.phase == Phase::Collect {
            collect = self.local_collect(s);
            &collect
        } else {
            s
        };
        let host = self.host(&s.host);
        let log = self.log_path(s);
        let started = Instant::now();
        let mut p = match self.spawn_recorded(s, run_id) {
            Ok(p) => p,
            Err(e) => {
                let _ = std::fs::write(&log, &e);
                // not "failed" with -1: that reads as signal 1 (SIGHUP)
                let st = crate::results::reason::NOT_STARTED;
                self.step_event(s, run_id, st, -1, &log, started, None);
                return (st.into(), -1);
            }
        };
        let end = started
            .checked_add(Duration::from_secs(s.timeout_s.max(1) as u64))
            .unwrap_or_else(|| host::deadline(Duration::MAX));
        let (status, code) = loop {
            let seen = host::exits_seen();
            if let Some(c) = p.try_exit() {
                let accepted = s.exit_is_ok(c, host.runs_here());
                let killed = accepted && {
                    self.pump(&s.host, &s.id, &log, true);
                    self.killed_by_slurm(s).is_some()
                };
                break (if accepted && !killed { "ok" } else { "failed" }, c);
            }
            p.poll_remote_pgid();
            if self.interrupted().is_some() {
                crate::exec::backend::stop(&self.ssh, host, &mut p, self.grace());
                // the code the run exits with: 130, or 129 for a hang-up, 131 for SIGQUIT
                break ("interrupted", crate::exec::signals::exit_code());
            }
            if Instant::now() > end {
                crate::exec::backend::stop(&self.ssh, host, &mut p, self.grace());
                break ("timeout", -1);
            }
            self.pump(&s.host, &s.id, &log, false);
            host::wait_exits(seen, WAKE);
        };
        self.pump(&s.host, &s.id, &log, true);
        // the step ended, but what it started in its group (`sleep 300 &`) runs on: stopped
        // by its group now (TERM, the grace, KILL), and a survivor only if KILL leaves it
        if !crate::exec::backend::alive_after(&self.ssh, host, &mut p) {
            let gone = crate::exec::backend::stop(&self.ssh, host, &mut p, self.grace());
            self.progress.line(&format!(
                "note: {} `{}` on `{}` ended and left processes in its group: {}",
                s.phase.name(),
                s.id,
                s.host,
                if gone { "stopped" } else { "alive after KILL" }
            ));
            if !gone {
                self.survivors.push(format!("{} on {}", s.id, s.host));
            }
        }
        let exit = p.reaper.get();
        self.step_event(s, run_id, status, code, &log, p.started, exit);
        (status.into(), code)
    }

    /// --verbose: print the new lines of a step's log, prefixed by host and step (`flush` also
    /// prints a last line without its newline).
    pub(super) fn pump(&mut self, host: &str, step: &str, log: &Path, flush: bool) {
        if !self.verbose {
            return;
        }
        // only what is new since the last look, at most 8 MiB at a time (the log is read
        // once, not again at every look), printed as one block
        const AT_ONCE: u64 = 8 << 20;
        let from = *self.tails.get(log).unwrap_or(&0);
        let mut chunk = Vec::new();
        {
            use std::io::{Read, Seek, SeekFrom};
            let Ok(mut f) = std::fs::File::open(log) else {
                return;
            };
            if f.seek(SeekFrom::Start(from)).is_err()
                || f.take(AT_ONCE).read_to_end(&mut chunk).is_err()
            {
                return;
            }
        }
        if chunk.is_empty() {
            return;
        }
        let upto = if flush && (chunk.len() as u64) < AT_ONCE {
            chunk.len()
        } else {
            chunk
                .iter()
                .rposition(|b| *b == b'\n')
                .map(|i| i + 1)
                .unwrap_or(if chunk.len() as u64 >= AT_ONCE {
                    chunk.len()
                } else {
                    0
                })
        };
        let mut block = String::new();
        for line in String::from_utf8_lossy(&chunk[..upto]).lines() {
            if !line.starts_with("EXPR_PGID=") {
                if !block.is_empty() {
                    block.push('\n');
                }
                // what the step printed of a secret is not repeated on the terminal
                block.push_str(&format!(
                    "[{host}/{step}] {}",
                    crate::util::secret::mask_known(line)
                ));
            }
        }
        if !block.is_empty() {
            self.progress.line(&block);
        }
        self.tails.insert(log.to_path_buf(), from + upto as u64);
        // a flush reads on until the end
        if flush && chunk.len() as u64 >= AT_ONCE {
            self.pump(host, step, log, true);
        }
    }

    /// Collect steps pull from the host they name but run here; an rsync from a remote host uses
    /// the same ssh options (port, multiplexed connection, EXPR_SSH_CONFIG) as every other call.
    /// The log keeps the remote host's name.
    pub(super) fn local_collect(&self, s: &Step) -> Step {
        let from = self.host(&s.host);
        let mut c = s.clone();
        c.host = "local".into();
        c.cwd = ".".into();
        c.id = format!("{}-{}", s.id, s.host);
        if !from.is_local() && c.argv.first().is_some_and(|a| a == "rsync") && c.argv.len() >= 2 {
            let n = c.argv.len();
            let (src, dest) = (c.argv[n - 2].clone(), c.argv[n - 1].clone());
            let ssh = format!("ssh {}", crate::util::shell::join(&self.ssh.options(from)));
            c.argv = vec!["rsync".into(), "-a".into(), "-e".into(), ssh, src, dest];
        }
        c
    }

    /// TERM → KILL grace; none once a second signal asked to kill at once.
    pub(super) fn grace(&self) -> Duration {
        if signals::count() >= 2 {
            Duration::ZERO
        } else {
            Duration::from_secs(self.grace_s.max(1))
        }
    }

    /// Start a step and record its process groups in the journal before going on, so that
    /// `expr stop` can find them even if expr is killed a moment later.
    pub(super) fn spawn_recorded(
        &mut self,
        s: &Step,
        run_id: Option<&str>,
    ) -> Result<Proc, String> {
        self.spawn_step(s, run_id, false)
    }

    /// Whether a measured step's process record waits for [`RECORD_AFTER`] (see
    /// [`Runner::spawn_step`]): a foreground step whose processes start on this machine.
    pub(super) fn defers_record(&self, s: &Step) -> bool {
        !s.background && self.host(&s.host).runs_here()
    }

    /// Start a step; unless `defer` (and [`Runner::defers_record`]), record it at once as
    /// `spawn_recorded` does. A deferred record is the caller's to write with
    /// [`Runner::record_started`] once the step has run [`RECORD_AFTER`] or ended: a child of
    /// a spawn starts on its parent's CPU, and the record (a read of `/proc`, a journal write)
    /// made while it starts took ~0.15 ms from a 20 ms step's wall time here. Until then
    /// the run's mark, which every process of the step carries, is what `expr stop` finds
    /// them by.
    pub(super) fn spawn_step(
        &mut self,
        s: &Step,
        run_id: Option<&str>,
        defer: bool,
    ) -> Result<Proc, String> {
        let original = s;
        // optional flags the checkout's program does not take (preflight) are left out
        let adjusted;
        let s = match self.left_out.get(&s.id) {
            Some(out) => {
                let mut c = s.clone();
                c.argv.retain(|a| !out.contains(a));
                adjusted = c;
                &adjusted
            }
            None => s,
        };
        let adjusted2 = self.with_optional_flags(s);
        let s = adjusted2.as_ref().unwrap_or(s);

        let host = self.host(&s.host);
        if host.place.as_ref().is_some_and(|p| !p.here) {
            // the step writes its id as it starts; one from an earlier run must not stand in
            let _ = std::fs::remove_file(
                self.dir
                    .join(crate::exec::backend::STEP_IDS)
                    .join(format!("{}-{}", s.id, s.host)),
            );
        }
        let (public, secrets) = (s.exec_line_public(), s.secret_env());
        // what the point starts here starts from now on (for the escape sweep)
        if host.runs_here() {
            let now = crate::exec::backend::escape::boot_ticks();
            self.since = Some(self.since.map_or(now, |t| t.min(now)));
        }
        let mut p = crate::exec::backend::spawn(
            &self.ssh,
            host,
            &s.id,
            &s.cwd,
            &s.exec_line(),
            &self.log_path(s),
            crate::exec::backend::Launch {
                direct: s.direct.then_some((&s.argv[..], &s.env[..])),
                // the mark its processes keep even when they leave the group
                mark: Some(&crate::exec::backend::escape::marker(&self.mark, run_id)),
                secrets: (!secrets.is_empty()).then_some((&public, &secrets[..])),
            },
        )?;
        if !host.is_local() {
            // the wrapper's first line names the remote group; an ssh that exits wakes this
            let end = Instant::now() + Duration::from_secs(10);
            loop {
                let seen = host::exits_seen();
                if p.poll_remote_pgid().is_some() || p.try_exit().is_some() || Instant::now() >= end
                {
                    break;
                }
                host::wait_exits(seen, Duration::from_millis(5));
            }
        }
        if !defer || !self.defers_record(original) {
            self.record_started(original, run_id, &p);
        }
        Ok(p)
    }

    /// The journal's record of a started step and the progress line's: written by
    /// `spawn_recorded` at once, or by the caller of a deferred `spawn_step`.
    pub(super) fn record_started(&mut self, s: &Step, run_id: Option<&str>, p: &Proc) {
        let host = self.host(&s.host);
        self.journal.emit(&process_event(
            run_id,
            &s.id,
            host,
            p,
            s.extra().scratch.clone(),
        ));
        if !s.background {
            self.running.insert(s.host.clone(), s.id.clone());
            self.show_running();
        }
    }

    /// Whether `wait4` of a step on `host` measured the step itself (a process of this machine,
    /// or one the host's agent reaped), not an `ssh` or `srun` client.
    pub(super) fn measured_there(&self, host: &str) -> bool {
        let h = self.host(host);
        h.runs_here() || (!h.is_local() && self.ssh.agent(h).is_some())
    }

    /// The progress line: the step running on each host.
    pub(super) fn show_running(&self) {
        let text: Vec<String> = self
            .running
            .iter()
            .map(|(h, s)| format!("[{h}] {s}"))
            .collect();
        self.progress.status(&text.join("  "));
    }

    /// A step's journal event; with its reaped exit, the exact wall time from spawn to exit and
    /// the CPU time and peak RSS `wait4` reported.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn step_event(
        &mut self,
        s: &Step,
        run_id: Option<&str>,
        status: &str,
        code: i32,
        log: &Path,
        started: Instant,
        exit: Option<host::Exit>,
    ) {
        let mut e = event::Step {
            run_id: Some(run_id.map(str::to_string)),
            step: s.id.clone(),
            host: s.host.clone(),
            phase: Some(s.phase.name().to_string()),
            command: Some(s.command_line()),
            cwd: Some(crate::util::secret::mask_known(&s.cwd)),
            status: Some(status.to_string()),
            exit_code: Some(i64::from(code)),
            log: Some(log.display().to_string()),
            elapsed_s: Some(started.elapsed().as_secs_f64()),
            ..Default::default()
        };
        if let Some(x) = exit {
            let t = timing_json(
                x.at.saturating_duration_since(started),
                x.user,
                x.sys,
                (x.max_rss_kib, x.rss_floor_kib),
                self.measured_there(&s.host),
            );
            e.elapsed_s = Some(x.at.saturating_duration_since(started).as_secs_f64());
            e.timing = Some(t);
        }
        // a Slurm step wrote its id (`JOB.STEP`) as it started
        let h = self.host(&s.host);
        if h.place.as_ref().is_some_and(|p| !p.here) {
            let f = self
                .dir
                .join(crate::exec::backend::STEP_IDS)
                .join(format!("{}-{}", s.id, s.host));
            if let Ok(id) = std::fs::read_to_string(&f) {
                let id = id.trim();
                if !id.is_empty() && id.len() < 64 {
                    e.slurm_step = Some(id.to_string());
                }
            }
        }
        self.journal.emit(&RunEvent::Step(e));
        if self.running.get(&s.host) == Some(&s.id) {
            self.running.remove(&s.host);
            self.show_running();
        }
        if self.verbose {
            self.progress.line(&format!(
                "[{}/{}] {}",
                s.host,
                s.id,
                crate::results::reason::ended_text(
                    crate::util::lang::Lang::En,
                    status,
                    i64::from(code)
                )
            ));
        }
    }
}

impl Runner<'_> {
    /// The journal of the run being resumed, as it is now (nothing without `--resume`).
    pub(super) fn resumed_events(&self) -> Vec<RunEvent> {
        if self.opts.resume {
            journal::events(&self.rec.dir.join(crate::results::JOURNAL))
        } else {
            Vec::new()
        }
    }

    /// An array task records where it runs (job, node, addresses).
    pub fn note_task(&mut self, mut placed: serde_json::Value) {
        if let Some(o) = placed.as_object_mut() {
            o.insert("event".into(), json!("task"));
        }
        self.rec.journal.emit(&RunEvent::from_value(placed));
    }
}

/// How long a measured step runs before its deferred process record is written (see
/// [`Runner::spawn_step`]); a calibration run that is still running then is recorded too.
pub(super) const RECORD_AFTER: Duration = Duration::from_millis(10);

/// The journal's record of a process group started (what `expr stop` finds): a step's, or a
/// calibration run's that is slow to end.
pub(super) fn process_event(
    run_id: Option<&str>,
    step: &str,
    host: &Host,
    p: &Proc,
    scratch: Vec<String>,
) -> RunEvent {
    RunEvent::Process(event::Process {
        run_id: run_id.map(str::to_string),
        step: step.to_string(),
        host: host.name.clone(),
        pgid: p.local_pgid(),
        start: p.local_pgid().and_then(host::start_time).filter(|_| {
            // read before the reaper saw an exit: still the leader's (a reaped pid may be
            // another program's by now; a record without a start time trusts only a group
            // whose leader is gone)
            p.reaper.get().is_none()
        }),
        boot: Some(host::boot_id()),
        remote_pgid: p.remote_pgid,
        remote_start: p.remote_start,
        remote: !host.is_local(),
        scratch,
    })
}

/// The longest a waiting loop sleeps without an exit: how late a signal or deadline is noticed.
pub(super) const WAKE: Duration = Duration::from_millis(50);

/// How often a server's readiness is probed (a TCP connect or a look at its log).
pub(super) const READY_PROBE: Duration = Duration::from_millis(5);

/// The timing of a step or point as the journal records it: milliseconds and MiB. CPU time and
/// RSS only when `here` (processes of this machine, or reaped by a host's agent): for a step
/// behind an ssh or srun client, `wait4` measured the client, not the command. The peak RSS
/// only where it is the command's ([`Exit::max_rss_kib`]); else what bounded it from below
/// (`max_rss_floor_mib`: the starter's memory, which `wait4` counts too).
///
/// [`Exit::max_rss_kib`]: crate::exec::backend::reaper::Exit::max_rss_kib
pub(super) fn timing_json(
    wall: Duration,
    user: Duration,
    sys: Duration,
    rss_kib: (Option<i64>, i64),
    here: bool,
) -> serde_json::Value {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mib = |k: i64| k as f64 / 1024.0;
    match (here, rss_kib) {
        (true, (Some(peak), _)) => {
            json!({ "wall_ms": ms(wall), "user_ms": ms(user), "sys_ms": ms(sys), "max_rss_mib": mib(peak) })
        }
        (true, (None, floor)) => {
            json!({ "wall_ms": ms(wall), "user_ms": ms(user), "sys_ms": ms(sys), "max_rss_floor_mib": mib(floor) })
        }
        (false, _) => json!({ "wall_ms": ms(wall) }),
    }
}

pub(super) fn connect(ip: &str, port: i64) -> bool {
    let Ok(mut addrs) = (ip, port as u16).to_socket_addrs() else {
        return false;
    };
    addrs.next().is_some_and(|a: SocketAddr| {
        TcpStream::connect_timeout(&a, Duration::from_millis(300)).is_ok()
    })
}

/// A point's last event in the journal of the run being resumed.
#[derive(Debug)]
pub(super) struct Earlier {
    pub status: String,
    pub hash: String,
    pub fingerprint: String,
    pub event: event::Point,
}

/// run id → the last point event among `events`.
pub(super) fn last_points(events: &[RunEvent]) -> HashMap<String, Earlier> {
    let mut m = HashMap::new();
    for e in events {
        if let RunEvent::Point(p) = e {
            if let Some(id) = p.run_id.clone() {
                let earlier = Earlier {
                    status: p.status.clone().unwrap_or_default(),
                    hash: p.command_hash.clone().unwrap_or_default(),
                    fingerprint: p.fingerprint.clone().unwrap_or_default(),
                    event: p.clone(),
                };
                m.insert(id, earlier);
            }
        }
    }
    m
}

#[cfg(test)]
mod tail_tests {
    /// A failed step's log tail as the terminal, the journal and the report get it: its last
    /// lines, a redrawn progress line as last drawn, a control sequence escaped (it set the
    /// terminal's title and colour), a tab kept.
    #[test]
    fn a_log_tail_drives_no_terminal() {
        let (_d, log) = crate::util::testutil::temp_path("x.log");
        std::fs::write(
            &log,
            "one\nEXPR_PGID=12 34\n 10%\r 50%\r100%\n\x1b]0;HACKED\x07\x1b[31mred\tend\n",
        )
        .unwrap();
        assert_eq!(
            super::tail(&log, 3),
            "one\n100%\n\\x1b]0;HACKED\\x07\\x1b[31mred\tend"
        );
    }
}
