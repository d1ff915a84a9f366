//! Where the kernel collectors went (kept for callers of the old paths).

pub use crate::kinds::bench::nccl::{parse_nccl_tests, NcclRow};
pub use crate::kinds::dataset_rt::collect::{parse_drt, DrtReport};
pub use crate::kinds::ep_bench::collect::{parse_ep, EpSummary, Timing};
