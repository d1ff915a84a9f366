//! The history as people read it: a table (text), a trend chart (SVG) and a page of
//! report.html's look, with what changed in the machines between runs.

use crate::util::fmt::{signed_pct, signed_pct_range};
use crate::util::markup::{md_span, md_text};
use std::path::Path;

use super::changes::{Change, Found, MIN_SEGMENT};
use super::{series_of, Entry, SeriesKey};

/// How the change points are found, in one sentence (the page and the text say it).
pub const METHOD: &str = "Change points: a penalised piecewise-constant fit of each series (PELT, β = 3 ln n, in units of the series' own run-to-run noise), each change kept when Welch's t-test between the runs before and after it gives p < 0.001; runs on different machines are never one series.";

/// A series by its full name: `bench · lane · point · metric · on machine`.
pub fn series_name(bench: &str, lane: &str, point: &str, metric: &str, machine: &str) -> String {
    let mut parts = vec![bench, lane];
    if !point.is_empty() {
        parts.push(point);
    }
    parts.push(metric);
    let mut s = parts.join(" · ");
    if !machine.is_empty() {
        s.push_str(&format!(" · on {machine}"));
    }
    s
}

fn short_time(s: &str) -> String {
    s.get(..16).unwrap_or(s).replace('T', " ")
}

/// A change's step with its interval; `—` and why where the level before is 0 (no percentage
/// of it).
fn step_text(c: &Change) -> String {
    if !c.step_pct.is_finite() {
        return "— (the level before is 0: no percentage of it)".into();
    }
    match c.ci_pct {
        Some((lo, hi)) => format!("{} ({})", signed_pct(c.step_pct), signed_pct_range(lo, hi)),
        None => signed_pct(c.step_pct),
    }
}

#[cfg(test)]
pub(super) fn step_text_of(c: &Change) -> String {
    step_text(c)
}

/// A change's p: `= 4.35e-11`, or `< 1e-300` where it is 0 (a step between levels without
/// spread: no float is small enough), not `= 0.00e0`.
fn p_text(p: f64) -> String {
    if p > 0.0 {
        format!("= {p:.2e}")
    } else {
        "< 1e-300".into()
    }
}

/// The run-to-run noise in percent of the level before; `—` where that level is 0.
fn noise_text(c: &Change) -> String {
    if c.noise_pct.is_finite() {
        format!("{:.2} %", c.noise_pct)
    } else {
        "—".into()
    }
}

fn range_text(c: &super::changes::SeriesChange) -> String {
    let short = |h: &str| h.get(..12).unwrap_or(h).to_string();
    if c.good == c.bad {
        format!("{} (both sides)", short(&c.bad))
    } else {
        format!("{}..{}", short(&c.good), short(&c.bad))
    }
}

/// The change points as text: each with its series, the first run after it, the level before
/// and after, the step with its interval, p, the series' noise, the commits and the bisection.
pub fn changes_text(found: &Found) -> String {
    let mut o = format!("{METHOD}\n\n");
    if found.changes.is_empty() {
        o.push_str(&format!("No change point in {} series", found.series));
        if found.too_short > 0 {
            o.push_str(&format!(
                " ({} too short to judge: fewer than {} runs)",
                found.too_short,
                2 * MIN_SEGMENT
            ));
        }
        o.push_str(".\n");
        return o;
    }
    o.push_str(&format!(
        "{} change point(s) in {} series{}:\n",
        found.changes.len(),
        found.series,
        if found.too_short > 0 {
            format!(" ({} too short to judge)", found.too_short)
        } else {
            String::new()
        }
    ));
    for c in &found.changes {
        o.push_str(&format!(
            "\n- {}\n  from run {} of {} ({}, {}): {} → {}, {}, p {}; run-to-run noise {}\n  commits: {}\n",
            md_text(&series_name(&c.bench, &c.lane, &c.point, &c.metric, &c.machine)),
            c.run,
            c.runs,
            short_time(&c.started),
            md_text(&c.result_dir),
            crate::util::fmt::km(c.change.before),
            crate::util::fmt::km(c.change.after),
            step_text(&c.change),
            p_text(c.change.p),
            noise_text(&c.change),
            range_text(c),
        ));
        match &c.bisect {
            // a command to copy: shown exactly, in a code span
            Some(b) => o.push_str(&format!("  bisect: {}\n", md_span(b, false))),
            None => o.push_str(&format!(
                "  bisect: — ({})\n",
                c.no_bisect.as_deref().unwrap_or("no range of commits")
            )),
        }
    }
    o
}

/// A file path as a `file://` URL (bytes outside the unreserved set percent-encoded).
fn file_url(p: &str) -> String {
    let mut o = String::from("file://");
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// Where a series chart puts its runs (x: the run's place in the series) and values (y).
struct Frame {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    n: usize,
    y0: f64,
    y1: f64,
}

impl Frame {
    fn sx(&self, i: f64) -> f64 {
        let (left, right, n) = (self.left, self.right, self.n);
        if n == 1 {
            (left + right) / 2.0
        } else {
            left + 14.0 + i / (n - 1) as f64 * (right - left - 28.0)
        }
    }

    fn sy(&self, y: f64) -> f64 {
        self.bottom - (y - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)
    }
}

/// One series' trend: its runs (x: the run's place in the series, labelled by start at ticks
/// that fit side by side), each mean with its 95 % interval and linked to the run's
/// report.html, the fitted levels between changes, and each change marked with its step.
pub fn series_chart(runs: &[&Entry], changes: &[&Change], name: &str) -> String {
    use crate::report::chart::{axes, labels, legend_entry, nice, open};
    use crate::util::fmt::{html_text as esc, tick};
    use std::fmt::Write;
    let (w, h, left, top) = (760.0, 380.0, 76.0, 40.0);
    let (right, bottom) = (w - 24.0, h - 70.0);
    let mut o = String::new();
    open(&mut o, w, h, name);
    let n = runs.len();
    let (ylo, yhi) = crate::report::chart::span(runs.iter().flat_map(|e| {
        let (a, b) = e.ci.unwrap_or((e.mean, e.mean));
        [e.mean, a, b]
    }));
    if n == 0 || !ylo.is_finite() {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no values to plot</text>\n</svg>",
            w / 2.0,
            h / 2.0
        );
        return o;
    }
    let pad = ((yhi - ylo) * 0.08).max(yhi.abs() * 0.01);
    let (y0, y1, ystep, yticks) = nice(ylo - pad, yhi + pad, false);
    let fr = Frame {
        left,
        right,
        top,
        bottom,
        n,
        y0,
        y1,
    };
    for t in &yticks {
        let y = fr.sy(*t);
        let _ = writeln!(
            o,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{right}\" y2=\"{y:.1}\" stroke=\"#e6e6e6\" stroke-width=\"1\"/>\n<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 4.0,
            esc(&tick(*t, ystep))
        );
    }
    x_ticks(&mut o, &fr, runs);
    axes(&mut o, left, right, top, bottom);
    let y_label = runs
        .first()
        .map(|e| crate::report::plots::metric_label(&e.metric, &e.unit))
        .unwrap_or_default();
    labels(
        &mut o,
        "run, by start (oldest first)",
        &y_label,
        left,
        right,
        top,
        bottom,
    );
    levels_and_changes(&mut o, &fr, runs, changes);
    let lane = runs.first().map(|e| e.lane.clone());
    let col = run_marks(&mut o, &fr, runs, lane.as_deref());
    let mark = format!(
        "<line x1=\"{left}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"{col}\" stroke-width=\"2\"/>\n",
        h - 14.0,
        left + 18.0
    );
    legend_entry(
        &mut o,
        left,
        h - 14.0,
        lane.as_deref().unwrap_or(""),
        &lane,
        &mark,
    );
    o.push_str("</svg>\n");
    o
}

/// A series chart's x ticks: as many start times as fit side by side (the first and the last
/// among them), to the minute, or to the second where the minutes would repeat.
fn x_ticks(o: &mut String, fr: &Frame, runs: &[&Entry]) {
    use crate::report::chart::text_w;
    use crate::util::fmt::html_text as esc;
    use std::fmt::Write;
    let (left, right, bottom, n) = (fr.left, fr.right, fr.bottom, fr.n);
    let minute = |e: &Entry| short_time(&e.started);
    let second = |e: &Entry| e.started.get(5..19).unwrap_or(&e.started).replace('T', " ");
    let widest = runs.iter().map(|e| text_w(&minute(e))).fold(0.0, f64::max);
    let fit = (((right - left) / (widest + 16.0)).floor() as usize).clamp(1, n);
    let mut at: Vec<usize> = if fit <= 1 || n == 1 {
        vec![0]
    } else {
        (0..fit)
            .map(|k| ((k * (n - 1)) as f64 / (fit - 1) as f64).round() as usize)
            .collect()
    };
    at.dedup();
    let repeats = at
        .windows(2)
        .any(|w| minute(runs[w[0]]) == minute(runs[w[1]]));
    let last = at.last().copied();
    for &i in &at {
        let x = fr.sx(i as f64);
        // the last label ends at its tick, so that it stays inside the picture
        let anchor = if Some(i) == last && at.len() > 1 {
            "end"
        } else if i == 0 && at.len() > 1 {
            "start"
        } else {
            "middle"
        };
        let label = if repeats {
            second(runs[i])
        } else {
            minute(runs[i])
        };
        let _ = writeln!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{bottom}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#333333\" stroke-width=\"1\"/>\n<text class=\"x-tick\" x=\"{x:.1}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
            bottom + 5.0,
            bottom + 18.0,
            esc(&label)
        );
    }
}

/// A series chart's fitted levels (the mean of each stretch between changes), then each change
/// marked with its step.
fn levels_and_changes(o: &mut String, fr: &Frame, runs: &[&Entry], changes: &[&Change]) {
    use crate::util::fmt::html_text as esc;
    use std::fmt::Write;
    let (top, bottom) = (fr.top, fr.bottom);
    let mut bounds = vec![0];
    bounds.extend(changes.iter().map(|c| c.at));
    bounds.push(fr.n);
    for win in bounds.windows(2) {
        let v: Vec<f64> = runs[win[0]..win[1]].iter().map(|e| e.mean).collect();
        if let Some(m) = crate::util::stats::mean(&v) {
            // a little past its first and last run, inside the frame (with two runs, a third
            // of the way between them lay beyond the chart's edges)
            let _ = writeln!(
                o,
                "<line class=\"level\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#999999\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>",
                fr.sx(win[0] as f64 - 0.3).max(fr.left),
                fr.sy(m),
                fr.sx((win[1] - 1) as f64 + 0.3).min(fr.right),
                fr.sy(m)
            );
        }
    }
    for c in changes {
        let x = fr.sx(c.at as f64 - 0.5);
        let _ = writeln!(
            o,
            "<g class=\"change\"><line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom}\" stroke=\"#b30000\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{}\" fill=\"#b30000\">{}</text></g>",
            x + 4.0,
            top + 12.0,
            esc(&if c.step_pct.is_finite() {
                format!("{:+.1} %", c.step_pct)
            } else {
                "from 0".to_string()
            })
        );
    }
}

/// A series chart's runs: the line through their means, each with its interval and a dot
/// linked to the run's report.html when its directory is there. Returns the series' colour.
fn run_marks(o: &mut String, fr: &Frame, runs: &[&Entry], lane: Option<&str>) -> &'static str {
    use crate::report::chart::color;
    use crate::util::fmt::html_text as esc;
    use std::fmt::Write;
    let n = fr.n;
    let col = color(0);
    let _ = writeln!(
        o,
        "<g class=\"series\"{}>",
        lane.map(|l| format!(" data-lane=\"{}\"", esc(l)))
            .unwrap_or_default()
    );
    let line: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{:.1},{:.1}", fr.sx(i as f64), fr.sy(e.mean)))
        .collect();
    let _ = writeln!(
        o,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{col}\" stroke-width=\"1.5\"/>",
        line.join(" ")
    );
    for (i, e) in runs.iter().enumerate() {
        let (x, y) = (fr.sx(i as f64), fr.sy(e.mean));
        if let Some((a, b)) = e.ci {
            let (ya, yb) = (fr.sy(a), fr.sy(b));
            let _ = writeln!(
                o,
                "<path d=\"M{x:.1} {ya:.1}V{yb:.1}\" stroke=\"{col}\" stroke-width=\"1\" fill=\"none\"/>"
            );
        }
        let tip = format!(
            "run {} of {n}: {} at {}: {}",
            i + 1,
            short_time(&e.started),
            e.git_head.get(..12).unwrap_or(&e.git_head),
            crate::util::fmt::km(e.mean)
        );
        let dot = format!(
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{col}\"><title>{}</title></circle>",
            esc(&tip)
        );
        if Path::new(&e.result_dir).is_dir() {
            let _ = writeln!(
                o,
                "<a class=\"run\" href=\"{}\">{dot}</a>",
                esc(&file_url(&format!("{}/report.html", e.result_dir)))
            );
        } else {
            let _ = writeln!(o, "{dot}");
        }
    }
    o.push_str("</g>\n");
    col
}

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
            o.push_str(&format!("- {}\n", crate::util::fmt::md_text(&c)));
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
            crate::util::fmt::md_text(&e.bench),
            crate::util::fmt::md_text(&e.lane),
            crate::util::fmt::md_text(&e.axes),
            crate::util::fmt::md_text(&e.metric),
            e.n,
            // the report's rule: two decimals, K and M; a run without a number here, why
            match &e.missing {
                Some(why) => format!("— ({})", md_text(why)),
                None => crate::util::fmt::km(e.mean),
            },
            e.ci_text().0,
            crate::util::fmt::md_text(&e.result_dir)
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

/// The trend chart written to `path` (a regular file whole, through a temporary name).
pub fn svg(entries: &[Entry], path: &Path, title: &str) -> Result<(), String> {
    let text = chart(entries, title)?;
    if path.is_dir() {
        return Err(format!("{} is a directory", path.display()));
    }
    // as a shell's `>` would: through a link, into a FIFO or a device as it is
    crate::results::atomic::write_named(path, text.as_bytes())
}

/// The history as a page of report.html's look: its change points, a chart per series (lane ×
/// point × metric × machine, one shown at a time by a selector), then the runs' table.
pub fn html(entries: &[Entry], title: &str, found: &Found) -> String {
    use crate::util::fmt::html_text as esc;
    let mut lanes: Vec<String> = Vec::new();
    for e in entries {
        if !lanes.contains(&e.lane) {
            lanes.push(e.lane.clone());
        }
    }
    // the trend of the runs with numbers (one without is in the table, with why)
    let measured: Vec<Entry> = entries
        .iter()
        .filter(|e| e.missing.is_none())
        .cloned()
        .collect();
    let series = series_of(&measured);
    let header = format!(
        "<header>\n<h1>{}</h1>\n<p class=\"muted\">expr history: {} run(s), oldest first; {} series (lane × point × metric × machine)</p>\n</header>\n",
        esc(title),
        {
            let mut r: Vec<(&str, &str)> = entries
                .iter()
                .map(|e| (e.started.as_str(), e.result_dir.as_str()))
                .collect();
            r.dedup();
            r.len()
        },
        series.len()
    );
    let mut b = String::from("<section id=\"changes\">\n<h2>Change points</h2>\n");
    b.push_str(&format!("<p class=\"muted\">{}</p>\n", esc(METHOD)));
    changes_html(&mut b, found);
    b.push_str("</section>\n<section id=\"plots\">\n<h2>Trend</h2>\n");
    trend_html(&mut b, &series, found);
    b.push_str("</section>\n<section id=\"runs\">\n<h2>Runs</h2>\n");
    b.push_str(&runs_table(entries));
    b.push_str("</section>\n");
    let changes = machine_changes(entries);
    if !changes.is_empty() {
        b.push_str("<section id=\"machines\">\n<h2>Machine changes between runs</h2>\n<ul>\n");
        for c in changes {
            b.push_str(&format!("<li>{}</li>\n", esc(&c)));
        }
        b.push_str("</ul>\n</section>\n");
    }
    crate::report::page::page(crate::util::lang::Lang::En, title, &header, &lanes, &b)
}

/// The series a change was found in.
fn key_of(c: &super::changes::SeriesChange) -> SeriesKey<'_> {
    (
        c.bench.as_str(),
        c.lane.as_str(),
        c.point.as_str(),
        c.metric.as_str(),
        c.machine.as_str(),
    )
}

/// The page's change points: none in so many series, or their table.
fn changes_html(b: &mut String, found: &Found) {
    use crate::report::page::{self, Cell};
    use crate::util::fmt::{html_text as esc, km};
    if found.changes.is_empty() {
        b.push_str(&format!(
            "<p>No change point in {} series{}.</p>\n",
            found.series,
            if found.too_short > 0 {
                format!(
                    " ({} too short to judge: fewer than {} runs)",
                    found.too_short,
                    2 * MIN_SEGMENT
                )
            } else {
                String::new()
            }
        ));
        return;
    }
    let rows = found
        .changes
        .iter()
        .map(|c| {
            (
                Some(c.lane.clone()),
                vec![
                    Cell::text(&series_name(
                        &c.bench, &c.lane, &c.point, &c.metric, &c.machine,
                    )),
                    Cell::num(&format!("{} of {}", c.run, c.runs), Some(c.run as f64)),
                    Cell::text(&short_time(&c.started)),
                    Cell::num(
                        &format!("{} → {}", km(c.change.before), km(c.change.after)),
                        Some(c.change.after),
                    ),
                    Cell::num(
                        &step_text(&c.change),
                        Some(c.change.step_pct).filter(|v| v.is_finite()),
                    ),
                    Cell::num(
                        p_text(c.change.p).trim_start_matches("= "),
                        Some(c.change.p),
                    ),
                    Cell::num(
                        &noise_text(&c.change),
                        Some(c.change.noise_pct).filter(|v| v.is_finite()),
                    ),
                    Cell::html(format!("<code>{}</code>", esc(&range_text(c)))),
                    Cell::html(match &c.bisect {
                        Some(b) => {
                            format!("<code style=\"overflow-wrap: anywhere\">{}</code>", esc(b))
                        }
                        None => format!(
                            "— ({})",
                            esc(c.no_bisect.as_deref().unwrap_or("no range of commits"))
                        ),
                    }),
                ],
            )
        })
        .collect();
    b.push_str(&page::table(
        &[
            "series",
            "first run after",
            "started",
            "level",
            "step (95 % CI)",
            "p",
            "run-to-run noise",
            "commits",
            "bisect",
        ],
        rows,
    ));
}

/// The page's trend: a selector of the series (the first with a change shown first), then a
/// chart per series.
fn trend_html(b: &mut String, series: &[(SeriesKey<'_>, Vec<&Entry>)], found: &Found) {
    use crate::util::fmt::html_text as esc;
    if series.is_empty() {
        b.push_str("<p class=\"muted\">no values to plot</p>\n");
        return;
    }
    // the first series shown is the first with a change
    let changed = |k: &SeriesKey| found.changes.iter().any(|c| key_of(c) == *k);
    let first = series.iter().position(|(k, _)| changed(k)).unwrap_or(0);
    b.push_str("<p><label for=\"series-pick\">series </label><select id=\"series-pick\" data-picks=\"series-chart\">\n");
    for (i, (k, runs)) in series.iter().enumerate() {
        b.push_str(&format!(
            "<option value=\"{i}\"{}>{}{} ({} runs)</option>\n",
            if i == first { " selected" } else { "" },
            if changed(k) { "⚠ " } else { "" },
            esc(&series_name(k.0, k.1, k.2, k.3, k.4)),
            runs.len()
        ));
    }
    b.push_str("</select></p>\n");
    for (i, (k, runs)) in series.iter().enumerate() {
        let mine: Vec<&Change> = found
            .changes
            .iter()
            .filter(|c| key_of(c) == *k)
            .map(|c| &c.change)
            .collect();
        let name = series_name(k.0, k.1, k.2, k.3, k.4);
        b.push_str(&format!(
            "<figure class=\"series-chart\" data-series=\"{i}\">\n{}<figcaption>{}</figcaption>\n</figure>\n",
            series_chart(runs, &mine, &name).replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1),
            esc(&name)
        ));
    }
}

/// The page's table of runs: one row per run and series.
fn runs_table(entries: &[Entry]) -> String {
    use crate::report::page::{self, Cell};
    use crate::util::fmt::{html_text as esc, km};
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
                    match &e.missing {
                        Some(why) => Cell::num(&format!("— ({why})"), None),
                        None => Cell::num(&km(e.mean), Some(e.mean)),
                    },
                    {
                        let (text, width) = e.ci_text();
                        Cell::num(&text, width)
                    },
                    Cell::html(format!("<code>{}</code>", esc(&e.result_dir))),
                ],
            )
        })
        .collect();
    page::table(
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
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level line stays inside the chart's frame however few runs there are (two runs put
    /// its ends at x = -99.6 and 911.6 of a frame from 76 to 736).
    #[test]
    fn a_level_line_stays_inside_the_frame() {
        let entry = |mean: f64| Entry {
            started: String::new(),
            git_head: String::new(),
            status: "ok".into(),
            result_dir: String::new(),
            bench: "b".into(),
            lane: "l".into(),
            axes: String::new(),
            metric: "ms".into(),
            unit: "ms".into(),
            n: 1,
            mean,
            ci: None,
            ci_why: None,
            machine: String::new(),
            source: String::new(),
            file_hash: String::new(),
            pairs: Vec::new(),
            missing: None,
            run: 0,
        };
        for n in [2, 3, 8] {
            let runs: Vec<Entry> = (0..n).map(|i| entry(10.0 + i as f64)).collect();
            let refs: Vec<&Entry> = runs.iter().collect();
            let fr = Frame {
                left: 76.0,
                right: 736.0,
                top: 20.0,
                bottom: 300.0,
                n,
                y0: 0.0,
                y1: 20.0,
            };
            let mut o = String::new();
            levels_and_changes(&mut o, &fr, &refs, &[]);
            let xs: Vec<f64> = o
                .split(['"'])
                .collect::<Vec<_>>()
                .windows(2)
                .filter(|w| w[0].ends_with(" x1=") || w[0].ends_with(" x2="))
                .map(|w| w[1].parse().unwrap())
                .collect();
            assert_eq!(xs.len(), 2, "{o}");
            assert!(
                xs.iter().all(|x| (76.0..=736.0).contains(x)),
                "{n} runs: {xs:?}"
            );
        }
    }
}
