//! `expr init`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::util::exit_codes;

/// `expr init KIND [FILE]`: a starter experiment.
pub(super) fn init(kind: &str, file: Option<&Path>, force: bool) -> i32 {
    // `expr init -`: the file is stdout, the kind the default one
    let (kind, file) = match (kind, file) {
        ("-", None) => ("bench", Some(Path::new("-"))),
        other => other,
    };
    let Some(k) = crate::kinds::all().into_iter().find(|k| k.node == kind) else {
        let names: Vec<&str> = crate::kinds::all().iter().map(|k| k.node).collect();
        let _ = writeln!(
            std::io::stderr(),
            "error: `{kind}` is not a kind of benchmark; {}",
            crate::util::suggest::help_for(kind, &names, "the kinds")
        );
        return exit_codes::INVALID;
    };
    let default = PathBuf::from(format!("{kind}.kdl"));
    let path = file.unwrap_or(&default);
    if path == Path::new("-") {
        return super::out::print(k.starter.as_bytes())
            .err()
            .unwrap_or(exit_codes::OK);
    }
    // a directory is no file to write, --force or not (nor is `newd/`, which names one)
    if path.is_dir() || path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        let shown = path.display().to_string();
        let _ = writeln!(
            std::io::stderr(),
            "error: {shown} {}; name the experiment file to write (e.g. {}/{kind}.kdl)",
            if path.is_dir() {
                "is a directory"
            } else {
                "names a folder"
            },
            shown.trim_end_matches('/')
        );
        return exit_codes::INVALID;
    }
    if let Some(up) = path
        .parent()
        .filter(|u| !u.as_os_str().is_empty() && !u.is_dir())
    {
        let _ = writeln!(
            std::io::stderr(),
            "error: {}: its folder {} does not exist",
            path.display(),
            up.display()
        );
        return exit_codes::INVALID;
    }
    // a link counts as there, dangling or not (it was written through, creating its target)
    if std::fs::symlink_metadata(path).is_ok() && !force {
        let _ = writeln!(
            std::io::stderr(),
            "error: {} exists; pass --force to replace it, or name another file",
            path.display()
        );
        return exit_codes::INVALID;
    }
    // as a shell's `>` writes: through a link to its target, which is said
    if let Err(e) = crate::results::atomic::write_named(path, k.starter.as_bytes()) {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        return exit_codes::INVALID;
    }
    let through = std::fs::read_link(path)
        .map(|t| format!(" (a link: the file written is {})", t.display()))
        .unwrap_or_default();
    // as the user would type it next: quoted, and `./` before a name that looks like a flag
    let shown = path.display().to_string();
    let p = crate::util::shell::quote(&if shown.starts_with('-') {
        format!("./{shown}")
    } else {
        shown.clone()
    });
    let _ = writeln!(
        std::io::stderr(),
        "expr: wrote {shown}{through}; next: `expr check {p}`, `expr plan {p}`, `expr run {p}`"
    );
    exit_codes::OK
}
