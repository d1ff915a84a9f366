//! Progress: an indicatif bar over points on a terminal, plain lines otherwise. Without a
//! terminal (CI, a log file) a point says when it starts, and every [`every`] while it runs,
//! so a long point is never silence.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// How often a running point is said without a terminal: 30 s (EXPR_PROGRESS_EVERY_S, for
/// tests and impatient logs).
fn every() -> Duration {
    std::env::var("EXPR_PROGRESS_EVERY_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(30), Duration::from_secs_f64)
}

/// The point running now and what the finished ones took: the heartbeat's and the ETA's.
#[derive(Default)]
struct Now {
    /// `[3/10] b_n4_r0` and when it started.
    point: Option<(String, Instant)>,
    /// The step running on each host.
    step: String,
    /// When the running point was last said (the heartbeat).
    said: Option<Instant>,
    /// Points that ran to their end, and their seconds in all.
    ran: u32,
    ran_s: f64,
}

impl Now {
    /// Seconds left: the finished points' mean for each point not yet ended, less what the
    /// running one has had; none before a point has ended.
    fn eta(&self, left: u64) -> Option<f64> {
        if self.ran == 0 {
            return None;
        }
        let mean = self.ran_s / f64::from(self.ran);
        let running = self.point.as_ref().map_or(0.0, |(_, t)| {
            t.elapsed().as_secs_f64().min(mean) // a slow point: no negative share
        });
        Some((mean * left as f64 - running).max(0.0))
    }
}

pub struct Progress {
    bar: Option<ProgressBar>,
    /// `--quiet`: only warnings and errors are lines (the run's last line is the caller's).
    quiet: bool,
    now: Arc<Mutex<Now>>,
    /// The adaptive groups (bench, lane, sweep point) whose repeats left are said skipped: one
    /// line a group, not one a repeat.
    pub(super) decided: std::collections::HashSet<String>,
}

/// `1h02m`, `3m05s`, `42s`.
pub fn duration_text(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

impl Progress {
    pub fn new(points: u64, verbose: bool, quiet: bool) -> Self {
        let now = Arc::new(Mutex::new(Now::default()));
        let bar = (std::io::stderr().is_terminal() && !verbose && !quiet).then(|| {
            let b = ProgressBar::new(points);
            let eta_now = now.clone();
            b.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} points  {elapsed_precise} (ETA {left})  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key(
                    "left",
                    move |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let left = st.len().unwrap_or(0).saturating_sub(st.pos());
                        let text = eta_now
                            .lock()
                            .ok()
                            .and_then(|n| n.eta(left))
                            .map_or_else(|| "—".to_string(), duration_text);
                        let _ = w.write_str(&text);
                    },
                ),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        if bar.is_none() && !quiet {
            heartbeat(Arc::downgrade(&now), every());
        }
        Progress {
            bar,
            quiet,
            now,
            decided: Default::default(),
        }
    }

    /// The step running now, per host.
    pub fn status(&self, msg: &str) {
        if let Ok(mut n) = self.now.lock() {
            n.step = msg.to_string();
        }
        if let Some(b) = &self.bar {
            b.set_message(msg.to_string());
        }
    }

    /// A point starts: said at once without a terminal (the bar shows it on one).
    pub fn point_started(&self, label: &str) {
        if let Ok(mut n) = self.now.lock() {
            n.point = Some((label.to_string(), Instant::now()));
            n.said = Some(Instant::now());
            n.step.clear();
        }
        if self.bar.is_none() {
            self.line(&format!("{label} starts"));
        }
    }

    /// The running point ended (`ran`: it ran, and its time counts toward the ETA).
    pub fn point_ended(&self, ran: bool) {
        if let Ok(mut n) = self.now.lock() {
            if let Some((_, t)) = n.point.take() {
                if ran {
                    n.ran += 1;
                    n.ran_s += t.elapsed().as_secs_f64();
                }
            }
        }
    }

    /// [`Progress::line`] for another thread (a signal's watch): it prints above the bar too.
    pub fn printer(&self) -> Box<dyn Fn(&str) + Send> {
        let (bar, quiet) = (self.bar.clone(), self.quiet);
        Box::new(move |msg: &str| match &bar {
            _ if quiet => {}
            Some(b) => b.println(msg),
            None => {
                let _ = writeln!(std::io::stderr(), "{msg}");
            }
        })
    }

    /// A line that stays (finished points, warnings).
    pub fn line(&self, msg: &str) {
        // under --quiet, what decides a failing exit is still said: errors, warnings, and an
        // expectation not met (exit 6 said nothing else)
        if self.quiet
            && !(msg.starts_with("error")
                || msg.starts_with("warning")
                || msg.starts_with("expect not met"))
        {
            return;
        }
        match &self.bar {
            Some(b) => b.println(msg),
            None => {
                let _ = writeln!(std::io::stderr(), "{msg}");
            }
        }
    }

    pub fn inc(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Without a terminal: a line for the running point every `every` (`[3/10] b_n4_r0 running
/// 1m30s: [local] run1-b_n4_r0`), until the run's progress is gone.
fn heartbeat(now: Weak<Mutex<Now>>, every: Duration) {
    let tick = (every / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    let _ = std::thread::Builder::new()
        .name("progress".into())
        .stack_size(64 << 10)
        .spawn(move || loop {
            std::thread::sleep(tick);
            let Some(now) = now.upgrade() else { return };
            let Ok(mut n) = now.lock() else { return };
            let due = n.said.is_some_and(|t| t.elapsed() >= every);
            if let (true, Some((label, started))) = (due, &n.point) {
                let line = format!(
                    "{label} running {}{}",
                    duration_text(started.elapsed().as_secs_f64()),
                    if n.step.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", n.step)
                    }
                );
                let _ = writeln!(std::io::stderr(), "{line}");
                n.said = Some(Instant::now());
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_a_person_says_them() {
        assert_eq!(duration_text(0.4), "0s");
        assert_eq!(duration_text(42.0), "42s");
        assert_eq!(duration_text(185.0), "3m05s");
        assert_eq!(duration_text(3725.0), "1h02m");
    }

    #[test]
    fn no_eta_before_a_point_ended_and_the_running_point_counts_down() {
        let mut n = Now::default();
        assert_eq!(n.eta(5), None);
        n.ran = 2;
        n.ran_s = 20.0;
        assert_eq!(n.eta(3), Some(30.0));
        // 4 s into the next point: 26 s left, never below 0
        n.point = Some(("p".into(), Instant::now() - Duration::from_secs(4)));
        let e = n.eta(3).unwrap();
        assert!((e - 26.0).abs() < 0.5, "{e}");
        n.point = Some(("p".into(), Instant::now() - Duration::from_secs(60)));
        assert!((n.eta(1).unwrap() - 0.0).abs() < 1e-9);
    }
}
