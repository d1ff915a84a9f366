//! Rules shared by the kinds that launch ranks on `node`s (ep-bench, dataset-rt).

use std::collections::BTreeMap;

use crate::diag::{Code, Diag, Diags};
use crate::model::RankNode;

/// One GPU of one host given to two nodes' ranks.
pub fn gpus_oversubscribed(nodes: &[RankNode], diags: &mut Diags) {
    let mut used: BTreeMap<(&str, i64), &RankNode> = BTreeMap::new();
    for n in nodes {
        for g in n.gpu..n.gpu.saturating_add(n.nproc_per_node) {
            if let Some(prev) = used.get(&(n.host.as_str(), g)) {
                diags.push(
                    Diag::error(
                        Code::GpuOversubscribed,
                        format!("GPU {g} of `{}` is given to two nodes' ranks", n.host),
                    )
                    .at(&n.loc.src, n.loc.span)
                    .also(prev.loc.span, format!("GPU {g} also here"))
                    .help("one `node` per host (its ranks use gpu .. gpu+nproc-per-node-1), or give the second `node` another `gpu=` range"),
                );
                break;
            }
            used.insert((n.host.as_str(), g), n);
        }
    }
}
