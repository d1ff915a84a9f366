//! schemas/reference.md, generated from the vocabulary tables of `schema` and of every kind.

// a markdown table cell: `|` and line breaks escaped
use crate::util::markup::{md_code as cell, md_head, md_row};
use std::fmt::Write;

use crate::model::schema::{self, Args, Field, NodeSpec};

/// Render the language reference (schemas/reference.md).
pub fn markdown() -> String {
    let mut out = String::new();
    out.push_str("# expr language reference\n\n");
    out.push_str("Generated from `src/schema.rs` (`EXPR_BLESS=1 cargo test --test schema` regenerates it).\n");
    out.push_str(
        "A test checks that every name here is accepted by the decoder and that every name the\n",
    );
    out.push_str("decoder accepts is here. Files are KDL 2.0: quote strings that are not plain identifiers\n");
    out.push_str(
        "(addresses, paths, names with `+`), and write booleans as `#true` / `#false`.\n\n",
    );
    section(&mut out, "Top level", &crate::kinds::top_nodes());
    section(&mut out, "Inside `experiment`", schema::EXPERIMENT_CHILDREN);
    section(&mut out, "Inside `host`", schema::HOST_CHILDREN);
    section(
        &mut out,
        "Inside every benchmark kind",
        schema::COMMON_CHILDREN,
    );
    section(
        &mut out,
        "Inside `collect` (a per-step CSV's timing model: `collect \"csv\" … { … }`)",
        schema::COLLECT_CHILDREN,
    );
    for kind in crate::kinds::all() {
        let title = format!("Inside `{}`: placement and steps", kind.node);
        section(&mut out, &title, kind.children);
        let _ = writeln!(out, "## Settings of `{}`\n", kind.node);
        let _ = writeln!(out, "{}\n", kind.settings_doc);
        out.push_str(&field_table("setting", kind.settings, |s| {
            format!("{} {}", s.name, cell(s.example))
        }));
        out.push('\n');
    }
    out.push_str("## Diagnostics\n\n| code | catches |\n|---|---|\n");
    for c in crate::kinds::all_codes() {
        let _ = writeln!(out, "| `{}` | {} |", c.name(), c.what());
    }
    out
}

/// A table of settings or properties, a row each: its name, type, default, meaning and example
/// (as `example` writes it).
fn field_table(what: &str, fields: &[Field], example: impl Fn(&Field) -> String) -> String {
    let mut out = md_head(&[what, "type", "default", "meaning", "example"]);
    for f in fields {
        out.push_str(&md_row(&[
            format!("`{}`", f.name),
            cell(&f.ty.describe()),
            cell(&default_text(f)),
            cell(f.doc),
            format!("`{}`", example(f)),
        ]));
    }
    out
}

fn default_text(f: &Field) -> String {
    match (f.default, f.optional) {
        (Some(d), _) => format!("`{d}`"),
        (None, true) => "unset".into(),
        (None, false) => "required".into(),
    }
}

fn section(out: &mut String, title: &str, nodes: &[NodeSpec]) {
    let _ = writeln!(out, "## {title}\n");
    for n in nodes {
        let _ = writeln!(out, "### `{}`\n\n{}\n", n.name, n.doc);
        match n.args {
            Args::None => {}
            Args::One(a) => {
                let _ = writeln!(
                    out,
                    "Argument: {} — {} ({}).\n",
                    a.name,
                    a.doc,
                    a.ty.describe()
                );
            }
            Args::Many(a) => {
                let _ = writeln!(out, "Arguments: {} — {}.\n", a.name, a.doc);
            }
        }
        if !n.props.is_empty() {
            out.push_str(&field_table("property", n.props, |p| cell(p.example)));
            out.push('\n');
        }
        if !n.example.is_empty() {
            let _ = writeln!(out, "```kdl\n{}\n```\n", n.example);
        }
    }
}
