//! `config { … }` blocks: nested keys to the JSON a generated config file holds.

use kdl::{KdlNode, KdlValue};

use crate::model::diag::Code;
use crate::model::*;

use super::walker::*;

/// How deep a `config { … }` block may nest (the generated files are a few levels deep).
const CONFIG_DEPTH: usize = 16;

impl Decoder<'_> {
    /// A `config { … }` block: each node is a key; a node with children is an object, one
    /// argument a value, several arguments an array. Objects written twice merge; a key written
    /// twice, or both as a value and as an object, is an error.
    pub(super) fn config_block(
        &mut self,
        node: &KdlNode,
        path: &mut Vec<String>,
        out: &mut Vec<ConfigKey>,
        depth: usize,
    ) {
        if depth == 0 {
            if let Some(e) = node.entries().first() {
                self.err_help(
                    Code::ConfigKey,
                    "`config` takes no arguments, only a block of keys",
                    self.value_span(e),
                    "write `config { cache_ps { num_threads 32 } }`",
                );
            }
        }
        if depth >= CONFIG_DEPTH {
            self.err_help(
                Code::InputLimit,
                format!("`config` nests deeper than {CONFIG_DEPTH} levels"),
                Self::name_span(node),
                "the generated files are a few levels deep; check the braces",
            );
            return;
        }
        for child in children(node) {
            let key = child.name().value().to_string();
            path.push(key);
            let dotted = path.join(".");
            let has_block = child.children().is_some();
            if has_block {
                self.config_object(child, path, out, depth, &dotted);
            } else {
                self.config_leaf(child, path, out, &dotted);
            }
            path.pop();
        }
    }

    /// A key written with a block: an object, its keys one level down (an error if it also has
    /// a value, or is already set as a value).
    pub(super) fn config_object(
        &mut self,
        child: &KdlNode,
        path: &mut Vec<String>,
        out: &mut Vec<ConfigKey>,
        depth: usize,
        dotted: &str,
    ) {
        if let Some(e) = child.entries().first() {
            self.err_help(
                Code::ConfigKey,
                format!("config key `{dotted}` has both a value and a block"),
                self.value_span(e),
                "a key is a value (`num_threads 32`) or an object (`cache_ps { … }`), not both",
            );
        }
        if let Some(prev) = out.iter().find(|k| k.path == *path) {
            let span = prev.loc.span;
            self.given_twice_as(
                format!("config key `{dotted}` is a value and also an object"),
                Self::name_span(child),
                (span, "set as a value here"),
                "a key is a value or an object, not both; keep one",
            );
        } else {
            self.config_block(child, path, out, depth + 1);
        }
    }

    /// A key written with arguments: its value, unless it is wrong or clashes with one set
    /// before.
    pub(super) fn config_leaf(
        &mut self,
        child: &KdlNode,
        path: &[String],
        out: &mut Vec<ConfigKey>,
        dotted: &str,
    ) {
        let Some(mut vals) = self.config_entries(child, dotted) else {
            return;
        };
        let value = match vals.len() {
            0 => {
                self.err_help(
                    Code::ConfigKey,
                    format!("config key `{dotted}` has no value"),
                    Self::name_span(child),
                    format!(
                        "give it one (`{} 32`), several for an array, or a block for an object",
                        child.name().value()
                    ),
                );
                return;
            }
            1 => vals.pop().unwrap_or_default(),
            _ => serde_json::Value::Array(vals),
        };
        // written twice, or under a key already set as a value
        let clash = out
            .iter()
            .find(|k| path.starts_with(&k.path) || k.path.starts_with(path));
        if let Some(prev) = clash {
            let (span, what) = (prev.loc.span, prev.dotted());
            let d = self.err(
                Code::DuplicateName,
                if what == dotted {
                    format!("config key `{dotted}` is set twice")
                } else if what.len() < dotted.len() {
                    format!("config key `{dotted}` is inside `{what}`, which is set as a value")
                } else {
                    format!(
                        "config key `{dotted}` is a value and also an object (it holds `{what}`)"
                    )
                },
                Self::name_span(child),
            );
            d.related.push((span, "first set here".into()));
            d.help = Some("keep one; objects written twice merge, values do not".into());
            return;
        }
        out.push(ConfigKey {
            path: path.to_vec(),
            value,
            loc: self.loc(child.span()),
        });
    }

    /// A key's arguments as JSON values; None when one is wrong (each reported).
    pub(super) fn config_entries(
        &mut self,
        child: &KdlNode,
        dotted: &str,
    ) -> Option<Vec<serde_json::Value>> {
        let mut vals = Vec::new();
        let mut ok = true;
        for e in child.entries() {
            if let Some(n) = e.name() {
                self.err_help(
                    Code::ConfigKey,
                    format!("config key `{dotted}` has a property `{}`", n.value()),
                    self.value_span(e),
                    format!(
                        "write nested keys as a block: `{} {{ {} … }}`",
                        child.name().value(),
                        n.value()
                    ),
                );
                ok = false;
                continue;
            }
            let value = match e.value() {
                KdlValue::String(s) => Ok(serde_json::Value::from(s.clone())),
                KdlValue::Integer(i) => i64::try_from(*i)
                    .map(serde_json::Value::from)
                    .map_err(|_| format!("{i} does not fit in 64 bits")),
                KdlValue::Float(f) => serde_json::Number::from_f64(*f)
                    .map(serde_json::Value::Number)
                    .ok_or_else(|| format!("{f} is not a JSON number")),
                KdlValue::Bool(b) => Ok(serde_json::Value::Bool(*b)),
                KdlValue::Null => Ok(serde_json::Value::Null),
            };
            match value {
                Ok(v) => vals.push(v),
                Err(why) => {
                    let m = format!("config key `{dotted}`: {why}");
                    self.err(Code::InvalidValue, m, self.value_span(e));
                    ok = false;
                }
            }
        }
        if !ok {
            return None;
        }
        Some(vals)
    }
}
