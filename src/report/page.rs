//! The HTML pages' one look: report.html, `expr compare --format html` and `expr history
//! --format html` are built from this skeleton. One self-contained file: inline CSS, inline SVG,
//! a small inline script (sort a table by clicking its header, hide a lane by clicking its
//! name), and a Content-Security-Policy that allows no request at all; with scripts off the
//! page still reads whole.

use std::fmt::Write;

use crate::report::chart;
use crate::util::fmt::html_text as esc;
use crate::util::lang::Lang;

const CSS: &str = r#"
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", sans-serif; color: #1b1b1b; background: #fafafa; margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 24px 48px; background: #fff; }
header h1 { font-size: 22px; margin: 8px 0 2px; }
header p { margin: 2px 0; color: #555; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 18px 0 6px; }
nav { margin: 10px 0; font-size: 13px; }
nav a { margin-right: 12px; }
code, pre { font: 12.5px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
code { background: #f1f1f1; padding: 0 3px; border-radius: 3px; }
pre { background: #f6f6f6; border: 1px solid #e3e3e3; padding: 8px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " \25B2"; font-size: 10px; }
table.sortable th[aria-sort="descending"]::after { content: " \25BC"; font-size: 10px; }
tbody tr:nth-child(even) { background: #fbfbfb; }
.ok { color: #006d2c; } .bad { color: #b30000; font-weight: 600; } .muted { color: #777; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; background: #eee; margin-right: 6px; font-size: 12.5px; }
.badge.bad { background: #fde0dd; } .badge.ok { background: #e5f5e0; }
figure { margin: 12px 0 20px; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
#lanes { margin: 10px 0; }
#lanes button { font: inherit; font-size: 12.5px; margin: 2px 4px 2px 0; padding: 2px 8px; border: 1px solid #bbb; border-left: 10px solid var(--c, #888); border-radius: 3px; background: #fff; cursor: pointer; }
#lanes button[aria-pressed="false"] { opacity: .45; text-decoration: line-through; }
.lane-off { display: none; }
g.legend-entry.lane-off { display: inline; opacity: .3; }
details { margin: 4px 0 10px; }
summary { cursor: pointer; }
@media print { #lanes, nav { display: none; } main { max-width: none; } }
"#;

const SCRIPT: &str = r#"
(function () {
  function key(td) {
    if (!td) return '';
    var v = td.getAttribute('data-v');
    if (v !== null && v !== '') return parseFloat(v);
    var t = td.textContent.trim();
    var m = /^([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([KM]?)/.exec(t);
    if (m) { var x = parseFloat(m[1]); if (m[2] === 'K') x *= 1e3; if (m[2] === 'M') x *= 1e6; return x; }
    return t.toLowerCase();
  }
  function cmp(a, b) {
    var na = typeof a === 'number' && !isNaN(a), nb = typeof b === 'number' && !isNaN(b);
    if (na && nb) return a - b;
    if (na) return -1;
    if (nb) return 1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  var sortTitle = document.querySelector('main').getAttribute('data-sort-title') || '';
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (t) {
    if (!t.tHead || !t.tBodies.length) return;
    var ths = t.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths, function (th, i) {
      th.tabIndex = 0;
      th.title = sortTitle;
      function go() {
        var asc = th.getAttribute('aria-sort') !== 'ascending';
        Array.prototype.forEach.call(ths, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
        var body = t.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) { var c = cmp(key(r1.cells[i]), key(r2.cells[i])); return asc ? c : -c; });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter') go(); });
    });
  });
  // a selector shows one of a set of figures (the history's series); without scripts all show
  Array.prototype.forEach.call(document.querySelectorAll('select[data-picks]'), function (sel) {
    var figs = document.querySelectorAll('.' + sel.getAttribute('data-picks'));
    function show() {
      Array.prototype.forEach.call(figs, function (f) { f.hidden = f.getAttribute('data-series') !== sel.value; });
    }
    sel.addEventListener('change', show);
    show();
  });
  var box = document.getElementById('lanes');
  if (!box) return;
  Array.prototype.forEach.call(box.querySelectorAll('button[data-for]'), function (b) {
    var lane = b.getAttribute('data-for');
    b.addEventListener('click', function () {
      var on = b.getAttribute('aria-pressed') !== 'true';
      b.setAttribute('aria-pressed', on ? 'true' : 'false');
      Array.prototype.forEach.call(document.querySelectorAll('[data-lane]'), function (e) {
        if (e.getAttribute('data-lane') === lane) e.classList.toggle('lane-off', !on);
      });
    });
  });
  box.hidden = false;
})();
"#;

/// A whole page in `lang` (its `lang` attribute and the skeleton's own words): the skeleton, its
/// header, the lane switches (shown only with scripts on), and the body.
pub fn page(lang: Lang, title: &str, header: &str, lanes: &[String], body: &str) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n",
        lang.code()
    );
    // nothing may be fetched: the page is one file, readable offline and by email
    o.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(o, "<title>{}</title>", esc(title));
    // the script's words are the page's: the sort hint is read from here
    let _ = writeln!(
        o,
        "<style>{CSS}</style>\n</head>\n<body>\n<main data-sort-title=\"{}\">",
        lang.t("点击按此列排序", "sort by this column")
    );
    o.push_str(header);
    if !lanes.is_empty() {
        let _ = write!(
            o,
            "<div id=\"lanes\" hidden>{}",
            lang.t(
                "lane（点击隐藏或显示）：",
                "lanes (click to hide or show): "
            )
        );
        for (i, l) in lanes.iter().enumerate() {
            let _ = write!(
                o,
                "<button type=\"button\" aria-pressed=\"true\" data-for=\"{}\" style=\"--c: {}\">{}</button>",
                esc(l),
                chart::color(i),
                esc(l)
            );
        }
        o.push_str("</div>\n");
    }
    o.push_str(body);
    let _ = writeln!(o, "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>");
    o
}

/// An href that stays a link to a file beside the page: escaped, and a scheme (`javascript:`)
/// or a network path (`//host`) made a relative path.
pub fn href(h: &str) -> String {
    let scheme = h
        .split(['/', '?', '#'])
        .next()
        .is_some_and(|first| first.contains(':'));
    if scheme || h.starts_with("//") {
        esc(&format!("./{}", h.trim_start_matches('/')))
    } else {
        esc(h)
    }
}

/// A cell of a sortable table: its HTML, and the number it sorts by.
pub struct Cell {
    pub html: String,
    pub sort: Option<f64>,
    pub num: bool,
}

impl Cell {
    /// Text, escaped.
    pub fn text(s: &str) -> Cell {
        Cell {
            html: esc(s),
            sort: None,
            num: false,
        }
    }

    /// HTML as it is (already escaped).
    pub fn html(s: String) -> Cell {
        Cell {
            html: s,
            sort: None,
            num: false,
        }
    }

    /// A number as shown (`text`), sorted by `v`; a missing one sorts last.
    pub fn num(text: &str, v: Option<f64>) -> Cell {
        Cell {
            html: esc(text),
            sort: v.filter(|v| v.is_finite()),
            num: true,
        }
    }
}

/// A sortable table; each row may belong to a lane (hidden with it).
pub fn table(head: &[&str], rows: Vec<(Option<String>, Vec<Cell>)>) -> String {
    let mut o = String::from("<table class=\"sortable\">\n<thead><tr>");
    for h in head {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for (lane, cells) in rows {
        match lane {
            Some(l) => {
                let _ = write!(o, "<tr data-lane=\"{}\">", esc(&l));
            }
            None => o.push_str("<tr>"),
        }
        for c in cells {
            o.push_str(if c.num { "<td class=\"num\"" } else { "<td" });
            if let Some(v) = c.sort {
                let _ = write!(o, " data-v=\"{v}\"");
            }
            let _ = write!(o, ">{}</td>", c.html);
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_stay_relative_and_escaped() {
        assert_eq!(href("throughput.svg"), "throughput.svg");
        assert_eq!(href("javascript:alert(1)"), "./javascript:alert(1)");
        assert_eq!(href("//evil.example/x"), "./evil.example/x");
        assert_eq!(href("a\"b.svg"), "a&quot;b.svg");
    }

    #[test]
    fn a_page_has_no_external_reference_and_escapes_lanes() {
        let p = page(Lang::En, "<t>", "", &["<script>".into()], "<p>x</p>");
        assert!(!p.contains("<script>alert") && p.contains("&lt;script&gt;"));
        assert!(!p.contains("http://") && !p.contains("https://"));
    }
}
