//! The flow crate's tests against real parts (the sandbox over anvil chains, example
//! programs run as processes, a platform stub over HTTP), one module per concern, in one
//! binary: cargo runs test binaries one after another, the tests of one binary side by
//! side, and most of these wait on chains more than they compute.
//!
//! `readme_stall.rs` stays a binary of its own: it measures how long a current-thread
//! runtime is held up, which tests running beside it would blur.

#[path = "../common/mod.rs"]
mod common;

mod clock;
mod example;
mod external_signer;
mod journal_before_send;
mod offline_batch;
mod refusal_paths;
mod resume_at_approval;
