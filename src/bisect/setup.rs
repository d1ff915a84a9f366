//! What a bisection needs before its first round: the one lane and sweep point it measures,
//! and — when `--good`/`--bad` are not given — the revisions the history suggests (the
//! checkouts its hosts run in are `super::checkout`'s).

use std::path::Path;

use crate::plan::Plan;

use super::git;

/// The one (bench, lane, sweep point) a narrowed plan measures.
pub type Group = (String, String, Vec<(String, String)>);

/// The plan's one group, or an error listing them with how to narrow.
pub fn group(plan: &Plan) -> Result<Group, String> {
    let mut groups: Vec<Group> = Vec::new();
    for p in &plan.points {
        let g = (
            p.bench.clone(),
            p.lane.clone(),
            p.axes
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
        );
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    match groups.len() {
        1 => Ok(groups.remove(0)),
        0 => Err("the selection holds no point".into()),
        n => {
            let list: Vec<String> = groups
                .iter()
                .take(8)
                .map(|(b, l, a)| {
                    let mut s = format!("lane={l}");
                    for (k, v) in a {
                        s.push_str(&format!(" {k}={v}"));
                    }
                    if plan.points.iter().any(|p| p.bench != *b) {
                        s.push_str(&format!(" bench={b}"));
                    }
                    s
                })
                .collect();
            Err(format!(
                "bisect measures one lane and sweep point, and the selection holds {n}: {}{}; narrow it with `--lane` and `--only AXIS=VALUE`",
                list.join(", "),
                if n > 8 { ", …" } else { "" }
            ))
        }
    }
}

/// `--good` and `--bad` from the history: bad is the git head of the newest ok run of this lane
/// and sweep point with the metric; good the head of the newest earlier run (at another
/// commit) whose samples are still at the baseline — the oldest run's: Welch's 95 % interval
/// of their difference holds 0.
pub fn from_history(
    db: &Path,
    experiment: &str,
    g: &Group,
    metric: &str,
) -> Result<(String, String), String> {
    let c = crate::history::open_ro(db)
        .map_err(|e| format!("no --good/--bad given, and {e}: pass `--good REV --bad REV`"))?;
    let runs: Vec<(String, String, Vec<f64>)> =
        crate::history::samples_of(&c, experiment, &g.0, &g.1, &g.2, metric)?
            .into_iter()
            .filter(|(_, h, _)| h.len() >= 7 && h != "none")
            .collect();
    let Some((_, bad, _)) = runs.last() else {
        return Err(format!(
            "the history ({}) has no ok run of `{experiment}` with `{metric}` for this lane and point: pass `--good REV --bad REV`",
            db.display()
        ));
    };
    let base = &runs[0].2;
    let good = runs
        .iter()
        .rev()
        .filter(|(_, h, _)| h != bad)
        .find(|(_, _, s)| {
            crate::util::stats::welch(base, s)
                .and_then(|d| d.ci)
                .is_some_and(|(lo, hi)| lo <= 0.0 && hi >= 0.0)
        })
        .map(|(_, h, _)| h.clone())
        .ok_or_else(|| {
            format!(
                "the history ({}) has no run at another commit than the newest ({}) whose `{metric}` is at its baseline: pass `--good REV`",
                db.display(),
                git::short(bad)
            )
        })?;
    Ok((good, bad.clone()))
}
