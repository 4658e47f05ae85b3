#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod error;
mod history;
mod kept;
mod migrate;
mod signing;
mod store;
mod walk;

pub use error::Error;
pub use history::{HISTORY_FORMAT_VERSION, History, HistoryMetadata, KeyHistory};
pub use kept::{CARRY_SECS, CHECKPOINT_SLOT_BYTES, KeptCheckpoint, MAX_CARRIED, MAX_WATERMARKS};
pub use migrate::CopiedLog;
pub use signing::AcknowledgementPlan;
pub use store::{Columns, SIGNING_LOG_FILE, ShowFilter, SigningLogDb};
