//! `mode="array"`: what a run's array needs, and what `plan --format sbatch` shows.

/// `mode="array"`: what the array needs, after checking that every point runs on its nodes and
/// that the tasks, planning the experiment's resolved copy, plan the same points.
pub(super) fn array_run(
    exp: &mut crate::model::Experiment,
    plan: &crate::plan::Plan,
    a: &crate::model::Allocation,
    file: &std::path::Path,
    set: &[String],
    only: &[String],
) -> Result<crate::exec::array::ArrayRun, String> {
    let off: Vec<String> = plan
        .points
        .iter()
        .flat_map(|p| p.steps.iter())
        .chain(plan.setup.iter())
        .filter(|s| s.phase != crate::plan::Phase::Collect)
        .filter(|s| {
            exp.host(&s.host)
                .and_then(|h| h.slurm.as_ref())
                .is_none_or(|p| p.alloc != a.name)
        })
        .map(|s| format!("`{}` on `{}`", s.id, s.host))
        .take(3)
        .collect();
    if !off.is_empty() {
        return Err(format!(
            "`{}` is an array (mode=\"array\"): every step of a point runs in its task, on its nodes, but {} run(s) elsewhere; put those hosts on `{}` (`--set host.NAME.slurm={}`) or use mode=\"allocation\"",
            a.name,
            off.join(", "),
            a.name,
            a.name
        ));
    }
    let name = format!("expr-{}", exp.name);
    let comment = crate::exec::slurm::comment(&plan.output);
    let new_job = crate::exec::slurm::job_args(a, &name, &comment);
    for h in &mut exp.hosts {
        if let Some(p) = h.slurm.as_mut().filter(|p| p.alloc == a.name) {
            p.new_job = new_job.clone();
        }
    }
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
    Ok(crate::exec::array::ArrayRun {
        alloc: a.clone(),
        expr,
        cwd: cwd.display().to_string(),
        job_name: name,
        comment,
        file: cwd.join(file).display().to_string(),
        file_hash: crate::exec::array::file_hash(&text),
        sets: set.to_vec(),
        only: only.to_vec(),
        exclusive: plan
            .points
            .iter()
            .flat_map(|p| p.steps.iter())
            .any(|s| matches!(s.ready, Some(crate::plan::Ready::Tcp { .. }))),
        // `expr run`'s default; a run sets its own
        grace: 5,
    })
}

/// `plan --format sbatch`: the array's batch script, or the allocation `expr run` makes.
pub(super) fn sbatch_text(
    exp: &mut crate::model::Experiment,
    plan: &crate::plan::Plan,
    file: &std::path::Path,
    set: &[String],
    only: &[String],
) -> Result<String, String> {
    let used: Vec<crate::model::Allocation> = exp
        .allocations
        .iter()
        .filter(|a| exp.has_hosts_on(&a.name))
        .cloned()
        .collect();
    if used.is_empty() {
        return Err("no host is on a Slurm allocation: there is nothing to submit (`--set slurm.NAME.nodes=1 --set host.HOST.slurm=NAME` moves a host onto one)".into());
    }
    if let Some(a) = used.iter().find(|a| a.array) {
        let r = array_run(exp, plan, a, file, set, only)?;
        let ids: Vec<&str> = plan.points.iter().map(|p| p.run_id.as_str()).collect();
        return Ok(crate::exec::array::script(
            &r,
            &plan.output,
            &plan.started,
            &ids,
        ));
    }
    let comment = crate::exec::slurm::comment(&plan.output);
    let mut o = String::from("# mode=\"allocation\": `expr run` submits no batch script. It makes each allocation\n# with salloc, runs every step on its node as\n#   srun --jobid=JOB --overlap --nodes=1 --ntasks=1 --nodelist=NODE --chdir=DIR --quiet bash -c LINE\n# (the lines: `expr plan --format sh`), and cancels the job on every exit.\n");
    for a in &used {
        let args = crate::exec::slurm::salloc_args(a, &format!("expr-{}", exp.name), &comment);
        o.push_str(&format!("salloc {}\n", crate::shell::join(&args)));
    }
    Ok(o)
}
