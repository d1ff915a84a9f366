//! Collectors: turn a point's artifacts into numbers, naming the file and line of anything they
//! cannot read. A collector that finds nothing says so; it never invents a zero.

pub mod steps;
pub mod timing;

use std::path::{Path, PathBuf};

/// The one number rule of every collector: a finite value that an f64 represents — not NaN, not
/// ±inf, not a literal that overflows to inf (`1e400`) or underflows to 0 (`1e-400`) — or why
/// not. Surrounding whitespace (a captured newline) is not part of the number.
pub fn number(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v: f64 = t.parse().map_err(|_| format!("{t:?} is not a number"))?;
    if !v.is_finite() {
        return Err(format!("{t:?} is not a finite number"));
    }
    let mantissa = t.split(['e', 'E']).next().unwrap_or("");
    if v == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return Err(format!(
            "{t:?} is too small for a 64-bit float (it reads as 0)"
        ));
    }
    Ok(v)
}

/// A file's text for collectors: bytes that are not UTF-8 become U+FFFD, so one bad byte does
/// not hide the lines around it.
pub fn read_lossy(path: &Path) -> Result<String, String> {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The last 64 KiB of a log, lossily (a log may be gigabytes, and hold bytes that are not
/// UTF-8); a first line cut by the window is left out. Empty when it cannot be read.
pub fn end_of(path: &Path) -> String {
    const END: u64 = 64 << 10;
    (|| -> std::io::Result<String> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = std::fs::File::open(path)?;
        let len = f.metadata()?.len();
        f.seek(SeekFrom::Start(len.saturating_sub(END)))?;
        let mut b = Vec::new();
        f.take(END).read_to_end(&mut b)?;
        if len > END {
            if let Some(i) = b.iter().position(|c| *c == b'\n') {
                b.drain(..=i);
            }
        }
        Ok(String::from_utf8_lossy(&b).into_owned())
    })()
    .unwrap_or_default()
}

/// Where one point's artifacts are, for its collector.
pub struct PointDir<'a> {
    /// The result directory.
    pub dir: &'a Path,
    pub run_id: &'a str,
    pub lane: &'a str,
    pub warmup: i64,
}

impl PointDir<'_> {
    /// `outputs/<run_id>/` of the result directory.
    pub fn out(&self) -> std::path::PathBuf {
        self.dir.join("outputs").join(self.run_id)
    }
}

/// `logs/<prefix>…-<run_id>-…` files of a result directory, sorted.
pub fn logs_for(dir: &Path, run_id: &str, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("logs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(prefix) && n.contains(&format!("-{run_id}-")))
    });
    v.sort();
    v
}

/// The line of a log that best says why a program ended: the last one naming an error, a
/// signal or an abort, else the last non-empty line.
pub fn failure_line(log: &Path) -> String {
    let text = end_of(log);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("EXPR_"))
        .collect();
    let telling = [
        "error",
        "Error",
        "SIG",
        "abort",
        "Abort",
        "Killed",
        "Traceback",
    ];
    lines
        .iter()
        .rev()
        .find(|l| telling.iter().any(|t| l.contains(t)))
        .or(lines.last())
        .map(|l| format!("{}: \"{l}\"", log.display()))
        .unwrap_or_else(|| format!("{}: (empty)", log.display()))
}

/// The one rule for a program that fails after its output is complete: when the program exits
/// non-zero or by a signal *after* writing output that is complete and self-consistent (RecStore:
/// every rank CSV with every step; dataset_rt: every rank and pass, a rate per repeat, replay
/// verified), the point is measured and `ok`, and its reason says what ended the program and
/// where — `recovered: <exit or signal>, <log line>; <what was checked>`. Incomplete output
/// stays a failure naming what is missing; a bench with `strict #true` keeps such points failed.
pub fn recovered_reason(how: &str, line: &str, evidence: &str) -> String {
    format!("recovered: {how}, {line}; {evidence}")
}
