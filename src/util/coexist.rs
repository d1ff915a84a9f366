//! Living beside POSIX `expr`: arguments that are not ours go, untouched, to the next `expr` on
//! PATH after this binary (or /usr/bin/expr), so shell scripts keep working with ours first.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Set on the program the arguments are handed to: a copy of this expr that receives them again
/// goes straight to the system's expr.
pub const FORWARDED: &str = "EXPR_POSIX_FORWARDED";

/// The executable files named `name` on `path`, in PATH order.
pub fn on_path(path: &std::ffi::OsStr, name: &str) -> Vec<PathBuf> {
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .filter(|p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .collect()
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// The system `expr`: the first `expr` on PATH after this binary that is not this binary, else
/// the first one that is not this binary, else /usr/bin/expr or /bin/expr.
pub fn find(me: &Path, path: &std::ffi::OsStr) -> Option<PathBuf> {
    let all = on_path(path, "expr");
    let mine = all.iter().position(|p| same_file(p, me));
    let after = mine.map(|i| i + 1).unwrap_or(0);
    all.iter()
        .skip(after)
        .chain(all.iter().take(after))
        .find(|p| !same_file(p, me))
        .cloned()
        .or_else(|| {
            ["/usr/bin/expr", "/bin/expr"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file() && !same_file(p, me))
        })
}

/// Replace this process with the system `expr` and the arguments as given; returns an exit code
/// only when that cannot be done.
pub fn system_expr(args: &[OsString]) -> i32 {
    use std::os::unix::process::CommandExt;
    let me = std::env::current_exe().unwrap_or_default();
    // Handed on once already: a second copy of this program or a wrapper script around it came
    // next on PATH and sent the arguments back. Only the system's own places are tried now, so
    // two installs can never exec each other for ever.
    let path = if std::env::var_os(FORWARDED).is_some() {
        OsString::new()
    } else {
        std::env::var_os("PATH").unwrap_or_default()
    };
    let Some(system) = find(&me, &path) else {
        eprintln!(
            "expr: `{}` is not an expr subcommand, and no system `expr` was found to pass it to (see `expr --help`)",
            args.first().map(|a| a.to_string_lossy()).unwrap_or_default()
        );
        return 2;
    };
    let err = std::process::Command::new(&system)
        .args(args)
        .env(FORWARDED, "1")
        .exec();
    eprintln!("expr: cannot run {}: {err}", system.display());
    2
}
