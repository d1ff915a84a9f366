//! Text made safe where it is shown: one Markdown table cell or line (`md_code`, `md_text`) and
//! HTML or SVG (`html_text`). A leaf: the reference pages, the reports and the history use it.

/// A character that shows as nothing or moves the text around it: the soft hyphen, the
/// zero-width and direction marks, the line and paragraph separators, the bidi embeddings,
/// overrides and isolates, the word joiner and invisible operators, the byte-order mark. The one
/// list both the excerpts (`model::source::printable`) and the name rule (`unsafe-name`) go by.
pub fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{61c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// Text that stays on one terminal line and cannot drive the terminal: control characters,
/// line separators and the characters that show as nothing or turn the text around
/// ([`invisible`]: a `\u{202e}` reversed the rest of a diagnostic's line) as escapes (`\n`,
/// `\r`, `\t`, `\u{1b}`, `\u{202e}`), the rest as written. A diagnostic's message, help and
/// labels are shown through it.
pub fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() || invisible(c)) {
        return s.into();
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if c.is_control() || invisible(c) => o.push_str(&c.escape_unicode().to_string()),
            c => o.push(c),
        }
    }
    o.into()
}

/// Text of many lines that cannot drive the terminal it is shown on: control characters but
/// newline and tab, and the characters that show as nothing or turn the text around, as
/// [`one_line`] writes them.
pub fn controls_escaped(s: &str) -> std::borrow::Cow<'_, str> {
    if !s
        .chars()
        .any(|c| (c.is_control() && !matches!(c, '\n' | '\t')) || invisible(c))
    {
        return s.into();
    }
    let lines: Vec<String> = s
        .split('\n')
        .map(|l| {
            l.split('\t')
                .map(|p| one_line(p).into_owned())
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect();
    lines.join("\n").into()
}

/// Names in backticks, joined by `, ` (``"`a`, `b`"``): how a diagnostic lists what there is.
pub fn ticked<T: std::fmt::Display>(names: impl IntoIterator<Item = T>) -> String {
    let mut o = String::new();
    for (i, n) in names.into_iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        o.push('`');
        o.push_str(&n.to_string());
        o.push('`');
    }
    o
}

/// Text that stays one table cell on one line: `|` escaped, control characters (a newline in a
/// lane name) and line separators written as escapes.
pub fn md_code(s: &str) -> String {
    // ([`one_line`]'s escapes hold no `|`)
    one_line(s).replace('|', "\\|")
}

/// Text as one Markdown code span, shown exactly: fenced by one backtick more than the longest
/// run of backticks in it (a directory named ``a`b`` keeps its span), padded where it starts or
/// ends with one, on one line ([`md_code`]'s escapes; `|` escaped only in a table cell, where
/// GitHub splits the row before it reads the span).
pub fn md_span(s: &str, in_table: bool) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let body: String = if in_table {
        md_code(s)
    } else {
        s.split('|').map(md_code).collect::<Vec<_>>().join("|")
    };
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// A Markdown table's head: its header cells and the `|---|` line, each line ending in a newline.
pub fn md_head(cols: &[&str]) -> String {
    format!("| {} |\n|{}\n", cols.join(" | "), "---|".repeat(cols.len()))
}

/// One Markdown table row, ending in a newline, of cells already made safe for a table cell
/// ([`md_text`], [`md_code`], [`md_span`]).
pub fn md_row<S: AsRef<str>>(cells: &[S]) -> String {
    let cells: Vec<&str> = cells.iter().map(AsRef::as_ref).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// Text as Markdown shows it, as written: [`md_code`]'s line safety, a `<` that would open a
/// tag as `&lt;`, link and image syntax broken (`![x](http://h/t.png)` shows as text, never as
/// a remote image: a `]` that would close a link's text, before `(`, `[` or `:`, is escaped),
/// and emphasis and strikethrough marks escaped (`*star*`, `__init__`, `~a~` show as written; an
/// `_` inside a word, as in `b_r0`, emphasises nothing and stays bare). A backtick code span is
/// the text's own and is kept whole: inside it Markdown escapes nothing, so nothing is added
/// but `\|` (a table splits on `|` first; GitHub reads `\|` there as `|`) and the control
/// escapes.
pub fn md_text(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut o = String::with_capacity(s.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1);
        if c == '`' {
            // a run of n backticks opens a span closed by the next run of exactly n
            let n = chars[i..].iter().take_while(|&&x| x == '`').count();
            if let Some(end) = span_end(&chars, i + n, n) {
                let fence: String = chars[i..i + n].iter().collect();
                let body: String = chars[i + n..end].iter().collect();
                o.push_str(&fence);
                o.push_str(&md_code(&body));
                o.push_str(&fence);
                i = end + n;
                continue;
            }
            // no closing run: the backticks are text
            for _ in 0..n {
                o.push_str("\\`");
            }
            i += n;
            continue;
        }
        let word = |k: Option<&char>| k.is_some_and(|x| x.is_alphanumeric());
        match c {
            ']' if matches!(next, Some('(' | '[' | ':')) => o.push_str("\\]"),
            // a backslash before punctuation would escape it (`s="q\"r"` showed `s="q"r"`),
            // and `&amp;` would show `&`: each stays as written
            '\\' if next.is_some_and(|n| n.is_ascii_punctuation()) => o.push_str("\\\\"),
            '&' if entity_at(&chars[i + 1..]) => o.push_str("&amp;"),
            '<' if next
                .is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')) =>
            {
                o.push_str("&lt;")
            }
            '*' | '~' => {
                o.push('\\');
                o.push(c);
            }
            // within a word an `_` emphasises nothing (`b_r0`, `run_id`)
            '_' if !(word(i.checked_sub(1).and_then(|k| chars.get(k))) && word(next)) => {
                o.push_str("\\_")
            }
            c => o.push_str(&md_code(c.encode_utf8(&mut [0; 4]))),
        }
        i += 1;
    }
    o
}

/// Where the code span whose content starts at `from` ends: the index of the next run of
/// exactly `n` backticks.
fn span_end(chars: &[char], from: usize, n: usize) -> Option<usize> {
    let mut k = from;
    while k < chars.len() {
        if chars[k] == '`' {
            let run = chars[k..].iter().take_while(|&&x| x == '`').count();
            if run == n {
                return Some(k);
            }
            k += run;
        } else {
            k += 1;
        }
    }
    None
}

/// Whether the text after a `&` makes it an HTML entity Markdown would show as its character
/// (`amp;`, `#38;`, `#x26;`), not text such as `>&2`.
fn entity_at(rest: &[char]) -> bool {
    let end = rest.iter().take(33).position(|&c| c == ';');
    let Some(end) = end.filter(|&e| e > 0) else {
        return false;
    };
    let name = &rest[..end];
    match name {
        ['#', 'x' | 'X', hex @ ..] => !hex.is_empty() && hex.iter().all(|c| c.is_ascii_hexdigit()),
        ['#', dec @ ..] => !dec.is_empty() && dec.iter().all(|c| c.is_ascii_digit()),
        [first, ..] => {
            first.is_ascii_alphabetic() && name.iter().all(|c| c.is_ascii_alphanumeric())
        }
        [] => false,
    }
}

/// Text safe in HTML and SVG, in an element or a quoted attribute: `&`, `<`, `>`, `"` and `'`
/// as entities (a lane named `<script>` is text).
pub fn html_text(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // NUL and other C0 controls are not allowed in HTML text, nor the two
            // noncharacters XML 1.0 leaves out of its characters (JUnit XML shares this)
            c if c.is_control() && c != '\n' && c != '\t' => o.push('\u{FFFD}'),
            '\u{FFFE}' | '\u{FFFF}' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_span_holds_any_text_exactly_on_one_line() {
        assert_eq!(md_span("results/a", false), "`results/a`");
        // a backtick inside: a longer fence; one at an end: padded
        assert_eq!(md_span("D`x<b>y", false), "``D`x<b>y``");
        assert_eq!(md_span("`a``", false), "``` `a`` ```");
        // `|` escaped only where a table would split on it
        assert_eq!(md_span("a|b", false), "`a|b`");
        assert_eq!(md_span("a|b", true), "`a\\|b`");
        assert_eq!(md_span("a\nb", false), "`a\\nb`");
        // a table cell's own text: a tag and an image shown as text
        assert_eq!(
            md_text("a|b<img src=x>![t](http://h/x.png)"),
            "a\\|b&lt;img src=x>![t\\](http://h/x.png)"
        );
        // a backslash before punctuation and an entity show as written
        assert_eq!(
            md_text(r#"s="q\"r",p\q,&amp;,a & b,&#38;,echo x >&2,&x"#),
            r#"s="q\\"r",p\q,&amp;amp;,a & b,&amp;#38;,echo x >&2,&x"#
        );
    }

    /// Names with emphasis marks show as written; code spans are kept whole, with nothing
    /// escaped inside them but `|` (an entity or a backslash there shows literally).
    #[test]
    fn names_are_ticked_and_joined() {
        assert_eq!(ticked(["a", "b c"]), "`a`, `b c`");
        assert_eq!(ticked([7]), "`7`");
        assert_eq!(ticked(Vec::<String>::new()), "");
    }

    #[test]
    fn emphasis_is_escaped_and_code_spans_are_kept_whole() {
        assert_eq!(md_text("*star*"), "\\*star\\*");
        assert_eq!(md_text("__init__"), "\\_\\_init\\_\\_");
        assert_eq!(md_text("~a~ ~~b~~"), "\\~a\\~ \\~\\~b\\~\\~");
        assert_eq!(md_text("b_r0 run_id"), "b_r0 run_id");
        assert_eq!(md_text("_x a_ b"), "\\_x a\\_ b");
        assert_eq!(
            md_text("see `a<b|c*d_` and <b>"),
            "see `a<b\\|c*d_` and &lt;b>"
        );
        assert_eq!(md_text("``a`b`` x"), "``a`b`` x");
        // an unclosed backtick is text
        assert_eq!(md_text("it's `open"), "it's \\`open");
    }

    #[test]
    fn one_line_escapes_what_would_break_or_drive_the_line() {
        assert_eq!(super::one_line("n=1\n2\tx"), "n=1\\n2\\tx");
        assert_eq!(super::one_line("a\u{1b}[31mb\r"), "a\\u{1b}[31mb\\r");
        assert_eq!(super::one_line("é `x`"), "é `x`");
    }

    #[test]
    fn a_table_is_its_head_and_rows() {
        assert_eq!(md_head(&["a", "b c"]), "| a | b c |\n|---|---|\n");
        assert_eq!(md_row(&["1", ""]), "| 1 |  |\n");
        assert_eq!(md_row(&[String::from("x")]), "| x |\n");
    }
}
