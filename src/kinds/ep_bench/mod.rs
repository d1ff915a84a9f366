//! The `ep-bench` kind: MSCCL++ ep_bench_ll.py (torchrun or per-rank env) and NCCL-EP ep_bench
//! (mpirun) MoE dispatch/combine kernels.

pub mod collect;
pub mod plan;
pub mod report;
pub mod rules;
pub mod spec;

use crate::kind_api::data::{BenchResults, Measure, Metric, Own};
use crate::kind_api::doc::Doc;
use crate::kind_api::kind::Kind;
use crate::kind_api::kind::KindSpec;
use crate::kind_api::step::{Ctx, KindPlan, PlanPoint};
use crate::kinds::ep_bench::collect::EpSummary;
use crate::model::diag::Diags;
use crate::model::expand::Point;
use crate::model::{Bench, Experiment};
use crate::results::collect::PointDir;

pub struct EpBench;

impl Kind for EpBench {
    fn services(&self, b: &Bench) -> Vec<(String, i64, String, crate::model::Loc)> {
        crate::kinds::ranks::rank_services(b)
    }

    fn default_lanes(&self, bench: &Bench) -> Vec<String> {
        vec![match bench.str("tool") {
            "nccl-ep" => "NCCL-EP".into(),
            _ => "MSCCLPP-LL".into(),
        }]
    }

    fn validate(&self, _exp: &Experiment, bench: &Bench, diags: &mut Diags) {
        rules::validate(bench, diags)
    }

    fn validate_point(&self, exp: &Experiment, bench: &Bench, p: &Point, diags: &mut Diags) {
        rules::validate_point(exp, bench, p, diags)
    }

    /// Every tool some lane runs: ep_bench_ll.py and/or the ep_bench binary (in `nccl-ep-repo`
    /// when that is set), on every node.
    fn runner_files(&self, bench: &Bench) -> Vec<(String, String)> {
        let mut files: Vec<String> = Vec::new();
        for lane in &bench.lanes {
            let over = |k: &str| lane.overrides.get(k).and_then(|p| p.val.as_str());
            let tool = over("tool").unwrap_or(bench.str("tool"));
            let key = if tool == "nccl-ep" {
                "binary"
            } else {
                "script"
            };
            let mut file = over(key).unwrap_or(bench.str(key)).to_string();
            if tool == "nccl-ep" {
                // built in the NCCL tree, not in the host's checkout
                let repo = over("nccl-ep-repo").or_else(|| {
                    bench
                        .settings
                        .get("nccl-ep-repo")
                        .and_then(|p| p.val.as_str())
                });
                file = plan::nccl_ep_file(repo.map(str::to_string), &file);
            }
            if !files.contains(&file) {
                files.push(file);
            }
        }
        rules::nodes(bench)
            .iter()
            .flat_map(|n| files.iter().map(move |f| (n.host.clone(), f.clone())))
            .collect()
    }

    fn plan(&self, ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
        plan::plan(ctx, bench, points)
    }

    fn manifest_own(&self) -> &'static [&'static str] {
        &["tool"]
    }

    fn manifest(
        &self,
        _exp: &Experiment,
        bench: &Bench,
        p: &PlanPoint,
        _output: &str,
    ) -> Vec<(String, String)> {
        // written empty where nothing sets it (the manifest's text column, not a number)
        let tool = p.setting_text(bench, "tool").unwrap_or_default();
        vec![("tool".into(), tool)]
    }

    fn metrics(&self, _bench: &Bench, measure: &Measure) -> Vec<Metric> {
        measure
            .own::<EpSummary>()
            .map(report::metrics)
            .unwrap_or_default()
    }

    fn headline(&self, _bench: &Bench) -> (String, String) {
        ("total_avg_us".into(), "us".into())
    }

    fn collect(&self, at: &PointDir, _bench: &Bench) -> Result<Measure, String> {
        collect::collect(at).map(|s| {
            let headline = s.total.avg_us;
            Measure::Own(Own::new("ep", s, headline))
        })
    }

    fn sections(&self, d: &mut Doc, r: &BenchResults<'_>) {
        report::kernel_section(d, r.data, r.bench, r.groups)
    }
}

/// The kind as the registry (`kinds::ALL`) and the schema know it.
pub const SPEC: KindSpec = KindSpec {
    settings: spec::SETTINGS,
    settings_doc: "Lanes usually select the tool: `lane MSCCLPP-LL tool=\"mscclpp-ll\"`, `lane NCCL-EP tool=\"nccl-ep\"`. \
Without lanes there is one lane named after `tool`. A cross-library comparison stays on bf16, expert-major.",
    children: spec::CHILDREN,
    workload: spec::WORKLOAD,
    codes: spec::code::ALL,
    ..KindSpec::new(
        "ep-bench",
        Some("\"ep-bench\""),
        &EpBench,
        "MoE dispatch/combine kernels: MSCCL++ ep_bench_ll.py or NCCL-EP ep_bench.",
        "ep-bench {\n    node host=local nproc-per-node=4\n}",
        include_str!("starter.kdl"),
    )
};
