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
        *--query-gpu=timestamp,index,uuid,power.draw,*-lms*) exec sh \"$d/sample.sh\" \"$@\";;\n\
        '') echo '| NVIDIA-SMI 535.129.03   Driver Version: 535.129.03   CUDA Version: 12.2 |';;\n\
        *) echo \"stand-in nvidia-smi: unexpected arguments: $*\" >&2; exit 2;;\n\
        esac\n";
    write_exec(&bin.join("nvidia-smi"), smi);
    write_exec(&bin.join("sample.sh"), SAMPLE_SH);
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

/// The stand-in's sampling mode, NVIDIA's `nvidia-smi --query-gpu=timestamp,index,uuid,… \
/// --format=csv,nounits -lms N [-i LIST]`: the header once, then every N ms one line per GPU
/// (those of `-i`, else all): the time (`%Y/%m/%d %H:%M:%S.%3N`, in `$TZ`) and that GPU's row of
/// `samples.csv` beside it (`index, uuid, power.draw, clocks.sm, clocks.mem, utilization.gpu,
/// utilization.memory, memory.used, temperature.gpu, clocks_throttle_reasons.active`). With a
/// number in `stop_after`, it stops after that many rounds: it exits 3, or with `hang` in
/// `stop_mode` goes on running without printing (a hung sampler).
const SAMPLE_SH: &str = r#"d=$(dirname "$0")
ms=100; ids=
while [ $# -gt 0 ]; do
  case "$1" in
    -lms) ms=$2; shift;;
    -i) ids=$2; shift;;
  esac
  shift
done
s=$(awk -v m="$ms" 'BEGIN{printf "%.3f", m/1000}')
echo 'timestamp, index, uuid, power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%], memory.used [MiB], temperature.gpu, clocks_throttle_reasons.active'
n=0
while :; do
  if [ -f "$d/stop_after" ] && [ "$n" -ge "$(cat "$d/stop_after")" ]; then
    if [ "$(cat "$d/stop_mode" 2>/dev/null)" = hang ]; then exec sleep 100000; fi
    exit 3
  fi
  ts=$(date +'%Y/%m/%d %H:%M:%S.%3N')
  awk -F', *' -v ts="$ts" -v ids="$ids" 'BEGIN{k=split(ids,a,",");for(i=1;i<=k;i++)want[a[i]]=1} ids=="" || ($1 in want) {print ts ", " $0}' "$d/samples.csv"
  n=$((n+1))
  sleep "$s"
done
"#;

/// `samples.csv` of the stand-in's sampling mode beside its `nvidia-smi` in `bin`, and how it
/// stops (`stop_after` rounds, `hang` or exit; None: it samples until stopped).
pub fn standin_samples(bin: &Path, rows: &str, stop: Option<(u32, &str)>) {
    std::fs::write(bin.join("samples.csv"), rows).unwrap();
    match stop {
        Some((n, mode)) => {
            std::fs::write(bin.join("stop_after"), n.to_string()).unwrap();
            std::fs::write(bin.join("stop_mode"), mode).unwrap();
        }
        None => {
            let _ = std::fs::remove_file(bin.join("stop_after"));
        }
    }
}

/// A stand-in `nsys` (Nsight Systems) in `bin`, modelled on its CLI: `nsys profile -o OUT
/// [options] -- CMD…` runs CMD and writes `OUT.nsys-rep`; `nsys stats --report
/// cuda_gpu_kern_sum --format csv … --output P FILE` writes `P_cuda_gpu_kern_sum.csv` in
/// NVIDIA's columns (two kernels: gemm 8000 ns over 2 calls, small_kernel 2000 ns over 4), or
/// fails like nsys when FILE is not there. Each call is logged to `nsys-calls.log`.
pub fn standin_nsys(bin: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    write_exec(
        &bin.join("nsys"),
        r#"#!/bin/sh
d=$(dirname "$0")
echo "$*" >> "$d/nsys-calls.log"
case "$1" in
profile)
  shift; out=
  while [ $# -gt 0 ]; do
    case "$1" in
      -o) out=$2; shift 2;;
      --) shift; break;;
      *) shift;;
    esac
  done
  "$@"; rc=$?
  printf 'stand-in nsys capture
' > "$out.nsys-rep"
  echo "Generated:"; echo "    $out.nsys-rep"
  exit $rc;;
stats)
  shift; p=; last=
  while [ $# -gt 0 ]; do case "$1" in --output) p=$2; shift 2;; *) last=$1; shift;; esac; done
  [ -f "$last" ] || { echo "ERROR: $last does not exist." >&2; exit 1; }
  echo "Generating SQLite file ${last%.nsys-rep}.sqlite from $last"
  printf '"Time (%%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"
"80.0","8000","2","4000.0","4000.0","3900","4100","141.4","void gemm<float, 128>(float const*, float*)"
"20.0","2000","4","500.0","500.0","400","600","80.0","small_kernel(int)"
' > "${p}_cuda_gpu_kern_sum.csv";;
*) echo "stand-in nsys: unexpected arguments: $*" >&2; exit 2;;
esac
"#,
    );
}

pub fn write_exec(p: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(p, text).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A PATH for a stand-in GPU host: `n` quiet A100s (indices 0..n) answered by the stand-in
/// `nvidia-smi` in `dir/gpubin`, before this process's PATH. What a run of a GPU kind on a
/// machine without GPUs needs to get past preflight's check that its GPUs are there.
pub fn gpus_on_path(dir: &Path, n: usize) -> String {
    let bin = dir.join("gpubin");
    let lines: String = (0..n)
        .map(|i| {
            let uuid = format!("GPU-1b2c3d4e-0000-1111-2222-3333444455{i:02}");
            let l = quiet_gpu(&uuid);
            format!("{i}{}", &l[1..])
        })
        .collect();
    standin_nvidia_smi(&bin, &lines, "");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// [`gpus_on_path`] with 8 GPUs, made once per test binary (in the system's temp directory,
/// named by this process): the PATH of tests that run a GPU kind's stand-in runner.
pub fn gpu_path() -> &'static str {
    static P: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("expr-gpus-{}", std::process::id()));
        gpus_on_path(&dir, 8)
    })
}

/// A stand-in for NVIDIA's `libnvidia-ml.so.1` (NVML), built with the system's C compiler into
/// `dir/libnvidia-ml-standin.so` (returned). It answers the calls expr's NVML sampler makes, with
/// `nvml.h`'s signatures and return codes (`NVML_SUCCESS` 0, `NVML_ERROR_INVALID_ARGUMENT` 2,
/// `NVML_ERROR_NOT_SUPPORTED` 3): `nvmlInit_v2`, `nvmlDeviceGetCount_v2`,
/// `nvmlDeviceGetHandleByIndex_v2`, `nvmlDeviceGetHandleByUUID` (`GPU-standin-N`) and
/// `nvmlDeviceGetTotalEnergyConsumption` — each GPU's cumulative counter (mJ) advancing on the
/// wall clock at the power `EXPR_STANDIN_NVML_W` gives it (`"160,320"`; W = mJ per ms; a
/// negative power: a GPU without the counter, NOT_SUPPORTED as on GPUs before Volta).
pub fn standin_nvml(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let c = dir.join("nvml_standin.c");
    std::fs::write(
        &c,
        r#"#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/time.h>
typedef int nvmlReturn_t;
typedef struct dev { unsigned i; } *nvmlDevice_t;
static struct dev devs[16];
static double watts[16];
static unsigned n;
static double now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, 0);
    return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}
nvmlReturn_t nvmlInit_v2(void) {
    const char *s = getenv("EXPR_STANDIN_NVML_W");
    char *end;
    n = 0;
    while (s && *s && n < 16) {
        watts[n] = strtod(s, &end);
        if (end == s) break;
        devs[n].i = n;
        n++;
        s = *end == ',' ? end + 1 : end;
    }
    return 0;
}
nvmlReturn_t nvmlShutdown(void) { return 0; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) { *count = n; return 0; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d) {
    if (i >= n) return 2;
    *d = &devs[i];
    return 0;
}
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d) {
    unsigned i;
    if (sscanf(uuid, "GPU-standin-%u", &i) != 1 || i >= n) return 2;
    *d = &devs[i];
    return 0;
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    if (watts[d->i] < 0) return 3;
    /* mJ since an arbitrary origin: the power in W is mJ a ms */
    *mj = (unsigned long long)((now_ms() - 1.7e12) * watts[d->i]);
    return 0;
}
"#,
    )
    .unwrap();
    let so = dir.join("libnvidia-ml-standin.so");
    let st = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&so)
        .arg(&c)
        .status()
        .expect("cc (the C compiler) builds the stand-in NVML library");
    assert!(st.success(), "cc failed to build the stand-in NVML library");
    so
}

/// A stand-in for the kernel's RAPL counters (no machine of the suite exposes them): a
/// directory in `/sys/class/powercap`'s layout at `dir/powercap` — `intel-rapl:0` named
/// `package-0` whose `energy_uj` a thread advances at `watts` (from an arbitrary start, replaced
/// atomically every 2 ms), and a sub-zone `intel-rapl:0:0` (`core`) beside it that stays still.
/// Point a host's `EXPR_POWERCAP` at `dir/powercap`; the counters stop when the value is dropped.
pub struct StandinRapl {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl StandinRapl {
    pub fn start(dir: &Path, watts: f64) -> StandinRapl {
        let zone = dir.join("powercap/intel-rapl:0");
        let sub = dir.join("powercap/intel-rapl:0:0");
        for z in [&zone, &sub] {
            std::fs::create_dir_all(z).unwrap();
            std::fs::write(z.join("max_energy_range_uj"), "262143328850\n").unwrap();
            std::fs::write(z.join("energy_uj"), "0\n").unwrap();
        }
        std::fs::write(zone.join("name"), "package-0\n").unwrap();
        std::fs::write(sub.join("name"), "core\n").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let t0 = std::time::Instant::now();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let uj = 1e9 + watts * 1e6 * t0.elapsed().as_secs_f64();
                    let tmp = zone.join("energy_uj.tmp");
                    std::fs::write(&tmp, format!("{}\n", uj as u64)).unwrap();
                    std::fs::rename(&tmp, zone.join("energy_uj")).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            })
        };
        StandinRapl {
            stop,
            writer: Some(writer),
        }
    }
}

impl Drop for StandinRapl {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}
