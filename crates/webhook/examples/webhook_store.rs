//! The store writer alone, without HTTP: how many durable inserts per second the writer
//! thread commits when N tasks each wait for their own commit (as N listener connections
//! do). Tells whether the writer or the request handlers bound the listener.
//!
//! Usage: `webhook_store STORE [REQUESTS=20000] [CONCURRENCY=64] [ROUNDS=1]` (STORE as for
//! `--store`: a file, or `postgres://...` with feature `postgres`): each
//! round stores new events, one second apart (so the background checkpoint has run and
//! later rounds write into a WAL file that already has its size). Prints per round the
//! process's CPU µs per event (the timed part only), WAL bytes per event and, with
//! `BRIDGECTL_BENCH_STAGES=1`, the writer thread's CPU µs per event executing the inserts
//! and committing them (WAL writes + fsync); the rest is the hand-off between tasks and
//! the writer thread.

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bridgectl_webhook::load::block_period_delivery;
use bridgectl_webhook::store::sqlite::bench_stats;
use bridgectl_webhook::store::{
    EventStore, Incoming, IncomingKind, Limits, Outcome, StoreSpec, Verification,
};
use sha2::{Digest, Sha256};

/// `/proc` counts CPU time in ticks of 1/100 s on Linux (USER_HZ).
const TICKS_PER_SECOND: f64 = 100.0;

/// This process's CPU time so far (user + system, all threads), in ticks: the timed
/// rounds only, not the building of the events.
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces), 1-based from field 3.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .ok_or("usage: webhook_store STORE_FILE [REQUESTS] [CONCURRENCY]")?;
    let requests: usize = args
        .get(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(20_000);
    let concurrency: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(64);
    let rounds: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(1);
    let store: Arc<dyn EventStore> =
        Arc::from(StoreSpec::parse(path).open(Limits::default()).await?);
    let incoming: Arc<Vec<Incoming>> = Arc::new(
        (0..requests * rounds)
            .map(|i| {
                let body = block_period_delivery("77", i as u64 + 1);
                Incoming {
                    received_at_ms: 0,
                    body_sha256: Sha256::digest(&body).into(),
                    body,
                    signature: Some("00".repeat(32)),
                    kind: IncomingKind::Event {
                        subscription_id: "77".into(),
                        sequence_number: (i + 1).to_string(),
                        event_type: Some("BLOCK_PERIOD".into()),
                        verification: Verification::Valid,
                    },
                }
            })
            .collect(),
    );
    for round in 0..rounds {
        if round > 0 {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
        let next = Arc::new(AtomicUsize::new(round * requests));
        let stored = Arc::new(AtomicUsize::new(0));
        let (start, cpu) = (Instant::now(), cpu_ticks());
        let before = bench_stats::totals();
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| {
                let (writer, incoming, next, stored) = (
                    store.clone(),
                    incoming.clone(),
                    next.clone(),
                    stored.clone(),
                );
                tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= (round + 1) * requests {
                            break;
                        }
                        let Some(one) = incoming.get(i) else { break };
                        if let Ok(Outcome::Stored(_)) = writer.insert(one.clone()).await {
                            stored.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await?;
        }
        let elapsed = start.elapsed();
        let after = bench_stats::totals();
        let wal = (after.wal_bytes - before.wal_bytes) / requests as u64;
        let per_op = |ns: u64| ns as f64 / 1e3 / (after.ops - before.ops).max(1) as f64;
        let insert_us = per_op(after.insert_ns - before.insert_ns);
        let commit_us = per_op(
            (after.writer_ns - before.writer_ns).saturating_sub(after.insert_ns - before.insert_ns),
        );
        let cpu_us = cpu_ticks().zip(cpu).map_or(f64::NAN, |(b, a)| {
            (b - a) as f64 * 1e6 / TICKS_PER_SECOND / requests as f64
        });
        println!(
            "{{\"round\": {round}, \"requests\": {requests}, \"stored\": {}, \"seconds\": {:.3}, \"rps\": {:.0}, \"cpu_us_per_event\": {cpu_us:.1}, \"insert_us\": {insert_us:.1}, \"commit_us\": {commit_us:.1}, \"wal_bytes_per_event\": {wal}}}",
            stored.load(Ordering::Relaxed),
            elapsed.as_secs_f64(),
            requests as f64 / elapsed.as_secs_f64()
        );
    }
    store.close().await?;
    Ok(())
}
