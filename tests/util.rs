//! Test support: a temp dir per test and a `bridgectl` command confined to it.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The exit code the CLI defines for a wrong passphrase (or none to be had).
pub const EXIT_PASSPHRASE: i32 = 4;

/// The repository root (where `keystore-fixtures/` and `tools/` live).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A pinned external tool from `tools/node_modules/.bin` (installed by `make tools`).
/// Panics with the fix when it is missing: the tests that need it must not pass
/// silently on a machine without it.
pub fn pinned_tool(name: &str) -> PathBuf {
    let path = repo_root().join("tools/node_modules/.bin").join(name);
    assert!(
        path.exists(),
        "{} is missing: run `make tools` (installs the pinned npm packages)",
        path.display()
    );
    path
}

/// A fresh directory for one test, removed when dropped.
pub struct Dir {
    tmp: tempfile::TempDir,
    /// The test's name, for messages.
    pub name: &'static str,
}

impl Dir {
    /// Makes the directory. The keystore goes in `<dir>/keystore`.
    pub fn new(name: &'static str) -> Dir {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("bridgectl-{name}-"))
            .tempdir()
            .expect("create temp dir");
        Dir { tmp, name }
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// A path inside the directory.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// The keystore directory the commands use.
    pub fn keystore(&self) -> PathBuf {
        self.join("keystore")
    }

    /// Writes `contents` to `rel` inside the directory, mode 0600.
    pub fn write(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, contents).expect("write file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        path
    }

    /// A `bridgectl` command whose environment holds nothing of the user's: HOME and
    /// the XDG dirs point inside this directory, and `BRIDGECTL_KEYSTORE` is set. It
    /// runs in a session of its own (`setsid`, which execs in place: same pid), so it has
    /// no controlling terminal: a test run from a terminal must not be asked anything
    /// there. The pseudo-terminal tests give it one of their own.
    pub fn command(&self) -> TestCommand {
        let mut cmd = Command::new("setsid");
        cmd.arg(env!("CARGO_BIN_EXE_bridgectl"));
        self.confine(&mut cmd);
        cmd.stdin(Stdio::null());
        TestCommand { cmd }
    }

    /// Gives `cmd` the confined environment of [`Dir::command`] (no user env, HOME and
    /// XDG dirs inside this directory, the keystore set) and this directory as its
    /// working directory.
    pub fn confine(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.join("home"))
            .env("XDG_DATA_HOME", self.join("xdg/data"))
            .env("XDG_CONFIG_HOME", self.join("xdg/config"))
            .env("XDG_STATE_HOME", self.join("xdg/state"))
            .env("BRIDGECTL_KEYSTORE", self.keystore())
            .current_dir(self.path());
    }
}

/// A spawned process that is killed (SIGKILL) and reaped when dropped, so that a test
/// that fails midway leaves nothing running (`scripts/no-bridgectl-left.sh` checks).
pub struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    /// Spawns `cmd`.
    pub fn spawn(cmd: &mut Command) -> KillOnDrop {
        KillOnDrop(Some(cmd.spawn().expect("spawn")))
    }

    /// Waits for it to exit and collects its piped output.
    pub fn wait_with_output(mut self) -> Output {
        self.0
            .take()
            .expect("a child")
            .wait_with_output()
            .expect("wait")
    }
}

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.as_ref().expect("a child")
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().expect("a child")
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// A `bridgectl` invocation with assertions on its outcome.
pub struct TestCommand {
    /// The underlying command.
    pub cmd: Command,
}

impl TestCommand {
    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Sets an environment variable.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.env(key, value);
        self
    }

    /// Runs with `input` on stdin and returns the raw output.
    pub fn output_with_stdin(&mut self, input: &[u8]) -> Output {
        self.spawn_with_stdin(input).wait_with_output()
    }

    /// Starts it with `input` on stdin (then closed) and its output piped, without
    /// waiting: for processes that run side by side.
    pub fn spawn_with_stdin(&mut self, input: &[u8]) -> KillOnDrop {
        use std::io::Write;
        self.cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = KillOnDrop::spawn(&mut self.cmd);
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input).expect("write stdin");
        drop(stdin);
        child
    }

    /// Runs and returns the raw output.
    pub fn output(&mut self) -> Output {
        self.cmd.output().expect("run bridgectl")
    }

    /// Runs, asserts success and returns stdout as text.
    pub fn stdout(&mut self) -> String {
        let out = self.output();
        assert_success(&self.cmd, &out);
        String::from_utf8(out.stdout).expect("stdout is UTF-8")
    }

    /// Runs, asserts success and parses stdout as JSON.
    pub fn json(&mut self) -> serde_json::Value {
        let text = self.stdout();
        strict_json(&text)
    }

    /// Runs, asserts failure with exit `code`, and returns stderr as text.
    pub fn fails_with(&mut self, code: i32) -> String {
        let out = self.output();
        assert_eq!(
            out.status.code(),
            Some(code),
            "expected exit {code} from {:?}\nstdout:\n{}\nstderr:\n{}",
            self.cmd,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stderr).expect("stderr is UTF-8")
    }
}

/// Asserts that `out` is a refusal for a wrong passphrase and nothing more: exit
/// [`EXIT_PASSPHRASE`], "wrong passphrase" on stderr, nothing on stdout but (with
/// `--json`) the error object, no secret of `scan` in either.
pub fn assert_wrong_passphrase(scan: &crate::secrets::Secrets, what: &str, out: &Output) {
    scan.scan_output(what, out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(EXIT_PASSPHRASE), "{what}: {err}");
    assert!(err.contains("wrong passphrase"), "{what}: {err}");
    if !out.stdout.is_empty() {
        let v = strict_json(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(v["error"]["code"], "passphrase", "{what} printed {v:#}");
        assert_eq!(v["error"]["exit"], EXIT_PASSPHRASE, "{what} printed {v:#}");
    }
}

/// `(tx_id, state, signed_tx)` of every flow in the journal at `path`, read through a
/// read-only SQLite connection of the test's own: what is on disk, not what the client
/// reports.
pub fn journal_rows(path: &Path) -> Vec<(String, String, Option<String>)> {
    try_journal_rows(path).expect("read the journal")
}

/// [`journal_rows`], or the error of reading them: for a test waiting on another process
/// that may be making the journal right now (the file exists before its tables do).
pub fn try_journal_rows(path: &Path) -> rusqlite::Result<Vec<(String, String, Option<String>)>> {
    let db =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut q = db.prepare("SELECT tx_id, state, signed_tx FROM flows ORDER BY created_at")?;
    q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect()
}

/// Panics unless the command was stopped by `SIGABRT`: where a `BRIDGECTL_FAILPOINT`
/// aborts it (debug builds), as a crash would stop it there.
pub fn assert_aborted(out: &Output, what: &str) {
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(6),
        "{what}: not stopped at the failpoint: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `text` as JSON, read as strictly as bridgectl reads its own inputs (a duplicate key or
/// an integer too large to read exactly is a failure): what a careful script gets.
pub fn strict_json(text: &str) -> serde_json::Value {
    bridgectl_json::from_slice(text.as_bytes())
        .unwrap_or_else(|e| panic!("stdout is not strict JSON ({e}):\n{text}"))
}

/// Panics with the full output when a command failed.
pub fn assert_success(cmd: &Command, out: &Output) {
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A passphrase source that counts how often it is read: a FIFO that a thread feeds,
/// one open at a time, only while a reader is waiting on it. Point
/// `BRIDGECTL_PASSPHRASE_FILE` at [`CountingPassphrase::path`]; a refusal must leave the
/// count at zero.
pub struct CountingPassphrase {
    /// The FIFO.
    pub path: PathBuf,
    reads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CountingPassphrase {
    /// A FIFO in `dir` that answers `passphrase`.
    pub fn new(dir: &Dir, passphrase: &str) -> Self {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = dir.join(format!(
            "passphrase-{}.fifo",
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let st = Command::new("mkfifo")
            .args(["-m", "600"])
            .arg(&path)
            .status()
            .expect("mkfifo");
        assert!(st.success(), "mkfifo failed");
        let reads = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, r, s) = (path.clone(), reads.clone(), stop.clone());
        let line = format!("{passphrase}\n");
        let thread = std::thread::spawn(move || {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            const O_NONBLOCK: i32 = 0o4000; // Linux
            while !s.load(Ordering::SeqCst) {
                // Opening the write end without blocking succeeds only when a reader
                // has the FIFO open: that is one read of the passphrase.
                match std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(O_NONBLOCK)
                    .open(&p)
                {
                    Ok(mut f) => {
                        let _ = f.write_all(line.as_bytes());
                        // Counted once the reader took the line (nothing left unread in
                        // the FIFO).
                        let deadline =
                            std::time::Instant::now() + std::time::Duration::from_secs(2);
                        loop {
                            let unread = unread_in(&f);
                            if unread == Some(0) {
                                r.fetch_add(1, Ordering::SeqCst);
                                break;
                            }
                            if unread.is_none() || std::time::Instant::now() >= deadline {
                                break;
                            }
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                        // The readers that have it open now: each sees EOF once this end
                        // closes, and must be gone before the next open, or a reader slow
                        // to read its EOF (a loaded machine) takes a second line and is
                        // counted twice. (A new reader waits in open() meanwhile, with
                        // no descriptor yet: never missed.)
                        let readers = fifo_readers(&p);
                        drop(f);
                        let deadline =
                            std::time::Instant::now() + std::time::Duration::from_secs(10);
                        while std::time::Instant::now() < deadline
                            && fifo_readers(&p).iter().any(|r| readers.contains(r))
                        {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
                }
            }
        });
        CountingPassphrase {
            path,
            reads,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the feeder and returns how many times the passphrase was read.
    pub fn finish(mut self) -> usize {
        use std::sync::atomic::Ordering;
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().expect("feeder thread");
        }
        self.reads.load(Ordering::SeqCst)
    }
}

/// A PostgreSQL server for one test: the pinned binary (`make tools`) run by the
/// sandbox crate's [`bridgectl_sandbox::postgres::PostgresServer`] on a fresh data dir in
/// a temp dir, listening on 127.0.0.1 only, stopped on drop and killed by a parent-death
/// signal should the test process die first (`scripts/no-postgres-left.sh` checks that
/// none is left). As root (CI), it runs as `nobody`.
pub struct Postgres {
    server: bridgectl_sandbox::postgres::PostgresServer,
    /// The port it listens on.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Postgres {
    /// Initialises a data dir and starts the server; returns once it accepts connections.
    pub fn start() -> Postgres {
        let dir = tempfile::Builder::new()
            .prefix("bridgectl-pg-")
            .tempdir()
            .expect("temp dir");
        let server = bridgectl_sandbox::postgres::PostgresServer::start(dir.path())
            .unwrap_or_else(|e| panic!("{e}"));
        Postgres {
            port: server.port(),
            server,
            _dir: dir,
        }
    }

    /// Stops the server (fast shutdown: its clients are cut off), keeping its data.
    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// Starts a stopped server again, on its data and port.
    pub fn restart(&mut self) {
        self.server.restart().unwrap_or_else(|e| panic!("{e}"));
    }

    /// The connection string for `--store`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Runs `sql` as a database administrator would, behind the program's back; returns
    /// how many rows it changed.
    pub fn execute(&self, sql: &str) -> usize {
        /// The test's own (empty) namespace: the statement names the tables it edits.
        static ADMIN: bridgectl_store::Schema = bridgectl_store::Schema {
            version: 1,
            sqlite: "",
            sqlite_added_columns: &[],
            postgres: "",
            namespace: "bridgectl_test_admin",
        };
        let store =
            bridgectl_store::Store::open(bridgectl_store::Location::Postgres(self.url()), &ADMIN)
                .expect("connect as the administrator");
        store
            .write(|c| c.execute(sql, &[]))
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    }
}

/// A batch request file `name` in `dir` of redeems of the ST contract `0x5757…57` on
/// chain 1337, one per `(from, nonce, amount)` (base units), each item's intent asking
/// for exactly its amount, gas 100000 at 1 gwei: as `batch prepare` writes one.
pub fn redeem_batch_file(
    dir: &Dir,
    name: &str,
    items: &[(alloy_primitives::Address, u64, alloy_primitives::U256)],
) -> PathBuf {
    use bridgectl_tx::batch::{BatchOrigin, BatchRequest, BatchRequestItem};
    let st = alloy_primitives::Address::repeat_byte(0x57);
    let items = items
        .iter()
        .enumerate()
        .map(|(i, (from, nonce, amount))| BatchRequestItem {
            index: i,
            id: format!("payout-{i}"),
            tx_id: uuid::Uuid::new_v4().to_string(),
            raw_tx: bridgectl_tx::RawTx {
                from: *from,
                to: st,
                data: format!("0xdb006a75{amount:064x}")
                    .parse::<alloy_primitives::Bytes>()
                    .expect("data"),
                nonce: *nonce,
                gas_limit: 100_000,
                gas_price: 1_000_000_000,
                chain_id: 1337,
                value: alloy_primitives::U256::ZERO,
            },
            intent: bridgectl_tx::request::Intent::redeem(st, 1337, *amount),
        })
        .collect();
    let request = BatchRequest::new(
        uuid::Uuid::new_v4().to_string(),
        BatchOrigin::default(),
        items,
    )
    .expect("a batch request");
    dir.write(name, request.to_bytes())
}

/// How many bytes written to the FIFO whose write end is `f` no reader has taken yet.
#[allow(unsafe_code)]
fn unread_in(f: &std::fs::File) -> Option<libc::c_int> {
    use std::os::fd::AsRawFd;
    let mut unread: libc::c_int = 0;
    // SAFETY: FIONREAD on an open FIFO writes one c_int through the pointer, which
    // outlives the call.
    let ok = unsafe { libc::ioctl(f.as_raw_fd(), libc::FIONREAD, &mut unread) } == 0;
    ok.then_some(unread)
}

/// The (process, descriptor) pairs of other processes that have the FIFO `path` open.
fn fifo_readers(path: &Path) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|target| target == path) {
                found.push((pid, fd.file_name().to_string_lossy().into_owned()));
            }
        }
    }
    found
}
