//! `expr bisect`: find the commit that moved a metric. Each probed commit is checked out in a
//! worktree of its own, built and gated as `expr run` does, and measured in rounds until a
//! sequential likelihood-ratio test between "like good" and "like bad" decides; the references
//! are measured again between probes. The bisection is a journal of its own and resumes after an interrupt.

pub mod checkout;
pub mod decide;
pub mod driver;
pub mod git;
pub mod journal;
pub mod probe;
pub mod report;
pub mod search;
pub mod setup;
#[cfg(test)]
mod sim;

pub use driver::{bisect, Args};
