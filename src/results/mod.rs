//! The result directory: its layout, the journal of run events, the manifest and the atomic
//! writes every file of it goes through. exec writes a directory through this module; report,
//! compare, history, ls and stop read one through it.

pub mod atomic;
pub mod collect;
pub mod event;
pub mod journal;
pub mod machine;
pub mod manifest;
pub mod note;
pub mod profile;
pub mod ranks;
pub mod reason;
pub mod telemetry;

/// The run's event log, one JSON event per line.
pub const JOURNAL: &str = "journal.jsonl";
/// One row per point, rewritten as points end.
pub const MANIFEST: &str = "manifest.csv";
/// Each point's output directory is `outputs/<run id>`.
pub const OUTPUTS: &str = "outputs";

/// What reads a result directory once its points have run (the report): the run calls it
/// before it records its end, and knows nothing of what it writes.
pub trait Finish {
    /// The run got past its preflight: its directory holds its journal's header.
    fn started(&mut self, _dir: &std::path::Path) {}
    /// Read (and write from) the directory; what to say and what was found.
    fn finish(&mut self, dir: &std::path::Path) -> Finished;
}

/// What a [`Finish`] found.
#[derive(Debug, Default)]
pub struct Finished {
    /// Lines for the terminal, in order (warnings, unmet expectations, the files written).
    pub lines: Vec<String>,
    /// Points that ran to the end but whose numbers could not be read: (run id, why).
    pub no_data: Vec<(String, String)>,
    /// What decides the exit code (`crate::util::exit_codes::verdict`).
    pub judged: crate::util::exit_codes::Judged,
    /// Why nothing could be read or written: the run cannot say it succeeded.
    pub error: Option<String>,
    /// The run ids of the points the report is of, those it shows and an adaptive group's
    /// skipped ones (None: not known, nothing read).
    pub points: Option<Vec<String>>,
}

/// A run that nothing reads at its end (an array task: the submitting run reports).
pub struct NoFinish;

impl Finish for NoFinish {
    fn finish(&mut self, _dir: &std::path::Path) -> Finished {
        Finished::default()
    }
}
