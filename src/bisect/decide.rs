//! The statistical rule that calls a probed commit "like good" or "like bad".
//!
//! A sequential test between two hypotheses: the probe's mean is the good reference's, or it
//! is the bad reference's. After each round the generalized log-likelihood ratio of "like bad"
//! against "like good" — (N/2) · ln(SS₀/SS₁), the squares about the means fitted when the
//! probe's runs join good's (SS₀) or bad's (SS₁), σ common and estimated — is compared with
//! Wald's boundaries ln(β/(1 − α)) and ln((1 − β)/α): below the first the probe is good, above
//! the second bad, between them it gets another round, and at the bound on runs it is
//! undecided. Unlike the plug-in ratio with the references' means and σ taken as known, the
//! generalized one grows slowly while the references are small, so a step overestimated from
//! a few runs does not decide a probe. Positive metrics are judged on the log scale (a ratio
//! of means, as `expr compare` gives it). The references are judged ready once each has
//! `min_refs` runs and the step is `step_se` standard errors from zero; a probe is called
//! either way only from its `min_probe`-th run on.
//! `src/bisect/sim.rs` compares the alternatives on the test repository's noise.

use crate::util::stats;

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

/// The rule's constants: the errors of the sequential test and how precisely the references
/// must place the midpoint before a probe is judged by them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Calling a probe bad when it is like good.
    pub alpha: f64,
    /// Calling a probe good when it is like bad.
    pub beta: f64,
    /// The step between the references must be at least this many standard errors before
    /// probes are judged by them (0: the significance of the step is enough).
    pub step_se: f64,
    /// A probe gets more runs only with references at least as large.
    pub refs_at_least_probe: bool,
    /// Runs of each reference before any probe is judged.
    pub min_refs: usize,
    /// The generalized likelihood ratio (the references' means and σ estimated under each
    /// hypothesis, the probe pooled with good or with bad) instead of the plug-in ratio.
    pub glr: bool,
    /// Runs of a probe before it is called either way.
    pub min_probe: usize,
    /// Probes judged good (bad) by measuring count as runs of the good (bad) reference.
    pub pool_verdicts: bool,
}

/// The rule `expr bisect` uses.
pub const RULE: Rule = Rule {
    alpha: 0.01,
    beta: 0.01,
    step_se: 3.0,
    refs_at_least_probe: true,
    min_refs: 12,
    glr: true,
    min_probe: 6,
    pool_verdicts: false,
};

/// A probe's test against the references, and the call.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub call: Call,
    /// The log-likelihood ratio "like bad" against "like good", and Wald's boundaries.
    pub llr: f64,
    pub bounds: (f64, f64),
    /// The probe's change from good, and the step from good to bad: `%` (ratio of means) or
    /// the metric's own unit (difference of means).
    pub change: f64,
    pub step: f64,
    /// The pooled standard deviation of one run (`%` on the log scale, or the unit).
    pub sigma: f64,
    pub relative: bool,
}

impl Judgement {
    /// One line: the ratio, its boundaries, the probe's change and the step.
    pub fn text(&self, unit: &str) -> String {
        let u = if self.relative { "%" } else { unit };
        format!(
            "log-likelihood ratio bad:good {} (good at ≤ {}, bad at ≥ {}); probe vs good {}{u}, step {}{u}, σ {:.2}{u}",
            signed(self.llr),
            signed(self.bounds.0),
            signed(self.bounds.1),
            signed(self.change),
            signed(self.step),
            self.sigma
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

/// The values on the rule's scale: logarithms when relative.
fn scaled(v: &[f64], relative: bool) -> Vec<f64> {
    if relative {
        v.iter().map(|x| x.ln()).collect()
    } else {
        v.to_vec()
    }
}

/// The step from good to bad: its interval (percent or difference) when both sides have two
/// runs or more, and whether it excludes zero.
pub fn step(good: &[f64], bad: &[f64]) -> (Option<(f64, f64)>, bool) {
    let relative = positive(&[good, bad]);
    let ci = interval(good, bad, relative);
    (ci, ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0))
}

/// Whether the references place the step precisely enough to judge probes by: the step (on
/// the log scale for positive means) is at least `rule.step_se` of its standard errors, with
/// the pooled σ.
pub fn references_ready(good: &[f64], bad: &[f64], rule: &Rule) -> bool {
    if good.len().min(bad.len()) < rule.min_refs {
        return false;
    }
    let relative = positive(&[good, bad]);
    let (g, b) = (scaled(good, relative), scaled(bad, relative));
    let (Some(mg), Some(mb), Some(s)) = (
        stats::mean(&g),
        stats::mean(&b),
        stats::pooled_sd(&[&g, &b]),
    ) else {
        return false;
    };
    let se = s * (1.0 / g.len() as f64 + 1.0 / b.len() as f64).sqrt();
    (mb - mg).abs() >= rule.step_se * se
}

/// Judge a probe's samples against the references by Wald's sequential probability ratio
/// test between "the probe's mean is good's" and "it is bad's", the means those of the
/// references and σ pooled over the three (all on the log scale for positive means). `max`:
/// the most runs a probe gets; at it, a probe not decided is `Undecided`.
pub fn judge(good: &[f64], bad: &[f64], probe: &[f64], max: usize, rule: &Rule) -> Judgement {
    let relative = positive(&[good, bad, probe]);
    let (g, b, p) = (
        scaled(good, relative),
        scaled(bad, relative),
        scaled(probe, relative),
    );
    let mean = |v: &[f64]| stats::mean(v).unwrap_or(f64::NAN);
    let (mg, mb) = (mean(&g), mean(&b));
    let sigma = stats::pooled_sd(&[&g, &b, &p]).unwrap_or(f64::NAN);
    let bounds = stats::sprt_bounds(rule.alpha, rule.beta);
    // σ = 0 (exact runs) makes any probe off the midpoint decided at once
    let llr = if rule.glr {
        glr(&g, &b, &p)
    } else {
        stats::sprt_llr(&p, mg, mb, sigma)
    };
    let call = if probe.len() < rule.min_probe {
        if probe.len() >= max {
            Call::Undecided
        } else {
            Call::More
        }
    } else if llr <= bounds.0 {
        Call::Good
    } else if llr >= bounds.1 {
        Call::Bad
    } else if probe.len() >= max {
        Call::Undecided
    } else {
        Call::More
    };
    let (change, step, sigma) = if relative {
        let pct = |a: f64, b: f64| (b / a - 1.0) * 100.0;
        let (ag, ab, ap) = (mean(good), mean(bad), mean(probe));
        (pct(ag, ap), pct(ag, ab), (sigma.exp() - 1.0) * 100.0)
    } else {
        (mean(&p) - mg, mb - mg, sigma)
    };
    Judgement {
        call,
        llr,
        bounds,
        change,
        step,
        sigma,
        relative,
    }
}

/// The generalized log-likelihood ratio of "the probe is like bad" against "like good":
/// (N/2) · ln(SS₀/SS₁), SSₕ the squares about the means fitted when the probe joins good (h = 0)
/// or bad (h = 1), σ profiled out.
fn glr(g: &[f64], b: &[f64], p: &[f64]) -> f64 {
    let (Some(mg), Some(mb), Some(mp)) = (stats::mean(g), stats::mean(b), stats::mean(p)) else {
        return f64::NAN;
    };
    let ss = |v: &[f64], m: f64| v.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
    let within = ss(g, mg) + ss(b, mb) + ss(p, mp);
    let (ng, nb, np) = (g.len() as f64, b.len() as f64, p.len() as f64);
    let join = |n: f64, m: f64| n * np / (n + np) * (mp - m) * (mp - m);
    let (ss0, ss1) = (within + join(ng, mg), within + join(nb, mb));
    (ng + nb + np) / 2.0 * (ss0 / ss1).ln()
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

    /// The rule with a call from a probe's first run.
    const ONE: Rule = Rule {
        min_probe: 1,
        ..RULE
    };
    const G: [f64; 6] = [100.0, 98.0, 102.0, 101.0, 99.0, 100.0];
    const B: [f64; 6] = [115.0, 113.0, 117.0, 116.0, 114.0, 115.0];

    #[test]
    fn a_probe_at_either_reference_is_called_so() {
        let good = judge(&G, &B, &[99.0, 101.0, 100.0], 30, &ONE);
        assert_eq!(good.call, Call::Good, "{good:?}");
        assert!((good.step - 15.0).abs() < 1e-9 && good.change.abs() < 1e-9);
        // α = β = 1 %: Wald's boundaries are ∓ln 99
        let l99 = 99f64.ln();
        assert!((good.bounds.0 + l99).abs() < 1e-12 && (good.bounds.1 - l99).abs() < 1e-12);
        let bad = judge(&G, &B, &[114.0, 116.0, 115.0], 30, &ONE);
        assert_eq!(bad.call, Call::Bad, "{bad:?}");
        // a higher-is-better metric that dropped: the same rule, mirrored
        assert_eq!(
            judge(&B, &G, &[114.0, 116.0, 115.0], 30, &ONE).call,
            Call::Good
        );
        assert_eq!(
            judge(&B, &G, &[99.0, 101.0, 100.0], 30, &ONE).call,
            Call::Bad
        );
    }

    #[test]
    fn the_sequential_test_on_hand_computed_samples() {
        // good mean 0, bad mean 10, each group's squares about its mean 2, 2 and 2 over
        // 1 + 1 + 1 degrees of freedom: σ² = 2. The ratio is (10 − 0)/2 · Σ (x − 5)
        let (g, b) = ([-1.0, 1.0], [9.0, 11.0]);
        let plug = Rule { glr: false, ..ONE };
        let j = judge(&g, &b, &[1.0, 3.0], 30, &plug);
        assert!(!j.relative);
        assert!((j.sigma - 2f64.sqrt()).abs() < 1e-12, "{j:?}");
        assert!((j.llr - 5.0 * (-4.0 - 2.0)).abs() < 1e-12, "{j:?}");
        assert_eq!((j.call, j.change, j.step), (Call::Good, 2.0, 10.0));
        // 8 and 10: 5 · (3 + 5) = +40, bad
        assert_eq!(judge(&g, &b, &[8.0, 10.0], 30, &plug).call, Call::Bad);
        // 3.6 and 5.6 (squares 2 again): 5 · (−1.4 + 0.6) = −4, inside ±ln 99 = ±4.595: more
        // runs, then undecided at the bound
        let near = judge(&g, &b, &[3.6, 5.6], 30, &plug);
        assert!(
            (near.llr + 4.0).abs() < 1e-9 && near.call == Call::More,
            "{near:?}"
        );
        assert_eq!(judge(&g, &b, &[3.6, 5.6], 2, &plug).call, Call::Undecided);
        // looser errors, nearer boundaries: α = 5 %, β = 20 % → ln(0.2/0.95) … ln(0.8/0.05)
        let loose = Rule {
            alpha: 0.05,
            beta: 0.2,
            ..plug
        };
        let (lo, hi) = crate::util::stats::sprt_bounds(loose.alpha, loose.beta);
        assert!((lo - (-1.558_144_618)).abs() < 1e-8 && (hi - 16f64.ln()).abs() < 1e-12);
        // 4.5 and 5.0: σ² = (2 + 2 + 0.125)/3, 10/σ² · (−0.5) = −3.64, past −1.56 under the
        // loose rule, not past −4.595 under the default
        let x = [4.5, 5.0];
        assert_eq!(judge(&g, &b, &x, 30, &loose).call, Call::Good);
        assert_eq!(judge(&g, &b, &x, 30, &plug).call, Call::More);
        // one run is judged too (σ from the references)
        assert_eq!(judge(&g, &b, &[0.0], 30, &plug).call, Call::Good);
    }

    #[test]
    fn the_generalized_ratio_on_hand_computed_samples() {
        // squares within the three groups 2 + 2 + 2 = 6. The probe (mean 2) joining good
        // (mean 0) adds 2·2/4 · 2² = 4, joining bad (mean 10) adds 1 · 8² = 64: the ratio is
        // 6/2 · ln((6 + 4)/(6 + 64)) = 3 ln(1/7) = −5.84, past −ln 99: good
        let (g, b) = ([-1.0, 1.0], [9.0, 11.0]);
        let two = Rule {
            min_probe: 2,
            ..RULE
        };
        let j = judge(&g, &b, &[1.0, 3.0], 30, &two);
        assert!((j.llr - 3.0 * (1.0f64 / 7.0).ln()).abs() < 1e-12, "{j:?}");
        assert_eq!(j.call, Call::Good);
        // the rule itself calls nothing before the probe's sixth run
        assert_eq!(judge(&g, &b, &[1.0, 3.0], 30, &RULE).call, Call::More);
        assert_eq!(judge(&g, &b, &[1.0, 3.0], 2, &RULE).call, Call::Undecided);
        // 3.6 and 5.6: 3 ln((6 + 4.6²)/(6 + 5.4²)) = −0.77, where the plug-in ratio said −4:
        // two runs of each reference do not fix the midpoint, so more runs
        let near = judge(&g, &b, &[3.6, 5.6], 30, &two);
        let want = 3.0 * ((6.0 + 4.6 * 4.6) / (6.0 + 5.4 * 5.4f64)).ln();
        assert!(
            (near.llr - want).abs() < 1e-12 && near.call == Call::More,
            "{near:?}"
        );
        // the mirror: 8 and 10 (mean 9): 3 ln((6 + 81)/(6 + 1)) = +7.56, bad
        let bad = judge(&g, &b, &[8.0, 10.0], 30, &two);
        assert!((bad.llr - 3.0 * (87.0f64 / 7.0).ln()).abs() < 1e-12 && bad.call == Call::Bad);
    }

    #[test]
    fn the_references_are_ready_when_the_step_is_three_standard_errors() {
        let two = Rule {
            min_refs: 2,
            ..RULE
        };
        // σ² = 2 pooled, se of the step √(2/2 + 2/2) = √2: 10 is 7 se, 4 is 2.8 se
        assert!(references_ready(&[-1.0, 1.0], &[9.0, 11.0], &two));
        assert!(!references_ready(&[-1.0, 1.0], &[3.0, 5.0], &two));
        assert!(
            !references_ready(&[-1.0, 1.0], &[9.0, 11.0], &RULE),
            "fewer than 12 runs"
        );
        let any = Rule {
            step_se: 0.0,
            ..two
        };
        assert!(references_ready(&[-1.0, 1.0], &[-1.0, 1.0], &any));
        assert!(
            !references_ready(&[1.0], &[2.0], &RULE),
            "no σ from one run each"
        );
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
    fn the_nearer_mean_of_the_fixed_rule() {
        assert_eq!(nearest(&[-1.0, 1.0], &[9.0, 11.0], &[7.0]), Call::Bad);
        assert_eq!(nearest(&G, &B, &[101.0]), Call::Good);
    }
}
