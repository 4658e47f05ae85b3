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

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::Context as _;
use bridgectl_flow::journal::{FlowState, SignedEntry};
use bridgectl_tx::{Nonce, NonceFacts, SignInput, SignedBundle, sign_and_log};
use clap::Args;
use serde_json::json;

use crate::cli::{GlobalOpts, PassphraseOpts};
use crate::exit::{Code, WithCode, coded};
use crate::passphrase::CliPassphrases;
use crate::trust::ExpectOpts;

/// The largest input accepted: a rawTx with 1 MiB of calldata fits easily.
const MAX_INPUT: u64 = 4 * 1024 * 1024;

/// Arguments of `bridgectl sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// The input: a rawTx JSON, an action envelope or a sign-request file; `-` (the
    /// default) reads stdin.
    #[arg(value_name = "FILE|-", default_value = "-")]
    pub input: String,

    /// The key to sign with (address, label or id) [default: the key of rawTx.from].
    /// Its address must equal rawTx.from.
    #[arg(long, value_name = "SELECTOR")]
    pub key: Option<String>,

    /// Sign without asking for confirmation. Refused unless the call is pinned: by a
    /// sign request's intent naming the function, or by --expect-function,
    /// --expect-arg or --expect-data.
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// The sender's next nonce, as you know it: the rawTx must have it. Needed when this
    /// machine's journal has no signature from the sender yet.
    #[arg(long, value_name = "N")]
    pub nonce: Option<u64>,

    /// Print only the signed transaction as 0x hex instead of the bundle JSON.
    #[arg(long)]
    pub raw: bool,

    /// Write the output to FILE (atomically; an existing file is never overwritten).
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// This machine's journal of signatures (nonces signed here are never signed again)
    /// [default: $XDG_STATE_HOME/bridgectl/journal.sqlite3].
    #[arg(long, env = "BRIDGECTL_JOURNAL", value_name = "FILE")]
    pub journal: Option<PathBuf>,

    /// Policy checks, run before the key is unlocked.
    #[command(flatten)]
    pub policy: ExpectOpts,

    /// Where the passphrase comes from.
    #[command(flatten)]
    pub passphrase: PassphraseOpts,
}

/// Runs `bridgectl sign`.
pub fn run(global: &GlobalOpts, args: SignArgs) -> anyhow::Result<()> {
    // 1. Input, parsed strictly; flags and profile, before anything else.
    let bytes = read_input(&args.input)?;
    let input = SignInput::parse(&bytes)
        .with_context(|| format!("refusing input {}", input_name(&args.input)))?;
    let tx = &input.raw_tx;
    let profile = crate::config::load_profile(global)?;
    let policy = crate::trust::trust_root(&profile, args.policy.to_policy()?);

    // 2. The key: found without any passphrase.
    let store = crate::cmd::key::open_keystore(global)?;
    let selector = args.key.clone().unwrap_or_else(|| tx.from.to_string());
    let info = store.find(&selector).with_context(|| {
        format!(
            "no usable key for {selector} (the transaction is from {})",
            tx.from
        )
    })?;

    // 3. The one verifier, with what this machine knows of the nonce. A request whose
    // txId names a flow of this machine's journal (`action exec --out` here) continues
    // that flow, and must be the transaction it verified.
    let journal = crate::session::open_journal(args.journal.as_ref())?;
    // Only a flow that verified a rawTx from this sender and has not signed is
    // continued; any other txId (a replayed request, a managed action, a flow that
    // signed) starts a flow of its own.
    let local_flow = input
        .tx_id
        .as_ref()
        .and_then(|id| journal.get(id).ok())
        .filter(|f| {
            f.raw_tx.is_some()
                && f.signed_tx.is_none()
                && f.from.as_deref() == Some(tx.from.to_string().as_str())
        });
    if let Some(raw) = local_flow.as_ref().and_then(|f| f.raw_tx.as_ref()) {
        let verified_online = bridgectl_tx::RawTx::from_value(raw)?;
        if verified_online != *tx {
            return Err(coded(
                Code::Refused,
                format!(
                    "the request's rawTx is not the one flow {} verified here: it was changed \
                     after it was written",
                    input.tx_id.as_deref().unwrap_or_default()
                ),
            ));
        }
    }
    let tx_id = match &local_flow {
        Some(f) => f.tx_id.clone(),
        None => uuid::Uuid::new_v4().to_string(),
    };
    let context = bridgectl_tx::Context {
        signer: info.address,
        gas_price_quote: None,
        nonce: Nonce::Next(NonceFacts {
            fixed: args.nonce,
            journal_next: journal.next_nonce(
                info.address,
                tx.chain_id,
                local_flow.as_ref().map(|f| f.tx_id.as_str()),
            )?,
            ..NonceFacts::default()
        }),
        spent: None,
    };
    // The spending limits' totals come from this keystore's signing log, where the
    // signature will be recorded too.
    let signing_log = store.signing_log()?;
    let now = bridgectl_tx::log::unix_now();
    let context = bridgectl_tx::Context {
        spent: bridgectl_tx::limits::read_spent(&policy, tx, &signing_log, now)?,
        ..context
    };
    let verified = bridgectl_tx::verify(tx, input.intent.as_ref(), &policy, &context)?;
    if args.yes && !verified.pins_call() {
        return Err(coded(
            Code::Refused,
            "signing blind: --yes needs the call pinned: a sign request whose intent names \
             the function, --expect-function with every argument as --expect-arg, or \
             --expect-data; without --yes the summary is shown and you are asked",
        ));
    }
    if local_flow.is_none() {
        journal.begin(
            &tx_id,
            "sign",
            Some(&tx.from.to_string()),
            &json!({"input": input_name(&args.input), "requestHash": input.request_hash,
                    "kind": kind_name(&input), "intent": input.intent}),
        )?;
        journal.record_raw_tx(&tx_id, &serde_json::to_value(tx)?)?;
    }
    journal.reserve_nonce(&tx_id, tx.from, tx.chain_id, tx.nonce)?;
    let fail = |step: &str, e: &anyhow::Error| {
        let _ = journal.step(
            &tx_id,
            FlowState::Failed,
            step,
            &json!({"error": format!("{e:#}")}),
        );
    };

    // 4. What is signed, then consent.
    crate::output::note(format_args!(
        "signing {} ({} input, sha256 {})",
        input_name(&args.input),
        kind_name(&input),
        input.request_hash
    ));
    let mut ctx = crate::review::context(&profile, &verified);
    if info.label != tx.from.to_string() {
        ctx.labels
            .entry(info.address)
            .or_insert_with(|| format!("key {}", info.label));
    }
    crate::review::show(verified.raw_tx(), &ctx);
    crate::review::confirm(args.yes, "sign this transaction?")
        .inspect_err(|e| fail("declined", e))?;

    // 5. Only now: the passphrase, the key, the signature.
    let mut passphrases = CliPassphrases::new(&args.passphrase);
    let signed = (|| -> anyhow::Result<bridgectl_tx::SignedTx> {
        passphrases.ensure_available()?;
        let signer = passphrases.unlock(&store, &info.id.to_string())?;
        let signed = sign_and_log(&verified, &signer, &signing_log, now)?;
        drop(signer);
        let check = bridgectl_tx::decode::decode_signed(&signed.raw)
            .context("self-check: the signed transaction does not decode")?;
        if check.sender != tx.from
            || check.hash != signed.hash
            || check.chain_id != Some(tx.chain_id)
        {
            anyhow::bail!(
                "self-check failed: the signed transaction does not recover to {}",
                tx.from
            );
        }
        Ok(signed)
    })()
    .inspect_err(|e| fail("not-signed", e))?;
    journal.record_signed(&tx_id, &SignedEntry::from(&signed))?;

    // 6. Output.
    let bundle = SignedBundle::new(&signed, &input);
    let text = if args.raw {
        format!("{}\n", signed.raw)
    } else {
        format!("{}\n", serde_json::to_string_pretty(&bundle)?)
    };
    match &args.out {
        Some(path) => {
            crate::files::write_new(path, text.as_bytes())?;
            crate::output::note(format_args!("signed {} -> {}", signed.hash, path.display()));
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(())
}

fn kind_name(input: &SignInput) -> &'static str {
    match input.kind {
        bridgectl_tx::request::InputKind::RawTx => "bare rawTx",
        bridgectl_tx::request::InputKind::Envelope => "action envelope",
        bridgectl_tx::request::InputKind::SignRequest => "sign request",
    }
}

fn input_name(input: &str) -> String {
    if input == "-" {
        "stdin".into()
    } else {
        input.to_owned()
    }
}

/// Reads FILE or stdin, bounded.
pub fn read_input(input: &str) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if input == "-" {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            return Err(coded(
                Code::Usage,
                "no input: give a FILE, or pipe the JSON into stdin",
            ));
        }
        std::io::stdin()
            .take(MAX_INPUT + 1)
            .read_to_end(&mut bytes)
            .context("cannot read stdin")?;
    } else {
        let f = std::fs::File::open(input)
            .with_context(|| format!("cannot open {input}"))
            .code(Code::NotFound)?;
        f.take(MAX_INPUT + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {input}"))?;
    }
    if bytes.len() as u64 > MAX_INPUT {
        return Err(coded(
            Code::Refused,
            format!("{} is larger than {MAX_INPUT} bytes", input_name(input)),
        ));
    }
    Ok(bytes)
}

/// Exit code for a tx error: every refusal of the input is [`Code::Refused`].
pub fn exit_code_for(err: &bridgectl_tx::Error) -> Code {
    if err.is_refusal() {
        Code::Refused
    } else {
        Code::Failure
    }
}
