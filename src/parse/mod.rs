//! Parse: KDL text into the experiment, every problem a located diagnostic — the syntax,
//! decoding against the schema (`model::schema`), `--set`/`--only`, validation and the resolved
//! form.

pub mod decode;
pub mod load;
pub mod overrides;
pub mod reference;
pub mod resolved;
pub mod syntax;
pub mod validate;
