//! hyperfine's export formats over the report data (`expr bench --export-json/--export-markdown`):
//! one entry per lane of a bench, its timed runs' `time_ms` in seconds.

use serde_json::{json, Value};

use crate::kind_api::data::ReportData;
use crate::util::stats;

/// One command's timed runs (a lane's ok points), in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    pub command: String,
    pub times: Vec<f64>,
    pub user: Vec<f64>,
    pub system: Vec<f64>,
    /// Each timed run's exit code (0, or one its `exit-ok=` accepted).
    pub exit_codes: Vec<i64>,
    /// The lane's runs without a time (failed, interrupted, no data): (run id, status, why).
    pub not_timed: Vec<(String, String, String)>,
}

impl Timed {
    pub fn mean(&self) -> Option<f64> {
        stats::mean(&self.times)
    }
    pub fn sd(&self) -> Option<f64> {
        stats::sd(&self.times)
    }
}

/// The lanes of `data`, in their order, with their ok points' times (a lane without any is
/// listed with none: nothing is made up for it).
pub fn timed(data: &ReportData) -> Vec<Timed> {
    let mut out: Vec<Timed> = Vec::new();
    for p in &data.points {
        let i = match out.iter().position(|t| t.command == p.lane) {
            Some(i) => i,
            None => {
                out.push(Timed {
                    command: p.lane.clone(),
                    times: Vec::new(),
                    user: Vec::new(),
                    system: Vec::new(),
                    exit_codes: Vec::new(),
                    not_timed: Vec::new(),
                });
                out.len() - 1
            }
        };
        if p.status != "ok" {
            if p.status != "skipped" {
                out[i]
                    .not_timed
                    .push((p.run_id.clone(), p.status.clone(), p.reason.clone()));
            }
            continue;
        }
        let m = |n: &str| {
            p.metrics
                .iter()
                .find(|m| m.name == n)
                .map(|m| m.value / 1e3)
        };
        if let Some(t) = m("time_ms") {
            out[i].times.push(t);
            out[i].exit_codes.push(p.accepted_exit.unwrap_or(0));
            out[i].user.extend(m("user_ms"));
            out[i].system.extend(m("sys_ms"));
        }
    }
    out
}

/// hyperfine's JSON: `{"results": [{command, mean, stddev, median, user, system, min, max,
/// times, exit_codes}]}`, in seconds; a value that cannot be computed is `null`.
pub fn json(cmds: &[Timed]) -> Value {
    let results: Vec<Value> = cmds
        .iter()
        .map(|c| {
            let min = c.times.iter().copied().reduce(f64::min);
            let max = c.times.iter().copied().reduce(f64::max);
            json!({
                "command": c.command,
                "mean": c.mean(),
                "stddev": c.sd(),
                "median": stats::median(&c.times),
                "user": stats::mean(&c.user),
                "system": stats::mean(&c.system),
                "min": min,
                "max": max,
                "times": c.times,
                // the timed runs are the ones that ended ok (exit 0, or an exit `-i` accepted);
                // the others are listed after, with why (hyperfine would have stopped at the
                // first)
                "exit_codes": c.exit_codes,
                "not_timed": c.not_timed.iter().map(|(id, status, why)| json!({
                    "run_id": id, "status": status, "reason": why,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "results": results })
}

/// A ratio to the fastest, with its error when both have a spread.
type Ratio = Option<(f64, Option<f64>)>;

/// The fastest command with a mean, and each command's ratio to it (with its error).
fn relative(cmds: &[Timed]) -> Option<(usize, Vec<Ratio>)> {
    let (fast, fm) = cmds
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.mean().map(|m| (i, m)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let fsd = cmds[fast].sd();
    let rel = cmds
        .iter()
        .map(|c| {
            let m = c.mean()?;
            stats::ratio_with_error((m, c.sd()), (fm, fsd))
        })
        .collect();
    Some((fast, rel))
}

/// hyperfine's Markdown table: mean ± σ, min, max in ms (s when the fastest mean is a second
/// or more) and each command relative to the fastest.
pub fn markdown(cmds: &[Timed]) -> String {
    let fastest = cmds
        .iter()
        .filter_map(Timed::mean)
        .reduce(f64::min)
        .unwrap_or(0.0);
    let (unit, scale) = if fastest >= 1.0 {
        ("s", 1.0)
    } else {
        ("ms", 1e3)
    };
    let rel = relative(cmds);
    let mut o = format!(
        "| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative |\n|:---|---:|---:|---:|---:|\n"
    );
    let n = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{:.1}", v * scale));
    for (i, c) in cmds.iter().enumerate() {
        let mean = match (c.mean(), c.sd()) {
            (Some(m), Some(s)) => format!("{:.1} ± {:.1}", m * scale, s * scale),
            (m, _) => n(m),
        };
        let r = match rel.as_ref().and_then(|(f, r)| r[i].map(|x| (*f, x))) {
            Some((f, _)) if f == i => "1.00".to_string(),
            Some((_, (r, Some(e)))) => format!("{r:.2} ± {e:.2}"),
            Some((_, (r, None))) => format!("{r:.2}"),
            None => "—".to_string(),
        };
        // the command as timed, in a code span long enough for its backticks
        o.push_str(&format!(
            "| {} | {mean} | {} | {} | {r} |\n",
            crate::util::markup::md_span(&c.command, true),
            n(c.times.iter().copied().reduce(f64::min)),
            n(c.times.iter().copied().reduce(f64::max)),
        ));
    }
    o
}

/// hyperfine's lines for each command: its mean ± sd (user and system time), its range and
/// how many runs; `—` and why where it has no time.
fn times_text(cmds: &[Timed]) -> String {
    let ms = |v: f64| crate::util::fmt::km(v * 1e3);
    let mut o = String::new();
    for (i, c) in cmds.iter().enumerate() {
        let name = crate::util::shell::comment(&c.command);
        o.push_str(&format!("Benchmark {}: {name}\n", i + 1));
        let cpu =
            |v: &[f64]| stats::mean(v).map_or_else(|| "—".to_string(), |m| format!("{} ms", ms(m)));
        match c.mean() {
            Some(m) => {
                let sd = c
                    .sd()
                    .map_or_else(|| "— (n=1)".to_string(), |s| format!("{} ms", ms(s)));
                o.push_str(&format!(
                    "  Time (mean ± σ):   {} ms ± {sd}    [User: {}, System: {}]\n",
                    ms(m),
                    cpu(&c.user),
                    cpu(&c.system)
                ));
                let (lo, hi) = c
                    .times
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
                        (a.min(*t), b.max(*t))
                    });
                o.push_str(&format!(
                    "  Range (min … max): {} ms … {} ms    {}\n",
                    ms(lo),
                    ms(hi),
                    crate::util::units::count(c.times.len(), "run")
                ));
            }
            None => o.push_str("  Time: — (no timed run)\n"),
        }
        // as hyperfine warns under `-i`: these times are of runs that failed
        let nonzero: Vec<i64> = c.exit_codes.iter().copied().filter(|x| *x != 0).collect();
        if !nonzero.is_empty() {
            let mut codes = nonzero.clone();
            codes.sort_unstable();
            codes.dedup();
            let codes: Vec<String> = codes.iter().map(|x| x.to_string()).collect();
            o.push_str(&format!(
                "  Warning: Ignoring non-zero exit code: {} of {} timed runs exited {}\n",
                nonzero.len(),
                c.times.len(),
                codes.join(", ")
            ));
        }
        if !c.not_timed.is_empty() {
            o.push_str(&untimed_line(c));
        }
        o.push('\n');
    }
    o
}

/// The runs of a command without a time, by why (`2 failed, 1 timeout`); where others were
/// timed, the figures are said to be of those only.
fn untimed_line(c: &Timed) -> String {
    let mut by: Vec<(&str, usize)> = Vec::new();
    for (_, status, _) in &c.not_timed {
        let s = if status == "no-data" {
            "no data"
        } else {
            status.as_str()
        };
        match by.iter_mut().find(|(x, _)| *x == s) {
            Some((_, n)) => *n += 1,
            None => by.push((s, 1)),
        }
    }
    let why: Vec<String> = by.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let why = why.join(", ");
    if c.times.is_empty() {
        format!(
            "  {} without a time ({why}; see the report)\n",
            crate::util::units::count(c.not_timed.len(), "run")
        )
    } else {
        format!(
            "  {} of {} runs without a time ({why}; see the report): the figures above are of the other {}\n",
            c.not_timed.len(),
            c.not_timed.len() + c.times.len(),
            c.times.len()
        )
    }
}

/// After a command's name in the summary's ranking, where some of its runs were not timed: how
/// many were (its mean is of those only).
fn timed_of(c: &Timed) -> String {
    if c.not_timed.is_empty() || c.times.is_empty() {
        String::new()
    } else {
        format!(
            " ({} of {} runs timed)",
            c.times.len(),
            c.times.len() + c.not_timed.len()
        )
    }
}

/// hyperfine's summary: which command ran fastest and how many times faster than each other.
pub fn summary(cmds: &[Timed]) -> Option<String> {
    let mut o = times_text(cmds);
    let Some((fast, rel)) = relative(cmds).filter(|_| cmds.len() >= 2) else {
        return (!o.is_empty()).then_some(o);
    };
    // a name is one line on the terminal: a newline in it written as `\n`
    let name = |c: &Timed| crate::util::shell::comment(&c.command);
    o.push_str(&format!(
        "Summary\n  `{}`{} ran\n",
        name(&cmds[fast]),
        timed_of(&cmds[fast])
    ));
    for (i, c) in cmds.iter().enumerate() {
        if i == fast {
            continue;
        }
        match rel[i] {
            Some((r, Some(e))) => o.push_str(&format!(
                "    {r:.2} ± {e:.2} times faster than `{}`{}\n",
                name(c),
                timed_of(c)
            )),
            Some((r, None)) => o.push_str(&format!(
                "    {r:.2} times faster than `{}`{}\n",
                name(c),
                timed_of(c)
            )),
            None if c.mean().is_none() => o.push_str(&format!("    (no time for `{}`)\n", name(c))),
            // a mean of 0: each run was below the shell's measured start-up time
            None => o.push_str(&format!(
                "    (no ratio for `{}`: the fastest mean is {} ms)\n",
                name(c),
                cmds[fast].mean().unwrap_or(f64::NAN) * 1000.0
            )),
        }
    }
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(c: &str, times: &[f64]) -> Timed {
        Timed {
            command: c.into(),
            times: times.to_vec(),
            user: vec![0.001; times.len()],
            system: vec![],
            exit_codes: vec![0; times.len()],
            not_timed: vec![],
        }
    }

    /// Hand-computed: a = 0.1, 0.102, 0.104 s (mean 0.102, sd 0.002); b = 0.2, 0.204, 0.208
    /// (mean 0.204, sd 0.004); b/a = 2.00, error 2·√((0.004/0.204)² + (0.002/0.102)²) =
    /// 2·√(0.000384468 + 0.000384468) = 0.0554…
    #[test]
    fn hyperfine_forms_from_hand_computed_times() {
        let cmds = [t("a", &[0.1, 0.102, 0.104]), t("b", &[0.2, 0.204, 0.208])];
        let md = markdown(&cmds);
        assert_eq!(
            md,
            "| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |\n|:---|---:|---:|---:|---:|\n\
             | `a` | 102.0 ± 2.0 | 100.0 | 104.0 | 1.00 |\n\
             | `b` | 204.0 ± 4.0 | 200.0 | 208.0 | 2.00 ± 0.06 |\n"
        );
        let j = json(&cmds);
        let a = &j["results"][0];
        assert!((a["mean"].as_f64().unwrap() - 0.102).abs() < 1e-12);
        assert!((a["stddev"].as_f64().unwrap() - 0.002).abs() < 1e-12);
        assert_eq!(a["median"], 0.102);
        assert_eq!(a["min"], 0.1);
        assert_eq!(a["user"], 0.001);
        assert_eq!(a["system"], Value::Null);
        assert_eq!(a["exit_codes"], json!([0, 0, 0]));
        // each command's mean ± sd, user and system time, range and runs (hyperfine's lines),
        // then the summary
        assert_eq!(
            summary(&cmds).unwrap(),
            "Benchmark 1: a\n  Time (mean ± σ):   102.00 ms ± 2.00 ms    [User: 1.00 ms, System: —]\n  \
             Range (min … max): 100.00 ms … 104.00 ms    3 runs\n\n\
             Benchmark 2: b\n  Time (mean ± σ):   204.00 ms ± 4.00 ms    [User: 1.00 ms, System: —]\n  \
             Range (min … max): 200.00 ms … 208.00 ms    3 runs\n\n\
             Summary\n  `a` ran\n    2.00 ± 0.06 times faster than `b`\n"
        );
        // one run: no sd, said; no timed run: no numbers made up
        let one = [t("a", &[0.1]), t("x", &[])];
        assert_eq!(
            summary(&one).unwrap(),
            "Benchmark 1: a\n  Time (mean ± σ):   100.00 ms ± — (n=1)    [User: 1.00 ms, System: —]\n  \
             Range (min … max): 100.00 ms … 100.00 ms    1 run\n\n\
             Benchmark 2: x\n  Time: — (no timed run)\n\n\
             Summary\n  `a` ran\n    (no time for `x`)\n"
        );
        // a command with no timed run: no numbers made up
        let none = [t("a", &[0.1]), t("x", &[])];
        let md = markdown(&none);
        assert!(md.contains("| `x` | — | — | — | — |"), "{md}");
        assert!(
            md.contains("| `a` | 100.0 | 100.0 | 100.0 | 1.00 |"),
            "{md}"
        );
        assert_eq!(json(&none)["results"][1]["mean"], Value::Null);
        // a run that failed is listed with why, not left out unsaid
        let mut f = t("f", &[]);
        f.not_timed
            .push(("f_r0".into(), "failed".into(), "exit 1".into()));
        let j = json(&[f]);
        assert_eq!(j["results"][0]["exit_codes"], json!([]));
        assert_eq!(
            j["results"][0]["not_timed"],
            json!([{"run_id": "f_r0", "status": "failed", "reason": "exit 1"}])
        );
        // the fastest mean 0 (below the shell's start-up time): no ratio, and why, not "no time"
        let zero = [t("a", &[0.0, 0.0]), t("b", &[0.01, 0.012])];
        assert!(summary(&zero)
            .unwrap()
            .ends_with("Summary\n  `a` ran\n    (no ratio for `b`: the fastest mean is 0 ms)\n"));
        // a name with a newline, a pipe and a backtick stays one table row and one summary line
        let odd = [t("a\nb|`c`", &[0.1]), t("d", &[0.2])];
        let md = markdown(&odd);
        assert!(md.contains("| `` a\\nb\\|`c` `` | 100.0 |"), "{md}");
        assert_eq!(md.lines().count(), 4, "{md}");
        let said = summary(&odd).unwrap();
        assert!(
            said.starts_with("Benchmark 1: a\\nb|`c`\n")
                && said.ends_with("Summary\n  `a\\nb|`c`` ran\n    2.00 times faster than `d`\n"),
            "{said}"
        );
    }

    /// A command some of whose runs failed: its figures are said to be of the runs timed, in
    /// its block and in the ranking; one with no timed run says why by status.
    #[test]
    fn a_command_with_failed_runs_says_its_figures_are_of_the_others() {
        let mut a = t("a", &[0.1, 0.3]);
        for (id, st) in [("a_r1", "failed"), ("a_r3", "timeout"), ("a_r4", "failed")] {
            a.not_timed.push((id.into(), st.into(), String::new()));
        }
        let mut f = t("f", &[]);
        f.not_timed
            .push(("f_r0".into(), "no-data".into(), String::new()));
        let said = summary(&[a, t("b", &[0.4, 0.4]), f]).unwrap();
        assert!(
            said.contains("  Range (min … max): 100.00 ms … 300.00 ms    2 runs\n  3 of 5 runs without a time (2 failed, 1 timeout; see the report): the figures above are of the other 2\n"),
            "{said}"
        );
        assert!(
            said.contains("Benchmark 3: f\n  Time: — (no timed run)\n  1 run without a time (1 no data; see the report)\n"),
            "{said}"
        );
        // b/a = 0.4/0.2 = 2.00
        assert!(
            said.contains("Summary\n  `a` (2 of 5 runs timed) ran\n    2.00 ± "),
            "{said}"
        );
    }
}
