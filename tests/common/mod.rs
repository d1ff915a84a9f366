//! A small builder for running the expr binary in tests.
#![allow(dead_code)]

pub mod sshd;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
