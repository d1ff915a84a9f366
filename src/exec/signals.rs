//! SIGINT / SIGTERM: the first asks the runner to stop launching and tear down; the second asks
//! it to kill at once. The handler only counts; the runner polls.

use std::sync::atomic::{AtomicUsize, Ordering};

static SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Install the handlers (idempotent).
pub fn install() {
    // SAFETY: the handler only touches an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// How many signals arrived.
pub fn count() -> usize {
    SIGNALS.load(Ordering::SeqCst)
}
