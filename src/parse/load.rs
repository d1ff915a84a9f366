//! Source text → validated Experiment (the pure prefix of the pipeline).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::model::diag::{Code, Diag, Diags};
use crate::model::source::Source;
use crate::model::Experiment;
use crate::parse::decode;
use crate::parse::syntax;
use crate::parse::validate::{self, Options};

/// The outcome of loading one file: the experiment (when it decoded) and every diagnostic.
pub struct Loaded {
    pub source: Arc<Source>,
    pub experiment: Option<Experiment>,
    pub diags: Vec<Diag>,
}

impl Loaded {
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(Diag::is_error)
    }
}

/// Files larger than this are refused unless `--max-input-mib` raises the cap.
pub const MAX_INPUT_MIB: u64 = 16;
/// Nodes nested deeper than this are refused before parsing (the parser recurses).
pub const MAX_DEPTH: usize = 64;

/// The offset of the first `{` that opens a block deeper than `max`, outside strings and
/// comments.
pub fn too_deep(text: &str, max: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in crate::parse::syntax::code_bytes(text) {
        match c {
            b'{' => {
                depth += 1;
                if depth > max {
                    return Some(i);
                }
            }
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The most of one construct in a row that the parser takes before its recursion is refused:
/// slashdashes (`/- /- /- x`, which it also reads in quadratic time), `=` or `(` in one
/// whitespace-free token (`a=a=a=…`, `(t)(t)(t)…`); and of `}` and `)` that close nothing.
/// The kdl parser recurses once per such error it recovers from: a 9 KB file of `/- ` or 22,000
/// lines of `x )` overflowed its 64 MiB stack (exit 134). No experiment comes near.
pub const MAX_RUN: usize = 16;
pub const MAX_STRAY: usize = 64;

/// The first place where a run of one construct passes what the parser takes ([`MAX_RUN`],
/// [`MAX_STRAY`]): its offset, length and what it is. Read over code bytes (strings and
/// comments stand apart).
pub fn too_many_in_a_row(text: &str) -> Option<(usize, usize, &'static str)> {
    let (mut depth, mut stray_braces, mut stray_parens) = (0usize, 0usize, 0usize);
    let (mut slashdashes, mut last_slash): (usize, Option<usize>) = (0, None);
    // within the current whitespace-free token: its `=` and `(`, and its open parens
    let (mut eq, mut open, mut parens) = (0usize, 0usize, 0usize);
    // a type annotation with nothing after it on its line (`x (t)`), as many as there are
    let (mut after_annotation, mut dangling) = (false, 0usize);
    for (i, c) in crate::parse::syntax::code_bytes(text) {
        if c.is_ascii_whitespace() {
            (eq, open) = (0, 0);
            if c == b'\n' {
                parens = 0;
                if after_annotation {
                    dangling += 1;
                    if dangling > MAX_STRAY {
                        return Some((i, 1, "type annotations `(…)` with nothing after them"));
                    }
                }
                after_annotation = false;
            }
            continue;
        }
        if after_annotation && matches!(c, b';' | b'}') {
            dangling += 1;
            if dangling > MAX_STRAY {
                return Some((i, 1, "type annotations `(…)` with nothing after them"));
            }
        }
        after_annotation = c == b')';
        // `/-`: a slash, then a dash right after it
        if c == b'/' {
            last_slash = Some(i);
            continue;
        }
        if c == b'-' && last_slash == Some(i.wrapping_sub(1)) {
            slashdashes += 1;
            if slashdashes > MAX_RUN {
                return Some((i - 1, 2, "slashdashes (`/-`) in a row"));
            }
            continue;
        }
        slashdashes = 0;
        match c {
            b'{' => depth += 1,
            b'}' if depth == 0 => {
                stray_braces += 1;
                if stray_braces > MAX_STRAY {
                    return Some((i, 1, "`}` that close no block"));
                }
            }
            b'}' => depth -= 1,
            b'=' => {
                eq += 1;
                if eq > MAX_RUN {
                    return Some((i, 1, "`=` in one token (`a=a=a=…`)"));
                }
            }
            b'(' => {
                open += 1;
                parens += 1;
                if open > MAX_RUN {
                    return Some((i, 1, "type annotations `(…)` in a row"));
                }
            }
            b')' if parens == 0 => {
                stray_parens += 1;
                if stray_parens > MAX_STRAY {
                    return Some((i, 1, "`)` that close no `(`"));
                }
            }
            b')' => parens -= 1,
            _ => {}
        }
    }
    None
}

/// The offset of the first `/*` that opens a block comment nested deeper than `max` (the
/// parser recurses into nested comments: ten thousand overflowed its stack). Read as bytes,
/// strings and line comments not told apart: a string or a line comment holding that many
/// `/*` is no experiment either.
pub fn comments_too_deep(text: &str, max: usize) -> Option<usize> {
    let b = text.as_bytes();
    let (mut i, mut nest) = (0usize, 0usize);
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'*' {
            nest += 1;
            if nest > max {
                return Some(i);
            }
            i += 2;
        } else if nest > 0 && b[i] == b'*' && b[i + 1] == b'/' {
            nest -= 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    None
}

/// Parse, decode and validate text.
pub fn load_str(name: &str, text: &str, opts: &Options) -> Loaded {
    load_with(name, text, opts, &[])
}

/// As `load_str`, applying `--set key=value` overrides before validation.
pub fn load_with(name: &str, text: &str, opts: &Options, sets: &[String]) -> Loaded {
    let source = Source::new(name, text);
    // the text as the source holds it (a byte-order mark dropped, CRLF made LF): every offset
    // below is into it
    let text = source.text.clone();
    let text = text.as_str();
    let mut diags = Diags::default();
    let deep = too_deep(text, MAX_DEPTH)
        .map(|at| {
            (
                at,
                1,
                format!("blocks nested more than {MAX_DEPTH} deep"),
                "too deep",
            )
        })
        .or_else(|| {
            comments_too_deep(text, MAX_DEPTH).map(|at| {
                (
                    at,
                    2,
                    format!("block comments nested more than {MAX_DEPTH} deep"),
                    "too deep",
                )
            })
        })
        .or_else(|| {
            too_many_in_a_row(text).map(|(at, len, what)| {
                let most = if what.contains("close") || what.contains("nothing after") {
                    MAX_STRAY
                } else {
                    MAX_RUN
                };
                (at, len, format!("more than {most} {what}"), "too many")
            })
        });
    if let Some((at, len, what, label)) = deep {
        diags.push(
            Diag::error(Code::InputLimit, what)
                .at(&source, (at, len).into())
                .label(label)
                .help("an experiment needs three or four levels; this looks like generated or corrupt input"),
        );
        return Loaded {
            source,
            experiment: None,
            diags: diags.sorted(),
        };
    }
    let experiment = syntax::parse(&source, &mut diags).and_then(|doc| {
        let mut exp = decode::decode(&source, &doc, &mut diags)?;
        validate::secrets_escaped(&exp, &source, &doc, &mut diags);
        // the parsed document (a few hundred bytes an entry) goes before validation expands
        // the matrix: the two together were most of `check`'s and `plan`'s peak memory
        drop(doc);
        // `--set host.local.…` reaches the implicit host as it would a declared one
        if !sets.is_empty() {
            validate::add_implicit_local(&mut exp);
        }
        for s in sets {
            crate::parse::overrides::apply_set(&mut exp, s, &mut diags);
        }
        validate::validate(&mut exp, opts, &mut diags);
        validate::secrets_in_sets(&exp, sets, &mut diags);
        // every output from here masks them, the diagnostics first
        crate::util::secret::register_secrets(exp.secret_values());
        Some(exp)
    });
    Loaded {
        source,
        experiment,
        diags: diags.sorted(),
    }
}

/// Read and load a file.
pub fn load_file(path: &Path, opts: &Options) -> Loaded {
    load_file_with(path, opts, &[])
}

/// Read and load a file with `--set` overrides.
pub fn load_file_with(path: &Path, opts: &Options, sets: &[String]) -> Loaded {
    let name = path.display().to_string();
    let cap = opts
        .max_input_mib
        .unwrap_or(MAX_INPUT_MIB)
        .saturating_mul(1 << 20);
    fn read(r: impl std::io::Read, cap: u64) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        r.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
        Ok(bytes)
    }
    let got = if name == "-" {
        read(std::io::stdin().lock(), cap)
    } else {
        std::fs::File::open(path).and_then(|f| read(f, cap))
    };
    match got {
        Ok(bytes) if bytes.len() as u64 > cap => Loaded {
            source: Source::new(&name, ""),
            experiment: None,
            diags: vec![Diag::error(
                Code::InputLimit,
                format!("`{name}` is larger than {} MiB", cap >> 20),
            )
            .help("an experiment file is a few KiB; pass `--max-input-mib N` to raise the cap")],
        },
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => load_with(&name, &text, opts, sets),
            Err(e) => {
                // located where the text stops being UTF-8 (the bytes before it are text)
                let at = e.utf8_error().valid_up_to();
                let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
                let source = Source::new(&name, &text);
                // where that byte is in the text as the source holds it: without a byte-order
                // mark and with CRLF read as LF (the file's own offset was past a CRLF, inside
                // the U+FFFD shown for the byte: a panic)
                let before = &text[..at];
                let shown_at = before.len()
                    - if before.starts_with('\u{feff}') { 3 } else { 0 }
                    - before.matches("\r\n").count();
                Loaded {
                    diags: vec![Diag::error(
                        Code::Io,
                        format!("`{name}` is not UTF-8 text (byte {at})"),
                    )
                    .at(&source, (shown_at, '\u{fffd}'.len_utf8()).into())
                    .label("not UTF-8")
                    .help("an experiment file is UTF-8 KDL: save it as UTF-8")],
                    source,
                    experiment: None,
                }
            }
        },
        Err(e) => io_failure(&name, format!("cannot read `{name}`: {e}")),
    }
}

fn io_failure(name: &str, msg: String) -> Loaded {
    Loaded {
        source: Source::new(name, ""),
        experiment: None,
        diags: vec![
            Diag::error(Code::Io, msg).help("check the path and that the file is a UTF-8 KDL file")
        ],
    }
}
