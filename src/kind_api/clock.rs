//! Same clock as data: each point's timing check, read by the report's tables and sections.

use crate::kind_api::data::{Group, Measure, PointReport, ReportData};
use crate::model::Bench;
use crate::results::collect::timing::TimingCheck;
use crate::util::lang::Lang;
impl Measure {
    /// The timing check of a point's per-step numbers, where its kind declares a model.
    pub fn timing(&self) -> Option<&TimingCheck> {
        match self {
            Measure::Steps(s) => s.timing.as_ref(),
            Measure::Metric { timing, .. } => timing.as_ref(),
            Measure::Own(_) => None,
        }
    }
}

impl PointReport {
    pub fn timing(&self) -> Option<&TimingCheck> {
        self.measure.as_ref().and_then(Measure::timing)
    }
}

/// The checks of one group's points (its repeats), in run order.
fn checks<'a>(data: &'a ReportData, g: &Group) -> Vec<(&'a str, &'a TimingCheck)> {
    g.run_ids
        .iter()
        .filter_map(|id| data.point(id))
        .filter_map(|p| p.timing().map(|t| (p.run_id.as_str(), t)))
        .collect()
}

/// The cell of a lane's timing check: `ok`, or `⚠ suspect` (with how many repeats).
pub fn check_cell(data: &ReportData, g: &Group, l: Lang) -> String {
    let c = checks(data, g);
    if c.is_empty() {
        return "—".into();
    }
    let bad = c.iter().filter(|(_, t)| t.suspect()).count();
    if bad == 0 {
        l.t("通过", "ok").into()
    } else {
        let what = l.t("可疑", "suspect");
        format!("⚠ {what} ({bad}/{})", c.len())
    }
}

/// Whether any point of the bench has a suspect step total.
pub fn any_suspect(data: &ReportData, b: &Bench) -> bool {
    data.points
        .iter()
        .any(|p| p.bench == b.name && p.timing().is_some_and(TimingCheck::suspect))
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The same-work samples/s of a group: the mean over its repeats (None when a repeat lacks it).
pub fn same_work_mean(data: &ReportData, g: &Group) -> Option<f64> {
    let c = checks(data, g);
    if c.is_empty() || c.len() != g.values.len() {
        return None;
    }
    let v: Option<Vec<f64>> = c.iter().map(|(_, t)| t.same_work_samples_per_sec).collect();
    mean(&v?)
}
