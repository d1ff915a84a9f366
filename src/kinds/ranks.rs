//! Rules shared by the kinds that launch ranks on `node`s (ep-bench, dataset-rt).

use std::collections::BTreeMap;

use crate::model::diag::{Code, Diag, Diags};
use crate::model::{Bench, Loc};

/// A `node` of the kinds that launch ranks: a host, how many ranks, and the first GPU.
#[derive(Debug, Clone)]
pub struct RankNode {
    pub host: String,
    pub nproc_per_node: i64,
    pub gpu: i64,
    pub loc: Loc,
}

/// The bench's `node`s, in the order written.
pub fn rank_nodes(bench: &Bench) -> Vec<RankNode> {
    bench
        .placement
        .nodes("node")
        .map(|n| RankNode {
            host: n.host.clone(),
            nproc_per_node: n.int("nproc-per-node"),
            gpu: n.int("gpu"),
            loc: n.loc.clone(),
        })
        .collect()
}

/// The rendezvous service (`master-port`) on `host`, where the bench writes its port.
pub fn rendezvous(b: &Bench, host: &str) -> (String, i64, String, Loc) {
    let port = b.settings.get("master-port");
    (
        host.to_string(),
        b.int("master-port"),
        "the rendezvous (master-port)".into(),
        port.and_then(|p| p.loc.clone())
            .unwrap_or_else(|| b.loc.clone()),
    )
}

/// The services of a kind that launches ranks: the rendezvous on the first node.
pub fn rank_services(b: &Bench) -> Vec<(String, i64, String, Loc)> {
    rank_nodes(b)
        .first()
        .map(|n| vec![rendezvous(b, &n.host)])
        .unwrap_or_default()
}

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
