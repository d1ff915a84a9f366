//! A real browser for the tests: headless Chromium opens a report page with checks around it
//! (errors captured from the first line, then what the page shows and what clicking does,
//! written into the DOM as JSON) — no console error, no request, every chart drawn.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

/// Captures errors from the page's first line on (before the page's own script runs).
pub const CAPTURE: &str = r#"<script>window.__errors=[];window.addEventListener('error',function(e){window.__errors.push('error: '+e.message)});(function(){var ce=console.error;console.error=function(){window.__errors.push('console.error: '+Array.prototype.join.call(arguments,' '));return ce.apply(console,arguments)};})();document.addEventListener('securitypolicyviolation',function(e){window.__errors.push('blocked: '+e.blockedURI)});</script>"#;

/// After load: what the page shows, what clicking does, written into the DOM as JSON.
pub const CHECK: &str = r#"<script>window.addEventListener('load',function(){setTimeout(function(){
var r={errors:window.__errors};
function each(q,f){return Array.prototype.map.call(document.querySelectorAll(q),f)}
r.charts=each('svg.chart',function(s){var b=s.getBoundingClientRect();return {w:b.width,h:b.height,
  lanes:Array.prototype.map.call(s.querySelectorAll('.legend-entry'),function(e){return e.getAttribute('data-lane')}),
  legend:s.querySelectorAll('.legend-entry').length,marks:s.querySelectorAll('.series,.bar').length}});
r.resources=performance.getEntriesByType('resource').map(function(e){return e.name});
r.tickOverlaps=[];each('svg.chart',function(s){var b=Array.prototype.map.call(s.querySelectorAll('text.x-tick'),function(t){return t.getBoundingClientRect()}).filter(function(x){return x.width>0});
  for(var i=0;i<b.length;i++)for(var j=i+1;j<b.length;j++){if(b[i].left<b[j].right&&b[j].left<b[i].right&&b[i].top<b[j].bottom&&b[j].top<b[i].bottom)r.tickOverlaps.push(s.querySelector('title').textContent)}
  var sb=s.getBoundingClientRect();b.forEach(function(x){if(x.left<sb.left-0.5||x.right>sb.right+0.5)r.tickOverlaps.push('outside: '+s.querySelector('title').textContent)})});
r.ticks=document.querySelectorAll('svg.chart text.x-tick').length;
var pick=document.querySelector('select[data-picks]');
if(pick){var figs=function(){return Array.prototype.filter.call(document.querySelectorAll('.'+pick.getAttribute('data-picks')),function(f){return !f.hidden&&f.getBoundingClientRect().height>0}).map(function(f){return f.getAttribute('data-series')})};
 r.pick={options:pick.options.length,shown:figs(),links:document.querySelectorAll('svg.chart a.run').length,changes:document.querySelectorAll('svg.chart g.change').length};
 pick.value=pick.options[pick.options.length-1].value;pick.dispatchEvent(new Event('change'));r.pick.after=figs();}
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
pub fn browser() -> Option<PathBuf> {
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
pub fn chromium(bin: &Path, profile: &Path, page: &Path, args: &[&str]) -> (String, String) {
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

pub fn run_with_deadline(mut c: Command, limit: Duration) -> std::process::Output {
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
pub fn open(bin: &Path, work: &Path, html: &Path) -> (Value, String) {
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
    // no two tick labels of a chart's time or sweep axis overlap, none leaves its chart
    assert_eq!(
        v["tickOverlaps"],
        serde_json::json!([]),
        "tick labels overlap in {}",
        html.display()
    );
    (v, log)
}

/// No reference out of the file: no http(s) URL in a src or href, no external stylesheet,
/// script or image, and the CSP that forbids any fetch.
pub fn assert_self_contained(text: &str, at: &Path) {
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

/// Every chart drawn (a size on the page) with a mark per series and a legend entry each.
pub fn assert_charts(v: &Value, at: &str, want: usize, lanes: &[&str]) {
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

/// A run's report.html in the browser: no console error, no request, self-contained, and, when
/// it has charts, each drawn with a legend that names lanes the run has. Without a browser the
/// check says SKIPPED (and fails under CI). The lanes the charts named, or None when skipped.
pub fn check_report(out: &Path, lanes: &[&str]) -> Option<Vec<String>> {
    let Some(bin) = browser() else {
        super::skip("no headless Chromium (apt-get install chromium-headless-shell)");
        return None;
    };
    let work = tempfile::tempdir().unwrap();
    let (v, _) = open(&bin, work.path(), &out.join("report.html"));
    let mut named: Vec<String> = Vec::new();
    for c in v["charts"].as_array().unwrap() {
        assert!(
            c["w"].as_f64().unwrap() > 100.0 && c["h"].as_f64().unwrap() > 100.0,
            "{}: {c}",
            out.display()
        );
        for l in c["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
        {
            assert!(
                lanes.contains(&l),
                "{}: a legend names `{l}`, not a lane of the run",
                out.display()
            );
            if !named.iter().any(|x| x == l) {
                named.push(l.to_string());
            }
        }
    }
    Some(named)
}

/// A run's report.html opens in the browser and, when the run has more than one lane with
/// data, its charts show every one of them (the lanes read from manifest.csv).
pub fn assert_report_shows_every_lane(out: &Path) {
    let rows = super::manifest_by_name(out);
    let mut all: Vec<String> = Vec::new();
    let mut ok: Vec<String> = Vec::new();
    for r in &rows {
        if !all.iter().any(|l| l == &r[1]) {
            all.push(r[1].to_string());
        }
        if &r[13] == "ok" && !ok.iter().any(|l| l == &r[1]) {
            ok.push(r[1].to_string());
        }
    }
    let lanes: Vec<&str> = all.iter().map(String::as_str).collect();
    let Some(named) = check_report(out, &lanes) else {
        return;
    };
    if ok.len() > 1 {
        for l in &ok {
            assert!(
                named.contains(l),
                "{}: no chart shows lane `{l}` (charts name {named:?})",
                out.display()
            );
        }
    }
}
