//! What CI reads: JUnit XML (the structure of the JUnit schema Jenkins, GitLab and GitHub's
//! test reporters take: `testsuites` › `testsuite` › `testcase`, each case passed, failed or
//! skipped) and a Markdown summary fit for a pull-request comment or `$GITHUB_STEP_SUMMARY`.
//! A run gives one case per point and one per expectation judged at each point; `expr compare`
//! one per lane, point and metric (`compare::ci`).

use std::fmt::Write;

use crate::kind_api::data::ReportData;
use crate::util::markup::{html_text as xml, md_head, md_row, md_span, md_text};

/// How a case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    /// A failure: one line, and the numbers behind it.
    Failed {
        message: String,
        detail: String,
    },
    /// Not judged, and why.
    Skipped {
        message: String,
    },
}

/// One test case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The group it belongs to (`bench.lane`, `bench.expect`).
    pub classname: String,
    pub name: String,
    /// Seconds, where the case measured a time.
    pub time_s: Option<f64>,
    pub outcome: Outcome,
}

/// JUnit XML of one suite: counts that match the cases, every text escaped (a lane named
/// `<x>` is text; control characters become U+FFFD, which XML 1.0 allows).
pub fn junit(suite: &str, timestamp: &str, cases: &[Case]) -> String {
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Failed { .. }))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Skipped { .. }))
        .count();
    // `time` is required by the strict (Ant) JUnit schema: an unmeasured case has 0, and
    // the sum of none is 0, not the -0.0 an empty f64 sum gives
    let time = format!(
        " time=\"{:.3}\"",
        cases.iter().filter_map(|c| c.time_s).sum::<f64>() + 0.0
    );
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\"{time}",
        cases.len()
    );
    let _ = writeln!(o, "<testsuites name=\"{}\" {counts}>", attr(suite));
    let _ = writeln!(
        o,
        "  <testsuite name=\"{}\" {counts} timestamp=\"{}\">",
        attr(suite),
        attr(timestamp)
    );
    for c in cases {
        let _ = write!(
            o,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
            attr(&c.classname),
            attr(&c.name),
            c.time_s.unwrap_or(0.0) + 0.0
        );
        match &c.outcome {
            Outcome::Passed => o.push_str("/>\n"),
            Outcome::Failed { message, detail } => {
                let _ = writeln!(
                    o,
                    ">\n      <failure message=\"{}\" type=\"failure\">{}</failure>\n    </testcase>",
                    attr(message),
                    xml(detail)
                );
            }
            Outcome::Skipped { message } => {
                let _ = writeln!(
                    o,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    attr(message)
                );
            }
        }
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}

/// An attribute value: escaped as text, and a newline or tab as a character reference (an XML
/// reader turns a literal one in an attribute into a blank).
fn attr(s: &str) -> String {
    xml(s).replace('\n', "&#10;").replace('\t', "&#9;")
}

/// A run's cases: each point (failed with its reason when it failed, was interrupted or has no
/// data; skipped when it was not run), then each expectation at each point it was judged at.
pub fn run_cases(data: &ReportData) -> Vec<Case> {
    let mut out = Vec::new();
    for p in &data.points {
        let wall = p
            .metrics
            .iter()
            .find(|m| m.name == "wall_ms")
            .map(|m| m.value / 1000.0);
        let outcome = match p.status.as_str() {
            "ok" => Outcome::Passed,
            "failed" | "interrupted" | "no-data" => Outcome::Failed {
                message: format!("{}: {}", p.status, first_line(&p.reason)),
                detail: p.reason.clone(),
            },
            other => Outcome::Skipped {
                message: format!("{other}: {}", first_line(&p.reason)),
            },
        };
        out.push(Case {
            classname: format!("{}.{}", p.bench, p.lane),
            name: p.run_id.clone(),
            time_s: wall,
            outcome,
        });
    }
    for e in &data.expectations {
        let outcome = if !e.judged {
            Outcome::Skipped {
                // (most reasons say "not judged" themselves)
                message: if e.found.starts_with("not judged") {
                    e.found.clone()
                } else {
                    format!("not judged: {}", e.found)
                },
            }
        } else if e.ok {
            Outcome::Passed
        } else {
            Outcome::Failed {
                message: format!("unmet: {} at {}: {}", e.expect, e.point, e.found),
                detail: format!(
                    "{} ({})\nat {}\nfound: {}",
                    e.expect, e.at, e.point, e.found
                ),
            }
        };
        out.push(Case {
            classname: format!("{}.expect", e.bench),
            name: format!("{} @ {}", e.expect, e.point),
            time_s: None,
            outcome,
        });
    }
    out
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// A run as a Markdown summary: one line of verdict, the expectations (met or not, with what
/// was found), the points that failed with their reasons, and the headline per lane and point.
pub fn run_markdown(data: &ReportData, exit_code: i32) -> String {
    let cases = run_cases(data);
    let failed: Vec<&Case> = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Failed { .. }))
        .collect();
    let mut o = format!(
        "### {} expr run {}: {}\n\n",
        if exit_code == 0 { "✅" } else { "❌" },
        md_span(&data.experiment, false),
        if failed.is_empty() {
            format!("{} point(s) ok", data.points.len())
        } else {
            format!(
                "{} of {} case(s) failed (exit {exit_code})",
                failed.len(),
                cases.len()
            )
        }
    );
    let _ = writeln!(
        o,
        "Result directory {}, git head {} on {}.\n",
        md_span(&data.dir, false),
        md_span(data.git_head.get(..12).unwrap_or(&data.git_head), false),
        md_span(&data.hostname, false)
    );
    if !data.expectations.is_empty() {
        o.push_str(&md_head(&["expectation", "point", "result", "found"]));
        for e in &data.expectations {
            let result = if !e.judged {
                "not judged"
            } else if e.ok {
                "✅ met"
            } else {
                "❌ unmet"
            };
            o.push_str(&md_row(&[
                md_span(&e.expect, true),
                md_span(&e.point, true),
                result.to_string(),
                md_text(&e.found),
            ]));
        }
        o.push('\n');
    }
    let bad: Vec<_> = data
        .points
        .iter()
        .filter(|p| matches!(p.status.as_str(), "failed" | "interrupted" | "no-data"))
        .collect();
    if !bad.is_empty() {
        o.push_str(&md_head(&["point", "status", "reason"]));
        for p in bad {
            o.push_str(&md_row(&[
                md_span(&p.run_id, true),
                md_text(&p.status),
                md_text(first_line(&p.reason)),
            ]));
        }
        o.push('\n');
    }
    if !data.groups.is_empty() {
        o.push_str(&md_head(&["bench", "lane", "point", "mean", "n", "CV %"]));
        for g in &data.groups {
            let l = crate::util::lang::Lang::En;
            let dash = |why: Option<&str>| why.map_or("—".into(), |w| format!("—{}", l.paren(w)));
            o.push_str(&md_row(&[
                md_span(&g.bench, true),
                md_span(&g.lane, true),
                md_text(&crate::kind_api::tables::axes_text(&g.axes)),
                g.mean
                    .map(crate::util::fmt::km)
                    .unwrap_or_else(|| dash(g.mean_why)),
                g.values.len().to_string(),
                g.cv_percent
                    .map(crate::util::fmt::km)
                    .unwrap_or_else(|| dash(crate::kind_api::tables::spread_why(g, true, l))),
            ]));
        }
        let l = crate::util::lang::Lang::En;
        if let Some(note) = crate::kind_api::tables::spread_note(&data.groups, l) {
            let _ = writeln!(o, "\n{note}");
        }
    }
    o
}

/// Append text to a file (as `$GITHUB_STEP_SUMMARY` expects: each step adds its part).
pub fn append(path: &std::path::Path, text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_cases_and_text_is_escaped() {
        let cases = vec![
            Case {
                classname: "b.<x>".into(),
                name: "a&b".into(),
                time_s: Some(1.5),
                outcome: Outcome::Passed,
            },
            Case {
                classname: "b.x".into(),
                name: "two".into(),
                time_s: None,
                outcome: Outcome::Failed {
                    message: "slower: \"−7 %\"".into(),
                    detail: "a\u{1}b".into(),
                },
            },
            Case {
                classname: "b.x".into(),
                name: "three".into(),
                time_s: None,
                outcome: Outcome::Skipped {
                    message: "n=1".into(),
                },
            },
        ];
        let x = junit("expr compare", "2026-12-03T10:00:00", &cases);
        assert!(
            x.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\"1.500\""),
            "{x}"
        );
        assert!(
            x.contains("classname=\"b.&lt;x&gt;\" name=\"a&amp;b\""),
            "{x}"
        );
        assert!(x.contains("message=\"slower: &quot;−7 %&quot;\""), "{x}");
        assert!(x.contains(">a\u{FFFD}b</failure>"), "{x}");
        // U+FFFE and U+FFFF are no XML 1.0 characters; no case timed: 0.000, never -0.000
        let odd = [Case {
            classname: "q\u{FFFF}".into(),
            name: "n\u{FFFE}".into(),
            time_s: None,
            outcome: Outcome::Passed,
        }];
        let x = junit("s", "t", &odd);
        assert!(
            x.contains("classname=\"q\u{FFFD}\" name=\"n\u{FFFD}\" time=\"0.000\"/>"),
            "{x}"
        );
        assert!(x.contains("skipped=\"0\" time=\"0.000\""), "{x}");
        assert!(!x.contains("-0.000"), "{x}");
    }

    /// A newline or tab in an attribute (a lane named with one) reads back as itself: written
    /// as is, an XML reader makes it a blank.
    #[test]
    fn a_newline_in_an_attribute_reads_back_as_a_newline() {
        let cases = [Case {
            classname: "b.x\ny".into(),
            name: "p\tq".into(),
            time_s: None,
            outcome: Outcome::Failed {
                message: "a\nb".into(),
                detail: "c\nd".into(),
            },
        }];
        let x = junit("s", "t", &cases);
        let doc = roxmltree::Document::parse(&x).unwrap();
        let case = doc
            .descendants()
            .find(|n| n.has_tag_name("testcase"))
            .unwrap();
        assert_eq!(case.attribute("classname"), Some("b.x\ny"));
        assert_eq!(case.attribute("name"), Some("p\tq"));
        let f = case.first_element_child().unwrap();
        assert_eq!(f.attribute("message"), Some("a\nb"));
        assert_eq!(f.text(), Some("c\nd"));
    }
}
