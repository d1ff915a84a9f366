//! nccl-tests output: the stdout table, read by its header row (so `-I 1`'s per-iteration
//! columns, `-C 1`'s `cputime`, `-S 1`'s timestamp and hypercube's empty redop all land in the
//! right place), its footer (`# Avg bus bandwidth`, `# Out of bounds values`), and `-J` JSON.

use serde::Serialize;

/// One half of a row: out-of-place or in-place.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NcclHalf {
    /// µs (`time`, or `cputime` with `-C 1`).
    pub time_us: f64,
    pub algbw: f64,
    pub busbw: f64,
    /// `#wrong`; `None` for `N/A` (`-c 0`).
    pub wrong: Option<f64>,
}

/// One row of an nccl-tests table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NcclRow {
    pub size: u64,
    pub count: u64,
    /// `type`: float, bfloat16, … (several with `-d all`).
    pub dtype: String,
    /// `redop`: sum, prod, …, `none` for ops without one (several with `-o all`).
    pub redop: String,
    /// `root`: -1 for ops without a root.
    pub root: i64,
    pub out_of_place: NcclHalf,
    pub in_place: NcclHalf,
    /// 1-based line of the row in its file (0 for JSON).
    pub line: usize,
}

/// What one nccl-tests output says.
/// A point's nccl-tests measure: the report and the files it was read from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NcclMeasure {
    pub report: NcclReport,
    pub files: Vec<String>,
}

impl NcclMeasure {
    pub fn measure(self) -> crate::kind_api::data::Measure {
        let headline = self.report.headline().unwrap_or(f64::NAN);
        crate::kind_api::data::Measure::Own(crate::kind_api::data::Own::new("nccl", self, headline))
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct NcclReport {
    pub rows: Vec<NcclRow>,
    /// `# Avg bus bandwidth : X` (the mean busbw of both halves of every row), GB/s.
    pub avg_busbw: Option<f64>,
    /// Its line (0 for JSON).
    pub avg_busbw_line: usize,
    /// `# Out of bounds values : N OK|FAILED`.
    pub out_of_bounds: Option<u64>,
}

impl NcclReport {
    /// What the tool's own check found wrong (`#wrong` of a row, the out-of-bounds count of the
    /// footer), said with its place: its numbers are then no measure (`-c 0`: not checked).
    pub fn found_wrong(&self) -> Option<String> {
        let at = |line: usize| {
            if line > 0 {
                format!(":{line}")
            } else {
                String::new()
            }
        };
        for r in &self.rows {
            for (half, h) in [("out-of-place", &r.out_of_place), ("in-place", &r.in_place)] {
                if let Some(w) = h.wrong.filter(|w| *w != 0.0) {
                    return Some(format!(
                        "{}: nccl-tests counted {w} wrong values ({half} #wrong) at size {}: its results fail its own check",
                        at(r.line),
                        r.size
                    ));
                }
            }
        }
        match self.out_of_bounds {
            Some(n) if n > 0 => Some(format!(
                ": nccl-tests found {n} out-of-bounds values (`# Out of bounds values`): its results fail its own check"
            )),
            _ => None,
        }
    }

    /// The figure people quote: the tool's own average, or (from older versions without the
    /// footer) the same mean computed from the rows.
    pub fn headline(&self) -> Option<f64> {
        self.avg_busbw.or_else(|| {
            let v: Vec<f64> = self
                .rows
                .iter()
                .flat_map(|r| [r.out_of_place.busbw, r.in_place.busbw])
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
    }
}

/// nccl-tests stdout (tables and footer) or `-J` JSON.
pub fn parse_nccl_tests(text: &str) -> Result<NcclReport, String> {
    if text.trim_start().starts_with('{') {
        return parse_json(text);
    }
    let mut report = NcclReport::default();
    // column names after the first five, by half; `timestamp` (2 tokens in a row) last
    let mut names: Option<(Vec<String>, bool)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim();
        if let Some(h) = t.strip_prefix('#') {
            let tok: Vec<&str> = h.split_whitespace().collect();
            if tok.len() >= 2 && tok[0] == "size" && tok[1] == "count" {
                if tok.get(2..5) != Some(&["type", "redop", "root"][..]) {
                    return Err(format!(
                        "line {n}: a header row without `type redop root` (nccl-tests older than 2.13 is not read)"
                    ));
                }
                let stamp = tok.last() == Some(&"timestamp");
                let end = tok.len() - usize::from(stamp);
                names = Some((tok[5..end].iter().map(|s| s.to_string()).collect(), stamp));
            } else if let Some(rest) = h.trim().strip_prefix("Avg bus bandwidth") {
                let v = rest
                    .trim_start()
                    .trim_start_matches(':')
                    .split_whitespace()
                    .next();
                let v = v
                    .and_then(|v| crate::results::collect::number(v).ok())
                    .ok_or_else(|| format!("line {n}: `{t}` does not parse"))?;
                // two runs in one log (`all_reduce_perf … && all_gather_perf …`): which one
                // the headline is would be a guess
                if report.avg_busbw.is_some() {
                    return Err(format!(
                        "line {n}: a second `# Avg bus bandwidth` (the first is at line {}): the log holds two nccl-tests runs; give each test a step of its own",
                        report.avg_busbw_line
                    ));
                }
                report.avg_busbw = Some(v);
                report.avg_busbw_line = n;
            } else if let Some(rest) = h.trim().strip_prefix("Out of bounds values") {
                report.out_of_bounds = rest
                    .trim_start()
                    .trim_start_matches(':')
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse().ok());
            }
            continue;
        }
        let tok: Vec<&str> = t.split_whitespace().collect();
        // rows start with two integers; anything else on stdout (NCCL INFO, warnings) is not a row
        if tok.len() < 2 || tok[0].parse::<u64>().is_err() || tok[1].parse::<u64>().is_err() {
            // …but a line of the table's shape whose size or count is garbled is a row that
            // does not read: skipped, the headline would be the mean of the others
            let digit = |w: &str| w.starts_with(|c: char| c.is_ascii_digit());
            if let Some((cols, _)) = &names {
                if tok.len() >= cols.len() + 4
                    && digit(tok[0])
                    && tok.get(1).is_some_and(|w| digit(w))
                {
                    return Err(format!(
                        "line {n}: a result row whose size or count is not a whole number ({}, {})",
                        crate::results::collect::shown(tok[0]),
                        crate::results::collect::shown(tok[1])
                    ));
                }
            }
            continue;
        }
        let Some((cols, stamp)) = &names else {
            return Err(format!("line {n}: a result row before the header row"));
        };
        let r = row(n, &tok, cols, *stamp)?;
        // one row a size, type, op and root: a second is another run's (its metric would
        // have two values)
        if let Some(first) = report
            .rows
            .iter()
            .find(|x| (x.size, &x.dtype, &x.redop, x.root) == (r.size, &r.dtype, &r.redop, r.root))
        {
            return Err(format!(
                "line {n}: size {} {} {} root {} again (first at line {}): the log holds two nccl-tests runs; give each test a step of its own",
                r.size, r.dtype, r.redop, r.root, first.line
            ));
        }
        report.rows.push(r);
    }
    if report.rows.is_empty() {
        return Err(NO_ROWS.into());
    }
    Ok(report)
}

/// What a text with no nccl-tests table says.
pub const NO_ROWS: &str = "no nccl-tests result rows";

fn row(n: usize, tok: &[&str], cols: &[String], stamp: bool) -> Result<NcclRow, String> {
    let tok = &tok[..tok.len() - if stamp { 2.min(tok.len()) } else { 0 }];
    if tok.len() < cols.len() + 4 {
        return Err(format!(
            "line {n}: {} fields, the header names {}",
            tok.len(),
            cols.len() + 5
        ));
    }
    // the named columns are the last ones; before them size, count, type, [redop,] root
    let (left, right) = tok.split_at(tok.len() - cols.len());
    let (redop, root) = match left.len() {
        5 => (left[3].to_string(), left[4]),
        4 => (String::new(), left[3]), // hypercube prints an empty redop
        k => {
            return Err(format!(
                "line {n}: {k} fields before the timings, expected 5"
            ))
        }
    };
    let bad = |what: &str, v: &str| format!("line {n}: {what} `{v}` is not a number");
    let mut halves: [Vec<(&str, &str)>; 2] = [Vec::new(), Vec::new()];
    let mut half = 0;
    let mut seen = std::collections::BTreeSet::new();
    for (c, v) in cols.iter().zip(right) {
        if !seen.insert(c.as_str()) {
            half = 1;
            seen.clear();
            seen.insert(c.as_str());
        }
        halves[half].push((c.as_str(), v));
    }
    let read = |h: &[(&str, &str)], which: &str| -> Result<NcclHalf, String> {
        let get = |names: &[&str]| h.iter().find(|(c, _)| names.contains(c)).map(|(_, v)| *v);
        let num = |names: &[&str], what: &str| -> Result<f64, String> {
            let v = get(names).ok_or_else(|| format!("line {n}: no {which} `{what}` column"))?;
            let x = crate::results::collect::number(v)
                .map_err(|e| format!("line {n}: {which} {what}: {e}"))?;
            // a time or a bandwidth below zero is no measurement
            if x < 0.0 {
                return Err(format!("line {n}: {which} {what} is {v}: never below zero"));
            }
            Ok(x)
        };
        Ok(NcclHalf {
            time_us: num(&["time", "cputime"], "time")?,
            algbw: num(&["algbw"], "algbw")?,
            busbw: num(&["busbw"], "busbw")?,
            wrong: match get(&["#wrong", "error"]) {
                None | Some("N/A") => None,
                Some(v) => Some(v.parse().map_err(|_| bad(&format!("{which} #wrong"), v))?),
            },
        })
    };
    Ok(NcclRow {
        size: left[0].parse().map_err(|_| bad("size", left[0]))?,
        count: left[1].parse().map_err(|_| bad("count", left[1]))?,
        dtype: left[2].to_string(),
        redop,
        root: root.parse().map_err(|_| bad("root", root))?,
        out_of_place: read(&halves[0], "out-of-place")?,
        in_place: read(&halves[1], "in-place")?,
        line: n,
    })
}

fn parse_json(text: &str) -> Result<NcclReport, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("nccl-tests JSON: {e}"))?;
    let results = v["results"]
        .as_array()
        .ok_or("nccl-tests JSON has no `results`")?;
    // numbers may come as strings ("nan"), booleans as "true"/"false", root as "    -1"
    let num = |x: &serde_json::Value| -> Option<f64> {
        x.as_f64()
            .or_else(|| {
                x.as_str()
                    .and_then(|s| crate::results::collect::number(s).ok())
            })
            .filter(|f: &f64| f.is_finite())
    };
    let mut report = NcclReport::default();
    for (i, r) in results.iter().enumerate() {
        let half = |k: &str| -> Result<NcclHalf, String> {
            let h = &r[k];
            let f = |name: &str, alt: &str| {
                num(&h[name])
                    .or_else(|| num(&h[alt]))
                    .filter(|x| *x >= 0.0)
                    .ok_or_else(|| {
                        format!("results[{i}].{k}.{name} is missing, not a number, or below zero")
                    })
            };
            // `N/A` (or absent): not checked (`-c 0`); anything else that is no number is
            // no check that passed
            let wrong = match &h["nwrong"] {
                serde_json::Value::Null => None,
                serde_json::Value::String(t) if t.trim().eq_ignore_ascii_case("n/a") => None,
                w => Some(
                    num(w).ok_or_else(|| format!("results[{i}].{k}.nwrong is {w}, not a count"))?,
                ),
            };
            Ok(NcclHalf {
                time_us: f("time", "cpu_time")?,
                algbw: f("alg_bw", "alg_bw")?,
                busbw: f("bus_bw", "bus_bw")?,
                wrong,
            })
        };
        let row = NcclRow {
            size: r["size"]
                .as_u64()
                .ok_or_else(|| format!("results[{i}].size is missing"))?,
            count: r["count"]
                .as_u64()
                .ok_or_else(|| format!("results[{i}].count is missing"))?,
            dtype: r["type"].as_str().unwrap_or("").to_string(),
            redop: r["redop"].as_str().unwrap_or("").to_string(),
            root: num(&r["root"])
                .map(|x| x as i64)
                .ok_or_else(|| format!("results[{i}].root is missing"))?,
            out_of_place: half("out_of_place")?,
            in_place: half("in_place")?,
            line: 0,
        };
        // one result a size, type, op and root, as in the table
        if let Some(j) = report.rows.iter().position(|x| {
            (x.size, &x.dtype, &x.redop, x.root) == (row.size, &row.dtype, &row.redop, row.root)
        }) {
            return Err(format!(
                "results[{i}]: size {} {} {} root {} again (first at results[{j}]): the file holds two nccl-tests runs",
                row.size, row.dtype, row.redop, row.root
            ));
        }
        report.rows.push(row);
    }
    // spelled `bandwidith` before nccl-tests 2.17.9; written but no number (`"nan"`): said,
    // not taken for a missing footer
    let avg = &v["average_bus_bandwidth"]["bandwidth"];
    let old = &v["average_bus_bandwidith"]["bandwidith"];
    let written = if avg.is_null() { old } else { avg };
    report.avg_busbw = match written {
        serde_json::Value::Null => None,
        w => Some(num(w).ok_or_else(|| {
            format!(
                "average_bus_bandwidth is {w}, not a number: the run's own average is no measure"
            )
        })?),
    };
    report.out_of_bounds = match &v["out_of_bounds"]["count"] {
        serde_json::Value::Null => None,
        c => Some(
            num(c)
                .filter(|x| *x >= 0.0 && x.fract() == 0.0)
                .map(|x| x as u64)
                .ok_or_else(|| format!("out_of_bounds.count is {c}, not a count"))?,
        ),
    };
    if report.rows.is_empty() {
        return Err("nccl-tests JSON has no result rows".into());
    }
    Ok(report)
}
