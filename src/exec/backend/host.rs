//! Where steps run: this machine (one process group per step) or a remote host through the
//! system OpenSSH client (one multiplexed connection per host). Every started process has a
//! reaper thread blocked in `wait4`: its exit is known the moment it happens, with its CPU times
//! and peak RSS, and waiting loops wake on exits instead of polling.

use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::exec::backend::agent::Agent;
pub use crate::exec::backend::children::{start_time, Stat};
pub use crate::exec::backend::reaper::{exits_seen, wait_exits, Exit, Reaper};
use crate::model::Host;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A started process: local (its own process group) or remote (a remote process group).
pub struct Proc {
    pub host: String,
    pub step: String,
    pub log: PathBuf,
    pub kind: ProcKind,
    /// Just before the process was spawned.
    pub started: Instant,
    /// Its exit, once reaped.
    pub reaper: Reaper,
    /// The remote process group, once the wrapper has reported it.
    pub remote_pgid: Option<i64>,
    /// The remote group leader's start time (clock ticks after boot), reported with the group.
    pub remote_start: Option<u64>,
}

/// The process handle. Its reaper waits for it, so std's own wait/kill are never called on it.
pub enum ProcKind {
    Local(Child),
    /// The local `ssh` client; dropping its stdin makes the remote watcher stop the job.
    Ssh(Child),
    /// Started by the host's agent: no process here; its exit comes from the agent.
    Agent,
}

impl Proc {
    /// The local process group (the leader's pid).
    pub fn local_pgid(&self) -> Option<i64> {
        match &self.kind {
            ProcKind::Local(c) | ProcKind::Ssh(c) => Some(c.id() as i64),
            ProcKind::Agent => None,
        }
    }

    /// Exit code once finished (`-signal` when killed by a signal).
    pub fn try_exit(&mut self) -> Option<i32> {
        let code = self.reaper.get().map(|e| e.code)?;
        // the wrapper's line is read (and blanked) before anything reads the log as output
        self.poll_remote_pgid();
        Some(code)
    }

    /// The exit, waiting until `end` at most.
    pub fn wait_exit(&self, end: Instant) -> Option<Exit> {
        self.reaper.wait_until(end)
    }

    /// Read `EXPR_PGID=N` from the head of a remote step's log.
    pub fn poll_remote_pgid(&mut self) -> Option<i64> {
        if self.remote_pgid.is_some() || matches!(self.kind, ProcKind::Local(_)) {
            return self.remote_pgid;
        }
        let mut head = String::new();
        if let Ok(mut f) = File::open(&self.log) {
            let mut buf = [0u8; 256];
            if let Ok(n) = f.read(&mut buf) {
                head = String::from_utf8_lossy(&buf[..n]).into_owned();
            }
        }
        if let Some(rest) = head.strip_prefix("EXPR_PGID=") {
            // the whole line: the wrapper writes it at once
            if let Some((line, _)) = rest.split_once('\n') {
                // it is expr's, not the step's output: blanked where it stands (same length,
                // so the step's lines keep their numbers and the offsets of what follows), so
                // no collector, ready-log or expect-log reads its numbers as the step's
                blank_head(&self.log, "EXPR_PGID=".len() + line.len());
                let mut it = line.split_whitespace();
                if let Some(n) = it.next().and_then(|t| t.parse().ok()) {
                    self.remote_pgid = Some(n);
                }
                self.remote_start = it
                    .next()
                    .and_then(|t| t.strip_prefix("EXPR_START="))
                    .and_then(|t| t.parse().ok());
            }
        }
        self.remote_pgid
    }
}

/// Overwrite the first `len` bytes of `log` with blanks (the file is written at its end
/// meanwhile: the step's output is appended, never at these bytes).
fn blank_head(log: &std::path::Path, len: usize) {
    use std::os::unix::fs::FileExt;
    if let Ok(f) = std::fs::OpenOptions::new().write(true).open(log) {
        let _ = f.write_all_at(&vec![b' '; len], 0);
    }
}

/// The shared ssh connections of expr processes that are gone (a SIGKILL leaves them up until
/// ControlPersist ends them): each told to exit through its socket, and its directory removed
/// when it holds nothing but sockets. `run` does this as it starts, `expr stop` as it stops a
/// killed run's processes.
pub fn close_stale_masters() {
    let tmp = std::env::temp_dir();
    if let Ok(rd) = std::fs::read_dir(&tmp) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("expr-cm-")
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: kill with signal 0 only asks whether the process exists
            let alive = unsafe { libc::kill(pid, 0) == 0 }
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
            if alive || pid as u32 == std::process::id() {
                continue;
            }
            let only_sockets = std::fs::read_dir(e.path()).is_ok_and(|d| {
                d.flatten().all(|f| {
                    use std::os::unix::fs::FileTypeExt;
                    f.file_type().is_ok_and(|t| t.is_socket())
                })
            });
            if only_sockets {
                // a master of a killed run persists (ControlPersist): told to exit first, by its
                // socket's own path (the host name is not read)
                for f in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
                    let path = format!("ControlPath={}", f.path().display());
                    let _ = duct::cmd!("ssh", "-o", path, "-O", "exit", "expr-stale-master")
                        .stdin_null()
                        .stdout_null()
                        .stderr_null()
                        .unchecked()
                        .run();
                }
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// How to reach hosts: ssh options shared by every call, and the agent of each host (one
/// session per host and run, `crate::exec::backend::agent`) once its connection is open.
#[derive(Clone)]
pub struct Ssh {
    /// Directory holding the ControlMaster sockets.
    pub control_dir: PathBuf,
    /// An ssh_config file passed as `-F` (EXPR_SSH_CONFIG), for tests and special setups.
    pub config: Option<String>,
    /// Start an agent per host (`EXPR_SSH_AGENT=0` keeps one ssh command per operation).
    pub use_agent: bool,
    agents: Arc<Mutex<HashMap<String, Arc<Agent>>>>,
    /// Hosts whose agent could not start, and why: they get one ssh command per operation.
    fallbacks: Arc<Mutex<Vec<(String, String)>>>,
}

impl Ssh {
    pub fn new(control_dir: PathBuf) -> Self {
        Ssh {
            control_dir,
            config: crate::plan::ssh_config(),
            use_agent: std::env::var("EXPR_SSH_AGENT").map_or(true, |v| v != "0"),
            agents: Arc::default(),
            fallbacks: Arc::default(),
        }
    }

    /// Options for every ssh call to `host`: those `plan` and commands.sh print
    /// ([`crate::plan::ssh_options`]), and the shared connection.
    pub fn options(&self, host: &Host) -> Vec<String> {
        let mut o = crate::plan::ssh_options(host, self.config.as_deref());
        o.extend(["-o".into(), format!("ControlPath={}", self.socket(host))]);
        o
    }

    /// The socket of `host`'s shared connection: one per host of the experiment, named by its
    /// name. ssh's `%C` (user, host, port) would give two names for one machine one socket,
    /// and the second master, finding it taken, would run on as a plain `ssh -f -N`.
    pub fn socket(&self, host: &Host) -> String {
        let name = crate::util::hash::fnv1a(&host.name);
        format!("{}/cm-{name}", self.control_dir.display())
    }

    /// The port ssh uses for `host` (`ssh -G`: the experiment's `ssh-port`, else the config's).
    pub fn effective_port(&self, host: &Host) -> Option<u16> {
        let mut args = self.options(host);
        args.extend(["-G".into(), host.ssh.clone()]);
        let out = duct::cmd("ssh", args)
            .stdin_null()
            .stderr_null()
            .unchecked()
            .read()
            .ok()?;
        out.lines()
            .find_map(|l| l.strip_prefix("port ")?.trim().parse().ok())
    }

    /// `ssh … target CMD` as a Command: a step's, spawned and reaped as measured steps are.
    pub fn command(&self, host: &Host, remote: &str) -> Command {
        let mut c = Command::new("ssh");
        c.args(self.options(host)).arg(&host.ssh).arg(remote);
        c
    }

    /// `ssh … target CMD` as a helper command, for [`run_captured`].
    pub fn helper(&self, host: &Host, remote: &str) -> duct::Expression {
        let mut args = self.options(host);
        args.extend([host.ssh.clone(), remote.to_string()]);
        duct::cmd("ssh", args)
    }

    /// Open the multiplexed connection (ControlMaster, persisting in the background), then the
    /// host's agent over it; a host where the agent cannot start (no python3, a restricted
    /// shell) is said in [`Ssh::fallbacks`] and reached with one ssh command per operation.
    pub fn open(&self, host: &Host) -> Result<(), String> {
        std::fs::create_dir_all(&self.control_dir)
            .map_err(|e| format!("cannot create {}: {e}", self.control_dir.display()))?;
        let mut args = self.options(host);
        args.extend(
            [
                "-o",
                "ControlMaster=yes",
                "-o",
                "ControlPersist=600",
                "-f",
                "-N",
            ]
            .map(String::from),
        );
        args.push(host.ssh.clone());
        // `ConnectTimeout` bounds the TCP connection only: a server that accepts and then says
        // nothing (after its banner, in the key exchange) is bounded here; a Ctrl-C stops the
        // wait at once (it waited out the limit, 8.5 s after the signal)
        let stop = || crate::exec::signals::count() > 0;
        match run_captured_until(duct::cmd("ssh", args), None, OPEN_LIMIT, &stop) {
            Ok((0, _)) => {}
            Ok((code, out)) if out.trim().is_empty() => {
                return Err(format!(
                    "ssh exited with code {code} and printed nothing (`ssh -v {}` shows why)",
                    crate::util::shell::quote(&host.ssh)
                ))
            }
            Ok((_, out)) => return Err(out.trim().to_string()),
            Err(e) if e.starts_with("timed out") => {
                return Err(format!(
                    "ssh to `{}` did not finish connecting within {} s (the port answers, but the key exchange or the login does not end)",
                    host.ssh,
                    OPEN_LIMIT.as_secs()
                ))
            }
            Err(e) => return Err(format!("cannot run ssh: {e}")),
        }
        self.start_agent(host);
        Ok(())
    }

    /// Start the host's agent over its open connection (a `--jobs` worker starts its own over
    /// the run's): without one, every step is a plain ssh command, whose wrapper times and
    /// waits otherwise.
    pub fn start_agent(&self, host: &Host) {
        if self.use_agent {
            let mut c = Command::new("ssh");
            c.args(self.options(host)).arg(&host.ssh);
            match Agent::start(c) {
                Ok(a) => {
                    if let Ok(mut m) = self.agents.lock() {
                        m.insert(host.name.clone(), Arc::new(a));
                    }
                }
                Err(e) => {
                    if let Ok(mut f) = self.fallbacks.lock() {
                        f.push((host.name.clone(), e));
                    }
                }
            }
        }
    }

    /// The host's agent, while its session is up.
    pub fn agent(&self, host: &Host) -> Option<Arc<Agent>> {
        let m = self.agents.lock().ok()?;
        m.get(&host.name).filter(|a| a.alive()).cloned()
    }

    /// Hosts whose agent could not start, and why (taken: each is said once).
    pub fn fallbacks(&self) -> Vec<(String, String)> {
        self.fallbacks
            .lock()
            .map(|mut f| std::mem::take(&mut *f))
            .unwrap_or_default()
    }

    /// Close the agent's session (it stops what it started and exits), then the multiplexed
    /// connection.
    /// This connection's agent on `host` ended; the shared master connection stays (a `--jobs`
    /// worker's: the run's other points may be using it).
    pub fn close_agent(&self, host: &Host) {
        let agent = self
            .agents
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&host.name));
        if let Some(a) = agent {
            a.close(Duration::from_secs(3));
        }
    }

    pub fn close(&self, host: &Host) {
        self.close_agent(host);
        let mut args = self.options(host);
        args.extend(["-O".into(), "exit".into(), host.ssh.clone()]);
        let _ = duct::cmd("ssh", args)
            .stdin_null()
            .stdout_null()
            .stderr_null()
            .unchecked()
            .run();
    }

    /// Run a short command on `host` and return (exit code, stdout).
    pub fn run(
        &self,
        host: &Host,
        remote: &str,
        input: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<(i32, String), String> {
        if let Some(a) = self.agent(host) {
            return a.run(remote, input, timeout);
        }
        run_captured(self.helper(host, remote), input, timeout)
    }

    /// As [`Ssh::run`], given up as soon as `stop` says so (a Ctrl-C during preflight): the
    /// host's agent stops the script's group; without an agent the local ssh client is stopped
    /// (the remote shell then ends when it next writes to the closed connection). The error is
    /// `interrupted`.
    pub fn run_until(
        &self,
        host: &Host,
        remote: &str,
        input: Option<&[u8]>,
        timeout: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<(i32, String), String> {
        if let Some(a) = self.agent(host) {
            return a.run_until(remote, input, timeout, stop);
        }
        run_captured_until(self.helper(host, remote), input, timeout, stop)
    }
}

/// How long opening a host's connection (connect, key exchange, login) may take.
const OPEN_LIMIT: Duration = Duration::from_secs(30);

/// Run a helper command with a deadline, feeding `input`, capturing stdout (stderr appended on
/// failure).
pub fn run_captured(
    c: duct::Expression,
    input: Option<&[u8]>,
    timeout: Duration,
) -> Result<(i32, String), String> {
    captured(c, input, timeout, None)
}

/// As `run_captured`, with the command in a session (and process group) of its own, stopped
/// (TERM, then KILL after 1 s to what is left) as soon as `stop` says so: a run interrupted
/// during preflight does not wait for a slow `git diff` in the background of the script, which
/// a shell starts ignoring SIGINT. The error is `interrupted`.
pub fn run_captured_until(
    c: duct::Expression,
    input: Option<&[u8]>,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<(i32, String), String> {
    // a session of its own, without a terminal: a read from /dev/tty fails at once instead of
    // stopping the script as a background job of the terminal (SIGTTIN) until the timeout
    let c = c.before_spawn(|cmd| {
        // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(cmd, || {
                libc::setsid();
                Ok(())
            });
        }
        Ok(())
    });
    captured(c, input, timeout, Some(stop))
}

/// A helper command through duct: its output read to the end (also what a background process
/// of it writes while it holds the pipes), within the deadline.
fn captured(
    c: duct::Expression,
    input: Option<&[u8]>,
    timeout: Duration,
    stop: Option<&dyn Fn() -> bool>,
) -> Result<(i32, String), String> {
    let c = match input {
        Some(data) => c.stdin_bytes(data.to_vec()),
        None => c.stdin_null(),
    };
    let c = c.stdout_capture().stderr_capture().unchecked();
    let h = crate::exec::backend::children::own(|| c.start(), |h| h.pids())
        .map_err(|e| e.to_string())?;
    let pid = h.pids().first().copied().unwrap_or(0) as libc::pid_t;
    // whether the command itself is reaped: only before that is its pid (and, with `stop`,
    // the group it leads) surely its own
    let unreaped = || h.try_wait().ok().flatten().is_none();
    // the command's own group when it has one (while any process is in it, its id is not
    // given to another), else the command alone while it is not reaped
    let left = || unreaped() || (stop.is_some() && group_alive(pid as i64));
    let kill = |sig: libc::c_int| {
        if pid <= 0 {
            return;
        }
        if stop.is_some() {
            if left() {
                signal_group(pid as i64, sig);
            }
        } else if unreaped() {
            // SAFETY: not reaped yet, so the pid is our child.
            unsafe { libc::kill(pid, sig) };
        }
    };
    let end = deadline(timeout);
    let out = loop {
        // with a stop to watch: slices of 50 ms (an exit still wakes the wait at once)
        let slice = match stop {
            Some(_) => end.min(Instant::now() + Duration::from_millis(50)),
            None => end,
        };
        match h.wait_deadline(slice) {
            Ok(Some(out)) => break out,
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
        if stop.is_some_and(|f| f()) {
            // TERM to the whole group, KILL to what is left of it after 1 s (the shell dies
            // at once; a process of its that ignores TERM must not outlive the run)
            kill(libc::SIGTERM);
            let grace = Instant::now() + Duration::from_secs(1);
            while left() && Instant::now() < grace {
                std::thread::sleep(Duration::from_millis(10));
            }
            if left() {
                kill(libc::SIGKILL);
            }
            let _ = h.wait_deadline(Instant::now() + Duration::from_secs(5));
            return Err("interrupted".into());
        }
        if Instant::now() >= end {
            kill(libc::SIGKILL);
            let _ = h.wait_deadline(Instant::now() + Duration::from_secs(5));
            return Err(format!("timed out after {} s", timeout.as_secs()));
        }
    };
    let code = exit_code(&out.status);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Ok((
        code,
        if code == 0 {
            text
        } else {
            format!("{text}{}", String::from_utf8_lossy(&out.stderr))
        },
    ))
}

/// A finished process's code as the reaper says it: its exit code, `-signal` when a signal
/// ended it.
fn exit_code(st: &std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code().or_else(|| st.signal().map(|s| -s)).unwrap_or(-1)
}

/// Now + `d`, saturating at a year from now instead of overflowing.
pub fn deadline(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d.min(Duration::from_secs(365 * 24 * 3600)))
        .unwrap_or(now)
}

/// This boot's id: start times are only comparable within one boot.
pub fn boot_id() -> String {
    // read once: it changes only with a reboot, which this process does not outlive
    static BOOT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    })
    .clone()
}

/// Whether a recorded local group is still the one expr started: alive, and its leader (if it
/// is still there) started when the record says. A group id is not reused while any member of
/// the group lives, so a group whose leader is gone but whose members remain is still ours.
pub fn group_is(pgid: i64, start: Option<u64>, boot: Option<&str>) -> bool {
    if !group_alive(pgid) {
        return false;
    }
    if boot.is_some_and(|b| b != boot_id()) {
        return false;
    }
    match (start, start_time(pgid)) {
        (Some(want), Some(now)) => want == now,
        // no record of the start time: only a group whose leader is gone is trusted
        (None, Some(_)) => false,
        (_, None) => true,
    }
}

/// The shell test that a remote group is still the one recorded (`true` without a start time).
pub fn remote_identity_test(pgid: i64, start: Option<u64>) -> String {
    match start {
        Some(st) => format!(
            "s=$(sed 's/.*) //' /proc/{pgid}/stat 2>/dev/null | cut -d' ' -f20); [ -z \"$s\" ] || [ \"$s\" = {st} ]"
        ),
        None => "true".into(),
    }
}

/// Send a signal to a local process group; true if the group existed.
pub fn signal_group(pgid: i64, sig: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
    unsafe { libc::kill(-(pgid as libc::pid_t), sig) == 0 }
}

/// Whether any process of a local group is alive (zombies, which only wait to be reaped, are not).
pub fn group_alive(pgid: i64) -> bool {
    if pgid <= 1 || !signal_group(pgid, 0) {
        return false;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // fields after the command name: state ppid pgrp …
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" {
            return true;
        }
    }
    false
}

/// TERM a remote group, then KILL after `grace`, if it is still the one recorded; the script
/// watches the group every 10 ms and says whether it is gone at the end. Ok(true): gone (or
/// no longer ours); Ok(false): something is left; Err: the host could not be asked.
pub fn stop_remote_group(
    ssh: &Ssh,
    host: &Host,
    pgid: i64,
    start: Option<u64>,
    grace: Duration,
) -> Result<bool, String> {
    if pgid <= 1 {
        return Err(format!("refusing to signal process group {pgid}"));
    }
    if let Some(a) = ssh.agent(host) {
        return a.stop(pgid, start, grace);
    }
    let script = format!(
        "{test} || {{ echo gone; exit 0; }}; kill -TERM -- -{pgid} 2>/dev/null; for i in $(seq {n}); do kill -0 -- -{pgid} 2>/dev/null || {{ echo gone; exit 0; }}; sleep 0.01; done; kill -KILL -- -{pgid} 2>/dev/null; sleep 0.05; kill -0 -- -{pgid} 2>/dev/null && echo alive || echo gone",
        test = remote_identity_test(pgid, start),
        n = (grace.as_millis() / 10).max(1)
    );
    match ssh.run(
        host,
        &script,
        None,
        grace.saturating_add(Duration::from_secs(15)),
    ) {
        Ok((0, out)) => Ok(out.trim().ends_with("gone")),
        Ok((code, out)) => Err(format!("ssh exit {code}: {}", out.trim())),
        Err(e) => Err(e),
    }
}

/// Whether a remote process group is gone.
pub fn remote_group_gone(ssh: &Ssh, host: &Host, pgid: i64) -> bool {
    if pgid <= 1 {
        return true;
    }
    if let Some(a) = ssh.agent(host) {
        return a.group_alive(pgid, None) == Ok(false);
    }
    matches!(ssh.run(host, &format!("kill -0 -- -{pgid} 2>/dev/null && echo alive || echo gone"), None, Duration::from_secs(15)), Ok((0, out)) if out.trim() == "gone")
}

/// Whether a remote group is gone or is no longer the one recorded (its id was reused).
pub fn remote_group_not_ours(
    ssh: &Ssh,
    host: &Host,
    pgid: i64,
    start: Option<u64>,
) -> Result<bool, String> {
    if pgid <= 1 {
        return Ok(true);
    }
    if let Some(a) = ssh.agent(host) {
        return a.group_alive(pgid, start).map(|alive| !alive);
    }
    let script = format!(
        "if kill -0 -- -{pgid} 2>/dev/null && {}; then echo ours; else echo gone; fi",
        remote_identity_test(pgid, start)
    );
    match ssh.run(host, &script, None, Duration::from_secs(15)) {
        Ok((0, out)) => Ok(out.trim() == "gone"),
        Ok((code, out)) => Err(format!("ssh exit {code}: {}", out.trim())),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn far() -> Host {
        Host {
            name: "far".into(),
            // never reached: the guard answers before any ssh call
            ssh: "no-such-host.invalid".into(),
            ssh_port: 1,
            ip: "127.0.0.1".into(),
            repo: "/".into(),
            gpus: None,
            env: Vec::new(),
            loc: crate::model::Loc {
                src: crate::model::source::Source::new("t", ""),
                span: (0, 0).into(),
            },
            ssh_port_loc: None,
            place: None,
            written: Default::default(),
        }
    }

    #[test]
    fn a_helper_reads_its_output_feeds_its_input_and_says_its_code() {
        let c = duct::cmd("bash", ["-c", "cat; echo out; echo err >&2; exit 3"]);
        let got = run_captured(c, Some(b"in\n"), Duration::from_secs(10));
        assert_eq!(got, Ok((3, "in\nout\nerr\n".into())));
        let c = duct::cmd("bash", ["-c", "echo ok; echo quiet >&2"]);
        assert_eq!(
            run_captured(c, None, Duration::from_secs(10)),
            Ok((0, "ok\n".into()))
        );
        let c = duct::cmd("bash", ["-c", "kill -TERM $$"]);
        assert_eq!(
            run_captured(c, None, Duration::from_secs(10)).map(|r| r.0),
            Ok(-libc::SIGTERM)
        );
    }

    #[test]
    fn a_helper_whose_background_child_holds_its_pipe_ends_at_its_deadline_with_its_group() {
        // the script exits at once; its background child keeps stdout open for 30 s
        let dir = std::env::temp_dir().join(format!("expr-helper-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let pidfile = dir.join("pid");
        let script = format!(
            "sleep 30 & echo $! > {}; echo started",
            crate::util::shell::quote(&pidfile.display().to_string())
        );
        let t = Instant::now();
        let got = run_captured_until(
            duct::cmd("bash", ["-c", &script]),
            None,
            Duration::from_secs(2),
            &|| false,
        );
        assert_eq!(got, Err("timed out after 2 s".into()));
        assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
        // its group (the script's session) was killed with it
        crate::util::testutil::wait_gone(
            &pidfile,
            Duration::from_secs(5),
            "the helper's background child",
        );
        let _ = std::fs::remove_dir_all(&dir);
        // stopped as soon as asked
        let t = Instant::now();
        let asked = Instant::now() + Duration::from_millis(300);
        let got = run_captured_until(
            duct::cmd("bash", ["-c", "sleep 30"]),
            None,
            Duration::from_secs(30),
            &|| Instant::now() > asked,
        );
        assert_eq!(got, Err("interrupted".into()));
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    #[test]
    fn groups_0_and_1_and_negative_are_never_signalled_remotely() {
        let ssh = Ssh::new(std::env::temp_dir());
        for pg in [-1, 0, 1] {
            assert!(stop_remote_group(&ssh, &far(), pg, None, Duration::ZERO).is_err());
            assert_eq!(remote_group_not_ours(&ssh, &far(), pg, None), Ok(true));
            assert!(remote_group_gone(&ssh, &far(), pg));
            assert!(!signal_group(pg, 0));
        }
    }

    #[test]
    fn deadlines_saturate() {
        let d = deadline(Duration::MAX);
        assert!(d > Instant::now());
    }
}
