//! Reports on result directories made by real runs of a generator with known numbers.

mod common;

use std::path::Path;

use common::Test;

const GEN: &str = r#"import argparse, csv
p = argparse.ArgumentParser()
p.add_argument("--rate", type=float, required=True)
p.add_argument("--ranks", type=int, default=1)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--warmup", type=int, default=2)
p.add_argument("--out", required=True)
a = p.parse_args()
with open(a.out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["rank", "step", "warmup_excluded", "batch_size", "embed_lookup_ms", "step_total_ms", "samples_per_sec"])
    for r in range(a.ranks):
        for s in range(a.steps):
            warm = 1 if s < a.warmup else 0
            w.writerow([r, s, warm, 8, 2.0, 8000.0 / a.rate, 1e9 if warm else a.rate])
"#;

fn work(kdl: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("gen.py"), GEN).unwrap();
    std::fs::write(d.path().join("e.kdl"), kdl).unwrap();
    d
}

fn bench(body: &str) -> String {
    format!(
        "experiment rep {{\n    description \"known numbers\"\n}}\nbench b {{\n    param base 100\n    param fail 0\n    \
         run \"test {{{{ fail }}}} = 0 && python3 gen.py --rate {{{{ base + 10 * repeat }}}} --out {{{{ outdir }}}}/steps.csv\"\n    \
         collect \"csv\" path=\"steps.csv\"\n{body}}}\n"
    )
}

/// Run the experiment in `d` expecting `status`, and return its summary.md.
fn run_summary(d: &Path, status: i32) -> String {
    Test::new()
        .dir(d)
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(status);
    summary(d)
}

fn summary(d: &Path) -> String {
    std::fs::read_to_string(d.join("out/summary.md")).unwrap()
}

/// A lane that measured 0 against a baseline of 12 is 0.00x (it was hidden as `—`, and the
/// HTML report said "no mean here or at the baseline" though both means were there); a lane
/// with a negative mean still has no ratio, and the HTML says why.
#[test]
fn a_lane_that_measured_zero_has_its_ratio_and_a_negative_one_says_why_not() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment z\nbench b {\n    param v 12\n    run \"echo v={{ v }}\"\n    collect \"regex\" pattern=\"v=([-0-9.]+)\" direction=\"higher\"\n    lane a v=12\n    lane z v=0\n    lane n v=-3\n}\n",
    )
    .unwrap();
    let s = run_summary(d.path(), 0);
    assert!(s.contains("| b | z |  | 1 | 0.00 | — | — | 0.00x |"), "{s}");
    // no ratio, and why (helper 70: a bare `—`)
    // (which mean is at fault: it said "the baseline has no mean, or a mean ≤ 0" of a
    // baseline of 12, helper 74)
    assert!(
        s.contains("| b | n |  | 1 | -3.00 | — | — | — (the mean here is below zero) |"),
        "{s}"
    );
    let html = std::fs::read_to_string(d.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("— (the mean here is below zero)")
            && !html.contains("no mean here or at the baseline"),
        "{html}"
    );
    // summary.json says it beside the null too (helper 76), and nothing where there is a ratio
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("out/summary.json")).unwrap())
            .unwrap();
    let group = |lane: &str| {
        j["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["lane"] == lane)
            .unwrap()
            .clone()
    };
    assert_eq!(group("n")["speedup_why"], "the mean here is below zero");
    assert!(group("z")["speedup_why"].is_null() && group("z")["mean_why"].is_null());
}

#[test]
fn repeat_three_shows_each_value_mean_cv_and_speedup() {
    let d = work(&bench(
        "    lane a base=100\n    lane b base=200\n    repeat 3\n",
    ));
    let s = run_summary(d.path(), 0);
    // a: 100, 110, 120 → mean 110, sd 10, CV 9.09 %; b: 200, 210, 220 → mean 210, CV 4.76 %
    assert!(
        s.contains(
            "| samples/s per repeat | 100.00 / 110.00 / 120.00 | 200.00 / 210.00 / 220.00 |"
        ),
        "{s}"
    );
    assert!(s.contains("| samples/s mean | 110.00 | 210.00 |"), "{s}");
    assert!(s.contains("| CV% | 9.09% | 4.76% |"), "{s}");
    assert!(
        s.contains("| speedup over a | 1.00x | 1.91x |"),
        "210 / 110 = 1.909: {s}"
    );
    assert!(s.contains("| embed_lookup_local_ms | 2.00 | 2.00 |"));
    let lines: Vec<&str> = s.lines().collect();
    let journal = std::fs::read_to_string(d.path().join("out/journal.jsonl")).unwrap();
    let header: serde_json::Value =
        serde_json::from_str(journal.lines().find(|l| l.contains("\"header\"")).unwrap()).unwrap();
    // an English report labels its first lines (a Chinese one keeps them bare, as the runbook)
    assert_eq!(
        lines[0],
        format!(
            "commit: {}",
            header["hosts"][0]["git_head"].as_str().unwrap()
        ),
        "line 1 is the benchmarked repo's HEAD"
    );
    assert_eq!(
        lines[1],
        format!("host: {}", header["hosts"][0]["hostname"].as_str().unwrap()),
        "line 2 is the hostname"
    );
    assert_eq!(lines[2], "");
    let sections: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("## "))
        .copied()
        .collect();
    assert_eq!(sections.len(), 3, "{sections:?}");
    assert!(
        sections[0] == "## Workload"
            && sections[1].starts_with("## E2E throughput (samples/s")
            && sections[2].starts_with("## E2E latency breakdown (ms"),
        "{sections:?}"
    );
    let csv = std::fs::read_to_string(d.path().join("out/summary_e2e.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with("status,exit_code,samples_per_sec,p95_step_total_ms,mean_batch_prepare_ms,mean_input_pack_ms,mean_embed_lookup_local_ms,mean_dense_fwd_ms,mean_backward_ms,mean_optimizer_ms,mean_sparse_update_ms,mean_step_total_ms,metric,unit,value,source,timing_check,same_work_samples_per_sec"));
    assert!(csv.contains(",ok,0,110.00,"), "{csv}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("out/summary.json")).unwrap())
            .unwrap();
    let g = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["lane"] == "b")
        .unwrap();
    assert_eq!(g["mean"], 210.0);
    assert!(
        json["points"][0]["measure"]["files"][0]
            .as_str()
            .unwrap()
            .ends_with("outputs/a_r0/steps.csv"),
        "aggregates name the rows they came from"
    );
    for svg in ["throughput.svg", "latency.svg"] {
        let text = std::fs::read_to_string(d.path().join("out").join(svg)).unwrap();
        assert!(text.starts_with("<svg") && text.contains("<rect"), "{svg}");
    }
    assert!(s.contains("[throughput](throughput.svg)"));
}

#[test]
fn repeat_one_has_no_mean_or_cv_rows() {
    let d = work(&bench(
        "    lane a base=100\n    lane b base=200\n    repeat 1\n",
    ));
    let s = run_summary(d.path(), 0);
    assert!(
        s.contains("| samples/s per repeat | 100.00 | 200.00 |"),
        "{s}"
    );
    assert!(!s.contains("samples/s mean") && !s.contains("CV%"), "{s}");
}

#[test]
fn k_and_m_formatting_in_the_summary() {
    // rounded half-up on the decimal value, the unit promoted at the boundary
    let d = work(&bench(
        "    sweep base 999 1000 3328 5100 20400 999995 999999 1218093\n",
    ));
    let s = run_summary(d.path(), 0);
    for (axis, shown) in [
        ("999", "999.00"),
        ("1000", "1.00K"),
        ("3328", "3.33K"),
        ("5100", "5.10K"),
        ("20400", "20.40K"),
        ("999995", "1.00M"),
        ("999999", "1.00M"),
        ("1218093", "1.22M"),
    ] {
        let at = s
            .find(&format!("**base={axis}**"))
            .unwrap_or_else(|| panic!("no sweep point {axis}: {s}"));
        assert!(
            s[at..].contains(&format!("| samples/s per repeat | {shown} |")),
            "base {axis} should show {shown}: {}",
            &s[at..at + 300]
        );
    }
}

#[test]
fn a_partial_directory_lists_its_missing_points_and_report_rerenders_it() {
    let d = work(&bench(
        "    lane a base=100\n    lane broken base=200 fail=1\n    repeat 1\n",
    ));
    let s = run_summary(d.path(), 3);
    // a failed point says why, with its log
    assert!(
        s.contains("Points without data (1; their cells show —)")
            && s.contains("broken_r0 (failed: client `run1-broken_r0` on `local` failed (exit 1)")
            && s.contains("log: out/logs/run1-broken_r0-local.log"),
        "{s}"
    );
    // a point that never ran (as after an interrupt): drop it from the manifest and re-render
    let m = std::fs::read_to_string(d.path().join("out/manifest.csv")).unwrap();
    let kept: Vec<&str> = m.lines().filter(|l| !l.starts_with("broken_r0")).collect();
    std::fs::write(d.path().join("out/manifest.csv"), kept.join("\n") + "\n").unwrap();
    // (and from the journal, which would otherwise supply what the manifest lacks: its point,
    // and its steps, which would say it started)
    let j = std::fs::read_to_string(d.path().join("out/journal.jsonl")).unwrap();
    let kept: Vec<&str> = j
        .lines()
        .filter(|l| !l.contains("\"run_id\":\"broken_r0\""))
        .collect();
    std::fs::write(d.path().join("out/journal.jsonl"), kept.join("\n") + "\n").unwrap();
    std::fs::remove_file(d.path().join("out/summary.md")).unwrap();
    // a point without data (here: never run) is exit 3, as `expr run` counts it
    let out = Test::new()
        .dir(d.path())
        .args(["report", "out"])
        .run()
        .status(3);
    assert!(
        out.stderr.contains("1 point(s) without data")
            && out.stderr.contains("broken_r0 (not run)"),
        "{}",
        out.stderr
    );
    assert!(summary(d.path()).contains("| samples/s per repeat | 100.00 | — |"));
    // a file where a directory should be
    std::fs::write(d.path().join("afile"), "").unwrap();
    let file = Test::new()
        .dir(d.path())
        .args(["report", "afile"])
        .run()
        .status(2);
    assert!(
        file.stderr.contains("afile: not a directory"),
        "{}",
        file.stderr
    );
    // a directory that is not a result directory
    let bad = Test::new()
        .dir(d.path())
        .args(["report", "."])
        .run()
        .status(2);
    assert!(
        bad.stderr
            .contains(".: not a result directory (it has no journal.jsonl)"),
        "{}",
        bad.stderr
    );
}

/// `expr report` counts every point without its data in its exit code, as `expr run` does: a
/// point whose journal timing has no `wall_ms` (its only measure) is no-data with the journal's
/// line, not ok with an empty value; a manifest status it does not know is not ok either.
#[test]
fn report_exits_with_the_failed_code_for_any_point_without_data() {
    let d = tempfile::tempdir().unwrap();
    let bench = |out: &str| {
        Test::new()
            .dir(d.path())
            .args(["bench", "-r", "2", "true", "--output", out])
            .run()
            .status(0)
    };
    let report = |out: &str| Test::new().dir(d.path()).args(["report", out]).run();
    bench("b1");
    report("b1").status(0);
    let journal = d.path().join("b1/journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let (n, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| {
            // the point's own event (its steps' events have timing too)
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_default();
            v["run_id"] == "true_r0" && v["lane"] == "true" && v["timing"]["wall_ms"].is_number()
        })
        .unwrap();
    let cut = regex::Regex::new(r#""wall_ms":[0-9.e-]+,"#).unwrap();
    let edited: Vec<String> = text
        .lines()
        .map(|l| {
            if l == line {
                cut.replace(l, "").into_owned()
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&journal, edited.join("\n") + "\n").unwrap();
    let out = report("b1").status(3);
    assert!(
        out.stderr.contains(&format!(
            "true_r0 (no-data: journal.jsonl:{}: the point's timing holds no `wall_ms`",
            n + 1
        )),
        "{}",
        out.stderr
    );
    let metrics = std::fs::read_to_string(d.path().join("b1/metrics.csv")).unwrap();
    assert!(!metrics.contains("true_r0,true,0,ok"), "{metrics}");

    // a status the report does not know, in the journal (the record; the manifest follows it)
    bench("b2");
    let manifest = d.path().join("b2/manifest.csv");
    let m = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, m.replacen(",ok,", ",bogus,", 1)).unwrap();
    let journal = d.path().join("b2/journal.jsonl");
    let j: String = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["event"] == "point" && v["run_id"] == "true_r0" {
                v["status"] = "bogus".into();
            }
            format!("{v}\n")
        })
        .collect();
    assert!(j.contains("\"bogus\""));
    std::fs::write(&journal, j).unwrap();
    let out = report("b2").status(3);
    assert!(
        out.stderr.contains("1 point(s) without data"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_user_template_renders_over_the_same_data() {
    let d = work(&bench("    lane a base=1500\n    repeat 1\n"));
    Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    std::fs::write(
        d.path().join("t.j2"),
        "{% for g in groups %}{{ g.lane }}={{ g.mean | km }}{% endfor %} on {{ hostname }}\n",
    )
    .unwrap();
    let out = Test::new()
        .dir(d.path())
        .args(["report", "out", "--template", "t.j2"])
        .run()
        .status(0);
    assert!(out.stdout.starts_with("a=1.50K on "), "{}", out.stdout);
    // docs/report.md's example renders over a real run
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md")).unwrap();
    let example = doc
        .split("```jinja\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a jinja example in docs/report.md");
    std::fs::write(d.path().join("doc.j2"), example).unwrap();
    let out = Test::new()
        .dir(d.path())
        .args(["report", "out", "--template", "doc.j2"])
        .run()
        .status(0);
    assert!(out.stdout.contains("\na 1.50K"), "{}", out.stdout);
    // an undefined name: the file, its line, the name, and the names there are
    std::fs::write(d.path().join("bad.j2"), "line one\n{{ experimnt }}\n").unwrap();
    let bad = Test::new()
        .dir(d.path())
        .args(["report", "out", "--template", "bad.j2"])
        .run()
        .status(2);
    assert!(
        bad.stderr
            .contains("error: bad.j2:2: undefined value `experimnt`; did you mean `experiment`?"),
        "{}",
        bad.stderr
    );
    // a runaway template stops at its budget
    std::fs::write(
        d.path().join("loop.j2"),
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    )
    .unwrap();
    let t = std::time::Instant::now();
    let lp = Test::new()
        .dir(d.path())
        .args(["report", "out", "--template", "loop.j2"])
        .run()
        .status(2);
    assert!(
        lp.stderr
            .contains("ran out of its budget of 50000000 instructions"),
        "{}",
        lp.stderr
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn nccl_tests_output_reports_bus_bandwidth_per_message_size() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("table.txt"),
        "# nccl-tests version 2.19.6\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
                   8             2     float     sum      -1    20.11    0.00    0.00      0    19.90    0.00    0.00      0\n\
           134217728      33554432     float     sum      -1   1234.5  108.72  190.26    N/A   1230.0  109.12  1.9e+02    N/A\n# Avg bus bandwidth    : 95.13\n",
    )
    .unwrap();
    std::fs::write(d.path().join("e.kdl"), "experiment n\nbench allreduce {\n    run \"cat table.txt\"\n    collect \"nccl-tests\"\n}\n").unwrap();
    let s = run_summary(d.path(), 0);
    assert!(
        s.contains("## nccl-tests bus bandwidth (GB/s; time µs)"),
        "{s}"
    );
    assert_tables_separated(&s);
    // the line people quote, with its source
    assert!(
        s.contains("| allreduce  r0 | 95.13 | out/logs/run1-allreduce_r0-local.log:5 |"),
        "{s}"
    );
    // every row: type, op, root, and time / algbw / busbw of both halves
    assert!(
        s.contains("| 134217728 | float | sum | -1 | 1234.50 | 108.72 | 190.26 | 1230.00 | 109.12 | 190.00 |")
            && s.contains("| 8 | float | sum | -1 | 20.11 | 0.00 | 0.00 | 19.90 | 0.00 | 0.00 |"),
        "{s}"
    );
}

#[test]
fn recstore_runner_aggregate_csv_is_read_for_comparison() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("recstore_main_agg.csv");
    std::fs::write(&f, "metric,mean,p50,p95,max\nrow_count,80.00,80.00,80.00,80.00\nstep_total_ms,12.50,12.00,15.00,30.00\n").unwrap();
    let agg = expr::results::collect::steps::agg_csv(&f).unwrap();
    assert_eq!(agg["step_total_ms"], [12.5, 12.0, 15.0, 30.0]);
    std::fs::write(&f, "metric,mean\nx,1\n").unwrap();
    assert!(expr::results::collect::steps::agg_csv(&f)
        .unwrap_err()
        .contains("metric,mean,p50,p95,max"));
}

fn stand_in(dir: &Path, name: &str, script: &str) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let p = bin.join(name);
    std::fs::write(&p, script).unwrap();
    let mut perm = std::fs::metadata(&p).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&p, perm).unwrap();
}

/// The test's stand-ins first, then a stand-in GPU host's `nvidia-smi` (no GPU runs here).
fn path_with(dir: &Path) -> String {
    format!("{}:{}", dir.join("bin").display(), common::gpu::gpu_path())
}

/// No GPU here: a stand-in `torchrun` prints an ep_bench_ll summary block for the hidden size it
/// was given; the collector and the kernel report are real.
#[test]
fn mock_gpu_ep_bench_report_from_a_stand_in_torchrun() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("test/python/ep")).unwrap();
    std::fs::write(
        d.path().join("test/python/ep/ep_bench_ll.py"),
        "# stand-in\n",
    )
    .unwrap();
    stand_in(
        d.path(),
        "torchrun",
        "#!/usr/bin/env bash\nwhile [ $# -gt 0 ]; do [ \"$1\" = -d ] && h=$2; shift; done\n\
         echo '[cfg] algorithm=LOW_LATENCY'\necho '=== Summary (Low Latency, across 4 ranks) ==='\necho 'Pacing: batched steady state'\n\
         echo \"Dispatch (BF16):  avg=$((h/100)).50 us, min=10.00 us, max=90.00 us\"\necho '                  throughput: avg=300.00 GB/s, min=250.00 GB/s (rank 1), max=350.00 GB/s (rank 0)'\n\
         echo 'Combine (BF16):   avg=60.00 us, min=50.00 us, max=70.00 us'\necho 'Total (D+C):      avg=100.00 us, min=90.00 us, max=110.00 us'\n\
         echo 'Byte counts: dispatch=14.68 MB (BF16), combine=14.68 MB (BF16), rows=1024'\n",
    );
    std::fs::write(d.path().join("e.kdl"), "experiment ep\nep-bench {\n    node host=local nproc-per-node=4\n    experts 128\n    sweep hidden 4096 7168\n}\n").unwrap();
    Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    let s = summary(d.path());
    assert_tables_separated(&s);
    assert!(s.contains("## Kernel performance (µs and GB/s)"), "{s}");
    // bench and world size, every figure, the per-rank GB/s range, kernel-only absent as —
    assert!(s.contains("| ep-bench | MSCCLPP-LL hidden=4096 r0 | 4 | 40.50 / 10.00 / 90.00 | 60.00 / 50.00 / 70.00 | 100.00 / 90.00 / 110.00 | 300.00 (250.00–350.00) | — | 14.68 (BF16) / 14.68, 1024 |"), "{s}");
    assert!(
        s.contains("hidden=7168 r0 | 4 | 71.50 / 10.00 / 90.00"),
        "{s}"
    );
    // per lane and sweep point: the repeats' mean and the speed against the baseline lane
    assert!(
        s.contains("| ep-bench | MSCCLPP-LL | hidden=4096 | 1 | 100.00 | — | — | 1.00x |"),
        "{s}"
    );
    let metrics = std::fs::read_to_string(d.path().join("out/metrics.csv")).unwrap();
    assert!(
        metrics.contains(",ep-bench,MSCCLPP-LL,4096,0,ok,total_avg_us,us,lower,100,"),
        "{metrics}"
    );
    // the manifest names the tool each point ran: the setting's default, not written
    let rows = common::csv_by_name(&d.path().join("out/manifest.csv"));
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["tool"] == "mscclpp-ll"), "{rows:?}");
}

const LL_HOST_BLOCK: &str = "echo '=== Summary (Low Latency, across 4 ranks) ==='\n\
     echo 'Dispatch (BF16):  avg=40.00 us, min=10.00 us, max=90.00 us'\n\
     echo '                  throughput: avg=300.00 GB/s, min=250.00 GB/s (rank 1), max=350.00 GB/s (rank 0)'\n\
     echo 'Combine (BF16):   avg=60.00 us, min=50.00 us, max=70.00 us'\n\
     echo 'Total (D+C):      avg=100.00 us, min=90.00 us, max=110.00 us'\n";

/// NCCL-EP is built in the NCCL tree (`<nccl>/build/test/nccl_ep/ep_bench`, no rpath): with
/// `nccl-ep-repo` set, preflight finds the binary there (not in the host's checkout), and the
/// step runs with `<nccl>/build/lib` ahead of the LD_LIBRARY_PATH it had. Its kernel-only
/// figures are averages, and the report says so.
#[test]
fn mock_gpu_nccl_ep_runs_from_its_own_tree_with_its_libs() {
    let d = tempfile::tempdir().unwrap();
    let nccl = d.path().join("nccl");
    std::fs::create_dir_all(nccl.join("build/test/nccl_ep")).unwrap();
    std::fs::create_dir_all(nccl.join("build/lib")).unwrap();
    let bin = nccl.join("build/test/nccl_ep/ep_bench");
    std::fs::write(
        &bin,
        format!(
            "#!/bin/sh\necho \"LD_LIBRARY_PATH=$LD_LIBRARY_PATH\"\n{LL_HOST_BLOCK}\
             echo '--- Kernel-only performance ---'\n\
             echo 'Dispatch:    avg=20.00 us, min=18.00 us, max=22.00 us'\n\
             echo '                  throughput: avg=700.00 GB/s, min=780.00 GB/s, max=640.00 GB/s'\n\
             echo 'Combine:     avg=30.00 us, min=28.00 us, max=33.00 us'\n\
             echo '                  throughput: avg=480.00 GB/s, min=510.00 GB/s, max=440.00 GB/s'\n\
             echo 'Byte counts: dispatch=14.68 MB (BF16), combine=14.68 MB (BF16), selections=1014'\n"
        ),
    )
    .unwrap();
    let mut perm = std::fs::metadata(&bin).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&bin, perm).unwrap();
    // mpirun: its options, then the program
    stand_in(
        d.path(),
        "mpirun",
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do case \"$1\" in */ep_bench) break;; esac; shift; done\nexec \"$@\"\n",
    );
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "experiment ep\nep-bench {{\n    node host=local nproc-per-node=4\n    tool \"nccl-ep\"\n    experts 128\n    nccl-ep-repo \"{}\"\n}}\n",
            nccl.display()
        ),
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .env("LD_LIBRARY_PATH", "/opt/site/lib")
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let logs: String = std::fs::read_dir(d.path().join("out/logs"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect();
    assert!(
        logs.contains(&format!(
            "LD_LIBRARY_PATH={}/build/lib:/opt/site/lib",
            nccl.display()
        )),
        "{logs}"
    );
    let s = summary(d.path());
    assert!(
        s.contains("### Kernel-only, NCCL-EP (CUPTI: the true average over iterations)"),
        "{s}"
    );
    // the tool the bench sets, in the manifest
    let rows = common::csv_by_name(&d.path().join("out/manifest.csv"));
    assert!(rows.iter().all(|r| r["tool"] == "nccl-ep"), "{rows:?}");
    assert!(
        s.contains("| dispatch avg µs | dispatch min µs | dispatch max µs | dispatch GB/s avg |"),
        "{s}"
    );
    assert!(
        s.contains("| 20.00 | 18.00 | 22.00 | 700.00 | 30.00 | 28.00 | 33.00 | 480.00 |"),
        "{s}"
    );
    assert!(!s.contains("MSCCL++ ("), "{s}");
    let metrics = std::fs::read_to_string(d.path().join("out/metrics.csv")).unwrap();
    assert!(
        metrics.contains(",kernel_dispatch_avg_us,us,lower,20,"),
        "{metrics}"
    );
    // `nccl-ep-lib ""`: nothing prepended
    std::fs::write(
        d.path().join("f.kdl"),
        format!(
            "experiment ep\nep-bench {{\n    node host=local nproc-per-node=4\n    tool \"nccl-ep\"\n    experts 128\n    nccl-ep-repo \"{}\"\n    nccl-ep-lib \"\"\n}}\n",
            nccl.display()
        ),
    )
    .unwrap();
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "f.kdl"])
        .run()
        .status(0);
    assert!(!plan.stdout.contains("build/lib"), "{}", plan.stdout);
}

/// ep_bench_ll.py imports torch before it parses its flags: preflight asks it with the
/// configured `python` under torchrun too, and `--no-kernel-timing` (the default, as MSCCL++'s
/// driver) is passed when the script's `--help` lists it and left out, said so, when it does
/// not. MSCCL++'s kernel-only figures are labelled as what they are.
#[test]
fn mock_gpu_ep_bench_ll_probe_uses_the_configured_python_and_no_kernel_timing() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("test/python/ep")).unwrap();
    // python3 cannot import it; only the configured python (which has "torch") answers
    std::fs::write(
        d.path().join("test/python/ep/ep_bench_ll.py"),
        "import torch_is_not_here\n",
    )
    .unwrap();
    let args = d.path().join("torchrun-args");
    stand_in(
        d.path(),
        "torchrun",
        &format!(
            "#!/bin/sh\necho \"$@\" > '{}'\n{LL_HOST_BLOCK}\
             echo '--- Kernel-only performance (device kernel time via torch.profiler/CUPTI) ---'\n\
             echo 'Dispatch:    min=30.50 us (representative)  [avg=35.25, max=41.00 us -- inflated by profiler recv-spin skew]'\n\
             echo '                  throughput @min: 481.30 GB/s'\n\
             echo 'Combine:     min=40.75 us (representative)  [avg=44.00, max=49.50 us -- inflated by profiler rank skew]'\n\
             echo '                  throughput @min: 360.20 GB/s'\n",
            args.display()
        ),
    );
    let help = |extra: &str| {
        format!(
            "#!/bin/sh\n[ \"$2\" = --help ] || exit 9\necho 'usage: ep_bench_ll.py [-h] [--num-tokens NUM_TOKENS] [--num-blocks NUM_BLOCKS]{extra}'\n"
        )
    };
    stand_in(d.path(), "torchpython", &help(" [--no-kernel-timing]"));
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment ep\nep-bench {\n    node host=local nproc-per-node=4\n    experts 128\n    python \"torchpython\"\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains("--help` on"), "{}", ran.stderr);
    let a = std::fs::read_to_string(&args).unwrap();
    assert!(a.contains("--no-kernel-timing"), "{a}");
    let s = summary(d.path());
    assert!(s.contains("### Kernel-only, MSCCL++ (torch.profiler/CUPTI: the min is the representative figure; avg and max are inflated by the profiler's rank skew; GB/s at the min time)"), "{s}");
    assert!(
        s.contains("| dispatch min µs (representative) | dispatch avg µs (profiler-inflated) | dispatch max µs | dispatch GB/s @min |"),
        "{s}"
    );
    assert!(
        s.contains("| 30.50 | 35.25 | 41.00 | 481.30 | 40.75 | 44.00 | 49.50 | 360.20 |"),
        "{s}"
    );
    let metrics = std::fs::read_to_string(d.path().join("out/metrics.csv")).unwrap();
    assert!(
        metrics.contains(",kernel_dispatch_profiler_avg_us,us,lower,35.25,")
            && metrics.contains(",kernel_dispatch_gbps_at_min,GB/s,higher,481.3,")
            && !metrics.contains("kernel_dispatch_avg_us"),
        "{metrics}"
    );
    // an older script without the flag: left out, and said so; the run goes on
    stand_in(d.path(), "torchpython", &help(""));
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "e.kdl", "--output", "out2"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("--no-kernel-timing left out (its `--help` does not list them)"),
        "{}",
        ran.stderr
    );
    let a = std::fs::read_to_string(&args).unwrap();
    assert!(!a.contains("--no-kernel-timing"), "{a}");
    // `kernel-timing #true` opts in to the profiler pass
    std::fs::write(
        d.path().join("k.kdl"),
        "experiment ep\nep-bench {\n    node host=local nproc-per-node=4\n    experts 128\n    kernel-timing #true\n}\n",
    )
    .unwrap();
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "k.kdl"])
        .run()
        .status(0);
    assert!(
        !plan.stdout.contains("--no-kernel-timing"),
        "{}",
        plan.stdout
    );
}

/// A stand-in for `uv run … python` with dataset_rt installed: `-m dataset_rt.run_benchmark`
/// imports only with PYTHONSAFEPATH=1 (the checkout would shadow the package) and the host's
/// env; `--help` prints what the real dataset_rt 0.4.8 prints (pydantic-settings: `--shuffle,
/// --no-shuffle`, `[--drop-last | --no-drop-last]`, `--worker-timeout float`; saved in
/// tests/fixtures/dataset_rt-0.4.8-help.txt); a run writes `body` (Python, `out`, `w` and `a` in
/// scope) and ends as `end` says.
fn drt_stand_in(dir: &Path, body: &str) {
    let help = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/dataset_rt-0.4.8-help.txt"
    );
    stand_in(
        dir,
        "uv",
        &format!(
            "#!/usr/bin/env python3\nimport json, sys, os\na = sys.argv\n\
             if os.environ.get('PYTHONSAFEPATH') != '1':\n    sys.exit(\"ModuleNotFoundError: No module named 'dataset_rt._dataset_rt'\")\n\
             if os.environ.get('DRT_SITE') != 'here':\n    sys.exit(\"ModuleNotFoundError: No module named 'dataset_rt'\")\n\
             if '--help' in a:\n    sys.stdout.write(open({help:?}).read())\n    sys.exit(0)\n\
             out = a[a.index('--output') + 1]\nw = int(a[a.index('--num-workers') + 1])\nos.makedirs(os.path.dirname(out), exist_ok=True)\n{body}"
        ),
    );
}

/// One rank, three passes: pass 0 (cold) is a tenth of the warm ones.
const DRT_REPORT: &str = "r = {'world_size': 1, 'ranks': [{'rank': 0, 'dataset_rt_version': '0.4.8', 'replay_verified': True, 'passes': [{'first_batch_seconds': 0.25, 'resources': {'rss_bytes': 1048576 * (10 + w)}}, {}, {}]}], 'global_samples_per_second': [100.0 * (w + 1), 1000.0 * (w + 1), 1200.0 * (w + 1)]}\n";

/// No GPU here: a stand-in `uv` writes a dataset_rt JSON report where `--output` says. The
/// headline is the warm rate (passes after the first), pass 0 its own column; the ratio is to
/// the zero-worker control; the version that ran is named beside the checkout.
#[test]
fn mock_gpu_dataset_rt_report_from_a_stand_in_runner() {
    let d = tempfile::tempdir().unwrap();
    drt_stand_in(
        d.path(),
        &format!("{DRT_REPORT}json.dump(r, open(out, 'w'))\n"),
    );
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment drt\nhost local {\n    env DRT_SITE=\"here\"\n}\ndataset-rt {\n    node host=local\n    sweep num-workers 0 2\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let s = summary(d.path());
    assert_tables_separated(&s);
    assert!(s.contains("## Loader throughput (global samples/s)"), "{s}");
    assert!(
        s.contains("dataset_rt version that ran: 0.4.8 (from "),
        "{s}"
    );
    assert!(
        s.contains("| dataset-rt num-workers=0 | 1 | 0.4.8 | 100.00 / 1.00K / 1.20K | 1.10K | 100.00 | 0.250 | 10.0 MiB |"),
        "{s}"
    );
    assert!(
        s.contains("| dataset-rt num-workers=2 | 1 | 0.4.8 | 300.00 / 3.00K / 3.60K | 3.30K | 300.00 | 0.250 | 12.0 MiB |"),
        "{s}"
    );
    // per sweep point: the warm mean, the cold mean, and the ratio to the zero-worker control
    assert!(
        s.contains("| dataset-rt | dataset-rt | num-workers=0 | 1 | 1.10K | — | — | 100.00 | control (0 workers) |"),
        "{s}"
    );
    assert!(
        s.contains(
            "| dataset-rt | dataset-rt | num-workers=2 | 1 | 3.30K | — | — | 300.00 | 3.00x |"
        ),
        "{s}"
    );
    let metrics = std::fs::read_to_string(d.path().join("out/metrics.csv")).unwrap();
    assert!(
        metrics.contains(",warm_global_samples_per_second,samples/s,higher,3300,")
            && metrics.contains(",cold_global_samples_per_second,samples/s,higher,300,"),
        "{metrics}"
    );
    // the same run ids again, but the runner now fails before writing: the reports the first
    // run left under those ids are not taken for this run's
    drt_stand_in(d.path(), "sys.exit('stand-in: out of memory')\n");
    let again = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "e.kdl", "--output", "out2"])
        .run();
    assert_eq!(again.status, 3, "{}", again.stderr);
    let s2 = std::fs::read_to_string(d.path().join("out2/summary.md")).unwrap();
    assert!(
        !s2.contains("1.00K") && !s2.contains("3.00K"),
        "a stale report was copied: {s2}"
    );
    // one pass (`repeats 1`): no warm rate, the headline, so the point has no data and says
    // why (it was ok with its headline missing)
    drt_stand_in(
        d.path(),
        "r = {'world_size': 1, 'ranks': [{'rank': 0, 'dataset_rt_version': '0.4.8', 'replay_verified': True, 'passes': [{'first_batch_seconds': 0.25}]}], 'global_samples_per_second': [100.0]}\njson.dump(r, open(out, 'w'))\n",
    );
    std::fs::write(
        d.path().join("one.kdl"),
        "experiment drt\nhost local {\n    env DRT_SITE=\"here\"\n}\ndataset-rt {\n    node host=local\n    repeats 1\n}\n",
    )
    .unwrap();
    let one = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "one.kdl", "--output", "out3"])
        .run();
    assert_eq!(one.status, 3, "{}", one.stderr);
    let m = std::fs::read_to_string(d.path().join("out3/manifest.csv")).unwrap();
    assert!(
        m.contains("no-data")
            && m.contains("one pass only (1 global rate(s)): the headline, the warm rate"),
        "{m}"
    );
}

/// Two ranks, three passes, replay verified: complete.
const DRT_REPORT2: &str = "p = [{}, {}, {}]\nr = {'world_size': 2, 'ranks': [{'rank': 0, 'dataset_rt_version': '0.4.8', 'replay_verified': True, 'passes': p}, {'rank': 1, 'dataset_rt_version': '0.4.8', 'replay_verified': True, 'passes': p}], 'global_samples_per_second': [100.0, 1000.0, 1200.0]}\n";

/// Issue 30: a run that writes its complete report and then dies at shutdown (SIGABRT, as
/// torch's process group teardown did) is measured and said so — terminal, manifest, journal,
/// summary; `strict #true` keeps it a failure; a report cut off mid-write, or one that lacks a
/// rank, stays a failure that names what is missing.
#[test]
fn mock_gpu_dataset_rt_complete_report_then_abort_is_recovered() {
    let d = tempfile::tempdir().unwrap();
    drt_stand_in(
        d.path(),
        &format!("{DRT_REPORT2}json.dump(r, open(out, 'w'))\nprint('ChildFailedError: rank 1 exitcode -6 (SIGABRT)', flush=True)\nos.abort()\n"),
    );
    let kdl = |extra: &str| {
        format!("experiment drt\nhost local {{\n    env DRT_SITE=\"here\"\n}}\ndataset-rt {{\n    node host=local\n    ranks 2\n{extra}}}\n")
    };
    std::fs::write(d.path().join("e.kdl"), kdl("")).unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("ok (recovered: signal 6 (SIGABRT), ")
            && ran
                .stderr
                .contains("ChildFailedError: rank 1 exitcode -6 (SIGABRT)")
            && ran
                .stderr
                .contains("the report is complete: all 2 rank(s), 3 pass(es) each"),
        "{}",
        ran.stderr
    );
    // read by column name, in the positions RecStore's runner order gives them
    let row = common::manifest_by_name(&d.path().join("out")).remove(0);
    assert_eq!(&row[13], "ok", "{row:?}");
    assert!(
        row[15].starts_with("recovered: signal 6 (SIGABRT), "),
        "{row:?}"
    );
    let s = summary(d.path());
    assert!(
        s.contains("| 2 | 0.4.8 | 100.00 / 1.00K / 1.20K | 1.10K | 100.00 |"),
        "{s}"
    );
    assert!(s.contains("recovered: signal 6 (SIGABRT)"), "{s}");
    // its outputs gone, then back: `expr report` makes the row no-data, then ok again with the
    // run's own reason (it was left empty)
    let (outputs, aside) = (d.path().join("out/outputs"), d.path().join("aside"));
    std::fs::rename(&outputs, &aside).unwrap();
    Test::new()
        .dir(d.path())
        .args(["report", "out"])
        .run()
        .status(3);
    let row = common::manifest_by_name(&d.path().join("out")).remove(0);
    assert_eq!(&row[13], "no-data", "{row:?}");
    std::fs::rename(&aside, &outputs).unwrap();
    Test::new()
        .dir(d.path())
        .args(["report", "out"])
        .run()
        .status(0);
    let row = common::manifest_by_name(&d.path().join("out")).remove(0);
    assert!(
        &row[13] == "ok" && row[15].starts_with("recovered: signal 6 (SIGABRT), "),
        "{row:?}"
    );
    // strict: the same crash is a failure, with the evidence in the reason
    std::fs::write(d.path().join("s.kdl"), kdl("    strict #true\n")).unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "s.kdl", "--output", "strict"])
        .run();
    assert_eq!(ran.status, 3, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("but `strict #true` counts the crash as a failure"),
        "{}",
        ran.stderr
    );
    // cut off mid-write, then the abort: a failure
    drt_stand_in(
        d.path(),
        &format!("{DRT_REPORT2}t = json.dumps(r)\nf = open(out, 'w')\nf.write(t[: len(t) // 2])\nf.flush()\nos.abort()\n"),
    );
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "e.kdl", "--output", "cut"])
        .run();
    assert_eq!(ran.status, 3, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("its report cannot stand in"),
        "{}",
        ran.stderr
    );
    // complete JSON, but rank 1 never reported: a failure naming the rank
    drt_stand_in(
        d.path(),
        &format!("{DRT_REPORT2}r['ranks'].pop()\njson.dump(r, open(out, 'w'))\nos.abort()\n"),
    );
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "e.kdl", "--output", "norank"])
        .run();
    assert_eq!(ran.status, 3, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("rank 1 of 2 is missing from `ranks`"),
        "{}",
        ran.stderr
    );
}

/// Preflight imports the module with the runner's python (and the host's env) before anything
/// runs: a module that does not import stops the run there, naming the error.
#[test]
fn mock_gpu_dataset_rt_preflight_imports_the_module() {
    let d = tempfile::tempdir().unwrap();
    drt_stand_in(
        d.path(),
        &format!("{DRT_REPORT}json.dump(r, open(out, 'w'))\n"),
    );
    // no DRT_SITE in the host's env: the module does not import
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment drt\ndataset-rt {\n    node host=local\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 4, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("-m dataset_rt.run_benchmark --help")
            && ran.stderr.contains("No module named 'dataset_rt'"),
        "{}",
        ran.stderr
    );
    assert!(!d.path().join("results").exists());
}

/// Preflight reads the real 0.4.8 `--help` (pydantic-settings prints `--shuffle, --no-shuffle`,
/// `[--persistent-workers | --no-persistent-workers]`, `--cache-paths tuple[Path,...]`): every
/// flag expr passes when every setting is written is one it lists, and the run starts.
#[test]
fn mock_gpu_dataset_rt_preflight_accepts_every_flag_by_the_real_help() {
    let d = tempfile::tempdir().unwrap();
    drt_stand_in(
        d.path(),
        &format!("{DRT_REPORT}json.dump(r, open(out, 'w'))\n"),
    );
    std::fs::create_dir_all(d.path().join("ca")).unwrap();
    let all = "    shuffle #false\n    pin-memory #true\n    drop-last #true\n    persistent-workers #false\n    seed 11\n    metadata-bytes 8\n    transform-rounds 1\n    native-num-workers 2\n    prefetch-size 8\n    prefetch-factor 3\n    samples-per-epoch 384\n    worker-timeout 2.5\n    worker-partition \"replicate\"\n    worker-context \"forkserver\"\n";
    for (name, extra) in [
        ("all", all.to_string()),
        (
            "paths",
            format!(
                "    cache-paths \"[\\\"{}\\\"]\"\n",
                d.path().join("ca").display()
            ),
        ),
    ] {
        std::fs::write(
            d.path().join("e.kdl"),
            format!("experiment drt\nhost local {{\n    env DRT_SITE=\"here\"\n}}\ndataset-rt {{\n    node host=local\n{extra}}}\n"),
        )
        .unwrap();
        let ran = Test::new()
            .dir(d.path())
            .env("PATH", &path_with(d.path()))
            .args(["run", "e.kdl", "--output", &format!("out-{name}")])
            .run();
        assert_eq!(ran.status, 0, "{name}: {}", ran.stderr);
        let j =
            std::fs::read_to_string(d.path().join(format!("out-{name}/journal.jsonl"))).unwrap();
        assert!(
            j.contains("\"--no-persistent-workers\""),
            "{name}: the help was not read: {j}"
        );
    }
    // the fixture is the real help, not one written to suit expr
    let help = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/dataset_rt-0.4.8-help.txt"
    ))
    .unwrap();
    assert!(
        help.contains("  --shuffle, --no-shuffle\n") && help.contains("--worker-timeout float"),
        "{help}"
    );
}

/// dataset_rt reads every setting it is not given on the command line from
/// `DATASETRT_BENCH_<NAME>` (`env_prefix`): one left in the shell that runs expr (here SEED=11)
/// would change a run whose plan and report say seed 7. The program sees only the ones the
/// experiment sets (a host's `env`).
#[test]
fn mock_gpu_dataset_rt_runs_without_inherited_datasetrt_bench_variables() {
    let d = tempfile::tempdir().unwrap();
    drt_stand_in(
        d.path(),
        &format!(
            "{DRT_REPORT}json.dump(r, open(out, 'w'))\n\
             json.dump({{k: v for k, v in os.environ.items() if k.startswith('DATASETRT_BENCH_')}}, open(out + '.env', 'w'))\n"
        ),
    );
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment drt\nhost local {\n    env DRT_SITE=\"here\" DATASETRT_BENCH_QUIET=\"true\"\n}\ndataset-rt {\n    node host=local\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("PATH", &path_with(d.path()))
        .env("DATASETRT_BENCH_SEED", "11")
        .env("DATASETRT_BENCH_CACHE_PATHS", "[\"/nowhere\"]")
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let seen: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.path().join("results/dataset_rt_r0.json.env")).unwrap(),
    )
    .unwrap();
    assert_eq!(seen, serde_json::json!({"DATASETRT_BENCH_QUIET": "true"}));
}

#[test]
fn mock_gpu_dataset_rt_pins_its_gpus_and_passes_every_written_flag() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment drt\ndataset-rt {\n    node host=local gpu=2\n    device \"cuda\"\n    ranks 2\n    seed 11\n    metadata-bytes 64\n    transform-rounds 3\n    drop-last #true\n    persistent-workers #false\n    native-num-workers 2\n    prefetch-size 8\n    prefetch-factor 4\n}\n",
    )
    .unwrap();
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "e.kdl"])
        .run()
        .status(0);
    let launch = plan
        .stdout
        .lines()
        .find(|l| l.contains("[launch]"))
        .unwrap();
    assert!(launch.contains("CUDA_VISIBLE_DEVICES=2,3"), "{launch}");
    for flag in [
        "--seed 11",
        "--metadata-bytes 64",
        "--transform-rounds 3",
        "--drop-last",
        "--no-persistent-workers",
        "--native-num-workers 2",
        "--prefetch-size 8",
        "--prefetch-factor 4",
    ] {
        assert!(launch.contains(flag), "{flag}: {launch}");
    }
    // flags the experiment does not write are left to the module's defaults
    std::fs::write(
        d.path().join("f.kdl"),
        "experiment drt\ndataset-rt {\n    node host=local\n}\n",
    )
    .unwrap();
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "f.kdl"])
        .run()
        .status(0);
    let launch = plan
        .stdout
        .lines()
        .find(|l| l.contains("[launch]"))
        .unwrap();
    assert!(
        !launch.contains("--seed") && !launch.contains("persistent"),
        "{launch}"
    );
}

#[test]
fn a_point_whose_metric_cannot_be_read_is_no_data_and_the_run_exits_3() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment nd\nbench b {\n    run \"echo value=41\"\n    collect \"regex\" pattern=\"latency=([0-9.]+)\"\n    lane a\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(3);
    assert!(ran.stderr.contains("no data"), "{}", ran.stderr);
    let rows = common::manifest_by_name(&d.path().join("out"));
    assert_eq!(&rows[0][13], "no-data");
    assert!(rows[0][15].contains("matches /latency="), "{:?}", &rows[0]);
    let s = summary(d.path());
    assert!(
        !s.contains("0.00"),
        "no number stands in for the missing one: {s}"
    );
    assert!(s.contains("a_r0 (no-data: no line of"), "{s}");
    // re-rendering reads it again (and still finds nothing): the same exit code as the run
    let r = Test::new()
        .dir(d.path())
        .args(["report", "out"])
        .run()
        .status(3);
    assert!(r.stderr.contains("1 point(s) without data"), "{}", r.stderr);
}

/// Issue 23: a point's numbers are read as it ends. The live line shows its headline value, or
/// `no data: why` at once (not a line after `ok`); the journal records it as no-data, and
/// `--fail-fast` stops there: the next point never starts.
#[test]
fn each_point_says_its_headline_or_no_data_as_it_ends() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment live\nbench b {\n    sweep v 7 9\n    run \"echo lat={{ v }}.5\"\n    collect \"regex\" pattern=\"lat=([0-9.]+)\"\n    lane a\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    let lines: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with('[') && !l.ends_with(" starts"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", ran.stderr);
    assert!(
        lines[0].contains(" ok ") && lines[0].contains("7.50"),
        "{}",
        ran.stderr
    );
    assert!(
        lines[1].contains(" ok ") && lines[1].contains("9.50"),
        "{}",
        ran.stderr
    );
    // the first point's metric is not where the collector looks: no data, said on its line
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment live\nbench b {\n    sweep v 7 9\n    run \"echo lat={{ v }}.5 | sed s/lat=7/x=7/\"\n    collect \"regex\" pattern=\"lat=([0-9.]+)\"\n    lane a\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out2", "--fail-fast"])
        .run()
        .status(3);
    let first = ran
        .stderr
        .lines()
        .find(|l| l.starts_with("[1/2]") && !l.ends_with(" starts"))
        .unwrap_or_default();
    assert!(
        first.contains("no data: ") && first.contains("lat="),
        "{}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("[2/2]"),
        "--fail-fast stops: {}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("stopping: --fail-fast"),
        "{}",
        ran.stderr
    );
    let journal = std::fs::read_to_string(d.path().join("out2/journal.jsonl")).unwrap();
    let point: Vec<serde_json::Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "point")
        .collect();
    assert_eq!(point.len(), 1, "{journal}");
    assert_eq!(point[0]["status"], "no-data", "{journal}");
}

#[test]
fn only_and_set_change_what_runs_and_the_report_counts_only_that() {
    let d = work(&bench(
        "    lane a fail=0\n    lane b fail=0\n    sweep base 100 200 300\n    repeat 3\n",
    ));
    // one point of 18: the report knows nothing is missing
    let ran = Test::new()
        .dir(d.path())
        .args([
            "run", "e.kdl", "--output", "out", "--only", "lane=a", "--only", "repeat=0", "--only",
            "base=300",
        ])
        .run()
        .status(0);
    assert!(ran.stderr.contains("[1/1]"), "{}", ran.stderr);
    assert!(!ran.stderr.contains("without data"), "{}", ran.stderr);
    let s = summary(d.path());
    assert!(
        !s.contains("Points without data"),
        "no point is missing: {s}"
    );
    // --set on a swept axis replaces the sweep, and the plan says so
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "e.kdl", "--set", "base=4096"])
        .run()
        .status(0);
    assert!(
        plan.stdout.contains("sweep base = 4096  (from --set)"),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.contains("points: 6"), "{}", plan.stdout);
    // --set key=a,b,c sweeps from the command line
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "e.kdl", "--set", "base=1,2", "--set", "fail=1"])
        .run()
        .status(0);
    assert!(plan.stdout.contains("points: 12"), "{}", plan.stdout);
    // a lane that sets the value itself keeps it, and says so
    assert!(
        plan.stderr.contains("lanes `a`, `b` set `fail` themselves"),
        "{}",
        plan.stderr
    );
}

#[test]
fn sweep_plot_has_one_line_and_one_legend_entry_per_lane() {
    let d = work(&bench(
        "    lane alpha fail=0\n    lane beta fail=0\n    sweep base 100 200\n    repeat 3\n",
    ));
    run_summary(d.path(), 0);
    let svg = std::fs::read_to_string(d.path().join("out/sweep_base.svg")).unwrap();
    for lane in ["alpha", "beta"] {
        let labels = svg.lines().filter(|l| l.trim() == lane).count();
        assert_eq!(labels, 1, "legend entries of {lane}");
    }
    // two lines (one per lane, through the repeat means) and their two legend marks
    assert_eq!(svg.matches("stroke-width=\"2\"").count(), 4, "{svg}");
}

/// Every markdown table has a blank line before and after it (prose right after a table
/// renders as one more row).
fn assert_tables_separated(s: &str) {
    let lines: Vec<&str> = s.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let is_row = l.starts_with('|');
        let prev_row = i > 0 && lines[i - 1].starts_with('|');
        let next = lines.get(i + 1).copied().unwrap_or("");
        if is_row && !prev_row {
            assert!(
                i == 0 || lines[i - 1].is_empty(),
                "no blank line before the table at line {}:\n{s}",
                i + 1
            );
        }
        if is_row && !next.starts_with('|') {
            assert!(
                next.is_empty(),
                "no blank line after the table at line {}:\n{s}",
                i + 1
            );
        }
    }
}

#[test]
fn the_workload_prose_names_swept_settings_and_lane_overrides_and_tables_stand_apart() {
    let d = work(&bench(
        "    param note \"x\"\n    lane a note=\"first\"\n    lane b\n    sweep base 100 200\n    repeat 1\n",
    ));
    let s = run_summary(d.path(), 0);
    assert!(
        s.contains("base=swept 100, 200"),
        "a swept setting is named as swept: {s}"
    );
    assert!(s.contains("| base | swept 100, 200 |"), "{s}");
    assert!(s.contains("Lane overrides: lane a sets note=first."), "{s}");
    assert_tables_separated(&s);
    // a partial run's notes and the nccl, loader and kernel tables too
    let d = work(&bench(
        "    lane a base=100\n    lane broken base=200 fail=1\n    repeat 1\n",
    ));
    assert_tables_separated(&run_summary(d.path(), 3));
}

/// Count the cells of a markdown table row: `|` not escaped by a backslash.
fn cells(row: &str) -> usize {
    let mut n: usize = 0;
    let mut prev = ' ';
    for c in row.chars() {
        if c == '|' && prev != '\\' {
            n += 1;
        }
        prev = c;
    }
    n.saturating_sub(1)
}

/// A `|` or a newline in a bench or lane name stays inside its cell: every row of every table
/// has its header's column count (before, `pi|pe` added a column and `nl\nx` split a row).
#[test]
fn names_with_pipes_and_newlines_keep_every_table_row_whole() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment odd\nbench \"be|ch\" {\n    param n 1\n    run \"echo v={{ n }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane \"pi|pe\" n=2\n    lane \"nl\\nx\" n=3\n    repeat 1\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    let s = summary(d.path());
    assert!(s.contains("pi\\|pe") && s.contains("nl\\nx"), "{s}");
    let lines: Vec<&str> = s.lines().collect();
    let mut rows = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with('|') && (i == 0 || !lines[i - 1].starts_with('|')) {
            let want = cells(l);
            for r in lines[i..].iter().take_while(|r| r.starts_with('|')) {
                assert_eq!(
                    cells(r),
                    want,
                    "row `{r}` of the table at line {}:\n{s}",
                    i + 1
                );
                rows += 1;
            }
        }
    }
    assert!(rows > 4, "tables were checked: {s}");
    assert_tables_separated(&s);
}

/// Issue 23: a report format is one type implementing `Format`; registered here, in a test, it
/// gets every kind's sections as blocks (no kind knows it) and writes beside the others.
#[test]
fn a_format_defined_in_a_test_gets_every_kind_section_as_data() {
    use expr::kind_api::doc::{Block, Span};
    use expr::report::format::{Format, Report};
    struct Outline;
    impl Format for Outline {
        fn write(&self, r: &Report) -> Result<Vec<String>, String> {
            let mut o = String::new();
            for b in &r.doc().0 {
                match b {
                    Block::Heading(n, t) => o.push_str(&format!("H{n} {}\n", t.flat())),
                    Block::Table(t) => {
                        o.push_str(&format!("T {} rows\n", t.rows.len()));
                        for row in &t.rows {
                            let cells: Vec<String> = row.iter().map(|c| c.flat()).collect();
                            o.push_str(&format!("  {}\n", cells.join(" ; ")));
                        }
                    }
                    Block::Para(t) => {
                        let code = t.0.iter().filter(|s| matches!(s, Span::Code(_))).count();
                        o.push_str(&format!("P {code} code\n"));
                    }
                    Block::List { items, .. } => o.push_str(&format!("L {}\n", items.len())),
                }
            }
            std::fs::write(r.dir.join("outline.txt"), &o).map_err(|e| e.to_string())?;
            Ok(vec!["outline.txt".into()])
        }
    }
    let (_d, out) = ran(
        "experiment fmt\nbench b {\n    lane a\n    lane b\n    run \"echo lat=4{{ repeat }}\"\n    collect \"regex\" pattern=\"lat=([0-9.]+)\"\n    repeat 2\n}\n",
    );
    let w = expr::report::write_with(&out, &[Box::new(Outline)]).unwrap();
    assert_eq!(w.files, vec!["outline.txt".to_string()]);
    let text = std::fs::read_to_string(out.join("outline.txt")).unwrap();
    // the workload prose (code spans for the names), its settings table, then the generic
    // kind's result section with each lane's repeats (40 / 41) and the group table
    assert!(text.starts_with("H2 Workload\nP 2 code\nT "), "{text}");
    assert!(
        text.contains(
            "H2 Results\nT 2 rows\n  b ; a ;  ; 40.00 / 41.00\n  b ; b ;  ; 40.00 / 41.00\n"
        ),
        "{text}"
    );
    assert!(
        // sd and CV of the two values (as summary.json and report.html give them)
        text.contains("  b ; b ;  ; 2 ; 40.50 ; 0.71 ; 1.75% ; 1.00x\n"),
        "{text}"
    );
}

/// Issue 25 (4) / 23: each kind writes its own manifest columns, with one per sweep axis: a
/// `bench` has no RecStore column; summary_e2e.csv follows the manifest's header, and has no
/// per-step column where no bench reads a per-step CSV.
#[test]
fn a_bench_manifest_has_its_own_columns_and_one_per_sweep_axis() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment cols\nbench b {\n    lane a\n    sweep num-workers 1 2\n    sweep size 4\n    run \"echo lat={{ num_workers }} {{ size }}\"\n    collect \"regex\" pattern=\"lat=([0-9.]+)\"\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    let m = std::fs::read_to_string(d.path().join("out/manifest.csv")).unwrap();
    let mut lines = m.lines();
    assert_eq!(
        lines.next().unwrap(),
        "run_id,lane,num_workers,size,repeat_index,collect_file,log_path,status,exit_code,reason"
    );
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&first[..5], &["a_w1_size4_r0", "a", "1", "4", "0"], "{m}");
    assert_eq!(first[7], "ok", "{m}");
    let e2e = std::fs::read_to_string(d.path().join("out/summary_e2e.csv")).unwrap();
    // and no per-step column (samples/s, p95, the stages): a regex reads no per-step CSV
    assert_eq!(
        e2e.lines().next().unwrap(),
        "run_id,lane,num_workers,size,repeat_index,collect_file,log_path,status,exit_code,metric,unit,value,source,timing_check,same_work_samples_per_sec",
        "{e2e}"
    );
    assert!(
        !m.contains("torchrec") && !e2e.contains("torchrec"),
        "{m}\n{e2e}"
    );
}

/// A bench report is English throughout: no Chinese character anywhere in summary.md, its
/// first lines labelled; with `language "zh"` the same experiment's is Chinese, and `--lang`
/// on `run` (recorded) and on `report` choose again.
#[test]
fn a_bench_report_is_english_and_language_zh_makes_it_chinese() {
    // a per-step CSV bench with a failing lane (the missing line), and a timed bench
    let body = "    lane a base=100\n    lane broken base=200 fail=1\n    sweep base 100 200\n    repeat 3\n}\nbench timed {\n    lane fast\n    lane slow\n    run \"sleep 0.01\"\n    repeat 2\n";
    let kdl = bench(body);
    let d = work(&kdl);
    let s = run_summary(d.path(), 3);
    assert_eq!(common::cjk(&s), None, "{s}");
    let lines: Vec<&str> = s.lines().collect();
    assert!(
        lines[0].starts_with("commit: ") && lines[1].starts_with("host: "),
        "{s}"
    );
    for want in [
        "## Workload\n",
        "Experiment `rep` (known numbers) runs `b`",
        "Points without data (",
        "## E2E throughput (samples/s",
        "## Timing (each point's run steps",
        "ran fastest:",
    ] {
        assert!(s.contains(want), "lacks `{want}`: {s}");
    }
    // the same experiment in Chinese
    let zh = kdl.replacen(
        "description \"known numbers\"\n",
        "description \"known numbers\"\n    language \"zh\"\n",
        1,
    );
    std::fs::write(d.path().join("e.kdl"), &zh).unwrap();
    std::fs::remove_dir_all(d.path().join("out")).unwrap();
    let s = run_summary(d.path(), 3);
    let lines: Vec<&str> = s.lines().collect();
    assert!(
        !lines[0].starts_with("commit:") && !lines[1].starts_with("host:"),
        "{s}"
    );
    for want in [
        "## Workload 说明\n",
        "本次实验 `rep`",
        "缺失的点（",
        "## E2E 吞吐（samples/s",
        "## 计时（",
        " 最快：",
    ] {
        assert!(s.contains(want), "lacks `{want}`: {s}");
    }
    // `expr report --lang en` writes it again in English, and without it as the run chose
    let report = |args: &[&str]| {
        Test::new().dir(d.path()).args(args).run().status(3);
        summary(d.path())
    };
    let en = report(&["report", "out", "--lang", "en"]);
    assert_eq!(common::cjk(&en), None, "{en}");
    assert!(report(&["report", "out"]).contains("## Workload 说明\n"));
    // `expr run --lang zh` on the English file: recorded, so `expr report` keeps it
    std::fs::write(d.path().join("e.kdl"), &kdl).unwrap();
    std::fs::remove_dir_all(d.path().join("out")).unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "--lang", "zh"])
        .run()
        .status(3);
    assert!(summary(d.path()).contains("## Workload 说明\n"));
    assert!(report(&["report", "out"]).contains("## Workload 说明\n"));
}

/// Tables that said what they did not mean: a lower-is-better time's ratio column says its
/// direction and is in it; the repeat count is not a column `n` beside a sweep axis `n`; a
/// setting every lane overrides shows each lane's value; points without data are said to show
/// as — (they are in the tables); an empty log says so; the machine says "nvidia-smi not
/// available" once.
#[test]
fn report_tables_say_what_their_numbers_mean() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment t\nbench b {\n    param method \"builtin\"\n    param v 0\n    param n 1\n    \
         run \"test {{ n }} = 3 && sleep 5; echo lat={{ v }}\" timeout=1\n    \
         collect \"regex\" pattern=\"lat=(?P<lat_ms>[0-9.]+)\" metric=\"lat_ms\" direction=\"lower\"\n    \
         lane builtin method=\"builtin\" v=10\n    lane slow method=\"slow\" v=20\n    \
         sweep n 1 2 3\n    repeat 2\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(3);
    let s = summary(d.path());
    // a latency, lower is better: the ratio is in that direction and its header says so
    assert!(s.contains("vs builtin (×, >1 is better)"), "{s}");
    assert!(!s.contains("÷ builtin"), "{s}");
    let row = s
        .lines()
        .find(|l| l.starts_with("| b | slow | n=1 | 2 |"))
        .unwrap_or_else(|| panic!("{s}"));
    let ratio: f64 = row
        .rsplit('|')
        .nth(1)
        .unwrap()
        .trim()
        .trim_end_matches('x')
        .parse()
        .unwrap();
    assert!(
        (0.4..0.65).contains(&ratio),
        "slow takes twice as long: {row}"
    );
    assert!(s.contains("| bench | lane | point | repeats |"), "{s}");
    // `method` is each lane's, not `builtin` for all
    assert!(
        s.contains("method=per lane: builtin (builtin), slow (slow)"),
        "{s}"
    );
    assert!(!s.contains("| method | builtin |"), "{s}");
    // the timed-out points are in the tables, as —
    assert!(
        s.contains("Points without data (4; their cells show —)"),
        "{s}"
    );
    assert!(!s.contains("not in this report"), "{s}");
    assert_eq!(s.matches("nvidia-smi not available").count(), 1, "{s}");
    let html = std::fs::read_to_string(d.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("(empty log)"),
        "a timed-out point that printed nothing"
    );
    // the page heads its ratio as summary.md does, and shows the machine once
    assert!(html.contains("vs builtin (×, &gt;1 is better)"), "{html}");
    assert!(!html.contains("ratio to builtin"));
    assert_eq!(html.matches("GPUs: nvidia-smi not available").count(), 1);
}

/// A lane named as Markdown link or image syntax is text in every Markdown output (summary.md,
/// `expr compare`): never a remote image or a link.
#[test]
fn a_lane_named_as_a_markdown_image_is_text_in_every_markdown_output() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment m\nbench b {\n    run \"echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane \"![x](http://host/t.png)\"\n    lane \"[c](javascript:alert(1))\"\n}\n",
    )
    .unwrap();
    let run = |out: &str| {
        Test::new()
            .dir(d.path())
            .args(["run", "e.kdl", "--output", out, "--history", "h.sqlite"])
            .run()
            .status(0)
    };
    run("out");
    run("out2");
    let s = summary(d.path());
    let c = Test::new()
        .dir(d.path())
        .args(["compare", "out", "out2"])
        .run()
        .status(0);
    for (what, text) in [("summary.md", &s), ("compare", &c.stdout)] {
        // every `](` of the names is escaped (the report's own figure links stay links)
        for target in ["](http://host", "](javascript:"] {
            assert!(
                text.match_indices(target)
                    .all(|(i, _)| text[..i].ends_with('\\')),
                "{what}: {text}"
            );
        }
        assert!(text.contains("![x\\](http://host/t.png)"), "{what}: {text}");
    }
}

/// Issue 39: the journal header keeps the resolved experiment as data (`model`), and read back,
/// its kinds restored, it is the experiment: the same resolved KDL, the same data again, and the
/// same commands planned — for every experiment, example and warning fixture of the repository.
#[test]
fn the_experiment_as_data_reads_back_as_the_same_kdl_data_and_plan() {
    use expr::model::Experiment;
    let opts = expr::parse::validate::Options {
        allow_large: true,
        max_input_mib: None,
    };
    let mut read = 0;
    for dir in [
        "experiments",
        "examples",
        "tests/fixtures/plan",
        "tests/fixtures/warn",
    ] {
        for f in common::files(dir, "kdl") {
            let loaded = expr::parse::load::load_file(&f, &opts);
            if loaded.has_errors() {
                continue;
            }
            let exp = loaded.experiment.expect("an experiment");
            let v = serde_json::to_value(&exp).unwrap();
            let mut back: Experiment = serde_json::from_value(v.clone())
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            expr::kinds::restore(&mut back).unwrap();
            let kdl = expr::parse::resolved::to_kdl;
            assert_eq!(kdl(&back), kdl(&exp), "{}", f.display());
            assert_eq!(serde_json::to_value(&back).unwrap(), v, "{}", f.display());
            let at = chrono::Local::now();
            let commands = |e: &Experiment| -> Vec<(String, String, String)> {
                let filter = expr::model::expand::Filter::default();
                let p = expr::plan::plan(e, "x.kdl", &filter, Some("/tmp/o"), at).unwrap();
                p.setup
                    .iter()
                    .chain(p.points.iter().flat_map(|p| p.steps.iter()))
                    .map(|s| (s.id.clone(), s.host.clone(), s.exec_line()))
                    .collect()
            };
            let secrets: Vec<String> = exp.secret_values().iter().map(|v| v.to_string()).collect();
            if secrets.is_empty() {
                assert_eq!(commands(&back), commands(&exp), "{}", f.display());
            } else {
                // a secret is never stored: the data holds `****` in its place
                let stored = v.to_string();
                for s in &secrets {
                    assert!(!stored.contains(&format!("\"{s}\"")), "{}", f.display());
                }
            }
            read += 1;
        }
    }
    assert!(read >= 8, "only {read} experiments read");
}

/// Issue 39: `expr report` reads the experiment from the header's data, not its KDL: a header
/// whose resolved KDL no longer parses still reports as before; a header without the data (an
/// older journal) reports from the KDL.
#[test]
fn report_reads_the_stored_experiment_data_and_an_older_journal_its_kdl() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    Test::new()
        .args(["run", "examples/quickstart.kdl", "--output"])
        .arg_path(&out)
        .run()
        .status(0);
    let summary = || std::fs::read_to_string(out.join("summary.md")).unwrap();
    let before = summary();
    let journal = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    let edit = |f: &dyn Fn(&mut serde_json::Value)| -> String {
        journal
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                if v["event"] == "header" {
                    f(&mut v);
                }
                format!("{v}\n")
            })
            .collect()
    };
    let header = common::journal(&out)
        .into_iter()
        .find(|e| e["event"] == "header")
        .unwrap();
    assert_eq!(header["model"]["version"], 1, "the run stores the data");
    assert_eq!(header["model"]["experiment"]["name"], "quickstart");
    // the report of the journal with its header edited
    let report_with = |f: &dyn Fn(&mut serde_json::Value)| {
        std::fs::write(out.join("journal.jsonl"), edit(f)).unwrap();
        let _ = std::fs::remove_file(out.join("summary.md"));
        Test::new().args(["report"]).arg_path(&out).run()
    };
    let broken = "experiment {{ not kdl";
    // the KDL broken: the data still reports
    report_with(&|v| v["resolved"] = broken.into()).status(0);
    assert_eq!(summary(), before);
    // no data (an older journal): the KDL reports; neither: an error
    let no_model = |v: &mut serde_json::Value| {
        v.as_object_mut().unwrap().remove("model");
    };
    report_with(&no_model).status(0);
    assert_eq!(summary(), before);
    let bad = report_with(&|v| {
        no_model(v);
        v["resolved"] = broken.into();
    });
    assert_ne!(bad.status, 0);
    assert!(bad.stderr.contains("does not decode"), "{}", bad.stderr);
}

/// An experiment run in a directory of its own (`e.kdl`, output `out`), its exit status
/// asserted: the directory and what the run said.
fn run_in_dir(kdl: &str, status: i32) -> (tempfile::TempDir, common::Ran) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("e.kdl"), kdl).unwrap();
    let ran = Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(status);
    (d, ran)
}

/// The journal is the record (each event appended the moment it happens; manifest.csv is
/// rewritten from it every 250 ms): where the two disagree the journal's outcome is used, the
/// manifest rewritten and it said; points only the manifest knows (a journal cut short) keep
/// the manifest's status, said in summary.md, with their timing missing.
#[test]
fn the_journal_outweighs_the_manifest_and_a_point_it_lacks_is_said() {
    let (d, _) = run_in_dir(
        "experiment j\nbench b {\n    param n 1\n    run \"echo v={{ n }}\"\n    collect \"regex\" pattern=\"v=(?<v>[0-9]+)\" metric=\"v\"\n    sweep n 1 2 3\n}\n",
        0,
    );
    let p = d.path();
    let events = common::journal(&p.join("out"));
    let lines = |keep: &dyn Fn(&serde_json::Value) -> bool| {
        events
            .iter()
            .filter(|e| keep(e))
            .map(|e| format!("{e}\n"))
            .collect::<String>()
    };
    let report = |dir: &str, status: i32| {
        Test::new()
            .dir(p)
            .args(["report", dir])
            .run()
            .status(status)
    };
    let statuses = |dir: &str| -> Vec<String> {
        common::csv_by_name(&p.join(dir).join("manifest.csv"))
            .iter()
            .map(|r| format!("{} {}", r["run_id"], r["status"]))
            .collect()
    };
    // a journal cut after the first point: the manifest alone knows the other two
    common::copy_dir(&p.join("out"), &p.join("cut"));
    std::fs::write(
        p.join("cut/journal.jsonl"),
        lines(&|e| e["event"] != "end" && !(e["run_id"] == "b_n2_r0" || e["run_id"] == "b_n3_r0")),
    )
    .unwrap();
    report("cut", 0);
    let said = "manifest.csv lists 2 point(s) journal.jsonl has no record of (a journal cut short?): b_n2_r0, b_n3_r0; their status is manifest.csv's, and their launch steps' timing (wall_ms, user_ms, sys_ms, max_rss_mib) is missing";
    let summary = std::fs::read_to_string(p.join("cut/summary.md")).unwrap();
    assert!(summary.contains(said), "{summary}");
    let walls: Vec<String> = common::csv_by_name(&p.join("cut/metrics.csv"))
        .iter()
        .filter(|r| r["metric"] == "wall_ms")
        .map(|r| r["run_id"].clone())
        .collect();
    assert_eq!(walls, ["b_n1_r0"], "only the recorded point has its timing");
    // a manifest edited to say failed: the journal says ok, and the manifest is made again
    common::copy_dir(&p.join("out"), &p.join("edit"));
    let m = std::fs::read_to_string(p.join("edit/manifest.csv")).unwrap();
    let edited = m.replacen(",ok,0,", ",failed,1,", 1);
    assert_ne!(edited, m);
    std::fs::write(p.join("edit/manifest.csv"), edited).unwrap();
    let r = report("edit", 0);
    assert!(
        r.stderr.contains(
            "manifest.csv said another status than journal.jsonl for 1 point(s); rewritten from the journal"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(statuses("edit"), ["b_n1_r0 ok", "b_n2_r0 ok", "b_n3_r0 ok"]);
    // the journal's last word on a point is a failure: failed, whatever the manifest said
    common::copy_dir(&p.join("out"), &p.join("late"));
    let mut failed = events
        .iter()
        .find(|e| e["event"] == "point" && e["run_id"] == "b_n2_r0")
        .unwrap()
        .clone();
    failed["status"] = "failed".into();
    failed["exit_code"] = 1.into();
    failed["reason"] = "exit 1".into();
    failed.as_object_mut().unwrap().remove("cause");
    std::fs::write(
        p.join("late/journal.jsonl"),
        lines(&|_| true) + &format!("{failed}\n"),
    )
    .unwrap();
    report("late", 3);
    assert_eq!(
        statuses("late"),
        ["b_n1_r0 ok", "b_n2_r0 failed", "b_n3_r0 ok"]
    );
}

/// A point whose run log was removed: its reason names the log it looked for (it said "no line
/// of  matches", naming no file).
#[test]
fn a_removed_log_is_named_in_the_points_reason() {
    let (d, _) = run_in_dir(
        "experiment j\nbench b {\n    run \"echo v=3\"\n    collect \"regex\" pattern=\"v=(?<v>[0-9]+)\" metric=\"v\"\n}\n",
        0,
    );
    let p = d.path();
    std::fs::remove_file(p.join("out/logs/run1-b_r0-local.log")).unwrap();
    let r = Test::new().dir(p).args(["report", "out"]).run().status(3);
    assert!(
        r.stderr.contains(
            "b_r0 (no-data: no run log of b_r0 in out/logs (logs/run*-b_r0-*.log): nothing to match /v=(?<v>[0-9]+)/ in)"
        ),
        "{}",
        r.stderr
    );
}

/// `collect "csv"` on a line a lone `\r` splits (`12\r34`): the csv reader made two rows of it
/// and the point was ok with their mean, 23; the regex collector reads 12 from the same bytes.
/// Now it has no data, said at the line.
#[test]
fn a_csv_line_a_carriage_return_splits_is_not_read_as_two_rows() {
    let (_d, ran) = run_in_dir(
        "experiment c\nbench b {\n    run \"printf 'rate\\\\n12\\\\r34\\\\n' > {{ outdir }}/m.csv\"\n    collect \"csv\" path=\"m.csv\" metric=\"rate\"\n}\n",
        3,
    );
    assert!(
        ran.stderr.contains("out/outputs/b_r0/m.csv:2: a carriage return inside the line splits it into two rows (a lone `\\r` ends a CSV row): not read"),
        "{}",
        ran.stderr
    );
}

/// `collect "csv"` of an empty file says so (it said "no column `v`; the header has " and
/// nothing after); bytes that are no UTF-8 in a column the collector does not read leave the
/// point its number (the whole row was refused), and in the one it reads are said with the
/// column's name.
#[test]
fn a_csv_that_is_empty_or_has_bad_bytes_elsewhere_is_said_as_it_is() {
    let (d, ran) = run_in_dir(
        r#"experiment c
bench b {
    param k "empty"
    run "test {{ k }} = empty && : > {{ outdir }}/r.csv; test {{ k }} = bad && printf 'v,w\\n5,\\377\\n' > {{ outdir }}/r.csv; test {{ k }} = badv && printf 'v,w\\n\\377,1\\n' > {{ outdir }}/r.csv; test {{ k }} = badh && printf 'v,\\377\\n7,6\\n' > {{ outdir }}/r.csv; true"
    collect "csv" path="r.csv" metric="v"
    lane empty
    lane bad k="bad"
    lane badv k="badv"
    lane badh k="badh"
}
"#,
        3,
    );
    assert!(
        ran.stderr
            .contains("out/outputs/empty_r0/r.csv: the file is empty (no header, no rows)"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("out/outputs/badv_r0/r.csv:2: field 1 (`v`) is not UTF-8"),
        "{}",
        ran.stderr
    );
    let rows = common::csv_by_name(&d.path().join("out/metrics.csv"));
    let bad: Vec<&str> = rows
        .iter()
        .filter(|r| r["run_id"] == "bad_r0" && r["metric"] == "v")
        .map(|r| r["value"].as_str())
        .collect();
    assert_eq!(bad, ["5"]);
    // a header not read may hold such bytes too (helper 76: "field 2 is not UTF-8")
    let badh: Vec<&str> = rows
        .iter()
        .filter(|r| r["run_id"] == "badh_r0" && r["metric"] == "v")
        .map(|r| r["value"].as_str())
        .collect();
    assert_eq!(badh, ["7"]);
    // a lane without a value says why its mean is null in summary.json
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("out/summary.json")).unwrap())
            .unwrap();
    let empty = j["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["lane"] == "empty")
        .unwrap();
    assert!(empty["mean"].is_null(), "{empty}");
    assert_eq!(
        empty["mean_why"],
        "no values (its points failed, were interrupted or had no data)"
    );
}

/// Every collected number names its file and line (metrics.csv's `source`): the lines a
/// pattern matched, the rows a CSV mean is over, the line of a JSON value (after a byte-order
/// mark, which the CSV reader takes too), and a JSON value that is no number. A JSON key
/// written twice on the path is refused, as a CSV column named twice is: which one holds the
/// number is a guess.
#[test]
fn a_value_names_its_file_and_lines_and_a_json_key_written_twice_is_refused() {
    let (d, ran) = run_in_dir(
        r#"experiment s
bench r {
    run "printf 'x\nrate=1\nrate=3\n'"
    collect "regex" pattern="rate=(?<rate>[0-9]+)" metric="rate"
}
bench c {
    run "printf 'rate\n1\n2\n\n3\n' > {{ outdir }}/m.csv"
    collect "csv" path="m.csv" metric="rate"
}
bench j {
    run "printf '\\357\\273\\277{\n  \"a\": {\n    \"x\": 5\n  }\n}\n' > {{ outdir }}/m.json"
    collect "json" path="m.json" metric="a.x"
}
bench d {
    run "printf '{\"a\":{\"x\":1,\"x\":2}}' > {{ outdir }}/m.json"
    collect "json" path="m.json" metric="a.x"
}
bench s {
    run "printf '{\n\"a\": {\"x\": \"12ms\"}}' > {{ outdir }}/m.json"
    collect "json" path="m.json" metric="a.x"
}
bench m {
    run "printf '{\"a\": {\"y\": 1}}' > {{ outdir }}/m.json"
    collect "json" path="m.json" metric="a.x"
}
"#,
        3,
    );
    let p = d.path();
    let rows = common::csv_by_name(&p.join("out/metrics.csv"));
    let source = |id: &str| {
        rows.iter()
            .find(|r| {
                r["run_id"] == id && !r["metric"].ends_with("_ms") && r["metric"] != "max_rss_mib"
            })
            .map(|r| (r["value"].clone(), r["source"].clone()))
            .unwrap()
    };
    assert_eq!(
        source("r_r0"),
        ("2".into(), "out/logs/run1-r_r0-local.log:2, 3".into())
    );
    assert_eq!(
        source("c_r0"),
        ("2".into(), "out/outputs/c_r0/m.csv:2, 3, 5".into())
    );
    assert_eq!(
        source("j_r0"),
        ("5".into(), "out/outputs/j_r0/m.json:3".into())
    );
    assert!(
        ran.stderr.contains(
            "out/outputs/d_r0/m.json: the key `x` of `a.x` is written twice: which one holds the number is a guess"
        ),
        "{}",
        ran.stderr
    );
    // a value that is no number is named at its line; a path that leads nowhere says so
    assert!(
        ran.stderr
            .contains("out/outputs/s_r0/m.json:2: `a.x` is the string \"12ms\", not a number")
            && ran
                .stderr
                .contains("out/outputs/m_r0/m.json: no value at `a.x`"),
        "{}",
        ran.stderr
    );
}

/// The machine section shows the record of a run that measured points: a later run into the
/// directory that measured nothing (a resume with every point kept) probed a machine no number
/// was measured on.
#[test]
fn the_machine_section_is_the_record_of_a_run_that_measured() {
    let (d, _) = run_in_dir(
        "experiment m\nbench b {\n    run \"echo v=1\"\n    collect \"regex\" pattern=\"v=(?<v>[0-9]+)\" metric=\"v\"\n}\n",
        0,
    );
    let p = d.path();
    let events = common::journal(&p.join("out"));
    // a later run that measured nothing: its header and a machine of 999 CPUs
    let mut header = events
        .iter()
        .find(|e| e["event"] == "header")
        .unwrap()
        .clone();
    header["started"] = "2030-01-01T00:00:00+00:00".into();
    let mut machine = events
        .iter()
        .find(|e| e["event"] == "machine")
        .unwrap()
        .clone();
    machine["cpu"]["cpus"] = 999.into();
    let mut text = std::fs::read_to_string(p.join("out/journal.jsonl")).unwrap();
    text.push_str(&format!("{header}\n{machine}\n"));
    std::fs::write(p.join("out/journal.jsonl"), text).unwrap();
    Test::new().dir(p).args(["report", "out"]).run().status(0);
    let summary = std::fs::read_to_string(p.join("out/summary.md")).unwrap();
    assert!(
        summary.contains("Machine (recorded at preflight)") && !summary.contains("999 CPUs"),
        "{summary}"
    );
    // a directory whose runs measured nothing still shows its last record
    let mut point = events
        .iter()
        .find(|e| e["event"] == "point")
        .unwrap()
        .clone();
    point["status"] = "skipped".into();
    let only: String = events
        .iter()
        .filter(|e| e["event"] != "point")
        .map(|e| format!("{e}\n"))
        .chain([format!("{header}\n{machine}\n")])
        .collect();
    std::fs::write(p.join("out/journal.jsonl"), only).unwrap();
    Test::new().dir(p).args(["report", "out"]).run();
    let summary = std::fs::read_to_string(p.join("out/summary.md")).unwrap();
    assert!(summary.contains("999 CPUs"), "{summary}");
}

/// `kdl` as `e.kdl` in a new directory, run into `out` (exiting `status`).
fn run_to_out(kdl: &str, status: i32) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("e.kdl"), kdl).unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "-q"])
        .run()
        .status(status);
    d
}

/// A repeat without a value is `—` in its place of the per-repeat cell (`1.00 / — / 21.00`, not
/// `1.00 / 21.00`, which reads as if the second repeat measured 21). A point without data whose
/// log `expr report` reads a value from now (its artifact or the collector changed) is a point
/// with a value there, as compare takes it: not a value on a `no-data` row that the means count
/// and compare leaves out.
#[test]
fn a_missing_repeat_is_a_dash_in_its_place_and_a_point_read_again_is_ok() {
    let d = run_to_out(
        "experiment pr\nbench pr {\n    run \"if [ {{ repeat }} = 1 ]; then echo v=NaN; else echo v={{ repeat }}1; fi\"\n    collect \"regex\" pattern=\"v=([^ ]+)\"\n    repeat 3\n}\n",
        3,
    );
    let p = d.path();
    let summary = std::fs::read_to_string(p.join("out/summary.md")).unwrap();
    assert!(
        summary.contains("| pr | pr |  | 1.00 / — / 21.00 |"),
        "{summary}"
    );
    // two values of three points: said so (`2 of 3`), not `2` as if two were planned
    assert!(
        summary.contains("| pr | pr |  | 2 of 3 | 11.00 |"),
        "{summary}"
    );
    // the log says a number now: read again, the point has a value everywhere
    std::fs::write(p.join("out/logs/run1-pr_r1-local.log"), "v=5\n").unwrap();
    Test::new().dir(p).args(["report", "out"]).run().status(0);
    let summary = std::fs::read_to_string(p.join("out/summary.md")).unwrap();
    assert!(
        summary.contains("| pr | pr |  | 1.00 / 5.00 / 21.00 |")
            && summary.contains("| pr | pr |  | 3 | 9.00 |"),
        "{summary}"
    );
    let rows = common::csv_by_name(&p.join("out/metrics.csv"));
    let r1 = rows
        .iter()
        .find(|r| r["run_id"] == "pr_r1" && r["metric"] == "v")
        .unwrap();
    assert_eq!(
        (r1["status"].as_str(), r1["value"].as_str()),
        ("ok", "5"),
        "{r1:?}"
    );
    assert!(!summary.contains("without data"), "{summary}");
    let c = Test::new()
        .dir(p)
        .args(["compare", "out", "out", "--format", "json"])
        .run()
        .status(0);
    let c: serde_json::Value = serde_json::from_str(&c.stdout).unwrap();
    assert_eq!(c["rows"][0]["mean_a"], 9.0, "{c}");
    assert_eq!(c["rows"][0]["a"].as_array().unwrap().len(), 3, "{c}");
}

/// Sweep values holding `,` and `=` make two points whose `k=v,…` texts were the same:
/// compare made one row of both (mean 50.50 of 1, 1, 100, 100). Each is its own row.
#[test]
fn points_whose_values_hold_commas_and_equals_signs_stay_apart_in_compare() {
    let d = run_to_out(
        "experiment ax\nbench ax {\n    param a \"x\"\n    param b \"z\"\n    run \"if [ {{ a }} = x ]; then echo v=100; else echo v=1; fi; echo {{ b }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    sweep a \"x,b=y\" \"x\"\n    sweep b \"z\" \"y,b=z\"\n    exclude a=\"x,b=y\" b=\"y,b=z\"\n    exclude a=\"x\" b=\"z\"\n    repeat 2\n}\n",
        0,
    );
    let p = d.path();
    let c = Test::new()
        .dir(p)
        .args(["compare", "out", "out", "--format", "json"])
        .run()
        .status(0);
    let c: serde_json::Value = serde_json::from_str(&c.stdout).unwrap();
    let rows: Vec<(String, f64)> = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["axes"].as_str().unwrap().to_string(),
                r["mean_a"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (r#"a="x,b=y",b=z"#.to_string(), 1.0),
            (r#"a=x,b="y,b=z""#.to_string(), 100.0)
        ],
        "{c}"
    );
}

/// `expr report` after a log is gone: the number the run read for its point is said with why
/// it is missing now, and the reports before, which hold it, are kept in
/// `runtime/earlier-report-<time>/` — once: a second report has nothing more to lose. A chart
/// the data no longer supports goes, and no document links it.
#[test]
fn a_report_that_loses_a_number_the_run_read_keeps_the_earlier_reports() {
    let (d, out) = two_lanes_ran(3);
    let p = d.path();
    assert!(out.join("headline_r.svg").is_file());
    let earlier = |out: &Path| common::entries_starting(&out.join("runtime"), "earlier-report-");
    // a_r0's status and reason in a manifest
    let row = |m: &Path| {
        let text = std::fs::read_to_string(m).unwrap();
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let h = r.headers().unwrap().clone();
        let rec = r
            .records()
            .map(|x| x.unwrap())
            .find(|x| &x[0] == "a_r0")
            .unwrap();
        let col = |n: &str| rec[h.iter().position(|c| c == n).unwrap()].to_string();
        (col("status"), col("reason"))
    };
    let log = std::fs::read(out.join("logs/run1-a_r0-local.log")).unwrap();
    std::fs::remove_file(out.join("logs/run1-a_r0-local.log")).unwrap();
    let r = Test::new().dir(p).args(["report", "out"]).run().status(3);
    // the manifest says what the report found (it kept `ok`; `expr ls` counted the point ok),
    // and the one before is kept with the reports
    let (status, reason) = row(&out.join("manifest.csv"));
    assert!(
        status == "no-data" && reason.starts_with("no run log of a_r0"),
        "{status} {reason}"
    );
    assert!(
        r.stderr
            .contains("expr: manifest.csv now says what the report found for 1 point"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("warning: a_r0: the run read 10.05; its files give no number now (no run log of a_r0")
            && r.stderr.contains("the files no longer give the numbers the run read for 1 point; the reports before this one, which hold them, are kept in out/runtime/earlier-report-"),
        "{}",
        r.stderr
    );
    let kept = earlier(&out);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(row(&kept[0].join("manifest.csv")).0, "ok");
    let before = std::fs::read_to_string(kept[0].join("summary.md")).unwrap();
    assert!(before.contains("10.05"), "{before}");
    assert!(kept[0].join("headline_r.svg").is_file());
    let now = std::fs::read_to_string(out.join("summary.md")).unwrap();
    // 10.05 only where summary.md says it is gone, not in a table: the terminal is not the
    // only one told
    assert!(
        now.lines()
            .filter(|l| l.contains("10.05"))
            .all(|l| l.starts_with("⚠ a_r0: the run read 10.05"))
            && now.contains("10.15"),
        "{now}"
    );
    assert!(
        now.contains("⚠ a_r0: the run read 10.05; its files give no number now"),
        "{now}"
    );
    // again: nothing more is lost, nothing more is kept
    Test::new().dir(p).args(["report", "out"]).run().status(3);
    assert_eq!(earlier(&out).len(), 1);
    // the log back: the point is ok again, in the manifest too
    std::fs::write(out.join("logs/run1-a_r0-local.log"), &log).unwrap();
    Test::new().dir(p).args(["report", "out"]).run().status(0);
    assert_eq!(row(&out.join("manifest.csv")), ("ok".into(), String::new()));
    assert_eq!(earlier(&out).len(), 1);
    // every log gone: no chart of numbers there are not, and none linked; an SVG someone
    // put there under a chart's name is not the report's to remove
    std::fs::write(out.join("headline_mynotes.svg"), "<svg>mine</svg>").unwrap();
    std::fs::remove_dir_all(out.join("logs")).unwrap();
    Test::new().dir(p).args(["report", "out"]).run().status(3);
    assert_eq!(earlier(&out).len(), 2);
    assert!(!out.join("headline_r.svg").exists());
    assert_eq!(
        std::fs::read_to_string(out.join("headline_mynotes.svg")).unwrap(),
        "<svg>mine</svg>"
    );
    for f in ["summary.md", "report.html"] {
        let t = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(
            !t.contains("headline_r.svg"),
            "{f} links a chart that is not there"
        );
    }
}

/// A run named its directory by an absolute path: `expr report` and `--resume` given another
/// name of it (relative, from elsewhere) write the files the reports and the manifest name
/// by the run's name, not by a path that reads only from where the command ran.
#[test]
fn report_and_resume_name_files_as_the_run_named_its_directory() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let out = p.join("res/kk");
    std::fs::write(
        p.join("k.kdl"),
        format!(
            "experiment k {{\n    output \"{}\"\n}}\nbench k {{\n    param x 1\n    run \"test -e flag && echo val={{{{ x }}}}\"\n    collect \"regex\" pattern=\"val=([0-9.]+)\"\n    sweep x 1 2\n}}\n",
            out.display()
        ),
    )
    .unwrap();
    Test::new().dir(p).args(["run", "k.kdl"]).run().status(3);
    std::fs::write(p.join("flag"), "").unwrap();
    Test::new()
        .dir(p)
        .args(["run", "--resume", "res/kk"])
        .run()
        .status(0);
    let abs = out.display().to_string();
    let manifest = std::fs::read_to_string(out.join("manifest.csv")).unwrap();
    assert!(
        manifest.contains(&format!(",{abs}/logs/run1-k_x1_r0-local.log,ok,")),
        "{manifest}"
    );
    // from the parent of the checkout, by a relative name
    let parent = p.parent().unwrap();
    let rel = out.strip_prefix(parent).unwrap().display().to_string();
    Test::new()
        .dir(parent)
        .args(["report", &rel])
        .run()
        .status(0);
    let metrics = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
    assert!(
        metrics.contains(&format!("{abs}/logs/run1-k_x2_r0-local.log:1")),
        "{metrics}"
    );
}

/// A result directory without manifest.csv (a run killed before its first point ended wrote
/// none; `expr report` left it so): the report writes it from the journal, and says so.
#[test]
fn a_missing_manifest_is_written_from_the_journal() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    Test::new()
        .dir(p)
        .args(["bench", "-r", "2", "true", "--output", "out"])
        .run()
        .status(0);
    std::fs::remove_file(p.join("out/manifest.csv")).unwrap();
    let r = Test::new().dir(p).args(["report", "out"]).run().status(0);
    assert!(
        r.stderr
            .contains("expr: manifest.csv was missing; written from journal.jsonl (2 points)"),
        "{}",
        r.stderr
    );
    let m = std::fs::read_to_string(p.join("out/manifest.csv")).unwrap();
    assert_eq!(m.lines().count(), 3, "{m}");
    assert!(m.lines().skip(1).all(|l| l.contains(",ok,")), "{m}");
}

/// A wall-time bench's number is the journal's own timing: edited there, `expr report` says
/// the run read another number, and with it gone, says so and keeps the earlier reports (as
/// it does for a log).
#[test]
fn a_wall_time_number_edited_or_gone_in_the_journal_is_said() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    Test::new()
        .dir(p)
        .args(["bench", "-r", "2", "true", "--output", "out"])
        .run()
        .status(0);
    let journal = p.join("out/journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let point = text
        .lines()
        .position(|l| l.contains("\"event\":\"point\""))
        .unwrap();
    let edit = |with: &str| {
        let lines: Vec<String> = text
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i != point {
                    return l.to_string();
                }
                let at = l.find("\"wall_ms\":").unwrap() + "\"wall_ms\":".len();
                let end = at + l[at..].find([',', '}']).unwrap();
                format!("{}{with}{}", &l[..at], &l[end..])
            })
            .collect();
        std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    };
    edit("99999.5");
    let r = Test::new().dir(p).args(["report", "out"]).run().status(0);
    assert!(
        r.stderr
            .contains("its files now give 100.00K where the run read")
            || r.stderr.contains("its files now give"),
        "{}",
        r.stderr
    );
    let summary = std::fs::read_to_string(p.join("out/summary.md")).unwrap();
    assert!(summary.contains("its files now give"), "{summary}");
    edit("\"abc\"");
    let r = Test::new().dir(p).args(["report", "out"]).run().status(3);
    assert!(
        r.stderr
            .contains("its files give no number now (journal.jsonl:")
            && r.stderr.contains("are kept in out/runtime/earlier-report-"),
        "{}",
        r.stderr
    );
}

/// A run whose report cannot be written whole (a point made a folder where a chart goes) says
/// so under `--quiet` too, exits 1, and `expr ls` calls it an error, not a run whose points
/// failed (they were all ok).
#[test]
fn a_run_whose_report_is_not_written_says_so_quietly_and_is_an_error_not_failed() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("q.kdl"),
        "experiment q\nbench b {\n    sweep n 1 2\n    run \"mkdir -p {{ outdir }}/../../headline_b_vs_n.svg; echo val={{ n }}\"\n    collect \"regex\" pattern=\"val=([0-9.]+)\"\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(p)
        .args(["run", "q.kdl", "--output", "q", "--quiet"])
        .run()
        .status(1);
    assert!(
        r.stderr
            .contains("error: report not written: plots: q/headline_b_vs_n.svg: Is a directory"),
        "{}",
        r.stderr
    );
    let ls = Test::new().dir(p).args(["ls", "."]).run().status(0).stdout;
    let row = ls.lines().find(|l| l.contains("./q")).unwrap_or_default();
    let words: Vec<&str> = row.split_whitespace().collect();
    assert!(words.contains(&"2/0/0") && words.contains(&"error"), "{ls}");
}

/// `expr report` where one file cannot be written (a chart's name taken by a folder) writes
/// the others and says which (exit 1, not 2: nothing was wrong with the input); where the
/// earlier reports it must keep would go through a symbolic link `runtime/`, it writes
/// nothing there and nothing at all (exit 2).
#[test]
fn a_report_writes_what_it_can_and_keeps_nothing_through_a_link() {
    let (d, out) = two_lanes_ran(2);
    let p = d.path();
    common::copy_dir(&out, &p.join("g3"));
    std::fs::remove_file(p.join("g3/summary.json")).unwrap();
    std::fs::remove_file(p.join("g3/headline_r.svg")).unwrap();
    std::fs::create_dir(p.join("g3/headline_r.svg")).unwrap();
    let r = Test::new().dir(p).args(["report", "g3"]).run().status(1);
    assert!(
        r.stderr
            .contains("error: not written: plots: g3/headline_r.svg: Is a directory"),
        "{}",
        r.stderr
    );
    assert!(
        p.join("g3/summary.json").is_file(),
        "the others are written"
    );
    // runtime/ a link outside, and a number lost: nothing kept there, nothing rewritten
    let outside = p.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::remove_dir_all(out.join("runtime")).unwrap();
    std::os::unix::fs::symlink(&outside, out.join("runtime")).unwrap();
    std::fs::remove_file(out.join("logs/run1-a_r0-local.log")).unwrap();
    let before = std::fs::read(out.join("summary.md")).unwrap();
    let r = Test::new().dir(p).args(["report", "out"]).run().status(2);
    assert!(
        r.stderr.contains("out/runtime is a symbolic link (to ")
            && r.stderr.contains("nothing was rewritten"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(std::fs::read(out.join("summary.md")).unwrap(), before);
    // runtime/ a plain file: said so, nothing rewritten
    std::fs::remove_file(out.join("runtime")).unwrap();
    std::fs::write(out.join("runtime"), "x").unwrap();
    let r = Test::new().dir(p).args(["report", "out"]).run().status(2);
    assert!(
        r.stderr
            .contains("out/runtime is not a folder (a run's runtime/ is one)")
            && r.stderr.contains("nothing was rewritten"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read(out.join("summary.md")).unwrap(), before);
}

/// A point whose log and journal line are both gone: the journal no longer says what the run
/// read, but the report there showed its number. That report is kept before it is replaced,
/// and the point is named.
#[test]
fn a_number_lost_with_its_journal_line_keeps_the_report_that_had_it() {
    let (d, out) = two_lanes_ran(2);
    let p = d.path();
    std::fs::remove_file(out.join("logs/run1-a_r0-local.log")).unwrap();
    let journal = out.join("journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !(l.contains("\"run_id\":\"a_r0\"") && l.contains("\"lane\":")))
        .collect();
    assert!(kept.len() < text.lines().count());
    std::fs::write(&journal, kept.join("\n") + "\n").unwrap();
    let r = Test::new().dir(p).args(["report", "out"]).run();
    assert!(
        r.stderr
            .contains("a_r0: the report before this one has its number; its files give none now")
            && r.stderr.contains("are kept in out/runtime/earlier-report-"),
        "{}",
        r.stderr
    );
    let earlier = common::entries_starting(&out.join("runtime"), "earlier-report-");
    assert_eq!(earlier.len(), 1, "{earlier:?}");
    let md = std::fs::read_to_string(earlier[0].join("summary.md")).unwrap();
    assert!(md.contains("10.05"), "{md}");
    // a report again over that report: nothing more is kept
    Test::new().dir(p).args(["report", "out"]).run();
    assert_eq!(
        common::entries_starting(&out.join("runtime"), "earlier-report-").len(),
        1
    );
}

/// `kdl` as e.kdl in a new folder, run into its `out` (which must succeed).
fn ran(kdl: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("e.kdl"), kdl).unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    let out = d.path().join("out");
    (d, out)
}

/// A run of two lanes (A reads 10.05, 10.15, …; B 20.05, …), `repeat` times each, into `out`.
fn two_lanes_ran(repeat: u32) -> (tempfile::TempDir, std::path::PathBuf) {
    ran(&format!("experiment r\nbench r {{\n    param v 10\n    run \"echo val={{{{ v }}}}.{{{{ repeat }}}}5\"\n    collect \"regex\" pattern=\"val=([0-9.]+)\"\n    lane A v=10\n    lane B v=20\n    repeat {repeat}\n}}\n"))
}

/// An sd, CV or interval that has no number says why (it was a bare `—`): one value (n=1), a
/// mean at or below 0 (no CV), an interval past a double's range. summary.md says it once under
/// the table; report.html in the cell. Hand-computed: lane p gives 1 and 3 (mean 2, sd 1.41,
/// CV 70.71 %), lane n −1 and −3 (sd 1.41, no CV), lane o ±1.5e308 (mean 0, the interval
/// overflows), lane one a single 5.
#[test]
fn a_spread_without_a_number_says_why() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment s\nbench b {\n    param vals \"1 3\"\n    run \"echo v={{ (vals | split(' '))[repeat] }}\"\n    collect \"regex\" pattern=\"v=([-0-9.e]+)\" direction=\"higher\"\n    repeat 2\n    lane p\n    lane n vals=\"-1 -3\"\n    lane o vals=\"1.5e308 -1.5e308\"\n    lane one vals=\"5 x\"\n}\n",
    )
    .unwrap();
    let s = run_summary(d.path(), expr::util::exit_codes::POINT_FAILED);
    assert!(s.contains("| b | p |  | 2 | 2.00 | 1.41 | 70.71% |"), "{s}");
    assert!(s.contains("| b | n |  | 2 | -2.00 | 1.41 | — |"), "{s}");
    assert!(s.contains("| b | one |  | 1 of 2 | 5.00 | — | — |"), "{s}");
    assert!(
        s.contains("| b | o |  | 2 | 0.00 | — | — |")
            && s.contains("Where sd or CV% is —: the mean is at or below 0 (a CV says nothing there); beyond a double's range; n=1 (one value has no spread)."),
        "{s}"
    );
    let html = std::fs::read_to_string(d.path().join("out/report.html")).unwrap();
    for want in [
        "— (n=1, no interval)",
        "— (n=1)",
        "— (mean ≤ 0)",
        "— (beyond a double&#39;s range)",
    ] {
        assert!(html.contains(want), "{want}: {html}");
    }
    // summary.json says why beside each null (and says nothing where there is a number)
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("out/summary.json")).unwrap())
            .unwrap();
    let why = |lane: &str| {
        let g = j["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["lane"] == lane)
            .unwrap();
        (g["sd"].is_null(), g["sd_why"].clone(), g["cv_why"].clone())
    };
    use serde_json::Value::Null;
    assert_eq!(why("p"), (false, Null, Null));
    assert_eq!(why("n"), (false, Null, "mean ≤ 0".into()));
    assert_eq!(why("one"), (true, "n=1".into(), "n=1".into()));
    assert_eq!(
        why("o"),
        (true, "beyond a double's range".into(), "mean ≤ 0".into())
    );
}

/// A run stopped hard (kill -9, a second Ctrl-C: its journal ends without an `end`, after the
/// second point's process started) and its manifest lost: `expr report` writes a row for every
/// point it was asked for, as one Ctrl-C gives them — the point that ran `interrupted` (expr
/// stopped while it ran), the one it never reached `interrupted` with `not run: …` — not the
/// finished one alone (helper 75: "written from journal.jsonl (0 points)", a header alone).
#[test]
fn a_hard_stopped_run_has_a_manifest_row_for_every_point() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("e.kdl"),
        "experiment s\nbench b {\n    param n 1\n    run \"echo val={{ n }}\"\n    collect \"regex\" pattern=\"val=([0-9.]+)\"\n    sweep n 1 2 3\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "out", "-q"])
        .run()
        .status(0);
    // cut the journal where a kill -9 while b_n2 ran leaves it
    let journal = p.join("out/journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut kept = String::new();
    for line in text.lines() {
        kept.push_str(line);
        kept.push('\n');
        if line.contains("\"b_n2_r0\"") && line.contains("\"event\":\"process\"") {
            break;
        }
    }
    std::fs::write(&journal, kept).unwrap();
    std::fs::remove_file(p.join("out/manifest.csv")).unwrap();
    let r = Test::new().dir(p).args(["report", "out"]).run().status(3);
    assert!(
        r.stderr
            .contains("manifest.csv was missing; written from journal.jsonl (3 points)")
            && r.stderr.contains("expr: the run was stopped before it recorded an end: manifest.csv has its 2 points without an outcome as interrupted"),
        "{}",
        r.stderr
    );
    let rows = common::csv_by_name(&p.join("out/manifest.csv"));
    let of = |id: &str| rows.iter().find(|r| r["run_id"] == id).expect(id).clone();
    assert_eq!(of("b_n1_r0")["status"], "ok", "{rows:?}");
    assert_eq!(of("b_n2_r0")["status"], "interrupted", "{rows:?}");
    assert!(
        of("b_n2_r0")["reason"].starts_with("expr stopped while it ran"),
        "{rows:?}"
    );
    assert_eq!(of("b_n3_r0")["status"], "interrupted", "{rows:?}");
    assert!(of("b_n3_r0")["reason"].starts_with("not run:"), "{rows:?}");
    // a second report changes nothing
    let again = Test::new().dir(p).args(["report", "out"]).run().status(3);
    assert!(!again.stderr.contains("manifest.csv"), "{}", again.stderr);
}

/// summary.json's group names the point of each of its `values` (`value_run_ids`, in order):
/// `run_ids` holds every point, those without a value too, so its places did not line up with
/// the values' (helper 87). Repeat 2 prints no number: 3 values of 4 points.
#[test]
fn summary_json_names_the_point_of_each_value() {
    let (d, _) = run_in_dir(
        "experiment st\nbench b {\n    run \"if [ {{ repeat }} = 2 ]; then echo none; else echo rate=1{{ repeat }}; fi\"\n    collect regex pattern=\"rate=([0-9]+)\"\n    repeat 4\n}\n",
        3,
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("out/summary.json")).unwrap())
            .unwrap();
    let g = &j["groups"][0];
    assert_eq!(g["values"], serde_json::json!([10.0, 11.0, 13.0]), "{g}");
    assert_eq!(
        g["value_run_ids"],
        serde_json::json!(["b_r0", "b_r1", "b_r3"]),
        "{g}"
    );
    assert_eq!(
        g["run_ids"],
        serde_json::json!(["b_r0", "b_r1", "b_r2", "b_r3"]),
        "{g}"
    );
}

/// A tool that scales its unit (`999.0ms`, then `1.001s`) gives numbers that are not one
/// number (helper 87: they were averaged and compared as they were). In one point's log the
/// regex collector refuses them, naming both lines; across points each keeps the unit its text
/// carried (metrics.csv's `unit`) and the report says the bench's points differ. One unit
/// throughout is that unit, and nothing is said.
#[test]
fn numbers_in_other_units_are_refused_in_a_point_and_said_across_points() {
    let (d, ran) = run_in_dir(
        "experiment u\nbench one {\n    run \"echo lat=999.0ms; echo lat=1.001s\"\n    collect regex pattern=\"lat=([0-9.]+)\"\n}\n\
         bench across {\n    param x \"a\"\n    run \"echo lat={{ x }}\"\n    collect regex pattern=\"lat=([0-9.]+)\"\n    sweep x \"999.0ms\" \"1.001s\"\n}\n\
         bench same {\n    param x \"a\"\n    run \"echo lat={{ x }}\"\n    collect regex pattern=\"lat=([0-9.]+)\"\n    sweep x \"2ms\" \"4ms\"\n}\n",
        3,
    );
    assert!(
        ran.stderr.contains("out/logs/run1-one_r0-local.log:2: /lat=([0-9.]+)/ read `1.001` before `s` here, and a number before `ms` at out/logs/run1-one_r0-local.log:1: numbers in other units are not one number (print one unit, or write the unit into the pattern, so that only numbers in it are read)"),
        "{}",
        ran.stderr
    );
    let mut rd = csv::Reader::from_path(d.path().join("out/metrics.csv")).unwrap();
    let head = rd.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let (metric, unit, value) = (col("metric"), col("unit"), col("value"));
    let rows: Vec<csv::StringRecord> = rd
        .records()
        .map(|r| r.unwrap())
        .filter(|r| &r[metric] == "lat")
        .collect();
    let units: Vec<(&str, &str, &str)> =
        rows.iter().map(|r| (&r[0], &r[unit], &r[value])).collect();
    assert_eq!(
        units,
        [
            ("one_r0", "", ""),
            ("across_x999_0ms_r0", "ms", "999"),
            ("across_x1_001s_r0", "s", "1.001"),
            ("same_x2ms_r0", "ms", "2"),
            ("same_x4ms_r0", "ms", "4"),
        ],
        "{rows:?}"
    );
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    assert!(
        summary.contains("⚠ bench `across`: its points' `lat` carries other units in their text (`ms`: across_x999_0ms_r0; `s`: across_x1_001s_r0); the means and ratios put them together as they are."),
        "{summary}"
    );
    assert!(!summary.contains("bench `same`: its points'"), "{summary}");
}

/// The E2E breakdown's heading says warmup was excluded only where rows were: the generator's
/// CSV marks 2 warmup steps (`--warmup 2`), or none (`--warmup 0`; helper 87: said "warmup
/// excluded" of a CSV that had none).
#[test]
fn the_breakdown_says_warmup_excluded_only_where_rows_were() {
    for (warmup, want) in [
        (2, "(ms, mean per step, warmup excluded; lower is better)"),
        (
            0,
            "(ms, mean per step, no warmup step marked or dropped; lower is better)",
        ),
    ] {
        let d = work(&format!(
            "experiment w\nbench b {{\n    run \"python3 gen.py --rate 100 --warmup {warmup} --out {{{{ outdir }}}}/steps.csv\"\n    collect \"csv\" path=\"steps.csv\"\n}}\n"
        ));
        let s = run_summary(d.path(), 0);
        assert!(
            s.contains(&format!("E2E latency breakdown {want}")),
            "{warmup}: {s}"
        );
    }
}
