//! Same clock in the report: what each point's timing check found, beside the number it puts in
//! doubt, and the throughput on the work every lane times.

use crate::kind_api::clock::{any_suspect, check_cell, same_work_mean};
use crate::kind_api::data::{Group, PointReport, ReportData};
use crate::kind_api::doc::{Doc, Table};
use crate::kind_api::tables::{by_sweep_point, table_head};
use crate::model::Bench;
use crate::results::collect::timing::TimingCheck;
use crate::util::fmt::km;

/// "⚠ Timing check" and "Same work on every lane": shown when a point's step total does not
/// time its stages.
pub fn timing_sections(
    d: &mut Doc,
    data: &ReportData,
    b: &Bench,
    groups: &[&Group],
    headers: &[String],
    headline: Option<&str>,
) {
    if !any_suspect(data, b) {
        return;
    }
    let l = data.lang;
    let lanes = b.lane_names();
    d.h2(l.t(
        "⚠ 计时检查：step_total 没有覆盖整个 step",
        "⚠ Timing check: a step total that does not time the whole step",
    ));
    lane_findings(d, data, b, &lanes);
    stage_medians(d, data, b, &lanes);
    same_work_section(d, data, b, groups, headers, headline, &lanes);
}

/// Per lane, what its points' timing checks found: how many are suspect, with an example, or
/// that every checked point's total equals the sum of its stages.
fn lane_findings(d: &mut Doc, data: &ReportData, b: &Bench, lanes: &[&str]) {
    let l = data.lang;
    for lane in lanes {
        let mine: Vec<&PointReport> = data
            .points
            .iter()
            .filter(|p| p.bench == b.name && p.lane == *lane)
            .collect();
        let bad: Vec<(&str, &TimingCheck)> = mine
            .iter()
            .filter_map(|p| {
                p.timing()
                    .filter(|t| t.suspect())
                    .map(|t| (p.run_id.as_str(), t))
            })
            .collect();
        let Some((first_id, first)) = bad.first() else {
            let checked = mine.iter().filter(|p| p.timing().is_some()).count();
            if checked > 0 {
                d.para(l.t(
                    format!("lane {lane}：{checked} 个点的 {} 与各阶段之和一致（容差 5 %）。", mine[0].timing().map(|t| t.total.as_str()).unwrap_or("total")),
                    format!("lane {lane}: in {checked} point(s) {} equals the sum of its stages (tolerance 5 %).", mine[0].timing().map(|t| t.total.as_str()).unwrap_or("the total")),
                ));
            }
            continue;
        };
        let ids: Vec<&str> = bad.iter().map(|(id, _)| *id).collect();
        d.para(l.t(
            format!(
                "lane {lane}：{} 个点中 {} 个可疑（{}）。例如 {first_id}：{}。由 {} 推出的 samples/s 不可信；各阶段：{}。",
                mine.len(),
                bad.len(),
                ids.join(l.and_sep()),
                first.chinese(),
                first.total,
                first.stages.join(" + ")
            ),
            format!(
                "lane {lane}: {} of {} point(s) suspect ({}). For example {first_id}: {}. The samples/s derived from {} is in doubt; the stages: {}.",
                bad.len(),
                mine.len(),
                ids.join(l.and_sep()),
                first.english(),
                first.total,
                first.stages.join(" + ")
            ),
        ));
    }
}

/// The stages' medians of one suspect point per lane: the numbers behind the finding.
fn stage_medians(d: &mut Doc, data: &ReportData, b: &Bench, lanes: &[&str]) {
    let l = data.lang;
    let mut t = Table::new([
        "lane".to_string(),
        "run".into(),
        l.t("各阶段之和（中位, ms）", "Σ stages (median, ms)")
            .into(),
        l.t("总计（中位, ms）", "total (median, ms)").into(),
        l.t("比值", "ratio").into(),
        l.t("最长阶段", "largest stage").into(),
    ]);
    for lane in lanes {
        if let Some(p) = data
            .points
            .iter()
            .find(|p| p.bench == b.name && p.lane == *lane && p.timing().is_some())
        {
            let tc = p.timing().expect("filtered");
            t.row([
                lane.to_string(),
                p.run_id.clone(),
                format!("{:.2}", tc.median_stage_sum_ms),
                format!("{:.2}", tc.median_total_ms),
                format!("{:.2}×", tc.median_ratio),
                format!("{} {:.2}", tc.largest_stage, tc.largest_stage_ms),
            ]);
        }
    }
    d.table(t);
}

/// The throughput every lane times (stages less data loading), per sweep point: as collected
/// and on the same work, with the speedups over the baseline both ways.
fn same_work_section(
    d: &mut Doc,
    data: &ReportData,
    b: &Bench,
    groups: &[&Group],
    headers: &[String],
    headline: Option<&str>,
    lanes: &[&str],
) {
    let l = data.lang;
    let rule = data
        .points
        .iter()
        .filter(|p| p.bench == b.name)
        .find_map(|p| p.timing().map(|t| t.same_work_rule.clone()))
        .unwrap_or_default();
    d.h2(l.t(
        "同口径吞吐（samples/s：各 lane 都计时的工作）",
        "Throughput on the same work (samples/s: what every lane times)",
    ));
    d.para(l.t(
        format!("推导：{rule}。上方的 samples/s 与加速比按 runbook 的规则（batch_size × 1000 / step_total_ms），照各 runner 的报告原样给出；下表是同口径的数字与加速比。"),
        format!("Derived as {rule}. The samples/s and speedup above follow the runbook's rule (batch_size × 1000 / step_total_ms) as each runner reports it; this table gives the same-work numbers and speedup."),
    ));
    let baseline = groups.iter().find_map(|g| g.baseline.clone());
    for (sp, here) in by_sweep_point(groups) {
        let mut t = table_head(d, &sp, l.t("指标", "metric"), headers);
        let get = |lane: &str| here.iter().copied().find(|g| g.lane == lane);
        let runbook: Vec<String> = lanes
            .iter()
            .map(|x| {
                get(x)
                    .and_then(|g| g.mean)
                    .map(km)
                    .unwrap_or_else(|| "—".into())
            })
            .collect();
        let first = match headline {
            Some(h) => l
                .t(format!("{h}（按收集）"), format!("{h} (as collected)"))
                .to_string(),
            None => l
                .t("samples/s（runbook 规则）", "samples/s (runbook rule)")
                .to_string(),
        };
        t.row(std::iter::once(first).chain(runbook));
        let same: Vec<Option<f64>> = lanes
            .iter()
            .map(|x| get(x).and_then(|g| same_work_mean(data, g)))
            .collect();
        t.row(
            std::iter::once(
                l.t("samples/s（同口径）", "samples/s (same work)")
                    .to_string(),
            )
            .chain(same.iter().map(|v| v.map(km).unwrap_or_else(|| "—".into()))),
        );
        if let Some(base) = &baseline {
            let bi = lanes.iter().position(|x| x == base);
            let base_same = bi.and_then(|i| same[i]);
            t.row(
                std::iter::once(
                    l.t(
                        format!("相对 {base} 加速比（runbook）"),
                        format!("speedup over {base} (runbook)"),
                    )
                    .to_string(),
                )
                .chain(lanes.iter().map(|x| {
                    get(x)
                        .and_then(|g| g.speedup)
                        .map(|s| format!("{s:.2}x"))
                        .unwrap_or_else(|| "—".into())
                })),
            );
            t.row(
                std::iter::once(
                    l.t(
                        format!("相对 {base} 加速比（同口径）"),
                        format!("speedup over {base} (same work)"),
                    )
                    .to_string(),
                )
                .chain(same.iter().map(|v| match (v, base_same) {
                    (Some(v), Some(b)) if b > 0.0 => format!("{:.2}x", v / b),
                    _ => "—".into(),
                })),
            );
        }
        d.table(t);
    }
}

/// For kinds whose table has no row for it: one line naming each lane's timing check.
pub fn check_lines(d: &mut Doc, data: &ReportData, b: &Bench, groups: &[&Group]) {
    let Some(first) = data
        .points
        .iter()
        .filter(|p| p.bench == b.name)
        .find_map(PointReport::timing)
    else {
        return;
    };
    let l = data.lang;
    let per: Vec<String> = groups
        .iter()
        .filter(|g| g.bench == b.name)
        .map(|g| {
            let at = crate::kind_api::tables::axes_label(&g.axes);
            let at = if at.is_empty() {
                String::new()
            } else {
                format!(" [{at}]")
            };
            format!("{}{at}: {}", g.lane, check_cell(data, g, l))
        })
        .collect();
    d.para(l.t(
        format!(
            "计时检查（{} 对 {}）：{}",
            first.stages.join(" + "),
            first.total,
            per.join("；")
        ),
        format!(
            "Timing check ({} against {}): {}",
            first.stages.join(" + "),
            first.total,
            per.join("; ")
        ),
    ));
}
