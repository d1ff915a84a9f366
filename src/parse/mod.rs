//! Parse: KDL text into the experiment, every problem a located diagnostic — the source and
//! its diagnostics, the schema tables, decoding, `--set`/`--only`, validation, templates and
//! the resolved form.

pub mod decode;
pub mod diag;
pub mod load;
pub mod overrides;
pub mod reference;
pub mod resolved;
pub mod schema;
pub mod syntax;
pub mod template;
pub mod validate;
