//! The setup steps: each host's build and correctness tests, once per (host, repo), before
//! any point; a failure leaves every point not run (but those a resumed run keeps).

use std::collections::HashSet;

use crate::exec::state::{tail, Recorder, Skip};
use crate::plan::Phase;
use crate::results::event::{self, RunEvent};
use crate::results::reason::Reason;
use crate::util::exit_codes;
use crate::util::lang::Lang;

impl Recorder<'_> {
    /// A setup step that runs again (`--resume`): the earlier run's log moves to
    /// `runtime/earlier/setup/`, so this run's log (perhaps cut short by an interrupt) does not
    /// replace it.
    fn set_aside_setup_log(&mut self, s: &crate::plan::Step) {
        let log = self.log_path(s);
        let (Ok(m), Some(name)) = (std::fs::metadata(&log), log.file_name()) else {
            return;
        };
        if !m.is_file() {
            return;
        }
        let aside = self.dir.join("runtime/earlier/setup");
        let moved =
            std::fs::create_dir_all(&aside).and_then(|()| std::fs::rename(&log, aside.join(name)));
        if let Err(e) = moved {
            self.progress.line(&format!(
                "warning: cannot set aside the earlier {} in {}: {e}",
                log.display(),
                aside.display()
            ));
        }
    }

    /// Build and correctness tests, once per host and repo. Some(exit code) when one failed
    /// (every point but those a resumed run `kept` is then recorded as not run).
    pub(in crate::exec) fn run_setup(
        &mut self,
        skip: Skip,
        array: bool,
        kept: &HashSet<String>,
    ) -> Option<i32> {
        for s in &self.plan.setup {
            if let Some(stop) = self.interrupted() {
                self.progress.line(&format!(
                    "{stop}: not starting {} `{}` on `{}`",
                    s.phase.name(),
                    s.id,
                    s.host
                ));
                return Some(crate::exec::signals::exit_code());
            }
            if (s.phase == Phase::Build && skip.build) || (s.phase == Phase::Test && skip.tests) {
                self.journal.emit(&RunEvent::Step(event::Step {
                    step: s.id.clone(),
                    host: s.host.clone(),
                    phase: Some(s.phase.name().to_string()),
                    status: Some("skipped".into()),
                    ..Default::default()
                }));
                continue;
            }
            self.progress
                .status(&format!("{} {} on {}", s.phase.name(), s.id, s.host));
            self.set_aside_setup_log(s);
            let (status, code) = self.run_sync(s, None);
            if status != "ok" {
                let log = self.log_path(s);
                let cause = Reason::SetupFailed {
                    test: s.phase == Phase::Test,
                    step: s.id.clone(),
                    host: s.host.clone(),
                    status: status.clone(),
                    code: i64::from(code),
                    array,
                    log: log.display().to_string(),
                };
                let msg = cause.render(Lang::En);
                // a Ctrl-C is no error (helper 88: "error: … interrupted (exit 130)")
                let error = if status == "interrupted" {
                    ""
                } else {
                    "error: "
                };
                self.progress
                    .line(&format!("{error}{msg}\n{}", tail(&log, 15)));
                // a resumed run keeps the points that succeeded before with the same command
                // and code: the build that failed now measured none of them
                let run_ids: Vec<String> = self
                    .plan
                    .points
                    .iter()
                    .filter(|p| !kept.contains(&p.run_id))
                    .map(|p| p.run_id.clone())
                    .collect();
                // interrupted (a Ctrl-C during the build): the points are not run, as after a
                // Ctrl-C between points (`interrupted`, "not run: interrupted") — a row each,
                // none saying they failed
                if !run_ids.is_empty() {
                    let (status, reason, cause) = if self.interrupted().is_some() {
                        let why = Reason::RunInterrupted;
                        ("interrupted", why.render(Lang::En), why)
                    } else {
                        ("failed", msg, cause)
                    };
                    self.publish(RunEvent::NotRun(event::NotRun {
                        run_ids,
                        status: status.into(),
                        reason,
                        cause: Some(cause),
                    }));
                }
                return Some(if self.interrupted().is_some() {
                    crate::exec::signals::exit_code()
                } else {
                    exit_codes::POINT_FAILED
                });
            }
        }
        None
    }
}
