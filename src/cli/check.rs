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
        let clean = !loaded.has_errors();
        all.extend(loaded.diags);
        if let (true, Some(exp)) = (clean, &loaded.experiment) {
            all.extend(rendered(exp, f));
        }
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

/// Every point's commands rendered as `plan` renders them: a template that parses but fails on
/// a point's values (a filter given the wrong arguments, a division by zero) is an error of
/// `check`, at its step, not first found by `plan` or `run` — the first such step of each
/// bench. The benches of command steps only, where the author's templates are: a kind's own
/// plan (thousands of RecStore clients) is `plan`'s work.
fn rendered(exp: &crate::model::Experiment, file: &std::path::Path) -> Vec<Diag> {
    let steps =
        |b: &crate::model::Bench| matches!(b.placement, crate::model::Placement::Steps { .. });
    if !exp.benches.iter().any(steps) {
        return Vec::new();
    }
    let mut exp = exp.clone();
    exp.benches.retain(steps);
    // a warmup round renders the run steps as the timed one does: not rendered again (1,000
    // points with `warmup 1000` made a million steps)
    for b in &mut exp.benches {
        if let Some(w) = b.settings.get_mut("warmup") {
            w.val = crate::model::Val::Int(0);
        }
        for l in &mut b.lanes {
            l.overrides.remove("warmup");
        }
    }
    // after a failure its bench is set aside and the rest planned again: each bench's first
    // failure is said, in as many plans as there are failures (at most 20: a file of a
    // thousand broken benches is not planned a thousand times)
    let mut out = Vec::new();
    while out.len() < 20 {
        let Some((d, bench)) = rendered_first(&exp, file) else {
            break;
        };
        out.push(d);
        match bench {
            Some(i) => {
                exp.benches.remove(i);
            }
            None => break,
        }
    }
    out
}

/// The first command of the experiment that cannot be rendered, and the index of its bench
/// where the error names its step.
fn rendered_first(
    exp: &crate::model::Experiment,
    file: &std::path::Path,
) -> Option<(Diag, Option<usize>)> {
    let e = crate::plan::plan(
        exp,
        &file.display().to_string(),
        &Default::default(),
        None,
        chrono::Local::now(),
    )
    .err()?;
    let d = Diag::error(
        diag::Code::TemplateRender,
        format!("a command cannot be rendered: {e}"),
    );
    // the place a kind's plan names first (`file:line:col: …`), where it is a step's
    let at = exp
        .benches
        .iter()
        .enumerate()
        .filter_map(|(i, b)| match &b.placement {
            crate::model::Placement::Steps { steps, .. } => Some(steps.iter().map(move |s| (i, s))),
            _ => None,
        })
        .flatten()
        .flat_map(|(i, s)| [(i, &s.command_loc), (i, &s.loc)])
        .find_map(|(i, l)| Some((i, l, e.strip_prefix(&format!("{l:?}: "))?)));
    Some(match at {
        Some((i, loc, rest)) => (
            Diag::error(
                diag::Code::TemplateRender,
                format!("a command cannot be rendered: {rest}"),
            )
            .at(&loc.src, loc.span)
            .label("fails here")
            .help("`expr plan` prints every command; a value that only some points take is best checked in the template (`{% if x != 0 %}…{% endif %}`) or left out of the sweep"),
            Some(i),
        ),
        None => (d, None),
    })
}
