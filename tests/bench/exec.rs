//! `cargo bench --bench exec`: orchestration overhead of `expr run` against a plain bash loop, and
//! the cost of one command over ssh with and without a multiplexed connection. Prints a table.

#[path = "../common/sshd.rs"]
mod sshd;

/// What the sshd fixture calls when no sshd can run (the tests' `common::skip`).
fn skip(why: &str) {
    eprintln!("SKIPPED ssh benchmark: {why}");
}

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn time(mut f: impl FnMut()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn ok(c: &mut Command) {
    let s = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    assert!(s.success(), "{c:?} failed");
}

/// `expr run` of `n` points of `true` against a bash loop of as many `bash -c`: the rows of one
/// table (a per-point cost that grows with the points shows as a larger one at 2,000).
fn orchestration(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    std::fs::write(
        dir.path().join("t.kdl"),
        format!("experiment t\nbench b {{\n    param x 1\n    run \"true {{{{ x }}}}\"\n    sweep x {}\n}}\n", values.join(" ")),
    )
    .unwrap();
    let expr = env!("CARGO_BIN_EXE_expr");
    let mut best_expr = Duration::MAX;
    for i in 0..3 {
        let d = time(|| {
            ok(Command::new(expr)
                .args(["run", "t.kdl", "--output", &format!("out{i}")])
                .current_dir(dir.path()))
        });
        best_expr = best_expr.min(d);
    }
    let script =
        format!("for i in $(seq {n}); do bash -c \"cd . && true $i\" > /dev/null 2>&1; done");
    let mut best_bash = Duration::MAX;
    for _ in 0..3 {
        best_bash = best_bash.min(time(|| ok(Command::new("bash").arg("-c").arg(&script))));
    }
    println!(
        "| expr run, {n} points of `true` (journal, manifest, logs) | {:.0} ms | {:.1} ms |",
        best_expr.as_secs_f64() * 1e3,
        best_expr.as_secs_f64() * 1e3 / n as f64
    );
    println!(
        "| bash loop, {n} × `bash -c 'cd . && true'` | {:.0} ms | {:.1} ms |",
        best_bash.as_secs_f64() * 1e3,
        best_bash.as_secs_f64() * 1e3 / n as f64
    );
    println!(
        "| expr overhead per point, {n} points | | {:.1} ms |",
        (best_expr.as_secs_f64() - best_bash.as_secs_f64()) * 1e3 / n as f64
    );
}

fn main() {
    println!("| benchmark | total (best of 3) | per point |\n|---|---|---|");
    orchestration(50);
    orchestration(2000);

    let Some(sshd) = sshd::Sshd::start() else {
        println!("\n(ssh rows skipped: no sshd here)");
        return;
    };
    const M: usize = 20;
    let cfg = sshd.config.to_str().unwrap().to_string();
    let port = sshd.port.to_string();
    let base = |extra: &[&str]| {
        let mut c = Command::new("ssh");
        c.args(["-F", &cfg, "-p", &port, "-o", "BatchMode=yes"])
            .args(extra)
            .arg("exprtest")
            .arg("true")
            .stdin(Stdio::null());
        c
    };
    let plain = time(|| {
        for _ in 0..M {
            ok(&mut base(&[]));
        }
    });
    let sock = format!("{}/cm-%C", sshd.dir.path().display());
    let cp = format!("ControlPath={sock}");
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
    let mux = time(|| {
        for _ in 0..M {
            ok(&mut base(&["-o", &cp]));
        }
    });
    ok(Command::new("ssh").args(["-F", &cfg, "-p", &port, "-o", &cp, "-O", "exit", "exprtest"]));
    println!("\n| ssh to 127.0.0.1 as root, {M} × `true` | total | per command |\n|---|---|---|");
    println!(
        "| one connection per command | {:.0} ms | {:.1} ms |",
        plain.as_secs_f64() * 1e3,
        plain.as_secs_f64() * 1e3 / M as f64
    );
    println!(
        "| multiplexed (ControlMaster, as expr does) | {:.0} ms | {:.1} ms |",
        mux.as_secs_f64() * 1e3,
        mux.as_secs_f64() * 1e3 / M as f64
    );
}
