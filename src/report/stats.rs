//! Statistics: mean, sample standard deviation, CV, and quantiles that stay exact for small inputs
//! and bounded in memory for large ones.

use std::collections::BTreeMap;

pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Sample standard deviation (n − 1); none for fewer than two values.
pub fn sd(v: &[f64]) -> Option<f64> {
    let m = mean(v)?;
    (v.len() >= 2)
        .then(|| (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt())
}

/// Coefficient of variation in percent.
pub fn cv_percent(v: &[f64]) -> Option<f64> {
    let (m, s) = (mean(v)?, sd(v)?);
    (m != 0.0).then(|| s / m * 100.0)
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
