//! Finding and running anvil, so that no anvil outlives the sandbox.
//!
//! Lookup order ([`find_anvil`]): the config's `anvil` path, env `BRIDGECTL_ANVIL`, then
//! `tools/node_modules/.bin/anvil` of the repository (found by walking up from the current
//! executable, then from this crate's source folder as known at build time, which covers
//! `target/` builds and `cargo test`), then `PATH`.
//!
//! Cleanup: [`Anvil`] kills its child on drop and on [`Anvil::stop`]. If the sandbox process
//! itself is killed (SIGKILL included) no destructor runs, so on Linux each anvil is started
//! with `PR_SET_PDEATHSIG = SIGKILL` (set in a `pre_exec` hook): the kernel kills it when the
//! thread that spawned it exits. The sandbox spawns from the thread that calls
//! [`crate::Sandbox::start`], so start it from a thread that lives as long as the sandbox
//! (the main thread, a test's thread, or a runtime's `block_on`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::Error;

/// Where anvil is looked for, in order; returns the first that exists.
pub fn find_anvil(configured: Option<&Path>) -> Result<PathBuf, Error> {
    let mut tried = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = configured {
        candidates.push(p.to_owned());
    }
    if let Some(p) = std::env::var_os("BRIDGECTL_ANVIL") {
        candidates.push(PathBuf::from(p));
    }
    for c in in_tools(Path::new("tools/node_modules/.bin/anvil")) {
        if !candidates.contains(&c) {
            candidates.push(c);
        }
    }
    for c in candidates {
        if c.is_file() {
            return Ok(c);
        }
        tried.push(c.display().to_string());
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let c = dir.join("anvil");
            if c.is_file() {
                return Ok(c);
            }
        }
        tried.push("anvil on PATH".into());
    }
    Err(Error::AnvilNotFound {
        tried: tried.join(", "),
    })
}

/// Where `rel` (a path in the repository's `tools/`, which `make tools` fills) may be:
/// under each ancestor of the current executable, of the working directory (a test runs
/// in its package; a person in the checkout) and of this crate's source folder as known
/// at build time (stale when a build cache moves between checkouts), in that order.
pub(crate) fn in_tools(rel: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_owned));
    }
    if let Ok(cwd) = std::env::current_dir() {
        roots.extend(cwd.ancestors().map(Path::to_owned));
    }
    roots.extend(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(Path::to_owned),
    );
    let mut found: Vec<PathBuf> = Vec::new();
    for root in roots {
        let c = root.join(rel);
        if !found.contains(&c) {
            found.push(c);
        }
    }
    found
}

/// A running anvil node.
#[derive(Debug)]
pub struct Anvil {
    child: Child,
    pid: u32,
    url: String,
}

impl Anvil {
    /// Starts anvil on 127.0.0.1 with a kernel-chosen port and waits until it listens:
    /// with `automine`, a block for every transaction as it arrives, else none of its own
    /// (blocks on a timer are the sandbox's, see `mining.rs`). Its `finalized` tag is two
    /// blocks behind its head, `safe` one (an epoch of one slot).
    pub async fn spawn(binary: &Path, chain_id: u64, automine: bool) -> Result<Anvil, Error> {
        let mut cmd = Command::new(binary);
        cmd.args(["--host", "127.0.0.1", "--port", "0", "--accounts", "3"])
            .args(["--chain-id", &chain_id.to_string()])
            .args(["--slots-in-an-epoch", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if !automine {
            cmd.arg("--no-mining");
        }
        bridgectl_local::child::die_with_parent(
            cmd.as_std_mut(),
            bridgectl_local::child::Signal::Kill,
        );
        let mut child = cmd.spawn().map_err(|source| Error::AnvilSpawn {
            path: binary.to_owned(),
            source,
        })?;
        let pid = child.id().unwrap_or(0);
        let fail = |reason: String| Error::AnvilStart {
            path: binary.to_owned(),
            reason,
        };
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| fail("no stdout".into()))?;
        let mut lines = BufReader::new(stdout).lines();
        let found = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.ok().flatten() {
                if let Some(addr) = line.trim().strip_prefix("Listening on ") {
                    return Some(addr.trim().to_owned());
                }
            }
            None
        })
        .await;
        let addr = match found {
            Ok(Some(addr)) => addr,
            Ok(None) => return Err(fail("it exited before listening".into())),
            Err(_) => return Err(fail("no \"Listening on\" line within 30 s".into())),
        };
        // Keep draining anvil's log so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Anvil {
            child,
            pid,
            url: format!("http://{addr}"),
        })
    }

    /// The JSON-RPC URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The process id (for checks that it is gone).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Kills anvil and reaps it.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.try_wait();
    }
}

/// Whether a process is gone (or a zombie waiting to be reaped, which is as dead).
pub fn process_is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}
