//! `bridgectl history [TXID]`: the journal: recent flows, or one flow (named by its txId
//! or a unique prefix of it) with its steps. The text list hides flows that failed before
//! anything was signed and cannot be resumed (refused, the action failed, the platform
//! unreachable), and says how many it hid; `--all` shows them. `--json` always lists
//! every flow: a script must not miss a failure because a person's view hides it.

use std::path::PathBuf;

use bridgectl_flow::journal::FlowRecord;
use bridgectl_flow::{FlowState, Journal};
use clap::Args;
use serde_json::json;

use crate::cli::GlobalOpts;

/// Arguments of `bridgectl history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Show this flow with every step: its txId, the start of it (`9a64c6`), or the
    /// hash of a transaction it signed.
    pub tx_id: Option<String>,
    /// How many flows to list.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Also list the flows that failed before anything was signed (refused, the action
    /// failed, the platform unreachable); `--json` always lists them.
    #[arg(long)]
    pub all: bool,
    /// Journal database [default: $XDG_STATE_HOME/bridgectl/journal.sqlite3].
    #[arg(long, env = "BRIDGECTL_JOURNAL", value_name = "FILE")]
    pub journal: Option<PathBuf>,
}

/// The amount a flow was asked to move, in base units, as its intent recorded it.
fn amount(intent: &serde_json::Value) -> Option<String> {
    let v = intent
        .get("amount")
        .or_else(|| intent.get("inputs").and_then(|i| i.get("_amount")))
        .or_else(|| intent.get("inputs").and_then(|i| i.get("_value")))?;
    Some(v.as_str().map_or_else(|| v.to_string(), str::to_owned))
}

/// Runs `bridgectl history`.
pub fn run(global: &GlobalOpts, args: HistoryArgs) -> anyhow::Result<()> {
    let journal = crate::session::open_journal(args.journal.as_deref())?;
    if let Some(id) = &args.tx_id {
        let rec = journal.find(id)?;
        let steps = journal.steps(&rec.tx_id)?;
        if global.json {
            let signatures = journal.signatures(&rec.tx_id)?;
            return crate::output::json(
                &json!({"flow": rec, "steps": steps, "signatures": signatures}),
            );
        }
        crate::output::line(format_args!(
            "{} {} {} from {} tx {}",
            rec.tx_id,
            rec.kind,
            rec.state.as_str(),
            rec.from.as_deref().unwrap_or("-"),
            rec.tx_hash.as_deref().unwrap_or("-")
        ))?;
        for s in steps {
            crate::output::line(format_args!(
                "  {}  {:<22} {}",
                s.at,
                s.step,
                crate::output::untrusted(&s.detail.to_string())
            ))?;
        }
        return Ok(());
    }
    if global.json {
        return crate::output::json(&journal.list(args.limit)?);
    }
    let (flows, hidden) = shown(&journal, args.limit, args.all)?;
    let footer = || {
        if hidden > 0 {
            crate::output::note(format_args!(
                "{hidden} flow{} that failed before anything was signed {} hidden: \
                 `bridgectl history --all` shows {}",
                if hidden == 1 { "" } else { "s" },
                if hidden == 1 { "is" } else { "are" },
                if hidden == 1 { "it" } else { "them" },
            ));
        }
    };
    if flows.is_empty() {
        if hidden == 0 {
            crate::output::note("no flows in the journal yet");
        }
        footer();
        return Ok(());
    }
    crate::output::line(format_args!(
        "{:<20}  {:<36}  {:<16} {:<9} {:>26}  TX",
        "CREATED (UTC)", "TXID", "KIND", "STATE", "AMOUNT (base units)"
    ))?;
    for f in flows {
        crate::output::line(format_args!(
            "{:<20}  {:<36}  {:<16} {:<9} {:>26}  {}",
            f.created_at.trim_end_matches('Z').replace('T', " "),
            f.tx_id,
            f.kind,
            f.state.as_str(),
            amount(&f.intent).unwrap_or_else(|| "-".into()),
            f.tx_hash.as_deref().unwrap_or("-")
        ))?;
    }
    footer();
    Ok(())
}

/// A flow a person need not see by default: it failed before anything was signed, and
/// cannot be taken up again (one stopped at its approval can: it is shown).
fn failed_before_signing(journal: &Journal, f: &FlowRecord) -> bool {
    f.state == FlowState::Failed && f.signed_tx.is_none() && !bridgectl_flow::can_resume(journal, f)
}

/// The newest `limit` flows to list, and how many newer ones were hidden on the way
/// (none with `all`).
fn shown(journal: &Journal, limit: usize, all: bool) -> anyhow::Result<(Vec<FlowRecord>, usize)> {
    if all {
        return Ok((journal.list(limit)?, 0));
    }
    // Hidden flows do not take a place of the limit: read further back, within reason.
    let window = journal.list(limit.saturating_mul(5).saturating_add(100))?;
    let mut flows = Vec::with_capacity(limit);
    let mut hidden = 0;
    for f in window {
        if flows.len() == limit {
            break;
        }
        if failed_before_signing(journal, &f) {
            hidden += 1;
        } else {
            flows.push(f);
        }
    }
    Ok((flows, hidden))
}
