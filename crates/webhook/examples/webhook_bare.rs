//! The benchmark's baselines, to split the listener's cost by stage:
//! - `bare`: an axum handler that reads the body and answers 200, nothing else (HTTP);
//! - `serve`: the same handler behind the listener's accept loop (connection limit,
//!   header timeout) instead of `axum::serve`: what that loop costs;
//! - `verify`: the real listener's router and accept loop (parse, signature check,
//!   counters, connection limit, timeouts) over a store that keeps nothing (the listener
//!   minus this is the store).
//!
//! `bench/webhook-listener.sh` runs the same load against these and the real listener.
//! Usage: `webhook_bare ADDR PATH [serve | verify KEY_FILE]` (prints `{"addr": ...}` once
//! listening).

#![allow(clippy::print_stdout)]

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use axum::serve::ListenerExt;
use bridgectl_webhook::keys::{KeyFile, SigningKey};
use bridgectl_webhook::listener::{
    DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, ListenerState, Timeouts, router, serve,
};
use bridgectl_webhook::store::{
    Claim, Counts, EventStore, Gap, HandoffRecord, Incoming, Outcome, Pruned, Quarantined,
    Retention, StoreFuture, StoredEvent,
};

/// Answers every insert "stored" at once and keeps nothing.
struct NullStore;

fn ready<T: Send + 'static>(value: T) -> StoreFuture<'static, T> {
    Box::pin(async move { Ok(value) })
}

impl EventStore for NullStore {
    fn location(&self) -> &str {
        "nowhere"
    }
    fn insert(&self, _: Incoming) -> StoreFuture<'_, Outcome> {
        ready(Outcome::Stored(0))
    }
    fn claim(&self, _: Claim) -> StoreFuture<'_, Vec<StoredEvent>> {
        ready(Vec::new())
    }
    fn start_attempt(&self, _: i64, _: &str) -> StoreFuture<'_, Option<i64>> {
        ready(Some(1))
    }
    fn record_handoff(&self, _: HandoffRecord) -> StoreFuture<'_, ()> {
        ready(())
    }
    fn release(&self, _: &str) -> StoreFuture<'_, ()> {
        ready(())
    }
    fn renew(&self, _: &str, _: Vec<i64>, _: i64) -> StoreFuture<'_, ()> {
        ready(())
    }
    fn next_due(&self, _: u8) -> StoreFuture<'_, Option<i64>> {
        ready(None)
    }
    fn events(&self, _: i64, _: usize) -> StoreFuture<'_, Vec<StoredEvent>> {
        ready(Vec::new())
    }
    fn quarantined(&self, _: i64, _: usize) -> StoreFuture<'_, Vec<Quarantined>> {
        ready(Vec::new())
    }
    fn gaps(&self, _: i64, _: usize) -> StoreFuture<'_, Vec<Gap>> {
        ready(Vec::new())
    }
    fn record_gap(&self, _: Gap) -> StoreFuture<'_, i64> {
        ready(0)
    }
    fn last_event(&self, _: &str) -> StoreFuture<'_, Option<(i64, String)>> {
        ready(None)
    }
    fn counts(&self) -> StoreFuture<'_, Counts> {
        ready(Counts::default())
    }
    fn setting_or_insert(&self, _: &str, value: &str) -> StoreFuture<'_, String> {
        ready(value.to_owned())
    }
    fn reverify(&self, _: &str, _: SigningKey) -> StoreFuture<'_, u64> {
        ready(0)
    }
    fn prune(&self, _: Retention) -> StoreFuture<'_, Pruned> {
        ready(Pruned::default())
    }
    fn close(&self) -> StoreFuture<'_, ()> {
        ready(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let path = args.next().unwrap_or_else(|| "/hooks/bench".into());
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let app = Router::new()
        .route(
            &path,
            post(|_body: Bytes| async { (StatusCode::OK, "stored\n") }),
        )
        .fallback(|| async { StatusCode::NOT_FOUND });
    let mode = args.next();
    if mode.as_deref() == Some("serve") {
        let timeouts = Timeouts::default();
        let tcp = tokio::net::TcpListener::bind(&addr).await?;
        println!("{{\"addr\": \"{}\"}}", tcp.local_addr()?);
        serve(tcp, app, DEFAULT_MAX_CONNECTIONS, timeouts.header, shutdown).await;
        return Ok(());
    }
    if let (Some("verify"), Some(keys)) = (mode.as_deref(), args.next()) {
        // The listener's own router and accept loop (connection limit, timeouts): all of
        // the listener but the store.
        let state = ListenerState::new(
            Arc::new(NullStore),
            KeyFile::new(keys),
            &path,
            DEFAULT_MAX_BODY,
        )?;
        let timeouts = Timeouts::default();
        let app = router(state, timeouts.request);
        let tcp = tokio::net::TcpListener::bind(&addr).await?;
        println!("{{\"addr\": \"{}\"}}", tcp.local_addr()?);
        serve(tcp, app, DEFAULT_MAX_CONNECTIONS, timeouts.header, shutdown).await;
        return Ok(());
    }
    let tcp = tokio::net::TcpListener::bind(&addr).await?;
    println!("{{\"addr\": \"{}\"}}", tcp.local_addr()?);
    let tcp = tcp.tap_io(|s| {
        let _ = s.set_nodelay(true);
    });
    axum::serve(tcp, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}
