//! Webhooks of the platform's web3 API: a client for their CRUD operations, a listener
//! that never loses an event, its hand-off, and the stores behind it.
//!
//! This crate knows nothing of the flows (redeem, swap): a wallet that embeds
//! `bridgectl-flow` does not compile a web server, and a listener does not compile the
//! signing code.
//!
//! - [`client`]: create, list, get, update and delete webhooks, and obtain a web3 token.
//! - [`keys`]: the local 0600 file of signing keys returned on create, which the listener
//!   verifies `x-signature` against, with what is needed to re-create a webhook.
//! - [`store`]: the [`store::EventStore`] seam; SQLite (embedded, the default) and
//!   PostgreSQL (feature `postgres`, for two or more replicas on one database).
//! - [`listener`]: the axum listener that answers 200 only once an event is durable, and
//!   that a stranger on the network cannot exhaust.
//! - [`handoff`]: leased hand-off of stored events to `--exec` and `--forward`.
//! - [`ensure`]: the self-healing check: re-creates or re-activates webhooks the
//!   platform removed or deactivated, and records the gap.
//! - `load` (feature `bench`, and in this crate's tests): a bounded loopback load
//!   generator for tests and benchmarks.
//!
//! The network table, the event types and the delivery signature are
//! `bridgectl-web3`'s, shared with the sandbox.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

/// Bounded bodies, no proxy on loopback http, redacted URLs: shared with the flows'
/// clients.
pub use bridgectl_http as http;
pub mod client;
pub mod ensure;
mod error;
pub mod handoff;
pub mod keys;
pub mod listener;
#[cfg(any(test, feature = "bench"))]
pub mod load;
pub mod store;

pub use bridgectl_web3::{EventType, networks, signature};

#[cfg(test)]
mod tests;

pub use error::Error;
