//! A step on a node of a Slurm allocation, as `plan` prints it, commands.sh runs it and `expr
//! run` starts it: `srun --jobid J --overlap` on the node, from the step's directory.

use crate::kind_api::step::RESULT_DIR_VAR;
use crate::model::{Allocation, Host, NodePlace};
use crate::util::shell;

/// Where a Slurm step writes its id (`JOB.STEP`), under the result directory: the journal's
/// step event records it.
pub const STEP_IDS: &str = "runtime/slurm-steps";

/// What stands for a node's job until `expr run` has the allocation (`slurm:ALLOC:job`); its
/// name is `slurm:ALLOC:N:node` and its address `slurm:ALLOC:N`. commands.sh reads them as the
/// variables its own `salloc` sets ([`script_var`]).
pub fn job_of(p: &NodePlace) -> String {
    p.job
        .clone()
        .unwrap_or_else(|| format!("slurm:{}:job", p.alloc))
}

/// The node's name, or what stands for it ([`job_of`]).
pub fn node_of(p: &NodePlace) -> String {
    p.nodename
        .clone()
        .unwrap_or_else(|| format!("slurm:{}:{}:node", p.alloc, p.node))
}

/// The line a step runs on its node: it first writes its id under the result directory (not
/// into its log, which collectors read).
pub fn step_line(step: &str, host: &str, line: &str) -> String {
    format!(
        "{{ echo \"$SLURM_JOB_ID.$SLURM_STEP_ID\" > \"${{{RESULT_DIR_VAR}}}\"/{STEP_IDS}/{}; }} 2>/dev/null; {line}",
        shell::quote(&format!("{step}-{host}"))
    )
}

/// A step's command on `host` as `plan` and commands.sh print it: on a node of an allocation,
/// the `srun` line `expr run` starts ([`srun_argv`] of [`step_line`]); None elsewhere (and on
/// an array's node, where the task runs the step itself).
pub fn host_line(host: &Host, step: &str, cwd: &str, line: &str, array: bool) -> Option<String> {
    let p = host.place.as_ref().filter(|p| !p.here && !array)?;
    Some(shell::join(&srun_argv(
        p,
        step,
        cwd,
        &step_line(step, &host.name, line),
    )))
}

/// The srun line that runs a step's command on its node, from its directory.
pub fn srun_argv(p: &NodePlace, step: &str, cwd: &str, line: &str) -> Vec<String> {
    let mut v: Vec<String> = vec!["srun".into()];
    match (&p.job, p.new_job.is_empty()) {
        // a job of its own (the setup of an array run)
        (None, false) => v.extend(p.new_job.iter().cloned()),
        // the run's allocation (or what stands for it in a plan)
        _ => v.extend([
            format!("--jobid={}", job_of(p)),
            "--overlap".into(),
            // the step's name is expr's step id: teardown finds its step id by it, and
            // `sacct -j JOB` shows which step was which
            format!("--job-name={step}"),
            format!("--nodelist={}", node_of(p)),
        ]),
    }
    let dir = std::env::current_dir()
        .map(|d| match cwd {
            "." => d,
            _ => d.join(cwd),
        })
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| cwd.to_string());
    v.extend([
        "--nodes=1".into(),
        "--ntasks=1".into(),
        format!("--chdir={dir}"),
        "--quiet".into(),
    ]);
    v.extend(p.launch_args.iter().cloned());
    // slurmstepd runs a step whose --chdir is not there in /tmp (and only logs it): the
    // step's own `cd` fails it instead
    v.extend(["bash".into(), "-c".into(), shell::cd_then(&dir, line)]);
    v
}

/// The name of a run's jobs (with their comment, how expr knows them).
pub fn job_name(experiment: &str) -> String {
    format!("expr-{experiment}")
}

/// The `salloc` command line of an allocation.
pub fn salloc_args(a: &Allocation, name: &str, comment: &str) -> Vec<String> {
    let mut v: Vec<String> = vec!["--no-shell".into(), format!("--nodes={}", a.nodes)];
    v.extend(job_args(a, name, comment));
    v
}

/// What every job of the run asks for besides its node count: its name and comment (how expr
/// knows its own jobs), partition, account, qos, time limit, constraint, GPUs and the
/// allocation's extra arguments.
pub fn job_args(a: &Allocation, name: &str, comment: &str) -> Vec<String> {
    let mut v: Vec<String> = vec![format!("--job-name={name}"), format!("--comment={comment}")];
    let opt = |v: &mut Vec<String>, flag: &str, x: &Option<String>| {
        if let Some(x) = x {
            v.push(format!("--{flag}={x}"));
        }
    };
    opt(&mut v, "partition", &a.partition);
    opt(&mut v, "account", &a.account);
    opt(&mut v, "qos", &a.qos);
    opt(&mut v, "time", &a.time);
    opt(&mut v, "constraint", &a.constraint);
    if let Some(g) = a.gpus_per_node {
        v.push(format!("--gpus-per-node={g}"));
    }
    v.extend(a.alloc_args.iter().cloned());
    v
}

/// Why an array run cannot be (`expr run` refuses it, `check` says it): every step of a point
/// runs in its task, on its nodes, so a step on a host off the array cannot.
pub fn array_refusal(
    exp: &crate::model::Experiment,
    plan: &crate::plan::Plan,
    a: &Allocation,
) -> Result<(), String> {
    let off: Vec<String> = plan
        .points
        .iter()
        .flat_map(|p| p.steps.iter())
        .chain(plan.setup.iter())
        .filter(|s| s.phase != crate::plan::Phase::Collect)
        .filter(|s| {
            exp.host(&s.host)
                .and_then(|h| h.place.as_ref())
                .is_none_or(|p| p.alloc != a.name)
        })
        .map(|s| format!("`{}` on `{}`", s.id, s.host))
        .take(3)
        .collect();
    if off.is_empty() {
        return Ok(());
    }
    Err(format!(
        "`{}` is an array (mode=\"array\"): every step of a point runs in its task, on its nodes, but {} run(s) elsewhere; put those hosts on `{}` (`--set host.NAME.slurm={}`) or use mode=\"allocation\"",
        a.name,
        off.join(", "),
        a.name,
        a.name
    ))
}
