//! The Plan: every step expr would run, per point and host, in execution order (the points are
//! the experiment's matrix, `model::expand`). Pure: builds data, runs nothing and writes
//! nothing.

use serde::Serialize;

use crate::kinds;
use crate::model::expand::{self, Filter, Point};
use crate::model::*;

pub mod profile;
pub mod remote;
pub mod render;
pub mod srun;
pub mod telemetry;
pub use crate::kind_api::step::*;

/// (setting, value, is-default).
pub type Resolved = (String, String, bool);

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub experiment: String,
    pub source: String,
    pub output: String,
    pub started: String,
    pub hosts: Vec<Host>,
    /// Files `run` writes before anything else (deployment.md first).
    pub files: Vec<PlannedFile>,
    /// Build and correctness tests: once per distinct (host, repo).
    pub setup: Vec<Step>,
    pub points: Vec<PlanPoint>,
    /// Resolved settings per bench, for the header.
    pub resolved: Vec<(String, Vec<Resolved>)>,
    /// run id → its place in `points`, made on first use ([`Plan::point`]).
    #[serde(skip)]
    pub by_id: crate::util::index::ById,
    /// The pools benches' points are dealt out over.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PlanPool>,
    /// run id → the pool member its steps run on, for a pool's points.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub placed: std::collections::BTreeMap<String, String>,
    /// run id → the same point planned on each other member of its pool (where `expr run
    /// --jobs` may run it when its own member is busy).
    #[serde(skip)]
    pub moves: std::collections::HashMap<String, Vec<(String, PlanPoint)>>,
    /// bench → its adaptive `repeat`: its repeats past `min` run only while the rule is unmet.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub adaptive: std::collections::BTreeMap<String, crate::model::Adaptive>,
    /// The Slurm allocations some host is on (commands.sh makes them as `expr run` does).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allocations: Vec<crate::model::Allocation>,
}

/// A pool a bench's points are dealt out over: a point on member `slot` mod n (`Point::slot`).
#[derive(Debug, Clone, Serialize)]
pub struct PlanPool {
    pub name: String,
    pub bench: String,
    pub members: Vec<String>,
}

impl Plan {
    /// Why a point may not run: a repeat past its bench's adaptive `min` runs only while the
    /// stopping rule is unmet (`expr run` decides; the plan and commands.sh cannot).
    pub fn conditional(&self, p: &PlanPoint) -> Option<String> {
        let a = self.adaptive.get(&p.bench)?;
        (p.repeat >= a.min).then(|| {
            format!(
                "adaptive: `expr run` runs it only while its group has not met {} (min={} max={})",
                a.rule(),
                a.min,
                a.max
            )
        })
    }

    /// The point of a run id: looked up, not searched (each of a run's events asks).
    pub fn point(&self, run_id: &str) -> Option<&PlanPoint> {
        self.by_id.get(&self.points, |p| &p.run_id, run_id)
    }
}

/// Build the plan of a validated experiment. Its memory is capped
/// ([`crate::util::memcap`]): each template it renders is bounded once, not per render.
pub fn plan(
    exp: &Experiment,
    source: &str,
    filter: &Filter,
    output: Option<&str>,
    started: chrono::DateTime<chrono::Local>,
) -> Result<Plan, String> {
    plan_resuming(exp, source, filter, output, started, Default::default())
}

/// The plan of a resumed run: `done` holds the points its journal finished ok ([`Ctx::done`]).
pub fn plan_resuming(
    exp: &Experiment,
    source: &str,
    filter: &Filter,
    output: Option<&str>,
    started: chrono::DateTime<chrono::Local>,
    done: std::sync::Arc<std::collections::HashSet<String>>,
) -> Result<Plan, String> {
    crate::util::memcap::capped(
        &format!("planning `{}`", crate::util::markup::one_line(&exp.name)),
        || plan_capped(exp, source, filter, output, started, done),
    )
}

/// The result directory: the one given, else the experiment's `output` rendered; refused where
/// it is no directory of its own.
fn output_of(exp: &Experiment, given: Option<&str>, started: &str) -> Result<String, String> {
    let output = match given {
        Some(o) => o.to_string(),
        None => {
            let ctx = minijinja::context! { name => exp.name.clone(), started => started };
            crate::model::template::render(&exp.output, &ctx, crate::model::template::Quote::Plain)?
        }
    };
    if let Some(why) = crate::parse::validate::output_problem(&output) {
        return Err(format!("{why} (output `{}`)", output.escape_debug()));
    }
    Ok(output)
}

fn plan_capped(
    exp: &Experiment,
    source: &str,
    filter: &Filter,
    output: Option<&str>,
    started: chrono::DateTime<chrono::Local>,
    done: std::sync::Arc<std::collections::HashSet<String>>,
) -> Result<Plan, String> {
    let started_s = started.to_rfc3339();
    let output = output_of(exp, output, &started_s)?;
    let ctx = Ctx {
        exp,
        output: output.clone(),
        started: started_s.clone(),
        deal: 1,
        on: None,
        done,
        rendered: Default::default(),
    };
    let points = expand::expand(exp, filter);
    // each matrix point's steps and rank check, as its bench's kind planned them
    let mut planned: Vec<Option<Planned>> =
        std::iter::repeat_with(|| None).take(points.len()).collect();
    let mut files = Vec::new();
    let mut setup = Vec::new();
    let mut setup_keys: std::collections::HashSet<(String, String, String)> = Default::default();
    let mut resolved = Vec::new();
    let mut pools = Vec::new();
    let mut placed = std::collections::BTreeMap::new();
    let mut moves = std::collections::HashMap::new();
    // each bench's points, in one pass (a pass over all points per bench made 20k benches
    // quadratic)
    let mut of_bench: Vec<Vec<usize>> = vec![Vec::new(); exp.benches.len()];
    for (i, p) in points.iter().enumerate() {
        if let Some(v) = of_bench.get_mut(p.bench) {
            v.push(i);
        }
    }
    for (bi, bench) in exp.benches.iter().enumerate() {
        let spec = kinds::of(bench.kind);
        resolved.push((bench.name.clone(), resolved_settings(spec, bench)));
        let mut idx: Vec<usize> = std::mem::take(&mut of_bench[bi]);
        idx.shrink_to_fit();
        if idx.is_empty() {
            continue;
        }
        let mine: Vec<&Point> = idx.iter().map(|&i| &points[i]).collect();
        let pool = exp.pool_of(bench);
        if let Some(pool) = pool {
            pools.push(PlanPool {
                name: pool.name.clone(),
                bench: bench.name.clone(),
                members: pool.members.clone(),
            });
        }
        let outs = plan_on_members(&ctx, spec, bench, pool, &mine)?;
        let n = outs.len();
        // each member's planning of each point
        let mut variants: Vec<Vec<Option<Planned>>> = Vec::with_capacity(n);
        for (m, out) in outs.into_iter().enumerate() {
            for f in out.files {
                if m == 0 || !files.iter().any(|g: &PlannedFile| g.path == f.path) {
                    files.push(f);
                }
            }
            for s in out.setup {
                // once per (host, repo, command): looked up (a search that made each key again
                // took a 1,000-host RecStore plan 6 s and 400 MiB)
                let key = (ctx.host(&s.host).ssh.clone(), s.cwd.clone(), s.exec_line());
                if setup_keys.insert(key) {
                    setup.push(s);
                }
            }
            let ranks = out.ranks.into_iter().chain(std::iter::repeat_with(|| None));
            variants.push(
                out.points
                    .into_iter()
                    .zip(ranks)
                    .map(|(steps, ranks)| Some((steps.into_boxed_slice(), ranks.map(Box::new))))
                    .collect(),
            );
        }
        let members = pool.map(|p| p.members.as_slice()).unwrap_or_default();
        let chosen = choose(&mine, variants, members, &mut placed, &mut moves);
        drop(mine);
        for (&i, c) in idx.iter().zip(chosen) {
            planned[i] = c;
        }
    }
    // the matrix point's fields move into the planned point, in the matrix's own memory (a
    // planned point is no larger: `collect` reuses the allocation), so a plan of 100k points
    // does not hold both
    let mut plan_points: Vec<PlanPoint> = points
        .into_iter()
        .zip(planned)
        .enumerate()
        .map(|(index, (p, planned))| {
            let (steps, ranks) = planned.unwrap_or_default();
            PlanPoint {
                ranks,
                index,
                bench: exp.benches[p.bench].name.clone(),
                run_id: p.run_id,
                lane: p.lane_name,
                axes: p.axes,
                repeat: p.repeat,
                steps,
            }
        })
        .collect();
    order(&exp.order, &mut plan_points);
    let moves = moved_points(&plan_points, moves);
    if !files.iter().any(|f| f.path == "deployment.md") {
        files.insert(
            0,
            PlannedFile {
                path: "deployment.md".into(),
                content: deployment_md(exp, &output, plan_points.len()),
            },
        );
    }
    // a record for a reader: a control character a name or a value holds (`\e[31m`, a NUL)
    // is written as an escape, as summary.md writes it, not obeyed by the terminal that shows it
    for f in files.iter_mut().filter(|f| f.path == "deployment.md") {
        if let std::borrow::Cow::Owned(shown) = crate::util::markup::controls_escaped(&f.content) {
            f.content = shown;
        }
    }
    Ok(Plan {
        by_id: Default::default(),
        experiment: exp.name.clone(),
        source: source.to_string(),
        output,
        started: started_s,
        hosts: hosts_of(exp),
        files,
        setup,
        points: plan_points,
        resolved,
        pools,
        placed,
        moves,
        adaptive: exp
            .benches
            .iter()
            .filter_map(|b| Some((b.name.clone(), b.adaptive?)))
            .collect(),
        allocations: exp.used_allocations(),
    })
}

/// The experiment's hosts, a node's with its allocation's srun arguments (as the run places
/// them).
fn hosts_of(exp: &Experiment) -> Vec<crate::model::Host> {
    let mut hosts = exp.hosts.clone();
    for p in hosts.iter_mut().filter_map(|h| h.place.as_mut()) {
        if let Some(a) = exp.allocations.iter().find(|a| a.name == p.alloc) {
            p.launch_args = a.srun_args.clone();
        }
    }
    hosts
}

/// The bench planned by its kind: once, or on each member of its pool (a point takes member
/// `slot` mod n; the others are where `--jobs` may move it).
fn plan_on_members(
    ctx: &Ctx,
    spec: &kinds::KindSpec,
    bench: &Bench,
    pool: Option<&Pool>,
    mine: &[&Point],
) -> Result<Vec<KindPlan>, String> {
    let Some(pool) = pool else {
        return Ok(vec![plan_bench(ctx, spec, bench, mine)?]);
    };
    let mut outs = Vec::new();
    for (k, m) in pool.members.iter().enumerate() {
        let ctx = Ctx {
            deal: pool.members.len(),
            on: Some(OnMember {
                index: k,
                pool: pool.name.clone(),
                member: m.clone(),
            }),
            ..ctx.clone()
        };
        let mut on = bench.clone();
        on.place_on(&pool.name, m);
        outs.push(plan_bench(&ctx, spec, &on, mine)?);
    }
    Ok(outs)
}

/// Each point's planning on its dealt member (`variants[member][point]`); a pool's point whose
/// own steps run on the pool is `placed` there, and its plannings on the other members are its
/// `moves`. A point whose steps do not run on the pool (a lane's steps on a fixed host, a pool
/// that only builds) is the same on every member: not placed, never moved.
fn choose(
    mine: &[&Point],
    mut variants: Vec<Vec<Option<Planned>>>,
    members: &[String],
    placed: &mut std::collections::BTreeMap<String, String>,
    moves: &mut std::collections::HashMap<String, Vec<(String, Planned)>>,
) -> Vec<Option<Planned>> {
    let n = variants.len();
    let hosts = |v: &Option<Planned>| {
        v.as_ref()
            .map(|(s, _)| s.iter().map(|s| s.host.clone()).collect::<Vec<_>>())
    };
    let mut chosen = Vec::with_capacity(mine.len());
    for (j, p) in mine.iter().enumerate() {
        let dealt = p.slot % n.max(1);
        let c = variants[dealt][j].take();
        let uses = n > 1 && {
            let mine_hosts = hosts(&c);
            (0..n).any(|m| m != dealt && hosts(&variants[m][j]) != mine_hosts)
        };
        if uses {
            placed.insert(p.run_id.clone(), members[dealt].clone());
            let others: Vec<(String, Planned)> = (0..n)
                .filter(|&m| m != dealt)
                .filter_map(|m| Some((members[m].clone(), variants[m][j].take()?)))
                .collect();
            moves.insert(p.run_id.clone(), others);
        }
        chosen.push(c);
    }
    chosen
}

/// The other members' plannings of a pool's points, as planned points like the chosen one.
fn moved_points(
    points: &[PlanPoint],
    mut moves: std::collections::HashMap<String, Vec<(String, Planned)>>,
) -> std::collections::HashMap<String, Vec<(String, PlanPoint)>> {
    points
        .iter()
        .filter_map(|p| {
            let v = moves.remove(&p.run_id)?;
            let v = v
                .into_iter()
                .map(|(member, (steps, ranks))| {
                    (
                        member,
                        PlanPoint {
                            steps,
                            ranks,
                            run_id: p.run_id.clone(),
                            bench: p.bench.clone(),
                            lane: p.lane.clone(),
                            axes: p.axes.clone(),
                            ..*p
                        },
                    )
                })
                .collect();
            Some((p.run_id.clone(), v))
        })
        .collect()
}

/// A matrix point's steps and rank check, as its bench's kind planned them.
type Planned = (Box<[Step]>, Option<Box<RankCheck>>);

/// A bench's points as its kind plans them, with their profilers, telemetry samplers and hosts'
/// environments.
fn plan_bench(
    ctx: &Ctx,
    spec: &kinds::KindSpec,
    bench: &Bench,
    mine: &[&Point],
) -> Result<KindPlan, String> {
    let exp = ctx.exp;
    let mut out = spec.plan(ctx, bench, mine)?;
    for (p, steps) in mine.iter().zip(out.points.iter_mut()) {
        if let Some(prof) = profile::of(bench, &p.lane_name, p.repeat) {
            profile::add(ctx, prof, &p.run_id, steps);
            steps.shrink_to_fit();
        }
        if exp.telemetry.is_some() {
            telemetry::add(exp, &p.run_id, steps);
            steps.shrink_to_fit();
        }
    }
    for s in out.setup.iter_mut().chain(out.points.iter_mut().flatten()) {
        host_env(ctx.host(&s.host), s);
    }
    Ok(out)
}

/// A bench's settings as the plan's header shows them: each with its value, where it came from
/// (`--set`), whether the kind does not apply it, and whether it is the default; then its sweeps.
fn resolved_settings(spec: &kinds::KindSpec, bench: &Bench) -> Vec<Resolved> {
    // what the command line changed says so
    let from_cli = |loc: Option<&Loc>| {
        if loc.is_some_and(|l| l.src.name == "--set") {
            "  (from --set)"
        } else {
            ""
        }
    };
    let overridden = spec.behaviour.overridden(bench);
    let mut settings: Vec<Resolved> = spec
        .settings
        .iter()
        .filter_map(|f| {
            bench.settings.get(f.name).map(|p| {
                let not_applied = overridden
                    .iter()
                    .find(|(n, _)| *n == f.name)
                    .map(|(_, why)| format!("  (not applied: {why})"))
                    .unwrap_or_default();
                (
                    f.name.to_string(),
                    format!("{}{}{not_applied}", p.val, from_cli(p.loc.as_ref())),
                    p.loc.is_none(),
                )
            })
        })
        .collect();
    for part in bench.sweep.parts() {
        let (name, values) = part.row();
        let cli = match part {
            crate::model::SweepPart::Axis(a) => from_cli(Some(&a.loc)),
            _ => "",
        };
        settings.push((name, format!("{values}{cli}"), false));
    }
    settings
}

/// A sweep point as a key: each axis with its value's text.
fn axes_key(axes: &[(String, Val)]) -> String {
    axes.iter().map(|(k, v)| format!("{k}={v}\u{1}")).collect()
}

/// The points in the experiment's `order`: as the matrix lists them (`matrix`), by repeat then
/// bench, sweep point and lane (`interleave`: lanes alternate, repeats spread over the
/// campaign), or a seeded shuffle (Fisher–Yates over SplitMix64: the same seed, the same order
/// on every machine). Each point's index follows its place.
pub fn order(order: &crate::model::Order, points: &mut [PlanPoint]) {
    match order.kind.as_str() {
        "interleave" => {
            // the sweep point's place in its bench's list, and the lane's, as first listed
            let mut sweep_at: std::collections::HashMap<(String, String), usize> =
                Default::default();
            let mut lane_at: std::collections::HashMap<(String, String), usize> =
                Default::default();
            let mut bench_at: std::collections::HashMap<String, usize> = Default::default();
            for p in points.iter() {
                let n = bench_at.len();
                bench_at.entry(p.bench.clone()).or_insert(n);
                let key = (p.bench.clone(), axes_key(&p.axes));
                let n = sweep_at.len();
                sweep_at.entry(key).or_insert(n);
                let n = lane_at.len();
                lane_at
                    .entry((p.bench.clone(), p.lane.clone()))
                    .or_insert(n);
            }
            points.sort_by_key(|p| {
                (
                    p.repeat,
                    bench_at[&p.bench],
                    sweep_at[&(p.bench.clone(), axes_key(&p.axes))],
                    lane_at[&(p.bench.clone(), p.lane.clone())],
                )
            });
        }
        "shuffle" => {
            let mut state = order.seed;
            let mut next = || {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            };
            for i in (1..points.len()).rev() {
                let j = (next() % (i as u64 + 1)) as usize;
                points.swap(i, j);
            }
            repeats_in_order(points);
        }
        _ => return,
    }
    for (i, p) in points.iter_mut().enumerate() {
        p.index = i;
    }
}

/// Each lane and sweep point's repeats in the places the shuffle gave the group, in their own
/// order: the group's warmup, planned with its first repeat, runs before the others (a
/// shuffle ran repeats 2 and 1 cold, then the warmup and repeat 0). Which group runs at each
/// place stays the shuffle's.
fn repeats_in_order(points: &mut [PlanPoint]) {
    let mut groups: std::collections::HashMap<(String, String, String), Vec<usize>> =
        Default::default();
    for (i, p) in points.iter().enumerate() {
        groups
            .entry((p.bench.clone(), p.lane.clone(), axes_key(&p.axes)))
            .or_default()
            .push(i);
    }
    // the point each place takes: a group's places, in order, take its points by repeat
    let mut src_of: Vec<usize> = (0..points.len()).collect();
    for places in groups.into_values() {
        let mut by_repeat = places.clone();
        by_repeat.sort_by_key(|&i| points[i].repeat);
        for (&at, from) in places.iter().zip(by_repeat) {
            src_of[at] = from;
        }
    }
    // applied cycle by cycle, in place
    let mut done = vec![false; points.len()];
    for start in 0..points.len() {
        let mut i = start;
        while !done[i] {
            done[i] = true;
            let from = src_of[i];
            if from == start {
                break;
            }
            points.swap(i, from);
            i = from;
        }
    }
}

/// A host's `env` applies to every command run on it (build, tests, servers, clients); what the
/// step sets itself wins.
fn host_env(host: &Host, s: &mut Step) {
    let runs = s.file.is_none() && s.stops.is_none() && s.phase != Phase::Collect;
    if !runs {
        return;
    }
    for (k, v) in &host.env {
        if !s.env.iter().any(|(sk, _)| sk == k) {
            s.env.push((k.clone(), v.clone()));
        }
    }
    // CUDA numbers the GPUs fastest first unless told otherwise; nvidia-smi, NVML, preflight's
    // GPU checks and the telemetry samplers number them by PCI bus. A step given GPUs by index
    // gets the same numbering (a host's or the step's own CUDA_DEVICE_ORDER stays).
    if s.env.iter().any(|(k, _)| k == "CUDA_VISIBLE_DEVICES")
        && !s.env.iter().any(|(k, _)| k == "CUDA_DEVICE_ORDER")
    {
        s.env
            .push(("CUDA_DEVICE_ORDER".into(), "PCI_BUS_ID".into()));
    }
}

/// deployment.md for kinds without a runbook format of their own: hosts, lanes and the matrix.
fn deployment_md(exp: &Experiment, output: &str, points: usize) -> String {
    let mut o = format!("experiment: {}\n", exp.name);
    if !exp.description.is_empty() {
        o.push_str(&format!("description: {}\n", exp.description));
    }
    o.push_str("hosts:\n");
    for h in &exp.hosts {
        o.push_str(&format!(
            "  - name={}, {}, ip={}, repo={}\n",
            h.name,
            h.login_text(),
            h.ip,
            h.repo
        ));
    }
    for b in &exp.benches {
        let lanes = b.lane_names();
        o.push_str(&format!(
            "{} {}: lanes={}, repeat={}{}\n",
            kinds::of(b.kind).node,
            b.name,
            lanes.join(", "),
            b.repeat,
            // the repeats past `min` run only while the rule is unmet
            b.adaptive
                .map(|a| format!(" (adaptive: min={}, {})", a.min, a.rule()))
                .unwrap_or_default()
        ));
        for part in b.sweep.parts() {
            let (name, values) = part.row();
            o.push_str(&format!("  {name}: {values}\n"));
        }
    }
    if !exp.order.is_default() {
        o.push_str(&format!("order: {}\n", exp.order.kind));
    }
    o.push_str(&format!("points: {points}\noutput: {output}\n"));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool's point planned on another member (where `--jobs` may move it) runs there, at that
    /// member's address, and warms that member up first though its group warmed up elsewhere.
    #[test]
    fn a_point_moved_to_another_member_warms_it_up_at_its_address() {
        let text = "experiment p\nhost a ssh=\"local\" ip=\"10.0.0.1\" repo=\"/tmp\"\nhost b ssh=\"local\" ip=\"10.0.0.2\" repo=\"/tmp\"\npool w \"a\" \"b\"\nbench t {\n    run \"echo at {{ hosts.w.ip }}\" host=w\n    warmup 1\n    repeat 3\n}\n";
        let loaded = crate::parse::load::load_str(
            "p.kdl",
            text,
            &crate::parse::validate::Options::default(),
        );
        assert!(!loaded.has_errors(), "{:?}", loaded.diags);
        let exp = loaded.experiment.unwrap();
        let plan = plan(
            &exp,
            text,
            &Filter::default(),
            Some("/tmp/o"),
            chrono::Local::now(),
        )
        .unwrap();
        let warm = |p: &PlanPoint| p.steps.iter().any(|s| s.phase == Phase::Warmup);
        // r0 on a, r1 on b (both first there: warmed), r2 on a again (not)
        let ids: Vec<(&str, &str, bool)> = plan
            .points
            .iter()
            .map(|p| (p.run_id.as_str(), plan.placed[&p.run_id].as_str(), warm(p)))
            .collect();
        assert_eq!(
            ids,
            [
                ("t_r0", "a", true),
                ("t_r1", "b", true),
                ("t_r2", "a", false)
            ]
        );
        let moved = &plan.moves["t_r2"];
        assert_eq!(moved.len(), 1);
        let (member, p) = &moved[0];
        assert_eq!(member, "b");
        assert!(warm(p), "moved to b, r2 warms b up");
        let launch = p.steps.iter().find(|s| s.phase == Phase::Launch).unwrap();
        assert_eq!(launch.host, "b");
        assert!(
            launch.exec_line().contains("at 10.0.0.2"),
            "{}",
            launch.exec_line()
        );
    }
}
