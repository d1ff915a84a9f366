//! The language's vocabulary: every node and property expr accepts, with type, default, meaning
//! and example. The decoder validates against these tables and `schemas/reference.md` is generated
//! from them, so the two cannot drift apart.

/// The type of a value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ty {
    /// An integer in `min..=max`.
    Int(i64, i64),
    /// A port: any integer decodes, and the `port-out-of-range` rule (1–65535) reports a bad one
    /// with the port's context.
    Port,
    /// A port, or a template that renders to one for each point (`"{{ port }}"`): a server's
    /// readiness port that follows the command's.
    PortTemplate,
    Float,
    Str,
    Bool,
    /// One of a fixed set of strings.
    Enum(&'static [&'static str]),
    /// A string rendered as a minijinja template.
    Template,
}

impl Ty {
    pub fn describe(&self) -> String {
        match self {
            &SECONDS => "whole seconds, 1–604800 (7 days)".into(),
            Ty::Int(i64::MIN, i64::MAX) => "integer".into(),
            Ty::Int(min, max) if *max == i64::MAX => format!("integer ≥ {min}"),
            Ty::Int(min, max) => format!("integer {min}–{max}"),
            Ty::Port => "port 1–65535".into(),
            Ty::PortTemplate => "port 1–65535, or a template that gives one".into(),
            Ty::Float => "number".into(),
            Ty::Str => "string".into(),
            Ty::Bool => "boolean (#true / #false)".into(),
            Ty::Enum(v) => format!("one of {}", v.join(" | ")),
            Ty::Template => "string (minijinja template)".into(),
        }
    }
}

/// A property, argument or setting.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    /// The default as KDL text; `None` means required (or optional where `optional` is set).
    pub default: Option<&'static str>,
    pub optional: bool,
    pub doc: &'static str,
    pub example: &'static str,
}

pub const fn f(
    name: &'static str,
    ty: Ty,
    default: Option<&'static str>,
    doc: &'static str,
    example: &'static str,
) -> Field {
    Field {
        name,
        ty,
        default,
        optional: false,
        doc,
        example,
    }
}

/// A setting with a default (the kinds' vocabularies use it as `s`).
pub const fn with_default(
    name: &'static str,
    ty: Ty,
    default: &'static str,
    doc: &'static str,
    example: &'static str,
) -> Field {
    f(name, ty, Some(default), doc, example)
}

/// An optional setting without a default (the kinds' vocabularies use it as `o`).
pub const fn opt(name: &'static str, ty: Ty, doc: &'static str, example: &'static str) -> Field {
    Field {
        name,
        ty,
        default: None,
        optional: true,
        doc,
        example,
    }
}

pub const U: Ty = Ty::Int(0, i64::MAX);
pub const POS: Ty = Ty::Int(1, i64::MAX);
/// Processes on one host (`nproc-per-node`): a node has a few to a few hundred cores or GPUs;
/// each is a rank expr plans, and four billion of them filled the memory.
pub const PROCS: Ty = Ty::Int(1, 4096);
/// Timeouts in seconds: at least 1, at most a week (a larger value is a typo, and would overflow
/// a deadline).
pub const SECONDS: Ty = Ty::Int(1, 7 * 24 * 3600);
/// Ports are checked by their own rule (port-out-of-range), so the type admits any integer.
pub const PORT: Ty = Ty::Port;

/// How a node takes its arguments.
#[derive(Debug, Clone, Copy)]
pub enum Args {
    None,
    /// Exactly one argument.
    One(Field),
    /// One or more arguments of the same type.
    Many(Field),
}

/// A node: its arguments, properties and meaning.
#[derive(Debug, Clone, Copy)]
pub struct NodeSpec {
    pub name: &'static str,
    pub args: Args,
    pub props: &'static [Field],
    /// Properties with free names (environment variables, sweep exclusions).
    pub free_props: bool,
    pub doc: &'static str,
    pub example: &'static str,
}

/// A kind's top-level node, `NODE [NAME] { … }`: its one argument is the bench's name, optional
/// where the kind gives a default (`default_name`, as KDL text: `"\"ep-bench\""`).
pub const fn kind_node(
    name: &'static str,
    default_name: Option<&'static str>,
    name_example: &'static str,
    doc: &'static str,
    example: &'static str,
) -> NodeSpec {
    let arg = Field {
        optional: default_name.is_some(),
        ..f(
            "name",
            Ty::Str,
            default_name,
            "benchmark name",
            name_example,
        )
    };
    node(name, Args::One(arg), &[], doc, example)
}

pub const fn node(
    name: &'static str,
    args: Args,
    props: &'static [Field],
    doc: &'static str,
    example: &'static str,
) -> NodeSpec {
    NodeSpec {
        name,
        args,
        props,
        free_props: false,
        doc,
        example,
    }
}

// ---------------------------------------------------------------------------------------------
// Top level

pub const EXPERIMENT_CHILDREN: &[NodeSpec] = &[
    node(
        "description",
        Args::One(f("text", Ty::Str, None, "free text", "\"RecStore-BRPC vs TorchRec-HBM\"")),
        &[],
        "What the experiment compares; copied into reports.",
        "description \"RecStore-BRPC vs TorchRec-HBM, DLRM day 0\"",
    ),
    node(
        "output",
        Args::One(f("template", Ty::Template, Some("\"results/{{ name }}_{{ started | date(format='%m%d%H%M%S') }}\""), "result directory", "")),
        &[],
        "Result directory template. Variables: `name`, `started` (use the `date(format=…)` filter).",
        "output \"results/e2e_{{ started | date(format='%m%d%H%M%S') }}\"",
    ),
    node(
        "noise",
        Args::One(f("policy", Ty::Enum(&["warn", "refuse", "off"]), Some("\"warn\""), "what a noisy machine does to the run", "\"refuse\"")),
        &[],
        "What preflight's machine checks do (`expr run --noise` overrides it): `warn` says what disturbs a measurement and flags the points measured under it; `refuse` stops before any point (exit 4) on a foreign process on a GPU the run uses, a GPU in MIG mode, unexpected clocks with `gpu-clocks-locked #true`, or hosts of one lane on different drivers; `off` only records the machine.",
        "noise \"refuse\"",
    ),
    node(
        "timing-check",
        Args::One(f("policy", Ty::Enum(&["warn", "refuse"]), Some("\"warn\""), "what a step total that does not time its stages does to the run", "\"refuse\"")),
        &[],
        "What a point whose workload's own step total does not time its stages does (the kind's timing model: the stages' sum against the total, 5 % at the median step; a stage longer than the total; a total that stays constant while the stages vary): `warn` marks its headline as suspect in every report form; `refuse` also makes `expr run` and `expr report` exit 6, like an unmet `expect`.",
        "timing-check \"refuse\"",
    ),
    node(
        "language",
        Args::One(f("lang", Ty::Enum(crate::util::lang::Lang::NAMES), Some("the first bench's kind's: \"zh\" where its runbook asks for a Chinese summary.md, \"en\" otherwise"), "the report's language", "\"en\"")),
        &[],
        "The language of summary.md and report.html (`expr run --lang` and `expr report --lang` override it): every heading, sentence and table header in Chinese (`zh`) or English (`en`); numbers, units and lane names as they are. A Chinese report starts with the bare git HEAD and hostname lines the runbook asks for; an English one labels them (`commit: …`, `host: …`).",
        "language \"en\"",
    ),
    node(
        "order",
        Args::One(f("order", Ty::Enum(&["matrix", "interleave", "shuffle"]), Some("\"matrix\""), "the order the points run in", "\"interleave\"")),
        &[f("seed", U, Some("0"), "The seed of `shuffle`'s order (the same seed, the same order).", "seed=7")],
        "The order the points run in: `matrix` runs each bench's points as the matrix lists them (`expr plan` shows it: a sweep point's repeats together); `interleave` takes repeat 0 of every bench, sweep point and lane, then repeat 1, …, so lanes alternate (A B A B …) and a machine that drifts over the campaign (thermal throttling, a neighbour's job) falls on every lane alike; `shuffle` is a seeded random order of the lanes and sweep points, each one's repeats in their own order (its warmup first). The order is recorded in the journal and commands.sh.",
        "order \"interleave\"",
    ),
    node(
        "jobs",
        Args::One(f("n", Ty::Int(1, 256), Some("1"), "points at once", "4")),
        &[],
        "How many points `expr run` runs at once (`--jobs` overrides it), never two on the same GPU (a step's `gpus=`) or on a host either takes whole (a step without GPUs, a server): points that each name their GPUs share a host; a `pool`'s point runs on whichever member is free first. Local and ssh hosts and the nodes of a Slurm allocation (`mode=\"allocation\"`, each step an `srun --overlap` on its node); not with adaptive repeats (a `mode=\"array\"` allocation runs its tasks at once already).",
        "jobs 4",
    ),
    node(
        "telemetry",
        Args::None,
        &[f("interval-ms", Ty::Int(10, 60_000), Some("100"), "How often the sampler reads the GPUs, in milliseconds (10–60000).", "interval-ms=200")],
        "What the GPUs did during each point: a sampler (`nvidia-smi --query-gpu=… -lms N`, started before the point's measured steps and stopped after them, on every host they use and for the GPUs they are given) writes `outputs/<run id>/telemetry-<host>.csv`; the report adds `gpu_energy_j`, `gpu_power_mean_w`, `gpu_power_max_w`, `gpu_util_mean`, `sm_clock_mean`, `gpu_throttle_ms` and the headline per watt, each naming its samples, names a GPU unlike the others, and plots power and clocks. `gpu_energy_j` is the difference of the GPUs' cumulative energy counters over the measured window where the driver has them (NVML's `nvmlDeviceGetTotalEnergyConsumption`, Volta and later, read by a sampler in `python3` that loads `libnvidia-ml.so.1` at run time — `EXPR_NVML_LIB` in a host's `env` points elsewhere — into `nvml-<host>.csv`), else the power samples integrated over the window, its source saying why. A third sampler reads the CPU packages' RAPL energy counters (`/sys/class/powercap/intel-rapl:N/energy_uj`; `EXPR_POWERCAP` in a host's `env` points elsewhere) into `rapl-<host>.csv`: `cpu_energy_j` is their difference over the window. On a host without GPUs or RAPL those metrics are missing with the reason.",
        "telemetry interval-ms=100",
    ),
    node(
        "gpu-clocks-locked",
        Args::One(f("locked", Ty::Bool, Some("#false"), "whether the GPUs' clocks are locked", "#true")),
        &[],
        "The GPUs' clocks are locked (`nvidia-smi -lgc`/`-ac`): preflight checks persistence mode and that each GPU runs at its application clock.",
        "gpu-clocks-locked #true",
    ),
    node(
        "comparable-on",
        Args::Many(f("aspect", Ty::Enum(ASPECTS), None, "machine aspects", "\"driver\" \"gpu-model\"")),
        &[],
        "Machine differences that make `expr compare`'s verdicts \"not comparable\": driver, cuda, gpu-model, clocks, power-limit, persistence, governor, turbo, thp, torch, nccl.",
        "comparable-on \"driver\" \"gpu-model\" \"governor\"",
    ),
];

/// The metrics `telemetry` gives each point (name, unit, higher is better): what `expect` may
/// name when the experiment has it.
pub const TELEMETRY_METRICS: &[(&str, &str, bool)] = &[
    ("gpu_energy_j", "J", false),
    ("gpu_power_mean_w", "W", false),
    ("gpu_power_max_w", "W", false),
    ("gpu_util_mean", "%", true),
    ("sm_clock_mean", "MHz", true),
    ("gpu_throttle_ms", "ms", false),
];

/// The CPU packages' energy over a point's measured window, from RAPL (`telemetry`).
pub const CPU_ENERGY_METRIC: (&str, &str, bool) = ("cpu_energy_j", "J", false);

pub const HOST_PROPS: &[Field] = &[
    f("ssh", Ty::Str, Some("the host's name; `local` for the host named local"), "SSH login target (a name from ~/.ssh/config, user@host, or `local` to run on this machine). Login only: the data plane uses `ip`.", "ssh=\"gpu190\""),
    f("ssh-port", PORT, Some("22"), "SSH login port. Never a service port.", "ssh-port=22"),
    f("ip", Ty::Str, Some("\"127.0.0.1\" for local hosts; required otherwise"), "Data-plane address: PS traffic, rendezvous, readiness probes.", "ip=\"10.0.2.190\""),
    f("repo", Ty::Str, Some("\".\" for local hosts; required otherwise"), "The benchmarked checkout on that host; commands run there.", "repo=\"/data/RecStore\""),
    opt("gpus", U, "Number of GPUs on the host; enables the oversubscription check.", "gpus=8"),
    opt("slurm", Ty::Str, "The Slurm allocation (a `slurm` node) whose node this host is: commands run there through `srun`; its name and address are resolved at run time.", "slurm=\"cluster\""),
    opt("node", U, "Which node of the allocation (0-based).", "node=0"),
];

pub const SLURM_PROPS: &[Field] = &[
    opt("partition", Ty::Str, "`--partition`", "partition=\"gpu\""),
    opt("account", Ty::Str, "`--account`", "account=\"proj\""),
    opt("qos", Ty::Str, "`--qos`", "qos=\"normal\""),
    opt(
        "time",
        Ty::Str,
        "`--time`, the allocation's limit (`30`, `00:30:00`, `1-00:00:00`)",
        "time=\"00:30:00\"",
    ),
    f("nodes", POS, Some("1"), "`--nodes`", "nodes=2"),
    opt("gpus-per-node", U, "`--gpus-per-node`", "gpus-per-node=8"),
    opt(
        "constraint",
        Ty::Str,
        "`--constraint`",
        "constraint=\"a100\"",
    ),
    opt(
        "alloc-args",
        Ty::Str,
        "more `salloc` arguments (split on whitespace)",
        "alloc-args=\"--exclusive\"",
    ),
    opt(
        "srun-args",
        Ty::Str,
        "more `srun` arguments for every step",
        "srun-args=\"--cpu-bind=none\"",
    ),
    opt(
        "repo",
        Ty::Str,
        "the checkout on the shared filesystem (the hosts' default repo; default `.`)",
        "repo=\"/nfs/RecStore\"",
    ),
    opt(
        "mode",
        Ty::Str,
        "`allocation` (default): one `salloc` for the run, points in order; `array`: one `sbatch --array` task per point, for points that need no order (no servers shared across points, no adaptive repeats)",
        "mode=\"array\"",
    ),
    opt(
        "throttle",
        POS,
        "with `mode=\"array\"`: at most this many tasks run at once (`--array=0-N%K`)",
        "throttle=16",
    ),
];

pub const HOST_CHILDREN: &[NodeSpec] = &[NodeSpec {
    name: "env",
    args: Args::None,
    props: &[],
    free_props: true,
    doc: "Environment for every command on this host (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, NCCL_IB_HCA…). Property names are variable names.",
    example: "env NCCL_SOCKET_IFNAME=\"eno8303\" GLOO_SOCKET_IFNAME=\"eno8303\"",
}];

pub const TOP: &[NodeSpec] = &[
    node(
        "experiment",
        Args::One(f("name", Ty::Str, None, "experiment name", "day0")),
        &[],
        "The experiment: name, description and output directory. Exactly one per file.",
        "experiment day0 {\n    description \"RecStore-BRPC vs TorchRec-HBM\"\n}",
    ),
    node(
        "host",
        Args::One(f(
            "name",
            Ty::Str,
            None,
            "host name used by `host=` references",
            "node190",
        )),
        HOST_PROPS,
        "A machine. `host local` runs here (ip 127.0.0.1, repo \".\").",
        "host node190 ssh=\"gpu190\" ssh-port=22 ip=\"10.0.2.190\" repo=\"/data/RecStore\" gpus=8",
    ),
    node(
        "slurm",
        Args::One(f("name", Ty::Str, None, "allocation name used by hosts' `slurm=`", "cluster")),
        SLURM_PROPS,
        "A Slurm allocation `expr run` makes (`salloc --no-shell`) before the points and cancels on every exit; hosts with `slurm=NAME node=I` are its nodes. Each step runs as `srun --jobid … --overlap` on its node.",
        "slurm cluster partition=\"debug\" nodes=2 time=\"00:30:00\"",
    ),
    node(
        "pool",
        Args::Many(f("name, hosts…", Ty::Str, None, "the pool's name (what a step's `host=` names), then its hosts", "workers \"node1\" \"node2\"")),
        &[],
        "Hosts a `bench`'s steps may run on interchangeably (declared hosts, or nodes of one Slurm allocation): a step with `host=NAME` runs on one of them. The plan deals the bench's points out to the members in turn — a lane moves on one member at each sweep point and repeat, a point keeps its member under `--only`, and a point whose own steps do not name the pool is not placed; `expr plan` shows where, and `--jobs 1` and commands.sh run that; under `expr run --jobs N` a point whose member is busy runs on whichever member is free first, and the journal records where (`placed`). A point's steps that name the pool all run on its one member, where `{{ hosts.POOL.ip }}` (and `.repo`) is that member's; each member warms up (`warmup`) before its first point of a lane and sweep point.",
        "pool workers \"node1\" \"node2\" \"node3\"",
    ),
];

// ---------------------------------------------------------------------------------------------
// Shared by every benchmark kind

pub const LANE: NodeSpec = NodeSpec {
    name: "lane",
    args: Args::One(f("name", Ty::Str, None, "lane name", "RecStore-BRPC")),
    props: &[],
    free_props: true,
    doc: "A comparison lane. Properties override the benchmark's settings for this lane only.",
    example: "lane \"RecStore-BRPC-无预取\" read-mode=\"direct\"",
};

pub const SWEEP: NodeSpec = NodeSpec {
    name: "sweep",
    args: Args::Many(f(
        "axis, values…",
        Ty::Str,
        None,
        "setting name, then its values",
        "",
    )),
    props: &[],
    free_props: false,
    doc: "A cartesian axis: the setting named first takes each following value. Axes multiply.",
    example: "sweep batch-size 1024 2048 4096",
};

pub const ZIP: NodeSpec = NodeSpec {
    name: "zip",
    args: Args::None,
    props: &[],
    free_props: false,
    doc:
        "Axes that advance together: each child `axis v1 v2…` must have the same number of values.",
    example: "zip {\n    batch-size 1024 4096\n    steps 80 20\n}",
};

pub const EXCLUDE: NodeSpec = NodeSpec {
    name: "exclude",
    args: Args::None,
    props: &[],
    free_props: true,
    doc: "Removes the matrix points where every given axis (or `lane`) has the given value.",
    example: "exclude lane=\"TorchRec-HBM\" batch-size=4096",
};

pub const REPEAT: NodeSpec = node(
    "repeat",
    Args::One(f(
        "count",
        REPEATS,
        Some("kind default"),
        "repeats per point",
        "3",
    )),
    REPEAT_PROPS,
    "How many times each point runs. Repeats interleave lanes (A B A B). Adaptive: `repeat min=3 max=30 until-cv=2` keeps adding runs of a (lane, sweep point) until the CV of its headline metric is at most 2 % (or `until-ci=1`: the 95 % confidence interval's half-width at most 1 % of the mean), or max runs were made; the report says which points hit max.",
    "repeat min=3 max=30 until-cv=2",
);

/// The most repeats of a point expr plans (a bound, so a typo cannot ask for 10¹² runs).
pub const MAX_REPEAT: i64 = 100_000;
const REPEATS: Ty = Ty::Int(1, MAX_REPEAT);

const REPEAT_PROPS: &[Field] = &[
    opt(
        "min",
        POS,
        "adaptive: runs before the spread is judged (default 3)",
        "min=3",
    ),
    opt(
        "max",
        REPEATS,
        "adaptive: the most runs of a point",
        "max=30",
    ),
    opt(
        "until-cv",
        Ty::Float,
        "adaptive: stop at this coefficient of variation, in percent",
        "until-cv=2",
    ),
    opt(
        "until-ci",
        Ty::Float,
        "adaptive: stop when the 95 % CI half-width is this percent of the mean",
        "until-ci=1",
    ),
    opt(
        "until-decided",
        Ty::Float,
        "adaptive: stop a lane's sweep point once its comparison with the first lane is decided — the interval of the ratio of means (Welch, log scale, at 1 − 5 %/K for K = 2 · (max − min + 1) looks, one before each run of either lane: at most 5 % wrong decisions over all looks) excludes 1, or lies within ± this percent; the first lane stops when every other lane's comparison is decided. Best with `order \"interleave\"`.",
        "until-decided=2",
    ),
];

pub const COMMON_CHILDREN: &[NodeSpec] = &[
    LANE, SWEEP, ZIP, EXCLUDE, REPEAT, EXPECT, EXPECT_LOG, PROFILE,
];

pub const PROFILE: NodeSpec = NodeSpec {
    name: "profile",
    args: Args::One(f("tool", Ty::Enum(&["nsys", "ncu"]), None, "the profiler", "\"nsys\"")),
    props: &[
        opt("lane", Ty::Str, "Only this lane's points (default: every lane).", "lane=\"RecStore-BRPC\""),
        opt("repeat", U, "Only this repeat of each point (default: every repeat).", "repeat=0"),
        opt("args", Ty::Str, "More arguments for the profiler (split on whitespace, each quoted), e.g. `--trace=cuda,nvtx` or `--set full`.", "args=\"--trace=cuda,nvtx\""),
        f("stats", Ty::Bool, Some("#false"), "Keep the profiled points' numbers in the statistics (they are perturbed by the profiler and left out by default).", "stats=#true"),
    ],
    free_props: false,
    doc: "Run the measured steps of the matching points under NVIDIA's profiler: `nsys profile -o outputs/<run id>/profile-<step> --force-overwrite=true ARGS -- CMD` or `ncu -o … -f ARGS CMD`; after them, `nsys stats --report cuda_gpu_kern_sum --format csv` (or `ncu -i … --csv --print-summary per-kernel`) writes the kernel table the report shows. The capture stays in the point's output directory. A profiled point's numbers are perturbed: marked so and left out of the statistics unless `stats=#true`. Preflight checks the tool is on each host.",
    example: "profile \"nsys\" lane=\"RecStore-BRPC\" repeat=0 args=\"--trace=cuda,nvtx\"",
};

pub const EXPECT_LOG: NodeSpec = NodeSpec {
    name: "expect-log",
    args: Args::Many(Field {
        name: "lane",
        ty: Ty::Str,
        default: None,
        optional: true,
        doc: "the lane whose points' logs are read (default: every lane)",
        example: "",
    }),
    props: EXPECT_LOG_PROPS,
    free_props: false,
    doc: "A sanity check on every point's step logs (ReFrame's sanity patterns): judged after the run and by `expr report`, per point, in the same ✓/✗ table as `expect`.",
    example: "expect-log contains=\"workload finished\"",
};

const EXPECT_LOG_PROPS: &[Field] = &[
    opt(
        "contains",
        Ty::Str,
        "a regex some line of the point's logs must match",
        "contains=\"workload finished\"",
    ),
    opt(
        "lacks",
        Ty::Str,
        "a regex no line of the point's logs may match",
        "lacks=\"Traceback|NaN\"",
    ),
];

pub const EXPECT: NodeSpec = NodeSpec {
    name: "expect",
    args: Args::Many(Field {
        name: "lane, metric",
        ty: Ty::Str,
        default: None,
        optional: true,
        doc: "`LANE METRIC` (a bound on the metric's mean over repeats; `*` for every lane) or `LANE over OTHER speedup` (LANE against OTHER on the headline metric, >1 = LANE better)",
        example: "",
    }),
    props: EXPECT_PROPS,
    free_props: false,
    doc: "What the results must show (ReFrame's references): checked after the run and by `expr report`, shown as a ✓/✗ table in summary.md; an unmet one makes the run exit 6.",
    example: "expect RecStore-BRPC samples_per_sec min=80000",
};

const EXPECT_PROPS: &[Field] = &[
    opt(
        "min",
        Ty::Float,
        "the mean (or speedup) must be at least this",
        "min=80000",
    ),
    opt(
        "max",
        Ty::Float,
        "the mean (or speedup) must be at most this",
        "max=120000",
    ),
    opt(
        "unit",
        Ty::Str,
        "the unit the bounds are in; `check` and the report refuse a metric in another unit",
        "unit=\"samples/s\"",
    ),
];

/// A placement node naming a host and a process count (ep-bench and dataset-rt).
pub const RANK_NODE_PROPS: &[Field] = &[
    f("host", Ty::Str, None, "a declared host", "host=local"),
    f(
        "nproc-per-node",
        PROCS,
        Some("1"),
        "processes (GPUs) on that host",
        "nproc-per-node=4",
    ),
    f(
        "gpu",
        U,
        Some("0"),
        "first GPU index used on that host",
        "gpu=0",
    ),
];

/// The children of `collect "csv"`: its timing model.
pub const COLLECT_CHILDREN: &[NodeSpec] = &[
    NodeSpec {
        name: "stages",
        args: Args::Many(f("columns", Ty::Str, None, "column names", "\"load_ms\" \"fwd_ms\"")),
        props: &[],
        free_props: false,
        doc: "The CSV's columns that are disjoint parts of one step (one row a step): their sum is checked against `total` per point (5 % at the median step).",
        example: "stages \"load_ms\" \"fwd_ms\" \"bwd_ms\"",
    },
    NodeSpec {
        name: "total",
        args: Args::One(f("column", Ty::Str, None, "column name", "\"step_ms\"")),
        props: &[],
        free_props: false,
        doc: "The CSV's column of the step total that `stages` must add up to.",
        example: "total \"step_ms\"",
    },
    NodeSpec {
        name: "data-loading",
        args: Args::One(f("column", Ty::Str, None, "column name", "\"load_ms\"")),
        props: &[],
        free_props: false,
        doc: "The stage that holds data loading: left out of the same-work throughput (with a `batch_size` column).",
        example: "data-loading \"load_ms\"",
    },
];

/// What the comparison can be declared sensitive to (`comparable-on …`), and what compare
/// lists when two runs differ in it.
pub const ASPECTS: &[&str] = &[
    "driver",
    "cuda",
    "gpu-model",
    "clocks",
    "power-limit",
    "persistence",
    "governor",
    "turbo",
    "thp",
    "torch",
    "nccl",
];
