//! A bench node: its settings, repeat and adaptive repeat, profile, lanes, build arguments.

use std::collections::BTreeMap;

use kdl::KdlNode;
use miette::SourceSpan;

use crate::kinds::KindSpec;
use crate::model::diag::Code;
use crate::model::schema::{self, Args, Field, NodeSpec, Ty};
use crate::model::*;

use super::walker::*;

impl Decoder<'_> {
    pub(super) fn bench(&mut self, node: &KdlNode, kind: &'static KindSpec) -> Bench {
        let (args, _) = self.entries(node, &kind.top);
        let name = args
            .first()
            .map(|a| a.val.to_string())
            .unwrap_or_else(|| kind.node.to_string());
        let mut bench = Bench {
            kind: kind.id,
            naming: kind.naming(),
            name,
            settings: Params::new(),
            lanes: Vec::new(),
            sweep: Sweep::default(),
            repeat: kind.default_repeat,
            placement: kind.empty_placement(),
            config: Vec::new(),
            build: Default::default(),
            adaptive: None,
            expects: Vec::new(),
            profiles: Vec::new(),
            loc: self.loc(node.name().span()),
            repeat_loc: None,
        };
        let mut allowed: Vec<&str> = schema::COMMON_CHILDREN.iter().map(|n| n.name).collect();
        allowed.extend(kind.children.iter().map(|c| c.name));
        allowed.extend(kind.settings.iter().map(|s| s.name));
        let mut pending_sweeps: Vec<&KdlNode> = Vec::new();
        let mut repeat_at: Option<miette::SourceSpan> = None;
        let mut pending_lanes: Vec<&KdlNode> = Vec::new();
        let mut pending_excludes: Vec<&KdlNode> = Vec::new();
        for child in children(node) {
            let cname = child.name().value();
            if let Some(f) = kind.settings.iter().find(|s| s.name == cname) {
                self.bench_setting(&mut bench, child, f);
                continue;
            }
            match cname {
                "lane" => pending_lanes.push(child),
                "sweep" | "zip" => pending_sweeps.push(child),
                "exclude" => pending_excludes.push(child),
                "repeat" => self.bench_repeat(&mut bench, child, &mut repeat_at),
                "expect" => {
                    if let Some(e) = self.expect(child) {
                        bench.expects.push(e);
                    }
                }
                "expect-log" => {
                    let v = self.expect_log(child);
                    bench.expects.extend(v);
                }
                "profile" => self.bench_profile(&mut bench, child),
                "config" if kind.children.iter().any(|c| c.name == "config") => {
                    self.config_block(child, &mut Vec::new(), &mut bench.config, 0);
                }
                "cmake-args" if kind.children.iter().any(|c| c.name == "cmake-args") => {
                    self.cmake_args(child, kind, &mut bench);
                }
                "build-env" if kind.children.iter().any(|c| c.name == "build-env") => {
                    let spec = kind.children.iter().find(|c| c.name == "build-env");
                    let (_, props) = self.entries(child, spec.expect("declared"));
                    let env = self.env_props(props);
                    bench.build.env.extend(env);
                }
                _ => {
                    if let Some(spec) = kind.children.iter().find(|c| c.name == cname) {
                        let (args, props) = self.entries(child, spec);
                        let loc = self.loc(child.span());
                        self.placement_child(&mut bench, spec, args, props, loc, child);
                    } else {
                        self.unknown_node(child, &allowed, Some(kind.node));
                    }
                }
            }
        }
        Self::setting_defaults(&mut bench, kind);
        let params = bench_params(&bench, kind);
        for n in pending_sweeps {
            self.sweep(&mut bench.sweep, n, &params);
        }
        self.bench_lanes(&mut bench, pending_lanes, kind, &params);
        for n in pending_excludes {
            self.exclude(&mut bench.sweep, n, &params);
        }
        self.default_nodes_lanes(&mut bench, node, kind);
        bench
    }

    /// One of the kind's settings written as a child node (an error if it is set twice).
    pub(super) fn bench_setting(&mut self, bench: &mut Bench, child: &KdlNode, f: &Field) {
        let cname = child.name().value();
        let spec = NodeSpec {
            name: f.name,
            args: Args::One(*f),
            props: &[],
            free_props: false,
            doc: f.doc,
            example: "",
        };
        let (args, _) = self.entries(child, &spec);
        let Some(arg) = args.into_iter().next() else {
            return;
        };
        let Some(got) = self.typed(arg, f, "setting") else {
            return;
        };
        if let Some(prev) = bench.settings.get(cname) {
            let span = prev.loc.as_ref().map(|l| l.span).unwrap_or(got.loc.span);
            self.given_twice_as(
                format!("`{cname}` is set twice"),
                Self::name_span(child),
                (span, "first set here"),
                "keep one; to try several values use `sweep`",
            );
            return;
        }
        bench.settings.insert(
            cname.to_string(),
            Param {
                val: got.val,
                loc: Some(got.loc),
            },
        );
    }

    /// `repeat N`, or `repeat min=… max=…` (adaptive); an error if `repeat` is given twice.
    pub(super) fn bench_repeat(
        &mut self,
        bench: &mut Bench,
        child: &KdlNode,
        repeat_at: &mut Option<SourceSpan>,
    ) {
        if let Some(first) = *repeat_at {
            let help = "keep one (`--set repeat=N` overrides it for a run)";
            self.given_twice(
                "`repeat` is given twice",
                Self::name_span(child),
                first,
                help,
            );
            return;
        }
        *repeat_at = Some(Self::name_span(child));
        let (args, props) = self.entries(child, &schema::REPEAT);
        if let Some(a) = args.into_iter().next() {
            if let Some(g) = self.typed_as(a, &field_of(&schema::REPEAT), schema::REPEAT.name, "") {
                bench.repeat = g.val.as_int().unwrap_or(1);
                bench.repeat_loc = Some(g.loc);
            }
            if !props.is_empty() {
                self.err_help(
                    Code::InvalidValue,
                    "`repeat` takes a count or adaptive properties, not both",
                    Self::name_span(child),
                    "write `repeat 5`, or `repeat min=3 max=30 until-cv=2`",
                );
            }
        } else if !props.is_empty() {
            self.adaptive(bench, child, &props);
        }
    }

    /// `profile TOOL lane=… repeat=… args=… stats=…`.
    pub(super) fn bench_profile(&mut self, bench: &mut Bench, child: &KdlNode) {
        let (args, props) = self.entries(child, &schema::PROFILE);
        let Some(tool) = args
            .into_iter()
            .next()
            .and_then(|a| self.typed_as(a, &field_of(&schema::PROFILE), schema::PROFILE.name, ""))
        else {
            return;
        };
        bench.profiles.push(crate::model::Profile {
            tool: tool.val.to_string(),
            lane: props.get("lane").map(|g| g.val.to_string()),
            repeat: props.get("repeat").and_then(|g| g.val.as_int()),
            args: props
                .get("args")
                .map(|g| {
                    g.val
                        .to_string()
                        .split_whitespace()
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            stats: props.get("stats").and_then(|g| g.val.as_bool()) == Some(true),
            loc: self.loc(child.span()),
        });
    }

    /// Defaults for everything not written.
    pub(super) fn setting_defaults(bench: &mut Bench, kind: &KindSpec) {
        for f in kind.settings {
            if bench.settings.contains_key(f.name) {
                continue;
            }
            if let Some(v) = f.default.and_then(default_val) {
                bench
                    .settings
                    .insert(f.name.to_string(), Param { val: v, loc: None });
            }
        }
        if let Placement::Steps { params, .. } = &bench.placement {
            for (n, p) in params {
                bench.settings.entry(n.clone()).or_insert_with(|| p.clone());
            }
        }
    }

    /// The `lane` children, decoded once the settings are known (an error for a name given twice).
    pub(super) fn bench_lanes(
        &mut self,
        bench: &mut Bench,
        pending_lanes: Vec<&KdlNode>,
        kind: &KindSpec,
        params: &[(String, Field)],
    ) {
        // each lane's name to its place: a lookup, not a scan of those before (80k lanes took
        // 24 s)
        let mut seen: std::collections::HashMap<String, usize> = bench
            .lanes
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.clone(), i))
            .collect();
        for n in pending_lanes {
            if let Some(lane) = self.lane(n, kind, params) {
                if let Some(&i) = seen.get(&lane.name) {
                    let first = bench.lanes[i].loc.span;
                    self.declared_twice("lane", &lane.name, lane.loc.span, first);
                    continue;
                }
                seen.insert(lane.name.clone(), bench.lanes.len());
                bench.lanes.push(lane);
            }
        }
    }

    /// The kind's nodes for roles the file places nowhere, and its lanes when the file declares none.
    pub(super) fn default_nodes_lanes(
        &mut self,
        bench: &mut Bench,
        node: &KdlNode,
        kind: &KindSpec,
    ) {
        if let Placement::Nodes(nodes) = &mut bench.placement {
            // the kind's defaults for a role the file places nowhere (RecStore's P0: one local
            // client on GPU 0, one local PS on 15000)
            let loc = self.loc(node.name().span());
            for d in kind.default_nodes(&loc) {
                if !nodes.iter().any(|n| n.role == d.role) {
                    nodes.push(d);
                }
            }
        }
        if bench.lanes.is_empty() {
            let loc = self.loc(node.name().span());
            bench.lanes = kind
                .default_lanes(bench)
                .into_iter()
                .map(|name| Lane {
                    name,
                    overrides: Params::new(),
                    implicit: true,
                    incomplete: false,
                    loc: loc.clone(),
                })
                .collect();
        }
    }

    /// `cmake-args "-DA=1" "-DB=2"`: extra configure arguments. The source and build folders
    /// are the kind's (`-S .`, `-B <build-dir>`): an argument that moves them is refused.
    pub(super) fn cmake_args(
        &mut self,
        node: &KdlNode,
        kind: &'static KindSpec,
        bench: &mut Bench,
    ) {
        let spec = kind
            .children
            .iter()
            .find(|c| c.name == "cmake-args")
            .expect("declared");
        let (args, _) = self.entries(node, spec);
        for a in args {
            let Val::Str(v) = &a.val else {
                self.err_help(
                    Code::InvalidValue,
                    format!("`cmake-args` takes strings, not `{}`", a.val),
                    a.loc.span,
                    "quote each argument: `cmake-args \"-DENABLE_CUDA=OFF\"`",
                );
                continue;
            };
            let moves = ["-S", "-B", "--build", "--install", "-P", "-E"]
                .iter()
                .find(|f| v == *f || (f.len() == 2 && v.starts_with(*f)));
            if let Some(f) = moves {
                let d =
                    self.err(
                        Code::InvalidValue,
                        format!("`cmake-args` may not hold `{f}`: {}", match *f {
                        "-S" => "the source folder is the host's checkout (`repo`)",
                        "-B" => "the build folder is the `build-dir` setting",
                        _ => "these are configure arguments; the build and test steps are expr's",
                    }),
                        a.loc.span,
                    );
                d.help = Some(match *f {
                    "-B" => "set `build-dir \"build\"` instead".into(),
                    "-S" => "set the host's `repo=` instead".into(),
                    _ => "remove it".to_string(),
                });
                continue;
            }
            if v.is_empty() {
                self.err_help(
                    Code::InvalidValue,
                    "an empty `cmake-args` argument",
                    a.loc.span,
                    "remove it",
                );
                continue;
            }
            bench.build.cmake_args.push(v.clone());
        }
    }

    /// `repeat min=… max=… until-cv=…|until-ci=…`: max runs are planned; the runner stops a
    /// (lane, sweep point) early once its spread is small enough.
    pub(super) fn adaptive(
        &mut self,
        bench: &mut Bench,
        node: &KdlNode,
        props: &BTreeMap<String, Got>,
    ) {
        let int = |k: &str| props.get(k).and_then(|g| g.val.as_int());
        let num = |k: &str| props.get(k).and_then(|g| g.val.as_f64());
        let Some(max) = int("max") else {
            if node.entry("max").is_some() {
                return; // written but not a count: its type was said
            }
            self.err_help(
                Code::MissingValue,
                "adaptive `repeat` needs `max=`",
                Self::name_span(node),
                "the most runs of a point: `repeat min=3 max=30 until-cv=2`",
            );
            return;
        };
        let min = int("min").unwrap_or(3.min(max));
        // the one value to blame: `max` where it leaves no spread, else `min`
        let bad = if max < 2 {
            Some((
                "max",
                format!("adaptive `repeat`: max={max} leaves no second run to measure a spread on"),
                format!("write `max=` of 2 or more (`repeat min=3 max=30 …`), or a fixed `repeat {}` without a stopping rule", max.max(1)),
            ))
        } else if min < 2 {
            Some((
                "min",
                format!("adaptive `repeat`: min={min} is below 2: a spread needs two runs"),
                "write `min=2` or more (without `min=`: 3)".to_string(),
            ))
        } else if min > max {
            Some((
                "min",
                format!("adaptive `repeat`: min={min} is above max={max}"),
                format!("keep `min=` at most `max=`: `min={} max={max}`", 3.min(max)),
            ))
        } else {
            None
        };
        if let Some((key, msg, help)) = bad {
            let span = Self::prop_span(props, key, node);
            self.err_help(Code::InvalidValue, msg, span, help);
            return;
        }
        let (cv, ci, dec) = (num("until-cv"), num("until-ci"), num("until-decided"));
        for (k, v) in [("until-cv", cv), ("until-ci", ci), ("until-decided", dec)] {
            if let Some(v) = v.filter(|v| v.is_nan() || *v <= 0.0 || *v >= 100.0) {
                let span = Self::prop_span(props, k, node);
                self.err_help(
                    Code::InvalidValue,
                    format!("`{k}={v}` is not a percentage between 0 and 100"),
                    span,
                    format!("for example `{k}=2` (percent)"),
                );
                return;
            }
        }
        if cv.is_none() && ci.is_none() && dec.is_none() {
            self.err_help(Code::MissingValue, "adaptive `repeat` needs `until-cv=`, `until-ci=` or `until-decided=`", Self::name_span(node), "when to stop: `until-cv=2` (CV ≤ 2 %), `until-ci=1` (95 % CI half-width ≤ 1 % of the mean) or `until-decided=2` (each lane against the first: a difference, or within ±2 %)");
            return;
        }
        bench.repeat = max;
        bench.repeat_loc = props.get("max").map(|g| g.loc.clone());
        bench.adaptive = Some(Adaptive {
            min,
            max,
            until_cv: cv,
            until_ci: ci,
            until_decided: dec,
        });
    }
}

/// The settings a lane or sweep of this bench may name, with their types. The generic kind
/// adds its `param`s (typed by their default) and the wildcard `*` for free sweep variables.
pub fn bench_params(bench: &Bench, kind: &KindSpec) -> Vec<(String, Field)> {
    let mut out: Vec<(String, Field)> = kind
        .settings
        .iter()
        .map(|f| (f.name.to_string(), *f))
        .collect();
    if let Placement::Steps { params, .. } = &bench.placement {
        for (name, p) in params {
            // a param written without its default (said already): any value is its own
            if p.loc.is_none() {
                out.push((name.clone(), NO_DEFAULT));
                continue;
            }
            let ty = match p.val {
                Val::Int(_) => Ty::Int(i64::MIN, i64::MAX),
                Val::Float(_) => Ty::Float,
                Val::Bool(_) => Ty::Bool,
                Val::Str(_) => Ty::Str,
            };
            out.push((
                name.clone(),
                Field {
                    name: "param",
                    ty,
                    default: None,
                    optional: true,
                    doc: "",
                    example: "",
                },
            ));
        }
        out.push((
            "*".into(),
            Field {
                name: "*",
                ty: Ty::Str,
                default: None,
                optional: true,
                doc: "",
                example: "",
            },
        ));
    }
    out
}
