//! `expr report`, and the manifest's repair before it.

use std::io::Write;

use crate::util::exit_codes;

/// Rows for the points the journal recorded and manifest.csv lacks, from the run's own plan
/// (its experiment, start and output as the journal says); returns how many were added.
fn repair_manifest(dir: &std::path::Path) -> Result<(usize, usize, usize), String> {
    use crate::results::manifest;
    let events = crate::results::journal::events(&dir.join("journal.jsonl"));
    // each point's last outcome: its point event, or the not-run event that named it
    let last = crate::results::journal::outcomes(&events);
    // a manifest that does not read is rebuilt whole, and said
    let mut rows = match manifest::read_checked(&dir.join("manifest.csv")) {
        Ok(rows) => rows.unwrap_or_default(),
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "warning: {e}; manifest.csv is rebuilt from journal.jsonl"
            );
            Vec::new()
        }
    };
    // a row whose status the journal's last outcome contradicts is made again from the journal
    // (the record each event is appended to first; the manifest is rewritten every 250 ms)
    let before = rows.len();
    rows.retain(|r| {
        last.get(&r.run_id)
            .is_none_or(|e| crate::results::journal::agrees(&e.status, &r.status))
    });
    let corrected = before - rows.len();
    let unrecorded = rows.iter().any(|r| !last.contains_key(&r.run_id));
    let have: std::collections::HashSet<String> = rows.iter().map(|r| r.run_id.clone()).collect();
    // (a run killed before its first point ended wrote none: written, if only its header)
    let absent = !dir.join("manifest.csv").exists();
    // a run stopped hard (no `end` after its last header: kill -9, a second Ctrl-C) wrote no
    // outcome for the points it did not finish: they get rows as one Ctrl-C gives them
    let hard_stop = !events
        .iter()
        .rev()
        .take_while(|e| e.header().is_none())
        .any(|e| matches!(e, crate::results::event::RunEvent::End(_)));
    if corrected == 0
        && !unrecorded
        && last.keys().all(|id| have.contains(id))
        && !absent
        && !hard_stop
    {
        return Ok((0, 0, 0));
    }
    let (exp, header) = crate::report::gather::experiment_of(dir)?;
    // a row the journal has no record of is a point cut from the journal, or a damaged line
    // (an unclosed quote reads the lines after it into one field): the latter names no point
    // of the experiment, and is left out
    if unrecorded {
        let ids: std::collections::HashSet<String> =
            crate::model::expand::expand(&exp, &Default::default())
                .into_iter()
                .map(|p| p.run_id)
                .collect();
        rows.retain(|r| {
            // (a row the journal records stays: its id may be an older expr's naming)
            let known = ids.contains(&r.run_id) || last.contains_key(&r.run_id);
            if !known {
                let _ = writeln!(
                    std::io::stderr(),
                    "warning: manifest.csv has a row for `{}`, which is no point of the experiment (a damaged line?): left out",
                    crate::util::markup::one_line(&r.run_id)
                );
            }
            known
        });
    }
    let have: std::collections::HashSet<String> = rows.iter().map(|r| r.run_id.clone()).collect();
    let started = header
        .started
        .as_deref()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&chrono::Local))
        .unwrap_or_else(chrono::Local::now);
    // the logs the rows name, as a path that reads the same from anywhere (`../d/X/logs/…`
    // named the directory as seen from where `expr report` ran)
    let output = std::path::absolute(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string();
    let plan = crate::plan::plan(
        &exp,
        header.source.as_deref().unwrap_or(""),
        &Default::default(),
        Some(&output),
        started,
    )?;
    let stopped = hard_stop.then(|| stopped_outcomes(&events, &header));
    let (mut added, mut unfinished) = (0, 0);
    for p in &plan.points {
        if have.contains(&p.run_id) {
            continue;
        }
        let e = match last.get(&p.run_id) {
            Some(e) => e,
            None => match stopped.as_ref().and_then(|s| s.of(&p.run_id)) {
                Some(e) => {
                    unfinished += 1;
                    e
                }
                None => continue,
            },
        };
        let log = p
            .steps
            .iter()
            .find(|s| s.phase == crate::plan::Phase::Launch)
            .map(|s| format!("{output}/logs/{}-{}.log", s.id, s.host))
            .unwrap_or_default();
        rows.push(crate::exec::state::rows::row(
            &exp,
            &plan,
            p,
            if e.status.is_empty() {
                "failed"
            } else {
                &e.status
            },
            e.exit_code.map(|c| c as i32),
            &e.reason,
            &log,
        ));
        added += 1;
    }
    let order: std::collections::HashMap<&str, usize> = plan
        .points
        .iter()
        .map(|p| (p.run_id.as_str(), p.index))
        .collect();
    rows.sort_by_key(|r| order.get(r.run_id.as_str()).copied().unwrap_or(usize::MAX));
    manifest::write(
        &dir.join("manifest.csv"),
        &crate::kinds::manifest_columns(&exp),
        &rows,
    )?;
    let added = added - unfinished;
    Ok((added - corrected.min(added), corrected, unfinished))
}

/// The outcome of the points a run stopped hard did not record one for: those its last header
/// asked for (every point of the matrix where it names none).
struct Stopped {
    asked: Option<std::collections::HashSet<String>>,
    started: std::collections::HashSet<String>,
    ran: crate::results::journal::Outcome,
    not_run: crate::results::journal::Outcome,
}

impl Stopped {
    fn of(&self, id: &str) -> Option<&crate::results::journal::Outcome> {
        if self.asked.as_ref().is_some_and(|a| !a.contains(id)) {
            None
        } else if self.started.contains(id) {
            Some(&self.ran)
        } else {
            Some(&self.not_run)
        }
    }
}

fn stopped_outcomes(
    events: &[crate::results::event::RunEvent],
    header: &crate::results::event::Header,
) -> Stopped {
    use crate::results::event::RunEvent;
    // the points of the last run that started (a process of theirs is recorded after its header)
    let since: Vec<&RunEvent> = events
        .iter()
        .rev()
        .take_while(|e| e.header().is_none())
        .collect();
    let started = since
        .iter()
        .filter_map(|e| match e {
            RunEvent::Process(p) => p.run_id.clone(),
            _ => None,
        })
        .collect();
    let outcome = |reason: &str| crate::results::journal::Outcome {
        status: "interrupted".into(),
        exit_code: None,
        reason: reason.into(),
    };
    Stopped {
        asked: header.run_ids.as_ref().map(|v| v.iter().cloned().collect()),
        started,
        ran: outcome("expr stopped while it ran: no outcome was recorded"),
        not_run: outcome("not run: expr was stopped before it"),
    }
}

/// The manifest's statuses as the report found the points: an `ok` point whose numbers its
/// files no longer give is `no-data` (with why), a `no-data` one whose files give them now is
/// `ok` (the run does the first at its end; the report left the manifest saying `ok` while the
/// report and `expr ls` disagreed). Other statuses are the run's; a row of a point the report
/// does not have leaves. Returns how many rows changed.
fn sync_statuses(
    dir: &std::path::Path,
    data: &crate::kind_api::data::ReportData,
) -> Result<usize, String> {
    use crate::results::manifest;
    if data.exp.is_none() {
        return Ok(0);
    }
    let path = dir.join("manifest.csv");
    // written back with its own columns (an older expr's manifest keeps them)
    let Ok(Some((columns, mut rows))) = manifest::read_checked_with_header(&path) else {
        return Ok(0);
    };
    let found: std::collections::HashMap<&str, &crate::kind_api::data::PointReport> =
        data.points.iter().map(|p| (p.run_id.as_str(), p)).collect();
    // a row of a point the report no longer has (a `--force` resume with fewer repeats, by an
    // expr that kept it) leaves: the manifest lists the points the reports show
    let before = rows.len();
    let planned: std::collections::HashSet<&str> =
        data.point_ids.iter().map(String::as_str).collect();
    rows.retain(|r| planned.contains(r.run_id.as_str()));
    let mut changed = before - rows.len();
    for r in &mut rows {
        let Some(p) = found.get(r.run_id.as_str()) else {
            continue;
        };
        let read = |s: &str| matches!(s, "ok" | "no-data");
        if read(&r.status) && read(&p.status) && r.status != p.status {
            // an ok point keeps the run's reason (`recovered: …`)
            let why = match &p.problem {
                Some(problem) if p.status != "ok" => problem,
                _ => &p.reason,
            };
            r.set_status(&p.status, why);
            changed += 1;
        }
    }
    if changed > 0 {
        manifest::write(&path, &columns, &rows)?;
    }
    Ok(changed)
}

/// The directory as its run named it when that name is absolute and is this directory: the
/// files the reports name (`logs/…:12`) then read the same from wherever `expr report` ran.
fn as_the_run_named_it(dir: &std::path::Path) -> std::path::PathBuf {
    let named = crate::report::gather::experiment_of(dir)
        .ok()
        .and_then(|(_, h)| h.output)
        .map(std::path::PathBuf::from)
        .filter(|o| o.is_absolute());
    match named {
        Some(o) if crate::util::same_place(&o, dir) => o,
        _ => dir.to_path_buf(),
    }
}

pub(super) fn report(
    dir: &std::path::Path,
    template: Option<&std::path::Path>,
    lang: Option<crate::util::lang::Lang>,
    history: Option<&std::path::Path>,
) -> i32 {
    let dir = &as_the_run_named_it(dir);
    if let Some(t) = template {
        return match crate::report::render_template(dir, t, lang) {
            Ok(text) => super::out::print(text.as_bytes())
                .err()
                .unwrap_or(exit_codes::OK),
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                exit_codes::INVALID
            }
        };
    }
    if let Some(what) = crate::util::not_a_dir(dir) {
        let _ = writeln!(
            std::io::stderr(),
            "error: {}: {what}",
            crate::util::markup::one_line(&dir.display().to_string()),
        );
        return exit_codes::INVALID;
    }
    if !dir.join("journal.jsonl").exists() && !dir.join("manifest.csv").exists() {
        let _ = writeln!(
            std::io::stderr(),
            "error: {}: not a result directory (it has no journal.jsonl)",
            crate::util::markup::one_line(&dir.display().to_string())
        );
        return exit_codes::INVALID;
    }
    // a run (or another report) writing the directory now would mix its files with these
    let _lock = match crate::exec::lock::lock_if_writable(dir, "report") {
        Ok(l) => l,
        Err(crate::exec::lock::LockError::Busy { dir: d, holder }) => {
            let _ = writeln!(
                std::io::stderr(),
                "error: {d} is being written by a running expr ({holder}); it writes its report when it ends. To look now without writing: `expr report {} --template FILE`",
                crate::util::shell::quote(&d)
            );
            return exit_codes::BUSY;
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            return exit_codes::INTERNAL;
        }
    };
    // an interrupted `--force` left the earlier results aside: they are the directory's
    if let Some(said) = crate::exec::state::recover_forced(dir) {
        let _ = writeln!(std::io::stderr(), "{said}");
    }
    if let Some(w) = register_secrets_of(dir) {
        let _ = writeln!(std::io::stderr(), "warning: {w}");
    }
    repair_and_say(dir);
    match crate::report::write_in(dir, &crate::report::formats(), lang) {
        Ok(w) => {
            let mut err = std::io::stderr();
            for warning in &w.warnings {
                let _ = writeln!(err, "warning: {warning}");
            }
            match sync_statuses(dir, &w.data) {
                Ok(0) => {}
                Ok(n) => {
                    let _ = writeln!(
                        err,
                        "expr: manifest.csv now says what the report found for {}",
                        crate::util::units::count(n, "point")
                    );
                }
                Err(e) => {
                    let _ = writeln!(err, "warning: manifest.csv not updated: {e}");
                }
            }
            // a run the history holds is held as this report found it (its points' numbers,
            // and its status where a point has no data now); one it does not hold is not added
            if let Some(e) =
                crate::history::refresh_if_registered(&crate::history::path(history), dir, &w.data)
            {
                let _ = writeln!(err, "warning: {e}");
            }
            if !w.files.is_empty() {
                let _ = writeln!(
                    err,
                    "expr: wrote {} in {}",
                    w.files.join(", "),
                    crate::util::markup::one_line(&dir.display().to_string())
                );
            }
            if !w.missing.is_empty() {
                let _ = writeln!(err, "expr: {} point(s) without data:", w.missing.len());
                for m in &w.missing {
                    let _ = writeln!(err, "  {m}");
                }
            }
            for u in &w.unmet {
                let _ = writeln!(err, "expect not met: {u}");
            }
            if !w.not_written.is_empty() {
                for e in &w.not_written {
                    let _ = writeln!(err, "error: not written: {e}");
                }
                return exit_codes::INTERNAL;
            }
            // the codes of `expr run`: a failed point first, then an unmet expectation
            exit_codes::verdict(
                exit_codes::OK,
                exit_codes::Judged {
                    failed: w.failed,
                    unmet: w.unmet.len(),
                },
            )
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit_codes::INVALID
        }
    }
}

/// The secrets of the run's experiment file, where it still is: masked in the log tails too.
/// Where it is not (the directory copied elsewhere, the file moved) and the run had secrets,
/// the warning that says their values are not masked in what the report shows of the logs.
fn register_secrets_of(dir: &std::path::Path) -> Option<String> {
    // the journal keeps secrets masked; the experiment file (where it still is) knows their
    // values, so that what a step printed of one is masked in the report's log tails too
    // (a relative source is the run's directory's: `expr report` may be run from elsewhere)
    let (exp, h) = crate::report::gather::experiment_of(dir).ok()?;
    let src = h.source.map(|src| {
        let src = std::path::PathBuf::from(src);
        match h.cwd {
            Some(cwd) if src.is_relative() => std::path::Path::new(&cwd).join(src),
            _ => src,
        }
    });
    let text = src
        .as_ref()
        .filter(|s| s.is_file())
        .and_then(|s| std::fs::read_to_string(s).ok());
    if let (Some(src), Some(text)) = (&src, text) {
        let src = src.display().to_string();
        let loaded = crate::parse::load::load_str(&src, &text, &Default::default());
        if let Some(exp) = &loaded.experiment {
            crate::util::secret::register_secrets(exp.secret_values());
            return None;
        }
    }
    // (helper 77: a copied directory's report showed a token its logs held, everywhere)
    let names: Vec<&str> = exp.secrets().into_iter().map(|(k, _, _)| k).collect();
    (!names.is_empty()).then(|| {
        format!(
            "the run's experiment file{} cannot be read here, and only it holds the values of its secrets ({}): what a log printed of them is shown as it is",
            src.map(|s| format!(" ({})", crate::util::markup::one_line(&s.display().to_string())))
                .unwrap_or_default(),
            crate::util::markup::ticked(names)
        )
    })
}

/// The manifest made whole from the journal, and what was done said.
fn repair_and_say(dir: &std::path::Path) {
    // points the journal recorded that the manifest lacks (its last write failed, or expr was
    // killed before it): the manifest gets them back first, so every output agrees
    let absent = !dir.join("manifest.csv").exists();
    let said = repair_manifest(dir);
    if let Ok((_, _, unfinished @ 1..)) = said {
        let _ = writeln!(
            std::io::stderr(),
            "expr: the run was stopped before it recorded an end: manifest.csv has its {} without an outcome as interrupted",
            crate::util::units::count(unfinished, "point")
        );
    }
    match said {
        Ok((n, _, u)) if absent => {
            let _ = writeln!(
                std::io::stderr(),
                "expr: manifest.csv was missing; written from journal.jsonl ({})",
                crate::util::units::count(n + u, "point")
            );
        }
        Ok((0, 0, _)) => {}
        Ok((n, 0, _)) => {
            let _ = writeln!(
                std::io::stderr(),
                "expr: manifest.csv lacked {n} point(s) the journal recorded; rewritten"
            );
        }
        Ok((n, c, _)) => {
            let _ = writeln!(
                std::io::stderr(),
                "expr: manifest.csv said another status than journal.jsonl for {c} point(s){}; rewritten from the journal",
                if n > 0 {
                    format!(" and lacked {n}")
                } else {
                    String::new()
                }
            );
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "warning: manifest.csv not repaired: {e}");
        }
    }
}
