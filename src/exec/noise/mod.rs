//! Is the machine quiet enough to measure? The noise policy over machine records: what makes
//! numbers meaningless (a refusal under `noise "refuse"`) and what only disturbs them (a
//! warning), each naming host, GPU, what and the command that fixes it — never run. The run's
//! side (probing, recording, the check between points) is `crate::exec::preflight::machine_check`.

pub(in crate::exec) mod probe;
use std::collections::{BTreeMap, BTreeSet};

use crate::plan::Plan;
use crate::results::machine::{self, Machine};
use crate::results::note::Found;
use crate::results::reason::Noise;
use crate::util::lang::Lang;

/// What the run does with what the probe finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    #[default]
    Warn,
    Refuse,
    Off,
}

impl Policy {
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "" | "warn" => Some(Policy::Warn),
            "refuse" => Some(Policy::Refuse),
            "off" => Some(Policy::Off),
            _ => None,
        }
    }
}

/// One thing the probe found: a refusal under `noise "refuse"`, else a warning.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub refuse: bool,
    /// In English (the terminal's warning, preflight's refusal).
    pub text: String,
    /// The same as data (the machine record's note).
    pub found: Found,
}

impl Finding {
    fn new(refuse: bool, found: Found) -> Finding {
        Finding {
            refuse,
            text: found.render(Lang::En),
            found,
        }
    }
}

/// The GPUs a host's steps use: those `CUDA_VISIBLE_DEVICES` names (indexes or UUIDs), or all
/// when no step on the host sets it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Used(pub Option<BTreeSet<String>>);

impl Used {
    pub fn has(&self, g: &machine::Gpu) -> bool {
        match &self.0 {
            None => true,
            Some(s) => {
                g.index.is_some_and(|i| s.contains(&i.to_string()))
                    || (!g.uuid.is_empty() && s.contains(&g.uuid))
            }
        }
    }
}

/// The GPUs the plan's steps on `host` use.
pub fn used_gpus(plan: &Plan, host: &str) -> Used {
    let mut set = BTreeSet::new();
    let mut any = false;
    for s in plan
        .points
        .iter()
        .flat_map(|p| p.steps.iter())
        .chain(plan.setup.iter())
        .filter(|s| s.host == host)
    {
        if let Some((_, v)) = s.env.iter().find(|(k, _)| k == "CUDA_VISIBLE_DEVICES") {
            any = true;
            set.extend(
                v.split(',')
                    .map(str::trim)
                    .filter(|x| !x.is_empty())
                    .map(str::to_string),
            );
        }
    }
    Used(any.then_some(set))
}

/// The python a host's steps run torch with (`torchrun`, `torch.distributed`, TorchRec), when
/// one does: its first argument when that is a python, else `python3`.
pub fn torch_python(plan: &Plan, host: &str) -> Option<String> {
    plan.points
        .iter()
        .flat_map(|p| p.steps.iter())
        .filter(|s| s.host == host)
        .find(|s| {
            s.argv.iter().any(|a| a.contains("torch"))
                || s.shell.as_deref().is_some_and(|l| l.contains("torch"))
        })
        .map(|s| match s.argv.first() {
            Some(p)
                if p.rsplit('/')
                    .next()
                    .is_some_and(|b| b.starts_with("python")) =>
            {
                p.clone()
            }
            _ => "python3".into(),
        })
}

/// The processes on the used GPUs of a machine: one note each, naming host, GPU, pid, owner.
pub(super) fn foreign(m: &Machine, used: &Used) -> Vec<(Noise, i64)> {
    let gpus = m.gpus.as_deref().unwrap_or(&[]);
    m.gpu_procs
        .iter()
        .filter_map(|p| {
            let g = gpus.iter().find(|g| g.uuid == p.gpu_uuid);
            if g.is_some_and(|g| !used.has(g)) {
                return None;
            }
            let label = g.map(|g| g.label()).unwrap_or_else(|| p.gpu_uuid.clone());
            Some((
                Noise::Foreign {
                    host: m.host.clone(),
                    gpu: label,
                    pid: p.pid,
                    comm: p.comm.clone(),
                    user: p.user.clone(),
                    mib: p.used_mib,
                },
                p.pid,
            ))
        })
        .collect()
}

/// The throttle reasons that slow the used GPUs down, one note each.
pub(super) fn throttled(m: &Machine, used: &Used) -> Vec<Noise> {
    m.gpus
        .iter()
        .flatten()
        .filter(|g| used.has(g))
        .filter_map(|g| {
            let s = machine::slowing(g.throttle?);
            (!s.is_empty()).then(|| Noise::Throttled {
                host: m.host.clone(),
                gpu: g.label(),
                reasons: s.iter().map(|r| r.to_string()).collect(),
                sm_mhz: g.sm_mhz,
            })
        })
        .collect()
}

/// What one machine's record says against measuring on it.
pub fn findings(m: &Machine, used: &Used, clocks_locked: bool) -> Vec<Finding> {
    let mut v = Vec::new();
    let host = m.host.clone();
    for (note, pid) in foreign(m, used) {
        v.push(Finding::new(
            true,
            Found::ForeignProc {
                note,
                host: host.clone(),
                pid,
            },
        ));
    }
    for g in m.gpus.iter().flatten().filter(|g| used.has(g)) {
        let (gpu, index) = (
            g.label(),
            g.index
                .map(|i| i.to_string())
                .unwrap_or_else(|| g.uuid.clone()),
        );
        if g.mig == Some(true) {
            v.push(Finding::new(
                true,
                Found::Mig {
                    host: host.clone(),
                    gpu: gpu.clone(),
                    index: index.clone(),
                },
            ));
        }
        if g.persistence == Some(false) {
            v.push(Finding::new(
                clocks_locked,
                Found::PersistenceOff {
                    host: host.clone(),
                    gpu: gpu.clone(),
                    index: index.clone(),
                    locked: clocks_locked,
                },
            ));
        }
        if clocks_locked {
            match (g.sm_mhz, g.app_sm_mhz) {
                (Some(sm), Some(app)) if (sm - app).abs() > app * 0.01 => v.push(Finding::new(
                    true,
                    Found::ClocksNotLocked {
                        host: host.clone(),
                        gpu: gpu.clone(),
                        index: index.clone(),
                        sm,
                        app,
                    },
                )),
                (Some(_), Some(_)) => {}
                _ => v.push(Finding::new(
                    false,
                    Found::ClocksUnknown {
                        host: host.clone(),
                        gpu: gpu.clone(),
                    },
                )),
            }
        }
        if let Some(n) = g.ecc_uncorrected.filter(|n| *n > 0) {
            v.push(Finding::new(
                false,
                Found::Ecc {
                    host: host.clone(),
                    gpu: gpu.clone(),
                    n,
                },
            ));
        }
    }
    for note in throttled(m, used) {
        v.push(Finding::new(false, Found::Throttled { note }));
    }
    let c = &m.cpu;
    if let Some(governor) = c.governor().filter(|g| g != "performance") {
        v.push(Finding::new(
            false,
            Found::Governor {
                host: host.clone(),
                governor,
            },
        ));
    }
    if c.turbo == Some(true) {
        v.push(Finding::new(false, Found::Turbo { host: host.clone() }));
    }
    if let Some(used) = c.swap_used_kib.filter(|k| *k > 0) {
        v.push(Finding::new(
            false,
            Found::Swap {
                host: host.clone(),
                mib: used as f64 / 1024.0,
            },
        ));
    }
    if let (Some(load), Some(n)) = (c.load, c.cpus) {
        if load[0] >= 1.0 && load[0] > n as f64 * 0.25 {
            v.push(Finding::new(
                false,
                Found::Load {
                    host: host.clone(),
                    load: load[0],
                    cpus: n,
                    // the busiest processes that use a CPU now (at 0 % one names no cause)
                    top: c
                        .top
                        .iter()
                        .filter(|p| p.pcpu >= 1.0)
                        .take(3)
                        .map(|p| (p.comm.clone(), p.pid, p.user.clone(), p.pcpu))
                        .collect(),
                },
            ));
        }
    }
    v
}

/// Lanes whose hosts run different NVIDIA drivers.
pub fn lane_drivers(plan: &Plan, machines: &[Machine]) -> Vec<Finding> {
    let mut lanes: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for p in &plan.points {
        let hosts = lanes.entry((p.bench.clone(), p.lane.clone())).or_default();
        hosts.extend(p.steps.iter().map(|s| s.host.clone()));
    }
    let mut v = Vec::new();
    for ((bench, lane), hosts) in lanes {
        let drivers: Vec<(String, String)> = hosts
            .iter()
            .filter_map(|h| {
                let m = machines.iter().find(|m| &m.host == h)?;
                let d = m.gpus.as_ref()?.iter().find_map(|g| g.driver.clone())?;
                Some((h.clone(), d))
            })
            .collect();
        let distinct: BTreeSet<&String> = drivers.iter().map(|(_, d)| d).collect();
        if distinct.len() > 1 {
            v.push(Finding::new(
                true,
                Found::LaneDrivers {
                    lane,
                    bench,
                    drivers,
                },
            ));
        }
    }
    v
}

/// The run's noise state: its policy, each host's machine and the GPUs it uses, and what the
/// last check saw on each host (a process there before a point was there during it).
#[derive(Debug, Default)]
pub struct NoiseState {
    pub policy: Policy,
    pub machines: Vec<Machine>,
    pub used: BTreeMap<String, Used>,
    pub last: BTreeMap<String, Vec<Noise>>,
    /// What `noise "refuse"` refused, as data (an array task's point says it in its reason).
    pub refused: Vec<crate::results::note::Found>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::machine::{Gpu, GpuProc};

    fn m() -> Machine {
        Machine {
            host: "h".into(),
            gpus: Some(vec![
                Gpu {
                    index: Some(0),
                    uuid: "GPU-a".into(),
                    persistence: Some(true),
                    sm_mhz: Some(1980.0),
                    app_sm_mhz: Some(1410.0),
                    driver: Some("535".into()),
                    ..Default::default()
                },
                Gpu {
                    index: Some(1),
                    uuid: "GPU-b".into(),
                    persistence: Some(false),
                    mig: Some(true),
                    throttle: Some(0x40),
                    ..Default::default()
                },
            ]),
            gpu_procs: vec![GpuProc {
                gpu_uuid: "GPU-b".into(),
                pid: 77,
                used_mib: Some(512.0),
                user: Some("bob".into()),
                comm: Some("python3".into()),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_foreign_process_on_a_used_gpu_refuses_and_names_the_fix() {
        let f = findings(&m(), &Used(None), false);
        let refusals: Vec<&str> = f
            .iter()
            .filter(|f| f.refuse)
            .map(|f| f.text.as_str())
            .collect();
        assert!(
            refusals.iter().any(|t| t
                .contains("GPU 1: foreign process pid 77 (python3, user bob, 512 MiB)")
                && t.contains("kill 77")),
            "{refusals:#?}"
        );
        assert!(refusals
            .iter()
            .any(|t| t.contains("MIG mode is on") && t.contains("nvidia-smi -i 1 -mig 0")));
        // persistence off only warns without locked clocks
        assert!(f
            .iter()
            .any(|f| !f.refuse && f.text.contains("nvidia-smi -i 1 -pm 1")));
        assert!(f
            .iter()
            .any(|f| !f.refuse && f.text.contains("hw_thermal_slowdown")));
        // GPU 1 not used: nothing about it
        let only0 = Used(Some(["0".to_string()].into()));
        let f = findings(&m(), &only0, false);
        assert!(f.iter().all(|f| !f.text.contains("GPU 1")), "{f:#?}");
    }

    #[test]
    fn locked_clocks_are_checked_against_the_application_clock() {
        let f = findings(&m(), &Used(Some(["GPU-a".to_string()].into())), true);
        assert!(
            f.iter().any(|f| f.refuse
                && f.text
                    .contains("SM clock is 1980 MHz, not its application clock 1410 MHz")
                && f.text.contains("nvidia-smi -i 0 -lgc 1410,1410")),
            "{f:#?}"
        );
    }

    #[test]
    fn policies() {
        assert_eq!(Policy::parse(""), Some(Policy::Warn));
        assert_eq!(Policy::parse("refuse"), Some(Policy::Refuse));
        assert_eq!(Policy::parse("loud"), None);
    }
}
