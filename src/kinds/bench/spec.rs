//! The vocabulary of the generic `bench` kind.

use crate::model::schema::{Args, Field, NodeSpec, Ty, POS, SECONDS};

const fn p(
    n: &'static str,
    ty: Ty,
    d: Option<&'static str>,
    doc: &'static str,
    ex: &'static str,
) -> Field {
    Field {
        name: n,
        ty,
        default: d,
        optional: d.is_none(),
        doc,
        example: ex,
    }
}

const HOST: Field = p(
    "host",
    Ty::Str,
    Some("local"),
    "a declared host (the command runs in its repo)",
    "host=local",
);

const CWD: Field = p(
    "cwd",
    Ty::Template,
    None,
    "working directory relative to the host's repo",
    "cwd=\"examples\"",
);

const TIMEOUT: Field = p(
    "timeout",
    SECONDS,
    Some("600"),
    "seconds before the step is stopped and fails",
    "timeout=120",
);

const LANES: Field = p(
    "lanes",
    Ty::Str,
    None,
    "comma-separated lanes this step belongs to (default: all)",
    "lanes=\"tcp\"",
);

const GPUS: Field = p(
    "gpus",
    POS,
    None,
    "GPUs the step takes on its host: it runs with CUDA_VISIBLE_DEVICES of its own, the host's `gpus=` dealt out to the points in turn (a lane moves on one block at each sweep point and repeat; a point keeps its block under `--only`), so `expr run --jobs` runs points on different GPUs at once",
    "gpus=1",
);

const STEP_PROPS: &[Field] = &[HOST, CWD, TIMEOUT, LANES];

const EXIT_OK: Field = p(
    "exit-ok",
    Ty::Str,
    None,
    "exit codes besides 0 that leave the step ok (hyperfine's `--ignore-failure`): `any`, or codes separated by commas; its time counts and the point goes on (a signal or a timeout still fails it; on a host reached by ssh or srun, whose shell reports a signal as 128+N and ssh its own failure as 255, a code above 128 fails). commands.sh, where bash sees a signal as 128+N and a timeout as 124, takes only the listed codes it can tell from those (1–123 and 125–128; without a shell not 126 and 127, bash's \"could not start\"); a code above 128 or 124 fails there",
    "exit-ok=\"1\"",
);

/// `run`: a step's properties, the GPUs it takes and the exits that leave it ok.
const RUN_PROPS: &[Field] = &[HOST, CWD, TIMEOUT, LANES, GPUS, EXIT_OK];

const SERVE_PROPS: &[Field] = &[
    p(
        "host",
        Ty::Str,
        Some("local"),
        "a declared host",
        "host=local",
    ),
    CWD,
    p(
        "port",
        crate::model::schema::Ty::PortTemplate,
        None,
        "service port on the host's ip; readiness is a TCP connect to it, unless `ready-log` is given (then the log line alone: the port is checked free before the run, not probed) (a template such as `\"{{ port }}\"` follows the value the command takes, under `--set`, a lane or a sweep)",
        "port=7070",
    ),
    p(
        "ready-log",
        Ty::Str,
        None,
        "readiness: a regex matched against the server's output, in place of the TCP connect to `port` (print the line once the server listens)",
        "ready-log=\"listening on\"",
    ),
    p(
        "ready-timeout",
        SECONDS,
        Some("30"),
        "seconds to wait for readiness",
        "ready-timeout=30",
    ),
    p(
        "lanes",
        Ty::Str,
        None,
        "comma-separated lanes this server belongs to (default: all)",
        "lanes=\"tcp\"",
    ),
    GPUS,
];

const COLLECT_PROPS: &[Field] = &[
    p(
        "path",
        Ty::Str,
        None,
        "file to read, relative to the point's output dir and inside it (not absolute, no `..` that climbs out: the report reads each point's file again) (csv, json; regex and nccl-tests: instead of the run steps' output), as written (no template: each point has its own dir)",
        "path=\"steps.csv\"",
    ),
    p(
        "pattern",
        Ty::Str,
        None,
        "regex whose first group (or the one `metric=` names) is read from every match in the run steps' output; the point's value is their mean (regex). A number the group cuts (`1.5` of `1.5.2`, `1` of `1,234`) is not read; letters stuck to the number (`ms` of `lat=999.0ms`, `GB/s`) are its unit: matches in other units are not read as one number (one without a unit goes with any), and points in other units are said",
        "pattern=\"rate=(?P<rate>[0-9.]+)\"",
    ),
    p(
        "metric",
        Ty::Str,
        None,
        "the column / key / group reported as the headline metric",
        "metric=\"samples_per_sec\"",
    ),
    p(
        "direction",
        Ty::Enum(&["higher", "lower"]),
        None,
        "which way is better (throughput: higher, latency: lower); `expr compare` judges by it",
        "direction=\"lower\"",
    ),
];

pub const CHILDREN: &[NodeSpec] = &[
    NodeSpec {
        name: "param",
        args: Args::Many(p("name, default", Ty::Str, None, "parameter name, then its default value", "")),
        props: &[],
        free_props: false,
        doc: "Declares a parameter: usable in templates (dashes become underscores), in lanes and sweeps.",
        example: "param batch-size 64",
    },
    NodeSpec {
        name: "build",
        args: Args::One(p("command", Ty::Template, None, "shell command template", "")),
        props: STEP_PROPS,
        free_props: false,
        doc: "Runs once per (host, repo) before any point.",
        example: "build \"make -j\" host=local",
    },
    NodeSpec {
        name: "test",
        args: Args::One(p("command", Ty::Template, None, "shell command template", "")),
        props: STEP_PROPS,
        free_props: false,
        doc: "A correctness test: runs once per (host, repo) after the builds; a failure stops before any point.",
        example: "test \"make check\" host=local",
    },
    NodeSpec {
        name: "serve",
        args: Args::Many(p("name, command", Ty::Template, None, "server name, then its command template", "")),
        props: SERVE_PROPS,
        free_props: false,
        doc: "A server started before the point's run steps and torn down after them.",
        example: "serve table \"python3 server.py --port 7070\" port=7070",
    },
    NodeSpec {
        name: "run",
        args: Args::One(p("command", Ty::Template, None, "shell command template", "")),
        props: RUN_PROPS,
        free_props: false,
        doc: "A client command of each point; all `run` steps of a point start together.",
        example: "run \"python3 trainer.py --out {{ outdir }}/steps.csv\"",
    },
    NodeSpec {
        name: "prepare",
        args: Args::One(p("command", Ty::Template, None, "shell command template", "")),
        props: STEP_PROPS,
        free_props: false,
        doc: "Runs before every run of a point (warmup runs too), not timed: clear caches, reset state.",
        example: "prepare \"sync\"",
    },
    NodeSpec {
        name: "cleanup",
        args: Args::One(p("command", Ty::Template, None, "shell command template", "")),
        props: STEP_PROPS,
        free_props: false,
        doc: "Runs after a point's timed run, not timed.",
        example: "cleanup \"rm -f {{ outdir }}/scratch\"",
    },
    NodeSpec {
        name: "collect",
        args: Args::One(p("format", Ty::Enum(&["csv", "json", "regex", "nccl-tests"]), None, "collector", "")),
        props: COLLECT_PROPS,
        free_props: false,
        doc: "Where the point's metrics come from: a CSV column (per-step CSVs in RecStore's columns get the full E2E report), a JSON value, regex matches on the run steps' output, or nccl-tests output (a `path=` to `-J` JSON or the run steps' output).",
        example: "collect \"csv\" path=\"steps.csv\" metric=\"samples_per_sec\"",
    },
];

pub const SETTINGS: &[Field] = &[
    p(
        "warmup",
        Ty::Int(0, 10_000),
        Some("0"),
        "runs of each point's `run` steps before the timed one, not counted (caches, JIT, page cache)",
        "3",
    ),
    p(
        "warmup-scope",
        Ty::Enum(&["group", "point"]),
        Some("\"group\""),
        "`group`: the warmup runs once per lane and sweep point, before its first repeat, as hyperfine warms once per command; `point`: before every repeat (for state a repeat does not keep, e.g. a cache a `cleanup` empties)",
        "\"point\"",
    ),
    p(
        "shell",
        Ty::Enum(&["bash", "none"]),
        Some("\"bash\""),
        "`bash`: run steps go through `bash -c` and its spawn time, measured at the start of the run, is subtracted from `time_ms`; `none`: the command's words are executed directly, split as a shell splits them (quotes group a word; no pipes, redirections, variables or globs), nothing to subtract",
        "\"none\"",
    ),
];
