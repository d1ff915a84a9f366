//! The leaves every stage uses: shell quoting, units, statistics, the report language, exit
//! codes, living beside POSIX expr, and the JSON Schema check of config files.

pub mod coexist;
pub mod exit_codes;
pub mod fmt;
pub mod hash;
pub mod index;
pub mod json_schema;
pub mod lang;
pub mod markup;
pub mod memcap;
pub mod net;
pub mod secret;
pub mod shell;
pub mod stats;
pub mod suggest;
pub mod template;
#[cfg(test)]
pub mod testutil;
pub mod units;

/// Whether two paths name one place that exists (each canonicalized: `out`, `./out` and its
/// absolute path are one; a path that is not there is the same as nothing).
pub fn same_place(a: &std::path::Path, b: &std::path::Path) -> bool {
    let c = |p: &std::path::Path| std::fs::canonicalize(p).ok();
    c(a).is_some_and(|x| Some(x) == c(b))
}

/// Why `dir` is not a directory to read (`not a directory`, `no such directory`); None where
/// it is one.
pub fn not_a_dir(dir: &std::path::Path) -> Option<&'static str> {
    if dir.is_dir() {
        None
    } else if dir.exists() {
        Some("not a directory")
    } else {
        Some("no such directory")
    }
}
