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
            // the variable's value: up to `;`, or the next word the line exports
            let gpu = cmd
                .split("CUDA_VISIBLE_DEVICES=")
                .nth(1)
                .and_then(|r| r.split([';', ' ']).next())
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

/// No two points ran on one GPU at once (`what`: where, for the message).
fn no_gpu_shared_at_once(iv: &[(String, String, f64, f64)], what: &str) {
    for a in iv {
        for b in iv {
            if a.0 != b.0 && a.1 == b.1 {
                assert!(
                    a.3 <= b.2 || b.3 <= a.2,
                    "{a:?} and {b:?} ran at once on GPU {} {what}",
                    a.1
                );
            }
        }
    }
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
            .args(["run", file, "--output", out, "--jobs", jobs])
            .run()
            .status(0)
    };
    run("g.kdl", "one", "1");
    let four = run("g.kdl", "four", "4");
    assert!(
        !four.stderr.contains("run one at a time"),
        "{}",
        four.stderr
    );
    let iv = intervals(&p.join("four"));
    assert_eq!(iv.len(), 16, "{iv:?}");
    // never two points on one GPU at once
    no_gpu_shared_at_once(&iv, "of the host");
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
    // the report says which points ran at once, and on what
    assert!(
        summary.contains("## Points that ran at once")
            && summary.contains("point(s) ran beside another on one host (`--jobs`)"),
        "{summary}"
    );
    let beside = summary
        .lines()
        .find(|l| l.starts_with("- b_k0_r0 beside "))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(beside.contains("(local GPU "), "{beside}");
    let alone = std::fs::read_to_string(p.join("one/summary.md")).unwrap();
    assert!(!alone.contains("ran at once"), "{alone}");
    // steps without GPUs take the host whole: one at a time even with --jobs 4
    let whole = run("whole.kdl", "whole", "4");
    assert_eq!(most_at_once(&intervals(&p.join("whole"))), 1);
    // …and the run says so, not six workers' tags that read as six at once
    assert!(
        whole.stderr.contains("note: --jobs 4: every point takes `local` whole (no step there names GPUs of its own, e.g. `gpus=1`), so the points run one at a time"),
        "{}",
        whole.stderr
    );
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

/// kill -9 of `expr run --jobs 4` while points run, `expr stop`, then `--resume` (issue 40):
/// nothing is left running, no point is lost or measured twice, and every point ends ok.
#[test]
fn standin_gpu_jobs_kill_stop_resume_loses_nothing_and_runs_nothing_twice() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("g.kdl"),
        exp(" gpus=1").replace("sleep 0.4", "sleep 1"),
    )
    .unwrap();
    let hist = common::test_history();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        // killed below: its processes are left for `expr stop`, not its sentinel
        .env("EXPR_NO_SENTINEL", "1")
        .args(["run", "g.kdl", "--output", "out", "-q", "--jobs", "4"])
        .current_dir(p)
        .env("PATH", common::gpu::gpu_path())
        .env("EXPR_HISTORY", &hist)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // in the middle: some points merged into the journal, four running in their workers
    // (whose events are in their fragments until their point ends)
    let out = p.join("out");
    let t0 = std::time::Instant::now();
    loop {
        let ended = common::journal(&out)
            .iter()
            .filter(|e| e["event"] == "point")
            .count();
        let running = fragment_groups(&out)
            .into_iter()
            .filter(|g| common::group_alive(*g))
            .count();
        if (4..=10).contains(&ended) && running >= 2 {
            break;
        }
        assert!(t0.elapsed().as_secs() < 60, "the run never got going");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let in_flight: Vec<i64> = fragment_groups(&out)
        .into_iter()
        .filter(|g| common::group_alive(*g))
        .collect();
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let before: Vec<String> = common::journal(&out)
        .iter()
        .filter(|e| e["event"] == "point" && e["status"] == "ok")
        .map(|e| e["run_id"].as_str().unwrap().to_string())
        .collect();
    assert!(before.len() >= 4 && before.len() < 16, "{before:?}");
    // the killed workers' groups are alive until `expr stop`, which reads their fragments
    assert!(
        in_flight.iter().any(|g| common::group_alive(*g)),
        "{in_flight:?}"
    );
    Test::new().dir(p).args(["stop", "out"]).run().status(0);
    common::assert_no_survivors(&out);
    assert!(
        !in_flight.iter().any(|g| common::group_alive(*g)),
        "{in_flight:?}"
    );
    Test::new()
        .dir(p)
        .env("PATH", common::gpu::gpu_path())
        .args(["run", "g.kdl", "-q", "--jobs", "4", "--resume", "out"])
        .run()
        .status(0);
    let rows = statuses(&out);
    assert_eq!(rows.len(), 16);
    assert!(rows.iter().all(|(s, _)| s == "ok"), "{rows:?}");
    // each point measured once: the ones that ended before the kill are not run again
    let ok: Vec<String> = common::journal(&out)
        .iter()
        .filter(|e| e["event"] == "point" && e["status"] == "ok")
        .map(|e| e["run_id"].as_str().unwrap().to_string())
        .collect();
    let mut unique = ok.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 16, "{ok:?}");
    assert_eq!(ok.len(), 16, "a point measured twice: {ok:?}");
    common::assert_no_survivors(&out);
}

/// The process groups the workers' fragments not merged yet (`runtime/array/tasks/*.jsonl`)
/// record.
fn fragment_groups(out: &Path) -> Vec<i64> {
    let mut v = Vec::new();
    let mut dirs = vec![out.join("runtime/array/tasks")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "jsonl") {
                for l in std::fs::read_to_string(&path).unwrap_or_default().lines() {
                    if let Ok(e) = serde_json::from_str::<serde_json::Value>(l) {
                        if e["event"] == "process" {
                            v.extend(e["pgid"].as_i64());
                        }
                    }
                }
            }
        }
    }
    v
}

/// `jobs 4` in the experiment runs points at once like `--jobs 4`; `--jobs 1` overrides it;
/// `check --resolved` keeps it.
#[test]
fn standin_gpu_jobs_in_the_experiment_and_the_command_line_over_it() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("g.kdl"),
        exp(" gpus=1").replace(
            "    description \"one-GPU points\"\n",
            "    description \"one-GPU points\"\n    jobs 4\n    order \"interleave\"\n",
        ),
    )
    .unwrap();
    let run = |out: &str, extra: &[&str]| {
        let mut args = vec!["run", "g.kdl", "--output", out, "-q"];
        args.extend_from_slice(extra);
        Test::new()
            .dir(p)
            .env("PATH", common::gpu::gpu_path())
            .args(args)
            .run()
            .status(0);
    };
    run("file", &[]);
    assert_eq!(most_at_once(&intervals(&p.join("file"))), 4);
    // interleaved: the drift plot, the headline against the time each point ran
    let drift = std::fs::read_to_string(p.join("file/drift_b.svg")).unwrap();
    assert!(drift.contains("over the campaign (drift)"), "{drift}");
    assert!(drift.contains("minutes since the first point"), "{drift}");
    run("cli", &["--jobs", "1"]);
    assert_eq!(most_at_once(&intervals(&p.join("cli"))), 1);
    let resolved = Test::new()
        .dir(p)
        .args(["check", "g.kdl", "--resolved"])
        .run()
        .status(0)
        .stdout;
    assert!(resolved.contains("    jobs 4\n"), "{resolved}");
}

/// Ctrl-C (SIGINT) of `expr run --jobs 4` with points in flight: it exits 130 with the journal's
/// `end`, the points in flight interrupted and the rest said not run, a report, nothing left
/// running; `--resume` then runs what did not end ok.
#[test]
fn standin_gpu_jobs_sigint_with_points_in_flight_stops_them_all_and_resume_finishes() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("g.kdl"),
        exp(" gpus=1").replace("sleep 0.4", "sleep 2"),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "g.kdl", "--output", "out", "-q", "--jobs", "4"])
        .current_dir(p)
        .env("PATH", common::gpu::gpu_path())
        .env("EXPR_HISTORY", common::test_history())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = p.join("out");
    let t0 = std::time::Instant::now();
    while fragment_groups(&out)
        .into_iter()
        .filter(|g| common::group_alive(*g))
        .count()
        < 4
    {
        assert!(t0.elapsed().as_secs() < 60, "four points never ran at once");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let events = common::journal(&out);
    assert!(events
        .iter()
        .any(|e| e["event"] == "end" && e["exit_code"] == 130));
    let rows = statuses(&out);
    assert_eq!(rows.len(), 16, "{rows:?}");
    assert!(
        rows.iter().all(|(s, _)| s == "interrupted" || s == "ok"),
        "{rows:?}"
    );
    // the four in flight were stopped in their step; the rest never started
    let in_flight = rows
        .iter()
        .filter(|(s, w)| s == "interrupted" && !w.starts_with("not run"))
        .count();
    assert_eq!(in_flight, 4, "{rows:?}");
    assert!(
        rows.iter()
            .filter(|(s, _)| s == "interrupted")
            .all(|(_, w)| !w.contains("not run: not run")),
        "{rows:?}"
    );
    assert!(out.join("summary.md").exists());
    assert!(
        !fragment_groups(&out)
            .iter()
            .any(|g| common::group_alive(*g)),
        "a point's group outlived the interrupt"
    );
    common::assert_no_survivors(&out);
    Test::new()
        .dir(p)
        .env("PATH", common::gpu::gpu_path())
        .args(["run", "g.kdl", "-q", "--jobs", "4", "--resume", "out"])
        .run()
        .status(0);
    assert!(statuses(&out).iter().all(|(s, _)| s == "ok"));
}

/// `--fail-fast` with `--jobs 4`: the first failed point stops the run from starting more; the
/// points in flight end, the rest are said not run, exit 3, nothing left running.
#[test]
fn standin_gpu_jobs_fail_fast_stops_starting_points_after_the_first_failure() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("g.kdl"),
        exp(" gpus=1").replace(
            "run \"sleep 0.4;",
            "run \"if [ {{ k }} = 1 ]; then exit 1; fi; sleep 0.4;",
        ),
    )
    .unwrap();
    let r = Test::new()
        .dir(p)
        .env("PATH", common::gpu::gpu_path())
        .args([
            "run",
            "g.kdl",
            "--output",
            "out",
            "--jobs",
            "4",
            "--fail-fast",
        ])
        .run();
    assert_eq!(r.status, 3, "{}", r.stderr);
    assert!(r.stderr.contains("stopping: --fail-fast"), "{}", r.stderr);
    let out = p.join("out");
    let rows = statuses(&out);
    assert_eq!(rows.len(), 16, "{rows:?}");
    // k=1's points failed in their step; after that no point started: the rest are not run
    assert!(
        rows.iter()
            .any(|(s, w)| s == "failed" && !w.starts_with("not run")),
        "{rows:?}"
    );
    let not_run = rows
        .iter()
        .filter(|(_, w)| w.starts_with("not run"))
        .count();
    assert!(not_run >= 10, "{rows:?}");
    // said once ("not run: not run: …" before)
    assert!(
        !rows.iter().any(|(_, w)| w.contains("not run: not run")),
        "{rows:?}"
    );
    common::assert_no_survivors(&out);
}

/// Each manifest row's (status, reason).
fn statuses(out: &Path) -> Vec<(String, String)> {
    common::csv_by_name(&out.join("manifest.csv"))
        .into_iter()
        .map(|mut r| {
            let mut take = |c: &str| r.remove(c).expect("a manifest column");
            (take("status"), take("reason"))
        })
        .collect()
}

/// The point events' (run id, `placed`), in journal order.
fn placed(out: &Path) -> Vec<(String, String)> {
    common::journal(out)
        .iter()
        .filter(|e| e["event"] == "point")
        .map(|e| {
            (
                e["run_id"].as_str().unwrap().to_string(),
                e["placed"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// (run id, host, start, end) of each launch step.
fn launches(out: &Path) -> Vec<(String, String, f64, f64)> {
    common::journal(out)
        .iter()
        .filter(|e| e["event"] == "step" && e["phase"] == "launch")
        .map(|e| {
            let at = chrono::DateTime::parse_from_rfc3339(e["at"].as_str().unwrap()).unwrap();
            let end = at.timestamp_micros() as f64 / 1e6;
            (
                e["run_id"].as_str().unwrap().to_string(),
                e["host"].as_str().unwrap().to_string(),
                end - e["elapsed_s"].as_f64().unwrap(),
                end,
            )
        })
        .collect()
}

#[test]
fn real_sshd_pool_points_run_on_the_free_member_and_the_journal_records_where() {
    // two hosts reached over a real sshd on loopback (two names of its ssh_config), one pool:
    // the even points are long, the odd ones short, so under --jobs 2 a point whose planned
    // member is still busy finds the other one free
    let Some(sshd) = common::sshd::Sshd::start() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("pool.kdl"),
        format!(
            "experiment pooled {{\n    description \"a pool of two ssh hosts\"\n}}\n\
             host a ssh=\"exprtest\" ssh-port={port} ip=\"127.0.0.1\" repo=\"{d}\"\n\
             host b ssh=\"exprtest2\" ssh-port={port} ip=\"127.0.0.1\" repo=\"{d}\"\n\
             pool workers \"a\" \"b\"\n\
             bench t {{\n    param k 0\n    run \"sleep {{{{ 1.5 if k % 2 == 0 else 0.1 }}}}; echo k={{{{ k }}}}\" host=workers\n    \
             collect \"regex\" pattern=\"k=([0-9]+)\"\n    sweep k 0 1 2 3 4 5\n}}\n",
            port = sshd.port,
            d = p.display()
        ),
    )
    .unwrap();
    let cfg = sshd.config.to_str().unwrap().to_string();
    let expr = |args: &[&str]| {
        Test::new()
            .dir(p)
            .env("EXPR_SSH_CONFIG", &cfg)
            .args(args)
            .run()
    };
    // the plan deals the points out in turn, and says so
    let plan = expr(&["plan", "pool.kdl"]).status(0).stdout;
    assert!(plan.contains("## pools\nworkers (t): a b"), "{plan}");
    for (k, m) in [(0, "a"), (1, "b"), (2, "a"), (5, "b")] {
        assert!(
            plan.contains(&format!(
                "t_k{k}_r0  lane=t k={k} repeat=0  on {m} (pool workers)\n{m}:"
            )),
            "point {k} on {m}: {plan}"
        );
    }
    // --jobs 1 runs what the plan says
    expr(&["run", "pool.kdl", "--output", "one", "-q"]).status(0);
    let round_robin: Vec<(String, String)> = (0..6)
        .map(|k| {
            (
                format!("t_k{k}_r0"),
                if k % 2 == 0 { "a" } else { "b" }.to_string(),
            )
        })
        .collect();
    assert_eq!(placed(&p.join("one")), round_robin);
    let sh = std::fs::read_to_string(p.join("one/commands.sh")).unwrap();
    assert!(
        sh.contains("# point 3/6: t_k2_r0 (lane t, repeat 0)\n# on a (pool workers)"),
        "{sh}"
    );
    // --jobs 2: a point goes to whichever member is free first
    let ran = expr(&["run", "pool.kdl", "--output", "two", "-q", "--jobs", "2"]);
    let two = p.join("two");
    assert_eq!(
        ran.status,
        0,
        "{}",
        std::fs::read_to_string(two.join("manifest.csv")).unwrap_or_default()
    );
    let mut got = placed(&two);
    got.sort();
    assert_eq!(got.len(), 6, "{got:?}");
    let moved: Vec<&(String, String)> = got.iter().filter(|x| !round_robin.contains(x)).collect();
    assert!(!moved.is_empty(), "no point left its busy member: {got:?}");
    // each point's launch step ran where the journal says it was placed, one point at a time
    // on each member
    let runs = launches(&two);
    assert_eq!(runs.len(), 6, "{runs:?}");
    for (id, host, _, _) in &runs {
        assert!(
            got.contains(&(id.clone(), host.clone())),
            "{id} on {host}: {got:?}"
        );
    }
    for x in &runs {
        for y in &runs {
            if x.0 != y.0 && x.1 == y.1 {
                assert!(
                    x.3 <= y.2 || y.3 <= x.2,
                    "{x:?} and {y:?} overlap on {}",
                    x.1
                );
            }
        }
    }
    // the same values as one at a time
    let vals = |out: &str| {
        let mut v: Vec<String> = common::metric_rows(&p.join(out), "k")
            .into_iter()
            .map(|(v, _, _)| v)
            .collect();
        v.sort();
        v
    };
    assert_eq!(vals("two"), vals("one"));
    assert_eq!(vals("one").len(), 6);
    // the report says where each point ran
    let summary = std::fs::read_to_string(two.join("summary.md")).unwrap();
    assert!(
        summary.contains("## Where the pool's points ran"),
        "{summary}"
    );
    let on_b = summary.lines().find(|l| l.starts_with("- b: ")).unwrap();
    for (id, m) in &got {
        assert_eq!(on_b.contains(id.as_str()), m == "b", "{id} on {m}: {on_b}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(two.join("summary.json")).unwrap()).unwrap();
    assert!(
        json.to_string()
            .contains(&format!("\"placed\":\"{}\"", moved[0].1)),
        "{json}"
    );
    // a moved point is the planned point: --resume keeps all six and runs none again
    expr(&["run", "pool.kdl", "-q", "--resume", "two"]).status(0);
    assert_eq!(launches(&two).len(), 6, "a point ran again");
    assert!(statuses(&two).iter().all(|(s, _)| s == "ok"));
    common::assert_no_survivors(&two);
}

/// `--jobs 2` on ssh hosts times and waits for a step as one job at a time does: each worker
/// runs its point's steps through an agent of its own over the run's connection. Before, a
/// worker had none, its steps went through the plain ssh wrapper, which waited for a daemon
/// the step left (a 0.3 s step took 7 s) and timed the connection with it.
#[test]
fn real_sshd_jobs_time_ssh_steps_as_one_job_at_a_time_does() {
    let Some(sshd) = common::sshd::Sshd::start() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let tag = 600 + std::process::id() % 97;
    std::fs::write(
        p.join("pool.kdl"),
        format!(
            "experiment pooled\n\
             host a ssh=\"exprtest\" ssh-port={port} ip=\"127.0.0.1\" repo=\"{d}\"\n\
             host b ssh=\"exprtest2\" ssh-port={port} ip=\"127.0.0.1\" repo=\"{d}\"\n\
             pool workers \"a\" \"b\"\n\
             bench t {{\n    param k 0\n    run \"(setsid sleep 6.{tag} &); sleep 0.3; echo k={{{{ k }}}}\" host=workers\n    \
             collect \"regex\" pattern=\"k=([0-9]+)\"\n    sweep k 0 1\n}}\n",
            port = sshd.port,
            d = p.display()
        ),
    )
    .unwrap();
    let ran = Test::new()
        .dir(p)
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["run", "pool.kdl", "--output", "two", "-q", "--jobs", "2"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let runs = launches(&p.join("two"));
    assert_eq!(runs.len(), 2, "{runs:?}");
    for (id, _, from, to) in &runs {
        assert!(to - from < 3.0, "{id}: its step took {:.2} s", to - from);
    }
    // and what the steps left was stopped at their points' ends
    let left = std::process::Command::new("pgrep")
        .args(["-f", &format!("^sleep 6.{tag}$")])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&left.stdout)
    );
}

/// A point that runs again reads only its own attempt: its earlier attempt ran on another pool
/// member (moved there under `--jobs`) and failed after printing a value; `--resume` runs it on
/// its planned member, and the value is the new attempt's alone — the earlier log (another
/// member's name) is set aside in `runtime/earlier/`, not averaged in.
#[test]
fn a_point_run_again_on_another_member_reads_only_its_new_attempt() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("e.kdl"),
        "experiment again\nhost a ssh=\"local\" ip=\"127.0.0.1\" repo=\".\"\nhost b ssh=\"local\" ip=\"127.0.0.1\" repo=\".\"\npool w \"a\" \"b\"\nbench t {\n    param k 0\n    run \"if [ {{ k }} = 1 ]; then sleep 3; fi; if [ {{ k }} = 3 ] && [ ! -e MARK ]; then touch MARK; echo v=100; exit 1; fi; echo v={{ k }}\" host=w\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    sweep k 1 2 3\n}\n",
    )
    .unwrap();
    let out = p.join("out");
    // k=1 holds a, k=2 ends at once on b: k=3 (planned on a) moves to b, and fails
    Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "out", "--jobs", "2"])
        .run()
        .status(3);
    let first = placed(&out);
    let k3 = first
        .iter()
        .find(|(id, _)| id.contains("k3"))
        .expect("k3 ran")
        .clone();
    assert_eq!(k3.1, "b", "k3 moved to the free member: {first:?}");
    assert!(out.join(format!("logs/run1-{}-b.log", k3.0)).is_file());
    Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--resume", "out", "--jobs", "1"])
        .run()
        .status(0);
    assert_eq!(
        placed(&out).last().unwrap(),
        &(k3.0.clone(), "a".to_string())
    );
    let rows = common::csv_by_name(&out.join("metrics.csv"));
    let v: Vec<_> = rows
        .iter()
        .filter(|r| r["run_id"] == k3.0 && r["metric"] == "v")
        .collect();
    assert_eq!(v.len(), 1, "{rows:?}");
    assert_eq!(v[0]["value"], "3", "the new attempt's value alone: {v:?}");
    assert!(!out.join(format!("logs/run1-{}-b.log", k3.0)).exists());
    assert!(out
        .join(format!("runtime/earlier/{}/logs/run1-{}-b.log", k3.0, k3.0))
        .is_file());
}

/// Two members of a pool that are one machine (two local hosts, one ip): their points may run
/// at once, but not two servers on one port. The points with a server wait for the address,
/// not for the host name; both end ok (the second server failed to bind before).
#[test]
fn two_members_on_one_machine_never_run_two_servers_on_one_port_at_once() {
    // ready when its port answers, and ready by its log line (the port is still its own); the
    // second host's address spelled as the first's, and as `localhost` (one machine still)
    for (ready, ip_b) in [
        ("", "127.0.0.1"),
        (" ready-log=\"Serving HTTP\"", "127.0.0.1"),
        ("", "localhost"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        let port = common::sshd::free_port();
        std::fs::write(
            p.join("e.kdl"),
            format!(
                "experiment ports\nhost a ssh=\"local\" ip=\"127.0.0.1\" repo=\".\"\nhost b ssh=\"local\" ip=\"{ip_b}\" repo=\".\"\npool w \"a\" \"b\"\nbench t {{\n    param k 0\n    serve s \"python3 -u -m http.server {port} --bind 127.0.0.1\" host=w port={port}{ready}\n    run \"sleep 0.5; echo v={{{{ k }}}}\" host=w\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    sweep k 1 2\n}}\n"
            ),
        )
        .unwrap();
        let out = p.join("out");
        let ran = Test::new()
            .dir(p)
            .args(["run", "e.kdl", "--output", "out", "--jobs", "2"])
            .run()
            .status(0);
        let st = statuses(&out);
        assert!(
            st.len() == 2 && st.iter().all(|(s, _)| s == "ok"),
            "{ready} {ip_b}: {st:?}\n{}",
            ran.stderr
        );
        let l = launches(&out);
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(
            l[0].3 <= l[1].2 || l[1].3 <= l[0].2,
            "{ready} {ip_b}: the two servers' points overlapped: {l:?}"
        );
    }
}

/// `--jobs` with a server in every point: the note that the points run one at a time names the
/// server as what takes the host whole, not missing `gpus=` (helper 75: both steps had
/// `gpus=1` and the note said none did).
#[test]
fn standin_gpu_jobs_note_names_a_server_as_what_takes_the_host() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let port = common::sshd::free_port();
    std::fs::write(
        p.join("s.kdl"),
        format!(
            "experiment srv\nhost local gpus=2\nbench b {{\n    param k 0\n    serve s \"python3 -u -m http.server {port} --bind 127.0.0.1\" port={port} gpus=1\n    run \"echo v={{{{ k }}}}\" gpus=1\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    sweep k 1 2\n}}\n"
        ),
    )
    .unwrap();
    let r = Test::new()
        .dir(p)
        .env("PATH", common::gpu::gpu_path())
        .args(["run", "s.kdl", "--output", "o", "--jobs", "2"])
        .run()
        .status(0);
    assert!(
        r.stderr.contains("note: --jobs 2: every point takes `local` whole (a server runs there, and a server takes its host whole), so the points run one at a time"),
        "{}",
        r.stderr
    );
}

/// Two hosts on one machine (each its own checkout, both run here) share its GPUs: `--jobs`
/// never runs a point of one on GPU 0 while a point of the other runs on GPU 0 (they were
/// counted per host name, and both ran on GPU 0 at once, each measuring the other); points on
/// different GPUs still run at once.
#[test]
fn standin_gpu_jobs_hosts_of_one_machine_never_share_a_gpu_at_once() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::create_dir_all(p.join("ra")).unwrap();
    std::fs::create_dir_all(p.join("rb")).unwrap();
    let bench = |name: &str, host: &str| {
        format!("bench {name} {{\n    param k 0\n    run \"sleep 0.4; echo k={{{{ k }}}} gpu=$CUDA_VISIBLE_DEVICES\" host={host} gpus=1\n    collect \"regex\" pattern=\"gpu=([0-9]*)\"\n    sweep k 0 1\n}}\n")
    };
    std::fs::write(
        p.join("e.kdl"),
        format!(
            "experiment two\nhost a ssh=\"local\" repo=\"ra\" gpus=2\nhost b ssh=\"local\" repo=\"rb\" gpus=2\n{}{}",
            bench("x", "a"),
            bench("y", "b")
        ),
    )
    .unwrap();
    let ran = Test::new()
        .dir(p)
        .env("PATH", common::gpu::gpu_path())
        .args(["run", "e.kdl", "--output", "out", "--jobs", "4"])
        .run()
        .status(0);
    let iv = intervals(&p.join("out"));
    assert_eq!(iv.len(), 4, "{iv:?}\n{}", ran.stderr);
    // each host deals its GPUs 0 and 1 to its two points
    let mut gpus: Vec<&str> = iv.iter().map(|(_, g, _, _)| g.as_str()).collect();
    gpus.sort();
    assert_eq!(gpus, ["0", "0", "1", "1"], "{iv:?}");
    no_gpu_shared_at_once(&iv, "of one machine");
    assert_eq!(most_at_once(&iv), 2, "two GPUs, two at once: {iv:?}");
    // one GPU between them: the points run one at a time, and the run says why
    let one = std::fs::read_to_string(p.join("e.kdl"))
        .unwrap()
        .replace("gpus=2", "gpus=1");
    std::fs::write(p.join("one.kdl"), one).unwrap();
    let ran = Test::new()
        .dir(p)
        .env("PATH", common::gpu::gpu_path())
        .args(["run", "one.kdl", "--output", "one", "--jobs", "4"])
        .run()
        .status(0);
    assert!(
        ran.stderr.contains("note: --jobs 4: every point takes GPU 0 of one machine (`a`, `b` are one machine and share its GPUs), so the points run one at a time"),
        "{}",
        ran.stderr
    );
    assert_eq!(most_at_once(&intervals(&p.join("one"))), 1);
}
