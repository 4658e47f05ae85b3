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
//!
//! Malformed bodies get 200 because the platform may remove a webhook whose listener
//! answers anything else; they are kept for inspection instead. An event whose signature
//! does not verify (forged, or no key stored) is kept but marked unverified and is never
//! handed on. The path is the only access control: use an unguessable one
//! (`/hooks/<secret>`).

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::serve::ListenerExt;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::{Notify, watch};

use super::Error;
use super::handoff::{self, Sinks};
use super::keys::{KeyFile, Keys, SigningKey};
use super::signature;
use super::store::{self, Incoming, IncomingKind, Outcome, Store, Verification, Writer};

/// The body size limit unless configured: a block-period delivery is about 2 KiB, so this
/// leaves two orders of magnitude of room while bounding what a stranger can make us store.
pub const DEFAULT_MAX_BODY: usize = 256 * 1024;

/// How often an unknown subscription id may trigger a re-read of the key file.
const KEY_RELOAD_INTERVAL: Duration = Duration::from_millis(200);

/// What the listener needs.
#[derive(Clone, Debug)]
pub struct ListenerConfig {
    /// Address to bind, e.g. `127.0.0.1:8080`.
    pub bind: SocketAddr,
    /// The one path deliveries are accepted on, e.g. `/hooks/3f9c...`.
    pub path: String,
    /// The SQLite store.
    pub store: PathBuf,
    /// The signing-key file written by `webhook create`.
    pub keys: PathBuf,
    /// Largest accepted body, bytes.
    pub max_body: usize,
    /// Where stored events are handed on.
    pub sinks: Sinks,
}

impl ListenerConfig {
    /// A configuration with the default path `/`, body limit and no sinks.
    pub fn new(bind: SocketAddr, store: impl Into<PathBuf>, keys: impl Into<PathBuf>) -> Self {
        ListenerConfig {
            bind,
            path: "/".into(),
            store: store.into(),
            keys: keys.into(),
            max_body: DEFAULT_MAX_BODY,
            sinks: Sinks::default(),
        }
    }

    fn validate(&self) -> Result<(), Error> {
        if !self.path.starts_with('/') {
            return Err(Error::ListenerConfig {
                field: "path",
                reason: format!("{:?} must start with '/'", self.path),
            });
        }
        if self.path.contains(['?', '#', '{', '}', '*']) || self.path.contains("//") {
            return Err(Error::ListenerConfig {
                field: "path",
                reason: format!(
                    "{:?} may not contain '?', '#', braces, '*' or '//'",
                    self.path
                ),
            });
        }
        if self.max_body == 0 {
            return Err(Error::ListenerConfig {
                field: "max body",
                reason: "must be at least 1 byte".into(),
            });
        }
        self.sinks.validate()
    }
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
}

struct StateInner {
    writer: Writer,
    keys: KeyCache,
    path: String,
    max_body: usize,
    wake: Arc<Notify>,
    counters: Counters,
}

impl ListenerState {
    /// State over a running writer and a key file, serving `path` with a body limit.
    pub fn new(
        writer: Writer,
        keys: KeyFile,
        path: impl Into<String>,
        max_body: usize,
    ) -> Result<ListenerState, Error> {
        Ok(ListenerState {
            inner: Arc::new(StateInner {
                writer,
                keys: KeyCache::load(keys)?,
                path: path.into(),
                max_body,
                wake: Arc::new(Notify::new()),
                counters: Counters::default(),
            }),
        })
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
/// method on the path), bodies over the limit 413.
pub fn router(state: ListenerState) -> Router {
    let path = state.inner.path.clone();
    let limit = state.inner.max_body;
    Router::new()
        .route(&path, post(receive))
        .fallback(|| async { StatusCode::NOT_FOUND })
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

async fn receive(
    State(state): State<ListenerState>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let incoming = classify(&state, &headers, &body);
    let verified = matches!(
        incoming.kind,
        IncomingKind::Event {
            verification: Verification::Valid,
            ..
        }
    );
    let c = &state.inner.counters;
    match state.inner.writer.insert(incoming).await {
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

/// The fields we need from a delivery; serde still checks the whole body is valid JSON.
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "subscriptionId")]
    subscription_id: Option<serde_json::Value>,
    #[serde(rename = "sequenceNumber")]
    sequence_number: Option<serde_json::Value>,
    #[serde(rename = "eventType")]
    event_type: Option<serde_json::Value>,
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
            IncomingKind::Event {
                subscription_id,
                sequence_number,
                event_type,
                verification,
            }
        }
    };
    Incoming {
        received_at_ms: store::now_ms(),
        body: body.to_vec(),
        body_sha256,
        signature,
        kind,
    }
}

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
    // One pass: serde checks the whole body is JSON while picking out three fields.
    let env: Envelope = serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            format!("not json: {e}")
        } else {
            format!("not a delivery: {e}")
        }
    })?;
    let sub = id_text(env.subscription_id, "subscriptionId")?;
    let seq = id_text(env.sequence_number, "sequenceNumber")?;
    let event_type = env.event_type.and_then(|v| v.as_str().map(str::to_owned));
    Ok((sub, seq, event_type))
}

/// A bound listener, ready to [`run`](Listener::run).
pub struct Listener {
    tcp: tokio::net::TcpListener,
    state: ListenerState,
    store: Store,
    writer: Writer,
    writer_thread: store::WriterThread,
    sinks: Sinks,
}

impl Listener {
    /// Opens the store, loads the keys and binds the address.
    pub async fn bind(config: ListenerConfig) -> Result<Listener, Error> {
        config.validate()?;
        let store = Store::open(&config.store)?;
        let (writer, writer_thread) = store.spawn_writer()?;
        let state = ListenerState::new(
            writer.clone(),
            KeyFile::new(&config.keys),
            config.path.clone(),
            config.max_body,
        )?;
        let tcp = tokio::net::TcpListener::bind(config.bind)
            .await
            .map_err(|source| Error::Listen {
                addr: config.bind.to_string(),
                source,
            })?;
        Ok(Listener {
            tcp,
            state,
            store,
            writer,
            writer_thread,
            sinks: config.sinks,
        })
    }

    /// The bound address (useful after binding port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.tcp.local_addr().map_err(|source| Error::Listen {
            addr: "the bound socket".into(),
            source,
        })
    }

    /// The router's state (counters).
    pub fn state(&self) -> &ListenerState {
        &self.state
    }

    /// Serves until `shutdown` completes, then finishes the requests in flight, stops the
    /// hand-off (an interrupted attempt is retried on the next start) and closes the store.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Stats, Error> {
        let addr = self.local_addr()?;
        let Listener {
            tcp,
            state,
            store,
            writer,
            writer_thread,
            sinks,
        } = self;
        let (stop_tx, stop_rx) = watch::channel(false);
        let dispatcher = tokio::spawn(handoff::run(
            store,
            writer.clone(),
            sinks,
            state.wake(),
            stop_rx,
        ));
        drop(writer);
        let app = router(state.clone());
        let tcp = tcp.tap_io(|stream| {
            // Small responses: do not let Nagle hold them back.
            let _ = stream.set_nodelay(true);
        });
        let served = axum::serve(tcp, app).with_graceful_shutdown(shutdown).await;
        let _ = stop_tx.send(true);
        let _ = dispatcher.await;
        let stats = state.stats();
        drop(state);
        let _ = tokio::task::spawn_blocking(move || writer_thread.join()).await;
        served.map_err(|source| Error::Listen {
            addr: addr.to_string(),
            source,
        })?;
        Ok(stats)
    }
}
