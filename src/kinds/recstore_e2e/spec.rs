//! The vocabulary of `recstore-e2e`. Defaults are the runbook's P1 defaults.

use crate::model::schema::{
    opt as o, with_default as s, Args, Field, NodeSpec, Ty, PORT, POS, SECONDS, U,
};

pub const PS_TYPES: &[&str] = &["BRPC", "GRPC", "LOCAL_SHM", "RDMA"];
pub const INDEX_TYPES: &[&str] = &[
    "DRAM_PET_HASH",
    "DRAM_EXTENDIBLE_HASH",
    "DRAM_UNORDERED_MAP",
];
pub const KV_BACKENDS: &[&str] = &[
    "recstore_dram",
    "recstore_tiered",
    "hps_hash_map",
    "hps_rocksdb",
];
pub const READ_MODES: &[&str] = &["prefetch", "direct"];

pub const SETTINGS: &[Field] = &[
    s("ps-type", Ty::Enum(PS_TYPES), "BRPC", "PS transport of the default RecStore lane (`RecStore-<PS_TYPE>`).", "\"BRPC\""),
    s("device", Ty::Enum(&["cuda", "cpu"]), "cuda", "`cuda`: each client's ranks get `CUDA_VISIBLE_DEVICES` from its `gpu=`, and preflight checks that the host has those GPUs; `cpu`: no GPU is placed (RecStore built with `-DENABLE_CUDA=OFF`, TorchRec on CPU).", "\"cpu\""),
    s("index-type", Ty::Enum(INDEX_TYPES), "DRAM_PET_HASH", "RecStore index type (`--recstore-index-type`, config `index.type`).", "\"DRAM_PET_HASH\""),
    s("capacity", POS, "8000000", "PS capacity (config `base_kv_config.capacity`); the runbook's safe day0 baseline.", "8000000"),
    s("kv-backend", Ty::Enum(KV_BACKENDS), "recstore_dram", "`--ps-kv-backend`.", "\"recstore_dram\""),
    s("hash-method", Ty::Enum(&["city_hash", "simple_mod"]), "city_hash", "distributed_client.hash_method.", "\"city_hash\""),
    s("max-keys-per-request", POS, "65536", "distributed_client.max_keys_per_request.", "65536"),
    s("max-batch-keys-size", POS, "65536", "cache_ps.max_batch_keys_size (required by the server).", "65536"),
    s("ps-num-threads", POS, "32", "cache_ps.num_threads: the server's worker threads (CachePS reads it unconditionally).", "32"),
    s("dram-allocator", Ty::Str, "\"PERSIST_LOOP_SLAB\"", "base_kv_config.value.dram_allocator.type (capacity_bytes = capacity × dim × 4 × 2).", "\"PERSIST_LOOP_SLAB\""),
    s("config-layout", Ty::Enum(&["auto", "nested", "flat"]), "auto", "Shape of `cache_ps.base_kv_config`: `nested` (recent RecStore: `index`/`value` with `default_value_size_hint`), `flat` (the wurenrumian fork: `path`, `value_type`, `index_type`, …), or `auto`: the one the checkout's own schema file accepts, checked at preflight (nested when it has none).", "\"auto\""),
    o("config-template", Ty::Str, "A minijinja template of recstore_config.json (path relative to the experiment file) for checkouts whose config expr cannot model; it gets the point's settings (`_` for `-`) and `ps_type`, `servers_json`, `num_shards`, `value_dir`, `value_size`, `run_id`, `runtime`, `generated_json`, must render to a JSON object, and is still validated against the checkout's schema.", "\"recstore_config.json.j2\""),
    o("num-shards", POS, "Declared shard count; must equal the number of `ps` entries when given.", "2"),
    s("runtime-dir", Ty::Template, "\"{{ output }}/runtime\"", "Runtime directory holding recstore_config.json; must be shared by all client nodes when there are several.", "\"/nfs/rs_runtime\""),
    o("master-addr", Ty::Str, "Rendezvous address for distributed clients (default: the rank-0 client host's ip).", "\"10.0.2.190\""),
    s("master-port", PORT, "29500", "Rendezvous port for distributed clients.", "29500"),
    s("model", Ty::Enum(&["dlrm", "rankmixer"]), "dlrm", "Model (`--model`).", "\"dlrm\""),
    o("dense-arch-layer-sizes", Ty::Str, "DLRM's dense layers (`--dense-arch-layer-sizes`); the last must equal the embedding dim. Unset: `512,256,<D>` when D is not 128, else the runner's own `512,256,128`.", "\"1024,512,128\""),
    s("dataset", Ty::Str, "\"model_zoo/torchrec_dlrm/processed_day_0_data\"", "Dataset path relative to the repo (`--data-dir`).", "\"model_zoo/torchrec_dlrm/processed_day_0_data\""),
    s("batch-size", POS, "1024", "Batch size per rank.", "1024"),
    s("embedding-dim", POS, "128", "Embedding dimension.", "128"),
    s("num-embeddings", POS, "200000", "Per-table cap over the 26 Criteo tables.", "200000"),
    s("steps", POS, "80", "Training steps.", "80"),
    s("warmup-steps", U, "5", "Steps excluded from aggregates (warmup_excluded=1).", "5"),
    s("read-mode", Ty::Enum(READ_MODES), "prefetch", "RecStore read path; `direct` is the 无预取 ablation.", "\"prefetch\""),
    s("prefetch-depth", U, "0", "Lookahead depth; 0 is same-batch issue+wait (the main lane).", "0"),
    s("fusion", Ty::Bool, "#true", "Fused embedding path; #false adds `--disable-recstore-fusion` (the 无融合 ablation).", "#true"),
    s("python", Ty::Str, "\"python3\"", "Python interpreter for the runner.", "\"python3\""),
    s("build-dir", Ty::Str, "\"build_release\"", "CMake build directory (Release). rs_demo's runners read `<repo>/build/{bin,lib}` at some checkouts: `build-dir \"build\"` then.", "\"build_release\""),
    o("build-jobs", POS, "Parallel compile jobs of the build (`cmake --build … -j N`). Unset: each host's own core count (`-j \"$(nproc)\"`, on that host), never unbounded: RecStore's folly-heavy files take gigabytes each.", "2"),
    s("server-timeout", SECONDS, "60", "Seconds a PS server may take to accept connections.", "60"),
    s("client-timeout", SECONDS, "3600", "Seconds a client command may run.", "3600"),
];

/// Settings that define the workload: a lane may not change them (rule lane-changes-workload).
pub const WORKLOAD: &[&str] = &[
    "model",
    "dataset",
    "batch-size",
    "embedding-dim",
    "num-embeddings",
    "steps",
    "warmup-steps",
];

/// A client's or server's host: one of the experiment's.
const HOST: Field = Field {
    name: "host",
    ty: Ty::Str,
    default: None,
    optional: false,
    doc: "a declared host",
    example: "host=local",
};

pub const CLIENT_PROPS: &[Field] = &[
    HOST,
    s(
        "gpu",
        U,
        "0",
        "first GPU (CUDA_VISIBLE_DEVICES starts here)",
        "gpu=0",
    ),
    s(
        "node-rank",
        U,
        "0",
        "node rank among client hosts",
        "node-rank=0",
    ),
    s(
        "nproc-per-node",
        crate::model::schema::PROCS,
        "1",
        "training processes on this host",
        "nproc-per-node=1",
    ),
];

pub const PS_PROPS: &[Field] = &[
    HOST,
    s(
        "port",
        PORT,
        "15000",
        "PS service port on the host's data-plane ip",
        "port=15000",
    ),
    s(
        "shard",
        U,
        "0",
        "explicit shard id (routing uses it, not list position)",
        "shard=0",
    ),
];

pub const CHILDREN: &[NodeSpec] = &[
    NodeSpec {
        name: "client",
        args: Args::None,
        props: CLIENT_PROPS,
        free_props: false,
        doc: "A training client (one per client host).",
        example: "client host=local gpu=0 node-rank=0 nproc-per-node=1",
    },
    NodeSpec {
        name: "ps",
        args: Args::None,
        props: PS_PROPS,
        free_props: false,
        doc: "A parameter-server shard.",
        example: "ps host=local port=15000 shard=0",
    },
    NodeSpec {
        name: "cmake-args",
        args: Args::Many(Field {
            name: "arguments",
            ty: Ty::Str,
            default: None,
            optional: false,
            doc: "configure arguments",
            example: "\"-DENABLE_CUDA=OFF\"",
        }),
        props: &[],
        free_props: false,
        doc: "Extra arguments of the configure step (`cmake -S . -B <build-dir> -DCMAKE_BUILD_TYPE=Release …`), in the order written; several `cmake-args` nodes add up. Not `-S`/`-B` (the host's `repo` and `build-dir` set those).",
        example: "cmake-args \"-DENABLE_CUDA=OFF\" \"-DCMAKE_PREFIX_PATH=/opt/rs/folly;/opt/rs/fmt\"",
    },
    NodeSpec {
        name: "build-env",
        args: Args::None,
        props: &[],
        free_props: true,
        doc: "Environment of the configure and build steps only (e.g. `PKG_CONFIG_PATH` for SPDK); property names are variable names.",
        example: "build-env PKG_CONFIG_PATH=\"third_party/spdk/build/lib/pkgconfig\"",
    },
    NodeSpec {
        name: "config",
        args: Args::None,
        props: &[],
        free_props: false,
        doc: "Keys merged into the generated recstore_config.json, for checkouts whose keys expr does not model: a node with one argument is a value, several an array, a block an object. Keys expr derives from a setting or the placement are refused (set those instead).",
        example: "config { cache_ps { optimizer { type \"SGD\"; learning_rate 0.01 } } }",
    },
];

/// The diagnostic codes of this kind's rules.
pub mod code {
    crate::model::diag::kind_codes! {
        SHARD_LAYOUT => "shard-layout",
            "PS shard ids not unique and contiguous from 0";
        SHARD_COUNT => "shard-count",
            "the shard count differs from the number of PS servers";
        NODE_RANK_LAYOUT => "node-rank-layout",
            "client node ranks not unique and contiguous from 0";
        HETEROGENEOUS_NPROC => "heterogeneous-nproc",
            "nproc-per-node differs between client hosts (unsupported)";
        MASTER_ADDR_SINGLE_NODE => "master-addr-single-node",
            "a single-node multi-GPU run whose master address is not on that node";
        MASTER_ADDR_CROSS_NODE => "master-addr-cross-node",
            "a cross-node run whose master address is not the rank-0 host's ip";
        LOOPBACK_ACROSS_HOSTS => "loopback-across-hosts",
            "a PS on a loopback address used by clients on other hosts";
        SHARED_RUNTIME_DIR => "shared-runtime-dir",
            "RecStore with several client nodes and no explicit shared runtime dir";
        CAPACITY_LOW => "capacity-low",
            "PS capacity below num_embeddings x 26 x 2";
        LANE_NAME => "lane-name",
            "a lane name that names no known backend";
        ABLATION_MISMATCH => "ablation-mismatch",
            "an ablation lane whose name and settings disagree";
        PS_TYPE_PLACEMENT => "ps-type-placement",
            "a RecStore PS type that cannot run as placed: LOCAL_SHM off the client's node or over several shards, GRPC single shard off port 15000, RDMA";
    }
}
