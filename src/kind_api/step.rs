//! A plan's steps and what the kinds' planners share to build them: phases, readiness, quoting
//! of command lines, remote lines, host paths.

use std::collections::BTreeMap;

use serde::Serialize;

pub use crate::results::ranks::RankCheck;

use crate::model::*;
pub use crate::util::secret::{is_secret, mask};
use crate::util::shell;

/// The result directory of the run that started a process (absolute), in every step's
/// environment: `expr stop` on another directory leaves the process alone while that run lives.
pub const RESULT_DIR_VAR: &str = "EXPR_RESULT_DIR";

/// The mark of a run's point (`<run mark>:<point>;`, `<run mark>:setup;` for a build or a
/// test), in every step's environment and kept by its descendants, so what leaves its process
/// group is still found (`crate::exec::backend::escape`).
pub const MARK_VAR: &str = "EXPR_MARK";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Build,
    Test,
    Config,
    Serve,
    /// Before each run of a point (warmup runs too), not timed.
    Prepare,
    /// A run of the point's commands before the timed one, not counted.
    Warmup,
    Launch,
    /// After the point's timed run, not timed.
    Cleanup,
    Collect,
    Teardown,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Build => "build",
            Phase::Test => "test",
            Phase::Config => "config",
            Phase::Serve => "serve",
            Phase::Prepare => "prepare",
            Phase::Warmup => "warmup",
            Phase::Launch => "launch",
            Phase::Cleanup => "cleanup",
            Phase::Collect => "collect",
            Phase::Teardown => "teardown",
        }
    }
}

/// How to know a server is ready.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Ready {
    Tcp {
        ip: String,
        port: i64,
    },
    Log {
        regex: String,
    },
    /// A server that opens no port (RecStore's local_shm_ps_server): ready when it is still
    /// running `ms` milliseconds after it started, as RecStore's own rs_demo judges it.
    Alive {
        ms: i64,
    },
}

/// One command (or file write) on one host.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Unique within the plan: used for log names (`logs/<id>-<host>.log`).
    pub id: String,
    pub phase: Phase,
    pub host: String,
    /// Working directory on the host (its repo, or below it).
    pub cwd: String,
    /// Environment of the command; secret-looking values are masked when serialized.
    #[serde(serialize_with = "crate::util::secret::masked_env")]
    pub env: Vec<(String, String)>,
    /// The program and its arguments, when the command is not a shell line.
    pub argv: Vec<String>,
    /// A shell command line (already quoted) when the step is a template of the generic kind.
    pub shell: Option<String>,
    pub ready: Option<Box<Ready>>,
    /// The address (ip, port) a server listens on where its readiness is no TCP probe (a
    /// `ready-log`): what two points running at once may not share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listens: Option<Box<(String, i64)>>,
    pub timeout_s: i64,
    /// Where the step came from in the KDL file (`file:line:col`).
    /// (A place, not its text: one text per step of 100k points was a tenth of a plan's
    /// memory; serialized as `file:line:col`.)
    #[serde(serialize_with = "origin_text")]
    pub origin: Option<Loc>,
    /// A long-running server: started in the background and stopped at teardown.
    pub background: bool,
    /// For config steps: the file written (path) and its content.
    pub file: Option<Box<PlannedFile>>,
    /// For teardown steps: the id of the server step they stop.
    pub stops: Option<String>,
    /// For config steps: the checkout's schema for the file, checked at preflight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Box<SchemaCheck>>,
    /// Executed as `argv` without a shell where the host allows it (a local host; a remote
    /// command always goes through the remote login shell).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
    /// The rarely set parts ([`Step::extra`]), boxed: most steps have none, and a plan of
    /// 100k points held 144 empty bytes a step for them.
    #[serde(flatten)]
    pub extra: Option<Box<StepExtra>>,
    /// How preflight asks the program for its flags (`--help`), when the step says so itself
    /// rather than by a `.py` in its argv.
    #[serde(skip)]
    pub probe: Option<Box<Probe>>,
    /// A telemetry sampler (`telemetry`): started like a server, but its end is not a server's
    /// death and it takes no resource of its own (it reads the GPUs the point uses).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sampler: bool,
}

/// The parts of a step that few steps set.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, Serialize)]
pub struct StepExtra {
    /// Flags left out because their value is the program's own default, written or not (older
    /// checkouts may lack them): shown by `plan`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub omitted: Vec<String>,
    /// Why the step is what it is (shown by `plan`), e.g. which build targets and what for.
    pub note: Option<String>,
    /// The program's own default of each flag that may be left out: what a checkout that lacks
    /// the flag runs with.
    #[serde(skip)]
    pub flag_defaults: Vec<(String, String)>,
    /// `(flag, value)` pairs passed only when the checkout's program lists the flag in its
    /// `--help` (asked at preflight): a flag some checkouts need and others reject.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub optional: Vec<(String, String)>,
    /// Scratch paths outside the result directory that this server uses (e.g. a value store
    /// under /dev/shm): removed on its host after the server stops, at teardown, on interrupt
    /// and by `expr stop`. Only paths under [`SCRATCH_ROOT`] are ever removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scratch: Vec<String>,
    /// Flags of `argv` passed only when the checkout's `--help` lists them (preflight leaves
    /// them out otherwise, and says so): newer flags an older checkout would refuse.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub optional_flags: Vec<String>,
    /// A run step's non-zero exits that leave it ok (`exit-ok=`).
    pub exit_ok: Option<crate::model::ExitOk>,
}

/// What a step without any of the rare parts reads.
static NO_EXTRA: StepExtra = StepExtra {
    omitted: Vec::new(),
    note: None,
    flag_defaults: Vec::new(),
    optional: Vec::new(),
    scratch: Vec::new(),
    optional_flags: Vec::new(),
    exit_ok: None,
};

/// The program a step runs, as preflight asks it for `--help`: the interpreter (an argv
/// prefix, e.g. `uv run … python` or the configured `python`) and the program (`script.py`
/// or `-m module`). The flags checked are the argv after the program's last word.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub python: Vec<String>,
    pub program: Vec<String>,
    /// A program whose `--help` fails cannot run here (an import error): a preflight error,
    /// not a warning.
    pub required: bool,
    /// The kind's setting that chose `python` (`runner`, `python`): what a failure tells the
    /// user to change.
    pub setting: &'static str,
}

/// The only place scratch paths may live: `expr` removes nothing outside it.
pub const SCRATCH_ROOT: &str = "/dev/shm/expr-";

/// Whether a path is a scratch path expr may remove: under [`SCRATCH_ROOT`], with no `..`.
pub fn is_scratch(path: &str) -> bool {
    path.starts_with(SCRATCH_ROOT)
        && path.len() > SCRATCH_ROOT.len()
        && !path.split('/').any(|c| c == ".." || c == ".")
}

/// A file expr writes that the checkout may describe with its own JSON Schema: preflight
/// validates the planned content against the first of `candidates` found in the repo.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize)]
pub struct SchemaCheck {
    /// The schema file's possible places, relative to the repo (first found wins).
    pub candidates: Vec<String>,
    /// Where each key of the file comes from: (JSON pointer, `file:line:col (what)`), so a
    /// violation names the line of the experiment to change.
    pub origins: Vec<(String, String)>,
    /// JSON pointers whose enum violations are warnings, not errors (values the runtime takes
    /// beyond what the schema lists).
    pub lenient: Vec<String>,
    /// Other layouts of the same file, `(name, content)`, for checkouts whose schema describes
    /// another shape: preflight writes the first that the checkout's schema accepts when the
    /// planned content does not pass it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<(String, String)>,
    /// What to change when the file fails the schema, beyond its keys (e.g. the layout).
    pub hint: Option<String>,
}

impl SchemaCheck {
    /// The origin of the key at a JSON pointer: the longest recorded pointer that holds it.
    pub fn origin_of(&self, pointer: &str) -> Option<&str> {
        self.origins
            .iter()
            .filter(|(p, _)| {
                pointer == p
                    || (pointer.starts_with(p.as_str()) && pointer[p.len()..].starts_with('/'))
            })
            .max_by_key(|(p, _)| p.len())
            .map(|(_, o)| o.as_str())
    }
}

/// A JSON pointer (RFC 6901) of a key path.
pub fn json_pointer<S: AsRef<str>>(path: &[S]) -> String {
    path.iter()
        .map(|k| format!("/{}", k.as_ref().replace('~', "~0").replace('/', "~1")))
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct PlannedFile {
    pub path: String,
    pub content: String,
}

/// A step's origin as `file:line:col` (empty when it has none).
fn origin_text<S: serde::Serializer>(o: &Option<Loc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&o.as_ref().map(|l| format!("{l:?}")).unwrap_or_default())
}

impl Step {
    /// The rarely set parts, empty when none is set.
    pub fn extra(&self) -> &StepExtra {
        self.extra.as_deref().unwrap_or(&NO_EXTRA)
    }
    /// Whether the step's exit `code` (the reaper's: `-N` for signal N) leaves it ok: 0, or a
    /// code its `exit-ok=` accepts. A step not run `here` (ssh, srun) comes back through a
    /// shell that reports a signal as 128+N, and ssh's own failure is 255: a code above 128
    /// there is never accepted (helper 84: an OOM kill, 137, passed under `any`).
    pub fn exit_is_ok(&self, code: i32, here: bool) -> bool {
        code == 0
            || ((here || code <= 128)
                && self
                    .extra()
                    .exit_ok
                    .as_ref()
                    .is_some_and(|x| x.accepts(code)))
    }

    /// The rarely set parts, to set one.
    pub fn extra_mut(&mut self) -> &mut StepExtra {
        self.extra.get_or_insert_with(Default::default)
    }
    /// Where the step came from in the KDL file (`file:line:col`), empty when nowhere.
    pub fn origin_text(&self) -> String {
        self.origin
            .as_ref()
            .map(|l| format!("{l:?}"))
            .unwrap_or_default()
    }

    pub fn new(id: impl Into<String>, phase: Phase, host: &Host, origin: &Loc) -> Self {
        Step {
            id: id.into(),
            phase,
            host: host.name.clone(),
            cwd: host.repo.clone(),
            env: Vec::new(),
            argv: Vec::new(),
            shell: None,
            ready: None,
            listens: None,
            timeout_s: 600,
            origin: Some(origin.clone()),
            background: false,
            file: None,
            stops: None,
            schema: None,
            direct: false,
            extra: None,
            probe: None,
            sampler: false,
        }
    }

    fn line_with(&self, value: impl Fn(&str, &str) -> String) -> String {
        self.line_of(|_| true, value)
    }

    /// The line with the environment entries `keep` keeps.
    fn line_of(&self, keep: impl Fn(&str) -> bool, value: impl Fn(&str, &str) -> String) -> String {
        let mut parts: Vec<String> = self
            .env
            .iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| format!("{k}={}", value(k, v)))
            .collect();
        match &self.shell {
            // a shell line may expand the variables itself: `K=v echo $K` would not see them
            Some(s) if !parts.is_empty() => format!("export {}; {s}", parts.join(" ")),
            Some(s) => s.clone(),
            None => {
                parts.push(shell::join_command(&self.argv));
                parts.join(" ")
            }
        }
    }

    /// The command as the runbook writes it: `ENV=v … program args` (quoted, secrets masked).
    pub fn command_line(&self) -> String {
        self.line_with(|k, v| shell::quote(&mask(k, v)))
    }

    /// The same without masking, as it runs.
    pub fn exec_line(&self) -> String {
        self.line_with(|_, v| shell::quote(v))
    }

    /// As `exec_line`, without the secrets (by name, `secret::is_secret`): what starts with
    /// `secret_env` in its environment, where no other user reads it (a command line is in
    /// `ps` for every user of the machine).
    pub fn exec_line_public(&self) -> String {
        self.line_of(|k| !is_secret(k), |_, v| shell::quote(v))
    }

    /// The step's environment entries that are secrets.
    pub fn secret_env(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .filter(|(k, _)| is_secret(k))
            .cloned()
            .collect()
    }

    /// For commands.sh: a secret is read from the environment the script runs in, never written.
    pub fn script_line(&self) -> String {
        self.line_with(|k, v| {
            if is_secret(k) {
                format!("\"${{{k}?export {k} first}}\"")
            } else {
                shell::quote(v)
            }
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanPoint {
    pub index: usize,
    pub run_id: String,
    pub bench: String,
    pub lane: String,
    pub axes: Vec<(String, Val)>,
    pub repeat: i64,
    /// (A boxed slice, not a Vec: a planned point is no larger than a matrix point, so the
    /// matrix's memory becomes the plan's in place.)
    pub steps: Box<[Step]>,
    /// For distributed runs: the per-rank CSVs that can stand in for a failed parent.
    pub ranks: Option<Box<RankCheck>>,
}

impl PlanPoint {
    /// A setting's value at this point, as text: its sweep axis, else its lane's override, else
    /// the bench's own; `None` where none of them sets it.
    pub fn setting_text(&self, bench: &Bench, key: &str) -> Option<String> {
        if let Some((_, v)) = self.axes.iter().find(|(n, _)| n == key) {
            return Some(v.to_string());
        }
        let lane = bench.lanes.iter().find(|l| l.name == self.lane);
        lane.and_then(|l| l.overrides.get(key))
            .or_else(|| bench.settings.get(key))
            .map(|x| x.val.to_string())
    }
}

/// Context shared by the kinds' planners.
#[derive(Clone)]
pub struct Ctx<'a> {
    pub exp: &'a Experiment,
    pub output: String,
    pub started: String,
    /// How many hosts the bench's points are dealt out over (a `pool`'s members; else 1): a
    /// point runs on member `slot` mod n (`Point::slot`), and its place among that member's
    /// points (its GPU block) is `slot` / n.
    pub deal: usize,
    /// The pool member this planning places the bench's pool steps on (each member is planned:
    /// the point's dealt one, and the others `--jobs` may move it to).
    pub on: Option<OnMember>,
    /// The points a resumed run's journal finished ok (kept unless their command changed): a
    /// group whose warmup ran in the earlier process warms up again before the first of its
    /// points that runs now (empty for a fresh run).
    pub done: std::sync::Arc<std::collections::HashSet<String>>,
    /// The bytes of command the plan's steps hold so far, every bench's ([`Ctx::render_budget`]).
    pub rendered: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// The most bytes of command a plan holds: 10,000 points of five 90 KB commands (each under
/// [`crate::model::template::MAX_COMMAND`]) took 4.5 GB, and `check` aborted.
pub const MAX_PLAN_COMMANDS: usize = 256 << 20;

/// A pool member the bench is planned on.
#[derive(Clone, Debug)]
pub struct OnMember {
    /// Its place in the pool's members (`Point::slot` mod their count is a point's dealt one).
    pub index: usize,
    pub pool: String,
    pub member: String,
}

impl Ctx<'_> {
    /// Count `bytes` of a step's command against [`MAX_PLAN_COMMANDS`]: why not, once over.
    pub fn render_budget(&self, bytes: usize) -> Result<(), String> {
        use std::sync::atomic::Ordering;
        let total = self.rendered.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if total > MAX_PLAN_COMMANDS {
            return Err(format!(
                "the plan's commands come to more than {} MiB (points × steps × the command's length): run fewer points at once (`--only`), or pass the long value in a file the command reads",
                MAX_PLAN_COMMANDS >> 20
            ));
        }
        Ok(())
    }

    /// Whether this planning is of a point on another member than the one it was dealt (a place
    /// `--jobs` may move it to).
    pub fn moved(&self, slot: usize) -> bool {
        self.on
            .as_ref()
            .is_some_and(|o| o.index != slot % self.deal.max(1))
    }
}

impl Ctx<'_> {
    pub fn host(&self, name: &str) -> &Host {
        self.exp.host(name).unwrap_or_else(|| {
            self.exp
                .hosts
                .first()
                .expect("validated experiment has hosts")
        })
    }

    /// A path under the result directory as seen from `host`'s working directory.
    pub fn out_path(&self, host: &Host, rel: &str) -> String {
        let base = if rel.is_empty() {
            self.output.clone()
        } else {
            format!("{}/{rel}", self.output)
        };
        host_path(host, &base)
    }
}

/// What a kind's planner returns.
#[derive(Default)]
pub struct KindPlan {
    pub files: Vec<PlannedFile>,
    pub setup: Vec<Step>,
    /// Steps of each point, in the order of the points given.
    pub points: Vec<Vec<Step>>,
    /// Rank checks of each point (empty, or one per point).
    pub ranks: Vec<Option<RankCheck>>,
}

impl KindPlan {
    /// A point's steps, kept for the whole plan without spare capacity (a Vec grown by push
    /// holds room for 4 steps: most of a point's memory in a plan of 100k points).
    pub fn push_point(&mut self, mut steps: Vec<Step>) {
        steps.shrink_to_fit();
        self.points.push(steps);
    }

    /// A plan with room for `n` points' steps (grown by doubling, the list of 100k points was
    /// held twice while it moved).
    pub fn with_points(n: usize) -> Self {
        KindPlan {
            points: Vec::with_capacity(n),
            ..Default::default()
        }
    }
}

/// Teardown steps for every background step, in reverse start order.
pub fn teardown(steps: &mut Vec<Step>) {
    let servers: Vec<(String, String, String)> = steps
        .iter()
        .filter(|s| s.background)
        .map(|s| (s.id.clone(), s.host.clone(), s.cwd.clone()))
        .collect();
    for (id, host, cwd) in servers.into_iter().rev() {
        steps.push(Step {
            id: format!("stop-{id}"),
            phase: Phase::Teardown,
            host,
            cwd,
            env: Vec::new(),
            argv: vec!["kill".into(), "-TERM".into(), format!("-<pgid of {id}>")],
            shell: None,
            ready: None,
            listens: None,
            timeout_s: 10,
            origin: None,
            background: false,
            file: None,
            stops: Some(id),
            schema: None,
            direct: false,
            extra: None,
            probe: None,
            sampler: false,
        });
    }
}

/// `ssh OPTIONS target 'cd REPO && CMD'` for a remote host; the plain command for a local one.
pub fn remote_line(host: &Host, cwd: &str, line: &str) -> String {
    let inner = shell::cd_then(cwd, line);
    if host.is_local() {
        if cwd == "." {
            line.to_string()
        } else {
            inner
        }
    } else {
        remote_line_with(host, &inner)
    }
}

/// The ssh configuration file every ssh call passes as `-F` (EXPR_SSH_CONFIG), when set.
pub fn ssh_config() -> Option<String> {
    std::env::var("EXPR_SSH_CONFIG")
        .ok()
        .filter(|c| !c.is_empty())
}

/// The options of every ssh call to `host`, in `plan`, commands.sh and `expr run` alike: the
/// configuration file (`-F`), the port only where the experiment writes `ssh-port` (otherwise
/// ~/.ssh/config decides), batch mode and a connect timeout. `expr run` adds its shared
/// connection's socket (`ControlPath`), the one option a script cannot have.
pub fn ssh_options(host: &Host, config: Option<&str>) -> Vec<String> {
    let mut o = Vec::new();
    if let Some(c) = config {
        o.extend(["-F".into(), c.to_string()]);
    }
    if host.ssh_port_loc.is_some() {
        o.extend(["-p".into(), host.ssh_port.to_string()]);
    }
    o.extend([
        "-o".into(),
        "BatchMode=yes".into(),
        "-o".into(),
        "ConnectTimeout=10".into(),
    ]);
    o
}

/// `ssh OPTIONS`: rsync's `-e` for `host`.
pub fn ssh_e(host: &Host) -> String {
    format!(
        "ssh {}",
        shell::join(&ssh_options(host, ssh_config().as_deref()))
    )
}

/// A collect step's command that pulls `remote` (a path on `host`) into `local` here: `rsync -a`
/// over ssh with the host's options (the run adds its own connection's, [`ssh_e`]).
pub fn pull_argv(host: &Host, remote: &str, local: String) -> Vec<String> {
    vec![
        "rsync".into(),
        "-a".into(),
        "-e".into(),
        ssh_e(host),
        format!("{}:{remote}", host.ssh),
        local,
    ]
}

/// `ssh OPTIONS target 'REMOTE'` ([`ssh_options`]).
pub fn remote_line_with(host: &Host, remote: &str) -> String {
    format!(
        "ssh {} {} {}",
        shell::join(&ssh_options(host, ssh_config().as_deref())),
        shell::quote(&host.ssh),
        shell::quote(remote)
    )
}

/// Group a point's steps by host, keeping execution order within each host.
pub fn by_host(steps: &[Step]) -> BTreeMap<&str, Vec<&Step>> {
    let mut m: BTreeMap<&str, Vec<&Step>> = BTreeMap::new();
    for s in steps {
        m.entry(s.host.as_str()).or_default().push(s);
    }
    m
}

/// A path as `host` sees it: relative paths of local hosts are made absolute (expr's cwd), so a
/// step run in another directory still writes into the result directory.
pub fn host_path(host: &Host, path: &str) -> String {
    static CWD: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if host.is_local() && !path.starts_with('/') {
        let cwd = CWD.get_or_init(|| {
            std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| ".".into())
        });
        format!("{cwd}/{path}")
    } else {
        path.to_string()
    }
}

/// Builds a program's argv flag by flag: a flag whose value is the program's own default is left
/// out (and recorded) — the program then runs with that very value — so checkouts whose CLI
/// predates the flag still accept the command.
pub struct Flags {
    pub argv: Vec<String>,
    pub omitted: Vec<String>,
    /// (flag, the program's default) of every flag that may be left out.
    pub defaults: Vec<(String, String)>,
}

impl Flags {
    pub fn new(argv: Vec<String>) -> Self {
        Flags {
            argv,
            omitted: Vec::new(),
            defaults: Vec::new(),
        }
    }
    /// `flag value`, always.
    pub fn push(&mut self, flag: &str, value: impl Into<String>) {
        self.argv.push(flag.into());
        self.argv.push(value.into());
    }
    /// `flag value`, unless `value` is the program's default (`setting` names where it comes
    /// from, for messages).
    pub fn unless_default(
        &mut self,
        flag: &str,
        value: impl Into<String>,
        default: &str,
        _setting: &str,
    ) {
        let value = value.into();
        self.defaults.push((flag.to_string(), default.to_string()));
        if value == default {
            self.omitted.push(format!("{flag} {value}"));
        } else {
            self.push(flag, value);
        }
    }
}

/// A path on `host` as an absolute or repo-relative path for rsync: `repo/path`, or `path`
/// itself when it is already absolute (never `repo` + an absolute path).
pub fn in_repo(host: &Host, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}/{path}", host.repo.trim_end_matches('/'))
    }
}

/// CUDA_VISIBLE_DEVICES for `count` GPUs starting at `first`: "0", "2,3".
pub fn cuda_devices(first: i64, count: i64) -> String {
    (first..first + count)
        .map(|g| g.to_string())
        .collect::<Vec<_>>()
        .join(",")
}
