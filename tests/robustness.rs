//! Arbitrary bytes and mutations of the shipped experiments never make `check` panic.

use expr::load::load_str;
use expr::validate::Options;
use proptest::prelude::*;

fn shipped() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    v.sort();
    v
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
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in ".{0,400}") {
        let _ = load_str("fuzz.kdl", &s, &Options::default());
    }

    #[test]
    fn mutated_experiments_never_panic(file in 0usize..5, edits in prop::collection::vec((any::<prop::sample::Index>(), 0usize..3, any::<prop::sample::Index>()), 1..8)) {
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
        let loaded = load_str("mutated.kdl", &text, &Options::default());
        // Every diagnostic must be renderable and carry a location inside the text.
        for d in &loaded.diags {
            if let Some(span) = d.span { prop_assert!(span.offset() + span.len() <= text.len()); }
        }
        let _ = expr::diag::render(&loaded.diags, false);
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
