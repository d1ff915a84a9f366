//! Per-rank CSVs of a distributed run: verify that they are complete, and merge them into the
//! main CSV (sorted by rank, then step) when the parent process could not.

use std::path::Path;

use crate::results::collect::csv_lines;

use serde::Serialize;

/// What complete per-rank output of a distributed point looks like.
#[derive(Debug, Clone, Serialize)]
pub struct RankCheck {
    /// Directory of rank{R}.csv, relative to the result directory.
    pub dir: String,
    /// The merged CSV, relative to the result directory.
    pub main_csv: String,
    pub world: i64,
    pub steps: i64,
    pub warmup: i64,
}

/// Verify rank0..rank(world-1).csv: each has `steps` rows for steps 0..steps-1, warmup markers on
/// exactly the first `warmup` steps, and the right rank. Returns a problem, naming file and line.
/// A single-rank point has no rank directory (`dir` empty): its main CSV is rank 0's file, checked
/// the same way, so one policy covers one rank and many.
pub fn verify(dir: &Path, check: &RankCheck) -> Result<(), String> {
    // the merge puts every rank's rows under rank 0's header: the columns must be the same
    let mut first: Option<(String, csv::StringRecord)> = None;
    for r in 0..check.world {
        let path = if check.dir.is_empty() {
            dir.join(&check.main_csv)
        } else {
            dir.join(&check.dir).join(format!("rank{r}.csv"))
        };
        let name = path.display().to_string();
        let (mut rd, mut at) = csv_lines::reader(&path)?;
        let headers = rd.headers().map_err(|e| at.error(&name, &e))?.clone();
        match &first {
            Some((f, h)) if *h != headers => {
                return Err(format!(
                    "{name}:{}: the header is not {f}'s (`{}` where it has `{}`): its rows cannot be merged under it",
                    at.of(&csv::Position::new()),
                    headers.iter().collect::<Vec<_>>().join(","),
                    h.iter().collect::<Vec<_>>().join(",")
                ))
            }
            Some(_) => {}
            None => first = Some((format!("rank{r}.csv"), headers.clone())),
        }
        let col = |n: &str| headers.iter().position(|h| h == n);
        let (Some(step_c), Some(rank_c)) = (col("step"), col("rank")) else {
            return Err(format!("{}: no `step` and `rank` columns", path.display()));
        };
        let warm_c = col("warmup_excluded");
        let mut n = 0i64;
        for rec in rd.records() {
            let rec = rec.map_err(|e| at.error(&name, &e))?;
            let line = match rec.position() {
                Some(p) => at.record(&name, p)?,
                None => 0,
            };
            let int = |c: usize| rec.get(c).and_then(|v| v.trim().parse::<i64>().ok());
            if int(step_c) != Some(n) {
                return Err(format!(
                    "{name}:{line}: step {:?}, expected {n}",
                    rec.get(step_c)
                ));
            }
            if int(rank_c) != Some(r) {
                return Err(format!(
                    "{name}:{line}: rank {:?}, expected {r}",
                    rec.get(rank_c)
                ));
            }
            if let Some(w) = warm_c {
                let want = if n < check.warmup { 1 } else { 0 };
                if int(w) != Some(want) {
                    return Err(format!(
                        "{name}:{line}: warmup_excluded {:?} at step {n}, expected {want}",
                        rec.get(w)
                    ));
                }
            }
            n += 1;
        }
        if n != check.steps {
            return Err(format!(
                "{}: {n} rows, expected {} (final step {})",
                path.display(),
                check.steps,
                check.steps - 1
            ));
        }
    }
    Ok(())
}

/// Merge the verified rank CSVs into the main CSV (only when it is missing).
pub fn merge(dir: &Path, check: &RankCheck) -> Result<bool, String> {
    let main = dir.join(&check.main_csv);
    if main.exists() || check.dir.is_empty() {
        return Ok(false);
    }
    let tmp = main.with_extension("csv.tmp");
    let mut w = csv::Writer::from_path(&tmp).map_err(|e| e.to_string())?;
    for r in 0..check.world {
        let path = dir.join(&check.dir).join(format!("rank{r}.csv"));
        let name = path.display().to_string();
        let (mut rd, mut at) = csv_lines::reader(&path)?;
        if r == 0 {
            w.write_record(rd.headers().map_err(|e| at.error(&name, &e))?)
                .map_err(|e| e.to_string())?;
        }
        for rec in rd.records() {
            let rec = rec.map_err(|e| at.error(&name, &e))?;
            // (asked, so what the reader remembers of the lines stays one record's)
            at.record(&name, rec.position().unwrap_or(&csv::Position::new()))?;
            w.write_record(&rec).map_err(|e| e.to_string())?;
        }
    }
    w.flush().map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, &main).map_err(|e| e.to_string())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check() -> RankCheck {
        RankCheck {
            dir: "r".into(),
            main_csv: "main.csv".into(),
            world: 2,
            steps: 3,
            warmup: 1,
        }
    }

    fn write(dir: &Path, rank: i64, rows: &[(i64, i64)]) {
        std::fs::create_dir_all(dir.join("r")).unwrap();
        let mut s = String::from("rank,step,warmup_excluded,step_total_ms\n");
        for (step, warm) in rows {
            s.push_str(&format!("{rank},{step},{warm},1.0\n"));
        }
        std::fs::write(dir.join(format!("r/rank{rank}.csv")), s).unwrap();
    }

    #[test]
    fn complete_ranks_verify_and_merge_in_rank_order() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), 1, &[(0, 1), (1, 0), (2, 0)]);
        write(d.path(), 0, &[(0, 1), (1, 0), (2, 0)]);
        verify(d.path(), &check()).unwrap();
        assert!(merge(d.path(), &check()).unwrap());
        let m = std::fs::read_to_string(d.path().join("main.csv")).unwrap();
        let ranks: Vec<&str> = m.lines().skip(1).map(|l| &l[..1]).collect();
        assert_eq!(ranks, ["0", "0", "0", "1", "1", "1"]);
    }

    #[test]
    fn incomplete_ranks_are_named() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), 0, &[(0, 1), (1, 0), (2, 0)]);
        assert!(verify(d.path(), &check())
            .unwrap_err()
            .contains("rank1.csv"));
        write(d.path(), 1, &[(0, 1), (1, 0)]);
        assert!(verify(d.path(), &check())
            .unwrap_err()
            .contains("2 rows, expected 3 (final step 2)"));
        write(d.path(), 1, &[(0, 0), (1, 0), (2, 0)]);
        assert!(verify(d.path(), &check())
            .unwrap_err()
            .contains("rank1.csv:2: warmup_excluded"));
    }
}
