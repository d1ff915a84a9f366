//! Number formatting for reports: M for values ≥ 1,000,000, K for ≥ 1,000.

/// Two decimals; K and M are truncated, not rounded, so a value is never shown larger than it is
/// (999,999 is 999.99K, not 1000.00K).
pub fn km(v: f64) -> String {
    let trunc = |x: f64| (x * 100.0).floor() / 100.0;
    let a = v.abs();
    if !v.is_finite() {
        "n/a".into()
    } else if a >= 1_000_000.0 {
        format!("{:.2}M", v.signum() * trunc(a / 1_000_000.0))
    } else if a >= 1_000.0 {
        format!("{:.2}K", v.signum() * trunc(a / 1_000.0))
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::km;

    #[test]
    fn k_and_m_boundaries() {
        assert_eq!(km(999.0), "999.00");
        assert_eq!(km(999.994), "999.99");
        assert_eq!(km(1_000.0), "1.00K");
        assert_eq!(km(12_345.678), "12.34K");
        assert_eq!(km(999_999.0), "999.99K");
        assert_eq!(km(1_000_000.0), "1.00M");
        assert_eq!(km(2_500_000.0), "2.50M");
        assert_eq!(km(0.5), "0.50");
        assert_eq!(km(f64::NAN), "n/a");
    }
}
