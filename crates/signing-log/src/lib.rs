#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod error;
mod store;

pub use error::Error;
pub use store::{
    CHECKPOINT_SLOT_BYTES, Columns, KeptCheckpoint, SIGNING_LOG_FILE, ShowFilter, SigningLogDb,
};
