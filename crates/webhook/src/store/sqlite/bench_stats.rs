//! What the writers of this process spent, for bench/: WAL bytes appended (what one
//! durable event costs the disk besides its share of an fsync) and, when
//! [`STAGES_ENV`] is set, the writer thread's CPU time inserting and committing
//! (WAL writes and fsync). Process-wide counts, as SQLite's hook takes a plain function;
//! only built for benchmarks.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// Set (to anything) to time the writer's stages: a few reads of `/proc` per batch,
/// so not in a run whose throughput is measured.
pub const STAGES_ENV: &str = "BRIDGECTL_BENCH_STAGES";

static FRAMES_IN_WAL: AtomicU64 = AtomicU64::new(0);
/// The writer's autocheckpoint bound, in frames, which the hook installed here enforces
/// in SQLite's place (see [`install`]).
static AUTOCHECKPOINT_PAGES: AtomicI64 = AtomicI64::new(i64::MAX);
static FRAME_BYTES: AtomicU64 = AtomicU64::new(4096 + 24);
static BYTES: AtomicU64 = AtomicU64::new(0);
static TIMED: AtomicBool = AtomicBool::new(false);
static INSERT_NS: AtomicU64 = AtomicU64::new(0);
static WRITER_NS: AtomicU64 = AtomicU64::new(0);
static OPS: AtomicU64 = AtomicU64::new(0);

/// Totals so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    /// WAL bytes appended (frame headers included).
    pub wal_bytes: u64,
    /// Time executing the statements of batches, ns (0 unless timed): clock time, but
    /// nothing in it waits for the disk (pages go to SQLite's cache until the commit).
    pub insert_ns: u64,
    /// The writer thread's CPU time so far, ns (0 unless timed); less `insert_ns`, what
    /// committing cost (WAL writes, fsync).
    pub writer_ns: u64,
    /// Requests in the timed batches.
    pub ops: u64,
}

/// The totals so far.
pub fn totals() -> Totals {
    Totals {
        wal_bytes: BYTES.load(Ordering::Relaxed),
        insert_ns: INSERT_NS.load(Ordering::Relaxed),
        writer_ns: WRITER_NS.load(Ordering::Relaxed),
        ops: OPS.load(Ordering::Relaxed),
    }
}

/// This thread's CPU time, ns, as of its last turn on the CPU (so exact over a run,
/// not over one batch).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Times one batch, if timing is on.
pub(super) struct Timer(Option<std::time::Instant>);

/// A batch whose statements ran: the commit is next.
pub(super) struct Applied(bool);

impl Timer {
    pub(super) fn start() -> Timer {
        Timer(TIMED.load(Ordering::Relaxed).then(std::time::Instant::now))
    }

    pub(super) fn applied(self, ops: usize) -> Applied {
        if let Some(t0) = self.0 {
            let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            INSERT_NS.fetch_add(ns, Ordering::Relaxed);
            OPS.fetch_add(ops as u64, Ordering::Relaxed);
        }
        Applied(self.0.is_some())
    }
}

impl Applied {
    pub(super) fn committed(self) {
        if self.0 {
            WRITER_NS.store(thread_cpu_ns(), Ordering::Relaxed);
        }
    }
}

/// Counts the writer's commits (replacing the autocheckpoint hook, whose backstop
/// `after_commit` keeps).
/// Installs the counting hook on the writer's connection. The hook takes the place of
/// SQLite's own autocheckpoint hook, so it checkpoints past `autocheckpoint_pages` frames
/// as that one would.
pub(super) fn install(
    conn: &rusqlite::Connection,
    autocheckpoint_pages: i64,
) -> rusqlite::Result<()> {
    AUTOCHECKPOINT_PAGES.store(autocheckpoint_pages, Ordering::Relaxed);
    TIMED.store(std::env::var_os(STAGES_ENV).is_some(), Ordering::Relaxed);
    let page: i64 = conn.pragma_query_value(None, "page_size", |r| r.get(0))?;
    FRAME_BYTES.store(u64::try_from(page).unwrap_or(4096) + 24, Ordering::Relaxed);
    conn.wal_hook(Some(after_commit));
    Ok(())
}

/// `frames` is the WAL's length after the commit; it restarts from zero after a
/// checkpoint that copied everything.
fn after_commit(wal: &rusqlite::hooks::Wal, frames: std::ffi::c_int) -> rusqlite::Result<()> {
    let frames = u64::try_from(frames).unwrap_or(0);
    let before = FRAMES_IN_WAL.swap(frames, Ordering::Relaxed);
    let added = if frames >= before {
        frames - before
    } else {
        frames
    };
    BYTES.fetch_add(
        added * FRAME_BYTES.load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
    if i64::try_from(frames).unwrap_or(i64::MAX) >= AUTOCHECKPOINT_PAGES.load(Ordering::Relaxed) {
        let _ = wal.checkpoint();
    }
    Ok(())
}
