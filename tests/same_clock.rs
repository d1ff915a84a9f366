//! Same clock: a workload's step total that does not time its stages is caught in every report
//! form, on the RecStore stand-in writing upstream's columns (`FAKE_RS_CLOCK=upstream`: the clock
//! restarted before the sparse optimizer step, as runners/recstore_runner.py:615,703,733 at
//! WU@2fb8d826) and on a `bench` CSV with declared stages.

mod common;

use std::path::Path;

use common::Test;

/// day0.kdl on the stand-in checkout, the clock as `clock` says; the experiment text with
/// `extra` inside its `experiment` block.
fn day0(clock: &str, extra: &str) -> (tempfile::TempDir, common::Ran) {
    // one at a time: every day0 run uses the runbook's PS port 15000
    static PORT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _held = PORT.lock().unwrap_or_else(|e| e.into_inner());
    let repo = tempfile::tempdir().unwrap();
    common::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-recstore"),
        repo.path(),
    );
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/day0.kdl"))
            .unwrap()
            .replace("    output \"", &format!("    {extra}\n    output \""));
    std::fs::write(repo.path().join("day0.kdl"), text).unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(repo.path())
        .env("FAKE_RS_CLOCK", clock)
        .args([
            "run",
            "day0.kdl",
            "--output",
            "out",
            "--lang",
            "en",
            "--set",
            "steps=8",
            "--set",
            "warmup-steps=2",
            "--set",
            "repeat=1",
        ])
        .run();
    (repo, ran)
}

fn column(out: &Path, name: &str) -> Vec<(String, String)> {
    let mut rd = csv::Reader::from_path(out.join("summary_e2e.csv")).unwrap();
    let h = rd.headers().unwrap().clone();
    let (lane, c) = (
        h.iter().position(|x| x == "lane").unwrap(),
        h.iter().position(|x| x == name).unwrap(),
    );
    rd.records()
        .map(|r| {
            let r = r.unwrap();
            (r[lane].to_string(), r[c].to_string())
        })
        .collect()
}

#[test]
fn recstore_upstream_clock_is_flagged_in_every_form_with_both_ratios() {
    let (repo, ran) = day0("upstream", "");
    assert_eq!(ran.status, 0, "warn is the default: {}", ran.stderr);
    assert!(
        ran.stderr.contains("timing check:") && ran.stderr.contains("step_total_ms"),
        "the terminal says it: {}",
        ran.stderr
    );
    let out = repo.path().join("out");
    let checks = column(&out, "timing_check");
    for (lane, c) in &checks {
        if lane.starts_with("RecStore") {
            assert!(c.starts_with("suspect: the 9 stages sum to"), "{lane}: {c}");
            assert!(c.contains("alone") || c.contains("tolerance"), "{c}");
        } else {
            assert_eq!(c, "ok", "{lane}: TorchRec's total covers its stages");
        }
    }
    let same = column(&out, "same_work_samples_per_sec");
    assert!(
        same.iter()
            .all(|(_, v)| v.parse::<f64>().is_ok_and(|x| x > 0.0)),
        "{same:?}"
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for want in [
        "⚠ Timing check: a step total that does not time the whole step",
        "lane RecStore-BRPC: 1 of 1 point(s) suspect",
        "| timing check |",
        "⚠ suspect (1/1)",
        "Throughput on the same work",
        "samples/s (runbook rule)",
        "samples/s (same work)",
        "speedup over TorchRec-HBM (runbook)",
        "speedup over TorchRec-HBM (same work)",
        "batch_size × 1000 / (Σ 9 stages − batch_prepare_ms)",
    ] {
        assert!(md.contains(want), "summary.md lacks {want:?}:\n{md}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let text = json.to_string();
    assert!(
        text.contains("\"check\":\"sum-not-total\""),
        "summary.json carries the finding"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Timing check") && html.contains("same work"),
        "report.html"
    );
    // the Chinese report says it too
    let zh = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(repo.path())
        .args(["report", "out", "--lang", "zh"])
        .run();
    assert_eq!(zh.status, 0, "{}", zh.stderr);
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("⚠ 计时检查") && md.contains("同口径吞吐"),
        "{md}"
    );
}

#[test]
fn timing_check_refuse_exits_non_zero_like_an_unmet_expect() {
    let (_repo, ran) = day0("upstream", "timing-check \"refuse\"");
    assert_eq!(ran.status, 6, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("timing-check \"refuse\""),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_runner_whose_total_covers_its_stages_shows_no_warning() {
    let (repo, ran) = day0("fixed", "timing-check \"refuse\"");
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = repo.path().join("out");
    assert!(column(&out, "timing_check").iter().all(|(_, c)| c == "ok"));
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(!md.contains("⚠ Timing check"), "{md}");
    assert!(
        md.contains("| timing check |"),
        "the check is shown as passed"
    );
}

/// A user's CSV: stages a_ms + b_ms against step_ms. Rows: (1, 2, 3) ok, (4, 6, 3) off:
/// Σ 10 against 3 at every step (3.33×).
#[test]
fn a_bench_csv_with_declared_stages_gets_the_same_check() {
    let d = tempfile::tempdir().unwrap();
    let kdl = r#"experiment clock {
    output "out"
    language "en"
    timing-check "refuse"
}
host local
bench steps {
    param a "1"
    run "printf 'batch_size,a_ms,b_ms,step_ms,rate\n8,{{ a }},6,3,5\n8,{{ a }},6,3,7\n8,{{ a }},6,3,9\n' > {{ outdir }}/s.csv"
    collect "csv" path="s.csv" metric="rate" direction="higher" {
        stages "a_ms" "b_ms"
        total "step_ms"
    }
    lane "bad" a="4"
}
"#;
    std::fs::write(d.path().join("e.kdl"), kdl).unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl"])
        .run();
    assert_eq!(ran.status, 6, "refused: {}\n{}", ran.stderr, ran.stdout);
    let md = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    assert!(
        md.contains("Timing check (a_ms + b_ms against step_ms)"),
        "{md}"
    );
    assert!(
        md.contains(
            "the 2 stages sum to 10.00 ms at the median step but step_ms is 3.00 ms (3.33×"
        ),
        "{md}"
    );
    // the stages adding up: no warning
    let ok = kdl
        .replace("{{ a }},6,3", "{{ a }},2,3")
        .replace("a=\"4\"", "a=\"1\"");
    std::fs::write(d.path().join("e.kdl"), ok).unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out2"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let md = std::fs::read_to_string(d.path().join("out2/summary.md")).unwrap();
    assert!(md.contains("bad: ok"), "{md}");
    // a declared column the CSV lacks is said, never a silent pass
    std::fs::write(
        d.path().join("e.kdl"),
        kdl.replace("total \"step_ms\"", "total \"step_total\""),
    )
    .unwrap();
    let ran = Test::new()
        .env("PATH", common::gpu::gpu_path())
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out3"])
        .run();
    assert_ne!(ran.status, 0);
    let m = std::fs::read_to_string(d.path().join("out3/metrics.csv")).unwrap();
    assert!(m.contains("no column `step_total`"), "{m}");
}
