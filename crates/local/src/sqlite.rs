//! Local state in SQLite at its true price: one fsync per promise.
//!
//! bridgectl's journal and the signing log beside the keys (`bridgectl-signing-log`)
//! each promise one thing that needs the disk: a signature is recorded **before** its
//! bytes leave. In WAL mode that is one fsync of the WAL, made by a commit with
//! `synchronous = FULL`. Opened with SQLite's defaults, one offline signature paid
//! thirteen:
//!
//! | fsyncs per run | why | here |
//! |---|---|---|
//! | 1 per commit (4 in the journal) | every commit at `synchronous = FULL` | steps commit at `NORMAL`; only [`durable`] commits pay, and their fsync carries every earlier commit of the file to disk with it |
//! | 2 per file (WAL header, directory) | the WAL is created anew by each process | the WAL is kept between processes (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`) |
//! | 1 per file (directory) | SQLite syncs the directory on the first commit of every process, whether or not it created the WAL | [`prepare_files`] syncs it when a file is made; the workspace builds SQLite with `SQLITE_DISABLE_DIRSYNC` (`.cargo/config.toml`) |
//! | 2 per file at exit | the last connection checkpoints on close | checkpoints only from [`tidy`], once the WAL outgrows [`WAL_LIMIT_BYTES`], after the work (about 3 fsyncs every 15 signatures) |
//! | 4 per new file | the switch from a rollback journal to WAL, then one commit per `CREATE` | made once (`user_version`) with `synchronous = OFF`, then the file synced once |
//!
//! What `NORMAL` gives up, and why that is all right: a commit at `NORMAL` is atomic and
//! survives the process being killed (it is in the WAL, in the OS's cache); only a power
//! cut can lose it, and then only with every commit after it, back to the last durable
//! one (SQLite replays a WAL up to its first torn frame). So a step recorded before a
//! signature can be lost to a power cut only together with the signature's own record,
//! which is never lost once [`durable`] returned.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, TransactionBehavior, ffi};

/// A file's tables and the version they are at (`PRAGMA user_version`). Bump `version`
/// when `sql` changes: files at a lower version have `sql` run on them again (so every
/// statement must be idempotent, `CREATE ... IF NOT EXISTS`); a file at a higher one was
/// made by a newer program and is refused rather than written with an older layout.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    /// The version `sql` brings a file to (at least 1).
    pub version: i64,
    /// Idempotent statements that create the tables and indexes.
    pub sql: &'static str,
}

/// How large the WAL may grow before [`tidy`] copies it into the database. The bound
/// trades two costs: each process that opens the file reads and checksums the whole WAL
/// once (SQLite rebuilds its index when the first connection opens it), and each
/// checkpoint costs about three fsyncs. At 256 KiB and about 16 KiB per signature that
/// is at most 0.2 ms of reading per process and a checkpoint every 15 signatures or so.
pub const WAL_LIMIT_BYTES: u64 = 256 << 10;

/// The page size of new files. The WAL holds whole pages, and a signature touches a
/// dozen or so (rows and their indexes): 1 KiB pages make its WAL bytes a quarter of
/// SQLite's default 4 KiB, and so the reading every process pays.
pub const PAGE_SIZE: u32 = 1024;

/// How long a statement waits for another process's write before it gives up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating if needed) the database at `path`: WAL mode, commits at `NORMAL`
/// unless made through [`durable`], no checkpoint on close or on commit, tables made
/// once. New files are private (0600); the caller makes the directory.
pub fn open(path: &Path, schema: &Schema) -> rusqlite::Result<Connection> {
    let made = make_files(path)?;
    let mut conn = Connection::open(path)?;
    let created = configure(&mut conn, Some(path), schema)?;
    if made && !created {
        // (Making the schema synced the directory already.)
        sync_dir(path)?;
    }
    Ok(conn)
}

/// An in-memory database with `schema` (tests, and embedders that keep no records).
pub fn open_in_memory(schema: &Schema) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_in_memory()?;
    configure(&mut conn, None, schema)?;
    Ok(conn)
}

/// Sets `conn` up; returns whether it brought the file to `schema` (and so synced it).
fn configure(
    conn: &mut Connection,
    path: Option<&Path>,
    schema: &Schema,
) -> rusqlite::Result<bool> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // The WAL stays when the last connection closes: the next process appends to it
    // instead of creating it again (a header and a directory fsync each time), and
    // closing costs no checkpoint. [`tidy`] bounds its size instead.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    // No checkpoint inside a commit: the commit that records a signature would pay for
    // it between signing and sending.
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    let version = user_version(conn)?;
    if version > schema.version {
        return Err(refusal(format!(
            "the database is at schema version {version}, made by a newer program; this one \
             knows version {} and will not write to it",
            schema.version
        )));
    }
    let create_schema = version < schema.version;
    if create_schema {
        create(conn, path, schema)?;
    }
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    Ok(create_schema)
}

/// Brings the file to `schema`: nothing in it is worth an fsync yet, so it is made with
/// `synchronous = OFF` and then synced once as a whole.
fn create(conn: &mut Connection, path: Option<&Path>, schema: &Schema) -> rusqlite::Result<()> {
    conn.pragma_update(None, "synchronous", "OFF")?;
    // Only a file without pages takes it; an existing one keeps its own.
    conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    let mode = wal_mode(conn)?;
    if path.is_some() && !mode.eq_ignore_ascii_case("wal") {
        return Err(refusal(format!(
            "the database cannot use write-ahead logging (journal_mode is {mode})"
        )));
    }
    // Another process may be making the same file: whoever takes the write lock first
    // makes it, the other finds it made.
    let t = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if user_version(&t)? < schema.version {
        t.execute_batch(schema.sql)?;
        t.pragma_update(None, "user_version", schema.version)?;
    }
    t.commit()?;
    // SQLite ignores a WAL beside an empty database file: the file's header must be on
    // disk before the first durable commit in the WAL counts on it. (SQLite also deletes
    // the WAL [`prepare_files`] made beside a new, empty file and makes its own: its
    // directory entry is synced here.)
    if let Some(path) = path {
        std::fs::File::open(path)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_failure(path, e))?;
        sync_dir(path)?;
    }
    Ok(())
}

/// Switches `conn` to WAL and returns the journal mode it is in. The switch needs the
/// file to itself and SQLite does not wait for that (no busy handler): processes that
/// make one file at once each retry here for up to [`BUSY_TIMEOUT`], as every other
/// statement waits.
fn wal_mode(conn: &Connection) -> rusqlite::Result<String> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            done => return done,
        }
    }
}

/// Makes the database file and its WAL exist, private (0600), before SQLite opens them,
/// and syncs their directory when it made one: a commit fsync'd into a WAL whose
/// directory entry is not on disk can vanish with it in a power cut. SQLite would sync
/// the directory itself on the first commit of every process; built with
/// `SQLITE_DISABLE_DIRSYNC` it leaves that to this function, which pays it once per
/// file. (SQLite also gives `-shm` the database file's mode, so it is private too.)
pub fn prepare_files(path: &Path) -> rusqlite::Result<()> {
    if make_files(path)? {
        sync_dir(path)?;
    }
    Ok(())
}

/// [`prepare_files`] without the directory sync: returns whether it made a file.
fn make_files(path: &Path) -> rusqlite::Result<bool> {
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    let mut made = false;
    for file in [path, wal.as_path()] {
        match crate::files::create_new_private(file) {
            Ok(_) => made = true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_failure(file, e)),
        }
    }
    Ok(made)
}

fn sync_dir(path: &Path) -> rusqlite::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_failure(dir, e))
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// Runs `f` (which commits) with `synchronous = FULL`: when it returns `Ok`, its commit
/// and every commit before it are on disk. Use it for what a promise rests on, e.g.
/// the record of a signature before its bytes leave. `sql_error` turns SQLite's errors
/// (setting the mode) into `f`'s error type.
pub fn durable<T, E>(
    conn: &mut Connection,
    sql_error: impl Fn(rusqlite::Error) -> E,
    f: impl FnOnce(&mut Connection) -> Result<T, E>,
) -> Result<T, E> {
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(&sql_error)?;
    let result = f(conn);
    let restored = conn.pragma_update(None, "synchronous", "NORMAL");
    let value = result?;
    restored.map_err(sql_error)?;
    Ok(value)
}

/// Copies the WAL into the database and empties it when it has grown past
/// [`WAL_LIMIT_BYTES`]; otherwise does nothing. Call it after the work (on close, or
/// between the items of a long run), never between a durable commit and what it
/// guards. Returns whether it checkpointed. Best effort by nature: a reader in another
/// process can keep part of the WAL alive, and then the next call tries again.
pub fn tidy(conn: &Connection) -> rusqlite::Result<bool> {
    tidy_past(conn, WAL_LIMIT_BYTES)
}

/// [`tidy`] with another limit (tests use a small one).
pub fn tidy_past(conn: &Connection, limit: u64) -> rusqlite::Result<bool> {
    let Some(wal) = wal_path(conn) else {
        return Ok(false);
    };
    let size = std::fs::metadata(&wal).map_or(0, |m| m.len());
    if size <= limit {
        return Ok(false);
    }
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(true)
}

/// The WAL file of `conn`'s main database, if it is a file.
pub fn wal_path(conn: &Connection) -> Option<PathBuf> {
    let main = conn.path().filter(|p| !p.is_empty())?;
    Some(PathBuf::from(format!("{main}-wal")))
}

fn refusal(message: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_CANTOPEN), Some(message))
}

fn io_failure(path: &Path, e: std::io::Error) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(ffi::SQLITE_IOERR_FSYNC),
        Some(format!("cannot sync {}: {e}", path.display())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: Schema = Schema {
        version: 1,
        sql: "CREATE TABLE IF NOT EXISTS t (x INTEGER NOT NULL);",
    };

    fn synchronous(c: &Connection) -> i64 {
        c.pragma_query_value(None, "synchronous", |r| r.get(0))
            .expect("pragma")
    }

    #[test]
    fn commits_are_normal_except_durable_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut c = open(&dir.path().join("db"), &SCHEMA).expect("open");
        assert_eq!(synchronous(&c), 1, "NORMAL outside durable");
        let inside = durable(
            &mut c,
            |e| e,
            |c| {
                c.execute("INSERT INTO t VALUES (1)", [])?;
                Ok(synchronous(c))
            },
        )
        .expect("durable");
        assert_eq!(inside, 2, "FULL inside durable");
        assert_eq!(synchronous(&c), 1, "NORMAL again after it");
        let failed: rusqlite::Result<()> = durable(
            &mut c,
            |e| e,
            |c| c.execute("INSERT INTO nope VALUES (1)", []).map(|_| ()),
        );
        assert!(failed.is_err());
        assert_eq!(synchronous(&c), 1, "NORMAL again after a failure");
    }

    #[test]
    fn the_wal_outlives_the_connection_and_the_schema_is_made_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        {
            let c = open(&path, &SCHEMA).expect("open");
            c.execute("INSERT INTO t VALUES (1)", []).expect("insert");
            assert_eq!(
                c.pragma_query_value(None, "journal_mode", |r| r.get::<_, String>(0))
                    .expect("mode"),
                "wal"
            );
        }
        let wal = dir.path().join("db-wal");
        assert!(
            wal.exists(),
            "closing does not checkpoint and delete the WAL"
        );
        // A schema that would fail if run again proves it is not run at the same version.
        let again = Schema {
            version: 1,
            sql: "CREATE TABLE t (x INTEGER);",
        };
        let c = open(&path, &again).expect("reopen at the same version");
        let n: i64 = c
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n, 1, "the commit made at NORMAL survived the close");
    }

    #[test]
    fn new_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let c = open(&dir.path().join("db"), &SCHEMA).expect("open");
        c.execute("INSERT INTO t VALUES (1)", []).expect("insert");
        for name in ["db", "db-wal", "db-shm"] {
            let mode = std::fs::metadata(dir.path().join(name))
                .expect(name)
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
    }

    #[test]
    fn a_newer_file_is_refused_and_an_older_one_is_brought_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        drop(
            open(
                &path,
                &Schema {
                    version: 2,
                    sql: SCHEMA.sql,
                },
            )
            .expect("v2"),
        );
        let err = open(&path, &SCHEMA).expect_err("v1 program, v2 file");
        assert!(err.to_string().contains("newer program"), "{err}");
        let v3 = Schema {
            version: 3,
            sql: "CREATE TABLE IF NOT EXISTS u (y INTEGER);",
        };
        let c = open(&path, &v3).expect("v3");
        c.execute("INSERT INTO u VALUES (1)", [])
            .expect("the new table exists");
        assert_eq!(user_version(&c).expect("version"), 3);
    }

    /// Six processes signing into a keystore whose log does not exist yet all make it
    /// at once (found by `concurrent_signers_never_pass_the_daily_limit_together` on a
    /// loaded machine). Without the retry in [`wal_mode`] one of them fails within the
    /// first few rounds with "database is locked".
    #[test]
    fn many_openers_of_a_new_file_all_open_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        for round in 0..100 {
            let path = dir.path().join(format!("db{round}"));
            let start = std::sync::Arc::new(std::sync::Barrier::new(6));
            let openers: Vec<_> = (0..6)
                .map(|_| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        open(&path, &SCHEMA).map(drop)
                    })
                })
                .collect();
            for opener in openers {
                let opened = opener.join().expect("thread");
                assert!(opened.is_ok(), "round {round}: {opened:?}");
            }
        }
    }

    #[test]
    fn tidy_checkpoints_only_past_the_limit_and_empties_the_wal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = open(&dir.path().join("db"), &SCHEMA).expect("open");
        let wal = wal_path(&c).expect("a file");
        for i in 0..200 {
            c.execute("INSERT INTO t VALUES (?1)", [i]).expect("insert");
        }
        let size = std::fs::metadata(&wal).expect("wal").len();
        assert!(size > 0);
        assert!(
            !tidy_past(&c, size).expect("tidy"),
            "at the limit: nothing to do"
        );
        assert!(
            tidy_past(&c, size - 1).expect("tidy"),
            "past it: checkpointed"
        );
        assert_eq!(std::fs::metadata(&wal).expect("wal").len(), 0, "emptied");
        let n: i64 = c
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n, 200, "nothing lost");
    }
}
