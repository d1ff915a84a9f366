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
    let mut diags = Diags::default();
    let deep = too_deep(text, MAX_DEPTH)
        .map(|at| (at, "blocks"))
        .or_else(|| comments_too_deep(text, MAX_DEPTH).map(|at| (at, "block comments")));
    if let Some((at, what)) = deep {
        diags.push(
            Diag::error(
                Code::InputLimit,
                format!("{what} nested more than {MAX_DEPTH} deep"),
            )
            .at(&source, (at, if what == "blocks" { 1 } else { 2 }).into())
            .label("too deep")
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
                Loaded {
                    diags: vec![Diag::error(
                        Code::Io,
                        format!("`{name}` is not UTF-8 text (byte {at})"),
                    )
                    .at(&source, (at, '\u{fffd}'.len_utf8()).into())
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
