//! The generic kind's summary.md sections: nccl-tests bus bandwidth, or one metric per lane and
//! sweep point.

use crate::kind_api::data::{Group, Measure, Metric, ReportData};
use crate::kind_api::doc::{Doc, Table, Text};
use crate::kind_api::tables::{axes_label, group_table};
use crate::kinds::bench::nccl::NcclMeasure;
use crate::model::{Bench, Placement};
use crate::util::fmt::fixed2;
use crate::util::lang::Lang;
use crate::util::units::{dur, dur_pm};

/// nccl-tests: per point its "Avg bus bandwidth" line (the figure people quote), then every row
/// with its type, op and root and both halves' time, algbw and busbw.
pub fn nccl_section(d: &mut Doc, data: &ReportData, b: &Bench) {
    let l = data.lang;
    d.h2(l.t(
        "nccl-tests 总线带宽（GB/s；time µs）",
        "nccl-tests bus bandwidth (GB/s; time µs)",
    ));
    let mut t = Table::new([
        l.t("配置", "configuration"),
        "Avg bus bandwidth",
        l.t("来源", "source"),
    ]);
    let mine = || data.points.iter().filter(|p| p.bench == b.name);
    for p in mine() {
        let cfg = format!("{} {} r{}", p.lane, axes_label(&p.axes), p.repeat);
        match p.measure.as_ref().and_then(Measure::own::<NcclMeasure>) {
            Some(NcclMeasure { report, files }) => {
                let (v, src) = match (report.avg_busbw, report.headline()) {
                    (Some(v), _) => (
                        fixed2(v),
                        Text::plain(json_or_line(
                            &files.join(", "),
                            report.avg_busbw_line,
                            "the average bus bandwidth",
                        )),
                    ),
                    (None, Some(v)) => (
                        fixed2(v),
                        Text::plain("no ")
                            .and_code("# Avg bus bandwidth")
                            .and(" line: mean busbw of every row, both halves"),
                    ),
                    (None, None) => ("—".into(), Text::plain("no rows")),
                };
                t.row([Text::plain(cfg), Text::plain(v), src]);
            }
            _ => {
                let why = p.problem.clone().unwrap_or_else(|| p.status.clone());
                t.row([cfg, "—".into(), why]);
            }
        }
    }
    d.table(t);
    let mut rows = Table::new([
        l.t("配置", "configuration"),
        "size (B)",
        "type",
        "redop",
        "root",
        "out-of-place time",
        "algbw",
        "busbw",
        "in-place time",
        "algbw",
        "busbw",
    ]);
    for p in mine() {
        let Some(NcclMeasure { report, .. }) =
            p.measure.as_ref().and_then(Measure::own::<NcclMeasure>)
        else {
            continue;
        };
        for r in &report.rows {
            let (x, y) = (&r.out_of_place, &r.in_place);
            rows.row([
                format!("{} {} r{}", p.lane, axes_label(&p.axes), p.repeat),
                r.size.to_string(),
                r.dtype.clone(),
                if r.redop.is_empty() {
                    "—".into()
                } else {
                    r.redop.clone()
                },
                r.root.to_string(),
                fixed2(x.time_us),
                fixed2(x.algbw),
                fixed2(x.busbw),
                fixed2(y.time_us),
                fixed2(y.algbw),
                fixed2(y.busbw),
            ]);
        }
    }
    d.table(rows);
}

/// A generic metric: each repeat's value per lane and sweep point, then the group table.
pub fn metric_section(d: &mut Doc, data: &ReportData, b: &Bench, groups: &[&Group]) {
    let l = data.lang;
    d.h2(l.t("结果", "Results"));
    let mut t = Table::new([
        "bench",
        "lane",
        l.t("扫描点", "point"),
        l.t("各次", "per repeat"),
    ]);
    for g in groups.iter().filter(|g| g.bench == b.name) {
        let values = crate::kind_api::tables::repeats_text(data, g);
        t.row([b.name.clone(), g.lane.clone(), axes_label(&g.axes), values]);
    }
    d.table(t);
    let what = headline(b).0;
    group_table(
        d,
        data,
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
                super::collect::regex_metric_name(
                    c.pattern.as_deref().unwrap_or(""),
                    c.metric.as_deref(),
                ),
                String::new(),
            ),
        },
        // no collector: the run's time, spawn to exit, less the shell's spawn time
        _ => ("time_ms".into(), "ms".into()),
    }
}

/// The `direction=` of the bench's collect: Some(true) higher is better.
fn collect_direction(bench: &Bench) -> Option<bool> {
    match &bench.placement {
        Placement::Steps {
            collect: Some(c), ..
        } => c.higher_is_better(),
        _ => None,
    }
}

/// Whether the bench's numbers come from a `collect` (otherwise expr times its command).
fn timed_by_collector(bench: &Bench) -> bool {
    matches!(
        &bench.placement,
        Placement::Steps {
            collect: Some(_),
            ..
        }
    )
}

/// The numbers of a generic bench's measure, the headline first.
pub fn metrics(bench: &Bench, m: &Measure) -> Vec<Metric> {
    match m {
        Measure::Steps(s) => crate::kind_api::tables::step_metrics(s),
        Measure::Metric {
            name,
            unit,
            value,
            files,
            lines,
            ..
        } => vec![Metric::new(
            name.as_str(),
            // the unit its numbers carried, else the bench's headline's
            unit.as_deref().unwrap_or(&headline(bench).1),
            // a timed bench: less is better; a user's metric: as its `direction=` says
            if name == "time_ms" && !timed_by_collector(bench) {
                Some(false)
            } else {
                collect_direction(bench)
            },
            *value,
            &crate::kind_api::data::source_of(files, lines.as_deref()),
        )],
        m @ Measure::Own(_) => {
            let Some(NcclMeasure { report, files }) = m.own::<NcclMeasure>() else {
                return Vec::new();
            };
            let file = files.join(";");
            let mut v = Vec::new();
            if let Some(h) = report.headline() {
                let src = if report.avg_busbw.is_some() {
                    json_or_line(&file, report.avg_busbw_line, "the average bus bandwidth")
                } else {
                    format!("{file} (mean of every row's busbw)")
                };
                v.push(Metric::new("avg_busbw", "GB/s", Some(true), h, &src));
            }
            for (i, r) in report.rows.iter().enumerate() {
                let at = json_or_line(&file, r.line, &format!("`results[{i}]`"));
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
    }
}

/// A timed bench (no `collect`): per lane and sweep point, the run time as hyperfine reports
/// it — mean ± σ, median, min … max, user and system CPU — with MAD outliers flagged, and per
/// sweep point how many times faster the fastest lane ran than each other, with the error
/// propagated from both spreads.
pub fn timing_section(d: &mut Doc, data: &ReportData, b: &Bench, groups: &[&Group]) {
    use crate::kind_api::tables::{
        by_sweep_point, efficiency_cells, efficiency_head, has_energy, table_head,
    };
    let mine: Vec<&&Group> = groups.iter().filter(|g| g.bench == b.name).collect();
    if mine.is_empty() {
        return;
    }
    let energy = has_energy(data, &b.name);
    timing_intro(d, data, b);
    let l = data.lang;
    let mut notes = Vec::new();
    for (sp, here) in by_sweep_point(&mine.iter().map(|g| **g).collect::<Vec<_>>()) {
        let headers: Vec<String> = [
            "mean ± σ",
            "median",
            "min … max",
            "user",
            "sys",
            "repeats",
            "outliers",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(energy.then(|| efficiency_head(l)).into_iter().flatten())
        .collect();
        let mut t = table_head(d, &sp, "lane", &headers);
        let mut means: Vec<(String, f64, Option<f64>)> = Vec::new();
        for g in &here {
            let rows = t.rows.len();
            timing_row(&mut t, data, g, &sp, &mut notes);
            // with telemetry: the lane's GPU energy and headline per watt
            if let (true, Some(r)) = (energy && t.rows.len() > rows, t.rows.last_mut()) {
                r.extend(efficiency_cells(data, g).map(Text::plain));
            }
            if let Some(m) = g.mean {
                means.push((g.lane.clone(), m, g.sd));
                // hyperfine's caution: below 5 ms the spawn noise is the measurement
                if m < 5.0 && !g.values.is_empty() {
                    notes.push(short_mean_note(l, g, &sp, m));
                }
            }
        }
        d.table(t);
        // relative speed: the fastest lane against each other one
        if means.len() >= 2 {
            relative_speed(d, l, &mut means);
        }
    }
    for n in notes {
        d.para(n);
    }
}

/// The timing section's heading, and what `time_ms` is: the wall time less the shell's start-up
/// time, or (`shell "none"`) the wall time.
fn timing_intro(d: &mut Doc, data: &ReportData, b: &Bench) {
    let overhead = data
        .points
        .iter()
        .filter(|p| p.bench == b.name)
        .find_map(|p| {
            p.metrics
                .iter()
                .find(|m| m.name == "time_ms")
                .map(|m| m.source.contains("shell_overhead"))
        });
    let cpu_too = data
        .points
        .iter()
        .filter(|p| p.bench == b.name)
        .flat_map(|p| p.metrics.iter())
        .any(|m| m.name == "user_ms" && m.source.contains("shell_overhead_user_ms"));
    let l = data.lang;
    d.h2(l.t(
        "计时（每个点 run 步骤从启动到退出的时间；wait4 计时）",
        "Timing (each point's run steps, spawn to exit; timed by wait4)",
    ));
    match overhead {
        Some(true) => {
            let mut t = Text::code("time_ms")
                .and(l.t(
                    " = wall time − shell 启动时间（运行开始时对 ",
                    " = wall time − the shell's start-up time (measured at the start of the run on ",
                ))
                .and_code("bash -c true")
                .and(l.t(
                    " 在同一目录测得，见 journal.jsonl 的 calibration 事件），与 hyperfine 的做法相同。",
                    " in the same directory: the calibration event of journal.jsonl), as hyperfine does.",
                ));
            if cpu_too {
                t = t
                    .and(" ")
                    .and_code("user_ms")
                    .and(l.t(" 与 ", " and "))
                    .and_code("sys_ms")
                    .and(l.t(
                        " 同样扣除该 shell 自身的 CPU 时间。",
                        " are likewise less the shell's own CPU time.",
                    ));
            }
            d.para(t)
        }
        Some(false) => d.para(
            Text::code("shell \"none\"")
                .and(l.t(
                    "：命令不经 shell 直接执行，",
                    ": the command runs without a shell, so ",
                ))
                .and_code("time_ms")
                .and(l.t(
                    " 即 wall time，无需扣除。",
                    " is the wall time, with nothing to subtract.",
                )),
        ),
        None => {}
    }
}

/// A sweep point's label in a note, `(axes)`, or nothing without a sweep.
fn at_point(l: Lang, sp: &[(String, String)]) -> String {
    if sp.is_empty() {
        String::new()
    } else {
        l.paren(&crate::kind_api::tables::axes_label(sp))
    }
}

/// A lane's row of the timing table; its MAD outliers, if any, as a note.
fn timing_row(
    t: &mut Table,
    data: &ReportData,
    g: &Group,
    sp: &[(String, String)],
    notes: &mut Vec<String>,
) {
    use crate::util::stats;
    let l = data.lang;
    let pts: Vec<&crate::kind_api::data::PointReport> =
        data.points_of(g).filter(|p| p.measure.is_some()).collect();
    let v = &g.values;
    let user: Vec<f64> = pts.iter().filter_map(|p| p.value("user_ms")).collect();
    let sys: Vec<f64> = pts.iter().filter_map(|p| p.value("sys_ms")).collect();
    let out = stats::outliers(v);
    let dash = || "—".to_string();
    let (mn, mx) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(*x), b.max(*x))
        });
    t.row([
        g.lane.clone(),
        match (g.mean, g.sd) {
            (Some(m), Some(s)) => dur_pm(m, s),
            (Some(m), None) => dur(m),
            _ => dash(),
        },
        stats::median(v).map(dur).unwrap_or_else(dash),
        if v.is_empty() {
            dash()
        } else {
            format!("{} … {}", dur(mn), dur(mx))
        },
        stats::mean(&user).map(dur).unwrap_or_else(dash),
        stats::mean(&sys).map(dur).unwrap_or_else(dash),
        v.len().to_string(),
        out.len().to_string(),
    ]);
    if !out.is_empty() {
        let which: Vec<String> = out
            .iter()
            .filter_map(|i| pts.get(*i).map(|p| format!("{} {}", p.run_id, dur(v[*i]))))
            .collect();
        let at = at_point(l, sp);
        let (lane, n) = (&g.lane, out.len());
        notes.push(l.t(
            format!(
                "⚠ lane {lane}{at}：{n} 个离群值（|0.6745·(x − 中位数)/MAD| > 3.5）：{}。可能受其他进程或缓存影响，请在空闲的机器上重跑或增加 repeat。",
                which.join("，")
            ),
            format!(
                "⚠ lane {lane}{at}: {n} outlier(s) (|0.6745·(x − median)/MAD| > 3.5): {}. Other processes or caches may have disturbed them; run again on an idle machine or with more repeats.",
                which.join(", ")
            ),
        ));
    }
}

/// hyperfine's caution for a lane whose mean `m` is below 5 ms: the spawn noise is the
/// measurement.
fn short_mean_note(l: Lang, g: &Group, sp: &[(String, String)], m: f64) -> String {
    let at = at_point(l, sp);
    let (lane, mean) = (&g.lane, dur(m));
    let zero = g.values.contains(&0.0);
    l.t(
        format!(
            "⚠ lane {lane}{at}：均值 {mean} 低于 5 ms{}，结果主要是启动时间的噪声；用 `shell \"none\"`、更长的命令或更多重复。",
            if zero { "（有的值减去 shell 启动时间后为负，记为 0）" } else { "" }
        ),
        format!(
            "⚠ lane {lane}{at}: the mean {mean} is below 5 ms{}, so the result is mostly start-up noise; use `shell \"none\"`, a longer command or more repeats.",
            if zero { " (some values were negative after subtracting the shell's start-up time and are 0)" } else { "" }
        ),
    )
}

/// Relative speed at a sweep point: the fastest lane (of `means`, sorted here) against each
/// other one, with the error propagated from both spreads.
fn relative_speed(d: &mut Doc, l: Lang, means: &mut [(String, f64, Option<f64>)]) {
    use crate::util::stats;
    means.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (fast, fm, fs) = means[0].clone();
    let mut items = Vec::new();
    for (lane, m, s) in &means[1..] {
        // a spread as large as the mean makes a ratio meaningless
        if [(*m, *s), (fm, fs)]
            .iter()
            .any(|(mm, ss)| ss.is_some_and(|ss| ss >= *mm))
        {
            items.push(Text::code(lane).and(l.t(
                "：σ 不小于均值，不给出倍数",
                ": σ is not below the mean, so no ratio is given",
            )));
            continue;
        }
        if let Some((r, e)) = stats::ratio_with_error((*m, *s), (fm, fs)) {
            let times = match e {
                Some(e) => format!("{r:.2} ± {e:.2}"),
                None => l.t(
                    format!("{r:.2}（n<2，无误差）"),
                    format!("{r:.2} (n<2, no error)"),
                ),
            };
            items.push(match l {
                Lang::Zh => Text::plain("比 ")
                    .and_code(lane)
                    .and(format!(" 快 {times} 倍")),
                Lang::En => Text::plain(format!("{times} times faster than ")).and_code(lane),
            });
        }
    }
    d.list(
        Some(Text::code(&fast).and(l.t(" 最快：", " ran fastest:"))),
        items,
    );
}

/// Where an nccl-tests figure stands: `file:line` in the table form; in `-J` JSON (read
/// without lines, line 0) the file and the key, never a line 0.
fn json_or_line(file: &str, line: usize, key: &str) -> String {
    if line > 0 {
        format!("{file}:{line}")
    } else {
        format!("{file} (JSON: {key})")
    }
}

#[cfg(test)]
mod tests {
    /// An nccl-tests figure read from `-J` JSON names the file and the key, never a line 0;
    /// one from the table names its line.
    #[test]
    fn an_nccl_json_figure_names_its_key_not_a_line_0() {
        let loaded = crate::parse::load::load_str(
            "t.kdl",
            "experiment t\nbench b {\n    run \"./all_reduce_perf -J n.json\"\n    collect \"nccl-tests\" path=\"n.json\"\n}\n",
            &Default::default(),
        );
        let exp = loaded.experiment.expect("an experiment");
        let json = r#"{"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":-1,"out_of_place":{"time":1.5,"alg_bw":0.1,"bus_bw":0.2,"nwrong":0},"in_place":{"time":1.4,"alg_bw":0.1,"bus_bw":0.3,"nwrong":0}}],"average_bus_bandwidth":{"bandwidth":0.25}}"#;
        let m = crate::kinds::bench::nccl::NcclMeasure {
            report: crate::kinds::bench::nccl::parse_nccl_tests(json).unwrap(),
            files: vec!["n.json".into()],
        }
        .measure();
        let metrics = super::metrics(&exp.benches[0], &m);
        assert!(!metrics.is_empty());
        for x in &metrics {
            assert!(!x.source.ends_with(":0"), "{}: {}", x.name, x.source);
        }
        assert_eq!(
            metrics[0].source,
            "n.json (JSON: the average bus bandwidth)"
        );
        assert!(
            metrics[1].source.ends_with("(JSON: `results[0]`)"),
            "{}",
            metrics[1].source
        );
    }
}
