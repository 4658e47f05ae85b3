//! Counters of where a flow's time goes: waiting on HTTP answers (platform and node),
//! sleeping between polls, and journal writes. Whatever is left of the wall time is the
//! client's own work (parsing, checks, signing), which is what `bench/` reports as
//! client overhead.
//!
//! One [`Timing`] per journal, shared by the flows over it, their platform client and
//! every node client they make ([`crate::Flows::timing`]): no process-wide state, so two
//! sets of flows in one process (a wallet with two accounts' journals, tests running in
//! parallel) count apart. Counters only; reading them costs nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A handle on one set of counters; clones count into the same ones.
#[derive(Debug, Clone, Default)]
pub struct Timing(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    http_nanos: AtomicU64,
    http_requests: AtomicU64,
    sleep_nanos: AtomicU64,
    journal_nanos: AtomicU64,
}

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

fn nanos_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl Timing {
    /// The counters so far.
    pub fn snapshot(&self) -> Timings {
        let c = &self.0;
        Timings {
            http_us: c.http_nanos.load(Ordering::Relaxed) / 1_000,
            http_requests: c.http_requests.load(Ordering::Relaxed),
            sleep_us: c.sleep_nanos.load(Ordering::Relaxed) / 1_000,
            journal_us: c.journal_nanos.load(Ordering::Relaxed) / 1_000,
        }
    }

    /// Counts one HTTP exchange that started at `start`.
    pub(crate) fn http_done(&self, start: Instant) {
        self.0
            .http_nanos
            .fetch_add(nanos_since(start), Ordering::Relaxed);
        self.0.http_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Sleeps, counted.
    pub(crate) async fn sleep(&self, d: Duration) {
        let start = Instant::now();
        tokio::time::sleep(d).await;
        self.0
            .sleep_nanos
            .fetch_add(nanos_since(start), Ordering::Relaxed);
    }

    /// Counts journal work that started at `start`.
    pub(crate) fn journal_done(&self, start: Instant) {
        self.0
            .journal_nanos
            .fetch_add(nanos_since(start), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_their_counters_and_handles_do_not() {
        let a = Timing::default();
        let b = Timing::default();
        a.clone().http_done(Instant::now());
        a.journal_done(Instant::now());
        assert_eq!(a.snapshot().http_requests, 1);
        assert_eq!(b.snapshot().http_requests, 0, "another handle counts apart");
    }
}
