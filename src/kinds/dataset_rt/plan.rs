//! dataset-rt's plan: one self-launching run per point, or one torch.distributed.run per host.

use crate::kind_api::step::{cuda_devices, in_repo, Ctx, KindPlan, Phase, Probe, Step};
use crate::kinds::dataset_rt::rules::nodes;
use crate::kinds::ranks::RankNode;
use crate::model::expand::Point;
use crate::model::*;

fn benchmark_flags(p: &Point, with_ranks: bool, output: &str) -> Vec<String> {
    let mut a: Vec<String> = vec!["--device".into(), p.str("device").into()];
    if with_ranks {
        a.extend(["--ranks".into(), p.int("ranks").to_string()]);
    }
    a.extend(["--num-workers".into(), p.int("num-workers").to_string()]);
    if p.bool("pin-memory") {
        a.push("--pin-memory".into());
    }
    if !p.bool("shuffle") {
        a.push("--no-shuffle".into());
    }
    match p.get("cache-paths") {
        Some(paths) => a.extend(["--cache-paths".into(), paths.to_string()]),
        None => {
            a.extend([
                "--samples-per-cache".into(),
                p.int("samples-per-cache").to_string(),
            ]);
            a.extend(["--caches".into(), p.int("caches").to_string()]);
        }
    }
    if let Some(s) = p.get("samples-per-epoch") {
        a.extend(["--samples-per-epoch".into(), s.to_string()]);
    }
    for k in [
        "batch-size",
        "input-features",
        "model-width",
        "payload-bytes",
        "repeats",
    ] {
        a.push(format!("--{k}"));
        a.push(p.int(k).to_string());
    }
    for k in ["worker-partition", "worker-context"] {
        a.push(format!("--{k}"));
        a.push(p.str(k).into());
    }
    // flags the experiment writes (older dataset_rt checkouts may lack them; their defaults
    // are the module's own)
    let written = |k: &str| p.param(k).is_some_and(|x| x.loc.is_some());
    // (the numbers; the two flags after)
    for k in super::spec::WHEN_WRITTEN
        .iter()
        .filter(|k| !matches!(**k, "drop-last" | "persistent-workers"))
    {
        if written(k) {
            a.push(format!("--{k}"));
            a.push(p.int(k).to_string());
        }
    }
    if written("drop-last") && p.bool("drop-last") {
        a.push("--drop-last".into());
    }
    if written("persistent-workers") {
        a.push(if p.bool("persistent-workers") {
            "--persistent-workers".into()
        } else {
            "--no-persistent-workers".into()
        });
    }
    a.extend([
        "--timeout-seconds".into(),
        p.int("timeout-seconds").to_string(),
    ]);
    // a float in the module (`--worker-timeout float`); 30.0 is written `30`
    if let Some(w) = p.get("worker-timeout") {
        a.extend(["--worker-timeout".into(), w.to_string()]);
    }
    a.extend(["--output".into(), output.into()]);
    a
}

/// The module the steps run.
const MODULE: &str = "dataset_rt.run_benchmark";

/// The environment every run gets first (a host's `env` may override it): `python -m` puts the
/// working directory (the checkout) first on `sys.path`, where `dataset_rt/` has no compiled
/// extension and would shadow the installed package; PYTHONSAFEPATH=1 (Python ≥ 3.11, also in
/// torchrun's children) leaves it off.
fn base_env() -> Vec<(String, String)> {
    vec![("PYTHONSAFEPATH".into(), "1".into())]
}

/// Preflight imports the module with the runner's python and reads its flags (`--help`); a
/// module that does not import stops the run there.
fn probe(runner: &[String]) -> Option<Probe> {
    Some(Probe {
        python: runner.to_vec(),
        program: vec!["-m".into(), MODULE.into()],
        required: true,
        setting: "runner",
    })
}

/// The prefix of the variables dataset_rt reads a setting from when its flag is not given
/// (`env_prefix="DATASETRT_BENCH_"` in benchmarks/config.py).
const ENV_PREFIX: &str = "DATASETRT_BENCH_";

/// `sh -c 'rm -f -- "$0" && <unset DATASETRT_BENCH_*> && exec "$@"' OUTPUT [env K=V …] …`: the
/// report a point collects is the one it wrote, never an earlier run's under the same run id;
/// and the program takes its settings from the experiment only: a `DATASETRT_BENCH_*` variable
/// inherited from the shell that ran expr (or the host's login) would silently change a setting
/// the plan and report show at its default. The ones the experiment sets (a host's `env`) are
/// given back after the unset, by `env`.
fn fresh(output: &str, keep: &[(String, String)]) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        format!(
            "rm -f -- \"$0\" && for v in $(env | sed -n \"s/^\\({ENV_PREFIX}[A-Za-z0-9_]*\\)=.*/\\1/p\"); do unset \"$v\"; done && exec \"$@\""
        ),
        output.into(),
    ];
    if !keep.is_empty() {
        argv.push("env".into());
        argv.extend(keep.iter().map(|(k, v)| format!("{k}={v}")));
    }
    argv
}

/// A step's environment, as `(name, value)` pairs.
type Env = Vec<(String, String)>;

/// The step's env without the `DATASETRT_BENCH_*` variables, and those apart (for [`fresh`]).
fn split_env(env: Env) -> (Env, Env) {
    env.into_iter()
        .partition(|(k, _)| !k.starts_with(ENV_PREFIX))
}

/// A launch step of `id` on node `n`, `gpus` of its GPUs visible from its first (under
/// `device "cuda"`): the environment, the probe, the guard that the output is fresh, and the
/// runner; the caller adds the module and its flags.
fn launch(
    ctx: &Ctx,
    id: String,
    n: &RankNode,
    gpus: i64,
    p: &Point,
    runner: &[String],
    output: &str,
) -> Step {
    let host = ctx.host(&n.host);
    let mut s = Step::new(id, Phase::Launch, host, &n.loc);
    s.env = base_env();
    s.env.extend(host.env.iter().cloned());
    s.probe = probe(runner).map(Box::new);
    if p.str("device") == "cuda" {
        s.env
            .push(("CUDA_VISIBLE_DEVICES".into(), cuda_devices(n.gpu, gpus)));
    }
    let (env, keep) = split_env(std::mem::take(&mut s.env));
    s.env = env;
    s.argv = fresh(output, &keep);
    s.argv.extend(runner.iter().cloned());
    s.timeout_s = p.int("timeout-seconds") + 60;
    s
}

pub fn plan(ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
    let mut out = KindPlan::with_points(points.len());
    let nodes = nodes(bench);
    let nodes = &nodes[..];
    for p in points {
        let runner: Vec<String> = p
            .str("runner")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let output = format!("{}/{}.json", p.str("results-dir"), p.run_id);
        let mut steps = Vec::new();
        if p.str("launcher") == "torchrun" {
            let first = ctx.host(&nodes[0].host);
            let master = bench
                .settings
                .get("master-addr")
                .map(|m| m.val.to_string())
                .unwrap_or_else(|| first.ip.clone());
            for (i, n) in nodes.iter().enumerate() {
                let id = format!("drt-n{i}-{}", p.run_id);
                let mut s = launch(ctx, id, n, n.nproc_per_node, p, &runner, &output);
                s.argv.extend(["-m".into(), "torch.distributed.run".into()]);
                for (k, v) in [
                    ("--nnodes", nodes.len().to_string()),
                    ("--nproc-per-node", n.nproc_per_node.to_string()),
                    ("--node-rank", i.to_string()),
                    ("--master-addr", master.clone()),
                    ("--master-port", p.int("master-port").to_string()),
                    ("--max-restarts", "0".into()),
                ] {
                    s.argv.extend([k.into(), v]);
                }
                s.argv.extend(["--module".into(), MODULE.into()]);
                s.argv.extend(benchmark_flags(p, false, &output));
                steps.push(s);
            }
        } else {
            let n = &nodes[0];
            let id = format!("drt-{}", p.run_id);
            let mut s = launch(ctx, id, n, p.int("ranks"), p, &runner, &output);
            s.argv.extend(["-m".into(), MODULE.into()]);
            s.argv.extend(benchmark_flags(p, true, &output));
            steps.push(s);
        }
        let host = ctx.host(&nodes[0].host);
        let mut c = Step::new(
            format!("collect-{}", p.run_id),
            Phase::Collect,
            host,
            &nodes[0].loc,
        );
        let dest = format!("{}/outputs/{}/", ctx.output, p.run_id);
        c.argv = if host.is_local() {
            vec!["cp".into(), in_repo(host, &output), dest]
        } else {
            crate::kind_api::step::pull_argv(host, &in_repo(host, &output), dest)
        };
        c.cwd = ".".into();
        steps.push(c);
        out.push_point(steps);
    }
    Ok(out)
}
