//! summary.md in the runbook's format, summary_e2e.csv and summary.json.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;

use crate::collect::steps::STAGES;
use crate::kinds::recstore_e2e::rules::{classify, LaneKind};
use crate::model::{Bench, Experiment, KindId, Placement};
use crate::report::data::{Group, Measure, PointReport, ReportData};
use crate::report::fmt::km;

fn cell(v: Option<f64>) -> String {
    v.map(km).unwrap_or_else(|| "—".into())
}

fn axes_label(axes: &[(String, String)]) -> String {
    axes.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The distinct sweep points of a bench, in matrix order.
fn sweep_points(groups: &[&Group]) -> Vec<Vec<(String, String)>> {
    let mut v: Vec<Vec<(String, String)>> = Vec::new();
    for g in groups {
        if !v.contains(&g.axes) {
            v.push(g.axes.clone());
        }
    }
    v
}

/// Chinese prose listing every hyperparameter of a recstore-e2e bench (Workload 说明).
fn recstore_prose(o: &mut String, exp: &Experiment, b: &Bench, dir: &str) {
    let (clients, ps) = match &b.placement {
        Placement::Recstore { clients, ps } => (clients.as_slice(), ps.as_slice()),
        _ => (&[][..], &[][..]),
    };
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
    let _ = writeln!(
        o,
        "本次实验 `{}` 使用模型 {}，传输为 {}，对比的 lane 为 {}。client 列表：{}。PS 列表：{}。client 部署为 {}，PS 部署为 {}；分片数 {}，分片映射为 {}，hash_method={}，max_keys_per_request={}。\
数据集路径为 {}，runtime 目录为 {}，输出目录为 {}。batch size {}，embedding dim {}，num embeddings {}，steps {}，warmup steps {}，repeat {}，read mode {}，prefetch depth {}，RecStore index type {}，PS capacity {}。GPU 放置：{}。{}",
        exp.name,
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
        b.int("batch-size"),
        b.int("embedding-dim"),
        b.int("num-embeddings"),
        b.int("steps"),
        b.int("warmup-steps"),
        b.repeat,
        b.str("read-mode"),
        b.int("prefetch-depth"),
        b.str("index-type"),
        b.int("capacity"),
        gpus.join("；"),
        if axes.is_empty() { String::new() } else { format!("扫描的参数：{}（表中按扫描点分列）。", axes.join("、")) }
    );
    o.push_str("\n| 参数 | 值 |\n|---|---|\n");
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
        if let Some(v) = b.setting(k) {
            let _ = writeln!(o, "| {k} | {v} |");
        }
    }
    let _ = writeln!(o, "| repeat | {} |", b.repeat);
    let _ = writeln!(o, "| client | {} |", clients.len());
    let _ = writeln!(o, "| PS shards | {} |", ps.len());
    for a in b.sweep.axes.iter().chain(b.sweep.zips.iter().flatten()) {
        let _ = writeln!(o, "| sweep {} | {} |", a.name, a.values_text());
    }
}

fn generic_prose(o: &mut String, exp: &Experiment, b: &Bench, dir: &str) {
    let axes: Vec<String> = b
        .sweep
        .axes
        .iter()
        .chain(b.sweep.zips.iter().flatten())
        .map(|a| format!("{}（{}）", a.name, a.values_text()))
        .collect();
    let settings: Vec<String> = b
        .settings
        .iter()
        .map(|(k, p)| format!("{k}={}", p.val))
        .collect();
    let _ =
        writeln!(
        o,
        "本次实验 `{}`（{}）运行 `{}`，对比的 lane 为 {}，repeat {}，输出目录为 {}。参数：{}。{}",
        exp.name,
        if exp.description.is_empty() { "无描述".to_string() } else { exp.description.clone() },
        b.name,
        b.lanes.iter().map(|l| l.name.as_str()).collect::<Vec<_>>().join("、"),
        b.repeat,
        dir,
        settings.join("，"),
        if axes.is_empty() { String::new() } else { format!("扫描的参数：{}。", axes.join("；")) }
    );
    o.push_str("\n| 参数 | 值 |\n|---|---|\n");
    for (k, p) in &b.settings {
        let _ = writeln!(o, "| {k} | {} |", p.val);
    }
    let _ = writeln!(o, "| repeat | {} |", b.repeat);
}

/// The lane's column header; distributed TorchRec lanes say whether NCCL over IB was seen.
fn lane_header(data: &ReportData, b: &Bench, lane: &str, dir: &Path) -> String {
    let distributed = match &b.placement {
        Placement::Recstore { clients, .. } => {
            clients.len() > 1 || clients.iter().any(|c| c.nproc_per_node > 1)
        }
        _ => false,
    };
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

/// The sweep point's label (if any) and a table header with the lanes as columns.
fn table_head(o: &mut String, sp: &[(String, String)], first: &str, headers: &[String]) {
    if !sp.is_empty() {
        let _ = writeln!(o, "\n**{}**", axes_label(sp));
    }
    let _ = writeln!(
        o,
        "\n| {first} | {} |\n|---|{}",
        headers.join(" | "),
        "---|".repeat(headers.len())
    );
}

fn steps_sections(o: &mut String, data: &ReportData, b: &Bench, groups: &[&Group], dir: &Path) {
    let lanes: Vec<&str> = b.lanes.iter().map(|l| l.name.as_str()).collect();
    let headers: Vec<String> = lanes.iter().map(|l| lane_header(data, b, l, dir)).collect();
    let show_stats = b.repeat >= 3;
    let baseline = groups.iter().find_map(|g| g.baseline.clone());
    o.push_str("\n## E2E 吞吐（samples/s，越高越好；job 吞吐 = 每步各 rank 之和，再对步取平均）\n");
    for sp in sweep_points(groups) {
        table_head(&mut *o, &sp, "指标", &headers);
        let get = |lane: &str| groups.iter().find(|g| g.lane == lane && g.axes == sp);
        let row = |name: &str, f: &dyn Fn(&Group) -> String| {
            let cells: Vec<String> = lanes
                .iter()
                .map(|l| get(l).map(|g| f(g)).unwrap_or_else(|| "—".into()))
                .collect();
            format!("| {name} | {} |\n", cells.join(" | "))
        };
        o.push_str(&row("repeat_n", &|g| g.values.len().to_string()));
        o.push_str(&row("samples/s 各次", &|g| {
            if g.values.is_empty() {
                "—".into()
            } else {
                g.values
                    .iter()
                    .map(|v| km(*v))
                    .collect::<Vec<_>>()
                    .join(" / ")
            }
        }));
        if show_stats {
            o.push_str(&row("samples/s 均值", &|g| cell(g.mean)));
            o.push_str(&row("CV%", &|g| {
                g.cv_percent
                    .map(|c| format!("{c:.2}%"))
                    .unwrap_or_else(|| "—".into())
            }));
        }
        if let Some(base) = &baseline {
            o.push_str(&row(&format!("相对 {base} 加速比"), &|g| {
                g.speedup
                    .map(|s| format!("{s:.2}x"))
                    .unwrap_or_else(|| "—".into())
            }));
        }
        o.push_str(&row("p95 step_total_ms", &|g| cell(g.p95_step_total_ms)));
    }
    let notes: Vec<&PointReport> = data
        .points
        .iter()
        .filter(|p| p.bench == b.name && p.reason.starts_with("recovered"))
        .collect();
    for p in notes {
        let _ = writeln!(
            o,
            "\n注：{} 的父进程以非零退出，但所有 rank CSV 完整，已校验并合并后计入：{}",
            p.run_id, p.reason
        );
    }
    let derived = data.points.iter().any(|p| {
        p.bench == b.name
            && matches!(&p.measure, Some(Measure::Steps(s)) if s.derived_samples_per_sec)
    });
    if derived {
        o.push_str("\n注：TorchRec 的每步 CSV 没有 samples_per_sec 列，按 batch_size × 1000 / step_total_ms 推算。\n");
    }
    o.push_str("\n## E2E 延迟分解（ms，每步均值，已去除 warmup；越低越好）\n");
    for sp in sweep_points(groups) {
        table_head(&mut *o, &sp, "阶段", &headers);
        for (stage, _) in STAGES {
            let cells: Vec<Option<f64>> = lanes
                .iter()
                .map(|l| {
                    groups
                        .iter()
                        .find(|g| g.lane == *l && g.axes == sp)
                        .and_then(|g| g.stages.get(*stage).copied())
                })
                .collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            let _ = writeln!(
                o,
                "| {stage} | {} |",
                cells
                    .iter()
                    .map(|c| cell(*c))
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
    }
}

fn kernel_section(o: &mut String, data: &ReportData, b: &Bench) {
    o.push_str("\n## Kernel 性能（µs 与 GB/s）\n\n| 配置 | dispatch avg/min/max µs | combine avg/min/max µs | total avg/min/max µs | dispatch GB/s | combine GB/s | kernel-only dispatch / combine µs | bytes dispatch / combine MB, rows |\n|---|---|---|---|---|---|---|---|\n");
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        let Some(Measure::Ep(e)) = &p.measure else {
            continue;
        };
        let t = |x: &crate::collect::kernels::Timing| {
            format!("{:.2} / {:.2} / {:.2}", x.avg_us, x.min_us, x.max_us)
        };
        let g = |x: &crate::collect::kernels::Timing| {
            x.gbps_avg
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "—".into())
        };
        let k = match (&e.kernel_dispatch, &e.kernel_combine) {
            (Some(d), Some(c)) => format!("{:.2} / {:.2}", d.min_us, c.min_us),
            _ => "—".into(),
        };
        let bytes = match (e.dispatch_mb, e.combine_mb) {
            (Some(d), Some(c)) => format!(
                "{d:.2} ({}) / {c:.2}, {}",
                e.dispatch_label,
                e.rows.map(|r| r.to_string()).unwrap_or_default()
            ),
            _ => "—".into(),
        };
        let cfg = format!("{} {} r{}", p.lane, axes_label(&p.axes), p.repeat);
        let _ = writeln!(
            o,
            "| {cfg} | {} | {} | {} | {} | {} | {k} | {bytes} |",
            t(&e.dispatch),
            t(&e.combine),
            t(&e.total),
            g(&e.dispatch),
            g(&e.combine)
        );
    }
}

fn loader_section(o: &mut String, data: &ReportData, b: &Bench) {
    o.push_str("\n## Loader 吞吐（global samples/s）\n\n| 配置 | world size | global samples/s（各次） | 均值 | first batch (s) | peak RSS |\n|---|---|---|---|---|---|\n");
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        let Some(Measure::Drt(d)) = &p.measure else {
            continue;
        };
        let _ = writeln!(
            o,
            "| {} {} | {} | {} | {} | {} | {} |",
            p.lane,
            axes_label(&p.axes),
            d.world_size,
            d.global_samples_per_second
                .iter()
                .map(|v| km(*v))
                .collect::<Vec<_>>()
                .join(" / "),
            cell(crate::report::stats::mean(&d.global_samples_per_second)),
            d.first_batch_seconds
                .map(|s| format!("{s:.3}"))
                .unwrap_or_else(|| "—".into()),
            d.peak_rss_bytes
                .map(|b| format!("{:.1} MiB", b as f64 / 1048576.0))
                .unwrap_or_else(|| "—".into())
        );
    }
}

fn nccl_section(o: &mut String, data: &ReportData, b: &Bench) {
    o.push_str("\n## nccl-tests 总线带宽（busbw，GB/s）\n\n| 配置 | size (B) | out-of-place busbw | in-place busbw |\n|---|---|---|---|\n");
    for p in data.points.iter().filter(|p| p.bench == b.name) {
        let Some(Measure::Nccl { rows, .. }) = &p.measure else {
            continue;
        };
        for r in rows {
            let f = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "N/A".into());
            let _ = writeln!(
                o,
                "| {} {} r{} | {} | {} | {} |",
                p.lane,
                axes_label(&p.axes),
                p.repeat,
                r.size,
                f(r.busbw_out),
                f(r.busbw_in)
            );
        }
    }
}

fn metric_section(o: &mut String, b: &Bench, groups: &[&Group]) {
    o.push_str("\n## 结果\n\n| lane | 扫描点 | 各次 | 均值 | CV% |\n|---|---|---|---|---|\n");
    for g in groups.iter().filter(|g| g.bench == b.name) {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            g.lane,
            axes_label(&g.axes),
            g.values
                .iter()
                .map(|v| km(*v))
                .collect::<Vec<_>>()
                .join(" / "),
            cell(g.mean),
            g.cv_percent
                .map(|c| format!("{c:.2}%"))
                .unwrap_or_else(|| "—".into())
        );
    }
}

/// summary.md: git HEAD, hostname, a blank line, then the sections.
pub fn markdown(data: &ReportData, dir: &Path) -> String {
    let mut o = format!("{}\n{}\n\n", data.git_head, data.hostname);
    let Some(exp) = &data.exp else { return o };
    o.push_str("## Workload 说明\n\n");
    let out_dir = dir.display().to_string();
    for b in &exp.benches {
        match b.kind {
            KindId::RecstoreE2e => recstore_prose(&mut o, exp, b, &out_dir),
            _ => generic_prose(&mut o, exp, b, &out_dir),
        }
    }
    if !data.missing.is_empty() {
        let _ = writeln!(
            o,
            "\n缺失的点（{} 个，报告不含其数据）：{}",
            data.missing.len(),
            data.missing.join("；")
        );
    }
    for b in &exp.benches {
        let groups: Vec<&Group> = data.groups.iter().filter(|g| g.bench == b.name).collect();
        let has_steps = data
            .points
            .iter()
            .any(|p| p.bench == b.name && matches!(p.measure, Some(Measure::Steps(_))));
        match b.kind {
            KindId::EpBench => kernel_section(&mut o, data, b),
            KindId::DatasetRt => loader_section(&mut o, data, b),
            _ if has_steps || b.kind == KindId::RecstoreE2e => {
                steps_sections(&mut o, data, b, &groups, dir)
            }
            _ if data
                .points
                .iter()
                .any(|p| p.bench == b.name && matches!(p.measure, Some(Measure::Nccl { .. }))) =>
            {
                nccl_section(&mut o, data, b)
            }
            _ => metric_section(&mut o, b, &groups),
        }
    }
    if dir.join("throughput.svg").exists() {
        o.push_str("\n图：[吞吐](throughput.svg) · [延迟分解](latency.svg)");
        for f in std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
        {
            if f.starts_with("sweep_") && f.ends_with(".svg") {
                let _ = write!(o, " · [{}]({f})", f.trim_end_matches(".svg"));
            }
        }
        o.push('\n');
    }
    o
}

/// summary_e2e.csv: manifest columns + samples_per_sec + p95_step_total_ms + mean_<stage>.
pub fn e2e_csv(data: &ReportData, dir: &Path) -> Result<(), String> {
    let rows = crate::exec::manifest::read(&dir.join("manifest.csv"));
    let mut w = csv::Writer::from_path(dir.join("summary_e2e.csv")).map_err(|e| e.to_string())?;
    let mut header: Vec<String> = [
        "run_id",
        "lane",
        "backend",
        "transport",
        "torchrec_memory_mode",
        "client_ip",
        "server_count",
        "batch_size",
        "embedding_dim",
        "num_embeddings",
        "repeat_index",
        "main_csv",
        "log_path",
        "status",
        "exit_code",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend([
        "samples_per_sec".to_string(),
        "p95_step_total_ms".to_string(),
    ]);
    header.extend(STAGES.iter().map(|(s, _)| format!("mean_{s}")));
    w.write_record(&header).map_err(|e| e.to_string())?;
    for p in &data.points {
        let Some(r) = rows.iter().find(|r| r.run_id == p.run_id) else {
            continue;
        };
        let mut rec = vec![
            r.run_id.clone(),
            r.lane.clone(),
            r.backend.clone(),
            r.transport.clone(),
            r.torchrec_memory_mode.clone(),
            r.client_ip.clone(),
            r.server_count.clone(),
            r.batch_size.clone(),
            r.embedding_dim.clone(),
            r.num_embeddings.clone(),
            r.repeat_index.to_string(),
            r.main_csv.clone(),
            r.log_path.clone(),
            r.status.clone(),
            r.exit_code.clone(),
        ];
        match &p.measure {
            Some(Measure::Steps(s)) => {
                rec.push(format!("{:.2}", s.samples_per_sec));
                rec.push(format!("{:.2}", s.p95_step_total_ms));
                for (st, _) in STAGES {
                    rec.push(
                        s.stages
                            .get(*st)
                            .map(|v| format!("{v:.2}"))
                            .unwrap_or_default(),
                    );
                }
            }
            _ => rec.extend(std::iter::repeat_n(String::new(), 2 + STAGES.len())),
        }
        w.write_record(&rec).map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())
}
