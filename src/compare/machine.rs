//! What differs between two runs' machines (their `machine` journal events), for `expr compare`:
//! listed above its verdicts, and the verdicts made "not comparable" when a difference the
//! experiment declared relevant (`comparable-on …`) is present.

use serde::Serialize;
use std::fmt::Write;

use crate::results::machine::{self, Difference, Machine};
use crate::util::fmt::{html_text as esc, md_text};

pub use crate::report::machine::machines_of;

/// The machine side of a comparison.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MachineDiff {
    pub differences: Vec<Difference>,
    /// The aspects either experiment declared with `comparable-on`.
    pub comparable_on: Vec<String>,
    /// Sides without a machine record (`A`, `B`).
    pub unrecorded: Vec<String>,
}

impl MachineDiff {
    pub fn new(a: &[Machine], b: &[Machine], comparable_on: Vec<String>) -> MachineDiff {
        let mut unrecorded = Vec::new();
        if a.is_empty() {
            unrecorded.push("A".into());
        }
        if b.is_empty() {
            unrecorded.push("B".into());
        }
        MachineDiff {
            differences: machine::differences(a, b),
            comparable_on,
            unrecorded,
        }
    }

    /// The declared aspects that differ: what makes the verdicts "not comparable".
    pub fn blocking(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .differences
            .iter()
            .filter(|d| self.comparable_on.contains(&d.aspect))
            .map(|d| d.aspect.clone())
            .collect();
        v.dedup();
        v.sort();
        v.dedup();
        v
    }

    /// The declared aspects that differ on these hosts.
    pub fn blocking_on(&self, hosts: &[String]) -> Vec<String> {
        let mut v: Vec<String> = self
            .differences
            .iter()
            .filter(|d| self.comparable_on.contains(&d.aspect) && hosts.contains(&d.host))
            .map(|d| d.aspect.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The verdict of a bench that runs on `hosts`: as it stands, or "not comparable (…)" when
    /// a declared aspect differs on one of them.
    pub fn verdict_on(&self, v: &str, hosts: &[String]) -> String {
        let b = self.blocking_on(hosts);
        if b.is_empty() {
            v.to_string()
        } else {
            format!("not comparable ({} differ)", b.join(", "))
        }
    }

    /// The verdict as it stands, or "not comparable (…)".
    pub fn verdict(&self, v: &str) -> String {
        let b = self.blocking();
        if b.is_empty() {
            v.to_string()
        } else {
            format!("not comparable ({} differ)", b.join(", "))
        }
    }

    fn intro(&self) -> String {
        let declared = if self.comparable_on.is_empty() {
            String::new()
        } else {
            format!("; `comparable-on`: {}", self.comparable_on.join(", "))
        };
        format!("the machines differ (as preflight recorded them{declared})")
    }

    /// Markdown, for above the verdicts.
    pub fn text(&self) -> String {
        let mut o = String::new();
        for s in &self.unrecorded {
            let _ = writeln!(
                o,
                "\nnote: {s} has no machine record (a run before expr recorded machines): its machine is not compared."
            );
        }
        if self.differences.is_empty() {
            if self.unrecorded.is_empty() {
                o.push_str("\nmachines: no difference recorded.\n");
            }
            return o;
        }
        let _ = writeln!(
            o,
            "\n⚠ {}:\n\n| host | aspect | what | A | B |\n|---|---|---|---|---|",
            self.intro()
        );
        for d in &self.differences {
            let _ = writeln!(
                o,
                "| `{}` | {}{} | {} | {} | {} |",
                crate::util::fmt::md_code(&d.host),
                d.aspect,
                if self.comparable_on.contains(&d.aspect) {
                    " ⛔"
                } else {
                    ""
                },
                md_text(&d.what),
                md_text(&d.a),
                md_text(&d.b)
            );
        }
        let b = self.blocking();
        if !b.is_empty() {
            let _ = writeln!(
                o,
                "\n⛔ {} differ, which the experiment declared relevant (`comparable-on`): the verdicts below are \"not comparable\".",
                b.join(", ")
            );
        }
        o
    }

    /// HTML, for above the verdicts.
    pub fn html(&self) -> String {
        let mut o = String::new();
        for s in &self.unrecorded {
            let _ = writeln!(
                o,
                "<p class=\"muted\">{s} has no machine record: its machine is not compared.</p>"
            );
        }
        if self.differences.is_empty() {
            return o;
        }
        let _ = writeln!(
            o,
            "<p class=\"bad\">⚠ {}:</p>\n<table>\n<tr><th>host</th><th>aspect</th><th>what</th><th>A</th><th>B</th></tr>",
            esc(&self.intro())
        );
        for d in &self.differences {
            let _ = writeln!(
                o,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&d.host),
                esc(&d.aspect),
                esc(&d.what),
                esc(&d.a),
                esc(&d.b)
            );
        }
        o.push_str("</table>\n");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::machine::Gpu;

    fn m(sm: f64) -> Machine {
        Machine {
            host: "h".into(),
            gpus: Some(vec![Gpu {
                index: Some(0),
                sm_mhz: Some(sm),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn declared_differences_make_verdicts_not_comparable() {
        let d = MachineDiff::new(&[m(1410.0)], &[m(1980.0)], vec![]);
        assert_eq!(d.verdict("slower"), "slower");
        assert!(d
            .text()
            .contains("| `h` | clocks | GPU 0 SM clock | 1410 MHz | 1980 MHz |"));
        let d = MachineDiff::new(&[m(1410.0)], &[m(1980.0)], vec!["clocks".into()]);
        assert_eq!(d.verdict("slower"), "not comparable (clocks differ)");
        let d = MachineDiff::new(&[m(1410.0)], &[m(1410.0)], vec!["clocks".into()]);
        assert_eq!(d.verdict("faster"), "faster");
        assert!(MachineDiff::new(&[], &[m(1.0)], vec![])
            .text()
            .contains("A has no machine record"));
    }
}

#[cfg(test)]
mod host_tests {
    use super::*;

    #[test]
    fn a_declared_difference_blocks_only_the_benches_on_its_host() {
        let d = MachineDiff {
            differences: vec![Difference {
                host: "gpu1".into(),
                aspect: "clocks".into(),
                what: "GPU 0 SM clock".into(),
                a: "1410 MHz".into(),
                b: "1980 MHz".into(),
            }],
            comparable_on: vec!["clocks".into()],
            unrecorded: Vec::new(),
        };
        assert_eq!(
            d.verdict_on("faster", &["gpu1".into(), "local".into()]),
            "not comparable (clocks differ)"
        );
        assert_eq!(d.verdict_on("faster", &["local".into()]), "faster");
        let undeclared = MachineDiff {
            comparable_on: vec!["driver".into()],
            ..d.clone()
        };
        assert_eq!(undeclared.verdict_on("slower", &["gpu1".into()]), "slower");
    }
}
