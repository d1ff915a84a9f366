//! The `telemetry` sampler of a point: one background step per host its measured steps (and
//! servers) run on, started after the point's servers are ready and stopped first at teardown,
//! reading the GPUs they are given (`CUDA_VISIBLE_DEVICES`; all of the host's when a step
//! there names none) with NVIDIA's `nvidia-smi --query-gpu=… -lms N`. Its log is the samples
//! CSV ([`crate::results::telemetry`] reads it); on a host without `nvidia-smi` it prints one
//! line saying so and ends, which the run takes as no telemetry, not as a failure.

use crate::model::{Experiment, Host, Telemetry};
use crate::util::shell::quote;

use crate::kind_api::step::{Phase, Ready, Step};

/// The sampler's step id for a point (its log is `logs/telemetry-<run id>-<host>.log`).
pub fn step_id(run_id: &str) -> String {
    format!("telemetry-{run_id}")
}

/// The RAPL sampler's step id for a point.
pub fn rapl_id(run_id: &str) -> String {
    format!("rapl-{run_id}")
}

/// The NVML energy-counter sampler's step id for a point.
pub fn nvml_id(run_id: &str) -> String {
    format!("nvml-{run_id}")
}

/// Which samples a sampler step writes (`telemetry`, `rapl` or `nvml`): the stem of its kept
/// file.
pub fn kind_of(step_id: &str) -> &'static str {
    if step_id.starts_with("rapl-") {
        "rapl"
    } else if step_id.starts_with("nvml-") {
        "nvml"
    } else {
        "telemetry"
    }
}

/// The NVML sampler's program (Python, the standard library's `ctypes`; no package to
/// install): loads the driver's `libnvidia-ml.so.1` at run time (`$EXPR_NVML_LIB` in the host's
/// `env` points elsewhere), finds the GPUs given as its arguments (an index or a UUID, as
/// `CUDA_VISIBLE_DEVICES` names them; none: every GPU of the host), and every interval reads each
/// one's cumulative energy counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ since the driver
/// loaded; Volta and later), stamped with the midpoint of two clock readings around the reads
/// (Unix ms). Its header names the GPUs in the RAPL sampler's form (`timestamp_ms,gpu0@0`: no
/// wrap-around); where there is no library, no GPU or no counter it prints one line saying so
/// and ends.
const NVML_PY: &str = r#"import sys,os,time
def no(w):
 print("expr-telemetry: no NVML energy counter: "+w,flush=True);sys.exit(0)
def main():
 import ctypes as C
 lib=os.environ.get("EXPR_NVML_LIB") or "libnvidia-ml.so.1"
 try:n=C.CDLL(lib);[getattr(n,f) for f in ("nvmlInit_v2","nvmlDeviceGetCount_v2","nvmlDeviceGetHandleByIndex_v2","nvmlDeviceGetHandleByUUID","nvmlDeviceGetTotalEnergyConsumption")]
 except (OSError,AttributeError) as e:no("%s does not load or lacks a call (%s)"%(lib,e))
 r=n.nvmlInit_v2()
 if r:no("nvmlInit_v2 returned %d"%r)
 iv=float(sys.argv[1]);g=sys.argv[2:]
 if not g:
  c=C.c_uint();r=n.nvmlDeviceGetCount_v2(C.byref(c))
  if r:no("nvmlDeviceGetCount_v2 returned %d"%r)
  g=[str(i) for i in range(c.value)]
 if not g:no("the host has no GPU")
 hs=[]
 for x in g:
  h=C.c_void_p();r=n.nvmlDeviceGetHandleByIndex_v2(C.c_uint(int(x)),C.byref(h)) if x.isdigit() else n.nvmlDeviceGetHandleByUUID(x.encode(),C.byref(h))
  if r:no("GPU %s: no NVML handle (error %d)"%(x,r))
  hs.append(h)
 def rd():
  v=[]
  for x,h in zip(g,hs):
   e=C.c_ulonglong();r=n.nvmlDeviceGetTotalEnergyConsumption(h,C.byref(e))
   if r:no("GPU %s: nvmlDeviceGetTotalEnergyConsumption returned %d (a GPU before Volta has no energy counter)"%(x,r))
   v.append(e.value)
  return v
 rd();print("timestamp_ms,"+",".join("gpu%s@0"%x for x in g),flush=True)
 while 1:
  a=time.time()*1e3;v=rd();b=time.time()*1e3
  print("%d,%s"%((a+b)/2,",".join(map(str,v))),flush=True);time.sleep(iv)
try:main()
except SystemExit:raise
except BaseException as e:no("the sampler failed (%s: %s)"%(type(e).__name__,e))
"#;

/// The NVML sampler's shell line: its program under `python3` with the interval (s) and the
/// GPUs, or the line saying the host has no `python3`.
pub fn nvml_command(t: &Telemetry, gpus: Option<&str>) -> String {
    let secs = format!("{}.{:03}", t.interval_ms / 1000, t.interval_ms % 1000);
    let mut line = format!(
        "command -v python3 >/dev/null 2>&1 || {{ echo {}; exit 0; }}; exec python3 -c {} {secs}",
        quote(crate::results::telemetry::NO_NVML_PYTHON),
        quote(NVML_PY)
    );
    for g in gpus.into_iter().flat_map(|g| g.split(',')) {
        line.push(' ');
        line.push_str(&quote(g));
    }
    line
}

/// The RAPL sampler's shell line: each CPU package's cumulative energy counter
/// (`/sys/class/powercap/intel-rapl:N/energy_uj` named `package-*`: sub-zones and `psys`,
/// which holds the packages' energy too, left out; `$EXPR_POWERCAP` in
/// the host's `env` points elsewhere) every `interval` ms, read with the shell's own `read`
/// between two clock readings and stamped with their midpoint (Unix ms); a header with each
/// package's name and counter range (for wrap-around); one line saying so where no counter is
/// readable.
pub fn rapl_command(t: &Telemetry) -> String {
    let secs = format!("{}.{:03}", t.interval_ms / 1000, t.interval_ms % 1000);
    format!(
        "d=${{EXPR_POWERCAP:-/sys/class/powercap}}; set --; \
for z in \"$d\"/intel-rapl:*; do [ -e \"$z\" ] || continue; n=; {{ read -r n < \"$z/name\"; }} 2>/dev/null; case ${{z##*/}}:$n in *:*:*:*) ;; *:package-*) [ -r \"$z/energy_uj\" ] && set -- \"$@\" \"$z\";; esac; done; \
[ $# -gt 0 ] || {{ echo {}; exit 0; }}; \
printf timestamp_ms; for z; do printf ',%s@%s' \"$(cat \"$z/name\")\" \"$(cat \"$z/max_energy_range_uj\")\"; done; echo; \
while :; do a=$(date +%s%3N); l=; for z; do read -r v < \"$z/energy_uj\"; l=\"$l,$v\"; done; b=$(date +%s%3N); echo \"$(( (a + b) / 2 ))$l\"; sleep {secs}; done",
        quote(crate::results::telemetry::NO_RAPL)
    )
}

/// The GPUs the point's steps on `host` are given (their own `CUDA_VISIBLE_DEVICES`, else the
/// host's `env`), as `nvidia-smi -i` takes them; None: all (a step there names none).
fn gpus_on(steps: &[Step], host: &Host) -> Option<String> {
    let mut ids: Vec<String> = Vec::new();
    let cvd = |env: &[(String, String)]| -> Option<String> {
        env.iter()
            .find(|(k, _)| k == "CUDA_VISIBLE_DEVICES")
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    for s in steps
        .iter()
        .filter(|s| s.host == host.name && (s.phase == Phase::Launch || s.background))
    {
        let v = cvd(&s.env).or_else(|| cvd(&host.env))?;
        for g in v.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            if !ids.iter().any(|x| x == g) {
                ids.push(g.to_string());
            }
        }
    }
    (!ids.is_empty()).then(|| ids.join(","))
}

/// The sampler's shell line: `nvidia-smi` where the host has one, else the line that says so.
pub fn command(t: &Telemetry, gpus: Option<&str>) -> String {
    let mut smi = format!(
        "exec nvidia-smi --query-gpu={} --format=csv,nounits -lms {}",
        crate::results::telemetry::FIELDS.join(","),
        t.interval_ms
    );
    if let Some(g) = gpus {
        smi.push_str(&format!(" -i {}", quote(g)));
    }
    format!(
        "command -v nvidia-smi >/dev/null 2>&1 || {{ echo {}; exit 0; }}; {smi}",
        quote(crate::results::telemetry::NO_SMI)
    )
}

/// A sampler step on `host`: in the background while the point runs, ready at its header line
/// (`header`, or its own `expr-telemetry:` line saying why it cannot sample), given 30 s.
fn sampler(id: String, host: &Host, t: &Telemetry, shell: String, header: &str) -> Step {
    let mut s = Step::new(id, Phase::Serve, host, &t.loc);
    s.shell = Some(shell);
    s.background = true;
    s.sampler = true;
    s.ready = Some(Box::new(Ready::Log {
        regex: format!("^({header}|expr-telemetry:)"),
    }));
    s.timeout_s = 30;
    s
}

/// Add the point's samplers (after its last server, before its first prepare, warmup or launch
/// step) and their stops (first of the teardown).
pub fn add(exp: &Experiment, run_id: &str, steps: &mut Vec<Step>) {
    let Some(t) = &exp.telemetry else {
        return;
    };
    let mut hosts: Vec<String> = Vec::new();
    for s in steps
        .iter()
        .filter(|s| s.phase == Phase::Launch || s.background)
    {
        if !hosts.contains(&s.host) {
            hosts.push(s.host.clone());
        }
    }
    let mut samplers = Vec::new();
    for h in &hosts {
        let Some(host) = exp.host(h) else { continue };
        let gpus = gpus_on(steps, host);
        let mut st = sampler(
            step_id(run_id),
            host,
            t,
            command(t, gpus.as_deref()),
            "timestamp",
        );
        // nvidia-smi's timestamps in UTC, whatever the host's zone
        st.env.push(("TZ".into(), "UTC".into()));
        st.extra_mut().note = Some(format!(
            "telemetry: samples the GPUs {} every {} ms while the point runs; not a server (its end does not fail the point)",
            gpus.unwrap_or_else(|| "of the host".to_string()),
            t.interval_ms
        ));
        samplers.push(st);
        let mut rapl = sampler(rapl_id(run_id), host, t, rapl_command(t), "timestamp_ms");
        rapl.extra_mut().note = Some(format!(
            "telemetry: reads the CPU packages' energy counters (RAPL) every {} ms while the point runs",
            t.interval_ms
        ));
        samplers.push(rapl);
        let nvml_cmd = nvml_command(t, gpus_on(steps, host).as_deref());
        let mut nvml = sampler(nvml_id(run_id), host, t, nvml_cmd, "timestamp_ms");
        nvml.extra_mut().note = Some(format!(
            "telemetry: reads the GPUs' energy counters (NVML) every {} ms while the point runs",
            t.interval_ms
        ));
        samplers.push(nvml);
    }
    if samplers.is_empty() {
        return;
    }
    let at = steps
        .iter()
        .position(|s| {
            matches!(
                s.phase,
                Phase::Prepare | Phase::Warmup | Phase::Launch | Phase::Cleanup | Phase::Collect
            ) && !s.background
        })
        .unwrap_or(steps.len());
    let mut stops = samplers.clone();
    crate::kind_api::step::teardown(&mut stops);
    stops.retain(|s| s.phase == Phase::Teardown);
    for (k, s) in samplers.into_iter().enumerate() {
        steps.insert(at + k, s);
    }
    let first_teardown = steps
        .iter()
        .position(|s| s.phase == Phase::Teardown)
        .unwrap_or(steps.len());
    for (k, s) in stops.into_iter().enumerate() {
        steps.insert(first_teardown + k, s);
    }
}
