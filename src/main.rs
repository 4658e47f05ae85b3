//! `bridgectl`: sign and submit token-bridge transactions without handing the platform
//! the private key.
//!
//! The binary owns the terminal: prompts, progress, tables and JSON. Libraries under
//! `crates/` never print. Errors travel as `anyhow::Error` here and are mapped to the
//! documented exit codes in [`exit`].

mod accounts;
mod approver;
mod auth;
mod cli;
mod cmd;
mod config;
mod deliveries;
mod exit;
mod files;
mod opts;
mod output;
mod passphrase;
mod paths;
mod review;
mod session;
mod shutdown;
mod trust;

use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Instant;

use clap::Parser;

/// When the process started, for `BRIDGECTL_TIMINGS`.
static STARTED: OnceLock<Instant> = OnceLock::new();

fn main() -> ExitCode {
    STARTED.get_or_init(Instant::now);
    let cli = cli::Cli::parse();
    match cmd::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`bridgectl history | head -1`): stop quietly, as every
        // Unix tool does.
        Err(err) if exit::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let code = exit::code_for(&err);
            #[allow(clippy::print_stderr)]
            {
                // Errors carry platform messages and request text: escaped on the way out.
                eprintln!(
                    "error: {}",
                    bridgectl_tx::text::printable(&format!("{err:#}"))
                );
                if let Some(hint) = exit::hint(&err) {
                    eprintln!("hint: {hint}");
                }
            }
            ExitCode::from(code as u8)
        }
    }
}
