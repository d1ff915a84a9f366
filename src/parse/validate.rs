//! Rules over the whole experiment: hosts, ports, sweeps and templates; then each kind's rules.

use std::collections::{BTreeMap, BTreeSet};

use crate::kinds;
use crate::model::diag::{Code, Diag, Diags};
use crate::model::expand::{self, Filter};
use crate::model::template::{self, Quote};
use crate::model::*;

/// Options that change what counts as valid.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub allow_large: bool,
    /// Input size cap in MiB (default `load::MAX_INPUT_MIB`).
    pub max_input_mib: Option<u64>,
}

pub const LARGE: u128 = 10_000;
/// The most points expr plans at all, `--allow-large` or not: the matrix is held in memory
/// (a few KB a point), and a typo must get a diagnostic, never an allocation that fails.
pub const MOST: u128 = 1_000_000;

/// Why a lane of `b` has no matrix point: it sets a swept setting to a value the sweep does not
/// hold (a lane that sets a swept value runs only at that value), else the `exclude`s took
/// every point of it.
fn lane_without_points(b: &Bench, lane: &Lane) -> Diag {
    for axis in b.sweep.all_axes() {
        let Some(p) = lane.overrides.get(&axis.name) else {
            continue;
        };
        if axis.values.contains(&p.val) {
            continue;
        }
        let values: Vec<String> = axis.values.iter().map(|v| format!("`{v}`")).collect();
        // the sweep `--set` gave in place of the file's
        let by_set = axis.loc.src.name == "--set";
        let sweep = if by_set {
            format!("--set {}=…", axis.name)
        } else {
            format!("sweep {}", axis.name)
        };
        return err(
            Code::EmptyMatrix,
            format!(
                "lane `{}` sets `{}` to `{}`, a value `{sweep}` does not hold: the lane has no matrix point",
                lane.name, axis.name, p.val
            ),
            p.loc.as_ref().unwrap_or(&lane.loc),
        )
        .label("not swept")
        .help(if by_set {
            format!(
                "a lane that sets a swept setting runs only at that value: give `{}` in `--set {}=…` too, or leave lane `{}` out (`--only lane=…`)",
                p.val, axis.name, lane.name
            )
        } else {
            format!(
                "a lane that sets a swept setting runs only at that value: add `{}` to `{sweep}`, or set one of {}",
                p.val,
                values.join(", ")
            )
        });
    }
    // a zip whose values the lane sets where no position pairs them
    for zip in &b.sweep.zips {
        let pinned: Vec<(&Axis, &Param)> = zip
            .iter()
            .filter_map(|a| Some((a, lane.overrides.get(&a.name)?)))
            .collect();
        let len = zip.iter().map(|a| a.values.len()).min().unwrap_or(0);
        if pinned.len() < 2 || (0..len).any(|i| pinned.iter().all(|(a, p)| a.values[i] == p.val)) {
            continue;
        }
        let (_, first) = pinned[0];
        let set: Vec<String> = pinned
            .iter()
            .map(|(a, p)| format!("`{}={}`", a.name, p.val))
            .collect();
        let pairs: Vec<String> = (0..len.min(6))
            .map(|i| {
                let vals: Vec<String> = zip.iter().map(|a| a.values[i].to_string()).collect();
                format!("({})", vals.join(", "))
            })
            .collect();
        let names: Vec<&str> = zip.iter().map(|a| a.name.as_str()).collect();
        return err(
            Code::EmptyMatrix,
            format!(
                "lane `{}` sets {}, which the `zip` never pairs: the lane has no matrix point",
                lane.name,
                set.join(" and ")
            ),
            first.loc.as_ref().unwrap_or(&lane.loc),
        )
        .label("not paired")
        .help(format!(
            "the zip pairs {} by position: {}{}; set a pair it holds, or only one of them",
            names.join(", "),
            pairs.join(", "),
            if len > 6 { ", …" } else { "" }
        ));
    }
    // excluding a whole lane may be meant (a warning); the bench with no point at all is an
    // error, said once for the bench
    let loc = b
        .sweep
        .excludes
        .first()
        .map(|e| &e.loc)
        .unwrap_or(&lane.loc);
    Diag::warning(
        Code::EmptyMatrix,
        format!(
            "lane `{}` of `{}` has no matrix point left after exclusions",
            lane.name, b.name
        ),
    )
    .at(&loc.src, loc.span)
    .help("loosen the `exclude` nodes, or remove the lane")
}

/// A lane that sets a swept setting to one of the sweep's values runs at that value only: the
/// sweep's other values (a zip's other positions) are quietly not its points. Said once per
/// axis or zip, unless `exclude`s — the lane's, or ones of every lane — name each of them (it
/// is meant). A zip whose pinned values no position pairs is `lane_without_points`' error.
fn lanes_pinning_axes(b: &Bench, diags: &mut Diags) {
    let singles = b.sweep.axes.iter().map(std::slice::from_ref);
    let wheels: Vec<&[Axis]> = singles
        .chain(b.sweep.zips.iter().map(Vec::as_slice))
        .collect();
    for lane in &b.lanes {
        for wheel in &wheels {
            let pinned: Vec<(&Axis, &Param)> = wheel
                .iter()
                .filter_map(|a| Some((a, lane.overrides.get(&a.name)?)))
                .collect();
            let Some((first_axis, first)) = pinned.first().copied() else {
                continue;
            };
            let len = wheel.iter().map(|a| a.values.len()).min().unwrap_or(0);
            let at = |i: usize| wheel.iter().map(move |a| (a, &a.values[i]));
            let kept = |i: usize| pinned.iter().all(|(a, p)| a.values[i] == p.val);
            // an exclude of this lane or of every lane that names only this wheel's axes and
            // holds at position i
            let said_out = |i: usize| {
                b.sweep.excludes.iter().any(|ex| {
                    let lane_ok = ex
                        .when
                        .iter()
                        .all(|(k, x)| k != "lane" || x.as_str() == Some(lane.name.as_str()));
                    let axes: Vec<&(String, Val)> =
                        ex.when.iter().filter(|(k, _)| k != "lane").collect();
                    lane_ok
                        && !axes.is_empty()
                        && axes
                            .iter()
                            .all(|(k, x)| at(i).any(|(a, v)| a.name == *k && v == x))
                })
            };
            if !(0..len).any(kept) {
                continue; // no point at all: `lane_without_points` says it
            }
            let skipped: Vec<usize> = (0..len).filter(|&i| !kept(i) && !said_out(i)).collect();
            if skipped.is_empty() {
                continue;
            }
            // a position as KDL writes it: `size=2` (a string quoted), a zip's axes together
            let written = |i: usize| {
                at(i)
                    .map(|(a, v)| match v {
                        Val::Str(t) => format!("{}={t:?}", a.name),
                        v => format!("{}={v}", a.name),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let mut named = skipped
                .iter()
                .take(5)
                .map(|&i| format!("`{}`", written(i)))
                .collect::<Vec<_>>()
                .join(", ");
            if skipped.len() > 5 {
                named.push_str(&format!(" and {} more", skipped.len() - 5));
            }
            // as written: a string quoted
            let set: Vec<String> = pinned
                .iter()
                .map(|(a, p)| match &p.val {
                    Val::Str(t) => format!("{}={t:?}", a.name),
                    v => format!("{}={v}", a.name),
                })
                .collect();
            let varies = if wheel.len() == 1 && first_axis.loc.src.name == "--set" {
                // the sweep `--set` gave (the file may have none)
                format!("`--set {}=…` varies", first_axis.name)
            } else if wheel.len() == 1 {
                format!("`sweep {}` varies", first_axis.name)
            } else {
                let all: Vec<String> = wheel.iter().map(|a| format!("`{}`", a.name)).collect();
                format!("the `zip` of {} varies", all.join(", "))
            };
            let names: Vec<String> = pinned
                .iter()
                .map(|(a, _)| format!("`{}`", a.name))
                .collect();
            let loc = first.loc.as_ref().unwrap_or(&lane.loc);
            diags.push(
                Diag::warning(
                    Code::LanePinsAxis,
                    format!(
                        "lane `{}` sets {}, which {varies}: the lane runs only at `{}`, not at {named}",
                        lane.name,
                        names.join(" and "),
                        set.join(" ")
                    ),
                )
                .at(&loc.src, loc.span)
                .label("pins a swept setting")
                .help(format!(
                    "to run lane `{}` at every value, remove `{}` from it; to run it at one on purpose, say so with an `exclude lane={:?} {}` for each other value",
                    lane.name,
                    set.join(" "),
                    lane.name,
                    written(skipped[0]),
                )),
            );
        }
    }
}

fn err(code: Code, msg: impl Into<String>, loc: &Loc) -> Diag {
    Diag::error(code, msg).at(&loc.src, loc.span)
}

pub fn validate(exp: &mut Experiment, opts: &Options, diags: &mut Diags) {
    add_implicit_local(exp);
    names(exp, diags);
    pools(exp, diags);
    // a bench whose steps name a pool is checked as it runs on each member
    let members = exp.pools.iter().map(|p| p.members.len()).max().unwrap_or(1);
    for k in 0..members {
        if exp.pools.is_empty() {
            per_host(exp, diags);
        } else {
            per_host(&exp.on_member(k), diags);
        }
    }
    matrix(exp, opts, diags);
    secrets_elsewhere(exp, diags);
}

/// A secret's value (a host's `env` or a build's `build-env` entry with a secret's name)
/// written again elsewhere in the file — a param, a lane, a sweep, a command — reaches command
/// lines, the plan, commands.sh and result files, which mask a secret where it stands under its
/// name: a warning at each other place (the excerpt masks the value).
fn secrets_elsewhere(exp: &Experiment, diags: &mut Diags) {
    let mut said = BTreeSet::new();
    for (name, value, loc) in exp.secrets() {
        if value.chars().count() < crate::util::secret::MIN_ELSEWHERE {
            continue;
        }
        let text: &str = &loc.src.text;
        let mut from = 0;
        while let Some(k) = text.get(from..).and_then(|t| t.find(value)) {
            let at = from + k;
            from = at + value.len();
            // its own entry: NAME="value", NAME=value, NAME=#"value"#
            // (a multi-line `"""` value stands on the lines after its quotes)
            let before = text[..at].trim_end().trim_end_matches(['"', '#']);
            if before.trim_end().ends_with('=')
                && before
                    .trim_end()
                    .trim_end_matches('=')
                    .trim_end()
                    .trim_end_matches('"')
                    .ends_with(name)
            {
                continue;
            }
            if !said.insert((at, name.to_string())) {
                continue;
            }
            diags.push(
                Diag::warning(
                    Code::SecretElsewhere,
                    format!("the value of the secret `{name}` is written here too: command lines, the plan, commands.sh and result files show it here (they mask `{name}` by its name)"),
                )
                .at(&loc.src, (at, value.len()).into())
                .label("a secret's value")
                .help(format!("use the variable instead (`${name}` in a command), and keep the value in `env` only")),
            );
        }
    }
}

/// As [`secrets_elsewhere`], for a secret's value written with KDL escapes that the file's
/// text does not hold as such (`"tokSECRET\u{56}ALUE42"`, a lane's name): the decoded string
/// holds it, and so do the outputs.
pub fn secrets_escaped(
    exp: &Experiment,
    src: &std::sync::Arc<crate::model::source::Source>,
    doc: &kdl::KdlDocument,
    diags: &mut Diags,
) {
    let secrets = exp.secrets_to_find();
    if secrets.is_empty() {
        return;
    }
    let mut stack: Vec<&kdl::KdlNode> = doc.nodes().iter().collect();
    while let Some(node) = stack.pop() {
        for entry in node.entries() {
            let Some(text) = entry.value().as_string() else {
                continue;
            };
            let span = entry.span();
            let written = src.slice(span.offset(), span.len());
            for (name, value) in &secrets {
                // its own entry, and a copy written as is (said by `secrets_elsewhere`)
                if !text.contains(value)
                    || written.contains(value)
                    || entry.name().is_some_and(|n| n.value() == *name)
                {
                    continue;
                }
                diags.push(
                    Diag::warning(
                        Code::SecretElsewhere,
                        format!("the value of the secret `{name}` is written here too, with escapes: command lines, the plan, commands.sh and result files show it here (they mask `{name}` by its name)"),
                    )
                    .at(src, span)
                    .label("a secret's value, escaped")
                    .help(format!("use the variable instead (`${name}` in a command), and keep the value in `env` only")),
                );
            }
        }
        if let Some(children) = node.children() {
            stack.extend(children.nodes());
        }
    }
}

/// As [`secrets_elsewhere`], for the `--set` arguments: a secret's value given to another
/// setting on the command line (`--set token=$HF_TOKEN`) reaches the same outputs.
pub fn secrets_in_sets(exp: &Experiment, sets: &[String], diags: &mut Diags) {
    for arg in sets {
        let Some((key, value)) = arg.split_once('=') else {
            continue;
        };
        let at = arg.len() - value.len();
        for (name, secret, _) in exp.secrets() {
            // the secret's own entry (`--set host.h.env.NAME=…`) is where it belongs
            if secret.chars().count() < crate::util::secret::MIN_ELSEWHERE
                || key.rsplit('.').next() == Some(name)
            {
                continue;
            }
            let Some(k) = value.find(secret) else {
                continue;
            };
            // the excerpt shows the argument with the value masked (same length: same spans)
            let shown = arg.replace(secret, &"*".repeat(secret.len()));
            let src = crate::model::source::Source::new("--set", shown.as_str());
            diags.push(
                Diag::warning(
                    Code::SecretElsewhere,
                    format!("`--set {key}` gives the value of the secret `{name}`: command lines, the plan, commands.sh and result files show it there (they mask `{name}` by its name)"),
                )
                .at(&src, (at + k, secret.len()).into())
                .label("a secret's value")
                .help(format!("use the variable instead (`${name}` in a command), and keep the value in `env` only")),
            );
        }
    }
}

/// The rules that depend on which hosts the steps run on.
fn per_host(exp: &Experiment, diags: &mut Diags) {
    hosts_and_ports(exp, diags);
    templates(exp, diags);
    slurm_hosts(exp, diags);
    for b in &exp.benches {
        kinds::of(b.kind).validate(exp, b, diags);
        expects(b, exp.telemetry.is_some(), diags);
        profiles(b, diags);
        until_decided(b, diags);
    }
}

/// Members of a pool that are one machine ([`crate::model::Host::same_machine`]): each said once,
/// against the first member on it.
fn one_machine(exp: &Experiment, p: &crate::model::Pool, diags: &mut Diags) {
    let hosts: Vec<(&crate::model::Host, &Loc)> = p
        .members
        .iter()
        .zip(&p.member_locs)
        .filter_map(|(m, loc)| Some((exp.host(m)?, loc)))
        .collect();
    for (i, (h, loc)) in hosts.iter().enumerate() {
        let Some((first, why)) = hosts[..i]
            .iter()
            .find_map(|(f, _)| Some((f, f.same_machine(h)?)))
        else {
            continue;
        };
        diags.push(
            Diag::warning(
                Code::PoolOneMachine,
                format!(
                    "`{}` and `{}` of pool `{}` are one machine ({why}): under `--jobs` their points run at once on it",
                    first.name, h.name, p.name
                ),
            )
            .at(&loc.src, loc.span)
            .help("measurements taken side by side share the machine's CPUs and memory; give the pool hosts of other machines, or run one point at a time (no `--jobs`)"),
        );
    }
}

/// `pool`s: each member a declared host, its name not a host's, named by some bench's steps,
/// and only where a point's host may change (a `bench`'s steps, one pool to a bench).
fn pools(exp: &Experiment, diags: &mut Diags) {
    let names: Vec<&str> = exp.hosts.iter().map(|h| h.name.as_str()).collect();
    for p in &exp.pools {
        if let Some(h) = exp.host(&p.name) {
            // the host `local` that every file has, unless it declares its own
            let builtin = h.name == "local" && h.loc.span == exp.loc.span;
            let mut d = err(
                Code::DuplicateName,
                if builtin {
                    format!(
                        "pool `{}` has the name of the built-in host (this machine)",
                        p.name
                    )
                } else {
                    format!("pool `{}` has the name of a host", p.name)
                },
                &p.loc,
            )
            .help("give the pool a name of its own: `host=` names either");
            if !builtin && h.loc.src.name == p.loc.src.name && h.loc.span != p.loc.span {
                d = d.also(h.loc.span, "the host");
            }
            diags.push(d);
        }
        for (m, loc) in p.members.iter().zip(&p.member_locs) {
            if exp.host(m).is_none() {
                let hint = match crate::util::suggest::did_you_mean(m, names.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`? a pool's members are declared hosts"),
                    None => {
                        let m = m.escape_debug();
                        format!("declare it: `host {m} ssh=\"{m}\" ip=\"10.0.0.1\" repo=\"/path/to/repo\"`")
                    }
                };
                diags.push(
                    err(
                        Code::UndefinedHost,
                        format!(
                            "host `{}` of pool `{}` is not declared",
                            m.escape_debug(),
                            p.name.escape_debug()
                        ),
                        loc,
                    )
                    .label("undefined host")
                    .help(hint),
                );
            }
        }
        one_machine(exp, p, diags);
        let used = exp.benches.iter().any(|b| b.hosts().any(|h| h == p.name));
        if !used {
            diags.push(
                Diag::warning(
                    Code::UnusedPool,
                    format!(
                        "no step names the pool `{}`: its hosts run nothing through it",
                        p.name
                    ),
                )
                .at(&p.loc.src, p.loc.span)
                .help(format!(
                    "put a bench's steps on it (`run \"…\" host={}`), or drop it",
                    p.name
                )),
            );
        }
    }
    for b in &exp.benches {
        match &b.placement {
            Placement::Nodes(nodes) => {
                for n in nodes.iter().filter(|n| exp.pool(&n.host).is_some()) {
                    diags.push(
                        err(
                            Code::PoolPlacement,
                            format!("`{}` of `{}` names the pool `{}`: its processes are placed on fixed hosts", n.role, b.name, n.host),
                            &n.loc,
                        )
                        .label("a pool, not a host")
                        .help("name one of the pool's hosts; a pool places the steps of a `bench` (each point on one member)"),
                    );
                }
            }
            Placement::Steps { steps, .. } => {
                let mut first: Option<&StepSpec> = None;
                for s in steps.iter().filter(|s| exp.pool(&s.host).is_some()) {
                    match first {
                        None => first = Some(s),
                        Some(f) if f.host != s.host => diags.push(
                            err(
                                Code::PoolPlacement,
                                format!("step `{}` names the pool `{}`, and step `{}` of `{}` the pool `{}`", s.name, s.host, f.name, b.name, f.host),
                                &s.loc,
                            )
                            .also(f.loc.span, "the first pool")
                            .help("a bench's points are dealt out over one pool; name that pool, or one of its hosts"),
                        ),
                        Some(_) => {}
                    }
                }
            }
        }
    }
}

/// Hosts on a Slurm allocation (from the file or `--set`): it exists and has the node.
/// Whether `t` is a time limit Slurm reads (`sbatch --time`): minutes, minutes:seconds,
/// hours:minutes:seconds, days-hours, days-hours:minutes, days-hours:minutes:seconds, or
/// `UNLIMITED`/`INFINITE`.
fn slurm_time(t: &str) -> bool {
    if matches!(t, "UNLIMITED" | "INFINITE" | "unlimited" | "infinite") {
        return true;
    }
    let num = |s: &str| !s.is_empty() && s.len() <= 9 && s.chars().all(|c| c.is_ascii_digit());
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, t),
    };
    if days.is_some_and(|d| !num(d)) {
        return false;
    }
    let parts: Vec<&str> = rest.split(':').collect();
    parts.iter().all(|p| num(p)) && (1..=3).contains(&parts.len())
}

/// An allocation's time limit in Slurm's forms, and `throttle=` only with array mode.
fn allocation_values(a: &Allocation, diags: &mut Diags) {
    // Slurm's time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED (salloc refused
    // `half an hour` only at the run)
    if let Some(t) = a.time.as_deref().filter(|t| !slurm_time(t)) {
        diags.push(
            err(
                Code::InvalidValue,
                format!(
                    "allocation `{}`: `time=\"{t}\"` is not a Slurm time limit",
                    a.name
                ),
                &a.loc,
            )
            .help(
                "Slurm writes minutes (`30`), `H:MM:SS` (`1:30:00`) or `D-HH:MM:SS` (`2-00:00:00`)",
            ),
        );
    }
    // what expr sets itself: how it knows its jobs (`expr stop`, a resume, a killed run's
    // leftovers) and the allocation it waits for
    let own = a.alloc_args.iter().find(|w| {
        ["--job-name", "--comment", "--no-shell"]
            .iter()
            .any(|f| w.as_str() == *f || w.starts_with(&format!("{f}=")))
            || (w.starts_with("-J") && !w.starts_with("--"))
    });
    if let Some(w) = own {
        diags.push(
            err(
                Code::InvalidValue,
                format!(
                    "allocation `{}`: `alloc-args` gives `{w}`, which expr sets itself",
                    a.name
                ),
                &a.loc,
            )
            .help("expr names its jobs `expr-<experiment>` with the result directory as comment (how `expr stop` and a resume know them); drop it from `alloc-args`"),
        );
    }
    if a.throttle.is_some() && !a.array {
        diags.push(
            Diag::warning(
                Code::InvalidValue,
                format!(
                    "allocation `{}`: `throttle=` is for `mode=\"array\"`; this allocation runs its points in one job, and it changes nothing",
                    a.name
                ),
            )
            .at(&a.loc.src, a.loc.span)
            .help("remove `throttle=`, or add `mode=\"array\"` to run each point as an array task"),
        );
    }
}

fn slurm_hosts(exp: &Experiment, diags: &mut Diags) {
    // an allocation no host is on: no step runs there, whatever the file meant (unless a host names
    // an allocation that does not exist: that error already points at the one meant)
    let misnamed = exp.hosts.iter().any(|h| {
        h.place
            .as_ref()
            .is_some_and(|p| !exp.allocations.iter().any(|a| a.name == p.alloc))
    });
    for a in &exp.allocations {
        allocation_values(a, diags);
        if a.repo.starts_with('-') {
            diags.push(
                err(
                    Code::InvalidValue,
                    format!(
                        "allocation `{}`: repo `{}` starts with `-`, which `cd` reads as an option",
                        a.name, a.repo
                    ),
                    &a.loc,
                )
                .help(format!("write it `./{}`", a.repo)),
            );
        }
    }
    for a in exp.allocations.iter().filter(|_| !misnamed) {
        if !exp.has_hosts_on(&a.name) {
            diags.push(
                Diag::warning(
                    Code::UnusedSlurm,
                    format!(
                        "no host is on the allocation `{}`: no step runs on it, and a run does not request it",
                        a.name
                    ),
                )
                .at(&a.loc.src, a.loc.span)
                .label("declared, not used")
                .help(format!(
                    "place a host on it (`host NAME slurm=\"{}\" node=0`, or `--set host.NAME.slurm={}`), or remove it",
                    a.name, a.name
                )),
            );
        }
    }
    for h in &exp.hosts {
        let Some(place) = &h.place else { continue };
        match exp.allocations.iter().find(|a| a.name == place.alloc) {
            None => {
                let names: Vec<&str> = exp.allocations.iter().map(|a| a.name.as_str()).collect();
                diags.push(
                    err(
                        Code::UndefinedHost,
                        format!(
                            "host `{}` is on the allocation `{}`, which no `slurm` node declares",
                            h.name, place.alloc
                        ),
                        &h.loc,
                    )
                    .help(crate::util::suggest::help_for(
                        &place.alloc,
                        &names,
                        "the allocations",
                    )),
                );
            }
            Some(a) if place.node < 0 || place.node >= a.nodes => diags.push(
                err(
                    Code::InvalidValue,
                    format!(
                        "host `{}` is node {} of `{}`, which has {} node(s)",
                        h.name, place.node, a.name, a.nodes
                    ),
                    &h.loc,
                )
                .help(format!(
                    "nodes are numbered 0..{}; raise `nodes=` or pick another",
                    a.nodes - 1
                )),
            ),
            Some(_) => {}
        }
    }
    // array mode: every point is a task of its own, started in any order, at once
    let arrays: Vec<&crate::model::Allocation> = exp
        .allocations
        .iter()
        .filter(|a| a.array && exp.has_hosts_on(&a.name))
        .collect();
    let Some(first) = arrays.first() else { return };
    if let Some(second) = arrays.get(1) {
        diags.push(
            err(
                Code::SlurmArray,
                format!(
                    "hosts are on two array allocations, `{}` and `{}`; a run submits one array",
                    first.name, second.name
                ),
                &second.loc,
            )
            .help("put the hosts on one `mode=\"array\"` allocation"),
        );
    }
    for p in exp.pools.iter().filter(|p| {
        p.members.iter().any(|m| {
            exp.host(m)
                .and_then(|h| h.place.as_ref())
                .is_some_and(|pl| pl.alloc == first.name)
        })
    }) {
        diags.push(
            err(
                Code::SlurmArray,
                format!(
                    "pool `{}` has nodes of `{}`, whose tasks (mode=\"array\") each get a node of their own from Slurm",
                    p.name, first.name
                ),
                &p.loc,
            )
            .help("name the node's host on the step (each array task runs it on its own node), or use `mode=\"allocation\"` to deal points out over the pool"),
        );
    }
    for b in &exp.benches {
        if b.adaptive.is_some() {
            let loc = b.repeat_loc.as_ref().unwrap_or(&b.loc);
            diags.push(
                err(
                    Code::SlurmArray,
                    format!(
                        "`{}` has adaptive repeats, which decide each run from the ones before; the tasks of `{}` (mode=\"array\") run at once",
                        b.name, first.name
                    ),
                    loc,
                )
                .help("write a fixed `repeat N`, or use `mode=\"allocation\"`"),
            );
        }
        if let Some(why) = kinds::of(b.kind).array_refusal() {
            diags.push(
                err(
                    Code::SlurmArray,
                    format!(
                        "`{}` cannot run as array tasks of `{}`: {why}",
                        b.name, first.name
                    ),
                    &b.loc,
                )
                .help("use `mode=\"allocation\"` (the default) for this kind"),
            );
        }
    }
}

/// The metric names a bench reports whatever its artifacts: the kind's headline and expr's own
/// timing of every point.
pub fn known_metrics(b: &Bench) -> Vec<String> {
    let mut v = vec![kinds::of(b.kind).headline(b).0];
    v.extend(kinds::of(b.kind).metric_names(b));
    v.extend(["wall_ms", "user_ms", "sys_ms", "max_rss_mib"].map(String::from));
    v.retain(|m| !m.is_empty());
    v
}

/// The unit of a metric the bench is known to report (None: known only after the run).
pub fn known_unit(b: &Bench, metric: &str) -> Option<String> {
    let norm = |s: &str| s.replace('-', "_");
    let (head, unit) = kinds::of(b.kind).headline(b);
    if norm(&head) == norm(metric) {
        return Some(unit).filter(|u| !u.is_empty());
    }
    let m = norm(metric);
    if m == "max_rss_mib" {
        Some("MiB".into())
    } else if m.ends_with("_ms") {
        Some("ms".into())
    } else {
        None
    }
}

/// `expect`: the lanes it names exist; a metric expr does not know the kind to report is a
/// warning (it is looked for after the run).
/// `until-decided` compares each lane with the first: it needs two lanes.
fn until_decided(b: &Bench, diags: &mut Diags) {
    let Some(a) = b.adaptive.filter(|a| a.until_decided.is_some()) else {
        return;
    };
    if b.lanes.len() < 2 {
        let at = &b.loc;
        diags.push(
            err(
                Code::InvalidValue,
                format!(
                    "`until-decided={}` compares each lane with the first, and `{}` has one lane",
                    a.until_decided.unwrap_or_default(),
                    b.name
                ),
                at,
            )
            .label("one lane")
            .help("add the lanes to compare, or stop on the spread: `until-cv=2`"),
        );
    }
}

/// Each `profile` names lanes the bench has.
fn profiles(b: &Bench, diags: &mut Diags) {
    let lanes = b.lane_names();
    let runs = b.adaptive.as_ref().map_or(b.repeat, |a| a.max);
    for p in &b.profiles {
        if let Some(r) = p.repeat.filter(|r| *r >= runs.max(1)) {
            diags.push(
                err(
                    Code::InvalidValue,
                    format!(
                        "`profile` asks for repeat {r}, but `{}` runs {}",
                        b.name,
                        if runs <= 1 {
                            "one repeat (repeat 0)".to_string()
                        } else {
                            format!("{runs} repeats, numbered 0 to {}", runs - 1)
                        }
                    ),
                    &p.loc,
                )
                .label("matches no run")
                .help(format!(
                    "write `repeat={}` for the last repeat (`repeat=0` for the first), or leave `repeat=` out to profile every repeat",
                    runs.max(1) - 1
                )),
            );
        }
        let Some(l) = p.lane.as_deref() else { continue };
        if !lanes.contains(&l) {
            diags.push(
                err(
                    Code::InvalidValue,
                    format!(
                        "`profile` names the lane `{l}`, which `{}` does not have",
                        b.name
                    ),
                    &p.loc,
                )
                .label("unknown lane")
                .help(crate::util::suggest::help_for(l, &lanes, "the lanes")),
            );
        }
    }
}

fn expects(b: &Bench, telemetry: bool, diags: &mut Diags) {
    let lanes = b.lane_names();
    for e in &b.expects {
        let mut named: Vec<&str> = e.lane.iter().map(String::as_str).collect();
        // decided before anything runs: a lane over itself is 1.000×; an empty pattern is in
        // every line
        let decided = match &e.what {
            ExpectWhat::Speedup { over } if e.lane.as_deref() == Some(over.as_str()) => Some(
                format!("a speedup of `{over}` over itself is always 1.000×"),
            ),
            ExpectWhat::Log { pattern, .. } if pattern.is_empty() => {
                Some("an empty pattern is found in every line of every log".to_string())
            }
            _ => None,
        };
        if let Some(why) = decided {
            diags.push(
                err(
                    Code::InvalidValue,
                    format!("this `expect` is decided before the run: {why}"),
                    &e.loc,
                )
                .label("decided already")
                .help("name another lane to compare with, or the text a log must (not) hold"),
            );
        }
        if let ExpectWhat::Speedup { over } = &e.what {
            named.push(over);
            // which lane is faster needs the headline's direction: a `collect` without
            // `direction=` has none (a `bench` timed by expr is lower-is-better)
            if let Placement::Steps {
                collect: Some(c), ..
            } = &b.placement
            {
                if c.higher_is_better().is_none() {
                    diags.push(
                        Diag::warning(
                            Code::ExpectName,
                            format!("a speedup over `{over}` needs to know which way is better: the headline's `collect` has no `direction=`, so this `expect` is not judged"),
                        )
                        .at(&e.loc.src, e.loc.span)
                        .label("not judged")
                        .help("add `direction=\"higher\"` (a throughput) or `direction=\"lower\"` (a time) to the `collect`"),
                    );
                }
            }
        }
        for l in named {
            if !lanes.contains(&l) {
                diags.push(
                    err(
                        Code::ExpectName,
                        format!(
                            "`expect` names the lane `{l}`, which `{}` does not have",
                            b.name
                        ),
                        &e.loc,
                    )
                    .label("unknown lane")
                    .help(crate::util::suggest::help_for(
                        l,
                        &lanes,
                        "the lanes",
                    )),
                );
            }
        }
        if let (ExpectWhat::Metric { metric }, Some(unit)) = (&e.what, &e.unit) {
            let norm = |s: &str| s.replace('-', "_");
            let telemetry_unit = || {
                crate::model::schema::TELEMETRY_METRICS
                    .iter()
                    .chain([&crate::model::schema::CPU_ENERGY_METRIC])
                    .find(|(m, _, _)| telemetry && norm(m) == norm(metric))
                    .map(|(_, u, _)| u.to_string())
            };
            let known = known_unit(b, metric).or_else(telemetry_unit);
            if known.is_none() {
                // nothing says which unit the step reports it in: the bounds are taken as given
                diags.push(
                    Diag::warning(
                        Code::ExpectName,
                        format!("expr does not know the unit of `{metric}`: `unit=\"{unit}\"` is not checked against what the step reports"),
                    )
                    .at(&e.loc.src, e.loc.span)
                    .label("unit not checked")
                    .help(format!("make sure the step reports `{metric}` in {unit}, or drop `unit=`")),
                );
            }
            if let Some(u) = known.filter(|u| u != unit) {
                diags.push(
                    err(
                        Code::InvalidValue,
                        format!("`{metric}` is in {u}, but the `expect` bounds are in {unit}"),
                        &e.loc,
                    )
                    .label("unit")
                    .help(format!("write the bounds in {u} (`unit=\"{u}\"`)")),
                );
            }
        }
        if let ExpectWhat::Metric { metric } = &e.what {
            let mut known = known_metrics(b);
            if telemetry {
                known.extend(
                    crate::model::schema::TELEMETRY_METRICS
                        .iter()
                        .map(|(m, _, _)| m.to_string()),
                );
                known.push(crate::model::schema::CPU_ENERGY_METRIC.0.to_string());
            }
            let norm = |s: &str| s.replace('-', "_");
            if !known.iter().any(|k| norm(k) == norm(metric)) {
                let names: Vec<&str> = known.iter().map(String::as_str).collect();
                // a near miss of a metric expr knows (`thruput` of `throughput`) is a typo: an
                // error now, not an expectation unmet after the whole run
                let d = match crate::util::suggest::did_you_mean(metric, names.iter().copied()) {
                    Some(_) => Diag::error(
                        Code::ExpectName,
                        format!("`{metric}` is not a metric expr knows `{}` to report", b.name),
                    ),
                    None => Diag::warning(Code::ExpectName, format!("`{metric}` is not a metric expr knows `{}` to report; it is looked for after the run", b.name)),
                };
                diags.push(d.at(&e.loc.src, e.loc.span).label("unknown metric").help(
                    crate::util::suggest::help_for(metric, &names, "the metrics"),
                ));
            }
        }
    }
}

/// `host=local` works without declaring `host local`.
/// The host `local`, when the file declares none of that name (steps default to it).
pub(crate) fn add_implicit_local(exp: &mut Experiment) {
    if exp.host("local").is_some() {
        return;
    }
    let loc = exp.loc.clone();
    exp.hosts.push(Host::local("local", loc));
}

/// A service expr will start (or a rendezvous it will open) on host:port.
struct Service {
    host: String,
    port: i64,
    what: String,
    loc: Loc,
    /// Its bench (the index): benches run one after another, and a point's server takes its
    /// host whole under `--jobs`, so two benches' servers never listen at once.
    bench: usize,
    /// The lanes it runs for (`None`: every lane): servers of disjoint lanes never run in one
    /// point.
    lanes: Option<Vec<String>>,
}

impl Service {
    /// Whether the two can listen at once: of one bench, for a lane both run for.
    fn together(&self, other: &Service) -> bool {
        self.bench == other.bench
            && match (&self.lanes, &other.lanes) {
                (Some(a), Some(b)) => a.iter().any(|l| b.contains(l)),
                _ => true,
            }
    }
}

/// Each host's own values that no step could start with: an environment string with a NUL or
/// over the limit, a `repo` `cd` would read as an option, an ssh port outside 1..65535.
fn host_values(exp: &Experiment, diags: &mut Diags) {
    for h in &exp.hosts {
        // an environment string no process can be started with: the run fails every point
        for (k, v) in &h.env {
            let why = if v.contains('\0') || k.contains('\0') {
                Some("holds a NUL character, which no environment can carry".to_string())
            } else if k.len() + v.len() + 1 > crate::model::template::MAX_COMMAND {
                Some(format!(
                    "is {} bytes, more than a process's environment string takes (at most {}: Linux refuses one over 128 KiB)",
                    k.len() + v.len() + 1,
                    crate::model::template::MAX_COMMAND
                ))
            } else {
                None
            };
            if let Some(why) = why {
                diags.push(
                    err(
                        Code::InvalidValue,
                        format!("host `{}`: env `{}` {why}", h.name, k.escape_debug()),
                        &h.loc,
                    )
                    .help("pass a long value through a file the command reads"),
                );
            }
        }
        // `cd -L` is an option to cd, `cd -` the last directory: the run (which starts the
        // process in the directory) and commands.sh (which `cd`s) would differ
        if h.repo.starts_with('-') {
            diags.push(
                err(
                    Code::InvalidValue,
                    format!(
                        "host `{}`: repo `{}` starts with `-`, which `cd` reads as an option",
                        h.name, h.repo
                    ),
                    &h.loc,
                )
                .help(format!("write it `./{}`", h.repo)),
            );
        }
        if !(1..=65535).contains(&h.ssh_port) {
            let loc = h.ssh_port_loc.as_ref().unwrap_or(&h.loc);
            diags.push(
                err(
                    Code::PortOutOfRange,
                    format!("ssh-port {} is outside 1..65535", h.ssh_port),
                    loc,
                )
                .help("use the host's SSH port, usually 22"),
            );
        }
    }
}

fn hosts_and_ports(exp: &Experiment, diags: &mut Diags) {
    let names: Vec<&str> = exp.hosts.iter().map(|h| h.name.as_str()).collect();
    let check_ref = |diags: &mut Diags, host: &str, loc: &Loc| {
        // An empty name was already reported as a missing `host=`.
        if !host.is_empty() && exp.host(host).is_none() && exp.pool(host).is_none() {
            diags.push(
                err(Code::UndefinedHost, format!("host `{host}` is not declared"), loc)
                    .label("undefined host")
                    .help(match crate::util::suggest::did_you_mean(host, names.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`? or declare `host {host} ssh=… ip=\"…\" repo=\"…\"`"),
                        None => format!("declare it: `host {host} ssh=\"{host}\" ip=\"10.0.0.1\" repo=\"/path/to/repo\"`"),
                    }),
            );
        }
    };
    host_values(exp, diags);
    let mut services: Vec<Service> = Vec::new();
    for (bench, b) in exp.benches.iter().enumerate() {
        match &b.placement {
            Placement::Nodes(nodes) => {
                for n in nodes {
                    check_ref(diags, &n.host, &n.loc);
                }
                for (host, port, what, loc) in kinds::of(b.kind).services(b) {
                    services.push(Service {
                        host,
                        port,
                        what,
                        loc,
                        bench,
                        lanes: None,
                    });
                }
            }
            Placement::Steps { steps, .. } => {
                for s in steps {
                    check_ref(diags, &s.host, &s.loc);
                    if let Some(port) = s.port {
                        services.push(Service {
                            host: s.host.clone(),
                            port,
                            what: format!("server `{}`", s.name),
                            loc: s.port_loc.clone().unwrap_or_else(|| s.loc.clone()),
                            bench,
                            lanes: s.lanes.clone(),
                        });
                    }
                }
            }
        }
    }
    let mut seen: BTreeMap<(&str, i64), Vec<&Service>> = BTreeMap::new();
    for s in &services {
        if !(1..=65535).contains(&s.port) {
            diags.push(
                err(
                    Code::PortOutOfRange,
                    format!("port {} of {} is outside 1..65535", s.port, s.what),
                    &s.loc,
                )
                .label("invalid port")
                .help("use a port in 1..65535 (RecStore's PS default is 15000)"),
            );
            continue;
        }
        if let Some(service_host) = exp.host(&s.host) {
            // the ssh port of the host, or of another name of its machine (sshd listens there
            // too)
            let h = exp
                .hosts
                .iter()
                .filter(|o| o.name == service_host.name || o.same_machine(service_host).is_some())
                .find(|o| s.port == o.ssh_port)
                .unwrap_or(service_host);
            if s.port == h.ssh_port || s.port == 22 {
                let other = match h.same_machine(service_host) {
                    Some(why) if h.name != service_host.name => format!(
                        " (`{}` and `{}` are one machine: {why})",
                        service_host.name, h.name
                    ),
                    _ => String::new(),
                };
                let mut d = err(
                    Code::PortIsSshPort,
                    format!(
                        "{} uses port {}, the SSH port of `{}`{other}",
                        s.what, s.port, h.name
                    ),
                    &s.loc,
                )
                .label("service port")
                .help(
                    "ssh-port is for login; a service needs its own port (the PS default is 15000)",
                );
                if let Some(l) = &h.ssh_port_loc {
                    if l.src.name == s.loc.src.name {
                        d = d.also(l.span, "ssh login port");
                    }
                }
                diags.push(d);
                continue;
            }
        }
        // two host names of one machine (two `ssh="local"` hosts) share its ports
        let machine = exp
            .machine_of(&s.host)
            .map_or(s.host.as_str(), |(m, _)| m.name.as_str());
        let prev = seen
            .get(&(machine, s.port))
            .and_then(|v| v.iter().find(|p| p.together(s)));
        if let Some(prev) = prev {
            let message = match exp.host(&prev.host).zip(exp.host(&s.host)) {
                Some((a, b)) if a.name != b.name => format!(
                    "{} on `{}` and {} on `{}` both use port {}: the two hosts are one machine ({})",
                    prev.what,
                    a.name,
                    s.what,
                    b.name,
                    s.port,
                    a.same_machine(b).unwrap_or("the same machine")
                ),
                _ => format!(
                    "{} and {} both use {}:{}",
                    prev.what, s.what, s.host, s.port
                ),
            };
            diags.push(
                err(Code::PortConflict, message, &s.loc)
                    .also(prev.loc.span, "first use")
                    .help("give each service on a host its own port"),
            );
            continue;
        }
        seen.entry((machine, s.port)).or_default().push(s);
    }
}

/// A bench whose warmup rounds (each a run of its `run` steps) come to more than
/// [`LARGE`] × 10 (`warmup 10000` with `warmup-scope "point"` over 1,000 points planned ten
/// million steps: `plan` ran out of memory where `check` passed): an error at `warmup`.
fn too_many_warmups(b: &Bench, points: u128) -> Option<Diag> {
    // a kind's `warmup` is its program's own (ep-bench's kernel iterations, `-w`), not rounds
    // of run steps
    if !matches!(b.placement, Placement::Steps { .. }) {
        return None;
    }
    let int = |p: &Param| match p.val {
        Val::Int(n) => u128::try_from(n).ok(),
        _ => None,
    };
    let (w, at) = b
        .lanes
        .iter()
        .filter_map(|l| l.overrides.get("warmup"))
        .chain(b.settings.get("warmup"))
        .filter_map(|p| Some((int(p)?, p.loc.as_ref())))
        .max_by_key(|(w, _)| *w)?;
    let per_point = b
        .settings
        .get("warmup-scope")
        .is_some_and(|p| matches!(&p.val, Val::Str(s) if s == "point"))
        || b.lanes.iter().any(|l| {
            l.overrides
                .get("warmup-scope")
                .is_some_and(|p| matches!(&p.val, Val::Str(s) if s == "point"))
        });
    // `group`: once a lane and sweep point, before its first repeat
    let repeats = u128::try_from(b.repeat).unwrap_or(1).max(1);
    let warmed = if per_point {
        points
    } else {
        points.div_ceil(repeats)
    };
    let rounds = warmed.saturating_mul(w);
    let most = LARGE * 10;
    (rounds > most).then(|| {
        let loc = at.unwrap_or(&b.loc);
        err(
            Code::MatrixTooLarge,
            format!(
                "`{}` runs {rounds} warmup rounds (warmup {w} × {warmed} {}), more than {most}",
                b.name,
                if per_point { "points" } else { "lanes and sweep points" }
            ),
            loc,
        )
        .help("a few warmup rounds warm a cache as well as thousands; lower `warmup`, or pass `--allow-large` if you mean it")
    })
}

/// Why a result directory path is refused: expr writes only inside its own result directory, so
/// the path must name a directory of its own (not empty, the root, `.` or a parent).
pub fn output_problem(path: &str) -> Option<String> {
    use std::path::Component;
    let p = std::path::Path::new(path);
    if path.trim().is_empty() {
        return Some(
            "the output directory is empty: expr would write into the current directory".into(),
        );
    }
    // a newline or tab in a directory name (from an experiment name such as "a\nb") breaks
    // every line that names it: the terminal's, commands.sh's comments, `expr ls`
    if path.chars().any(char::is_control) {
        return Some(format!(
            "the output directory `{}` has a control character (a newline or tab)",
            path.escape_debug()
        ));
    }
    // `~/results` is a shell's home directory, outside quotes: expr made `./~/results`, and
    // said "results in ~/results", which reads as $HOME's
    if path.starts_with('~') {
        return Some(format!(
            "`{path}` starts with `~`, which expr does not expand (a shell does, outside quotes): it would make a directory named `~` here; write the home directory's path, or a relative one"
        ));
    }
    // `nothere/../victim` names `victim`, an existing directory `exists()` cannot see
    let mut seen_normal = false;
    for c in p.components() {
        match c {
            Component::Normal(_) => seen_normal = true,
            Component::ParentDir if seen_normal => {
                return Some(format!(
                    "`{path}` goes into a directory and back out with `..`: write the directory it means"
                ))
            }
            _ => {}
        }
    }
    let normal = p
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    if normal == 0 {
        return Some(format!(
            "`{path}` is the root, the current or a parent directory: expr needs a directory of its own"
        ));
    }
    // what the file system refuses (a name of 255 bytes at most, a path of 4096), said here
    // rather than as "File name too long" once the run has started
    if let Some(long) = p.components().find(|c| c.as_os_str().len() > 255) {
        let name = long.as_os_str().to_string_lossy();
        let cut: String = name.chars().take(40).collect();
        return Some(format!(
            "a directory name of the output path is {} bytes (`{cut}…`): a file name is at most 255",
            name.len()
        ));
    }
    if path.len() > 4000 {
        return Some(format!(
            "the output path is {} bytes: a path is at most 4096, and the run's files go below it",
            path.len()
        ));
    }
    None
}

/// Host and step names become parts of file names (`logs/<step>-<host>.log`): letters and digits
/// of any script (`节点一`), `_`, `-` and `.` — no separator, space, control or dot first — and at
/// most 100 bytes, so that a log name stays within a file name's 255.
pub fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.starts_with('-')
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn names(exp: &Experiment, diags: &mut Diags) {
    let bad = |what: &str, name: &str, loc: &Loc| {
        err(
            Code::UnsafeName,
            format!(
                "{what} name `{}` is not a safe file-name component",
                name.escape_debug()
            ),
            loc,
        )
        .label("used in log file names")
        .help(
            "use letters (of any script), digits, `_`, `-` and `.` (not first), at most 100 bytes",
        )
    };
    for a in &exp.allocations {
        if !safe_name(&a.name) {
            diags.push(
                err(
                    Code::UnsafeName,
                    format!(
                        "allocation name `{}` is not a safe name",
                        a.name.escape_debug()
                    ),
                    &a.loc,
                )
                .label("used in node placeholders and job messages")
                .help("use letters (of any script), digits, `_`, `-` and `.` (not first), at most 100 bytes"),
            );
        }
    }
    for p in &exp.pools {
        if !safe_name(&p.name) {
            diags.push(bad("pool", &p.name, &p.loc));
        }
    }
    for h in &exp.hosts {
        if !safe_name(&h.name) {
            diags.push(bad("host", &h.name, &h.loc));
        }
        // the ssh target is one argument of ssh: it must not read as an option, nor be empty;
        // a port is `ssh-port=`, not part of the name (`host:22`, `ssh://host:22`)
        let port_in_name = h.ssh.starts_with("ssh://")
            || h.ssh
                .split_once(':')
                .is_some_and(|(_, p)| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        if (!h.is_local() || h.written.ssh.is_some())
            && (h.ssh.is_empty()
                || port_in_name
                || h.ssh.starts_with('-')
                || h.ssh.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            diags.push(
                err(
                    Code::InvalidValue,
                    format!("ssh target `{}` of host `{}` is not a host name", h.ssh.escape_debug(), h.name),
                    h.written.ssh.as_ref().unwrap_or(&h.loc),
                )
                .label("ssh target")
                .help("write a host name, `user@host`, or a `Host` alias of your ssh config (no leading `-`, no spaces; a port goes in `ssh-port=`)"),
            );
        }
        // a node's address is a placeholder until Slurm names it (its allocation is checked above)
        if !h.ip.is_empty()
            && h.place.is_none()
            && !h.ip.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '-' | '_' | '%' | '[' | ']')
            })
        {
            diags.push(
                err(
                    Code::InvalidValue,
                    format!(
                        "ip `{}` of host `{}` is not an address",
                        h.ip.escape_debug(),
                        h.name
                    ),
                    h.written.ip.as_ref().unwrap_or(&h.loc),
                )
                .label("ip")
                .help("write an IPv4 or IPv6 address or a host name, e.g. `ip=\"10.0.2.190\"`"),
            );
        }
    }
    for b in &exp.benches {
        if let Placement::Steps { steps, .. } = &b.placement {
            for s in steps {
                if !safe_name(&s.name) {
                    diags.push(bad("step", &s.name, &s.loc));
                }
            }
        }
    }
    // names shown on every line of the terminal, the manifest and the report: an invisible
    // character (`a` and `a\u{200b}` are two lanes that read alike). (A control character is
    // taken, and escaped wherever a name is shown: the safety tests hold names with newlines.)
    let unseen = |what: &str, name: &str, loc: &Loc| {
        // (U+2028/U+2029 end a line in KDL: a newline, taken and escaped as `\n` is)
        let c = name.chars().find(|c| {
            crate::util::markup::invisible(*c) && !matches!(c, '\u{2028}' | '\u{2029}')
        })?;
        Some(
            err(
                Code::UnsafeName,
                format!(
                    "{what} name `{}` holds an invisible character (U+{:04X})",
                    name.escape_debug(),
                    c as u32
                ),
                loc,
            )
            .label("shown on the terminal and in every report")
            .help("write the name in visible characters"),
        )
    };
    let mut found: Vec<Diag> = Vec::new();
    found.extend(unseen("experiment", &exp.name, &exp.loc));
    for b in &exp.benches {
        found.extend(unseen("bench", &b.name, &b.loc));
        for l in &b.lanes {
            found.extend(unseen("lane", &l.name, &l.loc));
        }
    }
    for d in found {
        diags.push(d);
    }
}

fn templates(exp: &Experiment, diags: &mut Diags) {
    let known: BTreeSet<String> = ["name", "started"].iter().map(|s| s.to_string()).collect();
    let out_loc = exp.output_loc.clone().unwrap_or_else(|| exp.loc.clone());
    match template::check(&exp.output, &out_loc, &known, Quote::Plain) {
        Err(d) => diags.push(d),
        Ok(_) => {
            let ctx = minijinja::context! {
                name => exp.name.clone(),
                started => chrono::Local::now().to_rfc3339(),
            };
            match template::render(&exp.output, &ctx, Quote::Plain) {
                Ok(out) => {
                    if let Some(why) = output_problem(&out) {
                        diags.push(
                            err(Code::OutputPath, why, &out_loc)
                                .label("the result directory")
                                .help("name a directory of its own, e.g. `results/{{ name }}_{{ started | date(format='%m%d%H%M%S') }}`"),
                        );
                    }
                }
                Err(e) => diags.push(
                    err(Code::TemplateFilter, format!("the output template cannot be rendered: {e}"), &out_loc)
                        .label("here")
                        .help("filters: `date(format='%Y%m%d')` with chrono's strftime codes, and minijinja's built-in filters"),
                ),
            }
        }
    }
    let mut with_output = known.clone();
    with_output.insert("output".into());
    for b in &exp.benches {
        for p in b.settings.iter().filter(|(k, _)| *k == "runtime-dir") {
            if let Some(loc) = &p.1.loc {
                if let Val::Str(s) = &p.1.val {
                    if let Err(d) = template::check(s, loc, &with_output, Quote::Plain) {
                        diags.push(d);
                    }
                }
            }
        }
    }
}

/// An `exclude` naming a lane, or an axis value, the bench does not have removes nothing: a
/// typo (`exclude batch-size=4906`) that would leave the points it meant in the matrix.
fn unused_excludes(b: &Bench, diags: &mut Diags) {
    let lanes = b.lane_names();
    for ex in &b.sweep.excludes {
        let missing = ex.when.iter().find(|(k, v)| {
            if k == "lane" {
                // a lane is matched by its name as text: `lane=1` (a number) names none
                !v.as_str()
                    .is_some_and(|v| lanes.contains(&v) || (lanes.is_empty() && v == b.name))
            } else {
                b.sweep
                    .all_axes()
                    .find(|a| a.name == *k)
                    .is_some_and(|a| !a.values.contains(v))
            }
        });
        if missing.is_none() {
            if let Some(d) = exclude_unpaired(b, ex) {
                diags.push(d);
            }
        }
        if let Some((k, v)) = missing {
            let have: Vec<String> = if k == "lane" {
                // names are text: `lane="1"`, not `lane=1`
                lanes.iter().map(|l| format!("`\"{l}\"`")).collect()
            } else {
                b.sweep
                    .all_axes()
                    .filter(|a| a.name == *k)
                    .flat_map(|a| a.values.iter().map(|v| format!("`{v}`")))
                    .take(12)
                    .collect()
            };
            diags.push(
                Diag::warning(
                    Code::UnusedExclude,
                    format!(
                        "`exclude` names {k}={v}, which no point of `{}` has: it removes nothing",
                        b.name
                    ),
                )
                .at(&ex.loc.src, ex.loc.span)
                .label("matches no point")
                .help(format!(
                    "`{k}` takes {}",
                    if have.is_empty() {
                        "no value here".to_string()
                    } else {
                        have.join(", ")
                    }
                )),
            );
        }
    }
}

/// An `exclude` naming two axes of one `zip` at values the zip never pairs (`x=1 y=4` where
/// it pairs 1 with 3): each value is there, but no point has both.
fn exclude_unpaired(b: &Bench, ex: &crate::model::Exclude) -> Option<Diag> {
    for z in &b.sweep.zips {
        let named: Vec<(&crate::model::Axis, &Val)> = ex
            .when
            .iter()
            .filter_map(|(k, v)| Some((z.iter().find(|a| a.name == *k)?, v)))
            .collect();
        if named.len() < 2 {
            continue;
        }
        let rows = z.first().map_or(0, |a| a.values.len());
        if (0..rows).any(|i| named.iter().all(|(a, v)| a.values.get(i) == Some(*v))) {
            continue;
        }
        let text = |pairs: &[(&str, &Val)]| {
            pairs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let asked: Vec<(&str, &Val)> = named.iter().map(|(a, v)| (a.name.as_str(), *v)).collect();
        // what the zip pairs the first named value with
        let (first, v) = named[0];
        let paired = first.values.iter().position(|x| x == v).map(|i| {
            let with: Vec<(&str, &Val)> = named[1..]
                .iter()
                .filter_map(|(a, _)| Some((a.name.as_str(), a.values.get(i)?)))
                .collect();
            format!("the zip pairs {}={v} with {}", first.name, text(&with))
        });
        return Some(
            Diag::warning(
                Code::UnusedExclude,
                format!(
                    "`exclude` names {} together, which the zip never pairs: it removes nothing",
                    text(&asked)
                ),
            )
            .at(&ex.loc.src, ex.loc.span)
            .label("matches no point")
            .help(paired.unwrap_or_else(|| "name values the zip pairs".into())),
        );
    }
    None
}

fn matrix(exp: &Experiment, opts: &Options, diags: &mut Diags) {
    for b in &exp.benches {
        unused_excludes(b, diags);
    }
    // every bench's points together, against the ceiling no flag lifts; a pool's bench is
    // planned on each of its members (the places `--jobs` may move a point to)
    let planned = |b: &Bench| {
        let members = exp.pool_of(b).map_or(1, |p| p.members.len().max(1)) as u128;
        expand::size_bound(b).saturating_mul(members)
    };
    let total: u128 = exp
        .benches
        .iter()
        .map(planned)
        .fold(0u128, u128::saturating_add);
    if total > MOST {
        let b = exp
            .benches
            .iter()
            .max_by_key(|b| planned(b))
            .expect("a bench has points");
        let loc = b.sweep.axes.first().map(|a| &a.loc).unwrap_or(&b.loc);
        let on = match exp.pool_of(b) {
            Some(p) => format!(
                " points, each planned on the {} members of pool `{}`",
                p.members.len(),
                p.name
            ),
            None => String::new(),
        };
        diags.push(
            err(
                Code::MatrixTooLarge,
                format!(
                    "the experiment expands to {total} planned points, more than the {MOST} expr plans (with `--allow-large` too); `{}` has {}{on}",
                    b.name,
                    expand::size_bound(b)
                ),
                loc,
            )
            .help("split the experiment into files, or narrow its sweeps, repeats or pools"),
        );
        return;
    }
    for (i, b) in exp.benches.iter().enumerate() {
        let bound = expand::size_bound(b);
        if bound > LARGE && !opts.allow_large {
            let loc = b.sweep.axes.first().map(|a| &a.loc).unwrap_or(&b.loc);
            diags.push(
                err(
                    Code::MatrixTooLarge,
                    format!("`{}` expands to {bound} points (more than {LARGE})", b.name),
                    loc,
                )
                .help("narrow the sweep, use `--only`, or pass `--allow-large` if you mean it"),
            );
            continue;
        }
        if !opts.allow_large {
            if let Some(d) = too_many_warmups(b, bound) {
                diags.push(d);
                continue;
            }
        }
        let points = expand::expand_bench(i, b, &Filter::default(), false);
        lanes_pinning_axes(b, diags);
        // a lane without a point would leave the matrix without a word: said at what empties it
        let mut unswept = 0;
        for (li, lane) in b.lanes.iter().enumerate() {
            if points.iter().any(|p| p.lane == li) {
                continue;
            }
            let d = lane_without_points(b, lane);
            if d.is_error() {
                unswept += 1;
                diags.push(d);
            } else if !points.is_empty() {
                diags.push(d);
            }
        }
        if points.is_empty() && unswept == 0 && !b.lanes.is_empty() {
            let loc = b.sweep.excludes.first().map(|e| &e.loc).unwrap_or(&b.loc);
            diags.push(
                err(
                    Code::EmptyMatrix,
                    format!("`{}` has no matrix point left after exclusions", b.name),
                    loc,
                )
                .help("loosen the `exclude` nodes"),
            );
        }
        if points.is_empty() {
            continue;
        }
        let mut seen = BTreeSet::new();
        for p in &points {
            let mut local = Diags::default();
            kinds::of(b.kind).validate_point(exp, b, p, &mut local);
            for d in local.0 {
                let key = (d.code, d.message.clone(), d.span.map(|s| s.offset()));
                if seen.insert(key) {
                    diags.push(d);
                }
            }
        }
    }
}

#[cfg(test)]
mod slurm_time_tests {
    /// Slurm's time forms are read; words and stray separators are not (helper 50:
    /// `time="half an hour"` checked clean and salloc refused it at the run).
    #[test]
    fn slurm_time_limits_are_read_as_slurm_reads_them() {
        for t in [
            "30",
            "30:00",
            "1:30:00",
            "2-0",
            "2-12:00",
            "2-12:00:00",
            "UNLIMITED",
        ] {
            assert!(super::slurm_time(t), "{t}");
        }
        for t in [
            "half an hour",
            "",
            "1h",
            "1:2:3:4",
            "-1",
            "1-",
            "1:",
            "a-1:00",
        ] {
            assert!(!super::slurm_time(t), "{t}");
        }
    }
}
