//! Progress: an indicatif bar over points on a terminal, plain lines otherwise.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    /// `--quiet`: only warnings and errors are lines (the run's last line is the caller's).
    quiet: bool,
}

impl Progress {
    pub fn new(points: u64, verbose: bool, quiet: bool) -> Self {
        let bar = (std::io::stderr().is_terminal() && !verbose && !quiet).then(|| {
            let b = ProgressBar::new(points);
            b.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} points  {elapsed_precise} (ETA {eta})  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Progress { bar, quiet }
    }

    /// The step running now, per host.
    pub fn status(&self, msg: &str) {
        if let Some(b) = &self.bar {
            b.set_message(msg.to_string());
        }
    }

    /// A line that stays (finished points, warnings).
    pub fn line(&self, msg: &str) {
        if self.quiet && !(msg.starts_with("error") || msg.starts_with("warning")) {
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
