//! Writing files the CLI produces (sign requests, signed bundles, caches): a temp file
//! in the same directory, mode 0600, fsync, then either a hard link (never overwrites)
//! or a rename (replaces), then fsync of the directory. A crash leaves the old file or
//! the new one, never half of one.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::exit::{Code, WithCode, coded};

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `bytes` to a fresh 0600 temp file beside `path` and fsyncs it.
fn write_temp(path: &Path, bytes: &[u8]) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = parent(path).join(format!(".{name}.tmp-{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", tmp.display()));
    }
    Ok(tmp)
}

fn sync_dir(path: &Path) {
    if let Ok(d) = std::fs::File::open(parent(path)) {
        let _ = d.sync_all();
    }
}

/// Creates `path` with `bytes`, atomically; refuses ([`Code::Exists`]) if it exists.
pub fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if path.exists() {
        return Err(coded(
            Code::Exists,
            format!("{} already exists: not overwriting it", path.display()),
        ));
    }
    let tmp = write_temp(path, bytes)?;
    // Created meanwhile by someone else: exists all the same.
    let linked = match std::fs::hard_link(&tmp, path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(coded(
            Code::Exists,
            format!("{} already exists: not overwriting it", path.display()),
        )),
        other => other.with_context(|| format!("cannot create {}", path.display())),
    };
    let _ = std::fs::remove_file(&tmp);
    linked?;
    sync_dir(path);
    Ok(())
}

/// Writes `path` with `bytes`, atomically replacing what was there (caches only).
pub fn write_replace(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = parent(path);
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = write_temp(path, bytes)?;
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    sync_dir(path);
    Ok(())
}

/// The largest input file accepted (a rawTx, a sign request, a bundle): a rawTx with
/// 1 MiB of calldata fits easily; anything larger is not a file bridgectl wrote.
const MAX_INPUT: u64 = 4 * 1024 * 1024;

/// How an input is named in messages: its path, or `stdin` for `-`.
pub fn input_name(input: &str) -> String {
    if input == "-" {
        "stdin".into()
    } else {
        input.to_owned()
    }
}

/// Reads FILE, or stdin for `-`, bounded by [`MAX_INPUT`].
pub fn read_input(input: &str) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if input == "-" {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            return Err(coded(
                Code::Usage,
                "no input: give a FILE, or pipe the JSON into stdin",
            ));
        }
        std::io::stdin()
            .take(MAX_INPUT + 1)
            .read_to_end(&mut bytes)
            .context("cannot read stdin")?;
    } else {
        let f = std::fs::File::open(input)
            .with_context(|| format!("cannot open {input}"))
            .code(Code::NotFound)?;
        f.take(MAX_INPUT + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {input}"))?;
    }
    if bytes.len() as u64 > MAX_INPUT {
        return Err(coded(
            Code::Refused,
            format!("{} is larger than {MAX_INPUT} bytes", input_name(input)),
        ));
    }
    Ok(bytes)
}
