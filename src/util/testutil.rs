//! What the unit tests share: a path in a directory of their own, removed when the test ends.

use std::path::PathBuf;

/// A new temporary directory and the path `name` in it (not created). Keep the directory bound
/// for as long as the path is used: dropping it removes the directory.
pub fn temp_path(name: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(name);
    (d, p)
}

/// [`temp_path`] with `text` written to the file.
pub fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let (d, p) = temp_path(name);
    std::fs::write(&p, text).unwrap();
    (d, p)
}

/// Waits up to `within` for the process whose pid `pid_file` holds to be gone (or a zombie);
/// fails the test, naming it as `what`, if it is still running then.
pub fn wait_gone(pid_file: &std::path::Path, within: std::time::Duration, what: &str) {
    let pid: i64 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let end = std::time::Instant::now() + within;
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(
            std::time::Instant::now() < end,
            "{what} {pid} is still running"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
