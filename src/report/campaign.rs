//! The campaign's part of the report: which points ran at the same time and on what (`expr run
//! --jobs`), flagging those that shared a host. (The drift plot is `plots::drift`.)

use std::collections::BTreeMap;

use crate::kind_api::data::{PointReport, ReportData};
use crate::kind_api::doc::{Doc, Text};

/// The host part of a resource (`local GPU 1` → `local`).
fn host_of(r: &str) -> &str {
    r.split(" GPU ").next().unwrap_or(r)
}

/// For each point that ran beside another: (point, [(other, what they shared a host on)]).
pub fn overlaps(data: &ReportData) -> Vec<(String, Vec<(String, String)>)> {
    let mut ran: Vec<(&PointReport, f64, f64, &[String])> = data
        .points
        .iter()
        .filter_map(|p| p.ran.as_ref().map(|(a, b, on)| (p, *a, *b, on.as_slice())))
        .collect();
    ran.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    // a sweep over start times: each point against those that started before it ended
    for (i, (p, a0, a1, on)) in ran.iter().enumerate() {
        for (q, b0, b1, qon) in ran.iter().skip(i + 1) {
            if *b0 >= *a1 {
                break;
            }
            if b1 <= a0 {
                continue;
            }
            let mut shared: Vec<&str> = on
                .iter()
                .map(|r| host_of(r))
                .filter(|h| qon.iter().any(|r| host_of(r) == *h))
                .collect();
            shared.sort();
            shared.dedup();
            if shared.is_empty() {
                continue;
            }
            let what = |x: &[String]| {
                x.iter()
                    .filter(|r| shared.contains(&host_of(r)))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.entry(p.run_id.clone())
                .or_default()
                .push((q.run_id.clone(), what(qon)));
            out.entry(q.run_id.clone())
                .or_default()
                .push((p.run_id.clone(), what(on)));
        }
    }
    // in the report's point order
    data.points
        .iter()
        .filter_map(|p| out.remove(&p.run_id).map(|v| (p.run_id.clone(), v)))
        .collect()
}

/// Each pool member with the points that ran on it, in the report's point order.
pub fn placements(data: &ReportData) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for p in &data.points {
        let Some(m) = &p.placed else { continue };
        match out.iter_mut().find(|(h, _)| h == m) {
            Some((_, v)) => v.push(p.run_id.clone()),
            None => out.push((m.clone(), vec![p.run_id.clone()])),
        }
    }
    out
}

/// The section on where a pool's points ran and on points that ran at once, when any did.
pub fn doc(data: &ReportData) -> Doc {
    let mut d = Doc::default();
    let l = data.lang;
    let placed = placements(data);
    if !placed.is_empty() {
        d.h2(l.t("池中各点的位置", "Where the pool's points ran"));
        let items: Vec<Text> = placed
            .iter()
            .map(|(m, ids)| {
                Text::plain(format!(
                    "{m}: {} {} — {}",
                    ids.len(),
                    l.t("个点", "point(s)"),
                    ids.join(", ")
                ))
            })
            .collect();
        d.list(
            Some(Text::plain(l.t(
                "每个点在其 `pool` 的一台主机上运行（`expr run --jobs` 时为先空闲的那台），见 journal 的 `placed`：",
                "Each point ran on one host of its `pool` (under `expr run --jobs`, whichever was free first), as the journal's `placed` records:",
            ))),
            items,
        );
    }
    let o = overlaps(data);
    if o.is_empty() {
        return d;
    }
    d.h2(l.t("同时运行的点", "Points that ran at once"));
    let items: Vec<Text> = o
        .iter()
        .map(|(id, with)| {
            let w: Vec<String> = with.iter().map(|(q, on)| format!("{q} ({on})")).collect();
            Text::plain(format!("{id}{}{}", l.t(" 与 ", " beside "), w.join(", ")))
        })
        .collect();
    d.list(
        Some(Text::plain(l.t(
            format!("⚠ {} 个点与另一个点同时在同一主机上运行（`--jobs`）：各自的 GPU 是独占的，主机的 CPU、内存与 PCIe 是共享的。", o.len()),
            format!("⚠ {} point(s) ran beside another on one host (`--jobs`): each had its own GPUs; the host's CPUs, memory and PCIe were shared.", o.len()),
        ))),
        items,
    );
    d
}
