//! The report's data types: every expected point of a result directory, what its artifacts say,
//! and the aggregates over repeats (built by `gather`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::collect::steps::StepStats;
use crate::kinds::bench::nccl::NcclReport;
use crate::kinds::dataset_rt::collect::DrtReport;
use crate::kinds::ep_bench::collect::EpSummary;
use crate::model::Experiment;

/// One number of one point: parsed from `source`, with its unit and which way is better.
#[derive(Debug, Clone, Serialize)]
pub struct Metric {
    pub name: String,
    pub unit: String,
    /// `Some(true)`: higher is better (throughput); `Some(false)`: lower (latency); `None`:
    /// unknown (a generic `collect`).
    pub higher_is_better: Option<bool>,
    pub value: f64,
    /// The file (and line, where one line holds it) the value was read from.
    pub source: String,
}

impl Metric {
    pub fn new(
        name: impl Into<String>,
        unit: &str,
        higher: Option<bool>,
        value: f64,
        source: &str,
    ) -> Self {
        Metric {
            name: name.into(),
            unit: unit.into(),
            higher_is_better: higher,
            value,
            source: source.into(),
        }
    }
}

/// What one point's artifacts gave.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Measure {
    Steps(StepStats),
    Ep(Box<EpSummary>),
    Drt(DrtReport),
    /// A generic metric: mean of a CSV column, a JSON value, or regex matches.
    Metric {
        name: String,
        value: f64,
        samples: u64,
        files: Vec<String>,
    },
    /// nccl-tests: time, algbw and busbw per message size (and type, op, root), both halves.
    Nccl {
        report: NcclReport,
        files: Vec<String>,
    },
}

impl Measure {
    /// The headline number: samples/s, total µs, global samples/s, or the metric.
    pub fn headline(&self) -> f64 {
        match self {
            Measure::Steps(s) => s.samples_per_sec,
            Measure::Ep(e) => e.total.avg_us,
            // the warm rate: pass 0 includes reader/worker startup
            Measure::Drt(d) => d.warm().unwrap_or(f64::NAN),
            Measure::Metric { value, .. } => *value,
            Measure::Nccl { report, .. } => report.headline().unwrap_or(f64::NAN),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PointReport {
    pub run_id: String,
    pub bench: String,
    pub lane: String,
    pub axes: Vec<(String, String)>,
    pub repeat: i64,
    /// ok, failed, interrupted, missing (never ran), or no-data (ran, nothing collected).
    pub status: String,
    pub reason: String,
    pub measure: Option<Measure>,
    /// Every number of the point, the kind's headline first (empty when nothing was read).
    pub metrics: Vec<Metric>,
    pub problem: Option<String>,
    /// RecStore's own `*_main_agg.csv` when present (includes warmup rows; for comparison only).
    pub runner_aggregate: Option<BTreeMap<String, [f64; 4]>>,
}

/// The repeats of one (bench, lane, sweep point).
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    pub bench: String,
    pub lane: String,
    pub axes: Vec<(String, String)>,
    pub values: Vec<f64>,
    pub mean: Option<f64>,
    pub sd: Option<f64>,
    pub cv_percent: Option<f64>,
    /// This lane's mean over the baseline lane's mean (ratio of means), for throughput figures.
    pub speedup: Option<f64>,
    /// The lane the speedup is measured against.
    pub baseline: Option<String>,
    pub stages: BTreeMap<String, f64>,
    pub p95_step_total_ms: Option<f64>,
    pub run_ids: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReportData {
    pub dir: String,
    pub experiment: String,
    pub git_head: String,
    pub hostname: String,
    pub points: Vec<PointReport>,
    pub groups: Vec<Group>,
    pub missing: Vec<String>,
    /// What was off in the directory and how the report got around it.
    pub warnings: Vec<String>,
    /// Why no benchmark ran: a correctness test failed (step, host, exit code, log).
    pub stopped_before_e2e: Option<String>,
    /// Each `expect`, judged per sweep point.
    pub expectations: Vec<ExpectResult>,
    #[serde(skip)]
    pub exp: Option<Experiment>,
}

/// One `expect` judged at one sweep point (or point, for log patterns).
#[derive(Debug, Clone, Serialize)]
pub struct ExpectResult {
    pub bench: String,
    /// The expectation as written.
    pub expect: String,
    /// Where it was written (`file:line:col`).
    pub at: String,
    /// The sweep point (or lane) judged.
    pub point: String,
    pub ok: bool,
    /// False when it could not be judged here: its lane did not run (`--only`).
    pub judged: bool,
    /// What was found: the mean, the speedup, or the log evidence.
    pub found: String,
}
