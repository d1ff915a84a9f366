//! The vocabulary of `ep-bench` (MSCCL++ ep_bench_ll.py and NCCL-EP ep_bench).

use crate::model::schema::{
    with_default as s, Args, Field, NodeSpec, Ty, PORT, RANK_NODE_PROPS, SECONDS,
};

pub const TOOLS: &[&str] = &["mscclpp-ll", "nccl-ep"];
pub const LAUNCHERS: &[&str] = &["auto", "torchrun", "per-rank", "mpirun"];
/// Hidden sizes ep_bench_ll.py's kernels are compiled for (M1).
pub const LL_HIDDEN: &[i64] = &[4096, 6656, 7168, 8192, 9216];
/// Hidden sizes NCCL-EP's LL kernels accept (macros.cuh SWITCH_HIDDEN).
pub const NCCL_EP_HIDDEN: &[i64] = &[2048, 2560, 4096, 5120, 6144, 7168, 8192];

pub const SETTINGS: &[Field] = &[
    s(
        "tool",
        Ty::Enum(TOOLS),
        "mscclpp-ll",
        "`mscclpp-ll` runs ep_bench_ll.py; `nccl-ep` runs ep_bench (LL, expert-major).",
        "\"nccl-ep\"",
    ),
    s(
        "launcher",
        Ty::Enum(LAUNCHERS),
        "auto",
        "auto: torchrun on one node, per-rank env across nodes (mscclpp-ll); mpirun for nccl-ep.",
        "\"torchrun\"",
    ),
    s(
        "tokens",
        Ty::Int(i64::MIN, i64::MAX),
        "128",
        "Tokens per rank (`-t`).",
        "128",
    ),
    s(
        "hidden",
        Ty::Int(i64::MIN, i64::MAX),
        "7168",
        "Hidden size (`-d`).",
        "7168",
    ),
    s(
        "topk",
        Ty::Int(i64::MIN, i64::MAX),
        "8",
        "Experts per token (`-k`).",
        "8",
    ),
    s(
        "experts",
        Ty::Int(i64::MIN, i64::MAX),
        "256",
        "Global expert count (`-e`).",
        "256",
    ),
    s(
        "warmup",
        Ty::Int(i64::MIN, i64::MAX),
        "10",
        "Warmup iterations (`-w`).",
        "10",
    ),
    s(
        "iters",
        Ty::Int(i64::MIN, i64::MAX),
        "50",
        "Timed iterations (`-i`).",
        "50",
    ),
    s(
        "dispatch-dtype",
        Ty::Enum(&["bf16", "fp8_e4m3", "mxfp8_e4m3"]),
        "bf16",
        "Dispatch dtype (mscclpp-ll only).",
        "\"bf16\"",
    ),
    s(
        "combine-mode",
        Ty::Enum(&["rank_local_reduce", "direct_send"]),
        "rank_local_reduce",
        "Combine mode (mscclpp-ll only).",
        "\"rank_local_reduce\"",
    ),
    s(
        "output-layout",
        Ty::Enum(&["expert_major", "token_major"]),
        "expert_major",
        "Output layout; nccl-ep runs `-L em` (expert-major).",
        "\"expert_major\"",
    ),
    s(
        "num-blocks",
        Ty::Int(i64::MIN, i64::MAX),
        "130",
        "Blocks (mscclpp-ll); world size + 2 ..= 130.",
        "130",
    ),
    s(
        "kernel-timing",
        Ty::Bool,
        "#false",
        "ep_bench_ll.py's profiler kernel-only pass. `#false` (as MSCCL++'s own driver) passes `--no-kernel-timing` when the checkout's `--help` lists it (an older script runs its pass, and preflight says so); `#true` runs the pass, whose \"avg\" the profiler inflates.",
        "#true",
    ),
    s(
        "script",
        Ty::Str,
        "\"test/python/ep/ep_bench_ll.py\"",
        "ep_bench_ll.py path relative to the repo.",
        "\"test/python/ep/ep_bench_ll.py\"",
    ),
    s(
        "binary",
        Ty::Str,
        "\"build/test/nccl_ep/ep_bench\"",
        "ep_bench binary, relative to `nccl-ep-repo` (or to the host's repo when that is unset).",
        "\"build/test/nccl_ep/ep_bench\"",
    ),
    Field {
        name: "nccl-ep-repo",
        ty: Ty::Str,
        default: None,
        optional: true,
        doc: "The NCCL checkout NCCL-EP's `binary` is built in (absolute, or relative to the host's repo); unset: the host's repo.",
        example: "\"/data/nccl\"",
    },
    Field {
        name: "nccl-ep-lib",
        ty: Ty::Str,
        default: None,
        optional: true,
        doc: "Directory prepended to LD_LIBRARY_PATH for ep_bench (it has no rpath). Unset: `<nccl-ep-repo>/build/lib` when `nccl-ep-repo` is set; `\"\"`: nothing prepended (the host's `env` LD_LIBRARY_PATH is kept either way, after it).",
        example: "\"/data/nccl/build/lib\"",
    },
    s(
        "mpirun-args",
        Ty::Str,
        "\"--allow-run-as-root\"",
        "Options after `mpirun` for NCCL-EP (split on spaces): running as root, and transport settings such as `-mca pml ucx -x UCX_NET_DEVICES=mlx5_0:1`; a lane may override it.",
        "\"--allow-run-as-root -mca pml ucx\"",
    ),
    s(
        "python",
        Ty::Str,
        "\"python\"",
        "Python interpreter for per-rank launches, and the one preflight asks `ep_bench_ll.py --help` with under every launcher (the script imports torch before it parses its flags).",
        "\"python3\"",
    ),
    Field {
        name: "master-addr",
        ty: Ty::Str,
        default: None,
        optional: true,
        doc: "Rendezvous address (default: the first node's ip).",
        example: "\"10.0.2.190\"",
    },
    s("master-port", PORT, "29500", "Rendezvous port.", "29500"),
    s(
        "timeout",
        SECONDS,
        "600",
        "Wall-clock seconds per run (LL kernels spin-wait on peers).",
        "600",
    ),
];

pub const WORKLOAD: &[&str] = &["tokens", "hidden", "topk", "experts", "dispatch-dtype"];

pub const CHILDREN: &[NodeSpec] = &[NodeSpec {
    name: "node",
    args: Args::None,
    props: RANK_NODE_PROPS,
    free_props: false,
    doc: "A host and its process count; ranks are numbered in declaration order.",
    example: "node host=local nproc-per-node=4",
}];

/// The diagnostic codes of this kind's rules.
pub mod code {
    crate::model::diag::kind_codes! {
        EP_HIDDEN => "ep-hidden",
            "an ep-bench hidden size the kernels were not built for";
        EP_TOPK => "ep-topk",
            "ep-bench topk outside 1..9 or above the expert count";
        EP_COUNT => "ep-count",
            "ep-bench tokens/experts not positive, warmup negative or iters below 1";
        EP_EXPERTS_DIVISIBLE => "ep-experts-divisible",
            "ep-bench experts not divisible by the world size";
        EP_NUM_BLOCKS => "ep-num-blocks",
            "ep-bench num-blocks outside world size + 2 ..= 130";
        EP_LAYOUT => "ep-layout",
            "ep-bench token-major layout without rank_local_reduce, or a layout the tool lacks";
    }
}
