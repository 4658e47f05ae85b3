//! `webhook ensure`: the self-healing check once (the library's `ensure::check`), and how
//! a check's report reads, here and beside `webhook listen --ensure`.

use std::path::PathBuf;

use bridgectl_webhook::ensure;
use bridgectl_webhook::keys::KeyFile;
use clap::Args;
use serde_json::json;

use super::connect::connect_api;
use super::events::gap_line;
use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::opts::Web3Api;
use crate::output;

// Arguments of `webhook ensure`.
#[derive(Debug, Args)]
pub struct EnsureArgs {
    /// Restore only webhooks created with this listener URL [default: every webhook in
    /// the key file].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Event store the gaps are recorded in (as for `listen`).
    #[arg(
        long,
        env = "BRIDGECTL_WEBHOOK_STORE",
        hide_env_values = true,
        value_name = "STORE"
    )]
    pub store: Option<String>,
    /// Signing-key file [default: $XDG_STATE_HOME/bridgectl/webhook-keys.json].
    #[arg(
        long,
        env = "BRIDGECTL_WEBHOOK_KEYS",
        hide_env_values = true,
        value_name = "FILE"
    )]
    pub keys: Option<PathBuf>,
    /// The web3 API.
    #[command(flatten)]
    pub web3: Web3Api,
}

/// Says what a check restored: one line per gap on stderr (stdout is the listener's).
pub(super) fn report_healing(json: bool, report: &ensure::Report) {
    for gap in &report.gaps {
        if json {
            if let Ok(line) = serde_json::to_string(&json!({ "restored": gap })) {
                output::note(line);
            }
        } else {
            output::note(format!("restored: {}", gap_line(gap)));
        }
    }
    report_failed(&report.failed);
}

/// Says which webhooks a check could not restore, and why: one line each on stderr.
fn report_failed(failed: &[(String, String)]) {
    for (id, why) in failed {
        output::note(format!(
            "ensure: webhook {}: {}",
            output::untrusted(id),
            output::untrusted(why)
        ));
    }
}

/// Runs `bridgectl webhook ensure`.
pub(super) async fn run(global: &GlobalOpts, args: EnsureArgs) -> anyhow::Result<()> {
    let keys = KeyFile::new(crate::paths::webhook_keys(&args.keys)?);
    let client = connect_api(global, &args.web3).await?;
    let store = crate::paths::webhook_store(&args.store)?
        .open(Default::default())
        .await?;
    let report = ensure::check(&client, &keys, store.as_ref(), args.url.as_deref()).await;
    store.close().await?;
    let report = report?;
    if global.json {
        output::json(&report)?;
    } else {
        output::line(format!(
            "checked {} webhooks: {} restored, {} could not be",
            report.checked,
            report.gaps.len(),
            report.failed.len()
        ))?;
        for gap in &report.gaps {
            output::line(gap_line(gap))?;
        }
    }
    if report.failed.is_empty() {
        Ok(())
    } else {
        report_failed(&report.failed);
        Err(coded(Code::Failure, "some webhooks could not be restored"))
    }
}
