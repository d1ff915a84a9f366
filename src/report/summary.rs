//! summary_e2e.csv and metrics.csv (the markdown is report/markdown.rs, the JSON report/json.rs).

use std::path::Path;

use crate::kind_api::data::{Measure, ReportData};
use crate::kinds;
use crate::report::format::{Format, Report};
use crate::results::collect::steps::STAGES;

/// summary_e2e.csv: manifest columns + (where a bench may read per-step CSVs)
/// samples_per_sec + p95_step_total_ms + mean_<stage> + the headline + the timing check.
pub struct E2eCsv;

impl Format for E2eCsv {
    fn write(&self, r: &Report) -> Result<Vec<String>, String> {
        e2e_csv(r.data, r.dir)?;
        Ok(vec!["summary_e2e.csv".into()])
    }
}

/// metrics.csv: every number of every point, with its unit, direction and source.
pub struct MetricsCsv;

impl Format for MetricsCsv {
    fn write(&self, r: &Report) -> Result<Vec<String>, String> {
        metrics_csv(r.data, r.dir)?;
        Ok(vec!["metrics.csv".into()])
    }
}

fn e2e_csv(data: &ReportData, dir: &Path) -> Result<(), String> {
    let (columns, rows) = crate::results::manifest::read_table(&dir.join("manifest.csv"));
    let mut w = csv::Writer::from_writer(Vec::new());
    // manifest.csv's columns but its `reason`, then the numbers
    let columns: Vec<String> = columns.into_iter().filter(|c| c != "reason").collect();
    let mut header = columns.clone();
    // the per-step columns where a bench may fill them (a per-step CSV); an older directory
    // without the experiment: where a point has them
    let per_step = match &data.exp {
        Some(e) => e.benches.iter().any(|b| kinds::of(b.kind).per_step(b)),
        None => true,
    } || data
        .points
        .iter()
        .any(|p| matches!(p.measure, Some(Measure::Steps(_))));
    if per_step {
        header.extend([
            "samples_per_sec".to_string(),
            "p95_step_total_ms".to_string(),
        ]);
        header.extend(STAGES.iter().map(|(s, _)| format!("mean_{s}")));
    }
    // every kind's headline number (empty when the point has none; metrics.csv says why)
    header.extend(["metric", "unit", "value", "source"].map(String::from));
    // does the step total time the stages (the kind's timing model), and the throughput on
    // the stages less data loading
    header.extend(["timing_check", "same_work_samples_per_sec"].map(String::from));
    w.write_record(&header).map_err(|e| e.to_string())?;
    let row_of: std::collections::HashMap<&str, &_> =
        rows.iter().map(|r| (r.run_id.as_str(), r)).collect();
    for p in &data.points {
        let Some(r) = row_of.get(p.run_id.as_str()) else {
            continue;
        };
        let mut rec: Vec<String> = columns
            .iter()
            .map(|c| match c.as_str() {
                // the point's status as the report judged it (no-data when nothing was
                // collected): the one status every output gives
                "status" => p.status.clone(),
                c => r.value(c),
            })
            .collect();
        match &p.measure {
            Some(Measure::Steps(s)) => {
                rec.push(format!("{:.2}", s.samples_per_sec));
                rec.push(format!("{:.2}", s.p95_step_total_ms));
                for (st, _) in STAGES {
                    rec.push(
                        s.stages
                            .get(*st)
                            .map(|v| format!("{v:.2}"))
                            .unwrap_or_default(),
                    );
                }
            }
            _ if per_step => rec.extend(std::iter::repeat_n(String::new(), 2 + STAGES.len())),
            _ => {}
        }
        let (name, unit) = headline_of(data, &p.bench);
        match p.metrics.first() {
            Some(m) => rec.extend([
                m.name.clone(),
                m.unit.clone(),
                crate::util::fmt::csv_num(m.value),
                m.source.clone(),
            ]),
            None => rec.extend([name, unit, String::new(), String::new()]),
        }
        match p.timing() {
            Some(t) => {
                rec.push(if t.suspect() {
                    format!("suspect: {}", t.english())
                } else {
                    "ok".into()
                });
                rec.push(
                    t.same_work_samples_per_sec
                        .map(|v| format!("{v:.2}"))
                        .unwrap_or_default(),
                );
            }
            None => rec.extend([String::new(), String::new()]),
        }
        w.write_record(&rec).map_err(|e| e.to_string())?;
    }
    let bytes = w.into_inner().map_err(|e| e.to_string())?;
    crate::results::atomic::write(&dir.join("summary_e2e.csv"), &bytes)
}

/// The headline metric's name and unit of a bench.
fn headline_of(data: &ReportData, bench: &str) -> (String, String) {
    data.exp
        .as_ref()
        .and_then(|e| e.benches.iter().find(|b| b.name == bench))
        .map(|b| kinds::of(b.kind).headline(b))
        .unwrap_or_default()
}

/// metrics.csv: every number of every point in long form (run, lane, each axis, repeat, metric,
/// unit, direction, value, source); a point without numbers has one row with an empty value and
/// the reason.
fn metrics_csv(data: &ReportData, dir: &Path) -> Result<(), String> {
    let mut axes: Vec<String> = Vec::new();
    for p in &data.points {
        for (k, _) in &p.axes {
            if !axes.contains(k) {
                axes.push(k.clone());
            }
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["run_id", "bench", "lane"].map(String::from).to_vec();
    header.extend(axes.iter().cloned());
    header.extend(
        [
            "repeat",
            "status",
            "metric",
            "unit",
            "direction",
            "value",
            "source",
            "reason",
        ]
        .map(String::from),
    );
    w.write_record(&header).map_err(|e| e.to_string())?;
    for p in &data.points {
        let mut lead = vec![p.run_id.clone(), p.bench.clone(), p.lane.clone()];
        for a in &axes {
            lead.push(
                p.axes
                    .iter()
                    .find(|(k, _)| k == a)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
            );
        }
        lead.push(p.repeat.to_string());
        lead.push(p.status.clone());
        if p.metrics.is_empty() {
            let (name, unit) = headline_of(data, &p.bench);
            let why = p.problem.clone().unwrap_or_else(|| p.reason.clone());
            let mut rec = lead.clone();
            rec.extend([name, unit, String::new(), String::new(), String::new(), why]);
            w.write_record(&rec).map_err(|e| e.to_string())?;
            continue;
        }
        for m in &p.metrics {
            let mut rec = lead.clone();
            rec.extend([
                m.name.clone(),
                m.unit.clone(),
                match m.higher_is_better {
                    Some(true) => "higher".into(),
                    Some(false) => "lower".into(),
                    None => String::new(),
                },
                crate::util::fmt::csv_num(m.value),
                m.source.clone(),
                String::new(),
            ]);
            w.write_record(&rec).map_err(|e| e.to_string())?;
        }
        // telemetry's metrics that were not read, each with why
        let not_read: Vec<(String, String)> = p
            .telemetry
            .as_ref()
            .map(|t| {
                let mut v: Vec<(String, String)> = match &t.missing {
                    Some(why) => crate::results::telemetry::METRICS
                        .iter()
                        .map(|(m, _, _)| (m.to_string(), why.clone()))
                        .collect(),
                    None => Vec::new(),
                };
                v.extend(t.not_read.iter().cloned());
                v
            })
            .unwrap_or_default();
        for (name, why) in not_read {
            let unit = crate::results::telemetry::METRICS
                .iter()
                .chain([&crate::results::telemetry::CPU_METRIC])
                .find(|(m, _, _)| *m == name)
                .map_or("", |(_, u, _)| u);
            let mut rec = lead.clone();
            rec.extend([
                name,
                unit.to_string(),
                String::new(),
                String::new(),
                String::new(),
                why,
            ]);
            w.write_record(&rec).map_err(|e| e.to_string())?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.to_string())?;
    crate::results::atomic::write(&dir.join("metrics.csv"), &bytes)
}
