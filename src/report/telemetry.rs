//! The telemetry part of the report (`telemetry` in the experiment): per group the headline
//! beside its energy and power and the headline per watt, per point and GPU what the samples
//! gave, the GPU unlike the others named, the points without numbers with why, and a plot of
//! power and SM clock over each point's measured window per GPU.

use crate::kind_api::data::ReportData;
use crate::kind_api::doc::{Doc, Table, Text};
use crate::report::chart::{self, Figure, Lines, Pt, Series};
use crate::results::telemetry::PointTelemetry;
use crate::util::fmt;

/// The most points whose GPUs are listed one by one, and plotted (the rest are in
/// metrics.csv and their samples files).
pub const MAX_POINTS: usize = 100;

/// The plot files of a point: power, then SM clock.
pub fn plot_files(run_id: &str) -> [String; 2] {
    let s = chart::file_safe(run_id);
    [
        format!("telemetry_{s}_power.svg"),
        format!("telemetry_{s}_clock.svg"),
    ]
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("—".to_string(), |v| format!("{v:.digits$}"))
}

/// The telemetry section, when any point has telemetry.
pub fn doc(data: &ReportData) -> Doc {
    let mut d = Doc::default();
    let l = data.lang;
    let with: Vec<(&crate::kind_api::data::PointReport, &PointTelemetry)> = data
        .points
        .iter()
        .filter_map(|p| p.telemetry.as_ref().map(|t| (p, t)))
        .collect();
    if with.is_empty() {
        return d;
    }
    let interval = data
        .exp
        .as_ref()
        .and_then(|e| e.telemetry.as_ref())
        .map_or(0, |t| t.interval_ms);
    d.h2(l.t("GPU 遥测（telemetry）", "GPU telemetry"));
    d.para(l.t(
        format!("采样器（nvidia-smi --query-gpu，每 {interval} ms）在每个点的计时步骤期间读取该点所用的 GPU；能量在驱动提供 GPU 能量计数器时取计数器在计时窗口两端之差（NVML，nvml-HOST.csv），否则由功率样本在窗口上积分（梯形法）；metrics.csv 中每个点 gpu_energy_j 的来源写明是哪一种。远程主机的样本按其时钟偏差（预检时读取）对齐。样本在各点的 outputs/RUN_ID/telemetry-HOST.csv。"),
        format!("A sampler (nvidia-smi --query-gpu, every {interval} ms) read the GPUs each point uses during its measured steps; energy is the difference of the GPUs' own energy counters at the window's ends where the driver has them (NVML, nvml-HOST.csv), else the power samples integrated over the window (trapezoid); each point's gpu_energy_j source in metrics.csv says which. A remote host's samples are read on its own clock (its offset read at preflight). The samples are in each point's outputs/RUN_ID/telemetry-HOST.csv."),
    ));
    group_table(&mut d, data);
    odd_list(&mut d, &with, l);
    missing_list(&mut d, &with, l);
    point_table(&mut d, &with, l);
    d
}

type With<'a> = [(&'a crate::kind_api::data::PointReport, &'a PointTelemetry)];

/// Per group: the headline with its energy, power and per-watt figure (means over repeats).
fn group_table(d: &mut Doc, data: &ReportData) {
    let l = data.lang;
    let mut t = Table::new([
        l.t("组", "group").to_string(),
        l.t("主指标", "headline").to_string(),
        "gpu_energy_j".to_string(),
        "gpu_power_mean_w".to_string(),
        l.t("主指标/W", "headline per W").to_string(),
        "sm_clock_mean".to_string(),
        "gpu_throttle_ms".to_string(),
        "cpu_energy_j".to_string(),
    ]);
    for g in &data.groups {
        let pts: Vec<&crate::kind_api::data::PointReport> = data
            .points_of(g)
            .filter(|p| p.telemetry.is_some())
            .collect();
        if pts.is_empty() {
            continue;
        }
        let mean = |name: &str| -> Option<f64> {
            let v: Vec<f64> = pts.iter().filter_map(|p| p.value(name)).collect();
            (v.len() == pts.len()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let head = pts
            .iter()
            .find_map(|p| p.metrics.first())
            .map(|m| (m.name.clone(), m.unit.clone()));
        let per_w = head.as_ref().and_then(|(n, _)| mean(&format!("{n}_per_w")));
        let mut label = g.lane.clone();
        for (k, v) in &g.axes {
            label.push_str(&format!(" {k}={v}"));
        }
        t.row([
            Text::plain(format!("{} {label}", g.bench)),
            Text::plain(match (&head, g.mean) {
                (Some((n, u)), Some(m)) => format!("{n} {} {u}", fmt::km(m)),
                _ => "—".into(),
            }),
            Text::plain(num(mean("gpu_energy_j"), 1)),
            Text::plain(num(mean("gpu_power_mean_w"), 1)),
            Text::plain(per_w.map_or("—".into(), fmt::km)),
            Text::plain(num(mean("sm_clock_mean"), 0)),
            Text::plain(num(mean("gpu_throttle_ms"), 0)),
            Text::plain(num(mean("cpu_energy_j"), 1)),
        ]);
    }
    d.table(t);
}

/// The GPUs unlike the others of their point, named.
fn odd_list(d: &mut Doc, with: &With, l: crate::util::lang::Lang) {
    let mut odd = Vec::new();
    for (p, t) in with {
        let left_out = p
            .perturbed
            .as_deref()
            .is_some_and(|w| w.starts_with("noise"));
        for o in &t.odd {
            odd.push(Text::plain(format!(
                "{}: GPU {} {} `{}`{}{}{}",
                p.run_id,
                o.gpu,
                l.t("于", "on"),
                o.host,
                l.t("：", ": "),
                if o.by.is_empty() {
                    o.how.join("; ")
                } else {
                    format!("{} — {}", o.how.join("; "), o.by.join(", "))
                },
                if left_out {
                    l.t(
                        "（noise \"refuse\"：不计入统计）",
                        " (noise \"refuse\": left out of the statistics)",
                    )
                } else {
                    ""
                }
            )));
        }
    }
    d.list_of(
        l.t(
            "⚠ 与同一点其他 GPU 不同的 GPU（与其余 GPU 的中位数相比）：",
            "⚠ A GPU unlike the others of its point (against the others' median):",
        ),
        odd,
    );
}

/// The points without telemetry numbers, and why.
fn missing_list(d: &mut Doc, with: &With, l: crate::util::lang::Lang) {
    let missing: Vec<Text> = with
        .iter()
        .filter_map(|(p, t)| {
            let why = t.missing.clone().or_else(|| {
                (!t.not_read.is_empty()).then(|| {
                    t.not_read
                        .iter()
                        .map(|(m, w)| format!("{m}: {w}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                })
            })?;
            Some(Text::plain(format!("{}: {why}", p.run_id)))
        })
        .collect();
    d.list_of(
        l.t(
            "没有遥测数值的点（表中以 — 显示）：",
            "Points without telemetry numbers (— in the tables):",
        ),
        missing,
    );
}

/// Per point and GPU (the first [`MAX_POINTS`] points).
fn point_table(d: &mut Doc, with: &With, l: crate::util::lang::Lang) {
    let mut t = Table::new([
        l.t("点", "point").to_string(),
        "GPU".to_string(),
        l.t("能量 (J)", "energy (J)").to_string(),
        l.t("平均功率 (W)", "mean power (W)").to_string(),
        l.t("最大功率 (W)", "max power (W)").to_string(),
        "SM (MHz)".to_string(),
        l.t("利用率 (%)", "util (%)").to_string(),
        l.t("最高温度 (°C)", "max temp (°C)").to_string(),
        l.t("降频 (ms)", "throttled (ms)").to_string(),
        l.t("图", "plot").to_string(),
    ]);
    for (p, tel) in with.iter().take(MAX_POINTS) {
        let [power, clock] = plot_files(&p.run_id);
        for g in &tel.gpus {
            t.row([
                Text::plain(&p.run_id),
                Text::plain(format!("{} {}", g.gpu, g.host)),
                Text::plain(num(g.energy_j, 1)),
                Text::plain(num(g.power_mean_w, 1)),
                Text::plain(num(g.power_max_w, 1)),
                Text::plain(num(g.sm_mhz_mean, 0)),
                Text::plain(num(g.util_mean, 1)),
                Text::plain(num(g.temp_max_c, 0)),
                Text::plain(if g.reasons.is_empty() {
                    format!("{:.0}", g.throttle_ms)
                } else {
                    format!("{:.0} ({})", g.throttle_ms, g.reasons.join(", "))
                }),
                Text::default()
                    .and_link(l.t("功率", "power"), power.as_str())
                    .and(" · ")
                    .and_link(l.t("时钟", "clock"), clock.as_str()),
            ]);
        }
    }
    d.table(t);
    if with.len() > MAX_POINTS {
        d.para(l.t(
            format!(
                "只列出并绘制前 {MAX_POINTS} 个点（共 {}）；其余见 metrics.csv 与各点的样本文件。",
                with.len()
            ),
            format!(
                "The first {MAX_POINTS} points are listed and plotted (of {}); the rest are in metrics.csv and each point's samples file.",
                with.len()
            ),
        ));
    }
}

/// One point of a GPU's curve: (seconds, power W, SM clock MHz).
type Sample = (f64, Option<f64>, Option<f64>);
/// Which value of a curve's point a plot draws.
type Pick = dyn Fn(&Sample) -> Option<f64>;

/// Power and SM clock over each point's measured window, per GPU (the first [`MAX_POINTS`]
/// points with samples).
pub fn figures(data: &ReportData) -> Vec<Figure> {
    let l = data.lang;
    let mut out = Vec::new();
    for p in data
        .points
        .iter()
        .filter(|p| p.telemetry.as_ref().is_some_and(|t| !t.curves.is_empty()))
        .take(MAX_POINTS)
    {
        let t = p.telemetry.as_ref().expect("filtered");
        let [power_file, clock_file] = plot_files(&p.run_id);
        let series = |pick: &Pick| {
            t.curves
                .iter()
                .enumerate()
                .map(|(i, (host, gpu, c))| Series {
                    label: format!("GPU {gpu} {host}"),
                    lane: None,
                    color: i,
                    dash: 0,
                    points: c
                        .iter()
                        .filter_map(|s| {
                            pick(s).map(|y| Pt {
                                x: s.0,
                                y,
                                ci: None,
                            })
                        })
                        .collect(),
                })
                .collect::<Vec<_>>()
        };
        let window = t.window_ms / 1e3;
        for (file, what, unit, pick) in [
            (
                power_file,
                l.t("功率", "power"),
                "W",
                &(|s: &Sample| s.1) as &Pick,
            ),
            (
                clock_file,
                l.t("SM 时钟", "SM clock"),
                "MHz",
                &(|s: &Sample| s.2) as &Pick,
            ),
        ] {
            let title = l.t(
                format!("{}：{what}（计时窗口 0–{window:.2} s）", p.run_id),
                format!("{}: {what} (measured window 0–{window:.2} s)", p.run_id),
            );
            let svg = chart::lines(&Lines {
                title: title.clone(),
                x_label: l.t("时间 (s)", "time (s)").to_string(),
                y_label: format!("{what} ({unit})"),
                x_ticks: Vec::new(),
                log2_x: false,
                series: series(pick),
                lang: l,
            });
            out.push(Figure { file, title, svg });
        }
    }
    out
}
