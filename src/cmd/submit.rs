//! `bridgectl submit BUNDLE [--request REQUEST]`: the online half after the air gap.
//! The signed bundle is checked before anything is sent: its hash and recovered signer
//! are its own claims, and with the request file it answers, that it was made from
//! exactly that file and signs exactly its rawTx. The bundle goes into the journal
//! before it is submitted. With `--wait` the flow is followed to its observed end (a
//! redeem's redemption, any other transaction's receipt); without, it stays
//! `submitted`: acceptance is not an outcome.
//!
//! The answer may come as QR frames (`--from-qr`) or as a UR text file: a
//! `bridgectl-doc` signed bundle is the bundle itself; an EIP-4527 `eth-signature`
//! carries only `r`, `s`, `v` and the request id, so the request file this side kept
//! (`--request`) is what the signed transaction is rebuilt from, and the result is
//! checked exactly as a bundle is.

use std::path::{Path, PathBuf};

use anyhow::Context;
use bridgectl_flow::{BundleCheck, Submitter};
use clap::Args;
use serde_json::json;

use crate::approver::StderrProgress;
use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::opts::{PlatformOpts, WaitOpts};
use crate::session::Session;

// Arguments of `bridgectl submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The signed bundle written by `bridgectl sign` (or the `eth-signature` UR text
    /// it wrote for an eth-sign-request).
    #[arg(required_unless_present = "from_qr", conflicts_with = "from_qr")]
    pub bundle: Option<PathBuf>,
    /// Read the answer from QR frames instead: image files (PNG, JPEG), UR text files,
    /// directories of them, or `-` for UR text lines on stdin. Any order, duplicates
    /// allowed, until complete. An `eth-signature` needs `--request`.
    #[arg(long = "from-qr", value_name = "FILE|DIR|-", num_args = 1.., help_heading = "QR codes")]
    pub from_qr: Vec<PathBuf>,
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
    /// Wait for the flow's end: for a redeem, its redemption (operation 5); for any
    /// other transaction, its receipt. `--timeout` bounds the wait (exit 8; `bridgectl
    /// resume TXID` waits again). Without it the flow stays `submitted` until
    /// `bridgectl status TXID` or `resume` observes its end.
    #[arg(long)]
    pub wait: bool,
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
    /// How long `--wait` waits.
    #[command(flatten)]
    pub waiting: WaitOpts,
}

/// Reads a bundle or request file, bounded like every input of `sign` (a file that
/// size is not one bridgectl wrote, and is refused before it is parsed).
fn read(path: &Path, what: &str) -> anyhow::Result<Vec<u8>> {
    crate::files::read_input(&path.to_string_lossy())
        .with_context(|| format!("{what} {}", path.display()))
}

/// Runs `bridgectl submit`.
pub fn run(global: &GlobalOpts, args: SubmitArgs) -> anyhow::Result<()> {
    let (answer, origin) = read_answer(&args)?;
    let request_bytes = args
        .request
        .as_ref()
        .map(|p| read(p, "sign request"))
        .transpose()?;
    let checked = match answer {
        Answer::Bundle(bytes) => {
            bridgectl_flow::airgap::check_bundle(&bytes, request_bytes.as_deref())
        }
        Answer::Signature(sig) => {
            let Some(request) = request_bytes.as_deref() else {
                return Err(coded(
                    Code::Usage,
                    format!(
                        "{origin} is an eth-signature: r, s and v only; give --request FILE, \
                         the sign request it answers, to rebuild the transaction from"
                    ),
                ));
            };
            let (r, s, v) = sig.rsv();
            bridgectl_flow::airgap::check_signature(request, &sig.request_id_text(), r, s, v)
        }
    }
    .code(Code::Refused)?;
    let session = Session::for_waiting(global, &args.platform, &args.waiting)?;
    let submitter = if args.direct {
        session.node_submitter(checked.bundle.chain_id, "--direct")?
    } else {
        Submitter::Platform
    };
    let flows = session.flows(submitter, |_| {})?;
    let prepared =
        match session
            .runtime
            .block_on(flows.prepare_bundle(checked, args.unchecked, &origin))
        {
            Err(bridgectl_flow::Error::NothingToCheckAgainst) => {
                return Err(coded(
                    Code::Refused,
                    format!(
                        "nothing to check bundle {origin} against: give --request FILE (the sign \
                     request it answers), or --unchecked to send it as it is"
                    ),
                ));
            }
            other => other?,
        };
    if prepared.checked_against == BundleCheck::Unchecked {
        let ctx = crate::review::context(&session.profile, &prepared.verified);
        crate::review::show(prepared.verified.raw_tx(), &ctx);
    }
    let submitted = session
        .runtime
        .block_on(flows.send_bundle(&prepared, &mut StderrProgress))?;
    let observed = if args.wait {
        Some(
            session
                .runtime
                .block_on(flows.follow(&prepared.tx_id, &mut StderrProgress))?,
        )
    } else {
        None
    };
    let state = observed
        .as_ref()
        .and_then(|o| o.state)
        .unwrap_or(bridgectl_flow::FlowState::Submitted);
    // The request file was checked against the bundle by `check_bundle` whenever given.
    let against_request = args.request.is_some();
    if global.json {
        return crate::output::json(&json!({
            "txId": prepared.tx_id,
            "txHash": submitted.tx_hash,
            "from": submitted.from,
            "chainId": submitted.chain_id,
            "nonce": submitted.nonce,
            "alreadyKnown": submitted.already_known,
            "checkedAgainstRequest": against_request,
            "state": state,
            "observed": observed,
        }));
    }
    crate::output::line(format_args!(
        "submitted tx {} (txId {}){}: {}",
        submitted.tx_hash,
        prepared.tx_id,
        if against_request {
            ", checked against its request"
        } else {
            ""
        },
        observed
            .as_ref()
            .map_or_else(|| state.as_str().to_owned(), crate::output::flow_end)
    ))?;
    if observed.is_none() {
        crate::output::note(format_args!(
            "not waited for: `bridgectl status {}` asks what became of it",
            prepared.tx_id
        ));
    }
    Ok(())
}

/// What came back across the gap.
enum Answer {
    /// A signed bundle's bytes.
    Bundle(Vec<u8>),
    /// An EIP-4527 signature.
    Signature(bridgectl_qr::EthSignature),
}

/// The answer, from the bundle file (JSON, or UR text) or QR frames, and its name.
fn read_answer(args: &SubmitArgs) -> anyhow::Result<(Answer, String)> {
    let (ur, name) = match &args.bundle {
        Some(path) => {
            let bytes = read(path, "signed bundle")?;
            let name = path.display().to_string();
            if !bridgectl_qr::is_ur_text(&bytes) {
                return Ok((Answer::Bundle(bytes), name));
            }
            (crate::qr::read_text(&bytes, &name)?, name)
        }
        None => {
            let frames = crate::qr::read_frames(&args.from_qr)?;
            (frames.ur, frames.name)
        }
    };
    let payload = bridgectl_qr::Payload::from_ur(&ur)
        .with_context(|| format!("refusing {name}"))
        .code(Code::Refused)?;
    match payload {
        bridgectl_qr::Payload::Doc(bridgectl_qr::Doc {
            kind: bridgectl_qr::DocKind::SignedBundle,
            bytes,
        }) => Ok((Answer::Bundle(bytes), name)),
        bridgectl_qr::Payload::EthSignature(sig) => Ok((Answer::Signature(sig), name)),
        other => Err(coded(
            Code::Refused,
            format!(
                "refusing {name}: it holds {}, and `submit` reads an answer (a signed bundle \
                 or an eth-signature)",
                other.describe()
            ),
        )),
    }
}
