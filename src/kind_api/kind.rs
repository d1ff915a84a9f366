//! The `Kind` trait: what a benchmark kind does at each stage of the pipeline.

use crate::kind_api::data::{BenchResults, Measure, Metric};
use crate::kind_api::doc::Doc;
use crate::kind_api::step::{Ctx, KindPlan, PlanPoint};
use crate::model::diag::Diags;
use crate::model::expand::Point;
use crate::model::{Bench, Experiment, Placement, RunIdNaming};
use crate::results::collect::PointDir;
use crate::util::lang::Lang;

/// What a benchmark kind does at each stage. The stages call these; nothing outside
/// `src/kinds` matches on a kind.
pub trait Kind: Sync {
    /// The placement a bench of this kind starts from, before its children are decoded.
    fn empty_placement(&self) -> Placement {
        Placement::Nodes(Vec::new())
    }
    /// Nodes placed when the file places none of their role (at the bench's `loc`).
    fn default_nodes(&self, _loc: &crate::model::Loc) -> Vec<crate::model::PlacedNode> {
        Vec::new()
    }
    /// The TCP services the bench's placed nodes open: (host, port, what, where written), for
    /// the port rules every bench is checked against.
    fn services(&self, _bench: &Bench) -> Vec<(String, i64, String, crate::model::Loc)> {
        Vec::new()
    }
    /// The lanes used when a bench declares none.
    fn default_lanes(&self, bench: &Bench) -> Vec<String>;
    /// How run ids name this kind's points.
    fn naming(&self) -> RunIdNaming {
        RunIdNaming {
            lane_slug: crate::model::expand::slug,
            fixed_axes: &[],
        }
    }
    /// Rules over the decoded bench (hosts, ports, sweeps and templates are checked by `validate`).
    fn validate(&self, exp: &Experiment, bench: &Bench, diags: &mut Diags);
    /// Rules over one matrix point.
    fn validate_point(&self, _exp: &Experiment, _bench: &Bench, _p: &Point, _diags: &mut Diags) {}
    /// Files the commands need on each host, `(host, path in its repo)`: checked and
    /// fingerprinted at preflight.
    fn runner_files(&self, _bench: &Bench) -> Vec<(String, String)> {
        Vec::new()
    }
    /// A problem with running `step` on a checkout whose program takes `known` flags (asked at
    /// preflight), beyond flags it lacks: e.g. a program that would run another transport than
    /// the lane's name says.
    fn cli_problem(
        &self,
        _bench: &Bench,
        _step: &crate::kind_api::step::Step,
        _known: &std::collections::BTreeSet<String>,
    ) -> Option<String> {
        None
    }
    /// The setting (or lane) a program flag of this kind's plan comes from, for the message
    /// that says what to change when a checkout lacks the flag; None: the flag's own name.
    fn setting_of_flag(&self, _flag: &str) -> Option<String> {
        None
    }
    /// Settings written (in the file or with `--set`) that the bench's lanes override, with
    /// why: `plan` shows them as not applied, and `check` warns.
    fn overridden(&self, _bench: &Bench) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// For a kind whose program writes a self-describing report: whether the point's report
    /// (collected into `at`) is complete and self-consistent — Ok(what was checked) or Err(what
    /// is missing). A point whose program failed after writing a complete one is recovered
    /// (`crate::results::collect::recovered_reason`). None: the kind has no such report.
    fn complete_output(
        &self,
        _at: &crate::results::collect::PointDir,
        _bench: &Bench,
        _p: &crate::kind_api::step::PlanPoint,
    ) -> Option<Result<String, String>> {
        None
    }
    /// Every step of these points (and the once-per-host setup).
    fn plan(&self, ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String>;
    /// manifest.csv's columns for this bench, in order, the core ones
    /// (`results::manifest::CORE`) included: by default the run id and lane, one column per
    /// sweep axis, the repeat, the kind's own columns, then the log, status, exit code and
    /// reason.
    fn manifest_columns(&self, bench: &Bench) -> Vec<String> {
        let mut v: Vec<String> = vec!["run_id".into(), "lane".into()];
        v.extend(axis_columns(bench, self.manifest_own()));
        v.push("repeat_index".into());
        v.extend(self.manifest_own().iter().map(|c| c.to_string()));
        v.extend(["log_path", "status", "exit_code", "reason"].map(String::from));
        v
    }
    /// The names of the kind's own manifest columns (besides the core ones and the axes).
    fn manifest_own(&self) -> &'static [&'static str] {
        &[]
    }
    /// The values of the kind's own manifest columns at one point (the sweep axes' are filled
    /// in by the run).
    fn manifest(
        &self,
        exp: &Experiment,
        bench: &Bench,
        p: &PlanPoint,
        output: &str,
    ) -> Vec<(String, String)>;
    /// Files in a point's outputs that hold the program's own summary of its run (the report
    /// reads the first one there for comparison only; it never stands in for collected numbers).
    fn own_aggregates(&self) -> &'static [&'static str] {
        &[]
    }
    /// The lane speedups are measured against.
    fn baseline_lane(&self, bench: &Bench) -> Option<String> {
        bench.lanes.first().map(|l| l.name.clone())
    }
    /// Whether the bench declares metrics at all (a point that declares none cannot lack them).
    fn declares_metrics(&self, _bench: &Bench) -> bool {
        true
    }
    /// Metric names the kind reports besides its headline (for `expect`'s check).
    fn metric_names(&self, _bench: &Bench) -> Vec<String> {
        Vec::new()
    }
    /// Why the kind's points cannot run as independent array tasks (`mode="array"`), if so.
    fn array_refusal(&self) -> Option<&'static str> {
        None
    }
    /// Whether a point may be read as per-step statistics (a per-step CSV of RecStore's form:
    /// summary_e2e.csv's samples/s, p95 and stage columns are then written).
    fn per_step(&self, _bench: &Bench) -> bool {
        false
    }
    /// Whether the bench's measurement is the wall time of its run steps (expr times them, and
    /// measures the shell's spawn time to subtract).
    fn timed(&self, _bench: &Bench) -> bool {
        false
    }
    /// Read one point's artifacts from a result directory.
    fn collect(&self, at: &PointDir, bench: &Bench) -> Result<Measure, String>;
    /// Every number a measure holds, the headline first (name, unit, direction, source).
    fn metrics(&self, bench: &Bench, measure: &Measure) -> Vec<Metric>;
    /// The headline metric's name and unit, also for points that have none.
    fn headline(&self, bench: &Bench) -> (String, String);
    /// The language of the report when the experiment names none: the one the kind's runbook
    /// asks for, English unless it asks for another.
    fn default_language(&self) -> Lang {
        Lang::En
    }
    /// The report's workload prose and table for this bench in `lang`, as blocks (every format
    /// renders them).
    fn prose(&self, d: &mut Doc, exp: &Experiment, bench: &Bench, out_dir: &str, lang: Lang) {
        crate::kind_api::tables::generic_prose(d, exp, bench, out_dir, lang)
    }
    /// The report's result sections for this bench, as blocks, in the data's language
    /// (`r.data.lang`).
    fn sections(&self, d: &mut Doc, r: &BenchResults<'_>);
}

/// The manifest column of a sweep axis: its name with `_` for `-` (`num-workers` →
/// `num_workers`), `sweep_` before it when a core or kind column has that name.
pub fn axis_column(axis: &str, own: &[&str]) -> String {
    let c = axis.replace('-', "_");
    if crate::results::manifest::CORE.contains(&c.as_str()) || own.contains(&c.as_str()) {
        format!("sweep_{c}")
    } else {
        c
    }
}

/// The bench's sweep axes as manifest columns, in the order they were written.
pub fn axis_columns(bench: &Bench, own: &[&str]) -> Vec<String> {
    bench
        .sweep
        .axis_names()
        .map(|a| axis_column(a, own))
        .collect()
}

/// The static description of a kind and its behaviour.
pub struct KindSpec {
    pub id: crate::model::KindId,
    pub behaviour: &'static dyn Kind,
    pub node: &'static str,
    /// The kind's top-level node as the schema documents it (its name argument).
    pub top: crate::model::schema::NodeSpec,
    pub settings: &'static [crate::model::schema::Field],
    pub settings_doc: &'static str,
    pub children: &'static [crate::model::schema::NodeSpec],
    /// Settings that define the workload; lanes may not change them unless swept.
    pub workload: &'static [&'static str],
    /// Settings a lane may not override, with the reason.
    pub lane_forbidden: &'static [(&'static str, &'static str)],
    pub default_repeat: i64,
    /// A commented starter experiment (`expr init KIND`) that checks clean and plans.
    pub starter: &'static str,
    /// The diagnostic codes of this kind's own rules.
    pub codes: &'static [crate::model::diag::Code],
    /// Settings passed to the program only where the experiment writes them (an older
    /// checkout may lack the flag; unwritten, the program's own default holds): the resolved
    /// experiment shows their defaults as comments, so that it plans as the file does.
    pub when_written: &'static [&'static str],
}

impl KindSpec {
    /// A kind named `node` (its id, its node and its top-level node's name), with no settings,
    /// children, workload, forbidden lane settings or codes of its own and one repeat: a kind's
    /// `SPEC` names what it has beyond that (`KindSpec { settings: …, ..KindSpec::new(…) }`).
    /// `default_name` is the bench name's default as KDL text (`Some("\"ep-bench\"")`), or `None`
    /// where the name must be written.
    pub const fn new(
        node: &'static str,
        default_name: Option<&'static str>,
        behaviour: &'static dyn Kind,
        doc: &'static str,
        example: &'static str,
        starter: &'static str,
    ) -> KindSpec {
        KindSpec {
            id: crate::model::KindId(node),
            behaviour,
            node,
            top: crate::model::schema::kind_node(node, default_name, "", doc, example),
            settings: &[],
            settings_doc: "",
            children: &[],
            workload: &[],
            lane_forbidden: &[],
            default_repeat: 1,
            starter,
            codes: &[],
            when_written: &[],
        }
    }

    /// The bench name's example in the schema, where the kind has no default name to show.
    pub const fn name_example(mut self, example: &'static str) -> KindSpec {
        if let crate::model::schema::Args::One(f) = &mut self.top.args {
            f.example = example;
        }
        self
    }
}

impl std::ops::Deref for KindSpec {
    type Target = dyn Kind;
    fn deref(&self) -> &Self::Target {
        self.behaviour
    }
}
