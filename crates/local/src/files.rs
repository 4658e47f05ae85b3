//! Private files of the local state (the keystore's keys, the signing log's checkpoint):
//! written through a temp file beside the target, mode 0600, created exclusively (never
//! an existing file), then renamed or linked into place, so a reader sees the old content
//! or the new, never half of it. ([`crate::failpoint`] stops a process inside the
//! crash windows of such writes on purpose.)
//!
//! Temp names start with [`TEMP_PREFIX`] (`.tmp-`, then a random id): hidden, never a
//! key file's name, and what a writer holding its directory's lock may remove as a
//! crash's leftover.
//!
//! Every private file and directory of bridgectl is made here, so a grep for `0o600`
//! finds one place: directories 0700 ([`create_private_dir`]), files 0600 created
//! exclusively ([`create_new_private`]), lock files ([`open_lock_file`]), whole files
//! replaced ([`write_replace`], [`write_replace_synced`]), created once and never
//! overwritten ([`write_new`]), or written in place where their layout allows it
//! ([`overwrite_at`]).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// How every temp file written here starts.
pub const TEMP_PREFIX: &str = ".tmp-";

/// A write that failed: the file it was writing (a temp file, or the file it was to
/// replace) and the OS error, as `cannot write PATH`.
pub type WriteError = crate::PathError;

/// Makes `dir` and its missing parents, each made here mode 0700; an existing
/// directory is left as it is (its owner chose its mode).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Creates `path`, 0600, for writing; fails with `AlreadyExists` if anything is there
/// (a file is never taken over, nor a symlink followed).
pub fn create_new_private(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Opens the lock file `path` for writing, made 0600 if missing, never truncated: what
/// a process locks (`File::lock`) to have a directory's writes to itself.
pub fn open_lock_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
}

/// Sets `path` to 0600 (a file another program made: SQLite's database).
pub fn restrict(path: &Path) -> std::io::Result<()> {
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))
}

/// Syncs the directory holding `path`, so an entry made or renamed there survives a
/// power cut.
pub fn sync_parent(path: &Path) -> std::io::Result<()> {
    File::open(parent(path))?.sync_all()
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to a new temp file in `dir` (0600, created exclusively), synced when
/// `sync`; returns its path. Nothing is left behind on failure.
pub fn write_temp(dir: &Path, bytes: &[u8], sync: bool) -> Result<PathBuf, WriteError> {
    let tmp = dir.join(format!("{TEMP_PREFIX}{}", uuid::Uuid::new_v4().simple()));
    let write = || -> std::io::Result<()> {
        let mut f = create_new_private(&tmp)?;
        f.write_all(bytes)?;
        if sync { f.sync_all() } else { Ok(()) }
    };
    match write() {
        Ok(()) => Ok(tmp),
        Err(source) => {
            let _ = fs::remove_file(&tmp);
            Err(crate::PathError {
                action: "cannot write",
                path: tmp,
                source,
            })
        }
    }
}

/// Replaces the small file `path` with `bytes`: a temp file beside it
/// ([`write_temp`]), then a rename, so a reader sees the old or the new content.
/// Not synced: for state that is safe to find stale after a crash (the signing log's
/// kept checkpoint, which the log always still reaches).
pub fn write_replace(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    replace_with(path, bytes, false)
}

/// [`write_replace`], durable when it returns: the temp file synced before the rename,
/// the directory after it (a file a later run must find whole: the webhook signing keys,
/// a cached token).
pub fn write_replace_synced(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    replace_with(path, bytes, true)
}

fn replace_with(path: &Path, bytes: &[u8], sync: bool) -> Result<(), WriteError> {
    let tmp = write_temp(parent(path), bytes, sync)?;
    let failed = |source| crate::PathError {
        action: "cannot write",
        path: path.to_owned(),
        source,
    };
    if let Err(source) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(failed(source));
    }
    if sync {
        sync_parent(path).map_err(failed)?;
    }
    Ok(())
}

/// Writes `bytes` at `offset` of the existing file `path`, in place: no temp file, no
/// rename, never a new file (`NotFound` if it is missing: its mode was set when it was
/// made).
/// Not synced, and a reader may see the write half done: for a file laid out so that
/// half a write is detected and another part still holds what it held (the signing
/// log's kept checkpoint, two slots with a check each).
pub fn overwrite_at(path: &Path, offset: u64, bytes: &[u8]) -> Result<(), WriteError> {
    use std::os::unix::fs::FileExt;
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.write_all_at(bytes, offset))
        .map_err(|source| crate::PathError {
            action: "cannot write",
            path: path.to_owned(),
            source,
        })
}

/// Creates `path` with `bytes`, durable when it returns, never over anything: a synced
/// temp file hard-linked into place (the link fails with `AlreadyExists` if `path`
/// exists, even if it appeared meanwhile), then the directory synced.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let tmp = write_temp(parent(path), bytes, true)?;
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    let failed = |source| crate::PathError {
        action: "cannot write",
        path: path.to_owned(),
        source,
    };
    linked.map_err(failed)?;
    sync_parent(path).map_err(failed)
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
    fn a_new_file_is_never_written_over_and_is_private() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("out");
        write_new(&path, b"first").expect("new");
        let err = write_new(&path, b"second").expect_err("exists");
        assert_eq!(err.source.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).expect("read"), b"first");
        let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            fs::read_dir(dir.path()).expect("list").count(),
            1,
            "no temp left"
        );
    }

    #[test]
    fn private_dirs_and_files_have_private_modes() {
        let dir = tempfile::tempdir().expect("tmp");
        let nested = dir.path().join("a/b");
        create_private_dir(&nested).expect("dir");
        let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&nested), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        let lock = nested.join(".lock");
        drop(open_lock_file(&lock).expect("lock"));
        drop(open_lock_file(&lock).expect("an existing lock file opens again"));
        assert_eq!(mode(&lock), 0o600);
        let file = nested.join("f");
        drop(create_new_private(&file).expect("new"));
        assert_eq!(mode(&file), 0o600);
        let again = create_new_private(&file).expect_err("exists");
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
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
