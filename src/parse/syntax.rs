//! Parsing KDL text into a `KdlDocument`, turning the kdl crate's errors into located expr
//! diagnostics with a file name, and recognising the common slips.

use std::sync::Arc;

use kdl::{KdlDocument, KdlNode};
use miette::SourceSpan;

use crate::parse::diag::{Code, Diag, Diags};
use crate::parse::source::Source;

/// The parser recurses once per nesting level (and a debug build's frames are large): it runs on
/// a thread with this much stack, whatever thread called it. `load::MAX_DEPTH` bounds the depth.
const PARSER_STACK: usize = 64 << 20;

/// `KdlDocument::parse_v2` on a thread with `PARSER_STACK` of stack.
fn parse_v2(text: &str) -> Result<KdlDocument, kdl::KdlError> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(PARSER_STACK)
            .spawn_scoped(s, || KdlDocument::parse_v2(text))
            .map(|h| h.join())
    })
    .ok()
    .and_then(Result::ok)
    .unwrap_or_else(|| KdlDocument::parse_v2(text))
}

/// Files at least this large are parsed in pieces on several threads.
const PARALLEL_FROM: usize = 256 * 1024;

/// The bytes of KDL text that are code, with their offsets: comments are skipped (a line
/// comment's closing newline is kept), and a string, raw string or multi-line string stands as
/// one `"` at its start. Every scan of the file's structure (depth, node boundaries, v1 syntax)
/// walks this.
pub fn code_bytes(text: &str) -> impl Iterator<Item = (usize, u8)> + '_ {
    let b = text.as_bytes();
    let mut i = 0usize;
    std::iter::from_fn(move || {
        while i < b.len() {
            let at = i;
            match b[i] {
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    let mut nest = 0usize;
                    while i < b.len() {
                        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                            nest += 1;
                            i += 2;
                        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                            nest -= 1;
                            i += 2;
                            if nest == 0 {
                                break;
                            }
                        } else {
                            i += 1;
                        }
                    }
                }
                b'#' => {
                    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                    if b.get(i + hashes) != Some(&b'"') {
                        i += 1;
                        return Some((at, b'#'));
                    }
                    // raw string: #"…"#, ##"…"##, …
                    let close: Vec<u8> = std::iter::once(b'"')
                        .chain(std::iter::repeat_n(b'#', hashes))
                        .collect();
                    i += hashes + 1;
                    while i < b.len() && !b[i..].starts_with(&close) {
                        i += 1;
                    }
                    i = (i + close.len()).min(b.len());
                    return Some((at, b'"'));
                }
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' {
                        if b[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i = (i + 1).min(b.len());
                    return Some((at, b'"'));
                }
                c => {
                    i += 1;
                    return Some((at, c));
                }
            }
        }
        None
    })
}

/// Offsets just after the newlines that end a top-level node: outside strings, comments and
/// braces, and not after a line continuation or a slashdash.
fn node_boundaries(text: &str) -> Vec<usize> {
    let (mut depth, mut out) = (0usize, Vec::new());
    let (mut line_tail, mut prev_tail) = (b'\n', b' ');
    for (i, c) in code_bytes(text) {
        match c {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b'\n' => {
                // `\` continues a node on the next line; `/-` comments out what follows
                if depth == 0 && line_tail != b'\\' && !(line_tail == b'-' && prev_tail == b'/') {
                    out.push(i + 1);
                }
                line_tail = b'\n';
                continue;
            }
            c if c.is_ascii_whitespace() => continue,
            _ => {}
        }
        prev_tail = line_tail;
        line_tail = c;
    }
    out
}

/// Shift every span of a node parsed from a piece of the file by the piece's offset.
fn shift(node: &mut KdlNode, by: usize) {
    let mv = |s: SourceSpan| SourceSpan::from((s.offset() + by, s.len()));
    node.set_span(mv(node.span()));
    let name = node.name_mut();
    name.set_span(mv(name.span()));
    if let Some(t) = node.ty_mut() {
        t.set_span(mv(t.span()));
    }
    for e in node.entries_mut() {
        e.set_span(mv(e.span()));
        if let Some(n) = e.name_mut() {
            n.set_span(mv(n.span()));
        }
        if let Some(t) = e.ty_mut() {
            t.set_span(mv(t.span()));
        }
    }
    if let Some(c) = node.children_mut() {
        c.set_span(mv(c.span()));
        for n in c.nodes_mut() {
            shift(n, by);
        }
    }
}

/// Parse a large file as pieces on several threads. `None` when any piece does not parse: the
/// caller parses the whole file, so diagnostics are the same as without pieces.
fn parse_in_pieces(text: &str) -> Option<KdlDocument> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    if threads < 2 {
        return None;
    }
    let bounds = node_boundaries(text);
    let mut cuts = vec![0usize];
    for k in 1..threads {
        let want = text.len() * k / threads;
        if let Some(&b) = bounds
            .iter()
            .find(|&&b| b >= want && b > *cuts.last().unwrap_or(&0))
        {
            cuts.push(b);
        }
    }
    cuts.push(text.len());
    cuts.dedup();
    if cuts.len() < 3 {
        return None;
    }
    let pieces: Vec<Option<KdlDocument>> = std::thread::scope(|s| {
        let handles: Vec<_> = cuts
            .windows(2)
            .map(|w| {
                let (a, z) = (w[0], w[1]);
                std::thread::Builder::new()
                    .stack_size(PARSER_STACK)
                    .spawn_scoped(s, move || {
                        let mut doc = KdlDocument::parse_v2(&text[a..z]).ok()?;
                        for n in doc.nodes_mut() {
                            shift(n, a);
                        }
                        Some(doc)
                    })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.ok().and_then(|h| h.join().ok()).flatten())
            .collect()
    });
    let mut pieces = pieces.into_iter();
    let mut doc = pieces.next()??;
    for p in pieces {
        doc.nodes_mut().append(p?.nodes_mut());
    }
    Some(doc)
}

/// Parse `src` as KDL 2.0. On failure every problem found is pushed to `diags`.
pub fn parse(src: &Arc<Source>, diags: &mut Diags) -> Option<KdlDocument> {
    if src.text.len() >= PARALLEL_FROM {
        if let Some(doc) = parse_in_pieces(&src.text) {
            return Some(doc);
        }
    }
    match parse_v2(&src.text) {
        Ok(doc) => Some(doc),
        Err(err) => {
            let addresses = unquoted_addresses(&src.text);
            let address_lines: Vec<usize> =
                addresses.iter().map(|(o, _)| src.line_col(*o).0).collect();
            for (offset, len) in &addresses {
                let token = src.slice(*offset, *len);
                let (key, sep) = property_key_before(&src.text, *offset);
                let fixed = match key {
                    Some(k) => format!("{k}{sep}\"{token}\""),
                    None => format!("\"{token}\""),
                };
                diags.push(
                    Diag::error(
                        Code::UnquotedAddress,
                        format!("`{token}` must be quoted: KDL 2.0 reads a bare `{token}` as a malformed number"),
                    )
                    .at(src, (*offset, *len).into())
                    .label("quote this value")
                    .help(format!("write `{fixed}`")),
                );
            }
            if addresses.is_empty() && is_kdl_v1(&src.text) {
                let span = err
                    .diagnostics
                    .first()
                    .map(|d| d.span)
                    .unwrap_or_else(|| (0, 0).into());
                diags.push(
                    Diag::error(Code::KdlV1, "this file looks like KDL v1; expr reads KDL 2.0")
                        .at(src, clamp(src, span))
                        .label("not valid KDL 2.0")
                        .help("in KDL 2.0 booleans are `#true`/`#false`, null is `#null` and raw strings are `#\"…\"#`; convert with the kdl crate's `v1_to_v2` or by hand"),
                );
                return None;
            }
            for d in err.diagnostics {
                let (start, end) = (d.span.offset(), d.span.offset() + d.span.len());
                let line = src.line_col(start).0;
                let covers_address = addresses.iter().any(|(o, _)| *o >= start && *o <= end);
                if covers_address || address_lines.contains(&line) {
                    continue;
                }
                let word = src.slice(start, d.span.len()).trim();
                if matches!(word, "true" | "false" | "null") {
                    diags.push(
                        Diag::error(Code::KdlSyntax, format!("bare `{word}` is not a KDL 2.0 value"))
                            .at(src, clamp(src, d.span))
                            .label("write #".to_string() + word)
                            .help(format!("KDL 2.0 writes booleans as `#true` / `#false` and null as `#null`: use `#{word}`")),
                    );
                    continue;
                }
                let mut diag = Diag::error(
                    Code::KdlSyntax,
                    d.message
                        .clone()
                        .unwrap_or_else(|| "invalid KDL".into())
                        .to_lowercase()
                        .trim_end_matches('.')
                        .to_string(),
                )
                .at(src, clamp(src, d.span));
                diag = diag.label(d.label.clone().unwrap_or_else(|| "here".into()));
                diag = diag.help(
                    d.help
                        .clone()
                        .unwrap_or_else(|| "see https://kdl.dev for KDL 2.0 syntax; strings with `.`, `/` or `:` need quotes".into()),
                );
                diags.push(diag);
            }
            if !diags.has_errors() {
                diags.push(
                    Diag::error(Code::KdlSyntax, "invalid KDL")
                        .at(src, (0, 0).into())
                        .help("see https://kdl.dev for KDL 2.0 syntax"),
                );
            }
            None
        }
    }
}

fn clamp(src: &Source, span: SourceSpan) -> SourceSpan {
    let len = src.text.len();
    let off = span.offset().min(len);
    (off, span.len().min(len - off)).into()
}

/// Whether a file that is not KDL 2.0 reads as KDL 1: it uses v1's bare `true`/`false`/`null`
/// or `r"…"` raw strings, and none of 2.0's `#true`/`#false`/`#null`/`#"…"#`.
fn is_kdl_v1(text: &str) -> bool {
    let (mut v1, mut v2) = (false, false);
    let b = text.as_bytes();
    let mut skip_to = 0usize;
    for (i, c) in code_bytes(text) {
        if i < skip_to {
            continue;
        }
        let before = if i == 0 { b'\n' } else { b[i - 1] };
        match c {
            // a 2.0 keyword or a raw string (the string itself comes as `"`)
            b'#' if matches!(b.get(i + 1), Some(b't' | b'f' | b'n' | b'i')) => v2 = true,
            b'"' if b[i] == b'#' => v2 = true,
            b'r' if !before.is_ascii_alphanumeric()
                && before != b'-'
                && b.get(i + 1) == Some(&b'"') =>
            {
                v1 = true
            }
            c if c.is_ascii_alphabetic() && matches!(before, b' ' | b'\t' | b'=') => {
                let end = b[i..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_'))
                    .map_or(b.len(), |p| i + p);
                // a bare keyword used as a value: not first on its line
                let first_on_line = text[..i]
                    .rsplit('\n')
                    .next()
                    .is_none_or(|l| l.trim().is_empty());
                if matches!(&text[i..end], "true" | "false" | "null") && !first_on_line {
                    v1 = true;
                }
                skip_to = end;
            }
            _ => {}
        }
    }
    v1 && !v2
}

/// Bare tokens that look like dotted addresses (`10.0.2.190`, `1.2.3`), outside strings and comments.
fn unquoted_addresses(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'"' {
            // skip a quoted string (escapes included)
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                if bytes[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            continue;
        }
        let starts_token = i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'=' | b'\n' | b'(');
        if starts_token && c.is_ascii_digit() {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || matches!(bytes[i], b'.' | b'-' | b'_' | b':'))
            {
                i += 1;
            }
            let tok = &text[start..i];
            if tok.matches('.').count() >= 2 {
                out.push((start, i - start));
            }
            continue;
        }
        i += 1;
    }
    out
}

/// For a value at `offset`, the property key written just before it (`ip=`), if any.
fn property_key_before(text: &str, offset: usize) -> (Option<&str>, &'static str) {
    let before = &text[..offset];
    if let Some(stripped) = before.strip_suffix('=') {
        let start = stripped
            .rfind(|c: char| c.is_whitespace() || c == '{' || c == ';')
            .map(|i| i + 1)
            .unwrap_or(0);
        return (Some(&stripped[start..]), "=");
    }
    (None, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_bytes_skip_comments_and_fold_strings() {
        let text = "a \"x{y\" // c {\n/* b { /* n */ */ #\"r{\"# {}\n";
        let code: String = code_bytes(text).map(|(_, c)| c as char).collect();
        assert_eq!(code, "a \" \n \" {}\n");
        assert_eq!(
            node_boundaries("a {\n b\n}\nc \\\n d\ne\n"),
            vec![9, 16, 18]
        );
        assert!(
            is_kdl_v1("x true\n") && !is_kdl_v1("x true #false\n") && !is_kdl_v1("x \"true\"\n")
        );
    }

    #[test]
    fn finds_unquoted_addresses_outside_strings_and_comments() {
        let t = "host a ip=10.0.2.190 // 1.2.3.4\nhost b ip=\"10.0.0.1\" x 1.5\n";
        let found = unquoted_addresses(t);
        assert_eq!(found, vec![(10, 10)]);
    }

    #[test]
    fn v1_detection() {
        assert!(is_kdl_v1("node flag=true\n"));
        assert!(!is_kdl_v1("node flag=#true\n"));
    }
}
