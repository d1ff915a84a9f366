//! recstore-e2e's collector: the per-step CSV of a point (`recstore_main.csv` /
//! `torchrec_main.csv`), or its per-rank CSVs.

use std::path::{Path, PathBuf};

use crate::kinds::recstore_e2e::rules::{classify, LaneKind};
use crate::results::collect::steps::{self, Said, StepStats};
use crate::results::collect::timing::TimingModel;
use crate::results::collect::PointDir;

/// The timing model of RecStore's and TorchRec's rs_demo runners (both lanes time the same nine stages,
/// `runners/recstore_runner.py` and `runners/torchrec_runner.py` at WU@2fb8d826; the older
/// column names second).
pub fn rs_demo_timing() -> TimingModel {
    TimingModel::new(
        &[
            &["batch_prepare_ms"],
            &["input_pack_ms"],
            &["embed_lookup_local_ms", "embed_lookup_ms"],
            &["embed_pool_local_ms"],
            &["output_unpack_ms"],
            &["dense_fwd_ms"],
            &["backward_ms"],
            &["optimizer_ms", "dense_optimizer_ms"],
            &["sparse_update_ms", "sparse_optimizer_ms"],
        ],
        "step_total_ms",
        Some("batch_prepare_ms"),
    )
}

/// The point's step statistics, warmup dropped, and what its logs say about the transport.
pub fn collect(at: &PointDir) -> Result<StepStats, String> {
    let mut stats = step_stats(at)?;
    stats.said = transport_said(at);
    Ok(stats)
}

/// How many bytes of one log are scanned for transport lines (client logs can be long).
const SCAN_BYTES: u64 = 16 << 20;

/// What the point's logs say about the transport, first statement of each kind wins:
/// - the PS backend the client used: a `ps_backend=X` / `set_ps_backend(X)` line, or rs_demo's
///   `[rs_demo] … local_shm …` fast-path line (recstore_runner prints it only on LOCAL_SHM);
/// - NCCL's transport: recstore_runner's `nccl_transport=X` in
///   `outputs/<run>/*_worker_rank<R>.log`, or NCCL's own `NET/IB` / `NET/Socket` line in
///   `*_nccl_rank<R>.log`.
pub fn transport_said(at: &PointDir) -> Vec<Said> {
    use std::io::{BufRead, Read};
    let mut files: Vec<PathBuf> = at.logs_for("client-");
    let out = at.out();
    let mut extra: Vec<PathBuf> = std::fs::read_dir(&out)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n.ends_with(".log")
                            && (n.contains("_worker_rank") || n.contains("_nccl_rank"))
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    extra.sort();
    files.extend(extra);
    let backend = regex::Regex::new(r#"(?:^|[^A-Za-z_])(?:single_node_)?(?:ps_backend\s*[=:]\s*|set_ps_backend\(\s*['"]?)([A-Za-z_]+)"#)
        .expect("regex");
    let nccl = regex::Regex::new(r"nccl_transport=(\S+)").expect("regex");
    let net = regex::Regex::new(r"\bNET/(IB|Socket)\b").expect("regex");
    let mut ps: Option<Said> = None;
    let mut nc: Option<Said> = None;
    for f in &files {
        let Ok(file) = crate::results::collect::open_log(f) else {
            continue;
        };
        let rel = f
            .strip_prefix(at.dir)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        let reader = std::io::BufReader::new(file.take(SCAN_BYTES));
        for (i, line) in reader.split(b'\n').enumerate() {
            let Ok(line) = line else { break };
            let line = String::from_utf8_lossy(&line);
            let at_line = || format!("{rel}:{}", i + 1);
            if ps.is_none() {
                let v = backend
                    .captures(&line)
                    .map(|c| c[1].to_ascii_uppercase())
                    .or_else(|| {
                        (line.contains("[rs_demo]") && line.contains("local_shm"))
                            .then(|| "LOCAL_SHM".to_string())
                    });
                if let Some(value) = v {
                    ps = Some(Said {
                        what: "ps".into(),
                        value,
                        source: at_line(),
                    });
                }
            }
            if nc.is_none() {
                let v = nccl
                    .captures(&line)
                    .map(|c| c[1].to_string())
                    .or_else(|| net.captures(&line).map(|c| format!("NET/{}", &c[1])));
                if let Some(value) = v {
                    nc = Some(Said {
                        what: "nccl".into(),
                        value,
                        source: at_line(),
                    });
                }
            }
            if ps.is_some() && nc.is_some() {
                break;
            }
        }
    }
    ps.into_iter().chain(nc).collect()
}

fn step_stats(at: &PointDir) -> Result<StepStats, String> {
    let out = at.out();
    let name = match classify(at.lane) {
        Some(LaneKind::TorchRec { .. }) => "torchrec",
        _ => "recstore",
    };
    let main = out.join(format!("{name}_main.csv"));
    if main.exists() {
        return steps::collect_timed(&[&main], at.warmup, Some(&rs_demo_timing()));
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
    steps::collect_timed(&refs, at.warmup, Some(&rs_demo_timing()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said_of(files: &[(&str, &str)]) -> Vec<(String, String, String)> {
        let d = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let p = d.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let at = PointDir {
            dir: d.path(),
            run_id: "r1",
            lane: "RecStore-BRPC",
            warmup: 0,
            logs: None,
        };
        transport_said(&at)
            .into_iter()
            .map(|s| (s.what, s.value, s.source))
            .collect()
    }

    #[test]
    fn transport_lines_are_read_with_their_file_and_line() {
        let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        // nothing said: nothing claimed
        assert!(said_of(&[(
            "logs/client-n0-r1-local.log",
            "[rs_demo] workload finished\n"
        )])
        .is_empty());
        // the first statement wins; other runs' logs are not read
        assert_eq!(
            said_of(&[
                (
                    "logs/client-n0-r1-local.log",
                    "x\nclient.set_ps_backend('hierkv')\nps_backend=brpc\n"
                ),
                ("logs/client-n0-r10-local.log", "ps_backend=rdma\n"),
                (
                    "outputs/r1/recstore_nccl_rank0.log",
                    "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
                ),
            ]),
            vec![
                s("ps", "HIERKV", "logs/client-n0-r1-local.log:2"),
                s("nccl", "NET/IB", "outputs/r1/recstore_nccl_rank0.log:1"),
            ]
        );
        // rs_demo's local_shm fast-path line; a truncated, non-UTF-8 log is still read
        assert_eq!(
            said_of(&[(
                "logs/client-n0-r1-local.log",
                "\u{fffd}\n[rs_demo] warmed local_shm lookup payload region for GPU fast path"
            )]),
            vec![s("ps", "LOCAL_SHM", "logs/client-n0-r1-local.log:2")]
        );
        // a word that merely contains the key is not a statement
        assert!(said_of(&[("logs/client-n0-r1-local.log", "my_ps_backend=x\n")]).is_empty());
    }
}
