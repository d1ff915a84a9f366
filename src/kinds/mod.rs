//! Built-in benchmark kinds, one folder each, behind the `Kind` trait (`kind_api/kind.rs`); `ALL` is the
//! only list of kinds.

pub mod bench;
pub mod dataset_rt;
pub mod ep_bench;
pub mod recstore_e2e;

pub mod ranks;

pub use crate::kind_api::kind::Kind;

use crate::model::KindId;
use crate::parse::schema::{Field, NodeSpec};

/// The static description of a kind and its behaviour.
pub struct KindSpec {
    pub id: KindId,
    pub behaviour: &'static dyn Kind,
    pub node: &'static str,
    /// The kind's top-level node as the schema documents it (its name argument).
    pub top: NodeSpec,
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
    id: KindId("recstore-e2e"),
    behaviour: &recstore_e2e::RecstoreE2e,
    node: "recstore-e2e",
    top: crate::parse::schema::node(
        "recstore-e2e",
        crate::parse::schema::Args::One(Field {
            optional: true,
            ..crate::parse::schema::f(
                "name",
                crate::parse::schema::Ty::Str,
                Some("\"recstore-e2e\""),
                "benchmark name",
                "",
            )
        }),
        &[],
        "RecStore vs TorchRec end-to-end DLRM benchmark, after the RecStore E2E runbook.",
        "recstore-e2e {\n    client host=local gpu=0\n    ps host=local port=15000 shard=0\n}",
    ),
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
    id: KindId("ep-bench"),
    behaviour: &ep_bench::EpBench,
    node: "ep-bench",
    top: crate::parse::schema::node(
        "ep-bench",
        crate::parse::schema::Args::One(Field {
            optional: true,
            ..crate::parse::schema::f("name", crate::parse::schema::Ty::Str, Some("\"ep-bench\""), "benchmark name", "")
        }),
        &[],
        "MoE dispatch/combine kernels: MSCCL++ ep_bench_ll.py or NCCL-EP ep_bench.",
        "ep-bench {\n    node host=local nproc-per-node=4\n}",
    ),
    settings: ep_bench::spec::SETTINGS,
    settings_doc: "Lanes usually select the tool: `lane MSCCLPP-LL tool=\"mscclpp-ll\"`, `lane NCCL-EP tool=\"nccl-ep\"`. \
Without lanes there is one lane named after `tool`. A cross-library comparison stays on bf16, expert-major.",
    children: ep_bench::spec::CHILDREN,
    workload: ep_bench::spec::WORKLOAD,
    lane_forbidden: &[],
    default_repeat: 1,
};

pub const DATASET_RT: KindSpec = KindSpec {
    id: KindId("dataset-rt"),
    behaviour: &dataset_rt::DatasetRt,
    node: "dataset-rt",
    top: crate::parse::schema::node(
        "dataset-rt",
        crate::parse::schema::Args::One(Field {
            optional: true,
            ..crate::parse::schema::f(
                "name",
                crate::parse::schema::Ty::Str,
                Some("\"dataset-rt\""),
                "benchmark name",
                "",
            )
        }),
        &[],
        "dataset_rt.run_benchmark loader throughput, after the dataset_rt runbook.",
        "dataset-rt {\n    node host=local\n}",
    ),
    settings: dataset_rt::spec::SETTINGS,
    settings_doc: "One JSON report per point, at `<results-dir>/<run_id>.json`. Sweep `num-workers` and `ranks` \
to compare worker counts at each rank count.",
    children: dataset_rt::spec::CHILDREN,
    workload: dataset_rt::spec::WORKLOAD,
    lane_forbidden: &[],
    default_repeat: 1,
};

pub const BENCH: KindSpec = KindSpec {
    id: KindId("bench"),
    behaviour: &bench::BenchKind,
    node: "bench",
    top: crate::parse::schema::node(
        "bench",
        crate::parse::schema::Args::One(crate::parse::schema::f("name", crate::parse::schema::Ty::Str, None, "benchmark name", "quickstart")),
        &[],
        "A generic benchmark of templated build / serve / run / collect steps.",
        "bench demo {\n    run \"echo {{ run_id }}\"\n}",
    ),
    settings: bench::spec::SETTINGS,
    settings_doc: "The generic kind has no fixed settings: declare them with `param`. Templates see every param \
(dashes become underscores), `run_id`, `outdir` (the point's output dir, absolute), `lane`, `repeat`, `output` \
and `hosts.<name>.ip`. Interpolated values are shell-quoted.",
    children: bench::spec::CHILDREN,
    workload: &[],
    lane_forbidden: &[],
    default_repeat: 1,
};

pub const ALL: &[&KindSpec] = &[&RECSTORE, &EP_BENCH, &DATASET_RT, &BENCH];

/// Kinds registered at run time (a test's own kind), after the built-in ones.
static REGISTERED: std::sync::RwLock<Vec<&'static KindSpec>> = std::sync::RwLock::new(Vec::new());

/// Add a kind that is not in `ALL` (a test defines one to keep CONTRIBUTING.md's walk-through
/// honest): from then on the decoder, check, plan, run and report find it as they find a
/// built-in one. Refused when its id or node name is taken.
pub fn register(k: &'static KindSpec) -> Result<(), String> {
    let mut r = REGISTERED
        .write()
        .map_err(|_| "the kind registry is poisoned".to_string())?;
    if let Some(old) = ALL
        .iter()
        .chain(r.iter())
        .find(|o| o.id == k.id || o.node == k.node)
    {
        if std::ptr::eq(*old, k) {
            return Ok(());
        }
        return Err(format!(
            "a kind named `{}` (node `{}`) is already known",
            old.id.0, old.node
        ));
    }
    r.push(k);
    Ok(())
}

/// Every kind: the built-in ones (`ALL`), then those registered.
pub fn all() -> Vec<&'static KindSpec> {
    let mut v = ALL.to_vec();
    if let Ok(r) = REGISTERED.read() {
        v.extend(r.iter().copied());
    }
    v
}

impl std::ops::Deref for KindSpec {
    type Target = dyn Kind;
    fn deref(&self) -> &Self::Target {
        self.behaviour
    }
}

/// manifest.csv's header for an experiment: its first bench's columns, and any other bench's
/// own before `log_path`.
pub fn manifest_columns(exp: &crate::model::Experiment) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for (i, b) in exp.benches.iter().enumerate() {
        if i == 0 {
            v = of(b.kind).manifest_columns(b);
            continue;
        }
        for c in of(b.kind).manifest_columns(b) {
            if v.contains(&c) {
                continue;
            }
            match v.iter().position(|x| x == "log_path") {
                Some(i) => v.insert(i, c),
                None => v.push(c),
            }
        }
    }
    if v.is_empty() {
        v = crate::results::manifest::CORE
            .iter()
            .map(|c| c.to_string())
            .collect();
    }
    v
}

/// Every top-level node: the schema's (experiment, host, slurm) and each kind's.
pub fn top_nodes() -> Vec<NodeSpec> {
    let mut v = crate::parse::schema::TOP.to_vec();
    v.extend(all().iter().map(|k| k.top));
    v
}

/// Every diagnostic code: the stages' and each kind's.
pub fn all_codes() -> Vec<crate::parse::diag::Code> {
    let mut v = crate::parse::diag::Code::ALL.to_vec();
    for k in all() {
        v.extend_from_slice(k.codes());
    }
    v
}

/// The language of an experiment's report: its `language`, else what its first bench's kind
/// asks for (English without a bench).
pub fn language(exp: &crate::model::Experiment) -> crate::util::lang::Lang {
    exp.language
        .or_else(|| exp.benches.first().map(|b| of(b.kind).default_language()))
        .unwrap_or(crate::util::lang::Lang::En)
}

/// The kind of a bench.
pub fn of(id: KindId) -> &'static KindSpec {
    if let Some(k) = ALL.iter().copied().find(|k| k.id == id) {
        return k;
    }
    all().into_iter().find(|k| k.id == id).unwrap_or(&BENCH)
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_kind_is_known_by_its_node_name_and_found_by_it() {
        for k in super::ALL {
            assert_eq!(k.id.0, k.node);
            assert_eq!(super::of(k.id).node, k.node);
        }
    }
}
