//! `expr run` and `expr stop` with real processes, process groups and (where it can run) a real
//! sshd on loopback.

mod common;

use common::{assert_no_survivors, group_alive, journal};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::sshd::{free_port, Sshd};
use common::Test;
use serde_json::Value;

/// manifest.csv's rows, read by column name into the positions these tests index (RecStore's
/// runner order: 0 run_id, 1 lane, 10 repeat_index, 12 log_path, 13 status, 14 exit_code,
/// 15 reason); a column the kind does not have is empty.
fn manifest(dir: &Path) -> Vec<csv::StringRecord> {
    common::manifest_by_name(dir)
}

/// The exit of an expr told to stop, within 20 s (`what` says what did not happen).
fn exited(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < end, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A scratch repo holding the quickstart workload and an experiment file.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new(kdl: &str) -> Work {
        let dir = tempfile::tempdir().unwrap();
        let wl = dir.path().join("wl");
        std::fs::create_dir_all(&wl).unwrap();
        for f in ["server.py", "trainer.py"] {
            std::fs::copy(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("examples/quickstart")
                    .join(f),
                wl.join(f),
            )
            .unwrap();
        }
        let kdl = kdl.replace("REPO", &dir.path().display().to_string());
        std::fs::write(dir.path().join("e.kdl"), kdl).unwrap();
        Work { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }
    /// `expr report out`, with the exit code it must give.
    fn report(&self, code: i32) -> common::Ran {
        Test::new()
            .dir(self.path())
            .args(["report", "out"])
            .run()
            .status(code)
    }
    fn run(&self, extra: &[&str]) -> common::Ran {
        Test::new()
            .dir(self.path())
            .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
            .args(extra)
            .run()
    }
    /// `expr run` in the background, to be signalled or killed: without its sentinel, so that
    /// what a kill -9 leaves waits for `expr stop` or `--resume`.
    fn spawn(&self, extra: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_expr"))
            .env("EXPR_NO_SENTINEL", "1")
            .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
            .args(extra)
            .current_dir(self.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
    /// Wait until the journal records a started process for a step whose id starts with `prefix`.
    fn wait_process(&self, prefix: &str) {
        let end = Instant::now() + Duration::from_secs(20);
        while !journal(&self.out()).iter().any(|e| {
            e["event"] == "process" && e["step"].as_str().is_some_and(|s| s.starts_with(prefix))
        }) {
            assert!(Instant::now() < end, "no `{prefix}` process in the journal");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn quickstart_runs_end_to_end_with_a_complete_result_directory() {
    // the quickstart leaves the checkout as it found it (no bytecode, nothing else)
    let status = || {
        Command::new("git")
            .args(["status", "--porcelain", "--ignored", "--", "examples"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let before = status();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("qs");
    let ran = Test::new()
        .args([
            "run",
            "examples/quickstart.kdl",
            "--output",
            out.to_str().unwrap(),
        ])
        .run()
        .status(0);
    assert!(ran.stderr.contains("[18/18]"), "{}", ran.stderr);
    assert_eq!(
        status(),
        before,
        "the quickstart changed files in the checkout"
    );
    for f in [
        "deployment.md",
        "commands.sh",
        "journal.jsonl",
        "manifest.csv",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let rows = manifest(&out);
    assert_eq!(rows.len(), 18);
    assert!(rows.iter().all(|r| &r[13] == "ok"), "{rows:?}");
    // its report.html opens in a real browser and its charts show both lanes
    common::browser::assert_report_shows_every_lane(&out);
    let csv = std::fs::read_to_string(out.join("outputs/table_tcp_b64_r2/steps.csv")).unwrap();
    assert_eq!(csv.lines().next().unwrap(), "rank,step,warmup_excluded,batch_size,batch_prepare_ms,embed_lookup_ms,dense_fwd_ms,backward_ms,sparse_update_ms,step_total_ms,samples_per_sec");
    assert_eq!(csv.lines().count(), 31, "header + 30 steps");
    let events = journal(&out);
    let header = events
        .iter()
        .find(|e| e["event"] == "header")
        .expect("journal header");
    assert!(header["hosts"][0]["git_head"]
        .as_str()
        .is_some_and(|h| !h.is_empty()));
    assert!(header["resolved"]
        .as_str()
        .unwrap()
        .contains("bench \"quickstart\""));
    assert_eq!(
        events
            .iter()
            .filter(|e| e["event"] == "point" && e["status"] == "ok")
            .count(),
        18
    );
    // the TCP table server runs for the tcp lane only, and is stopped after each point
    assert_eq!(events.iter().filter(|e| e["event"] == "stopped").count(), 9);
    assert!(out.join("logs/server-table_tcp_b32_r0-local.log").is_file());
    assert_no_survivors(&out);
    // an existing result directory is never overwritten
    let before = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    let again = Test::new()
        .args([
            "run",
            "examples/quickstart.kdl",
            "--output",
            out.to_str().unwrap(),
        ])
        .run()
        .status(2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("journal.jsonl")).unwrap(),
        before
    );
}

const PRELUDE: &str = "experiment t\nhost local repo=\"REPO\"\n";

/// A bench of one point per `d` in `values`, each printing `v=D` that its collect reads, run
/// once into `out` (exit 0): a result directory to damage.
fn ran_sweep(values: &str) -> Work {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  sweep d {values}\n  run \"echo v={{{{ d }}}}\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    w.run(&[]).status(0);
    w
}

/// A regex group that reads the `0` of `0x1F`, or the `1` of `1'234`, gives no number (it read
/// 0 and 1, ok): the point is no-data with the line and what to do; a unit after the number is
/// read as ever.
#[test]
fn a_number_in_another_base_or_with_digit_groups_is_not_read_in_part() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  sweep d \"0x1F\" \"0b101\" \"1'234\" \"12ms\"\n  run \"echo ms={{{{ d }}}}\"\n  collect regex pattern=\"ms=([0-9.]+)\"\n}}\n"
    ));
    w.run(&[]).status(3);
    let rows = manifest(&w.out());
    let said: Vec<(&str, &str)> = rows.iter().map(|r| (&r[13], &r[15])).collect();
    assert_eq!(said.len(), 4, "{said:?}");
    assert!(
        said[0].0 == "no-data"
            && said[0].1.ends_with(":1: /ms=([0-9.]+)/ matched `0` of the number `0x1F`: not read (expr reads decimal numbers only: print it in decimal)"),
        "{said:?}"
    );
    assert!(
        said[1].0 == "no-data" && said[1].1.contains("matched `0` of the number `0b101`"),
        "{said:?}"
    );
    assert!(
        said[2].0 == "no-data"
            && said[2]
                .1
                .contains("matched `1` of the number `1'234`: not read (widen the group"),
        "{said:?}"
    );
    assert_eq!(said[3], ("ok", ""));
}

#[test]
fn a_crashing_client_fails_its_point_names_command_and_log_and_the_run_goes_on() {
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  param x 1\n  run \"python3 -c 'import sys; sys.exit(3)' {{{{ x }}}}\"\n  sweep x 1 2\n}}\n"));
    let ran = w.run(&[]).status(3);
    let rows = manifest(&w.out());
    assert_eq!(rows.len(), 2, "the run goes on after a failed point");
    assert!(rows.iter().all(|r| &r[13] == "failed" && &r[14] == "3"));
    // each row and each live line is made from its point's event
    let points: Vec<Value> = journal(&w.out())
        .into_iter()
        .filter(|e| e["event"] == "point")
        .collect();
    for (i, (row, e)) in rows.iter().zip(&points).enumerate() {
        assert_eq!(e["run_id"].as_str(), Some(&row[0]));
        assert_eq!(e["log"].as_str(), Some(&row[12]), "{e}");
        assert_eq!(e["reason"].as_str(), Some(&row[15]), "{e}");
        let line = format!("[{}/2] {} failed: {}", i + 1, &row[0], &row[15]);
        assert!(ran.stderr.contains(&line), "{line}\n{}", ran.stderr);
    }
    // the last line says why the points are without data
    assert!(
        ran.stderr
            .contains("report.html (2 point(s) without data: 2 failed)"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("command: python3 -c")
            && ran.stderr.contains("log: out/logs/run1-b_x1_r0-local.log"),
        "{}",
        ran.stderr
    );
    let w2 = Work::new(&format!("{PRELUDE}bench b {{\n  param x 1\n  run \"python3 -c 'import sys; sys.exit(3)' {{{{ x }}}}\"\n  sweep x 1 2\n}}\n"));
    let ff = w2.run(&["--fail-fast"]).status(3);
    // a point never started is counted as such, though its row says `failed`
    assert!(
        ff.stderr
            .contains("(2 point(s) without data: 1 failed, 1 not run)"),
        "{}",
        ff.stderr
    );
    assert_eq!(
        journal(&w2.out())
            .iter()
            .filter(|e| e["event"] == "point")
            .count(),
        1,
        "--fail-fast stops"
    );
    // the point it did not start has its row, as under --jobs
    let m = manifest(&w2.out());
    assert_eq!(m.len(), 2);
    assert_eq!(
        (&m[1][0], &m[1][13], &m[1][15]),
        ("b_x2_r0", "failed", "not run: --fail-fast")
    );
}

#[test]
fn a_server_whose_port_is_taken_fails_the_point_clearly() {
    let port = free_port();
    let _taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  serve s \"python3 wl/server.py --port {port}\" port={port} ready-timeout=10\n  run \"true\"\n  sweep d 1 2 3\n  run \"echo {{{{ d }}}}\"\n}}\n"));
    // found at preflight, exit 4, naming who holds it: not three failed points
    let ran = w.run(&[]).status(expr::util::exit_codes::PREFLIGHT);
    assert!(
        ran.stderr.contains(&format!(
            "port 127.0.0.1:{port} of `s-b_d1_r0` on `local` is already in use by `"
        )) && ran
            .stderr
            .contains(&format!("(pid {})", std::process::id())),
        "{}",
        ran.stderr
    );
    assert!(!w.out().exists(), "nothing ran");
}

#[test]
fn a_server_that_never_becomes_ready_or_exits_early_fails_with_its_log() {
    let port = free_port();
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  serve s \"echo warming up; sleep 30\" port={port} ready-timeout=1\n  run \"true\"\n}}\n"));
    let ran = w.run(&[]).status(3);
    assert!(
        ran.stderr.contains("was not ready within 1 s") && ran.stderr.contains("warming up"),
        "{}",
        ran.stderr
    );
    assert_no_survivors(&w.out());
    // the client never started: the point's log is the server's, which says why
    let rows = manifest(&w.out());
    assert!(rows[0][12].ends_with("logs/s-b_r0-local.log"), "{rows:?}");
    assert!(w.path().join(&rows[0][12]).is_file(), "{rows:?}");
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  serve s \"echo cannot bind >&2; exit 7\" ready-log=\"never\"\n  run \"true\"\n}}\n"));
    let ran = w.run(&[]).status(3);
    assert!(
        ran.stderr.contains("exited (code 7) before it was ready")
            && ran.stderr.contains("cannot bind"),
        "{}",
        ran.stderr
    );
    // one that printed its ready line and then ended at once was ready: its end is a death
    // while the point ran (it was said "exited before it was ready" beside its READY)
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  serve s \"echo READY; exit 0\" ready-log=\"READY\"\n  run \"sleep 0.5\"\n}}\n"));
    let ran = w.run(&[]).status(3);
    assert!(
        ran.stderr
            .contains("server `s-b_r0` on `local` exited (code 0) while the point ran")
            && !ran.stderr.contains("before it was ready"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_failing_correctness_test_stops_before_any_benchmark_run() {
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  build \"echo FAILED test_ps_client_factory; exit 1\"\n  run \"touch ran\"\n}}\n"));
    let ran = w.run(&[]).status(3);
    assert!(
        ran.stderr.contains("stopping before any benchmark run")
            && ran.stderr.contains("out/logs/build1-local.log"),
        "{}",
        ran.stderr
    );
    assert!(!w.path().join("ran").exists());
    let rows = manifest(&w.out());
    assert_eq!(&rows[0][13], "failed");
    // the points the stop left unrun are one journal event, and the manifest's rows are made
    // from it
    let events = journal(&w.out());
    let not_run: Vec<&Value> = events.iter().filter(|e| e["event"] == "not-run").collect();
    assert_eq!(not_run.len(), 1, "{events:?}");
    assert_eq!(not_run[0]["run_ids"], serde_json::json!(["b_r0"]));
    assert_eq!(not_run[0]["status"], "failed");
    let why = not_run[0]["reason"].as_str().unwrap();
    assert!(why.contains("`build1` on `local` failed (exit 1)"), "{why}");
    assert_eq!(&rows[0][15], format!("not run: {why}").as_str());
    // `expr report` of the directory without its manifest: rebuilt from the not-run event
    std::fs::remove_file(w.out().join("manifest.csv")).unwrap();
    w.report(3);
    let rows = manifest(&w.out());
    assert_eq!(&rows[0][13], "failed");
    assert_eq!(&rows[0][15], format!("not run: {why}").as_str());
    // --skip-build skips it
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  build \"exit 1\"\n  run \"touch ran\"\n}}\n"
    ));
    w.run(&["--skip-build"]).status(0);
    assert!(w.path().join("ran").exists());
}

/// A build that failed, then a resume whose build succeeds: the report no longer says the build
/// failed (it said so while showing the resumed numbers), and the failed build's log is kept
/// in `runtime/earlier/setup/`. A resume with every point kept builds nothing.
#[test]
fn a_resume_is_judged_by_its_own_build_and_one_with_nothing_to_run_builds_nothing() {
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  build \"echo building; date +%N >> builds; test -f buildok\"\n  run \"echo v=1\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"));
    w.run(&[]).status(3);
    let failed = "The build `build1` failed on `local`";
    let summary = || std::fs::read_to_string(w.out().join("summary.md")).unwrap();
    assert!(summary().contains(failed), "{}", summary());
    let resume = || {
        Test::new()
            .dir(w.path())
            .args(["run", "e.kdl", "--resume", "out"])
            .run()
    };
    std::fs::write(w.path().join("buildok"), "").unwrap();
    resume().status(0);
    assert!(!summary().contains(failed), "{}", summary());
    let json = std::fs::read_to_string(w.out().join("summary.json")).unwrap();
    assert!(json.contains("\"stopped_before_e2e\": null"), "{json}");
    assert!(
        std::fs::read_to_string(w.out().join("runtime/earlier/setup/build1-local.log"))
            .unwrap()
            .contains("building"),
        "the failed build's log is set aside"
    );
    let builds = || {
        std::fs::read_to_string(w.path().join("builds"))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(builds(), 2);
    let log = std::fs::read(w.out().join("logs/build1-local.log")).unwrap();
    let nothing = resume().status(0);
    assert!(
        nothing
            .stderr
            .contains("resume: every point is kept: the build and tests are not run again"),
        "{}",
        nothing.stderr
    );
    assert_eq!(builds(), 2, "no build for nothing to run");
    assert_eq!(
        std::fs::read(w.out().join("logs/build1-local.log")).unwrap(),
        log
    );
    assert!(!summary().contains(failed));
}

#[test]
fn a_resume_whose_build_fails_keeps_the_points_that_succeeded_before() {
    // x=1 succeeds the first time, x=2 fails; then the build breaks, then it is fixed
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  build \"test -f buildok\"\n  param x 1\n  run \"test {{{{ x }}}} = 1 || test -e marker\"\n  sweep x 1 2\n}}\n"));
    std::fs::write(w.path().join("buildok"), "").unwrap();
    w.run(&[]).status(3);
    let resume = || {
        Test::new()
            .dir(w.path())
            .args(["run", "e.kdl", "--resume", "out"])
            .run()
    };
    std::fs::remove_file(w.path().join("buildok")).unwrap();
    let broke = resume().status(3);
    // what the resume keeps is said before the build (helper 88: a failed or interrupted
    // build left it unsaid)
    let said = broke.stderr.find("resume: 1 point kept");
    let build = broke.stderr.find("build `build1` on `local` failed");
    assert!(
        said.is_some() && build.is_some() && said < build,
        "{}",
        broke.stderr
    );
    // the build measured nothing: only the point that would have run again is not run
    let rows = manifest(&w.out());
    let status = |rows: &[csv::StringRecord], id: &str| {
        rows.iter()
            .find(|r| &r[0] == id)
            .map(|r| (r[13].to_string(), r[15].to_string()))
            .unwrap()
    };
    assert_eq!(status(&rows, "b_x1_r0"), ("ok".to_string(), String::new()));
    let (st, why) = status(&rows, "b_x2_r0");
    assert!(
        st == "failed" && why.starts_with("not run: build `build1`"),
        "{why}"
    );
    // the kept point's number is below the failed build's line, and the line says so
    let summary = std::fs::read_to_string(w.out().join("summary.md")).unwrap();
    assert!(
        summary.contains("nothing ran after it: the numbers below are the points an earlier run measured, kept by this one."),
        "{summary}"
    );
    let not_run: Vec<Value> = journal(&w.out())
        .into_iter()
        .filter(|e| e["event"] == "not-run")
        .collect();
    assert_eq!(not_run.len(), 1);
    assert_eq!(not_run[0]["run_ids"], serde_json::json!(["b_x2_r0"]));
    // fixed: the kept point stays ok, the other runs and succeeds
    std::fs::write(w.path().join("buildok"), "").unwrap();
    std::fs::write(w.path().join("marker"), "").unwrap();
    resume().status(0);
    let rows = manifest(&w.out());
    assert_eq!(status(&rows, "b_x1_r0").0, "ok");
    assert_eq!(status(&rows, "b_x2_r0").0, "ok");
    // a row a resumed run must keep as ok, found otherwise (an older expr wrote `not run`
    // over it), is made again from its journal event, with this run's spelling of its log
    let text = std::fs::read_to_string(w.out().join("manifest.csv")).unwrap();
    std::fs::write(
        w.out().join("manifest.csv"),
        text.replacen(",ok,", ",failed,", 1),
    )
    .unwrap();
    resume().status(0);
    let rows = manifest(&w.out());
    assert_eq!(status(&rows, "b_x1_r0").0, "ok", "{rows:?}");
    assert!(
        rows.iter().all(|r| r[12].starts_with("out/logs/")),
        "{rows:?}"
    );
}

#[test]
fn a_resume_from_another_directory_is_refused_and_names_where_the_run_started() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  param x 1\n  run \"echo {{{{ x }}}}\"\n  sweep x 1 2\n}}\n"
    ));
    w.run(&[]).status(0);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = w.out().display().to_string();
    let file = w.path().join("e.kdl").display().to_string();
    let r = Test::new()
        .dir(elsewhere.path())
        .args(["run", &file, "--resume", &out])
        .run()
        .status(2);
    let started = w.path().canonicalize().unwrap().display().to_string();
    assert!(
        r.stderr
            .contains(&format!("was run from {started}: a resume runs there too")),
        "{}",
        r.stderr
    );
    // nothing ran there, and nothing was written there (no history database either)
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    // where it started, the resume runs
    Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--resume", "out"])
        .run()
        .status(0);
}

#[test]
fn resume_skips_points_that_succeeded_and_says_why_others_run_again() {
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  param x 1\n  run \"test {{{{ x }}}} = 1 || test -e marker\"\n  sweep x 1 2\n}}\n"));
    w.run(&[]).status(3);
    std::fs::write(w.path().join("marker"), "").unwrap();
    // --verbose names each skipped point; without it one line counts them
    let ran = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--resume", "out", "--verbose"])
        .run()
        .status(0);
    assert!(
        ran.stderr
            .contains("b_x1_r0: skipped, succeeded before with the same command and code"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("b_x2_r0: runs again: it failed last time"),
        "{}",
        ran.stderr
    );
    assert!(manifest(&w.out()).iter().all(|r| &r[13] == "ok"));
    // a changed command runs again (an edited experiment is resumed with --force)
    let kdl = std::fs::read_to_string(w.path().join("e.kdl"))
        .unwrap()
        .replace("test -e marker", "test -e marker && true");
    std::fs::write(w.path().join("e.kdl"), kdl).unwrap();
    let ran = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--resume", "out", "--force"])
        .run()
        .status(0);
    assert!(
        ran.stderr
            .contains("resume: 2 run again (its command or point (lane, settings) changed: 2)"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_sigint_during_the_build_leaves_the_points_not_run_not_failed() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  build \"sleep 30\"\n  run \"true {{{{ x }}}}\"\n  param x 1\n  sweep x 1 2\n}}\n"
    ));
    let mut child = w.spawn(&[]);
    w.wait_process("build1");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = exited(&mut child, "expr did not stop after SIGINT");
    assert_eq!(status.code(), Some(130));
    // as after a Ctrl-C between points: a row each, `interrupted`, "not run: interrupted" —
    // none says a point failed (the manifest held its header alone while the summary listed
    // the points)
    let rows = manifest(&w.out());
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter().all(|r| r.iter().any(|c| c == "interrupted")
            && r.iter().any(|c| c == "not run: interrupted")
            && !r.iter().any(|c| c == "failed")),
        "{rows:?}"
    );
    let not_run: Vec<_> = journal(&w.out())
        .into_iter()
        .filter(|e| e["event"] == "not-run")
        .collect();
    assert!(
        not_run.len() == 1 && not_run[0]["status"] == "interrupted",
        "{not_run:?}"
    );
    let summary = std::fs::read_to_string(w.out().join("summary.md")).unwrap();
    assert!(
        summary.contains("b_x1_r0 (not run: interrupted)")
            && summary.contains("b_x2_r0 (not run: interrupted)"),
        "{summary}"
    );
}

#[test]
fn a_second_sigint_ends_the_grace_of_a_step_that_ignores_term() {
    // a client that ignores TERM, and a long grace: the second signal stops it now
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"trap '' TERM; sleep 60 & wait; sleep 60\"\n}}\n"
    ));
    let mut child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "out", "--grace", "30"])
        .current_dir(w.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    w.wait_process("run1");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(1000));
    let second = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = exited(&mut child, "expr did not stop after the second SIGINT");
    assert!(
        second.elapsed() < Duration::from_secs(10),
        "the grace of 30 s was waited out: {:?}",
        second.elapsed()
    );
    assert_ne!(status.code(), Some(0));
    assert_no_survivors(&w.out());
}

#[test]
fn sigint_tears_everything_down_and_exits_130() {
    let port = free_port();
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  serve s \"python3 wl/server.py --port {port}\" port={port}\n  run \"sleep 60; : {{{{ x }}}}\"\n  run \"sleep 60\"\n  param x 1\n  sweep x 1 2\n}}\n"));
    let mut child = w.spawn(&[]);
    w.wait_process("run2");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = exited(&mut child, "expr did not stop after SIGINT");
    assert_eq!(status.code(), Some(130));
    let events = journal(&w.out());
    assert!(events
        .iter()
        .any(|e| e["event"] == "end" && e["exit_code"] == 130));
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "point" && e["run_id"] == "b_x2_r0"),
        "no new point after the interrupt"
    );
    // every point has its row, as under --jobs: the one never started says so
    let m = manifest(&w.out());
    assert_eq!(m.len(), 2);
    assert_eq!(&m[0][13], "interrupted");
    assert_eq!(
        (&m[1][0], &m[1][13], &m[1][15]),
        ("b_x2_r0", "interrupted", "not run: interrupted")
    );
    let summary = std::fs::read_to_string(w.out().join("summary.md"))
        .expect("a partial report is written on interrupt");
    assert!(
        summary.contains("Points without data (2;")
            && summary.contains("b_x1_r0 (interrupted")
            && summary.contains("b_x2_r0 (not run: interrupted)"),
        "{summary}"
    );
    assert_no_survivors(&w.out());
}

#[test]
fn expr_stop_cleans_up_after_expr_was_killed() {
    let port = free_port();
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  serve s \"python3 wl/server.py --port {port}\" port={port}\n  run \"sleep 60\"\n}}\n"));
    let mut child = w.spawn(&[]);
    w.wait_process("run1");
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let alive: Vec<i64> = journal(&w.out())
        .iter()
        .filter(|e| e["event"] == "process")
        .filter_map(|e| e["pgid"].as_i64())
        .filter(|p| group_alive(*p))
        .collect();
    assert_eq!(
        alive.len(),
        2,
        "server and client outlive a SIGKILLed expr until `expr stop`"
    );
    let out = Test::new()
        .dir(w.path())
        .args(["stop", "out"])
        .run()
        .status(0);
    assert!(
        out.stderr.contains("stopped `run1-b-r0`") || out.stderr.contains("stopped `run1"),
        "{}",
        out.stderr
    );
    assert_no_survivors(&w.out());
    let again = Test::new()
        .dir(w.path())
        .args(["stop", "out"])
        .run()
        .status(0);
    assert!(again
        .stderr
        .contains("nothing recorded in the journal is still running"));
    // the report of the killed run: the point that was running is interrupted (no outcome was
    // recorded), not "not run"
    let report = w.report(3);
    assert!(
        report.stderr.contains("b_r0 (interrupted)") && !report.stderr.contains("b_r0 (not run)"),
        "{}",
        report.stderr
    );
}

/// Whether an `expr __watch` (a run's sentinel) of `out` is alive.
fn sentinel_alive(out: &Path) -> bool {
    let abs = std::fs::canonicalize(out).unwrap();
    let o = Command::new("pgrep")
        .args(["-f", &format!("__watch {}$", abs.display())])
        .output()
        .unwrap();
    !o.stdout.is_empty()
}

/// A kill -9 of expr (no teardown of its own) leaves nothing running: the run's sentinel, in a
/// session of its own, stops the server and the client as `expr stop` would, says so in
/// runtime/after-expr-died.txt and exits; `expr stop` then finds nothing. A run that ends (here
/// one interrupted with SIGINT, after its teardown) leaves no sentinel and no such file.
#[test]
fn a_killed_runs_sentinel_stops_what_it_started() {
    let port = free_port();
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  serve s \"python3 wl/server.py --port {port}\" port={port}\n  run \"sleep 60\"\n}}\n"));
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_expr"))
            .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
            .current_dir(w.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut child = spawn();
    w.wait_process("run1");
    assert!(sentinel_alive(&w.out()), "the run started its sentinel");
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert_no_survivors(&w.out());
    let log = w.out().join("runtime/after-expr-died.txt");
    let end = Instant::now() + Duration::from_secs(10);
    while sentinel_alive(&w.out()) {
        assert!(Instant::now() < end, "the sentinel did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
    let said = std::fs::read_to_string(&log).expect("the sentinel says what it did");
    assert!(
        said.contains("ended without its teardown")
            && said.contains("stopped `run1-b_r0`")
            && said.contains("stopped `s-b_r0`"),
        "{said}"
    );
    let again = Test::new()
        .dir(w.path())
        .args(["stop", "out"])
        .run()
        .status(0);
    assert!(
        again
            .stderr
            .contains("nothing recorded in the journal is still running"),
        "{}",
        again.stderr
    );
    // interrupted: expr's own teardown, and its sentinel told so
    std::fs::remove_dir_all(w.out()).unwrap();
    let mut child = spawn();
    w.wait_process("run1");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(!sentinel_alive(&w.out()), "the sentinel ended with the run");
    assert_no_survivors(&w.out());
    assert!(!w.out().join("runtime/after-expr-died.txt").exists());
}

/// `collect "regex" path=`: the pattern over that file of the point's output dir, not over the
/// run's output (the property was accepted and ignored: 5, from stdout, not 9).
#[test]
fn a_regex_collect_with_a_path_reads_that_file() {
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  run \"echo ms=5; echo ms=9 > {{{{ outdir }}}}/out.txt\"\n  collect \"regex\" path=\"out.txt\" pattern=\"ms=([0-9]+)\"\n}}\n"));
    let r = w.run(&[]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let rows = common::metric_rows(&w.out(), "ms");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, "9", "{rows:?}");
    assert!(rows[0].1.contains("outputs/b_r0/out.txt"), "{rows:?}");
}

#[test]
fn an_unreachable_host_stops_at_preflight() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("ssh_config");
    std::fs::write(
        &cfg,
        "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
    )
    .unwrap();
    let (port, port2) = (free_port(), free_port());
    let w = Work::new(&format!("{PRELUDE}host far ssh=\"127.0.0.1\" ssh-port={port} ip=\"127.0.0.1\" repo=\"/nonexistent\"\nhost farther ssh=\"127.0.0.1\" ssh-port={port2} ip=\"127.0.0.1\" repo=\"/nonexistent\"\nbench b {{\n  run \"true\" host=far\n  run \"true\" host=farther\n}}\n"));
    let ran = Test::new()
        .dir(w.path())
        .env("EXPR_SSH_CONFIG", cfg.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(expr::util::exit_codes::PREFLIGHT);
    // every unreachable host is named, at once
    for h in ["far", "farther"] {
        assert!(
            ran.stderr.contains(&format!("host `{h}` (127.0.0.1, port"))
                && ran.stderr.contains("is unreachable"),
            "{h}: {}",
            ran.stderr
        );
    }
    // no point is counted as failed, and no empty result directory stays behind
    assert!(!w.out().exists(), "the result directory was left");
    assert!(ran.stderr.contains("nothing ran"), "{}", ran.stderr);
}

#[test]
fn a_host_that_answers_its_banner_and_then_nothing_stops_at_preflight_within_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("ssh_config");
    std::fs::write(
        &cfg,
        "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
    )
    .unwrap();
    // a server that accepts, says its banner, and never answers the key exchange
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming().flatten() {
            use std::io::Write;
            let mut c = c;
            let _ = c.write_all(b"SSH-2.0-OpenSSH_9.2\r\n");
            held.push(c);
        }
    });
    let w = Work::new(&format!("{PRELUDE}host mute ssh=\"127.0.0.1\" ssh-port={port} ip=\"127.0.0.1\" repo=\"/nonexistent\"\nbench b {{\n  run \"true\" host=mute\n}}\n"));
    let t = Instant::now();
    let ran = Test::new()
        .dir(w.path())
        .env("EXPR_SSH_CONFIG", cfg.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(expr::util::exit_codes::PREFLIGHT);
    assert!(
        ran.stderr
            .contains("did not finish connecting within 30 s (the port answers"),
        "{}",
        ran.stderr
    );
    assert!(t.elapsed() < Duration::from_secs(90), "{:?}", t.elapsed());
    assert!(!w.out().exists(), "the result directory was left");
}

#[test]
fn real_sshd_a_local_and_an_ssh_host_run_servers_and_clients_and_leave_nothing_behind() {
    let Some(sshd) = Sshd::start() else { return };
    let port = free_port();
    let kdl = format!(
        "{PRELUDE}host far ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\"\nbench b {{\n  \
         serve s \"python3 wl/server.py --port {port}\" host=far port={port}\n  \
         run \"python3 wl/trainer.py --mode tcp --port {port} --steps 5 --warmup-steps 1 --out {{{{ outdir }}}}/local.csv\" host=local\n  \
         run \"python3 wl/trainer.py --mode tcp --port {port} --steps 5 --warmup-steps 1 --rank 1 --out {{{{ outdir }}}}/far.csv\" host=far\n  \
         run \"sleep 0.2; echo $PPID > remote-ppid\" host=far\n}}\n",
        sp = sshd.port
    );
    let w = Work::new(&kdl);
    let ran = Test::new()
        .dir(w.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--verbose"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("[far/run2-b_r0] finished 5 steps")
            && ran.stderr.contains("[local/run1-b_r0] finished 5 steps"),
        "--verbose streams step output by host and step: {}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("EXPR_PGID"),
        "the wrapper's line is not shown"
    );
    assert!(w.out().join("outputs/b_r0/local.csv").is_file());
    assert!(
        w.out().join("outputs/b_r0/far.csv").is_file(),
        "the far host's repo is this directory"
    );
    let events = journal(&w.out());
    let remote: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "process" && e["remote"] == true)
        .collect();
    assert_eq!(remote.len(), 3);
    assert!(
        remote.iter().all(|e| e["remote_pgid"].as_i64().is_some()),
        "remote process groups are recorded: {remote:?}"
    );
    let stopped = events.iter().find(|e| e["event"] == "stopped").unwrap();
    assert_eq!(stopped["gone"], true, "{}", ran.stderr);
    assert_no_survivors(&w.out());
}

#[test]
fn real_sshd_a_remote_server_is_stopped_by_its_remote_process_group_on_sigint() {
    let Some(sshd) = Sshd::start() else { return };
    let port = free_port();
    let kdl = format!(
        "{PRELUDE}host far ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\"\nbench b {{\n  \
         serve s \"python3 wl/server.py --port {port}\" host=far port={port}\n  run \"sleep 60\" host=far\n}}\n",
        sp = sshd.port
    );
    let w = Work::new(&kdl);
    // as Ctrl-C in a terminal does: SIGINT to expr's whole process group
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
        .current_dir(w.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    w.wait_process("run1");
    let pid = child.id();
    unsafe { libc::kill(-(pid as i32), libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_no_survivors(&w.out());
    // no ControlMaster (nor its socket directory) outlives the run
    let cm = std::env::temp_dir().join(format!("expr-cm-{pid}"));
    assert!(!cm.exists(), "{} outlived expr", cm.display());
    let masters = Command::new("pgrep")
        .args(["-f", &format!("expr-cm-{pid}/")])
        .output()
        .unwrap();
    assert!(
        masters.stdout.is_empty(),
        "an ssh master outlived expr: {}",
        String::from_utf8_lossy(&masters.stdout)
    );
}

/// Two hosts that are one machine (two names for one sshd) each get their own multiplexed
/// connection: with one socket for both (`%C` hashes user, host and port), the second master
/// found it taken, ran as a plain `ssh -f -N` in the background and outlived the run.
#[test]
fn real_sshd_two_host_names_for_one_machine_leave_no_ssh_behind() {
    let Some(sshd) = Sshd::start() else { return };
    let kdl = format!(
        "{PRELUDE}host far ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\"\n\
         host also ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\"\n\
         bench b {{\n  run \"true\" host=far\n  run \"true\" host=also\n}}\n",
        sp = sshd.port
    );
    let w = Work::new(&kdl);
    let child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "out"])
        .current_dir(w.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let survivors = common::processes_left(&format!("expr-cm-{pid}/"));
    if !survivors.is_empty() {
        let _ = Command::new("pkill")
            .args(["-f", &format!("expr-cm-{pid}/")])
            .status();
    }
    assert!(survivors.is_empty(), "an ssh outlived expr: {survivors}");
}

/// A process in a new session of its own (its pid is its process group), and its start time.
#[allow(clippy::zombie_processes)] // the caller waits for it
fn own_group() -> (Child, i64, u64) {
    let child = Command::new("setsid")
        .args(["sleep", "60"])
        .spawn()
        .unwrap();
    let pid = child.id() as i64;
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(st) = expr::exec::backend::host::start_time(pid) {
            // setsid execs sleep in place, so once the group exists the start time is final
            if group_alive(pid) {
                return (child, pid, st);
            }
        }
        assert!(Instant::now() < end, "setsid sleep did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn expr_stop_leaves_a_reused_process_group_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (mut victim, pgid, start) = own_group();
    let boot = expr::exec::backend::host::boot_id();
    // the journal of a killed run whose server had this group id, but started at another time
    let event = |start: u64| {
        serde_json::json!({"event": "process", "step": "serve-x", "host": "local", "pgid": pgid,
            "start": start, "boot": boot, "remote": false})
        .to_string()
    };
    std::fs::write(dir.path().join("journal.jsonl"), event(start + 7) + "\n").unwrap();
    let out = Test::new()
        .args(["stop", dir.path().to_str().unwrap()])
        .run()
        .status(0);
    assert!(
        out.stderr.contains("left `serve-x` alone"),
        "{}",
        out.stderr
    );
    assert!(
        group_alive(pgid),
        "expr stop killed a group it did not start"
    );
    // the same record with the right start time: it is expr's, and it is stopped
    std::fs::write(dir.path().join("journal.jsonl"), event(start) + "\n").unwrap();
    let out = Test::new()
        .args(["stop", dir.path().to_str().unwrap()])
        .run()
        .status(0);
    assert!(out.stderr.contains("stopped `serve-x`"), "{}", out.stderr);
    let _ = victim.wait();
    assert!(!group_alive(pgid));
}

#[test]
fn resume_after_sigkill_stops_the_servers_the_killed_run_left() {
    let port = free_port();
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  serve s \"python3 wl/server.py --port {port}\" port={port}\n  run \"sleep 2\"\n  lane x\n  lane y\n}}\n"));
    let mut child = w.spawn(&[]);
    w.wait_process("run1");
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let r = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--resume", "out", "--grace", "1"])
        .run();
    assert!(
        r.stderr.contains("resume: stopped `s-"),
        "the leftover server is named and stopped: {}",
        r.stderr
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_no_survivors(&w.out());
}

#[test]
fn expr_stop_names_ssh_errors_and_skips_steps_that_finished() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port(); // nothing listens there: ssh fails at once
    let header = serde_json::json!({"event": "header", "host_specs": [
        {"name": "far", "ssh": "127.0.0.1", "ssh_port": port, "ip": "127.0.0.1", "repo": "/tmp"}]});
    let events = [
        header,
        serde_json::json!({"event": "process", "step": "s-b_r0", "host": "far", "pgid": null, "remote_pgid": 4242, "remote_start": 1, "remote": true}),
        serde_json::json!({"event": "process", "step": "run1-b_r0", "host": "far", "pgid": null, "remote_pgid": 4343, "remote_start": 1, "remote": true}),
        serde_json::json!({"event": "step", "step": "run1-b_r0", "host": "far", "status": "ok", "exit_code": 0}),
    ];
    let text: String = events.iter().map(|e| e.to_string() + "\n").collect();
    std::fs::write(dir.path().join("journal.jsonl"), text).unwrap();
    let out = Test::new()
        .args(["stop", dir.path().to_str().unwrap()])
        .run();
    assert_ne!(out.status, 0, "something may still run: {}", out.stderr);
    assert!(
        out.stderr.contains("cannot reach `far` to stop `s-b_r0`"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("run1-b_r0"),
        "a step that finished is not a target: {}",
        out.stderr
    );
}

/// A run given `--set` resumes as `expr run --resume DIR` (what the run suggests): the journal
/// keeps the run's `--set` values and a resume takes them (it said the unchanged file "changed
/// since the run"), each replaced by one given again for the same key.
#[test]
fn resume_takes_the_runs_own_set_values_and_those_given_again() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = "experiment r\nbench b {\n    param fail 0\n    param v 1\n    param key-size 16\n    run \"test {{ fail }} = 0 || test -e fixed && echo v={{ v }}\"\n    collect regex pattern=\"v=([0-9]+)\"\n    lane a\n    lane b fail=1\n}\n";
    std::fs::write(dir.path().join("e.kdl"), kdl).unwrap();
    let run = |args: &[&str]| Test::new().dir(dir.path()).args(args).run();
    run(&[
        "run",
        "e.kdl",
        "--output",
        "out",
        "--set",
        "v=7",
        "--set",
        "key-size=64",
    ])
    .status(3);
    let header = journal(&dir.path().join("out"))
        .into_iter()
        .find(|e| e["event"] == "header")
        .unwrap();
    assert_eq!(header["sets"], serde_json::json!(["v=7", "key-size=64"]));
    std::fs::write(dir.path().join("fixed"), "").unwrap();
    // one of them given again: the other is the run's
    let again = run(&["run", "--resume", "out", "--set", "key-size=64"]).status(0);
    assert!(
        again
            .stderr
            .contains("expr: resuming with the run's --set v=7 key-size=64")
            && again.stderr.contains("resume: 1 point kept"),
        "{}",
        again.stderr
    );
    let values: Vec<String> = common::csv_by_name(&dir.path().join("out/metrics.csv"))
        .iter()
        .filter(|r| r["metric"] == "v")
        .map(|r| r["value"].clone())
        .collect();
    assert_eq!(values, ["7", "7"]);
    // another value for a recorded key is a change, refused without --force: the --set's, not
    // the file's (it said "e.kdl changed since the run" of the file as it was)
    let changed = run(&["run", "--resume", "out", "--set", "v=8"]).status(2);
    assert!(
        changed.stderr.contains("resuming with the run's --set (v=7 key-size=64), as given now for the keys it names: key-size=64 v=8")
            && changed.stderr.contains("the --set given now changes the experiment the run in out ran (e.kdl is as it was)")
            && !changed.stderr.contains("e.kdl changed"),
        "{}",
        changed.stderr
    );
    // a --set that is not valid is said as the --set's (it said the file was not there or not
    // valid any more, and resumed the journal's copy)
    let bad = run(&["run", "--resume", "out", "--set", "v=abc"]).status(2);
    assert!(
        bad.stderr.contains("the --set given now is not valid for e.kdl: --set `v` takes an integer, found the string `abc`")
            && !bad.stderr.contains("not there or not valid"),
        "{}",
        bad.stderr
    );
}

#[test]
fn resume_needs_only_the_directory_and_refuses_a_changed_file_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = "experiment r\nbench b {\n    param fail 0\n    run \"test {{ fail }} = 0\"\n    lane a\n    lane b fail=1\n}\n";
    std::fs::write(dir.path().join("e.kdl"), kdl).unwrap();
    let run = |args: &[&str]| Test::new().dir(dir.path()).args(args).run();
    run(&["run", "e.kdl", "--output", "out"]).status(3);
    let again = run(&["run", "--resume", "out"]);
    assert_eq!(again.status, 3, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("resume: 1 point kept (succeeded before with the same command and code)"),
        "{}",
        again.stderr
    );
    // the file changed since: say how, and require --force
    std::fs::write(dir.path().join("e.kdl"), kdl.replace("fail=1", "fail=0")).unwrap();
    let changed = run(&["run", "--resume", "out"]);
    assert_eq!(changed.status, 2, "{}", changed.stderr);
    assert!(
        changed.stderr.contains("e.kdl changed since the run")
            && changed.stderr.contains("--force"),
        "{}",
        changed.stderr
    );
    assert!(
        changed.stderr.contains("fail=0"),
        "the change is shown: {}",
        changed.stderr
    );
    run(&["run", "--resume", "out", "--force"]).status(0);
    // the file gone: the journal's copy is the experiment
    std::fs::remove_file(dir.path().join("e.kdl")).unwrap();
    let gone = run(&["run", "--resume", "out"]);
    assert!(
        gone.stderr
            .contains("resuming the experiment the journal recorded"),
        "{}",
        gone.stderr
    );
    assert_eq!(gone.status, 0, "{}", gone.stderr);
}

/// Lanes whose names slug alike (`a,b` and `a_b`) get run ids in file order (`a_b_r0`,
/// `a_b_r0_2`). Swapping them in the file must not let --resume keep each lane's old numbers
/// under the other lane: the point's identity (lane and settings) is part of what must match.
#[test]
fn resume_never_takes_one_lanes_results_for_a_swapped_lane() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = "experiment r\nbench b {\n    run \"true\"\n    lane \"a,b\"\n    lane \"a_b\"\n}\n";
    std::fs::write(dir.path().join("e.kdl"), kdl).unwrap();
    let run = |args: &[&str]| Test::new().dir(dir.path()).args(args).run();
    run(&["run", "e.kdl", "--output", "out"]).status(0);
    let swapped =
        "experiment r\nbench b {\n    run \"true\"\n    lane \"a_b\"\n    lane \"a,b\"\n}\n";
    std::fs::write(dir.path().join("e.kdl"), swapped).unwrap();
    let again = run(&["run", "e.kdl", "--resume", "out", "--force"]);
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert!(!again.stderr.contains("skipped"), "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("resume: 2 run again (its command or point (lane, settings) changed: 2)"),
        "{}",
        again.stderr
    );
}

/// A point's run id does not depend on what `--only` keeps: lanes whose names slug alike
/// (`x.`, `x!`: both `x_r0` once punctuation is dropped) and a second bench whose id another bench
/// has keep the ids the whole matrix gives them. Else `--only` ran `x!` as `x_r0`, and
/// `--resume` planned `x.` under that id as "changed" and ran it over `x!`'s results.
#[test]
fn only_and_resume_keep_the_run_ids_of_the_whole_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = "experiment r\nbench b {\n    param m \"a\"\n    run \"echo {{ m }}\"\n    lane \"x.\" m=\"first\"\n    lane \"x!\" m=\"second\"\n}\nbench c {\n    run \"true\"\n    lane x\n}\n";
    std::fs::write(dir.path().join("e.kdl"), kdl).unwrap();
    let run = |args: &[&str]| Test::new().dir(dir.path()).args(args).run();
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["plan", "e.kdl", "--format", "json"];
        all.extend_from_slice(args);
        let plan: serde_json::Value = serde_json::from_str(&run(&all).status(0).stdout).unwrap();
        plan["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["run_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&[]), ["x_r0", "x_r0_2", "c_x_r0"]);
    assert_eq!(ids(&["--only", "lane=x!"]), ["x_r0_2"]);
    assert_eq!(ids(&["--only", "bench=c"]), ["c_x_r0"]);
    run(&["run", "e.kdl", "--output", "out", "--only", "lane=x!"]).status(0);
    let again = run(&["run", "--resume", "out"]).status(0);
    assert!(!again.stderr.contains("run again"), "{}", again.stderr);
    let rows = common::manifest_rows(&dir.path().join("out"));
    assert_eq!(rows.len(), 1);
    assert_eq!((&rows[0][0], &rows[0][1]), ("x_r0_2", "x!"));
    let log = std::fs::read_to_string(dir.path().join("out/logs/run1-x_r0_2-local.log")).unwrap();
    assert!(log.contains("second"), "{log}");
    // summary.md's workload describes what ran, and names the bench `--only` left out
    let summary = std::fs::read_to_string(dir.path().join("out/summary.md")).unwrap();
    assert!(
        summary.contains("Not in this run (left out by `--only`): `c`.")
            && !summary.contains("runs `c`"),
        "{summary}"
    );
}

/// Without the file, `--resume` plans the journal's copy: a float stays a float (`1.0` runs as
/// `1.0`), and a copy whose secrets are masked is refused rather than run with `****`.
#[test]
fn resume_without_the_file_keeps_floats_and_refuses_masked_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| Test::new().dir(dir.path()).args(args).run();
    std::fs::write(
        dir.path().join("f.kdl"),
        "experiment f\nbench b {\n    run \"echo v={{ v }}\"\n    sweep v 1.0 2.5\n}\n",
    )
    .unwrap();
    run(&["run", "f.kdl", "--output", "fo"]).status(0);
    std::fs::remove_file(dir.path().join("f.kdl")).unwrap();
    let again = run(&["run", "--resume", "fo"]).status(0);
    assert!(
        again
            .stderr
            .contains("resume: 2 points kept (succeeded before with the same command and code)"),
        "{}",
        again.stderr
    );
    std::fs::write(
        dir.path().join("s.kdl"),
        "experiment s\nhost local {\n    env HF_TOKEN=\"sekrit\"\n}\nbench b {\n    param f 1\n    run \"test {{ f }} = 0\"\n}\n",
    )
    .unwrap();
    run(&["run", "s.kdl", "--output", "so"]).status(3);
    std::fs::remove_file(dir.path().join("s.kdl")).unwrap();
    let refused = run(&["run", "--resume", "so"]);
    assert_eq!(refused.status, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("secrets masked (`HF_TOKEN`)")
            && refused.stderr.contains("expr run FILE --resume so"),
        "{}",
        refused.stderr
    );
    assert!(!dir.path().join("so/runtime/resumed.kdl").exists());
}

/// Preflight records each host's checkout as git itself describes it: HEAD, the count of
/// `git status --porcelain` lines (changed, staged, untracked, a name with a newline), the
/// checksum of `git diff HEAD` and the hostname; a directory git does not track, and a
/// repository without a commit, have no head.
#[test]
fn preflight_records_the_checkout_as_git_describes_it() {
    let d = tempfile::tempdir().unwrap();
    let sh = |dir: &Path, script: &str| -> String {
        let o = Command::new("bash")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let repo = d.path().join("repo");
    let plain = d.path().join("plain");
    let fresh = d.path().join("fresh");
    for p in [&repo, &plain, &fresh] {
        std::fs::create_dir(p).unwrap();
    }
    sh(
        &repo,
        "git init -q && echo a > f && echo b > g && git add f g && git -c user.email=t@t -c user.name=t commit -qm one \
         && echo changed >> f && echo new > h && git add h && touch 'sp ace' \"$(printf 'x\\ny')\"",
    );
    sh(&fresh, "git init -q && touch u");
    let want = |dir: &Path| {
        (
            sh(dir, "git rev-parse --verify -q HEAD || echo none"),
            sh(dir, "git status --porcelain 2>/dev/null | wc -l")
                .parse::<i64>()
                .unwrap(),
            // no commit to diff against: `none` (helper 75: the checksum of nothing, 4294967295)
            sh(
                dir,
                "if git rev-parse -q --verify HEAD >/dev/null 2>&1; then git diff HEAD | cksum | cut -d' ' -f1; else echo none; fi",
            ),
        )
    };
    let hostname = sh(d.path(), "hostname");
    for (i, dir) in [&repo, &plain, &fresh].into_iter().enumerate() {
        let kdl = format!(
            "experiment p\nhost local ssh=\"local\" repo={:?}\nbench b {{\n    run \"true\" host=\"local\"\n}}\n",
            dir.display().to_string()
        );
        std::fs::write(d.path().join("p.kdl"), kdl).unwrap();
        let out = format!("out{i}");
        Test::new()
            .dir(d.path())
            .args(["run", "p.kdl", "--output", &out])
            .run()
            .status(0);
        let events = journal(&d.path().join(&out));
        let h = &events.iter().find(|e| e["event"] == "header").unwrap()["hosts"][0];
        let (head, dirty, tree) = want(dir);
        assert_eq!(h["git_head"], head.as_str(), "{}", dir.display());
        assert_eq!(h["dirty_files"], dirty, "{}", dir.display());
        assert_eq!(h["tree_diff"], tree.as_str(), "{}", dir.display());
        assert_eq!(h["hostname"], hostname.as_str());
    }
    // the values the cases above must have had, so that the comparison is not of two blanks
    let (head, dirty, _) = want(&repo);
    assert_eq!(head.len(), 40);
    assert_eq!(dirty, 4, "f modified, h staged, two untracked (g is clean)");
    assert_eq!(want(&plain).0, "none");
    assert_eq!(want(&plain).2, "none");
    assert_eq!(want(&fresh), ("none".to_string(), 1, "none".to_string()));
}

/// Preflight's `git diff` runs in the background of its script, where a shell ignores SIGINT:
/// interrupting the run must stop it rather than wait for it, whether the signal reaches expr
/// alone (`kill -INT`) or its whole process group (Ctrl-C in a terminal).
#[test]
fn a_run_interrupted_during_preflight_stops_a_slow_git_diff_and_exits_130() {
    use std::os::unix::process::CommandExt;
    let real_git = String::from_utf8(
        Command::new("bash")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let real_git = real_git.trim();
    assert!(!real_git.is_empty(), "git is needed");
    for (case, whole_group) in [("kill", false), ("ctrl-c", true)] {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let marker = format!("expr-slow-diff-{}-{case}", std::process::id());
        // `git diff` takes a minute and ignores TERM; every other git command is the real one
        std::fs::write(
            bin.join("git"),
            format!(
                "#!/bin/bash\nfor a; do [ \"$a\" = diff ] && {{ trap '' TERM; exec -a {marker} sleep 60; }}; done\nexec {real_git} \"$@\"\n"
            ),
        )
        .unwrap();
        let mut perm = std::fs::metadata(bin.join("git")).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(bin.join("git"), perm).unwrap();
        std::fs::write(
            d.path().join("e.kdl"),
            "experiment e\nbench b {\n    run \"true\"\n}\n",
        )
        .unwrap();
        // a checkout with a commit: preflight diffs against it (without one it diffs nothing)
        let made = Command::new(real_git)
            .args(["init", "-q"])
            .current_dir(d.path())
            .status()
            .unwrap()
            .success()
            && Command::new(real_git)
                .args([
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "user.name=t",
                    "commit",
                    "-q",
                    "--allow-empty",
                    "-m",
                    "x",
                ])
                .current_dir(d.path())
                .status()
                .unwrap()
                .success();
        assert!(made, "a git repository with a commit");
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let mut child = Command::new(env!("CARGO_BIN_EXE_expr"))
            .args(["run", "e.kdl", "--output", "out"])
            .current_dir(d.path())
            .env("PATH", &path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        // preflight is waiting for the slow diff
        let end = Instant::now() + Duration::from_secs(20);
        let running = || {
            !Command::new("pgrep")
                .args(["-f", &marker])
                .output()
                .unwrap()
                .stdout
                .is_empty()
        };
        while !running() {
            assert!(
                Instant::now() < end,
                "{case}: the slow git diff never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid = child.id() as i32;
        let t = Instant::now();
        unsafe { libc::kill(if whole_group { -pid } else { pid }, libc::SIGINT) };
        let status = child.wait().unwrap();
        let took = t.elapsed();
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(130), "{case}: {err}");
        assert!(
            took < Duration::from_secs(5),
            "{case}: took {took:?}: {err}"
        );
        assert!(
            err.contains("interrupted during preflight: nothing ran"),
            "{case}: {err}"
        );
        // nothing of the preflight is left, and the directory it made is gone
        let end = Instant::now() + Duration::from_secs(3);
        while running() {
            assert!(
                Instant::now() < end,
                "{case}: the slow git diff outlived expr"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!d.path().join("out").exists(), "{case}");
    }
}

/// A result directory inside the benchmarked checkout is expr's output, not the checkout's dirt:
/// a second run into `results/` sees the same checkout as the first. A host may be named in any
/// script's letters.
#[test]
fn results_inside_the_checkout_are_not_its_dirt_and_hosts_may_have_unicode_names() {
    let d = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .current_dir(d.path())
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment dirt\nhost 节点一 ssh=\"local\"\nbench b {\n    run \"true\" host=\"节点一\"\n}\n",
    )
    .unwrap();
    git(&["init", "-q"]);
    git(&["add", "e.kdl"]);
    git(&["commit", "-qm", "e"]);
    // one file of the user's own that git does not track: that one is dirt
    std::fs::write(d.path().join("notes.txt"), "mine").unwrap();
    let mut dirty = Vec::new();
    for out in ["results/one", "results/two"] {
        let ran = Test::new()
            .dir(d.path())
            .args(["run", "e.kdl", "--output", out])
            .run();
        assert_eq!(ran.status, 0, "{}", ran.stderr);
        let j = journal(&d.path().join(out));
        let header = j.iter().find(|e| e["event"] == "header").unwrap();
        assert_eq!(header["hosts"][0]["host"], "节点一");
        dirty.push(header["hosts"][0]["dirty_files"].as_i64().unwrap());
        assert!(d
            .path()
            .join(out)
            .join("logs/run1-b_r0-节点一.log")
            .is_file());
    }
    assert_eq!(
        dirty,
        [1, 1],
        "the first run's directory made the checkout dirty"
    );
}

/// One number rule for every collector: NaN, ±inf, a literal that overflows (1e309, 1e400) or
/// underflows to 0 (1e-400) is no number — the point is no-data with the file:line — and every
/// output says no-data for it (summary_e2e.csv said ok).
#[test]
fn hostile_values_are_no_data_with_their_line_in_every_collector_and_every_output() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("n.kdl"),
        r#"experiment nans
bench rx {
    sweep v "NaN" "inf" "-inf" "1e309" "1e400" "1e-400" "12.5" "1e-300"
    run "printf 'caf\\351 val=%s\\n' {{ v }}"
    collect regex pattern="val=([^ ]+)"
}
bench cs {
    sweep v "NaN" "inf" "-inf" "1e309" "1e400" "1e-400" "12.5" "1e-300"
    run "printf 'x\\n%s\\n' {{ v }} > {{ outdir }}/m.csv"
    collect csv path="m.csv" metric="x"
}
bench js {
    sweep v "NaN" "Infinity" "-Infinity" "1e309" "1e400" "1e-400" "12.5" "1e-300"
    run "printf '{\"r\": {\"x\": %s}}' {{ v }} > {{ outdir }}/m.json"
    collect json path="m.json" metric="r.x"
}
"#,
    )
    .unwrap();
    let ran = Test::new()
        .dir(d.path())
        .args(["run", "n.kdl", "--output", "o"])
        .run();
    assert_eq!(ran.status, 3, "{}", ran.stderr);
    let out = d.path().join("o");
    let rows = manifest(&out);
    assert_eq!(rows.len(), 24);
    // summary_e2e.csv's status column, by name, at the position the checks below index
    let mut rd = csv::Reader::from_path(out.join("summary_e2e.csv")).unwrap();
    let status_at = rd
        .headers()
        .unwrap()
        .iter()
        .position(|c| c == "status")
        .unwrap();
    let summary: Vec<csv::StringRecord> = rd
        .records()
        .map(|r| {
            let r = r.unwrap();
            let mut cells = vec![String::new(); 14];
            cells[0] = r[0].to_string();
            cells[13] = r[status_at].to_string();
            csv::StringRecord::from(cells)
        })
        .collect();
    for r in &rows {
        let id = &r[0];
        let good = id.ends_with("v12_5_r0") || id.ends_with("v1e_300_r0");
        let in_summary = summary.iter().find(|s| &s[0] == id).unwrap();
        if good {
            assert_eq!(&r[13], "ok", "{r:?}");
            assert_eq!(&in_summary[13], "ok");
        } else {
            assert_eq!(&r[13], "no-data", "{r:?}");
            assert_eq!(
                &in_summary[13], "no-data",
                "summary_e2e.csv agrees: {in_summary:?}"
            );
            let why = &r[15];
            // (JSON: a literal its line, as the other collectors; the parser's own error says
            // its line and column)
            let at = match &id[..2] {
                "rx" => ".log:1: ",
                "cs" => "/m.csv:2: ",
                _ if why.contains("at line 1 column") => "/m.json: ",
                _ => "/m.json:1: ",
            };
            assert!(why.contains(at), "{why}");
            // JSON has no NaN or infinity and no number out of range: its parser says where
            assert!(
                why.contains("is not a finite number")
                    || why.contains("too small for a 64-bit float")
                    || (id.starts_with("js") && why.contains("at line 1 column")),
                "{why}"
            );
        }
    }
    // the accepted values are read exactly, through a byte that is not UTF-8 on the same line
    let metrics: Vec<csv::StringRecord> = csv::Reader::from_path(out.join("metrics.csv"))
        .unwrap()
        .records()
        .map(|r| r.unwrap())
        .collect();
    for (id, want) in [
        ("rx_v12_5_r0", "12.5"),
        ("rx_v1e_300_r0", "1e-300"),
        ("cs_v12_5_r0", "12.5"),
        ("cs_v1e_300_r0", "1e-300"),
        ("js_v12_5_r0", "12.5"),
        ("js_v1e_300_r0", "1e-300"),
    ] {
        let row = metrics
            .iter()
            .find(|r| &r[0] == id && ["val", "x", "r.x"].contains(&&r[6]))
            .unwrap();
        assert_eq!(&row[9], want, "{row:?}");
    }
}

/// Two runs into one result directory at once (and two `--resume`s): one runs, the other stops
/// before it writes or stops anything, naming the holder; `expr report` and `expr stop` wait
/// their turn the same way.
#[test]
fn one_expr_per_result_directory_the_second_names_the_holder() {
    let port = free_port();
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  serve s \"python3 wl/server.py --port {port}\" port={port} ready-timeout=10\n  run \"sleep 1.{{{{ d }}}}\"\n  sweep d 5 6\n}}\n"
    ));
    // each point sleeps 1.5 s or more: the three commands below, each an expr of its own,
    // meet the holder alive on a loaded machine too
    let both = |extra: &[&str]| -> Vec<std::process::Output> {
        let a: Vec<Child> = (0..2)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_expr"))
                    .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
                    .args(extra)
                    .current_dir(w.path())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        a.into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect()
    };
    for extra in [&[][..], &["--force"][..]] {
        let _ = std::fs::remove_dir_all(w.out());
        let outs = both(extra);
        let codes: Vec<i32> = outs.iter().map(|o| o.status.code().unwrap()).collect();
        let errs: Vec<String> = outs
            .iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect();
        let ok = codes.iter().filter(|c| **c == 0).count();
        assert_eq!(
            ok,
            1,
            "exactly one runs: {codes:?}\n{}",
            errs.join("\n---\n")
        );
        let loser = errs.iter().find(|e| !e.contains("(exit 0)")).unwrap();
        assert!(
            loser.contains("is in use by another expr (pid ")
                || loser.contains("already exists")
                || loser.contains("was written by another expr meanwhile"),
            "{loser}"
        );
        let headers = journal(&w.out())
            .iter()
            .filter(|e| e["event"] == "header")
            .count();
        assert_eq!(headers, 1, "one run's journal");
        assert_eq!(manifest(&w.out()).len(), 2);
        assert_no_survivors(&w.out());
    }
    // while a run holds the directory, a report and a stop say who holds it
    let mut run = w.spawn(&["--force"]);
    let end = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(w.out().join(".expr-lock"))
        .unwrap_or_default()
        .starts_with(&run.id().to_string())
    {
        assert!(Instant::now() < end, "the run never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let holder = format!("(pid {}", run.id());
    let r = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--resume", "out"])
        .run();
    assert_ne!(r.status, 0);
    assert!(
        r.stderr
            .contains(&format!("is in use by another expr {holder}")),
        "{}",
        r.stderr
    );
    // report and stop: their own exit code (7) and what to do instead
    let rep = Test::new().dir(w.path()).args(["report", "out"]).run();
    assert_eq!(rep.status, expr::util::exit_codes::BUSY, "{}", rep.stderr);
    assert!(
        rep.stderr
            .contains(&format!("out is being written by a running expr {holder}"))
            && rep.stderr.contains("it writes its report when it ends")
            && rep.stderr.contains("`expr report out --template FILE`"),
        "{}",
        rep.stderr
    );
    let stop = Test::new().dir(w.path()).args(["stop", "out"]).run();
    assert_eq!(stop.status, expr::util::exit_codes::BUSY, "{}", stop.stderr);
    assert!(
        stop.stderr
            .contains(&format!("out is held by a running expr {holder}"))
            && stop.stderr.contains("send it Ctrl-C"),
        "{}",
        stop.stderr
    );
    assert!(
        run.wait().unwrap().success(),
        "the holder was not disturbed"
    );
    assert_no_survivors(&w.out());
}

/// A server that dies while its clients run fails the point with its exit code and log tail;
/// the journal said only `"gone": true` and the lane was ok.
#[test]
fn a_server_that_dies_during_the_point_fails_it_with_its_exit_and_log() {
    let port = free_port();
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  serve s #\"python3 -c \"import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', {port})); s.listen(); print('listening', flush=True); time.sleep(0.5); print('dying: out of memory', flush=True); sys.exit(7)\"\"# port={port} ready-timeout=10\n  run \"sleep 1.5\"\n}}\n"
    ));
    let ran = w.run(&[]).status(3);
    let rows = manifest(&w.out());
    assert_eq!(&rows[0][13], "failed", "{rows:?}");
    let why = &rows[0][15];
    assert!(
        why.contains("server `s-b_r0` on `local` exited (code 7) while the point ran")
            && ran.stderr.contains("dying: out of memory"),
        "{why}\n{}",
        ran.stderr
    );
    assert!(journal(&w.out())
        .iter()
        .any(|e| e["event"] == "server-died" && e["code"] == 7));
    assert_no_survivors(&w.out());
}

fn pids_of(pattern: &str) -> Vec<i32> {
    let out = Command::new("pgrep")
        .args(["-f", pattern])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Steps that leave their process group (`setsid … &`, a double fork, `nohup … &`, a plain
/// `&`) are stopped at the point's teardown and named; after a kill -9 of expr, `expr stop`
/// finds them by the run's mark and never says that nothing runs while they live.
#[test]
fn processes_that_leave_their_group_are_stopped_at_teardown_and_by_expr_stop() {
    // unique sleep lengths name this test's processes
    let tag = 300 + (std::process::id() % 97) as u64;
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"setsid sleep {a} & (sleep {b} &) ; sleep {c} & nohup sleep {d} >/dev/null 2>&1 & sleep 0.5\"\n}}\n",
        a = tag + 1000,
        b = tag + 2000,
        c = tag + 3000,
        d = tag + 4000
    ));
    let ran = w.run(&[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    for n in [1000, 2000, 3000, 4000] {
        let pat = format!("^sleep {}$", tag + n);
        assert!(
            pids_of(&pat).is_empty(),
            "`sleep {}` outlived the run",
            tag + n
        );
    }
    assert!(
        ran.stderr.contains("outside its process groups; stopped:")
            && ran.stderr.contains(&format!("sleep {}`", tag + 1000)),
        "{}",
        ran.stderr
    );
    // killed mid-point: expr stop finds them by the mark
    let w2 = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"setsid sleep {a} & sleep 30\"\n}}\n",
        a = tag + 5000
    ));
    let mut run = w2.spawn(&[]);
    let pat = format!("^sleep {}$", tag + 5000);
    let end = Instant::now() + Duration::from_secs(20);
    while pids_of(&pat).is_empty() {
        assert!(Instant::now() < end, "the step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    let stop = Test::new().dir(w2.path()).args(["stop", "out"]).run();
    assert!(
        stop.stderr
            .contains("found by the run's mark (out of their steps' groups")
            && !stop
                .stderr
                .contains("nothing recorded in the journal is still running"),
        "{}",
        stop.stderr
    );
    assert!(pids_of(&pat).is_empty(), "expr stop left the escaped sleep");
    assert_no_survivors(&w2.out());
}

/// A process that leaves its group and clears its environment (`env -i setsid`: no marker)
/// is adopted by the run, which is its processes' child subreaper, and stopped as its point
/// ends (a server holding its port failed every later point when that waited for the run's
/// end), named, in the journal too; and what the run adopts that ends is reaped as the run
/// goes: a point that leaves twenty short-lived processes over two seconds counts few of them
/// as expr's zombies (twenty, and twenty more each point, when reaped only at a point's end).
#[test]
fn a_process_that_left_its_group_and_cleared_its_environment_is_stopped_as_the_run_ends() {
    let tag = 300 + (std::process::id() % 97) as u64 + 7000;
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  param n 1\n  run \"env -i setsid sleep {tag} </dev/null >/dev/null 2>&1 & for i in $(seq 20); do (true &); sleep 0.1; done; echo $(ps --ppid $PPID -o stat= | grep -c '^Z') >> \\\"$EXPR_RESULT_DIR/zombies.txt\\\"; true {{{{ n }}}}\"\n  sweep n 1 2\n}}\n"
    ));
    let ran = w.run(&[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        pids_of(&format!("^sleep {tag}$")).is_empty(),
        "the environment-less daemon outlived the run"
    );
    for n in 1..=2 {
        assert!(
            ran.stderr.contains(&format!("b_n{n}_r0 left 1 process(es) on `local` outside its process groups and without its marker; stopped: pid ")),
            "{}",
            ran.stderr
        );
    }
    assert!(
        ran.stderr.contains(&format!("`sleep {tag}`")),
        "{}",
        ran.stderr
    );
    let escaped: Vec<_> = journal(&w.out())
        .into_iter()
        .filter(|e| e["event"] == "escaped")
        .collect();
    assert_eq!(escaped.len(), 2, "{escaped:?}");
    assert!(
        escaped
            .iter()
            .all(|e| e["stopped"].as_array().map(Vec::len) == Some(1)),
        "{escaped:?}"
    );
    let zombies = std::fs::read_to_string(w.out().join("zombies.txt")).unwrap();
    let counts: Vec<u32> = zombies.lines().map(|l| l.parse().unwrap()).collect();
    assert!(
        counts.len() == 2 && counts.iter().all(|z| *z <= 12),
        "zombies piled up: {counts:?}"
    );
    assert_no_survivors(&w.out());
}

/// Under `--jobs` where every point takes the host whole (so they run one at a time), what a
/// point left with a cleared environment is stopped before the next point starts, and named as
/// that point's: it was stopped only as the run ended, and the next point met it (a server
/// holding its port failed every later point).
#[test]
fn under_jobs_a_points_environment_less_leftover_is_stopped_before_the_next_point() {
    let tag = 300 + (std::process::id() % 97) as u64 + 7500;
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  param n 1\n  run \"if pgrep -x -f 'sleep {tag}' >/dev/null; then echo an earlier point left it; exit 9; fi; env -i setsid sleep {tag} </dev/null >/dev/null 2>&1 & sleep 0.3; true {{{{ n }}}}\"\n  sweep n 1 2 3\n}}\n"
    ));
    let ran = w.run(&["--jobs", "2"]);
    let left = pids_of(&format!("^sleep {tag}$"));
    for pid in &left {
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(left.is_empty(), "the daemon outlived the run");
    assert!(
        ran.stderr.contains("every point takes `local` whole"),
        "{}",
        ran.stderr
    );
    for n in 1..=3 {
        assert!(
            ran.stderr.contains(&format!("b_n{n}_r0 left 1 process(es) on `local` outside its process groups and without its marker; stopped: pid ")),
            "{}",
            ran.stderr
        );
    }
    assert_no_survivors(&w.out());
}

/// A daemon that one of expr's own helpers starts — git's fsmonitor server, which preflight's
/// `git status` in the checkout starts — becomes the run's child too (it lost its parent), but
/// it is not a step's: it carries expr's environment and no marker, and is neither stopped nor
/// named as one the run left.
#[test]
fn a_daemon_of_expr_own_git_is_not_taken_for_a_step_leftover() {
    let tag = 300 + (std::process::id() % 97) as u64 + 8000;
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  run \"true\"\n}}\n"));
    let p = w.path();
    let hook = p.join("fsmon-hook");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\nsetsid sleep {tag} </dev/null >/dev/null 2>&1 &\nexit 1\n"),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let git = |args: &[&str]| {
        assert!(Command::new("git")
            .args(args)
            .current_dir(p)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success());
    };
    git(&["init", "-q"]);
    git(&["config", "core.fsmonitor", hook.to_str().unwrap()]);
    let ran = w.run(&[]);
    let left = pids_of(&format!("^sleep {tag}$"));
    for pid in &left {
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        !left.is_empty(),
        "the fsmonitor hook never ran (or its daemon was stopped): {}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("without its marker"), "{}", ran.stderr);
}

/// What the run does not take for a step's leftover, and what it does: a child expr already had
/// as it started (a job of the script that `exec`'d it, in a group of its own) is left alone;
/// a step's process that names another result directory than the run's and no marker is a
/// step's, not expr's own (only this run's directory makes a helper's daemon expr's).
#[test]
fn the_run_adopts_neither_a_child_it_had_before_nor_a_stray_naming_another_directory() {
    let tag = 300 + (std::process::id() % 97) as u64 + 9000;
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"env -u EXPR_MARK EXPR_RESULT_DIR=/elsewhere setsid sleep {b} </dev/null >/dev/null 2>&1 & sleep 1.5\"\n}}\n",
        b = tag + 1
    ));
    // and a job of that script that leaves a process to expr while the point runs (its
    // subshell ends): still in the job's group, which the run did not start (helper 65: it
    // was stopped and blamed on the point)
    let ran = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -m; sleep {a} </dev/null >/dev/null 2>&1 & (sleep 0.7; sleep {c} </dev/null >/dev/null 2>&1 &) & exec \"$0\" run e.kdl --output out",
            a = tag,
            c = tag + 2
        ))
        .arg(env!("CARGO_BIN_EXE_expr"))
        .current_dir(w.path())
        .env("EXPR_HISTORY", w.path().join("h.sqlite"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&ran.stderr).to_string();
    let before = pids_of(&format!("^sleep {tag}$"));
    let stray = pids_of(&format!("^sleep {}$", tag + 1));
    let job = pids_of(&format!("^sleep {}$", tag + 2));
    for pid in before.iter().chain(&stray).chain(&job) {
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert_eq!(ran.status.code(), Some(0), "{err}");
    assert!(
        !before.is_empty(),
        "the child expr had before its run was stopped: {err}"
    );
    assert!(
        !job.is_empty() && !err.contains(&format!("sleep {}`", tag + 2)),
        "the script's job's process was stopped: {err}"
    );
    assert!(stray.is_empty(), "the stray outlived the run: {err}");
    assert!(
        err.contains("b_r0 left 1 process(es) on `local` outside its process groups and without its marker; stopped:")
            && err.contains(&format!("sleep {}`", tag + 1))
            && !err.contains(&format!("sleep {tag}`")),
        "{err}"
    );
}

/// Under `--jobs 2` too: what the build left outside its group is stopped after the setup (the
/// pool's run never swept it, even when the run ended ok), and after a kill -9 of expr,
/// `expr stop` finds what the workers' steps left (each worker marked its processes with a mark
/// of its own that the journal never named).
#[test]
fn under_jobs_escaped_processes_of_the_build_and_of_points_are_stopped() {
    let tag = 700 + (std::process::id() % 97) as u64;
    let pool = "experiment t\nhost a ssh=\"local\" ip=\"127.0.0.1\" repo=\"REPO\"\nhost b ssh=\"local\" ip=\"127.0.0.2\" repo=\"REPO\"\npool workers \"a\" \"b\"\n";
    let w = Work::new(&format!(
        "{pool}bench b {{\n  param n 1\n  build \"(setsid sleep {a} > /dev/null 2>&1 < /dev/null &) ; until pgrep -f '^sleep {a}$' > /dev/null; do sleep 0.01; done; echo built\" host=workers\n  run \"true {{{{ n }}}}\" host=workers\n  sweep n 1 2\n}}\n",
        a = tag + 1000
    ));
    let ran = w.run(&["--jobs", "2"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let pat = format!("^sleep {}$", tag + 1000);
    assert!(
        pids_of(&pat).is_empty(),
        "the build's escaped sleep outlived the run"
    );
    assert!(
        ran.stderr.contains("the build and tests left"),
        "{}",
        ran.stderr
    );

    let w2 = Work::new(&format!(
        "{pool}bench b {{\n  param n 1\n  run \"(setsid sleep {p} > /dev/null 2>&1 < /dev/null &) ; sleep 30 ; true {{{{ n }}}}\" host=workers\n  sweep n 1 2\n}}\n",
        p = tag + 2000
    ));
    let mut run = w2.spawn(&["--jobs", "2"]);
    let pat = format!("^sleep {}$", tag + 2000);
    let end = Instant::now() + Duration::from_secs(20);
    while pids_of(&pat).len() < 2 {
        assert!(Instant::now() < end, "the two points never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    let stop = Test::new().dir(w2.path()).args(["stop", "out"]).run();
    assert!(
        stop.stderr.contains("found by the run's mark"),
        "{}",
        stop.stderr
    );
    assert!(
        pids_of(&pat).is_empty(),
        "expr stop left a worker's escaped sleep"
    );
    assert_no_survivors(&w2.out());
}

/// On an ssh host (real sshd on loopback) a `setsid` daemon a step left is found by the mark the
/// wrapper exports, stopped at the point's end, and named.
#[test]
fn real_sshd_a_process_that_left_its_group_on_a_remote_host_is_stopped() {
    let Some(sshd) = Sshd::start() else { return };
    let tag = 300 + (std::process::id() % 97) as u64 + 6000;
    let kdl = format!(
        "{PRELUDE}host far ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\"\nbench b {{\n  run \"setsid sleep {tag} > /dev/null 2>&1 < /dev/null & sleep 0.5\" host=far\n}}\n",
        sp = sshd.port
    );
    let w = Work::new(&kdl);
    let ran = Test::new()
        .dir(w.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("outside its process groups; stopped:")
            && ran.stderr.contains(&format!("sleep {tag}")),
        "{}",
        ran.stderr
    );
    assert!(
        pids_of(&format!("^sleep {tag}$")).is_empty(),
        "the daemon outlived the run"
    );
}

/// A step command that leaves, outside its group, a loop forking a new escaped `sleep TAG`
/// every few milliseconds: one look at the processes, then a TERM, let those forked in
/// between live on.
fn fork_loop(tag: u64) -> String {
    format!(
        "setsid sh -c 'while :; do setsid sleep {tag} </dev/null >/dev/null 2>&1 & sleep 0.002; done' </dev/null >/dev/null 2>&1 & sleep 0.5"
    )
}

/// Kills what a failed check left behind (the loop and its sleeps).
struct Reap(String);

impl Drop for Reap {
    fn drop(&mut self) {
        for pat in [
            format!("while :; do setsid sleep {}", self.0),
            format!("^sleep {}$", self.0),
        ] {
            let _ = Command::new("pkill").args(["-KILL", "-f", &pat]).status();
        }
    }
}

/// The run ended ok, said what it stopped outside the step's groups, and left nothing of the
/// loop tagged `tag`.
fn assert_swept(ran: &common::Ran, tag: u64) {
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("outside its process groups; stopped:"),
        "{}",
        ran.stderr
    );
    std::thread::sleep(Duration::from_millis(300));
    let left = fork_loop_left(tag);
    assert!(left.is_empty(), "outlived the run: {left:?}");
}

fn fork_loop_left(tag: u64) -> Vec<i32> {
    let mut pids = pids_of(&format!("^sleep {tag}$"));
    pids.extend(pids_of(&format!("while :; do setsid sleep {tag} ")));
    pids
}

/// A process that keeps forking escaped children is stopped with every child it forked while
/// the sweep looked and signalled (they are held still, then looked for again), here and by
/// `expr stop`.
#[test]
fn an_escaped_process_that_keeps_forking_leaves_nothing_behind() {
    let tag = 300 + (std::process::id() % 97) as u64 + 9000;
    let _reap = Reap(tag.to_string());
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"{}\"\n}}\n",
        fork_loop(tag).replace('"', "\\\"")
    ));
    let ran = w.run(&[]);
    assert_swept(&ran, tag);
}

/// The same on an ssh host (real sshd on loopback): the agent's sweep at the point's end, and
/// after a kill -9 of expr, `expr stop`'s script.
#[test]
fn real_sshd_an_escaped_process_that_keeps_forking_leaves_nothing_behind() {
    let Some(sshd) = Sshd::start() else { return };
    let tag = 300 + (std::process::id() % 97) as u64 + 10000;
    let _reap = Reap(tag.to_string());
    let host = format!(
        "experiment t\nhost far ssh=\"exprtest\" ssh-port={} ip=\"127.0.0.1\" repo=\"REPO\"\n",
        sshd.port
    );
    let w = Work::new(&format!(
        "{host}bench b {{\n  run \"{}\" host=far\n}}\n",
        fork_loop(tag).replace('"', "\\\"")
    ));
    let ran = Test::new()
        .dir(w.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_swept(&ran, tag);

    let tag2 = tag + 100;
    let _reap2 = Reap(tag2.to_string());
    let w2 = Work::new(&format!(
        "{host}bench b {{\n  run \"{} ; sleep 30\" host=far\n}}\n",
        fork_loop(tag2).replace('"', "\\\"")
    ));
    let mut run = Command::new(env!("CARGO_BIN_EXE_expr"))
        // killed below: its processes are left for `expr stop`, not its sentinel
        .env("EXPR_NO_SENTINEL", "1")
        .args(["run", "e.kdl", "--output", "out"])
        .env("EXPR_SSH_CONFIG", &sshd.config)
        .current_dir(w2.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while pids_of(&format!("^sleep {tag2}$")).len() < 5 {
        assert!(Instant::now() < end, "the loop never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    let stop = Test::new()
        .dir(w2.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["stop", "out"])
        .run();
    assert!(
        stop.stderr.contains("found by the run's mark"),
        "{}",
        stop.stderr
    );
    std::thread::sleep(Duration::from_millis(300));
    let left = fork_loop_left(tag2);
    assert!(left.is_empty(), "expr stop left: {left:?}");
}

/// Pids wrap around (32768 by default; a build forks thousands): an escaped process whose pid
/// is below its step's is still stopped at the point's end (the sweep bounds its look by start
/// time, not by pid). The step makes the wrap itself, through ns_last_pid (root).
#[test]
fn an_escaped_process_with_a_pid_below_its_steps_is_stopped() {
    let tag = 300 + (std::process::id() % 97) as u64 + 11000;
    let _reap = Reap(tag.to_string());
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"echo 300 > /proc/sys/kernel/ns_last_pid; setsid sleep {tag} </dev/null >/dev/null 2>&1 & echo $$ ; sleep 0.5\"\n}}\n"
    ));
    let ran = w.run(&[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains(&format!("sleep {tag}`")),
        "the sweep did not name it: {}",
        ran.stderr
    );
    let left = pids_of(&format!("^sleep {tag}$"));
    assert!(left.is_empty(), "outlived the run: {left:?}");
}

/// Without the agent (`EXPR_SSH_AGENT=0`) a remote step runs under a wrapper whose first line
/// (`EXPR_PGID=… EXPR_START=…`) names its process group: that line is expr's, not the step's,
/// and no collector reads its numbers (a regex `=([0-9]+)` took the mean of the pgid, the start
/// time and the step's 42).
#[test]
fn real_sshd_without_the_agent_the_wrappers_line_is_not_the_steps_output() {
    let Some(sshd) = Sshd::start() else { return };
    let kdl = format!(
        "{PRELUDE}host far ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\"\nbench b {{\n  run \"echo value=42\" host=far\n  collect \"regex\" pattern=\"=([0-9]+)\"\n}}\n",
        sp = sshd.port
    );
    let w = Work::new(&kdl);
    let ran = Test::new()
        .dir(w.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .env("EXPR_SSH_AGENT", "0")
        .args(["run", "e.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let point = journal(&w.out())
        .into_iter()
        .find(|e| e["event"] == "point")
        .unwrap();
    assert_eq!(point["value"].as_f64(), Some(42.0), "{point}");
    let log = std::fs::read_to_string(w.out().join("logs/run1-b_r0-far.log")).unwrap();
    assert!(!log.contains("EXPR_PGID"), "{log:?}");
    assert!(log.ends_with("value=42\n"), "{log:?}");
}

/// A daemon whose TERM handler starts its next generation (up to 12) outlived the sweep's five
/// rounds of TERM; what is still found after them is KILLed, which no handler sees.
#[test]
fn an_escaped_daemon_that_respawns_on_term_leaves_nothing_behind() {
    let tag = 300 + (std::process::id() % 97) as u64 + 12000;
    let _reap = Reap(format!("{tag}"));
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"setsid bash gen-{tag}.sh 0 </dev/null >/dev/null 2>&1 & sleep 0.5\"\n}}\n"
    ));
    std::fs::write(
        w.path().join(format!("gen-{tag}.sh")),
        format!(
            "n=${{1:-0}}\n[ \"$n\" -ge 12 ] && exec sleep {tag}\ntrap \"setsid bash $0 $((n + 1)) </dev/null >/dev/null 2>&1 & sleep 0.15; exit 0\" TERM\nwhile :; do sleep 0.05; done\n"
        ),
    )
    .unwrap();
    let ran = w.run(&[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    std::thread::sleep(Duration::from_millis(500));
    let mut left = pids_of(&format!("gen-{tag}.sh"));
    left.extend(pids_of(&format!("^sleep {tag}$")));
    let _ = Command::new("pkill")
        .args(["-KILL", "-f", &format!("gen-{tag}.sh")])
        .status();
    assert!(left.is_empty(), "outlived the run: {left:?}");
}

/// A small tmpfs of the test's own (root): a full disk made on purpose.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn new(size: &str) -> Option<Tmpfs> {
        let d = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(d.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            common::skip("cannot mount a tmpfs (needs root)");
            return None;
        }
        Some(Tmpfs(d))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// A full disk: the failing point names ENOSPC, the run does not call its directory complete
/// (exit 1), no temporary report file is left, and after space is freed `--resume` starts on
/// a line of its own, so every journal line reads.
#[test]
fn a_full_disk_is_named_and_resume_after_it_repairs_the_journal() {
    let Some(fs) = Tmpfs::new("1m") else { return };
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"head -c {{{{ mb }}}}000000 /dev/zero > {{{{ outdir }}}}/big && echo v=1\"\n  sweep mb 2 0\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    let out = fs.0.path().join("out");
    let ran = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--output"])
        .arg_path(&out)
        .run();
    assert_ne!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("no space left on device")
            || ran.stderr.contains("No space left on device"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("is complete"), "{}", ran.stderr);
    // free the space; the journal may end in a torn line: resume ends it first
    let _ = std::fs::remove_file(out.join("outputs/b_mb2_r0/big"));
    let mut j = std::fs::OpenOptions::new()
        .append(true)
        .open(out.join("journal.jsonl"))
        .unwrap();
    use std::io::Write;
    j.write_all(b"{\"event\":\"step\",\"torn").unwrap();
    drop(j);
    let again = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--only", "mb=0", "--resume"])
        .arg_path(&out)
        .run();
    let text = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_err())
        .collect();
    assert_eq!(
        bad.len(),
        1,
        "only the torn line is not an event: {bad:?}\n{}",
        again.stderr
    );
    assert!(
        again
            .stderr
            .contains("is not an event and was skipped (a torn")
            || again.stderr.contains("is not an event and was skipped"),
        "{}",
        again.stderr
    );
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `--resume DIR --only KEY=…` replaces the run's selection of that key and keeps its others:
/// after `--only lane=fast --only n=1`, `--resume --only lane=slow` runs the slow lane at n=1
/// (it ran n=2 too, which the run's selection left out, without a word) (helper 63).
#[test]
fn resume_with_only_replaces_the_keys_it_names_and_keeps_the_rest() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  param m \"f\"\n  sweep n 1 2\n  lane fast m=\"f\"\n  lane slow m=\"s\"\n  run \"echo v={{{{ n }}}}{{{{ m }}}}\"\n}}\n"
    ));
    let first = Test::new()
        .dir(w.path())
        .args([
            "run",
            "e.kdl",
            "--only",
            "lane=fast",
            "--only",
            "n=1",
            "--output",
            "out",
        ])
        .run();
    assert_eq!(first.status, 0, "{}", first.stderr);
    // a plain resume between keeps the selection (it wrote a header without it, and the next
    // resume forgot it: helper 64)
    let plain = Test::new()
        .dir(w.path())
        .args(["run", "--resume", "out"])
        .run();
    assert_eq!(plain.status, 0, "{}", plain.stderr);
    let again = Test::new()
        .dir(w.path())
        .args(["run", "--resume", "out", "--only", "lane=slow"])
        .run();
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("expr: resuming with the run's --only, as given now for the keys it names: --only n=1 --only lane=slow"),
        "{}",
        again.stderr
    );
    let mut ids: Vec<String> = manifest(&w.out())
        .iter()
        .map(|r| r[0].to_string())
        .collect();
    ids.sort();
    assert_eq!(ids, ["fast_n1_r0", "slow_n1_r0"], "{}", again.stderr);
}

/// `--resume` continues the run as it was: the points its `--only` chose (it ran all of
/// them), its start time (the history's `started` became the resume time), and one spelling of
/// the directory in manifest.csv (absolute and relative paths were mixed).
#[test]
fn resume_keeps_the_runs_selection_start_and_path_spelling() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  sweep d 1 2 3\n  run \"test {{{{ d }}}} != 2 && echo v={{{{ d }}}}\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    let abs = w.out();
    let first = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--only", "d=2", "--output"])
        .arg_path(&abs)
        .run();
    assert_eq!(first.status, 3, "{}", first.stderr);
    std::thread::sleep(Duration::from_millis(1100));
    let again = Test::new()
        .dir(w.path())
        .args(["run", "--resume", "out"])
        .run();
    assert!(
        again
            .stderr
            .contains("resume: 1 of 3 points, as the run chose them"),
        "{}",
        again.stderr
    );
    // counted in the resumed plan: `[1/1]` (it said `[2/1]`, its place in the whole matrix)
    assert!(
        again.stderr.contains("[1/1] b_d2_r0 starts"),
        "{}",
        again.stderr
    );
    let rows = manifest(&w.out());
    let ids: Vec<&str> = rows.iter().map(|r| &r[0]).collect();
    assert_eq!(ids, ["b_d2_r0"], "b_d1_r0 and b_d3_r0 were not asked for");
    // one spelling, the run's own (it named the directory by its absolute path)
    let logs = format!("{}/logs/", abs.display());
    assert!(
        rows.iter().all(|r| r[12].starts_with(&logs)),
        "{:?}",
        rows.iter().map(|r| r[12].to_string()).collect::<Vec<_>>()
    );
    let starts: Vec<String> = journal(&w.out())
        .iter()
        .filter(|e| e["event"] == "header")
        .map(|e| e["started"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[0], starts[1], "the resumed run keeps its start");
}

/// `--verbose` streams a large log once, line by line, every line exactly once (it read the
/// whole log again at every look: 300 MB took 12 s).
#[test]
fn verbose_streams_a_large_log_once_with_every_line_once() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run #\"python3 -c \"import sys; [sys.stdout.write('line %07d %s\\n' % (i, 'x' * 80)) for i in range(250000)]\"\"#\n}}\n"
    ));
    let ran = w.run(&["--verbose"]);
    assert_eq!(
        ran.status,
        0,
        "{}",
        ran.stderr.chars().take(2000).collect::<String>()
    );
    let seen: Vec<&str> = ran
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("[local/run1-b_r0] line "))
        .collect();
    assert_eq!(seen.len(), 250000);
    for (i, l) in seen.iter().enumerate() {
        assert!(l.starts_with(&format!("{i:07} ")), "line {i}: {l}");
    }
}

/// A failed or timed-out run step says why: its log's last lines, and "timed out after N s"
/// (it gave the command and the log path only, and `timeout (exit -1)`).
#[test]
fn a_failed_or_timed_out_step_shows_its_log_tail() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"echo starting; echo 'boom: bad config' >&2; exit 3\"\n}}\nbench c {{\n  run \"echo waiting for peers; sleep 5\" timeout=1\n}}\n"
    ));
    let ran = w.run(&[]).status(3);
    assert!(
        ran.stderr.contains("failed (exit 3)") && ran.stderr.contains("\nboom: bad config\n"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("timed out after 1 s and was stopped")
            && ran.stderr.contains("\nwaiting for peers\n")
            && !ran.stderr.contains("exit -1"),
        "{}",
        ran.stderr
    );
}

/// `--force` into a result directory starts it afresh: manifest, summary.md, summary.json and
/// the journal describe the new run only (summary and JSON still listed the old points, and
/// the journal had two headers).
#[test]
fn force_starts_the_directory_afresh() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  sweep d 1 2 3 4\n  run \"echo v={{{{ d }}}}\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    w.run(&[]).status(0);
    std::fs::write(w.out().join("my-notes.txt"), "mine").unwrap();
    w.run(&["--force", "--only", "d=2"]).status(0);
    let out = w.out();
    let rows = manifest(&out);
    assert_eq!(
        rows.iter().map(|r| r[0].to_string()).collect::<Vec<_>>(),
        ["b_d2_r0"]
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        !summary.contains("d=1") && !summary.contains("b_d1_r0"),
        "{summary}"
    );
    let json = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(
        !json.contains("b_d1_r0") && json.contains("b_d2_r0"),
        "{json}"
    );
    let headers = journal(&out)
        .iter()
        .filter(|e| e["event"] == "header")
        .count();
    assert_eq!(headers, 1);
    assert!(!out.join("logs/run1-b_d1_r0-local.log").exists());
    assert_eq!(
        std::fs::read_to_string(out.join("my-notes.txt")).unwrap(),
        "mine",
        "not expr's: kept"
    );
}

/// `--force` replaces the earlier results once something runs: a run whose preflight fails
/// (a port taken) puts them back as they were, and names where they are; the next `--force`
/// that runs replaces them, and nothing is left set aside.
#[test]
fn force_keeps_the_earlier_results_when_preflight_fails() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  serve s \"python3 -m http.server {port} --bind 127.0.0.1\" port={port}\n  run \"echo v=7\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    w.run(&[]).status(0);
    let out = w.out();
    let before: Vec<(String, Vec<u8>)> = [
        "journal.jsonl",
        "manifest.csv",
        "summary.md",
        "logs/run1-b_r0-local.log",
    ]
    .iter()
    .map(|f| (f.to_string(), std::fs::read(out.join(f)).unwrap()))
    .collect();
    let held = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let failed = w
        .run(&["--force"])
        .status(expr::util::exit_codes::PREFLIGHT);
    assert!(
        failed.stderr.contains("preflight failed: nothing ran; the earlier results in out are as they were (--force replaces them once something runs)"),
        "{}",
        failed.stderr
    );
    for (f, bytes) in &before {
        assert_eq!(
            &std::fs::read(out.join(f)).unwrap(),
            bytes,
            "{f} is not as it was"
        );
    }
    assert!(!out.join(".expr-forced").exists());
    assert!(!out.join("commands.sh").exists() || before.iter().all(|(f, _)| f != "commands.sh"));
    w.report(0);
    // a `--force` run killed (kill -9) during its preflight: the earlier results set aside and
    // an empty journal of its own; `expr report` (or the next run) puts them back
    std::fs::create_dir(out.join(".expr-forced")).unwrap();
    for f in ["journal.jsonl", "manifest.csv", "summary.md", "logs"] {
        std::fs::rename(out.join(f), out.join(".expr-forced").join(f)).unwrap();
    }
    std::fs::write(out.join("journal.jsonl"), "").unwrap();
    let back = w.report(0);
    assert!(
        back.stderr.contains("expr: a `--force` run into out was stopped before it measured anything: the results it had set aside are back"),
        "{}",
        back.stderr
    );
    for (f, bytes) in &before {
        if f != "summary.md" {
            assert_eq!(&std::fs::read(out.join(f)).unwrap(), bytes, "{f} is back");
        }
    }
    assert!(!out.join(".expr-forced").exists());
    drop(held);
    w.run(&["--force"]).status(0);
    assert!(!out.join(".expr-forced").exists(), "set aside for good");
    let headers = journal(&out)
        .iter()
        .filter(|e| e["event"] == "header")
        .count();
    assert_eq!(headers, 1, "the new run's journal only");
}

/// A journal holding a line too long to be an event (300 MB) is read past it: the line is named
/// and skipped, the later events count, and `--resume` skips the points that were ok (it
/// re-ran them all: events after 256 MiB were not read).
#[test]
fn a_huge_line_in_the_journal_costs_that_line_only() {
    let w = ran_sweep("1 2");
    let path = w.out().join("journal.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let (first, rest) = text.split_at(text.find('\n').unwrap() + 1);
    let mut f = std::fs::File::create(&path).unwrap();
    use std::io::Write;
    f.write_all(first.as_bytes()).unwrap();
    let block = vec![b'x'; 1 << 20];
    for _ in 0..20 {
        f.write_all(&block).unwrap();
    }
    f.write_all(b"\n").unwrap();
    f.write_all(rest.as_bytes()).unwrap();
    drop(f);
    let r = w.report(0);
    assert!(
        r.stderr.contains(
            "journal.jsonl:2 is not an event and was skipped (a line longer than 16 MiB, not read)"
        ),
        "{}",
        r.stderr
    );
    let again = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--resume", "out"])
        .run()
        .status(0);
    assert!(
        again
            .stderr
            .contains("resume: 2 points kept (succeeded before with the same command and code)"),
        "{}",
        again.stderr
    );
}

/// A point event whose status expr never writes (`okay`), or a line with a byte that is not
/// UTF-8, is said with its line and skipped: the manifest's `ok` stays (the report rewrote it to
/// `okay`, a failure, and read `o\u{fffd}k` without a word).
#[test]
fn a_journal_line_with_an_unknown_status_or_a_non_utf8_byte_is_skipped_and_said() {
    let w = ran_sweep("1 2");
    let path = w.out().join("journal.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let point = |id: &str| {
        lines
            .iter()
            .position(|l| {
                l.contains(r#""event":"point""#) && l.contains(&format!(r#""run_id":"{id}""#))
            })
            .unwrap()
    };
    let (a, b) = (point("b_d1_r0"), point("b_d2_r0"));
    let mut bytes = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if i == a {
            bytes.extend(
                l.replace(r#""status":"ok""#, r#""status":"okay""#)
                    .as_bytes(),
            );
        } else if i == b {
            bytes.extend(
                l.replace(r#""status":"ok""#, "\"status\":\"o\u{1}k\"")
                    .as_bytes(),
            );
        } else {
            bytes.extend(l.as_bytes());
        }
        bytes.push(b'\n');
    }
    // the second point's status holds the byte 0xFF, not UTF-8
    let mark = bytes.iter().position(|c| *c == 1).unwrap();
    bytes[mark] = 0xff;
    std::fs::write(&path, bytes).unwrap();
    let r = w.report(0);
    assert!(
        r.stderr.contains(&format!(
            "journal.jsonl:{} is not an event and was skipped (the status `okay` is none of ok, no-data, failed, interrupted, missing, skipped)",
            a + 1
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "journal.jsonl:{} is not an event and was skipped (a byte that is not UTF-8 at column",
            b + 1
        )),
        "{}",
        r.stderr
    );
    let manifest = std::fs::read_to_string(w.out().join("manifest.csv")).unwrap();
    for id in ["b_d1_r0", "b_d2_r0"] {
        let row = manifest
            .lines()
            .find(|l| l.starts_with(&format!("{id},")))
            .unwrap();
        assert!(row.contains(",ok,"), "{row}");
    }
    assert!(
        !manifest.contains("okay") && !manifest.contains('\u{fffd}'),
        "{manifest}"
    );
}

/// `expr stop` on a result directory moved after its run was killed: the processes that name
/// the old path are this directory's (no live run holds that path), so they are stopped (it
/// left them alone as another run's and exited 0).
#[test]
fn expr_stop_on_a_moved_directory_stops_its_killed_runs_processes() {
    let tag = 300 + (std::process::id() % 97) as u64 + 7000;
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"setsid sleep {tag} > /dev/null 2>&1 < /dev/null & sleep 30\"\n}}\n"
    ));
    let mut run = w.spawn(&[]);
    let pat = format!("^sleep {tag}$");
    let end = Instant::now() + Duration::from_secs(20);
    while pids_of(&pat).is_empty() || pids_of("^sleep 30$").is_empty() {
        assert!(Instant::now() < end, "the step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    std::fs::rename(w.out(), w.path().join("moved")).unwrap();
    let stop = Test::new().dir(w.path()).args(["stop", "moved"]).run();
    assert!(!stop.stderr.contains("left alone"), "{}", stop.stderr);
    assert!(
        pids_of(&pat).is_empty(),
        "the escaped sleep lives: {}",
        stop.stderr
    );
    assert_no_survivors(&w.path().join("moved"));
}

/// `--resume DIR FILE` with an edited FILE needs `--force` (it ran without), and then the
/// changed points run again while the live count of a lane stays within its repeats (it read
/// `n=6` of 5: the old values counted with the new ones).
#[test]
fn resume_with_an_edited_file_needs_force_and_counts_only_kept_values() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"sleep 0.01\"\n  repeat 3\n}}\n"
    ));
    w.run(&[]).status(0);
    std::fs::write(
        w.path().join("e.kdl"),
        std::fs::read_to_string(w.path().join("e.kdl"))
            .unwrap()
            .replace("sleep 0.01", "sleep 0.02"),
    )
    .unwrap();
    let resume = |extra: &[&str]| {
        Test::new()
            .dir(w.path())
            .args(["run", "e.kdl", "--resume", "out"])
            .args(extra)
            .run()
    };
    let refused = resume(&[]);
    assert_eq!(refused.status, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("is not the experiment the run in out ran")
            && refused.stderr.contains("+     run \"sleep 0.02\"")
            && refused.stderr.contains("pass --force"),
        "{}",
        refused.stderr
    );
    let forced = resume(&["--force"]).status(0);
    assert!(
        forced.stderr.contains("run again (its command or point"),
        "{}",
        forced.stderr
    );
    assert!(
        forced.stderr.contains("(n=3)") && !forced.stderr.contains("(n=4)"),
        "{}",
        forced.stderr
    );
}

/// A manifest cut short (its last write failed on a full disk, or expr was killed) gets its
/// points back from the journal when the report is made again (it stayed at 1 row).
#[test]
fn expr_report_restores_the_manifest_rows_the_journal_recorded() {
    let w = ran_sweep("1 2 3");
    let path = w.out().join("manifest.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let cut: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&path, cut.join("\n") + "\n").unwrap();
    let r = w.report(0);
    assert!(
        r.stderr
            .contains("manifest.csv lacked 2 point(s) the journal recorded; rewritten"),
        "{}",
        r.stderr
    );
    let rows = manifest(&w.out());
    assert_eq!(
        rows.iter()
            .map(|r| (r[0].to_string(), r[13].to_string()))
            .collect::<Vec<_>>(),
        [
            ("b_d1_r0".to_string(), "ok".to_string()),
            ("b_d2_r0".into(), "ok".into()),
            ("b_d3_r0".into(), "ok".into())
        ]
    );
    // absolute: the log's path reads the same from anywhere (`out/logs/…` named it as seen
    // from where `expr report` ran)
    assert_eq!(
        rows[2][12],
        std::path::absolute(w.out())
            .unwrap()
            .join("logs/run1-b_d3_r0-local.log")
            .display()
            .to_string(),
        "{:?}",
        rows[2]
    );
}

/// A manifest line with an unclosed quote reads the lines after it into one field, a row for
/// a point `garbage`: the report says so and leaves it out, and the journal's points come back
/// (the "repair" kept the row and the swallowed lines stayed lost).
#[test]
fn a_manifest_row_that_names_no_point_is_said_and_left_out() {
    let w = ran_sweep("1 2 3");
    let path = w.out().join("manifest.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[1] = "garbage,\"unterminated".into();
    // a quote further down closes the field, as a reason's would, and the fields after it
    // make up the header's count: a row CSV reads
    let n = lines[0].split(',').count();
    lines.push(format!("\"{}", ",0".repeat(n - 2)));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let r = w.report(0);
    assert!(
        r.stderr.contains("warning: manifest.csv has a row for `garbage`, which is no point of the experiment (a damaged line?): left out"),
        "{}",
        r.stderr
    );
    let rows = manifest(&w.out());
    assert_eq!(
        rows.iter().map(|r| r[0].to_string()).collect::<Vec<_>>(),
        ["b_d1_r0", "b_d2_r0", "b_d3_r0"]
    );
}

/// A journal cut after a point's log was written: the headline is read from the log again, but
/// the timing only the journal held (`wall_ms`, …) is gone: said, and the reports that hold it
/// are kept (metrics.csv lost those rows and nothing was kept).
#[test]
fn a_cut_journal_that_loses_timing_keeps_the_earlier_reports() {
    let w = ran_sweep("1 2");
    let path = w.out().join("journal.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let keep: Vec<&str> = text
        .lines()
        .filter(|l| !(l.contains(r#""event":"point""#) && l.contains(r#""run_id":"b_d2_r0""#)))
        .collect();
    assert_eq!(keep.len() + 1, text.lines().count());
    std::fs::write(&path, keep.join("\n") + "\n").unwrap();
    let r = w.report(0);
    assert!(
        r.stderr.contains(
            "warning: b_d2_r0: the report before this one has `wall_ms`, `user_ms`, `sys_ms`"
        ) && r.stderr.contains(
            "the reports before this one, which hold them, are kept in out/runtime/earlier-report-"
        ),
        "{}",
        r.stderr
    );
    let kept = common::entries_starting(&w.out().join("runtime"), "earlier-report-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    let before = std::fs::read_to_string(kept[0].join("metrics.csv")).unwrap();
    let now = std::fs::read_to_string(w.out().join("metrics.csv")).unwrap();
    let walls = |t: &str| {
        t.lines()
            .filter(|l| l.contains("b_d2_r0") && l.contains("wall_ms"))
            .count()
    };
    assert_eq!((walls(&before), walls(&now)), (1, 0), "{before}\n{now}");
}

/// A journal line damaged since the run is said by `compare`, `history --import` and `stop` too, as
/// `report` and `ls` say it (they read past it without a word).
#[test]
fn compare_history_import_and_stop_say_a_skipped_journal_line() {
    let w = ran_sweep("1 2");
    let path = w.out().join("journal.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.insert(2, "garbage {".into());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let said =
        "journal.jsonl:3 is not an event and was skipped (expected value at line 1 column 1)";
    let db = w.path().join("h.sqlite").display().to_string();
    for args in [["compare", "out", "out"], ["history", "--import", "out"]] {
        let r = Test::new()
            .dir(w.path())
            .env("EXPR_HISTORY", &db)
            .args(args)
            .run()
            .status(0);
        let want = format!("warning: out: {said}");
        assert!(r.stderr.contains(&want), "{args:?}: {}", r.stderr);
    }
    // and `expr stop`: it does not claim that nothing the journal recorded still runs
    let s = Test::new()
        .dir(w.path())
        .args(["stop", "out"])
        .run()
        .status(0);
    assert!(
        s.stderr.contains(
            "warning: out: 1 line(s) of journal.jsonl are no event and were not read (line 3:"
        ) && s
            .stderr
            .contains("nothing that the journal's readable lines record is still running"),
        "{}",
        s.stderr
    );
}

/// A CI file named inside the result directory (`--junit out/journal.jsonl` replaced the
/// journal and lost the run; a linked path or `..` reaches the same file) or in a folder that
/// does not exist is refused before anything runs; `compare --junit` inside A or B too.
#[test]
fn ci_files_inside_the_result_directory_or_nowhere_are_refused_first() {
    let w = ran_sweep("1");
    std::os::unix::fs::symlink(w.path(), w.path().join("lnk")).unwrap();
    std::fs::create_dir(w.path().join("sub")).unwrap();
    for (flag, file, says) in [
        (
            "--junit",
            "out/journal.jsonl",
            "inside the result directory out",
        ),
        (
            "--junit",
            "lnk/out/journal.jsonl",
            "inside the result directory out",
        ),
        (
            "--summary-md",
            "sub/../out/manifest.csv",
            "inside the result directory out",
        ),
        ("--junit", "nodir/j.xml", "nodir does not exist"),
    ] {
        let r = w.run(&["--force", flag, file]).status(2);
        assert!(r.stderr.contains(says), "{flag} {file}: {}", r.stderr);
    }
    // the run is intact
    w.report(0);
    let c = Test::new()
        .dir(w.path())
        .args(["compare", "out", "out", "--junit", "out/j.xml"])
        .run()
        .status(2);
    assert!(
        c.stderr.contains("inside the result directory out"),
        "{}",
        c.stderr
    );
}

/// `expr stop` on a copy of a live run's directory leaves that run's escaped processes to it
/// (they carry its mark, and the run that made the mark still runs).
#[test]
fn expr_stop_on_a_copy_of_a_live_run_leaves_its_processes_alone() {
    let tag = 300 + (std::process::id() % 97) as u64 + 8000;
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"setsid sleep {tag} > /dev/null 2>&1 < /dev/null & sleep 30\"\n}}\n"
    ));
    let mut run = w.spawn(&[]);
    let pat = format!("^sleep {tag}$");
    let end = Instant::now() + Duration::from_secs(20);
    while pids_of(&pat).is_empty() {
        assert!(Instant::now() < end, "the step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(Command::new("cp")
        .arg("-a")
        .arg(w.out())
        .arg(w.path().join("copy"))
        .status()
        .unwrap()
        .success());
    let _ = std::fs::remove_file(w.path().join("copy/.expr-lock"));
    let stop = Test::new().dir(w.path()).args(["stop", "copy"]).run();
    assert!(
        !pids_of(&pat).is_empty(),
        "a live run's daemon was stopped: {}",
        stop.stderr
    );
    assert!(stop.stderr.contains("is alive"), "{}", stop.stderr);
    // the run itself, interrupted, stops what it started
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let _ = run.wait();
    let end = Instant::now() + Duration::from_secs(20);
    while !pids_of(&pat).is_empty() {
        assert!(Instant::now() < end, "the run left its daemon");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `expr stop` on a copy of a live run's directory leaves that run's remote process groups to
/// it too: a remote group says whose it is by the run's mark alone, which the copy shares, and
/// the copy stopped the live run's server and client (helper 65).
#[test]
fn real_sshd_expr_stop_on_a_copy_of_a_live_run_leaves_its_remote_groups_alone() {
    let Some(sshd) = Sshd::start() else { return };
    let tag = 300 + (std::process::id() % 97) as u64 + 8500;
    let kdl = format!(
        "{PRELUDE}host far ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\"\nbench b {{\n  run \"sleep {tag}\" host=far\n}}\n",
        sp = sshd.port
    );
    let w = Work::new(&kdl);
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
        .current_dir(w.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .env("EXPR_HISTORY", w.path().join("h.sqlite"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    w.wait_process("run1");
    let pat = format!("^sleep {tag}$");
    let end = Instant::now() + Duration::from_secs(20);
    while pids_of(&pat).is_empty() {
        assert!(Instant::now() < end, "the step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(Command::new("cp")
        .arg("-a")
        .arg(w.out())
        .arg(w.path().join("copy"))
        .status()
        .unwrap()
        .success());
    let _ = std::fs::remove_file(w.path().join("copy/.expr-lock"));
    let stop = Test::new()
        .dir(w.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["stop", "copy"])
        .run();
    let alive = !pids_of(&pat).is_empty();
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let _ = child.wait();
    assert!(
        alive,
        "the live run's remote step was stopped: {}",
        stop.stderr
    );
    assert!(
        stop.stderr.contains("belongs to the run in")
            && stop.stderr.contains("which is running: left alone"),
        "{}",
        stop.stderr
    );
    let end = Instant::now() + Duration::from_secs(20);
    while !pids_of(&pat).is_empty() {
        assert!(Instant::now() < end, "the run left its remote step");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A step that leaves a process in its group (`sleep … & true`) has it stopped at teardown:
/// TERM, then the group waited for — not a survivor, not an escaped process, however soon
/// after the KILL or TERM the group is looked at.
#[test]
fn what_a_step_leaves_in_its_group_is_stopped_and_not_called_a_survivor() {
    // (the experiment's body, the note the run must say, the processes it left)
    let cases = [
        (
            "  run \"sleep 100.25 & true\"\n  repeat 8\n",
            None,
            "^sleep 100.25$",
        ),
        // a build that leaves a process in its group: stopped when it ends, by its group (it
        // was called a survivor, and stopped later as "outside its process groups")
        (
            "  build \"sh -c 'sleep 100.35 & sleep 100.36' & true\"\n  run \"true\"\n",
            Some("note: build `build1` on `local` ended and left processes in its group: stopped"),
            "^sleep 100.3[56]$",
        ),
    ];
    for (body, note, left) in cases {
        let w = Work::new(&format!("{PRELUDE}bench b {{\n{body}}}\n"));
        let o = w.run(&[]);
        assert_eq!(o.status, 0, "{}", o.stderr);
        assert!(
            note.is_none_or(|n| o.stderr.contains(n))
                && !o.stderr.contains("still alive after teardown")
                && !o.stderr.contains("outside its process groups"),
            "{}",
            o.stderr
        );
        let end = journal(&w.out())
            .into_iter()
            .find(|e| e["event"] == "end")
            .unwrap();
        assert_eq!(end["survivors"], serde_json::json!([]), "{end}");
        assert!(pids_of(left).is_empty());
    }
}

/// Without a terminal (CI, a log file) a point says when it starts and, while it runs, says so
/// again every EXPR_PROGRESS_EVERY_S (30 s by default): a long point is never silence.
#[test]
fn a_run_without_a_terminal_says_each_point_start_and_keeps_saying_a_long_one_runs() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"sleep {{{{ s }}}}\"\n  param s 0.0\n  sweep s 0.0 2.6\n}}\n"
    ));
    let ran = Test::new()
        .dir(w.path())
        .env("EXPR_PROGRESS_EVERY_S", "1")
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    let err = &ran.stderr;
    let at = |needle: &str| {
        err.find(needle)
            .unwrap_or_else(|| panic!("no `{needle}` in:\n{err}"))
    };
    // each point: its start, then its end
    assert!(at("[1/2] b_s0_r0 starts") < at("[1/2] b_s0_r0 ok"), "{err}");
    assert!(
        at("[2/2] b_s2_6_r0 starts") < at("[2/2] b_s2_6_r0 ok"),
        "{err}"
    );
    // the 2.6 s point was said to run, with its step, at least twice, between them
    let running: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("[2/2] b_s2_6_r0 running "))
        .collect();
    assert!(running.len() >= 2, "{err}");
    assert!(
        running.iter().all(|l| l.contains("[local] run1-b_s2_6_r0")),
        "{running:?}"
    );
    assert!(at("[2/2] b_s2_6_r0 running ") > at("[2/2] b_s2_6_r0 starts"));
    assert!(at("[2/2] b_s2_6_r0 running ") < at("[2/2] b_s2_6_r0 ok"));
    // the result directory is the one line on stdout; the rest went to stderr
    assert_eq!(ran.stdout, "out\n", "{}", ran.stdout);
    assert!(err.contains("expr: 2 points → out"), "{err}");
}

#[test]
fn one_point_is_one_point_and_quiet_says_only_where_the_results_are() {
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  run \"true\"\n}}\n"));
    let ran = w.run(&[]).status(0);
    assert!(ran.stderr.contains("expr: 1 point → out"), "{}", ran.stderr);
    let quiet = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--output", "q", "-q"])
        .run()
        .status(0);
    assert!(!quiet.stderr.contains("point"), "{}", quiet.stderr);
    assert_eq!(quiet.stdout, "q\n");
}

#[test]
fn an_interrupted_run_says_how_to_resume_it_and_the_resumed_run_says_it_in_one_line() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"sleep {{{{ s }}}}\"\n  param s 0.0\n  sweep s 0.0 3.0 0.1 0.2 0.3\n}}\n"
    ));
    let mut child = w.spawn(&[]);
    w.wait_process("run1-b_s3_r0");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = exited(&mut child, "expr did not stop after SIGINT");
    assert_eq!(status.code(), Some(130));
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        err.contains("expr: to run what was not finished and keep the rest: expr run --resume out"),
        "{err}"
    );
    let again = Test::new()
        .dir(w.path())
        .args(["run", "--resume", "out"])
        .run()
        .status(0);
    // one line for the points, not one per point
    assert!(
        again.stderr.contains(
            "resume: 1 point kept (succeeded before with the same command and code), 1 runs again (it was interrupted last time), 3 not run before"
        ),
        "{}",
        again.stderr
    );
    assert!(
        !again.stderr.contains("no journal entry"),
        "{}",
        again.stderr
    );
    assert!(!again.stderr.contains(": runs"), "{}", again.stderr);
}

/// `--output` at a directory that is not expr's: the advice is one that works (`--resume` and
/// `--force` are refused there); at a result directory of expr's, both are offered.
#[test]
fn an_output_that_is_not_a_result_directory_gets_advice_that_works() {
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  run \"true\"\n}}\n"));
    std::fs::create_dir_all(w.path().join("notes")).unwrap();
    std::fs::write(w.path().join("notes/todo.txt"), "mine").unwrap();
    let r = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--output", "notes"])
        .run()
        .status(2);
    assert!(
        r.stderr
            .contains("notes is not empty and is not a result directory of expr's")
            && !r.stderr.contains("--resume"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("1 point →"),
        "nothing is said to run: {}",
        r.stderr
    );
    w.run(&[]).status(0);
    let again = w.run(&[]).status(2);
    assert!(
        again
            .stderr
            .contains("use `--resume out` to continue it, `--force` to write into it"),
        "{}",
        again.stderr
    );
    Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--resume", "out"])
        .run()
        .status(0);
    assert_eq!(
        std::fs::read_to_string(w.path().join("notes/todo.txt")).unwrap(),
        "mine"
    );
}

/// A GPU-host example tried on a plain machine fails at preflight with the setting to change:
/// a runner that is not installed (`runner`), a Python without the module (`runner`, or install
/// it), a checkout without the runner files (`repo=`).
#[test]
fn preflight_says_which_setting_to_change_when_a_program_cannot_start() {
    let d = tempfile::tempdir().unwrap();
    let drt = |runner: &str| {
        format!("experiment d\nhost local\ndataset-rt {{\n    node host=local\n    runner \"{runner}\"\n    sweep num-workers 0\n}}\n")
    };
    std::fs::write(d.path().join("a.kdl"), drt("no-such-runner-xyz run python")).unwrap();
    let a = Test::new()
        .dir(d.path())
        .args(["run", "a.kdl", "--output", "oa", "--history", "h.sqlite"])
        .run()
        .status(4);
    assert!(
        a.stderr.contains("`no-such-runner-xyz` is not installed on `local` (or not on its PATH): install it there, or set `runner` to a command that is"),
        "{}",
        a.stderr
    );
    std::fs::write(d.path().join("b.kdl"), drt("python3")).unwrap();
    let b = Test::new()
        .dir(d.path())
        .args(["run", "b.kdl", "--output", "ob", "--history", "h.sqlite"])
        .run()
        .status(4);
    assert!(
        b.stderr.contains("the Python that `runner` runs (`python3`) on `local` has no module `dataset_rt`: install it there"),
        "{}",
        b.stderr
    );
    let day0 =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/day0.kdl"))
            .unwrap();
    std::fs::write(d.path().join("c.kdl"), day0).unwrap();
    let c = Test::new()
        .dir(d.path())
        .args(["run", "c.kdl", "--output", "oc", "--history", "h.sqlite"])
        .run()
        .status(4);
    assert!(
        c.stderr.contains("host `local` lacks runner files in . = ")
            && c.stderr
                .contains("set `repo=` on host `local` to the checkout that holds them"),
        "{}",
        c.stderr
    );
}

/// A 64 MB output line without a newline costs expr a bounded piece of memory (the collector
/// reads a line in pieces of 1 MiB), and the number on the next line is still read.
#[test]
// reaped by `wait4` (for its rusage), not by `Child::wait`
#[allow(clippy::zombie_processes)]
fn a_huge_output_line_without_a_newline_costs_a_bounded_piece_of_memory() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"head -c 67108864 /dev/zero | tr '\\\\000' x; echo; echo v=3\"\n  collect \"regex\" pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    let child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "out", "--history", "h.sqlite"])
        .current_dir(w.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // expr's own peak memory, from the kernel (wait4), not its children's
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as i32;
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut ru) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{status}"
    );
    let mib = ru.ru_maxrss as f64 / 1024.0;
    assert!(mib < 48.0, "expr took {mib:.0} MiB for a 64 MiB line");
    let m = std::fs::read_to_string(w.out().join("metrics.csv")).unwrap();
    assert!(m.contains(",v,") && m.contains(",3,"), "{m}");
}

/// A lane name or sweep value too long for a file name still runs: its run id keeps a start and
/// a hash of the whole (stable, unique), which `plan` shows and every log name uses.
#[test]
fn a_300_character_lane_name_runs_under_a_shortened_run_id() {
    let long = "x".repeat(300);
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  param v \"a\"\n  run \"echo {{{{ v }}}}\"\n  lane \"{long}\" v=\"{long}\"\n  lane \"{long}y\" v=\"b\"\n}}\n"
    ));
    let plan = Test::new()
        .dir(w.path())
        .args(["plan", "e.kdl", "--format", "json"])
        .run()
        .status(0);
    let j: Value = serde_json::from_str(&plan.stdout).unwrap();
    let ids: Vec<&str> = j["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "unique");
    for id in &ids {
        assert!(
            id.len() <= 48 && id.starts_with("xxxx") && id.ends_with("_r0"),
            "{id}"
        );
    }
    let ran = w.run(&[]).status(0);
    assert!(
        ran.stderr.contains(&format!("[1/2] {} ok", ids[0])),
        "{}",
        ran.stderr
    );
    // the same ids again: a resume finds its points
    let again = Test::new()
        .dir(w.path())
        .args(["run", "--resume", "out"])
        .run()
        .status(0);
    assert!(again.stderr.contains("2 points kept"), "{}", again.stderr);
}

/// `--resume` keeps a point that succeeded only while its evidence is there: a point whose log
/// or outputs are gone is measured again (and said so in the one summary line), not reported
/// as no-data on every resume.
#[test]
fn a_resume_measures_again_a_point_whose_log_or_outputs_are_gone() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  param x 1\n  run \"echo v={{{{ x }}}} > {{{{ outdir }}}}/v.txt; echo v={{{{ x }}}}\"\n  collect \"regex\" pattern=\"v=([0-9]+)\"\n  sweep x 1 2 3\n}}\n"
    ));
    w.run(&[]).status(0);
    let out = w.out();
    std::fs::remove_file(out.join("logs/run1-b_x2_r0-local.log")).unwrap();
    std::fs::remove_dir_all(out.join("outputs/b_x3_r0")).unwrap();
    let again = Test::new()
        .dir(w.path())
        .args(["run", "--resume", "out"])
        .run()
        .status(0);
    assert!(
        again.stderr.contains("resume: 1 point kept")
            && again.stderr.contains("2 run again (its log out/logs/run1-b_x2_r0-local.log is gone: 1; its outputs/b_x3_r0 is gone: 1)"),
        "{}",
        again.stderr
    );
    assert!(
        again.stderr.contains("b_x2_r0 ok") && again.stderr.contains("b_x3_r0 ok"),
        "{}",
        again.stderr
    );
    // a resume after that keeps all three
    let third = Test::new()
        .dir(w.path())
        .args(["run", "--resume", "out"])
        .run()
        .status(0);
    assert!(third.stderr.contains("3 points kept"), "{}", third.stderr);
}

/// Preflight reads each checkout's git head, dirt and diff without writing into its .git: `git
/// status` and `git diff` refresh a stale index (a write under index.lock, which a user's own
/// git command could meet at that moment); the index is byte for byte as it was.
#[test]
fn preflight_leaves_the_checkouts_git_index_as_it_was() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .current_dir(p)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {o:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(p.join("f.txt"), "a\n").unwrap();
    git(&["add", "f.txt"]);
    git(&["commit", "-qm", "a"]);
    // the file's time moves on: the index's stat data for it is stale, which git refreshes
    let later = std::time::SystemTime::now() + Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(p.join("f.txt"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    std::fs::write(
        p.join("e.kdl"),
        "experiment g\nhost local repo=\".\"\nbench b {\n    run \"echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let index = std::fs::read(p.join(".git/index")).unwrap();
    Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    assert!(
        std::fs::read(p.join(".git/index")).unwrap() == index,
        "the run wrote the checkout's .git/index"
    );
    let header = journal(&p.join("out"))
        .into_iter()
        .find(|e| e["event"] == "header")
        .unwrap();
    assert_eq!(header["hosts"][0]["git_head"].as_str().unwrap().len(), 40);
}

/// `--resume` writes into the directory's own files: one of them (or logs/) a symbolic link
/// to a place outside took the resume's writes there. Refused, before anything is written,
/// naming the link; the place outside stays as it was.
#[test]
fn a_resume_refuses_a_symbolic_link_among_the_directorys_own_files() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"test -e flag && echo v=1\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    w.run(&[]).status(3);
    let out = w.out();
    let outside = w.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("run1-b_r0-local.log"), "VICTIM").unwrap();
    std::fs::write(w.path().join("flag"), "").unwrap();
    let resume = |what: &str| {
        let r = Test::new()
            .dir(w.path())
            .args(["run", "--resume", "out"])
            .run()
            .status(2);
        assert!(
            r.stderr
                .contains(&format!("{what} is a symbolic link (to "))
                && r.stderr
                    .contains("a resume would write through it, outside the result directory"),
            "{}",
            r.stderr
        );
    };
    // logs/ a link to a folder outside
    std::fs::rename(out.join("logs"), w.path().join("logs-was")).unwrap();
    std::os::unix::fs::symlink(&outside, out.join("logs")).unwrap();
    resume("out/logs");
    assert_eq!(
        std::fs::read_to_string(outside.join("run1-b_r0-local.log")).unwrap(),
        "VICTIM"
    );
    // the journal a link to a file outside
    std::fs::remove_file(out.join("logs")).unwrap();
    std::fs::rename(w.path().join("logs-was"), out.join("logs")).unwrap();
    std::fs::rename(out.join("journal.jsonl"), outside.join("journal.jsonl")).unwrap();
    std::os::unix::fs::symlink(outside.join("journal.jsonl"), out.join("journal.jsonl")).unwrap();
    let before = std::fs::read(outside.join("journal.jsonl")).unwrap();
    resume("out/journal.jsonl");
    assert_eq!(
        std::fs::read(outside.join("journal.jsonl")).unwrap(),
        before
    );
    // the journal back in its place
    std::fs::remove_file(out.join("journal.jsonl")).unwrap();
    std::fs::rename(outside.join("journal.jsonl"), out.join("journal.jsonl")).unwrap();
    // runtime/ a link outside and the experiment file gone: the journal's copy, which the
    // resume writes into runtime/ to run with, is not written through the link
    std::fs::rename(w.path().join("e.kdl"), w.path().join("e.kdl.was")).unwrap();
    std::fs::rename(out.join("runtime"), w.path().join("runtime-was")).unwrap();
    std::os::unix::fs::symlink(&outside, out.join("runtime")).unwrap();
    resume("out/runtime");
    assert!(
        !outside.join("resumed.kdl").exists(),
        "written through the link"
    );
    std::fs::remove_file(out.join("runtime")).unwrap();
    std::fs::rename(w.path().join("runtime-was"), out.join("runtime")).unwrap();
    std::fs::rename(w.path().join("e.kdl.was"), w.path().join("e.kdl")).unwrap();
    // the resume runs the failed point
    Test::new()
        .dir(w.path())
        .args(["run", "--resume", "out"])
        .run()
        .status(0);
}

/// `--force` and no point of the new run ends ok (its collect finds nothing, as a failed build
/// or a Ctrl-C would leave it): the earlier results are not replaced by none. They stay as they
/// were, and the new run's files are kept beside them in `runtime/unmeasured-<time>/`.
#[test]
fn a_force_run_that_measures_nothing_keeps_the_earlier_results() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  param v \"7\"\n  run \"echo v={{{{ v }}}}\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    w.run(&[]).status(0);
    let out = w.out();
    let before: Vec<(String, Vec<u8>)> = [
        "journal.jsonl",
        "manifest.csv",
        "summary.md",
        "logs/run1-b_r0-local.log",
    ]
    .iter()
    .map(|f| (f.to_string(), std::fs::read(out.join(f)).unwrap()))
    .collect();
    let none = w
        .run(&["--force", "--set", "v=x"])
        .status(expr::util::exit_codes::POINT_FAILED);
    assert!(
        none.stderr.contains("--force: this run measured nothing: the earlier results in out are as they were; this run's files are in out/runtime/unmeasured-"),
        "{}",
        none.stderr
    );
    for (f, bytes) in &before {
        assert_eq!(
            &std::fs::read(out.join(f)).unwrap(),
            bytes,
            "{f} is not as it was"
        );
    }
    assert!(!out.join(".expr-forced").exists());
    let kept = common::entries_starting(&out.join("runtime"), "unmeasured-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    let log = std::fs::read_to_string(kept[0].join("logs/run1-b_r0-local.log")).unwrap();
    assert_eq!(log, "v=x\n");
    // the last words: not `--resume` (the directory holds the earlier run, whole)
    assert!(
        none.stderr.contains(
            "nothing of this run is left to resume (the same command with --force measures again)"
        ) && !none.stderr.contains("--resume"),
        "{}",
        none.stderr
    );
    // the history still holds the earlier run's number, not the run that measured nothing
    let h = Test::new().dir(w.path()).args(["history", "t"]).run();
    let abs = std::fs::canonicalize(&out).unwrap().display().to_string();
    assert!(
        h.status == 0
            && h.stdout.lines().any(|l| {
                l.contains("| ok | b | b |  | v | 1 | 7.00 |") && l.ends_with(&format!("| {abs} |"))
            }),
        "{}{}",
        h.stdout,
        h.stderr
    );
    // a --force run that measures: replaces them, nothing set aside, and says so
    let replaced = w.run(&["--force"]).status(0);
    assert!(!out.join(".expr-forced").exists());
    assert!(
        replaced.stderr.contains("--force: a point of this run measured: the earlier run's files (journal, manifest, reports, charts, logs/, outputs/, runtime/) are removed; other files at the directory's top stay"),
        "{}",
        replaced.stderr
    );
}

/// `--resume` in a new process: a group whose warmup ran in the earlier one warms up again
/// before the first of its points that runs now (they ran cold). A kept point keeps its plan.
#[test]
fn resume_warms_a_group_up_again_before_its_first_point_that_runs_now() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  warmup 1\n  repeat 3\n  run \"if [ {{{{ repeat }}}} = 1 ] && [ ! -f {{{{ output }}}}/../go ]; then exit 1; fi; echo v=1\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    w.run(&[]).status(expr::util::exit_codes::POINT_FAILED);
    let out = w.out();
    assert!(out.join("logs/warmup0-run1-b_r0-local.log").exists());
    assert!(!out.join("logs/warmup0-run1-b_r1-local.log").exists());
    std::fs::write(w.path().join("go"), "").unwrap();
    let resumed = Test::new()
        .dir(w.path())
        .args(["run", "e.kdl", "--resume", "out"])
        .run()
        .status(0);
    // b_r0 and b_r2 kept; b_r1 runs, warmed up first
    let runs_of = |id: &str| {
        journal(&out)
            .iter()
            .filter(|e| e["event"] == "point" && e["run_id"] == id)
            .count()
    };
    assert_eq!(
        (runs_of("b_r0"), runs_of("b_r1"), runs_of("b_r2")),
        (1, 2, 1),
        "{}",
        resumed.stderr
    );
    let warm: Vec<String> = journal(&out)
        .iter()
        .filter(|e| e["event"] == "step")
        .filter_map(|e| e["step"].as_str().map(str::to_string))
        .filter(|s| s.starts_with("warmup"))
        .collect();
    assert_eq!(warm, ["warmup0-run1-b_r0", "warmup0-run1-b_r1"], "{warm:?}");
    let ok = manifest(&out).iter().filter(|r| &r[13] == "ok").count();
    assert_eq!(ok, 3);
}

/// `{{ output }}` is the result directory as the step sees it: a local step runs in its repo,
/// so a relative output (given from another directory) is made absolute, as `{{ outdir }}` is
/// (it rendered `o_sub`, and the step wrote into the repo's `o_sub`, which did not exist).
#[test]
fn output_in_a_template_is_the_result_directory_wherever_expr_runs() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"echo v=1 > {{{{ output }}}}/extra.txt && cat {{{{ output }}}}/extra.txt\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    let sub = w.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    Test::new()
        .dir(&sub)
        .args(["run", "../e.kdl", "--output", "o_sub"])
        .run()
        .status(0);
    assert_eq!(
        std::fs::read_to_string(sub.join("o_sub/extra.txt")).unwrap(),
        "v=1\n"
    );
}

/// manifest.csv keeps up while a long point runs: the row of a point that ended right after
/// another (its write put off, at most one every 250 ms) is written during the next point, not
/// after it (it lagged the journal for the whole of the long point).
#[test]
fn the_manifest_keeps_up_with_the_journal_while_a_long_point_runs() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  param k 1\n  run \"[ {{{{ k }}}} = 3 ] && sleep 4; echo v={{{{ k }}}}\"\n  collect regex pattern=\"v=([0-9]+)\"\n  sweep k 1 2 3\n}}\n"
    ));
    let mut child = w.spawn(&[]);
    let out = w.out();
    let t0 = Instant::now();
    let rows_ok = || {
        std::fs::read_to_string(out.join("manifest.csv"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(",ok,"))
            .count()
    };
    while rows_ok() < 2 && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen = rows_ok();
    let took = t0.elapsed();
    let st = exited(&mut child, "the run did not end");
    assert_eq!(st.code(), Some(0));
    assert_eq!(seen, 2, "two rows ok while k=3 ran (after {took:?})");
}

/// A step whose `cwd` is not there fails saying so; it said "cannot start `/usr/bin/bash`: No
/// such file or directory" of a shell that is there (helper 50).
#[test]
fn a_step_whose_working_directory_is_missing_says_so() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("c.kdl"),
        "experiment c\nbench b {\n    run \"echo hi\" cwd=\"no/such/dir\"\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(d.path())
        .args(["run", "c.kdl", "--output", "out"])
        .run();
    assert!(
        r.stderr
            .contains("its working directory ./no/such/dir is not a directory there"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("No such file or directory"),
        "{}",
        r.stderr
    );
}

/// A `--force` resume from a file with fewer repeats: manifest.csv lists the points the report
/// shows (it kept the dropped repeat's row, `ok`, beside a summary without it); the reports
/// before, which have its number, are kept with that row; `expr report` over a manifest an
/// older expr left so takes the row out too.
#[test]
fn a_force_resume_with_fewer_repeats_leaves_no_row_of_the_dropped_point() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = "experiment r\nbench b {\n    run \"echo v=3\"\n    collect \"regex\" pattern=\"v=([0-9.]+)\"\n    repeat 3\n}\n";
    std::fs::write(dir.path().join("e.kdl"), kdl).unwrap();
    let run = |args: &[&str]| Test::new().dir(dir.path()).args(args).run();
    run(&["run", "e.kdl", "--output", "out"]).status(0);
    let out = dir.path().join("out");
    let full = std::fs::read_to_string(out.join("manifest.csv")).unwrap();
    assert!(full.contains("\nb_r2,"), "{full}");
    std::fs::write(
        dir.path().join("e.kdl"),
        kdl.replace("repeat 3", "repeat 2"),
    )
    .unwrap();
    let again = run(&["run", "--resume", "out", "--force"]);
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("manifest.csv: b_r2 no longer a point of the experiment: its row left it")
            && again
                .stderr
                .contains("b_r2: the report before this one has its number; its files give none now (it is no longer a point of the experiment as the run last read it)"),
        "{}",
        again.stderr
    );
    let manifest = std::fs::read_to_string(out.join("manifest.csv")).unwrap();
    let ids: Vec<&str> = manifest
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(ids, ["b_r0", "b_r1"], "{manifest}");
    let earlier = common::entries_starting(&out.join("runtime"), "earlier-report-");
    assert_eq!(earlier.len(), 1, "{earlier:?}");
    assert_eq!(
        std::fs::read_to_string(earlier[0].join("manifest.csv")).unwrap(),
        full
    );
    // the row put back, as an expr that kept it left it: the report takes it out
    std::fs::write(out.join("manifest.csv"), &full).unwrap();
    let report = run(&["report", "out"]);
    assert_eq!(report.status, 0, "{}", report.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("manifest.csv")).unwrap(),
        manifest
    );
}

/// `port="{{ port }}"` follows the value the server's command takes: a `--set port=…` (the
/// quickstart's `port=17070` stayed behind, and every point failed "not ready" after its
/// timeout; helper 71) and a sweep of ports, each point's server ready on its own.
#[test]
fn a_servers_port_template_follows_set_and_sweep() {
    let (p1, p2, p3) = (free_port(), free_port(), free_port());
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  param port 1\n  serve s \"python3 wl/server.py --port {{{{ port }}}}\" port=\"{{{{ port }}}}\" ready-timeout=10\n  run \"echo v={{{{ port }}}}\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"));
    let set = format!("port={p1}");
    let plan = Test::new()
        .dir(w.path())
        .args(["plan", "e.kdl", "--set", &set])
        .run()
        .status(0);
    assert!(
        plan.stdout
            .contains(&format!("# ready: tcp 127.0.0.1:{p1} within 10 s")),
        "{}",
        plan.stdout
    );
    let ran = w.run(&["--set", &set]).status(0);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.out().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(
        s["points"][0]["metrics"][0]["value"].as_f64(),
        Some(p1 as f64),
        "{}",
        ran.stderr
    );
    // a sweep: each point's own port
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  param port 1\n  sweep port {p2} {p3}\n  serve s \"python3 wl/server.py --port {{{{ port }}}}\" port=\"{{{{ port }}}}\" ready-timeout=10\n  run \"echo v={{{{ port }}}}\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"));
    let plan = Test::new()
        .dir(w.path())
        .args(["plan", "e.kdl"])
        .run()
        .status(0);
    for port in [p2, p3] {
        assert!(
            plan.stdout
                .contains(&format!("# ready: tcp 127.0.0.1:{port} within 10 s")),
            "{}",
            plan.stdout
        );
    }
    let ran = w.run(&[]).status(0);
    let m = std::fs::read_to_string(w.out().join("manifest.csv")).unwrap();
    assert_eq!(m.matches(",ok,").count(), 2, "{m}\n{}", ran.stderr);
}

/// A `--force` resume after only the `collect` changed (`pattern="v=` → `"w=`): the kept
/// points are read with the new pattern, and the warnings name that cause, once a point — they
/// said "a log or output changed since the run?", "journal.jsonl cut short?", and counted 8
/// points of 4 (helper 70).
#[test]
fn a_force_resume_after_a_collect_change_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = "experiment pc\nbench b {\n    run \"echo v=10 w=199\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    repeat 2\n    lane a\n    lane b\n}\n";
    std::fs::write(dir.path().join("e.kdl"), kdl).unwrap();
    let run = |args: &[&str]| Test::new().dir(dir.path()).args(args).run();
    run(&["run", "e.kdl", "--output", "out"]).status(0);
    std::fs::write(
        dir.path().join("e.kdl"),
        kdl.replace("pattern=\"v=", "pattern=\"w="),
    )
    .unwrap();
    let again = run(&["run", "--resume", "out", "--force"]).status(0);
    let e = &again.stderr;
    assert!(
        e.contains("a_r0: its files now give 199.00 where the run read 10.00 (the bench's `collect` changed since the run)")
            && e.contains("a_r0: the report before this one has `v`; the bench's `collect` reads other metrics now")
            && e.contains("for 4 points (each gives another number now)")
            && !e.contains("a log or output changed")
            && !e.contains("cut short"),
        "{e}"
    );
}

/// A run interrupted in lane x, then resumed for lane y only (exit 0): the directory still
/// holds x's points unmeasured, and `expr report` exits 3 on them; `expr ls` said `1/0/1 ok`
/// and the history `ok` (helper 72). Both now judge the directory as the report does: failed.
#[test]
fn an_unmeasured_point_left_by_a_resume_of_other_points_is_not_ok() {
    let w = Work::new(&format!("{PRELUDE}bench b {{\n  param s 0\n  run \"sleep {{{{ s }}}}; echo v=1\"\n  collect regex pattern=\"v=([0-9]+)\"\n  lane x s=30\n  lane y\n}}\n"));
    let mut child = w.spawn(&["--history", "h.sqlite"]);
    w.wait_process("run1-x_r0");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = exited(&mut child, "expr did not stop after SIGINT");
    assert_eq!(status.code(), Some(130));
    Test::new()
        .dir(w.path())
        .args([
            "run",
            "--resume",
            "out",
            "--only",
            "lane=y",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(0);
    w.report(expr::util::exit_codes::POINT_FAILED);
    let ls = Test::new().dir(w.path()).args(["ls", "."]).run().status(0);
    let line = ls.stdout.lines().find(|l| l.ends_with("out")).unwrap();
    assert!(
        line.contains(" 1/0/1 ") && line.contains(" failed "),
        "{}",
        ls.stdout
    );
    let h = Test::new()
        .dir(w.path())
        .args(["history", "t", "--history", "h.sqlite", "--format", "json"])
        .run()
        .status(0);
    assert!(h.stdout.contains("\"status\": \"failed\""), "{}", h.stdout);
}

/// `expr ls` called a run in progress `incomplete`, as it calls one that was killed (helper
/// 71): a directory without an end whose lock a live expr holds is `running`.
#[test]
fn ls_says_running_for_a_run_in_progress() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  run \"sleep 30; echo v=1\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n"
    ));
    let mut child = w.spawn(&["--history", "h.sqlite"]);
    w.wait_process("run1-b_r0");
    let ls = Test::new().dir(w.path()).args(["ls", "."]).run().status(0);
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    exited(&mut child, "expr did not stop after SIGINT");
    let line = ls.stdout.lines().find(|l| l.ends_with("out")).unwrap();
    assert!(line.contains(" running "), "{}", ls.stdout);
    let after = Test::new().dir(w.path()).args(["ls", "."]).run().status(0);
    let line = after.stdout.lines().find(|l| l.ends_with("out")).unwrap();
    assert!(line.contains(" interrupted "), "{}", after.stdout);
}

/// A process a step left behind with a secret in its arguments is named with the secret masked,
/// on the terminal and in the journal's `escaped` event (helper 77: shown as is).
#[test]
fn a_left_process_is_named_with_its_secrets_masked() {
    let tag = 400 + (std::process::id() % 97) as u64;
    let w = Work::new(&format!(
        "experiment t\nhost local repo=\"REPO\" {{\n    env HF_TOKEN=\"hf_abcdefSECRET123\"\n}}\nbench b {{\n  run \"setsid python3 -c 'import time; time.sleep({tag})' \\\"$HF_TOKEN\\\" >/dev/null 2>&1 </dev/null & sleep 0.3\"\n}}\n"
    ));
    let ran = w.run(&[]);
    assert!(
        ran.stderr
            .contains("outside its process groups and without its marker; stopped:")
            || ran.stderr.contains("outside its process groups; stopped:"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("SECRET123"), "{}", ran.stderr);
    let journal = std::fs::read_to_string(w.path().join("out/journal.jsonl")).unwrap();
    assert!(journal.contains("\"event\":\"escaped\""), "{journal}");
    assert!(!journal.contains("SECRET123"), "{journal}");
}

/// `exit-ok=`: a run step that ends with a code it lists is ok (its warmup round too): its
/// numbers count, the manifest and the journal keep its exit code and the terminal says it was
/// accepted; another code fails the point, and so does a signal under `any`. commands.sh
/// judges the same exits the same way.
#[test]
fn a_run_steps_exit_ok_codes_leave_its_point_ok_and_others_still_fail_it() {
    let w = Work::new(&format!(
        "{PRELUDE}bench b {{\n  param x 0\n  warmup 1\n  run \"echo rate=5; exit {{{{ x }}}}\" exit-ok=\"1,3\"\n  collect regex pattern=\"rate=([0-9]+)\"\n  sweep x 0 1 2 3\n}}\nbench s {{\n  run \"echo rate=5; kill -9 $$\" exit-ok=\"any\"\n  collect regex pattern=\"rate=([0-9]+)\"\n}}\n"
    ));
    let ran = w.run(&[]).status(3);
    let rows: Vec<(String, String, String)> = manifest(&w.out())
        .iter()
        .map(|r| (r[0].to_string(), r[13].to_string(), r[14].to_string()))
        .collect();
    let row = |id: &str, st: &str, code: &str| (id.to_string(), st.to_string(), code.to_string());
    assert_eq!(
        rows,
        vec![
            row("b_x0_r0", "ok", "0"),
            row("b_x1_r0", "ok", "1"),
            row("b_x2_r0", "failed", "2"),
            row("b_x3_r0", "ok", "3"),
            row("s_r0", "failed", "-9"),
        ],
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("[2/5] b_x1_r0 ok  rate 5.00 (exit 1 accepted by exit-ok)")
            && ran.stderr.contains("[1/5] b_x0_r0 ok  rate 5.00\n"),
        "{}",
        ran.stderr
    );
    // the report names them: their times count though the step exited non-zero
    let summary = std::fs::read_to_string(w.out().join("summary.md")).unwrap();
    assert!(
        summary.contains("⚠ Points whose run step exited non-zero, accepted by `exit-ok` (2; their times and numbers count): b_x1_r0 (exit 1); b_x3_r0 (exit 3)"),
        "{summary}"
    );
    // the warmup round of x=2 failed its point before the timed run
    let steps: Vec<(String, String, i64)> = journal(&w.out())
        .iter()
        .filter(|e| e["event"] == "step" && e["run_id"].as_str() == Some("b_x1_r0"))
        .map(|e| {
            (
                e["step"].as_str().unwrap().to_string(),
                e["status"].as_str().unwrap().to_string(),
                e["exit_code"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            ("warmup0-run1-b_x1_r0".to_string(), "ok".to_string(), 1),
            ("run1-b_x1_r0".to_string(), "ok".to_string(), 1),
        ]
    );
    // commands.sh: the same two points fail, the accepted ones do not
    let script = Test::new()
        .dir(w.path())
        .args(["plan", "e.kdl", "--format", "sh", "--output", "sh-out"])
        .run()
        .status(0)
        .stdout;
    std::fs::write(w.path().join("c.sh"), &script).unwrap();
    let sh = Command::new("bash")
        .arg("c.sh")
        .current_dir(w.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&sh.stderr);
    assert_eq!(sh.status.code(), Some(3), "{err}");
    assert!(
        err.contains("warmup0-run1-b_x2_r0 failed")
            && err.contains("a client of s_r0 failed")
            && !err.contains("b_x1_r0")
            && !err.contains("b_x3_r0")
            && err.contains("expr: 2 step(s) failed"),
        "{err}"
    );
    // under --jobs the line says it too (the worker's point is merged)
    let jobs = Test::new()
        .dir(w.path())
        .args([
            "run", "e.kdl", "--output", "jobs", "--jobs", "2", "--only", "bench=b",
        ])
        .run()
        .status(3);
    assert!(
        jobs.stderr.contains("(exit 3 accepted by exit-ok)"),
        "{}",
        jobs.stderr
    );
    // a resume whose `exit-ok` no longer takes 3 runs that point again, and it fails
    let kdl = std::fs::read_to_string(w.path().join("e.kdl")).unwrap();
    std::fs::write(
        w.path().join("e.kdl"),
        kdl.replace("exit-ok=\"1,3\"", "exit-ok=\"1\""),
    )
    .unwrap();
    let again = Test::new()
        .dir(w.path())
        .args(["run", "--resume", "out", "e.kdl", "--force", "--grace", "1"])
        .run()
        .status(3);
    let x3 = manifest(&w.out())
        .iter()
        .find(|r| &r[0] == "b_x3_r0")
        .map(|r| (r[13].to_string(), r[14].to_string()));
    assert_eq!(x3, Some(("failed".into(), "3".into())), "{}", again.stderr);
}

/// `exit-ok="any"` on an ssh host: an exit of 1–128 is accepted as here, but a code above 128
/// is not (the remote shell reports a signal as 128+N and ssh its own failure as 255: an OOM
/// kill, 137, passed as accepted, helper 84), and a signal still fails the point.
#[test]
fn real_sshd_exit_ok_on_an_ssh_host_never_takes_a_code_above_128() {
    let Some(sshd) = Sshd::start() else { return };
    let kdl = format!(
        "{PRELUDE}host far ssh=\"exprtest\" ssh-port={sp} ip=\"127.0.0.1\" repo=\"REPO\"\nbench b {{\n  param c 0\n  run \"echo v=1; exit {{{{ c }}}}\" host=far exit-ok=\"any\"\n  collect regex pattern=\"v=([0-9]+)\"\n  sweep c 3 137 200\n}}\nbench k {{\n  run \"echo v=1; kill -9 $$\" host=far exit-ok=\"any\"\n  collect regex pattern=\"v=([0-9]+)\"\n}}\n",
        sp = sshd.port
    );
    let w = Work::new(&kdl);
    let ran = Test::new()
        .dir(w.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
        .run()
        .status(3);
    let rows: Vec<(String, String)> = manifest(&w.out())
        .iter()
        .map(|r| (r[0].to_string(), r[13].to_string()))
        .collect();
    let row = |id: &str, st: &str| (id.to_string(), st.to_string());
    assert_eq!(
        rows,
        vec![
            row("b_c3_r0", "ok"),
            row("b_c137_r0", "failed"),
            row("b_c200_r0", "failed"),
            row("k_r0", "failed"),
        ],
        "{}",
        ran.stderr
    );
    assert_no_survivors(&w.out());
}
