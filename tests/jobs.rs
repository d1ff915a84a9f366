//! `expr run --jobs N` (issue 40): points at once on disjoint GPUs of a stand-in 8-GPU host
//! (`nvidia-smi` on PATH is the stand-in, named as such in `common::gpu`), never two on one GPU,
//! the same values as one at a time; points that take their host whole run one at a time.

mod common;

use std::path::Path;

use common::Test;

fn exp(gpus: &str) -> String {
    format!(
        "experiment jobs {{\n    description \"one-GPU points\"\n}}\nhost local gpus=4\nbench b {{\n    param k 0\n    run \"sleep 0.4; echo k={{{{ k }}}} gpu=$CUDA_VISIBLE_DEVICES\"{gpus}\n    collect \"regex\" pattern=\"gpu=([0-9]*)\"\n    sweep k 0 1 2 3 4 5 6 7\n    repeat 2\n}}\n"
    )
}

/// (run id, GPU, start, end) of each launch step, from the journal (end = `at`, start = end −
/// elapsed).
fn intervals(dir: &Path) -> Vec<(String, String, f64, f64)> {
    common::journal(dir)
        .iter()
        .filter(|e| e["event"] == "step" && e["phase"] == "launch")
        .map(|e| {
            let at = chrono::DateTime::parse_from_rfc3339(e["at"].as_str().unwrap()).unwrap();
            let end = at.timestamp_micros() as f64 / 1e6;
            let cmd = e["command"].as_str().unwrap_or("");
            let gpu = cmd
                .split("CUDA_VISIBLE_DEVICES=")
                .nth(1)
                .and_then(|r| r.split(';').next())
                .unwrap_or("")
                .to_string();
            (
                e["run_id"].as_str().unwrap().to_string(),
                gpu,
                end - e["elapsed_s"].as_f64().unwrap(),
                end,
            )
        })
        .collect()
}

fn most_at_once(iv: &[(String, String, f64, f64)]) -> usize {
    iv.iter()
        .map(|(_, _, s, _)| iv.iter().filter(|(_, _, a, b)| a <= s && s < b).count())
        .max()
        .unwrap_or(0)
}

fn values(dir: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = common::manifest_rows(dir)
        .iter()
        .map(|r| (r[0].to_string(), r.iter().collect::<Vec<_>>().join(",")))
        .collect();
    v.sort();
    v
}

#[test]
fn standin_gpu_jobs_run_points_at_once_on_disjoint_gpus_with_the_same_values() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("g.kdl"), exp(" gpus=1")).unwrap();
    std::fs::write(
        p.join("whole.kdl"),
        exp("").replace("gpu=$CUDA_VISIBLE_DEVICES", "gpu=7"),
    )
    .unwrap();
    let run = |file: &str, out: &str, jobs: &str| {
        Test::new()
            .dir(p)
            .env("PATH", common::gpu::gpu_path())
            .args(["run", file, "--output", out, "-q", "--jobs", jobs])
            .run()
            .status(0);
    };
    run("g.kdl", "one", "1");
    run("g.kdl", "four", "4");
    let iv = intervals(&p.join("four"));
    assert_eq!(iv.len(), 16, "{iv:?}");
    // never two points on one GPU at once
    for a in &iv {
        for b in &iv {
            if a.0 != b.0 && a.1 == b.1 {
                assert!(
                    a.3 <= b.2 || b.3 <= a.2,
                    "{a:?} and {b:?} overlap on GPU {}",
                    a.1
                );
            }
        }
    }
    assert_eq!(most_at_once(&iv), 4, "four at once: {iv:?}");
    assert_eq!(most_at_once(&intervals(&p.join("one"))), 1);
    // each point's collected value (its GPU) and status as one at a time
    let strip = |v: Vec<(String, String)>| -> Vec<String> {
        v.into_iter()
            .map(|(id, row)| {
                // the log path names the result directory
                format!("{id} {}", row.replace("four/", "X/").replace("one/", "X/"))
            })
            .collect()
    };
    assert_eq!(
        strip(values(&p.join("four"))),
        strip(values(&p.join("one")))
    );
    let summary = std::fs::read_to_string(p.join("four/summary.md")).unwrap();
    assert!(
        summary.contains("| b | b | k=1 | 2.00 / 3.00 |"),
        "{summary}"
    );
    // steps without GPUs take the host whole: one at a time even with --jobs 4
    run("whole.kdl", "whole", "4");
    assert_eq!(most_at_once(&intervals(&p.join("whole"))), 1);
    // adaptive repeats decide each run from the ones before: refused
    std::fs::write(
        p.join("ad.kdl"),
        exp(" gpus=1").replace("repeat 2", "repeat min=3 max=5 until-cv=5"),
    )
    .unwrap();
    let r = Test::new()
        .dir(p)
        .env("PATH", common::gpu::gpu_path())
        .args(["run", "ad.kdl", "--output", "ad", "--jobs", "4"])
        .run()
        .status(2);
    assert!(
        r.stderr.contains("--jobs 4: `b` has adaptive repeats"),
        "{}",
        r.stderr
    );
}
