//! The executor: carries out a Plan on local and SSH hosts and leaves a complete, honest result
//! directory even when things fail.

use std::collections::BTreeMap;

use crate::exec::signals;
use crate::results::event::{self, RunEvent};
use crate::results::reason::Reason;
use crate::util::exit_codes;
use crate::util::lang::Lang;

use crate::exec::run::array::ArrayMode;
use crate::exec::run::campaign::{After, Campaign, Next};
pub use crate::exec::state::options::Options;
pub use crate::exec::state::Runner;
use crate::exec::state::Skip;
use crate::exec::state::{disk_full, point_hash};
use crate::exec::vars::RESULT_DIR_VAR;
use crate::model::Host;
use crate::plan::PlanPoint;
use crate::results::Finish;

/// What a run ends with.
pub struct Ran {
    pub code: i32,
    /// `--force`, and nothing of this run replaced the earlier results: they are back, as
    /// they were (the report data this run wrote is not theirs).
    pub earlier_back: bool,
}

impl<'a> Runner<'a> {
    /// The whole run: its exit code, and the report data it wrote (for the history). While it
    /// runs, this process is the child subreaper of what it starts (what a step leaves is
    /// adopted and stopped as the run ends: a host program's own children in another process
    /// group, started meanwhile, would be too), and a second SIGINT/TERM/HUP/QUIT ends the
    /// process ([`signals::watch`]).
    pub fn run(mut self, finish: &mut dyn Finish) -> Ran {
        if self.opts.task_journal.is_some() {
            return Ran {
                code: self.run_task(),
                earlier_back: false,
            };
        }
        signals::install();
        // what loses its parent becomes expr's child (also what left its group and cleared its
        // environment): stopped as each point ends (one at a time: its own) and as the run ends
        let adopting = crate::exec::backend::escape::adopt();
        self.rec.adopting = adopting;
        // every process the run starts carries its result directory: `expr stop` on a copy of
        // the directory then leaves this run's processes alone
        let abs = std::fs::canonicalize(&self.rec.dir);
        if let Ok(abs) = &abs {
            std::env::set_var(RESULT_DIR_VAR, abs);
        }
        // stops what the run started if it dies without its teardown (kill -9); told `done` as
        // this function returns
        let _sentinel = match abs
            .map_err(|e| e.to_string())
            .and_then(|a| crate::exec::sentinel::Sentinel::start(&a))
        {
            Ok(s) => s,
            Err(e) => {
                self.rec.progress.line(&format!(
                    "warning: no sentinel ({e}): if expr is killed, `expr stop {}` stops what it started",
                    crate::util::shell::quote(&self.rec.dir.display().to_string())
                ));
                None
            }
        };
        // a second signal ends expr soon, whatever the run is doing then (what the run adopted
        // is stopped first: no sentinel finds it)
        signals::watch(
            &self.rec.dir,
            _sentinel.is_some(),
            Box::new(move || {
                if let Some(since) = adopting {
                    crate::exec::backend::escape::sweep_adopted(since, std::time::Duration::ZERO);
                }
            }),
            self.rec.progress.printer(),
        );
        self.write_first_files();
        let hosts = self.rec.used_hosts();
        let pre = self.preflight(&hosts);
        // something runs now: what --force set aside waits for a point of this run to end ok
        if pre.is_ok() {
            self.rec.forced = self.forced.take();
            finish.started(&self.rec.dir);
        }
        let mut code = match pre {
            Err(e) => {
                let ran = self.preflight_failed(&hosts, e);
                signals::unwatch();
                if adopting.is_some() {
                    crate::exec::backend::escape::adopt_no_more();
                }
                return ran;
            }
            Ok(fingerprints) if self.opts.array.is_some() => {
                self.say_fallbacks();
                match self.opts.array.clone() {
                    Some(a) => ArrayMode {
                        a,
                        resume: self.opts.resume,
                        fail_fast: self.opts.fail_fast,
                        skip: self.skip(),
                        rec: &mut self.rec,
                    }
                    .run(&fingerprints),
                    None => exit_codes::INTERNAL,
                }
            }
            Ok(fingerprints) if self.opts.jobs > 1 => {
                self.say_fallbacks();
                let jobs = self.opts.jobs;
                self.run_pool(&fingerprints, jobs)
            }
            Ok(fingerprints) => {
                self.say_fallbacks();
                self.run_points(&fingerprints)
            }
        };
        self.close_connections(&hosts);
        if let Some(since) = adopting {
            self.rec.sweep_adopted(since);
            crate::exec::backend::escape::adopt_no_more();
        }
        self.rec.write_manifest();
        code = self.judged_by_report(finish, code);
        if !self.rec.survivors.is_empty() {
            self.rec.progress.line(&format!(
                "warning: still alive after teardown: {}",
                self.rec.survivors.join(", ")
            ));
        }
        // a signal at any time — also one that came while the last point's servers were torn
        // down or the report written, when no point was left to stop — ends the run as
        // interrupted; a closed terminal (SIGHUP) or SIGQUIT: 128 + n, after the same teardown
        if code == exit_codes::INTERRUPTED || signals::count() > 0 {
            code = signals::exit_code();
        }
        self.rec.journal.emit(&RunEvent::End(event::End {
            exit_code: Some(i64::from(code)),
            survivors: Some(self.rec.survivors.clone()),
        }));
        // --force and no point ended ok: the earlier results are not replaced by none
        let earlier_back = self.rec.keep_earlier();
        signals::unwatch();
        code = self.say_write_errors(code);
        self.rec.progress.finish();
        Ran { code, earlier_back }
    }

    /// Preflight failed (or was interrupted): said, the connections closed, and the directory
    /// removed if this run made it (else the failure recorded in its journal).
    fn preflight_failed(&mut self, hosts: &[&Host], e: String) -> Ran {
        // nothing ran: no point failed, and a directory this run made holds nothing
        // worth keeping
        let interrupted = self.rec.interrupted().is_some();
        let mut earlier_back = false;
        let why = if interrupted {
            "interrupted during preflight"
        } else {
            for line in e.lines() {
                self.rec.progress.line(&format!("error: preflight: {line}"));
            }
            "preflight failed"
        };
        self.close_connections(hosts);
        if self.created {
            let _ = std::fs::remove_dir_all(&self.rec.dir);
            self.rec.progress.line(&format!(
                "{why}: nothing ran; the result directory was removed"
            ));
        } else if let Some(aside) = self.forced.take() {
            // --force: the earlier run's files come back, as they were
            match crate::exec::state::put_back(&self.rec.dir, &aside) {
                Ok(()) => {
                    earlier_back = true;
                    self.rec.progress.line(&format!(
                        "{why}: nothing ran; the earlier results in {} are as they were (--force replaces them once something runs)",
                        self.rec.dir.display()
                    ))
                }
                Err(x) => self.rec.progress.line(&format!(
                    "{why}: nothing ran; error: {x}: the earlier results are in {}",
                    aside.display()
                )),
            }
        } else {
            self.rec
                .journal
                .emit(&RunEvent::PreflightFailed(event::PreflightFailed {
                    reason: e.clone(),
                }));
            self.rec.progress.line(&format!("{why}: nothing ran"));
        }
        self.rec.progress.finish();
        Ran {
            code: if interrupted {
                signals::exit_code()
            } else {
                exit_codes::PREFLIGHT
            },
            earlier_back,
        }
    }

    /// The remote hosts' ssh connections closed, and their control directory removed.
    fn close_connections(&mut self, hosts: &[&Host]) {
        for h in hosts {
            if !h.is_local() {
                self.rec.ssh.close(h);
            }
        }
        let _ = std::fs::remove_dir_all(&self.rec.ssh.control_dir);
    }

    /// What reads the directory (the report), partial when points failed or the run was
    /// interrupted: its lines said, and the run's exit code `code` as the report judges it.
    fn judged_by_report(&mut self, finish: &mut dyn Finish, code: i32) -> i32 {
        let mut code = code;
        let found = finish.finish(&self.rec.dir);
        // a point whose numbers cannot be read is not ok: one the run recorded as ok (a point
        // skipped on resume whose files are gone) becomes no-data in the manifest
        let mut changed = false;
        for (id, why) in &found.no_data {
            if self.rec.manifest.no_data(id, why) {
                self.rec.progress.line(&format!("{id}: no data: {why}"));
                changed = true;
            }
        }
        // a point the report no longer has (a `--force` resume with fewer repeats) leaves the
        // manifest: the reports before this one, which show it, were kept by the report
        if let Some(points) = &found.points {
            let points: std::collections::HashSet<&str> =
                points.iter().map(String::as_str).collect();
            let gone = self.rec.manifest.keep_points(&points);
            if !gone.is_empty() {
                let mut named = gone.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
                if gone.len() > 5 {
                    named.push_str(&format!(" and {} more", gone.len() - 5));
                }
                self.rec.progress.line(&format!(
                    "manifest.csv: {named} no longer {} of the experiment: {} left it",
                    if gone.len() == 1 { "a point" } else { "points" },
                    if gone.len() == 1 {
                        "its row"
                    } else {
                        "their rows"
                    },
                ));
                changed = true;
            }
        }
        if changed {
            self.rec.write_manifest();
        }
        // the report's own lines come after the no-data ones, as they did
        for line in &found.lines {
            self.rec.progress.line(line);
        }
        code = exit_codes::verdict(code, found.judged);
        if let Some(e) = &found.error {
            // no report: nothing was judged; the run cannot say it succeeded
            self.rec.progress.line(e);
            if code == exit_codes::OK {
                code = exit_codes::INTERNAL;
            }
        }
        code
    }

    /// A file that could not be written: the directory is not the run's whole record, said,
    /// and a run that would succeed (or only have failed points) exits INTERNAL.
    fn say_write_errors(&mut self, code: i32) -> i32 {
        let mut code = code;
        let manifest_errors = std::mem::take(&mut self.rec.manifest.errors);
        self.rec.write_errors.extend(manifest_errors);
        if let Some(e) = &self.rec.journal.failed {
            self.rec.write_errors.insert(
                0,
                format!("journal.jsonl (events from the first failed write on are missing: {e})"),
            );
        }
        if !self.rec.write_errors.is_empty() {
            self.rec.write_errors.dedup();
            self.rec.progress.line(&format!(
                "error: the result directory is incomplete{}: {} could not be written",
                if disk_full(&self.rec.dir) {
                    " (its disk is full)"
                } else {
                    ""
                },
                self.rec.write_errors.join("; ")
            ));
            if code == exit_codes::OK || code == exit_codes::POINT_FAILED {
                code = exit_codes::INTERNAL;
            }
        }
        code
    }

    /// An array task: its one point, into its journal fragment; the submitting run keeps the
    /// manifest and writes the report.
    fn run_task(mut self) -> i32 {
        signals::install();
        // no sentinel here: a task's steps die with its Slurm job, and `expr stop` on the
        // shared directory would reach the other tasks' and the run's jobs
        if let Ok(abs) = std::fs::canonicalize(&self.rec.dir) {
            std::env::set_var(RESULT_DIR_VAR, abs);
        }
        // the node this task got, checked as preflight checks a host
        let code = match self.noise_in_task() {
            Err(why) => self.refuse_task_point(&why),
            Ok(()) => {
                self.calibrate_shells();
                self.run_points(&BTreeMap::new())
            }
        };
        self.end_task(code)
    }

    /// A task's end (an array task's, a `--jobs` worker's): its hosts' connections closed and
    /// its fragment's last event.
    pub(in crate::exec) fn end_task(&mut self, code: i32) -> i32 {
        // a `--jobs` worker shares its process's master connections (and their directory) with
        // the run's other points: it ends only its own agents, the run closes the rest
        let worker = self.opts.worker;
        for h in self.rec.used_hosts() {
            if h.is_local() {
                continue;
            }
            if worker {
                self.rec.ssh.close_agent(h);
            } else {
                self.rec.ssh.close(h);
            }
        }
        if !worker {
            let _ = std::fs::remove_dir_all(&self.rec.ssh.control_dir);
        }
        self.rec.journal.emit(&RunEvent::End(event::End {
            exit_code: Some(i64::from(code)),
            survivors: Some(self.rec.survivors.clone()),
        }));
        code
    }

    /// What `--skip-build` and `--skip-tests` leave out of the setup steps.
    pub(in crate::exec) fn skip(&self) -> Skip {
        Skip {
            build: self.opts.skip_build,
            tests: self.opts.skip_tests,
        }
    }

    /// Hosts whose agent could not start: each operation there is an ssh command of its own.
    fn say_fallbacks(&mut self) {
        for (h, why) in self.rec.ssh.fallbacks() {
            self.rec.progress.line(&format!(
                "warning: no agent on `{h}` ({why}); one ssh command per operation there, each paying for the remote rc files"
            ));
        }
    }

    fn write_first_files(&mut self) {
        let skip = self.skip();
        let skipped: Vec<(crate::plan::Phase, &str)> = [
            (skip.build, crate::plan::Phase::Build, "--skip-build"),
            (skip.tests, crate::plan::Phase::Test, "--skip-tests"),
        ]
        .into_iter()
        .filter_map(|(on, ph, flag)| on.then_some((ph, flag)))
        .collect();
        for f in &self.rec.plan.files {
            let _ = std::fs::write(self.rec.dir.join(&f.path), &f.content);
        }
        let _ = std::fs::write(
            self.rec.dir.join("commands.sh"),
            crate::plan::render::sh_with_grace(self.rec.plan, self.rec.grace_s, &skipped),
        );
    }

    pub(in crate::exec) fn run_points(&mut self, fps: &BTreeMap<String, String>) -> i32 {
        let earlier = self.resumed_events();
        let lost = self.numbers().lost(self.rec.plan, &earlier);
        let mut campaign = Campaign::new(self.rec.plan, fps, &earlier, lost);
        let fingerprint = campaign.fingerprint.clone();
        if self.opts.resume {
            // one line for all the points (each one's with --verbose), before the build: a
            // build interrupted or failed said nothing of what the resume keeps (helper 88)
            self.rec.progress.line(&campaign.summary());
        }
        if let Some(code) = self.setup_for_points(&campaign) {
            return code;
        }
        // a worker of --jobs is given the run's spawn times
        if self.shell_overhead.is_empty() {
            self.calibrate_shells();
        }
        for p in &self.rec.plan.points {
            if let Some(stop) = self.rec.interrupted() {
                self.rec
                    .progress
                    .line(&format!("{stop}: not starting {}", p.run_id));
                self.not_started(p.index, Reason::RunInterrupted, "interrupted", &campaign);
                return exit_codes::INTERRUPTED;
            }
            let h = point_hash(p);
            match campaign.next(p, self.opts.resume) {
                Next::Keep(e) => {
                    // counted in the summary (each one said with --verbose)
                    self.rec.keep(e, p, self.opts.verbose);
                    continue;
                }
                Next::Run => {}
                Next::Again(why) if self.opts.verbose => self
                    .rec
                    .progress
                    .line(&format!("{}: runs again: {why}", p.run_id)),
                Next::New if self.opts.verbose => self
                    .rec
                    .progress
                    .line(&format!("{}: runs: not run before", p.run_id)),
                Next::Again(_) | Next::New => {}
            }
            // adaptive repeats: a group whose spread is small enough runs no more
            if let Some(why) = self.numbers().converged(p, &campaign.seen, campaign.ran(p)) {
                self.publish_not_needed(p, why, &fingerprint);
                continue;
            }
            if let Some(code) = self.run_campaign_point(p, &mut campaign, &h, &fingerprint) {
                return code;
            }
        }
        campaign.code()
    }

    /// The setup steps (the ones the kept points need), then a sweep of what escaped them on
    /// their hosts; the exit code when the setup failed.
    pub(in crate::exec) fn setup_for_points(&mut self, campaign: &Campaign) -> Option<i32> {
        let kept = campaign.kept();
        // a resume with every point kept measures nothing: nothing to build or test for (a
        // build interrupted now would only leave a worse log and a report saying it failed)
        let points = &self.rec.plan.points;
        if self.opts.resume
            && !self.rec.plan.setup.is_empty()
            && !points.is_empty()
            && points.iter().all(|p| kept.contains(&p.run_id))
        {
            self.rec
                .progress
                .line("resume: every point is kept: the build and tests are not run again");
            return None;
        }
        let setup = self.rec.run_setup(self.skip(), false, &kept);
        let mut setup_hosts: Vec<String> =
            self.rec.plan.setup.iter().map(|s| s.host.clone()).collect();
        setup_hosts.sort();
        setup_hosts.dedup();
        let prefix = crate::exec::backend::escape::marker(&self.rec.mark, None);
        self.rec
            .sweep_escaped(&setup_hosts, &prefix, "the build and tests");
        setup
    }

    /// A point an adaptive group no longer needs: recorded as skipped, and why.
    fn publish_not_needed(&mut self, p: &PlanPoint, why: String, fingerprint: &str) {
        let cause = Reason::NotNeeded { why };
        self.rec.publish(RunEvent::Point(event::Point {
            fingerprint: Some(fingerprint.to_string()),
            ..crate::exec::state::point_event(p, "skipped", cause)
        }));
    }

    /// Run one point of the campaign and record its outcome (`h`: its command hash); the exit
    /// code when the run stops after it.
    fn run_campaign_point(
        &mut self,
        p: &PlanPoint,
        campaign: &mut Campaign,
        h: &str,
        fingerprint: &str,
    ) -> Option<i32> {
        campaign.running(p);
        self.rec.progress.point_started(&format!(
            "[{}/{}] {}",
            p.index + 1,
            self.rec.points_of(),
            p.run_id
        ));
        let ((status, code, mut reason), timing) = self.rec.run_point(p, &self.shell_overhead);
        // what disturbed it (a foreign process on its GPU, throttling): said, not failed
        let noise = self.noise_after_point(p);
        if !noise.is_empty() {
            let note = Reason::Noise {
                notes: noise.clone(),
            };
            reason = Some(match reason {
                Some(r) => r.and(note),
                None => note,
            });
        }
        let ended = if status != "ok" {
            self.allocation_ended(&mut reason)
        } else {
            None
        };
        // the point's numbers are read as it ends: a point whose metrics cannot be read is
        // not ok, and the live line says so now
        let mut status = status;
        let value = if status == "ok" {
            match self.numbers().measure_now(p, timing.as_ref()) {
                Ok(v) => v,
                Err(why) => {
                    status = "no-data".into();
                    reason = Some(Reason::NoData { message: why });
                    None
                }
            }
        } else {
            None
        };
        if let Some(v) = value {
            campaign.measured(p, v);
        }
        let live = self.numbers().live_text(p, value, &campaign.seen);
        let log = self.rec.launch_log(p);
        self.rec.publish(RunEvent::Point(event::Point {
            run_id: Some(p.run_id.clone()),
            lane: Some(p.lane.clone()),
            repeat: Some(p.repeat),
            status: Some(status.clone()),
            exit_code: Some(code.map(i64::from)),
            reason: Some(
                reason
                    .as_ref()
                    .map(|r| r.render(Lang::En))
                    .unwrap_or_default(),
            ),
            cause: reason,
            command_hash: Some(h.to_string()),
            fingerprint: Some(fingerprint.to_string()),
            value,
            timing,
            task: None,
            placed: self.rec.plan.placed.get(&p.run_id).cloned(),
            noise: (!noise.is_empty()).then(|| noise.iter().map(|n| n.render(Lang::En)).collect()),
            noise_of: (!noise.is_empty()).then_some(noise),
            log: (!log.is_empty()).then_some(log),
            headline: (!live.is_empty()).then_some(live),
        }));
        // an interrupted last run did not reach max (helper 88: it was said to)
        if let Some(e) = (status != "interrupted")
            .then(|| self.numbers().hit_max(p, &campaign.seen, campaign.ran(p)))
            .flatten()
        {
            self.rec.publish(RunEvent::Adaptive(e));
        }
        if let Some(e) = ended {
            return Some(self.stop_after_ended_allocation(p, e));
        }
        match campaign.after(&status, self.opts.fail_fast) {
            After::Go => None,
            After::Interrupted => {
                self.not_started(p.index + 1, Reason::RunInterrupted, "interrupted", campaign);
                Some(exit_codes::INTERRUPTED)
            }
            After::FailFast => {
                self.rec.progress.line("stopping: --fail-fast");
                self.not_started(p.index + 1, Reason::FailFast, "failed", campaign);
                Some(exit_codes::POINT_FAILED)
            }
        }
    }

    /// The points from index `from` on that a stopped loop will not start (those a resumed run
    /// keeps aside): recorded as not run for `why`, with the status a `--jobs` run or a Slurm
    /// array gives them, so that a manifest lists the same points whatever ran them.
    fn not_started(&mut self, from: usize, why: Reason, status: &str, campaign: &Campaign) {
        let kept = campaign.kept();
        let run_ids: Vec<String> = self
            .rec
            .plan
            .points
            .iter()
            .filter(|q| q.index >= from && !kept.contains(&q.run_id))
            .map(|q| q.run_id.clone())
            .collect();
        self.not_run(run_ids, why, status);
    }

    /// After a point that failed on a Slurm allocation: did the allocation itself end (TIMEOUT,
    /// NODE_FAIL, CANCELLED, OUT_OF_MEMORY)? Then that goes first in the point's `reason`, the
    /// job's state is recorded, and the last such end is returned.
    fn allocation_ended(&mut self, reason: &mut Option<Reason>) -> Option<Reason> {
        let mut ended: Option<Reason> = None;
        for job in self.rec.slurm_jobs() {
            // an array task's own job cannot end while the task runs: no waiting
            let state = if self.opts.task_journal.is_some() {
                crate::exec::slurm::state_now(&job)
            } else {
                crate::exec::slurm::state(&job)
            };
            if let Some((st, why)) = state {
                if st != "RUNNING" {
                    let e = Reason::SlurmEnded {
                        job: job.clone(),
                        task: false,
                        state: st.clone(),
                        why: why.clone(),
                    };
                    *reason = Some(Reason::join(vec![
                        e.clone(),
                        reason.take().unwrap_or(Reason::Text {
                            text: String::new(),
                        }),
                    ]));
                    self.rec.journal.emit(&RunEvent::Slurm(event::Slurm {
                        job: job.clone(),
                        state: st.clone(),
                        reason: why.clone(),
                        run_id: None,
                    }));
                    ended = Some(e);
                }
            }
        }
        ended
    }

    /// The allocation ended under point `p`: the points after it are recorded as not run, and
    /// the run stops.
    fn stop_after_ended_allocation(&mut self, p: &PlanPoint, e: Reason) -> i32 {
        let rest = self.rec.plan.points.iter().filter(|q| q.index > p.index);
        let text = e.render(Lang::En);
        self.rec.publish(RunEvent::NotRun(event::NotRun {
            run_ids: rest.map(|q| q.run_id.clone()).collect(),
            status: "failed".into(),
            reason: text.clone(),
            cause: Some(e),
        }));
        self.rec.progress.line(&format!("stopping: {text}"));
        exit_codes::POINT_FAILED
    }
}
