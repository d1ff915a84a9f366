//! Slurm through its own commands: `salloc --no-shell` makes the run's allocation, `squeue` and
//! `scontrol show hostnames` name its nodes, `srun --jobid … --overlap -w NODE` runs each step
//! on its node as a local process group (TERM to srun cancels the step), `scontrol show job`
//! (or `sacct`) says how a job ended, and `scancel` ends it. Jobs are recognised by their name
//! and comment (`expr:<result dir>`), never by user.

pub mod allocator;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::model::{Allocation, Experiment};
use crate::plan::srun::{job_args, salloc_args};

/// What `salloc` granted: the job and its nodes (name, first address).
#[derive(Debug, Clone)]
pub struct Granted {
    pub alloc: String,
    pub job: String,
    pub nodes: Vec<(String, String)>,
}

/// The comment that marks a job as this result directory's.
pub fn comment(result_dir: &str) -> String {
    // one spelling per directory (`out`, `./out`, `out/`, the absolute path, a symlink)
    let abs = std::fs::canonicalize(result_dir).unwrap_or_else(|_| {
        let joined = std::env::current_dir()
            .map(|d| d.join(result_dir))
            .unwrap_or_else(|_| result_dir.into());
        joined.components().collect()
    });
    format!("expr:{}", abs.display())
}

/// A Slurm (or other helper) command's standard output, or what went wrong: run through
/// `duct`, stdin closed, both outputs captured, a failed exit said with its stderr.
fn out(c: duct::Expression, what: &str) -> Result<String, String> {
    let o = c
        .stdin_null()
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .map_err(|e| format!("{what}: {e} (is Slurm installed here?)"))?;
    if !o.status.success() {
        return Err(format!(
            "{what} exited {}: {}",
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// A node's first address, as `hostname -I` says it there (through a step of the job).
fn node_ip(job: &str, node: &str) -> Result<String, String> {
    let o = out(
        duct::cmd(
            "srun",
            [
                "--jobid",
                job,
                "--overlap",
                "-N1",
                "-n1",
                "-w",
                node,
                "hostname",
                "-I",
            ],
        ),
        "srun hostname -I",
    )?;
    Ok(first_address(&o))
}

/// The first address of `hostname -I`'s output (empty when it printed none).
fn first_address(o: &str) -> String {
    o.split_whitespace().next().unwrap_or("").to_string()
}

/// Make an allocation and name its nodes. `salloc` waits until it is granted; what it says
/// while it waits (pending, queued) is shown. SIGINT/SIGTERM meanwhile (`interrupted`) stops
/// salloc and cancels whatever job it had queued with this run's comment.
pub fn allocate(
    a: &Allocation,
    name: &str,
    comment: &str,
    interrupted: &dyn Fn() -> bool,
) -> Result<Granted, String> {
    use std::io::BufRead;
    let mut child = Command::new("salloc")
        .args(salloc_args(a, name, comment))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("salloc: {e} (is Slurm installed here?)"))?;
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        if let Some(e) = stderr {
            for line in std::io::BufReader::new(e).lines().map_while(Result::ok) {
                if line.contains("Pending") || line.contains("queued") || line.contains("waiting") {
                    eprintln!("{line}");
                }
                all.push_str(&line);
                all.push('\n');
            }
        }
        all
    });
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if interrupted() => {
                // SAFETY: the child is ours and not yet waited for
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
                let _ = child.wait();
                for (id, _) in jobs_with_comment(comment) {
                    let _ = cancel(&id);
                }
                return Err(format!(
                    "interrupted while waiting for the allocation `{}`",
                    a.name
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("salloc: {e}")),
        }
    }
    let err = reader.join().unwrap_or_default();
    let said = err
        .lines()
        .find_map(|l| l.split("Granted job allocation ").nth(1))
        .map(|s| s.trim().to_string())
        .filter(|s| s.chars().all(|c| c.is_ascii_digit()) && !s.is_empty());
    let job = match said {
        Some(j) => j,
        // salloc granted it without a word (`--quiet` among the allocation's arguments): the
        // job is found by its name and comment; anything else of them is given back
        None => {
            let mut found: Vec<String> = jobs_with_comment(comment)
                .into_iter()
                .filter(|(_, n)| n == name)
                .map(|(id, _)| id)
                .collect();
            if found.len() != 1 {
                for id in found.drain(..) {
                    let _ = cancel(&id);
                }
                return Err(format!(
                    "salloc for `{}` gave no allocation: {}",
                    a.name,
                    err.trim()
                ));
            }
            found.remove(0)
        }
    };
    let list = out(
        duct::cmd("squeue", ["-h", "-j", &job, "-o", "%N"]),
        "squeue",
    )?;
    let names = out(
        duct::cmd("scontrol", ["show", "hostnames", list.trim()]),
        "scontrol show hostnames",
    )?;
    let mut nodes = Vec::new();
    for n in names.lines().map(str::trim).filter(|n| !n.is_empty()) {
        let ip = node_ip(&job, n)?;
        nodes.push((n.to_string(), ip));
    }
    if nodes.len() < a.nodes as usize {
        let _ = cancel(&job);
        return Err(format!(
            "allocation `{}` (job {job}) has {} node(s), {} were asked for",
            a.name,
            nodes.len(),
            a.nodes
        ));
    }
    Ok(Granted {
        alloc: a.name.clone(),
        job,
        nodes,
    })
}

/// Put what was granted into the experiment: each node's host gets its job, name and address.
pub fn place(exp: &mut Experiment, granted: &[Granted]) {
    for h in &mut exp.hosts {
        let Some(p) = &mut h.place else { continue };
        let Some(g) = granted.iter().find(|g| g.alloc == p.alloc) else {
            continue;
        };
        if let Some((name, ip)) = g.nodes.get(p.node as usize) {
            p.job = Some(g.job.clone());
            p.nodename = Some(name.clone());
            h.ip = ip.clone();
        }
        if let Some(a) = exp.allocations.iter().find(|a| a.name == p.alloc) {
            p.launch_args = a.srun_args.clone();
        }
    }
}

/// What Slurm wrote into a step's log when it killed the step although srun exited 0 (a node
/// failure: `srun: error: Node failure on NODE`, `*** STEP J.S ON NODE CANCELLED … DUE TO NODE
/// FAILURE ***`): the line, with its number. Only the log's last 64 KiB are read.
pub fn killed_by_slurm(log: &std::path::Path, job: &str) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(log).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(64 << 10);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    // line numbers count from the file's start when all of it was read
    let first = if from == 0 { 1 } else { 0 };
    let step_mark = format!("*** STEP {job}.");
    text.lines().enumerate().find_map(|(i, l)| {
        let hit = l.starts_with("srun: error: Node failure")
            || (l.contains(&step_mark) && l.contains(" CANCELLED"))
            || (l.contains(&format!("*** JOB {job} ")) && l.contains(" CANCELLED"));
        hit.then(|| {
            if first == 1 {
                format!("{}:{}: {}", log.display(), i + 1, l.trim())
            } else {
                format!("{}: {}", log.display(), l.trim())
            }
        })
    })
}

/// The ids (`JOB.STEP`) of the job's steps named `name`.
pub fn step_ids(job: &str, name: &str) -> Vec<String> {
    let Ok(o) = out(
        duct::cmd("squeue", ["-h", "-s", "-j", job, "-o", "%i|%j"]),
        "squeue",
    ) else {
        return Vec::new();
    };
    o.lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(_, n)| n.trim() == name)
        .map(|(id, _)| id.trim().to_string())
        .filter(|id| id.contains('.'))
        .collect()
}

/// Send a signal to one step (`scancel --signal=SIG JOB.STEP`).
pub fn signal_step(id: &str, signal: &str) {
    let _ = out(
        duct::cmd("scancel", [&format!("--signal={signal}"), id]),
        "scancel",
    );
}

/// How a job is (or ended): (state, reason). A job that is COMPLETING is waited for (up to
/// 5 s) so that the state said is the final one (CANCELLED, TIMEOUT, NODE_FAIL, …); one still
/// COMPLETING then with reason TimeLimit is said as TIMEOUT.
pub fn state(job: &str) -> Option<(String, String)> {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let s = state_raw(job);
        match &s {
            Some((st, _)) if st == "COMPLETING" && Instant::now() < end => {
                std::thread::sleep(Duration::from_millis(50))
            }
            // still completing (a loaded controller), ended by its time limit: that is a timeout
            Some((st, why)) if st == "COMPLETING" && why == "TimeLimit" => {
                return Some(("TIMEOUT".into(), why.clone()))
            }
            _ => return s,
        }
    }
}

/// The job's state now, from `scontrol show job`, else `sacct`; a job COMPLETING because its
/// time limit passed is said as TIMEOUT (an array task asks while its own job ends, and a
/// loaded controller may keep it COMPLETING for seconds).
pub fn state_now(job: &str) -> Option<(String, String)> {
    let s = state_raw(job);
    match s {
        Some((st, why)) if st == "COMPLETING" && why == "TimeLimit" => {
            Some(("TIMEOUT".into(), why))
        }
        s => s,
    }
}

/// The job's state as Slurm says it now.
fn state_raw(job: &str) -> Option<(String, String)> {
    if let Ok(o) = out(
        duct::cmd("scontrol", ["show", "job", "-o", job]),
        "scontrol",
    ) {
        let field = |k: &str| {
            o.split_whitespace()
                .find_map(|t| t.strip_prefix(k))
                .map(str::to_string)
        };
        if let Some(s) = field("JobState=") {
            return Some((s, field("Reason=").unwrap_or_default()));
        }
    }
    let o = out(
        duct::cmd("sacct", ["-j", job, "-n", "-X", "-P", "-o", "State,Reason"]),
        "sacct",
    )
    .ok()?;
    let l = o.lines().next()?;
    let (s, r) = l.split_once('|').unwrap_or((l, ""));
    Some((
        s.split_whitespace().next().unwrap_or(s).to_string(),
        r.to_string(),
    ))
}

/// Cancel a job and wait (up to 10 s) until the queue no longer holds it.
pub fn cancel(job: &str) -> Result<(), String> {
    out(duct::cmd("scancel", [job]), "scancel")?;
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        match out(duct::cmd("squeue", ["-h", "-j", job, "-o", "%T"]), "squeue") {
            Ok(s) if s.trim().is_empty() => return Ok(()),
            Err(_) => return Ok(()),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    Err(format!(
        "job {job} is still in the queue 10 s after scancel"
    ))
}

/// A queued job's (name, comment); None when the queue no longer holds it.
pub fn job_owner(job: &str) -> Option<(String, String)> {
    let o = out(
        duct::cmd("squeue", ["-h", "-j", job, "-o", "%j\u{1f}%k\u{1e}"]),
        "squeue",
    )
    .ok()?;
    let l = records(&o).into_iter().next()?;
    let (n, c) = l.split_once('\u{1f}')?;
    Some((n.to_string(), c.to_string()))
}

/// squeue's records when its format ends each with `\x1e` (names and comments may hold `|`
/// and newlines).
fn records(o: &str) -> Vec<&str> {
    o.split('\u{1e}')
        .map(|r| r.strip_prefix('\n').unwrap_or(r))
        .filter(|r| !r.trim().is_empty())
        .collect()
}

/// Jobs of the queue that carry this comment and a name expr gives: (job id, name). The tasks
/// of an array, running or pending (`12_[4-9%4]`), are their array job's id: cancelling it
/// ends them all.
pub fn jobs_with_comment(comment: &str) -> Vec<(String, String)> {
    let Ok(o) = out(
        duct::cmd("squeue", ["-h", "-o", "%F\u{1f}%T\u{1f}%j\u{1f}%k\u{1e}"]),
        "squeue",
    ) else {
        return Vec::new();
    };
    let mut v: Vec<(String, String)> = records(&o)
        .into_iter()
        .filter_map(|l| {
            let mut it = l.splitn(4, '\u{1f}');
            let (id, state, name, c) = (it.next()?.trim(), it.next()?, it.next()?, it.next()?);
            // a job that is only completing needs no cancelling
            (c == comment && name.starts_with("expr-") && !id.is_empty() && state != "COMPLETING")
                .then(|| (id.to_string(), name.to_string()))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The `sbatch` arguments of an array of `n` tasks (one per point), at most `throttle` at once,
/// each task's own output in the result directory's logs.
pub fn sbatch_args(a: &Allocation, name: &str, comment: &str, n: usize, logs: &str) -> Vec<String> {
    let range = match n {
        0 | 1 => "0".to_string(),
        n => format!("0-{}", n - 1),
    };
    let mut v: Vec<String> = vec![
        "--parsable".into(),
        format!(
            "--array={range}{}",
            a.throttle.map(|k| format!("%{k}")).unwrap_or_default()
        ),
        format!("--nodes={}", a.nodes),
        // one task per node: `--ntasks=1` would make sbatch shrink the job to one node
        "--ntasks-per-node=1".into(),
        // `%` would be a file-name pattern and `\\` an escape: a directory that has either
        // gets no task output
        if logs.contains('%') || logs.contains('\\') {
            "--output=/dev/null".into()
        } else {
            format!("--output={logs}/slurm-%A_%a.out")
        },
    ];
    v.extend(job_args(a, name, comment));
    v
}

/// The cluster's MaxArraySize: an array's task indices must be below it.
pub fn max_array_size() -> Option<usize> {
    let o = out(
        duct::cmd("scontrol", ["show", "config"]),
        "scontrol show config",
    )
    .ok()?;
    parse_max_array_size(&o)
}

/// `MaxArraySize = 1001` from `scontrol show config`.
fn parse_max_array_size(o: &str) -> Option<usize> {
    o.lines()
        .find_map(|l| l.trim().strip_prefix("MaxArraySize"))
        .and_then(|v| v.trim().strip_prefix('='))
        .and_then(|v| v.trim().parse().ok())
}

/// The job id `sbatch --parsable` printed (`JOB` or `JOB;CLUSTER`).
fn parse_job_id(o: &str) -> Option<String> {
    let job = o.trim().split(';').next().unwrap_or("").trim();
    (!job.is_empty() && job.chars().all(|c| c.is_ascii_digit())).then(|| job.to_string())
}

/// Submit a batch script; the array's job id.
pub fn submit(args: &[String], script: &std::path::Path) -> Result<String, String> {
    let mut argv: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    argv.push(script.into());
    let o = out(duct::cmd("sbatch", argv), "sbatch")?;
    parse_job_id(&o).ok_or_else(|| format!("sbatch printed no job id: {}", o.trim()))
}

/// The array tasks of a job still in the queue (`JOB_I`, pending ranges expanded); None when
/// squeue cannot say.
pub fn array_tasks(job: &str) -> Option<Vec<String>> {
    let o = match out(
        duct::cmd("squeue", ["-h", "-r", "-j", job, "-o", "%i"]),
        "squeue",
    ) {
        Ok(o) => o,
        // the controller has forgotten the job (MinJobAge passed, or its state was lost): it
        // is not queued
        Err(e) if e.contains("Invalid job id") => return Some(Vec::new()),
        Err(_) => return None,
    };
    Some(
        o.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// Inside an array task: put the hosts of the allocation on the task's own job and nodes
/// (`SLURM_JOB_ID`, `SLURM_JOB_NODELIST`); the node the task runs on is `here`. Returns what the
/// journal records of the task.
pub fn place_task(exp: &mut Experiment) -> Result<serde_json::Value, String> {
    let var = |k: &str| {
        std::env::var(k)
            .map_err(|_| format!("{k} is not set: `expr __task` runs inside a Slurm array task"))
    };
    let job = var("SLURM_JOB_ID")?;
    let list = var("SLURM_JOB_NODELIST")?;
    let me = match std::env::var("SLURMD_NODENAME") {
        Ok(n) => n,
        Err(_) => out(duct::cmd("hostname", ["-s"]), "hostname")?
            .trim()
            .to_string(),
    };
    let names = out(
        duct::cmd("scontrol", ["show", "hostnames", &list]),
        "scontrol show hostnames",
    )?;
    let mut nodes = Vec::new();
    for n in names.lines().map(str::trim).filter(|n| !n.is_empty()) {
        let ip = if n == me {
            first_address(&out(duct::cmd("hostname", ["-I"]), "hostname -I")?)
        } else {
            node_ip(&job, n)?
        };
        nodes.push((n.to_string(), ip));
    }
    // the array this task is of: an array allocation a host is on (the run submits one; a
    // declared one that no host uses is not it)
    let used = |a: &crate::model::Allocation| a.array && exp.has_hosts_on(&a.name);
    if let Some(a) = exp
        .allocations
        .iter()
        .find(|a| used(a) && nodes.len() < a.nodes as usize)
    {
        return Err(format!(
            "array task of `{}` (job {job}) has {} node(s), {} were asked for",
            a.name,
            nodes.len(),
            a.nodes
        ));
    }
    let allocs: Vec<String> = exp
        .allocations
        .iter()
        .filter(|a| used(a))
        .map(|a| a.name.clone())
        .collect();
    let granted: Vec<Granted> = allocs
        .iter()
        .map(|a| Granted {
            alloc: a.clone(),
            job: job.clone(),
            nodes: nodes.clone(),
        })
        .collect();
    place(exp, &granted);
    for h in &mut exp.hosts {
        if let Some(p) = &mut h.place {
            p.here = p.nodename.as_deref() == Some(me.as_str());
        }
    }
    Ok(serde_json::json!({
        "job": job,
        "array_job": std::env::var("SLURM_ARRAY_JOB_ID").ok(),
        "array_task": std::env::var("SLURM_ARRAY_TASK_ID").ok(),
        "node": me,
        "nodes": nodes.iter().map(|(n, ip)| serde_json::json!({"name": n, "ip": ip})).collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::{killed_by_slurm, parse_job_id, parse_max_array_size, records};

    #[test]
    fn squeue_records_sbatch_ids_and_max_array_size_survive_odd_output() {
        // a name with `|` and a comment with a newline stay in their record
        let o = "12\u{1f}RUNNING\u{1f}expr-a|b\u{1f}expr:/x\ny\u{1e}\n13_[2-5%2]\u{1f}PENDING\u{1f}n\u{1f}c\u{1e}\n";
        assert_eq!(
            records(o),
            vec![
                "12\u{1f}RUNNING\u{1f}expr-a|b\u{1f}expr:/x\ny",
                "13_[2-5%2]\u{1f}PENDING\u{1f}n\u{1f}c"
            ]
        );
        // truncated output: the partial record is kept as it is, an empty one is dropped
        assert_eq!(records("12\u{1f}RUN"), vec!["12\u{1f}RUN"]);
        assert!(records("\n\u{1e}\n").is_empty());
        assert_eq!(parse_job_id("4711\n").as_deref(), Some("4711"));
        assert_eq!(parse_job_id("4711;cluster\n").as_deref(), Some("4711"));
        for bad in ["", "\n", "Submitted batch job 4711", "47 11", "-1", ";x"] {
            assert_eq!(parse_job_id(bad), None, "{bad:?}");
        }
        let cfg = "MaxArraySize            = 1001\nMaxJobCount             = 10000\n";
        assert_eq!(parse_max_array_size(cfg), Some(1001));
        for bad in [
            "MaxArraySize = ",
            "MaxArraySize = many",
            "MaxArraySizeX = 3",
            "",
        ] {
            assert_eq!(parse_max_array_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_node_failure_is_found_with_its_line_and_only_for_this_job() {
        let (d, log) = crate::util::testutil::temp_path("s.log");
        std::fs::write(&log, "step 1\nslurmstepd-vm: error: *** STEP 7.3 ON vm CANCELLED AT 2026-11-30T08:45:37 DUE TO NODE FAILURE ***\n").unwrap();
        // another job's step says nothing of this one
        assert_eq!(killed_by_slurm(&log, "8"), None);
        let hit = killed_by_slurm(&log, "7").unwrap();
        assert!(hit.ends_with("s.log:2: slurmstepd-vm: error: *** STEP 7.3 ON vm CANCELLED AT 2026-11-30T08:45:37 DUE TO NODE FAILURE ***"), "{hit}");
        std::fs::write(&log, "ok\nsrun: error: Node failure on vm").unwrap();
        assert!(killed_by_slurm(&log, "7")
            .unwrap()
            .contains(":2: srun: error: Node failure on vm"));
        // a torn, non-UTF-8 and long log: only the tail is read, without a line number
        let mut big = vec![0xffu8; 70 << 10];
        big.extend_from_slice(b"\nsrun: error: Node failure on n3\n");
        std::fs::write(&log, &big).unwrap();
        let hit = killed_by_slurm(&log, "7").unwrap();
        assert!(
            hit.ends_with("s.log: srun: error: Node failure on n3"),
            "{hit}"
        );
        // a clean log, and no log at all
        std::fs::write(&log, "v=3\n").unwrap();
        assert_eq!(killed_by_slurm(&log, "7"), None);
        assert_eq!(killed_by_slurm(&d.path().join("none"), "7"), None);
    }
}
