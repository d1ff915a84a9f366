//! Decoding the kind-specific placement nodes: clients, PS servers, rank nodes, params and steps.

use std::collections::BTreeMap;

use kdl::KdlNode;

use super::walker::{Decoder, Got};
use crate::model::diag::Code;
use crate::model::schema::NodeSpec;
use crate::model::*;

impl Decoder<'_> {
    pub(crate) fn placement_child(
        &mut self,
        bench: &mut Bench,
        spec: &NodeSpec,
        args: Vec<Got>,
        props: BTreeMap<String, Got>,
        loc: Loc,
        node: &KdlNode,
    ) {
        let what = spec.name;
        match (&mut bench.placement, what) {
            (Placement::Nodes(nodes), role) => Self::placed_node(nodes, spec, role, &props, loc),
            (Placement::Steps { params, .. }, "param") => self.param_node(params, args),
            (
                Placement::Steps { steps, .. },
                "build" | "test" | "serve" | "run" | "prepare" | "cleanup",
            ) => self.step_node(steps, what, args, &props, loc, node),
            (Placement::Steps { collect, .. }, "collect") => {
                self.collect_node(collect, args, &props, loc, node)
            }
            _ => {}
        }
    }

    /// A process placed on a host (`client`, `ps`, `node`, …) with the kind's integer properties.
    fn placed_node(
        nodes: &mut Vec<PlacedNode>,
        spec: &NodeSpec,
        role: &str,
        props: &BTreeMap<String, Got>,
        loc: Loc,
    ) {
        let int = |k: &str, d: i64| props.get(k).and_then(|g| g.val.as_int()).unwrap_or(d);
        let string = |k: &str| props.get(k).map(|g| g.val.to_string());
        // the kind's integer properties, in its schema's order, written or defaulted
        let ints = spec
            .props
            .iter()
            .filter(|f| f.name != "host")
            .map(|f| {
                let d = f.default.and_then(|d| d.parse().ok()).unwrap_or(0);
                (f.name.to_string(), int(f.name, d))
            })
            .collect();
        nodes.push(PlacedNode {
            role: role.to_string(),
            host: string("host").unwrap_or_default(),
            props: ints,
            prop_locs: props
                .iter()
                .map(|(k, g)| (k.clone(), g.loc.clone()))
                .collect(),
            loc,
        });
    }

    /// `param NAME DEFAULT` of a generic bench (an error if it has no default or is declared twice).
    fn param_node(&mut self, params: &mut Vec<(String, Param)>, args: Vec<Got>) {
        let mut it = args.into_iter();
        let Some(name) = it.next() else { return };
        let val = match it.next() {
            Some(v) => v,
            None => {
                self.err_help(
                    Code::MissingValue,
                    format!("param `{}` needs a default value", name.val),
                    name.loc.span,
                    format!("for example `param {} 64`", name.val),
                );
                // declared all the same: the templates and lanes that use it are not said to
                // use an unknown name (helper 78: one missing default made four errors)
                Got {
                    val: Val::Str(String::new()),
                    loc: name.loc.clone(),
                }
            }
        };
        if let Some(extra) = it.next() {
            self.err_help(
                Code::UnknownProperty,
                "`param` takes a name and one default",
                extra.loc.span,
                "to try several values, add `sweep NAME v1 v2…`",
            );
        }
        let pname = name.val.to_string();
        // a bench's first param starts its own names
        if params.is_empty() {
            self.param_names.clear();
        }
        if !self.param_names.insert(pname.clone()) {
            self.err_help(
                Code::DuplicateName,
                format!("param `{pname}` is declared twice"),
                name.loc.span,
                "keep one",
            );
            return;
        }
        // (no default: no place, and a value of any type where a lane or sweep gives one)
        let written = val.loc.span != name.loc.span;
        params.push((
            pname,
            Param {
                val: val.val,
                loc: written.then_some(val.loc),
            },
        ));
    }

    /// A step (`build`, `test`, `serve`, `run`, `prepare`, `cleanup`) of a generic bench.
    fn step_node(
        &mut self,
        steps: &mut Vec<StepSpec>,
        what: &str,
        args: Vec<Got>,
        props: &BTreeMap<String, Got>,
        loc: Loc,
        node: &KdlNode,
    ) {
        let int = |k: &str, d: i64| props.get(k).and_then(|g| g.val.as_int()).unwrap_or(d);
        let string = |k: &str| props.get(k).map(|g| g.val.to_string());
        let kind = match what {
            "build" => StepKind::Build,
            "test" => StepKind::Test,
            "serve" => StepKind::Serve,
            "prepare" => StepKind::Prepare,
            "cleanup" => StepKind::Cleanup,
            _ => StepKind::Run,
        };
        let (name, command) = if kind == StepKind::Serve {
            let mut it = args.into_iter();
            let n = it.next();
            let c = it.next();
            match (n, c) {
                (Some(n), Some(c)) => (n.val.to_string(), c),
                (Some(n), None) => {
                    let d = self.err(
                        Code::MissingValue,
                        "`serve` needs a name and a command",
                        n.loc.span,
                    );
                    d.help =
                        Some("for example `serve table \"python3 server.py\" port=7070`".into());
                    return;
                }
                _ => return,
            }
        } else {
            // a bare `run`: a step without a command, which the kind's rules refuse at it
            // (helper 78: it was "bench `b` has no `run` step", at the bench)
            let c = args.into_iter().next().unwrap_or_else(|| Got {
                val: Val::Str(String::new()),
                loc: Loc {
                    src: self.src.clone(),
                    span: Self::name_span(node),
                },
            });
            let n = format!(
                "{}{}",
                what,
                steps.iter().filter(|s| s.kind == kind).count() + 1
            );
            (n, c)
        };
        if kind == StepKind::Serve && implicit_name(&name) {
            self.err_help(Code::DuplicateName, format!(
                    "a server named `{name}` takes (or starts as) a name expr gives other steps"
                ), node.span(), format!(
                "rename it: the steps written `build`, `test`, `run`, `prepare`, `cleanup` are called `run1`, `build2`, … (a warmup round's `prepare1-w0`, `warmup0-run1`), and a log of `{name}` could be taken for theirs"
            ));
            return;
        }
        if kind == StepKind::Serve && steps.iter().any(|s| s.name == name) {
            self.err_help(
                Code::DuplicateName,
                format!("two servers are named `{name}`"),
                node.span(),
                "give each server a distinct name",
            );
            return;
        }
        let port = props.get("port").and_then(|g| g.val.as_int());
        let port_template = props
            .get("port")
            .and_then(|g| g.val.as_str())
            .map(str::to_string);
        // a `port=` of the wrong type was said already
        let written = |k: &str| {
            node.entries()
                .iter()
                .any(|e| e.name().is_some_and(|n| n.value() == k))
        };
        if kind == StepKind::Serve && !written("port") && !written("ready-log") {
            self.err_help(
                Code::MissingValue,
                format!("server `{name}` has no readiness condition"),
                node.span(),
                "add `port=N` (TCP connect) or `ready-log=\"regex\"`",
            );
        }
        // `exit-ok=` (a run step's property only: the schema refuses it elsewhere)
        let exit_ok = match props.get("exit-ok") {
            Some(g) => match crate::model::ExitOk::parse(&g.val.to_string()) {
                Ok(x) => Some(x),
                Err(why) => {
                    self.err_help(
                        Code::InvalidValue,
                        format!("`exit-ok` is `any` or exit codes: {why}"),
                        g.loc.span,
                        "for example `exit-ok=\"any\"` (every exit code) or `exit-ok=\"1,2\"`",
                    );
                    None
                }
            },
            None => None,
        };
        steps.push(StepSpec {
            exit_ok,
            kind,
            name,
            host: string("host").unwrap_or_else(|| "local".into()),
            command: command.val.to_string(),
            command_loc: command.loc,
            cwd: string("cwd"),
            timeout: int(
                "timeout",
                if kind == StepKind::Serve {
                    int("ready-timeout", 30)
                } else {
                    600
                },
            ),
            port,
            port_template,
            port_loc: props.get("port").map(|g| g.loc.clone()),
            ready_log: string("ready-log"),
            lanes: string("lanes").map(|s| s.split(',').map(|x| x.trim().to_string()).collect()),
            lanes_loc: props.get("lanes").map(|g| g.loc.clone()),
            gpus: props.get("gpus").and_then(|g| g.val.as_int()),
            loc,
        });
    }

    /// The `collect` of a generic bench (an error if it lacks what its format needs, or is the
    /// second).
    fn collect_node(
        &mut self,
        collect: &mut Option<CollectSpec>,
        args: Vec<Got>,
        props: &BTreeMap<String, Got>,
        loc: Loc,
        node: &KdlNode,
    ) {
        let string = |k: &str| props.get(k).map(|g| g.val.to_string());
        let Some(format) = args.into_iter().next() else {
            return;
        };
        let at = format.loc.span;
        let format = format.val.to_string();
        // (an unknown one was read as a regex with an empty pattern: `"jsn"` checked clean and
        // every point had no data)
        const FORMATS: [&str; 4] = ["csv", "json", "regex", "nccl-tests"];
        if !FORMATS.contains(&format.as_str()) {
            let d = self.err(
                Code::InvalidValue,
                format!("`{format}` is not a collector"),
                at,
            );
            d.label = Some("not a collector".into());
            let all = "the collectors are `csv`, `json`, `regex` and `nccl-tests`";
            d.help = Some(
                match crate::util::suggest::did_you_mean(&format, FORMATS.iter().copied()) {
                    Some(near) => format!("did you mean `{near}`? ({all})"),
                    None => all.to_string(),
                },
            );
            return;
        }
        let need = match format.as_str() {
            "regex" => "pattern",
            "nccl-tests" => "",
            _ => "path",
        };
        if !need.is_empty() && !props.contains_key(need) {
            self.err_help(
                Code::MissingValue,
                format!("a {format} collector needs `{need}`"),
                node.span(),
                match need {
                    "pattern" => "add `pattern=\"rate=(?P<rate>[0-9.]+)\"`",
                    _ => "add `path=\"steps.csv\"` (relative to the point's output dir)",
                },
            );
        }
        if collect.is_some() {
            self.err_help(
                Code::DuplicateName,
                "a bench takes one `collect`",
                node.span(),
                "keep one",
            );
            return;
        }
        let timing = self.collect_timing(node, &format);
        *collect = Some(CollectSpec {
            format,
            path: string("path"),
            pattern: string("pattern"),
            metric: string("metric"),
            direction: string("direction"),
            timing,
            loc,
        });
    }

    /// The block of `collect "csv" … { stages …; total …; data-loading … }`.
    fn collect_timing(&mut self, node: &KdlNode, format: &str) -> Option<Box<TimingSpec>> {
        use crate::model::schema::COLLECT_CHILDREN;
        let kids = super::walker::children(node);
        if kids.is_empty() {
            return None;
        }
        let names: Vec<&str> = COLLECT_CHILDREN.iter().map(|c| c.name).collect();
        let (mut stages, mut total, mut dl) = (Vec::new(), None, None);
        let mut first: Option<Loc> = None;
        for child in kids {
            let cname = child.name().value();
            let Some(spec) = COLLECT_CHILDREN.iter().find(|c| c.name == cname) else {
                self.unknown_node(child, &names, Some("collect"));
                continue;
            };
            first.get_or_insert_with(|| self.loc(child.span()));
            let (args, _) = self.entries(child, spec);
            let vals: Vec<String> = args.iter().map(|a| a.val.to_string()).collect();
            match cname {
                "stages" => stages.extend(vals),
                "total" => total = vals.into_iter().next(),
                _ => dl = vals.into_iter().next(),
            }
        }
        let at = first?;
        if format != "csv" {
            self.err_help(Code::InvalidValue, format!("a {format} collector has no columns to check: `stages` and `total` are for `collect \"csv\"`"), at.span, "remove the block, or collect from a per-step CSV");
            return None;
        }
        let Some(total) = total else {
            self.err_help(
                Code::MissingValue,
                "`stages` without a `total` to check them against",
                at.span,
                "add `total \"step_ms\"` (the CSV's column of the step total)",
            );
            return None;
        };
        if stages.len() < 2 {
            self.err_help(Code::MissingValue, "a timing check needs at least two `stages`", at.span, "name the CSV's columns that are disjoint parts of a step: `stages \"load_ms\" \"fwd_ms\"`");
            return None;
        }
        if let Some(d0) = &dl {
            if !stages.contains(d0) {
                self.err_help(
                    Code::InvalidValue,
                    format!("`data-loading \"{d0}\"` is not one of the `stages`"),
                    at.span,
                    format!("add \"{d0}\" to `stages`, or name one of them"),
                );
                return None;
            }
        }
        if stages.contains(&total) {
            self.err_help(
                Code::InvalidValue,
                format!("`{total}` is both a stage and the total"),
                at.span,
                "the total is the column the stages add up to",
            );
            return None;
        }
        Some(Box::new(TimingSpec {
            stages,
            total,
            data_loading: dl,
        }))
    }
}

/// A name expr gives a step that has none, or one that starts as such a name does followed by
/// `-`: its logs (`NAME-RUN_ID-HOST.log`) could be taken for theirs. expr's names are `run1`,
/// `build2`, … (from 1), a warmup round's `prepare1-w0` and `warmup0-run1`.
fn implicit_name(name: &str) -> bool {
    let numbered = |n: &str| {
        ["build", "test", "run", "prepare", "cleanup"]
            .iter()
            .any(|w| {
                n.strip_prefix(w).is_some_and(|d| {
                    !d.is_empty() && !d.starts_with('0') && d.bytes().all(|b| b.is_ascii_digit())
                })
            })
    };
    let first = name.split('-').next().unwrap_or(name);
    let warmup = name
        .strip_prefix("warmup")
        .and_then(|r| r.split_once('-'))
        .is_some_and(|(d, rest)| {
            !d.is_empty()
                && d.bytes().all(|b| b.is_ascii_digit())
                && numbered(rest.split('-').next().unwrap_or(rest))
        });
    numbered(first) || warmup
}

#[cfg(test)]
mod tests {
    /// A server may not take a name of expr's steps, nor start as one does (`run1-b_r0`: its log
    /// `run1-b_r0-b_r1-local.log` read as a run log of `b_r0`); other names are free.
    #[test]
    fn a_server_name_that_a_steps_log_could_be_taken_for_is_refused() {
        for bad in [
            "run1",
            "build2",
            "run1-b_r0",
            "prepare1-w0",
            "cleanup3-w1",
            "warmup0-run1",
            "warmup12-prepare1-x",
        ] {
            assert!(super::implicit_name(bad), "{bad}");
        }
        for ok in [
            "runner",
            "run0",
            "run01",
            "build0",
            "warmup1-cache",
            "warmup",
            "srv",
            "table-1",
            "run-1",
        ] {
            assert!(!super::implicit_name(ok), "{ok}");
        }
    }
}
