//! The facts of the platform's web3 (webhook) API that both sides of bridgectl need:
//! the client and listener in `bridgectl-flow`, and the simulator in
//! `bridgectl-sandbox`. One table, one signature function: a correction (an inferred
//! chain family turns out different, the signature scheme is published) is one edit here.
//!
//! ```
//! use bridgectl_web3::{networks, signature};
//! assert!(networks::check("ethereum", "sepolia").is_ok());
//! assert!(networks::check("polygon", "sepolia").is_err());
//! let sig = signature::sign(b"key", b"{}");
//! assert!(signature::verify(b"key", b"{}", &sig));
//! ```

pub mod networks;
pub mod signature;

/// Event types the web3 API accepts (platform-facts.md, "Webhooks").
pub const EVENT_TYPES: &[&str] = &[
    "ADDRESS_ACTIVITY",
    "TRANSACTION",
    "MINED_TRANSACTION",
    "SUCCESSFUL_TRANSACTION",
    "FAILED_TRANSACTION",
    "TOKEN_TRANSFER",
    "BELOW_THRESHOLD_BALANCE",
    "BLOCK_PERIOD",
    "BLOCK_LIST_CALLER",
    "ALLOW_LIST_CALLER",
    "LOG",
];
