//! The run's machine checks: preflight probes every host at once ([`crate::exec::noise::probe`]), records
//! each machine (journal, deployment.md) and applies the noise policy ([`crate::exec::noise`]);
//! between points it asks the GPU hosts again (their processes and throttle reasons) and
//! flags the point measured under them.

use std::time::Duration;

use crate::exec::backend::host::Ssh;
use crate::exec::noise::{
    findings, foreign, lane_drivers, throttled, torch_python, used_gpus, Finding, Policy,
};
use crate::exec::state::{Recorder, Runner};
use crate::model::{Host, NodePlace};
use crate::plan::PlanPoint;
use crate::results::event::RunEvent;
use crate::results::machine::{self, Clock, Machine};
use crate::results::note::Note;
use crate::results::reason::{Noise, Reason};

/// One machine in deployment.md: its host (and, for an array task's, the node it got), then
/// its lines.
fn machine_md(m: &Machine) -> String {
    let mut md = match (&m.task, &m.node) {
        (Some(_), Some(n)) => format!("\n### host `{}` (node `{n}`)\n\n", m.host),
        _ => format!("\n### host `{}`\n\n", m.host),
    };
    for l in machine::lines(m) {
        md.push_str(&format!("- {l}\n"));
    }
    md
}

/// Where a host's machine is probed.
enum Probed<'h> {
    /// On the host itself (here, or over its ssh session).
    Host,
    /// A node of a Slurm allocation: through `srun` on that node, not on the machine expr
    /// runs on.
    Node(&'h NodePlace),
    /// A node of an array not allocated yet: each task probes the node it gets.
    Later,
}

fn probed(h: &Host) -> Probed<'_> {
    match &h.place {
        Some(p) if p.here => Probed::Host,
        Some(p) if p.job.is_some() => Probed::Node(p),
        Some(_) => Probed::Later,
        None => Probed::Host,
    }
}

/// Run a probe script where the host's steps run: a node of an allocation through `srun
/// --overlap`, else as preflight runs its scripts (here, or over the host's session).
fn probe_exec(
    ssh: &Ssh,
    h: &Host,
    script: &str,
    timeout: Duration,
) -> Result<(i32, String), String> {
    match probed(h) {
        Probed::Node(place) => {
            let argv = crate::plan::srun::srun_argv(place, "expr-machine-probe", ".", script);
            let c = duct::cmd(&argv[0], &argv[1..]);
            crate::exec::backend::host::run_captured_until(c, None, timeout, &|| {
                crate::exec::signals::count() > 0
            })
        }
        _ => crate::exec::preflight::host_exec(ssh, h, script, timeout),
    }
}

/// The host's clock against this one's: `date +%s%3N` there (in the host's `env`, as its
/// samplers run) three times, the reading with the shortest round trip kept, against the
/// midpoint of this clock around it. None where the host runs here (one clock) or its `date`
/// prints no milliseconds.
fn clock_of(ssh: &Ssh, h: &Host) -> Option<Clock> {
    if h.runs_here() {
        return None;
    }
    let script = crate::exec::noise::probe::in_env(&h.env, "date +%s%3N");
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64() * 1e3)
            .unwrap_or(0.0)
    };
    let mut best: Option<Clock> = None;
    for _ in 0..3 {
        let a = now();
        let Ok((0, out)) = probe_exec(ssh, h, &script, Duration::from_secs(20)) else {
            break;
        };
        let b = now();
        let Some(there) = out
            .lines()
            .rev()
            .find_map(|l| l.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 1e12)
        else {
            break;
        };
        let c = Clock {
            offset_ms: there - (a + b) / 2.0,
            rtt_ms: b - a,
        };
        if best.is_none_or(|x| c.rtt_ms < x.rtt_ms) {
            best = Some(c);
        }
    }
    best
}

impl Runner<'_> {
    fn noise_policy(&self) -> Policy {
        self.opts
            .noise
            .as_deref()
            .or(Some(self.rec.exp.noise.policy.as_str()))
            .and_then(Policy::parse)
            .unwrap_or_default()
    }

    /// Probe hosts at once (in each host's `env`, as its steps run), torch and NCCL too when
    /// `torch`; a probe that failed is a machine with a note. Err when interrupted.
    fn probe_hosts(&self, hosts: &[&Host], torch: bool) -> Result<Vec<Machine>, String> {
        let root = std::env::var(crate::exec::noise::probe::SYSFS_ROOT_VAR).ok();
        let scripts: Vec<String> = hosts
            .iter()
            .map(|h| {
                let torch = torch
                    .then(|| torch_python(self.rec.plan, &h.name))
                    .flatten();
                // in the host's `env`, as its steps run: the nvidia-smi they would find
                crate::exec::noise::probe::in_env(
                    &h.env,
                    &crate::exec::noise::probe::script(
                        torch.as_deref().map(|p| (h.repo.as_str(), p)),
                        root.as_deref().filter(|_| !h.is_local()),
                    ),
                )
            })
            .collect();
        let ssh = self.rec.ssh.clone();
        // a remote host's clock matters to the samples stamped there: read with telemetry only
        let clocks = self.rec.exp.telemetry.is_some();
        type ProbeOut = Result<((i32, String), Option<Clock>), String>;
        let outs: Vec<ProbeOut> = std::thread::scope(|sc| {
            let handles: Vec<_> = hosts
                .iter()
                .zip(&scripts)
                .map(|(h, script)| {
                    let ssh = &ssh;
                    sc.spawn(move || {
                        probe_exec(ssh, h, script, Duration::from_secs(90))
                            .map(|out| (out, clocks.then(|| clock_of(ssh, h)).flatten()))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|t| t.join().unwrap_or_else(|_| Err("probe panicked".into())))
                .collect()
        });
        if crate::exec::signals::count() > 0 {
            return Err("interrupted".into());
        }
        Ok(hosts
            .iter()
            .zip(outs)
            .map(|(h, out)| match out {
                Ok(((_, text), clock)) => {
                    let mut m = crate::exec::noise::probe::parse(&h.name, &text);
                    m.clock = clock;
                    // expr itself (running the probe) is not a consumer to name
                    if h.runs_here() {
                        let me = i64::from(std::process::id());
                        m.cpu.top.retain(|p| p.pid != me);
                    }
                    m
                }
                Err(e) => {
                    let mut m = Machine {
                        host: h.name.clone(),
                        ..Default::default()
                    };
                    m.note(Note::ProbeFailed {
                        error: e.to_string(),
                    });
                    m
                }
            })
            .collect())
    }

    /// The policy over probed machines: what each says against measuring (also into its
    /// notes), and what the checks after each point start from.
    fn judge(&mut self, machines: Vec<Machine>) -> Vec<Finding> {
        let mut found = Vec::new();
        for m in machines {
            let used = used_gpus(self.rec.plan, &m.host);
            found.extend(findings(&m, &used, self.rec.exp.noise.gpu_clocks_locked));
            self.noise.last.insert(
                m.host.clone(),
                foreign(&m, &used).into_iter().map(|f| f.0).collect(),
            );
            self.noise.used.insert(m.host.clone(), used);
            self.noise.machines.push(m);
        }
        found.extend(lane_drivers(self.rec.plan, &self.noise.machines));
        for m in self.noise.machines.iter_mut() {
            let host = format!("host `{}`", m.host);
            let notes: Vec<Note> = found
                .iter()
                .filter(|x| x.text.starts_with(&host))
                .map(|x| Note::Noise {
                    found: x.found.clone(),
                })
                .collect();
            for n in notes {
                m.note(n);
            }
        }
        found
    }

    /// Say the warnings; Err naming every refusal under `noise "refuse"`.
    fn apply_policy(&mut self, found: &[Finding]) -> Result<(), String> {
        let policy = self.noise.policy;
        if policy == Policy::Off {
            return Ok(());
        }
        let refusals: Vec<&Finding> = found
            .iter()
            .filter(|f| f.refuse && policy == Policy::Refuse)
            .collect();
        let warnings: Vec<&Finding> = found
            .iter()
            .filter(|f| !(f.refuse && policy == Policy::Refuse))
            .collect();
        if self.opts.quiet && !warnings.is_empty() {
            // --quiet: one line; deployment.md and the journal hold each
            self.rec.progress.line(&format!(
                "warning: noise: {} finding(s) on the machines (deployment.md lists them; run without --quiet to see them here)",
                warnings.len()
            ));
        } else {
            for f in warnings {
                self.rec
                    .progress
                    .line(&format!("warning: noise: {}", f.text));
            }
        }
        self.noise.refused = refusals.iter().map(|f| f.found.clone()).collect();
        if refusals.is_empty() {
            Ok(())
        } else {
            Err(refusals
                .iter()
                .map(|f| format!("noise \"refuse\": {}", f.text))
                .chain(std::iter::once(
                    "(nothing was changed on the hosts; `--noise warn` runs anyway and flags the points)".to_string(),
                ))
                .collect::<Vec<_>>()
                .join("\n"))
        }
    }

    /// Probe every host (at once), record nothing yet; warn, or refuse (an error naming each
    /// problem) under `noise "refuse"`. The nodes of an array are not known yet: each task
    /// probes its own ([`Self::noise_in_task`]).
    pub(in crate::exec) fn probe_machines(&mut self, hosts: &[&Host]) -> Result<(), String> {
        self.noise.policy = self.noise_policy();
        self.rec.progress.status("preflight: machine checks");
        let (later, now): (Vec<&Host>, Vec<&Host>) = hosts
            .iter()
            .copied()
            .partition(|h| matches!(probed(h), Probed::Later));
        let machines = self.probe_hosts(&now, true)?;
        let found = self.judge(machines);
        for h in later {
            let mut m = Machine {
                host: h.name.clone(),
                ..Default::default()
            };
            m.note(Note::ProbedByTasks);
            self.noise.machines.push(m);
        }
        self.apply_policy(&found)
    }

    /// The GPUs the plan places steps on (`CUDA_VISIBLE_DEVICES`) are there: a host where
    /// nvidia-smi is not available, or that lists fewer GPUs, is refused before anything is
    /// built, whatever the noise policy (a probe that could not run says nothing either way).
    pub(in crate::exec) fn gpus_there(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for m in &self.noise.machines {
            let Some(used) = crate::exec::noise::used_gpus(self.rec.plan, &m.host).0 else {
                continue;
            };
            let wanted: Vec<u32> = used.iter().filter_map(|g| g.parse().ok()).collect();
            if wanted.is_empty() {
                continue;
            }
            let unprobed = m.notes_of.iter().any(|n| {
                matches!(
                    n,
                    Note::ProbeFailed { .. } | Note::ProbedByTasks | Note::SmiSilent
                )
            });
            // where the placement is written: the first step that gets the GPUs
            let origin = self
                .rec
                .plan
                .points
                .iter()
                .flat_map(|p| p.steps.iter())
                .find(|s| {
                    s.host == m.host && s.env.iter().any(|(k, _)| k == "CUDA_VISIBLE_DEVICES")
                })
                .map(|s| format!(" (from {})", s.origin_text()))
                .filter(|o| o != " (from )")
                .unwrap_or_default();
            let list = wanted
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            match &m.gpus {
                None if !unprobed => problems.push(format!(
                    "host `{}` has no GPU nvidia-smi can see (nvidia-smi is not available there), and the plan places steps on its GPU {list}{origin}: run on a host with GPUs (where the benchmark runs on CPU, set `device \"cpu\"`)",
                    m.host
                )),
                Some(gpus) => {
                    let have: Vec<u32> = gpus.iter().filter_map(|g| g.index).collect();
                    let absent: Vec<String> = wanted
                        .iter()
                        .filter(|w| !have.contains(w))
                        .map(u32::to_string)
                        .collect();
                    if !absent.is_empty() && !have.is_empty() {
                        problems.push(format!(
                            "host `{}` has {} GPU(s) (index {}), and the plan places steps on GPU {}{origin}: change `gpu=` (or `nproc-per-node=`), or declare `gpus={}` on the host so `check` catches it",
                            m.host,
                            have.len(),
                            have.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
                            absent.join(", "),
                            have.len()
                        ));
                    }
                }
                None => {}
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }

    /// Inside an array task, before its point: the machine of the node(s) it got, probed as
    /// preflight probes a host (torch left out: one import per task) and recorded in the
    /// task's journal; the policy applied to it. Err: the refusal under `noise "refuse"`,
    /// and the point does not run there.
    pub(in crate::exec) fn noise_in_task(&mut self) -> Result<(), String> {
        self.noise.policy = self.noise_policy();
        let hosts = self.rec.used_hosts();
        let Ok(machines) = self.probe_hosts(&hosts, false) else {
            // interrupted: the point is not started either
            return Ok(());
        };
        let found = self.judge(machines);
        for m in &self.noise.machines {
            self.rec.journal.emit(&RunEvent::Machine(m.clone()));
        }
        self.apply_policy(&found)
    }

    /// An array task whose node is refused: its point, failed with the refusal, in the
    /// task's journal (the run merges it); the task's exit code.
    pub(in crate::exec) fn refuse_task_point(&mut self, why: &str) -> i32 {
        for line in why.lines() {
            self.rec.progress.line(&format!("error: {line}"));
        }
        let parts: Vec<Reason> = self
            .noise
            .refused
            .iter()
            .map(|f| Reason::NoiseRefused { found: f.clone() })
            .collect();
        let cause = Reason::NotRun {
            why: Box::new(Reason::Join { parts }),
        };
        for p in &self.rec.plan.points {
            let ev = crate::exec::state::point_event(p, "failed", cause.clone());
            self.rec.publish(RunEvent::Point(ev));
        }
        crate::util::exit_codes::PREFLIGHT
    }

    /// The machines into the journal (after its header) and deployment.md.
    pub(in crate::exec) fn record_machines(&mut self) {
        let mut md = String::from("\n## machine (preflight)\n");
        for m in &self.noise.machines {
            self.rec.journal.emit(&RunEvent::Machine(m.clone()));
            md.push_str(&machine_md(m));
        }
        self.rec.append_deployment(&md);
    }

    /// After a point: ask its GPU hosts again; what disturbed it (a foreign process seen before
    /// or after it, throttling now), one note each.
    pub(in crate::exec) fn noise_after_point(&mut self, p: &PlanPoint) -> Vec<Noise> {
        if self.noise.policy == Policy::Off {
            return Vec::new();
        }
        let mut hosts: Vec<&str> = p.steps.iter().map(|s| s.host.as_str()).collect();
        hosts.sort();
        hosts.dedup();
        let mut notes = Vec::new();
        for name in hosts {
            let has_gpus = self
                .noise
                .machines
                .iter()
                .any(|m| m.host == name && m.gpus.as_ref().is_some_and(|g| !g.is_empty()));
            if !has_gpus {
                continue;
            }
            let h = self.rec.host(name);
            let out = probe_exec(
                &self.rec.ssh,
                h,
                &crate::exec::noise::probe::in_env(
                    &h.env,
                    &crate::exec::noise::probe::recheck_script(),
                ),
                Duration::from_secs(30),
            );
            let mut m = Machine {
                host: name.to_string(),
                ..Default::default()
            };
            match out {
                Ok((_, text)) => crate::exec::noise::probe::parse_gpus(&text, &mut m),
                Err(e) => {
                    notes.push(Noise::NotChecked {
                        host: name.to_string(),
                        error: e.to_string(),
                    });
                    continue;
                }
            }
            let used = self.noise.used.get(name).cloned().unwrap_or_default();
            let now: Vec<Noise> = foreign(&m, &used).into_iter().map(|f| f.0).collect();
            let before = self
                .noise
                .last
                .insert(name.to_string(), now.clone())
                .unwrap_or_default();
            for l in before.iter().chain(now.iter()) {
                if !notes.contains(l) {
                    notes.push(l.clone());
                }
            }
            notes.extend(throttled(&m, &used));
        }
        notes
    }
}

impl Recorder<'_> {
    /// The machines of an array task's node(s), merged into the journal by the submitting run:
    /// into deployment.md too, under the task.
    pub(in crate::exec) fn record_task_machines(&mut self, machines: &[Machine]) {
        if machines.is_empty() {
            return;
        }
        let mut md = String::new();
        for m in machines {
            md.push_str(&format!(
                "\n## machine (array task {})\n",
                m.task.as_deref().unwrap_or("?")
            ));
            md.push_str(&machine_md(m));
        }
        self.append_deployment(&md);
    }

    fn append_deployment(&mut self, md: &str) {
        let path = self.dir.join("deployment.md");
        if path.is_file() {
            use std::io::Write;
            let r = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(md.as_bytes()));
            if let Err(e) = r {
                self.write_errors.push(format!("deployment.md ({e})"));
            }
        }
    }
}
