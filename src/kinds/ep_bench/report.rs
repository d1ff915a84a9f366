//! ep-bench's summary.md section: dispatch / combine / total kernel timings per point.

use std::fmt::Write;

use crate::kinds::ep_bench::collect::{EpSummary, Timing};
use crate::model::Bench;
use crate::report::data::{Group, Measure, Metric, ReportData};
use crate::report::tables::{axes_label, group_table};

/// ep-bench: one row per point with every figure of its summary block, then per lane and sweep
/// point the repeats' mean of the total (sd and CV at repeat ≥ 3) and the speed against the
/// baseline lane (baseline total ÷ lane total: above 1 is faster).
pub fn kernel_section(o: &mut String, data: &ReportData, b: &Bench, groups: &[&Group]) {
    o.push_str("\n## Kernel 性能（µs 与 GB/s）\n\n| bench | 配置 | world | dispatch avg/min/max µs | combine avg/min/max µs | total avg/min/max µs | dispatch GB/s avg (min–max) | combine GB/s avg (min–max) | kernel-only dispatch avg/min/max µs | kernel-only combine avg/min/max µs | bytes dispatch / combine MB, rows |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        let cfg = format!("{} {} r{}", p.lane, axes_label(&p.axes), p.repeat);
        let Some(Measure::Ep(e)) = &p.measure else {
            let why = p.problem.clone().unwrap_or_else(|| p.status.clone());
            let _ = writeln!(
                o,
                "| {} | {cfg} | — | — ({}) | — | — | — | — | — | — | — |",
                b.name,
                crate::report::fmt::md_text(&why)
            );
            continue;
        };
        let t = |x: &Timing| format!("{:.2} / {:.2} / {:.2}", x.avg_us, x.min_us, x.max_us);
        let g = |x: &Timing| match (x.gbps_avg, x.gbps_min, x.gbps_max) {
            (Some(a), Some(lo), Some(hi)) => format!("{a:.2} ({lo:.2}–{hi:.2})"),
            (Some(a), _, _) => format!("{a:.2}"),
            _ => "—".into(),
        };
        let k = |x: &Option<Timing>| x.as_ref().map(t).unwrap_or_else(|| "—".into());
        let bytes = match (e.dispatch_mb, e.combine_mb) {
            (Some(d), Some(c)) => format!(
                "{d:.2} ({}) / {c:.2}, {}",
                e.dispatch_label,
                e.rows.map(|r| r.to_string()).unwrap_or_else(|| "—".into())
            ),
            _ => "—".into(),
        };
        let _ = writeln!(
            o,
            "| {} | {cfg} | {} | {} | {} | {} | {} | {} | {} | {} | {bytes} |",
            b.name,
            e.ranks,
            t(&e.dispatch),
            t(&e.combine),
            t(&e.total),
            g(&e.dispatch),
            g(&e.combine),
            k(&e.kernel_dispatch),
            k(&e.kernel_combine),
        );
    }
    group_table(o, b, groups, "total avg µs", Some(false));
}

/// Every timing of the summary block: total avg first (lower is better), then each operation's
/// avg/min/max, the GB/s printed with them, and the kernel-only figures.
pub fn metrics(e: &EpSummary) -> Vec<Metric> {
    let src = e.source.as_str();
    let mut v = Vec::new();
    let mut timing = |name: &str, t: &Timing| {
        for (what, x) in [("avg", t.avg_us), ("min", t.min_us), ("max", t.max_us)] {
            v.push(Metric::new(
                format!("{name}_{what}_us"),
                "us",
                Some(false),
                x,
                src,
            ));
        }
        for (what, x) in [
            ("avg", t.gbps_avg),
            ("min", t.gbps_min),
            ("max", t.gbps_max),
        ] {
            if let Some(x) = x {
                v.push(Metric::new(
                    format!("{name}_gbps_{what}"),
                    "GB/s",
                    Some(true),
                    x,
                    src,
                ));
            }
        }
    };
    timing("total", &e.total);
    timing("dispatch", &e.dispatch);
    timing("combine", &e.combine);
    if let Some(k) = &e.kernel_dispatch {
        timing("kernel_dispatch", k);
    }
    if let Some(k) = &e.kernel_combine {
        timing("kernel_combine", k);
    }
    v
}
