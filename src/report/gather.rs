//! Gather a result directory into report data: the experiment from the journal, each point's
//! status from the manifest, its measure from its kind's collector, then repeats aggregated.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::Value;

use crate::kind_api::data::{Group, Measure, Metric, PointReport, ReportData};
use crate::kinds;
use crate::model::expand::{self, Filter};
use crate::model::Experiment;
use crate::results::collect::steps::{self, StepStats};
use crate::results::collect::PointDir;
use crate::results::event::{Header, RunEvent};
use crate::results::reason::{status_word, Reason};
use crate::results::{journal, manifest};
use crate::util::lang::Lang;
use crate::util::stats;

/// The experiment as the run resolved it (from the journal header).
pub fn experiment_of(dir: &Path) -> Result<(Experiment, Header), String> {
    let read = journal::shared(&dir.join("journal.jsonl"));
    experiment_from(dir, read.0.iter().map(|(_, e)| e))
}

/// The experiment from a journal's events already read (the last header).
fn experiment_from<'a>(
    dir: &Path,
    events: impl DoubleEndedIterator<Item = &'a RunEvent>,
) -> Result<(Experiment, Header), String> {
    if !dir.is_dir() {
        return Err(format!("{}: no such result directory", dir.display()));
    }
    let journal = dir.join("journal.jsonl");
    if journal.exists() && !journal.is_file() {
        return Err(format!(
            "{}: its journal.jsonl is not a regular file (a directory, a FIFO or a device): not read",
            dir.display()
        ));
    }
    if !journal.is_file() {
        return Err(format!(
            "{}: not a result directory (it has no journal.jsonl)",
            dir.display()
        ));
    }
    let header = events
        .rev()
        .find_map(RunEvent::header)
        .cloned()
        .ok_or_else(|| crate::results::journal::no_header(dir))?;
    // the data the run stored; an older journal's (or one whose data does not read) KDL
    let stored = header.stored_model().and_then(|mut e| {
        crate::kinds::restore(&mut e).ok()?;
        Some(e)
    });
    let exp = match stored {
        Some(e) => e,
        None => header.experiment(&format!("{}/journal.jsonl (resolved)", dir.display()))?,
    };
    Ok((exp, header))
}

/// Read a result directory into report data, in the experiment's language.
pub fn load(dir: &Path) -> Result<ReportData, String> {
    load_in(dir, None)
}

/// Read a result directory into report data, in `lang` (`--lang`) or else the experiment's.
pub fn load_in(dir: &Path, lang: Option<Lang>) -> Result<ReportData, String> {
    if let Some(what) = crate::util::not_a_dir(dir) {
        return Err(format!("{}: {what}", dir.display()));
    }
    // the journal is read once; every part below works on these events
    let read = journal::shared(&dir.join("journal.jsonl"));
    let (numbered, bad) = (&read.0, &read.1);
    let events: Vec<&RunEvent> = numbered.iter().map(|(_, e)| e).collect();
    let (exp, header) = experiment_from(dir, events.iter().copied())?;
    let lang = lang.unwrap_or_else(|| kinds::language(&exp));
    let mut w = Warnings::default();
    // a line that is not an event is said with its number; the lines after it are still read
    for (n, why) in bad {
        w.push(
            lang,
            format!("journal.jsonl:{n} 不是事件，已跳过（{why}）；其余各行已读取"),
            format!(
                "journal.jsonl:{n} is not an event and was skipped ({why}); the other lines were read"
            ),
        );
    }
    let ctx = PointCtx {
        dir,
        exp: &exp,
        lang,
        statuses: point_statuses(dir, &events, lang, &mut w),
        timings: point_timings(numbered),
        accepted_exits: accepted_exits(&events),
        placed: placements(&events),
        gpu_steps: if exp.telemetry.is_some() {
            gpu_steps(&events)
        } else {
            Default::default()
        },
        clocks: clock_offsets(&events),
        causes: causes(&events),
        recorded: recorded_values(&events),
        reread: Default::default(),
        lost: Default::default(),
    };
    let mut points = Vec::new();
    let mut missing = Vec::new();
    // only the points the runs into this directory were asked for (`--only`), when recorded
    let asked = asked_ids(&events);
    let mut point_ids = Vec::new();
    for p in expand::expand(&exp, &Filter::default()) {
        if !asked.is_empty() && !asked.contains(&p.run_id) {
            continue;
        }
        point_ids.push(p.run_id.clone());
        let Some(pr) = ctx.point(&p) else {
            continue;
        };
        if pr.measure.is_none() {
            missing.push(missing_entry(&pr, lang));
        }
        points.push(pr);
    }
    // a log or output edited since the run: the report shows what the files say now, and
    // says that the run read another number
    let reread = ctx.reread.take();
    let changed: Vec<(String, f64)> = reread
        .iter()
        .map(|(id, then, _)| (id.clone(), *then))
        .collect();
    // a bench whose `collect` an earlier run of the directory read otherwise (a `--force`
    // resume after an edit): the cause of a number read otherwise, not a changed file
    let collect_changed = if reread.is_empty() && points.iter().all(|p| p.status == "ok") {
        Vec::new()
    } else {
        collect_changed(&events, &exp)
    };
    reread_warnings(reread, &points, &collect_changed, lang, &mut w);
    // a log or output gone since the run: the number it gave is missing now, and said
    let lost: Vec<(String, f64, String)> = ctx.lost.take();
    const SAID: usize = 20;
    for (id, then, why) in lost.iter().take(SAID) {
        use crate::util::fmt::km;
        w.push(
            lang,
            format!(
                "{id}：运行时读到 {}，现在它的文件给不出数值（{why}）；报告显示 —",
                km(*then)
            ),
            format!(
                "{id}: the run read {}; its files give no number now ({why}); the report shows —",
                km(*then)
            ),
        );
    }
    if lost.len() > SAID {
        w.push(
            lang,
            format!("另有 {} 个点同样失去了运行时读到的数值", lost.len() - SAID),
            format!(
                "{} more points lost the number the run read in the same way",
                lost.len() - SAID
            ),
        );
    }
    mixed_units_warnings(&points, lang, &mut w);
    let groups = group(&exp, &points);
    adaptive_warnings(&events, &exp, &points, lang, &mut w);
    let mut data = ReportData {
        dir: dir.display().to_string(),
        experiment: exp.name.clone(),
        git_head: header
            .first_host("git_head")
            .unwrap_or("unknown")
            .to_string(),
        hostname: header
            .first_host("hostname")
            .unwrap_or("unknown")
            .to_string(),
        points,
        groups,
        missing,
        warnings: w.en,
        warnings_said: w.said,
        lost: lost.into_iter().map(|l| l.0).collect(),
        changed,
        point_ids,
        collect_changed,
        stopped_before_e2e: failed_test(&events, lang),
        expectations: Vec::new(),
        lang,
        exp: Some(exp),
        by_id: Default::default(),
    };
    data.expectations = crate::report::expect::evaluate(
        dir,
        &data,
        header.expect_at.as_ref().unwrap_or(&Value::Null),
    );
    Ok(data)
}

/// The first five of `v`, and how many there are in all when more.
fn few(v: &[String]) -> String {
    let mut t = v.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if v.len() > 5 {
        t.push_str(&format!(", … ({} in all)", v.len()));
    }
    t
}

/// A bench whose points' headline carries other units in their text (`lat=999.0ms` in one,
/// `lat=1.001s` in another: a tool that scales its unit), said once per bench: its means and
/// ratios put them together as they are (helper 87).
fn mixed_units_warnings(points: &[PointReport], lang: Lang, w: &mut Warnings) {
    // bench → (headline metric, unit → its points), in the points' order
    type Units<'a> = BTreeMap<&'a str, Vec<String>>;
    let mut by_bench: Vec<(&str, &str, Units)> = Vec::new();
    for p in points {
        let Some(m) = p.metrics.first() else { continue };
        let at = match by_bench.iter().position(|(b, _, _)| *b == p.bench) {
            Some(i) => i,
            None => {
                by_bench.push((&p.bench, &m.name, BTreeMap::new()));
                by_bench.len() - 1
            }
        };
        // a number without a unit goes with any
        if by_bench[at].1 == m.name && !m.unit.is_empty() {
            by_bench[at]
                .2
                .entry(m.unit.as_str())
                .or_default()
                .push(p.run_id.clone());
        }
    }
    for (bench, metric, units) in by_bench.into_iter().filter(|(_, _, u)| u.len() > 1) {
        let each: Vec<String> = units
            .iter()
            .map(|(u, ids)| format!("`{u}`: {}", few(ids)))
            .collect();
        w.push(
            lang,
            format!(
                "bench `{bench}`：各点的 `{metric}` 在文本中带着不同的单位（{}）；均值与比值把它们原样放在一起。请只输出一种单位，或在 pattern 中写明单位",
                each.join("；")
            ),
            format!(
                "bench `{bench}`: its points' `{metric}` carries other units in their text ({}); the means and ratios put them together as they are. Print one unit, or pin it in the pattern",
                each.join("; ")
            ),
        );
    }
}

/// A number the files give otherwise than the run read, said per point with its likely
/// cause: the bench's `collect` changed since, else a log or output changed.
fn reread_warnings(
    reread: Vec<(String, f64, f64)>,
    points: &[PointReport],
    collect_changed: &[String],
    lang: Lang,
    w: &mut Warnings,
) {
    for (id, then, now) in reread {
        use crate::util::fmt::km;
        let by_collect = points
            .iter()
            .find(|p| p.run_id == id)
            .is_some_and(|p| collect_changed.contains(&p.bench));
        let (zh, en) = if by_collect {
            (
                "此 bench 的 `collect` 自那次运行后已改动",
                "the bench's `collect` changed since the run",
            )
        } else {
            (
                "此后日志或输出被改动？",
                "a log or output changed since the run?",
            )
        };
        w.push(
            lang,
            format!(
                "{id}：文件现在给出 {}，运行时读到的是 {}（{zh}）；报告采用现在的值",
                km(now),
                km(then)
            ),
            format!(
                "{id}: its files now give {} where the run read {} ({en}); the report shows {}",
                km(now),
                km(then),
                km(now)
            ),
        );
    }
}

/// The report's warnings, in English and in the report's language.
#[derive(Default)]
struct Warnings {
    en: Vec<String>,
    said: Vec<String>,
}

impl Warnings {
    fn push(&mut self, lang: Lang, zh: String, en: String) {
        self.said.push(lang.t(zh, en.clone()));
        self.en.push(en);
    }
}

/// Each point's status and reason: the journal's (the record each event is appended to the
/// moment it happens), and the manifest's for points the journal lacks (a journal cut short).
/// Where the two disagree, or the manifest alone knows a point, it is said.
/// A point whose steps started and that neither records is interrupted.
fn point_statuses(
    dir: &Path,
    events: &[&RunEvent],
    lang: Lang,
    w: &mut Warnings,
) -> BTreeMap<String, (String, String)> {
    let mut m = recorded_statuses(dir, events, lang, w);
    // a point whose steps started but that has no outcome anywhere: expr was stopped while it
    // ran (a kill -9 leaves no word of it), not "not run"
    for e in events {
        if let RunEvent::Process(p) = e {
            if let Some(id) = p.run_id.as_ref().filter(|id| !m.contains_key(*id)) {
                m.insert(
                    id.clone(),
                    (
                        "interrupted".into(),
                        "expr stopped while it ran: no outcome was recorded".into(),
                    ),
                );
            }
        }
    }
    m
}

/// The points' statuses the journal and the manifest record (the journal's where both do).
fn recorded_statuses(
    dir: &Path,
    events: &[&RunEvent],
    lang: Lang,
    w: &mut Warnings,
) -> BTreeMap<String, (String, String)> {
    let mut m = from_journal(events);
    let rows = match manifest::read_checked(&dir.join("manifest.csv")) {
        Ok(Some(rows)) => rows,
        Ok(None) => return m,
        Err(e) => {
            w.push(
                lang,
                format!("{e}；各点的状态已从 journal.jsonl 重建"),
                format!("{e}; the points' statuses were rebuilt from journal.jsonl"),
            );
            return m;
        }
    };
    let (mut unrecorded, mut differ) = (Vec::new(), Vec::new());
    for r in rows {
        match m.get(&r.run_id) {
            // a point the journal has no outcome for was interrupted or not reached: a row
            // that says so (`expr report` writes them for a run stopped hard) agrees with it
            None if r.status == "interrupted" => {
                m.insert(r.run_id, (r.status, r.reason));
            }
            None => {
                unrecorded.push(r.run_id.clone());
                m.insert(r.run_id, (r.status, r.reason));
            }
            Some((s, _)) if !crate::results::journal::agrees(s, &r.status) => {
                differ.push(format!(
                    "{} ({} in manifest.csv, {s} in journal.jsonl)",
                    r.run_id, r.status
                ));
            }
            Some(_) => {}
        }
    }
    if !unrecorded.is_empty() {
        w.push(
            lang,
            format!(
                "manifest.csv 列出 {} 个 journal.jsonl 没有记录的点（journal 被截断？）：{}；它们的状态取自 manifest.csv，启动步骤的计时（wall_ms、user_ms、sys_ms、max_rss_mib）缺失",
                unrecorded.len(),
                few(&unrecorded)
            ),
            format!(
                "manifest.csv lists {} point(s) journal.jsonl has no record of (a journal cut short?): {}; their status is manifest.csv's, and their launch steps' timing (wall_ms, user_ms, sys_ms, max_rss_mib) is missing",
                unrecorded.len(),
                few(&unrecorded)
            ),
        );
    }
    if !differ.is_empty() {
        w.push(
            lang,
            format!(
                "manifest.csv 与 journal.jsonl 对 {} 个点的状态不一致：{}；采用 journal 的记录",
                differ.len(),
                few(&differ)
            ),
            format!(
                "manifest.csv and journal.jsonl disagree on {} point(s): {}; the journal's is used",
                differ.len(),
                few(&differ)
            ),
        );
    }
    m
}

/// A generic bench's `collect` as text (a kind's own collection: empty).
fn collect_of(b: &crate::model::Bench) -> String {
    match &b.placement {
        crate::model::Placement::Steps { collect, .. } => {
            serde_json::to_string(collect).unwrap_or_default()
        }
        _ => String::new(),
    }
}

/// The benches whose `collect` an earlier run into the directory read otherwise than the
/// experiment as the last run read it (`exp`): each distinct earlier resolved text parsed once.
fn collect_changed(events: &[&RunEvent], exp: &Experiment) -> Vec<String> {
    // each distinct resolved text once
    let mut headers: BTreeMap<&str, &Header> = BTreeMap::new();
    for h in events.iter().filter_map(|e| e.header()) {
        if let Some(t) = h.resolved.as_deref() {
            headers.entry(t).or_insert(h);
        }
    }
    if headers.len() < 2 {
        return Vec::new();
    }
    let now = |b: &str| exp.benches.iter().find(|x| x.name == b).map(collect_of);
    let mut out: Vec<String> = Vec::new();
    for h in headers.values() {
        let Ok(then) = h.experiment("journal") else {
            continue;
        };
        for b in &then.benches {
            let was = collect_of(b);
            if now(&b.name).is_some_and(|n| n != was) && !out.contains(&b.name) {
                out.push(b.name.clone());
            }
        }
    }
    out
}

/// The run ids the runs into this directory were asked for (`--only`), when recorded.
fn asked_ids(events: &[&RunEvent]) -> std::collections::BTreeSet<String> {
    events
        .iter()
        .filter_map(|e| e.header())
        .filter_map(|h| h.run_ids.as_ref())
        .flatten()
        .cloned()
        .collect()
}

/// Each remote host's clock against the run's (preflight read it): its samples' stamps.
fn clock_offsets(events: &[&RunEvent]) -> crate::results::telemetry::Clocks {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Machine(m) => m
                .clock
                .and_then(|c| c.offset())
                .map(|o| (m.host.clone(), o)),
            _ => None,
        })
        .collect()
}

/// Adaptive groups that reached their max runs without the spread asked for, from every run
/// into this directory (one whose max is no longer the experiment's is not said).
fn adaptive_warnings(
    events: &[&RunEvent],
    exp: &Experiment,
    points: &[PointReport],
    lang: Lang,
    w: &mut Warnings,
) {
    // every attempt's (a resume keeps the points an earlier one ran, and their notes; helper
    // 88: only the last attempt's were said): a point's note stands until the point runs
    // again (helper 89: a `--force` re-run that converged kept it), for a point of this
    // experiment whose group's rule still holds it unconverged
    // looked up, not searched: a campaign's points are many
    let bench_of: HashMap<&str, &str> = points
        .iter()
        .map(|p| (p.run_id.as_str(), p.bench.as_str()))
        .collect();
    let rule_of = |id: &str| {
        let bench = *bench_of.get(id)?;
        exp.benches.iter().find(|b| b.name == bench)?.adaptive
    };
    let mut said: Vec<&crate::results::event::Adaptive> = Vec::new();
    for e in events {
        match e {
            RunEvent::Point(p) => said.retain(|s| s.run_id != p.run_id),
            RunEvent::Adaptive(a) => {
                said.retain(|s| s.run_id != a.run_id);
                said.push(a);
            }
            _ => {}
        }
    }
    for a in said {
        let id = a.run_id.as_deref().unwrap_or("?");
        let rule = rule_of(id);
        let still = |got: Option<f64>, want: Option<f64>| match (got, want) {
            (Some(g), Some(w)) => g > w,
            _ => true,
        };
        if a.max.is_some()
            && !rule.is_some_and(|r| {
                Some(r.max) == a.max
                    && still(a.cv_percent, r.until_cv)
                    && still(a.ci95_percent, r.until_ci)
            })
        {
            continue;
        }
        w.push(
            lang,
            format!("自适应重复：{}（{id}）", a.said(lang)),
            format!("adaptive repeats: {} ({id})", a.note),
        );
    }
}

/// A point without a measure, as the report lists it: never ran, interrupted, failed (with its
/// reason and log), or ran without data.
fn missing_entry(pr: &PointReport, lang: Lang) -> String {
    let why = match &pr.problem {
        Some(e) => crate::results::reason::quoted(lang, e),
        None => pr.said.clone(),
    };
    let text = match pr.status.as_str() {
        "missing" => lang.t("未运行", "not run").to_string(),
        // one the stopped run never started says so ("not run: interrupted")
        "interrupted" if pr.said.starts_with(lang.t("未运行", "not run")) => pr.said.clone(),
        s @ "interrupted" => status_word(lang, s).to_string(),
        s if why.is_empty() => status_word(lang, s).to_string(),
        s => format!("{}{}{why}", status_word(lang, s), lang.t("：", ": ")),
    };
    format!("{}{}", pr.run_id, lang.paren(&text))
}

/// What each point of a result directory is read against, all from the journal read once.
struct PointCtx<'a> {
    dir: &'a Path,
    exp: &'a Experiment,
    lang: Lang,
    statuses: BTreeMap<String, (String, String)>,
    timings: BTreeMap<String, (Value, usize)>,
    accepted_exits: BTreeMap<String, i64>,
    placed: BTreeMap<String, String>,
    gpu_steps: HashMap<String, Vec<GpuStep>>,
    clocks: crate::results::telemetry::Clocks,
    causes: BTreeMap<String, Reason>,
    /// Each point's headline as the run read it (its last point event's `value`).
    recorded: BTreeMap<String, f64>,
    /// Points whose files now give another headline than the run read: (run id, then, now).
    reread: std::cell::RefCell<Vec<(String, f64, f64)>>,
    /// Points the run read a number for whose files give none now: (run id, then, why).
    lost: std::cell::RefCell<Vec<(String, f64, String)>>,
}

impl PointCtx<'_> {
    /// One point's report; `None` for a run its adaptive group did not need.
    fn point(&self, p: &expand::Point) -> Option<PointReport> {
        let bench = &self.exp.benches[p.bench];
        let axes: Vec<(String, String)> = p
            .axes
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        let (status, reason) = match self.statuses.get(p.run_id.as_str()) {
            Some((s, r)) => (s.clone(), r.clone()),
            None => ("missing".to_string(), "not run".to_string()),
        };
        // the recorded reason in the report's language, when the journal holds it as data
        // that says what the manifest says
        let said = self
            .causes
            .get(p.run_id.as_str())
            .filter(|c| first_line(&c.render(Lang::En)) == reason)
            .map(|c| first_line(&c.render(self.lang)))
            .unwrap_or_else(|| reason.clone());
        // adaptive repeats: a run its group did not need is not a point of the result
        if status == "skipped" {
            return None;
        }
        let kind = kinds::of(bench.kind);
        let agg = kind
            .own_aggregates()
            .iter()
            .map(|n| self.dir.join("outputs").join(&p.run_id).join(n))
            .find(|f| f.exists())
            .map(|f| steps::agg_csv(&f));
        let (runner_aggregate, runner_aggregate_problem) = match agg {
            Some(Ok(a)) => (Some(a), None),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        let mut pr = PointReport {
            runner_aggregate,
            runner_aggregate_problem,
            run_id: p.run_id.clone(),
            bench: bench.name.clone(),
            lane: p.lane_name.clone(),
            axes,
            repeat: p.repeat,
            status: status.clone(),
            reason,
            said,
            measure: None,
            metrics: Vec::new(),
            problem: None,
            telemetry: None,
            ran: self
                .timings
                .get(p.run_id.as_str())
                .and_then(|(t, _)| ran_of(t)),
            placed: self.placed.get(p.run_id.as_str()).cloned(),
            perturbed: crate::plan::profile::of(bench, &p.lane_name, p.repeat)
                .filter(|pr| !pr.stats)
                .map(|pr| format!("profiled with {} (`{}`)", pr.tool, pr.text())),
            rss_floor_mib: None,
            accepted_exit: self.accepted_exits.get(p.run_id.as_str()).copied(),
        };
        // a point that ran to the end is read again, also when an earlier report found no data
        let timing = self.timings.get(p.run_id.as_str());
        if status == "ok" && !kind.declares_metrics(bench) {
            wall_time_measure(kind, bench, timing, &mut pr);
        } else if status == "ok" || status == "no-data" {
            let at = PointDir {
                dir: self.dir,
                run_id: &p.run_id,
                lane: &p.lane_name,
                warmup: p.int("warmup-steps"),
                logs: None,
            };
            match kind.collect(&at, bench) {
                Ok(m) => {
                    pr.metrics = kind.metrics(bench, &m);
                    pr.measure = Some(m);
                    // read now (its artifact, or the collector, changed since the run): a point
                    // with values, as compare, history and the expects take it, and said
                    if pr.status == "no-data" {
                        pr.status = "ok".into();
                        let r = |r: &str| {
                            if r.is_empty() {
                                "—".to_string()
                            } else {
                                r.to_string()
                            }
                        };
                        pr.reason = format!(
                            "no data when it ran ({}); read again by `expr report`",
                            r(&pr.reason)
                        );
                        pr.said = self
                            .lang
                            .t(
                                format!("运行时无数据（{}）；`expr report` 重新读取", r(&pr.said)),
                                format!(
                                    "no data when it ran ({}); read again by `expr report`",
                                    r(&pr.said)
                                ),
                            )
                            .to_string();
                    }
                }
                Err(e) => {
                    pr.status = "no-data".into();
                    // a cell a reason quotes may hold a secret the step printed
                    pr.problem = Some(crate::util::secret::mask_known(&e));
                }
            }
        }
        // the number the run read (the journal's), against what the files give now: another
        // one, or none, is said
        if let (true, Some(&then)) = (status == "ok", self.recorded.get(p.run_id.as_str())) {
            match pr.measure.as_ref().map(|m| m.headline()) {
                Some(now)
                    if now.is_finite()
                        && then.is_finite()
                        && (now - then).abs() > 1e-9 * now.abs().max(then.abs()) =>
                {
                    self.reread.borrow_mut().push((p.run_id.clone(), then, now));
                }
                None if then.is_finite() => {
                    let why = pr.problem.clone().unwrap_or_default();
                    self.lost.borrow_mut().push((p.run_id.clone(), then, why));
                }
                _ => {}
            }
        }
        // every point that ran to the end: its launch steps' time and resources (wait4)
        if let (Some((t, line)), true) = (timing, pr.measure.is_some()) {
            wait4_metrics(&mut pr, t, *line);
        }
        if pr.measure.is_some() {
            let steps = self
                .gpu_steps
                .get(p.run_id.as_str())
                .map_or(&[][..], Vec::as_slice);
            telemetry_metrics(self.dir, self.exp, &mut pr, steps, &self.clocks);
        }
        Some(pr)
    }
}

/// A bench with no collector: the point's own wall time from spawn to exit is its measurement.
fn wall_time_measure(
    kind: &kinds::KindSpec,
    bench: &crate::model::Bench,
    timing: Option<&(Value, usize)>,
    pr: &mut PointReport,
) {
    let wall = timing.map(|(t, line)| {
        (
            t["wall_ms"].as_f64().filter(|w| w.is_finite() && *w >= 0.0),
            t,
            line,
        )
    });
    match wall {
        Some((None, t, line)) => {
            pr.status = "no-data".into();
            pr.problem = Some(format!(
                "journal.jsonl:{line}: the point's timing holds no `wall_ms` that is a time ({}): nothing was measured",
                if t["wall_ms"].is_null() { "none".to_string() } else { t["wall_ms"].to_string() }
            ));
        }
        Some((Some(wall), t, line)) => {
            // hyperfine's way: the shell's measured spawn time is subtracted
            let (value, how) = match t["shell_overhead_ms"].as_f64() {
                Some(o) => less_shell(wall, o, "wall_ms", "shell_overhead_ms"),
                None => (wall, "wall_ms".to_string()),
            };
            let m = Measure::Metric {
                name: "time_ms".into(),
                unit: None,
                value,
                samples: 1,
                files: vec![format!("journal.jsonl:{line} ({how})")],
                lines: None,
                timing: None,
            };
            pr.metrics = kind.metrics(bench, &m);
            pr.measure = Some(m);
        }
        None => {
            pr.status = "no-data".into();
            pr.problem = Some("the bench declares no `collect` and journal.jsonl holds no timing for the point (its record is not there: a journal cut short, or a run by an older expr): nothing was measured".into())
        }
    }
}

/// What a source says of a time held at 0: the step took less than the shell it is measured
/// against (hyperfine's way; the lane's "below 5 ms" warning says what to do).
pub const HELD_AT_0: &str = "held at 0 as hyperfine does";

/// `v − shell` (a step's time less its shell's, measured), and how it was got: below 0 it is
/// held at 0, as hyperfine does, and its source says so with the difference (helper 87: the
/// source named a difference whose value was not the one shown).
fn less_shell(v: f64, shell: f64, name: &str, shell_name: &str) -> (f64, String) {
    let d = v - shell;
    if d < 0.0 {
        (0.0, format!("{name} − {shell_name} = {d:.3}, {HELD_AT_0}"))
    } else {
        (d, format!("{name} − {shell_name}"))
    }
}

/// A point's launch steps' time and resources (wait4) from its timing at journal line `line`,
/// each unless its kind already gave a metric of that name.
fn wait4_metrics(pr: &mut PointReport, t: &Value, line: usize) {
    if t["max_rss_mib"].is_null() {
        pr.rss_floor_mib = t["max_rss_floor_mib"].as_f64();
    }
    for (name, unit) in [
        ("wall_ms", "ms"),
        ("user_ms", "ms"),
        ("sys_ms", "ms"),
        ("max_rss_mib", "MiB"),
    ] {
        if pr.metrics.iter().any(|m| m.name == name) {
            continue;
        }
        if let Some(v) = t[name].as_f64().filter(|v| v.is_finite()) {
            // hyperfine's way: the shell's own CPU time is subtracted, as its spawn time is
            // from the wall time
            let shell = format!("shell_overhead_{name}");
            let (v, source) = match t[&shell].as_f64().filter(|o| o.is_finite()) {
                Some(o) => {
                    let (v, how) = less_shell(v, o, name, &shell);
                    (v, format!("journal.jsonl:{line} ({how})"))
                }
                None => (v, format!("journal.jsonl:{line}")),
            };
            pr.metrics
                .push(Metric::new(name, unit, Some(false), v, &source));
        }
    }
}

/// The correctness test that failed, if one did: the runbook stops before any E2E run then.
/// When a point's measured steps ran (Unix ms) and on what, from its timing in the journal.
fn ran_of(t: &serde_json::Value) -> Option<(f64, f64, Vec<String>)> {
    Some((
        t["started_unix_ms"].as_f64()?,
        t["ended_unix_ms"].as_f64()?,
        t["on"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
    ))
}

/// A point's telemetry (`telemetry` in the experiment) and its metrics, after the kind's: the
/// GPU metrics, then the headline per watt (a higher-is-better headline over
/// `gpu_power_mean_w`). Under `noise "refuse"` a point with a GPU unlike the others is left
/// out of the statistics (`warn` flags it in the telemetry section).
fn telemetry_metrics(
    dir: &Path,
    exp: &Experiment,
    pr: &mut PointReport,
    steps: &[GpuStep],
    clocks: &crate::results::telemetry::Clocks,
) {
    let Some(tel) = &exp.telemetry else {
        return;
    };
    let interval_ms = tel.interval_ms as f64;
    let window = pr.ran.as_ref().map(|(a, b, _)| (*a, *b));
    let mut t = crate::results::telemetry::read_point(dir, &pr.run_id, window, interval_ms, clocks);
    // the odd GPU's steps, and its place in each one's devices (its local rank)
    for o in &mut t.odd {
        for (step, host, gpus) in steps {
            if let Some(k) = gpus.iter().position(|g| *g == o.gpu.to_string()) {
                if *host == o.host {
                    o.by.push(format!("step `{step}` (its device {k})"));
                }
            }
        }
    }
    for (name, unit, higher, v, source) in &t.metrics {
        pr.metrics
            .push(Metric::new(name.as_str(), unit, Some(*higher), *v, source));
    }
    let power = pr.metrics.iter().find(|m| m.name == "gpu_power_mean_w");
    if let (Some(h), Some(w)) = (
        pr.metrics
            .first()
            .filter(|m| m.higher_is_better == Some(true)),
        power.filter(|w| w.value > 0.0),
    ) {
        let m = Metric::new(
            format!("{}_per_w", h.name),
            &format!("{}/W", h.unit),
            Some(true),
            h.value / w.value,
            &format!(
                "{} over gpu_power_mean_w ({}; {})",
                h.name, h.source, w.source
            ),
        );
        pr.metrics.push(m);
    }
    if let (true, Some(o), None) = (exp.noise.policy == "refuse", t.odd.first(), &pr.perturbed) {
        pr.perturbed = Some(format!(
            "noise \"refuse\": GPU {} on `{}` unlike the others ({})",
            o.gpu,
            o.host,
            o.how.join("; ")
        ));
    }
    pr.telemetry = Some(t);
}

/// A measured step that was given GPUs: (step, host, its `CUDA_VISIBLE_DEVICES` in order).
type GpuStep = (String, String, Vec<String>);

/// Per run id, its measured steps that were given GPUs, from their command lines in the
/// journal.
fn gpu_steps(events: &[&RunEvent]) -> HashMap<String, Vec<GpuStep>> {
    let mut m: HashMap<String, Vec<GpuStep>> = HashMap::new();
    for e in events {
        let RunEvent::Step(s) = e else { continue };
        let (Some(Some(id)), Some("launch"), Some(cmd)) =
            (&s.run_id, s.phase.as_deref(), s.command.as_deref())
        else {
            continue;
        };
        let Some(list) = cmd
            .split("CUDA_VISIBLE_DEVICES=")
            .nth(1)
            .and_then(|r| r.split([';', ' ']).next())
        else {
            continue;
        };
        let gpus: Vec<String> = list
            .trim_matches('\'')
            .split(',')
            .map(|g| g.trim().to_string())
            .filter(|g| !g.is_empty())
            .collect();
        m.entry(id.clone())
            .or_default()
            .push((s.step.clone(), s.host.clone(), gpus));
    }
    m
}

/// The build or test that failed in the latest run into the directory (a resume that built
/// again is judged by its own build), as the report says it.
fn failed_test(events: &[&RunEvent], lang: Lang) -> Option<String> {
    let since = events
        .iter()
        .rposition(|e| e.header().is_some())
        .unwrap_or(0);
    // a resume keeps the points an earlier run measured: those numbers are below
    let kept = events[..since]
        .iter()
        .any(|e| matches!(e, RunEvent::Point(p) if p.status.as_deref() == Some("ok")));
    events[since..]
        .iter()
        .rev()
        .find_map(|e| match e {
            RunEvent::Step(s)
                if matches!(s.phase.as_deref(), Some("test" | "build"))
                    && !matches!(s.status.as_deref(), Some("ok" | "skipped")) =>
            {
                Some(s)
            }
            _ => None,
        })
        .map(|e| {
            let test = e.phase.as_deref() == Some("test");
            let or_unknown = |s: &str| if s.is_empty() { "?" } else { s }.to_string();
            let (step, host, how, log) = (
                or_unknown(&e.step),
                or_unknown(&e.host),
                crate::results::reason::step_end(
                    lang,
                    e.status.as_deref().unwrap_or("failed"),
                    e.exit_code,
                ),
                e.log.as_deref().unwrap_or("?"),
            );
            let (zh_tail, en_tail) = if kept {
                (
                    "下面的数字是之前一次运行测得、本次保留的点。",
                    "the numbers below are the points an earlier run measured, kept by this one.",
                )
            } else {
                ("下面没有 E2E 数字。", "there are no E2E numbers below.")
            };
            lang.t(
                format!(
                    "{} `{step}` 在 `{host}` 上失败（{how}，日志 {log}），按 runbook 在任何 E2E 运行之前停止：{zh_tail}",
                    if test { "正确性测试" } else { "构建" }
                ),
                format!(
                    "The {} `{step}` failed on `{host}` ({how}, log {log}); as the runbook says, nothing ran after it: {en_tail}",
                    if test { "correctness test" } else { "build" }
                ),
            )
        })
}

/// Each point's last recorded timing (launch steps, from wait4) and the journal line holding it.
fn point_timings(events: &[journal::Line]) -> BTreeMap<String, (serde_json::Value, usize)> {
    let mut m = BTreeMap::new();
    for (line, e) in events {
        if let RunEvent::Point(p) = e {
            if let (Some(id), Some(t)) = (&p.run_id, p.timing.as_ref().filter(|t| t.is_object())) {
                m.insert(id.clone(), (t.clone(), *line));
            }
        }
    }
    m
}

/// Each point whose last event is ok on a non-zero exit (`exit-ok=`): that exit code.
fn accepted_exits(events: &[&RunEvent]) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for e in events {
        if let RunEvent::Point(p) = e {
            if let Some(id) = &p.run_id {
                match crate::results::reason::Reason::accepted_exit(
                    p.status.as_deref(),
                    p.exit_code.flatten(),
                    p.cause.as_ref(),
                ) {
                    Some(c) => m.insert(id.clone(), c),
                    None => m.remove(id),
                };
            }
        }
    }
    m
}

/// The pool member each point last ran on (`placed` of its last `point` event).
fn placements(events: &[&RunEvent]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for e in events {
        if let RunEvent::Point(p) = e {
            if let Some(id) = &p.run_id {
                match &p.placed {
                    Some(h) => m.insert(id.clone(), h.clone()),
                    None => m.remove(id),
                };
            }
        }
    }
    m
}

/// The first line of a reason (the line manifest.csv keeps; a log's tail is below it).
fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// Each point's last reason as data: its `point` event's, or a `not-run` event's after it
/// (said as `not run: …`). A point whose last event holds none has none.
/// Each point's headline as its last point event recorded it.
fn recorded_values(events: &[&RunEvent]) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for e in events {
        if let RunEvent::Point(p) = e {
            if let Some(id) = &p.run_id {
                match p.value {
                    Some(v) => m.insert(id.clone(), v),
                    None => m.remove(id),
                };
            }
        }
    }
    m
}

fn causes(events: &[&RunEvent]) -> BTreeMap<String, Reason> {
    let mut m = BTreeMap::new();
    for e in events {
        match e {
            RunEvent::Point(p) => {
                if let Some(id) = &p.run_id {
                    match &p.cause {
                        Some(c) => m.insert(id.clone(), c.clone()),
                        None => m.remove(id),
                    };
                }
            }
            RunEvent::NotRun(n) => {
                for id in &n.run_ids {
                    match &n.cause {
                        Some(c) => m.insert(
                            id.clone(),
                            Reason::NotRun {
                                why: Box::new(c.clone()),
                            },
                        ),
                        None => m.remove(id),
                    };
                }
            }
            _ => {}
        }
    }
    m
}

/// Each point's last recorded status and reason, from the journal's `point` events.
fn from_journal(events: &[&RunEvent]) -> BTreeMap<String, (String, String)> {
    // the reason's first line, as a manifest row keeps it (the log tail after it is the
    // report's own to show)
    crate::results::journal::outcomes(events.iter().copied())
        .into_iter()
        .map(|(id, o)| (id, (o.status, first_line(&o.reason))))
        .collect()
}

/// A group's key: (bench, lane, sweep point).
type GroupKey<'a> = (&'a str, &'a str, &'a [(String, String)]);

/// Why a group's mean or speedup is none, for summary.json (as the tables say it).
fn say_why(groups: &mut [Group]) {
    let en = crate::util::lang::Lang::En;
    let why: Vec<(Option<&'static str>, Option<&'static str>)> = groups
        .iter()
        .map(|g| {
            (
                g.mean
                    .is_none()
                    .then_some("no values (its points failed, were interrupted or had no data)"),
                (g.speedup.is_none() && g.baseline.is_some())
                    .then(|| crate::kind_api::tables::ratio_why(groups, g, en)),
            )
        })
        .collect();
    for (g, (mean, speedup)) in groups.iter_mut().zip(why) {
        g.mean_why = mean;
        g.speedup_why = speedup;
    }
}

/// Aggregate repeats: mean, sample sd, CV%, stage means, and speedup against the baseline lane.
pub fn group(exp: &Experiment, points: &[PointReport]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    // (bench, lane, axes) → its group, and the points of each group: looked up, not searched
    let mut index: HashMap<GroupKey, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (pi, p) in points.iter().enumerate() {
        let key = (p.bench.as_str(), p.lane.as_str(), p.axes.as_slice());
        let idx = index.get(&key).copied();
        if idx.is_none() {
            index.insert(key, groups.len());
            members.push(Vec::new());
        }
        members[idx.unwrap_or(groups.len())].push(pi);
        let g = match idx {
            Some(i) => &mut groups[i],
            None => {
                groups.push(Group {
                    bench: p.bench.clone(),
                    lane: p.lane.clone(),
                    axes: p.axes.clone(),
                    ..Default::default()
                });
                groups.last_mut().expect("pushed")
            }
        };
        g.run_ids.push(p.run_id.clone());
        // a measure without a readable headline adds no value (never a NaN or a 0); a
        // profiled point's is perturbed
        if let Some(h) = p
            .measure
            .as_ref()
            .filter(|_| p.perturbed.is_none())
            .map(Measure::headline)
            .filter(|h| h.is_finite())
        {
            g.values.push(h);
            g.value_run_ids.push(p.run_id.clone());
        }
    }
    for (g, mine) in groups.iter_mut().zip(&members) {
        g.mean = stats::mean(&g.values);
        // a spread past a double's range is none (its cells say why), never `inf` or `n/a`
        g.sd = stats::sd(&g.values).filter(|v| v.is_finite());
        g.cv_percent = stats::cv_percent(&g.values).filter(|v| v.is_finite());
        let en = crate::util::lang::Lang::En;
        g.sd_why = crate::kind_api::tables::spread_why(g, false, en);
        g.cv_why = crate::kind_api::tables::spread_why(g, true, en);
        let mine: Vec<&StepStats> = mine
            .iter()
            .map(|&i| &points[i])
            .filter(|p| p.perturbed.is_none())
            .filter_map(|p| match &p.measure {
                Some(Measure::Steps(s)) => Some(s),
                _ => None,
            })
            .collect();
        if !mine.is_empty() {
            let mut keys: Vec<&String> = mine.iter().flat_map(|s| s.stages.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let v: Vec<f64> = mine
                    .iter()
                    .filter_map(|s| s.stages.get(k).copied())
                    .collect();
                if let Some(m) = stats::mean(&v) {
                    g.stages.insert(k.clone(), m);
                }
            }
            g.p95_step_total_ms =
                stats::mean(&mine.iter().map(|s| s.p95_step_total_ms).collect::<Vec<_>>());
        }
    }
    // per bench, once: which way its headline is better, and whether any point was measured
    let mut direction: HashMap<&str, Option<bool>> = HashMap::new();
    let mut measured_benches: std::collections::HashSet<&str> = Default::default();
    for p in points {
        // the first point of the bench with a number says it
        if !direction.contains_key(p.bench.as_str()) {
            if let Some(m) = p.metrics.first() {
                direction.insert(&p.bench, m.higher_is_better);
            }
        }
        if p.measure.is_some() {
            measured_benches.insert(&p.bench);
        }
    }
    let means: HashMap<GroupKey, Option<f64>> = groups
        .iter()
        .map(|g| {
            (
                (g.bench.as_str(), g.lane.as_str(), g.axes.as_slice()),
                g.mean,
            )
        })
        .collect();
    // each group's direction, and its ratio to the baseline with the baseline's name
    type Speed = (Option<bool>, Option<f64>, Option<String>);
    let mut speed: Vec<Speed> = Vec::new();
    for g in &groups {
        // which way the headline is better: a latency's speedup is baseline / lane
        let higher = direction.get(g.bench.as_str()).copied().flatten();
        let lower_is_better = higher == Some(false);
        let measured = measured_benches.contains(g.bench.as_str());
        let base = exp
            .benches
            .iter()
            .find(|b| b.name == g.bench)
            .and_then(|b| kinds::of(b.kind).baseline_lane(b));
        let mut ratio = None;
        // the baseline lane is named where it has no ratio too (its mean is 0): not "no baseline"
        let named = base.clone().filter(|_| measured);
        if let (Some(base), true) = (base, measured) {
            let bm = means
                .get(&(g.bench.as_str(), base.as_str(), g.axes.as_slice()))
                .copied()
                .flatten();
            if let (Some(m), Some(bm)) = (g.mean, bm) {
                // a ratio too large for an f64 (1e308 over 0.0012) is no number: `—`, not `infx`
                let r = if lower_is_better { bm / m } else { m / bm };
                // a ratio of means says something only where the baseline is above zero and the
                // lane not below it (a negative baseline made a better lane read `-1.00x`); a
                // lane that measured 0 against 12 is 0.00x, not hidden
                if bm > 0.0 && m >= 0.0 && r.is_finite() {
                    ratio = Some(r);
                }
            }
        }
        speed.push((higher, ratio, named));
    }
    for (g, (higher, ratio, base)) in groups.iter_mut().zip(speed) {
        g.higher_is_better = higher;
        g.speedup = ratio;
        g.baseline = base;
    }
    say_why(&mut groups);
    groups
}
