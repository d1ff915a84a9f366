//! Seeded trials of the search on a simulated test repository — the program of
//! `tests/fixtures/bisect/make-repo.sh` without its processes: commit 7 of 12 is 15 % slower
//! under ±20 % uniform jitter, 5 does not build, 8 fails its test — to compare rules by the
//! thousand before `tests/bench/bisect-trials.sh` measures the chosen one for real:
//! `cargo test --release --lib bisect::sim -- --ignored --nocapture`.

use super::decide::{Rule, RULE};
use super::journal::{Event, Round, Sample, Start, Verdict};
use super::search::{next_by, Action, Outcome, State};
use crate::util::stats::SplitMix;

/// One bisection: whether it named commit 7, and the runs it spent.
fn trial(rule: &Rule, batch: usize, max: usize, fixed: Option<usize>, seed: u64) -> (u8, usize) {
    let st = Start {
        batch: fixed.unwrap_or(batch),
        max_per_commit: fixed.unwrap_or(max),
        fixed,
        ..Start::example(12)
    };
    let mut rng = SplitMix(seed);
    let mut ev = Vec::new();
    loop {
        let s = State::of(&st, &ev);
        match next_by(&st, &s, rule) {
            Action::Measure(c, role) => {
                let status = match c {
                    5 => "build-failed",
                    8 => "test-failed",
                    _ => "ok",
                };
                let factor = if c >= 7 { 1.15 } else { 1.0 };
                let samples = if status == "ok" {
                    (0..st.batch)
                        .map(|_| Sample {
                            value: 100.0 * factor * (1.0 + 0.4 * (rng.uniform() - 0.5)),
                            source: String::new(),
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                ev.push(Event::Round(Round {
                    commit: c,
                    role: role.name().into(),
                    dir: String::new(),
                    built: true,
                    cached: false,
                    status: status.into(),
                    reason: String::new(),
                    unit: String::new(),
                    samples,
                }));
            }
            Action::Decide(c, v, reason) => {
                if std::env::var("SIM_DEBUG").is_ok() {
                    let truth = if c >= 7 { "bad" } else { "good" };
                    if v != truth && c != 5 && c != 8 {
                        let s = State::of(&st, &ev);
                        println!(
                            "seed {seed} commit {c} called {v}: g {} b {} p {}: {reason}",
                            s.samples[0].len(),
                            s.samples[11].len(),
                            s.samples[c].len()
                        );
                    }
                }
                ev.push(Event::Verdict(Verdict {
                    commit: c,
                    verdict: v.into(),
                    reason,
                }))
            }
            Action::Done(o) => {
                let kind = match o {
                    Outcome::Found(7) => 0,
                    Outcome::Found(_) => 1,
                    _ => 2,
                };
                return (kind, s.runs);
            }
        }
    }
}

/// Found, mean, 95th percentile and max runs of `n` trials.
fn trials(rule: &Rule, batch: usize, max: usize, fixed: Option<usize>, n: u64) -> String {
    let mut runs = Vec::new();
    let (mut found, mut wrong) = (0, 0);
    for seed in 0..n {
        let (f, r) = trial(rule, batch, max, fixed, seed * 7919 + 1);
        found += (f == 0) as usize;
        wrong += (f == 1) as usize;
        runs.push(r);
    }
    runs.sort();
    let mean = runs.iter().sum::<usize>() as f64 / n as f64;
    format!(
        "missed {:5.2} % (wrong {:5.2} %)  runs mean {mean:6.1}  p95 {:4}  max {:4}",
        (n as f64 - found as f64) / n as f64 * 100.0,
        wrong as f64 / n as f64 * 100.0,
        runs[(n as usize * 95) / 100],
        runs[n as usize - 1]
    )
}

#[test]
#[ignore = "a sweep of rules, minutes in a debug build"]
fn sweep() {
    if let Ok(v) = std::env::var("SIM_DEBUG") {
        let b: usize = v.parse().unwrap_or(1);
        println!("{}", trials(&RULE, b, 80, None, 300));
        return;
    }
    let n = 4000;
    for k in [8, 12, 16, 20, 24] {
        println!(
            "fixed {k:2}:                              {}",
            trials(&RULE, k, k, Some(k), n)
        );
    }
    let plug = Rule {
        glr: false,
        min_refs: 2,
        ..RULE
    };
    for (name, rule) in [
        ("plug-in SPRT, refs ≥ 2", plug),
        (
            "plug-in SPRT, refs ≥ 12",
            Rule {
                min_refs: 12,
                ..plug
            },
        ),
        (
            "GLR, refs ≥ 2",
            Rule {
                min_refs: 2,
                ..RULE
            },
        ),
        ("GLR, refs ≥ 12 (RULE)", RULE),
        (
            "GLR, α = β = 2 %",
            Rule {
                alpha: 0.02,
                beta: 0.02,
                ..RULE
            },
        ),
        (
            "GLR, no refs ≥ probe",
            Rule {
                refs_at_least_probe: false,
                ..RULE
            },
        ),
        (
            "GLR, verdicts pooled",
            Rule {
                pool_verdicts: true,
                ..RULE
            },
        ),
        (
            "GLR, probe ≥ 4",
            Rule {
                min_probe: 4,
                ..RULE
            },
        ),
        (
            "GLR, probe ≥ 6",
            Rule {
                min_probe: 6,
                ..RULE
            },
        ),
        (
            "GLR, probe ≥ 6, refs ≥ 8",
            Rule {
                min_probe: 6,
                min_refs: 8,
                ..RULE
            },
        ),
    ] {
        for (batch, max) in [(1, 80), (2, 40), (2, 80), (8, 80)] {
            println!(
                "{name:25} batch {batch} max {max:2}: {}",
                trials(&rule, batch, max, None, n)
            );
        }
    }
}

/// How far a mean of 20 real trials may fall from the simulation's by chance: the rule's runs
/// over 4000 seeds, their sd, and the spread of the means of 200 disjoint groups of 20.
#[test]
#[ignore = "4000 simulated bisections"]
fn spread_of_twenty_trials() {
    let runs: Vec<f64> = (0..4000u64)
        .map(|seed| trial(&RULE, 2, 80, None, seed * 7919 + 1).1 as f64)
        .collect();
    let mean = runs.iter().sum::<f64>() / runs.len() as f64;
    let sd =
        (runs.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (runs.len() - 1) as f64).sqrt();
    let groups: Vec<f64> = runs
        .chunks(20)
        .map(|g| g.iter().sum::<f64>() / 20.0)
        .collect();
    let at_least = |x: f64| groups.iter().filter(|&&m| m >= x).count();
    println!(
        "runs mean {mean:.1}, sd {sd:.1} (se of 20: {:.1}); groups of 20 with mean ≥ 98: {} of {}, ≥ 95: {}, max group mean {:.1}",
        sd / 20f64.sqrt(),
        at_least(98.0),
        groups.len(),
        at_least(95.0),
        groups.iter().cloned().fold(0.0, f64::max)
    );
}
