//! The `Allocator` trait and what it hands over: what an implementation provides (a file of its
//! own, so that an implementation imports it without importing the choice among them).

use crate::model::{Allocation, Experiment};
use crate::plan::Plan;

/// What an array run's tasks are submitted as: the allocation they are tasks of, and the name
/// and comment that mark its jobs as this run's.
#[derive(Debug, Clone)]
pub struct ArrayJob {
    pub alloc: Allocation,
    pub job_name: String,
    pub comment: String,
}

/// The nodes of a run: got before it, put into its experiment, given back after it.
pub trait Allocator {
    /// Array mode: the array the points run as tasks of (the first one a host is on), once every
    /// host on it knows how to make a job of its own (for the setup's steps). None without an
    /// array; an error when a step of a point runs on a host that is not on it.
    fn array(&self, exp: &mut Experiment, plan: &Plan) -> Result<Option<ArrayJob>, String>;

    /// Get the nodes of every allocation (not an array) a host is on, saying on stderr what it
    /// asks for and what it got; `interrupted` ends a wait. Whether it got any: then they are
    /// to be `place`d and the plan made again. On an error, what it got is given back first.
    fn acquire(&mut self, interrupted: &dyn Fn() -> bool) -> Result<bool, String>;

    /// Put the nodes got into the experiment: each host on an allocation gets its node.
    fn place(&self, exp: &mut Experiment);

    /// Give back every node got; the lines that say so (a caller may keep them to itself).
    fn release(&mut self) -> Vec<String>;

    /// After an array run: cancel whatever of it is still queued (it should be nothing); the
    /// lines that say so. Nothing without an array.
    fn release_queued(&self) -> Vec<String>;

    /// What `plan --format sbatch` shows of a run without an array: what `acquire` asks for.
    fn requests(&self) -> String;
}
