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

/// What the shell sees before a place is not known (after a `{% %}` block, which may or may
/// not render what stands around it).
const UNKNOWN: u8 = 0xff;

/// Where the shell reading of a command template stands ([`tags_out_of_quotes`]).
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
    /// `$(( … ))` or `(( … ))`.
    Arith {
        parens: usize,
    },
    /// `# …`, to the end of the line (or of the backticks it stands in).
    Comment,
}

/// A shell command template with each `{{ }}` tag that stands inside the author's quotes moved
/// out of them: the quote is closed before the tag and opened again after it, so
/// `echo 'm={{ v }}'` renders as `echo 'm='VALUE''` and `"m={{ v }}"` as `"m="VALUE""`.
/// A value is quoted as a shell word of its own (`'$(x)'`); inside the author's quotes its
/// quotes would close and reopen theirs, and the value would stand unquoted. A tag in a `#`
/// comment has its value's newlines made blanks (a newline would end the comment, and the rest
/// of the value would run).
///
/// The text is read as a POSIX shell reads it: `'…'`, `$'…'`, `"…"` with backslash escapes,
/// `$( )`, `$(( ))`, `(( ))`, `${…}` and backticks, a backslash and a line continuation
/// outside quotes, `#` comments (to the end of the line, or of the backticks they stand in),
/// heredoc bodies (text, to their delimiter line) and here-strings. Template tags are not
/// text: `{% raw %}` holds text, `{{ }}` stands for a word, `-}}` and `{{-` trim blanks. Where
/// the reading is not sure — a `case` command (its patterns' `)`), a heredoc without its
/// delimiter — the rest of the template is left as written, and where no quoting holds — a
/// tag inside `${…}` or `$(( ))`, or after an odd backslash — the tag stays where it is: each
/// such value must be a plain word ([`SHELL_WORD`]), or the render is an error. A quoted value
/// there would not be one word, and its `$(…)` would run.
pub fn tags_out_of_quotes(t: &str) -> std::borrow::Cow<'_, str> {
    if !t.contains("{{") {
        return std::borrow::Cow::Borrowed(t);
    }
    let mut r = Reader {
        t,
        b: t.as_bytes(),
        out: String::with_capacity(t.len() + 8),
        stack: vec![Ctx::Plain {
            end: None,
            parens: 0,
        }],
        raw: false,
        moved: false,
        prev: None,
        trimming: false,
        heredocs: Vec::new(),
        verbatim_until: 0,
        verbatim_why: "unsure",
        ifs: Vec::new(),
        i: 0,
    };
    // a construct whose words the shell reads again, or as arithmetic, anywhere in the
    // command: every value in it a plain word
    if let Some(why) = hard_construct(t) {
        r.verbatim_until = usize::MAX;
        r.verbatim_why = why;
    }
    r.read();
    if r.moved {
        std::borrow::Cow::Owned(r.out)
    } else {
        std::borrow::Cow::Borrowed(t)
    }
}

/// The reading of one template ([`tags_out_of_quotes`]), as it goes.
struct Reader<'a> {
    t: &'a str,
    b: &'a [u8],
    out: String,
    stack: Vec<Ctx>,
    /// Inside `{% raw %}`.
    raw: bool,
    /// A tag was moved (or escaped): the template changed.
    moved: bool,
    /// The last byte of text the shell sees before here (a tag is a word), for `#` and `case`.
    prev: Option<u8>,
    /// After `-}}` / `-%}`: the blanks that follow are trimmed, not seen.
    trimming: bool,
    /// Heredocs begun on this line: (delimiter, `<<-`, delimiter quoted).
    heredocs: Vec<(String, bool, bool)>,
    /// Up to here the text is copied as written, each value tag in it made a plain word
    /// ([`SHELL_WORD`], `verbatim_why` saying why): a `case` command to its `esac`, or the
    /// rest of the template where the reading gave up (`usize::MAX`).
    verbatim_until: usize,
    verbatim_why: &'static str,
    /// At each open `{% if %}`: the context and the heredocs pending when it began (a branch
    /// that leaves them otherwise makes what follows unknown).
    ifs: Vec<(Vec<Ctx>, usize)>,
    i: usize,
}

/// What reading one byte of text did.
enum Step {
    /// Copy this many bytes; `prev` becomes the byte given (`None`: as it was before them).
    By(usize, Option<u8>),
    /// The reader moved on by itself (or only changed context).
    Done,
    /// Not a reading to move tags on: the template is left as written.
    Keep,
}

/// Whether `p` ends a word for the shell (a `#` after it starts a comment).
fn blank(p: Option<u8>) -> bool {
    matches!(
        p,
        None | Some(b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>' | b'`')
    )
}

impl Reader<'_> {
    /// The whole template. Where the reading is not sure of what the shell sees, the rest is
    /// copied as written, each value tag in it made [`SHELL_WORD`].
    fn read(&mut self) {
        while self.i < self.b.len() {
            if self.i < self.verbatim_until {
                self.unsure_byte();
                continue;
            }
            let top = *self.stack.last().unwrap_or(&Ctx::Plain {
                end: None,
                parens: 0,
            });
            let rest = &self.b[self.i..];
            if rest.starts_with(b"{%") || (!self.raw && rest.starts_with(b"{#")) {
                self.block_tag();
                continue;
            }
            if !self.raw && rest.starts_with(b"{{") {
                self.value_tag(top);
                continue;
            }
            let c = self.b[self.i];
            let n = self.b.get(self.i + 1).copied();
            // a backslash escapes the next character, but a `{` after it still opens a tag for
            // the template (`\{{ v }}`): that tag is looked at on its own
            let esc = if n == Some(b'{') { 1 } else { 2 };
            let step = match top {
                Ctx::Comment => self.comment(c),
                Ctx::Plain { end, parens } => self.plain(c, n, esc, end, parens),
                _ => self.quoted(top, c, n, esc),
            };
            match step {
                Step::By(len, seen) => self.copy(c, len, seen),
                Step::Done => {}
                Step::Keep => {
                    self.verbatim_until = usize::MAX;
                    self.verbatim_why = "unsure";
                }
            }
        }
    }

    /// A byte of the text after the reading gave up: copied, tags kept whole, a value tag made
    /// a plain word.
    fn unsure_byte(&mut self) {
        let rest = &self.b[self.i..];
        if rest.starts_with(b"{%") || (!self.raw && rest.starts_with(b"{#")) {
            self.block_tag();
        } else if !self.raw && rest.starts_with(b"{{") {
            let e = self.tag_end(b"}}");
            let tag = &self.t[self.i..e];
            self.out.push_str(&word_tag(tag, self.verbatim_why));
            self.moved = true;
            self.i = e;
        } else {
            let c = self.b[self.i];
            self.copy(c, 1, Some(c));
        }
    }

    /// The end of a `{% … %}` / `{# … #}` / `{{ … }}` tag from `i` (strings inside skipped).
    fn tag_end(&self, close: &[u8; 2]) -> usize {
        let b = self.b;
        let mut j = self.i + 2;
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
    }

    /// `{% … %}` or `{# … #}` at `i`: copied; `{% raw %}` starts text.
    fn block_tag(&mut self) {
        let close = if self.b[self.i + 1] == b'%' {
            b"%}"
        } else {
            b"#}"
        };
        let e = self.tag_end(close);
        let t = self.t;
        let tag = &t[self.i..e];
        let word = tag
            .get(2..tag.len().saturating_sub(2).max(2))
            .unwrap_or_default()
            .trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace());
        if close == b"%}" && word == "raw" {
            self.raw = true;
        } else if close == b"%}" && word == "endraw" {
            self.raw = false;
        } else if self.raw {
            // text inside the raw block
            self.out.push('{');
            self.prev = Some(b'{');
            self.trimming = false;
            self.i += 1;
            return;
        }
        if tag.starts_with("{%-") || tag.starts_with("{#-") {
            self.prev = self
                .out
                .trim_end_matches([' ', '\t', '\n', '\r'])
                .bytes()
                .last();
        }
        if close == b"#}" && !self.raw {
            // the shell sees what stood before the comment: not known here, as after a block
            self.prev = Some(UNKNOWN);
        }
        if close == b"%}" && word != "raw" && word != "endraw" {
            // a block may or may not render what stands around it
            self.prev = Some(UNKNOWN);
            self.branch(word.split_whitespace().next().unwrap_or(""));
        }
        self.trimming = tag.ends_with("-%}") || tag.ends_with("-#}");
        self.out.push_str(tag);
        self.i = e;
    }

    /// A `{% if %}`, `{% elif %}`, `{% else %}` or `{% endif %}` (and `for`): a branch that
    /// ends in other quotes, or with other heredocs pending, than its `if` began in leaves the
    /// shell's reading after it unknown (either branch may be the one rendered).
    fn branch(&mut self, word: &str) {
        let now = (self.stack.clone(), self.heredocs.len());
        let differs = match word {
            "if" | "for" => {
                self.ifs.push(now);
                false
            }
            "elif" | "else" => self.ifs.last().is_some_and(|b| *b != now),
            "endif" | "endfor" => self.ifs.pop().is_some_and(|b| b != now),
            _ => false,
        };
        if differs && self.verbatim_until != usize::MAX {
            self.verbatim_until = usize::MAX;
            self.verbatim_why = "unsure";
        }
    }

    /// `{{ … }}` at `i`, in the context `top`: moved out of the author's quotes; where no
    /// quoting holds (`${…}`, `$(( ))`, after a backslash), made a plain word.
    fn value_tag(&mut self, top: Ctx) {
        let e = self.tag_end(b"}}");
        let t = self.t;
        let start = self.i;
        let tag = &t[start..e];
        let (open_t, inner, close_t) = split_tag(tag);
        self.i = e;
        // what stands before the tag once `{{-` has trimmed the blanks
        let before = if open_t == "{{-" {
            self.out.trim_end_matches([' ', '\t', '\n', '\r'])
        } else {
            self.out.as_str()
        };
        // an odd backslash before the tag would escape the quote that opens the value's word
        let slashes = before.bytes().rev().take_while(|c| *c == b'\\').count();
        let plain = matches!(top, Ctx::Plain { .. });
        // inside backticks that stand in double quotes, `\"` is a quote again
        let backticks_in_quotes = self
            .stack
            .iter()
            .rposition(|c| {
                matches!(
                    c,
                    Ctx::Plain {
                        end: Some(b'`'),
                        ..
                    }
                )
            })
            .is_some_and(|k| self.stack[..k].contains(&Ctx::Double));
        let in_backticks_now = self.stack.iter().any(|c| {
            matches!(
                c,
                Ctx::Plain {
                    end: Some(b'`'),
                    ..
                }
            )
        });
        let unquotable = match top {
            // a value's backtick would end the substitution its comment stands in
            Ctx::Comment if in_backticks_now => Some("backticks"),
            Ctx::Comment => None,
            // right after `${NAME`: a value there is the operator (`@P`, `:n`)
            Ctx::Param
                if {
                    let inner = &before[before.rfind("${").map_or(0, |k| k + 2)..];
                    inner
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'_')
                } =>
            {
                Some("param-name")
            }
            Ctx::Param => Some("param"),
            Ctx::Arith { .. } => Some("arith"),
            _ if backticks_in_quotes => Some("backticks"),
            Ctx::Single => None,
            _ if slashes % 2 == 1 => Some("escape"),
            // `$` and a quoted value make `$'…'`, whose escapes the shell reads
            _ if plain && after_dollar(&self.out, open_t == "{{-") => Some("dollar"),
            _ if plain && in_subscript(before) => Some("subscript"),
            _ => None,
        };
        if let Some(why) = unquotable {
            self.moved = true;
            self.out.push_str(&word_tag(tag, why));
            self.prev = Some(b'x');
            self.trimming = close_t == "-}}";
            return;
        }
        // inside backticks the shell takes `\$`, `\`` and `\\` before it reads the command:
        // the value's own are escaped for that first reading
        let tag = if in_backticks_now && top != Ctx::Comment {
            self.moved = true;
            escaped_tag(open_t, inner, close_t)
        } else {
            tag.to_string()
        };
        match top {
            Ctx::Comment => {
                self.moved = true;
                self.out.push_str(&format!(
                    "{open_t} ({inner}) | string | replace(\"\\n\", \" \") {close_t}"
                ));
            }
            Ctx::Single | Ctx::AnsiC | Ctx::Double => {
                // (what closes the author's quote, what opens it again)
                let (close, open) = match top {
                    Ctx::Single => ("'", "'"),
                    Ctx::AnsiC => ("'", "$'"),
                    _ => ("\"", "\""),
                };
                self.moved = true;
                // `{{-` trims the blanks before it: inside the quotes, as it would have
                if open_t == "{{-" {
                    let kept = self.out.trim_end_matches([' ', '\t', '\n', '\r']).len();
                    self.out.truncate(kept);
                }
                self.out.push_str(close);
                self.out.push_str(&trimless(&tag));
                self.out.push_str(open);
                if close_t == "-}}" {
                    while self.i < self.b.len()
                        && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r')
                    {
                        self.i += 1;
                    }
                }
            }
            Ctx::Plain { .. } | Ctx::Arith { .. } | Ctx::Param => self.out.push_str(&tag),
        }
        self.prev = Some(b'x');
        self.trimming = close_t == "-}}";
    }

    /// Copy `len` bytes of text from `c` on (whole characters).
    fn copy(&mut self, c: u8, len: usize, seen: Option<u8>) {
        let e = (self.i + len).min(self.b.len());
        // whole characters: a step of two never splits one (the second byte is ASCII or the
        // escaped character, copied whole)
        let e = (e..=self.b.len())
            .find(|k| self.t.is_char_boundary(*k))
            .unwrap_or(self.b.len());
        self.out.push_str(&self.t[self.i..e]);
        self.i = e;
        if self.trimming && matches!(c, b' ' | b'\t' | b'\n' | b'\r') && len == 1 {
            return;
        }
        self.trimming = false;
        if let Some(s) = seen {
            self.prev = Some(s);
        }
    }

    /// A byte in a `#` comment: a newline (or the backtick of the substitution it stands in)
    /// ends it.
    fn comment(&mut self, c: u8) -> Step {
        let in_backticks = matches!(
            self.stack.get(self.stack.len().wrapping_sub(2)),
            Some(Ctx::Plain {
                end: Some(b'`'),
                ..
            })
        );
        if c == b'\n' || (c == b'`' && in_backticks) {
            self.stack.pop();
            return Step::Done;
        }
        Step::By(1, Some(c))
    }

    /// A byte inside quotes, `${…}` or `$(( ))`.
    fn quoted(&mut self, top: Ctx, c: u8, n: Option<u8>, esc: usize) -> Step {
        let mut step = 1;
        let mut seen = Some(c);
        match top {
            Ctx::Single if c == b'\'' => {
                self.stack.pop();
            }
            Ctx::Param if c == b'}' => {
                self.stack.pop();
            }
            Ctx::AnsiC if c == b'\\' => step = esc,
            Ctx::AnsiC if c == b'\'' => {
                self.stack.pop();
            }
            Ctx::Arith { parens } => match c {
                b'(' => {
                    if let Some(Ctx::Arith { parens }) = self.stack.last_mut() {
                        *parens += 1;
                    }
                }
                b')' if parens > 0 => {
                    if let Some(Ctx::Arith { parens }) = self.stack.last_mut() {
                        *parens -= 1;
                    }
                }
                b')' if n == Some(b')') => {
                    self.stack.pop();
                    step = 2;
                    seen = Some(b'x');
                }
                _ => {}
            },
            Ctx::Double => match c {
                b'$' if n == Some(b'[') => return Step::Keep,
                b'\\' => step = esc,
                b'"' => {
                    self.stack.pop();
                }
                b'$' if opens(self.b, self.i).is_some() => {
                    let (ctx, len) = opens(self.b, self.i).unwrap_or((top, 1));
                    self.stack.push(ctx);
                    step = len;
                    seen = Some(b'(');
                }
                b'`' => self.stack.push(Ctx::Plain {
                    end: Some(b'`'),
                    parens: 0,
                }),
                _ => {}
            },
            _ => {}
        }
        Step::By(step, seen)
    }

    /// A byte outside quotes (`end`: what closes this context, `parens`: the `(` open in it).
    fn plain(&mut self, c: u8, n: Option<u8>, esc: usize, end: Option<u8>, parens: usize) -> Step {
        let (b, i, t) = (self.b, self.i, self.t);
        match c {
            // a line continuation: neither text nor a blank
            b'\\' if n == Some(b'\n') => return Step::By(2, None),
            // a backtick escaped inside backticks opens a nested substitution, read twice
            b'\\' if n == Some(b'`') && end == Some(b'`') => return Step::Keep,
            b'\\' => return Step::By(esc, Some(b'x')),
            b'\'' => self.stack.push(Ctx::Single),
            b'$' if n == Some(b'\'') => {
                self.stack.push(Ctx::AnsiC);
                return Step::By(2, Some(c));
            }
            // `$[ ]`, the old arithmetic: not followed
            b'$' if n == Some(b'[') => return Step::Keep,
            b'$' if opens(b, i).is_some() => {
                let (ctx, len) = opens(b, i).unwrap_or((Ctx::Plain { end, parens }, 1));
                self.stack.push(ctx);
                return Step::By(len, Some(b'('));
            }
            b'(' if n == Some(b'(')
                && (command_position(&self.out) || after_word(&self.out, "for")) =>
            {
                self.stack.push(Ctx::Arith { parens: 0 });
                return Step::By(2, Some(c));
            }
            // a here-string: its word follows
            b'<' if n == Some(b'<') && b.get(i + 2) == Some(&b'<') => return Step::By(3, Some(c)),
            b'<' if n == Some(b'<') => return self.heredoc_start(),
            // a heredoc inside backticks is read twice by the shell: not followed here
            b'\n' if !self.heredocs.is_empty() && end == Some(b'`') => return Step::Keep,
            b'\n' if !self.heredocs.is_empty() => return self.heredoc_bodies(),
            b'c' if self.prev == Some(UNKNOWN) && t[i..].starts_with("case") => return Step::Keep,
            b'c' if blank(self.prev)
                && t[i..].starts_with("case")
                && !t[i + 4..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                && command_position(&self.out) =>
            {
                // to its `esac`, copied as written (its patterns' `)` are no parentheses),
                // each value in it a plain word; the reading goes on after it
                return match esac_end(t, i) {
                    Some(e) if !t[i..e].contains("<<") => {
                        self.verbatim_until = e;
                        self.verbatim_why = "case";
                        Step::Done
                    }
                    _ => Step::Keep,
                };
            }
            b'"' => self.stack.push(Ctx::Double),
            // the end of a substitution: the word goes on
            b'`' if end == Some(b'`') => {
                self.stack.pop();
                return Step::By(1, Some(b'x'));
            }
            b'`' => self.stack.push(Ctx::Plain {
                end: Some(b'`'),
                parens: 0,
            }),
            b'(' => {
                if let Some(Ctx::Plain { parens, .. }) = self.stack.last_mut() {
                    *parens += 1;
                }
            }
            b')' if parens > 0 => {
                if let Some(Ctx::Plain { parens, .. }) = self.stack.last_mut() {
                    *parens -= 1;
                }
            }
            b')' if end == Some(b')') => {
                self.stack.pop();
                return Step::By(1, Some(b'x'));
            }
            // after a `{% %}` block, whether `#` starts a word is not known here
            b'#' if self.prev == Some(UNKNOWN) => return Step::Keep,
            b'#' if blank(self.prev) => self.stack.push(Ctx::Comment),
            _ => {}
        }
        Step::By(1, Some(c))
    }

    /// `<<` or `<<-` at `i`: its delimiter word is read, and its body follows the line.
    fn heredoc_start(&mut self) -> Step {
        let (b, i) = (self.b, self.i);
        let mut j = i + 2;
        let strip = b.get(j) == Some(&b'-');
        if strip {
            j += 1;
        }
        while j < b.len() && matches!(b[j], b' ' | b'\t') {
            j += 1;
        }
        let Some((word, we, quoted)) = heredoc_word(self.t, j) else {
            return Step::Keep;
        };
        self.heredocs.push((word, strip, quoted));
        Step::By(we - i, Some(b'x'))
    }

    /// The newline at `i` ends a line that began heredocs: their bodies, from the next line to
    /// each delimiter line, are text.
    fn heredoc_bodies(&mut self) -> Step {
        let (b, t) = (self.b, self.t);
        let heredocs = std::mem::take(&mut self.heredocs);
        // each body's lines, read before any is written: (start, end, its delimiter line)
        let mut bodies: Vec<Vec<(usize, usize, bool)>> = Vec::new();
        let mut i = self.i + 1;
        for (word, strip, quoted) in &heredocs {
            let quoted = *quoted;
            let mut lines = Vec::new();
            loop {
                if i >= b.len() {
                    // no delimiter line: not a reading to move tags on
                    return Step::Keep;
                }
                let le = t[i..].find('\n').map_or(b.len(), |k| i + k);
                let line = &t[i..le];
                // a block, a comment or a trim in a body may render (or remove) a line
                // break or the delimiter's line: where the body ends is not known
                // a backslash at a line's end joins the next line to it (an unquoted
                // delimiter): the end line may be hidden, or made
                if line.contains("{%")
                    || (!quoted && line.ends_with('\\'))
                    || line.contains("{#")
                    || line.contains("-}}")
                    || line.contains("{{-")
                    || line.matches("{{").count() != line.matches("}}").count()
                {
                    return Step::Keep;
                }
                let line = if *strip {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                let next = (le + 1).min(b.len());
                let end = line == word;
                lines.push((i, next, end));
                i = next;
                if end {
                    break;
                }
            }
            bodies.push(lines);
        }
        self.out.push('\n');
        self.i += 1;
        for ((word, strip, quoted), lines) in heredocs.into_iter().zip(bodies) {
            // a body that runs commands (`$( )`, backticks) is no text whose `$` can be
            // escaped: a value there must be a plain word
            let runs = !quoted
                && lines.iter().any(|&(s, e, _)| {
                    let l = &t[s..e];
                    l.contains("$(") || l.contains('`')
                });
            for (s, e, _) in lines {
                let body = &t[s..e];
                if !body.contains("{{") {
                    self.out.push_str(body);
                } else {
                    self.moved = true;
                    self.out
                        .push_str(&body_line(body, &word, strip, quoted, runs));
                }
                self.i = e;
            }
        }
        self.prev = Some(b'\n');
        self.trimming = false;
        Step::Done
    }
}

/// What `$((`, `$(` and `${` at `i` open (not `${{`, a tag after a `$`), and how long the
/// opening is: a context of their own, outside quotes and inside double quotes alike.
fn opens(b: &[u8], i: usize) -> Option<(Ctx, usize)> {
    match (b.get(i + 1), b.get(i + 2)) {
        (Some(b'('), Some(b'(')) => Some((Ctx::Arith { parens: 0 }, 3)),
        (Some(b'('), _) => Some((
            Ctx::Plain {
                end: Some(b')'),
                parens: 0,
            },
            2,
        )),
        // not `${{`, `${%`, `${#`: a template tag after a `$`
        (Some(b'{'), next) if !matches!(next, Some(b'{' | b'%' | b'#')) => Some((Ctx::Param, 2)),
        _ => None,
    }
}

/// Whether text written after `out` starts a command: at the start, after a newline, `;`,
/// `&`, `|`, `(`, a backtick or `{`, or after a keyword that a command follows.
fn command_position(out: &str) -> bool {
    let before = out.trim_end_matches([' ', '\t']);
    match before.bytes().last() {
        None | Some(b'\n' | b';' | b'&' | b'|' | b'(' | b'`' | b'{') => true,
        _ => {
            let word = before
                .rsplit(|c: char| c.is_whitespace() || c == ';')
                .next()
                .unwrap_or("");
            matches!(
                word,
                "then" | "do" | "else" | "elif" | "if" | "while" | "until" | "!" | "time"
            )
        }
    }
}

/// The constructs whose words the shell reads again (a second shell, `eval`, `trap`, …) or
/// reads as arithmetic or as a variable's name (`((`, `[[`, `let`, `declare`, `read`, …): where
/// a command holds one, no quoting keeps a value one literal text there, so every value in it
/// must be a plain word. What is found, as the reason the error gives (`net-<word>`).
fn hard_construct(t: &str) -> Option<&'static str> {
    // a tag that trims the white space around it joins lines: a value after a comment's line
    // or a here-doc's end line then stands in the comment or the here-doc (helper 66), which
    // the reading of the text before the trim did not see
    let joins = |i: usize, m: &str| {
        let (before, after) = (&t[..i], &t[i + m.len()..]);
        let ws = |c: char| c.is_whitespace();
        if m.starts_with('{') {
            before[before.trim_end_matches(ws).len()..].contains('\n')
        } else {
            after[..after.len() - after.trim_start_matches(ws).len()].contains('\n')
        }
    };
    if ["{{-", "-}}", "{%-", "-%}"]
        .iter()
        .any(|m| t.match_indices(m).any(|(i, _)| joins(i, m)))
    {
        return Some("net-trim");
    }
    // what the reading of the text does not follow as bash and minijinja do (helper 66): a
    // quote or a substitution inside `${…}` (its end is not the first `}`), a single quote
    // left open inside backticks (bash ends the backticks in it), a map inside a tag (its `}}` is not the
    // tag's end), `$'…'` before an `esac` (its `\'` is no end): every value a plain word
    if let Some(why) = unfollowed(t) {
        return Some(why);
    }
    // a block may render a line break or nothing: both readings
    hard_construct_in(&without_tags(t, "\n")).or_else(|| hard_construct_in(&without_tags(t, "")))
}

/// The first construct of `t` whose reading [`hard_construct`]'s reader does not follow.
fn unfollowed(t: &str) -> Option<&'static str> {
    for (i, _) in t.match_indices("${") {
        let body = t[i + 2..].split('}').next().unwrap_or("");
        if body.contains(['\'', '"', '`']) || body.contains("$(") || body.contains("${") {
            return Some("net-${…}");
        }
    }
    if t.split('`')
        .skip(1)
        .step_by(2)
        .any(|inside| inside.matches('\'').count() % 2 == 1)
    {
        return Some("net-`…'");
    }
    for (i, _) in t.match_indices("{{") {
        // (not a `'{{'` a tag's string holds)
        if t[..i].ends_with(['\'', '"']) {
            continue;
        }
        let inside = t[i + 2..].split("}}").next().unwrap_or("");
        // (a `{` in a string of the tag's, `{{ '{{' }}`, is text)
        let mut quote: Option<char> = None;
        let map = inside.chars().any(|c| match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                false
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                false
            }
            None => c == '{',
        });
        if map {
            return Some("net-{{ {…} }}");
        }
    }
    if t.contains("$'") && t.contains("esac") {
        return Some("net-$'…' esac");
    }
    None
}

/// [`hard_construct`] of a text whose tags are made words.
fn hard_construct_in(text: &str) -> Option<&'static str> {
    // what single quotes hold is text, not read by this shell (a second one is found by
    // its command word)
    let read = outside_single_quotes(text);
    if let Some((_, why)) = ANYWHERE.iter().find(|(w, _)| read.contains(w)) {
        return Some(why);
    }
    if let Some(why) = arithmetic_command(&read) {
        return Some(why);
    }
    if let Some(why) = variable_read_as_arithmetic(&read) {
        return Some(why);
    }
    if let Some(why) = arithmetic_variable_assigned(&read) {
        return Some(why);
    }
    let words = shell_words(text);
    if let Some(why) = command_construct(&words) {
        return Some(why);
    }
    // `env -S "bash -c …"`: a command line split from one word
    if words.iter().any(|(w, op)| !op && w == "env")
        && words
            .iter()
            .any(|(w, op)| !op && (w.starts_with("-S") || w.starts_with("--split-string")))
    {
        return Some("net-env -S");
    }
    None
}

/// The construct a command word of `words` makes (at the start of a command, after a prefix
/// such as `sudo`, `time`, `nice -n 5`, an assignment, `builtin`), or a shell given a text.
fn command_construct(words: &[(String, bool)]) -> Option<&'static str> {
    let mut at_command = true;
    let mut after_pipe = false;
    for (k, (w, op)) in words.iter().enumerate() {
        if *op {
            at_command = true;
            // a pipe feeds the group or subshell that follows it too (`| { bash; }`)
            after_pipe = w == "|" || (after_pipe && (w == "{" || w == "("));
            continue;
        }
        // quotes inside a word are no part of its name (`b''ash`, `ev''al`, `$'eval'`); a
        // brace expansion's words are (`{eval,}`)
        let unquoted: String = w
            .replace("$'", "'")
            .replace("$\"", "\"")
            .chars()
            .filter(|c| !"\"'\\{},".contains(*c))
            .collect();
        let bare = unquoted.as_str();
        let name = bare.rsplit('/').next().unwrap_or(bare);
        // the rest of this command's words, to its end
        let rest = || {
            words[k + 1..]
                .iter()
                .take_while(|(_, op)| !*op)
                .map(|(w, _)| w.trim_matches(|c| c == '"' || c == '\''))
        };
        // a shell given its script as text (`-c`, `-s`, stdin, a here-document), anywhere
        // a shell by its name, or a command word that is a variable (`$0`, `$SH`)
        // a command word that is a glob (`/bin/ba?h`) may name any program, a shell among them
        // (unquoted: a quoted one is the text it holds)
        // (a path, or given options: `*)` of a `case` is a pattern)
        let glob = at_command
            && name.contains(['?', '*', '['])
            && !matches!(name, "[" | "[[")
            && !w.contains(['\'', '"', '\\'])
            && (bare.contains('/') || rest().next().is_some_and(|r| r.starts_with('-')));
        let shell = SHELLS.contains(&name)
            || glob
            || (bare.starts_with('$')
                && (at_command
                    || bare.starts_with("$BASH")
                    || bare.starts_with("${BASH")
                    || bare.starts_with("$SHELL")
                    || bare.starts_with("${SHELL")));
        // its flags are those before the script's name (`bash run.sh -c 4` passes `-c` on;
        // `-o pipefail` and `--rcfile F` take a word; `flock FILE -c`)
        let text_flag = || {
            let words = rest();
            let mut takes = name == "flock";
            for r in words {
                if (r.starts_with('-') || r.starts_with('+'))
                    && !r.starts_with("--")
                    && r[1..].contains(['c', 's'])
                    || r.starts_with("--command")
                {
                    return true;
                }
                let flag = r.starts_with('-') || r.starts_with('+');
                if !flag && !takes {
                    return false;
                }
                takes = flag && matches!(r, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file");
                if !flag && name == "flock" {
                    takes = false;
                }
            }
            false
        };
        // with no script's name it reads its standard input (`{ bash; } <<< …`, `exec 0<…`)
        let reads_stdin = at_command && rest().all(|r| r.starts_with('-') || r.starts_with('+'));
        if shell
            && (after_pipe && at_command
                || reads_stdin
                || text_flag()
                || fed(&rest().collect::<Vec<_>>()))
        {
            return Some("net-sh -c");
        }
        if at_command {
            // a builtin by its bare name (`./eval` is a program of that name)
            let builtin = is_builtin(name) && bare == name;
            if let Some(i) = REREAD
                .iter()
                .position(|r| *r == name)
                .filter(|_| builtin || !is_builtin(name))
            {
                // `printf`, `test`, `[` only with `-v` (a variable's name); `source` and `.`
                // only of text made here (`<(…)`, /dev/stdin), not of a file
                let flagged = match name {
                    "printf" | "test" | "[" | "wait" => {
                        rest().any(|r| r.starts_with("-v") || r.starts_with("-p"))
                    }
                    "source" | "." => fed(&rest().collect::<Vec<_>>()),
                    _ => true,
                };
                if flagged {
                    return Some(NET[i]);
                }
            }
            // a prefix, its options and numbers, an assignment: the command word follows
            let prefix = PREFIX.contains(&name)
                || bare.starts_with('-')
                // a redirection before the command word (`>/dev/null eval …`)
                || bare.starts_with(['<', '>'])
                || bare.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&').starts_with(['<', '>'])
                || bare.parse::<f64>().is_ok()
                // a duration or a count with its unit (`timeout 30s`, `nice -n 5`)
                || bare.starts_with(|c: char| c.is_ascii_digit())
                || (bare.contains('=') && !bare.starts_with('='));
            at_command = prefix;
        }
        // a pipe feeds what follows its prefixes (`| env bash`, `| timeout 5 sh`)
        after_pipe = after_pipe && at_command;
    }
    None
}

/// Found anywhere in a command: arithmetic, tests, and what reads a variable that holds a value
/// again (an indirection `${!x}`, a prompt expansion `${x@P}` or `PS4`).
const ANYWHERE: [(&str, &str); 12] = [
    ("$((", "net-(("),
    ("$[", "net-$["),
    ("${!", "net-${!x}"),
    ("@P}", "net-${x@P}"),
    ("PROMPT_COMMAND", "net-PROMPT_COMMAND"),
    ("BASH_ENV", "net-BASH_ENV"),
    ("PS0=", "net-PS4"),
    ("PS1=", "net-PS4"),
    ("PS2=", "net-PS4"),
    ("PS4=", "net-PS4"),
    ("PS4+=", "net-PS4"),
    ("PS0+=", "net-PS4"),
];

/// Command words whose words the shell reads again, or as arithmetic or a variable's name.
const REREAD: [&str; 31] = [
    "eval",
    "trap",
    "alias",
    "source",
    ".",
    "mapfile",
    "readarray",
    "let",
    "declare",
    "typeset",
    "local",
    "readonly",
    "read",
    "unset",
    "printf",
    "test",
    "[",
    "ssh",
    "su",
    "sg",
    "runuser",
    "xargs",
    "parallel",
    "watch",
    "tmux",
    "screen",
    "compgen",
    "complete",
    "coproc",
    "wait",
    "fc",
];

/// The reason [`hard_construct`] gives for each of [`REREAD`].
const NET: [&str; 31] = [
    "net-eval",
    "net-trap",
    "net-alias",
    "net-source",
    "net-.",
    "net-mapfile",
    "net-readarray",
    "net-let",
    "net-declare",
    "net-typeset",
    "net-local",
    "net-readonly",
    "net-read",
    "net-unset",
    "net-printf -v",
    "net-test -v",
    "net-[ -v",
    "net-ssh",
    "net-su",
    "net-sg",
    "net-runuser",
    "net-xargs",
    "net-parallel",
    "net-watch",
    "net-tmux",
    "net-screen",
    "net-compgen",
    "net-complete",
    "net-coproc",
    "net-wait -p",
    "net-fc",
];

/// Programs that run a shell over a text (`-c`, `-s`, stdin; `flock` and `script` with `-c`).
const SHELLS: [&str; 14] = [
    "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "rbash", "busybox", "fish", "csh", "tcsh",
    "flock", "script",
];

/// Words after which the command word still follows (a prefix, a keyword).
const PREFIX: [&str; 26] = [
    "builtin", "command", "exec", "nohup", "nice", "env", "sudo", "time", "timeout", "stdbuf",
    "taskset", "numactl", "chrt", "ionice", "srun", "mpirun", "mpiexec", "setsid", "!", "then",
    "do", "else", "if", "elif", "while", "until",
];

/// The text with what single quotes hold blanked (the quotes kept): outside double quotes,
/// `'…'` is text the shell does not read.
fn outside_single_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in text.chars() {
        if single {
            if c == '\'' {
                single = false;
                out.push(c);
            } else {
                out.push(if c == '\n' { '\n' } else { ' ' });
            }
            continue;
        }
        out.push(c);
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => double = !double,
            '\'' if !double => single = true,
            _ => {}
        }
    }
    out
}

/// Whether the text holds `((` where the shell reads it as arithmetic, or a `[[` test: where a
/// word starts (at the start, after a blank or an operator character — `;`, `&`, `|`, `(`, `)`,
/// `<`, `>`, `!` — after a backquote or `{`: `((…))`, `` `((x))` ``), and `((` right after
/// a reserved word too (`while((n))`, `if((x))`, `for((;;))`, `do((…))`); not `max((1, 2))`.
fn arithmetic_command(read: &str) -> Option<&'static str> {
    const RESERVED: &[&[u8]] = &[
        b"if", b"then", b"else", b"elif", b"while", b"until", b"for", b"do", b"time",
    ];
    let b = read.as_bytes();
    let boundary = |k: usize| k == 0 || b" \t\n\r;&|!()<>`{".contains(&b[k - 1]);
    let name = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // `while((`: the name before `((` is a whole reserved word
    let reserved_before = |k: usize| {
        let start = k - b[..k].iter().rev().take_while(|c| name(**c)).count();
        start < k && boundary(start) && RESERVED.contains(&&b[start..k])
    };
    (0..b.len()).find_map(|k| {
        if b[k..].starts_with(b"((") && (boundary(k) || reserved_before(k)) {
            Some("net-((")
        } else if b[k..].starts_with(b"[[")
            && b.get(k + 2).is_some_and(|c| b" \t\n".contains(c))
            && boundary(k)
        {
            Some("net-[[")
        } else {
            None
        }
    })
}

/// Whether the words of a shell's (or `source`'s) command feed it text made here ([`fed_text`]
/// of each, and a process substitution: `<(…)` reads as a `<` the words end at, `(` being an
/// operator).
fn fed(words: &[&str]) -> bool {
    words.iter().enumerate().any(|(k, w)| {
        let redirect = w.trim_start_matches(|c: char| c.is_ascii_digit());
        fed_text(w) || (redirect == "<" && words.get(k + 1).is_none_or(|n| n.starts_with('(')))
    })
}

/// Whether a word of a shell's (or `source`'s) command feeds it text made here: a here-string
/// or here-document (`<<<`, `3<<EOF`), a process substitution (`<(…)`), a file that is a
/// stream (`/dev/stdin`, `/dev/fd/N`, `/proc/self/fd/N`, `/dev/tcp/…`). An output redirection
/// (`2>/dev/null`, `&>/dev/null`) and standard input from a file (`< input.txt`, `</dev/null`)
/// feed it none: it reads its script from the file named.
fn fed_text(r: &str) -> bool {
    // a here-string or here-document, a process substitution: wherever in the word (one word
    // may hold two redirections: `2>/dev/null<<<"…"`)
    if r.contains("<<") || r.contains("<(") {
        return true;
    }
    // an output redirection alone feeds nothing, wherever it goes
    let redirect = r.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
    if redirect.starts_with('>') && !redirect.contains('<') {
        return false;
    }
    ["/dev/stdin", "/dev/fd/", "/proc/", "/dev/tcp/", "/dev/udp/"]
        .iter()
        .any(|s| r.contains(s))
}

/// A variable read as arithmetic where a value may stand in it: a subscript that holds a name
/// (`a[i]=1`, `${a[i]}`, `a=( [i]=x )`), or a substring offset (`${x:n}`, `${x:1:n}`).
/// An assignment to one of bash's variables that read what they are given as arithmetic
/// (`RANDOM=a[$(…)]` runs the substitution, however it is quoted): any mention of one but a
/// read of it (`$RANDOM`, `${RANDOM}`) — `X=`, `X+=`, `X[0]=`, `for X in`, `select X in`,
/// `read X`, `export X=`.
fn arithmetic_variable_assigned(text: &str) -> Option<&'static str> {
    // (and the prompts, whose value `set -x` expands again: `for PS4 in`, `PS4[0]=`)
    const INTEGER: [(&str, &str); 9] = [
        ("RANDOM", "net-RANDOM="),
        ("SRANDOM", "net-SRANDOM="),
        ("OPTIND", "net-OPTIND="),
        ("HISTCMD", "net-HISTCMD="),
        ("SECONDS", "net-SECONDS="),
        ("PS0", "net-PS4"),
        ("PS1", "net-PS4"),
        ("PS2", "net-PS4"),
        ("PS4", "net-PS4"),
    ];
    let name = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = text.as_bytes();
    for (var, why) in INTEGER {
        for (k, _) in text.match_indices(var) {
            let before = k.checked_sub(1).map(|i| b[i]);
            let after = b.get(k + var.len()).copied();
            let read = before.is_some_and(|c| matches!(c, b'$' | b'{' | b'#' | b'!'));
            if !before.is_some_and(name) && !after.is_some_and(name) && !read {
                return Some(why);
            }
        }
    }
    None
}

/// Whether a word after `before` is surely an argument of a command (`python3 t.py` before
/// `layers[…]=1`): in a simple command whose command word is a program, after no quote or
/// escape (which would hide where the command starts), and not a word whose arguments the
/// shell reads as assignments (`declare`, `export`, `local`, `eval`, …) or a keyword before a
/// command (`time`, `!`, `if`, …). Anything else is taken for an assignment.
fn argument_of_a_command(before: &str) -> bool {
    let segment = &before[before
        .rfind(|c: char| ";&|()\n`{}".contains(c))
        .map_or(0, |i| i + 1)..];
    if segment.contains(['"', '\'', '\\', '$']) {
        return false;
    }
    let is_name = |n: &str| {
        n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
    };
    // the command word: the first that is no assignment (`X=1 cmd`)
    let Some(command) = segment.split_whitespace().find(|w| {
        !w.split_once('=')
            .is_some_and(|(n, _)| is_name(n.split('[').next().unwrap_or(n)))
    }) else {
        return false;
    };
    !matches!(
        command,
        "declare"
            | "local"
            | "export"
            | "readonly"
            | "typeset"
            | "let"
            | "eval"
            | "time"
            | "!"
            | "if"
            | "then"
            | "else"
            | "elif"
            | "do"
            | "while"
            | "until"
            | "builtin"
            | "command"
            | "coproc"
            | "exec"
    )
}

fn variable_read_as_arithmetic(text: &str) -> Option<&'static str> {
    let b = text.as_bytes();
    let name = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    for (k, c) in b.iter().enumerate() {
        match c {
            // a subscript with a letter or `$` inside the brackets: `${NAME[…]}`, an assignment
            // `NAME[…]=`, or an array's `( […]=x )` (in other text, `yes[x]` is text)
            b'[' if k > 0 && (name(b[k - 1]) || b[k - 1] == b'(' || b[k - 1] == b' ') => {
                let inside = text[k + 1..].split(']').next().unwrap_or("");
                let after = text.get(k + 2 + inside.len()..).unwrap_or("");
                let assigned = after.starts_with('=') || after.starts_with("+=");
                let start = k - text[..k].bytes().rev().take_while(|c| name(*c)).count();
                let expanded = ["${", "${!", "${#"]
                    .iter()
                    .any(|p| text[..start].ends_with(p));
                // `cmd layers[…]=1`: an argument of a command (a glob), not an assignment
                let argument = !expanded && assigned && argument_of_a_command(&text[..start]);
                let array = (name(b[k - 1]) && (expanded || (assigned && !argument)))
                    || (text[..k].trim_end().ends_with('(') && assigned);
                if array
                    && inside
                        .bytes()
                        .any(|c| c.is_ascii_alphabetic() || c == b'$' || c == b'_')
                {
                    return Some("net-a[i]");
                }
            }
            // `${NAME:` not followed by `-`, `=`, `?`, `+` (defaults): an offset
            b'$' if b.get(k + 1) == Some(&b'{') => {
                let rest = &text[k + 2..];
                // a name, `@`, `*`, or an array's `[@]`/`[*]`
                let mut n = rest.bytes().take_while(|c| name(*c)).count();
                if n == 0 && rest.starts_with(['@', '*']) {
                    n = 1;
                }
                if rest[n..].starts_with("[@]") || rest[n..].starts_with("[*]") {
                    n += 3;
                }
                if n > 0
                    && rest[n..].starts_with(':')
                    && !rest[n + 1..].starts_with(['-', '=', '?', '+'])
                {
                    return Some("net-${x:n}");
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether a command word of [`hard_construct`]'s is a shell builtin (found by its bare name
/// only), not a program.
fn is_builtin(name: &str) -> bool {
    !matches!(
        name,
        "ssh"
            | "su"
            | "sg"
            | "runuser"
            | "xargs"
            | "parallel"
            | "watch"
            | "tmux"
            | "screen"
            | "coproc"
    )
}

/// The text with each template tag made a word (`X`) and each block or comment an end of
/// command: what the shell sees around them, with what may or may not be rendered.
fn without_tags(t: &str, block: &'static str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some(k) = rest.find('{') {
        out.push_str(&rest[..k]);
        let r = &rest[k..];
        // `{% raw %}…{% endraw %}`: its text as written
        if let Some(inner) = r
            .strip_prefix("{%")
            .filter(|x| x.trim_start_matches(['-', '+', ' ']).starts_with("raw"))
        {
            let start = inner.find("%}").map_or(r.len(), |e| e + 4);
            let end = r[start..].find("{%").map_or(r.len(), |e| start + e);
            out.push_str(&r[start..end]);
            rest = &r[end..];
            if let Some(e) = rest.find("%}") {
                rest = &rest[e + 2..];
            }
            continue;
        }
        let close = if r.starts_with("{{") {
            Some(("}}", "X"))
        } else if r.starts_with("{%") {
            Some(("%}", block))
        } else if r.starts_with("{#") {
            Some(("#}", block))
        } else {
            None
        };
        match close.and_then(|(c, w)| r[2..].find(c).map(|e| (e + 4, w))) {
            Some((e, w)) => {
                out.push_str(w);
                rest = &r[e..];
            }
            None => {
                out.push('{');
                rest = &r[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The text as words and operators (`true` for an operator: a newline, `;`, `&`, `|`, `(`,
/// `)`, `{`, `}`, a backtick, `$(`), roughly as the shell splits it: quotes are kept in the
/// words they stand in, not followed (a word in quotes may read as a command word: the net
/// errs toward finding one).
fn shell_words(text: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        // inside quotes a word goes on, blanks and operators and all
        if let Some(q) = quote {
            word.push(c);
            if c == '\\' && q == '"' {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            } else if c == q {
                quote = None;
            }
            continue;
        }
        let op = match c {
            '\\' if chars.peek() == Some(&'\n') => {
                chars.next();
                None
            }
            '\\' => {
                word.push(c);
                if let Some(n) = chars.next() {
                    word.push(n);
                }
                None
            }
            '\'' | '"' => {
                quote = Some(c);
                word.push(c);
                None
            }
            // `|&` pipes stderr too: one pipe
            '|' if chars.peek() == Some(&'&') => {
                chars.next();
                Some("|".to_string())
            }
            // `2>&1`, `<&3`, `&>file`: a redirection, one word (as an operator, `&` ended the
            // shell's words there, and a here-string after it went unread)
            '&' if word.ends_with(['>', '<']) => {
                word.push(c);
                None
            }
            '&' if word.is_empty() && chars.peek() == Some(&'>') => {
                word.push(c);
                None
            }
            '\n' | ';' | '&' | '|' | '(' | ')' | '{' | '}' | '`' => Some(c.to_string()),
            '$' if chars.peek() == Some(&'(') => {
                chars.next();
                Some("$(".to_string())
            }
            c if c.is_whitespace() => Some(String::new()),
            _ => {
                word.push(c);
                None
            }
        };
        if let Some(op) = op {
            if !word.is_empty() {
                out.push((std::mem::take(&mut word), false));
            }
            if !op.is_empty() {
                out.push((op, true));
            }
        }
    }
    if !word.is_empty() {
        out.push((word, false));
    }
    out
}

/// Whether the text before ends in the word `w` (a keyword such as `for`).
fn after_word(out: &str, w: &str) -> bool {
    let before = out.trim_end_matches([' ', '\t']);
    before.ends_with(w)
        && before[..before.len() - w.len()]
            .bytes()
            .last()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == b'_'))
}

/// Where the `case` at `i` ends: after its `esac` (nested `case`s counted), or `None`.
fn esac_end(t: &str, i: usize) -> Option<usize> {
    let b = t.as_bytes();
    let word_at = |k: usize, w: &str| {
        t[k..].starts_with(w)
            && (k == 0 || !(b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_'))
            && b.get(k + w.len())
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
    };
    let mut depth = 0usize;
    let mut k = i;
    while k < b.len() {
        // quoted text and comments hold no `esac`; a `$esac`, `${x:-esac}` is a word
        let blank_before = k == 0 || b" \t\n;)(&|".contains(&b[k - 1]);
        match b[k] {
            b'\'' => {
                k += t[k + 1..].find('\'').map_or(b.len(), |e| e + 2);
                continue;
            }
            b'"' => {
                let mut e = k + 1;
                while e < b.len() && b[e] != b'"' {
                    e += if b[e] == b'\\' { 2 } else { 1 };
                }
                k = e + 1;
                continue;
            }
            b'#' if blank_before => {
                k += t[k..].find('\n').unwrap_or(b.len() - k);
                continue;
            }
            _ => {}
        }
        if !blank_before {
            k += 1;
        } else if word_at(k, "case") {
            depth += 1;
            k += 4;
        } else if word_at(k, "esac") {
            depth = depth.saturating_sub(1);
            k += 4;
            if depth == 0 {
                return Some(k);
            }
        } else {
            k += 1;
        }
    }
    None
}

/// The text the shell sees last before a tag: `out` without the template blocks and comments
/// at its end (they render nothing here, or may not), and without the blanks a `-` trims.
fn visible_end(out: &str, trim: bool) -> &str {
    let mut s = out;
    let mut trim = trim;
    loop {
        let t = s.trim_end_matches([' ', '\t', '\n', '\r']);
        if trim || t.ends_with("-%}") || t.ends_with("-#}") {
            s = t;
        }
        let open = if s.ends_with("%}") {
            "{%"
        } else if s.ends_with("#}") {
            "{#"
        } else {
            return s;
        };
        let Some(k) = s.rfind(open) else {
            return s;
        };
        trim = s[k..].starts_with("{%-") || s[k..].starts_with("{#-");
        s = &s[..k];
    }
}

/// Whether a tag written after `out` follows a `$` the shell reads as one (not escaped): the
/// value's opening quote would make it `$'…'`.
fn after_dollar(out: &str, trim: bool) -> bool {
    let s = visible_end(out, trim);
    s.strip_suffix('$')
        .is_some_and(|before| before.bytes().rev().take_while(|c| *c == b'\\').count() % 2 == 0)
}

/// Whether a tag written after `out` stands in a word with a `[` left open after a name, where
/// the word is an assignment (`a[{{ n }}]=1`, also after other assignments or `declare`,
/// `local`, `export`, `readonly`, `typeset`, `let`): an array subscript, which the shell
/// evaluates as arithmetic. A `[` in an argument (`echo x[{{ n }}]`) is a glob's.
fn in_subscript(out: &str) -> bool {
    let cut = |c: char| c.is_whitespace() || ";&|()<>`\"'".contains(c);
    let word = out.rsplit(cut).next().unwrap_or("");
    let Some(k) = word.rfind('[').filter(|k| !word[*k..].contains(']')) else {
        return false;
    };
    let name = &word[..k];
    let is_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    // an argument of a program (`echo x[…]`) is a glob's `[`
    is_name && !argument_of_a_command(&out[..out.len() - word.len()])
}

/// A heredoc's delimiter from `j` (`EOF`, `'EOF'`, `"EOF"`, `\EOF`, `'E'OF`) and where it ends;
/// `None` for none, or one a template tag makes.
fn heredoc_word(t: &str, j: usize) -> Option<(String, usize, bool)> {
    let b = t.as_bytes();
    let mut word = String::new();
    let mut quoted = false;
    let mut k = j;
    while k < b.len()
        && !matches!(
            b[k],
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
        )
    {
        match b[k] {
            q @ (b'\'' | b'"') => {
                let e = t[k + 1..].find(q as char)? + k + 1;
                word.push_str(&t[k + 1..e]);
                k = e + 1;
                quoted = true;
            }
            b'\\' if k + 1 < b.len() => {
                let c = t[k + 1..].chars().next()?;
                word.push(c);
                k += 1 + c.len_utf8();
                quoted = true;
            }
            _ => {
                let c = t[k..].chars().next()?;
                word.push(c);
                k += c.len_utf8();
            }
        }
    }
    (!word.is_empty() && !word.contains("{{") && !word.contains("{%")).then_some((word, k, quoted))
}

/// A line of a heredoc body with its tags made safe there: a value may not hold the
/// delimiter's line (it would end the heredoc, and the rest of the value would run:
/// [`HEREDOC_SAFE`] refuses it); in a body the shell expands (its delimiter unquoted), the
/// value's `$`, backticks and backslashes are escaped, which would run or vanish — and in a
/// body that runs commands (`runs`: a `$( )` or a backtick in it), where a value may stand in
/// a command, in its quotes or out of them, it must be a plain word.
fn body_line(line: &str, delim: &str, strip: bool, quoted: bool, runs: bool) -> String {
    let escape = !quoted;
    let delim = delim.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = String::with_capacity(line.len() + 96);
    let mut k = 0;
    while let Some(at) = line[k..].find("{{").map(|x| k + x) {
        let Some(te) = line[at..].find("}}").map(|x| at + x + 2) else {
            break;
        };
        out.push_str(&line[k..at]);
        let (o, inner, c) = split_tag(&line[at..te]);
        let guarded = format!("({inner}) | {HEREDOC_SAFE}(\"{delim}\", {strip})");
        out.push_str(&if runs {
            word_tag(&line[at..te], "heredoc")
        } else if escape {
            escaped_tag(o, &guarded, c)
        } else {
            format!("{o} {guarded} {c}")
        });
        k = te;
    }
    out.push_str(&line[k..]);
    out
}

/// The filter that lets through only a value that is a plain shell word (the same quoted or
/// not), for a tag where no quoting holds; its argument says where the tag stands.
pub const SHELL_WORD: &str = "shell_word";

/// A tag whose value must be a plain shell word ([`SHELL_WORD`]), `why` saying where it stands.
fn word_tag(tag: &str, why: &str) -> String {
    let (open, inner, close) = split_tag(tag);
    format!("{open} ({inner}) | {SHELL_WORD}(\"{why}\") {close}")
}

/// Whether a value is a plain shell word, and if not, why that matters where it stands.
fn shell_word(value: Value, why: String) -> Result<Value, minijinja::Error> {
    let text = if value.is_undefined() || value.is_none() {
        String::new()
    } else {
        value.to_string()
    };
    // after `${NAME`, only more of the name: any other character is an operator there
    let operator =
        why == "param-name" && !text.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    if !text.is_empty() && crate::util::shell::quote(&text) == text && !operator {
        return Ok(value);
    }
    if let Some(what) = why.strip_prefix("net-") {
        let arith = matches!(
            what,
            "((" | "$["
                | "[["
                | "let"
                | "declare"
                | "typeset"
                | "local"
                | "readonly"
                | "read"
                | "unset"
                | "printf -v"
                | "test -v"
                | "[ -v"
                | "a[i]"
                | "${x:n}"
                | "${!x}"
                | "wait -p"
                | "compgen"
                | "complete"
                | "RANDOM="
                | "SRANDOM="
                | "OPTIND="
                | "HISTCMD="
                | "SECONDS="
        );
        let shown: String = crate::util::secret::mask_known(&text)
            .chars()
            .take(40)
            .collect();
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!(
                "this command uses {}, {}: every value in it must be a plain word (letters, digits and `-_./=:,+@%^`), not {shown:?}; {}",
                // (one reason for every shell given a text: `bash -c`, `zsh -c`, `| sh`, …)
                match what {
                    "sh -c" => "a second shell over a text (`bash -c`, `sh -c`, `| bash`, `bash <<<`)".to_string(),
                    "trim" => "a tag that trims a line break (`{{-`, `-}}`, `{%-`, `-%}`)".to_string(),
                    _ => format!("`{what}`"),
                },
                if arith {
                    "whose words the shell may read as arithmetic or as a variable's name, quoted or not (a value such as `a[$(…)]` would run)"
                } else if what == "trim" {
                    "which joins the value to the line before or after it (a comment's, a here-doc's end line), where its quoting does not hold"
                } else {
                    "which hands its words to a shell again (quoted once, a value would be read unquoted there)"
                },
                if arith {
                    "give a number or a plain name (a variable holding the value is read the same way)"
                } else {
                    "a value that needs quotes cannot reach a command that reads its words again: give a plain word, or move that command into a script that takes the value as an argument (`bash run.sh {{ x }}`)"
                }
            ),
        ));
    }
    let (place, instead) = match why.as_str() {
        "param-name" => (
            "right after a name inside `${…}` (where it would be the expansion's operator: `@P`, `:n`, `%…`)",
            "give letters, digits and `_` only, as part of the name",
        ),
        "param" => ("inside `${…}`", "set a variable to it first: `V={{ x }}; echo \"${X:-$V}\"`"),
        "arith" => (
            "where the shell reads words as arithmetic (`$(( ))`, `(( ))`, `[[ … -gt … ]]`, `let`, `declare -i`), quoted or not",
            "give a number (a variable holding the value is read as arithmetic too)",
        ),
        "subscript" => ("inside an array subscript `[…]`, which the shell reads as arithmetic", "give a number (a variable holding the value is read as arithmetic too)"),
        "escape" => ("after a backslash", "take the backslash away, or quote it: `'\\'{{ x }}`"),
        "dollar" => ("right after a `$` (with its quote it would read `$'…'`)", "put the `$` in quotes (`'$'{{ x }}`), or set a variable to it first"),
        "backticks" => ("inside backticks within double quotes, or nested backticks", "write `$( )` instead of the backticks"),
        "heredoc" => ("in a heredoc body that runs commands (`$( )` or backticks)", "set a variable to it before the heredoc, and write `$V` in the body"),
        "case" => ("inside a `case` command", "set a variable to it before: `V={{ x }}; case $V in …`"),
        _ => (
            "after what expr's reading of the command does not follow (an `{% if %}` whose branches leave the quotes otherwise, a heredoc inside backticks, without its end line or with a template block in its body, `$[ ]`, a `#` after a block)",
            "set a variable to it before that, and write `$V` there",
        ),
    };
    let shown: String = crate::util::secret::mask_known(&text)
        .chars()
        .take(40)
        .collect();
    Err(minijinja::Error::new(
        minijinja::ErrorKind::InvalidOperation,
        format!(
            "a value {place} cannot be quoted for the shell: it must be a plain word (letters, digits and `-_./=:,+@%^`), not {shown:?}; {instead}"
        ),
    ))
}

/// The filter that refuses a value holding a heredoc's delimiter line.
pub const HEREDOC_SAFE: &str = "heredoc_safe";

/// A tag whose value has its `\`, `$` and backticks escaped with a backslash (for a heredoc
/// body or backticks, which the shell reads for these before the value's quotes).
fn escaped_tag(open: &str, inner: &str, close: &str) -> String {
    format!(
        r#"{open} ({inner}) | string | replace("\\", "\\\\") | replace("$", "\\$") | replace("`", "\\`") {close}"#
    )
}

/// A tag with its `-` trims taken off (`{{-`, `-}}`): the caller has trimmed around it.
fn trimless(tag: &str) -> String {
    let (_, inner, _) = split_tag(tag);
    format!("{{{{{inner}}}}}")
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

/// The test `x is divisibleby(n)`: an error for `n` = 0, not a division by zero.
fn divisibleby(v: &Value, n: &Value) -> Result<bool, minijinja::Error> {
    let zero = || {
        Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            "divisibleby(0): no number is divisible by zero",
        ))
    };
    let int = |x: &Value| i128::try_from(x.clone()).ok().filter(|_| x.is_integer());
    if let (Some(a), Some(b)) = (int(v), int(n)) {
        return match b {
            0 => zero(),
            // i128::MIN % -1 overflows: every number is divisible by -1
            _ => Ok(a.checked_rem(b).is_none_or(|r| r == 0)),
        };
    }
    let float = |x: &Value| {
        matches!(x.kind(), minijinja::value::ValueKind::Number)
            .then(|| f64::try_from(x.clone()).ok())
            .flatten()
    };
    match (float(v), float(n)) {
        (Some(_), Some(0.0)) => zero(),
        (Some(a), Some(b)) => Ok(a % b == 0.0),
        _ => Ok(false),
    }
}

/// The filters a template may name: minijinja's built-ins and expr's `date` (for "did you
/// mean"; a test renders each, so a minijinja that drops one fails it).
pub const FILTERS: &[&str] = &[
    "abs",
    "attr",
    "batch",
    "bool",
    "capitalize",
    "chain",
    "count",
    "d",
    "date",
    "default",
    "dictsort",
    "e",
    "escape",
    "first",
    "float",
    "format",
    "groupby",
    "indent",
    "int",
    "items",
    "join",
    "last",
    "length",
    "lines",
    "list",
    "lower",
    "map",
    "max",
    "min",
    "pprint",
    "reject",
    "replace",
    "reverse",
    "round",
    "safe",
    "select",
    "slice",
    "sort",
    "split",
    "string",
    "sum",
    "title",
    "trim",
    "unique",
    "upper",
    "zip",
    "selectattr",
    "rejectattr",
];

/// The tests a template may name (`x is odd`): minijinja's built-ins.
pub const TESTS: &[&str] = &[
    "boolean",
    "defined",
    "divisibleby",
    "eq",
    "equalto",
    "escaped",
    "even",
    "false",
    "filter",
    "float",
    "ge",
    "greaterthan",
    "gt",
    "in",
    "integer",
    "iterable",
    "le",
    "lessthan",
    "lower",
    "lt",
    "mapping",
    "ne",
    "none",
    "number",
    "odd",
    "safe",
    "sameas",
    "sequence",
    "string",
    "test",
    "true",
    "undefined",
    "upper",
];

/// An error for a float that is no finite number (`1 / 0`), which a filter would turn into a
/// number or text a command gets.
fn finite(v: &Value) -> Result<(), minijinja::Error> {
    if v.kind() == minijinja::value::ValueKind::Number
        && f64::try_from(v.clone()).is_ok_and(|f| !f.is_finite())
    {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("a value is {v} (a division by zero, or past a double's range): no number to give a command"),
        ));
    }
    Ok(())
}

/// [`finite`] of a value and, `depth` deep, of the items of a list or map it holds.
fn finite_within(v: &Value, depth: usize) -> Result<(), minijinja::Error> {
    finite(v)?;
    if depth > 0
        && matches!(
            v.kind(),
            minijinja::value::ValueKind::Seq | minijinja::value::ValueKind::Map
        )
    {
        if let Ok(items) = v.try_iter() {
            for item in items.take(MAX_PRINTED_ITEMS) {
                finite_within(&item, depth - 1)?;
                // a map's values as well as its keys
                if let Ok(x) = v.get_item(&item) {
                    if !x.is_undefined() && v.kind() == minijinja::value::ValueKind::Map {
                        finite_within(&x, depth - 1)?;
                    }
                }
            }
        }
    }
    Ok(())
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
    // a value in a heredoc's body may not end it (`tags_out_of_quotes`)
    env.add_filter(
        HEREDOC_SAFE,
        |value: Value, delim: String, strip: bool| -> Result<Value, minijinja::Error> {
            let text = value.to_string();
            let ends = text.lines().any(|l| {
                let l = if strip { l.trim_start_matches('\t') } else { l };
                l.trim_end_matches('\r') == delim
            });
            if ends {
                return Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    format!("a value holds the line `{delim}`, which would end the heredoc it stands in"),
                ));
            }
            Ok(value)
        },
    );
    // a value where no quoting holds is a plain word (`tags_out_of_quotes`)
    env.add_filter(SHELL_WORD, shell_word);
    // `(1 / n) | int` at n=0 made the largest i128 of a float's infinity, `| string` `inf`:
    // no number a command should get
    env.add_filter("int", |state: &minijinja::State<'_, '_>, v: Value| {
        finite(&v)?;
        minijinja::filters::int(state, &v)
    });
    env.add_filter("float", |state: &minijinja::State<'_, '_>, v: Value| {
        finite(&v)?;
        minijinja::filters::float(state, &v)
    });
    env.add_filter("string", |state: &minijinja::State<'_, '_>, v: Value| {
        finite(&v)?;
        minijinja::filters::string(state, &v)
    });
    // a list joined, or a value formatted, into text: an infinity in it reached a command as
    // `inf` (`[big * 10, 1] | join(',')`)
    env.add_filter(
        "join",
        |state: &minijinja::State<'_, '_>,
         v: Value,
         joiner: Option<minijinja::value::StringInput<'_>>| {
            finite_within(&v, 3)?;
            minijinja::filters::join(state, &v, joiner)
        },
    );
    env.add_filter(
        "format",
        |state: &minijinja::State<'_, '_>, f: Value, args: minijinja::value::Rest<Value>| {
            for a in args.iter() {
                finite_within(a, 3)?;
            }
            minijinja::filters::format(state, &f, args)
        },
    );
    // minijinja's own `divisibleby` computes `a % 0` (a panic, in release builds too)
    env.add_test("divisibleby", divisibleby);
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
            // `{{ 1 / n }}` at n=0 is a float's infinity, which a command would get as `inf`
            // (in a list too: `[inf]`)
            finite_within(value, 3)?;
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
    /// `((` and `[[` where bash reads them as a command, however they are written next to
    /// what comes before: after a reserved word (`while((n))`), a backquote, a tab; text that
    /// only holds the characters (`max((1, 2))`, `a[[0]]`) is not.
    #[test]
    fn arithmetic_commands_are_found_next_to_a_reserved_word_or_a_backquote() {
        for t in [
            "n={{ n }}; while((n)); do break; done",
            "if((x)); then :; fi",
            "for((i=0;i<{{ n }};i++)); do :; done",
            "until((n)); do :; done",
            "echo `((x))`",
            "echo `[[ {{ n }} -eq 1 ]]`",
            "[[\t{{ n }} -eq 1 ]]",
            "x=1;((x))",
            "{((x)); }",
            "while ((n)); do :; done",
            "[[ -n {{ n }} ]]",
        ] {
            assert!(super::hard_construct(t).is_some(), "{t}");
        }
        for t in [
            "python -c 'print(max((1, 2)))' {{ n }}",
            "echo max((1,2)) {{ n }}",
            "echo a[[0]] {{ n }}",
            "echo done(( {{ n }}",
            "echo {{ n }}",
        ] {
            assert_eq!(super::hard_construct(t), None, "{t}");
        }
    }

    /// A shell named by a glob (`/bin/ba?h -c`) is a shell; a shell's script given by name
    /// with an output redirection or standard input from a file (`2>/dev/null`,
    /// `< input.txt`, `</dev/null`) reads no text made here, where a here-string, a process
    /// substitution or `/dev/stdin` does (helper 48).
    #[test]
    fn a_glob_named_shell_is_a_shell_and_redirections_of_a_named_script_are_not_text() {
        for t in [
            "/bin/ba?h -c \"./argv.sh {{ v }}\"",
            "/bin/b*sh -c \"echo {{ v }}\"",
            "bash <<< \"echo {{ v }}\"",
            "bash /dev/stdin <<< \"echo {{ v }}\"",
            "bash <(echo {{ v }})",
            "bash 2>/dev/null<<<\"echo {{ v }}\"",
            "bash 2>&1 <<< \"echo {{ v }}\"",
        ] {
            assert!(super::hard_construct(t).is_some(), "{t}");
        }
        for t in [
            "bash run.sh {{ v }} 2>/dev/null",
            "bash run.sh < input.txt {{ v }}",
            "time bash bench.sh {{ v }} </dev/null",
            "bash run.sh {{ v }} &>/dev/null",
            "bash run.sh {{ v }} 2>&1 | tee log",
            "[ -n {{ v }} ] && echo yes",
        ] {
            assert_eq!(super::hard_construct(t), None, "{t}");
        }
    }

    /// Every name "did you mean" offers is one the environment knows.
    #[test]
    fn the_named_filters_and_tests_exist() {
        let env = super::env(super::Quote::Plain);
        for f in super::FILTERS {
            let t = format!("{{{{ x | {f} }}}}");
            let r = env.render_str(&t, minijinja::context! { x => "1" });
            if let Err(e) = r {
                assert_ne!(e.kind(), minijinja::ErrorKind::UnknownFilter, "{f}: {e}");
            }
        }
        for t in super::TESTS {
            let src = format!("{{{{ x is {t} }}}}");
            let r = env.render_str(&src, minijinja::context! { x => "1" });
            if let Err(e) = r {
                assert_ne!(e.kind(), minijinja::ErrorKind::UnknownTest, "{t}: {e}");
            }
        }
        let e = env.render_str("{{ x | dat }}", minijinja::context! { x => "1" });
        assert_eq!(e.unwrap_err().kind(), minijinja::ErrorKind::UnknownFilter);
    }

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
