//! `expr check`: fixtures per rule, shipped experiments, output forms.

mod common;

use common::{files, rel, Test};
use expr::model::diag::Code;
use expr::util::exit_codes;

/// The `// expect: CODE LINE:COL` header of a fixture.
fn expectation(path: &std::path::Path) -> (String, usize, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap();
    let rest = first.strip_prefix("// expect: ").expect("fixture header");
    let (code, pos) = rest.split_once(' ').unwrap();
    let (l, c) = pos.split_once(':').unwrap();
    (code.to_string(), l.parse().unwrap(), c.parse().unwrap())
}

fn check_fixture(path: &std::path::Path, status: i32) {
    let (code, line, col) = expectation(path);
    let file = rel(path);
    let json = Test::new()
        .args(["check", "--format", "json", &file])
        .run()
        .status(status);
    let diags: serde_json::Value = serde_json::from_str(&json.stdout).expect("json output");
    let hit = diags
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == code.as_str());
    let hit = hit.unwrap_or_else(|| panic!("{file}: no `{code}` in {}", json.stdout));
    assert_eq!(hit["file"], file.as_str());
    assert_eq!(
        (
            hit["line"].as_u64().unwrap() as usize,
            hit["column"].as_u64().unwrap() as usize
        ),
        (line, col),
        "{file}: location of `{code}`"
    );
    assert!(
        hit["help"].as_str().is_some_and(|h| !h.is_empty()),
        "{file}: `{code}` has no help"
    );
    let text = Test::new().args(["check", &file]).run().status(status);
    assert!(
        text.stderr.contains(&format!("[{file}:{line}:{col}]")),
        "{file}: rendered location\n{}",
        text.stderr
    );
    // one snapshot per fixture: `CODE.kdl`, or `CODE--case.kdl` for more cases of one rule
    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
    assert!(
        stem == code || stem.starts_with(&format!("{code}--")),
        "{file}: a fixture is named after the code it expects"
    );
    let name = format!("{}__{}", if status == 0 { "warn" } else { "invalid" }, stem);
    insta::assert_snapshot!(name, text.stderr);
}

#[test]
fn every_invalid_fixture_exits_2_with_its_code_and_location() {
    let fixtures = files("tests/fixtures/invalid", "kdl");
    assert!(fixtures.len() >= 40, "expected a fixture per rule");
    for f in fixtures {
        check_fixture(&f, exit_codes::INVALID);
    }
}

#[test]
fn warning_fixtures_exit_0_and_say_warning() {
    for f in files("tests/fixtures/warn", "kdl") {
        check_fixture(&f, exit_codes::OK);
        let json = Test::new()
            .args(["check", "--format", "json", &rel(&f)])
            .run();
        assert!(json.stdout.contains("\"severity\": \"warning\""));
    }
}

#[test]
fn every_rule_has_a_fixture() {
    // Codes that no experiment file can trigger: they are about the command line or the disk.
    let not_file_rules = [Code::Io, Code::BadOverride];
    let mut have: Vec<String> = files("tests/fixtures/invalid", "kdl")
        .iter()
        .chain(files("tests/fixtures/warn", "kdl").iter())
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    have.sort();
    for c in &expr::kinds::all_codes() {
        if not_file_rules.contains(c) {
            continue;
        }
        assert!(
            have.contains(&c.name().to_string()),
            "no fixture for `{}`",
            c.name()
        );
    }
}

#[test]
fn shipped_experiments_pass_check() {
    let exps: Vec<String> = files("experiments", "kdl").iter().map(|p| rel(p)).collect();
    assert!(exps.len() >= 5);
    let out = Test::new()
        .args(["check"])
        .args(&exps)
        .run()
        .status(exit_codes::OK);
    assert!(
        out.stderr.contains("0 errors, 0 warnings"),
        "{}",
        out.stderr
    );
}

#[test]
fn resolved_output_is_valid_kdl_that_checks_clean_and_shows_defaults() {
    for f in files("experiments", "kdl") {
        let out = Test::new()
            .args(["check", "--resolved", &rel(&f)])
            .run()
            .status(0);
        assert!(out.stdout.contains("// default"), "{}", out.stdout);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("resolved.kdl");
        std::fs::write(&p, &out.stdout).unwrap();
        let again = Test::new().args(["check", p.to_str().unwrap()]).run();
        assert_eq!(
            again.status,
            0,
            "{}: resolved form does not check: {}",
            rel(&f),
            again.stderr
        );
        // and plans the same commands (a resume without the file plans the journal's copy):
        // dataset-rt's defaults passed only when written were written there, and its commands
        // gained `--seed 7 --metadata-bytes 0 …`
        let commands = |file: &str| -> Vec<String> {
            Test::new()
                .args(["plan", file, "--output", "o"])
                .run()
                .status(0)
                .stdout
                .lines()
                .filter(|l| l.contains("$ "))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(
            commands(&rel(&f)),
            commands(p.to_str().unwrap()),
            "{}: the resolved form plans other commands",
            rel(&f)
        );
    }
    let day0 = Test::new()
        .args(["check", "--resolved", "experiments/day0.kdl"])
        .run();
    for line in [
        "batch-size 1024  // default",
        "embedding-dim 128  // default",
        "num-embeddings 200000  // default",
        "steps 80  // default",
        "warmup-steps 5  // default",
        "index-type \"DRAM_PET_HASH\"  // default",
        "read-mode \"prefetch\"  // default",
        "prefetch-depth 0  // default",
        "dataset \"model_zoo/torchrec_dlrm/processed_day_0_data\"  // default",
    ] {
        assert!(
            day0.stdout.contains(line),
            "missing `{line}` in\n{}",
            day0.stdout
        );
    }
}

#[test]
fn all_problems_of_a_file_are_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("many.kdl");
    std::fs::write(&p, "experiment m\nrecstore-e2e {\n    bach-size 1\n    read-mode \"drect\"\n    ps host=local port=22 shard=0\n    lane TorchRec-HMB\n}\n").unwrap();
    let out = Test::new()
        .args(["check", "--format", "json", p.to_str().unwrap()])
        .run()
        .status(2);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let codes: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    for c in [
        "unknown-node",
        "invalid-value",
        "port-is-ssh-port",
        "lane-name",
    ] {
        assert!(codes.contains(&c), "{c} missing from {codes:?}");
    }
    let text = Test::new()
        .args(["check", p.to_str().unwrap()])
        .run()
        .status(2);
    assert!(text.stderr.contains("did you mean `batch-size`?"));
    assert!(text.stderr.contains("did you mean `direct`?"));
    assert!(text.stderr.contains("did you mean `TorchRec-HBM`?"));
}

#[test]
fn several_files_are_checked_together_and_a_missing_file_is_a_diagnostic() {
    let out = Test::new()
        .args(["check", "experiments/day0.kdl", "no/such.kdl"])
        .run()
        .status(2);
    assert!(
        out.stderr.contains("cannot read `no/such.kdl`"),
        "{}",
        out.stderr
    );
    // the file that could not be read is not counted as checked (helper 71)
    assert!(
        out.stderr
            .contains("error: 1 file checked (1 not read), 1 error"),
        "{}",
        out.stderr
    );
}

#[test]
fn allow_large_accepts_big_matrices() {
    let f = "tests/fixtures/invalid/matrix-too-large.kdl";
    Test::new().args(["check", f]).run().status(2);
    Test::new()
        .args(["check", "--allow-large", f])
        .run()
        .status(0);
}

/// The codes `check --format json` reports for a text.
fn codes_of(text: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.kdl"), text).unwrap();
    let out = Test::new()
        .dir(dir.path())
        .args(["check", "--format", "json", "t.kdl"])
        .run();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect()
}

const RS: &str = "experiment t\nrecstore-e2e {\n    client host=local gpu=0 node-rank=0 nproc-per-node=1\n    ps host=local port=15000 shard=0\n";

#[test]
fn one_mistake_is_one_diagnostic_and_no_consequence_is_reported() {
    let cases: &[(&str, String, &[&str])] = &[
        (
            "a template that does not parse does not make its axis unused",
            "experiment t\nbench b {\n    run \"echo {{ x | }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    sweep x 1 2\n}\n".into(),
            &["template-syntax"],
        ),
        (
            "two clients on one host share its disk",
            "experiment t\nrecstore-e2e {\n    client host=local gpu=0 node-rank=0 nproc-per-node=1\n    client host=local gpu=1 node-rank=1 nproc-per-node=1\n    ps host=local port=15000 shard=0\n}\n".into(),
            &[],
        ),
        (
            "a misspelt lane property is reported once, not as an ablation mismatch",
            format!("{RS}    lane \"RecStore-BRPC-无预取\" read_mode=\"direct\"\n}}\n"),
            &["unknown-property"],
        ),
        (
            "the main lane may sweep an ablation setting",
            format!("{RS}    lane RecStore-BRPC\n    sweep prefetch-depth 0 2 4\n}}\n"),
            &[],
        ),
        (
            "a too-large integer is one diagnostic",
            format!("{RS}    sweep batch-size 1024 99999999999999999999\n}}\n"),
            &["invalid-value"],
        ),
        (
            "a too-large port is one diagnostic",
            "experiment t\nrecstore-e2e {\n    client host=local gpu=0 node-rank=0 nproc-per-node=1\n    ps host=local port=99999999999999999999 shard=0\n}\n".into(),
            &["invalid-value"],
        ),
        (
            "every sweep value of the wrong type: one error each, not also no values and no axis",
            "experiment t\nbench b {\n    param y \"a\"\n    run \"echo {{ y }}\"\n    sweep y 1 2\n    exclude y=\"1\"\n}\n".into(),
            &["wrong-type", "wrong-type"],
        ),
        (
            "a zip axis of the wrong type: its own error, not also no axis for the exclude",
            "experiment t\nbench b {\n    param y \"a\"\n    param x 1\n    run \"echo {{ x }}{{ y }}\"\n    zip {\n        x 1 2\n        y 3 4\n    }\n    exclude y=\"3\"\n}\n".into(),
            &["wrong-type", "wrong-type"],
        ),
        (
            "a zip may list a value twice in one axis where its rows differ",
            "experiment t\nbench b {\n    param x 1\n    param y 1\n    run \"echo {{ x }} {{ y }}\"\n    zip {\n        x 1 1 2\n        y 10 20 20\n    }\n}\n".into(),
            &[],
        ),
        (
            "an exclude written inside a zip is one error, not an axis named exclude",
            "experiment t\nbench b {\n    param x 0\n    run \"echo {{ x }}\"\n    zip {\n        x 1 2\n        exclude x=1\n    }\n}\n".into(),
            &["unknown-node"],
        ),
        (
            "a lane name ending in a no-break space is refused, one with a line break is shown escaped",
            "experiment t\nbench b {\n    run \"echo {{ lane }}\"\n    lane a\n    lane \"a\\u{a0}\"\n    lane \"a\\n\"\n}\n".into(),
            &["invalid-value"],
        ),
        (
            "a zip row listed twice is one error, and the lengths are as written",
            "experiment t\nbench b {\n    param x 1\n    param y 1\n    run \"echo {{ x }} {{ y }}\"\n    zip {\n        x 1 1\n        y 10 10\n    }\n}\n".into(),
            &["invalid-value"],
        ),
    ];
    for (what, text, want) in cases {
        assert_eq!(codes_of(text), want.to_vec(), "{what}");
    }
}

#[test]
fn text_and_json_columns_count_characters_after_cjk_and_a_bom() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        "\u{feff}experiment t\nrecstore-e2e {\n    lane \"RecStore-BRPC-无预取\" bogus=1\n}\n";
    std::fs::write(dir.path().join("t.kdl"), text).unwrap();
    let json = Test::new()
        .dir(dir.path())
        .args(["check", "--format", "json", "t.kdl"])
        .run();
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let d = &v[0];
    // `bogus` is the 30th character of line 3
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(3), Some(30))
    );
    let txt = Test::new().dir(dir.path()).args(["check", "t.kdl"]).run();
    assert!(txt.stderr.contains("[t.kdl:3:30]"), "{}", txt.stderr);
}

/// `check --resolved` writes what the experiment means: `local` without ssh, a port only where
/// one is written (else ssh's own configuration decides, and read back it still does).
#[test]
fn resolved_hosts_say_no_ssh_for_local_and_no_port_that_was_not_written() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("h.kdl"),
        "experiment h\nhost local\nhost far ssh=\"gpu0\" ip=\"10.0.0.2\" repo=\"/r\"\nhost near ssh=\"gpu1\" ssh-port=2222 ip=\"10.0.0.3\" repo=\"/r\"\nbench b {\n    run \"true\"\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(d.path())
        .args(["check", "--resolved", "h.kdl"])
        .run()
        .status(0);
    assert!(
        r.stdout
            .contains("host \"local\" ip=\"127.0.0.1\" repo=\".\"\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("host \"far\" ssh=\"gpu0\" ip=\"10.0.0.2\""),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("host \"near\" ssh=\"gpu1\" ssh-port=2222 ip="),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("ssh-port=22 "), "{}", r.stdout);
}

#[test]
fn color_is_chosen_by_the_color_flag() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("x.kdl"),
        "experiment x\nbench b {\n    repaet 1\n}\n",
    )
    .unwrap();
    let always = Test::new()
        .dir(d.path())
        .args(["--color", "always", "check", "x.kdl"])
        .run()
        .status(2);
    assert!(always.stderr.contains('\u{1b}'), "{}", always.stderr);
    let never = Test::new()
        .dir(d.path())
        .env("CLICOLOR_FORCE", "1")
        .args(["check", "x.kdl", "--color=never"])
        .run()
        .status(2);
    assert!(!never.stderr.contains('\u{1b}'), "{}", never.stderr);
    assert!(
        never.stderr.contains("unknown entry `repaet` in `bench`"),
        "{}",
        never.stderr
    );
}

/// What a diagnostic shows of the file cannot drive the terminal: NUL, ESC and the bidi
/// overrides of "Trojan Source" come out as `?` and `�`; a line of 100k sweep values is shown
/// only near the problem (the whole line made a 10 MB diagnostic).
#[test]
fn diagnostics_show_control_characters_escaped_and_long_lines_near_the_problem() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("c.kdl"),
        "experiment c\nbench b {\n    run \"true \u{202e}lave\u{7} \u{1b}[31m\"\n    repaet 1\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(d.path())
        .args(["check", "c.kdl", "--color", "never"])
        .run()
        .status(2);
    for bad in ['\u{202e}', '\u{1b}', '\u{7}'] {
        assert!(!r.stderr.contains(bad), "{bad:?} in: {}", r.stderr);
    }
    assert!(
        r.stderr.contains("run \"true \u{fffd}lave? ?[31m\""),
        "{}",
        r.stderr
    );
    let values: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    std::fs::write(
        d.path().join("big.kdl"),
        format!(
            "experiment b\nbench b {{\n    param i 0\n    run \"true {{{{ i }}}}\"\n    sweep i {}\n}}\n",
            values.join(" ")
        ),
    )
    .unwrap();
    let big = Test::new()
        .dir(d.path())
        .args(["check", "big.kdl", "--color", "never"])
        .run()
        .status(2);
    assert!(big.stderr.contains("[big.kdl:5:5]"), "{}", big.stderr);
    assert!(
        big.stderr.contains("expands to 100000 points"),
        "{}",
        big.stderr
    );
    assert!(big.stderr.len() < 4000, "{} bytes", big.stderr.len());
}

/// A file that is not UTF-8 is refused where it stops being text: line and column, the
/// excerpt shown (the location was null).
#[test]
fn a_file_that_is_not_utf8_is_refused_at_its_line_and_column() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("bad.kdl"),
        b"experiment x\nbench b {\n  run \"caf\xe9\"\n}\n",
    )
    .unwrap();
    let json = Test::new()
        .dir(d.path())
        .args(["check", "--format", "json", "bad.kdl"])
        .run()
        .status(exit_codes::INVALID);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        (
            v[0]["code"].as_str(),
            v[0]["line"].as_u64(),
            v[0]["column"].as_u64()
        ),
        (Some("io"), Some(3), Some(11)),
        "{v}"
    );
    let text = Test::new()
        .dir(d.path())
        .args(["check", "bad.kdl"])
        .run()
        .status(exit_codes::INVALID);
    assert!(text.stderr.contains("[bad.kdl:3:11]"), "{}", text.stderr);
    // with CRLF line ends (and a byte-order mark) before the byte: the place is the text's as
    // the excerpt holds it (the file's own offset fell inside the U+FFFD shown: a panic, found
    // by fuzzing)
    std::fs::write(
        d.path().join("crlf.kdl"),
        b"\xef\xbb\xbfexperiment x\r\nbench b {\r\n  run \"caf\xe9\"\r\n}\r\n",
    )
    .unwrap();
    let text = Test::new()
        .dir(d.path())
        .args(["check", "crlf.kdl"])
        .run()
        .status(exit_codes::INVALID);
    assert!(
        text.stderr.contains("[crlf.kdl:3:11]") && !text.stderr.contains("panicked"),
        "{}",
        text.stderr
    );
}

/// KDL 2.0's other newlines (a lone CR, NEL, FF, LS, PS) end lines in diagnostics too: every
/// one said line 1 of such a file.
#[test]
fn a_file_with_other_newlines_is_located_by_its_lines() {
    let d = tempfile::tempdir().unwrap();
    for nl in ["\r", "\u{85}", "\u{c}", "\u{2028}", "\u{2029}", "\r\n"] {
        let text = [
            "experiment x",
            "host local",
            "bench b {",
            "  nope 1",
            "}",
            "",
        ]
        .join(nl);
        std::fs::write(d.path().join("nl.kdl"), &text).unwrap();
        let json = Test::new()
            .dir(d.path())
            .args(["check", "--format", "json", "nl.kdl"])
            .run()
            .status(exit_codes::INVALID);
        let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
        let hit = v
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["code"] == "unknown-node")
            .unwrap_or_else(|| panic!("{nl:?}: {v}"));
        assert_eq!(
            (hit["line"].as_u64(), hit["column"].as_u64()),
            (Some(4), Some(3)),
            "{nl:?}"
        );
        let text = Test::new()
            .dir(d.path())
            .args(["check", "nl.kdl"])
            .run()
            .status(exit_codes::INVALID);
        assert!(
            text.stderr.contains("[nl.kdl:4:3]"),
            "{nl:?}: {}",
            text.stderr
        );
    }
}

/// Two servers on one port conflict only where they can listen at once: of one bench, for a
/// lane both run for. Servers of disjoint lanes (`lanes="redis"`, `lanes="valkey"`) and of two
/// benches (run one after another) were refused (helper 50).
#[test]
fn servers_on_one_port_conflict_only_where_they_run_together() {
    let opts = expr::parse::validate::Options::default();
    let conflicts = |text: &str| {
        let loaded = expr::parse::load::load_str("p.kdl", text, &opts);
        loaded
            .diags
            .iter()
            .filter(|d| d.code == Code::PortConflict)
            .count()
    };
    let bench = |name: &str, a: &str, b: &str| {
        format!("bench {name} {{\n    serve a \"sleep 9\" port=6379{a}\n    serve b \"sleep 9\" port=6379{b}\n    lane redis\n    lane valkey\n    run \"echo v=1\"\n}}\n")
    };
    let disjoint = bench("x", " lanes=\"redis\"", " lanes=\"valkey\"");
    assert_eq!(conflicts(&format!("experiment e\n{disjoint}")), 0);
    let shared = bench("x", " lanes=\"redis\"", " lanes=\"redis,valkey\"");
    assert_eq!(conflicts(&format!("experiment e\n{shared}")), 1);
    let all = bench("x", "", " lanes=\"valkey\"");
    assert_eq!(conflicts(&format!("experiment e\n{all}")), 1);
    // one server a bench, two benches on one port
    let one = |name: &str| {
        format!("bench {name} {{\n    serve a \"sleep 9\" port=8000\n    run \"echo v=1\"\n}}\n")
    };
    assert_eq!(
        conflicts(&format!("experiment e\n{}{}", one("p"), one("q"))),
        0
    );
}

/// RecStore's `runtime-dir` is a template: one that fails is a located `check` error, where it
/// checked clean and `plan` said "error: missing argument" with no place (helper 50).
#[test]
fn a_runtime_dir_that_cannot_be_rendered_is_a_check_error_at_it() {
    let day0 = std::fs::read_to_string("experiments/day0.kdl").unwrap();
    let text = day0.replacen(
        "recstore-e2e {\n",
        "recstore-e2e {\n    runtime-dir \"{{ output | replace('a') }}/rt\"\n",
        1,
    );
    assert_ne!(text, day0);
    let opts = expr::parse::validate::Options::default();
    let loaded = expr::parse::load::load_str("d.kdl", &text, &opts);
    let d = loaded
        .diags
        .iter()
        .find(|d| d.code == Code::TemplateRender)
        .unwrap_or_else(|| {
            panic!(
                "{:?}",
                loaded.diags.iter().map(|d| &d.message).collect::<Vec<_>>()
            )
        });
    assert!(
        d.message
            .contains("`runtime-dir` cannot be rendered: missing argument (at `replace('a')`)"),
        "{}",
        d.message
    );
    assert!(d.span.is_some());
}

/// Two steps of one bench that fail to render are both said in one `check` (the bench was set
/// aside at its first, and the second was found by the next `check`) (helper 50).
#[test]
fn every_failing_step_of_a_bench_is_said_at_once() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("two.kdl"),
        "experiment f\nbench b {\n    run \"echo {{ run_id }}\"\n    cleanup \"echo {{ hosts.lcoal.ip }}\"\n    prepare \"echo {{ lane | replace('a') }}\"\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(d.path())
        .args(["check", "two.kdl"])
        .run()
        .status(exit_codes::INVALID);
    assert!(
        r.stderr.contains("two.kdl:5:13") && r.stderr.contains("two.kdl:4:28"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("2 errors"), "{}", r.stderr);
}

/// A templated `port=` (helper 72): `{% if %}` alone is a template; the rendered text must be
/// the port's digits as the command takes them (`" 80 "`, `"+80"`, `"080"` waited on 80 while
/// the command got the text); `plan --set port=22` is refused as `port=22` written is; the
/// port-mismatch warning says nothing of a port that follows its template.
#[test]
fn a_templated_port_renders_to_a_port_of_its_own() {
    let d = tempfile::tempdir().unwrap();
    let kdl = |port: &str| {
        format!("experiment f\nbench b {{\n    param port 18005\n    param admin 18006\n    serve s \"server --port {{{{ port }}}} --admin-port {{{{ admin }}}}\" port={port}\n    run \"echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}}\n")
    };
    let check = |port: &str, status: i32| {
        std::fs::write(d.path().join("e.kdl"), kdl(port)).unwrap();
        Test::new()
            .dir(d.path())
            .args(["check", "e.kdl"])
            .run()
            .status(status)
    };
    let ok = check("\"{% if port %}{{ admin }}{% endif %}\"", 0);
    assert!(ok.stderr.contains("0 errors, 0 warnings"), "{}", ok.stderr);
    for loose in ["\" {{ port }}\"", "\"+{{ port }}\"", "\"0{{ port }}\""] {
        let bad = check(loose, 2);
        assert!(
            bad.stderr.contains("not a port in 1..65535"),
            "{loose}: {}",
            bad.stderr
        );
    }
    // a template naming a value the command does not take still warns (helper 73)
    std::fs::write(
        d.path().join("m.kdl"),
        "experiment f\nbench b {\n    param port 18035\n    param admin-port 18036\n    serve s \"python3 -m http.server {{ port }}\" port=\"{{ admin_port }}\"\n    run \"echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let m = Test::new()
        .dir(d.path())
        .args(["check", "m.kdl"])
        .run()
        .status(0);
    assert!(
        m.stderr.contains(
            "this server's command names port 18035 at point b_r0, but its readiness waits on port 18036"
        ) && m.stderr.contains("renders to a value the command does not listen on"),
        "{}",
        m.stderr
    );
    std::fs::write(d.path().join("e.kdl"), kdl("\"{{ port }}\"")).unwrap();
    let plan = Test::new()
        .dir(d.path())
        .args(["plan", "e.kdl", "--set", "port=22"])
        .run()
        .status(2);
    assert!(
        plan.stderr
            .contains("server `s` waits on port 22 at point b_r0, the ssh port of `local`"),
        "{}",
        plan.stderr
    );
}

/// `lane-pins-axis` is not said where excludes already name the other values: one of every
/// lane (`exclude size=4`) with one of the lane's (`exclude lane="a" size=2`) (helper 72).
#[test]
fn a_pinned_lane_whose_other_values_are_excluded_is_not_warned() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("s.kdl"),
        "experiment s\nbench b {\n    param size 10\n    run \"echo v={{ size }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    sweep size 1 2 4\n    lane a size=1\n    lane b\n    exclude size=4\n    exclude lane=\"a\" size=2\n}\n",
    )
    .unwrap();
    let r = Test::new()
        .dir(d.path())
        .args(["check", "s.kdl"])
        .run()
        .status(0);
    assert!(r.stderr.contains("0 errors, 0 warnings"), "{}", r.stderr);
}
