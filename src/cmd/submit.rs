//! `bridgectl submit BUNDLE [--request REQUEST]`: the online half after the air gap.
//! The signed bundle is checked before anything is sent: its hash and recovered signer
//! are its own claims, and with the request file it answers, that it was made from
//! exactly that file and signs exactly its rawTx. The bundle goes into the journal
//! before it is submitted.

use std::path::{Path, PathBuf};

use anyhow::Context;
use bridgectl_flow::engine::Submitter;
use bridgectl_flow::journal::{FlowState, SignedEntry};
use bridgectl_tx::request::Intent;
use clap::Args;
use serde_json::json;

use crate::cli::GlobalOpts;
use crate::exit::{Code, WithCode, coded};
use crate::session::{PlatformOpts, Session, StderrProgress};

/// Arguments of `bridgectl submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The signed bundle written by `bridgectl sign`.
    pub bundle: PathBuf,
    /// The sign request the bundle answers (written by `action exec --out`): checked
    /// field by field against the signed transaction.
    #[arg(long, value_name = "FILE")]
    pub request: Option<PathBuf>,
    /// Send through the node of the transaction's chain (profile rpc url) instead of
    /// the platform, and wait for the receipt.
    #[arg(long)]
    pub direct: bool,
    /// Send a bundle that neither a request file nor a flow in the journal can be
    /// checked against (its decoded summary is shown; the trust root still applies).
    #[arg(long)]
    pub unchecked: bool,
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
}

/// Reads a bundle or request file, bounded like every input of `sign` (a file that
/// size is not one bridgectl wrote, and is refused before it is parsed).
fn read(path: &Path, what: &str) -> anyhow::Result<Vec<u8>> {
    crate::cmd::sign::read_input(&path.to_string_lossy())
        .with_context(|| format!("{what} {}", path.display()))
}

/// Runs `bridgectl submit`.
pub fn run(global: &GlobalOpts, args: SubmitArgs) -> anyhow::Result<()> {
    let bundle_bytes = read(&args.bundle, "signed bundle")?;
    let request_bytes = args
        .request
        .as_ref()
        .map(|p| read(p, "sign request"))
        .transpose()?;
    let checked = bridgectl_flow::airgap::check_bundle(&bundle_bytes, request_bytes.as_deref())
        .code(Code::Refused)?;
    let session = Session::for_sending(global, &args.platform)?;
    let submitter = if args.direct {
        let chain = checked.bundle.chain_id;
        let p = &session.profile;
        let url = if Some(chain) == p.side_chain_id {
            p.side_rpc_url.as_deref()
        } else if Some(chain) == p.main_chain_id {
            p.main_rpc_url.as_deref()
        } else {
            None
        }
        .ok_or_else(|| anyhow::anyhow!("--direct: no rpc url in the profile for chain {chain}"))?;
        Submitter::Node(bridgectl_flow::rpc::NodeClient::new(url)?)
    } else {
        Submitter::Platform
    };
    let flows = session.flows(submitter)?;
    let b = &checked.bundle;
    // Continue the flow `action exec --out` began, or start one for a bundle from
    // elsewhere.
    let tx_id = match &b.tx_id {
        Some(id) if session.journal.get(id).is_ok() => id.clone(),
        _ => {
            let id = uuid::Uuid::new_v4().to_string();
            session.journal.begin(
                &id,
                "submit",
                Some(&b.from.to_string()),
                &json!({"bundle": args.bundle.display().to_string(), "theirTxId": b.tx_id}),
            )?;
            id
        }
    };
    let existing = session.journal.get(&tx_id)?;
    // A flow begun here (`action exec --out`) holds the rawTx that was verified online:
    // the bundle must sign exactly that, whatever the request file now says.
    if let Some(journaled) = &existing.raw_tx {
        let raw = bridgectl_tx::RawTx::from_value(journaled).code(Code::Refused)?;
        bridgectl_flow::airgap::check_signed_matches(&checked.decoded, &raw).code(Code::Refused)?;
    } else if checked.request.is_none() && !args.unchecked {
        session.journal.step(
            &tx_id,
            FlowState::Failed,
            "refused",
            &json!({"error": "nothing to check the bundle against"}),
        )?;
        return Err(coded(
            Code::Refused,
            format!(
                "nothing to check bundle {} against: give --request FILE (the sign request it \
                 answers), or --unchecked to send it as it is",
                args.bundle.display()
            ),
        ));
    }
    // What was asked for: the request's intent, or the one the flow journaled online.
    let intent: Option<Intent> = match &checked.request {
        Some(input) => input.intent.clone(),
        None => match existing.intent.get("intent") {
            None => None,
            Some(i) => Some(serde_json::from_value(i.clone()).map_err(|e| {
                coded(
                    Code::Refused,
                    format!("flow {tx_id}: the journaled intent does not read ({e}); nothing sent"),
                )
            })?),
        },
    };
    let verified = session
        .runtime
        .block_on(flows.check_signed(&checked.decoded, intent.as_ref()))
        .inspect_err(|e| {
            let _ = session.journal.step(
                &tx_id,
                FlowState::Failed,
                "refused",
                &json!({"error": e.to_string()}),
            );
        })?;
    if args.unchecked && checked.request.is_none() && existing.raw_tx.is_none() {
        let ctx = crate::review::context(&session.profile, &verified);
        crate::review::show(verified.raw_tx(), &ctx);
    }
    if let Some(prev) = &existing.tx_hash
        && prev.parse().ok() != Some(b.tx_hash)
    {
        anyhow::bail!(
            "flow {tx_id} already signed another transaction ({prev}); refusing to send a \
             second one for it (bundle has {})",
            b.tx_hash
        );
    }
    session
        .journal
        .reserve_nonce(&tx_id, checked.decoded.sender, b.chain_id, b.nonce)?;
    session.journal.record_signed(
        &tx_id,
        &SignedEntry {
            raw: &b.signed_tx,
            hash: b.tx_hash.to_string(),
            chain_id: b.chain_id,
            nonce: b.nonce,
        },
    )?;
    let submitted = session.runtime.block_on(flows.submit_journaled(
        &tx_id,
        &b.signed_tx,
        b.tx_hash,
        b.chain_id,
        b.nonce,
        b.from,
        &mut StderrProgress,
    ))?;
    if global.json {
        crate::output::json(&json!({
            "txId": tx_id,
            "txHash": submitted.tx_hash,
            "from": submitted.from,
            "chainId": submitted.chain_id,
            "nonce": submitted.nonce,
            "alreadyKnown": submitted.already_known,
            "checkedAgainstRequest": checked.request.is_some(),
        }))
    } else {
        crate::output::line(format_args!(
            "submitted tx {} (txId {}){}",
            submitted.tx_hash,
            tx_id,
            if checked.request.is_some() {
                ", checked against its request"
            } else {
                ""
            }
        ))
    }
}
