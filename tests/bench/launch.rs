//! `cargo bench --bench launch`: what one point costs on each execution backend, measured in one
//! run — this machine, loopback ssh (multiplexed, as expr runs it), a real one-node Slurm in
//! allocation mode (every step an `srun --overlap`) and in array mode (every point a task).
//! Per point is the marginal cost, (T(40 points) − T(10 points)) / 30, so that fixed costs
//! (salloc, sbatch, the report) are not spread over the points; each T is the best of 2 runs.
//! Also the raw launch of one command: `bash -c true`, ssh multiplexed, `srun --overlap true`.

#[path = "../common/slurm.rs"]
mod slurm;
#[path = "../common/sshd.rs"]
mod sshd;

/// What the fixtures call when their daemon cannot run here (the tests' `common::skip`).
fn skip(why: &str) {
    eprintln!("SKIPPED launch benchmark row: {why}");
}

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SMALL: usize = 10;
const LARGE: usize = 40;

fn ok(c: &mut Command) {
    let o = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("spawn");
    assert!(
        o.status.success(),
        "{c:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Best of 2 wall times of `expr run` of `n` points whose experiment header is `prelude`.
fn run(dir: &Path, prelude: &str, host: &str, n: usize, env: &[(&str, &str)]) -> Duration {
    let values: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    let file = format!("e{n}.kdl");
    std::fs::write(
        dir.join(&file),
        format!(
            "{prelude}bench b {{\n    run \"echo v={{{{ x }}}}\" host={host}\n    collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    sweep x {}\n}}\n",
            values.join(" ")
        ),
    )
    .unwrap();
    let mut best = Duration::MAX;
    for i in 0..2 {
        let out = format!("out-{host}-{n}-{i}-{}", prelude.len());
        let mut c = Command::new(env!("CARGO_BIN_EXE_expr"));
        c.args(["run", &file, "--output", &out]).current_dir(dir);
        for (k, v) in env {
            c.env(k, v);
        }
        let t = Instant::now();
        ok(&mut c);
        best = best.min(t.elapsed());
    }
    best
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A table row: backend, T(10), T(40), marginal per point.
fn row(what: &str, small: Duration, large: Duration) {
    println!(
        "| {what} | {:.0} ms | {:.0} ms | {:.1} ms |",
        ms(small),
        ms(large),
        (ms(large) - ms(small)) / (LARGE - SMALL) as f64
    );
}

/// Mean wall time of `n` runs of a command.
fn per_command(n: usize, mut make: impl FnMut() -> Command) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        ok(&mut make());
    }
    ms(t.elapsed()) / n as f64
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    println!(
        "| backend | {SMALL} points | {LARGE} points | per point (marginal) |\n|---|---|---|---|"
    );
    let local_small = run(d, "experiment l\nhost local\n", "local", SMALL, &[]);
    let local_large = run(d, "experiment l\nhost local\n", "local", LARGE, &[]);
    row("local", local_small, local_large);

    let sshd = sshd::Sshd::start();
    let mut raw_ssh = None;
    if let Some(s) = &sshd {
        let prelude = format!(
            "experiment s\nhost far ssh=\"exprtest\" ssh-port={} ip=\"127.0.0.1\" repo={:?}\n",
            s.port,
            d.display().to_string()
        );
        let cfg = s.config.to_str().unwrap().to_string();
        let env = [("EXPR_SSH_CONFIG", cfg.as_str())];
        let small = run(d, &prelude, "far", SMALL, &env);
        let large = run(d, &prelude, "far", LARGE, &env);
        row("ssh to 127.0.0.1 (multiplexed)", small, large);
        let sock = format!("{}/cm-%C", s.dir.path().display());
        let cp = format!("ControlPath={sock}");
        let port = s.port.to_string();
        ok(Command::new("ssh").args([
            "-F",
            &cfg,
            "-p",
            &port,
            "-o",
            "BatchMode=yes",
            "-o",
            &cp,
            "-o",
            "ControlMaster=yes",
            "-o",
            "ControlPersist=60",
            "-f",
            "-N",
            "exprtest",
        ]));
        raw_ssh = Some(per_command(10, || {
            let mut c = Command::new("ssh");
            c.args([
                "-F",
                &cfg,
                "-p",
                &port,
                "-o",
                "BatchMode=yes",
                "-o",
                &cp,
                "exprtest",
                "true",
            ])
            .stdin(Stdio::null());
            c
        }));
        ok(Command::new("ssh")
            .args(["-F", &cfg, "-p", &port, "-o", &cp, "-O", "exit", "exprtest"]));
    } else {
        println!("| ssh | skipped: no sshd here | | |");
    }

    let cluster = slurm::Slurm::start();
    let mut raw_srun = None;
    if let Some(s) = &cluster {
        let conf = s.conf.to_str().unwrap().to_string();
        let env = [("SLURM_CONF", conf.as_str())];
        for (label, prelude) in [
            (
                "Slurm allocation mode (srun --overlap per step)",
                "experiment a\nslurm c nodes=1 time=\"00:10:00\"\nhost n0 slurm=\"c\" node=0\n",
            ),
            (
                "Slurm array mode (one task per point, 16 CPUs, no throttle)",
                "experiment r\nslurm c nodes=1 time=\"00:10:00\" mode=\"array\"\nhost n0 slurm=\"c\" node=0\n",
            ),
            (
                "Slurm array mode, throttle=1 (one task at a time)",
                "experiment t\nslurm c nodes=1 time=\"00:10:00\" mode=\"array\" throttle=1\nhost n0 slurm=\"c\" node=0\n",
            ),
        ] {
            let small = run(d, prelude, "n0", SMALL, &env);
            let large = run(d, prelude, "n0", LARGE, &env);
            row(label, small, large);
        }
        // the raw cost of one srun step in an allocation
        let o = Command::new("salloc")
            .args([
                "--no-shell",
                "-N1",
                "-J",
                "expr-bench",
                "--comment",
                "bench",
            ])
            .env("SLURM_CONF", &conf)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        if let Some(job) = err
            .lines()
            .find_map(|l| l.split("Granted job allocation ").nth(1))
            .map(|j| j.trim().to_string())
        {
            raw_srun = Some(per_command(10, || {
                let mut c = Command::new("srun");
                c.args(["--jobid", &job, "--overlap", "-N1", "-n1", "true"])
                    .env("SLURM_CONF", &conf);
                c
            }));
            let _ = Command::new("scancel")
                .arg(&job)
                .env("SLURM_CONF", &conf)
                .status();
        }
    } else {
        println!("| Slurm | skipped: no Slurm here | | |");
    }

    println!("\n| one command | per command (mean of 10) |\n|---|---|");
    println!(
        "| `bash -c true` | {:.1} ms |",
        per_command(10, || {
            let mut c = Command::new("bash");
            c.args(["-c", "true"]);
            c
        })
    );
    if let Some(t) = raw_ssh {
        println!("| `ssh` (multiplexed) `true` | {t:.1} ms |");
    }
    if let Some(t) = raw_srun {
        println!("| `srun --jobid J --overlap -N1 -n1 true` | {t:.1} ms |");
    }
    drop(cluster);
    drop(sshd);
}
