//! The reaper: a thread blocked in `wait4` for each started process, so that its exit is known
//! the moment it happens, with its CPU times and peak RSS, and waiting loops wake on exits
//! instead of polling.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How a process ended, as its reaper saw it: exit code (`-signal` when killed by a signal), the
/// moment it was reaped, and the CPU time and peak RSS `wait4` reported for it and the children
/// it waited for.
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    pub code: i32,
    pub at: Instant,
    pub user: Duration,
    pub sys: Duration,
    /// The peak RSS, where it is the command's: `wait4`'s peak counts the memory the process
    /// held as a copy of its starter (expr, or a host's agent) between the fork and the exec,
    /// so a peak not above that ([`Exit::rss_floor_kib`]) is not known to be the command's.
    pub max_rss_kib: Option<i64>,
    /// What the starter held when it started the process (its resident memory, KiB).
    pub rss_floor_kib: i64,
}

/// How far above the starter's resident memory a peak must be to be the command's: the fork's
/// copy grows a little before its exec (its stack, the kernel's per-thread RSS counts), so a
/// peak a few KiB above the floor is still the copy's.
pub const RSS_MARGIN_KIB: i64 = 4096;

impl Exit {
    /// `wait4`'s peak `max_rss_kib` of a process started by one holding `floor_kib`: the
    /// command's only clearly above that ([`RSS_MARGIN_KIB`]).
    pub fn peak(max_rss_kib: i64, floor_kib: i64) -> Option<i64> {
        (max_rss_kib > floor_kib + RSS_MARGIN_KIB).then_some(max_rss_kib)
    }
}

/// This process's resident memory now, KiB (0 where /proc cannot say).
pub fn own_rss_kib() -> i64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<i64>().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no failure mode that touches memory
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as i64;
    pages * page / 1024
}

/// Exits reaped so far, process-wide: loops that wait for any of several processes sleep on
/// this until it changes (or their timeout for signals and deadlines passes).
static EXITS: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());

/// The current exit count, to pass to [`wait_exits`].
pub fn exits_seen() -> u64 {
    EXITS.0.lock().map(|g| *g).unwrap_or(0)
}

/// Sleep until a process exits after `seen` was read, or `timeout` passes.
pub fn wait_exits(seen: u64, timeout: Duration) {
    let Ok(g) = EXITS.0.lock() else { return };
    let _ = EXITS.1.wait_timeout_while(g, timeout, |n| *n == seen);
}

/// One child's exit, filled in by the thread that waits for it.
#[derive(Clone, Default)]
pub struct Reaper(Arc<(Mutex<Option<Exit>>, Condvar)>);

impl Reaper {
    /// Start a thread blocked in `wait4(pid)`. The child must not be waited for elsewhere.
    /// `floor_kib`: this process's resident memory just before it spawned the child (the
    /// larger of that and now is the child's floor, [`Exit::max_rss_kib`]).
    pub fn start(pid: u32, floor_kib: i64) -> Reaper {
        let r = Reaper::default();
        let slot = r.clone();
        let floor = floor_kib.max(own_rss_kib());
        let spawned = std::thread::Builder::new()
            .name(format!("reap-{pid}"))
            .stack_size(64 << 10)
            .spawn(move || slot.reap(pid as libc::pid_t, floor));
        if spawned.is_err() {
            // no thread: record an unknown end rather than wait for ever
            r.set(Exit {
                code: -1,
                at: Instant::now(),
                user: Duration::ZERO,
                sys: Duration::ZERO,
                max_rss_kib: None,
                rss_floor_kib: floor,
            });
        }
        r
    }

    fn reap(&self, pid: libc::pid_t, floor: i64) {
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is plain data; wait4 fills it for the child it reaps.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let code = loop {
            // SAFETY: waiting for our own child; status and ru are valid for writes.
            let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
            if r == pid {
                break if libc::WIFEXITED(status) {
                    libc::WEXITSTATUS(status)
                } else if libc::WIFSIGNALED(status) {
                    -libc::WTERMSIG(status)
                } else {
                    -1
                };
            }
            if r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break -1;
        };
        let at = Instant::now();
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        self.set(Exit {
            code,
            at,
            user: tv(ru.ru_utime),
            sys: tv(ru.ru_stime),
            max_rss_kib: Exit::peak(ru.ru_maxrss, floor),
            rss_floor_kib: floor,
        });
    }

    /// Record the exit (a reaper thread, or the agent that reaped the process remotely).
    pub fn set(&self, e: Exit) {
        if let Ok(mut g) = self.0 .0.lock() {
            *g = Some(e);
        }
        self.0 .1.notify_all();
        if let Ok(mut n) = EXITS.0.lock() {
            *n += 1;
        }
        EXITS.1.notify_all();
    }

    pub fn get(&self) -> Option<Exit> {
        self.0 .0.lock().ok().and_then(|g| *g)
    }

    /// The exit, waiting for it until `end` at most.
    pub fn wait_until(&self, end: Instant) -> Option<Exit> {
        let Ok(mut g) = self.0 .0.lock() else {
            return None;
        };
        loop {
            if let Some(e) = *g {
                return Some(e);
            }
            let now = Instant::now();
            if now >= end {
                return None;
            }
            g = match self.0 .1.wait_timeout(g, end - now) {
                Ok((g, _)) => g,
                Err(_) => return None,
            };
        }
    }
}

#[cfg(test)]
mod peak_tests {
    use super::*;

    /// A peak a few KiB above the starter's memory is the fork's copy, not the command's
    /// (half the runs of a `printf` read expr's 25 MiB); one clearly above it is the command's.
    #[test]
    fn a_peak_just_above_the_floor_is_not_the_commands() {
        assert_eq!(Exit::peak(25_000 + 100, 25_000), None);
        assert_eq!(Exit::peak(25_000 + RSS_MARGIN_KIB, 25_000), None);
        assert_eq!(Exit::peak(200_000, 25_000), Some(200_000));
    }
}
