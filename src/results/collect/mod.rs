//! Collectors: turn a point's artifacts into numbers, naming the file and line of anything they
//! cannot read. A collector that finds nothing says so; it never invents a zero.

pub mod csv_lines;
pub mod pieces;
pub mod steps;
pub mod timing;

use std::path::{Path, PathBuf};

/// The one number rule of every collector: a finite value that an f64 represents — not NaN, not
/// ±inf, not a literal that overflows to inf (`1e400`) or underflows to 0 (`1e-400`) — or why
/// not. Surrounding whitespace (a captured newline) is not part of the number.
pub fn number(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v: f64 = t
        .parse()
        .map_err(|_| format!("{} is not a number", shown(t)))?;
    if !v.is_finite() {
        return Err(format!("{} is not a finite number", shown(t)));
    }
    if crate::util::units::underflows(t, v) {
        return Err(format!(
            "{} is too small for a 64-bit float (it reads as 0)",
            shown(t)
        ));
    }
    Ok(v)
}

/// A cell as a reason quotes it: its first 40 characters and its length when longer (a
/// megabyte cell is not copied into every report).
pub(crate) fn shown(t: &str) -> String {
    const MOST: usize = 40;
    // a secret the step wrote into the cell is masked whole, before the cut (a cut secret is
    // no longer the text that is masked)
    let masked = crate::util::secret::mask_known(t);
    let t = masked.as_str();
    match t.char_indices().nth(MOST) {
        None => format!("{t:?}"),
        Some((cut, _)) => format!("{:?}… ({} bytes)", &t[..cut], t.len()),
    }
}

/// A mean taken one value at a time, in constant memory: the plain sum over n (exact for
/// ordinary values) or, where finite values sum past what a 64-bit float holds (`1.7e308`
/// twice), the mean updated value by value (`stats::mean`'s rule, for a stream).
#[derive(Debug, Default, Clone, Copy)]
pub struct Mean {
    sum: f64,
    running: f64,
    n: u64,
}

impl Mean {
    pub fn push(&mut self, v: f64) {
        self.n += 1;
        self.sum += v;
        // each term divided first: `v − running` of 1.7e308 and −1.7e308 overflows
        let n = self.n as f64;
        self.running += v / n - self.running / n;
    }

    /// How many values were pushed.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The mean; none of no values.
    pub fn value(&self) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let plain = self.sum / self.n as f64;
        Some(if plain.is_finite() {
            plain
        } else {
            self.running
        })
    }
}

/// The longest line a collector reads from a CSV file: a row is a few hundred bytes, and a
/// file of one endless line (no newline, or `/dev/zero` behind a link) would fill memory.
pub const MAX_LINE: usize = 1 << 20;
/// The largest file a collector reads whole (a JSON report, a log searched by a pattern).
pub const MAX_WHOLE: u64 = 256 << 20;

/// Only a regular file is an artifact: a FIFO would block the report until something writes
/// to it, a device such as `/dev/zero` never ends.
fn regular(path: &Path) -> Result<std::fs::Metadata, String> {
    let m = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !m.is_file() {
        let what = if m.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(format!("{}: {what}, not read", path.display()));
    }
    Ok(m)
}

/// Open a log for a collector that reads a long line in pieces: a regular file.
pub fn open_log(path: &Path) -> Result<std::fs::File, String> {
    regular(path)?;
    std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A regular file's bytes, at most [`MAX_WHOLE`] of them.
pub fn read_whole(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let m = regular(path)?;
    let too_big = || {
        format!(
            "{}: larger than {} MiB, not read",
            path.display(),
            MAX_WHOLE >> 20
        )
    };
    if m.len() > MAX_WHOLE {
        return Err(too_big());
    }
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut b = Vec::new();
    f.take(MAX_WHOLE + 1)
        .read_to_end(&mut b)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if b.len() as u64 > MAX_WHOLE {
        return Err(too_big());
    }
    Ok(b)
}

/// A regular file's text, at most [`MAX_WHOLE`] bytes, UTF-8 or an error naming the file.
pub fn read_text(path: &Path) -> Result<String, String> {
    String::from_utf8(read_whole(path)?).map_err(|e| format!("{}: not UTF-8 ({e})", path.display()))
}

/// A file's text for collectors: bytes that are not UTF-8 become U+FFFD, so one bad byte does
/// not hide the lines around it.
pub fn read_lossy(path: &Path) -> Result<String, String> {
    read_whole(path).map(|b| String::from_utf8_lossy(&b).into_owned())
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
    /// The point's logs, where the run that just ran it knows them all (it began with an empty
    /// `logs/` and ran the point once: no other file there names it); else they are looked up.
    pub logs: Option<&'a [PathBuf]>,
}

impl PointDir<'_> {
    /// `outputs/<run_id>/` of the result directory.
    pub fn out(&self) -> std::path::PathBuf {
        self.dir.join("outputs").join(self.run_id)
    }

    /// The point's `logs/<prefix>…` files, sorted: the ones the run knows (no listing of a
    /// `logs/` that grows with the points, once a point), else [`logs_for`]'s.
    pub fn logs_for(&self, prefix: &str) -> Vec<PathBuf> {
        match self.logs {
            Some(known) => {
                let mut v: Vec<PathBuf> = known
                    .iter()
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(prefix))
                            && p.is_file()
                    })
                    .cloned()
                    .collect();
                v.sort();
                v
            }
            None => logs_for(self.dir, self.run_id, prefix),
        }
    }
}

/// The log files of a `logs/` directory by each text their names hold between two dashes (the
/// run ids among them: `run1-b_i1_r0-local.log` is under `b_i1_r0`), each list sorted; and the
/// names indexed so far.
#[derive(Default)]
struct LogIndex {
    dir: PathBuf,
    mtime: Option<std::time::SystemTime>,
    names: std::collections::HashSet<std::ffi::OsString>,
    by: std::collections::HashMap<String, Vec<PathBuf>>,
}

impl LogIndex {
    fn add(&mut self, p: PathBuf) {
        let Some(n) = p.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            return;
        };
        let dashes: Vec<usize> = n.match_indices('-').map(|(i, _)| i).collect();
        let mut seen = std::collections::HashSet::new();
        for (k, &i) in dashes.iter().enumerate() {
            for &j in &dashes[k + 1..] {
                let key = &n[i + 1..j];
                if seen.insert(key) {
                    let v = self.by.entry(key.to_string()).or_default();
                    let at = v.partition_point(|q| q < &p);
                    v.insert(at, p.clone());
                }
            }
        }
    }

    /// Up to date with the directory: read again when it changed (or changed so recently that
    /// its time may not show a change made a moment later); names new since the last reading
    /// are added, a name gone makes it start over.
    fn refresh(&mut self, logs: &Path) {
        let mtime = std::fs::metadata(logs).and_then(|m| m.modified()).ok();
        let settled = mtime.is_some_and(|t| {
            t.elapsed()
                .is_ok_and(|e| e > std::time::Duration::from_millis(20))
        });
        if self.dir == logs && self.mtime == mtime && settled {
            return;
        }
        let paths: Vec<PathBuf> = std::fs::read_dir(logs)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        let now: std::collections::HashSet<std::ffi::OsString> = paths
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_os_string()))
            .collect();
        if self.dir != logs || !self.names.iter().all(|n| now.contains(n)) {
            *self = LogIndex {
                dir: logs.to_path_buf(),
                ..Default::default()
            };
        }
        for p in paths {
            if let Some(n) = p.file_name().map(|n| n.to_os_string()) {
                if self.names.insert(n) {
                    self.add(p);
                }
            }
        }
        self.mtime = mtime;
    }
}

/// `logs/<prefix>…-<run_id>-…` files of a result directory, sorted. The directory is indexed
/// once and kept up to date (a report of n points read every log name for each point).
pub fn logs_for(dir: &Path, run_id: &str, prefix: &str) -> Vec<PathBuf> {
    static INDEX: std::sync::Mutex<Option<LogIndex>> = std::sync::Mutex::new(None);
    let logs = dir.join("logs");
    let mut guard = INDEX.lock().unwrap_or_else(|e| e.into_inner());
    let idx = guard.get_or_insert_with(LogIndex::default);
    idx.refresh(&logs);
    idx.by
        .get(run_id)
        .map(|v| {
            v.iter()
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(prefix))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::logs_for;

    #[test]
    fn logs_of_a_point_by_its_run_id_as_the_directory_changes() {
        let (d, logs) = crate::util::testutil::temp_path("logs");
        std::fs::create_dir(&logs).unwrap();
        let touch = |n: &str| std::fs::write(logs.join(n), "").unwrap();
        touch("run1-b_x1_r0-local.log");
        touch("run2-b_x1_r0-far.log");
        touch("s-b_x1_r0-local.log");
        touch("run1-b_x1_r0_2-local.log");
        let names = |v: Vec<std::path::PathBuf>| -> Vec<String> {
            v.iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names(logs_for(d.path(), "b_x1_r0", "run")),
            ["run1-b_x1_r0-local.log", "run2-b_x1_r0-far.log"]
        );
        assert_eq!(names(logs_for(d.path(), "b_x1_r0", "")).len(), 3);
        // a log written a moment later is found at once
        touch("run1-b_x2_r0-local.log");
        assert_eq!(
            names(logs_for(d.path(), "b_x2_r0", "run")),
            ["run1-b_x2_r0-local.log"]
        );
        // one removed is gone
        std::fs::remove_file(logs.join("run2-b_x1_r0-far.log")).unwrap();
        assert_eq!(
            names(logs_for(d.path(), "b_x1_r0", "run")),
            ["run1-b_x1_r0-local.log"]
        );
        assert!(logs_for(d.path(), "b_x9_r0", "").is_empty());
    }
}
