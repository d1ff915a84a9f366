//! `expr check`.

use std::io::Write;
use std::path::PathBuf;

use crate::model::diag::{self, Diag};
use crate::parse::load;
use crate::parse::validate::Options;
use crate::util::exit_codes;

use super::args::CheckFormat;
use super::diags::print_diags;

pub(super) fn check(files: &[PathBuf], format: CheckFormat, resolved: bool, opts: &Options) -> i32 {
    let mut all: Vec<Diag> = Vec::new();
    // what goes to stdout (the resolved files, the JSON), written at the end: a write that
    // fails (`> /dev/full`) is said and fails the check
    let mut out = String::new();
    // files that could not be read (missing, not UTF-8): not "checked"
    let mut unread = 0;
    for f in files {
        let loaded = load::load_file(f, opts);
        // (its own file: an Io error about a file it names, a config template, is a check's)
        if loaded.experiment.is_none()
            && loaded
                .diags
                .iter()
                .any(|d| d.code == diag::Code::Io && d.message.starts_with("cannot read `"))
        {
            unread += 1;
        }
        if resolved && !loaded.has_errors() {
            if let Some(exp) = &loaded.experiment {
                out.push_str(&format!(
                    "// {} (resolved)\n{}\n",
                    f.display(),
                    crate::parse::resolved::to_kdl(exp)
                ));
            }
        }
        let clean = !loaded.has_errors();
        all.extend(loaded.diags);
        if let (true, Some(exp)) = (clean, &loaded.experiment) {
            all.extend(rendered(exp, f));
        }
    }
    let printed = match format {
        CheckFormat::Json => {
            out.push_str(&diag::render_json(&all));
            out.push('\n');
            super::out::print(out.as_bytes())
        }
        CheckFormat::Text => {
            let printed = super::out::print(out.as_bytes());
            print_diags(&all);
            let errors = all.iter().any(Diag::is_error) || printed.is_err();
            let read = files.len() - unread;
            let _ = writeln!(
                std::io::stderr(),
                "{}: {} file{} checked{}, {}",
                if errors { "error" } else { "ok" },
                read,
                if read == 1 { "" } else { "s" },
                if unread > 0 {
                    format!(" ({unread} not read)")
                } else {
                    String::new()
                },
                diag::summary(&all)
            );
            printed
        }
    };
    if all.iter().any(Diag::is_error) {
        exit_codes::INVALID
    } else {
        printed.err().unwrap_or(exit_codes::OK)
    }
}

/// Every point's commands rendered as `plan` renders them: a template that parses but fails on
/// a point's values (a filter given the wrong arguments, a division by zero) is an error of
/// `check`, at its step, not first found by `plan` or `run` — the first such step of each
/// bench. The benches of command steps only, where the author's templates are: a kind's own
/// plan (thousands of RecStore clients) is `plan`'s work.
fn rendered(exp: &crate::model::Experiment, file: &std::path::Path) -> Vec<Diag> {
    let steps =
        |b: &crate::model::Bench| matches!(b.placement, crate::model::Placement::Steps { .. });
    if !exp.benches.iter().any(steps) {
        return Vec::new();
    }
    let mut exp = exp.clone();
    exp.benches.retain(steps);
    // a warmup round renders the run steps as the timed one does: not rendered again (1,000
    // points with `warmup 1000` made a million steps)
    for b in &mut exp.benches {
        if let Some(w) = b.settings.get_mut("warmup") {
            w.val = crate::model::Val::Int(0);
        }
        for l in &mut b.lanes {
            l.overrides.remove("warmup");
        }
    }
    // after a failure its bench is set aside and the rest planned again: each bench's first
    // failure is said, in as many plans as there are failures (at most 20: a file of a
    // thousand broken benches is not planned a thousand times)
    let mut out = Vec::new();
    while out.len() < 20 {
        match rendered_first(&exp, file) {
            // the commands render: none may carry a secret's value the file does not show
            Ok(plan) => {
                out.extend(secrets_rendered(&exp, &plan));
                out.extend(servers_on_other_ports(&exp, &plan));
                out.extend(templated_ports(&exp, &plan));
                out.extend(arrays_refused(&exp, &plan));
                break;
            }
            Err((d, bench)) => {
                out.push(d);
                match bench {
                    // the failing step set aside: the bench's other steps are rendered too (three
                    // broken steps were said one `check` at a time)
                    Some((i, Some(at))) => {
                        let removed = match &mut exp.benches[i].placement {
                            crate::model::Placement::Steps { steps, .. } => {
                                let before = steps.len();
                                steps.retain(|s| {
                                    s.command_loc.span.offset() != at && s.loc.span.offset() != at
                                });
                                steps.len() < before
                            }
                            _ => false,
                        };
                        if !removed {
                            exp.benches.remove(i);
                        }
                    }
                    Some((i, None)) => {
                        exp.benches.remove(i);
                    }
                    None => break,
                }
            }
        }
    }
    out
}

/// An array allocation (`mode="array"`) with a step of its points on a host off it: `expr run`
/// refuses it before anything runs; said here, at the allocation.
fn arrays_refused(exp: &crate::model::Experiment, plan: &crate::plan::Plan) -> Vec<Diag> {
    exp.used_allocations()
        .iter()
        .filter(|a| a.array)
        .filter_map(|a| {
            let why = crate::plan::srun::array_refusal(exp, plan, a).err()?;
            let (msg, help) = why.split_once("; ").unwrap_or((why.as_str(), ""));
            let mut d = Diag::error(diag::Code::InvalidValue, msg.to_string())
                .at(&a.loc.src, a.loc.span)
                .label("an array");
            d.help = Some(help.to_string());
            Some(d)
        })
        .collect()
}

/// A step whose rendered command holds a secret's value that its template does not write out
/// (`{{ 'SECRET' ~ 'VALUE1' }}`, a value passed in from a param): the plan, commands.sh and
/// `ps` show it. A warning at the step, as `secret-elsewhere` is where the file writes it.
pub(super) fn secrets_rendered(
    exp: &crate::model::Experiment,
    plan: &crate::plan::Plan,
) -> Vec<Diag> {
    let secrets = exp.secrets_to_find();
    if secrets.is_empty() {
        return Vec::new();
    }
    let mut said = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for s in plan.points.iter().flat_map(|p| p.steps.iter()) {
        let Some(loc) = &s.origin else {
            continue;
        };
        let text = s.command_line();
        for (name, value) in &secrets {
            // written out in the file: `secret-elsewhere` said it there
            let written = loc
                .src
                .slice(loc.span.offset(), loc.span.len())
                .contains(value);
            if !text.contains(value) || written || !said.insert((loc.span.offset(), *name)) {
                continue;
            }
            out.push(
                Diag::warning(
                    diag::Code::SecretElsewhere,
                    format!("a command of this step renders the value of the secret `{name}`: the plan, commands.sh, the journal and `ps` show it"),
                )
                .at(&loc.src, loc.span)
                .label("renders a secret's value")
                .help(format!("use the variable instead (`${name}` in the command); the value stays in `env`")),
            );
        }
    }
    out
}

/// A server whose rendered command names a port (`--port N`, `-p N`, `HOST:N`) and never the
/// one its readiness waits on (`port=`): a `--set port=…`, a lane or a sweep changed the
/// command's port and not `port=`, a number. The point would fail "not ready" after its
/// timeout; said once a step, with the first point where it is so.
pub(super) fn servers_on_other_ports(
    exp: &crate::model::Experiment,
    plan: &crate::plan::Plan,
) -> Vec<Diag> {
    let Ok(re) = regex::Regex::new(r"(?:--port[= ]+|-p +|[0-9a-zA-Z\]]:)([0-9]{2,5})\b") else {
        return Vec::new();
    };
    // `{{ port }}`, `{{ server_port }}`: a value the command takes whose name says port
    let Ok(tag) = regex::Regex::new(r"\{\{-?\s*([A-Za-z0-9_]*port[A-Za-z0-9_]*)\s*-?\}\}") else {
        return Vec::new();
    };
    let mut said = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    // the author's own steps (a kind's servers are its planner's)
    let authored = |bench: &str| {
        exp.benches.iter().any(|b| {
            b.name == bench && matches!(b.placement, crate::model::Placement::Steps { .. })
        })
    };
    // servers whose `port=` is a template naming a value the command takes too
    // (`--admin-port {{ admin }}` … `port="{{ admin }}"`): the two follow each other
    let Ok(names) = regex::Regex::new(r"\{\{-?\s*([A-Za-z0-9_.]+)\s*-?\}\}") else {
        return Vec::new();
    };
    let templated: std::collections::HashSet<usize> = authored_steps(exp)
        .filter(|s| s.port_template.is_some())
        .map(|s| s.loc.span.offset())
        .collect();
    let follows: std::collections::HashSet<usize> = authored_steps(exp)
        .filter(|s| {
            s.port_template.as_deref().is_some_and(|t| {
                let used: Vec<&str> = names
                    .captures_iter(&s.command)
                    .filter_map(|c| c.get(1).map(|m| m.as_str()))
                    .collect();
                names
                    .captures_iter(t)
                    .filter_map(|c| c.get(1).map(|m| m.as_str()))
                    .any(|n| used.contains(&n))
            })
        })
        .map(|s| s.loc.span.offset())
        .collect();
    for p in plan.points.iter().filter(|p| authored(&p.bench)) {
        for s in &p.steps {
            if s.origin
                .as_ref()
                .is_some_and(|l| follows.contains(&l.span.offset()))
            {
                continue;
            }
            // the port its readiness waits on (`port=`), or that it holds beside a log line
            let port = match (s.ready.as_deref(), s.listens.as_deref()) {
                (Some(crate::kind_api::step::Ready::Tcp { port, .. }), _) => *port,
                (_, Some((_, port))) => *port,
                _ => continue,
            };
            let Some(loc) = &s.origin else {
                continue;
            };
            let text = s.command_line();
            let mut named: Vec<i64> = re
                .captures_iter(&text)
                .filter_map(|c| c.get(1)?.as_str().parse().ok())
                .collect();
            if let Some(bench) = exp.benches.iter().find(|b| b.name == p.bench) {
                // the command as written (not the node: its `port="{{ … }}"` is no port the
                // command takes)
                let node = loc.src.slice(loc.span.offset(), loc.span.len());
                let written = match &bench.placement {
                    crate::model::Placement::Steps { steps, .. } => steps
                        .iter()
                        .find(|x| x.loc.span.offset() == loc.span.offset())
                        .map_or(node, |x| x.command.as_str()),
                    _ => node,
                };
                for c in tag.captures_iter(written) {
                    let name = &c[1];
                    // a sweep axis or a lane's value, else the param's (after `--set`)
                    let dashed = name.replace('_', "-");
                    let param = |key: &str| match &bench.placement {
                        crate::model::Placement::Steps { params, .. } => params
                            .iter()
                            .find(|(k, _)| k == key)
                            .map(|(_, v)| v.val.to_string()),
                        _ => None,
                    };
                    let value = p
                        .setting_text(bench, name)
                        .or_else(|| p.setting_text(bench, &dashed))
                        .or_else(|| param(name))
                        .or_else(|| param(&dashed));
                    if let Some(v) = value.and_then(|v| v.trim().parse::<i64>().ok()) {
                        named.push(v);
                    }
                }
            }
            if named.is_empty() || named.contains(&port) || !said.insert(loc.span.offset()) {
                continue;
            }
            out.push(
                Diag::warning(
                    diag::Code::InvalidValue,
                    format!(
                        "this server's command names port {} at point {}, but its readiness waits on port {port} (`port=`)",
                        named[0], p.run_id
                    ),
                )
                .at(&loc.src, loc.span)
                .label("command and port= differ")
                .help(if templated.contains(&loc.span.offset()) {
                    "`port=` renders to a value the command does not listen on: name the one it takes (`port=\"{{ port }}\"` beside `--port {{ port }}`)"
                } else {
                    "a `--set`, lane or sweep that changes the command's port leaves a number in `port=`: write `port=\"{{ port }}\"` (the value the command takes) and the two stay the same"
                }),
            );
        }
    }
    out
}

/// The port rules for a server whose `port=` is a template, on what it renders to at each
/// point (the file's numbers are checked as written): not the host's ssh port (or 22), and
/// not another server's port on the same host in the same point. Said once a server.
pub(super) fn templated_ports(
    exp: &crate::model::Experiment,
    plan: &crate::plan::Plan,
) -> Vec<Diag> {
    use crate::kind_api::step::Ready;
    let specs: Vec<&crate::model::StepSpec> = authored_steps(exp)
        .filter(|s| s.port_template.is_some())
        .collect();
    if specs.is_empty() {
        return Vec::new();
    }
    let spec_of = |s: &crate::kind_api::step::Step| {
        let at = s.origin.as_ref()?.span.offset();
        specs.iter().find(|x| x.loc.span.offset() == at).copied()
    };
    let mut said = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for p in &plan.points {
        let mut held: Vec<(&str, i64, &crate::kind_api::step::Step)> = Vec::new();
        for s in &p.steps {
            let port = match (s.ready.as_deref(), s.listens.as_deref()) {
                (Some(Ready::Tcp { port, .. }), _) => *port,
                (_, Some((_, port))) => *port,
                _ => continue,
            };
            let spec = spec_of(s);
            // two host names of one machine share its ports
            let machine = exp
                .machine_of(&s.host)
                .map_or(s.host.as_str(), |(m, _)| m.name.as_str());
            let other = held.iter().find(|(h, x, _)| *h == machine && *x == port);
            let ssh = exp.host(&s.host).is_some_and(|h| port == h.ssh_port) || port == 22;
            // the templated one of the two is where it is said
            let clash = other.and_then(|(_, _, first)| spec.or_else(|| spec_of(first)));
            let problem = match (spec, clash) {
                (Some(spec), _) if ssh => Some((
                    spec,
                    diag::Code::PortIsSshPort,
                    format!(
                        "server `{}` waits on port {port} at point {}, {}",
                        spec.name,
                        p.run_id,
                        if exp.host(&s.host).is_some_and(|h| port == h.ssh_port) {
                            format!("the ssh port of `{}`", s.host)
                        } else {
                            "ssh's own port (an sshd may listen there)".to_string()
                        }
                    ),
                )),
                (_, Some(spec)) => Some((
                    spec,
                    diag::Code::PortConflict,
                    match other.map(|(_, _, first)| first.host.as_str()) {
                        Some(first) if first != s.host => format!(
                            "two servers on one machine (`{first}` and `{}`) take port {port} at point {}",
                            s.host, p.run_id
                        ),
                        _ => format!(
                            "two servers on `{}` take port {port} at point {}",
                            s.host, p.run_id
                        ),
                    },
                )),
                _ => None,
            };
            held.push((machine, port, s));
            if let Some((spec, code, msg)) = problem {
                if said.insert(spec.loc.span.offset()) {
                    let at = spec.port_loc.as_ref().unwrap_or(&spec.loc);
                    out.push(
                        Diag::error(code, msg)
                            .at(&at.src, at.span)
                            .label("rendered here")
                            .help("`expr plan` shows each point's port; give each server a port of its own, not the ssh port"),
                    );
                }
            }
        }
    }
    out
}

/// Every step an author wrote (`build`, `serve`, `run` of the generic benches), in file order.
fn authored_steps(exp: &crate::model::Experiment) -> impl Iterator<Item = &crate::model::StepSpec> {
    exp.benches
        .iter()
        .filter_map(|b| match &b.placement {
            crate::model::Placement::Steps { steps, .. } => Some(steps),
            _ => None,
        })
        .flatten()
}

/// Where a command that cannot be rendered is: its bench's index, and the offset its step is
/// written at (none where the error names no step).
type FailedAt = (usize, Option<usize>);

/// The plan, or the first command of the experiment that cannot be rendered, with the index of
/// its bench where the error names its step (and where that step is written).
#[allow(clippy::result_large_err)] // made once per failing step; boxing buys nothing
fn rendered_first(
    exp: &crate::model::Experiment,
    file: &std::path::Path,
) -> Result<crate::plan::Plan, (Diag, Option<FailedAt>)> {
    let e = match crate::plan::plan(
        exp,
        &file.display().to_string(),
        &Default::default(),
        None,
        chrono::Local::now(),
    ) {
        Ok(plan) => return Ok(plan),
        Err(e) => e,
    };
    let d = Diag::error(
        diag::Code::TemplateRender,
        format!("a command cannot be rendered: {e}"),
    );
    // the place a kind's plan names first (`file:line:col: …`), where it is a step's
    let at = exp
        .benches
        .iter()
        .enumerate()
        .filter_map(|(i, b)| match &b.placement {
            crate::model::Placement::Steps { steps, .. } => Some(steps.iter().map(move |s| (i, s))),
            _ => None,
        })
        .flatten()
        .flat_map(|(i, s)| {
            [Some(&s.command_loc), Some(&s.loc), s.port_loc.as_ref()]
                .into_iter()
                .flatten()
                .map(move |l| (i, l))
        })
        .find_map(|(i, l)| Some((i, l, e.strip_prefix(&format!("{l:?}: "))?)));
    // `{{ hosts.locl.ip }}`: a host the experiment has not, said by name where it is written
    if let Some((i, loc, _)) = at.filter(|(_, _, rest)| rest.contains("undefined")) {
        if let Some(d) = unknown_host_in(exp, loc) {
            return Err((d, Some((i, Some(loc.span.offset())))));
        }
    }
    Err(match at {
        Some((i, loc, rest)) => (
            Diag::error(
                diag::Code::TemplateRender,
                if rest.starts_with("`port` ") {
                    format!("a server's port cannot be rendered: {rest}")
                } else {
                    format!("a command cannot be rendered: {rest}")
                },
            )
            .at(&loc.src, loc.span)
            .label("fails here")
            .help("`expr plan` prints every command; a value that only some points take is best checked in the template (`{% if x != 0 %}…{% endif %}`) or left out of the sweep"),
            Some((i, Some(loc.span.offset()))),
        ),
        None => (d, None),
    })
}

/// The first `hosts.NAME` in the text at `loc` that names no host of the experiment.
fn unknown_host_in(exp: &crate::model::Experiment, loc: &crate::model::Loc) -> Option<Diag> {
    let text = loc.src.slice(loc.span.offset(), loc.span.len());
    let names: Vec<&str> = exp.hosts.iter().map(|h| h.name.as_str()).collect();
    let mut from = 0;
    while let Some(k) = text[from..].find("hosts.") {
        let at = from + k + "hosts.".len();
        from = at;
        // a name starts the word: not `myhosts.x`
        let before = text[..at - "hosts.".len()].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = text[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || names.contains(&name.as_str()) {
            continue;
        }
        let help = match crate::util::suggest::did_you_mean(&name, names.iter().copied()) {
            Some(s) => format!("did you mean `hosts.{s}`?"),
            None => format!(
                "the hosts are {}",
                crate::util::markup::ticked(names.iter())
            ),
        };
        return Some(
            Diag::error(
                diag::Code::TemplateUndefined,
                format!("template uses `hosts.{name}`, but the experiment has no host `{name}`"),
            )
            .at(&loc.src, (loc.span.offset() + at, name.len()).into())
            .label("no such host")
            .help(help),
        );
    }
    None
}
