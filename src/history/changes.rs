//! Change points in a history, without thresholds set by hand.
//!
//! A series is one metric of one lane and sweep point on one machine, one value per run (the
//! run's mean), oldest first. It is fitted with a piecewise-constant mean by penalised least
//! squares — the segmentation that minimises Σ (SSE of each segment) / σ̂² + β · (number of
//! changes), found exactly by PELT (Killick, Fearnhead & Eckley, "Optimal detection of
//! changepoints with a linear computational cost", JASA 107(500), 2012; asv's step detection is
//! the same idea with an L1 cost). σ̂ is the series' run-to-run noise, estimated robustly from
//! the differences of consecutive runs (1.4826 · median |xᵢ₊₁ − xᵢ| / √2: a step moves one
//! difference only), so the penalty is in units of that machine's own noise; β = 3 ln n.
//!
//! Each change the fit places is then tested as Apache Otava (Hunter) does: Welch's t-test
//! between the runs of the segment before it and the segment after it — their own spread is
//! the machine's run-to-run noise — and kept when p < [`ALPHA`]. The step is reported with its
//! 95 % interval (the ratio of means on the log scale, as `expr compare` does).
//!
//! Measured by the seeded trials in this file's tests (40 runs, Gaussian noise of CV 2 %, a
//! step at run 25; 200 series each): a 10 % step is found at the right run ±1 in 100 % of
//! series, 5 % in 88.5 %, 3 % in 50.5 % (the tests hold ≥ 97, 85 and 45 %). Of series without
//! a step (2000 each), 1.5 % of 15 runs, 2.2 % of 20 and 1.7 % of 40 raise a change (the test
//! holds ≤ 2, 2.5 and 2 %). The p of the runs either side of a cut the fit chose is smaller
//! than a test of a cut fixed in advance would give — hence p < 0.001 (Otava's default),
//! where p < 0.01 let 3.3 to 5.5 % of flat series raise one. Over many series (lanes ×
//! points × metrics) a false change grows likelier in proportion.

use std::path::Path;

use serde::Serialize;

use super::Entry;
use crate::util::shell::join;
use crate::util::stats;

/// The significance a change must reach (two-sided Welch p-value between its neighbouring
/// segments).
pub const ALPHA: f64 = 0.001;

/// The fewest runs a segment holds: one odd run is noise, not a level.
pub const MIN_SEGMENT: usize = 3;

/// One change of level in a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The index of the first run after the change (0-based, in the series' order).
    pub at: usize,
    /// The mean of the segment before and of the segment after.
    pub before: f64,
    pub after: f64,
    /// The runs in each of those segments.
    pub n_before: usize,
    pub n_after: usize,
    /// after / before − 1, in percent.
    pub step_pct: f64,
    /// Its 95 % interval, in percent (None where a side has no spread to judge by).
    pub ci_pct: Option<(f64, f64)>,
    /// Welch's two-sided p-value between the two segments.
    pub p: f64,
    /// The series' run-to-run noise (σ̂) as a percent of the mean before the change.
    pub noise_pct: f64,
    /// Why `step_pct` and `noise_pct` are null (not finite): the level before is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_pct: Option<&'static str>,
}

/// σ̂: the run-to-run noise from the differences of consecutive values (robust to a few steps).
pub fn noise(xs: &[f64]) -> Option<f64> {
    let d: Vec<f64> = xs.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let m = stats::median(&d)?;
    Some(1.4826 * m / std::f64::consts::SQRT_2)
}

/// The change points of a series, in order. Fewer than 2 × [`MIN_SEGMENT`] values, or values
/// that are not all finite, have none. The same whatever the unit: the series is fitted divided
/// by its largest magnitude (squares of 1e150 overflow, of 1e-150 underflow), its levels said
/// in its own.
pub fn detect(xs: &[f64]) -> Vec<Change> {
    if xs.iter().any(|x| !x.is_finite()) {
        return Vec::new();
    }
    let scale = xs.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return Vec::new();
    }
    let ys: Vec<f64> = xs.iter().map(|x| x / scale).collect();
    let mut out = detect_scaled(&ys);
    // the levels of the values as they are (not scaled back: 100 stays 100)
    for c in &mut out {
        let mean = |r: std::ops::Range<usize>| stats::mean(&xs[r]).unwrap_or(f64::NAN);
        c.before = mean(c.at - c.n_before..c.at);
        c.after = mean(c.at..c.at + c.n_after);
    }
    out
}

fn detect_scaled(xs: &[f64]) -> Vec<Change> {
    let n = xs.len();
    if n < 2 * MIN_SEGMENT {
        return Vec::new();
    }
    let Some(mut sigma) = noise(xs) else {
        return Vec::new();
    };
    // the noise said with each change: the robust one, unless it is 0 (then the spread of the
    // differences within the segments found, once they are known)
    let exact = sigma == 0.0;
    if sigma == 0.0 {
        // most consecutive runs equal: the spread of all differences, else a level that never
        // moves (no change) or moves exactly (any change is one)
        let d: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        sigma = stats::sd(&d).unwrap_or(0.0) / std::f64::consts::SQRT_2;
        if sigma == 0.0 {
            return Vec::new();
        }
    }
    let beta = 3.0 * (n as f64).ln();
    let cuts = pelt(xs, sigma, beta);
    let mut bounds = vec![0];
    bounds.extend(&cuts);
    bounds.push(n);
    if exact {
        // the fallback spread counted the steps themselves (15 runs at 100 then 15 at 80 said
        // "noise 2.63 %"): a difference across a change is no run-to-run noise
        let within: Vec<f64> = bounds
            .windows(2)
            .flat_map(|w| xs[w[0]..w[1]].windows(2).map(|d| d[1] - d[0]))
            .collect();
        sigma = match within.len() {
            0 | 1 => 0.0,
            _ => stats::sd(&within).unwrap_or(0.0) / std::f64::consts::SQRT_2,
        };
    }
    let mut out = Vec::new();
    for k in 0..cuts.len() {
        let (a, b) = (
            &xs[bounds[k]..bounds[k + 1]],
            &xs[bounds[k + 1]..bounds[k + 2]],
        );
        let Some(p) = welch_p(a, b) else { continue };
        if p >= ALPHA {
            continue;
        }
        let (ma, mb) = (
            stats::mean(a).unwrap_or(f64::NAN),
            stats::mean(b).unwrap_or(f64::NAN),
        );
        out.push(Change {
            at: bounds[k + 1],
            before: ma,
            after: mb,
            n_before: a.len(),
            n_after: b.len(),
            // of |before|, as `compare` gives it: −99 → −109 is −10 %, not +10 %
            step_pct: (mb - ma) / ma.abs() * 100.0,
            // as `compare` gives it: Welch's where a level is not above 0
            ci_pct: stats::change_ci_pct(a, b),
            p,
            noise_pct: sigma / ma.abs() * 100.0,
            no_pct: (ma == 0.0).then_some("the level before is 0: no percentage of it"),
        });
    }
    out
}

/// The optimal segmentation's cuts (each the index of a segment's first value), by PELT with
/// segments of at least [`MIN_SEGMENT`] values: O(n) on series with changes, O(n²) at worst.
fn pelt(xs: &[f64], sigma: f64, beta: f64) -> Vec<usize> {
    let n = xs.len();
    let (mut s1, mut s2) = (vec![0.0; n + 1], vec![0.0; n + 1]);
    // centred on the first value: the sums of squares keep their precision
    let c = xs[0];
    for (i, x) in xs.iter().enumerate() {
        s1[i + 1] = s1[i] + (x - c);
        s2[i + 1] = s2[i] + (x - c) * (x - c);
    }
    let var = sigma * sigma;
    let cost = |a: usize, b: usize| {
        let m = (b - a) as f64;
        let s = s1[b] - s1[a];
        ((s2[b] - s2[a]) - s * s / m).max(0.0) / var
    };
    let mut f = vec![f64::INFINITY; n + 1];
    f[0] = -beta;
    let mut last = vec![0usize; n + 1];
    // each start, with the time it was found hopeless at (if it was)
    let mut candidates: Vec<(usize, Option<usize>)> = vec![(0, None)];
    for t in MIN_SEGMENT..=n {
        // a segment may start at 0 or where a segmentation of the values before it ends
        if t >= 2 * MIN_SEGMENT && f[t - MIN_SEGMENT].is_finite() {
            candidates.push((t - MIN_SEGMENT, None));
        }
        // PELT's pruning: a start worse than the best at t by more than the penalty never
        // becomes the best at any t' where a last segment (t, t'] may follow, i.e. from
        // t + MIN_SEGMENT on (the cost is additive with no constant)
        candidates.retain(|(_, pruned)| pruned.is_none_or(|at| t < at + MIN_SEGMENT));
        let mut best = (f64::INFINITY, 0);
        for &(a, _) in &candidates {
            let v = f[a] + cost(a, t) + beta;
            if v < best.0 {
                best = (v, a);
            }
        }
        f[t] = best.0;
        last[t] = best.1;
        let ft = f[t];
        for (a, pruned) in candidates.iter_mut() {
            if pruned.is_none() && f[*a] + cost(*a, t) > ft {
                *pruned = Some(t);
            }
        }
    }
    let mut cuts = Vec::new();
    let mut t = n;
    while t > 0 {
        let a = last[t];
        if a > 0 {
            cuts.push(a);
        }
        t = a;
    }
    cuts.reverse();
    cuts
}

/// Welch's two-sided p-value for mean(b) ≠ mean(a); None when a side has fewer than two values.
/// Neither side spread: 0 when the means differ, 1 when they are equal.
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let (ma, mb) = (stats::mean(a)?, stats::mean(b)?);
    let (sa, sb) = (stats::sd(a)?, stats::sd(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (qa, qb) = (sa * sa / na, sb * sb / nb);
    let se2 = qa + qb;
    if se2 == 0.0 {
        return Some(if ma == mb { 1.0 } else { 0.0 });
    }
    let df = se2 * se2 / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
    let t = (mb - ma) / se2.sqrt();
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    // the upper tail itself: `1 − cdf` is 0 below about 1e-16, and a step of many standard
    // errors printed "p = 0.00e0"
    Some((2.0 * dist.sf(t.abs())).clamp(0.0, 1.0))
}

/// A change found in one series of a history, with the runs on either side of it.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesChange {
    pub bench: String,
    pub lane: String,
    /// The sweep point (`batch_size=1024`), empty when the bench has no sweep.
    pub point: String,
    pub metric: String,
    pub unit: String,
    pub machine: String,
    /// How many runs the series holds.
    pub runs: usize,
    /// The first run after the change: its number in the series (1 = oldest), start and
    /// result directory.
    pub run: usize,
    pub started: String,
    pub result_dir: String,
    /// The git heads of the last run before and of the first run after: the commits between
    /// them (`good..bad`) hold the change when they differ.
    pub good: String,
    pub bad: String,
    /// `expr bisect` over that range, the experiment, metric, lane and point filled in; None
    /// when both sides ran the same commit (the change is not the code's) or a side has none.
    pub bisect: Option<String>,
    /// Why there is no bisection, when there is none: the experiment changed between the two
    /// runs (`expr compare` shows how), a side recorded no commit, or both ran the same one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_bisect: Option<String>,
    #[serde(skip)]
    bisect_words: Vec<String>,
    #[serde(flatten)]
    pub change: Change,
}

/// What a history's change points are, over all its series.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// Series (lane × point × metric × machine) looked at.
    pub series: usize,
    /// Of those, the ones too short to judge (fewer than 2 × MIN_SEGMENT runs).
    pub too_short: usize,
    pub changes: Vec<SeriesChange>,
}

/// The change points of every series of a history (entries oldest first, as `query` gives them).
/// `db` is the history the bisection is to read (None: the default one).
pub fn of_history(entries: &[Entry], db: Option<&Path>) -> Found {
    let series = super::series_of(entries);
    let mut found = Found {
        series: series.len(),
        too_short: 0,
        changes: Vec::new(),
    };
    for (_, runs) in &series {
        let first = runs[0];
        if runs.len() < 2 * MIN_SEGMENT {
            found.too_short += 1;
            continue;
        }
        let xs: Vec<f64> = runs.iter().map(|e| e.mean).collect();
        for c in detect(&xs) {
            let (before, after) = (runs[c.at - 1], runs[c.at]);
            let known = |h: &str| !h.is_empty() && h != "none";
            // the experiment itself changed: said, and no bisection over the code is offered
            // (it would run today's experiment at each commit)
            // (a hash that differs run to run, as with `--set seed=N`, says nothing: each
            // segment must have one, and the two differ)
            let one = |seg: &[&Entry]| {
                seg.split_first()
                    .filter(|(f, rest)| rest.iter().all(|e| e.file_hash == f.file_hash))
                    .map(|(f, _)| f.file_hash.clone())
            };
            let segs = (
                &runs[c.at.saturating_sub(c.n_before)..c.at],
                &runs[c.at..(c.at + c.n_after).min(runs.len())],
            );
            let changed = matches!((one(segs.0), one(segs.1)), (Some(a), Some(b)) if a != b);
            let words = (!changed
                && known(&before.git_head)
                && known(&after.git_head)
                && before.git_head != after.git_head)
                .then(|| bisect_words(after, &before.git_head, db));
            let no_bisect = if changed {
                Some(format!(
                    "the experiment changed between these runs (its file or `--set`): `expr compare {} {}` shows how",
                    join(&[before.result_dir.as_str()]),
                    join(&[after.result_dir.as_str()])
                ))
            } else if words.is_some() {
                None
            } else if !known(&before.git_head) || !known(&after.git_head) {
                Some("a side recorded no git commit".into())
            } else {
                Some("both sides ran the same commit: the machine or the environment moved, not the code".into())
            };
            found.changes.push(SeriesChange {
                bench: first.bench.clone(),
                lane: first.lane.clone(),
                point: first.axes.clone(),
                metric: first.metric.clone(),
                unit: first.unit.clone(),
                machine: first.machine.clone(),
                runs: runs.len(),
                run: c.at + 1,
                started: after.started.clone(),
                result_dir: after.result_dir.clone(),
                good: before.git_head.clone(),
                bad: after.git_head.clone(),
                bisect: words.as_ref().map(|w| join(w)),
                no_bisect,
                bisect_words: words.unwrap_or_default(),
                change: c,
            });
        }
    }
    found
}

/// The words of `expr bisect` over a change's commits, for its experiment file, lane, point
/// and metric (the history named when it is not the default one).
pub fn bisect_args(c: &SeriesChange) -> Vec<String> {
    c.bisect_words.clone()
}

/// The experiment file as the run recorded it; a relative one is looked for from here, then
/// beside the result directory and one level up (`results/<run>` of the project).
fn source_of(e: &Entry) -> String {
    let p = Path::new(&e.source);
    if p.is_absolute() || p.exists() {
        return e.source.clone();
    }
    let dir = Path::new(&e.result_dir);
    dir.ancestors()
        .skip(1)
        .take(2)
        .map(|d| d.join(p))
        .find(|c| c.is_file())
        .map(|c| c.display().to_string())
        .unwrap_or_else(|| e.source.clone())
}

fn bisect_words(e: &Entry, good: &str, db: Option<&Path>) -> Vec<String> {
    let mut words: Vec<String> = vec![
        "expr".into(),
        "bisect".into(),
        source_of(e),
        "--good".into(),
        good.into(),
        "--bad".into(),
        e.git_head.clone(),
        "--metric".into(),
        e.metric.clone(),
        "--lane".into(),
        e.lane.clone(),
        "--only".into(),
        format!("bench={}", e.bench),
    ];
    for (k, v) in &e.pairs {
        words.push("--only".into());
        words.push(format!("{k}={v}"));
    }
    if let Some(db) = db {
        let abs = std::fs::canonicalize(db).unwrap_or_else(|_| db.to_path_buf());
        words.push("--history".into());
        words.push(abs.display().to_string());
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 40 runs of 100 with CV 2 %, times (1 + step) from run 25 (index 24) on.
    fn series(seed: u64, step: f64) -> Vec<f64> {
        let mut r = crate::util::stats::SplitMix(seed);
        (0..40)
            .map(|i| {
                let x = 100.0 * (1.0 + 0.02 * r.normal());
                if i >= 24 {
                    x * (1.0 + step)
                } else {
                    x
                }
            })
            .collect()
    }

    /// The unit does not decide: the same series in any scale has the same changes, the same
    /// p and steps, its levels in its own scale (squares of 1e150 overflowed, of 1e-140
    /// underflowed: "no change point").
    #[test]
    fn changes_are_the_same_in_any_unit() {
        let xs = series(7, -0.2);
        let base = detect(&xs);
        assert_eq!(base.len(), 1, "{base:?}");
        for k in [1e150, 1e100, 1e-80, 1e-140, 1e-300] {
            let scaled: Vec<f64> = xs.iter().map(|x| x * k).collect();
            let c = detect(&scaled);
            assert_eq!(c.len(), 1, "×{k:e}: {c:?}");
            assert_eq!(c[0].at, base[0].at, "×{k:e}");
            assert!(
                (c[0].p / base[0].p - 1.0).abs() < 1e-6,
                "×{k:e}: {} {}",
                c[0].p,
                base[0].p
            );
            assert!((c[0].step_pct - base[0].step_pct).abs() < 1e-9, "×{k:e}");
            assert!(
                (c[0].before / (base[0].before * k) - 1.0).abs() < 1e-12,
                "×{k:e}"
            );
        }
    }

    /// A step up from a level of 0 has no percentage: null in JSON with why, `—` in the text.
    #[test]
    fn a_step_from_zero_has_no_percentage_and_says_why() {
        let xs = [
            0.1, -0.1, 0.0, 0.2, -0.2, 0.0, 10.0, 10.1, 9.9, 10.2, 9.8, 10.0,
        ];
        let c = detect(&xs);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(!c[0].step_pct.is_finite());
        assert_eq!(
            c[0].no_pct,
            Some("the level before is 0: no percentage of it")
        );
        let json = serde_json::to_value(&c[0]).unwrap();
        assert!(
            json["step_pct"].is_null() && json["no_pct"].is_string(),
            "{json}"
        );
        assert_eq!(
            super::super::page::step_text_of(&c[0]),
            "— (the level before is 0: no percentage of it)"
        );
    }

    fn found_at_25(seed: u64, step: f64) -> bool {
        detect(&series(seed, step))
            .iter()
            .any(|c| c.at.abs_diff(24) <= 1)
    }

    #[test]
    fn planted_steps_are_found_at_their_run_at_the_stated_rates() {
        let trials = 200;
        for (step, rate) in [(0.10, 0.97), (0.05, 0.85), (0.03, 0.45)] {
            // (at p < 0.001: 100, 88.5 and 50.5 %)
            let hits = (0..trials).filter(|s| found_at_25(1000 + s, step)).count();
            let got = hits as f64 / trials as f64;
            eprintln!("step {step}: found at run 25 ±1 in {got} (stated {rate})");
            assert!(
                got >= rate,
                "a {step} step found at run 25 ±1 in {got} of series, stated {rate}"
            );
        }
        // a drop is a step as well
        let hits = (0..trials).filter(|s| found_at_25(5000 + s, -0.05)).count();
        assert!(hits as f64 / trials as f64 >= 0.85, "{hits}");
    }

    /// Series without a step, of 15, 20 and 40 runs (2000 each): how many raise a change. The
    /// p of the runs either side of a cut the fit chose is no false-alarm rate by itself (at
    /// p < 0.01 these were 4.4, 5.5 and 3.3 %, helper 49); at p < 0.001 they are 1.5, 2.2
    /// and 1.7 %.
    #[test]
    fn flat_series_raise_at_most_the_stated_false_alarm_rate() {
        for (n, stated) in [(15, 0.02), (20, 0.025), (40, 0.02)] {
            let trials = 2000;
            let alarms = (0..trials)
                .filter(|s| {
                    let mut r = crate::util::stats::SplitMix(90000 + s);
                    let xs: Vec<f64> = (0..n).map(|_| 100.0 * (1.0 + 0.02 * r.normal())).collect();
                    !detect(&xs).is_empty()
                })
                .count();
            let rate = alarms as f64 / trials as f64;
            eprintln!("flat, {n} runs: {rate} raised a change (stated {stated})");
            assert!(
                rate <= stated,
                "{alarms} of {trials} flat series of {n} runs raised a change"
            );
        }
    }

    #[test]
    fn a_hand_made_step_is_measured() {
        // 100 101 99 100 101 99 | 110 111 109 110 111 109: +10 %, at index 6
        let xs = [
            100.0, 101.0, 99.0, 100.0, 101.0, 99.0, 110.0, 111.0, 109.0, 110.0, 111.0, 109.0,
        ];
        let c = detect(&xs);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].at, 6);
        assert_eq!((c[0].before, c[0].after), (100.0, 110.0));
        assert_eq!((c[0].n_before, c[0].n_after), (6, 6));
        assert!((c[0].step_pct - 10.0).abs() < 1e-9);
        let (lo, hi) = c[0].ci_pct.unwrap();
        assert!(lo > 8.0 && hi < 12.0 && lo < 10.0 && hi > 10.0, "{lo} {hi}");
        assert!(c[0].p < 1e-6, "{}", c[0].p);
        // differences 1 2 1 1 2 11 1 2 1 1 2: median 1 → σ̂ = 1.4826/√2 = 1.048, 1.05 % of 100
        assert!((c[0].noise_pct - 1.0484).abs() < 1e-3, "{}", c[0].noise_pct);
    }

    #[test]
    fn an_exact_step_has_no_noise_said() {
        // 15 runs at exactly 100, then 15 at exactly 80: a −20 % change, and no run-to-run
        // noise at all (it said 2.63 %: the step counted as noise)
        let xs: Vec<f64> = std::iter::repeat_n(100.0, 15)
            .chain(std::iter::repeat_n(80.0, 15))
            .collect();
        let c = detect(&xs);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].at, 15);
        assert!((c[0].step_pct + 20.0).abs() < 1e-9);
        assert_eq!(c[0].noise_pct, 0.0);
        // a little noise within, one run off by 1: said from the runs within the levels
        let mut ys = xs.clone();
        ys[3] = 101.0;
        let c = detect(&ys);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(
            c[0].noise_pct > 0.0 && c[0].noise_pct < 1.0,
            "{}",
            c[0].noise_pct
        );
    }

    #[test]
    fn two_steps_and_the_edges() {
        let mut xs = vec![50.0, 51.0, 49.0, 50.0, 51.0];
        xs.extend([60.0, 61.0, 59.0, 60.0, 61.0]);
        xs.extend([45.0, 46.0, 44.0, 45.0, 46.0]);
        let at: Vec<usize> = detect(&xs).iter().map(|c| c.at).collect();
        assert_eq!(at, vec![5, 10]);
        // too short, constant, a NaN: no change and no panic
        assert!(detect(&[1.0, 2.0, 3.0, 4.0, 5.0]).is_empty());
        assert!(detect(&[7.0; 30]).is_empty());
        let mut nan = xs.clone();
        nan[3] = f64::NAN;
        assert!(detect(&nan).is_empty());
        // one odd run is not a level
        let mut spike = vec![
            100.0, 101.0, 99.0, 100.0, 101.0, 99.0, 100.0, 101.0, 99.0, 100.0,
        ];
        spike[5] = 150.0;
        assert!(detect(&spike)
            .iter()
            .all(|c| c.n_before >= 3 && c.n_after >= 3));
        // an exact step in an otherwise constant series
        let exact: Vec<f64> = (0..12).map(|i| if i < 6 { 5.0 } else { 6.0 }).collect();
        let c = detect(&exact);
        assert_eq!(c.iter().map(|c| c.at).collect::<Vec<_>>(), vec![6]);
        assert_eq!(c[0].p, 0.0);
    }

    /// The optimal partitioning without pruning, O(n²): what PELT must find.
    fn exact(xs: &[f64], sigma: f64, beta: f64) -> Vec<usize> {
        let n = xs.len();
        let cost = |a: usize, b: usize| {
            let v = &xs[a..b];
            let m = stats::mean(v).unwrap();
            v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (sigma * sigma)
        };
        let mut f = vec![f64::INFINITY; n + 1];
        let mut last = vec![0; n + 1];
        f[0] = -beta;
        for t in MIN_SEGMENT..=n {
            for a in (0..=t - MIN_SEGMENT).filter(|&a| a == 0 || a >= MIN_SEGMENT) {
                let v = f[a] + cost(a, t) + beta;
                if v < f[t] {
                    (f[t], last[t]) = (v, a);
                }
            }
        }
        let (mut cuts, mut t) = (Vec::new(), n);
        while t > 0 {
            if last[t] > 0 {
                cuts.push(last[t]);
            }
            t = last[t];
        }
        cuts.reverse();
        cuts
    }

    #[test]
    fn pruning_finds_what_the_exact_search_finds() {
        let mut r = crate::util::stats::SplitMix(3);
        for trial in 0..300 {
            let n = 6 + trial % 60;
            let xs: Vec<f64> = (0..n)
                .map(|i| {
                    let level = [0.0, 3.0, -2.0, 1.0][(i * (1 + trial % 4)) / n.max(1) % 4];
                    level + r.normal()
                })
                .collect();
            let beta = 3.0 * (n as f64).ln();
            for sigma in [0.5, 1.0, 2.0] {
                assert_eq!(
                    pelt(&xs, sigma, beta),
                    exact(&xs, sigma, beta),
                    "{xs:?} σ {sigma}"
                );
            }
        }
    }

    /// A step between negative levels keeps its sign (−99 → −109 is −10 %, as `compare` says),
    /// and a step of many standard errors has its p-value, not 0.
    #[test]
    fn a_step_of_negative_levels_is_negative_and_a_large_one_has_a_p_value() {
        let xs = [
            -100.0, -101.0, -99.0, -100.0, -101.0, -99.0, -110.0, -111.0, -109.0, -110.0, -111.0,
            -109.0,
        ];
        let c = detect(&xs);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!((c[0].step_pct + 10.0).abs() < 1e-9, "{}", c[0].step_pct);
        // a = 100 + 0.001·(k mod 3), b = a + 5: t ≈ 6100 (df ≈ 10), two-sided p far below 1e-16
        let a: Vec<f64> = (0..6).map(|k| 100.0 + 0.001 * (k % 3) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 5.0).collect();
        let p = welch_p(&a, &b).unwrap();
        assert!(p > 0.0 && p < 1e-20, "{p:e}");
    }

    #[test]
    fn welch_p_on_a_hand_computed_case() {
        // a = 1 2 3 (mean 2, s² 1), b = 4 5 6 (mean 5, s² 1): se = √(2/3), t = 3.674, df = 4
        // two-sided p = 0.02131 (t-table: P(|T₄| > 3.674))
        let p = welch_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((p - 0.02131).abs() < 2e-4, "{p}");
        assert_eq!(welch_p(&[1.0], &[2.0, 3.0]), None);
    }

    #[test]
    fn a_long_series_with_many_steps() {
        // 10,000 runs with a step every 1,000: each found where it is
        let mut r = crate::util::stats::SplitMix(42);
        let xs: Vec<f64> = (0..10_000)
            .map(|i| 100.0 + 10.0 * ((i / 1000) % 2) as f64 + r.normal())
            .collect();
        let at: Vec<usize> = detect(&xs).iter().map(|c| c.at).collect();
        assert_eq!(at, (1..10).map(|k| k * 1000).collect::<Vec<_>>());
    }
}
