//! Replacing report files whole: written under a temporary name, then renamed.

use std::path::Path;

/// Write a file the user named on the command line (`--junit`, `--output`): like a shell's
/// `>`, through a link to its target and into a FIFO or a device as it is (renaming over them
/// made `/dev/full` a regular file as root, and a FIFO's reader waited forever); a regular file
/// or a new one is replaced whole, as [`write`] does.
pub fn write_named(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write_through(path, bytes, 0)
}

/// [`write_named`] after `links` links (at most 40, as the kernel follows).
fn write_through(path: &Path, bytes: &[u8], links: usize) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            // a link to a pipe or a device (`/dev/stdout` into a pipe) is written through as it
            // is: its target's name may be no path at all (`/proc/self/fd/1` -> `pipe:[…]`)
            if std::fs::metadata(path).is_ok_and(|t| !t.is_file() && !t.is_dir()) {
                return write_in_place(path, bytes);
            }
            if links >= 40 {
                return Err(format!(
                    "{}: too many levels of symbolic links",
                    path.display()
                ));
            }
            // the link's target, from the link's directory (it need not exist yet)
            let to = std::fs::read_link(path).map_err(err)?;
            let to = match path.parent() {
                Some(dir) if to.is_relative() => dir.join(to),
                _ => to,
            };
            write_through(&to, bytes, links + 1)
        }
        Ok(m) if !m.is_file() && !m.is_dir() => write_in_place(path, bytes),
        _ => write(path, bytes),
    }
}

/// Write into a FIFO, pipe or device as it is (never replaced by a regular file).
fn write_in_place(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Write a file through a temporary name and a rename, so a failure never leaves half a report.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    // a failed write (a full disk) leaves neither half a file nor the temporary one
    let written = std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::File::open(&tmp).and_then(|f| f.sync_data()))
        .map_err(|e| format!("{}: {e}", path.display()))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display())));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn a_named_file_is_written_through_a_link_and_into_a_fifo_as_a_shell_would() {
        let d = tempfile::tempdir().unwrap();
        // a link (relative, two deep) keeps being a link; its target gets the bytes
        std::fs::write(d.path().join("target.xml"), "old").unwrap();
        std::os::unix::fs::symlink("target.xml", d.path().join("mid")).unwrap();
        std::os::unix::fs::symlink("mid", d.path().join("link")).unwrap();
        write_named(&d.path().join("link"), b"new").unwrap();
        assert!(std::fs::symlink_metadata(d.path().join("link"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(d.path().join("target.xml")).unwrap(),
            "new"
        );
        // a dangling link: its target is made
        std::os::unix::fs::symlink("made.xml", d.path().join("dangling")).unwrap();
        write_named(&d.path().join("dangling"), b"x").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("made.xml")).unwrap(),
            "x"
        );
        // a FIFO stays a FIFO, and its reader gets the bytes
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        write_named(&fifo, b"through").unwrap();
        assert_eq!(reader.join().unwrap(), "through");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        // a link to a pipe whose target is no path (`/dev/stdout` -> `/proc/self/fd/1` ->
        // `pipe:[…]`): the pipe's reader gets the bytes
        let (mut r, w) = std::io::pipe().unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&w);
        std::os::unix::fs::symlink(format!("/proc/self/fd/{fd}"), d.path().join("stdout")).unwrap();
        write_named(&d.path().join("stdout"), b"piped").unwrap();
        drop(w);
        let mut got = String::new();
        std::io::Read::read_to_string(&mut r, &mut got).unwrap();
        assert_eq!(got, "piped");
        // a loop of links is an error, not a hang
        std::os::unix::fs::symlink("b", d.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", d.path().join("b")).unwrap();
        let e = write_named(&d.path().join("a"), b"x").unwrap_err();
        assert!(e.contains("too many levels of symbolic links"), "{e}");
        // a plain file is replaced whole
        write_named(&d.path().join("plain"), b"1").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("plain")).unwrap(),
            "1"
        );
    }
}
