//! The `recstore-e2e` kind: vocabulary, rules and plan.

pub mod plan;
pub mod rules;
pub mod spec;
