//! The hand-written walker from `KdlDocument` to `Experiment`: the decoder's shared helpers in
//! walker.rs, then one file per node kind (document, host, bench, expect, config, placement,
//! sweep).

mod bench;
mod config;
mod document;
mod expect;
mod host;
mod placement;
mod sweep;
mod walker;

pub use bench::bench_params;
pub use sweep::repeated_sweep_value;
pub use walker::{decode, default_output, default_val, out_of_range, Decoder, Got};
