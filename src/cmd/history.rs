//! `bridgectl history [TXID]`: the journal: recent flows, or one flow (named by its txId
//! or a unique prefix of it) with its steps.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::cli::GlobalOpts;

/// Arguments of `bridgectl history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Show this flow with every step: its txId or the start of it (`9a64c6`).
    pub tx_id: Option<String>,
    /// How many flows to list.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
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
            return crate::output::json(&json!({"flow": rec, "steps": steps}));
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
    let flows = journal.list(args.limit)?;
    if global.json {
        return crate::output::json(&flows);
    }
    if flows.is_empty() {
        crate::output::note("no flows in the journal yet");
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
    Ok(())
}
