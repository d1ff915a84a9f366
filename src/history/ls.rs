//! `expr ls [DIR]`: the result directories under DIR, newest first, from their journals.

use std::path::Path;

use serde::Serialize;

use crate::results::event::RunEvent;
use crate::results::journal;

/// One result directory, as its journal and manifest describe it.
#[derive(Debug, Serialize)]
pub struct Entry {
    pub dir: String,
    pub experiment: String,
    pub started: String,
    pub git_head: String,
    pub points: usize,
    pub ok: usize,
    pub failed: usize,
    pub missing: usize,
    /// ok, failed, expectations-unmet, error (a file or the report not written), interrupted,
    /// incomplete (no end recorded: killed), running (`expr ls` finds a live expr holding it),
    /// or preflight-failed.
    pub status: String,
    /// The directory (`dir` is its name as shown).
    #[serde(skip)]
    pub path: std::path::PathBuf,
}

/// Result directories directly under `root` (those with a journal), and those the history
/// database `history` indexes wherever they are, newest first.
/// `list`, and the warnings it gave.
pub fn list_with_warnings(
    root: &Path,
    history: Option<&Path>,
    everywhere: bool,
) -> Result<(Vec<Entry>, Vec<String>), String> {
    let mut warnings = Vec::new();
    list(root, history, everywhere, &mut warnings).map(|e| (e, warnings))
}

/// The result directories under `root`, and those the history indexes: all of them when
/// `everywhere` (`expr ls`), else only those under `root` (`expr ls DIR` lists DIR's runs, not
/// other projects'). Warnings (an unreadable history) go to `warnings`.
pub fn list(
    root: &Path,
    history: Option<&Path>,
    everywhere: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<Entry>, String> {
    // no results/ yet: nothing to list, not an error
    let mut dirs: Vec<std::path::PathBuf> = match std::fs::read_dir(root) {
        Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("{}: {e}", root.display())),
    };
    let db = crate::history::path(history);
    if db.is_file() {
        let runs = crate::history::open_ro(&db).and_then(|c| crate::history::runs(&c));
        if let Err(e) = &runs {
            warnings.push(format!(
                "the history is not read, so directories it indexes elsewhere are not listed: {e}"
            ));
        }
        if let Ok(runs) = runs {
            let seen: std::collections::HashSet<std::path::PathBuf> = dirs
                .iter()
                .filter_map(|d| std::fs::canonicalize(d).ok())
                .collect();
            let under = std::fs::canonicalize(root).ok();
            for (d, ..) in runs {
                let p = std::path::PathBuf::from(&d);
                let here = everywhere || under.as_ref().is_some_and(|u| p.starts_with(u));
                if here && !seen.contains(&p) {
                    dirs.push(p);
                }
            }
        }
    }
    let mut out = Vec::new();
    for dir in dirs {
        out.extend(entry_of(&dir, warnings));
    }
    // by the instant (runs started in other time zones write other offsets), newest first
    let instant = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok();
    out.sort_by(|a, b| {
        instant(&b.started)
            .cmp(&instant(&a.started))
            .then(b.started.cmp(&a.started))
            .then(a.dir.cmp(&b.dir))
    });
    Ok(out)
}

/// A directory as `ls` shows it: as it is, or where its name is not UTF-8 in the shell's
/// `$'…\xff'` form, which names it again when pasted (`run\u{fffd}` named no directory).
fn shown(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    if dir.to_str().is_some() {
        return dir.display().to_string();
    }
    let mut o = String::from("$'");
    for chunk in dir.as_os_str().as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\'' | '\\' => {
                    o.push('\\');
                    o.push(c);
                }
                // its UTF-8 bytes (U+0085 is `\xc2\x85`: `\x85` alone is another byte)
                c if c.is_control() => {
                    for b in c.encode_utf8(&mut [0; 4]).bytes() {
                        o.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => o.push(c),
            }
        }
        for b in chunk.invalid() {
            o.push_str(&format!("\\x{b:02x}"));
        }
    }
    o.push('\'');
    o
}

/// The row of a run whose journal cannot say what it did: its directory and why.
fn damaged(dir: &Path, status: &str) -> Entry {
    Entry {
        dir: shown(dir),
        path: dir.to_path_buf(),
        experiment: String::new(),
        started: String::new(),
        git_head: String::new(),
        points: 0,
        ok: 0,
        failed: 0,
        missing: 0,
        status: status.into(),
    }
}

/// One directory's row, or `None` for a folder that is no run (no journal, manifest,
/// commands.sh or deployment.md). A damaged journal's lines are said in `warnings`.
fn entry_of(dir: &Path, warnings: &mut Vec<String>) -> Option<Entry> {
    let journal_at = dir.join("journal.jsonl");
    // a directory that cannot be read may be a run: listed and said, never left out unseen
    if let Err(e) = std::fs::read_dir(dir) {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            warnings.push(format!("{}: {e}", shown(dir)));
            return Some(damaged(dir, "unreadable directory"));
        }
    }
    if !journal_at.is_file() {
        // a result directory (its manifest or commands.sh there) whose journal is gone or
        // is no file (a FIFO would block the reading): listed, never dropped from sight
        let looks = ["manifest.csv", "commands.sh", "deployment.md"]
            .iter()
            .any(|f| dir.join(f).is_file());
        let there = std::fs::symlink_metadata(&journal_at).is_ok();
        return (looks || there).then(|| {
            damaged(
                dir,
                if there {
                    "journal not a file"
                } else {
                    "no journal"
                },
            )
        });
    }
    let (lines, bad) = journal::events_checked(&journal_at);
    if let Some((n, why)) = bad.first() {
        warnings.push(format!(
            "{}: {} line(s) are no event and are left out (line {n}: {why}); its numbers may be incomplete",
            journal_at.display(),
            bad.len()
        ));
    }
    let events: Vec<RunEvent> = lines.into_iter().map(|(_, e)| e).collect();
    let Some(header) = events.iter().rev().find_map(RunEvent::header) else {
        // a damaged run is listed, never dropped from sight
        return Some(damaged(dir, "unreadable journal"));
    };
    let (asked, points) = directory_points(&events, header);
    // each point's last recorded status: the journal is written as points finish, so a run
    // killed before its report still counts what it did; the manifest only when the journal
    // holds no point
    // (its `not-run` events too: a point an interrupted `--force` resume did not reach is not
    // the ok of the command before it)
    let mut last: std::collections::BTreeMap<String, String> = journal::outcomes(&events)
        .into_iter()
        .map(|(id, o)| {
            let not_run = o.reason.starts_with("not run");
            (id, if not_run { "missing".into() } else { o.status })
        })
        .collect();
    if let Some(asked) = &asked {
        last.retain(|id, _| asked.contains(id));
    }
    let manifest = crate::results::manifest::read(&dir.join("manifest.csv"));
    let statuses: Vec<String> = if last.is_empty() {
        // a point the run never started (`not run: …`, after a failed build or test) is
        // missing, not failed, as one the journal has no outcome for
        manifest
            .into_iter()
            .map(|r| {
                if r.reason.starts_with("not run") {
                    "missing".to_string()
                } else {
                    r.status
                }
            })
            .collect()
    } else {
        // a point ran ok but its numbers could not be read: the report said no-data, which
        // the manifest holds (the journal's point event was written before)
        let no_data: std::collections::HashSet<&str> = manifest
            .iter()
            .filter(|r| r.status == "no-data")
            .map(|r| r.run_id.as_str())
            .collect();
        last.iter()
            .map(|(id, st)| {
                if no_data.contains(&id[..]) {
                    "no-data".to_string()
                } else {
                    st.to_string()
                }
            })
            .collect()
    };
    let ok = statuses.iter().filter(|s| *s == "ok").count();
    // adaptive repeats a group did not need neither failed nor are missing
    let skipped = statuses.iter().filter(|s| *s == "skipped").count();
    // a point a signal stopped, or never started (`not run: interrupted`), is not measured:
    // missing, as one never run (`--resume` runs it); it did not fail
    let unmeasured = statuses
        .iter()
        .filter(|s| matches!(s.as_str(), "interrupted" | "missing"))
        .count();
    let failed = statuses.len() - ok - skipped - unmeasured;
    let end = events.iter().rev().find_map(|e| match e {
        RunEvent::End(end) => Some(end),
        _ => None,
    });
    let status = match end {
        // a run that ended ok whose points `expr report` found failed or without numbers since
        // (its manifest says no-data) is judged as the report judged it (exit 3)
        // (and one whose directory holds points not measured — interrupted, never run — that a
        // later `--resume --only` of other points left: the report exits 3 on them)
        Some(end) => crate::util::exit_codes::status_after(
            end.exit_code.or(Some(-1)),
            points.saturating_sub(ok + skipped),
        ),
        None if events
            .iter()
            .any(|e| matches!(e, RunEvent::PreflightFailed(_))) =>
        {
            "preflight-failed"
        }
        None => "incomplete",
    };
    Some(Entry {
        dir: shown(dir),
        path: dir.to_path_buf(),
        experiment: header.experiment.clone().unwrap_or_default(),
        started: header.started.clone().unwrap_or_default(),
        git_head: header
            .first_host("git_head")
            .unwrap_or("")
            .chars()
            .take(12)
            .collect(),
        points,
        ok,
        failed,
        missing: points.saturating_sub(ok + skipped + failed),
        status: status.to_string(),
    })
}

/// The run ids of a directory's points (None: every point of the matrix) and how many there
/// are.
fn directory_points(
    events: &[RunEvent],
    header: &crate::results::event::Header,
) -> (Option<std::collections::BTreeSet<String>>, usize) {
    // the points of the directory, as `expr report` judges it: those every run into it was
    // asked for (a `--resume --only` adds its selection to the run's), else the whole matrix
    // — of the experiment as the last run read it (a `--force` resume with fewer repeats
    // leaves the others' ids in earlier headers)
    let matrix: Option<std::collections::HashSet<String>> =
        header.experiment("journal").ok().map(|x| {
            crate::model::expand::expand(&x, &Default::default())
                .into_iter()
                .map(|p| p.run_id)
                .collect()
        });
    let asked: Option<std::collections::BTreeSet<String>> = {
        let mut ids = events
            .iter()
            .filter_map(RunEvent::header)
            .filter_map(|h| h.run_ids.as_ref())
            .flatten()
            .filter(|id| matrix.as_ref().is_none_or(|m| m.contains(id.as_str())))
            .cloned()
            .peekable();
        ids.peek().is_some().then(|| ids.collect())
    };
    let points = match (&asked, &matrix) {
        (Some(a), _) => a.len(),
        (None, Some(m)) => m.len(),
        (None, None) => 0,
    };
    (asked, points)
}

/// A table for the terminal.
pub fn text(entries: &[Entry]) -> String {
    let mut rows = vec![[
        "started".to_string(),
        "experiment".into(),
        "points ok/failed/missing".into(),
        "status".into(),
        "git head".into(),
        "directory".into(),
    ]];
    for e in entries {
        rows.push([
            e.started
                .chars()
                .take(19)
                .collect::<String>()
                .replace('T', " "),
            e.experiment.clone(),
            format!("{}/{}/{}", e.ok, e.failed, e.missing),
            e.status.clone(),
            e.git_head.clone(),
            e.dir.clone(),
        ]);
    }
    // one terminal line per directory: control characters shown escaped, long names cut
    for r in rows.iter_mut().skip(1) {
        for c in r.iter_mut().take(5) {
            let clean: String = c.chars().flat_map(char::escape_default).collect();
            let clean = if c.chars().any(char::is_control) {
                clean
            } else {
                c.clone()
            };
            *c = if clean.chars().count() > 48 {
                clean.chars().take(47).chain(['…']).collect()
            } else {
                clean
            };
        }
        if r[5].chars().any(char::is_control) {
            r[5] = r[5].chars().flat_map(char::escape_default).collect();
        }
    }
    let widths: Vec<usize> = (0..6)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut o = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}", w = *w))
            .collect();
        o.push_str(cells.join("  ").trim_end());
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod shown_tests {
    /// A name that is not UTF-8 is shown as the shell names it, so it can be pasted back.
    #[test]
    fn a_directory_name_that_is_not_utf8_is_shown_as_the_shell_names_it() {
        use std::os::unix::ffi::OsStrExt;
        let p = std::path::Path::new(std::ffi::OsStr::from_bytes(b"t1/run\xff'x"));
        assert_eq!(super::shown(p), r"$'t1/run\xff\'x'");
        let c1 = std::path::Path::new(std::ffi::OsStr::from_bytes(b"r\xff\xc2\x85\n"));
        assert_eq!(super::shown(c1), r"$'r\xff\xc2\x85\x0a'");
        assert_eq!(super::shown(std::path::Path::new("t1/run é")), "t1/run é");
    }
}
