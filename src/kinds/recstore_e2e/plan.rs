//! recstore-e2e's plan: the runbook's build, tests, config, servers and client commands.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::kind_api::step::{
    cuda_devices, host_path, in_repo, json_pointer, teardown, Ctx, Flags, KindPlan, Phase,
    PlannedFile, RankCheck, Ready, SchemaCheck, Step, SCRATCH_ROOT,
};
use crate::kinds::recstore_e2e::lanes::{classify, LaneKind};
use crate::model::expand::Point;
use crate::model::*;

/// The targeted correctness tests per PS type (`ctest -R`).
pub fn test_regex(ps_type: &str) -> &'static str {
    match ps_type {
        "BRPC" => "brpc_ps_client_test|dist_brpc_ps_client_test|test_ps_server_launcher|test_ps_client_factory|test_allshards_ps_client",
        // The upstream matrix runner runs the shared PS client tests for GRPC too.
        "GRPC" => "brpc_ps_client_test|dist_brpc_ps_client_test|test_ps_server_launcher|test_ps_client_factory",
        "RDMA" => "test_rdma_rc_protocol|test_raw_verbs_allocator|test_rdmaps_client_adapter",
        // LOCAL_SHM has no dedicated set in the reference: the launcher and factory tests cover it.
        _ => "test_ps_server_launcher|test_ps_client_factory",
    }
}

use super::placement::{clients_ps, Client, PsServer};

/// The PS types the lanes of this bench use.
pub fn transports(bench: &Bench) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for l in &bench.lanes {
        if let Some(LaneKind::RecStore { ps_type, .. }) = classify(&l.name) {
            if !v.contains(&ps_type) {
                v.push(ps_type);
            }
        }
    }
    v
}

/// Where the PS keeps its values: a directory of this run's under /dev/shm (RecStore's
/// `DRAM_VALUE_STORE` takes only an empty path or one under `/dev/shm`; the server adds `_<shard>`
/// to per-shard paths), one per PS type, removed whenever a point's servers stop (each point
/// starts its servers afresh).
pub fn value_dir(ctx: &Ctx, ps_type: &str) -> String {
    format!(
        "{}{}/{}",
        SCRATCH_ROOT,
        run_tag(ctx),
        ps_type.to_ascii_lowercase()
    )
}

/// The shared-memory region of a LOCAL_SHM server (`/dev/shm/<name>` once it runs): named after
/// the run, so it is scratch expr removes with the server.
pub fn local_shm_region(ctx: &Ctx) -> String {
    format!("expr-{}-shm", run_tag(ctx))
}

/// A short tag of this run (its output and start time): scratch paths of two runs never meet.
fn run_tag(ctx: &Ctx) -> String {
    // FNV-1a: stable across builds and platforms, unlike std's hasher
    let mut h: u64 = 0xcbf29ce484222325;
    // the result directory as an absolute path (two projects may both write `results/t`)
    let out = std::env::current_dir()
        .map(|d| d.join(&ctx.output).display().to_string())
        .unwrap_or_else(|_| ctx.output.clone());
    for b in format!("{}|{out}|{}", ctx.exp.name, ctx.started).bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let name: String = ctx
        .exp
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(24)
        .collect();
    format!("{name}-{:08x}", h as u32)
}

/// The two shapes of `cache_ps.base_kv_config` RecStore checkouts read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Layout {
    /// Recent RecStore: `index{type}`, `value{type, path, default_value_size_hint, dram_allocator}`.
    Nested,
    /// The wurenrumian fork: `path, capacity, value_size, value_type, index_type,
    /// value_memory_management` (its `ci/schema/` and engine selector).
    Flat,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Nested => "nested",
            Layout::Flat => "flat",
        }
    }
}

/// The fork's name of a DRAM allocator (`value_memory_management`).
fn flat_allocator(t: &str) -> String {
    match t {
        "PERSIST_LOOP_SLAB" => "PersistLoopShmMalloc".into(),
        "R2_SLAB" => "R2ShmMalloc".into(),
        other => other.into(),
    }
}

/// recstore_config.json for one PS type: cache_ps and distributed_client describe one layout.
/// Every key the server reads (CachePS throws on a missing `num_threads`; the repo's schema
/// requires `client`, `max_batch_keys_size` and the value store's allocator), at the upstream
/// matrix runner's values: value size dim×4 bytes (`default_value_size_hint`), a
/// PERSIST_LOOP_SLAB allocator of capacity × value size × 2 bytes, the value path under
/// `value_dir` (/dev/shm), `client` = the first server. LOCAL_SHM adds its `local_shm` section
/// (a region named after the run) and lists one server.
pub fn config_json(
    ctx: &Ctx,
    bench: &Bench,
    p: &Point,
    ps_type: &str,
    value_dir: &str,
    layout: Layout,
) -> Value {
    let (_, ps) = clients_ps(bench);
    let ps = &ps[..];
    let mut servers: Vec<Value> = ps
        .iter()
        .map(|s| json!({"host": ctx.host(&s.host).ip, "port": s.port, "shard": s.shard}))
        .collect();
    if ps_type == "LOCAL_SHM" {
        servers.truncate(1);
    }
    let capacity = p.int("capacity");
    let value_size = p.int("embedding-dim").saturating_mul(4);
    let base_kv = match layout {
        Layout::Nested => json!({
            "capacity": capacity,
            "index": {"type": p.str("index-type")},
            "value": {
                "type": "DRAM_VALUE_STORE",
                "path": format!("{value_dir}/value"),
                "default_value_size_hint": value_size,
                "dram_allocator": {
                    "type": p.str("dram-allocator"),
                    "capacity_bytes": capacity.saturating_mul(value_size).saturating_mul(2)
                }
            }
        }),
        Layout::Flat => json!({
            "path": value_dir,
            "capacity": capacity,
            "value_size": value_size,
            "value_type": "DRAM",
            "index_type": "DRAM",
            "value_memory_management": flat_allocator(p.str("dram-allocator"))
        }),
    };
    let mut config = json!({
        "cache_ps": {
            "ps_type": ps_type,
            "max_batch_keys_size": p.int("max-batch-keys-size"),
            "num_threads": p.int("ps-num-threads"),
            "num_shards": servers.len(),
            "servers": servers.clone(),
            "base_kv_config": base_kv
        },
        "distributed_client": {
            "num_shards": servers.len(),
            "hash_method": p.str("hash-method"),
            "max_keys_per_request": p.int("max-keys-per-request"),
            "servers": servers.clone()
        },
        "client": servers.first().cloned().unwrap_or(Value::Null)
    });
    if ps_type == "LOCAL_SHM" {
        // rs_demo's values (WU model_zoo/rs_demo/runtime/server.py build_runtime_config)
        config["local_shm"] = json!({
            "region_name": local_shm_region(ctx),
            "slot_count": 256,
            "ready_queue_count": 2,
            "ready_queue_burst_limit": 16,
            "slot_buffer_bytes": 8 * 1024 * 1024,
            "client_timeout_ms": 30000
        });
    }
    config
}

/// The largest config template read (a config is a few KiB).
const TEMPLATE_MAX: u64 = 1 << 20;

/// The bench's `config-template`, relative to the experiment file: (path, text), read only from
/// a regular file of at most 1 MiB (a device, a FIFO or a huge file is refused, not read).
pub fn read_template(bench: &Bench) -> Result<Option<(String, String)>, String> {
    let Some(t) = bench.settings.get("config-template") else {
        return Ok(None);
    };
    let base = std::path::Path::new(&bench.loc.src.name)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let path = base.join(t.val.to_string());
    let shown = path.display().to_string();
    let meta = std::fs::metadata(&path).map_err(|e| format!("config-template {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("config-template {shown} is not a regular file"));
    }
    if meta.len() > TEMPLATE_MAX {
        return Err(format!(
            "config-template {shown} is {} bytes; a config template holds at most {TEMPLATE_MAX}",
            meta.len()
        ));
    }
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(TEMPLATE_MAX + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("config-template {shown}: {e}"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("config-template {shown} is not UTF-8 text"))?;
    Ok(Some((shown, text)))
}

/// What `check` says of a point's config template: it renders to a JSON object, or why not
/// (`true`: the file cannot be read, `false`: it does not render to JSON).
pub fn template_problem(exp: &Experiment, bench: &Bench, p: &Point) -> Option<(bool, String)> {
    let (from, text) = match read_template(bench) {
        Ok(Some(t)) => t,
        Ok(None) => return None,
        Err(e) => return Some((true, e)),
    };
    let t = match classify(&bench.lanes[p.lane].name) {
        Some(LaneKind::RecStore { ps_type, .. }) => ps_type,
        _ => return None,
    };
    let ctx = Ctx {
        exp,
        output: exp.output.clone(),
        started: String::new(),
        deal: 1,
        on: None,
        done: Default::default(),
        rendered: Default::default(),
    };
    let vdir = value_dir(&ctx, t);
    let generated = config_json(&ctx, bench, p, t, &vdir, Layout::Nested);
    config_from_template(&text, &from, p, &generated, &vdir, "RUNTIME")
        .err()
        .map(|e| (false, e))
}

/// A point's config from the user's `config-template` (minijinja over the point's settings,
/// with `_` for `-` in names, and what expr derives: `ps_type`, `servers_json`, `num_shards`,
/// `value_dir`, `value_size`, `run_id`, `runtime`, `generated_json` — the config expr would
/// write): it must render to a JSON object.
fn config_from_template(
    template: &str,
    from: &str,
    p: &Point,
    generated: &Value,
    value_dir: &str,
    runtime: &str,
) -> Result<Value, String> {
    let mut vars = serde_json::Map::new();
    let mut names: Vec<&String> = p.base.keys().collect();
    names.extend(p.overridden());
    for k in names {
        if let Some(v) = p.get(k) {
            let v = match v {
                Val::Int(i) => json!(i),
                Val::Bool(b) => json!(b),
                other => json!(other.to_string()),
            };
            vars.insert(k.replace('-', "_"), v);
        }
    }
    let servers = &generated["cache_ps"]["servers"];
    for (k, v) in [
        ("ps_type", generated["cache_ps"]["ps_type"].clone()),
        ("servers_json", json!(servers.to_string())),
        ("num_shards", generated["cache_ps"]["num_shards"].clone()),
        ("value_dir", json!(value_dir)),
        (
            "value_size",
            json!(p.int("embedding-dim").saturating_mul(4)),
        ),
        ("run_id", json!(p.run_id)),
        ("runtime", json!(runtime)),
        ("generated_json", json!(generated.to_string())),
    ] {
        vars.insert(k.into(), v);
    }
    let text = crate::model::template::render(
        template,
        &minijinja::Value::from_serialize(Value::Object(vars)),
        crate::model::template::Quote::Plain,
    )
    .map_err(|e| format!("config-template {from}: {e}"))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "config-template {from} does not render to JSON ({e}) for point {}",
            p.run_id
        )
    })?;
    if !v.is_object() {
        return Err(format!(
            "config-template {from} renders to {} for point {}, not a JSON object",
            v, p.run_id
        ));
    }
    Ok(v)
}

/// Every key `config_json` writes, and what it comes from: a setting (or the placement), which
/// a `config` block may not shadow, or `None` for a fixed or derived value a block may replace.
pub const GENERATED: &[(&str, Option<&str>)] = &[
    (
        "cache_ps.ps_type",
        Some("the lane's PS type (`RecStore-<PS>`)"),
    ),
    ("cache_ps.max_batch_keys_size", Some("max-batch-keys-size")),
    ("cache_ps.num_threads", Some("ps-num-threads")),
    ("cache_ps.num_shards", Some("the `ps` nodes")),
    ("cache_ps.servers", Some("the `ps` nodes")),
    ("cache_ps.base_kv_config.capacity", Some("capacity")),
    ("cache_ps.base_kv_config.index.type", Some("index-type")),
    ("cache_ps.base_kv_config.value.type", None),
    ("cache_ps.base_kv_config.value.path", None),
    (
        "cache_ps.base_kv_config.value.default_value_size_hint",
        Some("embedding-dim"),
    ),
    (
        "cache_ps.base_kv_config.value.dram_allocator.type",
        Some("dram-allocator"),
    ),
    (
        "cache_ps.base_kv_config.value.dram_allocator.capacity_bytes",
        None,
    ),
    ("distributed_client.num_shards", Some("the `ps` nodes")),
    ("distributed_client.hash_method", Some("hash-method")),
    (
        "distributed_client.max_keys_per_request",
        Some("max-keys-per-request"),
    ),
    ("distributed_client.servers", Some("the `ps` nodes")),
    ("client", Some("the `ps` nodes (the first server)")),
    ("local_shm.region_name", None),
];

/// Keys only the flat layout writes, and the setting each comes from (for schema messages).
const FLAT_ORIGINS: &[(&str, &str)] = &[
    ("cache_ps.base_kv_config.value_size", "embedding-dim"),
    (
        "cache_ps.base_kv_config.value_memory_management",
        "dram-allocator",
    ),
];

/// Why a `config` block key may not be merged, if it may not: it shadows a key a setting or the
/// placement writes, replaces a generated object with a value, or nests under a generated value.
pub fn config_key_problem(key: &ConfigKey) -> Option<String> {
    let path: Vec<&str> = key.path.iter().map(String::as_str).collect();
    for (g, from) in GENERATED {
        let gen: Vec<&str> = g.split('.').collect();
        let (under, over) = (path.starts_with(&gen), gen.starts_with(&path));
        match from {
            Some(setting) if under || over => {
                return Some(if setting.starts_with("the ") {
                    format!("`{g}` is written from {setting}; change that instead")
                } else {
                    format!("`{g}` is written from the setting `{setting}`; set `{setting}` instead (it can then be swept)")
                });
            }
            _ if under && path.len() > gen.len() => {
                return Some(format!(
                    "`{g}` is a value in the generated file, not an object"
                ));
            }
            _ if over && path.len() < gen.len() => {
                return Some(format!(
                    "`{}` is an object in the generated file (it holds `{g}`); set its keys one by one",
                    key.dotted()
                ));
            }
            _ => {}
        }
    }
    None
}

/// Where the checkout keeps its schema of recstore_config.json (RecStore/RecStore, and the
/// wurenrumian fork's CI copy).
pub const SCHEMA_FILES: &[&str] = &[
    "tools/config/recstore_config.schema.json",
    "ci/schema/recstore_config.schema.json",
];

/// Where each key of a point's config comes from, for schema violations.
fn config_origins(bench: &Bench, p: &Point) -> SchemaCheck {
    let (_, ps) = clients_ps(bench);
    let ps = &ps[..];
    let lane = &bench.lanes[p.lane];
    let mut origins = Vec::new();
    let flat = FLAT_ORIGINS.iter().map(|(k, f)| (*k, Some(*f)));
    for (g, from) in GENERATED.iter().copied().chain(flat) {
        let Some(from) = from else { continue };
        let at = if from.starts_with("the lane") {
            format!("{:?} (lane `{}`)", lane.loc, lane.name)
        } else if from.starts_with("the ") {
            match ps.first() {
                Some(s) => format!("{:?} ({from})", s.loc),
                None => format!("{:?} ({from})", bench.loc),
            }
        } else {
            match p.param(from).and_then(|x| x.loc.clone()) {
                Some(loc) => format!("{loc:?} (`{from}`)"),
                None => format!(
                    "expr's default of `{from}` (set it in the bench at {:?})",
                    bench.loc
                ),
            }
        };
        let path: Vec<&str> = g.split('.').collect();
        origins.push((json_pointer(&path), at));
    }
    for k in &bench.config {
        origins.push((json_pointer(&k.path), format!("{:?} (config block)", k.loc)));
    }
    SchemaCheck {
        candidates: SCHEMA_FILES.iter().map(|s| s.to_string()).collect(),
        origins,
        lenient: vec!["/cache_ps/ps_type".into()],
        alternatives: Vec::new(),
        hint: match bench.str("config-layout") {
            "auto" => None,
            forced => Some(format!(
                "the file has the {forced} layout because `config-layout \"{forced}\"` says so; `config-layout \"auto\"` writes the layout this checkout's schema takes"
            )),
        },
    }
}

/// (num_shards, {(host, port, shard)}) of one server list.
type ShardLayout = (i64, BTreeSet<(String, i64, i64)>);

/// cache_ps and distributed_client must describe the same shard layout, routed by shard id.
pub fn check_layout(config: &Value) -> Result<(), String> {
    let layout = |section: &str| -> Result<ShardLayout, String> {
        let s = &config[section];
        let n = s["num_shards"]
            .as_i64()
            .ok_or(format!("{section}.num_shards is missing"))?;
        let servers = s["servers"]
            .as_array()
            .ok_or(format!("{section}.servers is missing"))?;
        let mut set = BTreeSet::new();
        for v in servers {
            let host = v["host"].as_str().unwrap_or_default().to_string();
            let port = v["port"].as_i64().unwrap_or(-1);
            let shard = v["shard"].as_i64().unwrap_or(-1);
            set.insert((host, port, shard));
        }
        if set.len() as i64 != n {
            return Err(format!(
                "{section}: num_shards is {n} but {} servers are listed",
                set.len()
            ));
        }
        let shards: BTreeSet<i64> = set.iter().map(|x| x.2).collect();
        if shards != (0..n).collect() {
            return Err(format!("{section}: shard ids {shards:?} are not 0..{n}"));
        }
        Ok((n, set))
    };
    let a = layout("cache_ps")?;
    let b = layout("distributed_client")?;
    if a != b {
        return Err(
            "cache_ps.servers and distributed_client.servers describe different shard layouts"
                .into(),
        );
    }
    Ok(())
}

/// deployment.md in the runbook's format.
pub fn deployment_md(ctx: &Ctx, bench: &Bench, runtime: &str) -> String {
    let (clients, ps) = clients_ps(bench);
    let (clients, ps) = (&clients[..], &ps[..]);
    let mut o = String::new();
    o.push_str(&format!("模型: {}\n", bench.str("model")));
    let t: Vec<&str> = transports(bench);
    o.push_str(&format!(
        "传输: {}\n",
        if t.is_empty() {
            "无 (仅 TorchRec)".to_string()
        } else {
            t.join(", ")
        }
    ));
    // one line a host: where it logs in, its checkout and address, then its part
    let line = |host: &str, part: String| {
        let h = ctx.host(host);
        format!("  - {}, repo={}, ip={}, {part}\n", login(h), h.repo, h.ip)
    };
    o.push_str("client:\n");
    for c in clients {
        o.push_str(&line(
            &c.host,
            format!(
                "gpu={}, node_rank={}, nproc_per_node={}",
                c.gpu, c.node_rank, c.nproc_per_node
            ),
        ));
    }
    o.push_str("ps:\n");
    for s in ps {
        o.push_str(&line(
            &s.host,
            format!("ps_port={}, shard={}", s.port, s.shard),
        ));
    }
    let distributed = clients.len() > 1 || clients.iter().any(|c| c.nproc_per_node > 1);
    o.push_str(&format!(
        "client 部署: {}\n",
        if distributed {
            "distributed"
        } else {
            "single-node"
        }
    ));
    o.push_str(&format!(
        "PS 部署: {}\n",
        if ps.len() > 1 {
            "sharded-ps"
        } else {
            "single-ps"
        }
    ));
    o.push_str(&format!(
        "分片: {}, hash_method={}, max_keys_per_request={}\n",
        ps.len(),
        bench.str("hash-method"),
        bench.int("max-keys-per-request")
    ));
    o.push_str(&format!("dataset: {}\n", bench.str("dataset")));
    o.push_str(&format!("runtime: {runtime}\n"));
    o.push_str(&format!("output: {}\n", ctx.output));
    // the build as it runs, where there is one (plan and commands.sh show the commands)
    if t.is_empty() {
        return o;
    }
    if !bench.build.cmake_args.is_empty() {
        o.push_str(&format!(
            "cmake-args: {}\n",
            crate::util::shell::join(&bench.build.cmake_args)
        ));
    }
    for (k, v) in &bench.build.env {
        o.push_str(&format!(
            "build-env: {k}={}\n",
            crate::util::shell::quote(&crate::util::secret::mask(k, v))
        ));
    }
    o.push_str(&format!(
        "build-jobs: {}\n",
        bench
            .settings
            .get("build-jobs")
            .map(|j| j.val.to_string())
            .unwrap_or_else(|| "each host's core count (nproc)".into())
    ));
    o
}

fn runtime_dir(ctx: &Ctx, bench: &Bench) -> Result<String, String> {
    let c = minijinja::context! { output => ctx.output.clone(), name => ctx.exp.name.clone(), started => ctx.started.clone() };
    crate::model::template::render(
        bench.str("runtime-dir"),
        &c,
        crate::model::template::Quote::Plain,
    )
    .map_err(|e| {
        match bench
            .settings
            .get("runtime-dir")
            .and_then(|p| p.loc.as_ref())
        {
            Some(loc) => format!("{loc:?}: `runtime-dir`: {e}"),
            None => format!("`runtime-dir`: {e}"),
        }
    })
}

/// The directory of a PS type's config under the runtime dir: the runtime dir itself, or
/// `<runtime>/<ps>` when the bench's lanes use several PS types (as the upstream matrix runner
/// passes `--recstore-runtime-dir <runtime>/<transport>`); the client reads
/// `<dir>/recstore_config.json`.
fn config_dir(bench: &Bench, runtime: &str, ps_type: &str) -> String {
    if transports(bench).len() > 1 {
        format!("{runtime}/{}", ps_type.to_ascii_lowercase())
    } else {
        runtime.to_string()
    }
}

/// The ops library the build makes (target `recstore_torch_ops`, OUTPUT_NAME `_recstore_ops`),
/// as an absolute path on `host`: recent clients chdir to the runtime dir before they load it.
pub fn ops_library(host: &Host, build_dir: &str) -> String {
    repo_abs(host, &format!("{build_dir}/lib/lib_recstore_ops.so"))
}

/// A path of the checkout on `host` as an absolute path (programs that chdir elsewhere, or
/// resolve it from their own folder, still find it).
pub fn repo_abs(host: &Host, rel: &str) -> String {
    let rel = rel.to_string();
    if rel.starts_with('/') {
        rel
    } else {
        let repo = host.repo.trim_end_matches('/');
        if repo == "." || repo.is_empty() {
            host_path(host, &rel)
        } else if host.is_local() {
            format!("{}/{rel}", host_path(host, repo).trim_end_matches("/."))
        } else {
            format!("{repo}/{rel}")
        }
    }
}

/// BRPC's client and server environment, as the upstream runner sets it on both (the final
/// flush can pass brpc's 5 s default timeout).
const BRPC_ENV: &[(&str, &str)] = &[
    ("RECSTORE_BRPC_USE_RDMA", "0"),
    ("RDMA_DEVICE", ""),
    ("RECSTORE_BRPC_TIMEOUT_MS", "60000"),
];

pub fn plan(ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
    let (clients, ps) = clients_ps(bench);
    let (clients, ps) = (&clients[..], &ps[..]);
    let runtime = runtime_dir(ctx, bench)?;
    let mut out = KindPlan::with_points(points.len());
    out.files.push(PlannedFile {
        path: "deployment.md".into(),
        content: deployment_md(ctx, bench, &runtime),
    });
    let build_dir = bench.str("build-dir").to_string();
    let transports = transports(bench);

    // Build and targeted tests, once per (host, repo): every host that runs a client or a PS.
    let mut hosts: Vec<&str> = Vec::new();
    for h in clients
        .iter()
        .map(|c| c.host.as_str())
        .chain(ps.iter().map(|p| p.host.as_str()))
    {
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    out.setup = setup_steps(ctx, bench, clients, &hosts, &transports, &build_dir);
    let rank0_ip = clients
        .iter()
        .find(|c| c.node_rank == 0)
        .map(|c| ctx.host(&c.host).ip.clone())
        .unwrap_or_else(|| "127.0.0.1".into());
    let template = read_template(bench)?;
    let pc = PointCtx {
        ctx,
        bench,
        clients,
        ps,
        hosts: &hosts,
        runtime: &runtime,
        build_dir: &build_dir,
        template: &template,
        layout: match bench.str("config-layout") {
            "flat" => Layout::Flat,
            _ => Layout::Nested,
        },
        shard0: ps.iter().find(|p| p.shard == 0).or(ps.first()),
        distributed: clients.len() > 1 || clients.iter().any(|c| c.nproc_per_node > 1),
        rank0_ip: &rank0_ip,
    };
    for p in points {
        let kind = classify(&bench.lanes[p.lane].name);
        let mut steps = Vec::new();
        let recstore = match &kind {
            Some(LaneKind::RecStore { ps_type, .. }) => Some(*ps_type),
            _ => None,
        };
        let cfg_dir = recstore.map(|t| config_dir(bench, &runtime, t));
        if let Some(t) = recstore {
            config_and_servers(&pc, p, t, &cfg_dir, &mut steps)?;
        }
        for c in clients {
            steps.push(client_step(&pc, p, c, &kind, recstore, &cfg_dir));
        }
        steps.extend(collect_steps(&pc, p));
        teardown(&mut steps);
        out.push_point(steps);
        out.ranks.push(Some(rank_check(&pc, p, recstore)));
    }
    Ok(out)
}

/// The build and targeted tests on every host that runs a client or a PS, once per (host,
/// repo): configure, build the targets the run needs, check the ops library is where the
/// clients load it from, then each transport's tests.
fn setup_steps(
    ctx: &Ctx,
    bench: &Bench,
    clients: &[Client],
    hosts: &[&str],
    transports: &[&'static str],
    build_dir: &str,
) -> Vec<Step> {
    let mut steps = Vec::new();
    if transports.is_empty() {
        return steps;
    }
    for h in hosts {
        steps.extend(build_steps(ctx, bench, clients, h, transports, build_dir));
    }
    for t in transports {
        for h in hosts {
            let host = ctx.host(h);
            let mut s = Step::new(
                format!("test-{}", t.to_ascii_lowercase()),
                Phase::Test,
                host,
                &bench.loc,
            );
            s.argv = vec![
                "ctest".into(),
                "--test-dir".into(),
                build_dir.to_string(),
                "-R".into(),
                test_regex(t).into(),
                "--output-on-failure".into(),
            ];
            // the tests start their own ps_server: the one this build made, the checkout's
            // config, and its logs kept with the run's (the launcher's defaults are a
            // search of relative paths from ctest's folder and `./logs` there)
            s.env = vec![
                (
                    "PS_SERVER_PATH".into(),
                    repo_abs(host, &format!("{build_dir}/bin/ps_server")),
                ),
                (
                    "RECSTORE_CONFIG".into(),
                    repo_abs(host, "recstore_config.json"),
                ),
                (
                    "PS_LOG_DIR".into(),
                    ctx.out_path(host, &format!("logs/ctest-{}", t.to_ascii_lowercase())),
                ),
            ];
            s.timeout_s = 1800;
            steps.push(s);
        }
    }
    steps
}

/// Configure and build on one host, and check the ops library the clients load is there.
fn build_steps(
    ctx: &Ctx,
    bench: &Bench,
    clients: &[Client],
    h: &str,
    transports: &[&'static str],
    build_dir: &str,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let host = ctx.host(h);
    let mut s = Step::new(
        "build-configure".to_string(),
        Phase::Build,
        host,
        &bench.loc,
    );
    s.argv = vec![
        "cmake".into(),
        "-S".into(),
        ".".into(),
        "-B".into(),
        build_dir.to_string(),
        "-DCMAKE_BUILD_TYPE=Release".into(),
    ];
    s.argv.extend(bench.build.cmake_args.iter().cloned());
    s.env = bench.build.env.clone();
    if !bench.build.cmake_args.is_empty() {
        s.extra_mut().note = Some(format!(
            "cmake-args: {}",
            crate::util::shell::join(&bench.build.cmake_args)
        ));
    }
    s.timeout_s = 3600;
    steps.push(s);
    let mut s = Step::new("build".to_string(), Phase::Build, host, &bench.loc);
    // what the run needs: the server, the client's ops library and every test ctest runs
    // (their executables are built only by their own targets)
    let mut targets: Vec<String> = Vec::new();
    if transports.iter().any(|t| *t == "BRPC" || *t == "GRPC") {
        targets.push("ps_server".into());
    }
    if transports.contains(&"LOCAL_SHM") {
        targets.push("local_shm_ps_server".into());
    }
    if transports.contains(&"RDMA") {
        targets.push("petps_server".into());
    }
    targets.push("recstore_torch_ops".into());
    let mut tests: Vec<String> = Vec::new();
    for t in transports {
        for name in test_regex(t).split('|') {
            if !tests.iter().any(|x| x == name) {
                tests.push(name.to_string());
            }
        }
    }
    targets.extend(tests.iter().cloned());
    s.argv = vec![
        "cmake".into(),
        "--build".into(),
        build_dir.to_string(),
        "--target".into(),
    ];
    s.argv.extend(targets.iter().cloned());
    s.env = bench.build.env.clone();
    s.argv.push("-j".into());
    let jobs = match bench.settings.get("build-jobs") {
        Some(j) => j.val.to_string(),
        None => {
            // each host's own core count, asked there when the step runs
            s.shell = Some(format!(
                "{} \"$(nproc)\"",
                crate::util::shell::join(&s.argv)
            ));
            "its core count (nproc)".into()
        }
    };
    if s.shell.is_none() {
        s.argv.push(jobs.clone());
    }
    let servers: Vec<&str> = targets
        .iter()
        .map(String::as_str)
        .filter(|t| t.ends_with("_server"))
        .collect();
    s.extra_mut().note = Some(format!(
        "-j {jobs}; targets: {} (the PS), recstore_torch_ops ({build_dir}/lib/lib_recstore_ops.so, which the Python client loads), {} (the correctness tests ctest runs)",
        servers.join(", "),
        tests.join(", ")
    ));
    s.timeout_s = 7200;
    steps.push(s);
    // what the clients load must exist where they are told it is
    if clients.iter().any(|c| c.host == h) {
        let lib = ops_library(host, build_dir);
        let mut s = Step::new(
            "check-ops-library".to_string(),
            Phase::Build,
            host,
            &bench.loc,
        );
        let q = crate::util::shell::quote(&lib);
        s.shell = Some(format!(
            "test -f {q} || {{ echo {}; exit 1; }}",
            crate::util::shell::quote(&format!(
                "the build made no {lib}: the client loads the ops library from there (target recstore_torch_ops); look at the build log, or set `build-dir` to where this checkout builds"
            ))
        ));
        s.extra_mut().note = Some("the RecStore client loads this library (RECSTORE_OPS_LIBRARY, or --library-path where the checkout takes it)".into());
        s.timeout_s = 30;
        steps.push(s);
    }
    steps
}

/// What every point's steps share: the bench's placement and its build and config choices.
#[derive(Clone, Copy)]
struct PointCtx<'a> {
    ctx: &'a Ctx<'a>,
    bench: &'a Bench,
    clients: &'a [Client],
    ps: &'a [PsServer],
    /// Every host that runs a client or a PS.
    hosts: &'a [&'a str],
    runtime: &'a str,
    build_dir: &'a str,
    /// A user's template of the config, for checkouts expr cannot model.
    template: &'a Option<(String, String)>,
    layout: Layout,
    shard0: Option<&'a PsServer>,
    distributed: bool,
    rank0_ip: &'a str,
}

/// A RecStore point's config file (written on every host that runs a client or a server)
/// and its PS servers.
fn config_and_servers(
    pc: &PointCtx,
    p: &Point,
    t: &'static str,
    cfg_dir: &Option<String>,
    steps: &mut Vec<Step>,
) -> Result<(), String> {
    let PointCtx {
        ctx,
        bench,
        ps,
        hosts,
        runtime,
        build_dir,
        template,
        layout,
        ..
    } = *pc;
    let vdir = value_dir(ctx, t);
    let render = |layout: Layout| -> Result<String, String> {
        let generated = config_json(ctx, bench, p, t, &vdir, layout);
        let mut config = match &template {
            Some((from, text)) => config_from_template(text, from, p, &generated, &vdir, runtime)?,
            None => generated,
        };
        crate::model::merge_config(&mut config, &bench.config)?;
        if config.get("cache_ps").is_some() && config.get("distributed_client").is_some() {
            check_layout(&config)?;
        }
        Ok(serde_json::to_string_pretty(&config).map_err(|e| e.to_string())? + "\n")
    };
    let content = render(layout)?;
    // `auto`: the other shape too; preflight writes the one the checkout's schema takes
    let alternatives = if template.is_none() && bench.str("config-layout") == "auto" {
        vec![(Layout::Flat.name().to_string(), render(Layout::Flat)?)]
    } else {
        Vec::new()
    };
    let dir = cfg_dir.clone().unwrap_or_default();
    let cfg_path = format!("{dir}/recstore_config.json");
    // Written on every host that runs a client or a server.
    for h in hosts {
        let host = ctx.host(h);
        let mut s = Step::new(
            format!("config-{}", p.run_id),
            Phase::Config,
            host,
            &bench.loc,
        );
        s.file = Some(Box::new(PlannedFile {
            path: host_path(host, &cfg_path),
            content: content.clone(),
        }));
        let mut check = config_origins(bench, p);
        check.alternatives = alternatives.clone();
        if let Some((from, _)) = &template {
            // every key comes from the template (a `config` block's from that block)
            check
                .origins
                .retain(|(_, at)| at.ends_with("(config block)"));
            check
                .origins
                .push((String::new(), format!("config-template {from}")));
        }
        s.schema = Some(Box::new(check));
        steps.push(s);
    }
    let servers: &[PsServer] = if t == "LOCAL_SHM" {
        &ps[..ps.len().min(1)]
    } else {
        ps
    };
    for s in servers {
        let host = ctx.host(&s.host);
        let mut st = Step::new(
            format!("ps{}-{}", s.shard, p.run_id),
            Phase::Serve,
            host,
            &s.loc,
        );
        let bin = match t {
            "RDMA" => "petps_server",
            "LOCAL_SHM" => "local_shm_ps_server",
            _ => "ps_server",
        };
        st.argv = vec![
            format!("{build_dir}/bin/{bin}"),
            "--config_path".into(),
            host_path(host, &cfg_path),
        ];
        if t == "LOCAL_SHM" {
            // no port: ready when still running 0.5 s after it started (rs_demo's rule)
            st.ready = Some(Box::new(Ready::Alive { ms: 500 }));
        } else {
            if ps.len() == 1 {
                // A single-shard BRPC server binds --brpc_server_port and ignores the
                // config port (GRPC binds 15000: a rule holds it there).
                if t == "BRPC" {
                    st.argv
                        .extend(["--brpc_server_port".into(), s.port.to_string()]);
                }
            } else {
                st.argv
                    .extend(["--local_shard_id".into(), s.shard.to_string()]);
            }
            st.ready = Some(Box::new(Ready::Tcp {
                ip: host.ip.clone(),
                port: s.port,
            }));
        }
        if t == "BRPC" {
            st.env = BRPC_ENV
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        }
        st.background = true;
        st.extra_mut().scratch = vec![vdir.clone()];
        if t == "LOCAL_SHM" {
            st.extra_mut()
                .scratch
                .push(format!("/dev/shm/{}", local_shm_region(ctx)));
        }
        st.timeout_s = p.int("server-timeout");
        steps.push(st);
    }
    Ok(())
}

/// One client node's step: `run_mock_stress.py` with the lane's backend, the point's
/// workload and, for several nodes or ranks, the rendezvous.
fn client_step(
    pc: &PointCtx,
    p: &Point,
    c: &Client,
    kind: &Option<LaneKind>,
    recstore: Option<&'static str>,
    cfg_dir: &Option<String>,
) -> Step {
    let PointCtx {
        ctx,
        bench,
        clients,
        runtime,
        build_dir,
        shard0,
        distributed,
        rank0_ip,
        ..
    } = *pc;
    let host = ctx.host(&c.host);
    let mut st = Step::new(
        format!("client-n{}-{}", c.node_rank, p.run_id),
        Phase::Launch,
        host,
        &c.loc,
    );
    if p.str("device") == "cuda" {
        st.env.push((
            "CUDA_VISIBLE_DEVICES".into(),
            cuda_devices(c.gpu, c.nproc_per_node),
        ));
    }
    if let Some(t) = recstore {
        // the client loads the ops library from where the build step put it: an
        // absolute path (recent clients chdir to the runtime dir first); checkouts
        // that ignore the variable take --library-path
        let lib = ops_library(host, build_dir);
        st.env.push(("RECSTORE_OPS_LIBRARY".into(), lib.clone()));
        st.extra_mut().optional.push(("--library-path".into(), lib));
        if t == "BRPC" {
            st.env
                .extend(BRPC_ENV.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        }
        if t == "LOCAL_SHM" && !distributed {
            // the lane asks for the single-node backend: said where the checkout has it
            st.extra_mut()
                .optional
                .push(("--single-node-ps-backend".into(), "local_shm".into()));
        }
    }
    st.env.extend(host.env.iter().cloned());
    let mut a = stress_flags(p, kind, recstore, &mut st);
    let mut flag = |k: &str, v: String| {
        a.push(k.into());
        a.push(v);
    };
    if p.str("model") != "dlrm" {
        flag("--model", p.str("model").into());
    }
    flag("--data-dir", p.str("dataset").into());
    flag("--output-root", ctx.out_path(host, ""));
    flag("--run-id", p.run_id.clone());
    if let Some(t) = recstore {
        let dir = cfg_dir.clone().unwrap_or_else(|| runtime.to_string());
        flag("--recstore-runtime-dir", host_path(host, &dir));
        a.push("--no-start-server".into());
        if let (Some(s0), false) = (shard0, t == "LOCAL_SHM") {
            a.push("--server-host".into());
            a.push(ctx.host(&s0.host).ip.clone());
            a.push("--server-port0".into());
            a.push(s0.port.to_string());
        }
        if !p.bool("fusion") {
            a.push("--disable-recstore-fusion".into());
        }
    }
    if distributed {
        let master = match bench.settings.get("master-addr") {
            Some(m) => m.val.to_string(),
            None => rank0_ip.to_string(),
        };
        for (k, v) in [
            ("--nnodes", clients.len().to_string()),
            ("--node-rank", c.node_rank.to_string()),
            ("--nproc-per-node", c.nproc_per_node.to_string()),
            ("--master-addr", master),
            ("--master-port", p.int("master-port").to_string()),
            ("--rdzv-id", p.run_id.clone()),
        ] {
            a.push(k.into());
            a.push(v);
        }
    }
    st.argv = a;
    st.timeout_s = p.int("client-timeout");
    st
}

/// `run_mock_stress.py` with the lane's backend and the point's workload: flags that some
/// checkouts lack are left out where they hold the script's own default (said on the step).
fn stress_flags(
    p: &Point,
    kind: &Option<LaneKind>,
    recstore: Option<&'static str>,
    st: &mut Step,
) -> Vec<String> {
    // run_mock_stress.py's own defaults (RS@0516ae3d): flags that some checkouts lack are
    // passed only when they differ from these or the experiment writes them
    let mut f = Flags::new(vec![
        p.str("python").into(),
        "model_zoo/rs_demo/run_mock_stress.py".into(),
    ]);
    match &kind {
        Some(LaneKind::TorchRec { memory_mode }) => {
            f.push("--backend", "torchrec");
            f.unless_default(
                "--torchrec-memory-mode",
                *memory_mode,
                "hbm",
                "torchrec-memory-mode",
            );
        }
        _ => {
            f.push("--backend", "recstore");
            f.push("--ps-type", recstore.unwrap_or("BRPC"));
            // the config file names the index too (`index.type` / `index_type`): a
            // checkout without the flag (WU@2fb8d826) reads it from there
            if p.str("index-type") != "DRAM_EXTENDIBLE_HASH" {
                st.extra_mut()
                    .optional
                    .push(("--recstore-index-type".into(), p.str("index-type").into()));
            }
            f.unless_default(
                "--ps-kv-backend",
                p.str("kv-backend"),
                "recstore_dram",
                "kv-backend",
            );
        }
    }
    f.push("--batch-size", p.int("batch-size").to_string());
    f.push("--embedding-dim", p.int("embedding-dim").to_string());
    f.push("--num-embeddings", p.int("num-embeddings").to_string());
    f.push("--steps", p.int("steps").to_string());
    f.push("--warmup-steps", p.int("warmup-steps").to_string());
    if recstore.is_some() {
        f.push("--read-mode", p.str("read-mode"));
        f.unless_default(
            "--prefetch-depth",
            p.int("prefetch-depth").to_string(),
            "0",
            "prefetch-depth",
        );
    }
    // DLRM's last dense layer must equal the embedding dim
    let dim = p.int("embedding-dim");
    match p.get("dense-arch-layer-sizes") {
        Some(v) => f.push("--dense-arch-layer-sizes", v.to_string()),
        None if dim != 128 => f.push("--dense-arch-layer-sizes", format!("512,256,{dim}")),
        None => {}
    }
    st.extra_mut().omitted = std::mem::take(&mut f.omitted);
    st.extra_mut().flag_defaults = std::mem::take(&mut f.defaults);
    f.argv
}

/// The steps that bring remote clients' artifacts back to the result directory.
fn collect_steps(pc: &PointCtx, p: &Point) -> Vec<Step> {
    let PointCtx { ctx, clients, .. } = *pc;
    let mut steps = Vec::new();
    // Artifacts of remote clients come back to the result directory.
    for c in clients {
        let host = ctx.host(&c.host);
        if host.is_local() {
            continue;
        }
        let mut st = Step::new(
            format!("collect-n{}-{}", c.node_rank, p.run_id),
            Phase::Collect,
            host,
            &c.loc,
        );
        let remote = in_repo(host, &format!("{}/outputs/{}/", ctx.output, p.run_id));
        let local = format!("{}/outputs/{}/", ctx.output, p.run_id);
        st.argv = crate::kind_api::step::pull_argv(host, &remote, local);
        st.cwd = ".".into();
        steps.push(st);
    }
    steps
}

/// What complete per-rank output of the point looks like.
fn rank_check(pc: &PointCtx, p: &Point, recstore: Option<&'static str>) -> RankCheck {
    let PointCtx {
        clients,
        distributed,
        ..
    } = *pc;
    let world: i64 = clients.iter().map(|c| c.nproc_per_node).sum();
    // one policy for one rank and many: a failed parent whose CSVs are complete is
    // recovered (a single rank's CSV is its main CSV)
    let name = if recstore.is_some() {
        "recstore"
    } else {
        "torchrec"
    };
    RankCheck {
        dir: if distributed {
            format!("outputs/{}/{name}_ranks", p.run_id)
        } else {
            String::new()
        },
        main_csv: format!("outputs/{}/{name}_main.csv", p.run_id),
        world,
        steps: p.int("steps"),
        warmup: p.int("warmup-steps"),
    }
}

/// How the runbook's deployment names a host's login: `ssh_host=local (runs here)`, or the
/// ssh target with the port where the experiment writes one (else ssh's own configuration's).
fn login(h: &crate::model::Host) -> String {
    if h.is_local() {
        format!("ssh_host={} (runs here)", h.ssh)
    } else if h.ssh_port_loc.is_some() {
        format!("ssh_host={}, ssh_port={}", h.ssh, h.ssh_port)
    } else {
        format!("ssh_host={}, ssh_port=(ssh's own configuration)", h.ssh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_check_catches_lists_that_differ() {
        let ok = json!({
            "cache_ps": {"num_shards": 2, "servers": [{"host": "a", "port": 1, "shard": 1}, {"host": "b", "port": 2, "shard": 0}]},
            "distributed_client": {"num_shards": 2, "servers": [{"host": "b", "port": 2, "shard": 0}, {"host": "a", "port": 1, "shard": 1}]}
        });
        assert_eq!(
            check_layout(&ok),
            Ok(()),
            "order does not matter: routing is by shard id"
        );
        let swapped = json!({
            "cache_ps": {"num_shards": 2, "servers": [{"host": "a", "port": 1, "shard": 0}, {"host": "b", "port": 2, "shard": 1}]},
            "distributed_client": {"num_shards": 2, "servers": [{"host": "a", "port": 1, "shard": 1}, {"host": "b", "port": 2, "shard": 0}]}
        });
        assert!(check_layout(&swapped)
            .unwrap_err()
            .contains("different shard layouts"));
        let gap = json!({
            "cache_ps": {"num_shards": 2, "servers": [{"host": "a", "port": 1, "shard": 0}, {"host": "b", "port": 2, "shard": 2}]},
            "distributed_client": {"num_shards": 2, "servers": [{"host": "a", "port": 1, "shard": 0}, {"host": "b", "port": 2, "shard": 2}]}
        });
        assert!(check_layout(&gap).unwrap_err().contains("not 0..2"));
    }
}
