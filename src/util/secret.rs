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
        .any(|s| n.contains(s))
        // a personal access token (`GH_PAT`), not `PATH`
        || n == "PAT"
        || n.ends_with("_PAT")
}

/// The values of this process's secrets (env values whose names suggest one, as the run knows
/// them): what a step prints is masked with them wherever expr shows it (a log's tail in a
/// reason, on the terminal, in the journal and the report).
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
                if part.len() >= 4 && !s.iter().any(|x| x == part) {
                    s.push(part.to_string());
                }
            }
        }
        // the longest first: a secret that contains another is masked whole
        s.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }
}

/// `text` with every registered secret value written `****`.
pub fn mask_known(text: &str) -> String {
    let Ok(s) = SECRETS.read() else {
        return text.to_string();
    };
    let mut out = text.to_string();
    for v in s.iter() {
        if out.contains(v.as_str()) {
            out = out.replace(v.as_str(), "****");
        }
    }
    out
}

/// Environment values whose names suggest secrets are masked wherever they are shown.
pub fn mask(name: &str, value: &str) -> String {
    if is_secret(name) {
        "****".into()
    } else {
        value.to_string()
    }
}

/// `text` with the value of every secret-looking `NAME=value` written as `*`s of the same byte
/// length, so that source excerpts in diagnostics show no secret and spans stay valid.
pub fn mask_in_text(text: &str) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r#""?([A-Za-z0-9_.\-]+)"?(\s*=\s*)("(?:[^"\\\n]|\\.)*"?|#+"[^\n]*|[^\s;{}]+)"#,
        )
        .expect("static regex")
    });
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for c in re.captures_iter(text) {
        let (Some(name), Some(value)) = (c.get(1), c.get(3)) else {
            continue;
        };
        if !is_secret(name.as_str()) {
            continue;
        }
        out.push_str(&text[last..value.start()]);
        let v = value.as_str();
        let (open, close) = if v.starts_with('"') && v.len() >= 2 && v.ends_with('"') {
            (1, 1)
        } else {
            (0, 0)
        };
        out.push_str(&v[..open]);
        out.push_str(&"*".repeat(v.len() - open - close));
        out.push_str(&v[v.len() - close..]);
        last = value.end();
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
