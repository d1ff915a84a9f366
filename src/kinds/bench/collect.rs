//! The generic kind's collectors: a CSV column (or a per-step CSV), a JSON value, nccl-tests
//! output, regex matches in the run logs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::kind_api::data::Measure;
use crate::kinds::bench::nccl::{parse_nccl_tests, NcclMeasure, NcclReport, NO_ROWS};
use crate::model::{Bench, CollectSpec, Placement, StepKind};
use crate::results::collect::pieces::{Owned, Pieces, OVERLAP, PIECE};
use crate::results::collect::timing::{self, TimingAcc, TimingModel};
use crate::results::collect::PointDir;
use crate::results::collect::{csv_lines, steps};

/// The bench's `collect`: a CSV column (or per-step CSV), a JSON value, nccl-tests output, or
/// regex matches in the run logs.
pub fn collect(at: &PointDir, bench: &Bench) -> Result<Measure, String> {
    let out = at.out();
    let Placement::Steps {
        collect: Some(c),
        steps,
        ..
    } = &bench.placement
    else {
        return Err("the bench declares no `collect`".into());
    };
    let runs = || {
        run_logs(
            at,
            steps
                .iter()
                .filter(|s| s.kind == StepKind::Run)
                .map(|s| s.name.as_str()),
        )
    };
    match c.format.as_str() {
        "csv" => collect_csv(at, c, &out),
        "json" => collect_json(c, &out),
        "nccl-tests" => collect_nccl(at, c, &out, runs()),
        // `path=`: the pattern over that file of the point's output dir, else the run logs
        _ => collect_regex(
            at,
            c,
            match &c.path {
                Some(p) => vec![out.join(p)],
                None => runs(),
            },
        ),
    }
}

/// The logs of a point's measured `run` steps (`run1-RUN_ID-HOST.log`, …): not a server's
/// (`serve runner` writes `runner-RUN_ID-HOST.log`), nor a warmup round's.
fn run_logs<'a>(at: &PointDir, names: impl Iterator<Item = &'a str>) -> Vec<PathBuf> {
    names
        .flat_map(|n| at.logs_for(&format!("{n}-{}-", at.run_id)))
        .collect()
}

/// `collect "csv"`: the mean of the `metric=` column (with the declared timing columns), or a
/// per-step CSV.
/// A file `path=` names that the point did not write: where it is looked for, and how a step
/// writes it there (the steps run in the host's checkout, not in the output dir).
/// (A file that cannot be looked at, its folder unreadable, is said as the system says it.)
fn not_written(f: &Path, path: &str) -> Option<String> {
    match f.symlink_metadata() {
        Ok(_) => None,
        // the point wrote other files there: its name is the likelier mistake
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !beside(f).is_empty() => {
            let there = beside(f);
            let mut named = crate::util::markup::ticked(there.iter().take(5));
            if there.len() > 5 {
                named.push_str(&format!(" and {} more", there.len() - 5));
            }
            Some(format!(
                "{}: no such file; the point's output dir holds {named}: does `path=` name the file the step writes?",
                f.display()
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!(
            "{}: no such file: `path=` is read in the point's output dir, and the steps run in the checkout: write it as `{{{{ outdir }}}}/{path}`",
            f.display()
        )),
        Err(e) => Some(format!("{}: cannot be read: {e}", f.display())),
    }
}

/// The names of the files in the folder of `f` (its point's output dir), sorted.
fn beside(f: &Path) -> Vec<String> {
    let mut v: Vec<String> = f
        .parent()
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn collect_csv(at: &PointDir, c: &CollectSpec, out: &Path) -> Result<Measure, String> {
    let f = out.join(c.path.as_deref().unwrap_or(""));
    if let Some(e) = not_written(&f, c.path.as_deref().unwrap_or("")) {
        return Err(e);
    }
    let name = f.display().to_string();
    let (mut rd, mut lines) = csv_lines::reader(&f)?;
    // a header that is not UTF-8 is no name `metric=` can give: read with its bad bytes
    // replaced (a column not read may be named anyhow)
    let headers = csv::StringRecord::from_byte_record_lossy(
        rd.byte_headers()
            .map_err(|e| lines.error(&name, &e))?
            .clone(),
    );
    let model = c.timing.as_ref().map(|t| TimingModel {
        stages: t.stages.iter().map(|s| vec![s.clone()]).collect(),
        total: t.total.clone(),
        data_loading: t.data_loading.clone(),
    });
    if let Some(t) = &c.timing {
        // a declared column the CSV lacks is a mistake of the experiment, said as such
        for col in t.stages.iter().chain(std::iter::once(&t.total)) {
            if !headers.iter().any(|h| h == col) {
                return Err(format!(
                    "{}: no column `{col}` (declared in `collect`'s timing block; the header has {})",
                    f.display(),
                    headers.iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    // a per-step CSV (RecStore/TorchRec's form) is read as steps, its headline the job's
    // samples/s — unless `metric=` names another column, which is then what is read
    let steps_metric = c.metric.as_deref().is_none_or(|m| m == "samples_per_sec");
    if steps_metric
        && headers.iter().any(|h| h == "step")
        && headers.iter().any(|h| h == "step_total_ms")
    {
        return steps::collect_timed(&[&f], at.warmup, model.as_ref()).map(Measure::Steps);
    }
    let names: Vec<&str> = headers.iter().collect();
    let declared = c
        .timing
        .iter()
        .flat_map(|t| t.stages.iter().chain([&t.total]).chain(&t.data_loading));
    csv_lines::twice(
        &name,
        &names,
        // the rank and batch size are read for the timing check only
        ["batch_size", "rank"]
            .into_iter()
            .filter(|_| c.timing.is_some())
            .chain(c.metric.as_deref())
            .chain(declared.map(String::as_str)),
    )?;
    let col_of = |n: &str| headers.iter().position(|h| h == n);
    let mut timing = model.as_ref().map(|m| {
        let mut acc = TimingAcc::new(m);
        acc.header(m, &col_of);
        acc
    });
    let batch_c = col_of("batch_size");
    let rank_c = col_of("rank");
    let metric = c.metric.clone().ok_or(format!(
        "{}: set `metric=` on `collect` to name the column",
        f.display()
    ))?;
    if headers.is_empty() {
        return Err(format!(
            "{}: the file is empty (no header, no rows)",
            f.display()
        ));
    }
    let col = headers
        .iter()
        .position(|h| h == metric)
        .ok_or_else(|| no_column(&f, &metric, &headers))?;
    let (mut mean, mut read) = (
        crate::results::collect::Mean::default(),
        crate::kind_api::data::Lines::default(),
    );
    // as bytes: a field the collector does not read may hold anything
    for r in rd.byte_records() {
        let r = r.map_err(|e| lines.error(&name, &e))?;
        let line = match r.position() {
            Some(p) => lines.record(&name, p)?,
            None => 0,
        };
        read.push(line);
        let text = |c: usize| -> Result<&str, String> {
            std::str::from_utf8(r.get(c).unwrap_or(b"")).map_err(|_| {
                format!(
                    "{name}:{line}: field {} (`{}`) is not UTF-8",
                    c + 1,
                    headers.get(c).unwrap_or("")
                )
            })
        };
        let v: f64 = crate::results::collect::number(text(col)?)
            .map_err(|e| format!("{name}:{line}: `{metric}`: {e}"))?;
        mean.push(v);
        if let Some(acc) = timing.as_mut() {
            let num = |c: usize| -> Result<Option<f64>, String> {
                let cell = text(c)?;
                if cell.trim().is_empty() {
                    return Ok(None);
                }
                crate::results::collect::number(cell)
                    .map(Some)
                    .map_err(|e| format!("{name}:{line}: `{}`: {e}", &headers[c]))
            };
            // every declared cell must read as a number (an empty one leaves the row
            // out of the check)
            for (k, h) in headers.iter().enumerate() {
                if model
                    .as_ref()
                    .is_some_and(|m| m.total == h || m.stages.iter().any(|s| s[0] == h))
                {
                    num(k)?;
                }
            }
            let at = format!("{name}:{line}");
            let batch = timing::batch_of(batch_c, &|c, _| num(c), &at);
            // a rank is a whole number: `oops` or `1.9` is no rank 0 or 1
            let rank = match rank_c.map(num).transpose()?.flatten() {
                None if rank_c.is_some() => return Err(format!("{at}: `rank` is empty")),
                None => 0,
                Some(r) if r.fract() != 0.0 || r.abs() > 9.0e15 => {
                    return Err(format!("{at}: `rank`: {r} is not a whole number"))
                }
                Some(r) => r as i64,
            };
            let cell = |c: usize| num(c).ok().flatten();
            acc.row(&cell, batch, rank, &at);
        }
    }
    let Some(value) = mean.value() else {
        return Err(format!("{}: no rows", f.display()));
    };
    let n = mean.n();
    Ok(Measure::Metric {
        name: metric,
        unit: None,
        value,
        samples: n,
        files: vec![f.display().to_string()],
        lines: read.text("rows"),
        timing: timing.and_then(TimingAcc::finish),
    })
}

/// The reason of a CSV without the column `metric=` names: the nearest name, and the header's
/// first 20.
fn no_column(f: &Path, metric: &str, headers: &csv::StringRecord) -> String {
    let names: Vec<&str> = headers.iter().collect();
    let near = crate::util::suggest::did_you_mean(metric, names.iter().copied())
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    let mut shown: Vec<String> = names
        .iter()
        .take(20)
        .map(|h| format!("`{}`", crate::results::collect::shown(h).trim_matches('"')))
        .collect();
    if names.len() > 20 {
        shown.push(format!("and {} more", names.len() - 20));
    }
    format!(
        "{}: no column `{metric}`{near}; the header has {}",
        f.display(),
        shown.join(", ")
    )
}

/// An object's members in the order written, a key written twice kept twice.
struct Members<'a>(Vec<(String, &'a serde_json::value::RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Self::Value, M::Error> {
                let mut v = Vec::new();
                while let Some(kv) = m.next_entry::<String, &'de serde_json::value::RawValue>()? {
                    v.push(kv);
                }
                Ok(Members(v))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// The text of the value at the dotted key as the file writes it, and its line; `Ok(None)`
/// where the path leads to no value; an error where a key on the path is written twice (which
/// of the two holds the number is a guess).
fn literal_at<'a>(text: &'a str, metric: &str) -> Result<Option<(&'a str, u64)>, String> {
    use serde_json::value::RawValue;
    let Ok(mut cur) = serde_json::from_str::<&'a RawValue>(text) else {
        return Ok(None);
    };
    for k in metric.split('.') {
        let Ok(Members(members)) = serde_json::from_str::<Members<'a>>(cur.get()) else {
            return Ok(None);
        };
        let mut hits = members.iter().filter(|(name, _)| name == k);
        let Some((_, v)) = hits.next() else {
            return Ok(None);
        };
        if hits.next().is_some() {
            return Err(format!(
                "the key `{k}` of `{metric}` is written twice: which one holds the number is a guess"
            ));
        }
        cur = v;
    }
    let lit = cur.get();
    // the literal is a slice of the text: its line is the newlines before it
    let at = (lit.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let line = 1 + text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count() as u64;
    Ok(Some((lit, line)))
}

/// `collect "json"`: the value at the dotted key `metric=`.
fn collect_json(c: &CollectSpec, out: &Path) -> Result<Measure, String> {
    let f = out.join(c.path.as_deref().unwrap_or(""));
    if let Some(e) = not_written(&f, c.path.as_deref().unwrap_or("")) {
        return Err(e);
    }
    let text = crate::results::collect::read_text(&f)?;
    // a byte-order mark (as the CSV reader takes one) is no JSON
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let v: Value = serde_json::from_str(text).map_err(|e| format!("{}: {e}", f.display()))?;
    let metric = c.metric.clone().ok_or(format!(
        "{}: set `metric=` (a dotted key) on `collect`",
        f.display()
    ))?;
    let mut cur = &v;
    for k in metric.split('.') {
        cur = &cur[k];
    }
    // where the key's value is written (none: the path leads to no value)
    let at = literal_at(text, &metric).map_err(|e| format!("{}: {e}", f.display()))?;
    let value = cur.as_f64().ok_or_else(|| match at {
        Some((lit, line)) => {
            let what = match serde_json::from_str::<Value>(lit) {
                Ok(Value::String(t)) => {
                    format!("the string {}", crate::results::collect::shown(&t))
                }
                Ok(Value::Object(_)) => "an object".into(),
                Ok(Value::Array(_)) => "an array".into(),
                _ => lit.chars().take(40).collect(),
            };
            format!("{}:{line}: `{metric}` is {what}, not a number", f.display())
        }
        None => format!("{}: no value at `{metric}`", f.display()),
    })?;
    // JSON reads `1e-400` as 0 without a word: the literal as written at that key must pass
    // the collectors' number rule too
    if let Some((lit, line)) = at {
        crate::results::collect::number(lit)
            .map_err(|e| format!("{}:{line}: `{metric}`: {e}", f.display()))?;
    }
    Ok(Measure::Metric {
        name: metric,
        unit: None,
        value,
        samples: 1,
        files: vec![f.display().to_string()],
        lines: at.map(|(_, line)| line.to_string()),
        timing: None,
    })
}

/// `collect "nccl-tests"`: the first of the files (`path=`, else the run logs) that nccl-tests
/// output parses from.
fn collect_nccl(
    at: &PointDir,
    c: &CollectSpec,
    out: &Path,
    runs: Vec<PathBuf>,
) -> Result<Measure, String> {
    let files: Vec<PathBuf> = match &c.path {
        Some(p) => vec![out.join(p)],
        None => runs,
    };
    // every run step's log is read: one holds the table; a second table, or a table that
    // does not read beside one that does, is said (the first that read was taken)
    let mut read: Vec<(&PathBuf, NcclReport)> = Vec::new();
    let mut broken: Vec<String> = Vec::new();
    for f in &files {
        let text = crate::results::collect::read_lossy(f)?;
        match parse_nccl_tests(&text) {
            Ok(report) => read.push((f, report)),
            // a log with no table at all (a setup step's) is no second table
            Err(e) if e == NO_ROWS => {}
            Err(e) => broken.push(format!("{}: {e}", f.display())),
        }
    }
    if let Some(e) = broken.into_iter().next() {
        return Err(e);
    }
    match read.len() {
        0 => Err(match files.as_slice() {
            [one] => format!("{}: {NO_ROWS}", one.display()),
            _ => format!("no nccl-tests output for {}", at.run_id),
        }),
        1 => {
            let (f, report) = read.remove(0);
            // a run the tool's own check failed measured nothing worth a number
            if let Some(w) = report.found_wrong() {
                return Err(format!("{}{w}", f.display()));
            }
            Ok(NcclMeasure {
                report,
                files: vec![f.display().to_string()],
            }
            .measure())
        }
        _ => Err(format!(
            "{} and {} each hold an nccl-tests table: a point reads one (give each test a bench of its own, or name the file with `path=`)",
            read[0].0.display(),
            read[1].0.display()
        )),
    }
}

/// `collect "regex"`: the mean of the pattern's matches over every line of the run logs.
fn collect_regex(at: &PointDir, c: &CollectSpec, logs: Vec<PathBuf>) -> Result<Measure, String> {
    let pat = c.pattern.clone().unwrap_or_default();
    let re = regex::Regex::new(&pat).map_err(|e| format!("collect pattern: {e}"))?;
    let group = c.metric.clone();
    let (mut mean, mut files) = (crate::results::collect::Mean::default(), Vec::new());
    // the lines matched in each log
    let mut per_log: Vec<crate::kind_api::data::Lines> = Vec::new();
    if logs.is_empty() {
        // its log was removed (or never written): the file is named, not left blank
        return Err(format!(
            "no run log of {} in {} (logs/run*-{}-*.log): nothing to match /{pat}/ in",
            at.run_id,
            at.dir.join("logs").display(),
            at.run_id
        ));
    }
    // the last line with text of the logs read: what a pattern that matched nothing missed is
    // likely near it (`thruput: 12.5` for /throughput: …/)
    let mut last: Option<(String, usize, String)> = None;
    // the unit stuck to the first number read, and where: every other must have it too
    let mut unit = OneUnit::default();
    for l in logs {
        let mut matched = crate::kind_api::data::Lines::default();
        // line by line (a log may be larger than memory); bytes that are not UTF-8 do
        // not hide the lines around them
        let f = crate::results::collect::open_log(&l)?;
        // at most 1 MiB of a line at a time (a 500 MB line without a newline costs 1 MiB), in
        // pieces that overlap: a match across a cut is read whole, once
        let mut pieces = Pieces::new(f);
        while let Some(piece) = pieces
            .next_piece()
            .map_err(|e| format!("{}: {e}", l.display()))?
        {
            let (ln, line) = (piece.ln, &*piece.text);
            if !line.trim().is_empty() {
                last = Some((l.display().to_string(), ln, line.to_string()));
            }
            for cap in re.captures_iter(line) {
                // a match longer than the overlap at a cut may be a cut one (`ms=12` of
                // `ms=123456`, a `^` in the middle of the line): no number rather than a wrong
                // one; a match the piece before read, or the next one reads whole, is theirs
                if let Some(whole) = cap.get(0) {
                    match piece.owns(whole.start(), whole.end()) {
                        Owned::Here => {}
                        Owned::Elsewhere => continue,
                        Owned::Cut => {
                            return Err(format!(
                                "{}:{ln}: /{pat}/ matched across the edge of a {} MiB piece of a longer line, more than the {} KiB the pieces share, where its text may be cut: not read",
                                l.display(),
                                PIECE >> 20,
                                OVERLAP >> 10
                            ));
                        }
                    }
                }
                let m = match &group {
                    Some(g) => cap.name(g),
                    None => cap.get(1),
                };
                // a match whose group took no part (`([0-9.]+)?`, the other side of a `|`)
                // gives no number for a line the pattern matched: said, never skipped
                let Some(m) = m else {
                    let g = group
                        .as_deref()
                        .map_or("1".to_string(), |g| format!("`{g}`"));
                    return Err(format!(
                        "{}:{ln}: /{pat}/ matched {}, but its group {g} took no part in the match: no number (make the group required)",
                        l.display(),
                        crate::results::collect::shown(cap.get(0).map_or("", |w| w.as_str()))
                    ));
                };
                // a match whose value is not a number makes the point no-data, said
                // with its line: never skipped, never a zero
                let v = crate::results::collect::number(m.as_str())
                    .map_err(|e| format!("{}:{ln}: /{pat}/ matched, but {e}", l.display()))?;
                // a number the pattern cut (`ms=([0-9.]+)` of `ms=1.5e-05` read 1.5, of
                // `1,234.5` read 1, `([0-9.]+) ms` of `-3 ms` read 3): no number rather than
                // a wrong one
                if let Some(whole) = cut_number(line, m.start(), m.end()) {
                    let digits = whole.trim_start_matches(['-', '+']).as_bytes();
                    let advice = if digits.first() == Some(&b'0')
                        && digits.get(1).is_some_and(|b| b"xXbBoO".contains(b))
                    {
                        "expr reads decimal numbers only: print it in decimal"
                    } else {
                        "widen the group, e.g. `([-+0-9.eE]+)`"
                    };
                    return Err(format!(
                        "{}:{ln}: /{pat}/ matched `{}` of the number `{whole}`: not read ({advice})",
                        l.display(),
                        m.as_str()
                    ));
                }
                let after = unit_after(line, m.end());
                unit.check(after, format!("{}:{ln}", l.display()), m.as_str(), &pat)?;
                mean.push(v);
                matched.push(ln as u64);
            }
        }
        files.push(l.display().to_string());
        per_log.push(matched);
    }
    let Some(value) = mean.value() else {
        let ends = match last {
            Some((f, n, text)) => format!(
                "; its last line, {f}:{n}: {}",
                crate::results::collect::shown(&text)
            ),
            None => "; the log is empty".to_string(),
        };
        return Err(format!(
            "no line of {} matches /{pat}/{ends}",
            files.join(", ")
        ));
    };
    Ok(Measure::Metric {
        name: regex_metric_name(&pat, group.as_deref()),
        unit: unit.0.map(|(u, _)| u).filter(|u| !u.is_empty()),
        value,
        samples: mean.n(),
        // the lines, where one log holds the matches
        lines: match per_log.as_slice() {
            [one] => one.text("matches"),
            _ => None,
        },
        // several clients' logs: each with its lines, or said to have none
        files: if files.len() == 1 {
            files
        } else {
            files
                .iter()
                .zip(&per_log)
                .map(|(f, m)| match m.text("matches") {
                    Some(l) => format!("{f}:{l}"),
                    None => format!("{f} (no match)"),
                })
                .collect()
        },
        timing: None,
    })
}

/// The unit stuck to the number a group ends at (`ms` of `lat=999.0ms`, `GB/s` of
/// `rate=3GB/s`, `%` of `util=85%`): the letters right after it, with a `%` or a `/` between
/// letters; empty where none is (`lat=5 ms`). Whether the pattern matches them too does not
/// matter: `lat=([0-9.]+)ms` reads `ms` as `lat=([0-9.]+)` does. A tool that scales its unit
/// (`999.0ms`, then `1.001s`) gives numbers that are not one number (helper 87: they were
/// averaged and compared as they were).
fn unit_after(line: &str, group_end: usize) -> String {
    let rest = &line[group_end..];
    let mut unit = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        let slash = c == '/' && !unit.is_empty() && chars.peek().is_some_and(|n| n.is_alphabetic());
        if !(c.is_alphabetic() || c == '%' || slash) || unit.chars().count() >= 16 {
            break;
        }
        unit.push(c);
    }
    unit
}

/// The unit after the first number a pattern read, and where it was: (unit, `file:line`).
#[derive(Default)]
struct OneUnit(Option<(String, String)>);

impl OneUnit {
    /// The number `read` at `here` stood before `after`: the same unit as the others', or no
    /// number (said with both places). A number without a unit goes with any (`lat=5ms`, then
    /// `lat=6 ms`); `µs` and `us` are one.
    fn check(&mut self, after: String, here: String, read: &str, pat: &str) -> Result<(), String> {
        let same = |a: &str, b: &str| a.replace('µ', "u") == b.replace('µ', "u");
        match &self.0 {
            _ if after.is_empty() => {}
            None => self.0 = Some((after, here)),
            Some((u, _)) if same(u, &after) => {}
            Some((u, at)) => {
                return Err(format!(
                    "{here}: /{pat}/ read `{read}` before `{after}` here, and a number before `{u}` at {at}: numbers in other units are not one number (print one unit, or write the unit into the pattern, so that only numbers in it are read)"
                ));
            }
        }
        Ok(())
    }
}

/// The whole number a match at `start..end` of `line` is part of, where the text around it
/// goes on as the number: a digit, a decimal part or an exponent after it, a comma, `_` or `'`
/// and a digit (`1,234`, `1,5`, `1_000`, `1'234`), the base of a lone `0` (`0x1F`, `0b101`,
/// `0o17`, read as 0), a byte that is no text and a digit, or a sign before it (after no letter
/// or digit).
fn cut_number(line: &str, start: usize, end: usize) -> Option<String> {
    let b = line.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let matched = &line[start..end];
    let zero = matched.trim_start_matches(['-', '+']) == "0";
    let after = match b.get(end) {
        Some(c) if c.is_ascii_digit() => true,
        Some(b'x' | b'X') => zero && b.get(end + 1).is_some_and(u8::is_ascii_hexdigit),
        Some(b'b' | b'B') => zero && matches!(b.get(end + 1), Some(b'0' | b'1')),
        Some(b'o' | b'O') => zero && matches!(b.get(end + 1), Some(b'0'..=b'7')),
        // `1.5` of `1.5.2` (a version) or `10.0` of `10.0.2.190` (an address): more of it
        // (helper 87: a match that held its dot was taken)
        Some(b'.') => digit(end + 1),
        Some(b'e' | b'E') => {
            !matched.contains(['e', 'E'])
                && (digit(end + 1)
                    || (matches!(b.get(end + 1), Some(b'-' | b'+')) && digit(end + 2)))
        }
        // a group of thousands (`1,234`) or a decimal comma (`1,5`): either way more of it
        Some(b'_' | b'\'') => digit(end + 1),
        // (a list, `1,2,3`, is no number: its parts are not groups of three)
        Some(b',') => {
            let k = b[end + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            k > 0 && (b.get(end + 1 + k) != Some(&b',') || k == 3)
        }
        // a byte that is no text (a NUL, or not UTF-8) inside the digits
        Some(0) => digit(end + 1),
        _ => {
            let rest = &line[end..];
            let sep = rest.chars().next().unwrap_or(' ');
            let at = end + sep.len_utf8();
            let three = (at..at + 3).all(digit) && !digit(at + 3);
            match sep {
                '\u{fffd}' => digit(at),
                // a locale's decimal or group mark: Arabic `٫` `٬`, a `’` (de-CH), a
                // full-width `，` or `．`
                '\u{66b}' | '\u{66c}' | '\u{2019}' | '\u{ff0c}' | '\u{ff0e}' => digit(at),
                // a space that groups thousands (no-break, figure, punctuation, thin, narrow):
                // before three digits
                '\u{a0}' | '\u{2007}' | '\u{2008}' | '\u{2009}' | '\u{202f}' => three,
                _ => false,
            }
        }
    };
    let before = start > 0
        && matches!(b[start - 1], b'-' | b'+')
        && !matched.starts_with(['-', '+'])
        && !line[..start - 1]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
    let left = number_left_of(line, start);
    (after || before || left < start).then(|| {
        let from = if before { start - 1 } else { left };
        let to = end
            + line[end..]
                .find(|c: char| {
                    !(c.is_ascii_alphanumeric()
                        || matches!(
                            c,
                            '.' | ','
                                | '-'
                                | '+'
                                | '_'
                                | '\''
                                | '\0'
                                | '\u{fffd}'
                                | '\u{66b}'
                                | '\u{66c}'
                                | '\u{2019}'
                                | '\u{ff0c}'
                                | '\u{ff0e}'
                                | '\u{a0}'
                                | '\u{2007}'
                                | '\u{2008}'
                                | '\u{2009}'
                                | '\u{202f}'
                        ))
                })
                .unwrap_or(line.len() - end);
        // (the text holds no backslash: `\'` is only the escape of a digit group's `'`)
        line[from..to]
            .escape_debug()
            .to_string()
            .replace("\\'", "'")
    })
}

/// Where the number a match at `start` ends is part of begins, where the text before it goes on
/// as the number: a digit (`12` of which `2` matched), a decimal point after a digit or no word
/// (`12.5`, ` .5`), a group mark after a digit (`1,234`, `1_234`, `1'234`), an exponent after a
/// digit (`1e5`, `1e-5`); `start` where it goes on as none (a sign alone is [`cut_number`]'s).
fn number_left_of(line: &str, start: usize) -> usize {
    let mut at = start;
    let back = |at: usize, n: usize| line[..at].chars().rev().nth(n);
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    let digits_from = |i: usize| line[i..].bytes().take_while(u8::is_ascii_digit).count();
    loop {
        let (c, c2, c3) = (back(at, 0), back(at, 1), back(at, 2));
        // the digits right of a mark: a group of three ends there (`1,234` not `1,2345`), and
        // a decimal mark has no second one after them (`3,12.5` is no number)
        let group =
            || digits_from(at) == 3 && !line[at + 3..].starts_with(|c: char| c.is_ascii_digit());
        let decimal = || !line[at + digits_from(at)..].starts_with(['.', ',']);
        let take = match c {
            Some(d) if d.is_ascii_digit() => true,
            // a decimal point after a digit, or a lone one (`.5`, not an ellipsis's `...12`)
            Some('.') => digit(c2) || !(c2.is_some_and(char::is_alphanumeric) || c2 == Some('.')),
            Some('_' | '\'') => digit(c2),
            // a group of thousands (`1,234`) or a decimal comma (`1,5`); not the last item of a
            // list (`1,2,3`: its parts are not groups of three)
            Some(',') => {
                let before = line[..at - 1]
                    .bytes()
                    .rev()
                    .take_while(u8::is_ascii_digit)
                    .count();
                let list = line[..at - 1 - before].ends_with(',');
                digit(c2) && (group() || (!list && decimal()))
            }
            // a locale's decimal or group mark (as on the right): Arabic `٫` `٬`, `’` (de-CH),
            // a full-width `，` or `．`; a space that groups thousands, before three digits
            Some('\u{66b}' | '\u{66c}' | '\u{2019}' | '\u{ff0c}' | '\u{ff0e}') => digit(c2),
            Some('\u{a0}' | '\u{2007}' | '\u{2008}' | '\u{2009}' | '\u{202f}') => {
                digit(c2) && group()
            }
            Some('e' | 'E') => digit(c2) || (c2 == Some('.') && digit(c3)),
            Some('-' | '+') => matches!(c2, Some('e' | 'E')) && (digit(c3) || c3 == Some('.')),
            _ => false,
        };
        if !take {
            // a sign before the whole number goes with it
            return match (c, c2) {
                (Some('-' | '+'), c2) if at < start && !c2.is_some_and(char::is_alphanumeric) => {
                    at - 1
                }
                _ => at,
            };
        }
        at -= c.map_or(0, char::len_utf8);
    }
}

/// The name of what a `collect "regex"` reads: `metric=`, else its first group's name
/// (`(?P<lat_ms>…)`), else the word just before the group (`lat=([0-9.]+)` reads `lat`), else
/// `value`.
pub fn regex_metric_name(pattern: &str, metric: Option<&str>) -> String {
    if let Some(m) = metric {
        return m.to_string();
    }
    if let Ok(re) = regex::Regex::new(pattern) {
        if let Some(Some(n)) = re.capture_names().nth(1) {
            return n.to_string();
        }
    }
    // the literal text before the first capturing group, its escapes (`\s*`) blanked
    let mut prefix = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
                prefix.push(' ');
            }
            '(' if chars.peek() != Some(&'?') => break,
            c => prefix.push(c),
        }
    }
    let word: String = prefix
        .trim_end_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if word.is_empty() || word.chars().all(|c| c.is_ascii_digit()) {
        "value".into()
    } else {
        word
    }
}

#[cfg(test)]
mod tests {
    /// A file the point did not write is "no such file" with the fix; one that cannot be looked
    /// at (its folder unreadable, or a file where a folder goes) says the system's reason, not
    /// that advice (an unreadable outputs/ was "no such file: … write it as {{ outdir }}/…").
    #[test]
    fn a_collect_file_that_cannot_be_looked_at_says_why() {
        let d = tempfile::tempdir().unwrap();
        let gone = super::not_written(&d.path().join("r.csv"), "r.csv").unwrap();
        assert!(gone.ends_with("no such file: `path=` is read in the point's output dir, and the steps run in the checkout: write it as `{{ outdir }}/r.csv`"), "{gone}");
        std::fs::write(d.path().join("outputs"), "").unwrap();
        let blocked = super::not_written(&d.path().join("outputs/r.csv"), "r.csv").unwrap();
        assert!(
            blocked.ends_with("outputs/r.csv: cannot be read: Not a directory (os error 20)"),
            "{blocked}"
        );
        // the point wrote another file: its name is asked about
        std::fs::create_dir(d.path().join("o")).unwrap();
        std::fs::write(d.path().join("o/result.csv"), "a\n").unwrap();
        let other = super::not_written(&d.path().join("o/r.csv"), "r.csv").unwrap();
        assert!(
            other.ends_with("o/r.csv: no such file; the point's output dir holds `result.csv`: does `path=` name the file the step writes?"),
            "{other}"
        );
        std::fs::write(d.path().join("r.csv"), "a\n").unwrap();
        assert_eq!(super::not_written(&d.path().join("r.csv"), "r.csv"), None);
    }

    /// Point `b_r0` of lane `b` in the result directory `dir`.
    fn point(dir: &std::path::Path) -> crate::results::collect::PointDir<'_> {
        crate::results::collect::PointDir {
            dir,
            run_id: "b_r0",
            lane: "b",
            warmup: 0,
            logs: None,
        }
    }

    /// A `collect` of `format` with these properties.
    fn spec(
        format: &str,
        path: Option<&str>,
        metric: Option<&str>,
        pattern: Option<&str>,
    ) -> crate::model::CollectSpec {
        crate::model::CollectSpec {
            format: format.into(),
            path: path.map(str::to_string),
            metric: metric.map(str::to_string),
            pattern: pattern.map(str::to_string),
            direction: None,
            timing: None,
            loc: Default::default(),
        }
    }

    /// A match the number goes on past (or a sign stands before) is the part of a number, and
    /// is said with the whole; a number as matched is none.
    #[test]
    fn a_number_cut_by_the_pattern_is_found_whole() {
        let cut = |line: &str, pat: &str| {
            let m = regex::Regex::new(pat)
                .unwrap()
                .captures(line)
                .unwrap()
                .get(1)
                .unwrap();
            super::cut_number(line, m.start(), m.end())
        };
        assert_eq!(
            cut("ms=1.5e-05 ok", r"ms=([0-9.]+)").as_deref(),
            Some("1.5e-05")
        );
        assert_eq!(
            cut("ms=1,234.5", r"ms=([0-9.]+)").as_deref(),
            Some("1,234.5")
        );
        assert_eq!(cut("v=123", r"v=([0-9])").as_deref(), Some("123"));
        assert_eq!(cut("v=12.5", r"v=([0-9]+)").as_deref(), Some("12.5"));
        assert_eq!(cut("delta -3 ms", r"([0-9.]+) ms").as_deref(), Some("-3"));
        // another base's prefix after a lone 0 (read as 0), a digit group mark
        assert_eq!(cut("ms=0x1F", r"ms=([0-9.]+)").as_deref(), Some("0x1F"));
        assert_eq!(
            cut("ms=0X10 ok", r"ms=([-+0-9.eE]+)").as_deref(),
            Some("0X10")
        );
        assert_eq!(cut("ms=0b101", r"ms=([0-9.]+)").as_deref(), Some("0b101"));
        assert_eq!(cut("ms=-0o17", r"ms=([-0-9.]+)").as_deref(), Some("-0o17"));
        assert_eq!(
            cut("ms=1'234.5", r"ms=([0-9.]+)").as_deref(),
            Some("1'234.5")
        );
        // a unit or a word after the number: whole
        assert_eq!(cut("ms=0 xs", r"ms=([0-9.]+)"), None);
        assert_eq!(cut("ms=0bytes", r"ms=([0-9.]+)"), None);
        assert_eq!(cut("ms=10xfaster", r"ms=([0-9.]+)"), None);
        assert_eq!(cut("ms=0.5ms", r"ms=([0-9.]+)"), None);
        assert_eq!(cut("said 'ms=5'", r"ms=([0-9.]+)"), None);
        // whole numbers: none
        assert_eq!(cut("ms=1.5e-05 ok", r"ms=([0-9.eE+-]+)"), None);
        assert_eq!(cut("v=1,2,3", r"v=([0-9]+)"), None);
        assert_eq!(cut("v=7.", r"v=([0-9]+)"), None);
        // a dot and a digit after a match that holds its dot: a version, an address
        assert_eq!(cut("v=1.5.2", r"v=(\d+\.\d+)").as_deref(), Some("1.5.2"));
        assert_eq!(
            cut("at 10.0.2.190", r"at ([0-9]+\.[0-9]+)").as_deref(),
            Some("10.0.2.190")
        );
        assert_eq!(cut("rate=12.5.", r"rate=(\d+\.\d+)"), None);

        assert_eq!(cut("run-3 ms", r"([0-9]+) ms"), None);
        // a hyphen after a letter of several bytes is a hyphen too
        assert_eq!(cut("menü-3 ms", r"([0-9]+) ms"), None);
        assert_eq!(cut("é -3 ms", r"([0-9]+) ms").as_deref(), Some("-3"));
        assert_eq!(cut("x=5 eggs", r"x=([0-9]+)"), None);
        assert_eq!(cut("x=5e", r"x=([0-9]+)"), None);
        // a decimal comma, a long group, `_` between digits, a byte that is no text
        assert_eq!(cut("ms=1,5", r"ms=([0-9.]+)").as_deref(), Some("1,5"));
        assert_eq!(
            cut("ms=1,23456", r"ms=([0-9.]+)").as_deref(),
            Some("1,23456")
        );
        assert_eq!(
            cut("ms=1,234,567", r"ms=([0-9.]+)").as_deref(),
            Some("1,234,567")
        );
        assert_eq!(cut("ms=1_000", r"ms=([0-9.]+)").as_deref(), Some("1_000"));
        assert_eq!(cut("ms=1\u{0}2", r"ms=([0-9.]+)").as_deref(), Some("1\\02"));
        assert_eq!(
            cut("ms=1\u{fffd}2", r"ms=([0-9.]+)").as_deref(),
            Some("1\u{fffd}2")
        );
        // a locale's marks (helper 62: `1٫5` read as 1, `12 345` as 12)
        for (line, want) in [
            ("ms=1\u{66b}5", "1\u{66b}5"),
            ("ms=12\u{66c}345", "12\u{66c}345"),
            ("ms=12\u{2019}345", "12\u{2019}345"),
            ("ms=12\u{ff0c}345", "12\u{ff0c}345"),
            ("ms=1\u{ff0e}5", "1\u{ff0e}5"),
        ] {
            assert_eq!(cut(line, r"ms=([0-9.]+)").as_deref(), Some(want), "{line}");
        }
        for sp in ["\u{a0}", "\u{2007}", "\u{2008}", "\u{2009}", "\u{202f}"] {
            let line = format!("ms=12{sp}345 ok");
            assert!(cut(&line, r"ms=([0-9.]+)").is_some(), "{line:?}");
            // not three digits after it: a value, then another word
            let line = format!("ms=12{sp}3 items");
            assert_eq!(cut(&line, r"ms=([0-9.]+)"), None, "{line:?}");
        }
        assert_eq!(cut("ms=1, 2", r"ms=([0-9.]+)"), None);
        // the number goes on to the left of the group: a whole part, a group, an exponent
        assert_eq!(
            cut("latency: 12.5 ms", r"(\d+) ms").as_deref(),
            Some("12.5")
        );
        assert_eq!(
            cut("lat 1,234 ms", r"([0-9.]+) ms").as_deref(),
            Some("1,234")
        );
        assert_eq!(cut("lat 1e-5 ms", r"([0-9.]+) ms").as_deref(), Some("1e-5"));
        assert_eq!(cut("lat 1.5E+3 ms", r"(\d+) ms").as_deref(), Some("1.5E+3"));
        assert_eq!(
            cut("lat 1_234 ms", r"([0-9.]+) ms").as_deref(),
            Some("1_234")
        );
        assert_eq!(cut("lat 1'234 ms", r"(\d+) ms").as_deref(), Some("1'234"));
        assert_eq!(cut("lat -12.5 ms", r"(\d+) ms").as_deref(), Some("-12.5"));
        assert_eq!(cut("lat .5 ms", r"(\d+) ms").as_deref(), Some(".5"));
        assert_eq!(cut("x12 ms", r"(\d) ms").as_deref(), Some("12"));
        assert_eq!(cut("v=1,5 ms", r"(\d+) ms").as_deref(), Some("1,5"));
        assert_eq!(cut("n=1,234,567", r",(\d+)$").as_deref(), Some("1,234,567"));
        // not a number's part: a word's letter, a list's last item, a name's dot, a plain mark
        assert_eq!(cut("iter5 ms", r"(\d+) ms"), None);
        assert_eq!(cut("size5 ms", r"(\d+) ms"), None);
        assert_eq!(cut("v=1,2,3", r",(\d)$"), None);
        assert_eq!(cut("file.5 ms", r"(\d+) ms"), None);
        assert_eq!(cut("t=12:40:36", r":(\d+)$"), None);
        assert_eq!(cut("id_5 ms", r"(\d+) ms"), None);
        // a locale's marks on the left too, as on the right (helper 76: read 234 or 5)
        assert_eq!(
            cut("lat 1\u{202f}234 ms", r"(\d+) ms").as_deref(),
            Some("1\\u{202f}234")
        );
        assert_eq!(cut("lat 1’234 ms", r"(\d+) ms").as_deref(), Some("1’234"));
        assert_eq!(cut("lat 1，234 ms", r"(\d+) ms").as_deref(), Some("1，234"));
        assert_eq!(cut("lat 1٫5 ms", r"(\d+) ms").as_deref(), Some("1٫5"));
        // whole numbers after a mark that is no number's (helper 76: refused)
        assert_eq!(cut("ok: 3,12.5 ms", r"ok: \d+,([0-9.]+) ms"), None);
        assert_eq!(cut("3,12.5", r",([0-9.]+)$"), None);
        assert_eq!(cut("warming up...12 ms", r"(\d+) ms"), None);
        assert_eq!(cut("a 1 2345 ms", r"(\d+) ms"), None);
        assert_eq!(cut("ms=1_x", r"ms=([0-9.]+)"), None);
    }

    /// The unit stuck to the number a group ends at, whether the pattern matches it or not;
    /// none where a space, a comma or nothing follows.
    #[test]
    fn the_unit_after_a_number_is_the_letters_stuck_to_it() {
        let unit = |line: &str, pat: &str| {
            let c = regex::Regex::new(pat).unwrap().captures(line).unwrap();
            super::unit_after(line, c.get(1).unwrap().end())
        };
        assert_eq!(unit("lat=999.0ms", r"lat=([0-9.]+)"), "ms");
        assert_eq!(unit("lat=999.0ms", r"lat=([0-9.]+)ms"), "ms");
        assert_eq!(unit("lat=5µs ok", r"lat=([0-9.]+)"), "µs");
        assert_eq!(unit("util=85%", r"util=([0-9.]+)"), "%");
        assert_eq!(unit("rate=3GB/s, ok", r"rate=([0-9.]+)"), "GB/s");
        assert_eq!(unit("rate=3 samples/s", r"rate=([0-9.]+)"), "");
        assert_eq!(unit("v=3/4", r"v=([0-9.]+)"), "");
        assert_eq!(unit("lat=5 ms", r"lat=([0-9.]+)"), "");
        assert_eq!(unit("lat=5, next", r"lat=([0-9.]+)"), "");
        assert_eq!(unit("lat=5", r"lat=([0-9.]+)"), "");
    }

    /// Numbers in one unit, or without one beside it, are one number; `µs` and `us` are one
    /// unit; `ms` and `s` are not.
    #[test]
    fn numbers_go_together_in_one_unit_or_none() {
        let mut u = super::OneUnit::default();
        for (after, at) in [("", "l:1"), ("ms", "l:2"), ("", "l:3"), ("ms", "l:4")] {
            assert!(
                u.check(after.into(), at.into(), "5", "p").is_ok(),
                "{after}"
            );
        }
        assert_eq!(u.0, Some(("ms".to_string(), "l:2".to_string())));
        let e = u
            .check("s".into(), "l:5".into(), "1.001", "lat=(x)")
            .unwrap_err();
        assert_eq!(
            e,
            "l:5: /lat=(x)/ read `1.001` before `s` here, and a number before `ms` at l:2: numbers in other units are not one number (print one unit, or write the unit into the pattern, so that only numbers in it are read)"
        );
        let mut u = super::OneUnit::default();
        assert!(u.check("µs".into(), "l:1".into(), "5", "p").is_ok());
        assert!(u.check("us".into(), "l:2".into(), "6", "p").is_ok());
    }
    use super::regex_metric_name as name;

    /// `metric=` names the column read also in a per-step CSV (`step`, `step_total_ms`): it
    /// was ignored there, and the job's samples/s went out under its name; a column that is
    /// not there is said so.
    #[test]
    fn a_csv_metric_is_read_in_a_per_step_csv_too() {
        let d = tempfile::tempdir().unwrap();
        let at = point(d.path());
        std::fs::write(
            d.path().join("steps.csv"),
            "step,step_total_ms,samples_per_sec,loss\n0,10,100,0.5\n1,10,100,0.3\n",
        )
        .unwrap();
        let read = |metric: Option<&str>| {
            let spec = spec("csv", Some("steps.csv"), metric, None);
            super::collect_csv(&at, &spec, d.path())
        };
        match read(Some("loss")).unwrap() {
            crate::kind_api::data::Measure::Metric { name, value, .. } => {
                assert_eq!((name.as_str(), value), ("loss", 0.4));
            }
            _ => panic!("loss was not read as the metric"),
        }
        let e = read(Some("nonexistent")).unwrap_err();
        assert!(e.contains("no column `nonexistent`"), "{e}");
        assert!(matches!(
            read(None).unwrap(),
            crate::kind_api::data::Measure::Steps(_)
        ));
    }

    /// A match whose group took no part (`([0-9.]+)?` on `ms=`, the other side of `a|b`) is
    /// no number, said with its line: the match was skipped and the others read.
    #[test]
    fn a_regex_match_whose_group_took_no_part_is_no_data() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("logs")).unwrap();
        std::fs::write(
            d.path().join("logs/run1-b_r0-local.log"),
            "ms=\nms=4\na=1\nb=2\n",
        )
        .unwrap();
        let at = point(d.path());
        // `ms=` (the optional group took no part) and `b=2` (the other side of `|`): said with
        // their lines, where the match was skipped before (4 and 1 were read)
        for (pat, line) in [("ms=([0-9.]+)?", ":1:"), ("a=([0-9]+)|b=([0-9]+)", ":4:")] {
            let logs = super::run_logs(&at, ["run1"].into_iter());
            let e =
                super::collect_regex(&at, &spec("regex", None, None, Some(pat)), logs).unwrap_err();
            assert!(e.contains(line) && e.contains("took no part"), "{pat}: {e}");
        }
    }

    /// Matches each finite whose sum is not (`x=1.7e308` twice, `x=-1.7e308` after it) are
    /// averaged value by value: 1.7e308, then (1.7e308 · 2 − 1.7e308) / 3 = 5.67e307; and a
    /// CSV's column the same. They were refused as "the sum … overflows a 64-bit float".
    #[test]
    fn values_whose_sum_overflows_are_averaged_not_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("logs")).unwrap();
        let at = point(d.path());
        let regex = spec("regex", None, None, Some("x=([-0-9.e]+)"));
        let mean = |log: &str| {
            std::fs::write(d.path().join("logs/run1-b_r0-local.log"), log).unwrap();
            let logs = super::run_logs(&at, ["run1"].into_iter());
            match super::collect_regex(&at, &regex, logs).unwrap() {
                super::Measure::Metric { value, samples, .. } => (value, samples),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(mean("x=1.7e308\nx=1.7e308\n"), (1.7e308, 2));
        let (v, n) = mean("x=1.7e308\nx=1.7e308\nx=-1.7e308\n");
        assert_eq!(n, 3);
        assert!((v / (1.7e308 / 3.0) - 1.0).abs() < 1e-12, "{v}");
    }

    /// nccl-tests in several run logs: a second table, or a broken one beside one that reads,
    /// is said (the first log that read was taken, the others dropped); a log with no table
    /// (a setup step's) is no second one.
    #[test]
    fn nccl_tests_in_several_logs_are_said_not_the_first_taken() {
        let table = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n 8 2 float sum -1 20.11 0.00 0.00 0 19.90 0.00 0.00 0\n# Avg bus bandwidth : 1.5\n";
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("logs")).unwrap();
        let at = point(d.path());
        let spec = spec("nccl-tests", None, None, None);
        let run = |a: &str, b: &str| {
            std::fs::write(d.path().join("logs/run1-b_r0-local.log"), a).unwrap();
            std::fs::write(d.path().join("logs/run2-b_r0-local.log"), b).unwrap();
            let logs = super::run_logs(&at, ["run1", "run2"].into_iter());
            super::collect_nccl(&at, &spec, &d.path().join("outputs/b_r0"), logs)
        };
        let e = run(table, table).unwrap_err();
        assert!(e.contains("each hold an nccl-tests table"), "{e}");
        let broken = table.replace(" 8 2 float", " 8 2 float 9");
        let e = run(&broken, table).unwrap_err();
        assert!(e.contains("run1-b_r0-local.log"), "{e}");
        assert!(run("setting up\n", table).is_ok());
    }

    /// Over several clients' logs, the source names each log's matched lines, and a log
    /// without a match says so (it named the files alone, with no line). Only the `run` steps'
    /// logs are read: not a server's named `runner` (it was averaged in), nor a warmup's.
    #[test]
    fn a_regex_over_several_logs_names_each_logs_lines() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("logs")).unwrap();
        std::fs::write(d.path().join("logs/run1-b_r0-local.log"), "x\nms=5\n").unwrap();
        std::fs::write(d.path().join("logs/run2-b_r0-local.log"), "oops\n").unwrap();
        // a server's log whose name starts with `run`, and a warmup round's: not measured
        std::fs::write(d.path().join("logs/runner-b_r0-local.log"), "ms=999\n").unwrap();
        std::fs::write(d.path().join("logs/warmup0-run1-b_r0-local.log"), "ms=7\n").unwrap();
        let at = point(d.path());
        let spec = spec("regex", None, None, Some("ms=([0-9]+)"));
        match super::collect_regex(
            &at,
            &spec,
            super::run_logs(&at, ["run1", "run2"].into_iter()),
        )
        .unwrap()
        {
            crate::kind_api::data::Measure::Metric {
                value,
                files,
                lines,
                ..
            } => {
                assert_eq!(value, 5.0);
                assert_eq!(lines, None);
                assert!(files[0].ends_with("run1-b_r0-local.log:2"), "{files:?}");
                assert!(
                    files[1].ends_with("run2-b_r0-local.log (no match)"),
                    "{files:?}"
                );
            }
            _ => unreachable!(),
        }
    }

    /// A line longer than the 1 MiB a collector holds is matched in overlapping pieces: a
    /// match across a cut is read whole and once (helper 76: `ms=` before the cut and `9`
    /// after it was dropped without a word, the mean wrong); one longer than the overlap is
    /// refused, never read; a `^` that is no line start matches nothing.
    #[test]
    fn a_regex_match_across_the_edge_of_a_piece_of_a_long_line_is_read_whole() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("logs")).unwrap();
        let at = point(d.path());
        let read = |log: &str, pattern: &str| {
            std::fs::write(d.path().join("logs/run1-b_r0-local.log"), log).unwrap();
            let spec = spec("regex", None, None, Some(pattern));
            super::collect_regex(
                &at,
                &spec,
                super::run_logs(&at, ["run1", "run2"].into_iter()),
            )
            .map(|m| match m {
                crate::kind_api::data::Measure::Metric { value, .. } => value,
                _ => unreachable!(),
            })
        };
        let cap = super::PIECE;
        // the number runs over the end of the first piece; the name before it, the number after
        let cut = format!("{}ms=123456\n", "x".repeat(cap - 5));
        assert_eq!(read(&cut, "ms=([0-9]+)"), Ok(123456.0));
        let across = format!("{}ms=9\nms=11\n", "x".repeat(cap - 2));
        assert_eq!(read(&across, "ms=([0-9]+)"), Ok(10.0));
        // a match longer than the pieces share, across a cut
        let long = format!(
            "{}ms={}\n",
            "x".repeat(cap - super::OVERLAP - 10),
            "1".repeat(super::OVERLAP + 100)
        );
        let e = read(&long, "ms=([0-9]+)").unwrap_err();
        assert!(
            e.contains("run1-b_r0-local.log:1: /ms=([0-9]+)/ matched across the edge"),
            "{e}"
        );
        // `^` at the start of the second piece is not the start of a line
        let mid = format!("{}ms=5\n", "x".repeat(cap));
        assert!(read(&mid, "^ms=([0-9]+)").is_err());
        // inside a piece, and on the next line, the numbers are whole
        let ok = format!("{}ms=7 {}\nms=9\n", "x".repeat(100), "y".repeat(cap));
        assert_eq!(read(&ok, "ms=([0-9]+)"), Ok(8.0));
    }

    /// The literal checked is the one at the key's path, not the first `"x":` of the file:
    /// `b.x` = `1e-400` read as 0 passed when an `a.x` came first, and a good `b.x` was refused
    /// for a bad `c.x` before it.
    #[test]
    fn a_json_value_is_checked_as_written_at_its_own_key() {
        let d = tempfile::tempdir().unwrap();
        let spec = crate::model::CollectSpec {
            format: "json".into(),
            path: Some("r.json".into()),
            metric: Some("b.x".into()),
            pattern: None,
            direction: None,
            timing: None,
            loc: Default::default(),
        };
        let read = |text: &str| {
            std::fs::write(d.path().join("r.json"), text).unwrap();
            super::collect_json(&spec, d.path()).map(|m| match m {
                crate::kind_api::data::Measure::Metric { value, .. } => value,
                _ => unreachable!(),
            })
        };
        let e = read(r#"{"a":{"x":5},"b":{"x":1e-400}}"#).unwrap_err();
        assert!(
            e.contains("r.json:1: `b.x`: \"1e-400\" is too small"),
            "{e}"
        );
        // a key written twice on the path: which one holds the number is a guess (the parsed
        // value would be the last)
        for twice in [
            r#"{"b":{"x":5,"x":1e-400}}"#,
            r#"{"b":{"x":1e-400,"x":2.5}}"#,
        ] {
            let e = read(twice).unwrap_err();
            assert!(
                e.contains("r.json: the key `x` of `b.x` is written twice"),
                "{twice}: {e}"
            );
        }
        assert_eq!(read(r#"{"c":{"x":1e-400},"b":{"x":3}}"#), Ok(3.0));
        // another key twice, off the path, is not the value's
        assert_eq!(read(r#"{"c":1,"c":2,"b":{"x":2.5}}"#), Ok(2.5));
        assert_eq!(read(r#"{"b" : { "x" : -1.5e3 } }"#), Ok(-1500.0));
    }

    #[test]
    fn a_regex_metric_is_named_by_what_the_pattern_says() {
        assert_eq!(name("lat=([0-9.]+)", Some("p50")), "p50");
        assert_eq!(name("lat=(?P<lat_ms>[0-9.]+)", None), "lat_ms");
        assert_eq!(name("lat=([0-9.]+)", None), "lat");
        assert_eq!(name(r"rate\s*:\s*([0-9.]+)", None), "rate");
        assert_eq!(name(r"(?:x|y) time ([0-9.]+) ms", None), "time");
        assert_eq!(name("([0-9.]+) samples", None), "value");
        assert_eq!(name("2=([0-9]+)", None), "value");
    }
}
