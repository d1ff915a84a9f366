//! `mode="array"`: what a run's array needs, and what `plan --format sbatch` shows.

use crate::exec::allocator::Allocator;

/// `mode="array"`: what the array needs, after checking that every point runs on its nodes and
/// that the tasks, planning the experiment's resolved copy, plan the same points. None when the
/// experiment has no array.
pub(super) fn array_run(
    exp: &mut crate::model::Experiment,
    plan: &crate::plan::Plan,
    allocator: &dyn Allocator,
    file: &std::path::Path,
    set: &[String],
    only: &[String],
) -> Result<Option<crate::exec::run::array::ArrayRun>, String> {
    let Some(job) = allocator.array(exp, plan)? else {
        return Ok(None);
    };
    let a = &job.alloc;
    // the tasks plan the same file with the same --set and --only; the file's content hash
    // makes a task refuse a file edited since the submission
    if file.as_os_str() == "-" {
        return Err(format!(
            "`{}` is an array (mode=\"array\"): its tasks read the experiment again, so it must be a file, not standard input",
            a.name
        ));
    }
    let text = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let cwd = std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?;
    let expr = std::env::current_exe()
        .map_err(|e| format!("the expr binary's path: {e}"))?
        .display()
        .to_string();
    Ok(Some(crate::exec::run::array::ArrayRun {
        alloc: a.clone(),
        expr,
        cwd: cwd.display().to_string(),
        job_name: job.job_name,
        comment: job.comment,
        file: cwd.join(file).display().to_string(),
        file_hash: crate::exec::run::array::file_hash(&text),
        sets: set.to_vec(),
        only: only.to_vec(),
        exclusive: plan
            .points
            .iter()
            .flat_map(|p| p.steps.iter())
            .any(|s| matches!(s.ready.as_deref(), Some(crate::plan::Ready::Tcp { .. }))),
        // `expr run`'s default; a run sets its own
        grace: 5,
        noise: None,
    }))
}

/// `plan --format sbatch`: the array's batch script, or the allocation `expr run` makes.
pub(super) fn sbatch_text(
    exp: &mut crate::model::Experiment,
    plan: &crate::plan::Plan,
    file: &std::path::Path,
    set: &[String],
    only: &[String],
) -> Result<String, String> {
    let Some(allocator) = crate::exec::allocator::for_experiment(exp, &plan.output) else {
        return Err("no host is on a Slurm allocation: there is nothing to submit (`--set slurm.NAME.nodes=1 --set host.HOST.slurm=NAME` moves a host onto one)".into());
    };
    if let Some(r) = array_run(exp, plan, allocator.as_ref(), file, set, only)? {
        let ids: Vec<&str> = plan.points.iter().map(|p| p.run_id.as_str()).collect();
        return Ok(crate::exec::run::array::script(
            &r,
            &plan.output,
            &plan.started,
            &ids,
        ));
    }
    Ok(allocator.requests())
}
