//! One expr per result directory: an exclusive `flock` on `<dir>/.expr-lock`, held by a run
//! (and `--resume`), `expr report` and `expr stop` for as long as they write or signal, and
//! released by the kernel when the holder dies. A second process gets an error naming the
//! holder's pid and host, before it writes or stops anything. A lock file left by a process
//! that died holds no lock: the next one takes it over.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The lock file inside a result directory.
pub const LOCK_FILE: &str = ".expr-lock";

/// A held lock; dropping it (or dying) releases it.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Why a lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// Another expr holds it: who (pid and what it does, and its host).
    Busy {
        dir: String,
        holder: String,
    },
    Other(String),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::Busy { dir, holder } if is_sentinel(holder) => write!(
                f,
                "{dir} is held by the sentinel of a run that was killed ({holder}): it is stopping what that run left; wait a moment and try again"
            ),
            LockError::Busy { dir, holder } => write!(
                f,
                "{dir} is in use by another expr ({holder}); one process at a time writes a result directory: wait for it (or stop it), or choose another directory"
            ),
            LockError::Other(e) => f.write_str(e),
        }
    }
}

/// Whether a lock holder (as [`LockError::Busy`] names it) is a run's sentinel, stopping what
/// a killed run left: not a run to interrupt.
pub fn is_sentinel(holder: &str) -> bool {
    holder.contains(&format!(" {} ", crate::exec::vars::SENTINEL_SUBCOMMAND))
        || holder.ends_with(crate::exec::vars::SENTINEL_LOCK_WHAT)
}

/// Take the directory's lock (the directory must exist). `what` says what the caller is about
/// to do, for the message a second process gets.
pub fn lock(dir: &Path, what: &str) -> Result<DirLock, String> {
    try_lock(dir, what).map_err(|e| e.to_string())
}

/// [`lock`], saying apart a directory another expr holds.
pub fn try_lock(dir: &Path, what: &str) -> Result<DirLock, LockError> {
    let other = LockError::Other;
    if !dir.is_dir() {
        return Err(other(format!("{} is not a directory", dir.display())));
    }
    let path = dir.join(LOCK_FILE);
    // never through a link: a `.expr-lock` planted as a symlink (or a second name of another
    // file) must not make expr write elsewhere
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| other(format!("cannot open {}: {e}", path.display())))?
    };
    {
        use std::os::unix::fs::MetadataExt;
        let m = file
            .metadata()
            .map_err(|e| other(format!("{}: {e}", path.display())))?;
        if !m.is_file() || m.nlink() != 1 {
            return Err(other(format!(
                "{} is not a lock file of expr's (not a plain file with one name): remove it",
                path.display()
            )));
        }
    }
    // SAFETY: flock on a file descriptor this function owns; no memory is involved
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            // the holder writes its pid right after it locks: give it a moment
            let mut text = String::new();
            for _ in 0..20 {
                text.clear();
                let _ = file.seek(SeekFrom::Start(0));
                let _ = file.read_to_string(&mut text);
                if !text.trim().is_empty() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            return Err(LockError::Busy {
                dir: dir.display().to_string(),
                holder: holder_text(text.trim()),
            });
        }
        return Err(other(format!("cannot lock {}: {err}", path.display())));
    }
    // who holds it, for the next one's message: "PID WHAT", then the host on a line of its own
    // (on a shared filesystem the holder may be another machine, whose pids are not ours)
    let me = format!("{} {}\n{}", std::process::id(), what, this_host());
    let _ = file.set_len(0);
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.write_all(me.as_bytes());
    Ok(DirLock { _file: file })
}

/// For a process that only signals (`expr stop`): the lock when the directory can hold one,
/// `None` when it cannot be written (read-only media); an error only when another expr holds it.
pub fn lock_if_writable(dir: &Path, what: &str) -> Result<Option<DirLock>, LockError> {
    // only expr's own directories get a lock file
    if !dir.is_dir() || !dir.join("journal.jsonl").is_file() {
        return Ok(None);
    }
    match try_lock(dir, what) {
        Ok(l) => Ok(Some(l)),
        Err(e @ LockError::Busy { .. }) => Err(e),
        Err(LockError::Other(_)) => Ok(None),
    }
}

/// Whether a live expr holds `dir`'s lock (a directory that no longer exists, or whose lock
/// is free, belongs to no running expr).
pub fn held(dir: &Path) -> bool {
    let Ok(f) = std::fs::File::open(dir.join(LOCK_FILE)) else {
        return false;
    };
    // SAFETY: flock on a descriptor this function owns; released when `f` is dropped
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// Whether a run holds `dir` (a live expr holds its lock, and not a killed run's sentinel
/// stopping what that run left).
pub fn held_by_a_run(dir: &Path) -> bool {
    held(dir)
        && !std::fs::read_to_string(dir.join(LOCK_FILE))
            .is_ok_and(|t| is_sentinel(&holder_text(t.trim())))
}

/// A process's command line from /proc, words joined by spaces (empty when it cannot be read).
pub fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split('\0')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// This machine's name, as the kernel has it (empty when it cannot be read).
pub fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// "pid N on host H: `expr run …`" from the lock file's "N what" and host line, with the
/// holder's command line when it runs here and /proc has it.
fn holder_text(text: &str) -> String {
    let (first, host) = text.split_once('\n').unwrap_or((text, ""));
    let (pid, what) = first.split_once(' ').unwrap_or((first, ""));
    let host = host.trim();
    let here = host.is_empty() || host == this_host();
    let cmd = pid
        .parse::<i32>()
        .ok()
        .filter(|_| here)
        .map(cmdline)
        .filter(|c| !c.is_empty());
    let on = if host.is_empty() {
        String::new()
    } else {
        format!(" on host {host}")
    };
    match (pid.is_empty(), cmd) {
        (true, _) => "its pid is not recorded yet".into(),
        (false, Some(c)) => format!("pid {pid}{on}: `{c}`"),
        (false, None) => format!("pid {pid}{on}, {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory a killed run's sentinel holds: said to be the sentinel at work, to wait for
    /// (not "another expr" to stop or interrupt: a SIGINT cut its clean-up in half).
    #[test]
    fn a_directory_the_sentinel_holds_says_wait_not_stop() {
        let said = LockError::Busy {
            dir: "out".into(),
            holder: "pid 7 on host h: `expr __watch /r/out`".into(),
        }
        .to_string();
        assert!(
            said.contains("held by the sentinel of a run that was killed")
                && said.contains("wait a moment")
                && !said.contains("stop it"),
            "{said}"
        );
        assert!(is_sentinel(&format!(
            "pid 7, {}",
            crate::exec::vars::SENTINEL_LOCK_WHAT
        )));
        assert!(!is_sentinel("pid 7 on host h: `expr run e.kdl`"));
    }

    #[test]
    fn a_second_lock_on_the_same_directory_fails_and_names_the_holder() {
        let d = tempfile::tempdir().unwrap();
        let held = lock(d.path(), "run").unwrap();
        // flock locks belong to the open file description: a second open conflicts, as a
        // second process would
        let e = lock(d.path(), "run").unwrap_err();
        assert!(
            e.contains("is in use by another expr")
                && e.contains(&format!(
                    "pid {} on host {}",
                    std::process::id(),
                    this_host()
                )),
            "{e}"
        );
        drop(held);
        assert!(lock(d.path(), "run").is_ok(), "released when dropped");
        // a record left by a holder on another machine names it, without asking our /proc
        assert_eq!(
            holder_text("1 expr bisect\nfar-away"),
            "pid 1 on host far-away, expr bisect"
        );
        // a lock file whose holder died (its record is there, no lock on it) is taken over
        let st = tempfile::tempdir().unwrap();
        std::fs::write(st.path().join(LOCK_FILE), "999999999 bisect\nvm").unwrap();
        assert!(lock(st.path(), "bisect").is_ok());
        // a planted link is refused and its target untouched
        let (_d, victim) = crate::util::testutil::temp_file("file", "important");
        let e2 = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&victim, e2.path().join(LOCK_FILE)).unwrap();
        assert!(lock(e2.path(), "report").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "important");
        // a second name of another file too
        let e3 = tempfile::tempdir().unwrap();
        std::fs::hard_link(&victim, e3.path().join(LOCK_FILE)).unwrap();
        assert!(lock(e3.path(), "report").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "important");
    }
}
