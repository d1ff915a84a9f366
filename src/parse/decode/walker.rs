//! The hand-written walker from `KdlDocument` to `Experiment`. Every problem becomes a located
//! diagnostic and decoding continues, so one `check` shows everything.

use std::collections::BTreeMap;
use std::sync::Arc;

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use miette::SourceSpan;

use crate::model::diag::{Code, Diag, Diags};
use crate::model::schema::{Args, Field, NodeSpec, Ty};
use crate::model::source::Source;
use crate::model::*;
use crate::util::suggest;

/// The field of a `param` written without its default (an error said at it): a lane or
/// sweep may give it any value, so that one missing default is one error.
pub const NO_DEFAULT: Field = Field {
    name: "param without a default",
    ty: crate::model::schema::Ty::Str,
    default: None,
    optional: true,
    doc: "",
    example: "",
};

/// A decoded property or argument: value and location.
#[derive(Debug, Clone)]
pub struct Got {
    pub val: Val,
    pub loc: Loc,
}

pub struct Decoder<'a> {
    pub src: Arc<Source>,
    pub diags: &'a mut Diags,
    /// The `param` names of the bench being decoded (looked up: a search of the list made
    /// 100k params take 20 s).
    pub(crate) param_names: std::collections::HashSet<String>,
}

/// Decode a parsed document. Returns `None` only when nothing usable was found.
pub fn decode(src: &Arc<Source>, doc: &KdlDocument, diags: &mut Diags) -> Option<Experiment> {
    let mut d = Decoder {
        src: src.clone(),
        diags,
        param_names: Default::default(),
    };
    d.document(doc)
}

impl Decoder<'_> {
    pub fn loc(&self, span: SourceSpan) -> Loc {
        Loc {
            src: self.src.clone(),
            span,
        }
    }

    pub(crate) fn err(
        &mut self,
        code: Code,
        msg: impl Into<String>,
        span: SourceSpan,
    ) -> &mut Diag {
        self.diags
            .push_mut(Diag::error(code, msg).at(&self.src, span))
    }

    /// An error with its help line (what to write instead).
    pub(crate) fn err_help(
        &mut self,
        code: Code,
        msg: impl Into<String>,
        span: SourceSpan,
        help: impl Into<String>,
    ) -> &mut Diag {
        let d = self.err(code, msg, span);
        d.help = Some(help.into());
        d
    }

    /// `WHAT NAME` declared a second time: the error at the second, the first pointed at.
    pub(crate) fn declared_twice(
        &mut self,
        what: &str,
        name: &str,
        at: SourceSpan,
        first: SourceSpan,
    ) {
        let d = self.err(
            Code::DuplicateName,
            format!("{what} `{name}` is declared twice"),
            at,
        );
        d.related.push((first, "first declared here".into()));
        d.help = Some(format!("give each {what} a distinct name"));
    }

    /// Something given a second time where one is allowed: the error at the second, the first
    /// pointed at.
    pub(crate) fn given_twice(
        &mut self,
        msg: impl Into<String>,
        at: SourceSpan,
        first: SourceSpan,
        help: &str,
    ) {
        self.given_twice_as(msg, at, (first, "first given here"), help);
    }

    /// [`Self::given_twice`], the first place labelled `first.1` ("first set here").
    pub(crate) fn given_twice_as(
        &mut self,
        msg: impl Into<String>,
        at: SourceSpan,
        first: (SourceSpan, &str),
        help: &str,
    ) {
        let d = self.err_help(Code::DuplicateName, msg, at, help);
        d.related.push((first.0, first.1.into()));
    }

    pub(crate) fn name_span(node: &KdlNode) -> SourceSpan {
        node.name().span()
    }

    /// Where property `key` was written, else the node's name.
    pub(crate) fn prop_span(
        props: &BTreeMap<String, Got>,
        key: &str,
        node: &KdlNode,
    ) -> SourceSpan {
        props.get(key).map_or(Self::name_span(node), |g| g.loc.span)
    }

    /// The span of an entry's value (after `key=` for properties).
    pub(crate) fn value_span(&self, e: &KdlEntry) -> SourceSpan {
        let span = e.span();
        if e.name().is_some() {
            let text = self.src.slice(span.offset(), span.len());
            if let Some(eq) = text.find('=') {
                let start = span.offset() + eq + 1;
                let rest = &text[eq + 1..];
                let trimmed = rest.trim_start();
                let lead = rest.len() - trimmed.len();
                return (start + lead, trimmed.trim_end().len()).into();
            }
        }
        let text = self.src.slice(span.offset(), span.len());
        (span.offset(), text.trim_end().len()).into()
    }

    /// Convert a KDL value.
    pub(crate) fn value(&mut self, e: &KdlEntry) -> Option<Got> {
        let span = self.value_span(e);
        let loc = self.loc(span);
        let val = match e.value() {
            KdlValue::String(s) => Val::Str(s.clone()),
            KdlValue::Integer(i) => match i64::try_from(*i) {
                Ok(i) => Val::Int(i),
                Err(_) => {
                    self.err(Code::InvalidValue, "integer out of range", span)
                        .help = Some(INT_TOO_LARGE.into());
                    return None;
                }
            },
            KdlValue::Float(f) => {
                // a number too large for 64 bits reads as infinity (`#inf` says so itself): an
                // error, the value kept so that nothing else is said of it
                let text = self.src.slice(span.offset(), span.len());
                if f.is_infinite() && !text.starts_with('#') {
                    self.err(Code::InvalidValue, "number out of range", span)
                        .help = Some(TOO_LARGE.into());
                } else if crate::util::units::underflows(text, *f) {
                    // `1e-400` reads as 0: not the number typed
                    self.err(Code::InvalidValue, "number out of range", span)
                        .help = Some(TOO_SMALL.into());
                }
                Val::Float(*f)
            }
            KdlValue::Bool(b) => Val::Bool(*b),
            KdlValue::Null => {
                self.err_help(
                    Code::WrongType,
                    "`#null` is not a value here",
                    span,
                    "remove the entry to take the default",
                );
                return None;
            }
        };
        Some(Got { val, loc })
    }

    /// Check a value against a type. Returns the (possibly coerced) value.
    pub fn typed(&mut self, got: Got, field: &Field, what: &str) -> Option<Got> {
        self.typed_as(got, field, field.name, what)
    }

    /// As `typed`, naming the value `name` in messages.
    pub fn typed_as(&mut self, got: Got, field: &Field, name: &str, what: &str) -> Option<Got> {
        // a param written without its default (said at it) takes any value
        if field.name == NO_DEFAULT.name {
            return Some(got);
        }
        self.typed_checked(got, field, name, what)
    }

    /// [`Self::typed_as`] for a field with a type.
    fn typed_checked(&mut self, got: Got, field: &Field, name: &str, what: &str) -> Option<Got> {
        let field = &Field { name: "", ..*field };
        let span = got.loc.span;
        // an argument is named by its node (`repeat` takes an integer), never by the schema's
        // internal name for it
        // built only for a message: a sweep checks each of its values here
        let subject = || {
            if what.is_empty() {
                format!("`{name}`")
            } else {
                format!("{what} `{name}`")
            }
        };
        let bad_type = |d: &mut Self, expected: &str| {
            // a number as written: `gpus=8.0` read "found the number `8`", `1e3` "`1000`"
            let written = got
                .loc
                .src
                .slice(span.offset(), span.len())
                .trim()
                .to_string();
            let shown = match got.val {
                Val::Int(_) | Val::Float(_) if !written.is_empty() => written,
                _ => got.val.to_string(),
            };
            let m = format!(
                "{} takes {expected}, found the {} `{shown}`",
                subject(),
                got.val.type_name(),
            );
            let ex = field.example;
            // a duration written with its unit (`"5s"`, `"2m"`): the seconds as a number
            let seconds = (field.ty == crate::model::schema::SECONDS)
                .then(|| got.val.as_str().and_then(seconds_of))
                .flatten();
            let d = d.err(Code::WrongType, m, span);
            d.label = Some(format!("expected {expected}"));
            let text = matches!(field.ty, Ty::Str | Ty::Template)
                && matches!(got.val, Val::Int(_) | Val::Float(_) | Val::Bool(_));
            d.help = Some(if let Some(n) = seconds {
                let key = field.example.split('=').next().unwrap_or(name);
                format!("the value is whole seconds, written as a number: `{key}={n}`")
            } else if text && what == "--set" {
                // the shell takes one pair of quotes: the KDL string needs its own
                format!(
                    "quote the value to make it a string: `--set '{name}=\"{}\"'`",
                    got.val
                )
            } else if text {
                format!("quote it to make it a string: `\"{}\"`", got.val)
            } else if ex.is_empty() {
                {
                    let what = field.ty.describe();
                    let a = if what.starts_with("one of") {
                        ""
                    } else if what.starts_with(['a', 'e', 'i', 'o', 'u']) {
                        "an "
                    } else {
                        "a "
                    };
                    format!("the value is {a}{what}")
                }
            } else {
                format!("for example `{}`", ex)
            });
        };
        match (&field.ty, &got.val) {
            (Ty::Port | Ty::PortTemplate, Val::Int(_)) => Some(got),
            (Ty::PortTemplate, Val::Str(s)) if s.contains("{{") || s.contains("{%") => Some(got),
            (Ty::PortTemplate, _) => {
                bad_type(
                    self,
                    "an integer, or a template that gives one (`\"{{ port }}\"`)",
                );
                None
            }
            (Ty::Port, _) => {
                bad_type(self, "an integer");
                None
            }
            (Ty::Int(min, max), Val::Int(i)) => {
                if i < min || i > max {
                    // (helper 78: "is 0, outside integer 1–100000")
                    let range = if *max == i64::MAX {
                        format!("an integer of at least {min}")
                    } else {
                        format!("an integer from {min} to {max}")
                    };
                    let m = format!("{} is {i}; it takes {range}", subject());
                    let d = self.err(Code::InvalidValue, m, span);
                    d.label = Some("out of range".into());
                    d.help = Some(format!("use {range}"));
                    return None;
                }
                Some(got)
            }
            (&crate::model::schema::SECONDS, _) => {
                bad_type(self, "whole seconds (an integer)");
                None
            }
            (Ty::Int(..), _) => {
                bad_type(self, "an integer");
                None
            }
            (Ty::Float, Val::Int(i)) => Some(Got {
                val: Val::Float(*i as f64),
                loc: got.loc,
            }),
            (Ty::Float, Val::Float(_)) => Some(got),
            (Ty::Float, _) => {
                bad_type(self, "a number");
                None
            }
            (Ty::Str | Ty::Template, Val::Str(_)) => Some(got),
            (Ty::Str | Ty::Template, _) => {
                bad_type(self, "a string");
                None
            }
            (Ty::Bool, Val::Bool(_)) => Some(got),
            (Ty::Bool, Val::Str(s)) if s == "true" || s == "false" => {
                let d = self.err(
                    Code::WrongType,
                    format!("{} takes a boolean, found the string `{s}`", subject()),
                    span,
                );
                d.label = Some("a string, not a boolean".into());
                d.help = Some(format!("KDL 2.0 booleans are written `#{s}`"));
                None
            }
            (Ty::Bool, _) => {
                bad_type(self, "a boolean (#true or #false)");
                None
            }
            (Ty::Enum(allowed), Val::Str(s)) => {
                if allowed.contains(&s.as_str()) {
                    return Some(got);
                }
                let help = suggest::help_for(s, allowed, &format!("the values of {}", subject()));
                let m = format!("`{s}` is not a valid value of {}", subject());
                let d = self.err(Code::InvalidValue, m, span);
                d.label = Some("unknown value".into());
                d.help = Some(help);
                None
            }
            (Ty::Enum(_), _) => {
                bad_type(self, "a string");
                None
            }
        }
    }

    /// Positional arguments of a node.
    pub(crate) fn args(&mut self, node: &KdlNode) -> Vec<Got> {
        node.entries()
            .iter()
            .filter(|e| e.name().is_none())
            .filter_map(|e| self.value(e))
            .collect()
    }

    /// Check a node's entries against its spec. Returns (args, props).
    pub fn entries(
        &mut self,
        node: &KdlNode,
        spec: &NodeSpec,
    ) -> (Vec<Got>, BTreeMap<String, Got>) {
        let args = self.args(node);
        let name = node.name().value().to_string();
        self.no_block(node, spec);
        match spec.args {
            Args::None => {
                if let Some(a) = args.first() {
                    let d = self.err(
                        Code::UnknownProperty,
                        format!("`{name}` takes no arguments"),
                        a.loc.span,
                    );
                    d.label = Some("unexpected argument".into());
                    d.help = Some(format!(
                        "for example `{}`",
                        spec.example.lines().next().unwrap_or("")
                    ));
                }
            }
            Args::One(f) => {
                if args.is_empty() && !f.optional && f.default.is_none() {
                    let d = self.err(
                        Code::MissingValue,
                        format!("`{name}` needs a {}", f.name),
                        Self::name_span(node),
                    );
                    d.label = Some(format!("{} missing", f.name));
                    d.help = Some(format!(
                        "for example `{}`",
                        spec.example.lines().next().unwrap_or("")
                    ));
                }
                if let Some(extra) = args.get(1) {
                    let d = self.err(
                        Code::UnknownProperty,
                        format!("`{name}` takes one argument"),
                        extra.loc.span,
                    );
                    d.label = Some("extra argument".into());
                    // `run echo "hi"`: a command's words, unquoted
                    d.help = Some(if f.ty == Ty::Template {
                        let words: Vec<String> = args.iter().map(|a| a.val.to_string()).collect();
                        format!(
                            "a command is one string: quote it whole, `{name} \"{}\"`",
                            words.join(" ").replace('"', "\\\"")
                        )
                    } else {
                        "remove it, or use a `sweep` for several values".into()
                    });
                }
            }
            Args::Many(f) => {
                if args.is_empty() && !f.optional {
                    self.err_help(
                        Code::MissingValue,
                        format!("`{name}` needs {}", f.name),
                        Self::name_span(node),
                        format!(
                            "for example `{}`",
                            spec.example.lines().next().unwrap_or("")
                        ),
                    );
                }
            }
        }
        let mut props = BTreeMap::new();
        for e in node.entries() {
            let Some(key) = e.name() else { continue };
            let key_name = key.value().to_string();
            let key_span = key.span();
            let field = spec.props.iter().find(|p| p.name == key_name);
            if field.is_none() && !spec.free_props {
                let names: Vec<&str> = spec.props.iter().map(|p| p.name).collect();
                let elsewhere = taken_where(&key_name, true);
                let help = if suggest::did_you_mean(&key_name, names.iter().copied()).is_none()
                    && !elsewhere.is_empty()
                {
                    format!(
                        "`{key_name}=` is a property of {}, not of `{name}`: move it there",
                        elsewhere.join(" or ")
                    )
                } else if names.is_empty() {
                    format!("`{name}` takes no properties")
                } else {
                    suggest::help_for(&key_name, &names, &format!("the properties of `{name}`"))
                };
                let d = self.err(
                    Code::UnknownProperty,
                    format!("unknown property `{key_name}` on `{name}`"),
                    key_span,
                );
                d.label = Some("unknown property".into());
                d.help = Some(help);
                continue;
            }
            let Some(got) = self.value(e) else { continue };
            let got = match field {
                Some(f) => match self.typed(got, f, "property") {
                    Some(g) => g,
                    None => continue,
                },
                None => got,
            };
            if let Some(prev) = props.get(&key_name) {
                let prev: &Got = prev;
                let (msg, first) = (
                    format!("property `{key_name}` is given twice"),
                    prev.loc.span,
                );
                self.given_twice(msg, key_span, first, "keep one of them");
                continue;
            }
            props.insert(key_name, got);
        }
        for p in spec.props.iter() {
            if p.default.is_none() && !p.optional && !props.contains_key(p.name) {
                let d = self.err(
                    Code::MissingValue,
                    format!("`{name}` needs the property `{}`", p.name),
                    Self::name_span(node),
                );
                d.label = Some(format!("`{}` missing", p.name));
                d.help = Some(format!("add `{}` ({})", p.example, p.doc));
            }
        }
        (args, props)
    }

    /// A `{ … }` block on an entry that takes none (`run "x" { timeout 5 }`) would be dropped
    /// without a word: said, with the properties it takes.
    pub(super) fn no_block(&mut self, node: &KdlNode, spec: &NodeSpec) {
        const BLOCKS: &[&str] = &["experiment", "host", "zip", "collect", "config"];
        if node.children().is_none()
            || BLOCKS.contains(&spec.name)
            || crate::kinds::all().iter().any(|k| k.top.name == spec.name)
        {
            return;
        }
        let name = node.name().value();
        let span = node.children().map_or(node.span(), |c| c.span());
        let props: Vec<String> = spec
            .props
            .iter()
            .map(|p| format!("`{}=`", p.name))
            .collect();
        let d = self.err(
            Code::UnknownNode,
            format!("`{name}` takes no `{{ … }}` block"),
            span,
        );
        d.label = Some("not read".into());
        let example = spec.example.lines().next().unwrap_or("");
        d.help = Some(if props.is_empty() && example.is_empty() {
            "remove the block".to_string()
        } else if props.is_empty() {
            format!("remove the block; for example `{example}`")
        } else {
            format!(
                "write its settings as properties on the same line ({}); for example `{}`",
                props.join(", "),
                spec.example.lines().next().unwrap_or("")
            )
        });
    }

    /// An entry `allowed` does not name: `parent` is `bench` (`in `bench``), or none at the
    /// top level. Said as entries and settings, never as the parser's "nodes".
    pub(crate) fn unknown_node(&mut self, node: &KdlNode, allowed: &[&str], parent: Option<&str>) {
        let name = node.name().value();
        let (message, label, what) = match parent {
            Some(p) => (
                format!("unknown entry `{name}` in `{p}`"),
                format!("`{p}` takes no `{name}`"),
                format!("the entries `{p}` takes"),
            ),
            None => (
                format!("unknown entry `{name}` at the top level"),
                "not a top-level entry".to_string(),
                "the top-level entries".to_string(),
            ),
        };
        // YAML's habit: `experiment: demo`, `run: "…"`
        let elsewhere = taken_where(name, false);
        let help = match name.strip_suffix(':').filter(|n| allowed.contains(n)) {
            Some(n) => format!("KDL writes a node's values after a space, without `:`: `{n} …`"),
            None if suggest::did_you_mean(name, allowed.iter().copied()).is_none()
                && !elsewhere.is_empty() =>
            {
                format!("`{name}` goes inside {}", elsewhere.join(" or "))
            }
            None => suggest::help_for(name, allowed, &what),
        };
        let d = self.err(Code::UnknownNode, message, Self::name_span(node));
        d.label = Some(label);
        d.help = Some(help);
    }
}

/// Where a name written in the wrong place is taken: the nodes that take it as a property
/// (`prop`), or the places where an entry of that name stands (helper 78: `direction=` on a
/// `run`, `repeat` inside `experiment`, only listed what the node there takes).
fn taken_where(key: &str, prop: bool) -> Vec<String> {
    use crate::model::schema;
    let mut places: Vec<(String, Vec<NodeSpec>)> = vec![
        ("the top level".into(), crate::kinds::top_nodes()),
        ("`experiment`".into(), schema::EXPERIMENT_CHILDREN.to_vec()),
        ("`host`".into(), schema::HOST_CHILDREN.to_vec()),
        (
            "a bench block (`bench NAME { … }`)".into(),
            schema::COMMON_CHILDREN.to_vec(),
        ),
        ("`collect`".into(), schema::COLLECT_CHILDREN.to_vec()),
    ];
    for k in crate::kinds::all() {
        places.push((format!("`{}`", k.node), k.children.to_vec()));
    }
    let mut out: Vec<String> = Vec::new();
    for (place, nodes) in places {
        for n in nodes {
            let found = if prop {
                n.props
                    .iter()
                    .any(|p| p.name == key)
                    .then(|| format!("`{}`", n.name))
            } else {
                (n.name == key).then(|| place.clone())
            };
            if let Some(f) = found.filter(|f| !out.contains(f)) {
                out.push(f);
            }
        }
    }
    out
}

pub(crate) fn children(node: &KdlNode) -> &[KdlNode] {
    node.children().map(|c| c.nodes()).unwrap_or(&[])
}

pub(crate) fn field_of(spec: &NodeSpec) -> Field {
    match spec.args {
        Args::One(f) | Args::Many(f) => f,
        Args::None => Field {
            name: spec.name,
            ty: Ty::Str,
            default: None,
            optional: true,
            doc: "",
            example: "",
        },
    }
}

pub fn default_output() -> String {
    "results/{{ name }}_{{ started | date(format='%m%d%H%M%S') }}".into()
}

/// Why a numeral too large for a 64-bit float is refused (it would read as infinity).
pub const TOO_LARGE: &str =
    "values must fit in 64 bits (at most about 1.8e308); write `#inf` for infinity";
/// Why a numeral too small for a 64-bit float is refused (it would read as 0).
pub const TOO_SMALL: &str =
    "values must fit in 64 bits (down to about 4.9e-324); this one would read as 0: write 0 if that is meant";
/// Why an integer beyond 64 bits is refused.
pub const INT_TOO_LARGE: &str = "values must fit in 64 bits";

/// Parse a default written as KDL text (`1024`, `"x"`, `#true`, `BRPC`).
pub fn default_val(text: &str) -> Option<Val> {
    if out_of_range(text).is_some() {
        return None;
    }
    Some(match one_value(text)? {
        KdlValue::String(s) => Val::Str(s),
        KdlValue::Integer(i) => Val::Int(i64::try_from(i).ok()?),
        KdlValue::Float(f) => Val::Float(f),
        KdlValue::Bool(b) => Val::Bool(b),
        KdlValue::Null => return None,
    })
}

/// Why a command line's text, read as a KDL number, is not the number typed: an integer beyond
/// 64 bits, a numeral that overflows to infinity (`#inf` is written so) or underflows to 0.
pub fn out_of_range(text: &str) -> Option<&'static str> {
    match one_value(text) {
        Some(KdlValue::Integer(i)) if i64::try_from(i).is_err() => Some(INT_TOO_LARGE),
        Some(KdlValue::Float(f)) if f.is_infinite() && !text.starts_with('#') => Some(TOO_LARGE),
        Some(KdlValue::Float(f)) if crate::util::units::underflows(text, f) => Some(TOO_SMALL),
        // beyond what KDL's reader holds (128 bits): digits only, an integer all the same
        None if {
            let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
        } =>
        {
            Some(INT_TOO_LARGE)
        }
        _ => None,
    }
}

/// The text as one plain KDL value, when it is one and nothing else.
fn one_value(text: &str) -> Option<KdlValue> {
    let doc = KdlDocument::parse_v2(&format!("v {text}")).ok()?;
    // one plain value that is the whole text: `a b`, `a;b`, `a=b`, `x//c` or `a /- b` are not
    // values (KDL would read a second entry, a property, a comment) and stay text as typed
    let [node] = doc.nodes() else { return None };
    let [e] = node.entries() else { return None };
    if e.name().is_some() || node.children().is_some() {
        return None;
    }
    let span = e.span();
    if text.trim() != text || span.offset() + span.len() != 2 + text.len() {
        return None;
    }
    Some(e.value().clone())
}

/// A duration written with its unit, in whole seconds (`"5s"` 5, `"2m"` 120, `"1h"` 3600,
/// `"1500ms"` 2, rounded up); None for anything else.
fn seconds_of(s: &str) -> Option<i64> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("min").or_else(|| s.strip_suffix('m')) {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    let secs = (v * scale).ceil();
    (v.is_finite() && v > 0.0 && secs <= 604_800.0).then_some(secs as i64)
}

#[cfg(test)]
mod tests {
    /// A duration with its unit is read in whole seconds, rounded up; anything else is none.
    #[test]
    fn a_duration_with_a_unit_is_whole_seconds() {
        for (s, want) in [
            ("5s", Some(5)),
            ("2m", Some(120)),
            ("2min", Some(120)),
            ("1h", Some(3600)),
            ("1500ms", Some(2)),
            ("0.5s", Some(1)),
            (" 30s ", Some(30)),
            ("0s", None),
            ("-5s", None),
            ("8d", None),
            ("s", None),
            ("200h", None),
            ("nans", None),
        ] {
            assert_eq!(super::seconds_of(s), want, "{s}");
        }
    }
}
