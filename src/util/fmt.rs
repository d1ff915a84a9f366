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
    if v != 0.0 && v.abs() < 0.1 {
        if let Some(t) = three_digits(v) {
            return t;
        }
    }
    // beyond a billion M the digits say nothing: an exponent, two decimals (1.00e300)
    if v.abs() >= 1e15 {
        return exponent2(v);
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
            let m = round2(int, frac, 6);
            // a billion M after rounding (999,999,999,999,999): the exponent, as from 1e15
            if m.len() >= "1000000000.00".len() {
                return exponent2(v);
            }
            format!("{m}M")
        }
    };
    if out.trim_end_matches(['K', 'M']) == "0.00" {
        out
    } else {
        format!("{sign}{out}")
    }
}

/// Two decimals as written in a tool's own table (nccl-tests' µs and GB/s), rounded half-up on
/// the number's shortest decimal form as [`km`] rounds (73.815 is 73.82, not 73.81 from a
/// binary artefact), without K or M: 1234.5 µs is 1234.50.
pub fn fixed2(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v.abs() >= 1e15 {
        return exponent2(v);
    }
    let text = format!("{}", v.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let out = round2(int, frac, 0);
    if v < 0.0 && out != "0.00" {
        format!("-{out}")
    } else {
        out
    }
}

/// An exponent with two decimals, rounded half-up on the number's shortest decimal form as
/// [`km`] rounds (1.125e15 is 1.13e15, where `{:.2e}` rounds the tie to even: 1.12e15), a
/// mantissa that rounds to 10 carried (9.995e15 is 1.00e16).
fn exponent2(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "" };
    let text = format!("{:e}", v.abs());
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let mut exp: i64 = exp.parse().unwrap_or(0);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut m = round2(int, frac, 0);
    if m.starts_with("10") {
        m = "1.00".into();
        exp += 1;
    }
    format!("{sign}{m}e{exp}")
}

/// A value below 0.1 with three significant digits, rounded half-up on its shortest decimal
/// form as `km` rounds (0.001235 is 0.00124); below 0.0001 (after rounding) with an exponent
/// (1.23e-5). None when it rounds up to 0.1 or more (0.09995: said as `km` says 0.10).
fn three_digits(v: f64) -> Option<String> {
    let sign = if v < 0.0 { "-" } else { "" };
    // the shortest decimal text that reads back as this f64 (Display never uses an exponent)
    let text = format!("{}", v.abs());
    let frac = text.split_once('.')?.1;
    let lead = frac.bytes().take_while(|&b| b == b'0').count();
    let digits: Vec<u8> = frac.bytes().skip(lead).map(|b| b - b'0').collect();
    let mut kept: Vec<u8> = (0..3)
        .map(|i| digits.get(i).copied().unwrap_or(0))
        .collect();
    let mut lead = lead;
    if digits.get(3).is_some_and(|&d| d >= 5) {
        // add one in the third place, carrying; 999 becomes 100 one place up
        let mut k = 3;
        loop {
            k -= 1;
            if kept[k] == 9 {
                kept[k] = 0;
                if k == 0 {
                    kept = vec![1, 0, 0];
                    lead = lead.checked_sub(1)?;
                    break;
                }
            } else {
                kept[k] += 1;
                break;
            }
        }
    }
    if lead == 0 {
        return None; // 0.1 or more
    }
    let d: String = kept.iter().map(|d| char::from(b'0' + d)).collect();
    Some(if lead >= 4 {
        // 1.23e-5: the exponent of the first significant digit
        format!("{sign}{}.{}e-{}", &d[..1], &d[1..], lead + 1)
    } else {
        format!("{sign}0.{}{d}", "0".repeat(lead))
    })
}

/// A change in percent, signed, two decimals; a change below 0.1 % keeps three significant
/// digits (`+0.00100 %`), so a significant change never reads `+0.00 %`.
pub fn signed_pct(d: f64) -> String {
    if d != 0.0 && d.is_finite() && d.abs() < 0.1 {
        if let Some(t) = three_digits(d) {
            return format!("{}{t} %", if d > 0.0 { "+" } else { "" });
        }
    }
    // beyond a billion billion percent the digits say nothing: an exponent (`+2.00e300 %`)
    if d.is_finite() && d.abs() >= 1e15 {
        return format!("{d:+.2e} %");
    }
    format!("{d:+.2} %")
}

/// An interval of changes in percent: `+0.00077 … +0.00123 %`.
pub fn signed_pct_range(lo: f64, hi: f64) -> String {
    format!(
        "{} … {}",
        signed_pct(lo).trim_end_matches(" %"),
        signed_pct(hi)
    )
}

/// A ratio as `km` writes a number, with `x` (`2.00e-5x`, `1.25x`, `16.67Kx`).
pub fn ratio(r: f64) -> String {
    format!("{}x", km(r))
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

/// The number a table cell begins with, as [`km`] writes it (`12.5`, `1.50K`, `2.00M`,
/// `5.00e-5`, `-3`): what a sortable table sorts it by. None where it begins with no number.
pub fn leading_number(s: &str) -> Option<f64> {
    let t = s.trim_start();
    let b = t.as_bytes();
    let digits = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let int_end = digits(i);
    if int_end == i {
        return None;
    }
    i = int_end;
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = digits(i + 1);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'-' | b'+')));
        let end = digits(i + 1 + sign);
        if end > i + 1 + sign {
            i = end;
        }
    }
    let v: f64 = t[..i].parse().ok()?;
    let scale = match b.get(i) {
        Some(b'K') => 1e3,
        Some(b'M') => 1e6,
        _ => 1.0,
    };
    Some(v * scale).filter(|v| v.is_finite())
}

/// A tick label by the report's rule: K at 1,000 and M at 1,000,000, with only the decimals the
/// tick step needs (`70K`, `2.5M`, `0.25`; an integer axis gets integers).
pub fn tick(v: f64, step: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let big = v.abs().max(step.abs());
    // from 10^15, as `km` writes the values: an exponent with the decimals the step needs
    // (`5e14`, `1.5e15`; it was `1500000000M`), on the whole of an axis that reaches 10^15
    if v.abs().max(step.abs() * 10.0) >= 1e15 {
        if v.abs() < step.abs() * 1e-6 {
            return "0".into();
        }
        let s = step.abs() / 10f64.powf(big.log10().floor());
        let mut decimals = 0;
        while decimals < 6 {
            let f = (s * 10f64.powi(decimals)).fract();
            if !(1e-6..=1.0 - 1e-6).contains(&f) {
                break;
            }
            decimals += 1;
        }
        return format!("{v:.*e}", decimals as usize);
    }
    let (div, suffix) = if big >= 1e6 {
        (1e6, "M")
    } else if big >= 1e3 {
        (1e3, "K")
    } else {
        (1.0, "")
    };
    let s = step.abs() / div;
    let x = v / div;
    // a step below 0.001 (5e-8 between ticks): each tick with an exponent, as the step needs
    if s > 0.0 && s < 1e-3 {
        if x.abs() < s * 1e-6 {
            return "0".into();
        }
        let mant = s / 10f64.powf(s.log10().floor());
        let decimals = if (mant - mant.round()).abs() < 1e-6 {
            1
        } else {
            2
        };
        return format!("{x:.decimals$e}");
    }
    let mut decimals = 0;
    while decimals < 6 && (s * 10f64.powi(decimals)).fract().abs() > 1e-6 {
        decimals += 1;
    }
    if x.abs() < 1e-12 {
        return "0".into();
    }
    format!("{x:.*}{suffix}", decimals as usize)
}

#[cfg(test)]
mod tests {
    use super::km;

    /// nccl-tests' tables: two decimals rounded half-up on the shortest decimal form, no K.
    #[test]
    fn fixed_two_decimals_round_half_up_without_k() {
        use super::fixed2;
        for (v, want) in [
            (73.815, "73.82"),
            (2.675, "2.68"),
            (0.125, "0.13"),
            (1234.5, "1234.50"),
            (-0.001, "0.00"),
            (-60.0, "-60.00"),
            (f64::NAN, "n/a"),
        ] {
            assert_eq!(fixed2(v), want, "{v}");
        }
    }

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
            (0.09995, "0.10"),
            (0.001235, "0.00124"),
            (0.00999951, "0.0100"),
            (0.00099995, "0.00100"),
            (0.0000999996, "0.000100"),
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
            (1e15, "1.00e15"),
            (1e300, "1.00e300"),
            // half-up on the decimal value, and promoted at the boundary (helper 62: 1.12e15,
            // 3.12e15, 1000000000.00M)
            (1_125_000_000_000_000.0, "1.13e15"),
            (3.125e15, "3.13e15"),
            (999_999_999_999_999.0, "1.00e15"),
            (9.995e15, "1.00e16"),
            (-1.125e15, "-1.13e15"),
            (1.5e-300, "1.50e-300"),
            (-2.5e20, "-2.50e20"),
        ];
        for (v, want) in cases {
            assert_eq!(km(*v), *want, "{v}");
        }
    }

    /// Ticks a step below 0.001 apart take an exponent (they all read `0` before); a change
    /// in percent below 0.1 % and a ratio keep three significant digits.
    #[test]
    fn tiny_ticks_changes_and_ratios_are_not_zero() {
        use super::{ratio, signed_pct, signed_pct_range, tick};
        let t: Vec<String> = [0.0, 5e-8, 1e-7, 1.5e-7]
            .iter()
            .map(|v| tick(*v, 5e-8))
            .collect();
        assert_eq!(t, ["0", "5.0e-8", "1.0e-7", "1.5e-7"]);
        assert_eq!(tick(5e-4, 2.5e-4), "5.00e-4");
        // what a sortable table sorts a cell by (helper 76: `5.00e-5` sorted as 5)
        use super::leading_number as n;
        assert_eq!(n("5.00e-5"), Some(5e-5));
        assert_eq!(n("2.00e15"), Some(2e15));
        assert_eq!(n("1.50K"), Some(1500.0));
        assert_eq!(n(" -2.5M (n=3)"), Some(-2.5e6));
        assert_eq!(n("12.30 ± 1.20"), Some(12.3));
        assert_eq!(n("7e"), Some(7.0));
        assert_eq!(n("1e999"), None);
        assert_eq!(n("— (n=1)"), None);
        assert_eq!(n("b_r0"), None);
        // from 10^15 an exponent, as the tables write the values (helper 76: `1500000000M`)
        let axis: Vec<String> = [0.0, 5e14, 1e15, 1.5e15, 2e15]
            .iter()
            .map(|v| tick(*v, 5e14))
            .collect();
        assert_eq!(axis, ["0", "5e14", "1.0e15", "1.5e15", "2.0e15"]);
        assert_eq!(tick(1.205e15, 5e12), "1.205e15");
        assert_eq!(tick(-2e307, 2e307), "-2e307");
        assert_eq!(tick(1.6e308, 2e307), "1.6e308");
        assert_eq!(tick(0.5, 0.25), "0.50");
        assert_eq!(signed_pct(0.0009999990000010), "+0.00100 %");
        assert_eq!(signed_pct(-12.345), "-12.35 %");
        assert_eq!(signed_pct(0.0), "+0.00 %");
        // not 300 digits
        assert_eq!(signed_pct(2e300), "+2.00e300 %");
        assert_eq!(signed_pct(-1.5e20), "-1.50e20 %");
        assert_eq!(signed_pct(123456.0), "+123456.00 %");
        assert_eq!(signed_pct_range(0.00077, 0.00123), "+0.000770 … +0.00123 %");
        assert_eq!(ratio(2e-5), "2.00e-5x");
        assert_eq!(ratio(1.25), "1.25x");
        assert_eq!(ratio(16_666.68), "16.67Kx");
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
