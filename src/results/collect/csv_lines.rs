//! A CSV artifact read as a stream, each record named by the line it starts on. Counting records
//! is not counting lines: the csv crate skips blank lines, a quoted cell may hold a newline, and
//! the crate's own line number is one low after a `\r\n`. A reason names the line a reader opens
//! (sed's and an editor's: a lone `\r` ends a line only in a file of `\r` line ends).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;

/// The most line ends a record may span (a quoted cell of a million lines is no benchmark's):
/// what the reader remembers between two records stays bounded.
const MAX_ENDS: usize = 1 << 20;

/// A CSV artifact (a regular file, no line longer than [`super::MAX_LINE`]) as a csv reader,
/// and the line of each record it reads. Memory does not grow with the file.
pub fn reader(path: &Path) -> Result<(csv::Reader<Counted<std::fs::File>>, LineOf), String> {
    let (r, lines) = counted(super::open_log(path)?);
    Ok((csv::Reader::from_reader(r), lines))
}

/// `inner` with its line ends counted, and the [`LineOf`] that asks about them.
pub fn counted<R: Read>(inner: R) -> (Counted<R>, LineOf) {
    let ends = Rc::new(RefCell::new(Ends::default()));
    (
        Counted {
            inner,
            ends: ends.clone(),
        },
        LineOf { ends },
    )
}

/// What the reader has passed: the line ends no question has passed yet, and a count of those
/// before them.
#[derive(Default)]
struct Ends {
    /// (position, byte) of each `\r` and `\n` after the last record asked about.
    queue: VecDeque<(u64, u8)>,
    /// Line ends before the queue: `\n`s, and lone `\r`s.
    lf: u64,
    cr: u64,
    /// A `\n` was read: the file's lines end with it (else with `\r`).
    any_lf: bool,
    /// Bytes read, and the length of the line being read.
    pos: u64,
    run: usize,
    /// The last line end passed: its position, and whether it was a lone `\r`.
    last: Option<(u64, bool)>,
    /// Where the reading stands in the CSV's quoting (a quoted field opened at the start of a
    /// field, its `""` escapes), and the line the open one started on.
    quote: Quote,
    newlines: u64,
    opened_on: u64,
}

/// The quoting state of the byte stream, as RFC 4180 reads it.
#[derive(Default, Clone, Copy, PartialEq)]
enum Quote {
    #[default]
    FieldStart,
    Unquoted,
    Quoted,
    /// A `"` inside a quoted field: its end, or the first of `""`.
    ClosingOrDoubled,
}

impl Ends {
    /// Take the first queued line end into the counts.
    fn pass(&mut self) {
        let Some((p, c)) = self.queue.pop_front() else {
            return;
        };
        let lone = c == b'\r' && self.queue.front() != Some(&(p + 1, b'\n'));
        match c {
            b'\n' => self.lf += 1,
            // `\r\n` is one line end, counted at its `\n`
            _ if lone => self.cr += 1,
            _ => {}
        }
        self.last = Some((p, lone));
    }
}

/// A reader that remembers where its lines end (for [`LineOf`]) and refuses a line longer than
/// [`super::MAX_LINE`].
pub struct Counted<R> {
    inner: R,
    ends: Rc<RefCell<Ends>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut e = self.ends.borrow_mut();
        // the end of a file cut inside a quoted field (a writer killed mid-row): refused, not
        // read as a field that runs to the end
        if n == 0 && e.quote == Quote::Quoted {
            return Err(std::io::Error::other(format!(
                "line {}: a quoted field that never ends (the file was cut short?): not read",
                e.opened_on
            )));
        }
        for &b in &buf[..n] {
            let end = matches!(b, b',' | b'\n' | b'\r');
            e.quote = match (e.quote, b) {
                (Quote::FieldStart, b'"') => {
                    e.opened_on = e.newlines + 1;
                    Quote::Quoted
                }
                (Quote::Quoted, b'"') => Quote::ClosingOrDoubled,
                (Quote::Quoted, _) => Quote::Quoted,
                (Quote::ClosingOrDoubled, b'"') => Quote::Quoted,
                (_, _) if end => Quote::FieldStart,
                _ => Quote::Unquoted,
            };
            e.newlines += u64::from(b == b'\n');
            if b == b'\n' || b == b'\r' {
                let at = e.pos;
                e.queue.push_back((at, b));
                e.any_lf |= b == b'\n';
                e.run = 0;
                if e.queue.len() > MAX_ENDS {
                    return Err(std::io::Error::other(format!(
                        "a record spans more than {MAX_ENDS} lines: not read"
                    )));
                }
            } else {
                e.run += 1;
                if e.run > super::MAX_LINE {
                    return Err(std::io::Error::other(format!(
                        "a line longer than {} MiB: not read",
                        super::MAX_LINE >> 20
                    )));
                }
            }
            e.pos += 1;
        }
        Ok(n)
    }
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

/// The line each record of one CSV stream starts on (1-based), asked in the order read.
pub struct LineOf {
    ends: Rc<RefCell<Ends>>,
}

impl LineOf {
    /// The line of the record the csv crate placed at `pos`: the terminators and blank lines the
    /// crate skipped before its first cell are not its line.
    pub fn of(&mut self, pos: &csv::Position) -> u64 {
        let mut e = self.ends.borrow_mut();
        let b = pos.byte();
        while e.queue.front().is_some_and(|&(p, _)| p < b) {
            e.pass();
        }
        // the line ends at the record's start, one after another, are blank lines before it
        let mut k = b;
        while e.queue.front().is_some_and(|&(p, _)| p == k) {
            e.pass();
            k += 1;
        }
        1 + if e.any_lf { e.lf } else { e.cr }
    }

    /// [`LineOf::of`] for a record a collector reads numbers from: an error where the record
    /// begins right after a lone `\r` in a file of `\n` lines. The csv crate ends a record
    /// at a lone `\r`, so `12\r34` would be two rows (12 and 34) on the line an editor and
    /// the regex collector read as one.
    pub fn record(&mut self, name: &str, pos: &csv::Position) -> Result<u64, String> {
        let line = self.of(pos);
        let e = self.ends.borrow();
        match e.last {
            Some((p, true)) if e.any_lf && p + 1 == pos.byte() => Err(format!(
                "{name}:{line}: a carriage return inside the line splits it into two rows (a lone `\\r` ends a CSV row): not read"
            )),
            _ => Ok(line),
        }
    }

    /// A csv error as `name:line: what`, at the line this text counts (the crate's own
    /// message names its own count).
    pub fn error(&mut self, name: &str, e: &csv::Error) -> String {
        match e.kind() {
            csv::ErrorKind::UnequalLengths {
                pos: Some(pos),
                expected_len,
                len,
            } => match self.record(name, pos) {
                // the row is short because a lone `\r` ended it: that is what to say
                Err(split) => split,
                Ok(line) => format!(
                    "{name}:{line}: {len} field{} where the rows before have {expected_len}",
                    if *len == 1 { "" } else { "s" }
                ),
            },
            csv::ErrorKind::Utf8 {
                pos: Some(pos),
                err,
            } => format!(
                "{name}:{}: field {} is not UTF-8",
                self.of(pos),
                err.field() + 1
            ),
            // this reader's own refusals say their line (`line N: …`): as `name:N: …`
            csv::ErrorKind::Io(io) => match io.to_string().split_once(": ") {
                Some((at, rest))
                    if at
                        .strip_prefix("line ")
                        .is_some_and(|n| n.parse::<u64>().is_ok()) =>
                {
                    format!("{name}:{}: {rest}", &at[5..])
                }
                _ => format!("{name}: {e}"),
            },
            _ => format!("{name}: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each record's line, as this module counts it, for one CSV text.
    fn lines(text: &str) -> Vec<u64> {
        let (r, mut at) = counted(text.as_bytes());
        let mut rd = csv::Reader::from_reader(r);
        let mut rec = csv::ByteRecord::new();
        let mut out = Vec::new();
        while rd.read_byte_record(&mut rec).unwrap() {
            out.push(at.of(rec.position().unwrap()));
        }
        out
    }

    /// A file that ends inside a quoted field (a writer killed mid-row) is refused at its
    /// line; `""` escapes, a quote inside an unquoted field and a closed quote at the end are
    /// fields as written.
    #[test]
    fn a_quoted_field_that_never_ends_is_refused() {
        let read = |text: &str| -> Result<Vec<Vec<String>>, String> {
            let (r, _) = counted(text.as_bytes());
            let mut rd = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(r);
            rd.records()
                .map(|r| {
                    r.map(|r| r.iter().map(str::to_string).collect())
                        .map_err(|e| e.to_string())
                })
                .collect()
        };
        let e = read("x,rate\n1,10\n2,\"20").unwrap_err();
        assert!(e.contains("line 3: a quoted field that never ends"), "{e}");
        assert_eq!(
            read("a,b\n\"x\"\"y\",5\"\n\"z\"").unwrap(),
            [vec!["a", "b"], vec!["x\"y", "5\""], vec!["z"]]
        );
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
    fn a_row_a_lone_carriage_return_splits_is_refused_in_a_file_of_newlines() {
        let rows = |text: &str| -> Vec<Result<u64, String>> {
            let (r, mut at) = counted(text.as_bytes());
            let mut rd = csv::Reader::from_reader(r);
            let mut rec = csv::ByteRecord::new();
            let mut out = Vec::new();
            while rd.read_byte_record(&mut rec).unwrap() {
                out.push(at.record("m.csv", rec.position().unwrap()));
            }
            out
        };
        assert_eq!(
            rows("rate\n12\r34\n"),
            [
                Ok(2),
                Err("m.csv:2: a carriage return inside the line splits it into two rows (a lone `\\r` ends a CSV row): not read".into())
            ]
        );
        // line ends of one kind, blank lines, a quoted `\r`, a `\r` before `\r\n`: rows
        assert_eq!(rows("rate\r12\r34"), [Ok(2), Ok(3)]);
        assert_eq!(rows("rate\r\n12\r\n\r\n34\r\n"), [Ok(2), Ok(4)]);
        assert_eq!(
            rows("a,b\n\"x\ry\",2\n1,2\r\r\n3,4\n"),
            [Ok(2), Ok(3), Ok(4)]
        );
    }

    #[test]
    fn a_ragged_row_is_named_at_its_own_line() {
        let text = "a,b\r\n1,2\r\n\r\n3,4,5\r\n";
        let (r, mut at) = counted(text.as_bytes());
        let mut rd = csv::Reader::from_reader(r);
        let e = rd.records().find_map(Result::err).unwrap();
        assert_eq!(
            at.error("r.csv", &e),
            "r.csv:4: 3 fields where the rows before have 2"
        );
    }
}
