//! `expr bisect`: start (or resume) a bisection, then loop — ask the search what is next,
//! measure it in a round, journal it — until the search says found, undecided or stopped.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::model::Experiment;
use crate::util::exit_codes;

use super::checkout::Checkouts;
use super::git;
use super::journal::{self, Event, Start};
use super::probe::{self, Ask, Got};
use super::report;
use super::search::{self, Action, State};
use super::setup;

/// What the command line asks (`expr bisect`'s arguments).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// The experiment file (KDL). With `--resume DIR` it is left out: the bisection's own is used.
    #[arg(required_unless_present = "resume")]
    pub file: Option<PathBuf>,
    /// A commit of the benchmarked checkout (the hosts' repo) where the metric is as it should be.
    /// Default: from the history, the git head of the newest run of this lane and point, at
    /// another commit than --bad's, whose samples are at the baseline (the oldest run's:
    /// Welch's 95 % interval of the difference holds 0).
    #[arg(long, value_name = "REV")]
    pub good: Option<String>,
    /// A later commit where the metric moved. Default: from the history, the git head of the
    /// newest ok run of this lane and point.
    #[arg(long, value_name = "REV")]
    pub bad: Option<String>,
    /// The metric whose step is bisected, as metrics.csv names it (e.g. `time_ms`).
    #[arg(long, value_name = "M", required_unless_present = "resume")]
    pub metric: Option<String>,
    /// The lane to measure (the same as `--only lane=L`).
    #[arg(long, value_name = "L")]
    pub lane: Option<String>,
    /// Narrow the matrix to one lane and sweep point: lane=…, bench=…, or AXIS=VALUE (repeatable).
    #[arg(long = "only", value_name = "KEY=VALUE")]
    pub only: Vec<String>,
    /// Override a value, as for `expr run` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The bisection directory (default results/bisect_<experiment>_<mmddHHMMSS>).
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    pub output: Option<String>,
    /// Print the candidate commits, the first midpoint and the plan of one probe; run nothing.
    #[arg(long, conflicts_with = "resume")]
    pub dry_run: bool,
    /// Continue a bisection directory after an interrupt, with what it was started with.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Stop (exit 3) once this many point runs, references included, were spent.
    #[arg(long, value_name = "N", conflicts_with = "resume")]
    pub max_runs: Option<usize>,
    /// A classic fixed-repeat bisection, for comparison: N runs of every commit, each called
    /// by the nearer reference mean, without intervals.
    #[arg(long = "fixed-repeat", value_name = "N", conflicts_with = "resume", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10000))]
    pub fixed: Option<usize>,
    /// The history database (default: $EXPR_HISTORY, else the project's results/.expr-history.sqlite).
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
}

/// Loads and validates an experiment with `--set` (its diagnostics printed), or the exit code.
pub type Load<'a> = &'a dyn Fn(&Path, &[String]) -> Result<Experiment, i32>;

fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn fail(e: &str) -> i32 {
    say(&format!("error: {e}"));
    exit_codes::INVALID
}

/// The whole command; its exit code.
pub fn bisect(args: &Args, load: Load) -> i32 {
    match &args.resume {
        Some(dir) => resume(dir, load),
        None => start(args, load),
    }
}

fn start(args: &Args, load: Load) -> i32 {
    let Some(file) = &args.file else {
        return fail("name the experiment file: `expr bisect FILE --metric M …`");
    };
    let Some(metric) = &args.metric else {
        return fail("`--metric M` is needed: the metric whose step is bisected (its name in metrics.csv, e.g. `time_ms`)");
    };
    let exp = match load(file, &args.set) {
        Ok(e) => e,
        Err(code) => return code,
    };
    let mut only = args.only.clone();
    if let Some(l) = &args.lane {
        only.push(format!("lane={l}"));
    }
    let dir = PathBuf::from(args.output.clone().unwrap_or_else(|| {
        format!(
            "results/bisect_{}_{}",
            exp.name,
            chrono::Local::now().format("%m%d%H%M%S")
        )
    }));
    if let Some(why) = crate::parse::validate::output_problem(&dir.display().to_string()) {
        return fail(&format!("{why} (--output `{}`)", dir.display()));
    }
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return fail(&format!(
            "{} is not empty; continue a bisection there with `expr bisect --resume {}`, or choose another `--output`",
            dir.display(),
            crate::util::shell::quote(&dir.display().to_string())
        ));
    }
    // the round's shape: one lane and point, and the checkout its hosts run in
    let probe_plan = match probe::plan_of(&exp, file, &only, &dir.join("runs").join("plan")) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let group = match setup::group(&probe_plan) {
        Ok(g) => g,
        Err(e) => return fail(&e),
    };
    // runs per round: the bench's `repeat` (its `min` when adaptive); the bound per commit:
    // its `max`, else ten rounds
    let (batch, max_per_commit) = match exp.benches.iter().find(|b| b.name == group.0) {
        Some(b) => match b.adaptive {
            Some(a) => (a.min.max(1) as usize, a.max.max(2) as usize),
            None => (b.repeat.max(1) as usize, b.repeat.max(1) as usize * 10),
        },
        None => (1, 10),
    };
    let co = match Checkouts::open(&exp, &probe_plan) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let top = co.primary();
    let db = crate::history::path(args.history.as_deref());
    let (good, bad) = match (&args.good, &args.bad) {
        (Some(g), Some(b)) => (g.clone(), b.clone()),
        (g, b) => match setup::from_history(&db, &exp.name, &group, metric) {
            Ok((hg, hb)) => {
                let (g, b) = (g.clone().unwrap_or(hg), b.clone().unwrap_or(hb));
                say(&format!("bisect: from the history: --good {g} --bad {b}"));
                (g, b)
            }
            Err(e) => return fail(&e),
        },
    };
    let (good, bad) = match (git::resolve(&top, &good), git::resolve(&top, &bad)) {
        (Ok(g), Ok(b)) => (g, b),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    // every host's checkout walks the same commits
    for sha in [&good, &bad] {
        if let Err(e) = co.have(sha) {
            return fail(&e);
        }
    }
    let mut commits = vec![good.clone()];
    match git::range(&top, &good, &bad) {
        Ok(r) if r.is_empty() => {
            return fail(&format!(
                "good and bad are the same commit ({}): nothing to bisect",
                git::short(&good)
            ))
        }
        Ok(r) => commits.extend(r),
        Err(e) => return fail(&e),
    }
    let st = Start {
        file: std::fs::canonicalize(file)
            .unwrap_or(file.clone())
            .display()
            .to_string(),
        experiment: exp.name.clone(),
        metric: metric.clone(),
        lane: args.lane.clone(),
        only,
        set: args.set.clone(),
        top: top.dir.to_string(),
        prefix: co.prefix().to_string(),
        commits,
        batch: args.fixed.unwrap_or(batch),
        max_per_commit: args.fixed.unwrap_or(max_per_commit),
        max_runs: args.max_runs,
        fixed: args.fixed,
        history: db.display().to_string(),
        started: chrono::Local::now().to_rfc3339(),
    };
    if args.dry_run {
        return dry_run(&st, &exp, &co, &dir, file);
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return fail(&format!("{}: {e}", dir.display()));
    }
    // one bisection at a time in a directory: held until this process ends
    let _lock = match lock(&dir) {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    if let Err(e) = journal::append(&dir, &Event::Start(st.clone())) {
        return fail(&e);
    }
    say(&format!(
        "bisect: {} candidate commits between good {} and bad {}; {} runs per round, at most {} per commit → {}",
        st.commits.len() - 2,
        git::short(&good),
        git::short(&bad),
        st.batch,
        st.max_per_commit,
        dir.display()
    ));
    run_loop(&st, &exp, &co, &dir)
}

/// The bisection directory's lock (`exec::lock`, as a run directory's): a second bisection
/// or `--resume` there is refused with the holder's pid and host; a holder that died left no
/// lock.
fn lock(dir: &Path) -> Result<crate::exec::lock::DirLock, String> {
    crate::exec::lock::lock(dir, "expr bisect").map_err(|e| {
        if e.contains("is in use by another expr") {
            format!("{e}; a bisection directory is written by one `expr bisect` at a time")
        } else {
            e
        }
    })
}

fn resume(dir: &Path, load: Load) -> i32 {
    if !dir.join(journal::FILE).is_file() {
        return fail(&format!(
            "{}: no such file (`--resume` takes the directory a bisection wrote)",
            dir.join(journal::FILE).display()
        ));
    }
    let _lock = match lock(dir) {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    let events = match journal::read(dir) {
        Ok(e) => e,
        Err(e) => return fail(&e),
    };
    let Some(Event::Start(st)) = events.first().cloned() else {
        return fail(&format!(
            "{}: the journal does not begin with the bisection's start",
            dir.join(journal::FILE).display()
        ));
    };
    let exp = match load(Path::new(&st.file), &st.set) {
        Ok(e) => e,
        Err(code) => return code,
    };
    let plan = match probe::plan_of(
        &exp,
        Path::new(&st.file),
        &st.only,
        &dir.join("runs").join("plan"),
    ) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let co = match Checkouts::open(&exp, &plan) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    if co.primary().dir != st.top {
        return fail(&format!(
            "the experiment now runs in {}{}, the bisection in {} walked {}",
            co.primary().dir,
            co.primary().on(),
            dir.display(),
            st.top
        ));
    }
    let s = State::of(&st, &events);
    say(&format!(
        "bisect: resuming {}: {} rounds and {} runs so far",
        dir.display(),
        s.rounds,
        s.runs
    ));
    run_loop(&st, &exp, &co, dir)
}

/// The candidate range, the first midpoint, and the plan of one probe there; writes nothing.
fn dry_run(st: &Start, exp: &Experiment, co: &Checkouts, dir: &Path, file: &Path) -> i32 {
    let top = co.primary();
    let n = st.commits.len();
    let mut o = format!(
        "# expr bisect --dry-run: `{}`, metric `{}`\n\ngood {} and bad {}, {} candidate commits between them (first-parent, oldest first):\n",
        st.experiment,
        st.metric,
        git::short(&st.commits[0]),
        git::short(&st.commits[n - 1]),
        n - 2
    );
    for (i, c) in st.commits.iter().enumerate() {
        let (subj, date) = git::describe(&top, c).unwrap_or_default();
        let tag = if i == 0 {
            " (good)"
        } else if i == n - 1 {
            " (bad)"
        } else {
            ""
        };
        o.push_str(&format!(
            "  {:>3}  {}  {date}  {subj}{tag}\n",
            i,
            git::short(c)
        ));
    }
    let s = State::of(st, &[]);
    let mid = s.midpoint().unwrap_or(n - 1);
    let worktrees: Vec<String> = co
        .trees
        .iter()
        .map(|t| {
            format!(
                "{}{}",
                co.worktree(t, &st.commits[mid]),
                co.repo(t, &t.top).on()
            )
        })
        .collect();
    o.push_str(&format!(
        "\nfirst it measures good and bad ({} runs per round), then probes {} — the commits after it depend on the results (about {} probes for {} candidates, plus skips).\nEach round's plan, at the first probe (worktree {}):\n\n",
        st.batch,
        git::short(&st.commits[mid]),
        ((n - 1) as f64).log2().ceil(),
        n - 2,
        worktrees.join(", ")
    ));
    let e = probe::at_commit(exp, &co.repos_at(&st.commits[mid]), st.batch);
    match probe::plan_of(
        &e,
        file,
        &st.only,
        &probe::round_dir(dir, 1, "probe", git::short(&st.commits[mid])),
    ) {
        Ok(p) => o.push_str(&crate::plan::render::text(&p)),
        Err(e) => return fail(&e),
    }
    let _ = std::io::stdout().write_all(o.as_bytes());
    exit_codes::OK
}

/// The rounds, with the experiment's Slurm allocations held for all of them: made before the
/// first (named and commented as a run's jobs, so `expr stop DIR` finds them), every host on
/// one placed on its node (its address known to the rounds' commands), given back after the
/// last. A bisection runs one point at a time: an array allocation is held as one allocation.
fn run_loop(st: &Start, exp: &Experiment, co: &Checkouts, dir: &Path) -> i32 {
    let mut exp = exp.clone();
    for a in &mut exp.allocations {
        a.array = false;
    }
    // a bisection that finished before only says its result again: nothing to allocate
    let finished = journal::read(dir)
        .ok()
        .is_some_and(|e| matches!(e.last(), Some(Event::End { .. })));
    let allocator = crate::exec::allocator::for_experiment(&exp, &dir.display().to_string());
    let Some(mut al) = allocator.filter(|_| !finished) else {
        return run_rounds(st, &exp, co, dir);
    };
    // what a killed bisection of this directory left (it holds the directory's lock now)
    let mine = crate::exec::slurm::comment(&dir.display().to_string());
    for (id, name) in crate::exec::slurm::jobs_with_comment(&mine) {
        if crate::exec::slurm::cancel(&id).is_ok() {
            say(&format!(
                "bisect: cancelled Slurm job {id} ({}), left by an earlier bisection",
                crate::util::shell::comment(&name)
            ));
        }
    }
    match al.acquire(&|| crate::exec::signals::count() > 0) {
        Ok(true) => al.place(&mut exp),
        Ok(false) => {}
        Err(e) => {
            say(&format!("error: {e}"));
            return if crate::exec::signals::count() > 0 {
                exit_codes::INTERRUPTED
            } else {
                exit_codes::PREFLIGHT
            };
        }
    }
    let code = run_rounds(st, &exp, co, dir);
    for l in al.release() {
        say(&l);
    }
    code
}

fn run_rounds(st: &Start, exp: &Experiment, co: &Checkouts, dir: &Path) -> i32 {
    crate::exec::signals::install();
    let top = co.primary();
    let b = Bisection {
        st,
        exp,
        co,
        dir,
        file: PathBuf::from(&st.file),
        db: PathBuf::from(&st.history),
    };
    loop {
        if crate::exec::signals::count() > 0 {
            return interrupted(dir);
        }
        let events = match journal::read(dir) {
            Ok(e) => e,
            Err(e) => return fail(&e),
        };
        if let Some(Event::End { exit_code, .. }) = events.last() {
            // finished before: its result again
            let s = State::of(st, &events);
            if let Ok(t) = std::fs::read_to_string(dir.join("bisect.md")) {
                let _ = std::io::stdout().write_all(t.as_bytes());
            }
            say(&format!("bisect: finished before ({} rounds)", s.rounds));
            return *exit_code;
        }
        let s = State::of(st, &events);
        match search::next(st, &s) {
            Action::Measure(i, role) => {
                if let Err(code) = b.measure(&s, i, role) {
                    return code;
                }
            }
            Action::Decide(i, verdict, reason) => {
                say(&format!(
                    "bisect: {} is {verdict}: {reason}",
                    git::short(&st.commits[i])
                ));
                let v = journal::Verdict {
                    commit: i,
                    verdict: verdict.into(),
                    reason,
                };
                if let Err(e) = journal::append(dir, &Event::Verdict(v)) {
                    return fail(&e);
                }
            }
            Action::Done(o) => return b.finish(&top, &events, &s, &o),
        }
    }
}

/// Said when a signal stops the bisection: how to go on.
fn interrupted(dir: &Path) -> i32 {
    say(&format!(
        "bisect: interrupted; continue with `expr bisect --resume {}`",
        crate::util::shell::quote(&dir.display().to_string())
    ));
    exit_codes::INTERRUPTED
}

/// What each step of the loop works with: the bisection's start, experiment, checkouts and
/// directory, and its experiment file and history database.
struct Bisection<'b> {
    st: &'b Start,
    exp: &'b Experiment,
    co: &'b Checkouts,
    dir: &'b Path,
    file: PathBuf,
    db: PathBuf,
}

impl Bisection<'_> {
    /// One round: commit `i` checked out, measured as `role`, and journaled; Err: the exit code
    /// the bisection stops with.
    fn measure(&self, s: &State, i: usize, role: search::Role) -> Result<(), i32> {
        let (st, dir) = (self.st, self.dir);
        let sha = &st.commits[i];
        let repos = self.check_out(sha)?;
        let out = probe::round_dir(dir, s.rounds + 1, role.name(), git::short(sha));
        // build and test unless a round here did, or the build cache has it on every host
        let (setup, cached) = if !s.built[i] {
            self.setup_and_cached(sha, &repos, &out)
        } else {
            (Vec::new(), false)
        };
        let build = !s.built[i] && !cached;
        say(&format!(
            "bisect: round {}: {} {}{} ({} runs so far){}",
            s.rounds + 1,
            role.name(),
            git::short(sha),
            if build {
                ", build and test"
            } else if cached {
                ", built and tested before (build cache)"
            } else {
                ""
            },
            s.runs,
            elsewhere(s.rounds + 1, &out)
        ));
        let got = probe::run(&Ask {
            exp: self.exp,
            file: &self.file,
            only: &st.only,
            repos: &repos,
            out: &out,
            build,
            // the last round is cut to what `--max-runs` leaves (a round of 4 at 8 of 10 spent
            // 12)
            batch: st
                .max_runs
                .map_or(st.batch, |m| st.batch.min(m.saturating_sub(s.runs)).max(1)),
            metric: &st.metric,
            history: &self.db,
        });
        let (status, reason, unit, samples) = match got {
            Got::Interrupted => return Err(interrupted(dir)),
            Got::AllocationEnded(why) => {
                say(&format!(
                    "bisect: the allocation ended under the round ({why}): it counts for no commit; continue with `expr bisect --resume {}`, which makes a new one",
                    crate::util::shell::quote(&dir.display().to_string())
                ));
                return Err(exit_codes::PREFLIGHT);
            }
            Got::Fatal(e) => return Err(fail(&e)),
            Got::Round(a, b, c, d) => (a, b, c, d),
        };
        if build && status == "ok" {
            if let Err(e) = self.co.mark_built(sha, &setup) {
                say(&format!("warning: the build cache: {e}"));
            }
        }
        say_round(&status, &reason, &samples);
        let r = journal::Round {
            commit: i,
            role: role.name().into(),
            dir: out.display().to_string(),
            built: build,
            cached,
            status,
            reason,
            unit,
            samples,
        };
        journal::append(dir, &Event::Round(r)).map_err(|e| fail(&e))
    }

    /// Commit `sha` checked out in every tree (each worktree added said); Err: the exit code.
    fn check_out(&self, sha: &str) -> Result<probe::Repos, i32> {
        match self.co.check_out(sha) {
            Ok((repos, added)) => {
                for w in added {
                    say(&format!("bisect: worktree {w} added"));
                }
                Ok(repos)
            }
            Err(e) => {
                if crate::exec::signals::count() > 0 {
                    return Err(interrupted(self.dir));
                }
                Err(fail(&e))
            }
        }
    }

    /// The setup steps of the round at `sha` (into `out`), and whether the build cache has
    /// them on every host.
    fn setup_and_cached(
        &self,
        sha: &str,
        repos: &probe::Repos,
        out: &Path,
    ) -> (Vec<(String, String)>, bool) {
        let mut setup = Vec::new();
        let e = probe::at_commit(self.exp, repos, self.st.batch);
        if let Ok(p) = probe::plan_of(&e, &self.file, &self.st.only, out) {
            setup = probe::setup_of(&p);
        }
        let cached = match self.co.cached(sha, &setup) {
            Ok(c) => c,
            Err(e) => {
                say(&format!("warning: the build cache cannot be read: {e}"));
                false
            }
        };
        (setup, cached)
    }

    /// The search is done: the report written and printed, the end journaled; its exit code.
    fn finish(&self, top: &git::Repo, events: &[Event], s: &State, o: &search::Outcome) -> i32 {
        let (st, dir) = (self.st, self.dir);
        let doc = report::doc(st, top, events, s, o, dir);
        let text = report::text(st, &doc);
        let code = report::code(o);
        for (name, body) in [
            ("bisect.md", text.clone()),
            ("bisect.html", report::html(st, &doc)),
        ] {
            if let Err(e) = crate::results::atomic::write(&dir.join(name), body.as_bytes()) {
                say(&format!("warning: {e}"));
            }
        }
        let _ = journal::append(
            dir,
            &Event::End {
                outcome: report::name(o).into(),
                exit_code: code,
            },
        );
        let _ = std::io::stdout().write_all(text.as_bytes());
        // the worktrees stay, with their builds: the next bisection of the checkout
        // reuses them
        say(&format!(
            "bisect: the worktrees and their builds stay in {} (the build cache); result in {} and bisect.html (exit {code})",
            self.co.caches().join(", "),
            dir.join("bisect.md").display()
        ));
        code
    }
}

/// A round's outcome on one line: its status, why, and the values it measured.
fn say_round(status: &str, reason: &str, samples: &[journal::Sample]) {
    let values: Vec<String> = samples.iter().map(|x| format!("{:.2}", x.value)).collect();
    say(&format!(
        "  {status}{}{}",
        if reason.is_empty() {
            String::new()
        } else {
            format!(": {reason}")
        },
        if values.is_empty() {
            String::new()
        } else {
            format!(" [{}]", values.join(" "))
        }
    ));
}

/// Where a round's results go when its directory's number is not the round's (an interrupted
/// round keeps its directory, and the round run again takes the next number): said on the
/// round's line, so that "round 6" is found in `runs/007-…`.
fn elsewhere(round: usize, out: &Path) -> String {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.split('-').next().and_then(|k| k.parse::<usize>().ok()) {
        Some(k) if k != round => {
            format!(
                "; its results go to runs/{name} (an interrupted round keeps its own directory)"
            )
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod round_dir_tests {
    use super::*;

    #[test]
    fn a_round_whose_directory_number_differs_says_where_it_goes() {
        assert_eq!(elsewhere(6, Path::new("b/runs/006-good-abc1234")), "");
        assert_eq!(
            elsewhere(6, Path::new("b/runs/007-good-abc1234")),
            "; its results go to runs/007-good-abc1234 (an interrupted round keeps its own directory)"
        );
        assert_eq!(elsewhere(6, Path::new("weird")), "");
    }
}
