//! SVG charts as text: lines through sweep points and horizontal bars, both with 95 % intervals.
//! Drawn here rather than by plotters so that a lane keeps one colour across every chart of a
//! run (Okabe–Ito, safe for colour-blind readers), ticks follow the report's number rule (K/M,
//! integers on integer axes), a power-of-two sweep gets a log-2 axis, the legend sits right of
//! the data, every text is escaped, and each lane's marks carry `data-lane` so report.html can
//! hide a lane.

use std::fmt::Write;

use crate::util::fmt::{html_text as esc, tick};
use crate::util::lang::Lang;

/// Okabe and Ito's palette, yellow last (it is faint on white).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#000000", "#F0E442",
];

/// The colour of index `i`; past the palette the colours come again, dashed.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

fn dash_of(i: usize) -> &'static str {
    match (i / PALETTE.len()) % 3 {
        0 => "",
        1 => " stroke-dasharray=\"7 3\"",
        _ => " stroke-dasharray=\"2 2\"",
    }
}

/// One mark: x, the mean, and its interval when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
    pub ci: Option<(f64, f64)>,
}

/// A line of a chart: its legend label, the lane it belongs to, its colour index, and a dash
/// (0 solid) that tells apart series of one lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub lane: Option<String>,
    pub color: usize,
    pub dash: usize,
    pub points: Vec<Pt>,
}

/// One chart: its file name, its title, and the SVG text.
pub struct Figure {
    pub file: String,
    pub title: String,
    pub svg: String,
}

impl Figure {
    /// A bar chart as the figure `file`, under the chart's title.
    pub fn of_bars(file: String, b: &Bars) -> Figure {
        Figure {
            file,
            title: b.title.clone(),
            svg: bars(b),
        }
    }
}

/// A name safe as part of a chart's file name.
pub fn file_safe(s: &str) -> String {
    s.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")
}

/// A line chart over a numeric x.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Ticks at these x values with these labels (sweep values as written, runs by date);
    /// empty: ticks by the number rule.
    pub x_ticks: Vec<(f64, String)>,
    /// x on a log-2 scale (every x a power of two).
    pub log2_x: bool,
    pub series: Vec<Series>,
    /// The language of the chart's own words (`log₂ scale`, `no values to plot`).
    pub lang: Lang,
}

/// One bar of a bar chart: stacked parts (value, colour index) and the interval of its total.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub lane: Option<String>,
    pub parts: Vec<(f64, usize)>,
    pub ci: Option<(f64, f64)>,
}

/// A horizontal bar chart, one labelled row per bar.
#[derive(Debug, Clone, Default)]
pub struct Bars {
    /// The language of what the chart says of itself ("the values are too large to plot").
    pub lang: Lang,
    pub title: String,
    pub x_label: String,
    pub bars: Vec<Bar>,
    /// (label, lane, colour index)
    pub legend: Vec<(String, Option<String>, usize)>,
}

/// Whether every value is a positive integer power of two, with at least three of them or a
/// span of at least 8x: then a log-2 axis spaces them evenly.
pub fn powers_of_two(xs: &[f64]) -> bool {
    let ok = xs
        .iter()
        .all(|x| *x >= 1.0 && x.fract() == 0.0 && (*x as u64).is_power_of_two());
    let (lo, hi) = span(xs.iter().copied());
    ok && !xs.is_empty() && hi / lo >= 4.0
}

/// Width of a text in pixels at 12 px (wide characters count double).
pub fn text_w(s: &str) -> f64 {
    s.chars()
        .map(|c| if (c as u32) > 0x2E80 { 12.0 } else { 7.0 })
        .sum()
}

/// A label cut to `max` pixels, with an ellipsis.
pub fn cut(s: &str, max: f64) -> String {
    if text_w(s) <= max {
        return s.to_string();
    }
    let mut o = String::new();
    let mut w = 7.0;
    for c in s.chars() {
        w += text_w(&c.to_string());
        if w > max {
            break;
        }
        o.push(c);
    }
    o.push('…');
    o
}

pub fn span(v: impl Iterator<Item = f64>) -> (f64, f64) {
    v.filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        })
}

/// Ticks over lo..hi at a step of 1, 2 or 5 × 10^k (at least 1 on an integer axis): the range
/// widened to whole steps, the step and the ticks.
pub fn nice(lo: f64, hi: f64, integer: bool) -> (f64, f64, f64, Vec<f64>) {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else if lo == 0.0 {
        (0.0, 1.0)
    } else {
        (lo - lo.abs() * 0.1, hi + hi.abs() * 0.1)
    };
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let mut step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    if integer {
        step = step.max(1.0).round();
    }
    let start = (lo / step).floor() * step;
    let end = (hi / step).ceil() * step;
    let n = ((end - start) / step).round() as usize;
    let ticks = (0..=n.min(40)).map(|i| start + step * i as f64).collect();
    (start, end, step, ticks)
}

/// The svg element, its background and its title (every chart's start).
pub fn open(o: &mut String, w: f64, h: f64, title: &str) {
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(o, "<title>{}</title>", esc(title));
    let _ = writeln!(
        o,
        "<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        o,
        "<text class=\"caption\" x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>",
        w / 2.0,
        esc(&cut(title, w - 20.0))
    );
}

/// A `data-lane` attribute, or nothing.
fn lane_attr(lane: &Option<String>) -> String {
    lane.as_ref()
        .map(|l| format!(" data-lane=\"{}\"", esc(l)))
        .unwrap_or_default()
}

/// A legend entry: the label on a line of its own (tests and readers find it whole).
pub fn legend_entry(
    o: &mut String,
    x: f64,
    y: f64,
    label: &str,
    lane: &Option<String>,
    mark: &str,
) {
    let _ = writeln!(o, "<g class=\"legend-entry\"{}>", lane_attr(lane));
    o.push_str(mark);
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\">\n{}\n</text>\n</g>",
        x + 24.0,
        y + 4.0,
        esc(&cut(label, 220.0))
    );
}

/// How tall a picture holds `n` legend entries from `top` (one each 20 px, as drawn).
fn legend_h(n: usize, top: f64) -> f64 {
    top + 10.0 + 20.0 * n as f64 + 12.0
}

/// Room for the legend right of the plot.
fn legend_w(labels: impl Iterator<Item = f64>) -> f64 {
    labels.fold(0.0, f64::max).min(220.0) + 40.0
}

/// In place of a chart whose axis spans more than a float holds (values near ±1.8e308): said,
/// and the document closed (its path read `M101.6 infV-inf`).
fn too_large(o: &mut String, w: f64, h: f64, lang: crate::util::lang::Lang) {
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n</svg>",
        w / 2.0,
        h / 2.0,
        lang.t("数值过大，无法绘图", "the values are too large to plot")
    );
}

/// The line chart as an SVG document.
pub fn lines(c: &Lines) -> String {
    let fx = |x: f64| if c.log2_x { x.log2() } else { x };
    let (h, top, left) = (420.0, 40.0, 76.0);
    let lw = legend_w(c.series.iter().map(|s| text_w(&s.label)));
    let w = (560.0 + lw).max(640.0);
    let (right, bottom) = (w - lw - 12.0, h - 52.0);
    // the picture is as tall as its legend (50 lines' legend ran far below a 420 px picture)
    let h = legend_h(c.series.len(), top).max(h);
    let pts = || c.series.iter().flat_map(|s| s.points.iter());
    let (xlo, xhi) = span(
        pts()
            .map(|p| fx(p.x))
            .chain(c.x_ticks.iter().map(|t| fx(t.0))),
    );
    let (ylo, yhi) = span(pts().flat_map(|p| {
        let (a, b) = p.ci.unwrap_or((p.y, p.y));
        [p.y, a, b]
    }));
    let mut o = String::new();
    open(&mut o, w, h, &c.title);
    if !xlo.is_finite() || !ylo.is_finite() {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n</svg>",
            w / 2.0,
            h / 2.0,
            c.lang.t("没有可画的值", "no values to plot")
        );
        return o;
    }
    let integer_x = pts().all(|p| p.x.fract() == 0.0);
    let pad = if xhi > xlo { (xhi - xlo) * 0.06 } else { 0.5 };
    let (x0, x1) = (xlo - pad, xhi + pad);
    let (y0, y1, ystep, yticks) = nice(ylo.min(0.0), yhi, false);
    if !(y1 - y0).is_finite() || !(x1 - x0).is_finite() {
        too_large(&mut o, w, h, c.lang);
        return o;
    }
    let sx = |x: f64| left + (fx(x) - x0) / (x1 - x0) * (right - left);
    // a value past the axis (an interval to ±∞) is drawn to its end, never as `inf`
    let sy = |y: f64| bottom - (y.clamp(y0, y1) - y0) / (y1 - y0) * (bottom - top);
    // grid and y ticks
    for t in &yticks {
        let y = sy(*t);
        let _ = writeln!(
            o,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{right}\" y2=\"{y:.1}\" stroke=\"#e6e6e6\" stroke-width=\"1\"/>\n<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 4.0,
            esc(&tick(*t, ystep))
        );
    }
    // x ticks: the given ones, else by the number rule
    let xticks: Vec<(f64, String)> = if c.x_ticks.is_empty() {
        let (_, _, step, t) = nice(
            if c.log2_x { x0.exp2() } else { x0 },
            if c.log2_x { x1.exp2() } else { x1 },
            integer_x,
        );
        t.into_iter()
            .filter(|v| (x0..=x1).contains(&fx(*v)))
            .map(|v| (v, tick(v, step)))
            .collect()
    } else {
        // as many as fit side by side at their widest label (each cut to 120 px), evenly spaced
        let widest = c
            .x_ticks
            .iter()
            .map(|t| text_w(&cut(&t.1, 120.0)))
            .fold(0.0, f64::max);
        let fit = (((right - left) / (widest + 10.0)).floor() as usize).clamp(1, 12);
        let keep = c.x_ticks.len().div_ceil(fit).max(1);
        c.x_ticks.iter().step_by(keep).cloned().collect()
    };
    for (v, label) in &xticks {
        let x = sx(*v);
        let _ = writeln!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{bottom}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#333333\" stroke-width=\"1\"/>\n<text class=\"x-tick\" x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            bottom + 5.0,
            bottom + 18.0,
            esc(&cut(label, 120.0))
        );
    }
    axes(&mut o, left, right, top, bottom);
    let x_label = if c.log2_x {
        format!(
            "{}{}",
            c.x_label,
            c.lang.paren(c.lang.t("log₂ 刻度", "log₂ scale"))
        )
    } else {
        c.x_label.clone()
    };
    labels(&mut o, &x_label, &c.y_label, left, right, top, bottom);
    for s in &c.series {
        let col = color(s.color);
        let dash = dash_of(s.color + s.dash * PALETTE.len());
        let _ = writeln!(o, "<g class=\"series\"{}>", lane_attr(&s.lane));
        let _ = writeln!(o, "<title>{}</title>", esc(&s.label));
        let line: Vec<String> = s
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", sx(p.x), sy(p.y)))
            .collect();
        let _ = writeln!(
            o,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{col}\" stroke-width=\"2\"{dash}/>",
            line.join(" ")
        );
        for p in &s.points {
            let (x, y) = (sx(p.x), sy(p.y));
            if let Some((a, b)) = p.ci {
                let (ya, yb) = (sy(a), sy(b));
                let _ = writeln!(
                    o,
                    "<path d=\"M{x:.1} {ya:.1}V{yb:.1}M{:.1} {ya:.1}H{:.1}M{:.1} {yb:.1}H{:.1}\" stroke=\"{col}\" stroke-width=\"1.5\" fill=\"none\"/>",
                    x - 4.0,
                    x + 4.0,
                    x - 4.0,
                    x + 4.0
                );
            }
            let _ = writeln!(
                o,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{col}\"/>"
            );
        }
        o.push_str("</g>\n");
    }
    let lx = right + 16.0;
    for (i, s) in c.series.iter().enumerate() {
        let y = top + 10.0 + 20.0 * i as f64;
        let col = color(s.color);
        let dash = dash_of(s.color + s.dash * PALETTE.len());
        let mark = format!(
            "<line x1=\"{lx}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{col}\" stroke-width=\"2\"{dash}/>\n",
            lx + 18.0
        );
        legend_entry(&mut o, lx, y, &s.label, &s.lane, &mark);
    }
    o.push_str("</svg>\n");
    o
}

pub fn axes(o: &mut String, left: f64, right: f64, top: f64, bottom: f64) {
    let _ = writeln!(
        o,
        "<path d=\"M{left} {top}V{bottom}H{right}\" fill=\"none\" stroke=\"#333333\" stroke-width=\"1\"/>"
    );
}

pub fn labels(o: &mut String, x: &str, y: &str, left: f64, right: f64, top: f64, bottom: f64) {
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        (left + right) / 2.0,
        bottom + 40.0,
        esc(x)
    );
    if !y.is_empty() {
        let (cx, cy) = (16.0, (top + bottom) / 2.0);
        let _ = writeln!(
            o,
            "<text x=\"{cx}\" y=\"{cy}\" text-anchor=\"middle\" transform=\"rotate(-90 {cx} {cy})\">{}</text>",
            esc(y)
        );
    }
}

/// The bar chart as an SVG document.
pub fn bars(c: &Bars) -> String {
    let left = (c.bars.iter().map(|b| text_w(&b.label)).fold(60.0, f64::max) + 16.0).min(320.0);
    let lw = if c.legend.is_empty() {
        16.0
    } else {
        legend_w(c.legend.iter().map(|l| text_w(&l.0)))
    };
    let w = (left + 480.0 + lw).max(640.0);
    let (top, row) = (40.0, 28.0);
    let bottom = top + row * c.bars.len().max(1) as f64;
    let h = (bottom + 52.0).max(legend_h(c.legend.len(), top));
    let right = w - lw - 12.0;
    let (lo, hi) = span(c.bars.iter().flat_map(|b| {
        let total: f64 = b.parts.iter().map(|p| p.0).sum();
        let (a, z) = b.ci.unwrap_or((total, total));
        [total, a, z]
    }));
    let mut o = String::new();
    open(&mut o, w, h, &c.title);
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let (x0, x1, step, ticks) = nice(lo.min(0.0), hi.max(0.0), false);
    if !(x1 - x0).is_finite() {
        too_large(&mut o, w, h, c.lang);
        return o;
    }
    let sx = |x: f64| left + (x.clamp(x0, x1) - x0) / (x1 - x0) * (right - left);
    for t in &ticks {
        let x = sx(*t);
        let _ = writeln!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom}\" stroke=\"#e6e6e6\" stroke-width=\"1\"/>\n<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            bottom + 18.0,
            esc(&tick(*t, step))
        );
    }
    for (i, b) in c.bars.iter().enumerate() {
        let yc = top + row * (i as f64 + 0.5);
        let _ = writeln!(o, "<g class=\"bar\"{}>", lane_attr(&b.lane));
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            yc + 4.0,
            esc(&cut(&b.label, left - 16.0))
        );
        let mut at: f64 = 0.0;
        for (v, col) in &b.parts {
            let (a, z) = (sx(at.min(at + v)), sx(at.max(at + v)));
            let _ = writeln!(
                o,
                "<rect x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{}\"/>",
                yc - 9.0,
                (z - a).max(0.5),
                color(*col)
            );
            at += v;
        }
        if let Some((a, z)) = b.ci {
            let (a, z) = (sx(a), sx(z));
            let _ = writeln!(
                o,
                "<path d=\"M{a:.1} {yc:.1}H{z:.1}M{a:.1} {:.1}V{:.1}M{z:.1} {:.1}V{:.1}\" stroke=\"#222222\" stroke-width=\"1.5\" fill=\"none\"/>",
                yc - 6.0,
                yc + 6.0,
                yc - 6.0,
                yc + 6.0
            );
        }
        o.push_str("</g>\n");
    }
    axes(&mut o, left, right, top, bottom);
    labels(&mut o, &c.x_label, "", left, right, top, bottom);
    let lx = right + 16.0;
    for (i, (label, lane, col)) in c.legend.iter().enumerate() {
        let y = top + 10.0 + 20.0 * i as f64;
        let mark = format!(
            "<rect x=\"{lx}\" y=\"{}\" width=\"18\" height=\"10\" fill=\"{}\"/>\n",
            y - 5.0,
            color(*col)
        );
        legend_entry(&mut o, lx, y, label, lane, &mark);
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_whole_steps_and_integers_on_integer_axes() {
        let (lo, hi, step, t) = nice(0.0, 73_000.0, false);
        assert_eq!((lo, hi, step), (0.0, 80_000.0, 20_000.0));
        assert_eq!(t.len(), 5);
        let (_, _, step, _) = nice(1.0, 3.0, true);
        assert_eq!(step, 1.0);
    }

    #[test]
    fn powers_of_two_need_a_span() {
        assert!(powers_of_two(&[1.0, 2.0, 4.0, 8.0]));
        assert!(!powers_of_two(&[2.0, 4.0]));
        assert!(!powers_of_two(&[1.0, 3.0, 8.0]));
    }

    #[test]
    fn text_and_lanes_are_escaped_and_every_series_has_a_legend_entry() {
        let c = Lines {
            title: "t <b>".into(),
            x_label: "n".into(),
            y_label: "ms".into(),
            x_ticks: vec![(1.0, "1".into()), (4.0, "4".into())],
            log2_x: true,
            lang: Lang::En,
            series: ["<script>", "b&"]
                .iter()
                .enumerate()
                .map(|(i, l)| Series {
                    label: l.to_string(),
                    lane: Some(l.to_string()),
                    color: i,
                    dash: 0,
                    points: vec![
                        Pt {
                            x: 1.0,
                            y: 2.0,
                            ci: Some((1.0, 3.0)),
                        },
                        Pt {
                            x: 4.0,
                            y: 5.0,
                            ci: None,
                        },
                    ],
                })
                .collect(),
        };
        let s = lines(&c);
        assert!(!s.contains("<script>") && !s.contains("<b>"), "{s}");
        assert_eq!(s.matches("class=\"legend-entry\"").count(), 2);
        assert_eq!(s.matches("data-lane=\"&lt;script&gt;\"").count(), 2);
        assert!(s.contains("log₂"));
    }

    /// A legend of many lines (a lane swept over 50 values) stays in the picture: it grows to
    /// hold it (the entries ran to y = 1034 of a 420 px picture); the plot keeps its size.
    #[test]
    fn a_long_legend_fits_the_picture() {
        let height = |s: &str| -> f64 {
            let at = s.find("height=\"").unwrap() + 8;
            s[at..].split('"').next().unwrap().parse().unwrap()
        };
        let last_entry_y = |s: &str| -> f64 {
            s.split("<g class=\"legend-entry\"")
                .skip(1)
                .filter_map(|g| {
                    let at = g.find(" y=\"")? + 4;
                    g[at..].split('"').next()?.parse::<f64>().ok()
                })
                .fold(0.0, f64::max)
        };
        let series: Vec<Series> = (0..50)
            .map(|i| Series {
                label: format!("a={i}"),
                lane: None,
                color: 0,
                dash: i % 3,
                points: vec![Pt {
                    x: 1.0,
                    y: i as f64,
                    ci: None,
                }],
            })
            .collect();
        let chart = |series: Vec<Series>| {
            lines(&Lines {
                title: "t".into(),
                x_label: "n".into(),
                y_label: "ms".into(),
                x_ticks: vec![(1.0, "1".into())],
                log2_x: false,
                lang: Lang::En,
                series,
            })
        };
        let s = chart(series);
        let (h, y) = (height(&s), last_entry_y(&s));
        assert!(y > 420.0 && h > y, "height {h}, last entry at {y}");
        // a short legend keeps the picture's height
        assert_eq!(height(&chart(Vec::new())), 420.0);
    }

    /// Values near the float's end: an interval to ±∞ is drawn to the axis's end, an axis that
    /// spans more than a float says so; never `inf` or `NaN` in the document (its path read
    /// `M101.6 infV-inf`, which no viewer draws).
    #[test]
    fn values_past_a_float_draw_to_the_axis_or_are_said() {
        let pt = |x: f64, y: f64, ci| Pt { x, y, ci };
        let one = |points: Vec<Pt>| Lines {
            series: vec![Series {
                label: "a".into(),
                lane: None,
                color: 0,
                dash: 0,
                points,
            }],
            ..Default::default()
        };
        let s = lines(&one(vec![
            pt(1.0, 5.0, Some((f64::NEG_INFINITY, f64::INFINITY))),
            pt(2.0, 6.0, None),
        ]));
        assert!(!s.contains("inf") && !s.contains("NaN"), "{s}");
        assert!(s.contains("<path d=\"M"), "the interval is drawn: {s}");
        let s = lines(&one(vec![pt(1.0, 1.7e308, None), pt(2.0, -1.7e308, None)]));
        assert!(s.contains("the values are too large to plot"), "{s}");
        assert!(!s.contains("inf") && !s.contains("NaN"), "{s}");
        let b = |total: f64, ci| Bars {
            bars: vec![Bar {
                label: "x".into(),
                lane: None,
                parts: vec![(total, 0)],
                ci,
            }],
            ..Default::default()
        };
        let s = bars(&b(4.0, Some((f64::NEG_INFINITY, f64::INFINITY))));
        assert!(!s.contains("inf") && !s.contains("NaN"), "{s}");
        let s = bars(&b(1.7e308, Some((-1.7e308, 1.7e308))));
        assert!(s.contains("the values are too large to plot"), "{s}");
    }
}
