//! All CLI integration tests, in one test binary (ripgrep style): one link step, and
//! every test gets a fresh temp dir and a command with the user's environment stripped.

#[macro_use]
mod macros;
mod live;
mod secrets;
mod util;

mod airgap_batch;
mod batch;
mod clock;
mod completions;
mod durability;
mod ends;
mod errors;
mod flow;
mod follow;
mod help;
mod http;
mod json;
mod key;
mod library_words;
mod log;
mod names;
mod offline;
mod qr;
mod readme;
mod reorg;
mod replace;
mod reset;
mod resume;
mod sandbox;
mod shared;
mod sign;
mod signer;
mod tty;
mod webhook;
