//! journal.jsonl: one JSON object per line, appended and flushed after every event.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use serde_json::{json, Value};

use super::event::RunEvent;

pub struct Journal {
    file: File,
    /// The first write that failed (a full disk): the journal is incomplete from there on.
    pub failed: Option<String>,
}

impl Journal {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        // a line cut by a crash or a full disk is ended first: the next event is a line of its own
        end_torn_line(path)?;
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Journal { file, failed: None })
    }

    /// Append one event: its fields, its name (`event`) and when it was written (`at`), one
    /// line. Each event is one unbuffered write, so it is in the file (the page cache) as soon
    /// as this returns, and survives expr being killed.
    pub fn emit(&mut self, event: &RunEvent) {
        let mut v = event.to_value();
        if let Some(o) = v.as_object_mut() {
            o.insert("at".into(), json!(chrono::Local::now().to_rfc3339()));
        }
        let line = format!("{v}\n");
        self.put(line.as_bytes());
    }

    /// One write of a whole line; the first failure is kept (and said by the run at its end).
    fn put(&mut self, line: &[u8]) {
        if let Err(e) = self.file.write_all(line).and_then(|()| self.file.flush()) {
            if self.failed.is_none() {
                self.failed = Some(e.to_string());
            }
        }
    }
}

impl Journal {
    /// Append an event as it is, byte for byte (one merged from an array task's fragment, which
    /// the task wrote with [`Journal::emit`]: it keeps its own `at`).
    pub fn append(&mut self, event: &Value) {
        let line = format!("{event}\n");
        self.put(line.as_bytes());
    }
}

/// A line longer than this is no event expr writes: it is skipped, unread, and said.
pub const MAX_LINE: usize = 16 << 20;

/// Every event of a journal as the JSON object it is, untyped: for an array task's fragment,
/// whose events are merged into the run's journal as they were written. Everything else reads
/// [`events`].
pub fn raw(path: &Path) -> Vec<Value> {
    read_checked(path).0.into_iter().map(|(_, e)| e).collect()
}

/// A point's last recorded outcome: its `point` event's, or the `not-run` event that named it
/// after that.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    pub status: String,
    pub exit_code: Option<i64>,
    pub reason: String,
}

/// Whether a manifest row's status says what the journal's last outcome says: the same, or ok
/// and no-data (a report re-reads an ended point's numbers and may find them, or not: the
/// status it then writes is the report's).
pub fn agrees(journal: &str, manifest: &str) -> bool {
    let read = |s: &str| matches!(s, "ok" | "no-data");
    journal == manifest || (read(journal) && read(manifest))
}

/// Each point's last outcome in a journal's events (`point` and `not-run`, in order).
pub fn outcomes<'e>(
    events: impl IntoIterator<Item = &'e RunEvent>,
) -> std::collections::BTreeMap<String, Outcome> {
    let mut m = std::collections::BTreeMap::new();
    for e in events {
        match e {
            RunEvent::Point(p) => {
                if let Some(id) = &p.run_id {
                    m.insert(
                        id.clone(),
                        Outcome {
                            status: p.status.clone().unwrap_or_default(),
                            exit_code: p.exit_code.flatten(),
                            reason: p.reason.clone().unwrap_or_default(),
                        },
                    );
                }
            }
            RunEvent::NotRun(n) => {
                for id in &n.run_ids {
                    m.insert(
                        id.clone(),
                        Outcome {
                            status: n.status.clone(),
                            exit_code: None,
                            reason: format!("not run: {}", n.reason),
                        },
                    );
                }
            }
            _ => {}
        }
    }
    m
}

/// An untyped event and its line number (from 1).
type Numbered = (usize, Value);

/// An event and its line number (from 1).
pub type Line = (usize, RunEvent);

/// Every event of a journal, typed (an event this expr does not know, or one that does not
/// decode, is [`RunEvent::Other`]), skipping lines that are not a JSON object.
pub fn events(path: &Path) -> Vec<RunEvent> {
    events_checked(path).0.into_iter().map(|(_, e)| e).collect()
}

/// Every event of a journal, typed, with its line number (from 1), and the lines that are not
/// an event (line number, what is wrong): each line as `read_checked` reads it, each JSON
/// object decoded.
pub fn events_checked(path: &Path) -> (Vec<Line>, Vec<(usize, String)>) {
    let read = shared(path);
    (read.0.clone(), read.1.clone())
}

/// What [`events_checked`] gives, shared: a reader that only looks needs no copy.
pub type Read = (Vec<Line>, Vec<(usize, String)>);

/// Every event of a journal with its line number, and the lines that are not events: read once
/// per state of the file (a report reads the journal in several places — the data, the
/// machines, the noisy points — and at 100k points each reading is seconds).
pub fn shared(path: &Path) -> std::sync::Arc<Read> {
    type Key = (std::path::PathBuf, u64, Option<std::time::SystemTime>);
    static LAST: std::sync::Mutex<Option<(Key, std::sync::Arc<Read>)>> =
        std::sync::Mutex::new(None);
    let key = std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| (path.to_path_buf(), m.len(), m.modified().ok()));
    if let Some(k) = &key {
        let last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((lk, read)) = last.as_ref() {
            if lk == k && k.2.is_some() {
                return read.clone();
            }
        }
    }
    let (good, mut bad) = read_checked(path);
    let mut typed: Vec<Line> = Vec::with_capacity(good.len());
    for (n, v) in good {
        let e = RunEvent::from_value(v);
        match unknown_status(&e) {
            Some(why) => bad.push((n, why)),
            None => typed.push((n, e)),
        }
    }
    bad.sort_by_key(|(n, _)| *n);
    let good = typed;
    let read = std::sync::Arc::new((good, bad));
    if let Some(k) = key {
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        *last = Some((k, read.clone()));
    }
    read
}

/// Why a directory's journal gives no header: it cannot be read (said as the system says it:
/// "Permission denied"), or it holds none.
pub fn no_header(dir: &Path) -> String {
    match std::fs::File::open(dir.join("journal.jsonl")) {
        Err(e) => format!("{}: journal.jsonl cannot be read: {e}", dir.display()),
        Ok(_) => format!(
            "{}: no journal header (the run stopped before preflight finished, or this is not a result directory)",
            dir.display()
        ),
    }
}

/// The statuses a point can end in (`skipped`: a resumed run kept its earlier measurement).
pub const POINT_STATUSES: &[&str] = &[
    "ok",
    "no-data",
    "failed",
    "interrupted",
    "missing",
    "skipped",
];

/// Why an outcome event cannot be taken as written: a status expr never writes (an edited
/// or damaged journal: `okay` taken as failed would turn a good point bad in the manifest).
fn unknown_status(e: &RunEvent) -> Option<String> {
    let status = match e {
        RunEvent::Point(p) => p.status.as_deref()?,
        RunEvent::NotRun(n) if !n.status.is_empty() => n.status.as_str(),
        _ => return None,
    };
    (!POINT_STATUSES.contains(&status)).then(|| {
        format!(
            "the status `{}` is none of {}",
            crate::util::markup::one_line(status),
            POINT_STATUSES.join(", ")
        )
    })
}

/// Every event of a journal with its line number (from 1), and the lines that are not an
/// event (line number, what is wrong). Lines are read as bytes: a byte that is not UTF-8 or a
/// torn line costs that line only, never the lines after it. A torn last line (a write cut
/// by a crash or a full disk) is reported like any other.
fn read_checked(path: &Path) -> (Vec<Numbered>, Vec<(usize, String)>) {
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    // a regular file only: a FIFO would block, a device never ends
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return (good, bad);
    }
    let Ok(f) = File::open(path) else {
        return (good, bad);
    };
    let mut rd = BufReader::new(f);
    let mut buf = Vec::new();
    let mut n = 0usize;
    loop {
        buf.clear();
        // a line is read up to MAX_LINE bytes; the rest of a longer one is skipped unread
        let mut long = false;
        let mut ended = false;
        while let Ok(chunk) = rd.fill_buf() {
            if chunk.is_empty() {
                break;
            }
            let (take, nl) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if buf.len() + take <= MAX_LINE {
                buf.extend_from_slice(&chunk[..take]);
            } else {
                long = true;
            }
            rd.consume(take);
            if nl {
                ended = true;
                break;
            }
        }
        if buf.is_empty() && !long && !ended {
            break;
        }
        n += 1;
        if long {
            bad.push((
                n,
                format!("a line longer than {} MiB, not read", MAX_LINE >> 20),
            ));
            continue;
        }
        // expr writes its journal as UTF-8: another byte is damage, said with its line
        let line = match std::str::from_utf8(&buf) {
            Ok(l) => l,
            Err(e) => {
                bad.push((
                    n,
                    format!("a byte that is not UTF-8 at column {}", e.valid_up_to() + 1),
                ));
                continue;
            }
        };
        let text = line.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(v) if v.is_object() => good.push((n, v)),
            Ok(_) => bad.push((n, "not a JSON object".into())),
            Err(e) => bad.push((
                n,
                if buf.last() != Some(&b'\n') {
                    format!("a torn last line ({e})")
                } else {
                    e.to_string()
                },
            )),
        }
    }
    (good, bad)
}

/// Before appending: a journal whose last line was cut (no newline at its end) gets one, so
/// the next event starts on a line of its own.
pub fn end_torn_line(path: &Path) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = OpenOptions::new().read(true).append(true).open(path) else {
        return Ok(false);
    };
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    f.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(false);
    }
    f.write_all(b"\n")?;
    Ok(true)
}
