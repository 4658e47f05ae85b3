//! `bridgectl status TXID|HASH`: what became of a flow, asked of the chain and the
//! platform now. The flow is found in the journal by its txId, a unique start of it, or
//! the hash of its signed transaction; the node is asked for the receipt, and for a
//! redeem the platform for its redemption (operation 5), for a swap its own ST credit.
//! An end observed is journaled (`completed`, `failed`; a flow that is over is never
//! changed). A flow still pending is not an error. A hash the journal does not know is
//! still asked of both nodes and the platform: exit 0 if either knows it, else 6.

use bridgectl_flow::rpc::TxPresence;
use bridgectl_flow::{FlowState, FlowStatus, Submitter};
use clap::Args;

use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::opts::PlatformOpts;
use crate::session::Session;

// Arguments of `bridgectl status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The flow's txId (or a unique start of it), or a transaction hash (`0x` and 64
    /// hex digits).
    #[arg(value_name = "TXID|HASH", add = crate::completers::flow_ids())]
    pub id: String,
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
}

/// Runs `bridgectl status`.
pub fn run(global: &GlobalOpts, args: StatusArgs) -> anyhow::Result<()> {
    let session = Session::for_sending(global, &args.platform)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let status = session.runtime.block_on(flows.status(&args.id))?;
    if global.json {
        crate::output::json(&status)?;
    } else {
        for line in describe(&status, flows.bridge().ok()) {
            crate::output::line(line)?;
        }
    }
    if status.found() {
        Ok(())
    } else {
        Err(coded(
            Code::NotFound,
            format!(
                "no flow in the journal, no node and not the platform know {}",
                args.id
            ),
        ))
    }
}

/// The lines `status` prints for `s`; amounts in the tokens of `bridge`, when known.
fn describe(s: &FlowStatus, bridge: Option<&bridgectl_flow::Bridge>) -> Vec<String> {
    let mut lines = Vec::new();
    let hash = s.tx_hash.map_or_else(|| "-".into(), |h| h.to_string());
    let end = crate::output::flow_end(&FlowStatus {
        redemption: None,
        unobserved: Vec::new(),
        reorgs: Vec::new(),
        ..s.clone()
    });
    match (&s.tx_id, s.state, s.previous_state) {
        (Some(id), Some(state), Some(was)) if state != was => lines.push(format!(
            "flow {id} {}: {end} (was {})",
            s.kind.map_or("-", |k| k.as_str()),
            was.as_str()
        )),
        (Some(id), Some(FlowState::Retired), _) => lines.push(format!(
            "flow {id} {}: retired (chain reset)",
            s.kind.map_or("-", |k| k.as_str()),
        )),
        (Some(id), Some(_), _) => lines.push(format!(
            "flow {id} {}: {end}",
            s.kind.map_or("-", |k| k.as_str()),
        )),
        _ => lines.push(format!("tx {hash}: no flow in the journal holds it")),
    }
    match &s.receipt {
        Some(r) => lines.push(format!(
            "tx {hash}: mined in block {}{}",
            r.block_number,
            if r.success { "" } else { ", reverted" }
        )),
        None if s.state == Some(FlowState::Retired) => {}
        None if s.tx_hash.is_some() => lines.push(match s.tx_presence {
            Some(TxPresence::Unknown) => format!(
                "tx {hash}: not mined, dropped by the node (it does not know it): \
                 `bridgectl resume` sends it again, `replace` or `cancel` use its nonce"
            ),
            Some(p) => format!("tx {hash}: not mined: {}", p.describe()),
            None => format!("tx {hash}: not mined (yet)"),
        }),
        None => {}
    }
    if let Some(r) = &s.redemption {
        lines.push(format!(
            "redemption {}",
            crate::output::untrusted(&r.status)
        ));
        if let Some(paid) = bridge.and_then(|b| crate::output::payout_line(s, &b.main)) {
            lines.push(paid);
        }
    } else if s.ended_by == Some(bridgectl_flow::EndedBy::Redemption) || s.tx_id.is_none() {
        lines.push("redemption: the platform has no record (yet)".into());
    }
    // ST in token units with the symbol where the bridge is known, else base units.
    let st = |base: &str| match bridge {
        Some(b) => b.side.tokens_text(base),
        None => format!("{base} ST base units"),
    };
    if s.ended_by == Some(bridgectl_flow::EndedBy::StCredit) {
        let expected = s
            .expected_credit
            .as_deref()
            .map_or_else(String::new, |e| format!(" of {}", st(e)));
        lines.push(match &s.credit {
            Some(c) => format!(
                "ST credit{expected}: by {} (log {}, block {})",
                c.tx_hash, c.log_index, c.block
            ),
            None if s.receipt.is_some() => {
                format!("ST credit{expected}: not on the side chain yet")
            }
            None => format!("ST credit{expected}: awaits the MT transfer's receipt"),
        });
    }
    for f in &s.facts {
        let depth = match (f.fact.is_final, f.confirmations, f.needed) {
            (true, _, _) => "final".to_owned(),
            (false, Some(k), Some(n)) => format!("{k} of {n} confirmations"),
            (false, Some(k), None) => format!("{k} confirmations, final by the node's tag"),
            (false, None, _) => "not looked at".to_owned(),
        };
        lines.push(format!(
            "{} {} in block {} ({}) of chain {}: {depth}",
            f.fact.kind.as_str(),
            f.fact.tx_hash,
            f.fact.block,
            f.fact.block_hash,
            f.fact.chain_id
        ));
    }
    for r in &s.reorgs {
        lines.push(format!(
            "reorganised: the {} {} in block {} ({}) of chain {} is no longer the chain's{}; \
             the flow is open again",
            r.fact.kind.as_str(),
            r.fact.tx_hash,
            r.fact.block,
            r.fact.block_hash,
            r.fact.chain_id,
            if r.deeper_than_final {
                " (deeper than the chain's finality)"
            } else {
                ""
            }
        ));
    }
    for what in &s.unobserved {
        lines.push(format!("not observed: {what}"));
    }
    lines
}
