//! ep-bench's collector: MSCCL++ ep_bench_ll / NCCL-EP ep_bench summary blocks from the logs.
//! Facts: shared/reference/kernels.md.

use std::sync::OnceLock;

use crate::results::collect::PointDir;

use regex::Regex;
use serde::Serialize;

/// avg / min / max of one operation, with throughput when printed.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Timing {
    pub avg_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub gbps_avg: Option<f64>,
    pub gbps_min: Option<f64>,
    pub gbps_max: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EpSummary {
    /// "low-latency" or "high-throughput".
    pub mode: String,
    pub ranks: u32,
    pub dispatch_label: String,
    pub dispatch: Timing,
    pub combine: Timing,
    pub total: Timing,
    pub kernel_dispatch: Option<Timing>,
    pub kernel_combine: Option<Timing>,
    pub dispatch_mb: Option<f64>,
    pub combine_mb: Option<f64>,
    /// `rows=` (newer ep_bench_ll) or `selections=` (ep_bench, older ep_bench_ll).
    pub rows: Option<u64>,
    /// What the kernel-only figures are, by the form the tool printed them in.
    pub kernel_form: KernelForm,
    /// The log the block was read from (set by `collect`).
    pub source: String,
}

/// The tools print different kernel-only figures under alike labels.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum KernelForm {
    /// No kernel-only section (or only its `NOTE:` line).
    #[default]
    None,
    /// MSCCL++ (ep_bench_ll.py, mscclpp_ep_bench): `min=… (representative) [avg=…, max=…`: the
    /// min is the figure to read, avg and max are inflated by the profiler's rank skew, and
    /// the GB/s is `throughput @min` (kept as `gbps_min`).
    MinRepresentative,
    /// NCCL-EP ep_bench LL: `avg=…, min=…, max=…` are true averages over the iterations, and
    /// the GB/s is `throughput: avg=…`.
    Averages,
    /// NCCL-EP ep_bench HT: one `kernel=… us` figure per operation.
    KernelTotal,
}

fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).expect("static regex"))
}

const F: &str = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)";

/// A capture of `F`, by the collectors' one number rule (`results::collect::number`): a figure
/// that overflows (`1e999`) or underflows to 0 (`1e-400`, which `parse` read as 0) is NaN here,
/// and the summary block with it is refused ("not a number"), never a zero; a label whose value
/// does not match `F` is an error with its line before this is called.
fn num(s: &str) -> f64 {
    crate::results::collect::number(s).unwrap_or(f64::NAN)
}

/// The regexes of an ep summary block, each compiled once.
struct EpPatterns {
    head: &'static Regex,
    op: &'static Regex,
    tput: &'static Regex,
    kmin: &'static Regex,
    kavg: &'static Regex,
    ktput: &'static Regex,
    bytes: &'static Regex,
    ht_op: &'static Regex,
    ht_k: &'static Regex,
}

fn ep_patterns() -> EpPatterns {
    static HEAD: OnceLock<Regex> = OnceLock::new();
    static OP: OnceLock<Regex> = OnceLock::new();
    static TPUT: OnceLock<Regex> = OnceLock::new();
    static KMIN: OnceLock<Regex> = OnceLock::new();
    static KAVG: OnceLock<Regex> = OnceLock::new();
    static KTPUT: OnceLock<Regex> = OnceLock::new();
    static BYTES: OnceLock<Regex> = OnceLock::new();
    static HT_OP: OnceLock<Regex> = OnceLock::new();
    static HT_K: OnceLock<Regex> = OnceLock::new();
    let head = re(
        &HEAD,
        r"^=== Summary \((Low Latency|High Throughput[^,]*), across (\d+) ranks\) ===",
    );
    let op = re(
        &OP,
        &format!(
            r"^(Dispatch|Combine) \(([^)]+)\):\s+avg={F} us, min={F} us, max={F} us|^Total \(D\+C\):\s+avg={F} us, min={F} us, max={F} us"
        ),
    );
    let tput = re(
        &TPUT,
        &format!(
            r"^\s+throughput: avg={F} GB/s(?:, min={F} GB/s(?: \(rank \d+\))?, max={F} GB/s(?: \(rank \d+\))?)?"
        ),
    );
    let kmin = re(
        &KMIN,
        &format!(r"^(Dispatch|Combine):\s+min={F} us \(representative\)\s+\[avg={F}, max={F}"),
    );
    let kavg = re(
        &KAVG,
        &format!(r"^(Dispatch|Combine):\s+avg={F} us, min={F} us, max={F} us"),
    );
    let ktput = re(
        &KTPUT,
        &format!(r"^\s+throughput(?: @min)?: (?:avg=)?{F} GB/s"),
    );
    let bytes = re(
        &BYTES,
        &format!(
            r"^Byte counts: dispatch={F} MB \((\w+)\), combine={F} MB \(BF16\), (?:selections|rows)=(\d+)"
        ),
    );
    let ht_op = re(
        &HT_OP,
        &format!(r"^(Dispatch|Combine):\s+total={F} us \(min={F}, max={F}\)"),
    );
    let ht_k = re(
        &HT_K,
        &format!(r"^(Dispatch|Combine|Total \(D\+C\)):\s+kernel={F} us"),
    );
    EpPatterns {
        head,
        op,
        tput,
        kmin,
        kavg,
        ktput,
        bytes,
        ht_op,
        ht_k,
    }
}

/// A line that names a figure but does not parse is an error, never a zero.
fn unreadable(n: usize, t: &str) -> String {
    format!(
        "line {}: `{}` names a figure but does not parse (expected `avg=… us, min=… us, max=… us` or `throughput: avg=… GB/s`)",
        n + 1,
        t.trim()
    )
}

/// A line that carries no summary ([cfg], [warn], [DEBUG], `Pacing:`, `Rank N:`).
fn is_noise(t: &str) -> bool {
    t.starts_with("[cfg]")
        || t.starts_with("[warn]")
        || t.starts_with("[DEBUG]")
        || t.starts_with("Pacing:")
        || t.starts_with("Rank ")
}

/// A kernel-only line in mscclpp's `min=.. (representative) [avg=.., max=..` or ep_bench's
/// `avg=, min=, max=` form: its form, operation and timing.
fn kernel_timing(p: &EpPatterns, t: &str) -> Option<(KernelForm, String, Timing)> {
    match (p.kmin.captures(t), p.kavg.captures(t)) {
        (Some(c), _) => Some((
            KernelForm::MinRepresentative,
            c[1].to_string(),
            Timing {
                min_us: num(&c[2]),
                avg_us: num(&c[3]),
                max_us: num(&c[4]),
                ..Timing::default()
            },
        )),
        (None, Some(c)) => Some((
            KernelForm::Averages,
            c[1].to_string(),
            Timing {
                avg_us: num(&c[2]),
                min_us: num(&c[3]),
                max_us: num(&c[4]),
                ..Timing::default()
            },
        )),
        _ => None,
    }
}

/// What `parse_ep` knows so far as it reads the log line by line.
#[derive(Default)]
struct EpParse {
    s: EpSummary,
    seen_dispatch: bool,
    seen_combine: bool,
    /// `Total (D+C)` read (the headline, `total_avg_us`).
    seen_total: bool,
    found: bool,
    section: &'static str,
    /// which Timing the next throughput line belongs to
    last: Option<&'static str>,
}

impl EpParse {
    /// A line of the host-timed section.
    fn host_line(&mut self, p: &EpPatterns, n: usize, t: &str) -> Result<(), String> {
        let s = &mut self.s;
        if let Some(c) = p.op.captures(t) {
            let timing = |a: usize| Timing {
                avg_us: num(&c[a]),
                min_us: num(&c[a + 1]),
                max_us: num(&c[a + 2]),
                ..Timing::default()
            };
            match c.get(1).map(|m| m.as_str()) {
                Some("Dispatch") => {
                    s.dispatch_label = c[2].to_string();
                    s.dispatch = timing(3);
                    self.seen_dispatch = true;
                    self.last = Some("dispatch");
                }
                Some(_) => {
                    s.combine = timing(3);
                    self.seen_combine = true;
                    self.last = Some("combine");
                }
                None => {
                    s.total = timing(6);
                    self.seen_total = true;
                    self.last = Some("total");
                }
            }
            return Ok(());
        }
        if let Some(c) = p.ht_op.captures(t) {
            let timing = Timing {
                avg_us: num(&c[2]),
                min_us: num(&c[3]),
                max_us: num(&c[4]),
                ..Timing::default()
            };
            if &c[1] == "Dispatch" {
                s.dispatch = timing;
                self.seen_dispatch = true;
            } else {
                s.combine = timing;
                self.seen_combine = true;
            }
            self.last = None;
            return Ok(());
        }
        if let Some(c) = p.tput.captures(t) {
            let target = match self.last {
                Some("dispatch") => &mut s.dispatch,
                Some("combine") => &mut s.combine,
                Some("total") => &mut s.total,
                _ => return Ok(()),
            };
            target.gbps_avg = Some(num(&c[1]));
            target.gbps_min = c.get(2).map(|m| num(m.as_str()));
            target.gbps_max = c.get(3).map(|m| num(m.as_str()));
            return Ok(());
        }
        let label = t.trim_start();
        if (label.starts_with("Dispatch") || label.starts_with("Combine")) && label.contains("us")
            || label.starts_with("throughput")
            || (label.starts_with("Total (D+C)") && s.mode != "high-throughput")
        {
            return Err(unreadable(n, t));
        }
        if t.starts_with("Total (D+C):") && s.mode == "high-throughput" {
            static TOTAL: OnceLock<Regex> = OnceLock::new();
            let total = TOTAL.get_or_init(|| {
                Regex::new(&format!(r"avg={F} us, min={F} us, max={F} us")).expect("static regex")
            });
            let Some(c) = total
                .captures(t)
                .map(|c| [num(&c[1]), num(&c[2]), num(&c[3])])
            else {
                return Err(unreadable(n, t));
            };
            s.total = Timing {
                avg_us: c[0],
                min_us: c[1],
                max_us: c[2],
                ..Timing::default()
            };
            self.seen_total = true;
        }
        Ok(())
    }

    /// A line of the kernel-only section.
    fn kernel_line(&mut self, p: &EpPatterns, n: usize, t: &str) -> Result<(), String> {
        let s = &mut self.s;
        if let Some((form, op, timing)) = kernel_timing(p, t) {
            s.kernel_form = form;
            if op == "Dispatch" {
                self.last = Some("kd");
                s.kernel_dispatch = Some(timing);
            } else {
                self.last = Some("kc");
                s.kernel_combine = Some(timing);
            }
            return Ok(());
        }
        if let Some(c) = p.ht_k.captures(t) {
            let k = Timing {
                avg_us: num(&c[2]),
                min_us: num(&c[2]),
                max_us: num(&c[2]),
                ..Timing::default()
            };
            s.kernel_form = KernelForm::KernelTotal;
            match &c[1] {
                "Dispatch" => s.kernel_dispatch = Some(k),
                "Combine" => s.kernel_combine = Some(k),
                _ => {}
            }
            return Ok(());
        }
        if let Some(c) = p.ktput.captures(t) {
            let target = match self.last {
                Some("kd") => s.kernel_dispatch.as_mut(),
                Some("kc") => s.kernel_combine.as_mut(),
                _ => None,
            };
            if let Some(k) = target {
                // MSCCL++'s `throughput @min` is the GB/s at the min time, not an average
                if t.contains("@min") {
                    k.gbps_min = Some(num(&c[1]));
                } else {
                    k.gbps_avg = Some(num(&c[1]));
                }
            }
            return Ok(());
        }
        let label = t.trim_start();
        if (label.starts_with("Dispatch:") || label.starts_with("Combine:")) && label.contains("us")
        {
            return Err(unreadable(n, t));
        }
        Ok(())
    }

    /// The summary once every line is read: a block with both operations and only finite figures.
    fn finish(self) -> Result<EpSummary, String> {
        let s = self.s;
        if !self.found {
            return Err("no `=== Summary (…, across N ranks) ===` block".into());
        }
        if !self.seen_dispatch || !self.seen_combine {
            return Err(format!(
                "the summary block has no {} timing",
                if self.seen_dispatch {
                    "Combine"
                } else {
                    "Dispatch"
                }
            ));
        }
        // the headline: a summary without it has no total, not a total of 0
        if !self.seen_total {
            return Err(
                "the summary block has no `Total (D+C)` timing (the headline, total_avg_us)".into(),
            );
        }
        let all = [
            Some(&s.dispatch),
            Some(&s.combine),
            Some(&s.total),
            s.kernel_dispatch.as_ref(),
            s.kernel_combine.as_ref(),
        ];
        for t in all.into_iter().flatten() {
            let figures = [
                Some(t.avg_us),
                Some(t.min_us),
                Some(t.max_us),
                t.gbps_avg,
                t.gbps_min,
                t.gbps_max,
            ];
            if figures.into_iter().flatten().any(|x| !x.is_finite()) {
                return Err("a timing of the summary block is not a number".into());
            }
        }
        Ok(s)
    }
}

/// Parse the summary block of ep_bench_ll.py or ep_bench (LL or HT). Lines that carry no summary
/// ([cfg], [warn], [DEBUG], `Rank N:`, `Pacing:`) are skipped.
pub fn parse_ep(text: &str) -> Result<EpSummary, String> {
    let p = ep_patterns();
    let mut st = EpParse::default();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_end();
        if is_noise(t) {
            continue;
        }
        if let Some(c) = p.head.captures(t) {
            st.found = true;
            st.s.mode = if c[1].starts_with("Low") {
                "low-latency".into()
            } else {
                "high-throughput".into()
            };
            st.s.ranks = c[2].parse().map_err(|_| unreadable(n, t))?;
            st.section = "host";
            continue;
        }
        if !st.found {
            continue;
        }
        if t.starts_with("--- Kernel-only") || t.starts_with("--- BW based on kernel time") {
            st.section = "kernel";
            continue;
        }
        if t.starts_with("=== ") {
            break;
        }
        if let Some(c) = p.bytes.captures(t) {
            st.s.dispatch_mb = Some(num(&c[1]));
            st.s.combine_mb = Some(num(&c[3]));
            st.s.rows = c[4].parse().ok();
            continue;
        }
        if st.section == "host" {
            st.host_line(&p, n, t)?;
        } else if st.section == "kernel" {
            st.kernel_line(&p, n, t)?;
        }
    }
    st.finish()
}

/// The summary of the first of the point's `ep-…` logs that has one.
pub fn collect(at: &PointDir) -> Result<EpSummary, String> {
    let logs = at.logs_for("ep-");
    let mut last = format!(
        "no ep-bench log for {} in {}",
        at.run_id,
        at.dir.join("logs").display()
    );
    for l in &logs {
        let text = crate::results::collect::read_lossy(l)?;
        match parse_ep(&text) {
            Ok(mut s) => {
                s.source = l.display().to_string();
                return Ok(s);
            }
            Err(e) => last = format!("{}: {e}", l.display()),
        }
    }
    Err(last)
}
