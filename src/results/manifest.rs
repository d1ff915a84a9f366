//! manifest.csv: one row per matrix point, in RecStore's matrix-runner columns.

use std::path::Path;

use serde::{Deserialize, Serialize};

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

pub fn write(path: &Path, rows: &[Row]) -> Result<(), String> {
    // the whole table in memory, then one atomic replacement (a failed write, as on a full
    // disk, leaves the old manifest and no temporary file)
    let mut w = csv::Writer::from_writer(Vec::new());
    // the header even without rows (a run interrupted before its first point)
    if rows.is_empty() {
        w.write_record(ROW_COLUMNS).map_err(|e| e.to_string())?;
    }
    for r in rows {
        w.serialize(r).map_err(|e| e.to_string())?;
    }
    let bytes = w.into_inner().map_err(|e| e.to_string())?;
    super::atomic::write(path, &bytes)
}

pub fn read(path: &Path) -> Vec<Row> {
    let Ok(mut r) = csv::Reader::from_path(path) else {
        return Vec::new();
    };
    r.deserialize().filter_map(Result::ok).collect()
}

/// The rows of a manifest, or the first line that is not one (`manifest.csv:LINE: why`).
/// A missing file is `Ok(None)`.
pub fn read_checked(path: &Path) -> Result<Option<Vec<Row>>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let mut r = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let want: Vec<String> = ROW_COLUMNS.iter().map(|c| c.to_string()).collect();
    let got: Vec<String> = r
        .headers()
        .map_err(|e| format!("{}:1: {e}", path.display()))?
        .iter()
        .map(str::to_string)
        .collect();
    if got != want {
        return Err(format!(
            "{}:1: not a manifest header (expected {})",
            path.display(),
            want.join(",")
        ));
    }
    let mut rows = Vec::new();
    for (i, rec) in r.deserialize::<Row>().enumerate() {
        rows.push(rec.map_err(|e| format!("{}:{}: {e}", path.display(), i + 2))?);
    }
    Ok(Some(rows))
}

/// manifest.csv's columns, in order.
pub const ROW_COLUMNS: &[&str] = &[
    "run_id",
    "lane",
    "backend",
    "transport",
    "torchrec_memory_mode",
    "client_ip",
    "server_count",
    "batch_size",
    "embedding_dim",
    "num_embeddings",
    "repeat_index",
    "main_csv",
    "log_path",
    "status",
    "exit_code",
    "reason",
];
