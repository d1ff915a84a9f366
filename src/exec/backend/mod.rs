//! The execution backends behind one interface: this machine, an SSH host, a node of a Slurm
//! allocation. Each says how a step's command starts (always as a local process group: the
//! program itself, the `ssh` client, or `srun`), how it is stopped, and whether anything of it
//! is left. `spawn`, `stop` and `alive_after` below go through it.

pub mod agent;
pub mod children;
pub mod escape;
pub mod host;
pub mod reaper;
pub mod scratch;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::model::{Host, NodePlace};
use crate::util::shell;
use host::{Proc, ProcKind, Reaper};
use std::path::Path;

pub trait Backend {
    /// `local`, `ssh` or `slurm` (for messages and the journal).
    fn name(&self) -> &'static str;
    /// The command that runs step `step`'s `line` (or `direct`'s argv) from `cwd`.
    fn command(&self, step: &str, cwd: &str, line: &str, direct: Option<Direct>) -> Command;
    /// Whether the process started here is a client of a process elsewhere (its group is remote).
    fn remote(&self) -> bool {
        false
    }
    /// TERM, wait `grace`, KILL; true when nothing of the process is left.
    fn stop(&self, p: &mut Proc, grace: Duration) -> bool {
        stop_local(p, grace);
        self.gone(p)
    }
    /// Whether nothing of the process is left.
    fn gone(&self, p: &mut Proc) -> bool {
        local_gone(p)
    }
}

/// This machine: the program itself, or `bash -c` in the step's directory.
pub struct Local;

impl Backend for Local {
    fn name(&self) -> &'static str {
        "local"
    }
    fn command(&self, _step: &str, cwd: &str, line: &str, direct: Option<Direct>) -> Command {
        match direct.filter(|d| !d.0.is_empty()) {
            Some((argv, env)) => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..])
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .current_dir(cwd)
                    .stdin(Stdio::null());
                c
            }
            None => {
                // the directory is set by the spawn itself (a missing one fails the spawn,
                // nothing runs): bash then execs a single simple command, as `sh -c` does
                // under hyperfine
                let mut c = Command::new(bash());
                // bash's messages still begin `bash: …`, wherever it was found
                std::os::unix::process::CommandExt::arg0(&mut c, "bash");
                c.arg("-c").arg(line).current_dir(cwd).stdin(Stdio::null());
                c
            }
        }
    }
}

/// `bash` as found on `PATH` once, as bash's own command hash does: the child would otherwise
/// try each `PATH` directory in turn (8 failed `execve` per step on this machine's `PATH`).
/// `bash` itself when it is not found, so that the spawn reports the error.
pub fn bash() -> &'static std::path::Path {
    static BASH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BASH.get_or_init(|| {
        std::env::var_os("PATH")
            .and_then(|p| on_path(&p, "bash"))
            .unwrap_or_else(|| "bash".into())
    })
}

/// The first executable file `name` in the directories of `path`, as execvp would find it;
/// none when a relative entry (or an empty one: the working directory, which a step may
/// change) comes first or nothing is found.
fn on_path(path: &std::ffi::OsStr, name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    for d in std::env::split_paths(path) {
        if !d.is_absolute() {
            return None;
        }
        let f = d.join(name);
        // executable for this user as exec would judge it (owner, mode, a noexec mount):
        // execvp passes over one that is not and tries the next directory
        let runnable = std::fs::metadata(&f).is_ok_and(|m| m.is_file())
            && std::ffi::CString::new(f.as_os_str().as_bytes())
                // SAFETY: access(2) reads a NUL-terminated path and touches no other memory.
                .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0);
        if runnable {
            return Some(f);
        }
    }
    None
}

/// An SSH host: the system OpenSSH client over the host's multiplexed connection, with the
/// remote wrapper that reports the remote group and stops it when the connection's stdin closes.
pub struct Ssh<'a> {
    pub ssh: &'a host::Ssh,
    pub host: &'a Host,
}

impl Backend for Ssh<'_> {
    fn name(&self) -> &'static str {
        "ssh"
    }
    fn command(&self, _step: &str, cwd: &str, line: &str, _direct: Option<Direct>) -> Command {
        // the step's secrets come on stdin, first (`spawn` writes them)
        let mut c = self.ssh.command(
            self.host,
            &crate::plan::remote::remote_wrapper_with_env(cwd, line),
        );
        c.stdin(Stdio::piped());
        c
    }
    fn remote(&self) -> bool {
        true
    }
    fn stop(&self, p: &mut Proc, grace: Duration) -> bool {
        // the stop script itself waits for the remote group to go: one ssh round trip, not two
        let mut remote_gone = false;
        p.poll_remote_pgid();
        if let Some(pg) = p.remote_pgid {
            remote_gone = matches!(
                host::stop_remote_group(self.ssh, self.host, pg, p.remote_start, grace),
                Ok(true)
            );
        }
        stop_local(p, grace);
        if remote_gone {
            local_gone(p)
        } else {
            self.gone(p)
        }
    }
    fn gone(&self, p: &mut Proc) -> bool {
        let remote_gone = match p.remote_pgid {
            Some(pg) => host::remote_group_gone(self.ssh, self.host, pg),
            None => true,
        };
        local_gone(p) && remote_gone
    }
}

/// A node of a Slurm allocation: `srun --jobid J --overlap` on the node, a local process group
/// (TERM to srun cancels the step).
pub struct Slurm<'a> {
    pub place: &'a NodePlace,
    pub host: &'a str,
}

pub use crate::plan::srun::STEP_IDS;

impl Backend for Slurm<'_> {
    fn name(&self) -> &'static str {
        "slurm"
    }
    fn command(&self, step: &str, cwd: &str, line: &str, direct: Option<Direct>) -> Command {
        let line = match direct.filter(|d| !d.0.is_empty()) {
            Some((argv, env)) => {
                // a secret is in srun's own environment, which it passes on (`--export=ALL`)
                let exports: Vec<String> = env
                    .iter()
                    .filter(|(k, _)| !crate::util::secret::is_secret(k))
                    .map(|(k, v)| format!("{k}={}", shell::quote(v)))
                    .collect();
                if exports.is_empty() {
                    format!("exec {}", shell::join(argv))
                } else {
                    format!("export {}; exec {}", exports.join(" "), shell::join(argv))
                }
            }
            None => line.to_string(),
        };
        // the step says its id into the result directory (not its log, which collectors read)
        let line = crate::plan::srun::step_line(step, self.host, &line);
        let argv = crate::plan::srun::srun_argv(self.place, step, cwd, &line);
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..]).stdin(Stdio::null());
        c
    }
    fn stop(&self, p: &mut Proc, grace: Duration) -> bool {
        match &self.place.job {
            Some(job) => self.stop_step(job, p, grace),
            None => {
                stop_local(p, grace);
                local_gone(p)
            }
        }
    }
}

impl Slurm<'_> {
    /// TERM the step by its id (`scancel --signal=TERM JOB.STEP`), wait `grace` for srun to
    /// end, then KILL what is left of the step and of srun. A step Slurm does not list (not yet
    /// registered, or already gone) is stopped through srun, which forwards the signal.
    fn stop_step(&self, job: &str, p: &mut Proc, grace: Duration) -> bool {
        let ids = crate::exec::slurm::step_ids(job, &p.step);
        if ids.is_empty() {
            stop_local(p, grace);
        } else {
            for id in &ids {
                crate::exec::slurm::signal_step(id, "TERM");
            }
            if p.try_exit().is_none() {
                p.wait_exit(host::deadline(grace));
            }
            for id in crate::exec::slurm::step_ids(job, &p.step) {
                crate::exec::slurm::signal_step(&id, "KILL");
            }
            if p.try_exit().is_none() {
                p.wait_exit(Instant::now() + Duration::from_secs(2));
            }
            stop_local(p, Duration::ZERO);
        }
        // the controller drops a step a moment after its tasks end
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            let left = crate::exec::slurm::step_ids(job, &p.step);
            if left.is_empty() {
                return local_gone(p);
            }
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The backend of a host.
pub fn of<'a>(ssh: &'a host::Ssh, h: &'a Host) -> Box<dyn Backend + 'a> {
    match &h.place {
        // inside an array task, the task's own node runs its steps as local processes
        Some(place) if place.here => Box::new(Local),
        Some(place) => Box::new(Slurm {
            place,
            host: &h.name,
        }),
        None if h.is_local() => Box::new(Local),
        None => Box::new(Ssh { ssh, host: h }),
    }
}

/// TERM the local process group, wait `grace`, then KILL what is left.
fn stop_local(p: &mut Proc, grace: Duration) {
    if let Some(pg) = p.local_pgid() {
        // the leader, or what it left in its group (`sleep 9 &` after it ended)
        let alive = |p: &mut Proc| p.try_exit().is_none() || host::group_alive(pg);
        if alive(p) {
            host::signal_group(pg, libc::SIGTERM);
            // the grace ends early when a second signal asks expr to stop now
            let end = host::deadline(grace);
            while alive(p) && Instant::now() < end {
                if crate::exec::signals::count() >= 2 {
                    break;
                }
                let slice = (Instant::now() + Duration::from_millis(20)).min(end);
                if p.try_exit().is_none() {
                    p.wait_exit(slice);
                } else {
                    std::thread::sleep(slice.saturating_duration_since(Instant::now()));
                }
            }
        }
        if alive(p) {
            host::signal_group(pg, libc::SIGKILL);
        }
        p.wait_exit(Instant::now() + Duration::from_secs(2));
        // a process KILL reached is gone once it has run again: not a survivor before then
        let end = Instant::now() + Duration::from_secs(2);
        while host::group_alive(pg) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Whether nothing of the process is left on this machine.
fn local_gone(p: &mut Proc) -> bool {
    p.local_pgid().is_none_or(|pg| !host::group_alive(pg))
}

#[cfg(test)]
mod tests {
    use super::on_path;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn on_path_finds_what_execvp_would() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (d.path().join("a"), d.path().join("b"), d.path().join("c"));
        for x in [&a, &b, &c] {
            std::fs::create_dir(x).unwrap();
        }
        // a: not executable; b: a directory of that name; c: the program
        std::fs::write(a.join("prog"), "").unwrap();
        std::fs::create_dir(b.join("prog")).unwrap();
        std::fs::write(c.join("prog"), "").unwrap();
        std::fs::set_permissions(c.join("prog"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([&a, &b, &c]).unwrap();
        assert_eq!(on_path(&path, "prog"), Some(c.join("prog")));
        // nothing found, and a relative entry first: left to the spawn
        assert_eq!(on_path(&path, "other"), None);
        let rel = std::env::join_paths([std::path::Path::new("rel"), &c]).unwrap();
        assert_eq!(on_path(&rel, "prog"), None);
        assert_eq!(on_path(std::ffi::OsStr::new(":/bin"), "prog"), None);
    }
}

/// A program and its arguments and environment, run without a shell (`shell "none"`).
pub type Direct<'a> = (&'a [String], &'a [(String, String)]);

/// How a step's command starts besides its line: without a shell, with a mark, and with its
/// secrets in its environment.
#[derive(Default, Clone, Copy)]
pub struct Launch<'a> {
    pub direct: Option<Direct<'a>>,
    /// `super::vars::MARK_VAR`'s value for the process and its descendants.
    pub mark: Option<&'a str>,
    /// The line without the step's secrets, and the secrets: they go into the process's
    /// environment (this machine, a Slurm node through srun, a host's agent) or first on a
    /// plain ssh command's stdin (ssh passes no environment), and the line that runs is this
    /// one, so no command line in `ps` holds them.
    pub secrets: Option<(&'a str, &'a [(String, String)])>,
}

/// Start a step's command on `host`, output to `log`.
pub fn spawn(
    ssh: &host::Ssh,
    host: &Host,
    step: &str,
    cwd: &str,
    line: &str,
    log: &Path,
    how: Launch,
) -> Result<Proc, String> {
    let Launch {
        direct,
        mark,
        secrets,
    } = how;
    let file = agent::open_log(log)?;
    let backend = of(ssh, host);
    let secret_env: &[(String, String)] = secrets.map(|(_, env)| env).unwrap_or(&[]);
    // the secrets go in the environment (or first on a plain ssh command's stdin): the line
    // that runs is the one without them
    let line = secrets.map(|(public, _)| public).unwrap_or(line);
    // a remote host with an agent: a message on its session, not an ssh command
    if let (true, Some(agent)) = (backend.remote(), ssh.agent(host)) {
        let env: Vec<(&str, &str)> = mark
            .map(|m| (super::vars::MARK_VAR, m))
            .into_iter()
            .chain(secret_env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .collect();
        let st = agent.spawn(line, cwd, &env, file)?;
        return Ok(Proc {
            host: host.name.clone(),
            step: step.to_string(),
            log: log.to_path_buf(),
            kind: ProcKind::Agent,
            started: st.started,
            reaper: st.reaper,
            remote_pgid: st.pgid,
            remote_start: st.start,
        });
    }
    let err = file.try_clone().map_err(|e| e.to_string())?;
    // the mark goes into the environment of the process itself (the command line of a timed
    // step stays one simple command, which bash execs without a fork); a remote step exports
    // it in its wrapper, where ssh would not pass it on
    let marked;
    let line = match mark {
        Some(m) if backend.remote() => {
            marked = format!(
                "export {}={}; {line}",
                super::vars::MARK_VAR,
                crate::util::shell::quote(m)
            );
            marked.as_str()
        }
        _ => line,
    };
    let mut c = backend.command(step, cwd, line, direct);
    if let Some(m) = mark {
        c.env(super::vars::MARK_VAR, m);
    }
    if !backend.remote() {
        c.envs(secret_env.iter().map(|(k, v)| (k, v)));
    }
    c.stdout(file).stderr(err);
    {
        use std::os::unix::process::CommandExt;
        c.process_group(0);
    }
    let mut started = Instant::now();
    let floor = super::backend::reaper::own_rss_kib();
    // (timed from inside the lock: a wait for another thread's look at the children is not
    // the step's)
    let child = super::backend::children::own(
        || {
            started = Instant::now();
            c.spawn()
        },
        |c| vec![c.id()],
    )
    .map_err(|e| {
        if backend.remote() {
            format!("cannot start ssh: {e}")
        } else {
            // the program, as it was looked up (`bash` for a shell line); a working directory
            // that is not there fails the same way ("No such file or directory"), and named the
            // shell, which is there
            let program = c.get_program().to_string_lossy().into_owned();
            match c.get_current_dir().filter(|d| !d.is_dir()) {
                Some(d) => format!(
                    "cannot start `{}`: its working directory {} is not a directory there",
                    program.escape_debug(),
                    d.display().to_string().escape_debug()
                ),
                None => format!("cannot start `{}`: {e}", program.escape_debug()),
            }
        }
    })?;
    let reaper = Reaper::start(child.id(), floor);
    let kind = if backend.remote() {
        let mut child = child;
        // the wrapper's first line: the secrets to export (an empty line without); a pipe's
        // buffer takes it at once, and a wrapper that never reads it has ended
        if let Some(stdin) = child.stdin.as_mut() {
            use std::io::Write;
            let _ = stdin.write_all(crate::plan::remote::env_line(secret_env).as_bytes());
            let _ = stdin.flush();
        }
        ProcKind::Ssh(child)
    } else {
        ProcKind::Local(child)
    };
    Ok(Proc {
        host: host.name.clone(),
        step: step.to_string(),
        log: log.to_path_buf(),
        kind,
        started,
        reaper,
        remote_pgid: None,
        remote_start: None,
    })
}

/// Stop a process: TERM its group, wait `grace`, then KILL. Remote groups are stopped by a second
/// ssh call using the recorded process group. Returns false if something survived.
pub fn stop(ssh: &host::Ssh, host: &Host, p: &mut Proc, grace: Duration) -> bool {
    of(ssh, host).stop(p, grace)
}

/// True when nothing of the process is left (locally and, for remote steps, remotely).
pub fn alive_after(ssh: &host::Ssh, host: &Host, p: &mut Proc) -> bool {
    of(ssh, host).gone(p)
}
