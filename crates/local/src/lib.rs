//! What bridgectl keeps and starts on this machine, at its true price:
//!
//! - [`files`]: private files and directories (0700/0600, lock files, written through a
//!   temp file and a rename, created once, written in place where their layout allows);
//! - [`sqlite`] (feature `sqlite`): local state in SQLite, one fsync per promise;
//! - [`failpoint`]: the crash windows of those writes, reachable on purpose in debug builds;
//! - [`child`]: child processes that die with their parent;
//! - [`PathError`]: an OS error on a path, the one way every crate of bridgectl reports
//!   one ("cannot read PATH: …").
//!
//! One crate, because these are one concern (what bridgectl leaves on the disk and in the
//! process table, and at what cost). SQLite is a feature: the keystore keeps key files
//! only and builds this crate without it (`make deps`).

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod child;
pub mod failpoint;
pub mod files;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use std::path::PathBuf;

/// An OS error on a path, with what was being done: `cannot read PATH`, `cannot write
/// PATH`. Its source is the OS error.
#[derive(Debug, thiserror::Error)]
#[error("{action} {}", path.display())]
pub struct PathError {
    /// What was being done, e.g. `cannot read`.
    pub action: &'static str,
    /// The path.
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

impl PathError {
    /// The error of `action` on `path`, for `map_err`:
    /// `fs::read(&p).map_err(PathError::on("cannot read", &p))`.
    pub fn on(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> PathError {
        let path = path.into();
        move |source| PathError {
            action,
            path,
            source,
        }
    }
}
