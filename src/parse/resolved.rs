//! The experiment printed back as KDL with every default filled in (`expr check --resolved`).

use std::fmt::Write;

use crate::kinds;
use crate::model::*;

fn q(s: &str) -> String {
    Val::Str(s.to_string()).to_kdl()
}

/// A node name: bare when KDL allows it, quoted otherwise.
fn key(s: &str) -> String {
    let bare = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !matches!(s, "true" | "false" | "null" | "inf" | "nan");
    if bare {
        s.to_string()
    } else {
        q(s)
    }
}

fn json_kdl(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "#null".into(),
        serde_json::Value::Bool(b) => format!("#{b}"),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => {
                let t = f.to_string();
                if t.contains(['.', 'e', 'E']) {
                    t
                } else {
                    format!("{t}.0")
                }
            }
            _ => n.to_string(),
        },
        serde_json::Value::String(s) => q(s),
        serde_json::Value::Array(a) => a.iter().map(json_kdl).collect::<Vec<_>>().join(" "),
        serde_json::Value::Object(_) => "#null".into(),
    }
}

/// A `config` block's tree as KDL nodes.
fn config_kdl(o: &mut String, v: &serde_json::Value, depth: usize) {
    let Some(obj) = v.as_object() else { return };
    let pad = "    ".repeat(depth);
    for (k, v) in obj {
        if v.is_object() {
            let _ = writeln!(o, "{pad}{} {{", key(k));
            config_kdl(o, v, depth + 1);
            let _ = writeln!(o, "{pad}}}");
        } else {
            let _ = writeln!(o, "{pad}{} {}", key(k), json_kdl(v));
        }
    }
}

pub fn to_kdl(exp: &Experiment) -> String {
    let mut o = String::new();
    header_kdl(&mut o, exp);
    for a in &exp.allocations {
        slurm_kdl(&mut o, a);
    }
    for h in &exp.hosts {
        host_kdl(&mut o, h);
    }
    for p in &exp.pools {
        let _ = write!(o, "pool {}", q(&p.name));
        for m in &p.members {
            let _ = write!(o, " {}", q(m));
        }
        o.push('\n');
    }
    for b in &exp.benches {
        bench_kdl(&mut o, b);
    }
    o
}

/// The `experiment { … }` node.
fn header_kdl(o: &mut String, exp: &Experiment) {
    let _ = writeln!(o, "experiment {} {{", q(&exp.name));
    let _ = writeln!(o, "    description {}", q(&exp.description));
    let _ = writeln!(o, "    output {}", q(&exp.output));
    // the noise settings only when set: files that leave them out resolve as before
    if !exp.noise.policy.is_empty() && exp.noise.policy != "warn" {
        let _ = writeln!(o, "    noise {}", q(&exp.noise.policy));
    }
    // the language only when written (or given with --lang): the kind's default otherwise
    if let Some(l) = exp.language {
        let _ = writeln!(o, "    language {}", q(l.code()));
    }
    if !exp.noise.timing_check.is_empty() && exp.noise.timing_check != "warn" {
        let _ = writeln!(o, "    timing-check {}", q(&exp.noise.timing_check));
    }
    if !exp.order.is_default() {
        let kind = if exp.order.kind.is_empty() {
            "matrix"
        } else {
            exp.order.kind.as_str()
        };
        let _ = write!(o, "    order {}", q(kind));
        if exp.order.seed != 0 {
            let _ = write!(o, " seed={}", exp.order.seed);
        }
        o.push('\n');
    }
    if let Some(j) = exp.jobs {
        let _ = writeln!(o, "    jobs {j}");
    }
    if let Some(t) = &exp.telemetry {
        let _ = writeln!(o, "    telemetry interval-ms={}", t.interval_ms);
    }
    if exp.noise.gpu_clocks_locked {
        let _ = writeln!(o, "    gpu-clocks-locked #true");
    }
    if !exp.noise.comparable_on.is_empty() {
        let on: Vec<String> = exp.noise.comparable_on.iter().map(|a| q(a)).collect();
        let _ = writeln!(o, "    comparable-on {}", on.join(" "));
    }
    o.push_str("}\n\n");
}

/// One `slurm` allocation line.
fn slurm_kdl(o: &mut String, a: &Allocation) {
    let _ = write!(o, "slurm {} nodes={}", q(&a.name), a.nodes);
    props(
        o,
        &[
            ("partition", &a.partition),
            ("account", &a.account),
            ("qos", &a.qos),
            ("time", &a.time),
            ("constraint", &a.constraint),
        ],
    );
    if let Some(g) = a.gpus_per_node {
        let _ = write!(o, " gpus-per-node={g}");
    }
    for (k, v) in [("alloc-args", &a.alloc_args), ("srun-args", &a.srun_args)] {
        if !v.is_empty() {
            let _ = write!(o, " {k}={}", q(&v.join(" ")));
        }
    }
    if a.array {
        let _ = write!(o, " mode=\"array\"");
    }
    if let Some(t) = a.throttle {
        let _ = write!(o, " throttle={t}");
    }
    let _ = writeln!(o, " repo={}", q(&a.repo));
}

/// One `host` node (with its `env` child when it has one).
fn host_kdl(o: &mut String, h: &Host) {
    match &h.place {
        Some(p) => {
            if let Some(n) = &p.nodename {
                let _ = writeln!(
                    o,
                    "// {}: node {} ({}) of job {}",
                    crate::util::shell::comment(&h.name),
                    crate::util::shell::comment(n),
                    crate::util::shell::comment(&h.ip),
                    p.job.as_deref().unwrap_or("?")
                );
            }
            let _ = write!(
                o,
                "host {} slurm={} node={} repo={}",
                q(&h.name),
                q(&p.alloc),
                p.node,
                q(&h.repo)
            );
        }
        None => {
            let _ = write!(o, "host {}", q(&h.name));
            // `local` is this machine (no ssh); a port only where the experiment writes one
            // (else ssh's own configuration decides, and read back it still does)
            if !(h.is_local() && h.name == "local") {
                let _ = write!(o, " ssh={}", q(&h.ssh));
            }
            if h.ssh_port_loc.is_some() && !h.is_local() {
                let _ = write!(o, " ssh-port={}", h.ssh_port);
            }
            let _ = write!(o, " ip={} repo={}", q(&h.ip), q(&h.repo));
        }
    }
    if let Some(g) = h.gpus {
        let _ = write!(o, " gpus={g}");
    }
    if h.env.is_empty() {
        o.push('\n');
    } else {
        o.push_str(" {\n    env");
        for (k, v) in &h.env {
            let _ = write!(o, " {k}={}", q(&crate::util::secret::mask(k, v)));
        }
        o.push_str("\n}\n");
    }
}

/// One bench node and its children.
fn bench_kdl(o: &mut String, b: &Bench) {
    let spec = kinds::of(b.kind);
    let _ = writeln!(o, "\n{} {} {{", spec.node, q(&b.name));
    placement_kdl(o, b);
    settings_kdl(o, b, spec);
    repeat_kdl(o, b);
    lanes_sweep_kdl(o, b);
    o.push_str("}\n");
}

/// A bench's placement: its placed nodes, or its params, steps and collect.
fn placement_kdl(o: &mut String, b: &Bench) {
    match &b.placement {
        Placement::Nodes(nodes) => {
            for n in nodes {
                let _ = write!(o, "    {} host={}", n.role, q(&n.host));
                for (k, v) in &n.props {
                    let _ = write!(o, " {k}={v}");
                }
                o.push('\n');
            }
        }
        Placement::Steps {
            params,
            steps,
            collect,
        } => {
            for (n, p) in params {
                // the value in effect (`--set` changes the setting, not the declaration)
                let v = b.settings.get(n).unwrap_or(p);
                let _ = writeln!(o, "    param {} {}", q(n), v.val.to_kdl());
            }
            for s in steps {
                step_kdl(o, s);
            }
            if let Some(c) = collect {
                collect_kdl(o, c);
            }
        }
    }
}

/// One step of a `Placement::Steps` bench.
fn step_kdl(o: &mut String, s: &StepSpec) {
    let kind = match s.kind {
        StepKind::Build => "build",
        StepKind::Test => "test",
        StepKind::Serve => "serve",
        StepKind::Run => "run",
        StepKind::Prepare => "prepare",
        StepKind::Cleanup => "cleanup",
    };
    let _ = write!(o, "    {kind}");
    if s.kind == StepKind::Serve {
        let _ = write!(o, " {}", q(&s.name));
    }
    let _ = write!(o, " {} host={}", q(&s.command), q(&s.host));
    if let Some(c) = &s.cwd {
        let _ = write!(o, " cwd={}", q(c));
    }
    if let Some(p) = s.port {
        let _ = write!(o, " port={p}");
    }
    if let Some(p) = &s.port_template {
        let _ = write!(o, " port={}", q(p));
    }
    if let Some(r) = &s.ready_log {
        let _ = write!(o, " ready-log={}", q(r));
    }
    let _ = write!(
        o,
        " {}={}",
        if s.kind == StepKind::Serve {
            "ready-timeout"
        } else {
            "timeout"
        },
        s.timeout
    );
    if let Some(l) = &s.lanes {
        let _ = write!(o, " lanes={}", q(&l.join(",")));
    }
    if let Some(g) = s.gpus {
        let _ = write!(o, " gpus={g}");
    }
    if let Some(x) = &s.exit_ok {
        let _ = write!(o, " exit-ok={}", q(&x.text()));
    }
    o.push('\n');
}

/// ` key=value` for each property that is set, quoted as KDL.
fn props(o: &mut String, kv: &[(&str, &Option<String>)]) {
    for (k, v) in kv {
        if let Some(v) = v {
            let _ = write!(o, " {k}={}", q(v));
        }
    }
}

/// A `collect` child (with its timing block).
fn collect_kdl(o: &mut String, c: &CollectSpec) {
    let _ = write!(o, "    collect {}", q(&c.format));
    props(
        o,
        &[
            ("path", &c.path),
            ("pattern", &c.pattern),
            ("metric", &c.metric),
            ("direction", &c.direction),
        ],
    );
    if let Some(t) = &c.timing {
        let st: Vec<String> = t.stages.iter().map(|s| q(s)).collect();
        let _ = write!(
            o,
            " {{\n        stages {}\n        total {}\n",
            st.join(" "),
            q(&t.total)
        );
        if let Some(d) = &t.data_loading {
            let _ = writeln!(o, "        data-loading {}", q(d));
        }
        o.push_str("    }");
    }
    o.push('\n');
}

/// The kind's settings, build options, `config` block, expects and profiles.
fn settings_kdl(o: &mut String, b: &Bench, spec: &kinds::KindSpec) {
    for f in spec.settings {
        match b.settings.get(f.name) {
            // a default the program is given only where it is written: shown, not written
            Some(p) if p.loc.is_none() && spec.when_written.contains(&f.name) => {
                let _ = writeln!(
                    o,
                    "    // {} {}  (the program's default: passed only when written)",
                    f.name,
                    p.val.to_kdl()
                );
            }
            Some(p) => {
                let mark = if p.loc.is_none() { "  // default" } else { "" };
                let _ = writeln!(o, "    {} {}{mark}", f.name, p.val.to_kdl());
            }
            None => {
                let _ = writeln!(o, "    // {} unset", f.name);
            }
        }
    }
    if !b.build.cmake_args.is_empty() {
        let a: Vec<String> = b.build.cmake_args.iter().map(|x| q(x)).collect();
        let _ = writeln!(o, "    cmake-args {}", a.join(" "));
    }
    if !b.build.env.is_empty() {
        let e: Vec<String> = b
            .build
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", q(&crate::util::secret::mask(k, v))))
            .collect();
        let _ = writeln!(o, "    build-env {}", e.join(" "));
    }
    if !b.config.is_empty() {
        let mut tree = serde_json::Value::Object(Default::default());
        let _ = crate::model::merge_config(&mut tree, &b.config);
        o.push_str("    config {\n");
        config_kdl(o, &tree, 2);
        o.push_str("    }\n");
    }
    for e in &b.expects {
        let _ = writeln!(o, "    {}", e.text());
    }
    for p in &b.profiles {
        let _ = writeln!(o, "    {}", p.text());
    }
}

/// `repeat`, fixed or adaptive.
fn repeat_kdl(o: &mut String, b: &Bench) {
    match &b.adaptive {
        Some(a) => {
            let _ = write!(o, "    repeat min={} max={}", a.min, a.max);
            if let Some(c) = a.until_cv {
                let _ = write!(o, " until-cv={}", Val::Float(c).to_kdl());
            }
            if let Some(c) = a.until_ci {
                let _ = write!(o, " until-ci={}", Val::Float(c).to_kdl());
            }
            if let Some(c) = a.until_decided {
                let _ = write!(o, " until-decided={}", Val::Float(c).to_kdl());
            }
            o.push('\n');
        }
        None => {
            let _ = writeln!(o, "    repeat {}", b.repeat);
        }
    }
}

/// Lanes, sweep axes, zips and excludes.
fn lanes_sweep_kdl(o: &mut String, b: &Bench) {
    for l in &b.lanes {
        let _ = write!(o, "    lane {}", q(&l.name));
        for (k, p) in &l.overrides {
            let _ = write!(o, " {k}={}", p.val.to_kdl());
        }
        o.push_str(if l.implicit {
            "  // default lane\n"
        } else {
            "\n"
        });
    }
    for a in &b.sweep.axes {
        let vals: Vec<String> = a.values.iter().map(Val::to_kdl).collect();
        let _ = writeln!(o, "    sweep {} {}", q(&a.name), vals.join(" "));
    }
    for z in &b.sweep.zips {
        o.push_str("    zip {\n");
        for a in z {
            let vals: Vec<String> = a.values.iter().map(Val::to_kdl).collect();
            let _ = writeln!(o, "        {} {}", q(&a.name), vals.join(" "));
        }
        o.push_str("    }\n");
    }
    for e in &b.sweep.excludes {
        o.push_str("    exclude");
        for (k, v) in &e.when {
            let _ = write!(o, " {}={}", q(k), v.to_kdl());
        }
        o.push('\n');
    }
}
