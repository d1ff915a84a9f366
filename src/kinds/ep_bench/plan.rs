//! ep-bench's plan: torchrun, per-rank env launches, or mpirun.

use crate::kind_api::step::{cuda_devices, in_repo, Ctx, Flags, KindPlan, Phase, Probe, Step};
use crate::kinds::ep_bench::rules::{launcher, nodes};
use crate::kinds::ranks::RankNode;
use crate::model::expand::Point;
use crate::model::*;

fn shape_flags(p: &Point) -> Vec<String> {
    let mut a = Vec::new();
    for (flag, key) in [
        ("-t", "tokens"),
        ("-d", "hidden"),
        ("-k", "topk"),
        ("-e", "experts"),
        ("-w", "warmup"),
        ("-i", "iters"),
    ] {
        a.push(flag.to_string());
        a.push(p.int(key).to_string());
    }
    a
}

/// ep_bench_ll.py's flags; those older scripts lack (the seed script has no `--output-layout`,
/// the oldest no dtype, combine mode or block count) are passed only when they differ from the
/// script's defaults or the experiment writes them. Returns the argv and what was left out.
fn ll_flags(p: &Point) -> (Vec<String>, Vec<String>, Vec<(String, String)>) {
    let mut f = Flags::new(shape_flags(p));
    for (flag, key, default) in [
        ("--dispatch-dtype", "dispatch-dtype", "bf16"),
        ("--combine-mode", "combine-mode", "rank_local_reduce"),
        ("--output-layout", "output-layout", "expert_major"),
    ] {
        f.unless_default(flag, p.str(key), default, key);
    }
    f.unless_default(
        "--num-blocks",
        p.int("num-blocks").to_string(),
        "130",
        "num-blocks",
    );
    if !p.bool("kernel-timing") {
        // as MSCCL++'s driver (run_ep_bench.py) by default; a script older than the flag has
        // no way to turn its profiler pass off: preflight leaves the flag out there
        f.argv.push(NO_KERNEL_TIMING.into());
    }
    (f.argv, f.omitted, f.defaults)
}

const NO_KERNEL_TIMING: &str = "--no-kernel-timing";

/// ep_bench_ll.py's argv after the script, with what the step records about its flags and how
/// preflight asks the script for them (the configured python: the script imports torch before
/// it parses its arguments).
fn ll_step(s: &mut Step, p: &Point) {
    let (flags, omitted, defaults) = ll_flags(p);
    if flags.iter().any(|f| f == NO_KERNEL_TIMING) {
        s.extra_mut().optional_flags.push(NO_KERNEL_TIMING.into());
    }
    s.argv.extend(flags);
    s.extra_mut().omitted = omitted;
    s.extra_mut().flag_defaults = defaults;
    s.probe = Some(Box::new(Probe {
        python: vec![p.str("python").into()],
        program: vec![p.str("script").into()],
        required: false,
        setting: "python",
    }));
}

/// NCCL-EP's ep_bench lives in the NCCL tree: `nccl-ep-repo`/`binary` when that is set.
pub fn nccl_ep_binary(p: &Point) -> String {
    nccl_ep_file(
        p.get("nccl-ep-repo").map(|v| v.to_string()),
        p.str("binary"),
    )
}

/// A file of the NCCL tree, as the host's repo sees it (relative paths are relative to it).
pub fn nccl_ep_file(repo: Option<String>, file: &str) -> String {
    match repo {
        Some(repo) if !repo.is_empty() => format!("{}/{}", repo.trim_end_matches('/'), file),
        _ => file.to_string(),
    }
}

/// The directory prepended to LD_LIBRARY_PATH for ep_bench (built without an rpath, it finds
/// libnccl and libnccl_ep only there): `nccl-ep-lib`, else `<nccl-ep-repo>/build/lib`, as the
/// NCCL-EP README and MSCCL++'s driver do; absolute, since ranks may start elsewhere.
pub fn nccl_ep_lib(p: &Point, host: &Host) -> Option<String> {
    let dir = match p.get("nccl-ep-lib").map(|v| v.to_string()) {
        Some(d) => d,
        None => nccl_ep_file(Some(p.get("nccl-ep-repo")?.to_string()), "build/lib"),
    };
    (!dir.is_empty()).then(|| in_repo(host, &dir))
}

pub fn plan(ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
    let mut out = KindPlan::with_points(points.len());
    let nodes = nodes(bench);
    let nodes = &nodes[..];
    let world: i64 = nodes.iter().map(|n| n.nproc_per_node).sum();
    let first = ctx.host(&nodes[0].host);
    for p in points {
        let mut steps = Vec::new();
        let master = bench
            .settings
            .get("master-addr")
            .map(|m| m.val.to_string())
            .unwrap_or_else(|| first.ip.clone());
        let port = p.int("master-port").to_string();
        let gpus = |n: &RankNode| cuda_devices(n.gpu, n.nproc_per_node);
        match launcher(bench, p) {
            "torchrun" => {
                let n = &nodes[0];
                let host = ctx.host(&n.host);
                let mut s = Step::new(format!("ep-{}", p.run_id), Phase::Launch, host, &n.loc);
                s.env.push(("CUDA_VISIBLE_DEVICES".into(), gpus(n)));
                s.env.extend(host.env.iter().cloned());
                s.argv = vec![
                    "torchrun".into(),
                    "--standalone".into(),
                    format!("--nproc_per_node={}", n.nproc_per_node),
                    p.str("script").into(),
                ];
                ll_step(&mut s, p);
                s.timeout_s = p.int("timeout");
                steps.push(s);
            }
            "per-rank" => {
                let mut rank = 0;
                for n in nodes {
                    let host = ctx.host(&n.host);
                    for local in 0..n.nproc_per_node {
                        let mut s = Step::new(
                            format!("ep-rank{rank}-{}", p.run_id),
                            Phase::Launch,
                            host,
                            &n.loc,
                        );
                        s.env = vec![
                            ("CUDA_VISIBLE_DEVICES".into(), gpus(n)),
                            ("RANK".into(), rank.to_string()),
                            ("LOCAL_RANK".into(), local.to_string()),
                            ("WORLD_SIZE".into(), world.to_string()),
                            ("MASTER_ADDR".into(), master.clone()),
                            ("MASTER_PORT".into(), port.clone()),
                        ];
                        s.env.extend(host.env.iter().cloned());
                        s.argv = vec![p.str("python").into(), p.str("script").into()];
                        ll_step(&mut s, p);
                        s.timeout_s = p.int("timeout");
                        steps.push(s);
                        rank += 1;
                    }
                }
            }
            _ => {
                let n = &nodes[0];
                let host = ctx.host(&n.host);
                let mut s = Step::new(format!("ep-{}", p.run_id), Phase::Launch, host, &n.loc);
                s.env.extend(host.env.iter().cloned());
                let per_node = n.nproc_per_node;
                s.argv = match nccl_ep_lib(p, host) {
                    // `sh -c 'LD_LIBRARY_PATH=$0${LD_LIBRARY_PATH:+:…} exec "$@"' DIR mpirun …`:
                    // prepended to what the host's env (or the login shell) set; mpirun's
                    // `-x LD_LIBRARY_PATH` hands it to every rank
                    Some(lib) => vec![
                        "sh".into(),
                        "-c".into(),
                        "LD_LIBRARY_PATH=\"$0${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"; export LD_LIBRARY_PATH; exec \"$@\"".into(),
                        lib,
                        "mpirun".into(),
                    ],
                    None => vec!["mpirun".into()],
                };
                // as NCCL-EP's own driver: run as root, and whatever transport options the site needs
                s.argv
                    .extend(p.str("mpirun-args").split_whitespace().map(str::to_string));
                s.argv.extend([
                    "-np".into(),
                    world.to_string(),
                    "--map-by".into(),
                    format!("ppr:{per_node}:node"),
                ]);
                if nodes.len() > 1 {
                    let list: Vec<String> = nodes
                        .iter()
                        .map(|n| format!("{}:{}", ctx.host(&n.host).ip, n.nproc_per_node))
                        .collect();
                    s.argv.extend(["--host".into(), list.join(",")]);
                }
                s.argv.extend([
                    "--bind-to".into(),
                    "none".into(),
                    "-x".into(),
                    "LD_LIBRARY_PATH".into(),
                    "-x".into(),
                    "PATH".into(),
                ]);
                for (k, _) in &host.env {
                    s.argv.extend(["-x".into(), k.clone()]);
                }
                s.argv.extend([
                    nccl_ep_binary(p),
                    "-a".into(),
                    "ll".into(),
                    "-L".into(),
                    "em".into(),
                ]);
                s.argv.extend(shape_flags(p));
                s.timeout_s = p.int("timeout");
                steps.push(s);
            }
        }
        out.push_point(steps);
    }
    Ok(out)
}
