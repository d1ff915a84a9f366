//! recstore-e2e's placement: its `client` and `ps` nodes as typed views of the bench's placed
//! nodes, and the runbook's P0 defaults.

use crate::model::{Bench, Loc, PlacedNode};

/// A training client: a host, its first GPU, its node rank and how many processes it runs.
#[derive(Debug, Clone)]
pub struct Client {
    pub host: String,
    pub gpu: i64,
    pub node_rank: i64,
    pub nproc_per_node: i64,
    pub loc: Loc,
}

/// A parameter-server shard on a host and port.
#[derive(Debug, Clone)]
pub struct PsServer {
    pub host: String,
    pub port: i64,
    pub shard: i64,
    pub loc: Loc,
    pub port_loc: Option<Loc>,
}

/// The bench's clients and PS servers, in the order written.
pub fn clients_ps(bench: &Bench) -> (Vec<Client>, Vec<PsServer>) {
    let clients = bench
        .placement
        .nodes("client")
        .map(|n| Client {
            host: n.host.clone(),
            gpu: n.int("gpu"),
            node_rank: n.int("node-rank"),
            nproc_per_node: n.int("nproc-per-node"),
            loc: n.loc.clone(),
        })
        .collect();
    let ps = bench
        .placement
        .nodes("ps")
        .map(|n| PsServer {
            host: n.host.clone(),
            port: n.int("port"),
            shard: n.int("shard"),
            loc: n.loc.clone(),
            port_loc: n.loc_of("port"),
        })
        .collect();
    (clients, ps)
}

/// The runbook's P0 defaults: one local client on GPU 0, one local PS on 15000.
pub fn default_nodes(loc: &Loc) -> Vec<PlacedNode> {
    let node = |role: &str, props: &[(&str, i64)]| PlacedNode {
        role: role.into(),
        host: "local".into(),
        props: props.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        loc: loc.clone(),
        prop_locs: Default::default(),
    };
    vec![
        node(
            "client",
            &[("gpu", 0), ("node-rank", 0), ("nproc-per-node", 1)],
        ),
        node("ps", &[("port", 15000), ("shard", 0)]),
    ]
}
