//! A command's output on stdout (a leaf of cli/: the commands write through it).

use std::io::Write;

use crate::util::exit_codes;

/// A command's output on stdout, and whether it got there: a closed pipe (`| head`) is the
/// reader's choice and fine; any other failure (a full disk under `> file` or
/// `>> "$GITHUB_STEP_SUMMARY"`) is said, exit 1 — the output is lost, and a CI step must not
/// pass on it.
pub fn print(bytes: &[u8]) -> Result<(), i32> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = writeln!(std::io::stderr(), "error: writing the output: {e}");
            Err(exit_codes::INTERNAL)
        }
        _ => Ok(()),
    }
}

/// `p` as the system finds it: its nearest existing ancestor resolved (links followed), the
/// rest after it with `.` and `..` applied — so that `lnk/out/x`, `$PWD/out/x` through a
/// linked directory, `sub/../out/x` and `out/x` are one path, existing or not.
pub fn resolved(p: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    // a link at `p` itself, dangling or not, is where a write goes: its target (a write
    // through `d.md -> out/r/new.md` lands in the result directory)
    let mut p = p.to_path_buf();
    for _ in 0..16 {
        match std::fs::read_link(&p) {
            Ok(t) if t.is_absolute() => p = t,
            Ok(t) => p = p.parent().map(|d| d.join(&t)).unwrap_or(t),
            Err(_) => break,
        }
    }
    let abs = std::path::absolute(&p).unwrap_or_else(|_| p.clone());
    let mut rest = Vec::new();
    let mut at = abs.as_path();
    let base = loop {
        if let Ok(real) = at.canonicalize() {
            break real;
        }
        match (at.parent(), at.file_name()) {
            (Some(up), Some(name)) => {
                rest.push(name.to_os_string());
                at = up;
            }
            _ => break at.to_path_buf(),
        }
    };
    let mut out = base;
    for part in rest.iter().rev() {
        match std::path::Path::new(part).components().next() {
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::CurDir) | None => {}
            _ => out.push(part),
        }
    }
    out
}

/// Why a file named by a flag (`--junit`, `--summary-md`, `--export-json`, `--output`) cannot
/// be written where it names, said before anything runs: the history database `db` (or a file
/// of SQLite's beside it), inside a result directory (its journal or manifest replaced lost the
/// run), a folder, or in a folder that does not exist.
pub fn named_file_problem(
    flag: &str,
    p: &std::path::Path,
    result_dirs: &[&std::path::Path],
    db: &std::path::Path,
) -> Option<String> {
    let at = resolved(p);
    if is_db_file(&at, db) {
        return Some(format!(
            "{flag} {}: is the history database ({}); name another file",
            p.display(),
            db.display()
        ));
    }
    if is_sqlite(&at) {
        return Some(format!(
            "{flag} {}: is an SQLite database (a history?); name another file",
            p.display()
        ));
    }
    // any run's directory, the ones named or another
    let around = result_dir_around(p);
    for d in result_dirs.iter().copied().chain(around.as_deref()) {
        if at.starts_with(resolved(d)) {
            return Some(format!(
                "{flag} {}: inside the result directory {}, whose files are the run's; write it beside it",
                p.display(),
                d.display()
            ));
        }
    }
    if at.is_dir() {
        return Some(format!(
            "{flag} {}: is a directory; name a file",
            p.display()
        ));
    }
    match at.parent() {
        // a file where its folder should be is no missing folder
        Some(up) if up.exists() && !up.is_dir() => Some(format!(
            "{flag} {}: {} is a file, not a folder",
            p.display(),
            up.display()
        )),
        Some(up) if !up.is_dir() => Some(format!(
            "{flag} {}: its folder {} does not exist",
            p.display(),
            up.display()
        )),
        _ => None,
    }
}

/// The result directory `p` would be written inside (the nearest folder above it that holds a
/// `journal.jsonl`), for a flag that names no result directory of its own (`expr history
/// --output`): None where it is outside every one.
pub fn result_dir_around(p: &std::path::Path) -> Option<std::path::PathBuf> {
    let at = resolved(p);
    at.ancestors()
        .skip(1)
        .find(|d| is_journal(&d.join("journal.jsonl")))
        .map(std::path::Path::to_path_buf)
}

/// Whether `f` is a run's journal: a file whose first line is an event of expr's (a
/// `journal.jsonl` of something else does not make its folder a result directory).
fn is_journal(f: &std::path::Path) -> bool {
    use std::io::Read;
    // a FIFO or a device is read by no one here: opening one waits for a writer
    if !f.is_file() {
        return false;
    }
    let Ok(file) = std::fs::File::open(f) else {
        return false;
    };
    let mut head = Vec::new();
    if file.take(64 * 1024).read_to_end(&mut head).is_err() {
        return false;
    }
    let first = head.split(|b| *b == b'\n').next().unwrap_or(&[]);
    serde_json::from_slice::<serde_json::Value>(first)
        .is_ok_and(|v| v["event"].is_string() && v["at"].is_string())
}

/// Whether `f` is an SQLite database (a history, maybe another than the one in use): never
/// written over by a report's file.
fn is_sqlite(f: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    // (a FIFO is opened by no one here: that waits for a writer, forever)
    f.is_file()
        && std::fs::File::open(f)
            .and_then(|mut x| x.read_exact(&mut head))
            .is_ok()
        && &head == b"SQLite format 3\0"
}

/// Whether `at` (resolved) is the history database `db` or one of SQLite's files beside it.
fn is_db_file(at: &std::path::Path, db: &std::path::Path) -> bool {
    let base = resolved(db);
    ["", "-wal", "-shm", "-journal"].iter().any(|end| {
        let mut f = base.clone().into_os_string();
        f.push(end);
        at == std::path::Path::new(&f)
    })
}
