//! Shared pieces of the report that kinds build their sections from: cells, sweep-point tables,
//! the per-step throughput and latency sections, and the generic workload prose; each in the
//! report's language.

use crate::kind_api::data::{Group, Measure, Metric, PointReport, ReportData};
use crate::kind_api::doc::{Doc, Table, Text};
use crate::model::{Bench, Experiment};
use crate::results::collect::steps::StepStats;
use crate::results::collect::steps::STAGES;
use crate::util::fmt::km;
use crate::util::lang::Lang;

pub fn cell(v: Option<f64>) -> String {
    v.map(km).unwrap_or_else(|| "—".into())
}

pub fn axes_label(axes: &[(String, String)]) -> String {
    axes.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Axis values as `k=v,k2=v2` (history, compare and expectations key points by it). A value
/// holding `,`, `=`, `"` or `\\` is written quoted (`a="x,b=y",b=z`), so two points never
/// share a text: `a=x,b=y` + `b=z` and `a=x` + `b=y,b=z` were one row of compare.
pub fn axes_text(axes: &[(String, String)]) -> String {
    axes.iter()
        .map(|(k, v)| {
            if v.contains([',', '=', '"', '\\']) {
                format!("{k}={}", serde_json::Value::from(v.as_str()))
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The distinct sweep points of a bench, in matrix order.
pub fn sweep_points(groups: &[&Group]) -> Vec<Vec<(String, String)>> {
    by_sweep_point(groups)
        .into_iter()
        .map(|(sp, _)| sp)
        .collect()
}

/// A sweep point (its axes' values) and its groups.
pub type SweepPoint<'g> = (Vec<(String, String)>, Vec<&'g Group>);

/// The groups of each sweep point, the points in matrix order and the groups in theirs: one
/// pass (a table per sweep point searched every group for each).
pub fn by_sweep_point<'g>(groups: &[&'g Group]) -> Vec<SweepPoint<'g>> {
    let mut order: Vec<SweepPoint<'g>> = Vec::new();
    let mut at: std::collections::HashMap<&[(String, String)], usize> = Default::default();
    for g in groups {
        match at.get(g.axes.as_slice()) {
            Some(&i) => order[i].1.push(g),
            None => {
                at.insert(g.axes.as_slice(), order.len());
                order.push((g.axes.clone(), vec![g]));
            }
        }
    }
    order
}

/// A setting as the workload prose shows it: its value, or "扫描 a, b, c" ("swept a, b, c")
/// when it is swept.
pub fn setting_text(b: &Bench, key: &str, l: Lang) -> String {
    // a zip's axis takes its values with the zip's others: said, not read as a sweep of its own
    let with: Vec<&str> = b
        .sweep
        .zips
        .iter()
        .find(|z| z.iter().any(|a| a.name == key))
        .map(|z| {
            z.iter()
                .map(|a| a.name.as_str())
                .filter(|n| *n != key)
                .collect()
        })
        .unwrap_or_default();
    match b.sweep.all_axes().find(|a| a.name == key) {
        Some(a) if !with.is_empty() => l.t(
            format!("与 {} 同步扫描：{}", with.join("、"), a.values_text()),
            format!("swept with {}: {}", with.join(", "), a.values_text()),
        ),
        Some(a) => format!("{} {}", l.t("扫描", "swept"), a.values_text()),
        // a value no lane runs with is not the workload's: each lane's instead
        None if !b.lanes.is_empty() && b.lanes.iter().all(|ln| ln.overrides.contains_key(key)) => {
            let per: Vec<String> = b
                .lanes
                .iter()
                .filter_map(|ln| {
                    let v = ln.overrides.get(key)?;
                    Some(format!("{} ({})", v.val, ln.name))
                })
                .collect();
            format!("{} {}", l.t("按 lane：", "per lane:"), per.join(", "))
        }
        None => b.setting(key).map(|v| v.to_string()).unwrap_or_default(),
    }
}

/// One sentence naming what each lane overrides (empty when no lane does).
pub fn lane_overrides_text(b: &Bench, lang: Lang) -> String {
    let per: Vec<String> = b
        .lanes
        .iter()
        .filter(|l| !l.overrides.is_empty())
        .map(|l| {
            let kv: Vec<String> = l
                .overrides
                .iter()
                .map(|(k, p)| format!("{k}={}", p.val))
                .collect();
            lang.t(
                format!("lane {} 设置 {}", l.name, kv.join("，")),
                format!("lane {} sets {}", l.name, kv.join(", ")),
            )
        })
        .collect();
    if per.is_empty() {
        String::new()
    } else {
        lang.t(
            format!("各 lane 的覆盖：{}。", per.join("；")),
            format!("Lane overrides: {}.", per.join("; ")),
        )
    }
}

/// The workload prose and settings table of a bench (every kind's unless it has its own).
pub fn generic_prose(d: &mut Doc, exp: &Experiment, b: &Bench, dir: &str, l: Lang) {
    let axes: Vec<String> = b.sweep.parts().iter().map(|part| part.prose(l)).collect();
    // the timing controls at their defaults say nothing about the workload
    let shown = |k: &&String| match (k.as_str(), b.settings.get(*k).map(|p| &p.val)) {
        ("shell", Some(crate::model::Val::Str(s))) => s != "bash",
        ("warmup", Some(crate::model::Val::Int(n))) => *n != 0,
        _ => true,
    };
    let settings: Vec<String> = b
        .settings
        .keys()
        .filter(shown)
        .map(|k| format!("{k}={}", setting_text(b, k, l)))
        .collect();
    let lanes = b.lane_names().join(l.and_sep());
    let description = if exp.description.is_empty() {
        l.t("无描述", "no description").to_string()
    } else {
        exp.description.clone()
    };
    let swept = if axes.is_empty() {
        String::new()
    } else {
        l.t(
            format!("扫描的参数：{}。", axes.join("；")),
            format!(" Swept: {}.", axes.join("; ")),
        )
    };
    let overrides = lane_overrides_text(b, l);
    let overrides = match (l, overrides.is_empty()) {
        (Lang::En, false) => format!(" {overrides}"),
        _ => overrides,
    };
    let (ran, open, close) = (
        l.t("本次实验 ", "Experiment "),
        l.t("（", " ("),
        l.t("）运行 ", ") runs "),
    );
    let rest = match l {
        Lang::En => format!(
            ", comparing the lanes {lanes}, repeat {}, output directory {dir}. Settings: {}.{swept}{overrides}",
            repeat_text(b, l),
            settings.join(", "),
        ),
        Lang::Zh => format!(
            "，对比的 lane 为 {lanes}，repeat {}，输出目录为 {dir}。参数：{}。{swept}{overrides}",
            repeat_text(b, l),
            settings.join("，"),
        ),
    };
    d.para(
        Text::plain(ran)
            .and_code(&exp.name)
            .and(format!("{open}{description}{close}"))
            .and_code(&b.name)
            .and(rest),
    );
    let mut t = Table::new([l.t("参数", "setting"), l.t("值", "value")]);
    for k in b.settings.keys().filter(shown) {
        t.row([k.clone(), setting_text(b, k, l)]);
    }
    t.row(["repeat".to_string(), repeat_text(b, l)]);
    d.table(t);
}

/// `3`, or the adaptive rule: `min=3 max=30 until-cv=2%`.
pub fn repeat_text(b: &Bench, l: Lang) -> String {
    match &b.adaptive {
        None => b.repeat.to_string(),
        Some(a) => {
            let mut t = format!("{} min={} max={}", l.t("自适应", "adaptive"), a.min, a.max);
            if let Some(c) = a.until_cv {
                t.push_str(&format!(" until-cv={c}%"));
            }
            if let Some(c) = a.until_ci {
                t.push_str(&format!(" until-ci={c}%"));
            }
            if let Some(c) = a.until_decided {
                t.push_str(&format!(" until-decided=±{c}%"));
            }
            t
        }
    }
}

/// The sweep point's label (if any), and a table whose header has the lanes as columns.
pub fn table_head(d: &mut Doc, sp: &[(String, String)], first: &str, headers: &[String]) -> Table {
    if !sp.is_empty() {
        d.label(axes_label(sp));
    }
    Table::new(std::iter::once(first.to_string()).chain(headers.iter().cloned()))
}

/// E2E 吞吐 and E2E 延迟分解 from per-step CSVs; `header` names each lane's column.
pub fn steps_sections(
    d: &mut Doc,
    data: &ReportData,
    b: &Bench,
    groups: &[&Group],
    header: &dyn Fn(&str) -> String,
) {
    let lanes = b.lane_names();
    let headers: Vec<String> = lanes.iter().map(|l| header(l)).collect();
    let show_stats = b.repeat >= 3;
    let baseline = groups.iter().find_map(|g| g.baseline.clone());
    let l = data.lang;
    d.h2(l.t(
        "E2E 吞吐（samples/s，越高越好；job 吞吐 = 每步各 rank 之和，再对步取平均）",
        "E2E throughput (samples/s, higher is better; job throughput = the ranks' sum per step, averaged over steps)",
    ));
    for (sp, here) in by_sweep_point(groups) {
        let mut t = table_head(d, &sp, l.t("指标", "metric"), &headers);
        let get = |lane: &str| here.iter().copied().find(|g| g.lane == lane);
        let row = |t: &mut Table, name: &str, f: &dyn Fn(&Group) -> String| {
            let cells = lanes
                .iter()
                .map(|l| get(l).map(f).unwrap_or_else(|| "—".into()));
            t.row(std::iter::once(name.to_string()).chain(cells));
        };
        row(&mut t, "repeat_n", &|g| g.values.len().to_string());
        row(
            &mut t,
            l.t("samples/s 各次", "samples/s per repeat"),
            &|g| repeats_text(data, g),
        );
        if show_stats {
            row(&mut t, l.t("samples/s 均值", "samples/s mean"), &|g| {
                cell(g.mean)
            });
            row(&mut t, "CV%", &|g| {
                g.cv_percent
                    .map(|c| format!("{}%", km(c)))
                    .unwrap_or_else(|| {
                        format!("—{}", l.paren(spread_why(g, true, l).unwrap_or_default()))
                    })
            });
        }
        if let Some(base) = &baseline {
            // the headline ratio says which clock it is on when a lane's total is suspect
            let name = if crate::kind_api::clock::any_suspect(data, b) {
                l.t(
                    format!("相对 {base} 加速比（runbook 规则：各 runner 的 step_total_ms）"),
                    format!("speedup over {base} (runbook rule: each runner's step_total_ms)"),
                )
                .to_string()
            } else {
                l.t(
                    format!("相对 {base} 加速比"),
                    format!("speedup over {base}"),
                )
                .to_string()
            };
            row(&mut t, &name, &|g| {
                g.speedup
                    .map(crate::util::fmt::ratio)
                    .unwrap_or_else(|| "—".into())
            });
        }
        row(&mut t, "p95 step_total_ms", &|g| cell(g.p95_step_total_ms));
        if has_energy(data, &b.name) {
            let [energy, per_w] = efficiency_head(l);
            row(&mut t, &energy, &|g| efficiency_cells(data, g)[0].clone());
            row(&mut t, &per_w, &|g| efficiency_cells(data, g)[1].clone());
        }
        let checked = data
            .points
            .iter()
            .any(|p| p.bench == b.name && p.timing().is_some());
        if checked {
            // beside the number it puts in doubt: does the total time the stages?
            row(&mut t, l.t("计时检查", "timing check"), &|g| {
                crate::kind_api::clock::check_cell(data, g, l)
            });
        }
        d.table(t);
    }
    // one sentence per lane for the points whose parent failed but whose rank CSVs were merged
    for lane in &lanes {
        let ids: Vec<&str> = data
            .points
            .iter()
            .filter(|p| p.bench == b.name && p.lane == *lane && p.reason.starts_with("recovered"))
            .map(|p| p.run_id.as_str())
            .collect();
        if !ids.is_empty() {
            let (n, list) = (ids.len(), ids.join(l.and_sep()));
            d.para(l.t(
                format!("注：lane {lane} 有 {n} 个点（{list}）的父进程以非零退出，但所有 rank CSV 完整，已校验并合并后计入（原因见 manifest.csv）。"),
                format!("Note: in lane {lane}, {n} point(s) ({list}) had a parent that exited non-zero but left every rank CSV complete; they were verified, merged and counted (the reason is in manifest.csv)."),
            ));
        }
    }
    let derived = data.points.iter().any(|p| {
        p.bench == b.name
            && matches!(&p.measure, Some(Measure::Steps(s)) if s.derived_samples_per_sec)
    });
    if derived {
        d.para(l.t(
            "注：没有 samples_per_sec 列的每步 CSV，其吞吐按 batch_size × 1000 / step_total_ms 推算。",
            "Note: where a per-step CSV has no samples_per_sec column, samples/s is derived as batch_size × 1000 / step_total_ms.",
        ));
    }
    // "warmup excluded" only where rows were (helper 87: said of CSVs that marked none, and
    // read under no `warmup-steps`)
    let warm: u64 = data
        .points
        .iter()
        .filter(|p| p.bench == b.name)
        .filter_map(|p| match &p.measure {
            Some(Measure::Steps(s)) => Some(s.warmup_rows),
            _ => None,
        })
        .sum();
    d.h2(if warm > 0 {
        l.t(
            "E2E 延迟分解（ms，每步均值，已去除 warmup；越低越好）",
            "E2E latency breakdown (ms, mean per step, warmup excluded; lower is better)",
        )
    } else {
        l.t(
            "E2E 延迟分解（ms，每步均值，无 warmup 步；越低越好）",
            "E2E latency breakdown (ms, mean per step, no warmup step marked or dropped; lower is better)",
        )
    });
    for (sp, here) in by_sweep_point(groups) {
        let mut t = table_head(d, &sp, l.t("阶段", "stage"), &headers);
        for (stage, _) in STAGES {
            let cells: Vec<Option<f64>> = lanes
                .iter()
                .map(|l| {
                    here.iter()
                        .find(|g| g.lane == *l)
                        .and_then(|g| g.stages.get(*stage).copied())
                })
                .collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            t.row(std::iter::once(stage.to_string()).chain(cells.iter().map(|c| cell(*c))));
        }
        d.table(t);
    }
}

/// The numbers of a per-step CSV: job samples/s first, then p95 step time and each stage's mean.
pub fn step_metrics(s: &StepStats) -> Vec<Metric> {
    let src = s.files.join(";");
    let mut v = vec![
        Metric::new(
            "samples_per_sec",
            "samples/s",
            Some(true),
            s.samples_per_sec,
            &src,
        ),
        Metric::new(
            "p95_step_total_ms",
            "ms",
            Some(false),
            s.p95_step_total_ms,
            &src,
        ),
    ];
    for (stage, mean) in &s.stages {
        v.push(Metric::new(
            format!("mean_{stage}"),
            "ms",
            Some(false),
            *mean,
            &src,
        ));
    }
    if let Some(t) = &s.timing {
        if let Some(same) = t.same_work_samples_per_sec {
            v.push(Metric::new(
                "same_work_samples_per_sec",
                "samples/s",
                Some(true),
                same,
                &format!("{src} ({})", t.same_work_rule),
            ));
        }
    }
    v
}

/// Per lane and sweep point: repeats, the headline's mean (sd and CV at repeat ≥ 3) and the
/// speed against the baseline lane (above 1 is better, whichever way the metric points).
pub fn group_table(
    d: &mut Doc,
    data: &ReportData,
    b: &Bench,
    groups: &[&Group],
    what: &str,
    direction: Option<bool>,
) {
    let l = data.lang;
    let mine: Vec<&&Group> = groups.iter().filter(|g| g.bench == b.name).collect();
    if mine.is_empty() {
        return;
    }
    let baseline = mine.iter().find_map(|g| g.baseline.clone());
    // the caller's direction, else the headline metric's (the one the speedup was taken in)
    let direction = direction.or_else(|| mine.iter().find_map(|g| g.higher_is_better));
    let rel = baseline
        .as_ref()
        .map(|b| match direction {
            Some(_) => l.t(
                format!("相对 {b}（倍，>1 更好）"),
                format!("vs {b} (×, >1 is better)"),
            ),
            // a generic value whose direction is not known: the plain ratio
            None => l.t(format!("÷ {b}（比值）"), format!("÷ {b} (ratio)")),
        })
        .unwrap_or_else(|| l.t("相对基线", "vs baseline").into());
    let mut t = Table::new([
        "bench".to_string(),
        "lane".into(),
        l.t("扫描点", "point").into(),
        // not `n`: a sweep axis may be named so
        l.t("次数", "repeats").into(),
        format!("{what}{}", l.paren(l.t("均值", "mean"))),
        "sd".into(),
        "CV%".into(),
        rel,
    ]);
    let energy = has_energy(data, &b.name);
    if energy {
        t.head.extend(efficiency_head(l).map(Text::plain));
    }
    let dash = || "—".to_string();
    let note = spread_note(mine.iter().map(|g| **g), l);
    for g in mine {
        // no ratio, with why where there is a baseline to be over (as report.html says it)
        let speed = match g.speedup {
            Some(s) => crate::util::fmt::ratio(s),
            None if g.baseline.is_none() => dash(),
            None => format!("—{}", l.paren(ratio_why(&data.groups, g, l))),
        };
        let eff = energy
            .then(|| efficiency_cells(data, g))
            .into_iter()
            .flatten();
        t.row(
            group_cells(&b.name, g, l)
                .into_iter()
                .chain([speed])
                .chain(eff),
        );
    }
    d.table(t);
    if let Some(note) = note {
        d.para(note);
    }
}

/// A group's values one by one (`1.2k / 1.3k`), `—` for none.
/// A group's headline in each repeat, in its order, `—` for a repeat without one (it failed,
/// had no data, or was profiled): `1.00 / — / 21.00`, not `1.00 / 21.00`, which reads as if the
/// second repeat measured 21.
pub fn repeats_text(data: &ReportData, g: &Group) -> String {
    if g.run_ids.is_empty() {
        return values_text(&g.values);
    }
    g.run_ids
        .iter()
        .map(|id| {
            data.point(id)
                .filter(|p| p.perturbed.is_none())
                .and_then(|p| p.measure.as_ref())
                .map(Measure::headline)
                .filter(|h| h.is_finite())
                .map(km)
                .unwrap_or_else(|| "—".into())
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

pub fn values_text(values: &[f64]) -> String {
    if values.is_empty() {
        return "—".into();
    }
    values
        .iter()
        .map(|v| km(*v))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Whether a bench's points were sampled (`telemetry`): its headline tables then show the
/// efficiency columns.
pub fn has_energy(data: &ReportData, bench: &str) -> bool {
    data.points
        .iter()
        .any(|p| p.bench == bench && p.telemetry.is_some())
}

/// The efficiency columns' names: the GPUs' energy and the headline per watt, means.
pub fn efficiency_head(l: Lang) -> [String; 2] {
    [
        format!("gpu_energy_j{}", l.paren(l.t("均值", "mean"))),
        l.t("主指标/W（均值）", "headline per W (mean)").to_string(),
    ]
}

/// A group's energy (`gpu_energy_j`) and headline per watt (`<headline>_per_w`), each the mean
/// over the group's points, `—` where one of them lacks it (missing, with why, in metrics.csv).
pub fn efficiency_cells(data: &ReportData, g: &Group) -> [String; 2] {
    let pts: Vec<_> = data.points_of(g).collect();
    let mean = |get: &dyn Fn(&PointReport) -> Option<f64>| -> Option<f64> {
        let v: Vec<f64> = pts.iter().filter_map(|p| get(p)).collect();
        (!v.is_empty() && v.len() == pts.len()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    [
        mean(&|p| p.value("gpu_energy_j")).map_or("—".into(), |v| format!("{v:.1}")),
        mean(&PointReport::per_watt).map_or("—".into(), km),
    ]
}

/// Why a group's sd (`cv` false) or CV% (`cv` true) is `—`; None where it has one. Fewer
/// than two values give no spread; a mean at or below 0 no CV.
pub fn spread_why(g: &Group, cv: bool, l: Lang) -> Option<&'static str> {
    let has = if cv {
        g.cv_percent.is_some()
    } else {
        g.sd.is_some()
    };
    match g.values.len() {
        _ if has => None,
        0 => Some(l.t("没有数值", "no values")),
        1 => Some("n=1"),
        _ if cv && g.mean.is_some_and(|m| m <= 0.0) => Some(l.t("均值 ≤ 0", "mean ≤ 0")),
        _ => Some(l.t("超出双精度范围", "beyond a double's range")),
    }
}

/// Why a group with a baseline lane has no ratio to it: no mean here, a mean below zero here,
/// the baseline's mean missing or not above zero, or a ratio past a double's range.
pub fn ratio_why(all: &[Group], g: &Group, l: Lang) -> &'static str {
    let base = g.baseline.as_deref().and_then(|b| {
        all.iter()
            .find(|x| x.bench == g.bench && x.lane == b && x.axes == g.axes)
    });
    match (g.mean, base.and_then(|b| b.mean)) {
        (None, _) => l.t("此处没有均值", "no mean here"),
        (Some(m), _) if m < 0.0 => l.t("此处均值小于零", "the mean here is below zero"),
        (_, None) => l.t("基线没有均值", "the baseline has no mean"),
        (_, Some(bm)) if bm <= 0.0 => {
            l.t("基线均值不大于零", "the baseline's mean is not above zero")
        }
        _ => l.t("比值超出双精度范围", "the ratio is beyond a double's range"),
    }
}

/// The line under a table whose sd or CV% cells are `—`, saying why, once for the table
/// (`n=1`, a mean at or below 0…); None where every group has both.
pub fn spread_note<'a>(groups: impl IntoIterator<Item = &'a Group>, l: Lang) -> Option<String> {
    let mut why: Vec<&str> = Vec::new();
    for g in groups {
        for w in [spread_why(g, false, l), spread_why(g, true, l)]
            .into_iter()
            .flatten()
        {
            if !why.contains(&w) {
                why.push(w);
            }
        }
    }
    let said: Vec<&str> = why
        .iter()
        .map(|w| match *w {
            "n=1" => l.t("n=1（一个数值没有离散度）", "n=1 (one value has no spread)"),
            "均值 ≤ 0" => "均值 ≤ 0（此时 CV 无意义）",
            "mean ≤ 0" => "the mean is at or below 0 (a CV says nothing there)",
            w => w,
        })
        .collect();
    (!said.is_empty()).then(|| {
        l.t(
            format!("sd 或 CV% 为 — 之处：{}。", said.join(l.semi())),
            format!("Where sd or CV% is —: {}.", said.join(l.semi())),
        )
    })
}

/// A group's first cells in the repeat tables: bench, lane, point, n, mean, and the sd and CV
/// of its values (`—` for fewer than two, and for what is missing; two equal values: 0.00), as
/// summary.json and report.html give them — not by the repeat count the file asked for.
pub fn group_cells(bench: &str, g: &Group, l: Lang) -> [String; 7] {
    let dash = || "—".to_string();
    let stats = g.values.len() >= 2;
    [
        bench.to_string(),
        g.lane.clone(),
        axes_label(&g.axes),
        // fewer values than points: `2 of 3`, the mean is over what measured
        if g.values.len() < g.run_ids.len() {
            let (n, all) = (g.values.len(), g.run_ids.len());
            l.t(format!("{n} / {all}"), format!("{n} of {all}"))
        } else {
            g.values.len().to_string()
        },
        g.mean.map(km).unwrap_or_else(dash),
        if stats {
            g.sd.map(km).unwrap_or_else(dash)
        } else {
            dash()
        },
        if stats {
            g.cv_percent
                .map(|c| format!("{}%", km(c)))
                .unwrap_or_else(dash)
        } else {
            dash()
        },
    ]
}
