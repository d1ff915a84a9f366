//! dataset-rt's summary.md section: global samples/s per point.

use std::fmt::Write;

use crate::model::Bench;
use crate::report::data::{Measure, ReportData};
use crate::report::fmt::km;
use crate::report::tables::{axes_label, cell};

pub fn loader_section(o: &mut String, data: &ReportData, b: &Bench) {
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
}
