//! `bridgectl sign [FILE|-]`: the offline half. Verifies a raw transaction against the
//! offline profile, shows what it does, asks on the terminal, and only then unlocks the
//! key and signs. No network is touched: this module never constructs an HTTP client.
//!
//! The profile (or the `--expect-*` flags) is the trust root: the chain ids, contracts,
//! symbols and decimals it names are the only ones this signer knows. A sign request's
//! intent is a claim checked against the rawTx and the profile; its text is shown as a
//! claim. All of that is the verifier's job (`bridgectl_tx::verify`); this command only
//! gathers what it needs:
//! 1. read the input (a bare rawTx, an action envelope or a sign request), strictly;
//! 2. find the key by `rawTx.from` (or `--key`), without any passphrase;
//! 3. verify, with the nonce checked against `--nonce` or this machine's journal of
//!    signatures (and reserve it there), and the spending limits against the totals of
//!    the signing log;
//! 4. show the summary and ask on the terminal (`/dev/tty`, so piped input can be
//!    confirmed); `--yes` only where the call is pinned by an intent or `--expect-*`;
//! 5. read the passphrase, unlock, sign (recorded in the keystore's signing log before
//!    the bytes leave the signing step), re-decode the result as a self-check, journal;
//! 6. write the signed bundle to stdout or `--out` (atomically, never overwriting).
//!
//! With `--from-qr` the input comes from QR frames instead (`crate::qr`): a
//! `bridgectl-doc` sign request is the very file, byte for byte; an EIP-4527
//! `eth-sign-request` is its transaction, with no intent, answered with an
//! `eth-signature` (a UR, as text or as frames) instead of a bundle. Both go through
//! steps 2-5 unchanged: the same trust root, the same verifier, the same refusals.
//!
//! A batch request (`batch prepare`'s file) is signed in one sitting by [`batch`]: every
//! item through the same verifier, one review, one question, each key unlocked once.

mod args;
mod batch;

pub use args::SignArgs;

use std::io::Write;

use anyhow::Context as _;
use bridgectl_flow::{OfflineSigner, OfflineSigning};
use bridgectl_qr::{Doc, DocKind, EthSignature, Payload};
use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::request::InputKind;
use bridgectl_tx::{SignInput, SignedBundle};

use crate::approver::{CliApprover, OfflineInput};
use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::passphrase::CliPassphrases;

/// Runs `bridgectl sign`.
pub fn run(global: &GlobalOpts, args: SignArgs) -> anyhow::Result<()> {
    // 1. Flags and profile, before anything else: every refusal that needs no input
    // comes before it is read (QR frames from a camera take a while); then the input,
    // parsed strictly.
    args.qr.check()?;
    args.check_out()?;
    let signer = args
        .signer
        .as_deref()
        .map(crate::approver::offline_signer_url)
        .transpose()?;
    let profile = crate::config::load_profile(global)?;
    let policy = profile.trust_root(args.policy.to_policy()?);
    let (input, name, answer) = match read(&args)? {
        Read::Single(input, name, answer) => (*input, name, answer),
        Read::Batch(bytes, name) => {
            return batch::run(global, &args, &bytes, &name, signer, &policy);
        }
    };
    args.batch.refuse_for_single()?;
    let tx = &input.raw_tx;

    // 2. The key: found without any passphrase.
    // The keys are listed once: the key is found among them, and they are the signing
    // log's own signers.
    let store = crate::session::open_keystore(global)?;
    let keys = store.list()?;
    // A signing endpoint holds its key: no key file is looked for, and its account is
    // one of the log's signers (the approver records it as the keystore's external
    // signer before it signs).
    let info = match signer {
        Some(_) => None,
        None => {
            let selector = args.key.clone().unwrap_or_else(|| tx.from.to_string());
            Some(store.find_in(&keys, &selector).with_context(|| {
                format!(
                    "no usable key for {selector} (the transaction is from {})",
                    tx.from
                )
            })?)
        }
    };
    let mut log_signers = store.signers_among(&keys)?;
    if signer.is_some() {
        log_signers.push(tx.from);
    }

    // 3-5. The one verifier, with this machine's journal of signatures as the nonce
    // floor and the signing log's totals for the limits; then the summary, the question
    // and only then the passphrase (in the approver).
    let journal = args.journal.open()?;
    let signing_log = SigningLogDb::open_in(store.dir(), log_signers)?;
    let mut approver = CliApprover {
        keystore: &store,
        passphrases: CliPassphrases::new(&args.passphrase),
        yes: args.yes,
        profile: &profile,
        unlock_time: std::time::Duration::ZERO,
        offline: Some(OfflineInput {
            key: info.as_ref(),
            what: format!(
                "signing {name} ({} input, sha256 {})",
                kind_name(&input),
                input.request_hash
            ),
        }),
        external: args.signer.clone(),
        external_timeout: bridgectl_flow::rpc::RPC_SIGNER_TIMEOUT,
        replacing: None,
    };
    if let Some(url) = signer {
        // The endpoint must be on this machine: checked before anything is verified.
        bridgectl_flow::rpc::RpcSigner::loopback(url, tx.from).code(Code::Usage)?;
    }
    let signer = OfflineSigner {
        journal: &journal,
        signing_log: &signing_log,
        policy: &policy,
    };
    let job = OfflineSigning {
        input: &input,
        input_name: &name,
        key: info.as_ref().map_or(tx.from, |k| k.address),
        fixed_nonce: args.nonce,
    };
    // A runtime to drive the (async) approver; its timers and sockets serve a signing
    // endpoint on this machine (`--signer`), and nothing else reaches a network.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The very same transaction signed here before (a run stopped before its output, or
    // the request given again): its bytes again, with nothing unlocked.
    let signed = match signer.signed_before(&job)? {
        Some((signed, tx_id)) => {
            crate::output::note(format_args!(
                "signed on this machine before (flow {tx_id}): the same bytes again, \
                 nothing unlocked"
            ));
            signed
        }
        None => runtime.block_on(signer.sign(&job, &mut approver))?,
    };

    // 6. Output: the bundle, or the eth-signature an eth-sign-request asked for.
    let (text, ur) = match answer {
        Answer::Bundle => {
            let bundle = SignedBundle::new(&signed, &input);
            // A document people and scripts read: addresses spelled as in every other one.
            let bundle = crate::output::checksummed(serde_json::to_value(&bundle)?);
            let text = format!("{}\n", serde_json::to_string_pretty(&bundle)?);
            let doc = Doc {
                kind: DocKind::SignedBundle,
                bytes: text.clone().into_bytes(),
            };
            (text, doc.to_ur())
        }
        Answer::EthSignature(request_id) => {
            let sig = EthSignature::for_signed(request_id, &signed.raw, Some("bridgectl".into()))
                .code(Code::Failure)?;
            let ur = sig.to_ur();
            (format!("{}\n", ur.single_part()), ur)
        }
    };
    let eth_signature = matches!(answer, Answer::EthSignature(_)).then(|| text.trim().to_owned());
    let text = if args.raw {
        format!("{}\n", signed.raw)
    } else {
        text
    };
    match &args.out {
        Some(path) => {
            crate::files::write_new(path, text.as_bytes())?;
            crate::output::note(format_args!("signed {} -> {}", signed.hash, path.display()));
        }
        None if global.json && eth_signature.is_some() => {}
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    if global.json && (args.out.is_some() || eth_signature.is_some()) {
        // The output is in the file (or is a UR, not JSON); a script still learns what
        // was signed.
        let mut doc = serde_json::json!({
            "txHash": signed.hash,
            "from": signed.from,
            "chainId": signed.chain_id,
            "nonce": signed.nonce,
            "out": args.out.as_ref().map_or_else(|| "-".to_owned(), |p| p.display().to_string()),
        });
        if let Some(ur) = &eth_signature {
            doc["ethSignature"] = serde_json::json!(ur);
        }
        crate::output::json(&doc)?;
    }
    args.qr.show(&ur, &format!("the answer to {name}"))?;
    Ok(())
}

/// What `sign` answers with.
enum Answer {
    /// A signed bundle (for a rawTx, an envelope or a sign request).
    Bundle,
    /// An EIP-4527 `eth-signature` for the request with this id.
    EthSignature([u8; 16]),
}

/// What `sign` was given.
enum Read {
    /// One transaction: the input parsed strictly, its name, what answers it.
    Single(Box<SignInput>, String, Answer),
    /// A batch request's bytes (parsed by [`batch::run`]), and its name.
    Batch(Vec<u8>, String),
}

/// The input, from a file, stdin or QR frames, parsed strictly (a batch request by
/// [`batch::run`]); its name; and what answers it.
fn read(args: &SignArgs) -> anyhow::Result<Read> {
    if args.from_qr.is_empty() {
        let bytes = crate::files::read_input_bounded(
            &args.input,
            bridgectl_tx::batch::MAX_BATCH_DOC_BYTES as u64,
        )?;
        let name = crate::files::input_name(&args.input);
        if batch::is_batch_request(&bytes) {
            return Ok(Read::Batch(bytes, name));
        }
        crate::files::check_input_size(&bytes, &name)?;
        let input = SignInput::parse(&bytes).with_context(|| format!("refusing input {name}"))?;
        return Ok(Read::Single(Box::new(input), name, Answer::Bundle));
    }
    let frames = crate::qr::read_frames(&args.from_qr)?;
    let name = frames.name;
    let payload = Payload::from_ur(&frames.ur)
        .with_context(|| format!("refusing input {name}"))
        .code(Code::Refused)?;
    match payload {
        Payload::Doc(Doc {
            kind: DocKind::SignRequest,
            bytes,
        }) => {
            let input =
                SignInput::parse(&bytes).with_context(|| format!("refusing input {name}"))?;
            if input.kind != InputKind::SignRequest {
                return Err(coded(
                    Code::Refused,
                    format!(
                        "refusing input {name}: a bridgectl-doc sign-request that is not a sign request file"
                    ),
                ));
            }
            Ok(Read::Single(Box::new(input), name, Answer::Bundle))
        }
        Payload::Doc(Doc {
            kind: DocKind::BatchRequest,
            bytes,
        }) => Ok(Read::Batch(bytes, name)),
        Payload::EthSignRequest(request) => {
            let Some(id) = request.request_id else {
                return Err(coded(
                    Code::Refused,
                    format!(
                        "refusing input {name}: an eth-sign-request without a request-id: its \
                         answer, an eth-signature, must name the request it answers"
                    ),
                ));
            };
            let input = request
                .sign_input(&frames.ur.cbor)
                .with_context(|| format!("refusing input {name}"))
                .code(Code::Refused)?;
            let name = match &request.origin {
                Some(origin) => format!(
                    "{name} (from {:?}, as it claims)",
                    crate::output::untrusted(origin)
                ),
                None => name,
            };
            Ok(Read::Single(
                Box::new(input),
                name,
                Answer::EthSignature(id),
            ))
        }
        other => Err(coded(
            Code::Refused,
            format!(
                "refusing input {name}: it holds {}, and `sign` reads a sign request (a \
                 bridgectl-doc sign-request or batch-request, or an eth-sign-request)",
                other.describe()
            ),
        )),
    }
}

fn kind_name(input: &SignInput) -> &'static str {
    match input.kind {
        bridgectl_tx::request::InputKind::RawTx => "bare rawTx",
        bridgectl_tx::request::InputKind::Envelope => "action envelope",
        bridgectl_tx::request::InputKind::SignRequest => "sign request",
        bridgectl_tx::request::InputKind::EthSignRequest => "eth-sign-request",
    }
}
