//! Writing files the CLI produces (sign requests, signed bundles, caches): a temp file
//! in the same directory, mode 0600, fsync, then either a hard link (never overwrites)
//! or a rename (replaces), then fsync of the directory. A crash leaves the old file or
//! the new one, never half of one.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::exit::{Code, WithCode, coded};

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Creates `path` with `bytes`, atomically and durably; refuses ([`Code::Exists`]) if it
/// exists, even if it appeared while this was writing.
pub fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let exists = || {
        coded(
            Code::Exists,
            format!("{} already exists: not overwriting it", path.display()),
        )
    };
    if path.exists() {
        return Err(exists());
    }
    bridgectl_local::files::write_new(path, bytes).map_err(|e| {
        if e.source.kind() == std::io::ErrorKind::AlreadyExists {
            exists()
        } else {
            anyhow::Error::new(e)
        }
    })
}

/// Writes `path` with `bytes`, atomically and durably replacing what was there (caches
/// only), making its directory (0700) first if needed.
pub fn write_replace(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = parent(path);
    bridgectl_local::files::create_private_dir(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    bridgectl_local::files::write_replace_synced(path, bytes)?;
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
    let bytes = read_input_bounded(input, MAX_INPUT)?;
    check_input_size(&bytes, &input_name(input))?;
    Ok(bytes)
}

/// Refuses input `name` larger than [`MAX_INPUT`] (read with a larger bound, for a
/// batch file, and found to be something else).
pub fn check_input_size(bytes: &[u8], name: &str) -> anyhow::Result<()> {
    if bytes.len() as u64 > MAX_INPUT {
        return Err(coded(
            Code::Refused,
            format!("{name} is larger than {MAX_INPUT} bytes"),
        ));
    }
    Ok(())
}

/// Reads FILE, or stdin for `-`, bounded by `max` bytes.
pub fn read_input_bounded(input: &str, max: u64) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if input == "-" {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            return Err(coded(
                Code::Usage,
                "no input: give a FILE, or pipe the JSON into stdin",
            ));
        }
        std::io::stdin()
            .take(max + 1)
            .read_to_end(&mut bytes)
            .context("cannot read stdin")?;
    } else {
        let f = std::fs::File::open(input)
            .with_context(|| format!("cannot open {input}"))
            .code(Code::NotFound)?;
        f.take(max + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {input}"))?;
    }
    if bytes.len() as u64 > max {
        return Err(coded(
            Code::Refused,
            format!("{} is larger than {max} bytes", input_name(input)),
        ));
    }
    Ok(bytes)
}
