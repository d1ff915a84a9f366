//! The generic kind's plan: render the step templates with every value shell-quoted.

use std::collections::BTreeMap;

use minijinja::Value;

use crate::expand::Point;
use crate::kinds::bench::rules::{steps, var};
use crate::model::*;
use crate::plan::step::{teardown, Ctx, KindPlan, Phase, Ready, Step};
use crate::template::{self, Quote};

fn to_value(v: &Val) -> Value {
    match v {
        Val::Int(i) => Value::from(*i),
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
    m.insert("hosts".into(), Value::from_serialize(&hosts));
    m.insert("output".into(), Value::from(ctx.output.clone()));
    m.insert("name".into(), Value::from(ctx.exp.name.clone()));
    for (k, v) in extra {
        m.insert(k.to_string(), v.clone());
    }
    Value::from_serialize(&m)
}

pub fn plan(ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
    let (_, specs, _) = steps(bench);
    let mut out = KindPlan::default();
    let base = context(ctx, &bench.settings, &[]);
    for s in specs.iter().filter(|s| s.kind == StepKind::Build) {
        let host = ctx.host(&s.host);
        let mut st = Step::new(s.name.clone(), Phase::Build, host, &s.loc);
        st.shell = Some(
            template::render(&s.command, &base, Quote::Shell)
                .map_err(|e| format!("{:?}: {e}", s.command_loc))?,
        );
        if let Some(c) = &s.cwd {
            st.cwd = format!(
                "{}/{}",
                host.repo,
                template::render(c, &base, Quote::Plain)?
            );
        }
        st.timeout_s = s.timeout;
        out.setup.push(st);
    }
    for p in points {
        let mut steps = Vec::new();
        for s in specs.iter().filter(|s| s.kind != StepKind::Build) {
            if let Some(l) = &s.lanes {
                if !l.contains(&p.lane_name) {
                    continue;
                }
            }
            let host = ctx.host(&s.host);
            let outdir = ctx.out_path(host, &format!("outputs/{}", p.run_id));
            let c = context(
                ctx,
                &p.settings(),
                &[
                    ("run_id", Value::from(p.run_id.clone())),
                    ("outdir", Value::from(outdir)),
                    ("lane", Value::from(p.lane_name.clone())),
                    ("repeat", Value::from(p.repeat)),
                ],
            );
            let phase = if s.kind == StepKind::Serve {
                Phase::Serve
            } else {
                Phase::Launch
            };
            let mut st = Step::new(format!("{}-{}", s.name, p.run_id), phase, host, &s.loc);
            st.shell = Some(
                template::render(&s.command, &c, Quote::Shell)
                    .map_err(|e| format!("{:?}: {e}", s.command_loc))?,
            );
            if let Some(cwd) = &s.cwd {
                st.cwd = format!("{}/{}", host.repo, template::render(cwd, &c, Quote::Plain)?);
            }
            st.timeout_s = s.timeout;
            if s.kind == StepKind::Serve {
                st.background = true;
                st.ready = match (&s.ready_log, s.port) {
                    (Some(r), _) => Some(Ready::Log { regex: r.clone() }),
                    (None, Some(port)) => Some(Ready::Tcp {
                        ip: host.ip.clone(),
                        port,
                    }),
                    _ => None,
                };
            }
            steps.push(st);
        }
        teardown(&mut steps);
        out.points.push(steps);
    }
    Ok(out)
}
