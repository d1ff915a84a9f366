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

/// An argv as the command line a shell runs as that same program and arguments: as [`join`],
/// with the program quoted where a shell would read it otherwise (`time`, `!` and the other
/// reserved words; `NAME=value`, an assignment).
pub fn join_command<S: AsRef<str>>(argv: &[S]) -> String {
    let line = join(argv);
    match argv.first().map(AsRef::as_ref) {
        Some(p) if quote(p) == p && (p.contains('=') || RESERVED.contains(&p)) => {
            format!("'{p}'{}", &line[p.len()..])
        }
        _ => line,
    }
}

/// A shell's reserved words (and the operators that act as such first on a line).
pub const RESERVED: &[&str] = &[
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "time", "until", "while",
];

/// Text for a `#` comment line: control characters (a newline would end the comment and run
/// the rest) are written as escapes.
pub fn comment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}') {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_program_a_shell_would_read_otherwise_is_quoted() {
        assert_eq!(super::join_command(&["time", "a b"]), "'time' 'a b'");
        assert_eq!(super::join_command(&["A=1", "x"]), "'A=1' x");
        assert_eq!(super::join_command(&["!", "x"]), "'!' x");
        assert_eq!(
            super::join_command(&["printf", "time", "A=1"]),
            "printf time A=1"
        );
        assert_eq!(super::join_command::<&str>(&[]), "");
    }

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
