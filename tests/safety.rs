//! Nothing written, run or killed that the user did not ask for: output paths, hostile names in
//! commands.sh, secrets in every output form, input limits.

mod common;

use std::path::Path;

use common::Test;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// Every file below `dir`, as (relative path, bytes).
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

const TRUE_BENCH: &str = "bench b {\n    run \"true\"\n}\n";

#[test]
fn an_empty_or_root_output_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "summary.md", "my own notes\n");
    write(dir.path(), "commands.sh", "#!/bin/sh\necho mine\n");
    write(
        dir.path(),
        "e.kdl",
        &format!("experiment e {{\n    output \"\"\n}}\n{TRUE_BENCH}"),
    );
    write(dir.path(), "ok.kdl", &format!("experiment e\n{TRUE_BENCH}"));
    let before = tree(dir.path());
    let c = Test::new().dir(dir.path()).args(["check", "e.kdl"]).run();
    assert_eq!(c.status, 2);
    assert!(c.stderr.contains("output-path"), "{}", c.stderr);
    for args in [
        vec!["run", "e.kdl", "--force"],
        vec!["run", "ok.kdl", "--output", "", "--force"],
        vec!["run", "ok.kdl", "--output", ".", "--force"],
        vec!["run", "ok.kdl", "--output", "/", "--force"],
        vec!["run", "ok.kdl", "--output", "..", "--force"],
        // `nothere` does not exist yet, so `nothere/..` would name this directory
        vec!["run", "ok.kdl", "--output", "nothere/.."],
        vec!["plan", "ok.kdl", "--output", "a/../.."],
        vec!["plan", "ok.kdl", "--output", ""],
    ] {
        let r = Test::new().dir(dir.path()).args(&args).run();
        assert_eq!(r.status, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("output") && !r.stderr.contains("panicked"),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert_eq!(
        tree(dir.path()),
        before,
        "a refused run wrote or changed files"
    );
    assert!(!Path::new("/logs").exists() || Path::new("/logs").is_dir());
}

#[test]
fn force_writes_only_into_expr_result_directories() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ok.kdl", &format!("experiment e\n{TRUE_BENCH}"));
    // someone else's directory
    std::fs::create_dir(dir.path().join("theirs")).unwrap();
    write(&dir.path().join("theirs"), "summary.md", "keep me\n");
    let r = Test::new()
        .dir(dir.path())
        .args(["run", "ok.kdl", "--output", "theirs", "--force"])
        .run();
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("not an expr result directory"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("theirs/summary.md")).unwrap(),
        "keep me\n"
    );
    // a file where the directory should be
    write(dir.path(), "afile", "x");
    let r = Test::new()
        .dir(dir.path())
        .args(["run", "ok.kdl", "--output", "afile", "--force"])
        .run();
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not a directory"), "{}", r.stderr);
    // expr's own result directory: --force writes into it
    Test::new()
        .dir(dir.path())
        .args(["run", "ok.kdl", "--output", "mine"])
        .run()
        .status(0);
    Test::new()
        .dir(dir.path())
        .args(["run", "ok.kdl", "--output", "mine", "--force"])
        .run()
        .status(0);
}

/// Names that would run commands if they reached a shell unquoted.
const HOSTILE: &[&str] = &[
    "a\\ntouch MARK1\\n",
    "$(touch MARK2)",
    "`touch MARK3`",
    "x'; touch MARK4; '",
    "x\\\"; touch MARK5; \\\"",
    "x; touch MARK6",
    "中文\\r\\ntouch MARK7 #",
    "\\u{2028}touch MARK8",
];

#[test]
fn hostile_names_never_run_from_commands_sh_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let mut kdl = format!(
        "experiment \"{}\" {{\n    output \"out\"\n}}\nbench \"{}\" {{\n",
        HOSTILE[0], HOSTILE[1]
    );
    kdl.push_str(&format!("    param msg \"{}\"\n", HOSTILE.join(" ")));
    kdl.push_str("    run \"echo {{ msg }} > {{ outdir }}/msg.txt; echo {{ lane }} > {{ outdir }}/lane.txt\"\n");
    for h in HOSTILE {
        kdl.push_str(&format!("    lane \"{h}\"\n"));
    }
    kdl.push_str("}\n");
    write(dir.path(), "h.kdl", &kdl);
    Test::new()
        .dir(dir.path())
        .args(["check", "h.kdl"])
        .run()
        .status(0);
    let sh = Test::new()
        .dir(dir.path())
        .args(["plan", "--format", "sh", "h.kdl"])
        .run()
        .status(0)
        .stdout;
    write(dir.path(), "commands.sh", &sh);
    // run it from another directory, where the markers would land if anything ran
    let out = std::process::Command::new("bash")
        .arg(dir.path().join("commands.sh"))
        .current_dir(&marks)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "commands.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: Vec<_> = std::fs::read_dir(&marks).unwrap().flatten().collect();
    assert!(made.is_empty(), "a hostile name ran: {made:?}");
    for m in [
        "MARK1", "MARK2", "MARK3", "MARK4", "MARK5", "MARK6", "MARK7", "MARK8",
    ] {
        assert!(!dir.path().join(m).exists(), "{m} was created");
    }
    // and every point ran, with its values intact
    let outputs = dir.path().join("out/outputs");
    let points: Vec<_> = std::fs::read_dir(&outputs).unwrap().flatten().collect();
    assert_eq!(points.len(), HOSTILE.len());
    let lanes: Vec<String> = points
        .iter()
        .map(|p| std::fs::read_to_string(p.path().join("lane.txt")).unwrap())
        .collect();
    assert!(lanes.iter().any(|l| l == "$(touch MARK2)\n"), "{lanes:?}");
    // every comment line of the script is one line
    for line in sh.lines().filter(|l| l.starts_with("# point")) {
        assert!(line.ends_with(')'), "a comment was split: {line:?}");
    }
}

/// A value the author put inside quotes of their own (`'m={{ v }}'`, `"m={{ v }}"`), from the
/// file or from `--set`, runs as text in the run and in commands.sh: its own quotes once closed
/// the author's and left `$(touch MARK)` to the shell.
#[test]
fn a_value_inside_the_authors_quotes_never_runs_as_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(d)
        .status()
        .unwrap();
    let mark = |m: &str| d.join(m);
    let kdl = format!(
        "experiment t\nhost local repo=\".\"\nbench b {{\n    param a \"$(touch {a}) it's\"\n    param b \"`touch {b}`\"\n    run \"echo 'a={{{{ a }}}}' \\\"b={{{{ b }}}}\\\" > {{{{ outdir }}}}/said.txt\"\n}}\n",
        a = mark("MARK_A").display(),
        b = mark("MARK_B").display(),
    );
    write(d, "q.kdl", &kdl);
    let ran = Test::new()
        .dir(d)
        .args(["run", "q.kdl", "--output", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        !mark("MARK_A").exists() && !mark("MARK_B").exists(),
        "a value ran"
    );
    let said = std::fs::read_to_string(d.join("out/outputs/b_r0/said.txt")).unwrap();
    assert_eq!(
        said,
        format!(
            "a=$(touch {}) it's b=`touch {}`\n",
            mark("MARK_A").display(),
            mark("MARK_B").display()
        )
    );
    // commands.sh runs the same text
    let sh = std::process::Command::new("bash")
        .arg(d.join("out/commands.sh"))
        .current_dir(d)
        .env("EXPR_FORCE", "1")
        .output()
        .unwrap();
    assert!(
        sh.status.success(),
        "{}",
        String::from_utf8_lossy(&sh.stderr)
    );
    assert!(
        !mark("MARK_A").exists() && !mark("MARK_B").exists(),
        "commands.sh ran a value"
    );
    // and so does a value given with --set
    let ran = Test::new()
        .dir(d)
        .args(["run", "q.kdl", "--output", "out2"])
        .args([
            "--set",
            &format!("b.a=$(touch {})", mark("MARK_C").display()),
        ])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(!mark("MARK_C").exists(), "a --set value ran");
}

/// An empty secret is a value: commands.sh runs the step with it exported empty, as the run
/// does (`${K:?…}` took empty for unset and stopped the step).
#[test]
fn commands_sh_takes_an_empty_secret_as_the_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "e.kdl",
        "experiment e {\n    output \"out\"\n}\nhost local {\n    env API_TOKEN=\"\"\n}\nbench b {\n    run \"test -z \\\"$API_TOKEN\\\" && echo empty-ok\"\n}\n",
    );
    let ran = Test::new().dir(d).args(["run", "e.kdl"]).run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let sh = std::process::Command::new("bash")
        .arg(d.join("out/commands.sh"))
        .current_dir(d)
        .env("EXPR_FORCE", "1")
        .env("API_TOKEN", "")
        .output()
        .unwrap();
    assert!(
        sh.status.success(),
        "{}",
        String::from_utf8_lossy(&sh.stderr)
    );
    let unset = std::process::Command::new("bash")
        .arg(d.join("out/commands.sh"))
        .current_dir(d)
        .env("EXPR_FORCE", "1")
        .env_remove("API_TOKEN")
        .output()
        .unwrap();
    assert!(
        !unset.status.success(),
        "an unset secret still stops the step"
    );
}

#[test]
fn commands_sh_runs_local_servers_with_env_and_cwd() {
    // `exec VAR=… cmd` and `exec cd …` do not run in bash; the server must start, be ready
    // and be stopped.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let port = common::sshd::free_port();
    write(
        dir.path(),
        "s.kdl",
        &format!(
            "experiment s {{\n    output \"out\"\n}}\nhost local repo=\"sub\" {{\n    env GREETING=\"hi there\"\n}}\nbench b {{\n    serve srv \"python3 -m http.server {port} --bind 127.0.0.1\" port={port}\n    run \"echo $GREETING > {{{{ outdir }}}}/g.txt; pwd >> {{{{ outdir }}}}/g.txt\"\n}}\n"
        ),
    );
    let sh = Test::new()
        .dir(dir.path())
        .args(["plan", "--format", "sh", "s.kdl"])
        .run()
        .status(0)
        .stdout;
    write(dir.path(), "commands.sh", &sh);
    let out = std::process::Command::new("bash")
        .arg(dir.path().join("commands.sh"))
        .current_dir("/")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        sh
    );
    let g = std::fs::read_to_string(dir.path().join("out/outputs/b_r0/g.txt")).unwrap();
    assert!(g.starts_with("hi there\n"), "{g}");
    assert!(g.trim_end().ends_with("/sub"), "{g}");
    // the server was stopped
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    // the copy a run leaves in its result directory runs too, from anywhere
    Test::new()
        .dir(dir.path())
        .args(["run", "s.kdl", "--output", "res"])
        .run()
        .status(0);
    let out = std::process::Command::new("bash")
        .arg(dir.path().join("res/commands.sh"))
        .current_dir("/tmp")
        .env("EXPR_FORCE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn secrets_are_masked_in_every_output_form() {
    let secret = "s3cr3t-Value-42";
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "s.kdl",
        &format!(
            "experiment s {{\n    output \"out\"\n}}\nhost local {{\n    env HF_TOKEN=\"{secret}\" OTHER=\"visible\"\n}}\nbench b {{\n    run \"test -n \\\"$HF_TOKEN\\\"\"\n}}\n"
        ),
    );
    let mut shown = String::new();
    for args in [
        vec!["check", "--resolved", "s.kdl"],
        vec!["check", "--format", "json", "s.kdl"],
        vec!["plan", "s.kdl"],
        vec!["plan", "--format", "json", "s.kdl"],
        vec!["plan", "--format", "sh", "s.kdl"],
    ] {
        let r = Test::new().dir(dir.path()).args(&args).run().status(0);
        assert!(
            !r.stdout.contains(secret) && !r.stderr.contains(secret),
            "{args:?} shows the secret"
        );
        shown.push_str(&r.stdout);
    }
    assert!(shown.contains("visible"), "the other value is still shown");
    let r = Test::new()
        .dir(dir.path())
        .args(["run", "s.kdl"])
        .env("HF_TOKEN", secret)
        .run();
    assert_eq!(r.status, 0, "the step sees its secret: {}", r.stderr);
    assert!(!r.stderr.contains(secret) && !r.stdout.contains(secret));
    for (path, bytes) in tree(&dir.path().join("out")) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "{path} holds the secret"
        );
    }
}

#[test]
fn a_secret_a_step_prints_is_masked_where_expr_repeats_its_log() {
    let secret = "hunter2-tok-77";
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "s.kdl",
        &format!(
            "experiment s {{\n    output \"out\"\n}}\nhost local {{\n    env API_TOKEN=\"{secret}\" GH_PAT=\"ghp-{secret}\"\n}}\nbench b {{\n    run \"echo connecting with $API_TOKEN and $GH_PAT; exit 1\"\n}}\n"
        ),
    );
    let r = Test::new().dir(dir.path()).args(["run", "s.kdl"]).run();
    assert_eq!(r.status, 3, "{}", r.stderr);
    // the failed point's log tail is in its reason: on the terminal, in the journal, the
    // manifest and the report, masked
    // (GH_PAT: a personal access token; its value, which holds the other, masked whole)
    assert!(
        r.stderr.contains("connecting with **** and ****\n"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(secret), "{}", r.stderr);
    let check = |what: &str| {
        for (path, bytes) in tree(&dir.path().join("out")) {
            // the step's own log holds what it printed: expr does not rewrite it
            if path.contains("/logs/") || path.starts_with("logs/") {
                continue;
            }
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{what}: {path} holds the secret"
            );
        }
    };
    check("run");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("connecting with ****"),
        "the log tail is shown, masked"
    );
    // `expr report` later: the experiment file gives the values again
    Test::new()
        .dir(dir.path())
        .args(["report", "out"])
        .run()
        .status(3);
    check("report");
    // … also from another directory (the journal names the file relative to the run's)
    let elsewhere = tempfile::tempdir().unwrap();
    Test::new()
        .dir(elsewhere.path())
        .args(["report", dir.path().join("out").to_str().unwrap()])
        .run()
        .status(3);
    check("report from elsewhere");
    // the file gone (moved, or the directory copied to another machine): the report cannot
    // know the values, and says so (helper 77: it showed them without a word)
    std::fs::rename(dir.path().join("s.kdl"), dir.path().join("s.kdl.moved")).unwrap();
    let r = Test::new()
        .dir(dir.path())
        .args(["report", "out"])
        .run()
        .status(3);
    assert!(
        r.stderr.contains("warning: the run's experiment file (")
            && r.stderr.contains("cannot be read here, and only it holds the values of its secrets (`API_TOKEN`, `GH_PAT`): what a log printed of them is shown as it is"),
        "{}",
        r.stderr
    );
}

/// A secret a step writes where a number belongs (a CSV cell, a regex match) or prints while
/// `--verbose` streams its log: the reason that quotes the cell, the terminal and every file
/// expr writes show `****` — in each form a file writes it (JSON, HTML, Markdown, CSV escape
/// `"`, `<`, `|` otherwise) — at the run and at `expr report` later.
#[test]
fn a_secret_in_a_metric_cell_or_a_verbose_log_is_masked_in_every_form() {
    let plain = "zq7S3CR3Tvalue";
    // `"`, `<`, `>` and `|` are escaped in JSON, HTML or Markdown: its tail is in every form
    let odd = "q<w>|e\"r_tail9Zx";
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "s.kdl",
        "experiment s {\n    output \"out\"\n}\nhost local {\n    env API_TOKEN=\"zq7S3CR3Tvalue\" MY_SECRET=\"q<w>|e\\\"r_tail9Zx\"\n}\nbench c {\n    run \"printf 'rate\\\\n%s\\\\n' \\\"$API_TOKEN\\\" > {{ outdir }}/m.csv\"\n    collect \"csv\" path=\"m.csv\" metric=\"rate\"\n}\nbench r {\n    run \"printf 'rate=%s\\\\n' \\\"$MY_SECRET\\\"\"\n    collect \"regex\" pattern=\"rate=(?<rate>.+)\" metric=\"rate\"\n}\n",
    );
    let r = Test::new()
        .dir(dir.path())
        .args(["run", "s.kdl", "--verbose"])
        .run();
    assert_eq!(r.status, 3, "{}", r.stderr);
    // the reasons are there, quoting a masked cell
    assert!(
        r.stderr.contains("\"****\" is not a number"),
        "{}",
        r.stderr
    );
    let leaks = |text: &str| text.contains(plain) || text.contains("tail9Zx");
    assert!(!leaks(&r.stderr) && !leaks(&r.stdout), "{}", r.stderr);
    let check = |what: &str| {
        for (path, bytes) in tree(&dir.path().join("out")) {
            // the steps' own files (their logs, the CSV) hold what they wrote
            if path.contains("logs/") || path.contains("outputs/") {
                continue;
            }
            assert!(
                !leaks(&String::from_utf8_lossy(&bytes)),
                "{what}: {path} holds a secret:\n{}",
                String::from_utf8_lossy(&bytes)
            );
        }
    };
    check("run");
    let again = Test::new()
        .dir(dir.path())
        .args(["report", "out"])
        .run()
        .status(3);
    assert!(!leaks(&again.stderr) && !leaks(&again.stdout));
    check("report");
    assert!(odd.contains("tail9Zx"));
}

/// Masking never touches what is not a step's output: a secret that is also part of a lane
/// name, a number, or a word of the report (`fast`, `12345`, `true`) leaves the run's names,
/// numbers and files as they are (lane `fastpath` was recorded as `****path` and dropped from
/// the manifest; summary.json held `"value": ****.0`, no JSON). A secret longer than the 40
/// characters a reason quotes of a cell is masked whole, not cut first.
#[test]
fn masking_keeps_names_numbers_and_files_whole_and_a_long_secret_is_masked_before_a_cut() {
    let long = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghij";
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "s.kdl",
        &format!(
            "experiment s {{\n    output \"out\"\n}}\nhost local {{\n    env API_KEY=\"fast\" DB_PASSWORD=\"12345\" MY_SECRET=\"true\" GH_TOKEN=\"{long}\"\n}}\nbench b {{\n    run \"echo rate=12345\"\n    collect \"regex\" pattern=\"rate=(?<rate>[0-9]+)\" metric=\"rate\"\n    lane fastpath\n    lane slow\n}}\nbench c {{\n    run #\"printf 'rate\\n%s\\n' \"$GH_TOKEN\" > {{{{ outdir }}}}/m.csv\"#\n    collect \"csv\" path=\"m.csv\" metric=\"rate\"\n}}\n"
        ),
    );
    let r = Test::new().dir(dir.path()).args(["run", "s.kdl"]).run();
    assert_eq!(r.status, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("[1/3] fastpath_r0 ok")
            && r.stderr.contains("`rate`: \"****\" is not a number"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("ghp_AbCd"), "{}", r.stderr);
    let out = dir.path().join("out");
    let ids: Vec<String> = common::csv_by_name(&out.join("manifest.csv"))
        .iter()
        .map(|r| format!("{} {}", r["run_id"], r["status"]))
        .collect();
    assert_eq!(ids, ["fastpath_r0 ok", "slow_r0 ok", "c_r0 no-data"]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
            .expect("summary.json is JSON");
    assert_eq!(json["points"][0]["metrics"][0]["value"], 12345.0);
    for (path, bytes) in tree(&out) {
        if path.contains("logs/") || path.contains("outputs/") {
            continue;
        }
        assert!(
            !String::from_utf8_lossy(&bytes).contains("ghp_AbCd"),
            "{path} holds the long secret's start"
        );
    }
    // the resume reads the file as the journal recorded it (nothing masked in it)
    Test::new()
        .dir(dir.path())
        .args(["run", "--resume", "out"])
        .run()
        .status(3);
}

/// Every command line of the machine is in `ps` for every user: a step's secret (an env value
/// whose name says it is one) reaches its process through the environment, not through the
/// `bash -c` line — in shell mode, argv mode and `shell "none"` alike — and the step still
/// sees it.
#[test]
fn a_secret_is_not_on_any_command_line_while_its_step_runs() {
    let secret = "hunter3-ps-91";
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(
        p,
        "s.kdl",
        &format!(
            "experiment s {{\n    output \"out\"\n}}\nhost local {{\n    env API_TOKEN=\"{secret}\" PLAIN=\"p-1\"\n}}\nbench b {{\n    run \"echo $API_TOKEN $PLAIN > {{{{ outdir }}}}/got.txt; sleep 1.75; true\"\n}}\nbench n {{\n    shell \"none\"\n    run \"sleep 1.76\"\n}}\n"
        ),
    );
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "s.kdl"])
        .current_dir(p)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // every process's command line, while each step runs
    for step in ["sleep 1.75", "sleep 1.76"] {
        let seen = common::cmdlines_once(
            &format!("`{step}`"),
            |l| l.trim_end() == step,
            std::time::Duration::from_secs(30),
        );
        let holding: Vec<&String> = seen.iter().filter(|l| l.contains(secret)).collect();
        assert!(
            holding.is_empty(),
            "in `ps` while `{step}` ran: {holding:?}"
        );
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // the step had it (and the plain value, still on its line)
    let got = std::fs::read_to_string(p.join("out/outputs/b_r0/got.txt")).unwrap();
    assert_eq!(got.trim(), format!("{secret} p-1"));
    // what the run wrote says it masked, as before
    for (path, bytes) in tree(&p.join("out")) {
        if path.contains("outputs/") {
            continue;
        }
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "{path} holds the secret"
        );
    }
}

/// Preflight asks a step's python program for its flags (`--help`) in the host's `env`, on a
/// `bash -c` line: without the secrets, which `--help` does not need.
#[test]
fn preflight_asks_for_flags_without_the_secrets_on_its_command_line() {
    let secret = "zq9HELPKEY-17";
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(
        p,
        "helpslow.py",
        "import sys\nif '--help' in sys.argv:\n    print('usage: helpslow [--x X]')\n",
    );
    // bash would exec python at once (its line's last command), and its command line would be
    // gone before a look at /proc found it: BASH_ENV holds the `--help` probe's bash a while
    write(
        p,
        "hold.sh",
        "case \"$BASH_EXECUTION_STRING\" in *--help*) sleep 1.5;; esac\n",
    );
    write(
        p,
        "s.kdl",
        &format!(
            "experiment s {{\n    output \"out\"\n}}\nhost local {{\n    env MY_KEY=\"{secret}\" PLAIN=\"v\"\n}}\nbench b {{\n    shell \"none\"\n    run \"python3 {}/helpslow.py\"\n}}\n",
            p.display()
        ),
    );
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "s.kdl"])
        .env("BASH_ENV", p.join("hold.sh"))
        .current_dir(p)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = common::cmdlines_once(
        "preflight's --help",
        |l| l.contains("helpslow.py --help"),
        std::time::Duration::from_secs(30),
    );
    let holding: Vec<&String> = seen.iter().filter(|l| l.contains(secret)).collect();
    assert!(holding.is_empty(), "in `ps` during preflight: {holding:?}");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Preflight asks `--help` only of a script a python runs: a step that reads a `.py` (`cat
/// side.py`) does not run it, and preflight ran it (`python3 side.py --help`: a script that
/// ignores `--help` did its whole job then, unshown by plan and commands.sh).
#[test]
fn preflight_runs_no_script_that_the_step_only_names() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(
        p,
        "side.py",
        "import sys\nopen(sys.argv[0] + '.calls', 'a').write(repr(sys.argv[1:]) + '\\n')\n",
    );
    for (run, want) in [
        ("cat side.py", ""),
        ("python3 -m py_compile side.py", ""),
        ("python3 -c pass side.py", ""),
        ("python3 side.py", "['--help']\n[]\n"),
        ("python3 -u -W ignore side.py", "['--help']\n[]\n"),
    ] {
        let _ = std::fs::remove_file(p.join("side.py.calls"));
        write(
            p,
            "s.kdl",
            &format!(
                "experiment s {{\n    output \"out\"\n}}\nhost local\nbench b {{\n    shell \"none\"\n    run \"{run}\"\n}}\n"
            ),
        );
        let r = Test::new().dir(p).args(["run", "--force", "s.kdl"]).run();
        assert_eq!(r.status, 0, "{run}: {}", r.stderr);
        let calls = std::fs::read_to_string(p.join("side.py.calls")).unwrap_or_default();
        assert_eq!(calls, want, "{run}");
    }
}

#[test]
fn input_limits_and_stdin() {
    let r = Test::new().args(["check", "/dev/zero"]).run();
    assert_eq!(r.status, 2);
    assert!(r.stderr.contains("input-limit"), "{}", r.stderr);
    let deep = format!(
        "experiment x\nbench b {}{}\n",
        "{ a ".repeat(2000),
        "}".repeat(2000)
    );
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "deep.kdl", &deep);
    let r = Test::new()
        .dir(dir.path())
        .args(["check", "deep.kdl"])
        .run();
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nested more than"), "{}", r.stderr);
    // `-` reads the experiment from stdin
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["check", "-"])
        .stdin(
            std::fs::File::open(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/examples/quickstart.kdl"
            ))
            .unwrap(),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn report_never_replaces_good_output_with_worse() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "m.kdl",
        "experiment m {\n    output \"out\"\n}\nbench b {\n    run \"echo value=41; echo value=43\"\n    collect \"regex\" pattern=\"value=([0-9]+)\"\n    lane one\n    lane two\n}\n",
    );
    Test::new()
        .dir(dir.path())
        .args(["run", "m.kdl"])
        .run()
        .status(0);
    let out = dir.path().join("out");
    let good = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(good.contains("42"), "{good}");
    // a garbage manifest: the statuses come back from the journal, with a warning naming it
    std::fs::write(out.join("manifest.csv"), "garbage,\"unclosed\n\u{0}\u{1}").unwrap();
    let r = Test::new()
        .dir(dir.path())
        .args(["report", "out"])
        .run()
        .status(0);
    assert!(r.stderr.contains("manifest.csv:1"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("summary.md")).unwrap(),
        good
    );
    // no temporary files left behind
    let names: Vec<String> = tree(&out).into_iter().map(|(p, _)| p).collect();
    assert!(!names.iter().any(|n| n.contains(".tmp")), "{names:?}");
    // a directory that is not there
    let r = Test::new()
        .dir(dir.path())
        .args(["report", "nonexistent"])
        .run();
    assert_eq!(r.status, 2);
    assert!(
        r.stderr.contains("nonexistent: no such directory"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_failed_cd_never_runs_the_command_elsewhere() {
    // a host with env and a repo that does not exist: `cd X && export …; cmd` ran cmd anyway
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "c.kdl",
        "experiment c {\n    output \"out\"\n}\nhost local repo=\"does-not-exist\" {\n    env FOO=\"1\"\n}\nbench b {\n    run \"touch MARKER_wrongdir\"\n}\n",
    );
    let sh = Test::new()
        .dir(dir.path())
        .args(["plan", "--format", "sh", "c.kdl"])
        .run()
        .status(0)
        .stdout;
    write(dir.path(), "commands.sh", &sh);
    let _ = std::process::Command::new("bash")
        .arg(dir.path().join("commands.sh"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        !dir.path().join("MARKER_wrongdir").exists(),
        "commands.sh ran the command outside its directory"
    );
    let r = Test::new()
        .dir(dir.path())
        .args(["run", "c.kdl", "--output", "res"])
        .run();
    assert_ne!(
        r.status, 0,
        "a point whose directory is missing is not ok: {}",
        r.stderr
    );
    assert!(
        !dir.path().join("MARKER_wrongdir").exists(),
        "expr run ran the command outside its directory"
    );
}

#[test]
fn report_and_run_never_follow_planted_links_or_block_on_fifos() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "ok.kdl",
        "experiment e {\n    output \"res\"\n}\nbench b {\n    run \"echo hi\"\n}\n",
    );
    Test::new()
        .dir(dir.path())
        .args(["run", "ok.kdl"])
        .run()
        .status(0);
    // a log replaced by a link to a file outside the result directory
    write(dir.path(), "outside.txt", "OUTSIDE\n");
    let log = std::fs::read_dir(dir.path().join("res/logs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("run1"))
        .unwrap();
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.txt"), &log).unwrap();
    let _ = Test::new()
        .dir(dir.path())
        .args(["run", "ok.kdl", "--force"])
        .run();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("outside.txt")).unwrap(),
        "OUTSIDE\n",
        "a log was written through a link"
    );
    // a journal that is a FIFO: report ends at once instead of waiting for a writer
    std::fs::create_dir(dir.path().join("fifo")).unwrap();
    let fifo = dir.path().join("fifo/journal.jsonl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let start = std::time::Instant::now();
    let r = Test::new().dir(dir.path()).args(["report", "fifo"]).run();
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn diagnostics_never_show_secret_values() {
    let secret = "S3CR3T-in-source";
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "s.kdl",
        &format!("experiment s\nhost local {{\n    env HF_TOKEN=\"{secret}\" \"MY_SECRET\"=\"{secret}\" OTHER=#null\n}}\nbench b {{\n    run \"true\"\n}}\n"),
    );
    let r = Test::new().dir(dir.path()).args(["check", "s.kdl"]).run();
    assert_eq!(r.status, 2);
    assert!(
        r.stderr.contains("OTHER=#null"),
        "the excerpt is shown: {}",
        r.stderr
    );
    assert!(!r.stderr.contains(secret), "{}", r.stderr);
    write(
        dir.path(),
        "ok.kdl",
        "experiment e\nbench b {\n    run \"true\"\n}\n",
    );
    let r = Test::new()
        .dir(dir.path())
        .args([
            "plan",
            "ok.kdl",
            "--set",
            &format!("host.local.env.HF_TOKEN{secret}"),
        ])
        .run();
    assert!(!r.stderr.contains(secret), "a forgotten `=`: {}", r.stderr);
    let r = Test::new()
        .dir(dir.path())
        .args([
            "plan",
            "ok.kdl",
            "--set",
            &format!("host.local.env.HF_TOKEN={secret}"),
            "--set",
            "nope=1",
        ])
        .run();
    assert!(!r.stderr.contains(secret), "{}", r.stderr);
    let r = Test::new()
        .dir(dir.path())
        .args(["plan", "ok.kdl", "--only", &format!("API_KEY={secret}")])
        .run();
    assert!(!r.stderr.contains(secret), "{}", r.stderr);
    // the file's secret, repeated in arguments of other names (helper 48): a `--set` of an
    // unknown setting, a value of the wrong type, an `--only` value; and a file whose secret's
    // key is raw or whose value spans lines, with an error on that line
    write(
        dir.path(),
        "sec.kdl",
        &format!("experiment e\nhost local {{ env API_TOKEN=\"{secret}\" }}\nbench b {{\n    lane a\n    run \"echo x=1\"\n}}\n"),
    );
    for args in [
        ["--set", &format!("nosuch={secret}")],
        ["--set", &format!("repeat={secret}")],
        ["--only", &format!("lane={secret}")],
    ] {
        let r = Test::new()
            .dir(dir.path())
            .args(["plan", "sec.kdl", args[0], args[1]])
            .run();
        assert_eq!(r.status, 2, "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains(secret), "{args:?}: {}", r.stderr);
    }
    for (name, text) in [
        ("raw.kdl", format!("experiment e\nhost local {{ env #\"API_TOKEN\"#=\"{secret}\" bogus }}\nbench b {{\n    run \"true\"\n}}\n")),
        ("lines.kdl", format!("experiment e\nhost local {{\n    env API_TOKEN=\"\"\"\n        {secret}\n        \"\"\" bogus\n}}\nbench b {{\n    run \"true\"\n}}\n")),
    ] {
        write(dir.path(), name, &text);
        let r = Test::new().dir(dir.path()).args(["check", name]).run();
        assert_eq!(r.status, 2, "{name}: {}", r.stderr);
        assert!(!r.stderr.contains(secret), "{name}: {}", r.stderr);
    }
}
