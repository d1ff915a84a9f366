//! recstore-e2e's collector: the per-step CSV of a point (`recstore_main.csv` /
//! `torchrec_main.csv`), or its per-rank CSVs.

use std::path::{Path, PathBuf};

use crate::collect::steps::{self, StepStats};
use crate::collect::PointDir;
use crate::kinds::recstore_e2e::rules::{classify, LaneKind};

/// The point's step statistics, warmup dropped.
pub fn collect(at: &PointDir) -> Result<StepStats, String> {
    let out = at.out();
    let name = match classify(at.lane) {
        Some(LaneKind::TorchRec { .. }) => "torchrec",
        _ => "recstore",
    };
    let main = out.join(format!("{name}_main.csv"));
    if main.exists() {
        return steps::collect(&[&main], at.warmup);
    }
    let ranks_dir = out.join(format!("{name}_ranks"));
    let mut ranks: Vec<PathBuf> = std::fs::read_dir(&ranks_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "csv"))
                .collect()
        })
        .unwrap_or_default();
    ranks.sort();
    if ranks.is_empty() {
        return Err(format!(
            "{}: not found (and no rank CSVs in {})",
            main.display(),
            ranks_dir.display()
        ));
    }
    let refs: Vec<&Path> = ranks.iter().map(PathBuf::as_path).collect();
    steps::collect(&refs, at.warmup)
}
