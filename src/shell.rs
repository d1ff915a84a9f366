//! Shell quoting. Every value interpolated into a command goes through `quote`.

/// Quote one word for a POSIX shell; plain words stay as they are.
pub fn quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Join an argv into one shell command line.
pub fn join<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

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
    ["TOKEN", "SECRET", "PASSWORD", "KEY"]
        .iter()
        .any(|s| n.contains(s))
}

/// Environment values whose names suggest secrets are masked wherever they are shown.
pub fn mask(name: &str, value: &str) -> String {
    if is_secret(name) {
        "****".into()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_what_the_shell_would_change() {
        assert_eq!(quote("abc-1.2"), "abc-1.2");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("$(x);`y`\n"), "'$(x);`y`\n'");
        assert_eq!(quote("无预取"), "'无预取'");
    }
}
