//! The statistical rule that calls a probed commit "like good" or "like bad".
//!
//! The step is the change from the good reference to the bad one. A probe is like good when the
//! 95 % interval of its change against the good reference lies wholly on the good side of half
//! the step, and so does its interval against the bad reference; like bad in the mirror case.
//! Half the step is the midpoint between the references (on the log scale for positive means,
//! where the intervals are those of the ratio of means, as `expr compare` gives them; Welch's
//! interval of the difference otherwise). A probe whose intervals straddle the midpoint needs
//! more runs; one that still does at the bound is undecided. Testing against the midpoint and
//! not against "no difference" keeps the truth half a step away from the boundary, so that
//! looking again after every round does not pile up wrong calls.

use crate::stats;

/// What the samples say about a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Good,
    Bad,
    /// Not decided yet: measure it again.
    More,
    /// Not decided at the bound on runs.
    Undecided,
}

/// A probe's intervals against both references, and the call.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub call: Call,
    /// The probe against the good reference: the interval, and the midpoint it is judged by.
    pub vs_good: Option<(f64, f64)>,
    pub mid_good: f64,
    /// The probe against the bad reference.
    pub vs_bad: Option<(f64, f64)>,
    pub mid_bad: f64,
    /// `%` (ratio of means) or the metric's own unit (difference of means).
    pub relative: bool,
}

impl Judgement {
    /// One line: both intervals and their midpoints.
    pub fn text(&self, unit: &str) -> String {
        let u = if self.relative { "%" } else { unit };
        let iv = |c: Option<(f64, f64)>| match c {
            Some((lo, hi)) => format!("{} … {}{u}", signed(lo), signed(hi)),
            None => "— (fewer than 2 runs)".into(),
        };
        format!(
            "vs good {} (midpoint {}{u}), vs bad {} (midpoint {}{u})",
            iv(self.vs_good),
            signed(self.mid_good),
            iv(self.vs_bad),
            signed(self.mid_bad)
        )
    }
}

/// A number with its sign and two decimals.
pub fn signed(x: f64) -> String {
    format!("{x:+.2}")
}

/// Whether every mean is positive: the ratio of means is then the scale the rule works on.
fn positive(sides: &[&[f64]]) -> bool {
    sides
        .iter()
        .all(|s| stats::mean(s).is_some_and(|m| m > 0.0))
}

/// The interval of the change from `a` to `b`: percent of a ratio, or a difference.
fn interval(a: &[f64], b: &[f64], relative: bool) -> Option<(f64, f64)> {
    if relative {
        stats::ratio_ci_pct(a, b)
    } else {
        stats::welch(a, b).and_then(|d| d.ci)
    }
}

/// The step from good to bad: its interval (percent or difference) when both sides have two
/// runs or more, and whether it excludes zero.
pub fn step(good: &[f64], bad: &[f64]) -> (Option<(f64, f64)>, bool) {
    let relative = positive(&[good, bad]);
    let ci = interval(good, bad, relative);
    (ci, ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0))
}

/// Judge a probe's samples against the references. `max`: the most runs a probe gets; at it,
/// a probe not decided is `Undecided`.
pub fn judge(good: &[f64], bad: &[f64], probe: &[f64], max: usize) -> Judgement {
    let relative = positive(&[good, bad, probe]);
    let (mg, mb) = (
        stats::mean(good).unwrap_or(f64::NAN),
        stats::mean(bad).unwrap_or(f64::NAN),
    );
    // the midpoint, seen from each reference
    let (mid_good, mid_bad) = if relative {
        (
            ((mb / mg).sqrt() - 1.0) * 100.0,
            ((mg / mb).sqrt() - 1.0) * 100.0,
        )
    } else {
        ((mb - mg) / 2.0, (mg - mb) / 2.0)
    };
    let vs_good = interval(good, probe, relative);
    let vs_bad = interval(bad, probe, relative);
    let up = mb > mg;
    let below = |c: Option<(f64, f64)>, m: f64| c.is_some_and(|(_, hi)| hi < m);
    let above = |c: Option<(f64, f64)>, m: f64| c.is_some_and(|(lo, _)| lo > m);
    let (lower, higher) = (
        below(vs_good, mid_good) && below(vs_bad, mid_bad),
        above(vs_good, mid_good) && above(vs_bad, mid_bad),
    );
    let call = match (up, lower, higher) {
        _ if mg.is_nan() || mb.is_nan() || mg == mb => {
            if probe.len() >= max {
                Call::Undecided
            } else {
                Call::More
            }
        }
        (true, true, _) | (false, _, true) => Call::Good,
        (true, _, true) | (false, true, _) => Call::Bad,
        _ if probe.len() >= max => Call::Undecided,
        _ => Call::More,
    };
    Judgement {
        call,
        vs_good,
        mid_good,
        vs_bad,
        mid_bad,
        relative,
    }
}

/// The classic rule of a fixed-repeat bisection (for comparison): the probe is whichever
/// reference its mean is nearer to (no interval, no more runs).
pub fn nearest(good: &[f64], bad: &[f64], probe: &[f64]) -> Call {
    let (Some(g), Some(b), Some(p)) = (stats::mean(good), stats::mean(bad), stats::mean(probe))
    else {
        return Call::Undecided;
    };
    let (dg, db) = if positive(&[good, bad, probe]) {
        ((p / g).ln().abs(), (p / b).ln().abs())
    } else {
        ((p - g).abs(), (p - b).abs())
    };
    if dg < db {
        Call::Good
    } else if db < dg {
        Call::Bad
    } else {
        Call::Undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: [f64; 6] = [100.0, 98.0, 102.0, 101.0, 99.0, 100.0];
    const B: [f64; 6] = [115.0, 113.0, 117.0, 116.0, 114.0, 115.0];

    #[test]
    fn a_probe_at_either_reference_is_called_so() {
        let good = judge(&G, &B, &[99.0, 101.0, 100.0], 30);
        assert_eq!(good.call, Call::Good, "{good:?}");
        // the midpoint from good is √1.15 − 1 = +7.24 %
        assert!((good.mid_good - 7.238).abs() < 1e-3, "{}", good.mid_good);
        let bad = judge(&G, &B, &[114.0, 116.0, 115.0], 30);
        assert_eq!(bad.call, Call::Bad, "{bad:?}");
        // a higher-is-better metric that dropped: the same rule, mirrored
        assert_eq!(judge(&B, &G, &[114.0, 116.0, 115.0], 30).call, Call::Good);
        assert_eq!(judge(&B, &G, &[99.0, 101.0, 100.0], 30).call, Call::Bad);
    }

    #[test]
    fn a_probe_between_or_too_noisy_needs_more_then_is_undecided() {
        // halfway: both intervals straddle the midpoint
        let mid = [107.0, 108.0, 107.5, 107.2];
        assert_eq!(judge(&G, &B, &mid, 30).call, Call::More);
        assert_eq!(judge(&G, &B, &mid, 4).call, Call::Undecided);
        // one run: no interval, never a call
        let one = judge(&G, &B, &[100.0], 30);
        assert_eq!((one.call, one.vs_good), (Call::More, None));
        // wide noise: the interval crosses the midpoint
        assert_eq!(judge(&G, &B, &[80.0, 120.0, 100.0], 30).call, Call::More);
    }

    #[test]
    fn the_step_needs_an_interval_that_excludes_zero() {
        let (ci, sig) = step(&G, &B);
        let (lo, hi) = ci.unwrap();
        assert!(sig && lo > 10.0 && hi < 20.0, "{lo} {hi}");
        assert!(!step(&G, &[99.0, 101.0, 100.5]).1);
        assert!(!step(&[100.0], &[115.0]).1, "n=1 is no interval");
    }

    #[test]
    fn values_that_are_not_positive_use_welchs_difference() {
        let g = [-1.0, 0.0, 1.0, 0.5, -0.5];
        let b = [9.0, 10.0, 11.0, 10.5, 9.5];
        let j = judge(&g, &b, &[0.1, -0.2, 0.3, 0.0], 30);
        assert!(!j.relative);
        assert_eq!((j.call, j.mid_good, j.mid_bad), (Call::Good, 5.0, -5.0));
        assert_eq!(nearest(&g, &b, &[7.0]), Call::Bad);
        assert_eq!(nearest(&G, &B, &[101.0]), Call::Good);
    }
}
