//! The noise probe: one batched shell script per host (fixed text; the only values in it, a
//! repo and a python, are quoted) and the parsers of what it prints — sysfs and /proc files,
//! `ps`, `nvidia-smi`'s CSV (`--format=csv,noheader,nounits`), `ibstat` / `ibv_devinfo` and a
//! torch one-liner — into a [`Machine`]. A tool that is missing or fails leaves its part `None`
//! with a note; no line it prints can make the parse fail.

use crate::results::machine::{Cpu, Gpu, GpuProc, IbPort, Machine, TopProc};
use crate::results::note::Note;

/// The sysfs/procfs root the probe reads (tests point it at a directory of their own).
pub const SYSFS_ROOT_VAR: &str = "EXPR_SYSFS_ROOT";

/// What `nvidia-smi --query-gpu` is asked, in this order.
pub const GPU_FIELDS: &str = "index,name,uuid,persistence_mode,clocks.sm,clocks.mem,clocks.applications.graphics,clocks.max.sm,power.limit,temperature.gpu,clocks_throttle_reasons.active,ecc.errors.uncorrected.volatile.total,mig.mode.current,driver_version";

/// The GPU part: the GPUs, their compute processes with their owners (`ps`), the CUDA version.
/// Bounded: every tool call under `timeout` where the host has it.
const GPU_PART: &str = r#"if command -v nvidia-smi >/dev/null 2>&1; then
echo @@gpus; to nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits 2>&1; echo "@@gpus_rc $?"
echo @@apps; apps=$(to nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits 2>&1); rc=$?; printf '%s\n' "$apps"; echo "@@apps_rc $rc"
echo @@owners; if [ "$rc" = 0 ]; then printf '%s\n' "$apps" | while IFS=, read -r u p m; do p=$(echo $p); case $p in ''|*[!0-9]*) continue;; esac; ps -o pid=,user=,comm= -p "$p" 2>/dev/null; done; fi
echo @@cuda; to nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1
else echo @@nonvidia; fi
"#;

const PRELUDE: &str = r#"R=${EXPR_SYSFS_ROOT:-}
to() { if command -v timeout >/dev/null 2>&1; then timeout 15 "$@"; else "$@"; fi; }
"#;

const CPU_PART: &str = r#"echo @@node; uname -n 2>/dev/null
echo @@governor; for f in "$R"/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do [ -r "$f" ] && cat "$f"; done 2>/dev/null
echo @@no_turbo; cat "$R"/sys/devices/system/cpu/intel_pstate/no_turbo 2>/dev/null
echo @@boost; cat "$R"/sys/devices/system/cpu/cpufreq/boost 2>/dev/null
echo @@cpus; getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null
echo @@loadavg; cat "$R"/proc/loadavg 2>/dev/null
echo @@meminfo; grep -E '^(MemTotal|MemAvailable|SwapTotal|SwapFree):' "$R"/proc/meminfo 2>/dev/null
echo @@numa; for d in "$R"/sys/devices/system/node/node[0-9]*; do [ -d "$d" ] && echo "$d"; done
echo @@thp; cat "$R"/sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
echo @@top; ps -eo pid,user,pcpu,comm --sort=-pcpu 2>/dev/null | head -n 8
echo @@irqbalance; if c=$(ps -eo comm= 2>/dev/null); then if printf '%s\n' "$c" | grep -qx irqbalance; then echo yes; else echo no; fi; fi
"#;

const IB_PART: &str = r#"if command -v ibstat >/dev/null 2>&1; then echo @@ibstat; to ibstat 2>&1 | head -n 300
elif command -v ibv_devinfo >/dev/null 2>&1; then echo @@ibv_devinfo; to ibv_devinfo 2>&1 | head -n 300
else echo @@noib; fi
"#;

/// torch and its NCCL, asked of a python in the repo (a CPU-only torch has no NCCL).
const TORCH_PART: &str = r#"echo @@torch; ( cd REPO 2>/dev/null; to PYTHON -c 'import torch
print("torch", torch.__version__)
try:
    n = torch.cuda.nccl.version()
    print("nccl", ".".join(map(str, n)) if isinstance(n, tuple) else n)
except Exception as e:
    print("nccl-error", type(e).__name__)' 2>&1 | tail -n 3 )
"#;

/// The whole probe of one host. `torch`: the repo and python to ask for torch and NCCL, when
/// a step on the host uses torch. `sysfs_root` (tests) is passed on to a remote host.
pub fn script(torch: Option<(&str, &str)>, sysfs_root: Option<&str>) -> String {
    let mut s = String::new();
    if let Some(r) = sysfs_root {
        s.push_str(&format!(
            "{SYSFS_ROOT_VAR}={}; export {SYSFS_ROOT_VAR}\n",
            crate::util::shell::quote(r)
        ));
    }
    s.push_str(PRELUDE);
    s.push_str(CPU_PART);
    s.push_str(&GPU_PART.replace("FIELDS", GPU_FIELDS));
    s.push_str(IB_PART);
    if let Some((repo, python)) = torch {
        s.push_str(
            &TORCH_PART
                .replace("REPO", &crate::util::shell::quote(repo))
                .replace("PYTHON", &crate::util::shell::quote(python)),
        );
    }
    s
}

/// The cheap check between points: the GPUs (throttle reasons) and their processes.
pub fn recheck_script() -> String {
    format!("{PRELUDE}{}", GPU_PART.replace("FIELDS", GPU_FIELDS))
}

/// A script run in a host's `env`, as its steps run (`export K='v' …;` first, each value
/// quoted): the probe finds the `nvidia-smi`, python and libraries the steps find. A secret
/// (a name `secret::is_secret` says is one) is left out: the probe needs none, and
/// its script can be seen (ssh's and srun's command lines); so is a name that is not a shell
/// variable name.
pub fn in_env(env: &[(String, String)], script: &str) -> String {
    let parts: Vec<String> = env
        .iter()
        .filter(|(k, _)| is_var_name(k) && !crate::util::secret::is_secret(k))
        .map(|(k, v)| format!("{k}={}", crate::util::shell::quote(v)))
        .collect();
    if parts.is_empty() {
        script.to_string()
    } else {
        format!("export {}\n{script}", parts.join(" "))
    }
}

fn is_var_name(k: &str) -> bool {
    let mut c = k.chars();
    c.next()
        .is_some_and(|f| f == '_' || f.is_ascii_alphabetic())
        && c.all(|x| x == '_' || x.is_ascii_alphanumeric())
}

/// The probe's sections: (name, its lines).
fn sections(out: &str) -> Vec<(&str, Vec<&str>)> {
    let mut v: Vec<(&str, Vec<&str>)> = Vec::new();
    for l in out.lines() {
        if let Some(name) = l.strip_prefix("@@") {
            v.push((name.trim(), Vec::new()));
        } else if let Some(last) = v.last_mut() {
            last.1.push(l);
        }
    }
    v
}

/// A value of nvidia-smi's CSV: `None` for `[N/A]`, `[Not Supported]`, `N/A`, empty and the
/// like.
fn value(s: &str) -> Option<&str> {
    let s = s.trim();
    if s.is_empty() || s.starts_with('[') || s.eq_ignore_ascii_case("n/a") {
        None
    } else {
        Some(s)
    }
}

fn num(s: &str) -> Option<f64> {
    value(s)?.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn enabled(s: &str) -> Option<bool> {
    match value(s)?.to_ascii_lowercase().as_str() {
        "enabled" => Some(true),
        "disabled" => Some(false),
        _ => None,
    }
}

/// One line of `--query-gpu=GPU_FIELDS --format=csv,noheader,nounits`. A name with commas in
/// it keeps them (the other fields are counted from both ends); a line with too few fields is
/// `None`.
pub fn parse_gpu(line: &str) -> Option<Gpu> {
    let f: Vec<&str> = line.split(',').collect();
    const AFTER_NAME: usize = 12;
    if f.len() < 2 + AFTER_NAME {
        return None;
    }
    let name = f[1..f.len() - AFTER_NAME].join(",").trim().to_string();
    let r = &f[f.len() - AFTER_NAME..];
    let index = value(f[0]).and_then(|i| i.parse::<u32>().ok());
    let uuid = value(r[0]).unwrap_or("").to_string();
    if index.is_none() && uuid.is_empty() {
        return None;
    }
    let hex = |s: &str| {
        let v = value(s)?;
        u64::from_str_radix(v.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
    };
    Some(Gpu {
        index,
        name,
        uuid,
        persistence: enabled(r[1]),
        sm_mhz: num(r[2]),
        mem_mhz: num(r[3]),
        app_sm_mhz: num(r[4]),
        max_sm_mhz: num(r[5]),
        power_limit_w: num(r[6]),
        temp_c: num(r[7]),
        throttle: hex(r[8]),
        ecc_uncorrected: value(r[9]).and_then(|v| v.parse::<u64>().ok()),
        mig: enabled(r[10]),
        driver: value(r[11]).map(str::to_string),
    })
}

/// One line of `--query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits`.
pub fn parse_app(line: &str) -> Option<GpuProc> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() < 2 {
        return None;
    }
    let pid = value(f[1])?.parse::<i64>().ok()?;
    Some(GpuProc {
        gpu_uuid: value(f[0])?.to_string(),
        pid,
        used_mib: f.get(2).and_then(|m| num(m)),
        user: None,
        comm: None,
    })
}

/// A port named by its number (none when it is not one), on adapter `ca`.
fn new_port(ca: &str, number: &str) -> Option<IbPort> {
    let port = number.trim().parse::<u32>().ok()?;
    Some(IbPort {
        ca: ca.to_string(),
        port,
        ..Default::default()
    })
}

/// `ibstat`'s ports: `CA 'mlx5_0'`, then per `Port N:` its `State:` and `Rate:`.
pub fn parse_ibstat(lines: &[&str]) -> Vec<IbPort> {
    let mut ports = Vec::new();
    let mut ca = String::new();
    for l in lines {
        let t = l.trim();
        if let Some(name) = t.strip_prefix("CA '") {
            ca = name.trim_end_matches('\'').to_string();
        } else if let Some(n) = t.strip_prefix("Port ").and_then(|r| r.strip_suffix(':')) {
            ports.extend(new_port(&ca, n));
        } else if let (Some(v), Some(p)) = (t.strip_prefix("State:"), ports.last_mut()) {
            p.state = v.trim().to_string();
        } else if let (Some(v), Some(p)) = (t.strip_prefix("Rate:"), ports.last_mut()) {
            p.rate = Some(format!("{} Gb/s", v.trim()));
        }
    }
    ports
}

/// `ibv_devinfo`'s ports: `hca_id:`, then per `port:` its `state:` (`PORT_ACTIVE (4)`).
pub fn parse_ibv_devinfo(lines: &[&str]) -> Vec<IbPort> {
    let mut ports = Vec::new();
    let mut ca = String::new();
    for l in lines {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("hca_id:") {
            ca = v.trim().to_string();
        } else if let Some(v) = t.strip_prefix("port:") {
            ports.extend(new_port(&ca, v));
        } else if let (Some(v), Some(p)) = (t.strip_prefix("state:"), ports.last_mut()) {
            let s = v.split_whitespace().next().unwrap_or("");
            p.state = match s.strip_prefix("PORT_") {
                Some(rest) => {
                    let mut c = rest.to_ascii_lowercase();
                    if let Some(first) = c.get_mut(..1) {
                        first.make_ascii_uppercase();
                    }
                    c
                }
                None => s.to_string(),
            };
        }
    }
    ports
}

/// `/proc/meminfo`'s `Key: N kB` lines: (total, available, swap total, swap used), KiB.
fn parse_meminfo(lines: &[&str], cpu: &mut Cpu) {
    let get = |k: &str| {
        lines.iter().find_map(|l| {
            let rest = l.strip_prefix(k)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
    };
    cpu.mem_total_kib = get("MemTotal");
    cpu.mem_available_kib = get("MemAvailable");
    cpu.swap_total_kib = get("SwapTotal");
    cpu.swap_used_kib = cpu
        .swap_total_kib
        .zip(get("SwapFree"))
        .map(|(t, f)| t.saturating_sub(f));
}

/// `ps -eo pid,user,pcpu,comm --sort=-pcpu`, its header and the probe's own processes left out.
fn parse_top(lines: &[&str]) -> Vec<TopProc> {
    lines
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 4 {
                return None;
            }
            let pid = f[0].parse::<i64>().ok()?;
            let pcpu = f[2].parse::<f64>().ok()?;
            let comm = f[3..].join(" ");
            if matches!(comm.as_str(), "ps" | "head" | "sh" | "bash" | "dash") {
                return None;
            }
            Some(TopProc {
                pid,
                user: f[1].to_string(),
                pcpu,
                comm,
            })
        })
        .take(5)
        .collect()
}

/// The first non-empty line of a section.
fn first<'a>(lines: &[&'a str]) -> Option<&'a str> {
    lines.iter().map(|l| l.trim()).find(|l| !l.is_empty())
}

/// The GPU part of the probe's output into `m` (also the between-points check's whole output).
pub fn parse_gpus(out: &str, m: &mut Machine) {
    let secs = sections(out);
    let sec = |name: &str| secs.iter().find(|(n, _)| *n == name).map(|(_, l)| l);
    let rc = |name: &str| {
        secs.iter()
            .find_map(|(n, _)| n.strip_prefix(name)?.trim().parse::<i32>().ok())
    };
    if sec("nonvidia").is_some() {
        m.gpus = None;
        m.note(Note::NoNvidiaSmi);
        return;
    }
    let Some(lines) = sec("gpus") else {
        m.note(Note::SmiSilent);
        return;
    };
    if rc("gpus_rc ").is_some_and(|c| c != 0) {
        m.note(Note::SmiFailed {
            code: i64::from(rc("gpus_rc ").unwrap_or(-1)),
            line: first(lines).map(str::to_string),
        });
        m.gpus = None;
        return;
    }
    let mut gpus = Vec::new();
    for l in lines.iter().filter(|l| !l.trim().is_empty()) {
        match parse_gpu(l) {
            Some(g) => gpus.push(g),
            None => m.note(Note::SmiLine {
                line: l.trim().to_string(),
            }),
        }
    }
    m.gpus = Some(gpus);
    let owners: Vec<(i64, String, String)> = sec("owners")
        .map(|ls| {
            ls.iter()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    Some((
                        f.first()?.parse().ok()?,
                        f.get(1)?.to_string(),
                        f[2..].join(" "),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    m.gpu_procs.clear();
    if rc("apps_rc ").is_some_and(|c| c != 0) {
        m.note(Note::AppsFailed {
            line: sec("apps").and_then(|l| first(l)).map(str::to_string),
        });
    }
    for l in sec("apps").into_iter().flatten() {
        if let Some(mut p) = parse_app(l) {
            if let Some((_, user, comm)) = owners.iter().find(|o| o.0 == p.pid) {
                p.user = Some(user.clone());
                p.comm = Some(comm.clone());
            }
            m.gpu_procs.push(p);
        }
    }
    m.cuda = sec("cuda").and_then(|l| first(l)).map(str::to_string);
}

/// The whole probe's output of host `host`.
pub fn parse(host: &str, out: &str) -> Machine {
    let secs = sections(out);
    let sec = |name: &str| secs.iter().find(|(n, _)| *n == name).map(|(_, l)| l);
    let mut m = Machine {
        host: host.to_string(),
        ..Default::default()
    };
    m.node = sec("node")
        .and_then(|l| first(l))
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    let c = &mut m.cpu;
    if let Some(ls) = sec("governor") {
        for g in ls.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
            match c.governors.iter_mut().find(|(x, _)| x == g) {
                Some(e) => e.1 += 1,
                None => c.governors.push((g.to_string(), 1)),
            }
        }
        c.governors
            .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    }
    let flag = |name: &str| {
        sec(name)
            .and_then(|l| first(l))
            .and_then(|v| v.parse::<u8>().ok())
    };
    c.turbo = match (flag("no_turbo"), flag("boost")) {
        (Some(n), _) => Some(n == 0),
        (None, Some(b)) => Some(b == 1),
        _ => None,
    };
    c.cpus = sec("cpus")
        .and_then(|l| first(l))
        .and_then(|v| v.parse().ok());
    c.load = sec("loadavg").and_then(|l| first(l)).and_then(|l| {
        let f: Vec<f64> = l
            .split_whitespace()
            .take(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        (f.len() == 3).then(|| [f[0], f[1], f[2]])
    });
    if let Some(ls) = sec("meminfo") {
        parse_meminfo(ls, c);
    }
    c.numa_nodes = sec("numa")
        .map(|l| l.iter().filter(|x| !x.trim().is_empty()).count() as u64)
        .filter(|n| *n > 0);
    // `always [madvise] never`: the selected one is in brackets
    c.thp = sec("thp").and_then(|l| first(l)).and_then(|l| {
        let sel = l.split('[').nth(1)?.split(']').next()?;
        Some(sel.to_string())
    });
    c.top = sec("top").map(|l| parse_top(l)).unwrap_or_default();
    c.irqbalance = sec("irqbalance").and_then(|l| first(l)).map(|v| v == "yes");
    parse_gpus(out, &mut m);
    m.ib = if let Some(ls) = sec("ibstat") {
        Some(parse_ibstat(ls))
    } else {
        sec("ibv_devinfo").map(|ls| parse_ibv_devinfo(ls))
    };
    if let Some(ls) = sec("torch") {
        for l in ls {
            let t = l.trim();
            if let Some(v) = t.strip_prefix("torch ") {
                m.torch = Some(v.trim().to_string());
            } else if let Some(v) = t.strip_prefix("nccl ") {
                m.nccl = Some(v.trim().to_string());
            } else if let Some(v) = t.strip_prefix("nccl-error ") {
                m.note(Note::NcclMissing { why: v.to_string() });
            }
        }
        if m.torch.is_none() {
            m.note(Note::TorchMissing {
                why: ls.last().map(|l| l.trim().to_string()),
            });
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const A100: &str = "0, NVIDIA A100-SXM4-80GB, GPU-1b2c3d4e-0000-1111-2222-333344445555, Enabled, 1410, 1593, 1410, 1410, 400.00, 34, 0x0000000000000000, 0, Disabled, 535.129.03";

    #[test]
    fn a_documented_gpu_line() {
        let g = parse_gpu(A100).unwrap();
        assert_eq!(g.index, Some(0));
        assert_eq!(g.name, "NVIDIA A100-SXM4-80GB");
        assert_eq!(g.persistence, Some(true));
        assert_eq!(g.sm_mhz, Some(1410.0));
        assert_eq!(g.power_limit_w, Some(400.0));
        assert_eq!(g.throttle, Some(0));
        assert_eq!(g.mig, Some(false));
        assert_eq!(g.driver.as_deref(), Some("535.129.03"));
    }

    #[test]
    fn odd_gpu_lines_never_panic() {
        // [N/A], [Not Supported], empty fields
        let g = parse_gpu("1, GeForce RTX 3090, GPU-x, Disabled, 210, 405, [N/A], [Not Supported], [N/A], 41, 0x0000000000000004, [N/A], [N/A], 550.54").unwrap();
        assert_eq!(g.app_sm_mhz, None);
        assert_eq!(g.max_sm_mhz, None);
        assert_eq!(g.ecc_uncorrected, None);
        assert_eq!(g.mig, None);
        assert_eq!(g.throttle, Some(4));
        let g = parse_gpu("2, , GPU-y, , , , , , , , , , , ").unwrap();
        assert_eq!((g.name.as_str(), g.sm_mhz, g.driver), ("", None, None));
        // a name with a comma in it: the other fields count from the ends
        let g = parse_gpu("3, Tesla V100, 32GB, GPU-z, Enabled, 1380, 877, 1380, 1530, 300.00, 40, 0x0, 0, [N/A], 470.1").unwrap();
        assert_eq!(g.name, "Tesla V100, 32GB");
        assert_eq!(g.uuid, "GPU-z");
        assert_eq!(g.driver.as_deref(), Some("470.1"));
        for bad in [
            "",
            ",,,",
            "No devices were found",
            "0, a, b",
            "x, y, [N/A], 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11",
            "0xzz, a, b, c, d, e, f, g, h, i, j, zz, k, l",
        ] {
            let _ = parse_gpu(bad);
        }
        assert!(parse_gpu("No devices were found").is_none());
    }

    #[test]
    fn odd_app_lines() {
        let p = parse_app("GPU-1b2c, 4242, 1024").unwrap();
        assert_eq!((p.pid, p.used_mib), (4242, Some(1024.0)));
        let p = parse_app("GPU-1b2c, 4242, [N/A]").unwrap();
        assert_eq!(p.used_mib, None);
        assert!(parse_app("No running processes found").is_none());
        assert!(parse_app("").is_none());
        assert!(parse_app("GPU-1, [N/A], 3").is_none());
        assert!(parse_app("GPU-1, 12, 3, extra, commas").is_some());
    }

    #[test]
    fn ib_ports_from_both_tools() {
        let ibstat = "CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 200\n\t\tLink layer: InfiniBand\nCA 'mlx5_1'\n\tPort 1:\n\t\tState: Down\n";
        let lines: Vec<&str> = ibstat.lines().collect();
        let p = parse_ibstat(&lines);
        assert_eq!(p.len(), 2);
        assert_eq!(
            (p[0].ca.as_str(), p[0].state.as_str()),
            ("mlx5_0", "Active")
        );
        assert_eq!(p[0].rate.as_deref(), Some("200 Gb/s"));
        assert_eq!(p[1].state, "Down");
        let ibv = "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n";
        let lines: Vec<&str> = ibv.lines().collect();
        let p = parse_ibv_devinfo(&lines);
        assert_eq!(
            (p[0].ca.as_str(), p[0].port, p[0].state.as_str()),
            ("mlx5_0", 1, "Active")
        );
        assert!(parse_ibstat(&["garbage", "State: Active"]).is_empty());
    }

    #[test]
    fn a_whole_probe_output() {
        let out = "@@governor\nperformance\npowersave\nperformance\n@@no_turbo\n@@boost\n1\n@@cpus\n3\n@@loadavg\n0.52 0.40 0.33 1/234 999\n@@meminfo\nMemTotal:       16000000 kB\nMemAvailable:    8000000 kB\nSwapTotal:       2000000 kB\nSwapFree:        1500000 kB\n@@numa\n/sys/devices/system/node/node0\n@@thp\nalways [madvise] never\n@@top\n  PID USER     %CPU COMMAND\n  12 alice    97.0 stress\n  13 root      0.0 ps\n@@irqbalance\nno\n@@gpus\n".to_string()
            + A100
            + "\n@@gpus_rc 0\n@@apps\nGPU-1b2c3d4e-0000-1111-2222-333344445555, 4242, 1024\n@@apps_rc 0\n@@owners\n 4242 bob      python3\n@@cuda\n12.2\n@@noib\n";
        let m = parse("h", &out);
        assert_eq!(
            m.cpu.governor().unwrap(),
            "mixed (2× performance, 1× powersave)"
        );
        assert_eq!(m.cpu.turbo, Some(true));
        assert_eq!(m.cpu.load, Some([0.52, 0.40, 0.33]));
        assert_eq!(m.cpu.swap_used_kib, Some(500000));
        assert_eq!(m.cpu.thp.as_deref(), Some("madvise"));
        assert_eq!(m.cpu.top.len(), 1);
        assert_eq!(m.gpus.as_ref().unwrap().len(), 1);
        assert_eq!(m.gpu_procs[0].user.as_deref(), Some("bob"));
        assert_eq!(m.cuda.as_deref(), Some("12.2"));
        assert!(m.ib.is_none());
        // nothing at all: every part not available, no panic
        let m = parse("h", "");
        assert!(m.cpu.governor().is_none() && m.cpu.load.is_none());
        let m = parse("h", "@@nonvidia\n@@gpus_rc x\n@@torch\nTraceback\nModuleNotFoundError: No module named 'torch'\n");
        assert!(m.gpus.is_none());
        assert!(m.notes.iter().any(|n| n.contains("torch: not available")));
    }

    #[test]
    fn a_hosts_env_is_exported_quoted_before_the_script() {
        let env = vec![
            ("PATH".to_string(), "/opt/nv bin:/usr/bin".to_string()),
            ("X".to_string(), "it's $HOME".to_string()),
            ("not a name".to_string(), "v".to_string()),
            ("HF_TOKEN".to_string(), "hf_secret".to_string()),
        ];
        assert_eq!(
            in_env(&env, "nvidia-smi"),
            "export PATH='/opt/nv bin:/usr/bin' X='it'\\''s $HOME'\nnvidia-smi"
        );
        assert_eq!(in_env(&[], "true"), "true");
    }

    #[test]
    fn a_failing_nvidia_smi_is_a_note() {
        let mut m = Machine::default();
        parse_gpus("@@gpus\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n@@gpus_rc 9\n", &mut m);
        assert!(m.gpus.is_none());
        assert!(m.notes[0].contains("exit 9"), "{:?}", m.notes);
    }
}
