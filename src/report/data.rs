//! The report's data: every expected point of a result directory, what its artifacts say, and the
//! aggregates over repeats. Built from the directory alone (journal, manifest, outputs, logs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::collect::kernels::{self, DrtReport, EpSummary};
use crate::collect::steps::{self, StepStats};
use crate::exec::{journal, manifest};
use crate::expand::{self, Filter};
use crate::model::{Experiment, KindId, Placement};
use crate::report::stats;

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
    /// nccl-tests: bus bandwidth per message size.
    Nccl {
        rows: Vec<kernels::NcclRow>,
        files: Vec<String>,
    },
}

impl Measure {
    /// The headline number: samples/s, total µs, global samples/s, or the metric.
    pub fn headline(&self) -> f64 {
        match self {
            Measure::Steps(s) => s.samples_per_sec,
            Measure::Ep(e) => e.total.avg_us,
            Measure::Drt(d) => stats::mean(&d.global_samples_per_second).unwrap_or(f64::NAN),
            Measure::Metric { value, .. } => *value,
            Measure::Nccl { rows, .. } => rows
                .iter()
                .filter_map(|r| r.busbw_out)
                .fold(f64::NAN, f64::max),
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

#[derive(Debug, Serialize)]
pub struct ReportData {
    pub dir: String,
    pub experiment: String,
    pub git_head: String,
    pub hostname: String,
    pub points: Vec<PointReport>,
    pub groups: Vec<Group>,
    pub missing: Vec<String>,
    #[serde(skip)]
    pub exp: Option<Experiment>,
}

/// The experiment as the run resolved it (from the journal header).
pub fn experiment_of(dir: &Path) -> Result<(Experiment, Value), String> {
    let events = journal::read(&dir.join("journal.jsonl"));
    let header = events.iter().find(|e| e["event"] == "header").cloned().ok_or(format!(
        "{}: no journal header (the run stopped before preflight finished, or this is not a result directory)",
        dir.display()
    ))?;
    let text = header["resolved"]
        .as_str()
        .ok_or("the journal header has no resolved experiment")?;
    let loaded = crate::load::load_str(
        &format!("{}/journal.jsonl (resolved)", dir.display()),
        text,
        &crate::validate::Options { allow_large: true },
    );
    let exp = loaded.experiment.ok_or_else(|| {
        format!(
            "the resolved experiment in the journal does not decode: {}",
            loaded
                .diags
                .first()
                .map(|d| d.message.clone())
                .unwrap_or_default()
        )
    })?;
    Ok((exp, header))
}

fn baseline_lane(exp: &Experiment, bench: &str) -> Option<String> {
    let b = exp.benches.iter().find(|b| b.name == bench)?;
    if b.kind == KindId::RecstoreE2e {
        if let Some(l) = b.lanes.iter().find(|l| l.name == "TorchRec-HBM") {
            return Some(l.name.clone());
        }
    }
    b.lanes.first().map(|l| l.name.clone())
}

fn logs_for(dir: &Path, run_id: &str, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("logs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(prefix) && n.contains(&format!("-{run_id}-")))
    });
    v.sort();
    v
}

/// Collect one point's measure from its artifacts.
fn collect_point(
    dir: &Path,
    exp: &Experiment,
    bench: &crate::model::Bench,
    run_id: &str,
    lane: &str,
    warmup: i64,
) -> Result<Measure, String> {
    let out = dir.join("outputs").join(run_id);
    match bench.kind {
        KindId::RecstoreE2e => {
            let name = match crate::kinds::recstore_e2e::rules::classify(lane) {
                Some(crate::kinds::recstore_e2e::rules::LaneKind::TorchRec { .. }) => "torchrec",
                _ => "recstore",
            };
            let main = out.join(format!("{name}_main.csv"));
            if main.exists() {
                return steps::collect(&[&main], warmup).map(Measure::Steps);
            }
            let ranks_dir = out.join(format!("{name}_ranks"));
            let mut ranks: Vec<PathBuf> = std::fs::read_dir(&ranks_dir)
                .map(|d| {
                    d.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
                        .collect()
                })
                .unwrap_or_default();
            ranks.sort();
            if ranks.is_empty() {
                return Err(format!(
                    "{}: not found (and no rank CSVs in {})",
                    main.display(),
                    ranks_dir.display()
                ));
            }
            let refs: Vec<&Path> = ranks.iter().map(PathBuf::as_path).collect();
            steps::collect(&refs, warmup).map(Measure::Steps)
        }
        KindId::EpBench => {
            let logs = logs_for(dir, run_id, "ep-");
            let mut last = format!(
                "no ep-bench log for {run_id} in {}",
                dir.join("logs").display()
            );
            for l in &logs {
                let text =
                    std::fs::read_to_string(l).map_err(|e| format!("{}: {e}", l.display()))?;
                match kernels::parse_ep(&text) {
                    Ok(s) => return Ok(Measure::Ep(Box::new(s))),
                    Err(e) => last = format!("{}: {e}", l.display()),
                }
            }
            Err(last)
        }
        KindId::DatasetRt => {
            let f = out.join(format!("{run_id}.json"));
            let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
            kernels::parse_drt(&text)
                .map(Measure::Drt)
                .map_err(|e| format!("{}: {e}", f.display()))
        }
        KindId::Bench => {
            let Placement::Steps {
                collect: Some(c), ..
            } = &bench.placement
            else {
                return Err("the bench declares no `collect`".into());
            };
            let _ = exp;
            match c.format.as_str() {
                "csv" => {
                    let f = out.join(c.path.as_deref().unwrap_or(""));
                    let mut rd =
                        csv::Reader::from_path(&f).map_err(|e| format!("{}: {e}", f.display()))?;
                    let headers = rd
                        .headers()
                        .map_err(|e| format!("{}: {e}", f.display()))?
                        .clone();
                    if headers.iter().any(|h| h == "step")
                        && headers.iter().any(|h| h == "step_total_ms")
                    {
                        return steps::collect(&[&f], warmup).map(Measure::Steps);
                    }
                    let metric = c.metric.clone().ok_or(format!(
                        "{}: set `metric=` on `collect` to name the column",
                        f.display()
                    ))?;
                    let col = headers
                        .iter()
                        .position(|h| h == metric)
                        .ok_or(format!("{}: no column `{metric}`", f.display()))?;
                    let (mut sum, mut n) = (0.0, 0u64);
                    for (i, r) in rd.records().enumerate() {
                        let r = r.map_err(|e| format!("{}: {e}", f.display()))?;
                        let v: f64 =
                            r.get(col)
                                .and_then(|s| s.trim().parse().ok())
                                .ok_or(format!(
                                    "{}:{}: `{metric}` is not a number",
                                    f.display(),
                                    i + 2
                                ))?;
                        sum += v;
                        n += 1;
                    }
                    if n == 0 {
                        return Err(format!("{}: no rows", f.display()));
                    }
                    Ok(Measure::Metric {
                        name: metric,
                        value: sum / n as f64,
                        samples: n,
                        files: vec![f.display().to_string()],
                    })
                }
                "json" => {
                    let f = out.join(c.path.as_deref().unwrap_or(""));
                    let v: Value = serde_json::from_str(
                        &std::fs::read_to_string(&f)
                            .map_err(|e| format!("{}: {e}", f.display()))?,
                    )
                    .map_err(|e| format!("{}: {e}", f.display()))?;
                    let metric = c.metric.clone().ok_or(format!(
                        "{}: set `metric=` (a dotted key) on `collect`",
                        f.display()
                    ))?;
                    let mut cur = &v;
                    for k in metric.split('.') {
                        cur = &cur[k];
                    }
                    let value = cur
                        .as_f64()
                        .ok_or(format!("{}: `{metric}` is not a number", f.display()))?;
                    Ok(Measure::Metric {
                        name: metric,
                        value,
                        samples: 1,
                        files: vec![f.display().to_string()],
                    })
                }
                "nccl-tests" => {
                    let files: Vec<PathBuf> = match &c.path {
                        Some(p) => vec![out.join(p)],
                        None => logs_for(dir, run_id, "run"),
                    };
                    let mut last = format!("no nccl-tests output for {run_id}");
                    for f in &files {
                        let text = std::fs::read_to_string(f)
                            .map_err(|e| format!("{}: {e}", f.display()))?;
                        match kernels::parse_nccl_tests(&text) {
                            Ok(rows) => {
                                return Ok(Measure::Nccl {
                                    rows,
                                    files: vec![f.display().to_string()],
                                })
                            }
                            Err(e) => last = format!("{}: {e}", f.display()),
                        }
                    }
                    Err(last)
                }
                _ => {
                    let pat = c.pattern.clone().unwrap_or_default();
                    let re =
                        regex::Regex::new(&pat).map_err(|e| format!("collect pattern: {e}"))?;
                    let group = c.metric.clone();
                    let (mut sum, mut n, mut files) = (0.0, 0u64, Vec::new());
                    for l in logs_for(dir, run_id, "run") {
                        let text = std::fs::read_to_string(&l).unwrap_or_default();
                        for cap in re.captures_iter(&text) {
                            let m = match &group {
                                Some(g) => cap.name(g),
                                None => cap.get(1),
                            };
                            if let Some(v) = m.and_then(|m| m.as_str().parse::<f64>().ok()) {
                                sum += v;
                                n += 1;
                            }
                        }
                        files.push(l.display().to_string());
                    }
                    if n == 0 {
                        return Err(format!("no line of {} matches /{pat}/", files.join(", ")));
                    }
                    Ok(Measure::Metric {
                        name: group.unwrap_or_else(|| "match".into()),
                        value: sum / n as f64,
                        samples: n,
                        files,
                    })
                }
            }
        }
    }
}

/// Read a result directory into report data.
pub fn load(dir: &Path) -> Result<ReportData, String> {
    let (exp, header) = experiment_of(dir)?;
    let rows = manifest::read(&dir.join("manifest.csv"));
    let by_id: BTreeMap<&str, &manifest::Row> =
        rows.iter().map(|r| (r.run_id.as_str(), r)).collect();
    let mut points = Vec::new();
    let mut missing = Vec::new();
    for p in expand::expand(&exp, &Filter::default()) {
        let bench = &exp.benches[p.bench];
        let axes: Vec<(String, String)> = p
            .axes
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        let (status, reason) = match by_id.get(p.run_id.as_str()) {
            Some(r) => (r.status.clone(), r.reason.clone()),
            None => ("missing".to_string(), "not run".to_string()),
        };
        let agg = ["recstore_main_agg.csv", "torchrec_main_agg.csv"]
            .iter()
            .map(|n| dir.join("outputs").join(&p.run_id).join(n))
            .find(|f| f.exists())
            .and_then(|f| steps::agg_csv(&f).ok());
        let mut pr = PointReport {
            runner_aggregate: agg,
            run_id: p.run_id.clone(),
            bench: bench.name.clone(),
            lane: p.lane_name.clone(),
            axes,
            repeat: p.repeat,
            status: status.clone(),
            reason,
            measure: None,
            problem: None,
        };
        if status == "ok" {
            let warmup = p.int("warmup-steps");
            match collect_point(dir, &exp, bench, &p.run_id, &p.lane_name, warmup) {
                Ok(m) => pr.measure = Some(m),
                Err(e) => {
                    pr.status = "no-data".into();
                    pr.problem = Some(e);
                }
            }
        }
        if pr.measure.is_none() {
            missing.push(format!(
                "{} ({}{})",
                pr.run_id,
                pr.status,
                pr.problem
                    .as_ref()
                    .map(|p| format!(": {p}"))
                    .unwrap_or_default()
            ));
        }
        points.push(pr);
    }
    let groups = group(&exp, &points);
    let host0 = &header["hosts"][0];
    Ok(ReportData {
        dir: dir.display().to_string(),
        experiment: exp.name.clone(),
        git_head: host0["git_head"].as_str().unwrap_or("unknown").to_string(),
        hostname: host0["hostname"].as_str().unwrap_or("unknown").to_string(),
        points,
        groups,
        missing,
        exp: Some(exp),
    })
}

/// Aggregate repeats: mean, sample sd, CV%, stage means, and speedup against the baseline lane.
pub fn group(exp: &Experiment, points: &[PointReport]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for p in points {
        let idx = groups
            .iter()
            .position(|g| g.bench == p.bench && g.lane == p.lane && g.axes == p.axes);
        let g = match idx {
            Some(i) => &mut groups[i],
            None => {
                groups.push(Group {
                    bench: p.bench.clone(),
                    lane: p.lane.clone(),
                    axes: p.axes.clone(),
                    values: Vec::new(),
                    mean: None,
                    sd: None,
                    cv_percent: None,
                    speedup: None,
                    baseline: None,
                    stages: BTreeMap::new(),
                    p95_step_total_ms: None,
                    run_ids: Vec::new(),
                });
                groups.last_mut().expect("pushed")
            }
        };
        g.run_ids.push(p.run_id.clone());
        if let Some(m) = &p.measure {
            g.values.push(m.headline());
        }
    }
    for g in &mut groups {
        g.mean = stats::mean(&g.values);
        g.sd = stats::sd(&g.values);
        g.cv_percent = stats::cv_percent(&g.values);
        let mine: Vec<&StepStats> = points
            .iter()
            .filter(|p| p.bench == g.bench && p.lane == g.lane && p.axes == g.axes)
            .filter_map(|p| match &p.measure {
                Some(Measure::Steps(s)) => Some(s),
                _ => None,
            })
            .collect();
        if !mine.is_empty() {
            let mut keys: Vec<&String> = mine.iter().flat_map(|s| s.stages.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let v: Vec<f64> = mine
                    .iter()
                    .filter_map(|s| s.stages.get(k).copied())
                    .collect();
                if let Some(m) = stats::mean(&v) {
                    g.stages.insert(k.clone(), m);
                }
            }
            g.p95_step_total_ms =
                stats::mean(&mine.iter().map(|s| s.p95_step_total_ms).collect::<Vec<_>>());
        }
    }
    let snapshot = groups.clone();
    for g in &mut groups {
        let is_throughput = points.iter().any(|p| {
            p.bench == g.bench
                && matches!(
                    p.measure,
                    Some(Measure::Steps(_)) | Some(Measure::Drt(_)) | Some(Measure::Metric { .. })
                )
        });
        let Some(base) = baseline_lane(exp, &g.bench) else {
            continue;
        };
        if !is_throughput {
            continue;
        }
        if let Some(b) = snapshot
            .iter()
            .find(|x| x.bench == g.bench && x.lane == base && x.axes == g.axes)
        {
            if let (Some(m), Some(bm)) = (g.mean, b.mean) {
                if bm != 0.0 {
                    g.speedup = Some(m / bm);
                    g.baseline = Some(base.clone());
                }
            }
        }
    }
    groups
}
