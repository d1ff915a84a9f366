//! Source text → validated Experiment (the pure prefix of the pipeline).

use std::path::Path;
use std::sync::Arc;

use crate::decode;
use crate::diag::{Code, Diag, Diags};
use crate::model::Experiment;
use crate::source::Source;
use crate::syntax;
use crate::validate::{self, Options};

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

/// Parse, decode and validate text.
pub fn load_str(name: &str, text: &str, opts: &Options) -> Loaded {
    load_with(name, text, opts, &[])
}

/// As `load_str`, applying `--set key=value` overrides before validation.
pub fn load_with(name: &str, text: &str, opts: &Options, sets: &[String]) -> Loaded {
    let source = Source::new(name, text);
    let mut diags = Diags::default();
    let experiment = syntax::parse(&source, &mut diags).and_then(|doc| {
        let mut exp = decode::decode(&source, &doc, &mut diags)?;
        for s in sets {
            crate::overrides::apply_set(&mut exp, s, &mut diags);
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
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => load_with(&name, &text, opts, sets),
            Err(e) => io_failure(
                &name,
                format!(
                    "`{name}` is not UTF-8 text (byte {})",
                    e.utf8_error().valid_up_to()
                ),
            ),
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
