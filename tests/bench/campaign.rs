//! `cargo bench --bench campaign` (issue 40): a campaign of 32 points of `sleep 0.5`, each
//! taking one of 4 GPUs of a stand-in host (`nvidia-smi` on PATH is the stand-in of
//! tests/common/gpu.rs, named as such), run by `expr run --jobs 1` and `--jobs 4`, against the
//! ideal (total / 4) and against the peers that run such work in parallel on the same machine
//! in the same call: ReFrame's asynchronous execution policy with a partition limited to 4 jobs,
//! and Hydra's multirun with the joblib launcher at 4 jobs. The peers come from the Python at
//! EXPR_PEERS_PYTHON (a venv with `reframe-hpc`, `hydra-core` and `hydra-joblib-launcher`);
//! without it their rows say so. Per point, expr's own recorded wall time (journal) is shown
//! for both `--jobs` so they can be compared. Rounds alternate the commands (2 rounds by
//! default; EXPR_BENCH_ROUNDS).

#[path = "../common/gpu.rs"]
mod gpu;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const POINTS: usize = 32;
const SLOTS: usize = 4;
const SLEEP: f64 = 0.5;

fn expr_exp() -> String {
    let values: Vec<String> = (0..POINTS).map(|i| i.to_string()).collect();
    format!(
        "experiment campaign\nhost local gpus={SLOTS}\nbench b {{\n    param i 0\n    run \"sleep {SLEEP} # {{{{ i }}}}\" gpus=1\n    sweep i {}\n}}\n",
        values.join(" ")
    )
}

const REFRAME_TEST: &str = r#"import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, sanity_function


@rfm.simple_test
class Sleep(rfm.RunOnlyRegressionTest):
    i = parameter(range(32))
    valid_systems = ['*']
    valid_prog_environs = ['*']
    executable = 'sleep'
    executable_opts = ['0.5']

    @sanity_function
    def ok(self):
        return sn.assert_true(True)
"#;

const REFRAME_CONFIG: &str = r#"site_configuration = {
    'systems': [{
        'name': 'here', 'descr': 'this machine', 'hostnames': ['.*'],
        'partitions': [{
            'name': 'slots', 'scheduler': 'local', 'launcher': 'local',
            'environs': ['builtin'], 'max_jobs': 4,
        }],
    }],
    'environments': [{'name': 'builtin', 'cc': 'cc', 'cxx': '', 'ftn': ''}],
}
"#;

const HYDRA_APP: &str = r#"import time

import hydra


@hydra.main(version_base=None, config_path=None)
def main(cfg):
    time.sleep(0.5)


if __name__ == "__main__":
    main()
"#;

/// Wall seconds of one command in `dir` (its output thrown away); None when it failed.
fn wall(dir: &Path, cmd: &mut Command) -> Option<f64> {
    let t = Instant::now();
    let st = cmd
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    st.success().then(|| t.elapsed().as_secs_f64())
}

/// expr's recorded wall time of each point (ms), from its journal.
fn point_walls(dir: &Path) -> Vec<f64> {
    std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "point")
        .filter_map(|e| e["timing"]["wall_ms"].as_f64())
        .collect()
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    (m, sd)
}

fn main() {
    let rounds: usize = std::env::var("EXPR_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = gpu::gpus_on_path(d, SLOTS);
    std::fs::write(d.join("c.kdl"), expr_exp()).unwrap();
    std::fs::write(d.join("sleep_test.py"), REFRAME_TEST).unwrap();
    std::fs::write(d.join("settings.py"), REFRAME_CONFIG).unwrap();
    std::fs::write(d.join("app.py"), HYDRA_APP).unwrap();
    let python = std::env::var("EXPR_PEERS_PYTHON").ok();
    let bin_of = |name: &str| {
        python
            .as_ref()
            .map(|p| Path::new(p).with_file_name(name))
            .filter(|b| b.exists())
    };
    let expr = env!("CARGO_BIN_EXE_expr");
    let hist = d.join("h.sqlite");
    let mut rows: Vec<(String, Vec<f64>)> = vec![
        ("expr run --jobs 1".into(), Vec::new()),
        ("expr run --jobs 4".into(), Vec::new()),
        (
            "ReFrame 4.x, --exec-policy=async, max_jobs=4".into(),
            Vec::new(),
        ),
        (
            "Hydra multirun, joblib launcher, n_jobs=4".into(),
            Vec::new(),
        ),
    ];
    let mut per_point: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
    for r in 0..rounds {
        for (k, jobs) in ["1", "4"].iter().enumerate() {
            let out = format!("out{r}_{jobs}");
            let t = wall(
                d,
                Command::new(expr)
                    .args(["run", "c.kdl", "--output", &out, "-q", "--jobs", jobs])
                    .env("PATH", &path)
                    .env("EXPR_HISTORY", &hist),
            );
            if let Some(t) = t {
                rows[k].1.push(t);
                per_point[k].extend(point_walls(&d.join(&out)));
            }
        }
        if let Some(rf) = bin_of("reframe") {
            let t = wall(
                d,
                Command::new(&rf)
                    .args([
                        "-C",
                        "settings.py",
                        "-c",
                        "sleep_test.py",
                        "-r",
                        "--exec-policy=async",
                        "--prefix",
                        &format!("rf{r}"),
                    ])
                    .env("RFM_SAVE_LOG_FILES", "n"),
            );
            if let Some(t) = t {
                rows[2].1.push(t);
            }
        }
        if let Some(py) = python.as_ref().filter(|_| bin_of("python").is_some()) {
            let t = wall(
                d,
                Command::new(py).args([
                    "app.py",
                    "--multirun",
                    "hydra/launcher=joblib",
                    "hydra.launcher.n_jobs=4",
                    &format!("hydra.sweep.dir=hy{r}"),
                    &format!(
                        "+i={}",
                        (0..POINTS)
                            .map(|i| i.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                ]),
            );
            if let Some(t) = t {
                rows[3].1.push(t);
            }
        }
    }
    let ideal = POINTS as f64 * SLEEP / SLOTS as f64;
    println!(
        "{POINTS} points of `sleep {SLEEP}` on {SLOTS} slots; {rounds} round(s), commands alternating; ideal makespan {ideal:.2} s (total / {SLOTS})\n"
    );
    println!("| runner | makespan (mean of rounds) | rounds | × ideal | × `--jobs 1` |");
    println!("|---|---|---|---|---|");
    let base = rows[0].1.iter().sum::<f64>() / rows[0].1.len().max(1) as f64;
    for (name, v) in &rows {
        if v.is_empty() {
            println!("| {name} | not run here (EXPR_PEERS_PYTHON unset, or the peer failed) | 0 | — | — |");
            continue;
        }
        let m = v.iter().sum::<f64>() / v.len() as f64;
        println!(
            "| {name} | {m:.2} s | {} | {:.2} | {:.2} |",
            v.len(),
            m / ideal,
            m / base
        );
    }
    println!("\nexpr's recorded wall time per point (journal `timing.wall_ms`):\n");
    println!("| `--jobs` | points | mean | sd |");
    println!("|---|---|---|---|");
    for (k, jobs) in ["1", "4"].iter().enumerate() {
        if per_point[k].len() > 1 {
            let (m, sd) = mean_sd(&per_point[k]);
            println!(
                "| {jobs} | {} | {m:.1} ms | {sd:.1} ms |",
                per_point[k].len()
            );
        }
    }
}
