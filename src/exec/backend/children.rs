//! What the kernel says of a process (/proc/PID/stat): its state, parent, group, flags and
//! start; and which of this process's children it started itself, the others being processes
//! it adopted as their subreaper ([`adopt`], `crate::exec::backend::escape`).

use std::collections::HashMap;
use std::sync::Mutex;

/// A process's start time in clock ticks after boot (field 22 of /proc/PID/stat).
pub fn start_time(pid: i64) -> Option<u64> {
    Stat::read(pid).map(|s| s.start).filter(|s| *s != u64::MAX)
}

/// What expr reads of /proc/PID/stat: a process's state, parent, group, flags and start.
pub struct Stat {
    pub state: char,
    /// The parent's pid and the process group (0: not read).
    pub ppid: i32,
    pub pgrp: i32,
    pub flags: u64,
    /// Clock ticks since boot when the process started (`u64::MAX`: not read).
    pub start: u64,
}

impl Stat {
    /// The stat of process `pid`, if it is there.
    pub fn read(pid: i64) -> Option<Stat> {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .map(|s| Stat::of(&s))
    }

    pub fn of(stat: &str) -> Stat {
        // the fields after the command name in parentheses: state is field 3, ppid 4, pgrp 5,
        // flags 9, starttime 22 (proc(5))
        let f: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        Stat {
            state: f.first().and_then(|s| s.chars().next()).unwrap_or('X'),
            ppid: f.get(1).and_then(|s| s.parse().ok()).unwrap_or(0),
            pgrp: f.get(2).and_then(|s| s.parse().ok()).unwrap_or(0),
            flags: f.get(6).and_then(|s| s.parse().ok()).unwrap_or(0),
            start: f.get(19).and_then(|s| s.parse().ok()).unwrap_or(u64::MAX),
        }
    }

    /// A kernel thread (PF_KTHREAD) or a zombie: an empty environment that stays so.
    pub fn quiet(&self) -> bool {
        const PF_KTHREAD: u64 = 0x0020_0000;
        matches!(self.state, 'Z' | 'X') || self.flags & PF_KTHREAD != 0
    }
}

/// The children this process started itself: pid → start (clock ticks after boot). A pid
/// is used again only after its process was reaped, so a later child of that pid replaces it.
static OWN: Mutex<Option<HashMap<i32, u64>>> = Mutex::new(None);

/// The children this process had before it started any (jobs of a script that `exec`'d it):
/// counted as its own, so never taken for a step's leftover, but no group of theirs is one
/// the run started.
static BEFORE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Count `pid`, a child this process had before it started any, as its own (not the run's).
pub fn had_before(pid: i32, start: u64) {
    own_children()
        .get_or_insert_with(HashMap::new)
        .insert(pid, start);
    BEFORE.lock().unwrap_or_else(|p| p.into_inner()).push(pid);
}

/// Whether `pgrp` is the process group of a child this process had before it started any (a
/// job of the script that `exec`'d it): what is still in it is that job's, not the run's.
pub fn group_had_before(pgrp: i32) -> bool {
    BEFORE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&pgrp)
}

pub fn own_children() -> std::sync::MutexGuard<'static, Option<HashMap<i32, u64>>> {
    OWN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Start a child of this process with `spawn` and count it as one it started itself (`pids`
/// names it): a look for adopted processes, which holds the same lock, never finds it
/// between its start and its naming.
pub fn own<T, E>(
    spawn: impl FnOnce() -> Result<T, E>,
    pids: impl Fn(&T) -> Vec<u32>,
) -> Result<T, E> {
    let mut own = own_children();
    let r = spawn();
    if let Ok(t) = &r {
        let own = own.get_or_insert_with(HashMap::new);
        for p in pids(t) {
            let start = start_time(i64::from(p)).unwrap_or(u64::MAX);
            own.insert(p as i32, start);
        }
    }
    r
}

/// Make this process the child subreaper of what it starts (Linux): a process whose parent
/// ends becomes this process's child. Whether it is one now.
pub fn adopt() -> bool {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes a plain integer
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// No longer the subreaper ([`adopt`]): what loses its parent goes to init again.
pub fn adopt_no_more() {
    // SAFETY: as in `adopt`
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) };
}
