//! SIGINT, SIGTERM, SIGHUP (a closed terminal or a dropped ssh session) and SIGQUIT: the first
//! asks the runner to stop launching and tear down; the second asks it to kill at once. The
//! handler only counts (and keeps the first signal's number); the runner polls, and a watch
//! ([`watch`]) ends expr if the run has not ended soon after a second signal.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static SIGNALS: AtomicUsize = AtomicUsize::new(0);
static FIRST: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(n: libc::c_int) {
    let _ = FIRST.compare_exchange(0, n, Ordering::SeqCst, Ordering::SeqCst);
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// The signals that stop a run cleanly.
pub const HANDLED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Install the handlers (idempotent). A SIGHUP or SIGQUIT this process was started ignoring
/// (`nohup expr run …`, a background job of a script) stays ignored, as the shell meant.
pub fn install() {
    for s in HANDLED {
        // SAFETY: sigaction with a null new action only reads the disposition; the handler only
        // touches atomics, which are async-signal-safe.
        unsafe {
            if s == libc::SIGHUP || s == libc::SIGQUIT {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(s, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
            }
            let before = libc::signal(s, on_signal as *const () as libc::sighandler_t);
            if before != on_signal as *const () as libc::sighandler_t && before != libc::SIG_ERR {
                BEFORE[slot(s)].store(before, Ordering::SeqCst);
            }
        }
    }
}

/// What each handled signal did before [`install`] (`SIG_DFL` unless found otherwise: a
/// script's `&` job starts with INT ignored).
static BEFORE: [AtomicUsize; 4] = [const { AtomicUsize::new(libc::SIG_DFL) }; 4];

/// A handled signal's place in [`HANDLED`].
fn slot(s: libc::c_int) -> usize {
    HANDLED.iter().position(|h| *h == s).unwrap_or(0)
}

/// The signals' dispositions from before [`install`] again (where it replaced them): once a
/// run has ended and torn down, a Ctrl-C ends expr at once as it would any program (writing an
/// export to a FIFO nobody read ignored TERM and INT for good); one the process started
/// ignoring stays ignored.
pub fn restore_default() {
    unwatch();
    for s in HANDLED {
        // SAFETY: reads the disposition, and puts back the one from before only over our own
        // handler.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(s, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == on_signal as *const () as libc::sighandler_t
            {
                libc::signal(s, BEFORE[slot(s)].load(Ordering::SeqCst));
            }
        }
    }
}

/// Once a second signal has come, how long the run may take to end by itself: its teardown
/// without a grace is quick, a collection or a report of large files is not.
pub const AT_ONCE: Duration = Duration::from_secs(2);

/// The watch that is on ([`watch`]): each watch and each [`unwatch`] turns it over.
static WATCH: AtomicUsize = AtomicUsize::new(0);

/// Watch for a second signal while the run writing `dir` runs (until [`unwatch`]): if the run
/// has not ended [`AT_ONCE`] after it, expr says so and exits with the run's signal code, and
/// what still runs is stopped by the run's sentinel (`sentinel`), else left to `expr stop`.
/// `first`: what to do before expr exits. `say`: the run's line on the terminal, which tells at
/// the first signal that it was seen (helper 88: a teardown that waited out a server's grace
/// said nothing for 5 s).
pub fn watch(
    dir: &std::path::Path,
    sentinel: bool,
    first: Box<dyn Fn() + Send>,
    say: Box<dyn Fn(&str) + Send>,
) {
    let mine = WATCH.fetch_add(1, Ordering::SeqCst) + 1;
    let q = crate::util::shell::quote(&dir.display().to_string());
    let journal = dir.join("journal.jsonl");
    let _ = std::thread::Builder::new()
        .name("second-signal".into())
        .spawn(move || {
            let mut since: Option<Instant> = None;
            let mut said = false;
            while WATCH.load(Ordering::SeqCst) == mine {
                if !said && count() >= 1 {
                    said = true;
                    if let Some(name) = first_name() {
                        say(&format!(
                            "expr: {name}: stopping what the run started (a second signal stops it without a grace)"
                        ));
                    }
                }
                if count() >= 2 && since.get_or_insert_with(Instant::now).elapsed() >= AT_ONCE {
                    first();
                    // the journal says how the run ended, as a run that ended itself does (an
                    // event is one whole-line write: it does not cut one the run writes now)
                    let j = journal.is_file().then(|| crate::results::journal::Journal::open(&journal));
                    if let Some(Ok(mut j)) = j {
                        j.emit(&crate::results::event::RunEvent::End(
                            crate::results::event::End {
                                exit_code: Some(i64::from(exit_code())),
                                survivors: None,
                            },
                        ));
                    }
                    let left = if sentinel {
                        "the run's sentinel stops what still runs"
                    } else {
                        "`expr stop` stops what still runs"
                    };
                    eprintln!(
                        "expr: interrupted again: stopped at once, before the run's report; {left}, and `expr report {q}` writes the report"
                    );
                    std::process::exit(exit_code());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
}

/// The run has ended: no watch ends expr now.
pub fn unwatch() {
    WATCH.fetch_add(1, Ordering::SeqCst);
}

/// How many signals arrived.
pub fn count() -> usize {
    SIGNALS.load(Ordering::SeqCst)
}

/// Whether a step that ended with `code` was stopped with the run: killed by a signal that
/// stops a run (`-signal`), ended by its own handler of one (`128 + signal`, a shell's `trap`),
/// or an ssh client whose connection the signal ended (255) — and the signal reached expr too,
/// at once or within a moment: whoever signals every process of a session, a cgroup or a job
/// (`kill 0`, systemd, Slurm) reaches them in an order of its own, and expr may see its step
/// end first.
pub fn came_with(code: i64) -> bool {
    let stopping = |n: i64| HANDLED.iter().any(|s| i64::from(*s) == n);
    if !(stopping(-code) || stopping(code - 128) || code == 255) {
        return false;
    }
    let end = std::time::Instant::now() + std::time::Duration::from_millis(200);
    while count() == 0 {
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    true
}

/// The exit code of a run the signals stopped: 130 for Ctrl-C and SIGTERM (as documented),
/// 128 + n for SIGHUP (129) and SIGQUIT (131).
pub fn exit_code() -> i32 {
    match FIRST.load(Ordering::SeqCst) {
        libc::SIGHUP => crate::util::exit_codes::HANGUP,
        libc::SIGQUIT => crate::util::exit_codes::QUIT,
        _ => crate::util::exit_codes::INTERRUPTED,
    }
}

/// The first signal, as the run says it stopped (`SIGHUP: the terminal closed`).
pub fn first_name() -> Option<&'static str> {
    match FIRST.load(Ordering::SeqCst) {
        libc::SIGINT => Some("SIGINT"),
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGHUP => Some("SIGHUP (the terminal or ssh session closed)"),
        libc::SIGQUIT => Some("SIGQUIT"),
        _ => None,
    }
}
