//! recstore-e2e end to end on a fake RecStore checkout (tests/fixtures/fake-recstore): real cmake
//! and ctest, a real listening ps_server, and a run_mock_stress.py that honours the real CLI. No
//! GPU is involved; the fake runner is the one mocked part, hence the fixture's name.

mod common;

use common::{assert_no_survivors, journal, manifest_rows as manifest};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::sshd::{free_port, Sshd};
use common::Test;
use serde_json::Value;

/// A fresh copy of the fake checkout with an experiment in it.
fn checkout(kdl: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    common::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-recstore"),
        d.path(),
    );
    std::fs::write(
        d.path().join("e.kdl"),
        kdl.replace("REPO", &d.path().display().to_string()),
    )
    .unwrap();
    d
}

fn single(port: u16) -> String {
    format!(
        "experiment fake\nhost local repo=\"REPO\"\nrecstore-e2e {{\n    client host=local gpu=0\n    ps host=local port={port} shard=0\n    steps 8\n    warmup-steps 2\n    repeat 1\n}}\n"
    )
}

#[test]
fn fake_runner_recstore_e2e_builds_tests_serves_runs_collects_and_tears_down() {
    let port = free_port();
    let d = checkout(&single(port));
    let out: PathBuf = d.path().join("out");
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let ctest = std::fs::read_to_string(out.join("logs/test-brpc-local.log")).unwrap();
    for t in [
        "brpc_ps_client_test",
        "dist_brpc_ps_client_test",
        "test_ps_server_launcher",
        "test_ps_client_factory",
        "test_allshards_ps_client",
    ] {
        assert!(ctest.contains(t), "ctest ran no {t}:\n{ctest}");
    }
    assert!(ctest.contains("100% tests passed"));
    assert!(
        std::fs::read_to_string(out.join("logs/ps0-brpc_b1024_d128_r0-local.log"))
            .unwrap()
            .contains(&format!("bRPC Server listening on 0.0.0.0:{port}"))
    );
    let cfg: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("runtime/recstore_config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cfg["cache_ps"]["servers"][0]["port"], port);
    let rows = manifest(&out);
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(&r[13], "ok");
        assert!(
            Path::new(&d.path().join(&r[11])).is_file(),
            "{} missing",
            &r[11]
        );
    }
    assert_eq!(&rows[1][3], "", "TorchRec has no transport");
    assert_eq!(&rows[1][4], "hbm");
    assert!(std::fs::read_to_string(out.join("deployment.md"))
        .unwrap()
        .starts_with("模型: dlrm\n传输: BRPC\n"));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for want in [
        "使用模型 dlrm，传输为 BRPC",
        "分片映射为 shard 0 → 127.0.0.1:",
        "GPU 放置：local 使用 GPU 0",
        "| 指标 | RecStore-BRPC | TorchRec-HBM |",
        "| embed_lookup_local_ms |",
        "按 batch_size × 1000 / step_total_ms 推算",
    ] {
        assert!(
            summary.contains(want),
            "summary.md lacks `{want}`:\n{summary}"
        );
    }
    // the runbook's summary.md: line 1 the bare HEAD, line 2 the bare hostname
    let lines: Vec<&str> = summary.lines().collect();
    assert!(
        !lines[0].contains(' ') && !lines[1].contains(' ') && lines[2].is_empty(),
        "{summary}"
    );
    // `expr report out` and the args after it, on the stand-in GPU host's PATH
    let report = |more: &[&str]| {
        Test::new()
            .env("PATH", common::gpu::gpu_path())
            .dir(d.path())
            .args(["report", "out"])
            .args(more)
            .run()
            .status(0);
    };
    // the same directory in English: no Chinese character anywhere, the first lines labelled
    report(&["--lang", "en"]);
    let en = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert_eq!(common::cjk(&en), None, "{en}");
    for want in [
        "commit: ",
        "\nhost: ",
        "## Workload\n",
        "runs model dlrm over BRPC",
        "local uses GPU 0",
        "## E2E throughput (samples/s",
        "## E2E latency breakdown (ms",
        "| metric | RecStore-BRPC | TorchRec-HBM |",
        "derived as batch_size × 1000 / step_total_ms",
    ] {
        assert!(
            en.contains(want),
            "the English summary.md lacks `{want}`:\n{en}"
        );
    }
    // and again as the run chose (it named no language): the runbook's Chinese
    report(&[]);
    let again = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        again.starts_with(&format!("{}\n{}\n\n## Workload 说明\n", lines[0], lines[1]))
            && again.contains("使用模型 dlrm，传输为 BRPC"),
        "{again}"
    );
    // a runner aggregate that does not read is said (it was left out without a word)
    // (the fake runner writes none: one is put beside each point's CSV)
    for e in std::fs::read_dir(out.join("outputs")).unwrap().flatten() {
        std::fs::write(
            e.path().join("recstore_main_agg.csv"),
            "metric,mean,p50,p95,max\nstep_total_ms,1,2,x,4\n",
        )
        .unwrap();
    }
    report(&[]);
    let json = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(
        json.contains("\"runner_aggregate_problem\"")
            && json.contains("recstore_main_agg.csv:2: \\\"x\\\" is not a number"),
        "{json}"
    );
    assert_no_survivors(&out);
    // the built server aborts, as the real one does, on a config without num_threads
    let bad = d.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"cache_ps": {"ps_type": "BRPC", "num_shards": 1}, "distributed_client": {}}"#,
    )
    .unwrap();
    let aborted = std::process::Command::new(d.path().join("build_release/bin/ps_server"))
        .args(["--config_path", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!aborted.status.success());
    assert!(String::from_utf8_lossy(&aborted.stderr).contains("key 'num_threads' not found"));
}

#[test]
fn fake_runner_a_failing_correctness_test_stops_before_e2e_and_names_its_log() {
    let d = checkout(&single(free_port()));
    std::fs::write(d.path().join("FAIL_TESTS"), "").unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(3);
    assert!(
        ran.stderr
            .contains("correctness test `test-brpc` on `local` failed")
            && ran.stderr.contains("out/logs/test-brpc-local.log"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("test_ps_client_factory"),
        "the log tail is shown: {}",
        ran.stderr
    );
    assert!(!d
        .path()
        .join("out/logs/client-n0-brpc_b1024_d128_r0-local.log")
        .exists());
    assert!(manifest(&d.path().join("out"))
        .iter()
        .all(|r| &r[13] == "failed"));
    // the report's first paragraph says why there are no E2E numbers, and where the log is
    let s = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    let first = s.split("## Workload 说明\n\n").nth(1).unwrap_or("");
    assert!(
        first.starts_with("正确性测试 `test-brpc` 在 `local` 上失败")
            && first
                .lines()
                .next()
                .unwrap()
                .contains("out/logs/test-brpc-local.log"),
        "{s}"
    );
}

#[test]
fn fake_runner_a_failed_distributed_parent_with_complete_rank_csvs_is_verified_and_merged() {
    let port = free_port();
    let kdl = format!(
        "experiment fake\nhost local repo=\"REPO\"\nrecstore-e2e {{\n    client host=local gpu=0 node-rank=0\n    client host=local gpu=1 node-rank=1\n    \
         ps host=local port={port} shard=0\n    runtime-dir \"REPO/shared_rt\"\n    master-port {mp}\n    steps 6\n    warmup-steps 2\n    repeat 1\n    lane RecStore-BRPC\n}}\n",
        mp = free_port()
    );
    let d = checkout(&kdl);
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .env("FAKE_RS_FAIL_PARENT", "1")
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = d.path().join("out");
    let row = &manifest(&out)[0];
    assert_eq!(&row[13], "ok");
    assert!(
        // the one rule's form: how the program ended, the log line that says so, what was checked
        row[15].starts_with("recovered: exit 1, out/logs/client-n")
            && row[15].contains("all 2 rank CSVs are complete (6 steps"),
        "{row:?}"
    );
    let merged =
        std::fs::read_to_string(out.join("outputs/brpc_b1024_d128_r0/recstore_main.csv")).unwrap();
    assert_eq!(merged.lines().count(), 1 + 2 * 6);
    assert!(journal(&out).iter().any(|e| e["event"] == "recovered"));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("注：lane RecStore-BRPC 有 1 个点（brpc_b1024_d128_r0）的父进程以非零退出，但所有 rank CSV 完整"),
        "{summary}"
    );
    // the transport the workers' own log states, with the file:line that says it
    assert!(
        summary.contains("| brpc_b1024_d128_r0 | RecStore-BRPC | BRPC | 日志未说明 | Socket | outputs/brpc_b1024_d128_r0/recstore_worker_rank0.log:1 |"),
        "{summary}"
    );
    // one policy for one rank: a single client that exits non-zero after writing a complete
    // CSV is recovered the same way, and said so
    let single = format!(
        "experiment fake\nhost local repo=\"REPO\"\nrecstore-e2e {{\n    client host=local gpu=0 node-rank=0\n    \
         ps host=local port={port} shard=0\n    steps 6\n    warmup-steps 2\n    repeat 1\n    lane RecStore-BRPC\n}}\n",
        port = free_port()
    );
    let d1 = checkout(&single);
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d1.path())
        .env("FAKE_RS_FAIL_PARENT", "1")
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let row = &manifest(&d1.path().join("out"))[0];
    assert!(
        row[15].starts_with("recovered:")
            && row[15].contains("all 1 rank CSVs are complete (6 steps"),
        "{row:?}"
    );
    let s1 = std::fs::read_to_string(d1.path().join("out/summary.md")).unwrap();
    assert!(s1.contains("注：lane RecStore-BRPC 有 1 个点"), "{s1}");
    // an incomplete rank CSV cannot stand in: the failure stands, and says why
    let d = checkout(&kdl);
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .env("FAKE_RS_FAIL_PARENT", "1")
        .env("FAKE_RS_SHORT_RANK", "1")
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 3, "{}", ran.stderr);
    let row = &manifest(&d.path().join("out"))[0];
    assert_eq!(&row[13], "failed");
    assert!(
        row[15].contains("rank CSVs cannot stand in")
            && row[15].contains("rank1.csv: 5 rows, expected 6 (final step 5)"),
        "{row:?}"
    );
}

#[test]
fn real_sshd_fake_runner_sharded_ps_and_clients_across_a_local_and_an_ssh_host() {
    let Some(sshd) = Sshd::start() else { return };
    let (p0, p1) = (free_port(), free_port());
    let kdl = format!(
        "experiment fake\nhost local repo=\"REPO\"\nhost far ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\" {{\n    env NCCL_SOCKET_IFNAME=\"lo\" API_TOKEN=\"s3cret\"\n}}\n\
         recstore-e2e {{\n    // the ssh host has no stand-in GPUs on its login PATH: CPU clients\n    device \"cpu\"\n    client host=local gpu=0 node-rank=0\n    client host=far gpu=1 node-rank=1\n    ps host=local port={p0} shard=0\n    ps host=far port={p1} shard=1\n    \
         runtime-dir \"REPO/shared_rt\"\n    master-port {mp}\n    steps 5\n    warmup-steps 1\n    repeat 1\n}}\n",
        sp = sshd.port,
        mp = free_port()
    );
    let d = checkout(&kdl);
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = d.path().join("out");
    assert!(
        manifest(&out).iter().all(|r| &r[13] == "ok"),
        "{:?}",
        manifest(&out)
    );
    let shard1 = std::fs::read_to_string(out.join("logs/ps1-brpc_b1024_d128_r0-far.log")).unwrap();
    assert!(
        shard1.contains(&format!("bRPC Server shard 1 listening on 0.0.0.0:{p1}")),
        "{shard1}"
    );
    assert!(
        out.join("outputs/brpc_b1024_d128_r0/recstore_main.csv")
            .is_file(),
        "rank CSVs of both nodes are merged"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("TorchRec-HBM（NCCL-IB 未验证）"),
        "no NET/IB in the logs: {summary}"
    );
    let events = journal(&out);
    let header = events.iter().find(|e| e["event"] == "header").unwrap();
    assert_eq!(header["hosts"].as_array().unwrap().len(), 2);
    let commands: Vec<&str> = events
        .iter()
        .filter_map(|e| e["command"].as_str())
        .collect();
    assert!(
        commands.iter().any(|c| c.contains("API_TOKEN='****'"))
            && !commands.iter().any(|c| c.contains("s3cret")),
        "secrets are masked in the journal: {commands:?}"
    );
    assert!(
        !std::fs::read_to_string(out.join("commands.sh"))
            .unwrap()
            .contains("s3cret"),
        "secrets are masked in commands.sh"
    );
    assert!(
        !std::fs::read_to_string(out.join("journal.jsonl"))
            .unwrap()
            .contains("s3cret"),
        "nowhere in the journal either"
    );
    assert_no_survivors(&out);
}

#[test]
fn real_sshd_preflight_stops_when_hosts_run_different_code_or_lack_the_repo() {
    let Some(sshd) = Sshd::start() else { return };
    let d = checkout("");
    let other = tempfile::tempdir().unwrap();
    common::copy_dir(d.path(), other.path());
    let runner = other.path().join("model_zoo/rs_demo/run_mock_stress.py");
    let text = std::fs::read_to_string(&runner).unwrap() + "\n# a local edit on one host only\n";
    std::fs::write(&runner, text).unwrap();
    let kdl = format!(
        "experiment fake\nhost local repo=\"{}\"\nhost far ssh=\"exprtest\" ssh-port={} ip=\"127.0.0.1\" repo=\"{}\"\n\
         recstore-e2e {{\n    // the ssh host has no stand-in GPUs on its login PATH: CPU clients\n    device \"cpu\"\n    client host=local gpu=0 node-rank=0\n    client host=far gpu=1 node-rank=1\n    ps host=local port={} shard=0\n    runtime-dir \"/tmp/rt\"\n    repeat 1\n}}\n",
        d.path().display(),
        sshd.port,
        other.path().display(),
        free_port()
    );
    std::fs::write(d.path().join("e.kdl"), &kdl).unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(expr::util::exit_codes::PREFLIGHT);
    assert!(
        ran.stderr.contains("code fingerprints differ")
            && ran.stderr.contains("`far`")
            && ran.stderr.contains("model_zoo/rs_demo/run_mock_stress.py"),
        "{}",
        ran.stderr
    );
    assert!(
        !d.path().join("out/logs/build-local.log").exists(),
        "nothing ran"
    );
    std::fs::write(
        d.path().join("e.kdl"),
        kdl.replace(&other.path().display().to_string(), "/no/such/repo"),
    )
    .unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out2"])
        .run()
        .status(expr::util::exit_codes::PREFLIGHT);
    assert!(
        ran.stderr
            .contains("host `far` has no repo at /no/such/repo"),
        "{}",
        ran.stderr
    );
}

/// A PATH that has everything /usr/bin, /bin and /usr/local/bin have, but rsync.
fn path_without_rsync(dir: &Path) -> String {
    let bin = dir.join("bin-no-rsync");
    std::fs::create_dir_all(&bin).unwrap();
    for d in ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin"] {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let name = e.file_name();
            if name == "rsync" || bin.join(&name).exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(e.path(), bin.join(&name));
        }
    }
    bin.display().to_string()
}

#[test]
fn real_sshd_remote_clients_with_an_absolute_output_and_rsync_checked_at_preflight() {
    let Some(sshd) = Sshd::start() else { return };
    let (p0, p1) = (free_port(), free_port());
    let kdl = format!(
        "experiment fake\nhost local repo=\"REPO\"\nhost far ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\"\n\
         recstore-e2e {{\n    // the ssh host has no stand-in GPUs on its login PATH: CPU clients\n    device \"cpu\"\n    client host=local gpu=0 node-rank=0\n    client host=far gpu=1 node-rank=1\n    ps host=local port={p0} shard=0\n    ps host=far port={p1} shard=1\n    \
         runtime-dir \"REPO/shared_rt\"\n    master-port {mp}\n    steps 5\n    warmup-steps 1\n    repeat 1\n    lane RecStore-BRPC\n}}\n",
        sp = sshd.port,
        mp = free_port()
    );
    let d = checkout(&kdl);
    // without rsync here, preflight says so before anything starts
    let no_rsync = tempfile::tempdir().unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .env("PATH", &path_without_rsync(no_rsync.path()))
        .args(["run", "e.kdl", "--output", "out0", "--skip-tests"])
        .run();
    assert_ne!(ran.status, 0);
    assert!(
        ran.stderr.contains("rsync is not installed here"),
        "{}",
        ran.stderr
    );
    assert!(
        !d.path().join("out0/logs/build-local.log").exists(),
        "nothing ran"
    );
    // an absolute output: the remote client's artifacts come back from that path, not repo+path
    let abs = d.path().join("abs-out");
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args([
            "run",
            "e.kdl",
            "--output",
            abs.to_str().unwrap(),
            "--skip-tests",
        ])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        manifest(&abs).iter().all(|r| &r[13] == "ok"),
        "{:?}",
        manifest(&abs)
    );
    assert_no_survivors(&abs);
    // a failed collect names the log it really wrote
    let bad = tempfile::tempdir().unwrap();
    let rsync = bad.path().join("rsync");
    std::fs::write(
        &rsync,
        "#!/bin/sh\necho 'rsync stand-in: refusing' >&2\nexit 23\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rsync, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .env(
            "PATH",
            &format!(
                "{}:{}",
                bad.path().display(),
                std::env::var("PATH").unwrap()
            ),
        )
        .args(["run", "e.kdl", "--output", "out2", "--skip-tests"])
        .run();
    assert_ne!(ran.status, 0);
    let rows = manifest(&d.path().join("out2"));
    let reason = &rows[0][15];
    let log = reason.split("log: ").nth(1).unwrap_or_else(|| {
        // (seen once under load: the row said no-data; what the run said, and its journal)
        panic!(
            "{reason}\n--- stderr:\n{}\n--- journal:\n{}",
            ran.stderr,
            std::fs::read_to_string(d.path().join("out2/journal.jsonl")).unwrap_or_default()
        )
    });
    let log = d.path().join(log.trim());
    assert!(log.is_file(), "the named log exists: {reason}");
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("rsync stand-in"));
}

/// The older run_mock_stress.py generation (a fork's config.py): no `--recstore-index-type`,
/// `--ps-kv-backend`, `--prefetch-depth`, `--disable-recstore-fusion`, `--torchrec-memory-mode`.
/// Written here from the reference's description (argparse only), not copied.
fn older_cli(repo: &Path) {
    let p = repo.join("model_zoo/rs_demo/run_mock_stress.py");
    let text = std::fs::read_to_string(&p).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let gone = [
            "\"--recstore-index-type\"",
            "\"--ps-kv-backend\"",
            "\"--prefetch-depth\"",
            "\"--disable-recstore-fusion\"",
            "\"--torchrec-memory-mode\"",
        ]
        .iter()
        .any(|f| line.contains(f));
        if !gone {
            out.push_str(line);
            out.push('\n');
        }
        if line.starts_with("p.add_argument(\"--backend\"") {
            // the attributes still exist, at this generation's own values
            out.push_str("p.set_defaults(recstore_index_type=\"DRAM_EXTENDIBLE_HASH\", ps_kv_backend=\"recstore_dram\", prefetch_depth=0, disable_recstore_fusion=False, torchrec_memory_mode=\"hbm\")\n");
        }
    }
    std::fs::write(&p, out).unwrap();
}

#[test]
fn fake_runner_preflight_asks_the_checkouts_cli_and_says_what_to_change() {
    let port = free_port();
    let kdl = format!(
        "experiment fake\nhost local repo=\"REPO\"\nrecstore-e2e {{\n    client host=local gpu=0 node-rank=0\n    ps host=local port={port} shard=0\n    \
         steps 6\n    warmup-steps 2\n    repeat 1\n    lane RecStore-BRPC\n    lane TorchRec-HBM\n}}\n"
    );
    // the runbook default index type is in the config file too: a checkout whose CLI lacks
    // the flag (as WU@2fb8d826) runs without it, and preflight says it left it out
    let d = checkout(&kdl);
    older_cli(d.path());
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run()
        .status(0);
    assert!(
        ran.stderr.contains("ok"),
        "the older CLI runs without the flag: {}",
        ran.stderr
    );
    std::fs::remove_dir_all(d.path().join("out")).unwrap();
    // at the checkout's own defaults the flags are left out and the older CLI runs
    let kdl2 = kdl.replace(
        "    steps 6\n",
        "    index-type \"DRAM_EXTENDIBLE_HASH\"\n    steps 6\n",
    );
    std::fs::write(
        d.path().join("e.kdl"),
        kdl2.replace("REPO", &d.path().display().to_string()),
    )
    .unwrap();
    let plan = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["plan", "e.kdl"])
        .run()
        .status(0);
    assert!(
        plan.stdout.contains("# left out (the program's own defaults; older checkouts lack them): --ps-kv-backend recstore_dram, --prefetch-depth 0"),
        "{}",
        plan.stdout
    );
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out2", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    // and the newer CLI takes every flag of an ablation lane
    let d2 = checkout(&kdl.replace(
        "lane TorchRec-HBM",
        "lane \"RecStore-BRPC-预取4\" prefetch-depth=4",
    ));
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d2.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
}

#[test]
fn an_embedding_dim_other_than_128_sets_the_dense_layers() {
    let d = checkout(&single(free_port()).replace("repeat 1", "repeat 1\n    embedding-dim 64"));
    let plan = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["plan", "e.kdl"])
        .run()
        .status(0);
    assert!(
        plan.stdout.contains("--dense-arch-layer-sizes 512,256,64"),
        "{}",
        plan.stdout
    );
    let d = checkout(&single(free_port()).replace(
        "repeat 1",
        "repeat 1\n    embedding-dim 64\n    dense-arch-layer-sizes \"1024,64\"",
    ));
    let plan = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["plan", "e.kdl"])
        .run()
        .status(0);
    assert!(
        plan.stdout.contains("--dense-arch-layer-sizes 1024,64"),
        "{}",
        plan.stdout
    );
    let d = checkout(&single(free_port()));
    let plan = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["plan", "e.kdl"])
        .run()
        .status(0);
    assert!(
        !plan.stdout.contains("--dense-arch-layer-sizes"),
        "{}",
        plan.stdout
    );
}

#[test]
fn fake_runner_a_one_node_brpc_lane_on_a_checkout_that_forces_local_shm_is_refused() {
    let d = checkout(&single(free_port()).replace("repeat 1", "repeat 1\n    lane RecStore-BRPC"));
    // the recent CLI: one-node runs go over --single-node-ps-backend (local_shm|hierkv)
    let p = d.path().join("model_zoo/rs_demo/run_mock_stress.py");
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "p.add_argument(\"--nnodes\"",
        "p.add_argument(\"--single-node-ps-backend\", choices=[\"local_shm\", \"hierkv\"], default=\"local_shm\")\np.add_argument(\"--nnodes\"",
    );
    std::fs::write(&p, text).unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run()
        .status(expr::util::exit_codes::PREFLIGHT);
    assert!(
        ran.stderr
            .contains("would report LOCAL_SHM numbers under a BRPC label")
            && ran.stderr.contains("Name the lane `RecStore-SHM`"),
        "{}",
        ran.stderr
    );
}

/// The checkout's own JSON Schema of recstore_config.json is applied at preflight: a violation
/// stops the run before anything starts and names the key and the experiment line behind it; a
/// key the checkout requires and expr does not write is added with a `config` block.
#[test]
fn fake_runner_preflight_validates_the_config_against_the_checkouts_schema() {
    let port = free_port();
    let with = |block: &str| {
        single(port).replace(
            "    repeat 1\n",
            &format!("    repeat 1\n    lane RecStore-BRPC\n{block}"),
        )
    };
    // an enum the schema does not allow, from a config block
    let d = checkout(&with(
        "    config {\n        cache_ps { optimizer { type \"Bogus\"; learning_rate 0.1 } }\n    }\n",
    ));
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run()
        .status(expr::util::exit_codes::PREFLIGHT);
    assert!(
        ran.stderr.contains(
            "fails the checkout's `tools/config/recstore_config.schema.json` with 1 error(s)"
        ) && ran.stderr.contains("at `/cache_ps/optimizer/type`")
            && ran.stderr.contains("e.kdl:11:32 (config block)"),
        "{}",
        ran.stderr
    );
    assert!(!d.path().join("out").exists(), "nothing ran");

    // a checkout (the fork's layout, ci/schema/) that requires a flat key expr does not model
    let d = checkout(&with(""));
    let schema = d.path().join("tools/config/recstore_config.schema.json");
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&schema).unwrap()).unwrap();
    s["properties"]["cache_ps"]["properties"]["base_kv_config"]["required"]
        .as_array_mut()
        .unwrap()
        .push("value_type".into());
    // and a setting's value outside the schema's range
    s["properties"]["cache_ps"]["properties"]["num_threads"]["maximum"] = 16.into();
    std::fs::create_dir_all(d.path().join("ci/schema")).unwrap();
    std::fs::write(
        d.path().join("ci/schema/recstore_config.schema.json"),
        s.to_string(),
    )
    .unwrap();
    std::fs::remove_dir_all(d.path().join("tools/config")).unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run()
        .status(expr::util::exit_codes::PREFLIGHT);
    for want in [
        "`ci/schema/recstore_config.schema.json` with 2 error(s)",
        "at `/cache_ps/base_kv_config/value_type`: \"value_type\" is a required property",
        "add it in the bench's `config { … }` block (`cache_ps { base_kv_config { value_type … } }`)",
        "at `/cache_ps/num_threads`: 32 is greater than the maximum of 16 — from expr's default of `ps-num-threads`",
    ] {
        assert!(ran.stderr.contains(want), "lacks `{want}`:\n{}", ran.stderr);
    }
    // both fixed in the file: the run goes through
    std::fs::write(
        d.path().join("e.kdl"),
        with("    ps-num-threads 16\n    config {\n        cache_ps { base_kv_config { value_type \"DRAM\" } }\n    }\n")
            .replace("REPO", &d.path().display().to_string()),
    )
    .unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let cfg: Value = serde_json::from_str(
        &std::fs::read_to_string(d.path().join("out/runtime/recstore_config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cfg["cache_ps"]["base_kv_config"]["value_type"], "DRAM");
    assert_eq!(cfg["cache_ps"]["num_threads"], 16);
}

/// The report says which transport the logs say a point used, and flags a lane whose logs
/// contradict its name (here: the client log of a BRPC lane states the local_shm backend).
#[test]
fn fake_runner_the_report_states_the_transport_the_client_log_names() {
    let d = checkout(&single(free_port()).replace("repeat 1", "repeat 1\n    lane RecStore-BRPC"));
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = d.path().join("out");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains(
            "| brpc_b1024_d128_r0 | RecStore-BRPC | BRPC | 日志未说明 | 日志未说明 | — |"
        ) && !summary.contains("⚠"),
        "{summary}"
    );
    let log = out.join("logs/client-n0-brpc_b1024_d128_r0-local.log");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("[rs_demo] ps_backend=local_shm\n");
    std::fs::write(&log, &text).unwrap();
    let line = text.lines().count();
    Test::new()
        .args(["report", &out.to_string_lossy()])
        .run()
        .status(0);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let src = format!("logs/client-n0-brpc_b1024_d128_r0-local.log:{line}");
    assert!(
        summary.contains(&format!("| brpc_b1024_d128_r0 | RecStore-BRPC | BRPC | LOCAL_SHM | 日志未说明 | {src} |"))
            && summary.contains(&format!("⚠ `brpc_b1024_d128_r0`（RecStore-BRPC）的日志显示 PS 传输为 LOCAL_SHM（{src}），不是名称所示的 BRPC")),
        "{summary}"
    );
}

/// A resumed run on the same code takes the program's flags from its journal instead of asking
/// `--help` again; changed code is asked again.
#[test]
fn fake_runner_resume_reuses_the_introspected_flags_while_the_code_is_the_same() {
    let d = checkout(&single(free_port()).replace("repeat 1", "repeat 1\n    lane RecStore-BRPC"));
    let first = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(first.status, 0, "{}", first.stderr);
    let events = journal(&d.path().join("out"));
    let intro: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "introspection")
        .collect();
    assert_eq!(intro.len(), 1, "{events:?}");
    assert!(intro[0]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "--recstore-index-type"));
    let again = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--resume", "out", "--skip-tests"])
        .run();
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("preflight: `model_zoo/rs_demo/run_mock_stress.py` on `local`: flags from the journal (same code:"),
        "{}",
        again.stderr
    );
    // the runner changed: its flags are asked for again
    let p = d.path().join("model_zoo/rs_demo/run_mock_stress.py");
    let text = std::fs::read_to_string(&p).unwrap() + "\n# edited\n";
    std::fs::write(&p, text).unwrap();
    let third = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--resume", "out", "--skip-tests"])
        .run();
    assert_eq!(third.status, 0, "{}", third.stderr);
    assert!(
        !third.stderr.contains("flags from the journal"),
        "{}",
        third.stderr
    );
}

/// Across runs, the history database caches each program's flags by the checkout's code: a second
/// run on the same commit and working tree does not ask `--help` again; any change to the tree
/// (here a file the runner does not list) makes it ask. A checkout git does not track is never
/// cached.
#[test]
fn fake_runner_the_history_caches_introspected_flags_by_code_fingerprint() {
    let d = checkout(&single(free_port()).replace("repeat 1", "repeat 1\n    lane RecStore-BRPC"));
    let git = |args: &[&str]| {
        let s = std::process::Command::new("git")
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    };
    let db = d.path().join("h.sqlite");
    let run = |out: &str| {
        let r = Test::new()
            .env("PATH", common::gpu::gpu_path())
            .dir(d.path())
            .args([
                "run",
                "e.kdl",
                "--output",
                out,
                "--skip-tests",
                "--history",
                db.to_str().unwrap(),
            ])
            .run();
        assert_eq!(r.status, 0, "{}", r.stderr);
        r.stderr
    };
    // untracked: asked every time
    assert!(!run("u1").contains("from the history cache"));
    assert!(!run("u2").contains("from the history cache"));
    std::fs::write(
        d.path().join(".gitignore"),
        "u1/\nu2/\nout*/\n*.sqlite*\nbuild/\n",
    )
    .unwrap();
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "c"]);
    assert!(!run("out1").contains("from the history cache"));
    let second = run("out2");
    assert!(
        second.contains("preflight: `model_zoo/rs_demo/run_mock_stress.py` on `local`: flags from the history cache (same code:"),
        "{second}"
    );
    // a change anywhere in the tracked tree: asked again
    std::fs::write(
        d.path().join("CMakeLists.txt"),
        std::fs::read_to_string(d.path().join("CMakeLists.txt")).unwrap() + "\n# edited\n",
    )
    .unwrap();
    assert!(!run("out3").contains("from the history cache"));
}

#[test]
fn fake_runner_a_run_interrupted_while_a_program_answers_help_starts_nothing() {
    let d = checkout(&single(free_port()));
    // the checkout's client takes a minute to print its flags
    let f = d.path().join("model_zoo/rs_demo/run_mock_stress.py");
    let marker = format!("expr-slow-help-{}", std::process::id());
    let text = std::fs::read_to_string(&f).unwrap().replacen(
        "import time\n",
        &format!("import time\nif \"--help\" in sys.argv: __import__(\"os\").execvp(\"bash\", [\"bash\", \"-c\", \"exec -a {marker} sleep 60\"])\n"),
        1,
    );
    std::fs::write(&f, text).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .env("PATH", common::gpu::gpu_path())
        .current_dir(d.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let asking = || {
        !std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap()
            .stdout
            .is_empty()
    };
    let end = Instant::now() + Duration::from_secs(30);
    while !asking() {
        assert!(Instant::now() < end, "preflight never asked for --help");
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "{:?}: {err}",
        t.elapsed()
    );
    // not a warning and on to the build: nothing started
    assert!(
        err.contains("interrupted during preflight: nothing ran"),
        "{err}"
    );
    assert!(!err.contains("its flags are not checked"), "{err}");
    assert!(!d.path().join("out").exists(), "{err}");
    assert!(!asking(), "the --help run outlived expr");
}

/// The recent RecStore CLI (RS@076a8dca era): a one-node run goes over
/// `--single-node-ps-backend` (local_shm by default), whatever `--ps-type` says.
fn recent_cli(repo: &Path) {
    let p = repo.join("model_zoo/rs_demo/run_mock_stress.py");
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "p.add_argument(\"--nnodes\"",
        "p.add_argument(\"--single-node-ps-backend\", choices=[\"local_shm\", \"hierkv\"], default=\"local_shm\")\np.add_argument(\"--nnodes\"",
    );
    std::fs::write(&p, text).unwrap();
}

/// The wurenrumian fork, from reference/recstore.md §8–9: its client ignores
/// RECSTORE_OPS_LIBRARY and takes `--library-path` (else looks in build/lib only), its CLI lacks
/// the newer flags, its engine reads a flat `base_kv_config` (`path`, `index_type`,
/// `value_type`, …) and its schema lives in `ci/schema/` (modelled on its `baseKvConfig`).
fn fork_checkout(repo: &Path) {
    older_cli(repo);
    let p = repo.join("model_zoo/rs_demo/run_mock_stress.py");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("FORK = False", "FORK = True");
    std::fs::write(&p, text).unwrap();
    let cm = repo.join("CMakeLists.txt");
    let text = std::fs::read_to_string(&cm).unwrap().replace(
        "project(fake_recstore C)",
        "project(fake_recstore C)\nadd_compile_definitions(RECSTORE_FLAT_KV=1)",
    );
    std::fs::write(&cm, text).unwrap();
    let schema = repo.join("tools/config/recstore_config.schema.json");
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&schema).unwrap()).unwrap();
    s["properties"]["cache_ps"]["properties"]["base_kv_config"] = serde_json::json!({
        "type": "object",
        "required": ["path", "index_type", "value_type"],
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "index_type": {"enum": ["DRAM", "SSD"]},
            "value_type": {"enum": ["DRAM", "SSD", "HYBRID"]},
            "capacity": {"type": "integer", "minimum": 1},
            "value_size": {"type": "integer", "minimum": 1},
            "value_memory_management": {"enum": ["PersistLoopShmMalloc", "R2ShmMalloc"]}
        }
    });
    std::fs::create_dir_all(repo.join("ci/schema")).unwrap();
    std::fs::write(
        repo.join("ci/schema/recstore_config.schema.json"),
        serde_json::to_string_pretty(&s).unwrap(),
    )
    .unwrap();
    std::fs::remove_dir_all(repo.join("tools/config")).unwrap();
}

/// experiments/day0.kdl, made small (steps, one repeat), its PS on a free port.
fn day0(port: u16) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/day0.kdl"))
        .unwrap()
        .replace("host local\n", "host local repo=\"REPO\"\n")
        .replace("port=15000", &format!("port={port}"))
        .replace("repeat 3", "repeat 1\n    steps 8\n    warmup-steps 2")
}

#[test]
fn fake_runner_day0_on_a_checkout_that_forces_local_shm_stops_with_the_change_then_runs_it() {
    let d = checkout(&day0(free_port()));
    recent_cli(d.path());
    // BRPC at one node: refused at preflight with the exact change
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run()
        .status(expr::util::exit_codes::PREFLIGHT);
    assert!(
        ran.stderr
            .contains("would report LOCAL_SHM numbers under a BRPC label")
            && ran.stderr.contains("`--set ps-type=LOCAL_SHM`"),
        "{}",
        ran.stderr
    );
    // the change, as said: the default lane follows ps-type
    let plan = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["plan", "e.kdl", "--set", "ps-type=LOCAL_SHM"])
        .run()
        .status(0);
    assert!(
        plan.stdout.contains("lane=RecStore-SHM") && !plan.stdout.contains("--ps-type BRPC"),
        "{}",
        plan.stdout
    );
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args([
            "run",
            "e.kdl",
            "--output",
            "out",
            "--set",
            "ps-type=LOCAL_SHM",
        ])
        .run();
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    let out = d.path().join("out");
    let build = std::fs::read_to_string(out.join("logs/build-local.log")).unwrap();
    assert!(build.contains("local_shm_ps_server"), "{build}");
    let cfg: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("runtime/recstore_config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cfg["cache_ps"]["ps_type"], "LOCAL_SHM");
    let value = &cfg["cache_ps"]["base_kv_config"]["value"];
    assert_eq!(value["default_value_size_hint"], 512, "dim 128 × 4");
    assert!(
        value["path"]
            .as_str()
            .unwrap()
            .starts_with("/dev/shm/expr-"),
        "{value}"
    );
    assert!(cfg["local_shm"]["region_name"].is_string(), "{cfg}");
    // the server opened no port and was ready by staying up; the client attached to its region
    let ps_log =
        std::fs::read_to_string(out.join("logs/ps0-local_shm_b1024_d128_r0-local.log")).unwrap();
    assert!(ps_log.contains("LocalShm PS server started"), "{ps_log}");
    let client =
        std::fs::read_to_string(out.join("logs/client-n0-local_shm_b1024_d128_r0-local.log"))
            .unwrap();
    let lib = d
        .path()
        .join("build_release/lib/lib_recstore_ops.so")
        .canonicalize()
        .unwrap();
    assert!(
        client.contains(&format!("loaded ops library {}", lib.display()))
            && client.contains("ps_backend=local_shm"),
        "the client chdirs to the runtime dir, then loads the library by its absolute path:\n{client}"
    );
    let rows = manifest(&out);
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| &r[13] == "ok"), "{rows:?}");
    assert_eq!(&rows[0][3], "LOCAL_SHM");
    assert_no_survivors(&out);
    // the value store and the region are gone with the server
    let stopped: Vec<Value> = journal(&out)
        .into_iter()
        .filter(|e| e["event"] == "stopped")
        .collect();
    let removed = stopped[0]["scratch_removed"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(removed.starts_with("/dev/shm/expr-day0-"), "{removed}");
    assert!(!Path::new(&removed).exists());
    let region = format!(
        "/dev/shm/{}",
        cfg["local_shm"]["region_name"].as_str().unwrap()
    );
    assert!(!Path::new(&region).exists(), "{region} left behind");
}

#[test]
fn fake_runner_day0_on_the_forks_checkout_writes_its_flat_config_and_passes_library_path() {
    let d = checkout(&day0(free_port()));
    fork_checkout(d.path());
    // the fork lacks --recstore-index-type: its own default, so the flag is left out
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args([
            "run",
            "e.kdl",
            "--output",
            "out",
            "--skip-tests",
            "--set",
            "index-type=DRAM_EXTENDIBLE_HASH",
        ])
        .run();
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr
            .contains("`ci/schema/recstore_config.schema.json` on `local`")
            && ran.stderr.contains("takes the flat layout"),
        "{}",
        ran.stderr
    );
    let out = d.path().join("out");
    let cfg: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("runtime/recstore_config.json")).unwrap(),
    )
    .unwrap();
    let kv = &cfg["cache_ps"]["base_kv_config"];
    assert_eq!(kv["value_type"], "DRAM", "{kv}");
    assert_eq!(kv["index_type"], "DRAM");
    assert_eq!(kv["value_size"], 512);
    assert_eq!(kv["value_memory_management"], "PersistLoopShmMalloc");
    assert!(kv["path"].as_str().unwrap().starts_with("/dev/shm/expr-"));
    let lib = d
        .path()
        .join("build_release/lib/lib_recstore_ops.so")
        .canonicalize()
        .unwrap();
    let client =
        std::fs::read_to_string(out.join("logs/client-n0-brpc_b1024_d128_r0-local.log")).unwrap();
    assert!(
        client.contains(&format!("loaded ops library {}", lib.display())),
        "the fork looks only in build/lib unless --library-path says where:\n{client}"
    );
    let j = journal(&out);
    assert!(j
        .iter()
        .any(|e| e["event"] == "config-layout" && e["layout"] == "flat"));
    assert_no_survivors(&out);
}

#[test]
fn fake_runner_each_ps_type_gets_its_own_runtime_dir_and_brpc_clients_their_env() {
    let port = free_port();
    let d = checkout(&single(port).replace(
        "repeat 1",
        "repeat 1\n    lane RecStore-BRPC\n    lane RecStore-SHM",
    ));
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    let out = d.path().join("out");
    let plan: Value = serde_json::from_str(
        &Test::new()
            .env("PATH", common::gpu::gpu_path())
            .dir(d.path())
            .args(["plan", "e.kdl", "--format", "json", "--output", "out"])
            .run()
            .status(0)
            .stdout,
    )
    .unwrap();
    for p in plan["points"].as_array().unwrap() {
        let client = p["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["phase"] == "launch")
            .unwrap();
        let argv: Vec<&str> = client["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let i = argv
            .iter()
            .position(|a| *a == "--recstore-runtime-dir")
            .unwrap();
        let want = if p["lane"] == "RecStore-BRPC" {
            "brpc"
        } else {
            "local_shm"
        };
        assert!(
            argv[i + 1].ends_with(&format!("out/runtime/{want}")),
            "{argv:?}"
        );
        assert!(Path::new(argv[i + 1])
            .join("recstore_config.json")
            .is_file());
        let env: Vec<(String, String)> = serde_json::from_value(client["env"].clone()).unwrap();
        let has = |k: &str, v: &str| env.iter().any(|(a, b)| a == k && b == v);
        assert_eq!(
            has("RECSTORE_BRPC_TIMEOUT_MS", "60000") && has("RECSTORE_BRPC_USE_RDMA", "0"),
            want == "brpc",
            "{env:?}"
        );
    }
    assert!(manifest(&out).iter().all(|r| &r[13] == "ok"));
    assert_no_survivors(&out);
}

/// A config the checkout's shape needs and expr cannot model: the user's template, rendered per
/// point and still held to the checkout's schema.
#[test]
fn fake_runner_a_config_template_is_rendered_per_point_and_validated_by_the_schema() {
    let port = free_port();
    let d = checkout(&single(port).replace(
        "repeat 1",
        "repeat 1\n    lane RecStore-BRPC\n    config-template \"cfg.json.j2\"",
    ));
    let tpl = r#"{"cache_ps": {"ps_type": "{{ ps_type }}", "max_batch_keys_size": {{ max_batch_keys_size }}, "num_threads": 4,
 "num_shards": {{ num_shards }}, "servers": {{ servers_json }},
 "base_kv_config": {"capacity": {{ capacity }}, "index": {"type": "DRAM_PET_HASH"},
   "value": {"type": "DRAM_VALUE_STORE", "path": "{{ value_dir }}/v", "default_value_size_hint": {{ value_size }}, "dram_allocator": {"type": "PERSIST_LOOP_SLAB", "capacity_bytes": 1024}}}},
 "distributed_client": {"num_shards": {{ num_shards }}, "hash_method": "city_hash", "servers": {{ servers_json }}},
 "client": {"host": "127.0.0.1", "port": PORT, "shard": 0}, "templated": "{{ run_id }}"}"#
        .replace("PORT", &port.to_string());
    std::fs::write(d.path().join("cfg.json.j2"), &tpl).unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    let cfg: Value = serde_json::from_str(
        &std::fs::read_to_string(d.path().join("out/runtime/recstore_config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cfg["templated"], "brpc_b1024_d128_r0");
    assert_eq!(cfg["cache_ps"]["num_threads"], 4);
    // the schema still applies
    std::fs::write(
        d.path().join("cfg.json.j2"),
        tpl.replace("\"num_threads\": 4", "\"num_threads\": 0"),
    )
    .unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out2", "--skip-tests"])
        .run()
        .status(expr::util::exit_codes::PREFLIGHT);
    assert!(
        ran.stderr.contains("at `/cache_ps/num_threads`") && ran.stderr.contains("config-template"),
        "{}",
        ran.stderr
    );
    // not JSON: said at plan, with the point
    std::fs::write(d.path().join("cfg.json.j2"), "{ not json {{ run_id }}").unwrap();
    let plan = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["plan", "e.kdl"])
        .run();
    assert_ne!(plan.status, 0);
    assert!(
        plan.stderr.contains("does not render to JSON")
            && plan.stderr.contains("brpc_b1024_d128_r0"),
        "{}",
        plan.stderr
    );
}

/// expr killed while a point runs: `expr stop` stops the servers and removes their scratch.
#[test]
fn fake_runner_expr_stop_after_a_kill_removes_the_servers_scratch() {
    let d = checkout(
        &single(free_port())
            .replace("repeat 1", "repeat 1\n    lane RecStore-BRPC")
            .replace(
                "host local repo=\"REPO\"",
                "host local repo=\"REPO\" {\n    env FAKE_RS_SLEEP=\"30\"\n}",
            ),
    );
    let bin = env!("CARGO_BIN_EXE_expr");
    let mut child = std::process::Command::new(bin)
        // killed below: its processes are left for `expr stop`, not its sentinel
        .env("EXPR_NO_SENTINEL", "1")
        .current_dir(d.path())
        .env("PATH", common::gpu::gpu_path())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = d.path().join("out");
    let end = Instant::now() + Duration::from_secs(120);
    let scratch = loop {
        let started = std::fs::read_to_string(out.join("journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["event"] == "process" && e["step"].as_str().unwrap().starts_with("client"))
            .is_some();
        if started {
            let j = journal(&out);
            let ps = j
                .iter()
                .find(|e| e["event"] == "process" && e["step"].as_str().unwrap().starts_with("ps0"))
                .unwrap();
            break ps["scratch"][0].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < end, "the client never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    // the server made its value store there
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::write(Path::new(&scratch).join("value_0"), "x").unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let stop = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["stop", "out"])
        .run();
    assert!(
        stop.stdout
            .contains("removed the scratch of `ps0-brpc_b1024_d128_r0`")
            || stop
                .stderr
                .contains("removed the scratch of `ps0-brpc_b1024_d128_r0`"),
        "{}\n{}",
        stop.stdout,
        stop.stderr
    );
    assert!(
        format!("{}{}", stop.stdout, stop.stderr)
            .contains("stopped `client-n0-brpc_b1024_d128_r0`"),
        "the client was still running when expr was killed:\n{}{}",
        stop.stdout,
        stop.stderr
    );
    assert!(!Path::new(&scratch).exists(), "{scratch} left behind");
    assert_no_survivors(&out);
}

/// Build options: shown by `plan` as they run, `-j` never unbounded, `-S`/`-B` refused at check
/// with what to set instead, and the build's environment only on the build.
#[test]
fn cmake_args_build_env_and_build_jobs_reach_the_build_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/day0.kdl"))
            .unwrap();
    let with = |extra: &str| base.replace("    repeat 3\n", &format!("    repeat 3\n{extra}\n"));
    std::fs::write(
        d.path().join("a.kdl"),
        with("    cmake-args \"-DENABLE_CUDA=OFF\" \"-DCMAKE_PREFIX_PATH=/opt/a b;/opt/c\"\n    build-env PKG_CONFIG_PATH=\"/opt/spdk/pkgconfig\""),
    )
    .unwrap();
    let plan = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["plan", "a.kdl"])
        .run();
    assert_eq!(plan.status, 0, "{}", plan.stderr);
    let out = &plan.stdout;
    assert!(
        out.contains("PKG_CONFIG_PATH=/opt/spdk/pkgconfig cmake -S . -B build_release -DCMAKE_BUILD_TYPE=Release -DENABLE_CUDA=OFF '-DCMAKE_PREFIX_PATH=/opt/a b;/opt/c'"),
        "{out}"
    );
    assert!(
        out.contains("-j \"$(nproc)\""),
        "the host's core count: {out}"
    );
    assert!(
        !out.contains(" -j\n") && !out.contains(" -j'"),
        "never a bare -j"
    );
    assert!(
        out.contains("cmake-args: -DENABLE_CUDA=OFF"),
        "deployment.md records it: {out}"
    );
    let clients: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("run_mock_stress.py"))
        .collect();
    assert!(
        !clients.is_empty() && clients.iter().all(|l| !l.contains("PKG_CONFIG_PATH")),
        "{clients:?}"
    );
    // the ctest gate starts the ps_server this build made
    assert!(
        out.contains("PS_SERVER_PATH=") && out.contains("build_release/bin/ps_server"),
        "{out}"
    );
    std::fs::write(d.path().join("b.kdl"), with("    build-jobs 3")).unwrap();
    let plan = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["plan", "b.kdl"])
        .run();
    assert!(
        plan.stdout.contains("test_allshards_ps_client -j 3\n"),
        "{}",
        plan.stdout
    );
    for (arg, says) in [
        ("-B/tmp/x", "build-dir"),
        ("-S", "repo"),
        ("--build", "configure arguments"),
    ] {
        std::fs::write(
            d.path().join("c.kdl"),
            with(&format!("    cmake-args \"{arg}\"")),
        )
        .unwrap();
        let c = Test::new()
            .env("PATH", common::gpu::gpu_path())
            .dir(d.path())
            .args(["check", "c.kdl"])
            .run();
        assert_eq!(c.status, 2, "{arg}");
        let all = format!("{}{}", c.stdout, c.stderr);
        assert!(
            all.contains("may not hold") && all.contains(says),
            "{arg}: {all}"
        );
    }
    std::fs::write(d.path().join("c.kdl"), with("    cmake-args 3")).unwrap();
    let c = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["check", "c.kdl"])
        .run();
    assert_eq!(c.status, 2, "an unquoted number: {}", c.stderr);
}

/// A GPU placement is checked at preflight, before anything is built: on a host where
/// nvidia-smi is not available (this machine), on one with fewer GPUs than placed (a stand-in
/// host of 2), and not at all with `device "cpu"`.
#[test]
fn fake_runner_a_gpu_placement_on_a_host_without_those_gpus_stops_before_the_build() {
    let port = free_port();
    let d = checkout(&single(port));
    let none = Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "o1"])
        .run()
        .status(4);
    assert!(
        none.stderr.contains("host `local` has no GPU nvidia-smi can see (nvidia-smi is not available there), and the plan places steps on its GPU 0 (from e.kdl:")
            && none.stderr.contains("set `device \"cpu\"`"),
        "{}",
        none.stderr
    );
    assert!(
        !none.stderr.contains("build"),
        "nothing was built: {}",
        none.stderr
    );
    // two GPUs, a client on GPUs 1..2
    let two = common::gpu::gpus_on_path(&d.path().join("two"), 2);
    std::fs::write(
        d.path().join("f.kdl"),
        single(port)
            .replace("REPO", &d.path().display().to_string())
            .replace(
                "client host=local gpu=0",
                "client host=local gpu=1 nproc-per-node=2",
            ),
    )
    .unwrap();
    let few = Test::new()
        .dir(d.path())
        .env("PATH", &two)
        .args(["run", "f.kdl", "--output", "o2"])
        .run()
        .status(4);
    assert!(
        few.stderr
            .contains("host `local` has 2 GPU(s) (index 0, 1), and the plan places steps on GPU 2"),
        "{}",
        few.stderr
    );
    // on CPU: no GPU placed, nothing to check
    std::fs::write(
        d.path().join("c.kdl"),
        single(port)
            .replace("REPO", &d.path().display().to_string())
            .replace("recstore-e2e {", "recstore-e2e {\n    device \"cpu\""),
    )
    .unwrap();
    let cpu = Test::new()
        .dir(d.path())
        .args(["run", "c.kdl", "--output", "o3"])
        .run();
    assert_eq!(cpu.status, 0, "{}", cpu.stderr);
}

/// A `build-env` secret (`GITLAB_TOKEN`) is masked as a host's env secret is: in `check
/// --resolved`, every `plan` form and everything the run writes (the journal's resolved
/// experiment and its data held it); and a resume without the
/// file refuses the journal's masked copy.
#[test]
fn fake_runner_a_build_env_secret_is_masked_in_every_output_form() {
    let secret = "s3cr3t-build-77";
    let port = free_port();
    let d = checkout(&single(port).replace(
        "    repeat 1\n",
        &format!("    repeat 1\n    build-env GITLAB_TOKEN=\"{secret}\" OTHER_BUILD=\"visible\"\n"),
    ));
    for args in [
        vec!["check", "--resolved", "e.kdl"],
        vec!["plan", "e.kdl"],
        vec!["plan", "--format", "json", "e.kdl"],
        vec!["plan", "--format", "sh", "e.kdl"],
    ] {
        let r = Test::new().dir(d.path()).args(&args).run().status(0);
        assert!(
            !r.stdout.contains(secret) && !r.stderr.contains(secret),
            "{args:?} shows the secret"
        );
    }
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains(secret));
    let mut seen = 0;
    for e in walk(&d.path().join("out")) {
        let text = String::from_utf8_lossy(&std::fs::read(&e).unwrap()).into_owned();
        assert!(!text.contains(secret), "{} holds the secret", e.display());
        seen += text.contains("OTHER_BUILD") as usize;
    }
    assert!(seen > 0, "the other build variable is still recorded");
    std::fs::rename(d.path().join("e.kdl"), d.path().join("e.gone")).unwrap();
    let r = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "--resume", "out"])
        .run();
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("secrets masked (`GITLAB_TOKEN`)"),
        "{}",
        r.stderr
    );
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
