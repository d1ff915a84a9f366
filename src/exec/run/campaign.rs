//! The campaign: what becomes of each of the plan's points, in order. A resumed run keeps the
//! points that succeeded before with the same command and code and says why the others run
//! again; an adaptive group that has converged needs no more repeats; the points' outcomes give
//! the exit code (and `--fail-fast` or a Ctrl-C ends the loop). Decisions over narrow inputs —
//! the plan, the earlier journal's point events, the code fingerprint — that start no process
//! and write nothing: `Runner::run_points` (one point after another) and `ArrayMode::run`
//! (a Slurm array of the points that run) carry them out.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::exec::run::adaptive::{group_key, Seen};
use crate::exec::state::{last_points, point_hash, Earlier};
use crate::plan::{Plan, PlanPoint};
use crate::results::event::RunEvent;
use crate::util::exit_codes;

/// What becomes of one point before it runs.
#[derive(Debug)]
pub(in crate::exec) enum Next<'c> {
    /// It succeeded before with the same command and code: kept from the earlier run.
    Keep(&'c Earlier),
    /// It runs (a fresh run, or one the earlier run skipped as an adaptive repeat).
    Run,
    /// A resumed run runs it again, and why.
    Again(String),
    /// A resumed run had no event for it.
    New,
}

/// What the loop does after a point's outcome.
#[derive(Debug, PartialEq)]
pub(in crate::exec) enum After {
    Go,
    /// A Ctrl-C stopped the point: nothing after it starts.
    Interrupted,
    /// It failed under `--fail-fast`.
    FailFast,
}

pub(in crate::exec) struct Campaign<'a> {
    plan: &'a Plan,
    /// The hosts' code fingerprints, joined: what `--resume` compares beside a point's command.
    pub fingerprint: String,
    /// run id → its last point event in the earlier journal (on `--resume`).
    previous: HashMap<String, Earlier>,
    /// Each adaptive group's values so far (kept points' included).
    pub seen: Seen,
    /// How many of each group's points have run (or are kept): in a shuffled order a group's
    /// repeat index is not how many of it ran before.
    ran: HashMap<String, usize>,
    /// Points the earlier run started (a step or process of theirs is in its journal).
    started: HashSet<String>,
    /// Points it finished ok whose log, outputs or numbers are gone, and why: run again.
    lost: HashMap<String, String>,
    failed: usize,
}

impl<'a> Campaign<'a> {
    /// The campaign of `plan` on code `fingerprints` (host → fingerprint); `earlier` is the
    /// journal of the run being resumed (empty for a fresh run).
    pub fn new(
        plan: &'a Plan,
        fingerprints: &BTreeMap<String, String>,
        earlier: &[RunEvent],
        lost: HashMap<String, String>,
    ) -> Self {
        let mut fingerprint = fingerprints.values().cloned().collect::<Vec<_>>().join(",");
        // the build is part of what a kept point measured: its commands (cmake-args,
        // build-env, -j) as well as the code they build
        let build: Vec<String> = plan
            .setup
            .iter()
            .filter(|s| s.phase == crate::kind_api::step::Phase::Build)
            .map(|s| format!("{}\u{1}{}", s.host, s.exec_line()))
            .collect();
        if !build.is_empty() {
            fingerprint.push_str(&format!(
                ",build={}",
                crate::util::hash::fnv1a(&build.join("\n"))
            ));
        }
        let previous = last_points(earlier);
        let started = earlier
            .iter()
            .filter_map(|e| match e {
                RunEvent::Process(p) => p.run_id.clone(),
                RunEvent::Step(s) => s.run_id.clone().flatten(),
                _ => None,
            })
            .collect();
        let mut c = Campaign {
            plan,
            fingerprint,
            previous,
            seen: HashMap::new(),
            ran: HashMap::new(),
            started,
            lost,
            failed: 0,
        };
        // a resumed run keeps what its earlier points measured: those it keeps, each once with
        // the value of the event it keeps (not an earlier ok of a command since changed, nor
        // a kept point's copy in a later journal); a point that runs again counts once, with
        // its new value
        for p in &plan.points {
            if let Some(v) = c.kept_event(p).and_then(|e| e.event.value) {
                c.seen.entry(group_key(p)).or_default().push(v);
                *c.ran.entry(group_key(p)).or_default() += 1;
            }
        }
        c
    }

    /// Whether an earlier event is this point's, with the same command and code.
    fn same(&self, p: &PlanPoint, e: &Earlier) -> bool {
        e.hash == point_hash(p) && e.fingerprint == self.fingerprint
    }

    fn kept_event(&self, p: &PlanPoint) -> Option<&Earlier> {
        self.previous
            .get(&p.run_id)
            .filter(|e| e.status == "ok" && self.same(p, e) && !self.lost.contains_key(&p.run_id))
    }

    /// The points a resumed run keeps (a failed build measured none of them).
    pub fn kept(&self) -> HashSet<String> {
        self.plan
            .points
            .iter()
            .filter(|p| self.kept_event(p).is_some())
            .map(|p| p.run_id.clone())
            .collect()
    }

    /// What becomes of `p` before it runs (without `--resume` every point runs).
    pub fn next(&self, p: &PlanPoint, resume: bool) -> Next<'_> {
        if !resume {
            return Next::Run;
        }
        if let Some(e) = self.kept_event(p) {
            return Next::Keep(e);
        }
        match self.previous.get(&p.run_id) {
            // an adaptive repeat its group did not need: judged again by the loop
            Some(e) if e.status == "skipped" => Next::Run,
            Some(e) if e.status != "ok" => Next::Again(format!(
                "it {} last time",
                match e.status.as_str() {
                    "failed" => "failed",
                    "interrupted" => "was interrupted",
                    "no-data" => "had no data",
                    "timeout" => "timed out",
                    other => return Next::Again(format!("it ended `{other}` last time")),
                }
            )),
            Some(e) if e.hash != point_hash(p) => {
                Next::Again("its command or point (lane, settings) changed".into())
            }
            Some(_) if self.lost.contains_key(&p.run_id) => {
                Next::Again(self.lost[&p.run_id].clone())
            }
            Some(_) => Next::Again("the code fingerprint changed".into()),
            // started, and stopped before its outcome (a kill, a crash)
            None if self.started.contains(&p.run_id) => {
                Next::Again("it did not finish last time".into())
            }
            None => Next::New,
        }
    }

    /// What a resumed run does with the plan's points, in one line: how many it keeps, runs
    /// again (and why, counted) and runs for the first time.
    pub fn summary(&self) -> String {
        let (mut kept, mut new, mut judged) = (0usize, 0usize, 0usize);
        let mut again: BTreeMap<String, usize> = BTreeMap::new();
        for p in &self.plan.points {
            match self.next(p, true) {
                Next::Keep(_) => kept += 1,
                Next::Run => judged += 1,
                Next::New => new += 1,
                Next::Again(why) => *again.entry(why).or_default() += 1,
            }
        }
        let mut parts = Vec::new();
        if kept > 0 {
            parts.push(format!(
                "{} kept (succeeded before with the same command and code)",
                crate::util::units::count(kept, "point")
            ));
        }
        let n_again: usize = again.values().sum();
        if n_again > 0 {
            let whys: Vec<String> = again
                .iter()
                .map(|(why, n)| {
                    if *n == 1 && again.len() == 1 {
                        why.clone()
                    } else {
                        format!("{why}: {n}")
                    }
                })
                .collect();
            parts.push(format!(
                "{n_again} {} again ({})",
                if n_again == 1 { "runs" } else { "run" },
                whys.join("; ")
            ));
        }
        if judged > 0 {
            parts.push(format!(
                "{judged} adaptive {} judged again",
                if judged == 1 { "repeat" } else { "repeats" }
            ));
        }
        if new > 0 {
            parts.push(format!("{new} not run before"));
        }
        if kept == self.plan.points.len() {
            parts.push("nothing to run".into());
        }
        format!("resume: {}", parts.join(", "))
    }

    /// A point of the group starts: it counts as run.
    pub fn running(&mut self, p: &PlanPoint) {
        *self.ran.entry(group_key(p)).or_default() += 1;
    }

    /// How many of the point's group have run (or are kept).
    pub fn ran(&self, p: &PlanPoint) -> usize {
        self.ran.get(&group_key(p)).copied().unwrap_or(0)
    }

    /// A point's value, for its adaptive group.
    pub fn measured(&mut self, p: &PlanPoint, value: f64) {
        self.seen.entry(group_key(p)).or_default().push(value);
    }

    /// A point's outcome (its manifest status): whether the loop goes on.
    pub fn after(&mut self, status: &str, fail_fast: bool) -> After {
        match status {
            "interrupted" => After::Interrupted,
            "ok" => After::Go,
            _ => {
                self.failed += 1;
                if fail_fast {
                    After::FailFast
                } else {
                    After::Go
                }
            }
        }
    }

    /// The exit code of the points that ran to the end of the loop.
    pub fn code(&self) -> i32 {
        if self.failed > 0 {
            exit_codes::POINT_FAILED
        } else {
            exit_codes::OK
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::event::Point;

    fn plan() -> Plan {
        let text = "experiment t\nbench b {\n    param d 1\n    run \"sleep {{ d }}\"\n    lane x d=1\n    lane y d=2\n    repeat 2\n}\n";
        let loaded = crate::parse::load::load_str("t.kdl", text, &Default::default());
        let exp = loaded.experiment.expect("decodes");
        crate::plan::plan(
            &exp,
            "t.kdl",
            &Default::default(),
            Some("out"),
            chrono::Local::now(),
        )
        .expect("plans")
    }

    fn point(p: &PlanPoint, status: &str, hash: &str, fp: &str, value: Option<f64>) -> RunEvent {
        RunEvent::Point(Point {
            run_id: Some(p.run_id.clone()),
            status: Some(status.into()),
            command_hash: Some(hash.into()),
            fingerprint: Some(fp.into()),
            value,
            ..Default::default()
        })
    }

    fn fps(fp: &str) -> BTreeMap<String, String> {
        [("local".to_string(), fp.to_string())].into()
    }

    #[test]
    fn a_resumed_run_keeps_what_succeeded_with_the_same_command_and_code() {
        let plan = plan();
        let ids: Vec<&str> = plan.points.iter().map(|p| p.run_id.as_str()).collect();
        // repeats go round the lanes
        assert_eq!(ids, ["x_r0", "y_r0", "x_r1", "y_r1"]);
        let [x0, y0, x1, y1] = [0, 1, 2, 3].map(|i| &plan.points[i]);
        let earlier = vec![
            // x_r0 failed, then succeeded: the last event counts
            point(x0, "failed", &point_hash(x0), "a", None),
            point(x0, "ok", &point_hash(x0), "a", Some(1.5)),
            // x_r1 succeeded with another command
            point(x1, "ok", "0000", "a", Some(9.0)),
            // y_r0 succeeded on other code
            point(y0, "ok", &point_hash(y0), "b", Some(7.0)),
            // y_r1 failed
            point(y1, "failed", &point_hash(y1), "a", None),
        ];
        let c = Campaign::new(&plan, &fps("a"), &earlier, HashMap::new());
        assert_eq!(c.fingerprint, "a");
        assert!(matches!(c.next(x0, true), Next::Keep(e) if e.event.value == Some(1.5)));
        assert!(
            matches!(c.next(x1, true), Next::Again(ref w) if w == "its command or point (lane, settings) changed")
        );
        assert!(
            matches!(c.next(y0, true), Next::Again(ref w) if w == "the code fingerprint changed")
        );
        assert!(matches!(c.next(y1, true), Next::Again(ref w) if w == "it failed last time"));
        // without --resume every point runs
        assert!(matches!(c.next(x0, false), Next::Run));
        assert_eq!(c.kept(), HashSet::from(["x_r0".to_string()]));
        // only a kept point's value seeds its adaptive group
        assert_eq!(c.seen.get(&group_key(x0)), Some(&vec![1.5]));
        assert_eq!(c.seen.get(&group_key(y0)), None);
        // an ok of a command since changed, then an interrupted attempt of the new one: not
        // kept, and its old value seeds nothing (helper 75: the progress line's `n=2` held it);
        // a kept point counts once however many ok events it has
        let earlier = vec![
            point(x0, "ok", "0000", "a", Some(25.0)),
            point(x0, "interrupted", &point_hash(x0), "a", None),
            point(x1, "ok", &point_hash(x1), "a", Some(3.0)),
            point(x1, "ok", &point_hash(x1), "a", Some(3.0)),
        ];
        let c = Campaign::new(&plan, &fps("a"), &earlier, HashMap::new());
        assert_eq!(c.seen.get(&group_key(x0)), Some(&vec![3.0]));
        assert_eq!(c.ran(x0), 1);
    }

    #[test]
    fn a_point_with_no_earlier_event_is_new_and_a_skipped_repeat_is_judged_again() {
        let plan = plan();
        let [x0, x1] = [0, 2].map(|i| &plan.points[i]);
        let earlier = vec![point(x1, "skipped", "", "", None)];
        let c = Campaign::new(&plan, &fps("a"), &earlier, HashMap::new());
        assert!(matches!(c.next(x0, true), Next::New));
        // one the earlier run started and never ended (killed mid-step): not new
        let killed = vec![RunEvent::Process(crate::results::event::Process {
            run_id: Some(x0.run_id.clone()),
            step: "run1-x_r0".into(),
            host: "local".into(),
            ..Default::default()
        })];
        let k = Campaign::new(&plan, &fps("a"), &killed, HashMap::new());
        assert!(
            matches!(k.next(x0, true), Next::Again(ref w) if w == "it did not finish last time")
        );
        assert!(matches!(c.next(x1, true), Next::Run));
        assert!(c.kept().is_empty());
        // a fresh run: nothing kept, nothing seen
        let fresh = Campaign::new(&plan, &fps("a"), &[], HashMap::new());
        assert!(fresh.seen.is_empty() && fresh.kept().is_empty());
    }

    #[test]
    fn outcomes_give_the_exit_code_and_stop_the_loop_when_they_must() {
        let plan = plan();
        let mut c = Campaign::new(&plan, &fps("a"), &[], HashMap::new());
        assert_eq!(c.after("ok", true), After::Go);
        assert_eq!(c.code(), exit_codes::OK);
        assert_eq!(c.after("no-data", false), After::Go);
        assert_eq!(c.code(), exit_codes::POINT_FAILED);
        assert_eq!(c.after("failed", true), After::FailFast);
        assert_eq!(c.after("interrupted", false), After::Interrupted);
        // x_r0 and x_r1: one group
        c.measured(&plan.points[0], 2.0);
        c.measured(&plan.points[2], 4.0);
        assert_eq!(
            c.seen.get(&group_key(&plan.points[0])),
            Some(&vec![2.0, 4.0])
        );
    }
}
