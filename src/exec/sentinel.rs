//! The run's sentinel: a small second expr (`expr __watch DIR`, in a session of its own) that a
//! run starts before anything else and that outlives it only if the run dies without its
//! teardown — `kill -9`, the OOM killer, a CI runner that kills expr's process group. Then it
//! does what `expr stop DIR` does: stops every process group the journal recorded that is still
//! the one expr started, and cancels the run's Slurm jobs. It says what it did in
//! `runtime/after-expr-died.txt`.
//!
//! The run holds the write end of a pipe that is the sentinel's stdin (close-on-exec: no step
//! inherits it). A run that ends — ok, failed or interrupted, after its teardown — writes
//! `done` and closes it, and the sentinel exits at once; a run that dies closes it unwritten.
//! `EXPR_NO_SENTINEL=1` starts none (a killed run's processes then wait for `expr stop`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// The hidden subcommand the sentinel runs as.
pub use crate::exec::vars::SENTINEL_SUBCOMMAND as SUBCOMMAND;

/// Set to `1` (or anything but `0` or empty): no sentinel.
pub const OFF_VAR: &str = "EXPR_NO_SENTINEL";

/// The file, in the result directory, where the sentinel says what it stopped.
pub const LOG: &str = "runtime/after-expr-died.txt";

/// What the sentinel's lock says it does (a second process is told).
pub use crate::exec::vars::SENTINEL_LOCK_WHAT as LOCK_WHAT;

/// What the run tells the sentinel as it ends after its teardown.
const DONE: &[u8] = b"done\n";

/// How long the sentinel waits for the dead run's lock (the kernel releases it as the run dies;
/// a step of the run that was being spawned may hold it a moment longer).
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The run's end of its sentinel: dropped after the teardown, it says `done`.
pub struct Sentinel {
    pipe: Option<ChildStdin>,
    child: Child,
}

impl Sentinel {
    /// Start the sentinel of the run writing `dir` (absolute). `Err` says why none runs.
    pub fn start(dir: &Path) -> Result<Option<Sentinel>, String> {
        if std::env::var(OFF_VAR).is_ok_and(|v| !v.is_empty() && v != "0") {
            return Ok(None);
        }
        let exe = std::env::current_exe().map_err(|e| format!("which program is expr: {e}"))?;
        let mut cmd = Command::new(&exe);
        cmd.arg(SUBCOMMAND)
            .arg(dir)
            // not one of the run's processes: `expr stop` and the checks of whose a group is
            // read this variable
            .env_remove(crate::exec::vars::RESULT_DIR_VAR)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: setsid is async-signal-safe and touches no memory of this process
            unsafe {
                cmd.pre_exec(|| {
                    // a session of its own: a closed terminal or a signal to expr's process
                    // group does not reach it
                    libc::setsid();
                    Ok(())
                });
            }
        }
        let mut child = crate::exec::backend::children::own(|| cmd.spawn(), |c| vec![c.id()])
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let pipe = child.stdin.take();
        Ok(Some(Sentinel { pipe, child }))
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        // a panic left the run's processes as they were: the sentinel stops them once expr is
        // gone (it waits for the lock this process still holds, so it is not waited for here)
        if std::thread::panicking() {
            return;
        }
        if let Some(mut p) = self.pipe.take() {
            let _ = p.write_all(DONE);
        }
        let _ = self.child.wait();
    }
}

/// `expr __watch DIR`: wait for the run to end; if it died without its teardown, stop what it
/// left. Exit 0 when nothing was left or all of it is gone.
pub fn watch(dir: &Path) -> i32 {
    // what a terminal or a hurried user sends does not cut a clean-up in half (a TERM the
    // step ignores waits 500 ms for its KILL); SIGKILL still ends it
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: setting a signal's disposition to SIG_IGN touches no memory of this process
        unsafe {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
    let mut said = Vec::new();
    // until the run's end of the pipe closes: at its end, or as it dies
    let _ = std::io::stdin().lock().read_to_end(&mut said);
    if said.ends_with(DONE) {
        return 0;
    }
    let started = chrono::Local::now();
    let lock = take_lock(dir);
    let mut lines = vec![format!(
        "{}: the expr that ran this directory ended without its teardown (killed); stopping what its journal recorded, as `expr stop` does",
        started.format("%Y-%m-%d %H:%M:%S")
    )];
    let gone = match lock {
        Err(e) => {
            lines.push(format!("not stopped: {e}"));
            false
        }
        Ok(_lock) => match crate::exec::stop::stop(dir) {
            Ok((out, gone)) => {
                if out.is_empty() {
                    lines.push("nothing recorded in the journal was still running".into());
                }
                lines.extend(out);
                gone
            }
            Err(e) => {
                lines.push(format!("not stopped: {e}"));
                false
            }
        },
    };
    write_log(dir, &lines);
    if gone {
        0
    } else {
        1
    }
}

/// The dead run's lock, once the kernel has released it.
fn take_lock(dir: &Path) -> Result<crate::exec::lock::DirLock, String> {
    let end = Instant::now() + LOCK_WAIT;
    loop {
        match crate::exec::lock::try_lock(dir, LOCK_WHAT) {
            Ok(l) => return Ok(l),
            Err(crate::exec::lock::LockError::Busy { .. }) if Instant::now() < end => {
                std::thread::sleep(Duration::from_millis(100));
            }
            // a new run took the directory first (`--resume`): it stops what was left
            Err(crate::exec::lock::LockError::Busy { holder, .. }) => {
                return Err(format!(
                    "another expr holds the directory now ({holder}): a `--resume` stops what the killed run left; else `expr stop` once it is done"
                ))
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Add the lines to [`LOG`] (never through a link).
fn write_log(dir: &Path, lines: &[String]) {
    use std::os::unix::fs::OpenOptionsExt;
    let path: PathBuf = dir.join(LOG);
    if let Some(parent) = path.parent() {
        if parent.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
            return;
        }
        let _ = std::fs::create_dir(parent);
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
    {
        let _ = f.write_all((lines.join("\n") + "\n").as_bytes());
    }
}
