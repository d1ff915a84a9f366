//! The point's numbers as it ends, adaptive repeats and the live result line: each point's
//! headline value as soon as it ran,
//! kept per (bench, lane, sweep point) so that `repeat min=… max=… until-cv=…` can stop adding
//! runs of a group whose spread is small enough.

use std::collections::HashMap;

use serde_json::Value;

use crate::exec::state::Runner;
use crate::results::collect::PointDir;
use std::path::Path;

use crate::model::{Bench, Experiment, Val};
use crate::plan::PlanPoint;
use crate::results::event::Adaptive;
use crate::util::stats;

/// A (bench, lane, sweep point): the repeats of one point.
pub(in crate::exec) fn group_key(p: &PlanPoint) -> String {
    key_of(&p.bench, &p.lane, &p.axes)
}

/// The group key of a bench's lane at a sweep point.
fn key_of(bench: &str, lane: &str, axes: &[(String, Val)]) -> String {
    let axes: Vec<String> = axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{bench}\u{1}{lane}\u{1}{}", axes.join("\u{1}"))
}

/// A setting's value at a point: the sweep's, else the lane's override, else the bench's.
fn setting_at(bench: &Bench, p: &PlanPoint, key: &str) -> Option<Val> {
    if let Some((_, v)) = p.axes.iter().find(|(k, _)| k == key) {
        return Some(v.clone());
    }
    if let Some(l) = bench.lanes.iter().find(|l| l.name == p.lane) {
        if let Some(v) = l.overrides.get(key) {
            return Some(v.val.clone());
        }
    }
    bench.setting(key).cloned()
}

/// ` unit`, or nothing for a unitless number.
fn with_unit(unit: &str) -> String {
    if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    }
}

/// The values seen so far per group.
pub(in crate::exec) type Seen = HashMap<String, Vec<f64>>;

/// What a point's numbers and its group's rule are read from: the experiment and the result
/// directory, nothing else of the run.
pub(in crate::exec) struct Numbers<'a> {
    pub exp: &'a Experiment,
    pub dir: &'a Path,
    /// The run began with an empty `logs/` and is not resumed: a point's logs are its steps'.
    pub fresh: bool,
}

impl Runner<'_> {
    pub(in crate::exec) fn numbers(&self) -> Numbers<'_> {
        Numbers {
            exp: self.rec.exp,
            dir: &self.rec.dir,
            fresh: self.rec.began_empty.is_some(),
        }
    }
}

impl Numbers<'_> {
    /// The points an earlier run of this directory finished ok whose evidence is gone: the log
    /// its event names, its `outputs/` directory, or (a kind that reads numbers from files)
    /// numbers that can be read again. Run id → why, as a resumed run says it; a resume runs
    /// them again rather than keeping a point it can no longer report.
    pub(in crate::exec) fn lost(
        &self,
        plan: &crate::plan::Plan,
        earlier: &[crate::results::event::RunEvent],
    ) -> HashMap<String, String> {
        let mut lost = HashMap::new();
        for (id, e) in crate::exec::state::last_points(earlier) {
            if e.status != "ok" {
                continue;
            }
            let Some(p) = plan.point(&id) else { continue };
            let why = if let Some(log) = e.event.log.as_deref().filter(|l| !Path::new(l).is_file())
            {
                Some(format!("its log {log} is gone"))
            } else if !self.dir.join("outputs").join(&id).is_dir() {
                Some(format!("its outputs/{id} is gone"))
            } else {
                self.measure_now(p, e.event.timing.as_ref())
                    .err()
                    .map(|why| format!("its numbers cannot be read again ({why})"))
            };
            if let Some(w) = why {
                lost.insert(id, w);
            }
        }
        lost
    }

    /// The point's numbers, read right after it ran: its headline value — a timed bench's run
    /// time (wall − the shell's spawn time), else what the kind's collector reads from the
    /// point's artifacts. `Ok(None)`: nothing to read (no timing recorded, or a headline that is
    /// not a number); `Err(why)`: the kind's metrics cannot be read — the point has no data.
    pub(in crate::exec) fn measure_now(
        &self,
        p: &PlanPoint,
        timing: Option<&Value>,
    ) -> Result<Option<f64>, String> {
        let Some(bench) = self.exp.benches.iter().find(|b| b.name == p.bench) else {
            return Ok(None);
        };
        let kind = crate::kinds::of(bench.kind);
        if kind.timed(bench) || !kind.declares_metrics(bench) {
            let wall = timing.and_then(|t| Some((t["wall_ms"].as_f64()?, t)));
            return Ok(wall.map(|(wall, t)| {
                (wall - t["shell_overhead_ms"].as_f64().unwrap_or(0.0)).max(0.0)
            }));
        }
        let warmup = setting_at(bench, p, "warmup-steps")
            .and_then(|v| v.as_int())
            .unwrap_or(0);
        // a point this run just ran: its logs are its steps' (`logs/` is not listed again)
        let known: Option<Vec<std::path::PathBuf>> = self.fresh.then(|| {
            p.steps
                .iter()
                .map(|s| {
                    self.dir
                        .join("logs")
                        .join(format!("{}-{}.log", s.id, s.host))
                })
                .collect()
        });
        let at = PointDir {
            dir: self.dir,
            run_id: &p.run_id,
            lane: &p.lane,
            warmup,
            logs: known.as_deref(),
        };
        kind.collect(&at, bench)
            .map(|m| Some(m.headline()).filter(|v| v.is_finite()))
            // a cell the reason quotes may hold a secret the step printed
            .map_err(|e| crate::util::secret::mask_known(&e))
    }

    /// The live line's tail for a timed or adaptive point: its value, and its group so far.
    pub(in crate::exec) fn live_text(
        &self,
        p: &PlanPoint,
        value: Option<f64>,
        seen: &Seen,
    ) -> String {
        let Some(v) = value else {
            return String::new();
        };
        let Some(bench) = self.exp.benches.iter().find(|b| b.name == p.bench) else {
            return String::new();
        };
        let (name, unit) = crate::kinds::of(bench.kind).headline(bench);
        let ms = unit == "ms";
        let one = |x: f64| {
            if ms {
                crate::util::units::dur(x)
            } else {
                format!("{}{}", crate::util::fmt::km(x), with_unit(&unit))
            }
        };
        let vals = seen.get(&group_key(p)).map(Vec::as_slice).unwrap_or(&[]);
        let group = match (stats::mean(vals), stats::sd(vals)) {
            (Some(m), Some(s)) if ms => format!(
                " · {}: {} (n={})",
                crate::plan::render::comment(&p.lane),
                crate::util::units::dur_pm(m, s),
                vals.len()
            ),
            (Some(m), Some(s)) => {
                format!(
                    " · {}: {} ± {}{} (n={})",
                    crate::plan::render::comment(&p.lane),
                    crate::util::fmt::km(m),
                    crate::util::fmt::km(s),
                    with_unit(&unit),
                    vals.len()
                )
            }
            _ => String::new(),
        };
        format!("  {name} {}{group}", one(v))
    }

    /// Whether the point's group has converged: the adaptive rule's reason, if so. With
    /// `until-decided`, also its comparison with the first lane (the first lane's: every other
    /// lane's with it) at the same sweep point is decided.
    /// `ran`: how many of the group's points have run before this one (its repeat index in
    /// matrix or interleaved order; not in a shuffled one).
    pub(in crate::exec) fn converged(
        &self,
        p: &PlanPoint,
        seen: &Seen,
        ran: usize,
    ) -> Option<String> {
        let bench = self.exp.benches.iter().find(|b| b.name == p.bench)?;
        let a = bench.adaptive?;
        if (ran as i64) < a.min {
            return None;
        }
        let of = |lane: &str| {
            seen.get(&key_of(&p.bench, lane, &p.axes))
                .map(Vec::as_slice)
                .unwrap_or(&[])
        };
        let spread = a.done(of(&p.lane))?;
        if a.until_decided.is_none() {
            return Some(spread);
        }
        let base = bench.lanes.first()?.name.as_str();
        let pairs: Vec<&str> = if p.lane == base {
            bench
                .lanes
                .iter()
                .map(|l| l.name.as_str())
                .filter(|l| *l != base)
                .collect()
        } else {
            vec![p.lane.as_str()]
        };
        if pairs.is_empty() {
            return None;
        }
        let mut why = Vec::new();
        for l in pairs {
            why.push(format!("{l} vs {base}: {}", a.decided(of(base), of(l))?));
        }
        let n = of(&p.lane).len();
        let cv = if a.until_cv.is_some() || a.until_ci.is_some() {
            format!("{spread}; ")
        } else {
            String::new()
        };
        Some(format!("{cv}{} after {n} runs", why.join("; ")))
    }

    /// After the last planned repeat of an adaptive group: whether it reached max unconverged
    /// (the event that says so, its note in English).
    /// `ran`: how many of the group's points have run, this one included.
    pub(in crate::exec) fn hit_max(
        &self,
        p: &PlanPoint,
        seen: &Seen,
        ran: usize,
    ) -> Option<Adaptive> {
        let bench = self.exp.benches.iter().find(|b| b.name == p.bench)?;
        let a = bench.adaptive?;
        if ran as i64 != a.max {
            return None;
        }
        let vals = seen.get(&group_key(p)).map(Vec::as_slice).unwrap_or(&[]);
        if self.converged(p, seen, ran).is_some() {
            return None;
        }
        let mut e = Adaptive {
            run_id: Some(p.run_id.clone()),
            lane: Some(p.lane.clone()),
            note: String::new(),
            max: Some(a.max),
            cv_percent: stats::cv_percent(vals),
            ci95_percent: stats::ci95_half_width_percent(vals),
        };
        e.note = e.render(crate::util::lang::Lang::En).unwrap_or_default();
        Some(e)
    }
}
