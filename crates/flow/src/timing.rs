//! Process-wide counters of where a flow's time goes: waiting on HTTP answers (platform
//! and node), and sleeping between polls. Whatever is left of the wall time is the
//! client's own work (parsing, checks, signing, journal), which is what `bench/` reports
//! as client overhead. Counters only; reading them costs nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

static HTTP_NANOS: AtomicU64 = AtomicU64::new(0);
static HTTP_REQUESTS: AtomicU64 = AtomicU64::new(0);
static SLEEP_NANOS: AtomicU64 = AtomicU64::new(0);
static JOURNAL_NANOS: AtomicU64 = AtomicU64::new(0);

/// A snapshot of the counters.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Time spent waiting for HTTP answers, in microseconds.
    pub http_us: u64,
    /// Number of HTTP requests sent (retries included).
    pub http_requests: u64,
    /// Time spent sleeping between polls and retries, in microseconds.
    pub sleep_us: u64,
    /// Time spent in journal writes (each a durable SQLite commit), in microseconds.
    pub journal_us: u64,
}

/// The counters so far.
pub fn snapshot() -> Timings {
    Timings {
        http_us: HTTP_NANOS.load(Ordering::Relaxed) / 1_000,
        http_requests: HTTP_REQUESTS.load(Ordering::Relaxed),
        sleep_us: SLEEP_NANOS.load(Ordering::Relaxed) / 1_000,
        journal_us: JOURNAL_NANOS.load(Ordering::Relaxed) / 1_000,
    }
}

/// Counts one HTTP exchange that started at `start`.
pub(crate) fn http_done(start: Instant) {
    HTTP_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    HTTP_REQUESTS.fetch_add(1, Ordering::Relaxed);
}

/// Sleeps, counted.
pub(crate) async fn sleep(d: Duration) {
    let start = Instant::now();
    tokio::time::sleep(d).await;
    SLEEP_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

/// Counts journal work that started at `start`.
pub(crate) fn journal_done(start: Instant) {
    JOURNAL_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
}
