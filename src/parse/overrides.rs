//! `--set key=value` and `--only key=value`: validated exactly like the file.

use crate::kinds;
use crate::model::diag::{Code, Diag, Diags};
use crate::model::expand::Filter;
use crate::model::schema::{self, Ty};
use crate::model::source::Source;
use crate::model::*;
use crate::parse::decode::{Decoder, Got};

/// Apply one `--set [bench.]key=value` to the experiment, type-checked against the setting.
pub fn apply_set(exp: &mut Experiment, arg: &str, diags: &mut Diags) {
    // without `=`, an argument that names a secret is shown masked
    let shown = if !arg.contains('=') && crate::util::secret::is_secret(arg) {
        "*".repeat(arg.len())
    } else {
        arg.to_string()
    };
    let src = Source::new("--set", shown.as_str());
    let arg_text = shown.as_str();
    let Some((key, value)) = arg.split_once('=') else {
        diags.push(
            Diag::error(
                Code::BadOverride,
                format!("`--set {arg_text}` is not key=value"),
            )
            .at(&src, (0, arg.len()).into())
            .help("for example `--set batch-size=2048` or `--set recstore-e2e.steps=20`"),
        );
        return;
    };
    let value_span: miette::SourceSpan = (arg.len() - value.len(), value.len()).into();
    let val =
        crate::parse::decode::default_val(value).unwrap_or_else(|| Val::Str(value.to_string()));
    let got = Got {
        val,
        loc: Loc {
            src: src.clone(),
            span: value_span,
        },
    };
    if let Some(rest) = key.strip_prefix("host.") {
        set_host(exp, &src, rest, got, diags);
        return;
    }
    if let Some(rest) = key
        .strip_prefix("slurm.")
        .filter(|r| r.contains('.') && !exp.benches.iter().any(|b| b.name == "slurm"))
    {
        set_slurm(exp, &src, rest, got, diags);
        return;
    }
    let (bench_name, key) = match key.split_once('.') {
        Some((b, k)) => (Some(b), k),
        None => (None, key),
    };
    let mut applied = false;
    let mut candidates: Vec<String> = vec!["repeat".into()];
    for b in exp
        .benches
        .iter_mut()
        .filter(|b| bench_name.is_none_or(|n| n == b.name))
    {
        let spec = kinds::of(b.kind);
        let params = crate::parse::decode::bench_params(b, spec);
        // the kind's settings and a generic bench's own params
        for (name, _) in &params {
            if name != "*" && !candidates.contains(name) {
                candidates.push(name.clone());
            }
        }
        if key == "repeat" {
            if !set_repeat(b, &got, value, &src, value_span, diags) {
                return;
            }
            applied = true;
            continue;
        }
        let Some((_, field)) = params.iter().find(|(n, _)| n == key) else {
            continue;
        };
        let field = *field;
        let swept = b.sweep.has_axis(key);
        let Some(mut vals) = typed_values(arg, value, &src, field, key, swept, diags) else {
            return;
        };
        if vals.len() > 1 || swept {
            // the command line replaces the file's sweep of this setting (or adds one); a lane
            // that sets it runs at its own value only, or at none: `check`'s matrix rules say
            // which
            if !set_sweep(b, key, &vals, &src, value_span, diags) {
                return;
            }
        } else if let Some(g) = vals.pop() {
            warn_lane_overrides(b, key, &g.val, &src, diags);
            b.settings.insert(
                key.to_string(),
                Param {
                    val: g.val,
                    loc: Some(g.loc),
                },
            );
        }
        applied = true;
        rename_implicit_lanes(b);
    }
    if !applied {
        unknown_setting(exp, key, bench_name, &candidates, &src, diags);
    }
}

/// `--set repeat=N` on one bench: false when the value is not a repeat count (reported).
fn set_repeat(
    b: &mut Bench,
    got: &Got,
    value: &str,
    src: &std::sync::Arc<Source>,
    value_span: miette::SourceSpan,
    diags: &mut Diags,
) -> bool {
    match got.val.as_int() {
        Some(n) if (1..=crate::model::schema::MAX_REPEAT).contains(&n) => {
            b.repeat = n;
            b.adaptive = None;
            true
        }
        _ => {
            diags.push(
                Diag::error(
                    Code::BadOverride,
                    format!(
                        "`repeat` takes an integer 1..={}, not `{value}`",
                        crate::model::schema::MAX_REPEAT
                    ),
                )
                .at(src, value_span)
                .help("for example `--set repeat=3`"),
            );
            false
        }
    }
}

/// The values `--set` gives a setting, each type-checked; None when one is wrong (reported).
fn typed_values(
    arg: &str,
    value: &str,
    src: &std::sync::Arc<Source>,
    field: schema::Field,
    key: &str,
    swept: bool,
    diags: &mut Diags,
) -> Option<Vec<Got>> {
    // `key=a,b,c` sweeps (Hydra's multirun habit); a string setting keeps its commas unless
    // it is swept already
    let stringy = matches!(field.ty, Ty::Str | Ty::Template);
    let at = arg.len() - value.len();
    let split = !stringy || swept;
    let (split_parts, open) = split_outside_quotes(value);
    // a quote left open: where the value ends is a guess (a text that merely holds a quote
    // inside is text, `say "hi`)
    if let Some(q) = open.filter(|&q| split || q == 0) {
        diags.push(
            Diag::error(
                Code::BadOverride,
                format!("--set `{key}`: a quote is not closed"),
            )
            .at(src, (at + q, value.len() - q).into())
            .help("close it (`\"a,b\"` is one value), or write a quote in a text as `\\\"` inside quotes"),
        );
        return None;
    }
    let parts: Vec<(usize, &str)> = if split {
        split_parts.into_iter().map(|(i, p)| (at + i, p)).collect()
    } else {
        vec![(at, value)]
    };
    let mut vals = Vec::new();
    let mut seen: std::collections::HashSet<crate::model::ValKey> = Default::default();
    for (at, part) in &parts {
        // a number too large or too small for 64 bits, not the text it would be taken for
        if let Some(help) = crate::parse::decode::out_of_range(part) {
            diags.push(
                Diag::error(
                    Code::BadOverride,
                    format!("--set `{key}`: {part} is out of range"),
                )
                .at(src, (*at, part.len()).into())
                .help(help),
            );
            return None;
        }
        let g = Got {
            val: crate::parse::decode::default_val(part)
                .unwrap_or_else(|| Val::Str(part.to_string())),
            loc: Loc {
                src: src.clone(),
                span: (*at, part.len()).into(),
            },
        };
        match typed_set(src, diags, g, &field, key) {
            Some(g) if g.val.key().is_some_and(|k| !seen.insert(k)) => {
                diags.push(
                    crate::parse::decode::repeated_sweep_value(key, &g.val).at(src, g.loc.span),
                );
                return None;
            }
            Some(g) => vals.push(g),
            None => return None,
        }
    }
    Some(vals)
}

/// `a,"b,c",d` split on the commas outside double quotes (a backslash escapes inside them),
/// each part with its offset: a quoted value is one value, commas and all. Second, the offset
/// of a quote left open at the end.
fn split_outside_quotes(value: &str) -> (Vec<(usize, &str)>, Option<usize>) {
    let mut parts = Vec::new();
    let (mut start, mut open, mut escaped) = (0, None, false);
    for (i, c) in value.char_indices() {
        let quoted = open.is_some();
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' if quoted => open = None,
            '"' => open = Some(i),
            ',' if !quoted => {
                parts.push((start, &value[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push((start, &value[start..]));
    (parts, open)
}

/// The command line's values as the setting's sweep axis (replacing the file's, or added);
/// false when the setting is zipped with axes of another length (reported).
fn set_sweep(
    b: &mut Bench,
    key: &str,
    vals: &[Got],
    src: &std::sync::Arc<Source>,
    value_span: miette::SourceSpan,
    diags: &mut Diags,
) -> bool {
    let loc = Loc {
        src: src.clone(),
        span: value_span,
    };
    let values: Vec<Val> = vals.iter().map(|g| g.val.clone()).collect();
    if let Some(a) = b.sweep.axes.iter_mut().find(|a| a.name == key) {
        a.values = values;
        a.loc = loc;
    } else if let Some(z) = b
        .sweep
        .zips
        .iter_mut()
        .find(|z| z.iter().any(|a| a.name == key))
    {
        let len = z.first().map(|a| a.values.len()).unwrap_or(0);
        if values.len() != len {
            diags.push(
                Diag::error(
                    Code::BadOverride,
                    format!(
                        "`{key}` is zipped with {} values; `--set` gives {}",
                        len,
                        values.len()
                    ),
                )
                .at(src, value_span)
                .help("give a zipped axis as many values as the axes it is zipped with"),
            );
            return false;
        }
        if let Some(a) = z.iter_mut().find(|a| a.name == key) {
            a.values = values;
            a.loc = loc;
        }
    } else {
        b.sweep.axes.push(Axis {
            name: key.to_string(),
            values,
            loc,
        });
    }
    true
}

/// Lanes expr added follow the settings they were made from (`ps-type` names the default
/// RecStore lane): made again, so what --set changed is what runs.
fn rename_implicit_lanes(b: &mut Bench) {
    if !b.lanes.is_empty() && b.lanes.iter().all(|l| l.implicit) {
        let names = kinds::of(b.kind).behaviour.default_lanes(b);
        if names.len() == b.lanes.len() {
            for (l, n) in b.lanes.iter_mut().zip(names) {
                l.name = n;
            }
        }
    }
}

/// A warning naming the lanes that set `key` to another value than `--set` gives (their value
/// wins over it).
fn warn_lane_overrides(
    b: &Bench,
    key: &str,
    given: &Val,
    src: &std::sync::Arc<Source>,
    diags: &mut Diags,
) {
    let lanes: Vec<&str> = b
        .lanes
        .iter()
        .filter(|l| l.overrides.get(key).is_some_and(|p| p.val != *given))
        .map(|l| l.name.as_str())
        .collect();
    if !lanes.is_empty() {
        diags.push(
            Diag::warning(
                Code::BadOverride,
                format!(
                    "lane{} {} set{} `{key}` {}; there the lane's value wins over --set",
                    if lanes.len() == 1 { "" } else { "s" },
                    crate::util::markup::ticked(lanes.iter()),
                    if lanes.len() == 1 { "s" } else { "" },
                    if lanes.len() == 1 {
                        "itself"
                    } else {
                        "themselves"
                    }
                ),
            )
            .at(src, (0, key.len()).into())
            .help("drop the lane's own value in the file to let --set reach it"),
        );
    }
}

/// The error for a `--set` that no bench took: no such bench, or no such setting.
fn unknown_setting(
    exp: &Experiment,
    key: &str,
    bench_name: Option<&str>,
    candidates: &[String],
    src: &std::sync::Arc<Source>,
    diags: &mut Diags,
) {
    if let Some(b) = bench_name.filter(|b| !exp.benches.iter().any(|x| x.name == *b)) {
        let names: Vec<&str> = exp.benches.iter().map(|x| x.name.as_str()).collect();
        let help = if b == "experiment" || b == "output" {
            "`--set` changes a benchmark's settings (`--set NAME.KEY=VALUE`), a host's (`--set host.NAME.ip=…`) or the Slurm allocation's; the experiment's own fields are edited in the file (a run's result directory: `expr run --output DIR`)".to_string()
        } else {
            crate::util::suggest::help_for(b, &names, "the benchmarks")
        };
        diags.push(
            Diag::error(Code::BadOverride, format!("no benchmark is named `{b}`"))
                .at(src, (0, b.len()).into())
                .label("unknown benchmark")
                .help(help),
        );
        return;
    }
    if key.is_empty() {
        diags.push(
            Diag::error(
                Code::BadOverride,
                "this `--set` names no setting before `=`",
            )
            .at(src, (0, 1).into())
            .label("no setting")
            .help("for example `--set batch-size=2048` or `--set recstore-e2e.steps=20`"),
        );
        return;
    }
    let at = bench_name.map_or(0, |b| b.len() + 1);
    let key_span: miette::SourceSpan = (at, key.len()).into();
    diags.push(
        Diag::error(
            Code::BadOverride,
            format!("no benchmark has a setting `{key}`"),
        )
        .at(src, key_span)
        .label("unknown")
        .help(crate::util::suggest::help_for(
            key,
            &candidates.iter().map(String::as_str).collect::<Vec<_>>(),
            "the settings",
        )),
    );
}

/// `--set host.NAME.PROPERTY=VALUE`: a host's ssh, ssh-port, ip, repo or gpus.
fn set_host(
    exp: &mut Experiment,
    src: &std::sync::Arc<Source>,
    rest: &str,
    got: Got,
    diags: &mut Diags,
) {
    let names: Vec<String> = exp.hosts.iter().map(|h| h.name.clone()).collect();
    let allocations = exp.allocations.clone();
    let Some((name, prop)) = rest.rsplit_once('.') else {
        diags.push(
            Diag::error(
                Code::BadOverride,
                format!("`host.{rest}` names no property"),
            )
            .at(src, (0, rest.len() + 5).into())
            .help("write `--set host.NAME.ip=10.0.2.190` (ssh, ssh-port, ip, repo or gpus)"),
        );
        return;
    };
    let Some(h) = exp.hosts.iter_mut().find(|h| h.name == name) else {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        diags.push(
            Diag::error(Code::BadOverride, format!("no host is named `{name}`"))
                .at(src, (5, name.len()).into())
                .help(crate::util::suggest::help_for(name, &refs, "the hosts")),
        );
        return;
    };
    let at = (6 + name.len(), prop.len());
    let Some(field) = schema_prop(schema::HOST_PROPS, "hosts", prop, src, at, diags) else {
        return;
    };
    let Some(g) = typed_set(src, diags, got, field, prop) else {
        return;
    };
    match (prop, g.val) {
        ("ssh", v) => {
            h.ssh = v.to_string();
            h.written.ssh = Some(g.loc);
        }
        ("ssh-port", Val::Int(p)) => {
            h.ssh_port = p;
            h.ssh_port_loc = Some(g.loc);
        }
        ("ip", v) => {
            h.ip = v.to_string();
            h.written.ip = Some(g.loc);
        }
        ("repo", v) => h.repo = v.to_string(),
        ("gpus", Val::Int(n)) => h.gpus = Some(n),
        // onto a node of an allocation: its login and address come from Slurm at run time
        ("slurm", v) => {
            let alloc = v.to_string();
            let Some(a) = allocations.iter().find(|a| a.name == alloc) else {
                let refs: Vec<&str> = allocations.iter().map(|a| a.name.as_str()).collect();
                diags.push(
                    Diag::error(
                        Code::BadOverride,
                        format!("no `slurm` allocation is named `{alloc}`"),
                    )
                    .at(src, (0, rest.len() + 5).into())
                    .help(crate::util::suggest::help_for(
                        &alloc,
                        &refs,
                        "the allocations",
                    )),
                );
                return;
            };
            let node = h.place.as_ref().map(|p| p.node).unwrap_or(0);
            h.ssh = "local".into();
            h.ip = format!("slurm:{alloc}:{node}");
            if h.repo.is_empty() || h.place.is_none() {
                h.repo = a.repo.clone();
            }
            h.place = Some(NodePlace {
                alloc,
                node,
                job: None,
                nodename: None,
                launch_args: Vec::new(),
                here: false,
                new_job: Vec::new(),
            });
        }
        ("node", Val::Int(n)) => match &mut h.place {
            Some(p) => {
                p.node = n;
                h.ip = format!("slurm:{}:{n}", p.alloc);
            }
            None => diags.push(
                Diag::error(
                    Code::BadOverride,
                    format!("host `{name}` is not on a Slurm allocation"),
                )
                .at(src, (0, rest.len() + 5).into())
                .help(format!("set `--set host.{name}.slurm=NAME` first")),
            ),
        },
        (p, v) => diags.push(
            Diag::error(
                Code::BadOverride,
                format!("`host.{name}.{p}` cannot be set to `{v}`"),
            )
            .at(src, (0, rest.len() + 5).into())
            .help("see `expr check --resolved` for the host's properties"),
        ),
    }
}

/// `got` as the schema's `field` says it is typed, or a diagnostic naming `--set NAME`.
fn typed_set(
    src: &std::sync::Arc<Source>,
    diags: &mut Diags,
    got: Got,
    field: &schema::Field,
    name: &str,
) -> Option<Got> {
    Decoder {
        src: src.clone(),
        diags,
        param_names: Default::default(),
    }
    .typed_as(got, field, name, "--set")
}

/// The schema's field `prop` of `props`, or a diagnostic at `at` in the `--set` argument
/// (`OWNER have no property `prop``, with the nearest name).
fn schema_prop(
    props: &'static [schema::Field],
    owner: &str,
    prop: &str,
    src: &std::sync::Arc<Source>,
    at: (usize, usize),
    diags: &mut Diags,
) -> Option<&'static schema::Field> {
    let found = props.iter().find(|f| f.name == prop);
    if found.is_none() {
        let names: Vec<&str> = props.iter().map(|f| f.name).collect();
        diags.push(
            Diag::error(
                Code::BadOverride,
                format!("{owner} have no property `{prop}`"),
            )
            .at(src, at.into())
            .help(crate::util::suggest::help_for(
                prop,
                &names,
                "the properties",
            )),
        );
    }
    found
}

/// `--set slurm.NAME.PROPERTY=VALUE`: a property of an allocation, which is declared when the
/// file has none of that name (so `--set slurm.test.nodes=1 --set host.local.slurm=test` moves a
/// local experiment onto a Slurm cluster).
fn set_slurm(
    exp: &mut Experiment,
    src: &std::sync::Arc<Source>,
    rest: &str,
    got: Got,
    diags: &mut Diags,
) {
    let Some((name, prop)) = rest.rsplit_once('.') else {
        return;
    };
    let at = (7 + name.len(), prop.len());
    let owner = "`slurm` allocations";
    let Some(field) = schema_prop(schema::SLURM_PROPS, owner, prop, src, at, diags) else {
        return;
    };
    if name.is_empty() {
        diags.push(
            Diag::error(Code::BadOverride, "`slurm..PROPERTY` names no allocation")
                .at(src, (0, rest.len() + 6).into())
                .help("write `--set slurm.NAME.nodes=2`"),
        );
        return;
    }
    let Some(g) = typed_set(src, diags, got, field, prop) else {
        return;
    };
    if !exp.allocations.iter().any(|a| a.name == name) {
        exp.allocations.push(Allocation {
            name: name.to_string(),
            partition: None,
            account: None,
            qos: None,
            time: None,
            nodes: 1,
            gpus_per_node: None,
            constraint: None,
            alloc_args: Vec::new(),
            srun_args: Vec::new(),
            repo: ".".into(),
            array: false,
            throttle: None,
            loc: g.loc.clone(),
        });
    }
    let Some(a) = exp.allocations.iter_mut().find(|a| a.name == name) else {
        return;
    };
    let text = g.val.to_string();
    let words = || text.split_whitespace().map(str::to_string).collect();
    match (prop, &g.val) {
        ("partition", _) => a.partition = Some(text.clone()),
        ("account", _) => a.account = Some(text.clone()),
        ("qos", _) => a.qos = Some(text.clone()),
        ("time", _) => a.time = Some(text.clone()),
        ("constraint", _) => a.constraint = Some(text.clone()),
        ("nodes", Val::Int(n)) => a.nodes = *n,
        ("gpus-per-node", Val::Int(n)) => a.gpus_per_node = Some(*n),
        ("throttle", Val::Int(n)) => a.throttle = Some(*n),
        ("alloc-args", _) => a.alloc_args = words(),
        ("srun-args", _) => a.srun_args = words(),
        ("repo", _) => a.repo = text.clone(),
        ("mode", _) if text == "array" || text == "allocation" => a.array = text == "array",
        (p, v) => diags.push(
            Diag::error(
                Code::BadOverride,
                format!("`slurm.{name}.{p}` cannot be set to `{v}`"),
            )
            .at(src, (0, rest.len() + 6).into())
            .help("mode is `allocation` or `array`; see `expr check --resolved`"),
        ),
    }
}

/// Parse `--only key=value` arguments: keys are `lane`, `repeat`, `bench` or a sweep axis.
pub fn filter(exp: &Experiment, args: &[String]) -> Result<Filter, Vec<Diag>> {
    let mut f = Filter::default();
    let mut errs = Vec::new();
    let mut keys: Vec<String> = vec!["lane".into(), "repeat".into(), "bench".into()];
    for b in &exp.benches {
        keys.extend(b.sweep.axis_names().map(str::to_string));
        keys.extend(b.settings.keys().cloned());
    }
    for a in args {
        let src = Source::new("--only", a.as_str());
        match a.split_once('=') {
            Some((k, v)) if keys.iter().any(|x| x == k) => f.0.push((k.to_string(), v.to_string())),
            Some((k, _)) => {
                let names: Vec<&str> = keys.iter().map(String::as_str).collect();
                errs.push(
                    Diag::error(
                        Code::BadOverride,
                        format!("`{k}` is not a lane, repeat, bench, sweep axis or setting"),
                    )
                    .at(&src, (0, k.len()).into())
                    .help(crate::util::suggest::help_for(k, &names, "the keys")),
                );
            }
            None => errs.push(
                Diag::error(Code::BadOverride, format!("`--only {a}` is not key=value"))
                    .at(&src, (0, a.len()).into())
                    .help("for example `--only lane=TorchRec-HBM` or `--only batch-size=2048`"),
            ),
        }
    }
    if errs.is_empty() {
        Ok(f)
    } else {
        Err(errs)
    }
}
