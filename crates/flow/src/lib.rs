//! Safe flows over the token-bridge platform API.
//!
//! [`client::PlatformClient`] speaks the platform's wire format;
//! [`engine::Flows`] turns it into flows that never sign blind: every raw transaction
//! from outside is parsed strictly and checked against the intent before the
//! [`engine::Approver`] is asked for the key, and every signed transaction is in the
//! [`journal::Journal`] before it is submitted.
//!
//! The library never prints or prompts: progress goes through [`engine::Progress`],
//! confirmation and unlocking through [`engine::Approver`].

pub mod action;
pub mod airgap;
pub mod client;
pub mod engine;
pub mod error;
/// Bounded bodies, no proxy on loopback http, redacted URLs: shared with the webhook
/// client.
pub use bridgectl_http as http;
pub mod journal;
pub mod local;
pub mod rpc;
pub mod timing;

pub use error::Error;
