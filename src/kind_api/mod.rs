//! The contract between the pipeline and the benchmark kinds, on its own floor.
//!
//! A kind (`src/kinds/*`) implements [`kind::Kind`]: it plans a point into [`step::Step`]s, collects
//! its metrics into the report data model ([`data`]), and writes its sections into a [`doc::Doc`] with
//! the shared section builders ([`tables`], [`timing`], [`clock`]). `plan/` and `report/` build on
//! this module and look the kinds up in `crate::kinds`; the kinds import neither of them.

pub mod clock;
pub mod data;
pub mod doc;
pub mod kind;
pub mod step;
pub mod tables;
pub mod timing;
