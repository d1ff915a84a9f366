//! `expr compare A B`: the points of two result directories matched by bench, lane and every
//! axis value; for each headline metric the means, the change, its 95 % interval (of the ratio
//! of means on the log scale; Welch's of the difference where a mean is not positive) and a
//! verdict in the metric's direction; the provenance of both sides, with a
//! changed code fingerprint or workload called out.

pub mod ci;
pub mod machine;

use std::collections::BTreeSet;
use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::kind_api::data::ReportData;
use crate::util::fmt::md_text;
use crate::util::markup::{md_head, md_row};
use crate::util::stats;

/// One side's provenance.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub dir: String,
    pub experiment: String,
    pub started: String,
    pub expr_version: String,
    /// (host, hostname, git head, code fingerprint)
    pub hosts: Vec<(String, String, String, String)>,
    #[serde(skip)]
    resolved: String,
    /// Its machines, as preflight recorded them.
    #[serde(skip)]
    machines: Vec<crate::results::machine::Machine>,
    /// Its experiment's `comparable-on`.
    #[serde(skip)]
    comparable_on: Vec<String>,
    /// Its points whose files give another number than the run read, or none now (a log
    /// edited or gone since): what the comparison uses is the files', said; and its journal's
    /// damage (a line skipped, points it has no record of).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_since: Vec<String>,
}

/// One matched (bench, lane, sweep point) and metric.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub bench: String,
    pub lane: String,
    pub axes: String,
    pub metric: String,
    pub unit: String,
    /// higher, lower, or empty (unknown)
    pub direction: String,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    /// B's point has values, of this metric or another (a renamed metric is no loss).
    #[serde(skip)]
    pub b_measured: bool,
    /// B's points of the row by status (`1 ok, 2 interrupted`): why it has no value, when so.
    #[serde(skip)]
    pub b_statuses: String,
    /// The points (run ids) A has a value for whose B point, planned, has none (it failed, or
    /// had no data): measurements lost, though B's other repeats have values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub b_lost: Vec<String>,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    pub delta_pct: Option<f64>,
    /// The change's 95 % interval in percent of |mean(A)| ([`stats::change_ci_pct`]).
    pub ci_pct: Option<(f64, f64)>,
    /// Why there is no change in percent where both sides have a mean (`A's mean is 0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_pct: Option<String>,
    /// Where A's mean is 0: Welch's 95 % interval of mean(B) − mean(A), in the metric's unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_diff: Option<(f64, f64)>,
    pub significant: bool,
    /// A's and B's collects declare opposite directions: neither judges.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub directions_differ: bool,
    /// What the timing check found on either side (empty: the step totals time their stages,
    /// or the kind checks none), with the same-work throughput of each side.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub timing: String,
    /// faster, slower, no significant change, changed (direction unknown), n=1 (no interval),
    /// or no data.
    pub verdict: String,
}

impl Row {
    /// The row's bench, lane, point and metric as the first four cells of a Markdown table row
    /// (`a | b | c | d`, each escaped for a cell).
    pub fn md_key(&self) -> String {
        [&self.bench, &self.lane, &self.axes, &self.metric]
            .map(|s| md_text(s))
            .join(" | ")
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    /// Hosts whose benchmarked code (git head + runner files) differs between the sides.
    pub code_differs: Vec<String>,
    /// Lines of the resolved experiment only in A (`-`) or only in B (`+`), `output` aside.
    pub settings_diff: Vec<String>,
    pub rows: Vec<Row>,
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// What differs between the two runs' machines.
    pub machines: crate::compare::machine::MachineDiff,
}

impl Comparison {
    /// Significant regressions whose change is beyond `pct` percent (a change from a zero
    /// baseline has no percentage: it is beyond any limit).
    pub fn regressions(&self, pct: f64) -> Vec<&Row> {
        self.rows.iter().filter(|r| regression(r, pct)).collect()
    }

    /// Rows A measured and B has no value for, where B's point has no value at all (it failed,
    /// or had no data): a measurement lost, which a gate does not pass. A point that collects
    /// another metric in B is no loss (its rows are "without values on both sides").
    pub fn lost(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .zip(self.lost_rows())
            .filter_map(|(r, l)| l.then_some(r))
            .collect()
    }

    /// [`Comparison::lost`], one flag per row.
    pub fn lost_rows(&self) -> Vec<bool> {
        self.rows
            .iter()
            .map(|r| (!r.a.is_empty() && r.b.is_empty() && !r.b_measured) || !r.b_lost.is_empty())
            .collect()
    }

    /// Rows whose machines differ on an aspect the experiment declared relevant
    /// (`comparable-on`): no verdict stands, and a gate cannot pass over them.
    pub fn not_comparable(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| not_comparable(r)).collect()
    }

    /// Significant changes the gate cannot judge: the metric's direction is unknown.
    pub fn unjudged(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.verdict == "changed (direction unknown)")
            .collect()
    }
}

/// A significant regression beyond `pct` percent (from a zero baseline: beyond any limit).
/// Whether a row's machines differ on a declared aspect (its verdict "not comparable (…)").
pub fn not_comparable(r: &Row) -> bool {
    r.verdict.starts_with("not comparable")
}

/// The lines of a resolved experiment, each with the nodes it stands in (`bench "b1" › sweep
/// vals 1 2 3`): a setting moved from one bench to another differs. `output` aside (every run
/// has its own).
fn placed_lines(resolved: &str) -> BTreeSet<String> {
    let mut at: Vec<&str> = Vec::new();
    let mut out = BTreeSet::new();
    for l in resolved.lines().map(str::trim) {
        if l.is_empty() || l.starts_with("output ") {
            continue;
        }
        if l == "}" {
            at.pop();
            continue;
        }
        let own = l.strip_suffix('{').map(str::trim_end);
        let shown = own.unwrap_or(l);
        out.insert(if at.is_empty() {
            shown.to_string()
        } else {
            format!("{} › {shown}", at.join(" › "))
        });
        if let Some(o) = own {
            at.push(o);
        }
    }
    out
}

/// Whether a row's verdict is a significant change for the worse: `slower` (a time or a rate)
/// or `worse` (another metric: memory, a count).
pub fn worse(r: &Row) -> bool {
    matches!(r.verdict.as_str(), "slower" | "worse")
}

/// Whether a row's verdict is a significant change for the better: `faster` or `better`.
pub fn better(r: &Row) -> bool {
    matches!(r.verdict.as_str(), "faster" | "better")
}

/// The words of a significant change of a metric: `faster`/`slower` for a time or a rate (the
/// unit or the name says which), `better`/`worse` for anything else (peak memory is not
/// "faster" for being smaller).
pub fn change_words(metric: &str, unit: &str) -> (&'static str, &'static str) {
    const TIMES: [&str; 22] = [
        "s",
        "sec",
        "secs",
        "second",
        "seconds",
        "ms",
        "msec",
        "millisecond",
        "milliseconds",
        "us",
        "µs",
        "μs",
        "usec",
        "microseconds",
        "ns",
        "nsec",
        "nanoseconds",
        "min",
        "minutes",
        "h",
        "hr",
        "hours",
    ];
    let u = unit.trim().to_lowercase();
    let m = metric.to_lowercase();
    // a time (`ms`), or a time per something (`ns/op`, `s/it`, `ms/batch`)
    let time_unit = TIMES.contains(&u.split('/').next().unwrap_or(""));
    // a rate: per second (`samples/s`, `GB/s`, `ops/sec`) or a unit that is one (`qps`, `Hz`)
    let rate_unit = ["/s", "/sec", "/second"].iter().any(|x| u.ends_with(x))
        || [
            "qps", "tps", "fps", "iops", "flops", "tflops", "gflops", "hz", "khz", "mhz", "ghz",
        ]
        .contains(&u.as_str());
    // the name's words (`wall_ms`, `samples_per_sec`, `p99-latency`, `busbw`)
    let words: Vec<&str> = m.split(['_', '-', ' ', '.', '/']).collect();
    let named = words.iter().any(|w| {
        TIMES.contains(w)
            || [
                "time",
                "latency",
                "duration",
                "elapsed",
                "runtime",
                "walltime",
                "wall",
                "ttft",
                "tpot",
                "throughput",
                "qps",
                "tps",
                "iops",
                "bw",
                "busbw",
                "algbw",
                "bandwidth",
                "speed",
            ]
            .contains(w)
    }) || words
        .windows(2)
        .any(|p| p[0] == "per" && ["s", "sec", "second"].contains(&p[1]));
    if time_unit || rate_unit || named {
        ("faster", "slower")
    } else {
        ("better", "worse")
    }
}

pub fn regression(r: &Row, pct: f64) -> bool {
    // beyond the limit by more than a float's rounding: 1 → 1.05 is +5.000000000000004 %,
    // 3 → 3.15 is +4.9999999999999964 %, both +5 % (as `expect` allows, 1e-12 relative)
    worse(r)
        && r.delta_pct
            .is_none_or(|d| d.abs() - pct > 1e-12 * pct.abs().max(1.0))
}

fn side(dir: &Path) -> Result<(Side, ReportData), String> {
    let (exp, header) = crate::report::gather::experiment_of(dir)?;
    let data = crate::report::gather::load(dir)?;
    let ids: Vec<String> = data
        .changed
        .iter()
        .map(|(id, _)| format!("{id}: "))
        .chain(data.lost.iter().map(|id| format!("{id}: ")))
        .collect();
    // and a journal damaged since (a line skipped, points it has no record of): what the
    // comparison lacks is said, not only "no data in B"
    let changed_since = data
        .warnings
        .iter()
        .filter(|w| {
            ids.iter().any(|id| w.starts_with(id.as_str()))
                || w.starts_with("journal.jsonl:")
                || w.contains("journal.jsonl has no record of")
                || w.contains("journal.jsonl 没有记录")
        })
        .cloned()
        .collect();
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let hosts = header
        .provenance()
        .iter()
        .map(|h| {
            (
                s(&h["host"]),
                s(&h["hostname"]),
                s(&h["git_head"]),
                s(&h["fingerprint"]),
            )
        })
        .collect();
    Ok((
        Side {
            dir: dir.display().to_string(),
            experiment: header.experiment.unwrap_or_default(),
            started: header.started.unwrap_or_default(),
            expr_version: header.expr_version.unwrap_or_default(),
            hosts,
            resolved: header.resolved.unwrap_or_default(),
            machines: crate::compare::machine::machines_of(dir),
            comparable_on: exp.noise.comparable_on,
            changed_since,
        },
        data,
    ))
}

/// The headline metric's values of each (bench, lane, axes) of a side: (key, metric, unit,
/// direction, values).
/// (bench, lane, sweep point), its metric, unit and direction, its values, and the places of
/// its points in the report data.
/// The key's sweep point is its axes in name order (two files that sweep the same axes in
/// another order have the same points); the last field is the point as the side's file orders
/// it (what is shown).
type Series = Vec<(
    (String, String, String),
    String,
    String,
    Option<bool>,
    Vec<f64>,
    Vec<usize>,
    String,
)>;

fn series(data: &ReportData) -> Series {
    let mut out: Series = Vec::new();
    let mut at: HashMap<(String, String, String), usize> = HashMap::new();
    for (pi, p) in data.points.iter().enumerate() {
        let mut sorted = p.axes.clone();
        sorted.sort();
        let key = (
            p.bench.clone(),
            p.lane.clone(),
            crate::kind_api::tables::axes_text(&sorted),
        );
        let idx = match at.get(&key) {
            Some(&i) => i,
            None => {
                at.insert(key.clone(), out.len());
                out.push((
                    key,
                    String::new(),
                    String::new(),
                    None,
                    Vec::new(),
                    Vec::new(),
                    crate::kind_api::tables::axes_text(&p.axes),
                ));
                out.len() - 1
            }
        };
        out[idx].5.push(pi);
        // the headline is the first metric of an ok point (a profiled point's is perturbed)
        if let (true, Some(m)) = (p.status == "ok" && p.perturbed.is_none(), p.metrics.first()) {
            let s = &mut out[idx];
            if s.1.is_empty() {
                s.1 = m.name.clone();
                s.2 = m.unit.clone();
                s.3 = m.higher_is_better;
            }
            if s.1 == m.name && m.value.is_finite() {
                s.4.push(m.value);
            }
        }
    }
    out
}

/// The same metric in two units (ms in A, seconds in B): no change can be read off it.
fn units_differ(metric_a: &str, unit_a: &str, metric_b: &str, unit_b: &str) -> Option<String> {
    let u = |x: &str| {
        if x.is_empty() {
            "no unit".to_string()
        } else {
            x.to_string()
        }
    };
    (metric_a == metric_b && unit_a != unit_b).then(|| {
        format!(
            "not comparable (the unit differs: A {}, B {})",
            u(unit_a),
            u(unit_b)
        )
    })
}

/// The points of a series A has a value of `metric` for and B planned without any value (the
/// same run id: the same lane, sweep point and repeat), in B's order.
fn lost_points(
    da: &ReportData,
    db: &ReportData,
    pa: &[usize],
    pb: &[usize],
    metric: &str,
) -> Vec<String> {
    let valued = |p: &crate::kind_api::data::PointReport| {
        p.status == "ok"
            && p.perturbed.is_none()
            && p.metrics
                .first()
                .is_some_and(|m| m.name == metric && m.value.is_finite())
    };
    let in_a: std::collections::HashSet<&str> = pa
        .iter()
        .map(|&i| &da.points[i])
        .filter(|p| valued(p))
        .map(|p| p.run_id.as_str())
        .collect();
    // a B point with a value of another metric is no loss (a renamed metric: its rows are
    // "without values on both sides")
    let measured = |p: &crate::kind_api::data::PointReport| {
        p.status == "ok" && p.metrics.first().is_some_and(|m| m.value.is_finite())
    };
    pb.iter()
        .map(|&i| &db.points[i])
        .filter(|p| in_a.contains(p.run_id.as_str()) && !measured(p))
        .map(|p| p.run_id.clone())
        .collect()
}

/// The timing check of one series on both sides: a suspect step total said with its finding,
/// and the throughput on the same work (the stages less data loading) of each side.
fn timing_note(da: &ReportData, db: &ReportData, pa: &[usize], pb: &[usize]) -> String {
    let of = |d: &ReportData, at: &[usize]| -> (Option<String>, Vec<f64>) {
        let mut finding = None;
        let mut same = Vec::new();
        for p in at
            .iter()
            .map(|&i| &d.points[i])
            .filter(|p| p.status == "ok")
        {
            if let Some(t) = p.timing() {
                if t.suspect() && finding.is_none() {
                    finding = Some(t.english());
                }
                same.extend(t.same_work_samples_per_sec);
            }
        }
        (finding, same)
    };
    let ((fa, sa), (fb, sb)) = (of(da, pa), of(db, pb));
    if fa.is_none() && fb.is_none() {
        return String::new();
    }
    let mut parts = Vec::new();
    if let Some(f) = fa {
        parts.push(format!("A: {f}"));
    }
    if let Some(f) = fb {
        parts.push(format!("B: {f}"));
    }
    let m = |v: &[f64]| {
        stats::mean(v)
            .map(crate::util::fmt::km)
            .unwrap_or_else(|| "—".into())
    };
    parts.push(format!(
        "same-work samples/s A {} ({}), B {} ({})",
        m(&sa),
        sa.len(),
        m(&sb),
        sb.len()
    ));
    parts.join("; ")
}

/// The statuses of the points at `at`, counted: `2 failed, 1 interrupted` (most first).
fn statuses(d: &ReportData, at: &[usize]) -> String {
    let mut by: Vec<(&str, usize)> = Vec::new();
    for p in at.iter().map(|&i| &d.points[i]) {
        match by.iter_mut().find(|(st, _)| *st == p.status) {
            Some((_, n)) => *n += 1,
            None => by.push((&p.status, 1)),
        }
    }
    by.sort_by_key(|x| std::cmp::Reverse(x.1));
    by.iter()
        .map(|(st, n)| format!("{n} {st}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The hosts a bench runs on, in either run (its placed nodes and its steps).
fn bench_hosts(
    a: &crate::kind_api::data::ReportData,
    b: &crate::kind_api::data::ReportData,
    bench: &str,
) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for exp in [&a.exp, &b.exp].into_iter().flatten() {
        for bn in exp.benches.iter().filter(|x| x.name == bench) {
            let hosts: Vec<String> = match &bn.placement {
                crate::model::Placement::Nodes(n) => n.iter().map(|x| x.host.clone()).collect(),
                crate::model::Placement::Steps { steps, .. } => {
                    steps.iter().map(|s| s.host.clone()).collect()
                }
            };
            for h in hosts {
                if !v.contains(&h) {
                    v.push(h);
                }
            }
        }
    }
    v
}

pub fn compare(a: &Path, b: &Path) -> Result<Comparison, String> {
    let (sa, da) = side(a)?;
    let (sb, db) = side(b)?;
    let (xa, xb) = (series(&da), series(&db));
    let mut declared = sa.comparable_on.clone();
    declared.extend(sb.comparable_on.iter().cloned());
    declared.sort();
    declared.dedup();
    let machines = crate::compare::machine::MachineDiff::new(&sa.machines, &sb.machines, declared);
    let mut rows = Vec::new();
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let label = |k: &(String, String, String)| {
        format!(
            "{} {}{}",
            k.0,
            k.1,
            if k.2.is_empty() {
                String::new()
            } else {
                format!(" {}", k.2)
            }
        )
    };
    let in_b: HashMap<&(String, String, String), usize> = xb
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| (&t.0, i))
        .collect();
    let in_a: std::collections::HashSet<&(String, String, String)> =
        xa.iter().map(|s| &s.0).collect();
    let mut hosts_of: HashMap<&str, Vec<String>> = HashMap::new();
    for s in &xa {
        let Some(t) = in_b.get(&s.0).map(|&i| &xb[i]) else {
            only_a.push(label(&(s.0 .0.clone(), s.0 .1.clone(), s.6.clone())));
            continue;
        };
        let (metric, unit, dir) = if !s.1.is_empty() {
            (&s.1, &s.2, s.3)
        } else {
            (&t.1, &t.2, t.3)
        };
        // the direction either side's collect declares (B may set the `direction=` A lacked);
        // two that disagree judge nothing
        let directions_differ = s.1 == t.1 && matches!((s.3, t.3), (Some(x), Some(y)) if x != y);
        let dir = match (s.3, t.3) {
            _ if s.1 != t.1 => dir,
            _ if directions_differ => None,
            (x, y) => x.or(y),
        };
        let a_vals = if s.1 == *metric {
            s.4.clone()
        } else {
            Vec::new()
        };
        let b_vals = if t.1 == *metric {
            t.4.clone()
        } else {
            Vec::new()
        };
        let (ma, mb) = (stats::mean(&a_vals), stats::mean(&b_vals));
        let w = stats::welch(&a_vals, &b_vals);
        let Change {
            delta_pct,
            ratio,
            ci_pct,
            no_pct,
            ci_diff,
        } = change(&a_vals, &b_vals, ma, mb, w.as_ref());
        let (significant, verdict) = verdict_of(metric, unit, dir, w.as_ref(), ratio);
        let verdict = units_differ(&s.1, &s.2, &t.1, &t.2).unwrap_or(verdict);
        let timing = timing_note(&da, &db, &s.5, &t.5);
        let b_lost = lost_points(&da, &db, &s.5, &t.5, metric);
        let hosts = hosts_of
            .entry(s.0 .0.as_str())
            .or_insert_with(|| bench_hosts(&da, &db, &s.0 .0));
        rows.push(Row {
            timing,
            bench: s.0 .0.clone(),
            lane: s.0 .1.clone(),
            axes: s.6.clone(),
            metric: metric.clone(),
            unit: unit.clone(),
            direction: crate::history::direction(dir).to_string(),
            a: a_vals,
            b: b_vals,
            b_measured: !t.4.is_empty(),
            b_statuses: statuses(&db, &t.5),
            b_lost,
            mean_a: ma,
            mean_b: mb,
            delta_pct,
            ci_pct,
            no_pct,
            ci_diff,
            significant,
            directions_differ,
            verdict: machines.verdict_on(&verdict, hosts),
        });
    }
    for t in &xb {
        if !in_a.contains(&t.0) {
            only_b.push(label(&(t.0 .0.clone(), t.0 .1.clone(), t.6.clone())));
        }
    }
    let code_differs = sa
        .hosts
        .iter()
        .filter_map(|h| {
            let other = sb.hosts.iter().find(|x| x.0 == h.0)?;
            (other.3 != h.3).then(|| h.0.clone())
        })
        .collect();
    let (la, lb) = (placed_lines(&sa.resolved), placed_lines(&sb.resolved));
    let mut settings_diff: Vec<String> = la.difference(&lb).map(|l| format!("- {l}")).collect();
    settings_diff.extend(lb.difference(&la).map(|l| format!("+ {l}")));
    Ok(Comparison {
        a: sa,
        b: sb,
        code_differs,
        settings_diff,
        rows,
        only_a,
        only_b,
        machines,
    })
}

/// A mean by the report's rule: two decimals, K and M (`7.70K`, `3.05`).
fn num(v: Option<f64>) -> String {
    v.map(crate::util::fmt::km).unwrap_or_else(|| "—".into())
}

/// The verdict table's columns, in the text and the HTML page.
const VERDICT_COLUMNS: [&str; 9] = [
    "bench",
    "lane",
    "point",
    "metric",
    "A mean (n)",
    "B mean (n)",
    "Δ %",
    "95 % CI of Δ",
    "verdict",
];

/// The comparison as markdown.
pub fn text(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# expr compare\n\n| | A | B |\n|---|---|---|");
    let _ = writeln!(
        o,
        "| result dir | {} | {} |",
        md_text(&c.a.dir),
        md_text(&c.b.dir)
    );
    let _ = writeln!(
        o,
        "| experiment | {} | {} |",
        md_text(&c.a.experiment),
        md_text(&c.b.experiment)
    );
    let _ = writeln!(o, "| started | {} | {} |", c.a.started, c.b.started);
    let _ = writeln!(
        o,
        "| expr version | {} | {} |",
        c.a.expr_version, c.b.expr_version
    );
    for (h, a, b) in host_rows(c, md_text) {
        let _ = writeln!(
            o,
            "| host `{}` (hostname · git head · code) | {a} | {b} |",
            crate::util::fmt::md_code(h),
        );
    }
    if !c.code_differs.is_empty() {
        let _ = writeln!(
            o,
            "\n⚠ the benchmarked code differs on {}: the comparison measures the code change as well as anything else.",
            c.code_differs.iter().map(|h| format!("`{}`", crate::util::fmt::md_code(h))).collect::<Vec<_>>().join(", ")
        );
    }
    if !c.settings_diff.is_empty() {
        let _ = writeln!(o, "\n⚠ the experiments differ (settings, workload or lanes; `-` A only, `+` B only):\n\n```");
        for l in &c.settings_diff {
            let _ = writeln!(o, "{l}");
        }
        o.push_str("```\n");
    }
    o.push_str(&c.machines.text());
    o.push('\n');
    o.push_str(&md_head(&VERDICT_COLUMNS));
    for r in &c.rows {
        let arrow = match r.direction.as_str() {
            "higher" => " ↑",
            "lower" => " ↓",
            _ => "",
        };
        o.push_str(&md_row(&[
            format!("{}{arrow}", r.md_key()),
            format!("{} ({})", num(r.mean_a), r.a.len()),
            format!("{} ({})", num(r.mean_b), r.b.len()),
            delta_text(r),
            ci_text(r),
            r.verdict.clone(),
        ]));
    }
    let suspect: Vec<&Row> = c.rows.iter().filter(|r| !r.timing.is_empty()).collect();
    if !suspect.is_empty() {
        let _ = writeln!(
            o,
            "\n⚠ timing check: a step total that does not time its stages (the verdicts above use the totals as reported):"
        );
        for r in suspect {
            let _ = writeln!(
                o,
                "- {} {}{}: {}",
                md_text(&r.bench),
                md_text(&r.lane),
                if r.axes.is_empty() {
                    String::new()
                } else {
                    format!(" {}", md_text(&r.axes))
                },
                md_text(&r.timing)
            );
        }
    }
    o.push_str(&only_on_one_side(c));
    o
}

/// The lanes and points only one side has, a line each side (none when both have the same).
pub(crate) fn only_on_one_side(c: &Comparison) -> String {
    let mut o = String::new();
    for (side, only) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !only.is_empty() {
            let _ = writeln!(
                o,
                "\nonly in {side}: {}",
                only.iter()
                    .map(|s| md_text(s))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
    }
    o
}

/// The comparison as a page of report.html's look: both sides' provenance, what differs, a
/// chart of each change with its interval, and the table (sortable, lanes can be hidden).
pub fn html(c: &Comparison) -> String {
    use crate::util::fmt::html_text as esc;
    let mut lanes: Vec<String> = Vec::new();
    for r in &c.rows {
        if !lanes.contains(&r.lane) {
            lanes.push(r.lane.clone());
        }
    }
    let header = format!(
        "<header>\n<h1>expr compare: {}</h1>\n<p class=\"muted\">A <code>{}</code> → B <code>{}</code></p>\n</header>\n",
        esc(&c.b.experiment),
        esc(&c.a.dir),
        esc(&c.b.dir)
    );
    let mut b = String::from("<section id=\"provenance\">\n<h2>Provenance</h2>\n<table>\n<tr><th></th><th>A</th><th>B</th></tr>\n");
    provenance_html(&mut b, c);
    b.push_str("</section>\n<section id=\"plots\">\n<h2>Change of B against A</h2>\n");
    change_chart_html(&mut b, c, &lanes);
    b.push_str("</section>\n<section id=\"headline\">\n<h2>Per lane and point</h2>\n");
    b.push_str(&rows_table_html(c));
    for (what, list) in [("only in A", &c.only_a), ("only in B", &c.only_b)] {
        if !list.is_empty() {
            let _ = writeln!(
                b,
                "<p>{what}: {}</p>",
                list.iter().map(|s| esc(s)).collect::<Vec<_>>().join("; ")
            );
        }
    }
    b.push_str("</section>\n");
    crate::report::page::page(
        crate::util::lang::Lang::En,
        &format!("expr compare: {}", c.b.experiment),
        &header,
        &lanes,
        &b,
    )
}

/// The page's provenance: both sides' rows (result dir, experiment, start, expr version, each
/// host), then the code and experiment differences and the machines'.
fn provenance_html(b: &mut String, c: &Comparison) {
    use crate::util::fmt::html_text as esc;
    let row = |b: &mut String, k: &str, x: &str, y: &str| {
        let _ = writeln!(
            b,
            "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
            esc(k),
            esc(x),
            esc(y)
        );
    };
    row(b, "result dir", &c.a.dir, &c.b.dir);
    row(b, "experiment", &c.a.experiment, &c.b.experiment);
    row(b, "started", &c.a.started, &c.b.started);
    row(b, "expr version", &c.a.expr_version, &c.b.expr_version);
    for (h, x, y) in host_rows(c, |t| t.to_string()) {
        row(b, &format!("host {h} (hostname · git head · code)"), &x, &y);
    }
    b.push_str("</table>\n");
    if !c.code_differs.is_empty() {
        let _ = writeln!(
            b,
            "<p class=\"bad\">⚠ the benchmarked code differs on {}: the comparison measures the code change as well as anything else.</p>",
            c.code_differs
                .iter()
                .map(|h| format!("<code>{}</code>", esc(h)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !c.settings_diff.is_empty() {
        let _ = writeln!(
            b,
            "<p class=\"bad\">⚠ the experiments differ (settings, workload or lanes; <code>-</code> A only, <code>+</code> B only):</p>\n<pre>{}</pre>",
            esc(&c.settings_diff.join("\n"))
        );
    }
    b.push_str(&c.machines.html());
}

/// The page's chart: each point's change of B against A with its interval, a colour per lane.
fn change_chart_html(b: &mut String, c: &Comparison, lanes: &[String]) {
    use crate::report::chart::{bars, Bar, Bars};
    let chart_rows: Vec<Bar> = c
        .rows
        .iter()
        .filter(|r| r.delta_pct.is_some())
        .map(|r| Bar {
            label: format!("{} {} {}", r.lane, r.axes, r.metric),
            lane: Some(r.lane.clone()),
            parts: vec![(
                r.delta_pct.unwrap_or(f64::NAN),
                lanes.iter().position(|l| *l == r.lane).unwrap_or(0),
            )],
            ci: r.ci_pct,
        })
        .collect();
    if chart_rows.is_empty() {
        b.push_str(
            "<p class=\"muted\">no change to chart: no point has a mean on both sides.</p>\n",
        );
    } else {
        let svg = bars(&Bars {
            lang: crate::util::lang::Lang::En,
            title: "Δ % of B against A (95 % interval)".into(),
            x_label: "Δ %".into(),
            bars: chart_rows,
            legend: lanes
                .iter()
                .enumerate()
                .map(|(i, l)| (l.clone(), Some(l.clone()), i))
                .collect(),
        });
        let _ = writeln!(
            b,
            "<figure>\n{}</figure>",
            svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
        );
    }
}

/// The page's table: per bench, lane, point and metric both means, the change, its interval
/// and the verdict.
fn rows_table_html(c: &Comparison) -> String {
    use crate::report::page::{self, Cell};
    use crate::util::fmt::html_text as esc;
    let rows = c
        .rows
        .iter()
        .map(|r| {
            let verdict_class = match r.verdict.as_str() {
                "faster" | "better" => "ok",
                "slower" | "worse" => "bad",
                _ => "muted",
            };
            (
                Some(r.lane.clone()),
                vec![
                    Cell::text(&r.bench),
                    Cell::text(&r.lane),
                    Cell::text(&r.axes),
                    Cell::text(&format!(
                        "{}{}",
                        r.metric,
                        match r.direction.as_str() {
                            "higher" => " ↑",
                            "lower" => " ↓",
                            _ => "",
                        }
                    )),
                    Cell::num(&format!("{} ({})", num(r.mean_a), r.a.len()), r.mean_a),
                    Cell::num(&format!("{} ({})", num(r.mean_b), r.b.len()), r.mean_b),
                    Cell::num(&delta_text(r), r.delta_pct),
                    Cell::num(&ci_text(r), r.ci_pct.map(|(lo, _)| lo)),
                    Cell::html(format!(
                        "<span class=\"{verdict_class}\">{}</span>",
                        esc(&r.verdict)
                    )),
                ],
            )
        })
        .collect();
    page::table(&VERDICT_COLUMNS, rows)
}

/// Each host of either run, first A's in order then B's new ones, with what each side says of it
/// (`hostname · git head · code`, texts through `text`; `—` where the side has no such host).
fn host_rows(c: &Comparison, text: impl Fn(&str) -> String) -> Vec<(&String, String, String)> {
    let mut hosts: Vec<&String> = c.a.hosts.iter().map(|h| &h.0).collect();
    for h in &c.b.hosts {
        if !hosts.contains(&&h.0) {
            hosts.push(&h.0);
        }
    }
    let get = |s: &Side, h: &String| {
        s.hosts
            .iter()
            .find(|x| &x.0 == h)
            .map(|x| {
                format!(
                    "{} · {} · {}",
                    text(&x.1),
                    x.2.get(..12).unwrap_or(&x.2),
                    text(&x.3)
                )
            })
            .unwrap_or_else(|| "—".into())
    };
    hosts
        .into_iter()
        .map(|h| (h, get(&c.a, h), get(&c.b, h)))
        .collect()
}

/// The change of B against A: in percent (none from a zero mean, or where it overflows), its
/// ratio interval on the log scale, the interval shown, why there is no percent, and where A's
/// mean is 0 the difference's interval.
fn change(
    a_vals: &[f64],
    b_vals: &[f64],
    ma: Option<f64>,
    mb: Option<f64>,
    w: Option<&stats::Diff>,
) -> Change {
    // none from a zero baseline, or where the change overflows (2e-300 → 2e300)
    let delta_pct = ma
        .zip(mb)
        .filter(|(a, _)| *a != 0.0)
        .map(|(a, b)| (b - a) / a.abs() * 100.0)
        .filter(|d| d.is_finite());
    // the change as a ratio, on the log scale (within −100 % … ∞) when both means are
    // positive; else Welch's interval of the difference over |mean(A)|
    let ratio = stats::ratio_ci_pct(a_vals, b_vals);
    let ci_pct = stats::change_ci_pct(a_vals, b_vals);
    // a change in percent of 0 is not defined: said, and the difference's interval shown
    let no_pct = match (ma, mb, delta_pct) {
        (Some(a), Some(_), None) => Some(if a == 0.0 {
            "A's mean is 0".to_string()
        } else {
            "the change overflows a float".to_string()
        }),
        _ => None,
    };
    let ci_diff = (ma == Some(0.0) && ci_pct.is_none())
        .then(|| w.and_then(|w| w.ci))
        .flatten()
        .filter(|(lo, hi)| lo.is_finite() && hi.is_finite());
    Change {
        delta_pct,
        ratio,
        ci_pct,
        no_pct,
        ci_diff,
    }
}

/// Whether a row's change is significant, and its verdict: by the interval shown (the ratio's
/// where both means are positive, else Welch's), in the metric's direction.
fn verdict_of(
    metric: &str,
    unit: &str,
    dir: Option<bool>,
    w: Option<&stats::Diff>,
    ratio: Option<(f64, f64)>,
) -> (bool, String) {
    // the verdict by the interval shown
    let significant = match ratio {
        Some((lo, hi)) => lo > 0.0 || hi < 0.0,
        None => w.is_some_and(|w| w.significant()),
    };
    let verdict = match w {
        None => "no data".to_string(),
        Some(w) if w.ci.is_none() => "n=1, no interval".to_string(),
        // Welch's interval overflows a float (values near ±1.8e308) where it is the one
        // shown (no ratio of positive means): none is shown, so no verdict is given on it
        Some(w)
            if ratio.is_none()
                && (!w.d.is_finite()
                    || w.ci
                        .is_some_and(|(lo, hi)| !lo.is_finite() || !hi.is_finite())) =>
        {
            "no interval (the values overflow a float)".to_string()
        }
        Some(_) if !significant => "no significant change".to_string(),
        Some(w) => {
            let (up, down) = change_words(metric, unit);
            // the way of the interval shown: the ratio's where there is one
            let rose = match ratio {
                Some((lo, _)) => lo > 0.0,
                None => w.d > 0.0,
            };
            match dir {
                Some(true) if rose => up.into(),
                Some(false) if !rose => up.into(),
                Some(_) => down.into(),
                None => "changed (direction unknown)".into(),
            }
        }
    };
    (significant, verdict)
}

/// What [`change`] finds (the fields of [`Row`] of the same names, and the ratio interval).
struct Change {
    delta_pct: Option<f64>,
    ratio: Option<(f64, f64)>,
    ci_pct: Option<(f64, f64)>,
    no_pct: Option<String>,
    ci_diff: Option<(f64, f64)>,
}

/// A row's Δ %: the change in percent, or `—` and why there is none where both sides have a
/// mean (`— (A's mean is 0)`).
pub fn delta_text(r: &Row) -> String {
    match (r.delta_pct, &r.no_pct) {
        (Some(d), _) => crate::util::fmt::signed_pct(d),
        (None, Some(why)) => format!("— ({why})"),
        (None, None) => "—".into(),
    }
}

/// A row's interval of the change: in percent, or where A's mean is 0 that of the difference
/// in the metric's unit (`+5.03 … +5.17 (B − A)`), else `—`.
pub fn ci_text(r: &Row) -> String {
    let signed = |v: f64| {
        let t = crate::util::fmt::km(v);
        if v > 0.0 {
            format!("+{t}")
        } else {
            t
        }
    };
    match (r.ci_pct, r.ci_diff) {
        (Some((lo, hi)), _) => crate::util::fmt::signed_pct_range(lo, hi),
        (None, Some((lo, hi))) => format!("{} … {} (B − A)", signed(lo), signed(hi)),
        _ => "—".into(),
    }
}

#[cfg(test)]
mod tests {
    /// A time or a rate gets faster or slower; peak memory or a count gets better or worse.
    #[test]
    fn a_change_is_faster_for_times_and_rates_better_for_the_rest() {
        use super::change_words as w;
        let speed = ("faster", "slower");
        let other = ("better", "worse");
        for (metric, unit) in [
            ("time_ms", "ms"),
            ("wall_ms", ""),
            ("secs", ""),
            ("lat", "µs"),
            ("p99-latency", ""),
            ("samples_per_sec", ""),
            ("throughput", "samples/s"),
            ("busbw", "GB/s"),
            ("x", "Mops/s"),
            ("tput", "qps"),
            ("op", "ns/op"),
            ("step", "s/it"),
            ("batch", "ms/batch"),
            ("t", "usec"),
            ("elapsed", ""),
            ("ttft", ""),
            ("samples_per_second", ""),
        ] {
            assert_eq!(w(metric, unit), speed, "{metric} {unit}");
        }
        for (metric, unit) in [
            ("max_rss_mib", "MiB"),
            ("mem", "MiB"),
            ("energy_j", "J"),
            ("errors", ""),
            ("error_rate", "%"),
            ("drops", ""),
            ("score", ""),
            ("energy_per_sample", "J/sample"),
            ("mem_per_step", "MiB"),
            ("num_ops", ""),
            ("steps", "steps"),
            ("memory", "GB/step"),
        ] {
            assert_eq!(w(metric, unit), other, "{metric} {unit}");
        }
    }
}
