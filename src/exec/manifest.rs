//! manifest.csv: one row per matrix point, in RecStore's matrix-runner columns.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::kinds;
use crate::model::Experiment;
use crate::plan::{Plan, PlanPoint};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub run_id: String,
    pub lane: String,
    pub backend: String,
    pub transport: String,
    pub torchrec_memory_mode: String,
    pub client_ip: String,
    pub server_count: String,
    pub batch_size: String,
    pub embedding_dim: String,
    pub num_embeddings: String,
    pub repeat_index: i64,
    pub main_csv: String,
    pub log_path: String,
    pub status: String,
    pub exit_code: String,
    /// Why a point failed (expr's addition to RecStore's columns).
    pub reason: String,
}

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
    let setting = |k: &str| {
        bench
            .and_then(|b| {
                p.axes
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.to_string())
                    .or_else(|| {
                        let lane = b.lanes.iter().find(|l| l.name == p.lane);
                        lane.and_then(|l| l.overrides.get(k))
                            .or_else(|| b.settings.get(k))
                            .map(|x| x.val.to_string())
                    })
            })
            .unwrap_or_default()
    };
    let cols = bench
        .map(|b| kinds::of(b.kind).manifest(exp, b, p, &plan.output))
        .unwrap_or_default();
    Row {
        run_id: p.run_id.clone(),
        lane: p.lane.clone(),
        backend: cols.backend,
        transport: cols.transport,
        torchrec_memory_mode: cols.torchrec_memory_mode,
        client_ip: cols.client_ip,
        server_count: cols.server_count,
        batch_size: setting("batch-size"),
        embedding_dim: setting("embedding-dim"),
        num_embeddings: setting("num-embeddings"),
        repeat_index: p.repeat,
        main_csv: cols.main_csv,
        log_path: log.to_string(),
        status: status.to_string(),
        exit_code: code.map(|c| c.to_string()).unwrap_or_default(),
        reason: reason.lines().next().unwrap_or("").to_string(),
    }
}

pub fn write(path: &Path, rows: &[Row]) -> Result<(), String> {
    let tmp = path.with_extension("csv.tmp");
    let mut w = csv::Writer::from_path(&tmp).map_err(|e| e.to_string())?;
    for r in rows {
        w.serialize(r).map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, path).map_err(|e| e.to_string())
}

pub fn read(path: &Path) -> Vec<Row> {
    let Ok(mut r) = csv::Reader::from_path(path) else {
        return Vec::new();
    };
    r.deserialize().filter_map(Result::ok).collect()
}
