//! SVG charts beside summary.md (plotters): throughput per lane with CV error bars, the stacked
//! latency breakdown per lane, and throughput against each sweep axis.

use std::path::Path;

use plotters::prelude::*;

use crate::collect::steps::STAGES;
use crate::report::data::{Group, ReportData};

fn label(g: &Group) -> String {
    let axes: Vec<String> = g.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if axes.is_empty() {
        g.lane.clone()
    } else {
        format!("{} {}", g.lane, axes.join(" "))
    }
}

type Res = Result<(), String>;

type HBars<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordusize>,
    >,
>;

/// A horizontal bar chart with one labelled row per group (labels stay readable on the y axis).
fn hbars<'a>(
    root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    caption: &str,
    x_max: f64,
    groups: &[&Group],
    x_desc: &str,
) -> Result<HBars<'a>, String> {
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(label_room(groups))
        .build_cartesian_2d(0.0..x_max, segments(groups.len()))
        .map_err(err)?;
    let labels: Vec<String> = groups.iter().map(|g| label(g)).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(groups.len())
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc(x_desc)
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// One segment per group (a segmented range over 0..n would add an empty one at the end).
fn segments(
    n: usize,
) -> plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordusize> {
    (0..n.saturating_sub(1).max(1)).into_segmented()
}

/// Room left of the chart for the group labels.
fn label_room(groups: &[&Group]) -> u32 {
    let longest = groups
        .iter()
        .map(|g| label(g).chars().count())
        .max()
        .unwrap_or(10) as u32;
    (longest * 7 + 16).clamp(60, 320)
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// The SVG charts: throughput, latency breakdown, and one per swept axis.
pub struct Svg;

impl crate::report::format::Format for Svg {
    fn write(&self, r: &crate::report::format::Report) -> Result<Vec<String>, String> {
        write(r.data, r.dir).map_err(|e| format!("plots: {e}"))
    }
}

/// Write every chart that the data supports; returns the files written.
pub fn write(data: &ReportData, dir: &Path) -> Result<Vec<String>, String> {
    let groups: Vec<&Group> = data
        .groups
        .iter()
        .filter(|g| g.mean.is_some() && !g.stages.is_empty())
        .collect();
    if groups.is_empty() {
        return Ok(Vec::new());
    }
    // each chart is drawn under a temporary name and renamed when complete
    let atomic = |name: &str, draw: &dyn Fn(&Path) -> Result<bool, String>| {
        let tmp = dir.join(format!(".{name}.tmp"));
        let drawn = draw(&tmp);
        match drawn {
            Ok(true) => std::fs::rename(&tmp, dir.join(name))
                .map_err(|e| e.to_string())
                .map(|_| true),
            other => {
                let _ = std::fs::remove_file(&tmp);
                other
            }
        }
    };
    let mut files = Vec::new();
    atomic("throughput.svg", &|p| throughput(&groups, p).map(|_| true))?;
    files.push("throughput.svg".into());
    atomic("latency.svg", &|p| latency(&groups, p).map(|_| true))?;
    files.push("latency.svg".into());
    let mut axes: Vec<String> = groups
        .iter()
        .flat_map(|g| g.axes.iter().map(|(k, _)| k.clone()))
        .collect();
    axes.sort();
    axes.dedup();
    for a in axes {
        let name = format!(
            "sweep_{}.svg",
            a.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")
        );
        if atomic(&name, &|p| sweep(&groups, &a, p))? {
            files.push(name);
        }
    }
    Ok(files)
}

fn throughput(groups: &[&Group], path: &Path) -> Res {
    let root = SVGBackend::new(path, (820, 120 + 36 * groups.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let top = groups
        .iter()
        .map(|g| g.mean.unwrap_or(0.0) + g.sd.unwrap_or(0.0))
        .fold(0.0, f64::max)
        * 1.1;
    let mut chart = hbars(
        &root,
        "E2E throughput (samples/s, mean ± sd over repeats)",
        top.max(1.0),
        groups,
        "samples/s",
    )?;
    chart
        .draw_series(groups.iter().enumerate().map(|(i, g)| {
            let color = Palette99::pick(i).filled();
            Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (g.mean.unwrap_or(0.0), SegmentValue::Exact(i + 1)),
                ],
                color,
            )
        }))
        .map_err(err)?;
    chart
        .draw_series(
            groups
                .iter()
                .enumerate()
                .filter(|(_, g)| g.sd.is_some())
                .map(|(i, g)| {
                    let (m, s) = (g.mean.unwrap_or(0.0), g.sd.unwrap_or(0.0));
                    ErrorBar::new_horizontal(
                        SegmentValue::CenterOf(i),
                        m - s,
                        m,
                        m + s,
                        BLACK.stroke_width(2),
                        10,
                    )
                }),
        )
        .map_err(err)?;
    root.present().map_err(err)
}

fn latency(groups: &[&Group], path: &Path) -> Res {
    let root = SVGBackend::new(path, (820, 160 + 36 * groups.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let parts: Vec<&str> = STAGES
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| *s != "step_total_ms")
        .collect();
    let top = groups
        .iter()
        .map(|g| parts.iter().filter_map(|p| g.stages.get(*p)).sum::<f64>())
        .fold(0.0, f64::max)
        * 1.7;
    let mut chart = hbars(
        &root,
        "E2E latency breakdown (ms per step, stacked)",
        top.max(0.001),
        groups,
        "ms",
    )?;
    for (k, part) in parts.iter().enumerate() {
        let color = Palette99::pick(k);
        if !groups.iter().any(|g| g.stages.contains_key(*part)) {
            continue;
        }
        chart
            .draw_series(groups.iter().enumerate().filter_map(|(i, g)| {
                let v = *g.stages.get(*part)?;
                let before: f64 = parts[..k].iter().filter_map(|p| g.stages.get(*p)).sum();
                Some(Rectangle::new(
                    [
                        (before, SegmentValue::Exact(i)),
                        (before + v, SegmentValue::Exact(i + 1)),
                    ],
                    color.filled(),
                ))
            }))
            .map_err(err)?
            .label(*part)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// Throughput against one numeric sweep axis, a line per lane. False when the axis is not numeric.
/// (x, mean, sd) of one sweep point.
type MeanSd = (f64, f64, f64);

/// One line per lane (and per value of the other swept axes), through the repeat means, with
/// ± sd error bars: repeats are aggregated, never drawn as lines of their own.
fn sweep(groups: &[&Group], axis: &str, path: &Path) -> Result<bool, String> {
    // series in first-seen order: lanes interleave with repeats and sweep points
    let mut keys: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for g in groups {
        let others: Vec<(String, String)> =
            g.axes.iter().filter(|(k, _)| k != axis).cloned().collect();
        let key = (g.lane.clone(), others);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let mut series: Vec<(String, Vec<MeanSd>)> = Vec::new();
    for (lane, others) in &keys {
        let mut v: Vec<MeanSd> = Vec::new();
        for g in groups.iter().filter(|g| {
            &g.lane == lane && g.axes.iter().filter(|(k, _)| k != axis).eq(others.iter())
        }) {
            let Some(x) = g
                .axes
                .iter()
                .find(|(k, _)| k == axis)
                .and_then(|(_, v)| v.parse::<f64>().ok())
            else {
                return Ok(false);
            };
            let Some(m) = g.mean else { continue };
            v.push((x, m, g.sd.unwrap_or(0.0)));
        }
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let label = if others.is_empty() {
            lane.clone()
        } else {
            let o: Vec<String> = others.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{lane} ({})", o.join(", "))
        };
        series.push((label, v));
    }
    if series.iter().all(|(_, p)| p.is_empty()) {
        return Ok(false);
    }
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .collect();
    let (lo, hi) = (
        xs.iter().cloned().fold(f64::INFINITY, f64::min),
        xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
    );
    let top = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1 + x.2))
        .fold(0.0, f64::max)
        * 1.15;
    let root = SVGBackend::new(path, (640, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let pad = ((hi - lo) * 0.05).max(0.5);
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("throughput vs {axis}"), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d((lo - pad)..(hi + pad), 0.0..top.max(1.0))
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(axis)
        .y_desc("samples/s")
        .draw()
        .map_err(err)?;
    for (i, (label, p)) in series.iter().enumerate() {
        let color = Palette99::pick(i);
        chart
            .draw_series(LineSeries::new(
                p.iter().map(|(x, m, _)| (*x, *m)),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        let dot = Palette99::pick(i).filled();
        chart
            .draw_series(p.iter().map(|(x, m, _)| Circle::new((*x, *m), 3, dot)))
            .map_err(err)?;
        chart
            .draw_series(p.iter().filter(|(_, _, sd)| *sd > 0.0).map(|(x, m, sd)| {
                ErrorBar::new_vertical(
                    *x,
                    m - sd,
                    *m,
                    m + sd,
                    Palette99::pick(i).stroke_width(1),
                    6,
                )
            }))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(true)
}
