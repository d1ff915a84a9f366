//! `expr history`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::util::exit_codes;

use super::args::PageFormat;

#[allow(clippy::too_many_arguments)]
pub(super) fn history_cmd(
    experiment: Option<&str>,
    lane: Option<&str>,
    metric: Option<&str>,
    wheres: &[String],
    format: PageFormat,
    svg: Option<&Path>,
    import: &[PathBuf],
    history: Option<&Path>,
) -> i32 {
    let fail = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INVALID
    };
    // the database's own troubles are not the command line's: exit 1
    let broken = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INTERNAL
    };
    let db = crate::history::path(history);
    if !import.is_empty() {
        let mut c = match crate::history::open(&db) {
            Ok(c) => c,
            Err(e) => return broken(e),
        };
        let mut code = exit_codes::OK;
        for d in import {
            match crate::history::register(&mut c, d) {
                Ok(_) => {
                    let _ = writeln!(std::io::stderr(), "indexed {}", d.display());
                }
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "error: {}: {e}", d.display());
                    code = exit_codes::INVALID;
                }
            }
        }
        let _ = writeln!(std::io::stderr(), "history: {}", db.display());
        return code;
    }
    let Some(experiment) = experiment else {
        return fail("name an experiment, or --import DIR…".into());
    };
    let mut filters = Vec::new();
    for w in wheres {
        match w.split_once('=') {
            Some((k, v)) if !k.is_empty() => filters.push((k.to_string(), v.to_string())),
            _ => return fail(format!("--where takes AXIS=VALUE, not `{w}`")),
        }
    }
    if !db.is_file() {
        return fail(format!(
            "no history database at {} (runs register there; `expr history --import DIR…` indexes existing result directories)",
            db.display()
        ));
    }
    let entries = match crate::history::open_ro(&db)
        .and_then(|c| crate::history::query(&c, experiment, lane, metric, &filters))
    {
        Ok(e) => e,
        Err(e) => return broken(e),
    };
    if entries.is_empty() {
        // the experiments it does hold, the nearest first
        let known: Vec<String> = crate::history::open_ro(&db)
            .and_then(|c| crate::history::runs(&c))
            .map(|runs| {
                let mut v: Vec<String> = runs.into_iter().map(|r| r.1).collect();
                v.sort();
                v.dedup();
                v
            })
            .unwrap_or_default();
        let hint = if known.iter().any(|k| k == experiment) {
            String::new()
        } else {
            match crate::parse::suggest::did_you_mean(experiment, known.iter().map(String::as_str))
            {
                Some(s) => format!(" — did you mean `{s}`?"),
                None if !known.is_empty() => format!(
                    "; it holds {}",
                    known
                        .iter()
                        .take(10)
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => String::new(),
            }
        };
        return fail(format!(
            "the history ({}) holds no run of `{experiment}`{}{hint}",
            db.display(),
            if lane.is_some() || metric.is_some() || !filters.is_empty() {
                " with that lane, metric or point"
            } else {
                ""
            }
        ));
    }
    let name = entries[0].metric.clone();
    let title = format!("{experiment}: {name} over runs");
    let text = match format {
        PageFormat::Json => serde_json::to_string_pretty(&entries).unwrap_or_default() + "\n",
        PageFormat::Text => crate::history::text(&entries),
        PageFormat::Html => crate::history::html(&entries, &title),
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    let safe = |s: &str| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    // a filtered history has a chart of its own: the unfiltered one is not overwritten
    let mut filter = String::new();
    if let Some(l) = lane {
        filter.push_str(&format!("_{}", safe(l)));
    }
    for (k, v) in &filters {
        filter.push_str(&format!("_{}-{}", safe(k), safe(v)));
    }
    let path = svg.map(Path::to_path_buf).unwrap_or_else(|| {
        crate::history::parent_of(&db).join(format!(
            "history_{}_{}{filter}.svg",
            safe(experiment),
            safe(metric.unwrap_or(&name))
        ))
    });
    match crate::history::svg(&entries, &path, &title) {
        Ok(()) => {
            let _ = writeln!(std::io::stderr(), "trend: {}", path.display());
        }
        // a chart asked for by name must be written
        Err(e) if svg.is_some() => return fail(format!("the trend chart was not written: {e}")),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "warning: no trend chart: {e}");
        }
    }
    exit_codes::OK
}
