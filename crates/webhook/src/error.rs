//! The one error type of the webhook crate.

use std::path::PathBuf;

/// What can go wrong in the webhook client, key file, store and listener.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The chain/network pair is not in the network table.
    #[error(transparent)]
    Network(#[from] bridgectl_web3::networks::UnsupportedNetwork),
    /// The name is not an event type of the web3 API.
    #[error(transparent)]
    EventType(#[from] bridgectl_web3::UnknownEventType),
    /// An event type or condition could not be built from what was given.
    #[error("invalid webhook {field}: {reason}")]
    Invalid {
        /// The field, e.g. [`crate::client::PERIOD`] (`condition.period`): the
        /// constants of [`crate::client`] name those of a condition.
        field: &'static str,
        /// What is wrong, with expected and found.
        reason: String,
    },
    /// A URL could not be used.
    #[error("invalid url {url:?}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The web3 token would travel in clear text to another machine.
    #[error(
        "refusing to send the web3 token over plain http to {host}: use https (plain http is only allowed to loopback)"
    )]
    InsecureUrl {
        /// The host that is not loopback.
        host: String,
    },
    /// No web3 token source was available.
    #[error("no web3 token: {0}")]
    NoToken(String),
    /// The token file could not be read or was empty.
    #[error("web3 token file {path}: {reason}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// What is wrong (never the token).
        reason: String,
    },
    /// The HTTP request itself failed (connection, timeout, TLS).
    #[error("{method} {url} failed")]
    Http {
        /// The method.
        method: &'static str,
        /// The URL (never holds the token).
        url: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// The answer's body could not be read: over the size cap, or the connection failed
    /// mid-body.
    #[error("{method} {url}")]
    Body {
        /// The method.
        method: &'static str,
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: crate::http::BodyError,
    },
    /// The web3 API answered with an error status.
    #[error("{method} {url}: the web3 api answered {status}: {message}")]
    Api {
        /// The method.
        method: &'static str,
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The `code`/`message` of the error body, or the body text.
        message: String,
    },
    /// The web3 API answered 2xx with a body of an unexpected shape.
    #[error("{method} {url}: unexpected response: {reason}")]
    Response {
        /// The method.
        method: &'static str,
        /// The URL.
        url: String,
        /// What did not match.
        reason: String,
    },
    /// No webhook with that subscription id.
    #[error("no webhook with subscriptionId {id} on {chain}/{network}")]
    NotFound {
        /// The subscription id.
        id: String,
        /// The chain.
        chain: String,
        /// The network.
        network: String,
    },
    /// A webhook was created and its signing key could not be kept: its deliveries
    /// could not be verified, so it was deleted again (or, if that failed too, must be).
    #[error(
        "webhook {id} was created but its signing key could not be kept{}",
        if *deleted { "; it was deleted again" } else { "; deleting it failed too: delete it, its deliveries cannot be verified" }
    )]
    KeyNotKept {
        /// Its subscription id.
        id: String,
        /// Whether it was deleted again.
        deleted: bool,
        /// Why the key could not be kept.
        #[source]
        source: Box<Error>,
    },
    /// The signing-key file could not be read or written.
    #[error("signing-key file {path}")]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The signing-key file is not ours, is corrupt, or is readable by others.
    #[error("signing-key file {path}: {reason}")]
    KeyFileFormat {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The event store failed.
    #[error("event store {path}")]
    Store {
        /// The SQLite file.
        path: PathBuf,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// The event store's file or directory could not be created.
    #[error("event store {path}")]
    StoreIo {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A write to the event store failed; the delivery was not acknowledged.
    #[error("event store {path}: write failed")]
    StoreWrite {
        /// The SQLite file.
        path: PathBuf,
        /// The SQLite error, shared by every request of the failed batch.
        #[source]
        source: std::sync::Arc<rusqlite::Error>,
    },
    /// The store's writer is gone (it failed or was shut down).
    #[error("event store {path}: the writer has stopped")]
    WriterGone {
        /// The SQLite file, or the PostgreSQL store (password hidden).
        path: PathBuf,
    },
    /// The listener could not bind or serve.
    #[error("listener on {addr}")]
    Listen {
        /// The address.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A listener setting is invalid.
    #[error("invalid listener {field}: {reason}")]
    ListenerConfig {
        /// The setting, e.g. `path`.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A blocking worker of the store panicked or was cancelled.
    #[error("the event store's worker stopped unexpectedly")]
    WorkerGone,
    /// The PostgreSQL store failed.
    #[cfg(feature = "postgres")]
    #[error("event store {location}")]
    Postgres {
        /// The store, password hidden.
        location: String,
        /// The driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A write to the PostgreSQL store failed; the delivery was not acknowledged.
    #[cfg(feature = "postgres")]
    #[error("event store {location}: write failed")]
    PostgresWrite {
        /// The store, password hidden.
        location: String,
        /// The driver's error, shared by every request of the failed batch.
        #[source]
        source: std::sync::Arc<tokio_postgres::Error>,
    },
    /// Something this build or this store cannot do.
    #[error("{what}")]
    Unsupported {
        /// What, and what to do instead.
        what: String,
    },
    /// The self-healing check could not restore a webhook.
    #[error("cannot restore webhook {subscription_id}: {reason}")]
    Heal {
        /// The subscription.
        subscription_id: String,
        /// Why.
        reason: String,
    },
    /// The load generator was asked for something unbounded or non-loopback.
    #[error("load generator: {0}")]
    Load(String),
}
