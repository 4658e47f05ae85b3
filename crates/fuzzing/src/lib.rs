//! The properties the fuzz targets check, one function per target, each taking the raw
//! fuzz input. A broken property panics; an input that is merely invalid returns.
//!
//! Two drivers call these: the cargo-fuzz targets in `fuzz/` (nightly, coverage-guided)
//! and the `regressions` test of this crate, which replays every committed input under
//! `fuzz/regressions/<target>/` on stable, so CI keeps every crash found fixed. That
//! folder holds each crash reproducer (`crash-*`) and a coverage-minimised seed set
//! (`cargo fuzz cmin` of the campaigns' corpora); `bench/fuzz.sh` runs a campaign and
//! `bench/fuzz-cmin.sh` merges its corpus back into the folder, keeping it small.
//!
//! Inputs are plain bytes with a small convention per target (documented on each
//! function), so the corpora stay readable and seeds can be written by hand.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod amount;
mod batch_airgap;
mod batch_file;
mod calldata;
mod envelope;
mod input;
mod json;
mod key_file;
mod tx;
mod ur;
mod webhook;

pub use amount::amount;
pub use batch_airgap::{batch_request, signed_batch};
pub use batch_file::batch_file;
pub use calldata::calldata;
pub use envelope::envelope;
pub use json::json;
pub use key_file::key_file;
pub use tx::{rawtx_json, sign_input, signed_bundle, tx_decode};
pub use ur::ur_frames;
pub use webhook::webhook_delivery;

/// A target: checks its properties on one input, panicking when one breaks.
pub type Target = fn(&[u8]);

/// Every target by name, as the fuzz targets and the corpus folders call them.
pub const TARGETS: &[(&str, Target)] = &[
    ("amount", amount),
    ("batch_file", batch_file),
    ("batch_request", batch_request),
    ("calldata", calldata),
    ("envelope", envelope),
    ("json", json),
    ("key_file", key_file),
    ("rawtx_json", rawtx_json),
    ("sign_input", sign_input),
    ("signed_batch", signed_batch),
    ("signed_bundle", signed_bundle),
    ("tx_decode", tx_decode),
    ("ur_frames", ur_frames),
    ("webhook_delivery", webhook_delivery),
];
