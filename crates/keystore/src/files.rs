//! Small private files: the mode check every secret-holding file passes, a bounded
//! read that never follows a symlink, and replacement through a temp file and a rename,
//! so a reader sees the old content or the new, never part of either (the temp file
//! itself is `bridgectl_local::files`').

use bridgectl_local::PathError;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::Error;

/// Key files are small; anything bigger is not one of ours and is not read whole.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024;
/// Names of temp files start with this: never a key file's name.
pub(crate) use bridgectl_local::files::TEMP_PREFIX;

/// Refuses a secret-holding file (key, token, passphrase) that group or others can read
/// or write, as ssh does, naming the `chmod` that fixes it. FIFOs and other non-regular
/// files are checked too: their mode says who may open them.
pub fn check_private_file(path: &Path) -> Result<(), Error> {
    let meta = fs::metadata(path).map_err(PathError::on("cannot read", path))?;
    check_mode(path, &meta, 0o600)
}

pub(crate) fn check_mode(path: &Path, meta: &fs::Metadata, want: u32) -> Result<(), Error> {
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(Error::InsecurePermissions {
            path: path.to_owned(),
            mode,
            fix: format!("chmod {want:o} '{}'", path.display()),
        });
    }
    Ok(())
}

/// Reads a file of at most [`MAX_FILE_BYTES`] that must be a regular file (symlinks are
/// refused: a key file is never followed elsewhere).
pub(crate) fn read_small(path: &Path, check_perms: bool) -> Result<Vec<u8>, Error> {
    let meta = fs::symlink_metadata(path).map_err(PathError::on("cannot read", path))?;
    if !meta.file_type().is_file() {
        return Err(Error::malformed(path, "not a regular file"));
    }
    if check_perms {
        check_mode(path, &meta, 0o600)?;
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Error::malformed(
            path,
            format!(
                "{} bytes, key files are at most {MAX_FILE_BYTES}",
                meta.len()
            ),
        ));
    }
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(PathError::on("cannot read", path))?;
    Ok(bytes)
}

/// Writes `bytes` to a new temp file in `dir` (0600, exclusive, a name that is never a
/// key), synced when `sync`; returns its path. Nothing is left behind on failure.
pub(crate) fn write_temp(dir: &Path, bytes: &[u8], sync: bool) -> Result<PathBuf, Error> {
    bridgectl_local::files::write_temp(dir, bytes, sync).map_err(Error::from)
}
