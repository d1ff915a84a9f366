//! The bisection's result, for the terminal and `bisect.md`: the first bad commit (or why
//! there is none), the metric at good / first bad / bad with intervals, the change, every
//! probe's verdict, and what was spent. Every number is a mean of samples the journal holds
//! with their file and line, or `—` with the reason.

use std::fmt::Write;
use std::path::Path;

use crate::report::fmt::{km, md_text};
use crate::stats;

use super::git;
use super::journal::{Event, Start};
use super::search::{Outcome, State};

/// The mean and its 95 % interval, as text (`—` with a reason when there is none).
fn mean_ci(v: &[f64], unit: &str) -> String {
    let Some(m) = stats::mean(v) else {
        return "— (not measured)".into();
    };
    let ci = stats::sd(v).and_then(|s| {
        let n = v.len() as f64;
        stats::t975(n - 1.0).map(|t| (m - t * s / n.sqrt(), m + t * s / n.sqrt()))
    });
    let u = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    match ci {
        Some((lo, hi)) => format!("{}{u} (95 % CI {} … {})", km(m), km(lo), km(hi)),
        None => format!("{}{u} (n=1, no interval)", km(m)),
    }
}

/// The exit code of an outcome: 0 found, 3 otherwise.
pub fn code(o: &Outcome) -> i32 {
    match o {
        Outcome::Found(_) => crate::exit_codes::OK,
        _ => crate::exit_codes::POINT_FAILED,
    }
}

/// A short name of the outcome, for the journal's end event.
pub fn name(o: &Outcome) -> &'static str {
    match o {
        Outcome::Found(_) => "found",
        Outcome::Range(..) => "range",
        Outcome::NoStep(_) => "no-step",
        Outcome::Reference(_) => "reference-failed",
        Outcome::Budget => "budget",
    }
}

/// The result as markdown.
pub fn text(
    start: &Start,
    top: &git::Repo,
    events: &[Event],
    s: &State,
    o: &Outcome,
    dir: &Path,
) -> String {
    let c = &start.commits;
    let desc = |i: usize| {
        let (subj, date) = git::describe(top, &c[i]).unwrap_or_default();
        format!("{} {} ({})", git::short(&c[i]), subj, date)
    };
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# expr bisect: `{}`, metric `{}`\n",
        md_text(&start.experiment),
        md_text(&start.metric)
    );
    let n = c.len();
    let first_bad = match o {
        Outcome::Found(i) => {
            let (subj, date) = git::describe(top, &c[*i]).unwrap_or_default();
            let _ = writeln!(
                t,
                "**first bad commit: {}**\n\n- subject: {}\n- author date: {date}\n",
                c[*i],
                md_text(&subj)
            );
            Some(*i)
        }
        Outcome::Range(lo, hi) => {
            let _ = writeln!(
                t,
                "**not found**: every commit between the last good and the first bad was skipped; the first bad commit is one of:\n"
            );
            for i in lo + 1..=*hi {
                let _ = writeln!(t, "- {}", md_text(&desc(i)));
            }
            t.push('\n');
            None
        }
        Outcome::NoStep(why) => {
            let _ = writeln!(t, "**nothing to bisect**: {}\n", md_text(why));
            None
        }
        Outcome::Reference(why) => {
            let _ = writeln!(t, "**stopped**: {}\n", md_text(why));
            None
        }
        Outcome::Budget => {
            let (lo, hi) = s.bounds();
            let _ = writeln!(
                t,
                "**not found within `--max-runs {}`**: the first bad commit is after {} and at or before {}\n",
                start.max_runs.unwrap_or(0),
                git::short(&c[lo]),
                git::short(&c[hi])
            );
            None
        }
    };
    let _ = writeln!(
        t,
        "| | commit | runs | `{}` mean |\n|---|---|---|---|",
        md_text(&start.metric)
    );
    let mut rows = vec![("good", 0)];
    if let Some(i) = first_bad.filter(|&i| i != n - 1) {
        rows.push(("first bad", i));
    }
    rows.push(("bad", n - 1));
    for (what, i) in rows {
        let _ = writeln!(
            t,
            "| {what} | {} | {} | {} |",
            git::short(&c[i]),
            s.samples[i].len(),
            mean_ci(&s.samples[i], &s.unit)
        );
    }
    let (step, _) = super::decide::step(&s.samples[0], &s.samples[n - 1]);
    let _ = writeln!(
        t,
        "\nchange good → bad: {}\n",
        match (
            stats::mean(&s.samples[0]),
            stats::mean(&s.samples[n - 1]),
            step
        ) {
            (Some(g), Some(b), Some((lo, hi))) if g > 0.0 && b > 0.0 => format!(
                "{:+.2} % (95 % interval {:+.2} … {:+.2} %)",
                (b / g - 1.0) * 100.0,
                lo,
                hi
            ),
            (Some(g), Some(b), Some((lo, hi))) => format!(
                "{} (95 % interval of the difference {} … {})",
                km(b - g),
                km(lo),
                km(hi)
            ),
            _ => "— (fewer than two runs on a side)".into(),
        }
    );
    let probes: Vec<&super::journal::Verdict> = events
        .iter()
        .filter_map(|e| match e {
            Event::Verdict(v) => Some(v),
            _ => None,
        })
        .collect();
    let skipped = probes.iter().filter(|v| v.verdict == "skip").count();
    let _ = writeln!(
        t,
        "spent: {} probes ({skipped} skipped), {} rounds, {} runs ({} of them on the references); {} candidate commits between good and bad\n",
        probes.len(),
        s.rounds,
        s.runs,
        s.samples[0].len() + s.samples[n - 1].len(),
        n.saturating_sub(2)
    );
    if !probes.is_empty() {
        let _ = writeln!(
            t,
            "## Probes, in order\n\n| commit | verdict | runs | why |\n|---|---|---|---|"
        );
        for v in probes {
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} |",
                git::short(&c[v.commit]),
                v.verdict,
                s.samples[v.commit].len(),
                md_text(&v.reason)
            );
        }
        t.push('\n');
    }
    let _ = writeln!(
        t,
        "Rounds (result directories, each registered in the history) are under {}/runs; every value with its file and line is in {}.",
        md_text(&dir.display().to_string()),
        super::journal::FILE
    );
    t
}
