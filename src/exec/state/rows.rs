//! manifest.csv's row of a plan point: its core columns, its kind's, and one per sweep axis.

use crate::kinds;
use crate::model::Experiment;
use crate::plan::{Plan, PlanPoint};
use crate::results::manifest::Row;

pub fn row(
    exp: &Experiment,
    plan: &Plan,
    p: &PlanPoint,
    status: &str,
    code: Option<i32>,
    reason: &str,
    log: &str,
) -> Row {
    let bench = exp.benches.iter().find(|b| b.name == p.bench);
    let mut cols = bench
        .map(|b| kinds::of(b.kind).manifest(exp, b, p, &plan.output))
        .unwrap_or_default();
    let own = bench
        .map(|b| kinds::of(b.kind).manifest_own())
        .unwrap_or_default();
    for (axis, v) in &p.axes {
        let c = crate::kind_api::kind::axis_column(axis, own);
        if !cols.iter().any(|(k, _)| *k == c) {
            cols.push((c, v.to_string()));
        }
    }
    Row {
        run_id: p.run_id.clone(),
        lane: p.lane.clone(),
        repeat_index: p.repeat,
        log_path: log.to_string(),
        status: status.to_string(),
        exit_code: code.map(|c| c.to_string()).unwrap_or_default(),
        reason: reason.lines().next().unwrap_or("").to_string(),
        cols,
    }
}
