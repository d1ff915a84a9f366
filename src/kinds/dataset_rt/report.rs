//! dataset-rt's summary.md section: global samples/s per point.

use std::fmt::Write;

use crate::kinds::dataset_rt::collect::DrtReport;
use crate::model::Bench;
use crate::report::data::{Group, Measure, Metric, ReportData};
use crate::report::fmt::km;
use crate::report::tables::{axes_label, cell, group_table};

pub fn loader_section(o: &mut String, data: &ReportData, b: &Bench, groups: &[&Group]) {
    o.push_str("\n## Loader 吞吐（global samples/s）\n\n| 配置 | world size | global samples/s（各次） | 均值 | first batch (s) | peak RSS |\n|---|---|---|---|---|---|\n");
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        let Some(Measure::Drt(d)) = &p.measure else {
            continue;
        };
        let _ = writeln!(
            o,
            "| {} {} | {} | {} | {} | {} | {} |",
            p.lane,
            axes_label(&p.axes),
            d.world_size,
            d.global_samples_per_second
                .iter()
                .map(|v| km(*v))
                .collect::<Vec<_>>()
                .join(" / "),
            cell(crate::report::stats::mean(&d.global_samples_per_second)),
            d.first_batch_seconds
                .map(|s| format!("{s:.3}"))
                .unwrap_or_else(|| "—".into()),
            d.peak_rss_bytes
                .map(|b| format!("{:.1} MiB", b as f64 / 1048576.0))
                .unwrap_or_else(|| "—".into())
        );
    }
    group_table(o, b, groups, "global samples/s", Some(true));
}

/// Global samples/s (mean over the report's repeats, then each repeat), first-batch latency and
/// peak RSS.
pub fn metrics(d: &DrtReport) -> Vec<Metric> {
    let src = d.source.as_str();
    let mut v = Vec::new();
    if let Some(m) = crate::report::stats::mean(&d.global_samples_per_second) {
        v.push(Metric::new(
            "global_samples_per_second",
            "samples/s",
            Some(true),
            m,
            src,
        ));
    }
    for (i, x) in d.global_samples_per_second.iter().enumerate() {
        v.push(Metric::new(
            format!("global_samples_per_second_pass{i}"),
            "samples/s",
            Some(true),
            *x,
            src,
        ));
    }
    if let Some(s) = d.first_batch_seconds {
        v.push(Metric::new("first_batch_seconds", "s", Some(false), s, src));
    }
    if let Some(b) = d.peak_rss_bytes {
        v.push(Metric::new(
            "peak_rss_mib",
            "MiB",
            Some(false),
            b as f64 / 1048576.0,
            src,
        ));
    }
    v
}
