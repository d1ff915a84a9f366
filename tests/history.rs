//! `expr compare`, `expect` and the SQLite history (issue "Did it get faster?"): hand-computed
//! samples made by real runs (`echo v=…` read by a regex collector), a real SQLite file, and
//! concurrent runs writing one database.

mod common;

use std::path::Path;

use common::Test;
use serde_json::Value;

/// A bench whose every repeat prints `base + step × repeat`, with a direction.
fn bench(direction: &str, extra: &str) -> String {
    format!(
        "experiment cmp\nbench b {{\n    param base 10\n    param step 1\n    run \"echo v={{{{ base + step * repeat }}}}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"{direction}\n    lane x\n{extra}    repeat 3\n}}\n"
    )
}

fn run(dir: &Path, file: &str, out: &str, set: &[&str], status: i32) -> common::Ran {
    let mut args = vec!["run", file, "--output", out];
    for s in set {
        args.extend(["--set", s]);
    }
    Test::new().dir(dir).args(args).run().status(status)
}

fn compare_json(dir: &Path, a: &str, b: &str) -> Value {
    let out = Test::new()
        .dir(dir)
        .args(["compare", a, b, "--format", "json"])
        .run()
        .status(0);
    serde_json::from_str(&out.stdout).unwrap()
}

/// `expr compare --baseline last-ok B --format json`, read.
fn last_ok_json(dir: &Path, b: &str) -> Value {
    let out = Test::new()
        .dir(dir)
        .args(["compare", "--baseline", "last-ok", b, "--format", "json"])
        .run()
        .status(0);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn compare_gives_welch_intervals_and_verdicts_by_direction() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("up.kdl"), bench(" direction=\"higher\"", "")).unwrap();
    std::fs::write(p.join("down.kdl"), bench(" direction=\"lower\"", "")).unwrap();
    // A: 10 11 12; B: 15 16 17 → +45.45 %; the interval of the ratio on the log scale:
    // ln(16/11) ± t(3.5454) · √(1/(3·11²) + 1/(3·16²)) = 0.3747 ± 2.9226 · 0.063694
    // → +20.75 … +75.22 % (computed by an independent script with its own t quantile)
    run(p, "up.kdl", "results/a", &[], 0);
    run(p, "up.kdl", "results/b", &["base=15"], 0);
    let c = compare_json(p, "results/a", "results/b");
    let r = &c["rows"][0];
    assert_eq!(r["a"], serde_json::json!([10.0, 11.0, 12.0]));
    assert_eq!(r["b"], serde_json::json!([15.0, 16.0, 17.0]));
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 0.01;
    assert!(close(&r["delta_pct"], 45.4545), "{r}");
    assert!(
        close(&r["ci_pct"][0], 20.75) && close(&r["ci_pct"][1], 75.22),
        "{r}"
    );
    assert_eq!(r["verdict"], "better");
    assert_eq!(r["direction"], "higher");
    // the settings that differ are called out
    assert!(
        c["settings_diff"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "+ bench \"b\" › param \"base\" 15"),
        "{c}"
    );
    // lower is better: the same numbers are a regression; the exit code follows the limit
    run(p, "down.kdl", "results/c", &[], 0);
    run(p, "down.kdl", "results/e", &["base=15"], 0);
    let c = compare_json(p, "results/c", "results/e");
    assert_eq!(c["rows"][0]["verdict"], "worse");
    Test::new()
        .dir(p)
        .args([
            "compare",
            "results/c",
            "results/e",
            "--fail-on-regression",
            "10",
        ])
        .run()
        .status(expr::util::exit_codes::REGRESSION);
    let md = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/c",
            "results/e",
            "--fail-on-regression",
            "50",
        ])
        .run()
        .status(0)
        .stdout;
    assert!(
        md.contains(
            "| b | x |  | v ↓ | 11.00 (3) | 16.00 (3) | +45.45 % | +20.75 … +75.22 % | worse |"
        ),
        "{md}"
    );
    // A: 10 12 14 vs B: 15 16 17: d = 4 ± 4.155 holds 0
    run(p, "up.kdl", "results/f", &["step=2"], 0);
    assert_eq!(
        compare_json(p, "results/f", "results/b")["rows"][0]["verdict"],
        "no significant change"
    );
    // zero variance: equal → no change; different → exact, significant
    run(p, "up.kdl", "results/z1", &["step=0"], 0);
    run(p, "up.kdl", "results/z2", &["step=0"], 0);
    run(p, "up.kdl", "results/z3", &["step=0", "base=11"], 0);
    assert_eq!(
        compare_json(p, "results/z1", "results/z2")["rows"][0]["verdict"],
        "no significant change"
    );
    let z = compare_json(p, "results/z1", "results/z3");
    assert_eq!(z["rows"][0]["verdict"], "better");
    assert_eq!(z["rows"][0]["ci_pct"], serde_json::json!([10.0, 10.0]));
    // n = 1: a change, no interval, never significant
    run(p, "up.kdl", "results/n1", &["repeat=1"], 0);
    run(p, "up.kdl", "results/n2", &["repeat=1", "base=50"], 0);
    let n = compare_json(p, "results/n1", "results/n2");
    assert_eq!(n["rows"][0]["verdict"], "n=1, no interval");
    assert_eq!(n["rows"][0]["significant"], false);
    // no direction: a significant change is only "changed"
    std::fs::write(p.join("any.kdl"), bench("", "")).unwrap();
    run(p, "any.kdl", "results/g", &[], 0);
    run(p, "any.kdl", "results/h", &["base=15"], 0);
    assert_eq!(
        compare_json(p, "results/g", "results/h")["rows"][0]["verdict"],
        "changed (direction unknown)"
    );
    // points matched by lane and axis values; the rest listed
    std::fs::write(
        p.join("more.kdl"),
        bench(" direction=\"higher\"", "    lane y\n    sweep step 1 2\n"),
    )
    .unwrap();
    run(p, "more.kdl", "results/m", &[], 0);
    // nothing in common: said with both lists, and not exit 0
    let m = Test::new()
        .dir(p)
        .args(["compare", "results/a", "results/m", "--format", "json"])
        .run()
        .status(2);
    assert!(
        m.stderr.contains("only in A: b x\n")
            && m.stderr
                .contains("only in B: b x step=1, b y step=1, b x step=2, b y step=2"),
        "{}",
        m.stderr
    );
}

#[test]
fn an_unmet_expectation_fails_the_run_with_exit_6_and_is_shown() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let exp = bench(
        " direction=\"higher\"",
        "    lane y base=30\n    expect y over x speedup min=2\n    expect x v max=11\n    expect-log lacks=\"Traceback\"\n    expect-log y contains=\"v=3\"\n",
    );
    std::fs::write(p.join("e.kdl"), &exp).unwrap();
    let ran = run(p, "e.kdl", "results/e", &[], 0);
    // x: mean 11 ≤ 11 passes; y over x: 31 / 11 = 2.818 passes; the logs hold no Traceback
    // and y's say v=3…: every expectation is met
    assert!(!ran.stderr.contains("expect not met"), "{}", ran.stderr);
    let exp2 = exp.replace("max=11", "max=10.5");
    std::fs::write(p.join("e2.kdl"), &exp2).unwrap();
    let ran = run(
        p,
        "e2.kdl",
        "results/e2",
        &[],
        expr::util::exit_codes::EXPECTATION,
    );
    assert!(
        ran.stderr
            .contains("expect not met: expect \"x\" \"v\" max=10.5")
            && ran.stderr.contains("at x: mean 11.0000 (n=3)"),
        "{}",
        ran.stderr
    );
    let summary = std::fs::read_to_string(p.join("results/e2/summary.md")).unwrap();
    assert!(
        summary.contains("## Expectations (expect): 1 of 11 not met"),
        "{summary}"
    );
    assert!(
        summary.contains("| ✓ | `expect \"y\" over \"x\" speedup min=2.0` | y | 2.818× over x |"),
        "{summary}"
    );
    assert!(
        summary.contains("| ✗ | `expect \"x\" \"v\" max=10.5` | x | mean 11.0000 (n=3) |"),
        "{summary}"
    );
    assert!(summary.contains("| ✓ | `expect-log \"y\" contains=\"v=3\"` | y_r0 | found at logs/run1-y_r0-local.log:1 |"), "{summary}");
    // `expr report` judges again, with the same code
    Test::new()
        .dir(p)
        .args(["report", "results/e2"])
        .run()
        .status(expr::util::exit_codes::EXPECTATION);
    // in Chinese: what was found is said in Chinese, its numbers and paths as they are (the
    // terminal keeps English)
    let zh = Test::new()
        .dir(p)
        .args(["report", "results/e2", "--lang", "zh"])
        .run()
        .status(expr::util::exit_codes::EXPECTATION);
    assert!(
        zh.stderr.contains("at x: mean 11.0000 (n=3)"),
        "{}",
        zh.stderr
    );
    let summary = std::fs::read_to_string(p.join("results/e2/summary.md")).unwrap();
    for want in [
        "| y | 相对 x 为 2.818× |",
        "| x | 均值 11.0000（n=3） |",
        "| y_r0 | 见于 logs/run1-y_r0-local.log:1 |",
    ] {
        assert!(summary.contains(want), "lacks {want}\n{summary}");
    }
    assert!(
        !summary.contains("found at")
            && !summary.contains("× over")
            && !summary.contains("mean 11"),
        "{summary}"
    );
    Test::new()
        .dir(p)
        .args(["report", "results/e2"])
        .run()
        .status(expr::util::exit_codes::EXPECTATION);
    // units are checked before anything runs: wall_ms is in ms
    std::fs::write(
        p.join("unit.kdl"),
        exp.replace("expect x v max=11", "expect x wall_ms max=5 unit=\"s\""),
    )
    .unwrap();
    let c = Test::new()
        .dir(p)
        .args(["check", "unit.kdl"])
        .run()
        .status(2);
    assert!(
        c.stderr
            .contains("`wall_ms` is in ms, but the `expect` bounds are in s"),
        "{}",
        c.stderr
    );
    std::fs::write(
        p.join("unit2.kdl"),
        exp.replace("expect x v max=11", "expect x wall_ms max=5000 unit=\"ms\""),
    )
    .unwrap();
    Test::new()
        .dir(p)
        .args(["check", "unit2.kdl"])
        .run()
        .status(0);
    // names are checked before anything runs
    std::fs::write(p.join("bad.kdl"), exp.replace("over x", "over xx")).unwrap();
    let c = Test::new()
        .dir(p)
        .args(["check", "bad.kdl"])
        .run()
        .status(2);
    assert!(
        c.stderr.contains("`expect` names the lane `xx`") && c.stderr.contains("did you mean `x`?"),
        "{}",
        c.stderr
    );
}

/// `expr history` lists a sweep's points in the experiment's order, as the reports do (`n=10`
/// came between `n=1` and `n=2`: the database was read in text order).
#[test]
fn history_lists_a_sweeps_points_in_the_experiments_order() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("h.kdl"), bench("", "    sweep step 1 2 10\n")).unwrap();
    run(p, "h.kdl", "results/r1", &[], 0);
    let h = Test::new()
        .dir(p)
        .args(["history", "cmp", "--format", "json"])
        .run()
        .status(0);
    let v: Value = serde_json::from_str(&h.stdout).unwrap();
    let axes: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["axes"].as_str())
        .collect();
    assert_eq!(axes, ["step=1", "step=2", "step=10"], "{v}");
}

#[test]
fn every_run_registers_in_the_history_which_lists_imports_and_feeds_ls() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("h.kdl"),
        bench(" direction=\"higher\"", "    sweep step 1 2\n"),
    )
    .unwrap();
    run(p, "h.kdl", "results/r1", &[], 0);
    run(p, "h.kdl", "results/r2", &["base=20"], 0);
    let db = p.join("results/.expr-history.sqlite");
    assert!(db.is_file());
    let h = Test::new()
        .dir(p)
        .args(["history", "cmp", "--where", "step=2", "--format", "json"])
        .run()
        .status(0);
    let v: Value = serde_json::from_str(&h.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    // 10 12 14 then 20 22 24, oldest first, with a t interval: 12 ± 4.303 × 2 / √3
    assert_eq!(rows[0]["mean"], 12.0);
    assert_eq!(rows[1]["mean"], 22.0);
    let (lo, hi) = (
        rows[0]["ci"][0].as_f64().unwrap(),
        rows[0]["ci"][1].as_f64().unwrap(),
    );
    assert!(
        (lo - (12.0 - 4.9687)).abs() < 1e-3 && (hi - (12.0 + 4.9687)).abs() < 1e-3,
        "{lo} {hi}"
    );
    // the history writes no file unless asked: `--svg` names the chart's
    let entries: Vec<String> = std::fs::read_dir(p.join("results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg") || n.ends_with(".html"))
        .collect();
    assert!(entries.is_empty(), "{entries:?}");
    Test::new()
        .dir(p)
        .args(["history", "cmp", "--where", "step=2", "--svg", "trend.svg"])
        .run()
        .status(0);
    assert!(std::fs::read_to_string(p.join("trend.svg"))
        .unwrap()
        .starts_with("<svg"));
    // another metric of the same runs
    let w = Test::new()
        .dir(p)
        .args(["history", "cmp", "--metric", "wall_ms"])
        .run()
        .status(0);
    assert_eq!(
        w.stdout
            .lines()
            .filter(|l| l.contains("| wall_ms |"))
            .count(),
        4,
        "{}",
        w.stdout
    );
    // --baseline last-ok: the newest other ok run
    let c = Test::new()
        .dir(p)
        .args([
            "compare",
            "--baseline",
            "last-ok",
            "results/r2",
            "--format",
            "json",
        ])
        .run()
        .status(0);
    let c: Value = serde_json::from_str(&c.stdout).unwrap();
    assert!(
        c["a"]["dir"].as_str().unwrap().ends_with("results/r1"),
        "{c}"
    );
    // import: result directories made before (or elsewhere) into another database
    let other = p.join("elsewhere.sqlite");
    Test::new()
        .dir(p)
        .args([
            "history",
            "--import",
            "results/r1",
            "results/r2",
            "--history",
            other.to_str().unwrap(),
        ])
        .run()
        .status(0);
    let h = Test::new()
        .dir(p)
        .env("EXPR_HISTORY", other.to_str().unwrap())
        .args(["history", "cmp", "--format", "json"])
        .run()
        .status(0);
    assert_eq!(
        serde_json::from_str::<Value>(&h.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        4
    );
    // `expr ls` reads the index: a result directory outside the listed one is found through it
    Test::new()
        .dir(p)
        .args([
            "run",
            "h.kdl",
            "--output",
            "far/r3",
            "--history",
            db.to_str().unwrap(),
        ])
        .run()
        .status(0);
    let ls = Test::new().dir(p).args(["ls"]).run().status(0);
    assert!(ls.stdout.contains("far/r3"), "{}", ls.stdout);
    // `expr ls DIR`: DIR's runs only, not the history's others (another project's, far/)
    let only = Test::new().dir(p).args(["ls", "results"]).run().status(0);
    assert!(!only.stdout.contains("far/r3"), "{}", only.stdout);
    assert!(only.stdout.contains("results/r1"), "{}", only.stdout);
    let far = Test::new().dir(p).args(["ls", "far"]).run().status(0);
    assert!(
        far.stdout.contains("far/r3") && !far.stdout.contains("results/r1"),
        "{}",
        far.stdout
    );
    // an unusable database never fails a run
    std::fs::write(p.join("broken.sqlite"), "not a database").unwrap();
    let r = Test::new()
        .dir(p)
        .env("EXPR_HISTORY", p.join("broken.sqlite").to_str().unwrap())
        .args(["run", "h.kdl", "--output", "results/r4"])
        .run()
        .status(0);
    assert!(
        r.stderr
            .contains("warning: the run was not added to the history"),
        "{}",
        r.stderr
    );
}

#[test]
fn concurrent_runs_write_one_history_and_none_is_lost() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("c.kdl"), bench(" direction=\"higher\"", "")).unwrap();
    let db = p.join("shared.sqlite");
    let exe = env!("CARGO_BIN_EXE_expr");
    let kids: Vec<std::process::Child> = (0..8)
        .map(|i| {
            std::process::Command::new(exe)
                .args(["run", "c.kdl", "--output", &format!("results/c{i}")])
                .env("EXPR_HISTORY", &db)
                .current_dir(p)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for k in kids {
        let o = k.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("not added"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let h = Test::new()
        .dir(p)
        .env("EXPR_HISTORY", db.to_str().unwrap())
        .args(["history", "cmp", "--format", "json"])
        .run()
        .status(0);
    let v: Value = serde_json::from_str(&h.stdout).unwrap();
    let dirs: std::collections::BTreeSet<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["result_dir"].as_str().unwrap())
        .collect();
    assert_eq!(dirs.len(), 8, "{v}");
}

/// Edges found by review: non-finite values in the file, a log whose match is past 64 MiB, the
/// regression gate's limits and a zero baseline, a baseline that was deleted or is newer, and axis
/// values holding `,` and `=`.
#[test]
fn compare_history_and_expect_hold_at_their_edges() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // #inf in the file survives the journal's copy: the expectation is judged, exit 6
    std::fs::write(
        p.join("inf.kdl"),
        "experiment pinf\nbench b {\n    param big #inf\n    run \"echo v=1 {{ big }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane x\n    repeat 1\n    expect x v max=0\n}\n",
    )
    .unwrap();
    run(
        p,
        "inf.kdl",
        "results/inf",
        &[],
        expr::util::exit_codes::EXPECTATION,
    );
    assert!(p.join("results/inf/summary.md").is_file());
    // a NaN bound is no bound
    std::fs::write(p.join("nan.kdl"), bench("", "    expect x v min=#nan\n")).unwrap();
    Test::new()
        .dir(p)
        .args(["check", "nan.kdl"])
        .run()
        .status(2);
    // lacks= finds a match at the end of a 66 MiB log
    std::fs::write(
        p.join("big.kdl"),
        "experiment big\nbench b {\n    run \"head -c 69206016 /dev/zero | tr '\\\\0' a | fold -w 4096; echo; echo v=1 Traceback here\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane x\n    repeat 1\n    expect-log lacks=\"Traceback\"\n}\n",
    )
    .unwrap();
    let r = run(
        p,
        "big.kdl",
        "results/big",
        &[],
        expr::util::exit_codes::EXPECTATION,
    );
    assert!(
        r.stderr
            .contains("expect not met: expect-log lacks=\"Traceback\""),
        "{}",
        r.stderr
    );
    std::fs::remove_dir_all(p.join("results/big")).unwrap();
    // the gate: a NaN or negative limit is refused; a regression from a zero baseline is one
    std::fs::write(
        p.join("z.kdl"),
        bench(" direction=\"lower\"", "").replace("experiment cmp", "experiment zero"),
    )
    .unwrap();
    run(p, "z.kdl", "results/z0", &["base=0", "step=0"], 0);
    run(p, "z.kdl", "results/z5", &["base=5", "step=0"], 0);
    for bad in ["NaN", "-5"] {
        Test::new()
            .dir(p)
            .args([
                "compare",
                "results/z0",
                "results/z5",
                &format!("--fail-on-regression={bad}"),
            ])
            .run()
            .status(2);
    }
    let g = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/z0",
            "results/z5",
            "--fail-on-regression",
            "10",
        ])
        .run()
        .status(expr::util::exit_codes::REGRESSION);
    assert!(g.stderr.contains("from a zero baseline"), "{}", g.stderr);
    // last-ok: older than B, and still on disk
    std::fs::write(p.join("l.kdl"), bench(" direction=\"higher\"", "")).unwrap();
    for r in ["l1", "l2", "l3"] {
        run(p, "l.kdl", &format!("results/{r}"), &[], 0);
    }
    std::fs::remove_dir_all(p.join("results/l2")).unwrap();
    let c = last_ok_json(p, "results/l3");
    // A as B is given: relative to here (the history keeps it absolute)
    assert_eq!(c["a"]["dir"], "results/l1", "{c}");
    assert_eq!(c["b"]["dir"], "results/l3", "{c}");
    let none = Test::new()
        .dir(p)
        .args(["compare", "--baseline", "last-ok", "results/l1"])
        .run()
        .status(2);
    // (it said "no other run", with l2 and l3 after it)
    assert!(
        none.stderr
            .contains("no run of `cmp` before B that ended ok"),
        "{}",
        none.stderr
    );
    // the runs before B are registered but gone: said so (it said there was no other run)
    std::fs::rename(p.join("results/l1"), p.join("l1-moved")).unwrap();
    let gone = Test::new()
        .dir(p)
        .args(["compare", "--baseline", "last-ok", "results/l3"])
        .run()
        .status(2);
    assert!(
        gone.stderr
            .contains("before B that ended ok and is still there: 2 have no directory now (")
            && gone.stderr.contains("results/l2")
            && gone.stderr.contains("results/l1")
            && gone
                .stderr
                .contains("`expr report DIR` in a moved one registers it where it is"),
        "{}",
        gone.stderr
    );
    std::fs::rename(p.join("l1-moved"), p.join("results/l1")).unwrap();
    // runs started in other time zones are ordered by the instant, not by their text: t1 in
    // Tokyo (`…T14:…+09:00`) is before t2 in UTC (`…T05:…+00:00`), whose text sorts first
    std::fs::write(
        p.join("t.kdl"),
        bench(" direction=\"higher\"", "").replace("experiment cmp", "experiment tz"),
    )
    .unwrap();
    for (r, tz) in [("t1", "JST-9"), ("t2", "UTC0")] {
        Test::new()
            .dir(p)
            .env("TZ", tz)
            .args(["run", "t.kdl", "--output", &format!("results/{r}")])
            .run()
            .status(0);
    }
    let c = last_ok_json(p, "results/t2");
    assert_eq!(c["a"]["dir"], "results/t1", "{c}");
    let h = Test::new()
        .dir(p)
        .args(["history", "tz", "--format", "json"])
        .run()
        .status(0);
    let first = |d: &str| h.stdout.find(d).unwrap_or(usize::MAX);
    assert!(first("results/t1") < first("results/t2"), "{}", h.stdout);
    // axis values with `,` and `=` are matched whole
    std::fs::write(
        p.join("w.kdl"),
        "experiment commas\nbench b {\n    param mode \"a\"\n    run \"echo v=1 {{ mode }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane x\n    sweep mode \"p|q\" \"r,s=t\"\n    repeat 1\n}\n",
    )
    .unwrap();
    run(p, "w.kdl", "results/w", &[], 0);
    let h = Test::new()
        .dir(p)
        .args(["history", "commas", "--where", "mode=r,s=t"])
        .run()
        .status(0);
    assert_eq!(
        h.stdout.lines().filter(|l| l.contains("| v |")).count(),
        1,
        "{}",
        h.stdout
    );
    let all = Test::new()
        .dir(p)
        .args(["history", "commas"])
        .run()
        .status(0);
    assert!(all.stdout.contains("mode=p\\|q"), "{}", all.stdout);
}

/// The history under faults: a read never creates a database; a database on read-only media is
/// still read; a file that is not a database, or a damaged one, is exit 1 with the line that
/// rebuilds it, from every command that touches it (`ls` says so too).
#[test]
fn the_history_reads_read_only_never_creates_and_names_damage_with_the_rebuild() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("e.kdl"), bench("", "")).unwrap();
    // no database: compare --baseline last-ok says so and creates nothing
    run(d.path(), "e.kdl", "results/b", &[], 0);
    let db = d.path().join("results/.expr-history.sqlite");
    std::fs::remove_file(&db).unwrap();
    for f in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(d.path().join(format!("results/.expr-history.sqlite{f}")));
    }
    let r = Test::new()
        .dir(d.path())
        .args(["compare", "--baseline", "last-ok", "results/b"])
        .run();
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(r.stderr.contains("no history database at"), "{}", r.stderr);
    assert!(!db.exists(), "a read created the database");
    // two runs registered; then the directory is read-only (a remount here): still read
    run(d.path(), "e.kdl", "results/a", &[], 0);
    run(d.path(), "e.kdl", "results/c", &[], 0);
    let ro = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["--bind"])
        .arg(d.path().join("results"))
        .arg(ro.path())
        .status()
        .is_ok_and(|s| s.success())
        && std::process::Command::new("mount")
            .args(["-o", "remount,bind,ro"])
            .arg(ro.path())
            .status()
            .is_ok_and(|s| s.success());
    if mounted {
        let h = Test::new()
            .dir(d.path())
            .args(["history", "cmp", "--history"])
            .arg_path(&ro.path().join(".expr-history.sqlite"))
            .run();
        let _ = std::process::Command::new("umount").arg(ro.path()).status();
        assert_eq!(h.status, 0, "{}", h.stderr);
        assert!(
            h.stdout.contains("results/a") || h.stdout.contains("/a"),
            "{}",
            h.stdout
        );
    } else {
        common::skip("cannot bind-mount read-only (needs root)");
    }
    // garbage: exit 1 (not 2, which is the command line's), with the rebuild line
    let junk = d.path().join("junk.sqlite");
    std::fs::write(&junk, vec![0x5au8; 8192]).unwrap();
    let h = Test::new()
        .dir(d.path())
        .args(["history", "cmp", "--history"])
        .arg_path(&junk)
        .run();
    assert_eq!(h.status, 1, "{}", h.stderr);
    assert!(
        h.stderr.contains("is damaged or not a database")
            && h.stderr.contains("expr history --import"),
        "{}",
        h.stderr
    );
    // an empty file, or another program's database: said so, not "no such table: runs"
    let empty = d.path().join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    let h = Test::new()
        .dir(d.path())
        .args(["history", "cmp", "--history"])
        .arg_path(&empty)
        .run();
    assert_eq!(h.status, 1, "{}", h.stderr);
    assert!(
        h.stderr
            .contains("empty.sqlite is not an expr history database (the file is empty)"),
        "{}",
        h.stderr
    );
    // a damaged page in a real database: found before anything is written to it
    let bad = d.path().join("bad.sqlite");
    std::fs::copy(&db, &bad).unwrap();
    {
        let c = rusqlite::Connection::open(&bad).unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;")
            .unwrap();
    }
    let mut bytes = std::fs::read(&bad).unwrap();
    let page = 4096;
    assert!(bytes.len() > 2 * page);
    for b in &mut bytes[page + 100..2 * page] {
        *b = 0xff;
    }
    std::fs::write(&bad, &bytes).unwrap();
    for args in [
        vec!["history", "cmp", "--history", bad.to_str().unwrap()],
        vec![
            "history",
            "--import",
            "results/a",
            "--history",
            bad.to_str().unwrap(),
        ],
    ] {
        let h = Test::new().dir(d.path()).args(&args).run();
        assert_eq!(h.status, 1, "{args:?}: {}", h.stderr);
        assert!(
            h.stderr.contains("is damaged or not a database"),
            "{args:?}: {}",
            h.stderr
        );
    }
    let ls = Test::new()
        .dir(d.path())
        .args(["ls", "--history", bad.to_str().unwrap()])
        .run();
    assert!(
        ls.stderr.contains("the history is not read") && ls.stderr.contains("damaged"),
        "{}",
        ls.stderr
    );
}

/// `expr ls` counts a point the report found no numbers for as not ok, and lists nothing
/// (exit 0) where no results/ exists yet.
#[test]
fn ls_counts_no_data_points_and_takes_a_missing_results_dir() {
    let d = tempfile::tempdir().unwrap();
    let empty = Test::new().dir(d.path()).args(["ls"]).run();
    assert_eq!(empty.status, 0, "{}", empty.stderr);
    std::fs::write(
        d.path().join("e.kdl"),
        "experiment nd\nbench b {\n    run \"echo nothing\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    repeat 2\n}\n",
    )
    .unwrap();
    run(d.path(), "e.kdl", "results/nd", &[], 3);
    let ls = Test::new()
        .dir(d.path())
        .args(["ls", "--format", "json"])
        .run()
        .status(0);
    let v: Value = serde_json::from_str(&ls.stdout).unwrap();
    let e = &v[0];
    assert_eq!(
        (e["ok"].as_i64(), e["failed"].as_i64()),
        (Some(0), Some(2)),
        "{e}"
    );
}

/// `expr ls` of a run a Ctrl-C stopped in its first point's client: the point that was stopped
/// and the two never started are missing (`--resume` runs them), not failed (it said `0/1/2`;
/// stopped during the build, `0/3/0` from the manifest's `not run: interrupted` rows).
#[test]
fn ls_counts_points_a_signal_stopped_or_never_started_as_missing() {
    let d = tempfile::tempdir().unwrap();
    for (name, build) in [("client", ""), ("build", "    build \"sleep 30\"\n")] {
        std::fs::write(
            d.path().join("e.kdl"),
            format!("experiment sig\nhost local repo=\"{}\"\nbench b {{\n{build}    param n 1\n    run \"sleep 30; true {{{{ n }}}}\"\n    sweep n 1 2 3\n}}\n", d.path().display()),
        )
        .unwrap();
        let out = format!("results/{name}");
        // (the project's history, as `Test` runs `ls`, not one the suite's environment names)
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
            .args(["run", "e.kdl", "--output", &out, "--grace", "1"])
            .current_dir(d.path())
            .env_remove("EXPR_HISTORY")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !common::journal(&d.path().join(&out))
            .iter()
            .any(|e| e["event"] == "process")
        {
            assert!(std::time::Instant::now() < end, "{name}: nothing started");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        assert_eq!(child.wait().unwrap().code(), Some(130), "{name}");
        // the runs under results/ (`ls DIR` lists the runs under DIR)
        let ls = Test::new()
            .dir(d.path())
            .args(["ls", "results", "--format", "json"])
            .run()
            .status(0);
        let v: Value = serde_json::from_str(&ls.stdout).unwrap();
        let e = v
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["dir"].as_str().is_some_and(|d| d.ends_with(&out)))
            .cloned()
            .unwrap_or_default();
        let e = &e;
        assert_eq!(
            (
                e["ok"].as_i64(),
                e["failed"].as_i64(),
                e["missing"].as_i64(),
                e["status"].as_str()
            ),
            (Some(0), Some(0), Some(3), Some("interrupted")),
            "{name}: {e}"
        );
    }
}

/// A point whose log no longer gives a number (`expr report` says no-data, exits 3) makes the
/// run `failed` in `expr ls` and the history, and the history holds the numbers the report
/// found (it said `3/1/0 ok` and kept n=2 until `--import`); and a point a failed test never
/// let start is missing, not failed (`0/0/2`, where it said `0/2/0`) (helpers 62, 63).
#[test]
fn ls_and_history_say_what_the_report_found_and_never_started_points_are_missing() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("tiny.kdl"),
        "experiment tiny\nbench t {\n    param x 1\n    run \"echo v={{ x }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    sweep x 1 2\n    repeat 2\n}\n",
    )
    .unwrap();
    run(p, "tiny.kdl", "results/tiny", &[], 0);
    std::fs::write(p.join("results/tiny/logs/run1-t_x1_r0-local.log"), "").unwrap();
    Test::new()
        .dir(p)
        .args(["report", "results/tiny"])
        .run()
        .status(3);
    let ls = |name: &str| -> Value {
        let out = Test::new()
            .dir(p)
            .args(["ls", "results", "--format", "json"])
            .run()
            .status(0);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .find(|e| e["dir"].as_str().is_some_and(|d| d.ends_with(name)))
            .cloned()
            .unwrap_or_default()
    };
    let counts = |e: &Value| {
        (
            e["ok"].as_i64(),
            e["failed"].as_i64(),
            e["missing"].as_i64(),
            e["status"].as_str().map(str::to_string),
        )
    };
    let e = ls("tiny");
    assert_eq!(
        counts(&e),
        (Some(3), Some(1), Some(0), Some("failed".into())),
        "{e}"
    );
    let h = Test::new()
        .dir(p)
        .args(["history", "tiny", "--format", "json"])
        .run()
        .status(0);
    let rows: Value = serde_json::from_str(&h.stdout).unwrap();
    let x1 = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["axes"] == "x=1")
        .unwrap();
    assert_eq!(
        (&x1["n"], &x1["status"]),
        (&serde_json::json!(1), &serde_json::json!("failed")),
        "{x1}"
    );
    // a failed correctness test: the points never started
    std::fs::write(
        p.join("t.kdl"),
        "experiment nt\nbench t {\n    param x 1\n    test \"exit 1\"\n    run \"echo v={{ x }}\"\n    sweep x 1 2\n}\n",
    )
    .unwrap();
    run(p, "t.kdl", "results/nt", &[], 3);
    let e = ls("nt");
    assert_eq!(
        counts(&e),
        (Some(0), Some(0), Some(2), Some("failed".into())),
        "{e}"
    );
    // a run in a history of its own: `report --history` updates that one (helper 64)
    Test::new()
        .dir(p)
        .args([
            "run",
            "tiny.kdl",
            "--output",
            "results/own",
            "--history",
            "own.sqlite",
        ])
        .run()
        .status(0);
    std::fs::write(p.join("results/own/logs/run1-t_x1_r0-local.log"), "").unwrap();
    Test::new()
        .dir(p)
        .args(["report", "results/own", "--history", "own.sqlite"])
        .run()
        .status(3);
    let h = Test::new()
        .dir(p)
        .args([
            "history",
            "tiny",
            "--history",
            "own.sqlite",
            "--format",
            "json",
        ])
        .run()
        .status(0);
    let rows: Value = serde_json::from_str(&h.stdout).unwrap();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "failed"),
        "{rows}"
    );
    // an empty directory: the same (helper 64)
    std::fs::create_dir(p.join("results/empty")).unwrap();
    let r = Test::new()
        .dir(p)
        .args(["report", "results/empty"])
        .run()
        .status(2);
    assert_eq!(
        r.stderr,
        "error: results/empty: not a result directory (it has no journal.jsonl)\n"
    );
    // no directory: one error, no warning about a manifest before it
    let r = Test::new()
        .dir(p)
        .args(["report", "results/nope"])
        .run()
        .status(2);
    assert_eq!(r.stderr, "error: results/nope: no such directory\n");
}

/// A run registers in the history as it starts: `expr ls` lists it while it runs and after a
/// `kill -9`, though its `--output` is not under results/ (it was listed only once it ended).
#[test]
fn ls_lists_a_running_or_killed_run_outside_results() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("results")).unwrap();
    std::fs::write(
        d.path().join("e.kdl"),
        format!(
            "experiment away\nhost local repo=\"{}\"\nbench b {{\n    run \"sleep 30\"\n}}\n",
            d.path().display()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_expr"))
        .args(["run", "e.kdl", "--output", "elsewhere/r"])
        .current_dir(d.path())
        .env_remove("EXPR_HISTORY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = d.path().join("elsewhere/r");
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !common::journal(&out)
        .iter()
        .any(|e| e["event"] == "process")
    {
        assert!(std::time::Instant::now() < end, "nothing started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let listed = |when: &str| {
        let ls = Test::new()
            .dir(d.path())
            .args(["ls", "--format", "json"])
            .run()
            .status(0);
        let v: Value = serde_json::from_str(&ls.stdout).unwrap();
        let e = v
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["dir"]
                    .as_str()
                    .is_some_and(|d| d.ends_with("elsewhere/r"))
            })
            .cloned();
        assert!(e.is_some(), "{when}: not listed: {v}");
        e.unwrap()
    };
    assert_eq!(listed("running")["status"], "running");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(listed("killed")["status"], "incomplete");
    // what the killed run left, its sentinel stops; `expr stop` makes sure
    Test::new()
        .dir(d.path())
        .args(["stop", "elsewhere/r"])
        .run();
}

/// `expr compare` of a directory that does not exist, or holds no journal, says that (it said
/// "no journal header").
#[test]
fn compare_names_a_missing_or_foreign_directory() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("notes")).unwrap();
    let r = Test::new()
        .dir(d.path())
        .args(["compare", "results/nope", "notes"])
        .run();
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("results/nope: no such result directory"),
        "{}",
        r.stderr
    );
    let r = Test::new()
        .dir(d.path())
        .args(["compare", "notes", "notes"])
        .run();
    assert!(
        r.stderr
            .contains("notes: not a result directory (it has no journal.jsonl)"),
        "{}",
        r.stderr
    );
}

/// The history is the project's, found from anywhere in it: a run written to an `--output`
/// outside the project, started from a subdirectory, is in the history `expr history` reads at
/// the project's top (it went beside the output and was not seen).
#[test]
fn the_history_is_the_projects_whatever_the_output_and_the_directory() {
    let d = tempfile::tempdir().unwrap();
    let proj = d.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(proj.join("bench/sub")).unwrap();
    std::fs::write(proj.join("bench/sub/e.kdl"), bench("", "")).unwrap();
    let elsewhere = d.path().join("scratch/run1");
    let r = Test::new()
        .dir(&proj.join("bench/sub"))
        .args(["run", "e.kdl", "--output"])
        .arg_path(&elsewhere)
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(proj.join("results/.expr-history.sqlite").is_file());
    assert!(!d.path().join("scratch/.expr-history.sqlite").exists());
    let h = Test::new().dir(&proj).args(["history", "cmp"]).run();
    assert_eq!(h.status, 0, "{}", h.stderr);
    assert!(h.stdout.contains("scratch/run1"), "{}", h.stdout);
}

/// A throughput with a wide spread: the interval of the change stays above −100 % (the
/// difference of means over a mean gave `-125.42 … -7.77 %`). A: 100 1000 3000, B: 50 60 70:
/// −95.61 %, log-scale interval −99.68 … −39.98 % (independent script).
#[test]
fn compare_intervals_of_a_ratio_stay_above_minus_100_percent() {
    let d = tempfile::tempdir().unwrap();
    let kdl = |vals: &str| {
        format!(
            "experiment tp\nbench b {{\n    run #\"python3 -c \"print('v=' + [{vals}][{{{{ repeat }}}}])\"\"#\n    collect regex pattern=\"v=([0-9]+)\" direction=\"higher\"\n    repeat 3\n}}\n"
        )
    };
    std::fs::write(d.path().join("a.kdl"), kdl("'100', '1000', '3000'")).unwrap();
    std::fs::write(d.path().join("b.kdl"), kdl("'50', '60', '70'")).unwrap();
    run(d.path(), "a.kdl", "results/a", &[], 0);
    run(d.path(), "b.kdl", "results/b", &[], 0);
    let c = compare_json(d.path(), "results/a", "results/b");
    let r = &c["rows"][0];
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 0.01;
    assert!(close(&r["delta_pct"], -95.61), "{r}");
    assert!(
        close(&r["ci_pct"][0], -99.68) && close(&r["ci_pct"][1], -39.98),
        "{r}"
    );
    assert_eq!(r["verdict"], "worse");
    let md = Test::new()
        .dir(d.path())
        .args(["compare", "results/a", "results/b"])
        .run()
        .status(0)
        .stdout;
    assert!(
        md.contains("| 1.37K (3) | 60.00 (3) |"),
        "numbers by the report's rule: {md}"
    );
}

/// B lost 2 of a point's 3 repeats (no data) and its one value is +100 %: the gate fails on
/// the loss (exit 5) and names the points, where it passed ✅ with "n=1, no interval"
/// (helper 49: only a row B had no value at all for was a loss).
#[test]
fn a_gate_fails_when_b_lost_some_of_the_repeats_a_measured() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("l.kdl"),
        "experiment cmp\nbench b {\n    param base 100\n    param upto 3\n    run \"test {{ repeat }} -lt {{ upto }} && echo v={{ base }} || echo nothing\"\n    collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"lower\"\n    lane x\n    repeat 3\n}\n",
    )
    .unwrap();
    run(p, "l.kdl", "results/a", &[], 0);
    run(p, "l.kdl", "results/b", &["base=200", "upto=1"], 3);
    let r = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/a",
            "results/b",
            "--fail-on-regression",
            "5",
        ])
        .run()
        .status(5);
    assert!(
        r.stderr.contains("lost: b x v: no data in B for x_r1, x_r2: A measured 3 value(s), B 1 (its points: 2 no-data, 1 ok)"),
        "{}",
        r.stderr
    );
    // without a gate: said, as a note
    let r = Test::new()
        .dir(p)
        .args(["compare", "results/a", "results/b"])
        .run();
    assert!(
        r.stderr
            .contains("note: b x v: no data in B for x_r1, x_r2"),
        "{}",
        r.stderr
    );
}

/// Exactly +5 % on two lanes against `--fail-on-regression 5`: neither is beyond it (1 → 1.05
/// computes +5.000000000000004 %, and failed the gate; 3 → 3.15 +4.9999999999999964 %).
#[test]
fn a_change_exactly_at_the_gates_limit_passes_whatever_the_float_rounding() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("g.kdl"),
        "experiment cmp\nbench b {\n    param v 1\n    param mult 1.0\n    run \"echo v={{ v * mult }}\"\n    collect \"regex\" pattern=\"v=([0-9.]+)\" direction=\"lower\"\n    lane p v=1\n    lane q v=3\n    repeat 3\n}\n",
    )
    .unwrap();
    run(p, "g.kdl", "results/a", &[], 0);
    run(p, "g.kdl", "results/b", &["mult=1.05"], 0);
    let r = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/a",
            "results/b",
            "--fail-on-regression",
            "5",
        ])
        .run()
        .status(0);
    assert!(!r.stderr.contains("regression:"), "{}", r.stderr);
    // beyond by a hair: said with the digits that show it
    let r = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/a",
            "results/b",
            "--fail-on-regression",
            "4.99",
        ])
        .run()
        .status(5);
    assert!(
        r.stderr
            .contains("regression: b p v: +5.00 % (limit 4.99 %)"),
        "{}",
        r.stderr
    );
}

/// The same metric in two units (a timed `time_ms` in ms; a regex's `time_ms`, in seconds as
/// the step prints it, of no unit): not comparable, said, and the gate fails over it, where
/// it read −99.95 % "faster" (helper 49).
#[test]
fn a_metric_in_two_units_is_not_comparable() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let kdl = |collect: &str| {
        format!("experiment cmp\nbench b {{\n    run \"echo 0.025\"\n{collect}    lane x\n    repeat 2\n}}\n")
    };
    std::fs::write(p.join("t.kdl"), kdl("")).unwrap();
    std::fs::write(
        p.join("r.kdl"),
        kdl("    collect \"regex\" pattern=\"(?P<time_ms>[0-9.]+)\"\n"),
    )
    .unwrap();
    run(p, "t.kdl", "results/t", &[], 0);
    run(p, "r.kdl", "results/r", &[], 0);
    let r = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/t",
            "results/r",
            "--fail-on-regression",
            "5",
        ])
        .run()
        .status(expr::util::exit_codes::REGRESSION);
    assert!(
        r.stdout
            .contains("not comparable (the unit differs: A ms, B no unit)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("not comparable: b x time_ms: not comparable (the unit differs: A ms, B no unit): the gate cannot judge it"),
        "{}",
        r.stderr
    );
}

/// Two runs of different experiments have nothing in common: said, with what each side has,
/// and a non-zero exit (an empty table and 0 read as "no change"); a bad `--fail-on-regression`
/// is refused before anything is compared or printed.
#[test]
fn compare_of_two_unrelated_runs_says_so_and_a_bad_limit_is_refused_first() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("c.kdl"), bench("", "")).unwrap();
    std::fs::write(
        p.join("o.kdl"),
        bench("", "")
            .replace("experiment cmp", "experiment other")
            .replace("lane x", "lane y"),
    )
    .unwrap();
    run(p, "c.kdl", "results/c", &[], 0);
    run(p, "o.kdl", "results/o", &[], 0);
    let r = Test::new()
        .dir(p)
        .args(["compare", "results/c", "results/o"])
        .run()
        .status(2);
    assert!(
        r.stderr.contains(
            "error: results/c (`cmp`) and results/o (`other`) have no lane, point and metric in common: nothing to compare"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("only in A: b x") && r.stderr.contains("only in B: b y"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    // the same lanes, but each side collects another metric: every row "no data", which the
    // gate passed with ✅ and exit 0
    std::fs::write(
        p.join("w.kdl"),
        bench("", "").replace("pattern=\"v=([0-9]+)\"", "pattern=\"v=(?P<w>[0-9]+)\""),
    )
    .unwrap();
    run(p, "w.kdl", "results/w", &[], 0);
    let r = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/c",
            "results/w",
            "--fail-on-regression",
            "5",
            "--format",
            "github",
        ])
        .run()
        .status(2);
    assert!(
        r.stderr.contains("nothing to compare")
            && r.stderr
                .contains("without values on both sides: b x `v` (A: 3 values, B: none)"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let nan = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/c",
            "results/c",
            "--fail-on-regression",
            "nan",
        ])
        .run()
        .status(2);
    assert!(
        nan.stdout.is_empty(),
        "nothing compared or printed: {}",
        nan.stdout
    );
    assert!(
        nan.stderr
            .contains("--fail-on-regression takes a percentage"),
        "{}",
        nan.stderr
    );
}

/// A test's run in the checkout registers in the test's own history, never in the project's
/// `results/.expr-history.sqlite` (nor in a database the user's environment names).
#[test]
fn a_tests_run_in_the_checkout_leaves_the_projects_history_as_it_was() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let real = repo.join("results/.expr-history.sqlite");
    let stamp = |p: &Path| std::fs::read(p).ok();
    let before = (stamp(&real), stamp(&real.with_extension("sqlite-wal")));
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("b");
    Test::new()
        .args(["bench", "-r", "2", "true", "--output"])
        .arg_path(&out)
        .run()
        .status(0);
    assert_eq!(
        (stamp(&real), stamp(&real.with_extension("sqlite-wal"))),
        before,
        "the project's history changed"
    );
    let own = common::test_history();
    let c = rusqlite::Connection::open(&own).unwrap();
    let abs = std::fs::canonicalize(&out).unwrap().display().to_string();
    let n: i64 = c
        .query_row(
            "SELECT count(*) FROM runs WHERE result_dir = ?1",
            [abs],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        n,
        1,
        "the run is in the test's own history {}",
        own.display()
    );
}

/// One point whose value is the checkout's `level` with a deterministic ±2.8 % wobble (CV 2 %)
/// by the run's seed; seed 0 (a bisection's probes) gives the level itself.
const DRIFT: &str = r##"experiment drift {
    description "a planted step"
}
host local
bench b {
    param seed 0
    run #"python3 -c "import math,sys; i=int(sys.argv[1]); print('ms=%f' % (float(open('level').read())*(1+0.028*math.sin(i*2.4))))" {{ seed }}"#
    collect "regex" pattern="ms=(?P<time_ms>[0-9.]+)" metric="time_ms" direction="lower"
    lane fast
    repeat 1
}
"##;

fn git(dir: &Path, args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .args(["-c", "user.email=t@t", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Issue 41: a history of 40 real runs with a planted 5 % step at run 25 (noise CV 2 %), the
/// code changed between runs 24 and 25 by two commits: `--changes` names run 25, its level,
/// step and commit range, and `--bisect` hands that range to `expr bisect`, which finds the
/// commit that changed the level. A flat history of 40 runs has no change.
#[test]
fn history_changes_name_the_run_and_the_commits_of_a_planted_step_and_bisect_finds_it() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("e.kdl"), DRIFT).unwrap();
    std::fs::write(p.join("level"), "100").unwrap();
    std::fs::write(p.join(".gitignore"), "r*/\n*.sqlite*\nresults/\n").unwrap();
    git(p, &["init", "-q"]);
    git(p, &["add", "-A"]);
    git(p, &["commit", "-qm", "a"]);
    let db = p.join("h.sqlite");
    let run = |i: usize| {
        Test::new()
            .dir(p)
            .args(["run", "e.kdl", "-q", "--output", &format!("r{i}"), "--set"])
            .args([format!("seed={i}")])
            .args(["--history", db.to_str().unwrap()])
            .run()
            .status(0);
    };
    let mut good = String::new();
    let mut culprit = String::new();
    for i in 1..=40 {
        if i == 25 {
            good = git(p, &["rev-parse", "HEAD"]);
            // an unrelated commit, then the one that moves the level
            std::fs::write(p.join("README"), "x").unwrap();
            git(p, &["add", "-A"]);
            git(p, &["commit", "-qm", "unrelated"]);
            std::fs::write(p.join("level"), "105").unwrap();
            git(p, &["commit", "-qam", "slower"]);
            culprit = git(p, &["rev-parse", "HEAD"]);
        }
        run(i);
    }
    let h = |args: &[&str]| {
        Test::new()
            .dir(p)
            .args(["history", "drift"])
            .args(args)
            .args(["--history", db.to_str().unwrap()])
            .run()
    };
    let text = h(&["--changes"]).status(0).stdout;
    assert!(text.contains("1 change point(s) in 1 series"), "{text}");
    assert!(text.contains("from run 25 of 40"), "{text}");
    assert!(
        text.contains(&format!("commits: {}..{}", &good[..12], &culprit[..12])),
        "{text}"
    );
    assert!(
        text.contains(&format!("bisect: `expr bisect e.kdl --good {good} --bad {culprit} --metric time_ms --lane fast --only bench=b --history ")),
        "{text}"
    );
    let json: Value =
        serde_json::from_str(&h(&["--changes", "--format", "json"]).status(0).stdout).unwrap();
    let c = &json["changes"][0];
    assert_eq!(c["run"], 25, "{json}");
    assert_eq!(
        (c["good"].as_str(), c["bad"].as_str()),
        (Some(good.as_str()), Some(culprit.as_str()))
    );
    let (before, after) = (c["before"].as_f64().unwrap(), c["after"].as_f64().unwrap());
    assert!(
        (before - 100.0).abs() < 0.5 && (after - 105.0).abs() < 0.5,
        "{c}"
    );
    let step = c["step_pct"].as_f64().unwrap();
    assert!((step - 5.0).abs() < 0.5, "{step}");
    let (lo, hi) = (
        c["ci_pct"][0].as_f64().unwrap(),
        c["ci_pct"][1].as_f64().unwrap(),
    );
    assert!(lo < 5.0 && 5.0 < hi && lo > 2.0, "{lo} … {hi}");
    assert!(c["p"].as_f64().unwrap() < 1e-4, "{c}");
    assert!(c["machine"].as_str().unwrap().starts_with("local="), "{c}");
    // a plain listing says there is a change and how to see it
    let plain = h(&[]).status(0).stdout;
    assert!(
        plain.contains("1 change point(s): `expr history drift --changes`"),
        "{plain}"
    );
    // --bisect: the range goes to expr bisect, whose probes (seed 0: the level itself) find it
    let b = h(&["--changes", "--bisect"]);
    assert_eq!(b.status, 0, "{}\n{}", b.stdout, b.stderr);
    assert!(
        b.stderr.contains("expr: expr bisect e.kdl --good"),
        "{}",
        b.stderr
    );
    assert!(
        format!("{}{}", b.stdout, b.stderr).contains(&culprit[..12]),
        "bisect names the commit that moved the level: {}\n{}",
        b.stdout,
        b.stderr
    );

    // a flat history of 40 runs: no change
    let flat = tempfile::tempdir().unwrap();
    let f = flat.path();
    std::fs::write(f.join("e.kdl"), DRIFT).unwrap();
    std::fs::write(f.join("level"), "100").unwrap();
    let fdb = f.join("h.sqlite");
    for i in 1..=40 {
        Test::new()
            .dir(f)
            .args(["run", "e.kdl", "-q", "--output", &format!("r{i}"), "--set"])
            .args([format!("seed={}", i + 7)])
            .args(["--history", fdb.to_str().unwrap()])
            .run()
            .status(0);
    }
    let none = Test::new()
        .dir(f)
        .args([
            "history",
            "drift",
            "--changes",
            "--history",
            fdb.to_str().unwrap(),
        ])
        .run()
        .status(0);
    assert!(
        none.stdout.contains("No change point in 1 series."),
        "{}",
        none.stdout
    );
    let nob = Test::new()
        .dir(f)
        .args([
            "history",
            "drift",
            "--changes",
            "--bisect",
            "--history",
            fdb.to_str().unwrap(),
        ])
        .run()
        .status(3);
    assert!(
        nob.stderr
            .contains("no change point with a commit range to bisect"),
        "{}",
        nob.stderr
    );
}

/// A filter that matches nothing says which one, and the names the history does hold.
#[test]
fn history_filters_that_match_nothing_name_the_filter_and_the_near_names() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("e.kdl"),
        bench("", "    sweep step 1 2\n").replace("lane x\n", "lane fast\n    lane slow\n"),
    )
    .unwrap();
    run(p, "e.kdl", "a", &["repeat=1"], 0);
    let h = |args: &[&str]| {
        let r = Test::new().dir(p).args(["history", "cmp"]).args(args).run();
        assert_eq!(r.status, 2, "{}", r.stderr);
        r.stderr
    };
    let e = h(&["--lane", "fsat"]);
    assert!(
        e.contains("--lane `fsat`: no run of `cmp` has that lane — did you mean `fast`?"),
        "{e}"
    );
    let e = h(&["--metric", "vv"]);
    assert!(
        e.contains("--metric `vv`: no run of `cmp` recorded that metric"),
        "{e}"
    );
    let e = h(&["--where", "stpe=1"]);
    assert!(
        e.contains("--where stpe=1: `cmp` has no axis `stpe` — did you mean `step`?"),
        "{e}"
    );
    let e = h(&["--where", "step=3"]);
    assert!(
        e.contains("--where step=3: axis `step` of `cmp` never had the value `3`"),
        "{e}"
    );
    let e = Test::new().dir(p).args(["history", "cpm"]).run().stderr;
    assert!(
        e.contains("holds no run of `cpm` — did you mean `cmp`?"),
        "{e}"
    );
}

/// A point B has no value for says why, by its points' statuses: B interrupted before it
/// measured it is not "failed or had no data". The note is one line, whatever the lane's name
/// holds (a newline here).
#[test]
fn a_point_lost_to_an_interrupted_b_says_interrupted() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let exp = "experiment cmp\nbench b {\n    param n 1\n    run \"RUN\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane \"x\\ny\"\n    sweep n 1 2\n}\n";
    std::fs::write(p.join("a.kdl"), exp.replace("RUN", "echo v=1{{ n }}")).unwrap();
    // the second point stops the run as Ctrl-C would, before it prints its number
    std::fs::write(
        p.join("b.kdl"),
        exp.replace(
            "RUN",
            "if [ {{ n }} = 2 ]; then kill -INT $PPID; sleep 5; fi; echo v=1{{ n }}",
        ),
    )
    .unwrap();
    run(p, "a.kdl", "a", &[], 0);
    run(p, "b.kdl", "b", &[], 130);
    let c = Test::new()
        .dir(p)
        .args(["compare", "a", "b"])
        .run()
        .status(0);
    assert!(
        c.stderr.contains(
            "note: b x\\ny n=2 v: no data in B: A measured 1 value(s), B none (its points: 1 interrupted)"
        ),
        "{}",
        c.stderr
    );
}

/// `run --force` replaces a directory's files, not the history's record of the run it held:
/// the earlier run's numbers stay, under the directory's name and what replaced it. A run
/// registered again (a resume) is still one row.
#[test]
fn a_force_run_keeps_the_earlier_runs_numbers_in_the_history() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("e.kdl"), bench("", "")).unwrap();
    run(p, "e.kdl", "out", &[], 0);
    Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "out", "--force"])
        .run()
        .status(0);
    let h = Test::new()
        .dir(p)
        .args(["history", "cmp", "--format", "json"])
        .run()
        .status(0);
    let v: Value = serde_json::from_str(&h.stdout).unwrap();
    let mut dirs: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["result_dir"].as_str().unwrap().to_string())
        .collect();
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    assert!(
        dirs.iter().any(|d| d.ends_with("/out"))
            && dirs
                .iter()
                .any(|d| d.contains("/out (replaced by the run started ")),
        "{dirs:?}"
    );
    // again by the same run: no third row
    Test::new()
        .dir(p)
        .args(["run", "--resume", "out"])
        .run()
        .status(0);
    let h = Test::new()
        .dir(p)
        .args(["history", "cmp", "--format", "json"])
        .run()
        .status(0);
    let v: Value = serde_json::from_str(&h.stdout).unwrap();
    let mut again: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["result_dir"].as_str().unwrap())
        .collect();
    again.sort();
    again.dedup();
    assert_eq!(again.len(), 2, "{again:?}");
}

/// `--history` naming a folder that does not exist: the run is not added, and says so (the
/// folder was made, anywhere, and a mistyped path started a second history without a word).
#[test]
fn a_history_in_a_folder_that_is_not_there_is_not_made() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("e.kdl"), bench("", "")).unwrap();
    let r = Test::new()
        .dir(p)
        .args([
            "run",
            "e.kdl",
            "--output",
            "out",
            "--history",
            "nope/h.sqlite",
        ])
        .run()
        .status(0);
    assert!(
        r.stderr.contains("warning: the run was not added to the history (nope/h.sqlite): nope: no such directory"),
        "{}",
        r.stderr
    );
    // the advice makes the folder before it imports there
    assert!(
        r.stderr
            .contains("`mkdir -p nope`, then `expr history --import out --history nope/h.sqlite`"),
        "{}",
        r.stderr
    );
    assert!(!p.join("nope").exists());
}

/// An experiment whose runs are in the history without a number (every point failed) is not a
/// name to correct: `did you mean `cmp`?` for `cmp` said the history held no run of it. Its
/// runs are shown, each `—` with why, and the note says none has a number.
#[test]
fn history_of_runs_without_a_number_says_so_not_did_you_mean_itself() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("e.kdl"),
        bench("", "").replace("echo v=", "exit 3; echo v="),
    )
    .unwrap();
    run(p, "e.kdl", "a", &[], 3);
    run(p, "e.kdl", "b", &[], 3);
    let r = Test::new().dir(p).args(["history", "cmp"]).run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("note: no run shown has a number here; each row says why")
            && !r.stderr.contains("did you mean"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stdout.matches("— (3 failed)").count(), 2, "{}", r.stdout);
    // a metric no run recorded is no row of fake `—`s (helper 72), and is said as before
    let r = Test::new()
        .dir(p)
        .args(["history", "cmp", "--metric", "bogus"])
        .run();
    assert_eq!(r.status, 2, "{}", r.stdout);
    assert!(
        r.stderr
            .contains("holds 2 runs of `cmp` (2 failed), none with a number to show"),
        "{}",
        r.stderr
    );
}

/// The JUnit schema's structure, as CI readers take it: `testsuites` › `testsuite` › `testcase`
/// (classname, name, time), each with at most one `failure` (message) or `skipped`; the counts
/// on both suites equal what the cases hold. Returns (classname, name, outcome) per case.
/// A point B measured nothing for (it failed, or had no data) while A measured it is a loss:
/// the gate fails (exit 5), the PR comment says ❌ and the JUnit case fails, and without a gate
/// it is said. A B that measured nothing A did exits 3 (its points failed), not 2 (bad input).
#[test]
fn a_point_b_measured_nothing_for_fails_the_gate_and_is_said() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let exp = "experiment cmp\nbench b {\n    param base 10\n    param tag \"v\"\n    run \"echo {{ tag }}={{ base + repeat }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n    lane x\n    lane y base=30\n    repeat 3\n}\n";
    std::fs::write(p.join("a.kdl"), exp).unwrap();
    std::fs::write(
        p.join("b.kdl"),
        exp.replace("lane y base=30", "lane y base=30 tag=\"broken\""),
    )
    .unwrap();
    std::fs::write(
        p.join("none.kdl"),
        exp.replace("param tag \"v\"", "param tag \"broken\""),
    )
    .unwrap();
    run(p, "a.kdl", "results/a", &[], 0);
    run(p, "b.kdl", "results/b", &[], 3);
    run(p, "none.kdl", "results/none", &[], 3);
    let cmp = |b: &str, extra: &[&str], status: i32| {
        Test::new()
            .dir(p)
            .args(["compare", "results/a", b])
            .args(extra)
            .run()
            .status(status)
    };
    // the gate: lane y lost its numbers (x unchanged)
    let gate = cmp(
        "results/b",
        &[
            "--fail-on-regression",
            "5",
            "--format",
            "github",
            "--junit",
            "j.xml",
        ],
        5,
    );
    assert!(
        gate.stderr.contains(
            "lost: b y v: no data in B: A measured 3 value(s), B none (its points: 3 no-data)"
        ),
        "{}",
        gate.stderr
    );
    assert!(
        gate.stdout.starts_with("### ❌")
            && gate
                .stdout
                .contains("0 regression(s) beyond 5 %, 1 without data in B"),
        "{}",
        gate.stdout
    );
    let cases = junit_cases(&std::fs::read_to_string(p.join("j.xml")).unwrap());
    let y: Vec<_> = cases.iter().filter(|c| c.0 == "b.y").collect();
    assert!(
        y.len() == 1 && y[0].2.starts_with("failure: no data in B"),
        "the lost lane's case fails: {cases:?}"
    );
    assert!(
        cases
            .iter()
            .filter(|c| c.0 == "b.x")
            .all(|c| c.2 == "passed"),
        "{cases:?}"
    );
    // no gate: said, exit 0 (x was compared)
    let said = cmp("results/b", &[], 0);
    assert!(
        said.stderr.contains("note: b y v: no data in B"),
        "{}",
        said.stderr
    );
    // B measured nothing A did: its points failed (3), and with a gate a loss (5)
    let none = cmp("results/none", &[], 3);
    assert!(
        none.stderr.contains("note: b x v: no data in B")
            && !none.stderr.contains("nothing to compare"),
        "{}",
        none.stderr
    );
    cmp("results/none", &["--fail-on-regression", "5"], 5);
    // a directory without values against itself: the same points, nothing to compare (no
    // metric to name in backticks)
    let same = Test::new()
        .dir(p)
        .args(["compare", "results/none", "results/none"])
        .run()
        .status(2);
    assert!(
        same.stderr
            .contains("have no point with values of one metric on both sides: nothing to compare")
            && same
                .stderr
                .contains("without values on both sides: b x (A: none, B: none)"),
        "{}",
        same.stderr
    );
}

fn junit_cases(xml: &str) -> Vec<(String, String, String)> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites", "{xml}");
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 1, "{xml}");
    let suite = suites[0];
    assert_eq!(suite.tag_name().name(), "testsuite");
    assert!(suite.attribute("name").is_some() && suite.attribute("timestamp").is_some());
    let mut out = Vec::new();
    for c in suite.children().filter(|n| n.is_element()) {
        assert_eq!(c.tag_name().name(), "testcase", "{xml}");
        let classname = c.attribute("classname").expect("classname").to_string();
        let name = c.attribute("name").expect("name").to_string();
        c.attribute("time").unwrap().parse::<f64>().unwrap();
        let kids: Vec<_> = c.children().filter(|n| n.is_element()).collect();
        assert!(kids.len() <= 1, "{xml}");
        let outcome = match kids.first().map(|k| k.tag_name().name()) {
            None => "passed".to_string(),
            Some("failure") => {
                assert!(kids[0].attribute("message").is_some());
                format!("failure: {}", kids[0].attribute("message").unwrap())
            }
            Some("skipped") => "skipped".to_string(),
            Some(other) => panic!("unexpected <{other}> in {xml}"),
        };
        out.push((classname, name, outcome));
    }
    let count = |k: &str| {
        out.iter()
            .filter(|c| c.2.starts_with(k))
            .count()
            .to_string()
    };
    for s in [root, suite] {
        assert_eq!(
            s.attribute("tests"),
            Some(out.len().to_string().as_str()),
            "{xml}"
        );
        assert_eq!(
            s.attribute("failures"),
            Some(count("failure").as_str()),
            "{xml}"
        );
        assert_eq!(
            s.attribute("skipped"),
            Some(count("skipped").as_str()),
            "{xml}"
        );
        assert_eq!(s.attribute("errors"), Some("0"));
    }
    out
}

/// Markdown rendered as GitHub does (tables on): its tables' rows, as cell texts.
fn md_tables(md: &str) -> Vec<Vec<Vec<String>>> {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut tables = Vec::new();
    let (mut rows, mut row, mut cell): (Vec<Vec<String>>, Vec<String>, Option<String>) =
        (Vec::new(), Vec::new(), None);
    for e in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match e {
            Event::Start(Tag::Table(_)) => rows = Vec::new(),
            Event::End(TagEnd::Table) => tables.push(std::mem::take(&mut rows)),
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => rows.push(std::mem::take(&mut row)),
            Event::Start(Tag::TableCell) => cell = Some(String::new()),
            Event::End(TagEnd::TableCell) => row.push(cell.take().unwrap_or_default()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(c) = cell.as_mut() {
                    c.push_str(&t)
                }
            }
            _ => {}
        }
    }
    tables
}

/// Issue 41: `expr compare --junit` and `--format github`, `expr run --junit --summary-md`:
/// JUnit XML of the schema's structure with a case per lane/point/metric (compare) or per point
/// and expectation (run), failures carrying the numbers; Markdown whose tables render.
#[test]
fn compare_and_run_write_junit_and_a_markdown_summary_for_ci() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let exp = bench(
        " direction=\"lower\"",
        "    lane y base=30\n    expect x v max=10.5\n    expect-log lacks=\"Traceback\"\n",
    );
    std::fs::write(p.join("e.kdl"), &exp).unwrap();
    std::fs::write(
        p.join("slower.kdl"),
        exp.replace("lane x\n", "lane x base=20\n"),
    )
    .unwrap();
    // A: x 10 11 12; B: x 20 21 22 (slower, a lower-is-better metric), y 30 31 32 both
    Test::new()
        .dir(p)
        .args(["run", "e.kdl", "--output", "a", "-q", "--junit", "a.xml"])
        .args(["--summary-md", "sum.md"])
        .run()
        .status(expr::util::exit_codes::EXPECTATION);
    let cases = junit_cases(&std::fs::read_to_string(p.join("a.xml")).unwrap());
    // 6 points, then 1 + 2 expectation cases (the bound on x; the log check at each lane's
    // points)
    let points: Vec<_> = cases.iter().filter(|c| !c.0.ends_with(".expect")).collect();
    assert_eq!(points.len(), 6, "{cases:?}");
    assert!(points.iter().all(|c| c.2 == "passed"), "{cases:?}");
    let unmet: Vec<_> = cases
        .iter()
        .filter(|c| c.2.starts_with("failure"))
        .collect();
    assert_eq!(unmet.len(), 1, "{cases:?}");
    assert!(
        unmet[0].2.contains("expect \"x\" \"v\" max=10.5")
            && unmet[0].2.contains("mean 11.0000 (n=3)"),
        "{unmet:?}"
    );
    // the summary is appended to (as $GITHUB_STEP_SUMMARY is): a second run adds its own
    let md = std::fs::read_to_string(p.join("sum.md")).unwrap();
    assert!(md.starts_with("### ❌ expr run `cmp`: 1 of "), "{md}");
    let t = md_tables(&md);
    assert_eq!(t[0][0], ["expectation", "point", "result", "found"], "{md}");
    assert!(
        t[0].iter()
            .any(|r| r[2] == "❌ unmet" && r[3] == "mean 11.0000 (n=3)"),
        "{md}"
    );
    Test::new()
        .dir(p)
        .args(["run", "slower.kdl", "--output", "b", "-q"])
        .args(["--summary-md", "sum.md"])
        .run()
        .status(expr::util::exit_codes::EXPECTATION);
    let md2 = std::fs::read_to_string(p.join("sum.md")).unwrap();
    assert!(md2.starts_with(&md) && md2.len() > md.len(), "appended");

    // compare: x is 100 % slower (significant), y unchanged
    let c = Test::new()
        .dir(p)
        .args([
            "compare", "a", "b", "--format", "github", "--junit", "c.xml",
        ])
        .args(["--fail-on-regression", "5"])
        .run()
        .status(expr::util::exit_codes::REGRESSION);
    assert!(
        c.stdout.starts_with("### ❌ expr compare `a` → `b`"),
        "{}",
        c.stdout
    );
    assert!(
        c.stdout
            .contains("1 regression(s) beyond 5 %, 0 better, 2 compared"),
        "{}",
        c.stdout
    );
    let t = md_tables(&c.stdout);
    assert_eq!(
        t[0][0],
        ["bench", "lane", "point", "metric", "A", "B", "Δ", "95 % CI", "verdict"]
    );
    let x = t[0].iter().find(|r| r[1] == "x").unwrap();
    assert_eq!(
        (x[4].as_str(), x[5].as_str(), x[6].as_str()),
        ("11.00", "21.00", "+90.91 %"),
        "{x:?}"
    );
    assert_eq!(x[8], "❌ worse");
    let cases = junit_cases(&std::fs::read_to_string(p.join("c.xml")).unwrap());
    assert_eq!(cases.len(), 2, "{cases:?}");
    let bad = cases.iter().find(|c| c.0 == "b.x").unwrap();
    assert!(
        bad.2
            .starts_with("failure: regression: +90.91 % v (limit 5 %)"),
        "{bad:?}"
    );
    assert_eq!(cases.iter().find(|c| c.0 == "b.y").unwrap().2, "passed");
    // a lane B lost is said in the comment, not passed over under a ✅
    std::fs::write(p.join("no-y.kdl"), exp.replace("    lane y base=30\n", "")).unwrap();
    Test::new()
        .dir(p)
        .args(["run", "no-y.kdl", "--output", "c", "-q"])
        .run();
    let c = Test::new()
        .dir(p)
        .args(["compare", "a", "c", "--format", "github"])
        .run()
        .status(0);
    assert!(c.stdout.contains("\nonly in A: b y"), "{}", c.stdout);
    // and neither is its verdict line a plain pass: what was not judged is counted there, and
    // the experiments' difference named
    assert!(
        c.stdout.starts_with("### ⚠️ expr compare")
            && c.stdout.contains(
                "0 regression(s), 0 better, 1 compared (lane × point × metric), 1 only in A (not judged)."
            )
            && c.stdout.contains("The experiments differ ("),
        "{}",
        c.stdout
    );
    // a gate passes it (the point is not lost: B's experiment has none), and says so
    let g = Test::new()
        .dir(p)
        .args(["compare", "a", "c", "--fail-on-regression", "5"])
        .run()
        .status(0);
    assert!(
        g.stderr.contains(
            "note: b y: only in A: not judged (B's run has no such point; the experiments differ)"
        ),
        "{}",
        g.stderr
    );
}

/// A database from before runs had a machine: read as it is (the machine from the hosts'
/// names), and given the column by the next run that registers, concurrent runs included.
#[test]
fn an_older_history_without_machines_reads_and_gains_the_column() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("e.kdl"), bench("", "")).unwrap();
    let db = p.join("h.sqlite");
    let run = |out: &str| {
        Test::new()
            .dir(p)
            .args([
                "run",
                "e.kdl",
                "-q",
                "--output",
                out,
                "--history",
                db.to_str().unwrap(),
            ])
            .run()
            .status(0);
    };
    run("r1");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("ALTER TABLE runs DROP COLUMN machine")
        .unwrap();
    drop(c);
    let hist = || {
        let h = Test::new()
            .dir(p)
            .args([
                "history",
                "cmp",
                "--format",
                "json",
                "--history",
                db.to_str().unwrap(),
            ])
            .run()
            .status(0);
        serde_json::from_str::<Value>(&h.stdout).unwrap()
    };
    let v = hist();
    let host = std::process::Command::new("uname")
        .arg("-n")
        .output()
        .unwrap();
    let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
    assert_eq!(v[0]["machine"], format!("local={host}"), "{v}");
    run("r2");
    let v = hist();
    assert_eq!(v.as_array().unwrap().len(), 2, "{v}");
    assert!(
        v[1]["machine"]
            .as_str()
            .unwrap()
            .starts_with(&format!("local={host}")),
        "{v}"
    );
}

/// `--history` naming a directory says so (it said "no history database at DIR"), and `expr
/// report` on a directory whose journal.jsonl is a FIFO says that (it said "it has no
/// journal.jsonl"); neither waits on the FIFO.
#[test]
fn a_history_path_that_is_a_directory_and_a_journal_that_is_a_fifo_are_named() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let r = Test::new()
        .dir(p)
        .args(["history", "cmp", "--history", "."])
        .run()
        .status(2);
    assert!(
        r.stderr.contains(
            "error: . is a directory: --history (and EXPR_HISTORY) name the database file, e.g. ./.expr-history.sqlite"
        ),
        "{}",
        r.stderr
    );
    std::fs::create_dir(p.join("fj")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(p.join("fj/journal.jsonl"))
        .status()
        .unwrap();
    assert!(made.success());
    let r = Test::new().dir(p).args(["report", "fj"]).run().status(2);
    assert!(
        r.stderr
            .contains("fj: its journal.jsonl is not a regular file (a directory, a FIFO or a device): not read"),
        "{}",
        r.stderr
    );
}

/// A step the experiment made (`--set base=20` from run 6 on) is not blamed on the machine or
/// the environment: `--changes` says the experiment changed, with the `expr compare` that shows
/// how, and offers no bisection of the code. A hash that differs at every run (`--set seed=N`)
/// says nothing of the kind (the planted-step test above keeps its bisection).
#[test]
fn a_step_the_experiment_made_is_said_to_be_the_experiments() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("h.kdl"),
        "experiment hh\nbench b {\n    param base 10\n    run \"echo v=$(( {{ base }} * 10 + {{ repeat }} ))\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    repeat 3\n}\n",
    )
    .unwrap();
    let db = p.join("h.sqlite");
    for i in 1..=10 {
        let mut t = Test::new().dir(p);
        t = t.args(["run", "h.kdl", "-q", "--output", &format!("r{i}")]);
        if i > 5 {
            t = t.args(["--set", "base=20"]);
        }
        t.args(["--history", db.to_str().unwrap()]).run().status(0);
    }
    let text = Test::new()
        .dir(p)
        .args([
            "history",
            "hh",
            "--changes",
            "--history",
            db.to_str().unwrap(),
        ])
        .run()
        .status(0)
        .stdout;
    assert!(text.contains("from run 6 of 10"), "{text}");
    assert!(
        text.contains("bisect: — (the experiment changed between these runs (its file or `--set`): `expr compare ")
            && text.contains("/r5 ")
            && text.contains("/r6` shows how)")
            && !text.contains("the machine or the environment"),
        "{text}"
    );
}

/// Small numbers keep their digits where they are judged or shown live: an expectation's mean
/// (`mean 0.0000` beside a ✗ for max=1e-5) and the run's progress line (`v 0.00`).
#[test]
fn a_small_mean_is_shown_with_its_digits_in_expects_and_progress() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("e.kdl"),
        "experiment small\nbench b {\n    run \"echo v=0.00002\"\n    collect \"regex\" pattern=\"v=([0-9.eE+-]+)\"\n    repeat 3\n    expect \"*\" \"v\" max=0.00001\n}\n",
    )
    .unwrap();
    let ran = run(p, "e.kdl", "out", &[], expr::util::exit_codes::EXPECTATION);
    assert!(
        ran.stderr.contains("mean 2.00e-5 (n=3)")
            && ran.stderr.contains("ok  v 2.00e-5")
            && !ran.stderr.contains("0.0000"),
        "{}",
        ran.stderr
    );
}

/// A round of `expr bisect` (a result directory under a bisection's `runs/`, beside its
/// `bisect.jsonl`) measured an old commit: it is registered, and kept out of the experiment's
/// series, its change points and `--baseline last-ok`.
#[test]
fn a_bisect_round_is_registered_but_no_part_of_the_series_nor_a_baseline() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("b.kdl"), bench(" direction=\"higher\"", "")).unwrap();
    run(p, "b.kdl", "results/r1", &[], 0);
    std::fs::create_dir_all(p.join("results/bisect_b/runs")).unwrap();
    std::fs::write(p.join("results/bisect_b/bisect.jsonl"), "").unwrap();
    run(
        p,
        "b.kdl",
        "results/bisect_b/runs/001-bad-abc",
        &["b.base=50"],
        0,
    );
    run(p, "b.kdl", "results/r2", &[], 0);
    let c = last_ok_json(p, "results/r2");
    assert_eq!(c["a"]["dir"], "results/r1", "{c}");
    let h = Test::new()
        .dir(p)
        .args(["history", "cmp", "--format", "json"])
        .run()
        .status(0);
    let runs: Vec<Value> = serde_json::from_str(&h.stdout).unwrap();
    assert_eq!(runs.len(), 2, "{}", h.stdout);
    assert!(!h.stdout.contains("bisect_b"), "{}", h.stdout);
    assert!(
        h.stderr.contains(
            "note: 1 round(s) of `expr bisect` are in the history and left out of this series"
        ),
        "{}",
        h.stderr
    );
    // no B: said as such (it was "--baseline takes `last-ok`, not `last-ok`")
    let none = Test::new()
        .dir(p)
        .args(["compare", "--baseline", "last-ok"])
        .run()
        .status(2);
    assert!(
        none.stderr
            .contains("`--baseline last-ok` compares B with the run before it: give B"),
        "{}",
        none.stderr
    );
}

/// Settings that move between benches differ: each line of the resolved experiment is compared
/// with the nodes it stands in (as sets of bare lines, two benches that swapped their values
/// were the same experiment).
#[test]
fn settings_swapped_between_benches_make_the_experiments_differ() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("sw.kdl"),
        "experiment sw\nbench b1 {\n    param v 1\n    run \"echo v={{ v }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\nbench b2 {\n    param v 5\n    run \"echo v={{ v }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    run(p, "sw.kdl", "results/a", &[], 0);
    run(p, "sw.kdl", "results/b", &["b1.v=5", "b2.v=1"], 0);
    let c = compare_json(p, "results/a", "results/b");
    assert_eq!(
        c["settings_diff"],
        serde_json::json!([
            "- bench \"b1\" › param \"v\" 1",
            "- bench \"b2\" › param \"v\" 5",
            "+ bench \"b1\" › param \"v\" 5",
            "+ bench \"b2\" › param \"v\" 1"
        ]),
        "{c}"
    );
}

/// At the ends of the float range: a change that overflows a percentage (1e-300 → 2e300) is
/// `—`, never `+inf %`, and the HTML chart holds no `inf` (it drew `width="inf"`).
#[test]
fn a_change_too_large_for_a_percentage_is_a_dash_and_charts_no_inf() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("fr.kdl"),
        "experiment fr\nbench b {\n    param v \"1e-300\"\n    run \"echo v={{ v }}\"\n    collect \"regex\" pattern=\"v=(\\\\S+)\" direction=\"higher\"\n    repeat 3\n}\n",
    )
    .unwrap();
    run(p, "fr.kdl", "results/a", &[], 0);
    run(p, "fr.kdl", "results/b", &["b.v=\"2e300\""], 0);
    let c = compare_json(p, "results/a", "results/b");
    let r = &c["rows"][0];
    assert!(r["delta_pct"].is_null() && r["ci_pct"].is_null(), "{r}");
    assert_eq!(r["mean_b"], 2e300, "{r}");
    let html = Test::new()
        .dir(p)
        .args(["compare", "results/a", "results/b", "--format", "html"])
        .run()
        .status(0)
        .stdout;
    assert!(!html.contains("inf\""), "{html}");
    let text = Test::new()
        .dir(p)
        .args(["compare", "results/a", "results/b"])
        .run()
        .status(0)
        .stdout;
    assert!(
        text.contains("| 1.00e-300 (3) | 2.00e300 (3) | — (the change overflows a float) | — |"),
        "{text}"
    );
}

/// The files asked for are checked before anything is printed, and an error names a path once.
#[test]
fn history_and_compare_refuse_their_arguments_before_printing() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("b.kdl"), bench("", "")).unwrap();
    run(p, "b.kdl", "results/r1", &[], 0);
    std::fs::create_dir(p.join("dir")).unwrap();
    let svg = Test::new()
        .dir(p)
        .args(["history", "cmp", "--svg", "dir"])
        .run()
        .status(2);
    assert!(svg.stdout.is_empty(), "{}", svg.stdout);
    assert!(
        svg.stderr
            .contains("--svg dir: a directory; name the chart's file"),
        "{}",
        svg.stderr
    );
    // a link keeps being a link, its target gets the chart (the link was replaced by a file);
    // a FIFO with a reader gets it too (the check before anything ran opened it to read, and
    // waited for a writer forever)
    std::fs::write(p.join("target.svg"), "old").unwrap();
    std::os::unix::fs::symlink("target.svg", p.join("link.svg")).unwrap();
    Test::new()
        .dir(p)
        .args(["history", "cmp", "--svg", "link.svg"])
        .run()
        .status(0);
    assert!(std::fs::symlink_metadata(p.join("link.svg"))
        .unwrap()
        .file_type()
        .is_symlink());
    let chart = std::fs::read_to_string(p.join("target.svg")).unwrap();
    assert!(chart.starts_with("<svg"), "{chart}");
    let fifo = p.join("fifo.svg");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let through = std::process::Command::new("timeout")
        .current_dir(p)
        .args([
            "20",
            env!("CARGO_BIN_EXE_expr"),
            "history",
            "cmp",
            "--svg",
            "fifo.svg",
        ])
        .env("EXPR_HISTORY", p.join("results/.expr-history.sqlite"))
        .output()
        .unwrap();
    assert_eq!(through.status.code(), Some(0), "{through:?}");
    assert!(reader.join().unwrap().starts_with("<svg"));
    let same = Test::new()
        .dir(p)
        .args([
            "history", "cmp", "--format", "html", "--output", "x.html", "--svg", "x.html",
        ])
        .run()
        .status(2);
    assert!(
        same.stderr.contains("--output and --svg both name x.html"),
        "{}",
        same.stderr
    );
    let out = Test::new()
        .dir(p)
        .args(["history", "cmp", "--output", "dir"])
        .run()
        .status(2);
    assert_eq!(out.stderr.matches("dir:").count(), 1, "{}", out.stderr);
    let h = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/r1",
            "results/r1",
            "--history",
            "h.sqlite",
        ])
        .run()
        .status(2);
    assert!(
        h.stderr.contains("is read only with `--baseline last-ok`"),
        "{}",
        h.stderr
    );
}

/// `expect` at its edges, on hand-computed cases: a mean equal to the bound up to its
/// rounding passes (0.1, 0.2, 0.15 have the f64 mean 0.15000000000000002, shown as 0.1500:
/// it failed `max=0.15`); a speedup of a mean at or below 0 is not judged a pass (the report
/// shows no ratio there); a lane whose repeats did not all give numbers fails (it passed on
/// the one that did).
#[test]
fn expectations_hold_at_their_edges_and_never_pass_on_part_of_a_group() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("x.kdl"),
        "experiment x\nbench b {\n    param vals \"20 20 20\"\n    run \"echo v={{ (vals | split(' '))[repeat] }}\"\n    collect \"regex\" pattern=\"v=([-0-9.]+)\" direction=\"higher\"\n    repeat 3\n    lane A\n    lane P vals=\"0.1 0.2 0.15\"\n    lane Neg vals=\"-1 -2 -3\"\n    lane Half vals=\"40 x x\"\n    expect P v max=0.15\n    expect P v min=0.15\n    expect Neg over A speedup max=1\n    expect Half v min=40\n}\n",
    )
    .unwrap();
    run(
        p,
        "x.kdl",
        "results/x",
        &[],
        expr::util::exit_codes::POINT_FAILED,
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("results/x/summary.json")).unwrap())
            .unwrap();
    let e: Vec<(String, bool, String)> = s["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["expect"].as_str().unwrap().to_string(),
                e["ok"].as_bool().unwrap(),
                e["found"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(e.len(), 4, "{e:?}");
    assert!(e[0].1 && e[1].1, "{e:?}");
    assert!(
        !e[2].1 && e[2].2.contains("no headline mean above 0"),
        "{e:?}"
    );
    assert!(
        !e[3].1
            && e[3]
                .2
                .contains("2 of the 3 repeats of Half have no numbers (failed, interrupted or no data): failed, whatever the rest give"),
        "{e:?}"
    );
    // judged (and failed), and said so: not "not judged" beside `"judged": true`
    assert_eq!(s["expectations"][3]["judged"], Value::Bool(true), "{s}");
}

/// A speedup where the lane it is over has no point (an `exclude`), or where the headline's
/// direction is unknown, is not judged: the run exits 0, where it failed them (exit 6) with
/// "no headline mean above 0" and by taking higher as better (helper 49).
#[test]
fn a_speedup_over_an_excluded_point_or_of_unknown_direction_is_not_judged() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let kdl = |direction: &str| {
        format!("experiment x\nbench b {{\n    param v 10\n    param n 1\n    run \"echo v={{{{ v * n }}}}\"\n    collect \"regex\" pattern=\"v=([0-9.]+)\"{direction}\n    sweep n 1 2\n    lane A\n    lane B v=30\n    exclude lane=\"A\" n=2\n    expect B over A speedup min=2\n}}\n")
    };
    std::fs::write(p.join("e.kdl"), kdl(" direction=\"higher\"")).unwrap();
    run(p, "e.kdl", "results/e", &[], 0);
    let summary = std::fs::read_to_string(p.join("results/e/summary.md")).unwrap();
    assert!(summary.contains("3.000× over A"), "{summary}");
    assert!(
        summary.contains("not judged: A has no point here (an `exclude`)"),
        "{summary}"
    );
    // lower is better here: B at 30 is a third of A's speed, unmet; with no direction, unjudged
    std::fs::write(p.join("l.kdl"), kdl(" direction=\"lower\"")).unwrap();
    run(p, "l.kdl", "results/l", &[], 6);
    std::fs::write(p.join("u.kdl"), kdl("")).unwrap();
    let r = run(p, "u.kdl", "results/u", &[], 0);
    assert!(
        r.stderr.contains("needs to know which way is better"),
        "{}",
        r.stderr
    );
    let summary = std::fs::read_to_string(p.join("results/u/summary.md")).unwrap();
    assert!(
        summary.contains("not judged: the headline's direction is unknown"),
        "{summary}"
    );
}

/// A CSV's `samples_per_sec` is a throughput to `check` as to the run: `check` said a speedup
/// over it "is not judged" (no `direction=`) while the run judged it and exited 6 (helper 63).
#[test]
fn a_speedup_of_a_csv_samples_per_sec_is_judged_as_check_says() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let kdl = |min: u32| {
        format!("experiment x\nbench b {{\n    param v 10\n    run \"printf 'samples_per_sec\\\\n%s\\\\n' {{{{ v }}}} > {{{{ outdir }}}}/t.csv\"\n    collect \"csv\" path=\"t.csv\" metric=\"samples_per_sec\"\n    lane A\n    lane B v=30\n    expect B over A speedup min={min}\n}}\n")
    };
    for (min, status) in [(2, 0), (5, 6)] {
        std::fs::write(p.join("e.kdl"), kdl(min)).unwrap();
        let c = Test::new().dir(p).args(["check", "e.kdl"]).run().status(0);
        assert!(!c.stderr.contains("not judged"), "{}", c.stderr);
        let r = run(p, "e.kdl", &format!("results/m{min}"), &[], status);
        assert!(!r.stderr.contains("needs to know"), "{}", r.stderr);
        let summary =
            std::fs::read_to_string(p.join(format!("results/m{min}/summary.md"))).unwrap();
        assert!(summary.contains("3.000× over A"), "{summary}");
    }
}

/// Against a mean of 0 the change has no percent: `compare` says so and gives Welch's interval
/// of the difference in the metric's unit (it showed `— | —` with no reason, and JSON
/// `delta_pct: null`) — hand-computed: B = 5.0, 5.1, 5.2 against A = 0, 0, 0 is 5.1 ±
/// t(0.975, 2 df) · 0.1/√3 = 5.1 ± 4.303 · 0.0577 = 4.85 … 5.35 (helper 62).
#[test]
fn a_change_from_a_zero_mean_says_why_it_has_no_percent_and_shows_the_difference() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("z.kdl"),
        "experiment z\nbench b {\n    param v 0\n    run \"echo v={{ v }}\"\n    collect \"regex\" pattern=\"v=([0-9.]+)\" direction=\"higher\"\n    repeat 3\n}\n",
    )
    .unwrap();
    run(p, "z.kdl", "results/a", &[], 0);
    // B: 5.0, 5.1, 5.2 (the repeat's index after a `.`)
    std::fs::write(
        p.join("z.kdl"),
        "experiment z\nbench b {\n    param v 0\n    run \"echo v={{ v }}.{{ repeat }}\"\n    collect \"regex\" pattern=\"v=([0-9.]+)\" direction=\"higher\"\n    repeat 3\n}\n",
    )
    .unwrap();
    run(p, "z.kdl", "results/b", &["v=5"], 0);
    let text = Test::new()
        .dir(p)
        .args(["compare", "results/a", "results/b"])
        .run()
        .status(0);
    assert!(
        text.stdout.contains(
            "| 0.00 (3) | 5.10 (3) | — (A's mean is 0) | +4.85 … +5.35 (B − A) | better |"
        ),
        "{}",
        text.stdout
    );
    let j = compare_json(p, "results/a", "results/b");
    let r = &j["rows"][0];
    assert_eq!(r["no_pct"], "A's mean is 0", "{r}");
    let (lo, hi) = (
        r["ci_diff"][0].as_f64().unwrap(),
        r["ci_diff"][1].as_f64().unwrap(),
    );
    assert!(
        (lo - 4.8516).abs() < 1e-3 && (hi - 5.3484).abs() < 1e-3,
        "{r}"
    );
}

/// A baseline lane whose mean is 0 is still the baseline: the report says why there is no
/// ratio, not "no baseline lane" (helper 67).
#[test]
fn a_baseline_with_a_zero_mean_is_named_with_why_there_is_no_ratio() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("b.kdl"),
        "experiment b\nbench b {\n    param v 0\n    run \"echo v={{ v }}\"\n    collect \"regex\" pattern=\"v=([0-9.]+)\" direction=\"higher\"\n    lane base\n    lane fast v=5\n    repeat 3\n}\n",
    )
    .unwrap();
    run(p, "b.kdl", "results/b", &[], 0);
    let html = std::fs::read_to_string(p.join("results/b/report.html")).unwrap();
    assert!(!html.contains("no baseline lane"), "{html}");
    assert!(
        html.contains("— (the baseline&#39;s mean is not above zero)")
            || html.contains("— (the baseline's mean is not above zero)"),
        "{html}"
    );
    assert!(
        html.contains("vs base (×, &gt;1 is better)") || html.contains("vs base (×, >1 is better)"),
        "{html}"
    );
}

/// A log edited after the run: `expr report` shows what the files say now, and says that the
/// run read another number (it changed 12 into 99 without a word).
#[test]
fn a_report_says_when_the_files_give_another_number_than_the_run_read() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("b.kdl"), bench("", "")).unwrap();
    run(p, "b.kdl", "results/r", &[], 0);
    let log = p.join("results/r/logs/run1-x_r1-local.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text, "v=11\n");
    std::fs::write(&log, "v=99\n").unwrap();
    // `compare` uses the files' number too, and says so (helper 49: silently)
    let c = Test::new()
        .dir(p)
        .args(["compare", "results/r", "results/r"])
        .run();
    assert!(
        c.stderr.contains(
            "warning: results/r: x_r1: its files now give 99.00 where the run read 11.00"
        ),
        "{}",
        c.stderr
    );
    let r = Test::new()
        .dir(p)
        .args(["report", "results/r"])
        .run()
        .status(0);
    assert!(
        r.stderr.contains("x_r1: its files now give 99.00 where the run read 11.00 (a log or output changed since the run?)"),
        "{}",
        r.stderr
    );
    // the reports that held the run's 11 are kept, and counted with the reason (helper 46:
    // the count named only the points whose number was gone); a second report keeps none again
    assert!(
        r.stderr.contains("the files no longer give the numbers the run read for 1 point (each gives another number now); the reports before this one, which hold them, are kept in results/r/runtime/earlier-report-"),
        "{}",
        r.stderr
    );
    let kept: Vec<_> = std::fs::read_dir(p.join("results/r/runtime"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("earlier-report-")
        })
        .collect();
    assert_eq!(kept.len(), 1);
    let earlier = std::fs::read_to_string(kept[0].path().join("summary.md")).unwrap();
    assert!(earlier.contains("11.00"), "{earlier}");
    let again = Test::new()
        .dir(p)
        .args(["report", "results/r"])
        .run()
        .status(0);
    assert!(!again.stderr.contains("are kept in"), "{}", again.stderr);
}

/// `--metric max_rss_mib` over runs whose steps stayed below expr's own memory (an `echo`)
/// says why they have none, not only that none recorded it.
#[test]
fn history_of_max_rss_says_why_small_steps_have_none() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("e.kdl"), bench("", "")).unwrap();
    run(p, "e.kdl", "out", &[], 0);
    let r = Test::new()
        .dir(p)
        .args(["history", "cmp", "--metric", "max_rss_mib"])
        .run();
    assert_ne!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("note: `max_rss_mib` is recorded only for a point whose launch steps' peak memory rose more than 4 MiB above expr's own")
            && r.stderr.contains("no run of `cmp` recorded that metric"),
        "{}",
        r.stderr
    );
    // another metric: no such note
    let r = Test::new()
        .dir(p)
        .args(["history", "cmp", "--metric", "v"])
        .run()
        .status(0);
    assert!(!r.stderr.contains("max_rss_mib"), "{}", r.stderr);
}

/// `expr history --output/--svg` wrote over anything: the history database it reads (the next
/// command found it "damaged"), a run's journal (the run lost) or its report (helper 70). Each
/// is refused before anything is written; a file beside them is written.
#[test]
fn history_never_writes_over_its_database_or_a_runs_files() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("b.kdl"), bench("", "")).unwrap();
    run(p, "b.kdl", "results/r1", &[], 0);
    run(p, "b.kdl", "results/r2", &[], 0);
    let db = p.join("results/.expr-history.sqlite");
    // the files' contents, compared without printing them
    let files = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .map(|n| {
                let bytes = std::fs::read(p.join(n)).unwrap();
                expr::util::hash::fnv1a(&String::from_utf8_lossy(&bytes))
            })
            .collect()
    };
    let kept = [
        "results/.expr-history.sqlite",
        "results/r1/journal.jsonl",
        "results/r1/summary.md",
    ];
    let before = files(&kept);
    for (flag, path, why) in [
        (
            "--output",
            "results/.expr-history.sqlite",
            "is the history database",
        ),
        (
            "--svg",
            "./results/../results/.expr-history.sqlite",
            "is the history database",
        ),
        (
            "--output",
            "results/.expr-history.sqlite-wal",
            "is the history database",
        ),
        (
            "--output",
            "results/r1/journal.jsonl",
            "inside the result directory",
        ),
        (
            "--svg",
            "results/r1/summary.md",
            "inside the result directory",
        ),
        (
            "--output",
            "results/r1/logs/new.md",
            "inside the result directory",
        ),
    ] {
        let r = Test::new()
            .dir(p)
            .args(["history", "cmp", flag, path])
            .run()
            .status(2);
        assert!(
            r.stderr.contains(&format!("{flag} {path}: {why}")) && r.stdout.is_empty(),
            "{flag} {path}: {}",
            r.stderr
        );
    }
    // the same for the files other commands write: a run's CI files, bench's exports, a
    // compare's JUnit inside a third run's directory
    for (args, why) in [
        (
            vec![
                "run",
                "b.kdl",
                "--output",
                "results/r3",
                "--junit",
                "results/.expr-history.sqlite",
            ],
            "--junit results/.expr-history.sqlite: is the history database",
        ),
        (
            vec![
                "bench",
                "--export-json",
                "results/.expr-history.sqlite",
                "true",
            ],
            "--export-json results/.expr-history.sqlite: is the history database",
        ),
        (
            vec![
                "compare",
                "results/r2",
                "results/r2",
                "--junit",
                "results/r1/summary.md",
            ],
            "--junit results/r1/summary.md: inside the result directory",
        ),
    ] {
        let r = Test::new().dir(p).args(&args).run().status(2);
        assert!(r.stderr.contains(why), "{args:?}: {}", r.stderr);
    }
    assert!(!p.join("results/r3").exists());
    assert_eq!(files(&kept), before);
    assert!(!p.join("results/r1/logs/new.md").exists());
    assert!(db.is_file());
    Test::new()
        .dir(p)
        .args(["history", "cmp", "--output", "results/h.md"])
        .run()
        .status(0);
    assert!(std::fs::read_to_string(p.join("results/h.md"))
        .unwrap()
        .contains("| started |"));
}

/// Two files that sweep the same axes in another order (`sweep p` then `sweep q`, and the
/// lines swapped) have the same points: `compare` matched none of them ("only in A: b x
/// p=1,q=3 … only in B: b x q=3,p=1") and the history made two series of each (helper 70).
#[test]
fn the_order_of_sweep_lines_does_not_change_the_points() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let kdl = |sweeps: &str| {
        format!("experiment s\nbench b {{\n    run \"echo v={{{{ p * 10 + q }}}}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\" direction=\"higher\"\n{sweeps}    lane x\n}}\n")
    };
    std::fs::write(p.join("s1.kdl"), kdl("    sweep p 1 2\n    sweep q 3 4\n")).unwrap();
    std::fs::write(p.join("s2.kdl"), kdl("    sweep q 3 4\n    sweep p 1 2\n")).unwrap();
    run(p, "s1.kdl", "results/s1", &[], 0);
    run(p, "s2.kdl", "results/s2", &[], 0);
    let c = compare_json(p, "results/s1", "results/s2");
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{c}");
    assert!(
        c["only_a"].as_array().unwrap().is_empty() && c["only_b"].as_array().unwrap().is_empty(),
        "{c}"
    );
    // shown as A's file orders them, each with its own numbers on both sides
    let row = rows.iter().find(|r| r["axes"] == "p=1,q=3").unwrap();
    assert_eq!(
        (row["a"][0].as_f64(), row["b"][0].as_f64()),
        (Some(13.0), Some(13.0)),
        "{row}"
    );
    let h = Test::new()
        .dir(p)
        .args(["history", "s", "--format", "json"])
        .run()
        .status(0);
    let entries: Vec<Value> = serde_json::from_str(&h.stdout).unwrap();
    let mut points: Vec<&str> = entries
        .iter()
        .map(|e| e["axes"].as_str().unwrap())
        .collect();
    points.sort();
    points.dedup();
    assert_eq!(
        points,
        ["p=1,q=3", "p=1,q=4", "p=2,q=3", "p=2,q=4"],
        "{}",
        h.stdout
    );
    assert_eq!(entries.len(), 8, "{}", h.stdout);
}

/// Means near a double's limit: A 1.7e308…1.79e308, B 1e300…1.2e300. The ratio's interval
/// (shown: −100.00 … −100.00 %) is finite and excludes 0, but the verdict said "no interval (the
/// values overflow a float)" from Welch's, which overflows and is not shown, and
/// `--fail-on-regression 5` passed the drop (helper 70). The verdict is the shown interval's:
/// worse, and the gate fails; the other way round it is better.
#[test]
fn a_drop_near_a_doubles_limit_is_judged_on_the_interval_shown() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let kdl = |vals: &str| {
        format!("experiment h\nbench b {{\n    param vals \"{vals}\"\n    run \"echo v={{{{ (vals | split(' '))[repeat] }}}}\"\n    collect \"regex\" pattern=\"v=([-0-9.e]+)\" direction=\"higher\"\n    repeat 3\n    lane huge\n}}\n")
    };
    std::fs::write(p.join("h1.kdl"), kdl("1.7e308 1.75e308 1.79e308")).unwrap();
    std::fs::write(p.join("h2.kdl"), kdl("1e300 1.1e300 1.2e300")).unwrap();
    run(p, "h1.kdl", "results/h1", &[], 0);
    run(p, "h2.kdl", "results/h2", &[], 0);
    let gate = |a: &str, b: &str, status: i32| {
        let r = Test::new()
            .dir(p)
            .args([
                "compare",
                a,
                b,
                "--format",
                "json",
                "--fail-on-regression",
                "5",
            ])
            .run()
            .status(status);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        v["rows"][0]["verdict"].as_str().unwrap().to_string()
    };
    assert_eq!(
        gate(
            "results/h1",
            "results/h2",
            expr::util::exit_codes::REGRESSION
        ),
        "worse"
    );
    assert_eq!(gate("results/h2", "results/h1", 0), "better");
}

/// A's collect has no `direction=`, B's says higher: the change is judged by B's (it was
/// "changed (direction unknown)" and a −49.5 % drop passed `--fail-on-regression 5`; helper
/// 70). Where the two disagree, nothing is judged.
#[test]
fn compare_takes_the_direction_either_side_declares() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let kdl = |vals: &str, dir: &str| {
        format!("experiment dd\nbench b {{\n    param vals \"{vals}\"\n    run \"echo v={{{{ (vals | split(' '))[repeat] }}}}\"\n    collect \"regex\" pattern=\"v=([-0-9.e]+)\"{dir}\n    repeat 3\n    lane x\n}}\n")
    };
    std::fs::write(p.join("d1.kdl"), kdl("100 101 102", "")).unwrap();
    std::fs::write(p.join("d2.kdl"), kdl("50 51 52", " direction=\"higher\"")).unwrap();
    std::fs::write(p.join("d3.kdl"), kdl("50 51 52", " direction=\"lower\"")).unwrap();
    std::fs::write(
        p.join("d4.kdl"),
        kdl("100 101 102", " direction=\"higher\""),
    )
    .unwrap();
    for f in ["d1", "d2", "d3", "d4"] {
        run(p, &format!("{f}.kdl"), &format!("results/{f}"), &[], 0);
    }
    let verdict = |a: &str, b: &str, status: i32| {
        let r = Test::new()
            .dir(p)
            .args([
                "compare",
                a,
                b,
                "--format",
                "json",
                "--fail-on-regression",
                "5",
            ])
            .run()
            .status(status);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        (
            v["rows"][0]["verdict"].as_str().unwrap().to_string(),
            v["rows"][0]["direction"].as_str().unwrap().to_string(),
        )
    };
    let regression = expr::util::exit_codes::REGRESSION;
    assert_eq!(
        verdict("results/d1", "results/d2", regression),
        ("worse".to_string(), "higher".to_string())
    );
    // B lower, A none: a drop of a lower-is-better metric is better
    assert_eq!(verdict("results/d1", "results/d3", 0).0, "better");
    // A higher, B lower: neither is taken, and the note says why (not "set `direction=`")
    let (v, _) = verdict("results/d4", "results/d3", 0);
    assert_eq!(v, "changed (direction unknown)");
    let note = Test::new()
        .dir(p)
        .args([
            "compare",
            "results/d4",
            "results/d3",
            "--fail-on-regression",
            "5",
        ])
        .run()
        .status(0);
    assert!(
        note.stderr
            .contains("but A's and B's collects declare opposite directions: not judged"),
        "{}",
        note.stderr
    );
}

/// `--baseline last-ok` says which run it took for A (helper 71: a baseline with nothing in
/// common read as if A were the user's choice).
#[test]
fn last_ok_names_the_baseline_it_took() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("b.kdl"), bench("", "")).unwrap();
    run(p, "b.kdl", "results/r1", &[], 0);
    run(p, "b.kdl", "results/r2", &[], 0);
    let r = Test::new()
        .dir(p)
        .args(["compare", "--baseline", "last-ok", "results/r2"])
        .run()
        .status(0);
    assert!(
        r.stderr.contains(
            "compare: A is results/r1, the last run of `cmp` before B that ended ok (the history's; name A to compare with another)"
        ),
        "{}",
        r.stderr
    );
}

/// `expr ls` counts the directory's points as `expr report` judges them: a `--resume --only`
/// adds its selection to the run's (ls said `3/0/0 failed` — no point failed, yet failed — after
/// a resume of lane y over a run whose lane x had no data; helper 70), and a point the
/// experiment no longer has (a `--force` resume with fewer repeats) is not one of them. The
/// history says the same.
#[test]
fn ls_and_the_history_count_the_directory_as_the_report_does() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("of.kdl"),
        "experiment of\nbench b {\n    param vals \"4 5 6\"\n    run \"echo v={{ (vals | split(' '))[repeat] }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    repeat 3\n    lane x vals=\"a b c\"\n    lane y\n}\n",
    )
    .unwrap();
    run(
        p,
        "of.kdl",
        "results/of",
        &[],
        expr::util::exit_codes::POINT_FAILED,
    );
    Test::new()
        .dir(p)
        .args(["run", "--resume", "results/of", "--only", "lane=y"])
        .run();
    let ls = Test::new().dir(p).args(["ls", "results"]).run().status(0);
    let line = ls
        .stdout
        .lines()
        .find(|l| l.contains("results/of"))
        .unwrap();
    assert!(
        line.contains(" 3/3/0 ") && line.contains(" failed "),
        "{}",
        ls.stdout
    );
    let h = Test::new()
        .dir(p)
        .args(["history", "of", "--format", "json"])
        .run()
        .status(0);
    let entries: Vec<Value> = serde_json::from_str(&h.stdout).unwrap();
    assert!(
        !entries.is_empty() && entries.iter().all(|e| e["status"] == "failed"),
        "{}",
        h.stdout
    );
    // a repeat the experiment no longer has is no point of the directory
    std::fs::write(p.join("r.kdl"), bench("", "")).unwrap();
    run(p, "r.kdl", "results/r", &[], 0);
    let text = std::fs::read_to_string(p.join("r.kdl")).unwrap();
    std::fs::write(p.join("r.kdl"), text.replace("repeat 3", "repeat 2")).unwrap();
    Test::new()
        .dir(p)
        .args(["run", "--resume", "results/r", "--force"])
        .run()
        .status(0);
    let ls = Test::new().dir(p).args(["ls", "results"]).run().status(0);
    let line = ls.stdout.lines().find(|l| l.contains("results/r")).unwrap();
    assert!(
        line.contains(" 2/0/0 ") && line.contains(" ok "),
        "{}",
        ls.stdout
    );
}

/// A lane whose every repeat had no number: the history left it out (no row, and `--lane x`
/// said "no run of `of` has that lane — did you mean `y`?"; helper 70). Each run holds it as
/// missing, with why: a row `— (3 no-data)` in the table and the page, `"mean": null` with
/// `"missing"` in JSON, and no part of a trend or of the change points.
#[test]
fn a_lane_without_numbers_is_in_the_history_as_missing() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("of.kdl"),
        "experiment of\nbench b {\n    param vals \"4 5 6\"\n    run \"echo v={{ (vals | split(' '))[repeat] }}\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    repeat 3\n    lane x vals=\"a b c\"\n    lane y\n}\n",
    )
    .unwrap();
    for out in ["results/r1", "results/r2"] {
        run(p, "of.kdl", out, &[], expr::util::exit_codes::POINT_FAILED);
    }
    let h = |args: &[&str]| {
        Test::new()
            .dir(p)
            .args(["history", "of"])
            .args(args)
            .run()
            .status(0)
    };
    let text = h(&[]).stdout;
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("| b | x |")).collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(
        rows.iter()
            .all(|r| r.contains("| v | 0 | — (3 no-data) | — |")),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.contains("| b | y |")).count(),
        2,
        "{text}"
    );
    // a metric no run of the bench recorded: an error naming the ones it holds, no rows
    let bogus = Test::new()
        .dir(p)
        .args(["history", "of", "--metric", "bogus"])
        .run();
    assert_eq!(bogus.status, 2, "{}", bogus.stdout);
    assert!(
        bogus.stderr.contains("no run of `of` recorded that metric") && bogus.stdout.is_empty(),
        "{}",
        bogus.stderr
    );
    let x = h(&["--lane", "x", "--format", "json"]).stdout;
    let entries: Vec<Value> = serde_json::from_str(&x).unwrap();
    assert_eq!(entries.len(), 2, "{x}");
    for e in &entries {
        assert!(
            e["mean"].is_null() && e["missing"] == "3 no-data" && e["metric"] == "v",
            "{e}"
        );
    }
    // the change points count the series with numbers only
    let found: Value = serde_json::from_str(&h(&["--changes", "--format", "json"]).stdout).unwrap();
    assert_eq!(found["series"], 1, "{found}");
    let html = h(&["--format", "html"]).stdout;
    assert!(html.contains("— (3 no-data)"), "{html}");
}

/// The history is keyed by path: a copied result directory imported was a second run, and a
/// moved one a third (`--changes` counted 16 runs of 14; helper 70). A copy of a run the
/// history holds is refused, said; a directory moved since replaces its old path.
#[test]
fn a_copied_or_moved_run_is_one_run_in_the_history() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("b.kdl"), bench("", "")).unwrap();
    run(p, "b.kdl", "results/r1", &[], 0);
    let copy = std::process::Command::new("cp")
        .args(["-r", "results/r1", "results/copy"])
        .current_dir(p)
        .status()
        .unwrap();
    assert!(copy.success());
    let import = |dir: &str| Test::new().dir(p).args(["history", "--import", dir]).run();
    let r = import("results/copy");
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("results/copy: the same run as ")
            && r.stderr
                .contains("which the history holds: a copy is not indexed again"),
        "{}",
        r.stderr
    );
    let dirs = |h: &common::Ran| -> Vec<String> {
        let v: Vec<Value> = serde_json::from_str(&h.stdout).unwrap();
        let mut d: Vec<String> = v
            .iter()
            .map(|e| e["result_dir"].as_str().unwrap().to_string())
            .collect();
        d.dedup();
        d
    };
    let h = || {
        Test::new()
            .dir(p)
            .args(["history", "cmp", "--format", "json"])
            .run()
            .status(0)
    };
    let one = dirs(&h());
    assert!(one.len() == 1 && one[0].ends_with("results/r1"), "{one:?}");
    // moved: the same run, at its new path
    std::fs::remove_dir_all(p.join("results/copy")).unwrap();
    std::fs::rename(p.join("results/r1"), p.join("results/moved")).unwrap();
    // `expr report` of the moved directory is enough (helper 73: it left the old path)
    Test::new()
        .dir(p)
        .args(["report", "results/moved"])
        .run()
        .status(0);
    let moved = dirs(&h());
    assert!(
        moved.len() == 1 && moved[0].ends_with("results/moved"),
        "{moved:?}"
    );
    assert_eq!(import("results/moved").status, 0);
    // a copy resumed since is a run of its own (helper 73: it was refused, and so was the
    // `--import` the warning advised)
    let copy = std::process::Command::new("cp")
        .args(["-r", "results/moved", "results/fork"])
        .current_dir(p)
        .status()
        .unwrap();
    assert!(copy.success());
    let text = std::fs::read_to_string(p.join("b.kdl")).unwrap();
    std::fs::write(p.join("b.kdl"), text.replace("repeat 3", "repeat 4")).unwrap();
    let resumed = Test::new()
        .dir(p)
        .args(["run", "--resume", "results/fork", "--force"])
        .run()
        .status(0);
    assert!(!resumed.stderr.contains("not added"), "{}", resumed.stderr);
    let both = dirs(&h());
    assert_eq!(both.len(), 2, "{both:?}");
}

/// More paths a flag's file may take (helper 72): a link, dangling or not, into a result
/// directory is inside it; another SQLite database (a second history) is never written over; a
/// folder with a `journal.jsonl` that is not expr's is no result directory; `--junit` and
/// `--summary-md` cannot share a file.
#[test]
fn a_flags_file_through_a_link_or_over_a_database_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("b.kdl"), bench("", "")).unwrap();
    run(p, "b.kdl", "results/r1", &[], 0);
    std::os::unix::fs::symlink("results/r1/new.md", p.join("d.md")).unwrap();
    let r = Test::new()
        .dir(p)
        .args(["history", "cmp", "--output", "d.md"])
        .run()
        .status(2);
    assert!(
        r.stderr
            .contains("--output d.md: inside the result directory"),
        "{}",
        r.stderr
    );
    assert!(!p.join("results/r1/new.md").exists());
    // another history: an SQLite file, whatever its name
    std::fs::copy(
        p.join("results/.expr-history.sqlite"),
        p.join("other.sqlite"),
    )
    .unwrap();
    let r = Test::new()
        .dir(p)
        .args(["history", "cmp", "--output", "other.sqlite"])
        .run()
        .status(2);
    assert!(
        r.stderr
            .contains("--output other.sqlite: is an SQLite database (a history?)"),
        "{}",
        r.stderr
    );
    // a journal.jsonl that is not a run's
    std::fs::create_dir_all(p.join("proj/sub")).unwrap();
    std::fs::write(p.join("proj/journal.jsonl"), "").unwrap();
    Test::new()
        .dir(p)
        .args(["history", "cmp", "--output", "proj/sub/x.md"])
        .run()
        .status(0);
    let r = Test::new()
        .dir(p)
        .args([
            "run",
            "b.kdl",
            "--output",
            "results/r2",
            "--junit",
            "ci.txt",
            "--summary-md",
            "./ci.txt",
        ])
        .run()
        .status(2);
    assert!(
        r.stderr
            .contains("--junit and --summary-md both name ci.txt"),
        "{}",
        r.stderr
    );
    assert!(!p.join("results/r2").exists() && !p.join("ci.txt").exists());
}

/// A tiny CV is written as a number, not as zero, in report.html's headline and in
/// `--summary-md` (helper 76: both said `0.00` for 1e-13 %); a lane without values says why
/// beside its `—` in the summary. By hand: 1e15+1, +2, +3 have sd 1 and mean 1e15+2, a CV of
/// 1e-13 %.
#[test]
fn a_tiny_cv_is_a_number_and_a_missing_mean_says_why_in_the_ci_summary() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("e.kdl"),
        bench(
            "",
            "    lane tiny base=1000000000000001\n    lane gone base=-7\n",
        )
        .replace("    lane x\n", ""),
    )
    .unwrap();
    Test::new()
        .dir(p)
        .args([
            "run",
            "e.kdl",
            "--output",
            "o",
            "-q",
            "--summary-md",
            "sum.md",
        ])
        .run()
        .status(expr::util::exit_codes::POINT_FAILED);
    let md = std::fs::read_to_string(p.join("sum.md")).unwrap();
    let t = md_tables(&md);
    let groups = t.last().unwrap();
    let tiny = groups.iter().find(|r| r[1] == "tiny").expect("tiny's row");
    assert_eq!(tiny[5], "1.00e-13", "{md}");
    let gone = groups.iter().find(|r| r[1] == "gone").expect("gone's row");
    assert!(gone[3].starts_with("— (no values"), "{md}");
    assert!(gone[5].starts_with("— ("), "{md}");
    let html = std::fs::read_to_string(p.join("o/report.html")).unwrap();
    assert!(html.contains(">1.00e-13<"), "the headline's CV");
}

/// `compare --format github` puts no ✅ over rows it did not judge (helper 76: n=1 on each
/// side, 10 → 100, read "✅ … 0 regression(s), 1 compared"): ⚠️ and "N not judged". A JUnit case
/// of a metric without a direction reads `v: A …`, not `v : A …`.
#[test]
fn a_comparison_that_judged_nothing_is_no_green_check() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let one = bench(" direction=\"lower\"", "").replace("repeat 3", "repeat 1");
    std::fs::write(p.join("a.kdl"), &one).unwrap();
    std::fs::write(
        p.join("b.kdl"),
        one.replace("lane x\n", "lane x base=100\n"),
    )
    .unwrap();
    run(p, "a.kdl", "a", &[], 0);
    run(p, "b.kdl", "b", &[], 0);
    let gh = Test::new()
        .dir(p)
        .args(["compare", "a", "b", "--format", "github"])
        .args(["--fail-on-regression", "5"])
        .run()
        .status(0);
    assert!(
        gh.stdout.starts_with("### ⚠️ expr compare"),
        "{}",
        gh.stdout
    );
    assert!(
        gh.stdout
            .contains("1 compared (lane × point × metric), 1 not judged (n=1 or no direction)."),
        "{}",
        gh.stdout
    );
    // no direction, three repeats a side
    let three = bench("", "");
    std::fs::write(p.join("c.kdl"), &three).unwrap();
    std::fs::write(
        p.join("e.kdl"),
        three.replace("lane x\n", "lane x base=50\n"),
    )
    .unwrap();
    run(p, "c.kdl", "c", &[], 0);
    run(p, "e.kdl", "e", &[], 0);
    let note = Test::new()
        .dir(p)
        .args(["compare", "c", "e", "--junit", "j.xml"])
        .args(["--fail-on-regression", "5"])
        .run()
        .status(0);
    // one space between the parts of its place, none for a point without axes
    assert!(
        note.stderr
            .contains("note: b x v changed significantly, but its direction is unknown"),
        "{}",
        note.stderr
    );
    let xml = std::fs::read_to_string(p.join("j.xml")).unwrap();
    let cases = junit_cases(&xml);
    assert_eq!(cases.len(), 1, "{cases:?}");
    assert!(xml.contains(": v: A 11.00 (n=3) → B 51.00 (n=3)"), "{xml}");
}

/// The names a history holds, listed where a name matched none, say how many more there are
/// past the twelfth (helper 76: the thirteenth and on were left out without a word).
#[test]
fn a_long_list_of_names_says_how_many_more() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let one = bench("", "").replace("repeat 3", "repeat 1");
    for i in 0..14 {
        let name = format!("exp{i:02}");
        std::fs::write(
            p.join(format!("{name}.kdl")),
            one.replace("experiment cmp", &format!("experiment {name}")),
        )
        .unwrap();
        run(p, &format!("{name}.kdl"), &name, &[], 0);
    }
    let r = Test::new().dir(p).args(["history", "zzzzzzzz"]).run();
    assert!(r.stderr.contains("`exp11` and 2 more"), "{}", r.stderr);
}

/// An interval beyond a double's range is `— (beyond a double's range)` in `expr history`, as
/// in the report, and `null` with `ci_why` in its JSON (helper 76: `0.00 … n/a` and
/// `[0.0, null]`); a run with one repeat says `— (n=1, no interval)` as the report does.
#[test]
fn history_says_why_an_interval_is_missing() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("e.kdl"),
        "experiment edge\nbench b {\n    run \"if [ {{ repeat }} = 0 ]; then echo v=1.5e300; else echo v=1.7e308; fi\"\n    collect \"regex\" pattern=\"v=([-+0-9.eE]+)\"\n    lane x\n    repeat 2\n}\n",
    )
    .unwrap();
    run(p, "e.kdl", "o", &[], 0);
    let text = Test::new().dir(p).args(["history", "edge"]).run().status(0);
    assert!(
        text.stdout
            .contains("| 8.50e307 | — (beyond a double's range) |"),
        "{}",
        text.stdout
    );
    let json = Test::new()
        .dir(p)
        .args(["history", "edge", "--format", "json"])
        .run()
        .status(0);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    let e = &v.as_array().unwrap()[0];
    assert!(e["ci"].is_null(), "{e}");
    assert_eq!(e["ci_why"], "beyond a double's range", "{e}");
    std::fs::write(
        p.join("one.kdl"),
        "experiment one\nbench b {\n    run \"echo v=3\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane x\n}\n",
    )
    .unwrap();
    run(p, "one.kdl", "o1", &[], 0);
    let text = Test::new().dir(p).args(["history", "one"]).run().status(0);
    assert!(
        text.stdout.contains("| 3.00 | — (n=1, no interval) |"),
        "{}",
        text.stdout
    );
}

/// A lane without a number is shown under the metric its own run measured, not an earlier
/// run's headline (helper 78: a failed lane of a `v` run read `time_ms`, the headline of a run
/// of the experiment before it).
#[test]
fn a_missing_lane_is_shown_under_its_own_runs_metric() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("old.kdl"),
        "experiment t\nbench b {\n    run \"echo ms=5\"\n    collect \"regex\" pattern=\"ms=([0-9]+)\"\n    lane a\n    lane c\n}\n",
    )
    .unwrap();
    std::fs::write(
        p.join("new.kdl"),
        "experiment t\nbench b {\n    param f 0\n    run \"[ {{ f }} = 1 ] && exit 1; echo v=3\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n    lane a\n    lane c f=1\n}\n",
    )
    .unwrap();
    run(p, "old.kdl", "o1", &[], 0);
    run(p, "new.kdl", "o2", &[], 3);
    let text = Test::new().dir(p).args(["history", "t"]).run().status(0);
    let failed = text
        .stdout
        .lines()
        .find(|l| l.contains("| failed |") && l.contains("| c |"))
        .unwrap_or_else(|| panic!("{}", text.stdout));
    assert!(failed.contains("| v | 0 | — (1 failed) |"), "{failed}");
}
