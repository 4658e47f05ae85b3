#![doc = include_str!("../README.md")]
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

/// The one secret type of every bridgectl crate: the web3 token, an access key's secret,
/// what a [`keys::SigningKey`] holds.
pub use bridgectl_secret::Secret;
pub use bridgectl_web3::{EventType, networks, signature};

pub use error::Error;
