//! expr: declarative, version-controlled ML-systems benchmark experiments.

pub mod bisect;
pub mod cli;
pub mod coexist;
pub mod collect;
pub mod compare;
pub mod compare_machine;
pub mod decode;
pub mod diag;
pub mod exec;
pub mod exit_codes;
pub mod expand;
pub mod history;
pub mod json_schema;
pub mod kinds;
pub mod load;
pub mod ls;
pub mod model;
pub mod overrides;
pub mod plan;
pub mod ranks;
pub mod reference;
pub mod render;
pub mod report;
pub mod resolved;
pub mod results;
pub mod schema;
pub mod shell;
pub mod source;
pub mod stats;
pub mod suggest;
pub mod syntax;
pub mod template;
pub mod units;
pub mod validate;

pub use cli::run;
