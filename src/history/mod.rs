//! The run history: every run registers itself in an SQLite database (experiment, a hash of
//! its resolved file, start, hosts and git heads, status, result directory, and each lane and
//! sweep point's metrics over its repeats). The result directory stays the source of truth: a
//! database that is missing, locked or damaged only costs a warning.

pub mod changes;
pub mod flags;
pub mod ls;
pub mod page;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection};
use serde::Serialize;
use serde_json::{json, Value};

use crate::util::stats;

/// The environment variable naming a shared database.
pub const ENV: &str = "EXPR_HISTORY";

/// The file name of the default database, in the project's `results/`.
pub const FILE: &str = ".expr-history.sqlite";

/// `--history PATH`, else `$EXPR_HISTORY`, else the project's database: `results/` of the
/// nearest directory above (or at) the current one that holds `.git`, else of the current
/// directory. One database per project, found from any directory in it and whatever
/// `--output` a run wrote to (it was beside each output, so a run written elsewhere was not
/// in the project's history).
pub fn path(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => project_root().join("results").join(FILE),
    }
}

/// The project a command runs in: the nearest directory at or above the current one that
/// holds `.git`, else the current directory (`.` when it cannot be known).
pub fn project_root() -> PathBuf {
    let Ok(cwd) = std::env::current_dir() else {
        return PathBuf::from(".");
    };
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
        .unwrap_or(cwd)
}

/// The directory holding a result directory (where its default database lives).
pub fn parent_of(result_dir: &Path) -> PathBuf {
    match result_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    result_dir TEXT NOT NULL UNIQUE,
    experiment TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    source TEXT NOT NULL,
    started TEXT NOT NULL,
    status TEXT NOT NULL,
    exit_code INTEGER,
    expr_version TEXT NOT NULL,
    git_head TEXT NOT NULL,
    hosts TEXT NOT NULL,
    registered TEXT NOT NULL,
    machine TEXT
);
CREATE INDEX IF NOT EXISTS runs_experiment ON runs(experiment, started);
CREATE TABLE IF NOT EXISTS metrics (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    bench TEXT NOT NULL,
    lane TEXT NOT NULL,
    axes TEXT NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL,
    headline INTEGER NOT NULL,
    n INTEGER NOT NULL,
    mean REAL NOT NULL,
    sd REAL,
    ci_lo REAL,
    ci_hi REAL,
    samples TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS metrics_run ON metrics(run);
CREATE TABLE IF NOT EXISTS missing (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    bench TEXT NOT NULL,
    lane TEXT NOT NULL,
    axes TEXT NOT NULL,
    why TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS missing_run ON missing(run);
CREATE TABLE IF NOT EXISTS introspection (
    key TEXT PRIMARY KEY,
    flags TEXT NOT NULL,
    at TEXT NOT NULL
);
";

/// Columns added since the first schema, each with its type: added to an older database when it
/// is opened for writing (its rows hold NULL there); a read-only reader asks whether each is
/// there ([`has_column`]).
const ADDED: &[(&str, &str, &str)] = &[("runs", "machine", "TEXT"), ("runs", "origin", "TEXT")];

/// The SQL condition that keeps a run of the experiment's own series (`r`): not a round of
/// `expr bisect`, which measures old commits to find a change (`origin = 'bisect'`). An older
/// database without the column has none.
fn own_runs(c: &Connection) -> &'static str {
    if has_column(c, "runs", "origin") {
        "coalesce(r.origin, '') != 'bisect'"
    } else {
        "1"
    }
}

/// How many rounds of `expr bisect` the history holds for an experiment (kept out of its
/// series: [`own_runs`]).
pub fn bisect_rounds(c: &Connection, experiment: &str) -> usize {
    if !has_column(c, "runs", "origin") {
        return 0;
    }
    c.query_row(
        "SELECT count(*) FROM runs WHERE experiment = ?1 AND origin = 'bisect'",
        params![experiment],
        |r| r.get::<_, i64>(0),
    )
    .map_or(0, |n| n as usize)
}

/// Whether a result directory is a round of `expr bisect`: `<bisection>/runs/<round>`, beside
/// the bisection's `bisect.jsonl`.
fn bisect_round(abs: &Path) -> bool {
    abs.parent().is_some_and(|runs| {
        runs.file_name().is_some_and(|n| n == "runs")
            && runs
                .parent()
                .is_some_and(|b| b.join("bisect.jsonl").is_file())
    })
}

fn migrate(c: &Connection) -> rusqlite::Result<()> {
    for (table, col, ty) in ADDED {
        if !has_column(c, table, col) {
            match c.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {col} {ty}")) {
                // another connection added it between the question and the change
                Err(e) if e.to_string().contains("duplicate column") => {}
                r => r?,
            }
        }
    }
    Ok(())
}

/// Whether a table has a column (an older database may lack one that [`ADDED`] names).
pub fn has_column(c: &Connection, table: &str, col: &str) -> bool {
    c.prepare(&format!(
        "SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1"
    ))
    .and_then(|mut st| st.exists(params![col]))
    .unwrap_or(false)
}

/// The machine a run measured on, as one key: per host (in name order) its hostname, GPU model
/// and count, and driver, from the machine records preflight wrote in the journal (the
/// hostname from the header's provenance where no record says). Runs on different machines
/// are never one series of the history's change points.
pub fn machine_key(dir: &Path, provenance: &[Value]) -> String {
    let machines = crate::report::machine::machines_of(dir);
    let mut hosts: Vec<String> = provenance
        .iter()
        .filter_map(|h| h["host"].as_str().map(String::from))
        .collect();
    for m in &machines {
        if !hosts.contains(&m.host) {
            hosts.push(m.host.clone());
        }
    }
    hosts.sort();
    hosts
        .iter()
        .map(|h| {
            let name = provenance
                .iter()
                .find(|p| p["host"].as_str() == Some(h))
                .and_then(|p| p["hostname"].as_str())
                .unwrap_or("");
            let mut part = format!("{h}={name}");
            if let Some(m) = machines.iter().find(|m| &m.host == h) {
                if let Some(node) = m.node.as_deref().filter(|n| *n != name) {
                    part.push_str(&format!(" node {node}"));
                }
                if let Some(gpus) = m.gpus.as_ref().filter(|g| !g.is_empty()) {
                    let mut models: Vec<&str> = gpus.iter().map(|g| g.name.as_str()).collect();
                    models.sort();
                    models.dedup();
                    part.push_str(&format!(" {}× {}", gpus.len(), models.join("+")));
                    if let Some(d) = gpus.iter().find_map(|g| g.driver.as_deref()) {
                        part.push_str(&format!(" driver {d}"));
                    }
                }
            }
            part
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The machine key of a run registered before runs had one: its hosts' names as recorded.
fn machine_of_hosts(hosts: &str) -> String {
    let v: Vec<Value> = serde_json::from_str(hosts).unwrap_or_default();
    let mut parts: Vec<String> = v
        .iter()
        .map(|h| {
            format!(
                "{}={}",
                h["host"].as_str().unwrap_or(""),
                h["hostname"].as_str().unwrap_or("")
            )
        })
        .collect();
    parts.sort();
    parts.join("; ")
}

/// Open (creating) a database: WAL, so that readers never block the run that writes, and a busy
/// timeout, so that two runs finishing together wait for each other instead of failing.
pub fn open(path: &Path) -> Result<Connection, String> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // the default database's folder is made; a folder in a path someone named is not (a
        // mistyped one would start a second history without a word)
        let default = project_root().join("results").join(FILE);
        if path == default {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        } else if !d.is_dir() {
            return Err(format!(
                "{}: no such directory (the folder of a history database given by --history or {ENV} is not made)",
                d.display()
            ));
        }
    }
    let c = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    c.busy_timeout(Duration::from_secs(30))
        .map_err(|e| e.to_string())?;
    // switching to WAL and creating the tables take the write lock; SQLite answers "busy" at
    // once (no busy wait) when two connections race for it: retried for up to 30 s
    let end = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = c
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))
            // in WAL mode NORMAL commits without an fsync; the database stays consistent after
            // a power loss, which may lose the newest registrations: the history is an index of
            // result directories, and `--import` adds them again. A file system without WAL
            // keeps FULL, which a rollback journal needs to stay consistent.
            .and_then(|mode| {
                if mode.eq_ignore_ascii_case("wal") {
                    c.pragma_update(None, "synchronous", "NORMAL")
                } else {
                    Ok(())
                }
            })
            .and_then(|_| c.pragma_update(None, "foreign_keys", "ON"))
            .and_then(|_| c.execute_batch(SCHEMA))
            .and_then(|_| migrate(&c));
        match r {
            Ok(()) => {
                check(&c, path)?;
                return Ok(c);
            }
            Err(e) if busy(&e) && std::time::Instant::now() < end => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) if damaged(&e) => return Err(rebuild(path, &e.to_string())),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
}

/// SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock.
fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Register a result directory (again: its earlier entry is replaced). Returns the run's id.
pub fn register(c: &mut Connection, dir: &Path) -> Result<i64, String> {
    register_with(c, dir, None)
}

/// Register a result directory whose report data the caller may already hold (the run that
/// just wrote its report): then it is not gathered a second time.
pub fn register_with(
    c: &mut Connection,
    dir: &Path,
    data: Option<&crate::kind_api::data::ReportData>,
) -> Result<i64, String> {
    let abs = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    use crate::results::event::RunEvent;
    let events = crate::results::journal::events(&dir.join("journal.jsonl"));
    let header = events
        .iter()
        .rev()
        .find_map(RunEvent::header)
        .cloned()
        .ok_or_else(|| crate::results::journal::no_header(dir))?;
    let end = events.iter().rev().find_map(|e| match e {
        RunEvent::End(end) => Some(end),
        _ => None,
    });
    let exit_code = end.and_then(|e| e.exit_code);
    let gathered;
    let data = match data {
        Some(d) => d,
        None => {
            gathered = crate::report::gather::load(dir)?;
            &gathered
        }
    };
    // a run that ended ok whose report finds a point failed or without numbers now (a log
    // changed since): failed, as `expr report` exits 3 (`expr ls` says the same)
    let failed = failed_points(data);
    let status = crate::util::exit_codes::status_after(exit_code, failed);
    let hosts: Vec<Value> = header
        .provenance()
        .iter()
        .map(|h| {
            json!({"host": h["host"], "hostname": h["hostname"], "git_head": h["git_head"], "fingerprint": h["fingerprint"]})
        })
        .collect();
    let s = |v: &Option<String>| v.clone().unwrap_or_default();
    // IMMEDIATE: the write lock is taken (waiting on busy) before anything is read, so two runs
    // finishing together queue instead of one failing on a lock upgrade
    let tx = c
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| e.to_string())?;
    // another run that wrote this directory before (`--force` replaced its files): its
    // numbers stay in the history, under the directory's name and what replaced it; this
    // run registered again (a resume, a report) replaces its own row
    let key = abs.display().to_string();
    let started = s(&header.started);
    tx.execute(
        "UPDATE runs SET result_dir = result_dir || ' (replaced by the run started ' || ?2 || ')'
         WHERE result_dir = ?1 AND started != ?2 AND ?2 != ''
         AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.result_dir = ?1 || ' (replaced by the run started ' || ?2 || ')')",
        params![key, started],
    )
    .map_err(|e| e.to_string())?;
    tx.execute("DELETE FROM runs WHERE result_dir = ?1", params![key])
        .map_err(|e| e.to_string())?;
    // the same run under another path (its header's start): a copy of a directory the history
    // holds is not a second run; a directory moved since is the same run, under its new path
    let twin: Option<(i64, String)> = tx
        .query_row(
            "SELECT id, result_dir FROM runs WHERE experiment = ?1 AND started = ?2 AND ?2 != '' AND result_dir != ?3",
            params![s(&header.experiment), started, key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok();
    // a copy resumed since (its journal has a later header) is a run of its own
    let last_mark = |d: &Path| {
        crate::results::journal::events(&d.join("journal.jsonl"))
            .iter()
            .rev()
            .find_map(RunEvent::header)
            .and_then(|h| h.mark.clone())
    };
    let twin = twin.filter(|(_, other)| {
        !Path::new(other).join("journal.jsonl").is_file()
            || last_mark(Path::new(other)) == header.mark
    });
    if let Some((id, other)) = twin {
        if Path::new(&other).join("journal.jsonl").is_file() {
            return Err(format!(
                "{}: the same run as {} (started {started}), which the history holds: a copy is not indexed again",
                dir.display(),
                other
            ));
        }
        tx.execute("DELETE FROM runs WHERE id = ?1", params![id])
            .map_err(|e| e.to_string())?;
    }
    tx.execute(
        "INSERT INTO runs (result_dir, experiment, file_hash, source, started, status, exit_code, expr_version, git_head, hosts, registered, machine, origin)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            abs.display().to_string(),
            s(&header.experiment),
            crate::util::hash::fnv1a(header.resolved.as_deref().unwrap_or("")),
            s(&header.source),
            s(&header.started),
            status,
            exit_code,
            s(&header.expr_version),
            header.first_host("git_head").unwrap_or(""),
            Value::Array(hosts).to_string(),
            chrono::Local::now().to_rfc3339(),
            machine_key(dir, header.provenance()),
            bisect_round(&abs).then_some("bisect"),
        ],
    )
    .map_err(|e| e.to_string())?;
    let run = tx.last_insert_rowid();
    register_groups(&tx, run, data)?;
    tx.commit().map_err(|e| e.to_string())?;
    Ok(run)
}

/// Each group's metrics of run `run` (its ok points' values), or its `missing` row.
fn register_groups(
    tx: &rusqlite::Transaction<'_>,
    run: i64,
    data: &crate::kind_api::data::ReportData,
) -> Result<(), String> {
    for g in &data.groups {
        let pts: Vec<&crate::kind_api::data::PointReport> = data
            .points_of(g)
            .filter(|p| p.status == "ok" && p.perturbed.is_none())
            .collect();
        // every metric the points hold, in the order of the first point's (headline first)
        let mut names: Vec<&str> = Vec::new();
        for p in &pts {
            for m in &p.metrics {
                if !names.contains(&m.name.as_str()) {
                    names.push(&m.name);
                }
            }
        }
        for (i, name) in names.iter().enumerate() {
            let ms: Vec<&crate::kind_api::data::Metric> = pts
                .iter()
                .filter_map(|p| p.metrics.iter().find(|m| m.name == *name))
                .collect();
            let v: Vec<f64> = ms
                .iter()
                .map(|m| m.value)
                .filter(|v| v.is_finite())
                .collect();
            let Some(mean) = stats::mean(&v) else {
                continue;
            };
            let sd = stats::sd(&v);
            let ci = stats::ci95(&v);
            let first = ms[0];
            // one statement, compiled once for all rows
            tx.prepare_cached(
                "INSERT INTO metrics (run, bench, lane, axes, metric, unit, direction, headline, n, mean, sd, ci_lo, ci_hi, samples)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            )
            .and_then(|mut st| st.execute(
                params![
                    run,
                    g.bench,
                    g.lane,
                    serde_json::to_string(&g.axes).unwrap_or_default(),
                    name,
                    first.unit,
                    direction(first.higher_is_better),
                    (i == 0) as i64,
                    v.len() as i64,
                    mean,
                    sd,
                    ci.map(|c| c.0),
                    ci.map(|c| c.1),
                    serde_json::to_string(&v).unwrap_or_default(),
                ],
            ))
            .map_err(|e| e.to_string())?;
        }
        // a lane and point without a number in this run: held, with why, so the history shows
        // it missing there rather than leave it out
        if names.is_empty() {
            tx.prepare_cached(
                "INSERT INTO missing (run, bench, lane, axes, why) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    run,
                    g.bench,
                    g.lane,
                    serde_json::to_string(&g.axes).unwrap_or_default(),
                    why_missing(data, g),
                ])
            })
            .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Why a group has no number in its run: its points' statuses, counted (`3 no-data`,
/// `2 failed, 1 interrupted`).
fn why_missing(
    data: &crate::kind_api::data::ReportData,
    g: &crate::kind_api::data::Group,
) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for p in data.points_of(g) {
        let st = if p.perturbed.is_some() {
            "profiled"
        } else {
            p.status.as_str()
        };
        match counts.iter_mut().find(|(s, _)| s == st) {
            Some((_, n)) => *n += 1,
            None => counts.push((st.to_string(), 1)),
        }
    }
    if counts.is_empty() {
        return "no point".into();
    }
    counts
        .iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn direction(higher: Option<bool>) -> &'static str {
    match higher {
        Some(true) => "higher",
        Some(false) => "lower",
        None => "",
    }
}

/// Register a finished run, warning (never failing) when the database cannot take it.
/// The points of `data` (the directory's, as `expr report` judges it: a `--resume --only` adds
/// its selection to the run's) that failed or have no numbers, as `expr ls` counts them.
fn failed_points(data: &crate::kind_api::data::ReportData) -> usize {
    data.points
        .iter()
        // interrupted and never-run points too: the report's exit code counts them
        .filter(|p| !matches!(p.status.as_str(), "ok" | "skipped"))
        .count()
}

/// Register `dir` again with the report's `data` where the history at `db` already holds it
/// (`expr report` after a log changed); nothing where it does not, or there is no history.
/// What went wrong, to be said as a warning.
pub fn refresh_if_registered(
    db: &Path,
    dir: &Path,
    data: &crate::kind_api::data::ReportData,
) -> Option<String> {
    if !db.is_file() {
        return None;
    }
    let abs = std::fs::canonicalize(dir).ok()?;
    let mut c = open(db).ok()?;
    let held: bool = c
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE result_dir = ?1)",
            params![abs.display().to_string()],
            |r| r.get(0),
        )
        .unwrap_or(false);
    // or held under the path it had before it moved (its run's start, that path gone)
    let moved = || {
        let header = crate::results::journal::events(&dir.join("journal.jsonl"))
            .iter()
            .rev()
            .find_map(crate::results::event::RunEvent::header)
            .cloned();
        let Some(h) = header else { return false };
        let mut st = match c.prepare(
            "SELECT result_dir FROM runs WHERE experiment = ?1 AND started = ?2 AND started != ''",
        ) {
            Ok(st) => st,
            Err(_) => return false,
        };
        let dirs: Vec<String> = st
            .query_map(
                params![
                    h.experiment.clone().unwrap_or_default(),
                    h.started.clone().unwrap_or_default()
                ],
                |r| r.get(0),
            )
            .map(|rows| rows.flatten().collect())
            .unwrap_or_default();
        dirs.iter()
            .any(|d| !Path::new(d).join("journal.jsonl").is_file())
    };
    if !held && !moved() {
        return None;
    }
    register_with(&mut c, dir, Some(data)).err().map(|e| {
        format!(
            "the history ({}) still holds the run as it was: {e}",
            db.display()
        )
    })
}

pub fn register_quietly(
    db: &Path,
    dir: &Path,
    data: Option<&crate::kind_api::data::ReportData>,
) -> Option<String> {
    let r = open(db).and_then(|mut c| register_with(&mut c, dir, data));
    let e = r.err()?;
    // the import goes where the database can be: a folder that is not there is made first
    let q = |p: &Path| crate::util::shell::quote(&p.display().to_string());
    let mkdir = db
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(|d| format!("`mkdir -p {}`, then ", q(d)))
        .unwrap_or_default();
    Some(format!(
        "the run was not added to the history ({}): {e}; {mkdir}`expr history --import {} --history {}` adds its result directory later",
        db.display(),
        q(dir),
        q(db)
    ))
}

/// Register a run as it starts (a directory the history does not know yet), so that `expr ls`
/// lists it while it runs, and after a `kill -9`, wherever its `--output` is. Errors are the
/// end's to say (it registers again).
pub fn register_started(db: &Path, dir: &Path) {
    let Ok(mut c) = open(db) else { return };
    let known = std::fs::canonicalize(dir).is_ok_and(|abs| {
        c.query_row(
            "SELECT 1 FROM runs WHERE result_dir = ?1",
            params![abs.display().to_string()],
            |_| Ok(()),
        )
        .is_ok()
    });
    if !known {
        let _ = register_with(&mut c, dir, None);
    }
}

/// The newest run of an experiment that ended ok and started before `before` (B), other than B
/// itself, whose result directory is still there.
pub fn last_ok(
    c: &Connection,
    experiment: &str,
    before: &Path,
) -> Result<Result<PathBuf, Vec<PathBuf>>, String> {
    let abs = std::fs::canonicalize(before)
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let started = crate::report::gather::experiment_of(before)
        .map(|(_, h)| h.started.unwrap_or_default())
        .unwrap_or_default();
    let mut st = c
        .prepare(
            &format!("SELECT result_dir FROM runs r WHERE experiment = ?1 AND status = 'ok' AND result_dir != ?2 AND (?3 = '' OR coalesce(julianday(started) < julianday(?3), started < ?3)) AND {} ORDER BY julianday(started) DESC, started DESC, id DESC", own_runs(c)),
        )
        .map_err(|e| e.to_string())?;
    let rows = st
        .query_map(params![experiment, abs, started], |r| r.get::<_, String>(0))
        .map_err(|e| e.to_string())?;
    let mut gone = Vec::new();
    for r in rows {
        let p = PathBuf::from(r.map_err(|e| e.to_string())?);
        if p.join("journal.jsonl").is_file() {
            return Ok(Ok(p));
        }
        gone.push(p);
    }
    Ok(Err(gone))
}

/// Open an existing database for reading only: nothing is created or changed. On read-only
/// media (where SQLite cannot make the WAL's shared-memory file) it is opened as immutable.
/// A database that is not one, or is damaged, is an error that says how to rebuild it.
pub fn open_ro(path: &Path) -> Result<Connection, String> {
    if !path.is_file() {
        return Err(format!("no history database at {}", path.display()));
    }
    use rusqlite::OpenFlags;
    let plain = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).and_then(|c| {
        c.busy_timeout(Duration::from_secs(30))?;
        // a first read shows whether the WAL can be opened here
        c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        Ok(c)
    });
    let c = match plain {
        Ok(c) => c,
        Err(e) if !damaged(&e) => {
            let uri = format!(
                "file:{}?immutable=1",
                path.display()
                    .to_string()
                    .replace('%', "%25")
                    .replace('?', "%3f")
                    .replace('#', "%23")
            );
            Connection::open_with_flags(
                &uri,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(|e2| format!("{}: {e} (read-only: {e2})", path.display()))?
        }
        Err(e) => return Err(rebuild(path, &e.to_string())),
    };
    check(&c, path)?;
    // a database that is not expr's (an empty file is a valid, empty one)
    let ours = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| rebuild(path, &e.to_string()))?;
    if ours == 0 {
        let empty = std::fs::metadata(path).is_ok_and(|m| m.len() == 0);
        return Err(format!(
            "{} is not an expr history database ({}): name the history with --history, or build one with `expr history --import DIR…`",
            path.display(),
            if empty { "the file is empty" } else { "it has no `runs` table" }
        ));
    }
    Ok(c)
}

/// Whether an error says the file is not a database or is damaged.
fn damaged(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

/// The message for a database that cannot be used as it is, with the line that rebuilds it.
fn rebuild(path: &Path, why: &str) -> String {
    let q = crate::util::shell::quote(&path.display().to_string());
    format!(
        "the history database {} is damaged or not a database ({why}); the result directories are the record: move it away (`mv {q} {q}.bad`) and rebuild it with `expr history --import DIR… --history {q}`",
        path.display()
    )
}

/// `PRAGMA quick_check`: a damaged page is found before anything is read from it or written.
fn check(c: &Connection, path: &Path) -> Result<(), String> {
    let rows: Result<Vec<String>, rusqlite::Error> = c
        .prepare("PRAGMA quick_check(5)")
        .and_then(|mut st| st.query_map([], |r| r.get::<_, String>(0))?.collect());
    match rows {
        Ok(r) if r.len() == 1 && r[0] == "ok" => Ok(()),
        Ok(r) => Err(rebuild(path, &r.join("; "))),
        Err(e) => Err(rebuild(path, &e.to_string())),
    }
}

/// One metric of one lane and sweep point in one run.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub started: String,
    pub git_head: String,
    pub status: String,
    pub result_dir: String,
    pub bench: String,
    pub lane: String,
    pub axes: String,
    pub metric: String,
    pub unit: String,
    pub n: i64,
    pub mean: f64,
    /// The 95 % interval; None where there is none (n=1) or it is beyond a double's range
    /// (`ci_why` says so).
    pub ci: Option<(f64, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_why: Option<&'static str>,
    /// The machine it ran on ([`machine_key`]).
    pub machine: String,
    /// The experiment file the run read.
    pub source: String,
    /// The hash of the experiment as the run resolved it (its file with `--set`): a change
    /// between two runs that differ here may be the experiment's, not the code's or machine's.
    #[serde(skip)]
    pub file_hash: String,
    /// The sweep point as its axis values (`axes` is their text).
    #[serde(skip)]
    pub pairs: Vec<(String, String)>,
    /// Why this run has no number here (its points failed, had no data…): `mean` is then NaN
    /// (`null` in JSON), `n` 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// The run's row in the database (the order of runs).
    #[serde(skip)]
    pub run: i64,
}

impl Entry {
    /// The 95 % interval as the tables write it, and its width (for sorting): `— (n=1, no
    /// interval)` as the report says it, `—` where the run has no number.
    pub fn ci_text(&self) -> (String, Option<f64>) {
        use crate::util::fmt::km;
        match (self.ci, self.ci_why, &self.missing) {
            (Some((lo, hi)), _, _) => (format!("{} … {}", km(lo), km(hi)), Some(hi - lo)),
            (None, _, Some(_)) => ("—".into(), None),
            (None, Some(why), None) => (format!("— ({why})"), None),
            (None, None, None) => ("— (n=1, no interval)".into(), None),
        }
    }

    /// Its series: bench, lane, point, metric, machine.
    pub fn series_key(&self) -> SeriesKey<'_> {
        (
            self.bench.as_str(),
            self.lane.as_str(),
            self.axes.as_str(),
            self.metric.as_str(),
            self.machine.as_str(),
        )
    }
}

/// A series' key: bench, lane, point, metric, machine.
pub type SeriesKey<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str);

/// The history's series in first-seen order, each with its runs oldest first.
pub fn series_of(entries: &[Entry]) -> Vec<(SeriesKey<'_>, Vec<&Entry>)> {
    let mut out: Vec<(SeriesKey<'_>, Vec<&Entry>)> = Vec::new();
    let mut at: std::collections::HashMap<SeriesKey<'_>, usize> = Default::default();
    for e in entries {
        let k = e.series_key();
        let i = *at.entry(k).or_insert_with(|| {
            out.push((k, Vec::new()));
            out.len() - 1
        });
        out[i].1.push(e);
    }
    out
}

/// How many columns [`run_columns`] selects.
const RUN_COLUMNS: usize = 12;

/// The columns of a history row that say which run and which bench, lane and point it is
/// (`runs r` joined to a table `m` of per-point rows), as [`entry_of_run`] reads them.
/// `machine`: `r.machine`, or `NULL` in a database from before machines were recorded.
fn run_columns(machine: &str) -> String {
    format!(
        "r.started, r.git_head, r.status, r.result_dir, {machine}, r.hosts, r.source, r.file_hash, r.id, m.bench, m.lane, m.axes"
    )
}

/// An entry of the run, bench, lane and point of a row whose first columns are
/// [`run_columns`]', with no metric or number yet.
fn entry_of_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<Entry> {
    Ok(Entry {
        started: r.get(0)?,
        git_head: r.get(1)?,
        status: r.get(2)?,
        result_dir: r.get(3)?,
        machine: match r.get::<_, Option<String>>(4)? {
            Some(m) if !m.is_empty() => m,
            _ => machine_of_hosts(&r.get::<_, String>(5)?),
        },
        source: r.get(6)?,
        file_hash: r.get(7)?,
        run: r.get(8)?,
        bench: r.get(9)?,
        lane: r.get(10)?,
        axes: r.get(11)?,
        metric: String::new(),
        unit: String::new(),
        n: 0,
        mean: f64::NAN,
        ci: None,
        ci_why: None,
        missing: None,
        pairs: Vec::new(),
    })
}

/// The history of an experiment: each run (oldest first) with the chosen metric (default: each
/// bench's headline) of the chosen lanes and sweep points.
pub fn query(
    c: &Connection,
    experiment: &str,
    lane: Option<&str>,
    metric: Option<&str>,
    wheres: &[(String, String)],
) -> Result<Vec<Entry>, String> {
    let machine = if has_column(c, "runs", "machine") {
        "r.machine"
    } else {
        "NULL"
    };
    let mut st = c
        .prepare(&format!(
            "SELECT {run}, m.metric, m.unit, m.n, m.mean, m.ci_lo, m.ci_hi
             FROM runs r JOIN metrics m ON m.run = r.id
             WHERE r.experiment = ?1 AND (?2 IS NULL AND m.headline = 1 OR m.metric = ?2) AND (?3 IS NULL OR m.lane = ?3) AND {own}
             ORDER BY julianday(r.started), r.started, r.id, m.rowid",
            run = run_columns(machine),
            own = own_runs(c)
        ))
        .map_err(|e| e.to_string())?;
    let rows = st
        .query_map(params![experiment, metric, lane], |r| {
            let lo: Option<f64> = r.get(RUN_COLUMNS + 4)?;
            let hi: Option<f64> = r.get(RUN_COLUMNS + 5)?;
            Ok(Entry {
                metric: r.get(RUN_COLUMNS)?,
                unit: r.get(RUN_COLUMNS + 1)?,
                n: r.get(RUN_COLUMNS + 2)?,
                mean: r.get(RUN_COLUMNS + 3)?,
                ci: lo.zip(hi).filter(|(a, b)| a.is_finite() && b.is_finite()),
                // an interval a double cannot hold (`0 … inf`), never shown as a number
                ci_why: lo
                    .zip(hi)
                    .filter(|(a, b)| !a.is_finite() || !b.is_finite())
                    .map(|_| "beyond a double's range"),
                ..entry_of_run(r)?
            })
        })
        .map_err(|e| e.to_string())?;
    let mut rows: Vec<Entry> = rows
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let missing = query_missing(c, experiment, lane, metric, machine, &rows)?;
    if !missing.is_empty() {
        // in the order of runs (the query's), each run's numbers before what it lacks
        let order = run_order(c, experiment)?;
        rows.extend(missing);
        rows.sort_by_key(|e| order.get(&e.run).copied().unwrap_or(usize::MAX));
    }
    let mut out = Vec::new();
    // one sweep point whatever order a run's file swept its axes in: its text as first seen
    let mut shown: std::collections::HashMap<Vec<(String, String)>, String> = Default::default();
    for e in rows {
        // axes are stored as JSON pairs: a value may hold `,` or `=`
        let pairs: Vec<(String, String)> = serde_json::from_str(&e.axes).unwrap_or_default();
        if wheres.iter().all(|w| pairs.contains(w)) {
            let mut e = e;
            let mut sorted = pairs.clone();
            sorted.sort();
            e.axes = shown
                .entry(sorted)
                .or_insert_with(|| crate::kind_api::tables::axes_text(&pairs))
                .clone();
            e.pairs = pairs;
            out.push(e);
        }
    }
    Ok(out)
}

/// Each run of an experiment's place in the order of runs (oldest first).
fn run_order(
    c: &Connection,
    experiment: &str,
) -> Result<std::collections::HashMap<i64, usize>, String> {
    let mut st = c
        .prepare(
            "SELECT id FROM runs WHERE experiment = ?1 ORDER BY julianday(started), started, id",
        )
        .map_err(|e| e.to_string())?;
    let ids = st
        .query_map(params![experiment], |r| r.get::<_, i64>(0))
        .map_err(|e| e.to_string())?;
    let mut out = std::collections::HashMap::new();
    for (i, id) in ids.enumerate() {
        out.insert(id.map_err(|e| e.to_string())?, i);
    }
    Ok(out)
}

/// The lanes and points a run of the experiment has no number for (its `missing` rows), as
/// entries without a mean: of the metric asked for, else of the bench's headline as the
/// measured entries name it.
fn query_missing(
    c: &Connection,
    experiment: &str,
    lane: Option<&str>,
    metric: Option<&str>,
    machine: &str,
    measured: &[Entry],
) -> Result<Vec<Entry>, String> {
    if !has_table(c, "missing") {
        return Ok(Vec::new());
    }
    let mut st = c
        .prepare(&format!(
            "SELECT {run}, m.why
             FROM runs r JOIN missing m ON m.run = r.id
             WHERE r.experiment = ?1 AND (?2 IS NULL OR m.lane = ?2) AND {own}",
            run = run_columns(machine),
            own = own_runs(c)
        ))
        .map_err(|e| e.to_string())?;
    // the metric and unit the bench's other entries of the same run give (asked for, or its
    // headline), else its headline in the latest run of the experiment that has one
    let headline = |bench: &str| -> Option<(String, String)> {
        c.query_row(
            "SELECT m.metric, m.unit FROM runs r JOIN metrics m ON m.run = r.id WHERE r.experiment = ?1 AND m.bench = ?2 AND m.headline = 1 ORDER BY r.id DESC LIMIT 1",
            params![experiment, bench],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok()
    };
    // the run's own entries first: an earlier run of the experiment may have had another
    // headline (helper 78: a failed lane of `v` was shown as `time_ms`, an older run's)
    let mut of_run: std::collections::HashMap<(i64, String), (String, String)> = Default::default();
    let mut known: std::collections::HashMap<String, Option<(String, String)>> = Default::default();
    for e in measured {
        of_run
            .entry((e.run, e.bench.clone()))
            .or_insert_with(|| (e.metric.clone(), e.unit.clone()));
    }
    // a metric asked for by name: a bench's run lacks it only where the bench records it in
    // some run (a name no run recorded is not a metric of it: `nothing_matches` says so)
    let records = |bench: &str, m: &str| -> bool {
        c.query_row(
            "SELECT 1 FROM runs r JOIN metrics x ON x.run = r.id WHERE r.experiment = ?1 AND x.bench = ?2 AND x.metric = ?3 LIMIT 1",
            params![experiment, bench, m],
            |_| Ok(()),
        )
        .is_ok()
    };
    let mut recorded: std::collections::HashMap<String, bool> = Default::default();
    let rows = st
        .query_map(params![experiment, lane], |r| {
            let e = entry_of_run(r)?;
            let named = match of_run.get(&(e.run, e.bench.clone())) {
                Some(n) => Some(n.clone()),
                None => known
                    .entry(e.bench.clone())
                    .or_insert_with(|| headline(&e.bench))
                    .clone(),
            };
            Ok(Entry {
                metric: metric
                    .map(str::to_string)
                    .or_else(|| named.as_ref().map(|n| n.0.clone()))
                    .unwrap_or_default(),
                unit: named.map(|n| n.1).unwrap_or_default(),
                missing: Some(r.get(RUN_COLUMNS)?),
                ..e
            })
        })
        .map_err(|e| e.to_string())?;
    let rows: Vec<Entry> = rows
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok(match metric {
        None => rows,
        Some(m) => rows
            .into_iter()
            .filter(|e| {
                *recorded
                    .entry(e.bench.clone())
                    .or_insert_with(|| records(&e.bench, m))
            })
            .collect(),
    })
}

/// Whether the database has a table (an older one may lack `missing`).
fn has_table(c: &Connection, table: &str) -> bool {
    c.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
        params![table],
        |_| Ok(()),
    )
    .is_ok()
}

/// What an experiment's runs recorded: its lanes, metrics and (axis, value) pairs, each sorted
/// and once.
#[derive(Debug, Default)]
pub struct Vocabulary {
    pub lanes: Vec<String>,
    pub metrics: Vec<String>,
    pub axes: Vec<(String, String)>,
}

pub fn vocabulary(c: &Connection, experiment: &str) -> Result<Vocabulary, String> {
    let mut st = c
        .prepare(
            &format!("SELECT DISTINCT m.lane, m.metric, m.axes FROM runs r JOIN metrics m ON m.run = r.id WHERE r.experiment = ?1 AND {}", own_runs(c)),
        )
        .map_err(|e| e.to_string())?;
    let rows = st
        .query_map(params![experiment], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .map_err(|e| e.to_string())?;
    let mut v = Vocabulary::default();
    for r in rows {
        let (lane, metric, axes): (String, String, String) = r.map_err(|e| e.to_string())?;
        v.lanes.push(lane);
        v.metrics.push(metric);
        let pairs: Vec<(String, String)> = serde_json::from_str(&axes).unwrap_or_default();
        v.axes.extend(pairs);
    }
    // a lane whose every point failed has no metric, and is a lane of the experiment still
    if has_table(c, "missing") {
        let mut st = c
            .prepare(&format!("SELECT DISTINCT m.lane, m.axes FROM runs r JOIN missing m ON m.run = r.id WHERE r.experiment = ?1 AND {}", own_runs(c)))
            .map_err(|e| e.to_string())?;
        let rows = st
            .query_map(params![experiment], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| e.to_string())?;
        for r in rows {
            let (lane, axes): (String, String) = r.map_err(|e| e.to_string())?;
            v.lanes.push(lane);
            v.axes
                .extend(serde_json::from_str::<Vec<(String, String)>>(&axes).unwrap_or_default());
        }
    }
    for l in [&mut v.lanes, &mut v.metrics] {
        l.sort();
        l.dedup();
    }
    v.axes.sort();
    v.axes.dedup();
    Ok(v)
}

/// Every run registered (newest first): (result dir, experiment, started, status).
pub fn runs(c: &Connection) -> Result<Vec<(String, String, String, String)>, String> {
    let mut st = c
        .prepare("SELECT result_dir, experiment, started, status FROM runs ORDER BY julianday(started) DESC, started DESC, id DESC")
        .map_err(|e| e.to_string())?;
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .map_err(|e| e.to_string())?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

/// A metric's samples in every ok run of an experiment, for one bench, lane and sweep point,
/// oldest first: (started, git head, samples).
pub fn samples_of(
    c: &Connection,
    experiment: &str,
    bench: &str,
    lane: &str,
    axes: &[(String, String)],
    metric: &str,
) -> Result<Vec<(String, String, Vec<f64>)>, String> {
    let mut st = c
        .prepare(&format!(
            "SELECT r.started, r.git_head, m.axes, m.samples FROM runs r JOIN metrics m ON m.run = r.id
             WHERE r.experiment = ?1 AND r.status = 'ok' AND m.bench = ?2 AND m.lane = ?3 AND m.metric = ?4 AND {}
             ORDER BY julianday(r.started), r.started, r.id",
            own_runs(c)
        ))
        .map_err(|e| e.to_string())?;
    let rows = st
        .query_map(params![experiment, bench, lane, metric], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for r in rows {
        let (started, head, a, s): (String, String, String, String) =
            r.map_err(|e| e.to_string())?;
        let pairs: Vec<(String, String)> = serde_json::from_str(&a).unwrap_or_default();
        if pairs.len() == axes.len() && axes.iter().all(|x| pairs.contains(x)) {
            out.push((started, head, serde_json::from_str(&s).unwrap_or_default()));
        }
    }
    Ok(out)
}
