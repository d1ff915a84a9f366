//! The generic kind's summary.md sections: nccl-tests bus bandwidth, or one metric per lane and
//! sweep point.

use std::fmt::Write;

use crate::model::Bench;
use crate::report::data::{Group, Measure, ReportData};
use crate::report::fmt::km;
use crate::report::tables::{axes_label, cell};

pub fn nccl_section(o: &mut String, data: &ReportData, b: &Bench) {
    o.push_str("\n## nccl-tests 总线带宽（busbw，GB/s）\n\n| 配置 | size (B) | out-of-place busbw | in-place busbw |\n|---|---|---|---|\n");
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        let Some(Measure::Nccl { rows, .. }) = &p.measure else {
            continue;
        };
        for r in rows {
            let f = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "N/A".into());
            let _ = writeln!(
                o,
                "| {} {} r{} | {} | {} | {} |",
                p.lane,
                axes_label(&p.axes),
                p.repeat,
                r.size,
                f(r.busbw_out),
                f(r.busbw_in)
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
