//! `bridgectl sign` of a batch request (`batch prepare`'s file): the whole batch in one
//! sitting. The library checks every item as a single offline signature is checked
//! (`OfflineSigner::check_batch`: the one verifier against this profile, the nonce guard,
//! the limits with the batch's earlier items counted) before anything is unlocked; this
//! module shows one review of the lot, asks once, unlocks each key once (a passphrase per
//! key with `--passphrase-file-for`), has the library sign and commit the signatures in
//! groups, and writes the signed batch to `--out`. No network: the only HTTP client ever
//! made here is for `--signer rpc:URL`, which must be on this machine.

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use anyhow::Context as _;
use bridgectl_flow::rpc::RpcSigner;
use bridgectl_flow::{
    BatchReview, BatchSigning, CheckedBatch, DEFAULT_COMMIT_EVERY, ItemCheck, OfflineSigner,
};
use bridgectl_keystore::{KeyInfo, Keystore};
use bridgectl_qr::{Doc, DocKind};
use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::batch::{BATCH_REQUEST_FORMAT, BatchRequest, SignedBatch};
use bridgectl_tx::{Expectation, NonceSource};
use serde_json::json;

use super::args::{BatchSignOpts, SignArgs};
use crate::approver::CliSigner;
use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::output::untrusted;
use crate::passphrase::KeyPassphrases;

impl BatchSignOpts {
    /// Refuses the batch flags for a single transaction.
    pub fn refuse_for_single(&self) -> anyhow::Result<()> {
        if !self.nonce_for.is_empty() || !self.passphrase_file_for.is_empty() || self.all_or_nothing
        {
            return Err(coded(
                Code::Usage,
                "--nonce-for, --passphrase-file-for and --all-or-nothing are for a batch \
                 request; one transaction takes --nonce and --passphrase-file",
            ));
        }
        Ok(())
    }
}

/// Whether `bytes` look like a batch request (its `format` near the start): it is then
/// read strictly as one, and refused as one if it is not.
pub fn is_batch_request(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(512)];
    let needle = format!("\"{BATCH_REQUEST_FORMAT}\"");
    head.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Signs the batch request `bytes` (named `name`); `signer` is `--signer`'s URL.
pub fn run(
    global: &GlobalOpts,
    args: &SignArgs,
    bytes: &[u8],
    name: &str,
    signer: Option<&str>,
    policy: &bridgectl_tx::Policy,
) -> anyhow::Result<()> {
    let request = BatchRequest::parse(bytes)
        .with_context(|| format!("refusing batch request {name}"))
        .code(Code::Refused)?;
    if args.nonce.is_some() || args.key.is_some() || args.raw {
        return Err(coded(
            Code::Usage,
            "a batch request takes --nonce-for KEY=N per sender (not --nonce), and picks each \
             item's key by its sender (not --key); its answer is a signed batch file (not --raw)",
        ));
    }
    let out = args.out.clone().ok_or_else(|| {
        coded(
            Code::Usage,
            "a batch request is answered with a signed batch file: give --out FILE",
        )
    })?;
    let store = crate::session::open_keystore(global)?;
    let mut keys = store.list()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;

    let endpoint = senders_at_endpoint(&runtime, signer, &request, &store)?;
    refuse_senders_without_a_signer(&request, &endpoint, &store, &keys)?;
    let nonces = nonces_given(&args.batch, &store, &keys)?;
    let mut passphrases =
        KeyPassphrases::new(&args.passphrase, &args.batch.passphrase_file_for, &store)?;

    let journal = args.journal.open()?;
    keys = store.list()?;
    let signing_log = SigningLogDb::open_in(store.dir(), store.signers_among(&keys)?)?;
    let offline = OfflineSigner {
        journal: &journal,
        signing_log: &signing_log,
        policy,
    };
    let job = BatchSigning {
        request: &request,
        input_name: name,
        nonces: &nonces,
        commit_every: usize::try_from(args.batch.commit_every).unwrap_or(DEFAULT_COMMIT_EVERY),
    };
    let checked = offline.check_batch(&job)?;
    let review = checked.review(&policy.allowed_destinations);
    let labels: BTreeMap<Address, String> =
        keys.iter().map(|k| (k.address, k.label.clone())).collect();
    show(name, &request, &review, &labels);

    let refused = checked.refused();
    // Where this journal is behind a sender (the key signed elsewhere since), the flag
    // to type: said once, under whatever ends the run.
    let behind = journal_behind(&request, &refused, &nonces, &labels);
    let with_hint = |e: anyhow::Error| match &behind {
        Some(hint) => crate::exit::hinted(e, hint.clone()),
        None => e,
    };
    // Every way out below gives back the nonces of the items that did not sign (the
    // checked batch's guard, when it is dropped); `stop` says why, for the journal.
    let stop = |why: bridgectl_flow::Error| -> anyhow::Error {
        checked.stopped_by(&why);
        why.into()
    };
    if args.batch.all_or_nothing && !refused.is_empty() {
        return Err(with_hint(stop(bridgectl_flow::Error::BatchNotWhole(
            refused,
        ))));
    }
    let needed = checked.signers_needed();
    let signed = if needed.is_empty() {
        // Nothing to sign now: items signed here before (their bytes again), or none.
        runtime.block_on(offline.sign_batch::<CliSigner>(&checked, &[]))?
    } else {
        if args.yes && !every_item_pinned(&checked) {
            return Err(stop(crate::approver::signing_blind(true).into()));
        }
        passphrases.ensure_available(
            &needed
                .iter()
                .copied()
                .filter(|a| !endpoint.contains(a))
                .collect::<Vec<_>>(),
        )?;
        if let Err(e) = crate::review::confirm(
            args.yes,
            &format!(
                "sign these {} transactions ({} keys)?",
                review.signing,
                needed.len()
            ),
        ) {
            checked.stopped_by(&bridgectl_flow::Error::Declined(format!("{e:#}")));
            return Err(e);
        }
        let mut signers = Vec::with_capacity(needed.len());
        for (i, address) in needed.iter().enumerate() {
            if endpoint.contains(address) {
                signers.push(CliSigner::Rpc(RpcSigner::loopback(
                    signer.expect("an endpoint was given"),
                    *address,
                )?));
                continue;
            }
            crate::output::note(format_args!(
                "» unlocking {address} ({} of {})",
                i + 1,
                needed.len()
            ));
            let key = passphrases
                .unlock(&store, *address)
                .map_err(|e| stop(bridgectl_flow::Error::unlock_failed(e)))?;
            signers.push(CliSigner::Local(key));
        }
        let started = std::time::Instant::now();
        let signed = runtime.block_on(offline.sign_batch(&checked, &signers))?;
        drop(signers);
        crate::output::note(format_args!(
            "» signed {} transactions in {:.2} s",
            review.signing,
            started.elapsed().as_secs_f64()
        ));
        signed
    };
    refuse_when_nothing_was_signed(&signed).map_err(with_hint)?;
    let text = signed.to_bytes();
    crate::files::write_new(&out, &text)?;
    crate::output::note(format_args!(
        "signed batch {} -> {}: {} signed, {} left out",
        signed.batch_id,
        out.display(),
        signed.items.len(),
        signed.refused.len()
    ));
    if global.json {
        crate::output::json(&summary_json(&signed, &out, &review, &request))?;
    }
    let doc = Doc {
        kind: DocKind::SignedBatch,
        bytes: text,
    };
    args.qr
        .show(&doc.to_ur(), &format!("the signed batch answering {name}"))?;
    if !signed.refused.is_empty() {
        // The batch's partial code, as `batch prepare` and `batch run` end: a script on
        // this side learns that items were left out without reading the file.
        return Err(with_hint(coded(
            Code::Incomplete,
            format!(
                "batch {}: {} of {} items left out (`refused` in {} says why); the {} signed \
                 are in it",
                signed.batch_id,
                signed.refused.len(),
                request.items.len(),
                out.display(),
                signed.items.len()
            ),
        )));
    }
    Ok(())
}

/// The `--nonce-for` flags to type where this machine's journal is behind a sender: its
/// first item refused as a gap by the journal's count (the key signed elsewhere since,
/// online or on another machine), and no `--nonce-for` given for it. The nonce is the
/// batch's first for the sender: its next one as the online machine found it.
fn journal_behind(
    request: &BatchRequest,
    refused: &[bridgectl_flow::RefusedItem],
    given: &BTreeMap<Address, u64>,
    labels: &BTreeMap<Address, String>,
) -> Option<String> {
    let flags: Vec<String> = request
        .senders
        .iter()
        .filter(|s| !given.contains_key(&s.from))
        .filter(|s| {
            refused.iter().any(|r| {
                r.from == s.from
                    && request
                        .items
                        .iter()
                        .any(|i| i.index == r.index && i.raw_tx.nonce == s.first_nonce)
                    && r.error
                        .refusal()
                        .and_then(bridgectl_tx::Error::refused_expectation)
                        == Some(Expectation::NextNonce(NonceSource::Journal))
            })
        })
        .map(|s| {
            let key = labels
                .get(&s.from)
                .map_or_else(|| s.from.to_string(), |l| untrusted(l).to_string());
            format!("--nonce-for {key}={}", s.first_nonce)
        })
        .collect();
    (!flags.is_empty()).then(|| {
        format!(
            "this machine's journal is behind the key (it signed elsewhere since): the batch \
             starts each such sender at its next nonce as the online machine found it; if \
             that is right, run again with `{}`",
            flags.join(" ")
        )
    })
}

/// Who signs for each sender: the endpoint (`--signer`, its URL `signer`) for the
/// accounts it lists, else the key of the keystore. Chosen before the log is opened, so
/// that the endpoint's accounts are the log's own signers (added to the keystore as
/// external signers). Returns the senders the endpoint signs for.
fn senders_at_endpoint(
    runtime: &tokio::runtime::Runtime,
    signer: Option<&str>,
    request: &BatchRequest,
    store: &Keystore,
) -> anyhow::Result<Vec<Address>> {
    let mut endpoint: Vec<Address> = Vec::new();
    if let Some(url) = signer {
        RpcSigner::loopback(url, Address::ZERO).code(Code::Usage)?;
        let listed = runtime.block_on(RpcSigner::accounts(url))?;
        for s in &request.senders {
            if listed.contains(&s.from) && !endpoint.contains(&s.from) {
                store.add_external_signer(s.from)?;
                endpoint.push(s.from);
            }
        }
    }
    Ok(endpoint)
}

/// Refuses a batch with a sender that neither the endpoint nor a key here signs for.
fn refuse_senders_without_a_signer(
    request: &BatchRequest,
    endpoint: &[Address],
    store: &Keystore,
    keys: &[KeyInfo],
) -> anyhow::Result<()> {
    let missing: Vec<String> = request
        .senders
        .iter()
        .filter(|s| {
            !endpoint.contains(&s.from) && store.find_in(keys, &s.from.to_string()).is_err()
        })
        .map(|s| s.from.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(coded(
            Code::NotFound,
            format!(
                "no key here for {} (the batch's senders sign here: import their keys, or \
                 give --signer rpc:URL for an endpoint that holds them)",
                missing.join(", ")
            ),
        ));
    }
    Ok(())
}

/// The nonces `--nonce-for KEY=N` gives, by sender address.
fn nonces_given(
    opts: &BatchSignOpts,
    store: &Keystore,
    keys: &[KeyInfo],
) -> anyhow::Result<BTreeMap<Address, u64>> {
    let mut nonces = BTreeMap::new();
    for spec in &opts.nonce_for {
        let (key, n) = spec.split_once('=').ok_or_else(|| {
            coded(
                Code::Usage,
                format!("--nonce-for {spec:?}: expected KEY=N (a key's label or address, a nonce)"),
            )
        })?;
        let address = match key.parse::<Address>() {
            Ok(a) => a,
            Err(_) => store.find_in(keys, key).code(Code::NotFound)?.address,
        };
        let n: u64 = n.parse().map_err(|_| {
            coded(
                Code::Usage,
                format!("--nonce-for {spec:?}: {n:?} is not a nonce"),
            )
        })?;
        nonces.insert(address, n);
    }
    Ok(nonces)
}

/// Refuses a signed batch that holds no signature: every item was left out.
fn refuse_when_nothing_was_signed(signed: &SignedBatch) -> anyhow::Result<()> {
    if signed.items.is_empty() {
        let first = signed.refused.first().map_or_else(String::new, |r| {
            format!(": item {:?}: {}", untrusted(&r.id), untrusted(&r.reason))
        });
        return Err(coded(
            Code::Refused,
            format!(
                "nothing of batch {} was signed: its {} items were left out{first}",
                signed.batch_id,
                signed.refused.len()
            ),
        ));
    }
    Ok(())
}

/// Whether every item to sign is pinned by the operator (`--expect-*` or an
/// auto-approve rule): what `--yes` needs, as for one transaction.
fn every_item_pinned(checked: &CheckedBatch<'_>) -> bool {
    checked.items.iter().all(|i| match &i.check {
        ItemCheck::Sign(v) => v.pins_call(),
        _ => true,
    })
}

/// What `--json` prints: the signed batch is in the file.
fn summary_json(
    signed: &SignedBatch,
    out: &std::path::Path,
    review: &BatchReview,
    request: &BatchRequest,
) -> serde_json::Value {
    let senders: Vec<serde_json::Value> = review
        .senders
        .iter()
        .map(|s| {
            json!({"from": s.from, "chainId": s.chain_id, "items": s.items,
                   "firstNonce": s.first_nonce, "lastNonce": s.last_nonce,
                   "maxFees": s.max_fees.to_string()})
        })
        .collect();
    json!({
        "batchId": signed.batch_id,
        "requestHash": signed.request_hash,
        "out": out.display().to_string(),
        "items": request.items.len(),
        "signed": review.signing,
        "signedBefore": review.signed_before,
        "senders": senders,
        "refused": signed.refused.iter().map(|r| json!({
            "index": r.index, "id": r.id, "reason": r.reason,
        })).collect::<Vec<_>>(),
    })
}

/// The review on stderr: what one question approves.
fn show(
    name: &str,
    request: &BatchRequest,
    review: &BatchReview,
    labels: &BTreeMap<Address, String>,
) {
    let label = |a: &Address| match labels.get(a) {
        Some(l) if *l != a.to_string() => format!("{a} ({})", untrusted(l)),
        _ => a.to_string(),
    };
    let eth = |wei: U256| {
        format!(
            "{} ETH",
            bridgectl_tx::amount::format_units(wei, 18).unwrap_or_else(|_| wei.to_string())
        )
    };
    let mut out = vec![
        format!(
            "signing {name} (batch request, sha256 {}): batch {} of {} items",
            request.request_hash,
            untrusted(&request.batch_id),
            request.items.len()
        ),
        format!(
            "  {} to sign now, {} signed on this machine before (the same bytes again), {} \
             left out",
            review.signing,
            review.signed_before,
            review.refused.len()
        ),
    ];
    if let Some(source) = &request.origin.source {
        out.push(format!(
            "  prepared from {} (as the request claims)",
            untrusted(source)
        ));
    }
    if !review.tokens.is_empty() {
        out.push("moved, per token:".into());
        for t in &review.tokens {
            out.push(format!(
                "  {:<28} {:>5} items  {}  (chain {}, contract {})",
                t.token
                    .symbol
                    .as_deref()
                    .map_or("(no token in the profile)".into(), untrusted),
                t.items,
                t.token.units(t.amount),
                t.token.chain_id,
                t.token.contract
            ));
        }
    }
    if !review.senders.is_empty() {
        out.push("senders, each key unlocked once:".into());
        for s in &review.senders {
            let moved: Vec<String> = s.moved.iter().map(|m| m.token.units(m.amount)).collect();
            out.push(format!(
                "  {}  chain {}  {} items  nonces {} to {}  moves {}  fees up to {} ({} wei)",
                label(&s.from),
                s.chain_id,
                s.items,
                s.first_nonce,
                s.last_nonce,
                moved.join(", "),
                eth(s.max_fees),
                s.max_fees
            ));
        }
    }
    if !review.recipients.is_empty() {
        let allowlist = review.recipients.iter().any(|r| r.allowed.is_some());
        out.push(format!(
            "recipients{}:",
            if allowlist {
                ", against allowed-destinations"
            } else {
                ""
            }
        ));
        for r in &review.recipients {
            out.push(format!(
                "  {:<62} {:>5} items  {} ({}){}",
                r.to.as_ref()
                    .map_or_else(|| "the token contract".to_owned(), label),
                r.items,
                r.token.units(r.amount),
                r.kind,
                match r.allowed {
                    Some(true) => "  allowed",
                    Some(false) => "  NOT ALLOWED",
                    None => "",
                }
            ));
        }
    }
    if !review.limits.is_empty() {
        out.push("spending limits after the batch:".into());
        for l in &review.limits {
            let units = |v: U256| {
                format!(
                    "{} {}",
                    bridgectl_tx::amount::format_units(v, l.decimals)
                        .unwrap_or_else(|_| v.to_string()),
                    untrusted(&l.symbol)
                )
            };
            out.push(format!(
                "  {}: {} of {} per {} ({} signed before, {} in this batch)",
                label(&l.key),
                units(l.logged.saturating_add(l.batch)),
                units(l.max),
                bridgectl_tx::policy::Window(l.per_secs),
                units(l.logged),
                units(l.batch)
            ));
        }
    }
    if !review.refused.is_empty() {
        out.push(format!("left out ({}):", review.refused.len()));
        // Items of one sender left out for one reason (the later items after a refused
        // one: their nonces would be a gap) are one line.
        for run in review
            .refused
            .chunk_by(|a, b| a.from == b.from && a.reason == b.reason)
        {
            let (first, last) = (&run[0], &run[run.len() - 1]);
            let which = if run.len() == 1 {
                untrusted(&first.id).to_string()
            } else {
                format!(
                    "{} to {} ({} items)",
                    untrusted(&first.id),
                    untrusted(&last.id),
                    run.len()
                )
            };
            out.push(format!(
                "  {which} from {}: {}",
                label(&first.from),
                untrusted(&first.reason)
            ));
        }
    }
    for line in out {
        crate::output::note(line);
    }
}
