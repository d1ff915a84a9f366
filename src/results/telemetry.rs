//! What the GPUs did during a point: the samples a point's telemetry sampler wrote (NVIDIA's
//! `nvidia-smi --query-gpu=… --format=csv,nounits -lms N`, one CSV per host), read and summed
//! over the point's measured window. Pure: text and times in, numbers (each naming its lines)
//! or the reason there are none out. The sampler itself is a planned step
//! ([`crate::plan::telemetry`]); the report turns a [`Summary`] into metrics.

use std::collections::BTreeMap;

use serde::Serialize;

/// The fields the sampler asks for, in this order (NVIDIA's `--help-query-gpu` names; the
/// throttle field under its older name, which newer drivers still answer).
pub const FIELDS: &[&str] = &[
    "timestamp",
    "index",
    "uuid",
    "power.draw",
    "clocks.sm",
    "clocks.mem",
    "utilization.gpu",
    "utilization.memory",
    "memory.used",
    "temperature.gpu",
    "clocks_throttle_reasons.active",
];

/// The first line of a kept samples file says where they came from: `# samples of: …`.
pub const SOURCE_MARK: &str = "samples of";

/// What the sampler prints instead of samples on a host without `nvidia-smi`.
pub const NO_SMI: &str = "expr-telemetry: no nvidia-smi on this host";

/// What the RAPL sampler prints where no package counter is readable.
pub const NO_RAPL: &str =
    "expr-telemetry: no readable RAPL counter (/sys/class/powercap/intel-rapl:N/energy_uj)";

/// What the NVML sampler's line prints on a host without `python3` (the sampler's program
/// prints its own line, `expr-telemetry: no NVML energy counter: …`, for no library, no GPU or
/// no counter).
pub const NO_NVML_PYTHON: &str = "expr-telemetry: no NVML energy counter: no python3 on this host";

/// A sampler of cumulative energy counters: what it reads, and in what unit.
struct Counters {
    /// `RAPL energy counters`, `NVML total energy counters`.
    what: &'static str,
    /// The counter's units in a joule (µJ: 1e6, mJ: 1e3).
    per_joule: f64,
}

const RAPL: Counters = Counters {
    what: "RAPL energy counters",
    per_joule: 1e6,
};

const NVML: Counters = Counters {
    what: "NVML total energy counters",
    per_joule: 1e3,
};

/// The CPU packages' energy over the measured window `[t0, t1]` (Unix ms) from a RAPL
/// sampler's file: each package's counter (µJ, its wrap-arounds undone with the range the
/// header gives) read at the window's ends by linear interpolation between the samples around
/// them, summed over packages — a difference of the hardware's cumulative counter, not an
/// integral of samples. `Ok((joules, source))`, or why there is none.
pub fn rapl_energy(
    text: &str,
    file: &str,
    t0: f64,
    t1: f64,
    interval_ms: f64,
) -> Result<(f64, String), String> {
    counter_energy(&RAPL, text, file, t0, t1, interval_ms)
}

/// The GPUs' energy over the measured window `[t0, t1]` (Unix ms) from an NVML sampler's file:
/// each GPU's cumulative counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ) read at the window's
/// ends as [`rapl_energy`] reads RAPL's, summed over the GPUs. `Ok((joules, source))`, or why
/// there is none (the sampler's own line where the host has no library, GPU or counter).
pub fn nvml_energy(
    text: &str,
    file: &str,
    t0: f64,
    t1: f64,
    interval_ms: f64,
) -> Result<(f64, String), String> {
    counter_energy(&NVML, text, file, t0, t1, interval_ms)
}

/// A samples file's complete lines: a last line without its newline was cut as the sampler
/// was stopped (a counter cut to its first digits would read as one that went back, a
/// temperature cut to `6` as 6 °C), so it is left out.
fn complete(text: &str) -> &str {
    match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    }
}

/// [`rapl_energy`] and [`nvml_energy`]: a counter sampler's file, header `timestamp_ms,` then
/// `name@range` per counter (range 0: it does not wrap), then `t,v,v,…` lines.
fn counter_energy(
    c: &Counters,
    text: &str,
    file: &str,
    t0: f64,
    t1: f64,
    interval_ms: f64,
) -> Result<(f64, String), String> {
    let mut lines = complete(text).lines().enumerate().filter(|(_, l)| {
        let l = l.trim();
        !l.is_empty() && !l.starts_with('#')
    });
    let Some((first_n, _)) = lines.clone().next() else {
        return Err(format!(
            "the {} sampler wrote nothing ({file} is empty)",
            c.short()
        ));
    };
    // the header, or the sampler's own line: a stray line before it (a shell's error on the
    // merged stderr) is passed over
    let Some((hn, head)) = lines.find(|(_, l)| {
        let l = l.trim_start();
        l.starts_with("timestamp_ms") || l.starts_with("expr-telemetry:")
    }) else {
        return Err(format!(
            "{file}:{}: not the {} sampler's header",
            first_n + 1,
            c.short()
        ));
    };
    if head.trim() == NO_RAPL {
        return Err(format!(
            "the host has no readable RAPL counter ({file}:{})",
            hn + 1
        ));
    }
    if let Some(why) = head.trim().strip_prefix("expr-telemetry: ") {
        let lead = format!("no {} energy counter: ", c.short());
        let why = why.strip_prefix(&lead).unwrap_or(why);
        return Err(format!("{why} ({file}:{})", hn + 1));
    }
    let zones: Vec<(String, f64)> = head
        .split(',')
        .skip(1)
        .filter_map(|z| {
            let (name, range) = z.rsplit_once('@')?;
            Some((name.to_string(), range.trim().parse().ok()?))
        })
        .collect();
    if !head.starts_with("timestamp_ms") || zones.is_empty() {
        return Err(format!(
            "{file}:{}: not the {} sampler's header",
            hn + 1,
            c.short()
        ));
    }
    // (t, line, each package's counter with its wraps undone)
    let mut rows: Vec<(f64, usize, Vec<f64>)> = Vec::new();
    // the sampler's own line after its samples (it stopped: a GPU that no longer answers)
    let mut stopped: Option<String> = None;
    for (i, l) in lines {
        if let Some(why) = l.trim().strip_prefix("expr-telemetry: ") {
            stopped.get_or_insert_with(|| format!("{why} ({file}:{})", i + 1));
            continue;
        }
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        let vals: Option<Vec<f64>> = f.iter().map(|x| x.parse::<f64>().ok()).collect();
        let Some(v) = vals.filter(|v| v.len() == zones.len() + 1) else {
            continue;
        };
        let mut c: Vec<f64> = v[1..].to_vec();
        if c.iter().any(|x| !x.is_finite()) {
            continue;
        }
        if let Some((_, _, prev)) = rows.last() {
            for (k, x) in c.iter_mut().enumerate() {
                // the counter wrapped: add its range as often as it takes to pass the previous
                // reading
                let range = zones[k].1;
                if *x < prev[k] && range > 0.0 {
                    *x += ((prev[k] - *x) / range).ceil() * range;
                }
            }
            // a counter that does not wrap went back (reset with its driver): no difference
            // across it means anything
            if let Some(k) = (0..c.len()).find(|&k| c[k] < prev[k]) {
                return Err(format!(
                    "{file}:{}: the counter of {} went back (from {} to {}): it was reset",
                    i + 1,
                    zones[k].0,
                    prev[k],
                    c[k]
                ));
            }
        }
        rows.push((v[0], i + 1, c));
    }
    let edge = edge(interval_ms);
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Err(format!("{file} holds no {} sample", c.short()));
    };
    if rows.len() < 2 || t1 < t0 {
        return Err(format!(
            "{file}:{}–{}: one sample, or a window that ends before it starts: no difference to take",
            first.1, last.1
        ));
    }
    if first.0 > t0 + edge || last.0 < t1 - edge {
        if let Some(why) = stopped {
            return Err(why);
        }
        return Err(format!(
            "the {} samples ({file}:{}–{}) do not cover the measured window",
            c.short(),
            first.1,
            last.1
        ));
    }
    // the counter at time t: linear between the samples around it, and past the first or
    // last sample along the nearest two (a counter held flat there would lose the energy of
    // the time between the last sample and the window's end)
    let at = |t: f64, k: usize| -> f64 {
        if rows.len() == 1 {
            return rows[0].2[k];
        }
        let j = rows
            .iter()
            .position(|r| r.0 >= t)
            .unwrap_or(rows.len() - 1)
            .max(1);
        let (a, b) = (&rows[j - 1], &rows[j]);
        if b.0 <= a.0 {
            return b.2[k];
        }
        a.2[k] + (b.2[k] - a.2[k]) * (t - a.0) / (b.0 - a.0)
    };
    let units: f64 = (0..zones.len()).map(|k| at(t1, k) - at(t0, k)).sum();
    let names: Vec<&str> = zones.iter().map(|z| z.0.as_str()).collect();
    Ok((
        units / c.per_joule,
        format!(
            "{file}:{}–{} ({} of {}, read at the window's ends)",
            first.1,
            last.1,
            c.what,
            names.join(", ")
        ),
    ))
}

impl Counters {
    /// `RAPL`, `NVML`: the sampler's name in a message.
    fn short(&self) -> &'static str {
        self.what.split(' ').next().unwrap_or(self.what)
    }
}

/// The throttle reasons that slow a GPU down (NVML's `clocksThrottleReasons`): software power
/// cap 0x4, hardware slowdown 0x8, software thermal 0x20, hardware thermal 0x40, hardware power
/// brake 0x80. Idle (0x1), application clocks (0x2), sync boost (0x10) and display clocks
/// (0x100) are not.
pub const SLOWING: u64 = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

/// The names of the slowing reasons in a mask, NVIDIA's words.
pub fn reason_names(mask: u64) -> Vec<&'static str> {
    [
        (0x4, "sw_power_cap"),
        (0x8, "hw_slowdown"),
        (0x20, "sw_thermal_slowdown"),
        (0x40, "hw_thermal_slowdown"),
        (0x80, "hw_power_brake_slowdown"),
    ]
    .iter()
    .filter(|(b, _)| mask & b != 0)
    .map(|(_, n)| *n)
    .collect()
}

/// One sample of one GPU: its time (Unix ms, UTC) and what the fields gave (`None`: the GPU
/// said `[N/A]`/`[Not Supported]`), with its line in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub t_ms: f64,
    pub gpu: u32,
    pub uuid: String,
    pub power_w: Option<f64>,
    pub sm_mhz: Option<f64>,
    pub mem_mhz: Option<f64>,
    pub util: Option<f64>,
    pub mem_util: Option<f64>,
    pub mem_used_mib: Option<f64>,
    pub temp_c: Option<f64>,
    pub reasons: Option<u64>,
    pub line: usize,
}

/// The samples of one file, and what could not be read in it.
#[derive(Debug, Default)]
pub struct Parsed {
    pub samples: Vec<Sample>,
    /// `line N: why`, at most a few (the rest counted).
    pub bad: Vec<String>,
    pub bad_count: usize,
    /// The first line (and its number) when the file holds no sample (the sampler's own
    /// message).
    pub said: Option<(usize, String)>,
}

fn field(t: &str) -> Option<f64> {
    let t = t.trim();
    if t.starts_with('[') || t.is_empty() {
        return None;
    }
    super::collect::number(t).ok()
}

/// nvidia-smi's timestamp (`2026/12/03 13:11:15.123`, in the sampler's `TZ=UTC`) as Unix ms.
pub fn timestamp_ms(t: &str) -> Option<f64> {
    let n = chrono::NaiveDateTime::parse_from_str(t.trim(), "%Y/%m/%d %H:%M:%S%.f").ok()?;
    Some(n.and_utc().timestamp_micros() as f64 / 1e3)
}

/// Read a sampler's CSV: header lines (nvidia-smi's, repeated or not) skipped, each other line
/// a sample or a reason it is not one.
pub fn parse(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut first: Option<(usize, &str)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let l = line.trim();
        if l.is_empty() || l.starts_with("timestamp") || l.starts_with('#') {
            continue;
        }
        first.get_or_insert((n, l));
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        let why = if f.len() != FIELDS.len() {
            Some(format!(
                "{} fields where the sampler asks for {}",
                f.len(),
                FIELDS.len()
            ))
        } else {
            None
        };
        let t = f.first().and_then(|t| timestamp_ms(t));
        let gpu = f.get(1).and_then(|g| g.parse::<u32>().ok());
        match (why, t, gpu) {
            (None, Some(t_ms), Some(gpu)) => p.samples.push(Sample {
                t_ms,
                gpu,
                uuid: f[2].to_string(),
                power_w: field(f[3]),
                sm_mhz: field(f[4]),
                mem_mhz: field(f[5]),
                util: field(f[6]),
                mem_util: field(f[7]),
                mem_used_mib: field(f[8]),
                temp_c: field(f[9]),
                reasons: u64::from_str_radix(f[10].trim_start_matches("0x"), 16).ok(),
                line: n,
            }),
            (why, t, _) => {
                p.bad_count += 1;
                if p.bad.len() < 3 {
                    let why = why.unwrap_or_else(|| {
                        if t.is_none() {
                            format!("{:?} is not nvidia-smi's timestamp", f[0])
                        } else {
                            format!("{:?} is not a GPU index", f.get(1).unwrap_or(&""))
                        }
                    });
                    p.bad.push(format!("line {n}: {why}"));
                }
            }
        }
    }
    if p.samples.is_empty() {
        p.said = first.map(|(n, s)| (n, s.chars().take(200).collect()));
    }
    p
}

/// One GPU over the measured window.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Gpu {
    pub host: String,
    pub gpu: u32,
    pub uuid: String,
    /// ∫ power dt over the window (trapezoid between samples, the nearest sample's value held
    /// at the window's edges), J.
    pub energy_j: Option<f64>,
    pub power_mean_w: Option<f64>,
    pub power_max_w: Option<f64>,
    pub sm_mhz_mean: Option<f64>,
    pub util_mean: Option<f64>,
    pub mem_used_max_mib: Option<f64>,
    pub temp_max_c: Option<f64>,
    /// Time with a slowing throttle reason ([`SLOWING`]), ms; and the reasons seen.
    pub throttle_ms: f64,
    pub reasons: Vec<String>,
    /// The file and its lines the numbers came from (`telemetry-HOST.csv:12–57`).
    pub source: String,
}

/// A point's telemetry, or why there is none.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// The measured window, ms.
    pub window_ms: f64,
    pub gpus: Vec<Gpu>,
}

/// Each GPU's samples of one host's file over the window `[t0, t1]` (Unix ms). `interval_ms`
/// is the sampler's: a GPU whose samples do not reach both ends of the window (within 1.5
/// intervals and 50 ms), or stop for more than 5 intervals (at least 1 s) inside it, has no
/// numbers, and the reason names the gap.
pub fn summarise(
    host: &str,
    file: &str,
    parsed: &Parsed,
    t0: f64,
    t1: f64,
    interval_ms: f64,
) -> Result<Vec<Gpu>, String> {
    if parsed.samples.is_empty() {
        return Err(match (&parsed.said, parsed.bad.first()) {
            (Some((n, s)), _) if s == NO_SMI => {
                format!("host `{host}` has no nvidia-smi ({file}:{n})")
            }
            (_, Some(b)) => format!("{file} holds no sample it can read ({b})"),
            (Some((n, s)), None) => format!("the sampler printed no sample: {s:?} ({file}:{n})"),
            (None, None) => format!("the sampler wrote nothing ({file} is empty)"),
        });
    }
    if t1 < t0 {
        return Err(format!(
            "the measured window ends before it starts ({t0} > {t1} ms): the clock was stepped"
        ));
    }
    let mut by_gpu: BTreeMap<u32, Vec<&Sample>> = BTreeMap::new();
    for s in &parsed.samples {
        by_gpu.entry(s.gpu).or_default().push(s);
    }
    let edge = edge(interval_ms);
    let gap_max = (5.0 * interval_ms).max(1000.0);
    let at = |ms: f64| {
        chrono::DateTime::from_timestamp_millis(ms as i64)
            .map(|d| d.format("%H:%M:%S%.3f").to_string())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for (gpu, mut ss) in by_gpu {
        ss.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
        let (first, last) = (ss[0], ss[ss.len() - 1]);
        if first.t_ms > t0 + edge {
            return Err(format!(
                "GPU {gpu} on `{host}`: its samples start at {} UTC, {:.0} ms after the measured window began ({file}:{})",
                at(first.t_ms),
                first.t_ms - t0,
                first.line
            ));
        }
        if last.t_ms < t1 - edge {
            return Err(format!(
                "GPU {gpu} on `{host}`: its samples stop at {} UTC, {:.0} ms before the measured window ended — the sampler died or hung ({file}:{})",
                at(last.t_ms),
                t1 - last.t_ms,
                last.line
            ));
        }
        // the samples that bear on the window: the last at or before t0 to the first at or
        // after t1
        let lo = ss.iter().rposition(|s| s.t_ms <= t0).unwrap_or(0);
        let hi = ss
            .iter()
            .position(|s| s.t_ms >= t1)
            .unwrap_or(ss.len() - 1)
            .max(lo);
        let w = &ss[lo..=hi];
        for pair in w.windows(2) {
            let (a, b) = (pair[0].t_ms.max(t0), pair[1].t_ms.min(t1));
            if b - a > gap_max {
                return Err(format!(
                    "GPU {gpu} on `{host}`: no sample for {:.0} ms inside the measured window ({file}:{}–{})",
                    b - a,
                    pair[0].line,
                    pair[1].line
                ));
            }
        }
        let span = (t1 - t0).max(0.0);
        let mean = |get: &dyn Fn(&Sample) -> Option<f64>| {
            integral(w, t0, t1, get).map(|i| i / span.max(f64::MIN_POSITIVE))
        };
        let energy_j = integral(w, t0, t1, &|s| s.power_w).map(|i| i / 1e3);
        let max_of = |get: &dyn Fn(&Sample) -> Option<f64>| {
            w.iter()
                .filter_map(|s| get(s))
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
        };
        let mut throttle_ms = 0.0;
        let mut mask = 0u64;
        for (k, s) in w.iter().enumerate() {
            let slowing = s.reasons.unwrap_or(0) & SLOWING;
            if slowing == 0 {
                continue;
            }
            mask |= slowing;
            // this sample's reason holds until the next sample (the window's end for the last)
            let a = s.t_ms.max(t0);
            let b = w.get(k + 1).map_or(t1, |n| n.t_ms).min(t1);
            throttle_ms += (b - a).max(0.0);
        }
        out.push(Gpu {
            host: host.to_string(),
            gpu,
            uuid: first.uuid.clone(),
            energy_j,
            power_mean_w: energy_j
                .filter(|_| span > 0.0)
                .map(|e| e * 1e3 / span)
                .or_else(|| (span == 0.0).then_some(w[0].power_w).flatten()),
            power_max_w: max_of(&|s| s.power_w),
            sm_mhz_mean: mean(&|s| s.sm_mhz),
            util_mean: mean(&|s| s.util),
            mem_used_max_mib: max_of(&|s| s.mem_used_mib),
            temp_max_c: max_of(&|s| s.temp_c),
            throttle_ms,
            reasons: reason_names(mask).iter().map(|s| s.to_string()).collect(),
            source: format!("{file}:{}–{}", w[0].line, w[w.len() - 1].line),
        });
    }
    Ok(out)
}

/// ∫ f dt over `[t0, t1]` (value·ms) along the samples `w` (sorted, the first at or before t0
/// unless none is, the last at or after t1 unless none is): linear between samples, each end
/// sample's value held to the window's edge. `None` when a sample in it has no value.
fn integral(w: &[&Sample], t0: f64, t1: f64, get: &dyn Fn(&Sample) -> Option<f64>) -> Option<f64> {
    let vals: Vec<(f64, f64)> = w
        .iter()
        .map(|s| get(s).map(|v| (s.t_ms, v)))
        .collect::<Option<_>>()?;
    if t1 <= t0 {
        return Some(0.0);
    }
    // the value at time t on the piecewise-linear curve, held flat past its ends
    let value_at = |t: f64| -> f64 {
        if t <= vals[0].0 {
            return vals[0].1;
        }
        for p in vals.windows(2) {
            let ((ta, va), (tb, vb)) = (p[0], p[1]);
            if t <= tb {
                return if tb > ta {
                    va + (vb - va) * (t - ta) / (tb - ta)
                } else {
                    vb
                };
            }
        }
        vals[vals.len() - 1].1
    };
    // the breakpoints inside the window, with its edges
    let mut ts: Vec<f64> = vec![t0];
    ts.extend(vals.iter().map(|v| v.0).filter(|t| *t > t0 && *t < t1));
    ts.push(t1);
    Some(
        ts.windows(2)
            .map(|p| (p[1] - p[0]) * (value_at(p[0]) + value_at(p[1])) / 2.0)
            .sum(),
    )
}

/// A GPU that is not like the others of its point, and how: the words name the host, the GPU
/// and the numbers against the others' median.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Odd {
    pub host: String,
    pub gpu: u32,
    /// Each way it differs, e.g. `SM clock 1100 MHz against 1410 MHz (−22 %)`.
    pub how: Vec<String>,
    /// The steps that were given it, e.g. `` step `run1-b_r0` (its device 1) ``: the rank, in
    /// the step's `CUDA_VISIBLE_DEVICES` (filled in from the journal by the report).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by: Vec<String>,
}

/// The GPUs of a point that differ from the others (each against the median of the rest): a
/// slower SM clock (under 90 %), throttled (over 1 % of the window) while the others are not, much lower utilisation
/// (under 70 %), hotter (by 10 °C or more) — and, beside one of those or among three GPUs or
/// more, a power draw off by more than half (over 1.5× or under 1/1.5 of the others'). Two GPUs that differ only in power cannot say which
/// one is odd and are not named.
pub fn odd_ones(gpus: &[Gpu], window_ms: f64) -> Vec<Odd> {
    if gpus.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, g) in gpus.iter().enumerate() {
        let others = |get: &dyn Fn(&Gpu) -> Option<f64>| {
            crate::util::stats::median(
                &gpus
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != i)
                    .filter_map(|(_, o)| get(o))
                    .collect::<Vec<_>>(),
            )
        };
        let mut how = Vec::new();
        let pct = |a: f64, b: f64| (a / b - 1.0) * 100.0;
        if let (Some(v), Some(m)) = (g.sm_mhz_mean, others(&|o| o.sm_mhz_mean)) {
            if m > 0.0 && v < 0.9 * m {
                how.push(format!(
                    "SM clock {v:.0} MHz against {m:.0} MHz ({:+.0} %)",
                    pct(v, m)
                ));
            }
        }
        let others_throttle = others(&|o| Some(o.throttle_ms)).unwrap_or(0.0);
        // throttled for a noticeable part of the window (1 %, at least 1 ms), the others not
        if g.throttle_ms > (0.01 * window_ms).max(1.0) && others_throttle == 0.0 {
            how.push(format!(
                "throttled {:.0} ms ({}) where the others were not",
                g.throttle_ms,
                g.reasons.join(", ")
            ));
        }
        if let (Some(v), Some(m)) = (g.util_mean, others(&|o| o.util_mean)) {
            if m > 0.0 && v < 0.7 * m {
                how.push(format!("utilisation {v:.0} % against {m:.0} %"));
            }
        }
        if let (Some(v), Some(m)) = (g.temp_max_c, others(&|o| o.temp_max_c)) {
            if v >= m + 10.0 {
                how.push(format!("{v:.0} °C against {m:.0} °C"));
            }
        }
        if let (Some(v), Some(m)) = (g.power_mean_w, others(&|o| o.power_mean_w)) {
            let off = m > 0.0 && (v > 1.5 * m || v < m / 1.5);
            if off && (!how.is_empty() || gpus.len() >= 3) {
                how.push(format!("power {v:.0} W against {m:.0} W ({:.2}×)", v / m));
            }
        }
        if !how.is_empty() {
            out.push(Odd {
                host: g.host.clone(),
                gpu: g.gpu,
                how,
                by: Vec::new(),
            });
        }
    }
    out
}

/// The metrics telemetry gives a point, in this order: (name, unit, higher is better).
pub const METRICS: &[(&str, &str, bool)] = crate::model::schema::TELEMETRY_METRICS;

/// One GPU's curve for the plot: (seconds from the window's start, power W, SM clock MHz).
pub type Curve = Vec<(f64, Option<f64>, Option<f64>)>;

/// What a point's telemetry files gave: each GPU over the measured window, the odd ones, and
/// the point's metrics — or why there are none.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, Serialize)]
pub struct PointTelemetry {
    pub gpus: Vec<Gpu>,
    pub odd: Vec<Odd>,
    /// Why every metric is missing (none: they were read, but see `not_read`).
    pub missing: Option<String>,
    /// (name, unit, higher is better, value, source) of each metric read.
    #[serde(skip)]
    pub metrics: Vec<(String, String, bool, f64, String)>,
    /// Each GPU's curve over the window and a little around it, at most [`CURVE_POINTS`]
    /// points: (host, GPU, curve).
    #[serde(skip)]
    pub curves: Vec<(String, u32, Curve)>,
    /// The metrics not read though the samples were (a GPU that reports no power), and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_read: Vec<(String, String)>,
    pub window_ms: f64,
}

/// The most points of one GPU's curve kept for the plot (a long point is thinned evenly).
pub const CURVE_POINTS: usize = 600;

/// Each host's clock against expr's (ms, the host's minus expr's; a host not named: the same
/// clock), from the journal's machine records.
pub type Clocks = BTreeMap<String, f64>;

/// The window `[t0, t1]` on the clock of the host whose samples file `f` is
/// (`<sampler>-<host>.csv`), and the words that say it was moved.
fn on_host_clock(
    clocks: &Clocks,
    prefix: &str,
    f: &str,
    (t0, t1): (f64, f64),
) -> ((f64, f64), String) {
    let host = f.strip_prefix(prefix).unwrap_or(f);
    let host = host.strip_suffix(".csv").unwrap_or(host);
    match clocks.get(host).copied().filter(|o| *o != 0.0) {
        Some(o) => (
            (t0 + o, t1 + o),
            format!(", the window moved by the host's clock offset {o:+.0} ms"),
        ),
        None => ((t0, t1), String::new()),
    }
}

/// Read a point's samples (`outputs/<run id>/telemetry-*.csv`) over its measured window
/// `[t0, t1]` (Unix ms on expr's clock; None: the journal holds no window; each host's
/// samples are read over it on that host's clock, `clocks`) and sum them up.
pub fn read_point(
    dir: &std::path::Path,
    run_id: &str,
    window: Option<(f64, f64)>,
    interval_ms: f64,
    clocks: &Clocks,
) -> PointTelemetry {
    let mut out = read_gpus(dir, run_id, window, interval_ms, clocks);
    nvml_counters(&mut out, dir, run_id, window, interval_ms, clocks);
    // the CPU packages' energy (RAPL), each host's file
    let cpu = match window {
        None => Err("the journal holds no measured window for the point".into()),
        Some(w) => counter_files(dir, run_id, &RAPL, w, interval_ms, clocks),
    };
    match cpu {
        Ok((j, src)) => out.metrics.push((
            CPU_METRIC.0.into(),
            CPU_METRIC.1.into(),
            CPU_METRIC.2,
            j,
            src,
        )),
        Err(why) => out.not_read.push((CPU_METRIC.0.into(), why)),
    }
    out
}

/// The GPUs' energy from their NVML counters, where every host's NVML sampler read them: a
/// difference of the driver's cumulative counters, exact where the integral of `power.draw`
/// samples is not (nvidia-smi's power is an average the driver samples part of the time), so it
/// replaces the integral as `gpu_energy_j` (and `gpu_power_mean_w` from it). Else the integral
/// stays, its source saying why no counter was read.
fn nvml_counters(
    out: &mut PointTelemetry,
    dir: &std::path::Path,
    run_id: &str,
    window: Option<(f64, f64)>,
    interval_ms: f64,
    clocks: &Clocks,
) {
    let (Some(k), Some(w)) = (
        out.metrics.iter().position(|m| m.0 == "gpu_energy_j"),
        window,
    ) else {
        return;
    };
    let read = counter_files(dir, run_id, &NVML, w, interval_ms, clocks);
    match read {
        Ok((j, src)) => {
            out.metrics[k].3 = j;
            out.metrics[k].4 =
                format!("{src}; the driver's energy counters, not integrated from power samples");
            if let Some(p) = out.metrics.iter().position(|m| m.0 == "gpu_power_mean_w") {
                if out.window_ms > 0.0 {
                    out.metrics[p].3 = j * 1e3 / out.window_ms;
                    out.metrics[p].4 = format!(
                        "gpu_energy_j from the NVML counters over the window of {:.3} s: all GPUs together",
                        out.window_ms / 1e3
                    );
                }
            }
        }
        Err(why) => {
            let m = &mut out.metrics[k].4;
            if m.ends_with(')') {
                m.pop();
            }
            m.push_str(&format!("; no NVML energy counter: {why})"));
        }
    }
}

/// The CPU packages' energy over the window (RAPL): (name, unit, higher is better).
pub const CPU_METRIC: (&str, &str, bool) = crate::model::schema::CPU_ENERGY_METRIC;

/// A point's kept samples files of one sampler (`telemetry-` or `rapl-`, one per host), sorted.
fn kept(dir: &std::path::Path, run_id: &str, prefix: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir.join(super::OUTPUTS).join(run_id))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|f| f.starts_with(prefix) && f.ends_with(".csv"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// How far a sampler's first or last sample may lie inside the measured window: 1.5 intervals
/// and 50 ms (a sampler reads on its own beat, and starts and stops a little apart from it).
fn edge(interval_ms: f64) -> f64 {
    1.5 * interval_ms + 50.0
}

/// A counter sampler's energy over the window `w` (expr's clock) from each host's kept file
/// (`rapl-<host>.csv`, `nvml-<host>.csv`), summed: (joules, the sources), or why there is none.
fn counter_files(
    dir: &std::path::Path,
    run_id: &str,
    c: &Counters,
    w: (f64, f64),
    interval_ms: f64,
    clocks: &Clocks,
) -> Result<(f64, String), String> {
    let rel = |f: &str| format!("{}/{run_id}/{f}", super::OUTPUTS);
    let prefix = format!("{}-", c.short().to_lowercase());
    let files = kept(dir, run_id, &prefix);
    if files.is_empty() {
        return Err(format!(
            "no {} samples were kept ({} has no {prefix}<host>.csv)",
            c.short(),
            rel("")
        ));
    }
    let v = files
        .iter()
        .map(|f| {
            let text = super::collect::read_lossy(&dir.join(super::OUTPUTS).join(run_id).join(f))?;
            let ((t0, t1), moved) = on_host_clock(clocks, &prefix, f, w);
            counter_energy(c, &text, &rel(f), t0, t1, interval_ms)
                .map(|(j, src)| (j, moved_source(src, &moved)))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let src: Vec<&str> = v.iter().map(|x| x.1.as_str()).collect();
    Ok((v.iter().map(|x| x.0).sum(), src.join("; ")))
}

/// A counter's source with the words that say its window was moved (inside its parentheses).
fn moved_source(src: String, moved: &str) -> String {
    match src.strip_suffix(')') {
        Some(head) if !moved.is_empty() => format!("{head}{moved})"),
        _ => src,
    }
}

/// The GPUs' part of [`read_point`].
fn read_gpus(
    dir: &std::path::Path,
    run_id: &str,
    window: Option<(f64, f64)>,
    interval_ms: f64,
    clocks: &Clocks,
) -> PointTelemetry {
    let mut out = PointTelemetry::default();
    let rel = |f: &str| format!("{}/{run_id}/{f}", super::OUTPUTS);
    let files = kept(dir, run_id, "telemetry-");
    if files.is_empty() {
        out.missing = Some(format!(
            "no samples were kept ({} has no telemetry-<host>.csv: the point's sampler never ran)",
            rel("")
        ));
        return out;
    }
    let Some((t0, t1)) = window else {
        out.missing = Some("the journal holds no measured window for the point (its launch steps were not all reaped), so its samples cannot be summed".into());
        return out;
    };
    out.window_ms = t1 - t0;
    let mut problems = Vec::new();
    for f in &files {
        let host = f.strip_prefix("telemetry-").unwrap_or(f);
        let host = host.strip_suffix(".csv").unwrap_or(host).to_string();
        let path = dir.join(super::OUTPUTS).join(run_id).join(f);
        let text = match super::collect::read_lossy(&path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let parsed = parse(complete(&text));
        let ((t0, t1), moved) = on_host_clock(clocks, "telemetry-", f, (t0, t1));
        match summarise(&host, &rel(f), &parsed, t0, t1, interval_ms) {
            Ok(g) => out.gpus.extend(g.into_iter().map(|mut g| {
                g.source.push_str(&moved);
                g
            })),
            Err(e) => problems.push(e),
        }
        // the curves: the samples from an interval before the window to one after it
        let mut by_gpu: BTreeMap<u32, Curve> = BTreeMap::new();
        for s in &parsed.samples {
            if s.t_ms >= t0 - 2.0 * interval_ms && s.t_ms <= t1 + 2.0 * interval_ms {
                by_gpu
                    .entry(s.gpu)
                    .or_default()
                    .push(((s.t_ms - t0) / 1e3, s.power_w, s.sm_mhz));
            }
        }
        for (gpu, mut c) in by_gpu {
            c.sort_by(|a, b| a.0.total_cmp(&b.0));
            if c.len() > CURVE_POINTS {
                let step = c.len() as f64 / CURVE_POINTS as f64;
                c = (0..CURVE_POINTS)
                    .map(|k| c[((k as f64 * step) as usize).min(c.len() - 1)])
                    .collect();
            }
            out.curves.push((host.clone(), gpu, c));
        }
    }
    if let Some(p) = problems.into_iter().next() {
        out.missing = Some(p);
        return out;
    }
    out.odd = odd_ones(&out.gpus, out.window_ms);
    metrics_of(&mut out);
    out
}

/// The point's metrics from its GPUs' numbers, and why any that is not there is missing.
fn metrics_of(out: &mut PointTelemetry) {
    let sources: Vec<&str> = out.gpus.iter().map(|g| g.source.as_str()).collect();
    let mut src: Vec<&str> = Vec::new();
    for s in sources {
        if !src.contains(&s) {
            src.push(s);
        }
    }
    let src = src.join(", ");
    let n = out.gpus.len() as f64;
    let window = format!("{:.3} s", out.window_ms / 1e3);
    let all = |get: &dyn Fn(&Gpu) -> Option<f64>| -> Option<Vec<f64>> {
        out.gpus.iter().map(get).collect()
    };
    let mut metrics = Vec::new();
    let mut put = |name: &str, v: Option<f64>, how: String| {
        if let (Some(v), Some((_, unit, hi))) = (v, METRICS.iter().find(|(m, _, _)| *m == name)) {
            metrics.push((
                name.to_string(),
                unit.to_string(),
                *hi,
                v,
                format!("{src} ({how})"),
            ));
        }
    };
    let energy = all(&|g| g.energy_j).map(|v| v.iter().sum::<f64>());
    put(
        "gpu_energy_j",
        energy,
        format!("power.draw integrated over the measured window of {window}, trapezoid between samples, summed over {n} GPU(s); nvidia-smi reads no energy counter"),
    );
    put(
        "gpu_power_mean_w",
        energy
            .filter(|_| out.window_ms > 0.0)
            .map(|e| e * 1e3 / out.window_ms),
        format!("gpu_energy_j over the window of {window}: all GPUs together"),
    );
    put(
        "gpu_power_max_w",
        all(&|g| g.power_max_w).map(|v| v.iter().fold(f64::MIN, |a, b| a.max(*b))),
        "the highest sample of one GPU in the window".into(),
    );
    put(
        "gpu_util_mean",
        all(&|g| g.util_mean).map(|v| v.iter().sum::<f64>() / n),
        "utilization.gpu, time-weighted over the window, mean over GPUs".into(),
    );
    put(
        "sm_clock_mean",
        all(&|g| g.sm_mhz_mean).map(|v| v.iter().sum::<f64>() / n),
        "clocks.sm, time-weighted over the window, mean over GPUs".into(),
    );
    put(
        "gpu_throttle_ms",
        Some(out.gpus.iter().map(|g| g.throttle_ms).fold(0.0, f64::max)),
        "the longest time one GPU had a slowing clocks_throttle_reasons bit".into(),
    );
    out.metrics = metrics;
    for (name, _, _) in METRICS {
        if !out.metrics.iter().any(|m| m.0 == *name) {
            let field = if name.contains("power") || name.contains("energy") {
                "power.draw"
            } else if name.contains("util") {
                "utilization.gpu"
            } else {
                "clocks.sm"
            };
            let none: Vec<String> = out
                .gpus
                .iter()
                .filter(|g| match field {
                    "power.draw" => g.energy_j.is_none() || g.power_max_w.is_none(),
                    "utilization.gpu" => g.util_mean.is_none(),
                    _ => g.sm_mhz_mean.is_none(),
                })
                .map(|g| format!("GPU {} on `{}` ({})", g.gpu, g.host, g.source))
                .collect();
            out.not_read.push((
                name.to_string(),
                format!(
                    "{} gave no {field} ([N/A] or [Not Supported])",
                    none.join(", ")
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` samples of two GPUs every 100 ms from 12:00:00.000 UTC: GPU 0 at 150 W and 1410 MHz,
    /// GPU 1 at 300 W and 1100 MHz with a power cap reason.
    fn two_gpus(n: usize) -> String {
        let mut t = String::from("timestamp, index, uuid, power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%], memory.used [MiB], temperature.gpu, clocks_throttle_reasons.active\n");
        for k in 0..n {
            let ms = k * 100;
            let ts = format!("2026/12/03 12:00:{:02}.{:03}", ms / 1000, ms % 1000);
            t.push_str(&format!(
                "{ts}, 0, GPU-a, 150.00, 1410, 1593, 90, 40, 1000, 50, 0x0000000000000000\n"
            ));
            t.push_str(&format!(
                "{ts}, 1, GPU-b, 300.00, 1100, 1593, 88, 41, 1000, 52, 0x0000000000000004\n"
            ));
        }
        t
    }

    fn t(ms: f64) -> f64 {
        timestamp_ms("2026/12/03 12:00:00.000").unwrap() + ms
    }

    #[test]
    fn constant_power_integrates_to_power_times_the_window_at_any_alignment() {
        let p = parse(&two_gpus(31));
        assert_eq!(p.samples.len(), 62);
        // a window of 2.345 s that starts and ends between samples
        let g = summarise("local", "f.csv", &p, t(250.0), t(2595.0), 100.0).unwrap();
        assert_eq!(g.len(), 2);
        assert!((g[0].energy_j.unwrap() - 150.0 * 2.345).abs() < 1e-9);
        assert!((g[1].energy_j.unwrap() - 300.0 * 2.345).abs() < 1e-9);
        assert!((g[1].power_mean_w.unwrap() - 300.0).abs() < 1e-9);
        assert_eq!(g[1].power_max_w, Some(300.0));
        assert!((g[0].sm_mhz_mean.unwrap() - 1410.0).abs() < 1e-9);
        // the power cap holds over the whole window on GPU 1, never on GPU 0
        assert!((g[1].throttle_ms - 2345.0).abs() < 1e-9);
        assert_eq!(g[1].reasons, vec!["sw_power_cap"]);
        assert_eq!(g[0].throttle_ms, 0.0);
        // lines 1 (header) and 2–63: the window's samples are from 200 ms to 2600 ms
        assert_eq!(g[0].source, "f.csv:6–54");
    }

    #[test]
    fn a_ramp_integrates_as_a_trapezoid_with_the_ends_held() {
        // 100 W at 0 ms, 200 W at 1000 ms; window 500–1500 ms: ∫ = 500·(150+200)/2 + 500·200
        let text = "2026/12/03 12:00:00.000, 0, GPU-a, 100, 1, 1, 1, 1, 1, 1, 0x0\n\
                    2026/12/03 12:00:01.000, 0, GPU-a, 200, 1, 1, 1, 1, 1, 1, 0x0\n\
                    2026/12/03 12:00:01.600, 0, GPU-a, 200, 1, 1, 1, 1, 1, 1, 0x0\n";
        let g = summarise("h", "f", &parse(text), t(500.0), t(1500.0), 500.0).unwrap();
        let want = 0.5 * (150.0 + 200.0) / 2.0 + 0.5 * 200.0;
        assert!((g[0].energy_j.unwrap() - want).abs() < 1e-9, "{g:?}");
    }

    #[test]
    fn samples_that_stop_early_or_start_late_or_pause_give_no_numbers_and_say_where() {
        let p = parse(&two_gpus(11)); // up to 1000 ms
        let e = summarise("local", "f.csv", &p, t(100.0), t(3000.0), 100.0).unwrap_err();
        assert!(
            e.contains("stop at 12:00:01.000 UTC, 2000 ms before"),
            "{e}"
        );
        assert!(e.contains("f.csv:22"), "{e}");
        let e = summarise("local", "f.csv", &p, t(-900.0), t(900.0), 100.0).unwrap_err();
        assert!(e.contains("900 ms after the measured window began"), "{e}");
        // a pause of 2 s inside the window
        let mut text = two_gpus(5);
        text.push_str(
            "2026/12/03 12:00:02.500, 0, GPU-a, 150, 1410, 1593, 90, 40, 1000, 50, 0x0\n",
        );
        text.push_str(
            "2026/12/03 12:00:02.500, 1, GPU-b, 150, 1410, 1593, 90, 40, 1000, 50, 0x0\n",
        );
        let e = summarise("local", "f.csv", &parse(&text), t(0.0), t(2500.0), 100.0).unwrap_err();
        assert!(e.contains("no sample for 2100 ms"), "{e}");
    }

    #[test]
    fn a_file_without_samples_says_why_and_odd_lines_are_named() {
        let e = summarise(
            "gpu0",
            "t.csv",
            &parse(&format!("{NO_SMI}\n")),
            0.0,
            1.0,
            100.0,
        )
        .unwrap_err();
        assert_eq!(e, "host `gpu0` has no nvidia-smi (t.csv:1)");
        let e = summarise(
            "h",
            "t.csv",
            &parse(
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
            ),
            0.0,
            1.0,
            100.0,
        )
        .unwrap_err();
        assert!(
            e.starts_with("t.csv holds no sample it can read (line 1:"),
            "{e}"
        );
        assert_eq!(
            summarise("h", "t.csv", &parse(""), 0.0, 1.0, 100.0).unwrap_err(),
            "the sampler wrote nothing (t.csv is empty)"
        );
        // [N/A] fields are no value; a cut line is counted, the others read
        let text =
            "2026/12/03 12:00:00.000, 0, GPU-a, [N/A], 1410, 1593, [Not Supported], 1, 1, 1, 0x0\n\
                    2026/12/03 12:00:00.100, 0, GPU-a, 15\n";
        let p = parse(text);
        assert_eq!(p.samples.len(), 1);
        assert_eq!(p.samples[0].power_w, None);
        assert_eq!(p.samples[0].util, None);
        assert_eq!(
            p.bad,
            vec!["line 2: 4 fields where the sampler asks for 11"]
        );
        let g = summarise("h", "t.csv", &p, t(0.0), t(0.0), 100.0).unwrap();
        assert_eq!(g[0].energy_j, None, "a power of [N/A] is no energy, not 0");
    }

    #[test]
    fn nvml_energy_is_the_gpus_counters_difference_in_millijoules() {
        // two GPUs, 100 ms apart: GPU 0 at 200 W (20 000 mJ a sample), GPU 1 at 400 W; the
        // sampler's program spans comment lines; an odd line and a short one are skipped
        let text = "# samples of: python3 -c 'import ctypes\n# def no(w):' on local\n\
            timestamp_ms,gpu0@0,gpu1@0\n\
            1000,5000000,9000000\n\
            1100,5020000,9040000\n\
            garbage,line,here\n\
            1150,5030000\n\
            1200,5040000,9080000\n\
            1300,5060000,9120000\n";
        // 1050 to 1250 ms: 200 ms at 200 W + 400 W = 120 J
        let (j, src) = nvml_energy(text, "n.csv", 1050.0, 1250.0, 100.0).unwrap();
        assert!((j - 120.0).abs() < 1e-9, "{j}");
        assert_eq!(
            src,
            "n.csv:4–9 (NVML total energy counters of gpu0, gpu1, read at the window's ends)"
        );
        // the sampler's own line: why, where
        let no = "expr-telemetry: no NVML energy counter: libnvidia-ml.so.1 does not load (x)\n";
        assert_eq!(
            nvml_energy(no, "n.csv", 0.0, 1.0, 100.0).unwrap_err(),
            "libnvidia-ml.so.1 does not load (x) (n.csv:1)"
        );
        assert_eq!(
            nvml_energy("", "n.csv", 0.0, 1.0, 100.0).unwrap_err(),
            "the NVML sampler wrote nothing (n.csv is empty)"
        );
        assert!(nvml_energy("1000,5\n", "n.csv", 0.0, 1.0, 100.0)
            .unwrap_err()
            .contains("not the NVML sampler's header"));
        // a stray line before the header (a shell's error on the merged stderr) is passed over
        let stray = format!("bash: /x: No such file or directory\n{text}");
        assert_eq!(
            nvml_energy(&stray, "n.csv", 1050.0, 1250.0, 100.0)
                .unwrap()
                .0,
            j
        );
        // a counter that went back (reset with its driver): no number, never a negative one
        let reset = text.replace("1200,5040000,9080000", "1200,40,9080000");
        assert!(nvml_energy(&reset, "n.csv", 1050.0, 1250.0, 100.0)
            .unwrap_err()
            .contains("n.csv:8: the counter of gpu0 went back (from 5020000 to 40)"));
        // the sampler stopped (a GPU that no longer answers): its own line is the reason
        let cut = format!(
            "{}expr-telemetry: no NVML energy counter: GPU 1: nvmlDeviceGetTotalEnergyConsumption returned 15\n",
            &text[..text.find("1200,").unwrap()]
        );
        assert_eq!(
            nvml_energy(&cut, "n.csv", 1050.0, 1400.0, 100.0).unwrap_err(),
            "no NVML energy counter: GPU 1: nvmlDeviceGetTotalEnergyConsumption returned 15 (n.csv:8)"
        );
        // the host of a samples file, its sampler's prefix taken once
        let mut clocks = Clocks::new();
        clocks.insert("nvml-a".into(), 1000.0);
        clocks.insert("a".into(), 5.0);
        assert_eq!(
            on_host_clock(&clocks, "nvml-", "nvml-nvml-a.csv", (0.0, 10.0)).0,
            (1000.0, 1010.0)
        );
        assert_eq!(
            on_host_clock(&clocks, "nvml-", "nvml-b.csv", (0.0, 10.0)),
            ((0.0, 10.0), String::new())
        );
        // a last line cut as the sampler was stopped (no newline) is left out, not read as a
        // counter that went back
        let cut_last = format!("{text}1400,5080000,91");
        assert_eq!(
            nvml_energy(&cut_last, "n.csv", 1050.0, 1250.0, 100.0)
                .unwrap()
                .0,
            j
        );
        // one sample: no difference to take, never 0 J
        assert!(nvml_energy(
            "timestamp_ms,gpu0@0\n1000,5\n",
            "n.csv",
            990.0,
            1010.0,
            100.0
        )
        .unwrap_err()
        .contains("one sample"));
    }

    #[test]
    fn rapl_energy_is_the_counters_difference_at_the_window_ends_across_a_wrap() {
        // two packages, 100 ms apart: package-0 at 50 W (5 J = 5e6 µJ a sample) wrapping at
        // 1e7 µJ; package-1 at 20 W
        let text = "# samples of: … on local\n\
            timestamp_ms,package-0@10000000,package-1@1000000000\n\
            1000,8000000,100\n\
            1100,3000000,2000100\n\
            1200,8000000,4000100\n\
            1300,3000000,6000100\n";
        // 1050 to 1250 ms: 200 ms at 50 W + 20 W = 14 J, read between samples on both ends
        let (j, src) = rapl_energy(text, "r.csv", 1050.0, 1250.0, 100.0).unwrap();
        assert!((j - 14.0).abs() < 1e-9, "{j}");
        assert_eq!(
            src,
            "r.csv:3–6 (RAPL energy counters of package-0, package-1, read at the window's ends)"
        );
        assert_eq!(
            rapl_energy(&format!("{NO_RAPL}\n"), "r.csv", 0.0, 1.0, 100.0).unwrap_err(),
            "the host has no readable RAPL counter (r.csv:1)"
        );
        // a window that ends after the last sample (within the edge): along the last two
        let (j, _) = rapl_energy(text, "r.csv", 1050.0, 1350.0, 100.0).unwrap();
        assert!((j - 21.0).abs() < 1e-9, "{j}");
        // samples that stop before the window ends: no number
        assert!(rapl_energy(text, "r.csv", 1050.0, 2000.0, 100.0)
            .unwrap_err()
            .contains("do not cover the measured window"));
    }

    #[test]
    fn the_slower_throttled_gpu_is_named_and_two_that_differ_only_in_power_are_not() {
        let p = parse(&two_gpus(31));
        let g = summarise("local", "f.csv", &p, t(250.0), t(2595.0), 100.0).unwrap();
        let odd = odd_ones(&g, 2345.0);
        assert_eq!(odd.len(), 1, "{odd:?}");
        assert_eq!((odd[0].host.as_str(), odd[0].gpu), ("local", 1));
        assert_eq!(
            odd[0].how,
            vec![
                "SM clock 1100 MHz against 1410 MHz (-22 %)",
                "throttled 2345 ms (sw_power_cap) where the others were not",
                "power 300 W against 150 W (2.00×)"
            ]
        );
        let mut same = g.clone();
        same[1].sm_mhz_mean = Some(1410.0);
        same[1].throttle_ms = 0.0;
        assert!(odd_ones(&same, 2345.0).is_empty());
        // a few ms of a slowing reason at an edge sample is no throttling
        let mut brief = same.clone();
        brief[1].throttle_ms = 20.0;
        assert!(odd_ones(&brief, 2345.0).is_empty());
        // among three, power alone is enough
        let mut three = same.clone();
        three.push(same[0].clone());
        three[2].gpu = 2;
        let odd = odd_ones(&three, 2345.0);
        assert_eq!(odd.len(), 1);
        assert_eq!(odd[0].gpu, 1);
    }
}
