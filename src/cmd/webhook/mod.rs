//! `bridgectl webhook`: the web3 API's webhooks (create, list, get, update, delete), a
//! listener that never loses an event (`listen`), a reader of what it stored (`events`),
//! and the self-healing check (`ensure`, or `listen --ensure`).
//!
//! Web3 token, in this order: `--web3-token-file` / `BRIDGECTL_WEB3_TOKEN_FILE` (first
//! line), `BRIDGECTL_WEB3_TOKEN`, then a key exchange with `BRIDGECTL_WEB3_NODE_ID`,
//! `BRIDGECTL_WEB3_KEY_ID` and `BRIDGECTL_WEB3_KEY_SECRET`. Never argv, never printed.
//!
//! Files (defaults under `$XDG_STATE_HOME/bridgectl/`):
//! - `webhook-keys.json` (`--keys`, `BRIDGECTL_WEBHOOK_KEYS`): signing keys from `create`,
//!   mode 0600; `listen` verifies `x-signature` against them.
//! - `webhook-events.sqlite` (`--store`, `BRIDGECTL_WEBHOOK_STORE`): the listener's store;
//!   `--store postgres://...` puts it in PostgreSQL instead, shared by replicas.
//!
//! One module per job: `manage` (create, list, get, update, delete), `listen`, `events`
//! (what the listener stored), `ensure` (the self-healing check, once); `connect` finds the
//! web3 API, its chain/network and its token for them.

mod connect;
mod ensure;
mod events;
mod listen;
mod manage;

use anyhow::Context as _;
use clap::Subcommand;

use crate::global::GlobalOpts;

/// `bridgectl webhook ...`
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum WebhookCommand {
    /// Create a webhook; its signing key is stored locally (0600) for `listen`.
    Create(manage::CreateArgs),
    /// List the webhooks of a chain/network.
    List(manage::ListArgs),
    /// Show one webhook.
    Get(manage::IdArgs),
    /// Change a webhook: `--active false` stops its deliveries.
    Update(manage::UpdateArgs),
    /// Delete a webhook for good (and its stored signing key).
    Delete(manage::IdArgs),
    /// Receive deliveries: answer 200 only once each is durable in the store.
    Listen(listen::ListenArgs),
    /// Show what the listener stored, and the gaps `ensure` found.
    Events(events::EventsArgs),
    /// Restore this listener's webhooks that the platform removed or deactivated, once;
    /// each restored one leaves a gap record.
    Ensure(ensure::EnsureArgs),
}

/// Runs `bridgectl webhook ...`.
pub fn run(global: &GlobalOpts, cmd: WebhookCommand) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    match cmd {
        WebhookCommand::Create(args) => rt.block_on(manage::create(global, args)),
        WebhookCommand::List(args) => rt.block_on(manage::list(global, args)),
        WebhookCommand::Get(args) => rt.block_on(manage::get(global, args)),
        WebhookCommand::Update(args) => rt.block_on(manage::update(global, args)),
        WebhookCommand::Delete(args) => rt.block_on(manage::delete(global, args)),
        WebhookCommand::Listen(args) => rt.block_on(listen::run(global, args)),
        WebhookCommand::Events(args) => rt.block_on(events::run(global, args)),
        WebhookCommand::Ensure(args) => rt.block_on(ensure::run(global, args)),
    }
}
