//! A log read line by line with bounded memory: a line longer than [`PIECE`] bytes comes in
//! pieces, each beginning with the last [`OVERLAP`] bytes of the one before, so that a match
//! shorter than the overlap is seen whole in one piece wherever the cuts fall. A piece says
//! which of its matches are its own ([`LogPiece::owns`]): each match once, and one whose text a cut
//! may have changed (longer than the overlap) is said to be cut, never read.

use std::borrow::Cow;
use std::io::{BufRead, Read};

/// The most new bytes of a line read at once.
pub const PIECE: usize = 1 << 20;
/// How much of a piece the next one of the same line begins with.
pub const OVERLAP: usize = 64 << 10;

/// A log's lines, a long one in overlapping pieces.
pub struct Pieces<R> {
    rd: std::io::BufReader<R>,
    /// The piece read last: the carried bytes, then the new ones.
    raw: Vec<u8>,
    /// An incomplete UTF-8 sequence a piece ended in, kept for the next.
    pending: Vec<u8>,
    /// The line number of the last piece; whether that piece ended its line.
    ln: usize,
    ended: bool,
    /// Whether the last piece's line goes on in the next.
    goes_on: bool,
}

/// One piece of a line: its text (no line end), where its new text begins, and whether the line
/// began before it and goes on after it.
pub struct LogPiece<'a> {
    /// The line's number (from 1).
    pub ln: usize,
    pub text: Cow<'a, str>,
    /// Where in `text` the bytes new to this piece begin (0 in a line's first piece).
    pub new_at: usize,
    /// Where in `text` the next piece's carried text begins (its length where there is none).
    pub carry_at: usize,
    /// The line began in an earlier piece.
    pub continues: bool,
    /// The line goes on in the next piece.
    pub goes_on: bool,
}

/// Whose a match in a piece is.
#[derive(Debug, PartialEq, Eq)]
pub enum Owned {
    /// Read it here.
    Here,
    /// Another piece holds it whole (the one before read it, or the next one will).
    Elsewhere,
    /// Longer than the overlap and at a cut: its text may not be the line's.
    Cut,
}

impl LogPiece<'_> {
    /// Whose the match `start..end` of [`LogPiece::text`] is: a piece owns the matches that end in
    /// its new text, but not one at its end where the line goes on (the next piece has it, and
    /// sees what follows); one that begins at a continuing piece's start, or that runs to the
    /// end from before the next piece's carried text, is cut.
    pub fn owns(&self, start: usize, end: usize) -> Owned {
        let len = self.text.len();
        if self.goes_on && end == len {
            return if start < self.carry_at {
                Owned::Cut
            } else {
                Owned::Elsewhere
            };
        }
        if self.continues && end < self.new_at {
            return Owned::Elsewhere;
        }
        if self.continues && start == 0 {
            return Owned::Cut;
        }
        Owned::Here
    }
}

/// Whether `b` continues a UTF-8 sequence.
fn continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Where a UTF-8 sequence cut at the end of `raw` begins (its length where none is cut).
fn incomplete_tail(raw: &[u8]) -> usize {
    let n = raw.len();
    for back in 1..=n.min(4) {
        let b = raw[n - back];
        if continuation(b) {
            continue;
        }
        let want = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if want > back { n - back } else { n };
    }
    n
}

impl<R: Read> Pieces<R> {
    pub fn new(r: R) -> Self {
        Pieces {
            rd: std::io::BufReader::new(r),
            raw: Vec::new(),
            pending: Vec::new(),
            ln: 0,
            ended: true,
            goes_on: false,
        }
    }

    /// The next piece; None at the end of the log.
    pub fn next_piece(&mut self) -> std::io::Result<Option<LogPiece<'_>>> {
        // the next piece begins with the end of this one where the line goes on
        let went_on = self.goes_on;
        if went_on {
            let from = carry_from(&self.raw);
            self.raw.drain(..from);
        } else {
            self.raw.clear();
        }
        let carried = self.raw.len();
        self.raw.append(&mut self.pending);
        let before = self.raw.len();
        let got = (&mut self.rd)
            .take(PIECE as u64)
            .read_until(b'\n', &mut self.raw)?;
        // the end of the log; after a piece whose line went on, its carried text is a piece
        // still (a match at its end was left to it)
        if got == 0 && before == carried && !went_on {
            return Ok(None);
        }
        let ends = self.raw.ends_with(b"\n");
        // a line cut at PIECE bytes goes on; one at the log's end without a newline does not
        self.goes_on = !ends && got == PIECE;
        if self.goes_on {
            let keep = carried + incomplete_tail(&self.raw[carried..]);
            self.pending = self.raw.split_off(keep);
        }
        let continues = !self.ended;
        if self.ended {
            self.ln += 1;
        }
        self.ended = !self.goes_on;
        let mut end = self.raw.len();
        if ends {
            end -= 1;
            if end > 0 && self.raw[end - 1] == b'\r' {
                end -= 1;
            }
        }
        let raw = &self.raw[..end];
        let text = String::from_utf8_lossy(raw);
        // offsets in the text: the same as in the bytes unless some were not UTF-8
        let at = |i: usize| match &text {
            Cow::Borrowed(_) => i,
            Cow::Owned(_) => String::from_utf8_lossy(&raw[..i]).len(),
        };
        let carry_at = if self.goes_on {
            at(carry_from(raw))
        } else {
            text.len()
        };
        let new_at = at(carried.min(end));
        Ok(Some(LogPiece {
            ln: self.ln,
            new_at,
            carry_at,
            continues,
            goes_on: self.goes_on,
            text,
        }))
    }
}

/// Where the text a piece passes on to the next begins: its last [`OVERLAP`] bytes, from a
/// character's start.
fn carry_from(raw: &[u8]) -> usize {
    let mut from = raw.len().saturating_sub(OVERLAP);
    for _ in 0..3 {
        if from < raw.len() && continuation(raw[from]) {
            from += 1;
        }
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every match of `re` the pieces own, as (line, text); Err at a cut one.
    fn owned(log: &[u8], re: &str) -> Result<Vec<(usize, String)>, usize> {
        let re = regex::Regex::new(re).unwrap();
        let mut p = Pieces::new(log);
        let mut out = Vec::new();
        while let Some(piece) = p.next_piece().unwrap() {
            for m in re.find_iter(&piece.text) {
                match piece.owns(m.start(), m.end()) {
                    Owned::Here => out.push((piece.ln, m.as_str().to_string())),
                    Owned::Elsewhere => {}
                    Owned::Cut => return Err(piece.ln),
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn a_match_across_a_cut_is_read_once_and_whole() {
        let ms = |s: &str| Ok(vec![(1, s.to_string())]);
        // the number runs over the cut, the name before it, the cut just after it
        for pad in [PIECE - 5, PIECE - 2, PIECE - 4, PIECE - 9, PIECE, PIECE + 1] {
            let log = format!("{}ms=123456\n", "x".repeat(pad));
            assert_eq!(owned(log.as_bytes(), r"ms=\d+"), ms("ms=123456"), "{pad}");
        }
        // two on the line around the cut, then one on the next line
        let log = format!("{}ms=9 ms=11\nms=5", "x".repeat(PIECE - 2));
        assert_eq!(
            owned(log.as_bytes(), r"ms=\d+").unwrap(),
            [(1, "ms=9".into()), (1, "ms=11".into()), (2, "ms=5".into())]
        );
        // many pieces, a match in each overlap
        let mut log = String::new();
        for i in 0..4 {
            log.push_str(&"x".repeat(PIECE - 3));
            log.push_str(&format!("v={i};"));
        }
        let got = owned(log.as_bytes(), r"v=\d").unwrap();
        assert_eq!(got.len(), 4, "{got:?}");
    }

    #[test]
    fn no_line_start_or_end_is_made_at_a_cut() {
        let log = format!("{}ms=5\n", "x".repeat(PIECE));
        assert_eq!(owned(log.as_bytes(), r"^ms=\d+"), Ok(vec![]));
        let log = format!("{}ms=5{}\n", "x".repeat(PIECE - 4), "y".repeat(10));
        assert_eq!(owned(log.as_bytes(), r"ms=\d+$"), Ok(vec![]));
        // a line end written as CRLF is no part of the line
        assert_eq!(
            owned(b"ms=5\r\nms=6\r\n", r"ms=\d+$").unwrap(),
            [(1, "ms=5".into()), (2, "ms=6".into())]
        );
    }

    #[test]
    fn a_match_longer_than_the_overlap_at_a_cut_is_cut() {
        let log = format!(
            "{}ms={}\n",
            "x".repeat(PIECE - OVERLAP - 10),
            "1".repeat(OVERLAP + 100)
        );
        assert_eq!(owned(log.as_bytes(), r"ms=\d+"), Err(1));
    }

    #[test]
    fn a_character_cut_by_a_piece_is_kept_whole() {
        let log = format!("{}é=5\n", "x".repeat(PIECE - 1));
        assert_eq!(owned(log.as_bytes(), r"é=\d"), Ok(vec![(1, "é=5".into())]));
        // bytes that are no UTF-8 do not move the offsets
        let mut log = vec![0xFFu8; 10];
        log.extend_from_slice("x".repeat(PIECE).as_bytes());
        log.extend_from_slice(b"ms=7\n");
        assert_eq!(owned(&log, r"ms=\d"), Ok(vec![(1, "ms=7".into())]));
    }
}
