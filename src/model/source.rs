//! A named piece of KDL text, with byte-offset to line/column mapping.

use std::sync::Arc;

use miette::NamedSource;

use crate::util::markup::invisible;

/// One input file (or a synthetic source such as a `--set` override).
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub text: Arc<String>,
    line_starts: Vec<usize>,
    /// What diagnostics show of the text ([`Source::named`]), made once: a file with
    /// thousands of diagnostics made it again for each.
    shown: std::sync::OnceLock<CharColumns>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<Self> {
        let mut text: String = text.into();
        // a byte-order mark is not part of the first line's text: columns count from after it
        if text.starts_with('\u{feff}') {
            text.drain(..3);
        }
        // a file saved with CRLF line ends: the excerpts showed each line's CR as `?` (KDL reads
        // CRLF as one line end, so the parse is the same)
        if text.contains("\r\n") {
            text = text.replace("\r\n", "\n");
        }
        let mut line_starts = vec![0];
        line_starts.extend(newline_ends(&text));
        Arc::new(Source {
            name: name.into(),
            text: Arc::new(text),
            line_starts,
            shown: std::sync::OnceLock::new(),
        })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map(|s| s.chars().count())
            .unwrap_or(offset - start);
        (line + 1, col + 1)
    }

    /// The text of a span, if the span lies on character boundaries.
    pub fn slice(&self, offset: usize, len: usize) -> &str {
        self.text.get(offset..offset + len).unwrap_or("")
    }

    /// The text for rendering diagnostics: secret values masked (same byte length, so every
    /// span still points where it did).
    pub fn named(&self) -> NamedSource<CharColumns> {
        let shown = self.shown.get_or_init(|| {
            let masked = crate::util::secret::mask_in_text(&self.text);
            let shown = printable(&masked);
            let text = if shown == *self.text {
                self.text.clone()
            } else {
                Arc::new(shown)
            };
            CharColumns::new(text)
        });
        NamedSource::new(self.name.clone(), shown.clone()).with_language("kdl")
    }
}

/// Where each line after the first starts: after every newline KDL 2.0 reads — LF, CRLF, a
/// lone CR, NEL, FF, LS, PS.
fn newline_ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    let b = text.as_bytes();
    text.char_indices().filter_map(move |(i, c)| match c {
        '\r' if b.get(i + 1) == Some(&b'\n') => None,
        '\n' | '\r' | '\u{85}' | '\u{c}' | '\u{2028}' | '\u{2029}' => Some(i + c.len_utf8()),
        _ => None,
    })
}

/// The text as a terminal may show it: controls that would move the cursor, hide text or turn
/// its direction (NUL, ESC, the bidi overrides of "Trojan Source", zero-width marks) become
/// `?`, `¿` or `�`, and KDL's newlines a `\n`, all of the same byte length, so every span
/// still points where it did.
pub fn printable(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        // KDL's other newlines end a line on the terminal too (same byte length: a space
        // before the `\n` where the newline took more than one byte)
        match c {
            '\r' if b.get(i + 1) != Some(&b'\n') => out.push('\n'),
            '\u{c}' => out.push('\n'),
            '\u{85}' => out.push_str(" \n"),
            '\u{2028}' | '\u{2029}' => out.push_str("  \n"),
            c => out.push(printable_char(c)),
        }
    }
    out
}

fn printable_char(c: char) -> char {
    match c {
        '\n' | '\t' => c,
        c if (c as u32) < 0x20 || c == '\u{7f}' => '?',
        '\u{80}'..='\u{9f}' => '¿',
        // of the same byte length, as every replacement here (the spans count bytes)
        c if invisible(c) && c.len_utf8() == 2 => '¿',
        c if invisible(c) => '\u{fffd}',
        c => c,
    }
}

/// Source text for miette whose columns count characters, as the JSON form does (miette counts
/// bytes, which is wrong after CJK text), with its line starts as miette counts lines (`\n`,
/// `\r\n`, a lone `\r`): miette reads a span's context by scanning the text from its start,
/// which made a file with thousands of diagnostics quadratic; it is given the text from a few
/// lines above the span instead.
#[derive(Debug, Clone)]
pub struct CharColumns(pub Arc<String>, Arc<Vec<usize>>);

impl CharColumns {
    pub fn new(text: Arc<String>) -> Self {
        let b = text.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\r' if b.get(i + 1) == Some(&b'\n') => {
                    i += 1;
                    starts.push(i + 1);
                }
                b'\r' | b'\n' => starts.push(i + 1),
                _ => {}
            }
            i += 1;
        }
        CharColumns(text, Arc::new(starts))
    }

    /// The 0-based line (as miette counts them) that holds byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        match self.1.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }
}

/// Bytes of a line shown around a span, past which a long line (a sweep of 100k values on one
/// line) is shown only near the span.
pub const LONG_LINE: usize = 400;

impl miette::SourceCode for CharColumns {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        use miette::SpanContents;
        // a long line: only the part near the span, on its own (its line and column true)
        let offset = span.offset().min(self.0.len());
        let line_start = self.0[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line_end = self.0[offset..]
            .find('\n')
            .map(|i| offset + i)
            .unwrap_or(self.0.len());
        if line_end - line_start > LONG_LINE {
            let floor = |mut i: usize| {
                while !self.0.is_char_boundary(i) {
                    i -= 1;
                }
                i
            };
            let from = floor(offset.saturating_sub(LONG_LINE / 4).max(line_start));
            let to = floor(
                (offset + span.len())
                    .min(offset + LONG_LINE / 2)
                    .saturating_add(LONG_LINE / 4)
                    .min(line_end),
            );
            let line = self.line_of(line_start);
            // asked for the span alone (the header's place): the span's column
            let at = if before == 0 && after == 0 {
                offset
            } else {
                from
            };
            let column = self.0[line_start..floor(at)].chars().count();
            return Ok(Box::new(miette::MietteSpanContents::new(
                &self.0.as_bytes()[from..to],
                (from, to - from).into(),
                line,
                column,
                1,
            )));
        }
        // miette's own reading, of the text from a line more than `before` lines above the
        // span's (it keeps no more of what comes before; the extra line keeps a span at a
        // line's start from standing at the window's offset 0, which miette reads otherwise),
        // its places moved back to the whole text's
        let first = self.line_of(offset).saturating_sub(before + 1);
        let base = self.1[first];
        let local: miette::SourceSpan = (offset - base, span.len()).into();
        let window = self.0.get(base..).unwrap_or("");
        let read = window.read_span(&local, before, after)?;
        let inner = miette::MietteSpanContents::new(
            read.data(),
            (read.span().offset() + base, read.span().len()).into(),
            read.line() + first,
            read.column(),
            read.line_count() + first,
        );
        if before != 0 {
            return Ok(Box::new(inner));
        }
        let offset = span.offset().min(self.0.len());
        let line_start = self.0[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = self
            .0
            .get(line_start..offset)
            .map(|s| s.chars().count())
            .unwrap_or(offset - line_start);
        Ok(Box::new(miette::MietteSpanContents::new(
            inner.data(),
            *inner.span(),
            inner.line(),
            column,
            inner.line_count(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_list_of_invisible_characters_for_excerpts_and_names() {
        // soft hyphen, Arabic letter mark, zero-width space/joiner, RTL mark, line separator,
        // RTL override, word joiner, invisible plus, RTL isolate, byte-order mark
        for c in [
            '\u{ad}', '\u{61c}', '\u{200b}', '\u{200d}', '\u{200f}', '\u{2028}', '\u{202e}',
            '\u{2060}', '\u{2064}', '\u{2067}', '\u{feff}',
        ] {
            assert!(invisible(c), "U+{:04X}", c as u32);
            // (U+2028 ends a line in KDL: an excerpt breaks the line there); a replacement of
            // the same byte length, or the spans after it cut a character (the fuzz test found
            // the soft hyphen's 2 bytes made 3)
            let shown = match c {
                '\u{2028}' => "a  \nb",
                '\u{ad}' | '\u{61c}' => "a¿b",
                _ => "a\u{fffd}b",
            };
            let text = format!("a{c}b");
            assert_eq!(printable(&text), shown, "U+{:04X}", c as u32);
            assert_eq!(printable(&text).len(), text.len(), "U+{:04X}", c as u32);
        }
        for c in [
            'a', 'é', '中', ' ', '\u{a0}', '\u{2010}', '\u{2070}', '\u{fffd}',
        ] {
            assert!(!invisible(c), "U+{:04X}", c as u32);
        }
    }

    /// The span contents as numbers and text, to compare two readings.
    fn seen(c: &dyn miette::SpanContents) -> (Vec<u8>, usize, usize, usize, usize, usize) {
        (
            c.data().to_vec(),
            c.span().offset(),
            c.span().len(),
            c.line(),
            c.column(),
            c.line_count(),
        )
    }

    /// Reading from a few lines above the span gives what miette's reading of the whole text
    /// gave (the column counted in characters where no context is asked), for every place of
    /// a text with `\n`, `\r\n`, a lone `\r`, CJK and an empty line.
    #[test]
    fn a_span_read_near_its_line_is_read_as_from_the_whole_text() {
        use miette::SourceCode;
        let text = "a b\r\n无预取 x=1\n\nbench y {\r  z 2\n    w\r\n}\nend";
        let cols = CharColumns::new(Arc::new(text.to_string()));
        for offset in (0..=text.len()).filter(|i| text.is_char_boundary(*i)) {
            for len in [0usize, 1, 4] {
                if offset + len > text.len() || !text.is_char_boundary(offset + len) {
                    continue;
                }
                let span: miette::SourceSpan = (offset, len).into();
                for (before, after) in [(0, 0), (1, 1), (2, 3), (9, 0)] {
                    let whole = text.read_span(&span, before, after).unwrap();
                    let mut want = seen(&*whole);
                    if before == 0 {
                        let start = text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
                        want.4 = text[start..offset].chars().count();
                    }
                    let got = cols.read_span(&span, before, after).unwrap();
                    assert_eq!(
                        seen(&*got),
                        want,
                        "offset {offset} len {len} context {before}/{after}"
                    );
                }
            }
        }
    }

    /// CRLF line ends are read as LF: an excerpt showed each CR as `?` (helper 50); the
    /// lines and columns are the same.
    #[test]
    fn crlf_line_ends_are_read_as_lf() {
        let s = Source::new("f", "a b\r\nc d\r\n");
        assert_eq!(s.text.as_str(), "a b\nc d\n");
        assert_eq!(s.line_col(4), (2, 1));
    }

    #[test]
    fn line_col_counts_characters() {
        let s = Source::new("f", "ab\n无预取 x\n");
        assert_eq!(s.line_col(0), (1, 1));
        assert_eq!(s.line_col(3), (2, 1));
        // "无预取 " is 3 three-byte characters and a space: x is at byte 13, column 5.
        assert_eq!(s.line_col(13), (2, 5));
    }
}
