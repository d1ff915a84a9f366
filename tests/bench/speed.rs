//! `cargo bench --bench speed`: prints a markdown table of timings (recorded in BENCHMARKS.md).

use std::time::{Duration, Instant};

use expr::load::load_str;
use expr::validate::Options;

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

fn main() {
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
}
