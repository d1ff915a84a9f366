//! ep-bench's summary.md section: dispatch / combine / total kernel timings per point.

use crate::kind_api::data::{Group, Measure, Metric, ReportData};
use crate::kind_api::doc::{Doc, Table};
use crate::kind_api::tables::{axes_label, group_table};
use crate::kinds::ep_bench::collect::{EpSummary, KernelForm, Timing};
use crate::model::Bench;

/// ep-bench: one row per point with every figure of its summary block, then per lane and sweep
/// point the repeats' mean of the total (sd and CV at repeat ≥ 3) and the speed against the
/// baseline lane (baseline total ÷ lane total: above 1 is faster).
pub fn kernel_section(d: &mut Doc, data: &ReportData, b: &Bench, groups: &[&Group]) {
    let l = data.lang;
    d.h2(l.t(
        "Kernel 性能（µs 与 GB/s）",
        "Kernel performance (µs and GB/s)",
    ));
    let mut tab = Table::new([
        "bench",
        l.t("配置", "configuration"),
        "world",
        "dispatch avg/min/max µs",
        "combine avg/min/max µs",
        "total avg/min/max µs",
        "dispatch GB/s avg (min–max)",
        "combine GB/s avg (min–max)",
        "bytes dispatch / combine MB, rows",
    ]);
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        let cfg = format!("{} {} r{}", p.lane, axes_label(&p.axes), p.repeat);
        let Some(e) = p.measure.as_ref().and_then(Measure::own::<EpSummary>) else {
            let why = p.problem.clone().unwrap_or_else(|| p.status.clone());
            let dash = || "—".to_string();
            tab.row([
                b.name.clone(),
                cfg,
                dash(),
                format!("— ({why})"),
                dash(),
                dash(),
                dash(),
                dash(),
                dash(),
            ]);
            continue;
        };
        let t = |x: &Timing| format!("{:.2} / {:.2} / {:.2}", x.avg_us, x.min_us, x.max_us);
        let g = |x: &Timing| match (x.gbps_avg, x.gbps_min, x.gbps_max) {
            (Some(a), Some(lo), Some(hi)) => format!("{a:.2} ({lo:.2}–{hi:.2})"),
            (Some(a), _, _) => format!("{a:.2}"),
            _ => "—".into(),
        };
        let bytes = match (e.dispatch_mb, e.combine_mb) {
            (Some(d), Some(c)) => format!(
                "{d:.2} ({}) / {c:.2}, {}",
                e.dispatch_label,
                e.rows.map(|r| r.to_string()).unwrap_or_else(|| "—".into())
            ),
            _ => "—".into(),
        };
        tab.row([
            b.name.clone(),
            cfg,
            e.ranks.to_string(),
            t(&e.dispatch),
            t(&e.combine),
            t(&e.total),
            g(&e.dispatch),
            g(&e.combine),
            bytes,
        ]);
    }
    d.table(tab);
    kernel_tables(d, data, b);
    group_table(d, data, b, groups, "total avg µs", Some(false));
}

/// The kernel-only figures, one table per form the tools print them in: the same labels
/// (`avg`, `throughput`) measure different things in MSCCL++ and NCCL-EP.
fn kernel_tables(d: &mut Doc, data: &ReportData, b: &Bench) {
    let f = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "—".into());
    let l = data.lang;
    for (form, head, cols) in [
        (
            KernelForm::MinRepresentative,
            l.t(
                "Kernel-only，MSCCL++（torch.profiler/CUPTI：min 为代表值；avg 与 max 受 profiler 的 rank skew 放大；GB/s 按 min 时间计）",
                "Kernel-only, MSCCL++ (torch.profiler/CUPTI: the min is the representative figure; avg and max are inflated by the profiler's rank skew; GB/s at the min time)",
            ),
            [
                l.t("min µs（代表值）", "min µs (representative)"),
                l.t("avg µs（profiler 放大）", "avg µs (profiler-inflated)"),
                "max µs",
                "GB/s @min",
            ],
        ),
        (
            KernelForm::Averages,
            l.t(
                "Kernel-only，NCCL-EP（CUPTI：各次迭代的真实平均）",
                "Kernel-only, NCCL-EP (CUPTI: the true average over iterations)",
            ),
            ["avg µs", "min µs", "max µs", "GB/s avg"],
        ),
        (
            KernelForm::KernelTotal,
            l.t(
                "Kernel-only，NCCL-EP HT（kernel time）",
                "Kernel-only, NCCL-EP HT (kernel time)",
            ),
            ["kernel µs", "", "", ""],
        ),
    ] {
        let rows: Vec<(String, &EpSummary)> = data
            .points
            .iter()
            .filter(|p| p.bench == b.name)
            .filter_map(|p| match p.measure.as_ref().and_then(Measure::own::<EpSummary>) {
                Some(e) if e.kernel_form == form => Some((
                    format!("{} {} r{}", p.lane, axes_label(&p.axes), p.repeat),
                    e,
                )),
                _ => None,
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let cols: Vec<&str> = cols.into_iter().filter(|c| !c.is_empty()).collect();
        d.h3(head);
        let mut head = vec!["bench".to_string(), l.t("配置", "configuration").into()];
        for op in ["dispatch", "combine"] {
            for c in &cols {
                head.push(format!("{op} {c}"));
            }
        }
        let mut tab = Table::new(head);
        for (cfg, e) in rows {
            let mut row = vec![b.name.clone(), cfg];
            for k in [&e.kernel_dispatch, &e.kernel_combine] {
                let cells: Vec<Option<f64>> = match (form, k) {
                    (_, None) => vec![None; cols.len()],
                    (KernelForm::MinRepresentative, Some(t)) => {
                        vec![Some(t.min_us), Some(t.avg_us), Some(t.max_us), t.gbps_min]
                    }
                    (KernelForm::KernelTotal, Some(t)) => vec![Some(t.avg_us)],
                    (_, Some(t)) => vec![Some(t.avg_us), Some(t.min_us), Some(t.max_us), t.gbps_avg],
                };
                row.extend(cells.into_iter().map(f));
            }
            tab.row(row);
        }
        d.table(tab);
    }
}

/// Every timing of the summary block: total avg first (lower is better), then each operation's
/// avg/min/max, the GB/s printed with them, and the kernel-only figures.
pub fn metrics(e: &EpSummary) -> Vec<Metric> {
    let src = e.source.as_str();
    let mut v = Vec::new();
    let timing = |v: &mut Vec<Metric>, name: &str, t: &Timing| {
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
    timing(&mut v, "total", &e.total);
    timing(&mut v, "dispatch", &e.dispatch);
    timing(&mut v, "combine", &e.combine);
    for (name, k) in [
        ("kernel_dispatch", &e.kernel_dispatch),
        ("kernel_combine", &e.kernel_combine),
    ] {
        let Some(k) = k else { continue };
        match e.kernel_form {
            // MSCCL++: the min is the representative figure; its avg and max are inflated by
            // the profiler, and its GB/s is at the min time: named so
            KernelForm::MinRepresentative => {
                for (what, x) in [
                    ("min_us", Some(k.min_us)),
                    ("profiler_avg_us", Some(k.avg_us)),
                    ("profiler_max_us", Some(k.max_us)),
                    ("gbps_at_min", k.gbps_min),
                ] {
                    if let Some(x) = x {
                        let (unit, higher) = if what.ends_with("us") {
                            ("us", false)
                        } else {
                            ("GB/s", true)
                        };
                        v.push(Metric::new(
                            format!("{name}_{what}"),
                            unit,
                            Some(higher),
                            x,
                            src,
                        ));
                    }
                }
            }
            KernelForm::KernelTotal => v.push(Metric::new(
                format!("{name}_kernel_us"),
                "us",
                Some(false),
                k.avg_us,
                src,
            )),
            _ => timing(&mut v, name, k),
        }
    }
    v
}
