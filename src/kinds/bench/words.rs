//! How `shell "none"` reads a command: its words, as a shell would split them, never expanded.
//!
//! The same text reaches a shell over ssh (a remote host) and in commands.sh, rendered whole
//! with each template value quoted. So the split must give the words that shell would give,
//! and whatever a shell would give another meaning (an expansion, a glob, a keyword, an
//! assignment, a template tag the two readings place differently) is refused.

use std::ops::Range;

/// A piece of a word: text as written (quotes and escapes removed), or a `{{ }}` tag, rendered
/// as one value.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Lit(String),
    Tag(String),
}

/// One word: its pieces, joined once the tags are rendered.
pub type Word = Vec<Piece>;

/// What `shell "none"` cannot run, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum NeedsShell {
    /// A character only a shell gives a meaning to (an expansion, a glob, an operator).
    Syntax(char),
    /// A template value inside quotes: it is one argument already.
    ValueInQuotes,
    Unclosed(char),
    /// A `{% %}` block other than `raw`.
    Block,
    /// A `{# #}` comment.
    Comment,
    /// `{{-`, `-}}` and the like: they join words in the shell's reading only.
    WhitespaceControl,
    /// `\{{`, a tag the shell's reading sees and this split does not.
    EscapedTag,
    /// A first word that is a shell keyword (`time`, `if`, `!`, …).
    Keyword(String),
    /// A first word that is a shell builtin with no program of its name (`cd`, `exec`, …).
    Builtin(String),
    /// A first word shaped `NAME=value`, which a shell reads as an assignment.
    Assignment(String),
    /// An empty first word.
    NoProgram,
}

impl NeedsShell {
    /// The reason, completing "`run1` …, but the bench runs with `shell "none"`".
    pub fn said(&self) -> String {
        match self {
            NeedsShell::Syntax('\0') => "holds a NUL character".into(),
            NeedsShell::Syntax(c) => format!("uses `{}`, which needs a shell", c.escape_debug()),
            NeedsShell::ValueInQuotes => {
                "quotes a template value, which is one argument already".into()
            }
            NeedsShell::Unclosed('{') => "leaves a `{{` tag open".into(),
            NeedsShell::Unclosed(q) => format!("leaves a `{q}` open"),
            NeedsShell::Block => {
                "uses a `{% … %}` block, which `shell \"none\"` cannot split into words".into()
            }
            NeedsShell::Comment => "holds a `{# … #}` comment".into(),
            NeedsShell::WhitespaceControl => {
                "trims blanks around a tag (`{{-`, `-}}`), which would join words in a shell".into()
            }
            NeedsShell::EscapedTag => {
                "escapes a `{{` with a backslash, which a template still reads as a tag".into()
            }
            NeedsShell::Keyword(w) => format!("starts with `{w}`, a shell keyword"),
            NeedsShell::Builtin(w) => {
                format!("starts with `{w}`, a shell builtin that no program stands for")
            }
            NeedsShell::Assignment(w) => {
                format!("starts with `{w}`, which a shell reads as a variable assignment")
            }
            NeedsShell::NoProgram => "starts with an empty word: no program to run".into(),
        }
    }
}

/// Builtins of bash with no program of the same name on a usual system (`printf`, `echo`,
/// `test`, `kill`, `true` have one and run as that program).
const BUILTIN_ONLY: &[&str] = &[
    ".",
    ":",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "continue",
    "declare",
    "dirs",
    "disown",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "pushd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "times",
    "trap",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// The words of a command template for `shell "none"`, split as a POSIX shell splits them —
/// on blanks (space, tab) outside quotes; `'…'` literal; `"…"` with `\"`, `\\`, `\$`, `` \` ``
/// escaped and a backslash-newline removed; a backslash outside quotes escaping the next
/// character — with no expansion. A `{{ }}` tag is one piece, rendered afterwards as one value;
/// a `{% raw %}…{% endraw %}` block is text with no tags in it. hyperfine's `-N` splits the same
/// way.
pub fn template_words(cmd: &str) -> Result<Vec<Word>, NeedsShell> {
    template_words_at(cmd).map_err(|(e, _)| e)
}

/// [`template_words`], with the bytes of `cmd` that need a shell (the character, the tag or
/// block, from an open quote to the end, the first word).
pub fn template_words_at(cmd: &str) -> Result<Vec<Word>, (NeedsShell, Range<usize>)> {
    let b: Vec<char> = cmd.chars().collect();
    // the byte offset of each character, and of the end
    let byte: Vec<usize> = cmd
        .char_indices()
        .map(|(o, _)| o)
        .chain([cmd.len()])
        .collect();
    let span = |from: usize, to: usize| byte[from.min(b.len())]..byte[to.min(b.len())];
    // where the first word starts and ends (characters)
    let (mut first_at, mut quote_at, mut raw_at) = (None::<(usize, usize)>, 0, 0);
    let mut s = Split::default();
    let (mut quote, mut raw, mut i) = (None::<char>, false, 0);
    while i < b.len() {
        let c = b[i];
        if first_at.is_none() && s.words.is_empty() && c != ' ' && c != '\t' {
            first_at = Some((i, b.len()));
        }
        let at = |k: usize, t: &str| t.chars().enumerate().all(|(j, x)| b.get(k + j) == Some(&x));
        if c == '\0' {
            return Err((NeedsShell::Syntax('\0'), span(i, i + 1)));
        }
        if at(i, "{%") {
            let (word, end, trims) =
                block_tag(&b, i).ok_or((NeedsShell::Unclosed('{'), span(i, b.len())))?;
            match (word.as_str(), raw) {
                ("raw", false) | ("endraw", true) if trims => {
                    return Err((NeedsShell::WhitespaceControl, span(i, end)))
                }
                ("raw", false) => {
                    raw = true;
                    raw_at = i;
                }
                ("endraw", true) => raw = false,
                _ if raw => {
                    s.text(c);
                    i += 1;
                    continue;
                }
                _ => return Err((NeedsShell::Block, span(i, end))),
            }
            i = end;
            continue;
        }
        if !raw && at(i, "{#") {
            return Err((NeedsShell::Comment, span(i, i + 2)));
        }
        if !raw && at(i, "{{") {
            if quote.is_some() {
                let end = tag_end(&b, i + 2).unwrap_or(b.len());
                return Err((NeedsShell::ValueInQuotes, span(i, end)));
            }
            let end = tag_end(&b, i + 2).ok_or((NeedsShell::Unclosed('{'), span(i, b.len())))?;
            let tag: String = b[i..end].iter().collect();
            if tag.starts_with("{{-") || tag.starts_with("{{+") || tag.ends_with("-}}") {
                return Err((NeedsShell::WhitespaceControl, span(i, end)));
            }
            s.tag(tag);
            i = end;
            continue;
        }
        match quote {
            Some('\'') if c == '\'' => quote = None,
            Some('\'') => s.text(c),
            Some(_) if c == '"' => quote = None,
            Some(_) if c == '\\' && b.get(i + 1) == Some(&'\n') => i += 1,
            Some(_) if c == '\\' && matches!(b.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                s.text(b[i + 1]);
                i += 1;
            }
            Some(_) if c == '$' || c == '`' => return Err((NeedsShell::Syntax(c), span(i, i + 1))),
            Some(_) => s.text(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                quote_at = i;
                s.started = true;
                s.quoted = true;
            }
            None if c == '\\' => match b.get(i + 1) {
                None => return Err((NeedsShell::Syntax('\\'), span(i, i + 1))),
                // a line continuation: nothing
                Some('\n') => i += 1,
                Some('{') if !raw && matches!(b.get(i + 2), Some('{' | '%' | '#')) => {
                    return Err((NeedsShell::EscapedTag, span(i, i + 3)))
                }
                Some(&n) => {
                    s.text(n);
                    s.quoted = true;
                    i += 1;
                }
            },
            None if c == ' ' || c == '\t' => {
                let was = s.words.len();
                s.end_word();
                if was == 0 && s.words.len() == 1 {
                    first_at = first_at.map(|(f, _)| (f, i));
                }
            }
            // `#` starts a comment, `~` a home directory, only where a word (or an assignment's
            // value) starts: `HEAD~1` and `--color=#fff` are text
            None if c == '#' && !s.lit.is_empty() => s.text(c),
            None if c == '~' && s.lit.ends_with(|p: char| p != '=' && p != ':') => s.text(c),
            None if c == '\n' || "|&;<>()$`*?[{#~".contains(c) => {
                return Err((NeedsShell::Syntax(c), span(i, i + 1)))
            }
            None => s.text(c),
        }
        i += 1;
    }
    if let Some(q) = quote {
        return Err((NeedsShell::Unclosed(q), span(quote_at, b.len())));
    }
    if raw {
        return Err((NeedsShell::Unclosed('{'), span(raw_at, b.len())));
    }
    s.end_word();
    match s.words.first() {
        None => return Err((NeedsShell::NoProgram, span(0, b.len()))),
        Some(first) if !first.iter().any(|p| matches!(p, Piece::Tag(_))) => {
            let text: String = first
                .iter()
                .map(|p| match p {
                    Piece::Lit(t) | Piece::Tag(t) => t.as_str(),
                })
                .collect();
            let (from, to) = first_at.unwrap_or((0, b.len()));
            program(&text, s.first_quoted).map_err(|e| (e, span(from, to)))?;
        }
        Some(_) => {}
    }
    Ok(s.words)
}

/// What a shell would not run as the program `text`: an empty word; a builtin (quoted or not);
/// unquoted, a keyword or an assignment (`NAME=…`, `NAME+=…`). The check asks it of a first
/// word of text; the plan of a first word a template value makes (its value is not known
/// before), as quoted = false: the shell's reading quotes a value only where it must.
pub fn program(text: &str, quoted: bool) -> Result<(), NeedsShell> {
    if text.is_empty() {
        return Err(NeedsShell::NoProgram);
    }
    if BUILTIN_ONLY.contains(&text) {
        return Err(NeedsShell::Builtin(text.into()));
    }
    if quoted {
        return Ok(());
    }
    if crate::util::shell::RESERVED.contains(&text) {
        return Err(NeedsShell::Keyword(text.into()));
    }
    if let Some((name, _)) = text.split_once('=') {
        let name = name.strip_suffix('+').unwrap_or(name);
        let mut cs = name.chars();
        if cs
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(NeedsShell::Assignment(text.into()));
        }
    }
    Ok(())
}

/// The words split so far and the one being read.
#[derive(Default)]
struct Split {
    words: Vec<Word>,
    cur: Word,
    lit: String,
    /// The current word has begun (an empty `""` is a word).
    started: bool,
    /// The current word has a quote or an escape in it; and so had the first word.
    quoted: bool,
    first_quoted: bool,
}

impl Split {
    fn text(&mut self, c: char) {
        self.lit.push(c);
        self.started = true;
    }

    fn tag(&mut self, t: String) {
        if !self.lit.is_empty() {
            self.cur.push(Piece::Lit(std::mem::take(&mut self.lit)));
        }
        self.cur.push(Piece::Tag(t));
        self.started = true;
    }

    fn end_word(&mut self) {
        if self.started {
            if !self.lit.is_empty() || self.cur.is_empty() {
                self.cur.push(Piece::Lit(std::mem::take(&mut self.lit)));
            }
            if self.words.is_empty() {
                self.first_quoted = self.quoted;
            }
            self.words.push(std::mem::take(&mut self.cur));
            self.started = false;
            self.quoted = false;
        }
    }
}

/// The end (past `}}`) of a tag whose body starts at `from`: braces inside it nest and quoted
/// strings are skipped, as the template's own reader does (`{{ {'a': {'b': 1}} }}`).
fn tag_end(b: &[char], from: usize) -> Option<usize> {
    let (mut depth, mut i) = (0usize, from);
    while i < b.len() {
        match b[i] {
            q @ ('\'' | '"') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == '\\' { 2 } else { 1 };
                }
            }
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            '}' if b.get(i + 1) == Some(&'}') => return Some(i + 2),
            _ => {}
        }
        i += 1;
    }
    None
}

/// A `{% word … %}` block tag at `at`: its word, its end (past `%}`), and whether it trims
/// blanks (`{%-`, `-%}`).
fn block_tag(b: &[char], at: usize) -> Option<(String, usize, bool)> {
    let mut i = at + 2;
    let mut trims = matches!(b.get(i), Some('-' | '+'));
    if trims {
        i += 1;
    }
    while b.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    let word: String = b[i.min(b.len())..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
        .collect();
    let close = (i..b.len().saturating_sub(1)).find(|&k| b[k] == '%' && b[k + 1] == '}')?;
    trims |= b[close - 1] == '-';
    Some((word, close + 2, trims))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words as text, each tag kept as written.
    fn w(s: &str) -> Result<Vec<String>, NeedsShell> {
        template_words(s).map(|ws| {
            ws.iter()
                .map(|w| {
                    w.iter()
                        .map(|p| match p {
                            Piece::Lit(t) | Piece::Tag(t) => t.as_str(),
                        })
                        .collect()
                })
                .collect()
        })
    }

    fn ok(v: &[&str]) -> Result<Vec<String>, NeedsShell> {
        Ok(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn no_shell_splits_quoted_words_as_hyperfine_n_does_and_says_what_needs_a_shell() {
        assert_eq!(w("echo \"a b\""), ok(&["echo", "a b"]));
        assert_eq!(
            w("  printf '%s|%s' x  y\t"),
            ok(&["printf", "%s|%s", "x", "y"])
        );
        assert_eq!(w("a\\ b \"\" c"), ok(&["a b", "", "c"]));
        assert_eq!(w("say \"q\\\"x\\$y\\z\""), ok(&["say", "q\"x$y\\z"]));
        assert_eq!(w("ab'c d'\"e\"f"), ok(&["abc def"]));
        // a tag is kept whole, spaces and all, for rendering as one argument
        assert_eq!(
            w("run {{ a ~ b }} x{{ c }}"),
            ok(&["run", "{{ a ~ b }}", "x{{ c }}"])
        );
        // NBSP is no blank to a shell
        assert_eq!(w("a\u{a0}b"), ok(&["a\u{a0}b"]));
        assert_eq!(w("echo \"$HOME\""), Err(NeedsShell::Syntax('$')));
        assert_eq!(w("a | b"), Err(NeedsShell::Syntax('|')));
        assert_eq!(w("ls *.rs"), Err(NeedsShell::Syntax('*')));
        assert_eq!(w("a\\"), Err(NeedsShell::Syntax('\\')));
        assert_eq!(w("echo \"{{ x }}\""), Err(NeedsShell::ValueInQuotes));
        assert_eq!(w("echo '{{ x }}'"), Err(NeedsShell::ValueInQuotes));
        assert_eq!(w("echo 'a"), Err(NeedsShell::Unclosed('\'')));
        assert_eq!(w("echo \"a"), Err(NeedsShell::Unclosed('"')));
    }

    /// What the break-tries found: each case as bash reads it (`bash -c`, and python's
    /// `shlex` where it agrees), or refused where bash would read it otherwise.
    #[test]
    fn a_refusal_names_the_bytes_that_need_a_shell() {
        let at = |c: &str| {
            let (e, r) = template_words_at(c).unwrap_err();
            (e, c[r].to_string())
        };
        assert_eq!(at("a | b").1, "|");
        assert_eq!(at("é ü $x").1, "$");
        assert_eq!(at("echo \"a $b\"").1, "$");
        assert_eq!(at("p \"{{ x }}\" q").1, "{{ x }}");
        assert_eq!(at("p '{{ x").1, "{{ x");
        assert_eq!(at("echo 'open here").1, "'open here");
        assert_eq!(at("echo {% raw %}a b").1, "{% raw %}a b");
        assert_eq!(at("a {% if x %}b{% endif %}").1, "{% if x %}");
        assert_eq!(at("a {{- v }} b").1, "{{- v }}");
        assert_eq!(at("a {# c #}").1, "{#");
        assert_eq!(at("a \\{{ v }}").1, "\\{{");
        assert_eq!(at("a\\").1, "\\");
        assert_eq!(
            at("  time  printf a"),
            (NeedsShell::Keyword("time".into()), "time".into())
        );
        assert_eq!(
            at("FOO=1"),
            (NeedsShell::Assignment("FOO=1".into()), "FOO=1".into())
        );
        assert_eq!(at("\t'cd' /").1, "'cd'");
        assert_eq!(at("''").1, "''");
        assert_eq!(at("p {{ x").1, "{{ x");
    }

    #[test]
    fn what_a_shell_reads_otherwise_is_refused_and_the_rest_splits_as_bash_does() {
        // a trailing newline or CR is kept (a template render dropped it)
        assert_eq!(
            w("printf '<%s>' 'a\n' \"b\r\" c"),
            ok(&["printf", "<%s>", "a\n", "b\r", "c"])
        );
        // a backslash-newline is removed inside double quotes and outside quotes
        assert_eq!(w("printf \"a\\\nb\" c\\\nd"), ok(&["printf", "ab", "cd"]));
        // globs, brace expansion
        assert_eq!(w("printf [%s] a"), Err(NeedsShell::Syntax('[')));
        assert_eq!(w("printf {a,b}"), Err(NeedsShell::Syntax('{')));
        assert_eq!(w("printf '[%s]' '{a,b}'"), ok(&["printf", "[%s]", "{a,b}"]));
        // the first word: keywords, builtins, assignments, nothing
        assert_eq!(w("time printf a"), Err(NeedsShell::Keyword("time".into())));
        assert_eq!(w("! true"), Err(NeedsShell::Keyword("!".into())));
        assert_eq!(w("cd /"), Err(NeedsShell::Builtin("cd".into())));
        assert_eq!(
            w("FOO=1 printf a"),
            Err(NeedsShell::Assignment("FOO=1".into()))
        );
        assert_eq!(w("'' x"), Err(NeedsShell::NoProgram));
        assert_eq!(
            w("printf time cd A=1"),
            ok(&["printf", "time", "cd", "A=1"])
        );
        assert_eq!(w("./a=b x"), ok(&["./a=b", "x"]));
        // templates: whitespace control, comments, blocks, escaped tags, NUL
        assert_eq!(w("a {{- v }} b"), Err(NeedsShell::WhitespaceControl));
        assert_eq!(w("a {{ v -}} b"), Err(NeedsShell::WhitespaceControl));
        assert_eq!(w("a \"{#\" b \"#}\""), Err(NeedsShell::Comment));
        assert_eq!(w("a {% if x %}b{% endif %}"), Err(NeedsShell::Block));
        assert_eq!(w("a \\{{ v }}"), Err(NeedsShell::EscapedTag));
        assert_eq!(w("a\0b"), Err(NeedsShell::Syntax('\0')));
        // quotes that take a brace apart leave no tag, in either reading
        assert_eq!(w("printf '{'{ v }}"), Err(NeedsShell::Syntax('{')));
        assert_eq!(w("printf '{''{ v }}'"), ok(&["printf", "{{ v }}"]));
        // a tag's own braces and strings
        assert_eq!(
            w("p {{ {'a':{'b':1}} }} x"),
            ok(&["p", "{{ {'a':{'b':1}} }}", "x"])
        );
        assert_eq!(w("p {{ \"}}\" }}"), ok(&["p", "{{ \"}}\" }}"]));
        assert_eq!(w("p {{ x"), Err(NeedsShell::Unclosed('{')));
        // a raw block is text: quotes and blanks as ever, braces no tag
        assert_eq!(
            w("{% raw %}printf '<%s>' '{{x}}' a{% endraw %}"),
            ok(&["printf", "<%s>", "{{x}}", "a"])
        );
        assert_eq!(w("{% raw %}a"), Err(NeedsShell::Unclosed('{')));
        assert_eq!(
            w("{%- raw %}a{% endraw %}"),
            Err(NeedsShell::WhitespaceControl)
        );
        // a review: text a shell leaves as it is, and what it still reads otherwise
        assert_eq!(
            w("git show HEAD~1 --color=#fff"),
            ok(&["git", "show", "HEAD~1", "--color=#fff"])
        );
        assert_eq!(w("a --prefix=~/x"), Err(NeedsShell::Syntax('~')));
        assert_eq!(w("a #x"), Err(NeedsShell::Syntax('#')));
        assert_eq!(w("'time' x"), ok(&["time", "x"]));
        assert_eq!(w("\"FOO=1\" x"), ok(&["FOO=1", "x"]));
        assert_eq!(w("'cd' /"), Err(NeedsShell::Builtin("cd".into())));
        assert_eq!(w(": x"), Err(NeedsShell::Builtin(":".into())));
        assert_eq!(w("A+=1 x"), Err(NeedsShell::Assignment("A+=1".into())));
        assert_eq!(w("{% raw %} {% endraw %}"), Err(NeedsShell::NoProgram));
        assert_eq!(w("\\\n"), Err(NeedsShell::NoProgram));
        // a first word a value makes is asked at plan time
        assert_eq!(w("{{ tool }} x"), ok(&["{{ tool }}", "x"]));
        assert_eq!(
            program("time", false),
            Err(NeedsShell::Keyword("time".into()))
        );
        assert_eq!(
            program("OMP=4", false),
            Err(NeedsShell::Assignment("OMP=4".into()))
        );
        assert_eq!(program("./bench", false), Ok(()));
    }
}
