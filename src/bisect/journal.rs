//! The bisection's own journal, `bisect.jsonl` in its directory: what it was asked (start),
//! every measurement round (a result directory and the samples read from it) and every
//! verdict, appended and flushed as each happens. `--resume DIR` rebuilds the state from it.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The journal's file name in the bisection directory.
pub const FILE: &str = "bisect.jsonl";

/// What the bisection was asked, fixed at its start.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Start {
    /// The experiment file (absolute).
    pub file: String,
    pub experiment: String,
    pub metric: String,
    pub lane: Option<String>,
    pub only: Vec<String>,
    pub set: Vec<String>,
    /// The benchmarked checkout's top directory and the repo's path inside it.
    pub top: String,
    pub prefix: String,
    /// The commits in order: good first, then the candidates, bad last.
    pub commits: Vec<String>,
    /// Runs per round (the bench's `repeat`, or its `min`).
    pub batch: usize,
    /// The most runs of one commit before it is undecided.
    pub max_per_commit: usize,
    /// The most runs of the whole bisection.
    pub max_runs: Option<usize>,
    /// A fixed-repeat bisection (for comparison): this many runs per commit, nearest mean.
    pub fixed: Option<usize>,
    pub history: String,
    pub started: String,
}

#[cfg(test)]
impl Start {
    /// A bisection of `n` made-up commits (`0…0`, `0…1`, …), 3 runs a round, at most 12 per
    /// commit: the search's tests and the simulated trials start from it.
    pub(super) fn example(n: usize) -> Start {
        Start {
            file: "e.kdl".into(),
            experiment: "e".into(),
            metric: "lat".into(),
            lane: None,
            only: vec![],
            set: vec![],
            top: "/r".into(),
            prefix: String::new(),
            commits: (0..n).map(|i| format!("{i:040}")).collect(),
            batch: 3,
            max_per_commit: 12,
            max_runs: None,
            fixed: None,
            history: "h".into(),
            started: "t".into(),
        }
    }
}

/// One value read from a round's result directory, with where it was read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sample {
    pub value: f64,
    pub source: String,
}

/// One measurement round: a result directory at one commit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Round {
    /// The commit's index in `Start::commits`.
    pub commit: usize,
    /// good, bad or probe.
    pub role: String,
    pub dir: String,
    /// Whether this round built and tested the commit (its first round does).
    pub built: bool,
    /// Whether the commit's build was found in the build cache (built and tested before, on
    /// every host), so this round built nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// ok, build-failed, test-failed or failed.
    pub status: String,
    pub reason: String,
    /// The metric's unit, as its collector names it.
    #[serde(default)]
    pub unit: String,
    pub samples: Vec<Sample>,
}

/// A probed commit's verdict: good, bad or skip, with why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    pub commit: usize,
    pub verdict: String,
    pub reason: String,
}

/// A line of the journal.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    Start(Start),
    Round(Round),
    Verdict(Verdict),
    /// The bisection ended: found, range, no-step, budget or error, and its exit code.
    End {
        outcome: String,
        exit_code: i32,
    },
}

/// Append one event and flush it: a kill after this loses nothing before it.
pub fn append(dir: &Path, e: &Event) -> Result<(), String> {
    let path = dir.join(FILE);
    let line = serde_json::to_string(e).map_err(|e| e.to_string())?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    writeln!(f, "{line}")
        .and_then(|_| f.sync_data())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Every event of a journal. A line that cannot be read is an error naming its line, except a
/// last line cut short by a kill, which is dropped.
pub fn read(dir: &Path) -> Result<Vec<Event>, String> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (`--resume` takes the directory a bisection wrote)",
            path.display()
        )
    })?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(l) {
            Ok(e) => out.push(e),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {}
            Err(e) => return Err(format!("{}:{}: {e}", path.display(), i + 1)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_a_cut_last_line_is_dropped() {
        let d = tempfile::tempdir().unwrap();
        let v = Event::Verdict(Verdict {
            commit: 3,
            verdict: "skip".into(),
            reason: "build failed".into(),
        });
        append(d.path(), &v).unwrap();
        append(
            d.path(),
            &Event::End {
                outcome: "found".into(),
                exit_code: 0,
            },
        )
        .unwrap();
        let p = d.path().join(FILE);
        let mut t = std::fs::read_to_string(&p).unwrap();
        t.push_str("{\"event\":\"rou");
        std::fs::write(&p, &t).unwrap();
        let got = read(d.path()).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], v);
        // a damaged line in the middle is named
        std::fs::write(&p, "{\"event\":\"x\"}\n{}\n").unwrap();
        let e = read(d.path()).unwrap_err();
        assert!(e.contains("bisect.jsonl:1:"), "{e}");
    }
}
