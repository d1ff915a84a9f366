//! A machine record's notes as data: why a part of the probe is missing, and what the noise
//! policy found on the host (each naming host, GPU, what and the command that fixes it). The
//! English rendering is the note the journal's `notes` and the terminal hold; a report says it
//! in its language, the facts (hosts, pids, clocks, commands, a tool's own line) verbatim.

use serde::{Deserialize, Serialize};

use crate::lang::Lang;
use crate::results::reason::Noise;

/// One note of a machine record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "kebab-case")]
pub enum Note {
    /// The probe could not run on the host.
    ProbeFailed {
        error: String,
    },
    NoNvidiaSmi,
    /// nvidia-smi's part of the probe printed nothing.
    SmiSilent,
    SmiFailed {
        code: i64,
        #[serde(default)]
        line: Option<String>,
    },
    /// A line of nvidia-smi's CSV that does not parse.
    SmiLine {
        line: String,
    },
    AppsFailed {
        #[serde(default)]
        line: Option<String>,
    },
    NcclMissing {
        why: String,
    },
    TorchMissing {
        #[serde(default)]
        why: Option<String>,
    },
    /// What the noise policy found on the host.
    Noise {
        found: Found,
    },
    /// A host on a Slurm array at preflight: each task probes the node it runs on.
    ProbedByTasks,
}

/// What the noise policy finds against measuring on a machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "kebab-case")]
pub enum Found {
    ForeignProc {
        note: Noise,
        host: String,
        pid: i64,
    },
    Mig {
        host: String,
        gpu: String,
        index: String,
    },
    PersistenceOff {
        host: String,
        gpu: String,
        index: String,
        locked: bool,
    },
    ClocksNotLocked {
        host: String,
        gpu: String,
        index: String,
        sm: f64,
        app: f64,
    },
    ClocksUnknown {
        host: String,
        gpu: String,
    },
    Ecc {
        host: String,
        gpu: String,
        n: u64,
    },
    Throttled {
        note: Noise,
    },
    Governor {
        host: String,
        governor: String,
    },
    Turbo {
        host: String,
    },
    Swap {
        host: String,
        mib: f64,
    },
    Load {
        host: String,
        load: f64,
        cpus: u64,
        /// The top consumers: (command, pid, user, % CPU).
        top: Vec<(String, i64, String, f64)>,
    },
    LaneDrivers {
        lane: String,
        bench: String,
        /// (host, driver).
        drivers: Vec<(String, String)>,
    },
}

impl Note {
    /// The note in `l` (English: the journal's `notes` line).
    pub fn render(&self, l: Lang) -> String {
        let no_output = || l.t("没有输出", "no output").to_string();
        match self {
            Note::ProbeFailed { error } => l.t(
                format!("机器探测失败：{error}"),
                format!("the machine probe failed: {error}"),
            ),
            Note::ProbedByTasks => l
                .t(
                    "在 Slurm 数组上：每个任务探测它所运行的节点（见各任务在日志中的 `machine` 事件）",
                    "on a Slurm array: each task probes the node it runs on (the journal's `machine` events of the tasks)",
                )
                .into(),
            Note::NoNvidiaSmi => l
                .t("nvidia-smi：不可用", "nvidia-smi: not available")
                .into(),
            Note::SmiSilent => l
                .t(
                    "nvidia-smi：探测没有输出",
                    "nvidia-smi: the probe printed nothing",
                )
                .into(),
            Note::SmiFailed { code, line } => {
                let line = line.clone().unwrap_or_else(no_output);
                l.t(
                    format!("nvidia-smi 失败（退出码 {code}）：{line}"),
                    format!("nvidia-smi failed (exit {code}): {line}"),
                )
            }
            Note::SmiLine { line } => l.t(
                format!("nvidia-smi：无法理解的行：{line}"),
                format!("nvidia-smi: line not understood: {line}"),
            ),
            Note::AppsFailed { line } => {
                let line = line.clone().unwrap_or_else(no_output);
                l.t(
                    format!("nvidia-smi --query-compute-apps 失败：{line}"),
                    format!("nvidia-smi --query-compute-apps failed: {line}"),
                )
            }
            Note::NcclMissing { why } => l.t(
                format!("NCCL 版本不可用（{why}）"),
                format!("NCCL version not available ({why})"),
            ),
            Note::TorchMissing { why } => {
                let why = why.clone().unwrap_or_else(no_output);
                l.t(
                    format!("torch：不可用（{why}）"),
                    format!("torch: not available ({why})"),
                )
            }
            Note::Noise { found } => format!("{}{}", l.t("干扰：", "noise: "), found.render(l)),
        }
    }
}

impl Found {
    /// The host it is about (none: a lane's, across hosts).
    pub fn host(&self) -> Option<&str> {
        match self {
            Found::ForeignProc { host, .. }
            | Found::Mig { host, .. }
            | Found::PersistenceOff { host, .. }
            | Found::ClocksNotLocked { host, .. }
            | Found::ClocksUnknown { host, .. }
            | Found::Ecc { host, .. }
            | Found::Governor { host, .. }
            | Found::Turbo { host }
            | Found::Swap { host, .. }
            | Found::Load { host, .. } => Some(host),
            Found::Throttled { note } => match note {
                Noise::Throttled { host, .. }
                | Noise::Foreign { host, .. }
                | Noise::NotChecked { host, .. } => Some(host),
            },
            Found::LaneDrivers { .. } => None,
        }
    }

    /// The finding in `l` (English: the terminal's warning and preflight's refusal).
    pub fn render(&self, l: Lang) -> String {
        match self {
            Found::ForeignProc { note, host, pid } => l.t(
                format!(
                    "{}：在那里测得的每个数字都与它共享 GPU —— 停止它（在 `{host}` 上 `kill {pid}`）或给本次运行另一块 GPU",
                    note.render(l)
                ),
                format!(
                    "{}: every number measured there shares the GPU — stop it (`kill {pid}` on `{host}`) or give the run another GPU",
                    note.render(l)
                ),
            ),
            Found::Mig { host, gpu, index } => l.t(
                format!("主机 `{host}` {gpu}：MIG 模式已开启（运行得到的是一个切片，而不是整块 GPU）—— `nvidia-smi -i {index} -mig 0`（需 root；GPU 会重置）"),
                format!("host `{host}` {gpu}: MIG mode is on (the run gets a slice, not the GPU) — `nvidia-smi -i {index} -mig 0` (as root; the GPU resets)"),
            ),
            Found::PersistenceOff {
                host,
                gpu,
                index,
                locked,
            } => {
                let why = match (locked, l) {
                    (true, Lang::Zh) => "驱动卸载时锁定的时钟会丢失",
                    (false, Lang::Zh) => "驱动在两次运行之间卸载，第一个 kernel 为此付出代价",
                    (true, Lang::En) => "locked clocks are lost when the driver unloads",
                    (false, Lang::En) => {
                        "the driver unloads between runs, and the first kernel pays for it"
                    }
                };
                l.t(
                    format!("主机 `{host}` {gpu}：persistence 模式关闭（{why}）—— `nvidia-smi -i {index} -pm 1`"),
                    format!("host `{host}` {gpu}: persistence mode is off ({why}) — `nvidia-smi -i {index} -pm 1`"),
                )
            }
            Found::ClocksNotLocked {
                host,
                gpu,
                index,
                sm,
                app,
            } => l.t(
                format!("主机 `{host}` {gpu}：写了 `gpu-clocks-locked #true`，但其 SM 时钟为 {sm:.0} MHz，不是其 application 时钟 {app:.0} MHz —— `nvidia-smi -i {index} -lgc {app:.0},{app:.0}`"),
                format!("host `{host}` {gpu}: `gpu-clocks-locked #true`, but its SM clock is {sm:.0} MHz, not its application clock {app:.0} MHz — `nvidia-smi -i {index} -lgc {app:.0},{app:.0}`"),
            ),
            Found::ClocksUnknown { host, gpu } => l.t(
                format!("主机 `{host}` {gpu}：写了 `gpu-clocks-locked #true`，但 nvidia-smi 没有报告 SM 或 application 时钟：无法检查锁定"),
                format!("host `{host}` {gpu}: `gpu-clocks-locked #true`, but nvidia-smi reports no SM or application clock: the lock cannot be checked"),
            ),
            Found::Ecc { host, gpu, n } => l.t(
                format!("主机 `{host}` {gpu}：驱动加载以来有 {n} 个不可纠正的 ECC 错误 —— 检查这块 GPU（`nvidia-smi -q -d ECC`）"),
                format!("host `{host}` {gpu}: {n} uncorrected ECC error(s) since the driver loaded — check the GPU (`nvidia-smi -q -d ECC`)"),
            ),
            Found::Throttled { note } => l.t(
                format!(
                    "{} —— 检查散热和功耗上限（`nvidia-smi -q -d PERFORMANCE,POWER`）",
                    note.render(l)
                ),
                format!(
                    "{} — check cooling and the power cap (`nvidia-smi -q -d PERFORMANCE,POWER`)",
                    note.render(l)
                ),
            ),
            Found::Governor { host, governor } => l.t(
                format!("主机 `{host}`：CPU governor 为 {governor} —— `cpupower frequency-set -g performance`"),
                format!("host `{host}`: CPU governor is {governor} — `cpupower frequency-set -g performance`"),
            ),
            Found::Turbo { host } => l.t(
                format!("主机 `{host}`：CPU turbo/boost 已开启（时钟随温度和负载变化）—— `echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo`（或 `echo 0 > /sys/devices/system/cpu/cpufreq/boost`）"),
                format!("host `{host}`: CPU turbo/boost is on (clocks follow temperature and load) — `echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo` (or `echo 0 > /sys/devices/system/cpu/cpufreq/boost`)"),
            ),
            Found::Swap { host, mib } => l.t(
                format!("主机 `{host}`：{mib:.1} MiB swap 在使用中 —— 释放内存，或 `swapoff -a && swapon -a`"),
                format!("host `{host}`: {mib:.1} MiB of swap in use — free memory, or `swapoff -a && swapon -a`"),
            ),
            Found::Load {
                host,
                load,
                cpus,
                top,
            } => {
                let top: Vec<String> = top
                    .iter()
                    .map(|(comm, pid, user, pcpu)| {
                        format!(
                            "{comm}{}",
                            l.paren(&format!("pid {pid}{c}{user}{c}{pcpu:.0} %", c = l.comma()))
                        )
                    })
                    .collect();
                let top = if top.is_empty() {
                    String::new()
                } else {
                    format!("{}{}", l.t("；最高：", "; top: "), top.join(l.comma()))
                };
                l.t(
                    format!("主机 `{host}`：运行任何东西之前，{cpus} 个 CPU 上的平均负载为 {load:.2}{top}"),
                    format!("host `{host}`: load average {load:.2} on {cpus} CPUs before anything ran{top}"),
                )
            }
            Found::LaneDrivers {
                lane,
                bench,
                drivers,
            } => {
                let list = drivers
                    .iter()
                    .map(|(h, d)| format!("`{h}` {d}"))
                    .collect::<Vec<_>>()
                    .join(l.comma());
                l.t(
                    format!("`{bench}` 的 lane `{lane}` 运行在不同的 NVIDIA 驱动上：{list} —— 在所有主机上安装同一驱动版本"),
                    format!("lane `{lane}` of `{bench}` runs on different NVIDIA drivers: {list} — install one driver version on all of them"),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_is_the_note_as_written_and_chinese_keeps_the_facts() {
        let f = Found::Load {
            host: "h".into(),
            load: 4.8,
            cpus: 2,
            top: vec![("rustc".into(), 7, "root".into(), 78.9)],
        };
        assert_eq!(
            Note::Noise { found: f.clone() }.render(Lang::En),
            "noise: host `h`: load average 4.80 on 2 CPUs before anything ran; top: rustc (pid 7, root, 79 %)"
        );
        let zh = Note::Noise { found: f }.render(Lang::Zh);
        assert_eq!(
            zh,
            "干扰：主机 `h`：运行任何东西之前，2 个 CPU 上的平均负载为 4.80；最高：rustc（pid 7，root，79 %）"
        );
        assert_eq!(
            Note::NoNvidiaSmi.render(Lang::En),
            "nvidia-smi: not available"
        );
        let v = serde_json::to_value(Note::SmiFailed {
            code: 9,
            line: None,
        })
        .unwrap();
        assert_eq!(
            serde_json::from_value::<Note>(v).unwrap().render(Lang::En),
            "nvidia-smi failed (exit 9): no output"
        );
    }
}
