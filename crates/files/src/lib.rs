//! Private files of the local state (the keystore's keys, the signing log's checkpoint):
//! written through a temp file beside the target, mode 0600, created exclusively (never
//! an existing file), then renamed or linked into place, so a reader sees the old content
//! or the new, never half of it. And [`failpoint`], which stops a process inside the
//! crash windows of such writes on purpose.
//!
//! Temp names start with [`TEMP_PREFIX`] (`.tmp-`, then a random id): hidden, never a
//! key file's name, and what a writer holding its directory's lock may remove as a
//! crash's leftover.

pub mod failpoint;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// How every temp file written here starts.
pub const TEMP_PREFIX: &str = ".tmp-";

/// A write that failed: the file it was writing and the OS error.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}", path.display())]
pub struct WriteError {
    /// The file (a temp file, or the file it was to replace).
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

/// Writes `bytes` to a new temp file in `dir` (0600, created exclusively), synced when
/// `sync`; returns its path. Nothing is left behind on failure.
pub fn write_temp(dir: &Path, bytes: &[u8], sync: bool) -> Result<PathBuf, WriteError> {
    let tmp = dir.join(format!("{TEMP_PREFIX}{}", uuid::Uuid::new_v4().simple()));
    let write = || -> std::io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        if sync { f.sync_all() } else { Ok(()) }
    };
    match write() {
        Ok(()) => Ok(tmp),
        Err(source) => {
            let _ = fs::remove_file(&tmp);
            Err(WriteError { path: tmp, source })
        }
    }
}

/// Replaces the small file `path` with `bytes`: a temp file beside it
/// ([`write_temp`]), then a rename, so a reader sees the old or the new content.
/// Not synced: for state that is safe to find stale after a crash (the signing log's
/// kept checkpoint, which the log always still reaches).
pub fn write_replace(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let tmp = write_temp(path.parent().unwrap_or(Path::new(".")), bytes, false)?;
    fs::rename(&tmp, path).map_err(|source| {
        let _ = fs::remove_file(&tmp);
        WriteError {
            path: path.to_owned(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_replaced_file_is_private_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("state");
        write_replace(&path, b"one").expect("write");
        write_replace(&path, b"two").expect("replace");
        assert_eq!(fs::read(&path).expect("read"), b"two");
        let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["state"], "no temp file left");
    }

    #[test]
    fn a_failed_write_names_its_file() {
        let err = write_temp(Path::new("/nonexistent/dir"), b"x", true).expect_err("no dir");
        let shown = err.to_string();
        assert!(
            shown.starts_with("cannot write /nonexistent/dir/.tmp-"),
            "{shown}"
        );
        assert_eq!(err.path.parent(), Some(Path::new("/nonexistent/dir")));
    }
}
