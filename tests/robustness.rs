//! Arbitrary bytes and mutations of every shipped experiment, example and fixture never make
//! `check` or `plan` panic.

use expr::load::load_str;
use expr::validate::Options;
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
    let _ = expr::diag::render(&loaded.diags, false);
    let _ = expr::diag::render_json(&loaded.diags);
    if loaded.has_errors() {
        return;
    }
    let Some(exp) = loaded.experiment else { return };
    let _ = expr::resolved::to_kdl(&exp);
    let filter = match expr::overrides::filter(&exp, &[]) {
        Ok(f) => f,
        Err(_) => return,
    };
    if let Ok(plan) = expr::plan::plan(&exp, "mutated.kdl", &filter, None, chrono::Local::now()) {
        let _ = expr::render::text(&plan);
        let _ = expr::render::json(&plan);
        let _ = expr::render::sh(&plan);
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
