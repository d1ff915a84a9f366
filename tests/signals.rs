//! A closed terminal (SIGHUP), SIGQUIT and SIGTERM at every stage of a run — the build, a
//! server coming up, clients running, the collection of a point's files — with a `setsid`
//! daemon started by the step and a server that ignores TERM: the run tears everything down by
//! process group (and the run's mark), writes its report, journals its `end`, and exits
//! 128 + n (130 for SIGTERM, as documented). Real processes, real signals.

mod common;

use common::journal;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::sshd::free_port;

/// Processes whose command line holds `needle`, this test's own excepted.
fn running(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .filter(|l| l.contains(needle))
        .collect()
}

/// A TCP server that ignores SIGTERM (only KILL stops it).
const SERVER: &str = "import signal, socket, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(8)\nwhile True: s.accept()[0].close()\n";

/// The experiment of a stage: each holds its stage for 30 s and starts a `setsid` daemon
/// (`sleep TAG`) that leaves its process group.
fn experiment(dir: &Path, stage: &str, tag: &str) -> String {
    let daemon = format!("setsid sleep {tag} </dev/null >/dev/null 2>&1 &");
    let port = free_port();
    std::fs::write(dir.join("srv.py"), SERVER).unwrap();
    let srv = format!("serve s \"{daemon} exec python3 srv.py {port}\" port={port}");
    let body = match stage {
        "build" => format!("    build \"{daemon} sleep 30\"\n    run \"true\"\n"),
        // up, never ready: the run waits on its log line
        "server" => format!(
            "    serve s \"{daemon} exec python3 srv.py {port}\" ready-log=\"never says this\" ready-timeout=60\n    run \"true\"\n"
        ),
        "clients" => format!("    {srv}\n    run \"{daemon} sleep 30\"\n"),
        // the client is done: the run waits out the grace for the server that ignores TERM
        "teardown" => format!("    {srv}\n    run \"true\"\n"),
        _ => unreachable!(),
    };
    format!(
        "experiment sig\nhost local repo=\"{}\"\nbench b {{\n{body}}}\n",
        dir.display()
    )
}

/// The stand-ins of a dataset-rt point on this machine: its runner writes the report, and the
/// collection's `cp` starts a daemon and takes 30 s.
fn collect_stage(dir: &Path, tag: &str) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    common::gpu::write_exec(
        &bin.join("uv"),
        "#!/usr/bin/env python3\nimport json, os, sys\na = sys.argv\n'--help' in a and sys.exit(0)\nout = a[a.index('--output') + 1]\n\
         os.makedirs(os.path.dirname(out) or '.', exist_ok=True)\n\
         json.dump({'world_size': 1, 'ranks': [], 'global_samples_per_second': [1000.0]}, open(out, 'w'))\n",
    );
    common::gpu::write_exec(
        &bin.join("cp"),
        &format!("#!/bin/sh\nsetsid sleep {tag} </dev/null >/dev/null 2>&1 &\nexec sleep 30\n"),
    );
    format!(
        "experiment sig\nhost local repo=\"{}\"\ndataset-rt {{\n    node host=local\n    sweep num-workers 0\n}}\n",
        dir.display()
    )
}

/// Run the stage, send `sig` once its step runs, and check that nothing is left.
fn stopped_at(stage: &str, sig: i32, name: &str, code: i32) {
    let d = tempfile::tempdir().unwrap();
    // a tag no other test's process has: this test's daemon
    let tag = format!(
        "{}.{}",
        4000 + sig * 10 + stage.len() as i32,
        std::process::id() % 1000
    );
    let kdl = if stage == "collect" {
        collect_stage(d.path(), &tag)
    } else {
        experiment(d.path(), stage, &tag)
    };
    std::fs::write(d.path().join("e.kdl"), kdl).unwrap();
    let path = format!(
        "{}:{}",
        d.path().join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_expr"));
    // as from a terminal: a suite started under `nohup` or as a script's background job (SIGHUP,
    // or SIGQUIT, ignored, which expr keeps, as such a start means) still sends each signal to an
    // expr that handles it
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        })
    };
    // teardown: a grace the signal lands in
    let grace = if stage == "teardown" { "4" } else { "1" };
    let mut child = cmd
        .args(["run", "e.kdl", "--output", "out", "--grace", grace])
        .current_dir(d.path())
        .env("PATH", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = d.path().join("out");
    // the stage's step has started, and its daemon with it
    let step = match stage {
        "build" => "build",
        "server" => "s-",
        "clients" | "teardown" => "run1-",
        _ => "collect-",
    };
    // teardown: the client has ended (its step event), the server is still up
    let event = if stage == "teardown" {
        "step"
    } else {
        "process"
    };
    let end = Instant::now() + Duration::from_secs(30);
    while !journal(&out)
        .iter()
        .any(|e| e["event"] == event && e["step"].as_str().is_some_and(|s| s.starts_with(step)))
        || running(&format!("sleep {tag}")).is_empty()
    {
        assert!(
            Instant::now() < end,
            "{stage}/{name}: the stage never ran: {:?}",
            child.try_wait()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    unsafe { libc::kill(child.id() as i32, sig) };
    let end = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "{stage}/{name}: expr did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(code), "{stage}/{name}: {err}");
    let ev = journal(&out);
    assert!(
        ev.iter()
            .any(|e| e["event"] == "end" && e["exit_code"] == code),
        "{stage}/{name}: no `end` with {code} in the journal: {err}"
    );
    assert!(
        out.join("summary.md").is_file() && out.join("report.html").is_file(),
        "{stage}/{name}: no report: {err}"
    );
    // a step the signal stopped is recorded with the code the run exits with (a hang-up's
    // build said "interrupted (exit 130)" of a run that exited 129)
    // (-1: a server stopped while it came up has no code of its own)
    for e in ev
        .iter()
        .filter(|e| e["event"] == "step" && e["status"] == "interrupted")
    {
        assert!(
            e["exit_code"] == code || e["exit_code"] == -1,
            "{stage}/{name}: {e}"
        );
    }
    // nothing left: no recorded group, no daemon, no server that ignored TERM
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<String> = ev
            .iter()
            .filter(|e| e["event"] == "process")
            .filter_map(|e| e["pgid"].as_i64().map(|p| (p, e["step"].clone())))
            .filter(|(p, _)| expr::exec::backend::host::group_alive(*p))
            .map(|(p, s)| format!("{s} (group {p})"))
            .chain(running(&format!("sleep {tag}")))
            .collect();
        if alive.is_empty() {
            break;
        }
        assert!(
            Instant::now() < end,
            "{stage}/{name}: left running: {alive:?}\n{err}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn each_signal(stage: &str) {
    for (sig, name, code) in [
        (libc::SIGHUP, "SIGHUP", expr::util::exit_codes::HANGUP),
        (libc::SIGQUIT, "SIGQUIT", expr::util::exit_codes::QUIT),
        (
            libc::SIGTERM,
            "SIGTERM",
            expr::util::exit_codes::INTERRUPTED,
        ),
    ] {
        stopped_at(stage, sig, name, code);
    }
}

/// The last point's client is done and its server (which ignores TERM) is being torn down:
/// a signal then found no point left to stop, and the run exited 0 as if none had come.
#[test]
fn each_signal_while_the_last_server_is_torn_down_ends_the_run_as_stopped() {
    each_signal("teardown");
}

#[test]
fn each_signal_during_the_build_stops_the_build_and_its_daemon() {
    each_signal("build");
}

#[test]
fn each_signal_while_a_server_comes_up_stops_it_though_it_ignores_term() {
    each_signal("server");
}

#[test]
fn each_signal_while_clients_run_stops_them_the_server_and_the_daemons() {
    each_signal("clients");
}

#[test]
fn each_signal_during_the_collection_stops_it_and_its_daemon() {
    each_signal("collect");
}

/// `expr run e.kdl --output OUT` in `dir`, with `extra`, its stderr piped.
fn start(dir: &Path, out: &str, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", out])
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A signal sent to every process of the run at once (systemd stopping a unit, `kill 0`,
/// Slurm cancelling a job) may reach the client and the server before expr: expr then saw them
/// die of SIGTERM first and recorded the point `failed` (a server "exited (code -15) while the
/// point ran"). The point is `interrupted`, and the run exits 130; a step that dies of SIGTERM
/// while expr gets none stays a failure.
#[test]
fn a_signal_that_reaches_the_steps_before_expr_interrupts_the_point_not_fails_it() {
    let d = tempfile::tempdir().unwrap();
    // the groups of the server and the client, as the journal has them
    let groups = |ev: &[serde_json::Value]| -> Vec<i64> {
        ev.iter()
            .filter(|e| e["event"] == "process")
            .filter_map(|e| e["pgid"].as_i64())
            .collect()
    };
    // killed by the signal (-15), or ended by its own `trap` of it (128 + 15)
    for (k, client) in ["sleep 30", "trap 'exit 143' TERM; sleep 30 & wait"]
        .into_iter()
        .enumerate()
    {
        std::fs::write(
            d.path().join("e.kdl"),
            format!(
                "experiment sig\nhost local repo=\"{}\"\nbench b {{\n    serve s \"echo READY; exec sleep 60\" ready-log=\"READY\"\n    run \"{client}\"\n}}\n",
                d.path().display()
            ),
        )
        .unwrap();
        let name = format!("out{k}");
        let mut child = start(d.path(), &name, &["--grace", "1"]);
        let out = d.path().join(&name);
        let end = Instant::now() + Duration::from_secs(30);
        while groups(&journal(&out)).len() < 2 {
            assert!(Instant::now() < end, "the client never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(200));
        // the client first (its exit is what the point is judged by), expr a moment later
        let client_group = *groups(&journal(&out)).last().unwrap();
        unsafe { libc::kill(-(client_group as i32), libc::SIGTERM) };
        std::thread::sleep(Duration::from_millis(40));
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = child.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(130), "{client}: {err}");
        let point = journal(&out)
            .into_iter()
            .find(|e| e["event"] == "point")
            .unwrap();
        assert_eq!(point["status"], "interrupted", "{client}: {point}\n{err}");
        let reason = point["reason"].as_str().unwrap_or("");
        assert!(
            reason.starts_with("interrupted while `run1-b_r0` ran on `local`"),
            "{client}: {reason}"
        );
        let manifest = std::fs::read_to_string(out.join("manifest.csv")).unwrap();
        assert!(manifest.contains(",interrupted,"), "{client}: {manifest}");
    }

    // no signal to expr: the client that died of SIGTERM failed the point
    let mut child = start(d.path(), "out2", &["--grace", "1"]);
    let out2 = d.path().join("out2");
    let end = Instant::now() + Duration::from_secs(30);
    while groups(&journal(&out2)).len() < 2 {
        assert!(Instant::now() < end, "the client never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let client = *groups(&journal(&out2)).last().unwrap();
    unsafe { libc::kill(-(client as i32), libc::SIGTERM) };
    assert_eq!(child.wait().unwrap().code(), Some(3));
    let point = journal(&out2)
        .into_iter()
        .find(|e| e["event"] == "point")
        .unwrap();
    assert_eq!(point["status"], "failed", "{point}");
}

/// A second Ctrl-C "kills at once" also while the run reads a large log (no process to kill
/// then: the collection went on for as long as it took, and the report after it): expr ends
/// within `AT_ONCE` of it, says so, exits 130, and its sentinel stops the server still up.
#[test]
fn a_second_signal_during_a_long_collection_ends_expr_at_once() {
    let d = tempfile::tempdir().unwrap();
    let tag = format!("{}.{}", 61, std::process::id() % 1000);
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "experiment slow\nhost local repo=\"{}\"\nbench b {{\n    serve s \"echo READY; exec sleep {tag}\" ready-log=\"READY\"\n    run \"yes rate=42 | head -n 1500000\"\n    collect \"regex\" pattern=\"rate=([0-9.]+)\"\n}}\n",
            d.path().display()
        ),
    )
    .unwrap();
    let mut child = start(d.path(), "out", &[]);
    let out = d.path().join("out");
    // the client has ended: the run reads its log now
    let end = Instant::now() + Duration::from_secs(60);
    while !journal(&out)
        .iter()
        .any(|e| e["event"] == "step" && e["step"].as_str().is_some_and(|s| s.starts_with("run1-")))
    {
        assert!(Instant::now() < end, "the client never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(200));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let second = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            second.elapsed() < expr::exec::signals::AT_ONCE + Duration::from_secs(3),
            "expr went on after a second signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("expr: interrupted again: stopped at once, before the run's report; the run's sentinel stops what still runs, and `expr report out` writes the report"),
        "{err}"
    );
    // the journal ends as a run's does: with its exit code (it had no `end` event)
    let last = journal(&out).pop().unwrap();
    assert_eq!(
        (&last["event"], &last["exit_code"]),
        (&serde_json::json!("end"), &serde_json::json!(130)),
        "{last}"
    );
    let end = Instant::now() + Duration::from_secs(10);
    while !running(&format!("sleep {tag}")).is_empty() {
        assert!(Instant::now() < end, "the server outlived expr");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Interrupted during preflight in a directory it did not make, the run's advice names the
/// file and this run's options: its journal records no experiment yet, and `expr run --resume
/// DIR` alone refused it (helper 88; helper 89: the `--set` was left out), and it ends at once. Preflight waits on an ssh login to a port that takes the
/// connection and never answers when the signal comes.
#[test]
fn interrupted_in_preflight_the_advice_to_resume_names_the_file() {
    let d = tempfile::tempdir().unwrap();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    std::fs::write(
        d.path().join("e.kdl"),
        format!("experiment pf\nhost far ssh=\"127.0.0.1\" ssh-port={port} ip=\"127.0.0.1\" repo=\"/tmp\"\nbench b {{\n    param n 1\n    run \"echo rate={{{{ n }}}}\" host=far\n    collect regex pattern=\"rate=([0-9]+)\"\n}}\n"),
    )
    .unwrap();
    std::fs::create_dir(d.path().join("out")).unwrap();
    let mut child = start(d.path(), "out", &["--set", "b.n=7"]);
    std::thread::sleep(Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let signalled = Instant::now();
    let status = child.wait().unwrap();
    // the login is given up at once, not waited out (ssh's 10 s connect timeout, the 30 s
    // limit on a login that does not end)
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "{:?} after the signal",
        signalled.elapsed()
    );
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted during preflight: nothing ran"),
        "{err}"
    );
    // the signal was seen, said at once (helper 88: a slow teardown said nothing)
    assert!(
        err.contains("expr: SIGINT: stopping what the run started (a second signal stops it without a grace)"),
        "{err}"
    );
    assert!(
        err.contains(
            "expr: to run what was not finished and keep the rest: expr run e.kdl --set b.n=7 --resume out"
        ),
        "{err}"
    );
    // nothing ran: nothing for the history, and no warning that it was not added
    assert!(!err.contains("history"), "{err}");
}
