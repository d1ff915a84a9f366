//! schemas/ and the decoder agree: every documented name is accepted, every accepted name is
//! documented, and every kdl block of the README and schemas/ is valid.

mod common;

use expr::kinds;
use expr::model::schema::{self, Args, NodeSpec};
use expr::parse::load::load_str;
use expr::parse::validate::Options;

const PRELUDE: &str = "experiment t\n";

fn codes(text: &str) -> Vec<String> {
    let l = load_str("doc.kdl", text, &Options::default());
    l.diags
        .iter()
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect()
}

/// Decoding problems only (not rule violations a fragment may trip).
fn vocabulary_errors(text: &str) -> Vec<String> {
    codes(text)
        .into_iter()
        .filter(|c| {
            [
                "unknown-node",
                "unknown-property",
                "wrong-type",
                "kdl-syntax",
                "invalid-value",
            ]
            .iter()
            .any(|k| c.starts_with(k))
        })
        .collect()
}

#[test]
fn reference_is_generated_from_the_tables() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/reference.md");
    let want = expr::parse::reference::markdown();
    if std::env::var_os("EXPR_BLESS").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "schemas/reference.md is stale: run `EXPR_BLESS=1 cargo test --test schema`"
    );
}

/// Every name documented in schemas/reference.md, parsed from its headings and tables.
fn documented() -> Vec<String> {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/reference.md"))
            .unwrap();
    let mut names = Vec::new();
    let mut context = String::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            context = h.to_string();
        } else if let Some(h) = line.strip_prefix("### `") {
            names.push(format!("{context} / node {}", h.trim_end_matches('`')));
        } else if line.starts_with("| `") && !context.starts_with("Diagnostics") {
            let name = line.split('`').nth(1).unwrap();
            names.push(format!("{context} / {name}"));
        }
    }
    names
}

#[test]
fn every_documented_setting_is_accepted_by_the_decoder() {
    let docs = documented();
    for kind in kinds::ALL {
        let title = format!("Settings of `{}`", kind.node);
        let documented: Vec<&str> = docs
            .iter()
            .filter_map(|d| d.strip_prefix(&format!("{title} / ")))
            .collect();
        let decoder: Vec<&str> = kind.settings.iter().map(|s| s.name).collect();
        assert_eq!(
            documented, decoder,
            "{title}: schemas/ and the decoder disagree"
        );
        for s in kind.settings {
            let placement = match kind.node {
                "bench" => "run \"true\"\n",
                "ep-bench" | "dataset-rt" => "node host=local\n",
                _ => "",
            };
            let text = format!(
                "{PRELUDE}{} {{\n{placement}{} {}\n}}\n",
                kind.node, s.name, s.example
            );
            assert_eq!(
                vocabulary_errors(&text),
                Vec::<String>::new(),
                "documented example `{} {}` is rejected",
                s.name,
                s.example
            );
        }
        // A name the tables do not hold is refused.
        let text = format!("{PRELUDE}{} {{\nnot-a-setting 1\n}}\n", kind.node);
        assert!(
            codes(&text).iter().any(|c| c.starts_with("unknown-node")),
            "{}: unknown names must be refused",
            kind.node
        );
    }
}

/// The reference's section of `collect`'s children (helper 87: they were accepted, and in no
/// section).
const COLLECT: &str = "Inside `collect` (a per-step CSV's timing model: `collect \"csv\" … { … }`)";

fn wrap(context: &str, example: &str) -> String {
    match context {
        "Top level" => format!("{PRELUDE}{example}\n"),
        "Inside `experiment`" => {
            format!("experiment t {{\n{example}\n}}\nbench b {{\nrun \"true\"\n}}\n")
        }
        "Inside `host`" => format!("{PRELUDE}host local {{\n{example}\n}}\n"),
        "Inside every benchmark kind" => {
            format!("{PRELUDE}recstore-e2e {{\nsweep batch-size 1 2\n{example}\n}}\n")
        }
        COLLECT => format!(
            "{PRELUDE}bench b {{\nrun \"true\"\ncollect \"csv\" path=\"steps.csv\" {{\n{example}\n}}\n}}\n"
        ),
        c => {
            let kind = c.split('`').nth(1).unwrap();
            if kind == "bench" {
                return format!("{PRELUDE}bench b {{\nrun \"true\"\nlane tcp\n{example}\n}}\n");
            }
            format!("{PRELUDE}{kind} {{\n{example}\n}}\n")
        }
    }
}

#[test]
fn every_documented_node_and_property_is_accepted() {
    let tops = kinds::top_nodes();
    let mut sections: Vec<(String, &[NodeSpec])> = vec![
        ("Top level".into(), &tops),
        ("Inside `experiment`".into(), schema::EXPERIMENT_CHILDREN),
        ("Inside `host`".into(), schema::HOST_CHILDREN),
        (
            "Inside every benchmark kind".into(),
            schema::COMMON_CHILDREN,
        ),
        (COLLECT.into(), schema::COLLECT_CHILDREN),
    ];
    for k in kinds::ALL {
        sections.push((
            format!("Inside `{}`: placement and steps", k.node),
            k.children,
        ));
    }
    let docs = documented();
    for (ctx, nodes) in sections {
        for n in nodes {
            assert!(
                docs.contains(&format!("{ctx} / node {}", n.name)),
                "`{}` ({ctx}) is not in schemas/",
                n.name
            );
            let text = wrap(&ctx, n.example);
            assert_eq!(
                vocabulary_errors(&text),
                Vec::<String>::new(),
                "example of `{}` ({ctx}) is rejected:\n{text}",
                n.name
            );
            for p in n.props {
                assert!(
                    docs.contains(&format!("{ctx} / {}", p.name)),
                    "property `{}` of `{}` is undocumented",
                    p.name,
                    n.name
                );
                let mut line = n.example.lines().next().unwrap().to_string();
                // a node of a Slurm allocation has no ssh login or address of its own: its
                // properties are tried on such a host
                if n.name == "host" && matches!(p.name, "slurm" | "node") {
                    line = "slurm cluster nodes=1\nhost n0 slurm=\"cluster\" node=0".into();
                }
                // the regex collector's pattern, on a regex collector (a CSV's is refused)
                if n.name == "collect" && p.name == "pattern" {
                    line = format!("collect \"regex\" {}", p.example);
                }
                // an array's throttle, on an array allocation (without it, a warning: it
                // changes nothing)
                if n.name == "slurm" && p.name == "throttle" {
                    line = format!("{line} mode=\"array\"");
                }
                if !line.contains(&format!("{}=", p.name)) {
                    line = format!("{line} {}", p.example);
                }
                if matches!(n.args, Args::One(_)) && !line.contains(' ') {
                    continue;
                }
                let text = wrap(&ctx, &line);
                assert_eq!(
                    vocabulary_errors(&text),
                    Vec::<String>::new(),
                    "documented property `{}` of `{}` is rejected:\n{text}",
                    p.name,
                    n.name
                );
            }
            if !n.free_props {
                let line = format!(
                    "{} not-a-prop=1",
                    n.example.lines().next().unwrap().trim_end_matches(" {")
                );
                if !line.contains('{') {
                    let text = wrap(&ctx, &line);
                    assert!(
                        codes(&text)
                            .iter()
                            .any(|c| c.starts_with("unknown-property")),
                        "`{}` accepts an undocumented property:\n{text}",
                        n.name
                    );
                }
            }
        }
    }
}

/// Every ```kdl block of the README and schemas/: valid KDL 2.0, and a whole experiment checks clean.
#[test]
fn kdl_blocks_in_docs_are_valid() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    docs.extend(common::files("schemas", "md"));
    let mut blocks = 0;
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut in_block = false;
        let mut block = String::new();
        for line in text.lines() {
            if line.trim() == "```kdl" {
                in_block = true;
                block.clear();
            } else if in_block && line.trim() == "```" {
                in_block = false;
                blocks += 1;
                assert!(
                    kdl::KdlDocument::parse_v2(&block).is_ok(),
                    "{}: invalid KDL block:\n{block}",
                    doc.display()
                );
                if block.contains("experiment")
                    && (block.contains("recstore-e2e")
                        || block.contains("bench ")
                        || block.contains("ep-bench")
                        || block.contains("dataset-rt"))
                {
                    let errs: Vec<String> = load_str("doc.kdl", &block, &Options::default())
                        .diags
                        .iter()
                        .filter(|d| d.is_error())
                        .map(|d| format!("{}: {}", d.code, d.message))
                        .collect();
                    assert!(
                        errs.is_empty(),
                        "{}: block does not check: {errs:?}\n{block}",
                        doc.display()
                    );
                }
            } else if in_block {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    assert!(
        blocks > 10,
        "expected kdl blocks in the docs, found {blocks}"
    );
}

/// The README's "This is `expr init bench`" block is what `expr init bench` writes, its comments
/// and blank lines aside (it read another `collect`, without a direction: a reader copying it
/// got no faster/slower verdicts) (helper 63).
#[test]
fn the_readme_init_block_is_what_init_writes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let after = readme
        .split_once("This is `expr init bench`:")
        .expect("the README shows `expr init bench`")
        .1;
    let block = after
        .split_once("```kdl\n")
        .and_then(|(_, b)| b.split_once("```"))
        .unwrap()
        .0;
    let out = common::Test::new()
        .args(["init", "bench", "-"])
        .run()
        .status(0);
    let code = |t: &str| -> Vec<String> {
        t.lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(code(block), code(&out.stdout));
}

#[test]
fn the_docs_are_valid_markdown_with_real_ranges_and_no_links_outside_the_repo() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for doc in [
        "README.md",
        "BENCHMARKS.md",
        "CONTRIBUTING.md",
        "schemas/reference.md",
    ] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let mut fence = false;
        let mut columns: Option<usize> = None;
        for (i, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                fence = !fence;
                continue;
            }
            if fence {
                continue;
            }
            assert!(
                !line.contains("9223372036854775")
                    && !line.contains("shared/")
                    && !line.contains("seeds/")
                    && !line.contains("../"),
                "{doc}:{}: {line}",
                i + 1
            );
            assert!(
                line.matches('`').count() % 2 == 0,
                "{doc}:{}: odd backticks: {line}",
                i + 1
            );
            if line.starts_with('|') {
                // cells split on pipes that are not escaped
                let n = line.replace("\\|", "").matches('|').count();
                match columns {
                    None => columns = Some(n),
                    Some(c) => assert_eq!(
                        n,
                        c,
                        "{doc}:{}: a row with another cell count: {line}",
                        i + 1
                    ),
                }
            } else {
                columns = None;
            }
        }
    }
}
