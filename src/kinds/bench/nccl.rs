//! nccl-tests output: stdout tables and `-J` JSON.

use serde::Serialize;

/// One row of an nccl-tests table: message size and bus bandwidth (out-of-place, in-place).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NcclRow {
    pub size: u64,
    pub busbw_out: Option<f64>,
    pub busbw_in: Option<f64>,
}

/// nccl-tests stdout tables (`#` lines skipped; N/A and e-notation accepted) or `-J` JSON.
pub fn parse_nccl_tests(text: &str) -> Result<Vec<NcclRow>, String> {
    if text.trim_start().starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("nccl-tests JSON: {e}"))?;
        let results = v["results"]
            .as_array()
            .ok_or("nccl-tests JSON has no `results`")?;
        return Ok(results
            .iter()
            .map(|r| NcclRow {
                size: r["size"].as_u64().unwrap_or(0),
                busbw_out: r["out_of_place"]["bus_bw"].as_f64(),
                busbw_in: r["in_place"]["bus_bw"].as_f64(),
            })
            .collect());
    }
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = t.split_whitespace().collect();
        if f.len() < 13 || f[0].parse::<u64>().is_err() {
            continue;
        }
        let val = |s: &str| s.parse::<f64>().ok();
        // size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
        rows.push(NcclRow {
            size: f[0]
                .parse()
                .map_err(|_| format!("line {}: bad size", i + 1))?,
            busbw_out: val(f[7]),
            busbw_in: val(f[11]),
        });
    }
    if rows.is_empty() {
        return Err("no nccl-tests result rows".into());
    }
    Ok(rows)
}
