#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod amount;
pub mod batch;
pub mod calldata;
pub mod decode;
pub mod effects;
mod error;
pub mod limits;
pub mod local_signing;
pub mod policy;
pub mod preimage;
pub mod rawtx;
pub mod recover;
pub mod request;
pub mod signer;
pub mod signing_log;
pub mod summary;
pub mod text;
pub mod verify;
pub mod watermark;

pub use error::{CheckedBy, Error, Expectation, Field, NonceSource, ParseError};
pub use local_signing::{SignedBundle, SignedTx, sign_and_log, sign_and_log_keys, sign_legacy};
pub use policy::{Policy, Trusted};
pub use rawtx::RawTx;
pub use request::Token;
pub use request::{SignInput, SignRequest};
pub use signer::{
    AlloySigner, BoxedSigner, TransactionSigner, sign_and_log_group, sign_and_log_with,
};
pub use signing_log::{Checkpoint, CreditClaim, SigningLog};
pub use verify::{Context, Nonce, NonceFacts, Verified, verify};
