//! Getting, placing and releasing the nodes a run's hosts are on, behind one trait beside
//! `Backend`: the command line asks for an experiment's allocator and calls no scheduler
//! itself. Slurm (`salloc` allocations, `sbatch --array` arrays) is the implementation today.

pub mod api;

pub use api::{Allocator, ArrayJob};

use crate::model::Experiment;

/// The allocator of an experiment some host of which is on an allocation (`output`: the run's
/// result directory, which names its jobs); None when no host is.
pub fn for_experiment(exp: &Experiment, output: &str) -> Option<Box<dyn Allocator>> {
    crate::exec::slurm::allocator::Slurm::new(exp, output)
        .map(|s| Box::new(s) as Box<dyn Allocator>)
}

/// Inside an array task (a Slurm array's today): put the hosts on the task's own nodes. Returns
/// what the journal records of the task.
pub fn place_task(exp: &mut Experiment) -> Result<serde_json::Value, String> {
    crate::exec::slurm::place_task(exp)
}
