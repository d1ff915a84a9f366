//! Remote hosts at local speed (issue 28): an sshd on loopback whose "rc file" takes 0.3 s (its
//! ForceCommand sleeps, exports a variable, then runs the command, as a slow `.bashrc` would),
//! and an `ssh` on PATH that counts its invocations. A remote `serve` + `run` point costs no ssh
//! command and about what the same point costs locally; the rc file's environment reaches the
//! steps; a `Port` in the ssh config is honoured when `ssh-port` is not written; a host where
//! the agent cannot start falls back with a warning; SIGKILL to expr leaves nothing after
//! `expr stop`.

mod common;

use common::journal;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::sshd::free_port;
use common::Test;
use serde_json::Value;

/// The test's "rc file": what every ssh session pays before its command.
const RC_S: f64 = 0.3;

struct Host {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Host {
    /// An sshd whose sessions run `pre` before the command (as root: the fixture needs it).
    fn start(pre: &str) -> Option<Host> {
        if !Path::new("/usr/sbin/sshd").exists() || unsafe { libc::geteuid() } != 0 {
            common::skip("needs /usr/sbin/sshd and root");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("expr-rc")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for k in ["host", "client"] {
            assert!(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(format!("{k}_ed25519")))
                .status()
                .unwrap()
                .success());
        }
        std::fs::copy(d.join("client_ed25519.pub"), d.join("authorized_keys")).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = free_port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_ed25519\nPidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 MaxStartups 100:30:200\nMaxSessions 50\nForceCommand {pre}; eval \"$SSH_ORIGINAL_COMMAND\"\n",
                d = d.display()
            ),
        )
        .unwrap();
        // the port comes from here: the experiments below do not write `ssh-port`
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host slowrc\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {d}/client_ed25519\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  KexAlgorithms curve25519-sha256\n",
                d = d.display()
            ),
        )
        .unwrap();
        // every ssh expr starts is counted
        let wrap = d.join("wrap");
        std::fs::create_dir(&wrap).unwrap();
        std::fs::write(
            wrap.join("ssh"),
            format!(
                "#!/bin/sh\necho \"$*\" | tr '\\n' ' ' | cut -c1-300 >> {}/ssh-count\nexec /usr/bin/ssh \"$@\"\n",
                d.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(wrap.join("ssh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-f"])
            .arg(d.join("sshd_config"))
            .arg("-E")
            .arg(d.join("sshd.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let end = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < end, "sshd did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Host { dir, port, child })
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// ssh commands since the last call.
    fn ssh_commands(&self) -> Vec<String> {
        let f = self.dir.path().join("ssh-count");
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let _ = std::fs::remove_file(&f);
        text.lines().map(str::to_string).collect()
    }

    /// `expr run e.kdl --output out` in `dir`: its exit code and stderr.
    fn run_e(&self, dir: &Path) -> (Option<i32>, String) {
        let o = self
            .expr(dir)
            .args(["run", "e.kdl", "--output", "out"])
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    fn expr(&self, dir: &Path) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_expr"));
        let path = format!(
            "{}:{}",
            self.dir.path().join("wrap").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        c.current_dir(dir)
            .env("PATH", path)
            .env("EXPR_SSH_CONFIG", self.config())
            .env("NO_COLOR", "1");
        c
    }
}

fn at(e: &Value) -> f64 {
    let t = chrono::DateTime::parse_from_rfc3339(e["at"].as_str().unwrap()).unwrap();
    t.timestamp_micros() as f64 / 1e6
}

/// Seconds per point: from each point's first started process to its point event, averaged.
fn per_point(dir: &Path) -> f64 {
    let ev = journal(dir);
    let mut total = 0.0;
    let mut n = 0;
    let mut first: Option<f64> = None;
    for e in &ev {
        match e["event"].as_str() {
            Some("process") if first.is_none() => first = Some(at(e)),
            Some("point") => {
                total += at(e) - first.take().expect("a point without a process");
                n += 1;
            }
            _ => {}
        }
    }
    assert!(n > 0, "no point ran");
    total / n as f64
}

/// A `serve` (a tiny TCP server) and a `run` that prints the rc file's variable, 4 points.
fn experiment(dir: &Path, host: &str, srv_port: u16) {
    std::fs::write(
        dir.join("srv.py"),
        "import socket, sys\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
         s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(16)\nwhile True: s.accept()[0].close()\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("e.kdl"),
        format!(
            "experiment t\nhost far ssh=\"slowrc\" ip=\"127.0.0.1\" repo=\"{d}\"\nhost local repo=\"{d}\"\n\
             bench b {{\n    param i 1\n    serve s \"python3 srv.py {srv_port}\" host={host} port={srv_port}\n    \
             run \"echo rc=$EXPR_RC_VAR i={{{{ i }}}}\" host={host}\n    sweep i 1 2 3 4\n}}\n",
            d = dir.display()
        ),
    )
    .unwrap();
}

#[test]
fn a_remote_point_behind_a_slow_rc_file_costs_no_ssh_command_and_what_a_local_one_does() {
    let Some(h) = Host::start(&format!("sleep {RC_S}; export EXPR_RC_VAR=from-rc")) else {
        return;
    };
    let srv_port = free_port();
    let w = tempfile::tempdir().unwrap();
    let runs = |host: &str, only: Option<&str>, out: &str| -> (Duration, Vec<String>, String) {
        experiment(w.path(), host, srv_port);
        let mut c = h.expr(w.path());
        c.args(["run", "e.kdl", "--output", out]);
        if let Some(o) = only {
            c.args(["--only", o]);
        }
        let t = Instant::now();
        let o = c.output().unwrap();
        let took = t.elapsed();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        (
            took,
            h.ssh_commands(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (_, local_ssh, _) = runs("local", None, "local");
    assert!(local_ssh.is_empty(), "{local_ssh:?}");
    let (one, ssh_one, _) = runs("far", Some("i=1"), "far1");
    let (four, ssh_four, said) = runs("far", None, "far4");
    // preflight says the port ssh used, and where it came from, and how steps run there
    assert!(
        said.contains(&format!(
            "host `far`: ssh port {} (ssh's own configuration), one agent session (python ",
            h.port
        )),
        "{said}"
    );
    // no ssh command per point: the 4-point run starts as many as the 1-point one (the
    // connection, the agent, `ssh -G` for the port, closing)
    assert_eq!(
        ssh_four.len(),
        ssh_one.len(),
        "ssh commands per point: 1 point {ssh_one:#?}, 4 points {ssh_four:#?}"
    );
    assert!(ssh_four.len() <= 5, "{ssh_four:#?}");
    let (local_pp, far_pp) = (
        per_point(&w.path().join("local")),
        per_point(&w.path().join("far4")),
    );
    eprintln!(
        "per point: local {:.1} ms, far {:.1} ms; 1-point run {:.0} ms, 4-point run {:.0} ms",
        local_pp * 1e3,
        far_pp * 1e3,
        one.as_secs_f64() * 1e3,
        four.as_secs_f64() * 1e3
    );
    assert!(
        far_pp < local_pp + 0.05,
        "a remote point costs {:.1} ms, a local one {:.1} ms",
        far_pp * 1e3,
        local_pp * 1e3
    );
    // the rc file ran once for the agent, and its environment reached every step
    for i in 1..=4 {
        let log = w.path().join(format!("far4/logs/run1-b_i{i}_r0-far.log"));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains(&format!("rc=from-rc i={i}")), "{text}");
    }
    // the port came from the ssh config (nothing passed -p), and preflight recorded it
    assert!(
        ssh_four.iter().all(|a| !a.split(' ').any(|w| w == "-p")),
        "{ssh_four:#?}"
    );
    let header = journal(&w.path().join("far4"))
        .into_iter()
        .find(|e| e["event"] == "header")
        .unwrap();
    let far = header["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["host"] == "far")
        .unwrap()
        .clone();
    assert_eq!(far["ssh_port"], h.port, "{far}");
    assert!(
        far["agent"]
            .as_str()
            .is_some_and(|a| a.starts_with("python ")),
        "{far}"
    );
    // timing measured where the step ran
    let step = journal(&w.path().join("far4"))
        .into_iter()
        .find(|e| e["event"] == "step" && e["step"] == "run1-b_i1_r0")
        .unwrap();
    assert!(step["timing"]["user_ms"].is_number(), "{step}");
    // a small step's peak is below the agent's own (wait4 counts that too): the floor is said
    // in its place, never both, never a 0
    let t = &step["timing"];
    assert!(
        t["max_rss_mib"].as_f64().is_some_and(|m| m > 0.0)
            != t["max_rss_floor_mib"].as_f64().is_some_and(|f| f > 0.0),
        "{step}"
    );
}

#[test]
fn a_host_where_the_agent_cannot_start_gets_a_warning_and_one_ssh_command_per_operation() {
    // a restricted shell that refuses python: the agent cannot start, the steps still run
    let Some(h) = Host::start(
        "case \"$SSH_ORIGINAL_COMMAND\" in p=/usr/bin/python3*) echo 'restricted: no python' >&2; exit 1;; esac; export EXPR_RC_VAR=from-rc",
    ) else {
        return;
    };
    let w = tempfile::tempdir().unwrap();
    experiment(w.path(), "far", free_port());
    let o = h
        .expr(w.path())
        .args(["run", "e.kdl", "--output", "out", "--only", "i=1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: no agent on `far`") && err.contains("restricted: no python"),
        "{err}"
    );
    let log = std::fs::read_to_string(w.path().join("out/logs/run1-b_i1_r0-far.log")).unwrap();
    assert!(log.contains("rc=from-rc i=1"), "{log}");
    assert!(h.ssh_commands().len() > 5, "one ssh command per operation");
}

/// Runs its closure when dropped (also when the test fails).
struct Defer(Box<dyn FnMut()>);

impl Drop for Defer {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// The groups the journal recorded that are still alive (the remote host is this machine).
fn alive_groups(dir: &Path) -> Vec<String> {
    journal(dir)
        .iter()
        .filter(|e| e["event"] == "process")
        .filter_map(|e| Some((e["remote_pgid"].as_i64()?, e["step"].clone())))
        .filter(|(p, _)| expr::exec::backend::host::group_alive(*p))
        .map(|(p, s)| format!("{s} (group {p})"))
        .collect()
}

#[test]
fn sigkill_to_expr_mid_point_leaves_nothing_behind_after_expr_stop() {
    let Some(h) = Host::start(&format!("sleep {RC_S}")) else {
        return;
    };
    let w = tempfile::tempdir().unwrap();
    let srv_port = free_port();
    let config = h.config();
    experiment(w.path(), "far", srv_port);
    let kdl = std::fs::read_to_string(w.path().join("e.kdl"))
        .unwrap()
        .replace("echo rc=$EXPR_RC_VAR", "sleep 60; echo");
    std::fs::write(w.path().join("e.kdl"), kdl).unwrap();
    // a TMPDIR of its own: the control socket of the killed run stays where this test closes
    // it (a later run's clean-up of dead runs' directories does not race it)
    let tmp = w.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = h
        .expr(w.path())
        .env("TMPDIR", &tmp)
        // killed below: its processes are left for `expr stop`, not its sentinel
        .env("EXPR_NO_SENTINEL", "1")
        .args(["run", "e.kdl", "--output", "out"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    while !journal(&w.path().join("out"))
        .iter()
        .any(|e| e["event"] == "process" && e["step"] == "run1-b_i1_r0")
    {
        assert!(Instant::now() < end, "the point did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    // the killed run's multiplexed connection persists (ControlPersist): closed at the end
    let sockets = tmp.join(format!("expr-cm-{}", child.id()));
    let _close = Defer(Box::new(move || {
        for f in std::fs::read_dir(&sockets).into_iter().flatten().flatten() {
            let master = format!("ControlPath={}", f.path().display());
            let _ = Command::new("ssh")
                .args([
                    "-F",
                    config.to_str().unwrap(),
                    "-o",
                    &master,
                    "-O",
                    "exit",
                    "slowrc",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }));
    let before = alive_groups(&w.path().join("out"));
    // no EXPR_SSH_CONFIG given again: the journal says which configuration reached the host
    let ran = Test::new()
        .dir(w.path())
        .env("TMPDIR", tmp.to_str().unwrap())
        .args(["stop", "out"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    // the killed run's shared connection is closed too, not left to ControlPersist
    let cm = tmp.join(format!("expr-cm-{}", child.id()));
    let masters = common::processes_left(&format!("{}/", cm.display()));
    assert!(
        masters.is_empty() && !cm.exists(),
        "the killed run's ssh master outlived expr stop: {masters}"
    );
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let left = alive_groups(&w.path().join("out"));
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < end,
            "left after expr stop: {left:?} (alive right after the kill: {before:?}); {}",
            ran.stderr
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", srv_port)).is_err(),
        "the server still answers"
    );
}

/// A secret of an ssh host with an agent travels in the agent's message and reaches the step's
/// environment: no command line of the machine (ssh's here, bash's on the host, which is this
/// machine) holds it while the step runs.
#[test]
fn a_secret_of_an_agent_host_is_on_no_command_line() {
    let Some(h) = Host::start("true") else {
        return;
    };
    let secret = "hunter4-agent-52";
    let w = tempfile::tempdir().unwrap();
    std::fs::write(
        w.path().join("e.kdl"),
        format!(
            "experiment t\nhost far ssh=\"slowrc\" ip=\"127.0.0.1\" repo=\"{d}\" {{\n    env API_TOKEN=\"{secret}\"\n}}\n\
             bench b {{\n    run \"echo got=$API_TOKEN; sleep 1.85; true\" host=far\n}}\n",
            d = w.path().display()
        ),
    )
    .unwrap();
    let child = h
        .expr(w.path())
        .args(["run", "e.kdl", "--output", "out"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = common::cmdlines_once(
        "the step",
        |l| l.trim_end() == "sleep 1.85",
        Duration::from_secs(60),
    );
    let holding: Vec<&String> = seen.iter().filter(|l| l.contains(secret)).collect();
    assert!(
        holding.is_empty(),
        "in `ps` while the step ran: {holding:?}"
    );
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // it ran through the agent, and had the value
    assert!(!err.contains("warning: no agent"), "{err}");
    let log = std::fs::read_to_string(w.path().join("out/logs/run1-b_r0-far.log")).unwrap();
    assert!(log.contains(&format!("got={secret}")), "{log}");
}

/// Without an agent (a restricted shell that refuses python) a step starts by a plain ssh
/// command: its secret comes first on that command's stdin, not on any command line, and the
/// step still has it.
#[test]
fn a_secret_of_a_host_without_an_agent_is_on_no_command_line() {
    let Some(h) = Host::start(
        "case \"$SSH_ORIGINAL_COMMAND\" in p=/usr/bin/python3*) echo 'restricted: no python' >&2; exit 1;; esac",
    ) else {
        return;
    };
    // (a value of two lines: the wrapper reads as many lines as it is told)
    let secret = "hunter5-ssh 'q'\n$x-63";
    let w = tempfile::tempdir().unwrap();
    std::fs::write(
        w.path().join("e.kdl"),
        format!(
            "experiment t\nhost far ssh=\"slowrc\" ip=\"127.0.0.1\" repo=\"{d}\" {{\n    env API_TOKEN=\"{s}\" PLAIN=\"p-2\"\n}}\n\
             bench b {{\n    run \"echo got=$API_TOKEN/$PLAIN; sleep 1.95; true\" host=far\n}}\n",
            d = w.path().display(),
            s = secret.replace('"', "\\\"").replace('\n', "\\n"),
        ),
    )
    .unwrap();
    let child = h
        .expr(w.path())
        .args(["run", "e.kdl", "--output", "out"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = common::cmdlines_once(
        "the step",
        |l| l.trim_end() == "sleep 1.95",
        Duration::from_secs(60),
    );
    let holding: Vec<&String> = seen.iter().filter(|l| l.contains("hunter5-ssh")).collect();
    assert!(
        holding.is_empty(),
        "in `ps` while the step ran: {holding:?}"
    );
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: no agent on `far`"), "{err}");
    let log = std::fs::read_to_string(w.path().join("out/logs/run1-b_r0-far.log")).unwrap();
    // (echo of an unquoted expansion: the value's newline is a space)
    assert!(
        log.contains(&format!("got={}/p-2", secret.replace('\n', " "))),
        "{log}"
    );
}

/// The ssh calls a wrapper logged, each as its arguments (NUL-separated, one file per call).
fn ssh_calls(dir: &Path) -> Vec<Vec<String>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .map(|f| {
            let b = std::fs::read(f).unwrap();
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .collect()
}

/// An ssh call's options and target, less what only `expr run` can pass: its shared
/// connection's socket, and the calls that open, ask about (`-G`) or close (`-O`) it.
fn login_of(call: &[String]) -> Option<(Vec<String>, String)> {
    let mut opts = Vec::new();
    let mut i = 0;
    while i < call.len() {
        let a = &call[i];
        match a.as_str() {
            "-f" | "-N" | "-G" => return None,
            "-O" => return None,
            "-F" | "-p" | "-o" => {
                let v = call.get(i + 1)?.clone();
                if a == "-o" && v.starts_with("Control") {
                    if v.starts_with("ControlMaster") {
                        return None;
                    }
                } else {
                    opts.push(a.clone());
                    opts.push(v);
                }
                i += 2;
            }
            _ => return Some((opts, a.clone())),
        }
    }
    None
}

#[test]
fn commands_sh_and_the_run_call_ssh_with_the_same_arguments_for_every_host_form() {
    let Some(h) = Host::start("true") else {
        return;
    };
    let w = tempfile::tempdir().unwrap();
    let d = w.path();
    // three host forms: an alias whose port the ssh config gives, the alias with `ssh-port`,
    // and user@address with `ssh-port`
    let key = h.dir.path().join("client_ed25519");
    let cfg = d.join("ssh_config");
    std::fs::write(
        &cfg,
        format!(
            "Host slowrc 127.0.0.1\n  HostName 127.0.0.1\n  Port {}\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            h.port,
            key.display()
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("e.kdl"),
        format!(
            "experiment t\nhost a ssh=\"slowrc\" ip=\"127.0.0.1\" repo=\"{d}\"\n\
             host b ssh=\"slowrc\" ssh-port={p} ip=\"127.0.0.2\" repo=\"{d}\"\n\
             host c ssh=\"root@127.0.0.1\" ssh-port={p} ip=\"127.0.0.3\" repo=\"{d}\"\n\
             bench t {{\n    run \"echo a\" host=a\n    run \"echo b\" host=b\n    run \"echo c\" host=c\n}}\n",
            d = d.display(),
            p = h.port
        ),
    )
    .unwrap();
    // an ssh that writes its arguments to a file of its own, then is the real one
    let calls = d.join("calls");
    std::fs::create_dir(&calls).unwrap();
    let wrap = d.join("wrap");
    std::fs::create_dir(&wrap).unwrap();
    std::fs::write(
        wrap.join("ssh"),
        format!(
            "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$(mktemp -p {})\"\nexec /usr/bin/ssh \"$@\"\n",
            calls.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(wrap.join("ssh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        wrap.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = h
        .expr(d)
        .env("PATH", &path)
        .env("EXPR_SSH_CONFIG", &cfg)
        .env("EXPR_SSH_AGENT", "0")
        .args(["run", "e.kdl", "--output", "out"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run: std::collections::BTreeSet<(Vec<String>, String)> = ssh_calls(&calls)
        .iter()
        .filter_map(|c| login_of(c))
        .collect();
    std::fs::remove_dir_all(&calls).unwrap();
    std::fs::create_dir(&calls).unwrap();
    // the run's own commands.sh, run by bash with the same ssh
    let sh = Command::new("bash")
        .arg(d.join("out/commands.sh"))
        .current_dir(d)
        .env("EXPR_FORCE", "1")
        .env("PATH", &path)
        .env("EXPR_SSH_CONFIG", &cfg)
        .output()
        .unwrap();
    assert!(
        sh.status.success(),
        "{}",
        String::from_utf8_lossy(&sh.stderr)
    );
    let script: std::collections::BTreeSet<(Vec<String>, String)> = ssh_calls(&calls)
        .iter()
        .filter_map(|c| login_of(c))
        .collect();
    assert_eq!(script.len(), 3, "one login per host form: {script:#?}");
    assert_eq!(run, script, "the run's ssh logins against commands.sh's");
    // the alias without `ssh-port` leaves the port to the ssh config in both
    let a = script
        .iter()
        .find(|(o, t)| t == "slowrc" && !o.contains(&"-p".to_string()));
    assert!(a.is_some(), "{script:#?}");
}

/// A remote host's clock is not expr's (issue 42): preflight reads it (`date +%s%3N` there, the
/// shortest of three round trips) into the host's machine record, and the samples stamped there
/// are read over the measured window moved by the offset. The host runs 1 h ahead (a `date` on
/// its PATH adds 3 600 000 ms, as the samplers and the clock probe read it), and its CPU
/// counters are a stand-in powercap directory advanced at 50 W by the test (no machine here
/// exposes RAPL): the energy is 50 W × the window, not missing for samples "an hour late".
#[test]
fn a_remote_hosts_clock_offset_moves_the_window_its_samples_are_read_over() {
    let Some(h) = Host::start("true") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let skew = p.join("skew");
    std::fs::create_dir_all(&skew).unwrap();
    common::gpu::write_exec(
        &skew.join("date"),
        "#!/bin/sh\nif [ \"$*\" = '+%s%3N' ]; then echo $(( $(/bin/date +%s%3N) + 3600000 )); else exec /bin/date \"$@\"; fi\n",
    );
    let rapl = common::gpu::StandinRapl::start(p, 50.0);
    std::fs::write(
        p.join("e.kdl"),
        format!(
            "experiment t {{\n    telemetry interval-ms=100\n}}\nhost far ssh=\"slowrc\" ip=\"127.0.0.1\" repo=\"{d}\" {{\n    env PATH=\"{s}:/usr/bin:/bin\" EXPR_POWERCAP=\"{d}/powercap\"\n}}\nbench b {{\n    run \"sleep 1\" host=far\n    repeat 1\n}}\n",
            d = p.display(),
            s = skew.display()
        ),
    )
    .unwrap();
    let st = h
        .expr(p)
        .args(["run", "e.kdl", "--output", "out", "-q"])
        .status()
        .unwrap();
    drop(rapl);
    assert!(st.success(), "{st:?}");
    let out = p.join("out");
    // the machine record holds the host's clock: an hour ahead, read within its round trip
    let clock = journal(&out)
        .into_iter()
        .find(|e| e["event"] == "machine" && e["host"] == "far")
        .map(|e| e["clock"].clone())
        .expect("far's machine record");
    let off = clock["offset_ms"].as_f64().unwrap();
    let rtt = clock["rtt_ms"].as_f64().unwrap();
    assert!(
        (off - 3_600_000.0).abs() <= rtt / 2.0 + 50.0,
        "offset {off} ms, round trip {rtt} ms"
    );
    let e = common::metric_rows(&out, "cpu_energy_j");
    let got: f64 = e[0].0.parse().unwrap_or_else(|_| panic!("{e:?}"));
    let want = 50.0 * common::window_ms(&out) / 1e3;
    assert!(
        (got - want).abs() / want < 0.03,
        "cpu_energy_j {got} J, hand-computed {want} J ({e:?})"
    );
    let said: f64 = e[0]
        .1
        .split("the window moved by the host's clock offset ")
        .nth(1)
        .and_then(|r| r.split(" ms").next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("the source says the window moved: {e:?}"));
    assert!((said - off).abs() < 1.0, "{said} against {off}");
    // the NVML sampler's program (several lines) ran there through the agent and said why it
    // had no counter; the GPU energy is missing with that reason, never 0
    let nvml = std::fs::read_to_string(out.join("outputs/b_r0/nvml-far.csv")).unwrap();
    assert!(
        nvml.lines()
            .any(|l| l.starts_with("expr-telemetry: no NVML energy counter: ")),
        "{nvml}"
    );
    assert!(common::metric_rows(&out, "gpu_energy_j")[0].0.is_empty());
}

/// A `collect "json"` of a bench whose step runs on an ssh host: the file it wrote into its
/// `{{ outdir }}` there is copied back before it is read (it was read here only, where it is
/// not: no data, exit 3).
#[test]
fn a_file_a_remote_step_wrote_is_fetched_before_it_is_read() {
    let Some(h) = Host::start("true") else {
        return;
    };
    let w = tempfile::tempdir().unwrap();
    let remote = w.path().join("remote");
    std::fs::create_dir(&remote).unwrap();
    std::fs::write(
        w.path().join("e.kdl"),
        format!(
            "experiment t\nhost far ssh=\"slowrc\" ip=\"127.0.0.1\" repo=\"{d}\"\n\
             bench b {{\n    run \"echo '{{\\\"x\\\": 5}}' > {{{{ outdir }}}}/r.json\" host=far\n    collect \"json\" path=\"r.json\" metric=\"x\"\n}}\n",
            d = remote.display()
        ),
    )
    .unwrap();
    let (code, err) = h.run_e(w.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        remote.join("out/outputs/b_r0/r.json").exists(),
        "written there"
    );
    assert_eq!(
        std::fs::read_to_string(w.path().join("out/outputs/b_r0/r.json")).unwrap(),
        "{\"x\": 5}\n"
    );
    let m = std::fs::read_to_string(w.path().join("out/metrics.csv")).unwrap();
    assert!(m.contains(",x,") && m.contains(",5,"), "{m}");
}

/// A step on an ssh host whose `cwd=` is not there never runs and fails its point, with or
/// without the agent, also under `exit-ok="any"`: its shell's `cd DIR || exit 200` (the agent's
/// refusal, the same 200) is a code above 128, which no `exit-ok=` accepts on a remote host.
#[test]
fn a_remote_step_whose_directory_is_missing_fails_under_exit_ok_with_and_without_the_agent() {
    for (pre, how) in [
        ("export EXPR_RC_VAR=x", "agent"),
        (
            "case \"$SSH_ORIGINAL_COMMAND\" in p=/usr/bin/python3*) exit 1;; esac",
            "no agent",
        ),
    ] {
        let Some(h) = Host::start(pre) else { return };
        let w = tempfile::tempdir().unwrap();
        let mark = w.path().join("ran-in");
        std::fs::write(
            w.path().join("e.kdl"),
            format!(
                "experiment t\nhost far ssh=\"slowrc\" ip=\"127.0.0.1\" repo=\"{d}\"\n\
                 bench b {{\n    run \"pwd > {m}; echo rate=1; exit 1\" host=far cwd=\"not-here\" exit-ok=\"any\"\n    \
                 collect regex pattern=\"rate=([0-9]+)\"\n}}\n",
                d = w.path().display(),
                m = mark.display()
            ),
        )
        .unwrap();
        let (code, err) = h.run_e(w.path());
        assert_eq!(code, Some(3), "{how}: {err}");
        assert!(!mark.exists(), "{how}: the step ran");
        let m = std::fs::read_to_string(w.path().join("out/manifest.csv")).unwrap();
        assert!(
            m.contains(",failed,")
                && m.contains("client `run1-b_r0` on `far` could not enter its working directory and did not run (exit 200)"),
            "{how}: {m}"
        );
        let log = std::fs::read_to_string(w.path().join("out/logs/run1-b_r0-far.log")).unwrap();
        assert!(log.contains("not-here"), "{how}: {log}");
    }
}
