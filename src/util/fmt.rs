//! Number formatting for reports: M for values ≥ 1,000,000, K for ≥ 1,000.

pub use crate::util::markup::{html_text, md_code, md_text};

/// Two decimals, rounded half-up on the number's shortest decimal form (so 5,100 is 5.10K, not
/// 5.09K from a binary artefact), K and M promoted at the boundary: 999,999 is 1.00M, 999.995 is
/// 1.00K. Below 0.1 three significant digits (0.0012 is 0.00120, not 0.00: a latency in seconds
/// is no zero), below 0.0001 an exponent (1.23e-7).
pub fn km(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v != 0.0 && v.abs() < 1e-4 {
        return format!("{v:.2e}");
    }
    if v != 0.0 && v.abs() < 0.1 {
        // 0.0995 rounds to 0.100 at three digits: said as 0.10, like 0.1
        let decimals = (2 - v.abs().log10().floor() as i32).max(0) as usize;
        let t = format!("{v:.decimals$}");
        if t.trim_start_matches('-')
            .parse::<f64>()
            .is_ok_and(|r| r < 0.1)
        {
            return t;
        }
    }
    // beyond a billion M the digits say nothing: an exponent, two decimals (1.00e300)
    if v.abs() >= 1e15 {
        return format!("{v:.2e}");
    }
    let sign = if v < 0.0 { "-" } else { "" };
    // the shortest decimal text that reads back as this f64 (Display never uses an exponent)
    let text = format!("{}", v.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let plain = round2(int, frac, 0);
    let out = if plain.len() < "1000.00".len() {
        plain
    } else {
        let k = round2(int, frac, 3);
        if k.len() < "1000.00".len() {
            format!("{k}K")
        } else {
            format!("{}M", round2(int, frac, 6))
        }
    };
    if out.trim_end_matches(['K', 'M']) == "0.00" {
        out
    } else {
        format!("{sign}{out}")
    }
}

/// A number for machine-readable files (CSV): the shortest text that reads back as the same f64,
/// with an exponent outside 1e-5 … 1e16 (`1e-300`, not 300 digits).
pub fn csv_num(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || (1e-5..1e16).contains(&a) {
        v.to_string()
    } else {
        format!("{v:e}")
    }
}

/// `int.frac / 10^shift`, rounded half-up to two decimals, as text.
fn round2(int: &str, frac: &str, shift: usize) -> String {
    let (i, f) = if shift >= int.len() {
        (
            "0".to_string(),
            format!("{}{int}{frac}", "0".repeat(shift - int.len())),
        )
    } else {
        (
            int[..int.len() - shift].to_string(),
            format!("{}{frac}", &int[int.len() - shift..]),
        )
    };
    let f = format!("{f:0<3}");
    let mut digits: Vec<u8> = format!("{i}{}", &f[..2]).into_bytes();
    if f.as_bytes()[2] >= b'5' {
        // add one hundredth, carrying
        let mut k = digits.len();
        loop {
            if k == 0 {
                digits.insert(0, b'1');
                break;
            }
            k -= 1;
            if digits[k] == b'9' {
                digits[k] = b'0';
            } else {
                digits[k] += 1;
                break;
            }
        }
    }
    let s = String::from_utf8(digits).unwrap_or_default();
    let (a, b) = s.split_at(s.len() - 2);
    let a = a.trim_start_matches('0');
    format!("{}.{b}", if a.is_empty() { "0" } else { a })
}

/// A tick label by the report's rule: K at 1,000 and M at 1,000,000, with only the decimals the
/// tick step needs (`70K`, `2.5M`, `0.25`; an integer axis gets integers).
pub fn tick(v: f64, step: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let big = v.abs().max(step.abs());
    let (div, suffix) = if big >= 1e6 {
        (1e6, "M")
    } else if big >= 1e3 {
        (1e3, "K")
    } else {
        (1.0, "")
    };
    let s = step.abs() / div;
    let mut decimals = 0;
    while decimals < 6 && (s * 10f64.powi(decimals)).fract().abs() > 1e-6 {
        decimals += 1;
    }
    let x = v / div;
    if x.abs() < 1e-12 {
        return "0".into();
    }
    format!("{x:.*}{suffix}", decimals as usize)
}

#[cfg(test)]
mod tests {
    use super::km;

    #[test]
    fn ticks_take_k_and_m_and_only_the_decimals_the_step_needs() {
        use super::tick;
        for (v, step, want) in [
            (70000.0, 10000.0, "70K"),
            (0.0, 10000.0, "0"),
            (2_500_000.0, 500_000.0, "2.5M"),
            (0.25, 0.05, "0.25"),
            (30.0, 10.0, "30"),
            (1500.0, 250.0, "1.50K"),
            (1500.0, 500.0, "1.5K"),
        ] {
            assert_eq!(tick(v, step), want, "{v} {step}");
        }
        assert_eq!(
            super::html_text("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn k_and_m_round_half_up_on_the_decimal_value_and_promote_at_the_boundary() {
        let cases: &[(f64, &str)] = &[
            (0.5, "0.50"),
            (0.004, "0.00400"),
            (0.005, "0.00500"),
            (0.0012, "0.00120"),
            (0.012345, "0.0123"),
            (0.0995, "0.0995"),
            (0.09996, "0.10"),
            (0.1, "0.10"),
            (0.0001, "0.000100"),
            (0.0000123, "1.23e-5"),
            (-0.0012, "-0.00120"),
            (0.0, "0.00"),
            (999.0, "999.00"),
            (999.994, "999.99"),
            (999.995, "1.00K"),
            (1_000.0, "1.00K"),
            (3_328.0, "3.33K"),
            (5_100.0, "5.10K"),
            (12_345.678, "12.35K"),
            (20_400.0, "20.40K"),
            (999_994.0, "999.99K"),
            (999_995.0, "1.00M"),
            (999_999.0, "1.00M"),
            (1_000_000.0, "1.00M"),
            (1_218_093.0, "1.22M"),
            (2_500_000.0, "2.50M"),
            (1_234_567_890.0, "1234.57M"),
            (-3_328.0, "-3.33K"),
            (-0.001, "-0.00100"),
            (f64::NAN, "n/a"),
            (f64::INFINITY, "n/a"),
            (999_999_999_999_999.0, "1000000000.00M"),
            (1e15, "1.00e15"),
            (1e300, "1.00e300"),
            (-2.5e20, "-2.50e20"),
        ];
        for (v, want) in cases {
            assert_eq!(km(*v), *want, "{v}");
        }
    }

    #[test]
    fn csv_numbers_read_back_exactly_and_take_an_exponent_at_the_extremes() {
        use super::csv_num;
        for (v, want) in [
            (12.5, "12.5"),
            (3.0, "3"),
            (0.0, "0"),
            (1e-300, "1e-300"),
            (1e300, "1e300"),
            (-4.2e-7, "-4.2e-7"),
            (123456.789, "123456.789"),
        ] {
            assert_eq!(csv_num(v), want);
            assert_eq!(csv_num(v).parse::<f64>().unwrap(), v);
        }
    }
}
