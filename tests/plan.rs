//! `expr plan`: the runbooks' commands, expansion order, overrides, and quoting that survives a shell.

mod common;

use common::sshd::Sshd;

use std::path::Path;

use common::{files, rel, Test};
use serde_json::{json, Value};

fn redact(s: &str) -> String {
    let cwd = env!("CARGO_MANIFEST_DIR");
    // a run's scratch under /dev/shm is named after its start time and result directory
    let tag = regex::Regex::new(r"(/dev/shm/expr-|expr_)([A-Za-z0-9_]*)[-_]([0-9a-f]{8})").unwrap();
    tag.replace_all(&s.replace(cwd, "[CWD]"), "${1}${2}-[RUN]")
        .into_owned()
}

#[test]
fn plan_snapshots_of_every_experiment() {
    for f in files("experiments", "kdl") {
        let out = Test::new()
            .args(["plan", &rel(&f), "--output", "results/snap"])
            .run()
            .status(0);
        let name = format!("plan__{}", f.file_stem().unwrap().to_string_lossy());
        insta::assert_snapshot!(name, redact(&out.stdout));
    }
}

/// A zip and an exclude are told as the matrix is: the plan's settings and deployment.md,
/// and summary.md's workload prose (they said `sweep n = 1000, 2000` and `sweep k = 1, 3`, a
/// 2×2 grid, and left the exclude out, for 3 pairs of 4) (helper 63).
#[test]
fn a_zip_and_an_exclude_are_told_as_the_matrix_is() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("z.kdl"),
        "experiment z\nbench b {\n    param mode \"a\"\n    param n 1\n    param k 1\n    run \"echo v={{ n }}{{ k }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane fast mode=\"f\"\n    lane slow mode=\"s\"\n    zip {\n        n 1000 2000\n        k 1 3\n    }\n    exclude lane=\"slow\" n=2000\n}\n",
    )
    .unwrap();
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "z.kdl", "--output", "out"])
        .run()
        .status(0);
    for line in [
        "points: 3\n",
        "    zip n, k = (1000, 1), (2000, 3)\n",
        "    exclude = lane=slow n=2000\n",
        "  zip n, k: (1000, 1), (2000, 3)\n  exclude: lane=slow n=2000\n",
    ] {
        assert!(plan.stdout.contains(line), "{line:?}: {}", plan.stdout);
    }
    assert!(!plan.stdout.contains("sweep n"), "{}", plan.stdout);
    Test::new()
        .dir(d.path())
        .args(["run", "z.kdl", "--output", "out"])
        .run()
        .status(0);
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    assert!(
        summary.contains(" Swept: n, k together ((1000, 1), (2000, 3)); except lane=slow n=2000."),
        "{summary}"
    );
    // each setting of the zip says so too (it said `k=swept 1, 3`: helper 64)
    assert!(
        summary.contains("k=swept with n: 1, 3")
            && summary.contains("| n | swept with k: 1000, 2000 |"),
        "{summary}"
    );
    // a text with the list's own marks is one value, in quotes
    std::fs::write(
        d.path().join("s.kdl"),
        "experiment s\nbench b {\n    param n 1\n    param s \"x\"\n    run \"echo {{ n }} {{ s }}\"\n    zip {\n        n 1000 2000\n        s \"a, b\" \"c) (d\"\n    }\n    exclude s=\"a, b\"\n}\n",
    )
    .unwrap();
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "s.kdl", "--output", "out2"])
        .run()
        .status(0);
    assert!(
        plan.stdout
            .contains("zip n, s = (1000, \"a, b\"), (2000, \"c) (d\")")
            && plan.stdout.contains("exclude = s=\"a, b\""),
        "{}",
        plan.stdout
    );
}

/// A C1 control (U+009B, a CSI; U+0085) is shown as an escape by the plan's text, as C0 ones
/// are, and deployment.md (a record for a reader) writes controls as escapes, as summary.md
/// does; the command keeps the value as it is (helper 62: raw CSI, NEL, ESC on the terminal).
#[test]
fn c1_controls_are_shown_as_escapes_by_the_plan_and_deployment_md() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("c1.kdl"),
        "experiment c1 {\n    description \"x\\u{9b}31mRED\\u{85}y\\u{1b}[0m\"\n}\nbench b {\n    param v \"p\\u{9b}2Jq\"\n    run \"echo v=1 {{ v }}\"\n}\n",
    )
    .unwrap();
    let raw = |t: &str| {
        t.chars()
            .any(|c| ('\u{80}'..='\u{9f}').contains(&c) || c == '\u{1b}')
    };
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "c1.kdl", "--output", "out"])
        .run()
        .status(0);
    assert!(!raw(&plan.stdout), "{:?}", plan.stdout);
    assert!(
        plan.stdout
            .contains("description: x\\u{9b}31mRED\\u{85}y\\u{1b}[0m"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stderr.contains("control character(s)"),
        "{}",
        plan.stderr
    );
    Test::new()
        .dir(d.path())
        .args(["run", "c1.kdl", "--output", "out"])
        .run()
        .status(0);
    let dep = std::fs::read_to_string(d.path().join("out/deployment.md")).unwrap();
    assert!(!raw(&dep), "{dep:?}");
    // the command ran with the value as it is
    let log = std::fs::read_to_string(d.path().join("out/logs/run1-b_r0-local.log")).unwrap();
    assert!(log.contains("p\u{9b}2Jq"), "{log:?}");
}

fn plan_json(args: &[&str]) -> Value {
    let out = Test::new()
        .args(["plan", "--format", "json", "--output", "results/t"])
        .args(args)
        .run()
        .status(0);
    serde_json::from_str(&out.stdout).expect("plan json")
}

/// The plan's run ids, in order.
fn run_ids(plan: &Value) -> Vec<&str> {
    plan["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["run_id"].as_str().unwrap())
        .collect()
}

fn steps(plan: &Value) -> Vec<&Value> {
    plan["points"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["steps"].as_array().unwrap())
        .collect()
}

#[test]
fn day0_config_holds_the_runbook_json_and_every_key_the_server_reads() {
    let plan = plan_json(&["experiments/day0.kdl"]);
    let cfg = steps(&plan)
        .into_iter()
        .find(|s| s["phase"] == "config")
        .expect("config step");
    assert!(cfg["file"]["path"]
        .as_str()
        .unwrap()
        .ends_with("results/t/runtime/recstore_config.json"));
    let content: Value = serde_json::from_str(cfg["file"]["content"].as_str().unwrap()).unwrap();
    // the runbook's (abbreviated) example, key for key
    let runbook = json!({
      "cache_ps": {
        "ps_type": "BRPC",
        "num_shards": 1,
        "servers": [{"host": "127.0.0.1", "port": 15000, "shard": 0}],
        "base_kv_config": {"capacity": 8000000, "index": {"type": "DRAM_PET_HASH"}, "value": {"type": "DRAM_VALUE_STORE"}}
      },
      "distributed_client": {
        "num_shards": 1,
        "hash_method": "city_hash",
        "max_keys_per_request": 65536,
        "servers": [{"host": "127.0.0.1", "port": 15000, "shard": 0}]
      }
    });
    fn within(want: &Value, got: &Value, at: &str) {
        match want {
            Value::Object(m) => {
                for (k, v) in m {
                    within(v, &got[k], &format!("{at}.{k}"));
                }
            }
            v => assert_eq!(v, got, "{at}"),
        }
    }
    within(&runbook, &content, "");
    // and what the server and the checkout's schema require besides (upstream runner's values)
    assert_eq!(content["cache_ps"]["num_threads"], 32);
    assert_eq!(content["cache_ps"]["max_batch_keys_size"], 65536);
    assert_eq!(
        content["client"],
        json!({"host": "127.0.0.1", "port": 15000, "shard": 0})
    );
    let value = &content["cache_ps"]["base_kv_config"]["value"];
    assert_eq!(value["dram_allocator"]["type"], "PERSIST_LOOP_SLAB");
    // capacity × (dim 128 × 4 bytes) × 2
    assert_eq!(
        value["dram_allocator"]["capacity_bytes"],
        8_000_000u64 * 512 * 2
    );
    // the value store: this run's own directory under /dev/shm (DRAM_VALUE_STORE takes no
    // other), removed at teardown; the value size hint recent RecStore requires
    let path = value["path"].as_str().unwrap();
    assert!(
        path.starts_with("/dev/shm/expr-day0-") && path.ends_with("/brpc/value"),
        "{path}"
    );
    assert_eq!(value["default_value_size_hint"], 512);
    let keys: Vec<&String> = content.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["cache_ps", "distributed_client", "client"]);
}

#[test]
fn day0_plan_holds_the_runbook_commands_in_order() {
    let out = Test::new()
        .args(["plan", "experiments/day0.kdl", "--output", "results/t"])
        .run()
        .status(0);
    let text = out.stdout;
    let want = [
        "deployment.md ---\n模型: dlrm\n传输: BRPC\nclient:\n  - ssh_host=local (runs here), repo=., ip=127.0.0.1, gpu=0, node_rank=0, nproc_per_node=1\nps:\n  - ssh_host=local (runs here), repo=., ip=127.0.0.1, ps_port=15000, shard=0\nclient 部署: single-node\nPS 部署: single-ps\n分片: 1, hash_method=city_hash, max_keys_per_request=65536\n",
        "$ cmake -S . -B build_release -DCMAKE_BUILD_TYPE=Release",
        // the server, the client's ops library and every test ctest runs
        "$ cmake --build build_release --target ps_server recstore_torch_ops brpc_ps_client_test dist_brpc_ps_client_test test_ps_server_launcher test_ps_client_factory test_allshards_ps_client -j \"$(nproc)\"",
        "# -j its core count (nproc); targets: ps_server (the PS), recstore_torch_ops (build_release/lib/lib_recstore_ops.so, which the Python client loads)",
        // the ops library, by its absolute path, checked after the build
        "$ test -f [CWD]/build_release/lib/lib_recstore_ops.so",
        "$ PS_SERVER_PATH=[CWD]/build_release/bin/ps_server RECSTORE_CONFIG=[CWD]/recstore_config.json PS_LOG_DIR=[CWD]/results/t/logs/ctest-brpc ctest --test-dir build_release -R 'brpc_ps_client_test|dist_brpc_ps_client_test|test_ps_server_launcher|test_ps_client_factory|test_allshards_ps_client' --output-on-failure",
        "build_release/bin/ps_server --config_path [CWD]/results/t/runtime/recstore_config.json --brpc_server_port 15000",
        "# scratch, removed after it stops (also on interrupt and by `expr stop`): /dev/shm/expr-day0-[RUN]/brpc",
        "$ CUDA_VISIBLE_DEVICES=0 RECSTORE_OPS_LIBRARY=[CWD]/build_release/lib/lib_recstore_ops.so RECSTORE_BRPC_USE_RDMA=0 RDMA_DEVICE='' RECSTORE_BRPC_TIMEOUT_MS=60000 CUDA_DEVICE_ORDER=PCI_BUS_ID python3 model_zoo/rs_demo/run_mock_stress.py --backend recstore --ps-type BRPC --batch-size 1024 --embedding-dim 128 --num-embeddings 200000 --steps 80 --warmup-steps 5 --read-mode prefetch --data-dir model_zoo/torchrec_dlrm/processed_day_0_data --output-root [CWD]/results/t --run-id brpc_b1024_d128_r0 --recstore-runtime-dir [CWD]/results/t/runtime --no-start-server --server-host 127.0.0.1 --server-port0 15000",
        // flags at run_mock_stress.py's own defaults are left out (older checkouts lack them)
        "# left out (the program's own defaults; older checkouts lack them): --ps-kv-backend recstore_dram, --prefetch-depth 0",
        "# added where the checkout's --help lists it (asked at preflight): --library-path [CWD]/build_release/lib/lib_recstore_ops.so",
        "$ CUDA_VISIBLE_DEVICES=0 CUDA_DEVICE_ORDER=PCI_BUS_ID python3 model_zoo/rs_demo/run_mock_stress.py --backend torchrec --batch-size 1024 --embedding-dim 128 --num-embeddings 200000 --steps 80 --warmup-steps 5 --data-dir model_zoo/torchrec_dlrm/processed_day_0_data --output-root [CWD]/results/t --run-id torchrec_hbm_b1024_d128_r0",
    ];
    let text = redact(&text);
    let mut at = 0;
    for w in want {
        let pos = text[at..]
            .find(w)
            .unwrap_or_else(|| panic!("missing or out of order: {w}\n--- plan ---\n{text}"));
        at += pos + w.len();
    }
    assert!(
        !Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results/t")
            .exists(),
        "plan must write nothing"
    );
}

/// A lane name or sweep value with letters outside ASCII gets a run id of its own: the ASCII it
/// has and a hash of the whole (FNV-1a, worked out by hand below). Before, `无预取` and `预取`
/// were `_r0` and `_r0_2` (and `快`, `慢` both `mode`): ids that said nothing and swapped lanes
/// when the file's order changed.
#[test]
fn names_outside_ascii_keep_their_run_ids_apart() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("u.kdl");
    std::fs::write(
        &f,
        "experiment u\nhost local\nbench b {\n    param mode \"快\"\n    run \"echo {{ mode }}\"\n    lane \"无预取\"\n    lane \"预取\"\n    lane \"größe\"\n    sweep mode \"快\" \"慢\"\n}\n",
    )
    .unwrap();
    let plan = plan_json(&[f.to_str().unwrap()]);
    let ids = run_ids(&plan);
    // FNV-1a (offset 0x811c9dc5, prime 0x01000193) over the UTF-8 bytes:
    // 无预取 8324b4a3, 预取 70bc7db8, größe cd38f49a, 快 343b1352, 慢 91f79202
    assert_eq!(
        ids,
        [
            "8324b4a3_mode343b1352_r0",
            "70bc7db8_mode343b1352_r0",
            "gr_e_cd38f49a_mode343b1352_r0",
            "8324b4a3_mode91f79202_r0",
            "70bc7db8_mode91f79202_r0",
            "gr_e_cd38f49a_mode91f79202_r0",
        ]
    );
    // symbols too (helper 76: `🚀` and `🐢` were `_r0` and `_r0_2`): 🚀 7fa78ada, 🐢 258d6546,
    // a→b af11e8a0
    std::fs::write(
        &f,
        "experiment u\nhost local\nbench b {\n    run \"echo {{ lane }}\"\n    lane \"🚀\"\n    lane \"🐢\"\n    lane \"a→b\"\n}\n",
    )
    .unwrap();
    let plan = plan_json(&[f.to_str().unwrap()]);
    assert_eq!(
        run_ids(&plan),
        ["7fa78ada_r0", "258d6546_r0", "a_b_af11e8a0_r0"]
    );
}

/// `--set` of a setting a lane sets: warned where the lane's value wins (another value), not
/// where they agree; a sweep `--set` gives that leaves the lane no value is said as the
/// `--set`'s (it said `sweep z` in the file does not hold `q`, which it did, beside a warning
/// that the lane's value wins).
#[test]
fn set_of_a_setting_a_lane_sets_is_said_as_what_happens() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("s.kdl");
    let file = f.to_str().unwrap();
    let plan = |kdl: &str, set: &str| {
        std::fs::write(&f, kdl).unwrap();
        Test::new()
            .args(["plan", file, "--output", "o", "--set", set])
            .run()
    };
    let unswept = "experiment s\nbench b {\n    param z \"p\"\n    run \"echo {{ z }}\"\n    lane A\n    lane B z=\"q\"\n}\n";
    let swept = unswept.replace("    lane A", "    sweep z \"p\" \"q\"\n    lane A");
    let wins = "lane `B` sets `z` itself; there the lane's value wins over --set";
    let r = plan(unswept, "z=r").status(0);
    assert!(r.stderr.contains(wins), "{}", r.stderr);
    let r = plan(unswept, "z=q").status(0);
    assert!(
        !r.stderr.contains("warning") && !r.stderr.contains('⚠'),
        "{}",
        r.stderr
    );
    let r = plan(&swept, "z=q").status(0);
    assert!(!r.stderr.contains('⚠'), "{}", r.stderr);
    // a sweep `--set` gives where the file has none: said as the --set's (it said `sweep n`)
    let ints = unswept
        .replace("param z \"p\"", "param z \"p\"\n    param n 5")
        .replace("lane B z=\"q\"", "lane B n=10");
    let r = plan(&ints, "n=10,11").status(0);
    assert!(
        r.stderr
            .contains("lane `B` sets `n`, which `--set n=…` varies: the lane runs only at `n=10`"),
        "{}",
        r.stderr
    );
    let r = plan(&swept, "z=r").status(2);
    assert!(
        r.stderr.contains("lane `B` sets `z` to `q`, a value `--set z=…` does not hold: the lane has no matrix point")
            && r.stderr.contains("give `q` in `--set z=…` too")
            && !r.stderr.contains(wins),
        "{}",
        r.stderr
    );
}

#[test]
fn repeats_interleave_lanes_and_run_ids_are_stable() {
    let plan = plan_json(&["experiments/day0-ablations.kdl"]);
    let ids = run_ids(&plan);
    assert_eq!(
        &ids[..6],
        [
            "brpc_b1024_d128_r0",
            "brpc_noprefetch_b1024_d128_r0",
            "brpc_noprefetch_nofusion_b1024_d128_r0",
            "brpc_prefetch4_b1024_d128_r0",
            "torchrec_hbm_b1024_d128_r0",
            "brpc_b1024_d128_r1"
        ]
    );
    assert_eq!(ids.len(), 15);
    let text = Test::new()
        .args([
            "plan",
            "experiments/day0-ablations.kdl",
            "--output",
            "o",
            "--only",
            "lane=RecStore-BRPC-无预取无融合",
            "--only",
            "repeat=0",
        ])
        .run()
        .status(0)
        .stdout;
    assert!(text.contains("--read-mode direct --data-dir"), "{text}");
    assert!(text.contains("left out (the program's own defaults; older checkouts lack them): --ps-kv-backend recstore_dram, --prefetch-depth 0"), "{text}");
    assert!(text.contains("--disable-recstore-fusion"));
    assert!(text.contains("points: 1"));
}

#[test]
fn sweeps_extend_run_ids_and_only_selects() {
    let plan = plan_json(&[
        "experiments/ep-bench-ll.kdl",
        "--only",
        "hidden=7168",
        "--only",
        "repeat=0",
    ]);
    let ids = run_ids(&plan);
    assert_eq!(
        ids,
        [
            "mscclpp_ll_x128_h7168_r0",
            "nccl_ep_x128_h7168_r0",
            "mscclpp_ll_x256_h7168_r0",
            "nccl_ep_x256_h7168_r0"
        ]
    );
    let plan = plan_json(&["experiments/dataset-rt-workers.kdl"]);
    let outs: Vec<String> = steps(&plan)
        .iter()
        .filter(|s| s["phase"] == "launch")
        .map(|s| {
            let argv: Vec<&str> = s["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            argv[argv.iter().position(|a| *a == "--output").unwrap() + 1].to_string()
        })
        .collect();
    assert_eq!(outs.len(), 10);
    let mut dedup = outs.clone();
    dedup.dedup();
    assert_eq!(
        dedup.len(),
        10,
        "a distinct output file per point: {outs:?}"
    );
}

/// dataset_rt 0.4.8's `--help` prints `--worker-timeout float` (`worker_timeout: float`, > 0,
/// finite): a fractional timeout is passed as written (it was refused as "an integer").
#[test]
fn dataset_rt_worker_timeout_is_a_number_as_the_real_help_says() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("e.kdl");
    std::fs::write(
        &f,
        "experiment w\ndataset-rt {\n    node host=local\n    worker-timeout 2.5\n    sweep num-workers 0 2\n}\n",
    )
    .unwrap();
    let plan = plan_json(&[f.to_str().unwrap()]);
    for s in steps(&plan).iter().filter(|s| s["phase"] == "launch") {
        let argv: Vec<&str> = s["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let i = argv.iter().position(|a| *a == "--worker-timeout").unwrap();
        assert_eq!(argv[i + 1], "2.5", "{argv:?}");
    }
    // the default stays an integer on the command line
    let plan = plan_json(&["experiments/dataset-rt-workers.kdl"]);
    let s = steps(&plan)
        .into_iter()
        .find(|s| s["phase"] == "launch")
        .unwrap();
    let argv = s["argv"].as_array().unwrap();
    let i = argv.iter().position(|a| a == "--worker-timeout").unwrap();
    assert_eq!(argv[i + 1], "30");
}

#[test]
fn set_overrides_are_validated_like_the_file() {
    let plan = plan_json(&[
        "experiments/day0.kdl",
        "--set",
        "batch-size=2048",
        "--set",
        "repeat=1",
    ]);
    assert_eq!(plan["points"].as_array().unwrap().len(), 2);
    assert_eq!(plan["points"][0]["run_id"], "brpc_b2048_d128_r0");
    // (flag, argument, text the diagnostic must hold)
    let refused = [
        ("--set", "batch-size=big", "--set:1:12"),
        ("--set", "batch-size=big", "wrong-type"),
        // a number where a string goes: quoted for KDL inside the shell's quotes
        (
            "--set",
            "dram-allocator=3",
            "help: quote the value to make it a string: `--set 'dram-allocator=\"3\"'`",
        ),
        ("--set", "bach-size=1", "did you mean `batch-size`?"),
        ("--set", "read-mode=drect", "did you mean `direct`?"),
        ("--only", "lnae=x", "did you mean `lane`?"),
        // a bad value of a host property is shown where the `--set` wrote it
        ("--set", "host.local.ssh=-oX", "--set:1:16"),
        ("--set", "host.local.ip=not an ip", "--set:1:15"),
        // an unknown benchmark is blamed, not the setting after it
        (
            "--set",
            "recstore-e2f.steps=20",
            "did you mean `recstore-e2e`?",
        ),
        ("--set", "recstore-e2f.steps=20", "unknown benchmark"),
        ("--set", "experiment.name=x", "own fields are edited in the"),
        ("--set", "=3", "this `--set` names no setting before `=`"),
        // the setting is found after its bench's name, not where its text first stands
        ("--set", "recstore-e2e.stepsx=1", "--set:1:14"),
    ];
    for (flag, arg, want) in refused {
        let bad = Test::new()
            .args(["plan", "experiments/day0.kdl", flag, arg])
            .run()
            .status(2);
        assert!(bad.stderr.contains(want), "{flag} {arg}: {}", bad.stderr);
    }
    // --only compares resolved values: settings as well as sweep axes
    let plan = plan_json(&[
        "experiments/day0.kdl",
        "--only",
        "embedding-dim=128",
        "--only",
        "lane=TorchRec-HBM",
    ]);
    assert_eq!(plan["points"].as_array().unwrap().len(), 3);
    let none = Test::new()
        .args(["plan", "experiments/day0.kdl", "--only", "batch-size=2048"])
        .run()
        .status(2);
    assert!(
        none.stderr
            .contains("no matrix point matches batch-size=2048"),
        "{}",
        none.stderr
    );
    // hosts too, through the same rules
    let plan = plan_json(&[
        "experiments/two-node.kdl",
        "--set",
        "host.node191.ip=10.0.9.9",
        "--only",
        "repeat=0",
    ]);
    assert!(plan["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["name"] == "node191" && h["ip"] == "10.0.9.9"));
    let bad = Test::new()
        .args([
            "plan",
            "experiments/two-node.kdl",
            "--set",
            "host.node190.ssh-port=15000",
        ])
        .run()
        .status(2);
    assert!(bad.stderr.contains("port-is-ssh-port"), "{}", bad.stderr);
    let bad = Test::new()
        .args([
            "plan",
            "experiments/two-node.kdl",
            "--set",
            "host.node19.ip=1",
        ])
        .run()
        .status(2);
    assert!(
        bad.stderr.contains("did you mean `node190`?"),
        "{}",
        bad.stderr
    );
    // An override that breaks a rule is caught by the rule.
    let bad = Test::new()
        .args(["plan", "experiments/day0.kdl", "--set", "capacity=10"])
        .run()
        .status(0);
    assert!(bad.stderr.contains("capacity-low"));
}

/// Each `printargs` call (local and remote) received the nasty value, 42 and the lane name as
/// three intact arguments; remote ones ran in the host's repo; nothing was executed.
fn assert_arguments_intact(dir: &Path, repo: &Path) {
    let lines = std::fs::read_to_string(dir.join("argv.jsonl")).unwrap();
    let nasty = "a b 'c' \"d\" $(touch PWNED) `touch PWNED2`; echo INJECTED\nsecond line 无预取";
    let mut seen = Vec::new();
    for l in lines.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let argv: Vec<&str> = v["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[1..], [nasty, "42", "空 格"], "argv of {}", argv[0]);
        if argv[0] == "remote" {
            assert_eq!(
                v["cwd"],
                repo.display().to_string(),
                "remote steps run in the host's repo"
            );
        }
        seen.push(argv[0].to_string());
    }
    seen.sort();
    assert_eq!(seen, ["local", "remote"]);
    for f in [dir.join("PWNED"), repo.join("PWNED"), dir.join("PWNED2")] {
        assert!(!f.exists(), "a value was executed: {}", f.display());
    }
}

/// Stand-in programs: `printargs` appends its argv as one JSON line; `ssh` runs the remote command
/// string with `bash -c`, exactly as sshd hands it to the login shell.
fn stand_ins(dir: &Path) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("argv.jsonl");
    std::fs::write(bin.join("printargs"), format!("#!/usr/bin/env python3\nimport json, sys, os\nwith open({:?}, 'a') as f:\n    f.write(json.dumps({{'argv': sys.argv[1:], 'cwd': os.getcwd()}}) + '\\n')\n", log.display().to_string())).unwrap();
    std::fs::write(bin.join("ssh"), "#!/usr/bin/env bash\n# stand-in: drop options, keep the last argument (the remote command)\nfor last; do :; done\nexec bash -c \"$last\"\n").unwrap();
    for f in ["printargs", "ssh"] {
        let p = bin.join(f);
        let mut perm = std::fs::metadata(&p).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&p, perm).unwrap();
    }
}

#[test]
fn every_argument_arrives_intact_locally_and_through_ssh_quoting() {
    let dir = tempfile::tempdir().unwrap();
    stand_ins(dir.path());
    let kdl = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/plan/quoting.kdl"
    ))
    .unwrap();
    let repo = dir.path().join("remote repo");
    std::fs::create_dir_all(&repo).unwrap();
    let kdl = kdl.replace(
        "repo=\"REPO\"",
        &format!("repo={:?}", repo.display().to_string()),
    );
    std::fs::write(dir.path().join("q.kdl"), kdl).unwrap();
    let out = Test::new()
        .dir(dir.path())
        .args(["plan", "q.kdl", "--format", "sh", "--output", "out"])
        .run()
        .status(0);
    let script = dir.path().join("commands.sh");
    std::fs::write(&script, &out.stdout).unwrap();
    let syntax = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    let path = format!(
        "{}:{}",
        dir.path().join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let ran = std::process::Command::new("bash")
        .arg(&script)
        .current_dir(dir.path())
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "script failed: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_arguments_intact(dir.path(), &repo);
    let logs = std::fs::read_dir(dir.path().join("out/logs"))
        .unwrap()
        .count();
    assert!(logs >= 2, "each step logs to out/logs");
}

#[test]
fn real_sshd_every_argument_arrives_intact_through_a_real_ssh_login() {
    let Some(sshd) = Sshd::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    stand_ins(dir.path());
    std::fs::remove_file(dir.path().join("bin/ssh")).unwrap();
    let printargs = dir.path().join("bin/printargs").display().to_string();
    let repo = dir.path().join("remote repo");
    std::fs::create_dir_all(&repo).unwrap();
    let kdl = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/plan/quoting.kdl"
    ))
    .unwrap()
    .replace(
        "host far ssh=\"fakehost\"",
        &format!("host far ssh=\"exprtest\" ssh-port={}", sshd.port),
    )
    .replace(
        "repo=\"REPO\"",
        &format!("repo={:?}", repo.display().to_string()),
    )
    .replace("printargs ", &format!("{printargs} "));
    std::fs::write(dir.path().join("q.kdl"), kdl).unwrap();
    let cfg = sshd.config.to_str().unwrap();
    let out = Test::new()
        .dir(dir.path())
        .env("EXPR_SSH_CONFIG", cfg)
        .args(["plan", "q.kdl", "--format", "sh", "--output", "out"])
        .run()
        .status(0);
    assert!(
        out.stdout.contains(&format!(
            "ssh -F {cfg} -p {} -o BatchMode=yes -o ConnectTimeout=10 exprtest",
            sshd.port
        )),
        "{}",
        out.stdout
    );
    let script = dir.path().join("commands.sh");
    std::fs::write(&script, &out.stdout).unwrap();
    let ran = std::process::Command::new("bash")
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "script failed: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_arguments_intact(dir.path(), &repo);
}

/// commands.sh that stops on a failure (a server that never says it is ready) stops what it
/// started first: before, `fail` exited and the server that came up ran on.
#[test]
fn commands_sh_stops_what_it_started_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!(
        "{}.{}",
        800 + std::process::id() % 97,
        std::process::id() % 1000
    );
    std::fs::write(
        dir.path().join("f.kdl"),
        format!(
            "experiment f\nbench b {{\n    serve up \"echo up; sleep {tag}\" ready-log=\"up\"\n    serve never \"sleep 1{tag}\" ready-log=\"ready\" ready-timeout=1\n    run \"true\"\n}}\n"
        ),
    )
    .unwrap();
    let out = Test::new()
        .dir(dir.path())
        .args(["plan", "f.kdl", "--format", "sh", "--output", "out"])
        .run()
        .status(0);
    std::fs::write(dir.path().join("c.sh"), &out.stdout).unwrap();
    let ran = std::process::Command::new("bash")
        .arg("c.sh")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!ran.status.success());
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains("not ready"),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    gone_within_5_s(&format!("^sleep 1?{tag}$"), "commands.sh left its servers");
}

/// `kdl` as `s.kdl` in `dir`, planned as commands.sh (`c.sh`) against the test sshd; its text.
fn commands_sh_of(dir: &Path, sshd: &Sshd, kdl: &str) -> String {
    std::fs::write(dir.join("s.kdl"), kdl).unwrap();
    let out = Test::new()
        .dir(dir)
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["plan", "s.kdl", "--format", "sh", "--output", "out"])
        .run()
        .status(0);
    std::fs::write(dir.join("c.sh"), &out.stdout).unwrap();
    out.stdout
}

#[test]
fn real_sshd_commands_sh_stops_a_remote_server_by_its_remote_group() {
    let Some(sshd) = Sshd::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    // a unique duration marks the remote server's process
    let marker = format!(
        "{}.{}",
        900 + std::process::id() % 97,
        std::process::id() % 1000
    );
    let kdl = format!(
        "experiment s\nhost far ssh=\"exprtest\" ssh-port={} ip=\"127.0.0.1\" repo={:?}\nbench b {{\n    serve srv \"echo up; sleep {marker}\" host=far ready-log=\"up\"\n    run \"true\" host=far\n}}\n",
        sshd.port,
        dir.path().display().to_string()
    );
    commands_sh_of(dir.path(), &sshd, &kdl);
    let ran = std::process::Command::new("bash")
        .arg("c.sh")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    gone_within_5_s(
        &format!("sleep {marker}"),
        "the remote server outlived commands.sh",
    );
}

/// Wait up to 5 s until no process's command line matches `pattern` (`pgrep -f`); else fail
/// with `what` and the pids left.
fn gone_within_5_s(pattern: &str, what: &str) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = std::process::Command::new("pgrep")
            .args(["-f", pattern])
            .output()
            .unwrap();
        if left.stdout.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < end,
            "{what}: {}",
            String::from_utf8_lossy(&left.stdout)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// commands.sh runs an ssh host's steps with their secrets as `expr run` does: read from the
/// script's environment and sent on the connection's stdin (ssh passes no environment, and a
/// command line is in `ps`), for a server and a client; before, the `export K="${K:?…}"` stood
/// inside the remote command and failed there. A secret not exported stops the step.
#[test]
fn real_sshd_commands_sh_sends_an_ssh_steps_secrets_on_its_stdin() {
    let Some(sshd) = Sshd::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        "experiment s\nhost far ssh=\"exprtest\" ssh-port={} ip=\"127.0.0.1\" repo={:?} {{\n    env API_TOKEN=\"in-the-file\"\n}}\nbench b {{\n    serve srv \"printf 'srv[%s]\\\\n' \\\"$API_TOKEN\\\"; echo up; sleep 30\" host=far ready-log=\"up\"\n    run \"printf 'run[%s]\\\\n' \\\"$API_TOKEN\\\"\" host=far\n}}\n",
        sshd.port,
        dir.path().display().to_string()
    );
    let script = commands_sh_of(dir.path(), &sshd, &kdl);
    assert!(!script.contains("in-the-file"), "{script}");
    let value = "it's \"a\" $HOME\nline two";
    let ran = std::process::Command::new("bash")
        .arg("c.sh")
        .env("API_TOKEN", value)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let logs = |prefix: &str| -> String {
        std::fs::read_dir(dir.path().join("out/logs"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .collect()
    };
    assert!(
        logs("srv").contains(&format!("srv[{value}]")),
        "{}",
        logs("srv")
    );
    assert!(
        logs("run1").contains(&format!("run[{value}]")),
        "{}",
        logs("run1")
    );
    // not exported: the step stops before ssh runs it
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let ran = std::process::Command::new("bash")
        .arg("c.sh")
        .env_remove("API_TOKEN")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!ran.status.success());
    assert!(
        logs("srv").contains("API_TOKEN: export API_TOKEN first"),
        "{}",
        logs("srv")
    );
}

/// `--set` values reach the command exactly as typed: before, `s=a b` ran with `a`, `s=a=b`
/// with `b` (the value was read as a KDL node); `--set n=1,1` is refused like `sweep n 1 1`;
/// `n=-1` and `n=1` get distinct run ids.
#[test]
fn set_values_arrive_as_typed_and_sweeps_are_checked_like_the_file() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("s.kdl");
    std::fs::write(
        &f,
        "experiment s\nhost local\nbench b {\n    param n 1\n    param s \"q\"\n    run \"echo v={{ n }} {{ s }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    repeat 1\n}\n",
    )
    .unwrap();
    let file = f.to_str().unwrap();
    for (typed, want) in [
        ("a b", "'a b'"),
        ("a;b", "'a;b'"),
        ("a=b", "a=b"),
        ("x//c", "x//c"),
        ("a{b}", "'a{b}'"),
        ("a /- b", "'a /- b'"),
        ("\"quoted\"", "quoted"),
        ("plain", "plain"),
    ] {
        let plan = plan_json(&[file, "--set", &format!("s={typed}")]);
        let cmd = plan["points"][0]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|s| s["shell"].as_str())
            .unwrap_or_default()
            .to_string();
        assert!(
            cmd.ends_with(&format!("echo v=1 {want}")),
            "--set s={typed}: {cmd}"
        );
    }
    let dup = Test::new()
        .args(["plan", file, "--set", "n=1,1"])
        .run()
        .status(2);
    assert!(dup.stderr.contains("`n` lists 1 twice"), "{}", dup.stderr);
    // an unknown key's help names the bench's own params
    let unknown = Test::new()
        .args(["plan", file, "--set", "zzzzzzz=1"])
        .run()
        .status(2);
    assert!(
        unknown
            .stderr
            .contains("are: `repeat`, `warmup`, `warmup-scope`, `shell`, `n`, `s`"),
        "{}",
        unknown.stderr
    );
    let plan = plan_json(&[file, "--set", "n=-1,1"]);
    let ids = run_ids(&plan);
    assert_eq!(ids, ["b_nm1_r0", "b_n1_r0"]);
}

#[test]
fn a_config_block_merges_into_the_generated_json_and_survives_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.kdl");
    std::fs::write(
        &file,
        r#"experiment c { description "config passthrough" }
recstore-e2e {
    lane RecStore-BRPC
    ps-num-threads 8
    config {
        cache_ps {
            optimizer { type "SGD"; learning_rate 0.5 }
            base_kv_config { value { type "SSD_VALUE_STORE" } }
        }
        cache_ps { base_kv_config { engine_type "KVEngineComposite" } }
        hierkv { enabled #true; "slot count" 1 2 3 }
        report_API #null
    }
}
"#,
    )
    .unwrap();
    let path = file.to_string_lossy().into_owned();
    let plan = plan_json(&[&path]);
    let cfg = steps(&plan)
        .into_iter()
        .find(|s| s["phase"] == "config")
        .expect("config step");
    let c: Value = serde_json::from_str(cfg["file"]["content"].as_str().unwrap()).unwrap();
    let kv = &c["cache_ps"]["base_kv_config"];
    // added keys, merged objects, an overridden fixed value; the generated siblings stay
    assert_eq!(
        c["cache_ps"]["optimizer"],
        json!({"type": "SGD", "learning_rate": 0.5})
    );
    assert_eq!(kv["value"]["type"], "SSD_VALUE_STORE");
    assert_eq!(kv["value"]["dram_allocator"]["type"], "PERSIST_LOOP_SLAB");
    assert_eq!(kv["engine_type"], "KVEngineComposite");
    assert_eq!(kv["index"]["type"], "DRAM_PET_HASH");
    assert_eq!(c["cache_ps"]["num_threads"], 8);
    assert_eq!(
        c["hierkv"],
        json!({"enabled": true, "slot count": [1, 2, 3]})
    );
    assert!(c["report_API"].is_null() && c.as_object().unwrap().contains_key("report_API"));

    // `check --resolved` prints the block back; the printed file plans the same config
    let resolved = Test::new()
        .args(["check", "--resolved", &path])
        .run()
        .status(0)
        .stdout;
    let again = dir.path().join("again.kdl");
    std::fs::write(&again, &resolved).unwrap();
    let plan2 = plan_json(&[&again.to_string_lossy()]);
    let cfg2 = steps(&plan2)
        .into_iter()
        .find(|s| s["phase"] == "config")
        .expect("config step");
    let c2: Value = serde_json::from_str(cfg2["file"]["content"].as_str().unwrap()).unwrap();
    // each plan is a run of its own: only the scratch's run tag may differ
    let same = |v: &Value| redact(&v.to_string());
    assert_eq!(same(&c), same(&c2), "resolved:\n{resolved}");
}

#[test]
fn a_step_on_a_slurm_node_is_planned_as_the_srun_line_the_run_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.kdl");
    std::fs::write(
        &file,
        "experiment s\nslurm cluster nodes=1 srun-args=\"--cpu-bind=none\"\nhost n0 slurm=\"cluster\" node=0\nbench b {\n    run \"echo it's on {{ hosts.n0.ip }}\" host=n0\n}\n",
    )
    .unwrap();
    let f = file.to_string_lossy().into_owned();
    let out = Test::new()
        .dir(dir.path())
        .args(["plan", &f])
        .run()
        .status(0);
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    let want = format!(
        "[launch] $ srun --jobid=slurm:cluster:job --overlap --job-name=run1-b_r0 --nodelist=slurm:cluster:0:node --nodes=1 --ntasks=1 --chdir={} --quiet --cpu-bind=none bash -c 'cd {} || exit 200; {{ echo \"$SLURM_JOB_ID.$SLURM_STEP_ID\" > \"${{EXPR_RESULT_DIR}}\"/runtime/slurm-steps/run1-b_r0-n0; }} 2>/dev/null; echo it'\\''s on '\\''slurm:cluster:0'\\'''\n",
        cwd.display(),
        cwd.display()
    );
    assert!(out.stdout.contains(&want), "{}", out.stdout);
    assert!(
        out.stdout.contains("until then `slurm:cluster:job`, `slurm:cluster:0:node` and `slurm:cluster:0` stand for its job, name and address"),
        "{}",
        out.stdout
    );
}

#[test]
fn commands_sh_on_slurm_nodes_leaves_what_stands_for_an_address_only_in_comments() {
    let dir = tempfile::tempdir().unwrap();
    // a RecStore run over two nodes: the servers' addresses are in the config file it writes
    std::fs::write(
        dir.path().join("r.kdl"),
        "experiment r\nslurm c nodes=2\nhost n0 slurm=\"c\" node=0\nhost n1 slurm=\"c\" node=1\nrecstore-e2e {\n    client host=n0 gpu=0 node-rank=0 nproc-per-node=1\n    client host=n1 gpu=0 node-rank=1 nproc-per-node=1\n    ps host=n0 port=15000 shard=0\n    ps host=n1 port=15001 shard=1\n    device \"cpu\"\n    runtime-dir \"/nfs/rt\"\n}\n",
    )
    .unwrap();
    let out = Test::new()
        .dir(dir.path())
        .args(["plan", "r.kdl", "--format", "sh", "--output", "out"])
        .run()
        .status(0);
    let script = out.stdout;
    let left: Vec<&str> = script
        .lines()
        .filter(|l| l.contains("slurm:c:") && !l.trim_start().starts_with('#'))
        .collect();
    assert!(left.is_empty(), "{left:#?}");
    // the config is written where the variables reach it, with both servers' addresses
    let config = script
        .split("> /nfs/rt/recstore_config.json")
        .next()
        .and_then(|s| s.rsplit("printf '%s\\n' ").next())
        .unwrap_or_else(|| panic!("{script}"));
    assert!(
        config.contains("'\"${IP_c_0}\"'") && config.contains("'\"${IP_c_1}\"'"),
        "{config}"
    );
    assert!(script.contains(
        "IP_c_1=$(srun --jobid=\"$JOB_c\" --overlap -N1 -n1 -w \"$NODE_c_1\" hostname -I"
    ));
    let syntax = std::process::Command::new("bash")
        .args(["-n", "-c", &script])
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    // an array's points are sbatch tasks, which commands.sh does not run: refused, and the
    // form that shows them named
    std::fs::write(
        dir.path().join("a.kdl"),
        "experiment a\nslurm arr nodes=1 mode=\"array\"\nhost n0 slurm=\"arr\" node=0\nbench b {\n    run \"hostname\" host=n0\n}\n",
    )
    .unwrap();
    let out = Test::new()
        .dir(dir.path())
        .args(["plan", "a.kdl", "--format", "sh"])
        .run()
        .status(2);
    assert!(
        out.stderr.contains("`arr` is an array (mode=\"array\"): its points run as the tasks of `sbatch --array`, which commands.sh does not do; `expr plan --format sbatch FILE`"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}

#[test]
fn set_switches_a_host_between_ssh_and_a_slurm_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sw.kdl");
    std::fs::write(
        &file,
        "experiment sw\nslurm cluster nodes=2 repo=\"/nfs/repo\"\nhost n0 ssh=\"gpu0\" ip=\"10.0.0.5\" repo=\"/data/repo\"\nbench b {\n    run \"hostname\" host=n0\n}\n",
    )
    .unwrap();
    let f = file.to_string_lossy().into_owned();
    // declared and no host on it: check and plan warn, until --set places a host
    let out = Test::new().args(["plan", &f]).run().status(0);
    assert!(
        out.stderr.contains("unused-slurm")
            && out
                .stderr
                .contains("no host is on the allocation `cluster`"),
        "{}",
        out.stderr
    );
    let out = Test::new()
        .args(["plan", &f, "--set", "host.n0.slurm=cluster"])
        .run()
        .status(0);
    assert!(!out.stderr.contains("unused-slurm"), "{}", out.stderr);
    let plan = plan_json(&[
        &f,
        "--set",
        "host.n0.slurm=cluster",
        "--set",
        "host.n0.node=1",
    ]);
    let n0 = plan["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "n0")
        .unwrap();
    assert_eq!(n0["slurm"]["alloc"], "cluster");
    assert_eq!(n0["slurm"]["node"], 1);
    assert_eq!(n0["ip"], "slurm:cluster:1");
    assert_eq!(n0["repo"], "/nfs/repo");
    // what cannot hold is refused, never ignored
    for (set, want) in [
        (
            vec!["--set", "host.n0.slurm=nope"],
            "no `slurm` allocation is named `nope`",
        ),
        (
            vec!["--set", "host.n0.node=1"],
            "host `n0` is not on a Slurm allocation",
        ),
        (
            vec!["--set", "host.n0.slurm=cluster", "--set", "host.n0.node=2"],
            "is node 2 of `cluster`, which has 2 node(s)",
        ),
        // a property neither hosts nor allocations have: named, under its place, the nearest
        (
            vec!["--set", "host.n0.sssh=x"],
            "hosts have no property `sssh`\n   ╭─[--set:1:9]",
        ),
        (vec!["--set", "host.n0.sssh=x"], "did you mean `ssh`?"),
        (
            vec!["--set", "slurm.cluster.nods=1"],
            "`slurm` allocations have no property `nods`\n   ╭─[--set:1:15]",
        ),
        (
            vec!["--set", "slurm.cluster.nods=1"],
            "did you mean `nodes`?",
        ),
        // nothing close: every name, said in the plural
        (
            vec!["--set", "host.qqqqqqqq.ip=1"],
            "help: the hosts are: `n0`, `local`",
        ),
        (
            vec!["--set", "host.n0.slurm=qqqqqqqq"],
            "help: the allocations are: `cluster`",
        ),
    ] {
        let out = Test::new().args(["plan", &f]).args(&set).run().status(2);
        assert!(out.stderr.contains(want), "{set:?}: {}", out.stderr);
    }
}

#[test]
fn set_places_the_implicit_local_host_on_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("i.kdl");
    std::fs::write(
        &file,
        "experiment i\nslurm cluster nodes=1\nbench b {\n    run \"hostname\"\n}\n",
    )
    .unwrap();
    let f = file.to_string_lossy().into_owned();
    // no `host` in the file: the warning's own advice works on the host steps default to
    let out = Test::new().args(["plan", &f]).run().status(0);
    assert!(out.stderr.contains("unused-slurm"), "{}", out.stderr);
    let plan = plan_json(&[&f, "--set", "host.local.slurm=cluster"]);
    let local = plan["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "local")
        .unwrap();
    assert_eq!(local["slurm"]["alloc"], "cluster", "{plan}");
    let out = Test::new()
        .args(["plan", &f, "--set", "host.local.slurm=cluster"])
        .run()
        .status(0);
    assert!(!out.stderr.contains("unused-slurm"), "{}", out.stderr);
}

/// `warmup 1` with `repeat 3` warms each lane and sweep point once, before its first repeat, as
/// hyperfine warms once per command (it ran a warmup before every repeat); `warmup-scope
/// "point"` keeps the warmup before every repeat.
#[test]
fn warmup_runs_once_per_group_unless_asked_per_point() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.kdl");
    let kdl = |scope: &str| {
        format!("experiment w\nbench b {{\n    run \"echo {{{{ n }}}}\"\n    sweep n 1 2\n    warmup 1\n{scope}    repeat 3\n}}\n")
    };
    let warmups = |text: &str| -> Vec<String> {
        std::fs::write(&file, text).unwrap();
        let plan = plan_json(&[&file.to_string_lossy()]);
        plan["points"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| {
                p["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|s| s["phase"] == "warmup")
            })
            .map(|p| p["run_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(warmups(&kdl("")), ["b_n1_r0", "b_n2_r0"]);
    assert_eq!(warmups(&kdl("    warmup-scope \"point\"\n")).len(), 6);
}

/// Two lanes, a sweep of two values, two repeats, in the given order.
fn ordered(order: &str) -> String {
    format!(
        "experiment ord {{\n    {order}\n}}\nhost local\nbench b {{\n    param n 1\n    param slow 1\n    run \"echo v={{{{ n * slow }}}}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane A slow=1\n    lane B slow=2\n    sweep n 1 2\n    repeat 2\n}}\n"
    )
}

fn order_of(dir: &Path, file: &str) -> Vec<String> {
    let out = Test::new()
        .dir(dir)
        .args(["plan", "--format", "json", file])
        .run()
        .status(0);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            assert_eq!(p["index"], i, "each point's index follows its place");
            p["run_id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// Issue 40: `order "interleave"` runs repeat 0 of every sweep point and lane, then repeat 1:
/// lanes alternate (A B A B) and a sweep point's repeats are spread over the campaign, where the
/// matrix's order runs them together; `order "shuffle" seed=N` is the same order for the same seed,
/// a group's repeats in their own order (its warmup first); the run keeps the order (journal, commands.sh) and `check --resolved` writes it back.
#[test]
fn order_interleave_alternates_lanes_and_shuffle_is_seeded_and_recorded() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("lane.kdl"), ordered("description \"x\"")).unwrap();
    std::fs::write(p.join("inter.kdl"), ordered("order \"interleave\"")).unwrap();
    std::fs::write(p.join("s3.kdl"), ordered("order \"shuffle\" seed=3")).unwrap();
    std::fs::write(p.join("s4.kdl"), ordered("order \"shuffle\" seed=4")).unwrap();
    assert_eq!(
        order_of(p, "lane.kdl"),
        ["a_n1_r0", "b_n1_r0", "a_n1_r1", "b_n1_r1", "a_n2_r0", "b_n2_r0", "a_n2_r1", "b_n2_r1"]
    );
    let inter = order_of(p, "inter.kdl");
    assert_eq!(
        inter,
        ["a_n1_r0", "b_n1_r0", "a_n2_r0", "b_n2_r0", "a_n1_r1", "b_n1_r1", "a_n2_r1", "b_n2_r1"]
    );
    let s3 = order_of(p, "s3.kdl");
    assert_eq!(s3, order_of(p, "s3.kdl"), "the same seed, the same order");
    assert_ne!(s3, order_of(p, "s4.kdl"));
    // a group's repeats keep their own order in the places the shuffle gave the group: its
    // warmup, planned with repeat 0, runs first (helper 48: repeats 2 and 1 ran cold, then
    // the warmup and repeat 0)
    for order in [&s3, &order_of(p, "s4.kdl")] {
        for group in ["a_n1", "b_n1", "a_n2", "b_n2"] {
            let at = |r: u32| order.iter().position(|id| *id == format!("{group}_r{r}"));
            assert!(at(0).unwrap() < at(1).unwrap(), "{group}: {order:?}");
        }
    }
    let (mut sorted, mut all) = (s3.clone(), order_of(p, "lane.kdl"));
    sorted.sort();
    all.sort();
    assert_eq!(sorted, all, "every point once");
    // the resolved experiment keeps the order, and plans the same points
    let r = Test::new()
        .dir(p)
        .args(["check", "--resolved", "s3.kdl"])
        .run()
        .status(0);
    assert!(
        r.stdout.contains("    order \"shuffle\" seed=3\n"),
        "{}",
        r.stdout
    );
    std::fs::write(p.join("again.kdl"), &r.stdout).unwrap();
    assert_eq!(order_of(p, "again.kdl"), s3);
    // a run goes in that order: its journal's points and commands.sh
    Test::new()
        .dir(p)
        .args(["run", "inter.kdl", "--output", "r", "-q"])
        .run()
        .status(0);
    let ran: Vec<String> = common::journal(&p.join("r"))
        .iter()
        .filter(|e| e["event"] == "point")
        .map(|e| e["run_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ran, inter);
    let sh = std::fs::read_to_string(p.join("r/commands.sh")).unwrap();
    let at = |id: &str| sh.find(&format!(": {id} (")).unwrap();
    assert!(
        at("b_n1_r0") < at("a_n2_r0") && at("b_n2_r0") < at("a_n1_r1"),
        "{sh}"
    );
    // a wrong order is a located diagnostic with the choices
    std::fs::write(p.join("bad.kdl"), ordered("order \"random\"")).unwrap();
    let bad = Test::new()
        .dir(p)
        .args(["check", "bad.kdl"])
        .run()
        .status(2);
    assert!(
        bad.stderr.contains("matrix")
            && bad.stderr.contains("interleave")
            && bad.stderr.contains("bad.kdl:2:"),
        "{}",
        bad.stderr
    );
}

/// A step given GPUs by index runs with CUDA numbering them as nvidia-smi, NVML and the
/// telemetry samplers do (by PCI bus; CUDA's own default is fastest first); a host's own
/// `CUDA_DEVICE_ORDER` stays.
#[test]
fn gpu_steps_number_gpus_by_pci_bus_unless_the_host_says_otherwise() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let exp = |host_env: &str| {
        format!("experiment g\nhost local gpus=2{host_env}\nbench b {{\n    run \"true\" gpus=1\n    repeat 1\n}}\n")
    };
    std::fs::write(p.join("a.kdl"), exp("")).unwrap();
    std::fs::write(
        p.join("b.kdl"),
        exp(" {\n    env CUDA_DEVICE_ORDER=FASTEST_FIRST\n}"),
    )
    .unwrap();
    let plan = |f: &str, fmt: &str| {
        Test::new()
            .dir(p)
            .args(["plan", f, "--format", fmt])
            .run()
            .status(0)
            .stdout
    };
    for fmt in ["text", "sh"] {
        let a = plan("a.kdl", fmt);
        assert!(
            a.contains("CUDA_VISIBLE_DEVICES=0 CUDA_DEVICE_ORDER=PCI_BUS_ID;"),
            "{a}"
        );
        let b = plan("b.kdl", fmt);
        assert!(b.contains("CUDA_DEVICE_ORDER=FASTEST_FIRST"), "{b}");
        assert!(!b.contains("PCI_BUS_ID"), "{b}");
    }
}

/// Issue 40: a pool's points are dealt by their place in the whole matrix — the same member under
/// `--only` (a resumed filtered run plans what the full one did) — each lane moving on one member
/// at each repeat and sweep point (a lane is not one host's), only points whose own steps run on the
/// pool placed; `{{ hosts.POOL.ip }}` is the member's address, and each member warms up.
#[test]
fn pool_points_keep_their_member_under_only_lanes_rotate_and_each_member_warms_up() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("pool.kdl");
    std::fs::write(
        &f,
        "experiment p\nhost a ssh=\"local\" ip=\"10.0.0.1\" repo=\"/tmp\"\nhost b ssh=\"local\" ip=\"10.0.0.2\" repo=\"/tmp\"\nhost fixed ssh=\"local\" ip=\"10.0.0.9\" repo=\"/tmp\"\npool workers \"a\" \"b\"\nbench t {\n    param n 1\n    run \"echo {{ n }} at {{ hosts.workers.ip }}\" host=workers lanes=\"x,w\"\n    run \"echo {{ n }}\" host=fixed lanes=\"y\"\n    warmup 1\n    repeat 2\n    lane x\n    lane w\n    lane y\n    sweep n 1 2\n}\n",
    )
    .unwrap();
    let file = f.to_string_lossy().to_string();
    let full = plan_json(&[&file]);
    let placed = |plan: &Value| -> std::collections::BTreeMap<String, String> {
        plan["placed"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect()
    };
    let all = placed(&full);
    // lane y's steps run on `fixed`: never placed
    assert_eq!(all.len(), 8, "{all:?}");
    assert!(all.keys().all(|k| !k.starts_with("y_")), "{all:?}");
    // at one sweep point and repeat the two lanes are on different members; each lane's next
    // repeat or sweep point moves on one: every lane has two points on each member
    for (n, r) in [(1, 0), (1, 1), (2, 0), (2, 1)] {
        assert_ne!(all[&format!("x_n{n}_r{r}")], all[&format!("w_n{n}_r{r}")]);
    }
    assert_eq!(all["x_n1_r0"], "a");
    assert_ne!(all["x_n1_r0"], all["x_n1_r1"]);
    assert_ne!(all["x_n1_r1"], all["x_n2_r0"]);
    for lane in ["x", "w"] {
        let on_a = all
            .iter()
            .filter(|(k, v)| k.starts_with(&format!("{lane}_")) && *v == "a")
            .count();
        assert_eq!(on_a, 2, "lane {lane}: {all:?}");
    }
    // a filtered plan places its points where the full one did
    for only in ["lane=w", "n=2", "repeat=1"] {
        let some = placed(&plan_json(&[&file, "--only", only]));
        assert!(!some.is_empty());
        for (k, v) in &some {
            assert_eq!(&all[k], v, "--only {only}: {k}");
        }
    }
    // the pool's address is the member's; each member warms up before its first point of a
    // lane and sweep point, the fixed host once per group
    let ip = |m: &str| if m == "a" { "10.0.0.1" } else { "10.0.0.2" };
    for p in full["points"].as_array().unwrap() {
        let id = p["run_id"].as_str().unwrap();
        let steps = p["steps"].as_array().unwrap();
        let warm = steps.iter().any(|s| s["phase"] == "warmup");
        if let Some(m) = all.get(id) {
            let launch = steps.iter().find(|s| s["phase"] == "launch").unwrap();
            assert_eq!(launch["host"], m.as_str(), "{id}");
            assert!(
                launch.to_string().contains(&format!("at {}", ip(m))),
                "{id}: {launch}"
            );
            assert!(warm, "{id} is its group's first point on {m}");
        } else {
            assert_eq!(warm, id.ends_with("_r0"), "{id}");
        }
    }
}

/// The journal records the directory a step ran in beside its command, as the plan's and
/// commands.sh's `cd DIR || exit 200; COMMAND` line has both: the command alone did not say
/// where it ran.
#[test]
fn the_journal_says_where_a_step_ran_as_the_plan_does() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::create_dir(p.join("adir")).unwrap();
    std::fs::write(
        p.join("e.kdl"),
        "experiment cw\nbench b {\n    run \"pwd; echo v=1\" cwd=\"adir\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let plan = Test::new()
        .dir(p)
        .args(["plan", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    assert!(
        plan.stdout
            .contains("$ cd ./adir || exit 200; pwd; echo v=1"),
        "{}",
        plan.stdout
    );
    Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "out", "-q"])
        .run()
        .status(0);
    let step = common::journal(&p.join("out"))
        .into_iter()
        .find(|e| e["event"] == "step" && e["step"] == "run1-b_r0")
        .unwrap();
    assert_eq!(
        (step["cwd"].as_str(), step["command"].as_str()),
        (Some("./adir"), Some("pwd; echo v=1")),
        "{step}"
    );
    let log = std::fs::read_to_string(p.join("out/logs/run1-b_r0-local.log")).unwrap();
    assert!(
        log.starts_with(&format!("{}/adir\n", p.canonicalize().unwrap().display())),
        "{log}"
    );
}

/// `f.kdl` in `p` planned as commands.sh (`c.sh`, output `out`) and run by bash there.
fn planned_sh_run(p: &Path) -> std::process::Output {
    let out = Test::new()
        .dir(p)
        .args(["plan", "f.kdl", "--format", "sh", "--output", "out"])
        .run()
        .status(0);
    std::fs::write(p.join("c.sh"), &out.stdout).unwrap();
    std::process::Command::new("bash")
        .arg("c.sh")
        .current_dir(p)
        .output()
        .unwrap()
}

/// commands.sh runs the points as `expr run` does when a server fails: a server that is not
/// ready fails its point (its servers stopped) and the next point runs; a server that ends
/// before its point does fails the point. Both runs end with exit 3 and the same points failed.
#[test]
fn commands_sh_fails_a_point_whose_server_is_not_ready_or_dies_and_goes_on_as_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let tag = format!(
        "{}.{}",
        700 + std::process::id() % 97,
        std::process::id() % 1000
    );
    // repeat 0: never ready; repeat 1: ready and alive; repeat 2: ready, then gone
    std::fs::write(
        p.join("f.kdl"),
        format!(
            "experiment f\nbench b {{\n    serve srv \"if [ {{{{ repeat }}}} = 0 ]; then sleep {tag}; elif [ {{{{ repeat }}}} = 1 ]; then echo up; sleep {tag}; else echo up; fi\" ready-log=\"up\" ready-timeout=2\n    run \"sleep 0.5; echo v={{{{ repeat }}}}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    repeat 3\n}}\n"
        ),
    )
    .unwrap();
    let ran = Test::new()
        .dir(p)
        .args(["run", "f.kdl", "--output", "run", "-q"])
        .run()
        .status(3);
    let statuses = |dir: &str| -> Vec<String> {
        common::csv_by_name(&p.join(dir).join("manifest.csv"))
            .into_iter()
            .map(|r| format!("{} {}", r["run_id"], r["status"]))
            .collect()
    };
    assert_eq!(
        statuses("run"),
        ["b_r0 failed", "b_r1 ok", "b_r2 failed"],
        "{}",
        ran.stderr
    );
    let sh = planned_sh_run(p);
    let err = String::from_utf8_lossy(&sh.stderr);
    assert_eq!(sh.status.code(), Some(3), "{err}");
    assert!(
        err.contains("expr: srv-b_r0 not ready; see out/logs/srv-b_r0-local.log")
            && err.contains("expr: srv-b_r2 ended before its point's clients did")
            && !err.contains("srv-b_r1"),
        "{err}"
    );
    // the points after the one whose server was not ready ran
    for r in ["b_r1", "b_r2"] {
        let log = std::fs::read_to_string(p.join(format!("out/logs/run1-{r}-local.log"))).unwrap();
        assert_eq!(log, format!("v={}\n", &r[3..]), "{r}");
    }
    assert!(!p.join("out/logs/run1-b_r0-local.log").exists());
    gone_within_5_s(&format!("^sleep {tag}$"), "commands.sh left a server");
}

/// commands.sh ends a point whose prepare step fails, as `expr run` does (its run and cleanup
/// ran there, against a state the prepare did not make), and a step that ignores TERM past its
/// timeout is killed after the grace (it ran to its end).
#[test]
fn commands_sh_ends_a_point_whose_prepare_fails_and_kills_a_step_past_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(
        p.join("f.kdl"),
        "experiment f\nbench b {\n    param fail 0\n    prepare \"echo prep; exit {{ fail }}\"\n    run \"trap '' TERM; echo start; sleep 8; echo end > {{ outdir }}/ran.txt\" timeout=1\n    cleanup \"echo cleanup > {{ outdir }}/cleaned.txt\"\n    lane bad fail=4\n    lane good\n}\n",
    )
    .unwrap();
    let out = Test::new()
        .dir(p)
        .args(["plan", "f.kdl", "--format", "sh", "--output", "out"])
        .run();
    // `--grace` is `run`'s: the plan's script takes the default; set it here as a run would
    let script = out.status(0).stdout.replace("\nGRACE=5\n", "\nGRACE=1\n");
    std::fs::write(p.join("c.sh"), script).unwrap();
    let t = std::time::Instant::now();
    let sh = std::process::Command::new("bash")
        .arg("c.sh")
        .current_dir(p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&sh.stderr);
    assert_eq!(sh.status.code(), Some(3), "{err}");
    assert!(err.contains("prepare1-bad_r0 failed"), "{err}");
    // the bad lane's point ran nothing after its prepare
    assert!(!p.join("out/logs/run1-bad_r0-local.log").exists(), "{err}");
    assert!(!p.join("out/outputs/bad_r0/cleaned.txt").exists());
    // the good lane's run was killed 1 s after its 1 s timeout, not at its end (8 s)
    assert!(!p.join("out/outputs/good_r0/ran.txt").exists());
    assert!(p.join("out/outputs/good_r0/cleaned.txt").exists());
    assert!(
        t.elapsed() < std::time::Duration::from_secs(6),
        "{:?}",
        t.elapsed()
    );
}

/// A server's port that another process already answers on is not this server ready: commands.sh
/// fails the point before starting it (its client ran against the other process, exit 0), as
/// `expr run` refuses the port at preflight.
#[test]
fn commands_sh_does_not_take_another_processs_port_for_its_server_ready() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    std::fs::write(
        p.join("f.kdl"),
        format!("experiment f\nbench b {{\n    serve srv \"python3 -m http.server {port} --bind 127.0.0.1\" port={port}\n    run \"echo ran > {{{{ outdir }}}}/ran.txt\"\n}}\n"),
    )
    .unwrap();
    let sh = planned_sh_run(p);
    let err = String::from_utf8_lossy(&sh.stderr);
    assert_eq!(sh.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "expr: 127.0.0.1:{port} answers before srv-b_r0 started: another process holds it"
        )),
        "{err}"
    );
    assert!(!p.join("out/outputs/b_r0/ran.txt").exists());
    drop(held);
}

/// commands.sh's clock for its ready deadlines: milliseconds from bash 5's `EPOCHREALTIME`, and
/// where a bash has none (bash 4, on older cluster nodes) whole seconds, not an unbound-variable
/// error under `set -u` (or a deadline that never comes).
#[test]
fn commands_sh_keeps_time_with_or_without_epochrealtime() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(
        p.join("f.kdl"),
        "experiment f\nbench b {\n    serve srv \"echo up; sleep 5\" ready-log=\"up\"\n    run \"true\"\n}\n",
    )
    .unwrap();
    let out = Test::new()
        .dir(p)
        .args(["plan", "f.kdl", "--format", "sh", "--output", "out"])
        .run()
        .status(0);
    let start = out
        .stdout
        .find("now_ms() {")
        .expect("now_ms in commands.sh");
    let end = start + out.stdout[start..].find("\n}\n").unwrap() + 3;
    let f = &out.stdout[start..end];
    let run = |prelude: &str| {
        let o = std::process::Command::new("bash")
            .args([
                "-c",
                &format!(
                    "set -u\n{f}{prelude}\na=$(now_ms); sleep 0.3; b=$(now_ms); echo $((b - a))"
                ),
            ])
            .output()
            .unwrap();
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse::<i64>()
            .unwrap()
    };
    let ms = run("");
    assert!((250..2000).contains(&ms), "{ms} ms for 0.3 s");
    // whole seconds: 0 or 1000 for 0.3 s
    let s = run("unset EPOCHREALTIME");
    assert!(s == 0 || s == 1000, "{s}");
}

/// An adaptive `repeat` may stop before `max`: the plan and commands.sh say which repeats run
/// only while the stopping rule is unmet (those from `min` on), and no other.
#[test]
fn the_repeats_an_adaptive_bench_may_skip_are_marked_in_the_plan_and_commands_sh() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("ad.kdl");
    std::fs::write(
        &f,
        "experiment ad\nbench b {\n    repeat min=2 max=4 until-cv=5\n    run \"echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\nbench c {\n    repeat 2\n    run \"echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let mark =
        "# adaptive: `expr run` runs it only while its group has not met until-cv=5 (min=2 max=4)";
    for format in ["text", "sh"] {
        let out = Test::new()
            .args(["plan", "--format", format, "--output", "o"])
            .arg_path(&f)
            .run()
            .status(0)
            .stdout;
        // the line under each point's heading, or none
        let marked: Vec<&str> = out
            .split(if format == "sh" {
                "\n# point "
            } else {
                "\n## point "
            })
            .skip(1)
            .filter(|p| p.lines().nth(1).is_some_and(|l| l.starts_with(mark)))
            .map(|p| p.split([':', ' ']).nth(2).unwrap_or(""))
            .collect();
        assert_eq!(marked, ["b_r2", "b_r3"], "{format}:\n{out}");
    }
}

/// A template whose one expression builds gigabytes (a `replace` of every gap by a 100k-byte
/// value, here only with the point's values) is stopped at the memory cap with a message that
/// quotes it, exit 2: not the machine's memory taken, nor the OOM killer's doing.
#[test]
fn a_template_that_would_take_gigabytes_is_stopped_at_the_cap_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("big.kdl");
    // `check`'s trial render gives `n` the sample "0" (a string: `*` fails there and says
    // nothing); the plan renders it with 100000
    std::fs::write(
        &f,
        "experiment big\nbench b {\n    sweep n 100000\n    run \"echo {{ (lane * n) | replace('', lane * n) }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let out = Test::new()
        .args(["plan", "--output", "o"])
        .arg_path(&f)
        .env("RUST_BACKTRACE", "0")
        .run()
        .status(2);
    assert!(
        out.stderr.contains("error: rendering the template `echo {{ (lane * n) | replace('', lane * n) }}` needs more than 4 GiB of memory: expr stopped it"),
        "{}",
        out.stderr
    );
}

/// A collect step pulls from its host but runs here, in commands.sh as in `expr run` and the
/// plan's text (commands.sh ran the `rsync host:… dir/` on the host itself, over ssh).
#[test]
fn commands_sh_runs_a_collect_step_here_as_the_run_does() {
    let dir = tempfile::tempdir().unwrap();
    Test::new()
        .dir(dir.path())
        .args(["init", "dataset-rt", "d.kdl"])
        .run()
        .status(0);
    let sh = Test::new()
        .dir(dir.path())
        .args(["plan", "--format", "sh", "d.kdl", "--output", "o"])
        .run()
        .status(0)
        .stdout;
    let lines: Vec<&str> = sh.lines().filter(|l| l.contains("rsync")).collect();
    assert!(!lines.is_empty(), "{sh}");
    for l in lines {
        assert!(
            l.starts_with("timeout -k \"$GRACE\" 600 bash -c 'rsync -a -e "),
            "{l}"
        );
    }
}

/// `--set key=a,b` sweeps; a value in double quotes is one value, its commas and all (on a
/// swept text setting the quotes went into the command, and the value was split in two).
#[test]
fn a_quoted_set_value_with_a_comma_is_one_sweep_value() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("w.kdl"),
        "experiment w\nbench w {\n    param msg \"hello\"\n    run \"echo msg={{ msg }}\"\n    collect \"regex\" pattern=\"msg=([0-9.]+)\"\n    sweep msg \"a\" \"b c\"\n}\n",
    )
    .unwrap();
    let plan = |set: &str| {
        let r = Test::new()
            .dir(d.path())
            .args(["plan", "w.kdl", "--set", set])
            .run()
            .status(0);
        r.stdout
            .lines()
            .filter_map(|l| l.trim().strip_prefix("[launch] $ "))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(plan(r#"msg="a,b""#), ["echo msg=a,b"]);
    assert_eq!(plan(r#"msg="a,b",c"#), ["echo msg=a,b", "echo msg=c"]);
    assert_eq!(
        plan(r#"msg="x\",y",z"#),
        [r#"echo msg='x",y'"#, "echo msg=z"]
    );
    assert_eq!(plan("msg=p,q"), ["echo msg=p", "echo msg=q"]);
}

/// `--set` of a number too large for 64 bits is refused (it read as infinity and reached the
/// command as `inf`), and `#nan` listed twice is a value listed twice.
#[test]
fn a_set_number_out_of_range_or_a_nan_twice_is_refused() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("f.kdl"),
        "experiment f\nbench b {\n    param f 1.5\n    run \"echo v=1 f={{ f }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let plan = |set: &str| {
        Test::new()
            .dir(d.path())
            .args(["plan", "f.kdl", "--set", set])
            .run()
            .status(2)
            .stderr
    };
    let e = plan("f=1e400");
    assert!(e.contains("--set `f`: 1e400 is out of range"), "{e}");
    let e = plan("f=#nan,#nan,1");
    assert!(e.contains("`f` lists #nan twice"), "{e}");
    // too small: it would read as 0
    let e = plan("f=1e-400");
    assert!(e.contains("--set `f`: 1e-400 is out of range"), "{e}");
    assert!(e.contains("this one would read as 0"), "{e}");
    // an integer beyond 64 bits is out of range, not "the string"
    let e = plan("f=99999999999999999999");
    assert!(e.contains("99999999999999999999 is out of range"), "{e}");
    assert!(!e.contains("string"), "{e}");
    // a quote left open: where the value ends would be a guess
    let e = plan("f=1,\"2");
    assert!(e.contains("--set `f`: a quote is not closed"), "{e}");
    // a number that is 0 as typed, or merely small, is taken
    for ok in ["f=0e-999", "f=1e-300"] {
        Test::new()
            .dir(d.path())
            .args(["plan", "f.kdl", "--set", ok])
            .run()
            .status(0);
    }
}

/// `--only` of one key twice selects either value (it asked for both at once and matched
/// nothing); keys together narrow.
#[test]
fn only_with_one_key_twice_selects_either_value() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("o.kdl"),
        "experiment o\nbench w {\n    param n 3\n    run \"echo val={{ n }} {{ lane }}\"\n    collect \"regex\" pattern=\"val=([0-9.]+)\"\n    sweep n 1 2 3\n    lane L1\n    lane L2\n}\n",
    )
    .unwrap();
    let plan = |only: &[&str]| {
        let mut args = vec!["plan", "o.kdl"];
        for o in only {
            args.extend(["--only", o]);
        }
        let r = Test::new().dir(d.path()).args(args).run().status(0);
        r.stdout
            .lines()
            .filter_map(|l| l.trim().strip_prefix("[launch] $ "))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        plan(&["n=1", "n=3"]),
        [
            "echo val=1 L1",
            "echo val=1 L2",
            "echo val=3 L1",
            "echo val=3 L2"
        ]
    );
    assert_eq!(
        plan(&["n=1", "lane=L2", "n=3"]),
        ["echo val=1 L2", "echo val=3 L2"]
    );
    // an alternative that no point has is a typo, not a narrower selection: refused, with what
    // the key takes, though its sibling matches
    let e = Test::new()
        .dir(d.path())
        .args(["plan", "o.kdl", "--only", "n=1", "--only", "n=7"])
        .run()
        .status(2)
        .stderr;
    assert!(e.contains("error: `n=7` matches no matrix point"), "{e}");
    assert!(e.contains("`n` takes `1`, `2`, `3`"), "{e}");
    assert!(!e.contains("`n=1` match"), "{e}");
}

/// The text plan's point header shows a value's newline as `\n`, as commands.sh's comments
/// do: a raw one started lines of its own that read as the plan's (`# x`, a command).
#[test]
fn a_newline_in_a_value_stays_inside_the_point_header() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("n.kdl"),
        "experiment n\nbench b {\n    sweep q \"a\\n# x\\ntouch PW\" \"b\"\n    run \"echo {{ q }}; echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let out = Test::new()
        .dir(d.path())
        .args(["plan", "n.kdl"])
        .run()
        .status(0)
        .stdout;
    assert!(out.contains("q=a\\n# x\\ntouch PW repeat=0"), "{out}");
    assert!(out.contains("sweep q = a\\n# x\\ntouch PW, b"), "{out}");
    assert!(out.contains("sweep q: a\\n# x\\ntouch PW, b"), "{out}");
    // the one place it stands across lines is the command, inside its quotes
    assert_eq!(out.matches("\n# x\n").count(), 1, "{out}");
    assert!(out.contains("echo 'a\n# x\ntouch PW'; echo v=1"), "{out}");
}

/// A secret's value given to another setting with `--set` is warned of as one written in the
/// file is (`secret-elsewhere`), and the warning's excerpt masks it.
#[test]
fn a_secrets_value_given_by_set_is_warned_of_and_masked_in_the_excerpt() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("s.kdl"),
        "experiment s\nhost local {\n    env DB_PASSWORD=\"pw-SECRET456\"\n}\nbench b {\n    param p \"v\"\n    run \"echo {{ p }}; echo val=1\"\n    collect \"regex\" pattern=\"val=([0-9.]+)\"\n}\n",
    )
    .unwrap();
    for set in ["p=pw-SECRET456", "p=x,pw-SECRET456"] {
        let r = Test::new()
            .dir(d.path())
            .args(["plan", "s.kdl", "--set", set])
            .run()
            .status(0);
        assert!(
            r.stderr
                .contains("`--set p` gives the value of the secret `DB_PASSWORD`"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains("SECRET456"), "{}", r.stderr);
    }
    // another value: no warning
    let r = Test::new()
        .dir(d.path())
        .args(["plan", "s.kdl", "--set", "p=plain"])
        .run()
        .status(0);
    assert!(!r.stderr.contains("secret"), "{}", r.stderr);
}

/// `--set port=…` moves the server's port in its command, not `port=` (a number): `plan` (and
/// `run`) say so before anything runs; the file as written says nothing.
#[test]
fn a_set_that_moves_the_servers_port_but_not_its_readiness_is_said() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment e\nhost local\nbench b {\n    param port 18080\n    serve s \"python3 -m http.server {{ port }}\" port=18080\n    run \"true\"\n}\n",
    )
    .unwrap();
    let moved = Test::new()
        .dir(d.path())
        .args(["plan", "e.kdl", "--set", "port=18090"])
        .run()
        .status(0);
    assert!(
        moved.stderr.contains(
            "this server's command names port 18090 at point b_r0, but its readiness waits on"
        ) && moved.stdout.contains("ready: tcp 127.0.0.1:18080"),
        "{}",
        moved.stderr
    );
    let as_written = Test::new()
        .dir(d.path())
        .args(["plan", "e.kdl"])
        .run()
        .status(0);
    assert!(
        !as_written.stderr.contains("readiness waits on"),
        "{}",
        as_written.stderr
    );
}

/// deployment.md says how a host on a Slurm node is reached: through `srun` on its node, not
/// "runs here" (helper 50).
#[test]
fn deployment_md_says_a_slurm_hosts_steps_go_through_srun() {
    let out = Test::new()
        .args([
            "plan",
            "examples/quickstart.kdl",
            "--set",
            "slurm.test.nodes=1",
            "--set",
            "host.local.slurm=test",
        ])
        .run()
        .status(0);
    assert!(
        out.stdout
            .contains("  - name=local, srun on node 0 of allocation `test`, ip=slurm:test:0"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("name=local, runs here"),
        "{}",
        out.stdout
    );
}

/// commands.sh runs no command whose argument a Ctrl-C can cut short: a file's directory is
/// written into the script (a killed `$(dirname …)` made `mkdir ''` complain), and the count of
/// an allocation's nodes is assigned before it is tested (a killed count made `[` complain),
/// so that an interrupt ends it with its own message only.
#[test]
fn commands_sh_computes_no_argument_an_interrupt_could_cut_short() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment q\nslurm cluster nodes=1\nhost n0 slurm=\"cluster\" node=0\nbench b {\n    run \"true\" host=n0\n}\n",
    )
    .unwrap();
    let out = Test::new()
        .dir(d.path())
        .args(["plan", "e.kdl", "--format", "sh", "--output", "o/p"])
        .run()
        .status(0);
    let sh = &out.stdout;
    assert!(!sh.contains("$(dirname"), "{sh}");
    assert!(sh.contains("\nmkdir -p o/p\n"), "{sh}");
    assert!(
        sh.contains("\nhave=$(printf '%s\\n' \"$nodes\" | grep -c .)\n[ \"$have\" -ge 1 ]"),
        "{sh}"
    );
}
