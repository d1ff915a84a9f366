//! `expect` and `expect-log`: what a run must show.

use kdl::KdlNode;

use crate::model::diag::Code;
use crate::model::schema::{self};
use crate::model::*;

use super::walker::*;

impl Decoder<'_> {
    /// `expect LANE METRIC min=…` or `expect LANE over OTHER speedup min=…`.
    pub(super) fn expect(&mut self, node: &KdlNode) -> Option<Expect> {
        let (args, props) = self.entries(node, &schema::EXPECT);
        let loc = self.loc(node.span());
        let num = |k: &str| props.get(k).and_then(|g| g.val.as_f64());
        let (min, max) = (num("min"), num("max"));
        for (k, v) in [("min", min), ("max", max)] {
            if v.is_some_and(f64::is_nan) {
                let span = Self::prop_span(&props, k, node);
                self.err_help(
                    Code::InvalidValue,
                    format!("`expect`: {k}=#nan is no bound"),
                    span,
                    "give a number",
                );
                return None;
            }
        }
        let a: Vec<String> = args.iter().map(|g| g.val.to_string()).collect();
        let what = if a.len() == 4 && a[1] == "over" && a[3] == "speedup" {
            ExpectWhat::Speedup { over: a[2].clone() }
        } else if a.len() == 2 {
            ExpectWhat::Metric {
                metric: a[1].clone(),
            }
        } else {
            self.err_help(Code::InvalidValue, "`expect` needs `LANE METRIC` or `LANE over OTHER speedup`", Self::name_span(node), "`expect LANE METRIC min=…` bounds a metric's mean over repeats (`expect fast time_ms max=12.5`), `expect LANE over OTHER speedup min=1.1` a lane's speedup over another; log patterns are `expect-log contains=…`");
            return None;
        };
        // a bound written with a value of the wrong type was said already (`max="5ms"`)
        let written = |k: &str| {
            node.entries()
                .iter()
                .any(|e| e.name().is_some_and(|n| n.value() == k))
        };
        if min.is_none() && max.is_none() {
            if !written("min") && !written("max") {
                self.err_help(
                    Code::MissingValue,
                    "`expect` needs `min=` or `max=`",
                    Self::name_span(node),
                    "a bound on the mean over repeats: `min=80000`, `max=12.5`",
                );
            }
            return None;
        }
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                self.err_help(
                    Code::InvalidValue,
                    format!("`expect`: min={lo} is above max={hi}"),
                    Self::name_span(node),
                    "swap them",
                );
                return None;
            }
        }
        let unit = props.get("unit").map(|g| g.val.to_string());
        if unit.is_some() && matches!(what, ExpectWhat::Speedup { .. }) {
            let span = Self::prop_span(&props, "unit", node);
            self.err_help(
                Code::InvalidValue,
                "a speedup is a ratio: it has no unit",
                span,
                "drop `unit=`",
            );
            return None;
        }
        Some(Expect {
            lane: (a[0] != "*").then(|| a[0].clone()),
            what,
            min,
            max,
            unit,
            loc,
        })
    }

    /// `expect-log [LANE] contains=… lacks=…`: one expectation per pattern.
    pub(super) fn expect_log(&mut self, node: &KdlNode) -> Vec<Expect> {
        let (args, props) = self.entries(node, &schema::EXPECT_LOG);
        let loc = self.loc(node.span());
        if args.len() > 1 {
            self.err_help(
                Code::InvalidValue,
                "`expect-log` takes at most one lane",
                args[1].loc.span,
                "write one `expect-log` per lane",
            );
        }
        let lane = args.first().map(|g| g.val.to_string()).filter(|l| l != "*");
        let mut out = Vec::new();
        for (k, present) in [("contains", true), ("lacks", false)] {
            let Some(g) = props.get(k) else { continue };
            let pattern = g.val.to_string();
            if let Err(e) = regex::Regex::new(&pattern) {
                self.err_help(
                    Code::InvalidValue,
                    format!("`{pattern}` is not a regular expression"),
                    g.loc.span,
                    e.to_string()
                        .lines()
                        .last()
                        .unwrap_or("")
                        .trim()
                        .to_string(),
                );
                continue;
            }
            out.push(Expect {
                lane: lane.clone(),
                what: ExpectWhat::Log { pattern, present },
                min: None,
                max: None,
                unit: None,
                loc: loc.clone(),
            });
        }
        if props.is_empty() {
            self.err_help(
                Code::MissingValue,
                "`expect-log` needs `contains=` or `lacks=`",
                Self::name_span(node),
                "for example `expect-log lacks=\"Traceback\"`",
            );
        }
        out
    }
}
