//! `cargo bench --bench speed`: prints a markdown table of timings (recorded in BENCHMARKS.md).

use std::time::{Duration, Instant};

use expr::parse::load::load_str;
use expr::parse::validate::Options;

/// A generated experiment of about `lines` lines: many hosts, a large recstore-e2e block.
fn generated(lines: usize) -> String {
    let mut s = String::from("experiment big {\n    description \"generated\"\n}\n");
    let hosts = lines / 4;
    for i in 0..hosts {
        s.push_str(&format!(
            "host h{i} ssh=\"gpu{i}\" ssh-port=22 ip=\"10.1.{}.{}\" repo=\"/data/RecStore\" gpus=8 {{\n    env NCCL_SOCKET_IFNAME=\"eno8303\"\n}}\n",
            i / 250,
            i % 250 + 1
        ));
    }
    s.push_str("recstore-e2e {\n    runtime-dir \"/nfs/rt\"\n    master-addr \"10.1.0.1\"\n");
    let mut n = s.lines().count();
    let mut i = 0;
    while n < lines - 8 {
        s.push_str(&format!("    client host=h{i} gpu=0 node-rank={i} nproc-per-node=1\n    ps host=h{i} port=15000 shard={i}\n"));
        i += 1;
        n += 2;
    }
    s.push_str("    lane RecStore-BRPC\n    lane TorchRec-HBM\n    sweep batch-size 1024 2048 4096\n    repeat 3\n}\n");
    s
}

fn time<F: FnMut()>(mut f: F) -> (Duration, Duration) {
    let mut v = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        f();
        v.push(t.elapsed());
    }
    v.sort();
    (v[0], v[v.len() / 2])
}

/// Wall time and peak RSS (KiB) of one `expr` invocation writing to /dev/null, and its output size.
fn run_expr(args: &[&str]) -> (Duration, i64, usize) {
    let size = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(args)
        .output()
        .expect("run expr")
        .stdout
        .len();
    let t = Instant::now();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run expr");
    let wall = t.elapsed();
    assert!(status.success());
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    (wall, ru.ru_maxrss, size)
}

/// A diagnostic read by miette over the whole text, as before: the reference for
/// `CharColumns`, which hands miette the text from a line above the span's context.
struct WholeText<'a>(&'a expr::model::diag::Diag, miette::NamedSource<String>);

impl std::fmt::Debug for WholeText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.0, f)
    }
}
impl std::fmt::Display for WholeText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.0, f)
    }
}
impl std::error::Error for WholeText<'_> {}
impl miette::Diagnostic for WholeText<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.0.code()
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.0.severity()
    }
    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.0.help()
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.1)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.0.labels()
    }
}

/// `expr check`'s text form of a file with `n` diagnostics (unknown properties, one a line),
/// through `diag::render`, beside the same diagnostics read by miette over the whole text.
fn many_diagnostics() {
    use miette::Diagnostic;
    println!("\n| benchmark | diagnostics | expr (min of 5) | per diagnostic | miette over the whole text | per diagnostic |\n|---|---|---|---|---|---|");
    for n in [1_000usize, 4_000, 16_000] {
        let mut text = String::from("experiment a\nbench b {\n    run \"true\"\n");
        for i in 0..n {
            text.push_str(&format!("    bogus{i} 1\n"));
        }
        text.push_str("}\n");
        let loaded = load_str("many.kdl", &text, &Options::default());
        assert!(loaded.diags.len() >= n);
        let best = |f: &mut dyn FnMut()| {
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed()
                })
                .min()
                .unwrap()
        };
        let ours = best(&mut || {
            std::hint::black_box(expr::model::diag::render(&loaded.diags, false));
        });
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
                .with_width(100)
                .with_links(false);
        let whole = best(&mut || {
            let mut out = String::new();
            for d in &loaded.diags {
                let w = WholeText(d, miette::NamedSource::new("many.kdl", text.clone()));
                assert!(w.source_code().is_some());
                let _ = handler.render_report(&mut out, &w);
            }
            std::hint::black_box(out);
        });
        let k = loaded.diags.len() as f64;
        println!(
            "| `check`, unknown properties | {} | {:.0} ms | {:.1} µs | {:.0} ms | {:.1} µs |",
            loaded.diags.len(),
            ours.as_secs_f64() * 1e3,
            ours.as_secs_f64() * 1e6 / k,
            whole.as_secs_f64() * 1e3,
            whole.as_secs_f64() * 1e6 / k
        );
    }
}

fn main() {
    if std::env::var("EXPR_BENCH_ONLY").is_ok_and(|v| v == "diagnostics") {
        many_diagnostics();
        return;
    }
    println!("| benchmark | input | min | median |\n|---|---|---|---|");
    for lines in [500usize, 2000] {
        let text = generated(lines);
        let real = text.lines().count();
        let loaded = load_str("gen.kdl", &text, &Options::default());
        assert!(
            !loaded.has_errors(),
            "generated experiment must be valid: {:?}",
            loaded.diags.first().map(|d| d.message.clone())
        );
        let (min, med) = time(|| {
            let l = load_str("gen.kdl", &text, &Options::default());
            std::hint::black_box(l);
        });
        let (pmin, pmed) = time(|| {
            std::hint::black_box(kdl::KdlDocument::parse_v2(&text).is_ok());
        });
        println!(
            "| kdl crate parse only | {real}-line experiment | {:.1} ms | {:.1} ms |",
            pmin.as_secs_f64() * 1e3,
            pmed.as_secs_f64() * 1e3
        );
        println!(
            "| expr check (parse+decode+validate) | {real}-line experiment | {:.1} ms | {:.1} ms |",
            min.as_secs_f64() * 1e3,
            med.as_secs_f64() * 1e3
        );
    }
    // 10,000 points: 2 lanes x 50 x 50 sweep points x 2 repeats.
    let dir = std::env::temp_dir().join(format!("expr-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.kdl");
    let b: Vec<String> = (1..=50).map(|i| (i * 64).to_string()).collect();
    let d: Vec<String> = (1..=50).map(|i| (i * 8).to_string()).collect();
    std::fs::write(&file, format!("experiment big\nrecstore-e2e {{\n    sweep batch-size {}\n    sweep embedding-dim {}\n    repeat 2\n}}\n", b.join(" "), d.join(" "))).unwrap();
    println!(
        "\n| benchmark | points | wall (best of 5) | peak RSS | output |\n|---|---|---|---|---|"
    );
    for format in ["text", "json"] {
        let f = file.display().to_string();
        let mut best = (Duration::MAX, 0, 0);
        for _ in 0..5 {
            let r = run_expr(&["plan", &f, "--format", format, "--output", "results/big"]);
            if r.0 < best.0 {
                best = r;
            }
        }
        println!(
            "| expr plan --format {format} | 10000 | {:.0} ms | {:.1} MiB | {:.1} MiB |",
            best.0.as_secs_f64() * 1e3,
            best.1 as f64 / 1024.0,
            best.2 as f64 / 1048576.0
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    // last: its peak RSS would otherwise count in the plan rows above (RUSAGE_CHILDREN)
    // A 50,000-line file through the binary: parsed in pieces on every core.
    {
        let dir = std::env::temp_dir().join(format!("expr-bench-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("big50k.kdl");
        let text = generated(50_000);
        let real = text.lines().count();
        std::fs::write(&file, &text).unwrap();
        let f = file.display().to_string();
        let mut v: Vec<Duration> = (0..5)
            .map(|_| {
                let t = Instant::now();
                let st = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
                    .args(["check", &f])
                    .stderr(std::process::Stdio::null())
                    .status()
                    .expect("run expr");
                assert!(st.success());
                t.elapsed()
            })
            .collect();
        v.sort();
        println!("\n| benchmark | input | min | median |\n|---|---|---|---|");
        println!(
            "| expr check (binary, target < 2 s) | {real}-line experiment | {:.0} ms | {:.0} ms |",
            v[0].as_secs_f64() * 1e3,
            v[v.len() / 2].as_secs_f64() * 1e3
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    many_diagnostics();
}
