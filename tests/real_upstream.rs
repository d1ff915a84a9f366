//! Real upstream programs through `expr run`, opt-in: they download gigabytes and run for minutes,
//! more than CI's budget. Each test says how to ask for it; without it the test is listed as
//! `SKIPPED … (opt-in: VAR=1)` by `tests/run-all.sh` and never fails CI.
//!
//! `EXPR_REAL_DATASET_RT=1 cargo test --test real_upstream -- --nocapture`: the `dataset-rt`
//! 0.4.8 package with its `benchmark` extra from PyPI (torch with CUDA wheels, ~5.8 GB, a few
//! minutes the first time) in a venv outside the repo (`EXPR_DRT_VENV`, default
//! `/var/cache/expr-drt-venv`, made when missing and reused), then a 2-point CPU experiment
//! (about 30 s on 2 cores).
//!
//! `EXPR_REAL_RECSTORE=1 cargo test --test real_upstream real_recstore -- --nocapture`: the real
//! RecStore checkout at `EXPR_RECSTORE_REPO` (default `/var/cache/expr-recstore/checkout`, its
//! third_party sources present: `git clone --recursive`, or `tests/real-upstream/recstore/lay-sources.sh`),
//! prepared by `tests/real-upstream/recstore/prepare.sh` (run by the test: ~17 min cold, seconds
//! warm), then built, tested and run through `expr run` on CPU: RecStore-BRPC against TorchRec-HBM
//! (docs/real-upstream.md).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::Test;
use serde_json::Value;

/// The release the test installs, and the version every rank must report.
const DRT_VERSION: &str = "0.4.8";

fn venv_dir() -> PathBuf {
    std::env::var_os("EXPR_DRT_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/expr-drt-venv"))
}

/// The version of dataset-rt the venv's python imports with its benchmark module, if any.
fn installed(python: &Path) -> Option<String> {
    let out = Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, dataset_rt.run_benchmark, pydantic_settings, torch; print(m.version('dataset-rt'))",
        ])
        .env("PYTHONSAFEPATH", "1")
        .current_dir(std::env::temp_dir())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The venv's python with `dataset-rt[benchmark]==DRT_VERSION`, made (or completed) when missing.
fn real_python() -> PathBuf {
    let dir = venv_dir();
    let python = dir.join("bin/python");
    if installed(&python).as_deref() == Some(DRT_VERSION) {
        return python;
    }
    if !python.exists() {
        eprintln!("real_upstream: creating the venv {}", dir.display());
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "python3 -m venv {} failed", dir.display());
    }
    eprintln!(
        "real_upstream: pip install 'dataset-rt[benchmark]=={DRT_VERSION}' into {} (torch: a few minutes)",
        dir.display()
    );
    let ok = Command::new(dir.join("bin/pip"))
        .args([
            "install",
            "--disable-pip-version-check",
            &format!("dataset-rt[benchmark]=={DRT_VERSION}"),
        ])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "pip install into {} failed", dir.display());
    let got = installed(&python);
    assert_eq!(
        got.as_deref(),
        Some(DRT_VERSION),
        "{} does not import dataset_rt.run_benchmark {DRT_VERSION} after the install",
        python.display()
    );
    python
}

fn metrics(out: &Path) -> BTreeMap<(String, String), (String, f64)> {
    let mut r = csv::Reader::from_path(out.join("metrics.csv")).expect("metrics.csv");
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let (run, metric, value, status) = (col("run_id"), col("metric"), col("value"), col("status"));
    r.records()
        .map(|x| x.unwrap())
        .map(|x| {
            (
                (x[run].to_string(), x[metric].to_string()),
                (
                    x[status].to_string(),
                    x[value].parse::<f64>().unwrap_or(f64::NAN),
                ),
            )
        })
        .collect()
}

/// The real dataset_rt.run_benchmark (PyPI `dataset-rt[benchmark]` 0.4.8, torch on CPU, gloo)
/// run by `expr run` at 0 and 2 loader workers per rank, 2 ranks, 3 passes: every pass rate expr
/// reports is the one in the JSON dataset_rt wrote, cold is pass 0, warm (the headline) the mean
/// of passes 1.., and the version expr names is `ranks[].dataset_rt_version`. The checkout holds
/// a `dataset_rt/` that cannot import (as DatasetRT's source tree without its compiled
/// extension): with PYTHONSAFEPATH the installed package runs, also in torchrun's ranks. A
/// `DATASETRT_BENCH_SEED` inherited from the shell does not reach it (the report's seed is the
/// plan's 7). A point
/// whose program aborts at teardown after a complete report (SIGABRT, seen with the real
/// package) is `ok` with a `recovered:` reason, and its numbers must match all the same.
#[test]
fn real_dataset_rt_through_expr_run_on_cpu_equals_its_own_json() {
    if !common::opt_in(
        "EXPR_REAL_DATASET_RT",
        "the real dataset-rt 0.4.8 from PyPI (torch, ~5.8 GB venv outside the repo, ~30 s of runs)",
    ) {
        return;
    }
    let started = Instant::now();
    let python = real_python();
    let runner = python.display().to_string();
    assert!(
        !runner.contains(char::is_whitespace) && !runner.contains(['"', '\\']),
        "the venv path {runner:?} cannot be a `runner` (split on spaces); set EXPR_DRT_VENV to a plain path"
    );
    let repo = tempfile::tempdir().unwrap();
    let shadow = repo.path().join("dataset_rt");
    std::fs::create_dir_all(&shadow).unwrap();
    std::fs::write(
        shadow.join("__init__.py"),
        "raise ImportError('the checkout shadowed the installed dataset_rt')\n",
    )
    .unwrap();
    let kdl = format!(
        r#"experiment real-drt {{
    description "the real dataset_rt {DRT_VERSION} on CPU: 2 ranks, gloo, 0 and 2 workers"
}}
host local repo="{repo}"
dataset-rt {{
    node host=local
    runner "{runner}"
    device "cpu"
    ranks 2
    shuffle #false
    samples-per-cache 256
    caches 2
    batch-size 32
    repeats 3
    timeout-seconds 300
    sweep num-workers 0 2
}}
"#,
        repo = repo.path().display()
    );
    std::fs::write(repo.path().join("e.kdl"), kdl).unwrap();
    let ran_at = Instant::now();
    // a variable left in the shell: dataset_rt would take its seed from it (env_prefix)
    let ran = Test::new()
        .dir(repo.path())
        .env("DATASETRT_BENCH_SEED", "11")
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    let run_s = ran_at.elapsed().as_secs_f64();
    assert_eq!(
        ran.status, 0,
        "expr run failed\nstdout:\n{}\nstderr:\n{}",
        ran.stdout, ran.stderr
    );
    let out = repo.path().join("out");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let points = summary["points"].as_array().expect("summary.json points");
    assert_eq!(points.len(), 2, "{summary:#}");
    let m = metrics(&out);
    let mut manifest = csv::Reader::from_path(out.join("manifest.csv")).unwrap();
    let head = manifest.headers().unwrap().clone();
    let mcol = |n: &str| head.iter().position(|x| x == n).unwrap();
    let (m_id, m_status, m_reason) = (mcol("run_id"), mcol("status"), mcol("reason"));
    let rows: Vec<csv::StringRecord> = manifest.records().map(|r| r.unwrap()).collect();
    let mut lines = Vec::new();
    for p in points {
        let id = p["run_id"].as_str().unwrap();
        // the JSON dataset_rt wrote in the checkout, and expr's copy of it
        let written = std::fs::read_to_string(repo.path().join(format!("results/{id}.json")))
            .unwrap_or_else(|e| panic!("{id}: dataset_rt's own report: {e}"));
        let copied = std::fs::read_to_string(out.join(format!("outputs/{id}/{id}.json"))).unwrap();
        assert_eq!(
            written, copied,
            "{id}: the collected report is not the one written"
        );
        let j: Value = serde_json::from_str(&written).unwrap();
        let rates: Vec<f64> = j["global_samples_per_second"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(rates.len(), 3, "{id}: one rate per --repeats");
        assert_eq!(j["world_size"], 2, "{id}");
        assert_eq!(
            j["settings"]["seed"], 7,
            "{id}: an inherited DATASETRT_BENCH_SEED reached the program"
        );
        // status: ok, or ok recovered from the known teardown abort
        let row = rows.iter().find(|r| &r[m_id] == id).unwrap();
        let reason = row[m_reason].to_string();
        assert_eq!(&row[m_status], "ok", "{id}: manifest {row:?}");
        assert!(
            reason.is_empty() || (reason.starts_with("recovered:") && reason.contains("SIGABRT")),
            "{id}: an unexpected reason: {reason}"
        );
        assert_eq!(p["status"], "ok", "{id}");
        // every pass, cold and warm, as expr reports them
        let got = |k: &str| {
            let (status, v) = m
                .get(&(id.to_string(), k.to_string()))
                .unwrap_or_else(|| panic!("{id}: no `{k}` in metrics.csv"));
            assert_eq!(status, "ok", "{id}: {k}");
            *v
        };
        for (i, r) in rates.iter().enumerate() {
            assert_eq!(
                got(&format!("global_samples_per_second_pass{i}")),
                *r,
                "{id}: pass {i}"
            );
        }
        let measured: Vec<f64> = p["measure"]["global_samples_per_second"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(measured, rates, "{id}: summary.json rates");
        let cold = rates[0];
        let warm = rates[1..].iter().sum::<f64>() / (rates.len() - 1) as f64;
        assert_eq!(got("cold_global_samples_per_second"), cold, "{id}: cold");
        let w = got("warm_global_samples_per_second");
        assert!(
            (w - warm).abs() <= 1e-9 * warm.abs(),
            "{id}: warm {w} is not the mean of passes 1.. {warm}"
        );
        // the version that ran, as every rank reports it
        let versions: Vec<&str> = j["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["dataset_rt_version"].as_str().unwrap())
            .collect();
        assert_eq!(
            versions, [DRT_VERSION; 2],
            "{id}: ranks[].dataset_rt_version"
        );
        assert_eq!(p["measure"]["dataset_rt_version"], DRT_VERSION, "{id}");
        let torch = j["ranks"][0]["torch_version"].as_str().unwrap_or("?");
        lines.push(format!(
            "{id}: status ok{} | passes {} | cold {cold} | warm {w} (mean of passes 1..: {warm}) | dataset_rt {} | torch {torch} | python {}",
            if reason.is_empty() { String::new() } else { format!(" ({reason})") },
            rates.iter().map(f64::to_string).collect::<Vec<_>>().join(" / "),
            versions[0],
            j["ranks"][0]["python_version"].as_str().unwrap_or("?"),
        ));
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains(DRT_VERSION), "summary.md names no version");
    eprintln!(
        "real_dataset_rt: expr run {run_s:.1} s, test {:.1} s (venv {})",
        started.elapsed().as_secs_f64(),
        venv_dir().display()
    );
    for l in &lines {
        eprintln!("real_dataset_rt: {l}");
    }
}

// ---------------------------------------------------------------------------------------------
// The real RecStore (wurenrumian/RecStore@2fb8d826 and later checkouts of the same shape)

/// The environment prepare.sh wrote (`export K=V`, shell-quoted): read back through bash.
fn recstore_env(repo: &Path) -> BTreeMap<String, String> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real-upstream/recstore/prepare.sh");
    eprintln!(
        "real_recstore: {} (cached steps are skipped)",
        script.display()
    );
    let t0 = Instant::now();
    let ok = Command::new("bash")
        .arg(&script)
        .env("EXPR_RECSTORE_REPO", repo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "prepare.sh failed: its last lines above name the step and its log"
    );
    eprintln!(
        "real_recstore: prepared in {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    let cache =
        std::env::var("EXPR_RECSTORE_CACHE").unwrap_or_else(|_| "/var/cache/expr-recstore".into());
    let out = Command::new("bash")
        .args([
            "-c",
            r#". "$1/env.sh" && env -0 | grep -z '^EXPR_RECSTORE_'"#,
            "-",
            &cache,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{cache}/env.sh");
    String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// One point recomputed from RecStore's own per-step CSV by the runbook's rule: kept rows
/// (warmup_excluded = 0), per row batch_size × 1000 / step_total_ms, summed over ranks within
/// each step, averaged over steps; each stage's mean over the kept rows.
fn runbook_rule(csv_path: &Path) -> (f64, BTreeMap<String, f64>, usize) {
    let mut rd = csv::Reader::from_path(csv_path).unwrap();
    let h = rd.headers().unwrap().clone();
    let col = |n: &str| {
        h.iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("{}: no {n}", csv_path.display()))
    };
    let (step, warm, batch, total) = (
        col("step"),
        col("warmup_excluded"),
        col("batch_size"),
        col("step_total_ms"),
    );
    let mut per_step: BTreeMap<i64, f64> = BTreeMap::new();
    let mut stage_sum: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let stages = [
        "batch_prepare_ms",
        "input_pack_ms",
        "embed_lookup_local_ms",
        "dense_fwd_ms",
        "backward_ms",
        "optimizer_ms",
        "sparse_update_ms",
        "step_total_ms",
    ];
    let mut rows = 0;
    for r in rd.records() {
        let r = r.unwrap();
        let f = |c: usize| r[c].parse::<f64>().unwrap();
        if f(warm) != 0.0 {
            continue;
        }
        rows += 1;
        *per_step.entry(f(step) as i64).or_default() += f(batch) * 1000.0 / f(total);
        for s in stages {
            if let Some(c) = h.iter().position(|x| x == s) {
                let e = stage_sum.entry(s.to_string()).or_default();
                e.0 += f(c);
                e.1 += 1;
            }
        }
    }
    let sps = per_step.values().sum::<f64>() / per_step.len() as f64;
    (
        sps,
        stage_sum
            .into_iter()
            .map(|(k, (s, n))| (k, s / n as f64))
            .collect(),
        rows,
    )
}

#[test]
fn real_recstore_day0_through_expr_run_on_cpu_equals_its_own_csvs() {
    if !common::opt_in(
        "EXPR_REAL_RECSTORE",
        "the real RecStore built from source on CPU (dependencies ~17 min cold into /var/cache/expr-recstore, a 5 GB venv; then ~6 min of build and runs)",
    ) {
        return;
    }
    let repo = PathBuf::from(
        std::env::var("EXPR_RECSTORE_REPO")
            .unwrap_or_else(|_| "/var/cache/expr-recstore/checkout".into()),
    );
    let env = recstore_env(&repo);
    let e = |k: &str| {
        env.get(k)
            .cloned()
            .unwrap_or_else(|| panic!("env.sh has no {k}"))
    };
    let (py, rpath) = (e("EXPR_RECSTORE_PYTHON"), e("EXPR_RECSTORE_RPATH"));
    let flags = format!("-Wl,--disable-new-dtags -Wl,-rpath,{rpath}");
    let cmake_args = [
        "-DENABLE_CUDA=OFF".to_string(),
        format!("-DCMAKE_PREFIX_PATH={}", e("EXPR_RECSTORE_PREFIX_PATH")),
        format!("-Dpybind11_DIR={}", e("EXPR_RECSTORE_PYBIND11_DIR")),
        format!("-DPython3_EXECUTABLE={py}"),
        format!("-DPython_EXECUTABLE={py}"),
        format!("-DPYTHON_EXECUTABLE={py}"),
        format!("-DCMAKE_EXE_LINKER_FLAGS={flags}"),
        format!("-DCMAKE_SHARED_LINKER_FLAGS={flags}"),
        format!("-DCMAKE_MODULE_LINKER_FLAGS={flags}"),
    ]
    .map(|a| format!("{a:?}"))
    .join(" ");
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"experiment real-recstore {{
    description "the real RecStore on CPU: RecStore-BRPC vs TorchRec-HBM, DLRM day 0 (synthetic)"
    language "en"
}}
host local repo="{repo}"
recstore-e2e {{
    // no GPU here: RecStore built without CUDA, TorchRec on CPU (no GPU placed, none checked)
    device "cpu"
    client host=local gpu=0 node-rank=0 nproc-per-node=1
    ps host=local port=15000 shard=0
    // rs_demo's runners read <repo>/build/{{bin,lib}}
    build-dir "build"
    build-jobs 2
    cmake-args {cmake_args}
    build-env PKG_CONFIG_PATH="{pkg}"
    python "{py}"
    batch-size 256
    steps 20
    warmup-steps 3
    embedding-dim 16
    dense-arch-layer-sizes "64,16"
    num-embeddings 1000
    capacity 100000
    repeat 3
    lane "RecStore-BRPC"
    lane "TorchRec-HBM"
}}
"#,
        repo = repo.display(),
        pkg = e("EXPR_RECSTORE_PKG_CONFIG_PATH"),
    );
    std::fs::write(dir.path().join("day0.kdl"), &kdl).unwrap();
    let plan = Test::new().dir(dir.path()).args(["plan", "day0.kdl"]).run();
    assert_eq!(plan.status, 0, "{}", plan.stderr);
    assert!(
        plan.stdout.contains("-DENABLE_CUDA=OFF"),
        "plan shows cmake-args"
    );
    assert!(plan.stdout.contains(" -j 2"), "plan shows a bounded -j");
    let t0 = Instant::now();
    let ran = Test::new()
        .dir(dir.path())
        .args(["run", "day0.kdl", "--output", "out"])
        .run();
    let run_s = t0.elapsed().as_secs_f64();
    let out = dir.path().join("out");
    assert_eq!(
        ran.status, 0,
        "expr run failed\nstdout:\n{}\nstderr:\n{}",
        ran.stdout, ran.stderr
    );
    eprintln!("real_recstore: expr run {run_s:.0} s");
    // every number of summary_e2e.csv from RecStore's own CSVs, by the runbook's rule
    let mut rd = csv::Reader::from_path(out.join("summary_e2e.csv")).unwrap();
    let h = rd.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let mut by_lane: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut checked = 0;
    for r in rd.records() {
        let r = r.unwrap();
        let (id, lane) = (&r[col("run_id")], &r[col("lane")]);
        assert_eq!(&r[col("status")], "ok", "{id}");
        let name = if lane.starts_with("TorchRec") {
            "torchrec"
        } else {
            "recstore"
        };
        let own = out.join(format!("outputs/{id}/{name}_main.csv"));
        let (sps, stages, rows) = runbook_rule(&own);
        assert_eq!(rows, 17, "{id}: 20 steps less 3 warmup");
        let got: f64 = r[col("samples_per_sec")].parse().unwrap();
        assert_eq!(got, (sps * 100.0).round() / 100.0, "{id}: samples_per_sec");
        for (s, mean) in &stages {
            let c = format!("mean_{s}");
            let got: f64 = r[col(&c)].parse().unwrap();
            assert_eq!(got, (mean * 100.0).round() / 100.0, "{id}: {c}");
        }
        eprintln!(
            "real_recstore: {id} {lane} samples/s {sps} (runbook rule) timing_check {:?} same-work {}",
            &r[col("timing_check")],
            &r[col("same_work_samples_per_sec")]
        );
        by_lane.entry(lane.to_string()).or_default().push(sps);
        checked += 1;
    }
    assert_eq!(checked, 6);
    // summary.md shows each lane's mean as the report writes numbers
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for (lane, v) in &by_lane {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let shown = expr::util::fmt::km(mean);
        assert!(
            md.contains(&shown),
            "summary.md lacks {lane}'s mean {shown}"
        );
    }
    // teardown: no server left, its port free, no /dev/shm region of the run
    let ps = Command::new("pgrep")
        .args(["-f", "bin/ps_server"])
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "a ps_server is left: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
    assert!(
        std::net::TcpListener::bind("127.0.0.1:15000").is_ok(),
        "port 15000 still taken"
    );
    let shm: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("real-recstore"))
        .collect();
    assert!(shm.is_empty(), "{shm:?}");
    // the evidence that lasts, when asked for: the result directory, trimmed
    if let Ok(to) = std::env::var("EXPR_REAL_RECSTORE_EVIDENCE") {
        let to = PathBuf::from(to);
        let _ = std::fs::remove_dir_all(&to);
        let keep = Command::new("bash")
            .arg(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/real-upstream/recstore/trim-evidence.sh"),
            )
            .arg(&out)
            .arg(&to)
            .status()
            .unwrap();
        assert!(keep.success());
        std::fs::write(to.join("day0.kdl"), &kdl).unwrap();
    }
}
