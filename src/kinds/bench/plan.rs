//! The generic kind's plan: render the step templates with every value shell-quoted.

use std::collections::BTreeMap;

use minijinja::Value;

use crate::kind_api::step::{teardown, Ctx, KindPlan, Phase, Ready, Step};
use crate::kinds::bench::rules::{steps, var};
use crate::kinds::bench::words::Piece;
use crate::model::expand::Point;
use crate::model::template::{self, Quote};
use crate::model::*;

fn to_value(v: &Val) -> Value {
    match v {
        Val::Int(i) => Value::from(*i),
        // a `#inf` or `#nan` the file writes reaches the command as written (`inf`); only an
        // infinity the template computes (`1 / 0`) is refused
        Val::Float(f) if !f.is_finite() => Value::from(f.to_string()),
        Val::Float(f) => Value::from(*f),
        Val::Str(s) => Value::from(s.clone()),
        Val::Bool(b) => Value::from(*b),
    }
}

fn context(ctx: &Ctx, settings: &Params, extra: &[(&str, Value)]) -> Value {
    let mut m: BTreeMap<String, Value> = BTreeMap::new();
    for (k, p) in settings {
        m.insert(var(k), to_value(&p.val));
    }
    let hosts: BTreeMap<String, BTreeMap<&str, String>> = ctx
        .exp
        .hosts
        .iter()
        .map(|h| {
            (
                h.name.clone(),
                BTreeMap::from([("ip", h.ip.clone()), ("repo", h.repo.clone())]),
            )
        })
        .collect();
    let mut hosts = hosts;
    // `{{ hosts.POOL.ip }}`: the member the pool's steps are placed on in this planning
    if let Some(on) = &ctx.on {
        if let Some(h) = hosts.get(&on.member).cloned() {
            hosts.insert(on.pool.clone(), h);
        }
    }
    m.insert("hosts".into(), Value::from_serialize(&hosts));
    m.insert("output".into(), Value::from(ctx.output.clone()));
    m.insert("name".into(), Value::from(ctx.exp.name.clone()));
    for (k, v) in extra {
        m.insert(k.to_string(), v.clone());
    }
    Value::from_serialize(&m)
}

/// One planned step of a point from its spec.
/// One planned step of a point (its GPU block from the point's `slot`).
fn step(
    ctx: &Ctx,
    bench: &Bench,
    p: &Point,
    s: &StepSpec,
    phase: Phase,
    name: &str,
    direct: bool,
) -> Result<Step, String> {
    let _ = bench;
    let host = ctx.host(&s.host);
    let outdir = ctx.out_path(host, &format!("outputs/{}", p.run_id));
    let c = context(
        ctx,
        &p.settings(),
        &[
            ("run_id", Value::from(p.run_id.clone())),
            ("outdir", Value::from(outdir)),
            // the result directory as this host's step sees it (absolute on a local host: the
            // step runs in its repo, not in expr's cwd)
            ("output", Value::from(ctx.out_path(host, ""))),
            ("lane", Value::from(p.lane_name.clone())),
            ("repeat", Value::from(p.repeat)),
        ],
    );
    let mut st = Step::new(format!("{name}-{}", p.run_id), phase, host, &s.loc);
    // without a shell only here: over ssh or srun a shell runs the command anyway, and its
    // spawn time is then measured and subtracted like any other
    let argv = if direct {
        let said =
            |e: super::words::NeedsShell| format!("{:?}: `{}` {}", s.command_loc, s.name, e.said());
        let words = super::words::template_words(&s.command).map_err(said)?;
        // text as written, each tag rendered alone as one value (the shell's reading quotes it)
        let argv: Vec<String> = words
            .iter()
            .map(|w| {
                w.iter()
                    .map(|p| match p {
                        Piece::Lit(t) => Ok(t.clone()),
                        Piece::Tag(t) => template::render(t, &c, Quote::Arg),
                    })
                    .collect::<Result<String, String>>()
            })
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{:?}: {e} (point {})", s.command_loc, p.run_id))?;
        // each argument whole: two tags of 70 KiB in one word make one argument over the limit
        if let Some(a) = argv
            .iter()
            .find(|a| a.len() > crate::model::template::MAX_COMMAND)
        {
            return Err(format!(
                "{:?}: an argument renders to {} bytes, more than a command line takes (at most {}: Linux refuses an argument over 128 KiB) (point {})",
                s.command_loc,
                a.len(),
                crate::model::template::MAX_COMMAND,
                p.run_id
            ));
        }
        // a program a value names: known only now (`{{ tool }} …` with tool = "time")
        if words[0].iter().any(|p| matches!(p, Piece::Tag(_))) {
            super::words::program(&argv[0], false).map_err(said)?;
        }
        Some(argv)
    } else {
        None
    };
    match argv {
        Some(argv) if host.runs_here() => {
            st.argv = argv;
            st.direct = true;
        }
        _ => {
            st.shell = Some(
                template::render(&s.command, &c, Quote::Shell)
                    .map_err(|e| format!("{:?}: {e} (point {})", s.command_loc, p.run_id))?,
            )
        }
    }
    if let Some(cwd) = &s.cwd {
        let cwd = template::render(cwd, &c, Quote::Plain)
            .map_err(|e| format!("{:?}: {e} (point {}, its `cwd`)", s.loc, p.run_id))?;
        st.cwd = format!("{}/{cwd}", host.repo);
    }
    st.timeout_s = s.timeout;
    // a run step's accepted exits hold for its warmup rounds too (hyperfine's `-i` does)
    if let Some(x) = &s.exit_ok {
        st.extra_mut().exit_ok = Some(x.clone());
    }
    let bytes =
        st.shell.as_ref().map_or(0, String::len) + st.argv.iter().map(String::len).sum::<usize>();
    // (and what a step holds besides its command: a warmup round's `echo` is a step too)
    ctx.render_budget(bytes + 128)
        .map_err(|e| format!("{:?}: {e} (at point {})", s.command_loc, p.run_id))?;
    if let Some(n) = s.gpus.filter(|n| *n > 0) {
        // the host's GPUs dealt out in blocks of n, point after point (checked: n ≤ gpus=)
        let blocks = (host.gpus.unwrap_or(n) / n).max(1);
        // on a pool, its place among its member's points
        let first = ((p.slot / ctx.deal.max(1)) as i64 % blocks) * n;
        st.env.push((
            "CUDA_VISIBLE_DEVICES".into(),
            crate::kind_api::step::cuda_devices(first, n),
        ));
    }
    if s.kind == StepKind::Serve {
        st.background = true;
        let port = match &s.port_template {
            Some(t) => Some(rendered_port(t, &c, s, p)?),
            None => s.port,
        };
        if let (Some(_), Some(port)) = (&s.ready_log, port) {
            st.listens = Some(Box::new((host.ip.clone(), port)));
        }
        st.ready = match (&s.ready_log, port) {
            (Some(r), _) => Some(Ready::Log { regex: r.clone() }),
            (None, Some(port)) => Some(Ready::Tcp {
                ip: host.ip.clone(),
                port,
            }),
            _ => None,
        }
        .map(Box::new);
    }
    Ok(st)
}

/// A server's `port="{{ … }}"` for one point: the number it renders to, in 1..65535.
fn rendered_port(
    t: &str,
    c: &minijinja::Value,
    s: &crate::model::StepSpec,
    p: &Point,
) -> Result<i64, String> {
    let at = s.port_loc.as_ref().unwrap_or(&s.loc);
    let text = template::render(t, c, Quote::Plain)
        .map_err(|e| format!("{at:?}: {e} (point {}, its `port`)", p.run_id))?;
    // the digits as the command takes them: `" 80 "`, `"+80"` or `"080"` would wait on 80
    // while the command gets the text as written
    match text.parse::<i64>() {
        Ok(n) if (1..=65535).contains(&n) && n.to_string() == text => Ok(n),
        _ => Err(format!(
            "{at:?}: `port` is {text:?} at point {}: not a port in 1..65535",
            p.run_id
        )),
    }
}

/// A `collect "csv"`/`"json"` reads its file in the point's output directory here: what a
/// step on an ssh host wrote into `{{ outdir }}` there is copied back first, one collect step
/// per such host (it ran on, and was read from, nowhere: no data).
fn fetch_outputs(ctx: &Ctx, bench: &Bench, p: &Point, steps: &mut Vec<Step>) {
    let reads_a_file = matches!(
        &bench.placement,
        crate::model::Placement::Steps { collect: Some(c), .. } if c.path.is_some()
    );
    if !reads_a_file {
        return;
    }
    let mut remote: Vec<(String, crate::model::Loc)> = Vec::new();
    for s in steps.iter() {
        let host = ctx.host(&s.host);
        if !host.is_local() && !remote.iter().any(|(h, _)| *h == s.host) {
            remote.push((s.host.clone(), s.origin.clone().unwrap_or_default()));
        }
    }
    let rel = format!("outputs/{}", p.run_id);
    for (name, loc) in remote {
        let host = ctx.host(&name);
        let mut c = Step::new(format!("collect-{}", p.run_id), Phase::Collect, host, &loc);
        let remote = crate::kind_api::step::in_repo(host, &ctx.out_path(host, &rel));
        c.argv = crate::kind_api::step::pull_argv(
            host,
            &format!("{remote}/"),
            format!("{}/{rel}/", ctx.output),
        );
        c.cwd = ".".into();
        steps.push(c);
    }
}

pub fn plan(ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
    let (_, specs, _) = steps(bench);
    let mut out = KindPlan::with_points(points.len());
    // the builds, then the correctness tests (the runner stops before any point when one fails)
    let setup = specs
        .iter()
        .filter(|s| s.kind == StepKind::Build)
        .chain(specs.iter().filter(|s| s.kind == StepKind::Test));
    for s in setup {
        let host = ctx.host(&s.host);
        let base = context(
            ctx,
            &bench.settings,
            &[("output", Value::from(ctx.out_path(host, "")))],
        );
        let phase = if s.kind == StepKind::Test {
            Phase::Test
        } else {
            Phase::Build
        };
        let mut st = Step::new(s.name.clone(), phase, host, &s.loc);
        st.shell = Some(
            template::render(&s.command, &base, Quote::Shell)
                .map_err(|e| format!("{:?}: {e}", s.command_loc))?,
        );
        if let Some(c) = &s.cwd {
            let cwd = template::render(c, &base, Quote::Plain)
                .map_err(|e| format!("{:?}: {e} (its `cwd`)", s.loc))?;
            st.cwd = format!("{}/{cwd}", host.repo);
        }
        st.timeout_s = s.timeout;
        out.setup.push(st);
    }
    // `warmup-scope "group"`: only the first planned repeat of a lane and sweep point warms up
    // (whether each point is its group's first, decided before any step is made: the map of
    // groups is gone before the plan's steps take their memory)
    // — on a pool, of its group's points dealt to one member, where its lane's steps run on
    // the pool: each member warms up
    let on_pool = |p: &Point| {
        ctx.on.as_ref().is_some_and(|o| {
            specs.iter().any(|s| {
                s.host == o.member
                    && !matches!(s.kind, StepKind::Build | StepKind::Test)
                    && s.lanes.as_ref().is_none_or(|l| l.contains(&p.lane_name))
            })
        })
    };
    let first_of: Vec<bool> = {
        let key = |p: &Point| {
            let member = if on_pool(p) {
                p.slot % ctx.deal.max(1)
            } else {
                0
            };
            (p.lane, member, format!("{:?}", p.axes))
        };
        // the group's first repeat, and (resumed) the first of those that run now: the earlier
        // process warmed the group up, this one is cold
        type Firsts = (i64, Option<i64>);
        let mut first: std::collections::HashMap<(usize, usize, String), Firsts> =
            Default::default();
        for p in points {
            let now = (!ctx.done.contains(&p.run_id)).then_some(p.repeat);
            let e = first.entry(key(p)).or_insert((p.repeat, now));
            e.0 = e.0.min(p.repeat);
            e.1 = match (e.1, now) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        points
            .iter()
            .map(|p| {
                first
                    .get(&key(p))
                    .is_some_and(|(all, now)| *all == p.repeat || *now == Some(p.repeat))
            })
            .collect()
    };
    for (slot, p) in points.iter().enumerate() {
        let per_point = p.get("warmup-scope").and_then(Val::as_str) == Some("point");
        // a point planned on another pool member than its own (where `--jobs` may move it)
        // warms that member up
        let first_of_group = first_of[slot] || (ctx.moved(p.slot) && on_pool(p));
        let warmup = if per_point || first_of_group {
            p.get("warmup").and_then(Val::as_int).unwrap_or(0).max(0)
        } else {
            0
        };
        let direct = p.get("shell").and_then(Val::as_str) == Some("none");
        let mine = |kind: StepKind| {
            specs.iter().filter(move |s| {
                s.kind == kind && s.lanes.as_ref().is_none_or(|l| l.contains(&p.lane_name))
            })
        };
        let mut steps = Vec::new();
        for s in mine(StepKind::Serve) {
            steps.push(step(ctx, bench, p, s, Phase::Serve, &s.name, false)?);
        }
        // warmup rounds, each after its prepare steps; then the timed run and its cleanup
        for k in 0..=warmup {
            let round = if k < warmup {
                format!("-w{k}")
            } else {
                String::new()
            };
            for s in mine(StepKind::Prepare) {
                steps.push(step(
                    ctx,
                    bench,
                    p,
                    s,
                    Phase::Prepare,
                    &format!("{}{round}", s.name),
                    false,
                )?);
            }
            let (phase, prefix) = if k < warmup {
                (Phase::Warmup, format!("warmup{k}-"))
            } else {
                (Phase::Launch, String::new())
            };
            for s in mine(StepKind::Run) {
                steps.push(step(
                    ctx,
                    bench,
                    p,
                    s,
                    phase,
                    &format!("{prefix}{}", s.name),
                    direct,
                )?);
            }
        }
        for s in mine(StepKind::Cleanup) {
            steps.push(step(ctx, bench, p, s, Phase::Cleanup, &s.name, false)?);
        }
        fetch_outputs(ctx, bench, p, &mut steps);
        teardown(&mut steps);
        out.push_point(steps);
    }
    Ok(out)
}
