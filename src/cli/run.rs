//! `expr run`, and `--resume`: the run's experiment, its allocations, the runner.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::parse::load;
use crate::parse::validate::Options;
use crate::results::event::RunEvent;
use crate::util::exit_codes;

use super::array::array_run;
use super::plan::{build_plan, plan_of};

/// The experiment a result directory was run with, and the `--set` values to resume it with:
/// its file when that still resolves to what the journal recorded (or `--force`), else the
/// recorded experiment itself; the run's own `--set` (the journal's header keeps them), each
/// replaced by one given now for the same key.
pub(super) fn resume_file(
    dir: &Path,
    set: &[String],
    force: bool,
    limits: &Options,
) -> Result<(PathBuf, Vec<String>), String> {
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
    let events = crate::results::journal::events(&dir.join("journal.jsonl"));
    // the latest run into this directory recorded what it ran
    let header = events
        .iter()
        .rev()
        .find_map(|e| match e {
            RunEvent::Header(h) => Some(h),
            _ => None,
        })
        .ok_or_else(|| {
            format!(
                "{}: the journal records no experiment (the run stopped before preflight): name the file, `expr run FILE --resume {}`",
                dir.display(),
                dir.display()
            )
        })?;
    let recorded_sets = header.sets.clone().unwrap_or_default();
    if recorded_sets.is_empty() {
        return resumed_file(dir, header, set, &[], force, limits).map(|f| (f, set.to_vec()));
    }
    // the run's own `--set`, each overridden by one given now for the same key
    let merged = by_key(&recorded_sets, set);
    let quoted = |v: &[String]| {
        v.iter()
            .map(|s| crate::util::shell::quote(s))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = if merged == recorded_sets {
        writeln!(
            std::io::stderr(),
            "expr: resuming with the run's --set {}",
            quoted(&merged)
        )
    } else {
        writeln!(
            std::io::stderr(),
            "expr: resuming with the run's --set ({}), as given now for the keys it names: {}",
            quoted(&recorded_sets),
            quoted(&merged)
        )
    };
    resumed_file(dir, header, &merged, &recorded_sets, force, limits).map(|f| (f, merged))
}

/// The `--only` of a resumed run: the run's own (its journal's header keeps them), those of each
/// key named now replaced by what is given now (`--only lane=slow` after `--only lane=fast --only
/// n=1000` runs `lane=slow n=1000`). A journal that kept none: what is given now.
pub(super) fn resume_only(dir: &Path, only: &[String]) -> Vec<String> {
    let merged = by_key(&recorded_only(dir), only);
    if merged.len() == only.len() {
        return merged;
    }
    let _ = writeln!(
        std::io::stderr(),
        "expr: resuming with the run's --only, as given now for the keys it names: {}",
        merged
            .iter()
            .map(|s| format!("--only {}", crate::util::shell::quote(s)))
            .collect::<Vec<_>>()
            .join(" ")
    );
    merged
}

/// `KEY=VALUE`s a run was given, those of each key in `now` replaced by `now`'s (the run's first,
/// then what is given now).
fn by_key(recorded: &[String], now: &[String]) -> Vec<String> {
    let key = |s: &String| {
        s.split_once('=')
            .map_or(s.clone(), |(k, _)| k.trim().to_string())
    };
    let given: std::collections::HashSet<String> = now.iter().map(key).collect();
    recorded
        .iter()
        .filter(|s| !given.contains(&key(s)))
        .chain(now)
        .cloned()
        .collect()
}

/// The `--only` the runs into `dir` were given: the latest header's that names any (a resume
/// without `--only` keeps the run's selection, and records it again).
fn recorded_only(dir: &Path) -> Vec<String> {
    crate::results::journal::events(&dir.join("journal.jsonl"))
        .iter()
        .rev()
        .filter_map(RunEvent::header)
        .find_map(|h| h.only.clone())
        .unwrap_or_default()
}

/// The file to resume `dir` with, its run's `header` read: the file when it still resolves to
/// what the journal recorded with `set` (or `--force`), else the recorded experiment itself.
fn resumed_file(
    dir: &Path,
    header: &crate::results::event::Header,
    set: &[String],
    run_sets: &[String],
    force: bool,
    limits: &Options,
) -> Result<PathBuf, String> {
    let recorded = header.resolved.as_deref().unwrap_or("");
    let source = PathBuf::from(header.source.as_deref().unwrap_or(""));
    // compared as `run_cmd` compares them: comments (`// default`) do not count
    let resolved = |sets: &[String]| {
        // with the run's own limits: `--allow-large` and `--max-input-mib` hold here too
        let loaded = load::load_file_with(&source, limits, sets);
        let errors: Vec<String> = loaded
            .diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.message.clone())
            .collect();
        match loaded.experiment.filter(|_| errors.is_empty()) {
            Some(exp) => Ok(strip_comments(&crate::parse::resolved::to_kdl(&exp))),
            None => Err(errors),
        }
    };
    // `--set` given now, on a file that has not changed: what differs (or fails) is theirs
    let given_now = set != run_sets;
    let file_as_run = given_now
        && source.is_file()
        && resolved(run_sets).ok().as_deref() == Some(&strip_comments(recorded));
    if source.is_file() {
        match resolved(set) {
            Ok(now) => {
                let recorded = strip_comments(recorded);
                if now == recorded {
                    return Ok(source);
                }
                let changed: Vec<String> = diff_lines(&recorded, &now);
                let what = if file_as_run {
                    "the --set given now".to_string()
                } else {
                    source.display().to_string()
                };
                if force {
                    let _ = writeln!(
                        std::io::stderr(),
                        "expr: {what} changed the experiment since the run; resuming with it as it is now (--force)"
                    );
                    return Ok(source);
                }
                return Err(if file_as_run {
                    format!(
                        "the --set given now changes the experiment the run in {} ran ({} is as it was):
{}
pass --force to resume with it (the points whose commands changed run again), or resume without it",
                        dir.display(),
                        source.display(),
                        changed.join("\n")
                    )
                } else {
                    format!(
                        "{} changed since the run in {}:
{}
pass --force to resume with the file as it is now, or name another file",
                        source.display(),
                        dir.display(),
                        changed.join("\n")
                    )
                });
            }
            // the file is as the run had it: the `--set` given now is what is wrong
            Err(errors) if file_as_run => {
                return Err(format!(
                    "the --set given now is not valid for {}: {}",
                    source.display(),
                    errors.join("; ")
                ));
            }
            Err(_) => {}
        }
    }
    // the file is gone (or no longer valid): the journal's copy is the experiment, unless it
    // holds secrets, which expr never writes down (the copy has `****` in their place)
    let build_env: Vec<String> = header
        .model
        .as_ref()
        .and_then(|m| m["experiment"]["benches"].as_array())
        .into_iter()
        .flatten()
        .flat_map(|b| b["build"]["env"].as_array().into_iter().flatten())
        .filter_map(|kv| kv[0].as_str().map(str::to_string))
        .collect();
    let secrets: Vec<String> = header
        .host_specs
        .as_ref()
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
        .flat_map(|h| h["env"].as_array().into_iter().flatten())
        .filter_map(|kv| kv[0].as_str())
        .chain(build_env.iter().map(String::as_str))
        .filter(|k| crate::util::secret::is_secret(k))
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
    // the copy goes into runtime/: not through a link out of the directory (the resume
    // refuses one anyway, after this)
    crate::exec::state::refuse_links(dir)?;
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

/// Why `--jobs` cannot run this experiment's points side by side, if it cannot.
fn jobs_refusal(exp: &crate::model::Experiment, array: bool) -> Option<String> {
    if array {
        return Some(
            "a Slurm array runs its tasks at once already (`throttle=` says how many)".into(),
        );
    }
    if let Some(b) = exp.benches.iter().find(|b| b.adaptive.is_some()) {
        return Some(format!(
            "`{}` has adaptive repeats, which decide each next run from the ones before",
            b.name
        ));
    }
    None
}

/// What CI reads of a run, written when it ends, where asked.
pub(super) struct CiOut<'a> {
    pub junit: Option<&'a std::path::Path>,
    pub summary_md: Option<&'a std::path::Path>,
}

impl CiOut<'_> {
    /// JUnit XML and the Markdown summary of the run's report data; false where a file could
    /// not be written (said; the run's own results stand, and a run that was ok exits 1, as
    /// docs/ci.md says).
    fn write(
        &self,
        data: Option<&crate::kind_api::data::ReportData>,
        started: &str,
        code: i32,
    ) -> bool {
        let Some(data) = data else {
            if self.junit.is_some() || self.summary_md.is_some() {
                let _ = writeln!(
                    std::io::stderr(),
                    "warning: no report data (the run stopped before its report): no JUnit or summary written"
                );
            }
            return true;
        };
        let mut written = true;
        if let Some(p) = self.junit {
            let xml = crate::report::ci::junit(
                &format!("expr run {}", data.experiment),
                started,
                &crate::report::ci::run_cases(data),
            );
            if let Err(e) = crate::results::atomic::write_named(p, xml.as_bytes()) {
                let _ = writeln!(std::io::stderr(), "error: --junit: {e}");
                written = false;
            }
        }
        if let Some(p) = self.summary_md {
            let md = crate::report::ci::run_markdown(data, code);
            if let Err(e) = crate::report::ci::append(p, &md) {
                let _ = writeln!(std::io::stderr(), "error: --summary-md: {e}");
                written = false;
            }
        }
        written
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run_cmd(
    file: &std::path::Path,
    only: &[String],
    set: &[String],
    output: Option<&str>,
    ropts: crate::exec::run::runner::Options,
    opts: &Options,
    history: Option<&std::path::Path>,
    lang: Option<crate::util::lang::Lang>,
    ci: &CiOut,
) -> i32 {
    let (mut exp, mut plan) = match build_plan(file, only, set, output, opts) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if let Some(name) = ropts.keep_experiment {
        match std::fs::read_to_string(file) {
            Ok(content) => {
                plan.source = format!("{}/{name}", plan.output.trim_end_matches('/'));
                plan.files.push(crate::kind_api::step::PlannedFile {
                    path: name.to_string(),
                    content,
                });
            }
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {}: {e}", file.display());
                return exit_codes::INTERNAL;
            }
        }
    }
    // --lang is the experiment's `language` from here on: the journal's resolved experiment
    // carries it, so `expr report` writes the same language again
    if lang.is_some() {
        exp.language = lang;
    }
    if ropts.resume {
        if let Err(code) = resume_as_ran(file, only, ropts.force, &mut exp, &mut plan) {
            return code;
        }
    }
    // the CI files are checked before anything runs: one inside the result directory replaced
    // its journal (`--junit out/journal.jsonl` lost the run), a missing folder was found after it
    for (flag, p) in [("--junit", ci.junit), ("--summary-md", ci.summary_md)] {
        let out = std::path::Path::new(&plan.output);
        if let Some(why) = p.and_then(|p| {
            super::out::named_file_problem(flag, p, &[out], &crate::history::path(history))
        }) {
            let _ = writeln!(std::io::stderr(), "error: {why}");
            return exit_codes::INVALID;
        }
    }
    // one file for both: the Markdown appended to the XML made it invalid
    if let (Some(j), Some(m)) = (ci.junit, ci.summary_md) {
        if super::out::resolved(j) == super::out::resolved(m) {
            let _ = writeln!(
                std::io::stderr(),
                "error: --junit and --summary-md both name {}: give each its own file",
                j.display()
            );
            return exit_codes::INVALID;
        }
    }
    // the allocations the hosts are placed on: made now, their nodes' names and addresses put
    // into the experiment, and the plan made again with them (same start time)
    let mut allocator = crate::exec::allocator::for_experiment(&exp, &plan.output);
    let mut ropts = ropts;
    ropts.sets = set.to_vec();
    ropts.only = only.to_vec();
    // a resume that chooses nothing keeps the run's selection: its header says it again
    if only.is_empty() && ropts.resume {
        ropts.only = recorded_only(Path::new(&plan.output));
    }
    if let Some(al) = &allocator {
        match array_run(&mut exp, &plan, al.as_ref(), file, set, only) {
            Ok(Some(r)) => {
                ropts.array = Some(crate::exec::run::array::ArrayRun {
                    grace: ropts.grace,
                    noise: ropts.noise.clone(),
                    ..r
                })
            }
            Ok(None) => {}
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                return exit_codes::INVALID;
            }
        }
    }
    if let Some(al) = allocator.as_mut() {
        if let Err(code) = acquire_and_place(al.as_mut(), &mut exp, &mut plan, file, only) {
            return code;
        }
    }
    if let Err(code) = settle_jobs(&exp, &mut ropts, allocator.as_mut()) {
        return code;
    }
    let quiet = ropts.quiet;
    ropts.history_db = Some(crate::history::path(history));
    match crate::exec::run::runner::Runner::new(&exp, &plan, ropts) {
        Ok(r) => run_and_finish(r, &plan, allocator.as_mut(), quiet, history, ci),
        Err(e) => {
            if let Some(al) = allocator.as_mut() {
                say(al.release());
            }
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit_codes::INVALID
        }
    }
}

/// Each line on stderr.
fn say(lines: Vec<String>) {
    for l in lines {
        let _ = writeln!(std::io::stderr(), "{l}");
    }
}

/// `--resume`: a resumed run is the same run: its start time, and the points it was asked for
/// (`--only`) unless this command chooses again. Refused (exit code) when the experiment was
/// edited since, without `--force`.
fn resume_as_ran(
    file: &std::path::Path,
    only: &[String],
    force: bool,
    exp: &mut crate::model::Experiment,
    plan: &mut crate::plan::Plan,
) -> Result<(), i32> {
    let events =
        crate::results::journal::events(&std::path::Path::new(&plan.output).join("journal.jsonl"));
    // the points the earlier run finished ok (their last word): a group whose warmup ran then
    // warms up again before the first of its points that runs now
    let mut last: std::collections::HashMap<&str, &str> = Default::default();
    for e in &events {
        if let RunEvent::Point(p) = e {
            if let (Some(id), Some(st)) = (&p.run_id, &p.status) {
                last.insert(id, st);
            }
        }
    }
    let done: std::collections::HashSet<String> = last
        .into_iter()
        .filter(|(_, st)| *st == "ok")
        .map(|(id, _)| id.to_string())
        .collect();
    let done = std::sync::Arc::new(done);
    let headers: Vec<crate::results::event::Header> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Header(h) => Some(h.clone()),
            _ => None,
        })
        .collect();
    // the same experiment (file and --set), or --force: an edited one is a different run
    let recorded = strip_comments(
        headers
            .last()
            .and_then(|h| h.resolved.as_deref())
            .unwrap_or(""),
    );
    let now = strip_comments(&crate::parse::resolved::to_kdl(exp));
    let edited = !recorded.is_empty() && now != recorded;
    if edited && !force {
        let _ = writeln!(
            std::io::stderr(),
            "error: {} is not the experiment the run in {} ran:\n{}\npass --force to resume with it as it is now (points whose command or settings changed run again, the rest are kept)",
            file.display(),
            plan.output,
            diff_lines(&recorded, &now).join("\n")
        );
        return Err(exit_codes::INVALID);
    }
    let started = headers
        .first()
        .and_then(|h| h.started.as_deref())
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&chrono::Local));
    if let Some(started) = started {
        // the directory as the run named it (absolute, or relative to where it ran, which is
        // here): the paths the manifest and the reports name keep their form
        let out = headers
            .last()
            .and_then(|h| h.output.clone())
            .filter(|o| crate::util::same_place(o.as_ref(), plan.output.as_ref()))
            .unwrap_or_else(|| plan.output.clone());
        let (e, p) =
            super::plan::plan_resuming(exp.clone(), file, only, Some(&out), started, done)?;
        *exp = e;
        *plan = p;
    }
    let asked: std::collections::BTreeSet<String> = headers
        .iter()
        .filter_map(|h| h.run_ids.clone())
        .flatten()
        .collect();
    // an edited experiment's matrix is its own: the earlier selection does not hold
    if only.is_empty() && !asked.is_empty() && !edited {
        let all = plan.points.len();
        plan.points.retain(|p| asked.contains(&p.run_id));
        // numbered in the plan, as an `--only` run numbers them (`[3/2]` otherwise)
        for (i, p) in plan.points.iter_mut().enumerate() {
            p.index = i;
        }
        plan.by_id = Default::default();
        if plan.points.len() < all {
            let _ = writeln!(
                std::io::stderr(),
                "resume: {} of {all} points, as the run chose them (`--only` chooses others)",
                plan.points.len()
            );
        }
    }
    Ok(())
}

/// Acquire the allocations; once they are granted, place the hosts on their nodes and make the
/// plan again (same start time). The exit code when that fails or is interrupted.
fn acquire_and_place(
    al: &mut dyn crate::exec::allocator::Allocator,
    exp: &mut crate::model::Experiment,
    plan: &mut crate::plan::Plan,
    file: &std::path::Path,
    only: &[String],
) -> Result<(), i32> {
    match al.acquire(&|| crate::exec::signals::count() > 0) {
        Ok(false) => {}
        Ok(true) => {
            al.place(exp);
            let started = chrono::DateTime::parse_from_rfc3339(&plan.started)
                .map(|t| t.with_timezone(&chrono::Local))
                .unwrap_or_else(|_| chrono::Local::now());
            match plan_of(exp.clone(), file, only, Some(&plan.output), started) {
                Ok((e, p)) => {
                    *exp = e;
                    *plan = p;
                }
                Err(code) => {
                    // given back without a word, as before the run
                    let _ = al.release();
                    return Err(code);
                }
            }
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            return Err(if crate::exec::signals::count() > 0 {
                exit_codes::INTERRUPTED
            } else {
                exit_codes::PREFLIGHT
            });
        }
    }
    Ok(())
}

/// `--jobs`, or else the experiment's `jobs` (at least 1); more than one is refused (the
/// allocations given back) where the experiment cannot run points side by side.
fn settle_jobs(
    exp: &crate::model::Experiment,
    ropts: &mut crate::exec::run::runner::Options,
    allocator: Option<&mut Box<dyn crate::exec::allocator::Allocator>>,
) -> Result<(), i32> {
    let from_file = ropts.jobs == 0;
    if from_file {
        ropts.jobs = exp.jobs.map_or(1, |j| j.max(1) as usize);
    }
    if ropts.jobs > 1 {
        if let Some(why) = jobs_refusal(exp, ropts.array.is_some()) {
            if let Some(al) = allocator {
                for l in al.release() {
                    let _ = writeln!(std::io::stderr(), "{l}");
                }
            }
            let _ = writeln!(
                std::io::stderr(),
                "error: {} {}: {why}; run with --jobs 1",
                if from_file {
                    "the experiment's `jobs`"
                } else {
                    "--jobs"
                },
                ropts.jobs
            );
            return Err(exit_codes::INVALID);
        }
    }
    Ok(())
}

/// Run, give the allocations back, register the run in the history, write the CI outputs, and
/// say where the results are; the run's exit code.
/// The run's end (its report), and the history told as it starts.
struct Finishing {
    at_end: crate::report::AtEnd,
    history: std::path::PathBuf,
}

impl crate::results::Finish for Finishing {
    fn started(&mut self, dir: &std::path::Path) {
        crate::history::register_started(&self.history, dir);
    }

    fn finish(&mut self, dir: &std::path::Path) -> crate::results::Finished {
        self.at_end.finish(dir)
    }
}

fn run_and_finish(
    r: crate::exec::run::runner::Runner<'_>,
    plan: &crate::plan::Plan,
    allocator: Option<&mut Box<dyn crate::exec::allocator::Allocator>>,
    quiet: bool,
    history: Option<&std::path::Path>,
    ci: &CiOut,
) -> i32 {
    // said once the result directory is known to be usable
    if !quiet {
        let _ = writeln!(
            std::io::stderr(),
            "expr: {} → {}",
            crate::util::units::count(plan.points.len(), "point"),
            plan.output
        );
    }
    let mut finishing = Finishing {
        at_end: crate::report::AtEnd::default(),
        history: crate::history::path(history),
    };
    let ran = r.run(&mut finishing);
    let at_end = finishing.at_end;
    let code = ran.code;
    if let Some(al) = allocator {
        say(al.release());
        // whatever of an array run is still queued (it should be nothing)
        say(al.release_queued());
    }
    let out = std::path::Path::new(&plan.output);
    // every run that got past preflight registers itself (one stopped before has no header:
    // nothing to add, and nothing said); the database never fails a run. A `--force` run that
    // measured nothing put the earlier results back: they are what the directory holds, read
    // from it again (this run's data would replace them with none)
    let named = names_its_experiment(out);
    if named {
        let db = crate::history::path(history);
        let data = at_end.data.as_ref().filter(|_| !ran.earlier_back);
        if let Some(w) = crate::history::register_quietly(&db, out, data) {
            let _ = writeln!(std::io::stderr(), "warning: {w}");
        }
    }
    // the run has ended and torn down: a Ctrl-C from here ends expr at once (a --junit FIFO
    // nobody reads would hold it)
    crate::exec::signals::restore_default();
    // a JUnit or summary the CI asked for and did not get fails an ok run (exit 1)
    let code = match ci.write(at_end.data.as_ref(), &plan.started, code) {
        false if code == exit_codes::OK => exit_codes::INTERNAL,
        _ => code,
    };
    // a signal after the last point: nothing is left for --resume
    let all_ran = at_end.data.as_ref().is_some_and(|d| {
        d.points.len() == plan.points.len()
            && d.points
                .iter()
                .all(|p| matches!(p.status.as_str(), "ok" | "skipped"))
    });
    if ran.earlier_back {
        // the directory holds the earlier run as it was: nothing of this run is to resume
        let code = lost_stdout(&plan.output, code);
        let _ = writeln!(
            std::io::stderr(),
            "expr: results in {} (exit {code})",
            plan.output
        );
        let _ = writeln!(
            std::io::stderr(),
            "expr: they are the earlier run's, as they were; nothing of this run is left to resume (the same command with --force measures again)"
        );
        return code;
    }
    say_where_results_are(&plan.output, &plan.source, code, all_ran, named)
}

/// The one line on stdout, the result directory (`dir=$(expr run x.kdl)`): a run that could not
/// write it (`>/dev/full`) did not give the caller what it asked for, and does not exit 0.
fn lost_stdout(output: &str, code: i32) -> i32 {
    match super::out::print(format!("{output}\n").as_bytes()) {
        Err(c) if code == exit_codes::OK => c,
        _ => code,
    }
}

/// This run's command line, for a resume of a directory whose journal names no experiment:
/// the file and every option again (helper 89: `--set` was left out, and the resume ran with
/// the file's values), less `--output` and `--force`, which `--resume DIR` takes the place of.
fn this_run_again(source: &str) -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut kept: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--output" => {
                it.next();
            }
            "--force" => {}
            _ if a.starts_with("--output=") => {}
            _ => kept.push(a.clone()),
        }
    }
    // `run` and what follows it, as given; a file found by itself (none given) is named
    let from = kept.iter().position(|a| a == "run").map_or(0, |i| i + 1);
    let mut words: Vec<String> = kept[from..]
        .iter()
        .map(|a| crate::util::shell::quote(a))
        .collect();
    if !kept.iter().any(|a| a == source) {
        words.insert(0, crate::util::shell::quote(source));
    }
    format!("{} ", words.join(" "))
}

/// Whether a result directory's journal records an experiment (a run got past preflight).
fn names_its_experiment(dir: &std::path::Path) -> bool {
    crate::results::journal::events(&dir.join("journal.jsonl"))
        .iter()
        .any(|e| e.header().is_some())
}

/// The run's last words: where its results are (the one line on stdout) and how to finish it,
/// or only its exit code when it left no directory. `named`: its journal records an experiment
/// (read once, for the history too).
fn say_where_results_are(output: &str, source: &str, code: i32, all_ran: bool, named: bool) -> i32 {
    if std::path::Path::new(output).is_dir() {
        // the one line on stdout first: where the results are (`dir=$(expr run x.kdl)`); a
        // run that could not write it exits 1, and the line below says so
        let code = lost_stdout(output, code);
        let _ = writeln!(std::io::stderr(), "expr: results in {output} (exit {code})");
        if exit_codes::interrupted(code) && all_ran {
            let _ = writeln!(
                std::io::stderr(),
                "expr: every point ran before the signal; `expr report {}` writes the reports again",
                crate::util::shell::quote(output)
            );
        } else if exit_codes::interrupted(code) || code == exit_codes::POINT_FAILED {
            // what to do next: the points not run (or failed) run, the rest are kept; a
            // journal stopped before preflight names no experiment, so the file is named
            // (helper 88: the advice failed with "the journal records no experiment")
            let q = crate::util::shell::quote;
            let _ = writeln!(
                std::io::stderr(),
                "expr: to run {} and keep the rest: expr run {}--resume {}",
                if exit_codes::interrupted(code) {
                    "what was not finished"
                } else {
                    "the failed points again"
                },
                if named {
                    String::new()
                } else {
                    this_run_again(source)
                },
                q(output)
            );
        }
        code
    } else {
        let _ = writeln!(std::io::stderr(), "expr: exit {code}");
        code
    }
}

/// `expr run` without a file: the experiment files here (*.kdl, where `expr init` writes,
/// experiments/*.kdl, examples/*.kdl), the only one run, several listed.
pub(super) fn the_only_experiment() -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = Vec::new();
    for d in [".", "experiments", "examples"] {
        let mut here: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "kdl") && p.is_file())
                    // not a hidden file (an editor's, a tool's)
                    .filter(|p| {
                        !p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                    })
                    // `bench.kdl`, not `./bench.kdl`
                    .map(|p| p.strip_prefix(".").map(Path::to_path_buf).unwrap_or(p))
                    .collect()
            })
            .unwrap_or_default();
        here.sort();
        found.extend(here);
    }
    match found.len() {
        0 => Err("error: no experiment file given, and no *.kdl here or in experiments/ or examples/; run one with `expr run FILE` (`expr init bench` writes a starter, bench.kdl)".into()),
        1 => {
            let f = found.remove(0);
            let _ = writeln!(
                std::io::stderr(),
                "expr: the only experiment file here is {}",
                f.display()
            );
            Ok(f)
        }
        _ => Err(format!(
            "error: no experiment file given; the ones here are:\n{}\nrun one with `expr run FILE`",
            found
                .iter()
                .map(|f| format!("  {}", f.display()))
                .collect::<Vec<_>>()
                .join("\n")
        )),
    }
}
