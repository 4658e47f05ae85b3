//! The facts of the platform's web3 (webhook) API that both sides of bridgectl need:
//! the client and listener in `bridgectl-webhook`, and the simulator in
//! `bridgectl-sandbox`. One table, one signature function: a correction (an inferred
//! chain family turns out different, the signature scheme is published, a new event type)
//! is one edit here.
//!
//! ```
//! use bridgectl_web3::{EventType, networks, signature};
//! assert!(networks::check("ethereum", "sepolia").is_ok());
//! assert!(networks::check("polygon", "sepolia").is_err());
//! let sig = signature::sign(b"key", b"{}");
//! assert!(signature::verify(b"key", b"{}", &sig));
//! assert_eq!("block_period".parse::<EventType>(), Ok(EventType::BlockPeriod));
//! ```
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod event_type;
pub mod networks;
pub mod signature;

pub use event_type::{EventType, UnknownEventType};
