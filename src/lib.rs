//! expr: declarative, version-controlled ML-systems benchmark experiments.
//!
//! The pipeline, one folder a stage: `parse` (KDL → the experiment, validated) → `plan` (its
//! matrix of points into steps) → `exec` (the run, emitting events) → `results` (the result
//! directory: journal, manifest, collected numbers) → `report` (formats over one data model),
//! `compare` and `history` (readers of result directories), `bisect` (a campaign over
//! commits); `kinds` holds each benchmark kind behind one trait, `cli` the command line,
//! `util` the leaves every stage uses.

pub mod bisect;
pub mod cli;
pub mod compare;
pub mod exec;
pub mod history;
pub mod kind_api;
pub mod kinds;
pub mod model;
pub mod parse;
pub mod plan;
pub mod report;
pub mod results;
pub mod util;

pub use cli::run;
