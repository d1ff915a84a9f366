//! `expr run --jobs N`: up to N points at once, never two that share a resource. A point's
//! resources are the hosts its steps run on — a host whole, unless every step there has GPUs
//! of its own (`CUDA_VISIBLE_DEVICES`, e.g. a bench step's `gpus=1`): then those GPUs. A
//! server (a `serve` step, whose port is fixed) takes its host whole, and its address (ip and
//! port) whatever host name another point reaches that machine by. The points start in the
//! plan's order, each as soon as nothing it needs is taken (a later one may pass a waiting one).
//!
//! Each point runs in a worker of this process as an array task runs on its node: a recorder
//! of its own writing `runtime/array/tasks/RUN_ID.jsonl`, with the shells' spawn times this run
//! measured; the run merges each fragment into the journal as its point ends (`Recorder::merge`)
//! and writes the manifest and the report. A signal reaches every worker (they tear down their
//! own points); `--fail-fast` starts nothing more and lets what runs finish; `expr stop` finds a
//! killed run's steps in the fragments; `--resume` runs again what no merged event says ran.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::exec::run::array::{fragment, MERGED_DIR};
use crate::exec::run::campaign::{Campaign, Next};
use crate::exec::state::Runner;
use crate::exec::vars::TASKS_DIR;
use crate::kind_api::step::{Phase, Ready};
use crate::model::Experiment;
use crate::plan::{Plan, PlanPoint};
use crate::results::event::{self, RunEvent};
use crate::results::reason::Reason;
use crate::util::exit_codes;
use crate::util::lang::Lang;

/// What a point holds while it runs: (host, GPU); no GPU: the host whole.
pub type Resource = (String, Option<String>);

/// A point's resources: each host a step of it runs on, with the GPUs its steps name there
/// (a step without, or a server, takes the host whole).
pub fn resources(p: &PlanPoint) -> Vec<Resource> {
    let mut out: Vec<Resource> = Vec::new();
    for s in &p.steps {
        if matches!(s.phase, Phase::Config | Phase::Collect) || s.stops.is_some() || s.sampler {
            continue;
        }
        let gpus = s
            .env
            .iter()
            .find(|(k, _)| k == "CUDA_VISIBLE_DEVICES")
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.trim().is_empty() && !s.background);
        match gpus {
            Some(list) => {
                for g in list.split(',') {
                    out.push((s.host.clone(), Some(g.trim().to_string())));
                }
            }
            None => out.push((s.host.clone(), None)),
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every point needs one same thing (a host whole): `--jobs` gains nothing, and is said so.
fn one_at_a_time(todo: &[&PlanPoint], jobs: usize) -> Option<String> {
    let (host, gpu) = shared_by_all(todo)?;
    // a server there takes the host whole, GPUs or not (helper 75: the note blamed `gpus=`)
    let serves = todo.iter().any(|p| {
        p.steps
            .iter()
            .any(|s| s.host == host && s.phase == Phase::Serve)
    });
    let what = match gpu {
        Some(g) => format!("GPU {g} of `{host}`"),
        None if serves => {
            format!("`{host}` whole (a server runs there, and a server takes its host whole)")
        }
        None => format!("`{host}` whole (no step there names GPUs of its own, e.g. `gpus=1`)"),
    };
    Some(format!(
        "note: --jobs {jobs}: every point takes {what}, so the points run one at a time"
    ))
}

/// Every point takes one same GPU of one machine, through hosts of other names: said as
/// [`one_at_a_time`] says a host (that note reads host names, and said nothing here).
fn one_gpu_of_a_machine(todo: &[&PlanPoint], jobs: usize, machines: &Machines) -> Option<String> {
    let (first, rest) = todo.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let gpus = |p: &PlanPoint| -> Vec<Resource> {
        holds(machines, p)
            .into_iter()
            .filter(|(h, g)| h.starts_with(GPUS_OF) && g.as_deref() != Some(ALL_GPUS))
            .collect()
    };
    let mut common = gpus(first);
    for p in rest {
        let r = gpus(p);
        common.retain(|c| r.contains(c));
    }
    let (h, g) = common.into_iter().next()?;
    let m = h.trim_start_matches(GPUS_OF);
    // the points' hosts on it
    let mut hosts: Vec<String> = machines
        .of
        .iter()
        .filter(|(k, v)| {
            v.as_str() == m && todo.iter().any(|p| p.steps.iter().any(|s| &s.host == *k))
        })
        .map(|(k, _)| format!("`{k}`"))
        .collect();
    hosts.sort();
    let g = g.unwrap_or_default();
    let what = match &hosts[..] {
        [one] => format!("GPU {g} of {one}"),
        _ => format!(
            "GPU {g} of one machine ({} are one machine and share its GPUs)",
            hosts.join(", ")
        ),
    };
    Some(format!(
        "note: --jobs {jobs}: every point takes {what}, so the points run one at a time"
    ))
}

/// A resource every one of the points needs, if one is (then no two run at once).
fn shared_by_all(points: &[&PlanPoint]) -> Option<Resource> {
    let (first, rest) = points.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let mut common = resources(first);
    for p in rest {
        let r = resources(p);
        // a point needs `c` where it holds it, or holds its host whole (one GPU point beside a
        // whole one does not: GPU points run at once beside each other, helper 85)
        common.retain(|c| r.iter().any(|x| x == c || (x.0 == c.0 && x.1.is_none())));
        if common.is_empty() {
            return None;
        }
    }
    common.into_iter().next()
}

/// Each host's machine: the first declared host of the hosts linked to it by
/// [`crate::model::Host::same_machine`], through any chain of them (A and C one login, C and B
/// one address: A, B and C are one machine).
fn machines(exp: &Experiment) -> Machines {
    let hosts = &exp.hosts;
    let mut root: Vec<usize> = (0..hosts.len()).collect();
    fn find(root: &mut [usize], mut i: usize) -> usize {
        while root[i] != i {
            root[i] = root[root[i]];
            i = root[i];
        }
        i
    }
    for i in 0..hosts.len() {
        for j in 0..i {
            if hosts[i].same_machine(&hosts[j]).is_some() {
                let (a, b) = (find(&mut root, i), find(&mut root, j));
                root[a.max(b)] = a.min(b);
            }
        }
    }
    let of = (0..hosts.len())
        .map(|i| {
            let r = find(&mut root, i);
            (hosts[i].name.clone(), hosts[r].name.clone())
        })
        .collect();
    let with_gpus = hosts
        .iter()
        .filter(|h| h.gpus.is_some_and(|n| n > 0))
        .map(|h| h.name.clone())
        .collect();
    Machines { of, with_gpus }
}

/// Each host's machine ([`machines`]), and the hosts that declare GPUs (`gpus=N`).
struct Machines {
    of: HashMap<String, String>,
    with_gpus: std::collections::HashSet<String>,
}

impl Machines {
    fn of<'a>(&'a self, host: &'a str) -> &'a str {
        self.of.get(host).map_or(host, String::as_str)
    }
}

/// A step that takes its host whole, among its machine's GPUs: it sees them all, so it clashes
/// with any one GPU held there (through any host name), not with another whole host's.
const ALL_GPUS: &str = "*";

/// What stands for a machine's GPUs among a point's holdings: no host is named so (a NUL).
const GPUS_OF: &str = "\0GPUs of ";

/// What a point holds while it runs: its [`resources`]; each GPU also as its machine's (two
/// host names of one machine — two local hosts with their own checkouts, one ssh login, one
/// address — share its GPUs: points of both on its GPU 0 at once measured each other, while
/// points that take such hosts whole may still run at once, as a pool of them asks); and the
/// address each of its servers listens on, where a second server on the same port would not
/// start.
fn holds(machines: &Machines, p: &PlanPoint) -> Vec<Resource> {
    let mut out: Vec<Resource> = resources(p);
    // each step's GPUs as its machine's: those it is given (a server's too, though it takes
    // its host whole: helper 85), else all of them where its host has GPUs
    for s in &p.steps {
        if matches!(s.phase, Phase::Config | Phase::Collect) || s.stops.is_some() || s.sampler {
            continue;
        }
        let m = format!("{GPUS_OF}{}", machines.of(&s.host));
        let given = s
            .env
            .iter()
            .find(|(k, _)| k == "CUDA_VISIBLE_DEVICES")
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.trim().is_empty());
        match given {
            Some(list) => {
                for g in list.split(',') {
                    out.push((m.clone(), Some(g.trim().to_string())));
                }
            }
            None if machines.with_gpus.contains(&s.host) => out.push((m, Some(ALL_GPUS.into()))),
            None => {}
        }
    }
    for s in p.steps.iter() {
        let tcp = match s.ready.as_deref() {
            Some(Ready::Tcp { ip, port }) => Some((ip, port)),
            _ => s.listens.as_deref().map(|(ip, port)| (ip, port)),
        };
        if let Some((ip, port)) = tcp {
            out.push((
                LISTENS.into(),
                Some(format!("{}:{port}", crate::util::net::address(ip))),
            ));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The place of a server's address among a point's holdings: no host is named so (a NUL).
const LISTENS: &str = "\0listens on";

/// Whether two points' resources meet: one host where either takes it whole, or one GPU (a
/// machine's GPUs held whole, [`ALL_GPUS`], meet any one of them, not each other).
pub fn clash(a: &[Resource], b: &[Resource]) -> bool {
    a.iter().any(|(h, x)| {
        b.iter().any(|(k, y)| {
            h == k
                && match (x.as_deref(), y.as_deref()) {
                    (None, _) | (_, None) => true,
                    (Some(ALL_GPUS), Some(ALL_GPUS)) => false,
                    (Some(ALL_GPUS), _) | (_, Some(ALL_GPUS)) => true,
                    (Some(p), Some(q)) => p == q,
                }
        })
    })
}

/// A worker of `--jobs`: the runner of its one point (`plan`), writing the journal fragment `f`.
fn work(
    exp: &crate::model::Experiment,
    plan: &Plan,
    opts: &crate::exec::run::runner::Options,
    overhead: &HashMap<(String, String), crate::exec::state::Overhead>,
    f: std::path::PathBuf,
) -> i32 {
    let opts = crate::exec::run::runner::Options {
        task_journal: Some(f),
        ..opts.clone()
    };
    match Runner::new(exp, plan, opts) {
        Ok(r) => r.run_in_pool(overhead),
        Err(e) => {
            eprintln!("error: {e}");
            exit_codes::INTERNAL
        }
    }
}

/// A plan of one of its points (what a worker runs), placed on `member` of its pool if any.
fn one_point(plan: &Plan, p: &PlanPoint, member: Option<&String>) -> Plan {
    Plan {
        experiment: plan.experiment.clone(),
        source: plan.source.clone(),
        output: plan.output.clone(),
        started: plan.started.clone(),
        hosts: plan.hosts.clone(),
        files: plan.files.clone(),
        setup: Vec::new(),
        points: vec![p.clone()],
        resolved: plan.resolved.clone(),
        by_id: Default::default(),
        pools: plan.pools.clone(),
        placed: member
            .map(|m| [(p.run_id.clone(), m.clone())].into_iter().collect())
            .unwrap_or_default(),
        moves: Default::default(),
        adaptive: plan.adaptive.clone(),
        allocations: plan.allocations.clone(),
    }
}

/// Where a waiting point may run: its planned place first, then (a pool's point) the same point
/// planned on each other member the run's preflight checked.
struct Places {
    /// (member, its one-point plan, what it holds); the first is the planned place.
    at: Vec<(Option<String>, Plan, Vec<Resource>)>,
}

impl Places {
    fn of(machines: &Machines, plan: &Plan, p: &PlanPoint, checked: &[&str]) -> Places {
        let mut at = vec![(
            plan.placed.get(&p.run_id).cloned(),
            one_point(plan, p, plan.placed.get(&p.run_id)),
            holds(machines, p),
        )];
        for (m, v) in plan.moves.get(&p.run_id).into_iter().flatten() {
            if checked.contains(&m.as_str()) {
                at.push((
                    Some(m.clone()),
                    one_point(plan, v, Some(m)),
                    holds(machines, v),
                ));
            }
        }
        Places { at }
    }

    /// The progress line's note on a point that runs at `at`, not its planned place.
    fn moved_text(&self, at: usize) -> String {
        match (&self.at[at].0, &self.at[0].0) {
            (Some(m), Some(planned)) if at > 0 => format!(" (on {m}: {planned} was busy)"),
            _ => String::new(),
        }
    }

    /// The first place whose resources are free of what runs.
    fn free(&self, held: &[&[Resource]]) -> Option<usize> {
        self.at
            .iter()
            .position(|(_, _, r)| !held.iter().any(|h| clash(r, h)))
    }
}

impl<'a> Runner<'a> {
    /// What comes before the pool: a killed run's fragments set aside, the build and tests, the
    /// points an earlier run finished kept (`--resume`), and the task directories made. The
    /// campaign and the points left to run, in the plan's order; Err(the run's exit code) where
    /// the run ends here (nothing left to run, or the setup failed).
    fn pool_todo(
        &mut self,
        fps: &BTreeMap<String, String>,
    ) -> Result<(Campaign<'a>, Vec<&'a PlanPoint>), i32> {
        // fragments no merged event stands for (a killed run's): set aside, their points run
        if !self.rec.set_aside_fragments() {
            return Err(exit_codes::INTERNAL);
        }
        let earlier = self.resumed_events();
        let lost = self.numbers().lost(self.rec.plan, &earlier);
        let plan: &'a Plan = self.rec.plan;
        let campaign = Campaign::new(plan, fps, &earlier, lost);
        // what the resume keeps, then the build and tests, then what escaped them (as with one
        // job at a time)
        if self.opts.resume {
            self.rec.progress.line(&campaign.summary());
        }
        if let Some(code) = self.setup_for_points(&campaign) {
            return Err(code);
        }
        self.calibrate_shells();
        let mut todo: Vec<&'a PlanPoint> = Vec::new();
        for p in &plan.points {
            match campaign.next(p, self.opts.resume) {
                Next::Keep(e) => self.rec.keep(e, p, self.opts.verbose),
                _ => todo.push(p),
            }
        }
        if todo.is_empty() {
            return Err(campaign.code());
        }
        if !self.make_task_dirs() {
            return Err(exit_codes::INTERNAL);
        }
        Ok((campaign, todo))
    }
}

impl Runner<'_> {
    /// The points with up to `jobs` at once.
    pub(in crate::exec) fn run_pool(&mut self, fps: &BTreeMap<String, String>, jobs: usize) -> i32 {
        let (campaign, todo) = match self.pool_todo(fps) {
            Ok(t) => t,
            Err(code) => return code,
        };
        let fingerprint = campaign.fingerprint.clone();
        if let Some(line) = one_at_a_time(&todo, jobs)
            .or_else(|| one_gpu_of_a_machine(&todo, jobs, &machines(self.rec.exp)))
        {
            self.rec.progress.line(&line);
        }
        let places = self.places(&todo);
        let exp = self.rec.exp;
        let overhead = self.shell_overhead.clone();
        let worker_opts = crate::exec::run::runner::Options {
            grace: self.opts.grace,
            noise: self.opts.noise.clone(),
            points_of: Some(self.rec.points_of()),
            quiet: true,
            worker: true,
            run_mark: Some(self.rec.mark.clone()),
            ..Default::default()
        };
        let points_of = self.rec.points_of();
        let mut failed = 0usize;
        let mut stop: Option<(Reason, &str, i32)> = None;
        let mut waiting: Vec<usize> = (0..todo.len()).collect();
        // a worker says it ended (its point's index), so the next point starts at once, not at
        // the next look
        let (ended_tx, ended) = std::sync::mpsc::channel::<usize>();
        let mut said_ended: Vec<usize> = Vec::new();
        let mut ended_since_sweep: Vec<String> = Vec::new();
        std::thread::scope(|s| {
            // (point, the place it runs at, its worker)
            let mut running: Vec<(usize, usize, std::thread::ScopedJoinHandle<'_, i32>)> =
                Vec::new();
            loop {
                if stop.is_none() && self.rec.interrupted().is_some() {
                    stop = Some((
                        Reason::RunInterrupted,
                        "interrupted",
                        exit_codes::INTERRUPTED,
                    ));
                }
                // merge what ended (first: a failure seen now starts nothing more under
                // --fail-fast)
                said_ended.extend(ended.try_iter());
                let mut k = 0;
                while k < running.len() {
                    if !running[k].2.is_finished() && !said_ended.contains(&running[k].0) {
                        k += 1;
                        continue;
                    }
                    let (i, at, h) = running.remove(k);
                    said_ended.retain(|j| *j != i);
                    // (a worker that said it ended returns at once)
                    let _ = h.join();
                    let (placed, plan, _) = &places[i].at[at];
                    let st = self.merge_worker(
                        todo[i],
                        &plan.points[0],
                        placed.as_deref(),
                        &fingerprint,
                    );
                    ended_since_sweep.push(todo[i].run_id.clone());
                    if st != "ok" && st != "skipped" {
                        failed += 1;
                        if self.opts.fail_fast && stop.is_none() {
                            self.rec.progress.line("stopping: --fail-fast");
                            stop = Some((Reason::FailFast, "failed", exit_codes::POINT_FAILED));
                        }
                    }
                }
                // nothing runs now: what the run adopted since is what the points that ended
                // left (with a cleared environment), stopped before the next point starts (a
                // server holding its port failed the later points of a host taken whole)
                if running.is_empty() {
                    self.sweep_after(&mut ended_since_sweep);
                }
                // start what fits, in the plan's order
                if stop.is_none() {
                    let mut k = 0;
                    while k < waiting.len() && running.len() < jobs {
                        let i = waiting[k];
                        let held: Vec<&[Resource]> = running
                            .iter()
                            .map(|(j, at, _)| places[*j].at[*at].2.as_slice())
                            .collect();
                        let Some(at) = places[i].free(&held) else {
                            k += 1;
                            continue;
                        };
                        waiting.remove(k);
                        let p = todo[i];
                        let on = places[i].moved_text(at);
                        self.rec.progress.point_started(&format!(
                            "[{}/{points_of}] {}{on}",
                            p.index + 1,
                            p.run_id
                        ));
                        let (plan, opts, overhead) = (&places[i].at[at].1, &worker_opts, &overhead);
                        let f = fragment(&self.rec.dir, &p.run_id);
                        let ended_tx = ended_tx.clone();
                        running.push((
                            i,
                            at,
                            s.spawn(move || {
                                let code = work(exp, plan, opts, overhead, f);
                                let _ = ended_tx.send(i);
                                code
                            }),
                        ));
                    }
                }
                if running.is_empty() && (waiting.is_empty() || stop.is_some()) {
                    break;
                }
                // until a worker ends (or a while, to see a signal)
                if let Ok(i) = ended.recv_timeout(Duration::from_millis(20)) {
                    said_ended.push(i);
                }
            }
        });
        self.rec.write_manifest();
        if let Some((why, status, code)) = stop {
            let ids: Vec<String> = waiting.iter().map(|i| todo[*i].run_id.clone()).collect();
            self.not_run(ids, why, status);
            return code;
        }
        if failed > 0 {
            exit_codes::POINT_FAILED
        } else {
            campaign.code()
        }
    }

    /// Stop what the run adopted since the last look, named as what `ended` (the points that
    /// ended since, none running now) left; `ended` is emptied.
    fn sweep_after(&mut self, ended: &mut Vec<String>) {
        if ended.is_empty() {
            return;
        }
        if let Some(since) = self.rec.adopting {
            let what = match ended.as_slice() {
                [one] => one.clone(),
                more => format!("points {}", more.join(", ")),
            };
            self.rec.sweep_adopted_of(since, &what);
        }
        ended.clear();
    }

    /// Where each point may run: its planned place, and a pool's other members preflight checked.
    fn places(&self, todo: &[&PlanPoint]) -> Vec<Places> {
        let checked: Vec<&str> = self
            .rec
            .used_hosts()
            .iter()
            .map(|h| h.name.as_str())
            .collect();
        let machines = machines(self.rec.exp);
        todo.iter()
            .map(|p| Places::of(&machines, self.rec.plan, p, &checked))
            .collect()
    }

    /// The workers' fragment directories; false (said) when they cannot be made.
    fn make_task_dirs(&mut self) -> bool {
        let tasks_dir = self.rec.dir.join(TASKS_DIR);
        let made = std::fs::create_dir_all(&tasks_dir)
            .and_then(|_| std::fs::create_dir_all(self.rec.dir.join(MERGED_DIR)));
        if let Err(e) = &made {
            self.rec
                .progress
                .line(&format!("error: cannot make {}: {e}", tasks_dir.display()));
        }
        made.is_ok()
    }

    /// The points a stopped run did not start, as not run for `why`.
    pub(in crate::exec) fn not_run(&mut self, run_ids: Vec<String>, why: Reason, status: &str) {
        if run_ids.is_empty() {
            return;
        }
        // the bare reason, as every other `not-run` event: its readers add "not run: "
        self.rec.publish(RunEvent::NotRun(event::NotRun {
            run_ids,
            status: status.into(),
            reason: why.render(Lang::En),
            cause: Some(why),
        }));
    }

    /// A worker's point into the journal from its fragment (a fragment that is not there: the
    /// point failed, its worker lost); the point's status. `ran` is the point as it ran (on
    /// another member of its pool than planned, perhaps); its identity is the planned `p`'s.
    fn merge_worker(
        &mut self,
        p: &PlanPoint,
        ran: &PlanPoint,
        placed: Option<&str>,
        fingerprint: &str,
    ) -> String {
        let f = fragment(&self.rec.dir, &p.run_id);
        let hash = crate::exec::state::point_hash(p);
        let task = format!("job-{}", p.index + 1);
        let st = if f.exists() {
            self.rec.merge(ran, &f, Some(&task), fingerprint, &hash)
        } else {
            "missing".into()
        };
        if st == "missing" {
            let why = Reason::TaskLost { task: task.clone() };
            self.rec.publish(RunEvent::Point(event::Point {
                fingerprint: Some(fingerprint.to_string()),
                task: Some(task),
                placed: placed.map(str::to_string),
                ..crate::exec::state::point_event(p, "failed", why)
            }));
        }
        st
    }

    /// A worker of `--jobs`: its one point into its fragment, with the run's shells' spawn
    /// times (the run's preflight has checked the hosts).
    pub(in crate::exec) fn run_in_pool(
        mut self,
        overhead: &HashMap<(String, String), crate::exec::state::Overhead>,
    ) -> i32 {
        self.shell_overhead = overhead.clone();
        // its own agent on each remote host of its point, over the run's connection (it closes
        // them at its end): the steps are timed and waited on as one job at a time does
        for h in self.rec.used_hosts() {
            if !h.is_local() && h.place.is_none() {
                self.rec.ssh.start_agent(h);
            }
        }
        let code = self.run_points(&BTreeMap::new());
        self.end_task(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(h: &str, g: Option<&str>) -> Resource {
        (h.into(), g.map(String::from))
    }

    #[test]
    fn points_clash_on_a_gpu_or_a_whole_host() {
        let a = [r("local", Some("0"))];
        let b = [r("local", Some("1"))];
        assert!(!clash(&a, &b));
        assert!(clash(&a, &a));
        assert!(clash(&a, &[r("local", None)]));
        assert!(clash(&[r("local", None)], &b));
        assert!(!clash(&a, &[r("far", None)]));
        assert!(clash(
            &[r("local", Some("0")), r("far", None)],
            &[r("far", Some("3"))]
        ));
    }

    /// One machine through a chain of hosts (helper 84): `a` and `c` are one ssh login, `c` and
    /// `b` one address, so `a` and `b` are one machine though nothing links them directly; `d`
    /// is another machine.
    #[test]
    fn hosts_linked_through_another_are_one_machine() {
        let text = "experiment t\nhost a ssh=\"s1\" ip=\"10.0.0.1\" repo=\"/r\"\nhost b ssh=\"s2\" ip=\"10.0.0.2\" repo=\"/r\"\nhost c ssh=\"s1\" ip=\"10.0.0.2\" repo=\"/q\"\nhost d ssh=\"s3\" ip=\"10.0.0.3\" repo=\"/r\"\nbench x {\n    run \"true\" host=a\n    run \"true\" host=b\n    run \"true\" host=c\n    run \"true\" host=d\n}\n";
        let loaded = crate::parse::load::load_str("t.kdl", text, &Default::default());
        let exp = loaded.experiment.expect("decodes");
        let m = machines(&exp);
        assert_eq!((m.of("a"), m.of("b"), m.of("c")), ("a", "a", "a"));
        assert_eq!(m.of("d"), "d");
    }

    fn planned(text: &str) -> (Experiment, Plan) {
        let loaded = crate::parse::load::load_str("t.kdl", text, &Default::default());
        let exp = loaded.experiment.expect("decodes");
        let plan = crate::plan::plan(
            &exp,
            "t.kdl",
            &Default::default(),
            Some("out"),
            chrono::Local::now(),
        )
        .expect("plans");
        (exp, plan)
    }

    /// Two names of one machine (helper 85): a server's GPU 0 on `a` is the machine's GPU 0,
    /// which a point on `b` may not take at once; a step that takes `a` whole sees all its
    /// GPUs, so it meets a GPU point on `b`, but not a whole point on `b` (a pool of them runs
    /// at once).
    #[test]
    fn a_server_or_a_whole_host_holds_its_machines_gpus_across_host_names() {
        let (exp, plan) = planned(
            "experiment t\nhost a ssh=\"local\" repo=\"ra\" gpus=1\nhost b ssh=\"local\" repo=\"rb\" gpus=1\nbench s {\n    serve srv \"sleep 9\" host=a gpus=1 ready-log=\"x\"\n    run \"true\" host=a gpus=1\n}\nbench w {\n    run \"true\" host=a\n}\nbench w2 {\n    run \"true\" host=b\n}\nbench g {\n    run \"true\" host=b gpus=1\n}\n",
        );
        let m = machines(&exp);
        let h = |bench: &str| {
            let p = plan.points.iter().find(|p| p.bench == bench).unwrap();
            holds(&m, p)
        };
        assert!(clash(&h("s"), &h("g")), "{:?} {:?}", h("s"), h("g"));
        // a server holds its own GPUs of the machine, not all of them (helper 86)
        assert!(!h("s").contains(&(format!("{GPUS_OF}a"), Some(ALL_GPUS.to_string()))));
        assert!(clash(&h("w"), &h("g")));
        assert!(!clash(&h("w"), &h("w2")));
    }

    /// A whole-host point and GPU points: the GPU points run at once beside each other, so no
    /// note says the points run one at a time (helper 85: it did, when the whole lane came
    /// first).
    #[test]
    fn one_whole_point_among_gpu_points_is_no_bottleneck() {
        let (_, plan) = planned(
            "experiment t\nhost local gpus=4\nbench x {\n    param k 0\n    run \"true\" lanes=\"whole\"\n    run \"true\" gpus=1 lanes=\"g\"\n    lane \"whole\"\n    lane \"g\"\n    sweep k 0 1\n}\n",
        );
        let todo: Vec<&PlanPoint> = plan.points.iter().collect();
        assert_eq!(one_at_a_time(&todo, 4), None);
        let whole: Vec<&PlanPoint> = plan.points.iter().filter(|p| p.lane == "whole").collect();
        assert!(one_at_a_time(&whole, 4).is_some_and(|n| n.contains("`local` whole")));
    }

    /// This machine by its own address, and an ssh login to that address: one machine.
    #[test]
    fn a_local_host_and_an_ssh_login_to_its_address_are_one_machine() {
        let (exp, _) = planned(
            "experiment t\nhost a ssh=\"local\" ip=\"10.1.1.1\" repo=\"ra\"\nhost s ssh=\"far\" ip=\"10.1.1.1\" repo=\"/r\"\nhost t ssh=\"other\" ip=\"10.1.1.2\" repo=\"/r\"\nbench x {\n    run \"true\" host=a\n    run \"true\" host=s\n    run \"true\" host=t\n}\n",
        );
        let m = machines(&exp);
        assert_eq!((m.of("a"), m.of("s"), m.of("t")), ("a", "a", "t"));
    }
}
