//! Blocks on a timer, kept by the sandbox rather than by anvil: anvil's own interval
//! mining and its automine exclude each other once changed at run time (its RPC sets one
//! mode or the other), and a chain that only mines when a transaction arrives never gets
//! deeper, so nothing in it would ever be final. Each chain has a [`Ticker`] that mines
//! a block every `block_time_ms` while it runs, whatever anvil's automine does; both are
//! set together by [`crate::AppState::set_mining`] (and
//! `POST /sandbox/v1/chains/{chain}/mining`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::rpc::Rpc;

/// One chain's timer: a block every `interval_ms` (0: stopped).
#[derive(Debug)]
pub(crate) struct Ticker {
    interval_ms: AtomicU64,
    /// Woken when the interval changes, so a long sleep does not outlive it.
    changed: tokio::sync::Notify,
}

impl Ticker {
    pub(crate) fn new(interval_ms: u64) -> Arc<Ticker> {
        Arc::new(Ticker {
            interval_ms: AtomicU64::new(interval_ms),
            changed: tokio::sync::Notify::new(),
        })
    }

    /// The interval now (0: stopped).
    pub(crate) fn interval_ms(&self) -> u64 {
        self.interval_ms.load(Ordering::SeqCst)
    }

    /// Mines every `ms` from now on (0 stops it).
    pub(crate) fn set(&self, ms: u64) {
        self.interval_ms.store(ms, Ordering::SeqCst);
        self.changed.notify_waiters();
    }
}

/// Starts `ticker` on the node at `rpc`; returns the task to abort at shutdown.
pub(crate) fn spawn(rpc: Rpc, ticker: Arc<Ticker>) -> tokio::task::AbortHandle {
    tokio::spawn(async move {
        loop {
            let ms = ticker.interval_ms();
            if ms == 0 {
                ticker.changed.notified().await;
                continue;
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {
                    if ticker.interval_ms() != 0 {
                        // A node busy or gone: the next tick tries again.
                        let _ = rpc.call::<serde_json::Value>("evm_mine", serde_json::json!([])).await;
                    }
                }
                () = ticker.changed.notified() => {}
            }
        }
    })
    .abort_handle()
}
