//! The run's machine checks: preflight probes every host at once ([`super::probe`]), records
//! each machine (journal, deployment.md) and applies the noise policy ([`super::noise`]);
//! between points it asks the GPU hosts again (their processes and throttle reasons) and
//! flags the point measured under them.

use std::time::Duration;

use super::noise::{
    findings, foreign, lane_drivers, throttled, torch_python, used_gpus, Finding, Policy,
};
use super::state::Runner;
use crate::model::Host;
use crate::plan::PlanPoint;
use crate::results::event::RunEvent;
use crate::results::machine::{self, Machine};

impl Runner<'_> {
    /// Probe every host (at once), record nothing yet; warn, or refuse (an error naming each
    /// problem) under `noise "refuse"`.
    pub(super) fn probe_machines(&mut self, hosts: &[&Host]) -> Result<(), String> {
        let policy = self
            .opts
            .noise
            .as_deref()
            .or(Some(self.exp.noise.policy.as_str()))
            .and_then(Policy::parse)
            .unwrap_or_default();
        self.noise.policy = policy;
        self.progress.status("preflight: machine checks");
        let root = std::env::var(super::probe::SYSFS_ROOT_VAR).ok();
        let scripts: Vec<String> = hosts
            .iter()
            .map(|h| {
                let torch = torch_python(self.plan, &h.name);
                // in the host's `env`, as its steps run: the nvidia-smi they would find
                super::probe::in_env(
                    &h.env,
                    &super::probe::script(
                        torch.as_deref().map(|p| (h.repo.as_str(), p)),
                        root.as_deref().filter(|_| !h.is_local()),
                    ),
                )
            })
            .collect();
        let ssh = self.ssh.clone();
        let outs: Vec<Result<(i32, String), String>> = std::thread::scope(|sc| {
            let handles: Vec<_> = hosts
                .iter()
                .zip(&scripts)
                .map(|(h, script)| {
                    let ssh = &ssh;
                    sc.spawn(move || {
                        super::preflight::host_exec(ssh, h, script, Duration::from_secs(90))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|t| t.join().unwrap_or_else(|_| Err("probe panicked".into())))
                .collect()
        });
        if super::signals::count() > 0 {
            return Err("interrupted".into());
        }
        let mut found = Vec::new();
        for (h, out) in hosts.iter().zip(outs) {
            let m = match out {
                Ok((_, text)) => {
                    let mut m = super::probe::parse(&h.name, &text);
                    // expr itself (running the probe) is not a consumer to name
                    if h.runs_here() {
                        let me = i64::from(std::process::id());
                        m.cpu.top.retain(|p| p.pid != me);
                    }
                    m
                }
                Err(e) => Machine {
                    host: h.name.clone(),
                    notes: vec![format!("the machine probe failed: {e}")],
                    ..Default::default()
                },
            };
            let used = used_gpus(self.plan, &h.name);
            found.extend(findings(&m, &used, self.exp.noise.gpu_clocks_locked));
            self.noise.last.insert(
                h.name.clone(),
                foreign(&m, &used).into_iter().map(|f| f.0).collect(),
            );
            self.noise.used.insert(h.name.clone(), used);
            self.noise.machines.push(m);
        }
        found.extend(lane_drivers(self.plan, &self.noise.machines));
        for (m, f) in self
            .noise
            .machines
            .iter_mut()
            .zip(std::iter::repeat(&found))
        {
            let host = format!("host `{}`", m.host);
            m.notes.extend(
                f.iter()
                    .filter(|x| x.text.starts_with(&host))
                    .map(|x| format!("noise: {}", x.text)),
            );
        }
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
            self.progress.line(&format!(
                "warning: noise: {} finding(s) on the machines (deployment.md lists them; run without --quiet to see them here)",
                warnings.len()
            ));
        } else {
            for f in warnings {
                self.progress.line(&format!("warning: noise: {}", f.text));
            }
        }
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

    /// The machines into the journal (after its header) and deployment.md.
    pub(super) fn record_machines(&mut self) {
        let mut md = String::from("\n## machine (preflight)\n");
        for m in &self.noise.machines {
            self.journal.emit(&RunEvent::Machine(m.clone()));
            md.push_str(&format!("\n### host `{}`\n\n", m.host));
            for l in machine::lines(m) {
                md.push_str(&format!("- {l}\n"));
            }
        }
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

    /// After a point: ask its GPU hosts again; what disturbed it (a foreign process seen before
    /// or after it, throttling now), one line each.
    pub(super) fn noise_after_point(&mut self, p: &PlanPoint) -> Vec<String> {
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
            let h = self.host(name);
            let out = super::preflight::host_exec(
                &self.ssh,
                h,
                &super::probe::in_env(&h.env, &super::probe::recheck_script()),
                Duration::from_secs(30),
            );
            let mut m = Machine {
                host: name.to_string(),
                ..Default::default()
            };
            match out {
                Ok((_, text)) => super::probe::parse_gpus(&text, &mut m),
                Err(e) => {
                    notes.push(format!(
                        "host `{name}`: GPUs not checked after the point ({e})"
                    ));
                    continue;
                }
            }
            let used = self.noise.used.get(name).cloned().unwrap_or_default();
            let now: Vec<String> = foreign(&m, &used).into_iter().map(|f| f.0).collect();
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
