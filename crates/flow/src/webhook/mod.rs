//! Webhooks of the web3 API: a client for their CRUD operations and a listener that never
//! loses an event.
//!
//! - [`networks`]: the one table of chains and networks the web3 API serves; every request
//!   is checked against it before anything is sent.
//! - [`client`]: create, list, get, update and delete webhooks, and obtain a web3 token.
//! - [`keys`]: the local 0600 file of signing keys returned on create, which the listener
//!   verifies `x-signature` against.
//! - [`signature`]: HMAC-SHA256 of the raw body, hex, compared in constant time.
//! - [`store`]: the SQLite store (WAL, `synchronous=FULL`, one batching writer thread).
//! - [`listener`]: the axum listener that answers 200 only once an event is durable.
//! - [`handoff`]: at-least-once hand-off of stored events to `--exec` and `--forward`.
//! - [`load`]: a bounded loopback load generator for tests and the benchmark.

pub mod client;
mod error;
pub mod handoff;
pub mod keys;
pub mod listener;
pub mod load;
pub mod store;

/// The network table and the delivery signature live in `bridgectl-web3`, shared with
/// the sandbox; re-exported here under their old paths.
pub use bridgectl_web3::{networks, signature};

#[cfg(test)]
mod tests;

pub use error::Error;
