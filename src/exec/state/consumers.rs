//! The run's events and their consumers. The runner publishes a [`RunEvent`]; the journal
//! writes every one, the manifest makes a row of each point's outcome (and of the points a stop
//! left unrun), and the terminal shows a line for each. No unit of the run writes a manifest
//! row or a point's line itself.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::exec::state::progress::Progress;
use crate::model::Experiment;
use crate::plan::{Plan, PlanPoint};
use crate::results::event::RunEvent;
use crate::results::journal::Journal;
use crate::results::manifest::{self, Row};

/// What every consumer may look up: the experiment and the plan the events are of.
pub(in crate::exec) struct Cx<'a> {
    pub exp: &'a Experiment,
    pub plan: &'a Plan,
    /// How many points the terminal counts (`[4/10]`: an array task holds one of the run's).
    pub points_of: usize,
}

impl Cx<'_> {
    fn point(&self, run_id: &str) -> Option<&PlanPoint> {
        self.plan.point(run_id)
    }
}

/// A reader of the run's events as they happen.
pub(in crate::exec) trait Consumer {
    fn consume(&mut self, ev: &RunEvent, cx: &Cx<'_>);
}

impl Consumer for Journal {
    fn consume(&mut self, ev: &RunEvent, _: &Cx<'_>) {
        self.emit(ev);
    }
}

/// How often the manifest is rewritten while points run.
const MANIFEST_EVERY: Duration = Duration::from_millis(250);

/// manifest.csv as the run's point events make it: one row per point, rewritten whole.
pub(in crate::exec) struct Manifest {
    rows: Vec<Row>,
    /// run id → its row (one row a point).
    at: HashMap<String, usize>,
    path: PathBuf,
    /// An array task's points are the submitting run's rows: it writes none.
    off: bool,
    written: Option<Instant>,
    /// Rows changed since the last write (a write skipped as too soon).
    dirty: bool,
    /// Why a write failed, said by the run at its end.
    pub errors: Vec<String>,
}

impl Manifest {
    pub fn new(path: PathBuf, rows: Vec<Row>, off: bool) -> Self {
        // one row a point: an earlier manifest's last row of a point stands
        let mut kept: Vec<Row> = Vec::with_capacity(rows.len());
        let mut at: HashMap<String, usize> = HashMap::with_capacity(rows.len());
        for r in rows {
            match at.get(&r.run_id) {
                Some(&i) => kept[i] = r,
                None => {
                    at.insert(r.run_id.clone(), kept.len());
                    kept.push(r);
                }
            }
        }
        Manifest {
            rows: kept,
            at,
            path,
            off,
            written: None,
            dirty: false,
            errors: Vec::new(),
        }
    }

    /// Whether the point has a row that says ok (a resumed run's manifest may lack the row of a
    /// point that succeeded before — cut short by a kill — or hold another for it: `not run` by
    /// a later run whose build failed).
    pub fn is_ok(&self, run_id: &str) -> bool {
        self.at
            .get(run_id)
            .is_some_and(|&i| self.rows[i].status == "ok")
    }

    fn put(&mut self, row: Row) {
        match self.at.get(&row.run_id) {
            Some(&i) => self.rows[i] = row,
            None => {
                self.at.insert(row.run_id.clone(), self.rows.len());
                self.rows.push(row);
            }
        }
    }

    /// The rows of points the report no longer has (a `--force` resume from a file with fewer
    /// repeats or sweep values) taken out: manifest.csv lists the points the reports show. The
    /// run ids taken out, in their order.
    pub fn keep_points(&mut self, points: &std::collections::HashSet<&str>) -> Vec<String> {
        let gone: Vec<String> = self
            .rows
            .iter()
            .filter(|r| !points.contains(r.run_id.as_str()))
            .map(|r| r.run_id.clone())
            .collect();
        if !gone.is_empty() {
            self.rows.retain(|r| points.contains(r.run_id.as_str()));
            self.reindex();
        }
        gone
    }

    /// `at` made again after the rows moved.
    fn reindex(&mut self) {
        self.at = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.run_id.clone(), i))
            .collect();
    }

    /// A point the report found without its numbers (its files are gone): no-data, with why.
    /// Whether its row changed.
    pub fn no_data(&mut self, run_id: &str, why: &str) -> bool {
        match self
            .at
            .get(run_id)
            .map(|&i| &mut self.rows[i])
            .filter(|r| r.status != "no-data")
        {
            Some(r) => {
                r.set_status("no-data", why);
                true
            }
            None => false,
        }
    }

    /// The manifest after a point: written at most every MANIFEST_EVERY while points run (the
    /// journal has every point the moment it ends; the manifest is rewritten whole, so writing
    /// it after each of thousands of short points cost O(n²)). Every exit writes it in full.
    pub fn write_soon(&mut self, cx: &Cx<'_>) {
        if self.written.is_some_and(|t| t.elapsed() < MANIFEST_EVERY) {
            self.dirty = true;
            return;
        }
        self.write(cx);
    }

    /// A write skipped as too soon, made once its time has come: called while a point runs,
    /// so a long point does not leave the manifest behind the journal for its whole length.
    pub fn write_if_due(&mut self, cx: &Cx<'_>) {
        if self.dirty && self.written.is_none_or(|t| t.elapsed() >= MANIFEST_EVERY) {
            self.write(cx);
        }
    }

    pub fn write(&mut self, cx: &Cx<'_>) {
        self.written = Some(Instant::now());
        self.dirty = false;
        if self.off {
            return;
        }
        let order: HashMap<&str, usize> = cx
            .plan
            .points
            .iter()
            .map(|p| (p.run_id.as_str(), p.index))
            .collect();
        self.rows
            .sort_by_key(|r| order.get(r.run_id.as_str()).copied().unwrap_or(usize::MAX));
        self.reindex();
        if let Err(e) = manifest::write(
            &self.path,
            &crate::kinds::manifest_columns(cx.exp),
            &self.rows,
        ) {
            let _ = writeln!(std::io::stderr(), "warning: cannot write manifest.csv: {e}");
            self.errors.push(format!("manifest.csv ({e})"));
        }
    }
}

impl Consumer for Manifest {
    fn consume(&mut self, ev: &RunEvent, cx: &Cx<'_>) {
        match ev {
            RunEvent::Point(e) => {
                let Some(p) = e.run_id.as_deref().and_then(|id| cx.point(id)) else {
                    return;
                };
                let row = crate::exec::state::rows::row(
                    cx.exp,
                    cx.plan,
                    p,
                    e.status.as_deref().unwrap_or("failed"),
                    e.exit_code.flatten().and_then(|c| i32::try_from(c).ok()),
                    e.reason.as_deref().unwrap_or(""),
                    e.log.as_deref().unwrap_or(""),
                );
                self.put(row);
                self.write_soon(cx);
            }
            RunEvent::NotRun(e) => {
                for id in &e.run_ids {
                    if let Some(p) = cx.point(id) {
                        let reason = format!("not run: {}", e.reason);
                        let row = crate::exec::state::rows::row(
                            cx.exp, cx.plan, p, &e.status, None, &reason, "",
                        );
                        self.put(row);
                    }
                }
                self.write(cx);
            }
            _ => {}
        }
    }
}

impl Consumer for Progress {
    fn consume(&mut self, ev: &RunEvent, cx: &Cx<'_>) {
        match ev {
            RunEvent::Point(e) => {
                let id = e.run_id.as_deref().unwrap_or("?");
                let Some(p) = cx.point(id) else { return };
                let status = e.status.as_deref().unwrap_or("failed");
                let reason = e.reason.as_deref().unwrap_or("");
                self.point_ended(status != "skipped");
                self.inc();
                // an adaptive group's repeats it no longer needs: said once, for all of them
                let not_needed = matches!(
                    e.cause,
                    Some(crate::results::reason::Reason::NotNeeded { .. })
                );
                // ok on an exit its run step's `exit-ok=` accepted (the point's exit code)
                let accepted = match crate::results::reason::Reason::accepted_exit(
                    e.status.as_deref(),
                    e.exit_code.flatten(),
                    e.cause.as_ref(),
                ) {
                    Some(c) => format!(" (exit {c} accepted by exit-ok)"),
                    None => String::new(),
                };
                let mut also = "";
                if not_needed {
                    let group = format!("{}\u{1}{}\u{1}{:?}", p.bench, p.lane, p.axes);
                    if !self.decided.insert(group) {
                        return;
                    }
                    also = " (and its later repeats)";
                }
                self.line(&format!(
                    "[{}/{}] {id} {}{}{also}{}{}{accepted}",
                    p.index + 1,
                    cx.points_of,
                    if status == "no-data" {
                        "no data"
                    } else {
                        status
                    },
                    // a reason that only repeats the status says nothing more
                    if reason.is_empty() || reason == status {
                        String::new()
                    } else if reason.starts_with("recovered:") {
                        format!(" ({reason})")
                    } else {
                        format!(": {reason}")
                    },
                    e.headline.as_deref().unwrap_or(""),
                    e.task
                        .as_deref()
                        .map(|t| format!(" ({t})"))
                        .unwrap_or_default(),
                ));
            }
            RunEvent::Adaptive(e) => self.line(&format!("note: {}", e.note)),
            _ => {}
        }
    }
}
