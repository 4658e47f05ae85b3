#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod amount;
pub mod batch;
pub mod calldata;
pub mod decode;
pub mod effects;
mod error;
pub mod limits;
pub mod log;
pub mod policy;
pub mod preimage;
pub mod rawtx;
pub mod recover;
pub mod request;
pub mod sign;
pub mod signer;
pub mod summary;
pub mod text;
pub mod verify;

pub use error::{CheckedBy, Error, Field, ParseError};
pub use log::{Checkpoint, SigningLog};
pub use policy::{Policy, Trusted};
pub use rawtx::RawTx;
pub use request::Token;
pub use request::{SignInput, SignRequest};
pub use sign::{SignedBundle, SignedTx, sign_and_log, sign_and_log_keys, sign_legacy};
pub use signer::{AlloySigner, TransactionSigner, sign_and_log_group, sign_and_log_with};
pub use verify::{Context, Nonce, NonceFacts, Verified, verify};
