//! The `dataset-rt` kind: `dataset_rt.run_benchmark` at several worker and rank counts.

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
use crate::kinds::dataset_rt::collect::DrtReport;
use crate::model::diag::Diags;
use crate::model::expand::Point;
use crate::model::{Bench, Experiment};
use crate::results::collect::PointDir;

pub struct DatasetRt;

impl Kind for DatasetRt {
    fn services(&self, b: &Bench) -> Vec<(String, i64, String, crate::model::Loc)> {
        crate::kinds::ranks::rank_services(b)
    }

    fn default_lanes(&self, _bench: &Bench) -> Vec<String> {
        vec!["dataset-rt".into()]
    }

    fn validate(&self, _exp: &Experiment, bench: &Bench, diags: &mut Diags) {
        rules::validate(bench, diags)
    }

    fn validate_point(&self, exp: &Experiment, bench: &Bench, p: &Point, diags: &mut Diags) {
        rules::validate_point(exp, bench, p, diags)
    }

    fn plan(&self, ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
        plan::plan(ctx, bench, points)
    }

    fn manifest_own(&self) -> &'static [&'static str] {
        &["report_json"]
    }

    fn manifest(
        &self,
        _exp: &Experiment,
        _bench: &Bench,
        p: &PlanPoint,
        output: &str,
    ) -> Vec<(String, String)> {
        vec![(
            "report_json".into(),
            format!("{output}/outputs/{}/{}.json", p.run_id, p.run_id),
        )]
    }

    fn metrics(&self, _bench: &Bench, measure: &Measure) -> Vec<Metric> {
        measure
            .own::<DrtReport>()
            .map(report::metrics)
            .unwrap_or_default()
    }

    fn headline(&self, _bench: &Bench) -> (String, String) {
        (report::HEADLINE.into(), "samples/s".into())
    }

    /// The report is complete: every rank and pass, a rate per `--repeats`, replay verified.
    fn complete_output(
        &self,
        at: &PointDir,
        _bench: &Bench,
        p: &PlanPoint,
    ) -> Option<Result<String, String>> {
        // the repeats the point asked for, from its own command line
        let repeats = p
            .steps
            .iter()
            .filter(|s| s.phase == crate::kind_api::step::Phase::Launch)
            .find_map(|s| {
                let i = s.argv.iter().position(|a| a == "--repeats")?;
                s.argv.get(i + 1)?.parse::<i64>().ok()
            })?;
        let f = collect::report_path(at);
        Some(match std::fs::read_to_string(&f) {
            Err(e) => Err(format!("{}: {e}", f.display())),
            Ok(text) => collect::completeness(&text, repeats)
                .map(|ok| format!("{} ({})", ok, f.display()))
                .map_err(|e| format!("{}: {e}", f.display())),
        })
    }

    fn collect(&self, at: &PointDir, _bench: &Bench) -> Result<Measure, String> {
        let d = collect::collect(at)?;
        // the warm rate: pass 0 includes reader/worker startup; one pass has none, and a
        // point without its headline is not ok
        let Some(headline) = d.warm() else {
            return Err(format!(
                "one pass only ({} global rate(s)): the headline, the warm rate, is the mean of the passes after the first; give `repeats 2` or more",
                d.global_samples_per_second.len()
            ));
        };
        Ok(Measure::Own(Own::new("drt", d, headline)))
    }

    fn sections(&self, d: &mut Doc, r: &BenchResults<'_>) {
        report::loader_section(d, r.data, r.bench, r.groups)
    }
}

/// The kind as the registry (`kinds::ALL`) and the schema know it.
pub const SPEC: KindSpec = KindSpec {
    settings: spec::SETTINGS,
    settings_doc: "One JSON report per point, at `<results-dir>/<run_id>.json`. Sweep `num-workers` and `ranks` \
to compare worker counts at each rank count.",
    children: spec::CHILDREN,
    workload: spec::WORKLOAD,
    codes: spec::code::ALL,
    when_written: spec::WHEN_WRITTEN,
    ..KindSpec::new(
        "dataset-rt",
        Some("\"dataset-rt\""),
        &DatasetRt,
        "dataset_rt.run_benchmark loader throughput, after the dataset_rt runbook.",
        "dataset-rt {\n    node host=local\n}",
        include_str!("starter.kdl"),
    )
};
