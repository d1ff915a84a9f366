//! `expr bisect`: the experiment is loaded and validated here (its diagnostics rendered at the
//! edge, as for `run`); the bisection itself is `crate::bisect`.

use crate::parse::load;
use crate::parse::validate::Options;
use crate::util::exit_codes;

use super::diags::print_diags;

pub(super) fn bisect_cmd(args: crate::bisect::Args) -> i32 {
    let load = |file: &std::path::Path, set: &[String]| {
        let loaded = load::load_file_with(file, &Options::default(), set);
        print_diags(&loaded.diags);
        if loaded.has_errors() {
            return Err(exit_codes::INVALID);
        }
        loaded.experiment.ok_or(exit_codes::INVALID)
    };
    crate::bisect::bisect(&args, &load)
}
