//! A CSV artifact read whole, each record named by the line it starts on. Counting records is
//! not counting lines: the csv crate skips blank lines, a quoted cell may hold a newline, and the
//! crate's own line number is one low after a `\r\n`. A reason names the line a reader opens
//! (sed's and an editor's: a lone `\r` ends a line only in a file of `\r` line ends).

use std::path::Path;

/// A CSV artifact's bytes: a regular file of at most [`super::MAX_WHOLE`] bytes, no line of it
/// longer than [`super::MAX_LINE`] (a row is a few hundred bytes).
pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    let text = super::read_whole(path)?;
    let longest = text
        .split(|&b| b == b'\n' || b == b'\r')
        .map(<[u8]>::len)
        .max();
    if longest.unwrap_or(0) > super::MAX_LINE {
        return Err(format!(
            "{}: a line longer than {} MiB: not read",
            path.display(),
            super::MAX_LINE >> 20
        ));
    }
    Ok(text)
}

/// The first of `names` that `header` holds twice, as `file: two columns named `x``: which of
/// the two holds the number would be a guess.
pub fn twice<'a, H: AsRef<[u8]>>(
    file: &str,
    header: &[H],
    names: impl IntoIterator<Item = &'a str>,
) -> Result<(), String> {
    for n in names {
        if header.iter().filter(|h| h.as_ref() == n.as_bytes()).count() > 1 {
            return Err(format!(
                "{file}: two columns are named `{n}`: which one holds the number is a guess"
            ));
        }
    }
    Ok(())
}

/// The line each record of one CSV text starts on (1-based), asked in the order read.
pub struct LineOf<'a> {
    text: &'a [u8],
    /// The byte that ends a line: `\n`, or `\r` in a file with no `\n` (old Mac line ends); a
    /// lone `\r` in a file of `\n` lines is no line end to sed, grep or an editor.
    end: u8,
    /// The byte counted up to, and the line it stands on.
    at: usize,
    line: u64,
}

impl<'a> LineOf<'a> {
    pub fn new(text: &'a [u8]) -> LineOf<'a> {
        let end = if !text.contains(&b'\n') && text.contains(&b'\r') {
            b'\r'
        } else {
            b'\n'
        };
        LineOf {
            text,
            end,
            at: 0,
            line: 1,
        }
    }

    /// The line of the record the csv crate placed at `pos`: the terminators and blank lines the
    /// crate skipped before its first cell are not its line.
    pub fn of(&mut self, pos: &csv::Position) -> u64 {
        let t = self.text;
        let mut b = (pos.byte() as usize).min(t.len());
        while b < t.len() && matches!(t[b], b'\r' | b'\n') {
            b += 1;
        }
        if b < self.at {
            (self.at, self.line) = (0, 1);
        }
        self.line += t[self.at..b].iter().filter(|&&c| c == self.end).count() as u64;
        self.at = b;
        self.line
    }

    /// A csv error as `name:line: what`, at the line this text counts (the crate's own
    /// message names its own count).
    pub fn error(&mut self, name: &str, e: &csv::Error) -> String {
        match e.kind() {
            csv::ErrorKind::UnequalLengths {
                pos: Some(pos),
                expected_len,
                len,
            } => format!(
                "{name}:{}: {len} field{} where the rows before have {expected_len}",
                self.of(pos),
                if *len == 1 { "" } else { "s" }
            ),
            csv::ErrorKind::Utf8 {
                pos: Some(pos),
                err,
            } => format!(
                "{name}:{}: field {} is not UTF-8",
                self.of(pos),
                err.field() + 1
            ),
            _ => format!("{name}: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each record's line, as this module counts it, for one CSV text.
    fn lines(text: &str) -> Vec<u64> {
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let mut at = LineOf::new(text.as_bytes());
        let mut rec = csv::ByteRecord::new();
        let mut out = Vec::new();
        while rd.read_byte_record(&mut rec).unwrap() {
            out.push(at.of(rec.position().unwrap()));
        }
        out
    }

    #[test]
    fn a_record_is_named_by_the_line_it_starts_on_whatever_ends_the_lines() {
        assert_eq!(lines("a,b\n1,2\n3,4\n"), [2, 3]);
        // the csv crate says 1 and 2 here
        assert_eq!(lines("a,b\r\n1,2\r\n3,4\r\n"), [2, 3]);
        // a blank line is skipped, not counted away
        assert_eq!(lines("a,b\n1,2\n\n3,4\n"), [2, 4]);
        assert_eq!(lines("a,b\r\n1,2\r\n\r\n\r\n3,4"), [2, 5]);
        // a quoted newline is inside its record: the next record is two lines on
        assert_eq!(lines("a,b\n\"x\ny\",2\n3,4\n"), [2, 4]);
        assert_eq!(lines("a,b\r1,2\r3,4"), [2, 3]);
        // a lone `\r` in a file of `\n` lines ends no line (sed, grep and editors agree)
        assert_eq!(lines("a,b\n\"x\ry\",2\n1,2\r\r\n3,4\n"), [2, 3, 4]);
    }

    #[test]
    fn a_ragged_row_is_named_at_its_own_line() {
        let text = "a,b\r\n1,2\r\n\r\n3,4,5\r\n";
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let mut at = LineOf::new(text.as_bytes());
        let e = rd.records().find_map(Result::err).unwrap();
        assert_eq!(
            at.error("r.csv", &e),
            "r.csv:4: 3 fields where the rows before have 2"
        );
    }
}
