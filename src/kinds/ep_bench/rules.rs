//! ep-bench: MSCCL++ ep_bench_ll.py and NCCL-EP ep_bench rules.

use super::spec::code;
use crate::kinds::ep_bench::spec::{LL_HIDDEN, NCCL_EP_HIDDEN};
use crate::kinds::ranks::RankNode;
use crate::model::diag::{Code, Diag, Diags};
use crate::model::expand::Point;
use crate::model::*;

pub fn nodes(bench: &Bench) -> Vec<RankNode> {
    crate::kinds::ranks::rank_nodes(bench)
}

pub fn world_size(bench: &Bench) -> i64 {
    nodes(bench).iter().map(|n| n.nproc_per_node).sum()
}

/// The launcher a point uses after resolving `auto`.
pub fn launcher(bench: &Bench, p: &Point) -> &'static str {
    match (p.str("tool"), p.str("launcher")) {
        ("nccl-ep", _) => "mpirun",
        (_, "torchrun") => "torchrun",
        (_, "per-rank") => "per-rank",
        (_, "mpirun") => "mpirun",
        _ if nodes(bench).len() > 1 => "per-rank",
        _ => "torchrun",
    }
}

pub fn validate(bench: &Bench, diags: &mut Diags) {
    crate::kinds::ranks::gpus_oversubscribed(&nodes(bench), diags);
    if nodes(bench).is_empty() {
        diags.push(
            Diag::error(Code::MissingValue, format!("`{}` declares no `node`", bench.name))
                .at(&bench.loc.src, bench.loc.span)
                .help("add `node host=local nproc-per-node=8` (one per host; ranks follow declaration order)"),
        );
    }
}

pub fn validate_point(exp: &Experiment, bench: &Bench, p: &Point, diags: &mut Diags) {
    size_checks(bench, p, diags);
    mode_checks(bench, p, diags);
    node_gpus(exp, bench, diags);
}

/// An error at the point's value of parameter `name` (the bench when it has no location).
fn param_error(
    bench: &Bench,
    p: &Point,
    code: Code,
    name: &str,
    msg: String,
    help: String,
) -> Diag {
    let l = p
        .param(name)
        .and_then(|s| s.loc.clone())
        .unwrap_or_else(|| bench.loc.clone());
    Diag::error(code, msg).at(&l.src, l.span).help(help)
}

/// The point's sizes: hidden built for its tool, topk, the counts, experts split evenly over
/// the ranks, num-blocks.
fn size_checks(bench: &Bench, p: &Point, diags: &mut Diags) {
    let lane = &bench.lanes[p.lane];
    let push = |diags: &mut Diags, code: Code, name: &str, msg: String, help: String| {
        diags.push(param_error(bench, p, code, name, msg, help));
    };
    let tool = p.str("tool");
    let (tokens, hidden, topk, experts) = (
        p.int("tokens"),
        p.int("hidden"),
        p.int("topk"),
        p.int("experts"),
    );
    let (warmup, iters, blocks) = (p.int("warmup"), p.int("iters"), p.int("num-blocks"));
    let world = world_size(bench);
    let set: &[i64] = if tool == "nccl-ep" {
        NCCL_EP_HIDDEN
    } else {
        LL_HIDDEN
    };
    if !set.contains(&hidden) {
        let list = set
            .iter()
            .map(|h| h.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        push(
            diags,
            code::EP_HIDDEN,
            "hidden",
            format!(
                "{tool} kernels are not built for hidden {hidden} (lane `{}`)",
                lane.name
            ),
            format!("{tool} supports hidden ∈ {{{list}}}"),
        );
    }
    let max_topk = if tool == "nccl-ep" { 32 } else { 9 };
    if topk < 1 || topk > max_topk {
        push(
            diags,
            code::EP_TOPK,
            "topk",
            format!("topk {topk} is outside 1..={max_topk} for {tool}"),
            format!("use 1 ≤ topk ≤ {max_topk}"),
        );
    } else if topk > experts && experts > 0 {
        push(
            diags,
            code::EP_TOPK,
            "topk",
            format!("topk {topk} exceeds the expert count {experts}"),
            "topk must be ≤ experts".into(),
        );
    }
    for (name, v, ok, rule) in [
        ("tokens", tokens, tokens > 0, "tokens > 0"),
        ("experts", experts, experts > 0, "experts > 0"),
        ("warmup", warmup, warmup >= 0, "warmup ≥ 0"),
        ("iters", iters, iters >= 1, "iters ≥ 1"),
    ] {
        if !ok {
            push(
                diags,
                code::EP_COUNT,
                name,
                format!("{name} is {v}; the benchmark needs {rule}"),
                format!("set {rule}"),
            );
        }
    }
    if world > 0 && experts > 0 && experts % world != 0 {
        push(
            diags,
            code::EP_EXPERTS_DIVISIBLE,
            "experts",
            format!("experts {experts} is not divisible by the world size {world}"),
            format!("use a multiple of {world} (experts are split evenly over ranks)"),
        );
    }
    if tool != "nccl-ep" && (blocks < world + 2 || blocks > 130) {
        push(
            diags,
            code::EP_NUM_BLOCKS,
            "num-blocks",
            format!(
                "num-blocks {blocks} is outside world size + 2 ..= 130 = {}..=130",
                world + 2
            ),
            format!(
                "use {}..=130 (the library requires world_size + 2 ≤ n ≤ 130)",
                world + 2
            ),
        );
    }
}

/// The point's modes: output layout, dispatch dtype and launcher, each one its tool supports.
fn mode_checks(bench: &Bench, p: &Point, diags: &mut Diags) {
    let tool = p.str("tool");
    let push = |diags: &mut Diags, code: Code, name: &str, msg: String, help: String| {
        diags.push(param_error(bench, p, code, name, msg, help));
    };
    let layout = p.str("output-layout");
    if layout == "token_major" && tool == "nccl-ep" {
        push(
            diags,
            code::EP_LAYOUT,
            "output-layout",
            "nccl-ep's LL kernels have no token-major layout".into(),
            "use `output-layout \"expert_major\"` (ep_bench -L em) for a cross-library comparison"
                .into(),
        );
    } else if layout == "token_major" && p.str("combine-mode") != "rank_local_reduce" {
        push(
            diags,
            code::EP_LAYOUT,
            "output-layout",
            "token-major output needs combine-mode rank_local_reduce".into(),
            "set `combine-mode \"rank_local_reduce\"` or use expert_major".into(),
        );
    }
    if tool == "nccl-ep" && p.str("dispatch-dtype") != "bf16" {
        push(
            diags,
            Code::InvalidValue,
            "dispatch-dtype",
            format!(
                "nccl-ep dispatches bf16 only, not {}",
                p.str("dispatch-dtype")
            ),
            "use `dispatch-dtype \"bf16\"` on NCCL-EP lanes".into(),
        );
    }
    let l = launcher(bench, p);
    if l == "torchrun" && nodes(bench).len() > 1 {
        push(
            diags,
            Code::InvalidValue,
            "launcher",
            "torchrun --standalone runs on one node, but several nodes are declared".into(),
            "use `launcher \"per-rank\"` across nodes".into(),
        );
    }
    if tool == "mscclpp-ll" && l == "mpirun" {
        push(
            diags,
            Code::InvalidValue,
            "launcher",
            "ep_bench_ll.py is not an MPI program".into(),
            "use torchrun or per-rank".into(),
        );
    }
}

/// Each node's ranks within its host's declared GPUs.
fn node_gpus(exp: &Experiment, bench: &Bench, diags: &mut Diags) {
    for n in nodes(bench) {
        if let Some(g) = exp.host(&n.host).and_then(|h| h.gpus) {
            if n.gpu + n.nproc_per_node > g {
                diags.push(
                    Diag::error(
                        Code::GpuOutOfRange,
                        format!(
                            "{} ranks from GPU {} exceed the {g} GPUs of `{}`",
                            n.nproc_per_node, n.gpu, n.host
                        ),
                    )
                    .at(&n.loc.src, n.loc.span)
                    .help(format!("keep gpu + nproc-per-node ≤ {g}")),
                );
            }
        }
    }
}
