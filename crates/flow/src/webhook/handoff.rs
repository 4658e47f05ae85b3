//! Handing stored events on: `--exec CMD` and `--forward URL`, at least once.
//!
//! The dispatcher never takes events from the request path: it reads them from the store
//! (verified events whose `handed_off` bits lack a configured sink), so whatever was
//! acknowledged survives a crash and is handed on after the restart. A sink's success is
//! recorded after it happened, so a crash in between repeats it: consumers must be
//! idempotent on (subscriptionId, sequenceNumber), which the environment of `--exec` and the
//! headers of `--forward` carry. Unverified events are never handed on.
//!
//! - exec: `sh -c CMD`, the raw body on stdin, `BRIDGECTL_EVENT_ID`,
//!   `BRIDGECTL_SUBSCRIPTION_ID`, `BRIDGECTL_SEQUENCE_NUMBER` and `BRIDGECTL_EVENT_TYPE` in
//!   the environment; success is exit status 0 within [`EXEC_TIMEOUT`].
//! - forward: `POST URL` with the raw body, `content-type: application/json`, the original
//!   `x-signature` and `x-bridgectl-event-id`; success is any 2xx within [`FORWARD_TIMEOUT`].
//!
//! A failed attempt is retried with exponential backoff from 1 s, capped at
//! [`MAX_BACKOFF`]; a failing event does not hold back later ones.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::{Notify, watch};

use super::Error;
use super::store::{self, HandoffRecord, SINK_EXEC, SINK_FORWARD, Store, StoredEvent, Writer};

/// How long one `--exec` run may take before it is killed and counted as failed.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one `--forward` POST may take.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest wait between two attempts for one event.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Where events go after they are stored.
#[derive(Clone, Debug, Default)]
pub struct Sinks {
    /// A shell command that gets each event on stdin.
    pub exec: Option<String>,
    /// A URL each event is POSTed to.
    pub forward: Option<String>,
}

impl Sinks {
    /// The `handed_off` bits these sinks need.
    pub fn bits(&self) -> u8 {
        let mut bits = 0;
        if self.exec.is_some() {
            bits |= SINK_EXEC;
        }
        if self.forward.is_some() {
            bits |= SINK_FORWARD;
        }
        bits
    }

    /// Checks the forward URL before the listener starts.
    pub fn validate(&self) -> Result<(), Error> {
        if let Some(url) = &self.forward {
            let parsed = reqwest::Url::parse(url).map_err(|e| Error::Url {
                url: url.clone(),
                reason: e.to_string(),
            })?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(Error::Url {
                    url: url.clone(),
                    reason: format!("scheme {} is not http or https", parsed.scheme()),
                });
            }
        }
        if let Some(cmd) = &self.exec
            && cmd.trim().is_empty()
        {
            return Err(Error::ListenerConfig {
                field: "exec",
                reason: "the command is empty".into(),
            });
        }
        Ok(())
    }
}

/// The backoff after `attempts` failed attempts.
pub fn backoff(attempts: i64) -> Duration {
    let exp = u32::try_from(attempts.clamp(0, 16)).unwrap_or(16);
    Duration::from_secs(1u64 << exp).min(MAX_BACKOFF)
}

/// Runs until `stop` turns true: hands every pending event to every sink.
pub(crate) async fn run(
    store: Store,
    writer: Writer,
    sinks: Sinks,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    let bits = sinks.bits();
    if bits == 0 {
        return;
    }
    let http = match reqwest::Client::builder().timeout(FORWARD_TIMEOUT).build() {
        Ok(c) => c,
        Err(_) => reqwest::Client::new(),
    };
    loop {
        if *stop.borrow() {
            return;
        }
        let now = store::now_ms();
        let s = store.clone();
        let pending = tokio::task::spawn_blocking(move || s.pending(bits, now, 64))
            .await
            .unwrap_or_else(|_| Ok(Vec::new()))
            .unwrap_or_default();
        if pending.is_empty() {
            let s = store.clone();
            let due = tokio::task::spawn_blocking(move || s.next_due(bits))
                .await
                .ok()
                .and_then(Result::ok)
                .flatten();
            let wait = match due {
                Some(at) => Duration::from_millis(
                    u64::try_from(at.saturating_sub(store::now_ms())).unwrap_or(0),
                )
                .clamp(Duration::from_millis(10), Duration::from_secs(1)),
                None => Duration::from_secs(1),
            };
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => {}
            }
            continue;
        }
        for event in pending {
            if *stop.borrow() {
                return;
            }
            let attempt = tokio::select! {
                r = hand_off(&http, &sinks, bits, &event) => r,
                // Stopping mid-attempt records nothing: the event is retried after restart.
                _ = stop.changed() => return,
            };
            let (done, error) = attempt;
            let record = HandoffRecord {
                id: event.id,
                done,
                next_attempt_ms: store::now_ms().saturating_add(
                    i64::try_from(backoff(event.attempts).as_millis()).unwrap_or(i64::MAX),
                ),
                error,
            };
            if writer.record_handoff(record).await.is_err() {
                // The store is gone: nothing more can be recorded; retried after restart.
                return;
            }
        }
    }
}

/// One attempt at every sink the event still lacks: the bits that succeeded and the
/// first failure.
async fn hand_off(
    http: &reqwest::Client,
    sinks: &Sinks,
    bits: u8,
    event: &StoredEvent,
) -> (u8, Option<String>) {
    let mut done = 0;
    let mut errors = Vec::new();
    let missing = bits & !event.handed_off;
    if missing & SINK_EXEC != 0
        && let Some(cmd) = &sinks.exec
    {
        match exec(cmd, event).await {
            Ok(()) => done |= SINK_EXEC,
            Err(e) => errors.push(format!("exec: {e}")),
        }
    }
    if missing & SINK_FORWARD != 0
        && let Some(url) = &sinks.forward
    {
        match forward(http, url, event).await {
            Ok(()) => done |= SINK_FORWARD,
            Err(e) => errors.push(format!("forward: {e}")),
        }
    }
    let error = (!errors.is_empty()).then(|| errors.join("; "));
    (done, error)
}

async fn exec(cmd: &str, event: &StoredEvent) -> Result<(), String> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("BRIDGECTL_EVENT_ID", event.id.to_string())
        .env("BRIDGECTL_SUBSCRIPTION_ID", &event.subscription_id)
        .env("BRIDGECTL_SEQUENCE_NUMBER", &event.sequence_number)
        .env(
            "BRIDGECTL_EVENT_TYPE",
            event.event_type.as_deref().unwrap_or(""),
        )
        .stdin(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start sh: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is fine: only the exit status counts.
        let _ = stdin.write_all(&event.body).await;
        drop(stdin);
    }
    match tokio::time::timeout(EXEC_TIMEOUT, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("command exited with {status}")),
        Ok(Err(e)) => Err(format!("waiting for the command: {e}")),
        Err(_) => Err(format!(
            "command timed out after {}s",
            EXEC_TIMEOUT.as_secs()
        )),
    }
}

async fn forward(http: &reqwest::Client, url: &str, event: &StoredEvent) -> Result<(), String> {
    let mut req = http
        .post(url)
        .header("content-type", "application/json")
        .header("x-bridgectl-event-id", event.id.to_string())
        .header("x-bridgectl-subscription-id", &event.subscription_id)
        .header("x-bridgectl-sequence-number", &event.sequence_number)
        .body(event.body.clone());
    if let Some(sig) = &event.signature {
        req = req.header("x-signature", sig);
    }
    match req.send().await {
        Ok(resp) if resp.status().is_success() => Ok(()),
        Ok(resp) => Err(format!("{url} answered {}", resp.status())),
        Err(e) => Err(format!("{url}: {}", crate::error::one_line(&e))),
    }
}
