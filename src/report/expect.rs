//! `expect` evaluated over a result directory: bounds on a metric's mean over repeats, a lane's
//! speedup over another on the headline, and patterns the step logs must (not) contain. Each
//! is judged per sweep point; a point without the numbers is a failure, never a pass.

use std::path::Path;

use crate::kind_api::data::{ExpectResult, ReportData};
use crate::model::{Bench, Expect, ExpectWhat};
use crate::util::stats;

fn bound_ok(e: &Expect, v: f64) -> bool {
    e.min.is_none_or(|m| v >= m) && e.max.is_none_or(|m| v <= m)
}

fn norm(s: &str) -> String {
    s.replace('-', "_")
}

/// Every expectation of every bench, judged.
/// `written`: where the run's file had each bench's expectations (the journal header's
/// `expect_at`); the resolved copy's own lines otherwise.
pub fn evaluate(dir: &Path, data: &ReportData, written: &serde_json::Value) -> Vec<ExpectResult> {
    let Some(exp) = &data.exp else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (bi, b) in exp.benches.iter().enumerate() {
        for (ei, e) in b.expects.iter().enumerate() {
            let at = written[bi][ei]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("{:?}", e.loc));
            judge(dir, data, b, e, &at, &mut out);
        }
    }
    out
}

fn judge(
    dir: &Path,
    data: &ReportData,
    b: &Bench,
    e: &Expect,
    at: &str,
    out: &mut Vec<ExpectResult>,
) {
    let l = data.lang;
    // what was found, in English (the terminal's) and in the report's language
    let push =
        |out: &mut Vec<ExpectResult>, point: String, ok: bool, (zh, en): (String, String)| {
            out.push(ExpectResult {
                bench: b.name.clone(),
                expect: e.text(),
                at: at.to_string(),
                point,
                ok,
                judged: true,
                found_said: l.t(zh, en.clone()),
                found: en,
            })
        };
    let lanes: Vec<&str> = b
        .lanes
        .iter()
        .map(|l| l.name.as_str())
        .filter(|l| e.lane.as_deref().is_none_or(|x| x == *l))
        .collect();
    let groups: Vec<&crate::kind_api::data::Group> =
        data.groups.iter().filter(|g| g.bench == b.name).collect();
    let label = |lane: &str, axes: &[(String, String)]| {
        let a = crate::kind_api::tables::axes_text(axes);
        if a.is_empty() {
            lane.to_string()
        } else {
            format!("{lane} {a}")
        }
    };
    // a lane the run did not include (`--only`) cannot be judged: said so, not failed
    let ran = |lane: &str| {
        data.points
            .iter()
            .any(|p| p.bench == b.name && p.lane == lane)
    };
    let mut named: Vec<&str> = e.lane.iter().map(String::as_str).collect();
    if let ExpectWhat::Speedup { over } = &e.what {
        named.push(over);
    }
    if let Some(l) = named.iter().find(|l| !ran(l)) {
        out.push(ExpectResult {
            bench: b.name.clone(),
            expect: e.text(),
            at: at.to_string(),
            point: l.to_string(),
            ok: false,
            judged: false,
            found_said: data.lang.t(
                format!("未判定：通道 {l} 在此次运行中没有运行（`--only`）"),
                format!("not judged: lane {l} did not run here (`--only`)"),
            ),
            found: format!("not judged: lane {l} did not run here (`--only`)"),
        });
        return;
    }
    match &e.what {
        ExpectWhat::Metric { metric } => {
            for g in groups.iter().filter(|g| lanes.contains(&g.lane.as_str())) {
                let found: Vec<&crate::kind_api::data::Metric> = data
                    .points_of(g)
                    .filter(|p| p.status == "ok" && p.perturbed.is_none())
                    .filter_map(|p| p.metrics.iter().find(|m| norm(&m.name) == norm(metric)))
                    .collect();
                // bounds in one unit never judge a metric in another
                if let (Some(want), Some(m)) = (&e.unit, found.first()) {
                    if !m.unit.is_empty() && &m.unit != want {
                        push(
                            out,
                            label(&g.lane, &g.axes),
                            false,
                            (
                                format!("`{metric}` 的单位是 {}，界限的单位是 {want}", m.unit),
                                format!("`{metric}` is in {}, the bounds in {want}", m.unit),
                            ),
                        );
                        continue;
                    }
                }
                let v: Vec<f64> = found
                    .iter()
                    .map(|m| m.value)
                    .filter(|v| v.is_finite())
                    .collect();
                match stats::mean(&v) {
                    Some(m) => push(
                        out,
                        label(&g.lane, &g.axes),
                        bound_ok(e, m),
                        (
                            format!("均值 {m:.4}（n={}）", v.len()),
                            format!("mean {m:.4} (n={})", v.len()),
                        ),
                    ),
                    None => push(
                        out,
                        label(&g.lane, &g.axes),
                        false,
                        (
                            format!("没有读到 `{metric}`"),
                            format!("no `{metric}` was read"),
                        ),
                    ),
                }
            }
        }
        ExpectWhat::Speedup { over } => {
            let higher = data
                .points
                .iter()
                .find(|p| p.bench == b.name && !p.metrics.is_empty())
                .and_then(|p| p.metrics[0].higher_is_better);
            let of_over: std::collections::HashMap<
                &[(String, String)],
                &&crate::kind_api::data::Group,
            > = groups
                .iter()
                .rev()
                .filter(|o| &o.lane == over)
                .map(|o| (o.axes.as_slice(), o))
                .collect();
            for g in groups.iter().filter(|g| lanes.contains(&g.lane.as_str())) {
                let other = of_over.get(g.axes.as_slice()).copied();
                let speed = match (g.mean, other.and_then(|o| o.mean)) {
                    (Some(a), Some(o)) if a != 0.0 && o != 0.0 => {
                        Some(if higher == Some(false) { o / a } else { a / o })
                    }
                    _ => None,
                };
                match speed {
                    Some(s) => push(
                        out,
                        label(&g.lane, &g.axes),
                        bound_ok(e, s),
                        (
                            format!("相对 {over} 为 {s:.3}×"),
                            format!("{s:.3}× over {over}"),
                        ),
                    ),
                    None => push(
                        out,
                        label(&g.lane, &g.axes),
                        false,
                        (
                            format!("它或 {over} 没有主指标均值"),
                            format!("no headline mean for it or for {over}"),
                        ),
                    ),
                }
            }
        }
        ExpectWhat::Log { pattern, present } => {
            let Ok(re) = regex::Regex::new(pattern) else {
                return;
            };
            for p in data.points.iter().filter(|p| {
                p.bench == b.name && lanes.contains(&p.lane.as_str()) && p.status != "missing"
            }) {
                let logs = crate::results::collect::logs_for(dir, &p.run_id, "");
                let mut hit: Option<String> = None;
                // every line of every log, streamed (a traceback is at the end of a long log)
                for f in &logs {
                    use std::io::{BufRead, Read};
                    let Ok(file) = std::fs::File::open(f) else {
                        continue;
                    };
                    let mut r = std::io::BufReader::new(file);
                    let mut buf = Vec::new();
                    let mut n = 0usize;
                    loop {
                        buf.clear();
                        // a line is read up to 1 MiB at a time: a log without newlines stays bounded
                        match (&mut r).take(1 << 20).read_until(b'\n', &mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(_) => {}
                        }
                        if buf.ends_with(b"\n") || buf.len() < (1 << 20) {
                            n += 1;
                        }
                        if re.is_match(&String::from_utf8_lossy(&buf)) {
                            let rel = f.strip_prefix(dir).unwrap_or(f).display().to_string();
                            hit = Some(format!("{rel}:{}", n.max(1)));
                            break;
                        }
                    }
                    if hit.is_some() {
                        break;
                    }
                }
                let n = logs.len();
                let (ok, found) = match (present, hit) {
                    (true, Some(at)) => (true, (format!("见于 {at}"), format!("found at {at}"))),
                    (true, None) => (
                        false,
                        (
                            format!("其 {n} 个日志中都没有"),
                            format!("in none of its {n} log(s)"),
                        ),
                    ),
                    (false, Some(at)) => (false, (format!("见于 {at}"), format!("found at {at}"))),
                    (false, None) => (
                        true,
                        (
                            format!("其 {n} 个日志中都没有"),
                            format!("absent from its {n} log(s)"),
                        ),
                    ),
                };
                push(out, p.run_id.clone(), ok, found);
            }
        }
    }
}
