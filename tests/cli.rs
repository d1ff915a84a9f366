//! The first hour: starters, completions, listing result directories, help that explains itself.

mod common;

use common::Test;

#[test]
fn every_starter_checks_clean_and_plans() {
    let dir = tempfile::tempdir().unwrap();
    for kind in expr::kinds::ALL.iter().map(|k| k.node) {
        let file = format!("{kind}.kdl");
        Test::new()
            .dir(dir.path())
            .args(["init", kind, &file])
            .run()
            .status(0);
        let c = Test::new()
            .dir(dir.path())
            .args(["check", &file])
            .run()
            .status(0);
        assert!(
            c.stderr.contains("0 errors, 0 warnings"),
            "{kind}: {}",
            c.stderr
        );
        let p = Test::new()
            .dir(dir.path())
            .args(["plan", &file])
            .run()
            .status(0);
        assert!(p.stdout.contains("## point 1/"), "{kind}: {}", p.stdout);
        // commented: a reader learns the language from it
        let text = std::fs::read_to_string(dir.path().join(&file)).unwrap();
        assert!(
            text.lines()
                .filter(|l| l.trim_start().starts_with("//"))
                .count()
                >= 2
        );
        // a commented example node (`// lane …`), uncommented as written, checks clean too
        // (the RecStore starter offered `RecStore-BRPC-预取4` without its prefetch-depth)
        let examples = ["// lane ", "// sweep ", "// param ", "// repeat "];
        let uncommented: String = text
            .lines()
            .map(|l| {
                let t = l.trim_start();
                match examples.iter().any(|e| t.starts_with(e)) {
                    true => l.replacen("// ", "", 1),
                    false => l.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let all = format!("{kind}-all.kdl");
        std::fs::write(dir.path().join(&all), uncommented).unwrap();
        let c = Test::new().dir(dir.path()).args(["check", &all]).run();
        assert_eq!(
            c.status, 0,
            "{kind}, its examples uncommented: {}",
            c.stderr
        );
    }
    // an existing file is not replaced without --force
    let again = Test::new()
        .dir(dir.path())
        .args(["init", "bench", "bench.kdl"])
        .run();
    assert_eq!(again.status, 2);
    assert!(again.stderr.contains("--force"), "{}", again.stderr);
    let wrong = Test::new().dir(dir.path()).args(["init", "recstore"]).run();
    assert_eq!(wrong.status, 2);
    assert!(
        wrong
            .stderr
            .contains("a similar value exists: 'recstore-e2e'"),
        "{}",
        wrong.stderr
    );
}

#[test]
fn the_bench_starter_runs_here_and_ls_lists_its_result_directory() {
    let dir = tempfile::tempdir().unwrap();
    Test::new()
        .dir(dir.path())
        .args(["init", "bench"])
        .run()
        .status(0);
    Test::new().dir(dir.path()).args(["ls"]).run();
    let ran = Test::new()
        .dir(dir.path())
        .args(["run", "bench.kdl", "--output", "results/first"])
        .run()
        .status(0);
    assert!(ran.stderr.contains("[12/12]"), "{}", ran.stderr);
    // a second, interrupted-looking one: a journal without an end
    std::fs::create_dir_all(dir.path().join("results/second")).unwrap();
    let header = std::fs::read_to_string(dir.path().join("results/first/journal.jsonl"))
        .unwrap()
        .lines()
        .find(|l| l.contains("\"event\":\"header\""))
        .unwrap()
        .replace("2026", "2099");
    std::fs::write(
        dir.path().join("results/second/journal.jsonl"),
        header + "\n",
    )
    .unwrap();
    // a run killed before its report: the journal alone counts its points
    std::fs::create_dir_all(dir.path().join("results/killed")).unwrap();
    std::fs::copy(
        dir.path().join("results/first/journal.jsonl"),
        dir.path().join("results/killed/journal.jsonl"),
    )
    .unwrap();
    let ls = Test::new().dir(dir.path()).args(["ls"]).run().status(0);
    let killed = ls
        .stdout
        .lines()
        .find(|l| l.contains("results/killed"))
        .unwrap();
    assert!(killed.contains("12/0/0"), "{}", ls.stdout);
    // a garbage line in a journal is said, not passed over; a result directory whose journal
    // is gone, or is a FIFO (not opened: it would block), is listed
    let mut j = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("results/killed/journal.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut j, b"not json\n").unwrap();
    std::fs::create_dir_all(dir.path().join("results/gone")).unwrap();
    std::fs::copy(
        dir.path().join("results/first/manifest.csv"),
        dir.path().join("results/gone/manifest.csv"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("results/fifo")).unwrap();
    let fifo = dir.path().join("results/fifo/journal.jsonl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::fs::create_dir_all(dir.path().join("results/other")).unwrap();
    let ls = Test::new().dir(dir.path()).args(["ls"]).run().status(0);
    assert!(
        ls.stderr.contains(
            "results/killed/journal.jsonl: 1 line(s) are no event and are left out (line "
        ),
        "{}",
        ls.stderr
    );
    let row = |d: &str| {
        ls.stdout
            .lines()
            .find(|l| l.contains(d))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("results/gone").contains("no journal"), "{}", ls.stdout);
    assert!(
        row("results/fifo").contains("journal not a file"),
        "{}",
        ls.stdout
    );
    assert!(
        row("results/other").is_empty(),
        "a folder that is no run: {}",
        ls.stdout
    );
    for d in ["killed", "gone", "fifo", "other"] {
        std::fs::remove_dir_all(dir.path().join("results").join(d)).unwrap();
    }
    // a damaged journal is listed, and a name with a newline stays on its line
    std::fs::create_dir_all(dir.path().join("results/junk")).unwrap();
    std::fs::write(
        dir.path().join("results/junk/journal.jsonl"),
        "\u{0}garbage\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("results/nl")).unwrap();
    let nl = std::fs::read_to_string(dir.path().join("results/first/journal.jsonl"))
        .unwrap()
        .replace(
            "\"experiment\":\"my-bench\"",
            "\"experiment\":\"my\\nbench\\u001b[31m\"",
        );
    std::fs::write(dir.path().join("results/nl/journal.jsonl"), nl).unwrap();
    let ls = Test::new().dir(dir.path()).args(["ls"]).run().status(0);
    assert!(
        ls.stdout
            .lines()
            .any(|l| l.contains("results/junk") && l.contains("unreadable journal")),
        "{}",
        ls.stdout
    );
    let row = ls
        .stdout
        .lines()
        .find(|l| l.contains("results/nl"))
        .unwrap();
    assert!(row.contains("my\\nbench\\u{1b}[31m"), "{}", ls.stdout);
    assert!(!ls.stdout.contains('\u{1b}'), "{}", ls.stdout);
    std::fs::remove_dir_all(dir.path().join("results/junk")).unwrap();
    std::fs::remove_dir_all(dir.path().join("results/nl")).unwrap();
    let ls = Test::new().dir(dir.path()).args(["ls"]).run().status(0);
    let lines: Vec<&str> = ls.stdout.lines().collect();
    assert!(lines[0].starts_with("started"), "{}", ls.stdout);
    assert!(
        lines[1].contains("results/second")
            && lines[1].contains("incomplete")
            && lines[1].contains("0/0/12"),
        "newest first: {}",
        ls.stdout
    );
    assert!(
        lines[2].contains("results/first")
            && lines[2].contains("12/0/0")
            && lines[2].contains(" ok "),
        "{}",
        ls.stdout
    );
    let json = Test::new()
        .dir(dir.path())
        .args(["ls", "--format", "json"])
        .run()
        .status(0);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v[1]["experiment"], "my-bench");
    assert_eq!(v[1]["ok"], 12);
}

#[test]
fn completions_and_help_explain_themselves() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Test::new().args(["completions", shell]).run().status(0);
        assert!(
            out.stdout.contains("plan") && out.stdout.contains("check"),
            "{shell}"
        );
    }
    let help = Test::new().args(["--help"]).run().status(0);
    for needle in [
        "Exit codes:",
        "4    preflight failed",
        "POSIX expr",
        "init",
        "ls",
    ] {
        assert!(
            help.stdout.contains(needle),
            "--help lacks {needle}: {}",
            help.stdout
        );
    }
    // every argument of every subcommand has help text
    for sub in [
        "run",
        "plan",
        "check",
        "report",
        "stop",
        "init",
        "ls",
        "completions",
    ] {
        let h = Test::new().args([sub, "--help"]).run().status(0);
        for line in h.stdout.lines().filter(|l| l.starts_with("  ")) {
            let t = line.trim();
            if t.starts_with('-') || t.starts_with('[') || t.starts_with('<') {
                let has_text = t.split("  ").filter(|p| !p.trim().is_empty()).count() >= 2;
                assert!(has_text, "`expr {sub}`: no help for `{t}`");
            }
        }
    }
}

/// `expr init -` prints the default starter; the "next:" hint quotes a file name as it must be
/// typed (a space, a leading `-`).
#[test]
fn init_to_stdout_and_a_next_hint_that_can_be_pasted() {
    let out = Test::new().args(["init", "-"]).run().status(0);
    assert!(out.stdout.contains("bench "), "{}", out.stdout);
    let dir = tempfile::tempdir().unwrap();
    let made = Test::new()
        .dir(dir.path())
        .args(["init", "bench", " sp ace.kdl"])
        .run()
        .status(0);
    assert!(
        made.stderr.contains("`expr check ' sp ace.kdl'`"),
        "{}",
        made.stderr
    );
    let made = Test::new()
        .dir(dir.path())
        .args(["init", "bench", "--", "-x.kdl"])
        .run()
        .status(0);
    assert!(
        made.stderr.contains("`expr check ./-x.kdl`"),
        "{}",
        made.stderr
    );
    Test::new()
        .dir(dir.path())
        .args(["check", "./-x.kdl"])
        .run()
        .status(0);
    // a link is there, dangling or not (it was written through without --force, creating its
    // target); with --force it is written through as a shell's `>` would, and that is said
    std::os::unix::fs::symlink("nowhere.kdl", dir.path().join("dangling.kdl")).unwrap();
    let refused = Test::new()
        .dir(dir.path())
        .args(["init", "bench", "dangling.kdl"])
        .run()
        .status(2);
    assert!(
        refused.stderr.contains("dangling.kdl exists"),
        "{}",
        refused.stderr
    );
    assert!(!dir.path().join("nowhere.kdl").exists());
    std::fs::write(dir.path().join("target.txt"), "mine").unwrap();
    std::os::unix::fs::symlink("target.txt", dir.path().join("link.kdl")).unwrap();
    let forced = Test::new()
        .dir(dir.path())
        .args(["init", "bench", "link.kdl", "--force"])
        .run()
        .status(0);
    assert!(
        forced
            .stderr
            .contains("wrote link.kdl (a link: the file written is target.txt)"),
        "{}",
        forced.stderr
    );
}

/// `--resume` names what is wrong with its directory: missing, or not a result directory.
#[test]
fn resume_of_a_missing_or_foreign_directory_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let gone = Test::new()
        .dir(dir.path())
        .args(["run", "--resume", "results/nonexist"])
        .run()
        .status(2);
    assert!(
        gone.stderr.contains("no such result directory"),
        "{}",
        gone.stderr
    );
    std::fs::create_dir(dir.path().join("plain")).unwrap();
    let plain = Test::new()
        .dir(dir.path())
        .args(["run", "--resume", "plain"])
        .run()
        .status(2);
    assert!(
        plain.stderr.contains("not an expr result directory"),
        "{}",
        plain.stderr
    );
}

/// `expr completions bash | true`: a reader that goes away is not a panic (BrokenPipe, exit
/// 101 before).
#[test]
fn completions_into_a_closed_pipe_exit_0_without_a_panic() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // close the read end before anything is read
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A mistyped `--only` value or history name gets the values that exist and the nearest one.
#[test]
fn only_and_history_suggest_what_exists() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("z.kdl"),
        "experiment compress\nbench b {\n    lane zstd1\n    lane zstd9\n    sweep size 4 16\n    run \"echo v={{ size }}\"\n    collect regex pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(d.path())
        .args(["plan", "z.kdl", "--only", "lane=zstd3"])
        .run();
    assert_eq!(r.status, 2);
    assert!(
        r.stderr
            .contains("`lane` takes `zstd1`, `zstd9` — did you mean `lane=zstd1`?"),
        "{}",
        r.stderr
    );
    Test::new()
        .dir(d.path())
        .args(["run", "z.kdl", "--output", "results/a"])
        .run()
        .status(0);
    let h = Test::new().dir(d.path()).args(["history", "compres"]).run();
    assert_ne!(h.status, 0);
    assert!(
        h.stderr.contains("did you mean `compress`?"),
        "{}",
        h.stderr
    );
}

/// The bench starter names its metric and direction: compare of two of its runs gives arrows.
#[test]
fn the_bench_starter_compares_with_a_direction() {
    let d = tempfile::tempdir().unwrap();
    Test::new()
        .dir(d.path())
        .args(["init", "bench"])
        .run()
        .status(0);
    for out in ["results/a", "results/b"] {
        Test::new()
            .dir(d.path())
            .args(["run", "bench.kdl", "--output", out, "--only", "n=100000"])
            .run()
            .status(0);
    }
    let c = Test::new()
        .dir(d.path())
        .args(["compare", "results/a", "results/b"])
        .run()
        .status(0);
    assert!(c.stdout.contains("| ms ↓ |"), "{}", c.stdout);
}

/// `--quiet`: no per-point lines, only the first and the last line (and warnings or errors).
#[test]
fn quiet_says_where_the_results_are_and_nothing_per_point() {
    let d = tempfile::tempdir().unwrap();
    Test::new()
        .dir(d.path())
        .args(["init", "bench"])
        .run()
        .status(0);
    let r = Test::new()
        .dir(d.path())
        .args([
            "run",
            "bench.kdl",
            "--output",
            "results/q",
            "--quiet",
            "--only",
            "n=100000",
        ])
        .run()
        .status(0);
    assert!(!r.stderr.contains("[1/"), "{}", r.stderr);
    assert!(
        r.stderr.contains("expr: results in results/q (exit 0)"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.lines().count() <= 3, "{}", r.stderr);
}

/// `expr init` alone is POSIX expr's string; `--help` says KIND is required (no default that
/// the lone form would contradict) and lists the kinds, which the shell completes.
#[test]
fn init_needs_its_kind_its_help_says_so_and_the_shell_completes_the_kinds() {
    let help = Test::new().args(["init", "--help"]).run().status(0);
    assert!(
        help.stdout
            .contains("Usage: expr init [OPTIONS] <KIND> [FILE]"),
        "{}",
        help.stdout
    );
    assert!(!help.stdout.contains("default: bench"), "{}", help.stdout);
    for k in ["bench", "recstore-e2e", "ep-bench", "dataset-rt"] {
        assert!(help.stdout.contains(k), "{k}: {}", help.stdout);
    }
    let lone = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .arg("init")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&lone.stdout), "init\n");
    let bash = Test::new().args(["completions", "bash"]).run().status(0);
    let init = bash
        .stdout
        .split("expr__subcmd__init)")
        .nth(1)
        .and_then(|s| s.lines().nth(1))
        .unwrap_or_default();
    assert!(
        init.contains("recstore-e2e ep-bench dataset-rt bench\""),
        "the hidden `-` is not offered: {init}"
    );
    // nor expr's internal entry points, in any shell
    for sh in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = Test::new().args(["completions", sh]).run().status(0);
        assert!(
            !script.stdout.contains("__task") && !script.stdout.contains("__watch"),
            "{sh}"
        );
    }
    let help = Test::new().args(["--help"]).run().status(0);
    assert!(!help.stdout.contains("__"), "{}", help.stdout);
}

/// hyperfine names a command by its text (or its `-n` name): a comma, more than 60 characters
/// or a second command alike make no other name in the summary and the exports (helper 80:
/// `cmd1`, `true (2)`), though the lanes need one.
#[test]
fn expr_bench_names_each_command_by_its_text_in_the_summary_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!("true {}", "x".repeat(70));
    let ran = Test::new()
        .dir(dir.path())
        .args(["bench", "echo a,b", "true", "true", &long, "-r", "1"])
        .args(["--export-json", "h.json", "--export-markdown", "h.md"])
        .args(["--output", "out", "--history", "h.sqlite"])
        .run()
        .status(0);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("h.json")).unwrap()).unwrap();
    let names: Vec<&str> = j["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo a,b", "true", "true", long.as_str()]);
    let md = std::fs::read_to_string(dir.path().join("h.md")).unwrap();
    assert!(
        md.contains("| `echo a,b` |") && !md.contains("cmd1"),
        "{md}"
    );
    assert!(
        ran.stderr.contains("Benchmark 1: echo a,b\n")
            && ran.stderr.contains(&format!("Benchmark 4: {long}\n"))
            && !ran.stderr.contains("true (2)"),
        "{}",
        ran.stderr
    );
    // a `-n` name stands for its command
    let named = Test::new()
        .dir(dir.path())
        .args([
            "bench", "echo a,b", "true", "-n", "comma", "-n", "t", "-r", "1",
        ])
        .args([
            "--export-json",
            "n.json",
            "--output",
            "out2",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(0);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("n.json")).unwrap()).unwrap();
    assert_eq!(j["results"][0]["command"], "comma", "{}", named.stderr);
    assert_eq!(j["results"][1]["command"], "t");
}

/// `expr bench -i` (hyperfine's `--ignore-failure`): a command that exits non-zero is timed,
/// its exit codes are in the JSON export as hyperfine writes them, and the summary warns; a
/// command killed by a signal is still not timed. Without `-i` the failing command has no time.
#[test]
fn expr_bench_i_times_commands_that_exit_non_zero_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let bench = |extra: &[&str], out: &str, code: i32| {
        Test::new()
            .dir(dir.path())
            .args([
                "bench",
                "echo x; exit 2",
                "kill -9 $$",
                "-r",
                "2",
                "-w",
                "1",
            ])
            .args(extra)
            .args(["--export-json", &format!("{out}.json"), "--output", out])
            .args(["--history", "h.sqlite"])
            .run()
            .status(code)
    };
    let json = |out: &str| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("{out}.json"))).unwrap(),
        )
        .unwrap()
    };
    let ran = bench(&["-i"], "i", 3);
    let j = json("i");
    assert_eq!(
        j["results"][0]["exit_codes"],
        serde_json::json!([2, 2]),
        "{}",
        ran.stderr
    );
    assert_eq!(j["results"][0]["times"].as_array().map(Vec::len), Some(2));
    assert_eq!(j["results"][1]["times"], serde_json::json!([]));
    assert!(
        ran.stderr
            .contains("  Warning: Ignoring non-zero exit code: 2 of 2 timed runs exited 2\n")
            && ran
                .stderr
                .contains("2 runs without a time (2 failed; see the report)"),
        "{}",
        ran.stderr
    );
    let plain = bench(&[], "plain", 3);
    assert_eq!(
        json("plain")["results"][0]["times"],
        serde_json::json!([]),
        "{}",
        plain.stderr
    );
    assert!(
        !plain.stderr.contains("Warning: Ignoring"),
        "{}",
        plain.stderr
    );
}

/// A warmup round that cannot start its program (`-N`, no shell) or that times out says so,
/// not "signal 1, SIGHUP" (helper 83).
#[test]
fn a_warmup_that_did_not_start_or_timed_out_names_no_signal() {
    let dir = tempfile::tempdir().unwrap();
    Test::new()
        .dir(dir.path())
        .args(["bench", "-q", "-N", "-r", "1", "-w", "1", "/nonexistent/x"])
        .args(["--output", "n", "--history", "h.sqlite"])
        .run()
        .status(3);
    let rows = common::csv_by_name(&dir.path().join("n/manifest.csv"));
    assert!(
        rows[0]["reason"].contains("warmup `warmup0-run1-")
            && rows[0]["reason"].contains("did not start (its log says why)"),
        "{rows:?}"
    );
    std::fs::write(
        dir.path().join("t.kdl"),
        "experiment t\nbench b {\n    warmup 1\n    run \"sleep 5\" timeout=1\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(dir.path())
        .args([
            "run",
            "t.kdl",
            "-q",
            "--output",
            "t",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(3);
    let rows = common::csv_by_name(&dir.path().join("t/manifest.csv"));
    assert!(
        rows[0]["reason"]
            .ends_with("timed out and was stopped; log: t/logs/warmup0-run1-b_r0-local.log"),
        "{rows:?}"
    );
    assert!(!rows[0]["reason"].contains("signal"), "{rows:?}");
    // a build that timed out, as the report's sentence says it
    std::fs::write(
        dir.path().join("b.kdl"),
        "experiment t\nbench b {\n    build \"sleep 5\" timeout=1\n    run \"true\"\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(dir.path())
        .args([
            "run",
            "b.kdl",
            "-q",
            "--output",
            "b",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(3);
    let summary = std::fs::read_to_string(dir.path().join("b/summary.md")).unwrap();
    assert!(
        summary.contains("The build `build1` failed on `local` (timed out and was stopped, log "),
        "{summary}"
    );
}

/// `expr bench CMD…`: hyperfine's form through the `bench` kind — a result directory like any
/// run's (on stdout), hyperfine's JSON and Markdown, and its summary.
#[test]
fn expr_bench_times_commands_hyperfine_style_with_a_result_directory() {
    let dir = tempfile::tempdir().unwrap();
    let ran = Test::new()
        .dir(dir.path())
        .args([
            "bench",
            "sleep 0.02",
            "sleep 0.06",
            "-r",
            "3",
            "-w",
            "1",
            "--export-json",
            "h.json",
            "--export-markdown",
            "h.md",
            "--output",
            "results/b",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(0);
    assert_eq!(ran.stdout, "results/b\n");
    assert!(dir.path().join("results/b/report.html").is_file());
    // the experiment `expr bench` wrote is kept in the result directory, and what names the
    // experiment's file names that copy (the temporary one is gone)
    let kept = std::fs::read_to_string(dir.path().join("results/b/bench.kdl")).unwrap();
    assert!(kept.contains("lane \"sleep 0.02\""), "{kept}");
    for f in ["commands.sh", "journal.jsonl", "report.html"] {
        let t = std::fs::read_to_string(dir.path().join("results/b").join(f)).unwrap();
        assert!(
            t.contains("results/b/bench.kdl") && !t.contains("expr-bench-"),
            "{f}: {t}"
        );
    }
    // the same --output again: refused, with advice `expr bench` can follow (it has no
    // --resume or --force of its own)
    let again = Test::new()
        .dir(dir.path())
        .args(["bench", "true", "--output", "results/b"])
        .run()
        .status(2);
    assert!(
        again.stderr.contains("error: results/b already exists; nothing in it is overwritten: `expr run --resume results/b` continues it (its points not finished run), or give `expr bench` another `--output`"),
        "{}",
        again.stderr
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("h.json")).unwrap()).unwrap();
    let r = j["results"].as_array().unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0]["command"], "sleep 0.02");
    assert_eq!(
        r[0]["times"].as_array().unwrap().len(),
        3,
        "warmup runs are not timed"
    );
    let (a, b) = (
        r[0]["mean"].as_f64().unwrap(),
        r[1]["mean"].as_f64().unwrap(),
    );
    assert!(
        (0.015..0.05).contains(&a) && (0.055..0.1).contains(&b),
        "{a} {b}"
    );
    let md = std::fs::read_to_string(dir.path().join("h.md")).unwrap();
    assert!(
        md.starts_with("| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |"),
        "{md}"
    );
    assert!(
        md.contains("| `sleep 0.02` |") && md.contains(" | 1.00 |"),
        "{md}"
    );
    assert!(
        ran.stderr.contains("Summary\n  `sleep 0.02` ran\n    ")
            && ran.stderr.contains("times faster than `sleep 0.06`"),
        "{}",
        ran.stderr
    );
    // no shell: the words run directly
    let none = Test::new()
        .dir(dir.path())
        .args([
            "bench",
            "true",
            "-N",
            "-r",
            "2",
            "--output",
            "results/n",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(0);
    assert!(none.stderr.contains("2 points"), "{}", none.stderr);
    // each command's mean ± σ and range, as hyperfine says them; -q: no line per run
    let quiet = Test::new()
        .dir(dir.path())
        .args([
            "bench",
            "true",
            "-N",
            "-r",
            "2",
            "-q",
            "--output",
            "results/q",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(0);
    assert!(
        quiet
            .stderr
            .contains("Benchmark 1: true\n  Time (mean ± σ):   ")
            && quiet.stderr.contains("  Range (min … max): ")
            && quiet.stderr.contains("    2 runs\n")
            && !quiet.stderr.contains("q_r0")
            && !quiet.stderr.contains("[1/2]")
            && !quiet.stderr.contains("took less than"),
        "{}",
        quiet.stderr
    );
    // through the shell, a command shorter than 5 ms is warned of, as hyperfine does
    let short = Test::new()
        .dir(dir.path())
        .args([
            "bench",
            "true",
            "-r",
            "2",
            "-q",
            "--output",
            "results/s",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(0);
    assert!(
        short
            .stderr
            .contains("warning: `true` took less than 5 ms a run: the shell's spawn time"),
        "{}",
        short.stderr
    );
    assert!(!ran.stderr.contains("took less than"), "{}", ran.stderr);
    // a lone `expr bench` is POSIX expr's string
    let lone = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .arg("bench")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&lone.stdout), "bench\n");
}

/// A bare `expr run`: the only experiment file here runs; several are listed, with how to pick.
#[test]
fn a_bare_run_runs_the_only_experiment_here_or_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let none = Test::new().dir(dir.path()).args(["run"]).run().status(2);
    assert!(
        none.stderr
            .contains("no *.kdl here or in experiments/ or examples/"),
        "{}",
        none.stderr
    );
    // where `expr init` writes: found (it was not, and the error said to run `expr init bench`);
    // a hidden file (an editor's) is not an experiment here
    let init = tempfile::tempdir().unwrap();
    std::fs::write(init.path().join(".swap.kdl"), "not kdl {").unwrap();
    std::fs::write(
        init.path().join("mine.kdl"),
        "experiment mine\nbench b {\n    run \"true\"\n}\n",
    )
    .unwrap();
    let here = Test::new()
        .dir(init.path())
        .args(["run", "--output", "results/x", "--history", "h.sqlite"])
        .run()
        .status(0);
    assert!(
        here.stderr
            .contains("expr: the only experiment file here is mine.kdl"),
        "{}",
        here.stderr
    );
    std::fs::create_dir_all(dir.path().join("experiments")).unwrap();
    std::fs::write(
        dir.path().join("experiments/one.kdl"),
        "experiment one\nbench b {\n    run \"true\"\n}\n",
    )
    .unwrap();
    let one = Test::new()
        .dir(dir.path())
        .args(["run", "--output", "results/x", "--history", "h.sqlite"])
        .run()
        .status(0);
    assert!(
        one.stderr
            .contains("expr: the only experiment file here is experiments/one.kdl"),
        "{}",
        one.stderr
    );
    std::fs::create_dir_all(dir.path().join("examples")).unwrap();
    std::fs::write(
        dir.path().join("examples/two.kdl"),
        "experiment two\nbench b {\n    run \"true\"\n}\n",
    )
    .unwrap();
    let two = Test::new().dir(dir.path()).args(["run"]).run().status(2);
    assert!(
        two.stderr
            .contains("the ones here are:\n  experiments/one.kdl\n  examples/two.kdl\n"),
        "{}",
        two.stderr
    );
}

/// Output that cannot be written (a full disk under `> file` or `>> "$GITHUB_STEP_SUMMARY"`)
/// is an error, exit 1: a CI step must not pass with its summary lost. A closed pipe (`| head`)
/// is the reader's choice: exit 0.
#[test]
fn output_that_cannot_be_written_is_an_error_and_a_closed_pipe_is_not() {
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    for args in [
        vec!["init", "-"],
        vec!["completions", "bash"],
        vec!["plan", "examples/quickstart.kdl"],
        vec!["plan", "--format", "json", "examples/quickstart.kdl"],
        vec!["ls", "tests/fixtures"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(full())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("error: writing the output: No space left on device"),
            "{args:?}: {err}"
        );
        // a reader that stops reading
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?} into a closed pipe: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // a run's one line on stdout, its result directory (`dir=$(expr bench …)`), lost: not exit 0
    let d = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["bench", "-r", "1", "--output", "b", "true"])
        .current_dir(d.path())
        .stdout(full())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: writing the output: No space left on device"),
        "{err}"
    );
    // its last line says the exit it ends with (it said `(exit 0)`, then exited 1)
    assert!(err.contains("expr: results in b (exit 1)"), "{err}");
    assert!(!err.contains("(exit 0)"), "{err}");
}

/// A lone `expr init` at a terminal is POSIX expr's string `init` (printed, exit 0), and the
/// person at the terminal is told how to reach the command; a script (stderr not a terminal)
/// gets the string alone (helper 71: a first `expr init` printed `init` and nothing else).
#[test]
fn a_lone_command_word_at_a_terminal_says_how_to_reach_the_command() {
    let bin = env!("CARGO_BIN_EXE_expr");
    // `script` gives the command a terminal (util-linux)
    let tty = std::process::Command::new("script")
        .args(["-qec", &format!("{bin} init"), "/dev/null"])
        .output()
        .expect("script (util-linux) runs a command on a terminal");
    let text = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{text}");
    assert!(
        text.contains("init")
            && text.contains("expr: a lone `init` is POSIX expr's string, which it prints; `expr init --help` shows the command"),
        "{text}"
    );
    let piped = Test::new().args(["init"]).run().status(0);
    assert_eq!(piped.stdout, "init\n");
    assert!(piped.stderr.is_empty(), "{}", piped.stderr);
}

/// `--quiet` still says why a run exits 6: the expectation not met (it said `(exit 6)` alone;
/// helper 71).
#[test]
fn quiet_still_says_the_expectation_not_met() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("q.kdl"),
        "experiment q\nbench b {\n    run \"echo v=5\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    expect b v min=10\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(d.path())
        .args([
            "run",
            "q.kdl",
            "-q",
            "--output",
            "qo",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(expr::util::exit_codes::EXPECTATION);
    assert!(
        r.stderr.contains(
            "expect not met: expect \"b\" \"v\" min=10.0 (q.kdl:5:5) at b: mean 5.0000 (n=1)"
        ),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("[1/"), "{}", r.stderr);
}

/// A regex that matched no line says what the log's last line was (`thruput: 12.5` for
/// /throughput: …/), or that the log is empty: a failed point shows its log's tail, a no-data
/// one said nothing of it (helper 71).
#[test]
fn a_pattern_that_matched_nothing_shows_the_logs_last_line() {
    let d = tempfile::tempdir().unwrap();
    for (name, run, want) in [
        (
            "a",
            "echo thruput: 12.5",
            "; its last line, a/logs/run1-b_r0-local.log:1: \"thruput: 12.5\"",
        ),
        ("e", "true", "/throughput: ([0-9.]+)/; the log is empty"),
    ] {
        std::fs::write(
            d.path().join("e.kdl"),
            format!("experiment nd\nbench b {{\n    run \"{run}\"\n    collect \"regex\" pattern=\"throughput: ([0-9.]+)\"\n}}\n"),
        )
        .unwrap();
        let r = Test::new()
            .dir(d.path())
            .args(["run", "e.kdl", "--output", name, "--history", "h.sqlite"])
            .run()
            .status(expr::util::exit_codes::POINT_FAILED);
        assert!(r.stderr.contains(want), "{}", r.stderr);
    }
}

/// An output that cannot be written (a full disk: /dev/full) is exit 1, as docs/ci.md says: it
/// was a warning and exit 0 for `run --junit`/`--summary-md`, exit 2 for `history --output`,
/// and `check --resolved > /dev/full` said "ok" and exited 0.
#[test]
fn outputs_that_cannot_be_written_exit_1() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("e.kdl"),
        "experiment w\nbench b {\n    run \"echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let run = Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "out", "--junit", "/dev/full"])
        .run()
        .status(1);
    assert!(
        run.stderr
            .contains("error: --junit: /dev/full: No space left on device"),
        "{}",
        run.stderr
    );
    let md = Test::new()
        .dir(p)
        .args([
            "run",
            "e.kdl",
            "--output",
            "out2",
            "--summary-md",
            "/dev/full",
        ])
        .run()
        .status(1);
    assert!(md.stderr.contains("error: --summary-md: "), "{}", md.stderr);
    let history = Test::new()
        .dir(p)
        .args(["history", "w", "--output", "/dev/full"])
        .run()
        .status(1);
    assert!(
        history.stderr.contains("No space left on device"),
        "{}",
        history.stderr
    );
    let full = || {
        std::process::Stdio::from(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
    };
    for args in [
        &["check", "--resolved", "e.kdl"][..],
        &["check", "--format", "json", "e.kdl"][..],
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
            .current_dir(p)
            .args(args)
            .stdout(full())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("error: writing the output: No space left on device")
                && !err.contains("ok: "),
            "{args:?}: {err}"
        );
    }
}

/// `expr run e.kdl --output out -q ARGS…` of `kdl` in a new directory, which must exit 0.
fn run_e(kdl: &str, args: &[&str]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("e.kdl"), kdl).unwrap();
    Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "out", "-q"])
        .args(args)
        .run()
        .status(0);
    d
}

/// `run --summary-md` shows names as written: in code spans, not as Markdown (a lane `*fast*`
/// was in italics, `<s>slow` a strikethrough on GitHub), and a heading's `|` without a
/// backslash before it.
#[test]
fn the_run_summary_shows_names_as_written() {
    let d = run_e(
        "experiment \"odd<b>|x\"\nbench b {\n    param v 1\n    run \"echo v={{ v }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane \"*fast*\" v=2\n    lane \"<s>slow\" v=1\n}\n",
        &["--summary-md", "s.md"],
    );
    let md = std::fs::read_to_string(d.path().join("s.md")).unwrap();
    assert!(md.starts_with("### ✅ expr run `odd<b>|x`: "), "{md}");
    assert!(
        md.contains("| `b` | `*fast*` |") && md.contains("| `b` | `<s>slow` |"),
        "{md}"
    );
}

/// An expectation `--only` left without its lane is a skipped JUnit case that says so once
/// (it said "not judged: not judged: lane slow did not run here").
#[test]
fn an_unjudged_expectation_is_said_once_in_junit() {
    let d = run_e(
        "experiment x\nbench b {\n    param v 1\n    run \"echo v={{ v }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane fast v=2\n    lane slow v=1\n    expect \"slow\" \"v\" max=5\n}\n",
        &["--only", "lane=fast", "--junit", "j.xml"],
    );
    let xml = std::fs::read_to_string(d.path().join("j.xml")).unwrap();
    assert!(
        xml.contains("<skipped message=\"not judged: lane slow did not run here (`--only`)\"/>"),
        "{xml}"
    );
    assert!(!xml.contains("not judged: not judged"), "{xml}");
}

/// Small mistakes said as what they are: `expr ls` of a folder that is not there (it said "no
/// result directories under nonexist", exit 0); `expr init` onto a directory (it said "exists;
/// pass --force", and with --force "Is a directory"); a run's `--output` inside another run's
/// directory (it nested there, its files among that run's).
#[test]
fn a_missing_ls_folder_an_init_directory_and_a_nested_output_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let ls = Test::new().dir(p).args(["ls", "nonexist"]).run().status(2);
    assert!(
        ls.stderr.contains("error: nonexist: no such directory"),
        "{}",
        ls.stderr
    );
    std::fs::create_dir(p.join("somedir")).unwrap();
    for force in [&[][..], &["--force"][..]] {
        let init = Test::new()
            .dir(p)
            .args(["init", "bench", "somedir"])
            .args(force)
            .run()
            .status(2);
        assert!(
            init.stderr
                .contains("error: somedir is a directory; name the experiment file to write (e.g. somedir/bench.kdl)"),
            "{}",
            init.stderr
        );
    }
    // a folder named with its slash, or a file in a folder that is not there (helper 76: "Not
    // a directory")
    let slash = Test::new()
        .dir(p)
        .args(["init", "bench", "newd/"])
        .run()
        .status(2);
    assert!(
        slash.stderr.contains(
            "error: newd/ names a folder; name the experiment file to write (e.g. newd/bench.kdl)"
        ),
        "{}",
        slash.stderr
    );
    let nod = Test::new()
        .dir(p)
        .args(["init", "bench", "nod/x.kdl"])
        .run()
        .status(2);
    assert!(
        nod.stderr
            .contains("error: nod/x.kdl: its folder nod does not exist"),
        "{}",
        nod.stderr
    );
    std::fs::write(
        p.join("e.kdl"),
        "experiment n\nbench b {\n    run \"echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    // an output file under a file: said so, not "its folder does not exist"
    std::fs::write(p.join("afile"), "").unwrap();
    let under = Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "r0", "--junit", "afile/j.xml"])
        .run()
        .status(2);
    assert!(
        under.stderr.contains("afile is a file, not a folder"),
        "{}",
        under.stderr
    );
    Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "r1", "-q"])
        .run()
        .status(0);
    // `expr bench` into another experiment's run: no advice to resume it as a bench
    let taken = Test::new()
        .dir(p)
        .args(["bench", "true", "--output", "r1"])
        .run()
        .status(2);
    assert!(
        taken.stderr.contains("error: r1 already exists; nothing in it is overwritten: it holds a run of `n`: give `expr bench` another `--output`"),
        "{}",
        taken.stderr
    );
    let nested = Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "r1/logs/nb", "-q"])
        .run()
        .status(2);
    assert!(
        nested
            .stderr
            .contains("r1/logs/nb is inside the result directory ")
            && !p.join("r1/logs/nb").exists(),
        "{}",
        nested.stderr
    );
    // through a link to a folder of the run, too (helper 76)
    std::os::unix::fs::symlink("r1/logs", p.join("lk")).unwrap();
    let linked = Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "lk/nb", "-q"])
        .run()
        .status(2);
    assert!(
        linked
            .stderr
            .contains("lk/nb is inside the result directory ")
            && !p.join("r1/logs/nb").exists(),
        "{}",
        linked.stderr
    );
}

/// `expr ls` counts a point as the directory's last word on it says: a point a `--force`
/// resume with a changed command did not reach (`not run: --fail-fast`, or interrupted) is
/// missing, not the ok of the command before (helper 75: `2/0/1` where the report said one
/// ok).
#[test]
fn ls_counts_points_a_forced_resume_did_not_reach_as_missing() {
    let d = run_e(
        "experiment s\nbench b {\n    param n 1\n    param k 5\n    run \"if [ {{ k }} = 6 ] && [ {{ n }} = 1 ]; then exit 1; fi; echo val={{ n }}{{ k }}\"\n    collect \"regex\" pattern=\"val=([0-9.]+)\"\n    sweep n 1 2 3\n}\n",
        &[],
    );
    Test::new()
        .dir(d.path())
        .args([
            "run",
            "--resume",
            "out",
            "--set",
            "k=6",
            "--force",
            "--fail-fast",
            "-q",
        ])
        .run()
        .status(3);
    let ls = Test::new().dir(d.path()).args(["ls", "."]).run().status(0);
    let row = ls.stdout.lines().find(|l| l.contains("./out")).unwrap();
    assert!(row.contains(" 0/1/2 "), "{}", ls.stdout);
}

/// What `expr ARGS` in `dir` prints on a terminal (under `script`, which gives it one), with
/// NO_COLOR set to `no_color` (unset: none).
fn on_a_terminal(dir: &std::path::Path, args: &str, no_color: Option<&str>) -> String {
    let mut c = std::process::Command::new("script");
    c.current_dir(dir)
        .args([
            "-qec",
            &format!("{} {args}", env!("CARGO_BIN_EXE_expr")),
            "/dev/null",
        ])
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    if let Some(v) = no_color {
        c.env("NO_COLOR", v);
    }
    let out = c.output().expect("script (util-linux) runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Diagnostics are in colour on a terminal unless NO_COLOR is set to something: an empty
/// NO_COLOR asks for nothing (no-color.org; helper 78: it turned colour off). Run under
/// `script`, which gives the command a terminal.
#[test]
fn an_empty_no_color_leaves_colour_on_a_terminal() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("t.kdl"),
        "experiment t\nbench b {\n    reapeat 3\n}\n",
    )
    .unwrap();
    let on_tty = |no_color: Option<&str>| on_a_terminal(d.path(), "check t.kdl", no_color);
    let colour = |s: &str| s.contains("\u{1b}[");
    let plain = on_tty(None);
    assert!(plain.contains("reapeat"), "{plain}");
    assert!(colour(&plain), "{plain}");
    assert!(colour(&on_tty(Some(""))), "an empty NO_COLOR");
    assert!(!colour(&on_tty(Some("1"))), "NO_COLOR=1");
}

/// `expr run -v` is `--verbose`, as cargo's and just's `-v` (helper 78: "to pass '-v' as a
/// value, use '-- -v'").
#[test]
fn run_takes_v_for_verbose() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment v\nbench b {\n    run \"echo hello-from-the-step; echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(d.path())
        .args(["run", "e.kdl", "--output", "o", "-v"])
        .run()
        .status(0);
    assert!(r.stderr.contains("hello-from-the-step"), "{}", r.stderr);
}

/// `expr stop` of a directory that is not there says so, as `report` and `ls` do (helper 78: "has
/// no journal.jsonl").
#[test]
fn stop_of_a_missing_directory_says_it_is_missing() {
    let d = tempfile::tempdir().unwrap();
    let r = Test::new().dir(d.path()).args(["stop", "gone"]).run();
    assert_ne!(r.status, 0);
    assert!(r.stderr.contains("gone: no such directory"), "{}", r.stderr);
}

/// A word near a subcommand's name goes to POSIX expr, as any word not ours does; on a
/// terminal expr first says which subcommand it may have meant (helper 78: `expr histroy t` was
/// POSIX expr's "syntax error" alone). Scripts (no terminal) see POSIX expr's output only.
#[test]
fn a_misspelt_subcommand_is_named_on_a_terminal() {
    let d = tempfile::tempdir().unwrap();
    let on_tty = |args: &str| on_a_terminal(d.path(), args, None);
    let t = on_tty("histroy t");
    assert!(
        t.contains("`histroy` is no expr subcommand (did you mean `history`?)"),
        "{t}"
    );
    // POSIX expr's own words are no typo of ours
    let t = on_tty("index abc b");
    assert_eq!(t.trim(), "2", "{t}");
    let piped = Test::new().dir(d.path()).args(["histroy", "t"]).run();
    assert!(!piped.stderr.contains("did you mean"), "{}", piped.stderr);
}
