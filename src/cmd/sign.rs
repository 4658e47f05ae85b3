//! `bridgectl sign [FILE|-]`: the offline half. Verifies a raw transaction, shows what
//! it does, asks, and only then unlocks the key and signs. No network is touched: this
//! module never constructs an HTTP client.
//!
//! Order (each step can refuse; nothing after a refusal runs, and in particular the
//! passphrase is never read):
//! 1. read the input (a bare rawTx, an action envelope or a sign request) and parse it
//!    strictly;
//! 2. find the key by `rawTx.from` (or `--key`, which must then be that address);
//! 3. check the policy (flags over the profile's `[profiles.<name>.policy]`) and the
//!    request's intent;
//! 4. show the summary on stderr and ask (`--yes` skips; no terminal refuses);
//! 5. read the passphrase, unlock, sign, re-decode the result as a self-check;
//! 6. write the signed bundle to stdout or `--out` (atomically, never overwriting).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::Context as _;
use bridgectl_tx::{Policy, SignInput, SignedBundle, policy, sign_legacy};
use clap::Args;

use crate::cli::{GlobalOpts, PassphraseOpts};
use crate::exit::{Code, WithCode, coded};
use crate::passphrase::CliPassphrases;

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

    /// Sign without asking for confirmation (required when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Print only the signed transaction as 0x hex instead of the bundle JSON.
    #[arg(long)]
    pub raw: bool,

    /// Write the output to FILE (atomically; an existing file is never overwritten).
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Policy checks, run before the key is unlocked.
    #[command(flatten)]
    pub policy: PolicyOpts,

    /// Where the passphrase comes from.
    #[command(flatten)]
    pub passphrase: PassphraseOpts,
}

/// Expectations and caps; each also settable per profile under
/// `[profiles.<name>.policy]` (flags win).
#[derive(Debug, Args, Default, Clone)]
pub struct PolicyOpts {
    /// Refuse unless the chain id is this.
    #[arg(long, value_name = "ID", help_heading = "Policy")]
    pub expect_chain_id: Option<u64>,
    /// Refuse unless the transaction goes to this address.
    #[arg(long, value_name = "ADDRESS", help_heading = "Policy")]
    pub expect_to: Option<String>,
    /// Refuse unless the calldata calls this function (`redeem` or `redeem(uint256)`).
    #[arg(long, value_name = "NAME", help_heading = "Policy")]
    pub expect_function: Option<String>,
    /// Refuse unless the argument NAME has VALUE (base units or address); repeatable.
    #[arg(long, value_name = "NAME=VALUE", help_heading = "Policy")]
    pub expect_arg: Vec<String>,
    /// Refuse a gas price above this: wei, or with a unit (`50gwei`).
    #[arg(long, value_name = "PRICE", help_heading = "Policy")]
    pub max_gas_price: Option<String>,
    /// Refuse when gasLimit x gasPrice is above this: wei, or with a unit (`0.01ether`).
    #[arg(long, value_name = "FEE", help_heading = "Policy")]
    pub max_fee: Option<String>,
}

impl PolicyOpts {
    /// The policy the flags describe; malformed values are usage errors.
    pub fn to_policy(&self) -> anyhow::Result<Policy> {
        let mut p = Policy {
            expect_chain_id: self.expect_chain_id,
            expect_function: self.expect_function.clone(),
            ..Policy::default()
        };
        if let Some(to) = &self.expect_to {
            p.expect_to =
                Some(bridgectl_tx::rawtx::parse_address(to).map_err(|e| {
                    coded(Code::Usage, format!("--expect-to {to:?}: expected {e}"))
                })?);
        }
        let mut args = BTreeMap::new();
        for a in &self.expect_arg {
            let (k, v) = a.split_once('=').ok_or_else(|| {
                coded(
                    Code::Usage,
                    format!("--expect-arg {a:?}: expected NAME=VALUE"),
                )
            })?;
            args.insert(k.to_owned(), v.to_owned());
        }
        p.expect_args = args;
        if let Some(text) = &self.max_gas_price {
            let wei = bridgectl_tx::amount::parse_native(text)
                .context("--max-gas-price")
                .code(Code::Usage)?;
            p.max_gas_price = Some(u128::try_from(wei).map_err(|_| {
                coded(
                    Code::Usage,
                    format!("--max-gas-price {text:?} is above 2^128"),
                )
            })?);
        }
        if let Some(text) = &self.max_fee {
            p.max_fee = Some(
                bridgectl_tx::amount::parse_native(text)
                    .context("--max-fee")
                    .code(Code::Usage)?,
            );
        }
        Ok(p)
    }
}

/// Runs `bridgectl sign`.
pub fn run(global: &GlobalOpts, args: SignArgs) -> anyhow::Result<()> {
    // 1. Input, parsed strictly.
    let bytes = read_input(&args.input)?;
    let input = SignInput::parse(&bytes)
        .with_context(|| format!("refusing input {}", input_name(&args.input)))?;
    let tx = &input.raw_tx;

    // 2. The key: found without any passphrase.
    let store = crate::cmd::key::open_keystore(global)?;
    let selector = args.key.clone().unwrap_or_else(|| tx.from.to_string());
    let info = store.find(&selector).with_context(|| {
        format!(
            "no usable key for {selector} (the transaction is from {})",
            tx.from
        )
    })?;
    if info.address != tx.from {
        return Err(bridgectl_tx::Error::FromMismatch {
            tx_from: tx.from,
            key: info.address,
        }
        .into());
    }

    // 3. Policy and intent.
    let profile = crate::config::load_profile(global)?;
    let policy = args.policy.to_policy()?.or(&profile.policy);
    policy::verify(tx, &policy, "policy")?;
    if let Some(intent) = input.intent_policy() {
        policy::verify(tx, &intent, "intent")?;
    }

    // 4. What is signed, then consent.
    let mut ctx = crate::review::context(&profile, tx.chain_id, input.intent.as_ref());
    ctx.max_fee = policy.max_fee;
    if info.label != tx.from.to_string() {
        ctx.labels
            .entry(info.address)
            .or_insert_with(|| format!("key {}", info.label));
    }
    crate::output::note(format_args!(
        "signing {} ({} input, sha256 {})",
        input_name(&args.input),
        kind_name(&input),
        input.request_hash
    ));
    crate::review::show(tx, &ctx);
    crate::review::confirm(args.yes, "sign this transaction?")?;

    // 5. Only now: the passphrase, the key, the signature.
    let mut passphrases = CliPassphrases::new(&args.passphrase);
    passphrases.ensure_available()?;
    let signer = store.unlock(&info.id.to_string(), &mut passphrases)?;
    let signed = sign_legacy(tx, &signer)?;
    drop(signer);
    let check = bridgectl_tx::decode::decode_signed(&signed.raw)
        .context("self-check: the signed transaction does not decode")?;
    if check.sender != tx.from || check.hash != signed.hash || check.chain_id != Some(tx.chain_id) {
        anyhow::bail!(
            "self-check failed: the signed transaction does not recover to {}",
            tx.from
        );
    }

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
