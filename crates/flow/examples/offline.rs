//! A wallet's air-gapped half: a raw transaction the platform built (carried over on a
//! USB stick or QR codes) is verified against the wallet's own redeem and the profile,
//! then signed by alloy's `PrivateKeySigner` and recorded in the signing log and the
//! journal; no network. Settings from the environment: PROFILE, KEY_FILE (the key as
//! hex), TX_FILE (the rawTx, or the platform's envelope), AMOUNT, NONCE (the sender's
//! next, as the online half read it), LOG_DIR, JOURNAL. Prints the signed transaction.
#![allow(clippy::print_stdout)] // a program owns its terminal
use bridgectl_flow::tx::request::{Intent, SignInput};
use bridgectl_flow::{ApproveFuture, Approver, Journal, OfflineSigner, OfflineSigning};
use bridgectl_flow::{Policy, PrivateKeySigner, Profile, Review};
use bridgectl_keystore::Keystore;
use bridgectl_signing_log::SigningLogDb;

/// The wallet's key: offline, the person confirmed the summary before this runs.
struct Key(PrivateKeySigner);

impl Approver for Key {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, _: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(std::future::ready(Ok(self.0.clone())))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let profile = Profile::load(env("PROFILE")?, "sandbox")?;
    let side = profile.bridge()?.side;
    let text = zeroize::Zeroizing::new(std::fs::read_to_string(env("KEY_FILE")?)?);
    let key: PrivateKeySigner = text.trim().parse()?;
    // Offline there is no node to quote a gas price: the policy caps it.
    let cap = Policy {
        max_gas_price: Some(100_000_000_000),
        ..Policy::default()
    };
    let policy = profile.trust_root(cap);
    let mut input = SignInput::parse(&std::fs::read(env("TX_FILE")?)?)?;
    // What the wallet asked for, built from its own amount: the platform's words are
    // checked against it (contract, chain, function, `_amount`), never trusted.
    let amount = bridgectl_tx::amount::parse_units(&env("AMOUNT")?, side.decimals)?;
    input.intent = Some(
        Intent::redeem(side.token, side.chain_id, amount)
            .with_token(&side.symbol, side.decimals)
            .pinned_by_caller(),
    );
    // The signing log in a private directory of its own, the key recorded as one that
    // signs into it (it is not a keystore key).
    let dir = Keystore::open(env("LOG_DIR")?)?;
    dir.add_external_signer(key.address())?;
    let log = SigningLogDb::open_in(dir.dir(), dir.signers()?)?;
    let journal = Journal::open(env("JOURNAL")?)?;
    let signer = OfflineSigner {
        journal: &journal,
        signing_log: &log,
        policy: &policy,
    };
    let job = OfflineSigning {
        input: &input,
        input_name: "TX_FILE",
        key: key.address(),
        fixed_nonce: Some(env("NONCE")?.parse()?),
    };
    let signed = signer.sign(&job, &mut Key(key)).await?;
    println!("{}", alloy_primitives::hex::encode_prefixed(&signed.raw));
    Ok(())
}
