//! Runs on a real Slurm (slurmctld + slurmd + munge on this machine, `tests/common/slurm.rs`):
//! allocation mode — `salloc --no-shell`, every step an `srun --overlap` on its node, the job
//! cancelled on every exit path. Slurm tests fail under CI when Slurm cannot run.

mod common;

use common::journal;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::slurm::{lock, Slurm};
use common::Test;
use serde_json::Value;

const PRELUDE: &str = "experiment onslurm\nslurm cluster nodes=1 time=\"00:10:00\"\nhost n0 slurm=\"cluster\" node=0\n";

/// The journal header's record of host `name`: its job and node once the run placed it.
fn host_spec(dir: &Path, name: &str) -> Value {
    let header = journal(dir)
        .into_iter()
        .find(|e| e["event"] == "header")
        .expect("a header");
    header["host_specs"]
        .as_array()
        .and_then(|hs| hs.iter().find(|h| h["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no host `{name}` in {header}"))
}

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
        // killed in the tests: what it leaves waits for `expr stop`, not its sentinel
        .env("EXPR_NO_SENTINEL", "1")
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
    let n0 = &host_spec(&out, "n0");
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
    // every step's Slurm step id is in the journal: distinct steps of the run's job
    let mut ids: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "step" && e["host"] == "n0")
        .map(|e| {
            e["slurm_step"]
                .as_str()
                .unwrap_or_else(|| panic!("no step id: {e}"))
        })
        .collect();
    assert!(ids.len() >= 8, "{ids:?}");
    assert!(
        ids.iter().all(|i| i.starts_with(&format!("{job}."))),
        "{ids:?}"
    );
    ids.sort();
    ids.dedup();
    assert!(ids.len() >= 8, "{ids:?}");
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

/// Max number of intervals that overlap, from `start=S` / `end=E` lines of the logs.
fn max_overlap(dir: &Path) -> usize {
    let mut iv: Vec<(f64, f64)> = Vec::new();
    for e in std::fs::read_dir(dir.join("logs")).unwrap().flatten() {
        let t = std::fs::read_to_string(e.path()).unwrap_or_default();
        let get = |k: &str| {
            t.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .and_then(|v| v.parse::<f64>().ok())
        };
        if let (Some(s), Some(e)) = (get("start="), get("end=")) {
            iv.push((s, e));
        }
    }
    iv.iter()
        .map(|(s, _)| iv.iter().filter(|(a, b)| a <= s && b > s).count())
        .max()
        .unwrap_or(0)
}

const ARRAY: &str = "experiment arr\nslurm grid nodes=1 mode=\"array\" throttle=4 time=\"00:10:00\"\nhost n0 slurm=\"grid\" node=0\n";

#[test]
fn real_slurm_array_mode_runs_200_points_as_throttled_tasks_and_merges_every_one() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let values: Vec<String> = (1..=200).map(|i| i.to_string()).collect();
    // 16 CPUs: the throttle, not the node, limits the tasks to 6 at once
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{}bench b {{\n    run \"echo start=$EPOCHREALTIME task=$SLURM_ARRAY_TASK_ID job=$SLURM_ARRAY_JOB_ID v={{{{ v }}}}; sleep 0.2; echo end=$EPOCHREALTIME\" host=n0\n    \
             collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    sweep v {}\n}}\n",
            ARRAY.replace("throttle=4", "throttle=6"),
            values.join(" ")
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
    // its commands.sh does not run the points here: they were array tasks (helper 81: a
    // replay wrote the login node's numbers over the run's logs)
    let replay = Command::new("bash")
        .arg(out.join("commands.sh"))
        .env("EXPR_FORCE", "1")
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&replay.stderr).contains("`grid` is an array (mode=\"array\")"),
        "{replay:?}"
    );
    // the cluster's MaxArraySize is 101: two arrays, one after the other
    let arrays: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "slurm-array")
        .collect();
    assert_eq!(arrays.len(), 2, "{arrays:?}");
    assert_eq!(arrays[0]["tasks"], 101);
    assert_eq!(arrays[1]["tasks"], 99);
    assert!(arrays.iter().all(|a| a["throttle"] == 6));
    assert!(
        ran.stderr
            .contains("(2 of 2): 99 task(s), at most 6 at once"),
        "{}",
        ran.stderr
    );
    let jobs: Vec<&str> = arrays.iter().map(|a| a["job"].as_str().unwrap()).collect();
    // every point was merged from its own task, once
    let points: Vec<&Value> = events.iter().filter(|e| e["event"] == "point").collect();
    assert_eq!(points.len(), 200);
    for p in &points {
        assert_eq!(p["status"], "ok", "{p}");
        let id = p["run_id"].as_str().unwrap();
        let v: usize = id
            .trim_start_matches("b_v")
            .trim_end_matches("_r0")
            .parse()
            .unwrap();
        let task = p["task"].as_str().unwrap();
        let (job, idx) = task.split_once('_').unwrap();
        assert!(jobs.contains(&job), "{p}");
        // task I of its array ran that array's run_ids[I]
        let log = std::fs::read_to_string(out.join(format!("logs/run1-{id}-n0.log"))).unwrap();
        assert!(
            log.contains(&format!("task={idx} job={job} v={v}")),
            "{log}"
        );
    }
    let m = std::fs::read_to_string(out.join("manifest.csv")).unwrap();
    assert_eq!(m.lines().filter(|l| l.contains(",ok,")).count(), 200, "{m}");
    // at most 6 at once, and more than one: the throttle, not a queue of one
    let most = max_overlap(&out);
    assert!((2..=6).contains(&most), "max overlap {most}");
    // each point's value, read from its task's log
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for v in [1, 77, 200] {
        assert!(
            summary.contains(&format!("| b | b | v={v} | {v}.00 |")),
            "{summary}"
        );
    }
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_array_sigint_cancels_the_array_and_records_what_did_not_run() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!("{ARRAY}bench b {{\n    run \"sleep 60 # {{{{ v }}}}\" host=n0\n    sweep v 1 2 3 4 5 6\n}}\n"),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
        .env("SLURM_CONF", &s.conf)
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // four tasks (the throttle) have started their step
    let tasks = d.path().join("out/runtime/array/tasks");
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let started = std::fs::read_dir(&tasks)
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        std::fs::read_to_string(e.path())
                            .is_ok_and(|t| t.contains("\"event\":\"process\""))
                    })
                    .count()
            })
            .unwrap_or(0);
        if started >= 4 {
            break;
        }
        assert!(Instant::now() < end, "the tasks never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
    let m = std::fs::read_to_string(d.path().join("out/manifest.csv")).unwrap();
    // six rows, none ok: the running ones interrupted, the pending ones not run
    assert_eq!(m.lines().count(), 7, "{m}");
    assert!(!m.contains(",ok,"), "{m}");
    assert!(m.contains("not run: interrupted"), "{m}");
    // the four that were running were interrupted, not failed
    assert_eq!(
        m.lines().filter(|l| l.contains(",interrupted,")).count(),
        6,
        "{m}"
    );
    assert!(!m.contains(",failed,"), "{m}");
}

#[test]
fn real_slurm_array_resume_after_sigkill_merges_finished_tasks_and_submits_only_the_rest() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    // v=1..4 end at once; v=5..8 wait for a file that appears only after the kill
    let gate = d.path().join("gate");
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{ARRAY}bench b {{\n    run #\"[ {{{{ v }}}} -le 4 ] || while [ ! -e {} ]; do sleep 0.1; done; echo v={{{{ v }}}}\"# host=n0\n    \
             collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    sweep v 1 2 3 4 5 6 7 8\n}}\n",
            gate.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "out"])
        // killed below: what it leaves waits for `expr stop`, not its sentinel
        .env("EXPR_NO_SENTINEL", "1")
        .env("SLURM_CONF", &s.conf)
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // wait until the four quick tasks have written their fragments
    let out = d.path().join("out");
    let end = Instant::now() + Duration::from_secs(60);
    let done = |out: &Path| {
        (1..=4).all(|v| {
            let f = out.join(format!("runtime/array/tasks/b_v{v}_r0.jsonl"));
            let g = out.join(format!("runtime/array/merged/b_v{v}_r0.jsonl"));
            std::fs::read_to_string(&f)
                .or_else(|_| std::fs::read_to_string(&g))
                .is_ok_and(|t| t.contains("\"event\":\"end\""))
        })
    };
    while !done(&out) {
        assert!(Instant::now() < end, "the quick tasks never ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert!(!s.queue().is_empty(), "the slow tasks are still queued");
    let resumed = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "--resume", "out"])
        .env("SLURM_CONF", &s.conf)
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // the slow tasks may go on once the resumed run has submitted its own array
    let end = Instant::now() + Duration::from_secs(60);
    while journal(&out)
        .iter()
        .filter(|e| e["event"] == "slurm-array")
        .count()
        < 2
    {
        assert!(Instant::now() < end, "the resumed run never submitted");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::write(&gate, "").unwrap();
    let o = resumed.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // the earlier array was cancelled before anything ran again
    assert!(err.contains("cancelled Slurm job"), "{err}");
    let events = journal(&out);
    let arrays: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "slurm-array")
        .collect();
    assert_eq!(arrays.len(), 2, "{arrays:?}");
    assert_eq!(arrays[0]["tasks"], 8);
    // the second array holds only the points the first did not finish
    let again: Vec<&str> = arrays[1]["run_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(!again.is_empty() && again.len() <= 4, "{again:?}");
    for v in 1..=4 {
        assert!(!again.contains(&format!("b_v{v}_r0").as_str()), "{again:?}");
    }
    let m = std::fs::read_to_string(out.join("manifest.csv")).unwrap();
    assert_eq!(m.lines().filter(|l| l.contains(",ok,")).count(), 8, "{m}");
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_time_limits_are_reported_as_timeout_in_both_modes() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    // the same one-minute limit on an allocation and on an array task; both run at once
    std::fs::write(
        d.path().join("alloc.kdl"),
        "experiment lim\nslurm c nodes=1 time=\"1\"\nhost n0 slurm=\"c\" node=0\nbench b {\n    run \"sleep 300\" host=n0\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("array.kdl"),
        "experiment lim\nslurm c nodes=1 time=\"1\" mode=\"array\"\nhost n0 slurm=\"c\" node=0\nbench b {\n    run \"sleep {{ s }}\" host=n0\n    sweep s 0.1 300\n}\n",
    )
    .unwrap();
    let start = |f: &str, o: &str| {
        Command::new(env!("CARGO_BIN_EXE_expr"))
            .args(["run", f, "--output", o])
            .env("SLURM_CONF", &s.conf)
            .current_dir(d.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = start("alloc.kdl", "a");
    let b = start("array.kdl", "b");
    let a = a.wait_with_output().unwrap();
    let b = b.wait_with_output().unwrap();
    let (ea, eb) = (
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr),
    );
    assert_eq!(a.status.code(), Some(3), "{ea}");
    assert!(ea.contains("is TIMEOUT"), "{ea}");
    let m = std::fs::read_to_string(d.path().join("a/manifest.csv")).unwrap();
    assert!(m.contains("is TIMEOUT"), "{m}");
    assert_eq!(b.status.code(), Some(3), "{eb}");
    let m = std::fs::read_to_string(d.path().join("b/manifest.csv")).unwrap();
    assert!(m.contains("b_s0_1_r0,") && m.contains(",ok,"), "{m}");
    assert!(m.contains("is TIMEOUT"), "{m}");
    let events = journal(&d.path().join("b"));
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "slurm" && e["state"] == "TIMEOUT"),
        "{events:?}"
    );
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_the_quickstart_moved_onto_an_allocation_by_set_reports_like_a_local_run() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    let out_local = d.path().join("local");
    let out_slurm = d.path().join("slurm");
    let common = ["--set", "repeat=1", "--set", "steps=10"];
    let local = Test::new()
        .dir(repo)
        .args([
            "run",
            "examples/quickstart.kdl",
            "--output",
            out_local.to_str().unwrap(),
        ])
        .args(common)
        .run();
    assert_eq!(local.status, 0, "{}", local.stderr);
    let ran = Test::new()
        .dir(repo)
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args([
            "run",
            "examples/quickstart.kdl",
            "--output",
            out_slurm.to_str().unwrap(),
        ])
        .args(common)
        .args([
            "--set",
            "slurm.test.nodes=1",
            "--set",
            "host.local.slurm=test",
        ])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(ran.stderr.contains("`test` is job "), "{}", ran.stderr);
    // the same points, metrics and report sections
    let rows = |dir: &Path| -> Vec<String> {
        std::fs::read_to_string(dir.join("manifest.csv"))
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').take(3).collect::<Vec<_>>().join(","))
            .collect()
    };
    assert_eq!(rows(&out_local), rows(&out_slurm));
    let heads = |dir: &Path| -> Vec<String> {
        std::fs::read_to_string(dir.join("summary.md"))
            .unwrap()
            .lines()
            .filter(|l| l.starts_with('#') || l.starts_with("| bench"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(heads(&out_local), heads(&out_slurm));
    let metrics = |dir: &Path| -> usize {
        std::fs::read_to_string(dir.join("metrics.csv"))
            .unwrap()
            .lines()
            .filter(|l| l.contains(",samples_per_sec,"))
            .count()
    };
    assert_eq!(metrics(&out_local), 6);
    assert_eq!(metrics(&out_slurm), 6);
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_two_nodes_run_a_sharded_ps_and_a_distributed_trainer_through_srun() {
    let _one = lock();
    let Some(nodes) = common::slurm::TwoNodes::start() else {
        return;
    };
    let s = &nodes.slurm;
    let repo = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-recstore");
    assert!(Command::new("cp")
        .arg("-r")
        .arg(format!("{}/.", src.display()))
        .arg(repo.path())
        .status()
        .unwrap()
        .success());
    let (p0, p1) = (common::sshd::free_port(), common::sshd::free_port());
    let r = repo.path().display();
    std::fs::write(
        repo.path().join("e.kdl"),
        format!(
            "experiment two\nslurm c nodes=2 time=\"00:10:00\" repo=\"{r}\"\n\
             host h1 slurm=\"c\" node=0\nhost h2 slurm=\"c\" node=1\n\
             recstore-e2e {{\n    // the hosts have no stand-in GPUs on their login PATH: CPU clients\n    device \"cpu\"\n    client host=h1 gpu=0 node-rank=0\n    client host=h2 gpu=0 node-rank=1\n    ps host=h1 port={p0} shard=0\n    ps host=h2 port={p1} shard=1\n    \
             runtime-dir \"{r}/shared_rt\"\n    steps 6\n    warmup-steps 1\n    repeat 1\n    lane RecStore-BRPC\n}}\n"
        ),
    )
    .unwrap();
    let ran = Test::new()
        .dir(repo.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = repo.path().join("out");
    let sub = &nodes.subnet;
    // the nodes' names and addresses came from Slurm
    assert!(
        ran.stderr.contains(&format!("h1 ({sub}.1), h2 ({sub}.2)")),
        "{}",
        ran.stderr
    );
    let deployment = std::fs::read_to_string(out.join("deployment.md")).unwrap();
    assert!(deployment.contains(&format!("{sub}.2")), "{deployment}");
    // shard 1 ran on h2; the h2 client reached shard 0 on h1 across the bridge
    let ps1 = std::fs::read_to_string(out.join("logs/ps1-brpc_b1024_d128_r0-h2.log")).unwrap();
    assert!(
        ps1.contains(&format!("shard 1 listening on 0.0.0.0:{p1}")),
        "{ps1}"
    );
    let client2 =
        std::fs::read_to_string(out.join("logs/client-n1-brpc_b1024_d128_r0-h2.log")).unwrap();
    assert!(client2.contains("server is ready"), "{client2}");
    // the distributed trainer: two node ranks, rendezvous at the rank-0 node's address
    let commands = std::fs::read_to_string(out.join("commands.sh")).unwrap();
    assert!(commands.contains("--nnodes 2"), "{commands}");
    assert!(
        commands.contains(&format!("--master-addr {sub}.1")),
        "{commands}"
    );
    let events = journal(&out);
    let steps: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "step" && e["phase"] == "launch")
        .collect();
    assert!(steps.iter().all(|e| e["status"] == "ok"), "{steps:?}");
    assert!(out
        .join("outputs/brpc_b1024_d128_r0/recstore_main.csv")
        .is_file());
    // every step ran in the allocation, which is gone
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
    for i in 1..=2 {
        let pids = Command::new("ip")
            .args(["netns", "pids", &format!("{}h{i}", nodes.tag)])
            .output()
            .unwrap();
        let alive: Vec<String> = String::from_utf8_lossy(&pids.stdout)
            .lines()
            .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok())
            .map(|c| c.replace('\0', " "))
            .filter(|c| !c.contains("slurmd") && !c.contains("slurmstepd"))
            .collect();
        assert!(alive.is_empty(), "left on h{i}: {alive:?}");
    }
    // array mode with two nodes per task: each task gets both, and runs a step on each
    std::fs::write(
        repo.path().join("a.kdl"),
        "experiment two-array\nslurm g nodes=2 time=\"00:10:00\" mode=\"array\"\n\
         host a slurm=\"g\" node=0\nhost b slurm=\"g\" node=1\n\
         bench x {\n    run \"echo on=$SLURMD_NODENAME v={{ v }}\" host=a\n    run \"echo on=$SLURMD_NODENAME ip={{ hosts.b.ip }}\" host=b\n    \
         collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    sweep v 1 2\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(repo.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "a.kdl", "--output", "arr"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    for v in 1..=2 {
        let a = std::fs::read_to_string(repo.path().join(format!("arr/logs/run1-x_v{v}_r0-a.log")))
            .unwrap();
        let b = std::fs::read_to_string(repo.path().join(format!("arr/logs/run2-x_v{v}_r0-b.log")))
            .unwrap();
        assert!(a.contains(&format!("on=h1 v={v}")), "{a}");
        assert!(b.contains(&format!("on=h2 ip={sub}.2")), "{b}");
    }
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

/// A `serve` step on `n0` whose server ignores SIGTERM (only KILL ends it), named `marker`.
fn stubborn(marker: &str, port: u16) -> String {
    format!(
        "    serve stubborn #\"trap '' TERM; exec -a {marker} python3 -c 'import signal,socket,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\"0.0.0.0\", {port})); s.listen(); time.sleep(300)'\"# port={port} host=n0\n"
    )
}

#[test]
fn real_slurm_a_server_that_ignores_term_is_gone_before_the_next_point() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let port = common::sshd::free_port();
    let marker = format!("expr-stubborn-{}", std::process::id());
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{PRELUDE}bench b {{\n{}    \
             run \"echo v=1\" host=n0\n    collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    repeat 2\n}}\n",
            stubborn(&marker, port)
        ),
    )
    .unwrap();
    let t = Instant::now();
    let ran = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains("still alive"), "{}", ran.stderr);
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    // TERM, then KILL after the grace: nothing of the server is left
    let left = Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    // the second repeat's server bound the same port: the first one's step was really gone
    // while the allocation still ran
    let m = std::fs::read_to_string(d.path().join("out/manifest.csv")).unwrap();
    assert_eq!(m.lines().filter(|l| l.contains(",ok,")).count(), 2, "{m}");
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

/// Wait (up to 30 s, polling every 10 ms) until the run has a job in the queue.
fn wait_queued(s: &Slurm) {
    let end = Instant::now() + Duration::from_secs(30);
    while s.queue().is_empty() {
        assert!(Instant::now() < end, "no job was submitted");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Start `expr ARGS` against the cluster, stderr captured; without its sentinel, so that what
/// a kill -9 leaves waits for `expr stop`.
fn spawn_expr(s: &Slurm, dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_expr"))
        .env("EXPR_NO_SENTINEL", "1")
        .args(args)
        .env("SLURM_CONF", &s.conf)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn real_slurm_array_tasks_with_a_fixed_port_server_each_get_the_node_and_measure_their_own() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let port = common::sshd::free_port();
    // the server answers with its own point's value; the client prints what it got
    let srv = format!(
        "import socket,sys\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('0.0.0.0', {port})); s.listen()\nwhile True:\n    c,_=s.accept(); c.sendall(sys.argv[1].encode()); c.close()\n"
    );
    std::fs::write(d.path().join("srv.py"), srv).unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{ARRAY}bench b {{\n    serve srv \"exec python3 {dir}/srv.py {{{{ v }}}}\" port={port} host=n0\n    \
             run #\"python3 -c \"import socket,time; time.sleep(0.3); s=socket.create_connection(('127.0.0.1', {port})); print('got=' + s.recv(16).decode())\"\"# host=n0\n    \
             collect \"regex\" pattern=\"got=([0-9]+)\" direction=\"higher\"\n    sweep v 1 2 3 4\n}}\n",
            dir = d.path().display()
        ),
    )
    .unwrap();
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "e.kdl", "--format", "sbatch", "--output", "out"])
        .run()
        .status(0);
    assert!(plan.stdout.contains("--exclusive"), "{}", plan.stdout);
    let ran = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    // every point read its own server's value: no task measured another's
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    for v in 1..=4 {
        assert!(
            summary.contains(&format!("| b | b | v={v} | {v}.00 |")),
            "{summary}"
        );
    }
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_array_fragments_of_a_killed_run_count_only_for_the_commands_that_made_them() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let kdl = |add: u32| {
        format!("{ARRAY}bench b {{\n    run \"sleep 1; echo v=$(( {{{{ v }}}} + {add} ))\" host=n0\n    collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    sweep v 1 2\n}}\n")
    };
    std::fs::write(d.path().join("e.kdl"), kdl(0)).unwrap();
    // the run is stopped (SIGSTOP) while its tasks finish, then killed: their fragments are
    // never merged
    let mut child = spawn_expr(&s, d.path(), &["run", "e.kdl", "--output", "out"]);
    let tasks = d.path().join("out/runtime/array/tasks");
    wait_queued(&s);
    unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
    assert!(s.drained(Duration::from_secs(30)), "{:?}", s.queue());
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let left = std::fs::read_dir(&tasks).unwrap().count();
    assert_eq!(left, 2, "both fragments wait unmerged");
    let copy = d.path().join("copy");
    assert!(Command::new("cp")
        .arg("-a")
        .arg(d.path().join("out"))
        .arg(&copy)
        .status()
        .unwrap()
        .success());
    // the command changed: resuming runs both points again and reports the new values
    std::fs::write(d.path().join("e.kdl"), kdl(100)).unwrap();
    let resumed = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "--resume", "out", "--force"])
        .run();
    assert_eq!(resumed.status, 0, "{}", resumed.stderr);
    let arrays: Vec<Value> = journal(&d.path().join("out"))
        .into_iter()
        .filter(|e| e["event"] == "slurm-array")
        .collect();
    assert_eq!(arrays.last().unwrap()["tasks"], 2, "{arrays:?}");
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    assert!(
        summary.contains("| v=1 | 101.00 |") && summary.contains("| v=2 | 102.00 |"),
        "{summary}"
    );
    // --force into the copy: the old run's files (its fragments among them) go first, so
    // nothing of it is taken as this run's
    let forced = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "copy", "--force"])
        .run();
    assert_eq!(forced.status, 0, "{}", forced.stderr);
    let summary = std::fs::read_to_string(copy.join("summary.md")).unwrap();
    assert!(
        summary.contains("| v=1 | 101.00 |") && summary.contains("| v=2 | 102.00 |"),
        "{summary}"
    );
    let headers = journal(&copy)
        .into_iter()
        .filter(|e| e["event"] == "header")
        .count();
    assert_eq!(headers, 1, "the copy holds one run");
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_expr_stop_finds_an_array_under_any_spelling_of_its_directory() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!("{ARRAY}bench b {{\n    run \"sleep 60 # {{{{ v }}}}\" host=n0\n    sweep v 1 2 3 4 5 6\n}}\n"),
    )
    .unwrap();
    let mut child = spawn_expr(&s, d.path(), &["run", "e.kdl", "--output", "./out/"]);
    wait_queued(&s);
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
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
    // running and pending tasks alike
    assert!(s.drained(Duration::from_secs(15)), "{:?}", s.queue());
}

#[test]
fn real_slurm_a_node_that_goes_down_fails_the_point_as_node_fail() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!("{PRELUDE}bench b {{\n    run \"sleep 60\" host=n0\n    repeat 2\n}}\n"),
    )
    .unwrap();
    let child = start_run(&s, d.path(), &["run", "e.kdl", "--output", "out"]);
    // the allocation's node fails under the run
    let node = s.cmd("sinfo", &["-h", "-N", "-o", "%N"]);
    let node = node.trim();
    let _ = s.cmd(
        "scontrol",
        &[
            "update",
            &format!("nodename={node}"),
            "state=down",
            "reason=expr-test",
        ],
    );
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("is NODE_FAIL"), "{err}");
    let m = std::fs::read_to_string(d.path().join("out/manifest.csv")).unwrap();
    // srun exits 0 after a node failure: the point is failed all the same, with the log line
    // that says what happened, and the rest is not run
    assert!(!m.contains(",ok,"), "{m}");
    assert!(
        m.contains("is NODE_FAIL") && m.contains("not run: Slurm job"),
        "{m}"
    );
    // the log line that says so: srun's `Node failure on …` or slurmstepd's `… DUE TO NODE
    // FAILURE …`, whichever the log holds first (it was taken for srun's alone, and the test
    // failed when slurmstepd's came first)
    assert!(
        m.contains("killed by Slurm although srun exited 0")
            && m.to_lowercase().contains("node failure"),
        "{m}"
    );
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_force_into_a_directory_with_a_live_array_cancels_it_first() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let kdl = |add: u32| {
        format!("experiment f\nslurm grid nodes=1 mode=\"array\" throttle=1 time=\"00:10:00\"\nhost n0 slurm=\"grid\" node=0\nbench b {{\n    run \"sleep 1; echo v=$(( {{{{ v }}}} + {add} ))\" host=n0\n    collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    sweep v 1 2 3\n}}\n")
    };
    std::fs::write(d.path().join("e.kdl"), kdl(0)).unwrap();
    let mut child = spawn_expr(&s, d.path(), &["run", "e.kdl", "--output", "out"]);
    wait_queued(&s);
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    // the earlier array still runs; --force must not take its tasks for its own
    std::fs::write(d.path().join("e.kdl"), kdl(100)).unwrap();
    let forced = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--force"])
        .run();
    assert_eq!(forced.status, 0, "{}", forced.stderr);
    assert!(
        forced.stderr.contains("cancelled Slurm job"),
        "{}",
        forced.stderr
    );
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    for v in 1..=3 {
        assert!(
            summary.contains(&format!("| v={v} | 10{v}.00 |")),
            "{summary}"
        );
    }
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_an_experiment_edited_while_its_array_runs_fails_the_tasks_left_and_says_why() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment e\nslurm grid nodes=1 mode=\"array\" throttle=1 time=\"00:10:00\"\nhost n0 slurm=\"grid\" node=0\nbench b {\n    run \"sleep 1; echo v={{ v }}\" host=n0\n    collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    sweep v 1 2 3\n}\n",
    )
    .unwrap();
    let child = spawn_expr(&s, d.path(), &["run", "e.kdl", "--output", "out"]);
    // once the first task runs, the file changes under the array
    let first = d.path().join("out/runtime/array/tasks/b_v1_r0.jsonl");
    let end = Instant::now() + Duration::from_secs(30);
    while !first.exists() {
        assert!(Instant::now() < end, "the first task never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(d.path().join("e.kdl"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"// edited\n").unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let m = std::fs::read_to_string(d.path().join("out/manifest.csv")).unwrap();
    assert!(
        m.contains("b_v1_r0,") && m.lines().nth(1).unwrap().contains(",ok,"),
        "{m}"
    );
    assert_eq!(
        m.lines()
            .filter(|l| l.contains("changed since the array was submitted"))
            .count(),
        2,
        "{m}"
    );
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_array_tasks_tear_down_with_the_runs_grace_count_the_runs_points_and_ignore_an_unused_array(
) {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let port = common::sshd::free_port();
    let marker = format!("expr-stubborn-array-{}", std::process::id());
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{1}bench b {{\n{0}    \
             run \"echo v={{{{ v }}}}\" host=n0\n    collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    sweep v 1 2 3\n}}\n",
            stubborn(&marker, port),
            // a declared array of two nodes that no host is on: not the tasks' array (each
            // task once checked its one node against it and failed)
            ARRAY.replace("throttle=4", "throttle=1")
                + "slurm spare nodes=2 mode=\"array\" time=\"00:10:00\"\n"
        ),
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("no host is on the allocation `spare`"),
        "{}",
        ran.stderr
    );
    let out = d.path().join("out");
    let events = journal(&out);
    // each task stopped its server that ignores TERM with the run's grace (1 s), not the
    // default 5 s: from the client's exit to the server's group gone
    let at = |e: &Value| {
        chrono::DateTime::parse_from_rfc3339(e["at"].as_str().unwrap())
            .unwrap()
            .timestamp_millis()
    };
    let mut stops = 0;
    for (i, e) in events.iter().enumerate() {
        if e["event"] == "stopped" {
            stops += 1;
            assert_eq!(e["gone"], true, "{e}");
            let before = events[..i]
                .iter()
                .rev()
                .find(|b| b["task"] == e["task"] && b["event"] == "step" && b["phase"] == "launch")
                .unwrap_or_else(|| panic!("no exit before {e}"));
            let took = at(e) - at(before);
            assert!((900..3500).contains(&took), "teardown took {took} ms: {e}");
        }
    }
    assert_eq!(stops, 3, "{events:?}");
    // a task's progress line counts the run's points: `[2/3]`, not `[2/1]`
    let mut logs = String::new();
    for f in std::fs::read_dir(out.join("logs")).unwrap() {
        let f = f.unwrap().path();
        if f.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("slurm-")
        {
            logs.push_str(&std::fs::read_to_string(&f).unwrap());
        }
    }
    for k in 1..=3 {
        assert!(logs.contains(&format!("[{k}/3] b_v{k}_r0 ok")), "{logs}");
    }
    assert!(!logs.contains("/1] "), "{logs}");
    let left = Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&left.stdout)
    );
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

/// Array mode and the noise checks (issue 27): each task checks the node it got before and
/// after its point, records its machine, and flags a point measured with a foreign process on
/// its GPU; under `noise "refuse"` a task does not run its point there. There is no GPU here:
/// a stand-in `nvidia-smi` is on the tasks' PATH the way a cluster's is, through the
/// environment `sbatch` exports from the submitting shell (`--export=ALL`, Slurm's default).
#[test]
fn real_slurm_array_tasks_check_their_node_before_and_after_the_point_standin_gpu() {
    use common::gpu::{calls, quiet_gpu, standin_nvidia_smi, UUID};
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    standin_nvidia_smi(&bin, &quiet_gpu(UUID), "");
    // another job's process, which point v=2 finds on the GPU (as if it started then)
    let mut foreign = Command::new("sleep").arg("300").spawn().unwrap();
    let pid = foreign.id();
    let apps = bin.join("apps.csv");
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{}bench b {{\n    run \"touch ran-{{{{ v }}}}; if [ {{{{ v }}}} = 2 ]; then echo '{UUID}, {pid}, 512' > {apps}; fi\" host=n0\n    sweep v 1 2 3\n}}\n",
            ARRAY.replace("throttle=4", "throttle=1"),
            apps = apps.display()
        ),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |out: &str, extra: &[&str]| {
        Test::new()
            .dir(d.path())
            .env("SLURM_CONF", s.conf.to_str().unwrap())
            .env("PATH", &path)
            .args(["run", "e.kdl", "--output", out, "--grace", "1"])
            .args(extra)
            .run()
    };
    let ran = run("out", &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = d.path().join("out");
    let said =
        format!("noise: host `n0` GPU 0: foreign process pid {pid} (sleep, user root, 512 MiB)");
    let m = std::fs::read_to_string(out.join("manifest.csv")).unwrap();
    let row = |v: u32| {
        m.lines()
            .find(|l| l.contains(&format!("b_v{v}_r0")))
            .unwrap_or_else(|| panic!("no row of v={v}: {m}"))
            .to_string()
    };
    // v=1 ran on a quiet GPU; v=2 had the process after it, v=3 before and after
    assert!(row(1).contains(",ok,") && !row(1).contains("noise"), "{m}");
    for v in [2, 3] {
        assert!(row(v).contains(",ok,") && row(v).contains(&said), "{m}");
    }
    let events = journal(&out);
    let points: Vec<&Value> = events.iter().filter(|e| e["event"] == "point").collect();
    assert_eq!(points.len(), 3, "{points:?}");
    for p in &points {
        let flagged = p["noise"].as_array().is_some_and(|n| !n.is_empty());
        assert_eq!(flagged, p["run_id"] != "b_v1_r0", "{p}");
    }
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("Points measured under noise (2)"),
        "{summary}"
    );
    // each task recorded the machine of its node; the submitting run did not take its own
    // machine for the node's
    let machines: Vec<&Value> = events.iter().filter(|e| e["event"] == "machine").collect();
    let of_tasks: Vec<&&Value> = machines
        .iter()
        .filter(|m| m.get("task").is_some())
        .collect();
    assert_eq!(of_tasks.len(), 3, "{machines:?}");
    assert!(of_tasks
        .iter()
        .all(|m| m["host"] == "n0" && m["gpus"][0]["uuid"] == UUID));
    assert!(
        machines
            .iter()
            .filter(|m| m.get("task").is_none())
            .all(|m| m.get("gpus").is_none()
                && m["notes"][0]
                    .as_str()
                    .is_some_and(|n| n.starts_with("on a Slurm array"))),
        "{machines:?}"
    );
    // each task's node is named, in deployment.md (under its task) and in the report
    let node = of_tasks[0]["node"].as_str().unwrap_or("").to_string();
    assert!(!node.is_empty(), "{:?}", of_tasks[0]);
    let deployment = std::fs::read_to_string(out.join("deployment.md")).unwrap();
    for m in &of_tasks {
        let task = m["task"].as_str().unwrap();
        assert!(
            deployment.contains(&format!(
                "## machine (array task {task})\n\n### host `n0` (node `{node}`)\n"
            )),
            "{deployment}"
        );
    }
    assert!(
        summary.contains(&format!("host `n0` (node `{node}`, task ")),
        "{summary}"
    );
    assert!(!summary.contains("on a Slurm array"), "{summary}");
    // the stand-in ran inside the tasks only: twice in each task's job (before and after its
    // point)
    let mut gpu_calls: Vec<String> = calls(&bin)
        .into_iter()
        .filter(|c| c.0.starts_with("--query-gpu"))
        .map(|c| c.2)
        .collect();
    assert_eq!(gpu_calls.len(), 6, "{gpu_calls:?}");
    gpu_calls.sort();
    gpu_calls.dedup();
    assert_eq!(gpu_calls.len(), 3, "one job per task: {gpu_calls:?}");
    assert!(gpu_calls.iter().all(|j| !j.is_empty()), "{gpu_calls:?}");

    // `--noise refuse`: every task finds the process before its point and does not run it
    std::fs::write(&apps, format!("{UUID}, {pid}, 512\n")).unwrap();
    for v in 1..=3 {
        let _ = std::fs::remove_file(d.path().join(format!("ran-{v}")));
    }
    let ran = run("refused", &["--noise", "refuse"]);
    assert_eq!(ran.status, 3, "{}", ran.stderr);
    let m = std::fs::read_to_string(d.path().join("refused/manifest.csv")).unwrap();
    assert_eq!(
        m.lines().filter(|l| l.contains(",failed,")).count(),
        3,
        "{m}"
    );
    assert!(
        m.contains(&format!(
            "not run: noise \"\"refuse\"\": host `n0` GPU 0: foreign process pid {pid} (sleep, user root, 512 MiB) is on it"
        )) && m.contains(&format!("`kill {pid}` on `n0`")),
        "{m}"
    );
    for v in 1..=3 {
        assert!(!d.path().join(format!("ran-{v}")).exists(), "v={v} ran");
    }
    // a Chinese report says the refusal in Chinese, its facts as recorded
    let zh = Test::new()
        .dir(d.path())
        .args(["report", "refused", "--lang", "zh"])
        .run();
    assert_eq!(zh.status, 3, "{}", zh.stderr);
    let summary = std::fs::read_to_string(d.path().join("refused/summary.md")).unwrap();
    assert!(
        summary.contains(&format!(
            "未运行：noise \"refuse\"：主机 `n0` GPU 0：外来进程 pid {pid}"
        )) && !summary.contains("foreign process"),
        "{summary}"
    );
    let _ = foreign.kill();
    let _ = foreign.wait();
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

/// Allocation mode and the noise checks: the node of the allocation is probed on the node,
/// through `srun` in the run's job (at preflight and after each point), not on the machine
/// expr runs on. A stand-in `nvidia-smi` (no GPU here) is on the PATH that `srun` exports.
#[test]
fn real_slurm_allocation_mode_probes_the_node_in_the_job_standin_gpu() {
    use common::gpu::{calls, quiet_gpu, standin_nvidia_smi, UUID};
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    standin_nvidia_smi(&bin, &quiet_gpu(UUID), "");
    std::fs::write(
        d.path().join("e.kdl"),
        format!("{PRELUDE}bench b {{\n    run \"true {{{{ v }}}}\" host=n0\n    sweep v 1 2\n}}\n"),
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .env(
            "PATH",
            &format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let events = journal(&d.path().join("out"));
    let header = events.iter().find(|e| e["event"] == "header").unwrap();
    let job = header["host_specs"][0]["slurm"]["job"]
        .as_str()
        .unwrap()
        .to_string();
    let m = events
        .iter()
        .find(|e| e["event"] == "machine" && e["host"] == "n0")
        .expect("n0's machine");
    assert_eq!(m["gpus"][0]["uuid"], UUID, "{m}");
    // preflight and after each of the two points, each in the run's job
    let jobs: Vec<String> = calls(&bin)
        .into_iter()
        .filter(|c| c.0.starts_with("--query-gpu"))
        .map(|c| c.2)
        .collect();
    assert_eq!(jobs, vec![job.clone(), job.clone(), job], "{}", ran.stderr);
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

/// `telemetry` on a node of an allocation (issue 42): the sampler runs in the run's job on the
/// node (`srun --overlap`, as every step there), its samples come back as the point's CSV, and
/// the energy is the stand-in GPU's power over the measured window.
#[test]
fn real_slurm_telemetry_samples_the_node_in_the_job_standin_gpu() {
    use common::gpu::{calls, quiet_gpu, standin_nvidia_smi, standin_samples};
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    standin_nvidia_smi(&bin, &quiet_gpu("GPU-slurm"), "");
    standin_samples(
        &bin,
        "0, GPU-slurm, 250.00, 1410, 1593, 90, 40, 1000, 50, 0x0000000000000000\n",
        None,
    );
    let prelude = PRELUDE.replacen(
        "experiment onslurm\n",
        "experiment onslurm {\n    telemetry interval-ms=100\n}\n",
        1,
    );
    let kdl = format!("{prelude}bench b {{\n    run \"sleep 1\" host=n0\n}}\n");
    std::fs::write(d.path().join("e.kdl"), &kdl).unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .env(
            "PATH",
            &format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .args(["run", "e.kdl", "--output", "out", "-q"])
        .run();
    assert_eq!(ran.status, 0, "{kdl}\n{}", ran.stderr);
    let out = d.path().join("out");
    let events = journal(&out);
    let header = events.iter().find(|e| e["event"] == "header").unwrap();
    let job = header["host_specs"][0]["slurm"]["job"]
        .as_str()
        .unwrap()
        .to_string();
    // the sampler ran in the run's job
    let sampled: Vec<String> = calls(&bin)
        .into_iter()
        .filter(|c| c.0.contains("-lms 100"))
        .map(|c| c.2)
        .collect();
    assert_eq!(sampled, vec![job], "{:?}", calls(&bin));
    let csv = std::fs::read_to_string(out.join("outputs/b_r0/telemetry-n0.csv")).unwrap();
    assert!(
        csv.lines()
            .filter(|l| l.contains("GPU-slurm, 250.00"))
            .count()
            >= 5,
        "{csv}"
    );
    let w = common::window_ms(&out);
    let e: f64 = common::metric_rows(&out, "gpu_energy_j")[0]
        .0
        .parse()
        .unwrap();
    let want = 250.0 * w / 1e3;
    assert!((e - want).abs() / want < 0.01, "{e} J against {want} J");
    // the NVML sampler (a program of several lines) ran on the node too and said why it has no
    // counter there; the energy stays the samples' integral, said so
    let nvml = std::fs::read_to_string(out.join("outputs/b_r0/nvml-n0.csv")).unwrap();
    assert!(
        nvml.lines()
            .any(|l| l.starts_with("expr-telemetry: no NVML energy counter: ")),
        "{nvml}"
    );
    assert!(common::metric_rows(&out, "gpu_energy_j")[0]
        .1
        .contains("; no NVML energy counter: "));
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

#[test]
fn real_slurm_pool_of_two_nodes_runs_points_at_once_under_jobs_and_records_the_node() {
    // a pool of the two nodes of one allocation: --jobs 2 runs a point on each at once, every
    // step an srun on the node its point was placed on
    let _one = lock();
    let Some(nodes) = common::slurm::TwoNodes::start() else {
        return;
    };
    let s = &nodes.slurm;
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "experiment pooled\nslurm c nodes=2 time=\"00:10:00\" repo=\"{r}\"\n\
             host h1 slurm=\"c\" node=0\nhost h2 slurm=\"c\" node=1\npool nodes \"h1\" \"h2\"\n\
             bench b {{\n    param k 0\n    run \"sleep 1; echo k={{{{ k }}}} node=$SLURMD_NODENAME\" host=nodes\n    \
             collect \"regex\" pattern=\"k=([0-9]+)\"\n    sweep k 0 1 2 3\n}}\n",
            r = d.path().display()
        ),
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--jobs", "2"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = d.path().join("out");
    let events = journal(&out);
    let points: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "point").collect();
    assert_eq!(points.len(), 4);
    // each point's log says it ran on the node it was placed on (the nodes are named h1 and h2
    // in Slurm too)
    for p in &points {
        let id = p["run_id"].as_str().unwrap();
        let placed = p["placed"].as_str().unwrap();
        assert!(["h1", "h2"].contains(&placed), "{p}");
        let log =
            std::fs::read_to_string(out.join(format!("logs/run1-{id}-{placed}.log"))).unwrap();
        assert!(
            log.contains(&format!("node={placed}")),
            "{id} on {placed}: {log}"
        );
    }
    // two at once: the launch steps of the first two points overlap
    let mut iv: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e["event"] == "step" && e["phase"] == "launch")
        .map(|e| {
            let at = chrono::DateTime::parse_from_rfc3339(e["at"].as_str().unwrap()).unwrap();
            let end = at.timestamp_micros() as f64 / 1e6;
            (end - e["elapsed_s"].as_f64().unwrap(), end)
        })
        .collect();
    iv.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(
        iv[1].0 < iv[0].1,
        "the first two points did not overlap: {iv:?}"
    );
    assert!(ran.stderr.contains("cancelled job"), "{}", ran.stderr);
    common::assert_no_survivors(&out);
}

#[test]
fn real_slurm_commands_sh_runs_the_srun_lines_of_the_plan_in_an_allocation_of_its_own() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let port = common::sshd::free_port();
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{PRELUDE}bench b {{\n    serve table \"exec python3 -m http.server {port} --bind 0.0.0.0\" port={port} host=n0\n    \
             run \"echo node=$SLURMD_NODENAME job=$SLURM_JOB_ID ip={{{{ hosts.n0.ip }}}}; curl -s -o /dev/null -w 'http=%{{http_code}}' http://{{{{ hosts.n0.ip }}}}:{port}/\" host=n0\n    \
             collect \"regex\" pattern=\"http=([0-9]+)\"\n}}\n"
        ),
    )
    .unwrap();
    let conf = s.conf.to_str().unwrap();
    // the plan's script makes its own allocation, runs each step through srun on the node, and
    // gives the job back
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "e.kdl", "--format", "sh", "--output", "planned"])
        .run()
        .status(0);
    std::fs::write(d.path().join("c.sh"), &plan.stdout).unwrap();
    let ran = Command::new("bash")
        .arg("c.sh")
        .env("SLURM_CONF", conf)
        .current_dir(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "{err}\n{}", plan.stdout);
    let job = err
        .split("`cluster` is job ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap_or_else(|| panic!("{err}"))
        .to_string();
    let log = std::fs::read_to_string(d.path().join("planned/logs/run1-b_r0-n0.log")).unwrap();
    assert!(
        log.contains(&format!("job={job} ip=")) && log.contains("http=200"),
        "{log}"
    );
    assert!(!log.contains("slurm:cluster"), "{log}");
    // the step said its id, as in the run
    let id =
        std::fs::read_to_string(d.path().join("planned/runtime/slurm-steps/run1-b_r0-n0")).unwrap();
    assert!(id.starts_with(&format!("{job}.")), "{id}");
    assert!(err.contains(&format!("expr: cancelled job {job}")), "{err}");
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
    // the run's own commands.sh names the run's job: what it ran, and refused once the job is
    // gone
    let run = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", conf)
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(run.status, 0, "{}", run.stderr);
    let n0 = host_spec(&d.path().join("out"), "n0");
    let (job, node) = (
        n0["slurm"]["job"].as_str().unwrap(),
        n0["slurm"]["nodename"].as_str().unwrap(),
    );
    let script = std::fs::read_to_string(d.path().join("out/commands.sh")).unwrap();
    assert!(
        script.contains(&format!(
            "srun --jobid={job} --overlap --job-name=run1-b_r0 --nodelist={node} --nodes=1"
        )),
        "{script}"
    );
    let again = Command::new("bash")
        .arg("out/commands.sh")
        .env("SLURM_CONF", conf)
        .env("EXPR_FORCE", "1")
        .current_dir(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(4), "{err}");
    assert!(err.contains(&format!("expr: job {job} has ended")), "{err}");
}

#[test]
fn real_slurm_commands_sh_gives_its_job_back_when_stopped_in_the_queue_or_a_node_has_no_address() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let conf = s.conf.to_str().unwrap();
    let script = |kdl: &str, out: &str| {
        std::fs::write(d.path().join("e.kdl"), kdl).unwrap();
        let plan = Test::new()
            .dir(d.path())
            .args(["plan", "e.kdl", "--format", "sh", "--output", out])
            .run()
            .status(0);
        std::fs::write(d.path().join(format!("{out}.sh")), &plan.stdout).unwrap();
    };
    // a job that waits in the queue (it may start in an hour): a TERM to the script alone, as
    // `timeout` or `kill` sends it, ends the wait, and the queued job is cancelled
    script(
        "experiment q\nslurm cluster nodes=1 alloc-args=\"--begin=now+3600\"\nhost n0 slurm=\"cluster\" node=0\nbench b {\n    run \"true\" host=n0\n}\n",
        "queued",
    );
    let mut sh = Command::new("bash")
        .arg("queued.sh")
        .env("SLURM_CONF", conf)
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_queued(&s);
    // SAFETY: the script is our child, not yet waited for
    unsafe { libc::kill(sh.id() as libc::pid_t, libc::SIGTERM) };
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = sh.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < end,
            "the script went on waiting for salloc"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut sh.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(s.drained(Duration::from_secs(10)), "{:?}\n{err}", s.queue());
    // a node whose `hostname -I` prints no address (srun passes the script's PATH on): the
    // script stops before any step, as `expr run` does, and gives the job back
    let bin = d.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("hostname"), "#!/bin/sh\nexit 0\n").unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(bin.join("hostname"))
            .unwrap()
            .permissions(),
        0o755,
    );
    std::fs::set_permissions(
        bin.join("hostname"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    script(
        "experiment n\nslurm cluster nodes=1\nhost n0 slurm=\"cluster\" node=0\nbench b {\n    run \"echo ran > ran.txt\" host=n0\n}\n",
        "noaddr",
    );
    let ran = Command::new("bash")
        .arg("noaddr.sh")
        .env("SLURM_CONF", conf)
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .current_dir(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(4), "{err}");
    assert!(err.contains("`hostname -I` there printed none"), "{err}");
    assert!(err.contains("expr: cancelled job "), "{err}");
    assert!(!d.path().join("ran.txt").exists());
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
    // a job that ends under the script (cancelled here) ends it before the points left, as
    // it ends `expr run` (it failed each of them)
    script(
        "experiment e\nslurm cluster nodes=1\nhost n0 slurm=\"cluster\" node=0\nbench b {\n    run \"sleep 3\" host=n0\n    repeat 3\n}\n",
        "ended",
    );
    let sh = Command::new("bash")
        .arg("ended.sh")
        .env("SLURM_CONF", conf)
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_queued(&s);
    std::thread::sleep(Duration::from_millis(1500));
    let job = s.queue()[0].split('|').next().unwrap().to_string();
    s.cmd("scancel", &[&job]);
    let o = sh.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!(
            "expr: Slurm job {job} has ended: the points left are not run"
        )),
        "{err}"
    );
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
    // commands.sh killed with -9 keeps no journal: `expr stop` of its directory still cancels
    // the job it made, by the directory in its comment
    let mut sh = Command::new("bash")
        .arg("ended.sh")
        .env("SLURM_CONF", conf)
        .env("EXPR_FORCE", "1")
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_queued(&s);
    sh.kill().unwrap();
    sh.wait().unwrap();
    let stop = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", conf)
        .args(["stop", "ended"])
        .run();
    assert_eq!(stop.status, 0, "{}", stop.stderr);
    assert!(
        stop.stderr.contains("cancelled Slurm job "),
        "{}",
        stop.stderr
    );
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

/// `--resume` and `--force` into a directory a Slurm run wrote: what the earlier run left is
/// stopped, but the job the new run has just got carries the same comment and stays (helper
/// 82: it was cancelled as "left by an earlier run", and every point failed as CANCELLED).
#[test]
fn real_slurm_resume_and_force_keep_the_allocation_they_just_got() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{PRELUDE}bench b {{\n    param v 1\n    run \"test -e flag-{{{{ v }}}} || {{ touch flag-{{{{ v }}}}; exit 1; }}; echo v={{{{ v }}}}\" host=n0\n    \
             collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane a v=1\n    lane b v=2\n}}\n"
        ),
    )
    .unwrap();
    let run = |args: &[&str], status: i32| {
        let r = Test::new()
            .dir(d.path())
            .env("SLURM_CONF", s.conf.to_str().unwrap())
            .args(args)
            .run();
        assert_eq!(r.status, status, "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("left by an earlier run"), "{}", r.stderr);
        assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
        r
    };
    // each lane fails once, then runs
    run(&["run", "e.kdl", "--output", "out"], 3);
    let resumed = run(&["run", "--resume", "out"], 0);
    assert!(
        resumed.stderr.contains("`cluster` is job "),
        "{}",
        resumed.stderr
    );
    let rows = common::manifest_by_name(&d.path().join("out"));
    assert!(rows.iter().all(|r| &r[13] == "ok"), "{rows:?}");
    run(&["run", "e.kdl", "--output", "out", "--force"], 0);
}

/// An allocation whose `alloc-args` hold `--quiet`: salloc grants it without its "Granted job
/// allocation N" line; the run finds its job by name and comment (helper 81: it failed with
/// "gave no allocation" and left the job running).
#[test]
fn real_slurm_a_quiet_salloc_is_found_by_its_comment() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment q\nslurm cluster nodes=1 alloc-args=\"--quiet\"\nhost n0 slurm=\"cluster\" node=0\nbench b {\n    run \"echo job=$SLURM_JOB_ID\" host=n0\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let job = host_spec(&d.path().join("out"), "n0")["slurm"]["job"]
        .as_str()
        .unwrap()
        .to_string();
    let log = std::fs::read_to_string(d.path().join("out/logs/run1-b_r0-n0.log")).unwrap();
    assert!(log.contains(&format!("job={job}")), "{log}");
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}

/// slurmstepd runs a step whose `--chdir` is not there in /tmp instead (it only logs "couldn't
/// chdir … going to /tmp instead"): the step's own `cd DIR || exit 200` stops it there, and
/// its code, above 128, is one no `exit-ok=` accepts on a node.
#[test]
fn real_slurm_a_step_whose_directory_is_missing_fails_and_never_runs_in_tmp() {
    let _one = lock();
    let Some(s) = Slurm::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let mark = d.path().join("ran-in");
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "{PRELUDE}bench b {{\n    run \"pwd > {}; echo rate=1; exit 1\" host=n0 cwd=\"not-here\" exit-ok=\"any\"\n    collect regex pattern=\"rate=([0-9]+)\"\n}}\n",
            mark.display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "out"])
        .env("SLURM_CONF", &s.conf)
        .current_dir(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        !mark.exists(),
        "the step ran in {}",
        std::fs::read_to_string(&mark).unwrap_or_default()
    );
    let m = std::fs::read_to_string(d.path().join("out/manifest.csv")).unwrap();
    assert!(m.contains(",failed,") && m.contains("exit 200"), "{m}");
    assert!(s.drained(Duration::from_secs(10)), "{:?}", s.queue());
}
