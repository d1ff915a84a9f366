//! Rendering a Plan: readable text, JSON, and a runnable shell script (commands.sh).

use std::fmt::Write;

use crate::kind_api::step::{MARK_VAR, RESULT_DIR_VAR};
use crate::plan::{by_host, remote_line, remote_line_with, Phase, Plan, Ready, Step};
use crate::util::shell;

fn ready_text(r: &Ready) -> String {
    match r {
        Ready::Tcp { ip, port } => format!("tcp {ip}:{port}"),
        Ready::Log { regex } => format!("log /{regex}/"),
        Ready::Alive { ms } => format!("still running after {ms} ms (no port)"),
    }
}

fn step_text(o: &mut String, plan: &Plan, s: &Step, indent: &str) {
    match (&s.file, &s.stops) {
        (Some(f), _) => {
            let _ = write!(o, "{indent}[{}] write {}", s.phase.name(), f.path);
            if let Some(alts) = s
                .schema
                .as_ref()
                .map(|c| &c.alternatives)
                .filter(|a| !a.is_empty())
            {
                let names: Vec<&str> = alts.iter().map(|(n, _)| n.as_str()).collect();
                let _ = write!(
                    o,
                    "\n{indent}    # or its {} layout, where the checkout's schema takes that one (checked at preflight)",
                    names.join(", ")
                );
            }
            o.push('\n');
        }
        (None, Some(id)) => {
            let _ = writeln!(
                o,
                "{indent}[{}] stop {id}: TERM its process group, KILL after 5 s",
                s.phase.name()
            );
        }
        _ => {
            let _ = write!(o, "{indent}[{}] $ ", s.phase.name());
            let on_node = host_of(plan, &s.host)
                .filter(|_| s.phase != Phase::Collect)
                .and_then(|h| srun_line(plan, h, s, &s.command_line()));
            match host_of(plan, &s.host) {
                Some(_) if on_node.is_some() => o.push_str(on_node.as_deref().unwrap_or_default()),
                // an ssh step's secrets go on its connection's stdin, never on its command line
                Some(h)
                    if s.phase != Phase::Collect && !h.is_local() && !s.secret_env().is_empty() =>
                {
                    let names: Vec<String> = s.secret_env().into_iter().map(|(k, _)| k).collect();
                    o.push_str(&remote_line(h, &s.cwd, &s.exec_line_public()));
                    let _ = write!(
                        o,
                        "\n{indent}    # {}: sent on the ssh connection's stdin",
                        names.join(", ")
                    );
                }
                Some(h) if s.phase != Phase::Collect && !(h.is_local() && s.cwd == ".") => {
                    o.push_str(&remote_line(h, &s.cwd, &s.command_line()))
                }
                _ => o.push_str(&s.command_line()),
            }
            let _ = match s.ready.as_deref() {
                Some(r) => write!(
                    o,
                    "\n{indent}    # ready: {} within {} s",
                    ready_text(r),
                    s.timeout_s
                ),
                None => write!(o, "\n{indent}    # timeout {} s", s.timeout_s),
            };
            if s.background {
                o.push_str("; runs in the background until teardown");
            }
            match &s.extra().exit_ok {
                Some(crate::model::ExitOk::Any) => o.push_str("; any exit code is ok"),
                Some(crate::model::ExitOk::Codes(c)) if !c.is_empty() => {
                    let _ = write!(o, "; ok on exit 0,{}", c[0]);
                    for x in &c[1..] {
                        let _ = write!(o, ",{x}");
                    }
                }
                _ => {}
            }
            if let Some(at) = &s.origin {
                let _ = write!(o, "; from {at:?}");
            }
            if let Some(n) = &s.extra().note {
                let _ = write!(o, "\n{indent}    # {n}");
            }
            if !s.extra().omitted.is_empty() {
                let _ = write!(
                    o,
                    "\n{indent}    # left out (the program's own defaults; older checkouts lack them): {}",
                    s.extra().omitted.join(", ")
                );
            }
            if !s.extra().optional.is_empty() {
                let _ = write!(
                    o,
                    "\n{indent}    # added where the checkout's --help lists it (asked at preflight): {}",
                    optional_flags(s)
                );
            }
            if !s.extra().scratch.is_empty() {
                let paths: Vec<String> =
                    s.extra().scratch.iter().map(|p| shell::quote(p)).collect();
                let _ = write!(
                    o,
                    "\n{indent}    # scratch, removed after it stops (also on interrupt and by `expr stop`): {}",
                    paths.join(" ")
                );
            }
            if !s.extra().optional_flags.is_empty() {
                let _ = write!(
                    o,
                    "\n{indent}    # passed only when the checkout's `--help` lists them (left out otherwise, and said so): {}",
                    s.extra().optional_flags.join(", ")
                );
            }
            o.push('\n');
        }
    }
}

pub fn text(plan: &Plan) -> String {
    let mut v = Vec::new();
    let _ = text_to(plan, &mut v);
    String::from_utf8(v).unwrap_or_default()
}

/// [`text`], written to `w` as it is made: a point at a time (the whole text of 100k points
/// held at once was most of `plan`'s memory).
pub fn text_to(plan: &Plan, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut o = String::with_capacity(8192);
    let _ = writeln!(o, "# expr plan: {} ({})", plan.experiment, plan.source);
    let _ = writeln!(o, "output: {}", plan.output);
    let _ = writeln!(
        o,
        "environment: every step also gets {RESULT_DIR_VAR}=<the output, absolute> and {MARK_VAR}=<run>:<point> (how `expr stop` finds what a run started)"
    );
    let conditional = plan
        .points
        .iter()
        .filter(|p| plan.conditional(p).is_some())
        .count();
    let _ = writeln!(
        o,
        "points: {}{}\n",
        plan.points.len(),
        if conditional > 0 {
            format!(
                " (at most: {conditional} of them are adaptive repeats `expr run` may not need)"
            )
        } else {
            String::new()
        }
    );
    o.push_str("## resolved settings\n");
    for (bench, settings) in &plan.resolved {
        let _ = writeln!(o, "{bench}:");
        for (k, v, default) in settings {
            let _ = writeln!(
                o,
                "    {k} = {}{}",
                comment(v),
                if *default { "  (default)" } else { "" }
            );
        }
    }
    o.push_str("\n## hosts\n");
    for h in &plan.hosts {
        match &h.place {
            Some(p) => {
                let _ = writeln!(
                    o,
                    "{}: node {} of Slurm allocation `{}` ({}), every step through `srun --overlap` ip={} repo={}",
                    h.name,
                    p.node,
                    p.alloc,
                    match (&p.job, &p.nodename) {
                        (Some(j), Some(n)) => format!("job {j}, node {n}"),
                        _ => format!(
                            "allocated by `expr run`; until then `{}`, `{}` and `{}` stand for its job, name and address",
                            crate::plan::srun::job_of(p),
                            crate::plan::srun::node_of(p),
                            h.ip
                        ),
                    },
                    h.ip,
                    h.repo
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "{}: {} ip={} repo={}",
                    h.name,
                    h.login_text(),
                    h.ip,
                    h.repo
                );
            }
        }
    }
    if !plan.pools.is_empty() {
        o.push_str("\n## pools\n");
        for p in &plan.pools {
            let _ = writeln!(o, "{}", pool_text(p));
        }
    }
    o.push_str("\n## files written first\n");
    for f in &plan.files {
        let _ = writeln!(o, "--- {} ---\n{}", f.path, f.content.trim_end());
    }
    let mut shown: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for p in &plan.points {
        for s in &p.steps {
            if let Some(f) = &s.file {
                if shown.insert(f.content.as_str()) {
                    let _ = writeln!(o, "--- {} ---\n{}", f.path, f.content.trim_end());
                }
            }
        }
    }
    o.push_str("\n## setup: build and correctness tests, once per host and repo\n");
    for (host, steps) in by_host(&plan.setup) {
        let _ = writeln!(o, "{host}:");
        for s in steps {
            step_text(&mut o, plan, s, "  ");
        }
    }
    let n = plan.points.len();
    w.write_all(o.as_bytes())?;
    o.clear();
    for p in &plan.points {
        // a value's newline would start lines of its own under the header: escaped, as in
        // commands.sh's comments
        let axes: Vec<String> = p
            .axes
            .iter()
            .map(|(k, v)| comment(&format!("{k}={v}")))
            .collect();
        let _ = writeln!(
            o,
            "\n## point {}/{n}: {}  lane={} {}repeat={}{}",
            p.index + 1,
            comment(&p.run_id),
            comment(&p.lane),
            if axes.is_empty() {
                String::new()
            } else {
                format!("{} ", axes.join(" "))
            },
            p.repeat,
            placed_text(plan, p)
        );
        if let Some(why) = plan.conditional(p) {
            let _ = writeln!(o, "# {why}");
        }
        for (host, steps) in by_host(&p.steps) {
            let _ = writeln!(o, "{host}:");
            for s in steps {
                step_text(&mut o, plan, s, "  ");
            }
        }
        if o.len() >= 1 << 16 {
            w.write_all(o.as_bytes())?;
            o.clear();
        }
    }
    w.write_all(o.as_bytes())
}

/// A pool as the plan's header says it.
fn pool_text(p: &crate::plan::PlanPool) -> String {
    format!(
        "{} ({}): {} — the points dealt out in turn, each lane moving on one member at its next sweep point or repeat, as below (the same under `--only`); `expr run --jobs N` runs a point whose member is busy on whichever is free first, and the journal records where",
        p.name,
        p.bench,
        p.members.join(" "),
    )
}

/// `  on w2 (pool workers)` for a pool's point.
fn placed_text(plan: &Plan, p: &crate::plan::PlanPoint) -> String {
    match plan.placed.get(&p.run_id) {
        Some(m) => {
            let pool = plan
                .pools
                .iter()
                .find(|x| x.bench == p.bench)
                .map(|x| x.name.as_str())
                .unwrap_or("?");
            format!("  on {m} (pool {pool})")
        }
        None => String::new(),
    }
}

pub fn json(plan: &Plan) -> String {
    serde_json::to_string_pretty(plan).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

pub use crate::util::shell::comment;

/// A file written by the script: a quoted here-document, or (where it holds what stands for a
/// Slurm job, node or address, `slurm`) a quoted `printf` argument, which the variable is
/// spliced into.
fn heredoc(o: &mut String, path: &str, content: &str, slurm: &[(String, String)]) {
    if slurm.iter().any(|(t, _)| content.contains(t.as_str())) {
        let q = shell::quote(path);
        let _ = writeln!(
            o,
            "mkdir -p {}\nprintf '%s\\n' {} > {q}",
            shell::quote(&dir_of(path)),
            shell::quote(content.trim_end_matches('\n')),
        );
        return;
    }
    let mut tag = "EXPR_EOF".to_string();
    while content.contains(&tag) {
        tag.push('_');
    }
    let q = shell::quote(path);
    let _ = writeln!(
        o,
        "mkdir -p {}\ncat > {q} <<'{tag}'\n{}\n{tag}",
        shell::quote(&dir_of(path)),
        content.trim_end_matches('\n')
    );
}

/// The directory a file of the script goes in, as `dirname` says it, known when the script is
/// written: a `$(dirname …)` that a Ctrl-C cuts short made `mkdir ''` complain first.
fn dir_of(path: &str) -> String {
    match std::path::Path::new(path).parent() {
        Some(d) if d.as_os_str().is_empty() => ".".into(),
        Some(d) => d.display().to_string(),
        None => path.to_string(),
    }
}

/// The variable name part of an allocation's name: what is not a letter, digit or `_` is `_`.
fn var_part(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The allocations commands.sh makes itself (a plan made before `expr run` had them), each
/// with its variables' name part and the nodes its hosts are on.
fn own_allocations(plan: &Plan) -> Vec<(&crate::model::Allocation, String, Vec<i64>)> {
    let places: Vec<&crate::model::NodePlace> = plan
        .hosts
        .iter()
        .filter_map(|h| h.place.as_ref())
        .filter(|p| !p.here && p.job.is_none())
        .collect();
    let mut taken = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for a in plan.allocations.iter().filter(|a| !a.array) {
        let mut nodes: Vec<i64> = places
            .iter()
            .filter(|p| p.alloc == a.name)
            .map(|p| p.node)
            .collect();
        if nodes.is_empty() {
            continue;
        }
        nodes.sort_unstable();
        nodes.dedup();
        let mut v = var_part(&a.name);
        while !taken.insert(v.clone()) {
            v.push('_');
        }
        out.push((a, v, nodes));
    }
    out
}

/// What stands for a job, a node's name and its address in a plan made before the allocation
/// ([`crate::plan::srun::job_of`]), each with the commands.sh variable that holds it.
fn slurm_vars(plan: &Plan) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    for (a, v, nodes) in own_allocations(plan) {
        vars.push((format!("slurm:{}:job", a.name), format!("JOB_{v}")));
        for n in nodes {
            vars.push((
                format!("slurm:{}:{n}:node", a.name),
                format!("NODE_{v}_{n}"),
            ));
            vars.push((format!("slurm:{}:{n}", a.name), format!("IP_{v}_{n}")));
        }
    }
    vars
}

/// commands.sh's Slurm allocations, as `expr run` makes them: `salloc --no-shell` for each
/// allocation a host is on (named and commented as the run's jobs are, so `expr stop` finds
/// them), its nodes named by `squeue` and `scontrol show hostnames`, each node's address by
/// `hostname -I` in a step of the job; cancelled when the script ends, also when a signal
/// comes while salloc waits. The variables are [`slurm_vars`]'.
///
/// A plan made once the allocation exists (the run's own commands.sh) names the run's jobs:
/// the script then runs its steps in them, and first checks they still exist.
fn sh_slurm(o: &mut String, plan: &Plan) -> bool {
    let array = |alloc: &str| plan.allocations.iter().any(|a| a.name == alloc && a.array);
    let places: Vec<&crate::model::NodePlace> = plan
        .hosts
        .iter()
        .filter_map(|h| h.place.as_ref())
        .filter(|p| !p.here && !array(&p.alloc))
        .collect();
    if places.is_empty() {
        return false;
    }
    let pre = crate::util::exit_codes::PREFLIGHT;
    let _ = writeln!(o, "mkdir -p \"$OUT/{}\"", crate::plan::srun::STEP_IDS);
    // before each point: a job that ended (its time limit, a cancel) ends the script, as it
    // ends `expr run`, instead of failing every point left
    let _ = writeln!(
        o,
        "job_alive() {{ local j; for j in $SLURM_JOBS; do squeue -h -j \"$j\" -o %i 2>/dev/null | grep -q . || {{ echo \"expr: Slurm job $j has ended: the points left are not run\" >&2; exit {pre}; }}; done; }}"
    );
    let mut jobs: Vec<&str> = places.iter().filter_map(|p| p.job.as_deref()).collect();
    if !jobs.is_empty() {
        jobs.dedup();
        let _ = writeln!(
            o,
            "# Slurm: the steps run in the run's own jobs, while they exist\nSLURM_JOBS={}\nfor j in $SLURM_JOBS; do\n  squeue -h -j \"$j\" -o %i 2>/dev/null | grep -q . || {{ echo \"expr: job $j has ended: this script runs the run's steps in the run's jobs; \\`expr plan --format sh FILE\\` writes one that makes its own allocation\" >&2; exit {pre}; }}\ndone",
            shell::quote(&jobs.join(" ")),
        );
        return true;
    }
    o.push_str(
        r#"# Slurm: the allocations, made as `expr run` makes them, cancelled at the end (a signal
# while salloc waits: the job it may have got carries the run's comment)
COMMENT="expr:$(cd "$OUT" && pwd -P)"
SLURM_JOBS=
ALLOCATING=
release() {
  local j
  [ -z "$ALLOCATING" ] || SLURM_JOBS="$SLURM_JOBS $(squeue -h -o '%i|%k' 2>/dev/null | awk -F'|' -v c="$COMMENT" '$2 == c { print $1 }')"
  for j in $SLURM_JOBS; do scancel "$j" 2>/dev/null && echo "expr: cancelled job $j" >&2; done
  SLURM_JOBS=
}
trap 'trap "kill_now; release; exit 130" INT TERM; stop_jobs $(jobs -p); release' EXIT
"#,
    );
    let name = crate::plan::srun::job_name(&plan.experiment);
    for (a, v, nodes) in own_allocations(plan) {
        let job = format!("JOB_{v}");
        let said = comment(&a.name);
        let log = format!("\"$OUT/runtime/salloc-{v}.log\"");
        let args: Vec<String> = crate::plan::srun::salloc_args(a, &name, "\u{0}")
            .iter()
            .map(|x| match x.as_str() {
                "--comment=\u{0}" => "\"--comment=$COMMENT\"".to_string(),
                _ => shell::quote(x),
            })
            .collect();
        // salloc waits in the background: a signal to the script ends the wait (its trap
        // then stops salloc, which gives up what it queued)
        let _ = writeln!(
            o,
            "echo 'expr: allocating `{said}` ({want} node(s)) with salloc' >&2\nALLOCATING=1\nsalloc {} > {log} 2>&1 </dev/null & wait $!\n{job}=$(sed -n 's/.*Granted job allocation \\([0-9][0-9]*\\).*/\\1/p' {log} | head -n 1)\n[ -n \"${job}\" ] || {{ echo \"expr: salloc for \\`{said}\\` gave no allocation: $(cat {log})\" >&2; exit {pre}; }}\nSLURM_JOBS=\"$SLURM_JOBS ${job}\"\nALLOCATING=\nnodes=$(scontrol show hostnames \"$(squeue -h -j \"${job}\" -o %N)\")\nhave=$(printf '%s\\n' \"$nodes\" | grep -c .)\n[ \"$have\" -ge {want} ] 2>/dev/null || {{ echo \"expr: allocation \\`{said}\\` (job ${job}) has $have node(s), {want} were asked for\" >&2; exit {pre}; }}",
            args.join(" "),
            want = a.nodes,
        );
        let mut said_nodes = Vec::new();
        for n in nodes {
            let (node, ip) = (format!("NODE_{v}_{n}"), format!("IP_{v}_{n}"));
            let _ = writeln!(
                o,
                "{node}=$(printf '%s\\n' \"$nodes\" | sed -n {}p)\n[ -n \"${node}\" ] || {{ echo \"expr: job ${job} (\\`{said}\\`) has no node {n}\" >&2; exit {pre}; }}\n{ip}=$(srun --jobid=\"${job}\" --overlap -N1 -n1 -w \"${node}\" hostname -I </dev/null | awk '{{print $1}}')\n[ -n \"${ip}\" ] || {{ echo \"expr: no address for ${node} (job ${job}): \\`hostname -I\\` there printed none\" >&2; exit {pre}; }}",
                n + 1,
            );
            said_nodes.push(format!("${node} (${ip})"));
        }
        let _ = writeln!(
            o,
            "echo \"expr: \\`{said}\\` is job ${job}: {}\" >&2",
            said_nodes.join(", ")
        );
    }
    true
}

/// A step's optional flags as `--flag 'value'`, comma-separated.
fn optional_flags(s: &Step) -> String {
    s.extra()
        .optional
        .iter()
        .map(|(f, v)| format!("{f} {}", shell::quote(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn host_of<'a>(plan: &'a Plan, name: &str) -> Option<&'a crate::model::Host> {
    plan.hosts.iter().find(|h| h.name == name)
}

/// A step's command on a node of a Slurm allocation: the `srun` line the run starts (None on
/// any other host, and on an array's node, where the task runs the step itself).
fn srun_line(plan: &Plan, h: &crate::model::Host, s: &Step, line: &str) -> Option<String> {
    let array = h.place.as_ref().is_some_and(|p| {
        plan.allocations
            .iter()
            .any(|a| a.name == p.alloc && a.array)
    });
    crate::plan::srun::host_line(h, &s.id, &s.cwd, line, array)
}

/// A file a step writes (a config), as a heredoc here or piped to its host.
fn sh_file(
    o: &mut String,
    host: &crate::model::Host,
    f: &crate::kind_api::step::PlannedFile,
    slurm: &[(String, String)],
) {
    if host.is_local() {
        heredoc(o, &f.path, &f.content, slurm);
    } else {
        let inner = format!(
            "mkdir -p {} && cat > {p}",
            shell::quote(&dir_of(&f.path)),
            p = shell::quote(&f.path)
        );
        let _ = writeln!(
            o,
            "printf '%s' {} | {}",
            shell::quote(&f.content),
            remote_line_with(host, &inner)
        );
    }
}

/// A point's client in commands.sh: its pid variable, the exits that leave it ok, and whether
/// `expr run` starts it without a shell.
type Launched = (String, Option<crate::model::ExitOk>, bool);

fn sh_step(
    o: &mut String,
    plan: &Plan,
    s: &Step,
    log: &str,
    // each background step's (id, pid variable, scratch, a server and not a sampler)
    pids: &mut Vec<(String, String, Vec<String>, bool)>,
    clients: &mut Vec<Launched>,
    in_point: bool,
) {
    let Some(host) = host_of(plan, &s.host) else {
        return;
    };
    if let Some(f) = &s.file {
        sh_file(o, host, f, &slurm_vars(plan));
        return;
    }
    if let Some(id) = &s.stops {
        if let Some((_, var, scratch, _)) = pids.iter().find(|(i, _, _, _)| i == id) {
            let _ = writeln!(o, "stop_jobs \"${var}\"");
            // the server's scratch (its value store under /dev/shm), as `expr run` removes it:
            // only where the path is itself (no link on the way)
            if !scratch.is_empty() && !host.runs_here() && host.is_local() {
                // as `expr run` says it: /dev/shm is the node's own
                let _ = writeln!(
                    o,
                    "echo {} >&2",
                    shell::quote(&format!(
                        "warning: scratch on `{}` not removed: it is on a Slurm node; remove it there with `rm -rf` or let the node's epilog clean /dev/shm",
                        host.name
                    ))
                );
            } else if !scratch.is_empty() {
                let refs: Vec<&str> = scratch.iter().map(String::as_str).collect();
                let script = crate::plan::remote::remote_script(&refs);
                let line = if host.is_local() {
                    format!("bash -c {}", shell::quote(&script))
                } else {
                    remote_line_with(host, &script)
                };
                let _ = writeln!(o, "{line} || true");
            }
        }
        return;
    }
    if !s.extra().optional.is_empty() {
        let _ = writeln!(
            o,
            "# `expr run` adds where the checkout's --help lists them (asked at preflight): {}",
            comment(&optional_flags(s))
        );
    }
    // an ssh step's secrets go on its connection's stdin, as `expr run` sends them: read here
    // from the script's environment (`: "${K?…}"` stops the step when one is not exported;
    // an empty one is a value, as in the run)
    // a collect step pulls from its host but runs here, as in `expr run` (it copied the
    // host's file into that host's own home)
    let here = s.phase == Phase::Collect;
    let secrets: Vec<String> = if host.is_local() || here {
        Vec::new()
    } else {
        s.secret_env().into_iter().map(|(k, _)| k).collect()
    };
    let need = secrets
        .iter()
        .map(|k| format!(": \"${{{k}?export {k} first}}\"; "))
        .collect::<String>();
    let feed = format!("secrets {}", secrets.join(" "));
    let on_node = (!here)
        .then(|| srun_line(plan, host, s, &s.script_line()))
        .flatten();
    let line = if let Some(l) = on_node {
        l
    } else if here {
        s.script_line()
    } else if secrets.is_empty() {
        remote_line(host, &s.cwd, &s.script_line())
    } else {
        let inner = shell::cd_then(&s.cwd, &s.exec_line_public());
        format!(
            "{need}{feed} | {}",
            remote_line_with(host, &crate::plan::remote::reading_secrets(&inner))
        )
    };
    let logq = shell::quote(log);
    let var = format!("pid_{}", pids.len() + clients.len());
    if s.background {
        // A remote server runs under the same watcher as in `expr run`: its ssh stdin is held
        // open by a local sleep, so stopping the local group closes it and the remote watcher
        // stops the remote group.
        let start = if host.is_local() {
            // no `exec`: the line may start with `cd …` or `VAR=…`; setsid makes this bash the
            // group leader, so teardown stops the whole group
            line
        } else {
            if secrets.is_empty() {
                let wrapped = remote_line_with(
                    host,
                    &crate::plan::remote::remote_wrapper(&s.cwd, &s.script_line()),
                );
                format!("exec {wrapped} < <(exec sleep 2147483647)")
            } else {
                let wrapped = remote_line_with(
                    host,
                    &crate::plan::remote::remote_wrapper_with_env(&s.cwd, &s.exec_line_public()),
                );
                format!("{need}exec {wrapped} < <({feed}; exec sleep 2147483647)")
            }
        };
        port_held(o, s, pids, clients, in_point);
        let _ = writeln!(
            o,
            "setsid bash -c {} > {logq} 2>&1 & {var}=$!",
            shell::quote(&start)
        );
        pids.push((
            s.id.clone(),
            var.clone(),
            s.extra().scratch.clone(),
            !s.sampler,
        ));
        // in a point, a server that is not ready fails the point, and the next one runs (as in
        // `expr run`): what the point started is stopped first
        let give_up = if in_point {
            end_point(pids, clients)
        } else {
            String::new()
        };
        ready_wait(o, s, &var, &logq, log, &give_up);
    } else if s.phase == Phase::Launch {
        let _ = writeln!(
            o,
            "timeout -k \"$GRACE\" {} bash -c {} > {logq} 2>&1 & {var}=$!",
            s.timeout_s,
            shell::quote(&line)
        );
        clients.push((var, s.extra().exit_ok.clone(), s.direct));
    } else {
        sh_untimed(o, s, &line, log, &var, pids, clients, in_point);
    }
}

/// A step commands.sh waits for before going on (build, test, prepare, warmup, cleanup,
/// collect): what it left in its group stopped after it; a build or test that fails ends the
/// script, a prepare or warmup its point, any other counts as failed.
#[allow(clippy::too_many_arguments)]
fn sh_untimed(
    o: &mut String,
    s: &Step,
    line: &str,
    log: &str,
    var: &str,
    pids: &[(String, String, Vec<String>, bool)],
    clients: &[Launched],
    in_point: bool,
) {
    let logq = shell::quote(log);
    let fatal = matches!(s.phase, Phase::Build | Phase::Test);
    // a failed prepare or warmup round ends its point, as in `expr run`: nothing after it
    // runs against a state it did not make
    let ends_point = in_point && matches!(s.phase, Phase::Prepare | Phase::Warmup);
    // what the step left running in its group (`sleep 9 &`: timeout leads a group of its
    // own) is stopped with it, as in `expr run`
    let _ = writeln!(
        o,
        "timeout -k \"$GRACE\" {} bash -c {} > {logq} 2>&1 & {var}=$!; wait \"${var}\"; rc=$?; stop_jobs \"${var}\"; {}{}",
        s.timeout_s,
        shell::quote(line),
        // a warmup round of a run step with `exit-ok=` takes the exits it does
        crate::model::ExitOk::sh_test(s.extra().exit_ok.as_ref(), "rc", s.direct),
        if fatal {
            format!(
                " || fail {}",
                shell::quote(&format!("{} failed; see {log}", s.id))
            )
        } else if ends_point {
            format!(
                " || {{ echo {} >&2; {}; }}",
                shell::quote(&format!("{} failed; see {log}", s.id)),
                end_point(pids, clients)
            )
        } else {
            format!(
                " || {{ echo {} >&2; failed=$((failed + 1)); }}",
                shell::quote(&format!("{} failed; see {log}", s.id))
            )
        }
    );
}

/// Before a TCP-ready server starts: a port another process already answers on fails the point
/// (or, outside a point, the script), as its answer would read as this server ready (`expr run`
/// refuses the port at preflight).
fn port_held(
    o: &mut String,
    s: &Step,
    pids: &[(String, String, Vec<String>, bool)],
    clients: &[Launched],
    in_point: bool,
) {
    // a port that answers before the server starts is another process's: its answer would
    // read as this server ready (`expr run` refuses it at preflight)
    if let Some(Ready::Tcp { ip, port }) = s.ready.as_deref() {
        let what = shell::quote(&format!(
            "expr: {ip}:{port} answers before {} started: another process holds it",
            s.id
        ));
        let give_up = if in_point {
            format!("{{ echo {what} >&2; {}; }}", end_point(pids, clients))
        } else {
            format!("fail {what}")
        };
        let _ = writeln!(
            o,
            "! (exec 3<>/dev/tcp/{}/{port}) 2>/dev/null || {give_up}",
            shell::quote(ip)
        );
    }
}

/// What ends a point early in commands.sh: stop what it started (its servers and clients so
/// far), then `return 1` from its function.
fn end_point(pids: &[(String, String, Vec<String>, bool)], clients: &[Launched]) -> String {
    let started: Vec<String> = pids
        .iter()
        .map(|(_, v, _, _)| v)
        .chain(clients.iter().map(|(v, _, _)| v))
        .map(|v| format!("\"${v}\""))
        .collect();
    if started.is_empty() {
        "return 1".into()
    } else {
        format!("stop_jobs {}; return 1", started.join(" "))
    }
}

/// commands.sh's wait for a background step to be ready (`var` holds its pid); a sampler that
/// does not start is a warning. What a step that is not ready does: `give_up` (in a point: stop
/// what it started and end the point), else `fail` (the script ends).
fn ready_wait(o: &mut String, s: &Step, var: &str, logq: &str, log: &str, give_up: &str) {
    let not_ready = |what: String| {
        if give_up.is_empty() {
            format!("fail {}", shell::quote(&what))
        } else {
            format!(
                "{{ echo {} >&2; {give_up}; }}",
                shell::quote(&format!("expr: {what}"))
            )
        }
    };
    match s.ready.as_deref() {
        Some(Ready::Tcp { ip, port }) => {
            let _ = writeln!(
                o,
                "wait_tcp {} {port} {} \"${var}\" || {}",
                shell::quote(ip),
                s.timeout_s,
                not_ready(format!("{} not ready; see {log}", s.id))
            );
        }
        Some(Ready::Log { regex }) if s.sampler => {
            // a sampler that does not start costs its samples, not the run (as `expr run`)
            let _ = writeln!(
                o,
                "wait_log {logq} {} {} \"${var}\" || echo {} >&2",
                shell::quote(regex),
                s.timeout_s,
                shell::quote(&format!(
                    "expr: warning: {} not ready, its samples will be missing; see {log}",
                    s.id
                ))
            );
        }
        Some(Ready::Log { regex }) => {
            let _ = writeln!(
                o,
                "wait_log {logq} {} {} \"${var}\" || {}",
                shell::quote(regex),
                s.timeout_s,
                not_ready(format!("{} not ready; see {log}", s.id))
            );
        }
        Some(Ready::Alive { ms }) => {
            let _ = writeln!(
                o,
                "sleep {}; kill -0 \"${var}\" 2>/dev/null || {}",
                *ms as f64 / 1000.0,
                not_ready(format!("{} exited before it was ready; see {log}", s.id))
            );
        }
        None => {}
    }
}

/// Wait for a point's clients; a failed client is reported and the script goes on.
fn wait_clients(
    o: &mut String,
    plan: &Plan,
    run_id: &str,
    clients: &[Launched],
    servers: &[(String, String, Vec<String>, bool)],
) {
    let msg = shell::quote(&format!(
        "a client of {run_id} failed; see {}/logs/",
        plan.output
    ));
    for (c, ok, direct) in clients {
        match ok {
            None => {
                let _ = writeln!(
                    o,
                    "wait \"${c}\" || {{ echo {msg} >&2; failed=$((failed + 1)); }}"
                );
            }
            // `exit-ok=`: the exits it accepts leave it ok, as in `expr run`
            Some(_) => {
                let _ = writeln!(
                    o,
                    "wait \"${c}\"; rc=$?; {} || {{ echo {msg} >&2; failed=$((failed + 1)); }}",
                    crate::model::ExitOk::sh_test(ok.as_ref(), "rc", *direct)
                );
            }
        }
    }
    // what the clients left running in their groups is stopped with them, as in `expr run`
    if !clients.is_empty() {
        let vars: Vec<String> = clients
            .iter()
            .map(|(c, _, _)| format!("\"${c}\""))
            .collect();
        let _ = writeln!(o, "stop_jobs {}", vars.join(" "));
    }
    // a server that ended before its clients did fails the point, as in `expr run` (one that
    // ends after them does not)
    for (id, var, _, server) in servers {
        if *server {
            let _ = writeln!(
                o,
                "kill -0 \"${var}\" 2>/dev/null || {{ echo {} >&2; failed=$((failed + 1)); }}",
                shell::quote(&format!(
                    "expr: {id} ended before its point's clients did; see {}/logs/",
                    plan.output
                ))
            );
        }
    }
}

/// A bash script equal to the plan.
pub fn sh(plan: &Plan) -> String {
    sh_with_grace(plan, DEFAULT_GRACE_S, &[])
}

/// `expr run`'s `--grace` when none is given: seconds between TERM and KILL at teardown.
pub const DEFAULT_GRACE_S: u64 = 5;

/// [`sh`] for a run whose teardown waits `grace_s` seconds between TERM and KILL: commands.sh
/// stops what it started as that run does. The setup steps of the phases in `skipped`
/// (`--skip-build`, `--skip-tests`) are the run's too: written as comments, not run.
pub fn sh_with_grace(plan: &Plan, grace_s: u64, skipped: &[(Phase, &str)]) -> String {
    // an array's points are the tasks of `sbatch --array`, on nodes the tasks get: a script
    // that ran them here would replace the run's logs with other numbers
    if let Some(a) = plan.allocations.iter().find(|a| {
        a.array
            && plan.hosts.iter().any(|h| {
                h.place
                    .as_ref()
                    .is_some_and(|p| p.alloc == a.name && !p.here)
            })
    }) {
        let why = format!(
            "`{}` is an array (mode=\"array\"): its points ran as the tasks of `sbatch --array`, which commands.sh does not do; `expr plan --format sbatch {}` prints what `expr run` submits",
            a.name, plan.source
        );
        return format!(
            "#!/usr/bin/env bash\n# commands.sh of `{}` ({}), generated by expr.\n# {}\necho {} >&2\nexit {}\n",
            comment(&plan.experiment),
            comment(&plan.source),
            comment(&why),
            shell::quote(&format!("expr: {why}")),
            crate::util::exit_codes::INVALID
        );
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "#!/usr/bin/env bash\n# commands.sh: the plan of `{}` ({}), generated by expr.\n# It runs the commands `expr run` runs and reads no numbers: its exit code is 3 when a step\n# failed; a point without its metrics (3) or an unmet `expect` (6) is `expr run`'s to judge.",
        comment(&plan.experiment),
        comment(&plan.source)
    );
    o.push_str("set -uo pipefail\n");
    let root = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| ".".into());
    let _ = writeln!(
        o,
        "# relative paths are relative to the directory expr planned in\nROOT={}\ncd \"$ROOT\" || {{ echo \"expr: cannot cd to $ROOT\" >&2; exit 1; }}",
        shell::quote(&root)
    );
    let _ = writeln!(o, "OUT={}", shell::quote(&plan.output));
    // what is already there is not written over, as `expr run` refuses it without --force:
    // the script writes the run's own paths (its logs, deployment.md), so a second run of it
    // replaced the first's logs, and `expr report` showed the new numbers as the old run's
    o.push_str(
        r#"if [ -d "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ] && [ "${EXPR_FORCE:-}" != 1 ]; then
  echo "expr: $OUT already holds results (a run's, or this script's): its logs would be written over; plan again for a new directory (expr plan --format sh FILE), or EXPR_FORCE=1 to write over them" >&2
  exit 2
fi
"#,
    );
    let _ = writeln!(o, "GRACE={grace_s}\nfailed=0");
    o.push_str("mkdir -p \"$OUT/logs\" \"$OUT/outputs\" \"$OUT/runtime\"\n");
    // as `expr run` marks what it starts (this script's mark is its own: `expr stop` on a
    // run's directory leaves it alone)
    let _ = writeln!(
        o,
        "export {RESULT_DIR_VAR}=\"$(cd \"$OUT\" && pwd)\"\nexport {MARK_VAR}=\"commands.sh-$$:setup;\""
    );
    o.push_str(
        r#"fail() { echo "expr: $*" >&2; exit 3; }
up() { kill -0 -- -"$1" 2>/dev/null || kill -0 "$1" 2>/dev/null; }
# stop what it started as `expr run` tears down: TERM each process group (setsid) or
# process, KILL what is left after $GRACE s
stop_jobs() {
  local p i=0 left
  for p in "$@"; do kill -TERM -- -"$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; done
  while [ $i -lt $((GRACE * 20)) ]; do
    left=; for p in "$@"; do up "$p" && left=1; done
    [ -z "$left" ] && break
    sleep 0.05; i=$((i + 1))
  done
  for p in "$@"; do up "$p" && { kill -KILL -- -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; }; done
  for p in "$@"; do wait "$p" 2>/dev/null; done
  return 0
}
# at its end (a `fail`, a Ctrl-C), what it started and still runs is stopped: its own
# background jobs only
kill_now() { local p; for p in $(jobs -p); do kill -KILL -- -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; done; }
# a second Ctrl-C during that teardown kills at once, as in `expr run`
trap 'trap "kill_now; exit 130" INT TERM; stop_jobs $(jobs -p)' EXIT
# a signal ends it as it ends `expr run` (130 for Ctrl-C and TERM, 129 for a closed terminal),
# through the teardown above; each step runs as a job, so that `wait` returns at once
trap 'exit 130' INT TERM
trap 'exit 129' HUP
trap 'exit 131' QUIT
# milliseconds (bash 5's EPOCHREALTIME; an older bash has whole seconds)
now_ms() {
  if [ -n "${EPOCHREALTIME:-}" ]; then local t=${EPOCHREALTIME//[.,]/}; echo $((10#$t / 1000))
  else echo $((SECONDS * 1000)); fi
}
wait_tcp() { # ip port seconds pid: connect with backoff until the deadline
  local end=$(($(now_ms) + $3 * 1000)) d=0.05
  until (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do
    kill -0 "$4" 2>/dev/null || return 1
    [ "$(now_ms)" -ge $end ] && return 1
    sleep $d; d=$(awk "BEGIN{print ($d*2>1)?1:$d*2}")
  done
}
wait_log() { # file regex seconds pid
  local end=$(($(now_ms) + $3 * 1000))
  until grep -Eq -- "$2" "$1" 2>/dev/null; do
    # ended: ready if it wrote the line before it went (a sampler that says it has nothing)
    kill -0 "$4" 2>/dev/null || { grep -Eq -- "$2" "$1" 2>/dev/null; return; }
    [ "$(now_ms)" -ge $end ] && return 1
    sleep 0.1
  done
}
"#,
    );
    let remote_secrets = plan
        .setup
        .iter()
        .chain(plan.points.iter().flat_map(|p| p.steps.iter()))
        .any(|s| {
            host_of(plan, &s.host).is_some_and(|h| !h.is_local()) && !s.secret_env().is_empty()
        });
    if remote_secrets {
        o.push_str(crate::plan::remote::SECRETS_FN);
    }
    for p in &plan.pools {
        let _ = writeln!(o, "# pool {}", comment(&pool_text(p)));
    }
    // what stands for a job, node or address is made a variable from here on (the lines
    // above hold the output's path, which may hold any text)
    let spliced_from = o.len();
    let on_slurm = sh_slurm(&mut o, plan);
    let slurm = slurm_vars(plan);
    o.push_str("\n# files written first\n");
    for f in &plan.files {
        heredoc(
            &mut o,
            &format!("{}/{}", plan.output, f.path),
            &f.content,
            &slurm,
        );
    }
    o.push_str("\n# setup: build and correctness tests\n");
    let (mut pids, mut clients) = (Vec::new(), Vec::new());
    for s in &plan.setup {
        if let Some((_, flag)) = skipped.iter().find(|(ph, _)| *ph == s.phase) {
            // what the run did not run, the script does not either
            let _ = writeln!(
                o,
                "# {} {} on {}: skipped ({flag}), as `expr run` did; its command was:\n# {}",
                s.phase.name(),
                comment(&s.id),
                comment(&s.host),
                comment(&s.command_line())
            );
            continue;
        }
        let log = format!("{}/logs/{}-{}.log", plan.output, s.id, s.host);
        sh_step(&mut o, plan, s, &log, &mut pids, &mut clients, false);
    }
    for p in &plan.points {
        let _ = writeln!(
            o,
            "\n# point {}/{}: {} (lane {}, repeat {})",
            p.index + 1,
            plan.points.len(),
            comment(&p.run_id),
            comment(&p.lane),
            p.repeat
        );
        let on = placed_text(plan, p);
        if !on.is_empty() {
            let _ = writeln!(o, "# {}", comment(on.trim_start()));
        }
        if let Some(why) = plan.conditional(p) {
            let _ = writeln!(o, "# {}; this script runs it", comment(&why));
        }
        // a point is a function: a server that is not ready ends it (`return 1`), and the
        // next point runs, as in `expr run`
        let _ = writeln!(o, "point() {{");
        let _ = writeln!(
            o,
            "export {MARK_VAR}=\"commands.sh-$$:\"{}",
            shell::quote(&format!("{};", p.run_id))
        );
        let _ = writeln!(o, "mkdir -p \"$OUT/outputs/\"{}", shell::quote(&p.run_id));
        let (mut pids, mut clients) = (Vec::new(), Vec::new());
        let mut waited = false;
        for s in &p.steps {
            if !waited && !clients.is_empty() && s.phase != Phase::Launch {
                wait_clients(&mut o, plan, &p.run_id, &clients, &pids);
                waited = true;
            }
            let log = format!("{}/logs/{}-{}.log", plan.output, s.id, s.host);
            sh_step(&mut o, plan, s, &log, &mut pids, &mut clients, true);
        }
        if !waited {
            wait_clients(&mut o, plan, &p.run_id, &clients, &pids);
        }
        let alive = if on_slurm { "job_alive\n" } else { "" };
        let _ = writeln!(o, "}}\n{alive}point || failed=$((failed + 1))");
    }
    // a point that failed fails the script, as it fails the run (exit 3)
    let _ = writeln!(
        o,
        "\n[ \"$failed\" = 0 ] || {{ echo \"expr: $failed step(s) failed\" >&2; exit {}; }}",
        crate::util::exit_codes::POINT_FAILED
    );
    if slurm.is_empty() {
        o
    } else {
        let tail = shell::splice_vars(&o[spliced_from..], &slurm);
        o.truncate(spliced_from);
        o + &tail
    }
}
