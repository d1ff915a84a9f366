//! `mode="array"`: every point is one task of a single `sbatch --array=0-N%K`. Each task runs
//! `expr __task` on its node: it plans the run's experiment file again with the run's `--set`
//! and `--only` (refusing a file whose content changed since the submission), keeps its own
//! point, runs it exactly as a local run would (readiness, teardown,
//! timing, collection) and writes its events to `runtime/array/tasks/RUN_ID.jsonl`. The
//! submitting `expr run` merges each fragment into the journal as its task ends, writes the
//! manifest and the report, and on every exit path cancels the array job (by id; its name and
//! comment mark it as this run's). A task that ends without a point (TIMEOUT, OUT_OF_MEMORY,
//! NODE_FAIL, CANCELLED) fails its point with the state Slurm gives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::exec::run::campaign::{Campaign, Next};
use crate::exec::state::{Recorder, Skip};
use crate::plan::render::comment;
use crate::plan::PlanPoint;
use crate::results::event::{self, RunEvent};
use crate::results::journal;
use crate::results::reason::Reason;
use crate::util::exit_codes;
use crate::util::lang::Lang;
use crate::util::shell::{join, quote};

pub use crate::exec::state::options::ArrayRun;
pub use crate::exec::vars::TASKS_DIR;
/// Where merged fragments are kept.
pub const MERGED_DIR: &str = "runtime/array/merged";

/// The content hash a task checks the experiment file against.
pub fn file_hash(bytes: &[u8]) -> String {
    // FNV-1a, as the journal's command hashes
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// A task's fragment.
pub fn fragment(dir: &Path, run_id: &str) -> PathBuf {
    dir.join(TASKS_DIR).join(format!("{run_id}.jsonl"))
}

/// The batch script of an array whose task I runs the point `run_ids[I]`. Every value is
/// quoted; the comment shows the `sbatch` command line.
pub fn script(a: &ArrayRun, output: &str, started: &str, run_ids: &[&str]) -> String {
    let abs_out = Path::new(&a.cwd).join(output);
    let args = sbatch_args(
        a,
        run_ids.len(),
        &abs_out.join("logs").display().to_string(),
    );
    let mut o = String::new();
    o.push_str("#!/bin/bash\n");
    o.push_str(&format!(
        "# expr: {} point(s) of `{}`, one Slurm array task each; submitted as\n#   sbatch {} THIS_SCRIPT\n",
        run_ids.len(),
        comment(&a.job_name),
        comment(&join(&args))
    ));
    o.push_str(&format!(
        "# Task I plans {} again (its content hash must still be the one below) and runs\n# run_ids[I] on its node; its events go to {}/RUN_ID.jsonl, which `expr run` merges.\n",
        comment(&quote(&a.file)),
        comment(&quote(&abs_out.join(TASKS_DIR).display().to_string()))
    ));
    if a.exclusive {
        o.push_str("# Points start servers on fixed ports: each task has its node(s) to itself (--exclusive).\n");
    }
    o.push_str("set -u\n");
    o.push_str(&format!("cd {} || exit 1\n", quote(&a.cwd)));
    o.push_str("run_ids=(\n");
    for id in run_ids {
        o.push_str(&format!("  {}\n", quote(id)));
    }
    o.push_str(")\n");
    let mut argv: Vec<String> = vec![a.expr.clone(), "__task".into(), a.file.clone()];
    for x in &a.sets {
        argv.extend(["--set".into(), x.clone()]);
    }
    for x in &a.only {
        argv.extend(["--only".into(), x.clone()]);
    }
    argv.extend([
        "--file-hash".into(),
        a.file_hash.clone(),
        "--output".into(),
        output.into(),
        "--started".into(),
        started.into(),
        "--grace".into(),
        a.grace.to_string(),
    ]);
    if let Some(n) = &a.noise {
        argv.extend(["--noise".into(), n.clone()]);
    }
    o.push_str(&format!(
        "exec {} --run-id \"${{run_ids[$SLURM_ARRAY_TASK_ID]}}\"\n",
        join(&argv)
    ));
    o
}

/// The `sbatch` arguments of one array.
fn sbatch_args(a: &ArrayRun, n: usize, logs: &str) -> Vec<String> {
    let mut v = crate::exec::slurm::sbatch_args(&a.alloc, &a.job_name, &a.comment, n, logs);
    if a.exclusive {
        v.push("--exclusive".into());
    }
    v
}

/// Job states in which Slurm, not the command, ended a task.
const ENDED_BY_SLURM: &[&str] = &[
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "CANCELLED",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
];

/// What a fragment holds: its events (each as the task wrote it, which is what is merged into
/// the journal, and typed) and whether the task finished writing it.
struct Fragment {
    events: Vec<(Value, RunEvent)>,
    ended: bool,
}

fn read_fragment(path: &Path) -> Fragment {
    let events: Vec<(Value, RunEvent)> = journal::raw(path)
        .into_iter()
        .map(|v| (v.clone(), RunEvent::from_value(v)))
        .collect();
    let ended = events.iter().any(|(_, e)| matches!(e, RunEvent::End(_)));
    Fragment { events, ended }
}

/// Array mode: the points that run as the tasks of Slurm arrays, watched and merged by the
/// submitting run. What it is given: the recorder, the array's settings and the options that
/// bear on it.
pub(in crate::exec) struct ArrayMode<'r, 'a> {
    pub rec: &'r mut Recorder<'a>,
    pub a: ArrayRun,
    pub resume: bool,
    pub fail_fast: bool,
    pub skip: Skip,
}

impl<'a> ArrayMode<'_, 'a> {
    /// The journal of the run being resumed, as it is now (nothing without `--resume`).
    fn resumed_events(&self) -> Vec<RunEvent> {
        if self.resume {
            journal::events(&self.rec.dir.join(crate::results::JOURNAL))
        } else {
            Vec::new()
        }
    }

    /// The campaign as the journal stands now (empty unless resumed).
    fn campaign(&self, fps: &BTreeMap<String, String>) -> Campaign<'a> {
        let earlier = self.resumed_events();
        let lost = crate::exec::run::adaptive::Numbers {
            exp: self.rec.exp,
            dir: &self.rec.dir,
            fresh: false,
        }
        .lost(self.rec.plan, &earlier);
        Campaign::new(self.rec.plan, fps, &earlier, lost)
    }

    /// The points as the tasks of one array job.
    pub(in crate::exec) fn run(&mut self, fps: &BTreeMap<String, String>) -> i32 {
        let a = self.a.clone();
        // build and test steps: each a one-node srun job of its own, before any array
        let fingerprint = {
            let before = self.campaign(fps);
            if let Some(code) = self.rec.run_setup(self.skip, true, &before.kept()) {
                return code;
            }
            before.fingerprint
        };
        let points: Vec<&PlanPoint> = self.rec.plan.points.iter().collect();
        // a run that is not a resume (`--force` into an old result directory) must not take an
        // earlier run's fragments for its own: they are set aside
        if !self.resume && !self.rec.set_aside_fragments() {
            return exit_codes::INTERNAL;
        }
        // fragments an earlier run of this directory did not merge (it was killed) count now
        // (each with the command hash and code fingerprint of the array that ran it: a point
        // whose command changed since runs again)
        if self.resume {
            let mut submitted: std::collections::HashMap<String, (String, String)> =
                std::collections::HashMap::new();
            for e in journal::events(&self.rec.dir.join("journal.jsonl")) {
                let RunEvent::SlurmArray(e) = e else {
                    continue;
                };
                for (id, h) in e.run_ids.into_iter().zip(e.command_hashes) {
                    submitted.insert(id, (h, e.fingerprint.clone()));
                }
            }
            for p in &points {
                let f = fragment(&self.rec.dir, &p.run_id);
                if f.exists() {
                    let (h, fp) = submitted.get(&p.run_id).cloned().unwrap_or_default();
                    self.rec.merge(p, &f, None, &fp, &h);
                }
            }
        }
        // (the fragments just merged are the earlier run's too)
        let campaign = self.campaign(fps);
        let mut todo: Vec<&PlanPoint> = Vec::new();
        for p in points {
            match campaign.next(p, self.resume) {
                Next::Keep(e) => self.rec.keep(e, p, true),
                _ => todo.push(p),
            }
        }
        if todo.is_empty() {
            return exit_codes::OK;
        }
        let made = std::fs::create_dir_all(self.rec.dir.join(TASKS_DIR))
            .and_then(|_| std::fs::create_dir_all(self.rec.dir.join(MERGED_DIR)));
        if let Err(e) = made {
            self.rec.progress.line(&format!(
                "error: cannot make {}: {e}",
                self.rec.dir.join(TASKS_DIR).display()
            ));
            return exit_codes::INTERNAL;
        }
        // an array holds at most MaxArraySize tasks: more points go in arrays one after another
        let most = crate::exec::slurm::max_array_size().unwrap_or(1001).max(1);
        let chunks: Vec<&[&PlanPoint]> = todo.chunks(most).collect();
        let mut code = exit_codes::OK;
        for (k, chunk) in chunks.iter().enumerate() {
            let c = self.submit_and_watch(&a, chunk, &fingerprint, k + 1, chunks.len());
            match c {
                exit_codes::OK => {}
                exit_codes::POINT_FAILED if !self.fail_fast => code = c,
                _ => {
                    // interrupted, --fail-fast, or the array could not be made: the arrays
                    // after this one are not submitted
                    let why = if c == exit_codes::INTERRUPTED {
                        Reason::RunInterrupted
                    } else {
                        Reason::EarlierArrayStopped
                    };
                    let rest = chunks[k + 1..].iter().flat_map(|c| c.iter());
                    self.rec.publish(RunEvent::NotRun(event::NotRun {
                        run_ids: rest.map(|p| p.run_id.clone()).collect(),
                        status: if c == exit_codes::INTERRUPTED {
                            "interrupted"
                        } else {
                            "failed"
                        }
                        .into(),
                        reason: why.render(Lang::En),
                        cause: Some(why),
                    }));
                    return c;
                }
            }
        }
        code
    }

    /// One array: its script, `sbatch`, and the merge of its tasks.
    fn submit_and_watch(
        &mut self,
        a: &ArrayRun,
        todo: &[&PlanPoint],
        fingerprint: &str,
        k: usize,
        of: usize,
    ) -> i32 {
        let n = std::fs::read_dir(self.rec.dir.join("runtime/array"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("job-"))
                    .count()
            })
            .unwrap_or(0)
            + 1;
        let script_path = self.rec.dir.join(format!("runtime/array/job-{n}.sh"));
        let ids: Vec<&str> = todo.iter().map(|p| p.run_id.as_str()).collect();
        let text = script(a, &self.rec.plan.output, &self.rec.plan.started, &ids);
        if let Err(e) = std::fs::write(&script_path, &text) {
            self.rec
                .progress
                .line(&format!("error: cannot write the array's script: {e}"));
            return exit_codes::INTERNAL;
        }
        let logs = std::path::Path::new(&a.cwd)
            .join(&self.rec.plan.output)
            .join("logs");
        let args = sbatch_args(a, todo.len(), &logs.display().to_string());
        let job = match crate::exec::slurm::submit(&args, &script_path) {
            Ok(j) => j,
            Err(e) => {
                self.rec.progress.line(&format!("error: {e}"));
                self.rec.publish(RunEvent::NotRun(event::NotRun {
                    run_ids: todo.iter().map(|p| p.run_id.clone()).collect(),
                    status: "failed".into(),
                    reason: e.clone(),
                    cause: Some(Reason::SubmitFailed { error: e }),
                }));
                return exit_codes::PREFLIGHT;
            }
        };
        self.rec
            .journal
            .emit(&RunEvent::SlurmArray(event::SlurmArray {
                job: job.clone(),
                alloc: a.alloc.name.clone(),
                tasks: todo.len(),
                throttle: a.alloc.throttle,
                script: script_path.display().to_string(),
                run_ids: ids.iter().map(|s| s.to_string()).collect(),
                array: k,
                arrays: of,
                command_hashes: todo
                    .iter()
                    .map(|p| crate::exec::state::point_hash(p))
                    .collect(),
                fingerprint: fingerprint.to_string(),
            }));
        self.rec.progress.line(&format!(
            "array job {job}{}: {} task(s){}",
            if of > 1 {
                format!(" ({k} of {of})")
            } else {
                String::new()
            },
            todo.len(),
            a.alloc
                .throttle
                .map(|k| format!(", at most {k} at once"))
                .unwrap_or_default()
        ));
        self.watch_array(&job, todo, fingerprint)
    }

    /// Merge tasks as they end until the array has left the queue.
    fn watch_array(&mut self, job: &str, todo: &[&PlanPoint], fingerprint: &str) -> i32 {
        let mut pending: BTreeMap<usize, &PlanPoint> = todo.iter().copied().enumerate().collect();
        let index: std::collections::HashMap<&str, usize> = todo
            .iter()
            .enumerate()
            .map(|(i, p)| (p.run_id.as_str(), i))
            .collect();
        let mut failed = 0;
        let mut asked = Instant::now();
        let mut queue_empty_seen = false;
        let tasks_dir = self.rec.dir.join(TASKS_DIR);
        loop {
            // only the fragments that exist: tasks that have not started have none, and merged
            // ones were moved away
            let done: Vec<usize> = std::fs::read_dir(&tasks_dir)
                .map(|d| {
                    d.flatten()
                        .filter_map(|e| {
                            let name = e.file_name().to_string_lossy().into_owned();
                            let i = *index.get(name.strip_suffix(".jsonl")?)?;
                            (pending.contains_key(&i) && read_fragment(&e.path()).ended)
                                .then_some(i)
                        })
                        .collect()
                })
                .unwrap_or_default();
            for i in done {
                if let Some(p) = pending.remove(&i) {
                    let h = crate::exec::state::point_hash(p);
                    let st = self.rec.merge(
                        p,
                        &fragment(&self.rec.dir, &p.run_id),
                        Some(&format!("{job}_{i}")),
                        fingerprint,
                        &h,
                    );
                    if st != "ok" {
                        failed += 1;
                    }
                }
            }
            if pending.is_empty() {
                break;
            }
            let stop = if let Some(s) = self.rec.interrupted() {
                Some((
                    Reason::Signal {
                        signal: format!("{s:?}"),
                    },
                    "interrupted",
                    exit_codes::INTERRUPTED,
                ))
            } else if self.fail_fast && failed > 0 {
                Some((Reason::FailFast, "failed", exit_codes::POINT_FAILED))
            } else {
                None
            };
            if let Some((why, status, code)) = stop {
                self.rec.progress.line(&format!(
                    "stopping: {}: cancelling array job {job}",
                    why.render(Lang::En)
                ));
                if let Err(e) = crate::exec::slurm::cancel(job) {
                    self.rec.progress.line(&format!("warning: {e}"));
                }
                self.end_tasks(
                    job,
                    &pending,
                    fingerprint,
                    Some((status, Reason::NotRun { why: Box::new(why) })),
                );
                return code;
            }
            if queue_empty_seen {
                // the queue no longer holds the array: what is not merged ended without its point
                self.end_tasks(job, &pending, fingerprint, None);
                failed += pending.len();
                break;
            }
            if asked.elapsed() >= Duration::from_millis(500) {
                asked = Instant::now();
                // once empty, one more pass merges what the last tasks wrote
                queue_empty_seen =
                    crate::exec::slurm::array_tasks(job).is_some_and(|v| v.is_empty());
                continue;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if failed > 0 {
            exit_codes::POINT_FAILED
        } else {
            exit_codes::OK
        }
    }

    /// Tasks that left the queue (or were cancelled) unmerged: what their fragment holds, else
    /// the state Slurm gives them.
    fn end_tasks(
        &mut self,
        job: &str,
        pending: &BTreeMap<usize, &PlanPoint>,
        fingerprint: &str,
        instead: Option<(&str, Reason)>,
    ) {
        for (i, p) in pending {
            let task = format!("{job}_{i}");
            let f = fragment(&self.rec.dir, &p.run_id);
            let has_point = read_fragment(&f)
                .events
                .iter()
                .any(|(_, e)| matches!(e, RunEvent::Point(_)));
            if has_point {
                let h = crate::exec::state::point_hash(p);
                self.rec.merge(p, &f, Some(&task), fingerprint, &h);
                continue;
            }
            let (status, reason) = match &instead {
                Some((st, why)) => (st.to_string(), why.clone()),
                None => {
                    let state = crate::exec::slurm::state(&task);
                    let log = self.rec.dir.join(format!("logs/slurm-{task}.out"));
                    // a task with no output never started: its reason is why it was pending
                    let started = log.exists() || f.exists();
                    let why = match (&state, started) {
                        (Some((st, r)), false) => Reason::TaskNeverStarted {
                            task: task.clone(),
                            state: st.clone(),
                            pending: r.clone(),
                        },
                        (Some((st, r)), true) => Reason::SlurmEnded {
                            job: task.clone(),
                            task: true,
                            state: st.clone(),
                            why: r.clone(),
                        },
                        (None, _) => Reason::TaskLost { task: task.clone() },
                    };
                    if let Some((st, r)) = &state {
                        self.rec.journal.emit(&RunEvent::Slurm(event::Slurm {
                            job: task.clone(),
                            state: st.clone(),
                            reason: r.clone(),
                            run_id: Some(p.run_id.clone()),
                        }));
                    }
                    let reason = if log.exists() {
                        why.and(Reason::TaskOutput {
                            log: log.display().to_string(),
                        })
                    } else {
                        why
                    };
                    ("failed".to_string(), reason)
                }
            };
            if f.exists() {
                self.rec.merge_events(&f, &task);
            }
            self.rec.publish(RunEvent::Point(event::Point {
                fingerprint: Some(fingerprint.to_string()),
                task: Some(task.clone()),
                ..crate::exec::state::point_event(p, &status, reason)
            }));
        }
        self.rec.write_manifest();
    }
}

/// Merging a task's fragment: what array mode and `--jobs` share.
impl Recorder<'_> {
    /// Fragments an earlier run left (no merged event stands for them) moved to
    /// `runtime/array/superseded-<time>`; false (said) when they cannot be.
    pub(in crate::exec) fn set_aside_fragments(&mut self) -> bool {
        let tasks_dir = self.dir.join(TASKS_DIR);
        if !std::fs::read_dir(&tasks_dir).is_ok_and(|mut d| d.next().is_some()) {
            return true;
        }
        let aside = self.dir.join(format!(
            "runtime/array/superseded-{}",
            chrono::Local::now().format("%Y%m%d%H%M%S%.f")
        ));
        if let Err(e) = std::fs::rename(&tasks_dir, &aside) {
            self.progress.line(&format!(
                "error: cannot set aside the earlier run's {}: {e}",
                tasks_dir.display()
            ));
            return false;
        }
        true
    }

    /// Append a fragment's events to the journal, marked with their task; the fragment is kept
    /// in `runtime/array/merged/`.
    pub(in crate::exec) fn merge_events(&mut self, f: &Path, task: &str) -> Vec<(Value, RunEvent)> {
        let mut events = read_fragment(f).events;
        // each as the task wrote it (its own time), with its task added last; the point is the
        // caller's to append
        let mut machines = Vec::new();
        for (raw, e) in &mut events {
            if matches!(e, RunEvent::End(_)) {
                continue;
            }
            raw["task"] = json!(task);
            if !matches!(e, RunEvent::Point(_)) {
                self.journal.append(raw);
            }
            if let RunEvent::Machine(m) = e {
                m.task = Some(task.to_string());
                machines.push(m.clone());
            }
        }
        // each task's machine beside preflight's in deployment.md: the node it got
        self.record_task_machines(&machines);
        if let Some(name) = f.file_name() {
            let _ = std::fs::create_dir_all(self.dir.join(MERGED_DIR));
            let _ = std::fs::rename(f, self.dir.join(MERGED_DIR).join(name));
        }
        events
    }

    /// Merge one task's fragment: its events into the journal, its point into the manifest.
    /// The point's identity is the submitting run's (command hash, code fingerprint).
    pub(in crate::exec) fn merge(
        &mut self,
        p: &PlanPoint,
        f: &Path,
        task: Option<&str>,
        fingerprint: &str,
        hash: &str,
    ) -> String {
        let task = task.map(str::to_string).unwrap_or_else(|| {
            read_fragment(f)
                .events
                .iter()
                .find_map(|(_, e)| match e {
                    RunEvent::Task(t) => Some(match (&t.array_job, &t.array_task) {
                        (Some(j), Some(i)) => format!("{j}_{i}"),
                        _ if t.job.is_empty() => "?".to_string(),
                        _ => t.job.clone(),
                    }),
                    _ => None,
                })
                .unwrap_or_else(|| "?".into())
        });
        let events = self.merge_events(f, &task);
        let point = events
            .into_iter()
            .rev()
            .find(|(_, e)| matches!(e, RunEvent::Point(_)))
            .map(|(raw, _)| raw);
        let Some(mut point) = point else {
            return "missing".into();
        };
        point["command_hash"] = json!(hash);
        point["fingerprint"] = json!(fingerprint);
        let mut status = point["status"].as_str().unwrap_or("failed").to_string();
        // the task's reason as data (its English text when the task wrote none)
        let mut reason = point
            .get("cause")
            .and_then(|c| serde_json::from_value::<Reason>(c.clone()).ok())
            .unwrap_or_else(|| Reason::Text {
                text: point["reason"].as_str().unwrap_or("").to_string(),
            });
        // a point that failed because this run was interrupted (scancel TERMs its steps) was
        // interrupted, as in a local run
        if status == "failed" && self.interrupted().is_some() {
            status = "interrupted".into();
            reason = Reason::InterruptedWhileRan.and(reason);
            point["status"] = json!(status);
            point["reason"] = json!(reason.render(Lang::En));
            point["cause"] = json!(reason);
        }
        // a task Slurm ended (its time limit, memory, node) saw its job only as COMPLETING:
        // the final state is known now
        if status == "failed" && task.contains('_') {
            if let Some((st, why)) = crate::exec::slurm::state(&task)
                .filter(|(st, _)| ENDED_BY_SLURM.contains(&st.as_str()))
            {
                // what the task said after its own job's state
                let own = match reason {
                    Reason::Join { mut parts }
                        if matches!(
                            parts.first(),
                            Some(Reason::SlurmEnded { task: false, .. })
                        ) =>
                    {
                        parts.remove(0);
                        Reason::join(parts)
                    }
                    Reason::Text { text } => Reason::Text {
                        text: text
                            .strip_prefix("Slurm job ")
                            .and_then(|r| r.split_once("; ").map(|x| x.1))
                            .unwrap_or(&text)
                            .to_string(),
                    },
                    r => r,
                };
                reason = Reason::SlurmEnded {
                    job: task.clone(),
                    task: true,
                    state: st.clone(),
                    why: why.clone(),
                }
                .and(own);
                self.journal.emit(&RunEvent::Slurm(event::Slurm {
                    job: task.clone(),
                    state: st.clone(),
                    reason: why.clone(),
                    run_id: Some(p.run_id.clone()),
                }));
                point["reason"] = json!(reason.render(Lang::En));
                point["cause"] = json!(reason);
            }
        }
        if point.get("log").is_none_or(Value::is_null) {
            let log = self.launch_log(p);
            if !log.is_empty() {
                point["log"] = json!(log);
            }
        }
        self.publish_merged(point);
        status
    }
}
