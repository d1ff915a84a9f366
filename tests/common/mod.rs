//! A small builder for running the expr binary in tests.
#![allow(dead_code)]

pub mod browser;
pub mod gpu;
pub mod slurm;
pub mod sshd;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A test whose real part cannot run here. In CI (or with EXPR_REQUIRE_REAL / EXPR_REQUIRE_SSHD)
/// that is a failure; elsewhere the test says `SKIPPED <test>: <why>` and records it in
/// `<target>/tmp/expr-skipped.txt`, which `tests/run-all.sh` prints with a count at the end.
pub fn skip(why: &str) {
    let name = test_name();
    let required = ["CI", "EXPR_REQUIRE_REAL", "EXPR_REQUIRE_SSHD"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty() && x != "false"));
    if required {
        panic!("{name} must run here (CI), but {why}");
    }
    record_skip(&format!("SKIPPED {name}: {why}"));
}

/// The name of the running test (its last path segment).
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test")
        .rsplit("::")
        .next()
        .unwrap_or("a test")
        .to_string()
}

/// An opt-in test (minutes of downloads or run time, not for every CI run): true when `var` is
/// set to `1`. Otherwise the test says `SKIPPED <test>: <why> (opt-in: <var>=1)` and records it
/// where `tests/run-all.sh` lists skips; unlike [`skip`] this never fails under CI, which does
/// not ask for it.
pub fn opt_in(var: &str, why: &str) -> bool {
    if std::env::var(var).is_ok_and(|v| v == "1") {
        return true;
    }
    record_skip(&format!("SKIPPED {}: {why} (opt-in: {var}=1)", test_name()));
    false
}

fn record_skip(line: &str) {
    eprintln!("{line}");
    let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join("expr-skipped.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        use std::io::Write;
        // one write per line: two test binaries append at once, and `writeln!` writes the line
        // and its newline separately (their lines ran together)
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// The history database of this test binary's runs in the checkout (under target/, never the
/// project's `results/.expr-history.sqlite`).
pub fn test_history() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("history-{}.sqlite", std::process::id()))
}

pub struct Test {
    args: Vec<String>,
    dir: PathBuf,
    env: Vec<(String, String)>,
}

pub struct Ran {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Test {
    pub fn new() -> Self {
        Test {
            args: Vec::new(),
            dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            env: Vec::new(),
        }
    }
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<str>>(mut self, args: I) -> Self {
        self.args
            .extend(args.into_iter().map(|s| s.as_ref().to_string()));
        self
    }
    pub fn arg_path(mut self, p: &Path) -> Self {
        self.args.push(p.display().to_string());
        self
    }
    pub fn dir(mut self, dir: &Path) -> Self {
        self.dir = dir.to_path_buf();
        self
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
    pub fn run(self) -> Ran {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_expr"));
        cmd.args(&self.args)
            .current_dir(&self.dir)
            .env("NO_COLOR", "1");
        // the user's history is never a test's: in the checkout a run registers in this test
        // binary's own file; elsewhere (a temporary project) in that project's default one,
        // never in a shared database the user's environment names
        if !self.env.iter().any(|(k, _)| k == "EXPR_HISTORY") {
            if self.dir.starts_with(env!("CARGO_MANIFEST_DIR")) {
                cmd.env("EXPR_HISTORY", test_history());
            } else {
                cmd.env_remove("EXPR_HISTORY");
            }
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let Output {
            status,
            stdout,
            stderr,
        } = cmd.output().expect("run expr");
        Ran {
            status: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

impl Ran {
    pub fn status(self, code: i32) -> Self {
        assert_eq!(
            self.status, code,
            "exit status\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Files with an extension in a directory, sorted.
pub fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

/// A path relative to the crate root, as text.
pub fn rel(p: &Path) -> String {
    p.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(p)
        .display()
        .to_string()
}

/// manifest.csv's rows with their values put, by column name, in RecStore's runner order (the
/// order every kind had before each kind got its own columns); a column the row's header lacks
/// is empty.
pub fn manifest_by_name(dir: &std::path::Path) -> Vec<csv::StringRecord> {
    const ORDER: [&str; 16] = [
        "run_id",
        "lane",
        "backend",
        "transport",
        "torchrec_memory_mode",
        "client_ip",
        "server_count",
        "batch_size",
        "embedding_dim",
        "num_embeddings",
        "repeat_index",
        "main_csv",
        "log_path",
        "status",
        "exit_code",
        "reason",
    ];
    let mut r = csv::Reader::from_path(dir.join("manifest.csv")).expect("manifest.csv");
    let h = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            let cells: Vec<String> = ORDER
                .iter()
                .map(|c| {
                    h.iter()
                        .position(|x| x == *c)
                        .map(|i| rec[i].to_string())
                        .unwrap_or_default()
                })
                .collect();
            csv::StringRecord::from(cells)
        })
        .collect()
}

/// The first CJK character of a text (ideographs, CJK punctuation, full-width forms) with the
/// line it is on; None when there is none (an English report).
pub fn cjk(text: &str) -> Option<(char, String)> {
    text.lines().find_map(|l| {
        l.chars()
            .find(|c| matches!(*c as u32, 0x4E00..=0x9FFF | 0x3000..=0x303F | 0xFF00..=0xFFEF))
            .map(|c| (c, l.to_string()))
    })
}

/// Every process's command line on this machine (what `ps` shows every user), once one of them
/// satisfies `found`: polled every 20 ms for `within` at most, then a failure naming `what`.
pub fn cmdlines_once(
    what: &str,
    found: impl Fn(&str) -> bool,
    within: std::time::Duration,
) -> Vec<String> {
    let end = std::time::Instant::now() + within;
    loop {
        let now: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .collect();
        if now.iter().any(|l| found(l)) {
            return now;
        }
        assert!(std::time::Instant::now() < end, "{what} never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A copy of a folder tree (a fixture checkout a test may change).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Every event of a result directory's journal, as JSON (none when it has no journal yet).
pub fn journal(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A CSV file's rows as column name → value.
pub fn csv_by_name(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let h = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            h.iter()
                .zip(rec.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// manifest.csv's rows, in its own column order.
pub fn manifest_rows(dir: &Path) -> Vec<csv::StringRecord> {
    csv::Reader::from_path(dir.join("manifest.csv"))
        .unwrap()
        .records()
        .map(|r| r.unwrap())
        .collect()
}

/// The command lines (`pgrep -af`) of the processes whose command line holds `pattern`, once
/// none is left or 3 s have passed: what outlived its run.
pub fn processes_left(pattern: &str) -> String {
    let left = || {
        let o = std::process::Command::new("pgrep")
            .args(["-af", pattern])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let end = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while !left().is_empty() && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    left()
}

/// Whether a process group is alive.
pub fn group_alive(pg: i64) -> bool {
    expr::exec::backend::host::group_alive(pg)
}

/// No process group the journal recorded (local or remote — the remote host of these tests is
/// this machine) is still alive, within 5 s.
pub fn assert_no_survivors(dir: &Path) {
    use std::time::{Duration, Instant};
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<String> = journal(dir)
            .iter()
            .filter(|e| e["event"] == "process")
            .flat_map(|e| {
                [e["pgid"].as_i64(), e["remote_pgid"].as_i64()]
                    .into_iter()
                    .flatten()
                    .map(move |p| (p, e["step"].clone()))
            })
            .filter(|(p, _)| group_alive(*p))
            .map(|(p, s)| format!("{s} (group {p})"))
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(Instant::now() < end, "survivors: {alive:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// metrics.csv's rows of one metric: (value, source, reason).
pub fn metric_rows(dir: &Path, name: &str) -> Vec<(String, String, String)> {
    csv_by_name(&dir.join("metrics.csv"))
        .into_iter()
        .filter(|r| r["metric"] == name)
        .map(|mut r| {
            let mut take = |c: &str| r.remove(c).expect("a metrics.csv column");
            (take("value"), take("source"), take("reason"))
        })
        .collect()
}

/// The measured window of the first point with a timing, from the journal (ms): `telemetry`'s
/// samples are summed over it.
pub fn window_ms(dir: &Path) -> f64 {
    let t = journal(dir)
        .into_iter()
        .find(|e| e["event"] == "point" && e["timing"].is_object())
        .map(|e| e["timing"].clone())
        .expect("a point with its timing");
    t["ended_unix_ms"].as_f64().unwrap() - t["started_unix_ms"].as_f64().unwrap()
}

/// The entries of `dir` whose names start with `prefix` (the `runtime/unmeasured-*` and
/// `runtime/earlier-report-*` folders a run or report keeps).
pub fn entries_starting(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect()
}
