//! One session per remote host and run: a small Python agent (`agent.py`, a fixed text) started
//! once over the host's multiplexed connection, as a plain `ssh HOST CMD` runs (so the user's rc
//! files, PATH, modules and conda apply once), then driven by JSON lines on that session's
//! stdin and stdout. Starting a step, its output, its exit with the CPU time and peak RSS
//! `wait4` measured there, signalling its group, liveness, the escape sweep and short commands
//! are each a message, not an ssh command that pays for the rc files again.
//!
//! Requests (each with an `id`): `spawn {line, cwd, env}`, `alive {pgid, start}`,
//! `stop {pgid, start, grace_ms}`, `run {script, input, timeout_ms}`, `sweep {want, grace_ms}`,
//! `mkdir {base, path}`. Events: `hello`, `started {pgid, start}`, `out {data}`, `eof`,
//! `exit {code, wall_ms, user_ms, sys_ms, max_rss_kib, rss_floor_kib | error}`, `reply {…}`. Bytes travel as
//! JSON strings of Latin-1 characters (one character per byte).
//!
//! When the session's stdin closes (expr ended, or was killed) the agent stops every group it
//! started (TERM, KILL 2 s later) and exits; the groups stay recorded in the journal by remote
//! group and start time, and carry the run's mark, so `expr stop` finds anything left.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::exec::backend::reaper::{Exit, Reaper};

/// The agent's text, sent as the argument of `python3 -c`.
pub const SOURCE: &str = include_str!("agent.py");

/// How long the agent may take to say hello: the remote rc files run first.
const HELLO: Duration = Duration::from_secs(30);

/// The remote command that starts the agent (its code a single quoted word). The system's
/// python3 first: the agent needs any Python 3, and a version manager's shim on PATH (pyenv:
/// ~0.1 s) would be paid at every start and put its own directories into the steps' PATH; the
/// steps get the environment the login shell made either way.
pub fn remote_command() -> String {
    format!(
        "p=/usr/bin/python3; [ -x \"$p\" ] || p=python3; exec \"$p\" -c {}",
        crate::util::shell::quote(SOURCE)
    )
}

type Reply = mpsc::Sender<Result<Value, String>>;

/// A process the sweep found: pid and command line.
pub type Found = (i32, String);

/// What waits for events of one id.
enum Slot {
    Call(Reply),
    Step {
        log: File,
        reaper: Reaper,
        started: Instant,
        /// Until the agent says the step started (or could not).
        first: Option<Reply>,
        exited: bool,
        eof: bool,
    },
}

#[derive(Default)]
struct Shared {
    slots: Mutex<HashMap<u64, Slot>>,
    /// Why the agent is gone, once it is.
    dead: Mutex<Option<String>>,
    stderr: Mutex<String>,
}

/// A running agent on one host.
pub struct Agent {
    stdin: Mutex<Option<ChildStdin>>,
    child: Mutex<Child>,
    next: AtomicU64,
    shared: Arc<Shared>,
    /// The remote Python's version, as the agent said hello.
    pub python: String,
}

/// A step the agent started: its remote group and the group leader's start time (none when it
/// could not start; its exit and log then say why).
pub struct Started {
    pub reaper: Reaper,
    pub started: Instant,
    pub pgid: Option<i64>,
    pub start: Option<u64>,
}

fn bytes_of(s: &str) -> Vec<u8> {
    s.chars().map(|c| c as u32 as u8).collect()
}

fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| c as char).collect()
}

impl Agent {
    /// Start the agent with `ssh` (the command for the host, without its remote command) and
    /// wait for its hello. The ssh client runs in a process group of its own: a Ctrl-C to
    /// expr's group reaches expr, which stops the steps itself, not the session.
    pub fn start(mut ssh: Command) -> Result<Agent, String> {
        ssh.arg(remote_command())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut ssh, 0);
        let mut child = crate::exec::backend::children::own(|| ssh.spawn(), |c| vec![c.id()])
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stderr = child.stderr.take();
        let shared = Arc::new(Shared::default());
        let (hello_tx, hello_rx) = mpsc::channel::<Result<Value, String>>();
        {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("agent-out".into())
                .spawn(move || read_events(stdout, &shared, hello_tx))
                .map_err(|e| e.to_string())?;
        }
        // the end of ssh's stderr, so a failed start says what the remote side printed last
        let (err_done_tx, err_done) = mpsc::channel::<()>();
        if let Some(mut err) = stderr {
            let shared = shared.clone();
            let _ = std::thread::Builder::new()
                .name("agent-err".into())
                .stack_size(64 << 10)
                .spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = err.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        if let Ok(mut s) = shared.stderr.lock() {
                            if s.len() < 16 << 10 {
                                s.push_str(&String::from_utf8_lossy(&buf[..n]));
                            }
                        }
                    }
                    let _ = err_done_tx.send(());
                });
        }
        let hello = hello_rx.recv_timeout(HELLO);
        let agent = Agent {
            stdin: Mutex::new(stdin),
            child: Mutex::new(child),
            next: AtomicU64::new(1),
            shared,
            python: String::new(),
        };
        match hello {
            Ok(Ok(v)) if v["ev"] == "hello" => Ok(Agent {
                python: v["python"].as_str().unwrap_or("").to_string(),
                ..agent
            }),
            other => {
                let why = match other {
                    Err(_) => format!("no answer within {} s", HELLO.as_secs()),
                    Ok(Ok(v)) => format!("unexpected first line {v}"),
                    Ok(Err(e)) => e,
                };
                agent.close(Duration::from_millis(200));
                // ssh has exited (or been killed): its stderr ends soon after; bounded, as a
                // child of the session may still hold the pipe
                let _ = err_done.recv_timeout(Duration::from_secs(1));
                let err = agent
                    .shared
                    .stderr
                    .lock()
                    .map(|s| s.clone())
                    .unwrap_or_default();
                let err = err.trim();
                Err(if err.is_empty() {
                    why
                } else {
                    format!("{why}: {}", err.lines().last().unwrap_or(err))
                })
            }
        }
    }

    /// Whether the session is still up.
    pub fn alive(&self) -> bool {
        self.shared
            .dead
            .lock()
            .map(|d| d.is_none())
            .unwrap_or(false)
    }

    fn send(&self, mut m: Value, slot: Slot) -> Result<u64, String> {
        if let Some(why) = self.shared.dead.lock().ok().and_then(|d| d.clone()) {
            return Err(why);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        m["id"] = json!(id);
        if let Ok(mut s) = self.shared.slots.lock() {
            s.insert(id, slot);
        }
        let mut line = m.to_string();
        line.push('\n');
        let written = match self.stdin.lock() {
            Ok(mut g) => match g.as_mut() {
                Some(w) => w.write_all(line.as_bytes()).and_then(|_| w.flush()),
                None => Err(std::io::ErrorKind::BrokenPipe.into()),
            },
            Err(_) => Err(std::io::ErrorKind::Other.into()),
        };
        if let Err(e) = written {
            if let Ok(mut s) = self.shared.slots.lock() {
                s.remove(&id);
            }
            return Err(format!("cannot write to the agent: {e}"));
        }
        Ok(id)
    }

    /// A request and its reply (an `error` in it is an Err).
    pub fn call(&self, m: Value, timeout: Duration) -> Result<Value, String> {
        let (tx, rx) = mpsc::channel();
        let id = self.send(m, Slot::Call(tx))?;
        match rx.recv_timeout(timeout) {
            Ok(Ok(v)) => match v["error"].as_str() {
                Some(e) => Err(e.to_string()),
                None => Ok(v),
            },
            Ok(Err(e)) => Err(e),
            Err(_) => {
                if let Ok(mut s) = self.shared.slots.lock() {
                    s.remove(&id);
                }
                Err(format!(
                    "the agent did not answer within {} s",
                    timeout.as_secs()
                ))
            }
        }
    }

    /// Start `line` with bash in `cwd` (a session and process group of its own), its output
    /// into `log`, `env` added to the agent's environment.
    pub fn spawn(
        &self,
        line: &str,
        cwd: &str,
        env: &[(&str, &str)],
        log: File,
    ) -> Result<Started, String> {
        let (tx, rx) = mpsc::channel();
        let reaper = Reaper::default();
        let started = Instant::now();
        let env: serde_json::Map<String, Value> =
            env.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        self.send(
            json!({"op": "spawn", "line": line, "cwd": cwd, "env": env}),
            Slot::Step {
                log,
                reaper: reaper.clone(),
                started,
                first: Some(tx),
                exited: false,
                eof: false,
            },
        )?;
        let first = rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| "the agent did not start the step within 30 s".to_string())??;
        Ok(Started {
            reaper,
            started,
            pgid: first["pgid"].as_i64(),
            start: first["start"].as_u64(),
        })
    }

    /// TERM the group, KILL after `grace`, if it is still the one recorded: Ok(true) when gone.
    pub fn stop(&self, pgid: i64, start: Option<u64>, grace: Duration) -> Result<bool, String> {
        let v = self.call(
            json!({"op": "stop", "pgid": pgid, "start": start, "grace_ms": grace.as_millis() as u64}),
            grace.saturating_add(Duration::from_secs(15)),
        )?;
        Ok(v["gone"].as_bool().unwrap_or(false))
    }

    /// Whether a group lives and (with `start`) is still the one recorded.
    pub fn group_alive(&self, pgid: i64, start: Option<u64>) -> Result<bool, String> {
        let v = self.call(
            json!({"op": "alive", "pgid": pgid, "start": start}),
            Duration::from_secs(15),
        )?;
        Ok(v["alive"].as_bool().unwrap_or(true))
    }

    /// A short script by the user's login shell (as ssh runs one): (exit code, stdout, and
    /// stderr after it when the code is not 0).
    pub fn run(
        &self,
        script: &str,
        input: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<(i32, String), String> {
        self.run_until(script, input, timeout, &|| false)
    }

    /// As [`Agent::run`], given up as soon as `stop` says so (a Ctrl-C during preflight): the
    /// agent is told to stop the script's group, and the error is `interrupted`.
    pub fn run_until(
        &self,
        script: &str,
        input: Option<&[u8]>,
        timeout: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<(i32, String), String> {
        let (tx, rx) = mpsc::channel();
        let id = self.send(
            json!({"op": "run", "script": script, "input": input.map(latin1),
                   "timeout_ms": timeout.as_millis() as u64}),
            Slot::Call(tx),
        )?;
        let end = Instant::now() + timeout.saturating_add(Duration::from_secs(5));
        let v = loop {
            let slice = (Instant::now() + Duration::from_millis(50)).min(end);
            match rx.recv_timeout(slice.saturating_duration_since(Instant::now())) {
                Ok(Ok(v)) => match v["error"].as_str() {
                    Some(e) => return Err(e.to_string()),
                    None => break v,
                },
                Ok(Err(e)) => return Err(e),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the agent's connection closed".into())
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let stopped = stop();
            if stopped || Instant::now() >= end {
                if let Ok(mut s) = self.shared.slots.lock() {
                    s.remove(&id);
                }
                let _ = self.call(
                    json!({"op": "cancel", "target": id}),
                    Duration::from_secs(5),
                );
                return Err(if stopped {
                    "interrupted".into()
                } else {
                    format!("the agent did not answer within {} s", timeout.as_secs())
                });
            }
        };
        let code = v["code"].as_i64().unwrap_or(-1) as i32;
        let text =
            |k: &str| String::from_utf8_lossy(&bytes_of(v[k].as_str().unwrap_or(""))).into_owned();
        Ok((
            code,
            if code == 0 {
                text("out")
            } else {
                format!("{}{}", text("out"), text("err"))
            },
        ))
    }

    /// Find the processes whose environment has `want` (`EXPR_MARK=…`), TERM them, KILL what
    /// is left after `grace`: (found as (pid, command line), pids still alive).
    pub fn sweep(&self, want: &str, grace: Duration) -> Result<(Vec<Found>, Vec<i32>), String> {
        let v = self.call(
            json!({"op": "sweep", "want": want, "grace_ms": grace.as_millis() as u64}),
            grace.saturating_add(Duration::from_secs(30)),
        )?;
        let found = v["found"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| Some((f[0].as_i64()? as i32, f[1].as_str()?.to_string())))
            .collect();
        let left = v["left"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some(p.as_i64()? as i32))
            .collect();
        Ok((found, left))
    }

    /// `mkdir -p BASE/PATH` (BASE relative to the login directory).
    pub fn mkdir(&self, base: &str, path: &str) -> Result<(), String> {
        self.call(
            json!({"op": "mkdir", "base": base, "path": path}),
            Duration::from_secs(30),
        )
        .map(|_| ())
    }

    /// End the session: EOF on its stdin (the agent stops what it started and exits), then
    /// wait up to `wait` for the ssh client, and kill it after that.
    pub fn close(&self, wait: Duration) {
        if let Ok(mut g) = self.stdin.lock() {
            g.take();
        }
        if let Ok(mut c) = self.child.lock() {
            let end = Instant::now() + wait;
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => return,
                    Ok(None) if Instant::now() >= end => break,
                    Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The agent's events, as they come: replies to their callers, output into logs, exits to
/// reapers. At the end of the stream every waiting step ends (code 255, as ssh says a lost
/// connection) and every waiting call gets the reason.
fn read_events(out: impl Read, shared: &Shared, hello: Reply) {
    let mut hello = Some(hello);
    let mut r = BufReader::with_capacity(1 << 16, out);
    let mut line = String::new();
    loop {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(h) = hello.take() {
            let _ = h.send(Ok(v));
            continue;
        }
        let Some(id) = v["id"].as_u64() else { continue };
        let Ok(mut slots) = shared.slots.lock() else {
            break;
        };
        let mut done = false;
        match slots.get_mut(&id) {
            Some(Slot::Call(_)) => {
                if let Some(Slot::Call(tx)) = slots.remove(&id) {
                    let _ = tx.send(Ok(v));
                }
            }
            Some(Slot::Step {
                log,
                reaper,
                started,
                first,
                exited,
                eof,
            }) => match v["ev"].as_str() {
                Some("started") => {
                    if let Some(tx) = first.take() {
                        let _ = tx.send(Ok(v));
                    }
                }
                Some("out") => {
                    let _ = log.write_all(&bytes_of(v["data"].as_str().unwrap_or("")));
                }
                Some("eof") => {
                    *eof = true;
                    done = *exited;
                }
                Some("exit") => {
                    if let Some(e) = v["error"].as_str() {
                        let _ = writeln!(log, "expr-agent: {e}");
                        // it never started: no output will come
                        *eof = true;
                    }
                    let ms = |k: &str| {
                        Duration::from_secs_f64(v[k].as_f64().unwrap_or(0.0).max(0.0) / 1e3)
                    };
                    let wall = ms("wall_ms");
                    reaper.set(Exit {
                        code: v["code"].as_i64().unwrap_or(-1) as i32,
                        // measured there, from the spawn to the reap, on this machine's clock
                        at: if wall.is_zero() {
                            Instant::now()
                        } else {
                            *started + wall
                        },
                        user: ms("user_ms"),
                        sys: ms("sys_ms"),
                        // the agent's own peak bounds what its fork carried into the step
                        max_rss_kib: v["max_rss_kib"]
                            .as_i64()
                            .zip(v["rss_floor_kib"].as_i64())
                            .and_then(|(m, f)| Exit::peak(m, f)),
                        rss_floor_kib: v["rss_floor_kib"].as_i64().unwrap_or(0),
                    });
                    if let Some(tx) = first.take() {
                        let _ = tx.send(Ok(v));
                    }
                    *exited = true;
                    done = *eof;
                }
                _ => {}
            },
            None => {}
        }
        if done {
            slots.remove(&id);
        }
    }
    let why = "the connection to the agent closed".to_string();
    if let Ok(mut d) = shared.dead.lock() {
        *d = Some(why.clone());
    }
    if let Some(h) = hello.take() {
        let _ = h.send(Err(why.clone()));
    }
    let slots: Vec<(u64, Slot)> = shared
        .slots
        .lock()
        .map(|mut s| s.drain().collect())
        .unwrap_or_default();
    for (_, slot) in slots {
        match slot {
            Slot::Call(tx) => {
                let _ = tx.send(Err(why.clone()));
            }
            Slot::Step {
                mut log,
                reaper,
                first,
                exited,
                ..
            } => {
                if let Some(tx) = first {
                    let _ = tx.send(Err(why.clone()));
                }
                if !exited {
                    let _ = writeln!(log, "expr: {why} before the step ended");
                    reaper.set(Exit {
                        code: 255,
                        at: Instant::now(),
                        user: Duration::ZERO,
                        sys: Duration::ZERO,
                        max_rss_kib: None,
                        rss_floor_kib: 0,
                    });
                }
            }
        }
    }
}

/// The log file of a step (never through a symlink), as the local spawn opens it.
pub fn open_log(log: &Path) -> Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(log)
        .map_err(|e| format!("cannot create {}: {e}", log.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The agent on this machine: `sh -c` stands in for the remote login shell.
    fn local_agent() -> Option<Agent> {
        let on_path = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("python3").is_file()));
        if !on_path {
            eprintln!("SKIPPED: no python3 on PATH");
            return None;
        }
        let mut c = Command::new("sh");
        c.arg("-c");
        Some(Agent::start(c).expect("the agent starts"))
    }

    fn log(dir: &Path, name: &str) -> (File, std::path::PathBuf) {
        let p = dir.join(name);
        (open_log(&p).unwrap(), p)
    }

    fn wait(r: &Reaper) -> Exit {
        r.wait_until(Instant::now() + Duration::from_secs(10))
            .expect("the step ended")
    }

    #[test]
    fn steps_start_in_their_own_group_with_env_and_cwd_and_end_with_code_and_timing() {
        let Some(a) = local_agent() else { return };
        let d = tempfile::tempdir().unwrap();
        let (f, p) = log(d.path(), "a.log");
        let cwd = d.path().to_str().unwrap();
        let st = a
            .spawn(
                "echo \"$EXPR_MARK $(pwd)\"; printf 'caf\\xc3\\xa9 \\x01\\n' >&2; exit 7",
                cwd,
                &[("EXPR_MARK", "m:p;")],
                f,
            )
            .unwrap();
        let e = wait(&st.reaper);
        assert_eq!(e.code, 7);
        assert!(e.at >= st.started && e.at <= Instant::now());
        assert!(st.pgid.is_some_and(|g| g > 1) && st.start.is_some());
        // the output reaches the log byte for byte, before the exit is known
        let text = std::fs::read(&p).unwrap();
        assert_eq!(
            text,
            format!("m:p; {cwd}\ncafé \u{1}\n").into_bytes(),
            "{}",
            String::from_utf8_lossy(&text)
        );
        // a signal is `-signal`, as for a local step; a missing directory says so in the log
        let (f, _) = log(d.path(), "b.log");
        let st = a.spawn("kill -TERM $$", cwd, &[], f).unwrap();
        assert_eq!(wait(&st.reaper).code, -15);
        let (f, p) = log(d.path(), "c.log");
        let st = a.spawn("true", "/nonexistent/dir", &[], f).unwrap();
        assert_eq!(wait(&st.reaper).code, crate::util::exit_codes::CD_FAILED);
        assert!(st.pgid.is_none());
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains("/nonexistent/dir"));
        a.close(Duration::from_secs(3));
    }

    #[test]
    fn a_run_given_up_is_stopped_with_its_group_and_says_interrupted() {
        let Some(a) = local_agent() else { return };
        let (_d, pidf) = crate::util::testutil::temp_path("pid");
        let script = format!(
            "sleep 30 & echo $! > {}; wait",
            crate::util::shell::quote(&pidf.display().to_string())
        );
        // an ordinary run still answers
        assert_eq!(
            a.run_until("echo ok", None, Duration::from_secs(10), &|| false),
            Ok((0, "ok\n".into()))
        );
        let t = Instant::now();
        let asked = Instant::now() + Duration::from_millis(500);
        let got = a.run_until(&script, None, Duration::from_secs(60), &|| {
            Instant::now() > asked
        });
        assert_eq!(got, Err("interrupted".into()));
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        // the script's background child went with its group
        crate::util::testutil::wait_gone(
            &pidf,
            Duration::from_secs(5),
            "the cancelled run's background child",
        );
        // and the agent still answers
        assert_eq!(
            a.run("echo again", None, Duration::from_secs(10)),
            Ok((0, "again\n".into()))
        );
        a.close(Duration::from_secs(3));
    }

    #[test]
    fn groups_are_stopped_asked_after_and_swept_and_eof_stops_what_is_left() {
        let Some(a) = local_agent() else { return };
        let d = tempfile::tempdir().unwrap();
        let cwd = d.path().to_str().unwrap();
        let (f, _) = log(d.path(), "s.log");
        let st = a.spawn("sleep 300 & wait", cwd, &[], f).unwrap();
        let pg = st.pgid.unwrap();
        assert_eq!(a.group_alive(pg, st.start), Ok(true));
        // a record with another start time is not this group
        assert_eq!(a.group_alive(pg, st.start.map(|s| s + 1)), Ok(false));
        assert_eq!(a.stop(pg, st.start, Duration::from_secs(1)), Ok(true));
        assert_eq!(a.group_alive(pg, None), Ok(false));
        // a process that left its group is found by its mark
        let (f, _) = log(d.path(), "e.log");
        let want = format!("EXPR_MARK=agent-test-{}:", std::process::id());
        let st = a
            .spawn(
                // a moment for it to be `sleep`: an environ read during its exec comes back empty
                "setsid sleep 300 < /dev/null > /dev/null 2>&1 & sleep 0.2",
                cwd,
                &[("EXPR_MARK", &want[10..])],
                f,
            )
            .unwrap();
        assert_eq!(wait(&st.reaper).code, 0);
        let (found, left) = a.sweep(&want, Duration::from_secs(1)).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].1.contains("sleep 300") && left.is_empty(),
            "{found:?}"
        );
        // short scripts, with input, and mkdir
        let (code, out) = a
            .run("cat; echo; exit 3", Some(b"in\xff"), Duration::from_secs(5))
            .unwrap();
        assert_eq!((code, out.as_str()), (3, "in\u{fffd}\n"));
        a.mkdir(cwd, "x/y").unwrap();
        assert!(d.path().join("x/y").is_dir());
        // EOF: what is still running is stopped
        let (f, _) = log(d.path(), "l.log");
        let st = a.spawn("trap '' TERM; sleep 300", cwd, &[], f).unwrap();
        let pg = st.pgid.unwrap();
        a.close(Duration::from_secs(5));
        let end = Instant::now() + Duration::from_secs(5);
        while crate::exec::backend::host::group_alive(pg) {
            assert!(Instant::now() < end, "group {pg} outlived the agent");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(a.run("true", None, Duration::from_secs(1)).is_err());
    }
}
