//! `expr check`.

use std::io::Write;
use std::path::PathBuf;

use crate::model::diag::{self, Diag};
use crate::parse::load;
use crate::parse::validate::Options;
use crate::util::exit_codes;

use super::args::CheckFormat;
use super::diags::print_diags;

pub(super) fn check(files: &[PathBuf], format: CheckFormat, resolved: bool, opts: &Options) -> i32 {
    let mut all: Vec<Diag> = Vec::new();
    let mut out = std::io::stdout().lock();
    for f in files {
        let loaded = load::load_file(f, opts);
        if resolved && !loaded.has_errors() {
            if let Some(exp) = &loaded.experiment {
                let _ = writeln!(
                    out,
                    "// {} (resolved)\n{}",
                    f.display(),
                    crate::parse::resolved::to_kdl(exp)
                );
            }
        }
        all.extend(loaded.diags);
    }
    match format {
        CheckFormat::Json => {
            let _ = writeln!(out, "{}", diag::render_json(&all));
        }
        CheckFormat::Text => {
            print_diags(&all);
            let errors = all.iter().any(Diag::is_error);
            let _ = writeln!(
                std::io::stderr(),
                "{}: {} file{} checked, {}",
                if errors { "error" } else { "ok" },
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                diag::summary(&all)
            );
        }
    }
    if all.iter().any(Diag::is_error) {
        exit_codes::INVALID
    } else {
        exit_codes::OK
    }
}
