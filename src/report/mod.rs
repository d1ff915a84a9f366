//! Reports from a result directory: summary.md, summary_e2e.csv, summary.json, SVG plots and
//! report.html.

pub mod campaign;
pub mod chart;
pub mod ci;
pub mod content;
pub mod custom;
pub mod expect;
pub mod export;
pub mod format;
pub mod gather;
pub mod html;
pub mod json;
pub mod machine;
pub mod markdown;
pub mod page;
pub mod plots;
pub mod profile;
pub mod summary;
pub mod telemetry;

use std::path::Path;

/// What `write` did: the files written, the points without data, and warnings.
pub struct Written {
    pub files: Vec<String>,
    pub missing: Vec<String>,
    pub warnings: Vec<String>,
    /// Points that ran to the end but whose metrics could not be read: (run id, why).
    pub no_data: Vec<(String, String)>,
    /// Unmet expectations, as lines.
    pub unmet: Vec<String>,
    /// Points that failed, were interrupted, or ran without data.
    pub failed: usize,
    /// What the report was written from.
    pub data: crate::kind_api::data::ReportData,
    /// The formats that could not be written, each with why (the others were).
    pub not_written: Vec<String>,
}

/// Every format `expr run` and `expr report` write, in the order they are written (the plots
/// first: the document links the figures that exist).
pub fn formats() -> Vec<Box<dyn format::Format>> {
    vec![
        Box::new(plots::Svg),
        Box::new(markdown::Markdown),
        Box::new(summary::E2eCsv),
        Box::new(summary::MetricsCsv),
        Box::new(json::Json),
        Box::new(html::Html),
    ]
}

/// Write every report file of a result directory.
pub fn write(dir: &Path) -> Result<Written, String> {
    write_in(dir, &formats(), None)
}

/// Write these formats of a result directory's report.
pub fn write_with(dir: &Path, formats: &[Box<dyn format::Format>]) -> Result<Written, String> {
    write_in(dir, formats, None)
}

/// Write these formats of a result directory's report in `lang` (`expr report --lang`), or
/// else in the experiment's language.
pub fn write_in(
    dir: &Path,
    formats: &[Box<dyn format::Format>],
    lang: Option<crate::util::lang::Lang>,
) -> Result<Written, String> {
    let data = gather::load_in(dir, lang)?;
    // the files give fewer numbers than the run read (the journal's), or than the report
    // there shows (a journal line gone too): the reports there hold them, and are kept before
    // these replace them
    let unread = unread_since(dir, &data);
    let mut lost = data.lost.clone();
    lost.extend(unread.iter().map(|(id, _)| id.clone()));
    // and the numbers the files give otherwise now, where the reports there show the run's
    let kept = if reports_hold_any(dir, &lost) || reports_show_any(dir, &data.changed) {
        Some(keep_reports(dir)?)
    } else {
        None
    };
    let report = format::Report::new(&data, dir);
    let mut written = Vec::new();
    // one file that cannot be written (a chart's name taken by a folder) keeps none of the
    // others from being written
    let mut not_written = Vec::new();
    for f in formats {
        match f.write(&report) {
            Ok(w) => written.extend(w),
            Err(e) => not_written.push(e),
        }
    }
    // the text files first, then the figures
    written.sort_by_key(|f| f.ends_with(".svg"));
    let no_data = data
        .points
        .iter()
        .filter(|p| p.status == "no-data")
        .map(|p| (p.run_id.clone(), p.problem.clone().unwrap_or_default()))
        .collect();
    let unmet = data
        .expectations
        .iter()
        .filter(|e| !e.ok && e.judged)
        .map(|e| format!("{} ({}) at {}: {}", e.expect, e.at, e.point, e.found))
        .collect();
    let mut unmet: Vec<String> = unmet;
    let mut warnings = data.warnings.clone();
    // a point of a bench whose `collect` changed since: the cause, not a guess at the files
    let by_collect = |id: &str| {
        data.points
            .iter()
            .find(|p| p.run_id == id)
            .is_some_and(|p| data.collect_changed.contains(&p.bench))
    };
    for (id, why) in unread.iter().take(20) {
        warnings.push(match why.strip_prefix(GONE) {
            Some(names) if by_collect(id) => format!(
                "{id}: the report before this one has {names}; the bench's `collect` reads other metrics now"
            ),
            Some(names) => format!(
                "{id}: the report before this one has {names}; the directory gives none of them now (journal.jsonl cut short?)"
            ),
            None => format!(
                "{id}: the report before this one has its number; its files give none now ({why})"
            ),
        });
    }
    if unread.len() > 20 {
        warnings.push(format!(
            "{} more points of the report before this one have no number now",
            unread.len() - 20
        ));
    }
    if let Some(k) = kept.flatten() {
        // each point once: one whose headline changed may have lost another number too
        let changed: std::collections::BTreeSet<&str> =
            data.changed.iter().map(|(id, _)| id.as_str()).collect();
        let lost_only = lost
            .iter()
            .filter(|id| !changed.contains(id.as_str()))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let how = match (lost_only, changed.len()) {
            (_, 0) => String::new(),
            (0, _) => " (each gives another number now)".to_string(),
            (l, c) => format!(" ({l} give none now, {c} another number)"),
        };
        warnings.push(format!(
            "the files no longer give the numbers the run read for {}{how}; the reports before this one, which hold them, are kept in {}",
            crate::util::units::count(lost_only + changed.len(), "point"),
            k.display()
        ));
    }
    let refuse = data
        .exp
        .as_ref()
        .is_some_and(|e| e.noise.timing_check == "refuse");
    for p in &data.points {
        if let Some(t) = p.timing().filter(|t| t.suspect()) {
            let line = format!(
                "{}: timing check: {} (samples/s from {} is suspect)",
                p.run_id,
                t.english(),
                t.total
            );
            if refuse {
                unmet.push(format!("timing-check \"refuse\": {line}"));
            } else {
                warnings.push(line);
            }
        }
    }
    // every point without its data, as `expr run` counts them: failed, interrupted, no data,
    // not run (asked for, never reached), or a status this expr does not know; an adaptive
    // group's skipped point was not needed
    let failed = data
        .points
        .iter()
        .filter(|p| !matches!(p.status.as_str(), "ok" | "skipped"))
        .count();
    Ok(Written {
        failed,
        unmet,
        files: written,
        missing: data.missing.clone(),
        warnings,
        no_data,
        data,
        not_written,
    })
}

impl Written {
    /// How many points are without data, and why by their status, as the run's last line
    /// says it: ` (3 point(s) without data: 2 failed, 1 no data)`; empty when none is.
    pub fn missing_note(&self) -> String {
        if self.missing.is_empty() {
            return String::new();
        }
        let mut by: Vec<(&str, usize)> = Vec::new();
        for p in self.data.points.iter().filter(|p| p.measure.is_none()) {
            // a point never started is said as such, whatever status its row has
            // (`failed` under --fail-fast or after a failed build, `interrupted` after a stop)
            let never = ["not run", "未运行"].iter().any(|w| {
                p.said.starts_with(w) || p.problem.as_deref().is_some_and(|e| e.starts_with(w))
            });
            let status = match p.status.as_str() {
                _ if never => "not run",
                "missing" => "not run",
                "no-data" => "no data",
                s => s,
            };
            match by.iter_mut().find(|(s, _)| *s == status) {
                Some((_, n)) => *n += 1,
                None => by.push((status, 1)),
            }
        }
        let why: Vec<String> = by.iter().map(|(s, n)| format!("{n} {s}")).collect();
        format!(
            " ({} point(s) without data{}{})",
            self.missing.len(),
            if why.is_empty() { "" } else { ": " },
            why.join(", ")
        )
    }
}

/// The report files a run or `expr report` writes: its documents and its charts.
pub fn is_report_file(name: &str) -> bool {
    matches!(
        name,
        "summary.md" | "summary_e2e.csv" | "metrics.csv" | "summary.json" | "report.html"
    ) || plots::is_chart(name)
}

/// Whether the reports in `dir` (its summary.json) hold a number for any of these points: an
/// earlier report of the numbers now lost (not one already written without them).
fn reports_hold_any(dir: &Path, ids: &[String]) -> bool {
    if ids.is_empty() {
        return false;
    }
    let Some(points) = summary_points(dir) else {
        return true;
    };
    points.iter().any(|p| {
        p["status"] == "ok"
            && ids
                .iter()
                .any(|id| p["run_id"].as_str() == Some(id.as_str()))
    })
}

/// The points of the report in `dir` (its summary.json's `points`); None where it cannot be
/// read.
fn summary_points(dir: &Path) -> Option<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(dir.join("summary.json")).ok()?;
    let mut v = serde_json::from_str::<serde_json::Value>(&text).ok()?;
    Some(match v["points"].take() {
        serde_json::Value::Array(points) => points,
        _ => Vec::new(),
    })
}

/// Whether the report in `dir` (its summary.json) shows one of these points with the number
/// the run read (a report written since shows the files' number, and is not kept again).
fn reports_show_any(dir: &Path, then: &[(String, f64)]) -> bool {
    if then.is_empty() {
        return false;
    }
    summary_points(dir).into_iter().flatten().any(|p| {
        then.iter().any(|(id, x)| {
            p["run_id"].as_str() == Some(id.as_str())
                && p["metrics"][0]["value"].as_f64() == Some(*x)
        })
    })
}

/// The points the report in `dir` (its summary.json) shows ok that are not ok now, and that
/// the journal's numbers do not already name (`data.lost`): their journal line is gone too.
/// [`unread_since`]'s mark of a point still ok whose other numbers (these names) are gone.
const GONE: &str = "\u{0}gone:";

fn unread_since(dir: &Path, data: &crate::kind_api::data::ReportData) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(dir.join("summary.json")) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in v["points"].as_array().into_iter().flatten() {
        let Some(id) = p["run_id"].as_str().filter(|_| p["status"] == "ok") else {
            continue;
        };
        if data.lost.iter().any(|l| l == id) {
            continue;
        }
        let now = data.points.iter().find(|x| x.run_id == id);
        match now {
            // still ok, but a number the report there has is gone (the journal cut: the
            // timing it alone holds)
            Some(x) if x.status == "ok" || x.status == "skipped" => {
                let gone: Vec<&str> = p["metrics"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|m| m["value"].as_f64().is_some())
                    .filter_map(|m| m["name"].as_str())
                    .filter(|n| !x.metrics.iter().any(|m| m.name == *n))
                    .collect();
                if !gone.is_empty() {
                    out.push((
                        id.to_string(),
                        format!("{GONE}{}", crate::util::markup::ticked(gone.iter())),
                    ));
                }
            }
            Some(x) => out.push((
                id.to_string(),
                x.problem.clone().unwrap_or_else(|| x.status.clone()),
            )),
            None => out.push((
                id.to_string(),
                "it is no longer a point of the experiment as the run last read it".into(),
            )),
        }
    }
    out
}

/// The report files of `dir` copied to `runtime/earlier-report-<time>/` (none there: `None`).
fn keep_reports(dir: &Path) -> Result<Option<std::path::PathBuf>, String> {
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| is_report_file(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    if files.is_empty() {
        return Ok(None);
    }
    let runtime = dir.join("runtime");
    if let Ok(to) = std::fs::read_link(&runtime) {
        return Err(format!(
            "{} is a symbolic link (to {}): the reports before this one, which hold numbers the files no longer give, cannot be kept inside the result directory; nothing was rewritten",
            runtime.display(),
            to.display()
        ));
    }
    if runtime.exists() && !runtime.is_dir() {
        return Err(format!(
            "{} is not a folder (a run's runtime/ is one): the reports before this one, which hold numbers the files no longer give, cannot be kept there; nothing was rewritten",
            runtime.display()
        ));
    }
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S%.3f");
    let to = runtime.join(format!("earlier-report-{stamp}"));
    std::fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
    // the manifest too: `expr report` makes its statuses say what this report finds
    let manifest = dir.join("manifest.csv");
    let files = files.into_iter().chain(
        std::fs::symlink_metadata(&manifest)
            .is_ok_and(|m| m.is_file())
            .then_some(manifest),
    );
    for f in files {
        if let Some(name) = f.file_name() {
            std::fs::copy(&f, to.join(name)).map_err(|e| format!("{}: {e}", f.display()))?;
        }
    }
    Ok(Some(to))
}

/// The report as what a run does at its end: written from the directory, with the lines to
/// say and what decides the exit code; the data is kept for the history database.
#[derive(Default)]
pub struct AtEnd {
    pub data: Option<crate::kind_api::data::ReportData>,
}

impl crate::results::Finish for AtEnd {
    fn finish(&mut self, dir: &Path) -> crate::results::Finished {
        let mut f = crate::results::Finished::default();
        match write(dir) {
            Ok(w) => {
                let note = w.missing_note();
                f.lines
                    .extend(w.warnings.iter().map(|w| format!("warning: {w}")));
                f.lines
                    .extend(w.unmet.iter().map(|u| format!("expect not met: {u}")));
                f.lines
                    .push(format!("report: {}{note}", w.files.join(", ")));
                f.judged = crate::util::exit_codes::Judged {
                    failed: w.no_data.len(),
                    unmet: w.unmet.len(),
                };
                f.no_data = w.no_data;
                f.points = w.data.exp.is_some().then(|| w.data.point_ids.clone());
                if !w.not_written.is_empty() {
                    f.error = Some(format!(
                        "error: report not written: {}",
                        w.not_written.join("; ")
                    ));
                }
                self.data = Some(w.data);
            }
            Err(e) => f.error = Some(format!("error: report not written: {e}")),
        }
        f
    }
}

/// Render a user minijinja template over the report data (in `lang`, or the run's language).
pub fn render_template(
    dir: &Path,
    template: &Path,
    lang: Option<crate::util::lang::Lang>,
) -> Result<String, String> {
    let data = gather::load_in(dir, lang)?;
    let text =
        std::fs::read_to_string(template).map_err(|e| format!("{}: {e}", template.display()))?;
    let ctx = minijinja::Value::from_serialize(&data);
    custom::render(
        &template.display().to_string(),
        text,
        ctx,
        custom::Budget::REPORT,
    )
}
