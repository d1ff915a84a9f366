//! The generic `bench` kind: templated build / serve / run steps and a `collect` for anything
//! without a kind of its own (and the quickstart).

pub mod collect;
pub mod nccl;
pub mod plan;
pub mod report;
pub mod rules;
pub mod spec;
pub mod words;

use crate::kind_api::data::{BenchResults, Measure, Metric};
use crate::kind_api::doc::Doc;
use crate::kind_api::kind::Kind;
use crate::kind_api::kind::KindSpec;
use crate::kind_api::step::{Ctx, KindPlan, PlanPoint};
use crate::model::diag::Diags;
use crate::model::expand::Point;
use crate::model::{Bench, CollectSpec, Experiment, Placement};
use crate::results::collect::PointDir;

pub struct BenchKind;

impl Kind for BenchKind {
    fn empty_placement(&self) -> Placement {
        Placement::Steps {
            params: Vec::new(),
            steps: Vec::new(),
            collect: None,
        }
    }

    fn default_lanes(&self, bench: &Bench) -> Vec<String> {
        vec![bench.name.clone()]
    }

    fn validate(&self, exp: &Experiment, bench: &Bench, diags: &mut Diags) {
        rules::validate(bench, diags);
        rules::validate_gpus(exp, bench, diags);
    }

    fn plan(&self, ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
        plan::plan(ctx, bench, points)
    }

    fn manifest_own(&self) -> &'static [&'static str] {
        &["collect_file"]
    }

    fn manifest(
        &self,
        _exp: &Experiment,
        bench: &Bench,
        p: &PlanPoint,
        output: &str,
    ) -> Vec<(String, String)> {
        let file = match &bench.placement {
            Placement::Steps {
                collect:
                    Some(CollectSpec {
                        path: Some(path), ..
                    }),
                ..
            } => format!("{output}/outputs/{}/{}", p.run_id, path),
            _ => String::new(),
        };
        vec![("collect_file".into(), file)]
    }

    fn declares_metrics(&self, bench: &Bench) -> bool {
        matches!(
            &bench.placement,
            Placement::Steps {
                collect: Some(_),
                ..
            }
        )
    }

    fn timed(&self, bench: &Bench) -> bool {
        !self.declares_metrics(bench)
    }

    /// A CSV whose headline is not another column is read as steps when it has their columns.
    fn per_step(&self, bench: &Bench) -> bool {
        matches!(
            &bench.placement,
            Placement::Steps { collect: Some(c), .. }
                if c.format == "csv"
                    && c.metric.as_deref().is_none_or(|m| m == "samples_per_sec")
        )
    }

    fn metrics(&self, bench: &Bench, measure: &Measure) -> Vec<Metric> {
        report::metrics(bench, measure)
    }

    fn headline(&self, bench: &Bench) -> (String, String) {
        report::headline(bench)
    }

    fn collect(&self, at: &PointDir, bench: &Bench) -> Result<Measure, String> {
        collect::collect(at, bench)
    }

    fn sections(&self, d: &mut Doc, r: &BenchResults<'_>) {
        let (data, bench, groups) = (r.data, r.bench, r.groups);
        let mine = || data.points.iter().filter(|p| p.bench == bench.name);
        if self.timed(bench) {
            report::timing_section(d, data, bench, groups)
        } else if mine().any(|p| matches!(p.measure, Some(Measure::Steps(_)))) {
            {
                crate::kind_api::tables::steps_sections(d, data, bench, groups, &|l| l.to_string());
                let headers: Vec<String> = bench.lanes.iter().map(|l| l.name.clone()).collect();
                crate::kind_api::timing::timing_sections(d, data, bench, groups, &headers, None);
            }
        } else if mine().any(|p| {
            p.measure
                .as_ref()
                .and_then(Measure::own::<nccl::NcclMeasure>)
                .is_some()
        }) {
            report::nccl_section(d, data, bench);
            crate::kind_api::tables::group_table(
                d,
                data,
                bench,
                groups,
                "Avg bus bandwidth GB/s",
                Some(true),
            )
        } else {
            report::metric_section(d, data, bench, groups);
            // a CSV with declared stages: does its total time them (same clock)
            let headers: Vec<String> = bench.lanes.iter().map(|l| l.name.clone()).collect();
            crate::kind_api::timing::check_lines(d, data, bench, groups);
            let metric = self.headline(bench).0;
            crate::kind_api::timing::timing_sections(
                d,
                data,
                bench,
                groups,
                &headers,
                Some(&metric),
            );
        }
    }
}

/// The kind as the registry (`kinds::ALL`) and the schema know it.
pub const SPEC: KindSpec = KindSpec {
    settings: spec::SETTINGS,
    settings_doc: "The generic kind has no fixed settings: declare them with `param`. Templates see every param \
(dashes become underscores), `run_id`, `outdir` (the point's output dir, absolute), `lane`, `repeat`, `output` \
and `hosts.<name>.ip`. Interpolated values are shell-quoted.",
    children: spec::CHILDREN,
    ..KindSpec::new(
        "bench",
        None,
        &BenchKind,
        "A generic benchmark of templated build / serve / run / collect steps.",
        "bench demo {\n    run \"echo {{ run_id }}\"\n}",
        include_str!("starter.kdl"),
    )
    .name_example("quickstart")
};
