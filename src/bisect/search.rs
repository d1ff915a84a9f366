//! The search: from the journal's events, what to do next — measure a reference or a probe,
//! record a verdict, or stop. Pure: the same events always give the same next step, which is
//! what makes `--resume` continue exactly where a bisection stopped.

use super::decide::{self, Call};
use super::journal::{Event, Start};

/// Which side of a round's commit: a reference or a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Good,
    Bad,
    Probe,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Good => "good",
            Role::Bad => "bad",
            Role::Probe => "probe",
        }
    }
}

/// How a bisection ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The first bad commit (its index).
    Found(usize),
    /// Every commit between the last good and the first bad was skipped: the first bad one is
    /// among `lo + 1 ..= hi`.
    Range(usize, usize),
    /// Good and bad do not differ by more than their noise.
    NoStep(String),
    /// A reference commit cannot be measured.
    Reference(String),
    /// `--max-runs` was reached first.
    Budget,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Measure(usize, Role),
    /// Record this verdict (good, bad or skip) of a commit.
    Decide(usize, &'static str, String),
    Done(Outcome),
}

/// What the journal's events add up to.
#[derive(Debug, Clone, Default)]
pub struct State {
    pub samples: Vec<Vec<f64>>,
    /// The metric's unit (from the first round that names one).
    pub unit: String,
    /// Whether a round at this commit built and tested it (later rounds skip both).
    pub built: Vec<bool>,
    /// The last round's status and reason at each commit.
    pub last: Vec<Option<(String, String)>>,
    pub verdicts: Vec<Option<(String, String)>>,
    /// Point runs (samples) and rounds (result directories) spent.
    pub runs: usize,
    pub rounds: usize,
    /// Reference rounds after the first probe round, and verdicts reached by measuring.
    pub refs_between: usize,
    pub measured_verdicts: usize,
}

impl State {
    pub fn of(start: &Start, events: &[Event]) -> State {
        let n = start.commits.len();
        let mut s = State {
            samples: vec![Vec::new(); n],
            built: vec![false; n],
            last: vec![None; n],
            verdicts: vec![None; n],
            ..State::default()
        };
        let mut probed = false;
        for e in events {
            match e {
                Event::Round(r) if r.commit < n => {
                    s.rounds += 1;
                    s.runs += r.samples.len();
                    s.samples[r.commit].extend(r.samples.iter().map(|x| x.value));
                    if r.status == "ok" && (r.built || r.cached) {
                        s.built[r.commit] = true;
                    }
                    s.last[r.commit] = Some((r.status.clone(), r.reason.clone()));
                    if s.unit.is_empty() {
                        s.unit = r.unit.clone();
                    }
                    if r.role == "probe" {
                        probed = true;
                    } else if probed {
                        s.refs_between += 1;
                    }
                }
                Event::Verdict(v) if v.commit < n => {
                    if !s.samples[v.commit].is_empty() {
                        s.measured_verdicts += 1;
                    }
                    s.verdicts[v.commit] = Some((v.verdict.clone(), v.reason.clone()));
                }
                _ => {}
            }
        }
        s
    }

    fn verdict(&self, i: usize) -> Option<&str> {
        self.verdicts[i].as_ref().map(|v| v.0.as_str())
    }

    /// The last commit known good and the first known bad above it.
    pub fn bounds(&self) -> (usize, usize) {
        let n = self.samples.len();
        let lo = (1..n.saturating_sub(1))
            .rev()
            .find(|&i| self.verdict(i) == Some("good"))
            .unwrap_or(0);
        let hi = (lo + 1..n.saturating_sub(1))
            .find(|&i| self.verdict(i) == Some("bad"))
            .unwrap_or(n.saturating_sub(1));
        (lo, hi)
    }

    /// The commit to probe between the bounds: the one nearest the middle that is not skipped
    /// (the lower on a tie), as `git bisect` moves to a neighbour of a skipped commit.
    pub fn midpoint(&self) -> Option<usize> {
        let (lo, hi) = self.bounds();
        let mid = (lo + hi) as f64 / 2.0;
        (lo + 1..hi)
            .filter(|&i| self.verdict(i) != Some("skip"))
            .min_by(|&a, &b| (a as f64 - mid).abs().total_cmp(&(b as f64 - mid).abs()))
    }
}

/// The next step of a bisection.
pub fn next(start: &Start, s: &State) -> Action {
    next_by(start, s, &decide::RULE)
}

/// The next step of a bisection by a given rule.
pub fn next_by(start: &Start, s: &State, rule: &decide::Rule) -> Action {
    let n = start.commits.len();
    let (good, bad) = (0, n - 1);
    if start.max_runs.is_some_and(|m| s.runs >= m) {
        return Action::Done(Outcome::Budget);
    }
    // a reference that cannot be built, tested or measured ends the bisection
    for (i, role) in [(good, Role::Good), (bad, Role::Bad)] {
        if let Some((st, why)) = &s.last[i] {
            if st != "ok" {
                return Action::Done(Outcome::Reference(format!(
                    "the {} commit: {st}: {why}",
                    role.name()
                )));
            }
        }
    }
    let (g, b) = (&s.samples[good], &s.samples[bad]);
    let want = start.fixed.unwrap_or(2.max(start.batch));
    if g.len() < want || b.len() < want {
        let role = if g.len() <= b.len() {
            Role::Good
        } else {
            Role::Bad
        };
        return Action::Measure(if role == Role::Good { good } else { bad }, role);
    }
    if start.fixed.is_none() {
        let (ci, significant) = decide::step(g, b);
        if !significant {
            if g.len() >= start.max_per_commit && b.len() >= start.max_per_commit {
                let iv = ci
                    .map(|(lo, hi)| format!("{} … {}", decide::signed(lo), decide::signed(hi)))
                    .unwrap_or_else(|| "—".into());
                return Action::Done(Outcome::NoStep(format!(
                    "after {} good and {} bad runs the change from good to bad is {iv} (95 % interval), which holds 0",
                    g.len(),
                    b.len()
                )));
            }
            return if g.len() <= b.len() {
                Action::Measure(good, Role::Good)
            } else {
                Action::Measure(bad, Role::Bad)
            };
        }
        // the references place the step precisely before any probe is judged by them (they
        // serve every probe, so their runs are the cheap ones)
        let cap = start.max_per_commit;
        if !decide::references_ready(g, b, rule) && (g.len() < cap || b.len() < cap) {
            return if g.len() <= b.len() {
                Action::Measure(good, Role::Good)
            } else {
                Action::Measure(bad, Role::Bad)
            };
        }
        // one reference round between probes, good and bad in turn: a machine that drifts
        // moves both references with the probes
        if s.refs_between < s.measured_verdicts {
            return if s.refs_between % 2 == 0 {
                Action::Measure(good, Role::Good)
            } else {
                Action::Measure(bad, Role::Bad)
            };
        }
    }
    let (lo, hi) = s.bounds();
    if hi == lo + 1 {
        return Action::Done(Outcome::Found(hi));
    }
    let Some(c) = s.midpoint() else {
        return Action::Done(Outcome::Range(lo, hi));
    };
    if let Some((st, why)) = &s.last[c] {
        if st != "ok" {
            let what = match st.as_str() {
                "build-failed" => "it does not build",
                "test-failed" => "it fails its correctness test",
                _ => "its run failed",
            };
            return Action::Decide(c, "skip", format!("{what}: {why}"));
        }
    }
    let p = &s.samples[c];
    if let Some(k) = start.fixed {
        if p.len() < k {
            return Action::Measure(c, Role::Probe);
        }
        return match decide::nearest(g, b, p) {
            Call::Good => {
                Action::Decide(c, "good", format!("mean nearer good's ({} runs)", p.len()))
            }
            Call::Bad => Action::Decide(c, "bad", format!("mean nearer bad's ({} runs)", p.len())),
            _ => Action::Decide(c, "skip", "mean as near to good as to bad".into()),
        };
    }
    if p.is_empty() {
        return Action::Measure(c, Role::Probe);
    }
    // probes already called good or bad are more runs of that side
    let pooled = |side: usize, v: &str| -> Vec<f64> {
        let mut all = s.samples[side].clone();
        if rule.pool_verdicts {
            for i in 1..n - 1 {
                if s.verdict(i) == Some(v) {
                    all.extend(&s.samples[i]);
                }
            }
        }
        all
    };
    let (g, b) = (&pooled(good, "good"), &pooled(bad, "bad"));
    let j = decide::judge(g, b, p, start.max_per_commit, rule);
    // a probe that needs more runs gets them only with references at least as large: the
    // interval of a change cannot be narrower than the reference's own
    if j.call == Call::More && rule.refs_at_least_probe && g.len().min(b.len()) < p.len() {
        return if g.len() <= b.len() {
            Action::Measure(good, Role::Good)
        } else {
            Action::Measure(bad, Role::Bad)
        };
    }
    let why = format!("{} runs: {}", p.len(), j.text(&s.unit));
    match j.call {
        Call::Good => Action::Decide(c, "good", why),
        Call::Bad => Action::Decide(c, "bad", why),
        Call::Undecided => Action::Decide(
            c,
            "skip",
            format!(
                "undecided at the bound of {} runs: {why}",
                start.max_per_commit
            ),
        ),
        Call::More => Action::Measure(c, Role::Probe),
    }
}

#[cfg(test)]
mod tests {
    use super::super::journal::{Round, Sample, Verdict};
    use super::*;

    /// The rule with three runs of a reference and one of a probe enough (the samples here are
    /// exact enough).
    fn next(start: &Start, s: &State) -> Action {
        let rule = decide::Rule {
            min_refs: 3,
            min_probe: 1,
            ..decide::RULE
        };
        next_by(start, s, &rule)
    }

    fn round(commit: usize, role: &str, status: &str, v: &[f64]) -> Event {
        Event::Round(Round {
            commit,
            role: role.into(),
            dir: format!("runs/{commit}"),
            built: true,
            cached: false,
            status: status.into(),
            reason: String::new(),
            unit: String::new(),
            samples: v
                .iter()
                .map(|&value| Sample {
                    value,
                    source: "x:1".into(),
                })
                .collect(),
        })
    }

    fn verdict(commit: usize, v: &str) -> Event {
        Event::Verdict(Verdict {
            commit,
            verdict: v.into(),
            reason: String::new(),
        })
    }

    const GOOD: [f64; 3] = [100.0, 101.0, 99.0];
    const BAD: [f64; 3] = [115.0, 116.0, 114.0];

    #[test]
    fn references_first_then_the_midpoint_then_a_reference_between_probes() {
        let st = Start::example(12);
        let mut ev = vec![];
        let next_of = |ev: &Vec<Event>| next(&st, &State::of(&st, ev));
        assert_eq!(next_of(&ev), Action::Measure(0, Role::Good));
        ev.push(round(0, "good", "ok", &GOOD));
        assert_eq!(next_of(&ev), Action::Measure(11, Role::Bad));
        ev.push(round(11, "bad", "ok", &BAD));
        // 0 and 11: the middle is 5.5, the lower of 5 and 6
        assert_eq!(next_of(&ev), Action::Measure(5, Role::Probe));
        ev.push(round(5, "probe", "build-failed", &[]));
        let Action::Decide(5, "skip", why) = next_of(&ev) else {
            panic!("{:?}", next_of(&ev))
        };
        assert!(why.contains("does not build"), "{why}");
        ev.push(verdict(5, "skip"));
        // skipped without a run: no reference round; its neighbour is next
        assert_eq!(next_of(&ev), Action::Measure(6, Role::Probe));
        ev.push(round(6, "probe", "ok", &[100.5, 99.5, 100.0]));
        assert!(matches!(next_of(&ev), Action::Decide(6, "good", _)));
        ev.push(verdict(6, "good"));
        assert_eq!(next_of(&ev), Action::Measure(0, Role::Good));
        ev.push(round(0, "good", "ok", &GOOD));
        // lo 6, hi 11: 8.5 → 8
        assert_eq!(next_of(&ev), Action::Measure(8, Role::Probe));
        ev.push(round(8, "probe", "ok", &BAD));
        ev.push(verdict(8, "bad"));
        assert_eq!(next_of(&ev), Action::Measure(11, Role::Bad));
        ev.push(round(11, "bad", "ok", &BAD));
        assert_eq!(next_of(&ev), Action::Measure(7, Role::Probe));
        ev.push(round(7, "probe", "ok", &BAD));
        ev.push(verdict(7, "bad"));
        ev.push(round(0, "good", "ok", &GOOD));
        assert_eq!(next_of(&ev), Action::Done(Outcome::Found(7)));
        let s = State::of(&st, &ev);
        assert_eq!((s.rounds, s.runs), (9, 24));
    }

    #[test]
    fn all_skipped_between_the_bounds_is_a_range_and_the_budget_stops() {
        let st = Start::example(4);
        let ev = vec![
            round(0, "good", "ok", &GOOD),
            round(3, "bad", "ok", &BAD),
            verdict(1, "skip"),
            verdict(2, "skip"),
        ];
        assert_eq!(
            next(&st, &State::of(&st, &ev)),
            Action::Done(Outcome::Range(0, 3))
        );
        let mut b = Start::example(4);
        b.max_runs = Some(6);
        assert_eq!(next(&b, &State::of(&b, &ev)), Action::Done(Outcome::Budget));
        // a broken reference ends it, named
        let ev = vec![round(0, "good", "test-failed", &[])];
        assert!(matches!(
            next(&st, &State::of(&st, &ev)),
            Action::Done(Outcome::Reference(_))
        ));
    }

    #[test]
    fn no_step_between_the_references_is_said_at_the_bound() {
        let mut st = Start::example(6);
        st.max_per_commit = 3;
        let ev = vec![
            round(0, "good", "ok", &GOOD),
            round(5, "bad", "ok", &[100.0, 99.0, 101.0]),
        ];
        let Action::Done(Outcome::NoStep(why)) = next(&st, &State::of(&st, &ev)) else {
            panic!()
        };
        assert!(why.contains("holds 0"), "{why}");
    }
}
