//! Same clock: does a workload's own step total time the whole step?
//!
//! A per-step CSV that reports a breakdown (disjoint stages) and a step total says twice how long
//! a step took. When the two disagree, the total does not time what its name says (RecStore's
//! runner at WU@2fb8d826 restarts its step clock before the sparse optimizer step, so its
//! `step_total_ms` covers only the tail of the step) and every number derived from it — samples/s
//! first — is suspect. A kind declares its [`TimingModel`] (which columns are disjoint parts of a
//! step, which is the total, which stage holds data loading); the columns are looked up in the
//! CSV's own header, so a checkout that lacks a stage is checked on the stages it has.
//!
//! The checks, per point, over the kept (non-warmup) steps:
//! - **sum ≠ total**: the median over steps of Σ stages ÷ total is outside 1 ± [`TOLERANCE`];
//! - **a stage larger than the total**: a stage's median above the total's median by more than
//!   the tolerance;
//! - **a constant total**: the total's CV below 0.1 % while the stage sum's is above 5 % (a total
//!   that is not measured at all).
//!
//! And the throughput on the work both lanes of a comparison time: batch_size × 1000 ÷ (Σ stages
//! − the data-loading stage), summed over ranks per step and averaged over steps — the job rule
//! of the headline, on another clock.

use serde::{Deserialize, Serialize};

use crate::util::lang::Lang;
use crate::util::stats::Quantile;

/// Relative tolerance of the checks: 5 % of the total at the median step.
pub const TOLERANCE: f64 = 0.05;

/// A kind's timing model of its per-step CSV.
#[derive(Debug, Clone)]
pub struct TimingModel {
    /// The disjoint parts of a step, each with the column names that may carry it (the first
    /// present is read).
    pub stages: Vec<Vec<String>>,
    /// The column of the step total.
    pub total: String,
    /// The stage that holds data loading (left out of the same-work throughput), if any.
    pub data_loading: Option<String>,
}

impl TimingModel {
    pub fn new(stages: &[&[&str]], total: &str, data_loading: Option<&str>) -> TimingModel {
        TimingModel {
            stages: stages
                .iter()
                .map(|names| names.iter().map(|n| n.to_string()).collect())
                .collect(),
            total: total.into(),
            data_loading: data_loading.map(String::from),
        }
    }
}

/// One thing the check found, with its numbers (each language says it from these).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "check", rename_all = "kebab-case")]
pub enum TimingProblem {
    /// Σ stages ÷ total at the median step is outside 1 ± tolerance.
    SumNotTotal {
        sum_ms: f64,
        total_ms: f64,
        ratio: f64,
    },
    /// One stage alone is longer than the total.
    StageOverTotal {
        stage: String,
        stage_ms: f64,
        total_ms: f64,
    },
    /// The total hardly varies while the stages do.
    ConstantTotal { total_cv: f64, sum_cv: f64 },
}

impl TimingProblem {
    /// The finding in `l`, of the step total `total` over `n` stages.
    fn said(&self, total: &str, n: usize, l: Lang) -> String {
        match self {
            TimingProblem::SumNotTotal {
                sum_ms,
                total_ms,
                ratio,
            } => {
                let (sum, tot, r, tol) = (ms(*sum_ms), ms(*total_ms), x(*ratio), TOLERANCE * 100.0);
                l.t(
                    format!("中位步上 {n} 个阶段之和为 {sum} ms，而 {total} 为 {tot} ms（{r}×，容差 {tol:.0} %）"),
                    format!("the {n} stages sum to {sum} ms at the median step but {total} is {tot} ms ({r}×, tolerance {tol:.0} %)"),
                )
            }
            TimingProblem::StageOverTotal {
                stage,
                stage_ms,
                total_ms,
            } => {
                let (one, tot) = (ms(*stage_ms), ms(*total_ms));
                l.t(
                    format!("单个阶段 {stage}（{one} ms）比 {total}（{tot} ms）还长"),
                    format!("{stage} alone ({one} ms) is longer than {total} ({tot} ms)"),
                )
            }
            TimingProblem::ConstantTotal { total_cv, sum_cv } => {
                let (t, st) = (total_cv * 100.0, sum_cv * 100.0);
                l.t(
                    format!("{total} 几乎不变（CV {t:.3} %），而各阶段在变（CV {st:.1} %）"),
                    format!(
                        "{total} is constant (CV {t:.3} %) while the stages vary (CV {st:.1} %)"
                    ),
                )
            }
        }
    }
}

fn ms(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn x(v: f64) -> String {
    format!("{v:.2}")
}

/// What the check of one point found.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimingCheck {
    /// The stage columns read, as the CSV names them.
    pub stages: Vec<String>,
    /// Declared stages the CSV does not have.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub absent: Vec<String>,
    pub total: String,
    #[serde(default)]
    pub data_loading: Option<String>,
    pub steps: u64,
    pub median_total_ms: f64,
    pub median_stage_sum_ms: f64,
    /// Median over steps of Σ stages ÷ total.
    pub median_ratio: f64,
    /// The stage with the largest median, and that median.
    pub largest_stage: String,
    pub largest_stage_ms: f64,
    /// Each stage's median over the kept steps.
    pub stage_medians: Vec<(String, f64)>,
    pub tolerance: f64,
    /// Empty: the total times the step.
    pub problems: Vec<TimingProblem>,
    /// Job samples/s on Σ stages less the data-loading stage (None: not derivable, see
    /// `same_work_missing`).
    #[serde(default)]
    pub same_work_samples_per_sec: Option<f64>,
    #[serde(default)]
    pub same_work_missing: Option<String>,
    /// How the same-work figure is derived, in words.
    pub same_work_rule: String,
}

impl TimingCheck {
    pub fn suspect(&self) -> bool {
        !self.problems.is_empty()
    }

    /// Every finding in English (the terminal's and the journal's language), joined.
    pub fn english(&self) -> String {
        self.said(Lang::En)
    }

    pub fn chinese(&self) -> String {
        self.said(Lang::Zh)
    }

    fn said(&self, l: Lang) -> String {
        self.problems
            .iter()
            .map(|p| p.said(&self.total, self.stages.len(), l))
            .collect::<Vec<_>>()
            .join(l.t("；", "; "))
    }
}

/// Running mean and variance (Welford).
#[derive(Default, Clone, Copy)]
struct Moments {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Moments {
    fn push(&mut self, v: f64) {
        self.n += 1;
        let d = v - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (v - self.mean);
    }
    fn cv(&self) -> Option<f64> {
        if self.n < 3 || self.mean <= 0.0 {
            return None;
        }
        Some((self.m2 / (self.n - 1) as f64).sqrt() / self.mean)
    }
}

/// The columns of one CSV header that the model reads.
#[derive(Debug, Clone)]
pub struct Columns {
    /// (stage as the CSV names it, its column)
    stages: Vec<(String, usize)>,
    absent: Vec<String>,
    total: usize,
    data_loading: Option<usize>,
}

impl Columns {
    /// The model's columns in this header; None when it has no total or fewer than two stages
    /// (nothing to check against).
    pub fn find(model: &TimingModel, col: &dyn Fn(&str) -> Option<usize>) -> Option<Columns> {
        let total = col(&model.total)?;
        let mut stages = Vec::new();
        let mut absent = Vec::new();
        for names in &model.stages {
            match names.iter().find_map(|n| col(n).map(|c| (n.clone(), c))) {
                Some(s) => stages.push(s),
                None => absent.push(names[0].clone()),
            }
        }
        if stages.len() < 2 {
            return None;
        }
        let data_loading = model
            .data_loading
            .as_deref()
            .and_then(|d| stages.iter().find(|(n, _)| n == d).map(|(_, c)| *c));
        Some(Columns {
            stages,
            absent,
            total,
            data_loading,
        })
    }
}

/// A cell of a row read as a number (`None`: empty), or why it is none; `what` names its column.
pub type CellReader<'a> = dyn Fn(usize, &str) -> Result<Option<f64>, String> + 'a;

/// A row's batch size for the same-work figure, or why it has none, said at `at` (`file:line`):
/// no `batch_size` column, an empty cell, a cell that is no number (`cell(c, what)` reads one).
pub fn batch_of(col: Option<usize>, cell: &CellReader<'_>, at: &str) -> Result<f64, String> {
    let c = col.ok_or("the CSV has no `batch_size` column")?;
    cell(c, "batch_size")?.ok_or_else(|| format!("{at}: `batch_size` is empty"))
}

/// The check's accumulator: fed one kept row at a time, memory bounded by the quantiles'.
pub struct TimingAcc {
    cols: Option<Columns>,
    data_loading: Option<String>,
    total_name: String,
    ratio: Quantile,
    total: Quantile,
    sum: Quantile,
    per_stage: Vec<Quantile>,
    total_m: Moments,
    sum_m: Moments,
    /// Per rank: (Σ same-work samples/s, rows)
    same: std::collections::BTreeMap<i64, (f64, u64)>,
    same_missing: Option<String>,
    rows: u64,
}

impl TimingAcc {
    pub fn new(model: &TimingModel) -> TimingAcc {
        TimingAcc {
            cols: None,
            data_loading: model.data_loading.clone(),
            total_name: model.total.clone(),
            ratio: Quantile::new(),
            total: Quantile::new(),
            sum: Quantile::new(),
            per_stage: Vec::new(),
            total_m: Moments::default(),
            sum_m: Moments::default(),
            same: Default::default(),
            same_missing: None,
            rows: 0,
        }
    }

    /// A new file's header: the columns of this file (files of one point share a header; a
    /// file without the columns is left out of the check).
    pub fn header(&mut self, model: &TimingModel, col: &dyn Fn(&str) -> Option<usize>) {
        self.cols = Columns::find(model, col);
        if let Some(c) = &self.cols {
            if self.per_stage.len() != c.stages.len() {
                self.per_stage = c.stages.iter().map(|_| Quantile::new()).collect();
            }
        }
    }

    /// The columns the check reads (each must hold a number or nothing).
    pub fn columns(&self) -> Vec<(String, usize)> {
        match &self.cols {
            Some(c) => c.stages.clone(),
            None => Vec::new(),
        }
    }

    /// One kept row: `cell(c)` is the number in column c (None when empty), `batch` the row's
    /// batch size or why there is none (the same-work figure is then missing, with that reason),
    /// `rank` its rank. An empty stage or total leaves the row
    /// out of the check; an unreadable one is the caller's error already.
    pub fn row(
        &mut self,
        cell: &dyn Fn(usize) -> Option<f64>,
        batch: Result<f64, String>,
        rank: i64,
        at: &str,
    ) {
        let Some(c) = &self.cols else { return };
        let Some(total) = cell(c.total) else { return };
        let mut sum = 0.0;
        let mut values = Vec::with_capacity(c.stages.len());
        for (_, col) in &c.stages {
            let Some(v) = cell(*col) else { return };
            sum += v;
            values.push(v);
        }
        self.rows += 1;
        if total > 0.0 {
            self.ratio.push(sum / total);
        }
        self.total.push(total);
        self.sum.push(sum);
        for (q, v) in self.per_stage.iter_mut().zip(values) {
            q.push(v);
        }
        self.total_m.push(total);
        self.sum_m.push(sum);
        let dl = c.data_loading.and_then(cell).unwrap_or(0.0);
        let work = sum - dl;
        match batch {
            _ if self.same_missing.is_some() => {}
            Err(why) => self.same_missing = Some(why),
            Ok(_) if work <= 0.0 => {
                self.same_missing = Some(format!(
                "{at}: the stages less data loading sum to {work} ms; samples/s cannot be derived"
            ))
            }
            Ok(b) => {
                let e = self.same.entry(rank).or_insert((0.0, 0));
                e.0 += b * 1000.0 / work;
                e.1 += 1;
            }
        }
    }

    /// The check, or None when no file had the model's columns (or no row was kept).
    pub fn finish(mut self) -> Option<TimingCheck> {
        let c = self.cols.clone()?;
        if self.rows == 0 {
            return None;
        }
        let median_total = self.total.quantile(0.5).unwrap_or(f64::NAN);
        let median_sum = self.sum.quantile(0.5).unwrap_or(f64::NAN);
        let median_ratio = self.ratio.quantile(0.5).unwrap_or(f64::NAN);
        let stage_medians: Vec<(String, f64)> = c
            .stages
            .iter()
            .zip(self.per_stage.iter_mut())
            .map(|((n, _), q)| (n.clone(), q.quantile(0.5).unwrap_or(f64::NAN)))
            .collect();
        let (largest_stage, largest_ms) =
            stage_medians
                .iter()
                .cloned()
                .fold((String::new(), f64::NEG_INFINITY), |a, b| {
                    if b.1 > a.1 {
                        b
                    } else {
                        a
                    }
                });
        let mut problems = Vec::new();
        if !median_ratio.is_finite() || (median_ratio - 1.0).abs() > TOLERANCE {
            problems.push(TimingProblem::SumNotTotal {
                sum_ms: median_sum,
                total_ms: median_total,
                ratio: median_ratio,
            });
        }
        if largest_ms > median_total * (1.0 + TOLERANCE) {
            problems.push(TimingProblem::StageOverTotal {
                stage: largest_stage.clone(),
                stage_ms: largest_ms,
                total_ms: median_total,
            });
        }
        if let (Some(tc), Some(sc)) = (self.total_m.cv(), self.sum_m.cv()) {
            if tc < 0.001 && sc > 0.05 {
                problems.push(TimingProblem::ConstantTotal {
                    total_cv: tc,
                    sum_cv: sc,
                });
            }
        }
        let (same, missing) = match self.same_missing {
            Some(m) => (None, Some(m)),
            None if self.same.is_empty() => (None, Some("no row to derive it from".into())),
            None => (
                Some(self.same.values().map(|(s, n)| s / *n as f64).sum()),
                None,
            ),
        };
        let stages: Vec<String> = c.stages.iter().map(|(n, _)| n.clone()).collect();
        let dl = c.data_loading.and_then(|_| self.data_loading.clone());
        let rule = match &dl {
            Some(d) => format!(
                "batch_size × 1000 / (Σ {} stages − {d}), per rank and step; ranks summed per step, averaged over steps",
                stages.len()
            ),
            None => format!(
                "batch_size × 1000 / Σ {} stages, per rank and step; ranks summed per step, averaged over steps",
                stages.len()
            ),
        };
        Some(TimingCheck {
            stages,
            absent: c.absent.clone(),
            total: self.total_name,
            data_loading: dl,
            steps: self.rows,
            median_total_ms: median_total,
            median_stage_sum_ms: median_sum,
            median_ratio,
            largest_stage,
            largest_stage_ms: largest_ms,
            stage_medians,
            tolerance: TOLERANCE,
            problems,
            same_work_samples_per_sec: same,
            same_work_missing: missing,
            same_work_rule: rule,
        })
    }
}
