//! Removing a server's scratch (a value store under /dev/shm): only a path that lies under
//! `/dev/shm/expr-` for real — no symlink anywhere on the way — whose top entry belongs to this
//! user. /dev/shm is writable by everyone: a link planted at a guessable name must not turn a
//! teardown into the removal of someone's data.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::kind_api::step::is_scratch;
use crate::plan::remote::top;

/// Remove one scratch path on this machine: Ok(true) removed, Ok(false) not there, Err(why
/// not) when it is not expr's to remove.
pub fn remove_local(path: &str) -> Result<bool, String> {
    if !is_scratch(path) {
        return Err(format!("{path} is not under /dev/shm/expr-: not removed"));
    }
    let real = match std::fs::canonicalize(path) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // nothing there (the server made nothing); an empty top directory still goes
            remove_empty_top(path);
            return Ok(false);
        }
        Err(e) => return Err(format!("{path}: {e}")),
    };
    if real != Path::new(path) {
        return Err(format!(
            "{path} leads through a symlink to {}: not removed",
            real.display()
        ));
    }
    let top = top(path).ok_or_else(|| format!("{path}: not a scratch path"))?;
    let owner = std::fs::symlink_metadata(&top)
        .map_err(|e| format!("{top}: {e}"))?
        .uid();
    // SAFETY: geteuid has no preconditions
    let me = unsafe { libc::geteuid() };
    if owner != me {
        return Err(format!(
            "{top} belongs to user {owner}, not to this one ({me}): not removed"
        ));
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{path}: {e}"))?;
    // remove_dir_all removes links inside as links, never what they point to
    let r = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    r.map_err(|e| format!("{path}: {e}"))?;
    remove_empty_top(path);
    Ok(true)
}

/// The run's directory under /dev/shm once its last PS type's directory is gone.
fn remove_empty_top(path: &str) {
    if let Some(t) = top(path).filter(|t| t != path) {
        let _ = std::fs::remove_dir(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_on_the_way_or_outside_the_root_is_refused_and_the_target_kept() {
        let victim = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(victim.path().join("ps")).unwrap();
        std::fs::write(victim.path().join("ps/data"), "precious").unwrap();
        let link = format!("/dev/shm/expr-unit-link-{}", std::process::id());
        let _ = std::fs::remove_file(&link);
        if std::os::unix::fs::symlink(victim.path(), &link).is_err() {
            return; // no /dev/shm here
        }
        let e = remove_local(&format!("{link}/ps")).unwrap_err();
        assert!(e.contains("symlink"), "{e}");
        assert!(victim.path().join("ps/data").is_file());
        let e = remove_local(&link).unwrap_err();
        assert!(e.contains("symlink"), "{e}");
        let _ = std::fs::remove_file(&link);
        assert!(remove_local("/tmp/x").is_err());
        assert!(remove_local("/dev/shm/expr-a/../../etc").is_err());
        // a real one of ours goes, with its empty top
        let mine = format!("/dev/shm/expr-unit-real-{}", std::process::id());
        std::fs::create_dir_all(format!("{mine}/brpc")).unwrap();
        std::fs::write(format!("{mine}/brpc/value_0"), "x").unwrap();
        assert_eq!(remove_local(&format!("{mine}/brpc")), Ok(true));
        assert!(!Path::new(&mine).exists());
        assert_eq!(remove_local(&format!("{mine}/brpc")), Ok(false));
    }
}
