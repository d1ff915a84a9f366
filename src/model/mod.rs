//! The typed experiment: what the decoder produces and every later stage consumes.
//!
//! `source.rs` is the text a `Loc` points into; `expand.rs` the matrix of points (lanes × sweep
//! points × repeats) that validation, the planner and the report walk; `schema.rs` the language's
//! vocabulary (what each node accepts); `diag.rs` a located diagnostic about it; `template.rs` its
//! `{{ }}` templates. The kinds build on these, and the parse stage above them.

pub mod diag;
pub mod exit_ok;
pub mod expand;
pub mod schema;
pub mod source;
pub mod template;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use miette::SourceSpan;
use serde::{Deserialize, Serialize};

pub use exit_ok::ExitOk;
use source::Source;

/// Where something was written: a file and a byte span in it.
#[derive(Clone)]
pub struct Loc {
    pub src: Arc<Source>,
    pub span: SourceSpan,
}

impl fmt::Debug for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (l, c) = self.src.line_col(self.span.offset());
        write!(f, "{}:{l}:{c}", self.src.name)
    }
}

/// No place: a model read back from data (a journal header's experiment) knows none.
impl Default for Loc {
    fn default() -> Self {
        Loc {
            src: Source::new("(stored experiment)", ""),
            span: SourceSpan::from((0, 0)),
        }
    }
}

impl Serialize for Loc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{self:?}"))
    }
}

/// A scalar value from the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Val {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
}

/// A value as a hash key that is equal exactly when the values are (`==`): a float by its
/// bits with -0 as 0; none for NaN, which equals nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ValKey {
    Int(i64),
    Float(u64),
    Str(String),
    Bool(bool),
}

impl Val {
    /// Its hash key ([`ValKey`]): duplicate checks over many values by set, not by search.
    pub fn key(&self) -> Option<ValKey> {
        Some(match self {
            Val::Int(i) => ValKey::Int(*i),
            // every `#nan` is the same value of a sweep (listed twice is a duplicate)
            Val::Float(f) if f.is_nan() => ValKey::Float(f64::NAN.to_bits()),
            Val::Float(f) => ValKey::Float((f + 0.0).to_bits()),
            Val::Str(s) => ValKey::Str(s.clone()),
            Val::Bool(b) => ValKey::Bool(*b),
        })
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }
    /// A number, integer or not.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Float(x) => Some(*x),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Val::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// The value as KDL source text.
    pub fn to_kdl(&self) -> String {
        match self {
            Val::Str(s) => format!("{s:?}"),
            Val::Bool(b) => format!("#{b}"),
            // KDL 2 spells the non-finite floats as keywords
            Val::Float(f) if f.is_nan() => "#nan".into(),
            Val::Float(f) if f.is_infinite() => if *f > 0.0 { "#inf" } else { "#-inf" }.into(),
            // a float stays a float when read back (`1.0`, not `1`): templates render it so
            Val::Float(f) => format!("{f:?}"),
            v => v.to_string(),
        }
    }
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Int(_) => "integer",
            Val::Float(_) => "number",
            Val::Str(_) => "string",
            Val::Bool(_) => "boolean",
        }
    }
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::Int(i) => write!(f, "{i}"),
            Val::Float(x) => write!(f, "{x}"),
            Val::Str(s) => f.write_str(s),
            Val::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// A value and where it came from (`None`: a default).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Param {
    pub val: Val,
    /// Where it is written; None: a default. Stored as `written: true` (no place is kept).
    #[serde(
        rename = "written",
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "is_written",
        deserialize_with = "written"
    )]
    pub loc: Option<Loc>,
}

/// Settings by name.
pub type Params = BTreeMap<String, Param>;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    pub output: String,
    pub hosts: Vec<Host>,
    /// Pools of interchangeable hosts a bench's steps may name in `host=` (`pool NAME "h1" …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<Pool>,
    /// Slurm allocations whose nodes hosts are placed on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocations: Vec<Allocation>,
    pub benches: Vec<Bench>,
    /// The noise policy and what compare holds the machines to (`noise`, `gpu-clocks-locked`,
    /// `comparable-on`).
    #[serde(default, skip_serializing_if = "Noise::is_default")]
    pub noise: Noise,
    /// The report's language (`language`); None: the first bench's kind decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<crate::util::lang::Lang>,
    /// The order the points run in (`order`).
    #[serde(default, skip_serializing_if = "Order::is_default")]
    pub order: Order,
    /// How many points run at once (`jobs`; `expr run --jobs` overrides it); None: one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<i64>,
    /// What the GPUs did during each point's measured steps (`telemetry`); None: not sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    #[serde(skip)]
    pub loc: Loc,
    #[serde(skip)]
    pub output_loc: Option<Loc>,
    /// Hosts by name, built on first use (files with thousands of hosts would otherwise make
    /// every rule quadratic).
    #[serde(skip)]
    pub host_index: HostIndex,
}

/// The `telemetry` node: a sampler beside each point's measured steps on every host they use.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Telemetry {
    /// How often the sampler reads the GPUs, ms.
    pub interval_ms: i64,
    #[serde(skip)]
    pub loc: Loc,
}

/// The order the points run in: `matrix` (also when empty), `interleave`
/// (by repeat, then bench, sweep point and lane) or `shuffle` (seeded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Order {
    pub kind: String,
    pub seed: u64,
}

impl Order {
    pub fn is_default(&self) -> bool {
        (self.kind.is_empty() || self.kind == "matrix") && self.seed == 0
    }
}

/// The experiment's noise settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// `warn` (also when empty), `refuse` or `off`.
    pub policy: String,
    pub gpu_clocks_locked: bool,
    /// Machine aspects whose difference makes two runs not comparable.
    pub comparable_on: Vec<String>,
    /// What a step total that does not time its stages does (`timing-check`): `warn` (also
    /// when empty) flags the point's headline, `refuse` also makes the run exit non-zero.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub timing_check: String,
}

impl Noise {
    pub fn is_default(&self) -> bool {
        (self.policy.is_empty() || self.policy == "warn")
            && !self.gpu_clocks_locked
            && self.comparable_on.is_empty()
            && (self.timing_check.is_empty() || self.timing_check == "warn")
    }
}

/// A lazily built name → position index of `Experiment::hosts`; it is checked against the list
/// on every use, so a host added later is still found.
#[derive(Default)]
pub struct HostIndex(std::sync::RwLock<Option<(usize, std::collections::HashMap<String, usize>)>>);

impl Clone for HostIndex {
    fn clone(&self) -> Self {
        HostIndex::default()
    }
}

impl fmt::Debug for HostIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HostIndex")
    }
}

impl Experiment {
    /// The values of the hosts' secrets (`env` values whose names suggest one).
    pub fn secret_values(&self) -> Vec<&str> {
        self.secrets().into_iter().map(|(_, v, _)| v).collect()
    }

    /// The secrets the file declares: a host's `env` entry or a build's `build-env` entry with
    /// a secret's name, as (name, value, where the host or bench is).
    pub fn secrets(&self) -> Vec<(&str, &str, &Loc)> {
        let hosts = self
            .hosts
            .iter()
            .flat_map(|h| h.env.iter().map(move |kv| (kv, &h.loc)));
        let builds = self
            .benches
            .iter()
            .flat_map(|b| b.build.env.iter().map(move |kv| (kv, &b.loc)));
        hosts
            .chain(builds)
            .filter(|((k, _), _)| crate::util::secret::is_secret(k))
            .map(|((k, v), loc)| (k.as_str(), v.as_str(), loc))
            .collect()
    }

    /// The secrets ([`Self::secrets`]) long enough to be looked for elsewhere
    /// ([`crate::util::secret::MIN_ELSEWHERE`] characters or more): name and value.
    pub fn secrets_to_find(&self) -> Vec<(&str, &str)> {
        self.secrets()
            .into_iter()
            .filter(|(_, v, _)| v.chars().count() >= crate::util::secret::MIN_ELSEWHERE)
            .map(|(k, v, _)| (k, v))
            .collect()
    }

    /// Whether a host is placed on the allocation `alloc` (only such an allocation is made).
    /// The allocations some host is on, in the file's order.
    pub fn used_allocations(&self) -> Vec<Allocation> {
        self.allocations
            .iter()
            .filter(|a| self.has_hosts_on(&a.name))
            .cloned()
            .collect()
    }

    pub fn has_hosts_on(&self, alloc: &str) -> bool {
        self.hosts
            .iter()
            .any(|h| h.place.as_ref().is_some_and(|p| p.alloc == alloc))
    }

    /// The first declared host on the same machine as the host `name` ([`Host::same_machine`]),
    /// with why; the host itself where no earlier one is; None where `name` is no host (a pool).
    pub fn machine_of(&self, name: &str) -> Option<(&Host, Option<&'static str>)> {
        let h = self.host(name)?;
        Some(
            self.hosts
                .iter()
                .take_while(|o| o.name != h.name)
                .find_map(|o| Some((o, Some(o.same_machine(h)?))))
                .unwrap_or((h, None)),
        )
    }

    pub fn host(&self, name: &str) -> Option<&Host> {
        if self.hosts.len() < 16 {
            return self.hosts.iter().find(|h| h.name == name);
        }
        let fresh = |g: &Option<(usize, std::collections::HashMap<String, usize>)>| {
            g.as_ref().is_some_and(|(n, _)| *n == self.hosts.len())
        };
        let stale = self.host_index.0.read().map(|g| !fresh(&g)).unwrap_or(true);
        if stale {
            if let Ok(mut g) = self.host_index.0.write() {
                let m = self
                    .hosts
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, h)| (h.name.clone(), i))
                    .collect();
                *g = Some((self.hosts.len(), m));
            }
        }
        let hit = self.host_index.0.read().ok().and_then(|g| {
            g.as_ref()
                .and_then(|(_, m)| m.get(name).copied())
                .filter(|&i| self.hosts.get(i).is_some_and(|h| h.name == name))
        });
        match hit {
            Some(i) => self.hosts.get(i),
            None => self.hosts.iter().find(|h| h.name == name),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    pub name: String,
    pub ssh: String,
    pub ssh_port: i64,
    pub ip: String,
    pub repo: String,
    pub gpus: Option<i64>,
    #[serde(serialize_with = "crate::util::secret::masked_env")]
    pub env: Vec<(String, String)>,
    #[serde(skip)]
    pub loc: Loc,
    /// Where `ssh-port` is written; none when it is not (ssh's own config then decides the
    /// port). Recorded in the journal as `ssh_port_written`, for `expr stop`.
    #[serde(
        rename = "ssh_port_written",
        serialize_with = "is_written",
        deserialize_with = "written"
    )]
    pub ssh_port_loc: Option<Loc>,
    /// A node of an allocation (a `slurm` node's today: `slurm=NAME node=I`): commands run there
    /// through the allocator's launcher (`srun`); files are on the allocation's shared
    /// filesystem (the host is local for them). Recorded in the journal as `slurm`.
    #[serde(default, rename = "slurm", skip_serializing_if = "Option::is_none")]
    pub place: Option<NodePlace>,
    /// Where `ssh=` and `ip=` are written (in the file or a `--set`), for their diagnostics.
    #[serde(skip)]
    pub written: HostLocs,
}

/// Where a host's checked properties are written; `None`: not written (a default, or an
/// older journal's host).
#[derive(Debug, Clone, Default)]
pub struct HostLocs {
    pub ssh: Option<Loc>,
    pub ip: Option<Loc>,
}

fn is_written<S: serde::Serializer>(loc: &Option<Loc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bool(loc.is_some())
}

/// `ssh_port_written` read back: written somewhere (no place is stored) or not.
fn written<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Loc>, D::Error> {
    Ok(bool::deserialize(d)?.then(Loc::default))
}

/// Where a host sits in an allocation, whichever allocator makes it (`exec::allocator`): the
/// allocation's name and the node's index in it; `job` and `nodename` are known once allocated.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodePlace {
    pub alloc: String,
    pub node: i64,
    #[serde(default)]
    pub job: Option<String>,
    #[serde(default)]
    pub nodename: Option<String>,
    /// The allocation's extra arguments to its launcher (`srun`), for every step on the node.
    /// Recorded in the journal as `srun_args`.
    #[serde(rename = "srun_args", skip_serializing_if = "Vec::is_empty", default)]
    pub launch_args: Vec<String>,
    /// Inside an array task: this is the node the task runs on, so its steps are local
    /// processes of this machine.
    #[serde(skip)]
    pub here: bool,
    /// Outside any allocation (the setup steps of an array run): the launcher's arguments that
    /// make a job of its own for the step (name, comment, partition…).
    #[serde(skip)]
    pub new_job: Vec<String>,
}

/// A Slurm allocation: what `salloc` asks for. Its node names and addresses are resolved at run
/// time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Allocation {
    pub name: String,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// `--time`, as Slurm writes it (`30`, `00:30:00`, `1-00:00:00`).
    pub time: Option<String>,
    pub nodes: i64,
    pub gpus_per_node: Option<i64>,
    pub constraint: Option<String>,
    /// More `salloc` arguments, split on whitespace.
    pub alloc_args: Vec<String>,
    /// More `srun` arguments for every step, split on whitespace.
    pub srun_args: Vec<String>,
    /// The checkout on the shared filesystem (the hosts' default repo).
    pub repo: String,
    /// `mode="array"`: one `sbatch --array` task per point instead of one allocation.
    pub array: bool,
    /// With `mode="array"`: at most this many tasks run at once (`%K`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle: Option<i64>,
    #[serde(skip)]
    pub loc: Loc,
}

impl Host {
    /// A host on this machine (`ssh local`, 127.0.0.1, repo `.`): the implicit `local` host, or
    /// one `expr stop` reads back by name.
    pub fn local(name: &str, loc: Loc) -> Host {
        Host {
            name: name.into(),
            ssh: "local".into(),
            ssh_port: 22,
            ip: "127.0.0.1".into(),
            repo: ".".into(),
            gpus: None,
            env: Vec::new(),
            loc,
            ssh_port_loc: None,
            place: None,
            written: HostLocs::default(),
        }
    }

    pub fn is_local(&self) -> bool {
        self.ssh == "local"
    }

    /// Why `self` and `other` are one machine, where they are: both run here, one node of one
    /// allocation, one ssh login, or one data-plane address that is not loopback. None where
    /// nothing in the file says so.
    pub fn same_machine(&self, other: &Host) -> Option<&'static str> {
        match (&self.place, &other.place) {
            (Some(a), Some(b)) => {
                return (a.alloc == b.alloc && a.node == b.node)
                    .then_some("one node of one allocation");
            }
            (None, None) => {}
            _ => return None,
        }
        // an ssh login to this machine's own loopback is here too (`ssh="localhost"`)
        let here = |h: &Host| {
            let target = h.ssh.rsplit('@').next().unwrap_or(&h.ssh);
            h.is_local() || matches!(target, "localhost" | "127.0.0.1" | "::1" | "[::1]")
        };
        if here(self) && here(other) {
            return Some("both run here");
        }
        let loopback = |ip: &str| ip.starts_with("127.") || ip == "::1" || ip == "localhost";
        // this machine and an ssh login: one machine where the login's address is this one's
        // own, as written (helper 85: `ip="10.1.1.1"` on both)
        if here(self) || here(other) {
            return (self.ip == other.ip && !loopback(&self.ip)).then_some("one address");
        }
        if self.ssh == other.ssh && self.ssh_port == other.ssh_port {
            Some("one ssh login")
        } else if self.ip == other.ip && !loopback(&self.ip) {
            Some("one address")
        } else {
            None
        }
    }
    /// How commands reach it, as `plan` and deployment.md say it: `runs here`, or the ssh target
    /// with the port where the experiment writes one (else ssh's own configuration decides).
    pub fn login_text(&self) -> String {
        // a node of a Slurm allocation: its steps go through `srun`, not here (deployment.md
        // said "runs here" of it)
        if let Some(p) = self.place.as_ref().filter(|p| !p.here) {
            format!("srun on node {} of allocation `{}`", p.node, p.alloc)
        } else if self.is_local() {
            "runs here".into()
        } else if self.ssh_port_loc.is_some() {
            format!("ssh={} ssh-port={}", self.ssh, self.ssh_port)
        } else {
            format!("ssh={} (port: ssh's own configuration)", self.ssh)
        }
    }
    /// Whether its commands run as processes of this machine (not behind ssh or srun): only
    /// then are they started without a shell on request, and measured by our own `wait4`.
    pub fn runs_here(&self) -> bool {
        self.is_local() && self.place.as_ref().is_none_or(|p| p.here)
    }
}

/// A benchmark kind, by the name of its node (`recstore-e2e`, `bench`, …); `crate::kinds::of`
/// gives its behaviour. Only src/kinds lists the kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct KindId(pub &'static str);

impl<'de> Deserialize<'de> for KindId {
    /// A kind's name from stored data (a journal header's experiment): `kinds::restore` puts
    /// the registered kind's own id and behaviour back.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Ok(KindId(Box::leak(name.into_boxed_str())))
    }
}

/// How run ids name a kind's points: the lane part, and settings named even when not swept.
#[derive(Clone, Copy)]
pub struct RunIdNaming {
    pub lane_slug: fn(&str) -> String,
    pub fixed_axes: &'static [&'static str],
}

/// Run ids' names as they are written (`kinds::restore` puts a stored bench's kind's own back).
impl Default for RunIdNaming {
    fn default() -> Self {
        fn as_written(lane: &str) -> String {
            lane.to_string()
        }
        RunIdNaming {
            lane_slug: as_written,
            fixed_axes: &[],
        }
    }
}

impl fmt::Debug for RunIdNaming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunIdNaming {:?}", self.fixed_axes)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bench {
    pub kind: KindId,
    #[serde(skip)]
    pub naming: RunIdNaming,
    pub name: String,
    pub settings: Params,
    pub lanes: Vec<Lane>,
    pub sweep: Sweep,
    pub repeat: i64,
    pub placement: Placement,
    /// Keys of a `config { … }` block, merged into the file the kind generates (for program
    /// versions whose keys expr does not model), in file order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<ConfigKey>,
    /// Build options of a kind that builds with CMake (`cmake-args`, `build-env`).
    #[serde(default, skip_serializing_if = "BuildOpts::is_empty")]
    pub build: BuildOpts,
    /// Adaptive repeats: `repeat` is then the most runs of a point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<Adaptive>,
    /// What the results must show.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expects: Vec<Expect>,
    /// Points run under a profiler (`profile`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<Profile>,
    #[serde(skip)]
    pub loc: Loc,
    #[serde(skip)]
    pub repeat_loc: Option<Loc>,
}

/// A `profile` of a bench: the points it matches run their measured steps under the tool.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    /// `nsys` or `ncu`.
    pub tool: String,
    #[serde(default)]
    pub lane: Option<String>,
    #[serde(default)]
    pub repeat: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Keep the profiled points in the statistics.
    pub stats: bool,
    #[serde(skip)]
    pub loc: Loc,
}

impl Profile {
    /// Whether it profiles this point.
    pub fn matches(&self, lane: &str, repeat: i64) -> bool {
        self.lane.as_deref().is_none_or(|l| l == lane) && self.repeat.is_none_or(|r| r == repeat)
    }

    /// As written (`check --resolved`).
    pub fn text(&self) -> String {
        let q = |s: &str| Val::Str(s.to_string()).to_kdl();
        let mut o = format!("profile {}", q(&self.tool));
        if let Some(l) = &self.lane {
            o.push_str(&format!(" lane={}", q(l)));
        }
        if let Some(r) = self.repeat {
            o.push_str(&format!(" repeat={r}"));
        }
        if !self.args.is_empty() {
            o.push_str(&format!(" args={}", q(&self.args.join(" "))));
        }
        if self.stats {
            o.push_str(" stats=#true");
        }
        o
    }
}

/// An `expect` of a bench.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Expect {
    /// The lane it is about (`None`: every lane).
    pub lane: Option<String>,
    pub what: ExpectWhat,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The unit the bounds are in (checked against the metric's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(skip)]
    pub loc: Loc,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ExpectWhat {
    /// The metric's mean over repeats, per sweep point.
    Metric { metric: String },
    /// The lane against another on the headline metric, per sweep point (>1: the lane better).
    Speedup { over: String },
    /// A regex every point's logs must (or no log may) match.
    Log { pattern: String, present: bool },
}

impl Expect {
    /// The expectation as written (KDL), for tables and messages.
    pub fn text(&self) -> String {
        let q = |s: &str| Val::Str(s.to_string()).to_kdl();
        let mut t = String::from("expect");
        match &self.what {
            ExpectWhat::Metric { metric } => t.push_str(&format!(
                " {} {}",
                q(self.lane.as_deref().unwrap_or("*")),
                q(metric)
            )),
            ExpectWhat::Speedup { over } => t.push_str(&format!(
                " {} over {} speedup",
                q(self.lane.as_deref().unwrap_or("*")),
                q(over)
            )),
            ExpectWhat::Log { pattern, present } => {
                t.push_str("-log");
                if let Some(l) = &self.lane {
                    t.push_str(&format!(" {}", q(l)));
                }
                t.push_str(&format!(
                    " {}={}",
                    if *present { "contains" } else { "lacks" },
                    q(pattern)
                ));
            }
        }
        for (k, v) in [("min", self.min), ("max", self.max)] {
            if let Some(v) = v {
                t.push_str(&format!(" {k}={}", Val::Float(v).to_kdl()));
            }
        }
        if let Some(u) = &self.unit {
            t.push_str(&format!(" unit={}", q(u)));
        }
        t
    }
}

/// `repeat min=… max=… until-cv=…`: runs of a (lane, sweep point) stop once its headline
/// metric's spread is small enough.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Adaptive {
    pub min: i64,
    pub max: i64,
    /// Stop at this coefficient of variation (percent).
    pub until_cv: Option<f64>,
    /// Stop when the 95 % CI half-width is this percent of the mean.
    pub until_ci: Option<f64>,
    /// Stop a lane's sweep point once its comparison with the first lane is decided: the
    /// ratio's interval (α = 5 % spread over the looks) excludes 1, or lies within ± this
    /// percent of it ([`Adaptive::decided`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decided: Option<f64>,
}

impl Adaptive {
    /// Its stopping rule as written, e.g. `until-cv=2 until-ci=5` (the plan says it where a
    /// repeat may not run).
    pub fn rule(&self) -> String {
        [
            ("until-cv", self.until_cv),
            ("until-ci", self.until_ci),
            ("until-decided", self.until_decided),
        ]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
        .collect::<Vec<_>>()
        .join(" ")
    }

    /// The looks a sequential comparison makes: it is judged before each run of either lane
    /// from `min` to `max`, so twice per repeat.
    pub fn looks(&self) -> i64 {
        2 * (self.max - self.min + 1).max(1)
    }

    /// Whether the comparison of a lane (`b`) with the baseline lane (`a`) is decided
    /// (`until-decided=M`), and how: the interval of mean(b)/mean(a) − 1 (Welch, on the log
    /// scale, as `compare` and the report show it) at confidence 1 − 0.05/K, where K is the
    /// number of looks (Bonferroni: over all looks, a difference is declared where there is
    /// none at most 5 % of the time, and likewise "within ±M %" wrongly), either excludes 0
    /// (a difference) or lies within ±M % (none of practical size). A side without spread
    /// decides nothing (a coarse timer's identical readings are no certainty).
    pub fn decided(&self, a: &[f64], b: &[f64]) -> Option<String> {
        let m = self.until_decided?;
        if (a.len() as i64) < self.min || (b.len() as i64) < self.min {
            return None;
        }
        let spread = |v: &[f64]| crate::util::stats::sd(v).is_some_and(|s| s > 0.0);
        if !spread(a) || !spread(b) {
            return None;
        }
        let k = self.looks();
        let conf = 1.0 - 0.05 / k as f64;
        let (lo, hi) = crate::util::stats::ratio_ci_pct_at(a, b, conf)?;
        let at = format!(
            "{:.1}% interval [{lo:+.2}%, {hi:+.2}%] (α 5% over {k} looks)",
            conf * 100.0
        );
        if lo > 0.0 || hi < 0.0 {
            Some(format!("decided: a difference, {at}"))
        } else if lo >= -m && hi <= m {
            Some(format!("decided: within ±{m}%, {at}"))
        } else {
            None
        }
    }

    /// Whether these values are enough: at least `min`, and every given criterion met. Returns
    /// the reason (what was reached) when they are.
    pub fn done(&self, values: &[f64]) -> Option<String> {
        use crate::util::stats;
        if (values.len() as i64) < self.min {
            return None;
        }
        let mut why = Vec::new();
        if let Some(t) = self.until_cv {
            let cv = stats::cv_percent(values)?.abs();
            if cv > t {
                return None;
            }
            why.push(format!("CV {cv:.2}% ≤ {t}%"));
        }
        if let Some(t) = self.until_ci {
            let h = stats::ci95_half_width_percent(values)?.abs();
            if h > t {
                return None;
            }
            why.push(format!("95% CI ±{h:.2}% ≤ ±{t}%"));
        }
        Some(format!("{} after {} runs", why.join(", "), values.len()))
    }
}

/// What a kind that builds with CMake passes to its build: extra configure arguments, in the
/// order written, and the environment of the configure and build steps.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BuildOpts {
    pub cmake_args: Vec<String>,
    #[serde(serialize_with = "crate::util::secret::masked_env")]
    pub env: Vec<(String, String)>,
}

impl BuildOpts {
    pub fn is_empty(&self) -> bool {
        self.cmake_args.is_empty() && self.env.is_empty()
    }
}

/// One key of a `config { … }` passthrough block: its path in the generated file and its JSON
/// value (a scalar, or an array when the node has several arguments).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigKey {
    pub path: Vec<String>,
    pub value: serde_json::Value,
    #[serde(skip)]
    pub loc: Loc,
}

/// Merge a `config` block into a generated config: each key replaces or adds its value,
/// creating the objects on its path.
pub fn merge_config(config: &mut serde_json::Value, keys: &[ConfigKey]) -> Result<(), String> {
    for k in keys {
        let Some((last, parents)) = k.path.split_last() else {
            continue;
        };
        let mut at = &mut *config;
        for (i, p) in parents.iter().enumerate() {
            let obj = at.as_object_mut().ok_or_else(|| {
                format!(
                    "{:?}: config key `{}`: `{}` is not an object in the generated file",
                    k.loc,
                    k.dotted(),
                    k.path[..i].join(".")
                )
            })?;
            at = obj
                .entry(p.clone())
                .or_insert_with(|| serde_json::Value::Object(Default::default()));
        }
        let obj = at.as_object_mut().ok_or_else(|| {
            format!(
                "{:?}: config key `{}`: `{}` is not an object in the generated file",
                k.loc,
                k.dotted(),
                parents.join(".")
            )
        })?;
        obj.insert(last.clone(), k.value.clone());
    }
    Ok(())
}

impl ConfigKey {
    /// The dotted path, as messages show it (`cache_ps.num_threads`).
    pub fn dotted(&self) -> String {
        self.path.join(".")
    }
}

impl Bench {
    /// Its lanes' names, in declaration order.
    pub fn lane_names(&self) -> Vec<&str> {
        self.lanes.iter().map(|l| l.name.as_str()).collect()
    }
    pub fn setting(&self, name: &str) -> Option<&Val> {
        self.settings.get(name).map(|p| &p.val)
    }
    pub fn int(&self, name: &str) -> i64 {
        self.setting(name).and_then(Val::as_int).unwrap_or(0)
    }
    pub fn str(&self, name: &str) -> &str {
        self.setting(name).and_then(Val::as_str).unwrap_or("")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Lane {
    pub name: String,
    /// Settings this lane overrides.
    pub overrides: Params,
    /// True when expr added the lane because none was written.
    pub implicit: bool,
    /// A property of the lane could not be decoded (already reported): rules that compare its
    /// settings with its name are skipped rather than report a consequence of that error.
    #[serde(skip)]
    pub incomplete: bool,
    #[serde(skip)]
    pub loc: Loc,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Sweep {
    /// Independent axes, in declaration order (the odometer's wheels).
    pub axes: Vec<Axis>,
    /// Groups of axes that advance together.
    pub zips: Vec<Vec<Axis>>,
    pub excludes: Vec<Exclude>,
    /// Axes written but dropped for errors already said (no value of the setting's type, no
    /// such setting): an `exclude` naming one is not said to name no axis as well.
    #[serde(skip)]
    pub dropped: Vec<String>,
}

impl Sweep {
    /// Every axis: the independent ones, then each zip's, in declaration order.
    pub fn all_axes(&self) -> impl Iterator<Item = &Axis> {
        self.axes.iter().chain(self.zips.iter().flatten())
    }
    pub fn axis_names(&self) -> impl Iterator<Item = &str> {
        self.all_axes().map(|a| a.name.as_str())
    }
    pub fn has_axis(&self, name: &str) -> bool {
        self.axis_names().any(|a| a == name)
    }

    /// The matrix as a reader reads it, one part each: an independent axis with its values
    /// (`Axis`), a zip's axes with the values they take together (`(1000, 1), (2000, 3)`), and
    /// each exclude (`lane=slow n=2000`). A zip told as two sweeps reads as their product.
    pub fn parts(&self) -> Vec<SweepPart<'_>> {
        // a text that holds the list's own marks (`a, b`, `c) (d`) in quotes: one value still
        let text = |v: &Val| match v {
            Val::Str(s) if s.is_empty() || s.contains([',', '(', ')', '=', ' ', '"']) => {
                crate::util::shell::comment(&format!("{s:?}"))
            }
            v => crate::util::shell::comment(&v.to_string()),
        };
        let mut out: Vec<SweepPart> = self.axes.iter().map(SweepPart::Axis).collect();
        for z in &self.zips {
            let names: Vec<&str> = z.iter().map(|a| a.name.as_str()).collect();
            let n = z.iter().map(|a| a.values.len()).max().unwrap_or(0);
            let tuples: Vec<String> = (0..n)
                .map(|i| {
                    let one: Vec<String> = z
                        .iter()
                        .map(|a| a.values.get(i).map(text).unwrap_or_default())
                        .collect();
                    format!("({})", one.join(", "))
                })
                .collect();
            out.push(SweepPart::Zip {
                names: names.join(", "),
                values: tuples.join(", "),
            });
        }
        for e in &self.excludes {
            let when: Vec<String> = e
                .when
                .iter()
                .map(|(k, v)| format!("{k}={}", text(v)))
                .collect();
            out.push(SweepPart::Exclude(when.join(" ")));
        }
        out
    }
}

/// One part of a sweep as [`Sweep::parts`] tells it.
pub enum SweepPart<'a> {
    Axis(&'a Axis),
    Zip { names: String, values: String },
    Exclude(String),
}

impl SweepPart<'_> {
    /// `n (1000, 2000)`, `n and k together ((1000, 1), (2000, 3))`, `except lane=slow n=2000`:
    /// the report's prose.
    pub fn prose(&self, l: crate::util::lang::Lang) -> String {
        match self {
            SweepPart::Axis(a) => format!("{}{}", a.name, l.paren(&a.values_text())),
            SweepPart::Zip { names, values } => l.t(
                format!("{names} 同步取值（{values}）"),
                format!("{names} together ({values})"),
            ),
            SweepPart::Exclude(when) => l.t(format!("排除 {when}"), format!("except {when}")),
        }
    }

    /// (`sweep n`, `1000, 2000`), (`zip n, k`, `(1000, 1), (2000, 3)`), (`exclude`,
    /// `lane=slow n=2000`): a row of a settings table.
    pub fn row(&self) -> (String, String) {
        match self {
            SweepPart::Axis(a) => (format!("sweep {}", a.name), a.values_text()),
            SweepPart::Zip { names, values } => (format!("zip {names}"), values.clone()),
            SweepPart::Exclude(when) => ("exclude".into(), when.clone()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Axis {
    pub name: String,
    pub values: Vec<Val>,
    #[serde(skip)]
    pub loc: Loc,
}

impl Axis {
    /// The values as text: "1024, 2048".
    pub fn values_text(&self) -> String {
        // one line: a value's newline is shown `\n` (a raw one started lines that read as the
        // plan's or the report's own)
        self.values
            .iter()
            .map(|v| crate::util::shell::comment(&v.to_string()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exclude {
    pub when: Vec<(String, Val)>,
    #[serde(skip)]
    pub loc: Loc,
}

/// Kind-specific placement: who runs where.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Placement {
    /// Processes placed on hosts, one node each: its role (the child node's name, as the kind
    /// declares it: `client`, `ps`, `node`), its host and the kind's integer properties.
    Nodes(Vec<PlacedNode>),
    Steps {
        params: Vec<(String, Param)>,
        steps: Vec<StepSpec>,
        collect: Option<CollectSpec>,
    },
}

impl Placement {
    /// The placed nodes of one role, in the order written.
    pub fn nodes<'a>(&'a self, role: &'a str) -> impl Iterator<Item = &'a PlacedNode> + 'a {
        let all: &[PlacedNode] = match self {
            Placement::Nodes(n) => n,
            _ => &[],
        };
        all.iter().filter(move |n| n.role == role)
    }
}

/// One placed process (or group of processes): a role on a host with integer properties
/// (`gpu`, `port`, `nproc-per-node`, …), defaults filled in from the kind's schema.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlacedNode {
    pub role: String,
    pub host: String,
    /// The properties in the schema's order.
    pub props: Vec<(String, i64)>,
    #[serde(skip)]
    pub loc: Loc,
    /// Where each property written in the file is.
    #[serde(skip)]
    pub prop_locs: BTreeMap<String, Loc>,
}

impl PlacedNode {
    /// A property's value (0 when the node has no such property).
    pub fn int(&self, key: &str) -> i64 {
        self.props
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
            .unwrap_or(0)
    }

    /// Where a property was written, if it was.
    pub fn loc_of(&self, key: &str) -> Option<Loc> {
        self.prop_locs.get(key).cloned()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    Build,
    /// A correctness test: once per (host, repo) after the builds; a failure stops before any point.
    Test,
    Serve,
    Run,
    /// Before every run of a point (warmup runs too), not timed.
    Prepare,
    /// After a point's timed run, not timed.
    Cleanup,
}

/// A templated step of the generic kind.
/// A `pool`: hosts a bench's steps may run on interchangeably. The plan deals the bench's points
/// out to the members in turn (what `--jobs 1` and commands.sh run); under `expr run --jobs N` a
/// point whose member is busy runs on a free one, and the journal records where.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pool {
    pub name: String,
    pub members: Vec<String>,
    #[serde(skip)]
    pub loc: Loc,
    /// Where each member is named.
    #[serde(skip)]
    pub member_locs: Vec<Loc>,
}

impl Experiment {
    pub fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.iter().find(|p| p.name == name)
    }

    /// The pool a bench's steps name in `host=` (the first, where they name several).
    pub fn pool_of(&self, b: &Bench) -> Option<&Pool> {
        if self.pools.is_empty() {
            return None;
        }
        b.hosts().find_map(|h| self.pool(h))
    }

    /// The experiment with every bench's steps that name a pool placed on member `k` of it
    /// (`k` modulo its size): what each member is checked as.
    pub fn on_member(&self, k: usize) -> Experiment {
        let mut e = self.clone();
        for b in &mut e.benches {
            for p in &self.pools {
                // (an undeclared member is reported where the pool names it)
                let m = p.members.get(k % p.members.len().max(1));
                if let Some(m) = m.filter(|m| self.host(m).is_some()) {
                    b.place_on(&p.name, m);
                }
            }
        }
        e
    }
}

impl Bench {
    /// The hosts its steps or placed processes name, as written.
    pub fn hosts(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match &self.placement {
            Placement::Nodes(n) => Box::new(n.iter().map(|n| n.host.as_str())),
            Placement::Steps { steps, .. } => Box::new(steps.iter().map(|s| s.host.as_str())),
        }
    }

    /// Its steps that name `pool` in `host=` placed on `member` instead.
    pub fn place_on(&mut self, pool: &str, member: &str) {
        match &mut self.placement {
            Placement::Nodes(n) => n
                .iter_mut()
                .filter(|n| n.host == pool)
                .for_each(|n| n.host = member.to_string()),
            Placement::Steps { steps, .. } => steps
                .iter_mut()
                .filter(|s| s.host == pool)
                .for_each(|s| s.host = member.to_string()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepSpec {
    pub kind: StepKind,
    pub name: String,
    pub host: String,
    pub command: String,
    pub cwd: Option<String>,
    pub timeout: i64,
    pub port: Option<i64>,
    /// `port="{{ port }}"`: the readiness port rendered for each point (`port` is then none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_template: Option<String>,
    pub ready_log: Option<String>,
    pub lanes: Option<Vec<String>>,
    /// GPUs the step takes on its host (`gpus=N`): its own CUDA_VISIBLE_DEVICES.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<i64>,
    /// A `run` step's non-zero exits that leave it ok (`exit-ok="any"`, `"1,2"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_ok: Option<ExitOk>,
    #[serde(skip)]
    pub loc: Loc,
    /// Where the command string is, for template errors.
    #[serde(skip)]
    pub command_loc: Loc,
    #[serde(skip)]
    pub port_loc: Option<Loc>,
    /// Where `lanes=` is, for a lane it names that the bench lacks.
    #[serde(skip)]
    pub lanes_loc: Option<Loc>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CollectSpec {
    pub format: String,
    pub path: Option<String>,
    pub pattern: Option<String>,
    pub metric: Option<String>,
    /// `higher` or `lower` is better; unset: unknown (compare then says "changed").
    pub direction: Option<String>,
    /// A CSV's timing model: `collect "csv" … { stages "a_ms" "b_ms"; total "step_ms" }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Box<TimingSpec>>,
    #[serde(skip)]
    pub loc: Loc,
}

impl CollectSpec {
    /// Whether a higher headline is better: as `direction=` says; a CSV's `samples_per_sec` (a
    /// per-step CSV's headline, or that column's mean) is a throughput; else unknown. `check`
    /// and the report ask this one question.
    pub fn higher_is_better(&self) -> Option<bool> {
        match self.direction.as_deref() {
            Some("higher") => Some(true),
            Some("lower") => Some(false),
            Some(_) => None,
            None => (self.format == "csv"
                && self
                    .metric
                    .as_deref()
                    .is_none_or(|m| m == "samples_per_sec"))
            .then_some(true),
        }
    }
}

/// The columns of a user's per-step CSV that are disjoint parts of a step, its total, and the
/// stage that holds data loading.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TimingSpec {
    pub stages: Vec<String>,
    pub total: String,
    pub data_loading: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_adaptive_stopping_rule() {
        let a = Adaptive {
            min: 3,
            max: 30,
            until_cv: Some(2.0),
            until_ci: None,
            until_decided: None,
        };
        // fewer than min: never done, however steady
        assert_eq!(a.done(&[10.0, 10.0]), None);
        // CV 0: done at min
        assert_eq!(
            a.done(&[10.0, 10.0, 10.0]).as_deref(),
            Some("CV 0.00% ≤ 2% after 3 runs")
        );
        // 10 11 12: sd 1, mean 11 → CV 9.09 %: not yet
        assert_eq!(a.done(&[10.0, 11.0, 12.0]), None);
        // 100 101 102 100 101 102: mean 101, sd 0.894 → CV 0.885 %
        assert!(a
            .done(&[100.0, 101.0, 102.0, 100.0, 101.0, 102.0])
            .is_some());
        // both criteria must hold: CV 0.885 % passes, the CI (t(5) 2.571 × 0.894 / √6 = 0.939,
        // 0.93 % of 101) does not pass 0.5 %
        let b = Adaptive {
            until_ci: Some(0.5),
            ..a
        };
        assert_eq!(b.done(&[100.0, 101.0, 102.0, 100.0, 101.0, 102.0]), None);
        let c = Adaptive {
            until_ci: Some(1.0),
            ..a
        };
        assert_eq!(
            c.done(&[100.0, 101.0, 102.0, 100.0, 101.0, 102.0])
                .as_deref(),
            Some("CV 0.89% ≤ 2%, 95% CI ±0.93% ≤ ±1% after 6 runs")
        );
    }
}
