//! report.html: one self-contained page per result directory — provenance, the headline per lane
//! and sweep point with its interval and ratio to the baseline lane, every chart inline, the
//! points that failed or gave no data with their reason and log tail, and then the same blocks
//! summary.md has. Every text is escaped here; every number is the report data's (or `—` with
//! its reason).

use std::fmt::Write;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use crate::kind_api::data::{Group, ReportData};
use crate::kind_api::doc::{Block, Doc, Span, Text};
use crate::report::format::{Format, Report};
use crate::report::page::{self, Cell};
use crate::report::plots;
use crate::results::{atomic, manifest};
use crate::util::fmt::{html_text as esc, km};
use crate::util::lang::Lang;
use crate::util::stats;

/// How many lines of a failed point's log the page shows.
pub const LOG_TAIL_LINES: usize = 20;

/// report.html.
pub struct Html;

impl Format for Html {
    fn write(&self, r: &Report) -> Result<Vec<String>, String> {
        let text = render(r);
        atomic::write(&r.dir.join("report.html"), text.as_bytes())?;
        Ok(vec!["report.html".into()])
    }
}

/// The whole page, every word of its own in the report's language (`r.data.lang`).
pub fn render(r: &Report) -> String {
    let d = r.data;
    let l = d.lang;
    let header = crate::report::gather::experiment_of(r.dir)
        .map(|(_, h)| h)
        .unwrap_or_default();
    let mut h = String::new();
    let description = d
        .exp
        .as_ref()
        .map(|e| e.description.clone())
        .unwrap_or_default();
    let of = format!("<code>{}</code>", esc(&d.dir));
    let _ = writeln!(
        h,
        "<header>\n<h1>{}</h1>\n<p>{}</p>\n<p class=\"muted\">{}</p>\n</header>",
        esc(&d.experiment),
        esc(&description),
        l.t(format!("{of} 的报告"), format!("report of {of}"))
    );
    h.push_str(&counts(d));
    let mut b = String::new();
    b.push_str("<nav>");
    for (id, zh, en) in [
        ("provenance", "出处", "provenance"),
        ("headline", "主要指标", "headline"),
        ("plots", "图", "plots"),
        ("problems", "失败的点", "failed points"),
        ("details", "详情", "details"),
    ] {
        let _ = write!(b, "<a href=\"#{id}\">{}</a>", l.t(zh, en));
    }
    b.push_str("</nav>\n");
    b.push_str(&provenance(d, &header));
    b.push_str(&headline(d));
    b.push_str(&figures(d));
    b.push_str(&problems(d, r.dir));
    if !d.warnings.is_empty() {
        let _ = writeln!(
            b,
            "<section id=\"warnings\">\n<h2>{}</h2>\n<ul>",
            l.t("警告", "Warnings")
        );
        for w in &d.warnings_said {
            let _ = writeln!(b, "<li>{}</li>", esc(w));
        }
        b.push_str("</ul>\n</section>\n");
    }
    let _ = writeln!(
        b,
        "<section id=\"details\">\n<h2>{}</h2>",
        l.t("详情（同 summary.md）", "Details (as in summary.md)")
    );
    // the machines are the provenance's already: not a second time here
    let machines = crate::report::machine::doc(std::path::Path::new(&d.dir), l);
    let details = crate::kind_api::doc::Doc(
        r.doc()
            .0
            .iter()
            .filter(|blk| !machines.0.contains(blk))
            .cloned()
            .collect(),
    );
    b.push_str(&blocks(&details));
    b.push_str("</section>\n");
    page::page(
        l,
        &format!("{} — {}", d.experiment, l.t("expr 报告", "expr report")),
        &h,
        &plots::lanes(d),
        &b,
    )
}

/// Points by status and expectations met, as badges.
fn counts(d: &ReportData) -> String {
    let l = d.lang;
    let mut o = String::from("<p id=\"counts\">");
    let n = |s: &str| d.points.iter().filter(|p| p.status == s).count();
    let count = |s: &str| {
        l.t(
            format!("{} {} 个", status_word(l, s), n(s)),
            format!("{} {s}", n(s)),
        )
    };
    let _ = write!(o, "<span class=\"badge ok\">{}</span>", count("ok"));
    for s in ["failed", "no-data", "interrupted", "missing"] {
        if n(s) > 0 {
            let _ = write!(o, "<span class=\"badge bad\">{}</span>", count(s));
        }
    }
    if !d.expectations.is_empty() {
        let judged: Vec<_> = d.expectations.iter().filter(|e| e.judged).collect();
        let unmet = judged.iter().filter(|e| !e.ok).count();
        let class = if unmet > 0 { "bad" } else { "ok" };
        let (met, all) = (judged.len() - unmet, judged.len());
        let _ = write!(
            o,
            "<span class=\"badge {class}\">{}</span>",
            l.t(
                format!("期望（expect）：{all} 项中 {met} 项满足"),
                format!("expectations: {met} of {all} met")
            )
        );
    }
    o.push_str("</p>\n");
    o
}

/// A point's status (manifest.csv's word) as the report's language says it.
fn status_word(l: Lang, s: &str) -> &str {
    crate::results::reason::status_word(l, s)
}

/// What ran where: the run, then each host's checkout as preflight recorded it.
fn provenance(d: &ReportData, header: &crate::results::event::Header) -> String {
    let l = d.lang;
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut o = format!(
        "<section id=\"provenance\">\n<h2>{}</h2>\n<table>\n",
        l.t("出处", "Provenance")
    );
    let row = |o: &mut String, k: &str, v: &str| {
        let shown = if v.is_empty() { "—" } else { v };
        let _ = writeln!(o, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(shown));
    };
    row(&mut o, l.t("实验", "experiment"), &d.experiment);
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    row(
        &mut o,
        l.t("实验文件", "experiment file"),
        &opt(&header.source),
    );
    row(&mut o, l.t("结果目录", "result directory"), &d.dir);
    row(&mut o, l.t("开始时间", "started"), &opt(&header.started));
    row(
        &mut o,
        l.t("expr 版本", "expr version"),
        &opt(&header.expr_version),
    );
    row(
        &mut o,
        l.t("git head（第一个 host）", "git head (first host)"),
        &d.git_head,
    );
    row(
        &mut o,
        l.t("hostname（第一个 host）", "hostname (first host)"),
        &d.hostname,
    );
    o.push_str("</table>\n");
    if let Some(hosts) = header.hosts.as_ref().and_then(|h| h.as_array()) {
        let rows = hosts
            .iter()
            .map(|h| {
                let dirty = h["dirty_files"].as_i64();
                (
                    None,
                    vec![
                        Cell::text(&s(&h["host"])),
                        Cell::text(&s(&h["hostname"])),
                        Cell::text(&s(&h["repo"])),
                        Cell::html(format!("<code>{}</code>", esc(&s(&h["git_head"])))),
                        Cell::num(
                            &dirty.map(|n| n.to_string()).unwrap_or_else(|| "—".into()),
                            dirty.map(|n| n as f64),
                        ),
                        Cell::html(format!("<code>{}</code>", esc(&s(&h["fingerprint"])))),
                    ],
                )
            })
            .collect();
        let _ = writeln!(o, "<h3>{}</h3>", l.t("各 host", "Hosts"));
        o.push_str(&page::table(
            &[
                "host",
                "hostname",
                l.t("仓库", "repo"),
                "git head",
                l.t("未提交的文件", "dirty files"),
                l.t("代码指纹", "code fingerprint"),
            ],
            rows,
        ));
    }
    o.push_str(&crate::report::machine::html(
        std::path::Path::new(&d.dir),
        l,
    ));
    o.push_str("</section>\n");
    o
}

/// A group's 95 % interval and CV cells; `—` with why where it has none (n=1, a mean at or
/// below 0, past a double's range).
fn spread_cells(g: &Group, l: crate::util::lang::Lang) -> [Cell; 2] {
    let dash = |cv: bool| {
        let why = crate::kind_api::tables::spread_why(g, cv, l).unwrap_or("");
        Cell::num(&format!("—{}", l.paren(why)), None)
    };
    let interval = match stats::ci95(&g.values) {
        Some((lo, hi)) if lo.is_finite() && hi.is_finite() => {
            Cell::num(&format!("{} … {}", km(lo), km(hi)), Some(hi - lo))
        }
        Some(_) => Cell::num(
            &format!(
                "—{}",
                l.paren(l.t("超出双精度范围", "beyond a double's range"))
            ),
            None,
        ),
        None if g.values.len() == 1 => {
            Cell::num(l.t("—（n=1，无区间）", "— (n=1, no interval)"), None)
        }
        None => dash(false),
    };
    let cv = match g.cv_percent {
        Some(c) => Cell::num(&km(c), Some(c)),
        None => dash(true),
    };
    [interval, cv]
}

/// The headline metric per bench, lane and sweep point: mean, 95 % interval, CV and ratio.
fn headline(d: &ReportData) -> String {
    let l = d.lang;
    let mut o = format!(
        "<section id=\"headline\">\n<h2>{}</h2>\n",
        l.t("主要指标", "Headline")
    );
    let mut benches: Vec<&String> = Vec::new();
    for g in &d.groups {
        if !benches.contains(&&g.bench) {
            benches.push(&g.bench);
        }
    }
    if benches.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"muted\">{}</p>",
            l.t(
                "本次运行没有任何点有数据。",
                "no point of this run has data."
            )
        );
    }
    for bench in benches {
        let groups: Vec<&Group> = d.groups.iter().filter(|g| &g.bench == bench).collect();
        let metric = d
            .points
            .iter()
            .filter(|p| &p.bench == bench && p.status == "ok")
            .find_map(|p| p.metrics.first());
        let what = metric
            .map(|m| plots::metric_label(&m.name, &m.unit))
            .unwrap_or_else(|| l.t("主要指标", "headline").into());
        let direction = match metric.and_then(|m| m.higher_is_better) {
            Some(true) => l.paren(l.t("越高越好", "higher is better")),
            Some(false) => l.paren(l.t("越低越好", "lower is better")),
            None => String::new(),
        };
        let _ = writeln!(
            o,
            "<h3>bench <code>{}</code>{}{}{}</h3>",
            esc(bench),
            l.t("：", ": "),
            esc(&what),
            direction
        );
        let mut axes: Vec<String> = Vec::new();
        for g in &groups {
            for (k, _) in &g.axes {
                if !axes.contains(k) {
                    axes.push(k.clone());
                }
            }
        }
        let baseline = groups.iter().find_map(|g| g.baseline.clone());
        // as summary.md heads it: in the metric's direction, or the plain ratio
        let ratio_head = match (&baseline, metric.and_then(|m| m.higher_is_better)) {
            (Some(b), Some(_)) => l.t(
                format!("相对 {b}（倍，>1 更好）"),
                format!("vs {b} (×, >1 is better)"),
            ),
            (Some(b), None) => l.t(format!("÷ {b}（比值）"), format!("÷ {b} (ratio)")),
            (None, _) => l.t("相对基线的比值", "ratio to baseline").into(),
        };
        let mut head: Vec<&str> = vec!["lane"];
        head.extend(axes.iter().map(String::as_str));
        head.extend([
            l.t("repeat 数", "repeats"),
            l.t("均值", "mean"),
            l.t("95 % 区间", "95 % interval"),
            "CV %",
            ratio_head.as_str(),
            l.t("数据来源", "from"),
        ]);
        let rows = groups
            .iter()
            .map(|g| {
                let mut cells = vec![Cell::text(&g.lane)];
                for a in &axes {
                    let v = g
                        .axes
                        .iter()
                        .find(|(k, _)| k == a)
                        .map(|(_, v)| v.as_str())
                        .unwrap_or("");
                    cells.push(Cell::num(v, v.parse().ok()));
                }
                let n = g.values.len();
                let all = g.run_ids.len();
                cells.push(Cell::num(
                    &l.t(format!("{n} / {all}"), format!("{n} of {all}")),
                    Some(n as f64),
                ));
                let why = if n == 0 {
                    no_value(d, g)
                } else {
                    String::new()
                };
                cells.push(match g.mean {
                    Some(m) => Cell::num(&km(m), Some(m)),
                    None => Cell::num(&format!("—{}", l.paren(&why)), None),
                });
                cells.extend(spread_cells(g, l));
                cells.push(match (g.speedup, &g.baseline) {
                    (Some(s), _) => Cell::num(&crate::util::fmt::ratio(s), Some(s)),
                    (None, _) if baseline.is_none() => {
                        Cell::num(l.t("—（没有基线 lane）", "— (no baseline lane)"), None)
                    }
                    (None, _) => Cell::num(
                        &format!(
                            "—{}",
                            l.paren(crate::kind_api::tables::ratio_why(&d.groups, g, l))
                        ),
                        None,
                    ),
                });
                cells.push(Cell::html(sources(d, g)));
                (Some(g.lane.clone()), cells)
            })
            .collect();
        o.push_str(&page::table(&head, rows));
    }
    o.push_str("</section>\n");
    o
}

/// Why a group has no value: its points' statuses.
fn no_value(d: &ReportData, g: &Group) -> String {
    let mut st: Vec<&str> = d
        .points_of(g)
        .map(|p| status_word(d.lang, &p.status))
        .collect();
    st.sort();
    st.dedup();
    if st.is_empty() {
        d.lang.t("无数据", "no data").into()
    } else {
        st.join(d.lang.and_sep())
    }
}

/// Where a group's values were read (the first files, with their lines).
fn sources(d: &ReportData, g: &Group) -> String {
    let src: Vec<String> = d
        .points_of(g)
        .filter_map(|p| p.metrics.first().map(|m| m.source.clone()))
        .collect();
    match src.len() {
        0 => "<span class=\"muted\">—</span>".into(),
        1 => format!("<code>{}</code>", esc(&src[0])),
        n => format!(
            "<code>{}</code> <span class=\"muted\">{}</span>",
            esc(&src[0]),
            d.lang.t(
                format!("等，另有 {} 个", n - 1),
                format!("and {} more", n - 1)
            )
        ),
    }
}

/// Every chart, inline (the same SVG as the files beside it).
fn figures(d: &ReportData) -> String {
    let l = d.lang;
    let figs = plots::figures(d);
    let mut o = format!("<section id=\"plots\">\n<h2>{}</h2>\n", l.t("图", "Plots"));
    if figs.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"muted\">{}</p>",
            l.t(
                "没有图：图需要一个 sweep 或多于一个 lane，以及有数据的点。",
                "no chart: a chart needs a sweep or more than one lane, and a point with data."
            )
        );
    }
    for f in figs {
        let svg = f
            .svg
            .replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
        let _ = writeln!(
            o,
            "<figure>\n{svg}<figcaption>{} — <a href=\"{}\">{}</a></figcaption>\n</figure>",
            esc(&f.title),
            page::href(&f.file),
            esc(&f.file)
        );
    }
    o.push_str("</section>\n");
    o
}

/// The points without a number: status, reason, and the tail of their log.
fn problems(d: &ReportData, dir: &Path) -> String {
    let l = d.lang;
    let bad: Vec<_> = d.points.iter().filter(|p| p.status != "ok").collect();
    let mut o = format!(
        "<section id=\"problems\">\n<h2>{}</h2>\n",
        l.t("失败与无数据的点", "Failed and no-data points")
    );
    if bad.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"ok\">{}</p>\n</section>",
            l.t(
                "每个点都运行并得到了数据。",
                "every point ran and gave data."
            )
        );
        return o;
    }
    let logs: Vec<manifest::Row> = manifest::read(&dir.join("manifest.csv"));
    let rows = bad
        .iter()
        .map(|p| {
            let why = p
                .problem
                .as_deref()
                .filter(|s| !s.is_empty())
                .map(|e| crate::results::reason::quoted(l, e))
                .unwrap_or_else(|| p.said.clone());
            (
                Some(p.lane.clone()),
                vec![
                    Cell::html(format!("<code>{}</code>", esc(&p.run_id))),
                    Cell::text(&p.lane),
                    Cell::text(&crate::kind_api::tables::axes_label(&p.axes)),
                    // manifest.csv's word in the title, the language's on the page
                    Cell::html(format!(
                        "<span class=\"bad\" title=\"{}\">{}</span>",
                        esc(&p.status),
                        esc(status_word(l, &p.status))
                    )),
                    Cell::text(if why.is_empty() { "—" } else { &why }),
                ],
            )
        })
        .collect();
    o.push_str(&page::table(
        &[
            "run",
            "lane",
            l.t("点", "point"),
            l.t("状态", "status"),
            l.t("原因", "reason"),
        ],
        rows,
    ));
    let log_of: std::collections::HashMap<&str, &manifest::Row> =
        logs.iter().map(|r| (r.run_id.as_str(), r)).collect();
    for p in &bad {
        let Some(row) = log_of.get(p.run_id.as_str()) else {
            continue;
        };
        if row.log_path.is_empty() {
            continue;
        }
        let (id, log) = (
            format!("<code>{}</code>", esc(&p.run_id)),
            format!("<code>{}</code>", esc(&row.log_path)),
        );
        let _ = write!(
            o,
            "<details open data-lane=\"{}\">\n<summary>{}",
            esc(&p.lane),
            l.t(format!("{id} 的日志：{log}"), format!("log of {id}: {log}"))
        );
        match tail(dir, &row.log_path, LOG_TAIL_LINES, l) {
            Ok((lines, _)) if lines.trim().is_empty() => {
                // a box with nothing in it reads as a display fault
                let _ = writeln!(
                    o,
                    "</summary>\n<p class=\"muted\">{}</p>\n</details>",
                    l.t("（日志为空）", "(empty log)")
                );
            }
            Ok((lines, cut)) => {
                let _ = writeln!(
                    o,
                    "{}</summary>\n<pre>{}</pre>\n</details>",
                    if cut {
                        l.paren(&l.t(
                            format!("最后 {LOG_TAIL_LINES} 行"),
                            format!("last {LOG_TAIL_LINES} lines"),
                        ))
                    } else {
                        String::new()
                    },
                    esc(&lines)
                );
            }
            Err(e) => {
                let _ = writeln!(
                    o,
                    "</summary>\n<p class=\"muted\">{}</p>\n</details>",
                    esc(&e)
                );
            }
        }
    }
    o.push_str("</section>\n");
    o
}

/// The last `n` lines of a log inside the result directory (at most its last 64 KiB are read);
/// and whether lines were left out. A path outside the directory is not read. Why not, in `l`.
pub fn tail(dir: &Path, log: &str, n: usize, l: Lang) -> Result<(String, bool), String> {
    // the manifest names a log as the run's command line named the directory (`out/logs/…`):
    // a relative path is looked up below the directory, its leading parts dropped until it is
    // (an absolute one the same way where the directory was copied or moved since the run:
    // `/old/place/out/logs/x.log` is this directory's `logs/x.log`)
    let rel = Path::new(log);
    let below = |from: usize| {
        let parts: Vec<_> = rel.components().collect();
        (from..parts.len())
            .map(|k| dir.join(parts[k..].iter().collect::<std::path::PathBuf>()))
            .find(|p| p.is_file())
    };
    let inside = |p: &Path| {
        dir.canonicalize()
            .ok()
            .zip(p.canonicalize().ok())
            .is_some_and(|(root, real)| real.starts_with(root))
    };
    let p = if rel.is_absolute() {
        if inside(rel) {
            rel.to_path_buf()
        } else {
            below(1).unwrap_or_else(|| rel.to_path_buf())
        }
    } else {
        below(0).unwrap_or_else(|| dir.join(rel))
    };
    let (root, real) = (
        dir.canonicalize().map_err(|e| e.to_string())?,
        p.canonicalize().map_err(|e| {
            l.t(
                format!("{log} 无法读取：{e}"),
                format!("{log} cannot be read: {e}"),
            )
        })?,
    );
    if !real.starts_with(&root) {
        return Err(l.t(
            format!("{log} 不在结果目录内：不显示"),
            format!("{log} is outside the result directory: not shown"),
        ));
    }
    let mut f = std::fs::File::open(&real).map_err(|e| format!("{log}: {e}"))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    // the last 64 KiB, read with 4 KiB more before them: the secrets are masked in the whole,
    // then the text before the window is dropped, so that a secret the window's edge cuts is
    // not shown in part (helper 77: `…ECRET123zzz`)
    const MAX: u64 = 64 * 1024;
    const BEFORE: u64 = 4 * 1024;
    let start = len.saturating_sub(MAX + BEFORE);
    f.seek(SeekFrom::Start(start))
        .map_err(|e| format!("{log}: {e}"))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)
        .map_err(|e| format!("{log}: {e}"))?;
    let text = crate::util::secret::mask_known(&String::from_utf8_lossy(&bytes));
    let mut lines: Vec<std::borrow::Cow<str>> = text.lines().map(Into::into).collect();
    // a line cut by the window is not shown, unless it is all the window holds (a log whose
    // last line is longer): then its end is, after a `…`
    if start > 0 && !lines.is_empty() {
        // (blank lines after it do not count: `…line\n\n`)
        if lines.iter().skip(1).all(|l| l.trim().is_empty()) {
            let end: String = lines[0].chars().skip(BEFORE as usize).collect();
            lines[0] = format!("…{end}").into();
        } else {
            lines.remove(0);
        }
    }
    let cut = start > 0 || lines.len() > n;
    let keep = lines.len().saturating_sub(n);
    Ok((lines[keep..].join("\n"), cut))
}

/// The document's blocks as HTML (summary.md's content, the same blocks).
pub fn blocks(doc: &Doc) -> String {
    let mut o = String::new();
    for b in &doc.0 {
        match b {
            Block::Heading(level, t) => {
                // the page's own h1/h2 come first: a section is one level down
                let l = (*level + 1).min(6);
                let _ = writeln!(o, "<h{l}>{}</h{l}>", spans(t));
            }
            Block::Para(t) => {
                let _ = writeln!(o, "<p>{}</p>", spans(t));
            }
            Block::List { lead, items } => {
                if let Some(l) = lead {
                    let _ = writeln!(o, "<p>{}</p>", spans(l));
                }
                o.push_str("<ul>\n");
                for i in items {
                    let _ = writeln!(o, "<li>{}</li>", spans(i));
                }
                o.push_str("</ul>\n");
            }
            Block::Table(t) => {
                let head: Vec<String> = t.head.iter().map(Text::flat).collect();
                let head: Vec<&str> = head.iter().map(String::as_str).collect();
                let rows = t
                    .rows
                    .iter()
                    .map(|r| {
                        (
                            None,
                            r.iter()
                                .map(|c| Cell {
                                    // sorted by the number it begins with (`5.00e-5` by
                                    // 0.00005, not by its text)
                                    sort: crate::util::fmt::leading_number(&c.flat()),
                                    ..Cell::html(spans(c))
                                })
                                .collect::<Vec<Cell>>(),
                        )
                    })
                    .collect();
                o.push_str(&page::table(&head, rows));
            }
        }
    }
    o
}

/// Text spans as HTML, every one escaped.
pub fn spans(t: &Text) -> String {
    let mut o = String::new();
    for s in &t.0 {
        match s {
            Span::Plain(p) => o.push_str(&esc(p)),
            Span::Code(c) => {
                let _ = write!(o, "<code>{}</code>", esc(c));
            }
            Span::Strong(s) => {
                let _ = write!(o, "<strong>{}</strong>", esc(s));
            }
            Span::Link { text, href } => {
                let _ = write!(o, "<a href=\"{}\">{}</a>", page::href(href), esc(text));
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind_api::doc::Table;

    #[test]
    fn every_span_and_attribute_is_escaped() {
        let mut d = Doc::default();
        d.h2("<h2>");
        let mut t = Table::new(["<th>", "b"]);
        t.row([Text::code("<script>alert(1)</script>"), Text::plain("a&b")]);
        d.table(t);
        d.para(Text::plain("x").and_link("<i>", "javascript:alert(1)\"onx="));
        let h = blocks(&d);
        assert!(!h.contains("<script>") && !h.contains("<i>") && !h.contains("<h2><h2>"));
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{h}");
        assert!(
            h.contains("href=\"./javascript:alert(1)&quot;onx=\""),
            "{h}"
        );
    }

    /// A section's table cells carry the number they begin with, so that a column of
    /// `5.00e-5`, `0.0200`, `2.00e15` sorts by value (helper 76: the page's script read
    /// `5.00e-5` as 5).
    #[test]
    fn a_section_table_sorts_by_the_numbers_its_cells_show() {
        let mut d = Doc::default();
        let mut t = Table::new(["lane", "s (mean)"]);
        for (lane, v) in [
            ("A", "0.50"),
            ("B", "5.00e-5"),
            ("C", "1.50K"),
            ("D", "— (no-data)"),
        ] {
            t.row([Text::plain(lane), Text::plain(v)]);
        }
        d.table(t);
        let h = blocks(&d);
        for cell in [
            "<td data-v=\"0.5\">0.50</td>",
            "<td data-v=\"0.00005\">5.00e-5</td>",
            "<td data-v=\"1500\">1.50K</td>",
            "<td>— (no-data)</td>",
            "<td>A</td>",
        ] {
            assert!(h.contains(cell), "{cell}: {h}");
        }
    }

    /// A secret the log's 64 KiB window cuts is masked whole or not shown in part (helper 77:
    /// `…ECRET123zzz` in report.html).
    #[test]
    fn a_secret_at_the_edge_of_the_log_tail_is_not_shown_in_part() {
        crate::util::secret::register_secrets(["hf_abcdefSECRET123"]);
        let d = tempfile::tempdir().unwrap();
        for z in [64 * 1024 - 9, 68 * 1024 - 9, 64 * 1024 + 2000] {
            let body = format!("{}hf_abcdefSECRET123{}\n", "A".repeat(100), "z".repeat(z));
            std::fs::write(d.path().join("a.log"), body).unwrap();
            let (t, _) = tail(d.path(), "a.log", 20, Lang::En).unwrap();
            for part in ["SECRET", "CRET1", "T123", "23zz"] {
                assert!(!t.contains(part), "{z}: {part}");
            }
        }
    }

    #[test]
    fn a_log_tail_is_its_last_lines_and_stays_in_the_directory() {
        let d = tempfile::tempdir().unwrap();
        let body: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        std::fs::write(d.path().join("a.log"), body).unwrap();
        let (t, cut) = tail(d.path(), "a.log", 20, Lang::En).unwrap();
        assert!(
            cut && t.starts_with("line 11\n") && t.ends_with("line 30"),
            "{t}"
        );
        assert!(tail(d.path(), "/etc/hostname", 20, Lang::En).is_err());
        assert!(tail(d.path(), "../x.log", 20, Lang::En).is_err());
        // as the manifest names it: below the directory the run was given
        std::fs::create_dir(d.path().join("logs")).unwrap();
        std::fs::write(d.path().join("logs/b.log"), "one\ntwo\n").unwrap();
        assert_eq!(
            tail(d.path(), "out/logs/b.log", 20, Lang::En).unwrap(),
            ("one\ntwo".into(), false)
        );
        // a directory copied or moved since its run: the absolute path the run wrote is read
        // as this directory's (it said "outside the result directory" or "cannot be read")
        let old = tempfile::tempdir().unwrap();
        std::fs::create_dir(old.path().join("logs")).unwrap();
        std::fs::write(old.path().join("logs/b.log"), "old\n").unwrap();
        let at_old = old.path().join("logs/b.log").display().to_string();
        assert_eq!(
            tail(d.path(), &at_old, 20, Lang::En).unwrap(),
            ("one\ntwo".into(), false)
        );
        drop(old);
        assert_eq!(
            tail(d.path(), &at_old, 20, Lang::En).unwrap(),
            ("one\ntwo".into(), false)
        );
        // and a file only the old place has is still not read
        assert!(tail(d.path(), "/etc/passwd", 20, Lang::En).is_err());
    }

    /// A log whose last line is longer than the window read: its end is shown after a `…` (it
    /// was dropped as a cut line, and the report said "(empty log)" of a 70 KB log).
    #[test]
    fn a_last_line_longer_than_the_window_shows_its_end() {
        let d = tempfile::tempdir().unwrap();
        let long = format!("Traceback: boom {}END\n", "x".repeat(70_000));
        std::fs::write(d.path().join("a.log"), format!("first\n{long}")).unwrap();
        let (t, cut) = tail(d.path(), "a.log", 20, Lang::En).unwrap();
        assert!(
            cut && t.starts_with('…') && t.ends_with("xxEND"),
            "{}",
            t.len()
        );
        assert_eq!(
            t.chars().count(),
            64 * 1024,
            "the window's bytes but the newline, and `…`"
        );
        // blank lines after it (`\n\n`, ` \r\n`) change nothing (helper 64)
        std::fs::write(d.path().join("c.log"), format!("{long}\n \r\n")).unwrap();
        let (t, _) = tail(d.path(), "c.log", 20, Lang::En).unwrap();
        assert!(t.starts_with('…') && t.contains("xxEND"), "{}", t.len());
        // a cut first line among others is still left out
        std::fs::write(d.path().join("b.log"), format!("{long}last\n")).unwrap();
        let (t, cut) = tail(d.path(), "b.log", 20, Lang::En).unwrap();
        assert_eq!((t.as_str(), cut), ("last", true));
    }
}
