//! The hand-written walker from `KdlDocument` to `Experiment`. Every problem becomes a located
//! diagnostic and decoding continues, so one `check` shows everything.

use std::collections::BTreeMap;
use std::sync::Arc;

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use miette::SourceSpan;

use crate::kinds::{self, KindSpec};
use crate::model::source::Source;
use crate::model::*;
use crate::parse::diag::{Code, Diag, Diags};
use crate::parse::schema::{self, Args, Field, NodeSpec, Ty};
use crate::util::suggest;

/// A decoded property or argument: value and location.
#[derive(Debug, Clone)]
pub struct Got {
    pub val: Val,
    pub loc: Loc,
}

pub struct Decoder<'a> {
    pub src: Arc<Source>,
    pub diags: &'a mut Diags,
}

/// Decode a parsed document. Returns `None` only when nothing usable was found.
pub fn decode(src: &Arc<Source>, doc: &KdlDocument, diags: &mut Diags) -> Option<Experiment> {
    let mut d = Decoder {
        src: src.clone(),
        diags,
    };
    d.document(doc)
}

impl Decoder<'_> {
    pub fn loc(&self, span: SourceSpan) -> Loc {
        Loc {
            src: self.src.clone(),
            span,
        }
    }

    pub(crate) fn err(
        &mut self,
        code: Code,
        msg: impl Into<String>,
        span: SourceSpan,
    ) -> &mut Diag {
        self.diags.push(Diag::error(code, msg).at(&self.src, span));
        self.diags.0.last_mut().expect("just pushed")
    }

    pub(crate) fn name_span(node: &KdlNode) -> SourceSpan {
        node.name().span()
    }

    /// The span of an entry's value (after `key=` for properties).
    pub(crate) fn value_span(&self, e: &KdlEntry) -> SourceSpan {
        let span = e.span();
        if e.name().is_some() {
            let text = self.src.slice(span.offset(), span.len());
            if let Some(eq) = text.find('=') {
                let start = span.offset() + eq + 1;
                let rest = &text[eq + 1..];
                let trimmed = rest.trim_start();
                let lead = rest.len() - trimmed.len();
                return (start + lead, trimmed.trim_end().len()).into();
            }
        }
        let text = self.src.slice(span.offset(), span.len());
        (span.offset(), text.trim_end().len()).into()
    }

    /// Convert a KDL value.
    pub(crate) fn value(&mut self, e: &KdlEntry) -> Option<Got> {
        let span = self.value_span(e);
        let loc = self.loc(span);
        let val = match e.value() {
            KdlValue::String(s) => Val::Str(s.clone()),
            KdlValue::Integer(i) => match i64::try_from(*i) {
                Ok(i) => Val::Int(i),
                Err(_) => {
                    self.err(Code::InvalidValue, "integer out of range", span)
                        .help = Some("values must fit in 64 bits".into());
                    return None;
                }
            },
            KdlValue::Float(f) => Val::Float(*f),
            KdlValue::Bool(b) => Val::Bool(*b),
            KdlValue::Null => {
                let d = self.err(Code::WrongType, "`#null` is not a value here", span);
                d.help = Some("remove the entry to take the default".into());
                return None;
            }
        };
        Some(Got { val, loc })
    }

    /// Check a value against a type. Returns the (possibly coerced) value.
    pub fn typed(&mut self, got: Got, field: &Field, what: &str) -> Option<Got> {
        self.typed_as(got, field, field.name, what)
    }

    /// As `typed`, naming the value `name` in messages.
    pub fn typed_as(&mut self, got: Got, field: &Field, name: &str, what: &str) -> Option<Got> {
        let field = &Field { name: "", ..*field };
        let span = got.loc.span;
        // an argument is named by its node (`repeat` takes an integer), never by the schema's
        // internal name for it
        // built only for a message: a sweep checks each of its values here
        let subject = || {
            if what.is_empty() {
                format!("`{name}`")
            } else {
                format!("{what} `{name}`")
            }
        };
        let bad_type = |d: &mut Self, expected: &str| {
            let m = format!(
                "{} takes {expected}, found the {} `{}`",
                subject(),
                got.val.type_name(),
                got.val
            );
            let ex = field.example;
            let d = d.err(Code::WrongType, m, span);
            d.label = Some(format!("expected {expected}"));
            d.help = Some(if ex.is_empty() {
                format!("write {}", field.ty.describe())
            } else {
                format!("for example `{}`", ex)
            });
        };
        match (&field.ty, &got.val) {
            (Ty::Port, Val::Int(_)) => Some(got),
            (Ty::Port, _) => {
                bad_type(self, "an integer");
                None
            }
            (Ty::Int(min, max), Val::Int(i)) => {
                if i < min || i > max {
                    let m = format!("{} is {i}, outside {}", subject(), field.ty.describe());
                    let d = self.err(Code::InvalidValue, m, span);
                    d.label = Some("out of range".into());
                    d.help = Some(format!("use {}", field.ty.describe()));
                    return None;
                }
                Some(got)
            }
            (Ty::Int(..), _) => {
                bad_type(self, "an integer");
                None
            }
            (Ty::Float, Val::Int(i)) => Some(Got {
                val: Val::Float(*i as f64),
                loc: got.loc,
            }),
            (Ty::Float, Val::Float(_)) => Some(got),
            (Ty::Float, _) => {
                bad_type(self, "a number");
                None
            }
            (Ty::Str | Ty::Template, Val::Str(_)) => Some(got),
            (Ty::Str | Ty::Template, _) => {
                bad_type(self, "a string");
                None
            }
            (Ty::Bool, Val::Bool(_)) => Some(got),
            (Ty::Bool, Val::Str(s)) if s == "true" || s == "false" => {
                let d = self.err(
                    Code::WrongType,
                    format!("{} takes a boolean, found the string `{s}`", subject()),
                    span,
                );
                d.label = Some("a string, not a boolean".into());
                d.help = Some(format!("KDL 2.0 booleans are written `#{s}`"));
                None
            }
            (Ty::Bool, _) => {
                bad_type(self, "a boolean (#true or #false)");
                None
            }
            (Ty::Enum(allowed), Val::Str(s)) => {
                if allowed.contains(&s.as_str()) {
                    return Some(got);
                }
                let help = suggest::help_for(s, allowed, &format!("the values of {}", subject()));
                let m = format!("`{s}` is not a valid value of {}", subject());
                let d = self.err(Code::InvalidValue, m, span);
                d.label = Some("unknown value".into());
                d.help = Some(help);
                None
            }
            (Ty::Enum(_), _) => {
                bad_type(self, "a string");
                None
            }
        }
    }

    /// Positional arguments of a node.
    pub(crate) fn args(&mut self, node: &KdlNode) -> Vec<Got> {
        node.entries()
            .iter()
            .filter(|e| e.name().is_none())
            .filter_map(|e| self.value(e))
            .collect()
    }

    /// Check a node's entries against its spec. Returns (args, props).
    pub fn entries(
        &mut self,
        node: &KdlNode,
        spec: &NodeSpec,
    ) -> (Vec<Got>, BTreeMap<String, Got>) {
        let args = self.args(node);
        let name = node.name().value().to_string();
        self.no_block(node, spec);
        match spec.args {
            Args::None => {
                if let Some(a) = args.first() {
                    let d = self.err(
                        Code::UnknownProperty,
                        format!("`{name}` takes no arguments"),
                        a.loc.span,
                    );
                    d.label = Some("unexpected argument".into());
                    d.help = Some(format!(
                        "for example `{}`",
                        spec.example.lines().next().unwrap_or("")
                    ));
                }
            }
            Args::One(f) => {
                if args.is_empty() && !f.optional && f.default.is_none() {
                    let d = self.err(
                        Code::MissingValue,
                        format!("`{name}` needs a {}", f.name),
                        Self::name_span(node),
                    );
                    d.label = Some(format!("{} missing", f.name));
                    d.help = Some(format!(
                        "for example `{}`",
                        spec.example.lines().next().unwrap_or("")
                    ));
                }
                if let Some(extra) = args.get(1) {
                    let d = self.err(
                        Code::UnknownProperty,
                        format!("`{name}` takes one argument"),
                        extra.loc.span,
                    );
                    d.label = Some("extra argument".into());
                    d.help = Some("remove it, or use a `sweep` for several values".into());
                }
            }
            Args::Many(f) => {
                if args.is_empty() && !f.optional {
                    let d = self.err(
                        Code::MissingValue,
                        format!("`{name}` needs {}", f.name),
                        Self::name_span(node),
                    );
                    d.help = Some(format!(
                        "for example `{}`",
                        spec.example.lines().next().unwrap_or("")
                    ));
                }
            }
        }
        let mut props = BTreeMap::new();
        for e in node.entries() {
            let Some(key) = e.name() else { continue };
            let key_name = key.value().to_string();
            let key_span = key.span();
            let field = spec.props.iter().find(|p| p.name == key_name);
            if field.is_none() && !spec.free_props {
                let names: Vec<&str> = spec.props.iter().map(|p| p.name).collect();
                let help = if names.is_empty() {
                    format!("`{name}` takes no properties")
                } else {
                    suggest::help_for(&key_name, &names, &format!("the properties of `{name}`"))
                };
                let d = self.err(
                    Code::UnknownProperty,
                    format!("unknown property `{key_name}` on `{name}`"),
                    key_span,
                );
                d.label = Some("unknown property".into());
                d.help = Some(help);
                continue;
            }
            let Some(got) = self.value(e) else { continue };
            let got = match field {
                Some(f) => match self.typed(got, f, "property") {
                    Some(g) => g,
                    None => continue,
                },
                None => got,
            };
            if let Some(prev) = props.get(&key_name) {
                let prev: &Got = prev;
                let span = prev.loc.span;
                let d = self.err(
                    Code::DuplicateName,
                    format!("property `{key_name}` is given twice"),
                    key_span,
                );
                d.related.push((span, "first given here".into()));
                d.help = Some("keep one of them".into());
                continue;
            }
            props.insert(key_name, got);
        }
        for p in spec.props.iter() {
            if p.default.is_none() && !p.optional && !props.contains_key(p.name) {
                let d = self.err(
                    Code::MissingValue,
                    format!("`{name}` needs the property `{}`", p.name),
                    Self::name_span(node),
                );
                d.label = Some(format!("`{}` missing", p.name));
                d.help = Some(format!("add `{}` ({})", p.example, p.doc));
            }
        }
        (args, props)
    }

    /// A `{ … }` block on an entry that takes none (`run "x" { timeout 5 }`) would be dropped
    /// without a word: said, with the properties it takes.
    fn no_block(&mut self, node: &KdlNode, spec: &NodeSpec) {
        const BLOCKS: &[&str] = &["experiment", "host", "zip", "collect", "config"];
        if node.children().is_none()
            || BLOCKS.contains(&spec.name)
            || crate::kinds::all().iter().any(|k| k.top.name == spec.name)
        {
            return;
        }
        let name = node.name().value();
        let span = node.children().map_or(node.span(), |c| c.span());
        let props: Vec<String> = spec
            .props
            .iter()
            .map(|p| format!("`{}=`", p.name))
            .collect();
        let d = self.err(
            Code::UnknownNode,
            format!("`{name}` takes no `{{ … }}` block"),
            span,
        );
        d.label = Some("not read".into());
        d.help = Some(if props.is_empty() {
            format!(
                "remove the block; for example `{}`",
                spec.example.lines().next().unwrap_or("")
            )
        } else {
            format!(
                "write its settings as properties on the same line ({}); for example `{}`",
                props.join(", "),
                spec.example.lines().next().unwrap_or("")
            )
        });
    }

    /// An entry `allowed` does not name: `parent` is `bench` (`in `bench``), or none at the
    /// top level. Said as entries and settings, never as the parser's "nodes".
    pub(crate) fn unknown_node(&mut self, node: &KdlNode, allowed: &[&str], parent: Option<&str>) {
        let name = node.name().value();
        let (message, label, what) = match parent {
            Some(p) => (
                format!("unknown entry `{name}` in `{p}`"),
                format!("`{p}` takes no `{name}`"),
                format!("the entries `{p}` takes"),
            ),
            None => (
                format!("unknown entry `{name}` at the top level"),
                "not a top-level entry".to_string(),
                "the top-level entries".to_string(),
            ),
        };
        let help = suggest::help_for(name, allowed, &what);
        let d = self.err(Code::UnknownNode, message, Self::name_span(node));
        d.label = Some(label);
        d.help = Some(help);
    }

    fn document(&mut self, doc: &KdlDocument) -> Option<Experiment> {
        let tops = crate::kinds::top_nodes();
        let top_names: Vec<&str> = tops.iter().map(|n| n.name).collect();
        let mut experiment: Option<(String, String, String, Loc, Option<Loc>)> = None;
        let mut noise = crate::model::Noise::default();
        let mut language = None;
        let mut order = crate::model::Order::default();
        let mut telemetry = None;
        let mut jobs = None;
        let mut hosts: Vec<Host> = Vec::new();
        let mut host_names: std::collections::HashMap<String, usize> = Default::default();
        let mut bench_nodes: Vec<(&KdlNode, &'static KindSpec)> = Vec::new();
        let mut allocations: Vec<Allocation> = Vec::new();
        let mut pools: Vec<crate::model::Pool> = Vec::new();
        for node in doc.nodes() {
            let name = node.name().value();
            match name {
                "slurm" => self.document_slurm(node, &mut allocations),
                "experiment" => {
                    let spec = &schema::TOP[0];
                    let (args, _) = self.entries(node, spec);
                    if let Some((_, _, _, prev, _)) = &experiment {
                        let span = prev.span;
                        let d = self.err(
                            Code::DuplicateName,
                            "a file holds one `experiment`",
                            Self::name_span(node),
                        );
                        d.related.push((span, "first declared here".into()));
                        d.help = Some("split the file, or merge the two blocks".into());
                        continue;
                    }
                    let exp_name = args
                        .first()
                        .and_then(|a| self.typed_as(a.clone(), &field_of(spec), spec.name, ""))
                        .map(|g| g.val.to_string())
                        .unwrap_or_default();
                    let (desc, output, output_loc) = self.experiment_children(
                        node,
                        &mut noise,
                        &mut language,
                        &mut order,
                        &mut telemetry,
                        &mut jobs,
                    );
                    experiment = Some((exp_name, desc, output, self.loc(node.span()), output_loc));
                }
                "host" => self.document_host(node, &mut hosts, &mut host_names),
                "pool" => self.document_pool(node, &mut pools),
                _ => match kinds::all().into_iter().find(|k| k.node == name) {
                    Some(k) => bench_nodes.push((node, k)),
                    None => self.unknown_node(node, &top_names, None),
                },
            }
        }
        let (name, description, output, loc, output_loc) = match experiment {
            Some(e) => e,
            None => {
                let d = self.err(Code::MissingValue, "no `experiment` node", (0, 0).into());
                d.help = Some("start the file with `experiment NAME { description \"…\" }`".into());
                (
                    String::new(),
                    String::new(),
                    default_output(),
                    self.loc((0, 0).into()),
                    None,
                )
            }
        };
        let benches = self.document_benches(bench_nodes);
        if benches.is_empty() && !self.diags.has_errors() {
            self.no_benchmark(&loc);
        }
        Self::hosts_take_alloc_repo(&mut hosts, &allocations);
        Some(Experiment {
            noise,
            language,
            order,
            telemetry,
            jobs,
            host_index: Default::default(),
            name,
            description,
            output,
            hosts,
            pools,
            allocations,
            benches,
            loc,
            output_loc,
        })
    }

    /// A `slurm` allocation (an error if its name is taken).
    fn document_slurm(&mut self, node: &KdlNode, allocations: &mut Vec<Allocation>) {
        if let Some(a) = self.allocation(node) {
            if let Some(prev) = allocations.iter().find(|x| x.name == a.name) {
                let span = prev.loc.span;
                let d = self.err(
                    Code::DuplicateName,
                    format!("allocation `{}` is declared twice", a.name),
                    a.loc.span,
                );
                d.related.push((span, "first declared here".into()));
                d.help = Some("give each allocation a distinct name".into());
            } else {
                allocations.push(a);
            }
        }
    }

    /// A `pool NAME "h1" "h2" …` (an error if its name is taken or it has no member).
    fn document_pool(&mut self, node: &KdlNode, pools: &mut Vec<crate::model::Pool>) {
        let spec = &schema::TOP[3];
        let (args, _) = self.entries(node, spec);
        let loc = self.loc(node.span());
        let mut args = args.into_iter();
        let Some(name) = args.next() else {
            let d = self.err(
                Code::MissingValue,
                "`pool` needs a name and its hosts",
                Self::name_span(node),
            );
            d.help = Some("e.g. `pool workers \"node1\" \"node2\"`".into());
            return;
        };
        let pool_name = name.val.to_string();
        let mut members: Vec<String> = Vec::new();
        let mut member_locs: Vec<Loc> = Vec::new();
        for a in args {
            let m = a.val.to_string();
            if let Some(i) = members.iter().position(|x| *x == m) {
                let span = member_locs[i].span;
                let d = self.err(
                    Code::DuplicateName,
                    format!("host `{m}` is in pool `{pool_name}` twice"),
                    a.loc.span,
                );
                d.related.push((span, "first here".into()));
                d.help = Some("name each host once (a host runs one point at a time)".into());
                continue;
            }
            members.push(m);
            member_locs.push(a.loc);
        }
        if members.is_empty() {
            // kept (a step naming it is then not also an undeclared host)
            let d = self.err(
                Code::MissingValue,
                format!("pool `{pool_name}` has no hosts"),
                Self::name_span(node),
            );
            d.help = Some(format!(
                "name its hosts: `pool {pool_name} \"node1\" \"node2\"`"
            ));
        }
        if let Some(prev) = pools.iter().find(|p| p.name == pool_name) {
            let span = prev.loc.span;
            let d = self.err(
                Code::DuplicateName,
                format!("pool `{pool_name}` is declared twice"),
                name.loc.span,
            );
            d.related.push((span, "first declared here".into()));
            d.help = Some("give each pool a distinct name".into());
            return;
        }
        pools.push(crate::model::Pool {
            name: pool_name,
            members,
            loc,
            member_locs,
        });
    }

    /// A `host` (an error if its name is taken).
    fn document_host(
        &mut self,
        node: &KdlNode,
        hosts: &mut Vec<Host>,
        host_names: &mut std::collections::HashMap<String, usize>,
    ) {
        if let Some(h) = self.host(node) {
            if let Some(prev) = host_names.get(&h.name).map(|&i| &hosts[i]) {
                let span = prev.loc.span;
                let d = self.err(
                    Code::DuplicateName,
                    format!("host `{}` is declared twice", h.name),
                    h.loc.span,
                );
                d.related.push((span, "first declared here".into()));
                d.help = Some("give each host a distinct name".into());
            } else {
                host_names.insert(h.name.clone(), hosts.len());
                hosts.push(h);
            }
        }
    }

    /// The bench blocks, decoded after the top level is read (an error for a name given twice).
    fn document_benches(&mut self, bench_nodes: Vec<(&KdlNode, &'static KindSpec)>) -> Vec<Bench> {
        let mut benches: Vec<Bench> = Vec::new();
        for (node, kind) in bench_nodes {
            let bench = self.bench(node, kind);
            if let Some(prev) = benches.iter().find(|b| b.name == bench.name) {
                let span = prev.loc.span;
                let d = self.err(
                    Code::DuplicateName,
                    format!("two benchmarks are named `{}`", bench.name),
                    Self::name_span(node),
                );
                d.related.push((span, "first declared here".into()));
                d.help = Some("give the second one a name: `recstore-e2e other { … }`".into());
                continue;
            }
            benches.push(bench);
        }
        benches
    }

    /// The error for an experiment without a bench block, naming the kinds' blocks.
    fn no_benchmark(&mut self, loc: &Loc) {
        let d = self.err(
            Code::MissingValue,
            "the experiment declares no benchmark",
            loc.span,
        );
        // the kinds as registered, each as its block starts (`bench NAME` where a name is required)
        let blocks: Vec<String> = kinds::all()
            .iter()
            .map(|k| match &k.top.args {
                Args::One(f) if !f.optional && f.default.is_none() => {
                    format!("`{} {}`", k.node, f.name.to_uppercase())
                }
                _ => format!("`{}`", k.node),
            })
            .collect();
        let list = match blocks.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        d.help = Some(format!("add a {list} block"));
    }

    /// Hosts on an allocation take its repo unless they name one (checked in validate).
    fn hosts_take_alloc_repo(hosts: &mut [Host], allocations: &[Allocation]) {
        for h in hosts {
            let Some(place) = &h.place else { continue };
            if let Some(a) = allocations.iter().find(|a| a.name == place.alloc) {
                if h.repo.is_empty() {
                    h.repo = a.repo.clone();
                }
            }
        }
    }

    fn experiment_children(
        &mut self,
        node: &KdlNode,
        noise: &mut crate::model::Noise,
        language: &mut Option<crate::util::lang::Lang>,
        order: &mut crate::model::Order,
        telemetry: &mut Option<crate::model::Telemetry>,
        jobs: &mut Option<i64>,
    ) -> (String, String, Option<Loc>) {
        let mut desc = String::new();
        let mut output = default_output();
        let mut output_loc = None;
        let names: Vec<&str> = schema::EXPERIMENT_CHILDREN.iter().map(|n| n.name).collect();
        let mut seen: Vec<(&str, miette::SourceSpan)> = Vec::new();
        for child in children(node) {
            let Some(spec) = schema::EXPERIMENT_CHILDREN
                .iter()
                .find(|s| s.name == child.name().value())
            else {
                self.unknown_node(child, &names, Some("experiment"));
                continue;
            };
            // one description, one output: a second one is a mistake, not an override
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == spec.name) {
                let d = self.err(
                    Code::DuplicateName,
                    format!("`{}` is given twice", spec.name),
                    Self::name_span(child),
                );
                d.related.push((*first, "first given here".into()));
                d.help = Some("keep one".into());
                continue;
            }
            seen.push((spec.name, Self::name_span(child)));
            let (args, props) = self.entries(child, spec);
            if spec.name == "order" {
                if let Some(seed) = props.get("seed").and_then(|g| g.val.as_int()) {
                    order.seed = seed.max(0) as u64;
                }
            }
            if spec.name == "telemetry" {
                *telemetry = Some(crate::model::Telemetry {
                    interval_ms: props
                        .get("interval-ms")
                        .and_then(|g| g.val.as_int())
                        .unwrap_or(100),
                    loc: self.loc(child.span()),
                });
                continue;
            }
            if spec.name == "comparable-on" {
                for a in args {
                    if let Some(a) = self.typed_as(a, &field_of(spec), spec.name, "") {
                        noise.comparable_on.push(a.val.to_string());
                    }
                }
                continue;
            }
            let Some(arg) = args.into_iter().next() else {
                continue;
            };
            let Some(arg) = self.typed_as(arg, &field_of(spec), spec.name, "") else {
                continue;
            };
            match spec.name {
                "description" => desc = arg.val.to_string(),
                "noise" => noise.policy = arg.val.to_string(),
                "timing-check" => noise.timing_check = arg.val.to_string(),
                // the schema's enum has already refused any other value
                "language" => *language = crate::util::lang::Lang::parse(&arg.val.to_string()),
                "gpu-clocks-locked" => noise.gpu_clocks_locked = arg.val.as_bool() == Some(true),
                "order" => order.kind = arg.val.to_string(),
                "jobs" => *jobs = arg.val.as_int(),
                _ => {
                    output = arg.val.to_string();
                    output_loc = Some(arg.loc);
                }
            }
        }
        (desc, output, output_loc)
    }

    fn host(&mut self, node: &KdlNode) -> Option<Host> {
        let spec = &schema::TOP[1];
        let (args, props) = self.entries(node, spec);
        let name = args.first()?.val.to_string();
        let loc = self.loc(node.span());
        let ssh = props
            .get("ssh")
            .map(|g| g.val.to_string())
            .unwrap_or_else(|| {
                if name == "local" {
                    "local".into()
                } else {
                    name.clone()
                }
            });
        let slurm = props.get("slurm").map(|g| NodePlace {
            alloc: g.val.to_string(),
            node: props.get("node").and_then(|g| g.val.as_int()).unwrap_or(0),
            job: None,
            nodename: None,
            launch_args: Vec::new(),
            here: false,
            new_job: Vec::new(),
        });
        if let Some(p) = &slurm {
            for k in ["ssh", "ip", "ssh-port"] {
                if let Some(g) = props.get(k) {
                    let mut d = Diag::warning(
                        Code::InvalidValue,
                        format!(
                            "host `{name}` is a node of `{}`: `{k}` does not apply and is ignored",
                            p.alloc
                        ),
                    )
                    .at(&self.src, g.loc.span);
                    d.help = Some("its name and address come from the allocation at run time; drop it (or drop `slurm=` to reach the host over ssh)".into());
                    self.diags.push(d);
                }
            }
            return Some(Host {
                ip: format!("slurm:{}:{}", p.alloc, p.node),
                ssh: "local".into(),
                ssh_port: 22,
                ssh_port_loc: None,
                repo: props
                    .get("repo")
                    .map(|g| g.val.to_string())
                    .unwrap_or_default(),
                gpus: props.get("gpus").and_then(|g| g.val.as_int()),
                env: self.host_env(node),
                name,
                loc,
                place: slurm,
            });
        } else if let Some(g) = props.get("node") {
            let d = self.err(
                Code::InvalidValue,
                "`node=` is for a host on a Slurm allocation",
                g.loc.span,
            );
            d.help = Some("add `slurm=\"NAME\"`, or drop `node=`".into());
        }
        let local = ssh == "local";
        // `host lcoal`: a misspelt `local` without `ssh=` is one mistake, not two missing values
        let near_local = !local
            && !props.contains_key("ssh")
            && crate::util::suggest::did_you_mean(&name, ["local"]).is_some();
        let missing: Vec<(&str, &str, &str)> = [
            ("ip", "ip=\"10.0.2.190\"", "the data-plane address"),
            (
                "repo",
                "repo=\"/data/RecStore\"",
                "the checkout on that host",
            ),
        ]
        .into_iter()
        .filter(|(k, _, _)| !local && !props.contains_key(*k))
        .collect();
        if near_local && !missing.is_empty() {
            let m = format!("unknown host `{name}`: did you mean `local`?");
            let e = self.err(Code::MissingValue, m, node.name().span());
            e.label = Some("not `local`".into());
            e.help = Some(
                "`local` is this machine; any other name is a host reached over ssh, which needs `ip` and `repo`"
                    .into(),
            );
        } else {
            for (key, example, what) in &missing {
                let m = format!("host `{name}` is reached over ssh and needs `{key}`");
                let e = self.err(Code::MissingValue, m, node.name().span());
                e.label = Some(format!("`{key}` missing"));
                e.help = Some(format!("add `{example}` ({what})"));
            }
        }
        let ip = match props.get("ip") {
            Some(g) => g.val.to_string(),
            None if local => "127.0.0.1".into(),
            None => String::new(),
        };
        let repo = match props.get("repo") {
            Some(g) => g.val.to_string(),
            None if local => ".".into(),
            None => String::new(),
        };
        let env = self.host_env(node);
        Some(Host {
            name,
            ssh,
            ssh_port: props
                .get("ssh-port")
                .and_then(|g| g.val.as_int())
                .unwrap_or(22),
            ssh_port_loc: props.get("ssh-port").map(|g| g.loc.clone()),
            ip,
            repo,
            gpus: props.get("gpus").and_then(|g| g.val.as_int()),
            env,
            loc,
            place: None,
        })
    }

    /// A host's `env` block.
    fn host_env(&mut self, node: &KdlNode) -> Vec<(String, String)> {
        let mut env = Vec::new();
        let env_names: Vec<&str> = schema::HOST_CHILDREN.iter().map(|n| n.name).collect();
        for child in children(node) {
            if child.name().value() != "env" {
                self.unknown_node(child, &env_names, Some("host"));
                continue;
            }
            let (_, props) = self.entries(child, &schema::HOST_CHILDREN[0]);
            let got = self.env_props(props);
            env.extend(got);
        }
        env
    }

    /// Properties that name environment variables: each name checked.
    fn env_props(&mut self, props: BTreeMap<String, Got>) -> Vec<(String, String)> {
        let mut env = Vec::new();
        {
            for (k, g) in props {
                let valid = k
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    let d = self.err(
                        Code::InvalidValue,
                        format!("`{k}` is not an environment variable name"),
                        g.loc.span,
                    );
                    d.help = Some("use letters, digits and `_`, not starting with a digit".into());
                    continue;
                }
                env.push((k, g.val.to_string()));
            }
        }
        env
    }

    /// `cmake-args "-DA=1" "-DB=2"`: extra configure arguments. The source and build folders
    /// are the kind's (`-S .`, `-B <build-dir>`): an argument that moves them is refused.
    fn cmake_args(&mut self, node: &KdlNode, kind: &'static KindSpec, bench: &mut Bench) {
        let spec = kind
            .children
            .iter()
            .find(|c| c.name == "cmake-args")
            .expect("declared");
        let (args, _) = self.entries(node, spec);
        for a in args {
            let Val::Str(v) = &a.val else {
                let d = self.err(
                    Code::InvalidValue,
                    format!("`cmake-args` takes strings, not `{}`", a.val),
                    a.loc.span,
                );
                d.help = Some("quote each argument: `cmake-args \"-DENABLE_CUDA=OFF\"`".into());
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
                let d = self.err(
                    Code::InvalidValue,
                    "an empty `cmake-args` argument",
                    a.loc.span,
                );
                d.help = Some("remove it".into());
                continue;
            }
            bench.build.cmake_args.push(v.clone());
        }
    }

    /// `slurm NAME partition=… nodes=… time=…`
    fn allocation(&mut self, node: &KdlNode) -> Option<Allocation> {
        let spec = schema::TOP
            .iter()
            .find(|t| t.name == "slurm")
            .expect("slurm in TOP");
        let (args, props) = self.entries(node, spec);
        let name = args.first()?.val.to_string();
        let s = |k: &str| props.get(k).map(|g| g.val.to_string());
        let words = |k: &str| {
            s(k).map(|v| v.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default()
        };
        Some(Allocation {
            partition: s("partition"),
            account: s("account"),
            qos: s("qos"),
            time: s("time"),
            nodes: props.get("nodes").and_then(|g| g.val.as_int()).unwrap_or(1),
            gpus_per_node: props.get("gpus-per-node").and_then(|g| g.val.as_int()),
            constraint: s("constraint"),
            alloc_args: words("alloc-args"),
            srun_args: words("srun-args"),
            repo: s("repo").unwrap_or_else(|| ".".into()),
            array: match props.get("mode") {
                Some(g) => match g.val.to_string().as_str() {
                    "array" => true,
                    "allocation" => false,
                    other => {
                        let d = self.err(
                            Code::InvalidValue,
                            format!("`mode` is `allocation` or `array`, not `{other}`"),
                            g.loc.span,
                        );
                        d.help = Some("`array` runs one `sbatch --array` task per point; `allocation` (the default) one `salloc` for the run".into());
                        false
                    }
                },
                None => false,
            },
            throttle: props.get("throttle").and_then(|g| g.val.as_int()),
            loc: self.loc(node.span()),
            name,
        })
    }

    fn bench(&mut self, node: &KdlNode, kind: &'static KindSpec) -> Bench {
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
    fn bench_setting(&mut self, bench: &mut Bench, child: &KdlNode, f: &Field) {
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
            let d = self.err(
                Code::DuplicateName,
                format!("`{cname}` is set twice"),
                Self::name_span(child),
            );
            d.related.push((span, "first set here".into()));
            d.help = Some("keep one; to try several values use `sweep`".into());
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
    fn bench_repeat(
        &mut self,
        bench: &mut Bench,
        child: &KdlNode,
        repeat_at: &mut Option<SourceSpan>,
    ) {
        if let Some(first) = *repeat_at {
            let d = self.err(
                Code::DuplicateName,
                "`repeat` is given twice",
                Self::name_span(child),
            );
            d.related.push((first, "first given here".into()));
            d.help = Some("keep one (`--set repeat=N` overrides it for a run)".into());
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
                let d = self.err(
                    Code::InvalidValue,
                    "`repeat` takes a count or adaptive properties, not both",
                    Self::name_span(child),
                );
                d.help = Some("write `repeat 5`, or `repeat min=3 max=30 until-cv=2`".into());
            }
        } else if !props.is_empty() {
            self.adaptive(bench, child, &props);
        }
    }

    /// `profile TOOL lane=… repeat=… args=… stats=…`.
    fn bench_profile(&mut self, bench: &mut Bench, child: &KdlNode) {
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
    fn setting_defaults(bench: &mut Bench, kind: &KindSpec) {
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
    fn bench_lanes(
        &mut self,
        bench: &mut Bench,
        pending_lanes: Vec<&KdlNode>,
        kind: &KindSpec,
        params: &[(String, Field)],
    ) {
        for n in pending_lanes {
            if let Some(lane) = self.lane(n, kind, params) {
                if let Some(prev) = bench.lanes.iter().find(|l| l.name == lane.name) {
                    let span = prev.loc.span;
                    let d = self.err(
                        Code::DuplicateName,
                        format!("lane `{}` is declared twice", lane.name),
                        lane.loc.span,
                    );
                    d.related.push((span, "first declared here".into()));
                    d.help = Some("give each lane a distinct name".into());
                    continue;
                }
                bench.lanes.push(lane);
            }
        }
    }

    /// The kind's nodes for roles the file places nowhere, and its lanes when the file declares none.
    fn default_nodes_lanes(&mut self, bench: &mut Bench, node: &KdlNode, kind: &KindSpec) {
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
}

impl Decoder<'_> {
    /// `expect LANE METRIC min=…` or `expect LANE over OTHER speedup min=…`.
    fn expect(&mut self, node: &KdlNode) -> Option<Expect> {
        let (args, props) = self.entries(node, &schema::EXPECT);
        let loc = self.loc(node.span());
        let num = |k: &str| props.get(k).and_then(|g| g.val.as_f64());
        let (min, max) = (num("min"), num("max"));
        for (k, v) in [("min", min), ("max", max)] {
            if v.is_some_and(f64::is_nan) {
                let span = props
                    .get(k)
                    .map(|g| g.loc.span)
                    .unwrap_or(Self::name_span(node));
                let d = self.err(
                    Code::InvalidValue,
                    format!("`expect`: {k}=#nan is no bound"),
                    span,
                );
                d.help = Some("give a number".into());
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
            let d = self.err(
                Code::InvalidValue,
                "`expect` needs `LANE METRIC` or `LANE over OTHER speedup`",
                Self::name_span(node),
            );
            d.help = Some("for example `expect RecStore-BRPC samples_per_sec min=80000` or `expect RecStore-BRPC over TorchRec-HBM speedup min=1.1`; log patterns are `expect-log contains=…`".into());
            return None;
        };
        if min.is_none() && max.is_none() {
            let d = self.err(
                Code::MissingValue,
                "`expect` needs `min=` or `max=`",
                Self::name_span(node),
            );
            d.help = Some("a bound on the mean over repeats: `min=80000`, `max=12.5`".into());
            return None;
        }
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                let d = self.err(
                    Code::InvalidValue,
                    format!("`expect`: min={lo} is above max={hi}"),
                    Self::name_span(node),
                );
                d.help = Some("swap them".into());
                return None;
            }
        }
        let unit = props.get("unit").map(|g| g.val.to_string());
        if unit.is_some() && matches!(what, ExpectWhat::Speedup { .. }) {
            let span = props
                .get("unit")
                .map(|g| g.loc.span)
                .unwrap_or(Self::name_span(node));
            let d = self.err(
                Code::InvalidValue,
                "a speedup is a ratio: it has no unit",
                span,
            );
            d.help = Some("drop `unit=`".into());
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
    fn expect_log(&mut self, node: &KdlNode) -> Vec<Expect> {
        let (args, props) = self.entries(node, &schema::EXPECT_LOG);
        let loc = self.loc(node.span());
        if args.len() > 1 {
            let d = self.err(
                Code::InvalidValue,
                "`expect-log` takes at most one lane",
                args[1].loc.span,
            );
            d.help = Some("write one `expect-log` per lane".into());
        }
        let lane = args.first().map(|g| g.val.to_string()).filter(|l| l != "*");
        let mut out = Vec::new();
        for (k, present) in [("contains", true), ("lacks", false)] {
            let Some(g) = props.get(k) else { continue };
            let pattern = g.val.to_string();
            if let Err(e) = regex::Regex::new(&pattern) {
                let d = self.err(
                    Code::InvalidValue,
                    format!("`{pattern}` is not a regular expression"),
                    g.loc.span,
                );
                d.help = Some(
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
            let d = self.err(
                Code::MissingValue,
                "`expect-log` needs `contains=` or `lacks=`",
                Self::name_span(node),
            );
            d.help = Some("for example `expect-log lacks=\"Traceback\"`".into());
        }
        out
    }

    /// `repeat min=… max=… until-cv=…|until-ci=…`: max runs are planned; the runner stops a
    /// (lane, sweep point) early once its spread is small enough.
    fn adaptive(&mut self, bench: &mut Bench, node: &KdlNode, props: &BTreeMap<String, Got>) {
        let int = |k: &str| props.get(k).and_then(|g| g.val.as_int());
        let num = |k: &str| props.get(k).and_then(|g| g.val.as_f64());
        let Some(max) = int("max") else {
            let d = self.err(
                Code::MissingValue,
                "adaptive `repeat` needs `max=`",
                Self::name_span(node),
            );
            d.help = Some("the most runs of a point: `repeat min=3 max=30 until-cv=2`".into());
            return;
        };
        let min = int("min").unwrap_or(3.min(max));
        if min > max || min < 2 {
            let span = props
                .get("min")
                .map(|g| g.loc.span)
                .unwrap_or(Self::name_span(node));
            let d = self.err(
                Code::InvalidValue,
                format!("adaptive `repeat`: min={min} must be at least 2 and at most max={max}"),
                span,
            );
            d.help = Some("a spread needs two runs: `min=3`".into());
            return;
        }
        let (cv, ci, dec) = (num("until-cv"), num("until-ci"), num("until-decided"));
        for (k, v) in [("until-cv", cv), ("until-ci", ci), ("until-decided", dec)] {
            if let Some(v) = v.filter(|v| v.is_nan() || *v <= 0.0 || *v >= 100.0) {
                let span = props
                    .get(k)
                    .map(|g| g.loc.span)
                    .unwrap_or(Self::name_span(node));
                let d = self.err(
                    Code::InvalidValue,
                    format!("`{k}={v}` is not a percentage between 0 and 100"),
                    span,
                );
                d.help = Some(format!("for example `{k}=2` (percent)"));
                return;
            }
        }
        if cv.is_none() && ci.is_none() && dec.is_none() {
            let d = self.err(
                Code::MissingValue,
                "adaptive `repeat` needs `until-cv=`, `until-ci=` or `until-decided=`",
                Self::name_span(node),
            );
            d.help = Some("when to stop: `until-cv=2` (CV ≤ 2 %), `until-ci=1` (95 % CI half-width ≤ 1 % of the mean) or `until-decided=2` (each lane against the first: a difference, or within ±2 %)".into());
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

/// How deep a `config { … }` block may nest (the generated files are a few levels deep).
const CONFIG_DEPTH: usize = 16;

impl Decoder<'_> {
    /// A `config { … }` block: each node is a key; a node with children is an object, one
    /// argument a value, several arguments an array. Objects written twice merge; a key written
    /// twice, or both as a value and as an object, is an error.
    fn config_block(
        &mut self,
        node: &KdlNode,
        path: &mut Vec<String>,
        out: &mut Vec<ConfigKey>,
        depth: usize,
    ) {
        if depth == 0 {
            if let Some(e) = node.entries().first() {
                let d = self.err(
                    Code::ConfigKey,
                    "`config` takes no arguments, only a block of keys",
                    self.value_span(e),
                );
                d.help = Some("write `config { cache_ps { num_threads 32 } }`".into());
            }
        }
        if depth >= CONFIG_DEPTH {
            let d = self.err(
                Code::InputLimit,
                format!("`config` nests deeper than {CONFIG_DEPTH} levels"),
                Self::name_span(node),
            );
            d.help = Some("the generated files are a few levels deep; check the braces".into());
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
    fn config_object(
        &mut self,
        child: &KdlNode,
        path: &mut Vec<String>,
        out: &mut Vec<ConfigKey>,
        depth: usize,
        dotted: &str,
    ) {
        if let Some(e) = child.entries().first() {
            let d = self.err(
                Code::ConfigKey,
                format!("config key `{dotted}` has both a value and a block"),
                self.value_span(e),
            );
            d.help = Some(
                "a key is a value (`num_threads 32`) or an object (`cache_ps { … }`), not both"
                    .into(),
            );
        }
        if let Some(prev) = out.iter().find(|k| k.path == *path) {
            let span = prev.loc.span;
            let d = self.err(
                Code::DuplicateName,
                format!("config key `{dotted}` is a value and also an object"),
                Self::name_span(child),
            );
            d.related.push((span, "set as a value here".into()));
            d.help = Some("a key is a value or an object, not both; keep one".into());
        } else {
            self.config_block(child, path, out, depth + 1);
        }
    }

    /// A key written with arguments: its value, unless it is wrong or clashes with one set
    /// before.
    fn config_leaf(
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
                let d = self.err(
                    Code::ConfigKey,
                    format!("config key `{dotted}` has no value"),
                    Self::name_span(child),
                );
                d.help = Some(format!(
                    "give it one (`{} 32`), several for an array, or a block for an object",
                    child.name().value()
                ));
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
    fn config_entries(&mut self, child: &KdlNode, dotted: &str) -> Option<Vec<serde_json::Value>> {
        let mut vals = Vec::new();
        let mut ok = true;
        for e in child.entries() {
            if let Some(n) = e.name() {
                let d = self.err(
                    Code::ConfigKey,
                    format!("config key `{dotted}` has a property `{}`", n.value()),
                    self.value_span(e),
                );
                d.help = Some(format!(
                    "write nested keys as a block: `{} {{ {} … }}`",
                    child.name().value(),
                    n.value()
                ));
                ok = false;
                continue;
            }
            vals.push(match e.value() {
                KdlValue::String(s) => serde_json::Value::from(s.clone()),
                KdlValue::Integer(i) => match i64::try_from(*i) {
                    Ok(i) => serde_json::Value::from(i),
                    Err(_) => {
                        self.err(
                            Code::InvalidValue,
                            format!("config key `{dotted}`: {i} does not fit in 64 bits"),
                            self.value_span(e),
                        );
                        ok = false;
                        continue;
                    }
                },
                KdlValue::Float(f) => match serde_json::Number::from_f64(*f) {
                    Some(n) => serde_json::Value::Number(n),
                    None => {
                        self.err(
                            Code::InvalidValue,
                            format!("config key `{dotted}`: {f} is not a JSON number"),
                            self.value_span(e),
                        );
                        ok = false;
                        continue;
                    }
                },
                KdlValue::Bool(b) => serde_json::Value::Bool(*b),
                KdlValue::Null => serde_json::Value::Null,
            });
        }
        if !ok {
            return None;
        }
        Some(vals)
    }
}

pub(crate) fn children(node: &KdlNode) -> &[KdlNode] {
    node.children().map(|c| c.nodes()).unwrap_or(&[])
}

pub(crate) fn field_of(spec: &NodeSpec) -> Field {
    match spec.args {
        Args::One(f) | Args::Many(f) => f,
        Args::None => Field {
            name: spec.name,
            ty: Ty::Str,
            default: None,
            optional: true,
            doc: "",
            example: "",
        },
    }
}

pub fn default_output() -> String {
    "results/{{ name }}_{{ started | date(format='%m%d%H%M%S') }}".into()
}

/// Parse a default written as KDL text (`1024`, `"x"`, `#true`, `BRPC`).
pub fn default_val(text: &str) -> Option<Val> {
    let doc = KdlDocument::parse_v2(&format!("v {text}")).ok()?;
    // one plain value that is the whole text: `a b`, `a;b`, `a=b`, `x//c` or `a /- b` are not
    // values (KDL would read a second entry, a property, a comment) and stay text as typed
    let [node] = doc.nodes() else { return None };
    let [e] = node.entries() else { return None };
    if e.name().is_some() || node.children().is_some() {
        return None;
    }
    let span = e.span();
    if text.trim() != text || span.offset() + span.len() != 2 + text.len() {
        return None;
    }
    Some(match e.value() {
        KdlValue::String(s) => Val::Str(s.clone()),
        KdlValue::Integer(i) => Val::Int(i64::try_from(*i).ok()?),
        KdlValue::Float(f) => Val::Float(*f),
        KdlValue::Bool(b) => Val::Bool(*b),
        KdlValue::Null => return None,
    })
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
