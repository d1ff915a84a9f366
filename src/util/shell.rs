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

/// `cd DIR || exit 200; LINE`: `line` run in `cwd`, and a failed `cd` stops it (the line may
/// hold `;`) with [`CD_FAILED`](crate::util::exit_codes::CD_FAILED), a code no `exit-ok=`
/// accepts on a host reached by ssh or in commands.sh.
pub fn cd_then(cwd: &str, line: &str) -> String {
    format!(
        "cd {} || exit {}; {line}",
        quote(cwd),
        crate::util::exit_codes::CD_FAILED
    )
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

/// `script` (bash) with each of `vars`' texts (text, variable name) replaced by that variable,
/// written as its place in the script's quoting needs it: `"${V}"` outside quotes, `${V}` in
/// double quotes, `'"${V}"'` in single quotes (so a text inside a quoted `bash -c` line becomes
/// the value there). Comments and quoted here-documents are left as they are. The longest text
/// wins where several start at one place; a text followed by a digit is not replaced
/// (`slurm:a:1` in `slurm:a:10`).
pub fn splice_vars(script: &str, vars: &[(String, String)]) -> String {
    let mut vars: Vec<&(String, String)> = vars.iter().filter(|(t, _)| !t.is_empty()).collect();
    vars.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
    let mut q = Quoting::default();
    let mut out = String::with_capacity(script.len());
    let mut i = 0;
    while i < script.len() {
        let at = &script[i..];
        let hit = vars.iter().find(|(t, _)| {
            at.starts_with(t.as_str()) && !at[t.len()..].starts_with(|c: char| c.is_ascii_digit())
        });
        if let Some((t, v)) = hit {
            out.push_str(&q.var(v));
            i += t.len();
            continue;
        }
        let step = q.step(
            at,
            i == 0
                || script.as_bytes()[i - 1].is_ascii_whitespace()
                || script.as_bytes()[i - 1] == b';',
        );
        // a multi-byte character is copied whole
        let end = ((i + step).min(script.len())..=script.len())
            .find(|&e| script.is_char_boundary(e))
            .unwrap_or(script.len());
        out.push_str(&script[i..end]);
        i = end;
    }
    out
}

/// Where a place in a bash script is, for [`splice_vars`]: in single quotes, or in a stack of
/// double quotes and `$( … )` (a comment or a quoted here-document is stepped over whole).
#[derive(Default)]
struct Quoting {
    single: bool,
    /// `Some(depth)`: a command context (its open parentheses); None: double quotes. Empty:
    /// the script's top level.
    stack: Vec<Option<u32>>,
    heredoc: Option<String>,
}

impl Quoting {
    fn var(&self, v: &str) -> String {
        match (self.single, self.stack.last()) {
            (true, _) => format!("'\"${{{v}}}\"'"),
            (false, Some(None)) => format!("${{{v}}}"),
            _ => format!("\"${{{v}}}\""),
        }
    }

    /// Read the script at `at` (`word_start`: a `#` there begins a comment): how many bytes
    /// to copy as they are.
    fn step(&mut self, at: &str, word_start: bool) -> usize {
        let b = at.as_bytes();
        let (c, next) = (b[0], b.get(1).copied());
        if self.single {
            self.single = c != b'\'';
            return 1;
        }
        let top = self.stack.last().copied().unwrap_or(Some(0));
        match (top, c) {
            (_, b'\\') => 2,
            (None, b'"') => {
                self.stack.pop();
                1
            }
            (_, b'$') if next == Some(b'(') => {
                self.stack.push(Some(0));
                2
            }
            (None, _) => 1,
            (Some(_), b'\'') => {
                self.single = true;
                1
            }
            (Some(_), b'"') => {
                self.stack.push(None);
                1
            }
            (Some(d), b'(') => {
                self.set_depth(d + 1);
                1
            }
            (Some(0), b')') if !self.stack.is_empty() => {
                self.stack.pop();
                1
            }
            (Some(d), b')') => {
                self.set_depth(d.saturating_sub(1));
                1
            }
            // a comment: to the line's end
            (Some(_), b'#') if word_start => at.find('\n').unwrap_or(at.len()),
            (Some(_), b'<') if at.starts_with("<<'") => {
                let tag: String = at[3..].chars().take_while(|&c| c != '\'').collect();
                self.heredoc = Some(tag.clone());
                3 + tag.len() + 1
            }
            (Some(_), b'\n') => match self.heredoc.take() {
                // the body, as it is, to the line that is the tag
                Some(tag) => {
                    let mut len = 1;
                    for line in at[1..].split_inclusive('\n') {
                        len += line.len();
                        if line.trim_end_matches('\n') == tag {
                            break;
                        }
                    }
                    len
                }
                None => 1,
            },
            _ => 1,
        }
    }

    fn set_depth(&mut self, d: u32) {
        match self.stack.last_mut() {
            Some(top) => *top = Some(d),
            None if d > 0 => self.stack.push(Some(d)),
            None => {}
        }
    }
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

    #[test]
    fn a_spliced_text_becomes_its_variable_in_each_quoting() {
        let vars = [
            ("slurm:c:job".to_string(), "JOB_c".to_string()),
            ("slurm:c:0".to_string(), "IP_c_0".to_string()),
            ("slurm:c:0:node".to_string(), "NODE_c_0".to_string()),
        ];
        let got = splice_vars(
            concat!(
                "srun --jobid=slurm:c:job --nodelist=slurm:c:0:node bash -c 'echo slurm:c:0 '\\''slurm:c:0'\\'''\n",
                "echo \"at slurm:c:0 $(echo slurm:c:0) x\" slurm:c:00 # slurm:c:0\n",
                "cat > f <<'EOF'\nslurm:c:0 it's\nEOF\n",
                "wait_tcp slurm:c:0 80; (exec 3<>/dev/tcp/slurm:c:0/80)\n",
            ),
            &vars,
        );
        assert_eq!(
            got,
            concat!(
                "srun --jobid=\"${JOB_c}\" --nodelist=\"${NODE_c_0}\" bash -c 'echo '\"${IP_c_0}\"' '\\'''\"${IP_c_0}\"''\\'''\n",
                "echo \"at ${IP_c_0} $(echo \"${IP_c_0}\") x\" slurm:c:00 # slurm:c:0\n",
                "cat > f <<'EOF'\nslurm:c:0 it's\nEOF\n",
                "wait_tcp \"${IP_c_0}\" 80; (exec 3<>/dev/tcp/\"${IP_c_0}\"/80)\n",
            )
        );
        // what bash makes of it: the value, in every place
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "IP_c_0=10.0.0.7; {}",
                splice_vars(
                    "echo 'a slurm:c:0 '\\''slurm:c:0'\\''' \"slurm:c:0\" slurm:c:0 $(echo 'slurm:c:0')",
                    &vars
                )
            ))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "a 10.0.0.7 '10.0.0.7' 10.0.0.7 10.0.0.7 10.0.0.7\n"
        );
    }
}
