//! Processes that left their step's process group — `setsid cmd &`, a double fork, `nohup` —
//! are found by the marker every step carries in its environment (`EXPR_MARK=<run>:<point>;`)
//! and stopped at the point's teardown, at the end of the run and by `expr stop`: on this machine
//! from /proc, on an ssh host by one script. A process that cleared its environment is not found.

use std::time::{Duration, Instant};

use crate::exec::backend::host::Ssh;
use crate::model::Host;

pub use crate::exec::vars::MARK_VAR;

/// The marker of one point's (or the setup's) processes in the run marked `run`.
pub fn marker(run: &str, point: Option<&str>) -> String {
    format!("{run}:{};", point.unwrap_or("setup"))
}

/// A marked process: pid and command line.
pub type Found = (i32, String);

/// This machine's processes whose marker starts with `prefix` (not this process). With `dir`,
/// a process that names another result directory in its environment is not one of them (a
/// copy of a result directory names the run of the original).
pub fn find_local(prefix: &str, dir: Option<&std::path::Path>) -> Vec<Found> {
    find_local_from(prefix, dir, 0)
}

/// The same among pids from `from` on: what a point started has a pid above the first one it
/// spawned (the caller scans all when pids have wrapped around), and the environments of the
/// machine's older processes need not be read.
pub fn find_local_from(prefix: &str, dir: Option<&std::path::Path>, from: i32) -> Vec<Found> {
    let want = format!("{MARK_VAR}={prefix}");
    let other_dir = |env: &[u8]| -> bool {
        let Some(dir) = dir else { return false };
        let key = format!("{}=", crate::exec::vars::RESULT_DIR_VAR);
        env.split(|b| *b == 0)
            .find_map(|kv| kv.strip_prefix(key.as_bytes()))
            .is_some_and(|d| {
                let d = std::path::PathBuf::from(&*String::from_utf8_lossy(d));
                d != dir && crate::exec::lock::held(&d)
            })
    };
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me || pid < from {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(want.as_bytes()))
            && !other_dir(&env)
        {
            out.push((pid, crate::exec::lock::cmdline(pid)));
        }
    }
    out
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only asks whether the process exists; a zombie counts as gone
    let exists = unsafe { libc::kill(pid, 0) == 0 };
    exists
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
}

/// TERM the found processes, KILL what is left after `grace`; returns those still alive.
pub fn stop_local(found: &[Found], grace: Duration) -> Vec<Found> {
    for (pid, _) in found {
        // SAFETY: a pid found a moment ago with this run's marker in its environment
        unsafe { libc::kill(*pid, libc::SIGTERM) };
    }
    let end = Instant::now() + grace;
    while found.iter().any(|(p, _)| alive(*p)) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    for (pid, _) in found {
        if alive(*pid) {
            // SAFETY: as above
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
    }
    let end = Instant::now() + Duration::from_millis(500);
    while found.iter().any(|(p, _)| alive(*p)) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    found.iter().filter(|(p, _)| alive(*p)).cloned().collect()
}

/// Find and stop the marked processes on `host`: (stopped, still alive).
pub fn sweep(
    ssh: &Ssh,
    host: &Host,
    prefix: &str,
    grace: Duration,
    dir: Option<&std::path::Path>,
    from_pid: i32,
) -> Result<(Vec<Found>, Vec<Found>), String> {
    if host.runs_here() {
        let found = find_local_from(prefix, dir, from_pid);
        let left = stop_local(&found, grace);
        let stopped = found.into_iter().filter(|f| !left.contains(f)).collect();
        return Ok((stopped, left));
    }
    if host.is_local() {
        // a Slurm node: its /proc is not this machine's
        return Ok((Vec::new(), Vec::new()));
    }
    if let Some(a) = ssh.agent(host) {
        let (found, left_pids) = a.sweep(&format!("{MARK_VAR}={prefix}"), grace)?;
        let (left, stopped) = found.into_iter().partition(|(p, _)| left_pids.contains(p));
        return Ok((stopped, left));
    }
    let want = crate::util::shell::quote(&format!("{MARK_VAR}={prefix}"));
    let script = format!(
        "{UP} m={want}; found=; for d in /proc/[0-9]*; do p=${{d#/proc/}}; [ \"$p\" = \"$$\" ] && continue; \
         if tr '\\0' '\\n' < \"$d/environ\" 2>/dev/null | awk -v m=\"$m\" 'index($0, m) == 1 {{ f = 1 }} END {{ exit !f }}'; then \
         found=\"$found $p\"; echo \"EXPR_ESC $p $(tr '\\0' ' ' < \"$d/cmdline\" 2>/dev/null)\"; fi; done; \
         [ -z \"$found\" ] && exit 0; kill -TERM $found 2>/dev/null; \
         i=0; while [ $i -lt {} ]; do left=; for p in $found; do up $p && left=\"$left $p\"; done; [ -z \"$left\" ] && break; sleep 0.05; i=$((i+1)); done; \
         for p in $found; do up $p && kill -KILL $p 2>/dev/null; done; sleep 0.2; \
         for p in $found; do up $p && echo \"EXPR_LEFT $p\"; done; exit 0",
        (grace.as_millis() / 50).max(1)
    );
    let (code, out) = ssh.run(host, &script, None, grace + Duration::from_secs(30))?;
    if code != 0 {
        return Err(format!("exit {code}: {}", out.trim()));
    }
    let mut found: Vec<Found> = Vec::new();
    let mut left_pids: Vec<i32> = Vec::new();
    for l in out.lines() {
        if let Some(r) = l.strip_prefix("EXPR_ESC ") {
            let (p, c) = r.split_once(' ').unwrap_or((r, ""));
            if let Ok(p) = p.parse() {
                found.push((p, c.trim().to_string()));
            }
        } else if let Some(p) = l.strip_prefix("EXPR_LEFT ") {
            if let Ok(p) = p.trim().parse() {
                left_pids.push(p);
            }
        }
    }
    let (left, stopped) = found.into_iter().partition(|(p, _)| left_pids.contains(p));
    Ok((stopped, left))
}

/// The remote sweep's `up PID`: the process exists and is no zombie (a KILLed process waits
/// for its parent, pid 1 after a `setsid` escape, to reap it; `kill -0` alone counted it alive
/// and `expr stop` said "still alive after KILL" of one that was gone).
const UP: &str = "up() { kill -0 \"$1\" 2>/dev/null || return 1; s=$(cat \"/proc/$1/stat\" 2>/dev/null) || return 1; s=${s##*[)] }; [ \"${s%% *}\" != Z ]; };";

/// "pid 12 `sleep 301`, pid 13 `…`".
pub fn describe(found: &[Found]) -> String {
    found
        .iter()
        .map(|(p, c)| format!("pid {p} `{}`", c.chars().take(120).collect::<String>()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    /// `up` (the remote sweep's check) says a zombie is gone and a live process is up, in
    /// POSIX sh as a remote login shell may be.
    #[test]
    fn the_remote_sweep_counts_a_zombie_as_gone() {
        use std::io::BufRead;
        // a parent that never reaps its child: the child is a zombie while the parent sleeps
        let mut parent = std::process::Command::new("python3")
            .args([
                "-c",
                "import os, time\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nprint(pid, flush=True)\ntime.sleep(20)",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(parent.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let zombie: i32 = line.trim().parse().unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !std::fs::read_to_string(format!("/proc/{zombie}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        }) {
            assert!(std::time::Instant::now() < end, "no zombie");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let up = |pid: i32| {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{} up {pid} && echo up || echo gone", super::UP))
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(up(zombie), "gone");
        assert_eq!(up(parent.id() as i32), "up");
        let _ = parent.kill();
        let _ = parent.wait();
        assert_eq!(up(parent.id() as i32), "gone");
    }
}
