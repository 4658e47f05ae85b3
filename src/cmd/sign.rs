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

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use bridgectl_flow::{OfflineSigner, OfflineSigning};
use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::{SignInput, SignedBundle};
use clap::Args;

use crate::approver::{CliApprover, OfflineInput};
use crate::global::GlobalOpts;
use crate::opts::PassphraseOpts;
use crate::passphrase::CliPassphrases;
use crate::trust::ExpectOpts;

// Arguments of `bridgectl sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// The input: a rawTx JSON, an action envelope or a sign-request file; `-` (the
    /// default) reads stdin.
    #[arg(value_name = "FILE|-", default_value = "-")]
    pub input: String,

    /// The key to sign with (address, label or id) [default: the key of rawTx.from].
    /// Its address must equal rawTx.from.
    #[arg(long, value_name = "SELECTOR", add = crate::accounts::key_labels())]
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
    let bytes = crate::files::read_input(&args.input)?;
    let name = crate::files::input_name(&args.input);
    let input = SignInput::parse(&bytes).with_context(|| format!("refusing input {name}"))?;
    let tx = &input.raw_tx;
    let profile = crate::config::load_profile(global)?;
    let policy = crate::trust::trust_root(&profile, args.policy.to_policy()?);

    // 2. The key: found without any passphrase.
    // The keys are listed once: the key is found among them, and they are the signing
    // log's own signers.
    let store = crate::session::open_keystore(global)?;
    let keys = store.list()?;
    let selector = args.key.clone().unwrap_or_else(|| tx.from.to_string());
    let info = store.find_in(&keys, &selector).with_context(|| {
        format!(
            "no usable key for {selector} (the transaction is from {})",
            tx.from
        )
    })?;

    // 3-5. The one verifier, with this machine's journal of signatures as the nonce
    // floor and the signing log's totals for the limits; then the summary, the question
    // and only then the passphrase (in the approver).
    let journal = crate::session::open_journal(args.journal.as_deref())?;
    let signing_log = SigningLogDb::open_in(store.dir(), store.signers_among(&keys)?)?;
    let mut approver = CliApprover {
        keystore: &store,
        passphrases: CliPassphrases::new(&args.passphrase),
        yes: args.yes,
        profile: &profile,
        unlock_time: std::time::Duration::ZERO,
        offline: Some(OfflineInput {
            key: &info,
            what: format!(
                "signing {name} ({} input, sha256 {})",
                kind_name(&input),
                input.request_hash
            ),
        }),
        external: None,
    };
    let signer = OfflineSigner {
        journal: &journal,
        signing_log: &signing_log,
        policy: &policy,
    };
    let job = OfflineSigning {
        input: &input,
        input_name: &name,
        key: info.address,
        fixed_nonce: args.nonce,
    };
    // No network: a runtime only to drive the (async) approver.
    let runtime = tokio::runtime::Builder::new_current_thread()
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

    // 6. Output.
    let bundle = SignedBundle::new(&signed, &input);
    let text = if args.raw {
        format!("{}\n", signed.raw)
    } else {
        // A document people and scripts read: addresses spelled as in every other one.
        let bundle = crate::output::checksummed(serde_json::to_value(&bundle)?);
        format!("{}\n", serde_json::to_string_pretty(&bundle)?)
    };
    match &args.out {
        Some(path) => {
            crate::files::write_new(path, text.as_bytes())?;
            crate::output::note(format_args!("signed {} -> {}", signed.hash, path.display()));
            if global.json {
                // The output is in the file; a script still learns what was signed.
                crate::output::json(&serde_json::json!({
                    "txHash": signed.hash,
                    "from": signed.from,
                    "chainId": signed.chain_id,
                    "nonce": signed.nonce,
                    "out": path,
                }))?;
            }
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
        bridgectl_tx::request::InputKind::EthSignRequest => "eth-sign-request",
    }
}
