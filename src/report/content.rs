//! The report's document, every format's: the workload prose, what is missing, expectations,
//! each kind's sections and the figures.

use std::path::Path;

use crate::kinds;
use crate::report::data::{Group, ReportData};
use crate::report::doc::{Doc, Table, Text};

/// The report's content, every format's: the workload prose, what is missing, expectations,
/// each kind's sections and the figures.
pub fn document(data: &ReportData, dir: &Path) -> Doc {
    let mut d = Doc::default();
    let Some(exp) = &data.exp else { return d };
    d.h2("Workload 说明");
    if let Some(why) = &data.stopped_before_e2e {
        d.para(why.as_str());
    }
    let out_dir = dir.display().to_string();
    for b in &exp.benches {
        kinds::of(b.kind).prose(&mut d, exp, b, &out_dir);
    }
    if !data.missing.is_empty() {
        d.para(format!(
            "缺失的点（{} 个，报告不含其数据）：{}",
            data.missing.len(),
            data.missing.join("；")
        ));
    }
    for w in data
        .warnings
        .iter()
        .filter(|w| w.starts_with("adaptive repeats:"))
    {
        d.para(format!("⚠ {w}"));
    }
    d.extend(crate::report::machine::doc(dir));
    if !data.expectations.is_empty() {
        let bad = data
            .expectations
            .iter()
            .filter(|e| !e.ok && e.judged)
            .count();
        d.h2(format!(
            "期望（expect）：{} 项中 {} 项未满足",
            data.expectations.len(),
            bad
        ));
        let mut t = Table::new(["", "expect", "点", "结果", "位置"]);
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
                Text::plain(&e.found),
                Text::plain(&e.at),
            ]);
        }
        d.table(t);
    }
    for b in &exp.benches {
        let groups: Vec<&Group> = data.groups.iter().filter(|g| g.bench == b.name).collect();
        kinds::of(b.kind).sections(&mut d, data, b, &groups, dir);
    }
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
            Text::plain("图：")
                .and_link("吞吐", "throughput.svg")
                .and(" · ")
                .and_link("延迟分解", "latency.svg"),
        );
    }
    // the sweep charts of per-step kinds, then every other bench's headline charts
    for f in svgs
        .iter()
        .filter(|f| f.starts_with("sweep_"))
        .chain(svgs.iter().filter(|f| f.starts_with("headline_")))
    {
        let t = match figs.take() {
            Some(t) => t.and(" · "),
            None => Text::plain("图："),
        };
        figs = Some(t.and_link(f.trim_end_matches(".svg"), f.as_str()));
    }
    if let Some(t) = figs {
        d.para(t);
    }
    d
}
