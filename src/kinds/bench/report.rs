//! The generic kind's summary.md sections: nccl-tests bus bandwidth, or one metric per lane and
//! sweep point.

use std::fmt::Write;

use crate::model::Bench;
use crate::report::data::{Group, Measure, ReportData};
use crate::report::fmt::km;
use crate::report::tables::{axes_label, cell};

/// nccl-tests: per point its "Avg bus bandwidth" line (the figure people quote), then every row
/// with its type, op and root and both halves' time, algbw and busbw.
pub fn nccl_section(o: &mut String, data: &ReportData, b: &Bench) {
    o.push_str("\n## nccl-tests 总线带宽（GB/s；time µs）\n\n| 配置 | Avg bus bandwidth | 来源 |\n|---|---|---|\n");
    let mine = || data.points.iter().filter(|p| p.bench == b.name);
    for p in mine() {
        let cfg = format!("{} {} r{}", p.lane, axes_label(&p.axes), p.repeat);
        match &p.measure {
            Some(Measure::Nccl { report, files }) => {
                let (v, src) = match (report.avg_busbw, report.headline()) {
                    (Some(v), _) => (
                        format!("{v:.2}"),
                        format!("{}:{}", files.join(", "), report.avg_busbw_line),
                    ),
                    (None, Some(v)) => (
                        format!("{v:.2}"),
                        "no `# Avg bus bandwidth` line: mean busbw of every row, both halves"
                            .into(),
                    ),
                    (None, None) => ("—".into(), "no rows".into()),
                };
                let _ = writeln!(o, "| {cfg} | {v} | {src} |");
            }
            _ => {
                let why = p.problem.clone().unwrap_or_else(|| p.status.clone());
                let _ = writeln!(o, "| {cfg} | — | {} |", why.replace('|', "\\|"));
            }
        }
    }
    o.push_str("\n| 配置 | size (B) | type | redop | root | out-of-place time | algbw | busbw | in-place time | algbw | busbw |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for p in mine() {
        let Some(Measure::Nccl { report, .. }) = &p.measure else {
            continue;
        };
        for r in &report.rows {
            let (x, y) = (&r.out_of_place, &r.in_place);
            let _ = writeln!(
                o,
                "| {} {} r{} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                p.lane,
                axes_label(&p.axes),
                p.repeat,
                r.size,
                r.dtype,
                if r.redop.is_empty() { "—" } else { &r.redop },
                r.root,
                x.time_us,
                x.algbw,
                x.busbw,
                y.time_us,
                y.algbw,
                y.busbw
            );
        }
    }
}

pub fn metric_section(o: &mut String, b: &Bench, groups: &[&Group]) {
    o.push_str("\n## 结果\n\n| lane | 扫描点 | 各次 | 均值 | CV% |\n|---|---|---|---|---|\n");
    for g in groups.iter().filter(|g| g.bench == b.name) {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            g.lane,
            axes_label(&g.axes),
            g.values
                .iter()
                .map(|v| km(*v))
                .collect::<Vec<_>>()
                .join(" / "),
            cell(g.mean),
            g.cv_percent
                .map(|c| format!("{c:.2}%"))
                .unwrap_or_else(|| "—".into())
        );
    }
}
