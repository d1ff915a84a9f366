//! Replacing report files whole: written under a temporary name, then renamed.

use std::path::Path;

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
