//! A named piece of KDL text, with byte-offset to line/column mapping.

use std::sync::Arc;

use miette::NamedSource;

/// One input file (or a synthetic source such as a `--set` override).
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub text: Arc<String>,
    line_starts: Vec<usize>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<Self> {
        let mut text: String = text.into();
        // a byte-order mark is not part of the first line's text: columns count from after it
        if text.starts_with('\u{feff}') {
            text.drain(..3);
        }
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Arc::new(Source {
            name: name.into(),
            text: Arc::new(text),
            line_starts,
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
        let masked = crate::util::shell::mask_in_text(&self.text);
        let shown = printable(&masked);
        let text = if shown == *self.text {
            self.text.clone()
        } else {
            Arc::new(shown)
        };
        NamedSource::new(self.name.clone(), CharColumns(text)).with_language("kdl")
    }
}

/// The text as a terminal may show it: controls that would move the cursor, hide text or turn
/// its direction (NUL, ESC, the bidi overrides of "Trojan Source", zero-width marks, line
/// separators) become `?`, `¿` or `�` of the same byte length, so every span still points
/// where it did.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c,
            c if (c as u32) < 0x20 || c == '\u{7f}' => '?',
            '\u{80}'..='\u{9f}' => '¿',
            '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}' => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// Source text for miette whose columns count characters, as the JSON form does (miette counts
/// bytes, which is wrong after CJK text).
#[derive(Debug, Clone)]
pub struct CharColumns(pub Arc<String>);

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
            let line = self.0[..line_start].matches('\n').count();
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
        let inner = self.0.as_str().read_span(span, before, after)?;
        if before != 0 {
            return Ok(inner);
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
    fn line_col_counts_characters() {
        let s = Source::new("f", "ab\n无预取 x\n");
        assert_eq!(s.line_col(0), (1, 1));
        assert_eq!(s.line_col(3), (2, 1));
        // "无预取 " is 3 three-byte characters and a space: x is at byte 13, column 5.
        assert_eq!(s.line_col(13), (2, 5));
    }
}
