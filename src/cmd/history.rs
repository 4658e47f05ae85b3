//! `bridgectl history [TXID]`: the journal: recent flows, or one flow (named by its txId
//! or a unique prefix of it) with its steps. The text list hides flows that failed before
//! anything was signed and cannot be resumed (refused, the action failed, the platform
//! unreachable), and says how many it hid; `--all` shows them. `--json` always lists
//! every flow: a script must not miss a failure because a person's view hides it.

use bridgectl_flow::journal::FlowRecord;
use bridgectl_flow::{FlowKind, FlowState, Journal};
use clap::Args;
use serde_json::json;

use crate::global::GlobalOpts;

// Arguments of `bridgectl history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Show this flow with every step: its txId, the start of it (`9a64c6`), or the
    /// hash of a transaction it signed.
    #[arg(value_name = "TXID|HASH", add = crate::completers::flow_ids())]
    pub tx_id: Option<String>,
    /// How many flows to list, newest first (at least 1); when the journal holds more
    /// that the list would show, a line on stderr says so (`--json` too: stdout stays
    /// one document).
    #[arg(long, default_value_t = 20, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub limit: usize,
    /// Also list the flows that failed before anything was signed (refused, the action
    /// failed, the platform unreachable); `--json` always lists them.
    #[arg(long)]
    pub all: bool,
    /// Show amounts in base units (as `--json` does) instead of token units.
    #[arg(long)]
    pub base_units: bool,
    #[command(flatten)]
    pub journal: crate::opts::JournalOpt,
}

/// The amount a flow was asked to move, in base units, as its intent recorded it.
fn amount(intent: &serde_json::Value) -> Option<String> {
    let v = intent
        .get("amount")
        .or_else(|| intent.get("inputs").and_then(|i| i.get("_amount")))
        .or_else(|| intent.get("inputs").and_then(|i| i.get("_value")))?;
    Some(v.as_str().map_or_else(|| v.to_string(), str::to_owned))
}

/// The call an action's intent recorded: its function, callee and chain.
fn call(f: &FlowRecord) -> Option<(Option<&str>, alloy_primitives::Address, u64)> {
    let intent = f.intent.get("intent")?;
    Some((
        intent.get("function").and_then(|v| v.as_str()),
        intent.get("to")?.as_str()?.parse().ok()?,
        intent.get("chainId")?.as_u64()?,
    ))
}

/// How the KIND column names a flow: an action whose call is the bridge's redeem (the
/// profile's ST contract's `redeem`, as `action exec redeem --out` writes for the air
/// gap) is a redeem, said to be one by way of an action.
fn kind(f: &FlowRecord, bridge: Option<&bridgectl_flow::Bridge>) -> String {
    match (f.kind, call(f), bridge) {
        (FlowKind::Action, Some((Some("redeem"), to, chain)), Some(b))
            if to == b.side.token && chain == b.side.chain_id =>
        {
            "redeem (action)".into()
        }
        _ => f.kind.to_string(),
    }
}

/// The token a flow moves, from what its intent recorded, else from the profile: a
/// request's own token (symbol and decimals), a transfer's symbol, a swap's MT, a
/// redeem's ST, an action's callee when the profile names it as a token. `None` when
/// neither says (an action on another contract).
fn token(
    f: &FlowRecord,
    bridge: Option<&bridgectl_flow::Bridge>,
    tokens: &[bridgectl_tx::policy::TrustedContract],
) -> Option<(String, u8)> {
    let intent = &f.intent;
    if let Some(t) = intent.get("intent").and_then(|i| i.get("token"))
        && let (Some(symbol), Some(decimals)) = (
            t.get("symbol").and_then(|s| s.as_str()),
            t.get("decimals").and_then(|d| d.as_u64()),
        )
    {
        return Some((symbol.to_owned(), u8::try_from(decimals).ok()?));
    }
    if let Some((_, to, chain)) = call(f)
        && let Some(t) = tokens
            .iter()
            .find(|c| c.address == to && c.chain_id == chain)
            .and_then(|c| c.token.as_ref())
    {
        return Some((t.symbol.clone(), t.decimals));
    }
    let bridge = bridge?;
    let side = match (f.kind, intent.get("token").and_then(|t| t.as_str())) {
        (_, Some(symbol)) => [&bridge.main, &bridge.side]
            .into_iter()
            .find(|s| s.symbol == symbol)?,
        (FlowKind::Swap, None) => &bridge.main,
        (FlowKind::Redeem, None) => &bridge.side,
        _ => return None,
    };
    Some((side.symbol.clone(), side.decimals))
}

/// The amount and token columns of a flow: token units with the symbol, or base units
/// (when asked, or when the token is not known).
fn amount_cells(
    f: &FlowRecord,
    bridge: Option<&bridgectl_flow::Bridge>,
    tokens: &[bridgectl_tx::policy::TrustedContract],
    base_units: bool,
) -> (String, String) {
    let Some(base) = amount(&f.intent) else {
        return ("-".into(), String::new());
    };
    let units = match (base_units, token(f, bridge, tokens)) {
        (false, Some((symbol, decimals))) => base
            .parse()
            .ok()
            .and_then(|v| bridgectl_tx::amount::format_units(v, decimals).ok())
            .map(|text| (text, symbol)),
        _ => None,
    };
    units.unwrap_or_else(|| (base, "(base units)".into()))
}

/// Runs `bridgectl history`.
pub fn run(global: &GlobalOpts, args: HistoryArgs) -> anyhow::Result<()> {
    let journal = args.journal.open()?;
    if let Some(id) = &args.tx_id {
        let rec = journal.find(id)?;
        let steps = journal.steps(&rec.tx_id)?;
        if global.json {
            let signatures = journal.signatures(&rec.tx_id)?;
            return crate::output::json(
                &json!({"flow": rec, "steps": steps, "signatures": signatures}),
            );
        }
        let (bridge, tokens) = profile(global);
        let (amount, token) = amount_cells(&rec, bridge.as_ref(), &tokens, args.base_units);
        crate::output::line(format_args!(
            "{} {} {}{} from {} tx {}",
            rec.tx_id,
            kind(&rec, bridge.as_ref()),
            rec.state.as_str(),
            if amount == "-" {
                String::new()
            } else {
                format!(" {amount} {}", crate::output::untrusted(&token))
            },
            rec.from
                .as_deref()
                .map_or_else(|| "-".to_owned(), crate::output::checksummed_text),
            rec.tx_hash.as_deref().unwrap_or("-")
        ))?;
        for s in steps {
            // The journal's blobs as every document spells addresses (EIP-55).
            let detail = crate::output::checksummed(s.detail);
            crate::output::line(format_args!(
                "  {}  {:<22} {}",
                s.at,
                s.step,
                crate::output::untrusted(&detail.to_string())
            ))?;
        }
        return Ok(());
    }
    if global.json {
        let (flows, more) = newest(&journal, args.limit)?;
        crate::output::json(&flows)?;
        if more {
            more_note(args.limit);
        }
        return Ok(());
    }
    let (flows, hidden, more) = shown(&journal, args.limit, args.all)?;
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
    let (bridge, tokens) = profile(global);
    let rows: Vec<Vec<String>> = flows
        .iter()
        .map(|f| {
            let (amount, token) = amount_cells(f, bridge.as_ref(), &tokens, args.base_units);
            vec![
                f.created_at.trim_end_matches('Z').replace('T', " "),
                f.tx_id.clone(),
                kind(f, bridge.as_ref()),
                f.state.as_str().to_owned(),
                amount,
                crate::output::untrusted(&token).into_owned(),
                f.tx_hash.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    crate::output::table(
        &[
            "CREATED (UTC)",
            "TXID",
            "KIND",
            "STATE",
            "AMOUNT",
            "TOKEN",
            "TX",
        ],
        &[4],
        &rows,
    )?;
    footer();
    if more {
        more_note(args.limit);
    }
    Ok(())
}

/// The profile's bridge and token contracts: they name the tokens of flows whose intent
/// does not; without a profile, those amounts stay in base units.
fn profile(
    global: &GlobalOpts,
) -> (
    Option<bridgectl_flow::Bridge>,
    Vec<bridgectl_tx::policy::TrustedContract>,
) {
    let bridge = crate::config::load_profile(global)
        .ok()
        .and_then(|p| p.bridge().ok());
    (bridge, crate::output::profile_tokens(global))
}

/// The newest `limit` flows, and whether the journal holds more.
fn newest(journal: &Journal, limit: usize) -> anyhow::Result<(Vec<FlowRecord>, bool)> {
    let mut flows = journal.list(limit.saturating_add(1))?;
    let more = flows.len() > limit;
    flows.truncate(limit);
    Ok((flows, more))
}

/// Says that the list stopped at `limit` with more flows in the journal: a script that
/// reads 20 records must not take them for all there are.
fn more_note(limit: usize) {
    let listed = if limit == 1 {
        "the newest flow is listed".to_owned()
    } else {
        format!("the {limit} newest flows are listed")
    };
    crate::output::note(format_args!(
        "{listed}; the journal holds more: `--limit N` lists N"
    ));
}

/// A flow a person need not see by default: it failed before anything was signed, and
/// cannot be taken up again (one stopped at its approval can: it is shown).
fn failed_before_signing(journal: &Journal, f: &FlowRecord) -> bool {
    f.state == FlowState::Failed && f.signed_tx.is_none() && !bridgectl_flow::can_resume(journal, f)
}

/// The newest `limit` flows to list, how many newer ones were hidden on the way (none
/// with `all`), and whether older flows to show are left out.
fn shown(
    journal: &Journal,
    limit: usize,
    all: bool,
) -> anyhow::Result<(Vec<FlowRecord>, usize, bool)> {
    if all {
        let (flows, more) = newest(journal, limit)?;
        return Ok((flows, 0, more));
    }
    // Hidden flows do not take a place of the limit: read further back, within reason.
    let window = journal.list(limit.saturating_mul(5).saturating_add(100))?;
    let mut flows = Vec::with_capacity(limit);
    let mut hidden = 0;
    let mut more = false;
    for f in window {
        if failed_before_signing(journal, &f) {
            if flows.len() < limit {
                hidden += 1;
            }
        } else if flows.len() == limit {
            more = true;
            break;
        } else {
            flows.push(f);
        }
    }
    Ok((flows, hidden, more))
}
