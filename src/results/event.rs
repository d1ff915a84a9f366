//! The journal's events, typed: what a run writes to journal.jsonl and what every reader of a
//! result directory matches on.
//!
//! The format on disk is the one expr wrote before the events were typed: each event is one
//! JSON object whose keys are its fields in the order given here, then `event` (its name),
//! then `at` (when it was written). Fields that some writers (or older journals) lack are
//! `Option`s left out when `None`; the few fields one writer writes as `null` and another
//! leaves out are `Option<Option<_>>` (outer `None`: left out, `Some(None)`: `null`).
//! Parts that are free-form (a host's provenance, the resolved host specs, a timing) stay
//! JSON values.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A field that is present, `null` or not: `Some(None)` for `null`, `None` when left out
/// (with `#[serde(default)]`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// An optional field whose value is not of its type (a hand-edited journal): absent, so the
/// rest of its event still reads.
fn lenient<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// One event of the journal. An event whose name this expr does not know, or whose fields do
/// not decode as its variant's, is [`RunEvent::Other`]: kept as it was read, never dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum RunEvent {
    /// The run's identity: written once preflight passed (again by each resumed run).
    Header(Header),
    /// The flags a program's `--help` listed on a host.
    Introspection(Introspection),
    /// The layout of a config file the checkout's schema takes.
    ConfigLayout(ConfigLayout),
    /// Optional flags left out of a step (its program does not take them).
    #[serde(rename = "flags_left_out")]
    FlagsLeftOut(FlagsLeftOut),
    /// A process group expr started (what `expr stop` stops).
    Process(Process),
    /// A step that ended (or was skipped, or a config file written).
    Step(Step),
    /// A server that exited while its point ran.
    ServerDied(ServerDied),
    /// A point whose failure its own output stands in for.
    Recovered(Recovered),
    /// A step's process group stopped at the end of its point.
    Stopped(Stopped),
    /// Processes that left their process groups, stopped by the run's mark.
    Escaped(Escaped),
    /// Where an array task runs.
    Task(Task),
    /// A Slurm job (or array task) in a state that ended it.
    Slurm(Slurm),
    /// A Slurm array submitted.
    SlurmArray(SlurmArray),
    /// A shell's spawn time, measured (or kept from the run being resumed).
    Calibration(Calibration),
    /// One point's outcome.
    Point(Point),
    /// An adaptive group that reached its most runs.
    Adaptive(Adaptive),
    /// Points a stop left unrun.
    NotRun(NotRun),
    /// Preflight failed: nothing ran.
    PreflightFailed(PreflightFailed),
    /// A host's machine record (preflight's noise probe), one per host after the header.
    Machine(crate::results::machine::Machine),
    /// The run ended.
    End(End),
    /// An event this expr does not know, or one that does not decode: the JSON object as read.
    #[serde(skip)]
    Other(Value),
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Header {
    pub expr_version: Option<String>,
    /// The mark in every step's environment (`expr stop` finds what left a group).
    pub mark: Option<String>,
    pub experiment: Option<String>,
    pub source: Option<String>,
    pub output: Option<String>,
    pub started: Option<String>,
    /// Each host's provenance (hostname, git head, fingerprint, …), as preflight found it.
    pub hosts: Option<Value>,
    /// The hosts as the experiment resolved them (secrets masked).
    pub host_specs: Option<Value>,
    /// The resolved experiment (KDL).
    pub resolved: Option<String>,
    /// The resolved experiment as data, `{"version": MODEL_VERSION, "experiment": …}`: what
    /// `report`, `compare` and `history` read (no KDL parsed again). Absent in older journals, and
    /// where the data would not read back as `resolved` says (then the KDL is read).
    pub model: Option<Value>,
    /// Where each bench's `expect`s were written.
    pub expect_at: Option<Value>,
    /// The points this run was asked for (`--only` selects part of the matrix).
    #[serde(deserialize_with = "lenient")]
    pub run_ids: Option<Vec<String>>,
    /// The directory the run started in (its relative paths are that directory's): where a
    /// resume must start too.
    #[serde(deserialize_with = "lenient")]
    pub cwd: Option<String>,
    /// The ssh configuration file the run was given (`EXPR_SSH_CONFIG`, absolute): `expr stop`
    /// reaches the hosts through it when it is not given again.
    #[serde(deserialize_with = "lenient")]
    pub ssh_config: Option<String>,
    /// The `--set` values the run was given (`KEY=VALUE`, as given): `--resume` takes them
    /// again. (Each of these four fields, of another type, reads as absent.)
    #[serde(deserialize_with = "lenient")]
    pub sets: Option<Vec<String>>,
    /// The `--only` selections the run was given (`KEY=VALUE`): `--resume … --only` replaces
    /// those of the keys it names and keeps the rest.
    #[serde(deserialize_with = "lenient")]
    pub only: Option<Vec<String>>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Introspection {
    pub host: String,
    pub code: String,
    pub cwd: String,
    pub python: String,
    pub script: String,
    pub flags: Vec<String>,
    /// `history` when the flags came from the history cache.
    pub from: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfigLayout {
    pub host: String,
    pub path: String,
    pub layout: String,
    pub schema: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlagsLeftOut {
    pub step: String,
    pub host: String,
    pub flags: Vec<String>,
    pub why: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Process {
    pub run_id: Option<String>,
    pub step: String,
    pub host: String,
    pub pgid: Option<i64>,
    /// The group leader's start time (with `boot`: still the group expr started).
    pub start: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    pub remote_pgid: Option<i64>,
    pub remote_start: Option<u64>,
    pub remote: bool,
    /// Scratch paths of a server (a value store under /dev/shm).
    pub scratch: Vec<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Step {
    /// `Some(None)`: a step of no point (written `null`); `None`: left out (a skipped setup step).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub run_id: Option<Option<String>>,
    pub step: String,
    pub host: String,
    pub phase: Option<String>,
    pub command: Option<String>,
    /// The directory it ran in (`cd` of the plan's and commands.sh's line; absent in older
    /// journals).
    pub cwd: Option<String>,
    pub status: Option<String>,
    pub exit_code: Option<i64>,
    pub log: Option<String>,
    pub elapsed_s: Option<f64>,
    /// Wall, CPU and peak RSS from `wait4`.
    pub timing: Option<Value>,
    /// A Slurm step's id (`JOB.STEP`).
    pub slurm_step: Option<String>,
    /// A config step's file (`Some(None)`: it wrote none, `null`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub file: Option<Option<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerDied {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub step: String,
    pub host: String,
    pub code: Option<i64>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Recovered {
    pub run_id: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stopped {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub step: String,
    pub host: String,
    pub pgid: Option<i64>,
    pub remote_pgid: Option<i64>,
    pub gone: bool,
    pub scratch_removed: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Escaped {
    pub host: String,
    /// What left them (a point, a setup step).
    pub what: String,
    pub stopped: Vec<EscapedProcess>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EscapedProcess {
    pub pid: i64,
    pub cmd: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Task {
    pub job: String,
    pub array_job: Option<String>,
    pub array_task: Option<String>,
    pub node: String,
    /// The allocation's nodes (name, ip).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Value>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Slurm {
    pub job: String,
    pub state: String,
    pub reason: String,
    pub run_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SlurmArray {
    pub job: String,
    pub alloc: String,
    pub tasks: usize,
    pub throttle: Option<i64>,
    pub script: String,
    pub run_ids: Vec<String>,
    /// This array's number (from 1) of `arrays`.
    pub array: usize,
    pub arrays: usize,
    pub command_hashes: Vec<String>,
    pub fingerprint: String,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Calibration {
    pub host: String,
    pub cwd: String,
    pub what: String,
    pub runs: usize,
    pub mean_ms: Option<f64>,
    pub sd_ms: Option<f64>,
    pub samples_ms: Vec<f64>,
    /// The mean CPU time of a run (user, system), where `wait4` measured it (a run on this
    /// machine): subtracted from a point's `user_ms` and `sys_ms`, as hyperfine does.
    pub user_ms: Option<f64>,
    pub sys_ms: Option<f64>,
    /// When a resumed run kept an earlier measurement: when it was measured.
    pub measured_at: Option<String>,
    /// When the event was written (read only: [`super::journal::Journal::emit`] writes it).
    #[serde(skip_serializing)]
    pub at: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Point {
    pub run_id: Option<String>,
    pub lane: Option<String>,
    pub repeat: Option<i64>,
    pub status: Option<String>,
    /// `Some(None)`: the point has no exit code (written `null`); `None`: left out.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub exit_code: Option<Option<i64>>,
    /// Why, in English (manifest.csv's reason, the terminal's line).
    pub reason: Option<String>,
    /// The same reason as data (a report says it in its language); an older journal's point
    /// has only `reason`.
    pub cause: Option<crate::results::reason::Reason>,
    pub command_hash: Option<String>,
    pub fingerprint: Option<String>,
    /// The point's headline number, read as it ended.
    pub value: Option<f64>,
    /// Its launch steps' timing (from `wait4`).
    pub timing: Option<Value>,
    /// The array task that ran it.
    pub task: Option<String>,
    /// The member of its bench's `pool` it ran on (under `--jobs`, perhaps not the planned one).
    pub placed: Option<String>,
    /// What disturbed its measurement (a foreign process on its GPU, throttling), as the
    /// checks before and after it saw.
    pub noise: Option<Vec<String>>,
    /// The same notes as data.
    pub noise_of: Option<Vec<crate::results::reason::Noise>>,
    /// The log of its first launch step (the manifest's `log`).
    pub log: Option<String>,
    /// Its headline as the terminal showed it (`  throughput 12.30 Mops/s · lane: …`).
    pub headline: Option<String>,
}

/// Points a stop left unrun (a failed build, an ended allocation, an array not submitted).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NotRun {
    pub run_ids: Vec<String>,
    /// `failed` or `interrupted`.
    pub status: String,
    /// Why (the manifest's reason is `not run: <reason>`).
    pub reason: String,
    /// The same reason as data (an older journal has only `reason`).
    pub cause: Option<crate::results::reason::Reason>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Adaptive {
    pub run_id: Option<String>,
    pub lane: Option<String>,
    pub note: String,
    /// The group's most runs (`repeat … max=`), which it reached.
    pub max: Option<i64>,
    /// Its coefficient of variation and the 95 % interval's half width, in % of the mean (none:
    /// not computable).
    pub cv_percent: Option<f64>,
    pub ci95_percent: Option<f64>,
}

impl Adaptive {
    /// The note in `l` from the event's numbers: none without them.
    pub fn render(&self, l: crate::util::lang::Lang) -> Option<String> {
        let (Some(lane), Some(max)) = (&self.lane, self.max) else {
            return None;
        };
        let pct = |v: Option<f64>| v.map(|c| format!("{c:.2}%")).unwrap_or_else(|| "—".into());
        let lane = crate::util::shell::comment(lane);
        let (cv, ci) = (pct(self.cv_percent), pct(self.ci95_percent));
        Some(l.t(
            format!("通道 {lane} 达到 max={max} 次运行仍未收敛（CV {cv}，均值的 95% 置信区间 ±{ci}）"),
            format!(
                "lane {lane} reached max={max} runs without converging (CV {cv}, 95% CI ±{ci} of the mean)"
            ),
        ))
    }

    /// The note in `l` when the event holds its numbers and their English is the note
    /// recorded, else the note as recorded.
    pub fn said(&self, l: crate::util::lang::Lang) -> String {
        match self.render(crate::util::lang::Lang::En) {
            Some(en) if en == self.note => self.render(l).unwrap_or(en),
            _ => self.note.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PreflightFailed {
    pub reason: String,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct End {
    pub exit_code: Option<i64>,
    /// What was still alive after teardown (an array task's fragment leaves it out).
    pub survivors: Option<Vec<String>>,
}

impl Header {
    /// Each host's provenance (none when not recorded).
    pub fn provenance(&self) -> &[Value] {
        self.hosts
            .as_ref()
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// A string of the first host's provenance (`git_head`, `hostname`).
    pub fn first_host(&self, key: &str) -> Option<&str> {
        self.provenance().first().and_then(|h| h[key].as_str())
    }

    /// The experiment as the run resolved it, decoded from `resolved` (the run's own resolved
    /// KDL, so a large matrix is allowed); `name` is where its diagnostics say it was read. The
    /// readers (report, compare, history) get the experiment here and never call the parser.
    /// The experiment stored as data (`model`) when its version is this expr's; its benches'
    /// kinds are names until `kinds::restore`.
    pub fn stored_model(&self) -> Option<crate::model::Experiment> {
        let m = self.model.as_ref()?;
        if m["version"].as_u64() != Some(MODEL_VERSION) {
            return None;
        }
        crate::model::Experiment::deserialize(&m["experiment"]).ok()
    }

    /// The experiment read from its resolved KDL (a journal without `model`).
    pub fn experiment(&self, name: &str) -> Result<crate::model::Experiment, String> {
        let text = self
            .resolved
            .as_deref()
            .ok_or("the journal header has no resolved experiment")?;
        let loaded = crate::parse::load::load_str(
            name,
            text,
            &crate::parse::validate::Options {
                allow_large: true,
                max_input_mib: None,
            },
        );
        loaded.experiment.ok_or_else(|| {
            format!(
                "{name}: the resolved experiment in the journal's header does not decode: {}",
                loaded
                    .diags
                    .first()
                    .map(|d| d.message.clone())
                    .unwrap_or_default()
            )
        })
    }
}

/// The version of the experiment data in a journal header's `model` (another is read from the
/// resolved KDL).
pub const MODEL_VERSION: u64 = 1;

impl RunEvent {
    /// The event a journal line's JSON object is: its variant when its name is known and its
    /// fields decode, else [`RunEvent::Other`] holding it as it is.
    pub fn from_value(v: Value) -> RunEvent {
        match RunEvent::deserialize(&v) {
            Ok(e) => e,
            Err(_) => RunEvent::Other(v),
        }
    }

    /// The event's name as written (`None`: an object with no `event`).
    pub fn name(&self) -> Option<&str> {
        Some(match self {
            RunEvent::Header(_) => "header",
            RunEvent::Introspection(_) => "introspection",
            RunEvent::ConfigLayout(_) => "config-layout",
            RunEvent::FlagsLeftOut(_) => "flags_left_out",
            RunEvent::Process(_) => "process",
            RunEvent::Step(_) => "step",
            RunEvent::ServerDied(_) => "server-died",
            RunEvent::Recovered(_) => "recovered",
            RunEvent::Stopped(_) => "stopped",
            RunEvent::Escaped(_) => "escaped",
            RunEvent::Task(_) => "task",
            RunEvent::Slurm(_) => "slurm",
            RunEvent::SlurmArray(_) => "slurm-array",
            RunEvent::Calibration(_) => "calibration",
            RunEvent::Point(_) => "point",
            RunEvent::Adaptive(_) => "adaptive",
            RunEvent::NotRun(_) => "not-run",
            RunEvent::PreflightFailed(_) => "preflight-failed",
            RunEvent::Machine(_) => "machine",
            RunEvent::End(_) => "end",
            RunEvent::Other(v) => return v.get("event").and_then(Value::as_str),
        })
    }

    /// The event as a JSON object in the journal's key order: its fields, then `event` (`at`
    /// is added by the journal as it writes). [`RunEvent::Other`] is as it was read.
    pub fn to_value(&self) -> Value {
        if let RunEvent::Other(v) = self {
            return v.clone();
        }
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(o) = v.as_object_mut() {
            // serde writes the tag first; the journal has always had it after the fields
            if let Some(name) = o.shift_remove("event") {
                o.insert("event".into(), name);
            }
        }
        v
    }

    /// The header, when this is one.
    pub fn header(&self) -> Option<&Header> {
        match self {
            RunEvent::Header(h) => Some(h),
            _ => None,
        }
    }

    /// The point, when this is one.
    pub fn point(&self) -> Option<&Point> {
        match self {
            RunEvent::Point(p) => Some(p),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header whose resolved experiment does not read names where it stands.
    #[test]
    fn a_resolved_experiment_that_does_not_decode_names_the_journal() {
        let h = Header {
            resolved: Some("experiment x {".into()),
            ..Default::default()
        };
        let e = h.experiment("out/journal.jsonl (resolved)").unwrap_err();
        assert!(
            e.starts_with("out/journal.jsonl (resolved): the resolved experiment in the journal's header does not decode: "),
            "{e}"
        );
    }
    use crate::results::journal::{self, Journal};
    use serde_json::json;

    /// One of every variant, with every field set that some writer sets.
    fn every_variant() -> Vec<RunEvent> {
        let mut v = run_variants();
        v.extend(point_variants());
        v
    }

    /// The run's own events: its header, what it learned, its steps and processes.
    fn run_variants() -> Vec<RunEvent> {
        vec![
            RunEvent::Header(Header {
                expr_version: Some("0.1.0".into()),
                mark: Some("1.2".into()),
                experiment: Some("x".into()),
                source: Some("x.kdl".into()),
                output: Some("results/x".into()),
                started: Some("2026-01-01T00:00:00+00:00".into()),
                hosts: Some(json!([{"host": "local", "git_head": "abc"}])),
                host_specs: Some(json!([{"name": "local", "ssh": "local"}])),
                resolved: Some("experiment x {}".into()),
                model: Some(json!({"version": MODEL_VERSION, "experiment": {"name": "x"}})),
                expect_at: Some(json!([["x.kdl:3:5"]])),
                run_ids: Some(vec!["a_r0".into()]),
                cwd: Some("/work".into()),
                ssh_config: Some("/work/ssh_config".into()),
                sets: Some(vec!["v=7".into(), "s=a=b".into()]),
                only: Some(vec!["lane=fast".into(), "n=1000".into()]),
            }),
            RunEvent::Introspection(Introspection {
                host: "local".into(),
                code: "abc+none".into(),
                cwd: ".".into(),
                python: "python3".into(),
                script: "t.py".into(),
                flags: vec!["--a".into(), "--b".into()],
                from: Some("history".into()),
            }),
            RunEvent::ConfigLayout(ConfigLayout {
                host: "local".into(),
                path: "c.json".into(),
                layout: "flat".into(),
                schema: "c.schema.json".into(),
            }),
            RunEvent::FlagsLeftOut(FlagsLeftOut {
                step: "run1-a_r0".into(),
                host: "local".into(),
                flags: vec!["--c".into()],
                why: "not in --help".into(),
            }),
            RunEvent::Process(Process {
                run_id: Some("a_r0".into()),
                step: "run1-a_r0".into(),
                host: "local".into(),
                pgid: Some(12),
                start: Some(34),
                boot: Some("b00t".into()),
                remote_pgid: None,
                remote_start: None,
                remote: false,
                scratch: vec!["/dev/shm/expr-x".into()],
            }),
            RunEvent::Step(Step {
                run_id: Some(None),
                step: "build1".into(),
                host: "local".into(),
                phase: Some("build".into()),
                command: Some("make".into()),
                cwd: Some("./build".into()),
                status: Some("ok".into()),
                exit_code: Some(0),
                log: Some("logs/build1-local.log".into()),
                elapsed_s: Some(0.25),
                timing: Some(json!({"wall_ms": 250.0})),
                slurm_step: Some("12.0".into()),
                file: None,
            }),
            RunEvent::Step(Step {
                run_id: Some(Some("a_r0".into())),
                step: "cfg-a_r0".into(),
                host: "local".into(),
                phase: Some("config".into()),
                status: Some("ok".into()),
                file: Some(None),
                ..Default::default()
            }),
            RunEvent::ServerDied(ServerDied {
                run_id: Some("a_r0".into()),
                step: "s-a_r0".into(),
                host: "local".into(),
                code: Some(-9),
            }),
            RunEvent::Recovered(Recovered {
                run_id: Some("a_r0".into()),
                reason: "rank CSVs stand in".into(),
            }),
            RunEvent::Stopped(Stopped {
                run_id: Some("a_r0".into()),
                step: "s-a_r0".into(),
                host: "local".into(),
                pgid: Some(12),
                remote_pgid: Some(99),
                gone: true,
                scratch_removed: vec!["/dev/shm/expr-x".into()],
            }),
            RunEvent::Escaped(Escaped {
                host: "local".into(),
                what: "point a_r0".into(),
                stopped: vec![EscapedProcess {
                    pid: 7,
                    cmd: "sleep 9".into(),
                }],
            }),
        ]
    }

    /// The Slurm, point and end events, and one from a later version.
    fn point_variants() -> Vec<RunEvent> {
        vec![
            RunEvent::Task(Task {
                job: "12".into(),
                array_job: Some("11".into()),
                array_task: None,
                node: "n1".into(),
                nodes: Some(json!([{"name": "n1", "ip": "10.0.0.1"}])),
            }),
            RunEvent::Slurm(Slurm {
                job: "11_0".into(),
                state: "TIMEOUT".into(),
                reason: "None".into(),
                run_id: Some("a_r0".into()),
            }),
            RunEvent::SlurmArray(SlurmArray {
                job: "11".into(),
                alloc: "gpu".into(),
                tasks: 2,
                throttle: None,
                script: "runtime/array/job-1.sh".into(),
                run_ids: vec!["a_r0".into(), "a_r1".into()],
                array: 1,
                arrays: 1,
                command_hashes: vec!["h0".into(), "h1".into()],
                fingerprint: "abc+none".into(),
            }),
            RunEvent::Calibration(Calibration {
                host: "local".into(),
                cwd: ".".into(),
                what: "shell spawn".into(),
                runs: 3,
                mean_ms: Some(1.5),
                sd_ms: Some(0.1),
                samples_ms: vec![1.4, 1.5, 1.6],
                user_ms: Some(0.8),
                sys_ms: Some(0.4),
                measured_at: Some("2026-01-01T00:00:00+00:00".into()),
                at: None,
            }),
            RunEvent::Point(Point {
                run_id: Some("a_r0".into()),
                lane: Some("base".into()),
                repeat: Some(0),
                status: Some("ok".into()),
                exit_code: Some(Some(0)),
                reason: Some(String::new()),
                cause: Some(crate::results::reason::Reason::Text {
                    text: String::new(),
                }),
                command_hash: Some("h0".into()),
                fingerprint: Some("abc+none".into()),
                value: Some(12.5),
                timing: Some(json!({"wall_ms": 3.0})),
                task: Some("11_0".into()),
                placed: Some("w2".into()),
                noise: Some(vec!["foreign process".into()]),
                noise_of: Some(vec![crate::results::reason::Noise::NotChecked {
                    host: "local".into(),
                    error: "timed out".into(),
                }]),
                log: Some("r/logs/run1-a_r0-local.log".into()),
                headline: Some("  throughput 12.50 ops/s".into()),
            }),
            RunEvent::Point(Point {
                run_id: Some("a_r1".into()),
                status: Some("failed".into()),
                exit_code: Some(None),
                ..Default::default()
            }),
            RunEvent::Adaptive(Adaptive {
                run_id: Some("a_r1".into()),
                lane: Some("base".into()),
                note: "max runs reached".into(),
                max: Some(8),
                cv_percent: Some(4.25),
                ci95_percent: None,
            }),
            RunEvent::NotRun(NotRun {
                run_ids: vec!["a_r2".into(), "a_r3".into()],
                status: "failed".into(),
                reason: "build `build1` on `local` failed (exit 2)".into(),
                cause: Some(crate::results::reason::build1_failed(
                    "logs/build1-local.log",
                )),
            }),
            RunEvent::PreflightFailed(PreflightFailed {
                reason: "no such host".into(),
            }),
            RunEvent::Machine(crate::results::machine::Machine {
                host: "local".into(),
                gpus: Some(vec![crate::results::machine::Gpu {
                    index: Some(0),
                    sm_mhz: Some(1410.0),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            RunEvent::End(End {
                exit_code: Some(0),
                survivors: Some(vec![]),
            }),
            RunEvent::End(End {
                exit_code: Some(3),
                survivors: None,
            }),
            RunEvent::Other(json!({"future": 1, "event": "something-new"})),
        ]
    }

    #[test]
    fn every_variant_round_trips_through_the_journal() {
        let (_dir, path) = crate::util::testutil::temp_path("journal.jsonl");
        let events = every_variant();
        let mut j = Journal::open(&path).unwrap();
        for e in &events {
            j.emit(e);
        }
        drop(j);
        let (read, bad) = journal::events_checked(&path);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(read.len(), events.len());
        let text = std::fs::read_to_string(&path).unwrap();
        for (((n, got), want), line) in read.iter().zip(&events).zip(text.lines()) {
            let mut got = got.clone();
            // the time the journal wrote is read back, never written by the event
            if let RunEvent::Calibration(c) = &mut got {
                assert!(c.at.is_some());
                c.at = None;
            }
            if let RunEvent::Other(Value::Object(o)) = &mut got {
                o.shift_remove("at");
            }
            assert_eq!(&got, want, "line {n}: {line}");
            // the name, then the time, end every line
            let name = want.name().unwrap();
            assert!(
                line.contains(&format!(r#","event":"{name}","at":""#)),
                "{line}"
            );
        }
        // every variant is in the list above
        let names: std::collections::BTreeSet<&str> =
            events.iter().filter_map(RunEvent::name).collect();
        assert_eq!(names.len(), 21, "{names:?}");
    }

    #[test]
    fn an_adaptive_note_is_said_in_the_report_language_only_from_its_own_numbers() {
        use crate::util::lang::Lang;
        let mut a = Adaptive {
            run_id: Some("w_r5".into()),
            lane: Some("w".into()),
            note: String::new(),
            max: Some(6),
            cv_percent: Some(40.5),
            ci95_percent: None,
        };
        a.note = a.render(Lang::En).unwrap();
        assert_eq!(
            a.note,
            "lane w reached max=6 runs without converging (CV 40.50%, 95% CI ±— of the mean)"
        );
        assert_eq!(
            a.said(Lang::Zh),
            "通道 w 达到 max=6 次运行仍未收敛（CV 40.50%，均值的 95% 置信区间 ±—）"
        );
        // a note its numbers do not give (an older journal's, or an edited one): as recorded
        let old = Adaptive {
            note: "max runs reached".into(),
            ..a.clone()
        };
        assert_eq!(old.said(Lang::Zh), "max runs reached");
        let bare = Adaptive { max: None, ..a };
        assert_eq!(bare.said(Lang::Zh), bare.note);
    }

    /// Lines the journal held before its events were typed (a quickstart run's).
    const OLD: &[&str] = &[
        r##"{"expr_version":"0.1.0","mark":"28810.1796161283354043596","experiment":"quickstart","source":"examples/quickstart.kdl","output":"/tmp/ev-old-run","started":"2026-12-01T21:41:23.351669101+00:00","hosts":[{"host":"local","hostname":"vm","repo":".","git_head":"cdaa2d667a54ab239dba0847712afb701f68a2ea","dirty_files":3,"fingerprint":"cdaa2d667a54ab239dba0847712afb701f68a2ea+none","runner_files":[],"tree_diff":"2973273678"}],"host_specs":[{"name":"local","ssh":"local","ssh_port":22,"ip":"127.0.0.1","repo":".","gpus":null,"env":[["PYTHONDONTWRITEBYTECODE","1"]]}],"resolved":"experiment \"quickstart\" {\n    description \"Embedding table behind a TCP server vs in process\"\n    output \"results/quickstart_{{ started | date(format='%m%d%H%M%S') }}\"\n}\n\nhost \"local\" ssh=\"local\" ssh-port=22 ip=\"127.0.0.1\" repo=\".\" {\n    env PYTHONDONTWRITEBYTECODE=\"1\"\n}\n\nbench \"quickstart\" {\n    param \"mode\" \"tcp\"\n    param \"batch-size\" 64\n    param \"steps\" 30\n    param \"warmup-steps\" 5\n    param \"dim\" 16\n    param \"port\" 17070\n    build \"python3 -c \\\"import sys; [compile(open(f).read(), f, 'exec') for f in sys.argv[1:]]\\\" examples/quickstart/server.py examples/quickstart/trainer.py\" host=\"local\" timeout=600\n    serve \"table\" \"python3 examples/quickstart/server.py --host {{ hosts.local.ip }} --port {{ port }} --dim {{ dim }}\" host=\"local\" port=17070 ready-timeout=20 lanes=\"table-tcp\"\n    run \"python3 examples/quickstart/trainer.py --mode {{ mode }} --host {{ hosts.local.ip }} --port {{ port }} --batch-size {{ batch_size }} --steps {{ steps }} --warmup-steps {{ warmup_steps }} --dim {{ dim }} --out {{ outdir }}/steps.csv\" host=\"local\" timeout=120\n    collect \"csv\" path=\"steps.csv\" metric=\"samples_per_sec\"\n    warmup 0  // default\n    warmup-scope \"group\"  // default\n    shell \"bash\"  // default\n    repeat 1\n    lane \"table-tcp\" mode=\"tcp\"\n    lane \"table-inproc\" mode=\"inproc\"\n    sweep \"batch-size\" 32 64 128\n}\n","expect_at":[[]],"run_ids":["table_tcp_b32_r0","table_inproc_b32_r0","table_tcp_b64_r0","table_inproc_b64_r0","table_tcp_b128_r0","table_inproc_b128_r0"],"event":"header","at":"2026-12-01T21:41:23.380009622+00:00"}"##,
        r##"{"run_id":null,"step":"build1","host":"local","pgid":28854,"start":926529,"boot":"56dc5aa7-949c-4bb6-b468-195b638ba396","remote_pgid":null,"remote_start":null,"remote":false,"scratch":[],"event":"process","at":"2026-12-01T21:41:23.382061283+00:00"}"##,
        r##"{"run_id":null,"step":"build1","host":"local","phase":"build","command":"export PYTHONDONTWRITEBYTECODE=1; python3 -c \"import sys; [compile(open(f).read(), f, 'exec') for f in sys.argv[1:]]\" examples/quickstart/server.py examples/quickstart/trainer.py","status":"ok","exit_code":0,"log":"/tmp/ev-old-run/logs/build1-local.log","elapsed_s":0.178676744,"timing":{"wall_ms":178.67674399999999,"user_ms":75.957,"sys_ms":24.697,"max_rss_mib":20.6171875},"event":"step","at":"2026-12-01T21:41:23.559335141+00:00"}"##,
        r##"{"run_id":"table_tcp_b32_r0","step":"table-table_tcp_b32_r0","host":"local","phase":"serve","command":"export PYTHONDONTWRITEBYTECODE=1; python3 examples/quickstart/server.py --host 127.0.0.1 --port 17070 --dim 16","status":"ready","exit_code":0,"log":"/tmp/ev-old-run/logs/table-table_tcp_b32_r0-local.log","elapsed_s":0.189169844,"event":"step","at":"2026-12-01T21:41:23.749408546+00:00"}"##,
        r##"{"run_id":"table_tcp_b32_r0","step":"table-table_tcp_b32_r0","host":"local","pgid":28981,"remote_pgid":null,"gone":true,"scratch_removed":[],"event":"stopped","at":"2026-12-01T21:41:24.032114141+00:00"}"##,
        r##"{"run_id":"table_tcp_b32_r0","lane":"table-tcp","repeat":0,"status":"ok","exit_code":0,"reason":"","command_hash":"4a4a4d082a986210","fingerprint":"cdaa2d667a54ab239dba0847712afb701f68a2ea+none","value":24893.4444,"timing":{"wall_ms":278.353953,"user_ms":107.774,"sys_ms":28.688000000000002,"max_rss_mib":20.6171875},"event":"point","at":"2026-12-01T21:41:24.033420502+00:00"}"##,
        r##"{"exit_code":0,"survivors":[],"event":"end","at":"2026-12-01T21:41:26.193664270+00:00"}"##,
        // hand-written journals (tests/run.rs) lack fields expr writes
        r#"{"event":"header","host_specs":[{"name":"far","ssh":"far","repo":"."}]}"#,
        r#"{"event":"process","step":"s-b_r0","host":"far","pgid":null,"remote_pgid":4242,"remote_start":1,"remote":true}"#,
    ];

    #[test]
    fn old_lines_read_as_their_variants_and_write_back_the_same() {
        let events: Vec<RunEvent> = OLD
            .iter()
            .map(|l| RunEvent::from_value(serde_json::from_str(l).unwrap()))
            .collect();
        let names: Vec<&str> = events.iter().filter_map(RunEvent::name).collect();
        assert_eq!(
            names,
            ["header", "process", "step", "step", "stopped", "point", "end", "header", "process"]
        );
        assert!(!events.iter().any(|e| matches!(e, RunEvent::Other(_))));
        let RunEvent::Header(h) = &events[0] else {
            unreachable!()
        };
        assert_eq!(h.experiment.as_deref(), Some("quickstart"));
        assert_eq!(h.run_ids.as_ref().map(Vec::len), Some(6));
        assert!(h
            .resolved
            .as_deref()
            .is_some_and(|r| r.contains("quickstart")));
        let RunEvent::Step(s) = &events[2] else {
            unreachable!()
        };
        assert_eq!((s.run_id.clone(), s.exit_code), (Some(None), Some(0)));
        let RunEvent::Point(p) = &events[5] else {
            unreachable!()
        };
        assert_eq!(p.run_id.as_deref(), Some("table_tcp_b32_r0"));
        assert_eq!(p.value, Some(24893.4444));
        assert_eq!(p.exit_code, Some(Some(0)));
        let RunEvent::End(e) = &events[6] else {
            unreachable!()
        };
        assert_eq!((e.exit_code, e.survivors.clone()), (Some(0), Some(vec![])));
        let RunEvent::Process(p) = &events[8] else {
            unreachable!()
        };
        assert_eq!((p.pgid, p.remote_pgid, p.remote), (None, Some(4242), true));
        // what expr writes, it writes as before: the same keys in the same order, `null`s where
        // there were (compared through a JSON value: serde_json reads a float to the nearest
        // f64 only, so a line's own text may spell a number longer)
        for (line, e) in OLD.iter().zip(&events).take(7) {
            let old: Value = serde_json::from_str(line).unwrap();
            let mut v = e.to_value();
            v.as_object_mut()
                .unwrap()
                .insert("at".into(), old["at"].clone());
            assert_eq!(v.to_string(), old.to_string());
        }
    }

    #[test]
    fn a_header_field_of_another_type_reads_as_absent_and_the_header_still_reads() {
        let v = json!({
            "event": "header", "experiment": "x", "output": "out",
            "sets": [1, {"a": 2}], "run_ids": "a_r0", "cwd": 7, "ssh_config": false
        });
        let RunEvent::Header(h) = RunEvent::from_value(v) else {
            panic!("the header did not read");
        };
        assert_eq!(
            (h.experiment.as_deref(), h.output.as_deref()),
            (Some("x"), Some("out"))
        );
        assert_eq!(
            (h.sets, h.run_ids, h.cwd, h.ssh_config),
            (None, None, None, None)
        );
    }

    #[test]
    fn unknown_and_undecodable_events_are_kept_as_read() {
        let (_dir, path) = crate::util::testutil::temp_path("journal.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"event":"point","run_id":"a","status":"ok"}"#,
                "\n",
                r#"{"event":"from-the-future","x":1}"#,
                "\n",
                r#"{"event":"point","run_id":["not","a","string"]}"#,
                "\n",
                r#"{"no":"event"}"#,
                "\n",
                "not json\n",
                r#"{"event":"end","exit_code":0}"#,
                "\n",
            ),
        )
        .unwrap();
        let (good, bad) = journal::events_checked(&path);
        let lines: Vec<usize> = good.iter().map(|(n, _)| *n).collect();
        assert_eq!(lines, [1, 2, 3, 4, 6]);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].0, 5);
        assert!(matches!(&good[0].1, RunEvent::Point(p) if p.run_id.as_deref() == Some("a")));
        assert!(matches!(&good[1].1, RunEvent::Other(v) if v["x"] == 1));
        assert_eq!(good[1].1.name(), Some("from-the-future"));
        assert!(matches!(&good[2].1, RunEvent::Other(v) if v["event"] == "point"));
        assert_eq!(good[3].1.name(), None);
        assert!(matches!(&good[4].1, RunEvent::End(e) if e.exit_code == Some(0)));
    }
}
