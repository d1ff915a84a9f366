//! manifest.csv's row of a plan point: its settings and its kind's columns.

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
