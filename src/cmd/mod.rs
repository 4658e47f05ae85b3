//! One module per subcommand, each with an `*Args` struct and a `run()`.

pub mod action;
pub mod balance;
pub mod batch;
pub mod completions;
pub mod demo;
pub mod history;
pub mod journal;
pub mod key;
pub mod log;
pub mod redeem;
pub mod replace;
pub mod resume;
pub mod sandbox;
pub mod sign;
pub mod state;
pub mod status;
pub mod submit;
pub mod swap;
pub mod transfer;
pub mod tx;
pub mod webhook;
