//! `expr compare`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::util::exit_codes;

use super::args::PageFormat;

pub(super) fn compare_cmd(
    a: Option<PathBuf>,
    b: Option<PathBuf>,
    baseline: Option<&str>,
    format: PageFormat,
    fail_on_regression: Option<f64>,
    junit: Option<&Path>,
    history: Option<&Path>,
) -> i32 {
    let fail = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INVALID
    };
    // the arguments first: a bad limit is refused before any work is done or printed
    if let (Some(h), None) = (history, baseline) {
        return fail(format!(
            "--history {} is read only with `--baseline last-ok` (two directories name A and B themselves)",
            h.display()
        ));
    }
    if let Some(pct) = fail_on_regression {
        if !pct.is_finite() || pct < 0.0 {
            return fail(format!(
                "--fail-on-regression takes a percentage of 0 or more, not {pct}"
            ));
        }
    }
    let (a, b) = match (baseline, a, b) {
        (Some("last-ok"), Some(only), None) | (Some("last-ok"), None, Some(only)) => {
            match last_ok_baseline(&only, history) {
                Ok(a) => (a, only),
                Err(code) => return code,
            }
        }
        (Some("last-ok"), Some(_), Some(_)) => {
            return fail(
                "with `--baseline last-ok`, give only B (the baseline comes from the history)"
                    .into(),
            )
        }
        (Some("last-ok"), None, None) => {
            return fail("`--baseline last-ok` compares B with the run before it: give B".into())
        }
        (Some(other), _, _) => return fail(format!("--baseline takes `last-ok`, not `{other}`")),
        (None, Some(a), Some(b)) => (a, b),
        _ => return fail("give two result directories, A and B, or `--baseline last-ok B`".into()),
    };
    // a --junit inside A or B replaced a file of that run (its journal)
    if let Some(why) = junit.and_then(|p| {
        super::out::named_file_problem("--junit", p, &[&a, &b], &crate::history::path(history))
    }) {
        return fail(why);
    }
    let c = match crate::compare::compare(&a, &b) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    // nothing in common — no row, or no row with values on both sides (A collects `v`, B `w`):
    // an empty table or a column of "no data" and exit 0 would read as "no change"
    // (a point B measured nothing for — it failed, or had no data — is a loss, said below)
    // a side whose files no longer give what its run read: the comparison uses the files'
    for side in [&c.a, &c.b] {
        for w in &side.changed_since {
            let _ = writeln!(
                std::io::stderr(),
                "warning: {}: {}",
                crate::util::markup::one_line(&side.dir),
                crate::util::markup::one_line(w)
            );
        }
    }
    let lost = c.lost();
    let compared = c.rows.iter().any(|r| !r.a.is_empty() && !r.b.is_empty());
    if !compared && lost.is_empty() {
        return fail(nothing_in_common(&c));
    }
    let text = match format {
        PageFormat::Json => serde_json::to_string_pretty(&c).unwrap_or_default() + "\n",
        PageFormat::Text => crate::compare::text(&c),
        PageFormat::Html => crate::compare::html(&c),
        PageFormat::Github => crate::compare::ci::markdown(&c, fail_on_regression),
    };
    if let Err(code) = super::out::print(text.as_bytes()) {
        return code;
    }
    if let Some(path) = junit {
        let xml = crate::report::ci::junit(
            &format!("expr compare {} {}", c.a.dir, c.b.dir),
            &c.b.started,
            &crate::compare::ci::cases(&c, fail_on_regression),
        );
        if let Err(e) = crate::results::atomic::write_named(path, xml.as_bytes()) {
            let _ = writeln!(std::io::stderr(), "error: --junit: {e}");
            return exit_codes::INTERNAL;
        }
    }
    for r in &lost {
        let _ = writeln!(
            std::io::stderr(),
            "{}: {}: {}",
            if fail_on_regression.is_some() {
                "lost"
            } else {
                "note"
            },
            // one line each, whatever a lane's name holds
            place(r),
            crate::compare::ci::lost_text(r)
        );
    }
    if let Some(pct) = fail_on_regression {
        if !gate_passes(&c, pct, !lost.is_empty()) {
            return exit_codes::REGRESSION;
        }
    }
    // B measured nothing that A did: its points failed
    if !compared {
        return exit_codes::POINT_FAILED;
    }
    exit_codes::OK
}

/// A row's place: bench, lane, sweep point (where it has one) and metric, on one line.
fn place(r: &crate::compare::Row) -> String {
    let at: Vec<&str> = [&r.bench, &r.lane, &r.axes, &r.metric]
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| s.as_str())
        .collect();
    crate::util::markup::one_line(&at.join(" ")).into_owned()
}

/// A change beyond the limit, with the digits that show it is beyond: `+5.004 %` where two
/// decimals would print `+5.00 %` against a limit of 5 %.
fn beyond(d: f64, pct: f64) -> String {
    let two = crate::util::fmt::signed_pct(d);
    for places in 2..=12 {
        let shown = format!("{:.*}", places, d.abs());
        if shown.parse::<f64>().is_ok_and(|s| s > pct) {
            return if places == 2 {
                two
            } else {
                format!("{d:+.places$} %")
            };
        }
    }
    two
}

/// `--fail-on-regression PCT`: what the gate does not judge, said (a point only A has, a change
/// of unknown direction), each regression beyond the limit named; whether it passes (no
/// regression, no measurement `lost`).
fn gate_passes(c: &crate::compare::Comparison, pct: f64, lost: bool) -> bool {
    // what B does not have is not judged: said, so a gate's pass is read as what it is
    for o in &c.only_a {
        let _ = writeln!(
            std::io::stderr(),
            "note: {o}: only in A: not judged (B's run has no such point{})",
            if c.settings_diff.is_empty() {
                ""
            } else {
                "; the experiments differ"
            }
        );
    }
    for r in c.unjudged() {
        let why = if r.directions_differ {
            "A's and B's collects declare opposite directions"
        } else {
            "its direction is unknown (set `direction=` on its collect)"
        };
        let _ = writeln!(
            std::io::stderr(),
            "note: {} changed significantly, but {why}: not judged as a regression",
            place(r)
        );
    }
    // the experiment says these numbers cannot be set side by side: no pass over them
    let incomparable = c.not_comparable();
    for r in &incomparable {
        let _ = writeln!(
            std::io::stderr(),
            "not comparable: {}: {}{}: the gate cannot judge it",
            place(r),
            r.verdict,
            if r.verdict.contains("the unit differs") {
                ""
            } else {
                " (the experiment's `comparable-on`)"
            }
        );
    }
    let bad = c.regressions(pct);
    if !bad.is_empty() || !incomparable.is_empty() {
        for r in &bad {
            let _ = writeln!(
                std::io::stderr(),
                "regression: {}: {} (limit {pct} %)",
                place(r),
                match (r.delta_pct, r.mean_a) {
                    (Some(d), _) => beyond(d, pct),
                    (None, Some(0.0)) => "from a zero baseline".into(),
                    (None, _) => "a change too large to state in percent".into(),
                }
            );
        }
        return false;
    }
    !lost
}

/// `--baseline last-ok B`: the last run of B's experiment before it that ended ok, as the
/// history has it (said on stderr), or the exit code of why there is none.
fn last_ok_baseline(only: &Path, history: Option<&Path>) -> Result<PathBuf, i32> {
    let fail = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INVALID
    };
    let exp = match crate::report::gather::experiment_of(only) {
        Ok((e, _)) => e.name,
        Err(e) => return Err(fail(e)),
    };
    let db = crate::history::path(history);
    // a read: nothing is created when there is no database
    let found = crate::history::open_ro(&db).and_then(|c| crate::history::last_ok(&c, &exp, only));
    match found {
        // the history keeps absolute paths: shown as B is, relative to here where it can be
        Ok(Ok(p)) => {
            let a = std::env::current_dir()
                .ok()
                .and_then(|c| p.strip_prefix(c).ok().map(Path::to_path_buf))
                .filter(|r| !r.as_os_str().is_empty())
                .unwrap_or(p);
            // the baseline picked is said: a comparison with nothing in common reads
            // otherwise as if A were the user's choice
            let _ = writeln!(
                std::io::stderr(),
                "compare: A is {}, the last run of `{exp}` before B that ended ok (the history's; name A to compare with another)",
                crate::util::markup::one_line(&a.display().to_string())
            );
            Ok(a)
        }
        Ok(Err(gone)) if gone.is_empty() => Err(fail(format!(
            "the history ({}) has no run of `{exp}` before B that ended ok",
            db.display()
        ))),
        // registered, but their directories are not where they were
        Ok(Err(gone)) => Err(fail(format!(
            "the history ({}) has no run of `{exp}` before B that ended ok and is still there: {} {} no directory now ({}; moved or removed): `expr report DIR` in a moved one registers it where it is",
            db.display(),
            gone.len(),
            if gone.len() == 1 { "has" } else { "have" },
            gone.iter()
                .take(3)
                .map(|p| crate::util::markup::one_line(&p.display().to_string()).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        Err(e) => {
            // not the command line's fault: the database is missing or damaged
            let _ = writeln!(std::io::stderr(), "error: {e}");
            Err(exit_codes::INTERNAL)
        }
    }
}

/// What a comparison with nothing to compare says: what each side has alone, and the rows
/// without values on both sides (each side collects another metric, or a point failed on one).
fn nothing_in_common(c: &crate::compare::Comparison) -> String {
    let list = |v: &[String]| {
        if v.is_empty() {
            "nothing".to_string()
        } else {
            v.join(", ")
        }
    };
    let one_sided: Vec<String> = c
        .rows
        .iter()
        .map(|r| {
            let at = [&r.bench, &r.lane, &r.axes]
                .iter()
                .filter(|s| !s.is_empty())
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            let n = |v: &[f64]| match v.len() {
                0 => "none".to_string(),
                1 => "1 value".to_string(),
                k => format!("{k} values"),
            };
            // a point with no value on either side has no metric to name
            let metric = if r.metric.is_empty() {
                String::new()
            } else {
                format!(" `{}`", r.metric)
            };
            format!("{at}{metric} (A: {}, B: {})", n(&r.a), n(&r.b))
        })
        .collect();
    // the same points, but none with values on both sides; or no point in common at all
    let what = if c.rows.is_empty() {
        "no lane, point and metric in common"
    } else {
        "no point with values of one metric on both sides"
    };
    let mut msg = format!(
        "{} (`{}`) and {} (`{}`) have {what}: nothing to compare\n  only in A: {}\n  only in B: {}",
        c.a.dir,
        c.a.experiment,
        c.b.dir,
        c.b.experiment,
        list(&c.only_a),
        list(&c.only_b)
    );
    if !one_sided.is_empty() {
        msg.push_str(&format!(
            "\n  without values on both sides: {}",
            one_sided.join(", ")
        ));
    }
    msg
}

#[cfg(test)]
mod tests {
    /// A regression's change with the digits that show it beyond the limit.
    #[test]
    fn a_change_beyond_the_limit_shows_the_digits_that_say_so() {
        assert_eq!(super::beyond(7.5, 5.0), "+7.50 %");
        assert_eq!(super::beyond(5.004, 5.0), "+5.004 %");
        assert_eq!(super::beyond(-5.0000003, 5.0), "-5.0000003 %");
    }
}
