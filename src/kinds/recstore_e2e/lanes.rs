//! recstore-e2e: what a lane's name means (`RecStore-<PS>[-ablation]`, `TorchRec-<mode>`), its
//! label and its run-id part.

/// What a lane name means.
#[derive(Debug, Clone, PartialEq)]
pub enum LaneKind {
    RecStore {
        ps_type: &'static str,
        ablation: Ablation,
    },
    TorchRec {
        memory_mode: &'static str,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ablation {
    Main,
    /// 无预取: read-mode direct.
    NoPrefetch,
    /// 无预取无融合: read-mode direct, fusion off.
    NoPrefetchNoFusion,
    /// 预取N: prefetch depth N.
    Prefetch(i64),
}

pub const LANE_EXAMPLES: &[&str] = &[
    "RecStore-BRPC",
    "RecStore-GRPC",
    "RecStore-SHM",
    "RecStore-RDMA",
    "RecStore-BRPC-无预取",
    "RecStore-BRPC-无预取无融合",
    "RecStore-BRPC-预取4",
    "TorchRec-HBM",
    "TorchRec-UVM",
];

/// The label a PS type gets in lane names.
pub fn lane_label(ps_type: &str) -> &str {
    match ps_type {
        "LOCAL_SHM" => "SHM",
        other => other,
    }
}

pub fn classify(name: &str) -> Option<LaneKind> {
    if let Some(rest) = name.strip_prefix("TorchRec-") {
        let mode = match rest.to_ascii_uppercase().as_str() {
            "HBM" => "hbm",
            "UVM" | "UVMCACHE" | "UVM-CACHING" | "UVM_CACHING" => "uvm_caching",
            _ => return None,
        };
        return Some(LaneKind::TorchRec { memory_mode: mode });
    }
    let rest = name.strip_prefix("RecStore-")?;
    let (ps, suffix) = match rest.find('-') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let ps_type = match ps.to_ascii_uppercase().as_str() {
        "BRPC" => "BRPC",
        "GRPC" => "GRPC",
        "SHM" | "LOCAL_SHM" => "LOCAL_SHM",
        "RDMA" => "RDMA",
        _ => return None,
    };
    let ablation = match suffix {
        None => Ablation::Main,
        Some("无预取") => Ablation::NoPrefetch,
        Some("无预取无融合") => Ablation::NoPrefetchNoFusion,
        Some(s) => {
            let n = s.strip_prefix("预取")?.parse::<i64>().ok()?;
            Ablation::Prefetch(n)
        }
    };
    Some(LaneKind::RecStore { ps_type, ablation })
}

/// Run-id prefix: `brpc`, `brpc_noprefetch`, `torchrec_hbm`, `torchrec_uvmcaching`.
pub fn lane_slug(name: &str) -> String {
    match classify(name) {
        Some(LaneKind::TorchRec { memory_mode }) => {
            format!("torchrec_{}", memory_mode.replace('_', ""))
        }
        Some(LaneKind::RecStore { ps_type, ablation }) => {
            let t = ps_type.to_ascii_lowercase();
            match ablation {
                Ablation::Main => t,
                Ablation::NoPrefetch => format!("{t}_noprefetch"),
                Ablation::NoPrefetchNoFusion => format!("{t}_noprefetch_nofusion"),
                Ablation::Prefetch(n) => format!("{t}_prefetch{n}"),
            }
        }
        None => crate::model::expand::slug(name),
    }
}
