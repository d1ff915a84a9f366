//! The `dataset-rt` kind: `dataset_rt.run_benchmark` at several worker and rank counts.

pub mod collect;
pub mod plan;
pub mod report;
pub mod rules;
pub mod spec;

use std::path::Path;

use crate::collect::PointDir;
use crate::diag::Diags;
use crate::expand::Point;
use crate::kinds::kind::{Kind, ManifestCols};
use crate::model::{Bench, Experiment, Placement};
use crate::plan::step::{Ctx, KindPlan, PlanPoint};
use crate::report::data::{Group, Measure, Metric, ReportData};

pub struct DatasetRt;

impl Kind for DatasetRt {
    fn starter(&self) -> &'static str {
        include_str!("starter.kdl")
    }

    fn empty_placement(&self) -> Placement {
        Placement::Ranks { nodes: Vec::new() }
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

    fn manifest(
        &self,
        _exp: &Experiment,
        _bench: &Bench,
        p: &PlanPoint,
        output: &str,
    ) -> ManifestCols {
        ManifestCols {
            backend: "dataset_rt".into(),
            main_csv: format!("{output}/outputs/{}/{}.json", p.run_id, p.run_id),
            ..ManifestCols::default()
        }
    }

    fn metrics(&self, _bench: &Bench, measure: &Measure) -> Vec<Metric> {
        match measure {
            Measure::Drt(d) => report::metrics(d),
            _ => Vec::new(),
        }
    }

    fn headline(&self, _bench: &Bench) -> (String, String) {
        (report::HEADLINE.into(), "samples/s".into())
    }

    fn collect(&self, at: &PointDir, _bench: &Bench) -> Result<Measure, String> {
        collect::collect(at).map(Measure::Drt)
    }

    fn sections(
        &self,
        o: &mut String,
        data: &ReportData,
        bench: &Bench,
        groups: &[&Group],
        _dir: &Path,
    ) {
        report::loader_section(o, data, bench, groups)
    }
}
