//! Matrix expansion: lanes × sweep points × repeats, odometer order, stable run ids.

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;

use crate::model::*;

/// One matrix point of one benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub bench: usize,
    pub lane: usize,
    pub lane_name: String,
    /// The sweep assignment, in axis order.
    pub axes: Vec<(String, Val)>,
    pub repeat: i64,
    pub run_id: String,
    /// Where the point falls when a bench's hosts (a pool's members) and GPU blocks are dealt
    /// out: its (sweep point, repeat)'s place in the bench's whole matrix plus its lane's index,
    /// whatever `--only` keeps (a point keeps its place, and so its plan, under a filter), and a
    /// lane does not stay on one member (its next sweep point or repeat moves on one).
    pub slot: usize,
    /// The bench's settings (defaults filled in), shared by all its points.
    #[serde(skip)]
    pub base: Arc<Params>,
    /// Where each of `axes` was declared, shared by the bench's points.
    #[serde(skip)]
    axis_locs: Arc<[Loc]>,
    /// The lane's overrides, shared by the lane's points: they win over the sweep assignment,
    /// which wins over `base`. (Each point held its own copy of both as settings: a third of
    /// a 100k-point plan's memory.)
    #[serde(skip)]
    lane_over: Arc<[(String, Param)]>,
}

impl Point {
    /// A setting after defaults, the sweep assignment and lane overrides, with its place.
    pub fn param(&self, name: &str) -> Option<Param> {
        if let Some((_, p)) = self.lane_over.iter().rev().find(|(k, _)| k == name) {
            return Some(p.clone());
        }
        if let Some(i) = self.axes.iter().position(|(k, _)| k == name) {
            return Some(Param {
                val: self.axes[i].1.clone(),
                loc: self.axis_locs.get(i).cloned(),
            });
        }
        self.base.get(name).cloned()
    }
    /// Every setting, resolved.
    pub fn settings(&self) -> Params {
        let mut all = (*self.base).clone();
        for ((k, v), loc) in self.axes.iter().zip(self.axis_locs.iter()) {
            all.insert(
                k.clone(),
                Param {
                    val: v.clone(),
                    loc: Some(loc.clone()),
                },
            );
        }
        for (k, p) in self.lane_over.iter() {
            all.insert(k.clone(), p.clone());
        }
        all
    }
    /// The names the sweep assignment and the lane set on top of the bench's settings.
    pub fn overridden(&self) -> impl Iterator<Item = &String> {
        self.axes
            .iter()
            .map(|(k, _)| k)
            .chain(self.lane_over.iter().map(|(k, _)| k))
    }
    pub fn get(&self, name: &str) -> Option<&Val> {
        if let Some((_, p)) = self.lane_over.iter().rev().find(|(k, _)| k == name) {
            return Some(&p.val);
        }
        if let Some((_, v)) = self.axes.iter().find(|(k, _)| k == name) {
            return Some(v);
        }
        self.base.get(name).map(|p| &p.val)
    }
    pub fn int(&self, name: &str) -> i64 {
        self.get(name).and_then(Val::as_int).unwrap_or(0)
    }
    pub fn str(&self, name: &str) -> &str {
        self.get(name).and_then(Val::as_str).unwrap_or("")
    }
    pub fn bool(&self, name: &str) -> bool {
        self.get(name).and_then(Val::as_bool).unwrap_or(false)
    }
}

/// A selection of part of the matrix (`--only key=value`).
#[derive(Debug, Clone, Default)]
pub struct Filter(pub Vec<(String, String)>);

/// The sweep wheels of a bench: each wheel is a group of axes that advance together (an axis
/// alone, or a `zip`), turning through as many positions as its shortest axis has values.
/// Borrowed, not copied: a sweep of 100k values made 100k small lists here.
fn wheels(sweep: &Sweep) -> Vec<Vec<&Axis>> {
    let singles = sweep.axes.iter().map(|a| vec![a]);
    let zips = sweep.zips.iter().map(|g| g.iter().collect());
    singles.chain(zips).collect()
}

/// How many positions a wheel turns through.
fn wheel_len(w: &[&Axis]) -> usize {
    w.iter().map(|a| a.values.len()).min().unwrap_or(0)
}

/// Number of sweep combinations before exclusions (saturating).
pub fn combinations(bench: &Bench) -> u128 {
    // counted from the axes as `wheels` would lay them out, without building them
    let sweep = &bench.sweep;
    let axes = sweep.axes.iter().map(|a| a.values.len());
    let zips = sweep
        .zips
        .iter()
        .map(|g| g.iter().map(|a| a.values.len()).min().unwrap_or(0));
    axes.chain(zips)
        .fold(1u128, |acc, n| acc.saturating_mul(n as u128))
}

/// Upper bound of the matrix size (before exclusions).
pub fn size_bound(bench: &Bench) -> u128 {
    combinations(bench)
        .saturating_mul(bench.lanes.len() as u128)
        .saturating_mul(bench.repeat.max(1) as u128)
}

fn excluded(bench: &Bench, lane: &str, assignment: &[(String, Val, Loc)]) -> bool {
    bench.sweep.excludes.iter().any(|ex| {
        !ex.when.is_empty()
            && ex.when.iter().all(|(k, v)| {
                if k == "lane" {
                    v.as_str() == Some(lane)
                } else {
                    assignment.iter().any(|(n, x, _)| n == k && x == v)
                }
            })
    })
}

fn matches(
    filter: &Filter,
    bench: &Bench,
    lane: &Lane,
    assignment: &[(String, Val, Loc)],
    repeat: i64,
) -> bool {
    // the values given for one key are alternatives (`--only n=1 --only n=2`); every key
    // given must match
    let mut by_key: Vec<(&str, bool)> = Vec::new();
    for (k, v) in &filter.0 {
        let ok = one_matches(k, v, bench, lane, assignment, repeat);
        match by_key.iter_mut().find(|(x, _)| *x == k.as_str()) {
            Some((_, any)) => *any |= ok,
            None => by_key.push((k, ok)),
        }
    }
    by_key.iter().all(|(_, any)| *any)
}

/// Whether the point has `k` = `v`.
fn one_matches(
    k: &str,
    v: &str,
    bench: &Bench,
    lane: &Lane,
    assignment: &[(String, Val, Loc)],
    repeat: i64,
) -> bool {
    match k {
        "lane" => lane.name == *v,
        "repeat" => repeat.to_string() == *v,
        "bench" => bench.name == *v,
        // any other key compares the point's resolved value; a bench without it does not match
        _ => {
            let resolved = lane
                .overrides
                .get(k)
                .map(|p| &p.val)
                .or_else(|| {
                    assignment
                        .iter()
                        .find(|(n, _, _)| n == k)
                        .map(|(_, x, _)| x)
                })
                .or_else(|| bench.settings.get(k).map(|p| &p.val));
            resolved.is_some_and(|x| x.to_string() == *v)
        }
    }
}

/// Expand one bench. `repeats` false yields one point per (lane, sweep point) with repeat 0.
pub fn expand_bench(index: usize, bench: &Bench, filter: &Filter, repeats: bool) -> Vec<Point> {
    expand_bench_in(index, bench, filter, repeats, None)
}

/// Expand one bench, its run ids handed out over its whole matrix (what `--only` leaves out
/// too), so that a filter never changes a point's id: `--resume` and `--only` find each point
/// under the id it ran under. `others`: the ids of the benches before it (whole matrices too);
/// an id one of them has is prefixed with this bench's name.
fn expand_bench_in(
    index: usize,
    bench: &Bench,
    filter: &Filter,
    repeats: bool,
    mut others: Option<&mut HashSet<String>>,
) -> Vec<Point> {
    let varying: Vec<String> = bench.sweep.axis_names().map(str::to_string).collect();
    let mut ids: HashSet<String> = HashSet::new();
    let wheels = wheels(&bench.sweep);
    let mut points = Vec::new();
    let mut counters = vec![0usize; wheels.len()];
    if wheels.iter().any(|w| wheel_len(w) == 0) {
        return points;
    }
    let nrep = if repeats { bench.repeat.max(1) } else { 1 };
    let base = Arc::new(bench.settings.clone());
    let axis_locs: Arc<[Loc]> = wheels.iter().flatten().map(|a| a.loc.clone()).collect();
    let lane_over: Vec<Arc<[(String, Param)]>> = bench
        .lanes
        .iter()
        .map(|l| {
            l.overrides
                .iter()
                .map(|(k, p)| (k.clone(), p.clone()))
                .collect()
        })
        .collect();
    // the (sweep point, repeat) pairs passed so far, kept or not
    let mut turn = 0usize;
    loop {
        let assignment: Vec<(String, Val, Loc)> = wheels
            .iter()
            .zip(&counters)
            .flat_map(|(w, &i)| {
                w.iter()
                    .map(move |a| (a.name.clone(), a.values[i].clone(), a.loc.clone()))
            })
            .collect();
        for r in 0..nrep {
            turn += 1;
            for (li, lane) in bench.lanes.iter().enumerate() {
                if excluded(bench, &lane.name, &assignment) {
                    continue;
                }
                // A lane that pins a swept workload value runs only at that value.
                let pinned_elsewhere = lane
                    .overrides
                    .iter()
                    .any(|(k, p)| assignment.iter().any(|(n, v, _)| n == k && *v != p.val));
                if pinned_elsewhere {
                    continue;
                }
                let kept = matches(filter, bench, lane, &assignment, r);
                let mut point = Point {
                    bench: index,
                    lane: li,
                    lane_name: lane.name.clone(),
                    axes: assignment
                        .iter()
                        .map(|(n, v, _)| (n.clone(), v.clone()))
                        .collect(),
                    repeat: r,
                    run_id: String::new(),
                    slot: turn - 1 + li,
                    base: base.clone(),
                    axis_locs: axis_locs.clone(),
                    lane_over: lane_over[li].clone(),
                };
                let mut id = unique(&mut ids, run_id(bench, &varying, &point));
                if let Some(others) = others.as_deref_mut() {
                    if !others.insert(id.clone()) {
                        id = format!("{}_{id}", bench.name);
                        others.insert(id.clone());
                    }
                }
                if kept {
                    point.run_id = id;
                    points.push(point);
                }
            }
        }
        // advance the odometer: the last wheel turns fastest
        let mut i = wheels.len();
        loop {
            if i == 0 {
                return points;
            }
            i -= 1;
            counters[i] += 1;
            if counters[i] < wheel_len(&wheels[i]) {
                break;
            }
            counters[i] = 0;
        }
    }
}

/// Expand every bench of the experiment.
pub fn expand(exp: &Experiment, filter: &Filter) -> Vec<Point> {
    let mut all = Vec::new();
    // a bench's own run ids are unique: only another bench's can repeat one (and a lone
    // bench's ids are not gathered across benches)
    let mut seen = (exp.benches.len() > 1).then(HashSet::new);
    for (i, b) in exp.benches.iter().enumerate() {
        let mut points = expand_bench_in(i, b, filter, true, seen.as_mut());
        if all.is_empty() {
            all = points;
        } else {
            all.append(&mut points);
        }
    }
    // the matrix is kept while it is planned: no room to spare (a Vec grown by doubling holds
    // up to twice its points)
    all.shrink_to_fit();
    all
}

/// Short axis names in the style of RecStore's matrix runner.
fn abbrev(axis: &str) -> String {
    match axis {
        "batch-size" => "b".into(),
        "embedding-dim" => "d".into(),
        "num-embeddings" => "e".into(),
        "steps" => "s".into(),
        "num-workers" => "w".into(),
        "ranks" => "n".into(),
        "tokens" => "t".into(),
        "hidden" => "h".into(),
        "experts" => "x".into(),
        "topk" => "k".into(),
        other => slug(other),
    }
}

/// Lower-case ASCII slug; non-ASCII text is kept out of run ids. A text with a character outside
/// ASCII, a letter or a symbol (`无预取`, `größe`, `🚀`, `→`), ends in a hash of the whole
/// (`gr_e_1a2b3c4d`, or the hash alone): two such names stay apart, and the id stays the same
/// from run to run.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    let mut out = out.trim_end_matches('_').to_string();
    if s.chars().any(|c| !c.is_ascii() && !c.is_whitespace()) {
        if !out.is_empty() {
            out.push('_');
        }
        out.push_str(&format!("{:08x}", fnv1a(s)));
    }
    out
}

/// FNV-1a: stable across runs and versions (a run id names files a resume finds again).
fn fnv1a(text: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The longest run id stem (lane and sweep values, before `_r<repeat>`): a run id is part of
/// every log name (`logs/<step>-<run id>-<host>.log`, step and host names at most 100 bytes
/// each), which must stay within a file name's 255 bytes.
pub const RUN_ID_STEM: usize = 40;

/// `text` when it fits in `max` bytes; else its start and a hash of the whole (`…_1a2b3c4d`),
/// so a long lane name or sweep value still makes a unique, stable id.
fn fit(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let h = fnv1a(text);
    let keep = max - 9;
    let mut cut = keep;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}_{h:08x}", text[..cut].trim_end_matches('_'))
}

/// A point's run id before it is made unique: lane, fixed and swept values, repeat.
fn run_id(bench: &Bench, varying: &[String], p: &Point) -> String {
    let lane = &bench.lanes[p.lane];
    let mut parts = vec![(bench.naming.lane_slug)(&lane.name)];
    let fixed = bench.naming.fixed_axes;
    for f in fixed {
        parts.push(format!(
            "{}{}",
            abbrev(f),
            p.get(f).map(|v| v.to_string()).unwrap_or_default()
        ));
    }
    for a in varying {
        if fixed.contains(&a.as_str()) {
            continue;
        }
        // a negative number keeps its sign as `m` (`n=-1` is `nm1`, never `n1`)
        let v = p
            .get(a)
            .map(|v| {
                let t = v.to_string();
                match t.strip_prefix('-') {
                    Some(rest) if matches!(v, Val::Int(_) | Val::Float(_)) => {
                        format!("m{}", slug(rest))
                    }
                    _ => slug(&t),
                }
            })
            .unwrap_or_default();
        parts.push(format!("{}{}", abbrev(a), v));
    }
    format!("{}_r{}", fit(&parts.join("_"), RUN_ID_STEM), p.repeat)
}

/// `id`, or where an earlier point of the matrix has it (two names that slug alike), `id_2`, `id_3`, ….
fn unique(seen: &mut HashSet<String>, id: String) -> String {
    let mut next = id.clone();
    let mut n = 2;
    while !seen.insert(next.clone()) {
        next = format!("{id}_{n}");
        n += 1;
    }
    next
}
