//! One measurement round: the experiment with its hosts' repo pointed at a commit's worktree,
//! planned and run as `expr run` runs it (build and correctness tests on the commit's first
//! round, skipped on later ones: its worktree keeps the build), registered in the history, and
//! the metric's samples read from the result directory with their sources.

use std::path::{Path, PathBuf};

use crate::model::Experiment;

use super::journal::Sample;

/// Each host's repo at the measured commit: (host, the path in its worktree there).
pub type Repos = Vec<(String, String)>;

/// What a round asks.
pub struct Ask<'a> {
    pub exp: &'a Experiment,
    pub file: &'a Path,
    pub only: &'a [String],
    pub repos: &'a Repos,
    pub out: &'a Path,
    /// Build and test (the commit's first round that got that far).
    pub build: bool,
    pub batch: usize,
    pub metric: &'a str,
    pub history: &'a Path,
}

/// What a round gave.
pub enum Got {
    /// status (ok, build-failed, test-failed, failed), reason, unit, samples.
    Round(String, String, String, Vec<Sample>),
    Interrupted,
    /// The allocation the rounds run in ended under this one (its time limit, a cancel,
    /// `expr stop`): why. No commit is to blame; a resume makes a new one.
    AllocationEnded(String),
    /// Nothing can be measured this way (a metric the points do not have…): stop.
    Fatal(String),
}

/// The run's allocation ended while it ran, as its journal records it (a Slurm event of no
/// array task): "Slurm job J is STATE (why)".
fn allocation_ended(out: &Path) -> Option<String> {
    crate::results::journal::events(&out.join("journal.jsonl"))
        .into_iter()
        .find_map(|e| match e {
            crate::results::event::RunEvent::Slurm(s) if s.run_id.is_none() => Some(format!(
                "Slurm job {} is {}{}",
                s.job,
                s.state,
                if s.reason.is_empty() || s.reason == "None" {
                    String::new()
                } else {
                    format!(" ({})", s.reason)
                }
            )),
            _ => None,
        })
}

/// The experiment at a commit: each host runs in its worktree of that commit, and each
/// bench runs `batch` repeats per round (the bisection decides how many rounds).
pub fn at_commit(exp: &Experiment, repos: &Repos, batch: usize) -> Experiment {
    let mut e = exp.clone();
    for h in e.hosts.iter_mut() {
        if let Some((_, repo)) = repos.iter().find(|(n, _)| *n == h.name) {
            h.repo = repo.clone();
        }
    }
    for b in e.benches.iter_mut() {
        b.repeat = batch.max(1) as i64;
        b.adaptive = None;
    }
    e
}

/// The plan of a round (also what `--dry-run` shows).
pub fn plan_of(
    exp: &Experiment,
    file: &Path,
    only: &[String],
    out: &Path,
) -> Result<crate::plan::Plan, String> {
    let filter = crate::parse::overrides::filter(exp, only).map_err(|d| {
        d.iter()
            .map(|x| x.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    crate::plan::plan(
        exp,
        &file.display().to_string(),
        &filter,
        Some(&out.display().to_string()),
        chrono::Local::now(),
    )
}

/// Each host's build and test commands in a round's plan (host, the commands as text): what a
/// build mark is keyed by, beside the commit and the machine.
pub fn setup_of(plan: &crate::plan::Plan) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for s in &plan.setup {
        let mut t = format!("{:?} {} cwd={}", s.phase, s.id, s.cwd);
        for (k, v) in &s.env {
            t.push_str(&format!(" {k}={v}"));
        }
        t.push(' ');
        t.push_str(
            s.shell
                .as_deref()
                .unwrap_or(&crate::util::shell::join(&s.argv)),
        );
        t.push('\n');
        match out.iter_mut().find(|(h, _)| *h == s.host) {
            Some((_, c)) => c.push_str(&t),
            None => out.push((s.host.clone(), t)),
        }
    }
    out
}

/// Run one round.
pub fn run(a: &Ask) -> Got {
    let exp = at_commit(a.exp, a.repos, a.batch);
    let plan = match plan_of(&exp, a.file, a.only, a.out) {
        Ok(p) => p,
        Err(e) => return Got::Fatal(e),
    };
    let opts = crate::exec::run::runner::Options {
        skip_build: !a.build,
        skip_tests: !a.build,
        quiet: true,
        grace: 5,
        history_db: Some(a.history.to_path_buf()),
        ..Default::default()
    };
    let runner = match crate::exec::run::runner::Runner::new(&exp, &plan, opts) {
        Ok(r) => r,
        Err(e) => return Got::Fatal(e),
    };
    let mut at_end = crate::report::AtEnd::default();
    let code = runner.run(&mut at_end).code;
    if code == crate::util::exit_codes::INTERRUPTED || crate::exec::signals::count() > 0 {
        return Got::Interrupted;
    }
    if let Some(why) = allocation_ended(a.out) {
        return Got::AllocationEnded(why);
    }
    if !a.out.join("journal.jsonl").is_file() {
        return Got::Round(
            "failed".into(),
            format!("preflight failed (exit {code}), nothing ran"),
            String::new(),
            Vec::new(),
        );
    }
    if let Some(w) = crate::history::register_quietly(a.history, a.out, at_end.data.as_ref()) {
        eprintln!("warning: {w}");
    }
    // a build or correctness test that failed: the commit is skipped, as `git bisect skip`
    for e in crate::results::journal::events(&a.out.join("journal.jsonl")) {
        let crate::results::event::RunEvent::Step(s) = e else {
            continue;
        };
        let phase = s.phase.as_deref().unwrap_or("");
        let status = s.status.as_deref().unwrap_or("");
        if (phase == "build" || phase == "test") && status != "ok" && status != "skipped" {
            let what = if phase == "test" {
                "test-failed"
            } else {
                "build-failed"
            };
            let en = crate::util::lang::Lang::En;
            let how = match (status, s.exit_code) {
                ("", c) => format!(
                    "? ({})",
                    c.map_or("exit null".into(), |c| crate::results::reason::code_text(
                        c, "exit", en
                    ))
                ),
                (st, Some(c)) => crate::results::reason::ended_text(en, st, c),
                (st, None) => format!("{st} (exit null)"),
            };
            let reason = format!(
                "`{}` on `{}` {how}; log: {}",
                s.step,
                s.host,
                s.log.as_deref().unwrap_or("?")
            );
            return Got::Round(what.into(), reason, String::new(), Vec::new());
        }
    }
    let data = match at_end.data {
        Some(d) => d,
        None => match crate::report::gather::load(a.out) {
            Ok(d) => d,
            Err(e) => return Got::Round("failed".into(), e, String::new(), Vec::new()),
        },
    };
    let mut samples = Vec::new();
    let mut unit = String::new();
    let mut names: Vec<String> = Vec::new();
    let mut failed: Option<String> = None;
    for p in &data.points {
        if p.status != "ok" {
            failed.get_or_insert_with(|| format!("{}: {} {}", p.run_id, p.status, p.reason));
            continue;
        }
        for m in &p.metrics {
            if !names.contains(&m.name) {
                names.push(m.name.clone());
            }
            if m.name == a.metric && m.value.is_finite() {
                unit = m.unit.clone();
                samples.push(Sample {
                    value: m.value,
                    source: m.source.clone(),
                });
            }
        }
    }
    if samples.is_empty() && !names.is_empty() {
        let hint = crate::util::suggest::did_you_mean(a.metric, names.iter().map(String::as_str))
            .map(|s| format!(" — did you mean `{s}`?"))
            .unwrap_or_default();
        return Got::Fatal(format!(
            "the points have no metric `{}`; they have {}{hint}",
            a.metric,
            crate::util::markup::ticked(names.iter())
        ));
    }
    if samples.is_empty() {
        return Got::Round(
            "failed".into(),
            failed.unwrap_or_else(|| format!("no value of `{}` (exit {code})", a.metric)),
            unit,
            samples,
        );
    }
    Got::Round("ok".into(), String::new(), unit, samples)
}

/// A round's result directory: `runs/<NNN>-<role>-<short sha>`, the first number not taken (an
/// interrupted round's directory stays as it was).
pub fn round_dir(bisect: &Path, from: usize, role: &str, short: &str) -> PathBuf {
    let mut k = from;
    loop {
        let d = bisect.join("runs").join(format!("{k:03}-{role}-{short}"));
        let taken = std::fs::read_dir(bisect.join("runs"))
            .map(|rd| {
                rd.flatten().any(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("{k:03}-"))
                })
            })
            .unwrap_or(false);
        if !taken && !d.exists() {
            return d;
        }
        k += 1;
    }
}
