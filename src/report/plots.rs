//! The report's charts (drawn by `report::chart`), each an SVG file beside summary.md and inline
//! in report.html. Per-step kinds: throughput per lane and point (throughput.svg), the stacked
//! latency breakdown (latency.svg) and throughput against each sweep axis (sweep_<axis>.svg).
//! Every other bench with a sweep or more than one lane: its headline against each numeric
//! sweep axis (headline_<bench>_vs_<axis>.svg), else per lane and point as bars
//! (headline_<bench>.svg). A lane has one colour in every chart of a run; intervals are the
//! mean's 95 % confidence interval over repeats.

use crate::kind_api::data::{Group, ReportData};
use crate::report::chart::{self, Bar, Bars, Figure, Lines, Pt, Series};
use crate::results::atomic;
use crate::results::collect::steps::STAGES;
use crate::util::lang::Lang;
use crate::util::stats;

fn label(g: &Group) -> String {
    let axes: Vec<String> = g.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if axes.is_empty() {
        g.lane.clone()
    } else {
        format!("{} {}", g.lane, axes.join(" "))
    }
}

/// The run's lanes in first-seen order: a lane's colour is its index here, in every chart.
pub fn lanes(data: &ReportData) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for g in &data.groups {
        if !v.contains(&g.lane) {
            v.push(g.lane.clone());
        }
    }
    v
}

fn color_of(lanes: &[String], lane: &str) -> usize {
    lanes.iter().position(|l| l == lane).unwrap_or(0)
}

/// A metric's axis label: `time_ms` in ms reads `time (ms)`.
pub fn metric_label(name: &str, unit: &str) -> String {
    match name.strip_suffix(&format!("_{unit}")) {
        Some(base) if !unit.is_empty() && !base.is_empty() => format!("{base} ({unit})"),
        _ if unit.is_empty() => name.to_string(),
        _ => format!("{name} ({unit})"),
    }
}

/// The SVG charts.
pub struct Svg;

impl crate::report::format::Format for Svg {
    fn write(&self, r: &crate::report::format::Report) -> Result<Vec<String>, String> {
        let mut files = Vec::new();
        for f in figures(r.data) {
            atomic::write(&r.dir.join(&f.file), f.svg.as_bytes())
                .map_err(|e| format!("plots: {e}"))?;
            files.push(f.file);
        }
        // a chart an earlier report drew that the data no longer supports goes: the documents
        // link the charts there are, and one of numbers now missing is not this report's
        for e in std::fs::read_dir(r.dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if is_chart(&name)
                && !files.contains(&name)
                && e.file_type().is_ok_and(|t| t.is_file())
                && drawn_here(&e.path())
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
        Ok(files)
    }
}

/// Whether the SVG file at `path` is one expr drew (its charts open so): a file someone put
/// there under a chart's name is not one to remove.
fn drawn_here(path: &std::path::Path) -> bool {
    use std::io::Read;
    const OPENING: &[u8] = b"<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\"";
    let mut head = [0u8; OPENING.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == *OPENING)
}

/// Whether a file name is one of the charts a report draws: `throughput.svg`, `latency.svg`,
/// `sweep_*.svg`, `headline_*.svg`, `drift_*.svg`, `telemetry_*_{power,clock}.svg`.
pub fn is_chart(name: &str) -> bool {
    name == "throughput.svg"
        || name == "latency.svg"
        || (name.ends_with(".svg")
            && (["sweep_", "headline_", "drift_"]
                .iter()
                .any(|p| name.starts_with(p))
                || (name.starts_with("telemetry_")
                    && (name.ends_with("_power.svg") || name.ends_with("_clock.svg")))))
}

/// Every chart the data supports.
pub fn figures(data: &ReportData) -> Vec<Figure> {
    let l = data.lang;
    let lanes = lanes(data);
    let mut out = Vec::new();
    let steps: Vec<&Group> = data
        .groups
        .iter()
        .filter(|g| g.mean.is_some() && !g.stages.is_empty())
        .collect();
    if !steps.is_empty() {
        out.push(throughput(&steps, &lanes, l));
        out.push(latency(&steps, &lanes, l));
        for a in axes_of(&steps) {
            let file = format!("sweep_{}.svg", chart::file_safe(&a));
            let title = l.t(format!("吞吐随 {a} 的变化"), format!("throughput vs {a}"));
            if let Some(svg) = sweep(&steps, &a, &lanes, &title, "samples/s", l) {
                out.push(Figure { file, title, svg });
            }
        }
    }
    let benches: Vec<&String> = {
        let mut b: Vec<&String> = Vec::new();
        for g in &data.groups {
            if !b.contains(&&g.bench) {
                b.push(&g.bench);
            }
        }
        b
    };
    for bench in benches {
        let groups: Vec<&Group> = data
            .groups
            .iter()
            .filter(|g| &g.bench == bench && g.mean.is_some() && g.stages.is_empty())
            .collect();
        let n_lanes = {
            let mut l: Vec<&String> = groups.iter().map(|g| &g.lane).collect();
            l.sort();
            l.dedup();
            l.len()
        };
        let axes = axes_of(&groups);
        if groups.is_empty() || (n_lanes < 2 && axes.is_empty()) {
            continue;
        }
        let (name, unit) = data
            .points
            .iter()
            .filter(|p| &p.bench == bench && p.status == "ok")
            .find_map(|p| p.metrics.first())
            .map(|m| (m.name.clone(), m.unit.clone()))
            .unwrap_or_default();
        let y = metric_label(&name, &unit);
        let mut drawn = false;
        for a in &axes {
            let file = format!(
                "headline_{}_vs_{}.svg",
                chart::file_safe(bench),
                chart::file_safe(a)
            );
            let title = l.t(
                format!("{bench}：{name} 随 {a} 的变化"),
                format!("{bench}: {name} vs {a}"),
            );
            if let Some(svg) = sweep(&groups, a, &lanes, &title, &y, l) {
                out.push(Figure { file, title, svg });
                drawn = true;
            }
        }
        if !drawn {
            let title = l.t(
                format!("{bench}：各 lane 的 {name}（均值，95 % 区间）"),
                format!("{bench}: {name} per lane (mean, 95 % interval)"),
            );
            out.push(Figure::of_bars(
                format!("headline_{}.svg", chart::file_safe(bench)),
                &Bars {
                    lang: l,
                    title,
                    x_label: y,
                    bars: groups.iter().map(|g| bar(g, &lanes)).collect(),
                    legend: legend(&groups, &lanes),
                },
            ));
        }
    }
    out.extend(drift(data));
    out.extend(crate::report::telemetry::figures(data));
    out
}

/// A drift plot per bench whose points ran in an interleaved or shuffled `order`: each lane's
/// headline against the minutes since the campaign's first point started.
pub fn drift(data: &ReportData) -> Vec<Figure> {
    let l = data.lang;
    let Some(exp) = &data.exp else {
        return Vec::new();
    };
    if exp.order.is_default() {
        return Vec::new();
    }
    let t0 = data
        .points
        .iter()
        .filter_map(|p| p.ran.as_ref().map(|r| r.0))
        .fold(f64::INFINITY, f64::min);
    let mut out = Vec::new();
    for b in &exp.benches {
        let mut by_lane: std::collections::BTreeMap<&str, Vec<Pt>> = Default::default();
        let mut name = (String::new(), String::new());
        for p in data
            .points
            .iter()
            .filter(|p| p.bench == b.name && p.status == "ok")
        {
            let (Some((start, _, _)), Some(m)) = (&p.ran, p.metrics.first()) else {
                continue;
            };
            if p.perturbed.is_some() {
                continue;
            }
            name = (m.name.clone(), m.unit.clone());
            by_lane.entry(p.lane.as_str()).or_default().push(Pt {
                x: (start - t0) / 60e3,
                y: m.value,
                ci: None,
            });
        }
        if by_lane.values().map(Vec::len).sum::<usize>() < 2 {
            continue;
        }
        let lanes = lanes(data);
        let series = by_lane
            .into_iter()
            .map(|(lane, mut pts)| {
                pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                Series {
                    label: lane.to_string(),
                    lane: Some(lane.to_string()),
                    color: lanes.iter().position(|x| x == lane).unwrap_or(0),
                    dash: 0,
                    points: pts,
                }
            })
            .collect();
        let title = l.t(
            format!("{}：{} 随时间（漂移）", b.name, name.0),
            format!("{}: {} over the campaign (drift)", b.name, name.0),
        );
        let svg = chart::lines(&Lines {
            title: title.clone(),
            x_label: l
                .t("开始后分钟数", "minutes since the first point")
                .to_string(),
            y_label: metric_label(&name.0, &name.1),
            x_ticks: Vec::new(),
            log2_x: false,
            series,
            lang: l,
        });
        out.push(Figure {
            file: format!("drift_{}.svg", chart::file_safe(&b.name)),
            title,
            svg,
        });
    }
    out
}

/// The swept axes of these groups, sorted.
fn axes_of(groups: &[&Group]) -> Vec<String> {
    let mut axes: Vec<String> = groups
        .iter()
        .flat_map(|g| g.axes.iter().map(|(k, _)| k.clone()))
        .collect();
    axes.sort();
    axes.dedup();
    axes
}

/// The lanes of these groups as legend entries.
fn legend(groups: &[&Group], lanes: &[String]) -> Vec<(String, Option<String>, usize)> {
    let mut seen: Vec<&String> = Vec::new();
    for g in groups {
        if !seen.contains(&&g.lane) {
            seen.push(&g.lane);
        }
    }
    seen.into_iter()
        .map(|l| (l.clone(), Some(l.clone()), color_of(lanes, l)))
        .collect()
}

fn bar(g: &Group, lanes: &[String]) -> Bar {
    Bar {
        label: label(g),
        lane: Some(g.lane.clone()),
        parts: vec![(g.mean.unwrap_or(f64::NAN), color_of(lanes, &g.lane))],
        ci: stats::ci95(&g.values),
    }
}

fn throughput(groups: &[&Group], lanes: &[String], l: Lang) -> Figure {
    let title = l
        .t(
            "E2E 吞吐（samples/s，各 repeat 的均值与 95 % 区间）",
            "E2E throughput (samples/s, mean and 95 % interval over repeats)",
        )
        .to_string();
    Figure::of_bars(
        "throughput.svg".into(),
        &Bars {
            lang: l,
            title,
            x_label: "samples/s".into(),
            bars: groups.iter().map(|g| bar(g, lanes)).collect(),
            legend: legend(groups, lanes),
        },
    )
}

fn latency(groups: &[&Group], _lanes: &[String], l: Lang) -> Figure {
    let parts: Vec<&str> = STAGES
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| *s != "step_total_ms")
        .filter(|s| groups.iter().any(|g| g.stages.contains_key(*s)))
        .collect();
    let title = l
        .t(
            "E2E 延迟分解（ms，每步，堆叠）",
            "E2E latency breakdown (ms per step, stacked)",
        )
        .to_string();
    let b = Bars {
        lang: l,
        title,
        x_label: "ms".into(),
        bars: groups
            .iter()
            .map(|g| Bar {
                label: label(g),
                lane: Some(g.lane.clone()),
                parts: parts
                    .iter()
                    .enumerate()
                    .filter_map(|(k, p)| Some((*g.stages.get(*p)?, k)))
                    .collect(),
                ci: None,
            })
            .collect(),
        legend: parts
            .iter()
            .enumerate()
            .map(|(k, p)| (p.to_string(), None, k))
            .collect(),
    };
    Figure::of_bars("latency.svg".into(), &b)
}

/// One line per lane (and per value of the other swept axes, dashed apart) through the repeat
/// means, with their intervals: repeats are aggregated, never lines of their own. None when
/// the axis is not numeric.
fn sweep(
    groups: &[&Group],
    axis: &str,
    lanes: &[String],
    title: &str,
    y_label: &str,
    l: Lang,
) -> Option<String> {
    // series in first-seen order: lanes interleave with repeats and sweep points
    type Key = (String, Vec<(String, String)>);
    let mut keys: Vec<Key> = Vec::new();
    // each series' groups, gathered in one pass
    let mut members: Vec<Vec<&Group>> = Vec::new();
    let mut at: std::collections::HashMap<Key, usize> = Default::default();
    for g in groups {
        let others: Vec<(String, String)> =
            g.axes.iter().filter(|(k, _)| k != axis).cloned().collect();
        let key = (g.lane.clone(), others);
        let i = *at.entry(key.clone()).or_insert_with(|| {
            keys.push(key);
            members.push(Vec::new());
            keys.len() - 1
        });
        members[i].push(g);
    }
    let mut ticks: Vec<(f64, String)> = Vec::new();
    let mut seen_x: std::collections::HashSet<u64> = Default::default();
    let mut series = Vec::new();
    for ((lane, others), mine) in keys.iter().zip(&members) {
        let mut points = Vec::new();
        for g in mine {
            let (_, text) = g.axes.iter().find(|(k, _)| k == axis)?;
            let x = text.parse::<f64>().ok().filter(|x| x.is_finite())?;
            // -0 and 0 are one tick
            if seen_x.insert((x + 0.0).to_bits()) {
                ticks.push((x, text.clone()));
            }
            let Some(y) = g.mean else { continue };
            points.push(Pt {
                x,
                y,
                ci: stats::ci95(&g.values),
            });
        }
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        let dash = keys
            .iter()
            .filter(|k| &k.0 == lane)
            .position(|k| &k.1 == others)
            .unwrap_or(0);
        let label = if others.is_empty() {
            lane.clone()
        } else {
            let o: Vec<String> = others.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{lane}{}", l.paren(&o.join(l.and_sep())))
        };
        series.push(Series {
            label,
            lane: Some(lane.clone()),
            color: color_of(lanes, lane),
            dash,
            points,
        });
    }
    if series.iter().all(|s| s.points.is_empty()) {
        return None;
    }
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let xs: Vec<f64> = ticks.iter().map(|t| t.0).collect();
    Some(chart::lines(&Lines {
        title: title.to_string(),
        x_label: axis.to_string(),
        y_label: y_label.to_string(),
        log2_x: chart::powers_of_two(&xs),
        lang: l,
        x_ticks: ticks,
        series,
    }))
}

#[cfg(test)]
mod tests {
    use super::metric_label;

    #[test]
    fn a_unit_in_the_name_is_said_once() {
        assert_eq!(metric_label("time_ms", "ms"), "time (ms)");
        assert_eq!(
            metric_label("samples_per_sec", "samples/s"),
            "samples_per_sec (samples/s)"
        );
        assert_eq!(metric_label("match", ""), "match");
    }
}
