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
