//! Collectors on hand-computed cases and on each output form of shared/reference/kernels.md.

use std::path::Path;

use expr::kinds::bench::nccl::parse_nccl_tests;
use expr::kinds::dataset_rt::collect::parse_drt;
use expr::kinds::ep_bench::collect::parse_ep;
use expr::kinds::ep_bench::collect::KernelForm;
use expr::results::collect::steps::collect;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// 2 ranks × 6 steps, warmup 2, different per-rank rates.
/// rank 0 kept samples/s 100,110,120,130 (mean 115); rank 1 200,220,240,260 (mean 230).
/// Per step sums: 300, 330, 360, 390 → job throughput 345. Averaging rank rows would give 172.5.
const TWO_RANKS: &str = "rank,batch_size,step,warmup_excluded,batch_prepare_ms,embed_lookup_ms,dense_fwd_ms,backward_ms,dense_optimizer_ms,sparse_update_ms,step_total_ms,samples_per_sec
0,64,0,1,9,9,9,9,9,9,90,999999
0,64,1,1,9,9,9,9,9,9,90,999999
0,64,2,0,1,2,3,4,5,6,10,100
0,64,3,0,1,2,3,4,5,6,20,110
0,64,4,0,1,2,3,4,5,6,30,120
0,64,5,0,1,2,3,4,5,6,40,130
1,64,0,1,9,9,9,9,9,9,90,999999
1,64,1,1,9,9,9,9,9,9,90,999999
1,64,2,0,3,4,5,6,7,8,50,200
1,64,3,0,3,4,5,6,7,8,60,220
1,64,4,0,3,4,5,6,7,8,70,240
1,64,5,0,3,4,5,6,7,8,80,260
";

#[test]
fn two_ranks_six_steps_warmup_two() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "main.csv", TWO_RANKS);
    let s = collect(&[&f], 2).unwrap();
    assert_eq!(s.samples_per_sec, 345.0);
    assert_eq!((s.ranks, s.steps, s.rows, s.warmup_rows), (2, 4, 8, 4));
    assert_eq!(s.stages["batch_prepare_ms"], 2.0);
    assert_eq!(
        s.stages["embed_lookup_local_ms"], 3.0,
        "embed_lookup_ms is reported as embed_lookup_local_ms"
    );
    assert_eq!(
        s.stages["optimizer_ms"], 6.0,
        "dense_optimizer_ms is reported as optimizer_ms"
    );
    assert_eq!(s.stages["sparse_update_ms"], 7.0);
    assert_eq!(s.stages["step_total_ms"], 45.0);
    // numpy.percentile([10,20,30,40,50,60,70,80], 95) == 76.5
    assert!(
        (s.p95_step_total_ms - 76.5).abs() < 1e-9,
        "{}",
        s.p95_step_total_ms
    );
    assert!(!s.derived_samples_per_sec);
    // the same rows as two per-rank files give the same answer
    let (r0, r1): (Vec<&str>, Vec<&str>) =
        TWO_RANKS.lines().skip(1).partition(|l| l.starts_with('0'));
    let head = TWO_RANKS.lines().next().unwrap();
    let f0 = write(
        d.path(),
        "rank0.csv",
        &format!("{head}\n{}\n", r0.join("\n")),
    );
    let f1 = write(
        d.path(),
        "rank1.csv",
        &format!("{head}\n{}\n", r1.join("\n")),
    );
    assert_eq!(collect(&[&f0, &f1], 2).unwrap().samples_per_sec, 345.0);
}

#[test]
fn without_warmup_markers_steps_below_warmup_are_dropped() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "m.csv", "rank,step,batch_size,step_total_ms,samples_per_sec\n0,0,8,1,1000000\n0,1,8,1,50\n0,2,8,1,70\n");
    assert_eq!(collect(&[&f], 1).unwrap().samples_per_sec, 60.0);
}

#[test]
fn torchrec_rows_without_samples_per_sec_derive_it_from_batch_and_step_time() {
    let d = tempfile::tempdir().unwrap();
    // batch 1024: 1024*1000/2 = 512000 and 1024*1000/4 = 256000 → mean 384000
    let f = write(d.path(), "t.csv", "backend,rank,batch_size,step,warmup_excluded,embed_lookup_local_ms,optimizer_ms,step_total_ms\ntorchrec,0,1024,0,1,1,1,100\ntorchrec,0,1024,1,0,1,1,2\ntorchrec,0,1024,2,0,1,1,4\n");
    let s = collect(&[&f], 1).unwrap();
    assert_eq!(s.samples_per_sec, 384_000.0);
    assert!(s.derived_samples_per_sec);
    assert_eq!(s.stages["embed_lookup_local_ms"], 1.0);
}

#[test]
fn a_malformed_row_or_missing_data_names_the_file_and_line_and_never_gives_zero() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "bad.csv", "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec\n0,0,0,8,1.0,10\n0,1,0,8,oops,10\n");
    let e = collect(&[&f], 0).unwrap_err();
    assert!(
        e.contains("bad.csv:3") && e.contains("step_total_ms"),
        "{e}"
    );
    let f = write(
        d.path(),
        "warm.csv",
        "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec\n0,0,1,8,1.0,10\n",
    );
    assert!(collect(&[&f], 0)
        .unwrap_err()
        .contains("no rows after dropping 1 warmup rows"));
    let f = write(d.path(), "uneven.csv", "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec\n0,0,0,8,1,10\n0,1,0,8,1,10\n1,0,0,8,1,10\n");
    assert!(collect(&[&f], 0)
        .unwrap_err()
        .contains("ranks cover different steps"));
    assert!(collect(&[&d.path().join("absent.csv")], 0)
        .unwrap_err()
        .contains("absent.csv"));
    // a time or a rate below zero is refused with its line, not averaged in (p95 18.5 took -10)
    for (row, what) in [
        ("0,1,0,8,-10,10", "step_total_ms"),
        ("0,1,0,8,1.0,-3", "samples_per_sec"),
    ] {
        let f = write(
            d.path(),
            "neg.csv",
            &format!("rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec\n0,0,0,8,1.0,10\n{row}\n"),
        );
        let e = collect(&[&f], 0).unwrap_err();
        assert!(
            e.contains("neg.csv:3") && e.contains(what) && e.contains("below zero"),
            "{e}"
        );
    }
    let f = write(d.path(), "negstage.csv", "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec,dense_fwd_ms\n0,0,0,8,1.0,10,-0.5\n");
    let e = collect(&[&f], 0).unwrap_err();
    assert!(
        e.contains("negstage.csv:2") && e.contains("dense_fwd_ms"),
        "{e}"
    );
    // a row cut short, an odd line: named with its file and line, never read as 0
    let head =
        "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec\n0,0,0,8,1.0,10\n";
    for (name, tail, want) in [
        (
            "cut.csv",
            "0,1,0,8",
            "cut.csv:3: 4 fields where the rows before have 6",
        ),
        (
            "odd.csv",
            "<<< garbage >>>\n",
            "odd.csv:3: 1 field where the rows before have 6",
        ),
        ("nan.csv", "0,1,0,8,NaN,10\n", "nan.csv:3: `step_total_ms`"),
    ] {
        let f = write(d.path(), name, &format!("{head}{tail}"));
        let e = collect(&[&f], 0).unwrap_err();
        assert!(e.contains(want), "{name}: {e}");
    }
    // Windows line ends read as any others
    let f = write(
        d.path(),
        "crlf.csv",
        "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec\r\n0,0,0,8,1.0,10\r\n",
    );
    assert!(collect(&[&f], 0).is_ok());
    // a header without the columns a number needs is named, file first
    for (header, want) in [
        (
            "rank,warmup_excluded,batch_size,step_total_ms",
            "cols.csv: no `step` column",
        ),
        (
            "rank,step,batch_size,samples_per_sec",
            "cols.csv: no `step_total_ms` column",
        ),
        (
            "rank,step,step_total_ms",
            "cols.csv: neither `samples_per_sec` nor `batch_size` (to derive it) is present",
        ),
    ] {
        let f = write(d.path(), "cols.csv", &format!("{header}\n"));
        let e = collect(&[&f], 0).unwrap_err();
        assert!(e.contains(want), "{header}: {e}");
    }
}

/// A reason names the line an editor opens, not the record count plus one: the csv crate skips
/// blank lines, a quoted cell may hold a newline, and its own count is one low after `\r\n`.
/// The per-step collector, RecStore's agg CSV and the rank check count alike.
#[test]
fn a_bad_cell_is_named_at_its_line_after_blank_lines_crlf_and_quoted_newlines() {
    let d = tempfile::tempdir().unwrap();
    let head = "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec";
    for (name, text, want) in [
        // line 1 header, 2 a row, 3 blank, 4 the bad row
        (
            "blank.csv",
            format!("{head}\n0,0,0,8,1.0,10\n\n0,1,0,8,x,10\n"),
            "blank.csv:4: `step_total_ms`",
        ),
        (
            "crlf.csv",
            format!("{head}\r\n0,0,0,8,1.0,10\r\n0,1,0,8,x,10\r\n"),
            "crlf.csv:3: `step_total_ms`",
        ),
        // a quoted cell over two lines: the bad row is on line 4
        (
            "quoted.csv",
            format!("{head},note\n0,0,0,8,1.0,10,\"a\nb\"\n0,1,0,8,x,10,c\n"),
            "quoted.csv:4: `step_total_ms`",
        ),
        (
            "ragged.csv",
            format!("{head}\r\n0,0,0,8,1.0,10\r\n\r\n0,1\r\n"),
            "ragged.csv:4: 2 fields where the rows before have 6",
        ),
    ] {
        let f = write(d.path(), name, &text);
        let e = collect(&[&f], 0).unwrap_err();
        assert!(e.contains(want), "{name}: {e}");
    }
    let f = write(
        d.path(),
        "recstore_main_agg.csv",
        "metric,mean,p50,p95,max\r\n\r\nstep_total_ms,1,2,3,4\r\nembed_lookup_ms,1,2,x,4\r\n",
    );
    let e = expr::results::collect::steps::agg_csv(&f).unwrap_err();
    assert!(
        e.contains("recstore_main_agg.csv:4: \"x\" is not a number"),
        "{e}"
    );

    let e = two_ranks(
        d.path(),
        "step,rank\r\n0,0\r\n\r\n1,0\r\n",
        "step,rank\n0,1\n\n\n2,1\n",
        2,
    );
    assert!(
        e.contains("rank1.csv:5: step Some(\"2\"), expected 1"),
        "{e}"
    );
}

/// Numbers each finite whose mean is one (a rank's 1.7e308 samples/s twice) are averaged value
/// by value, not refused; a job throughput that sums past a 64-bit float (two ranks at
/// 1.7e308), a FIFO or a device where a CSV should be, a line without end, a megabyte cell:
/// each an error naming the file, never `inf`, a hang, unbounded memory or the whole cell
/// copied into the reason.
#[test]
fn an_overflowing_sum_a_fifo_an_endless_line_and_a_huge_cell_are_errors_not_inf_or_a_hang() {
    let d = tempfile::tempdir().unwrap();
    let head = "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec\n";
    let f = write(
        d.path(),
        "big.csv",
        &format!("{head}0,0,0,8,1.0,1.7e308\n0,1,0,8,1.0,1.7e308\n"),
    );
    let s = collect(&[&f], 0).unwrap();
    assert_eq!(s.samples_per_sec, 1.7e308);
    let f = write(
        d.path(),
        "bigranks.csv",
        &format!("{head}0,0,0,8,1.0,1.7e308\n1,0,0,8,1.0,1.7e308\n"),
    );
    let e = collect(&[&f], 0).unwrap_err();
    assert!(
        e.contains("bigranks.csv: the samples/s of 2 ranks sum past a 64-bit float"),
        "{e}"
    );

    let fifo = d.path().join("fifo.csv");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let e = collect(&[&fifo], 0).unwrap_err();
    assert!(e.contains("fifo.csv: not a regular file, not read"), "{e}");
    let e = collect(&[Path::new("/dev/zero")], 0).unwrap_err();
    assert!(e.contains("/dev/zero: not a regular file"), "{e}");

    let f = write(
        d.path(),
        "endless.csv",
        &format!("{head}{}", "1".repeat(3 << 20)),
    );
    let e = collect(&[&f], 0).unwrap_err();
    assert!(
        e.contains("endless.csv") && e.contains("a line longer than 1 MiB"),
        "{e}"
    );

    let f = write(
        d.path(),
        "cell.csv",
        &format!("{head}0,0,0,8,{}x,10\n", "1".repeat(500_000)),
    );
    let e = collect(&[&f], 0).unwrap_err();
    assert!(e.contains("cell.csv:2: `step_total_ms`"), "{e}");
    assert!(e.contains("… (500001 bytes) is not a number"), "{e}");
    assert!(
        e.len() < 300,
        "the cell is not copied whole: {} bytes",
        e.len()
    );
}

/// A step, a rank and the warmup flag are whole numbers (`8.7` was read as step 8, `0.5` as
/// warmup); a rank's step twice is an error; ranks must cover the same steps, not only as
/// many with the same sum, least and most (rank 1 at 5,7,7,7,9 passed against 5,6,7,8,9).
#[test]
fn steps_ranks_and_the_warmup_flag_are_whole_and_every_rank_has_each_step_once() {
    let d = tempfile::tempdir().unwrap();
    let head = "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec\n";
    for (name, row, want) in [
        (
            "step.csv",
            "0,8.7,0,8,1,10",
            "step.csv:3: `step`: 8.7 is not a whole number",
        ),
        (
            "rank.csv",
            "-1.9,1,0,8,1,10",
            "rank.csv:3: `rank`: -1.9 is not a whole number",
        ),
        (
            "warm.csv",
            "0,1,0.5,8,1,10",
            "warm.csv:3: `warmup_excluded`: 0.5 is not a whole number",
        ),
        (
            "warm2.csv",
            "0,1,2,8,1,10",
            "warm2.csv:3: `warmup_excluded`: 2 is neither 0 nor 1",
        ),
        (
            "twice.csv",
            "0,0,0,8,1,10",
            "twice.csv: rank 0 has step 0 twice",
        ),
    ] {
        let f = write(d.path(), name, &format!("{head}0,0,0,8,1,10\n{row}\n"));
        let e = collect(&[&f], 0).unwrap_err();
        assert!(e.contains(want), "{name}: {e}");
    }
    let mut text = head.to_string();
    for s in [5, 6, 7, 8, 9] {
        text.push_str(&format!("0,{s},0,8,1,10\n"));
    }
    for s in [5, 7, 7, 7, 9] {
        text.push_str(&format!("1,{s},0,8,1,10\n"));
    }
    let f = write(d.path(), "fooled.csv", &text);
    let e = collect(&[&f], 0).unwrap_err();
    assert!(e.contains("rank 1 has step 7 twice"), "{e}");
    let mut text = head.to_string();
    for (r, steps) in [(0, [5, 6, 7]), (1, [5, 6, 8])] {
        for s in steps {
            text.push_str(&format!("{r},{s},0,8,1,10\n"));
        }
    }
    let f = write(d.path(), "shifted.csv", &text);
    let e = collect(&[&f], 0).unwrap_err();
    assert!(
        e.contains("ranks cover different steps (rank 0: 3 steps 5..=7, rank 1: 3 steps 5..=8; first difference at step 7)"),
        "{e}"
    );
}

const MSCCLPP_LL: &str = "[cfg] algorithm=LOW_LATENCY num_ranks=8 tokens/rank=128 hidden=7168 num_experts=256 top_k=8 warmup=10 iters=50 dispatch_dtype=bf16 combine_mode=rank_local_reduce output_layout=expert_major pacing=batched_steady_state
[cfg] MoECommunicator is_internode=False
[warn] something harmless

=== Summary (Low Latency, across 8 ranks) ===

--- Host-observed performance ---
Pacing: batched steady state
Dispatch (BF16):  avg=45.12 us, min=40.01 us, max=50.50 us
                  throughput: avg=325.40 GB/s, min=290.10 GB/s (rank 3), max=366.80 GB/s (rank 0)
Combine (BF16):   avg=60.25 us, min=55.00 us, max=66.75 us
                  throughput: avg=243.70 GB/s, min=220.00 GB/s (rank 5), max=266.90 GB/s (rank 1)
Total (D+C):      avg=105.37 us, min=95.01 us, max=117.25 us
                  throughput: avg=278.70 GB/s, min=250.00 GB/s (rank 5), max=308.90 GB/s (rank 0)

--- Kernel-only performance (device kernel time via torch.profiler/CUPTI) ---
Dispatch:    min=30.50 us (representative)  [avg=35.25, max=41.00 us -- inflated by profiler recv-spin skew]
                  throughput @min: 481.30 GB/s
Combine:     min=40.75 us (representative)  [avg=44.00, max=49.50 us -- inflated by profiler rank skew]
                  throughput @min: 360.20 GB/s

Byte counts: dispatch=14.68 MB (BF16), combine=14.68 MB (BF16), rows=1024
";

#[test]
fn ep_bench_ll_low_latency_block_with_kernel_only_min_form() {
    let s = parse_ep(MSCCLPP_LL).unwrap();
    assert_eq!(
        (s.mode.as_str(), s.ranks, s.dispatch_label.as_str()),
        ("low-latency", 8, "BF16")
    );
    assert_eq!(
        (s.dispatch.avg_us, s.dispatch.min_us, s.dispatch.max_us),
        (45.12, 40.01, 50.50)
    );
    assert_eq!(
        (
            s.dispatch.gbps_avg,
            s.dispatch.gbps_min,
            s.dispatch.gbps_max
        ),
        (Some(325.40), Some(290.10), Some(366.80))
    );
    assert_eq!(s.combine.avg_us, 60.25);
    assert_eq!((s.total.avg_us, s.total.gbps_avg), (105.37, Some(278.70)));
    let k = s.kernel_dispatch.unwrap();
    // `throughput @min` is the GB/s at the min time, not an average; the form says the avg
    // is the profiler-inflated one
    assert_eq!(
        (k.min_us, k.avg_us, k.max_us, k.gbps_avg, k.gbps_min),
        (30.50, 35.25, 41.00, None, Some(481.30))
    );
    assert_eq!(s.kernel_form, KernelForm::MinRepresentative);
    assert_eq!(s.kernel_combine.unwrap().min_us, 40.75);
    assert_eq!(
        (s.dispatch_mb, s.combine_mb, s.rows),
        (Some(14.68), Some(14.68), Some(1024))
    );
}

/// A figure that underflows to 0 (`1e-400`) or overflows (`1e999`) is no number: the block is
/// refused, where `1e-400` read as a 0 µs dispatch; a truncated figure line is said with its
/// line.
#[test]
fn ep_bench_figures_past_a_float_and_a_truncated_line_are_refused() {
    for (from, to) in [
        ("avg=45.12 us", "avg=1e-400 us"),
        ("max=50.50 us", "max=1e999 us"),
    ] {
        let text = MSCCLPP_LL.replacen(from, to, 1);
        assert_ne!(text, MSCCLPP_LL);
        let e = parse_ep(&text).unwrap_err();
        assert!(e.contains("not a number"), "{to}: {e}");
    }
    let text = MSCCLPP_LL.replacen(
        "avg=45.12 us, min=40.01 us, max=50.50 us",
        "avg=45.12 us, mi",
        1,
    );
    let e = parse_ep(&text).unwrap_err();
    assert!(e.contains("does not parse"), "{e}");
}

#[test]
fn ep_bench_ll_older_selections_form_and_disabled_kernel_pass() {
    let text = MSCCLPP_LL
        .replace("rows=1024", "selections=1000")
        .replace("Dispatch (BF16):", "Dispatch (FP8_E4M3):")
        .replace("dispatch=14.68 MB (BF16)", "dispatch=7.45 MB (FP8_E4M3)");
    let cut = text.find("Dispatch:    min=").unwrap();
    let end = text.find("Byte counts").unwrap();
    let text = format!(
        "{}  NOTE: kernel-only pass disabled or unavailable.\n\n{}",
        &text[..cut],
        &text[end..]
    );
    let s = parse_ep(&text).unwrap();
    assert_eq!(s.dispatch_label, "FP8_E4M3");
    assert_eq!(s.rows, Some(1000));
    assert_eq!(s.dispatch_mb, Some(7.45));
    assert!(s.kernel_dispatch.is_none());
}

#[test]
fn nccl_ep_low_latency_block_with_kernel_avg_form_and_preamble() {
    let text = "=== NCCL EP Performance Benchmark ===
Configuration:
  Algorithm:        LOW_LATENCY
  Ranks:            8
Rank 0: ncclEpCreateGroup took 12.50 ms
Rank 1: handle creation took 3.00 ms
[DEBUG] whatever

=== Summary (Low Latency, across 8 ranks) ===

--- Host-observed performance ---
Dispatch (BF16):  avg=50.00 us, min=45.00 us, max=55.00 us
                  throughput: avg=300.00 GB/s, min=270.00 GB/s (rank 2), max=330.00 GB/s (rank 6)
Combine (BF16):   avg=70.00 us, min=65.00 us, max=75.00 us
                  throughput: avg=210.00 GB/s, min=200.00 GB/s (rank 2), max=220.00 GB/s (rank 6)
Total (D+C):      avg=120.00 us, min=110.00 us, max=130.00 us
                  throughput: avg=250.00 GB/s, min=240.00 GB/s (rank 2), max=260.00 GB/s (rank 6)

--- Kernel-only performance ---
Dispatch:    avg=40.00 us, min=35.00 us, max=45.00 us
                  throughput: avg=370.00 GB/s, min=330.00 GB/s, max=420.00 GB/s
Combine:     avg=60.00 us, min=55.00 us, max=65.00 us
                  throughput: avg=245.00 GB/s, min=225.00 GB/s, max=267.00 GB/s
Byte counts: dispatch=14.68 MB (BF16), combine=14.68 MB (BF16), selections=1014

=== Setup Timing (across 8 ranks) ===
ncclEpCreateGroup:   avg=12.00 ms, min=11.00 ms, max=13.00 ms
";
    let s = parse_ep(text).unwrap();
    assert_eq!(
        (s.dispatch.avg_us, s.combine.max_us, s.total.min_us),
        (50.0, 75.0, 110.0)
    );
    let k = s.kernel_dispatch.unwrap();
    assert_eq!(
        (k.avg_us, k.min_us, k.max_us, k.gbps_avg),
        (40.0, 35.0, 45.0, Some(370.0))
    );
    assert_eq!(s.kernel_combine.unwrap().avg_us, 60.0);
    assert_eq!(s.kernel_form, KernelForm::Averages);
    assert_eq!(s.rows, Some(1014));
}

#[test]
fn nccl_ep_high_throughput_block() {
    let text = "=== Summary (High Throughput BF16, across 16 ranks) ===
NOTE: total time = kernel time + memcpyD2D + misc
--- BW based on total time ---
Dispatch:    total=800.00 us (min=780.00, max=820.00)
             recv: total_bw=50.00  nvl_bw=40.00  rdma_bw=10.00 GB/s
             send: total_bw=51.00  nvl_bw=41.00  rdma_bw=10.00 GB/s
Combine:     total=900.00 us (min=880.00, max=920.00)
             send: total_bw=45.00  nvl_bw=35.00  rdma_bw=10.00 GB/s
             recv: total_bw=46.00  nvl_bw=36.00  rdma_bw=10.00 GB/s
Total (D+C): avg=1700.00 us, min=1660.00 us, max=1740.00 us

--- BW based on kernel time ---
Dispatch:    kernel=700.00 us
Combine:     kernel=750.00 us
Total (D+C): kernel=1450.00 us
Byte counts (per rank avg): total_send=40.00 MB (4096 tokens), rdma_send=10.00 MB (1024 tokens), rdma_recv=10.00 MB (1024 tokens), total_recv=40.00 MB (4096 tokens)
";
    let s = parse_ep(text).unwrap();
    assert_eq!((s.mode.as_str(), s.ranks), ("high-throughput", 16));
    assert_eq!(
        (s.dispatch.avg_us, s.dispatch.min_us, s.combine.max_us),
        (800.0, 780.0, 920.0)
    );
    assert_eq!(s.total.avg_us, 1700.0);
    assert_eq!(s.kernel_dispatch.unwrap().avg_us, 700.0);
    assert_eq!(s.kernel_combine.unwrap().avg_us, 750.0);
}

/// A summary without its `Total (D+C)` line has no headline: an error naming it, never a
/// total of 0 (it was `total_avg_us = 0`, ok, "infinitely fast"); in a high-throughput block
/// a total line that does not parse is an error too.
#[test]
fn ep_summary_without_its_total_is_an_error_not_a_zero() {
    let ll = "=== Summary (Low Latency, across 8 ranks) ===
--- Host-observed performance ---
Dispatch (BF16):  avg=50.00 us, min=45.00 us, max=55.00 us
Combine (BF16):   avg=70.00 us, min=65.00 us, max=75.00 us
";
    let e = parse_ep(ll).unwrap_err();
    assert!(e.contains("no `Total (D+C)` timing"), "{e}");
    let ht = "=== Summary (High Throughput BF16, across 16 ranks) ===
--- BW based on total time ---
Dispatch:    total=800.00 us (min=780.00, max=820.00)
Combine:     total=900.00 us (min=880.00, max=920.00)
";
    let e = parse_ep(ht).unwrap_err();
    assert!(e.contains("no `Total (D+C)` timing"), "{e}");
    let garbled = format!("{ht}Total (D+C): avg=17x us\n");
    let e = parse_ep(&garbled).unwrap_err();
    assert!(e.contains("does not parse"), "{e}");
}

#[test]
fn ep_output_without_a_summary_is_an_error() {
    assert!(
        parse_ep("[cfg] algorithm=LOW_LATENCY\nTraceback (most recent call last):\n")
            .unwrap_err()
            .contains("no `=== Summary")
    );
}

#[test]
fn nccl_tests_table_and_json() {
    let table = "# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    20.11    0.00    0.00      0    19.90    0.00    0.00      0
   134217728      33554432     float     sum      -1   1234.5  108.72  190.26    N/A   1230.0  109.12  1.9e+02    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 95.13
";
    let r = parse_nccl_tests(table).unwrap();
    // two runs in one log: refused, not their rows mixed (one metric with two values) and the
    // second footer taken for the headline
    let twice = parse_nccl_tests(&format!("{table}{table}")).unwrap_err();
    assert!(
        twice.contains("the log holds two nccl-tests runs"),
        "{twice}"
    );
    assert_eq!(r.rows.len(), 2);
    let row = &r.rows[1];
    assert_eq!(
        (
            row.size,
            row.out_of_place.busbw,
            row.in_place.busbw,
            row.out_of_place.time_us,
            row.in_place.algbw
        ),
        (134_217_728, 190.26, 190.0, 1234.5, 109.12)
    );
    assert_eq!((row.out_of_place.wrong, row.line), (None, 8));
    assert_eq!(
        (r.avg_busbw, r.avg_busbw_line, r.out_of_bounds),
        (Some(95.13), 10, Some(0))
    );
    // a clean check (0 wrong, `N/A` unchecked, 0 out of bounds) finds nothing
    assert_eq!(r.found_wrong(), None);
    // values the tool's own check found wrong make the numbers no measure, said with the line
    let wrong = table
        .replace("0.00      0    19.90", "0.00      7    19.90")
        .replace(
            "# Out of bounds values : 0 OK",
            "# Out of bounds values : 14 FAILED",
        );
    let w = parse_nccl_tests(&wrong).unwrap().found_wrong().unwrap();
    assert!(
        w.starts_with(":7: nccl-tests counted 7 wrong values (out-of-place #wrong) at size 8"),
        "{w}"
    );
    let oob = table.replace(
        "# Out of bounds values : 0 OK",
        "# Out of bounds values : 14 FAILED",
    );
    let w = parse_nccl_tests(&oob).unwrap().found_wrong().unwrap();
    assert!(w.contains("14 out-of-bounds values"), "{w}");
    let json = r#"{"version":3,"results":[{"size":1024,"count":256,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":10.0,"alg_bw":0.1,"bus_bw":0.18,"nwrong":0},"in_place":{"time":9.0,"alg_bw":0.11,"bus_bw":0.2,"nwrong":0}}],"average_bus_bandwidth":{"bandwidth":0.19,"okay":"unchecked"}}"#;
    assert_eq!(parse_nccl_tests(json).unwrap().found_wrong(), None);
    let w = parse_nccl_tests(&json.replacen("\"nwrong\":0", "\"nwrong\":3", 1))
        .unwrap()
        .found_wrong()
        .unwrap();
    assert!(w.starts_with(": nccl-tests counted 3 wrong values"), "{w}");
    let r = parse_nccl_tests(json).unwrap();
    assert_eq!(
        (
            r.rows[0].size,
            r.rows[0].out_of_place.busbw,
            r.rows[0].in_place.busbw,
            r.rows[0].root,
            r.avg_busbw
        ),
        (1024, 0.18, 0.2, -1, Some(0.19))
    );
}

/// `-I 1` adds four per-iteration columns after each half (nccl-tests ≥ 2.19.2): read by header,
/// busbw is still busbw (a positional reader took i_min for the in-place busbw).
#[test]
fn nccl_tests_with_per_iteration_columns_are_read_by_header() {
    let table = "#                                                                 out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)
     1048576        262144     float     sum      -1    60.12   17.44   26.16       0    58.32    81.16    78.16     4.87    59.80   17.53   26.30       0    58.01    72.36    71.76     3.12
     2097152        524288     float     sum      -1    95.40   21.98   32.97       0    92.54   128.79   124.02     4.87    94.95   22.09   33.13       0    92.10   114.89   113.94     3.12
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 29.64 
";
    let r = parse_nccl_tests(table).unwrap();
    let got: Vec<(f64, f64, f64, f64)> = r
        .rows
        .iter()
        .map(|x| {
            (
                x.out_of_place.busbw,
                x.in_place.busbw,
                x.in_place.time_us,
                x.in_place.algbw,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![(26.16, 26.30, 59.80, 17.53), (32.97, 33.13, 94.95, 22.09)]
    );
    assert_eq!(r.avg_busbw, Some(29.64));
}

/// `-d all -o all` rows keep their type and op; broadcast's root; hypercube's empty redop; `-S 1`'s
/// two-token timestamp; `-C 1`'s cputime.
#[test]
fn nccl_tests_keep_type_op_root_and_odd_layouts() {
    let all = "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
     1048576       1048576      int8     sum      -1    10.00   1.00   2.00       0    11.00   1.10   2.10       0
     1048576       1048576      int8    prod      -1    12.00   1.20   2.20       0    13.00   1.30   2.30       0
     1048576        524288  bfloat16  mulsum      -1    14.00   1.40   2.40       0    15.00   1.50   2.50       0
";
    let r = parse_nccl_tests(all).unwrap();
    let keys: Vec<(String, String)> = r
        .rows
        .iter()
        .map(|x| (x.dtype.clone(), x.redop.clone()))
        .collect();
    assert_eq!(
        keys,
        vec![
            ("int8".into(), "sum".into()),
            ("int8".into(), "prod".into()),
            ("bfloat16".into(), "mulsum".into())
        ]
    );
    let bcast = "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
     1048576        262144     float    none       3    20.00   5.00   5.00       0    21.00   4.90   4.90       0
";
    assert_eq!(parse_nccl_tests(bcast).unwrap().rows[0].root, 3);
    let hyper = "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
     1048576        262144     float              -1    30.00   6.00   7.00       0    31.00   6.10   7.10       0
";
    let h = parse_nccl_tests(hyper).unwrap();
    assert_eq!(
        (h.rows[0].redop.as_str(), h.rows[0].in_place.busbw),
        ("", 7.10)
    );
    let stamped = "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw   busbw  #wrong timestamp
     1048576        262144     float     sum      -1    40.00   8.00   9.00       0    41.00   8.10   9.10       0 2026-11-30 03:00:00
";
    let st = parse_nccl_tests(stamped).unwrap();
    assert_eq!(
        (st.rows[0].out_of_place.time_us, st.rows[0].in_place.busbw),
        (40.0, 9.10)
    );
    // older JSON spells the average `bandwidith`; numbers may be strings
    let old = r#"{"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":-1,"out_of_place":{"time":"1.5","alg_bw":0.1,"bus_bw":0.2,"nwrong":"0"},"in_place":{"time":1.4,"alg_bw":0.1,"bus_bw":0.3,"nwrong":0}}],"average_bus_bandwidith":{"bandwidith":0.25}}"#;
    let o = parse_nccl_tests(old).unwrap();
    assert_eq!(
        (o.rows[0].out_of_place.time_us, o.avg_busbw),
        (1.5, Some(0.25))
    );
}

#[test]
fn an_nccl_value_that_does_not_parse_is_an_error_with_its_line() {
    let head = "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n";
    let bad = format!("{head}     1048576        262144     float     sum      -1    20.00   5.00   n/a       0    21.00   4.90   4.90       0\n");
    let e = parse_nccl_tests(&bad).unwrap_err();
    assert!(e.starts_with("line 2:") && e.contains("busbw"), "{e}");
    let short =
        format!("{head}     1048576        262144     float     sum      -1    20.00   5.00\n");
    assert!(parse_nccl_tests(&short).unwrap_err().starts_with("line 2:"));
    let nan = r#"{"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":-1,"out_of_place":{"time":"nan","alg_bw":0.1,"bus_bw":0.2},"in_place":{"time":1.4,"alg_bw":0.1,"bus_bw":0.3}}]}"#;
    assert!(parse_nccl_tests(nan)
        .unwrap_err()
        .contains("out_of_place.time"));
    assert!(parse_nccl_tests("1 2 3\n")
        .unwrap_err()
        .contains("before the header"));
    // a negative time: no measurement
    let neg = format!("{head}           8             2     float     sum      -1   -60.00    0.00    0.00      0    19.90    0.00    0.00      0\n");
    let e = parse_nccl_tests(&neg).unwrap_err();
    assert!(e.starts_with("line 2:") && e.contains("below zero"), "{e}");
    // a row whose size is garbled: no row of the table's shape is skipped (the headline was
    // the mean of the others)
    let garbled = format!("{head}     1048576x       262144     float     sum      -1    60.00  17.48  30.58       0    59.00  17.77  31.10       0\n           8             2     float     sum      -1    20.11    0.00    0.00      0    19.90    0.00    0.00      0\n");
    let e = parse_nccl_tests(&garbled).unwrap_err();
    assert!(e.starts_with("line 2:") && e.contains("1048576x"), "{e}");
    // NCCL INFO and other lines that are no row stay skipped
    let info = format!("{head}10.0.0.1:1234:1234 [0] NCCL INFO a b c d e f g h i j k l m n\n           8             2     float     sum      -1    20.11    0.00    0.00      0    19.90    0.00    0.00      0\n");
    assert_eq!(parse_nccl_tests(&info).unwrap().rows.len(), 1);
}

/// `-J` JSON is held to the table's rules: a result twice, an average written as `"nan"` (what
/// nccl-tests writes for NaN), an out-of-bounds count or a `nwrong` that is no count are
/// refused; `nwrong` null is "not checked" (`-c 0`), as `N/A` in the table.
#[test]
fn nccl_tests_json_is_held_to_the_tables_rules() {
    let one = r#"{"size":8,"count":2,"type":"float","redop":"sum","root":-1,"out_of_place":{"time":1.5,"alg_bw":0.1,"bus_bw":0.2,"nwrong":0},"in_place":{"time":1.4,"alg_bw":0.1,"bus_bw":0.3,"nwrong":0}}"#;
    let doc = |results: &str, tail: &str| format!(r#"{{"results":[{results}]{tail}}}"#);
    let e = parse_nccl_tests(&doc(&format!("{one},{one}"), "")).unwrap_err();
    assert!(e.contains("results[1]") && e.contains("again"), "{e}");
    let e = parse_nccl_tests(&doc(
        one,
        r#","average_bus_bandwidth":{"bandwidth":"nan","okay":"unchecked"}"#,
    ))
    .unwrap_err();
    assert!(e.contains("average_bus_bandwidth"), "{e}");
    let r = parse_nccl_tests(&doc(one, r#","out_of_bounds":{"count":"3","okay":false}"#)).unwrap();
    assert_eq!(r.out_of_bounds, Some(3));
    assert!(r.found_wrong().is_some());
    let e = parse_nccl_tests(&doc(
        &one.replacen(r#""nwrong":0"#, r#""nwrong":"nan""#, 1),
        "",
    ))
    .unwrap_err();
    assert!(e.contains("nwrong"), "{e}");
    let r = parse_nccl_tests(&doc(&one.replace(r#""nwrong":0"#, r#""nwrong":null"#), "")).unwrap();
    assert_eq!(r.rows[0].out_of_place.wrong, None);
    assert!(r.found_wrong().is_none());
}

#[test]
fn dataset_rt_json_report_and_stdout_line() {
    let report = r#"{"recorded_at":"2026-11-01T00:00:00Z","settings":{},"world_size":4,"backend":"nccl","synthetic":true,
      "ranks":[{"rank":0,"passes":[{"first_batch_seconds":0.5,"resources":{"rss_bytes":1000}},{"first_batch_seconds":0.1,"resources":{"rss_bytes":3000}}]},
               {"rank":1,"passes":[{"first_batch_seconds":0.7,"resources":{"rss_bytes":2000}}]}],
      "global_samples_per_second":[1000.0, 1200.0, 1100.0]}"#;
    let r = parse_drt(report).unwrap();
    assert_eq!(
        (r.world_size, r.global_samples_per_second.clone()),
        (4, vec![1000.0, 1200.0, 1100.0])
    );
    assert_eq!(
        (r.first_batch_seconds, r.peak_rss_bytes),
        (Some(0.7), Some(3000))
    );
    let stdout = format!(
        "pass 1/3; 10 batches per rank\n{}\n",
        report.replace('\n', " ")
    );
    assert_eq!(parse_drt(&stdout).unwrap(), r);
    // pass 0 is cold (reader/worker startup); the warm rate is the mean of the passes after it
    assert_eq!((r.cold(), r.warm()), (Some(1000.0), Some(1150.0)));
    assert_eq!(r.dataset_rt_version, None);
    let v = parse_drt(&report.replace(
        "\"rank\":1,",
        "\"rank\":1,\"dataset_rt_version\":\"0.4.8\",",
    ))
    .unwrap();
    assert_eq!(v.dataset_rt_version.as_deref(), Some("0.4.8"));
    let one =
        parse_drt(r#"{"world_size":1,"ranks":[],"global_samples_per_second":[5.0]}"#).unwrap();
    assert_eq!((one.cold(), one.warm()), (Some(5.0), None));
    assert!(parse_drt("{\"world_size\": 1}")
        .unwrap_err()
        .contains("global_samples_per_second"));
}

#[test]
fn mscclpp_cpp_ep_bench_and_cupti_inproc_variants() {
    let cpp = "=== Summary (Low Latency, across 4 ranks) ===
--- Host-observed performance ---
Dispatch (BF16):  avg=30.00 us, min=25.00 us, max=35.00 us
                  throughput: avg=400.00 GB/s
Combine (BF16):   avg=40.00 us, min=35.00 us, max=45.00 us
                  throughput: avg=300.00 GB/s
Total (D+C):      avg=70.00 us, min=60.00 us, max=80.00 us
                  throughput: avg=340.00 GB/s

--- Kernel-only performance ---
Dispatch:    min=20.00 us (representative)  [avg=22.00, max=24.00 us -- rank skew]
                  throughput @min: 600.00 GB/s
Combine:     min=30.00 us (representative)  [avg=32.00, max=34.00 us -- rank skew]
                  throughput @min: 400.00 GB/s

Byte counts: dispatch=12.00 MB (BF16), combine=12.00 MB (BF16), selections=900
";
    let s = parse_ep(cpp).unwrap();
    assert_eq!(
        (s.dispatch.gbps_avg, s.dispatch.gbps_min),
        (Some(400.0), None)
    );
    assert_eq!(s.total.gbps_avg, Some(340.0));
    let k = s.kernel_combine.unwrap();
    assert_eq!(
        (k.min_us, k.avg_us, k.max_us, k.gbps_avg, k.gbps_min),
        (30.0, 32.0, 34.0, None, Some(400.0))
    );
    assert_eq!(s.rows, Some(900));
    let inproc = cpp.replace("--- Kernel-only performance ---", "--- Kernel-only performance (in-process CUPTI Activity API, ep_bench KernelTimer analog) ---");
    assert_eq!(
        parse_ep(&inproc).unwrap().kernel_dispatch.unwrap().min_us,
        20.0
    );
}

#[test]
fn an_ep_figure_that_does_not_parse_is_an_error_with_its_line_never_zero() {
    for (from, to, line) in [
        // the label is there, the space after the colon is not
        (
            "Dispatch (BF16):  avg=45.12 us",
            "Dispatch (FP8_E4M3):avg=45.12 us",
            9,
        ),
        (
            "Combine (BF16):   avg=60.25 us",
            "Combine (BF16):   avg=6O.25 us",
            11,
        ),
        (
            "throughput: avg=325.40 GB/s",
            "throughput: avg=n/a GB/s",
            10,
        ),
        (
            "Dispatch:    min=30.50 us",
            "Dispatch:    min=thirty us",
            17,
        ),
    ] {
        let text = MSCCLPP_LL.replacen(from, to, 1);
        assert_ne!(text, MSCCLPP_LL, "{from}");
        let err = parse_ep(&text).expect_err(to);
        assert!(err.starts_with(&format!("line {line}:")), "{to}: {err}");
    }
    // a block without its Dispatch line has no Dispatch timing: missing, not 0
    let text: String = MSCCLPP_LL
        .lines()
        .filter(|l| !l.starts_with("Dispatch (BF16)"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(parse_ep(&text).unwrap_err().contains("no Dispatch timing"));
}

// ---------------------------------------------------------------------------------------------
// Same clock: the timing model of rs_demo's runners, on hand-computed cases in the real columns

use expr::kinds::recstore_e2e::collect::rs_demo_timing;
use expr::results::collect::steps::collect_timed;
use expr::results::collect::timing::TimingProblem;

const RS_HEADER: &str = "backend,nproc,rank,batch_size,step,warmup_excluded,batch_prepare_ms,input_pack_ms,embed_lookup_local_ms,embed_pool_local_ms,output_unpack_ms,dense_fwd_ms,backward_ms,optimizer_ms,sparse_update_ms,step_total_ms,emb_stage_ms,lookup_breakdown_ms";

/// RecStore's runner as at WU@2fb8d826: batch_prepare 0 (next() untimed), the total restarted
/// before the sparse optimizer step. Kept steps 1..3 (warmup 1):
///   stages 0+1+2+1+1+10+{40,45,35}+5+{20,25,15} = 80, 90, 70; totals 10, 10, 10.
///   median Σ 80, median total 10, median ratio 8 (ratios 8, 9, 7);
///   backward median 40 > 10; the total's CV 0 while Σ's is 10/80 = 12.5 %.
///   runbook samples/s 256000/10 = 25600; same work 256000/80, /90, /70 → mean 3233.8624…
fn upstream_recstore() -> String {
    let mut s = String::from(RS_HEADER);
    s.push('\n');
    s.push_str("recstore,1,0,256,0,1,0,1,2,1,1,10,99,5,99,3,0,0\n");
    for (step, bwd, sparse) in [(1, 40, 20), (2, 45, 25), (3, 35, 15)] {
        // emb_stage_ms and lookup_breakdown_ms overlap the stages: never summed
        s.push_str(&format!(
            "recstore,1,0,256,{step},0,0,1,2,1,1,10,{bwd},5,{sparse},10,5,2\n"
        ));
    }
    s
}

#[test]
fn a_total_that_times_only_the_tail_is_caught_with_its_numbers() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "recstore_main.csv", &upstream_recstore());
    let s = collect_timed(&[&f], 1, Some(&rs_demo_timing())).unwrap();
    assert_eq!(s.samples_per_sec, 25600.0, "the runbook's number stays");
    assert!(s.derived_samples_per_sec);
    let t = s.timing.expect("checked");
    assert_eq!(t.stages.len(), 9, "{:?}", t.stages);
    assert!(!t.stages.contains(&"emb_stage_ms".to_string()));
    assert_eq!(
        (t.median_stage_sum_ms, t.median_total_ms, t.median_ratio),
        (80.0, 10.0, 8.0)
    );
    assert_eq!(
        (t.largest_stage.as_str(), t.largest_stage_ms),
        ("backward_ms", 40.0)
    );
    assert!(t.suspect());
    assert_eq!(
        t.problems[0],
        TimingProblem::SumNotTotal {
            sum_ms: 80.0,
            total_ms: 10.0,
            ratio: 8.0
        }
    );
    assert_eq!(
        t.problems[1],
        TimingProblem::StageOverTotal {
            stage: "backward_ms".into(),
            stage_ms: 40.0,
            total_ms: 10.0
        }
    );
    match &t.problems[2] {
        TimingProblem::ConstantTotal { total_cv, sum_cv } => {
            assert_eq!(*total_cv, 0.0);
            assert!((sum_cv - 0.125).abs() < 1e-12, "{sum_cv}");
        }
        other => panic!("{other:?}"),
    }
    let same = t.same_work_samples_per_sec.unwrap();
    let want = (256000.0 / 80.0 + 256000.0 / 90.0 + 256000.0 / 70.0) / 3.0;
    assert!((same - want).abs() < 1e-9, "{same} vs {want}");
    assert_eq!(t.data_loading.as_deref(), Some("batch_prepare_ms"));
    let said = t.english();
    assert!(
        said.contains("the 9 stages sum to 80.00 ms at the median step but step_total_ms is 10.00 ms (8.00×, tolerance 5 %)"),
        "{said}"
    );
    assert!(
        said.contains("backward_ms alone (40.00 ms) is longer than step_total_ms (10.00 ms)"),
        "{said}"
    );
}

/// TorchRec's runner: the total covers its stages (46.9 against a sum of 46.2: 0.985, inside
/// 5 %), and its batch_prepare_ms holds the DataLoader's next() (39.4 ms): same work =
/// 256000 / (46.2 − 39.4) = 37647.0588…
#[test]
fn a_total_that_covers_its_stages_passes_and_data_loading_is_left_out_of_the_same_work() {
    let d = tempfile::tempdir().unwrap();
    let mut s = String::from(RS_HEADER);
    s.push('\n');
    for step in 0..4 {
        s.push_str(&format!(
            "torchrec,1,0,256,{step},0,39.4,1.0,2.0,0.5,0.3,1.0,1.2,0.3,0.5,46.9,3.8,0\n"
        ));
    }
    let f = write(d.path(), "torchrec_main.csv", &s);
    let st = collect_timed(&[&f], 0, Some(&rs_demo_timing())).unwrap();
    let t = st.timing.unwrap();
    assert!(!t.suspect(), "{:?}", t.problems);
    assert!(
        (t.median_stage_sum_ms - 46.2).abs() < 1e-9,
        "{}",
        t.median_stage_sum_ms
    );
    let same = t.same_work_samples_per_sec.unwrap();
    assert!((same - 256000.0 / 6.8).abs() < 1e-6, "{same}");
    // a total 5 % off at the median step is still inside; 6 % is not
    for (total, suspect) in [(44.0, false), (43.5, true)] {
        let text = s.replace(",46.9,", &format!(",{total},"));
        let f = write(d.path(), "t.csv", &text);
        let t = collect_timed(&[&f], 0, Some(&rs_demo_timing()))
            .unwrap()
            .timing
            .unwrap();
        assert_eq!(t.suspect(), suspect, "total {total}: {:?}", t.problems);
    }
}

/// Odd lines: a CSV without the stages is not checked (nothing claimed); an empty stage cell
/// leaves its row out of the check; a stage that is not a number is an error with file:line.
#[test]
fn timing_check_on_odd_csvs() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "bare.csv",
        "rank,step,batch_size,step_total_ms\n0,0,8,1\n0,1,8,1\n",
    );
    assert!(collect_timed(&[&f], 0, Some(&rs_demo_timing()))
        .unwrap()
        .timing
        .is_none());
    let mut s = String::from(RS_HEADER);
    s.push('\n');
    s.push_str("recstore,1,0,8,0,0,,1,1,1,1,1,1,1,1,9,0,0\n");
    s.push_str("recstore,1,0,8,1,0,1,1,1,1,1,1,1,1,1,9,0,0\n");
    let f = write(d.path(), "gap.csv", &s);
    let t = collect_timed(&[&f], 0, Some(&rs_demo_timing()))
        .unwrap()
        .timing
        .unwrap();
    assert_eq!(t.steps, 1, "the row with an empty stage is left out");
    assert!(!t.suspect());
    let f = write(d.path(), "bad.csv", &s.replace(",,1,1", ",x,1,1"));
    let e = collect_timed(&[&f], 0, Some(&rs_demo_timing())).unwrap_err();
    assert!(e.contains("bad.csv:2"), "{e}");
}

/// The real run's CSVs (docs/real-upstream/recstore/, WU@2fb8d826 on CPU): the check fires on
/// every RecStore point and on no TorchRec point, and the same-work throughput equals the rule
/// computed here from the rows (Σ of the nine stages less batch_prepare_ms, 256 × 1000 over it,
/// the mean over the kept steps of one rank).
#[test]
fn the_real_recstore_and_torchrec_csvs_are_judged_by_their_own_stages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/real-upstream/recstore/outputs");
    let stages = [
        "batch_prepare_ms",
        "input_pack_ms",
        "embed_lookup_local_ms",
        "embed_pool_local_ms",
        "output_unpack_ms",
        "dense_fwd_ms",
        "backward_ms",
        "optimizer_ms",
        "sparse_update_ms",
    ];
    let mut seen = (0, 0);
    let mut runs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    runs.sort();
    for run in runs {
        let rec = run.join("recstore_main.csv").exists();
        let f = run.join(if rec {
            "recstore_main.csv"
        } else {
            "torchrec_main.csv"
        });
        let s = collect_timed(&[&f], 3, Some(&rs_demo_timing())).unwrap();
        let t = s.timing.clone().unwrap();
        assert_eq!(t.stages, stages, "{}", f.display());
        // by hand
        let mut rd = csv::Reader::from_path(&f).unwrap();
        let h = rd.headers().unwrap().clone();
        let col = |n: &str| h.iter().position(|x| x == n).unwrap();
        let (mut same, mut ratios, mut n) = (0.0, Vec::new(), 0.0);
        for r in rd.records() {
            let r = r.unwrap();
            let v = |c: &str| r[col(c)].parse::<f64>().unwrap();
            if v("warmup_excluded") != 0.0 {
                continue;
            }
            let sum: f64 = stages.iter().map(|c| v(c)).sum();
            same += v("batch_size") * 1000.0 / (sum - v("batch_prepare_ms"));
            ratios.push(sum / v("step_total_ms"));
            n += 1.0;
        }
        ratios.sort_by(f64::total_cmp);
        let median = ratios[ratios.len() / 2];
        let got = t.same_work_samples_per_sec.unwrap();
        assert!(
            ((got - same / n) / got).abs() < 1e-12,
            "{}: {got} vs {}",
            f.display(),
            same / n
        );
        assert_eq!(ratios.len(), 17);
        assert!(
            (t.median_ratio - median).abs() < 1e-12,
            "{} vs {median}",
            t.median_ratio
        );
        if rec {
            assert!(
                t.suspect() && median > 5.0,
                "{}: {:?}",
                f.display(),
                t.problems
            );
            assert!(matches!(t.problems[0], TimingProblem::SumNotTotal { .. }));
            assert!(t.problems.iter().any(|p| matches!(p, TimingProblem::StageOverTotal { stage, .. } if stage == "backward_ms")));
            seen.0 += 1;
        } else {
            assert!(!t.suspect(), "{}: {:?}", f.display(), t.problems);
            assert!((median - 1.0).abs() < 0.05);
            seen.1 += 1;
        }
    }
    assert_eq!(seen, (3, 3));
}

/// Why the rank check refuses two rank CSVs of `steps` steps each, written under `dir/r`.
fn two_ranks(dir: &Path, rank0: &str, rank1: &str, steps: i64) -> String {
    let r = dir.join("r");
    std::fs::create_dir_all(&r).unwrap();
    write(&r, "rank0.csv", rank0);
    write(&r, "rank1.csv", rank1);
    let check = expr::results::ranks::RankCheck {
        dir: "r".into(),
        main_csv: "main.csv".into(),
        world: 2,
        steps,
        warmup: 0,
    };
    expr::results::ranks::verify(dir, &check).unwrap_err()
}

/// What a break-try found in the CSV readers: a CR-only file is measured by its own line ends,
/// a lone `\r` in a file of `\n` lines ends no line, a bad `batch_size` is named at its line
/// (not "no `batch_size` column"), two columns of one name are refused, and rank files whose
/// headers differ are not merged under rank 0's.
#[test]
fn cr_only_files_lone_crs_bad_batch_cells_twin_columns_and_unlike_rank_headers() {
    let d = tempfile::tempdir().unwrap();
    let head = "rank,step,warmup_excluded,batch_size,step_total_ms,samples_per_sec";
    // 300 000 short rows ended by `\r` only (1.8 MB, no line near 1 MiB), a bad cell last
    let mut cr = format!("{head}\r");
    for k in 0..300_000 {
        cr.push_str(&format!("0,{k},0,8,1.0,10\r"));
    }
    cr.push_str("0,300000,0,8,x,10\r");
    let f = write(d.path(), "cr.csv", &cr);
    let e = collect(&[&f], 0).unwrap_err();
    assert!(e.contains("cr.csv:300002: `step_total_ms`"), "{e}");
    // a `\r` inside a quoted cell and a stray one before `\r\n`: lines as sed counts them
    let f = write(
        d.path(),
        "lone.csv",
        &format!("{head},note\n0,0,0,8,1.0,10,\"a\rb\"\n0,1,0,8,1.0,10,c\r\r\n0,2,0,8,x,10,d\n"),
    );
    let e = collect(&[&f], 0).unwrap_err();
    assert!(e.contains("lone.csv:4: `step_total_ms`"), "{e}");
    // a lone `\r` inside a line of a file of `\n` lines: the csv reader made two rows of it
    // (`12\r34` read as 12 and 34, their mean 23, ok), where an editor and the regex
    // collector see one line
    let f = write(
        d.path(),
        "split.csv",
        &format!("{head}\n0,0,0,8,1.0,10\n0,1,0,8,1.0,1\r0\n"),
    );
    let e = collect(&[&f], 0).unwrap_err();
    assert!(
        e.contains("split.csv:3: a carriage return inside the line splits it into two rows"),
        "{e}"
    );
    // a batch size that is no number leaves the same-work figure missing, said at its line
    // (rows with their own samples/s: the batch size is needed for the same-work figure only)
    let mut s = format!("{RS_HEADER},samples_per_sec\n");
    for step in 0..2 {
        s.push_str(&format!(
            "torchrec,1,0,256,{step},0,39.4,1.0,2.0,0.5,0.3,1.0,1.2,0.3,0.5,46.9,3.8,0,100\n"
        ));
    }
    s.push_str("torchrec,1,0,oops,2,0,39.4,1.0,2.0,0.5,0.3,1.0,1.2,0.3,0.5,46.9,3.8,0,100\n");
    let f = write(d.path(), "torchrec_main.csv", &s);
    let t = collect_timed(&[&f], 0, Some(&rs_demo_timing()))
        .unwrap()
        .timing
        .unwrap();
    assert_eq!(t.same_work_samples_per_sec, None);
    let why = t.same_work_missing.unwrap();
    assert!(
        why.contains("torchrec_main.csv:4: `batch_size`: \"oops\" is not a number"),
        "{why}"
    );
    // two columns of one name: which holds the number is a guess
    let f = write(
        d.path(),
        "twice.csv",
        &format!("{head},samples_per_sec\n0,0,0,8,1.0,10,1000\n"),
    );
    let e = collect(&[&f], 0).unwrap_err();
    assert!(
        e.contains("twice.csv: two columns are named `samples_per_sec`"),
        "{e}"
    );
    // rank 1's columns in another order: its rows would land under rank 0's header
    let e = two_ranks(d.path(), "step,rank,x\n0,0,1\n", "rank,step,x\n1,0,1\n", 1);
    assert!(
        e.contains(
            "rank1.csv:1: the header is not rank0.csv's (`rank,step,x` where it has `step,rank,x`)"
        ),
        "{e}"
    );
}
