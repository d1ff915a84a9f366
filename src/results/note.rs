//! A machine record's notes as data: why a part of the probe is missing, and what the noise
//! policy found on the host (each naming host, GPU, what and the command that fixes it). The
//! English rendering is the note the journal's `notes` and the terminal hold; a report says it
//! in its language, the facts (hosts, pids, clocks, commands, a tool's own line) verbatim.

use serde::{Deserialize, Serialize};

pub use crate::results::reason::Found;
use crate::util::lang::Lang;

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
        // no process busy now: said, not a list of processes at 0 %
        let idle = Found::Load {
            host: "h".into(),
            load: 1.3,
            cpus: 2,
            top: Vec::new(),
        };
        assert!(Note::Noise { found: idle }
            .render(Lang::En)
            .ends_with("before anything ran; no process is busy now (the average is over the last minute, and processes waiting on a disk count too)"));
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
