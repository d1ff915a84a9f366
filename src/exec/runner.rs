//! The executor: carries out a Plan on local and SSH hosts and leaves a complete, honest result
//! directory even when things fail.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::exec::host::{self, Proc, Ssh};
use crate::exec::journal::{self, Journal};
use crate::exec::manifest::{self, Row};
use crate::exec::progress::Progress;
use crate::exec::signals;
use crate::exit_codes;
use crate::model::{Experiment, Host};
use crate::plan::{Phase, Plan, PlanPoint, Ready, Step};

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub resume: bool,
    pub force: bool,
    pub skip_build: bool,
    pub skip_tests: bool,
    pub fail_fast: bool,
    pub verbose: bool,
    /// Seconds between TERM and KILL at teardown.
    pub grace: u64,
}

/// Why the run stopped early.
#[derive(Debug, PartialEq)]
enum Stop {
    Interrupted,
    Killed,
}

pub struct Runner<'a> {
    exp: &'a Experiment,
    plan: &'a Plan,
    opts: Options,
    dir: PathBuf,
    ssh: Ssh,
    journal: Journal,
    progress: Progress,
    rows: Vec<Row>,
    survivors: Vec<String>,
    /// --verbose: how far each log has been streamed.
    tails: HashMap<PathBuf, u64>,
}

/// Short, unique control-socket directory (unix socket paths are limited to ~100 bytes).
fn control_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("expr-cm-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

fn hash(s: &str) -> String {
    // FNV-1a: stable across runs and platforms, enough to notice a changed command.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// The identity of a point's commands: what `--resume` compares.
pub fn point_hash(p: &PlanPoint) -> String {
    let mut s = String::new();
    for st in &p.steps {
        s.push_str(&st.host);
        s.push('\u{1}');
        s.push_str(&st.cwd);
        s.push('\u{1}');
        s.push_str(&st.exec_line());
        if let Some(f) = &st.file {
            s.push_str(&f.path);
            s.push_str(&f.content);
        }
        s.push('\n');
    }
    hash(&s)
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let v: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("EXPR_PGID="))
        .collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

impl<'a> Runner<'a> {
    /// Prepare the result directory. Refuses to touch an existing one without --resume/--force.
    pub fn new(exp: &'a Experiment, plan: &'a Plan, opts: Options) -> Result<Self, String> {
        let dir = PathBuf::from(&plan.output);
        let exists = dir.exists()
            && std::fs::read_dir(&dir)
                .map(|mut d| d.next().is_some())
                .unwrap_or(false);
        if exists && !opts.resume && !opts.force {
            return Err(format!(
                "{} already exists; nothing in it is overwritten: use `--resume {}` to continue it, `--force` to write into it, or `--output` for a new directory",
                dir.display(),
                dir.display()
            ));
        }
        if opts.resume && !dir.join("journal.jsonl").exists() {
            return Err(format!(
                "{} has no journal.jsonl to resume from",
                dir.display()
            ));
        }
        for sub in ["logs", "outputs", "runtime"] {
            std::fs::create_dir_all(dir.join(sub))
                .map_err(|e| format!("cannot create {}: {e}", dir.join(sub).display()))?;
        }
        let journal = Journal::open(&dir.join("journal.jsonl"))
            .map_err(|e| format!("cannot open the journal: {e}"))?;
        let rows = if opts.resume {
            manifest::read(&dir.join("manifest.csv"))
        } else {
            Vec::new()
        };
        Ok(Runner {
            exp,
            plan,
            progress: Progress::new(plan.points.len() as u64, opts.verbose),
            opts,
            dir,
            ssh: Ssh::new(control_dir()),
            journal,
            rows,
            survivors: Vec::new(),
            tails: HashMap::new(),
        })
    }

    fn host(&self, name: &str) -> &'a Host {
        let exp: &'a Experiment = self.exp;
        exp.host(name).unwrap_or(&exp.hosts[0])
    }

    fn log_path(&self, s: &Step) -> PathBuf {
        self.dir
            .join("logs")
            .join(format!("{}-{}.log", s.id, s.host))
    }

    /// Run a short shell script on a host: (exit code, output).
    fn host_exec(
        &self,
        h: &Host,
        script: &str,
        timeout: Duration,
    ) -> Result<(i32, String), String> {
        if h.is_local() {
            let mut c = std::process::Command::new("bash");
            c.arg("-c")
                .arg(script)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            host::run_captured(c, None, timeout)
        } else {
            self.ssh.run(h, script, None, timeout)
        }
    }

    /// The whole run. Returns the exit code.
    pub fn run(mut self) -> i32 {
        signals::install();
        self.write_first_files();
        let hosts = self.used_hosts();
        let code = match self.preflight(&hosts) {
            Err(e) => {
                self.progress.line(&format!("error: preflight: {e}"));
                self.journal
                    .write("preflight-failed", json!({ "reason": e }));
                for p in &self.plan.points {
                    self.record(
                        p,
                        "failed",
                        None,
                        &format!("not run: preflight failed: {e}"),
                        "",
                    );
                }
                exit_codes::POINT_FAILED
            }
            Ok(fingerprints) => self.run_points(&fingerprints),
        };
        for h in &hosts {
            if !h.is_local() {
                self.ssh.close(h);
            }
        }
        let _ = std::fs::remove_dir_all(&self.ssh.control_dir);
        self.write_manifest();
        // The report, partial when points failed or the run was interrupted.
        match crate::report::write(&self.dir) {
            Ok((files, missing)) => {
                let note = if missing.is_empty() {
                    String::new()
                } else {
                    format!(" ({} point(s) without data)", missing.len())
                };
                self.progress
                    .line(&format!("report: {}{note}", files.join(", ")));
            }
            Err(e) => self.progress.line(&format!("report: not written: {e}")),
        }
        if !self.survivors.is_empty() {
            self.progress.line(&format!(
                "warning: still alive after teardown: {}",
                self.survivors.join(", ")
            ));
        }
        self.journal.write(
            "end",
            json!({ "exit_code": code, "survivors": self.survivors }),
        );
        self.progress.finish();
        code
    }

    fn write_first_files(&mut self) {
        for f in &self.plan.files {
            let _ = std::fs::write(self.dir.join(&f.path), &f.content);
        }
        let _ = std::fs::write(self.dir.join("commands.sh"), crate::render::sh(self.plan));
    }

    fn used_hosts(&self) -> Vec<&'a Host> {
        let mut names: Vec<&str> = Vec::new();
        for s in self
            .plan
            .setup
            .iter()
            .chain(self.plan.points.iter().flat_map(|p| p.steps.iter()))
        {
            if !names.contains(&s.host.as_str()) {
                names.push(&s.host);
            }
        }
        names.into_iter().map(|n| self.host(n)).collect()
    }

    /// Reachable, repo present, runner files present, code fingerprints equal.
    fn preflight(&mut self, hosts: &[&'a Host]) -> Result<BTreeMap<String, String>, String> {
        let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for b in &self.exp.benches {
            for (h, f) in crate::kinds::runner_files(b) {
                let v = files.entry(h).or_default();
                if !v.contains(&f) {
                    v.push(f);
                }
            }
        }
        let mut fps: BTreeMap<String, String> = BTreeMap::new();
        let mut provenance = Vec::new();
        for h in hosts {
            self.progress.status(&format!("preflight {}", h.name));
            if !h.is_local() {
                self.ssh.open(h).map_err(|e| {
                    format!(
                        "host `{}` ({}, port {}) is unreachable: {e}",
                        h.name, h.ssh, h.ssh_port
                    )
                })?;
            }
            let fl: Vec<String> = files.get(&h.name).cloned().unwrap_or_default();
            let quoted: Vec<String> = fl.iter().map(|f| crate::shell::quote(f)).collect();
            let files = quoted.join(" ");
            let mut script = format!(
                "cd {} 2>/dev/null || {{ echo EXPR_NOREPO; exit 0; }}; echo \"EXPR_HOSTNAME $(hostname)\"; \
                 echo \"EXPR_HEAD $(git rev-parse HEAD 2>/dev/null || echo none)\"; echo \"EXPR_DIRTY $(git status --porcelain 2>/dev/null | wc -l)\"; ",
                crate::shell::quote(&h.repo)
            );
            if files.is_empty() {
                script.push_str("echo 'EXPR_DIFF none'");
            } else {
                // The fingerprint covers the working-tree diff of the runner files, and their
                // content when git does not track them.
                script.push_str(&format!(
                    "for f in {files}; do [ -e \"$f\" ] || echo \"EXPR_MISSING $f\"; done; \
                     echo \"EXPR_DIFF $( (git diff HEAD -- {files} 2>/dev/null; for f in {files}; do git ls-files --error-unmatch \"$f\" >/dev/null 2>&1 || cat \"$f\" 2>/dev/null; done) | cksum | cut -d' ' -f1)\""
                ));
            }
            let (code, out) = self
                .host_exec(h, &script, Duration::from_secs(60))
                .map_err(|e| format!("host `{}`: {e}", h.name))?;
            if code != 0 {
                return Err(format!("host `{}` ({}): {}", h.name, h.ssh, out.trim()));
            }
            if out.contains("EXPR_NOREPO") {
                return Err(format!("host `{}` has no repo at {}", h.name, h.repo));
            }
            let missing: Vec<&str> = out
                .lines()
                .filter_map(|l| l.strip_prefix("EXPR_MISSING "))
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "host `{}` lacks runner files in {}: {}",
                    h.name,
                    h.repo,
                    missing.join(", ")
                ));
            }
            let field = |k: &str| {
                out.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .unwrap_or("")
                    .trim()
                    .to_string()
            };
            let fp = format!("{}+{}", field("EXPR_HEAD "), field("EXPR_DIFF "));
            provenance.push(json!({
                "host": h.name, "hostname": field("EXPR_HOSTNAME "), "repo": h.repo,
                "git_head": field("EXPR_HEAD "), "dirty_files": field("EXPR_DIRTY ").parse::<i64>().unwrap_or(0),
                "fingerprint": fp, "runner_files": fl,
            }));
            fps.insert(h.name.clone(), fp);
        }
        // Hosts that run the same runner files must run the same code.
        let with_files: Vec<(&String, &String)> =
            fps.iter().filter(|(h, _)| files.contains_key(*h)).collect();
        if let Some((first_host, first_fp)) = with_files.first() {
            let differ: Vec<String> = with_files
                .iter()
                .filter(|(_, fp)| fp != first_fp)
                .map(|(h, fp)| format!("`{h}` ({fp})"))
                .collect();
            if !differ.is_empty() {
                let all: Vec<String> = files.values().flatten().cloned().collect();
                return Err(format!(
                    "code fingerprints differ: `{first_host}` has {first_fp}, but {}; files compared: {}. Sync the checkouts (git HEAD and these files) before running",
                    differ.join(", "),
                    all.join(", ")
                ));
            }
        }
        self.journal.write(
            "header",
            json!({
                "expr_version": env!("CARGO_PKG_VERSION"),
                "experiment": self.exp.name,
                "source": self.plan.source,
                "output": self.plan.output,
                "started": self.plan.started,
                "hosts": provenance,
                "host_specs": self.exp.hosts.iter().map(|h| {
                    let mut h = h.clone();
                    h.env = h.env.iter().map(|(k, v)| (k.clone(), crate::plan::mask(k, v))).collect();
                    h
                }).collect::<Vec<_>>(),
                "resolved": crate::resolved::to_kdl(self.exp),
            }),
        );
        Ok(fps)
    }

    fn interrupted(&self) -> Option<Stop> {
        match signals::count() {
            0 => None,
            1 => Some(Stop::Interrupted),
            _ => Some(Stop::Killed),
        }
    }

    fn run_points(&mut self, fps: &BTreeMap<String, String>) -> i32 {
        // Build and correctness tests, once per host and repo.
        for s in &self.plan.setup {
            if (s.phase == Phase::Build && self.opts.skip_build)
                || (s.phase == Phase::Test && self.opts.skip_tests)
            {
                self.journal.write("step", json!({ "step": s.id, "host": s.host, "phase": s.phase.name(), "status": "skipped" }));
                continue;
            }
            self.progress
                .status(&format!("{} {} on {}", s.phase.name(), s.id, s.host));
            let (status, code) = self.run_sync(s, None);
            if status != "ok" {
                let log = self.log_path(s);
                let what = if s.phase == Phase::Test {
                    "correctness test"
                } else {
                    "build"
                };
                let msg = format!("{what} `{}` on `{}` {status} (exit {code}); stopping before any benchmark run; log: {}", s.id, s.host, log.display());
                self.progress
                    .line(&format!("error: {msg}\n{}", tail(&log, 15)));
                for p in &self.plan.points {
                    self.record(p, "failed", None, &format!("not run: {msg}"), "");
                }
                return if self.interrupted().is_some() {
                    exit_codes::INTERRUPTED
                } else {
                    exit_codes::POINT_FAILED
                };
            }
        }
        let previous = if self.opts.resume {
            previous_points(&self.dir.join("journal.jsonl"))
        } else {
            HashMap::new()
        };
        let fingerprint = fps.values().cloned().collect::<Vec<_>>().join(",");
        let mut failed = 0;
        for p in &self.plan.points {
            if let Some(stop) = self.interrupted() {
                self.progress.line(&format!(
                    "interrupted ({stop:?}): not starting {}",
                    p.run_id
                ));
                return exit_codes::INTERRUPTED;
            }
            let h = point_hash(p);
            if self.opts.resume {
                match previous.get(&p.run_id) {
                    Some((st, ph, fp)) if st == "ok" && *ph == h && *fp == fingerprint => {
                        self.progress.line(&format!(
                            "{}: skipped, succeeded before with the same command and code",
                            p.run_id
                        ));
                        self.progress.inc();
                        continue;
                    }
                    Some((st, ph, fp)) => {
                        let why = if st != "ok" {
                            format!("it {st} last time")
                        } else if *ph != h {
                            "its command changed".into()
                        } else {
                            let _ = fp;
                            "the code fingerprint changed".into()
                        };
                        self.progress
                            .line(&format!("{}: runs again: {why}", p.run_id));
                    }
                    None => self
                        .progress
                        .line(&format!("{}: runs: no journal entry", p.run_id)),
                }
            }
            let (status, code, reason) = self.run_point(p);
            self.journal.write(
                "point",
                json!({ "run_id": p.run_id, "lane": p.lane, "repeat": p.repeat, "status": status, "exit_code": code, "reason": reason, "command_hash": h, "fingerprint": fingerprint }),
            );
            let log = p
                .steps
                .iter()
                .find(|s| s.phase == Phase::Launch)
                .map(|s| self.log_path(s).display().to_string())
                .unwrap_or_default();
            self.record(p, &status, code, &reason, &log);
            self.write_manifest();
            self.progress.inc();
            self.progress.line(&format!(
                "[{}/{}] {} {status}{}",
                p.index + 1,
                self.plan.points.len(),
                p.run_id,
                if reason.is_empty() {
                    String::new()
                } else {
                    format!(": {reason}")
                }
            ));
            match status.as_str() {
                "interrupted" => return exit_codes::INTERRUPTED,
                "ok" => {}
                _ => {
                    failed += 1;
                    if self.opts.fail_fast {
                        self.progress.line("stopping: --fail-fast");
                        return exit_codes::POINT_FAILED;
                    }
                }
            }
        }
        if failed > 0 {
            exit_codes::POINT_FAILED
        } else {
            exit_codes::OK
        }
    }

    /// Run one step to completion (build, test, collect). Returns (status, exit code).
    fn run_sync(&mut self, s: &Step, run_id: Option<&str>) -> (String, i32) {
        let collect;
        let s = if s.phase == Phase::Collect {
            collect = self.local_collect(s);
            &collect
        } else {
            s
        };
        let host = self.host(&s.host);
        let log = self.log_path(s);
        let started = Instant::now();
        let mut p = match self.spawn_recorded(s, run_id) {
            Ok(p) => p,
            Err(e) => {
                let _ = std::fs::write(&log, &e);
                self.step_event(s, run_id, "failed", -1, &log, started);
                return ("failed".into(), -1);
            }
        };
        let end = started + Duration::from_secs(s.timeout_s.max(1) as u64);
        let mut poll = Poll::new();
        let (status, code) = loop {
            if let Some(c) = p.try_exit() {
                break (if c == 0 { "ok" } else { "failed" }, c);
            }
            p.poll_remote_pgid();
            if self.interrupted().is_some() {
                host::stop(&self.ssh, host, &mut p, self.grace());
                break ("interrupted", 130);
            }
            if Instant::now() > end {
                host::stop(&self.ssh, host, &mut p, self.grace());
                break ("timeout", -1);
            }
            self.pump(&s.host, &s.id, &log, false);
            poll.wait();
        };
        self.pump(&s.host, &s.id, &log, true);
        if !host::alive_after(&self.ssh, host, &mut p) {
            self.survivors.push(format!("{} on {}", s.id, s.host));
        }
        self.step_event(s, run_id, status, code, &log, started);
        (status.into(), code)
    }

    /// --verbose: print the new lines of a step's log, prefixed by host and step (`flush` also
    /// prints a last line without its newline).
    fn pump(&mut self, host: &str, step: &str, log: &Path, flush: bool) {
        if !self.opts.verbose {
            return;
        }
        let Ok(text) = std::fs::read(log) else { return };
        let from = *self.tails.get(log).unwrap_or(&0) as usize;
        if from >= text.len() {
            return;
        }
        let chunk = &text[from..];
        let upto = if flush {
            chunk.len()
        } else {
            chunk
                .iter()
                .rposition(|b| *b == b'\n')
                .map(|i| i + 1)
                .unwrap_or(0)
        };
        for line in String::from_utf8_lossy(&chunk[..upto]).lines() {
            if !line.starts_with("EXPR_PGID=") {
                self.progress.line(&format!("[{host}/{step}] {line}"));
            }
        }
        self.tails.insert(log.to_path_buf(), (from + upto) as u64);
    }

    /// Collect steps pull from the host they name but run here; an rsync from a remote host uses
    /// the same ssh options (port, multiplexed connection, EXPR_SSH_CONFIG) as every other call.
    /// The log keeps the remote host's name.
    fn local_collect(&self, s: &Step) -> Step {
        let from = self.host(&s.host);
        let mut c = s.clone();
        c.host = "local".into();
        c.cwd = ".".into();
        c.id = format!("{}-{}", s.id, s.host);
        if !from.is_local() && c.argv.first().is_some_and(|a| a == "rsync") && c.argv.len() >= 2 {
            let n = c.argv.len();
            let (src, dest) = (c.argv[n - 2].clone(), c.argv[n - 1].clone());
            let ssh = format!("ssh {}", crate::shell::join(&self.ssh.options(from)));
            c.argv = vec!["rsync".into(), "-a".into(), "-e".into(), ssh, src, dest];
        }
        c
    }

    /// TERM → KILL grace; none once a second signal asked to kill at once.
    fn grace(&self) -> Duration {
        if signals::count() >= 2 {
            Duration::ZERO
        } else {
            Duration::from_secs(self.opts.grace.max(1))
        }
    }

    /// Start a step and record its process groups in the journal before going on, so that
    /// `expr stop` can find them even if expr is killed a moment later.
    fn spawn_recorded(&mut self, s: &Step, run_id: Option<&str>) -> Result<Proc, String> {
        let host = self.host(&s.host);
        let mut p = host::spawn(
            &self.ssh,
            host,
            &s.id,
            &s.cwd,
            &s.exec_line(),
            &self.log_path(s),
        )?;
        if !host.is_local() {
            let end = Instant::now() + Duration::from_secs(10);
            while p.poll_remote_pgid().is_none() && p.try_exit().is_none() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        self.journal.write(
            "process",
            json!({ "run_id": run_id, "step": s.id, "host": s.host, "pgid": p.local_pgid(), "remote_pgid": p.remote_pgid, "remote": !host.is_local() }),
        );
        Ok(p)
    }

    fn step_event(
        &mut self,
        s: &Step,
        run_id: Option<&str>,
        status: &str,
        code: i32,
        log: &Path,
        started: Instant,
    ) {
        self.journal.write(
            "step",
            json!({ "run_id": run_id, "step": s.id, "host": s.host, "phase": s.phase.name(), "command": s.command_line(),
                    "status": status, "exit_code": code, "log": log.display().to_string(), "elapsed_s": started.elapsed().as_secs_f64() }),
        );
        if self.opts.verbose {
            self.progress
                .line(&format!("[{}/{}] {status} (exit {code})", s.host, s.id));
        }
    }

    /// One matrix point: config, servers, clients together, collect, teardown.
    fn run_point(&mut self, p: &PlanPoint) -> (String, Option<i32>, String) {
        let mut servers: Vec<(usize, Proc)> = Vec::new();
        let mut problem: Option<(String, Option<i32>, String)> = None;
        // The point's output directory (`{{ outdir }}`) exists on every host before anything runs.
        let _ = std::fs::create_dir_all(self.dir.join("outputs").join(&p.run_id));
        let mut remote: Vec<&str> = p
            .steps
            .iter()
            .map(|s| s.host.as_str())
            .filter(|h| !self.host(h).is_local())
            .collect();
        remote.sort();
        remote.dedup();
        for h in remote {
            let host = self.host(h);
            let path = format!("{}/outputs/{}", self.plan.output, p.run_id);
            let script = format!(
                "cd {} && mkdir -p {}",
                crate::shell::quote(&host.repo),
                crate::shell::quote(&path)
            );
            if let Err(e) = self.ssh.run(host, &script, None, Duration::from_secs(30)) {
                problem = Some((
                    "failed".into(),
                    None,
                    format!("cannot create {path} on `{h}`: {e}"),
                ));
            }
        }
        let run_id = p.run_id.as_str();
        // config files
        for (i, s) in p.steps.iter().enumerate() {
            if s.phase != Phase::Config || problem.is_some() {
                continue;
            }
            if let Err(e) = self.write_config(s) {
                problem = Some((
                    "failed".into(),
                    None,
                    format!("config `{}` on `{}`: {e}", s.id, s.host),
                ));
                let _ = i;
                break;
            }
            self.journal.write("step", json!({ "run_id": run_id, "step": s.id, "host": s.host, "phase": "config", "status": "ok", "file": s.file.as_ref().map(|f| f.path.clone()) }));
        }
        // servers, in order, each ready before the next
        if problem.is_none() {
            for (i, s) in p.steps.iter().enumerate() {
                if !s.background {
                    continue;
                }
                self.progress
                    .status(&format!("{run_id}: start {} on {}", s.id, s.host));
                let log = self.log_path(s);
                let started = Instant::now();
                // A port that already answers would make readiness succeed for the wrong process.
                if let Some(Ready::Tcp { ip, port }) = &s.ready {
                    if connect(ip, *port) {
                        problem = Some(("failed".into(), None, format!("server `{}` on `{}`: port {ip}:{port} is already in use before the server started", s.id, s.host)));
                        break;
                    }
                }
                match self.spawn_recorded(s, Some(run_id)) {
                    Err(e) => {
                        problem = Some((
                            "failed".into(),
                            None,
                            format!("server `{}` on `{}` did not start: {e}", s.id, s.host),
                        ));
                        break;
                    }
                    Ok(mut proc_) => {
                        let ready = self.wait_ready(s, &mut proc_);
                        servers.push((i, proc_));
                        if let Err(e) = ready {
                            self.step_event(s, Some(run_id), "failed", -1, &log, started);
                            problem = Some((
                                "failed".into(),
                                None,
                                format!(
                                    "server `{}` on `{}` {e}; log: {}\n{}",
                                    s.id,
                                    s.host,
                                    log.display(),
                                    tail(&log, 10)
                                ),
                            ));
                            break;
                        }
                        self.step_event(s, Some(run_id), "ready", 0, &log, started);
                    }
                }
            }
        }
        // clients, all together
        let mut outcome: (String, Option<i32>, String) = ("ok".into(), Some(0), String::new());
        if problem.is_none() {
            let launches: Vec<&Step> = p
                .steps
                .iter()
                .filter(|s| s.phase == Phase::Launch)
                .collect();
            let mut running: Vec<(&Step, Proc, Instant)> = Vec::new();
            for s in &launches {
                match self.spawn_recorded(s, Some(run_id)) {
                    Ok(pr) => running.push((s, pr, Instant::now())),
                    Err(e) => {
                        outcome = (
                            "failed".into(),
                            None,
                            format!("client `{}` did not start: {e}", s.id),
                        )
                    }
                }
            }
            self.progress
                .status(&format!("{run_id}: {} client(s) running", running.len()));
            // --verbose streams clients and servers alike
            let streams: Vec<(String, String, PathBuf)> = p
                .steps
                .iter()
                .filter(|s| s.phase == Phase::Launch || s.background)
                .map(|s| (s.host.clone(), s.id.clone(), self.log_path(s)))
                .collect();
            let mut done: Vec<Option<(String, i32)>> = vec![None; running.len()];
            let mut poll = Poll::new();
            loop {
                let mut all = true;
                for (k, (s, pr, started)) in running.iter_mut().enumerate() {
                    if done[k].is_some() {
                        continue;
                    }
                    pr.poll_remote_pgid();
                    if let Some(c) = pr.try_exit() {
                        done[k] = Some((if c == 0 { "ok" } else { "failed" }.into(), c));
                    } else if started.elapsed() > Duration::from_secs(s.timeout_s.max(1) as u64) {
                        let host = self.host(&s.host);
                        host::stop(&self.ssh, host, pr, self.grace());
                        done[k] = Some(("timeout".into(), -1));
                    } else {
                        all = false;
                    }
                }
                if all {
                    break;
                }
                if self.interrupted().is_some() {
                    for (k, (s, pr, _)) in running.iter_mut().enumerate() {
                        if done[k].is_none() {
                            let host = self.host(&s.host);
                            host::stop(&self.ssh, host, pr, self.grace());
                            done[k] = Some(("interrupted".into(), 130));
                        }
                    }
                    break;
                }
                for (h, id, log) in &streams {
                    self.pump(h, id, log, false);
                }
                poll.wait();
            }
            for (h, id, log) in &streams {
                self.pump(h, id, log, true);
            }
            for (k, (s, pr, started)) in running.iter_mut().enumerate() {
                let (st, code) = done[k].clone().unwrap_or(("failed".into(), -1));
                let host = self.host(&s.host);
                if !host::alive_after(&self.ssh, host, pr) {
                    self.survivors.push(format!("{} on {}", s.id, s.host));
                }
                let log = self.log_path(s);
                self.step_event(s, Some(run_id), &st, code, &log, *started);
                if st != "ok" && outcome.0 == "ok" || st == "interrupted" {
                    let reason = if st == "interrupted" {
                        "interrupted".to_string()
                    } else {
                        format!(
                            "client `{}` on `{}` {st} (exit {code}); command: {}; log: {}",
                            s.id,
                            s.host,
                            s.command_line(),
                            log.display()
                        )
                    };
                    outcome = (
                        if st == "interrupted" {
                            "interrupted".into()
                        } else {
                            "failed".into()
                        },
                        Some(code),
                        reason,
                    );
                }
            }
            // artifacts back from remote hosts
            if outcome.0 != "interrupted" {
                for s in p.steps.iter().filter(|s| s.phase == Phase::Collect) {
                    let _ = std::fs::create_dir_all(self.dir.join("outputs").join(run_id));
                    let (st, code) = self.run_sync(s, Some(run_id));
                    if st != "ok" && outcome.0 == "ok" {
                        outcome = (
                            "failed".into(),
                            Some(code),
                            format!(
                                "collecting `{}` failed; log: {}",
                                s.id,
                                self.log_path(s).display()
                            ),
                        );
                    }
                }
            }
        }
        // A distributed parent that failed but left complete rank CSVs is verified and merged,
        // and the failure is recorded; a successful run without a merged CSV is merged here.
        if let (Some(check), true) = (&p.ranks, problem.is_none()) {
            let parent_failed = outcome.0 == "failed" && outcome.2.starts_with("client");
            if outcome.0 == "ok" || parent_failed {
                match crate::ranks::verify(&self.dir, check) {
                    Ok(()) => {
                        let merged = crate::ranks::merge(&self.dir, check).unwrap_or(false);
                        if parent_failed {
                            let reason = format!(
                                "recovered: {}; all {} rank CSVs are complete ({} steps, warmup markers, final step {}){}",
                                outcome.2.lines().next().unwrap_or(""),
                                check.world,
                                check.steps,
                                check.steps - 1,
                                if merged { " and were merged" } else { "" }
                            );
                            self.journal
                                .write("recovered", json!({ "run_id": run_id, "reason": reason }));
                            outcome = ("ok".into(), outcome.1, reason);
                        }
                    }
                    Err(e) if parent_failed => {
                        outcome.2 = format!("{}; rank CSVs cannot stand in: {e}", outcome.2)
                    }
                    Err(_) => {}
                }
            }
        }
        // teardown: reverse start order, always
        for (i, mut pr) in servers.into_iter().rev() {
            let s = &p.steps[i];
            let host = self.host(&s.host);
            self.progress
                .status(&format!("{run_id}: stop {} on {}", s.id, s.host));
            let gone = host::stop(&self.ssh, host, &mut pr, self.grace());
            self.journal.write("stopped", json!({ "run_id": run_id, "step": s.id, "host": s.host, "pgid": pr.local_pgid(), "remote_pgid": pr.remote_pgid, "gone": gone }));
            if !gone {
                self.survivors.push(format!("{} on {}", s.id, s.host));
            }
        }
        problem.unwrap_or(outcome)
    }

    /// Write a config file where the step's host reads it, and a copy under runtime/.
    fn write_config(&mut self, s: &Step) -> Result<(), String> {
        let Some(f) = &s.file else { return Ok(()) };
        let host = self.host(&s.host);
        let name = Path::new(&f.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "config".into());
        let _ = std::fs::write(self.dir.join("runtime").join(&name), &f.content);
        if host.is_local() {
            let path = if Path::new(&f.path).is_absolute() {
                PathBuf::from(&f.path)
            } else {
                Path::new(&host.repo).join(&f.path)
            };
            if let Some(d) = path.parent() {
                std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
            }
            std::fs::write(&path, &f.content).map_err(|e| format!("{}: {e}", path.display()))
        } else {
            let q = crate::shell::quote(&f.path);
            let script = format!(
                "cd {} && mkdir -p \"$(dirname {q})\" && cat > {q}",
                crate::shell::quote(&host.repo)
            );
            match self.ssh.run(
                host,
                &script,
                Some(f.content.as_bytes()),
                Duration::from_secs(60),
            )? {
                (0, _) => Ok(()),
                (c, out) => Err(format!(
                    "copy to {}:{} failed (exit {c}): {}",
                    host.name,
                    f.path,
                    out.trim()
                )),
            }
        }
    }

    /// Readiness with a deadline and backoff: TCP connect, or a log line.
    fn wait_ready(&self, s: &Step, p: &mut Proc) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(s.timeout_s.max(1) as u64);
        let mut pause = Duration::from_millis(10);
        let re = match &s.ready {
            Some(Ready::Log { regex }) => Some(
                regex::Regex::new(regex)
                    .map_err(|e| format!("has an invalid ready-log regex: {e}"))?,
            ),
            _ => None,
        };
        loop {
            if let Some(c) = p.try_exit() {
                return Err(format!("exited (code {c}) before it was ready"));
            }
            if self.interrupted().is_some() {
                return Err("was interrupted before it was ready".into());
            }
            p.poll_remote_pgid();
            let ready = match &s.ready {
                Some(Ready::Tcp { ip, port }) => connect(ip, *port),
                Some(Ready::Log { .. }) => {
                    let text = std::fs::read_to_string(&p.log).unwrap_or_default();
                    re.as_ref().is_some_and(|r| r.is_match(&text))
                }
                None => true,
            };
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                let what = match &s.ready {
                    Some(Ready::Tcp { ip, port }) => format!("{ip}:{port} accepted no connection"),
                    Some(Ready::Log { regex }) => format!("printed no line matching /{regex}/"),
                    None => String::new(),
                };
                return Err(format!("was not ready within {} s ({what})", s.timeout_s));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    fn record(&mut self, p: &PlanPoint, status: &str, code: Option<i32>, reason: &str, log: &str) {
        let row = manifest::row(self.exp, self.plan, p, status, code, reason, log);
        self.rows.retain(|r| r.run_id != row.run_id);
        self.rows.push(row);
    }

    fn write_manifest(&mut self) {
        let order: HashMap<&str, usize> = self
            .plan
            .points
            .iter()
            .map(|p| (p.run_id.as_str(), p.index))
            .collect();
        self.rows
            .sort_by_key(|r| order.get(r.run_id.as_str()).copied().unwrap_or(usize::MAX));
        if let Err(e) = manifest::write(&self.dir.join("manifest.csv"), &self.rows) {
            let _ = writeln!(std::io::stderr(), "warning: cannot write manifest.csv: {e}");
        }
    }
}

/// Polling with backoff: short steps finish without a fixed delay, long ones cost little CPU.
struct Poll(Duration);

impl Poll {
    fn new() -> Self {
        Poll(Duration::from_millis(1))
    }
    fn wait(&mut self) {
        std::thread::sleep(self.0);
        self.0 = (self.0 * 2).min(Duration::from_millis(20));
    }
}

fn connect(ip: &str, port: i64) -> bool {
    let Ok(mut addrs) = (ip, port as u16).to_socket_addrs() else {
        return false;
    };
    addrs.next().is_some_and(|a: SocketAddr| {
        TcpStream::connect_timeout(&a, Duration::from_millis(300)).is_ok()
    })
}

/// run_id → (status, command hash, fingerprint) of the last point event in a journal.
fn previous_points(path: &Path) -> HashMap<String, (String, String, String)> {
    let mut m = HashMap::new();
    for e in journal::read(path) {
        if e["event"] == "point" {
            if let Some(id) = e["run_id"].as_str() {
                let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
                m.insert(
                    id.to_string(),
                    (s("status"), s("command_hash"), s("fingerprint")),
                );
            }
        }
    }
    m
}
