//! The flag cache preflight uses: a program's flags as an earlier preflight read them from its
//! `--help`, by code version. It lives in the history database, and is all of the history
//! that a run's preflight reads.

use std::path::Path;

use rusqlite::{params, OptionalExtension};

use super::{open, open_ro};

/// A program's flags as an earlier preflight read them from its `--help`, for the same code
/// (the key holds host, checkout, program and code fingerprint).
pub fn cached_flags(db: &Path, key: &str) -> Option<Vec<String>> {
    if !db.is_file() {
        return None;
    }
    let c = open_ro(db).ok()?;
    let text: String = c
        .query_row(
            "SELECT flags FROM introspection WHERE key = ?1",
            params![key],
            |r| r.get(0),
        )
        .optional()
        .ok()??;
    serde_json::from_str(&text).ok()
}

/// Remember a program's flags for its code version.
pub fn store_flags(db: &Path, key: &str, flags: &[String]) -> Result<(), String> {
    let c = open(db)?;
    c.execute(
        "INSERT OR REPLACE INTO introspection (key, flags, at) VALUES (?1, ?2, ?3)",
        params![
            key,
            serde_json::to_string(flags).unwrap_or_default(),
            chrono::Local::now().to_rfc3339()
        ],
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}
