//! Every shipped experiment runs end to end and reports its kind's numbers: RecStore files on the
//! fake RecStore checkout (a real CMake project, ps_server and runner), the GPU kinds through
//! stand-in launchers (no GPU runs here: `mock_gpu_` in the names), their hosts pointed at this
//! machine with `--set`. summary_e2e.csv must carry a value for every point.

mod common;

use std::path::{Path, PathBuf};

use common::Test;

fn exe(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn experiment(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("experiments")
        .join(name)
        .display()
        .to_string()
}

/// The headline column of summary_e2e.csv (`value`), per run id.
fn headline_values(out: &Path) -> Vec<(String, String)> {
    let mut rd = csv::Reader::from_path(out.join("summary_e2e.csv")).unwrap();
    let h = rd.headers().unwrap().clone();
    let col = h.iter().position(|c| c == "value").expect("a value column");
    rd.records()
        .map(|r| {
            let r = r.unwrap();
            (r[0].to_string(), r[col].to_string())
        })
        .collect()
}

fn assert_every_point_has_its_number(out: &Path, points: usize) {
    let v = headline_values(out);
    assert_eq!(v.len(), points, "{v:?}");
    for (id, value) in &v {
        assert!(
            value.parse::<f64>().is_ok_and(|x| x.is_finite() && x > 0.0),
            "{id}: headline `{value}`"
        );
    }
}

#[test]
fn the_recstore_experiments_run_on_the_fake_checkout_and_report_samples_per_second() {
    // one after the other: both use the runbook's PS port 15000
    for (file, points) in [("day0.kdl", 2), ("day0-ablations.kdl", 0)] {
        let repo = tempfile::tempdir().unwrap();
        common::copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-recstore"),
            repo.path(),
        );
        let ran = Test::new()
            .dir(repo.path())
            .env("PATH", common::gpu::gpu_path())
            .args([
                "run",
                &experiment(file),
                "--output",
                "out",
                "--only",
                "repeat=0",
                "--set",
                "steps=8",
                "--set",
                "warmup-steps=2",
            ])
            .run();
        assert_eq!(ran.status, 0, "{file}: {}", ran.stderr);
        let out = repo.path().join("out");
        let n = if points == 0 {
            headline_values(&out).len().max(1)
        } else {
            points
        };
        assert_every_point_has_its_number(&out, n);
        common::browser::assert_report_shows_every_lane(&out);
        let metrics = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
        assert!(
            metrics.contains(",samples_per_sec,samples/s,higher,"),
            "{file}: {metrics}"
        );
    }
}

/// A repo with the files the GPU kinds' preflight looks for, and stand-in launchers.
fn gpu_stand_ins(root: &Path) -> (PathBuf, String) {
    let repo = root.join("repo");
    for f in [
        "test/python/ep/ep_bench_ll.py",
        "build/test/nccl_ep/ep_bench",
    ] {
        exe(&repo.join(f), "# stand-in\n");
    }
    let bin = root.join("bin");
    // torchrun: an ep_bench_ll summary block whose total depends on the shape
    exe(
        &bin.join("torchrun"),
        "#!/usr/bin/env bash\nwhile [ $# -gt 0 ]; do case $1 in -d) h=$2;; -e) e=$2;; esac; shift; done\n\
         echo '=== Summary (Low Latency, across 8 ranks) ==='\n\
         echo \"Dispatch (BF16):  avg=$((h/100)).50 us, min=10.00 us, max=90.00 us\"\n\
         echo '                  throughput: avg=300.00 GB/s, min=250.00 GB/s (rank 1), max=350.00 GB/s (rank 0)'\n\
         echo 'Combine (BF16):   avg=60.00 us, min=50.00 us, max=70.00 us'\n\
         echo \"Total (D+C):      avg=$((h/100 + e)).00 us, min=90.00 us, max=999.00 us\"\n",
    );
    // mpirun: NCCL-EP's LL block
    exe(
        &bin.join("mpirun"),
        "#!/usr/bin/env bash\n\
         echo '=== Summary (Low Latency, across 8 ranks) ==='\n\
         echo 'Dispatch (BF16):  avg=50.00 us, min=40.00 us, max=60.00 us'\n\
         echo 'Combine (BF16):   avg=70.00 us, min=60.00 us, max=80.00 us'\n\
         echo 'Total (D+C):      avg=120.00 us, min=100.00 us, max=140.00 us'\n",
    );
    // uv run … -m dataset_rt.run_benchmark: imports (preflight's `--help`), then a report where
    // --output says, one rate per pass
    exe(
        &bin.join("uv"),
        "#!/usr/bin/env python3\nimport json, os, sys\na = sys.argv\n'--help' in a and sys.exit(0)\nout = a[a.index('--output') + 1]\nw = int(a[a.index('--num-workers') + 1])\nn = int(a[a.index('--repeats') + 1])\n\
         os.makedirs(os.path.dirname(out) or '.', exist_ok=True)\n\
         json.dump({'world_size': 1, 'ranks': [], 'global_samples_per_second': [1000.0 * (w + 1)] * n}, open(out, 'w'))\n",
    );
    // and a GPU host's nvidia-smi (8 stand-in GPUs)
    let path = format!("{}:{}", bin.display(), common::gpu::gpu_path());
    (repo, path)
}

#[test]
fn mock_gpu_the_kernel_and_loader_experiments_report_their_numbers() {
    let root = tempfile::tempdir().unwrap();
    let (repo, path) = gpu_stand_ins(root.path());
    for (file, points) in [("ep-bench-ll.kdl", 8), ("dataset-rt-workers.kdl", 10)] {
        let out = root.path().join(format!("out-{file}"));
        let ran = Test::new()
            .dir(root.path())
            .env("PATH", &path)
            .args([
                "run",
                &experiment(file),
                "--output",
                out.to_str().unwrap(),
                "--only",
                "repeat=0",
                "--set",
                "host.gpu0.ssh=local",
                "--set",
                &format!("host.gpu0.repo={}", repo.display()),
            ])
            .run();
        assert_eq!(ran.status, 0, "{file}: {}", ran.stderr);
        assert_every_point_has_its_number(&out, points);
        common::browser::assert_report_shows_every_lane(&out);
    }
}

/// ep_bench_ll.py of two generations (argparse only, written from the reference's description):
/// the seed script's, without `--output-layout` and the newer flags, and one from mscclpp #841 on.
fn ep_script(repo: &Path, newer: bool) {
    let mut text = String::from("import argparse\np = argparse.ArgumentParser()\n");
    for f in ["-t", "-d", "-k", "-e", "-w", "-i"] {
        text.push_str(&format!("p.add_argument('{f}', type=int)\n"));
    }
    text.push_str("p.add_argument('--seed', type=int, default=0xB3C4)\n");
    if newer {
        text.push_str("p.add_argument('--dispatch-dtype', default='bf16')\np.add_argument('--combine-mode', default='rank_local_reduce')\np.add_argument('--output-layout', default='expert_major')\np.add_argument('--num-blocks', type=int, default=130)\np.add_argument('--no-kernel-timing', action='store_true')\n");
    }
    text.push_str("p.parse_args()\n");
    exe(&repo.join("test/python/ep/ep_bench_ll.py"), &text);
}

#[test]
fn mock_gpu_preflight_asks_ep_bench_ll_for_its_flags() {
    let root = tempfile::tempdir().unwrap();
    let (repo, path) = gpu_stand_ins(root.path());
    let kdl = |extra: &str| {
        format!(
            "experiment ep\nhost local repo=\"{}\"\nep-bench {{\n    node host=local nproc-per-node=8\n    experts 128\n    hidden 7168\n{extra}}}\n",
            repo.display()
        )
    };
    std::fs::write(root.path().join("default.kdl"), kdl("")).unwrap();
    std::fs::write(
        root.path().join("token.kdl"),
        kdl("    output-layout \"token_major\"\n"),
    )
    .unwrap();
    let run = |file: &str, out: &str| {
        Test::new()
            .dir(root.path())
            .env("PATH", &path)
            .args(["run", file, "--output", out])
            .run()
    };
    // the seed script: defaults leave its missing flags out, so it runs
    ep_script(&repo, false);
    let plan = Test::new()
        .dir(root.path())
        .args(["plan", "default.kdl"])
        .run()
        .status(0);
    assert!(plan.stdout.contains("left out (the program's own defaults; older checkouts lack them): --dispatch-dtype bf16, --combine-mode rank_local_reduce, --output-layout expert_major, --num-blocks 130"), "{}", plan.stdout);
    let ran = run("default.kdl", "o1");
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    // a token-major layout needs the flag the seed script lacks: refused before anything runs
    let ran = run("token.kdl", "o2");
    assert_eq!(
        ran.status,
        expr::util::exit_codes::PREFLIGHT,
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("`test/python/ep/ep_bench_ll.py` on host `local`")
            && ran.stderr.contains("does not take `--output-layout`")
            && ran.stderr.contains("set `output-layout` to `expert_major`"),
        "{}",
        ran.stderr
    );
    // the newer script takes it
    ep_script(&repo, true);
    let ran = run("token.kdl", "o3");
    assert_ne!(
        ran.status,
        expr::util::exit_codes::PREFLIGHT,
        "{}",
        ran.stderr
    );
}
