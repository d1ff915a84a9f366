//! One matrix point: config files, servers with readiness, clients together, collection,
//! rank-CSV recovery and teardown.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::exec::backend::host::{self, Proc};
use crate::exec::state::{connect, tail, Overhead, Recorder, READY_PROBE, RECORD_AFTER, WAKE};

use crate::plan::{Phase, PlanPoint, Ready, Step};
use crate::results::event::{self, RunEvent};
use crate::results::reason::{Evidence, NotReady, Probe, Reason};

/// The reason of a point recovered from complete output: the exit, the failed log's telling
/// line, and what was checked (the one rule, `crate::results::collect::recovered_reason`).
fn recovered(log: Option<&Path>, code: Option<i32>, evidence: Evidence) -> Reason {
    let line = log
        .map(crate::results::collect::failure_line)
        .unwrap_or_default();
    Reason::Recovered {
        exit: code.map(i64::from),
        line,
        evidence,
    }
}

/// A point's outcome: its status, exit code and why (none when it is ok and nothing was said).
pub(in crate::exec) type Outcome = (String, Option<i32>, Option<Reason>);
/// How one client ended: its status (`ok`, `failed`, `timeout`, `interrupted`) and exit code.
type Ended = (String, i32);

/// A path as the reason says it.
fn shown(p: &Path) -> String {
    p.display().to_string()
}

impl<'a> Recorder<'a> {
    /// One matrix point: config, servers, clients together, collect, teardown. Its outcome, and
    /// the timing of its launch steps (from the first spawn to the last exit, the shell's spawn
    /// time of `shell_overhead` beside it) when every one of them was reaped. Each stage is a
    /// method of its own below, in the order they run.
    pub(in crate::exec) fn run_point(
        &mut self,
        p: &PlanPoint,
        shell_overhead: &HashMap<(String, String), Overhead>,
    ) -> (Outcome, Option<Value>) {
        let mut timing: Option<Value> = None;
        let mut servers: Vec<(usize, Proc)> = Vec::new();
        let mut problem = self.output_dirs(p);
        if problem.is_none() {
            problem = self.write_configs(p);
        }
        if problem.is_none() {
            problem = self.start_servers(p, &mut servers);
        }
        if problem.is_none() {
            problem = self.prepare_and_warm(p);
        }
        let mut outcome: Outcome = ("ok".into(), Some(0), None);
        // the log of the launch step whose failure is the outcome's
        let mut failed_log: Option<PathBuf> = None;
        if problem.is_none() {
            (outcome, failed_log, timing) = self.run_clients(p, &mut servers, shell_overhead);
            // what the point ran on: the report says which points ran at once, and on what
            if let Some(t) = timing.as_mut() {
                let on: Vec<String> = super::pool::resources(p)
                    .into_iter()
                    .map(|(h, g)| match g {
                        Some(g) => format!("{h} GPU {g}"),
                        None => h,
                    })
                    .collect();
                t["on"] = serde_json::json!(on);
            }
            self.cleanup_steps(p, &mut outcome);
            self.collect_steps(p, &mut outcome);
        }
        if problem.is_none() {
            self.recover_from_ranks(p, &mut outcome, failed_log.as_deref());
            self.recover_from_own_report(p, &mut outcome, failed_log.as_deref());
        }
        self.teardown(p, servers);
        let mut result = problem.unwrap_or(outcome);
        // a step that the signal which stopped the run reached first (systemd, `kill 0`, Slurm
        // signal every process at once): the point was interrupted, it did not fail
        if result.0 == "failed" {
            let stopped = result.2.as_ref().and_then(|r| {
                let (step, host, code) = r.ended_step()?;
                crate::exec::signals::came_with(code).then(|| Reason::Interrupted {
                    step: step.to_string(),
                    host: host.to_string(),
                })
            });
            if let Some(r) = stopped {
                result = ("interrupted".into(), result.1, Some(r));
            }
        }
        // a step that failed on a full disk says so (its own message may only be `exit 1`)
        if result.0 == "failed" && crate::exec::state::disk_full(&self.dir) {
            result.2 = Some(
                result
                    .2
                    .take()
                    .unwrap_or(Reason::Text {
                        text: String::new(),
                    })
                    .amend(Reason::DiskFull),
            );
        }
        (result, timing)
    }

    /// A point that runs again (`--resume`): its earlier attempt's logs and outputs move to
    /// `runtime/earlier/<run id>/` (the last earlier attempt's), so that nothing of it is read
    /// as this attempt's — a log of another pool member has another name and was read beside
    /// this attempt's, a file this attempt does not write again was read as its own.
    fn set_aside_earlier(&mut self, p: &PlanPoint) {
        if let Some(started) = &mut self.began_empty {
            if started.insert(p.run_id.clone()) {
                return;
            }
        }
        let logs = crate::results::collect::logs_for(&self.dir, &p.run_id, "");
        let out = self.dir.join("outputs").join(&p.run_id);
        let outputs = std::fs::read_dir(&out).is_ok_and(|mut d| d.next().is_some());
        if logs.is_empty() && !outputs {
            return;
        }
        let aside = self.dir.join("runtime/earlier").join(&p.run_id);
        let _ = std::fs::remove_dir_all(&aside);
        let moved = std::fs::create_dir_all(aside.join("logs")).and_then(|_| {
            for l in &logs {
                if let Some(name) = l.file_name() {
                    std::fs::rename(l, aside.join("logs").join(name))?;
                }
            }
            if outputs {
                std::fs::rename(&out, aside.join("outputs"))?;
            }
            Ok(())
        });
        match moved {
            Ok(()) => self.progress.line(&format!(
                "{}: the earlier attempt's {} log(s){} set aside in {}",
                p.run_id,
                logs.len(),
                if outputs { " and outputs" } else { "" },
                aside.display()
            )),
            Err(e) => self.progress.line(&format!(
                "warning: {}: cannot set aside the earlier attempt's files in {}: {e}",
                p.run_id,
                aside.display()
            )),
        }
    }

    /// The point's output directory (`{{ outdir }}`) on every host, before anything runs.
    fn output_dirs(&mut self, p: &PlanPoint) -> Option<Outcome> {
        let mut problem: Option<Outcome> = None;
        self.set_aside_earlier(p);
        let _ = std::fs::create_dir_all(self.dir.join("outputs").join(&p.run_id));
        let mut remote: Vec<&str> = p
            .steps
            .iter()
            .map(|s| s.host.as_str())
            .filter(|h| !self.host(h).is_local())
            .collect();
        remote.sort();
        remote.dedup();
        for h in remote {
            let host = self.host(h);
            let path = format!("{}/outputs/{}", self.plan.output, p.run_id);
            let made = if let Some(a) = self.ssh.agent(host) {
                a.mkdir(&host.repo, &path).map_err(|e| e.to_string())
            } else {
                let script = format!(
                    "cd {} && mkdir -p {}",
                    crate::util::shell::quote(&host.repo),
                    crate::util::shell::quote(&path)
                );
                let ran = self.ssh.run(host, &script, None, Duration::from_secs(30));
                ran.map(|_| ()).map_err(|e| e.to_string())
            };
            if let Err(error) = made {
                let (path, host) = (path.clone(), h.to_string());
                let reason = Reason::NoOutputDir { path, host, error };
                problem = Some(("failed".into(), None, Some(reason)));
            }
        }
        problem
    }

    /// The point's config files, each journaled as written.
    fn write_configs(&mut self, p: &PlanPoint) -> Option<Outcome> {
        let run_id = p.run_id.as_str();
        for s in p.steps.iter().filter(|s| s.phase == Phase::Config) {
            if let Err(e) = self.write_config(s) {
                return Some((
                    "failed".into(),
                    None,
                    Some(Reason::ConfigFailed {
                        step: s.id.clone(),
                        host: s.host.clone(),
                        error: e,
                    }),
                ));
            }
            self.journal.emit(&RunEvent::Step(event::Step {
                run_id: Some(Some(run_id.to_string())),
                step: s.id.clone(),
                host: s.host.clone(),
                phase: Some("config".into()),
                status: Some("ok".into()),
                file: Some(s.file.as_ref().map(|f| f.path.clone())),
                ..Default::default()
            }));
        }
        None
    }

    /// The point's servers, in order, each ready before the next: `servers` gets each one
    /// started (for teardown, whatever happens next).
    fn start_servers(
        &mut self,
        p: &PlanPoint,
        servers: &mut Vec<(usize, Proc)>,
    ) -> Option<Outcome> {
        let run_id = p.run_id.as_str();
        let mut problem: Option<Outcome> = None;
        if problem.is_none() {
            for (i, s) in p.steps.iter().enumerate() {
                if !s.background {
                    continue;
                }
                self.progress
                    .status(&format!("{run_id}: start {} on {}", s.id, s.host));
                let log = self.log_path(s);
                let started = Instant::now();
                // A port that already answers would make readiness succeed for the wrong process.
                if let Some(Ready::Tcp { ip, port }) = s.ready.as_deref() {
                    if connect(ip, *port) {
                        problem = Some((
                            "failed".into(),
                            None,
                            Some(Reason::PortInUse {
                                step: s.id.clone(),
                                host: s.host.clone(),
                                ip: ip.clone(),
                                port: *port,
                            }),
                        ));
                        break;
                    }
                }
                match self.spawn_recorded(s, Some(run_id)) {
                    Err(e) => {
                        problem = Some((
                            "failed".into(),
                            None,
                            Some(Reason::ServerNotStarted {
                                step: s.id.clone(),
                                host: s.host.clone(),
                                error: e.to_string(),
                            }),
                        ));
                        break;
                    }
                    Ok(mut proc_) => {
                        let ready = self.wait_ready(s, &mut proc_);
                        servers.push((i, proc_));
                        // a sampler that does not start is no telemetry, not a failed point
                        // (the report says why from its log)
                        if let (true, Err(why)) = (s.sampler, &ready) {
                            if !matches!(why, NotReady::Interrupted) {
                                self.step_event(s, Some(run_id), "ended", -1, &log, started, None);
                                continue;
                            }
                        }
                        if let Err(why) = ready {
                            // a signal while it came up stops the point, it does not fail it
                            let st = if matches!(why, NotReady::Interrupted) {
                                "interrupted"
                            } else {
                                "failed"
                            };
                            self.step_event(s, Some(run_id), st, -1, &log, started, None);
                            problem = Some((
                                st.into(),
                                None,
                                Some(Reason::ServerNotReady {
                                    step: s.id.clone(),
                                    host: s.host.clone(),
                                    why,
                                    log: shown(&log),
                                    tail: tail(&log, 10),
                                }),
                            ));
                            break;
                        }
                        self.step_event(s, Some(run_id), "ready", 0, &log, started, None);
                    }
                }
            }
        }
        problem
    }

    /// An untimed step (prepare, warmup, cleanup) to its end: `None` when it ended ok, else the
    /// point's outcome with the step's failure as its reason.
    fn run_untimed(&mut self, s: &Step, run_id: &str) -> Option<Outcome> {
        let (st, code) = self.run_sync(s, Some(run_id));
        if st == "ok" {
            return None;
        }
        let status = if st == "interrupted" {
            "interrupted"
        } else {
            "failed"
        };
        let reason = Reason::StepFailed {
            phase: s.phase.name().to_string(),
            step: s.id.clone(),
            host: s.host.clone(),
            status: st.clone(),
            code: i64::from(code),
            log: shown(&self.log_path(s)),
        };
        Some((status.into(), Some(code), Some(reason)))
    }

    /// Warmup runs, each after its prepare steps, then the timed run's prepare steps: in plan
    /// order, one at a time, not timed.
    fn prepare_and_warm(&mut self, p: &PlanPoint) -> Option<Outcome> {
        let run_id = p.run_id.as_str();
        let mut problem: Option<Outcome> = None;
        if problem.is_none() {
            for s in p
                .steps
                .iter()
                .filter(|s| matches!(s.phase, Phase::Prepare | Phase::Warmup))
            {
                if let Some(failed) = self.run_untimed(s, run_id) {
                    problem = Some(failed);
                    break;
                }
            }
        }
        problem
    }

    /// The clients, all together, to their ends: the point's outcome, the log of the client
    /// whose failure it is, and the launch steps' timing.
    fn run_clients(
        &mut self,
        p: &PlanPoint,
        servers: &mut [(usize, Proc)],
        shell_overhead: &HashMap<(String, String), Overhead>,
    ) -> (Outcome, Option<PathBuf>, Option<Value>) {
        let mut outcome: Outcome = ("ok".into(), Some(0), None);
        let (mut running, mut unrecorded) = self.launch_clients(p, &mut outcome);
        let (done, died) = self.wait_clients(p, servers, &mut running, &mut unrecorded);
        let timing = self.launch_timing(&running, shell_overhead);
        let failed_log = self.client_outcomes(p, &mut running, &done, &mut outcome);
        self.server_death(p, servers, &running, died, &mut outcome);
        (outcome, failed_log, timing)
    }

    /// Start every launch step, recording each one's process as `spawn_step` says (a step
    /// recorded at once first records those waiting before it). A step that does not start
    /// fails the point.
    fn launch_clients<'p>(
        &mut self,
        p: &'p PlanPoint,
        outcome: &mut Outcome,
    ) -> (Vec<(&'p Step, Proc, Instant)>, Vec<bool>) {
        let run_id = p.run_id.as_str();
        let launches: Vec<&Step> = p
            .steps
            .iter()
            .filter(|s| s.phase == Phase::Launch)
            .collect();
        let mut running: Vec<(&Step, Proc, Instant)> = Vec::new();
        // the steps whose process record waits until they have started (`spawn_step`)
        let mut unrecorded: Vec<bool> = Vec::new();
        for s in &launches {
            // a step that is recorded at once may take long to start (an ssh host's
            // remote group): what waits for its record is recorded first
            if !self.defers_record(s) {
                for (k, (s, pr, _)) in running.iter().enumerate() {
                    if unrecorded[k] {
                        self.record_started(s, Some(run_id), pr);
                        unrecorded[k] = false;
                    }
                }
            }
            match self.spawn_step(s, Some(run_id), true) {
                Ok(pr) => {
                    running.push((s, pr, Instant::now()));
                    unrecorded.push(self.defers_record(s));
                }
                Err(e) => {
                    *outcome = (
                        "failed".into(),
                        None,
                        Some(Reason::ClientNotStarted {
                            step: s.id.clone(),
                            error: e.to_string(),
                        }),
                    )
                }
            }
        }
        (running, unrecorded)
    }

    /// Wait for the clients to end (or time out, or a signal): each one's status and code, and
    /// the first server that died meanwhile. Logs are streamed (`--verbose`) as they grow.
    fn wait_clients(
        &mut self,
        p: &PlanPoint,
        servers: &mut [(usize, Proc)],
        running: &mut [(&Step, Proc, Instant)],
        unrecorded: &mut [bool],
    ) -> (Vec<Option<Ended>>, Option<(usize, i32)>) {
        let run_id = p.run_id.as_str();
        self.show_running();
        // --verbose streams clients and servers alike
        let streams: Vec<(String, String, PathBuf)> = p
            .steps
            .iter()
            .filter(|s| s.phase == Phase::Launch || s.background)
            .map(|s| (s.host.clone(), s.id.clone(), self.log_path(s)))
            .collect();
        let mut done: Vec<Option<Ended>> = vec![None; running.len()];
        // a server that exits while the clients run: the point's numbers are not the
        // server's (the first death is named)
        let mut died: Option<(usize, i32)> = None;
        loop {
            let seen = host::exits_seen();
            let mut all = true;
            if died.is_none() {
                for (i, sp) in servers.iter_mut() {
                    if p.steps[*i].sampler {
                        continue;
                    }
                    if let Some(c) = sp.try_exit() {
                        died = Some((*i, c));
                        break;
                    }
                }
            }
            for (k, (s, pr, started)) in running.iter_mut().enumerate() {
                if done[k].is_some() {
                    continue;
                }
                pr.poll_remote_pgid();
                if let Some(c) = pr.try_exit() {
                    // srun exits 0 after Slurm killed the step on a failed node (or a code
                    // `exit-ok=` accepts)
                    let accepted = s.exit_is_ok(c, self.host(&s.host).runs_here());
                    let killed = accepted && self.killed_by_slurm(s).is_some();
                    let ok = accepted && !killed;
                    done[k] = Some((if ok { "ok" } else { "failed" }.into(), c));
                } else if started.elapsed() > Duration::from_secs(s.timeout_s.max(1) as u64) {
                    let host = self.host(&s.host);
                    crate::exec::backend::stop(&self.ssh, host, pr, self.grace());
                    done[k] = Some(("timeout".into(), -1));
                } else {
                    all = false;
                }
            }
            if all {
                break;
            }
            if self.interrupted().is_some() {
                for (k, (s, pr, _)) in running.iter_mut().enumerate() {
                    if done[k].is_none() {
                        let host = self.host(&s.host);
                        crate::exec::backend::stop(&self.ssh, host, pr, self.grace());
                        done[k] = Some(("interrupted".into(), crate::exec::signals::exit_code()));
                    }
                }
                break;
            }
            for (k, (s, pr, started)) in running.iter().enumerate() {
                if unrecorded[k] && started.elapsed() >= RECORD_AFTER {
                    self.record_started(s, Some(run_id), pr);
                    unrecorded[k] = false;
                }
            }
            for (h, id, log) in &streams {
                self.pump(h, id, log, false);
            }
            // the manifest's row of the point before, where its write was put off
            self.manifest_if_due();
            // woken by an exit; the timeout bounds how late a signal or deadline is seen
            // (or a deferred record is written)
            let wake = if unrecorded.contains(&true) {
                RECORD_AFTER
            } else {
                WAKE
            };
            host::wait_exits(seen, wake);
        }
        // what ended before its record: recorded now (its start time is not read: the pid
        // may be another's), before its step event
        for (k, (s, pr, _)) in running.iter().enumerate() {
            if unrecorded[k] {
                self.record_started(s, Some(run_id), pr);
            }
        }
        for (h, id, log) in &streams {
            self.pump(h, id, log, true);
        }
        (done, died)
    }

    /// The point's timing: its launch steps, from the first spawn to the last exit, with the
    /// shell's spawn time when every run step went through a measured shell; none unless every
    /// one was reaped.
    fn launch_timing(
        &self,
        running: &[(&Step, Proc, Instant)],
        shell_overhead: &HashMap<(String, String), Overhead>,
    ) -> Option<Value> {
        let mut timing: Option<Value> = None;
        let exits: Vec<(Instant, host::Exit)> = running
            .iter()
            .filter_map(|(_, pr, _)| pr.reaper.get().map(|e| (pr.started, e)))
            .collect();
        if !running.is_empty() && exits.len() == running.len() {
            let first = exits
                .iter()
                .map(|(s, _)| *s)
                .min()
                .unwrap_or_else(Instant::now);
            let last = exits.iter().map(|(_, e)| e.at).max().unwrap_or(first);
            let mut t = crate::exec::state::timing_json(
                last.saturating_duration_since(first),
                exits.iter().map(|(_, e)| e.user).sum(),
                exits.iter().map(|(_, e)| e.sys).sum(),
                peak_of(exits.iter().map(|(_, e)| e)),
                running.iter().all(|(s, _, _)| self.measured_there(&s.host)),
            );
            // the window on the wall clock (Unix ms), which telemetry samples are read over
            let wall = |at: Instant| {
                let back = Instant::now().saturating_duration_since(at);
                std::time::SystemTime::now()
                    .checked_sub(back)
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| d.as_secs_f64() * 1e3)
            };
            if let (Some(a), Some(b)) = (wall(first), wall(last)) {
                t["started_unix_ms"] = json!(a);
                t["ended_unix_ms"] = json!(b);
            }
            // the shell's spawn time, when every run step went through a measured shell
            let overheads: Vec<Overhead> = running
                .iter()
                .filter_map(|(s, _, _)| {
                    (!s.direct)
                        .then(|| shell_overhead.get(&(s.host.clone(), s.cwd.clone())))
                        .flatten()
                        .copied()
                })
                .collect();
            if !overheads.is_empty() && overheads.len() == running.len() {
                let o = overheads
                    .iter()
                    .max_by(|a, b| a.mean_ms.total_cmp(&b.mean_ms))
                    .copied()
                    .expect("not empty");
                t["shell_overhead_ms"] = json!(o.mean_ms);
                t["shell_overhead_sd_ms"] = json!(o.sd_ms);
                t["shell_overhead_runs"] = json!(o.runs);
                // each step's shell used CPU time of its own: theirs add up, as the steps' do
                let cpu: Option<Vec<(f64, f64)>> = overheads.iter().map(|o| o.cpu_ms).collect();
                if let (Some(cpu), false) = (cpu, t["user_ms"].is_null()) {
                    t["shell_overhead_user_ms"] = json!(cpu.iter().map(|c| c.0).sum::<f64>());
                    t["shell_overhead_sys_ms"] = json!(cpu.iter().map(|c| c.1).sum::<f64>());
                }
            }
            timing = Some(t);
        }
        timing
    }

    /// Each client's step event, what it left in its group stopped, and the point's outcome
    /// from the first that did not end ok; the log of that client.
    fn client_outcomes(
        &mut self,
        p: &PlanPoint,
        running: &mut [(&Step, Proc, Instant)],
        done: &[Option<Ended>],
        outcome: &mut Outcome,
    ) -> Option<PathBuf> {
        let run_id = p.run_id.as_str();
        let mut failed_log: Option<PathBuf> = None;
        for (k, (s, pr, _)) in running.iter_mut().enumerate() {
            let (st, code) = done[k].clone().unwrap_or(("failed".into(), -1));
            let host = self.host(&s.host);
            // what the step left running in its group (`sleep 9 &`) is stopped with it
            if !crate::exec::backend::alive_after(&self.ssh, host, pr)
                && !crate::exec::backend::stop(&self.ssh, host, pr, self.grace())
            {
                self.survivors.push(format!("{} on {}", s.id, s.host));
            }
            let log = self.log_path(s);
            let (started, exit) = (pr.started, pr.reaper.get());
            self.step_event(s, Some(run_id), &st, code, &log, started, exit);
            if st != "ok" && outcome.0 == "ok" || st == "interrupted" {
                let killed = if s.exit_is_ok(code, self.host(&s.host).runs_here()) {
                    self.killed_by_slurm(s)
                } else {
                    None
                };
                let reason = if st == "interrupted" {
                    Reason::Interrupted {
                        step: s.id.clone(),
                        host: s.host.clone(),
                    }
                } else if let Some(line) = killed {
                    Reason::KilledBySlurm {
                        step: s.id.clone(),
                        host: s.host.clone(),
                        line,
                    }
                } else {
                    // why, as its log ends (a build or serve failure shows its tail too)
                    Reason::ClientFailed {
                        step: s.id.clone(),
                        host: s.host.clone(),
                        timeout_s: (st == "timeout").then_some(s.timeout_s),
                        status: st.clone(),
                        code: i64::from(code),
                        command: s.command_line(),
                        log: shown(&log),
                        tail: tail(&log, 5),
                    }
                };
                failed_log = Some(log.clone());
                *outcome = (
                    if st == "interrupted" {
                        "interrupted".into()
                    } else {
                        "failed".into()
                    },
                    Some(code),
                    Some(reason),
                );
            } else if st == "ok" && code != 0 && outcome.0 == "ok" && outcome.1 == Some(0) {
                // ok on an exit its `exit-ok=` accepts: the point's exit code is that one
                outcome.1 = Some(code);
            }
        }
        failed_log
    }

    /// A server that exited while the clients ran (or before the last of them ended): the
    /// point's numbers are not the server's, and the outcome says so.
    fn server_death(
        &mut self,
        p: &PlanPoint,
        servers: &mut [(usize, Proc)],
        running: &[(&Step, Proc, Instant)],
        mut died: Option<(usize, i32)>,
        outcome: &mut Outcome,
    ) {
        let run_id = p.run_id.as_str();
        // the last look: a server that died before its last client ended (one that exits
        // once its clients are gone is not a death during the point)
        if died.is_none() {
            let last = running
                .iter()
                .filter_map(|(_, pr, _)| pr.reaper.get().map(|e| e.at))
                .max();
            for (i, sp) in servers.iter_mut() {
                if p.steps[*i].sampler {
                    continue;
                }
                if let Some(c) = sp.try_exit() {
                    let at = sp.reaper.get().map(|e| e.at);
                    if matches!((at, last), (Some(a), Some(l)) if a <= l) {
                        died = Some((*i, c));
                        break;
                    }
                }
            }
        }
        if let (Some((i, code)), false) = (died, outcome.0 == "interrupted") {
            let s = &p.steps[i];
            let log = self.log_path(s);
            let then = if outcome.0 == "ok" {
                None
            } else {
                Some(Box::new(outcome.2.take().unwrap_or(Reason::Text {
                    text: String::new(),
                })))
            };
            let reason = Reason::ServerDied {
                step: s.id.clone(),
                host: s.host.clone(),
                code: i64::from(code),
                then,
                log: shown(&log),
                tail: tail(&log, 10),
            };
            self.journal.emit(&RunEvent::ServerDied(event::ServerDied {
                run_id: Some(run_id.to_string()),
                step: s.id.clone(),
                host: s.host.clone(),
                code: Some(i64::from(code)),
            }));
            *outcome = ("failed".into(), Some(code), Some(reason));
        }
    }

    /// The cleanup steps after the timed run, not timed.
    fn cleanup_steps(&mut self, p: &PlanPoint, outcome: &mut Outcome) {
        let run_id = p.run_id.as_str();
        if outcome.0 != "interrupted" {
            for s in p.steps.iter().filter(|s| s.phase == Phase::Cleanup) {
                if let Some(failed) = self.run_untimed(s, run_id) {
                    if outcome.0 == "ok" {
                        *outcome = failed;
                    }
                }
            }
        }
    }

    /// The point's artifacts back from remote hosts.
    fn collect_steps(&mut self, p: &PlanPoint, outcome: &mut Outcome) {
        let run_id = p.run_id.as_str();
        if outcome.0 != "interrupted" {
            for s in p.steps.iter().filter(|s| s.phase == Phase::Collect) {
                let _ = std::fs::create_dir_all(self.dir.join("outputs").join(run_id));
                let (st, code) = self.run_sync(s, Some(run_id));
                if st != "ok" && outcome.0 == "ok" {
                    *outcome = (
                        if st == "interrupted" {
                            "interrupted"
                        } else {
                            "failed"
                        }
                        .into(),
                        Some(code),
                        Some(Reason::CollectFailed {
                            step: s.id.clone(),
                            log: shown(&self.log_path(&self.local_collect(s))),
                        }),
                    );
                }
            }
        }
    }

    /// A distributed parent that failed but left complete rank CSVs is verified and merged,
    /// and the failure is recorded; a successful run without a merged CSV is merged here.
    fn recover_from_ranks(
        &mut self,
        p: &PlanPoint,
        outcome: &mut Outcome,
        failed_log: Option<&Path>,
    ) {
        let run_id = p.run_id.as_str();
        if let Some(check) = &p.ranks {
            let parent_failed =
                outcome.0 == "failed" && outcome.2.as_ref().is_some_and(Reason::is_client);
            if outcome.0 == "ok" || parent_failed {
                match crate::results::ranks::verify(&self.dir, check) {
                    Ok(()) => {
                        let merged =
                            crate::results::ranks::merge(&self.dir, check).unwrap_or(false);
                        if parent_failed {
                            let reason = recovered(
                                failed_log,
                                outcome.1,
                                Evidence::Ranks {
                                    world: check.world,
                                    steps: check.steps,
                                    merged,
                                },
                            );
                            self.journal.emit(&RunEvent::Recovered(event::Recovered {
                                run_id: Some(run_id.to_string()),
                                reason: reason.render(crate::util::lang::Lang::En),
                            }));
                            *outcome = ("ok".into(), outcome.1, Some(reason));
                        }
                    }
                    Err(e) if parent_failed => {
                        outcome.2 = outcome
                            .2
                            .take()
                            .map(|r| r.amend(Reason::RanksCannotStandIn { error: e }))
                    }
                    Err(_) => {}
                }
            }
        }
    }

    /// A program that failed after writing a complete, self-consistent report of its own (the
    /// kind judges it): measured, and said so — the rule of `recovered_reason`.
    fn recover_from_own_report(
        &mut self,
        p: &PlanPoint,
        outcome: &mut Outcome,
        failed_log: Option<&Path>,
    ) {
        let run_id = p.run_id.as_str();
        if outcome.0 == "failed" && outcome.2.as_ref().is_some_and(Reason::is_client) {
            let bench = self.exp.benches.iter().find(|b| b.name == p.bench);
            let at = crate::results::collect::PointDir {
                dir: &self.dir,
                run_id: &p.run_id,
                lane: &p.lane,
                warmup: 0,
                logs: None,
            };
            let judged = bench.and_then(|b| {
                crate::kinds::of(b.kind)
                    .complete_output(&at, b, p)
                    .map(|r| (b, r))
            });
            match judged {
                Some((b, Ok(evidence))) => {
                    let reason = recovered(
                        failed_log,
                        outcome.1,
                        Evidence::Own {
                            text: evidence.clone(),
                        },
                    );
                    let strict = b
                        .settings
                        .get("strict")
                        .and_then(|s| s.val.as_bool())
                        .unwrap_or(false);
                    if strict {
                        outcome.2 = outcome.2.take().map(|r| r.and(Reason::Strict { evidence }));
                    } else {
                        self.journal.emit(&RunEvent::Recovered(event::Recovered {
                            run_id: Some(run_id.to_string()),
                            reason: reason.render(crate::util::lang::Lang::En),
                        }));
                        *outcome = ("ok".into(), outcome.1, Some(reason));
                    }
                }
                Some((_, Err(e))) => {
                    outcome.2 = outcome
                        .2
                        .take()
                        .map(|r| r.and(Reason::ReportCannotStandIn { error: e }))
                }
                None => {}
            }
        }
    }

    /// Teardown: the servers in reverse start order, always, and what left the point's process
    /// groups.
    fn teardown(&mut self, p: &PlanPoint, servers: Vec<(usize, Proc)>) {
        let run_id = p.run_id.as_str();
        for (i, mut pr) in servers.into_iter().rev() {
            let s = &p.steps[i];
            let host = self.host(&s.host);
            self.progress
                .status(&format!("{run_id}: stop {} on {}", s.id, s.host));
            let gone = crate::exec::backend::stop(&self.ssh, host, &mut pr, self.grace());
            // its scratch (a value store under /dev/shm) goes with it, once it is gone
            let removed = if gone {
                self.remove_scratch(host, &s.extra().scratch)
            } else {
                Vec::new()
            };
            self.journal.emit(&RunEvent::Stopped(event::Stopped {
                run_id: Some(run_id.to_string()),
                step: s.id.clone(),
                host: s.host.clone(),
                pgid: pr.local_pgid(),
                remote_pgid: pr.remote_pgid,
                gone,
                scratch_removed: removed,
            }));
            if !gone {
                self.survivors.push(format!("{} on {}", s.id, s.host));
            }
            if s.sampler {
                self.keep_samples(p, s);
            }
        }
        // what left the point's process groups goes too
        let mut hosts: Vec<String> = p.steps.iter().map(|s| s.host.clone()).collect();
        hosts.sort();
        hosts.dedup();
        let prefix = crate::exec::backend::escape::marker(&self.mark, Some(run_id));
        self.sweep_escaped(&hosts, &prefix, &format!("point {run_id}"));
    }

    /// A telemetry sampler's log, once it has stopped, as the point's samples:
    /// `outputs/<run id>/telemetry-<host>.csv`, its first line naming where it came from.
    fn keep_samples(&mut self, p: &PlanPoint, s: &Step) {
        let log = self.log_path(s);
        let to = self
            .dir
            .join(crate::results::OUTPUTS)
            .join(&p.run_id)
            .join(format!(
                "{}-{}.csv",
                crate::plan::telemetry::kind_of(&s.id),
                s.host
            ));
        let text = std::fs::read(&log).unwrap_or_default();
        let mut out = format!(
            "# {}: {} on {} (TZ=UTC)\n",
            crate::results::telemetry::SOURCE_MARK,
            // a program of several lines (the NVML sampler's) stays in the comment
            s.shell.as_deref().unwrap_or_default().replace('\n', "\n# "),
            s.host
        )
        .into_bytes();
        out.extend_from_slice(&text);
        if let Err(e) = crate::results::atomic::write(&to, &out) {
            self.progress.line(&format!(
                "warning: could not keep the samples of {}: {e}",
                s.id
            ));
        }
    }

    /// Remove a server's scratch paths on its host (only paths under the scratch root);
    /// returns the paths removed. A failure is said on the terminal, not fatal.
    pub(in crate::exec) fn remove_scratch(
        &mut self,
        host: &crate::model::Host,
        paths: &[String],
    ) -> Vec<String> {
        let paths: Vec<&String> = paths
            .iter()
            .filter(|p| crate::kind_api::step::is_scratch(p))
            .collect();
        if paths.is_empty() {
            return Vec::new();
        }
        let result = if host.runs_here() {
            paths
                .iter()
                .map(|p| crate::exec::backend::scratch::remove_local(p).map(|_| ()))
                .collect::<Result<Vec<()>, String>>()
                .map(|_| ())
        } else if host.is_local() {
            // a node of a Slurm allocation: /dev/shm is the node's own, not shared
            Err("it is on a Slurm node; remove it there with `rm -rf` or let the node's epilog clean /dev/shm".into())
        } else {
            let refs: Vec<&str> = paths.iter().map(|p| p.as_str()).collect();
            match self.ssh.run(
                host,
                &crate::plan::remote::remote_script(&refs),
                None,
                Duration::from_secs(30),
            ) {
                Ok((0, out)) if !out.contains("EXPR_REFUSED") => Ok(()),
                Ok((0, out)) => Err(format!(
                    "refused (a symlink on the way, or not this user's): {}",
                    out.lines()
                        .filter_map(|l| l.strip_prefix("EXPR_REFUSED "))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                Ok((c, out)) => Err(format!("exit {c}: {}", out.trim())),
                Err(e) => Err(e),
            }
        };
        match result {
            Ok(()) => paths.into_iter().cloned().collect(),
            Err(e) => {
                self.progress.line(&format!(
                    "warning: scratch on `{}` not removed: {e}",
                    host.name
                ));
                Vec::new()
            }
        }
    }

    /// Write a config file where the step's host reads it, and a copy under runtime/: the
    /// layout preflight chose for the host's checkout when it is not the planned one.
    fn write_config(&mut self, s: &Step) -> Result<(), String> {
        let Some(f) = &s.file else { return Ok(()) };
        let chosen = self
            .layouts
            .get(&(s.host.clone(), f.path.clone()))
            .and_then(|name| {
                s.schema
                    .as_ref()?
                    .alternatives
                    .iter()
                    .find(|(n, _)| n == name)
            })
            .map(|(_, content)| crate::plan::PlannedFile {
                path: f.path.clone(),
                content: content.clone(),
            });
        let f = chosen.as_ref().unwrap_or(f);
        let host = self.host(&s.host);
        let name = Path::new(&f.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "config".into());
        let _ = std::fs::write(self.dir.join("runtime").join(&name), &f.content);
        if host.is_local() {
            let path = if Path::new(&f.path).is_absolute() {
                PathBuf::from(&f.path)
            } else {
                Path::new(&host.repo).join(&f.path)
            };
            if let Some(d) = path.parent() {
                std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
            }
            std::fs::write(&path, &f.content).map_err(|e| format!("{}: {e}", path.display()))
        } else {
            let q = crate::util::shell::quote(&f.path);
            let script = format!(
                "cd {} && mkdir -p \"$(dirname {q})\" && cat > {q}",
                crate::util::shell::quote(&host.repo)
            );
            match self.ssh.run(
                host,
                &script,
                Some(f.content.as_bytes()),
                Duration::from_secs(60),
            )? {
                (0, _) => Ok(()),
                (c, out) => Err(format!(
                    "copy to {}:{} failed (exit {c}): {}",
                    host.name,
                    f.path,
                    out.trim()
                )),
            }
        }
    }

    /// Readiness with a deadline: a TCP connect or a log line, probed every READY_PROBE.
    fn wait_ready(&self, s: &Step, p: &mut Proc) -> Result<(), NotReady> {
        let deadline =
            crate::exec::backend::host::deadline(Duration::from_secs(s.timeout_s.max(1) as u64));
        let re = match s.ready.as_deref() {
            Some(Ready::Log { regex }) => {
                Some(regex::Regex::new(regex).map_err(|e| NotReady::BadRegex {
                    error: e.to_string(),
                })?)
            }
            _ => None,
        };
        let started = Instant::now();
        let mut scan = LogScan::default();
        loop {
            if let Some(c) = p.try_exit() {
                // its ready line was written before it ended (`echo READY; … & exit 0`): it was
                // ready, and its end is a death the point sees
                if re.as_ref().is_some_and(|r| scan.found(&p.log, r)) {
                    return Ok(());
                }
                return Err(NotReady::ExitedBefore { code: i64::from(c) });
            }
            if self.interrupted().is_some() {
                return Err(NotReady::Interrupted);
            }
            p.poll_remote_pgid();
            let ready = match s.ready.as_deref() {
                Some(Ready::Tcp { ip, port }) => connect(ip, *port),
                Some(Ready::Log { .. }) => re.as_ref().is_some_and(|r| scan.found(&p.log, r)),
                // still running this long after the start (an exit is checked above and below)
                Some(Ready::Alive { ms }) => {
                    started.elapsed() >= Duration::from_millis((*ms).max(0) as u64)
                }
                None => true,
            };
            if ready {
                // a port's answer must be this server's: one that has exited meanwhile (its
                // port was taken) was answered by another process. A log line is the server's
                // own: one that ended right after printing it was ready, and its end is a
                // death the point sees (it was "answered by another process" when the exit
                // came between the scan and this look)
                let tcp = matches!(s.ready.as_deref(), Some(Ready::Tcp { .. }));
                if let Some(c) = p.try_exit().filter(|_| tcp) {
                    return Err(NotReady::AnsweredByOther { code: i64::from(c) });
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                let probe = match s.ready.as_deref() {
                    Some(Ready::Tcp { ip, port }) => Probe::Tcp {
                        ip: ip.clone(),
                        port: *port,
                    },
                    Some(Ready::Log { regex }) => Probe::Log {
                        regex: regex.clone(),
                    },
                    Some(Ready::Alive { ms }) => Probe::Alive { ms: *ms },
                    None => Probe::None,
                };
                return Err(NotReady::Timeout {
                    secs: s.timeout_s,
                    probe,
                });
            }
            // probe again soon; a server that exits meanwhile wakes this at once
            host::wait_exits(host::exits_seen(), READY_PROBE);
        }
    }
}

/// A server's log, read for its ready line as it grows: each poll reads what was written since
/// the last one (the whole log again each time was quadratic, and unbounded memory for a chatty
/// server), with the unfinished last line kept for the next.
#[derive(Default)]
struct LogScan {
    offset: u64,
    tail: String,
}

impl LogScan {
    /// The most read at one poll, and the most of an unfinished line kept.
    const CHUNK: u64 = 4 << 20;
    const TAIL: usize = 64 << 10;

    fn found(&mut self, log: &Path, re: &regex::Regex) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(log) else {
            return false;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return false;
        }
        let mut new = Vec::new();
        if f.take(Self::CHUNK).read_to_end(&mut new).is_err() || new.is_empty() {
            return false;
        }
        self.offset += new.len() as u64;
        let text = format!("{}{}", self.tail, String::from_utf8_lossy(&new));
        // line by line, as commands.sh's `grep -E` reads it: `^listening` is a line's start,
        // not the start of whatever the last read brought
        if text.lines().any(|l| re.is_match(l)) {
            return true;
        }
        let last = text.rfind('\n').map_or(&text[..], |i| &text[i + 1..]);
        let mut from = last.len().saturating_sub(Self::TAIL);
        while !last.is_char_boundary(from) {
            from += 1;
        }
        self.tail = last[from..].to_string();
        false
    }
}

/// The peak RSS of a point's launch processes together, and the floor below which it is not
/// known: the largest peak, where it is above every process's floor (a process whose own is not
/// known peaked at most at its floor).
fn peak_of<'a>(
    exits: impl Iterator<Item = &'a crate::exec::backend::reaper::Exit>,
) -> (Option<i64>, i64) {
    let (mut peak, mut floor, mut unknown) = (None::<i64>, 0i64, false);
    for e in exits {
        floor = floor.max(e.rss_floor_kib);
        match e.max_rss_kib {
            Some(k) => peak = Some(peak.map_or(k, |p| p.max(k))),
            None => unknown = true,
        }
    }
    (
        peak.filter(|p| !unknown || *p > floor + crate::exec::backend::reaper::RSS_MARGIN_KIB),
        floor,
    )
}

#[cfg(test)]
mod tests {
    use super::LogScan;

    #[test]
    fn a_ready_line_is_found_as_the_log_grows_even_split_across_writes() {
        let (_d, log) = crate::util::testutil::temp_path("s.log");
        let re = regex::Regex::new("listening on \\d+").unwrap();
        let mut scan = LogScan::default();
        assert!(!scan.found(&log, &re), "no log yet");
        std::fs::write(&log, "starting\nlisten").unwrap();
        assert!(!scan.found(&log, &re));
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, b"ing on 80").unwrap();
        assert!(scan.found(&log, &re), "the line, written in two parts");
        assert_eq!(scan.offset, 24);
    }

    /// `^` and `$` are a line's ends, as grep -E (commands.sh) reads them: `^listening` after
    /// another line in the same read was never found, `ready$` with more output after it was.
    #[test]
    fn a_ready_log_anchor_is_a_lines_start_or_end() {
        let (_d, log) = crate::util::testutil::temp_path("s.log");
        std::fs::write(&log, "starting\nlistening on 80\nready soon\n").unwrap();
        let found = |pat: &str| {
            let re = regex::Regex::new(pat).unwrap();
            LogScan::default().found(&log, &re)
        };
        assert!(found("^listening"));
        assert!(found("80$"));
        assert!(!found("^ready$"));
        assert!(!found("80 ready"), "never across lines");
    }
}
