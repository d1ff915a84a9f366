//! A step on a node of a Slurm allocation, as `plan` prints it, commands.sh runs it and `expr
//! run` starts it: `srun --jobid J --overlap` on the node, from the step's directory.

use crate::model::NodePlace;

/// The srun line that runs a step's command on its node, from its directory.
pub fn srun_argv(p: &NodePlace, step: &str, cwd: &str, line: &str) -> Vec<String> {
    let mut v: Vec<String> = vec!["srun".into()];
    match &p.job {
        Some(job) => v.extend([
            format!("--jobid={job}"),
            "--overlap".into(),
            // the step's name is expr's step id: teardown finds its step id by it, and
            // `sacct -j JOB` shows which step was which
            format!("--job-name={step}"),
            format!("--nodelist={}", p.nodename.as_deref().unwrap_or("?")),
        ]),
        // a job of its own (the setup of an array run)
        None => v.extend(p.new_job.iter().cloned()),
    }
    v.extend([
        "--nodes=1".into(),
        "--ntasks=1".into(),
        format!(
            "--chdir={}",
            std::env::current_dir()
                .map(|d| d.join(cwd).display().to_string())
                .unwrap_or_else(|_| cwd.to_string())
        ),
        "--quiet".into(),
    ]);
    v.extend(p.launch_args.iter().cloned());
    v.extend(["bash".into(), "-c".into(), line.into()]);
    v
}
