//! dataset-rt's collector: the dataset_rt JSON report.

use serde::Serialize;

use crate::collect::PointDir;

/// The figures of a dataset_rt JSON report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DrtReport {
    pub world_size: u64,
    /// Global samples/s per repeat.
    pub global_samples_per_second: Vec<f64>,
    /// First-batch latency of the first pass, max over ranks (seconds).
    pub first_batch_seconds: Option<f64>,
    /// Peak sampled RSS over ranks and passes (bytes).
    pub peak_rss_bytes: Option<u64>,
    /// The report file (set by `collect`).
    pub source: String,
}

pub fn parse_drt(text: &str) -> Result<DrtReport, String> {
    // The report file, or the last stdout line that is a JSON object.
    let v: serde_json::Value = serde_json::from_str(text).or_else(|_| {
        text.lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .ok_or("no JSON report".to_string())
            .and_then(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
    })?;
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
        source: String::new(),
    })
}

/// The point's report, `outputs/<run_id>/<run_id>.json`.
pub fn collect(at: &PointDir) -> Result<DrtReport, String> {
    let f = at.out().join(format!("{}.json", at.run_id));
    let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
    let mut r = parse_drt(&text).map_err(|e| format!("{}: {e}", f.display()))?;
    r.source = f.display().to_string();
    Ok(r)
}
