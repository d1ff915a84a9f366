//! The shell's own spawn time, measured before the points of a timed bench so that it can be
//! subtracted from each run's wall time, as hyperfine does: a step that goes through
//! `bash -c COMMAND` (in its directory) pays for starting bash; `bash -c true` costs exactly that.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::json;

use super::host;
use super::runner::Runner;
use crate::plan::Phase;
use crate::report::stats;

/// Runs per (host, directory): the mean's standard error is σ/√15, about 15 µs here, well
/// under the run-to-run noise of what it is subtracted from; each run costs ~2 ms.
const RUNS_LOCAL: usize = 15;
/// Over ssh each run is a round trip: fewer.
const RUNS_REMOTE: usize = 10;
/// The longest one calibration run may take before it is stopped.
const CALIBRATION_RUN_LIMIT: Duration = Duration::from_secs(10);

/// The measured spawn time of one (host, directory).
#[derive(Debug, Clone, Copy)]
pub struct Overhead {
    pub mean_ms: f64,
    pub sd_ms: f64,
    pub runs: usize,
}

impl Runner<'_> {
    /// Measure the shell spawn time on every (host, directory) where a timed bench's run steps
    /// go through the shell, and record it in the journal.
    pub(super) fn calibrate_shells(&mut self) {
        let mut wanted: BTreeSet<(String, String)> = BTreeSet::new();
        for p in &self.plan.points {
            let Some(b) = self.exp.benches.iter().find(|b| b.name == p.bench) else {
                continue;
            };
            if !crate::kinds::of(b.kind).timed(b) {
                continue;
            }
            for s in p
                .steps
                .iter()
                .filter(|s| s.phase == Phase::Launch && !s.direct)
            {
                wanted.insert((s.host.clone(), s.cwd.clone()));
            }
        }
        // a resumed run keeps the spawn time its first points were corrected with, so that
        // all its points share one
        let earlier: Vec<serde_json::Value> = if self.opts.resume {
            super::journal::read(&self.dir.join("journal.jsonl"))
                .into_iter()
                .filter(|e| e["event"] == "calibration" && e["mean_ms"].is_f64())
                .collect()
        } else {
            Vec::new()
        };
        for (h, cwd) in wanted {
            if self.interrupted().is_some() {
                return;
            }
            if let Some(e) = earlier
                .iter()
                .rev()
                .find(|e| e["host"] == h.as_str() && e["cwd"] == cwd.as_str())
            {
                let o = Overhead {
                    mean_ms: e["mean_ms"].as_f64().unwrap_or(0.0),
                    sd_ms: e["sd_ms"].as_f64().unwrap_or(0.0),
                    runs: e["runs"].as_u64().unwrap_or(0) as usize,
                };
                let mut again = e.clone();
                if let Some(m) = again.as_object_mut() {
                    m.remove("event");
                    let first = if e["measured_at"].is_string() {
                        e["measured_at"].clone()
                    } else {
                        e["at"].clone()
                    };
                    m.insert("measured_at".into(), first);
                    m.remove("at");
                }
                self.journal.write("calibration", again);
                self.progress.line(&format!(
                    "shell spawn time on {h}: {:.2} ± {:.2} ms, as measured by the run being resumed",
                    o.mean_ms, o.sd_ms
                ));
                self.shell_overhead.insert((h, cwd), o);
                continue;
            }
            let host = self.host(&h);
            let runs = if host.is_local() {
                RUNS_LOCAL
            } else {
                RUNS_REMOTE
            };
            self.progress.status(&format!(
                "measuring the shell's spawn time on {h} ({runs} runs)"
            ));
            let log = self.dir.join("logs").join(match &self.opts.task_journal {
                // array tasks run at once: each its own log
                Some(_) => format!(
                    "calibrate-shell-{h}-{}.log",
                    self.plan
                        .points
                        .first()
                        .map(|p| p.run_id.as_str())
                        .unwrap_or("")
                ),
                None => format!("calibrate-shell-{h}.log"),
            });
            let mut samples = Vec::with_capacity(runs);
            for _ in 0..runs {
                if self.interrupted().is_some() {
                    return;
                }
                let Ok(mut p) = host::spawn(&self.ssh, host, "calibrate", &cwd, "true", &log, None)
                else {
                    break;
                };
                // `bash -c true` is quick; one that is not (a BASH_ENV that hangs, a stuck srun)
                // is stopped, and so is one a signal interrupts
                let end = Instant::now() + CALIBRATION_RUN_LIMIT;
                let exit = loop {
                    let slice = (Instant::now() + Duration::from_millis(50)).min(end);
                    if let Some(e) = p.wait_exit(slice) {
                        break Some(e);
                    }
                    if Instant::now() >= end || self.interrupted().is_some() {
                        break None;
                    }
                };
                match exit {
                    Some(e) if e.code == 0 => {
                        samples.push(e.at.saturating_duration_since(p.started).as_secs_f64() * 1e3)
                    }
                    Some(_) => break,
                    None => {
                        if !host::stop(&self.ssh, host, &mut p, self.grace()) {
                            self.survivors.push(format!("calibration on {h}"));
                        }
                        break;
                    }
                }
            }
            if samples.len() < runs {
                self.progress.line(&format!(
                    "warning: the shell's spawn time on `{h}` could not be measured ({} of {runs} runs); nothing is subtracted there",
                    samples.len()
                ));
                continue;
            }
            let o = Overhead {
                mean_ms: stats::mean(&samples).unwrap_or(0.0),
                sd_ms: stats::sd(&samples).unwrap_or(0.0),
                runs,
            };
            self.journal.write(
                "calibration",
                json!({ "host": h, "cwd": cwd, "what": "shell spawn (bash -c true, in the step's directory)", "runs": runs,
                        "mean_ms": o.mean_ms, "sd_ms": o.sd_ms, "samples_ms": samples }),
            );
            self.progress.line(&format!(
                "shell spawn time on {h}: {:.2} ± {:.2} ms ({runs} runs), subtracted from time_ms",
                o.mean_ms, o.sd_ms
            ));
            self.shell_overhead.insert((h, cwd), o);
        }
    }
}
