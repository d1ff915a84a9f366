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

/// A template environment with expr's filters.
pub fn env(quote: Quote) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_filter("date", |v: Value, kwargs: minijinja::value::Kwargs| {
        let f: Option<String> = kwargs.get("format")?;
        kwargs.assert_all_used()?;
        date_filter(v, f)
    });
    if quote != Quote::Plain {
        env.set_formatter(move |out, _state, value| {
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
