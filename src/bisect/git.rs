//! The git commands a bisection needs, on the benchmarked checkout of a host — here, or on an
//! ssh host through the system OpenSSH client (`exec::host::Ssh`, its multiplexed connection):
//! resolve revisions, list the first-parent range, describe a commit, and add a detached
//! worktree per probed commit (the user's working tree and HEAD are never touched). Here the
//! arguments go to git as argv; over ssh they are one command line, every word quoted.

use std::path::Path;
use std::time::Duration;

use crate::exec::backend::host::Ssh;
use crate::model::Host;
use crate::util::shell::{join, quote};

/// Where git runs: on this machine, or on a host behind ssh.
#[derive(Clone, Copy)]
pub enum At<'a> {
    Here,
    Ssh(&'a Ssh, &'a Host),
}

/// A directory on a machine, where git (or a short script) runs.
#[derive(Clone, Copy)]
pub struct Repo<'a> {
    pub at: At<'a>,
    pub dir: &'a str,
}

/// A worktree added or a checkout changed may take minutes on a large repository.
const SLOW: Duration = Duration::from_secs(900);

impl<'a> Repo<'a> {
    pub fn here(dir: &'a str) -> Repo<'a> {
        Repo { at: At::Here, dir }
    }

    /// The same machine, another directory.
    pub fn at(&self, dir: &'a str) -> Repo<'a> {
        Repo { at: self.at, dir }
    }

    /// " on `host`" for a remote directory, "" here.
    pub fn on(&self) -> String {
        match self.at {
            At::Here => String::new(),
            At::Ssh(_, h) => format!(" on `{}` ({})", h.name, h.ssh),
        }
    }

    /// `git -C dir ARGS…`: its trimmed stdout, or an error naming the command, the host and
    /// git's message.
    pub fn git(&self, args: &[&str]) -> Result<String, String> {
        let (ok, out) = match self.at {
            At::Here => {
                let mut argv: Vec<std::ffi::OsString> = vec!["-C".into(), self.dir.into()];
                argv.extend(args.iter().map(Into::into));
                let out = duct::cmd("git", argv)
                    // a prompt for credentials or an editor would hang a bisection
                    .env("GIT_TERMINAL_PROMPT", "0")
                    .stdin_null()
                    .stdout_capture()
                    .stderr_capture()
                    .unchecked()
                    .run()
                    .map_err(|e| format!("git: {e} (is git installed?)"))?;
                let ok = out.status.success();
                let text = if ok { out.stdout } else { out.stderr };
                (ok, String::from_utf8_lossy(&text).into_owned())
            }
            At::Ssh(..) => {
                // `env`: the assignment works whatever the remote login shell is
                let line = format!(
                    "env GIT_TERMINAL_PROMPT=0 git -C {} {} </dev/null",
                    quote(self.dir),
                    join(args)
                );
                let (code, out) = self.sh(&line)?;
                (code == 0, out)
            }
        };
        if !ok {
            return Err(format!(
                "`git -C {} {}`{} failed: {}",
                quote(self.dir),
                join(args),
                self.on(),
                out.lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("")
            ));
        }
        Ok(out.trim_end().to_string())
    }

    /// A short POSIX shell script on the machine: (exit code, stdout — with stderr when it
    /// failed). Every value in `script` is quoted by the caller.
    pub fn sh(&self, script: &str) -> Result<(i32, String), String> {
        match self.at {
            At::Here => {
                let out = duct::cmd("sh", ["-c", script])
                    .stdin_null()
                    .stdout_capture()
                    .stderr_capture()
                    .unchecked()
                    .run()
                    .map_err(|e| format!("sh: {e}"))?;
                let code = out.status.code().unwrap_or(-1);
                let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
                if code != 0 {
                    text.push_str(&String::from_utf8_lossy(&out.stderr));
                }
                Ok((code, text))
            }
            At::Ssh(ssh, h) => ssh
                .run(h, script, None, SLOW)
                .map_err(|e| format!("host `{}` ({}): {e}", h.name, h.ssh)),
        }
    }

    /// Whether `path` exists on the machine.
    pub fn exists(&self, path: &str) -> Result<bool, String> {
        match self.at {
            At::Here => Ok(Path::new(path).exists()),
            At::Ssh(..) => {
                let (_, out) = self.sh(&format!(
                    "if [ -e {} ]; then echo y; else echo n; fi",
                    quote(path)
                ))?;
                match out.trim() {
                    "y" => Ok(true),
                    "n" => Ok(false),
                    o => Err(format!("asking whether {path} exists{}: {o}", self.on())),
                }
            }
        }
    }
}

/// The checkout a host's repo lies in: its top directory, the repo's path inside it (`""`
/// when the repo is the top), and the repository's common directory (its `.git`, shared by
/// its worktrees), all absolute.
pub fn toplevel(repo: &Repo) -> Result<(String, String, String), String> {
    let out = repo
        .git(&["rev-parse", "--show-toplevel", "--show-prefix"])
        .map_err(|e| {
            format!(
                "{}{} is not inside a git checkout, so there are no commits to bisect ({e})",
                repo.dir,
                repo.on()
            )
        })?;
    let mut lines = out.lines();
    let top = lines.next().unwrap_or("").to_string();
    let prefix = lines.next().unwrap_or("").trim_end_matches('/').to_string();
    // relative to the top when git says so (older gits, and a checkout that is not a worktree)
    let common = repo.at(&top).git(&["rev-parse", "--git-common-dir"])?;
    let common = if common.starts_with('/') {
        common
    } else {
        format!("{}/{common}", top.trim_end_matches('/'))
    };
    Ok((top, prefix, common))
}

/// A revision's full commit id.
pub fn resolve(top: &Repo, rev: &str) -> Result<String, String> {
    let spec = format!("{rev}^{{commit}}");
    top.git(&[
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        &spec,
    ])
    .map_err(|_| {
        format!(
            "`{rev}` is not a commit of {}{} (`git rev-parse {}` finds none)",
            top.dir,
            top.on(),
            quote(&spec)
        )
    })
}

/// The commits after `good` up to `bad` on `bad`'s first-parent chain, oldest first (`bad`
/// last), as `git bisect --first-parent` walks them.
pub fn range(top: &Repo, good: &str, bad: &str) -> Result<Vec<String>, String> {
    if top
        .git(&["merge-base", "--is-ancestor", good, bad])
        .is_err()
    {
        return Err(format!(
            "the good commit {} is not an ancestor of the bad commit {}: bisect needs good before bad in history",
            short(good),
            short(bad)
        ));
    }
    let spec = format!("{good}..{bad}");
    let out = top.git(&["rev-list", "--first-parent", "--reverse", &spec])?;
    Ok(out.lines().map(str::to_string).collect())
}

/// A commit's subject and author date (ISO 8601).
pub fn describe(top: &Repo, sha: &str) -> Result<(String, String), String> {
    let out = top.git(&["show", "-s", "--format=%aI%n%s", sha])?;
    let (date, subject) = out.split_once('\n').unwrap_or((&out, ""));
    Ok((subject.to_string(), date.to_string()))
}

/// The first 12 characters of a commit id.
pub fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Whether `dir` holds a worktree at `sha`: Ok(true) yes, Ok(false) nothing there, an error
/// when something else is.
fn worktree_at(top: &Repo, dir: &str, sha: &str) -> Result<bool, String> {
    if !top.exists(&format!("{dir}/.git"))? {
        if top.exists(dir)? {
            return Err(format!(
                "{dir}{} exists but is not a worktree of expr's; move it away",
                top.on()
            ));
        }
        return Ok(false);
    }
    match top.at(dir).git(&["rev-parse", "HEAD"]) {
        Ok(h) if h == sha => Ok(true),
        _ => Err(format!(
            "{dir}{} exists but is not a worktree at {}; move it away",
            top.on(),
            short(sha)
        )),
    }
}

/// A detached worktree of `sha` at `dir`, added to the checkout at `top` unless it is already
/// there at that commit (a later round, a later bisection, or another host on the same shared
/// filesystem added it): whether this call added it.
pub fn worktree(top: &Repo, dir: &str, sha: &str) -> Result<bool, String> {
    if worktree_at(top, dir, sha)? {
        return Ok(false);
    }
    if let Some(parent) = Path::new(dir).parent() {
        let p = parent.display().to_string();
        let (code, out) = top.sh(&format!("mkdir -p -- {}", quote(&p)))?;
        if code != 0 {
            return Err(format!("cannot create {p}{}: {}", top.on(), out.trim()));
        }
    }
    match top.git(&[
        "worktree",
        "add",
        "--quiet",
        "--detach",
        "--end-of-options",
        dir,
        sha,
    ]) {
        Ok(_) => Ok(true),
        // added meanwhile by another bisection of the same checkout
        Err(e) => match worktree_at(top, dir, sha) {
            Ok(true) => Ok(false),
            _ => Err(e),
        },
    }
}
