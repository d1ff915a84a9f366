//! Statistics: mean, sample standard deviation, CV, and quantiles that stay exact for small inputs
//! and bounded in memory for large ones.

use std::collections::BTreeMap;

/// The mean: the plain sum over n (exact for ordinary values), or, when that sum overflows
/// (values near 1e308), the mean updated one value at a time.
pub fn mean(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let plain = v.iter().sum::<f64>() / v.len() as f64;
    if plain.is_finite() || v.iter().any(|x| !x.is_finite()) {
        return Some(plain);
    }
    let mut m = 0.0;
    for (i, x) in v.iter().enumerate() {
        // each term divided first: `x − m` of −1.7e308 and 1.7e308 overflows
        let k = (i + 1) as f64;
        m += x / k - m / k;
    }
    Some(m)
}

/// Sample standard deviation (n − 1); none for fewer than two values. Two passes (exact for
/// ordinary values); scaled by the largest magnitude when the squares would overflow, or
/// underflow (values below about 1e-140: 1e-300, 2e-300, 3e-300 have sd 1e-300, not 0).
pub fn sd(v: &[f64]) -> Option<f64> {
    let m = mean(v)?;
    if v.len() < 2 {
        return None;
    }
    let plain = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt();
    let scale = v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    if (plain.is_finite() && !(scale > 0.0 && scale < 1e-140)) || !m.is_finite() {
        return Some(plain);
    }
    let ms = m / scale;
    let s2 = v.iter().map(|x| (x / scale - ms).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    Some(s2.sqrt() * scale)
}

/// Coefficient of variation in percent.
pub fn cv_percent(v: &[f64]) -> Option<f64> {
    let (m, s) = (mean(v)?, sd(v)?);
    // a spread relative to a mean at or below zero says nothing (a negative CV)
    (m > 0.0).then(|| s / m * 100.0)
}

/// The two-sided 95 % quantile of Student's t with `df` degrees of freedom (df may be
/// fractional, as Welch's is).
pub fn t975(df: f64) -> Option<f64> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if df.is_nan() || df <= 0.0 {
        return None;
    }
    StudentsT::new(0.0, 1.0, df)
        .ok()
        .map(|t| t.inverse_cdf(0.975))
}

/// Student's t quantile at probability `p` with `df` degrees of freedom.
pub fn t_quantile(df: f64, p: f64) -> Option<f64> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if df.is_nan() || df <= 0.0 || !(0.0..1.0).contains(&p) {
        return None;
    }
    StudentsT::new(0.0, 1.0, df).ok().map(|t| t.inverse_cdf(p))
}

/// The mean's 95 % confidence interval, mean ± t(n − 1) · sd / √n; none with fewer than two
/// values (no spread to judge by). Where no value is below zero (a throughput, a time) the
/// interval stops at 0: two runs of 100 and 300 ops/s give 0 … 1.47K, not −1.07K … 1.47K (the
/// mean of such a quantity is not below 0, so the cut interval covers it as often).
pub fn ci95(v: &[f64]) -> Option<(f64, f64)> {
    let (m, s) = (mean(v)?, sd(v)?);
    let h = t975(v.len() as f64 - 1.0)? * s / (v.len() as f64).sqrt();
    let lo = if v.iter().all(|x| *x >= 0.0) {
        (m - h).max(0.0)
    } else {
        m - h
    };
    Some((lo, m + h))
}

/// The half-width of the mean's 95 % confidence interval, in percent of the mean.
pub fn ci95_half_width_percent(v: &[f64]) -> Option<f64> {
    let (m, s) = (mean(v)?, sd(v)?);
    if m == 0.0 {
        return None;
    }
    let n = v.len() as f64;
    Some(t975(n - 1.0)? * s / n.sqrt() / m.abs() * 100.0)
}

/// The difference of two means (b − a) and its 95 % confidence interval by Welch's t.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Diff {
    pub d: f64,
    /// None: fewer than two values on a side (no spread to judge by).
    pub ci: Option<(f64, f64)>,
    /// Welch–Satterthwaite degrees of freedom (None when both sides have no variance).
    pub df: Option<f64>,
}

impl Diff {
    /// The interval excludes zero (with no spread on either side, any difference is exact).
    pub fn significant(&self) -> bool {
        self.ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

/// A power of two that brings the largest finite magnitude of `a` and `b` into [1, 2): both
/// Welch's t and the ratio's interval square their spreads twice (s⁴ overflows past 1e77 and
/// underflows below 1e-77), and both are unchanged by a common scale, which a power of two
/// applies exactly.
fn unit_scale(a: &[f64], b: &[f64]) -> f64 {
    let most = a
        .iter()
        .chain(b)
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()));
    if most == 0.0 {
        return 1.0;
    }
    // (a subnormal largest value is left as it is: 2^1074 is no f64)
    2f64.powi(-(most.log2().floor() as i32).clamp(-1000, 1000))
}

fn scaled(v: &[f64], k: f64) -> Vec<f64> {
    v.iter().map(|x| x * k).collect()
}

/// Welch's interval of mean(b) − mean(a). None when a side has no values.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Diff> {
    let k = unit_scale(a, b);
    let w = welch_unit(&scaled(a, k), &scaled(b, k))?;
    Some(Diff {
        d: w.d / k,
        ci: w.ci.map(|(lo, hi)| (lo / k, hi / k)),
        df: w.df,
    })
}

/// [`welch`] on values of magnitude about 1.
fn welch_unit(a: &[f64], b: &[f64]) -> Option<Diff> {
    let (ma, mb) = (mean(a)?, mean(b)?);
    let d = mb - ma;
    let (Some(sa), Some(sb)) = (sd(a), sd(b)) else {
        return Some(Diff {
            d,
            ci: None,
            df: None,
        });
    };
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (qa, qb) = (sa * sa / na, sb * sb / nb);
    let se2 = qa + qb;
    if se2 == 0.0 {
        return Some(Diff {
            d,
            ci: Some((d, d)),
            df: None,
        });
    }
    let df = se2 * se2 / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
    let h = t975(df)? * se2.sqrt();
    Some(Diff {
        d,
        ci: Some((d - h, d + h)),
        df: Some(df),
    })
}

/// The 95 % interval of the change from `a` to `b`, in percent of |mean(a)|: of the ratio of
/// means on the log scale where both are positive ([`ratio_ci_pct`]), else Welch's interval of
/// the difference (a level below zero: −50 → −60); none where mean(a) is 0 or it overflows.
pub fn change_ci_pct(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    ratio_ci_pct(a, b)
        .or_else(|| {
            let ma = mean(a)?;
            let (lo, hi) = welch(a, b)?.ci?;
            (ma != 0.0).then(|| (lo / ma.abs() * 100.0, hi / ma.abs() * 100.0))
        })
        .filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
}

/// The 95 % interval of the change mean(b)/mean(a) − 1, in percent, on the log scale: log of
/// the ratio of means ± t·se, se² = s²a/(na·ā²) + s²b/(nb·b̄²) (the delta method), t at the
/// Welch–Satterthwaite df of those two terms, then back with exp. It stays within
/// (−100 %, ∞) as a ratio of positive quantities must (a difference of means divided by a mean
/// can pass −100 %). None unless both means are positive and both sides have two values or more.
pub fn ratio_ci_pct(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    ratio_ci_pct_at(a, b, 0.95)
}

/// [`ratio_ci_pct`] at another two-sided confidence (0.95: the 95 % interval).
pub fn ratio_ci_pct_at(a: &[f64], b: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let k = unit_scale(a, b);
    let (a, b) = (&scaled(a, k)[..], &scaled(b, k)[..]);
    let (ma, mb) = (mean(a)?, mean(b)?);
    if ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let (sa, sb) = (sd(a)?, sd(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (qa, qb) = (sa * sa / (na * ma * ma), sb * sb / (nb * mb * mb));
    let r = (mb / ma).ln();
    let se2 = qa + qb;
    if se2 == 0.0 {
        // no spread on either side: the change is exact
        let x = (mb - ma) / ma * 100.0;
        return Some((x, x));
    }
    let df = se2 * se2 / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
    let h = t_quantile(df, 0.5 + confidence / 2.0)? * se2.sqrt();
    Some((((r - h).exp() - 1.0) * 100.0, ((r + h).exp() - 1.0) * 100.0))
}

/// The pooled standard deviation of several groups, each about its own mean:
/// √(Σ Σ (x − x̄ᵍ)² / Σ (nᵍ − 1)). Groups of one value add nothing; none without a degree of
/// freedom.
pub fn pooled_sd(groups: &[&[f64]]) -> Option<f64> {
    let (mut ss, mut df) = (0.0, 0usize);
    for g in groups.iter().filter(|g| g.len() >= 2) {
        let m = mean(g)?;
        ss += g.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
        df += g.len() - 1;
    }
    (df > 0).then(|| (ss / df as f64).sqrt())
}

/// Wald's sequential probability ratio test between two normal means with a common σ:
/// H₀ μ = `mu0` against H₁ μ = `mu1`. The log-likelihood ratio of the samples,
/// Σ ln(f₁(x)/f₀(x)) = (μ₁ − μ₀)/σ² · Σ (x − (μ₀ + μ₁)/2).
pub fn sprt_llr(x: &[f64], mu0: f64, mu1: f64, sigma: f64) -> f64 {
    let mid = (mu0 + mu1) / 2.0;
    (mu1 - mu0) / (sigma * sigma) * x.iter().map(|v| v - mid).sum::<f64>()
}

/// Wald's boundaries for errors α (calling H₁ when H₀ holds) and β (the reverse): accept H₀
/// when the log-likelihood ratio ≤ ln(β/(1 − α)), H₁ when it ≥ ln((1 − β)/α).
pub fn sprt_bounds(alpha: f64, beta: f64) -> (f64, f64) {
    ((beta / (1.0 - alpha)).ln(), ((1.0 - beta) / alpha).ln())
}

/// SplitMix64: a seeded generator, so that simulations and trials are the same on every
/// machine.
pub struct SplitMix(pub u64);

impl SplitMix {
    fn bits53(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) >> 11
    }

    /// A uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.bits53() as f64 / (1u64 << 53) as f64
    }

    /// A uniform in (0, 1): never 0, so its logarithm is finite.
    pub fn open01(&mut self) -> f64 {
        (self.bits53() as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.open01(), self.open01());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// The median (mean of the two middle values for an even count).
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Median absolute deviation from the median (unscaled).
pub fn mad(v: &[f64]) -> Option<f64> {
    let m = median(v)?;
    median(&v.iter().map(|x| (x - m).abs()).collect::<Vec<_>>())
}

/// The modified Z-score above which a sample is an outlier (Iglewicz and Hoaglin; hyperfine
/// uses the same rule).
pub const OUTLIER_Z: f64 = 3.5;

/// The fewest samples the outlier rule judges: the MAD of three or four values is one or two of
/// their differences (20.90, 20.92, 21.77 gave MAD 0.02 and called 21.77 an outlier at 42 MADs).
pub const OUTLIER_MIN_SAMPLES: usize = 5;

/// Indices of the outliers: |0.6745 (x − median) / MAD| > 3.5. With MAD = 0 (half the samples
/// equal), or fewer than [`OUTLIER_MIN_SAMPLES`], nothing is called an outlier: the rule cannot
/// tell.
pub fn outliers(v: &[f64]) -> Vec<usize> {
    if v.len() < OUTLIER_MIN_SAMPLES {
        return Vec::new();
    }
    let (Some(m), Some(d)) = (median(v), mad(v)) else {
        return Vec::new();
    };
    if d == 0.0 {
        return Vec::new();
    }
    v.iter()
        .enumerate()
        .filter(|(_, x)| (0.6745 * (*x - m) / d).abs() > OUTLIER_Z)
        .map(|(i, _)| i)
        .collect()
}

/// How many times `slow` takes longer than `fast` (ratio of means), with its standard error by
/// propagation of the relative standard deviations: r · √((σs/μs)² + (σf/μf)²). The error is
/// `None` when either side has no spread estimate (n < 2).
pub fn ratio_with_error(
    slow: (f64, Option<f64>),
    fast: (f64, Option<f64>),
) -> Option<(f64, Option<f64>)> {
    let (ms, mf) = (slow.0, fast.0);
    if mf == 0.0 || !ms.is_finite() || !mf.is_finite() {
        return None;
    }
    let r = ms / mf;
    let err = match (slow.1, fast.1) {
        (Some(ss), Some(sf)) if ms != 0.0 => {
            Some(r * ((ss / ms).powi(2) + (sf / mf).powi(2)).sqrt())
        }
        _ => None,
    };
    Some((r, err))
}

/// Exact up to `EXACT` values (linear interpolation, as numpy's default); past that, a log-bucket
/// histogram with 0.1 % relative resolution, so memory stays bounded.
pub struct Quantile {
    exact: Vec<f64>,
    buckets: BTreeMap<i64, u64>,
    n: u64,
}

const EXACT: usize = 100_000;
const STEP: f64 = 0.001;

impl Default for Quantile {
    fn default() -> Self {
        Self::new()
    }
}

impl Quantile {
    pub fn new() -> Self {
        Quantile {
            exact: Vec::new(),
            buckets: BTreeMap::new(),
            n: 0,
        }
    }

    fn bucket(v: f64) -> i64 {
        if v <= 0.0 {
            i64::MIN
        } else {
            (v.ln() / STEP.ln_1p()).floor() as i64
        }
    }

    pub fn push(&mut self, v: f64) {
        self.n += 1;
        if self.buckets.is_empty() && self.exact.len() < EXACT {
            self.exact.push(v);
            return;
        }
        for x in self.exact.drain(..) {
            *self.buckets.entry(Self::bucket(x)).or_insert(0) += 1;
        }
        *self.buckets.entry(Self::bucket(v)).or_insert(0) += 1;
    }

    /// Whether the answer is exact.
    pub fn is_exact(&self) -> bool {
        self.buckets.is_empty()
    }

    pub fn quantile(&mut self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        if self.buckets.is_empty() {
            self.exact.sort_by(|a, b| a.total_cmp(b));
            let pos = q * (self.exact.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            return Some(self.exact[lo] + (self.exact[hi] - self.exact[lo]) * (pos - lo as f64));
        }
        let target = (q * (self.n - 1) as f64).floor() as u64;
        let mut seen = 0;
        for (b, c) in &self.buckets {
            seen += c;
            if seen > target {
                if *b == i64::MIN {
                    return Some(0.0);
                }
                let base = STEP.ln_1p();
                return Some(((*b as f64 + 0.5) * base).exp());
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    /// −50 → −60 (sd 0.2, n 3 each): no ratio of negative means, so Welch's: difference −10,
    /// se √(0.04/3 · 2) = 0.16330, df 4, t 2.7764: −10 ± 0.45339, over |−50| → −20.907 …
    /// −19.093 %. Positive levels keep the log-ratio interval.
    #[test]
    fn a_change_of_levels_below_zero_has_welchs_interval() {
        let (lo, hi) = change_ci_pct(&[-50.0, -50.2, -49.8], &[-60.0, -60.2, -59.8]).unwrap();
        assert!(
            (lo + 20.907).abs() < 0.001 && (hi + 19.093).abs() < 0.001,
            "{lo} {hi}"
        );
        let (a, b) = ([10.0, 12.0, 14.0], [15.0, 16.0, 17.0]);
        assert_eq!(change_ci_pct(&a, &b), ratio_ci_pct(&a, &b));
        assert_eq!(change_ci_pct(&[0.0, 0.0], &[1.0, 2.0]), None);
    }

    /// 100 and 300: mean 200, sd 141.42, t(1) = 12.706, half-width 12.706 · 141.42 / √2 =
    /// 1270.6; no value is negative, so the interval is 0 … 1470.6. With −100 and 300 it is
    /// 100 ± 12.706 · 282.84 / √2 = −2441.2 … 2641.2, not cut.
    #[test]
    fn an_interval_of_values_never_negative_stops_at_zero() {
        let (lo, hi) = ci95(&[100.0, 300.0]).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 1470.6).abs() < 0.1, "{hi}");
        let (lo, hi) = ci95(&[-100.0, 300.0]).unwrap();
        assert!(
            (lo + 2441.2).abs() < 0.1 && (hi - 2641.2).abs() < 0.1,
            "{lo} {hi}"
        );
        // a tight interval is not touched
        let (lo, hi) = ci95(&[10.0, 10.2, 9.8]).unwrap();
        assert!(
            (lo - 9.503).abs() < 0.001 && (hi - 10.497).abs() < 0.001,
            "{lo} {hi}"
        );
    }

    /// The squares of tiny values underflow: scaled, the spread survives.
    #[test]
    fn sd_of_tiny_values_is_not_zero() {
        use super::sd;
        let s = sd(&[1e-300, 2e-300, 3e-300]).unwrap();
        assert!((s / 1e-300 - 1.0).abs() < 1e-12, "{s:e}");
        let s = sd(&[1e-170, 3e-170]).unwrap();
        assert!((s / (2f64.sqrt() * 1e-170) - 1.0).abs() < 1e-12, "{s:e}");
        assert_eq!(sd(&[0.0, 0.0]), Some(0.0));
        assert_eq!(sd(&[1.0, 2.0, 3.0]), Some(1.0));
    }

    #[test]
    fn pooled_sd_and_walds_test() {
        use super::*;
        // squares 2 + 8 about the means 0 and 12, over 1 + 2 degrees of freedom
        let s = pooled_sd(&[&[-1.0, 1.0], &[10.0, 12.0, 14.0], &[5.0]]).unwrap();
        assert!((s - (10.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(pooled_sd(&[&[1.0], &[2.0]]), None);
        // (10 − 0)/2 · ((1 − 5) + (3 − 5)) = −30
        assert!((sprt_llr(&[1.0, 3.0], 0.0, 10.0, 2f64.sqrt()) + 30.0).abs() < 1e-12);
        let (lo, hi) = sprt_bounds(0.01, 0.01);
        assert!((lo + 99f64.ln()).abs() < 1e-12 && (hi - 99f64.ln()).abs() < 1e-12);
        let (lo, hi) = sprt_bounds(0.05, 0.2);
        assert!((lo - (0.2f64 / 0.95).ln()).abs() < 1e-12 && (hi - 16f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn huge_values_keep_a_finite_mean_and_sd() {
        use super::*;
        let v = [1e308, 1e308, 1e308];
        assert_eq!(mean(&v), Some(1e308));
        assert_eq!(sd(&v), Some(0.0));
        let w = [1e308, -1e308];
        assert_eq!(mean(&w), Some(0.0));
        // a sum past the float, then a value of the other sign: the step `x − m` would be
        // −3.4e308 (−inf); (1.7e308 · 2 − 1.7e308) / 3
        let m = mean(&[1.7e308, 1.7e308, -1.7e308]).unwrap();
        assert!((m / (1.7e308 / 3.0) - 1.0).abs() < 1e-12, "{m}");
        let s = sd(&w).unwrap();
        assert!(
            s.is_finite() && (s / 1.4142135623730951e308 - 1.0).abs() < 1e-12,
            "{s}"
        );
    }

    #[test]
    fn welch_and_the_ratio_interval_hold_at_the_ends_of_a_64_bit_float() {
        use super::*;
        let (a, b) = ([10.0, 12.0, 14.0], [15.0, 16.0, 17.0]);
        let w = welch(&a, &b).unwrap();
        let r = ratio_ci_pct(&a, &b).unwrap();
        // the same samples times 1e200 and 1e-200: the same df and percentages, d and its
        // interval scaled (s⁴ is 1e800 and 1e-800 there: inf/inf and 0/0 before)
        for k in [1e200, 1e-200, 1e300, 1e-300] {
            let (ak, bk) = (a.map(|x| x * k), b.map(|x| x * k));
            let wk = welch(&ak, &bk).unwrap();
            let (df, dfk) = (w.df.unwrap(), wk.df.unwrap());
            assert!((dfk - df).abs() < 1e-9 * df, "{k}: df {dfk} vs {df}");
            let rel = |x: f64, y: f64| ((x - y) / y).abs() < 1e-9;
            assert!(rel(wk.d, w.d * k), "{k}: d {}", wk.d);
            let ((lo, hi), (lok, hik)) = (w.ci.unwrap(), wk.ci.unwrap());
            assert!(rel(lok, lo * k) && rel(hik, hi * k), "{k}: {lok} … {hik}");
            assert_eq!(wk.significant(), w.significant());
            let rk = ratio_ci_pct(&ak, &bk).unwrap();
            assert!(rel(rk.0, r.0) && rel(rk.1, r.1), "{k}: {rk:?} vs {r:?}");
        }
        // no spread at 1e-300 is still no spread (not an underflow read as exact)
        let z = welch(&[1e-300, 2e-300, 3e-300], &[1e-300, 2e-300, 3e-300]).unwrap();
        assert_eq!(z.d, 0.0);
        assert!(!z.significant(), "{z:?}");
    }

    #[test]
    fn welch_interval_on_hand_computed_samples() {
        use super::*;
        // a 10 12 14 (mean 12, var 4), b 15 16 17 (mean 16, var 1): d = 4,
        // se² = 4/3 + 1/3 = 5/3, df = (5/3)² / ((4/3)²/2 + (1/3)²/2) = 2.941176
        let w = welch(&[10.0, 12.0, 14.0], &[15.0, 16.0, 17.0]).unwrap();
        assert_eq!(w.d, 4.0);
        let df = w.df.unwrap();
        assert!((df - 2.941176).abs() < 1e-5, "{df}");
        // t(0.975; 2.94) lies between t(3) = 3.182 and t(2) = 4.303, near t(3)
        let t = t975(df).unwrap();
        assert!(t > 3.182 && t < 3.25, "{t}");
        let (lo, hi) = w.ci.unwrap();
        let h = t * (5.0f64 / 3.0).sqrt();
        assert!((lo - (4.0 - h)).abs() < 1e-9 && (hi - (4.0 + h)).abs() < 1e-9);
        // 4 ± 4.155: the interval holds 0, not significant
        assert!(!w.significant(), "{lo} … {hi}");
        // a 10 11 12, b 15 16 17: d = 5, se² = 2/3, df = 4, t = 2.776 → 5 ± 2.267
        let s2 = welch(&[10.0, 11.0, 12.0], &[15.0, 16.0, 17.0]).unwrap();
        assert!((s2.df.unwrap() - 4.0).abs() < 1e-9);
        let (lo, hi) = s2.ci.unwrap();
        assert!(
            (lo - 2.733).abs() < 1e-3 && (hi - 7.267).abs() < 1e-3,
            "{lo} {hi}"
        );
        assert!(s2.significant());
        // equal means: an interval around 0, not significant
        let e = welch(&[10.0, 12.0, 14.0], &[11.0, 12.0, 13.0]).unwrap();
        assert_eq!(e.d, 0.0);
        assert!(!e.significant());
        let (lo, hi) = e.ci.unwrap();
        assert!(lo < 0.0 && hi > 0.0 && (lo + hi).abs() < 1e-9);
        // n = 1 on a side: a difference, no interval, never significant
        let one = welch(&[10.0], &[20.0, 21.0]).unwrap();
        assert_eq!((one.d, one.ci), (10.5, None));
        assert!(!one.significant());
        // zero variance on both sides: exact; equal values: no change
        let z = welch(&[5.0, 5.0], &[6.0, 6.0, 6.0]).unwrap();
        assert_eq!((z.ci, z.df), (Some((1.0, 1.0)), None));
        assert!(z.significant());
        assert!(!welch(&[5.0, 5.0], &[5.0, 5.0]).unwrap().significant());
        // zero variance on one side only: Welch with the other side's df
        let h1 = welch(&[5.0, 5.0, 5.0], &[6.0, 7.0, 8.0]).unwrap();
        assert!((h1.df.unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(welch(&[], &[1.0]), None);
    }

    #[test]
    fn student_t_and_the_mean_s_confidence_interval_on_hand_computed_samples() {
        use super::*;
        // tables: t(0.975; 1) = 12.706, t(4) = 2.776, t(30) = 2.042, t(∞) → 1.960
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (30.0, 2.042),
            (1e6, 1.960),
        ] {
            assert!(
                (t975(df).unwrap() - t).abs() < 1e-3,
                "df {df}: {:?}",
                t975(df)
            );
        }
        assert_eq!(t975(0.0), None);
        assert_eq!(t975(f64::NAN), None);
        // 10 12 14: mean 12, sd 2, n 3 → 4.303 × 2 / √3 = 4.969, 41.41 % of 12
        let h = ci95_half_width_percent(&[10.0, 12.0, 14.0]).unwrap();
        assert!((h - 41.41).abs() < 0.01, "{h}");
        assert_eq!(ci95_half_width_percent(&[5.0]), None);
        assert_eq!(ci95_half_width_percent(&[0.0, 0.0]), None);
    }

    #[test]
    fn median_mad_outliers_and_ratio_on_hand_computed_samples() {
        use super::*;
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
        // |x − 3| = 2 1 0 1 97 → MAD 1; z(100) = 0.6745 × 97 = 65.4, z(1) = 1.349
        let v = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert_eq!(mad(&v), Some(1.0));
        assert_eq!(outliers(&v), vec![4]);
        // median 2.5, MAD 1.5: z(9) = 0.6745 × 6.5 / 1.5 = 2.92, not an outlier
        assert_eq!(
            outliers(&[0.0, 1.0, 2.0, 3.0, 4.0, 9.0]),
            Vec::<usize>::new()
        );
        // median 2, MAD 1: z(10) = 0.6745 × 8 = 5.40
        assert_eq!(outliers(&[1.0, 2.0, 2.0, 3.0, 10.0]), vec![4]);
        // MAD 0: no call
        assert!(outliers(&[5.0, 5.0, 5.0, 9.0]).is_empty());
        // three or four values: no call (MAD 0.02 of 20.90, 20.92, 21.77)
        assert!(outliers(&[20.90, 20.92, 21.77]).is_empty());
        assert!(outliers(&[1.0, 2.0, 3.0, 100.0]).is_empty());
        // 11.8 ± 0.118 over 10 ± 0.1: 1.18 ± 1.18·√(0.01² + 0.01²) = 1.18 ± 0.016688
        let (r, e) = ratio_with_error((11.8, Some(0.118)), (10.0, Some(0.1))).unwrap();
        assert!((r - 1.18).abs() < 1e-12);
        assert!((e.unwrap() - 0.016_687_72).abs() < 1e-6, "{e:?}");
        // n = 1 on one side: a ratio, no error; a zero mean: nothing
        assert_eq!(
            ratio_with_error((2.0, None), (1.0, Some(0.1))),
            Some((2.0, None))
        );
        assert_eq!(ratio_with_error((2.0, Some(0.1)), (0.0, Some(0.1))), None);
    }

    use super::*;

    #[test]
    fn hand_computed() {
        let v = [10.0, 12.0, 14.0];
        assert_eq!(mean(&v), Some(12.0));
        assert_eq!(sd(&v), Some(2.0));
        assert!((cv_percent(&v).unwrap() - 16.666_666_666_666_668).abs() < 1e-12);
        assert_eq!(sd(&[5.0]), None);
        let mut q = Quantile::new();
        for x in 1..=20 {
            q.push(x as f64);
        }
        // numpy.percentile(range(1, 21), 95) == 19.05
        assert!((q.quantile(0.95).unwrap() - 19.05).abs() < 1e-9);
    }

    #[test]
    fn large_inputs_stay_within_the_bucket_resolution() {
        let mut q = Quantile::new();
        for i in 0..300_000u64 {
            q.push(1.0 + (i % 1000) as f64);
        }
        assert!(!q.is_exact());
        let p95 = q.quantile(0.95).unwrap();
        assert!((p95 - 951.0).abs() / 951.0 < 0.002, "{p95}");
    }
}
