//! summary.md: the report's blocks as GitHub markdown. Every block starts after a blank line;
//! text is escaped here (a `|` or a newline in a lane name stays in its cell), never by a kind.

use std::fmt::Write;

use crate::kind_api::doc::{Block, Doc, Span, Text};
use crate::report::format::{Format, Report};
use crate::results::atomic;
use crate::util::fmt::{md_code, md_text};
use crate::util::lang::Lang;

/// summary.md: git HEAD, hostname (labelled in English), then the report's blocks.
pub struct Markdown;

impl Format for Markdown {
    fn write(&self, r: &Report) -> Result<Vec<String>, String> {
        // DESIGN (the RecStore runbook, whose summary.md is Chinese): line 1 the repo's HEAD,
        // line 2 the hostname, bare; an English report labels them
        let (head, host) = (md_text(&r.data.git_head), md_text(&r.data.hostname));
        let text = match r.data.lang {
            Lang::Zh => format!("{head}\n{host}\n{}", render(r.doc())),
            Lang::En => format!("commit: {head}\nhost: {host}\n{}", render(r.doc())),
        };
        atomic::write(&r.dir.join("summary.md"), text.as_bytes())?;
        Ok(vec!["summary.md".into()])
    }
}

/// The blocks as markdown, each after a blank line.
pub fn render(doc: &Doc) -> String {
    let mut o = String::new();
    for b in &doc.0 {
        o.push('\n');
        match b {
            Block::Heading(level, t) => {
                let _ = writeln!(o, "{} {}", "#".repeat(*level as usize), line(t));
            }
            Block::Para(t) => {
                let _ = writeln!(o, "{}", line(t));
            }
            Block::List { lead, items } => {
                if let Some(l) = lead {
                    let _ = writeln!(o, "{}", line(l));
                }
                for i in items {
                    let _ = writeln!(o, "- {}", line(i));
                }
            }
            Block::Table(t) => {
                // an empty header cell is `| |`, as a table's corner
                o.push('|');
                for h in &t.head {
                    let h = text(h);
                    if h.is_empty() {
                        o.push_str(" |");
                    } else {
                        let _ = write!(o, " {h} |");
                    }
                }
                let _ = writeln!(o, "\n|{}", "---|".repeat(t.head.len()));
                for r in &t.rows {
                    let cells: Vec<String> = r.iter().map(text).collect();
                    let _ = writeln!(o, "| {} |", cells.join(" | "));
                }
            }
        }
    }
    o
}

/// Text of a table cell as markdown: escaped so it stays on its line and in its cell; a
/// backtick inside code becomes `'` (it would end the span).
pub fn text(t: &Text) -> String {
    spans(t, true)
}

/// Text outside a table: a `|` is plain there; a line break or control character is still
/// written as an escape, so the text stays one line.
fn line(t: &Text) -> String {
    spans(t, false)
}

/// Plain text outside a table: control characters escaped, `|` kept.
fn one_line(s: &str) -> String {
    s.split('|').map(md_text).collect::<Vec<_>>().join("|")
}

/// Text a markdown viewer would take for HTML (`<img …>`, `</b>`, `<!--`): its `<` written
/// `&lt;`, so a lane name never becomes markup; any other `<` (`a < b`) stays as it is.
fn no_tags(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '<'
            && it
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?'))
        {
            o.push_str("&lt;");
        } else {
            o.push(c);
        }
    }
    o
}

fn spans(t: &Text, cell: bool) -> String {
    let mut o = String::new();
    for s in &t.0 {
        match s {
            Span::Plain(p) if !cell => o.push_str(&no_tags(&one_line(p))),
            Span::Plain(p) => o.push_str(&no_tags(&md_text(p))),
            Span::Code(c) => {
                let _ = write!(o, "`{}`", md_code(c).replace('`', "'"));
            }
            Span::Strong(s) => {
                let _ = write!(o, "**{}**", no_tags(&md_text(s)));
            }
            Span::Link { text, href } => {
                let _ = write!(o, "[{}]({})", no_tags(&md_text(text)), href);
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind_api::doc::Table;

    #[test]
    fn html_in_plain_text_is_not_markup_and_code_stays_as_written() {
        let t = Text::plain("lane <img src=x onerror=alert(1)> and a < b, </b>").and_code("<img>");
        assert_eq!(
            text(&t),
            "lane &lt;img src=x onerror=alert(1)> and a < b, &lt;/b>`<img>`"
        );
    }

    #[test]
    fn blocks_render_after_a_blank_line_and_text_is_escaped_once() {
        let mut d = Doc::default();
        d.h2("结果");
        let mut t = Table::new(["", "lane"]);
        t.row(["a|b", "x\ny"]);
        d.table(t);
        d.para(Text::plain("lane ").and_code("q`z").and(" ok"));
        d.para("a|b\nc");
        d.list(
            Some(Text::code("fast").and(" 最快：")),
            vec![Text::plain("2.00 times faster than ").and_code("slow")],
        );
        d.label("n=1");
        assert_eq!(
            render(&d),
            "\n## 结果\n\n| | lane |\n|---|---|\n| a\\|b | x\\ny |\n\nlane `q'z` ok\n\na|b\\nc\n\n`fast` 最快：\n- 2.00 times faster than `slow`\n\n**n=1**\n"
        );
    }
}
