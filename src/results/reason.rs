//! Why a point ended as it did, as data: what happened and its facts (step, host, exit code,
//! command, log, …), recorded in the journal beside the English sentence and rendered in a
//! report's language. The English rendering is the sentence the run writes to manifest.csv and
//! the terminal: one source of both. Facts are kept verbatim (a command as the run quoted it, a
//! path, a host name, a tool's or collector's own message); only the sentence around them is
//! translated.

use serde::{Deserialize, Serialize};

use crate::util::lang::Lang;

/// Why a point (or the points a stop left unrun) ended as it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "kebab-case")]
pub enum Reason {
    /// Text only (an older journal's, or a message that has no structure).
    Text { text: String },
    /// Parts said one after the other (`a; b`).
    Join { parts: Vec<Reason> },
    /// A reason with more said at the end of its first line (a log's tail stays below).
    Amend {
        reason: Box<Reason>,
        more: Box<Reason>,
    },
    /// The point's output directory could not be made on a host.
    NoOutputDir {
        path: String,
        host: String,
        error: String,
    },
    /// A config file could not be written.
    ConfigFailed {
        step: String,
        host: String,
        error: String,
    },
    /// A server's port answered before the server started.
    PortInUse {
        step: String,
        host: String,
        ip: String,
        port: i64,
    },
    /// A server that could not be spawned.
    ServerNotStarted {
        step: String,
        host: String,
        error: String,
    },
    /// A server that did not become ready.
    ServerNotReady {
        step: String,
        host: String,
        why: NotReady,
        log: String,
        tail: String,
    },
    /// A prepare, warmup or cleanup step that did not end ok.
    StepFailed {
        phase: String,
        step: String,
        host: String,
        status: String,
        code: i64,
        log: String,
    },
    /// A client that could not be spawned.
    ClientNotStarted { step: String, error: String },
    /// The run was interrupted while a client ran.
    Interrupted { step: String, host: String },
    /// srun exited 0, but Slurm had killed the step (its log's line says so).
    KilledBySlurm {
        step: String,
        host: String,
        line: String,
    },
    /// A client that failed or timed out (`timeout_s` set when it was stopped at its deadline).
    ClientFailed {
        step: String,
        host: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_s: Option<i64>,
        status: String,
        code: i64,
        command: String,
        log: String,
        tail: String,
    },
    /// A server that exited while the point ran (`then`: what the point's outcome was).
    ServerDied {
        step: String,
        host: String,
        code: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        then: Option<Box<Reason>>,
        log: String,
        tail: String,
    },
    /// Collecting a step's artifacts failed.
    CollectFailed { step: String, log: String },
    /// A failed point whose complete output stands in for it.
    Recovered {
        #[serde(default)]
        exit: Option<i64>,
        line: String,
        evidence: Evidence,
    },
    /// The kind's report of a crashed program is complete, but `strict #true` counts the crash.
    Strict { evidence: String },
    /// The crashed program's own report cannot stand in.
    ReportCannotStandIn { error: String },
    /// The rank CSVs of a failed distributed parent cannot stand in.
    RanksCannotStandIn { error: String },
    /// The result directory's disk is full.
    DiskFull,
    /// The point ran to its end, but its numbers cannot be read: the collector's message.
    NoData { message: String },
    /// An adaptive repeat its group did not need (the adaptive rule's words).
    NotNeeded { why: String },
    /// The build or a correctness test failed: nothing after it runs.
    SetupFailed {
        test: bool,
        step: String,
        host: String,
        status: String,
        code: i64,
        /// True: before an array was submitted; false: before any benchmark run.
        array: bool,
        log: String,
    },
    /// A point a stop left unrun, and why.
    NotRun { why: Box<Reason> },
    /// What `noise "refuse"` refused to measure under (an array task's node).
    NoiseRefused { found: Found },
    /// The run was interrupted (points it did not start).
    RunInterrupted,
    /// The run was interrupted by a signal (`Int`, `Term`).
    Signal { signal: String },
    /// `--fail-fast` stopped the run after a failed point.
    FailFast,
    /// An earlier array stopped the run (arrays not submitted).
    EarlierArrayStopped,
    /// `sbatch` failed (its message).
    SubmitFailed { error: String },
    /// A Slurm job (or array task) that ended: its state and Slurm's reason.
    SlurmEnded {
        job: String,
        /// An array task (`Slurm array task …`) rather than a job.
        task: bool,
        state: String,
        why: String,
    },
    /// An array task that never started: its state and why it was pending.
    TaskNeverStarted {
        task: String,
        state: String,
        pending: String,
    },
    /// An array task that ended without recording its point.
    TaskLost { task: String },
    /// Where an array task's output is.
    TaskOutput { log: String },
    /// The run was interrupted while the point ran (an array task's).
    InterruptedWhileRan,
    /// What disturbed the point's measurement.
    Noise { notes: Vec<Noise> },
}

/// Why a server was not ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub enum NotReady {
    BadRegex {
        error: String,
    },
    ExitedBefore {
        code: i64,
    },
    Interrupted,
    /// It exited; what answered on its port was another process.
    AnsweredByOther {
        code: i64,
    },
    Timeout {
        secs: i64,
        probe: Probe,
    },
}

/// The readiness probe that did not succeed in time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "probe", rename_all = "kebab-case")]
pub enum Probe {
    Tcp { ip: String, port: i64 },
    Log { regex: String },
    Alive { ms: i64 },
    None,
}

/// What shows a failed point's output complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum Evidence {
    /// Every rank's CSV is complete.
    Ranks {
        world: i64,
        steps: i64,
        merged: bool,
    },
    /// The kind's judgement, in its own words.
    Own { text: String },
}

/// One thing that disturbed a point's measurement (the check between points).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "kebab-case")]
pub enum Noise {
    /// A process not of this run on a GPU it uses.
    Foreign {
        host: String,
        gpu: String,
        pid: i64,
        #[serde(default)]
        comm: Option<String>,
        #[serde(default)]
        user: Option<String>,
        #[serde(default)]
        mib: Option<f64>,
    },
    /// The GPUs could not be asked after the point.
    NotChecked { host: String, error: String },
    /// Clocks slowed down (NVML's reasons, by name).
    Throttled {
        host: String,
        gpu: String,
        reasons: Vec<String>,
        #[serde(default)]
        sm_mhz: Option<f64>,
    },
}

/// A status word (manifest.csv's, or a step's) in `l`.
pub fn status_word(l: Lang, s: &str) -> &str {
    match (l, s) {
        (Lang::En, _) => s,
        (Lang::Zh, "ok") => "成功",
        (Lang::Zh, "failed") => "失败",
        (Lang::Zh, "no-data") => "无数据",
        (Lang::Zh, "interrupted") => "被中断",
        (Lang::Zh, "missing") => "未运行",
        (Lang::Zh, "timeout") => "超时",
        (Lang::Zh, "skipped") => "跳过",
        (Lang::Zh, _) => s,
    }
}

/// How a step that was waited for ended, after its name: `failed (exit 3)`, `timed out and
/// was stopped`, `did not start (its log says why)`, `was interrupted` (a timeout, a step that
/// could not be started and one a signal to expr stopped carry no exit code of their own:
/// theirs read as `signal 1, SIGHUP` or expr's 130). Chinese without the leading space.
pub fn ended_text(l: Lang, status: &str, code: i64) -> String {
    match status {
        "timeout" => l.t("超时，已被停止", "timed out and was stopped").into(),
        // its code is expr's own (130, 129, 131), not the step's (helper 88)
        "interrupted" => l.t("被中断", "was interrupted").into(),
        NOT_STARTED => l
            .t("未能启动（原因见日志）", "did not start (its log says why)")
            .into(),
        _ => l.t(
            format!(
                "{}（{}）",
                status_word(l, status),
                code_text(code, "exit", l)
            ),
            format!("{status} ({})", code_text(code, "exit", l)),
        ),
    }
}

/// How a build or test step of the journal ended, for a sentence that goes on after it:
/// `failed, exit 2` (`exit null` where the journal holds no code), `timed out and was
/// stopped`, `did not start (its log says why)`.
pub fn step_end(l: Lang, status: &str, code: Option<i64>) -> String {
    match (status, code) {
        ("timeout" | NOT_STARTED | "interrupted", Some(c)) => ended_text(l, status, c),
        (_, c) => format!(
            "{status}{}{}",
            l.comma(),
            c.map_or("exit null".to_string(), |c| code_text(c, "exit", l))
        ),
    }
}

/// The status of a step that could not be started (a program that is not there without a
/// shell, a host that refused the spawn).
pub const NOT_STARTED: &str = "not-started";

/// A collector's own diagnostic (`file:line: …`, written by the kind that reads the files),
/// quoted as recorded: as it is in English, marked as a quotation in Chinese
/// (`收集器原文「…」`), so a Chinese sentence never runs on in English.
pub fn quoted(l: Lang, message: &str) -> String {
    l.t(format!("收集器原文「{message}」"), message.to_string())
}

/// An exit code inside a sentence's parentheses: `exit 3` (`code 3` where `word` is "code"),
/// and for a process a signal ended (wait4's negative code) `signal 15, SIGTERM`, never
/// `exit -15`.
pub fn code_text(code: i64, word: &str, l: Lang) -> String {
    if code < 0 {
        match signal_name(-code) {
            "" => format!("{} {}", l.t("信号", "signal"), -code),
            n => format!("{} {}{}{n}", l.t("信号", "signal"), -code, l.comma()),
        }
    } else {
        format!("{} {code}", l.t("退出码", word))
    }
}

fn signal_name(n: i64) -> &'static str {
    match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => "",
    }
}

/// How a process ended: `exit 3`, `signal 9 (SIGKILL)`, `exit 137 (128 + signal 9, SIGKILL)`.
pub fn exit_text(code: Option<i64>, l: Lang) -> String {
    let name = signal_name;
    let (exit, signal) = (l.t("退出码", "exit"), l.t("信号", "signal"));
    match code {
        None => l.t("没有退出状态", "no exit status").into(),
        Some(c) if c < 0 => match name(-c) {
            "" => format!("{signal} {}", -c),
            n => format!("{signal} {}{}", -c, l.paren(n)),
        },
        Some(c) if c > 128 && c < 160 => match name(c - 128) {
            "" => format!(
                "{exit} {c}{}",
                l.paren(&format!("128 + {signal} {}", c - 128))
            ),
            n => format!(
                "{exit} {c}{}",
                l.paren(&format!("128 + {signal} {}{}{n}", c - 128, l.comma()))
            ),
        },
        Some(c) => format!("{exit} {c}"),
    }
}

/// `text` and, when there is one, a newline and the log's tail below it.
fn with_tail(text: String, tail: &str) -> String {
    format!("{text}\n{tail}")
}

impl Reason {
    /// The reason as a sentence in `l` (English: the manifest's and the terminal's text).
    pub fn render(&self, l: Lang) -> String {
        match self {
            Reason::Text { text } => text.clone(),
            Reason::Join { parts } => parts
                .iter()
                .map(|p| p.render(l))
                .collect::<Vec<_>>()
                .join(l.semi()),
            Reason::Amend { reason, more } => {
                let add = format!("{}{}", l.semi(), more.render(l));
                let r = reason.render(l);
                match r.split_once('\n') {
                    Some((first, rest)) => format!("{first}{add}\n{rest}"),
                    None => format!("{r}{add}"),
                }
            }
            Reason::NoOutputDir { .. }
            | Reason::ConfigFailed { .. }
            | Reason::PortInUse { .. }
            | Reason::ServerNotStarted { .. }
            | Reason::ServerNotReady { .. }
            | Reason::StepFailed { .. } => self.render_server(l),
            Reason::ClientNotStarted { .. }
            | Reason::Interrupted { .. }
            | Reason::KilledBySlurm { .. }
            | Reason::ClientFailed { .. }
            | Reason::ServerDied { .. }
            | Reason::CollectFailed { .. } => self.render_client(l),
            Reason::Recovered { .. }
            | Reason::Strict { .. }
            | Reason::ReportCannotStandIn { .. }
            | Reason::RanksCannotStandIn { .. }
            | Reason::DiskFull
            | Reason::NoData { .. }
            | Reason::NotNeeded { .. }
            | Reason::SetupFailed { .. }
            | Reason::NoiseRefused { .. }
            | Reason::NotRun { .. } => self.render_outcome(l),
            Reason::RunInterrupted
            | Reason::Signal { .. }
            | Reason::FailFast
            | Reason::EarlierArrayStopped
            | Reason::SubmitFailed { .. }
            | Reason::SlurmEnded { .. }
            | Reason::TaskNeverStarted { .. }
            | Reason::TaskLost { .. }
            | Reason::TaskOutput { .. }
            | Reason::InterruptedWhileRan
            | Reason::Noise { .. } => self.render_stop(l),
        }
    }

    /// A server, a step or the point's setup on a host that failed.
    fn render_server(&self, l: Lang) -> String {
        match self {
            Reason::NoOutputDir { path, host, error } => l.t(
                format!("无法在 `{host}` 上创建 {path}：{error}"),
                format!("cannot create {path} on `{host}`: {error}"),
            ),
            Reason::ConfigFailed { step, host, error } => l.t(
                format!("配置 `{step}` 在 `{host}` 上写入失败：{error}"),
                format!("config `{step}` on `{host}`: {error}"),
            ),
            Reason::PortInUse {
                step,
                host,
                ip,
                port,
            } => l.t(
                format!("服务 `{step}` 在 `{host}` 上：端口 {ip}:{port} 在服务启动前已被占用"),
                format!("server `{step}` on `{host}`: port {ip}:{port} is already in use before the server started"),
            ),
            Reason::ServerNotStarted { step, host, error } => l.t(
                format!("服务 `{step}` 在 `{host}` 上未能启动：{error}"),
                format!("server `{step}` on `{host}` did not start: {error}"),
            ),
            Reason::ServerNotReady {
                step,
                host,
                why,
                log,
                tail,
            } => with_tail(
                l.t(
                    format!("服务 `{step}` 在 `{host}` 上{}；日志：{log}", why.render(l)),
                    format!("server `{step}` on `{host}` {}; log: {log}", why.render(l)),
                ),
                tail,
            ),
            Reason::StepFailed {
                phase,
                step,
                host,
                status,
                code,
                log,
            } => l.t(
                format!(
                    "{} `{step}` 在 `{host}` 上{}；日志：{log}",
                    phase_word(l, phase),
                    ended_text(l, status, *code)
                ),
                format!(
                    "{phase} `{step}` on `{host}` {}; log: {log}",
                    ended_text(l, status, *code)
                ),
            ),
            _ => unreachable!("render_server: {self:?}"),
        }
    }

    /// A client, its server or collecting that failed.
    fn render_client(&self, l: Lang) -> String {
        let st = |s: &str| status_word(l, s).to_string();
        match self {
            Reason::ClientNotStarted { step, error } => l.t(
                format!("客户端 `{step}` 未能启动：{error}"),
                format!("client `{step}` did not start: {error}"),
            ),
            Reason::Interrupted { step, host } => l.t(
                format!("`{step}` 在 `{host}` 上运行时被中断"),
                format!("interrupted while `{step}` ran on `{host}`"),
            ),
            Reason::KilledBySlurm { step, host, line } => l.t(
                format!("客户端 `{step}` 在 `{host}` 上被 Slurm 终止（尽管 srun 的退出码为 0）：{line}"),
                format!("client `{step}` on `{host}` was killed by Slurm although srun exited 0: {line}"),
            ),
            Reason::ClientFailed {
                step,
                host,
                timeout_s,
                status,
                code,
                command,
                log,
                tail,
            } => {
                // a shell's `cd DIR || exit 200` (the agent's refusal too) that its log says
                // failed: the step never ran, and "exit 200" alone did not say why
                let no_dir =
                    *code == i64::from(crate::util::exit_codes::CD_FAILED) && tail.contains("cd: ");
                let how = match timeout_s {
                    Some(t) => l.t(
                        format!("运行超过 {t} 秒，已被停止"),
                        format!("timed out after {t} s and was stopped"),
                    ),
                    None if no_dir => l.t(
                        "未能进入其工作目录，未运行（exit 200）".to_string(),
                        "could not enter its working directory and did not run (exit 200)"
                            .to_string(),
                    ),
                    None => l.t(
                        format!("{}（{}）", st(status), code_text(*code, "exit", l)),
                        format!("{status} ({})", code_text(*code, "exit", l)),
                    ),
                };
                // on one line: a newline in the command (a quoted value) is written `\n`, so the
                // manifest's first line keeps the whole command and the log
                let command = crate::util::shell::comment(command);
                let text = l.t(
                    format!("客户端 `{step}` 在 `{host}` 上{how}；命令：{command}；日志：{log}"),
                    format!("client `{step}` on `{host}` {how}; command: {command}; log: {log}"),
                );
                if tail.trim().is_empty() {
                    text
                } else {
                    with_tail(text, tail)
                }
            }
            Reason::ServerDied {
                step,
                host,
                code,
                then,
                log,
                tail,
            } => {
                let then = then
                    .as_ref()
                    .map(|t| {
                        let t = t.render(l);
                        let first = t.lines().next().unwrap_or("").to_string();
                        l.t(format!("（随后：{first}）"), format!(" (then: {first})"))
                    })
                    .unwrap_or_default();
                with_tail(
                    l.t(
                        format!("服务 `{step}` 在 `{host}` 上于点运行期间退出（{}）；其客户端的数字不是该服务的{then}；日志：{log}", code_text(*code, "code", l)),
                        format!("server `{step}` on `{host}` exited ({}) while the point ran; its clients' numbers are not the server's{then}; log: {log}", code_text(*code, "code", l)),
                    ),
                    tail,
                )
            }
            Reason::CollectFailed { step, log } => l.t(
                format!("收集 `{step}` 失败；日志：{log}"),
                format!("collecting `{step}` failed; log: {log}"),
            ),
            _ => unreachable!("render_client: {self:?}"),
        }
    }

    /// How a point's output stood in or not, a failed build or test, a point not run.
    fn render_outcome(&self, l: Lang) -> String {
        let zh = l == Lang::Zh;
        match self {
            Reason::Recovered {
                exit,
                line,
                evidence,
            } => l.t(
                format!(
                    "已恢复：{}，{line}；{}",
                    exit_text(*exit, l),
                    evidence.render(l)
                ),
                format!(
                    "recovered: {}, {line}; {}",
                    exit_text(*exit, l),
                    evidence.render(l)
                ),
            ),
            Reason::Strict { evidence } => l.t(
                format!("{evidence}，但 `strict #true` 把崩溃算作失败"),
                format!("{evidence}, but `strict #true` counts the crash as a failure"),
            ),
            Reason::ReportCannotStandIn { error } => l.t(
                format!("它的报告不能替代：{error}"),
                format!("its report cannot stand in: {error}"),
            ),
            Reason::RanksCannotStandIn { error } => l.t(
                format!("rank CSV 不能替代：{error}"),
                format!("rank CSVs cannot stand in: {error}"),
            ),
            Reason::DiskFull => l
                .t(
                    "结果目录所在的磁盘已满（no space left on device）",
                    "the result directory's disk is full (no space left on device)",
                )
                .into(),
            // the collector's message is its own (file:line and what is wrong there)
            Reason::NoData { message } => quoted(l, message),
            Reason::NotNeeded { why } => {
                l.t(format!("不需要：{why}"), format!("not needed: {why}"))
            }
            Reason::SetupFailed {
                test,
                step,
                host,
                status,
                code,
                array,
                log,
            } => {
                let what = match (test, zh) {
                    (true, true) => "正确性测试",
                    (false, true) => "构建",
                    (true, false) => "correctness test",
                    (false, false) => "build",
                };
                let before = match (array, zh) {
                    (true, true) => "在提交作业数组之前停止",
                    (false, true) => "在任何基准运行之前停止",
                    (true, false) => "stopping before the array is submitted",
                    (false, false) => "stopping before any benchmark run",
                };
                l.t(
                    format!(
                        "{what} `{step}` 在 `{host}` 上{}；{before}；日志：{log}",
                        ended_text(l, status, *code)
                    ),
                    format!(
                        "{what} `{step}` on `{host}` {}; {before}; log: {log}",
                        ended_text(l, status, *code)
                    ),
                )
            }
            Reason::NoiseRefused { found } => l.t(
                format!("noise \"refuse\"：{}", found.render(l)),
                format!("noise \"refuse\": {}", found.render(l)),
            ),
            Reason::NotRun { why } => l.t(
                format!("未运行：{}", why.render(l)),
                format!("not run: {}", why.render(l)),
            ),
            _ => unreachable!("render_outcome: {self:?}"),
        }
    }

    /// Why the run or a Slurm job stopped, and noise.
    fn render_stop(&self, l: Lang) -> String {
        let zh = l == Lang::Zh;
        match self {
            Reason::RunInterrupted => l.t("被中断", "interrupted").into(),
            Reason::Signal { signal } => l.t(
                format!("被中断（{signal}）"),
                format!("interrupted ({signal})"),
            ),
            Reason::FailFast => l.t("--fail-fast：首个失败后停止", "--fail-fast").into(),
            Reason::EarlierArrayStopped => l
                .t(
                    "前一个作业数组停止了运行",
                    "an earlier array stopped the run",
                )
                .into(),
            Reason::SubmitFailed { error } => {
                l.t(format!("提交作业数组失败：{error}"), error.clone())
            }
            Reason::SlurmEnded {
                job,
                task,
                state,
                why,
            } => {
                let why = if why.is_empty() || why == "None" {
                    String::new()
                } else {
                    l.paren(why)
                };
                match (task, zh) {
                    (false, true) => format!("Slurm 作业 {job} 的状态为 {state}{why}"),
                    (true, true) => format!("Slurm 数组任务 {job} 的状态为 {state}{why}"),
                    (false, false) => format!("Slurm job {job} is {state}{why}"),
                    (true, false) => format!("Slurm array task {job} is {state}{why}"),
                }
            }
            Reason::TaskNeverStarted {
                task,
                state,
                pending,
            } => {
                let pending = if pending.is_empty() || pending == "None" {
                    String::new()
                } else {
                    l.t(
                        format!("（排队原因：{pending}）"),
                        format!(" while pending ({pending})"),
                    )
                };
                l.t(
                    format!("Slurm 数组任务 {task} 从未开始：{state}{pending}"),
                    format!("Slurm array task {task} never started: {state}{pending}"),
                )
            }
            Reason::TaskLost { task } => l.t(
                format!("Slurm 数组任务 {task} 结束时没有记录它的点"),
                format!("Slurm array task {task} ended without recording its point"),
            ),
            Reason::TaskOutput { log } => {
                l.t(format!("任务输出：{log}"), format!("task output: {log}"))
            }
            Reason::InterruptedWhileRan => l.t("运行时被中断", "interrupted while it ran").into(),
            Reason::Noise { notes } => format!(
                "{}{}",
                l.t("干扰：", "noise: "),
                notes
                    .iter()
                    .map(|n| n.render(l))
                    .collect::<Vec<_>>()
                    .join(l.semi())
            ),
            _ => unreachable!("render_stop: {self:?}"),
        }
    }

    /// `parts` said one after the other; one part is itself.
    pub fn join(mut parts: Vec<Reason>) -> Reason {
        if parts.len() == 1 {
            parts.remove(0)
        } else {
            Reason::Join { parts }
        }
    }

    /// This reason, then `more` (`a; b`).
    pub fn and(self, more: Reason) -> Reason {
        match self {
            Reason::Join { mut parts } => {
                parts.push(more);
                Reason::Join { parts }
            }
            r => Reason::Join {
                parts: vec![r, more],
            },
        }
    }

    /// This reason with `more` at the end of its first line.
    pub fn amend(self, more: Reason) -> Reason {
        Reason::Amend {
            reason: Box::new(self),
            more: Box::new(more),
        }
    }

    /// Whether a client's failure is what this reason says first (the rules that let a
    /// crashed program's complete output stand in ask).
    pub fn is_client(&self) -> bool {
        match self {
            Reason::ClientNotStarted { .. }
            | Reason::KilledBySlurm { .. }
            | Reason::ClientFailed { .. } => true,
            Reason::Join { parts } => parts.first().is_some_and(Reason::is_client),
            Reason::Amend { reason, .. } => reason.is_client(),
            Reason::Text { text } => text.starts_with("client"),
            _ => false,
        }
    }

    /// Whether a point's reason says it was recovered from complete output.
    pub fn is_recovered(&self) -> bool {
        match self {
            Reason::Recovered { .. } => true,
            Reason::Join { parts } => parts.iter().any(Reason::is_recovered),
            Reason::Amend { reason, .. } => reason.is_recovered(),
            _ => false,
        }
    }

    /// An ok point's exit code that its run step's `exit-ok=` accepted: a non-zero one of a
    /// point that was not recovered from complete output (whose code is its failed client's).
    pub fn accepted_exit(
        status: Option<&str>,
        code: Option<i64>,
        cause: Option<&Reason>,
    ) -> Option<i64> {
        match code {
            Some(c)
                if status == Some("ok") && c > 0 && !cause.is_some_and(Reason::is_recovered) =>
            {
                Some(c)
            }
            _ => None,
        }
    }

    /// The step that ended by itself (a client, a server, a prepare or cleanup step; a server
    /// that exited before it was ready), its host and its code (`-signal`), when this reason
    /// says first that one did.
    pub fn ended_step(&self) -> Option<(&str, &str, i64)> {
        match self {
            Reason::ClientFailed {
                step,
                host,
                code,
                timeout_s: None,
                ..
            }
            | Reason::ServerDied {
                step, host, code, ..
            }
            | Reason::ServerNotReady {
                step,
                host,
                why: NotReady::ExitedBefore { code },
                ..
            } => Some((step, host, *code)),
            // (a timeout and a step that did not start have no code of their own)
            Reason::StepFailed {
                step,
                host,
                code,
                status,
                ..
            } if status != "timeout" && status != NOT_STARTED => Some((step, host, *code)),
            Reason::Amend { reason, .. } => reason.ended_step(),
            _ => None,
        }
    }
}

/// A step's phase (`prepare`, `warmup`, `cleanup`, …) as a noun in `l`.
fn phase_word(l: Lang, phase: &str) -> String {
    match (l, phase) {
        (Lang::Zh, "prepare") => "准备步骤".into(),
        (Lang::Zh, "warmup") => "预热".into(),
        (Lang::Zh, "cleanup") => "清理".into(),
        (Lang::Zh, "build") => "构建".into(),
        (Lang::Zh, "test") => "正确性测试".into(),
        (Lang::Zh, "serve") => "服务".into(),
        (Lang::Zh, "launch") => "客户端".into(),
        (Lang::Zh, "collect") => "收集".into(),
        (Lang::Zh, "config") => "配置".into(),
        (_, p) => p.to_string(),
    }
}

impl NotReady {
    fn render(&self, l: Lang) -> String {
        match self {
            NotReady::BadRegex { error } => l.t(
                format!(" ready-log 正则表达式无效：{error}"),
                format!("has an invalid ready-log regex: {error}"),
            ),
            NotReady::ExitedBefore { code } => l.t(
                format!("就绪前已退出（{}）", code_text(*code, "code", l)),
                format!(
                    "exited ({}) before it was ready",
                    code_text(*code, "code", l)
                ),
            ),
            NotReady::Interrupted => l
                .t("就绪前被中断", "was interrupted before it was ready")
                .into(),
            NotReady::AnsweredByOther { code } => l.t(
                format!(
                    "已退出（{}）；在其端口上应答的是另一个进程",
                    code_text(*code, "code", l)
                ),
                format!(
                    "exited ({}); what answered on its port is another process",
                    code_text(*code, "code", l)
                ),
            ),
            NotReady::Timeout { secs, probe } => {
                let what = probe.render(l);
                l.t(
                    if what.is_empty() {
                        format!(" {secs} 秒内未就绪")
                    } else {
                        format!(" {secs} 秒内未就绪（{what}）")
                    },
                    format!("was not ready within {secs} s ({what})"),
                )
            }
        }
    }
}

impl Probe {
    fn render(&self, l: Lang) -> String {
        match self {
            Probe::Tcp { ip, port } => l.t(
                format!("{ip}:{port} 没有接受连接"),
                format!("{ip}:{port} accepted no connection"),
            ),
            Probe::Log { regex } => l.t(
                format!("没有打印匹配 /{regex}/ 的行"),
                format!("printed no line matching /{regex}/"),
            ),
            Probe::Alive { ms } => l.t(
                format!("没有持续运行 {ms} ms"),
                format!("did not stay up {ms} ms"),
            ),
            Probe::None => String::new(),
        }
    }
}

impl Evidence {
    fn render(&self, l: Lang) -> String {
        match self {
            Evidence::Ranks {
                world,
                steps,
                merged,
            } => l.t(
                format!(
                    "全部 {world} 个 rank CSV 完整（{steps} 步、warmup 标记、最后一步 {}）{}",
                    steps - 1,
                    if *merged { "，并已合并" } else { "" }
                ),
                format!(
                    "all {world} rank CSVs are complete ({steps} steps, warmup markers, final step {}){}",
                    steps - 1,
                    if *merged { " and were merged" } else { "" }
                ),
            ),
            Evidence::Own { text } => text.clone(),
        }
    }
}

impl Noise {
    /// The note in `l` (English: the journal's `noise` line and the terminal's).
    pub fn render(&self, l: Lang) -> String {
        match self {
            Noise::Foreign {
                host,
                gpu,
                pid,
                comm,
                user,
                mib,
            } => {
                let mib = mib.map(|x| format!("{x:.0} MiB"));
                l.t(
                    format!(
                        "主机 `{host}` {gpu}：外来进程 pid {pid}（{}，用户 {}，{}）在其上",
                        comm.as_deref().unwrap_or("命令不可见"),
                        user.as_deref().unwrap_or("ps 看不到"),
                        mib.clone().unwrap_or_else(|| "显存未报告".into())
                    ),
                    format!(
                        "host `{host}` {gpu}: foreign process pid {pid} ({}, user {}, {}) is on it",
                        comm.as_deref().unwrap_or("command not visible"),
                        user.as_deref().unwrap_or("not visible to ps"),
                        mib.unwrap_or_else(|| "memory not reported".into())
                    ),
                )
            }
            Noise::NotChecked { host, error } => l.t(
                format!("主机 `{host}`：点结束后未能检查 GPU（{error}）"),
                format!("host `{host}`: GPUs not checked after the point ({error})"),
            ),
            Noise::Throttled {
                host,
                gpu,
                reasons,
                sm_mhz,
            } => {
                let sm = sm_mhz.map(|x| format!("{x:.0} MHz"));
                l.t(
                    format!(
                        "主机 `{host}` {gpu}：时钟降频（{}；SM {}）",
                        reasons.join("、"),
                        sm.clone().unwrap_or_else(|| "时钟未报告".into())
                    ),
                    format!(
                        "host `{host}` {gpu}: clocks throttled ({}; SM {})",
                        reasons.join(", "),
                        sm.unwrap_or_else(|| "clock not reported".into())
                    ),
                )
            }
        }
    }
}

/// What the noise policy finds against measuring on a machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "kebab-case")]
pub enum Found {
    ForeignProc {
        note: Noise,
        host: String,
        pid: i64,
    },
    Mig {
        host: String,
        gpu: String,
        index: String,
    },
    PersistenceOff {
        host: String,
        gpu: String,
        index: String,
        locked: bool,
    },
    ClocksNotLocked {
        host: String,
        gpu: String,
        index: String,
        sm: f64,
        app: f64,
    },
    ClocksUnknown {
        host: String,
        gpu: String,
    },
    Ecc {
        host: String,
        gpu: String,
        n: u64,
    },
    Throttled {
        note: Noise,
    },
    Governor {
        host: String,
        governor: String,
    },
    Turbo {
        host: String,
    },
    Swap {
        host: String,
        mib: f64,
    },
    Load {
        host: String,
        load: f64,
        cpus: u64,
        /// The top consumers: (command, pid, user, % CPU).
        top: Vec<(String, i64, String, f64)>,
    },
    LaneDrivers {
        lane: String,
        bench: String,
        /// (host, driver).
        drivers: Vec<(String, String)>,
    },
}

impl Found {
    /// The host it is about (none: a lane's, across hosts).
    pub fn host(&self) -> Option<&str> {
        match self {
            Found::ForeignProc { host, .. }
            | Found::Mig { host, .. }
            | Found::PersistenceOff { host, .. }
            | Found::ClocksNotLocked { host, .. }
            | Found::ClocksUnknown { host, .. }
            | Found::Ecc { host, .. }
            | Found::Governor { host, .. }
            | Found::Turbo { host }
            | Found::Swap { host, .. }
            | Found::Load { host, .. } => Some(host),
            Found::Throttled { note } => match note {
                Noise::Throttled { host, .. }
                | Noise::Foreign { host, .. }
                | Noise::NotChecked { host, .. } => Some(host),
            },
            Found::LaneDrivers { .. } => None,
        }
    }

    /// The finding in `l` (English: the terminal's warning and preflight's refusal).
    pub fn render(&self, l: Lang) -> String {
        match self {
            Found::ForeignProc { note, host, pid } => l.t(
                format!(
                    "{}：在那里测得的每个数字都与它共享 GPU —— 停止它（在 `{host}` 上 `kill {pid}`）或给本次运行另一块 GPU",
                    note.render(l)
                ),
                format!(
                    "{}: every number measured there shares the GPU — stop it (`kill {pid}` on `{host}`) or give the run another GPU",
                    note.render(l)
                ),
            ),
            Found::Mig { host, gpu, index } => l.t(
                format!("主机 `{host}` {gpu}：MIG 模式已开启（运行得到的是一个切片，而不是整块 GPU）—— `nvidia-smi -i {index} -mig 0`（需 root；GPU 会重置）"),
                format!("host `{host}` {gpu}: MIG mode is on (the run gets a slice, not the GPU) — `nvidia-smi -i {index} -mig 0` (as root; the GPU resets)"),
            ),
            Found::PersistenceOff {
                host,
                gpu,
                index,
                locked,
            } => {
                let why = match (locked, l) {
                    (true, Lang::Zh) => "驱动卸载时锁定的时钟会丢失",
                    (false, Lang::Zh) => "驱动在两次运行之间卸载，第一个 kernel 为此付出代价",
                    (true, Lang::En) => "locked clocks are lost when the driver unloads",
                    (false, Lang::En) => {
                        "the driver unloads between runs, and the first kernel pays for it"
                    }
                };
                l.t(
                    format!("主机 `{host}` {gpu}：persistence 模式关闭（{why}）—— `nvidia-smi -i {index} -pm 1`"),
                    format!("host `{host}` {gpu}: persistence mode is off ({why}) — `nvidia-smi -i {index} -pm 1`"),
                )
            }
            Found::ClocksNotLocked {
                host,
                gpu,
                index,
                sm,
                app,
            } => l.t(
                format!("主机 `{host}` {gpu}：写了 `gpu-clocks-locked #true`，但其 SM 时钟为 {sm:.0} MHz，不是其 application 时钟 {app:.0} MHz —— `nvidia-smi -i {index} -lgc {app:.0},{app:.0}`"),
                format!("host `{host}` {gpu}: `gpu-clocks-locked #true`, but its SM clock is {sm:.0} MHz, not its application clock {app:.0} MHz — `nvidia-smi -i {index} -lgc {app:.0},{app:.0}`"),
            ),
            Found::ClocksUnknown { host, gpu } => l.t(
                format!("主机 `{host}` {gpu}：写了 `gpu-clocks-locked #true`，但 nvidia-smi 没有报告 SM 或 application 时钟：无法检查锁定"),
                format!("host `{host}` {gpu}: `gpu-clocks-locked #true`, but nvidia-smi reports no SM or application clock: the lock cannot be checked"),
            ),
            Found::Ecc { host, gpu, n } => l.t(
                format!("主机 `{host}` {gpu}：驱动加载以来有 {n} 个不可纠正的 ECC 错误 —— 检查这块 GPU（`nvidia-smi -q -d ECC`）"),
                format!("host `{host}` {gpu}: {n} uncorrected ECC error(s) since the driver loaded — check the GPU (`nvidia-smi -q -d ECC`)"),
            ),
            Found::Throttled { note } => l.t(
                format!(
                    "{} —— 检查散热和功耗上限（`nvidia-smi -q -d PERFORMANCE,POWER`）",
                    note.render(l)
                ),
                format!(
                    "{} — check cooling and the power cap (`nvidia-smi -q -d PERFORMANCE,POWER`)",
                    note.render(l)
                ),
            ),
            Found::Governor { host, governor } => l.t(
                format!("主机 `{host}`：CPU governor 为 {governor} —— `cpupower frequency-set -g performance`"),
                format!("host `{host}`: CPU governor is {governor} — `cpupower frequency-set -g performance`"),
            ),
            Found::Turbo { host } => l.t(
                format!("主机 `{host}`：CPU turbo/boost 已开启（时钟随温度和负载变化）—— `echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo`（或 `echo 0 > /sys/devices/system/cpu/cpufreq/boost`）"),
                format!("host `{host}`: CPU turbo/boost is on (clocks follow temperature and load) — `echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo` (or `echo 0 > /sys/devices/system/cpu/cpufreq/boost`)"),
            ),
            Found::Swap { host, mib } => l.t(
                format!("主机 `{host}`：{mib:.1} MiB swap 在使用中 —— 释放内存，或 `swapoff -a && swapon -a`"),
                format!("host `{host}`: {mib:.1} MiB of swap in use — free memory, or `swapoff -a && swapon -a`"),
            ),
            Found::Load {
                host,
                load,
                cpus,
                top,
            } => {
                let top: Vec<String> = top
                    .iter()
                    .map(|(comm, pid, user, pcpu)| {
                        format!(
                            "{comm}{}",
                            l.paren(&format!("pid {pid}{c}{user}{c}{pcpu:.0} %", c = l.comma()))
                        )
                    })
                    .collect();
                let top = if top.is_empty() {
                    l.t(
                        "；此刻没有进程在忙（平均负载是最近一分钟的，等待磁盘的进程也计入）",
                        "; no process is busy now (the average is over the last minute, and processes waiting on a disk count too)",
                    )
                    .to_string()
                } else {
                    format!("{}{}", l.t("；最高：", "; top: "), top.join(l.comma()))
                };
                l.t(
                    format!("主机 `{host}`：运行任何东西之前，{cpus} 个 CPU 上的平均负载为 {load:.2}{top}"),
                    format!("host `{host}`: load average {load:.2} on {cpus} CPUs before anything ran{top}"),
                )
            }
            Found::LaneDrivers {
                lane,
                bench,
                drivers,
            } => {
                let list = drivers
                    .iter()
                    .map(|(h, d)| format!("`{h}` {d}"))
                    .collect::<Vec<_>>()
                    .join(l.comma());
                l.t(
                    format!("`{bench}` 的 lane `{lane}` 运行在不同的 NVIDIA 驱动上：{list} —— 在所有主机上安装同一驱动版本"),
                    format!("lane `{lane}` of `{bench}` runs on different NVIDIA drivers: {list} — install one driver version on all of them"),
                )
            }
        }
    }
}

/// The tests' failed setup step: `build1` on `local`, exit 2, its log at `log`.
#[cfg(test)]
pub(crate) fn build1_failed(log: &str) -> Reason {
    Reason::SetupFailed {
        test: false,
        step: "build1".into(),
        host: "local".into(),
        status: "failed".into(),
        code: 2,
        array: false,
        log: log.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed() -> Reason {
        Reason::ClientFailed {
            step: "run1-a_r0".into(),
            host: "local".into(),
            timeout_s: None,
            status: "failed".into(),
            code: 3,
            command: "python3 t.py --out 'a b'".into(),
            log: "out/logs/run1-a_r0-local.log".into(),
            tail: "boom".into(),
        }
    }

    /// A step whose shell could not enter its directory (exit 200, and its log says `cd:`) is
    /// said so; a program that exits 200 by itself is not.
    #[test]
    fn a_step_that_could_not_enter_its_directory_is_said_so() {
        let of = |tail: &str| {
            let mut r = failed();
            if let Reason::ClientFailed { code, tail: t, .. } = &mut r {
                *code = 200;
                *t = tail.into();
            }
            r.render(Lang::En)
        };
        assert!(of("bash: line 1: cd: /r/not-here: No such file or directory")
            .starts_with("client `run1-a_r0` on `local` could not enter its working directory and did not run (exit 200); command: "));
        assert!(of("my own error").starts_with("client `run1-a_r0` on `local` failed (exit 200); "));
    }

    /// A step a signal to expr stopped ended with expr's code, not its own: said without it
    /// (helper 88: "interrupted (exit 130)").
    #[test]
    fn an_interrupted_step_is_said_without_expr_s_exit_code() {
        assert_eq!(ended_text(Lang::En, "interrupted", 130), "was interrupted");
        assert_eq!(
            step_end(Lang::En, "interrupted", Some(129)),
            "was interrupted"
        );
        assert_eq!(ended_text(Lang::Zh, "interrupted", 130), "被中断");
        assert_eq!(step_end(Lang::En, "failed", Some(2)), "failed, exit 2");
    }

    #[test]
    fn a_command_with_a_newline_stays_on_the_reasons_first_line() {
        let r = Reason::ClientFailed {
            step: "run1-a_r0".into(),
            host: "local".into(),
            timeout_s: None,
            status: "failed".into(),
            code: 3,
            command: "echo val='a\nb'".into(),
            log: "out/logs/run1-a_r0-local.log".into(),
            tail: "boom".into(),
        };
        for l in [Lang::En, Lang::Zh] {
            let text = r.render(l);
            let first = text.lines().next().unwrap();
            assert!(
                first.contains("echo val='a\\nb'")
                    && first.contains("out/logs/run1-a_r0-local.log"),
                "{text}"
            );
        }
    }

    /// The English sentences, as the run wrote them before they were data.
    #[test]
    fn english_is_the_text_the_run_writes() {
        let cases: Vec<(Reason, &str)> = vec![
            (failed(), "client `run1-a_r0` on `local` failed (exit 3); command: python3 t.py --out 'a b'; log: out/logs/run1-a_r0-local.log\nboom"),
            (
                Reason::ServerNotReady {
                    step: "s".into(),
                    host: "h".into(),
                    why: NotReady::Timeout {
                        secs: 1,
                        probe: Probe::Tcp {
                            ip: "127.0.0.1".into(),
                            port: 9,
                        },
                    },
                    log: "l.log".into(),
                    tail: String::new(),
                },
                "server `s` on `h` was not ready within 1 s (127.0.0.1:9 accepted no connection); log: l.log\n",
            ),
            (
                Reason::SlurmEnded {
                    job: "12".into(),
                    task: false,
                    state: "CANCELLED".into(),
                    why: "None".into(),
                }
                .and(failed().amend(Reason::DiskFull)),
                "Slurm job 12 is CANCELLED; client `run1-a_r0` on `local` failed (exit 3); command: python3 t.py --out 'a b'; log: out/logs/run1-a_r0-local.log; the result directory's disk is full (no space left on device)\nboom",
            ),
            (
                Reason::NotRun {
                    why: Box::new(build1_failed("out/logs/build1-local.log")),
                },
                "not run: build `build1` on `local` failed (exit 2); stopping before any benchmark run; log: out/logs/build1-local.log",
            ),
            (
                Reason::Recovered {
                    exit: Some(-9),
                    line: "Killed".into(),
                    evidence: Evidence::Ranks {
                        world: 2,
                        steps: 10,
                        merged: true,
                    },
                },
                "recovered: signal 9 (SIGKILL), Killed; all 2 rank CSVs are complete (10 steps, warmup markers, final step 9) and were merged",
            ),
            (
                Reason::Noise {
                    notes: vec![Noise::Foreign {
                        host: "h".into(),
                        gpu: "GPU 0".into(),
                        pid: 7,
                        comm: Some("sleep".into()),
                        user: None,
                        mib: Some(512.0),
                    }],
                },
                "noise: host `h` GPU 0: foreign process pid 7 (sleep, user not visible to ps, 512 MiB) is on it",
            ),
        ];
        for (r, want) in cases {
            assert_eq!(r.render(Lang::En), want, "{r:?}");
        }
        assert_eq!(
            exit_text(Some(137), Lang::En),
            "exit 137 (128 + signal 9, SIGKILL)"
        );
        assert_eq!(
            exit_text(Some(137), Lang::Zh),
            "退出码 137（128 + 信号 9，SIGKILL）"
        );
    }

    /// A client a signal ended (wait4's -15) is said to have ended by SIGTERM, in both
    /// languages; it read `failed (exit -15)`.
    #[test]
    fn a_signal_is_named_and_not_a_negative_exit() {
        let Reason::ClientFailed {
            step,
            host,
            timeout_s,
            status,
            command,
            log,
            tail,
            ..
        } = failed()
        else {
            unreachable!()
        };
        let r = Reason::ClientFailed {
            step,
            host,
            timeout_s,
            status,
            code: -15,
            command,
            log,
            tail,
        };
        let en = r.render(Lang::En);
        assert!(en.contains("failed (signal 15, SIGTERM); command:"), "{en}");
        let zh = r.render(Lang::Zh);
        assert!(zh.contains("（信号 15，SIGTERM）"), "{zh}");
        assert!(!en.contains("-15") && !zh.contains("-15"), "{en}\n{zh}");
        assert_eq!(code_text(-40, "code", Lang::En), "signal 40");
        assert_eq!(code_text(7, "code", Lang::En), "code 7");
        assert_eq!(code_text(7, "code", Lang::Zh), "退出码 7");
        assert_eq!(code_text(0, "exit", Lang::En), "exit 0");
    }

    /// A warmup or build that timed out, or that could not be started, has no exit code: it
    /// read `timeout (signal 1, SIGHUP)` and `failed (signal 1, SIGHUP)` (helper 83: `expr bench
    /// -N` of a program that is not there).
    #[test]
    fn a_step_that_timed_out_or_did_not_start_names_no_signal() {
        let step = |status: &str, code: i64| Reason::StepFailed {
            phase: "warmup".into(),
            step: "warmup0-run1-a_r0".into(),
            host: "local".into(),
            status: status.into(),
            code,
            log: "out/logs/w.log".into(),
        };
        let cases = [
            (
                step("timeout", -1),
                "warmup `warmup0-run1-a_r0` on `local` timed out and was stopped; log: out/logs/w.log",
                "预热 `warmup0-run1-a_r0` 在 `local` 上超时，已被停止；日志：out/logs/w.log",
            ),
            (
                step(NOT_STARTED, -1),
                "warmup `warmup0-run1-a_r0` on `local` did not start (its log says why); log: out/logs/w.log",
                "预热 `warmup0-run1-a_r0` 在 `local` 上未能启动（原因见日志）；日志：out/logs/w.log",
            ),
            (
                step("failed", -1),
                "warmup `warmup0-run1-a_r0` on `local` failed (signal 1, SIGHUP); log: out/logs/w.log",
                "预热 `warmup0-run1-a_r0` 在 `local` 上失败（信号 1，SIGHUP）；日志：out/logs/w.log",
            ),
            (
                Reason::SetupFailed {
                    test: false,
                    step: "build1".into(),
                    host: "local".into(),
                    status: "timeout".into(),
                    code: -1,
                    array: false,
                    log: "out/logs/b.log".into(),
                },
                "build `build1` on `local` timed out and was stopped; stopping before any benchmark run; log: out/logs/b.log",
                "构建 `build1` 在 `local` 上超时，已被停止；在任何基准运行之前停止；日志：out/logs/b.log",
            ),
        ];
        for (r, en, zh) in cases {
            assert_eq!(r.render(Lang::En), en);
            assert_eq!(r.render(Lang::Zh), zh);
        }
        // the signal that stopped the run is not read into a timeout's -1
        assert!(step("timeout", -1).ended_step().is_none());
        assert_eq!(
            step("failed", -9).ended_step(),
            Some(("warmup0-run1-a_r0", "local", -9))
        );
    }

    /// An ok point's non-zero code is `exit-ok`'s only where the point was not recovered from
    /// complete output (helper 84: a recovered SIGABRT read "exit -6 accepted by exit-ok").
    #[test]
    fn only_an_ok_point_not_recovered_has_an_accepted_exit() {
        let rec = Reason::Recovered {
            exit: Some(1),
            line: String::new(),
            evidence: Evidence::Own {
                text: "complete".into(),
            },
        };
        let joined = Reason::join(vec![rec.clone(), Reason::DiskFull]);
        assert_eq!(Reason::accepted_exit(Some("ok"), Some(3), None), Some(3));
        assert_eq!(Reason::accepted_exit(Some("ok"), Some(0), None), None);
        assert_eq!(Reason::accepted_exit(Some("ok"), Some(-6), None), None);
        assert_eq!(Reason::accepted_exit(Some("failed"), Some(3), None), None);
        assert_eq!(Reason::accepted_exit(Some("ok"), Some(1), Some(&rec)), None);
        assert_eq!(
            Reason::accepted_exit(Some("ok"), Some(1), Some(&joined)),
            None
        );
    }

    #[test]
    fn chinese_keeps_the_facts_and_translates_the_sentence() {
        let zh = failed().render(Lang::Zh);
        assert_eq!(
            zh,
            "客户端 `run1-a_r0` 在 `local` 上失败（退出码 3）；命令：python3 t.py --out 'a b'；日志：out/logs/run1-a_r0-local.log\nboom"
        );
        let r = Reason::join(vec![
            failed(),
            Reason::Noise {
                notes: vec![Noise::Throttled {
                    host: "h".into(),
                    gpu: "GPU 0".into(),
                    reasons: vec!["hw_slowdown".into()],
                    sm_mhz: None,
                }],
            },
        ]);
        let zh = r.render(Lang::Zh);
        for w in ["failed", "exit", "command:", "log:", "noise", "throttled"] {
            assert!(!zh.contains(w), "`{w}` in {zh}");
        }
        assert!(zh.contains("hw_slowdown") && zh.contains("python3 t.py --out 'a b'"));
    }

    #[test]
    fn a_reason_round_trips_through_json() {
        let r = Reason::NotRun {
            why: Box::new(failed().and(Reason::TaskOutput { log: "x".into() })),
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["what"], "not-run");
        assert_eq!(serde_json::from_value::<Reason>(v).unwrap(), r);
        assert!(failed().and(Reason::DiskFull).is_client());
    }
}
