//! Durations as people read them: µs below a millisecond, seconds from ten seconds on.

/// A duration in the unit hyperfine would pick: µs below 1 ms, s from 10 s.
pub fn dur(ms: f64) -> String {
    dur_in(ms, ms)
}

/// `ms` in the unit chosen for `scale` (so a mean and its σ share one unit).
fn dur_in(ms: f64, scale: f64) -> String {
    if !ms.is_finite() {
        return "n/a".into();
    }
    // from 1e16 ms (some 300,000 years) the digits say nothing (`1e300` was 300 of them)
    if scale.abs() >= 1e16 {
        return format!("{:.2e} s", ms / 1e3);
    }
    if scale.abs() < 1.0 {
        format!("{:.1} µs", ms * 1e3)
    } else if scale.abs() >= 10_000.0 {
        format!("{:.3} s", ms / 1e3)
    } else {
        format!("{ms:.2} ms")
    }
}

/// `mean ± σ`, both in the mean's unit.
pub fn dur_pm(mean: f64, sd: f64) -> String {
    format!("{} ± {}", dur_in(mean, mean), dur_in(sd, mean))
}

/// `1 point`, `3 points`: a count with its noun in the number it takes (`-s` plurals).
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Whether a numeral that parsed to `v` was a number too small for a 64-bit float: it reads as
/// 0 though its digits are not all zeros (`1e-400`, `-2.5e-330`, `1_0e-400`).
pub fn underflows(numeral: &str, v: f64) -> bool {
    let mantissa = numeral.split(['e', 'E']).next().unwrap_or("");
    v == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_duration_beyond_any_run_is_an_exponent_and_not_a_number_is_n_a() {
        use super::{dur, dur_pm};
        assert_eq!(dur(0.5), "500.0 µs");
        assert_eq!(dur(12.345), "12.35 ms");
        assert_eq!(dur(12_345.0), "12.345 s");
        assert_eq!(dur(1e300), "1.00e297 s");
        assert_eq!(dur(f64::INFINITY), "n/a");
        assert_eq!(dur(f64::NAN), "n/a");
        assert_eq!(dur_pm(1e300, 1e299), "1.00e297 s ± 1.00e296 s");
    }
}
