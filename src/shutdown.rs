//! Stopping long-running commands (`sandbox`, `webhook listen`, `webhook events
//! --follow`) cleanly on Ctrl-C or SIGTERM.

use std::future::Future;

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};

/// Registers for SIGINT and SIGTERM at once and returns a future that completes on
/// either. Registering before the command announces that it is ready matters: a signal
/// that arrives right after the announcement must stop it cleanly rather than kill the
/// process with the default action. Call it inside the runtime.
pub fn on_signal() -> anyhow::Result<impl Future<Output = ()>> {
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for Ctrl-C")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}
