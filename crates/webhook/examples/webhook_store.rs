//! The store writer alone, without HTTP: how many durable inserts per second the writer
//! thread commits when N tasks each wait for their own commit (as N listener connections
//! do). Tells whether the writer or the request handlers bound the listener.
//!
//! Usage: `webhook_store STORE [REQUESTS=20000] [CONCURRENCY=64] [ROUNDS=1]` (STORE as for
//! `--store`: a file, or `postgres://...` with feature `postgres`): each
//! round stores new events, one second apart (so the background checkpoint has run and
//! later rounds write into a WAL file that already has its size).

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bridgectl_webhook::load::block_period_delivery;
use bridgectl_webhook::store::{
    EventStore, Incoming, IncomingKind, Limits, Outcome, StoreSpec, Verification,
};
use sha2::{Digest, Sha256};

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
        let start = Instant::now();
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
        println!(
            "{{\"round\": {round}, \"requests\": {requests}, \"stored\": {}, \"seconds\": {:.3}, \"rps\": {:.0}}}",
            stored.load(Ordering::Relaxed),
            elapsed.as_secs_f64(),
            requests as f64 / elapsed.as_secs_f64()
        );
    }
    store.close().await?;
    Ok(())
}
