//! A bound on the memory a template may take while it renders. Experiment templates allow no
//! loops or assignments, and a report template runs under fuel and an output budget, but one
//! expression still builds what it likes before anything is printed: `(x * 100000) |
//! replace('', x * 100000)` asks for 10 GB, and minijinja repeats a string up to 100 MB a `*`.
//! So the process's address space (`RLIMIT_AS`) is capped at its size now plus [`MARGIN`] for
//! the length of the rendering, and an allocation past it ends expr with a message that names
//! the template (exit 2), where it would have taken the machine's memory.
//!
//! The limit is the process's: it is set only where expr starts nothing (planning, `check`,
//! a report's own template), so no step inherits it, and put back after.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// What a rendering may take beyond what the process held when it began.
pub const MARGIN: u64 = 4 << 30;

/// Cappings in progress (the outermost sets and restores the limit).
static DEPTH: AtomicUsize = AtomicUsize::new(0);
/// The message of the innermost capping, said if an allocation fails under it.
static WHAT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static WHAT_LEN: AtomicUsize = AtomicUsize::new(0);

/// The limit and the SIGABRT action before the outermost capping.
struct Saved {
    limit: libc::rlimit,
    action: libc::sigaction,
}

static SAVED: std::sync::Mutex<Option<Saved>> = std::sync::Mutex::new(None);

/// Rust ends the process with `abort()` when an allocation fails: under a capping, that is the
/// template's doing, and is said as such.
extern "C" fn on_abort(_: libc::c_int) {
    let (p, n) = (WHAT.load(Ordering::SeqCst), WHAT_LEN.load(Ordering::SeqCst));
    // SAFETY: write and _exit are async-signal-safe; the message outlives the capping that
    // published it (it is withdrawn before it is freed).
    unsafe {
        if !p.is_null() {
            libc::write(2, p as *const libc::c_void, n);
            libc::_exit(crate::util::exit_codes::INVALID);
        }
        libc::signal(libc::SIGABRT, libc::SIG_DFL);
        libc::raise(libc::SIGABRT);
    }
}

/// The process's virtual size now (`/proc/self/statm`), bytes.
fn vm_size() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// Cap the address space and catch the abort of a failed allocation; what was there before,
/// or None when the limit cannot be read or set (then nothing is capped).
fn cap() -> Option<Saved> {
    let size = vm_size()?;
    // SAFETY: plain system calls on owned, initialised structs.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_AS, &mut limit) != 0 {
            return None;
        }
        let want = size.saturating_add(MARGIN).min(limit.rlim_max);
        if want >= limit.rlim_cur {
            // a lower limit already stands (`ulimit -v`): it is kept
            return None;
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = on_abort as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut ours.sa_mask);
        if libc::sigaction(libc::SIGABRT, &ours, &mut action) != 0 {
            return None;
        }
        let capped = libc::rlimit {
            rlim_cur: want,
            rlim_max: limit.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_AS, &capped) != 0 {
            libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
            return None;
        }
        Some(Saved { limit, action })
    }
}

fn uncap(s: Saved) {
    // SAFETY: as in `cap`; raising the soft limit back up to the hard one is always allowed.
    unsafe {
        libc::setrlimit(libc::RLIMIT_AS, &s.limit);
        libc::sigaction(libc::SIGABRT, &s.action, std::ptr::null_mut());
    }
}

/// Puts back the message and the limit as `f` ends, however it ends.
struct Guard {
    _message: Vec<u8>,
    before: (*mut u8, usize),
}

impl Drop for Guard {
    fn drop(&mut self) {
        WHAT_LEN.store(self.before.1, Ordering::SeqCst);
        WHAT.store(self.before.0, Ordering::SeqCst);
        if DEPTH.fetch_sub(1, Ordering::SeqCst) == 1 {
            if let Some(s) = SAVED.lock().ok().and_then(|mut s| s.take()) {
                uncap(s);
            }
        }
        // (the message is freed after this, once withdrawn)
    }
}

/// Run `f` with the process's memory capped at its size now plus [`MARGIN`]; an allocation
/// past it ends expr with `error: {what} needs more than 4 GiB of memory` (exit 2). Nested
/// cappings keep the outermost limit and say the innermost `what`.
pub fn capped<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let message = format!(
        "\nerror: {what} needs more than {} GiB of memory: expr stopped it (a value repeated with `*`, replaced or joined without bound?)\n",
        MARGIN >> 30
    )
    .into_bytes();
    if DEPTH.fetch_add(1, Ordering::SeqCst) == 0 {
        if let Ok(mut s) = SAVED.lock() {
            *s = cap();
        }
    }
    let before = (
        WHAT.swap(message.as_ptr() as *mut u8, Ordering::SeqCst),
        WHAT_LEN.swap(message.len(), Ordering::SeqCst),
    );
    let _guard = Guard {
        _message: message,
        before,
    };
    f()
}

/// The limit in force now (soft), for tests.
pub fn current_limit() -> Option<u64> {
    // SAFETY: as in `cap`.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        (libc::getrlimit(libc::RLIMIT_AS, &mut limit) == 0).then_some(limit.rlim_cur)
    }
}

#[cfg(test)]
mod tests {
    /// The cap stands while `f` runs, nested cappings keep it, and it is gone after.
    #[test]
    fn the_cap_stands_for_the_rendering_and_is_put_back() {
        let before = super::current_limit();
        let (outer, inner) = super::capped("outer", || {
            let outer = super::current_limit();
            let inner = super::capped("inner", super::current_limit);
            (outer, inner)
        });
        assert_eq!(super::current_limit(), before);
        if before == Some(libc::RLIM_INFINITY) {
            let o = outer.expect("a limit");
            assert!((super::MARGIN..libc::RLIM_INFINITY).contains(&o), "{o}");
            assert_eq!(inner, outer, "a nested capping keeps the outer limit");
        }
    }
}
