//! RecStore / TorchRec per-step CSVs (both column generations), streamed: memory does not grow
//! with the number of rows.
//!
//! Job throughput of a multi-rank run is "group rows by step, sum the ranks' samples/s within each
//! step, then average over steps". When every rank covers the same steps, that equals the sum over
//! ranks of each rank's mean samples/s, which needs one accumulator per rank; the collector checks
//! that the ranks cover the same steps and refuses to give a number otherwise.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::results::collect::timing::{TimingAcc, TimingCheck, TimingModel};
use crate::util::stats::Quantile;

/// Latency stages in report order, each with the column names that carry it (old and new runners).
pub const STAGES: &[(&str, &[&str])] = &[
    ("batch_prepare_ms", &["batch_prepare_ms"]),
    ("input_pack_ms", &["input_pack_ms"]),
    (
        "embed_lookup_local_ms",
        &["embed_lookup_local_ms", "embed_lookup_ms"],
    ),
    ("dense_fwd_ms", &["dense_fwd_ms"]),
    ("backward_ms", &["backward_ms"]),
    ("optimizer_ms", &["optimizer_ms", "dense_optimizer_ms"]),
    (
        "sparse_update_ms",
        &["sparse_update_ms", "sparse_optimizer_ms"],
    ),
    ("step_total_ms", &["step_total_ms"]),
];

/// What one point's per-step CSV(s) say, after dropping warmup rows.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepStats {
    /// Job samples/s (summed over ranks, averaged over steps).
    pub samples_per_sec: f64,
    /// True when samples/s was derived as batch_size × 1000 / step_total_ms (TorchRec rows).
    pub derived_samples_per_sec: bool,
    pub p95_step_total_ms: f64,
    /// Mean of each stage over the kept rows (absent stages are absent, not zero).
    pub stages: BTreeMap<String, f64>,
    pub ranks: usize,
    pub steps: u64,
    pub rows: u64,
    pub warmup_rows: u64,
    pub files: Vec<String>,
    /// What the run's own logs say about how it ran (the transport actually used), each with
    /// the file:line that says it; empty when no log says.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub said: Vec<Said>,
    /// Whether the step total times the whole step (the kind's timing model, checked on the
    /// kept rows); None when the kind declares none or the CSV lacks its columns.
    #[serde(default)]
    pub timing: Option<TimingCheck>,
}

/// One fact a log states: what (`ps`, `nccl`), the value, and the file:line.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Said {
    pub what: String,
    pub value: String,
    pub source: String,
}

#[derive(Default, Clone)]
struct Rank {
    sps: super::Mean,
    /// Its steps, as read (sorted when every file is read): the ranks must cover the same ones,
    /// each once.
    steps: Vec<i64>,
}

/// A cell: `None` when empty, else a number by the collectors' rule (`super::number`).
fn parse(v: &[u8]) -> Option<Result<f64, String>> {
    let s = String::from_utf8_lossy(v);
    if s.trim().is_empty() {
        None
    } else {
        Some(super::number(&s))
    }
}

/// Aggregate per-step CSV files (one merged file, or one per rank).
pub fn collect(files: &[&Path], warmup_steps: i64) -> Result<StepStats, String> {
    collect_timed(files, warmup_steps, None)
}

/// As [`collect`], with the kind's timing model checked on the same rows.
pub fn collect_timed(
    files: &[&Path],
    warmup_steps: i64,
    model: Option<&TimingModel>,
) -> Result<StepStats, String> {
    let mut acc = StepAcc {
        timing: model.map(TimingAcc::new),
        ranks: BTreeMap::new(),
        stage_sum: BTreeMap::new(),
        q: Quantile::new(),
        rows: 0,
        warm: 0,
        derived: false,
    };
    for path in files {
        acc.file(path, warmup_steps, model)?;
    }
    acc.finish(files)
}

/// The columns of one per-step CSV that the collector reads.
struct Columns {
    step_c: usize,
    total_c: usize,
    rank_c: Option<usize>,
    warm_c: Option<usize>,
    sps_c: Option<usize>,
    batch_c: Option<usize>,
    stage_cols: Vec<(&'static str, usize)>,
}

/// What the kept rows of every file add up to so far.
struct StepAcc {
    timing: Option<TimingAcc>,
    ranks: BTreeMap<i64, Rank>,
    stage_sum: BTreeMap<&'static str, super::Mean>,
    q: Quantile,
    rows: u64,
    warm: u64,
    derived: bool,
}

impl StepAcc {
    /// One CSV file: its header, then its rows.
    fn file(
        &mut self,
        path: &Path,
        warmup_steps: i64,
        model: Option<&TimingModel>,
    ) -> Result<(), String> {
        let name = path.display().to_string();
        let (mut rd, mut at) = super::csv_lines::reader(path)?;
        let headers = rd.byte_headers().map_err(|e| at.error(&name, &e))?.clone();
        let names: Vec<&[u8]> = headers.iter().collect();
        let read = [
            "step",
            "step_total_ms",
            "rank",
            "warmup_excluded",
            "samples_per_sec",
            "batch_size",
        ];
        let stages = STAGES.iter().flat_map(|(_, ns)| ns.iter().copied());
        let timed = model.map(|m| {
            m.stages
                .iter()
                .flatten()
                .chain([&m.total])
                .map(String::as_str)
        });
        super::csv_lines::twice(
            &name,
            &names,
            read.into_iter()
                .chain(stages)
                .chain(timed.into_iter().flatten()),
        )?;
        let col = |n: &str| headers.iter().position(|h| h == n.as_bytes());
        let cols = Columns {
            step_c: col("step").ok_or(format!("{name}: no `step` column"))?,
            total_c: col("step_total_ms").ok_or(format!("{name}: no `step_total_ms` column"))?,
            rank_c: col("rank"),
            warm_c: col("warmup_excluded"),
            sps_c: col("samples_per_sec"),
            batch_c: col("batch_size"),
            stage_cols: STAGES
                .iter()
                .filter_map(|(canon, names)| names.iter().find_map(|n| col(n)).map(|c| (*canon, c)))
                .collect(),
        };
        if cols.sps_c.is_none() && cols.batch_c.is_none() {
            return Err(format!(
                "{name}: neither `samples_per_sec` nor `batch_size` (to derive it) is present"
            ));
        }
        if let (Some(t), Some(m)) = (self.timing.as_mut(), model) {
            t.header(m, &col);
        }
        let mut rec = csv::ByteRecord::new();
        loop {
            match rd.read_byte_record(&mut rec) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => return Err(at.error(&name, &e)),
            }
            let line = match rec.position() {
                Some(p) => at.record(&name, p)?,
                None => 0,
            };
            self.row(&rec, &name, line, &cols, warmup_steps)?;
        }
        Ok(())
    }

    /// One row (`line` of the file `name`): a warmup row is counted, any other one summed.
    fn row(
        &mut self,
        rec: &csv::ByteRecord,
        name: &str,
        line: u64,
        cols: &Columns,
        warmup_steps: i64,
    ) -> Result<(), String> {
        let StepAcc {
            timing,
            ranks,
            stage_sum,
            q,
            rows,
            warm,
            derived,
        } = self;
        let num = |c: usize, what: &str| -> Result<f64, String> {
            match parse(rec.get(c).unwrap_or_default()) {
                Some(Ok(v)) => Ok(v),
                Some(Err(e)) => Err(format!("{name}:{line}: `{what}`: {e}")),
                None => Err(format!("{name}:{line}: `{what}` is empty, not a number")),
            }
        };
        // a cell that may be empty; written, it must be a number
        let opt = |c: usize, what: &str| -> Result<Option<f64>, String> {
            parse(rec.get(c).unwrap_or_default())
                .transpose()
                .map_err(|e| format!("{name}:{line}: `{what}`: {e}"))
        };
        // a step, a rank and the warmup flag are whole numbers: `8.7` is no step to round
        let whole = |c: usize, what: &str| -> Result<i64, String> {
            let v = num(c, what)?;
            if v.fract() != 0.0 || v.abs() > 9.0e15 {
                return Err(format!(
                    "{name}:{line}: `{what}`: {v} is not a whole number"
                ));
            }
            Ok(v as i64)
        };
        let step = whole(cols.step_c, "step")?;
        let is_warm = match cols.warm_c {
            Some(c) => match whole(c, "warmup_excluded")? {
                0 => false,
                1 => true,
                v => {
                    return Err(format!(
                        "{name}:{line}: `warmup_excluded`: {v} is neither 0 nor 1"
                    ))
                }
            },
            None => step < warmup_steps,
        };
        if is_warm {
            *warm += 1;
            return Ok(());
        }
        let rank = match cols.rank_c {
            Some(c) => whole(c, "rank")?,
            None => 0,
        };
        // a time or a rate below zero is no measurement (a clock read backwards, a sign
        // slipped in): refused with its place, not averaged in
        let negative = |v: f64, what: &str| -> Result<f64, String> {
            if v < 0.0 {
                Err(format!(
                    "{name}:{line}: `{what}` is {v}: a time or a rate is never below zero"
                ))
            } else {
                Ok(v)
            }
        };
        let total = negative(num(cols.total_c, "step_total_ms")?, "step_total_ms")?;
        let sps = match cols
            .sps_c
            .map(|c| opt(c, "samples_per_sec"))
            .transpose()?
            .flatten()
        {
            Some(v) => negative(v, "samples_per_sec")?,
            None => {
                let b = cols.batch_c.ok_or(format!(
                    "{name}:{line}: `samples_per_sec` is empty and there is no `batch_size`"
                ))?;
                if total <= 0.0 {
                    return Err(format!(
                        "{name}:{line}: step_total_ms is {total}; samples/s cannot be derived"
                    ));
                }
                *derived = true;
                num(b, "batch_size")? * 1000.0 / total
            }
        };
        let r = ranks.entry(rank).or_default();
        r.sps.push(sps);
        r.steps.push(step);
        for (canon, c) in &cols.stage_cols {
            if let Some(v) = opt(*c, canon)? {
                let v = negative(v, canon)?;
                stage_sum.entry(canon).or_default().push(v);
            }
        }
        if let Some(t) = timing.as_mut() {
            let batch = super::timing::batch_of(cols.batch_c, &opt, &format!("{name}:{line}"));
            for (n, c) in t.columns() {
                opt(c, &n)?;
            }
            let cell = |c: usize| opt(c, "stage").ok().flatten();
            t.row(&cell, batch, rank, &format!("{name}:{line}"));
        }
        q.push(total);
        *rows += 1;
        Ok(())
    }

    /// The statistics, once every file is read (an error when no row is left or the ranks
    /// cover different steps).
    fn finish(self, files: &[&Path]) -> Result<StepStats, String> {
        let StepAcc {
            timing,
            ranks,
            stage_sum,
            mut q,
            rows,
            warm,
            derived,
        } = self;
        let files_s: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        let mut ranks = ranks;
        for (id, r) in ranks.iter_mut() {
            r.steps.sort_unstable();
            if let Some(w) = r.steps.windows(2).find(|w| w[0] == w[1]) {
                return Err(format!(
                    "{}: rank {id} has step {} twice (two runs' rows in one file?); each step is one row per rank",
                    files_s.join(", "),
                    w[0]
                ));
            }
        }
        let Some(first) = ranks.values().next().cloned() else {
            return Err(format!(
                "{}: no rows after dropping {warm} warmup rows",
                files_s.join(", ")
            ));
        };
        let span = |r: &Rank| {
            format!(
                "{} steps {}..={}",
                r.sps.n(),
                r.steps.first().unwrap_or(&0),
                r.steps.last().unwrap_or(&0)
            )
        };
        for (id, r) in &ranks {
            if r.steps != first.steps {
                // the first step one rank has and the other lacks
                let odd = r
                    .steps
                    .iter()
                    .zip(&first.steps)
                    .find(|(a, b)| a != b)
                    .map(|(a, b)| *a.min(b))
                    .or_else(|| {
                        r.steps
                            .get(first.steps.len())
                            .or(first.steps.get(r.steps.len()))
                            .copied()
                    });
                return Err(format!(
                "{}: ranks cover different steps (rank {}: {}, rank {id}: {}; first difference at step {}); job throughput needs every rank at every step",
                files_s.join(", "),
                ranks.keys().next().unwrap_or(&0),
                span(&first),
                span(r),
                odd.unwrap_or(0)
            ));
            }
        }
        let at = |e: String| format!("{}: {e}", files_s.join(", "));
        let mut samples_per_sec = 0.0;
        for r in ranks.values() {
            samples_per_sec += r
                .sps
                .value()
                .ok_or_else(|| at("a rank without rows".into()))?;
        }
        if !samples_per_sec.is_finite() {
            return Err(at(format!(
                "the samples/s of {} ranks sum past a 64-bit float",
                ranks.len()
            )));
        }
        let mut stages = BTreeMap::new();
        for (k, m) in stage_sum {
            if let Some(v) = m.value() {
                stages.insert(k.to_string(), v);
            }
        }
        Ok(StepStats {
            samples_per_sec,
            derived_samples_per_sec: derived,
            p95_step_total_ms: q.quantile(0.95).unwrap_or(f64::NAN),
            stages,
            ranks: ranks.len(),
            steps: first.sps.n(),
            rows,
            warmup_rows: warm,
            files: files_s,
            said: Vec::new(),
            timing: timing.and_then(TimingAcc::finish),
        })
    }
}

/// RecStore's `*_main_agg.csv` (long format `metric,mean,p50,p95,max`). Its rows include warmup
/// steps, so expr reports its own aggregates and keeps these only for comparison.
pub fn agg_csv(path: &Path) -> Result<BTreeMap<String, [f64; 4]>, String> {
    let name = path.display().to_string();
    let (mut rd, mut at) = super::csv_lines::reader(path)?;
    let headers = rd.headers().map_err(|e| at.error(&name, &e))?.clone();
    if headers.iter().collect::<Vec<_>>() != ["metric", "mean", "p50", "p95", "max"] {
        return Err(format!(
            "{name}: expected the header metric,mean,p50,p95,max"
        ));
    }
    let mut out = BTreeMap::new();
    for r in rd.records() {
        let r = r.map_err(|e| at.error(&name, &e))?;
        let line = match r.position() {
            Some(p) => at.record(&name, p)?,
            None => 0,
        };
        let mut v = [0.0; 4];
        for (k, slot) in v.iter_mut().enumerate() {
            *slot = super::number(r.get(k + 1).unwrap_or(""))
                .map_err(|e| format!("{name}:{line}: {e}"))?;
        }
        out.insert(r.get(0).unwrap_or("").to_string(), v);
    }
    Ok(out)
}
