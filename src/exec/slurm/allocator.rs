//! Slurm as the run's `Allocator`: `salloc` for each allocation a host is on before the run,
//! `scancel` after it; an array's tasks are submitted by the runner (`exec::array`).

use std::io::Write;

use super::{allocate, cancel, comment, jobs_with_comment, place, Granted};
use crate::exec::allocator::api::{Allocator, ArrayJob};
use crate::model::{Allocation, Experiment};
use crate::plan::srun::{job_args, salloc_args};
use crate::plan::Plan;

/// The allocations of an experiment that hosts are on, and the jobs got for them.
pub struct Slurm {
    /// Allocations some host is on, in the file's order (arrays among them).
    used: Vec<Allocation>,
    /// The jobs' name: `expr-EXPERIMENT`.
    job_name: String,
    /// The run's result directory: the jobs' comment says it.
    output: String,
    granted: Vec<Granted>,
}

impl Slurm {
    /// None when no host is on an allocation.
    pub fn new(exp: &Experiment, output: &str) -> Option<Slurm> {
        let used = exp.used_allocations();
        (!used.is_empty()).then(|| Slurm {
            used,
            job_name: crate::plan::srun::job_name(&exp.name),
            output: output.to_string(),
            granted: Vec::new(),
        })
    }
}

impl Allocator for Slurm {
    fn array(&self, exp: &mut Experiment, plan: &Plan) -> Result<Option<ArrayJob>, String> {
        let Some(a) = self.used.iter().find(|a| a.array) else {
            return Ok(None);
        };
        crate::plan::srun::array_refusal(exp, plan, a)?;
        let name = self.job_name.clone();
        let comment = comment(&self.output);
        let new_job = job_args(a, &name, &comment);
        for h in &mut exp.hosts {
            if let Some(p) = h.place.as_mut().filter(|p| p.alloc == a.name) {
                p.new_job = new_job.clone();
            }
        }
        Ok(Some(ArrayJob {
            alloc: a.clone(),
            job_name: name,
            comment,
        }))
    }

    fn acquire(&mut self, interrupted: &dyn Fn() -> bool) -> Result<bool, String> {
        let allocs: Vec<&Allocation> = self.used.iter().filter(|a| !a.array).collect();
        if allocs.is_empty() {
            return Ok(false);
        }
        let comment = comment(&self.output);
        for a in allocs {
            let _ = writeln!(
                std::io::stderr(),
                "expr: allocating `{}` ({} node(s)) with salloc",
                crate::plan::render::comment(&a.name),
                a.nodes
            );
            crate::exec::signals::install();
            match allocate(a, &self.job_name, &comment, interrupted) {
                Ok(g) => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "expr: `{}` is job {}: {}",
                        crate::plan::render::comment(&a.name),
                        g.job,
                        g.nodes
                            .iter()
                            .map(|(n, ip)| format!("{n} ({ip})"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    self.granted.push(g);
                }
                Err(e) => {
                    for g in self.granted.drain(..) {
                        let _ = cancel(&g.job);
                    }
                    return Err(e);
                }
            }
        }
        Ok(true)
    }

    fn place(&self, exp: &mut Experiment) {
        place(exp, &self.granted);
    }

    fn release(&mut self) -> Vec<String> {
        self.granted
            .drain(..)
            .map(|g| match cancel(&g.job) {
                Ok(()) => format!("expr: cancelled job {} (`{}`)", g.job, g.alloc),
                Err(e) => format!("warning: {e}"),
            })
            .collect()
    }

    fn release_queued(&self) -> Vec<String> {
        if !self.used.iter().any(|a| a.array) {
            return Vec::new();
        }
        let comment = comment(&self.output);
        jobs_with_comment(&comment)
            .into_iter()
            .filter(|(id, _)| cancel(id).is_ok())
            .map(|(id, name)| {
                format!(
                    "expr: cancelled job {id} ({})",
                    crate::plan::render::comment(&name)
                )
            })
            .collect()
    }

    fn requests(&self) -> String {
        let comment = comment(&self.output);
        let mut o = String::from("# mode=\"allocation\": `expr run` submits no batch script. It makes each allocation\n# with salloc, runs every step on its node as\n#   srun --jobid=JOB --overlap --nodes=1 --ntasks=1 --nodelist=NODE --chdir=DIR --quiet bash -c LINE\n# (the lines: `expr plan --format sh`), and cancels the job on every exit.\n");
        for a in &self.used {
            let args = salloc_args(a, &self.job_name, &comment);
            o.push_str(&format!("salloc {}\n", crate::util::shell::join(&args)));
        }
        o
    }
}
