//! recstore-e2e's summary.md: the Workload 说明 prose and the E2E sections with lane headers
//! that say whether a distributed TorchRec lane used NCCL over IB.

use std::collections::BTreeSet;
use std::path::Path;

use crate::kinds::recstore_e2e::rules::{classify, LaneKind};
use crate::model::{Bench, Experiment};
use crate::report::data::ReportData;
use crate::report::doc::{Doc, Table, Text};
use crate::report::tables::{lane_overrides_text, setting_text};

/// Chinese prose listing every hyperparameter of a recstore-e2e bench (Workload 说明).
pub fn recstore_prose(d: &mut Doc, exp: &Experiment, b: &Bench, dir: &str) {
    let (clients, ps) = super::placement::clients_ps(b);
    let host_ip = |h: &str| exp.host(h).map(|x| x.ip.clone()).unwrap_or_default();
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
    let client_list: Vec<String> = clients
        .iter()
        .map(|c| {
            format!(
                "{}（ip {}，GPU {}，node_rank {}，nproc_per_node {}）",
                c.host,
                host_ip(&c.host),
                c.gpu,
                c.node_rank,
                c.nproc_per_node
            )
        })
        .collect();
    let ps_list: Vec<String> = ps
        .iter()
        .map(|p| {
            format!(
                "{}（{}:{}，shard {}）",
                p.host,
                host_ip(&p.host),
                p.port,
                p.shard
            )
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
            format!("{} 使用 GPU {}", c.host, list.join(","))
        })
        .collect();
    let axes: Vec<String> = b.sweep.axis_names().map(str::to_string).collect();
    let rest = format!(
        "使用模型 {}，传输为 {}，对比的 lane 为 {}。client 列表：{}。PS 列表：{}。client 部署为 {}，PS 部署为 {}；分片数 {}，分片映射为 {}，hash_method={}，max_keys_per_request={}。\
数据集路径为 {}，runtime 目录为 {}，输出目录为 {}。batch size {}，embedding dim {}，num embeddings {}，steps {}，warmup steps {}，repeat {}，read mode {}，prefetch depth {}，RecStore index type {}，PS capacity {}。GPU 放置：{}。{}{}",
        b.str("model"),
        if transports.is_empty() { "无（仅 TorchRec）".to_string() } else { transports.join("、") },
        b.lanes.iter().map(|l| l.name.as_str()).collect::<Vec<_>>().join("、"),
        client_list.join("；"),
        ps_list.join("；"),
        if distributed { "distributed" } else { "single-node" },
        if ps.len() > 1 { "sharded-ps" } else { "single-ps" },
        ps.len(),
        mapping.join("，"),
        b.str("hash-method"),
        b.int("max-keys-per-request"),
        b.str("dataset"),
        b.str("runtime-dir").replace("{{ output }}", dir),
        dir,
        setting_text(b, "batch-size"),
        setting_text(b, "embedding-dim"),
        setting_text(b, "num-embeddings"),
        setting_text(b, "steps"),
        setting_text(b, "warmup-steps"),
        b.repeat,
        setting_text(b, "read-mode"),
        setting_text(b, "prefetch-depth"),
        setting_text(b, "index-type"),
        setting_text(b, "capacity"),
        gpus.join("；"),
        if axes.is_empty() { String::new() } else { format!("扫描的参数：{}（表中按扫描点分列）。", axes.join("、")) },
        lane_overrides_text(b)
    );
    d.para(
        Text::plain("本次实验 ")
            .and_code(&exp.name)
            .and(" ")
            .and(rest),
    );
    let mut t = Table::new(["参数", "值"]);
    for k in [
        "model",
        "dataset",
        "batch-size",
        "embedding-dim",
        "num-embeddings",
        "steps",
        "warmup-steps",
        "read-mode",
        "prefetch-depth",
        "index-type",
        "capacity",
    ] {
        if b.setting(k).is_some() || b.sweep.has_axis(k) {
            t.row([k.to_string(), setting_text(b, k)]);
        }
    }
    t.row(["repeat".to_string(), b.repeat.to_string()]);
    t.row(["client".to_string(), clients.len().to_string()]);
    t.row(["PS shards".to_string(), ps.len().to_string()]);
    for a in b.sweep.axes.iter().chain(b.sweep.zips.iter().flatten()) {
        t.row([format!("sweep {}", a.name), a.values_text()]);
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
    if seen_ib {
        format!("{lane}（NCCL-IB）")
    } else {
        format!("{lane}（NCCL-IB 未验证）")
    }
}

/// What the run's logs say about the transport each point used, next to what the lane's name
/// says; a PS transport that differs from the name is flagged. Points whose logs say nothing are
/// listed as such: the name alone is not evidence.
pub fn transport_section(d: &mut Doc, data: &ReportData, b: &Bench) {
    use crate::report::data::Measure;
    let rows: Vec<_> = data
        .points
        .iter()
        .filter(|p| p.bench == b.name && p.measure.is_some())
        .collect();
    if rows.is_empty() {
        return;
    }
    d.h2("实际传输（以日志为准）");
    let mut t = Table::new([
        "run_id",
        "lane",
        "名称所示",
        "PS（日志）",
        "NCCL（日志）",
        "来源",
    ]);
    let mut mismatches = Vec::new();
    for p in rows {
        let named = match classify(&p.lane) {
            Some(LaneKind::RecStore { ps_type, .. }) => ps_type.to_string(),
            Some(LaneKind::TorchRec { .. }) => "TorchRec（无 PS）".into(),
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
                .unwrap_or_else(|| "日志未说明".into())
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
                mismatches.push(Text::plain("⚠ ").and_code(&p.run_id).and(format!(
                    "（{}）的日志显示 PS 传输为 {}（{}），不是名称所示的 {ps_type}：其数字不应按 {ps_type} 引用。",
                    p.lane, s.value, s.source
                )));
            }
        }
    }
    d.table(t);
    for m in mismatches {
        d.para(m);
    }
}
