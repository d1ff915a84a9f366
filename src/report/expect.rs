//! `expect` evaluated over a result directory: bounds on a metric's mean over repeats, a lane's
//! speedup over another on the headline, and patterns the step logs must (not) contain. Each
//! is judged per sweep point; a point without the numbers is a failure, never a pass.

use std::path::Path;

use crate::kind_api::data::{ExpectResult, ReportData};
use crate::model::{Bench, Expect, ExpectWhat};
use crate::util::stats;

/// Within the bounds, give or take the rounding of a mean (0.1, 0.2, 0.15 have the mean
/// 0.15000000000000002, shown as 0.1500: not above `max=0.15`).
fn bound_ok(e: &Expect, v: f64) -> bool {
    let slack = |m: f64| 1e-12 * v.abs().max(m.abs());
    e.min.is_none_or(|m| v >= m - slack(m)) && e.max.is_none_or(|m| v <= m + slack(m))
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
    let j = Judging {
        dir,
        data,
        b,
        e,
        at,
        lanes: b
            .lanes
            .iter()
            .map(|l| l.name.as_str())
            .filter(|l| e.lane.as_deref().is_none_or(|x| x == *l))
            .collect(),
        groups: data.groups.iter().filter(|g| g.bench == b.name).collect(),
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
        ExpectWhat::Metric { metric } => j.metric(metric, out),
        ExpectWhat::Speedup { over } => j.speedup(over, out),
        ExpectWhat::Log { pattern, present } => j.log(pattern, *present, out),
    }
}

/// A sweep point's name in a result: its lane, then its axes when it has any.
fn label(lane: &str, axes: &[(String, String)]) -> String {
    let a = crate::kind_api::tables::axes_text(axes);
    if a.is_empty() {
        lane.to_string()
    } else {
        format!("{lane} {a}")
    }
}

/// One expectation of one bench being judged, with the lanes it is about and the bench's groups.
struct Judging<'a> {
    dir: &'a Path,
    data: &'a ReportData,
    b: &'a Bench,
    e: &'a Expect,
    at: &'a str,
    lanes: Vec<&'a str>,
    groups: Vec<&'a crate::kind_api::data::Group>,
}

impl Judging<'_> {
    /// A judged result: what was found, in English (the terminal's) and in the report's language.
    fn push(
        &self,
        out: &mut Vec<ExpectResult>,
        point: String,
        ok: bool,
        (zh, en): (String, String),
    ) {
        out.push(ExpectResult {
            bench: self.b.name.clone(),
            expect: self.e.text(),
            at: self.at.to_string(),
            point,
            ok,
            judged: true,
            found_said: self.data.lang.t(zh, en.clone()),
            found: en,
        })
    }

    /// A result not judged (what is missing to judge it, not a failure of the expectation).
    fn not_judged(&self, out: &mut Vec<ExpectResult>, point: String, (zh, en): (String, String)) {
        out.push(ExpectResult {
            bench: self.b.name.clone(),
            expect: self.e.text(),
            at: self.at.to_string(),
            point,
            ok: false,
            judged: false,
            found_said: self.data.lang.t(zh, en.clone()),
            found: en,
        })
    }

    /// The groups of the lanes the expectation is about.
    fn judged_groups(&self) -> impl Iterator<Item = &&crate::kind_api::data::Group> {
        self.groups
            .iter()
            .filter(|g| self.lanes.contains(&g.lane.as_str()))
    }

    /// How many of a group's points ran without their numbers (failed, interrupted, no data):
    /// the expectation fails there, whatever the rest give.
    fn lacking(&self, g: &crate::kind_api::data::Group) -> usize {
        self.data
            .points_of(g)
            .filter(|p| matches!(p.status.as_str(), "failed" | "interrupted" | "no-data"))
            .count()
    }

    /// Group `g` judged failed: `k` of the points of `h` (itself, or the lane it is compared
    /// with) have no numbers.
    fn lacking_result(
        &self,
        g: &crate::kind_api::data::Group,
        h: &crate::kind_api::data::Group,
        k: usize,
        out: &mut Vec<ExpectResult>,
    ) {
        let n = self.data.points_of(h).count();
        self.push(
            out,
            label(&g.lane, &g.axes),
            false,
            (
                format!("{} 的 {n} 个重复中有 {k} 个没有数值（失败、中断或无数据）：不论其余的数值，判为未满足", h.lane),
                format!("{k} of the {n} repeats of {} {} no numbers (failed, interrupted or no data): failed, whatever the rest give", h.lane, if k == 1 { "has" } else { "have" }),
            ),
        );
    }

    /// Bounds on a metric's mean over each group's repeats.
    fn metric(&self, metric: &str, out: &mut Vec<ExpectResult>) {
        for g in self.judged_groups() {
            let k = self.lacking(g);
            if k > 0 {
                self.lacking_result(g, g, k, out);
                continue;
            }
            let found: Vec<&crate::kind_api::data::Metric> = self
                .data
                .points_of(g)
                .filter(|p| p.status == "ok" && p.perturbed.is_none())
                .filter_map(|p| p.metrics.iter().find(|m| norm(&m.name) == norm(metric)))
                .collect();
            // bounds in one unit never judge a metric in another
            if let (Some(want), Some(m)) = (&self.e.unit, found.first()) {
                if !m.unit.is_empty() && &m.unit != want {
                    self.push(
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
            // a peak RSS below the memory of what started the command is not known, only
            // bounded by it: a `max` judges the mean with each such repeat at its bound
            let floors: Vec<f64> = if norm(metric) == "max_rss_mib" {
                self.data
                    .points_of(g)
                    .filter(|p| p.status == "ok" && p.perturbed.is_none())
                    .filter(|p| !p.metrics.iter().any(|m| norm(&m.name) == norm(metric)))
                    .filter_map(|p| p.rss_floor_mib)
                    .collect()
            } else {
                Vec::new()
            };
            if !floors.is_empty() {
                let bounded: Vec<f64> = v.iter().chain(&floors).copied().collect();
                let at_most = stats::mean(&bounded).unwrap_or(f64::NAN);
                let met = self.e.min.is_none() && self.e.max.is_some() && bound_ok(self.e, at_most);
                let (n, k) = (bounded.len(), floors.len());
                self.push(
                    out,
                    label(&g.lane, &g.axes),
                    met,
                    (
                        format!("均值至多 {}（n={n}；其中 {k} 次的峰值低于启动命令的进程自身的内存，按该值计）", near_bound(at_most, 4, self.e)),
                        format!("mean at most {} (n={n}; {k} of them peaked below the memory of the process that started the command, counted at it){}", near_bound(at_most, 4, self.e), if met { "" } else { ": not known to meet the bound" }),
                    ),
                );
                continue;
            }
            match stats::mean(&v) {
                Some(m) => self.push(
                    out,
                    label(&g.lane, &g.axes),
                    bound_ok(self.e, m),
                    (
                        format!("均值 {}（n={}）", near_bound(m, 4, self.e), v.len()),
                        format!("mean {} (n={})", near_bound(m, 4, self.e), v.len()),
                    ),
                ),
                None => self.push(
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

    /// Bounds on each group's speedup on the headline over lane `over` at the same sweep point.
    fn speedup(&self, over: &str, out: &mut Vec<ExpectResult>) {
        let higher = self
            .data
            .points
            .iter()
            .find(|p| p.bench == self.b.name && !p.metrics.is_empty())
            .and_then(|p| p.metrics[0].higher_is_better);
        let of_over: std::collections::HashMap<
            &[(String, String)],
            &&crate::kind_api::data::Group,
        > = self
            .groups
            .iter()
            .rev()
            .filter(|o| o.lane == over)
            .map(|o| (o.axes.as_slice(), o))
            .collect();
        for g in self.judged_groups() {
            let other = of_over.get(g.axes.as_slice()).copied();
            if let Some((h, k)) = [Some(*g), other.copied()]
                .into_iter()
                .flatten()
                .map(|h| (h, self.lacking(h)))
                .find(|(_, k)| *k > 0)
            {
                self.lacking_result(g, h, k, out);
                continue;
            }
            // no way to say which is faster: the headline's direction is unknown
            if higher.is_none() {
                self.not_judged(
                    out,
                    label(&g.lane, &g.axes),
                    (
                        "未判定：主指标的方向未知（在其 `collect` 上设置 `direction=`）".into(),
                        "not judged: the headline's direction is unknown (set `direction=` on its `collect`)".into(),
                    ),
                );
                continue;
            }
            // the lane it is compared with has no point here (an `exclude`)
            if other.is_none() {
                self.not_judged(
                    out,
                    label(&g.lane, &g.axes),
                    (
                        format!("未判定：{over} 在这个点上没有运行（`exclude`）"),
                        format!("not judged: {over} has no point here (an `exclude`)"),
                    ),
                );
                continue;
            }
            // as the report's ratio: of two positive means only (a ratio of a mean at or below
            // 0 says nothing)
            let speed = match (g.mean, other.and_then(|o| o.mean)) {
                (Some(a), Some(o)) if a > 0.0 && o > 0.0 => {
                    Some(if higher == Some(false) { o / a } else { a / o })
                }
                _ => None,
            };
            match speed {
                Some(s) => self.push(
                    out,
                    label(&g.lane, &g.axes),
                    bound_ok(self.e, s),
                    (
                        format!("相对 {over} 为 {}×", near_bound(s, 3, self.e)),
                        format!("{}× over {over}", near_bound(s, 3, self.e)),
                    ),
                ),
                None => self.push(
                    out,
                    label(&g.lane, &g.axes),
                    false,
                    (
                        format!("它或 {over} 没有大于 0 的主指标均值"),
                        format!("no headline mean above 0 for it or for {over}"),
                    ),
                ),
            }
        }
    }

    /// A pattern each point's step logs must (`present`) or must not contain.
    fn log(&self, pattern: &str, present: bool, out: &mut Vec<ExpectResult>) {
        let Ok(re) = regex::Regex::new(pattern) else {
            return;
        };
        for p in self.data.points.iter().filter(|p| {
            p.bench == self.b.name && self.lanes.contains(&p.lane.as_str()) && p.status != "missing"
        }) {
            let logs = crate::results::collect::logs_for(self.dir, &p.run_id, "");
            let hit = first_match(self.dir, &logs, &re);
            let (ok, found) = log_found(present, hit, logs.len());
            self.push(out, p.run_id.clone(), ok, found);
        }
    }
}

/// The first line matching `re` of any of `logs`, as `log:line` relative to `dir`: every line of
/// every log, streamed (a traceback is at the end of a long log).
fn first_match(dir: &Path, logs: &[std::path::PathBuf], re: &regex::Regex) -> Option<String> {
    use crate::results::collect::pieces::{Owned, Pieces};
    for f in logs {
        let Ok(file) = std::fs::File::open(f) else {
            continue;
        };
        // a line is read up to 1 MiB at a time (a log without newlines stays bounded), in
        // pieces that overlap: a text across a cut is found (helper 76: `Traceback` across
        // one passed `lacks=`); a `^` or `$` at a cut is no line's start or end
        let mut pieces = Pieces::new(file);
        while let Ok(Some(p)) = pieces.next_piece() {
            if re
                .find_iter(&p.text)
                .any(|m| p.owns(m.start(), m.end()) == Owned::Here)
            {
                let rel = f.strip_prefix(dir).unwrap_or(f).display().to_string();
                return Some(format!("{rel}:{}", p.ln));
            }
        }
    }
    None
}

/// A log expectation's verdict and what was found (Chinese, English), from where the pattern
/// was first seen (`hit`) in the point's `n` logs.
fn log_found(present: bool, hit: Option<String>, n: usize) -> (bool, (String, String)) {
    match (present, hit) {
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
    }
}

/// A value judged against a bound, with the digits that show why it passed or not: four
/// decimals for a mean, three for a speedup (10.5004 against max=10.5), and below 0.1 three
/// significant digits (2e-5 against max=1e-5 read `0.0000`); more where those would read as
/// passing what failed (100.00004 against max=100 is `100.00004`, not `100.0000`).
fn near_bound(v: f64, decimals: usize, e: &Expect) -> String {
    let ok = bound_ok(e, v);
    let says = |shown: &str| shown.parse::<f64>().is_ok_and(|s| bound_ok(e, s) == ok);
    // a small value in the report's form (`0.0500`, `1.00e-5`) where that shows its verdict;
    // else with the decimals that do (`0.0500001` against max=0.05 was `0.0500`)
    if v != 0.0 && v.abs() < 0.1 {
        let k = crate::util::fmt::km(v);
        if says(&k) {
            return k;
        }
    }
    for places in decimals..=20 {
        let shown = format!("{v:.places$}");
        if says(&shown) {
            return shown;
        }
    }
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use crate::model::{Expect, ExpectWhat};

    /// A log text across the cut of a line longer than 1 MiB is found once whole (helper 76:
    /// `lacks="Traceback"` passed when `Traceback` crossed the cut); a `^` at a cut is no line
    /// start.
    #[test]
    fn a_log_text_across_a_cut_of_a_long_line_is_found() {
        let (d, log) = crate::util::testutil::temp_path("run1.log");
        let cut = crate::results::collect::pieces::PIECE;
        let find = |text: &str, re: &str| {
            std::fs::write(&log, text).unwrap();
            super::first_match(
                d.path(),
                std::slice::from_ref(&log),
                &regex::Regex::new(re).unwrap(),
            )
        };
        let across = format!(
            "{}Traceback (most recent call last)\nms=5\n",
            "x".repeat(cut - 4)
        );
        assert_eq!(find(&across, "Traceback").as_deref(), Some("run1.log:1"));
        let on_two = format!("ok\n{}Traceback\n", "x".repeat(cut + 7));
        assert_eq!(find(&on_two, "Traceback").as_deref(), Some("run1.log:2"));
        assert_eq!(find(&on_two, "^Traceback"), None);
        assert_eq!(find(&on_two, "^ok$").as_deref(), Some("run1.log:1"));
    }

    fn bounds(min: Option<f64>, max: Option<f64>) -> Expect {
        Expect {
            lane: None,
            what: ExpectWhat::Metric { metric: "v".into() },
            min,
            max,
            unit: None,
            loc: Default::default(),
        }
    }

    /// The digits shown say why a value failed its bound (helper 49: `✗ mean 100.0000` of
    /// 100.00004 against max=100, `✗ 2.000× over A` of 1.9999993 against min=2).
    #[test]
    fn a_value_near_its_bound_shows_the_digits_that_judge_it() {
        let at = |v, d, min, max| super::near_bound(v, d, &bounds(min, max));
        assert_eq!(at(100.00004, 4, Some(100.0), Some(100.0)), "100.00004");
        assert_eq!(at(200.0000333, 4, None, Some(200.0)), "200.00003");
        assert_eq!(at(1.9999993, 3, Some(2.0), None), "1.999999");
        // far from it: the usual digits
        assert_eq!(at(123.456789, 4, Some(100.0), None), "123.4568");
        assert_eq!(at(2.5, 3, Some(2.0), None), "2.500");
        // below 0.1 too (helper 75: `✗ mean 0.0500` of 0.0500001 against max=0.05)
        assert_eq!(at(0.0500001, 4, None, Some(0.05)), "0.0500001");
        assert_eq!(at(0.0499999, 4, Some(0.05), None), "0.0499999");
        // and in the report's form where that shows the verdict
        assert_eq!(at(0.03, 4, None, Some(0.05)), crate::util::fmt::km(0.03));
    }
}
