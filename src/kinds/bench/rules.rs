//! The generic `bench` kind: templated steps and their rules.

use std::collections::BTreeSet;

use super::words::NeedsShell;
use crate::model::diag::{Code, Diag, Diags};
use crate::model::template::{self, Quote};
use crate::model::*;

/// Template variable name of a parameter (`batch-size` → `batch_size`).
pub fn var(name: &str) -> String {
    name.replace('-', "_")
}

pub fn steps(bench: &Bench) -> (&[(String, Param)], &[StepSpec], Option<&CollectSpec>) {
    match &bench.placement {
        Placement::Steps {
            params,
            steps,
            collect,
        } => (params, steps, collect.as_ref()),
        _ => (&[], &[], None),
    }
}

/// The variables every command template has, whatever the bench declares.
pub const BUILTIN_VARS: [&str; 7] = [
    "run_id", "outdir", "lane", "repeat", "output", "hosts", "name",
];

/// A `param` or sweep axis named as a built-in variable (`param name "mine"`): the template
/// would see the built-in (the experiment's name), not the value written.
fn builtin_names(bench: &Bench, diags: &mut Diags) {
    let (params, _, _) = steps(bench);
    let written = params
        .iter()
        .filter_map(|(n, p)| p.loc.as_ref().map(|l| (n.as_str(), l.clone())));
    let axes = bench
        .sweep
        .all_axes()
        .map(|a| (a.name.as_str(), a.loc.clone()));
    for (name, loc) in written.chain(axes) {
        if !BUILTIN_VARS.contains(&var(name).as_str()) {
            continue;
        }
        diags.push(
            Diag::error(
                Code::InvalidValue,
                format!("`{name}` is the name of a built-in template variable: `{{{{ {} }}}}` is expr's, not this value", var(name)),
            )
            .at(&loc.src, loc.span)
            .label("a built-in's name")
            .help(format!(
                "rename it (e.g. `my-{name}`); the built-ins are {}",
                crate::util::markup::ticked(BUILTIN_VARS)
            )),
        );
    }
}

/// The variables a command template of this bench may use.
pub fn known_vars(bench: &Bench) -> BTreeSet<String> {
    let (params, _, _) = steps(bench);
    let mut known: BTreeSet<String> = BUILTIN_VARS.iter().map(|s| s.to_string()).collect();
    known.extend(params.iter().map(|(n, _)| var(n)));
    known.extend(bench.sweep.axis_names().map(var));
    known
}

/// A step that takes GPUs (`gpus=N`) runs on a host that says how many it has, and has N.
pub fn validate_gpus(exp: &Experiment, bench: &Bench, diags: &mut Diags) {
    let (_, steps, _) = steps(bench);
    for s in steps {
        let Some(n) = s.gpus else { continue };
        let Some(host) = exp.hosts.iter().find(|h| h.name == s.host) else {
            continue;
        };
        let (error, message) = match host.gpus {
            // unknown: every point takes the first n (and `--jobs` runs none of them together)
            None => (
                false,
                format!(
                    "host `{}` does not say how many GPUs it has: every point's step takes GPUs 0–{} and no two run at once",
                    host.name,
                    n - 1
                ),
            ),
            Some(g) if g < n => (
                true,
                format!(
                    "`gpus={n}` is more than host `{}` has (`gpus={g}`)",
                    host.name
                ),
            ),
            _ => continue,
        };
        {
            let d = if error {
                Diag::error(Code::GpuOutOfRange, message)
            } else {
                Diag::warning(Code::GpuOversubscribed, message)
            };
            diags.push(
                d.at(&s.loc.src, s.loc.span)
                    .label("GPUs asked")
                    .help(format!(
                        "declare the host's GPUs: `host {} gpus=8` (the points take them in turn)",
                        host.name
                    )),
            );
        }
    }
}

pub fn validate(bench: &Bench, diags: &mut Diags) {
    let (_, steps, collect) = steps(bench);
    let known = known_vars(bench);
    let mut used = BTreeSet::new();
    // a template that does not parse uses unknown variables: no axis can be called unused then
    let mut unreadable = false;
    for s in steps.iter().filter(|s| s.command.trim().is_empty()) {
        // the step as the file writes it (`run`, a server by its name), not expr's `run1`
        let (what, example) = match s.kind {
            StepKind::Build => ("`build`".to_string(), "build \"make -j\""),
            StepKind::Test => ("`test`".to_string(), "test \"ctest --output-on-failure\""),
            StepKind::Serve => (
                format!("server `{}`", s.name),
                "serve table \"python3 server.py\" port=7070",
            ),
            StepKind::Prepare => ("`prepare`".to_string(), "prepare \"sync\""),
            StepKind::Cleanup => ("`cleanup`".to_string(), "cleanup \"rm -f /tmp/bench.lock\""),
            _ => ("`run`".to_string(), "run \"python3 bench.py --n {{ n }}\""),
        };
        diags.push(
            Diag::error(Code::MissingValue, format!("{what} has an empty command"))
                .at(&s.command_loc.src, s.command_loc.span)
                .label("no command")
                .help(format!("give the command to run, e.g. `{example}`")),
        );
    }
    no_shell_commands(bench, steps, diags);
    builtin_names(bench, diags);
    for s in steps {
        unreadable |= check_step(bench, s, &known, &mut used, diags);
    }
    if let Some(c) = collect {
        if let Some(pat) = &c.pattern {
            collect_pattern(c, pat, diags);
        }
        collect_props(c, diags);
        // the collectors read `path` as written: a `{{ … }}` there was never filled (and a
        // `{{ lane }}.csv` never found)
        if let Some(p) = c
            .path
            .as_ref()
            .filter(|p| p.contains("{{") || p.contains("{%"))
        {
            diags.push(
                Diag::error(
                    Code::InvalidValue,
                    format!("collect `path` is read as written, not as a template: `{p}`"),
                )
                .at(&c.loc.src, c.loc.span)
                .label("a template here is never filled")
                .help("each point has its own output dir (`{{ outdir }}`): write the file under one name there, e.g. `path=\"result.csv\"`"),
            );
        }
        // the report reads each point's file again: one outside the point's own dir is the
        // last point's by then, and every point would show its number (helper 87)
        if let Some(p) = c.path.as_ref().filter(|p| leaves_its_dir(p)) {
            diags.push(
                Diag::error(
                    Code::InvalidValue,
                    format!("collect `path` `{p}` is outside the point's output dir"),
                )
                .at(&c.loc.src, c.loc.span)
                .label("not in the point's own dir")
                .help("the report reads each point's file again, and a file every point writes over would give them all the last one's number: have the run write it into the point's dir (`{{ outdir }}`, absolute), e.g. `run \"prog --out {{ outdir }}/result.json\"` and `path=\"result.json\"`"),
            );
        }
    }
    let runs: Vec<&StepSpec> = steps.iter().filter(|s| s.kind == StepKind::Run).collect();
    if runs.is_empty() {
        diags.push(
            Diag::error(
                Code::MissingValue,
                format!("bench `{}` has no `run` step", bench.name),
            )
            .at(&bench.loc.src, bench.loc.span)
            .help("add `run \"command {{ run_id }}\"`"),
        );
    } else {
        // every `run` limited to other lanes (`lanes=`): this lane's points would run nothing
        for lane in &bench.lanes {
            if runs
                .iter()
                .all(|s| s.lanes.as_ref().is_some_and(|ls| !ls.contains(&lane.name)))
            {
                diags.push(
                    Diag::error(
                        Code::MissingValue,
                        format!(
                            "lane `{}` has no `run` step: every `run` of `{}` names other lanes",
                            lane.name, bench.name
                        ),
                    )
                    .at(&lane.loc.src, lane.loc.span)
                    .label("runs nothing")
                    .help(format!(
                        "add `{}` to a run's `lanes=`, or give the lane a `run … lanes=\"{}\"`",
                        lane.name, lane.name
                    )),
                );
            }
        }
    }
    if !unreadable {
        unused_axes(bench, &used, diags);
    }
}

/// The character classes of POSIX bracket expressions (`[[:digit:]]`), which grep -E knows.
const POSIX_CLASSES: [&str; 12] = [
    "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
    "upper", "xdigit",
];

/// The first construct of a Rust regex that POSIX extended regular expressions (`grep -E`)
/// lack or read otherwise, and what to write instead. GNU grep's `\w \s \b \< \>` are read
/// alike; `\d` is a `d` there, `(?i)` an error, `*?` a second quantifier, `` \` `` an anchor.
fn not_in_ere(pat: &str) -> Option<(String, String)> {
    // grep -E reads each line of a pattern as a pattern of its own (either matches); expr reads
    // the log a line at a time, where no line break is ever found
    if let Some(c) = pat.chars().find(|c| matches!(c, '\n' | '\r')) {
        return Some((
            c.escape_debug().to_string(),
            "a line break splits the pattern in two for `grep -E` (either part matches), and expr looks for it within one line of the log: write a pattern of one line".into(),
        ));
    }
    let b = pat.as_bytes();
    let mut i = 0;
    // inside `[…]` (where `?` and `(` are characters): from its `[` to its `]`
    let mut class = false;
    while i < b.len() {
        match b[i] {
            b'[' if !class => {
                class = true;
                // a `]` first (after a `^`) is a character of the class
                i += 1;
                if b.get(i) == Some(&b'^') {
                    i += 1;
                }
                if b.get(i) == Some(&b']') {
                    i += 1;
                }
                continue;
            }
            b']' if class => class = false,
            // `[\\]` is a backslash to both
            b'\\' if class && b.get(i + 1) == Some(&b'\\') => i += 1,
            b'[' if class && pat[i..].starts_with("[:^") => {
                return Some((
                    "[:^".into(),
                    "grep -E has no negated class `[:^…:]`: write `[^[:alpha:]]`".into(),
                ))
            }
            // a POSIX class inside brackets: only the ones grep knows (`[:word:]` is Rust's)
            b'[' if class && pat[i..].starts_with("[:") => {
                let name = pat[i + 2..].split(":]").next().unwrap_or("");
                if !POSIX_CLASSES.contains(&name) {
                    return Some((
                        format!("[:{name}:]"),
                        format!("grep -E knows the classes {}: write `[[:alnum:]_]` for a word character", POSIX_CLASSES.join(", ")),
                    ));
                }
                i += 2 + name.len() + 2;
                continue;
            }
            // `[[a-z]]`: a nested class to Rust, `[[a-z]` and a `]` to grep
            b'[' if class && !matches!(b.get(i + 1), Some(b'.') | Some(b'=')) => {
                return Some((
                    "[ inside […]".into(),
                    "grep -E has no nested classes: write the characters in one bracket expression".into(),
                ))
            }
            // class set operations (`[a-z--b]`, `[a-z&&d]`, `[d~~e]`) are Rust's alone
            b'-' | b'&' | b'~' if class && b.get(i + 1) == Some(&b[i]) => {
                let op = format!("{}{}", b[i] as char, b[i] as char);
                return Some((
                    format!("{op} inside […]"),
                    "grep -E has no class set operations: list the characters the class keeps".into(),
                ));
            }
            _ if class && b[i] != b'\\' => {}
            b'\\' => {
                let Some(&c) = b.get(i + 1) else { break };
                let instead = match c {
                    b'd' => Some("[0-9]"),
                    b'D' => Some("[^0-9]"),
                    b'A' => Some("^"),
                    b'z' => Some("$"),
                    b'p' | b'P' | b'x' | b'u' | b'U' | b'h' | b'H' | b'v' | b'V' => Some(""),
                    // grep -E reads `\t` as `t`: the tab itself (or `[[:space:]]`) means one
                    b't' | b'n' | b'r' | b'f' | b'a' | b'e' | b'0'..=b'9' => Some(""),
                    // GNU grep's start and end of the text; a literal to Rust
                    b'`' => Some("^"),
                    b'\'' => Some("$"),
                    _ => None,
                };
                // grep reads `\` in a bracket expression as itself (`[\w]`: a backslash or a `w`)
                if class && instead.is_none() {
                    return Some((
                        "\\ inside […]".into(),
                        "in a bracket expression grep -E reads `\\` as a backslash: write a class as `[[:alnum:]_]` (for `\\w`), `[[:space:]]`, `[0-9]`, or the characters themselves".into(),
                    ));
                }
                if let Some(w) = instead {
                    let what = format!("\\{}", c as char);
                    let help = if w.is_empty() {
                        format!("write what `{what}` stands for as a plain character or a bracket expression")
                    } else {
                        format!("write `{w}` for `{what}`")
                    };
                    return Some((what, help));
                }
                i += 2;
                continue;
            }
            b'(' if b.get(i + 1) == Some(&b'?') => {
                return Some((
                    "(?".into(),
                    "drop the group's flags or name: `(…)` groups, and case is written out (`[Ll]istening`)".into(),
                ))
            }
            b'*' | b'+' | b'?' | b'}' if b.get(i + 1) == Some(&b'?') => {
                return Some((
                    format!("{}?", b[i] as char),
                    "drop the lazy `?`: a ready-log is matched, not captured, so greedy means the same".into(),
                ))
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn bad_regex(what: &str, pat: &str, loc: &Loc, e: regex::Error) -> Diag {
    Diag::error(
        Code::InvalidValue,
        format!("{what} `{pat}` is not a regular expression"),
    )
    .at(&loc.src, loc.span)
    .label("regex")
    .help(
        format!("{}", e)
            .lines()
            .last()
            .unwrap_or("")
            .trim()
            .to_string()
            + " (Rust regex syntax)",
    )
}

/// Whether run step `s` may run with `shell "none"`: a sweep of `shell` may make any point so;
/// else a lane it runs in says so, or the bench does for a lane that does not say.
fn without_shell(bench: &Bench, s: &StepSpec) -> bool {
    let none = |v: &Val| v.as_str() == Some("none");
    if bench
        .sweep
        .all_axes()
        .any(|a| a.name == "shell" && a.values.iter().any(none))
    {
        return true;
    }
    let own = bench.setting("shell").is_some_and(none);
    if bench.lanes.is_empty() {
        return own;
    }
    bench
        .lanes
        .iter()
        .filter(|l| s.lanes.as_ref().is_none_or(|ls| ls.contains(&l.name)))
        .any(|l| l.overrides.get("shell").map_or(own, |p| none(&p.val)))
}

/// Under `shell "none"`: run commands that a shell would read otherwise than the split does
/// (syntax, a keyword, an assignment, a template block; [`super::words::template_words`]).
fn no_shell_commands(bench: &Bench, steps: &[StepSpec], diags: &mut Diags) {
    for s in steps
        .iter()
        .filter(|s| s.kind == StepKind::Run && without_shell(bench, s))
    {
        let Err((e, at)) = super::words::template_words_at(&s.command) else {
            continue;
        };
        let help = match e {
            NeedsShell::Block => "compute the value in a `param` or a lane, and use `{{ value }}` (one argument)",
            NeedsShell::Keyword(_) | NeedsShell::Builtin(_) | NeedsShell::Assignment(_) => "name the program to run first (`env NAME=value program` sets a variable), or use `shell \"bash\"` (its spawn time is measured and subtracted)",
            _ => "with `shell \"none\"` the words are the program and its arguments, split as a shell splits them (quotes group a word) but never expanded, each template value one argument; put pipes, redirections or variables in a script and run that, or use `shell \"bash\"` (its spawn time is measured and subtracted)",
        };
        let label = match e {
            NeedsShell::Block => "template block",
            NeedsShell::Unclosed(_) => "unclosed",
            NeedsShell::ValueInQuotes => "a value in quotes",
            NeedsShell::Keyword(_)
            | NeedsShell::Builtin(_)
            | NeedsShell::Assignment(_)
            | NeedsShell::NoProgram => "first word",
            _ => "shell syntax",
        };
        let msg = format!(
            "`{}` {}, but the bench runs with `shell \"none\"`",
            s.name,
            e.said()
        );
        diags.push(
            crate::model::template::located(
                Code::InvalidValue,
                msg,
                &s.command_loc,
                &s.command,
                Some(at),
            )
            .label(label)
            .help(help),
        );
    }
}

/// One step: its `ready-log` regex, its command and cwd templates (what they use goes into
/// `used`), the lanes it names. True when its command does not parse (what it uses is unknown).
fn check_step(
    bench: &Bench,
    s: &StepSpec,
    known: &BTreeSet<String>,
    used: &mut BTreeSet<String>,
    diags: &mut Diags,
) -> bool {
    let mut unreadable = false;
    if let Some(r) = &s.ready_log {
        if let Err(e) = regex::Regex::new(r) {
            diags.push(bad_regex("ready-log", r, &s.loc, e));
        } else if let Some((what, instead)) = not_in_ere(r) {
            // commands.sh waits for the line with `grep -E`: the pattern must mean the same there
            diags.push(
                Diag::error(
                    Code::InvalidValue,
                    format!(
                        "ready-log `{}` uses `{what}`, which `grep -E` (commands.sh's wait for the line) does not read as expr does",
                        if r.chars().any(char::is_control) {
                            r.escape_debug().to_string()
                        } else {
                            r.clone()
                        }
                    ),
                )
                .at(&s.loc.src, s.loc.span)
                .label("ready-log")
                .help(instead),
            );
        }
    }
    match template::check(&s.command, &s.command_loc, known, Quote::Shell) {
        Ok(u) => used.extend(u),
        Err(d) => {
            unreadable = true; // what it uses is not known: no axis is called unused
            diags.push(d)
        }
    }
    if let Some(cwd) = &s.cwd {
        if let Ok(u) = template::check(cwd, &s.loc, known, Quote::Plain) {
            used.extend(u);
        }
    }
    if let Some(l) = &s.lanes {
        for name in l {
            if !bench.lanes.iter().any(|x| &x.name == name) {
                let names = bench.lane_names();
                let what = if s.kind == StepKind::Serve {
                    "server"
                } else {
                    "step"
                };
                let at = s.lanes_loc.as_ref().unwrap_or(&s.loc);
                diags.push(
                    Diag::error(
                        Code::InvalidValue,
                        format!("{what} `{}` names the undeclared lane `{name}`", s.name),
                    )
                    .at(&at.src, at.span)
                    .label("not a lane of this bench")
                    .help(crate::util::suggest::help_for(
                        name,
                        &names,
                        "the lanes",
                    )),
                );
            }
        }
    }
    unreadable
}

/// Whether a relative path climbs out of the directory it is read in (`../x`, `a/../../x`),
/// or is absolute; `a/../b.csv` stays in (helper 89: it was refused).
fn leaves_its_dir(path: &str) -> bool {
    use std::path::Component;
    let p = std::path::Path::new(path);
    let mut depth = 0i64;
    p.is_absolute()
        || p.components().any(|c| {
            depth += match c {
                Component::ParentDir => -1,
                Component::Normal(_) => 1,
                _ => 0,
            };
            depth < 0
        })
}

/// What each collector needs and reads of `collect`'s properties: one it needs and lacks fails
/// every point (the JSON collector's `metric=`), and one it does not read would be silently
/// ignored (`pattern=` on a CSV, `metric=` on nccl-tests).
fn collect_props(c: &CollectSpec, diags: &mut Diags) {
    let f = c.format.as_str();
    // (the decoder asks for a file's `path=` and the regex's `pattern=`)
    let (needs, reads): (&[&str], &[&str]) = match f {
        "csv" => (&[], &["path", "metric"]),
        "json" => (&["metric"], &["path", "metric"]),
        "nccl-tests" => (&[], &["path"]),
        _ => (&[], &["pattern", "metric", "path"]),
    };
    let given = [
        ("path", c.path.is_some()),
        ("pattern", c.pattern.is_some()),
        ("metric", c.metric.is_some()),
    ];
    for (p, has) in given {
        if !has && needs.contains(&p) {
            diags.push(
                Diag::error(
                    Code::MissingValue,
                    format!("`collect \"{f}\"` needs `{p}=`"),
                )
                .at(&c.loc.src, c.loc.span)
                .label(format!("no {p}="))
                .help("add the dotted key of the number, e.g. `metric=\"result.samples_per_sec\"`"),
            );
        } else if has && !reads.contains(&p) {
            let help = match (f, p) {
                ("nccl-tests", "metric") => "nccl-tests gives its own metrics (avg_busbw, the headline, and busbw/algbw/time per size): drop `metric=`".to_string(),
                (_, "pattern") => format!("`pattern=` is the regex collector's (`collect \"regex\" pattern=…`); `collect \"{f}\"` reads {}: drop it", if f == "csv" { "a column (`metric=`)" } else { "its file" }),
                _ => format!("drop `{p}=`"),
            };
            diags.push(
                Diag::error(
                    Code::UnknownProperty,
                    format!("`collect \"{f}\"` does not read `{p}=`: it would be ignored"),
                )
                .at(&c.loc.src, c.loc.span)
                .label(format!("{p}= is not read here"))
                .help(help),
            );
        }
    }
}

/// `collect`'s `pattern=`: a regular expression, and for the regex collector one with a group
/// to read the number from (the one `metric=` names, when set).
fn collect_pattern(c: &CollectSpec, pat: &str, diags: &mut Diags) {
    match regex::Regex::new(pat) {
        Err(e) => diags.push(bad_regex("collect pattern", pat, &c.loc, e)),
        Ok(re) if !matches!(c.format.as_str(), "csv" | "json" | "nccl-tests") => {
            // the metric names a capture group; without one the first group is read
            let names: Vec<&str> = re.capture_names().flatten().collect();
            if re.captures_len() < 2 {
                diags.push(
                    Diag::error(
                        Code::InvalidValue,
                        format!(
                            "collect pattern `{pat}` has no capture group to read the number from"
                        ),
                    )
                    .at(&c.loc.src, c.loc.span)
                    .label("no capture group")
                    .help("put the number in parentheses: `pattern=\"value=([0-9.]+)\"`"),
                );
            } else if let Some(m) = c.metric.as_ref().filter(|m| !names.contains(&m.as_str())) {
                let help = if names.is_empty() {
                    format!("name the group `{m}`: `(?P<{m}>…)`; or drop `metric=` and the first group is read")
                } else {
                    format!("the groups are named {}; name the one to read `{m}`, or set `metric=` to one of them", crate::util::markup::ticked(names.iter()))
                };
                diags.push(
                    Diag::error(
                        Code::InvalidValue,
                        format!("collect pattern `{pat}` has no group named `{m}`"),
                    )
                    .at(&c.loc.src, c.loc.span)
                    .label("metric= names no group")
                    .help(help),
                );
            }
        }
        Ok(_) => {}
    }
}

/// m. an axis that nothing uses (no template, no lane) makes identical points.
fn unused_axes(bench: &Bench, used: &BTreeSet<String>, diags: &mut Diags) {
    let lane_uses: BTreeSet<String> = bench
        .lanes
        .iter()
        .flat_map(|l| l.overrides.keys().cloned())
        .collect();
    for a in bench.sweep.all_axes() {
        if !used.contains(&var(&a.name)) && !lane_uses.contains(&a.name) {
            diags.push(
                Diag::error(
                    Code::UnusedAxis,
                    format!("sweep axis `{}` is used by no command", a.name),
                )
                .at(&a.loc.src, a.loc.span)
                .label("unused axis")
                .help(
                    match crate::util::suggest::did_you_mean(
                        &a.name,
                        steps(bench).0.iter().map(|(n, _)| n.as_str()),
                    )
                    // the axis of a param no command uses is no misspelling (helper 87)
                    .filter(|p| *p != a.name)
                    {
                        // a misspelt param (`sweep nn 1 2` beside `param n 1`; helper 78)
                        Some(p) => format!(
                            "did you mean the param `{p}`? sweep it by its name: `sweep {p} …`"
                        ),
                        None => format!(
                            "reference it as `{{{{ {} }}}}` in a step, or remove the sweep",
                            var(&a.name)
                        ),
                    },
                ),
            );
        }
    }
}

#[cfg(test)]
mod ere_tests {
    /// What `grep -E` reads as expr does passes; `\d`, flags, named groups and lazy
    /// quantifiers are named, also inside a class where they differ.
    #[test]
    fn a_collect_path_leaves_its_dir_only_above_it() {
        for out in ["/tmp/x.csv", "../x.csv", "a/../../x.csv", ".."] {
            assert!(super::leaves_its_dir(out), "{out}");
        }
        for inside in [
            "x.csv",
            "./x.csv",
            "a/../b.csv",
            "a/..",
            "..x.csv",
            "a//b.csv",
        ] {
            assert!(!super::leaves_its_dir(inside), "{inside}");
        }
    }

    #[test]
    fn a_ready_log_must_read_the_same_in_grep_e() {
        for ok in [
            "listening on [0-9]+",
            "Serving HTTP",
            r"ready\.",
            r"\bup\b",
            "[*?(]+ done",
            "[]?] x",
            r"\w+ \s*ok",
            r"[\\] x",
            "[^[:alpha:]] [[:digit:]]+",
            "[[:alnum:]_-]+ up",
            "[a-z-] [-x]",
        ] {
            assert_eq!(super::not_in_ere(ok), None, "{ok}");
        }
        for (bad, what) in [
            (r"listening on \d+", r"\d"),
            (r"[\d]+", r"\d"),
            ("(?i)ready", "(?"),
            ("(?P<p>[0-9]+)", "(?"),
            ("up.*? done", "*?"),
            ("x{2}?", "}?"),
            // read as a backslash (or a `w`) inside brackets, a `t` outside them
            (r"[\w]+ on", r"\ inside […]"),
            (r"a[x\]]", r"\ inside […]"),
            ("port [[:^alpha:]]", "[:^"),
            (r"port\t1234", r"\t"),
            (r"done\n", r"\n"),
            (r"(a)\1", r"\1"),
            ("[[:word:]]+ready", "[:word:]"),
            ("[[:ascii:]]", "[:ascii:]"),
            ("[[a-z]]x", "[ inside […]"),
            ("[a-z--b]", "-- inside […]"),
            ("[a-z&&d]", "&& inside […]"),
            ("[d~~e]", "~~ inside […]"),
            (r"\`ready", r"\`"),
            (r"up\'", r"\'"),
            // a real line break (KDL's `\n` escape): two patterns to grep -E
            ("listening\nstart", r"\n"),
            ("up\r", r"\r"),
        ] {
            assert_eq!(
                super::not_in_ere(bad).map(|(w, _)| w),
                Some(what.to_string()),
                "{bad}"
            );
        }
    }
}
