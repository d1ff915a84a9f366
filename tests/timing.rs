//! Built-in timing (issue "Measure like hyperfine"): a `bench` without a collector is timed by
//! expr itself — wall time from spawn to exit by a `wait4` reaper, the shell's spawn time
//! subtracted — with warmup, prepare/cleanup, `shell "none"` and adaptive repeats. Real
//! processes throughout; how close the numbers are to hyperfine's is in BENCHMARKS.md
//! (`cargo bench --bench timing`), not in timed tests.

mod common;

use std::path::Path;

use common::Test;
use serde_json::Value;

fn run(dir: &Path, kdl: &str, status: i32) -> common::Ran {
    std::fs::write(dir.join("t.kdl"), kdl).unwrap();
    Test::new()
        .dir(dir)
        .args(["run", "t.kdl", "--output", "out"])
        .run()
        .status(status)
}

/// The journal of the run these tests write to `DIR/out` (none read: the test's asserts fail).
fn journal(dir: &Path) -> Vec<Value> {
    common::journal(&dir.join("out"))
}

fn metrics(dir: &Path) -> Vec<csv::StringRecord> {
    csv::Reader::from_path(dir.join("out/metrics.csv"))
        .unwrap()
        .records()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn a_bench_without_a_collector_is_timed_with_hyperfine_statistics() {
    let d = tempfile::tempdir().unwrap();
    let ran = run(
        d.path(),
        "experiment t\nbench sleeps {\n    param d 0.01\n    run \"sleep {{ d }}\"\n    lane short d=0.01\n    lane long d=0.05\n    repeat 3\n}\n",
        0,
    );
    // a live line per point, with the group so far
    assert!(
        ran.stderr.contains("[5/6] short_r2 ok  time_ms "),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains(" · short: ") && ran.stderr.contains("(n=3)"),
        "{}",
        ran.stderr
    );
    let events = journal(d.path());
    // the shell's spawn time was measured once, before the points
    let cal: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "calibration")
        .collect();
    assert_eq!(cal.len(), 1);
    // 6 to 20 runs, stopping at the first whose mean has a standard error ≤ 0.05 ms; the
    // recorded mean and sd are those of the recorded samples
    let samples: Vec<f64> = cal[0]["samples_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let n = samples.len();
    assert_eq!(cal[0]["runs"], n);
    assert!((6..=20).contains(&n), "{n} runs");
    let mean = samples.iter().sum::<f64>() / n as f64;
    let sd = (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    assert!((cal[0]["mean_ms"].as_f64().unwrap() - mean).abs() < 1e-9);
    assert!((cal[0]["sd_ms"].as_f64().unwrap() - sd).abs() < 1e-9);
    if n < 20 {
        assert!(
            sd / (n as f64).sqrt() <= 0.05,
            "stopped at {n} with sd {sd}"
        );
    }
    if n > 6 {
        // it did not stop earlier: one run fewer missed the target
        let m: Vec<f64> = samples[..n - 1].to_vec();
        let mm = m.iter().sum::<f64>() / m.len() as f64;
        let s = (m.iter().map(|x| (x - mm).powi(2)).sum::<f64>() / (m.len() - 1) as f64).sqrt();
        assert!(
            s / (m.len() as f64).sqrt() > 0.05,
            "could have stopped at {}",
            n - 1
        );
    }
    let overhead = cal[0]["mean_ms"].as_f64().unwrap();
    assert!(overhead > 0.0);
    // every point: exact timing from wait4, and time_ms = wall_ms − the overhead, on one line
    let lines: Vec<String> = std::fs::read_to_string(d.path().join("out/journal.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let rows = metrics(d.path());
    for r in rows.iter().filter(|r| &r[5] == "time_ms") {
        let src = &r[9];
        let line: usize = src
            .strip_prefix("journal.jsonl:")
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("source {src}"));
        assert!(src.ends_with("(wall_ms − shell_overhead_ms)"), "{src}");
        let e: Value = serde_json::from_str(&lines[line - 1]).unwrap();
        assert_eq!(e["event"], "point");
        assert_eq!(e["run_id"], &r[0]);
        let t = &e["timing"];
        let (wall, o) = (
            t["wall_ms"].as_f64().unwrap(),
            t["shell_overhead_ms"].as_f64().unwrap(),
        );
        assert_eq!(o, overhead);
        let v: f64 = r[8].parse().unwrap();
        assert!((v - (wall - o)).abs() < 1e-9, "{v} vs {wall} − {o}");
        assert_eq!(&r[7], "lower");
        // sleep never returns early: a lower bound, not a timing tolerance
        let floor = if &r[2] == "long" { 50.0 } else { 10.0 };
        assert!(wall >= floor && v >= floor - o, "{}: wall {wall}", &r[0]);
        for k in ["user_ms", "sys_ms"] {
            assert!(t[k].as_f64().is_some_and(|x| x >= 0.0), "{k} in {t}");
        }
        // a `sleep`'s peak is below what expr held when it started it (wait4 counts that
        // too): not the command's, so not given, and the floor said instead
        assert!(t["max_rss_mib"].is_null(), "{t}");
        assert!(
            t["max_rss_floor_mib"].as_f64().is_some_and(|f| f > 0.0),
            "{t}"
        );
    }
    assert_eq!(rows.iter().filter(|r| &r[5] == "time_ms").count(), 6);
    for k in ["wall_ms", "user_ms", "sys_ms"] {
        assert_eq!(rows.iter().filter(|r| &r[5] == k).count(), 6, "{k}");
    }
    // the shell's CPU time, measured beside its spawn time, is subtracted from user_ms and
    // sys_ms as hyperfine subtracts it (never below 0)
    for k in ["user_ms", "sys_ms"] {
        let shell = cal[0][k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} in {}", cal[0]));
        assert!(shell > 0.0, "{k}: {shell}");
        for r in rows.iter().filter(|r| &r[5] == k) {
            let line: usize = r[9]
                .strip_prefix("journal.jsonl:")
                .and_then(|s| s.split(' ').next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("source {}", &r[9]));
            let t = &serde_json::from_str::<Value>(&lines[line - 1]).unwrap()["timing"];
            assert_eq!(t[format!("shell_overhead_{k}")].as_f64(), Some(shell));
            let v: f64 = r[8].parse().unwrap();
            let d = t[k].as_f64().unwrap() - shell;
            // below 0: held at 0, and its source says so with the difference
            let how = if d < 0.0 {
                format!("({k} − shell_overhead_{k} = {d:.3}, held at 0 as hyperfine does)")
            } else {
                format!("({k} − shell_overhead_{k})")
            };
            assert!(r[9].ends_with(&how), "{} vs {how}", &r[9]);
            let want = d.max(0.0);
            assert!((v - want).abs() < 1e-9, "{k}: {v} vs {want}");
        }
    }
    assert_eq!(rows.iter().filter(|r| &r[5] == "max_rss_mib").count(), 0);
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    for want in [
        "## Timing (",
        "| lane | mean ± σ | median | min … max | user | sys | repeats | outliers |",
        "`time_ms` = wall time − the shell's start-up time",
        "`short` ran fastest:",
        "times faster than `long`",
    ] {
        assert!(summary.contains(want), "lacks {want}:\n{summary}");
    }
    let row = summary
        .lines()
        .find(|l| l.starts_with("| short | "))
        .unwrap();
    assert!(
        row.contains(" ms ± ") && row.contains(" … ") && row.contains("| 3 | "),
        "{row}"
    );
    // an outlier (this machine is shared) is counted in the row and named below the table
    let outliers: usize = row
        .trim_end_matches(" |")
        .rsplit("| ")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(outliers > 0, summary.contains("⚠ lane short"), "{summary}");
}

#[test]
fn warmup_prepare_and_cleanup_run_in_order_and_only_the_run_is_timed() {
    let d = tempfile::tempdir().unwrap();
    run(
        d.path(),
        "experiment t\nbench b {\n    prepare \"echo p >> {{ outdir }}/order\"\n    run \"echo r >> {{ outdir }}/order; sleep 0.02\"\n    cleanup \"echo c >> {{ outdir }}/order; sleep 0.3\"\n    warmup 2\n    repeat 1\n}\n",
        0,
    );
    let order = std::fs::read_to_string(d.path().join("out/outputs/b_r0/order")).unwrap();
    assert_eq!(order, "p\nr\np\nr\np\nr\nc\n");
    let events = journal(d.path());
    let phases: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["event"] == "step" && e["run_id"] == "b_r0")
        .map(|e| (e["phase"].as_str().unwrap(), e["step"].as_str().unwrap()))
        .collect();
    assert_eq!(
        phases,
        [
            ("prepare", "prepare1-w0-b_r0"),
            ("warmup", "warmup0-run1-b_r0"),
            ("prepare", "prepare1-w1-b_r0"),
            ("warmup", "warmup1-run1-b_r0"),
            ("prepare", "prepare1-b_r0"),
            ("launch", "run1-b_r0"),
            ("cleanup", "cleanup1-b_r0"),
        ]
    );
    // the point's time is its run alone: the 0.3 s cleanup is not in it
    let p = events.iter().find(|e| e["event"] == "point").unwrap();
    let wall = p["timing"]["wall_ms"].as_f64().unwrap();
    assert!((20.0..300.0).contains(&wall), "{wall}");
    // a failing prepare fails the point before its run, and says which step
    let d = tempfile::tempdir().unwrap();
    run(
        d.path(),
        "experiment t\nbench b {\n    prepare \"exit 7\"\n    run \"touch {{ outdir }}/ran\"\n    repeat 1\n}\n",
        3,
    );
    assert!(!d.path().join("out/outputs/b_r0/ran").exists());
    let m = std::fs::read_to_string(d.path().join("out/manifest.csv")).unwrap();
    assert!(
        m.contains("prepare `prepare1-b_r0` on `local` failed (exit 7)"),
        "{m}"
    );
}

#[test]
fn shell_none_passes_each_value_as_one_argument_and_nothing_is_subtracted() {
    let d = tempfile::tempdir().unwrap();
    run(
        d.path(),
        "experiment t\nbench b {\n    param msg \"a b; touch pwned $(id)\"\n    run \"printf '[%s]' {{ msg }} x\"\n    shell \"none\"\n    repeat 1\n}\n",
        0,
    );
    let log = std::fs::read_to_string(d.path().join("out/logs/run1-b_r0-local.log")).unwrap();
    assert_eq!(log, "[a b; touch pwned $(id)][x]");
    assert!(!d.path().join("pwned").exists());
    let events = journal(d.path());
    assert!(!events.iter().any(|e| e["event"] == "calibration"));
    let rows = metrics(d.path());
    let t = rows.iter().find(|r| &r[5] == "time_ms").unwrap();
    assert!(t[9].ends_with("(wall_ms)"), "{:?}", t);
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    assert!(
        summary.contains("`shell \"none\"`: the command runs without a shell"),
        "{summary}"
    );
    // shell syntax cannot mean anything there: refused at check, located at the `>` itself
    std::fs::write(
        d.path().join("bad.kdl"),
        "experiment t\nbench b {\n    run \"sleep 1 > /dev/null\"\n    lane a shell=\"none\"\n}\n",
    )
    .unwrap();
    let out = Test::new()
        .dir(d.path())
        .args(["check", "bad.kdl"])
        .run()
        .status(2);
    assert!(
        out.stderr.contains("`run1` uses `>`, which needs a shell")
            && out.stderr.contains("[bad.kdl:3:18]"),
        "{}",
        out.stderr
    );
}

/// `expr bench -N` splits a command as hyperfine's `-N` does: quotes group a word, nothing is
/// expanded. What needs a shell is refused against the written experiment, never against a
/// temporary file that is gone when the message is read.
#[test]
fn bench_n_takes_quoted_words_and_refuses_a_shell_by_its_own_name() {
    let d = tempfile::tempdir().unwrap();
    // `expr bench -N ARGS…` in the test's directory, its exit status asserted
    let bench_n = |args: &[&str], status: i32| {
        Test::new()
            .dir(d.path())
            .args(["bench", "-N"])
            .args(args)
            .run()
            .status(status)
    };
    let ran = bench_n(
        &[
            "-r",
            "1",
            "-n",
            "p",
            "printf '[%s]' \"a b\" 'c  d' 'e\n' '{{x}}'",
            "--output",
            "out",
        ],
        0,
    );
    let log = std::fs::read_to_string(d.path().join("out/logs/run1-p_r0-local.log"))
        .unwrap_or_else(|e| panic!("{e}: {}", ran.stderr));
    // a trailing newline stays in its word; `{{x}}` is text (the command is literal)
    assert_eq!(log, "[a b][c  d][e\n][{{x}}]");
    let bad = bench_n(&["echo \"$HOME\"", "--output", "out2"], 2);
    assert!(
        bad.stderr.contains("uses `$`, which needs a shell")
            && bad.stderr.contains("[command 1:1:1]")
            && bad.stderr.contains(" 1 │ echo \"$HOME\"\n")
            && !bad.stderr.contains("bench.kdl"),
        "{}",
        bad.stderr
    );
    assert!(!d.path().join("out2").exists(), "nothing ran");
    // in `expr bench`'s words: the command by its text, `-N` (helper 78: `run1`, `shell "none"`)
    assert!(
        bad.stderr.contains(
            "× `echo \"$HOME\"` uses `$`, which needs a shell, but `-N` runs it without one"
        ) && bad
            .stderr
            .contains("help: drop `-N`: the command then runs through bash"),
        "{}",
        bad.stderr
    );
    // a program that is not there is named
    let gone = bench_n(&["-r", "1", "no-such-program-xyz a", "--output", "out3"], 3);
    assert!(
        gone.stderr
            .contains("cannot start `no-such-program-xyz`: No such file or directory"),
        "{}",
        gone.stderr
    );
}

/// The same under `order "shuffle"`: a group decides by how many of its points ran, not by the
/// repeat index of the one at hand (a shuffled r9 ran fourth; it said "reached max=10 runs"
/// and nothing was skipped). Each lane's three values, then every other repeat not needed.
#[test]
fn adaptive_repeats_in_a_shuffled_order_count_what_ran() {
    let d = tempfile::tempdir().unwrap();
    let ran = run(
        d.path(),
        "experiment t {\n    order \"shuffle\" seed=7\n}\nbench b {\n    param step 0\n    run \"echo v={{ 10 + step }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane one step=0\n    lane two step=1\n    repeat min=3 max=10 until-cv=1\n}\n",
        0,
    );
    let m = common::manifest_by_name(&d.path().join("out"));
    for lane in ["one", "two"] {
        let ok = m
            .iter()
            .filter(|r| r[0].starts_with(&format!("{lane}_r")) && &r[13] == "ok")
            .count();
        let skipped = m
            .iter()
            .filter(|r| r[0].starts_with(&format!("{lane}_r")) && &r[13] == "skipped")
            .count();
        assert_eq!((ok, skipped), (3, 7), "{lane}: {}", ran.stderr);
    }
    assert!(!ran.stderr.contains("reached max"), "{}", ran.stderr);
}

#[test]
fn adaptive_repeats_stop_a_converged_lane_and_name_the_one_that_hit_max() {
    let d = tempfile::tempdir().unwrap();
    // steady: 10 every run (CV 0); wobbly: 10, 15, 20, … never within 1 %
    let ran = run(
        d.path(),
        "experiment t\nbench b {\n    param step 0\n    run \"echo v={{ 10 + step * repeat }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane steady step=0\n    lane wobbly step=5\n    repeat min=3 max=6 until-cv=1\n}\n",
        0,
    );
    // read by column name, in the positions RecStore's runner order gives them (13: status)
    let m = common::manifest_by_name(&d.path().join("out"));
    let status = |id: &str| {
        m.iter()
            .find(|r| &r[0] == id)
            .map(|r| r[13].to_string())
            .unwrap()
    };
    for r in 0..3 {
        assert_eq!(status(&format!("steady_r{r}")), "ok");
    }
    for r in 3..6 {
        assert_eq!(status(&format!("steady_r{r}")), "skipped");
        assert_eq!(status(&format!("wobbly_r{r}")), "ok");
    }
    assert!(
        ran.stderr.contains(
            "steady_r3 skipped: not needed: CV 0.00% ≤ 1% after 3 runs (and its later repeats)"
        ),
        "{}",
        ran.stderr
    );
    // one line for the group, not one a repeat (helper 45)
    assert!(
        !ran.stderr.contains("steady_r4") && !ran.stderr.contains("steady_r5"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("note: lane wobbly reached max=6 runs without converging"),
        "{}",
        ran.stderr
    );
    // the report counts what ran; the skipped runs are neither missing nor failed
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    assert!(!summary.contains("steady_r3"), "{summary}");
    assert!(
        summary.contains("adaptive repeats: lane wobbly reached max=6 runs"),
        "{summary}"
    );
    // in a Chinese report the note is Chinese, its numbers as recorded
    Test::new()
        .dir(d.path())
        .args(["report", "out", "--lang", "zh"])
        .run()
        .status(0);
    let zh = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    assert!(
        zh.contains("⚠ 自适应重复：通道 wobbly 达到 max=6 次运行仍未收敛（CV ")
            && zh.contains("（wobbly_r5）")
            && !zh.contains("adaptive repeats"),
        "{zh}"
    );
    let html = std::fs::read_to_string(d.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("<li>自适应重复：通道 wobbly") && !html.contains("without converging"),
        "{html}"
    );
    let ls = Test::new().dir(d.path()).args(["ls", "."]).run().status(0);
    assert!(ls.stdout.contains("9/0/0"), "{}", ls.stdout);
    // `--set repeat=N` makes it a fixed count again
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "t.kdl", "--set", "repeat=2", "--format", "json"])
        .run()
        .status(0);
    let v: Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(v["points"].as_array().unwrap().len(), 4);
}

/// Review findings: a calibration run that hangs is stopped (and a signal honoured at once);
/// `shell "none"` refuses what it cannot split; no-op commands are flagged, not ranked.
#[test]
fn a_hanging_calibration_is_stopped_and_tiny_times_are_flagged() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // BASH_ENV that hangs only the calibration's `bash -c true`
    std::fs::write(
        p.join("hang.sh"),
        "case \"$BASH_EXECUTION_STRING\" in true) exec sleep 1234.5;; esac\n",
    )
    .unwrap();
    std::fs::write(
        p.join("t.kdl"),
        "experiment t\nbench b {\n    run \"sleep 0.01\"\n    repeat 1\n}\n",
    )
    .unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "t.kdl", "--output", "out", "--grace", "1"])
        .env("BASH_ENV", p.join("hang.sh"))
        .current_dir(p)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        t.elapsed()
    );
    // the Ctrl-C is said as such: not as a calibration run that took too long
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        !said.contains("did not end within") && said.contains("interrupted: not starting b_r0"),
        "{said}"
    );
    let left = std::process::Command::new("pgrep")
        .args(["-f", "sleep 1234.5"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left behind: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    // shell "none" cannot take an empty command or a block tag
    for (cmd, want) in [
        ("", "has an empty command"),
        ("{% if true %}true{% endif %}", "cannot split into words"),
    ] {
        std::fs::write(
            p.join("n.kdl"),
            format!("experiment t\nbench b {{\n    run {cmd:?}\n    shell \"none\"\n}}\n"),
        )
        .unwrap();
        let c = Test::new().dir(p).args(["check", "n.kdl"]).run().status(2);
        assert!(c.stderr.contains(want), "{}", c.stderr);
    }
    // a program a value names is known at plan time: a keyword or an assignment is refused there
    for (tool, want) in [
        ("time", "a shell keyword"),
        ("OMP=4", "a variable assignment"),
    ] {
        std::fs::write(
            p.join("v.kdl"),
            format!("experiment t\nbench b {{\n    param tool \"{tool}\"\n    run \"{{{{ tool }}}} x\"\n    shell \"none\"\n}}\n"),
        )
        .unwrap();
        let c = Test::new().dir(p).args(["plan", "v.kdl"]).run();
        assert!(
            c.status != 0 && c.stderr.contains(want),
            "{tool}: {}",
            c.stderr
        );
    }
    // a step only a shell lane runs may use the shell; one a `shell "none"` lane runs may not
    for (lanes, status) in [("B", 0), ("A", 2), ("A,B", 2)] {
        std::fs::write(
            p.join("l.kdl"),
            format!("experiment t\nbench b {{\n    run \"printf a | cat\" lanes=\"{lanes}\"\n    run \"printf a\"\n    lane A shell=\"none\"\n    lane B\n}}\n"),
        )
        .unwrap();
        let c = Test::new()
            .dir(p)
            .args(["check", "l.kdl"])
            .run()
            .status(status);
        assert!(
            status == 0 || c.stderr.contains("uses `|`, which needs a shell"),
            "{}",
            c.stderr
        );
    }
    // two no-ops: flagged below 5 ms; no ratio while σ is as large as the mean
    std::fs::write(
        p.join("z.kdl"),
        "experiment t\nbench b {\n    param c \"true\"\n    run \"{{ c }}\"\n    lane a c=\"true\"\n    lane b c=\":\"\n    repeat 3\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(p)
        .args(["run", "z.kdl", "--output", "zz"])
        .run()
        .status(0);
    let s = std::fs::read_to_string(p.join("zz/summary.md")).unwrap();
    assert!(s.contains("is below 5 ms"), "{s}");
}

#[test]
fn expr_stop_on_a_copy_of_a_live_run_leaves_that_run_alone() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("t.kdl"),
        "experiment t\nbench b {\n    run \"sleep 30\"\n}\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        // killed below: its processes are left for `expr stop`, not its sentinel
        .env("EXPR_NO_SENTINEL", "1")
        .args(["run", "t.kdl", "--output", "out"])
        .current_dir(p)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(p.join("out/journal.jsonl"))
        .unwrap_or_default()
        .contains("\"event\":\"process\"")
    {
        assert!(std::time::Instant::now() < end);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let cp = std::process::Command::new("cp")
        .args(["-r", "out", "copy"])
        .current_dir(p)
        .status()
        .unwrap();
    assert!(cp.success());
    let s = Test::new().dir(p).args(["stop", "copy"]).run();
    let all = format!("{}{}", s.stdout, s.stderr);
    assert!(
        all.contains("belongs to the run in") && all.contains("left alone"),
        "{all}"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "the live run was stopped"
    );
    // its own directory stops it
    Test::new().dir(p).args(["stop", "out"]).run();
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_resumed_run_subtracts_the_spawn_time_its_first_points_were_measured_with() {
    let d = tempfile::tempdir().unwrap();
    // lane b fails until the file `fixed` exists
    let kdl = "experiment r\nbench b {\n    param f \"t.kdl\"\n    run \"test -e {{ f }} && sleep 0.01\"\n    lane a f=\"t.kdl\"\n    lane b f=\"fixed\"\n}\n";
    run(d.path(), kdl, 3);
    std::fs::write(d.path().join("fixed"), "").unwrap();
    let resumed = Test::new()
        .dir(d.path())
        .args(["run", "--resume", "out"])
        .run()
        .status(0);
    assert!(
        resumed
            .stderr
            .contains("as measured by the run being resumed"),
        "{}",
        resumed.stderr
    );
    let cal: Vec<Value> = journal(d.path())
        .into_iter()
        .filter(|e| e["event"] == "calibration")
        .collect();
    assert_eq!(cal.len(), 2, "{cal:?}");
    assert_eq!(cal[0]["mean_ms"], cal[1]["mean_ms"]);
    assert_eq!(cal[1]["measured_at"], cal[0]["at"]);
    // the resumed point's time is its wall time less that same spawn time
    let point = journal(d.path())
        .into_iter()
        .rev()
        .find(|e| e["event"] == "point" && e["lane"] == "b")
        .unwrap();
    let wall = point["timing"]["wall_ms"].as_f64().unwrap();
    let mean = cal[0]["mean_ms"].as_f64().unwrap();
    assert_eq!(point["timing"]["shell_overhead_ms"].as_f64(), Some(mean));
    let rows = metrics(d.path());
    let r = rows
        .iter()
        .find(|r| &r[2] == "b" && &r[5] == "time_ms")
        .unwrap();
    let t: f64 = r[8].parse().unwrap();
    assert!(
        (t - (wall - mean)).abs() < 0.01,
        "time_ms {t}, wall {wall}, spawn {mean}"
    );
}

/// A calibration run that fails after two samples: nothing is subtracted (no partial mean), the
/// warning says why and after how many runs, and the point's time_ms is its plain wall time.
#[test]
fn a_calibration_run_that_fails_midway_subtracts_nothing_and_says_why() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // BASH_ENV that counts the calibration's `bash -c true` runs and fails the fourth
    // (one warmup, two samples, then the failure)
    std::fs::write(
        p.join("fail.sh"),
        format!(
            "if [ \"$BASH_EXECUTION_STRING\" = true ]; then n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; [ $n -ge 4 ] && exit 3; fi\n",
            c = p.join("count").display()
        ),
    )
    .unwrap();
    std::fs::write(
        p.join("t.kdl"),
        "experiment t\nbench b {\n    run \"sleep 0.01\"\n    repeat 2\n}\n",
    )
    .unwrap();
    let ran = Test::new()
        .dir(p)
        .env("BASH_ENV", &p.join("fail.sh").display().to_string())
        .args(["run", "t.kdl", "--output", "out"])
        .run()
        .status(0);
    assert!(
        ran.stderr.contains(
            "could not be measured (`bash -c true` exited with 3 (log: out/logs/calibrate-shell-local.log), after 2 runs); nothing is subtracted there"
        ),
        "{}",
        ran.stderr
    );
    assert_eq!(
        std::fs::read_to_string(p.join("count")).unwrap().trim(),
        "4"
    );
    let events = journal(p);
    assert!(!events.iter().any(|e| e["event"] == "calibration"));
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("out/summary.json")).unwrap())
            .unwrap();
    let points = s["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for pt in points {
        let m = |n: &str| {
            pt["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == n)
                .unwrap_or_else(|| panic!("{n}: {pt}"))["value"]
                .as_f64()
                .unwrap()
        };
        assert_eq!(m("time_ms"), m("wall_ms"), "nothing subtracted: {pt}");
        assert!(m("time_ms") >= 10.0);
    }
}

/// A calibration run starts as a measured step does: with the run's mark, and its process
/// group recorded once it has run a moment. One that hangs when expr is killed (SIGKILL: no
/// clean-up) is then stopped by `expr stop`; a step's record (written once the step has run a
/// moment, or as it ends) still comes before its step event, with the leader's start time
/// while the leader lives.
#[test]
fn a_hanging_calibration_of_a_killed_run_is_found_by_expr_stop() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("hang.sh"),
        "case \"$BASH_EXECUTION_STRING\" in true) exec sleep 1235.5;; esac\n",
    )
    .unwrap();
    std::fs::write(
        p.join("t.kdl"),
        "experiment t\nbench b {\n    run \"sleep 0.01\"\n    repeat 1\n}\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        // killed below: its processes are left for `expr stop`, not its sentinel
        .env("EXPR_NO_SENTINEL", "1")
        .args(["run", "t.kdl", "--output", "out"])
        .env("BASH_ENV", p.join("hang.sh"))
        .current_dir(p)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let cal = loop {
        let found = std::fs::read_to_string(p.join("out/journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["event"] == "process" && e["step"] == "calibrate");
        if let Some(e) = found {
            break e;
        }
        assert!(
            std::time::Instant::now() < end,
            "the hanging calibration run was never recorded"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // recorded while it ran: its leader's start time, for `expr stop` to know it by
    assert!(cal["start"].as_u64().is_some(), "{cal}");
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let pgid = cal["pgid"].as_i64().unwrap();
    assert!(expr::exec::backend::host::group_alive(pgid), "{cal}");
    let stop = Test::new().dir(p).args(["stop", "out"]).run();
    let said = format!("{}{}", stop.stdout, stop.stderr);
    assert!(said.contains("stopped `calibrate`"), "{said}");
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while expr::exec::backend::host::group_alive(pgid) {
        assert!(std::time::Instant::now() < end, "calibration run survived");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // without the hang: every step's record comes before its step event, with the leader's
    // start time when the step outlived the moment its record waits for
    std::fs::write(
        p.join("u.kdl"),
        "experiment t\nbench b {\n    param d 0.001\n    run \"sleep {{ d }}\"\n    lane quick d=0.001\n    lane slow d=0.3\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(p)
        .args(["run", "u.kdl", "--output", "uu"])
        .run()
        .status(0);
    let events: Vec<Value> = std::fs::read_to_string(p.join("uu/journal.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for run in ["quick_r0", "slow_r0"] {
        let step = format!("run1-{run}");
        let at = |kind: &str| {
            events
                .iter()
                .position(|e| e["event"] == kind && e["step"] == step.as_str())
                .unwrap_or_else(|| panic!("no {kind} event for {step}"))
        };
        assert!(at("process") < at("step"), "{step}");
    }
    let slow = events
        .iter()
        .find(|e| e["event"] == "process" && e["step"] == "run1-slow_r0")
        .unwrap();
    assert!(slow["start"].as_u64().is_some(), "{slow}");
    // calibration runs slow to end (but ending) are recorded, and closed as they end: `expr
    // stop` later has nothing of them to act on (their group ids may be another's by then)
    std::fs::write(
        p.join("slow.sh"),
        "case \"$BASH_EXECUTION_STRING\" in true) sleep 0.03;; esac\n",
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "t.kdl", "--output", "vv"])
        .env("BASH_ENV", p.join("slow.sh"))
        .current_dir(p)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let events: Vec<Value> = std::fs::read_to_string(p.join("vv/journal.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let opened = events
        .iter()
        .filter(|e| e["event"] == "process" && e["step"] == "calibrate")
        .count();
    let closed = events
        .iter()
        .filter(|e| e["event"] == "stopped" && e["step"] == "calibrate" && e["gone"] == true)
        .count();
    assert!(
        opened >= 6 && opened == closed,
        "{opened} recorded, {closed} closed"
    );
    let stop = Test::new().dir(p).args(["stop", "vv"]).run();
    let said = format!("{}{}", stop.stdout, stop.stderr);
    assert!(!said.contains("calibrate"), "{said}");
}

/// `until-decided` (issue 40): each lane against the first stops as soon as their comparison is
/// decided — a clear difference after `min` runs each, two equal lanes once the interval of their
/// ratio fits ±2 % — with the rule's confidence over its looks said in the reason.
#[test]
fn adaptive_repeats_until_decided_stop_a_lane_pair_once_its_comparison_is_decided() {
    let d = tempfile::tempdir().unwrap();
    // base: 100, 101, 100, 101, …; slower: 120, 121, …; same: as base
    let ran = run(
        d.path(),
        "experiment t {\n    order \"interleave\"\n}\nbench b {\n    param base 100\n    run \"echo v={{ base + repeat % 2 }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane base base=100\n    lane slower base=120\n    lane same base=100\n    repeat min=3 max=10 until-decided=2\n}\n",
        0,
    );
    let m = common::manifest_by_name(&d.path().join("out"));
    let status = |id: &str| {
        m.iter()
            .find(|r| &r[0] == id)
            .map(|r| r[13].to_string())
            .unwrap()
    };
    let ran_of = |lane: &str| {
        (0..10)
            .filter(|r| status(&format!("{lane}_r{r}")) == "ok")
            .count()
    };
    // 20 % apart: decided at the first look, after 3 runs each
    assert_eq!(ran_of("slower"), 3, "{}", ran.stderr);
    // the same values: judged at 1 − 5 %/16 (16 looks: before each run of either lane, runs 3
    // to 10), at 3 runs (100, 101, 100 on both; df 4, se 0.0047, t 6.36) the interval of the
    // ratio is −2.95 %…+3.04 %, at 4 runs (100, 101, 100, 101; df 6, se 0.0041, t 4.76)
    // −1.92 %…+1.95 %: decided within ±2 % after 4
    assert_eq!(ran_of("same"), 4, "{}", ran.stderr);
    // the first lane runs until every comparison with it is decided
    assert_eq!(ran_of("base"), 4, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("slower_r3 skipped: not needed: slower vs base: decided: a difference, 99.7% interval [+")
            && ran.stderr.contains("(α 5% over 16 looks) after 3 runs"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("same_r4 skipped: not needed: same vs base: decided: within ±2%"),
        "{}",
        ran.stderr
    );
}

/// `collect "csv"` with a timing block: a rank that is no whole number is an error at its
/// line (it was read as rank 0, and the same-work figure summed it with rank 0's rows), and a
/// bad batch size leaves the same-work figure missing, said at its line.
#[test]
fn a_csv_rank_or_batch_size_that_is_no_number_is_named_never_rank_0() {
    let d = tempfile::tempdir().unwrap();
    let kdl = |rows: &str| {
        format!(
            "experiment t\nbench b {{\n    run \"printf 'batch_size,rank,load_ms,b_ms,step_ms,rate\\\\n{rows}' > {{{{ outdir }}}}/r.csv\"\n    collect \"csv\" path=\"r.csv\" metric=\"rate\" {{\n        stages \"load_ms\" \"b_ms\"\n        total \"step_ms\"\n        data-loading \"load_ms\"\n    }}\n    repeat 1\n}}\n"
        )
    };
    let rows = "8,0,1,1,2,5\\\\n8,0,1,1,2,5\\\\n8,oops,1,1,2,5\\\\n";
    run(d.path(), &kdl(rows), 3);
    let m = common::csv_by_name(&d.path().join("out/manifest.csv"));
    assert!(
        m[0]["reason"].contains("r.csv:4: `rank`: \"oops\" is not a number"),
        "{m:?}"
    );
    let e = tempfile::tempdir().unwrap();
    run(e.path(), &kdl("8,0,1,1,2,5\\\\n8,1.5,1,1,2,5\\\\n"), 3);
    let m = common::csv_by_name(&e.path().join("out/manifest.csv"));
    assert!(
        m[0]["reason"].contains("r.csv:3: `rank`: 1.5 is not a whole number"),
        "{m:?}"
    );
    let f = tempfile::tempdir().unwrap();
    run(f.path(), &kdl("8,0,1,1,2,5\\\\noops,0,1,1,2,5\\\\n"), 0);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.path().join("out/summary.json")).unwrap())
            .unwrap();
    let text = s.to_string();
    assert!(
        text.contains("r.csv:3: `batch_size`: \\\"oops\\\" is not a number"),
        "{text}"
    );
}

/// `max_rss_mib` is the command's peak, or not given: `wait4` counts the memory the process
/// held as a fork of expr until its exec, so every command read as at least expr's ~25 MiB
/// (`true`: 26 MiB, where /usr/bin/time says 1). A command that peaks at 200 MiB reads so; a
/// small one has no number, the floor is said, and an `expect` on it says why it cannot judge.
#[test]
fn max_rss_is_the_commands_peak_or_not_given() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("m.kdl"),
        "experiment m\nbench m {\n    param mb 1\n    run \"python3 -c 'b = bytearray({{ mb }} * 1048576); b[::4096] = b\\\"x\\\" * len(b[::4096])'\"\n    sweep mb 1 200\n    expect m max_rss_mib max=10\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(d.path())
        .args(["run", "m.kdl", "--output", "out"])
        .run()
        .status(expr::util::exit_codes::EXPECTATION);
    let rows = common::csv_by_name(&d.path().join("out/metrics.csv"));
    let rss: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| r["metric"] == "max_rss_mib")
        .map(|r| (r["run_id"].to_string(), r["value"].parse().unwrap()))
        .collect();
    assert_eq!(rss.len(), 1, "{rss:?}");
    assert_eq!(rss[0].0, "m_mb200_r0");
    assert!(rss[0].1 >= 200.0 && rss[0].1 < 400.0, "{rss:?}");
    // mb=1: the peak is only bounded by expr's ~25 MiB, above max=10: not judged met
    assert!(
        r.stderr.contains("at m mb=1: mean at most 2")
            && r.stderr.contains("(n=1; 1 of them peaked below the memory of the process that started the command, counted at it): not known to meet the bound"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("at m mb=200: mean 2"), "{}", r.stderr);
    // a bound above that memory is met by a peak below it
    std::fs::write(
        d.path().join("s.kdl"),
        "experiment s\nbench s {\n    run \"echo ok\"\n    expect s max_rss_mib max=1000\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "s.kdl", "--output", "out2"])
        .run()
        .status(0);
}

/// A step that took less than the shell spawn time subtracted from it: its time is held at 0,
/// as hyperfine holds it, and the source says the difference and that it was held (it named a
/// difference whose value was not the one shown); the lane's warning says what to do.
/// Hand-made: the journal's wall time set 0.25 ms below the measured spawn time, and the CPU
/// times 0.5 ms below theirs.
#[test]
fn a_time_below_the_shell_spawn_time_is_held_at_0_and_said() {
    let d = tempfile::tempdir().unwrap();
    run(
        d.path(),
        "experiment h\nbench b {\n    run \"sleep 0.01\"\n}\n",
        0,
    );
    let path = d.path().join("out/journal.jsonl");
    let mut lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = lines
        .iter()
        .position(|e| e["event"] == "point")
        .expect("a point");
    let t = &mut lines[at]["timing"];
    let o = t["shell_overhead_ms"].as_f64().unwrap();
    t["wall_ms"] = serde_json::json!(o - 0.25);
    for k in ["user", "sys"] {
        let so = t[format!("shell_overhead_{k}_ms")].as_f64().unwrap();
        t[format!("{k}_ms")] = serde_json::json!(so - 0.5);
    }
    lines[at]["value"] = serde_json::json!(0.0);
    let text: String = lines.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&path, text).unwrap();
    Test::new()
        .dir(d.path())
        .args(["report", "out"])
        .run()
        .status(0);
    let rows = metrics(d.path());
    let row = |k: &str| rows.iter().find(|r| &r[5] == k).unwrap().clone();
    let line = at + 1;
    assert_eq!(&row("time_ms")[8], "0");
    assert_eq!(
        &row("time_ms")[9],
        format!("journal.jsonl:{line} (wall_ms − shell_overhead_ms = -0.250, held at 0 as hyperfine does)")
    );
    assert_eq!(&row("user_ms")[8], "0");
    assert_eq!(
        &row("user_ms")[9],
        format!("journal.jsonl:{line} (user_ms − shell_overhead_user_ms = -0.500, held at 0 as hyperfine does)")
    );
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    assert!(
        summary.contains("⚠ lane b: the mean 0.0 µs is below 5 ms (some values were negative after subtracting the shell's start-up time and are 0)"),
        "{summary}"
    );
}

/// An adaptive group's "reached max" is said from every run into the directory: a resume
/// keeps the points an earlier run measured, and their note (helper 88: only the last run's
/// were said, so an interrupted and resumed run lost some). A group whose last run was
/// interrupted did not reach max, and is not said to (helper 88). Here lane `b` signals expr
/// from its last repeat; the resume runs that repeat again.
#[test]
fn reached_max_is_said_across_a_resume_and_never_of_an_interrupted_last_run() {
    let d = tempfile::tempdir().unwrap();
    let flag = d.path().join("interrupted-once");
    // each lane's values never settle: 10, 20, 30 (CV 50 %)
    let kdl = format!(
        "experiment ad\nbench b {{\n    run \"{{% if lane == 'b' and repeat == 2 %}}[ -e {f} ] || {{ touch {f}; kill -INT $PPID; sleep 5; }}; {{% endif %}}echo rate=$(( ({{{{ repeat }}}} + 1) * 10 ))\"\n    collect regex pattern=\"rate=([0-9]+)\"\n    lane a\n    lane b\n    repeat min=3 max=3 until-cv=1\n}}\n",
        f = flag.display()
    );
    let first = run(d.path(), &kdl, 130);
    assert!(
        first.stderr.contains("b_r2 interrupted"),
        "{}",
        first.stderr
    );
    assert!(
        !first.stderr.contains("lane b reached max"),
        "{}",
        first.stderr
    );
    assert!(
        !journal(d.path())
            .iter()
            .any(|e| e["event"] == "adaptive" && e["lane"] == "b"),
        "an interrupted last run reached no max"
    );
    Test::new()
        .dir(d.path())
        .args(["run", "--resume", "out"])
        .run()
        .status(0);
    let summary = std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    for lane in ["a", "b"] {
        assert!(
            summary.contains(&format!(
                "adaptive repeats: lane {lane} reached max=3 runs without converging"
            )),
            "{lane}: {summary}"
        );
    }
    // said once each
    assert_eq!(summary.matches("adaptive repeats:").count(), 2, "{summary}");
}

/// A "reached max" note stands until its point runs again, under the rule that made it: a
/// `--force` re-run that converged, or a looser `until-cv` that the kept points now meet, says
/// nothing (helper 89: the first run's note, CV 51.64 %, was still said).
#[test]
fn reached_max_is_not_said_once_the_group_ran_again_or_its_rule_is_met() {
    let d = tempfile::tempdir().unwrap();
    let kdl = |cmd: &str, cv: u32| {
        format!(
            "experiment ad\nbench b {{\n    run \"{cmd}\"\n    collect regex pattern=\"rate=([0-9]+)\"\n    lane a\n    repeat min=2 max=4 until-cv={cv}\n}}\n"
        )
    };
    // 10, 20, 30, 40: CV 51.64 %
    let wide = "echo rate=$(( ({{ repeat }} + 1) * 10 ))";
    run(d.path(), &kdl(wide, 10), 0);
    let summary = || std::fs::read_to_string(d.path().join("out/summary.md")).unwrap();
    assert!(
        summary()
            .contains("adaptive repeats: lane a reached max=4 runs without converging (CV 51.64%"),
        "{}",
        summary()
    );
    // kept points, a rule they meet: nothing to say
    std::fs::write(d.path().join("t.kdl"), kdl(wide, 60)).unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "t.kdl", "--resume", "out", "--force"])
        .run()
        .status(0);
    assert!(!summary().contains("adaptive repeats"), "{}", summary());
    // back to the strict rule, every point run again and converged at max (120, 100, 100,
    // 100 … CV 9.52 % after 4; 9.52 ≤ 10): the first run's note is not said
    std::fs::write(
        d.path().join("t.kdl"),
        kdl("echo rate=$(( {{ repeat }} == 1 ? 120 : 100 ))", 10),
    )
    .unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "t.kdl", "--resume", "out", "--force"])
        .run()
        .status(0);
    assert!(!summary().contains("adaptive repeats"), "{}", summary());
}
