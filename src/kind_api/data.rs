//! The report's data types: every expected point of a result directory, what its artifacts say,
//! and the aggregates over repeats (built by `gather`).

use std::collections::BTreeMap;

use serde::Serialize;

use std::any::Any;
use std::sync::Arc;

use crate::model::{Bench, Experiment};
use crate::results::collect::steps::StepStats;

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

/// Where a value was read: its file, and its lines there (`m.csv:2–11`); several files as
/// they are.
pub fn source_of(files: &[String], lines: Option<&str>) -> String {
    match (files, lines) {
        ([f], Some(l)) => format!("{f}:{l}"),
        _ => files.join(";"),
    }
}

/// The lines a value was read from (in the order read), as a source names them: one (`7`), a
/// few (`3, 9`), a run (`2–11`), or their span and count (`2–12 (10 rows)`). Memory does not
/// grow with the lines.
#[derive(Debug, Default)]
pub struct Lines {
    first: u64,
    last: u64,
    n: u64,
    few: Vec<u64>,
}

impl Lines {
    pub fn push(&mut self, line: u64) {
        if self.n == 0 {
            self.first = line;
        }
        self.first = self.first.min(line);
        self.last = self.last.max(line);
        self.n += 1;
        if self.few.len() < 4 {
            self.few.push(line);
        }
    }

    /// `what`: what a line is (`rows`, `matches`).
    pub fn text(&self, what: &str) -> Option<String> {
        let (first, last, n) = (self.first, self.last, self.n);
        Some(match n {
            0 => return None,
            1 => first.to_string(),
            2 | 3 => self
                .few
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            n if last - first + 1 == n => format!("{first}–{last}"),
            n => format!("{first}–{last} ({n} {what})"),
        })
    }
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
#[derive(Debug, Clone)]
pub enum Measure {
    /// Per-step CSVs (the shared steps collector).
    Steps(StepStats),
    /// A generic metric: mean of a CSV column, a JSON value, or regex matches.
    Metric {
        name: String,
        /// The unit the numbers carried in their text (`ms` of `lat=999.0ms`), where they did.
        unit: Option<String>,
        value: f64,
        samples: u64,
        files: Vec<String>,
        /// Where in its one file the value was read: `7` (one line), `2–11` (the rows a mean
        /// is over), `3, 9` (the lines a pattern matched).
        lines: Option<String>,
        /// The timing check of the CSV's declared stages (`collect "csv" { stages …; total … }`).
        timing: Option<crate::results::collect::timing::TimingCheck>,
    },
    /// A kind's own measure (a kernel summary, a loader report, a collective's table): only
    /// its kind reads inside it.
    Own(Own),
}

/// A kind's own measure: its value (read back with [`Measure::own`]), its tag in
/// summary.json, and its headline number.
#[derive(Clone)]
pub struct Own {
    tag: &'static str,
    headline: f64,
    value: Arc<dyn Any + Send + Sync>,
    json: serde_json::Value,
}

impl Own {
    /// `tag` names it in summary.json (`"kind": tag`, then the value's fields); `headline` is
    /// the number its groups aggregate (NaN: none).
    pub fn new<T: Serialize + Any + Send + Sync>(
        tag: &'static str,
        value: T,
        headline: f64,
    ) -> Own {
        let json = serde_json::to_value(&value).unwrap_or(serde_json::Value::Null);
        Own {
            tag,
            headline,
            value: Arc::new(value),
            json,
        }
    }
}

impl std::fmt::Debug for Own {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Own({}: {})", self.tag, self.json)
    }
}

impl Measure {
    /// The headline number: samples/s, the metric, or the kind's own headline.
    pub fn headline(&self) -> f64 {
        match self {
            Measure::Steps(s) => s.samples_per_sec,
            Measure::Metric { value, .. } => *value,
            Measure::Own(o) => o.headline,
        }
    }

    /// A kind's own measure of type `T`, if this is one.
    pub fn own<T: Any>(&self) -> Option<&T> {
        match self {
            Measure::Own(o) => o.value.downcast_ref::<T>(),
            _ => None,
        }
    }
}

impl Serialize for Measure {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        #[derive(Serialize)]
        #[serde(tag = "kind", rename_all = "kebab-case")]
        enum Shared<'a> {
            Steps(&'a StepStats),
            Metric {
                name: &'a str,
                #[serde(skip_serializing_if = "Option::is_none")]
                unit: &'a Option<String>,
                value: f64,
                samples: u64,
                files: &'a [String],
                #[serde(skip_serializing_if = "Option::is_none")]
                lines: &'a Option<String>,
                #[serde(skip_serializing_if = "Option::is_none")]
                timing: &'a Option<crate::results::collect::timing::TimingCheck>,
            },
        }
        match self {
            Measure::Steps(x) => Shared::Steps(x).serialize(s),
            Measure::Metric {
                name,
                unit,
                value,
                samples,
                files,
                lines,
                timing,
            } => Shared::Metric {
                name,
                unit,
                value: *value,
                samples: *samples,
                files,
                lines,
                timing,
            }
            .serialize(s),
            Measure::Own(o) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("kind", o.tag)?;
                if let serde_json::Value::Object(fields) = &o.json {
                    for (k, v) in fields {
                        m.serialize_entry(k, v)?;
                    }
                }
                m.end()
            }
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
    /// Why, in English (manifest.csv's reason).
    pub reason: String,
    /// Why, in the report's language (its first line): the journal's reason as data said in
    /// it, or the English text when the journal holds none (an older run).
    #[serde(skip)]
    pub said: String,
    pub measure: Option<Measure>,
    /// Every number of the point, the kind's headline first (empty when nothing was read).
    pub metrics: Vec<Metric>,
    pub problem: Option<String>,
    /// RecStore's own `*_main_agg.csv` when present (includes warmup rows; for comparison only).
    pub runner_aggregate: Option<BTreeMap<String, [f64; 4]>>,
    /// Why the runner's own aggregate file, present, was not read (`file:line: …`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_aggregate_problem: Option<String>,
    /// When its measured steps ran (Unix ms, first start to last end) and on what (`local`, a
    /// host taken whole, or `local GPU 1`), as the journal's timing holds them.
    #[serde(skip)]
    pub ran: Option<(f64, f64, Vec<String>)>,
    /// The member of its bench's `pool` it ran on, as the journal records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placed: Option<String>,
    /// Why the point's numbers are left out of the statistics: it ran under a profiler
    /// (`profile`, without `stats=#true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perturbed: Option<String>,
    /// What the GPUs did during the point (`telemetry`), for a point that ran to the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::results::telemetry::PointTelemetry>,
    /// Where the launch's peak RSS is not known, the memory its starter held (MiB): the
    /// peak was not above it (the journal's `max_rss_floor_mib`).
    #[serde(skip)]
    pub rss_floor_mib: Option<f64>,
    /// An ok point's non-zero exit code, which its run step's `exit-ok=` accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_exit: Option<i64>,
}

impl PointReport {
    /// The value of the metric `name`, if the point has it.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }

    /// The headline per watt (`<headline>_per_w`, with `telemetry`), if the point has it.
    pub fn per_watt(&self) -> Option<f64> {
        let head = self.metrics.first()?;
        self.value(&format!("{}_per_w", head.name))
    }
}

/// The repeats of one (bench, lane, sweep point).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Group {
    pub bench: String,
    pub lane: String,
    pub axes: Vec<(String, String)>,
    pub values: Vec<f64>,
    pub mean: Option<f64>,
    pub sd: Option<f64>,
    pub cv_percent: Option<f64>,
    /// Why `sd` (and `cv_percent`) is none, where it is (`n=1`, `no values`, `mean ≤ 0`, …:
    /// [`crate::kind_api::tables::spread_why`], in English); left out of summary.json where the
    /// number is there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sd_why: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cv_why: Option<&'static str>,
    /// Why `mean` is none, where it is (every point failed, was interrupted or had no data).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_why: Option<&'static str>,
    /// Why `speedup` is none where there is a baseline to be over
    /// ([`crate::kind_api::tables::ratio_why`], in English).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_why: Option<&'static str>,
    /// This lane's mean over the baseline lane's mean (ratio of means), for throughput figures.
    pub speedup: Option<f64>,
    /// The lane the speedup is measured against.
    pub baseline: Option<String>,
    /// Which way the headline is better (`Some(true)`: higher), as its metric says; the
    /// speedup is in that direction (a latency's is baseline / lane), the plain ratio when
    /// unknown.
    pub higher_is_better: Option<bool>,
    pub stages: BTreeMap<String, f64>,
    pub p95_step_total_ms: Option<f64>,
    /// Every point of the group, with data or not.
    pub run_ids: Vec<String>,
    /// The point each of `values` is, in order (helper 87: `run_ids` has the points without a
    /// value too, so its places did not line up with `values`').
    pub value_run_ids: Vec<String>,
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
    /// What was off in the directory and how the report got around it (English, as the
    /// terminal says it).
    pub warnings: Vec<String>,
    /// The same warnings in the report's language, in the same order (what the report shows).
    #[serde(skip)]
    pub warnings_said: Vec<String>,
    /// The run ids of every point of the experiment the runs into the directory were asked
    /// for, those without a row in `points` (an adaptive group's skipped ones) too.
    #[serde(skip)]
    pub point_ids: Vec<String>,
    /// Benches whose `collect` an earlier run into the directory read otherwise (a `--force`
    /// resume after an edit): why a number is read otherwise now.
    #[serde(skip)]
    pub collect_changed: Vec<String>,
    /// Points whose number the run read (the journal's) and whose files give none now: a
    /// report written from this data has less than the one before it.
    #[serde(skip)]
    pub lost: Vec<String>,
    /// Points whose files give another number than the run read, with the run's.
    #[serde(skip)]
    pub changed: Vec<(String, f64)>,
    /// Why no benchmark ran: a correctness test failed (step, host, exit code, log).
    pub stopped_before_e2e: Option<String>,
    /// Each `expect`, judged per sweep point.
    pub expectations: Vec<ExpectResult>,
    /// The language the report is written in.
    pub lang: crate::util::lang::Lang,
    #[serde(skip)]
    pub exp: Option<Experiment>,
    /// run id → its place in `points`, made on first use ([`ReportData::point`]).
    #[serde(skip)]
    pub by_id: crate::util::index::ById,
}

impl ReportData {
    /// The point of a run id: looked up, not searched (reports of 100k points ask per point).
    pub fn point(&self, run_id: &str) -> Option<&PointReport> {
        self.by_id.get(&self.points, |p| &p.run_id, run_id)
    }

    /// The points of a group, in its order.
    pub fn points_of<'a>(&'a self, g: &'a Group) -> impl Iterator<Item = &'a PointReport> + 'a {
        g.run_ids.iter().filter_map(|id| self.point(id))
    }
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
    /// What was found: the mean, the speedup, or the log evidence (English: the terminal's).
    pub found: String,
    /// The same in the report's language (what the report shows).
    #[serde(skip)]
    pub found_said: String,
}

/// What a bench's result sections are drawn from: the report's data, the bench, its groups
/// (one per lane and sweep point) and the result directory.
#[derive(Clone, Copy)]
pub struct BenchResults<'a> {
    pub data: &'a ReportData,
    pub bench: &'a Bench,
    pub groups: &'a [&'a Group],
    pub dir: &'a std::path::Path,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_one_a_few_a_run_or_a_span_and_count() {
        let text = |ls: &[u64]| {
            let mut l = Lines::default();
            ls.iter().for_each(|x| l.push(*x));
            l.text("rows")
        };
        assert_eq!(text(&[]), None);
        assert_eq!(text(&[7]).as_deref(), Some("7"));
        assert_eq!(text(&[3, 9]).as_deref(), Some("3, 9"));
        assert_eq!(text(&[2, 3, 5]).as_deref(), Some("2, 3, 5"));
        assert_eq!(text(&[2, 3, 4, 5, 6]).as_deref(), Some("2–6"));
        assert_eq!(text(&[2, 3, 5, 6, 7]).as_deref(), Some("2–7 (5 rows)"));
        assert_eq!(source_of(&["m.csv".into()], Some("2–6")), "m.csv:2–6");
        assert_eq!(source_of(&["a".into(), "b".into()], Some("1")), "a;b");
    }
}
