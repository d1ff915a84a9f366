//! A host's machine record: what preflight found that can disturb a measurement (CPU governor
//! and turbo, load, memory and swap, NUMA, transparent huge pages; per GPU its clocks, power
//! cap, throttling, persistence, MIG, driver and the processes on it; InfiniBand ports; torch
//! and NCCL versions). Written to the journal as one `machine` event per host; the report
//! shows it and compare diffs it. A value that was not read is `None`, and `notes` say why.

pub use crate::model::schema::ASPECTS;

use crate::results::note::Note;
use crate::util::lang::Lang;
use serde::{Deserialize, Serialize};

/// One host's machine record.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Machine {
    pub host: String,
    /// The name of the machine the probe ran on (`uname -n`): for a host of a Slurm array, the
    /// node its task got.
    pub node: Option<String>,
    /// The array task whose probe this is (added when its fragment is merged).
    pub task: Option<String>,
    pub cpu: Cpu,
    /// `None`: `nvidia-smi` is not on the host's PATH (or did not answer; see `notes`).
    pub gpus: Option<Vec<Gpu>>,
    /// The compute processes on the host's GPUs, as `nvidia-smi --query-compute-apps` lists
    /// them at preflight.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpu_procs: Vec<GpuProc>,
    /// The CUDA version the driver supports (`nvidia-smi`'s banner).
    pub cuda: Option<String>,
    /// `None`: neither `ibstat` nor `ibv_devinfo` is on the host.
    pub ib: Option<Vec<IbPort>>,
    /// `torch.__version__`, where a step of the run uses torch.
    pub torch: Option<String>,
    /// `torch.cuda.nccl.version()`.
    pub nccl: Option<String>,
    /// Why a part is missing (`nvidia-smi: not available`, a tool's error line).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The same notes as data (a report says them in its language); an older record has only
    /// `notes`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes_of: Vec<Note>,
    /// The host's clock against expr's, where they are two clocks (a remote host): telemetry
    /// samples stamped there are read over the measured window moved by it.
    pub clock: Option<Clock>,
}

/// A host's clock against expr's: `offset_ms` = the host's reading minus expr's clock at the
/// midpoint of the round trip it was read in (`rtt_ms`; the offset is known to ± half of it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    pub offset_ms: f64,
    pub rtt_ms: f64,
}

impl Clock {
    /// The offset to read the host's samples with: none when it is within half the round trip
    /// (a clock in step with expr's reads so, since the host's `date` runs after the session's
    /// start-up on the way out).
    pub fn offset(&self) -> Option<f64> {
        (self.offset_ms.is_finite() && self.offset_ms.abs() > self.rtt_ms / 2.0)
            .then_some(self.offset_ms)
    }
}

impl Machine {
    /// Add a note: its English text to `notes`, and itself to `notes_of`.
    pub fn note(&mut self, n: Note) {
        self.notes.push(n.render(Lang::En));
        self.notes_of.push(n);
    }

    /// The notes in `l`: as data when the record holds them for every note, else as written.
    pub fn notes_in(&self, l: Lang) -> Vec<String> {
        let same = self.notes_of.len() == self.notes.len()
            && self
                .notes_of
                .iter()
                .zip(&self.notes)
                .all(|(n, t)| n.render(Lang::En) == *t);
        if same {
            self.notes_of.iter().map(|n| n.render(l)).collect()
        } else {
            self.notes.clone()
        }
    }
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpu {
    /// `scaling_governor` of every CPU: (governor, how many CPUs), most first.
    pub governors: Vec<(String, u64)>,
    /// Turbo/boost on: `intel_pstate/no_turbo` = 0, or `cpufreq/boost` = 1.
    pub turbo: Option<bool>,
    pub cpus: Option<u64>,
    /// `/proc/loadavg`: 1, 5 and 15 minutes.
    pub load: Option<[f64; 3]>,
    /// The top CPU consumers (`ps --sort=-pcpu`), the probe itself left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<TopProc>,
    /// `/proc/meminfo`, KiB.
    pub mem_total_kib: Option<u64>,
    pub mem_available_kib: Option<u64>,
    pub swap_total_kib: Option<u64>,
    pub swap_used_kib: Option<u64>,
    /// `/sys/devices/system/node/node*`.
    pub numa_nodes: Option<u64>,
    /// The selected mode of `transparent_hugepage/enabled` (`always`, `madvise`, `never`).
    pub thp: Option<String>,
    /// Whether `irqbalance` runs.
    pub irqbalance: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TopProc {
    pub pid: i64,
    pub user: String,
    pub pcpu: f64,
    pub comm: String,
}

/// One GPU, as `nvidia-smi --query-gpu=… --format=csv,noheader,nounits` reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    pub index: Option<u32>,
    pub name: String,
    pub uuid: String,
    pub persistence: Option<bool>,
    /// Current SM and memory clocks, MHz.
    pub sm_mhz: Option<f64>,
    pub mem_mhz: Option<f64>,
    /// The application graphics clock (what `nvidia-smi -ac` sets), MHz.
    pub app_sm_mhz: Option<f64>,
    pub max_sm_mhz: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub temp_c: Option<f64>,
    /// `clocks_throttle_reasons.active`, NVML's bit mask.
    pub throttle: Option<u64>,
    pub ecc_uncorrected: Option<u64>,
    pub mig: Option<bool>,
    pub driver: Option<String>,
}

/// A compute process on a GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuProc {
    pub gpu_uuid: String,
    pub pid: i64,
    pub used_mib: Option<f64>,
    /// From `ps` on the host; `None` when the pid is not visible there (another container).
    pub user: Option<String>,
    pub comm: Option<String>,
}

/// One InfiniBand port (`ibstat` or `ibv_devinfo`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IbPort {
    pub ca: String,
    pub port: u32,
    pub state: String,
    pub rate: Option<String>,
}

/// NVML's clock-throttle reasons (`nvmlClocksThrottleReason*`): bit, name, and whether it
/// slows a measurement down (idle and the application-clock setting do not).
pub const THROTTLE_REASONS: &[(u64, &str, bool)] = &[
    (0x1, "gpu_idle", false),
    (0x2, "applications_clocks_setting", false),
    (0x4, "sw_power_cap", true),
    (0x8, "hw_slowdown", true),
    (0x10, "sync_boost", false),
    (0x20, "sw_thermal_slowdown", true),
    (0x40, "hw_thermal_slowdown", true),
    (0x80, "hw_power_brake_slowdown", true),
    (0x100, "display_clocks_setting", false),
];

/// The names of the reasons in a mask that slow a measurement down.
pub fn slowing(mask: u64) -> Vec<&'static str> {
    THROTTLE_REASONS
        .iter()
        .filter(|(bit, _, slows)| *slows && mask & bit != 0)
        .map(|(_, name, _)| *name)
        .collect()
}

impl Cpu {
    /// The governor of every CPU, `mixed (…)` when they differ; `None` when no CPU has one.
    pub fn governor(&self) -> Option<String> {
        match self.governors.as_slice() {
            [] => None,
            [(g, _)] => Some(g.clone()),
            many => Some(format!(
                "mixed ({})",
                many.iter()
                    .map(|(g, n)| format!("{n}× {g}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

impl Gpu {
    /// `GPU 0 (NVIDIA A100-SXM4-80GB)`.
    pub fn label(&self) -> String {
        format!(
            "GPU {}",
            self.index
                .map(|i| i.to_string())
                .unwrap_or_else(|| self.uuid.clone())
        )
    }
}

/// One difference between two runs' machines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub host: String,
    /// One of [`ASPECTS`].
    pub aspect: String,
    /// What differs (`GPU 0 SM clock`).
    pub what: String,
    pub a: String,
    pub b: String,
}

fn show<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "not available".into())
}

fn mhz(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.0} MHz"))
        .unwrap_or_else(|| "not available".into())
}

/// The values of one machine that compare looks at: (aspect, what, value).
fn facets(m: &Machine) -> Vec<(&'static str, String, String)> {
    let mut v = vec![
        (
            "governor",
            "CPU governor".to_string(),
            show(&m.cpu.governor()),
        ),
        (
            "turbo",
            "CPU turbo/boost".into(),
            show(&m.cpu.turbo.map(|t| if t { "on" } else { "off" })),
        ),
        ("thp", "transparent huge pages".into(), show(&m.cpu.thp)),
        ("torch", "torch".into(), show(&m.torch)),
        ("nccl", "NCCL".into(), show(&m.nccl)),
        ("cuda", "CUDA".into(), show(&m.cuda)),
    ];
    for g in m.gpus.iter().flatten() {
        let l = g.label();
        v.push(("driver", format!("{l} driver"), show(&g.driver)));
        v.push(("gpu-model", format!("{l} model"), g.name.clone()));
        v.push(("clocks", format!("{l} SM clock"), mhz(g.sm_mhz)));
        v.push(("clocks", format!("{l} memory clock"), mhz(g.mem_mhz)));
        v.push((
            "clocks",
            format!("{l} application clock"),
            mhz(g.app_sm_mhz),
        ));
        v.push((
            "power-limit",
            format!("{l} power limit"),
            g.power_limit_w
                .map(|w| format!("{w:.0} W"))
                .unwrap_or_else(|| "not available".into()),
        ));
        v.push((
            "persistence",
            format!("{l} persistence mode"),
            show(&g.persistence.map(|p| if p { "on" } else { "off" })),
        ));
    }
    if m.gpus.is_none() {
        v.push(("gpu-model", "GPUs".into(), "none (no nvidia-smi)".into()));
    }
    v
}

/// What differs between two runs' machines, host by host (hosts matched by name; a host only
/// one side has is not a difference of its machine).
pub fn differences(a: &[Machine], b: &[Machine]) -> Vec<Difference> {
    let mut out = Vec::new();
    for ma in a {
        let Some(mb) = b.iter().find(|m| m.host == ma.host) else {
            continue;
        };
        let (fa, fb) = (facets(ma), facets(mb));
        for (aspect, what, va) in fa.iter().cloned() {
            let vb = fb
                .iter()
                .find(|(_, w, _)| *w == what)
                .map(|(_, _, v)| v.clone())
                .unwrap_or_else(|| "absent".into());
            if va != vb {
                out.push(Difference {
                    host: ma.host.clone(),
                    aspect: aspect.into(),
                    what,
                    a: va,
                    b: vb,
                });
            }
        }
        for (aspect, what, vb) in fb {
            if !fa.iter().any(|(_, w, _)| *w == what) {
                out.push(Difference {
                    host: ma.host.clone(),
                    aspect: aspect.into(),
                    what,
                    a: "absent".into(),
                    b: vb,
                });
            }
        }
    }
    out
}

/// One machine as short lines in English (the run's progress output).
pub fn lines(m: &Machine) -> Vec<String> {
    lines_in(m, Lang::En)
}

/// One machine as short lines for a report in its language (every number from its source, or
/// `—` and why; names of files, tools and settings as they are).
pub fn lines_in(m: &Machine, l: Lang) -> Vec<String> {
    let c = &m.cpu;
    let sep = l.comma();
    let mut v = Vec::new();
    cpu_line(&mut v, c, l);
    load_top_lines(&mut v, c, l);
    match &m.gpus {
        None => v.push(
            l.t("GPU：nvidia-smi 不可用", "GPUs: nvidia-smi not available")
                .into(),
        ),
        Some(gpus) => {
            for g in gpus {
                gpu_line(&mut v, m, g, l);
            }
            for p in &m.gpu_procs {
                gpu_proc_line(&mut v, gpus, p, l);
            }
        }
    }
    ib_line(&mut v, m, l);
    if m.torch.is_some() || m.nccl.is_some() {
        v.push(format!(
            "torch {}{sep}NCCL {}",
            m.torch.as_deref().unwrap_or("—"),
            m.nccl.as_deref().unwrap_or("—")
        ));
    }
    // the GPUs line already says that nvidia-smi is not there
    let said = [
        crate::results::note::Note::NoNvidiaSmi.render(l),
        crate::results::note::Note::NoNvidiaSmi.render(Lang::En),
    ];
    for n in m.notes_in(l) {
        if m.gpus.is_none() && said.contains(&n) {
            continue;
        }
        v.push(format!("{}{n}", l.t("注：", "note: ")));
    }
    v
}

/// `on` or `off` in the report's language.
fn on_off(l: Lang, b: bool) -> String {
    if b {
        l.t("开", "on")
    } else {
        l.t("关", "off")
    }
    .to_string()
}

/// The CPU's settings (governor, turbo, CPUs, NUMA nodes, THP, irqbalance) on one line.
fn cpu_line(v: &mut Vec<String>, c: &Cpu, l: Lang) {
    let na = |what: &str| format!("—{}", l.paren(what));
    let sep = l.comma();
    let on = |b: bool| on_off(l, b);
    let cpu = [
        format!(
            "governor {}",
            c.governor().unwrap_or_else(|| na(l.t(
                "/sys 中没有 cpufreq scaling_governor",
                "no cpufreq scaling_governor in /sys"
            )))
        ),
        format!(
            "turbo {}",
            c.turbo.map(on).unwrap_or_else(|| na(l.t(
                "没有 intel_pstate/no_turbo 或 cpufreq/boost",
                "no intel_pstate/no_turbo or cpufreq/boost"
            )))
        ),
        format!(
            "{} {}",
            c.cpus.map(|n| n.to_string()).unwrap_or_else(|| na("nproc")),
            l.t("个 CPU", "CPUs")
        ),
        format!(
            "{} {}",
            c.numa_nodes
                .map(|n| n.to_string())
                .unwrap_or_else(|| na(l.t(
                    "没有 /sys/devices/system/node",
                    "no /sys/devices/system/node"
                ))),
            l.t("个 NUMA 节点", "NUMA node(s)")
        ),
        format!(
            "THP {}",
            c.thp.clone().unwrap_or_else(|| na(l.t(
                "没有 transparent_hugepage/enabled",
                "no transparent_hugepage/enabled"
            )))
        ),
        format!(
            "irqbalance {}",
            c.irqbalance
                .map(|b| if b {
                    l.t("运行中", "running")
                } else {
                    l.t("未运行", "not running")
                }
                .to_string())
                .unwrap_or_else(|| na("ps"))
        ),
    ];
    v.push(format!("CPU{}{}", l.t("：", ": "), cpu.join(sep)));
}

/// The load and memory line, and the top CPU processes when there are any.
fn load_top_lines(v: &mut Vec<String>, c: &Cpu, l: Lang) {
    let na = |what: &str| format!("—{}", l.paren(what));
    let sep = l.comma();
    let gib = |kib: Option<u64>| {
        kib.map(|k| format!("{:.1} GiB", k as f64 / 1048576.0))
            .unwrap_or_else(|| na(l.t("没有 /proc/meminfo", "no /proc/meminfo")))
    };
    v.push(l.t(
        format!(
            "负载（1/5/15 分钟）：{}；可用内存 {}，共 {}；swap 已用 {}，共 {}",
            c.load
                .map(|x| format!("{:.2} / {:.2} / {:.2}", x[0], x[1], x[2]))
                .unwrap_or_else(|| na("没有 /proc/loadavg")),
            gib(c.mem_available_kib),
            gib(c.mem_total_kib),
            gib(c.swap_used_kib),
            gib(c.swap_total_kib),
        ),
        format!(
            "load (1/5/15 min): {}; memory available {} of {}; swap used {} of {}",
            c.load
                .map(|x| format!("{:.2} / {:.2} / {:.2}", x[0], x[1], x[2]))
                .unwrap_or_else(|| na("no /proc/loadavg")),
            gib(c.mem_available_kib),
            gib(c.mem_total_kib),
            gib(c.swap_used_kib),
            gib(c.swap_total_kib),
        ),
    ));
    if !c.top.is_empty() {
        v.push(format!(
            "{}{}",
            l.t("CPU 占用最高：", "top CPU: "),
            c.top
                .iter()
                .take(3)
                .map(|p| format!(
                    "{}{}",
                    p.comm,
                    l.paren(&format!("pid {}{sep}{}{sep}{:.1} %", p.pid, p.user, p.pcpu))
                ))
                .collect::<Vec<_>>()
                .join(sep)
        ));
    }
}

/// One GPU's settings on one line.
fn gpu_line(v: &mut Vec<String>, m: &Machine, g: &Gpu, l: Lang) {
    let sep = l.comma();
    let on = |b: bool| on_off(l, b);
    let onoff = |v: Option<bool>| v.map(on).unwrap_or_else(|| "—".into());
    let throttle = match g.throttle {
        None => "—".to_string(),
        Some(mask) => {
            let s = slowing(mask);
            if s.is_empty() {
                l.t("无", "none").into()
            } else {
                s.join("+")
            }
        }
    };
    let num = |x: Option<f64>, unit: &str| {
        x.map(|x| format!("{x:.0} {unit}"))
            .unwrap_or_else(|| "—".into())
    };
    let parts = [
        format!("driver {}", g.driver.as_deref().unwrap_or("—")),
        format!("CUDA {}", m.cuda.as_deref().unwrap_or("—")),
        format!("persistence {}", onoff(g.persistence)),
        format!(
            "SM {}{}",
            num(g.sm_mhz, "MHz"),
            l.paren(&l.t(
                format!(
                    "application {}，最高 {}",
                    num(g.app_sm_mhz, "MHz"),
                    num(g.max_sm_mhz, "MHz")
                ),
                format!(
                    "application {}, max {}",
                    num(g.app_sm_mhz, "MHz"),
                    num(g.max_sm_mhz, "MHz")
                ),
            ))
        ),
        format!("{} {}", l.t("显存", "memory"), num(g.mem_mhz, "MHz")),
        format!(
            "{} {}",
            l.t("功耗上限", "power limit"),
            num(g.power_limit_w, "W")
        ),
        num(g.temp_c, "°C"),
        format!("{} {throttle}", l.t("降频", "throttling")),
        format!(
            "{} {}",
            l.t("不可纠正 ECC", "uncorrected ECC"),
            g.ecc_uncorrected
                .map(|n| n.to_string())
                .unwrap_or_else(|| "—".into())
        ),
        format!("MIG {}", onoff(g.mig)),
    ];
    v.push(format!(
        "{} {}{}{}",
        g.label(),
        g.name,
        l.t("：", ": "),
        parts.join(sep)
    ));
}

/// One process on a GPU.
fn gpu_proc_line(v: &mut Vec<String>, gpus: &[Gpu], p: &GpuProc, l: Lang) {
    let on_gpu = gpus
        .iter()
        .find(|g| g.uuid == p.gpu_uuid)
        .map(Gpu::label)
        .unwrap_or_else(|| p.gpu_uuid.clone());
    let mib = p
        .used_mib
        .map(|m| format!("{m:.0} MiB"))
        .unwrap_or_else(|| "— MiB".into());
    let comm = p.comm.as_deref().unwrap_or("—");
    v.push(match l {
        Lang::Zh => format!(
            "GPU 进程：pid {}（{comm}，用户 {}）在 {on_gpu} 上，{mib}",
            p.pid,
            p.user.as_deref().unwrap_or("—（ps 看不到）"),
        ),
        Lang::En => format!(
            "GPU process: pid {} ({comm}, user {}) on {on_gpu}, {mib}",
            p.pid,
            p.user.as_deref().unwrap_or("— (not visible to ps)"),
        ),
    });
}

/// The InfiniBand ports on one line.
fn ib_line(v: &mut Vec<String>, m: &Machine, l: Lang) {
    let sep = l.comma();
    let colon = l.t("：", ": ");
    match &m.ib {
        None => v.push(format!(
            "InfiniBand{colon}{}",
            l.t(
                "ibstat/ibv_devinfo 不可用",
                "ibstat/ibv_devinfo not available"
            )
        )),
        Some(ports) if ports.is_empty() => {
            v.push(format!("InfiniBand{colon}{}", l.t("没有端口", "no ports")))
        }
        Some(ports) => v.push(format!(
            "InfiniBand{colon}{}",
            ports
                .iter()
                .map(|p| format!(
                    "{} port {} {}{}",
                    p.ca,
                    p.port,
                    p.state,
                    p.rate.as_ref().map(|r| l.paren(r)).unwrap_or_default()
                ))
                .collect::<Vec<_>>()
                .join(sep)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_offset_counts_only_beyond_half_its_round_trip() {
        let c = |offset_ms, rtt_ms| Clock { offset_ms, rtt_ms };
        // in step: the host's `date` ran after the session's start-up, half a trip late
        assert_eq!(c(140.0, 300.0).offset(), None);
        assert_eq!(c(-20.0, 300.0).offset(), None);
        assert_eq!(c(3_600_000.0, 300.0).offset(), Some(3_600_000.0));
        assert_eq!(c(-900.0, 300.0).offset(), Some(-900.0));
        assert_eq!(c(f64::NAN, 3.0).offset(), None);
    }

    fn gpu(sm: f64, driver: &str) -> Machine {
        Machine {
            host: "a".into(),
            gpus: Some(vec![Gpu {
                index: Some(0),
                name: "A100".into(),
                sm_mhz: Some(sm),
                driver: Some(driver.into()),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn lines_are_in_the_report_language() {
        let m = gpu(1410.0, "535.1");
        let en = lines_in(&m, Lang::En).join("\n");
        assert_eq!(lines(&m).join("\n"), en);
        assert!(en.contains("power limit"), "{en}");
        let zh = lines_in(&m, Lang::Zh).join("\n");
        for w in [
            "power limit",
            "memory",
            "throttling",
            "not available",
            "no /",
            "CPUs",
        ] {
            assert!(!zh.contains(w), "`{w}` in {zh}");
        }
        assert!(
            zh.contains("功耗上限") && zh.contains("InfiniBand：ibstat/ibv_devinfo 不可用"),
            "{zh}"
        );
    }

    #[test]
    fn differences_name_what_changed() {
        let d = differences(&[gpu(1410.0, "535.1")], &[gpu(1980.0, "535.1")]);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].aspect, "clocks");
        assert_eq!(d[0].what, "GPU 0 SM clock");
        assert_eq!((d[0].a.as_str(), d[0].b.as_str()), ("1410 MHz", "1980 MHz"));
        let d = differences(&[gpu(1410.0, "535.1")], &[gpu(1410.0, "550.2")]);
        assert_eq!(d[0].aspect, "driver");
        assert!(differences(&[gpu(1.0, "x")], &[gpu(1.0, "x")]).is_empty());
    }

    #[test]
    fn throttle_bits_that_slow() {
        assert_eq!(slowing(0x1 | 0x2), Vec::<&str>::new());
        assert_eq!(
            slowing(0x4 | 0x40),
            vec!["sw_power_cap", "hw_thermal_slowdown"]
        );
    }
}
