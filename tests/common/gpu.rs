//! A stand-in `nvidia-smi` for machines without a GPU (every machine of this project's tests):
//! it answers the two queries expr's noise probe asks in NVIDIA's documented forms
//! (`--query-gpu=… --format=csv,noheader,nounits` and `--query-compute-apps=gpu_uuid,pid,used_memory
//! --format=csv,noheader,nounits`) from `gpus.csv` and `apps.csv` beside it, which a test writes,
//! and prints the banner's `CUDA Version` line without arguments. Each call appends a line to
//! `calls.log` beside it: its arguments, `$SSH_CONNECTION` and `$SLURM_JOB_ID`, so a test can
//! tell on which host (and in which Slurm job or array task) the probe really ran.
#![allow(dead_code)]

use std::path::Path;

pub const UUID: &str = "GPU-1b2c3d4e-0000-1111-2222-333344445555";

/// One `--query-gpu` line of an A100 with this uuid, SM/application clocks, throttle mask,
/// persistence and MIG mode.
pub fn gpu_line_of(
    uuid: &str,
    sm: u32,
    app: u32,
    throttle: &str,
    persistence: &str,
    mig: &str,
) -> String {
    format!("0, NVIDIA A100-SXM4-80GB, {uuid}, {persistence}, {sm}, 1593, {app}, 1410, 400.00, 34, {throttle}, 0, {mig}, 535.129.03\n")
}

/// A quiet A100 with this uuid: application clocks, no throttling, persistence on, no MIG.
pub fn quiet_gpu(uuid: &str) -> String {
    gpu_line_of(
        uuid,
        1410,
        1410,
        "0x0000000000000000",
        "Enabled",
        "Disabled",
    )
}

/// Put the stand-in `nvidia-smi` into `bin` (made if missing) with these answers.
pub fn standin_nvidia_smi(bin: &Path, gpus_csv: &str, apps_csv: &str) {
    std::fs::create_dir_all(bin).unwrap();
    let smi = "#!/bin/sh\nd=$(dirname \"$0\")\n\
        printf '%s|%s|%s\\n' \"$*\" \"${SSH_CONNECTION:-}\" \"${SLURM_JOB_ID:-}\" >> \"$d/calls.log\"\n\
        case \"$*\" in\n\
        *--query-gpu=index,name,uuid,persistence_mode,clocks.sm,clocks.mem,clocks.applications.graphics,clocks.max.sm,power.limit,temperature.gpu,clocks_throttle_reasons.active,ecc.errors.uncorrected.volatile.total,mig.mode.current,driver_version*--format=csv,noheader,nounits*) cat \"$d/gpus.csv\";;\n\
        *--query-compute-apps=gpu_uuid,pid,used_memory*--format=csv,noheader,nounits*) cat \"$d/apps.csv\";;\n\
        '') echo '| NVIDIA-SMI 535.129.03   Driver Version: 535.129.03   CUDA Version: 12.2 |';;\n\
        *) echo \"stand-in nvidia-smi: unexpected arguments: $*\" >&2; exit 2;;\n\
        esac\n";
    write_exec(&bin.join("nvidia-smi"), smi);
    std::fs::write(bin.join("gpus.csv"), gpus_csv).unwrap();
    std::fs::write(bin.join("apps.csv"), apps_csv).unwrap();
}

/// The stand-in's calls so far: (arguments, `$SSH_CONNECTION`, `$SLURM_JOB_ID`), empty where
/// unset.
pub fn calls(bin: &Path) -> Vec<(String, String, String)> {
    std::fs::read_to_string(bin.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.rsplitn(3, '|');
            let job = f.next()?.to_string();
            let ssh = f.next()?.to_string();
            Some((f.next()?.to_string(), ssh, job))
        })
        .collect()
}

pub fn write_exec(p: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(p, text).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}
