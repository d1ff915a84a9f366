//! recstore-e2e: rules.

use std::collections::{BTreeMap, BTreeSet};

use super::spec::code;
use crate::model::diag::{Code, Diag, Diags};
use crate::model::expand::Point;
use crate::model::*;

pub use super::lanes::{classify, lane_label, lane_slug, Ablation, LaneKind, LANE_EXAMPLES};

/// Settings written (in the file or with --set) that the bench's lanes override: `ps-type`
/// names the default lane's PS type only; written lanes name their own.
pub fn overridden(bench: &Bench) -> Vec<(&'static str, String)> {
    let Some(p) = bench.settings.get("ps-type") else {
        return Vec::new();
    };
    if p.loc.is_none() || bench.lanes.iter().any(|l| l.implicit) {
        return Vec::new();
    }
    let want = p.val.to_string();
    let used = bench.lanes.iter().any(|l| {
        matches!(classify(&l.name), Some(LaneKind::RecStore { ps_type, .. }) if ps_type == want)
    });
    if used {
        return Vec::new();
    }
    let names: Vec<String> = bench
        .lanes
        .iter()
        .map(|l| format!("`{}`", l.name))
        .collect();
    vec![(
        "ps-type",
        format!(
            "the lanes {} are written, and each lane's name sets its PS type (`RecStore-{}` would run {want})",
            names.join(", "),
            lane_label(&want)
        ),
    )]
}

use super::placement::{clients_ps, Client, PsServer};

fn err(code: Code, msg: impl Into<String>, loc: &Loc) -> Diag {
    Diag::error(code, msg).at(&loc.src, loc.span)
}

/// Rules d, e, f, g, h, i and j (hosts and ports are checked by `validate`).
pub fn validate(exp: &Experiment, bench: &Bench, diags: &mut Diags) {
    let (clients, ps) = clients_ps(bench);
    let (clients, ps) = (&clients[..], &ps[..]);
    let lanes: Vec<(&Lane, Option<LaneKind>)> =
        bench.lanes.iter().map(|l| (l, classify(&l.name))).collect();
    for (lane, kind) in &lanes {
        if kind.is_none() {
            let help = match crate::util::suggest::did_you_mean(&lane.name, LANE_EXAMPLES.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => "a lane is `RecStore-<BRPC|GRPC|SHM|RDMA>[-无预取|-无预取无融合|-预取N]`, `TorchRec-HBM` or `TorchRec-UVM`".into(),
            };
            diags.push(
                err(
                    code::LANE_NAME,
                    format!("lane `{}` names no known backend", lane.name),
                    &lane.loc,
                )
                .label("unknown lane")
                .help(help),
            );
        }
    }
    let uses_recstore = lanes
        .iter()
        .any(|(_, k)| matches!(k, Some(LaneKind::RecStore { .. })));
    for key in &bench.config {
        if let Some(why) = super::plan::config_key_problem(key) {
            diags.push(
                err(
                    Code::ConfigKey,
                    format!("config key `{}` cannot be merged", key.dotted()),
                    &key.loc,
                )
                .label("shadows a generated key")
                .help(why),
            );
        }
    }

    // PS types that cannot run as placed
    let mut said = BTreeSet::new();
    for (lane, kind) in &lanes {
        let Some(LaneKind::RecStore { ps_type, .. }) = kind else {
            continue;
        };
        if !said.insert(*ps_type) {
            continue;
        }
        let problem: Option<(String, String)> = match *ps_type {
            "LOCAL_SHM" => {
                let client_hosts: BTreeSet<&str> = clients.iter().map(|c| c.host.as_str()).collect();
                let ps_hosts: BTreeSet<&str> = ps.iter().map(|p| p.host.as_str()).collect();
                if ps.len() > 1 {
                    Some((
                        format!("lane `{}` runs LOCAL_SHM, which serves one shard, but {} `ps` nodes are declared", lane.name, ps.len()),
                        "local_shm_ps_server shares memory with the clients of its node: declare one `ps` on the client's host, or use a BRPC/GRPC lane for shards".into(),
                    ))
                } else if client_hosts.len() > 1 || !client_hosts.is_subset(&ps_hosts) {
                    Some((
                        format!("lane `{}` runs LOCAL_SHM, which works within one node, but its clients and PS are on {}", lane.name,
                            crate::util::markup::ticked(client_hosts.union(&ps_hosts))),
                        "put the client and the `ps` on one host, or use a BRPC lane across nodes".into(),
                    ))
                } else {
                    None
                }
            }
            "GRPC" if ps.len() == 1 && ps[0].port != 15000 => Some((
                format!("lane `{}`: a single-shard GRPC server binds 0.0.0.0:15000 whatever its config says, but the `ps` is on port {}", lane.name, ps[0].port),
                "use `port=15000` on the `ps` (RecStore's grpc_ps_server hard-codes it for one shard), or declare several shards".into(),
            )),
            "RDMA" => Some((
                format!("lane `{}`: RDMA is not supported by expr", lane.name),
                "upstream starts petps_server through PetPSClusterRunner with a control plane, a namespace and the client count, and petps_server takes no --local_shard_id; run RDMA with RecStore's own matrix runner (tools/benchmarks/e2e/custom), or use a BRPC lane".into(),
            )),
            _ => None,
        };
        if let Some((msg, help)) = problem {
            diags.push(
                err(code::PS_TYPE_PLACEMENT, msg, &lane.loc)
                    .label("cannot run as placed")
                    .help(help),
            );
        }
    }
    // a PS type is a lane, not a value to sweep: the lane's name says what runs
    for a in bench.sweep.all_axes().filter(|a| a.name == "ps-type") {
        diags.push(
            err(
                Code::InvalidValue,
                "`ps-type` cannot be swept: each PS type is a lane of its own",
                &a.loc,
            )
            .label("swept PS type")
            .help("write a lane per PS type: `lane RecStore-BRPC` and `lane RecStore-SHM` (lanes are compared side by side, each named after what it runs)"),
        );
    }
    // a PS type the explicit lanes override
    for (name, why) in overridden(bench) {
        if let Some(p) = bench.settings.get(name) {
            let loc = p.loc.as_ref().unwrap_or(&bench.loc);
            diags.push(
                Diag::warning(
                    Code::SettingOverridden,
                    format!("`{name} {}` changes nothing: {why}", p.val),
                )
                .at(&loc.src, loc.span)
                .label("overridden by the lanes")
                .help("rename the lane (e.g. `lane RecStore-SHM`) or remove the `lane` nodes so the default lanes follow `ps-type`"),
            );
        }
    }

    shard_layout(bench, ps, uses_recstore, diags);
    distributed_clients(exp, bench, clients, diags);
    loopback_ps(exp, clients, ps, uses_recstore, diags);
    shared_runtime(bench, clients, uses_recstore, diags);
    runtime_dir_renders(bench, diags);
    gpus(exp, clients, diags);
    lanes_change(bench, diags);
}

/// How the diagnostics of one numbering (shard ids, node ranks) speak of it.
struct Numbering {
    code: Code,
    /// "shard 1 is served twice", of the id given twice.
    twice: fn(i64) -> String,
    also: &'static str,
    twice_help: &'static str,
    /// "… from 0; shard 1 is missing", of the first id missing.
    gap: fn(usize) -> String,
    /// A label on the id that stands where the missing one should ("shard 2").
    gap_label: Option<fn(i64) -> String>,
    /// What is numbered, in "number the 3 PS servers 0..2".
    whole: &'static str,
}

const SHARDS: Numbering = Numbering {
    code: code::SHARD_LAYOUT,
    twice: |id| format!("shard {id} is served twice"),
    also: "also shard here",
    twice_help: "give every `ps` a distinct shard id, 0, 1, 2, …",
    gap: |i| format!("shard ids must be contiguous from 0; shard {i} is missing"),
    gap_label: Some(|id| format!("shard {id}")),
    whole: "PS servers",
};

const NODE_RANKS: Numbering = Numbering {
    code: code::NODE_RANK_LAYOUT,
    twice: |r| format!("node rank {r} is used twice"),
    also: "also here",
    twice_help: "give each client host a distinct node-rank, 0, 1, 2, …",
    gap: |i| format!("node ranks must be contiguous from 0; rank {i} is missing"),
    gap_label: None,
    whole: "client nodes",
};

/// Ids that must be distinct and run 0, 1, 2, … (`items`: each id and where it is written): an
/// id given again is a diagnostic at each repeat (pointing back at the first), the first gap one
/// more, at the id that stands in its place.
fn numbered_from_zero<'a>(
    items: impl Iterator<Item = (i64, &'a Loc)>,
    n: &Numbering,
    diags: &mut Diags,
) {
    let mut ids: BTreeMap<i64, &Loc> = BTreeMap::new();
    let mut count = 0usize;
    for (id, loc) in items {
        count += 1;
        if let Some(prev) = ids.get(&id) {
            diags.push(
                err(n.code, (n.twice)(id), loc)
                    .also(prev.span, n.also)
                    .help(n.twice_help),
            );
        } else {
            ids.insert(id, loc);
        }
    }
    // every one declared is numbered, a repeated id's too
    let len = count;
    if let Some((i, (&id, loc))) = ids.iter().enumerate().find(|(i, (&id, _))| id != *i as i64) {
        let mut d = err(n.code, (n.gap)(i), loc);
        if let Some(label) = n.gap_label {
            d = d.label(label(id));
        }
        diags.push(d.help(format!(
            "number the {len} {} 0..{}",
            n.whole,
            len.saturating_sub(1)
        )));
    }
}

/// Rule d: shard ids distinct and contiguous from 0, and as many as `num-shards` says.
fn shard_layout(bench: &Bench, ps: &[PsServer], uses_recstore: bool, diags: &mut Diags) {
    // d. shard layout
    if uses_recstore {
        let ids = ps.iter().map(|p| (p.shard, &p.loc));
        numbered_from_zero(ids, &SHARDS, diags);
        if let Some(n) = bench.settings.get("num-shards") {
            if n.val.as_int() != Some(ps.len() as i64) {
                let loc = n.loc.as_ref().unwrap_or(&bench.loc);
                diags.push(
                    err(
                        code::SHARD_COUNT,
                        format!(
                            "num-shards is {} but {} `ps` servers are declared",
                            n.val,
                            ps.len()
                        ),
                        loc,
                    )
                    .help("one shard per PS: declare a `ps` per shard, or remove `num-shards`"),
                );
            }
        }
    }
}

/// Rule e: distributed clients: ranks contiguous from 0, one node size, a rendezvous every node reaches.
fn distributed_clients(exp: &Experiment, bench: &Bench, clients: &[Client], diags: &mut Diags) {
    // e. distributed clients
    let ranks = clients.iter().map(|c| (c.node_rank, &c.loc));
    numbered_from_zero(ranks, &NODE_RANKS, diags);
    // the first client of rank 0 (a second one is a diagnostic above)
    let rank0 = clients.iter().find(|c| c.node_rank == 0);
    if let Some(first) = clients.first() {
        if let Some(c) = clients
            .iter()
            .find(|c| c.nproc_per_node != first.nproc_per_node)
        {
            diags.push(
                err(code::HETEROGENEOUS_NPROC, format!(
                    "nproc-per-node differs between client hosts ({} on `{}`, {} on `{}`): unsupported",
                    first.nproc_per_node, first.host, c.nproc_per_node, c.host
                ), &c.loc)
                .also(first.loc.span, format!("nproc-per-node={}", first.nproc_per_node))
                .help("run_mock_stress.py computes world_size = nnodes × nproc_per_node, and TorchRec plans with local_world_size = nproc_per_node (it can place ranks on GPUs a node lacks); use the same nproc-per-node on every client host"),
            );
        }
    }
    let nodes: BTreeSet<&str> = clients.iter().map(|c| c.host.as_str()).collect();
    let master = bench.settings.get("master-addr");
    if clients.len() == 1 && clients[0].nproc_per_node > 1 {
        if let (Some(m), Some(h)) = (master, exp.host(&clients[0].host)) {
            let addr = m.val.to_string();
            let on_node = addr == h.ip || addr == "127.0.0.1" || addr == "localhost";
            if !on_node {
                let loc = m.loc.as_ref().unwrap_or(&bench.loc);
                diags.push(
                    err(code::MASTER_ADDR_SINGLE_NODE, format!(
                        "single-node run on `{}` uses master address {addr}, which is not on that node", h.name
                    ), loc)
                    .label("not this node's address")
                    .help(format!("a single-node multi-GPU run rendezvous on its own node: {}", use_address(h, "its ip"))),
                );
            }
        }
    }
    if clients.len() > 1 {
        if let Some(rank0) = rank0.and_then(|c| exp.host(&c.host)) {
            match master {
                Some(m) if m.val.to_string() != rank0.ip => {
                    let loc = m.loc.as_ref().unwrap_or(&bench.loc);
                    diags.push(
                        err(code::MASTER_ADDR_CROSS_NODE, format!(
                            "cross-node run uses master address {}, but rank 0 runs on `{}` ({})", m.val, rank0.name, rank0.ip
                        ), loc)
                        .label("not the rank-0 host")
                        .help(use_address(rank0, "the rank-0 host's ip")),
                    );
                }
                // Loopback is fine when every client host is this machine (all on loopback).
                None if nodes.len() > 1
                    && crate::util::net::is_loopback(&rank0.ip)
                    && clients
                        .iter()
                        .filter_map(|c| exp.host(&c.host))
                        .any(|h| !crate::util::net::is_loopback(&h.ip)) =>
                {
                    diags.push(
                        err(code::MASTER_ADDR_CROSS_NODE, format!(
                            "cross-node run: rank 0 runs on `{}` whose ip {} other nodes cannot reach", rank0.name, rank0.ip
                        ), &rank0.loc)
                        .help("give the rank-0 host its data-plane address: `ip=\"10.0.2.190\"`"),
                    );
                }
                _ => {}
            }
        }
    }
}

/// A PS reached over loopback cannot serve clients on other machines.
fn loopback_ps(
    exp: &Experiment,
    clients: &[Client],
    ps: &[PsServer],
    uses_recstore: bool,
    diags: &mut Diags,
) {
    // A PS reached over loopback cannot serve clients on other machines.
    if uses_recstore {
        let remote_client = clients
            .iter()
            .filter_map(|c| exp.host(&c.host))
            .find(|h| !crate::util::net::is_loopback(&h.ip));
        for p in ps {
            let Some(h) = exp.host(&p.host) else { continue };
            if let (true, Some(c)) = (crate::util::net::is_loopback(&h.ip), remote_client) {
                diags.push(
                    err(code::LOOPBACK_ACROSS_HOSTS, format!(
                        "PS shard {} is on `{}` at {}, which the client on `{}` ({}) cannot reach", p.shard, h.name, h.ip, c.name, c.ip
                    ), &p.loc)
                    .label("loopback address")
                    .help(format!("give host `{}` its data-plane address (`ip=\"…\"`); clients connect to the PS by that ip", h.name)),
                );
            }
        }
    }
}

/// `runtime-dir` is a template of the output, name and start: rendered here as `plan` renders
/// it (`{{ output | replace('a') }}` checked clean, and `plan` said "missing argument" with no
/// place).
fn runtime_dir_renders(bench: &Bench, diags: &mut Diags) {
    let Some(p) = bench.settings.get("runtime-dir") else {
        return;
    };
    let (Some(loc), Some(t)) = (&p.loc, p.val.as_str()) else {
        return;
    };
    let c = minijinja::context! { output => "results/x", name => "x", started => "2026-01-02T03:04:05+00:00" };
    if let Err(e) = crate::model::template::render(t, &c, crate::model::template::Quote::Plain) {
        diags.push(
            Diag::error(Code::TemplateRender, format!("`runtime-dir` cannot be rendered: {e}"))
                .at(&loc.src, loc.span)
                .label("fails here")
                .help("its values are `output`, `name` and `started`; a filter takes its arguments in parentheses (`replace('a', 'b')`)"),
        );
    }
}

/// Rule f: clients on different hosts need a runtime dir they all mount.
fn shared_runtime(bench: &Bench, clients: &[Client], uses_recstore: bool, diags: &mut Diags) {
    // f. shared runtime dir: only clients on different hosts need one they all mount
    let client_hosts: BTreeSet<&str> = clients.iter().map(|c| c.host.as_str()).collect();
    if uses_recstore && client_hosts.len() > 1 {
        let explicit = bench
            .settings
            .get("runtime-dir")
            .is_some_and(|p| p.loc.is_some());
        if !explicit {
            diags.push(
                err(code::SHARED_RUNTIME_DIR, format!(
                    "RecStore with clients on {} hosts needs an explicit runtime dir shared by all of them", client_hosts.len()
                ), &bench.loc)
                .help("add `runtime-dir \"/shared/path/rs_runtime\"` on a filesystem every client host mounts (run_mock_stress.py refuses nnodes>1 without --recstore-runtime-dir)"),
            );
        }
    }
}

/// Rule h: no GPU given to two clients, and none beyond the host's.
fn gpus(exp: &Experiment, clients: &[Client], diags: &mut Diags) {
    // h. GPUs
    let mut used: BTreeMap<(&str, i64), &Client> = BTreeMap::new();
    for c in clients {
        for g in c.gpu..c.gpu + c.nproc_per_node {
            if let Some(prev) = used.get(&(c.host.as_str(), g)) {
                diags.push(
                    err(
                        Code::GpuOversubscribed,
                        format!("GPU {g} of `{}` is given to two clients", c.host),
                        &c.loc,
                    )
                    .also(prev.loc.span, format!("GPU {g} also here"))
                    .help("give each client its own GPUs: change `gpu=` or `nproc-per-node=`"),
                );
                break;
            }
            used.insert((c.host.as_str(), g), c);
        }
        if let Some(n) = exp.host(&c.host).and_then(|h| h.gpus) {
            if c.gpu + c.nproc_per_node > n {
                diags.push(
                    err(
                        Code::GpuOutOfRange,
                        format!(
                            "client uses GPUs {}..{} but `{}` declares {n} GPUs",
                            c.gpu,
                            c.gpu + c.nproc_per_node - 1,
                            c.host
                        ),
                        &c.loc,
                    )
                    .help(format!("keep gpu + nproc-per-node ≤ {n}")),
                );
            }
        }
    }
}

/// Rule i: lanes change no workload value unless it is swept.
fn lanes_change(bench: &Bench, diags: &mut Diags) {
    // i. lanes change no workload value unless it is swept
    for lane in &bench.lanes {
        for (k, p) in &lane.overrides {
            if crate::kinds::recstore_e2e::spec::WORKLOAD.contains(&k.as_str())
                && !bench.sweep.has_axis(k)
            {
                let loc = p.loc.as_ref().unwrap_or(&lane.loc);
                diags.push(
                    err(Code::LaneChangesWorkload, format!(
                        "lane `{}` changes the workload (`{k}`), so it is no longer comparable with the other lanes", lane.name
                    ), loc)
                    .label("workload value")
                    .help(format!("lanes share dataset, batch size, dims, steps and warmup; to compare several values, declare `sweep {k} …`")),
                );
            }
        }
    }
}

/// Settings only RecStore lanes read.
const RECSTORE_ONLY: &[&str] = &[
    "read-mode",
    "prefetch-depth",
    "fusion",
    "index-type",
    "kv-backend",
    "capacity",
    "hash-method",
    "max-keys-per-request",
];

/// Rules checked on every expanded point: g (capacity), j (ablation names), warmup below steps.
pub fn validate_point(bench: &Bench, p: &Point, diags: &mut Diags) {
    let (warmup, steps) = (p.int("warmup-steps"), p.int("steps"));
    if warmup >= steps {
        let at = p
            .param("warmup-steps")
            .and_then(|x| x.loc.clone())
            .or_else(|| p.param("steps").and_then(|x| x.loc.clone()))
            .unwrap_or_else(|| bench.loc.clone());
        diags.push(
            err(
                Code::InvalidValue,
                format!("warmup-steps {warmup} leaves no measured step of {steps}"),
                &at,
            )
            .label("warmup ≥ steps")
            .help("warmup steps are dropped from every aggregate: keep warmup-steps below steps (the runbook uses 5 of 80)"),
        );
    }
    if let Some(v) = p.get("dense-arch-layer-sizes") {
        let v = v.to_string();
        if let Some(why) = dense_arch_problem(&v, p.int("embedding-dim")) {
            let at = p
                .param("dense-arch-layer-sizes")
                .and_then(|x| x.loc.clone())
                .unwrap_or_else(|| bench.loc.clone());
            diags.push(
                err(
                    Code::InvalidValue,
                    format!("dense-arch-layer-sizes `{v}` {why}"),
                    &at,
                )
                .help(
                    "DLRM feeds the dense arch's last layer into the interaction with the \
embeddings, so it must equal `embedding-dim`: e.g. `512,256,128` for dim 128; leave the setting \
out to get `512,256,<dim>`",
                ),
            );
        }
    }
    validate_point_lane(bench, p, diags)
}

/// Why `--dense-arch-layer-sizes` would be refused by the DLRM it builds (comma-separated
/// positive sizes, the last equal to the embedding dim: torchrec's `DLRM` raises otherwise),
/// or `None`. A template is judged once rendered.
pub fn dense_arch_problem(v: &str, dim: i64) -> Option<String> {
    if v.contains("{{") {
        return None;
    }
    let mut last = None;
    for part in v.split(',') {
        match part.trim().parse::<i64>() {
            Ok(n) if n > 0 => last = Some(n),
            _ => {
                return Some(format!(
                    "has `{}`, not a positive layer size (write sizes separated by commas)",
                    part.trim()
                ))
            }
        }
    }
    match last {
        Some(n) if n != dim => Some(format!("ends in {n}, but embedding-dim is {dim}")),
        _ => None,
    }
}

fn validate_point_lane(bench: &Bench, p: &Point, diags: &mut Diags) {
    let lane = &bench.lanes[p.lane];
    if lane.incomplete {
        return;
    }
    let loc_of = |name: &str| -> Loc {
        p.param(name)
            .and_then(|s| s.loc.clone())
            .unwrap_or_else(|| lane.loc.clone())
    };
    if let Some(LaneKind::TorchRec { .. }) = classify(&lane.name) {
        // RecStore-only settings are ignored by TorchRec lanes: say so instead of running them
        for k in RECSTORE_ONLY {
            if let Some(o) = lane.overrides.get(*k) {
                diags.push(
                    err(
                        Code::LaneSettingIgnored,
                        format!("lane `{}` sets `{k}`, which TorchRec lanes do not read", lane.name),
                        o.loc.as_ref().unwrap_or(&lane.loc),
                    )
                    .label("ignored by TorchRec")
                    .help(format!("`{k}` is a RecStore setting: remove it from the TorchRec lane, or set it on a RecStore lane")),
                );
            }
        }
    }
    if let Some(LaneKind::RecStore { ablation, .. }) = classify(&lane.name) {
        let read = p.str("read-mode");
        let depth = p.int("prefetch-depth");
        let fusion = p.bool("fusion");
        let swept = |k: &str| bench.sweep.has_axis(k) && !lane.overrides.contains_key(k);
        let pinned: &[&str] = match ablation {
            Ablation::Main => &[],
            Ablation::NoPrefetch | Ablation::NoPrefetchNoFusion => &["read-mode", "fusion"],
            Ablation::Prefetch(_) => &["read-mode", "prefetch-depth"],
        };
        if let Some(k) = pinned.iter().find(|k| swept(k)) {
            let base = lane.name.split('-').take(2).collect::<Vec<_>>().join("-");
            diags.push(
                err(
                    code::ABLATION_MISMATCH,
                    format!(
                        "lane `{}` fixes `{k}` by its name, but `{k}` is swept",
                        lane.name
                    ),
                    &lane.loc,
                )
                .label("name fixes the value")
                .help(format!(
                    "name the lane `{base}` to sweep `{k}` on it, or remove `sweep {k}`"
                )),
            );
        }
        // the main lane may sweep an ablation setting: that is the sweep's point, not a mismatch
        let main_off = (read != "prefetch" && !swept("read-mode"))
            || (depth != 0 && !swept("prefetch-depth"))
            || (!fusion && !swept("fusion"));
        let problem = match ablation {
            _ if pinned.iter().any(|k| swept(k)) => None,
            Ablation::Main if main_off => Some((
                "the main lane runs read-mode prefetch, prefetch-depth 0, fusion on",
                "name the lane after its ablation (`-无预取`, `-无预取无融合`, `-预取N`) or drop the override".to_string(),
            )),
            Ablation::NoPrefetch if read != "direct" || !fusion => Some((
                "无预取 means read-mode direct with fusion on",
                "add `read-mode=\"direct\"` to the lane".to_string(),
            )),
            Ablation::NoPrefetchNoFusion if read != "direct" || fusion => Some((
                "无预取无融合 means read-mode direct and fusion off",
                "add `read-mode=\"direct\" fusion=#false` to the lane".to_string(),
            )),
            Ablation::Prefetch(n) if n <= 0 || read != "prefetch" || depth != n => Some((
                "预取N means read-mode prefetch with prefetch-depth N > 0",
                if n <= 0 {
                    "N must be positive: `RecStore-BRPC-预取4 prefetch-depth=4`".to_string()
                } else {
                    format!("add `prefetch-depth={n}` to the lane")
                },
            )),
            _ => None,
        };
        if let Some((why, help)) = problem {
            let fusion_word = if fusion { "on" } else { "off" };
            diags.push(
                err(code::ABLATION_MISMATCH, format!(
                    "lane `{}` runs read-mode {read}, prefetch-depth {depth}, fusion {fusion_word}: {why}", lane.name
                ), &lane.loc)
                .label("name and settings disagree")
                .help(help),
            );
        }
        let cap = p.int("capacity");
        let need = p.int("num-embeddings").saturating_mul(26).saturating_mul(2);
        const BASELINE: i64 = 8_000_000;
        if cap < need && cap < BASELINE {
            diags.push(
                Diag::warning(code::CAPACITY_LOW, format!(
                    "PS capacity {cap} is below num_embeddings × 26 × 2 = {need}: the fused key space may not fit"
                ))
                .at(&loc_of("capacity").src, loc_of("capacity").span)
                .label("too small")
                .help(format!("use `capacity 8000000`, the runbook's safe baseline for day0-size runs (or at least {need})")),
            );
        }
    }
}

/// The help that names `host`'s address for `master-addr`: written out, or (a node of a Slurm
/// allocation, whose address is known only once it is granted) left to expr.
fn use_address(host: &crate::model::Host, what: &str) -> String {
    match &host.place {
        Some(p) => format!(
            "remove it: `{}` is node {} of the Slurm allocation `{}`, whose address expr passes as `--master-addr` once the allocation is granted",
            host.name, p.node, p.alloc
        ),
        None => format!("use `master-addr \"{}\"` ({what}) or remove it", host.ip),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn dense_arch_ends_in_the_embedding_dim() {
        use super::dense_arch_problem as p;
        assert_eq!(p("512,256,128", 128), None);
        assert_eq!(p(" 512, 256 ,64", 64), None);
        assert_eq!(p("64", 64), None);
        assert_eq!(p("{{ dims }}", 64), None);
        assert_eq!(
            p("512,256,128", 64).unwrap(),
            "ends in 128, but embedding-dim is 64"
        );
        assert!(p("512 256 64", 64).unwrap().contains("`512 256 64`"));
        assert!(p("512,,64", 64).unwrap().contains("has ``"));
        assert!(p("512,0,64", 64).unwrap().contains("has `0`"));
        assert!(p("512,-3,64", 64).unwrap().contains("`-3`"));
    }
}
