//! The shell's own spawn time, measured before the points of a timed bench so that it can be
//! subtracted from each run's wall time, as hyperfine does: a step that goes through
//! `bash -c COMMAND` (in its directory) pays for starting bash; `bash -c true` costs exactly that.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use std::collections::HashMap;
use std::path::Path;

use crate::exec::backend::host::Ssh;
use crate::exec::signals;
use crate::exec::state::progress::Progress;
use crate::exec::state::{Overhead, Runner};
use crate::model::Experiment;
use crate::plan::{Phase, Plan};
use crate::results::event::{Calibration, RunEvent, Stopped};
use crate::util::stats;

/// Runs per local (host, directory), after [`WARMUP`]: at least `min`, then more until the
/// mean's standard error is at most [`SE_TARGET_MS`], at most `max`. `bash -c true` costs
/// ~2 ms with σ ≈ 0.1–0.3 ms here: 6 runs on a quiet machine, up to 20 on a busy one (a
/// standard error of 0.07 ms at σ = 0.3 ms). hyperfine always runs 50.
const RUNS_LOCAL: (usize, usize) = (6, 20);
/// Runs not counted before the samples: the first spawn after preflight is slower.
const WARMUP: usize = 1;
/// Over one ssh command per run (no agent on the host) each run is a round trip whose spread no
/// count of runs would bring to the local target: a fixed 10.
const RUNS_REMOTE: (usize, usize) = (10, 10);
/// The standard error of the subtracted mean that is good enough: a sixth of the 0.3 ms to
/// which `time_ms` is meant to agree with hyperfine.
const SE_TARGET_MS: f64 = 0.05;
/// A calibration run's step name in the journal and in its mark.
const CALIBRATE: &str = "calibrate";
/// The longest one calibration run may take before it is stopped.
const CALIBRATION_RUN_LIMIT: Duration = Duration::from_secs(10);

impl Runner<'_> {
    /// Measure the shell spawn time on every (host, directory) where a timed bench's run steps
    /// go through the shell, and record it in the journal.
    pub(in crate::exec) fn calibrate_shells(&mut self) {
        let wanted = wanted(self.rec.exp, self.rec.plan);
        // a resumed run keeps the spawn time its first points were corrected with, so that
        // all its points share one
        let earlier = if self.opts.resume {
            earlier(&self.rec.dir)
        } else {
            Vec::new()
        };
        // array tasks run at once: each its own log
        let log_suffix = self.opts.task_journal.as_ref().map(|_| {
            self.rec
                .plan
                .points
                .first()
                .map(|p| p.run_id.as_str())
                .unwrap_or("")
        });
        let logs = self.rec.dir.join("logs");
        let journal = &mut self.rec.journal;
        let got = calibrate(
            &Inputs {
                ssh: &self.rec.ssh,
                exp: self.rec.exp,
                logs: &logs,
                log_suffix,
                grace_s: self.opts.grace,
                progress: &self.rec.progress,
                mark: &self.rec.mark,
            },
            wanted,
            &earlier,
            &mut |e| journal.emit(&e),
        );
        for e in got.events {
            self.rec.publish(e);
        }
        self.shell_overhead.extend(got.overhead);
        self.rec.survivors.extend(got.survivors);
    }
}

/// What calibration is given: the hosts and their connections, where its logs go, the grace of
/// a stop, and the terminal.
pub(in crate::exec) struct Inputs<'a> {
    pub ssh: &'a Ssh,
    pub exp: &'a Experiment,
    /// The result directory's `logs/`.
    pub logs: &'a Path,
    /// An array task's point: its logs are its own (tasks calibrate at once).
    pub log_suffix: Option<&'a str>,
    /// `--grace`: seconds between TERM and KILL when a run must be stopped.
    pub grace_s: u64,
    pub progress: &'a Progress,
    /// The run's mark (`crate::exec::backend::escape`), which each calibration run carries as a step does.
    pub mark: &'a str,
}

/// What calibration gives back: each (host, directory)'s spawn time, the events to record, and
/// what outlived a stop.
#[derive(Default)]
pub(in crate::exec) struct Calibrated {
    pub overhead: HashMap<(String, String), Overhead>,
    pub events: Vec<RunEvent>,
    pub survivors: Vec<String>,
}

/// Every (host, directory) where a timed bench's run steps go through the shell.
pub(in crate::exec) fn wanted(exp: &Experiment, plan: &Plan) -> BTreeSet<(String, String)> {
    let mut wanted: BTreeSet<(String, String)> = BTreeSet::new();
    for p in &plan.points {
        let Some(b) = exp.benches.iter().find(|b| b.name == p.bench) else {
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
    wanted
}

/// The spawn times a run of this directory measured before (what `--resume` keeps).
pub(in crate::exec) fn earlier(dir: &Path) -> Vec<Calibration> {
    crate::results::journal::events(&dir.join(crate::results::JOURNAL))
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::Calibration(c) if c.mean_ms.is_some() => Some(c),
            _ => None,
        })
        .collect()
}

/// The grace of a stop: none once a second signal came.
fn grace(grace_s: u64) -> Duration {
    if signals::count() >= 2 {
        Duration::ZERO
    } else {
        Duration::from_secs(grace_s.max(1))
    }
}

/// Measure (or keep from `earlier`) the shell's spawn time on each (host, directory).
///
/// Each run starts as a measured step does: its mark in the environment, and its process group
/// sent to `record` once it has run `RECORD_AFTER` (so `expr stop` finds a run that hangs),
/// not while it starts (`Runner::spawn_step`).
pub(in crate::exec) fn calibrate(
    inp: &Inputs,
    wanted: BTreeSet<(String, String)>,
    earlier: &[Calibration],
    record: &mut dyn FnMut(RunEvent),
) -> Calibrated {
    let mut got = Calibrated::default();
    for (h, cwd) in wanted {
        if signals::count() > 0 {
            return got;
        }
        if let Some(e) = earlier.iter().rev().find(|e| e.host == h && e.cwd == cwd) {
            keep_earlier(inp, &mut got, (h, cwd), e);
            continue;
        }
        let Some(host) = inp.exp.host(&h) else {
            continue;
        };
        // through an agent a run costs milliseconds, as here
        let (min_runs, max_runs) = if host.is_local() || inp.ssh.agent(host).is_some() {
            RUNS_LOCAL
        } else {
            RUNS_REMOTE
        };
        inp.progress.status(&format!(
            "measuring the shell's spawn time on {h} ({})",
            if min_runs == max_runs {
                format!("{min_runs} runs")
            } else {
                format!("{min_runs}–{max_runs} runs")
            }
        ));
        let site = Site {
            host,
            name: &h,
            cwd: &cwd,
            log: inp.logs.join(match inp.log_suffix {
                Some(id) => format!("calibrate-shell-{h}-{id}.log"),
                None => format!("calibrate-shell-{h}.log"),
            }),
            marker: crate::exec::backend::escape::marker(inp.mark, Some(CALIBRATE)),
            runs: (min_runs, max_runs),
        };
        let Some((samples, failed)) = sample(inp, &site, record, &mut got.survivors) else {
            return got;
        };
        if let Some(why) = failed {
            inp.progress.line(&format!(
                "warning: the shell's spawn time on `{h}` could not be measured ({why}, after {} runs); nothing is subtracted there",
                samples.wall.len()
            ));
            continue;
        }
        record_measured(inp, &mut got, (h, cwd), samples);
    }
    got
}

/// The spawn time the run being resumed measured on (host `h`, directory `cwd`), kept.
fn keep_earlier(inp: &Inputs, got: &mut Calibrated, (h, cwd): (String, String), e: &Calibration) {
    let o = Overhead {
        mean_ms: e.mean_ms.unwrap_or(0.0),
        sd_ms: e.sd_ms.unwrap_or(0.0),
        runs: e.runs,
        cpu_ms: e.user_ms.zip(e.sys_ms),
    };
    // when it was first measured: the resumed run's time, or what it kept itself
    let again = Calibration {
        measured_at: e.measured_at.clone().or_else(|| e.at.clone()),
        at: None,
        ..e.clone()
    };
    got.events.push(RunEvent::Calibration(again));
    inp.progress.line(&format!(
        "shell spawn time on {h}: {:.2} ± {:.2} ms, as measured by the run being resumed",
        o.mean_ms, o.sd_ms
    ));
    got.overhead.insert((h, cwd), o);
}

/// The spawn time measured on (host `h`, directory `cwd`) from `samples`: recorded and said.
fn record_measured(
    inp: &Inputs,
    got: &mut Calibrated,
    (h, cwd): (String, String),
    Samples { wall: samples, cpu }: Samples,
) {
    let runs = samples.len();
    let mean_of = |f: fn(&(f64, f64)) -> f64| stats::mean(&cpu.iter().map(f).collect::<Vec<f64>>());
    let o = Overhead {
        mean_ms: stats::mean(&samples).unwrap_or(0.0),
        sd_ms: stats::sd(&samples).unwrap_or(0.0),
        runs,
        cpu_ms: (cpu.len() == runs)
            .then(|| mean_of(|c| c.0).zip(mean_of(|c| c.1)))
            .flatten(),
    };
    got.events.push(RunEvent::Calibration(Calibration {
        host: h.clone(),
        cwd: cwd.clone(),
        what: "shell spawn (bash -c true, in the step's directory)".into(),
        runs,
        mean_ms: Some(o.mean_ms),
        sd_ms: Some(o.sd_ms),
        samples_ms: samples,
        user_ms: o.cpu_ms.map(|c| c.0),
        sys_ms: o.cpu_ms.map(|c| c.1),
        ..Default::default()
    }));
    inp.progress.line(&format!(
        "shell spawn time on {h}: {:.2} ± {:.2} ms ({runs} runs), subtracted from time_ms{}",
        o.mean_ms,
        o.sd_ms,
        match o.cpu_ms {
            Some((u, s)) => format!(
                "; its CPU time ({u:.2} ms user, {s:.2} ms system) from user_ms and sys_ms"
            ),
            None => String::new(),
        }
    ));
    got.overhead.insert((h, cwd), o);
}

/// One (host, directory) whose spawn time is measured: where its runs go, what they carry,
/// and how many to make (min, max).
struct Site<'s> {
    host: &'s crate::model::Host,
    name: &'s str,
    cwd: &'s str,
    log: std::path::PathBuf,
    marker: String,
    runs: (usize, usize),
}

/// What calibration runs measured: each one's wall time, and its CPU time (user, system) where
/// `wait4` saw the shell itself (a run on this machine). Milliseconds.
#[derive(Default)]
struct Samples {
    wall: Vec<f64>,
    cpu: Vec<(f64, f64)>,
}

/// Run `bash -c true` on `site` until there are enough samples (ms), after the warmup; the
/// samples and why a run did not give one (then nothing is subtracted). None: a signal came,
/// and the run stops.
fn sample(
    inp: &Inputs,
    site: &Site,
    record: &mut dyn FnMut(RunEvent),
    survivors: &mut Vec<String>,
) -> Option<(Samples, Option<String>)> {
    let (min_runs, max_runs) = site.runs;
    let mut got = Samples::default();
    let samples = &mut got.wall;
    // why a run did not give a sample: then nothing is subtracted
    let mut failed: Option<String> = None;
    // the first run is slower (bash's pages, the directory's entries not yet cached):
    // not counted, as a warmup
    let mut warm = WARMUP;
    while !enough(samples, min_runs, max_runs) {
        if signals::count() > 0 {
            return None;
        }
        let (exit, started) = match run_once(inp, site, record, survivors) {
            Ok(x) => x,
            Err(e) => {
                failed = Some(e);
                break;
            }
        };
        match exit {
            Some(e) if e.code == 0 && warm > 0 => warm -= 1,
            Some(e) if e.code == 0 => {
                samples.push(e.at.saturating_duration_since(started).as_secs_f64() * 1e3);
                if site.host.runs_here() {
                    got.cpu
                        .push((e.user.as_secs_f64() * 1e3, e.sys.as_secs_f64() * 1e3));
                }
            }
            Some(e) => {
                failed = Some(format!(
                    "`bash -c true` exited with {} (log: {})",
                    e.code,
                    site.log.display()
                ));
                break;
            }
            // a signal: the run stops, and says so itself
            None if signals::count() > 0 => return None,
            None => {
                failed = Some(format!(
                    "`bash -c true` did not end within {} s",
                    CALIBRATION_RUN_LIMIT.as_secs()
                ));
                break;
            }
        }
    }
    Some((got, failed))
}

/// One calibration run on `site`: its exit (None: it did not end in time, or a signal came,
/// and it was stopped) and when it started; Err when it could not be started.
fn run_once(
    inp: &Inputs,
    site: &Site,
    record: &mut dyn FnMut(RunEvent),
    survivors: &mut Vec<String>,
) -> Result<(Option<crate::exec::backend::reaper::Exit>, Instant), String> {
    let host = site.host;
    let mut p = crate::exec::backend::spawn(
        inp.ssh,
        host,
        "calibrate",
        site.cwd,
        "true",
        &site.log,
        crate::exec::backend::Launch {
            mark: Some(&site.marker),
            ..Default::default()
        },
    )?;
    // `bash -c true` is quick; one that is not (a BASH_ENV that hangs, a stuck srun)
    // is stopped, and so is one a signal interrupts
    let end = Instant::now() + CALIBRATION_RUN_LIMIT;
    // a run of this machine slow to end is recorded as a step is
    // (`Runner::spawn_step`), and closed when it ends or is stopped (a run elsewhere is
    // not: its record would come in the middle of its sample)
    let mut recorded = !host.runs_here();
    let mut open = false;
    let exit = loop {
        let slice = if recorded {
            Duration::from_millis(50)
        } else {
            crate::exec::state::RECORD_AFTER
        };
        if let Some(e) = p.wait_exit((Instant::now() + slice).min(end)) {
            break Some(e);
        }
        if !recorded {
            record(crate::exec::state::process_event(
                None,
                CALIBRATE,
                host,
                &p,
                Vec::new(),
            ));
            (recorded, open) = (true, true);
        }
        if Instant::now() >= end || signals::count() > 0 {
            break None;
        }
    };
    let gone =
        exit.is_some() || crate::exec::backend::stop(inp.ssh, host, &mut p, grace(inp.grace_s));
    if !gone {
        survivors.push(format!("calibration on {}", site.name));
    }
    if open {
        // `expr stop` leaves an ended run's record alone (its group id may be reused)
        record(RunEvent::Stopped(Stopped {
            run_id: None,
            step: CALIBRATE.into(),
            host: site.name.to_string(),
            pgid: p.local_pgid(),
            remote_pgid: None,
            gone,
            scratch_removed: Vec::new(),
        }));
    }
    Ok((exit, p.started))
}

/// Whether the calibration has run enough: `max` runs, or `min` with a small enough standard
/// error.
fn enough(samples: &[f64], min: usize, max: usize) -> bool {
    samples.len() >= max || (samples.len() >= min && standard_error(samples) <= SE_TARGET_MS)
}

/// The standard error of a sample's mean (σ/√n); infinite below two samples.
fn standard_error(v: &[f64]) -> f64 {
    match stats::sd(v) {
        Some(sd) if v.len() >= 2 => sd / (v.len() as f64).sqrt(),
        _ => f64::INFINITY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_error_on_hand_computed_samples() {
        // mean 2, deviations ±0.1 (4 values): sd = sqrt(4·0.01/3) = 0.11547; se = sd/2
        let v = [1.9, 2.1, 1.9, 2.1];
        assert!((standard_error(&v) - 0.057735).abs() < 1e-6);
        assert!(standard_error(&[2.0]).is_infinite());
        assert!(standard_error(&[]).is_infinite());
        // 8 runs at ±0.1: sd = sqrt(8·0.01/7) = 0.1069, se = 0.0378, within the target;
        // at ±0.2 the se is 0.0756, outside it
        let tight = [1.9, 2.1, 1.9, 2.1, 1.9, 2.1, 1.9, 2.1];
        assert!((standard_error(&tight) - 0.037796).abs() < 1e-6);
        let loose: Vec<f64> = tight.iter().map(|x| 2.0 + (x - 2.0) * 2.0).collect();
        assert!((standard_error(&loose) - 0.075593).abs() < 1e-6);
    }

    #[test]
    fn calibration_stops_at_the_target_or_at_max() {
        let tight = [1.9, 2.1, 1.9, 2.1, 1.9, 2.1, 1.9, 2.1];
        // below min: never enough, however tight
        assert!(!enough(&tight[..5], 6, 20));
        // six at ±0.1: sd = sqrt(6·0.01/5) = 0.1095, se = 0.0447 ≤ 0.05
        assert!(enough(&tight[..6], 6, 20));
        let loose: Vec<f64> = tight.iter().map(|x| 2.0 + (x - 2.0) * 2.0).collect();
        assert!(!enough(&loose, 6, 20));
        // at max, enough whatever the spread (±0.4: se = 0.41/√19 = 0.094 at 19 runs)
        let many: Vec<f64> = tight
            .iter()
            .map(|x| 2.0 + (x - 2.0) * 4.0)
            .cycle()
            .take(20)
            .collect();
        assert!(enough(&many, 6, 20));
        assert!(!enough(&many[..19], 6, 20));
    }
}
