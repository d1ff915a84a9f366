//! The report's document, every format's: the workload prose, what is missing, expectations,
//! each kind's sections and the figures.

use std::path::Path;

use crate::kind_api::data::{BenchResults, Group, ReportData};
use crate::kind_api::doc::{Doc, Table, Text};
use crate::kinds;

/// The report's content, every format's: the workload prose, what is missing, expectations,
/// each kind's sections and the figures.
pub fn document(data: &ReportData, dir: &Path) -> Doc {
    let mut d = Doc::default();
    let Some(exp) = &data.exp else { return d };
    let l = data.lang;
    d.h2(l.t("Workload 说明", "Workload"));
    if let Some(why) = &data.stopped_before_e2e {
        d.para(why.as_str());
    }
    let out_dir = dir.display().to_string();
    // the benches this run planned points of (`--only bench=b` leaves the others out)
    let (mut planned, mut left) = (Vec::new(), Vec::new());
    for b in &exp.benches {
        if data.points.iter().any(|p| p.bench == b.name) {
            planned.push(b);
        } else {
            left.push(format!("`{}`", b.name));
        }
    }
    for b in planned {
        kinds::of(b.kind).prose(&mut d, exp, b, &out_dir, l);
    }
    if !left.is_empty() {
        d.para(l.t(
            format!(
                "本次运行没有选中的 bench（`--only`）：{}。",
                left.join("、")
            ),
            format!(
                "Not in this run (left out by `--only`): {}.",
                left.join(", ")
            ),
        ));
    }
    if !data.missing.is_empty() {
        let n = data.missing.len();
        d.para(l.t(
            format!(
                "缺失的点（{n} 个，表中以 — 显示）：{}",
                data.missing.join("；")
            ),
            format!(
                "Points without data ({n}; their cells show —): {}",
                data.missing.join("; ")
            ),
        ));
    }
    if let Some(p) = accepted_exits(data) {
        d.para(p);
    }
    for (_, w) in data
        .warnings
        .iter()
        .zip(&data.warnings_said)
        // what changes how a reader takes the numbers: repeats that did not settle, a
        // manifest the journal does not back, a number the files give otherwise (or not at
        // all) since the run read it, and numbers in other units
        .filter(|(w, _)| {
            w.starts_with("adaptive repeats:")
                || w.starts_with("manifest.csv ")
                || w.contains(": its files now give ")
                || w.contains("; its files give no number now (")
                || w.ends_with(" lost the number the run read in the same way")
                || w.contains(" carries other units in their text (")
        })
    {
        d.para(format!("⚠ {w}"));
    }
    d.extend(crate::report::machine::doc(dir, l));
    expectations(&mut d, data);
    for b in &exp.benches {
        let groups: Vec<&Group> = data.groups.iter().filter(|g| g.bench == b.name).collect();
        let r = BenchResults {
            data,
            bench: b,
            groups: &groups,
            dir,
        };
        kinds::of(b.kind).sections(&mut d, &r);
    }
    d.extend(crate::report::campaign::doc(data));
    d.extend(crate::report::telemetry::doc(data));
    d.extend(crate::report::profile::doc(data, dir));
    let mut svgs: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|f| f.ends_with(".svg"))
                .collect()
        })
        .unwrap_or_default();
    svgs.sort();
    let mut figs: Option<Text> = None;
    if svgs.iter().any(|f| f == "throughput.svg") {
        figs = Some(
            Text::plain(l.t("图：", "Figures: "))
                .and_link(l.t("吞吐", "throughput"), "throughput.svg")
                .and(" · ")
                .and_link(l.t("延迟分解", "latency breakdown"), "latency.svg"),
        );
    }
    // the sweep charts of per-step kinds, then every other bench's headline charts
    for f in svgs
        .iter()
        .filter(|f| f.starts_with("sweep_"))
        .chain(svgs.iter().filter(|f| f.starts_with("headline_")))
        .chain(svgs.iter().filter(|f| f.starts_with("drift_")))
    {
        let t = match figs.take() {
            Some(t) => t.and(" · "),
            None => Text::plain(l.t("图：", "Figures: ")),
        };
        figs = Some(t.and_link(f.trim_end_matches(".svg"), f.as_str()));
    }
    if let Some(t) = figs {
        d.para(t);
    }
    d
}

/// The points whose run step exited non-zero with an exit its `exit-ok=` accepts: their times
/// and numbers count, as hyperfine's `-i` warns (the first ten named, the rest counted).
fn accepted_exits(data: &ReportData) -> Option<String> {
    let l = data.lang;
    let all: Vec<String> = data
        .points
        .iter()
        .filter_map(|p| Some(format!("{} (exit {})", p.run_id, p.accepted_exit?)))
        .collect();
    if all.is_empty() {
        return None;
    }
    let n = all.len();
    let mut named = all[..n.min(10)].join(l.t("；", "; "));
    if n > 10 {
        named.push_str(&l.t(
            format!("；另有 {} 个", n - 10),
            format!("; and {} more", n - 10),
        ));
    }
    Some(l.t(
        format!("⚠ 运行步骤以非零退出码结束、由 `exit-ok` 接受的点（{n} 个，其时间与数字照常计入）：{named}"),
        format!("⚠ Points whose run step exited non-zero, accepted by `exit-ok` ({n}; their times and numbers count): {named}"),
    ))
}

/// The expectations' table: each `expect` with its point, what was found and where.
fn expectations(d: &mut Doc, data: &ReportData) {
    let l = data.lang;
    if !data.expectations.is_empty() {
        let bad = data
            .expectations
            .iter()
            .filter(|e| !e.ok && e.judged)
            .count();
        let n = data.expectations.len();
        d.h2(l.t(
            format!("期望（expect）：{n} 项中 {bad} 项未满足"),
            format!("Expectations (expect): {bad} of {n} not met"),
        ));
        let mut t = Table::new([
            "",
            "expect",
            l.t("点", "point"),
            l.t("结果", "found"),
            l.t("位置", "where"),
        ]);
        for e in &data.expectations {
            let mark = if !e.judged {
                "–"
            } else if e.ok {
                "✓"
            } else {
                "✗"
            };
            t.row([
                Text::plain(mark),
                Text::code(&e.expect),
                Text::plain(&e.point),
                Text::plain(&e.found_said),
                Text::plain(&e.at),
            ]);
        }
        d.table(t);
    }
}
