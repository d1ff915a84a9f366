//! dataset-rt's collector: the dataset_rt JSON report.

use serde::Serialize;

use crate::results::collect::PointDir;

/// The figures of a dataset_rt JSON report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DrtReport {
    pub world_size: u64,
    /// Global samples/s per pass (`global_samples_per_second`, one per `--repeats`).
    pub global_samples_per_second: Vec<f64>,
    /// First-batch latency of the first pass, max over ranks (seconds).
    pub first_batch_seconds: Option<f64>,
    /// Peak sampled RSS over ranks and passes (bytes).
    pub peak_rss_bytes: Option<u64>,
    /// The dataset_rt that ran (`ranks[].dataset_rt_version`; several joined by `, ` when
    /// ranks disagree), which may differ from the checkout (an installed wheel).
    pub dataset_rt_version: Option<String>,
    /// The report file (set by `collect`).
    pub source: String,
}

impl DrtReport {
    /// Pass 0 (the runbook: it includes reader and worker startup).
    pub fn cold(&self) -> Option<f64> {
        self.global_samples_per_second.first().copied()
    }

    /// The mean of the passes after the first (persistent workers): the headline. None with a
    /// single pass.
    pub fn warm(&self) -> Option<f64> {
        crate::util::stats::mean(self.global_samples_per_second.get(1..).unwrap_or(&[]))
    }
}

fn json_of(text: &str) -> Result<serde_json::Value, String> {
    // The report file, or the last stdout line that is a JSON object.
    serde_json::from_str(text).or_else(|_| {
        text.lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .ok_or("no JSON report".to_string())
            .and_then(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
    })
}

pub fn parse_drt(text: &str) -> Result<DrtReport, String> {
    let v = json_of(text)?;
    let g = v["global_samples_per_second"]
        .as_array()
        .ok_or("dataset_rt report has no `global_samples_per_second`")?;
    let ranks = v["ranks"].as_array().cloned().unwrap_or_default();
    let first = ranks
        .iter()
        .filter_map(|r| r["passes"][0]["first_batch_seconds"].as_f64())
        .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
    let rss = ranks
        .iter()
        .flat_map(|r| r["passes"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["resources"]["rss_bytes"].as_u64())
        .max();
    let mut versions: Vec<String> = Vec::new();
    for r in &ranks {
        if let Some(s) = r["dataset_rt_version"].as_str() {
            if !versions.iter().any(|x| x == s) {
                versions.push(s.to_string());
            }
        }
    }
    Ok(DrtReport {
        world_size: v["world_size"]
            .as_u64()
            .ok_or("dataset_rt report has no `world_size`")?,
        global_samples_per_second: {
            let v = g
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    x.as_f64()
                        .filter(|f| f.is_finite())
                        .ok_or(format!("global_samples_per_second[{i}] is not a number"))
                })
                .collect::<Result<Vec<f64>, String>>()?;
            if v.is_empty() {
                return Err("global_samples_per_second is empty".into());
            }
            v
        },
        first_batch_seconds: first,
        peak_rss_bytes: rss,
        dataset_rt_version: (!versions.is_empty()).then(|| versions.join(", ")),
        source: String::new(),
    })
}

/// Whether a report is complete and self-consistent, as a run that ended well writes it: every
/// rank 0..world_size-1 present once, each with every pass (`repeats` of them), a rate per pass
/// in `global_samples_per_second`, and `replay_verified` true on every rank. Ok: what was
/// checked, for the reason a recovered point gives; Err: the first thing missing.
pub fn completeness(text: &str, repeats: i64) -> Result<String, String> {
    let v = json_of(text)?;
    let world = v["world_size"]
        .as_u64()
        .ok_or("the report has no `world_size`")?;
    let rates = v["global_samples_per_second"]
        .as_array()
        .ok_or("the report has no `global_samples_per_second`")?;
    if rates.len() as i64 != repeats || rates.iter().any(|x| x.as_f64().is_none()) {
        return Err(format!(
            "`global_samples_per_second` holds {} rate(s), --repeats is {repeats}",
            rates.iter().filter(|x| x.as_f64().is_some()).count()
        ));
    }
    let ranks = v["ranks"].as_array().ok_or("the report has no `ranks`")?;
    for r in 0..world {
        let of: Vec<&serde_json::Value> = ranks
            .iter()
            .filter(|x| x["rank"].as_u64() == Some(r))
            .collect();
        let [rank] = of[..] else {
            return Err(if of.is_empty() {
                format!("rank {r} of {world} is missing from `ranks`")
            } else {
                format!("rank {r} appears {} times in `ranks`", of.len())
            });
        };
        let passes = rank["passes"].as_array().map(Vec::len).unwrap_or(0) as i64;
        if passes != repeats {
            return Err(format!(
                "rank {r} has {passes} pass(es) of {repeats}: pass {} is missing",
                passes.min(repeats)
            ));
        }
        if rank["replay_verified"].as_bool() != Some(true) {
            return Err(format!("rank {r}: `replay_verified` is not true"));
        }
    }
    if ranks.len() as u64 != world {
        return Err(format!(
            "`ranks` holds {} entries for world size {world}",
            ranks.len()
        ));
    }
    Ok(format!(
        "the report is complete: all {world} rank(s), {repeats} pass(es) each, {repeats} global rates, replay verified on every rank"
    ))
}

/// The point's report, `outputs/<run_id>/<run_id>.json`.
pub fn report_path(at: &PointDir) -> std::path::PathBuf {
    at.out().join(format!("{}.json", at.run_id))
}

pub fn collect(at: &PointDir) -> Result<DrtReport, String> {
    let f = report_path(at);
    let text = crate::results::collect::read_text(&f)?;
    let mut r = parse_drt(&text).map_err(|e| format!("{}: {e}", f.display()))?;
    r.source = f.display().to_string();
    Ok(r)
}
