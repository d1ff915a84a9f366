//! The bisection's result, for the terminal, `bisect.md` and `bisect.html`: the first bad
//! commit (or why there is none), the metric at good / first bad / bad with intervals, the
//! change, every probe's verdict, and what was spent. Every number is a mean of samples the
//! journal holds with their file and line, or `—` with the reason. The result is one
//! `report::doc::Doc`, rendered by the report's markdown and, in report.html's page, HTML.

use std::path::Path;

use crate::kind_api::doc::{Doc, Span, Table, Text};
use crate::util::fmt::{html_text, km};
use crate::util::lang::Lang;
use crate::util::stats;

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
        Outcome::Found(_) => crate::util::exit_codes::OK,
        _ => crate::util::exit_codes::POINT_FAILED,
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

/// The result's title: experiment and metric.
fn title(start: &Start) -> Text {
    Text::plain("expr bisect: ")
        .and_code(start.experiment.clone())
        .and(", metric ")
        .and_code(start.metric.clone())
}

/// Text that begins in bold.
fn strong(s: &str, rest: Text) -> Text {
    let mut t = Text(vec![Span::Strong(s.into())]);
    t.0.extend(rest.0);
    t
}

/// The result as blocks (the title is the page's).
pub fn doc(
    start: &Start,
    top: &git::Repo,
    events: &[Event],
    s: &State,
    o: &Outcome,
    dir: &Path,
) -> Doc {
    let c = &start.commits;
    let desc = |i: usize| {
        let (subj, date) = git::describe(top, &c[i]).unwrap_or_default();
        format!("{} {} ({})", git::short(&c[i]), subj, date)
    };
    let mut d = Doc::default();
    let n = c.len();
    let first_bad = match o {
        Outcome::Found(i) => {
            let (subj, date) = git::describe(top, &c[*i]).unwrap_or_default();
            d.label(format!("first bad commit: {}", c[*i]));
            d.list(
                None,
                vec![
                    Text::plain(format!("subject: {subj}")),
                    Text::plain(format!("author date: {date}")),
                ],
            );
            Some(*i)
        }
        Outcome::Range(lo, hi) => {
            d.list(
                Some(strong("not found", Text::plain(": every commit between the last good and the first bad was skipped; the first bad commit is one of:"))),
                (lo + 1..=*hi).map(|i| Text::plain(desc(i))).collect(),
            );
            None
        }
        Outcome::NoStep(why) => {
            d.para(strong("nothing to bisect", Text::plain(format!(": {why}"))));
            None
        }
        Outcome::Reference(why) => {
            d.para(strong("stopped", Text::plain(format!(": {why}"))));
            None
        }
        Outcome::Budget => {
            let (lo, hi) = s.bounds();
            d.para(strong(
                "not found",
                Text::plain(" within ")
                    .and_code(format!("--max-runs {}", start.max_runs.unwrap_or(0)))
                    .and(format!(
                        ": the first bad commit is after {} and at or before {}",
                        git::short(&c[lo]),
                        git::short(&c[hi])
                    )),
            ));
            None
        }
    };
    let mut t = Table::new([
        Text::plain(""),
        Text::plain("commit"),
        Text::plain("runs"),
        Text::code(start.metric.clone()).and(" mean"),
    ]);
    let mut rows = vec![("good", 0)];
    if let Some(i) = first_bad.filter(|&i| i != n - 1) {
        rows.push(("first bad", i));
    }
    rows.push(("bad", n - 1));
    for (what, i) in rows {
        t.row([
            what.to_string(),
            git::short(&c[i]).to_string(),
            s.samples[i].len().to_string(),
            mean_ci(&s.samples[i], &s.unit),
        ]);
    }
    d.table(t);
    let (step, _) = super::decide::step(&s.samples[0], &s.samples[n - 1]);
    d.para(format!(
        "change good → bad: {}",
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
    ));
    let probes: Vec<&super::journal::Verdict> = events
        .iter()
        .filter_map(|e| match e {
            Event::Verdict(v) => Some(v),
            _ => None,
        })
        .collect();
    let skipped = probes.iter().filter(|v| v.verdict == "skip").count();
    d.para(format!(
        "spent: {} probes ({skipped} skipped), {} rounds, {} runs ({} of them on the references); {} candidate commits between good and bad",
        probes.len(),
        s.rounds,
        s.runs,
        s.samples[0].len() + s.samples[n - 1].len(),
        n.saturating_sub(2)
    ));
    if !probes.is_empty() {
        d.h2("Probes, in order");
        let mut t = Table::new(["commit", "verdict", "runs", "why"]);
        for v in probes {
            t.row([
                git::short(&c[v.commit]).to_string(),
                v.verdict.clone(),
                s.samples[v.commit].len().to_string(),
                v.reason.clone(),
            ]);
        }
        d.table(t);
    }
    d.para(format!(
        "Rounds (result directories, each registered in the history) are under {}/runs; every value with its file and line is in {}.",
        dir.display(),
        super::journal::FILE
    ));
    d
}

/// The result as markdown (the terminal's and `bisect.md`).
pub fn text(start: &Start, d: &Doc) -> String {
    let t = title(start);
    let mut o = format!("# {}\n", crate::report::markdown::text(&t));
    o.push_str(&crate::report::markdown::render(d));
    o
}

/// The result as one self-contained HTML page in report.html's look (`report::page`): no
/// external resource, every text escaped.
pub fn html(start: &Start, d: &Doc) -> String {
    let header = format!(
        "<header><h1>{}</h1><p>good {} · bad {} · {} candidate commits · checkout {}</p></header>\n",
        crate::report::html::spans(&title(start)),
        html_text(git::short(&start.commits[0])),
        html_text(git::short(&start.commits[start.commits.len() - 1])),
        start.commits.len().saturating_sub(2),
        html_text(&start.top)
    );
    crate::report::page::page(
        Lang::En,
        &title(start).flat(),
        &header,
        &[],
        &crate::report::html::blocks(d),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_escapes_every_name_and_the_markdown_keeps_its_lines() {
        let start = Start {
            experiment: "<script>alert(1)</script>".into(),
            metric: "lat|ms".into(),
            top: "/r/\"x\"".into(),
            ..Start::example(3)
        };
        let s = State::of(&start, &[]);
        let o = Outcome::NoStep("a <b> reason".into());
        let top = git::Repo::here("/nonexistent");
        let d = doc(&start, &top, &[], &s, &o, Path::new("out"));
        let h = html(&start, &d);
        assert!(!h.contains("<script>alert") && !h.contains("<b>"), "{h}");
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{h}");
        assert!(h.contains("a &lt;b&gt; reason") && h.contains("/r/&quot;x&quot;"));
        assert!(!h.contains("http://") && !h.contains("https://"));
        // a number not measured is `—` with why, never 0
        assert!(h.contains("— (not measured)"), "{h}");
        let t = text(&start, &d);
        assert!(t.starts_with("# expr bisect: `<script>alert(1)</script>`, metric `lat\\|ms`\n\n**nothing to bisect**: a &lt;b> reason\n"), "{t}");
        assert!(t.contains("| | commit | runs | `lat\\|ms` mean |\n|---|---|---|---|\n| good | 000000000000 | 0 | — (not measured) |"), "{t}");
    }
}
