//! journal.jsonl: one JSON object per line, appended and flushed after every event.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use serde_json::{json, Value};

pub struct Journal {
    file: File,
}

impl Journal {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Journal { file })
    }

    /// Append one event. Each event is one unbuffered write, so it is in the file (the page cache)
    /// as soon as this returns, and survives expr being killed.
    pub fn write(&mut self, event: &str, mut fields: Value) {
        if let Some(o) = fields.as_object_mut() {
            o.insert("event".into(), json!(event));
            o.insert("at".into(), json!(chrono::Local::now().to_rfc3339()));
        }
        let _ = self.file.write_all(format!("{fields}\n").as_bytes());
        let _ = self.file.flush();
    }
}

impl Journal {
    /// Append an event as it is (one merged from an array task's fragment).
    pub fn append(&mut self, event: &Value) {
        let _ = self.file.write_all(format!("{event}\n").as_bytes());
        let _ = self.file.flush();
    }
}

/// Every event of a journal, skipping lines that do not parse (a torn last line).
/// A journal larger than this is read up to it (a result directory's journal is a few MiB).
pub const MAX_BYTES: u64 = 256 << 20;

pub fn read(path: &Path) -> Vec<Value> {
    read_numbered(path).into_iter().map(|(_, e)| e).collect()
}

/// Every event of a journal with its line number (from 1), skipping lines that do not parse.
pub fn read_numbered(path: &Path) -> Vec<(usize, Value)> {
    // a regular file only: a FIFO would block, a device never ends
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Vec::new();
    }
    let Ok(f) = File::open(path) else {
        return Vec::new();
    };
    use std::io::Read;
    BufReader::new(f.take(MAX_BYTES))
        .lines()
        .map_while(Result::ok)
        .enumerate()
        .filter_map(|(i, l)| Some((i + 1, serde_json::from_str(&l).ok()?)))
        .collect()
}
