//! The `recstore-e2e` kind: RecStore lanes (BRPC/GRPC/LOCAL_SHM/RDMA and ablations) against
//! TorchRec on DLRM, following the RecStore E2E runbook.

pub mod collect;
pub mod lanes;
pub mod placement;
pub mod plan;
pub mod report;
pub mod rules;
pub mod spec;

use crate::kind_api::data::{BenchResults, Measure, Metric};
use crate::kind_api::doc::Doc;
use crate::kind_api::kind::Kind;
use crate::kind_api::kind::KindSpec;
use crate::kind_api::step::{Ctx, KindPlan, PlanPoint};
use crate::model::diag::Diags;
use crate::model::expand::Point;
use crate::model::{Bench, Experiment, RunIdNaming};
use crate::results::collect::PointDir;
use rules::{classify, LaneKind};

pub struct RecstoreE2e;

impl Kind for RecstoreE2e {
    fn setting_of_flag(&self, flag: &str) -> Option<String> {
        Some(
            match flag {
                "--recstore-index-type" => "index-type",
                "--ps-kv-backend" => "kv-backend",
                "--disable-recstore-fusion" => "fusion",
                "--torchrec-memory-mode" => "a TorchRec-UVM lane",
                "--recstore-runtime-dir" => "runtime-dir",
                _ => return None,
            }
            .into(),
        )
    }

    fn array_refusal(&self) -> Option<&'static str> {
        Some("its parameter servers, clients and rendezvous are placed across nodes of one allocation")
    }

    fn services(&self, b: &Bench) -> Vec<(String, i64, String, crate::model::Loc)> {
        let (clients, ps) = placement::clients_ps(b);
        let mut v: Vec<(String, i64, String, crate::model::Loc)> = ps
            .iter()
            .map(|p| {
                (
                    p.host.clone(),
                    p.port,
                    format!("PS shard {}", p.shard),
                    p.port_loc.clone().unwrap_or_else(|| p.loc.clone()),
                )
            })
            .collect();
        if clients.len() > 1 || clients.iter().any(|c| c.nproc_per_node > 1) {
            if let Some(rank0) = clients.iter().find(|c| c.node_rank == 0) {
                v.push(crate::kinds::ranks::rendezvous(b, &rank0.host));
            }
        }
        v
    }

    fn default_nodes(&self, loc: &crate::model::Loc) -> Vec<crate::model::PlacedNode> {
        placement::default_nodes(loc)
    }

    fn default_lanes(&self, bench: &Bench) -> Vec<String> {
        let ps = rules::lane_label(bench.str("ps-type"));
        vec![format!("RecStore-{ps}"), "TorchRec-HBM".into()]
    }

    fn naming(&self) -> RunIdNaming {
        RunIdNaming {
            lane_slug: rules::lane_slug,
            fixed_axes: &["batch-size", "embedding-dim"],
        }
    }

    fn validate(&self, exp: &Experiment, bench: &Bench, diags: &mut Diags) {
        rules::validate(exp, bench, diags)
    }

    fn validate_point(&self, exp: &Experiment, bench: &Bench, p: &Point, diags: &mut Diags) {
        rules::validate_point(bench, p, diags);
        // the config template renders to JSON for this point, as `plan` will render it
        if let Some((unreadable, why)) = plan::template_problem(exp, bench, p) {
            if diags.0.iter().any(|d| d.message == why) {
                return;
            }
            let loc = bench
                .settings
                .get("config-template")
                .and_then(|s| s.loc.clone())
                .unwrap_or_else(|| bench.loc.clone());
            diags.push(
                crate::model::diag::Diag::error(
                    if unreadable {
                        crate::model::diag::Code::Io
                    } else {
                        crate::model::diag::Code::InvalidValue
                    },
                    why,
                )
                    .at(&loc.src, loc.span)
                    .label("config template")
                    .help("it must be a UTF-8 file of at most 1 MiB that renders to a JSON object (minijinja; the point's settings with `_` for `-`)"),
            );
        }
    }

    fn runner_files(&self, bench: &Bench) -> Vec<(String, String)> {
        placement::clients_ps(bench)
            .0
            .into_iter()
            .map(|c| (c.host, "model_zoo/rs_demo/run_mock_stress.py".to_string()))
            .collect()
    }

    /// Recent run_mock_stress.py runs a one-node RecStore lane over its single-node backend
    /// (`--single-node-ps-backend`: local_shm or hierkv), whatever `--ps-type` says: a one-node
    /// `RecStore-BRPC` lane would measure LOCAL_SHM under the BRPC label.
    fn cli_problem(
        &self,
        bench: &Bench,
        step: &crate::kind_api::step::Step,
        known: &std::collections::BTreeSet<String>,
    ) -> Option<String> {
        // WU@2fb8d826 lists `--single-node-ps-backend` too, but its fast path is opt-in
        // (`--enable-single-node-distributed-fast-path`, default off: cli.py:86-90): a one-node
        // BRPC lane runs BRPC there
        if !known.contains("--single-node-ps-backend")
            || known.contains("--enable-single-node-distributed-fast-path")
            || step.argv.iter().any(|a| a == "--nnodes")
        {
            return None;
        }
        let ps_type = step
            .argv
            .iter()
            .position(|a| a == "--ps-type")
            .and_then(|i| step.argv.get(i + 1))?;
        if ps_type == "LOCAL_SHM" {
            return None;
        }
        let change = if bench.lanes.iter().any(|l| l.implicit) {
            "Set `ps-type \"LOCAL_SHM\"` (or run with `--set ps-type=LOCAL_SHM`: the default lane becomes `RecStore-SHM`)"
        } else {
            "Name the lane `RecStore-SHM` (LOCAL_SHM)"
        };
        Some(format!(
            "this checkout runs a one-node RecStore lane over its single-node backend (`--single-node-ps-backend` local_shm|hierkv), not {ps_type}: `{}` would report LOCAL_SHM numbers under a {ps_type} label. {change}, or place clients on two nodes to measure {ps_type}",
            step.id
        ))
    }

    fn overridden(&self, bench: &Bench) -> Vec<(&'static str, String)> {
        rules::overridden(bench)
    }

    fn plan(&self, ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
        plan::plan(ctx, bench, points)
    }

    fn manifest_own(&self) -> &'static [&'static str] {
        &[
            "backend",
            "transport",
            "torchrec_memory_mode",
            "client_ip",
            "server_count",
            "batch_size",
            "embedding_dim",
            "num_embeddings",
            "main_csv",
        ]
    }

    /// RecStore's matrix-runner columns, as its runbook has them; any other sweep axis goes
    /// before `repeat_index`.
    fn manifest_columns(&self, bench: &Bench) -> Vec<String> {
        let own = self.manifest_own();
        let mut v: Vec<String> = ["run_id", "lane"].map(String::from).to_vec();
        v.extend(own[..8].iter().map(|c| c.to_string()));
        v.extend(
            crate::kind_api::kind::axis_columns(bench, own)
                .into_iter()
                .filter(|c| !c.starts_with("sweep_")),
        );
        v.extend(
            crate::kind_api::kind::axis_columns(bench, own)
                .into_iter()
                .filter(|c| c.starts_with("sweep_") && !own.contains(&&c[6..])),
        );
        v.push("repeat_index".into());
        v.push("main_csv".into());
        v.extend(["log_path", "status", "exit_code", "reason"].map(String::from));
        v
    }

    fn manifest(
        &self,
        exp: &Experiment,
        bench: &Bench,
        p: &PlanPoint,
        output: &str,
    ) -> Vec<(String, String)> {
        let (mut backend, mut transport, mut memory, mut main) =
            (String::new(), String::new(), String::new(), String::new());
        match classify(&p.lane) {
            Some(LaneKind::RecStore { ps_type, .. }) => {
                backend = "recstore".into();
                transport = ps_type.into();
                main = format!("{output}/outputs/{}/recstore_main.csv", p.run_id);
            }
            Some(LaneKind::TorchRec { memory_mode }) => {
                backend = "torchrec".into();
                memory = memory_mode.into();
                main = format!("{output}/outputs/{}/torchrec_main.csv", p.run_id);
            }
            None => {}
        }
        let (clients, ps) = placement::clients_ps(bench);
        let servers = ps.len().to_string();
        let ips = clients
            .iter()
            .filter_map(|c| exp.host(&c.host))
            .map(|h| h.ip.clone())
            .collect::<Vec<_>>()
            .join(";");
        // the workload settings the runner names, swept or not
        let setting = |k: &str| p.setting_text(bench, k).unwrap_or_default();
        [
            ("backend", backend),
            ("transport", transport),
            ("torchrec_memory_mode", memory),
            ("client_ip", ips),
            ("server_count", servers),
            ("batch_size", setting("batch-size")),
            ("embedding_dim", setting("embedding-dim")),
            ("num_embeddings", setting("num-embeddings")),
            ("main_csv", main),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .to_vec()
    }

    fn own_aggregates(&self) -> &'static [&'static str] {
        &["recstore_main_agg.csv", "torchrec_main_agg.csv"]
    }
    fn baseline_lane(&self, bench: &Bench) -> Option<String> {
        bench
            .lanes
            .iter()
            .find(|l| l.name == "TorchRec-HBM")
            .or(bench.lanes.first())
            .map(|l| l.name.clone())
    }

    fn metrics(&self, _bench: &Bench, measure: &Measure) -> Vec<Metric> {
        match measure {
            Measure::Steps(s) => crate::kind_api::tables::step_metrics(s),
            _ => Vec::new(),
        }
    }

    fn per_step(&self, _bench: &Bench) -> bool {
        true
    }

    fn metric_names(&self, _bench: &Bench) -> Vec<String> {
        [
            "p95_step_total_ms",
            "mean_step_total_ms",
            "mean_embed_lookup_ms",
            "mean_embed_lookup_local_ms",
            "mean_dense_fwd_ms",
            "mean_backward_ms",
            "mean_dense_optimizer_ms",
            "mean_sparse_update_ms",
        ]
        .map(String::from)
        .to_vec()
    }

    fn headline(&self, _bench: &Bench) -> (String, String) {
        ("samples_per_sec".into(), "samples/s".into())
    }

    fn collect(&self, at: &PointDir, _bench: &Bench) -> Result<Measure, String> {
        collect::collect(at).map(Measure::Steps)
    }

    /// The runbook asks for summary.md in Chinese.
    fn default_language(&self) -> crate::util::lang::Lang {
        crate::util::lang::Lang::Zh
    }

    fn prose(
        &self,
        d: &mut Doc,
        exp: &Experiment,
        bench: &Bench,
        out_dir: &str,
        lang: crate::util::lang::Lang,
    ) {
        report::recstore_prose(d, exp, bench, out_dir, lang)
    }

    fn sections(&self, d: &mut Doc, r: &BenchResults<'_>) {
        let (data, bench, groups, dir) = (r.data, r.bench, r.groups, r.dir);
        let header = |lane: &str| report::lane_header(data, bench, lane, dir);
        crate::kind_api::tables::steps_sections(d, data, bench, groups, &header);
        let headers: Vec<String> = bench.lanes.iter().map(|l| header(&l.name)).collect();
        crate::kind_api::timing::timing_sections(d, data, bench, groups, &headers, None);
        report::upstream_clock_note(d, data, bench);
        report::transport_section(d, data, bench);
    }
}

/// The kind as the registry (`kinds::ALL`) and the schema know it.
pub const SPEC: KindSpec = KindSpec {
    settings: spec::SETTINGS,
    settings_doc: "Each setting is a child node with one value (`batch-size 2048`), may be overridden by a lane \
(`lane X batch-size=…` is refused for workload settings) and may be a sweep axis. Lanes: `RecStore-<BRPC|GRPC|SHM|LOCAL_SHM|RDMA>` \
with the ablation suffixes `-无预取` (read-mode direct), `-无预取无融合` (direct, fusion #false) and `-预取N` (prefetch-depth N), \
`TorchRec-HBM`, `TorchRec-UVM` (uvm_caching). Without lanes: `RecStore-<ps-type>` and `TorchRec-HBM`.",
    children: spec::CHILDREN,
    workload: spec::WORKLOAD,
    lane_forbidden: &[("ps-type", "a RecStore lane's name sets its transport: write `lane RecStore-GRPC`")],
    default_repeat: 3,
    codes: spec::code::ALL,
    ..KindSpec::new(
        "recstore-e2e",
        Some("\"recstore-e2e\""),
        &RecstoreE2e,
        "RecStore vs TorchRec end-to-end DLRM benchmark, after the RecStore E2E runbook.",
        "recstore-e2e {\n    client host=local gpu=0\n    ps host=local port=15000 shard=0\n}",
        include_str!("starter.kdl"),
    )
};
