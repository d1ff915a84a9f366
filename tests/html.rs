//! report.html, a compare page and a history page of real `expr run`s, opened in a real browser
//! (headless Chromium, driven by its own `--dump-dom`): no console error, no request, every chart
//! drawn with its lanes, sorting by a header click, hiding a lane, and a lane named `<script>`
//! shown as text; and a report in one language: `language "zh"` gives a Chinese page with no
//! English label, a bench's default an English one with no Chinese character. Without a browser
//! the test says SKIPPED (and fails under CI).

mod common;

use std::path::Path;

use common::browser::{assert_charts, browser, chromium, open};
use common::Test;
use serde_json::Value;

/// A bench with a power-of-two sweep, two lanes (one named like markup) and one failing point.
const BENCH: &str = r##"experiment html-demo {
    description "a bench with a sweep, two lanes and one failing point"
}
host local
bench sum {
    param n 1
    param slow 1
    param breaks 0
    run #"python3 -c "import sys; n,s,r,b=map(int,sys.argv[1:5]); print('starting n=%d' % n); print('log line <b>&'); sys.exit(3) if b and n==4 and r==1 else print('ms=%.3f' % (n*s*1.5 + r*0.25))" {{ n }} {{ slow }} {{ repeat }} {{ breaks }}"#
    collect "regex" pattern="ms=(?P<time_ms>[0-9.]+)" metric="time_ms" direction="lower"
    lane fast slow=1
    lane "<script>alert(1)</script>" slow=2 breaks=1
    sweep n 1 2 4
    repeat 3
}
"##;

/// Per-step CSVs in RecStore's columns (throughput.svg, latency.svg, sweep_<axis>.svg).
const STEPS: &str = r##"experiment html-steps {
    description "per-step CSVs with a stage breakdown"
}
host local
bench b {
    param base 100
    run #"python3 -c "import sys; b=float(sys.argv[1]); r=int(sys.argv[2]); print('rank,step,warmup_excluded,batch_size,embed_lookup_ms,step_total_ms,samples_per_sec'); [print('0,%d,0,8,2.0,%f,%f' % (s, 8000.0/(b+r), b+r)) for s in range(4)]" {{ base }} {{ repeat }} > {{ outdir }}/steps.csv"#
    collect "csv" path="steps.csv"
    lane a base=100
    lane b
    sweep base 100 400
    repeat 2
}
"##;

/// One point whose value is the level in `level` with a deterministic ±2.8 % wobble.
const LONG: &str = r##"experiment long-demo {
    description "a long history"
}
host local
bench one {
    param seed 0
    run #"python3 -c "import math,sys; i=int(sys.argv[1]); print('ms=%f' % (float(open('level').read())*(1+0.028*math.sin(i*2.4))))" {{ seed }}"#
    collect "regex" pattern="ms=(?P<time_ms>[0-9.]+)" metric="time_ms" direction="lower"
    repeat 1
}
"##;

/// Sorting by the mean column ordered the rows both ways.
fn assert_sorts(v: &Value, at: &str) {
    let nums = |k: &str| -> Vec<Option<f64>> {
        v["sort"][k]
            .as_array()
            .unwrap_or_else(|| panic!("{at}: no sortable headline table: {v}"))
            .iter()
            .map(Value::as_f64)
            .collect()
    };
    let (before, asc, desc) = (nums("before"), nums("asc"), nums("desc"));
    assert!(before.len() >= 3, "{at}: {before:?}");
    let known = |x: &[Option<f64>]| -> Vec<f64> { x.iter().flatten().copied().collect() };
    let a = known(&asc);
    assert!(
        a.windows(2).all(|w| w[0] <= w[1]),
        "{at}: ascending {asc:?}"
    );
    let d = known(&desc);
    assert!(
        d.windows(2).all(|w| w[0] >= w[1]),
        "{at}: descending {desc:?}"
    );
    assert_ne!(asc, desc, "{at}: a click changes the order");
    let _ = before;
}

fn assert_toggles(v: &Value, at: &str) {
    let t = &v["toggle"];
    assert_eq!(v["lanesShown"], true, "{at}: {v}");
    assert!(t["marked"].as_u64().unwrap() >= 2, "{at}: {t}");
    assert_eq!(
        t["hidden"], true,
        "{at}: the lane's rows and lines are hidden: {t}"
    );
    assert_eq!(t["othersShown"], true, "{at}: the other lanes stay: {t}");
    assert_eq!(t["back"], true, "{at}: a second click shows it again: {t}");
}

/// The page's own English words (labels, headings, table heads, notes, the lane switches and the
/// chart's axis note): none may be on a Chinese page.
const ENGLISH_LABELS: &[&str] = &[
    "Provenance",
    "provenance<",
    "Headline",
    "headline<",
    "Plots",
    "plots<",
    "Failed and no-data",
    "failed points",
    "Details",
    "details<",
    "Warnings",
    "report of",
    "expr report",
    "experiment file",
    "result directory",
    "started",
    "expr version",
    "first host",
    "Hosts",
    "dirty files",
    "code fingerprint",
    "Machine",
    "higher is better",
    "lower is better",
    "ratio to",
    "repeats",
    ">mean<",
    "interval",
    ">from<",
    " of 3",
    "no interval",
    "no baseline",
    "and 2 more",
    "lanes (click",
    "sort by this column",
    "log of",
    "last 20 lines",
    ">point<",
    ">status<",
    ">reason<",
    "log₂ scale",
    " vs ",
    "per lane",
    "every point ran",
    "no data",
    "no chart",
    " failed<",
    "1 failed",
];

/// The page without its script and style (code, not words), and without the experiment's own
/// description (the user's text, in whatever language the user wrote it).
fn words_of(page: &str, description: &str) -> String {
    let mut out = String::new();
    let mut rest = page;
    while let Some(i) = rest.find("<script>").or_else(|| rest.find("<style>")) {
        out.push_str(&rest[..i]);
        let end = if rest[i..].starts_with("<script>") {
            "</script>"
        } else {
            "</style>"
        };
        let j = rest[i..]
            .find(end)
            .map_or(rest.len(), |j| i + j + end.len());
        rest = &rest[j..];
    }
    out.push_str(rest);
    out.replace(description, "")
}

fn run(dir: &Path, file: &str, out: &str, status: i32) {
    Test::new()
        .dir(dir)
        .env("EXPR_HISTORY", &dir.join("h.sqlite").display().to_string())
        .args(["run", file, "--output", out, "-q"])
        .run()
        .status(status);
}

#[test]
fn report_compare_and_history_pages_open_in_a_real_browser() {
    let Some(bin) = browser() else {
        common::skip("no headless Chromium (apt-get install chromium-headless-shell)");
        return;
    };
    let started = std::time::Instant::now();
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("e.kdl"), BENCH).unwrap();
    std::fs::write(p.join("s.kdl"), STEPS).unwrap();
    // one failing point: exit 3
    run(p, "e.kdl", "a", 3);
    run(p, "e.kdl", "b", 3);
    run(p, "s.kdl", "s", 0);

    // the bench: one chart of the headline against n, on a log-2 axis
    let html = p.join("a/report.html");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(p.join("a/headline_sum_vs_n.svg").is_file());
    assert!(
        text.contains("log₂ scale"),
        "powers of two get a log-2 axis"
    );
    assert!(text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // the failed point with its reason and its log's tail, escaped
    assert!(text.contains("script_alert_1_script_n4_r1") && text.contains("exit 3"));
    assert!(
        text.contains("log line &lt;b&gt;&amp;"),
        "the log tail, escaped"
    );
    let (v, _) = open(&bin, p, &html);
    assert_charts(&v, "report.html", 1, &["fast", "<script>alert(1)</script>"]);
    assert_eq!(
        v["buttons"],
        serde_json::json!(["fast", "<script>alert(1)</script>"]),
        "lane switches, as text"
    );
    assert_sorts(&v, "report.html");
    assert_toggles(&v, "report.html");
    // a bench is English by default: not one Chinese character on its page
    assert!(text.contains("<html lang=\"en\">"));
    assert_eq!(
        common::cjk(&text),
        None,
        "a Chinese character in English report.html"
    );

    // the same experiment with `language "zh"`: a Chinese page, `lang="zh"`, no English label;
    // it still opens, draws, sorts and hides lanes
    let zh = BENCH.replacen(
        "description \"a bench with a sweep, two lanes and one failing point\"\n",
        "description \"a bench with a sweep, two lanes and one failing point\"\n    language \"zh\"\n",
        1,
    );
    assert_ne!(zh, BENCH);
    std::fs::write(p.join("zh.kdl"), zh).unwrap();
    run(p, "zh.kdl", "zh", 3);
    let zh_html = p.join("zh/report.html");
    let text = std::fs::read_to_string(&zh_html).unwrap();
    assert!(text.contains("<html lang=\"zh\">"), "{text}");
    let words = words_of(
        &text,
        "a bench with a sweep, two lanes and one failing point",
    );
    for w in ENGLISH_LABELS {
        assert!(
            !words.contains(w),
            "English `{w}` in a Chinese report.html: {}",
            words
                .lines()
                .filter(|l| l.contains(w))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    for w in [
        "出处",
        "主要指标",
        "均值",
        "越低越好",
        "失败与无数据的点",
        "详情",
    ] {
        assert!(words.contains(w), "lacks `{w}`: {words}");
    }
    let (v, _) = open(&bin, p, &zh_html);
    assert_charts(
        &v,
        "zh report.html",
        1,
        &["fast", "<script>alert(1)</script>"],
    );
    assert_sorts(&v, "zh report.html");
    assert_toggles(&v, "zh report.html");

    // per-step CSVs: throughput, latency breakdown and the sweep, same lanes
    let steps = p.join("s/report.html");
    let (v, _) = open(&bin, p, &steps);
    assert_charts(&v, "steps report.html", 3, &["a", "b"]);
    assert_sorts(&v, "steps report.html");
    assert_toggles(&v, "steps report.html");

    // compare A B --format html
    let c = Test::new()
        .dir(p)
        .args(["compare", "a", "b", "--format", "html"])
        .run()
        .status(0);
    let cmp = p.join("compare.html");
    std::fs::write(&cmp, &c.stdout).unwrap();
    let (v, _) = open(&bin, p, &cmp);
    assert_charts(&v, "compare", 1, &["fast", "<script>alert(1)</script>"]);
    assert_toggles(&v, "compare");
    assert!(c.stdout.contains("<h2>Per lane and point</h2>"));

    // history --format html: a chart per series (fast × n = 1, 2, 4) and a selector that shows
    // one at a time; each run's point links to its report; no file written unless asked
    let h = Test::new()
        .dir(p)
        .env("EXPR_HISTORY", &p.join("h.sqlite").display().to_string())
        .args(["history", "html-demo", "--lane", "fast", "--format", "html"])
        .run()
        .status(0);
    let written: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("history"))
        .collect();
    assert!(written.is_empty(), "expr history wrote {written:?} unasked");
    let hist = p.join("history.html");
    std::fs::write(&hist, &h.stdout).unwrap();
    let (v, _) = open(&bin, p, &hist);
    let pick = &v["pick"];
    assert_eq!(pick["options"], 3, "{v}");
    assert_eq!(
        pick["shown"].as_array().unwrap().len(),
        1,
        "one chart at a time: {v}"
    );
    assert_eq!(
        pick["after"],
        serde_json::json!(["2"]),
        "the selector shows the chosen one: {v}"
    );
    // runs a, b and zh (the same experiment in Chinese) in each of the three series
    assert_eq!(
        pick["links"], 9,
        "each run of each series links to its report: {v}"
    );

    // a long history: 36 runs with a step from run 20 — its time axis labels chosen, not every
    // run's, none overlapping (the old chart labelled 12 of them on top of each other)
    std::fs::write(p.join("level"), "100").unwrap();
    std::fs::write(p.join("long.kdl"), LONG).unwrap();
    for i in 1..=36 {
        if i == 20 {
            std::fs::write(p.join("level"), "110").unwrap();
        }
        Test::new()
            .dir(p)
            .env("EXPR_HISTORY", &p.join("long.sqlite").display().to_string())
            .args(["run", "long.kdl", "--output", &format!("l{i}"), "-q"])
            .args(["--set", &format!("seed={i}")])
            .run()
            .status(0);
    }
    let out = p.join("long.html");
    Test::new()
        .dir(p)
        .env("EXPR_HISTORY", &p.join("long.sqlite").display().to_string())
        .args(["history", "long-demo", "--format", "html", "--output"])
        .arg_path(&out)
        .run()
        .status(0);
    let (v, _) = open(&bin, p, &out);
    assert!(v["ticks"].as_u64().unwrap() >= 4, "{v}");
    assert!(
        v["ticks"].as_u64().unwrap() < 36,
        "not every run labelled: {v}"
    );
    assert_eq!(v["pick"]["changes"], 1, "the step is marked: {v}");
    assert_eq!(v["pick"]["links"], 36, "{v}");

    // the picture the README shows
    let shot = p.join("report.png");
    chromium(
        &bin,
        &p.join("profile"),
        &html,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1100,1500",
        ],
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    if let Some(to) = std::env::var_os("EXPR_SCREENSHOT") {
        std::fs::copy(&shot, to).unwrap();
    }
    eprintln!("browser test: {:.1} s", started.elapsed().as_secs_f64());
}
