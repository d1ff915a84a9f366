//! dataset-rt's summary.md section: global samples/s per point, warm (the headline) and cold.

use crate::kind_api::data::{Group, Measure, Metric, ReportData};
use crate::kind_api::doc::{Doc, Table, Text};
use crate::kind_api::tables::{axes_label, cell};
use crate::kinds::dataset_rt::collect::DrtReport;
use crate::model::Bench;
use crate::util::fmt::km;

/// The sweep axis whose zero is the runbook's control (no loader workers).
const CONTROL_AXIS: &str = "num-workers";

pub fn loader_section(d: &mut Doc, data: &ReportData, b: &Bench, groups: &[&Group]) {
    let l = data.lang;
    d.h2(l.t(
        "Loader 吞吐（global samples/s）",
        "Loader throughput (global samples/s)",
    ));
    // the code that ran: the installed package may not be the checkout (line 1)
    let mut versions: Vec<(String, String)> = Vec::new();
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        if let Some(d) = p.measure.as_ref().and_then(Measure::own::<DrtReport>) {
            let v = d.dataset_rt_version.clone().unwrap_or_else(|| {
                l.t(
                    "—（JSON 未记录 `ranks[].dataset_rt_version`）",
                    "— (the JSON has no `ranks[].dataset_rt_version`)",
                )
                .into()
            });
            if !versions.iter().any(|(x, _)| *x == v) {
                versions.push((v, d.source.clone()));
            }
        }
    }
    if !versions.is_empty() {
        let mut t = Text::plain(l.t("运行的 dataset_rt 版本：", "dataset_rt version that ran: "));
        for (i, (v, f)) in versions.iter().enumerate() {
            if i > 0 {
                t = t.and(l.semi());
            }
            t = t
                .and(format!("{v} (from {f}: "))
                .and_code("ranks[].dataset_rt_version")
                .and(")");
        }
        let head = &data.git_head;
        d.para(t.and(l.t(
            format!("；checkout commit：{head}（第 1 行；已安装的包可能不是 checkout 的代码）。"),
            format!("; checkout commit: {head} (line 1; the installed package may not be the checkout's code)."),
        )));
    }
    d.para(l.t(
        "warm = 第一次之后各 pass 的均值（persistent workers；标题数字）；cold = pass 0（runbook：含 reader/worker 启动）。",
        "warm = the mean of the passes after the first (persistent workers; the headline); cold = pass 0 (runbook: includes reader/worker start-up).",
    ));
    let mut tab = Table::new([
        l.t("配置", "configuration"),
        "world size",
        "dataset_rt",
        l.t("global samples/s（各次）", "global samples/s (per repeat)"),
        l.t("warm（均值）", "warm (mean)"),
        l.t("cold（pass 0）", "cold (pass 0)"),
        "first batch (s)",
        "peak RSS",
    ]);
    // with telemetry: the point's GPU energy and its headline per watt
    let energy = crate::kind_api::tables::has_energy(data, &b.name);
    if energy {
        tab.head
            .extend(["gpu_energy_j", l.t("主指标/W", "headline per W")].map(Text::plain));
    }
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        let Some(r) = p.measure.as_ref().and_then(Measure::own::<DrtReport>) else {
            continue;
        };
        let eff = energy.then(|| {
            [
                p.value("gpu_energy_j")
                    .map_or("—".into(), |v| format!("{v:.1}")),
                p.per_watt().map_or("—".into(), km),
            ]
        });
        tab.row(
            [
                format!("{} {}", p.lane, axes_label(&p.axes)),
                r.world_size.to_string(),
                r.dataset_rt_version.clone().unwrap_or_else(|| "—".into()),
                r.global_samples_per_second
                    .iter()
                    .map(|v| km(*v))
                    .collect::<Vec<_>>()
                    .join(" / "),
                r.warm()
                    .map(km)
                    .unwrap_or_else(|| l.t("—（只有一个 pass）", "— (one pass only)").into()),
                r.cold().map(km).unwrap_or_else(|| "—".into()),
                r.first_batch_seconds
                    .map(|s| format!("{s:.3}"))
                    .unwrap_or_else(|| "—".into()),
                r.peak_rss_bytes
                    .map(|b| format!("{:.1} MiB", b as f64 / 1048576.0))
                    .unwrap_or_else(|| "—".into()),
            ]
            .into_iter()
            .chain(eff.into_iter().flatten()),
        );
    }
    d.table(tab);
    // points measured although their program failed after writing a complete report
    let recovered: Vec<Text> = data
        .points
        .iter()
        .filter(|p| p.bench == b.name && p.reason.starts_with("recovered"))
        .map(|p| {
            Text::code(&p.run_id).and(l.t(
                format!("：成功（{}）", p.said),
                format!(": ok ({})", p.said),
            ))
        })
        .collect();
    if !recovered.is_empty() {
        d.para(
            Text::plain(l.t(
                "以下各点的程序在写完完整的报告之后才失败，其数字计入（",
                "The program of these points failed only after writing a complete report; their numbers count (with ",
            ))
            .and_code("strict #true")
            .and(l.t(" 则算失败）：", " they fail):")),
        );
        d.list(None, recovered);
    }
    sweep_table(d, data, b, groups);
}

/// Per lane and sweep point: the warm rate's mean over repeats (sd and CV at repeat ≥ 3), the
/// cold rate's mean, and the ratio of warm rates to the zero-worker control of the same lane and
/// other axes (`num-workers` = 0), where the sweep has one.
fn sweep_table(d: &mut Doc, data: &ReportData, b: &Bench, groups: &[&Group]) {
    let mine: Vec<&&Group> = groups.iter().filter(|g| g.bench == b.name).collect();
    if mine.is_empty() {
        return;
    }
    let dash = || "—".to_string();
    let l = data.lang;
    let mut tab = Table::new([
        "bench".to_string(),
        "lane".into(),
        l.t("扫描点", "point").into(),
        l.t("次数", "repeats").into(),
        l.t(
            "warm global samples/s（均值）",
            "warm global samples/s (mean)",
        )
        .into(),
        "sd".into(),
        "CV%".into(),
        l.t("cold（均值）", "cold (mean)").into(),
        l.t(
            format!("相对 {CONTROL_AXIS}=0（warm 之比，>1 更好）"),
            format!("vs {CONTROL_AXIS}=0 (warm ratio, >1 is better)"),
        ),
    ]);
    for g in &mine {
        let cold: Vec<f64> = data
            .points_of(g)
            .filter_map(|p| p.measure.as_ref()?.own::<DrtReport>()?.cold())
            .collect();
        let control = g.axes.iter().any(|(k, _)| k == CONTROL_AXIS).then(|| {
            mine.iter().find(|c| {
                c.lane == g.lane
                    && c.axes.len() == g.axes.len()
                    && c.axes.iter().zip(&g.axes).all(|((ck, cv), (gk, gv))| {
                        ck == gk
                            && if ck == CONTROL_AXIS {
                                cv == "0"
                            } else {
                                cv == gv
                            }
                    })
            })
        });
        let ratio = match control.flatten() {
            Some(c) if std::ptr::eq(*c, *g) => {
                l.t("对照（0 workers）", "control (0 workers)").to_string()
            }
            Some(c) => match (g.mean, c.mean) {
                (Some(m), Some(cm)) if cm != 0.0 => format!("{:.2}x", m / cm),
                _ => dash(),
            },
            None => dash(),
        };
        tab.row(
            crate::kind_api::tables::group_cells(&b.name, g, l)
                .into_iter()
                .chain([cell(crate::util::stats::mean(&cold)), ratio]),
        );
    }
    d.table(tab);
    if let Some(note) = crate::kind_api::tables::spread_note(mine.iter().map(|g| **g), l) {
        d.para(note);
    }
}

/// The warm rate first (the headline: passes after the first), the cold one (pass 0), each
/// pass, first-batch latency and peak RSS.
pub fn metrics(d: &DrtReport) -> Vec<Metric> {
    let src = d.source.as_str();
    let mut v = Vec::new();
    if let Some(m) = d.warm() {
        v.push(Metric::new(HEADLINE, "samples/s", Some(true), m, src));
    }
    if let Some(c) = d.cold() {
        v.push(Metric::new(
            "cold_global_samples_per_second",
            "samples/s",
            Some(true),
            c,
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

/// The headline metric: the warm rate.
pub const HEADLINE: &str = "warm_global_samples_per_second";
