//! The source layout rules of CONTRIBUTING.md: kinds are known by name only inside src/kinds,
//! lower stages never import kinds, and no two files of src/ import each other in a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/a/b.rs` or `src/a/b/mod.rs` → ["a", "b"]; `src/lib.rs` → [].
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

/// Source without comments and test modules (`#[cfg(test)]` to the end of the file).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Expand `crate::a::{b, c::{d, e}}` into every full path; `self` and `super` are resolved.
fn expand_use(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let mut base = prefix.to_vec();
        base.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&base, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_use(&base, &inner[start..], out);
    } else {
        let mut p = prefix.to_vec();
        for s in tree.split(" as ").next().unwrap().split("::") {
            let s = s.trim();
            if !s.is_empty() && s != "self" && s != "*" {
                p.push(s.to_string());
            }
        }
        if !p.is_empty() {
            out.push(p);
        }
    }
}

/// Every module path a file names: `use` trees and inline `crate::x::y` paths.
fn imports(file: &Path, text: &str) -> Vec<Vec<String>> {
    // `super` is the module above this file's own module
    let me = module_of(file);
    let up = &me[..me.len().saturating_sub(1)];
    let text = code(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("use ") {
        let before_ok = i == 0 || !rest.as_bytes()[i - 1].is_ascii_alphanumeric();
        let stmt_end = rest[i..].find(';').map(|e| i + e).unwrap_or(rest.len());
        if before_ok {
            let stmt = &rest[i + 4..stmt_end];
            let stmt = stmt.trim();
            if let Some(s) = stmt.strip_prefix("crate::") {
                expand_use(&[], s, &mut out);
            } else if let Some(s) = stmt.strip_prefix("super::") {
                expand_use(up, s, &mut out);
            }
        }
        rest = &rest[stmt_end.min(rest.len() - 1) + 1..];
    }
    // inline `super::x::y` (and `super::super::x`) paths, outside `use` statements too
    let mut rest = text.as_str();
    while let Some(i) = rest.find("super::") {
        let prev = rest[..i].chars().last().unwrap_or(' ');
        let tail = &rest[i..];
        if !(prev.is_alphanumeric() || prev == '_' || prev == ':') {
            let path: String = tail
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut base = me.clone();
            let mut parts: Vec<String> = Vec::new();
            for s in path.split("::").filter(|s| !s.is_empty()) {
                if s == "super" && parts.is_empty() {
                    base.pop();
                } else {
                    parts.push(s.to_string());
                }
            }
            base.extend(parts);
            out.push(base);
        }
        rest = &tail[7..];
    }
    let mut rest = text.as_str();
    while let Some(i) = rest.find("crate::") {
        let tail = &rest[i + 7..];
        let path: String = tail
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        out.push(
            path.split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
        );
        rest = tail;
    }
    out
}

struct Tree {
    by_module: BTreeMap<Vec<String>, PathBuf>,
    edges: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
}

fn tree() -> Tree {
    let mut all = Vec::new();
    files(&src(), &mut all);
    all.sort();
    let by_module: BTreeMap<Vec<String>, PathBuf> = all
        .iter()
        .filter(|f| !f.ends_with("main.rs"))
        .map(|f| (module_of(f), f.clone()))
        .collect();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for f in &all {
        let text = std::fs::read_to_string(f).unwrap();
        let set = edges.entry(f.clone()).or_default();
        let mut paths = imports(f, &text);
        let mut aliases = paths.clone();
        // child modules declared here (`pub mod x;`) are names too: `x::Y` uses x
        let me = module_of(f);
        for line in code(&text).lines() {
            let l = line.trim().trim_start_matches("pub ");
            if let Some(name) = l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                let mut child = me.clone();
                child.push(name.trim().to_string());
                aliases.push(child);
            }
        }
        // a module brought in by name (`use crate::kinds;`, `use super::rules as r;`) and then
        // used inline as `kinds::x::y`
        let body = code(&text);
        for p in aliases {
            if !by_module.contains_key(&p) {
                continue;
            }
            let last = p.last().cloned().unwrap_or_default();
            let alias = body
                .split(&format!("{last} as "))
                .nth(1)
                .map(|r| {
                    r.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect()
                })
                .unwrap_or(last);
            for (i, _) in body.match_indices(&format!("{alias}::")) {
                let prev = body[..i].chars().last().unwrap_or(' ');
                if prev.is_alphanumeric() || prev == '_' || prev == ':' {
                    continue;
                }
                let tail: String = body[i + alias.len() + 2..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let mut full = p.clone();
                full.extend(tail.split("::").filter(|s| !s.is_empty()).map(String::from));
                paths.push(full);
            }
        }
        for path in paths {
            // the longest prefix that is a file of its own
            let target = (1..=path.len())
                .rev()
                .find_map(|n| by_module.get(&path[..n]));
            if let Some(t) = target {
                if t != f {
                    set.insert(t.clone());
                }
            }
        }
    }
    Tree { by_module, edges }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(src().parent().unwrap())
        .unwrap()
        .display()
        .to_string()
}

#[test]
fn no_import_cycle_between_files_of_src() {
    let t = tree();
    // Tarjan's strongly connected components.
    struct S<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on: BTreeSet<&'a PathBuf>,
        n: usize,
        sccs: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut S<'a>, v: &'a PathBuf) {
        s.index.insert(v, s.n);
        s.low.insert(v, s.n);
        s.n += 1;
        s.stack.push(v);
        s.on.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(rel(w));
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.sccs.push(comp);
            }
        }
    }
    let mut s = S {
        edges: &t.edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        n: 0,
        sccs: Vec::new(),
    };
    for v in t.edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    assert!(
        s.sccs.is_empty(),
        "files of src/ that import each other in a cycle: {:#?}",
        s.sccs
    );
    assert!(t.by_module.len() > 20, "the walker found too few files");
}

#[test]
fn lower_stages_never_import_kinds() {
    let t = tree();
    for lower in [
        "parse::syntax",
        "model",
        "model::diag",
        "model::schema",
        "model::template",
        "model::expand",
        "model::source",
    ] {
        let path: Vec<String> = lower.split("::").map(String::from).collect();
        let f = &t.by_module[&path];
        let bad: Vec<String> = t.edges[f]
            .iter()
            .filter(|d| d.strip_prefix(src()).unwrap().starts_with("kinds"))
            .map(|d| rel(d))
            .collect();
        assert!(bad.is_empty(), "{} imports {bad:?}", rel(f));
    }
}

/// The stages are folders that stand on each other: no two top-level folders of src/ import
/// each other (the kinds read the model's schema and diagnostics, and parse, above them, finds
/// the kinds in their registry).
#[test]
fn no_two_folders_of_src_import_each_other() {
    let t = tree();
    let top = |f: &std::path::Path| {
        let rel = f.strip_prefix(src()).unwrap();
        rel.components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned()
    };
    let mut arrows: BTreeSet<(String, String)> = BTreeSet::new();
    for (f, deps) in &t.edges {
        for d in deps {
            if top(f) != top(d) {
                arrows.insert((top(f), top(d)));
            }
        }
    }
    assert!(
        arrows.len() > 20,
        "the walker found too few arrows between folders: {arrows:?}"
    );
    let both: Vec<&(String, String)> = arrows
        .iter()
        .filter(|(a, b)| a < b && arrows.contains(&(b.clone(), a.clone())))
        .collect();
    assert!(
        both.is_empty(),
        "folders of src/ that import each other: {both:?}"
    );
}

/// The kind contract is its own floor: the kinds build on `kind_api/` and import neither the
/// planner nor the report (which call them), and the contract imports none of those three.
#[test]
fn the_kinds_build_on_the_contract_not_on_plan_or_report() {
    let t = tree();
    let under = |f: &std::path::Path, top: &str| f.strip_prefix(src()).unwrap().starts_with(top);
    let mut bad = Vec::new();
    for (f, deps) in &t.edges {
        let banned: &[&str] = if under(f, "kinds") {
            &["plan", "report"]
        } else if under(f, "kind_api") {
            &["plan", "report", "kinds", "exec", "cli"]
        } else {
            continue;
        };
        for d in deps {
            if banned.iter().any(|b| under(d, b)) {
                bad.push(format!("{} imports {}", rel(f), rel(d)));
            }
        }
    }
    assert!(
        t.edges.keys().any(|f| under(f, "kind_api")),
        "the walker found no file of src/kind_api"
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The readers work on the model and the journal: report, compare and history never call the
/// parser (the experiment of a result directory comes from `results::event::Header::experiment`).
#[test]
fn the_readers_import_no_parse_module() {
    let t = tree();
    let under = |f: &std::path::Path, top: &str| f.strip_prefix(src()).unwrap().starts_with(top);
    let mut bad = Vec::new();
    let mut readers = 0;
    for (f, deps) in &t.edges {
        if !["report", "compare", "history"].iter().any(|r| under(f, r)) {
            continue;
        }
        readers += 1;
        for d in deps.iter().filter(|d| under(d, "parse")) {
            bad.push(format!("{} imports {}", rel(f), rel(d)));
        }
    }
    assert!(
        readers > 20,
        "the walker found too few readers' files: {readers}"
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Code without comments, string literals and test modules: what the program names.
fn names_in_code(text: &str) -> String {
    let code = code(text);
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c == 'r'
            && matches!(chars.peek(), Some('#') | Some('"'))
            && !out.ends_with(|p: char| p.is_alphanumeric() || p == '_')
        {
            // a raw string literal r#"…"#: skipped to its closing quote and hashes
            let mut hashes = 0;
            while chars.peek() == Some(&'#') {
                chars.next();
                hashes += 1;
            }
            if chars.next() != Some('"') {
                out.push('r');
                continue;
            }
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let mut seen = String::new();
            for d in chars.by_ref() {
                seen.push(d);
                if seen.ends_with(&close) {
                    break;
                }
            }
            out.push_str("\"\"");
        } else if c == '"' {
            // a string literal: skipped, escapes included
            while let Some(d) = chars.next() {
                match d {
                    '\\' => {
                        chars.next();
                    }
                    '"' => break,
                    _ => {}
                }
            }
            out.push_str("\"\"");
        } else if c == '\'' {
            // a char literal ('"', '\\'') or a lifetime: a char literal is skipped whole
            let rest: String = chars.clone().take(3).collect();
            if rest.starts_with('\\') {
                let n = rest
                    .chars()
                    .skip(1)
                    .position(|x| x == '\'')
                    .map_or(2, |i| i + 2);
                for _ in 0..n {
                    chars.next();
                }
            } else if rest.chars().nth(1) == Some('\'') {
                chars.next();
                chars.next();
            }
            out.push('\'');
        } else {
            out.push(c);
        }
    }
    out
}

/// The kinds, by the words their names are written with in code.
const KIND_WORDS: &[&str] = &[
    "recstore",
    "torchrec",
    "dataset_rt",
    "datasetrt",
    "ep_bench",
    "epbench",
    "drt",
    "mscclpp",
    "local_shm",
    "brpc",
];

#[test]
fn no_stage_outside_src_kinds_names_a_kind() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    // every type a kind's folder defines is the kind's own
    let mut kind_types = BTreeSet::new();
    for f in &all {
        let rel = f.strip_prefix(src()).unwrap();
        if rel.starts_with("kinds") && rel.components().count() > 2 {
            let text = std::fs::read_to_string(f).unwrap();
            for w in ["pub struct ", "pub enum ", "pub trait ", "pub type "] {
                for (i, _) in text.match_indices(w) {
                    let name: String = text[i + w.len()..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    kind_types.insert(name);
                }
            }
        }
    }
    assert!(kind_types.contains("EpSummary"), "{kind_types:?}");
    let word = |code: &str, w: &str| {
        code.match_indices(w).any(|(i, _)| {
            let before = code[..i].chars().last().unwrap_or(' ');
            let after = code[i + w.len()..].chars().next().unwrap_or(' ');
            let inside = |c: char| c.is_alphanumeric() || c == '_';
            !inside(before) && !inside(after)
        })
    };
    let mut hits = Vec::new();
    for f in all {
        if f.strip_prefix(src()).unwrap().starts_with("kinds") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in names_in_code(&text).lines().enumerate() {
            let lower = line.to_lowercase();
            let bad = KIND_WORDS
                .iter()
                .find(|w| lower.contains(*w))
                .map(|w| w.to_string())
                .or_else(|| kind_types.iter().find(|t| word(line, t)).cloned())
                .or_else(|| {
                    ["KindId::", "kinds::bench::"]
                        .iter()
                        .find(|p| line.contains(*p))
                        .map(|p| p.to_string())
                });
            if let Some(w) = bad {
                hits.push(format!("{}:{}: `{w}` in {}", rel(&f), i + 1, line.trim()));
            }
        }
    }
    assert!(hits.is_empty(), "kinds named outside src/kinds: {hits:#?}");
}

#[test]
fn the_kind_name_finder_reads_code_not_strings_or_comments() {
    let code = names_in_code(
        "let a = \"RecStore-BRPC\"; // TorchRec\nlet c = '\"'; let r = r#\"torchrec \"q\" \"#; let b = Placement::Recstore;\n",
    );
    assert!(
        !code.contains("RecStore-BRPC") && !code.contains("TorchRec"),
        "{code}"
    );
    assert!(code.contains("Placement::Recstore"), "{code}");
}

#[test]
fn each_kind_folder_holds_its_whole_story() {
    for kind in ["recstore_e2e", "ep_bench", "dataset_rt", "bench"] {
        for file in [
            "mod.rs",
            "spec.rs",
            "rules.rs",
            "plan.rs",
            "collect.rs",
            "report.rs",
        ] {
            let p = src().join("kinds").join(kind).join(file);
            assert!(p.exists(), "{} is missing", rel(&p));
        }
    }
}

#[test]
fn the_cycle_finder_sees_a_cycle() {
    // a.rs → b.rs → a.rs, through `use crate::…` and an inline path
    let a = src().join("a.rs");
    let got: BTreeSet<Vec<String>> =
        imports(&a, "use crate::b::{self, X};\nfn f() { crate::c::d::e(); }")
            .into_iter()
            .collect();
    let want: BTreeSet<Vec<String>> = [vec!["b"], vec!["b", "X"], vec!["c", "d", "e"]]
        .iter()
        .map(|v| v.iter().map(|s| s.to_string()).collect())
        .collect();
    assert_eq!(got, want);
    // an inline `super::` path outside a `use` is an import too
    let e = src().join("exec").join("point.rs");
    let got: BTreeSet<Vec<String>> = imports(&e, "fn f() { super::runner::tail(x); }")
        .into_iter()
        .collect();
    assert!(
        got.contains(&vec!["exec".to_string(), "runner".into(), "tail".into()]),
        "{got:?}"
    );
    let deep = src().join("kinds").join("x").join("plan.rs");
    let got: BTreeSet<Vec<String>> = imports(&deep, "fn f() { super::super::kind::K; }")
        .into_iter()
        .collect();
    assert!(
        got.contains(&vec!["kinds".to_string(), "kind".into(), "K".into()]),
        "{got:?}"
    );
    let sub = src().join("kinds").join("x").join("plan.rs");
    let got: BTreeSet<Vec<String>> = imports(&sub, "use super::rules::{a, b as c};")
        .into_iter()
        .collect();
    for want in ["a", "b"] {
        let p = vec!["kinds".to_string(), "x".into(), "rules".into(), want.into()];
        assert!(got.contains(&p), "{got:?}");
    }
}

/// The string literals of a file's code (comments and test modules left out), each with its
/// line: what the program says and writes.
fn strings_in_code(text: &str) -> Vec<(usize, String)> {
    let code = code(text);
    let b: Vec<char> = code.chars().collect();
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
        } else if c == '\'' && i + 2 < b.len() && (b[i + 2] == '\'' || b[i + 1] == '\\') {
            // a char literal ('"', '\\', '\'') is skipped whole; a lifetime is not one
            i += if b[i + 1] == '\\' { 4 } else { 3 };
            continue;
        } else if c == '"' || (c == 'r' && matches!(b.get(i + 1), Some('"' | '#'))) {
            let raw = c == 'r';
            let mut hashes = 0;
            if raw {
                i += 1;
                while b.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                if b.get(i) != Some(&'"') {
                    continue;
                }
            }
            let (start, mut s) = (line, String::new());
            i += 1;
            while i < b.len() {
                if !raw && b[i] == '\\' {
                    s.extend(b[i..(i + 2).min(b.len())].iter());
                    i += 2;
                    continue;
                }
                if b[i] == '"' && (0..hashes).all(|k| b.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                if b[i] == '\n' {
                    line += 1;
                }
                s.push(b[i]);
                i += 1;
            }
            out.push((start, s));
            continue;
        }
        i += 1;
    }
    out
}

/// A kind's files, notes and names are its own: no string of the program outside src/kinds
/// names one — except the schema's and the diagnostics' help and examples (src/parse,
/// src/model/schema.rs, src/model/diag.rs), which show a user the kinds they may write.
#[test]
fn no_string_outside_src_kinds_and_the_schema_names_a_kind() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let mut hits = Vec::new();
    for f in all {
        let r = f.strip_prefix(src()).unwrap();
        let schema = ["model/schema.rs", "model/diag.rs"]
            .iter()
            .any(|m| r == Path::new(m));
        if r.starts_with("kinds") || r.starts_with("parse") || schema {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, s) in strings_in_code(&text) {
            let lower = s.to_lowercase();
            if let Some(w) = KIND_WORDS.iter().find(|w| lower.contains(*w)) {
                hits.push(format!("{}:{line}: `{w}` in \"{s}\"", rel(&f)));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "kinds named in strings outside src/kinds: {hits:#?}"
    );
}

#[test]
fn the_string_finder_reads_literals_not_code_or_comments() {
    let got = strings_in_code(
        "let a = \"RecStore\"; // \"torchrec\"\nlet c = '\"'; let r = r#\"x \"q\" \"#;\nfn f<'a>(x: &'a str) { g(\"a\\\"b\") }\n",
    );
    assert_eq!(
        got,
        vec![
            (1, "RecStore".to_string()),
            (2, "x \"q\" ".to_string()),
            (3, "a\\\"b".to_string())
        ]
    );
}

/// The functions of a rustfmt-formatted file with their first line and length: from the line
/// that starts `fn` (after `pub`, `const`, … and indentation) to the `}` at its indentation.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let indent = &l[..l.len() - t.len()];
        let words: Vec<&str> = t.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "fn") else {
            continue;
        };
        let before = [
            "pub",
            "pub(crate)",
            "pub(super)",
            "const",
            "async",
            "unsafe",
            "extern",
        ];
        if !words[..at].iter().all(|w| before.contains(w)) || at + 1 >= words.len() {
            continue;
        }
        let name: String = words[at + 1]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // a declaration without a body (a trait's required method) ends with `;`
        let close = format!("{indent}}}");
        let Some(end) = (i..lines.len())
            .take_while(|&j| {
                j == i
                    || !lines[j - 1].trim_end().ends_with(';')
                    || lines[j - 1].starts_with(&format!("{indent} "))
            })
            .find(|&j| lines[j] == close)
        else {
            continue;
        };
        out.push((name, i + 1, end - i + 1));
    }
    out
}

/// No function in src/ (tests included) is longer than a reader can hold: 150 lines.
#[test]
fn no_function_in_src_is_over_150_lines() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let mut long = Vec::new();
    for f in &all {
        let text = std::fs::read_to_string(f).unwrap();
        for (name, line, len) in functions(&text) {
            if len > 150 {
                long.push(format!("{}:{line} fn {name}: {len} lines", rel(f)));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over 150 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_function_measure_counts_from_fn_to_its_closing_brace() {
    let text = "pub fn a(\n    x: u8,\n) -> u8 {\n    x\n}\n\nimpl T {\n    fn b(&self) {\n        if true {\n        }\n    }\n    fn c(&self);\n}\n";
    let got = functions(text);
    assert_eq!(
        got,
        vec![("a".to_string(), 1, 5), ("b".to_string(), 8, 4)],
        "{got:?}"
    );
}

/// The repository's top level as the brief fixes it, and the few files beside it. A file a
/// broken command leaves at the root (07dd036 committed one) fails here before it lands.
const TOP_LEVEL: &[&str] = &[
    ".ci",
    ".gitignore",
    "BENCHMARKS.md",
    "CHANGELOG.md",
    "CONTRIBUTING.md",
    "Cargo.lock",
    "Cargo.toml",
    "README.md",
    "docs",
    "examples",
    "experiments",
    "schemas",
    "src",
    "tests",
];

/// What `git add -A` would commit at the top level: the tracked entries and the untracked ones
/// git does not ignore (outside a git checkout, the directory less `target` and `results`).
fn top_level_entries(root: &Path) -> BTreeSet<String> {
    let git = std::process::Command::new("git")
        .args([
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "-z",
        ])
        .current_dir(root)
        .output();
    match git {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(|p| p.split('/').next().unwrap_or(p).to_string())
            .collect(),
        _ => std::fs::read_dir(root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !matches!(n.as_str(), ".git" | "target" | "results"))
            .collect(),
    }
}

fn unknown_top_level(entries: &BTreeSet<String>) -> Vec<String> {
    entries
        .iter()
        .filter(|e| !TOP_LEVEL.contains(&e.as_str()))
        .cloned()
        .collect()
}

#[test]
fn the_repository_top_level_holds_only_the_fixed_layout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let entries = top_level_entries(root);
    assert!(
        entries.contains("src") && entries.contains("Cargo.toml"),
        "{entries:?}"
    );
    let unknown = unknown_top_level(&entries);
    assert!(
        unknown.is_empty(),
        "files at the repository's top level outside the fixed layout (remove them, or add \
         them to TOP_LEVEL in tests/layout.rs with a reason): {unknown:?}"
    );
}

#[test]
fn the_top_level_check_names_a_stray_file() {
    let entries: BTreeSet<String> = ["src", "Cargo.toml", "ritten(j) == off)?;|"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(unknown_top_level(&entries), vec!["ritten(j) == off)?;|"]);
}
