//! Secrets: environment values whose names suggest one, masked wherever expr shows them.

/// Serialize an environment with secret-looking values masked.
pub fn masked_env<S: serde::Serializer>(env: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(env.len()))?;
    for (k, v) in env {
        seq.serialize_element(&(k, mask(k, v)))?;
    }
    seq.end()
}

/// Whether an environment variable's name suggests a secret.
pub fn is_secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    ["TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "KEY"]
        .iter()
        .any(|s| n.replace("TOKENIZER", "").contains(s))
        // a personal access token (`GH_PAT`), not `PATH`
        || n == "PAT"
        || n.ends_with("_PAT")
}

/// The values of this process's secrets (env values whose names suggest one, as the run knows
/// them), each in every form an output writes it: what a step prints is masked with them
/// wherever expr shows it (a log's tail or a quoted cell in a reason, on the terminal, in the
/// journal and every report file).
static SECRETS: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Remember secret values to mask (values shorter than 4 bytes are not: they would mask
/// ordinary text).
pub fn register_secrets<'v>(values: impl IntoIterator<Item = &'v str>) {
    if let Ok(mut s) = SECRETS.write() {
        for v in values {
            // a value of several lines is masked whole and line by line: a log's tail may
            // begin after its first line
            let lines = v.lines().filter(|l| l.trim().len() >= 4);
            for part in std::iter::once(v).chain(lines) {
                for form in forms(part) {
                    if form.len() >= 4 && !s.contains(&form) {
                        s.push(form);
                    }
                }
            }
        }
        // the longest first: a secret that contains another is masked whole, and an escaped
        // form before the raw one it holds
        s.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }
}

/// A value as each output writes it: as is; quoted as a reason quotes a cell (`{:?}`), in
/// JSON, in HTML or SVG, in Markdown, in a CSV cell (quotes doubled).
fn forms(v: &str) -> Vec<String> {
    let inner = |q: String| {
        q.strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .map(str::to_string)
            .unwrap_or(q)
    };
    vec![
        v.to_string(),
        inner(format!("{v:?}")),
        inner(serde_json::to_string(v).unwrap_or_default()),
        crate::util::markup::html_text(v),
        crate::util::markup::md_code(v),
        crate::util::markup::md_text(v),
        v.replace('"', "\"\""),
        // a shell's: single-quoted (commands.sh, `set -x`: `'tok'\''x'`), and each special
        // character escaped (`printf %q`: `tok\'x`)
        v.replace('\'', "'\\''"),
        v.chars()
            .map(|c| {
                if c.is_alphanumeric() || "-_./=:,+@%^".contains(c) {
                    c.to_string()
                } else {
                    format!("\\{c}")
                }
            })
            .collect(),
    ]
}

/// Whether any secret is registered (nothing to mask otherwise).
pub fn any() -> bool {
    SECRETS.read().is_ok_and(|s| !s.is_empty())
}

/// `text` with every registered secret value (in any of its forms) written `****`.
pub fn mask_known(text: &str) -> String {
    mask_known_as(text, |_| 4)
}

/// `text` with every registered secret value written as as many `*` as it has characters: a
/// diagnostic's excerpt (an argument of `--set` or `--only` that holds a secret) keeps its
/// columns, so its underline still stands under what it marks.
pub fn mask_known_same_width(text: &str) -> String {
    mask_known_as(text, |v| v.chars().count())
}

/// [`mask_known_same_width`] with as many `*` as bytes: a source's text, whose spans are byte
/// offsets. (All three: the registered forms, longest first, each written as `stars(form)` `*`.)
pub fn mask_known_same_bytes(text: &str) -> String {
    mask_known_as(text, str::len)
}

fn mask_known_as(text: &str, stars: fn(&str) -> usize) -> String {
    let Ok(s) = SECRETS.read() else {
        return text.to_string();
    };
    let mut out = text.to_string();
    for v in s.iter() {
        if out.contains(v.as_str()) {
            out = out.replace(v.as_str(), &"*".repeat(stars(v)));
        }
    }
    out
}

/// Every string of a JSON value (a journal event) masked as [`mask_known`] masks text; the
/// value's structure stays as it was.
pub fn mask_value(v: &mut serde_json::Value) {
    if !any() {
        return;
    }
    match v {
        serde_json::Value::String(t) => {
            let m = mask_known(t);
            if m != *t {
                *t = m;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(mask_value),
        serde_json::Value::Object(o) => o.values_mut().for_each(mask_value),
        _ => {}
    }
}

/// Environment values whose names suggest secrets are masked wherever they are shown.
pub fn mask(name: &str, value: &str) -> String {
    if is_secret(name) {
        "****".into()
    } else {
        value.to_string()
    }
}

/// How long a secret's value must be to be looked for outside its `NAME=value` (a value of a
/// character or three, `1`, `on`, would mask unrelated text).
pub const MIN_ELSEWHERE: usize = 4;

/// `text` with the value of every secret-looking `NAME=value` written as `*`s of the same byte
/// length, there and wherever the text writes it again, so that source excerpts in
/// diagnostics show no secret and spans stay valid.
pub fn mask_in_text(text: &str) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r##"(?:#*")?([A-Za-z0-9_.\-]+)(?:"#*)?(\s*=\s*)(#*"""[\s\S]*?"""#*|"(?:[^"\\\n]|\\[\s\S])*"?|#+"[^\n]*|[^\s;{}]+)"##,
        )
        .expect("static regex")
    });
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    // the values, to mask where the text writes them again (a param, a command)
    let mut values: Vec<&str> = Vec::new();
    for c in re.captures_iter(text) {
        let (Some(name), Some(value)) = (c.get(1), c.get(3)) else {
            continue;
        };
        if !is_secret(name.as_str()) {
            continue;
        }
        out.push_str(&text[last..value.start()]);
        let v = value.as_str();
        let hashes = v.len() - v.trim_start_matches('#').len();
        let (open, close) = if v[hashes..].starts_with("\"\"\"") && v.contains('\n') {
            // `"""` (or `#"""`), its lines, `"""` (or `"""#`)
            let close = v.len() - v.trim_end_matches('#').len() + 3;
            (hashes + 3, close.min(v.len() - hashes - 3))
        } else if v.starts_with('"') && v.len() >= 2 && v.ends_with('"') {
            (1, 1)
        } else {
            (0, 0)
        };
        out.push_str(&v[..open]);
        // byte for byte, a multi-line `"""` value's line breaks and indents kept: spans stay
        // valid, lines stay lines
        let multi = v.contains('\n');
        for c in v[open..v.len() - close].chars() {
            if c == '\n' || (multi && c.is_whitespace()) {
                out.push(c);
            } else {
                out.push_str(&"*".repeat(c.len_utf8()));
            }
        }
        out.push_str(&v[v.len() - close..]);
        if multi {
            // each line as the decoded value holds it (its indent taken off)
            values.extend(
                v[open..v.len() - close]
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty()),
            );
        } else {
            values.push(&v[open..v.len() - close]);
        }
        last = value.end();
    }
    out.push_str(&text[last..]);
    // same length, so every span still points where it did
    for v in values
        .into_iter()
        .filter(|v| v.chars().count() >= MIN_ELSEWHERE)
    {
        out = out.replace(v, &"*".repeat(v.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_masked_in_each_form_an_output_writes_it() {
        let v = "p<q>|r\"s\\t]u(v";
        register_secrets([v]);
        for (form, text) in [
            ("as is", v.to_string()),
            ("quoted", format!("{v:?}")),
            ("json", serde_json::to_string(v).unwrap()),
            ("html", crate::util::markup::html_text(v)),
            ("md cell", crate::util::markup::md_code(v)),
            ("md text", crate::util::markup::md_text(v)),
            ("csv", format!("\"{}\"", v.replace('"', "\"\""))),
        ] {
            let m = mask_known(&format!("before {text} after"));
            assert!(
                m.starts_with("before ") && m.ends_with(" after") && !m.contains("]u(v"),
                "{form}: {m}"
            );
        }
        // a journal event: its strings masked, its shape kept
        let mut e = serde_json::json!({"reason": format!("cell {v:?}"), "n": [1, v]});
        mask_value(&mut e);
        assert_eq!(
            e,
            serde_json::json!({"reason": "cell \"****\"", "n": [1, "****"]})
        );
    }

    /// A secret with a `'`, as a shell writes it back: `set -x` and commands.sh quote it
    /// `'tok'\''SECRETVALUE42'`, `printf %q` escapes it `tok\'SECRETVALUE42`.
    #[test]
    fn a_secret_is_masked_as_a_shell_quotes_it() {
        register_secrets(["tok'SECRETVALUE42"]);
        for text in [
            "+ printf %s 'tok'\\''SECRETVALUE42'".to_string(),
            crate::util::shell::quote("tok'SECRETVALUE42"),
            "tok\\'SECRETVALUE42".to_string(),
        ] {
            let m = mask_known(&text);
            assert!(!m.contains("SECRETVALUE42"), "{text} → {m}");
        }
        assert_eq!(
            mask_known("+ printf %s 'tok'\\''SECRETVALUE42'"),
            "+ printf %s '****'"
        );
    }

    /// A secret's entry with its key raw (`#"API_TOKEN"#=`) or its value over several lines
    /// (`"""`): the excerpt of a diagnostic masks the value, the text keeps its length and lines.
    #[test]
    fn a_raw_key_and_a_multi_line_value_are_masked_in_a_files_text() {
        for text in [
            "host h { env #\"API_TOKEN\"#=\"tokSECRETVALUE42\" bogus }",
            "host h {\n    env API_TOKEN=\"\"\"\n        tokSECRETVALUE42\n        \"\"\"\n}",
            // a line continuation inside the string (helper 77: its second line was shown)
            "host h {\n    env API_TOKEN=\"tokSECRET\\\n        VALUE42\" 5\n}",
        ] {
            let m = mask_in_text(text);
            assert!(!m.contains("SECRET") && !m.contains("VALUE42"), "{m}");
            assert_eq!(m.len(), text.len(), "{m}");
            assert_eq!(m.lines().count(), text.lines().count(), "{m}");
        }
    }

    /// `TOKENIZERS_PARALLELISM` (huggingface's switch, `"false"`) is no token: every `false`
    /// of every diagnostic and log tail was masked (helper 51).
    #[test]
    fn a_tokenizers_switch_is_no_secret() {
        assert!(!is_secret("TOKENIZERS_PARALLELISM"));
        assert!(is_secret("HF_TOKEN") && is_secret("TOKENIZER_TOKEN"));
    }

    #[test]
    fn a_secret_of_several_lines_is_masked_line_by_line_too() {
        register_secrets(["mlsecret-first\nzq9-tail-line\nab"]);
        // a log's tail that begins after the first line
        assert_eq!(mask_known("zq9-tail-line\ndone"), "****\ndone");
        assert_eq!(
            mask_known("x mlsecret-first\nzq9-tail-line\nab y"),
            "x **** y"
        );
        // a line too short to stand alone is not masked on its own
        assert_eq!(mask_known("ab"), "ab");
    }
}
