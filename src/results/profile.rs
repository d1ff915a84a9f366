//! A profiled point's kernel summary (`profile`): the CSV its profiler's summary step wrote
//! (`plan::profile`), read into the rows the report shows.

/// A profiler's kernel summary, the rows the report shows: (kernel, total ns, calls, mean ns),
/// heaviest first. nsys's `cuda_gpu_kern_sum` CSV (`Time (%)`, `Total Time (ns)`,
/// `Instances`, `Avg (ns)`, …, `Name`) or ncu's per-kernel summary (`Kernel Name`/`Function
/// Name`, `Invocations`, and a `Duration` metric's `Average`). Unreadable: why.
pub fn summary(text: &str) -> Result<Vec<(String, f64, u64, f64)>, String> {
    // nsys prints notes before the table: the header is the first line with a `Name` column
    let start = text
        .lines()
        .position(|l| l.contains("Name"))
        .ok_or("no header with a `Name` column")?;
    let body: String = text.lines().skip(start).collect::<Vec<_>>().join("\n");
    let mut r = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(body.as_bytes());
    let head: Vec<String> = r
        .headers()
        .map_err(|e| e.to_string())?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let col = |names: &[&str]| head.iter().position(|h| names.contains(&h.as_str()));
    let name = col(&["Name", "Kernel Name", "Function Name"]).ok_or("no kernel name column")?;
    let total = col(&["Total Time (ns)"]);
    let calls = col(&["Instances", "Invocations"]);
    let avg = col(&["Avg (ns)", "Average"]);
    // ncu's per-kernel summary has a row per kernel and metric: its duration's row, in ns
    let metric = col(&["Metric Name"]);
    let unit = col(&["Metric Unit"]);
    let num = |s: &str| s.trim().replace(',', "").parse::<f64>().ok();
    let mut rows = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| format!("row {}: {e}", i + 1))?;
        let n = rec.get(name).unwrap_or("").trim().to_string();
        if n.is_empty() {
            continue;
        }
        let mut scale = 1.0;
        if let Some(m) = metric {
            let m = rec.get(m).unwrap_or("").trim();
            if m != "Duration" && m != "gpu__time_duration.sum" {
                continue;
            }
            scale = match unit.and_then(|u| rec.get(u)).unwrap_or("").trim() {
                "nsecond" | "ns" => 1.0,
                "usecond" | "us" => 1e3,
                "msecond" | "ms" => 1e6,
                "second" | "s" => 1e9,
                u => return Err(format!("row {}: a duration in `{u}`", i + 1)),
            };
        }
        let c = calls.and_then(|k| rec.get(k)).and_then(num).unwrap_or(0.0) as u64;
        let a = avg
            .and_then(|k| rec.get(k))
            .and_then(num)
            .map(|a| a * scale);
        let t = total
            .and_then(|k| rec.get(k))
            .and_then(num)
            .or_else(|| a.map(|a| a * c as f64));
        let (Some(t), Some(a)) = (t, a.or_else(|| t.map(|t| t / c.max(1) as f64))) else {
            return Err(format!("row {}: no time for `{n}`", i + 1));
        };
        rows.push((n, t, c, a));
    }
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nsys_kernel_sum_rows_are_read_heaviest_first_after_its_notes() {
        let text = "Generating SQLite file r.sqlite from r.nsys-rep\n\
            Processing [r.sqlite] with [cuda_gpu_kern_sum.py]...\n\
            \"Time (%)\",\"Total Time (ns)\",\"Instances\",\"Avg (ns)\",\"Med (ns)\",\"Min (ns)\",\"Max (ns)\",\"StdDev (ns)\",\"Name\"\n\
            \"20.0\",\"2000\",\"4\",\"500.0\",\"500.0\",\"400\",\"600\",\"80.0\",\"small_kernel(int)\"\n\
            \"80.0\",\"8000\",\"2\",\"4000.0\",\"4000.0\",\"3900\",\"4100\",\"141.4\",\"void gemm<float, 128>(float const*, float*)\"\n";
        let rows = summary(text).unwrap();
        assert_eq!(
            rows,
            vec![
                (
                    "void gemm<float, 128>(float const*, float*)".to_string(),
                    8000.0,
                    2,
                    4000.0
                ),
                ("small_kernel(int)".to_string(), 2000.0, 4, 500.0),
            ]
        );
        assert!(summary("SKIPPED: r.sqlite does not contain CUDA kernel data.\n").is_err());
        // ncu's per-kernel summary: a row per kernel and metric; the duration's, scaled to ns
        let ncu = "\"ID\",\"Kernel Name\",\"Invocations\",\"Metric Name\",\"Metric Unit\",\"Minimum\",\"Maximum\",\"Average\"\n\
            \"0\",\"gemm\",\"3\",\"Duration\",\"usecond\",\"4.00\",\"6.00\",\"5.00\"\n\
            \"0\",\"gemm\",\"3\",\"SM Frequency\",\"cycle/nsecond\",\"1.40\",\"1.41\",\"1.41\"\n";
        assert_eq!(
            summary(ncu).unwrap(),
            vec![("gemm".to_string(), 15000.0, 3, 5000.0)]
        );
    }
}
