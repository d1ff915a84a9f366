//! Decoding lanes, sweeps, zip groups and exclusions.

use kdl::{KdlEntry, KdlNode};

use super::walker::{children, Decoder};
use crate::kinds::KindSpec;
use crate::model::diag::{Code, Diag};
use crate::model::schema::{self, Field};
use crate::model::*;
use crate::util::suggest;

impl Decoder<'_> {
    /// `sweep axis v…` or `zip { axis v…; … }`.
    pub(crate) fn sweep(&mut self, sweep: &mut Sweep, node: &KdlNode, params: &[(String, Field)]) {
        if node.name().value() == "zip" {
            self.entries(node, &schema::ZIP);
            let mut group = Vec::new();
            let mut said = false;
            for child in children(node) {
                if self.zip_child_not_an_axis(sweep, child, params) {
                    said = true;
                    continue;
                }
                // an axis is its values: a property or a block of its own was dropped unsaid
                if let Some(p) = child.entries().iter().find(|e| e.name().is_some()) {
                    let name = p.name().map(|n| n.value()).unwrap_or_default();
                    let d = self.err(
                        Code::UnknownProperty,
                        format!("a `zip` axis takes values only, not `{name}=`"),
                        p.span(),
                    );
                    d.label = Some("not a value".into());
                    d.help = Some(format!(
                        "list the axis's values: `{} 1 2 3`",
                        child.name().value()
                    ));
                }
                if child.children().is_some() {
                    let d = self.err(
                        Code::UnknownNode,
                        format!(
                            "a `zip` axis takes no block (`{} … {{ }}`)",
                            child.name().value()
                        ),
                        child.span(),
                    );
                    d.help =
                        Some("a zip's axes are its children, each a name and its values".into());
                }
                match self.axis(
                    child,
                    child.name().value().to_string(),
                    child
                        .entries()
                        .iter()
                        .filter(|e| e.name().is_none())
                        .collect(),
                    params,
                    true,
                ) {
                    Some(axis) => group.push(axis),
                    None => sweep.dropped.push(child.name().value().to_string()),
                }
            }
            if group.is_empty() && said {
                return;
            }
            if group.is_empty() {
                self.err_help(
                    Code::MissingValue,
                    "`zip` needs at least one axis",
                    node.span(),
                    "for example `zip { batch-size 1024 4096; steps 80 20 }`",
                );
                return;
            }
            let n = group[0].values.len();
            for a in &group[1..] {
                if a.values.len() != n {
                    let span = group[0].loc.span;
                    let m = format!(
                        "zip axes have unequal lengths: `{}` has {n} values, `{}` has {}",
                        group[0].name,
                        a.name,
                        a.values.len()
                    );
                    let d = self.err(Code::ZipLength, m, a.loc.span);
                    d.related.push((span, format!("{n} values here")));
                    d.help = Some(
                        "zip axes advance together: give each the same number of values".into(),
                    );
                }
            }
            for (i, a) in group.iter().enumerate() {
                self.check_axis_dup(sweep, &group[..i], a);
            }
            self.check_zip_rows(&group);
            sweep.zips.push(group);
            return;
        }
        self.entries(node, &schema::SWEEP);
        let mut entries: Vec<&KdlEntry> = node
            .entries()
            .iter()
            .filter(|e| e.name().is_none())
            .collect();
        if entries.is_empty() {
            return;
        }
        let first = entries.remove(0);
        let Some(name) = self.value(first) else {
            return;
        };
        let Val::Str(axis_name) = name.val else {
            self.err_help(
                Code::WrongType,
                "a sweep starts with the setting's name",
                name.loc.span,
                "for example `sweep batch-size 1024 2048`",
            );
            return;
        };
        match self.axis(node, axis_name.clone(), entries, params, false) {
            Some(axis) => {
                self.check_axis_dup(sweep, &[], &axis);
                sweep.axes.push(axis);
            }
            None => sweep.dropped.push(axis_name),
        }
    }

    /// A child of a `zip` that is no axis, said: `sweep x 1 2` (the axis without `sweep`), or a
    /// bench's own node (`exclude`, `lane`, `repeat`, a second `zip`) written inside it.
    fn zip_child_not_an_axis(
        &mut self,
        sweep: &mut Sweep,
        child: &KdlNode,
        params: &[(String, Field)],
    ) -> bool {
        // `zip { sweep x 1 2 }` would sweep a setting named `sweep` over `x`, 1 and 2
        if child.name().value() == "sweep" {
            let axis = child
                .entries()
                .first()
                .and_then(|e| e.value().as_string())
                .unwrap_or("batch-size");
            let d = self.err(
                Code::UnknownNode,
                "`sweep` inside `zip`: a zip's children are its axes themselves",
                child.span(),
            );
            d.label = Some("not an axis".into());
            d.help = Some(format!(
                "write the axis and its values without `sweep`: `{axis} 1 2`"
            ));
            sweep.dropped.push(axis.to_string());
            return true;
        }
        // a bench's own node written inside the zip: said as that, not as an axis named so
        let name = child.name().value();
        if params.iter().any(|(n, _)| n == name)
            || !matches!(
                name,
                "zip" | "exclude" | "lane" | "repeat" | "param" | "expect"
            )
        {
            return false;
        }
        let d = self.err(
            Code::UnknownNode,
            format!("`{name}` inside `zip`: a zip's children are its axes"),
            child.span(),
        );
        d.label = Some("not an axis".into());
        d.help = Some(format!(
            "write `{name}` beside the zip, in the bench; a zip holds axes, `x 1 2`"
        ));
        true
    }

    /// A zip's row (its axes' values at one place) listed twice: the same points twice.
    fn check_zip_rows(&mut self, group: &[Axis]) {
        let rows = group.iter().map(|a| a.values.len()).min().unwrap_or(0);
        let row = |i: usize| -> Vec<Option<crate::model::ValKey>> {
            group.iter().map(|a| a.values[i].key()).collect()
        };
        let mut seen: std::collections::HashMap<Vec<Option<crate::model::ValKey>>, usize> =
            Default::default();
        for i in 0..rows {
            let r = row(i);
            // a value without a key (a NaN) is never the same as another
            if r.iter().any(Option::is_none) {
                continue;
            }
            if let Some(first) = seen.insert(r, i) {
                let text = group
                    .iter()
                    .map(|a| format!("{}={}", a.name, a.values[i].to_kdl()))
                    .collect::<Vec<_>>()
                    .join(" ");
                let at = group[0].loc.span;
                let m = format!(
                    "the zip lists the row {text} twice (its values number {} and {})",
                    first + 1,
                    i + 1
                );
                self.err_help(
                    Code::InvalidValue,
                    m,
                    at,
                    "each row of a zip makes its own points: list a row once (use `repeat` for \
                     more runs)",
                );
                return;
            }
        }
    }

    /// `axis` swept before: by the bench's sweeps so far, or earlier in its own zip (`zip`).
    fn check_axis_dup(&mut self, sweep: &Sweep, zip: &[Axis], axis: &Axis) {
        let prev = sweep.all_axes().chain(zip).find(|a| a.name == axis.name);
        if let Some(prev) = prev {
            let span = prev.loc.span;
            let d = self.err(
                Code::DuplicateName,
                format!("`{}` is swept twice", axis.name),
                axis.loc.span,
            );
            d.related.push((span, "first swept here".into()));
            d.help = Some("list every value in one `sweep`".into());
        }
    }

    /// An axis and its values, each of the setting's type. A value listed twice is refused,
    /// but in a `zip` (`in_zip`), whose points are its rows: there a row listed twice is.
    fn axis(
        &mut self,
        node: &KdlNode,
        name: String,
        entries: Vec<&KdlEntry>,
        params: &[(String, Field)],
        in_zip: bool,
    ) -> Option<Axis> {
        let field = params.iter().find(|(n, _)| *n == name).map(|(_, f)| *f);
        let loc = self.loc(node.span());
        let field = match field {
            Some(f) => Some(f),
            // The generic kind may sweep free variables.
            None if params.iter().any(|(n, _)| n == "*") => None,
            None => {
                let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
                let help = suggest::help_for(&name, &names, "the settings");
                let d = self.err(
                    Code::UnknownNode,
                    format!("`{name}` is not a setting that can be swept"),
                    node.span(),
                );
                d.label = Some("unknown setting".into());
                d.help = Some(help);
                return None;
            }
        };
        let mut values = Vec::new();
        let mut seen: std::collections::HashSet<crate::model::ValKey> = Default::default();
        let mut refused = false;
        for e in entries {
            let Some(g) = self.value(e) else {
                refused = true;
                continue;
            };
            let g = match &field {
                Some(f) => match self.typed_as(g, f, &name, "sweep value of") {
                    Some(g) => g,
                    None => {
                        refused = true;
                        continue;
                    }
                },
                None => g,
            };
            if !in_zip && g.val.key().is_some_and(|k| !seen.insert(k)) {
                self.diags
                    .push(repeated_sweep_value(&name, &g.val).at(&self.src, g.loc.span));
                continue;
            }
            values.push(g.val);
        }
        // every value refused (said each): not "no values" as well
        if values.is_empty() && refused {
            return None;
        }
        if values.is_empty() {
            self.err_help(
                Code::MissingValue,
                format!("sweep of `{name}` has no values"),
                node.span(),
                format!(
                    "for example `sweep {name} {}`",
                    field
                        .map(|f| f.example)
                        .filter(|e| !e.is_empty())
                        .unwrap_or("1 2")
                ),
            );
            return None;
        }
        Some(Axis { name, values, loc })
    }

    pub(crate) fn lane(
        &mut self,
        node: &KdlNode,
        kind: &KindSpec,
        params: &[(String, Field)],
    ) -> Option<Lane> {
        let (args, _) = self.entries(node, &schema::LANE);
        let first = args.first()?;
        let name = first.val.to_string();
        // a name the reports cannot tell apart from another: empty, or a space at an end (a
        // line break there is shown escaped, `\n`)
        // (white space that shows as nothing: a no-break or ideographic space too)
        let blank =
            |c: char| c.is_whitespace() && !c.is_control() && !matches!(c, '\u{2028}' | '\u{2029}');
        if name.is_empty() || name.trim_matches(blank) != name {
            let d = self.err(
                Code::InvalidValue,
                if name.is_empty() {
                    "a lane's name is empty".to_string()
                } else if name.trim_matches(blank).is_empty() {
                    format!(
                        "lane name `{}` is only white space",
                        name.escape_debug()
                    )
                } else {
                    format!(
                        "lane name `{}` starts or ends with a space, which tables and file names do not show",
                        name.escape_debug()
                    )
                },
                first.loc.span,
            );
            d.label = Some("lane name".into());
            d.help = Some(if name.trim_matches(blank).is_empty() {
                "name the lane: `lane fast`".into()
            } else {
                format!(
                    "write it without: `lane \"{}\"`",
                    name.trim_matches(blank).escape_debug()
                )
            });
            return None;
        }
        let mut overrides = Params::new();
        for e in node.entries() {
            let Some(key) = e.name() else { continue };
            let k = key.value();
            if let Some((_, why)) = kind.lane_forbidden.iter().find(|(n, _)| *n == k) {
                self.err_help(
                    Code::UnknownProperty,
                    format!("a lane cannot set `{k}`"),
                    key.span(),
                    *why,
                );
                continue;
            }
            let Some((_, field)) = params.iter().find(|(n, _)| n == k) else {
                let names: Vec<&str> = params
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .filter(|n| *n != "*")
                    .collect();
                let help = suggest::help_for(k, &names, "the settings");
                let d = self.err(
                    Code::UnknownProperty,
                    format!("unknown property `{k}` on `lane`"),
                    key.span(),
                );
                d.label = Some("not a setting".into());
                d.help = Some(help);
                continue;
            };
            let field = *field;
            let Some(g) = self.value(e) else { continue };
            let Some(g) = self.typed_as(g, &field, k, "lane setting") else {
                continue;
            };
            overrides.insert(
                k.to_string(),
                Param {
                    val: g.val,
                    loc: Some(g.loc),
                },
            );
        }
        // a property that was not stored was reported above
        let incomplete =
            node.entries().iter().filter(|e| e.name().is_some()).count() != overrides.len();
        Some(Lane {
            name,
            overrides,
            implicit: false,
            incomplete,
            loc: self.loc(node.span()),
        })
    }

    pub(crate) fn exclude(
        &mut self,
        sweep: &mut Sweep,
        node: &KdlNode,
        params: &[(String, Field)],
    ) {
        let (_, props) = self.entries(node, &schema::EXCLUDE);
        if props.is_empty() {
            self.err_help(
                Code::MissingValue,
                "`exclude` needs at least one `axis=value`",
                node.span(),
                "for example `exclude lane=\"TorchRec-HBM\" batch-size=4096`",
            );
            return;
        }
        let mut when = Vec::new();
        for (k, g) in props {
            // an axis dropped for its own errors (said there)
            if sweep.dropped.contains(&k) {
                continue;
            }
            if k != "lane" && !sweep.has_axis(&k) {
                let mut names: Vec<&str> = sweep.axis_names().collect();
                names.push("lane");
                let help = suggest::help_for(&k, &names, "the axes");
                self.err_help(
                    Code::UnknownProperty,
                    format!("`{k}` is not a sweep axis"),
                    g.loc.span,
                    help,
                );
                continue;
            }
            let g = match params.iter().find(|(n, _)| *n == k) {
                Some((_, f)) => match self.typed_as(g, f, &k, "exclusion") {
                    Some(g) => g,
                    None => continue,
                },
                None => g,
            };
            when.push((k, g.val));
        }
        sweep.excludes.push(Exclude {
            when,
            loc: self.loc(node.span()),
        });
    }
}

/// A sweep that lists a value twice, in the file or in `--set key=a,a`.
pub fn repeated_sweep_value(name: &str, val: &Val) -> Diag {
    Diag::error(
        Code::InvalidValue,
        format!("`{name}` lists {} twice", val.to_kdl()),
    )
    .label("again")
    .help("each sweep value makes its own points: list a value once (use `repeat` for more runs)")
}
