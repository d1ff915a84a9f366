//! Parsing KDL text into a `KdlDocument`, turning the kdl crate's errors into located expr
//! diagnostics with a file name, and recognising the common slips.

use std::sync::Arc;

use kdl::KdlDocument;
use miette::SourceSpan;

use crate::diag::{Code, Diag, Diags};
use crate::source::Source;

/// Parse `src` as KDL 2.0. On failure every problem found is pushed to `diags`.
pub fn parse(src: &Arc<Source>, diags: &mut Diags) -> Option<KdlDocument> {
    match KdlDocument::parse_v2(&src.text) {
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

fn is_kdl_v1(text: &str) -> bool {
    KdlDocument::parse_v1(text).is_ok()
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
