//! The result directory: its layout, the journal of run events, the manifest and the atomic
//! writes every file of it goes through. exec writes a directory through this module; report,
//! compare, history, ls and stop read one through it.

pub mod atomic;
pub mod journal;
pub mod manifest;

/// The run's event log, one JSON event per line.
pub const JOURNAL: &str = "journal.jsonl";
/// One row per point, rewritten as points end.
pub const MANIFEST: &str = "manifest.csv";
/// Each point's output directory is `outputs/<run id>`.
pub const OUTPUTS: &str = "outputs";
