//! The vocabulary of `dataset-rt` (dataset_rt.run_benchmark).

use crate::model::schema::{
    opt as o, with_default as s, Args, Field, NodeSpec, Ty, PORT, POS, RANK_NODE_PROPS, SECONDS, U,
};

pub const SETTINGS: &[Field] = &[
    s("runner", Ty::Str, "\"uv run --python 3.11 --extra benchmark python\"", "Command prefix that runs Python in the prepared environment (split on spaces).", "\"uv run --python 3.11 --extra benchmark python\""),
    s("launcher", Ty::Enum(&["self", "torchrun"]), "self", "`self`: the module launches its own ranks (one host); `torchrun`: one torch.distributed.run per `node`.", "\"torchrun\""),
    s("device", Ty::Enum(&["cpu", "cuda"]), "cpu", "`--device`.", "\"cuda\""),
    s("ranks", POS, "1", "`--ranks` (self launcher only).", "4"),
    s("num-workers", U, "0", "Loader workers per rank.", "8"),
    s("pin-memory", Ty::Bool, "#false", "`--pin-memory`.", "#true"),
    s("shuffle", Ty::Bool, "#true", "`--shuffle` / `--no-shuffle`.", "#false"),
    s("samples-per-cache", POS, "512", "`--samples-per-cache`.", "8192"),
    s("caches", POS, "2", "`--caches`.", "2"),
    o("samples-per-epoch", POS, "`--samples-per-epoch` (global).", "64000"),
    s("batch-size", POS, "32", "`--batch-size`.", "128"),
    s("input-features", Ty::Int(i64::MIN, i64::MAX), "256", "`--input-features` (a multiple of 32).", "1024"),
    s("model-width", POS, "512", "`--model-width`.", "2048"),
    s("payload-bytes", Ty::Int(i64::MIN, i64::MAX), "4096", "`--payload-bytes` (>= 16).", "4096"),
    s("repeats", POS, "3", "`--repeats` (passes inside one run).", "5"),
    o("cache-paths", Ty::Str, "`--cache-paths` as a JSON list of existing directories.", "\"[\\\"/data/cache-a\\\",\\\"/data/cache-b\\\"]\""),
    s("worker-partition", Ty::Enum(&["split", "replicate"]), "split", "`--worker-partition`.", "\"split\""),
    s("worker-context", Ty::Enum(&["spawn", "forkserver", "fork"]), "spawn", "`--worker-context`.", "\"spawn\""),
    s("seed", U, "7", "`--seed` (passed when written).", "7"),
    s("metadata-bytes", U, "0", "`--metadata-bytes`: a wide metadata value in every record (passed when written).", "256"),
    s("transform-rounds", U, "0", "`--transform-rounds`: CPU hashing work per sample (passed when written).", "100"),
    s("drop-last", Ty::Bool, "#false", "`--drop-last` (passed when written).", "#true"),
    s("persistent-workers", Ty::Bool, "#true", "`--persistent-workers` / `--no-persistent-workers` (passed when written).", "#false"),
    s("native-num-workers", POS, "1", "`--native-num-workers` (passed when written).", "2"),
    s("prefetch-size", POS, "16", "`--prefetch-size` (passed when written).", "16"),
    s("prefetch-factor", POS, "2", "`--prefetch-factor` (passed when written).", "2"),
    s("timeout-seconds", SECONDS, "600", "`--timeout-seconds`.", "600"),
    s("worker-timeout", Ty::Float, "30", "`--worker-timeout`: seconds a worker batch may take, a number > 0 (the module's `worker_timeout: float`).", "2.5"),
    o("master-addr", Ty::Str, "Rendezvous address for the torchrun launcher (default: the first node's ip).", "\"10.0.0.10\""),
    s("master-port", PORT, "29500", "Rendezvous port for the torchrun launcher.", "29500"),
    s("strict", Ty::Bool, "#false", "A run that exits non-zero or by a signal after writing a complete, self-consistent report (every rank and pass, a rate per repeat, replay verified) is measured and marked `ok (recovered: …)`; `#true` counts it as a failure.", "#true"),
    s("results-dir", Ty::Str, "\"results\"", "Directory (relative to the repo) for the JSON reports.", "\"results\""),
];

pub const WORKLOAD: &[&str] = &[
    "samples-per-cache",
    "caches",
    "batch-size",
    "input-features",
    "model-width",
    "payload-bytes",
    "samples-per-epoch",
    "seed",
    "metadata-bytes",
    "transform-rounds",
    "drop-last",
];

/// The settings passed only when written (older dataset_rt checkouts may lack their flags; their
/// defaults are the module's own).
pub const WHEN_WRITTEN: &[&str] = &[
    "seed",
    "metadata-bytes",
    "transform-rounds",
    "native-num-workers",
    "prefetch-size",
    "prefetch-factor",
    "drop-last",
    "persistent-workers",
];

pub const CHILDREN: &[NodeSpec] = &[NodeSpec {
    name: "node",
    args: Args::None,
    props: RANK_NODE_PROPS,
    free_props: false,
    doc: "A host running ranks; several nodes need `launcher \"torchrun\"`.",
    example: "node host=local nproc-per-node=1",
}];

/// The diagnostic codes of this kind's rules.
pub mod code {
    crate::model::diag::kind_codes! {
        DRT_INPUT_FEATURES => "drt-input-features",
            "dataset-rt input features not a multiple of 32";
        DRT_PAYLOAD => "drt-payload",
            "dataset-rt payload bytes below 16";
        DRT_FORK_CUDA => "drt-fork-cuda",
            "dataset-rt CUDA with fork workers";
        DRT_RANKS_EXTERNAL => "drt-ranks-external",
            "dataset-rt `ranks` under an external multi-host launcher";
    }
}
