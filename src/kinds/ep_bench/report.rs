//! ep-bench's summary.md section: dispatch / combine / total kernel timings per point.

use std::fmt::Write;

use crate::model::Bench;
use crate::report::data::{Measure, ReportData};
use crate::report::tables::axes_label;

pub fn kernel_section(o: &mut String, data: &ReportData, b: &Bench) {
    o.push_str("\n## Kernel 性能（µs 与 GB/s）\n\n| 配置 | dispatch avg/min/max µs | combine avg/min/max µs | total avg/min/max µs | dispatch GB/s | combine GB/s | kernel-only dispatch / combine µs | bytes dispatch / combine MB, rows |\n|---|---|---|---|---|---|---|---|\n");
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        let Some(Measure::Ep(e)) = &p.measure else {
            continue;
        };
        let t = |x: &crate::kinds::ep_bench::collect::Timing| {
            format!("{:.2} / {:.2} / {:.2}", x.avg_us, x.min_us, x.max_us)
        };
        let g = |x: &crate::kinds::ep_bench::collect::Timing| {
            x.gbps_avg
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "—".into())
        };
        let k = match (&e.kernel_dispatch, &e.kernel_combine) {
            (Some(d), Some(c)) => format!("{:.2} / {:.2}", d.min_us, c.min_us),
            _ => "—".into(),
        };
        let bytes = match (e.dispatch_mb, e.combine_mb) {
            (Some(d), Some(c)) => format!(
                "{d:.2} ({}) / {c:.2}, {}",
                e.dispatch_label,
                e.rows.map(|r| r.to_string()).unwrap_or_default()
            ),
            _ => "—".into(),
        };
        let cfg = format!("{} {} r{}", p.lane, axes_label(&p.axes), p.repeat);
        let _ = writeln!(
            o,
            "| {cfg} | {} | {} | {} | {} | {} | {k} | {bytes} |",
            t(&e.dispatch),
            t(&e.combine),
            t(&e.total),
            g(&e.dispatch),
            g(&e.combine)
        );
    }
}
