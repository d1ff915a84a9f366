//! What the kernel says of a process (/proc/PID/stat): its state, flags and start.

/// A process's start time in clock ticks after boot (field 22 of /proc/PID/stat).
pub fn start_time(pid: i64) -> Option<u64> {
    Stat::read(pid).map(|s| s.start).filter(|s| *s != u64::MAX)
}

/// What expr reads of /proc/PID/stat: a process's state, flags and start.
pub struct Stat {
    pub state: char,
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
        // the fields after the command name in parentheses: state is field 3, flags 9,
        // starttime 22 (proc(5))
        let f: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        Stat {
            state: f.first().and_then(|s| s.chars().next()).unwrap_or('X'),
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
