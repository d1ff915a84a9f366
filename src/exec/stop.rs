//! `expr stop DIR`: after expr itself was killed, stop every process its journal recorded that
//! is still alive, by recorded process group — never by matching names.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::exec::backend::host::{self, Ssh};
use crate::model::Host;
use crate::results::event::RunEvent;
use crate::results::journal;

/// The hosts a journal's header recorded.
pub fn hosts_of(events: &[RunEvent]) -> Vec<Host> {
    let src = crate::model::source::Source::new("journal.jsonl", "");
    let loc = crate::model::Loc {
        src,
        span: (0, 0).into(),
    };
    let header = events.iter().rev().find_map(RunEvent::header);
    let specs = header
        .and_then(|h| h.host_specs.as_ref())
        .and_then(|s| s.as_array())
        .cloned()
        .unwrap_or_default();
    specs
        .iter()
        // an ssh target the journal was edited to begin with `-` would be an option to ssh
        // (`check` refuses one): not a host to reach
        .filter(|h| !h["ssh"].as_str().is_some_and(|s| s.starts_with('-')))
        .map(|h| Host {
            name: h["name"].as_str().unwrap_or("").into(),
            ssh: h["ssh"].as_str().unwrap_or("local").into(),
            ssh_port: h["ssh_port"].as_i64().unwrap_or(22),
            ip: h["ip"].as_str().unwrap_or("").into(),
            repo: h["repo"].as_str().unwrap_or(".").into(),
            gpus: None,
            env: Vec::new(),
            loc: loc.clone(),
            // journals from before `ssh_port_written`: the port was always passed
            ssh_port_loc: h["ssh_port_written"]
                .as_bool()
                .unwrap_or(true)
                .then(|| loc.clone()),
            place: None,
            written: Default::default(),
        })
        .collect()
}

/// What the journal says of one started process.
#[derive(Debug, Default, Clone)]
struct Record {
    pgid: Option<i64>,
    start: Option<u64>,
    boot: Option<String>,
    remote_pgid: Option<i64>,
    remote_start: Option<u64>,
    /// Scratch paths of a server (a value store under /dev/shm), removed once it is gone.
    scratch: Vec<String>,
}

/// The processes a journal recorded as started and not yet stopped or finished, by (host, step).
fn unfinished(events: &[RunEvent]) -> BTreeMap<(String, String), Record> {
    let mut live: BTreeMap<(String, String), Record> = BTreeMap::new();
    for e in events {
        match e {
            RunEvent::Process(p) => {
                live.insert(
                    (p.host.clone(), p.step.clone()),
                    Record {
                        pgid: p.pgid,
                        start: p.start,
                        boot: p.boot.clone(),
                        remote_pgid: p.remote_pgid,
                        remote_start: p.remote_start,
                        scratch: p
                            .scratch
                            .iter()
                            .filter(|p| crate::kind_api::step::is_scratch(p))
                            .cloned()
                            .collect(),
                    },
                );
            }
            RunEvent::Stopped(s) => {
                live.remove(&(s.host.clone(), s.step.clone()));
            }
            // a step that ended (not a server that became ready) left nothing behind
            RunEvent::Step(s)
                if !matches!(s.status.as_deref(), Some("ready") | Some("started")) =>
            {
                live.remove(&(s.host.clone(), s.step.clone()));
            }
            _ => {}
        }
    }
    live
}

/// Stop what is left; returns the lines to print and whether everything is gone. Only groups
/// that are still the ones expr started (same leader start time, same boot) are signalled.
pub fn stop(dir: &Path) -> Result<(Vec<String>, bool), String> {
    stop_keeping(dir, &[])
}

/// [`stop`], leaving alone the Slurm jobs `keep` (a resumed run's own, made before it stops
/// what the earlier run left: they carry the same comment).
pub fn stop_keeping(dir: &Path, keep: &[String]) -> Result<(Vec<String>, bool), String> {
    let path = dir.join("journal.jsonl");
    // (helper 78: a missing directory "has no journal.jsonl", where report and ls say why)
    if let Some(why) = crate::util::not_a_dir(dir) {
        return Err(format!("{}: {why}", dir.display()));
    }
    if !path.exists() {
        if dir.join(BISECTION).is_file() {
            return stop_bisection(dir);
        }
        // a directory commands.sh wrote (it keeps no journal): the allocation it made carries
        // the directory as comment
        let (out, gone) = cancel_commented(dir);
        if !out.is_empty() {
            return Ok((out, gone));
        }
        return Err(format!("{} has no journal.jsonl", dir.display()));
    }
    let events = journal_and_fragments(dir, &path);
    let hosts = hosts_of(&events);
    let live = unfinished(&events);
    let mut ssh =
        Ssh::new(std::env::temp_dir().join(format!("expr-cm-stop-{}", std::process::id())));
    // the hosts as the run reached them: its ssh configuration, unless one is given again
    if ssh.config.is_none() {
        // only a file of this user's that is still there: one since deleted would make ssh
        // refuse every call, and a directory from someone else must not choose the
        // configuration (a `ProxyCommand` runs here)
        ssh.config = events
            .iter()
            .rev()
            .find_map(RunEvent::header)
            .and_then(|h| h.ssh_config.clone())
            .filter(|c| {
                use std::os::unix::fs::MetadataExt;
                std::fs::metadata(c)
                    // SAFETY: geteuid has no failure and touches no memory
                    .is_ok_and(|m| m.is_file() && m.uid() == unsafe { libc::geteuid() })
            });
    }
    // the connections' sockets, only where a host is reached over ssh (nothing is written
    // outside the result directory for a run on this machine)
    let remote = hosts.iter().any(|h| !h.is_local());
    if remote {
        let _ = std::fs::create_dir_all(&ssh.control_dir);
    }
    let canon = std::fs::canonicalize(dir).ok();
    let mut s = Stopper {
        ssh,
        out: Vec::new(),
        all_gone: true,
        live_original: live_original(&events, canon.as_deref()),
        canon,
    };
    for ((h, step), r) in live {
        let local_host;
        let host = match hosts.iter().find(|x| x.name == h) {
            Some(x) => x,
            None => {
                // no header yet: only local processes can have been started
                local_host = placeholder(&h);
                &local_host
            }
        };
        s.stop_recorded(host, &h, &step, &r);
    }
    s.sweep_marks(&events, &hosts);
    for h in &hosts {
        if !h.is_local() {
            s.ssh.close(h);
        }
    }
    if remote {
        let _ = std::fs::remove_dir_all(&s.ssh.control_dir);
    }
    for job in slurm_jobs(&events, dir)
        .into_iter()
        .filter(|j| !keep.contains(j))
    {
        s.cancel_slurm_job(&job);
    }
    // the killed run's shared connections (its processes are stopped by now)
    crate::exec::backend::host::close_stale_masters();
    Ok((s.out, s.all_gone))
}

/// What marks an `expr bisect` directory (its rounds are run directories under `runs/`).
const BISECTION: &str = "bisect.jsonl";

/// `expr stop` of a bisection's directory: each round's run stopped, then the Slurm jobs the
/// bisection held for its rounds (its comment) cancelled.
fn stop_bisection(dir: &Path) -> Result<(Vec<String>, bool), String> {
    let mut rounds: Vec<std::path::PathBuf> = std::fs::read_dir(dir.join("runs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    rounds.retain(|r| r.join("journal.jsonl").is_file());
    rounds.sort();
    let (mut out, mut all_gone) = (Vec::new(), true);
    for r in &rounds {
        let (lines, gone) = stop(r)?;
        out.extend(lines);
        all_gone &= gone;
    }
    let (more, gone) = cancel_commented(dir);
    out.extend(more);
    Ok((out, all_gone && gone))
}

/// Cancel the Slurm jobs whose name is expr's and whose comment names `dir`: the lines to say,
/// and whether each was cancelled.
fn cancel_commented(dir: &Path) -> (Vec<String>, bool) {
    let (mut out, mut all_gone) = (Vec::new(), true);
    let mine = crate::exec::slurm::comment(&dir.display().to_string());
    for (id, name) in crate::exec::slurm::jobs_with_comment(&mine) {
        match crate::exec::slurm::cancel(&id) {
            Ok(()) => out.push(format!(
                "cancelled Slurm job {id} ({})",
                crate::plan::render::comment(&name)
            )),
            Err(e) => {
                all_gone = false;
                out.push(format!("cannot cancel Slurm job {id}: {e}"));
            }
        }
    }
    (out, all_gone)
}

/// The journal's events, then those of the array tasks' fragments that no run merged (the
/// submitting run was killed too), in file-name order.
fn journal_and_fragments(dir: &Path, path: &Path) -> Vec<RunEvent> {
    let mut events = journal::events(path);
    if let Ok(d) = std::fs::read_dir(dir.join(crate::exec::vars::TASKS_DIR)) {
        let mut frags: Vec<_> = d
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        frags.sort();
        for f in frags {
            events.extend(journal::events(&f));
        }
    }
    events
}

/// The state of one `stop`: the ssh connections it uses, the canonical result directory, the
/// lines to print, and whether everything is gone so far.
struct Stopper {
    ssh: Ssh,
    out: Vec<String>,
    all_gone: bool,
    canon: Option<std::path::PathBuf>,
    /// The directory the run wrote, where it is another than this one (a copy) and its run is
    /// alive (it holds the lock): the remote groups are that run's. (A local group says whose
    /// it is by its `EXPR_RESULT_DIR`; a remote one has only the run's mark, which a copy
    /// shares.)
    live_original: Option<std::path::PathBuf>,
}

impl Stopper {
    /// Stop one recorded process `step` on host `h`: its local group, its remote group, then
    /// (once the local group is gone) its scratch.
    fn stop_recorded(&mut self, host: &Host, h: &str, step: &str, r: &Record) {
        if let Some(pg) = r.pgid {
            if !self.stop_local_group(step, pg, r) {
                return;
            }
        }
        if let (false, Some(pg)) = (host.is_local(), r.remote_pgid) {
            if let Some(d) = &self.live_original {
                self.out.push(format!(
                    "`{step}` (process group {pg} on `{h}`) belongs to the run in {}, which is running: left alone",
                    d.display()
                ));
                return;
            }
            self.stop_remote_group(host, h, step, pg, r.remote_start);
        }
        if let Some(pg) = r.pgid {
            if !self.wait_local_gone(step, pg, r) {
                return;
            }
        }
        // its scratch (a value store under /dev/shm) goes with it
        if !r.scratch.is_empty() {
            self.remove_scratch(host, h, step, &r.scratch);
        }
    }

    /// TERM (then KILL after 500 ms) local group `pg` if it is still the one expr started;
    /// false when it belongs to another live run's directory and is left alone.
    fn stop_local_group(&mut self, step: &str, pg: i64, r: &Record) -> bool {
        // started by another run (this journal is a copy of its directory's)
        // another directory's run only while that run lives (its directory holds the
        // lock): a moved or copied directory of a dead run is this one
        let theirs = started_for(pg)
            .filter(|d| Some(d) != self.canon.as_ref() && crate::exec::lock::held(d));
        if let (Some(d), true) = (&theirs, host::group_is(pg, r.start, r.boot.as_deref())) {
            self.out.push(format!(
                "`{step}` (process group {pg}) belongs to the run in {}: left alone",
                d.display()
            ));
            return false;
        }
        if host::group_is(pg, r.start, r.boot.as_deref()) {
            host::signal_group(pg, libc::SIGTERM);
            let end = std::time::Instant::now() + Duration::from_millis(500);
            while host::group_alive(pg) && std::time::Instant::now() < end {
                std::thread::sleep(Duration::from_millis(20));
            }
            if host::group_alive(pg) {
                host::signal_group(pg, libc::SIGKILL);
            }
            self.out.push(format!(
                "stopped `{step}` (process group {pg} on this machine)"
            ));
        } else if host::group_alive(pg) {
            self.out.push(format!(
                "left `{step}` alone: process group {pg} now belongs to another program (its leader started after expr's did)"
            ));
        }
        true
    }

    /// Stop remote group `pg` on `host` unless it is no longer expr's.
    fn stop_remote_group(
        &mut self,
        host: &Host,
        h: &str,
        step: &str,
        pg: i64,
        remote_start: Option<u64>,
    ) {
        match host::remote_group_not_ours(&self.ssh, host, pg, remote_start) {
            Ok(true) => {}
            Ok(false) => {
                match host::stop_remote_group(
                    &self.ssh,
                    host,
                    pg,
                    remote_start,
                    Duration::from_secs(2),
                ) {
                    Ok(true) => self
                        .out
                        .push(format!("stopped `{step}` (process group {pg} on `{h}`)")),
                    Ok(false) => {
                        self.all_gone = false;
                        self.out
                            .push(format!("`{step}` on `{h}` (group {pg}) is still alive"));
                    }
                    Err(e) => {
                        self.all_gone = false;
                        self.out
                            .push(format!("cannot stop `{step}` on `{h}` (group {pg}): {e}"));
                    }
                }
            }
            Err(e) => {
                self.all_gone = false;
                self.out.push(format!(
                    "cannot reach `{h}` to stop `{step}` (group {pg}): {e}"
                ));
            }
        }
    }

    /// Wait up to 3 s for local group `pg` (still expr's) to be gone; false when it is not.
    fn wait_local_gone(&mut self, step: &str, pg: i64, r: &Record) -> bool {
        let end = std::time::Instant::now() + Duration::from_secs(3);
        while host::group_is(pg, r.start, r.boot.as_deref()) && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        if host::group_is(pg, r.start, r.boot.as_deref()) {
            self.all_gone = false;
            self.out
                .push(format!("`{step}` (group {pg}) is still alive"));
            return false;
        }
        true
    }

    /// Remove a stopped server's scratch paths, here or over ssh.
    fn remove_scratch(&mut self, host: &Host, h: &str, step: &str, scratch: &[String]) {
        let q: Vec<String> = scratch
            .iter()
            .map(|p| crate::util::shell::quote(p))
            .collect();
        let done = if host.is_local() {
            scratch
                .iter()
                .all(|p| crate::exec::backend::scratch::remove_local(p).is_ok())
        } else {
            let refs: Vec<&str> = scratch.iter().map(String::as_str).collect();
            matches!(
                self.ssh.run(host, &crate::plan::remote::remote_script(&refs), None, Duration::from_secs(30)),
                Ok((0, out)) if !out.contains("EXPR_REFUSED")
            )
        };
        self.out.push(if done {
            format!("removed the scratch of `{step}`: {}", q.join(" "))
        } else {
            format!(
                "could not remove the scratch of `{step}` on `{h}`: {}",
                q.join(" ")
            )
        });
    }

    /// Stop, on every host (and here), what left its process group (setsid, double fork,
    /// nohup) but still carries the run's mark.
    fn sweep_marks(&mut self, events: &[RunEvent], hosts: &[Host]) {
        // a copy of a running run's directory: what carries its mark is that run's
        if let Some(d) = &self.live_original {
            self.out.push(format!(
                "the run in {} is alive: what it marked is left to it",
                d.display()
            ));
            return;
        }
        let marks: Vec<String> = events
            .iter()
            .filter_map(RunEvent::header)
            .filter_map(|h| h.mark.clone())
            .collect();
        let mut sweep_hosts: Vec<Host> = hosts.to_vec();
        if !sweep_hosts.iter().any(|h| h.runs_here()) {
            sweep_hosts.push(placeholder("local"));
        }
        for m in &marks {
            // the expr that made the mark still runs (this is a copy of its directory, or it was
            // stopped, not killed): what carries the mark is that run's to stop
            let maker = m.split('.').next().and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = maker.filter(|p| *p as u32 != std::process::id()) {
                let cmd = crate::exec::lock::cmdline(pid);
                let prog = cmd.split(' ').next().unwrap_or("");
                if prog.rsplit('/').next().is_some_and(|b| b == "expr") {
                    self.out.push(format!(
                        "the run that started these processes is alive (pid {pid}: `{cmd}`): what it marked is left to it"
                    ));
                    continue;
                }
            }
            for h in &sweep_hosts {
                self.sweep_mark_on(h, m);
            }
        }
    }

    /// Stop what carries mark `m` on host `h`.
    fn sweep_mark_on(&mut self, h: &Host, m: &str) {
        // the run's own steps (`<mark>:<point>;`), then its `--jobs` workers' (`<mark>/<ns>:…`)
        self.sweep_prefix_on(h, &format!("{m}:"));
        self.sweep_prefix_on(h, &format!("{m}/"));
    }

    /// Stop what carries a mark that starts with `prefix` on host `h`.
    fn sweep_prefix_on(&mut self, h: &Host, prefix: &str) {
        match crate::exec::backend::escape::sweep(
            &self.ssh,
            h,
            prefix,
            Duration::from_secs(2),
            self.canon.as_deref(),
            0,
        ) {
            Ok((stopped, left)) => {
                if !stopped.is_empty() {
                    self.out.push(format!(
                        "stopped {} process(es) on `{}` found by the run's mark (out of their steps' groups, or started too shortly before expr died to be recorded): {}",
                        stopped.len(),
                        h.name,
                        crate::exec::backend::escape::describe(&stopped)
                    ));
                }
                if !left.is_empty() {
                    self.all_gone = false;
                    self.out.push(format!(
                        "still alive on `{}` after KILL: {}",
                        h.name,
                        crate::exec::backend::escape::describe(&left)
                    ));
                }
            }
            Err(e) => {
                self.all_gone = false;
                self.out.push(format!(
                    "cannot look for this run's processes on `{}`: {e}",
                    h.name
                ));
            }
        }
    }

    /// Cancel Slurm job `job` if its name and comment say it is this directory's.
    fn cancel_slurm_job(&mut self, job: &str) {
        if let Some((name, comment)) = crate::exec::slurm::job_owner(job) {
            {
                // this run's, or the bisection's that ran it as one of its rounds (the
                // allocation it holds for all of them)
                let ours = name.starts_with("expr-")
                    && comment.strip_prefix("expr:").is_some_and(|p| {
                        let owner = std::fs::canonicalize(p).ok();
                        let bisection = owner.as_ref().is_some_and(|o| {
                            o.join(BISECTION).is_file()
                                && self.canon.as_ref().is_some_and(|c| c.starts_with(o))
                        });
                        self.canon.is_some() && (owner == self.canon || bisection)
                    });
                if !ours {
                    self.out.push(format!(
                        "Slurm job {job} is not this run's (name `{}`, comment `{}`): left alone",
                        crate::plan::render::comment(&name),
                        crate::plan::render::comment(&comment)
                    ));
                    return;
                }
                match crate::exec::slurm::cancel(job) {
                    // a name with a newline stays on its line
                    Ok(()) => self.out.push(format!(
                        "cancelled Slurm job {job} ({})",
                        crate::plan::render::comment(&name)
                    )),
                    Err(e) => {
                        self.all_gone = false;
                        self.out.push(format!("cannot cancel Slurm job {job}: {e}"));
                    }
                }
            }
        }
    }
}

/// The run's Slurm jobs, sorted and deduplicated: the ones its journal names, the arrays it
/// submitted, and any still queued with its comment.
fn slurm_jobs(events: &[RunEvent], dir: &Path) -> Vec<String> {
    let mut jobs: Vec<String> = events
        .iter()
        .filter_map(RunEvent::header)
        .filter_map(|h| h.host_specs.as_ref().and_then(|s| s.as_array()))
        .flatten()
        .filter_map(|h| h["slurm"]["job"].as_str().map(str::to_string))
        .collect();
    // and the arrays it submitted
    jobs.extend(events.iter().filter_map(|e| match e {
        RunEvent::SlurmArray(a) if !a.job.is_empty() => Some(a.job.clone()),
        _ => None,
    }));
    let mine = crate::exec::slurm::comment(&dir.display().to_string());
    for (id, _) in crate::exec::slurm::jobs_with_comment(&mine) {
        jobs.push(id);
    }
    jobs.sort();
    jobs.dedup();
    jobs
}

/// The result directory a local process was started for (its `EXPR_RESULT_DIR`), if it says.
/// The directory the journal's run wrote (its header's `output`, from its `cwd`), where that is
/// another directory than `canon` and a live expr holds its lock.
fn live_original(
    events: &[RunEvent],
    canon: Option<&std::path::Path>,
) -> Option<std::path::PathBuf> {
    let h = events.iter().rev().find_map(RunEvent::header)?;
    let out = std::path::PathBuf::from(h.output.as_deref()?);
    let out = match &h.cwd {
        Some(cwd) if out.is_relative() => std::path::Path::new(cwd).join(out),
        _ => out,
    };
    let orig = std::fs::canonicalize(out).ok()?;
    (Some(orig.as_path()) != canon && crate::exec::lock::held(&orig)).then_some(orig)
}

fn started_for(pid: i64) -> Option<std::path::PathBuf> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let key = format!("{}=", crate::exec::vars::RESULT_DIR_VAR);
    env.split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(key.as_bytes()))
        .map(|v| std::path::PathBuf::from(String::from_utf8_lossy(v).into_owned()))
}

fn placeholder(name: &str) -> Host {
    let src = crate::model::source::Source::new("journal.jsonl", "");
    let loc = crate::model::Loc {
        src,
        span: (0, 0).into(),
    };
    Host::local(name, loc)
}

#[cfg(test)]
mod tests {
    /// A journal edited so that a host's ssh target begins with `-` (an option to ssh, such as
    /// `-oProxyCommand=…`) gives no host to reach; the others are read as written.
    #[test]
    fn a_journal_ssh_target_that_is_an_option_is_no_host() {
        let header = crate::results::event::RunEvent::from_value(serde_json::json!({
            "event": "header",
            "host_specs": [
                {"name": "evil", "ssh": "-oProxyCommand=touch /tmp/x"},
                {"name": "far", "ssh": "far.example"},
            ],
        }));
        let hosts = super::hosts_of(&[header]);
        let names: Vec<(&str, &str)> = hosts
            .iter()
            .map(|h| (h.name.as_str(), h.ssh.as_str()))
            .collect();
        assert_eq!(names, [("far", "far.example")]);
    }
}
