//! Diagnostics: one data-only list of codes, a located diagnostic type, and renderers.

use std::fmt;
use std::sync::Arc;

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, SourceSpan};
use serde::Serialize;

use crate::model::source::Source;

/// A diagnostic code a kind defines: its stable name and one line saying what it catches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindCode {
    pub name: &'static str,
    pub what: &'static str,
}

macro_rules! codes {
    ($($variant:ident => $name:literal, $what:literal;)*) => {
        /// Every diagnostic expr can emit. The name is the stable code shown to users.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $($variant,)*
            /// A code a kind defines for its own rules (it lives with the kind).
            Kind(&'static KindCode),
        }

        impl Code {
            /// The codes of every stage but the kinds' (`crate::kinds::all_codes` adds theirs).
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];
            pub fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* Code::Kind(k) => k.name }
            }
            /// One line saying what the rule catches (used in schemas/).
            pub fn what(self) -> &'static str {
                match self { $(Code::$variant => $what,)* Code::Kind(k) => k.what }
            }
        }
    };
}

/// A kind's own diagnostic codes: a `Code::Kind` constant for each `NAME => "name", "what it
/// catches";`, and `ALL`, every one of them, for the kind's spec.
macro_rules! kind_codes {
    ($($konst:ident => $name:literal, $what:literal;)*) => {
        use $crate::model::diag::{Code, KindCode};
        $(pub const $konst: Code = Code::Kind(&KindCode { name: $name, what: $what });)*
        /// Every code above.
        pub const ALL: &[Code] = &[$($konst,)*];
    };
}
pub(crate) use kind_codes;

codes! {
    KdlSyntax => "kdl-syntax", "the file is not valid KDL 2.0";
    KdlV1 => "kdl-v1", "the file is KDL v1; expr reads KDL 2.0";
    UnquotedAddress => "unquoted-address", "an IP address, dotted name or path written without quotes";
    UnknownNode => "unknown-node", "a node name this context does not take";
    UnknownProperty => "unknown-property", "a property name this node does not take";
    WrongType => "wrong-type", "a value of the wrong type (string, integer, boolean)";
    InvalidValue => "invalid-value", "a value outside its allowed set or range";
    MissingValue => "missing-value", "a required argument, property or node is absent";
    DuplicateName => "duplicate-name", "two hosts, lanes or steps with the same name, or a setting given twice";
    UndefinedHost => "undefined-host", "a reference to a host that no `host` node declares";
    PortIsSshPort => "port-is-ssh-port", "a service port equal to the host's SSH port (or 22)";
    PortOutOfRange => "port-out-of-range", "a port outside 1..65535";
    PortConflict => "port-conflict", "two services on the same host and port";
    GpuOversubscribed => "gpu-oversubscribed", "one GPU of one host given to two clients";
    GpuOutOfRange => "gpu-out-of-range", "gpu + nproc-per-node beyond the host's declared GPU count";
    LaneChangesWorkload => "lane-changes-workload", "a lane that changes a workload value that is not a sweep axis";
    LanePinsAxis => "lane-pins-axis", "a lane that sets a swept setting: it runs at that value only, not across the sweep";
    LaneSettingIgnored => "lane-setting-ignored", "a lane that sets something its backend does not read";
    SettingOverridden => "setting-overridden", "a setting (in the file or from --set) that the bench's lanes override, so it changes nothing";
    ZipLength => "zip-length", "zip axes of unequal length";
    UnusedAxis => "unused-axis", "a sweep axis that no command uses";
    EmptyMatrix => "empty-matrix", "exclusions remove every matrix point";
    MatrixTooLarge => "matrix-too-large", "more than 10,000 matrix points without --allow-large";
    TemplateUndefined => "template-undefined", "a template uses a variable that is not defined";
    TemplateSyntax => "template-syntax", "a template that does not parse";
    BadOverride => "bad-override", "a --set or --only argument that is not key=value";
    Io => "io", "a file that cannot be read or written";
    OutputPath => "output-path", "an output directory that is empty, the root, or the current or a parent directory";
    UnsafeName => "unsafe-name", "a host, step or Slurm allocation name that is not a safe file-name component";
    TemplateFilter => "template-filter", "a template filter that does not exist, or a date format that cannot be printed";
    SlurmArray => "slurm-array", "`mode=\"array\"` with points that need an order or a shared host: adaptive repeats, recstore-e2e, or two array allocations";
    InputLimit => "input-limit", "a file larger than the size cap or nested deeper than the depth limit";
    ExpectName => "expect-name", "an `expect` naming a lane the bench does not have, a metric it does not report, or a unit expr cannot check";
    UnusedSlurm => "unused-slurm", "a `slurm` allocation that no host is placed on: no step runs on it, and a run does not request it";
    UnusedPool => "unused-pool", "a `pool` that no step names: its hosts run nothing through it";
    PoolPlacement => "pool-placement", "a `pool` named where a host must be fixed (a kind's placed processes), or two pools in one bench's steps";
    PoolOneMachine => "pool-one-machine", "two members of a `pool` that are one machine: under `--jobs` their points run at once on it, sharing its CPUs, memory and bandwidth";
    SecretElsewhere => "secret-elsewhere", "a secret's value written again outside its `env` entry (a param, a lane, a command), where outputs show it";
    TemplateRender => "template-render", "a template that fails when a point's values fill it (a filter given the wrong arguments, a division by zero): `check` renders every point's commands as `plan` does";
    UnusedExclude => "unused-exclude", "an `exclude` naming a lane or an axis value the bench does not have, or values of one `zip` it never pairs: it removes nothing";
    ConfigKey => "config-key", "a `config` block key without a value, with a property, or one that shadows a setting or the placement";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One located problem. Built where the problem is found; rendered only at the edge.
#[derive(Debug, Clone)]
pub struct Diag {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub source: Option<Arc<Source>>,
    pub span: Option<SourceSpan>,
    pub label: Option<String>,
    pub help: Option<String>,
    /// Secondary locations (e.g. "first declared here").
    pub related: Vec<(SourceSpan, String)>,
    named: Option<miette::NamedSource<crate::model::source::CharColumns>>,
}

impl Diag {
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Diag {
            code,
            severity: Severity::Error,
            message: message.into(),
            source: None,
            span: None,
            label: None,
            help: None,
            related: Vec::new(),
            named: None,
        }
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Diag {
            severity: Severity::Warning,
            ..Diag::error(code, message)
        }
    }

    pub fn at(mut self, source: &Arc<Source>, span: SourceSpan) -> Self {
        self.named = Some(source.named());
        self.source = Some(source.clone());
        self.span = Some(span);
        self
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn also(mut self, span: SourceSpan, label: impl Into<String>) -> Self {
        self.related.push((span, label.into()));
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// File, 1-based line and column of the primary span.
    pub fn location(&self) -> Option<(String, usize, usize)> {
        let (src, span) = (self.source.as_ref()?, self.span?);
        let (l, c) = src.line_col(span.offset());
        Some((src.name.clone(), l, c))
    }

    pub fn to_json(&self) -> JsonDiag {
        let loc = self.location();
        JsonDiag {
            code: self.code.name(),
            severity: self.severity,
            message: self.message.clone(),
            file: loc.as_ref().map(|l| l.0.clone()),
            line: loc.as_ref().map(|l| l.1),
            column: loc.as_ref().map(|l| l.2),
            help: self.help.clone(),
        }
    }
}

/// The JSON form of a diagnostic (`--format json`).
#[derive(Debug, Serialize)]
pub struct JsonDiag {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub help: Option<String>,
}

impl fmt::Display for Diag {
    /// The message on one line (a value with a newline in it is shown as `\n`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::util::markup::one_line(&self.message))
    }
}

impl std::error::Error for Diag {}

impl Diagnostic for Diag {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code.name()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_deref()
            .map(|h| Box::new(crate::util::markup::one_line(h)) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.named.as_ref().map(|n| n as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.span?;
        // a span over a long line is underlined only where the line is shown
        let clip = |s: SourceSpan| -> SourceSpan {
            (s.offset(), s.len().min(crate::model::source::LONG_LINE / 2)).into()
        };
        let line = |l: &str| crate::util::markup::one_line(l).into_owned();
        let primary =
            LabeledSpan::new_primary_with_span(self.label.as_deref().map(line), clip(span));
        let rest = self
            .related
            .iter()
            .map(move |(s, l)| LabeledSpan::new_with_span(Some(line(l)), clip(*s)));
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}

/// Render diagnostics as miette's graphical report.
pub fn render(diags: &[Diag], color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_links(false);
    let mut out = String::new();
    for d in diags {
        let _ = handler.render_report(&mut out, &masked(d));
    }
    out
}

/// A diagnostic with the file's secrets masked in its words, and in the text of a command-line
/// argument it quotes (`--set x=…`, `--only lane=…`; a file's excerpt is masked by its own
/// names): before it is rendered, where the words are whole (miette wraps a long one over
/// two lines, and a line number or `#false` is no secret's to mask).
fn masked(d: &Diag) -> Diag {
    let mask = crate::util::secret::mask_known_same_width;
    let mut m = d.clone();
    m.message = mask(&m.message);
    m.help = m.help.as_deref().map(mask);
    m.label = m.label.as_deref().map(mask);
    for (_, l) in &mut m.related {
        *l = mask(l);
    }
    if let (Some(src), Some(span)) = (&d.source, d.span) {
        if matches!(src.name.as_str(), "--set" | "--only") {
            let text = crate::util::secret::mask_known_same_bytes(&src.text);
            if text != *src.text {
                m = m.at(&Source::new(src.name.clone(), text), span);
            }
        }
    }
    m
}

/// Render diagnostics as a JSON array.
pub fn render_json(diags: &[Diag]) -> String {
    let mask = crate::util::secret::mask_known_same_width;
    let v: Vec<JsonDiag> = diags
        .iter()
        .map(Diag::to_json)
        .map(|d| JsonDiag {
            message: mask(&d.message),
            help: d.help.as_deref().map(mask),
            ..d
        })
        .collect();
    serde_json::to_string_pretty(&v).unwrap_or_else(|_| "[]".into())
}

/// A summary line: "2 errors, 1 warning".
pub fn summary(diags: &[Diag]) -> String {
    let e = diags.iter().filter(|d| d.is_error()).count();
    let w = diags.len() - e;
    let plural = |n: usize, s: &str| format!("{n} {s}{}", if n == 1 { "" } else { "s" });
    format!("{}, {}", plural(e, "error"), plural(w, "warning"))
}

/// Diagnostics gathered while checking; collect, don't stop — up to [`MAX_DIAGS`], counting
/// the rest.
#[derive(Debug, Default)]
pub struct Diags(pub Vec<Diag>, Dropped);

/// The most diagnostics kept: a file of 800,000 bad lines made as many (14 GB at 16 MiB, an
/// abort); the first hundreds say what is wrong.
pub const MAX_DIAGS: usize = 500;

/// What was found past [`MAX_DIAGS`]: counted, not kept.
#[derive(Debug, Default)]
pub struct Dropped {
    errors: usize,
    warnings: usize,
    /// Where the one being dropped is written to ([`Diags::push_mut`]).
    scratch: Option<Diag>,
}

impl Diags {
    pub fn push(&mut self, d: Diag) {
        let _ = self.push_mut(d);
    }
    /// Push, and give the diagnostic to add to (a label, a help): the one kept, or past the
    /// cap a scratch copy that is not.
    pub fn push_mut(&mut self, d: Diag) -> &mut Diag {
        if self.0.len() < MAX_DIAGS {
            self.0.push(d);
            let at = self.0.len() - 1;
            return &mut self.0[at];
        }
        if d.is_error() {
            self.1.errors += 1;
        } else {
            self.1.warnings += 1;
        }
        self.1.scratch.insert(d)
    }
    pub fn has_errors(&self) -> bool {
        self.1.errors > 0 || self.0.iter().any(Diag::is_error)
    }
    /// Sort by file and position so output is stable.
    /// By file and position; the same problem found twice at one place is reported once.
    pub fn sorted(mut self) -> Vec<Diag> {
        self.0.sort_by_key(|d| {
            (
                d.source.as_ref().map(|s| s.name.clone()),
                d.span.map(|s| s.offset()),
            )
        });
        let mut seen = std::collections::HashSet::new();
        self.0.retain(|d| {
            seen.insert((
                d.code,
                d.message.clone(),
                d.span.map(|s| (s.offset(), s.len())),
            ))
        });
        let Dropped {
            errors, warnings, ..
        } = self.1;
        if errors + warnings > 0 {
            let message = format!(
                "at least {} more found and not shown ({errors} errors, {warnings} warnings): only the first {MAX_DIAGS} are kept, and a large file is not read past them",
                errors + warnings
            );
            let d = if errors > 0 {
                Diag::error(Code::InputLimit, message)
            } else {
                Diag::warning(Code::InputLimit, message)
            };
            self.0.push(d.help(
                "fix these and check again; so many usually means generated or corrupt input",
            ));
        }
        self.0
    }
}

#[cfg(test)]
mod render_tests {
    /// A value quoted in a message, label or help is shown, not obeyed: a character that
    /// drives the terminal or hides is written as its escape (a `\u{202e}` turned the rest of
    /// the line around).
    #[test]
    fn a_quoted_value_never_drives_the_terminal() {
        let src = super::Source::new("--set", "shell=\u{202e}x");
        let d = super::Diag::error(
            super::Code::InvalidValue,
            "`\u{202e}x\u{1b}[31m` is not\na shell",
        )
        .at(&src, (6, 3).into())
        .label("not \u{200b}one")
        .help("give \u{7f}bash");
        let out = super::render(&[d], false);
        assert!(
            out.contains(r"`\u{202e}x\u{1b}[31m` is not") && out.contains("a shell"),
            "{out}"
        );
        assert!(
            out.contains(r"not \u{200b}one") && out.contains(r"give \u{7f}bash"),
            "{out}"
        );
        assert!(
            !out.contains(['\u{202e}', '\u{1b}', '\u{200b}', '\u{7f}']),
            "{out:?}"
        );
    }
}
