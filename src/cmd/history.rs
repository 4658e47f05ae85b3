//! `bridgectl history [TXID]`: the journal: recent flows, or one flow with its steps.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::cli::GlobalOpts;

/// Arguments of `bridgectl history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Show this flow with every step.
    pub tx_id: Option<String>,
    /// How many flows to list.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Journal database [default: $XDG_STATE_HOME/bridgectl/journal.sqlite3].
    #[arg(long, env = "BRIDGECTL_JOURNAL", value_name = "FILE")]
    pub journal: Option<PathBuf>,
}

/// Runs `bridgectl history`.
pub fn run(global: &GlobalOpts, args: HistoryArgs) -> anyhow::Result<()> {
    let journal = crate::session::open_journal(args.journal.as_deref())?;
    if let Some(id) = &args.tx_id {
        let rec = journal
            .get(id)
            .map_err(|e| crate::exit::coded(crate::exit::Code::NotFound, e))?;
        let steps = journal.steps(id)?;
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
            crate::output::line(format_args!("  {}  {:<22} {}", s.at, s.step, s.detail))?;
        }
        return Ok(());
    }
    let flows = journal.list(args.limit)?;
    if global.json {
        return crate::output::json(&flows);
    }
    for f in flows {
        crate::output::line(format_args!(
            "{}  {}  {:<16} {:<10} {}",
            f.created_at,
            f.tx_id,
            f.kind,
            f.state.as_str(),
            f.tx_hash.as_deref().unwrap_or("-")
        ))?;
    }
    Ok(())
}
