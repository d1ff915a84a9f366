//! recstore-e2e's summary.md: the workload prose and the E2E sections with lane headers
//! that say whether a distributed TorchRec lane used NCCL over IB.

use std::collections::BTreeSet;
use std::path::Path;

use crate::kind_api::data::ReportData;
use crate::kind_api::doc::{Doc, Table, Text};
use crate::kind_api::tables::{lane_overrides_text, setting_text};
use crate::kinds::recstore_e2e::rules::{classify, LaneKind};
use crate::kinds::recstore_e2e::spec;
use crate::model::{Bench, Experiment};
use crate::util::lang::Lang;

/// The prose listing every hyperparameter of a recstore-e2e bench (the workload section), in
/// `l` (the runbook's Chinese by default).
pub fn recstore_prose(d: &mut Doc, exp: &Experiment, b: &Bench, dir: &str, l: Lang) {
    let (clients, ps) = super::placement::clients_ps(b);
    let placed = placed(exp, &clients, &ps, l);
    let rest = workload_text(b, dir, l, &placed);
    d.para(
        Text::plain(l.t("本次实验 ", "Experiment "))
            .and_code(&exp.name)
            .and(" ")
            .and(rest),
    );
    settings_table(d, b, l, clients.len(), ps.len());
}

/// A recstore-e2e bench's clients and PS shards as the workload prose lists them.
struct Placed {
    client_list: Vec<String>,
    ps_list: Vec<String>,
    /// `shard N → ip:port`
    mapping: Vec<String>,
    /// each client's GPUs
    gpus: Vec<String>,
    shards: usize,
    client_mode: &'static str,
    ps_mode: &'static str,
}

fn placed(
    exp: &Experiment,
    clients: &[super::placement::Client],
    ps: &[super::placement::PsServer],
    l: Lang,
) -> Placed {
    let host_ip = |h: &str| exp.host(h).map(|x| x.ip.clone()).unwrap_or_default();
    // a host with its part in brackets
    let entry = |host: &str, part: String| format!("{host}{}", l.paren(&part));
    let client_list: Vec<String> = clients
        .iter()
        .map(|c| {
            let sep = l.comma();
            let part = format!(
                "ip {}{sep}GPU {}{sep}node_rank {}{sep}nproc_per_node {}",
                host_ip(&c.host),
                c.gpu,
                c.node_rank,
                c.nproc_per_node
            );
            entry(&c.host, part)
        })
        .collect();
    let ps_list: Vec<String> = ps
        .iter()
        .map(|p| {
            let part = format!(
                "{}:{}{}shard {}",
                host_ip(&p.host),
                p.port,
                l.comma(),
                p.shard
            );
            entry(&p.host, part)
        })
        .collect();
    let mapping: Vec<String> = ps
        .iter()
        .map(|p| format!("shard {} → {}:{}", p.shard, host_ip(&p.host), p.port))
        .collect();
    let distributed = clients.len() > 1 || clients.iter().any(|c| c.nproc_per_node > 1);
    let gpus: Vec<String> = clients
        .iter()
        .map(|c| {
            let list: Vec<String> = (c.gpu..c.gpu + c.nproc_per_node)
                .map(|g| g.to_string())
                .collect();
            format!(
                "{} {} {}",
                c.host,
                l.t("使用 GPU", "uses GPU"),
                list.join(",")
            )
        })
        .collect();
    Placed {
        client_list,
        ps_list,
        mapping,
        gpus,
        shards: ps.len(),
        client_mode: if distributed {
            "distributed"
        } else {
            "single-node"
        },
        ps_mode: if ps.len() > 1 {
            "sharded-ps"
        } else {
            "single-ps"
        },
    }
}

/// The workload prose after `Experiment NAME `: model, transports, lanes, placement, every
/// hyperparameter, the sweep and the lanes' overrides.
fn workload_text(b: &Bench, dir: &str, l: Lang, p: &Placed) -> String {
    let transports: Vec<String> = b
        .lanes
        .iter()
        .filter_map(|l| match classify(&l.name) {
            Some(LaneKind::RecStore { ps_type, .. }) => Some(ps_type.to_string()),
            _ => None,
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let axes: Vec<String> = b.sweep.axis_names().map(str::to_string).collect();
    let transport = if transports.is_empty() {
        l.t("无（仅 TorchRec）", "none (TorchRec only)").to_string()
    } else {
        transports.join(l.and_sep())
    };
    let lanes = b.lane_names().join(l.and_sep());
    let (client_mode, ps_mode) = (p.client_mode, p.ps_mode);
    let runtime = b.str("runtime-dir").replace("{{ output }}", dir);
    let st = |k: &str| setting_text(b, k, l);
    let swept = if axes.is_empty() {
        String::new()
    } else {
        l.t(
            format!("扫描的参数：{}（表中按扫描点分列）。", axes.join("、")),
            format!(
                " Swept: {} (the tables have one part per sweep point).",
                axes.join(", ")
            ),
        )
    };
    let overrides = lane_overrides_text(b, l);
    let (list, map) = l.t(("；", "，"), ("; ", ", "));
    let (model, clients, ps) = (
        b.str("model"),
        p.client_list.join(list),
        p.ps_list.join(list),
    );
    let (shards, mapping, gpus) = (p.shards, p.mapping.join(map), p.gpus.join(list));
    let (hash, max_keys) = (b.str("hash-method"), b.int("max-keys-per-request"));
    let (dataset, batch, dim, rows) = (
        b.str("dataset"),
        st("batch-size"),
        st("embedding-dim"),
        st("num-embeddings"),
    );
    let (steps, warmup, repeat) = (st("steps"), st("warmup-steps"), b.repeat);
    let (read_mode, prefetch, index, capacity) = (
        st("read-mode"),
        st("prefetch-depth"),
        st("index-type"),
        st("capacity"),
    );
    match l {
        Lang::Zh => format!(
            "使用模型 {model}，传输为 {transport}，对比的 lane 为 {lanes}。client 列表：{clients}。PS 列表：{ps}。client 部署为 {client_mode}，PS 部署为 {ps_mode}；分片数 {shards}，分片映射为 {mapping}，hash_method={hash}，max_keys_per_request={max_keys}。\
数据集路径为 {dataset}，runtime 目录为 {runtime}，输出目录为 {dir}。batch size {batch}，embedding dim {dim}，num embeddings {rows}，steps {steps}，warmup steps {warmup}，repeat {repeat}，read mode {read_mode}，prefetch depth {prefetch}，RecStore index type {index}，PS capacity {capacity}。GPU 放置：{gpus}。{swept}{overrides}"
        ),
        Lang::En => format!(
            "runs model {model} over {transport}, comparing the lanes {lanes}. Clients: {clients}. PS: {ps}. Clients are {client_mode}, PS is {ps_mode}; {shards} shard(s), mapped as {mapping}, hash_method={hash}, max_keys_per_request={max_keys}. \
Dataset {dataset}, runtime directory {runtime}, output directory {dir}. Batch size {batch}, embedding dim {dim}, num embeddings {rows}, steps {steps}, warmup steps {warmup}, repeat {repeat}, read mode {read_mode}, prefetch depth {prefetch}, RecStore index type {index}, PS capacity {capacity}. GPU placement: {gpus}.{swept}{}",
            if overrides.is_empty() {
                String::new()
            } else {
                format!(" {overrides}")
            },
        ),
    }
}

/// The workload's settings as a table: each hyperparameter set or swept, the repeats, the
/// clients and shards, and every sweep axis with its values.
fn settings_table(d: &mut Doc, b: &Bench, l: Lang, clients: usize, shards: usize) {
    let mut t = Table::new([l.t("参数", "setting"), l.t("值", "value")]);
    let rest = ["read-mode", "prefetch-depth", "index-type", "capacity"];
    for &k in spec::WORKLOAD.iter().chain(&rest) {
        if b.setting(k).is_some() || b.sweep.has_axis(k) {
            t.row([k.to_string(), setting_text(b, k, l)]);
        }
    }
    t.row(["repeat".to_string(), b.repeat.to_string()]);
    t.row(["client".to_string(), clients.to_string()]);
    t.row(["PS shards".to_string(), shards.to_string()]);
    for part in b.sweep.parts() {
        let (name, values) = part.row();
        t.row([name, values]);
    }
    d.table(t);
}

/// The lane's column header; distributed TorchRec lanes say whether NCCL over IB was seen.
pub fn lane_header(data: &ReportData, b: &Bench, lane: &str, dir: &Path) -> String {
    let (clients, _) = super::placement::clients_ps(b);
    let distributed = clients.len() > 1 || clients.iter().any(|c| c.nproc_per_node > 1);
    if !(distributed && matches!(classify(lane), Some(LaneKind::TorchRec { .. }))) {
        return lane.to_string();
    }
    let ids: Vec<&str> = data
        .points
        .iter()
        .filter(|p| p.lane == lane && p.bench == b.name)
        .map(|p| p.run_id.as_str())
        .collect();
    let seen_ib = ids.iter().any(|id| {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir.join("outputs").join(id))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.extend(
            std::fs::read_dir(dir.join("logs"))
                .map(|d| {
                    d.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.to_string_lossy().contains(id))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default(),
        );
        files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".log"))
            .any(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("NET/IB")))
    });
    let l = data.lang;
    if seen_ib {
        format!("{lane}{}", l.paren("NCCL-IB"))
    } else {
        format!(
            "{lane}{}",
            l.paren(l.t("NCCL-IB 未验证", "NCCL-IB unverified"))
        )
    }
}

/// What the run's logs say about the transport each point used, next to what the lane's name
/// says; a PS transport that differs from the name is flagged. Points whose logs say nothing are
/// listed as such: the name alone is not evidence.
pub fn transport_section(d: &mut Doc, data: &ReportData, b: &Bench) {
    use crate::kind_api::data::Measure;
    let rows: Vec<_> = data
        .points
        .iter()
        .filter(|p| p.bench == b.name && p.measure.is_some())
        .collect();
    if rows.is_empty() {
        return;
    }
    let l = data.lang;
    d.h2(l.t("实际传输（以日志为准）", "Transport used (as the logs say)"));
    let mut t = Table::new([
        "run_id",
        "lane",
        l.t("名称所示", "by name"),
        l.t("PS（日志）", "PS (logs)"),
        l.t("NCCL（日志）", "NCCL (logs)"),
        l.t("来源", "source"),
    ]);
    let mut mismatches = Vec::new();
    for p in rows {
        let named = match classify(&p.lane) {
            Some(LaneKind::RecStore { ps_type, .. }) => ps_type.to_string(),
            Some(LaneKind::TorchRec { .. }) => l.t("TorchRec（无 PS）", "TorchRec (no PS)").into(),
            None => "—".into(),
        };
        let said = match &p.measure {
            Some(Measure::Steps(s)) => s.said.clone(),
            _ => Vec::new(),
        };
        let get = |what: &str| said.iter().find(|s| s.what == what);
        let cell = |what: &str| {
            get(what)
                .map(|s| s.value.clone())
                .unwrap_or_else(|| l.t("日志未说明", "not in the logs").into())
        };
        let sources: Vec<String> = said.iter().map(|s| s.source.clone()).collect();
        t.row([
            p.run_id.clone(),
            p.lane.clone(),
            named,
            cell("ps"),
            cell("nccl"),
            if sources.is_empty() {
                "—".into()
            } else {
                sources.join("; ")
            },
        ]);
        if let (Some(LaneKind::RecStore { ps_type, .. }), Some(s)) = (classify(&p.lane), get("ps"))
        {
            if !s.value.eq_ignore_ascii_case(ps_type) {
                let (lane, value, source) = (&p.lane, &s.value, &s.source);
                mismatches.push(Text::plain("⚠ ").and_code(&p.run_id).and(l.t(
                    format!("（{lane}）的日志显示 PS 传输为 {value}（{source}），不是名称所示的 {ps_type}：其数字不应按 {ps_type} 引用。"),
                    format!(" ({lane}): the logs show PS transport {value} ({source}), not the {ps_type} its name says: its numbers must not be quoted as {ps_type}."),
                )));
            }
        }
    }
    d.table(t);
    for m in mismatches {
        d.para(m);
    }
}

/// Where a RecStore lane's step total times less than its stages: what upstream's runner does
/// (read at WU@2fb8d826), in one line. It goes by itself once a checkout's runner times the whole
/// step (the check is on the data, not on a version).
pub fn upstream_clock_note(d: &mut Doc, data: &ReportData, bench: &Bench) {
    let broken = data.points.iter().any(|p| {
        p.bench == bench.name
            && matches!(classify(&p.lane), Some(LaneKind::RecStore { .. }))
            && p.timing().is_some_and(|t| {
                t.problems.iter().any(|x| {
                    matches!(
                        x,
                        crate::results::collect::timing::TimingProblem::SumNotTotal { .. }
                    )
                })
            })
    });
    if broken {
        d.para(data.lang.t(
            "上游：rs_demo 的 runners/recstore_runner.py 在 :615 启动 step_start，在 :703（稀疏优化器之前）又重置同一变量，:733 用它算 step_total_ms，所以它只覆盖稀疏优化器、flush 和 zero_grad；next(data_iter) 在 batch_prepare 计时器之外（:615-623）。修复：为优化器阶段使用单独的变量，并把 next() 放进 batch_prepare_ms（docs/real-upstream.md）。",
            "Upstream: rs_demo's runners/recstore_runner.py starts step_start at :615, restarts the same variable before the sparse optimizer step (:703) and reads it for step_total_ms (:733), so the total covers only the sparse optimizer step, flush and zero_grad; next(data_iter) runs outside the batch_prepare timer (:615-623). The fix: a variable of its own for the optimizer's timer, and next() inside batch_prepare_ms (docs/real-upstream.md).",
        ));
    }
}
