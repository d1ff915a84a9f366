//! Arbitrary bytes and mutations of every shipped experiment, example and fixture never make
//! `check` or `plan` panic.

use expr::parse::load::load_str;
use expr::parse::validate::Options;
use proptest::prelude::*;

/// Every KDL file of experiments/, examples/ and tests/fixtures/*/.
fn shipped() -> Vec<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut v: Vec<String> = Vec::new();
    for dir in [
        "experiments",
        "examples",
        "tests/fixtures/invalid",
        "tests/fixtures/warn",
        "tests/fixtures/plan",
    ] {
        let Ok(rd) = std::fs::read_dir(format!("{root}/{dir}")) else {
            continue;
        };
        let mut files: Vec<std::path::PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "kdl"))
            .collect();
        files.sort();
        v.extend(files.iter().map(|p| std::fs::read_to_string(p).unwrap()));
    }
    assert!(v.len() > 60, "the corpus is every shipped file");
    v
}

/// check, then (when the file is valid) plan in every output form.
fn check_and_plan(text: &str) {
    let loaded = load_str("mutated.kdl", text, &Options::default());
    for d in &loaded.diags {
        if let Some(span) = d.span {
            assert!(span.offset() + span.len() <= text.len());
        }
    }
    let _ = expr::model::diag::render(&loaded.diags, false);
    let _ = expr::model::diag::render_json(&loaded.diags);
    if loaded.has_errors() {
        return;
    }
    let Some(exp) = loaded.experiment else { return };
    let _ = expr::parse::resolved::to_kdl(&exp);
    let filter = match expr::parse::overrides::filter(&exp, &[]) {
        Ok(f) => f,
        Err(_) => return,
    };
    if let Ok(plan) = expr::plan::plan(&exp, "mutated.kdl", &filter, None, chrono::Local::now()) {
        let _ = expr::plan::render::text(&plan);
        let _ = expr::plan::render::json(&plan);
        let _ = expr::plan::render::sh(&plan);
    }
}

fn tokens() -> Vec<&'static str> {
    vec![
        "{",
        "}",
        "\"",
        "=",
        ";",
        "#true",
        "#null",
        "0",
        "-1",
        "99999999999999999999999",
        "10.0.2.190",
        "lane",
        "sweep",
        "zip",
        "exclude",
        "host",
        "client",
        "ps",
        "node",
        "repeat",
        "{{",
        "}}",
        "{{ x }}",
        "无预取",
        "\n",
        "/*",
        "*/",
        "//",
        "port=0",
        "shard=-3",
        "nproc-per-node=0",
        "1.5",
        "\\",
        "r#\"",
        "ps-type",
        "batch-size",
        "output \"\"",
        "{{ started | date(format='%Q') }}",
        "{{ x | nope }}",
        "dataset-rt {",
        "ep-bench {",
        "bench b {",
        "run \"true\"",
        "serve s \"true\" port=7000",
        "\u{feff}",
        "\"\"\"",
        "warmup-steps 100",
        "gpu=7",
        "host=nowhere",
        "env K=\"v\"",
        "lane \"a\\nb\"",
        "\"../x\"",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in ".{0,400}") {
        check_and_plan(&s);
    }

    #[test]
    fn mutated_shipped_files_never_panic_in_check_or_plan(file in 0usize..1000, edits in prop::collection::vec((any::<prop::sample::Index>(), 0usize..3, any::<prop::sample::Index>()), 1..8)) {
        let files = shipped();
        let mut text = files[file % files.len()].clone();
        let toks = tokens();
        for (pos, op, tok) in edits {
            let mut idx = pos.index(text.len() + 1);
            while !text.is_char_boundary(idx) { idx -= 1; }
            match op {
                0 => text.insert_str(idx, toks[tok.index(toks.len())]),
                1 => { let mut end = (idx + 1 + tok.index(8)).min(text.len()); while !text.is_char_boundary(end) { end += 1; } text.replace_range(idx..end, ""); }
                _ => { let line_start = text[..idx].rfind('\n').map(|i| i + 1).unwrap_or(0); text.insert_str(line_start, toks[tok.index(toks.len())]); text.insert(line_start + toks[tok.index(toks.len())].len(), ' '); }
            }
        }
        check_and_plan(&text);
    }
}

#[test]
fn arbitrary_bytes_are_refused_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bin.kdl");
    std::fs::write(&p, [0xff, 0xfe, 0x00, 0x41]).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["check", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not UTF-8"));
}

/// A long chain of operators in one template block (`x+x+…`, `x|upper|…`, `not not …`,
/// `x.a.a…`) overflowed the stack inside minijinja's compiler (an abort, no diagnostic): it is
/// an `input-limit` error at the block, and a chain of the most allowed still checks.
#[test]
fn a_template_block_with_thousands_of_operators_is_refused_not_a_stack_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let check = |expr: &str| {
        let p = dir.path().join("t.kdl");
        std::fs::write(
            &p,
            format!(
                "experiment a\nbench b {{\n    param x 1\n    run \"echo {{{{ {expr} }}}}\"\n}}\n"
            ),
        )
        .unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
            .args(["check", p.to_str().unwrap()])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for chain in [
        vec!["x"; 6000].join("+"),
        format!("x{}", "|upper".repeat(8000)),
        format!("{}x", "not ".repeat(6000)),
        format!("x{}", ".a".repeat(20000)),
        format!("{}x", "-".repeat(9000)),
    ] {
        let (code, err) = check(&chain);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("input-limit"), "{err}");
        assert!(err.contains("operators (at most 256)"), "{err}");
        assert!(err.contains("t.kdl:4:"), "{err}");
    }
    // the most it allows is fine; operators inside a quoted string are not counted
    let (code, err) = check(&vec!["x"; 257].join("+"));
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = check(&format!("x ~ '{}'", "+".repeat(5000)));
    assert_eq!(code, Some(0), "{err}");
}

/// The corpus of hostile inputs (tests/fuzz-corpus): each through every stage and output form,
/// without a panic, and with diagnostics of a bounded size (a long line is shown near the
/// problem).
#[test]
fn the_fuzz_corpus_goes_through_every_stage_and_its_diagnostics_stay_bounded() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz-corpus");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "kdl") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        check_and_plan(&text);
        let loaded = load_str("corpus.kdl", &text, &Options::default());
        let shown = expr::model::diag::render(&loaded.diags, false);
        assert!(
            shown.len() < 16 << 10,
            "{}: {} bytes of diagnostics",
            p.display(),
            shown.len()
        );
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{202e}'),
            "{}",
            p.display()
        );
        n += 1;
    }
    assert!(n >= 8, "the corpus");
}

/// A well-formed experiment, generated: hosts, params of each type, lanes that override them,
/// sweeps, repeats, and names with quotes, spaces, backslashes and other scripts.
fn experiment() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec![
        "a",
        "b-2",
        "x_y",
        "节点",
        "lane one",
        "q\"uote",
        "back\\slash",
        "dot.ted",
        "ß",
    ]);
    let value = prop_oneof![
        (-5i64..50).prop_map(|i| i.to_string()),
        (0.0f64..10.0).prop_map(|f| format!("{f:.3}")),
        prop::sample::select(vec![
            "\"tcp\"",
            "\"a b\"",
            "\"x\\\\y\"",
            "\"无预取\"",
            "\"\""
        ])
        .prop_map(str::to_string),
    ];
    (
        prop::collection::vec(value.clone(), 1..4),
        prop::collection::vec((name.clone(), prop::option::of(value.clone())), 1..4),
        prop::collection::vec(prop::collection::vec(value, 1..4), 0..3),
        1i64..4,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(params, lanes, sweeps, repeat, remote, port)| {
            let mut o = String::from("experiment gen {\n    description \"generated\"\n}\n");
            o.push_str("host local\n");
            if remote {
                o.push_str(&format!(
                    "host far ssh=\"gpu0\"{} ip=\"10.0.0.2\" repo=\"/r\"\n",
                    if port { " ssh-port=2222" } else { "" }
                ));
            }
            o.push_str("bench b {\n");
            for (i, v) in params.iter().enumerate() {
                o.push_str(&format!("    param p{i} {v}\n"));
            }
            let uses: Vec<String> = (0..params.len())
                .map(|i| format!("{{{{ p{i} }}}}"))
                .collect();
            o.push_str(&format!(
                "    run \"echo {}\"{}\n",
                uses.join(" "),
                if remote { " host=far" } else { "" }
            ));
            let mut seen = std::collections::HashSet::new();
            for (l, over) in &lanes {
                if !seen.insert(l.to_string()) {
                    continue;
                }
                let q = l.replace('\\', "\\\\").replace('"', "\\\"");
                match over {
                    // a lane overrides a param of the type it has: the first's, by its own value
                    Some(_) => o.push_str(&format!("    lane \"{q}\" p0={}\n", params[0])),
                    None => o.push_str(&format!("    lane \"{q}\"\n")),
                }
            }
            for (i, vals) in sweeps.iter().enumerate() {
                // sweep a param (of its own type: its value, and distinct ones of that type)
                let Some(v) = params.get(i + 1) else { break };
                let mut vs: Vec<String> = vec![v.clone()];
                for x in vals {
                    let same_type = (x.starts_with('"') == v.starts_with('"'))
                        && (x.contains('.') == v.contains('.'));
                    if same_type && !vs.contains(x) {
                        vs.push(x.clone());
                    }
                }
                o.push_str(&format!("    sweep p{} {}\n", i + 1, vs.join(" ")));
            }
            o.push_str(&format!("    repeat {repeat}\n}}\n"));
            o
        })
}

/// The points of an experiment as the run would make them: ids and commands, and the whole
/// commands.sh (the ssh lines with their options).
fn points(exp: &expr::model::Experiment) -> (Vec<(String, Vec<String>)>, String) {
    let filter = expr::parse::overrides::filter(exp, &[]).unwrap();
    let t = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00+00:00")
        .unwrap()
        .with_timezone(&chrono::Local);
    let plan = expr::plan::plan(exp, "g.kdl", &filter, Some("out"), t).unwrap();
    let ids = plan
        .points
        .iter()
        .map(|p| {
            (
                p.run_id.clone(),
                p.steps.iter().map(|s| s.script_line()).collect(),
            )
        })
        .collect();
    (ids, expr::plan::render::sh(&plan))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// `check --resolved` is a fixed point: the resolved experiment, checked again, resolves to
    /// itself and plans the same points with the same commands.
    #[test]
    fn a_well_formed_experiment_round_trips_through_its_resolved_form(text in experiment()) {
        let first = load_str("g.kdl", &text, &Options::default());
        prop_assert!(!first.has_errors(), "{text}\n{}", expr::model::diag::render(&first.diags, false));
        let exp = first.experiment.unwrap();
        let resolved = expr::parse::resolved::to_kdl(&exp);
        let again = load_str("g.kdl", &resolved, &Options::default());
        prop_assert!(!again.has_errors(), "{resolved}\n{}", expr::model::diag::render(&again.diags, false));
        let exp2 = again.experiment.unwrap();
        // what was a default is written the second time: the same text but its `// default`
        let bare = |t: &str| -> String {
            t.lines()
                .map(|l| l.split("  // ").next().unwrap_or(l))
                .collect::<Vec<_>>()
                .join("\n")
        };
        prop_assert_eq!(bare(&expr::parse::resolved::to_kdl(&exp2)), bare(&resolved));
        prop_assert_eq!(points(&exp2), points(&exp));
    }
}

/// Runs of what the KDL parser recurses on as it recovers from each error are refused before
/// parsing, located (a 9 KB file of `/- ` overflowed its stack, exit 134; so did 22,000 stray
/// `}`, lines of `x )` or `x (t)`, and `a=a=a=…`); a run of errors it has no rule for parses
/// on the parser's larger stack.
#[test]
fn runs_the_parser_recurses_on_are_refused_located_not_a_stack_overflow() {
    let cases: [(String, &str); 6] = [
        (
            format!("experiment e\n{}x\n", "/- ".repeat(3000)),
            "slashdashes (`/-`) in a row",
        ),
        (
            format!("experiment e\n{}\n", "}".repeat(22000)),
            "`}` that close no block",
        ),
        (
            format!("experiment e\n{}", "x )\n".repeat(22000)),
            "`)` that close no `(`",
        ),
        (
            format!("experiment e\nx {}\n", "a=a=".repeat(11000)),
            "`=` in one token",
        ),
        (
            format!("experiment e\n{}x\n", "(t)".repeat(44000)),
            "type annotations `(…)` in a row",
        ),
        (
            format!("experiment e\nb {{\n{}}}\n", "x (t)\n".repeat(22000)),
            "type annotations `(…)` with nothing after them",
        ),
    ];
    for (text, what) in &cases {
        let loaded = load_str("r.kdl", text, &Options::default());
        let d = loaded
            .diags
            .iter()
            .find(|d| d.code == expr::model::diag::Code::InputLimit)
            .unwrap_or_else(|| panic!("{what}: {:?}", loaded.diags.first().map(|d| &d.message)));
        assert!(d.message.contains(what), "{}", d.message);
        assert!(d.span.is_some(), "{what}: located");
    }
    // no rule: the errors are said, the process lives
    let spaced = format!(
        "experiment e\n{}",
        "x \"a\" = \"a\" = \"a\"\n".repeat(22000)
    );
    let loaded = load_str("r.kdl", &spaced, &Options::default());
    assert!(loaded.has_errors());
}

/// Commands each under the cap that together fill memory (10,000 points × 5 steps × 90 KB:
/// 4.5 GB, and `check` aborted): the plan stops at 256 MiB of commands, an error at the step
/// where it is passed.
#[test]
fn a_plan_whose_commands_would_fill_memory_is_refused_at_its_step() {
    let runs: String = (0..5)
        .map(|k| format!("    run \"echo {{{{ n }}}} {k} {{{{ 'x' * 90000 }}}}\"\n"))
        .collect();
    let sweep: Vec<String> = (0..10_000).map(|n| n.to_string()).collect();
    let text = format!(
        "experiment x\nbench b {{\n    param n 1\n{runs}    sweep n {}\n}}\n",
        sweep.join(" ")
    );
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("big.kdl"), text).unwrap();
    let r = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["check", "big.kdl"])
        .current_dir(d.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the plan's commands come to more than 256 MiB"),
        "{stderr}"
    );
    assert!(stderr.contains("big.kdl:"), "located: {stderr}");
}

/// Warmup rounds are counted per lane and sweep point where the scope is the group: 100
/// points of 100 repeats warm up 100 times 20 rounds, not 10,000 times (the first count
/// refused it).
#[test]
fn group_warmups_are_counted_once_a_group() {
    let sweep: Vec<String> = (0..100).map(|n| n.to_string()).collect();
    let text = format!(
        "experiment x\nbench b {{\n    param n 1\n    warmup 20\n    repeat 100\n    run \"echo {{{{ n }}}}\"\n    sweep n {}\n}}\n",
        sweep.join(" ")
    );
    let loaded = load_str("w.kdl", &text, &Options::default());
    assert!(
        !loaded.has_errors(),
        "{:?}",
        loaded.diags.first().map(|d| &d.message)
    );
    let point = text.replace(
        "    repeat 100\n",
        "    repeat 100\n    warmup-scope \"point\"\n",
    );
    let loaded = load_str("w.kdl", &point, &Options::default());
    assert!(
        loaded
            .diags
            .iter()
            .any(|d| d.code == expr::model::diag::Code::MatrixTooLarge),
        "200,000 rounds"
    );
}

/// A large file of bad lines (100,000 of `x 1.2.3`, 800 KB; 800,000 lines of `a = 1` took the
/// parser's recovery gigabytes and overflowed its stack): the first hundreds of errors, and one
/// that says more were found, in bounded time and memory.
#[test]
fn a_file_of_a_great_many_errors_keeps_the_first_hundreds() {
    let text = format!("experiment x\n{}", "x 1.2.3\n".repeat(100_000));
    let loaded = load_str("r.kdl", &text, &Options::default());
    let max = expr::model::diag::MAX_DIAGS;
    assert!(loaded.diags.len() <= max + 1, "{}", loaded.diags.len());
    let last = loaded.diags.last().unwrap();
    assert_eq!(last.code, expr::model::diag::Code::InputLimit);
    assert!(
        last.message.contains("more found and not shown"),
        "{}",
        last.message
    );
    assert!(loaded.diags[0].span.is_some());
}
