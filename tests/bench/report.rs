//! `cargo bench --bench report`: time and peak heap of aggregating per-step CSVs of growing size.
//! A counting allocator measures the heap the collector itself holds at its peak.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static A: Counting = Counting;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    println!("| rows (8 ranks) | file size | aggregate time | peak heap during aggregation |\n|---|---|---|---|");
    for rows in [10_000usize, 100_000, 1_000_000] {
        let path = dir.path().join(format!("main_{rows}.csv"));
        {
            let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
            writeln!(f, "rank,batch_size,step,warmup_excluded,batch_prepare_ms,input_pack_ms,embed_lookup_ms,dense_fwd_ms,backward_ms,dense_optimizer_ms,sparse_update_ms,step_total_ms,samples_per_sec").unwrap();
            let steps = rows / 8;
            for r in 0..8 {
                for s in 0..steps {
                    let t = 10.0 + ((s * 7 + r) % 13) as f64;
                    writeln!(
                        f,
                        "{r},1024,{s},{},0.5,0.2,3.1,1.2,2.2,0.4,1.9,{t:.3},{:.2}",
                        u8::from(s < 5),
                        1024.0 * 1000.0 / t
                    )
                    .unwrap();
                }
            }
        }
        let size = std::fs::metadata(&path).unwrap().len();
        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let s = expr::results::collect::steps::collect(&[&path], 5).unwrap();
        let elapsed = t.elapsed();
        let peak = PEAK.load(Ordering::Relaxed) - base;
        assert_eq!(s.rows as usize, rows - 8 * 5);
        println!(
            "| {rows} | {:.1} MiB | {:.0} ms | {:.2} MiB |",
            size as f64 / 1048576.0,
            elapsed.as_secs_f64() * 1e3,
            peak as f64 / 1048576.0
        );
    }
}
