//! `expr compare` for CI: one JUnit case per lane, point and metric (a regression beyond the
//! limit fails; a verdict without an interval or a direction is skipped, with why), and a
//! Markdown summary for a pull request.

use std::fmt::Write;

use super::{Comparison, Row};
use crate::report::ci::{Case, Outcome};
use crate::util::markup::{md_code, md_head, md_row, md_span};

fn mean(v: Option<f64>) -> String {
    v.map(crate::util::fmt::km).unwrap_or_else(|| "—".into())
}

/// Which rows fail the gate, one flag per row, and which of them B lost: a significant
/// regression beyond `limit` percent (any significant one without a limit), or a measurement
/// B lost ([`Comparison::lost`]). Once for the whole table.
fn failing(c: &Comparison, limit: Option<f64>) -> (Vec<bool>, Vec<bool>) {
    let lost = c.lost_rows();
    let fails = c
        .rows
        .iter()
        .zip(&lost)
        .map(|(r, l)| {
            *l || match limit {
                // a gate cannot pass over what its experiment says is not comparable
                Some(pct) => super::regression(r, pct) || super::not_comparable(r),
                None => super::worse(r),
            }
        })
        .collect();
    (fails, lost)
}

/// What a lost row says: A's values, and B's none.
pub fn lost_text(r: &Row) -> String {
    if !r.b.is_empty() {
        return format!(
            "no data in B for {}: A measured {} value(s), B {} (its points: {})",
            r.b_lost.join(", "),
            r.a.len(),
            r.b.len(),
            r.b_statuses
        );
    }
    let why = if r.b_statuses.is_empty() {
        "its points failed or had no data".to_string()
    } else {
        format!("its points: {}", r.b_statuses)
    };
    format!(
        "no data in B: A measured {} value(s), B none ({why})",
        r.a.len()
    )
}

/// The comparison's cases, in the table's order, then what only one side has (skipped).
pub fn cases(c: &Comparison, limit: Option<f64>) -> Vec<Case> {
    let mut out = Vec::new();
    let (fails, lost) = failing(c, limit);
    for (i, r) in c.rows.iter().enumerate() {
        let numbers = format!(
            "{}{}: A {} (n={}) → B {} (n={}), Δ {} (95 % CI {}), {}",
            r.metric,
            if r.direction.is_empty() {
                String::new()
            } else {
                format!(" {}", r.direction)
            },
            mean(r.mean_a),
            r.a.len(),
            mean(r.mean_b),
            r.b.len(),
            super::delta_text(r),
            super::ci_text(r),
            r.verdict
        );
        let outcome = if lost[i] {
            Outcome::Failed {
                message: lost_text(r),
                detail: numbers,
            }
        } else if fails[i] && limit.is_some() && super::not_comparable(r) {
            // the machines differ in what the experiment declared relevant: not a regression
            Outcome::Failed {
                message: format!("{} (the gate cannot judge it)", r.verdict),
                detail: numbers,
            }
        } else if fails[i] {
            Outcome::Failed {
                message: format!(
                    "regression: {} {}{}",
                    super::delta_text(r),
                    r.metric,
                    limit.map(|l| format!(" (limit {l} %)")).unwrap_or_default()
                ),
                detail: numbers,
            }
        } else {
            if judged(r) {
                Outcome::Passed
            } else {
                Outcome::Skipped {
                    message: format!("{}: {numbers}", r.verdict),
                }
            }
        };
        out.push(Case {
            classname: format!("{}.{}", r.bench, r.lane),
            name: if r.axes.is_empty() {
                r.metric.clone()
            } else {
                format!("{} {}", r.axes, r.metric)
            },
            time_s: None,
            outcome,
        });
    }
    for (side, only) in [("A", &c.only_a), ("B", &c.only_b)] {
        for o in only {
            out.push(Case {
                classname: "only-one-side".into(),
                name: o.clone(),
                time_s: None,
                outcome: Outcome::Skipped {
                    message: format!("only in {side}: nothing to compare"),
                },
            });
        }
    }
    out
}

/// Whether a row's verdict judges it (better, worse or no change); one with n=1, or without a
/// direction, is not judged.
fn judged(r: &super::Row) -> bool {
    matches!(
        r.verdict.as_str(),
        "faster" | "better" | "no significant change" | "slower" | "worse"
    )
}

/// The comparison as a pull-request comment: a verdict line, what differs between the sides,
/// and the rows.
pub fn markdown(c: &Comparison, limit: Option<f64>) -> String {
    let (fails, lost_rows) = failing(c, limit);
    let lost = lost_rows.iter().filter(|l| **l).count();
    let failing = fails.iter().filter(|f| **f).count();
    let faster = c.rows.iter().filter(|r| super::better(r)).count();
    let incomparable = c.not_comparable().len();
    // said apart: the rows that failed, lost their data or whose machines differ
    let unjudged = (0..c.rows.len())
        .filter(|&i| {
            let r = &c.rows[i];
            !fails[i] && !lost_rows[i] && !super::not_comparable(r) && !judged(r)
        })
        .count();
    // a point of A that B lacks, one the machines make not comparable, or a row without a
    // verdict (n=1, no direction) is not judged: no plain "✅" over it
    let mut o = format!(
        "### {} expr compare {} → {}\n\n",
        if failing > 0 {
            "❌"
        } else if c.only_a.is_empty() && incomparable == 0 && unjudged == 0 {
            "✅"
        } else {
            "⚠️"
        },
        md_span(&c.a.dir, false),
        md_span(&c.b.dir, false)
    );
    let _ = writeln!(
        o,
        "{} regression(s){}{}, {faster} better, {} compared (lane × point × metric){}{}{}.\n",
        c.rows
            .iter()
            .zip(c.lost_rows())
            .filter(|(r, l)| !l
                && match limit {
                    Some(pct) => super::regression(r, pct),
                    None => super::worse(r),
                })
            .count(),
        limit.map(|l| format!(" beyond {l} %")).unwrap_or_default(),
        if lost > 0 {
            format!(", {lost} without data in B")
        } else {
            String::new()
        },
        c.rows.len(),
        if unjudged == 0 {
            String::new()
        } else {
            format!(", {unjudged} not judged (n=1 or no direction)")
        },
        if c.only_a.is_empty() {
            String::new()
        } else {
            format!(", {} only in A (not judged)", c.only_a.len())
        },
        if incomparable == 0 {
            String::new()
        } else {
            format!(
                ", {incomparable} not comparable ({} differ, declared `comparable-on`{})",
                c.machines.blocking().join(", "),
                if limit.is_some() {
                    ": the gate fails"
                } else {
                    ""
                }
            )
        }
    );
    if !c.settings_diff.is_empty() {
        let _ = writeln!(
            o,
            "The experiments differ ({} line(s) of the resolved experiment; `expr compare` as text lists them).\n",
            c.settings_diff.len()
        );
    }
    if !c.code_differs.is_empty() {
        let _ = writeln!(
            o,
            "Code differs on: {}.\n",
            c.code_differs
                .iter()
                .map(|h| md_span(h, false))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    o.push_str(&md_head(&[
        "bench", "lane", "point", "metric", "A", "B", "Δ", "95 % CI", "verdict",
    ]));
    for (r, fails) in c.rows.iter().zip(&fails) {
        let verdict = format!("{}{}", if *fails { "❌ " } else { "" }, md_code(&r.verdict));
        o.push_str(&md_row(&[
            r.md_key(),
            mean(r.mean_a),
            mean(r.mean_b),
            super::delta_text(r),
            super::ci_text(r),
            verdict,
        ]));
    }
    // what was not compared is said too: a point dropped from B is no "✅"
    o.push_str(&crate::compare::only_on_one_side(c));
    o
}
