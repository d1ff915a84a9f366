//! Processes that left their step's process group — `setsid cmd &`, a double fork, `nohup` —
//! are found by the marker every step carries in its environment (`EXPR_MARK=<run>:<point>;`)
//! and stopped at the point's teardown, at the end of the run and by `expr stop`: on this machine
//! from /proc, on an ssh host by one script.
//!
//! A process that also cleared its environment (`env -i setsid cmd &`, `sudo` with a pty of its
//! own) carries no marker. On this machine the run adopts it: expr is its processes' child
//! subreaper (PR_SET_CHILD_SUBREAPER), so what loses its parent becomes expr's child, not
//! init's. Every child expr starts itself is counted as its own
//! ([`crate::exec::backend::children::own`]); a child of expr in a process group not expr's
//! that it did not start was adopted, and is stopped as the run ends ([`sweep_adopted`]), its
//! exit reaped as each point ends ([`reap_adopted`]). On an ssh host and after a `kill -9` of
//! expr such a process is not found.

use std::collections::HashMap;
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

/// One look at this machine's processes whose marker starts with `prefix` (not this process),
/// among those started at `since` (clock ticks since boot) or later (what a point left started
/// after its first step did, whatever pid it got: pids wrap), leaving out `skip`. With `dir`, a
/// process that names another live result directory in its environment is not one of them (a
/// copy of a result directory names the run of the original). Returns the marked processes,
/// and how many others had an empty environment (a process in the middle of an `exec` reads
/// so for a moment; kernel threads and zombies are not counted).
fn scan_local(
    prefix: &str,
    dir: Option<&std::path::Path>,
    since: u64,
    skip: &[i32],
) -> (Vec<Found>, usize) {
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
    let mut unsure = 0;
    // only a process started in the last two seconds can be in the middle of the `exec` that
    // left its environment empty for a moment; an older one cleared it (and is not found)
    let young = boot_ticks().saturating_sub(2 * clock_hz());
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return (out, 0);
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me || skip.contains(&pid) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let stat = crate::exec::backend::host::Stat::of(&stat);
        if stat.start < since {
            continue;
        }
        let env = match std::fs::read(e.path().join("environ")) {
            Ok(env) => env,
            // gone meanwhile
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            // unreadable for a moment (in the middle of an `exec`): looked at again
            Err(_) => {
                if !stat.quiet() && stat.start >= young {
                    unsure += 1;
                }
                continue;
            }
        };
        if env.is_empty() {
            if !stat.quiet() && stat.start >= young {
                unsure += 1;
            }
            continue;
        }
        if env
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(want.as_bytes()))
            && !other_dir(&env)
        {
            out.push((pid, crate::exec::lock::cmdline(pid)));
        }
    }
    (out, unsure)
}

/// Clock ticks a second (`/proc/PID/stat` counts in them).
fn clock_hz() -> u64 {
    // SAFETY: sysconf only reads a configuration value
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as u64
}

/// Now, in the clock ticks since boot that /proc/PID/stat gives a process's start in (one
/// tick earlier: a process started in this tick counts as started now).
pub fn boot_ticks() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given
    if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } != 0 {
        return 0;
    }
    let hz = clock_hz();
    let ticks = ts.tv_sec as u64 * hz + ts.tv_nsec as u64 * hz / 1_000_000_000;
    ticks.saturating_sub(1)
}

/// Find this machine's marked processes and hold them still: SIGSTOP what a look finds, look
/// again for what they forked meanwhile, until a look finds nothing new (a stopped process
/// forks no more). A process that read with an empty environment (in the middle of an `exec`)
/// is looked for again a few times after a pause.
fn freeze_local(
    prefix: &str,
    dir: Option<&std::path::Path>,
    since: u64,
    done: &[i32],
) -> Vec<Found> {
    let mut frozen: Vec<Found> = Vec::new();
    let mut pauses = 0;
    for _ in 0..200 {
        let skip: Vec<i32> = done
            .iter()
            .copied()
            .chain(frozen.iter().map(|(p, _)| *p))
            .collect();
        let (found, unsure) = scan_local(prefix, dir, since, &skip);
        if found.is_empty() {
            if unsure == 0 || pauses >= 5 {
                break;
            }
            pauses += 1;
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        for (pid, _) in &found {
            // SAFETY: a pid found a moment ago with this run's marker in its environment
            unsafe { libc::kill(*pid, libc::SIGSTOP) };
        }
        frozen.extend(found);
    }
    frozen
}

/// Stop this machine's processes marked with `prefix` (started at `since` or later):
/// (stopped, still alive after KILL). What a stopped process forked before it stopped is
/// found by the next look, and what a TERM handler started by the round after.
pub fn sweep_local(
    prefix: &str,
    dir: Option<&std::path::Path>,
    since: u64,
    grace: Duration,
) -> (Vec<Found>, Vec<Found>) {
    let mut all: Vec<Found> = Vec::new();
    let mut left: Vec<Found> = Vec::new();
    for round in 0..6 {
        let done: Vec<i32> = all.iter().map(|(p, _)| *p).collect();
        let frozen = freeze_local(prefix, dir, since, &done);
        if frozen.is_empty() {
            break;
        }
        if round == 5 {
            // what TERM handlers still start after five rounds: KILL, which no handler sees
            for (pid, _) in &frozen {
                // SAFETY: a pid found a moment ago with this run's marker in its environment
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            left.extend(stop_local(&frozen, Duration::ZERO));
        } else {
            left.extend(stop_local(&frozen, grace));
        }
        all.extend(frozen);
    }
    let stopped = all.into_iter().filter(|f| !left.contains(f)).collect();
    (stopped, left)
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only asks whether the process exists; a zombie counts as gone; one this
    // process may not signal (another user's: a step's `sudo daemon &` of a run not as root)
    // exists, and was not stopped
    let exists = unsafe { libc::kill(pid, 0) == 0 }
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && crate::exec::backend::host::Stat::read(i64::from(pid)).is_none_or(|s| s.state != 'Z')
}

/// TERM the found (perhaps stopped) processes and let them go on to take it, KILL what is
/// left after `grace`; returns those still alive.
fn stop_local(found: &[Found], grace: Duration) -> Vec<Found> {
    for (pid, _) in found {
        // SAFETY: a pid found a moment ago with this run's marker in its environment; the
        // TERM is pending before the CONT wakes it
        unsafe {
            libc::kill(*pid, libc::SIGTERM);
            libc::kill(*pid, libc::SIGCONT);
        }
    }
    let end = Instant::now() + grace;
    // (a second signal asks for KILL at once)
    while found.iter().any(|(p, _)| alive(*p))
        && Instant::now() < end
        && crate::exec::signals::count() < 2
    {
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

/// Find and stop the marked processes on `host` (on this machine those started at `since`,
/// clock ticks since boot, or later): (stopped, still alive).
pub fn sweep(
    ssh: &Ssh,
    host: &Host,
    prefix: &str,
    grace: Duration,
    dir: Option<&std::path::Path>,
    since: u64,
) -> Result<(Vec<Found>, Vec<Found>), String> {
    if host.runs_here() {
        return Ok(sweep_local(prefix, dir, since, grace));
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
        "{UP} m={want}; all=; r=0; while [ $r -lt 5 ]; do found=; i=0; while [ $i -lt 200 ]; do new=; \
         for d in /proc/[0-9]*; do p=${{d#/proc/}}; [ \"$p\" = \"$$\" ] && continue; case \" $all $found \" in *\" $p \"*) continue;; esac; \
         if tr '\\0' '\\n' < \"$d/environ\" 2>/dev/null | awk -v m=\"$m\" 'index($0, m) == 1 {{ f = 1 }} END {{ exit !f }}'; then \
         new=\"$new $p\"; echo \"EXPR_ESC $p $(tr '\\0' ' ' < \"$d/cmdline\" 2>/dev/null)\"; fi; done; \
         [ -z \"$new\" ] && break; kill -STOP $new 2>/dev/null; found=\"$found$new\"; i=$((i+1)); done; \
         [ -z \"$found\" ] && break; kill -TERM $found 2>/dev/null; kill -CONT $found 2>/dev/null; \
         i=0; while [ $i -lt {} ]; do left=; for p in $found; do up $p && left=\"$left $p\"; done; [ -z \"$left\" ] && break; sleep 0.05; i=$((i+1)); done; \
         for p in $found; do up $p && kill -KILL $p 2>/dev/null; done; sleep 0.2; \
         for p in $found; do up $p && echo \"EXPR_LEFT $p\"; done; all=\"$all$found\"; r=$((r+1)); done; exit 0",
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

/// This process's children that it adopted (see the module's text), started at `since` (clock
/// ticks after boot) or later, with their state. A shared ssh connection of this process's (its
/// control socket's directory in its command line) is left alone: it is closed by its socket;
/// so is a daemon one of expr's own helpers started (git's fsmonitor server, from preflight's
/// `git status`): it carries expr's own environment (the result directory's variable) and no
/// step's marker. (`own`: none, not looked at: the caller looks again under the lock.)
fn adopted(own: Option<&HashMap<i32, u64>>, since: u64) -> Vec<(i32, String, char)> {
    let me = std::process::id() as i32;
    // SAFETY: getpgrp has no arguments and cannot fail
    let my_group = unsafe { libc::getpgrp() };
    let masters = format!("/expr-cm-{me}/");
    let mut out = Vec::new();
    for pid in my_children() {
        let Some(stat) = crate::exec::backend::host::Stat::read(i64::from(pid)) else {
            continue;
        };
        // a helper in expr's own group is one expr waits for (and a Ctrl-C reaches)
        if stat.ppid != me || stat.pgrp == my_group || stat.start < since {
            continue;
        }
        if is_own(own, pid, stat.start) {
            continue;
        }
        // still in the group of a job expr had before it started (of the script that `exec`'d
        // it), orphaned later as its subshell ended: that job's, not a step's (a zombie is
        // reaped all the same)
        if stat.state != 'Z'
            && stat.pgrp != pid
            && crate::exec::backend::children::group_had_before(stat.pgrp)
        {
            continue;
        }
        let cmd = crate::exec::lock::cmdline(pid);
        if cmd.contains(&masters) {
            continue;
        }
        if stat.state != 'Z' && helpers_own(pid) {
            continue;
        }
        out.push((pid, cmd, stat.state));
    }
    out
}

/// Adopt what the run's processes leave (the child subreaper, [`crate::exec::backend::children::adopt`])
/// and reap what of it ends in the background: from when (clock ticks after boot), or `None`
/// where this process cannot be a subreaper.
pub fn adopt() -> Option<u64> {
    if !crate::exec::backend::children::adopt() {
        return None;
    }
    // the children this process had as it started (jobs of a script that `exec`'d it) are not
    // the run's: counted as its own
    for pid in my_children() {
        if let Some(start) = crate::exec::backend::host::start_time(i64::from(pid)) {
            crate::exec::backend::children::had_before(pid, start);
        }
    }
    reap_in_background();
    Some(boot_ticks())
}

/// The run adopts no more: what loses its parent goes to init again.
pub fn adopt_no_more() {
    stop_reaping();
    crate::exec::backend::children::adopt_no_more();
}

/// Which background reaping is on ([`reap_in_background`]); each start and stop turns it over.
static REAPING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Reap adopted children that end, every second, until [`stop_reaping`]: a long point whose
/// step leaves a process behind now and then (`(cmd &)` in a loop) piles up no zombies (init
/// reaped them before expr adopted them).
pub fn reap_in_background() {
    use std::sync::atomic::Ordering;
    let mine = REAPING.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = std::thread::Builder::new()
        .name("reap-adopted".into())
        .stack_size(256 << 10)
        .spawn(move || {
            while REAPING.load(Ordering::SeqCst) == mine {
                reap_adopted();
                std::thread::sleep(Duration::from_secs(1));
            }
        });
}

/// The background reaping ends (the run no longer adopts).
pub fn stop_reaping() {
    REAPING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// This process's children: each thread's `/proc/self/task/TID/children` (a few reads where a
/// run's point ends), else every process's parent in /proc (a kernel without that file).
fn my_children() -> Vec<i32> {
    let pids = |text: &str| -> Vec<i32> {
        text.split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    };
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        let mut out = Vec::new();
        let mut read = false;
        for t in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                read = true;
                out.extend(pids(&text));
            }
        }
        if read {
            out.sort_unstable();
            out.dedup();
            return out;
        }
    }
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            crate::exec::backend::host::Stat::read(i64::from(*p)).is_some_and(|s| s.ppid == me)
        })
        .collect()
}

/// Whether the child `pid` started at `start` is one this process started itself (a start not
/// read at its spawn counts as its).
fn is_own(own: Option<&HashMap<i32, u64>>, pid: i32, start: u64) -> bool {
    own.and_then(|o| o.get(&pid))
        .is_some_and(|s| *s == start || *s == u64::MAX)
}

/// Whether a process's environment is expr's own, not a step's: this run's result directory's
/// variable (every process expr starts inherits it) without a step's marker.
fn helpers_own(pid: i32) -> bool {
    let Some(dir) = std::env::var_os(crate::exec::vars::RESULT_DIR_VAR) else {
        return false;
    };
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let mut ours = format!("{}=", crate::exec::vars::RESULT_DIR_VAR).into_bytes();
    ours.extend_from_slice(std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()));
    let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
    vars.contains(&ours.as_slice())
        && !vars
            .iter()
            .any(|kv| kv.starts_with(format!("{MARK_VAR}=").as_bytes()))
}

/// Reap the adopted children that have ended (a zombie waits for its parent, now this process,
/// to reap it). How many. /proc is read without the lock a spawn holds (a step's start does not
/// wait for the look); each zombie found is looked at again under it before it is reaped.
pub fn reap_adopted() -> usize {
    let zombies: Vec<i32> = adopted(None, 0)
        .into_iter()
        .filter(|(_, _, state)| *state == 'Z')
        .map(|(pid, _, _)| pid)
        .collect();
    if zombies.is_empty() {
        return 0;
    }
    let own = crate::exec::backend::children::own_children();
    let me = std::process::id() as i32;
    let mut n = 0;
    for pid in zombies {
        let still = crate::exec::backend::host::Stat::read(i64::from(pid))
            .is_some_and(|s| s.state == 'Z' && s.ppid == me && !is_own(own.as_ref(), pid, s.start));
        let mut status = 0;
        // SAFETY: a child of this process that no other part of it waits for
        if still && unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            n += 1;
        }
    }
    n
}

/// The processes below `roots` (their children, theirs, …), by /proc.
fn descendants(roots: &[i32]) -> Vec<Found> {
    let mut below: Vec<Found> = Vec::new();
    let mut parents: Vec<i32> = roots.to_vec();
    // a tree a fork bomb grows meanwhile is bounded by the rounds
    for _ in 0..64 {
        let mut found = Vec::new();
        let Ok(rd) = std::fs::read_dir("/proc") else {
            break;
        };
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            if parents.contains(&pid) || below.iter().any(|(p, _)| *p == pid) {
                continue;
            }
            if crate::exec::backend::host::Stat::read(i64::from(pid))
                .is_some_and(|s| parents.contains(&s.ppid) && !s.quiet())
            {
                found.push((pid, crate::exec::lock::cmdline(pid)));
            }
        }
        if found.is_empty() {
            break;
        }
        parents.extend(found.iter().map(|(p, _)| *p));
        below.extend(found);
    }
    below
}

/// Stop the adopted children started at `since` or later and what they started: held still
/// (SIGSTOP, then what they forked meanwhile), TERM, KILL after `grace`; then reaped.
/// (stopped, still alive after KILL).
pub fn sweep_adopted(since: u64, grace: Duration) -> (Vec<Found>, Vec<Found>) {
    let mut all: Vec<Found> = Vec::new();
    let mut left: Vec<Found> = Vec::new();
    for _ in 0..6 {
        let frozen: Vec<Found> = {
            let own = crate::exec::backend::children::own_children();
            let live: Vec<Found> = adopted(own.as_ref(), since)
                .into_iter()
                .filter(|(p, _, state)| *state != 'Z' && !all.iter().any(|(q, _)| q == p))
                .map(|(p, c, _)| (p, c))
                .collect();
            for (pid, _) in &live {
                // SAFETY: a child of this process it did not start and no other part waits for
                unsafe { libc::kill(*pid, libc::SIGSTOP) };
            }
            live
        };
        if frozen.is_empty() {
            break;
        }
        // what they started: held still too, until a look finds nothing new
        let mut held = frozen.clone();
        loop {
            let roots: Vec<i32> = held.iter().map(|(p, _)| *p).collect();
            let new: Vec<Found> = descendants(&roots)
                .into_iter()
                .filter(|(p, _)| !held.iter().any(|(q, _)| q == p))
                .collect();
            if new.is_empty() {
                break;
            }
            for (pid, _) in &new {
                // SAFETY: a process below an adopted child of this process, held still
                unsafe { libc::kill(*pid, libc::SIGSTOP) };
            }
            held.extend(new);
        }
        left.extend(stop_local(&held, grace));
        all.extend(held);
        reap_adopted();
    }
    reap_adopted();
    let stopped = all.into_iter().filter(|f| !left.contains(f)).collect();
    (stopped, left)
}

/// The remote sweep's `up PID`: the process exists and is no zombie (a KILLed process waits
/// for its parent, pid 1 after a `setsid` escape, to reap it; `kill -0` alone counted it alive
/// and `expr stop` said "still alive after KILL" of one that was gone).
const UP: &str = "up() { kill -0 \"$1\" 2>/dev/null || return 1; s=$(cat \"/proc/$1/stat\" 2>/dev/null) || return 1; s=${s##*[)] }; [ \"${s%% *}\" != Z ]; };";

/// "pid 12 `sleep 301`, pid 13 `…`" (the first ten, then how many more).
pub fn describe(found: &[Found]) -> String {
    const SHOWN: usize = 10;
    let mut s = found
        .iter()
        .take(SHOWN)
        // a secret its arguments hold masked first, then cut (helper 77: shown as is)
        .map(|(p, c)| {
            let c = crate::util::secret::mask_known(c);
            format!("pid {p} `{}`", c.chars().take(120).collect::<String>())
        })
        .collect::<Vec<_>>()
        .join(", ");
    if found.len() > SHOWN {
        s.push_str(&format!(" and {} more", found.len() - SHOWN));
    }
    s
}

#[cfg(test)]
mod tests {
    /// A process started after `boot_ticks()` was read has a start (in /proc/PID/stat) at or
    /// after it; this process, started before, has an earlier one, and /proc says who is a
    /// kernel thread.
    #[test]
    fn start_times_order_processes_whatever_their_pids() {
        let me = std::fs::read_to_string("/proc/self/stat").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let before = super::boot_ticks();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        let child = crate::exec::backend::host::Stat::of(&stat);
        assert!(child.start >= before, "{} < {before}", child.start);
        assert!(crate::exec::backend::host::Stat::of(&me).start < before);
        assert!(!child.quiet());
        // kthreadd, pid 2 where the pid namespace is the machine's
        if let Ok(k) = std::fs::read_to_string("/proc/2/stat") {
            if k.contains("(kthreadd)") {
                assert!(crate::exec::backend::host::Stat::of(&k).quiet());
            }
        }
        // a name with spaces and parentheses does not shift the fields
        let odd = "77 (a) b (c) S 1 77 77 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 0 0";
        let o = crate::exec::backend::host::Stat::of(odd);
        assert_eq!((o.state, o.flags, o.start), ('S', 4194560, 123456));
    }

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
