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
mod completers;
mod config;
mod deliveries;
mod exit;
mod files;
mod global;
mod opts;
mod output;
mod passphrase;
mod paths;
mod qr;
mod review;
mod session;
mod shutdown;
mod trust;

use std::process::ExitCode;
use std::time::Instant;

use clap::{CommandFactory, Parser};

fn main() -> ExitCode {
    session::STARTED.get_or_init(Instant::now);
    // Asked by a shell for completions (`COMPLETE=bash bridgectl -- ...`, set by the
    // script `bridgectl completions SHELL` prints): answer and exit.
    clap_complete::CompleteEnv::with_factory(cli::Cli::command).complete();
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let json = cli.global.json;
    match cli.run() {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`bridgectl history | head -1`): stop quietly, as every
        // Unix tool does.
        Err(err) if exit::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let code = exit::code_for(&err);
            let message = format!("{err:#}");
            let hint = exit::hint(&err);
            if json {
                output::json_error(code, &message, &exit::handles(&err), hint.as_deref());
            }
            #[allow(clippy::print_stderr)]
            {
                // Errors carry platform messages and request text: escaped on the way out.
                eprintln!("error: {}", bridgectl_tx::text::printable(&message));
                if let Some(hint) = &hint {
                    eprintln!("hint: {hint}");
                }
            }
            ExitCode::from(code as u8)
        }
    }
}

/// A command line clap refused (or `--help`, `--version`): clap's own text on stderr
/// (stdout for help), and with `--json` anywhere on the line the usage error as JSON on
/// stdout too, so that a script learns of it as of any other failure.
fn usage_error(e: &clap::Error) -> ExitCode {
    // Help and version go to stdout and exit 0; everything else is a usage error.
    if e.use_stderr() && std::env::args_os().any(|a| a == "--json") {
        // clap's error: the lines before its usage block, as one line.
        let text = e.to_string();
        let message: Vec<&str> = text
            .lines()
            .take_while(|l| !l.is_empty())
            .map(str::trim)
            .collect();
        let message = message.join(" ");
        // clap's own next step (`tip: a similar argument exists: '--out'`), after its
        // message: the JSON's hint.
        let tips: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("tip: "))
            .collect();
        let hint = (!tips.is_empty()).then(|| tips.join("; "));
        output::json_error(
            exit::Code::Usage,
            message.strip_prefix("error: ").unwrap_or(&message),
            &exit::Handles::default(),
            hint.as_deref(),
        );
    }
    let _ = e.print();
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(exit::Code::Usage as u8))
}
