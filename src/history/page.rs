//! The history as people read it: a table (text), a trend chart (SVG) and a page of
//! report.html's look, with what changed in the machines between runs.

use std::path::Path;

use super::Entry;

/// What changed in the machines between consecutive runs of the history (as each run's
/// preflight recorded them in its journal): "between A and B: host `h`: what a → b". A run
/// whose directory is gone, or that recorded no machine, is passed over.
pub fn machine_changes(entries: &[Entry]) -> Vec<String> {
    let mut runs: Vec<(&str, &str)> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = Default::default();
    for e in entries {
        if seen.insert(e.result_dir.as_str()) {
            runs.push((e.started.as_str(), e.result_dir.as_str()));
        }
    }
    let short = |s: &str| s.get(..19).unwrap_or(s).replace('T', " ");
    let mut out = Vec::new();
    let mut prev: Option<(&str, Vec<crate::results::machine::Machine>)> = None;
    for (started, dir) in runs {
        let m = crate::report::machine::machines_of(Path::new(dir));
        if m.is_empty() {
            continue;
        }
        if let Some((p_started, p_m)) = &prev {
            for d in crate::results::machine::differences(p_m, &m) {
                out.push(format!(
                    "between {} and {}: host `{}`: {} {} → {}",
                    short(p_started),
                    short(started),
                    d.host,
                    d.what,
                    d.a,
                    d.b
                ));
            }
        }
        prev = Some((started, m));
    }
    out
}

/// The history as a table: one row per run and series, then what changed in the machines
/// between runs.
pub fn text(entries: &[Entry]) -> String {
    let mut o = table(entries);
    let changes = machine_changes(entries);
    if !changes.is_empty() {
        o.push_str("\nThe machines changed between runs (a step there may be the machine's, not the code's):\n");
        for c in changes {
            o.push_str(&format!("- {}\n", crate::report::fmt::md_text(&c)));
        }
    }
    o
}

fn table(entries: &[Entry]) -> String {
    let mut o = String::from(
        "| started | git head | status | bench | lane | point | metric | n | mean | 95 % CI | result dir |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for e in entries {
        o.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            e.started.get(..19).unwrap_or(&e.started).replace('T', " "),
            e.git_head.get(..12).unwrap_or(&e.git_head),
            e.status,
            crate::report::fmt::md_text(&e.bench),
            crate::report::fmt::md_text(&e.lane),
            crate::report::fmt::md_text(&e.axes),
            crate::report::fmt::md_text(&e.metric),
            e.n,
            // the report's rule: two decimals, K and M
            crate::report::fmt::km(e.mean),
            e.ci.map(|(lo, hi)| format!(
                "{} … {}",
                crate::report::fmt::km(lo),
                crate::report::fmt::km(hi)
            ))
            .unwrap_or_else(|| "— (n<2)".into()),
            crate::report::fmt::md_text(&e.result_dir)
        ));
    }
    o
}

/// A trend chart: each (bench, lane, point) series over the runs, with its 95 % interval; a
/// lane has one colour (its points told apart by dashes), the legend sits right of the data.
pub fn chart(entries: &[Entry], title: &str) -> Result<String, String> {
    use crate::report::chart::{lines, Lines, Pt, Series};
    use std::collections::HashMap;
    // runs in first-seen order, series by (bench, lane, point), each entry placed once: one pass
    let mut runs: Vec<(&str, &str)> = Vec::new();
    let mut run_at: HashMap<(&str, &str), usize> = HashMap::new();
    for e in entries {
        let r = (e.started.as_str(), e.result_dir.as_str());
        run_at.entry(r).or_insert_with(|| {
            runs.push(r);
            runs.len() - 1
        });
    }
    if !entries.iter().any(|e| e.mean.is_finite()) {
        return Err("no values to plot".into());
    }
    let mut lanes: Vec<&str> = Vec::new();
    let mut lane_at: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut keys: Vec<((&str, &str, &str), usize, usize)> = Vec::new();
    let mut key_at: HashMap<(&str, &str, &str), usize> = HashMap::new();
    let mut members: Vec<Vec<&Entry>> = Vec::new();
    for e in entries {
        let k = (e.bench.as_str(), e.lane.as_str(), e.axes.as_str());
        let i = match key_at.get(&k) {
            Some(&i) => i,
            None => {
                // the lane's colour, and the series' dash among the lane's series
                let lane = lane_at.entry(k.1).or_insert_with(|| {
                    lanes.push(k.1);
                    (lanes.len() - 1, 0)
                });
                keys.push((k, lane.0, lane.1));
                lane.1 += 1;
                members.push(Vec::new());
                key_at.insert(k, keys.len() - 1);
                keys.len() - 1
            }
        };
        members[i].push(e);
    }
    let series = keys
        .iter()
        .zip(&members)
        .map(|((k, color, dash), mine)| {
            let points = mine
                .iter()
                .filter(|e| e.mean.is_finite())
                .filter_map(|e| {
                    let x = *run_at.get(&(e.started.as_str(), e.result_dir.as_str()))?;
                    Some(Pt {
                        x: x as f64,
                        y: e.mean,
                        ci: e.ci,
                    })
                })
                .collect();
            Series {
                label: format!("{} {} {}", k.0, k.1, k.2).trim().to_string(),
                lane: Some(k.1.to_string()),
                color: *color,
                dash: *dash,
                points,
            }
        })
        .collect();
    let x_ticks = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (i as f64, r.0.get(..16).unwrap_or(r.0).replace('T', " ")))
        .collect();
    Ok(lines(&Lines {
        title: title.to_string(),
        x_label: "run (oldest first, by start)".into(),
        y_label: entries
            .first()
            .map(|e| crate::report::plots::metric_label(&e.metric, &e.unit))
            .unwrap_or_default(),
        x_ticks,
        log2_x: false,
        lang: crate::util::lang::Lang::En,
        series,
    }))
}

/// The trend chart written to `path` (atomically).
pub fn svg(entries: &[Entry], path: &Path, title: &str) -> Result<(), String> {
    let text = chart(entries, title)?;
    if path.is_dir() {
        return Err(format!("{} is a directory", path.display()));
    }
    let tmp = path.with_extension(format!("svg.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// The history as a page of report.html's look: the chart, then the table.
pub fn html(entries: &[Entry], title: &str) -> String {
    use crate::report::fmt::{html_text as esc, km};
    use crate::report::page::{self, Cell};
    let mut lanes: Vec<String> = Vec::new();
    for e in entries {
        if !lanes.contains(&e.lane) {
            lanes.push(e.lane.clone());
        }
    }
    let header = format!(
        "<header>\n<h1>{}</h1>\n<p class=\"muted\">expr history: {} run(s), oldest first</p>\n</header>\n",
        esc(title),
        {
            let mut r: Vec<(&str, &str)> = entries
                .iter()
                .map(|e| (e.started.as_str(), e.result_dir.as_str()))
                .collect();
            r.dedup();
            r.len()
        }
    );
    let mut b = String::from("<section id=\"plots\">\n<h2>Trend</h2>\n");
    match chart(entries, title) {
        Ok(svg) => b.push_str(&format!(
            "<figure>\n{}</figure>\n",
            svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
        )),
        Err(e) => b.push_str(&format!("<p class=\"muted\">no chart: {}</p>\n", esc(&e))),
    }
    b.push_str("</section>\n<section id=\"runs\">\n<h2>Runs</h2>\n");
    let rows = entries
        .iter()
        .map(|e| {
            (
                Some(e.lane.clone()),
                vec![
                    Cell::text(&e.started.get(..19).unwrap_or(&e.started).replace('T', " ")),
                    Cell::html(format!(
                        "<code>{}</code>",
                        esc(e.git_head.get(..12).unwrap_or(&e.git_head))
                    )),
                    Cell::text(&e.status),
                    Cell::text(&e.bench),
                    Cell::text(&e.lane),
                    Cell::text(&e.axes),
                    Cell::text(&crate::report::plots::metric_label(&e.metric, &e.unit)),
                    Cell::num(&e.n.to_string(), Some(e.n as f64)),
                    Cell::num(&km(e.mean), Some(e.mean)),
                    match e.ci {
                        Some((lo, hi)) => {
                            Cell::num(&format!("{} … {}", km(lo), km(hi)), Some(hi - lo))
                        }
                        None => Cell::num("— (n<2)", None),
                    },
                    Cell::html(format!("<code>{}</code>", esc(&e.result_dir))),
                ],
            )
        })
        .collect();
    b.push_str(&page::table(
        &[
            "started",
            "git head",
            "status",
            "bench",
            "lane",
            "point",
            "metric",
            "n",
            "mean",
            "95 % CI",
            "result dir",
        ],
        rows,
    ));
    b.push_str("</section>\n");
    let changes = machine_changes(entries);
    if !changes.is_empty() {
        b.push_str("<section id=\"machines\">\n<h2>Machine changes between runs</h2>\n<ul>\n");
        for c in changes {
            b.push_str(&format!("<li>{}</li>\n", esc(&c)));
        }
        b.push_str("</ul>\n</section>\n");
    }
    page::page(crate::util::lang::Lang::En, title, &header, &lanes, &b)
}
