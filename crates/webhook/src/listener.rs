//! The webhook listener: answers 200 only once a delivery is durable.
//!
//! Contract (what each request gets):
//!
//! | request | answer | stored |
//! |---|---|---|
//! | `POST <path>`, JSON object with `subscriptionId` and `sequenceNumber` | 200 after commit | `events`, `verified` = signature matched a stored key |
//! | the same delivery again (same subscriptionId + sequenceNumber, or same body) | 200 | nothing new |
//! | `POST <path>`, body not JSON / not an object / no ids | 200 after commit | `quarantine` |
//! | `POST <path>`, body over the limit ([`DEFAULT_MAX_BODY`] unless set) | 413 | nothing |
//! | any other path | 404 | nothing |
//! | another method on `<path>` | 405 | nothing |
//! | the store cannot commit | 500 (the platform retries) | nothing |
//! | a request not complete within [`Timeouts::request`] | 408 | maybe (a retry is a duplicate) |
//! | headers not complete within [`Timeouts::header`] (also an idle keep-alive) | connection closed | nothing |
//!
//! Each answered delivery can be reported to the embedder ([`ListenerConfig::on_delivery`])
//! once the store has answered: outside the store's commit path, and never waited on.
//!
//! Malformed bodies get 200 because the platform may remove a webhook whose listener
//! answers anything else; they are kept for inspection instead. An event whose signature
//! does not verify (forged, or no key stored) is kept but marked unverified and is never
//! handed on.
//!
//! # Exhaustion
//!
//! The platform removes a webhook whose listener stops answering, so the listener's
//! enemies are downtime and exhaustion, and a stranger on the network is assumed:
//! - the path is the only access control, so `/` is refused; without a path one is
//!   generated (`/hooks/<128 random bits>`), kept in the store so restarts and replicas
//!   share it;
//! - at most [`DEFAULT_MAX_CONNECTIONS`] connections are served at once; past that new
//!   ones wait in the kernel's backlog instead of taking file descriptors, and a connection
//!   that does not finish its headers within [`Timeouts::header`] is closed, so
//!   half-sent headers cannot hold the slots; while every slot is taken, each answer
//!   closes its connection, so busy keep-alive connections cannot hold them either;
//! - what strangers send (unverified events, quarantine) is kept only up to the store's
//!   [`Limits`], each string field of theirs within [`store::STRANGER_FIELD_MAX`], and
//!   their rows are deleted past the [`Retention`] (age, rows);
//! - at most one body per connection is in memory, and the store's queue is bounded.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hyper_util::rt::{TokioIo, TokioTimer};
use sha2::{Digest, Sha256};
use tokio::sync::{Notify, Semaphore, watch};

use super::Error;
use super::handoff::{self, HandoffOptions, Sinks};
use super::keys::{KeyFile, Keys, SigningKey};
use super::signature;
use super::store::{
    self, EventStore, Incoming, IncomingKind, Limits, Outcome, Retention, StoreSpec, Verification,
};

/// How long a stopping listener gives what is in flight; it lives with the hand-off,
/// which keeps it too.
pub use super::handoff::STOP_GRACE;

/// The body size limit unless configured: a block-period delivery is about 2 KiB, so this
/// leaves two orders of magnitude of room while bounding what a stranger can make us store.
pub const DEFAULT_MAX_BODY: usize = 256 * 1024;

/// Connections served at once unless configured: far above what the platform opens
/// (a few), far below a default file-descriptor limit (1024).
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// How often an unknown subscription id may trigger a re-read of the key file.
const KEY_RELOAD_INTERVAL: Duration = Duration::from_millis(200);

/// The setting under which a generated path is kept in the store.
const PATH_SETTING: &str = "listener_path";

/// How long the parts of a request may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// From the first byte of a request (or the end of the previous one on a keep-alive
    /// connection) to the end of its headers.
    pub header: Duration,
    /// From the end of the headers to the answer: the body and the commit.
    pub request: Duration,
}

impl Default for Timeouts {
    /// 10 s for headers (a genuine sender needs milliseconds), 30 s for the rest.
    fn default() -> Self {
        Timeouts {
            header: Duration::from_secs(10),
            request: Duration::from_secs(30),
        }
    }
}

/// What the listener needs.
#[derive(Clone, Debug)]
pub struct ListenerConfig {
    /// Address to bind, e.g. `127.0.0.1:8080`.
    pub bind: SocketAddr,
    /// The one path deliveries are accepted on, e.g. `/hooks/3f9c...`; `None`: the one
    /// kept in the store, generated on first use.
    pub path: Option<String>,
    /// The store.
    pub store: StoreSpec,
    /// What the store keeps of strangers' posts.
    pub limits: Limits,
    /// How long and how many strangers' rows are kept.
    pub retention: Retention,
    /// The signing-key file written by `webhook create`.
    pub keys: PathBuf,
    /// Largest accepted body, bytes.
    pub max_body: usize,
    /// Connections served at once.
    pub max_connections: usize,
    /// Header and request timeouts.
    pub timeouts: Timeouts,
    /// Where stored events are handed on.
    pub sinks: Sinks,
    /// How the hand-off runs.
    pub handoff: HandoffOptions,
    /// Told of every delivery once the store answered (`None`: nobody is told).
    pub on_delivery: Option<OnDelivery>,
}

/// What became of one delivery, as reported to [`ListenerConfig::on_delivery`].
#[derive(Clone, Debug)]
pub struct Delivery {
    /// When it arrived (ms since the Unix epoch).
    pub received_at_ms: i64,
    /// What it was classified as: an event (with the signature check) or quarantine.
    /// Every string in it came from the sender.
    pub kind: IncomingKind,
    /// What storing it did; `None`: the store failed, it was answered 500 and the
    /// platform will retry it.
    pub outcome: Option<Outcome>,
}

/// A callback told of every delivery after the store answered it, on the request's
/// task and before the answer is written: it must return at once (queue the report and
/// print it elsewhere; drop it when the queue is full) or it slows every delivery.
#[derive(Clone)]
pub struct OnDelivery(Arc<dyn Fn(Delivery) + Send + Sync>);

impl OnDelivery {
    /// Wraps `f`.
    pub fn new(f: impl Fn(Delivery) + Send + Sync + 'static) -> Self {
        OnDelivery(Arc::new(f))
    }
}

impl std::fmt::Debug for OnDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnDelivery(..)")
    }
}

impl ListenerConfig {
    /// A configuration with a generated path, the default limits and no sinks.
    pub fn new(bind: SocketAddr, store: StoreSpec, keys: impl Into<PathBuf>) -> Self {
        ListenerConfig {
            bind,
            path: None,
            store,
            limits: Limits::default(),
            retention: Retention::default(),
            keys: keys.into(),
            max_body: DEFAULT_MAX_BODY,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            timeouts: Timeouts::default(),
            sinks: Sinks::default(),
            handoff: HandoffOptions::default(),
            on_delivery: None,
        }
    }

    fn validate(&self) -> Result<(), Error> {
        if let Some(path) = &self.path {
            check_path(path)?;
        }
        if self.max_body == 0 {
            return Err(Error::ListenerConfig {
                field: "max body",
                reason: "must be at least 1 byte".into(),
            });
        }
        if self.max_connections == 0 {
            return Err(Error::ListenerConfig {
                field: "max connections",
                reason: "must be at least 1".into(),
            });
        }
        if self.timeouts.header.is_zero() || self.timeouts.request.is_zero() {
            return Err(Error::ListenerConfig {
                field: "timeout",
                reason: "must be above zero".into(),
            });
        }
        self.sinks.validate()?;
        self.handoff.validate()
    }
}

/// A path deliveries may be accepted on: absolute, plain, and not `/` (which anyone who
/// finds the port would guess).
pub fn check_path(path: &str) -> Result<(), Error> {
    if !path.starts_with('/') {
        return Err(Error::ListenerConfig {
            field: "path",
            reason: format!("{path:?} must start with '/'"),
        });
    }
    if path.trim_end_matches('/').is_empty() {
        return Err(Error::ListenerConfig {
            field: "path",
            reason: "\"/\" is the first path a stranger tries: give an unguessable one \
                     (/hooks/SECRET), or none and one is generated"
                .into(),
        });
    }
    if path.contains(['?', '#', '{', '}', '*']) || path.contains("//") {
        return Err(Error::ListenerConfig {
            field: "path",
            reason: format!("{path:?} may not contain '?', '#', braces, '*' or '//'"),
        });
    }
    Ok(())
}

/// `/hooks/` and 128 random bits in hex.
fn generate_path() -> Result<String, Error> {
    let mut bits = [0u8; 16];
    getrandom::fill(&mut bits).map_err(|e| Error::ListenerConfig {
        field: "path",
        reason: format!("no randomness to generate one: {e}"),
    })?;
    Ok(format!("/hooks/{}", hex::encode(bits)))
}

/// Counters since start, for the summary on shutdown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// New event rows.
    pub stored: u64,
    /// Of which unverified.
    pub unverified: u64,
    /// Deliveries already stored.
    pub duplicates: u64,
    /// New quarantine rows (and repeats of them).
    pub quarantined: u64,
    /// Deliveries answered 500 because the store failed.
    pub failed: u64,
}

#[derive(Default)]
struct Counters {
    stored: AtomicU64,
    unverified: AtomicU64,
    duplicates: AtomicU64,
    quarantined: AtomicU64,
    failed: AtomicU64,
}

/// The signing keys, re-read from the file when an unknown subscription shows up (a
/// webhook created while the listener runs), at most every [`KEY_RELOAD_INTERVAL`].
struct KeyCache {
    file: KeyFile,
    inner: RwLock<KeyCacheInner>,
}

struct KeyCacheInner {
    keys: Keys,
    modified: Option<SystemTime>,
    checked: Instant,
}

impl KeyCache {
    fn load(file: KeyFile) -> Result<KeyCache, Error> {
        let modified = modified(&file);
        let keys = file.load()?;
        Ok(KeyCache {
            file,
            inner: RwLock::new(KeyCacheInner {
                keys,
                modified,
                checked: Instant::now(),
            }),
        })
    }

    fn get(&self, subscription_id: &str) -> Option<SigningKey> {
        {
            let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = inner.keys.get(subscription_id) {
                return Some(entry.signing_key.clone());
            }
            if inner.checked.elapsed() < KEY_RELOAD_INTERVAL {
                return None;
            }
        }
        let mut inner = self.inner.write().unwrap_or_else(|p| p.into_inner());
        if inner.checked.elapsed() >= KEY_RELOAD_INTERVAL {
            inner.checked = Instant::now();
            let now_modified = modified(&self.file);
            if now_modified != inner.modified {
                // A bad file keeps the keys we had: better than verifying nothing.
                if let Ok(keys) = self.file.load() {
                    inner.keys = keys;
                    inner.modified = now_modified;
                }
            }
        }
        inner
            .keys
            .get(subscription_id)
            .map(|e| e.signing_key.clone())
    }
}

fn modified(file: &KeyFile) -> Option<SystemTime> {
    std::fs::metadata(file.path())
        .and_then(|m| m.modified())
        .ok()
}

/// Shared state of the router: the store writer, the keys and the counters.
#[derive(Clone)]
pub struct ListenerState {
    inner: Arc<StateInner>,
    on_delivery: Option<OnDelivery>,
}

struct StateInner {
    store: Arc<dyn EventStore>,
    keys: KeyCache,
    /// Subscriptions whose earlier "no signing key" rows were re-checked in this process.
    reverified: std::sync::Mutex<std::collections::HashSet<String>>,
    path: String,
    max_body: usize,
    wake: Arc<Notify>,
    counters: Counters,
}

impl ListenerState {
    /// State over an open store and a key file, serving `path` with a body limit.
    pub fn new(
        store: Arc<dyn EventStore>,
        keys: KeyFile,
        path: impl Into<String>,
        max_body: usize,
    ) -> Result<ListenerState, Error> {
        Ok(ListenerState {
            inner: Arc::new(StateInner {
                store,
                keys: KeyCache::load(keys)?,
                reverified: Default::default(),
                path: path.into(),
                max_body,
                wake: Arc::new(Notify::new()),
                counters: Counters::default(),
            }),
            on_delivery: None,
        })
    }

    /// The same state, telling `on_delivery` of every delivery (see [`OnDelivery`]).
    pub fn with_on_delivery(mut self, on_delivery: Option<OnDelivery>) -> ListenerState {
        self.on_delivery = on_delivery;
        self
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        let c = &self.inner.counters;
        Stats {
            stored: c.stored.load(Ordering::Relaxed),
            unverified: c.unverified.load(Ordering::Relaxed),
            duplicates: c.duplicates.load(Ordering::Relaxed),
            quarantined: c.quarantined.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
        }
    }

    /// Notified after each new verified event, so a dispatcher need not poll.
    pub fn wake(&self) -> Arc<Notify> {
        self.inner.wake.clone()
    }
}

/// The listener's routes: `POST <path>` stores, everything else 404 (405 for another
/// method on the path), bodies over the limit 413, requests over `request_timeout` 408.
pub fn router(state: ListenerState, request_timeout: Duration) -> Router {
    let path = state.inner.path.clone();
    let limit = state.inner.max_body;
    Router::new()
        .route(&path, post(receive))
        .fallback(|| async { StatusCode::NOT_FOUND })
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
        .layer(middleware::from_fn_with_state(request_timeout, deadline))
}

/// Answers 408 when the body and the commit take longer than `limit`: a sender that
/// trickles its body holds a connection slot no longer than that.
async fn deadline(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (StatusCode::REQUEST_TIMEOUT, "request timed out\n").into_response(),
    }
}

async fn receive(
    State(state): State<ListenerState>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let incoming = classify(&state, &headers, &body);
    let verified = incoming.is_verified();
    let subscription = match &incoming.kind {
        IncomingKind::Event {
            subscription_id, ..
        } if verified => Some(subscription_id.clone()),
        _ => None,
    };
    let c = &state.inner.counters;
    // Only what a report needs is kept back, and only when someone is told.
    let report = state
        .on_delivery
        .as_ref()
        .map(|hook| (hook, incoming.received_at_ms, incoming.kind.clone()));
    let outcome = state.inner.store.insert(incoming).await;
    if let (Some(sub), Ok(_)) = (&subscription, &outcome) {
        reverify_once(&state, sub);
    }
    if let Some((hook, received_at_ms, kind)) = report {
        (hook.0)(Delivery {
            received_at_ms,
            kind,
            outcome: outcome.as_ref().ok().copied(),
        });
    }
    match outcome {
        Ok(Outcome::Stored(_)) => {
            c.stored.fetch_add(1, Ordering::Relaxed);
            if verified {
                state.inner.wake.notify_one();
            } else {
                c.unverified.fetch_add(1, Ordering::Relaxed);
            }
            (StatusCode::OK, "stored\n")
        }
        Ok(Outcome::Duplicate) => {
            c.duplicates.fetch_add(1, Ordering::Relaxed);
            (StatusCode::OK, "duplicate\n")
        }
        Ok(_) => {
            c.quarantined.fetch_add(1, Ordering::Relaxed);
            (StatusCode::OK, "quarantined\n")
        }
        Err(_) => {
            c.failed.fetch_add(1, Ordering::Relaxed);
            (StatusCode::INTERNAL_SERVER_ERROR, "not stored\n")
        }
    }
}

/// The first verified delivery of a subscription in this process re-checks its earlier
/// "no signing key" rows: the platform may deliver before `webhook create` (or the
/// self-healing check) has written the new key, and such an event must not stay
/// unverified, so never handed on.
fn reverify_once(state: &ListenerState, subscription_id: &str) {
    let fresh = {
        let mut done = state
            .inner
            .reverified
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Looked up before inserting: a copy of the id only on the first delivery.
        !done.contains(subscription_id) && done.insert(subscription_id.to_owned())
    };
    let Some(key) = fresh
        .then(|| state.inner.keys.get(subscription_id))
        .flatten()
    else {
        return;
    };
    let subscription_id = subscription_id.to_owned();
    let state = state.clone();
    tokio::spawn(async move {
        if let Ok(n) = state.inner.store.reverify(&subscription_id, key).await
            && n > 0
        {
            state.inner.wake.notify_one();
        }
    });
}

/// An id given as a string or a non-negative integer, as text.
fn id_text(value: Option<serde_json::Value>, field: &str) -> Result<String, String> {
    match value {
        Some(serde_json::Value::String(s)) if !s.is_empty() && s.len() <= 128 => Ok(s),
        Some(serde_json::Value::Number(n)) if n.is_u64() => Ok(n.to_string()),
        Some(other) => Err(format!(
            "{field} must be a non-empty string (at most 128 chars) or a non-negative integer, found {}",
            json_kind(&other)
        )),
        None => Err(format!("{field} is missing")),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number that is not a non-negative integer",
        serde_json::Value::String(_) => "an empty or over-long string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn classify(state: &ListenerState, headers: &HeaderMap, body: &Bytes) -> Incoming {
    let body_sha256: [u8; 32] = Sha256::digest(body).into();
    let signature = headers
        .get("x-signature")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    // Checked in full, stored bounded unless it verified: a stranger's header or event
    // type cannot grow a row past STRANGER_FIELD_MAX.
    let kind = match parse_delivery(body) {
        Err(reason) => IncomingKind::Quarantine { reason },
        Ok((subscription_id, sequence_number, event_type)) => {
            let verification = match &signature {
                None => Verification::Missing,
                Some(sig) => match state.inner.keys.get(&subscription_id) {
                    None => Verification::NoKey,
                    Some(key) => {
                        if signature::verify(key.expose_secret().as_bytes(), body, sig) {
                            Verification::Valid
                        } else {
                            Verification::Mismatch
                        }
                    }
                },
            };
            let event_type = match verification {
                Verification::Valid => event_type,
                _ => event_type.map(store::bounded),
            };
            IncomingKind::Event {
                subscription_id,
                sequence_number,
                event_type,
                verification,
            }
        }
    };
    let verified = matches!(
        kind,
        IncomingKind::Event {
            verification: Verification::Valid,
            ..
        }
    );
    Incoming {
        received_at_ms: store::now_ms(),
        body: body.to_vec(),
        body_sha256,
        signature: if verified {
            signature
        } else {
            signature.map(store::bounded)
        },
        kind,
    }
}

/// The members of a delivery the listener reads.
const DELIVERY_FIELDS: [&str; 3] = ["subscriptionId", "sequenceNumber", "eventType"];

/// Reads a delivery body as the listener does: `(subscriptionId, sequenceNumber,
/// eventType)`, or why it goes to quarantine. Public for the fuzz targets.
pub fn parse_delivery(body: &[u8]) -> Result<(String, String, Option<String>), String> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err(match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(v) => format!("not a json object: {}", json_kind(&v)),
            Err(e) => format!("not json: {e}"),
        });
    }
    // Strict: `"sequenceNumber": 1, "sequenceNumber": 2` is two claims, and the id that
    // dedupes deliveries must not depend on which one a parser keeps. Numbers are kept
    // lenient (an event may carry large ones; they are stored, not acted on).
    let lenient = bridgectl_json::Options {
        lenient_numbers: true,
        ..bridgectl_json::Options::default()
    };
    // The whole body is checked, but only the three fields we read are built: this runs
    // for every delivery, and building the rest cost more than HTTP itself.
    let mut value = bridgectl_json::pick_with(body, lenient, &DELIVERY_FIELDS)
        .map_err(|e| format!("not json: {e}"))?;
    let mut field = |name: &str| value.as_object_mut().and_then(|m| m.remove(name));
    let sub = id_text(field("subscriptionId"), "subscriptionId")?;
    let seq = id_text(field("sequenceNumber"), "sequenceNumber")?;
    let event_type = match field("eventType") {
        Some(serde_json::Value::String(t)) => Some(t),
        _ => None,
    };
    Ok((sub, seq, event_type))
}

/// Connections the kernel may hold for us while every slot is taken (it caps this at
/// `net.core.somaxconn`, 4096 by default). The standard library's 128 is too few: with more
/// busy connections than slots, the overflow makes the kernel drop new connections' SYNs,
/// and a dropped SYN is resent only after a second, then three.
const LISTEN_BACKLOG: u32 = 4096;

/// Binds `addr` with [`LISTEN_BACKLOG`].
fn bind_with_backlog(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As the standard library does: a restarted listener can bind while the previous
    // one's connections linger in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// A bound listener, ready to [`run`](Listener::run).
pub struct Listener {
    tcp: tokio::net::TcpListener,
    state: ListenerState,
    store: Arc<dyn EventStore>,
    path: String,
    generated_path: bool,
    max_connections: usize,
    timeouts: Timeouts,
    sinks: Sinks,
    handoff: HandoffOptions,
    retention: Retention,
}

impl Listener {
    /// Opens the store, settles the path, loads the keys and binds the address.
    pub async fn bind(config: ListenerConfig) -> Result<Listener, Error> {
        config.validate()?;
        let store: Arc<dyn EventStore> = Arc::from(config.store.open(config.limits).await?);
        let (path, generated_path) = match &config.path {
            Some(p) => (p.clone(), false),
            None => {
                let fresh = generate_path()?;
                let kept = store.setting_or_insert(PATH_SETTING, &fresh).await?;
                check_path(&kept)?;
                (kept.clone(), kept == fresh)
            }
        };
        let state = ListenerState::new(
            store.clone(),
            KeyFile::new(&config.keys),
            path.clone(),
            config.max_body,
        )?
        .with_on_delivery(config.on_delivery);
        let tcp = bind_with_backlog(config.bind).map_err(|source| Error::Listen {
            addr: config.bind.to_string(),
            source,
        })?;
        Ok(Listener {
            tcp,
            state,
            store,
            path,
            generated_path,
            max_connections: config.max_connections,
            timeouts: config.timeouts,
            sinks: config.sinks,
            handoff: config.handoff,
            retention: config.retention,
        })
    }

    /// The bound address (useful after binding port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.tcp.local_addr().map_err(|source| Error::Listen {
            addr: "the bound socket".into(),
            source,
        })
    }

    /// The path deliveries are accepted on.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the path was generated by this start (so it must be shown once).
    pub fn generated_path(&self) -> bool {
        self.generated_path
    }

    /// The router's state (counters).
    pub fn state(&self) -> &ListenerState {
        &self.state
    }

    /// The store, shared with the hand-off (and the self-healing check, if any).
    pub fn store(&self) -> Arc<dyn EventStore> {
        self.store.clone()
    }

    /// Serves until `shutdown` completes, then stops accepting, finishes the requests and
    /// the hand-off attempt in flight within [`STOP_GRACE`] (an attempt cut short is
    /// retried, marked, on the next start) and closes the store.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Stats, Error> {
        let Listener {
            tcp,
            state,
            store,
            max_connections,
            timeouts,
            sinks,
            handoff: options,
            retention,
            ..
        } = self;
        let pruner = tokio::spawn(prune_every(store.clone(), retention, PRUNE_INTERVAL));
        let (stop_tx, stop_rx) = watch::channel(false);
        let dispatcher = tokio::spawn(handoff::run(
            store.clone(),
            sinks,
            options,
            state.wake(),
            stop_rx.clone(),
        ));
        // One signal stops both at once: the accept loop and the hand-off each finish
        // what is in flight within STOP_GRACE, side by side, not one after the other.
        let signal = tokio::spawn(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
        });
        let mut serve_stop = stop_rx;
        let stopped = async move {
            let _ = serve_stop.wait_for(|stop| *stop).await;
        };
        let app = router(state.clone(), timeouts.request);
        serve(tcp, app, max_connections, timeouts.header, stopped).await;
        let _ = dispatcher.await;
        signal.abort();
        pruner.abort();
        let stats = state.stats();
        drop(state);
        store.close().await?;
        Ok(stats)
    }
}

/// How often strangers' rows past the [`Retention`] are deleted.
const PRUNE_INTERVAL: Duration = Duration::from_secs(60);

/// Prunes at once, then every `interval`; a failure waits for the next round (the rows
/// stay a little longer, nothing else depends on it).
async fn prune_every(store: Arc<dyn EventStore>, retention: Retention, interval: Duration) {
    loop {
        let _ = store.prune(retention).await;
        tokio::time::sleep(interval).await;
    }
}

/// While every connection slot is taken, each answer closes its connection: a keep-alive
/// connection would otherwise hold its slot for as long as its sender keeps sending, and
/// a stranger with more busy connections than there are slots would keep a genuine
/// delivery waiting in the backlog until the flood ends. Closing hands the slot to the
/// backlog, which the kernel serves in arrival order, so a waiting connection is taken
/// within about one request of the busy ones.
fn close_when_full(
    slots: Arc<Semaphore>,
) -> impl Fn(Response) -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
    move |mut response: Response| {
        if slots.available_permits() == 0 {
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        std::future::ready(response)
    }
}

/// The accept loop: at most `max_connections` at once (the rest wait in the backlog),
/// each with a header-read timeout that also closes idle keep-alive connections. Public
/// so a benchmark can serve the listener's [`router`] exactly as the listener does, over
/// a store of its own.
pub async fn serve(
    tcp: tokio::net::TcpListener,
    app: Router,
    max_connections: usize,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let slots = Arc::new(Semaphore::new(max_connections));
    let app = app.layer(middleware::map_response(close_when_full(slots.clone())));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    let service = hyper_util::service::TowerToHyperService::new(app);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = tcp.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of descriptors, or a connection reset before accept: let the
                    // condition pass instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small responses: do not let Nagle hold them back.
        let _ = stream.set_nodelay(true);
        let connection =
            graceful.watch(http.serve_connection(TokioIo::new(stream), service.clone()));
        tokio::spawn(async move {
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(tcp);
    let _ = tokio::time::timeout(STOP_GRACE, graceful.shutdown()).await;
}
