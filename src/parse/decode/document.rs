//! The top level: the experiment node, its hosts, pools, allocations and benches.

use kdl::{KdlDocument, KdlNode};

use crate::kinds::{self, KindSpec};
use crate::model::diag::Code;
use crate::model::schema::{self, Args};
use crate::model::*;

use super::walker::*;

impl Decoder<'_> {
    pub(super) fn document(&mut self, doc: &KdlDocument) -> Option<Experiment> {
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
                self.err_help(
                    Code::MissingValue,
                    "no `experiment` node",
                    (0, 0).into(),
                    "start the file with `experiment NAME { description \"…\" }`",
                );
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
    pub(super) fn document_slurm(&mut self, node: &KdlNode, allocations: &mut Vec<Allocation>) {
        if let Some(a) = self.allocation(node) {
            if let Some(prev) = allocations.iter().find(|x| x.name == a.name) {
                let first = prev.loc.span;
                self.declared_twice("allocation", &a.name, a.loc.span, first);
            } else {
                allocations.push(a);
            }
        }
    }

    /// A `pool NAME "h1" "h2" …` (an error if its name is taken or it has no member).
    pub(super) fn document_pool(&mut self, node: &KdlNode, pools: &mut Vec<crate::model::Pool>) {
        let spec = &schema::TOP[3];
        let (args, _) = self.entries(node, spec);
        let loc = self.loc(node.span());
        let mut args = args.into_iter();
        let Some(name) = args.next() else {
            self.err_help(
                Code::MissingValue,
                "`pool` needs a name and its hosts",
                Self::name_span(node),
                "e.g. `pool workers \"node1\" \"node2\"`",
            );
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
            self.err_help(
                Code::MissingValue,
                format!("pool `{pool_name}` has no hosts"),
                Self::name_span(node),
                format!("name its hosts: `pool {pool_name} \"node1\" \"node2\"`"),
            );
        }
        if let Some(prev) = pools.iter().find(|p| p.name == pool_name) {
            let first = prev.loc.span;
            self.declared_twice("pool", &pool_name, name.loc.span, first);
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
    pub(super) fn document_host(
        &mut self,
        node: &KdlNode,
        hosts: &mut Vec<Host>,
        host_names: &mut std::collections::HashMap<String, usize>,
    ) {
        if let Some(h) = self.host(node) {
            if let Some(prev) = host_names.get(&h.name).map(|&i| &hosts[i]) {
                let first = prev.loc.span;
                self.declared_twice("host", &h.name, h.loc.span, first);
            } else {
                host_names.insert(h.name.clone(), hosts.len());
                hosts.push(h);
            }
        }
    }

    /// The bench blocks, decoded after the top level is read (an error for a name given twice).
    pub(super) fn document_benches(
        &mut self,
        bench_nodes: Vec<(&KdlNode, &'static KindSpec)>,
    ) -> Vec<Bench> {
        let mut benches: Vec<Bench> = Vec::new();
        // name → its place (a search of the list made 20k benches take seconds)
        let mut named: std::collections::HashMap<String, usize> = Default::default();
        for (node, kind) in bench_nodes {
            let bench = self.bench(node, kind);
            if let Some(prev) = named.get(&bench.name).map(|&i| &benches[i]) {
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
            named.insert(bench.name.clone(), benches.len());
            benches.push(bench);
        }
        benches
    }

    /// The error for an experiment without a bench block, naming the kinds' blocks.
    pub(super) fn no_benchmark(&mut self, loc: &Loc) {
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
    pub(super) fn hosts_take_alloc_repo(hosts: &mut [Host], allocations: &[Allocation]) {
        for h in hosts {
            let Some(place) = &h.place else { continue };
            if let Some(a) = allocations.iter().find(|a| a.name == place.alloc) {
                if h.repo.is_empty() {
                    h.repo = a.repo.clone();
                }
            }
        }
    }

    pub(super) fn experiment_children(
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
                let msg = format!("`{}` is given twice", spec.name);
                self.given_twice(msg, Self::name_span(child), *first, "keep one");
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
}
