//! Built-in benchmark kinds, one folder each: vocabulary (`spec.rs`), rules and plan.

pub mod bench;
pub mod dataset_rt;
pub mod ep_bench;
pub mod recstore_e2e;

use crate::model::KindId;
use crate::schema::{Field, NodeSpec};

/// The static description of a kind.
pub struct KindSpec {
    pub id: KindId,
    pub node: &'static str,
    pub settings: &'static [Field],
    pub settings_doc: &'static str,
    pub children: &'static [NodeSpec],
    /// Settings that define the workload; lanes may not change them unless swept.
    pub workload: &'static [&'static str],
    /// Settings a lane may not override, with the reason.
    pub lane_forbidden: &'static [(&'static str, &'static str)],
    pub default_repeat: i64,
}

pub const RECSTORE: KindSpec = KindSpec {
    id: KindId::RecstoreE2e,
    node: "recstore-e2e",
    settings: recstore_e2e::spec::SETTINGS,
    settings_doc: "Each setting is a child node with one value (`batch-size 2048`), may be overridden by a lane \
(`lane X batch-size=…` is refused for workload settings) and may be a sweep axis. Lanes: `RecStore-<BRPC|GRPC|SHM|LOCAL_SHM|RDMA>` \
with the ablation suffixes `-无预取` (read-mode direct), `-无预取无融合` (direct, fusion #false) and `-预取N` (prefetch-depth N), \
`TorchRec-HBM`, `TorchRec-UVM` (uvm_caching). Without lanes: `RecStore-<ps-type>` and `TorchRec-HBM`.",
    children: recstore_e2e::spec::CHILDREN,
    workload: recstore_e2e::spec::WORKLOAD,
    lane_forbidden: &[("ps-type", "a RecStore lane's name sets its transport: write `lane RecStore-GRPC`")],
    default_repeat: 3,
};

pub const EP_BENCH: KindSpec = KindSpec {
    id: KindId::EpBench,
    node: "ep-bench",
    settings: ep_bench::spec::SETTINGS,
    settings_doc: "Lanes usually select the tool: `lane MSCCLPP-LL tool=\"mscclpp-ll\"`, `lane NCCL-EP tool=\"nccl-ep\"`. \
Without lanes there is one lane named after `tool`. A cross-library comparison stays on bf16, expert-major.",
    children: ep_bench::spec::CHILDREN,
    workload: ep_bench::spec::WORKLOAD,
    lane_forbidden: &[],
    default_repeat: 1,
};

pub const DATASET_RT: KindSpec = KindSpec {
    id: KindId::DatasetRt,
    node: "dataset-rt",
    settings: dataset_rt::spec::SETTINGS,
    settings_doc: "One JSON report per point, at `<results-dir>/<run_id>.json`. Sweep `num-workers` and `ranks` \
to compare worker counts at each rank count.",
    children: dataset_rt::spec::CHILDREN,
    workload: dataset_rt::spec::WORKLOAD,
    lane_forbidden: &[],
    default_repeat: 1,
};

pub const GENERIC: KindSpec = KindSpec {
    id: KindId::Bench,
    node: "bench",
    settings: bench::spec::SETTINGS,
    settings_doc: "The generic kind has no fixed settings: declare them with `param`. Templates see every param \
(dashes become underscores), `run_id`, `outdir` (the point's output dir, absolute), `lane`, `repeat`, `output` \
and `hosts.<name>.ip`. Interpolated values are shell-quoted.",
    children: bench::spec::CHILDREN,
    workload: &[],
    lane_forbidden: &[],
    default_repeat: 1,
};

pub const ALL: &[&KindSpec] = &[&RECSTORE, &EP_BENCH, &DATASET_RT, &GENERIC];

pub fn spec(id: KindId) -> &'static KindSpec {
    match id {
        KindId::RecstoreE2e => &RECSTORE,
        KindId::EpBench => &EP_BENCH,
        KindId::DatasetRt => &DATASET_RT,
        KindId::Bench => &GENERIC,
    }
}

use crate::model::{Bench, Lane, Loc, Params};

/// The lanes used when a bench declares none.
pub fn default_lanes(bench: &Bench, loc: &Loc) -> Vec<Lane> {
    let lane = |name: String| Lane {
        name,
        overrides: Params::new(),
        implicit: true,
        loc: loc.clone(),
    };
    match bench.kind {
        KindId::RecstoreE2e => {
            let ps = recstore_e2e::rules::lane_label(bench.str("ps-type"));
            vec![lane(format!("RecStore-{ps}")), lane("TorchRec-HBM".into())]
        }
        KindId::EpBench => vec![lane(match bench.str("tool") {
            "nccl-ep" => "NCCL-EP".into(),
            _ => "MSCCLPP-LL".into(),
        })],
        KindId::DatasetRt => vec![lane("dataset-rt".into())],
        KindId::Bench => vec![lane(bench.name.clone())],
    }
}

/// The lane part of a run id.
pub fn lane_slug(bench: &Bench, lane: &Lane) -> String {
    match bench.kind {
        KindId::RecstoreE2e => recstore_e2e::rules::lane_slug(&lane.name),
        _ => crate::expand::slug(&lane.name),
    }
}

/// Files a benchmark's commands need on each host (checked and fingerprinted at preflight).
pub fn runner_files(bench: &Bench) -> Vec<(String, String)> {
    use crate::model::Placement;
    match &bench.placement {
        Placement::Recstore { clients, .. } => clients
            .iter()
            .map(|c| {
                (
                    c.host.clone(),
                    "model_zoo/rs_demo/run_mock_stress.py".to_string(),
                )
            })
            .collect(),
        Placement::Ranks { nodes } if bench.kind == KindId::EpBench => {
            // every tool some lane runs: ep_bench_ll.py and/or the ep_bench binary
            let mut files: Vec<String> = Vec::new();
            for lane in &bench.lanes {
                let tool = lane
                    .overrides
                    .get("tool")
                    .and_then(|p| p.val.as_str())
                    .unwrap_or(bench.str("tool"));
                let key = if tool == "nccl-ep" {
                    "binary"
                } else {
                    "script"
                };
                let file = lane
                    .overrides
                    .get(key)
                    .and_then(|p| p.val.as_str())
                    .unwrap_or(bench.str(key))
                    .to_string();
                if !files.contains(&file) {
                    files.push(file);
                }
            }
            nodes
                .iter()
                .flat_map(|n| files.iter().map(move |f| (n.host.clone(), f.clone())))
                .collect()
        }
        _ => Vec::new(),
    }
}
