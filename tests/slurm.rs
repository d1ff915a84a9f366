//! Runs on a real Slurm (slurmctld + slurmd + munge on this machine, `tests/common/slurm.rs`):
//! allocation mode — `salloc --no-shell`, every step an `srun --overlap` on its node, the job
//! cancelled on every exit path. Slurm tests fail under CI when Slurm cannot run.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::slurm::{lock, Slurm};
use common::Test;
use serde_json::Value;

fn journal(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

const PRELUDE: &str = "experiment onslurm\nslurm cluster nodes=1 time=\"00:10:00\"\nhost n0 slurm=\"cluster\" node=0\n";

/// Wait until the journal records a started process of `step`.
fn wait_started(dir: &Path, step: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    while !journal(dir)
        .iter()
        .any(|e| e["event"] == "process" && e["step"].as_str().is_some_and(|s| s.starts_with(step)))
    {
        assert!(Instant::now() < end, "{step} never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
}

/// Start `expr ARGS` in `dir` against the cluster (stderr captured) and wait until its first
/// `run1` step is running.
fn start_run(s: &Slurm, dir: &Path, args: &[&str]) -> std::process::Child {
    let child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(args)
        .env("SLURM_CONF", &s.conf)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_started(&dir.join("out"), "run1");
    child
}

#[test]
fn real_slurm_allocation_mode_runs_servers_and_clients_on_the_nodes_and_cancels_the_job() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let port = common::sshd::free_port();
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{PRELUDE}bench b {{\n    param v 1\n    serve table \"exec python3 -m http.server {port} --bind 0.0.0.0\" port={port} host=n0\n    \
             run \"echo v={{{{ v }}}} node=$SLURMD_NODENAME job=$SLURM_JOB_ID ip={{{{ hosts.n0.ip }}}}\" host=n0\n    \
             collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    lane a v=1\n    lane b v=2\n    repeat 2\n}}\n"
        ),
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = d.path().join("out");
    let events = journal(&out);
    let header = events.iter().find(|e| e["event"] == "header").unwrap();
    let n0 = header["host_specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "n0")
        .unwrap();
    let job = n0["slurm"]["job"].as_str().unwrap().to_string();
    let node = n0["slurm"]["nodename"].as_str().unwrap().to_string();
    assert!(!n0["ip"].as_str().unwrap().starts_with("slurm:"), "{n0}");
    assert!(
        ran.stderr
            .contains(&format!("`cluster` is job {job}: {node} (")),
        "{}",
        ran.stderr
    );
    // every step ran inside the job, on its node, and the server answered on the node's address
    let log = std::fs::read_to_string(out.join("logs/run1-a_r0-n0.log")).unwrap();
    assert!(
        log.contains(&format!(
            "node={node} job={job} ip={}",
            n0["ip"].as_str().unwrap()
        )),
        "{log}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("| b | a |"), "{summary}");
    // wait4 sees srun, not the command: the points' CPU time and RSS are not reported
    let metrics = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
    assert!(
        metrics.contains(",wall_ms,") && !metrics.contains(",user_ms,"),
        "{metrics}"
    );
    // the job was cancelled at the end; nothing of the run is queued
    assert!(
        ran.stderr
            .contains(&format!("expr: cancelled job {job} (`cluster`)")),
        "{}",
        ran.stderr
    );
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
    // the resolved copy names the node, and re-renders
    Test::new()
        .dir(d.path())
        .args(["report", "out"])
        .run()
        .status(0);
}

#[test]
fn real_slurm_sigint_mid_run_leaves_the_queue_empty() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!("{PRELUDE}bench b {{\n    run \"sleep 60\" host=n0\n    repeat 3\n}}\n"),
    )
    .unwrap();
    let mut child = start_run(
        &s,
        d.path(),
        &["run", "e.kdl", "--output", "out", "--grace", "1"],
    );
    assert_eq!(s.queue().len(), 1, "{:?}", s.queue());
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(t.elapsed() < Duration::from_secs(20));
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_expr_stop_after_sigkill_cancels_exactly_the_runs_job() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!("{PRELUDE}bench b {{\n    run \"sleep 60\" host=n0\n}}\n"),
    )
    .unwrap();
    // a job that is not the run's: it must survive `expr stop`
    let other = s.cmd(
        "sbatch",
        &[
            "--parsable",
            "-J",
            "expr-other",
            "--comment",
            "expr:/elsewhere",
            "--output",
            "/dev/null",
            "--wrap",
            "sleep 60",
        ],
    );
    let other = other.trim().to_string();
    assert!(!other.is_empty());
    let mut child = start_run(&s, d.path(), &["run", "e.kdl", "--output", "out"]);
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert_eq!(s.queue().len(), 2, "{:?}", s.queue());
    let stop = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["stop", "out"])
        .run();
    assert!(
        stop.stdout.contains("cancelled Slurm job") || stop.stderr.contains("cancelled Slurm job"),
        "{}\n{}",
        stop.stdout,
        stop.stderr
    );
    let left = s.queue();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with(&format!("{other}|")), "{left:?}");
    let _ = s.cmd("scancel", &[&other]);
}

#[test]
fn real_slurm_a_job_ended_under_the_run_fails_the_point_with_its_state() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!("{PRELUDE}bench b {{\n    run \"sleep 60\" host=n0\n    repeat 2\n}}\n"),
    )
    .unwrap();
    let child = start_run(&s, d.path(), &["run", "e.kdl", "--output", "out"]);
    // the allocation ends under the run (as by a time limit or a node failure): cancelled here
    let job = s.queue()[0].split('|').next().unwrap().to_string();
    let _ = s.cmd("scancel", &[&job]);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("stopping: Slurm job {job} is CANCELLED")),
        "{err}"
    );
    let m = std::fs::read_to_string(d.path().join("out/manifest.csv")).unwrap();
    assert!(
        m.contains(&format!("Slurm job {job} is CANCELLED")) && m.contains("not run: Slurm job"),
        "{m}"
    );
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}
