//! Preflight: every host reachable, its repo and runner files present, code fingerprints equal.

pub(in crate::exec) mod machine_check;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::exec::backend::host::Ssh;
use crate::exec::state::progress::Progress;
use crate::exec::state::Runner;
use crate::model::Experiment;
use crate::model::Host;
use crate::plan::Plan;
use crate::results::event::{self, Header, RunEvent};

/// Whether a program is on this machine's PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| !crate::util::coexist::on_path(&paths, program).is_empty())
}

impl<'a> Runner<'a> {
    /// Reachable, repo present, runner files present, code fingerprints equal: the checks of
    /// [`Preflight`], given what they need of the run; then the machines' noise probe, the
    /// header, and each host's machine record.
    pub(super) fn preflight(
        &mut self,
        hosts: &[&'a Host],
    ) -> Result<BTreeMap<String, String>, String> {
        let mut pf = Preflight {
            exp: self.rec.exp,
            plan: self.rec.plan,
            ssh: &self.rec.ssh,
            progress: &self.rec.progress,
            quiet: self.opts.quiet,
            resume: self.opts.resume,
            history_db: self.opts.history_db.as_deref(),
            dir: &self.rec.dir,
            found: Found::default(),
        };
        let checked = pf.check(hosts);
        let found = pf.found;
        self.rec.known_flags = found.known_flags;
        self.rec.layouts = found.layouts;
        self.rec.left_out = found.left_out;
        for e in found.events {
            self.rec.publish(e);
        }
        let checked = checked?;
        self.probe_machines(hosts)?;
        self.gpus_there()?;
        same_code(&checked.files, &checked.fingerprints)?;
        self.rec.publish(header(
            self.rec.exp,
            self.rec.plan,
            &self.rec.mark,
            &checked.provenance,
            &self.opts.sets,
            &self.opts.only,
        ));
        self.record_machines();
        Ok(checked.fingerprints)
    }
}

/// What preflight's checks are given: the experiment and its plan, the hosts' connections, the
/// terminal, and the run's options they read.
pub(super) struct Preflight<'a> {
    pub exp: &'a Experiment,
    pub plan: &'a Plan,
    pub ssh: &'a Ssh,
    pub progress: &'a Progress,
    /// `--quiet`: no line per remote host.
    pub quiet: bool,
    /// `--resume`: the layouts the run being resumed chose are kept.
    pub resume: bool,
    /// The history database, which caches each checkout's program flags by code fingerprint.
    pub history_db: Option<&'a Path>,
    /// The result directory.
    pub dir: &'a Path,
    /// What the checks found.
    pub found: Found,
}

/// What preflight's checks found, for the run: the flags each step's program takes, the config
/// layout each host's checkout takes, the optional flags left out, and the events to record.
#[derive(Default)]
pub(super) struct Found {
    pub known_flags: BTreeMap<String, BTreeSet<String>>,
    pub layouts: BTreeMap<(String, String), String>,
    pub left_out: BTreeMap<String, Vec<String>>,
    pub events: Vec<RunEvent>,
}

/// Every host's check passed: its code fingerprint and provenance, and the runner files the
/// fingerprints cover.
pub(super) struct Checked {
    pub fingerprints: BTreeMap<String, String>,
    pub provenance: Vec<serde_json::Value>,
    pub files: BTreeMap<String, Vec<String>>,
}

/// Hosts that run the same runner files must run the same code.
fn same_code(
    files: &BTreeMap<String, Vec<String>>,
    fps: &BTreeMap<String, String>,
) -> Result<(), String> {
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
    Ok(())
}

/// The run's header: its identity, each host's provenance, the resolved experiment.
fn header(
    exp: &Experiment,
    plan: &Plan,
    mark: &str,
    provenance: &[serde_json::Value],
    sets: &[String],
    only: &[String],
) -> RunEvent {
    let host_specs: Vec<_> = exp
        .hosts
        .iter()
        .map(|h| {
            let mut h = h.clone();
            h.env = h
                .env
                .iter()
                .map(|(k, v)| (k.clone(), crate::plan::mask(k, v)))
                .collect();
            h
        })
        .collect();
    let resolved = crate::parse::resolved::to_kdl(exp);
    RunEvent::Header(Header {
        expr_version: Some(env!("CARGO_PKG_VERSION").into()),
        // the mark in every step's environment (`expr stop` finds what left a group)
        mark: Some(mark.to_string()),
        experiment: Some(exp.name.clone()),
        source: Some(plan.source.clone()),
        output: Some(plan.output.clone()),
        started: Some(plan.started.clone()),
        hosts: Some(json!(provenance)),
        host_specs: Some(json!(host_specs)),
        model: stored_model(exp, &resolved),
        resolved: Some(resolved),
        // where each `expect` was written, for the report (it decodes the resolved copy)
        expect_at: Some(json!(exp
            .benches
            .iter()
            .map(|b| b
                .expects
                .iter()
                .map(|e| format!("{:?}", e.loc))
                .collect::<Vec<_>>())
            .collect::<Vec<_>>())),
        // the points this run was asked for (`--only` selects part of the matrix)
        run_ids: Some(plan.points.iter().map(|p| p.run_id.clone()).collect()),
        cwd: std::env::current_dir()
            .ok()
            .map(|d| d.display().to_string()),
        ssh_config: crate::plan::ssh_config()
            .map(|c| std::path::absolute(&c).map_or(c, |a| a.display().to_string())),
        // the run's `--set`, which a resume takes again
        sets: (!sets.is_empty()).then(|| sets.to_vec()),
        only: (!only.is_empty()).then(|| only.to_vec()),
    })
}

impl<'a> Preflight<'a> {
    /// An event to record (the run publishes them when the checks end).
    fn emit(&mut self, e: &RunEvent) {
        self.found.events.push(e.clone());
    }

    /// Every host at once (reachable, repo and runner files present, rsync where needed), then
    /// the ports, the programs' flags and the config files' schemas; every problem reported,
    /// not only the first.
    pub(super) fn check(&mut self, hosts: &[&'a Host]) -> Result<Checked, String> {
        let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for b in &self.exp.benches {
            for (h, f) in crate::kinds::of(b.kind).runner_files(b) {
                let v = files.entry(h).or_default();
                if !v.contains(&f) {
                    v.push(f);
                }
            }
        }
        // hosts whose artifacts come back by rsync: rsync must exist there and here
        let rsync_from: std::collections::BTreeSet<&str> = self
            .plan
            .points
            .iter()
            .flat_map(|p| p.steps.iter())
            .filter(|s| s.argv.first().is_some_and(|a| a == "rsync"))
            .map(|s| s.host.as_str())
            .collect();
        if !rsync_from.is_empty() && !on_path("rsync") {
            return Err(format!(
                "rsync is not installed here; it brings artifacts back from {} (install it: apt-get install rsync)",
                crate::util::markup::ticked(rsync_from.iter())
            ));
        }
        // the profilers each host's profiled steps run under (`profile`)
        let mut tools: BTreeMap<String, Vec<(&'static str, String)>> = BTreeMap::new();
        for s in self.plan.points.iter().flat_map(|p| p.steps.iter()) {
            if let Some(t) = crate::plan::profile::tool_of(s) {
                let v = tools.entry(s.host.clone()).or_default();
                if !v.iter().any(|(x, _)| *x == t) {
                    v.push((t, s.extra().note.clone().unwrap_or_default()));
                }
            }
        }
        // every host at once; every problem reported, not only the first
        self.progress
            .status(&format!("preflight: {} host(s)", hosts.len()));
        let ssh = self.ssh.clone();
        let results: Vec<Result<(String, serde_json::Value), String>> = std::thread::scope(|sc| {
            let handles: Vec<_> = hosts
                .iter()
                .map(|h| {
                    let (ssh, files, rsync_from, tools) = (&ssh, &files, &rsync_from, &tools);
                    let results = results_in_repo(h, &self.plan.output);
                    sc.spawn(move || {
                        check_host(ssh, h, files, rsync_from, tools, results.as_deref())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|t| {
                    t.join()
                        .unwrap_or_else(|_| Err("preflight check panicked".into()))
                })
                .collect()
        });
        let mut fps: BTreeMap<String, String> = BTreeMap::new();
        let mut provenance = Vec::new();
        let mut problems = Vec::new();
        for (h, r) in hosts.iter().zip(results) {
            match r {
                Ok((fp, prov)) => {
                    // a remote host: the port ssh used (the experiment's, or ~/.ssh/config's) and
                    // how its steps run
                    if !h.is_local() && !self.quiet {
                        self.progress.line(&format!(
                            "host `{}`: ssh port {}{}, {}",
                            h.name,
                            prov["ssh_port"]
                                .as_u64()
                                .map_or("?".to_string(), |p| p.to_string()),
                            if h.ssh_port_loc.is_some() {
                                " (ssh-port)"
                            } else {
                                " (ssh's own configuration)"
                            },
                            prov["agent"]
                                .as_str()
                                .map_or("one ssh command per operation".to_string(), |a| {
                                    format!("one agent session ({a})")
                                })
                        ));
                    }
                    fps.insert(h.name.clone(), fp);
                    provenance.push(prov);
                }
                Err(e) => problems.push(e),
            }
        }
        if !problems.is_empty() {
            return Err(problems.join("\n"));
        }
        self.check_ports(hosts)?;
        self.check_program_flags(hosts, &provenance)?;
        self.check_config_schemas(hosts, &provenance)?;
        Ok(Checked {
            fingerprints: fps,
            provenance,
            files,
        })
    }
}

impl Preflight<'_> {
    /// Every port a server of this run will listen on must be free before anything starts:
    /// one that already answers would fail every point (or, worse, answer for the server). On
    /// this machine the holder is named from `ss -ltnp` where it can tell.
    fn check_ports(&mut self, hosts: &[&Host]) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        let mut problems = Vec::new();
        for s in self.plan.points.iter().flat_map(|p| p.steps.iter()) {
            let (true, Some(crate::plan::Ready::Tcp { ip, port })) =
                (s.background, s.ready.as_deref())
            else {
                continue;
            };
            let Some(h) = hosts.iter().find(|h| h.name == s.host) else {
                continue;
            };
            if !h.runs_here() || !seen.insert((ip.clone(), *port)) {
                continue;
            }
            if crate::exec::state::connect(ip, *port) {
                let holder = port_holder(*port)
                    .map(|w| format!(" by {w}"))
                    .unwrap_or_default();
                problems.push(format!(
                    "port {ip}:{port} of `{}` on `{}` is already in use{holder}; every point would fail (or another process would answer for the server): stop it, or give the server another port",
                    s.id, s.host
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }
}

/// Who listens on a TCP port here, as `ss -ltnp` says (`python3 (pid 123)`), when it can tell.
fn port_holder(port: i64) -> Option<String> {
    let out = duct::cmd("ss", ["-Hltnp", &format!("sport = :{port}")])
        .stdin_null()
        .stdout_capture()
        .stderr_null()
        .unchecked()
        .run()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // users:(("python3",pid=123,fd=3))
    let users = text.split("users:((").nth(1)?;
    let name = users.split('"').nth(1)?;
    let pid = users.split("pid=").nth(1)?.split(',').next()?;
    Some(format!("`{name}` (pid {pid})"))
}

/// The setting a program flag comes from, for the message that says what to change: as the
/// bench's kind names it, else the flag's name.
fn setting_of(exp: &crate::model::Experiment, bench: &str, flag: &str) -> String {
    exp.benches
        .iter()
        .find(|b| b.name == bench)
        .and_then(|b| crate::kinds::of(b.kind).setting_of_flag(flag))
        .unwrap_or_else(|| flag.trim_start_matches('-').to_string())
}

impl<'a> Preflight<'a> {
    /// Every flag the plan passes to a Python program (run_mock_stress.py, ep_bench_ll.py, …)
    /// must be one the checkout's program takes: ask it (`--help`) on each host before anything
    /// starts. A program whose help cannot be read is reported and not checked.
    fn check_program_flags(
        &mut self,
        hosts: &[&'a Host],
        provenance: &[serde_json::Value],
    ) -> Result<(), String> {
        let (probes, defaults, users) = self.planned_probes();
        let earlier = if self.resume {
            crate::results::journal::events(&self.dir.join("journal.jsonl"))
        } else {
            Vec::new()
        };
        let mut problems = Vec::new();
        for (key, planned) in probes {
            let Some(h) = hosts.iter().find(|h| h.name == key.0) else {
                continue;
            };
            let Some(known) =
                self.known_flags(h, &key, &users, provenance, &earlier, &mut problems)?
            else {
                continue;
            };
            self.leave_out_optional(&users, &key, &known);
            if known.is_empty() {
                continue;
            }
            let found = (&planned, &known, &defaults);
            self.flag_problems(&key, found, &users, provenance, &mut problems);
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }

    /// The flags each program is passed, by (host, cwd, python, script); the programs' own
    /// defaults of flags that may be left out; and the steps (with their bench) behind each.
    fn planned_probes(
        &self,
    ) -> (
        BTreeMap<ProbeKey, BTreeSet<String>>,
        BTreeMap<String, String>,
        ProbeUsers<'a>,
    ) {
        let mut probes: BTreeMap<ProbeKey, BTreeSet<String>> = BTreeMap::new();
        let mut defaults: BTreeMap<String, String> = BTreeMap::new();
        let mut users: ProbeUsers<'a> = BTreeMap::new();
        let plan: &'a crate::plan::Plan = self.plan;
        for (bench, s) in plan
            .points
            .iter()
            .flat_map(|p| p.steps.iter().map(move |s| (p.bench.as_str(), s)))
        {
            if s.phase != crate::plan::Phase::Launch {
                continue;
            }
            // the step's own probe (its python, `script.py` or `-m module`), else a `.py` in
            // its argv run by the python before it (or python3)
            let (i, python, script) = match &s.probe {
                Some(pr) => {
                    let Some(last) = pr.program.last() else {
                        continue;
                    };
                    let Some(i) = s.argv.iter().rposition(|a| a == last) else {
                        continue;
                    };
                    (
                        i,
                        crate::util::shell::join(&pr.python),
                        crate::util::shell::join(&pr.program),
                    )
                }
                None => {
                    let Some(i) = s.argv.iter().position(|a| a.ends_with(".py")) else {
                        continue;
                    };
                    // only a script a python runs (`python3 t.py`, `torchrun t.py`, `./t.py`):
                    // `cat t.py` or `cp t.py x` does not run it, and its `--help` is not asked
                    let base = |a: &String| a.rsplit('/').next().unwrap_or(a).to_string();
                    let python_at = s.argv[..i]
                        .iter()
                        .rposition(|a| base(a).starts_with("python") || base(a) == "torchrun");
                    let python_word = python_at
                        .map(|p| &s.argv[p])
                        .filter(|a| base(a).starts_with("python"));
                    // its script: the first word after it that is no option, with no `-c CODE`
                    // or `-m MODULE` before it (then the `.py` is an argument: `python3 -m
                    // py_compile t.py` does not run it)
                    let script_of = |p: usize| {
                        let mut value_next = false;
                        s.argv[p + 1..i].iter().all(|a| {
                            let ok = if value_next {
                                true
                            } else if a.starts_with("--") {
                                !matches!(a.as_str(), "--module" | "--no-python" | "--no_python")
                            } else if let Some(f) = a.strip_prefix('-') {
                                !f.starts_with(['c', 'm'])
                            } else {
                                false
                            };
                            // python's `-W arg`, `-X opt`; torchrun's `--nproc-per-node 2`
                            value_next = !value_next
                                && (matches!(a.as_str(), "-W" | "-X")
                                    || (a.starts_with("--") && !a.contains('=')));
                            ok
                        })
                    };
                    let runs_it = i == 0 || python_at.is_some_and(script_of);
                    if !runs_it {
                        continue;
                    }
                    let python = match python_word {
                        Some(p) => crate::util::shell::quote(p),
                        None => "python3".into(),
                    };
                    (i, python, crate::util::shell::quote(&s.argv[i]))
                }
            };
            defaults.extend(s.extra().flag_defaults.iter().cloned());
            let key = (s.host.clone(), s.cwd.clone(), python, script);
            users.entry(key.clone()).or_default().push((bench, s));
            let flags = probes.entry(key).or_default();
            for a in &s.argv[i + 1..] {
                if let Some(f) = a.strip_prefix("--") {
                    flags.insert(format!("--{}", f.split('=').next().unwrap_or(f)));
                }
            }
        }
        (probes, defaults, users)
    }

    /// The flags a program takes: from this run's journal (`--resume`, same code), the history's
    /// cache, or its `--help`. `None` when they cannot be known (said, or a problem pushed).
    fn known_flags(
        &mut self,
        h: &Host,
        key: &ProbeKey,
        users: &ProbeUsers<'a>,
        provenance: &[serde_json::Value],
        earlier: &[RunEvent],
        problems: &mut Vec<String>,
    ) -> Result<Option<BTreeSet<String>>, String> {
        let (host_name, cwd, python, script) = key.clone();
        // the same code answers the same: reuse what this run's journal recorded (--resume)
        let code = provenance
            .iter()
            .find(|p| p["host"] == host_name.as_str())
            .map(|p| {
                format!(
                    "{}+{}",
                    p["fingerprint"].as_str().unwrap_or(""),
                    p["tree_diff"].as_str().unwrap_or("")
                )
            })
            .unwrap_or_default();
        let cached: Option<BTreeSet<String>> = earlier.iter().find_map(|e| match e {
            RunEvent::Introspection(i)
                if i.host == host_name
                    && i.code == code
                    && i.cwd == cwd
                    && i.python == python
                    && i.script == script =>
            {
                Some(i.flags.iter().cloned().collect())
            }
            _ => None,
        });
        // across runs: the history database, keyed by the machine, checkout, program and
        // code; a checkout that git does not track has no reliable fingerprint: asked again
        let prov = provenance.iter().find(|p| p["host"] == host_name.as_str());
        let db_key = prov
            .filter(|p| {
                p["git_head"]
                    .as_str()
                    .is_some_and(|g| g != "none" && !g.is_empty())
            })
            .map(|p| {
                format!(
                    "{}|{}|{cwd}|{python}|{script}|{code}",
                    p["hostname"].as_str().unwrap_or(""),
                    p["repo"].as_str().unwrap_or("")
                )
            });
        let from_db = match (&cached, &db_key, &self.history_db) {
            (None, Some(k), Some(db)) => crate::history::flags::cached_flags(db, k),
            _ => None,
        };
        let known = if let Some(known) = cached {
            self.progress.line(&format!(
                "preflight: `{script}` on `{host_name}`: flags from the journal (same code: {code})"
            ));
            known
        } else if let Some(flags) = from_db {
            self.progress.line(&format!(
                "preflight: `{script}` on `{host_name}`: flags from the history cache (same code: {code})"
            ));
            let known: BTreeSet<String> = flags.into_iter().collect();
            self.emit(&RunEvent::Introspection(event::Introspection {
                host: host_name.clone(),
                code: code.clone(),
                cwd: cwd.clone(),
                python: python.clone(),
                script: script.clone(),
                flags: known.iter().cloned().collect(),
                from: Some("history".into()),
            }));
            known
        } else {
            return self.ask_help(h, key, users, &code, db_key.as_deref(), problems);
        };
        Ok(Some(known))
    }

    /// Ask the program on its host (`--help`, with the host's and the step's environment), and
    /// record what it said in the journal and the history's cache.
    fn ask_help(
        &mut self,
        h: &Host,
        key: &ProbeKey,
        users: &ProbeUsers<'a>,
        code: &str,
        db_key: Option<&str>,
        problems: &mut Vec<String>,
    ) -> Result<Option<BTreeSet<String>>, String> {
        let (host_name, cwd, python, script) = key.clone();
        self.progress
            .status(&format!("preflight: {script} --help on {host_name}"));
        // the environment the program runs with: the host's `env` (PYTHONPATH,
        // LD_LIBRARY_PATH, …) and what the step sets for its interpreter
        let step = users.get(key).and_then(|u| u.first()).map(|(_, s)| *s);
        // (not its secrets: `--help` needs none, and this line is on a command line)
        let mut env: Vec<(String, String)> = h
            .env
            .iter()
            .filter(|(k, _)| !crate::util::secret::is_secret(k))
            .cloned()
            .collect();
        if let Some(st) = step {
            env.extend(
                st.env
                    .iter()
                    .filter(|(k, _)| PROBE_ENV.contains(&k.as_str()))
                    .cloned(),
            );
        }
        let exports = if env.is_empty() {
            String::new()
        } else {
            format!(
                "export {}; ",
                env.iter()
                    .map(|(k, v)| format!("{k}={}", crate::util::shell::quote(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        };
        let line = format!(
            "cd {} && {exports}{python} {script} --help",
            crate::util::shell::quote(&cwd),
        );
        let required = step
            .and_then(|s| s.probe.as_ref())
            .is_some_and(|p| p.required);
        let known: BTreeSet<String> = match host_exec(self.ssh, h, &line, Duration::from_secs(120))
        {
            Ok((0, out)) => out
                .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']' || c == '=')
                .filter(|t| t.starts_with("--") && t.len() > 2)
                .map(|t| {
                    t.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                        .to_string()
                })
                .collect(),
            Ok((code, out)) if required => {
                let setting = step
                    .and_then(|s| s.probe.as_ref())
                    .map_or("python", |p| p.setting);
                let last = out
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim();
                problems.push(format!(
                    "host `{host_name}`: `{python} {script} --help` (in {cwd}) exited {code}, so the program cannot start there: {last}{}",
                    start_hint(code, &out, &host_name, &python, setting, &h.repo)
                ));
                return Ok(None);
            }
            Ok((code, out)) => {
                self.progress.line(&format!(
                "warning: `{python} {script} --help` on `{host_name}` exited {code}; its flags are not checked: {}",
                out.lines().last().unwrap_or("").trim()
            ));
                self.leave_out_optional(users, key, &BTreeSet::new());
                return Ok(None);
            }
            Err(_) if crate::exec::signals::count() > 0 => return Err("interrupted".into()),
            Err(e) => {
                self.progress.line(&format!(
                "warning: `{python} {script} --help` on `{host_name}` could not run ({e}); its flags are not checked"
            ));
                self.leave_out_optional(users, key, &BTreeSet::new());
                return Ok(None);
            }
        };
        if !known.is_empty() && !code.is_empty() {
            self.emit(&RunEvent::Introspection(event::Introspection {
                host: host_name.clone(),
                code: code.to_string(),
                cwd: cwd.clone(),
                python: python.clone(),
                script: script.clone(),
                flags: known.iter().cloned().collect(),
                from: None,
            }));
            if let (Some(k), Some(db)) = (&db_key, &self.history_db) {
                let flags: Vec<String> = known.iter().cloned().collect();
                if let Err(e) = crate::history::flags::store_flags(db, k, &flags) {
                    self.progress.line(&format!(
                        "warning: the flags of `{script}` were not cached ({e})"
                    ));
                }
            }
        }
        Ok(Some(known))
    }

    /// The planned flags a program does not take, and what the kind knows is wrong beyond them,
    /// as problems naming what to change. `found`: the planned flags, the known ones and the
    /// programs' defaults.
    fn flag_problems(
        &mut self,
        key: &ProbeKey,
        (planned, known, defaults): (
            &BTreeSet<String>,
            &BTreeSet<String>,
            &BTreeMap<String, String>,
        ),
        users: &ProbeUsers<'a>,
        provenance: &[serde_json::Value],
        problems: &mut Vec<String>,
    ) {
        let (host_name, _, python, script) = key.clone();
        for (_, step) in users.get(key).into_iter().flatten() {
            self.found
                .known_flags
                .insert(step.id.clone(), known.clone());
        }
        // what the kind knows about this program beyond its flags
        let mut seen = BTreeSet::new();
        for (bench, step) in users.get(key).into_iter().flatten() {
            let Some(b) = self.exp.benches.iter().find(|b| b.name == *bench) else {
                return;
            };
            if let Some(why) = crate::kinds::of(b.kind).cli_problem(b, step, known) {
                if seen.insert(why.clone()) {
                    problems.push(format!("host `{host_name}`: {why}"));
                }
            }
        }
        let optional: BTreeSet<&String> = users
            .get(key)
            .into_iter()
            .flatten()
            .flat_map(|(_, s)| s.extra().optional_flags.iter())
            .collect();
        let missing: Vec<&String> = planned
            .iter()
            .filter(|f| !known.contains(*f) && !optional.contains(f))
            .collect();
        if missing.is_empty() {
            return;
        }
        let head = provenance
            .iter()
            .find(|p| p["host"] == host_name.as_str())
            .and_then(|p| p["git_head"].as_str())
            .unwrap_or("unknown")
            .to_string();
        // what to change: a flag with a known program default is left out at that value
        let bench = users
            .get(key)
            .and_then(|u| u.first())
            .map(|(b, _)| *b)
            .unwrap_or_default();
        let setting = |f: &str| setting_of(self.exp, bench, f);
        let fixes: Vec<String> = missing
            .iter()
            .map(|f| match defaults.get(*f) {
                Some(d) => format!(
                    "set `{}` to `{d}` (this checkout's own default; the flag is then left out)",
                    setting(f)
                ),
                None => format!("drop `{}`", setting(f)),
            })
            .collect();
        problems.push(format!(
            "`{script}` on host `{host_name}` (commit {head}) does not take {}: {}, or use a checkout whose `{python} {script} --help` lists them",
            crate::util::markup::ticked(missing.iter()),
            fixes.join("; ")
        ));
    }
}

/// Variables of a step's own env that its `--help` probe gets too (beside the host's `env`).
const PROBE_ENV: &[&str] = &["PYTHONSAFEPATH", "PYTHONPATH", "LD_LIBRARY_PATH", "PATH"];

/// A program as preflight asks it: (host, cwd, python, script).
type ProbeKey = (String, String, String, String);
type ProbeUsers<'p> = BTreeMap<ProbeKey, Vec<(&'p str, &'p crate::plan::Step)>>;

impl<'a> Preflight<'a> {
    /// A step's optional flags that the program's `--help` does not list (or that could not be
    /// asked) are left out when it runs, and the terminal and journal say so.
    fn leave_out_optional(
        &mut self,
        users: &ProbeUsers<'_>,
        key: &(String, String, String, String),
        known: &std::collections::BTreeSet<String>,
    ) {
        let mut said = std::collections::BTreeSet::new();
        for (_, s) in users.get(key).into_iter().flatten() {
            let out: Vec<String> = s
                .extra()
                .optional_flags
                .iter()
                .filter(|f| !known.contains(*f))
                .cloned()
                .collect();
            if out.is_empty() {
                continue;
            }
            let why = if known.is_empty() {
                "its `--help` could not be read"
            } else {
                "its `--help` does not list them"
            };
            let line = format!(
                "preflight: `{}` on `{}`: {} left out ({why}); the program runs with its own default",
                key.3,
                key.0,
                out.join(", ")
            );
            if said.insert(line.clone()) {
                self.progress.line(&line);
            }
            self.emit(&RunEvent::FlagsLeftOut(event::FlagsLeftOut {
                step: s.id.clone(),
                host: s.host.clone(),
                flags: out.clone(),
                why: why.to_string(),
            }));
            self.found.left_out.insert(s.id.clone(), out);
        }
    }
}

/// How many violations of one file are listed (the rest are counted).
const SCHEMA_ERRORS_SHOWN: usize = 8;

/// A file one host's steps write that carries a schema check: (step ids, file path, content,
/// check).
type SchemaFile<'p> = (
    Vec<&'p str>,
    &'p str,
    &'p str,
    &'p crate::kind_api::step::SchemaCheck,
);

/// The files one host's steps write that carry a schema check, each once.
type SchemaFiles<'p> = Vec<SchemaFile<'p>>;

/// The schema a host's checkout has, and what the files are checked against it need to say.
struct SchemaOn<'s> {
    host_name: &'s str,
    commit: &'s str,
    schema_file: &'s str,
    validator: &'s crate::util::json_schema::Validator,
}

/// The plan's files to check against the checkout's schema, by host: one entry per distinct
/// (path, content), with every step that writes it.
fn schema_files_by_host(plan: &Plan) -> BTreeMap<&str, SchemaFiles<'_>> {
    let mut by_host: BTreeMap<&str, SchemaFiles> = BTreeMap::new();
    for s in plan.points.iter().flat_map(|p| p.steps.iter()) {
        let (Some(check), Some(file)) = (&s.schema, &s.file) else {
            continue;
        };
        let v = by_host.entry(s.host.as_str()).or_default();
        match v
            .iter_mut()
            .find(|x| x.2 == file.content.as_str() && x.1 == file.path.as_str())
        {
            Some(x) => x.0.push(s.id.as_str()),
            None => v.push((
                vec![s.id.as_str()],
                file.path.as_str(),
                file.content.as_str(),
                check,
            )),
        }
    }
    by_host
}

/// Another layout of the file that the checkout's schema takes (its lenient enum values
/// aside): (name, content).
fn fitting_layout<'c>(
    validator: &crate::util::json_schema::Validator,
    check: &'c crate::kind_api::step::SchemaCheck,
) -> Option<&'c (String, String)> {
    let strict_errors = |doc: &serde_json::Value| {
        validator
            .errors(doc)
            .iter()
            .filter(|e| {
                !(e.kind == crate::util::json_schema::Kind::Enum && check.lenient.contains(&e.path))
            })
            .count()
    };
    check.alternatives.iter().find(|(_, alt)| {
        serde_json::from_str::<serde_json::Value>(alt).is_ok_and(|d| strict_errors(&d) == 0)
    })
}

impl<'a> Preflight<'a> {
    /// Every file expr writes that the checkout describes with its own JSON Schema is validated
    /// against it on each host before anything starts; a violation names the key, the schema's
    /// complaint and the line of the experiment that produced the key. No schema file: nothing
    /// to check. A schema that cannot be read or compiled is reported and not used.
    fn check_config_schemas(
        &mut self,
        hosts: &[&'a Host],
        provenance: &[serde_json::Value],
    ) -> Result<(), String> {
        let by_host = schema_files_by_host(self.plan);
        let mut problems = Vec::new();
        for (host_name, files) in by_host {
            let Some(h) = hosts.iter().find(|h| h.name == host_name) else {
                continue;
            };
            let Some(first) = files.first() else { continue };
            let Some((schema_file, validator)) = self.read_schema(h, host_name, first.3)? else {
                continue;
            };
            let commit = provenance
                .iter()
                .find(|p| p["host"] == host_name)
                .and_then(|p| p["git_head"].as_str())
                .unwrap_or("unknown");
            let on = SchemaOn {
                host_name,
                commit,
                schema_file: &schema_file,
                validator: &validator,
            };
            let mut seen = BTreeSet::new();
            for file in &files {
                if let Some(p) = self.check_against_schema(&on, file, &mut seen) {
                    problems.push(p);
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }

    /// The config schema in `h`'s checkout (the first of the check's candidates that exists)
    /// and its validator; None (after a warning where it is unusable) when there is none to
    /// check against. Err only when interrupted.
    fn read_schema(
        &mut self,
        h: &Host,
        host_name: &str,
        check: &crate::kind_api::step::SchemaCheck,
    ) -> Result<Option<(String, crate::util::json_schema::Validator)>, String> {
        let candidates: Vec<String> = check
            .candidates
            .iter()
            .map(|c| crate::util::shell::quote(c))
            .collect();
        let script = format!(
            "cd {} || exit 1; for f in {}; do if [ -f \"$f\" ]; then echo \"EXPR_SCHEMA $f\"; head -c 8000000 -- \"$f\"; exit 0; fi; done; echo EXPR_NOSCHEMA",
            crate::util::shell::quote(&h.repo),
            candidates.join(" ")
        );
        self.progress
            .status(&format!("preflight: config schema on {host_name}"));
        let out = match host_exec(self.ssh, h, &script, Duration::from_secs(60)) {
            Ok((0, out)) => out,
            Ok((code, out)) => {
                self.progress.line(&format!(
                    "warning: the config schema on `{host_name}` could not be read (exit {code}: {}); configs are not checked against it",
                    out.lines().last().unwrap_or("").trim()
                ));
                return Ok(None);
            }
            Err(_) if crate::exec::signals::count() > 0 => return Err("interrupted".into()),
            Err(e) => {
                self.progress.line(&format!(
                    "warning: the config schema on `{host_name}` could not be read ({e}); configs are not checked against it"
                ));
                return Ok(None);
            }
        };
        let Some((head, body)) = out.split_once('\n') else {
            return Ok(None);
        };
        let Some(schema_file) = head.strip_prefix("EXPR_SCHEMA ") else {
            return Ok(None); // the checkout has no schema: nothing to check
        };
        let validator = serde_json::from_str::<serde_json::Value>(body)
            .map_err(|e| e.to_string())
            .and_then(crate::util::json_schema::Validator::new);
        match validator {
            Ok(v) => Ok(Some((schema_file.to_string(), v))),
            Err(e) => {
                self.progress.line(&format!(
                    "warning: `{schema_file}` on `{host_name}` is not a usable JSON Schema ({e}); configs are not checked against it"
                ));
                Ok(None)
            }
        }
    }

    /// Check one file against the host's schema: nothing when it passes, or when another layout
    /// of it does (that layout is then recorded and used); else the problem to report, once
    /// (`seen` holds what was said).
    fn check_against_schema(
        &mut self,
        on: &SchemaOn,
        file: &SchemaFile,
        seen: &mut BTreeSet<String>,
    ) -> Option<String> {
        let (ids, path, content, check) = file;
        let SchemaOn {
            host_name,
            commit,
            schema_file,
            ..
        } = on;
        let Ok(doc) = serde_json::from_str::<serde_json::Value>(content) else {
            return None;
        };
        let (mut errors, total) = self.schema_errors(on, &doc, check, seen);
        if total == 0 {
            return None;
        }
        // another layout of the file that the checkout's schema takes
        if let Some((name, _)) = fitting_layout(on.validator, check) {
            let line = format!(
                "preflight: `{schema_file}` on `{host_name}` (commit {commit}) takes the {name} layout of {path}; expr writes that one"
            );
            if seen.insert(line.clone()) {
                self.progress.line(&line);
                self.emit(&RunEvent::ConfigLayout(event::ConfigLayout {
                    host: host_name.to_string(),
                    path: path.to_string(),
                    layout: name.to_string(),
                    schema: schema_file.to_string(),
                }));
            }
            self.found
                .layouts
                .insert((host_name.to_string(), path.to_string()), name.clone());
            return None;
        }
        if total > errors.len() {
            errors.push(format!("  … and {} more", total - errors.len()));
        }
        let steps = if ids.len() > 3 {
            format!("{}, … ({} steps)", ids[..3].join(", "), ids.len())
        } else {
            ids.join(", ")
        };
        if let Some(h) = &check.hint {
            errors.push(format!("  {h}"));
        }
        let p = format!(
            "host `{host_name}` (commit {commit}): {path} (step {steps}) fails the checkout's `{schema_file}` with {total} error(s):\n{}",
            errors.join("\n")
        );
        seen.insert(p.clone()).then_some(p)
    }

    /// The schema's violations in `doc`: the first SCHEMA_ERRORS_SHOWN described (key, complaint,
    /// the experiment's line that wrote it), and how many there are. A lenient key's enum
    /// violation is a warning (said once), not counted.
    fn schema_errors(
        &self,
        on: &SchemaOn,
        doc: &serde_json::Value,
        check: &crate::kind_api::step::SchemaCheck,
        seen: &mut BTreeSet<String>,
    ) -> (Vec<String>, usize) {
        let SchemaOn {
            host_name,
            schema_file,
            ..
        } = on;
        let mut errors = Vec::new();
        let mut total = 0usize;
        for e in on.validator.errors(doc) {
            let mut at = e.path.clone();
            let mut help = String::new();
            match &e.kind {
                crate::util::json_schema::Kind::Required(key) => {
                    at = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                    help = format!(
                        "; add it in the bench's `config {{ … }}` block (`{}`)",
                        at.trim_start_matches('/').replace('/', " { ")
                            + " …"
                            + &" }".repeat(at.matches('/').count().saturating_sub(1))
                    );
                }
                crate::util::json_schema::Kind::Enum if check.lenient.contains(&at) => {
                    let w = format!(
                        "warning: `{schema_file}` on `{host_name}` does not list the value at `{at}` ({e}); the runtime takes it, so the run goes on"
                    );
                    if seen.insert(w.clone()) {
                        self.progress.line(&w);
                    }
                    continue;
                }
                _ => {}
            }
            total += 1;
            if errors.len() < SCHEMA_ERRORS_SHOWN {
                let from = check
                    .origin_of(&at)
                    .map(str::to_string)
                    .unwrap_or_else(|| "expr's generated file (no setting writes it)".into());
                errors.push(format!("  at `{at}`: {e} — from {from}{help}"));
            }
        }
        (errors, total)
    }
}

/// The top directory of the run's output inside `h`'s checkout (`results/`), when the output is
/// there: what expr writes is not the checkout's dirt.
pub(crate) fn results_in_repo(h: &Host, output: &str) -> Option<String> {
    use std::path::{Component, Path, PathBuf};
    let rel: PathBuf = if h.is_local() {
        let abs = |p: &str| std::path::absolute(p).ok();
        let (out, repo) = (abs(output)?, abs(&h.repo)?);
        // lexically: `a/./b` and `a/b/..` name what they say
        let norm = |p: PathBuf| -> PathBuf {
            let mut n = PathBuf::new();
            for c in p.components() {
                match c {
                    Component::CurDir => {}
                    Component::ParentDir => {
                        n.pop();
                    }
                    c => n.push(c),
                }
            }
            n
        };
        norm(out).strip_prefix(norm(repo)).ok()?.to_path_buf()
    } else if Path::new(output).is_relative() {
        // a remote host writes a relative output inside its repo (its working directory)
        PathBuf::from(output)
    } else {
        PathBuf::from(output)
            .strip_prefix(&h.repo)
            .ok()?
            .to_path_buf()
    };
    match rel.components().next()? {
        Component::Normal(top) => Some(format!("{}/", top.to_string_lossy())),
        _ => None,
    }
}

/// One host's preflight: reachable, repo and runner files present, rsync where needed; its code
/// fingerprint and provenance. Untracked files under `results` (the run's output directory's top
/// directory inside the checkout) are not counted as dirty.
fn check_host(
    ssh: &Ssh,
    h: &Host,
    files: &BTreeMap<String, Vec<String>>,
    rsync_from: &std::collections::BTreeSet<&str>,
    tools: &BTreeMap<String, Vec<(&'static str, String)>>,
    results: Option<&str>,
) -> Result<(String, serde_json::Value), String> {
    if !h.is_local() {
        ssh.open(h).map_err(|e| {
            let port = ssh.effective_port(h).map_or("?".into(), |p| p.to_string());
            format!(
                "host `{}` ({}, port {port}) is unreachable: {e}",
                h.name, h.ssh
            )
        })?;
    }
    let fl: Vec<String> = files.get(&h.name).cloned().unwrap_or_default();
    let quoted: Vec<String> = fl.iter().map(|f| crate::util::shell::quote(f)).collect();
    let files = quoted.join(" ");
    // Few programs, and the two git calls at once: each process start costs ~1 ms on a VM.
    // POSIX sh (a remote login shell may be dash). The hostname is the kernel's, as `hostname`
    // prints it. The head and the dirty count come from one `git status` (porcelain v2: a
    // `# branch.oid X` header first, more `#` headers, then one line per changed or untracked
    // file, as many as v1 prints; `--no-ahead-behind`: no walk to the upstream); a directory
    // where that gives no header (no repository, or a git older than 2.17) is asked the old
    // way.
    // Nothing is written into the checkout's .git: `git status` refreshes no index under
    // GIT_OPTIONAL_LOCKS=0, and `git diff` (which refreshes it all the same) reads a copy of
    // it (GIT_INDEX_FILE), removed at the end — a write under index.lock that a user's own git
    // command could meet.
    let mut script = format!(
        "cd {} 2>/dev/null || {{ echo EXPR_NOREPO; exit 0; }}
export GIT_OPTIONAL_LOCKS=0
EXPR_IDX=; i=$(git rev-parse --git-path index 2>/dev/null) && [ -f \"$i\" ] && EXPR_IDX=$(mktemp 2>/dev/null) && cp \"$i\" \"$EXPR_IDX\" && export GIT_INDEX_FILE=\"$EXPR_IDX\"
hn=; {{ read -r hn < /proc/sys/kernel/hostname; }} 2>/dev/null || hn=$(hostname); echo \"EXPR_HOSTNAME $hn\"
( git rev-parse -q --verify HEAD >/dev/null 2>&1 || {{ echo \"EXPR_TREE none\"; exit 0; }}; set -- $(git diff HEAD 2>/dev/null | cksum); echo \"EXPR_TREE $1\" ) &
git status --porcelain=v2 --branch --no-ahead-behind 2>/dev/null | {{ h=none; n=0; seen=0
if IFS= read -r l; then case $l in '# branch.oid '*) seen=1; h=${{l#'# branch.oid '}};; esac; n=$(awk -v p={mine} 'substr($0,1,1) != \"#\" && (p == \"\" || index($0, p) != 1) {{ n++ }} END {{ print n+0 }}'); fi
[ \"$h\" = '(initial)' ] && h=none
if [ $seen = 0 ] && git rev-parse --git-dir >/dev/null 2>&1; then h=$(git rev-parse -q --verify HEAD || echo none); n=$(git status --porcelain 2>/dev/null | wc -l); fi
echo \"EXPR_HEAD $h\"; echo \"EXPR_DIRTY $n\"; }}
wait
",
        crate::util::shell::quote(&h.repo),
        mine = crate::util::shell::quote(&results.map(|r| format!("? {r}")).unwrap_or_default())
    );
    if rsync_from.contains(h.name.as_str()) && !h.is_local() {
        script.push_str("command -v rsync >/dev/null 2>&1 || echo EXPR_NORSYNC; ");
    }
    let mine = tools.get(&h.name).map(Vec::as_slice).unwrap_or_default();
    for (t, _) in mine {
        script.push_str(&format!(
            "command -v {t} >/dev/null 2>&1 || echo 'EXPR_NOTOOL {t}'; "
        ));
    }
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
    script.push_str("\n[ -z \"$EXPR_IDX\" ] || rm -f \"$EXPR_IDX\"\n");
    let (code, out) = host_exec(ssh, h, &script, Duration::from_secs(60))
        .map_err(|e| format!("host `{}`: {e}", h.name))?;
    if code != 0 {
        return Err(format!("host `{}` ({}): {}", h.name, h.ssh, out.trim()));
    }
    if out.contains("EXPR_NOREPO") {
        return Err(format!("host `{}` has no repo at {}", h.name, h.repo));
    }
    if out.contains("EXPR_NORSYNC") {
        return Err(format!(
                "host `{}` ({}) has no rsync, which brings its artifacts back (install it there: apt-get install rsync)",
                h.name, h.ssh
            ));
    }
    if let Some((t, why)) = out
        .lines()
        .filter_map(|l| l.strip_prefix("EXPR_NOTOOL "))
        .find_map(|t| mine.iter().find(|(x, _)| *x == t.trim()))
    {
        let what = if *t == "ncu" {
            "Nsight Compute"
        } else {
            "Nsight Systems"
        };
        return Err(format!(
            "host `{}` has no `{t}` on its PATH, and the plan runs steps under it ({why}): install {what} there, or leave that `profile` out",
            h.name
        ));
    }
    let missing: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("EXPR_MISSING "))
        .collect();
    if !missing.is_empty() {
        // `repo "."` is where expr was started: said as the directory it is
        let repo = if h.is_local() {
            std::fs::canonicalize(&h.repo)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| h.repo.clone())
        } else {
            h.repo.clone()
        };
        return Err(format!(
            "host `{}` lacks runner files in {} (its `repo=`): {}; set `repo=` on host `{}` to the checkout that holds them",
            h.name,
            if repo == h.repo { repo } else { format!("{} = {repo}", h.repo) },
            missing.join(", "),
            h.name
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
    let prov = json!({
        "host": h.name, "hostname": field("EXPR_HOSTNAME "), "repo": h.repo,
        "git_head": field("EXPR_HEAD "), "dirty_files": field("EXPR_DIRTY ").parse::<i64>().unwrap_or(0),
        "fingerprint": fp, "runner_files": fl, "tree_diff": field("EXPR_TREE "),
    });
    let mut prov = prov;
    if !h.is_local() {
        // the port ssh used (the experiment's `ssh-port`, else ~/.ssh/config), and the session
        prov["ssh_port"] = json!(ssh.effective_port(h));
        prov["agent"] = json!(ssh.agent(h).map(|a| format!("python {}", a.python)));
    }
    Ok((fp, prov))
}

/// Run a short shell script on a host: (exit code, output).
pub(super) fn host_exec(
    ssh: &Ssh,
    h: &Host,
    script: &str,
    timeout: Duration,
) -> Result<(i32, String), String> {
    if h.is_local() {
        let c = duct::cmd("bash", ["-c", script]);
        // a Ctrl-C (or SIGINT/SIGTERM to expr) stops the script and everything it started
        crate::exec::backend::host::run_captured_until(c, None, timeout, &|| {
            crate::exec::signals::count() > 0
        })
    } else {
        ssh.run_until(h, script, None, timeout, &|| {
            crate::exec::signals::count() > 0
        })
    }
}

/// What to change when a program cannot start on a host: its interpreter or runner is not
/// installed (exit 127), a module it imports is missing, or its script is not in the checkout.
fn start_hint(code: i32, out: &str, host: &str, python: &str, setting: &str, repo: &str) -> String {
    let first = python.split_whitespace().next().unwrap_or(python);
    if let Some(m) = out.lines().find_map(|l| {
        let (_, rest) = l.split_once("No module named ")?;
        let rest = rest.trim();
        // `'dataset_rt'`, possibly inside more text: what the quotes hold
        Some(match rest.strip_prefix(['\'', '"']) {
            Some(q) => q.split(['\'', '"']).next().unwrap_or(q).to_string(),
            None => rest.split_whitespace().next().unwrap_or(rest).to_string(),
        })
    }) {
        let top = m.split('.').next().unwrap_or(&m);
        return format!(
            " — the Python that `{setting}` runs (`{python}`) on `{host}` has no module `{top}`: install it there (e.g. `pip install {top}`), or set `{setting}` to a command whose Python has it"
        );
    }
    if code == 127
        || out.contains("command not found")
        || (out.contains("No such file or directory") && out.contains(first))
    {
        return format!(
            " — `{first}` is not installed on `{host}` (or not on its PATH): install it there, or set `{setting}` to a command that is (now `{python}`)"
        );
    }
    if out.contains("can't open file") {
        return format!(
            " — the script is not in the checkout: set `repo=` on host `{host}` (now `{repo}`) to the checkout that holds it"
        );
    }
    String::new()
}

/// The experiment as data for the journal header, when it reads back as the resolved KDL says
/// (the same KDL written from it): a value the data cannot hold (a non-finite number, which JSON
/// writes as null) leaves it out, and the report reads the KDL.
fn stored_model(exp: &crate::model::Experiment, resolved: &str) -> Option<serde_json::Value> {
    let v = serde_json::to_value(exp).ok()?;
    let mut back: crate::model::Experiment = serde_json::from_value(v.clone()).ok()?;
    crate::kinds::restore(&mut back).ok()?;
    (crate::parse::resolved::to_kdl(&back) == resolved)
        .then(|| json!({"version": crate::results::event::MODEL_VERSION, "experiment": v}))
}
