//! report.html, a compare page and a history page of real `expr run`s, opened in a real browser
//! (headless Chromium, driven by its own `--dump-dom`): no console error, no request, every chart
//! drawn with its lanes, sorting by a header click, hiding a lane, and a lane named `<script>`
//! shown as text; and a report in one language: `language "zh"` gives a Chinese page with no
//! English label, a bench's default an English one with no Chinese character. Without a browser
//! the test says SKIPPED (and fails under CI).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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

/// Captures errors from the page's first line on (before the page's own script runs).
const CAPTURE: &str = r#"<script>window.__errors=[];window.addEventListener('error',function(e){window.__errors.push('error: '+e.message)});(function(){var ce=console.error;console.error=function(){window.__errors.push('console.error: '+Array.prototype.join.call(arguments,' '));return ce.apply(console,arguments)};})();document.addEventListener('securitypolicyviolation',function(e){window.__errors.push('blocked: '+e.blockedURI)});</script>"#;

/// After load: what the page shows, what clicking does, written into the DOM as JSON.
const CHECK: &str = r#"<script>window.addEventListener('load',function(){setTimeout(function(){
var r={errors:window.__errors};
function each(q,f){return Array.prototype.map.call(document.querySelectorAll(q),f)}
r.charts=each('svg.chart',function(s){var b=s.getBoundingClientRect();return {w:b.width,h:b.height,
  lanes:Array.prototype.map.call(s.querySelectorAll('.legend-entry'),function(e){return e.getAttribute('data-lane')}),
  legend:s.querySelectorAll('.legend-entry').length,marks:s.querySelectorAll('.series,.bar').length}});
r.resources=performance.getEntriesByType('resource').map(function(e){return e.name});
r.injected=Array.prototype.some.call(document.scripts,function(s){return s.textContent.indexOf('alert('+'1)')>=0});
r.buttons=each('#lanes button[data-for]',function(b){return b.textContent});
r.lanesShown=!!document.getElementById('lanes')&&!document.getElementById('lanes').hidden;
var t=document.querySelector('#headline table.sortable');
if(t){var ths=t.tHead.rows[0].cells,mi=-1;for(var i=0;i<ths.length;i++){if(/mean|均值/.test(ths[i].textContent)&&mi<0)mi=i}
 function col(){return Array.prototype.map.call(t.tBodies[0].rows,function(x){var c=x.cells[mi];var v=c.getAttribute('data-v');return v===null?null:parseFloat(v)})}
 r.sort={before:col()};ths[mi].click();r.sort.asc=col();ths[mi].click();r.sort.desc=col();}
var btn=document.querySelector('#lanes button[data-for]');
if(btn){var lane=btn.getAttribute('data-for');btn.click();
 var mine=Array.prototype.filter.call(document.querySelectorAll('[data-lane]'),function(e){return e.getAttribute('data-lane')===lane});
 var others=Array.prototype.filter.call(document.querySelectorAll('tr[data-lane],g.series[data-lane],g.bar[data-lane]'),function(e){return e.getAttribute('data-lane')!==lane});
 r.toggle={lane:lane,marked:mine.length,
  hidden:mine.filter(function(e){return !e.classList.contains('legend-entry')}).every(function(e){return getComputedStyle(e).display==='none'}),
  othersShown:others.length>0&&others.every(function(e){return getComputedStyle(e).display!=='none'})};
 btn.click();r.toggle.back=mine.every(function(e){return !e.classList.contains('lane-off')});}
var pre=document.createElement('pre');pre.id='expr-test-result';pre.textContent=JSON.stringify(r);document.body.appendChild(pre);
},0)});</script>"#;

/// The browser: Debian's chromium-headless-shell, or chromium.
fn browser() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("EXPR_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium-headless-shell", "chromium", "chromium-browser"] {
        for d in std::env::split_paths(&path) {
            if d.join(name).is_file() {
                return Some(d.join(name));
            }
        }
    }
    [
        "/usr/lib/chromium/headless_shell",
        "/usr/lib/chromium-headless-shell/chromium-headless-shell",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// Run the browser on a file with these arguments: (stdout, stderr). No name resolves
/// (`MAP * ~NOTFOUND`), so a request could not leave the machine even if one were made.
fn chromium(bin: &Path, profile: &Path, page: &Path, args: &[&str]) -> (String, String) {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()));
    let out = run_with_deadline(c, Duration::from_secs(60));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn run_with_deadline(mut c: Command, limit: Duration) -> std::process::Output {
    use std::process::Stdio;
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the browser");
    let id = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    let watchdog = std::thread::spawn(move || {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // this test's own child only, by its id
        let _ = Command::new("kill").arg(id.to_string()).status();
    });
    let out = child.wait_with_output().expect("wait for the browser");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = watchdog.join();
    out
}

/// Open a page with the checks around it; the checks' findings and the browser's log.
fn open(bin: &Path, work: &Path, html: &Path) -> (Value, String) {
    let text = std::fs::read_to_string(html).unwrap();
    assert_self_contained(&text, html);
    let probe = work.join(format!(
        "probe-{}",
        html.file_name().unwrap().to_string_lossy()
    ));
    let head = "<meta charset=\"utf-8\">\n";
    assert!(text.contains(head), "{}", html.display());
    let with = text
        .replacen(head, &format!("{head}{CAPTURE}\n"), 1)
        .replacen("</body>", &format!("{CHECK}\n</body>"), 1);
    std::fs::write(&probe, with).unwrap();
    let (dom, log) = chromium(
        bin,
        &work.join("profile"),
        &probe,
        &["--dump-dom", "--virtual-time-budget=5000"],
    );
    let json = dom
        .split("<pre id=\"expr-test-result\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "the checks did not run in {}:\n{dom}\n{log}",
                html.display()
            )
        })
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let v: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    // the browser's own log of the page's console (`INFO:CONSOLE:1] "…"`, whatever the
    // level): a report page logs nothing
    for l in log.lines() {
        assert!(
            !(l.contains("Uncaught") || l.contains(":CONSOLE")),
            "console error in {}: {l}",
            html.display()
        );
    }
    assert_eq!(v["errors"], serde_json::json!([]), "{}", html.display());
    assert_eq!(
        v["resources"],
        serde_json::json!([]),
        "requests of {}",
        html.display()
    );
    assert_eq!(v["injected"], false, "a lane name ran as a script");
    (v, log)
}

/// No reference out of the file: no http(s) URL in a src or href, no external stylesheet,
/// script or image, and the CSP that forbids any fetch.
fn assert_self_contained(text: &str, at: &Path) {
    for bad in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href='http",
        "<link",
        "<img",
        "<iframe",
        "url(",
    ] {
        assert!(!text.contains(bad), "{}: `{bad}`", at.display());
    }
    assert!(
        !text.contains("http://") && !text.contains("https://"),
        "{}: an URL",
        at.display()
    );
    assert!(text.contains("default-src 'none'"), "{}", at.display());
    assert!(!text.contains("<script>alert(1)"), "{}", at.display());
}

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

/// Every chart drawn (a size on the page) with a mark per series and a legend entry each.
fn assert_charts(v: &Value, at: &str, want: usize, lanes: &[&str]) {
    let charts = v["charts"].as_array().unwrap();
    assert_eq!(charts.len(), want, "{at}: charts {v}");
    for c in charts {
        assert!(
            c["w"].as_f64().unwrap() > 100.0 && c["h"].as_f64().unwrap() > 100.0,
            "{at}: {c}"
        );
        assert!(
            c["marks"].as_u64().unwrap() >= 1 && c["legend"].as_u64().unwrap() >= 1,
            "{at}: {c}"
        );
    }
    // the lanes' charts name every lane in their legend
    let by_lane: Vec<&Value> = charts
        .iter()
        .filter(|c| c["lanes"].as_array().unwrap().iter().any(|l| !l.is_null()))
        .collect();
    assert!(!by_lane.is_empty(), "{at}: {v}");
    for c in by_lane {
        for l in lanes {
            assert!(
                c["lanes"].as_array().unwrap().iter().any(|x| x == l),
                "{at}: lane {l} not in the legend {c}"
            );
        }
    }
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

    // history --format html, and a filtered trend chart of its own
    let h = Test::new()
        .dir(p)
        .env("EXPR_HISTORY", &p.join("h.sqlite").display().to_string())
        .args(["history", "html-demo", "--lane", "fast", "--format", "html"])
        .run()
        .status(0);
    assert!(
        p.join("history_html-demo_time_ms_fast.svg").is_file(),
        "{}",
        h.stderr
    );
    let hist = p.join("history.html");
    std::fs::write(&hist, &h.stdout).unwrap();
    let (v, _) = open(&bin, p, &hist);
    assert_charts(&v, "history", 1, &["fast"]);

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
