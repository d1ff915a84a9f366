//! The minijinja environment with expr's filters (`date`), shell-quoting or not: the experiment's
//! templates (`model::template`, with their limits and located errors) and the report's custom
//! templates build on it.

use minijinja::{Environment, UndefinedBehavior, Value};

/// Whether interpolated values are shell-quoted (commands) or inserted as they are (paths).
#[derive(Clone, Copy, PartialEq)]
pub enum Quote {
    Shell,
    Plain,
    /// One argument of a command run without a shell: the value as [`Quote::Shell`] would
    /// quote it, unquoted (none is empty, as there).
    Arg,
}

fn date_filter(v: Value, format: Option<String>) -> Result<String, minijinja::Error> {
    let s = v.to_string();
    let t = chrono::DateTime::parse_from_rfc3339(&s).map_err(|e| {
        minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("not a timestamp: {e}"),
        )
    })?;
    let format = format.as_deref().unwrap_or("%Y%m%d%H%M%S");
    let items: Vec<chrono::format::Item> = chrono::format::StrftimeItems::new(format).collect();
    if items
        .iter()
        .any(|i| matches!(i, chrono::format::Item::Error))
    {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("`{format}` is not a date format chrono can print (strftime codes such as %Y %m %d %H %M %S)"),
        ));
    }
    let mut out = String::new();
    use std::fmt::Write;
    write!(out, "{}", t.format_with_items(items.into_iter())).map_err(|_| {
        minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("`{format}` cannot be printed for this date"),
        )
    })?;
    Ok(out)
}

/// The most operators (`+ - * / % ~ | . [ (`, `not and or if else is in`) one `{{ … }}` or
/// `{% … %}` block may hold. minijinja limits nested brackets but builds and folds a chain of
/// operators recursively: some thousands in one expression overflow the stack. A command line's
/// expression holds a handful.
pub const MAX_OPERATORS: usize = 256;

/// The first block of `text` with more than [`MAX_OPERATORS`] operators: its byte range and
/// count. Quoted strings inside a block are passed over; an unclosed block runs to the end.
pub fn too_many_operators(text: &str) -> Option<(std::ops::Range<usize>, usize)> {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at + 1 < bytes.len() {
        let close: &[u8] = match &bytes[at..at + 2] {
            b"{{" => b"}}",
            b"{%" => b"%}",
            _ => {
                at += 1;
                continue;
            }
        };
        let start = at;
        let (mut i, mut n, mut quote) = (at + 2, 0usize, None::<u8>);
        let mut word = String::new();
        let count_word = |w: &mut String, n: &mut usize| {
            if matches!(
                w.as_str(),
                "not" | "and" | "or" | "if" | "else" | "is" | "in"
            ) {
                *n += 1;
            }
            w.clear();
        };
        while i < bytes.len() {
            let b = bytes[i];
            if let Some(q) = quote {
                if b == b'\\' {
                    i += 1;
                } else if b == q {
                    quote = None;
                }
                i += 1;
                continue;
            }
            if bytes[i..].starts_with(close) {
                break;
            }
            if b.is_ascii_alphanumeric() || b == b'_' {
                word.push(b as char);
            } else {
                count_word(&mut word, &mut n);
                match b {
                    b'\'' | b'"' => quote = Some(b),
                    b'+' | b'-' | b'*' | b'/' | b'%' | b'~' | b'|' | b'.' | b'[' | b'(' => n += 1,
                    _ => {}
                }
            }
            i += 1;
        }
        count_word(&mut word, &mut n);
        let end = (i + close.len()).min(bytes.len());
        if n > MAX_OPERATORS {
            return Some((start..end, n));
        }
        at = end;
    }
    None
}

/// A shell command template with each `{{ }}` tag that stands inside the author's quotes moved
/// out of them: the quote is closed before the tag and opened again after it, so
/// `echo 'm={{ v }}'` renders as `echo 'm='VALUE''` and `"m={{ v }}"` as `"m="VALUE""`.
/// A value is quoted as a shell word of its own (`'$(x)'`); inside the author's quotes its
/// quotes would close and reopen theirs, and the value would stand unquoted. A tag in a `#`
/// comment has its value's newlines made blanks (a newline would end the comment, and the rest
/// of the value would run).
///
/// The quotes are followed as a POSIX shell reads them: `'…'`, `$'…'`, `"…"` with backslash
/// escapes, `$( )` and backticks (a context of their own, inside double quotes too), a
/// backslash outside quotes, and `#` comments. `{# #}` and `{% %}` tags leave the state as it
/// is; the text of a `{% raw %}` block is read as text. Where the text holds what this reading
/// does not follow — a heredoc, a `case` (its patterns' `)`), a tag inside `${…}` or after a
/// backslash — the template is left as written: moving a tag on a wrong reading would break a
/// command that worked.
pub fn tags_out_of_quotes(t: &str) -> std::borrow::Cow<'_, str> {
    #[derive(Clone, Copy, PartialEq)]
    enum Ctx {
        /// Outside quotes; `end`: the byte that closes this context (`)` of `$(`, a backtick).
        Plain {
            end: Option<u8>,
            parens: usize,
        },
        Single,
        AnsiC,
        Double,
        /// `${…}`, to its `}`.
        Param,
    }
    if !t.contains("{{") {
        return std::borrow::Cow::Borrowed(t);
    }
    let keep = std::borrow::Cow::Borrowed(t);
    let b = t.as_bytes();
    let mut out = String::with_capacity(t.len() + 8);
    let mut stack = vec![Ctx::Plain {
        end: None,
        parens: 0,
    }];
    let mut raw = false;
    let mut moved = false;
    let mut i = 0;
    // the index after the last character a backslash escaped (that one is no blank, no `#`)
    let mut escaped_to = usize::MAX;
    // heredocs begun on this line: (delimiter, `<<-`)
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    // the end of a `{% … %}` / `{# … #}` / `{{ … }}` tag from `i` (strings inside skipped)
    let tag_end = |i: usize, close: &[u8; 2]| -> usize {
        let mut j = i + 2;
        let mut q: Option<u8> = None;
        while j < b.len() {
            match q {
                Some(_) if b[j] == b'\\' => j += 1,
                Some(c) if b[j] == c => q = None,
                Some(_) => {}
                None if (b[j] == b'"' || b[j] == b'\'') && close != b"#}" => q = Some(b[j]),
                None if b[j..].starts_with(close) => return j + 2,
                None => {}
            }
            j += 1;
        }
        b.len()
    };
    // a word of the text starting at `i` (for `case` and `<<`)
    let word_at = |i: usize| -> &str {
        let e = t[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(t.len(), |k| i + k);
        &t[i..e]
    };
    while i < b.len() {
        let top = *stack.last().unwrap_or(&Ctx::Plain {
            end: None,
            parens: 0,
        });
        if b[i..].starts_with(b"{%") || (!raw && b[i..].starts_with(b"{#")) {
            let close = if b[i + 1] == b'%' { b"%}" } else { b"#}" };
            let e = tag_end(i, close);
            let tag = &t[i..e];
            if close == b"%}" {
                let word = tag[2..tag.len().saturating_sub(2).max(2)]
                    .trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace());
                if word == "raw" {
                    raw = true;
                } else if word == "endraw" {
                    raw = false;
                } else if raw {
                    // text inside the raw block
                    out.push_str(&t[i..i + 1]);
                    i += 1;
                    continue;
                }
            }
            out.push_str(tag);
            i = e;
            continue;
        }
        if !raw && b[i..].starts_with(b"{{") {
            let e = tag_end(i, b"}}");
            let tag = &t[i..e];
            // (what closes the author's quote, what opens it again)
            let (close, open) = match top {
                Ctx::Single => ("'", "'"),
                Ctx::AnsiC => ("'", "$'"),
                Ctx::Double => ("\"", "\""),
                Ctx::Param => return keep,
                Ctx::Plain { .. } => ("", ""),
            };
            // a backslash before the tag would escape the quote put there
            if out.ends_with('\\') && top != Ctx::Single {
                return keep;
            }
            if open.is_empty() {
                out.push_str(tag);
                i = e;
                continue;
            }
            moved = true;
            // `{{-` trims the blanks before it: inside the quotes, as it would have
            let mut tag = tag.to_string();
            if let Some(rest) = tag.strip_prefix("{{-") {
                let kept = out.trim_end_matches([' ', '\t', '\n', '\r']).len();
                out.truncate(kept);
                tag = format!("{{{{{rest}");
            }
            let trim_after = tag.ends_with("-}}");
            if trim_after {
                tag = format!("{}}}}}", &tag[..tag.len() - 3]);
            }
            out.push_str(close);
            out.push_str(&tag);
            out.push_str(open);
            i = e;
            if trim_after {
                while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
                    i += 1;
                }
            }
            continue;
        }
        let c = b[i];
        let n = b.get(i + 1).copied();
        // a backslash escapes the next character, but a `{` after it still opens a tag for the
        // template (`\{{ v }}`): that tag is looked at on its own
        let esc = if n == Some(b'{') { 1 } else { 2 };
        let mut step = 1;
        // `$(` and `${` (not `${{`, a tag after a `$`) open a context of their own, outside
        // quotes and inside double quotes alike
        let opens = |n: Option<u8>| match n {
            Some(b'(') => Some(Ctx::Plain {
                end: Some(b')'),
                parens: 0,
            }),
            Some(b'{') if b.get(i + 2) != Some(&b'{') => Some(Ctx::Param),
            _ => None,
        };
        let blank_before = i == 0
            || (escaped_to != i
                && matches!(b[i - 1], b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'('));
        match top {
            Ctx::Single => {
                if c == b'\'' {
                    stack.pop();
                }
            }
            Ctx::AnsiC => {
                if c == b'\\' {
                    step = esc;
                } else if c == b'\'' {
                    stack.pop();
                }
            }
            Ctx::Param => {
                if c == b'}' {
                    stack.pop();
                }
            }
            Ctx::Double => match c {
                b'\\' => step = esc,
                b'"' => {
                    stack.pop();
                }
                b'$' if opens(n).is_some() => {
                    stack.extend(opens(n));
                    step = 2;
                }
                b'`' => stack.push(Ctx::Plain {
                    end: Some(b'`'),
                    parens: 0,
                }),
                _ => {}
            },
            Ctx::Plain { end, parens } => match c {
                b'\\' => step = esc,
                b'\'' => stack.push(Ctx::Single),
                b'$' if n == Some(b'\'') => {
                    stack.push(Ctx::AnsiC);
                    step = 2;
                }
                b'$' if opens(n).is_some() => {
                    stack.extend(opens(n));
                    step = 2;
                }
                // a heredoc: its body, from the next line to its delimiter, is text
                b'<' if n == Some(b'<') && b.get(i + 2) != Some(&b'<') => {
                    let mut j = i + 2;
                    let strip = b.get(j) == Some(&b'-');
                    if strip {
                        j += 1;
                    }
                    while j < b.len() && matches!(b[j], b' ' | b'\t') {
                        j += 1;
                    }
                    let Some((word, we)) = heredoc_word(t, j) else {
                        return keep;
                    };
                    heredocs.push((word, strip));
                    out.push_str(&t[i..we]);
                    i = we;
                    continue;
                }
                b'\n' if !heredocs.is_empty() => {
                    out.push('\n');
                    i += 1;
                    for (word, strip) in std::mem::take(&mut heredocs) {
                        loop {
                            if i >= b.len() {
                                // no delimiter line: not a reading to move tags on
                                return keep;
                            }
                            let le = t[i..].find('\n').map_or(b.len(), |k| i + k);
                            let line = &t[i..le];
                            let line = if strip {
                                line.trim_start_matches('\t')
                            } else {
                                line
                            };
                            let next = (le + 1).min(b.len());
                            out.push_str(&t[i..next]);
                            i = next;
                            if line == word {
                                break;
                            }
                        }
                    }
                    continue;
                }
                b'c' if blank_before && word_at(i) == "case" => return keep,
                b'"' => stack.push(Ctx::Double),
                b'`' if end == Some(b'`') => {
                    stack.pop();
                }
                b'`' => stack.push(Ctx::Plain {
                    end: Some(b'`'),
                    parens: 0,
                }),
                b'(' => {
                    if let Some(Ctx::Plain { parens, .. }) = stack.last_mut() {
                        *parens += 1;
                    }
                }
                b')' if parens > 0 => {
                    if let Some(Ctx::Plain { parens, .. }) = stack.last_mut() {
                        *parens -= 1;
                    }
                }
                b')' if end == Some(b')') => {
                    stack.pop();
                }
                b'#' if blank_before => {
                    // a comment, to the end of its line: a value's newline would end it, and
                    // the rest of the value would run
                    let e = t[i..].find('\n').map_or(b.len(), |k| i + k);
                    let mut k = i;
                    while let Some(at) = t[k..e].find("{{").map(|x| k + x) {
                        out.push_str(&t[k..at]);
                        let te = tag_end(at, b"}}").min(e);
                        let tag = &t[at..te];
                        let (open, inner, close) = split_tag(tag);
                        moved = true;
                        out.push_str(&format!(
                            "{open} ({inner}) | string | replace(\"\\n\", \" \") {close}"
                        ));
                        k = te;
                    }
                    out.push_str(&t[k..e]);
                    i = e;
                    continue;
                }
                _ => {}
            },
        }
        if c == b'\\' && step == 2 {
            escaped_to = i + 2;
        }
        let e = (i + step).min(b.len());
        // whole characters: a step of two never splits one (the second byte is ASCII or the
        // escaped character, copied whole below)
        let e = (e..=b.len())
            .find(|k| t.is_char_boundary(*k))
            .unwrap_or(b.len());
        out.push_str(&t[i..e]);
        i = e;
    }
    if moved {
        std::borrow::Cow::Owned(out)
    } else {
        keep
    }
}

/// A heredoc's delimiter from `j` (`EOF`, `'EOF'`, `"EOF"`, `\EOF`) and where it ends; `None`
/// for none, or one a template tag makes.
fn heredoc_word(t: &str, j: usize) -> Option<(String, usize)> {
    let b = t.as_bytes();
    let (word, end) = match b.get(j)? {
        q @ (b'\'' | b'"') => {
            let e = t[j + 1..].find(*q as char)? + j + 1;
            (t[j + 1..e].to_string(), e + 1)
        }
        _ => {
            let e = t[j..]
                .find([' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')'])
                .map_or(t.len(), |k| j + k);
            (t[j..e].replace('\\', ""), e)
        }
    };
    (!word.is_empty() && !word.contains("{{") && !word.contains("{%")).then_some((word, end))
}

/// A `{{ … }}` tag as (its opening with any `-`, the expression, its closing with any `-`).
fn split_tag(tag: &str) -> (&str, &str, &str) {
    let open = if tag.starts_with("{{-") { "{{-" } else { "{{" };
    let close = if tag.ends_with("-}}") && tag.len() >= open.len() + 3 {
        "-}}"
    } else if tag.ends_with("}}") {
        "}}"
    } else {
        ""
    };
    let inner = &tag[open.len()..tag.len() - close.len()];
    (open, inner, close)
}

/// The widest `indent` a template may ask for.
pub const MAX_INDENT: usize = 1024;

/// The most items a list or map a template prints may hold (a command line holds a handful).
pub const MAX_PRINTED_ITEMS: usize = 100_000;

/// A template environment with expr's filters.
pub fn env(quote: Quote) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_filter("date", |v: Value, kwargs: minijinja::value::Kwargs| {
        let f: Option<String> = kwargs.get("format")?;
        kwargs.assert_all_used()?;
        date_filter(v, f)
    });
    // `indent(3000000000)` allocated the gigabytes before any cap on the rendered text
    env.add_filter(
        "indent",
        |value: minijinja::value::StringInput<'_>,
         width: Option<usize>,
         first: Option<bool>,
         blank: Option<bool>,
         kwargs: minijinja::value::Kwargs|
         -> Result<Value, minijinja::Error> {
            let w = width.or(kwargs.peek::<Option<usize>>("width")?);
            if w.is_some_and(|w| w > MAX_INDENT) {
                return Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    format!("indent width {} is more than {MAX_INDENT}", w.unwrap_or(0)),
                ));
            }
            minijinja::filters::indent(value, width, first, blank, kwargs)
        },
    );
    if quote != Quote::Plain {
        env.set_formatter(move |out, _state, value| {
            // a list repeated by `*` is made as it is printed: its length is known first
            if value.kind() != minijinja::value::ValueKind::String {
                if let Some(n) = value.len().filter(|n| *n > MAX_PRINTED_ITEMS) {
                    return Err(minijinja::Error::new(
                        minijinja::ErrorKind::InvalidOperation,
                        format!("a value of {n} items is too long to print (at most {MAX_PRINTED_ITEMS})"),
                    ));
                }
            }
            let s = if value.is_undefined() || value.is_none() {
                String::new()
            } else {
                value.to_string()
            };
            let s = match quote {
                Quote::Shell => crate::util::shell::quote(&s),
                _ => s,
            };
            out.write_str(&s).map_err(|_| {
                minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write failed")
            })
        });
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_are_counted_per_block_outside_strings() {
        let chain = vec!["x"; 300].join(" and ");
        let text = format!("a {{{{ x + y }}}} b {{% if {chain} %}}c{{% endif %}}");
        let (range, n) = too_many_operators(&text).expect("the if block");
        assert_eq!(n, 300, "299 `and`s and the `if`");
        assert!(text[range].starts_with("{% if x and"));
        assert_eq!(
            too_many_operators(&format!("{{{{ '{}' }}}}", ".".repeat(999))),
            None
        );
        assert_eq!(
            too_many_operators(&format!("{{{{ \"a\\\"{}\" }}}}", "|".repeat(999))),
            None
        );
        // an unclosed block runs to the end
        let open = format!("{{{{ x{}", "|f".repeat(300));
        assert_eq!(
            too_many_operators(&open).map(|(r, n)| (r.end, n)),
            Some((open.len(), 300))
        );
        assert_eq!(too_many_operators("plain text + - . | no blocks"), None);
    }
}
