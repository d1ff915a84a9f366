//! The generic kind's summary.md sections: nccl-tests bus bandwidth, or one metric per lane and
//! sweep point.

use std::fmt::Write;

use crate::model::{Bench, Placement};
use crate::report::data::{Group, Measure, Metric, ReportData};
use crate::report::fmt::km;
use crate::report::tables::{axes_label, group_table};

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
                let _ = writeln!(o, "| {cfg} | — | {} |", crate::report::fmt::md_text(&why));
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

/// A generic metric: each repeat's value per lane and sweep point, then the group table.
pub fn metric_section(o: &mut String, b: &Bench, groups: &[&Group]) {
    o.push_str("\n## 结果\n\n| bench | lane | 扫描点 | 各次 |\n|---|---|---|---|\n");
    for g in groups.iter().filter(|g| g.bench == b.name) {
        let values = if g.values.is_empty() {
            "—".to_string()
        } else {
            g.values
                .iter()
                .map(|v| km(*v))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {values} |",
            b.name,
            g.lane,
            axes_label(&g.axes)
        );
    }
    let what = headline(b).0;
    group_table(
        o,
        b,
        groups,
        if what.is_empty() { "value" } else { &what },
        None,
    );
}

/// The headline of a generic bench: what its `collect` reads.
pub fn headline(bench: &Bench) -> (String, String) {
    match &bench.placement {
        Placement::Steps {
            collect: Some(c), ..
        } => match c.format.as_str() {
            "nccl-tests" => ("avg_busbw".into(), "GB/s".into()),
            "csv" if c.metric.is_none() => ("samples_per_sec".into(), "samples/s".into()),
            "csv" | "json" => (c.metric.clone().unwrap_or_default(), String::new()),
            _ => (
                c.metric.clone().unwrap_or_else(|| "match".into()),
                String::new(),
            ),
        },
        _ => (String::new(), String::new()),
    }
}

/// The numbers of a generic bench's measure, the headline first.
pub fn metrics(bench: &Bench, m: &Measure) -> Vec<Metric> {
    match m {
        Measure::Steps(s) => crate::report::tables::step_metrics(s),
        Measure::Metric {
            name, value, files, ..
        } => vec![Metric::new(
            name.as_str(),
            &headline(bench).1,
            None,
            *value,
            &files.join(";"),
        )],
        Measure::Nccl { report, files } => {
            let file = files.join(";");
            let mut v = Vec::new();
            if let Some(h) = report.headline() {
                let src = if report.avg_busbw.is_some() {
                    format!("{file}:{}", report.avg_busbw_line)
                } else {
                    format!("{file} (mean of every row's busbw)")
                };
                v.push(Metric::new("avg_busbw", "GB/s", Some(true), h, &src));
            }
            for r in &report.rows {
                let at = format!("{file}:{}", r.line);
                let key = format!(
                    "size={},type={},redop={},root={}",
                    r.size, r.dtype, r.redop, r.root
                );
                for (half, h) in [("out", &r.out_of_place), ("in", &r.in_place)] {
                    v.push(Metric::new(
                        format!("{half}_time_us[{key}]"),
                        "us",
                        Some(false),
                        h.time_us,
                        &at,
                    ));
                    v.push(Metric::new(
                        format!("{half}_algbw[{key}]"),
                        "GB/s",
                        Some(true),
                        h.algbw,
                        &at,
                    ));
                    v.push(Metric::new(
                        format!("{half}_busbw[{key}]"),
                        "GB/s",
                        Some(true),
                        h.busbw,
                        &at,
                    ));
                }
            }
            v
        }
        _ => Vec::new(),
    }
}
