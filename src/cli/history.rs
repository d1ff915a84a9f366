//! `expr history`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::util::exit_codes;

use super::args::PageFormat;

/// What `expr history` was asked.
pub(super) struct HistoryArgs<'a> {
    pub experiment: Option<&'a str>,
    pub lane: Option<&'a str>,
    pub metric: Option<&'a str>,
    pub wheres: &'a [String],
    pub format: PageFormat,
    pub changes: bool,
    pub bisect: bool,
    pub output: Option<&'a Path>,
    pub svg: Option<&'a Path>,
    pub import: &'a [PathBuf],
    pub history: Option<&'a Path>,
}

pub(super) fn history_cmd(a: &HistoryArgs) -> i32 {
    let fail = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INVALID
    };
    // the database's own troubles are not the command line's: exit 1
    let broken = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INTERNAL
    };
    let db = crate::history::path(a.history);
    if !a.import.is_empty() {
        return import(&db, a.import);
    }
    let Some(experiment) = a.experiment else {
        return fail("name an experiment, or --import DIR…".into());
    };
    let filters = match checked_args(a, &db) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let c = match crate::history::open_ro(&db) {
        Ok(c) => c,
        Err(e) => return broken(e),
    };
    let entries = match crate::history::query(&c, experiment, a.lane, a.metric, &filters) {
        Ok(e) => e,
        Err(e) => return broken(e),
    };
    // the rounds of a bisection measured old commits: registered, and no part of the series
    let rounds = crate::history::bisect_rounds(&c, experiment);
    if rounds > 0 {
        let _ = writeln!(
            std::io::stderr(),
            "note: {rounds} round(s) of `expr bisect` are in the history and left out of this series (and of `--changes` and `--baseline last-ok`)"
        );
    }
    // a peak below expr's own memory at the spawn is no number of the step's: such runs
    // have none, and the series shows only the others
    if a.metric == Some(PEAK) {
        let _ = writeln!(std::io::stderr(), "note: {PEAK_NOTE}");
    }
    if entries.is_empty() {
        return fail(nothing_matches(
            &c, &db, experiment, a.lane, a.metric, &filters,
        ));
    }
    let name = entries[0].metric.clone();
    let title = format!("{experiment}: {name} over runs");
    // the history the bisection reads is this one, named when it is not the default
    let named = (a.history.is_some() || std::env::var_os(crate::history::ENV).is_some())
        .then_some(db.as_path());
    // a run without a number in a series (its points failed) is in the table, with why, and
    // no part of its trend
    let measured: Vec<crate::history::Entry> = entries
        .iter()
        .filter(|e| e.missing.is_none())
        .cloned()
        .collect();
    if measured.is_empty() {
        // every row is a run without a number: shown, and said once
        let _ = writeln!(
            std::io::stderr(),
            "note: no run shown has a number here; each row says why"
        );
    }
    let found = crate::history::changes::of_history(&measured, named);
    let text = match (a.format, a.changes) {
        (PageFormat::Json, true) => serde_json::to_string_pretty(&found).unwrap_or_default() + "\n",
        (PageFormat::Json, false) => {
            serde_json::to_string_pretty(&entries).unwrap_or_default() + "\n"
        }
        (PageFormat::Text | PageFormat::Github, true) => crate::history::page::changes_text(&found),
        (PageFormat::Text | PageFormat::Github, false) => {
            let mut t = crate::history::page::text(&entries);
            if !found.changes.is_empty() {
                t.push_str(&format!(
                    "\n{} change point(s): {} says where and between which commits.\n",
                    found.changes.len(),
                    crate::util::markup::md_span(
                        &format!(
                            "expr history {} --changes",
                            crate::util::shell::quote(experiment)
                        ),
                        false
                    )
                ));
            }
            t
        }
        (PageFormat::Html, _) => crate::history::page::html(&entries, &title, &found),
    };
    match a.output {
        Some(path) => {
            // an output not written is exit 1 (docs/ci.md), not the command line's 2
            if let Err(e) = crate::results::atomic::write_named(path, text.as_bytes()) {
                return broken(e);
            }
            let _ = writeln!(std::io::stderr(), "history: {}", path.display());
        }
        None => {
            if let Err(code) = super::out::print(text.as_bytes()) {
                return code;
            }
        }
    }
    if let Some(path) = a.svg {
        // a chart asked for by name must be written
        if let Err(e) = crate::history::page::svg(&measured, path, &title) {
            return broken(format!("the trend chart was not written: {e}"));
        }
        let _ = writeln!(std::io::stderr(), "trend: {}", path.display());
    }
    if a.bisect {
        return bisect_newest(&found);
    }
    exit_codes::OK
}

fn import(db: &Path, dirs: &[PathBuf]) -> i32 {
    let mut c = match crate::history::open(db) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            return exit_codes::INTERNAL;
        }
    };
    let mut code = exit_codes::OK;
    for d in dirs {
        match crate::history::register(&mut c, d) {
            Ok(_) => {
                // a damaged journal's lines were skipped: what the history lacks is said
                let read = crate::results::journal::shared(&d.join("journal.jsonl"));
                for (n, why) in &read.1 {
                    let _ = writeln!(
                        std::io::stderr(),
                        "warning: {}: journal.jsonl:{n} is not an event and was skipped ({why})",
                        d.display()
                    );
                }
                let _ = writeln!(std::io::stderr(), "indexed {}", d.display());
            }
            Err(e) => {
                // (the directory named once: most errors name it already)
                let at = d.display().to_string();
                let e = if e.starts_with(&at) {
                    e
                } else {
                    format!("{at}: {e}")
                };
                let _ = writeln!(std::io::stderr(), "error: {e}");
                code = exit_codes::INVALID;
            }
        }
    }
    let _ = writeln!(std::io::stderr(), "history: {}", db.display());
    code
}

/// The command line's files and filters checked before anything is read or printed: the
/// `--where` pairs, or why they cannot be.
fn checked_args(a: &HistoryArgs, db: &Path) -> Result<Vec<(String, String)>, String> {
    // the files asked for, checked before anything is printed
    if let Some(svg) = a.svg {
        if svg.is_dir() {
            return Err(format!(
                "--svg {}: a directory; name the chart's file",
                svg.display()
            ));
        }
        if a.output == Some(svg) {
            return Err(format!(
                "--output and --svg both name {}: the chart would write over the page",
                svg.display()
            ));
        }
    }
    // never the database read, nor a run's own files
    for (flag, p) in [("--output", a.output), ("--svg", a.svg)] {
        if let Some(why) = p.and_then(|p| super::out::named_file_problem(flag, p, &[], db)) {
            return Err(why);
        }
    }
    let mut filters = Vec::new();
    for w in a.wheres {
        match w.split_once('=') {
            Some((k, v)) if !k.is_empty() => filters.push((k.to_string(), v.to_string())),
            _ => return Err(format!("--where takes AXIS=VALUE, not `{w}`")),
        }
    }
    if db.is_dir() {
        return Err(format!(
            "{} is a directory: --history (and EXPR_HISTORY) name the database file, e.g. {}",
            db.display(),
            db.join(".expr-history.sqlite").display()
        ));
    }
    if !db.is_file() {
        return Err(format!(
            "no history database at {} (runs register there; `expr history --import DIR…` indexes existing result directories)",
            db.display()
        ));
    }
    Ok(filters)
}

/// The launch steps' peak memory (wait4): given only above the starter's own.
const PEAK: &str = "max_rss_mib";
/// What `--metric max_rss_mib` says of the runs it cannot show.
const PEAK_NOTE: &str = "`max_rss_mib` is recorded only for a point whose launch steps' peak memory rose more than 4 MiB above expr's own at their start (below that, wait4 gives expr's memory, not the step's; the journal says `max_rss_floor_mib`): runs and points without it are not in this series";

/// Why nothing matched: the experiment it does not hold, else the first filter that matches
/// nothing, each with the names it does hold (the nearest first).
fn nothing_matches(
    c: &rusqlite::Connection,
    db: &Path,
    experiment: &str,
    lane: Option<&str>,
    metric: Option<&str>,
    filters: &[(String, String)],
) -> String {
    use crate::util::suggest::did_you_mean;
    let list = |names: &[String]| -> String {
        let more = match names.len().saturating_sub(12) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!(
            "{}{more}",
            crate::util::markup::ticked(names.iter().take(12))
        )
    };
    let hint = |given: &str, names: &[String]| -> String {
        match did_you_mean(given, names.iter().map(String::as_str)) {
            Some(s) => format!(" — did you mean `{s}`?"),
            None if !names.is_empty() => format!("; it holds {}", list(names)),
            None => String::new(),
        }
    };
    let v = crate::history::vocabulary(c, experiment).unwrap_or_default();
    // no number at all (a lane of runs whose points all failed is held, without one), where
    // the lane and points asked for are the experiment's
    let known = lane.is_none_or(|l| v.lanes.iter().any(|x| x == l))
        && filters.iter().all(|f| v.axes.contains(f));
    if v.metrics.is_empty() && (v.lanes.is_empty() || known) {
        if crate::history::bisect_rounds(c, experiment) > 0 {
            return format!(
                "the history ({}) holds no run of `{experiment}` of its own, only the rounds of `expr bisect` (each listed in its bisection's bisect.md)",
                db.display()
            );
        }
        let runs = crate::history::runs(c).unwrap_or_default();
        let own: Vec<&str> = runs
            .iter()
            .filter(|r| r.1 == experiment)
            .map(|r| r.3.as_str())
            .collect();
        if !own.is_empty() {
            // its runs are there, without a number (every point failed, was interrupted or
            // read no data): not a name to correct
            let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
            for st in &own {
                *by.entry(st).or_default() += 1;
            }
            let statuses: Vec<String> = by.iter().map(|(st, n)| format!("{n} {st}")).collect();
            return format!(
                "the history ({}) holds {} of `{experiment}` ({}), none with a number to show",
                db.display(),
                crate::util::units::count(own.len(), "run"),
                statuses.join(", ")
            );
        }
        let mut known: Vec<String> = runs.into_iter().map(|r| r.1).collect();
        known.sort();
        known.dedup();
        return format!(
            "the history ({}) holds no run of `{experiment}`{}",
            db.display(),
            hint(experiment, &known)
        );
    }
    if let Some(l) = lane.filter(|l| !v.lanes.iter().any(|x| x == l)) {
        return format!(
            "--lane `{l}`: no run of `{experiment}` has that lane{}",
            hint(l, &v.lanes)
        );
    }
    if let Some(m) = metric.filter(|m| !v.metrics.iter().any(|x| x == m)) {
        return format!(
            "--metric `{m}`: no run of `{experiment}` recorded that metric{}",
            hint(m, &v.metrics)
        );
    }
    for (k, val) in filters {
        let axes: Vec<String> = {
            let mut a: Vec<String> = v.axes.iter().map(|(k, _)| k.clone()).collect();
            a.dedup();
            a
        };
        if !axes.contains(k) {
            return format!(
                "--where {k}={val}: `{experiment}` has no axis `{k}`{}",
                hint(k, &axes)
            );
        }
        let values: Vec<String> = v
            .axes
            .iter()
            .filter(|(a, _)| a == k)
            .map(|(_, x)| x.clone())
            .collect();
        if !values.contains(val) {
            return format!(
                "--where {k}={val}: axis `{k}` of `{experiment}` never had the value `{val}`{}",
                hint(val, &values)
            );
        }
    }
    format!(
        "the history ({}) holds no run of `{experiment}` with that lane, metric and point together (each matches some run alone)",
        db.display()
    )
}

/// Run `expr bisect` over the newest change's commit range (the newest by its first run after).
fn bisect_newest(found: &crate::history::changes::Found) -> i32 {
    let newest = found
        .changes
        .iter()
        .filter(|c| c.bisect.is_some())
        .max_by(|a, b| a.started.cmp(&b.started));
    let Some(c) = newest else {
        let _ = writeln!(
            std::io::stderr(),
            "expr: no change point with a commit range to bisect ({} change point(s): each one's sides ran the same commit, or one recorded none, or the experiment changed between them)",
            found.changes.len()
        );
        return exit_codes::POINT_FAILED;
    };
    let line = c.bisect.as_deref().unwrap_or_default();
    let _ = writeln!(std::io::stderr(), "expr: {line}");
    let args = crate::history::changes::bisect_args(c);
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("expr"));
    match std::process::Command::new(exe).args(&args[1..]).status() {
        Ok(s) => s.code().unwrap_or(exit_codes::INTERNAL),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: expr bisect did not start: {e}");
            exit_codes::INTERNAL
        }
    }
}
