#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod error;
mod store;

pub use error::Error;
pub use store::{
    CARRY_SECS, CHECKPOINT_SLOT_BYTES, Columns, KeptCheckpoint, MAX_CARRIED, SIGNING_LOG_FILE,
    ShowFilter, SigningLogDb,
};
