//! Collectors: turn a point's artifacts into numbers, naming the file and line of anything they
//! cannot read. A collector that finds nothing says so; it never invents a zero.

pub mod steps;

use std::path::{Path, PathBuf};

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
