//! The git commands a bisection needs, on the benchmarked checkout: resolve revisions, list the
//! first-parent range, describe a commit, and add a detached worktree per probed commit (the
//! user's working tree and HEAD are never touched). Arguments go to git as argv, never through
//! a shell.

use std::path::{Path, PathBuf};

/// `git -C dir ARGS…`: its trimmed stdout, or an error naming the command and git's message.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut argv: Vec<std::ffi::OsString> = vec!["-C".into(), dir.into()];
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
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "`git -C {} {}` failed: {}",
            crate::shell::quote(&dir.display().to_string()),
            crate::shell::join(args),
            err.lines().next().unwrap_or("").trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// The checkout a host's repo lies in: its top directory and the repo's path inside it
/// (`""` when the repo is the top).
pub fn toplevel(repo: &Path) -> Result<(PathBuf, String), String> {
    let out = git(repo, &["rev-parse", "--show-toplevel", "--show-prefix"]).map_err(|e| {
        format!(
            "{} is not inside a git checkout, so there are no commits to bisect ({e})",
            repo.display()
        )
    })?;
    let mut lines = out.lines();
    let top = PathBuf::from(lines.next().unwrap_or(""));
    let prefix = lines.next().unwrap_or("").trim_end_matches('/').to_string();
    Ok((top, prefix))
}

/// A revision's full commit id.
pub fn resolve(top: &Path, rev: &str) -> Result<String, String> {
    let spec = format!("{rev}^{{commit}}");
    git(
        top,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )
    .map_err(|_| {
        format!(
            "`{rev}` is not a commit of {} (`git rev-parse {}` finds none)",
            top.display(),
            crate::shell::quote(&spec)
        )
    })
}

/// The commits after `good` up to `bad` on `bad`'s first-parent chain, oldest first (`bad`
/// last), as `git bisect --first-parent` walks them.
pub fn range(top: &Path, good: &str, bad: &str) -> Result<Vec<String>, String> {
    if git(top, &["merge-base", "--is-ancestor", good, bad]).is_err() {
        return Err(format!(
            "the good commit {} is not an ancestor of the bad commit {}: bisect needs good before bad in history",
            short(good),
            short(bad)
        ));
    }
    let spec = format!("{good}..{bad}");
    let out = git(top, &["rev-list", "--first-parent", "--reverse", &spec])?;
    Ok(out.lines().map(str::to_string).collect())
}

/// A commit's subject and author date (ISO 8601).
pub fn describe(top: &Path, sha: &str) -> Result<(String, String), String> {
    let out = git(top, &["show", "-s", "--format=%aI%n%s", sha])?;
    let (date, subject) = out.split_once('\n').unwrap_or((&out, ""));
    Ok((subject.to_string(), date.to_string()))
}

/// The first 12 characters of a commit id.
pub fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// A detached worktree of `sha` at `dir` (kept when it is already there at that commit: a
/// resumed bisection reuses its build).
pub fn worktree(top: &Path, dir: &Path, sha: &str) -> Result<(), String> {
    if dir.join(".git").exists() {
        if git(dir, &["rev-parse", "HEAD"]).is_ok_and(|h| h == sha) {
            return Ok(());
        }
        return Err(format!(
            "{} exists but is not a worktree at {}; move it away",
            dir.display(),
            short(sha)
        ));
    }
    if let Some(p) = dir.parent() {
        std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let d = dir.display().to_string();
    git(
        top,
        &[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            "--end-of-options",
            &d,
            sha,
        ],
    )
    .map(|_| ())
}

/// Remove a worktree this bisection added (its build goes with it) and forget it in the
/// checkout's metadata.
pub fn remove_worktree(top: &Path, dir: &Path) -> Result<(), String> {
    let d = dir.display().to_string();
    git(top, &["worktree", "remove", "--force", &d]).map(|_| ())
}
