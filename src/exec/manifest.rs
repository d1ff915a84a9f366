//! manifest.csv: one row per matrix point, in RecStore's matrix-runner columns.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::kinds::recstore_e2e::rules::{classify, LaneKind};
use crate::model::{Experiment, KindId, Placement};
use crate::plan::{Phase, Plan, PlanPoint};

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
    let (mut backend, mut transport, mut mode, mut main_csv) =
        (String::new(), String::new(), String::new(), String::new());
    let mut server_count = String::new();
    let mut client_ip = String::new();
    if let Some(b) = bench {
        match b.kind {
            KindId::RecstoreE2e => {
                match classify(&p.lane) {
                    Some(LaneKind::RecStore { ps_type, .. }) => {
                        backend = "recstore".into();
                        transport = ps_type.into();
                        main_csv =
                            format!("{}/outputs/{}/recstore_main.csv", plan.output, p.run_id);
                    }
                    Some(LaneKind::TorchRec { memory_mode }) => {
                        backend = "torchrec".into();
                        mode = memory_mode.into();
                        main_csv =
                            format!("{}/outputs/{}/torchrec_main.csv", plan.output, p.run_id);
                    }
                    None => {}
                }
                if let Placement::Recstore { clients, ps } = &b.placement {
                    server_count = ps.len().to_string();
                    client_ip = clients
                        .iter()
                        .filter_map(|c| exp.host(&c.host))
                        .map(|h| h.ip.clone())
                        .collect::<Vec<_>>()
                        .join(";");
                }
            }
            KindId::Bench => {
                backend = "bench".into();
                if let Placement::Steps {
                    collect: Some(c), ..
                } = &b.placement
                {
                    if let Some(path) = &c.path {
                        main_csv = format!("{}/outputs/{}/{}", plan.output, p.run_id, path);
                    }
                }
                server_count = p
                    .steps
                    .iter()
                    .filter(|s| s.phase == Phase::Serve)
                    .count()
                    .to_string();
            }
            KindId::EpBench => backend = setting("tool"),
            KindId::DatasetRt => {
                backend = "dataset_rt".into();
                main_csv = format!("{}/outputs/{}/{}.json", plan.output, p.run_id, p.run_id);
            }
        }
    }
    Row {
        run_id: p.run_id.clone(),
        lane: p.lane.clone(),
        backend,
        transport,
        torchrec_memory_mode: mode,
        client_ip,
        server_count,
        batch_size: setting("batch-size"),
        embedding_dim: setting("embedding-dim"),
        num_embeddings: setting("num-embeddings"),
        repeat_index: p.repeat,
        main_csv,
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
