//! `cargo bench --bench scale`: the cost of each command as the work grows — `check`, `plan`,
//! `run` (points of `true`), `report`, `compare` and `history` of 1k, 10k and 100k points, and
//! `check` of a 400k-value sweep (which it refuses) — as wall time and the process's peak
//! memory (the kernel's `ru_maxrss` from `wait4`), in total and per point. Each command is the
//! release binary as a user runs it. EXPR_BENCH_SIZES=1000,10000 measures fewer sizes (100k
//! points take ~5 minutes to run here).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Wall seconds and peak RSS (KiB) of one command, and whether it exited as expected.
// reaped by `wait4` below (for its rusage), not by `Child::wait`
#[allow(clippy::zombie_processes)]
fn measure(dir: &Path, args: &[&str], ok: &[i32]) -> (f64, i64) {
    let t = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("expr");
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as i32;
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut ru) }, pid);
    let secs = t.elapsed().as_secs_f64();
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    assert!(ok.contains(&code), "{args:?} exited {code}");
    (secs, ru.ru_maxrss)
}

fn experiment(points: usize) -> String {
    let values: Vec<String> = (0..points).map(|i| i.to_string()).collect();
    format!(
        "experiment scale\nbench b {{\n    param i 0\n    run \"true {{{{ i }}}}\"\n    sweep i {}\n}}\n",
        values.join(" ")
    )
}

/// A row: the totals, per point, and the memory each point past the last size added (the
/// slope, free of the process's fixed few MiB).
fn row(
    last: &mut std::collections::HashMap<String, (usize, i64)>,
    what: &str,
    n: usize,
    (secs, kib): (f64, i64),
) {
    let slope = match last.get(what) {
        Some(&(pn, pk)) if n > pn => format!("{:.2} KiB", (kib - pk) as f64 / (n - pn) as f64),
        _ => "—".into(),
    };
    last.insert(what.to_string(), (n, kib));
    println!(
        "| `{what}` | {n} | {secs:.2} s | {:.1} µs | {:.0} MiB | {slope} |",
        secs / n as f64 * 1e6,
        kib as f64 / 1024.0,
    );
}

fn main() {
    let sizes: Vec<usize> = std::env::var("EXPR_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    println!("| command | points | time | time per point | peak memory | memory per added point |");
    let mut last = std::collections::HashMap::new();
    println!("|---|---|---|---|---|---|");
    for &n in &sizes {
        let file = format!("e{n}.kdl");
        std::fs::write(d.join(&file), experiment(n)).unwrap();
        let out = format!("r{n}");
        let h = format!("h{n}.sqlite");
        row(
            &mut last,
            "check",
            n,
            measure(d, &["check", &file, "--allow-large"], &[0]),
        );
        row(
            &mut last,
            "plan",
            n,
            measure(d, &["plan", &file, "--allow-large"], &[0]),
        );
        row(
            &mut last,
            "run",
            n,
            measure(
                d,
                &[
                    "run",
                    &file,
                    "--allow-large",
                    "-q",
                    "--output",
                    &out,
                    "--history",
                    &h,
                ],
                &[0],
            ),
        );
        row(&mut last, "report", n, measure(d, &["report", &out], &[0]));
        row(
            &mut last,
            "compare",
            n,
            measure(d, &["compare", &out, &out], &[0]),
        );
        row(
            &mut last,
            "history",
            n,
            measure(d, &["history", "scale", "--history", &h], &[0]),
        );
    }
    let n = 400_000;
    std::fs::write(d.join("sweep400k.kdl"), experiment(n)).unwrap();
    row(
        &mut last,
        "check (refused)",
        n,
        measure(d, &["check", "sweep400k.kdl"], &[2]),
    );
}
