//! `expr __task`: one point of an array run, inside its Slurm array task.

use std::io::Write;

use crate::parse::load;
use crate::parse::validate::Options;
use crate::util::exit_codes;

use super::args::TaskArgs;
use super::diags::print_diags;
use super::plan::plan_of;

/// Inside an array task: plan the run's experiment file again (with the run's --set and
/// --only), keep this task's point and run it.
pub fn task(t: &TaskArgs) -> i32 {
    let (output, run_id) = (&t.output, &t.run_id);
    let code = task_inner(t);
    // a task that could not run its point says why in its fragment, which the run merges
    // (its task output alone would hide the reason)
    if let Err((code, why)) = code {
        let _ = writeln!(std::io::stderr(), "error: {why}");
        let f = crate::exec::run::array::fragment(std::path::Path::new(output), run_id);
        if !f.exists() {
            if let Ok(mut j) = crate::results::journal::Journal::open(&f) {
                use crate::results::event::{End, Point, RunEvent};
                j.emit(&RunEvent::Point(Point {
                    run_id: Some(run_id.clone()),
                    status: Some("failed".into()),
                    exit_code: Some(Some(code.into())),
                    reason: Some(format!(
                        "the array task could not run the point: {}",
                        why.lines().next().unwrap_or("")
                    )),
                    ..Default::default()
                }));
                j.emit(&RunEvent::End(End {
                    exit_code: Some(code.into()),
                    survivors: None,
                }));
            }
        }
        return code;
    }
    code.unwrap_or(exit_codes::INTERNAL)
}

fn task_inner(t: &TaskArgs) -> Result<i32, (i32, String)> {
    let (experiment, set, only) = (t.experiment.as_path(), &t.set, &t.only);
    let (file_hash, output, started, run_id) = (&t.file_hash, &t.output, &t.started, &t.run_id);
    match std::fs::read(experiment) {
        Ok(t) if crate::exec::run::array::file_hash(&t) == *file_hash => {}
        Ok(_) => {
            return Err((
                exit_codes::INVALID,
                format!(
                    "{} changed since the array was submitted; this task does not run another experiment (resume the run to plan it again)",
                    experiment.display()
                ),
            ));
        }
        Err(e) => {
            return Err((
                exit_codes::INVALID,
                format!("{}: {e}", experiment.display()),
            ));
        }
    }
    let loaded = load::load_file_with(
        experiment,
        &Options {
            allow_large: true,
            max_input_mib: None,
        },
        set,
    );
    print_diags(&loaded.diags);
    let bad = loaded.has_errors();
    let Some(mut exp) = loaded.experiment.filter(|_| !bad) else {
        return Err((
            exit_codes::INVALID,
            format!(
                "{} does not load (its diagnostics are in the task output)",
                experiment.display()
            ),
        ));
    };
    let placed = match crate::exec::allocator::place_task(&mut exp) {
        Ok(v) => v,
        Err(e) => return Err((exit_codes::PREFLIGHT, e)),
    };
    let Ok(started) = chrono::DateTime::parse_from_rfc3339(started) else {
        return Err((
            exit_codes::INVALID,
            format!("--started `{started}` is not RFC 3339"),
        ));
    };
    let Ok((exp, mut plan)) = plan_of(
        exp,
        experiment,
        only,
        Some(output),
        started.with_timezone(&chrono::Local),
    ) else {
        return Err((
            exit_codes::INVALID,
            "the experiment does not plan (the diagnostics are in the task output)".into(),
        ));
    };
    let points_of = plan.points.len();
    plan.points.retain(|p| p.run_id == *run_id);
    plan.by_id = Default::default();
    plan.setup.clear();
    if plan.points.is_empty() {
        return Err((
            exit_codes::INVALID,
            format!("the experiment has no point `{run_id}`"),
        ));
    }
    let fragment = crate::exec::run::array::fragment(std::path::Path::new(output), run_id);
    let opts = crate::exec::run::runner::Options {
        grace: t.grace,
        task_journal: Some(fragment),
        points_of: Some(points_of),
        noise: t.noise.clone(),
        ..Default::default()
    };
    match crate::exec::run::runner::Runner::new(&exp, &plan, opts) {
        Ok(mut r) => {
            r.note_task(placed);
            Ok(r.run(&mut crate::results::NoFinish).code)
        }
        Err(e) => Err((exit_codes::INVALID, e)),
    }
}
