//! Signs a platform rawTx offline with bridgectl-keystore, bridgectl-tx and the signing
//! log beside the keys (bridgectl-signing-log) only:
//! `offline_sign KEYSTORE CHAIN_ID CONTRACT NONCE < envelope.json`, passphrase in
//! $PASSPHRASE_FILE. Chain, contract and nonce are this machine's own knowledge; the
//! signature is in the keystore's signing log before its bytes are printed.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program owns its terminal
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::{Context, Nonce, NonceFacts, Policy, SignInput};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, chain_id, contract, nonce] = args.as_slice() else {
        return Err("usage: offline_sign KEYSTORE CHAIN_ID CONTRACT NONCE < envelope.json".into());
    };
    let input = SignInput::parse(&std::io::read_to_string(std::io::stdin())?.into_bytes())?;
    let mut policy = Policy {
        max_gas_price: Some(100_000_000_000), // 100 gwei: a fee cap of this signer's own
        ..Policy::default()
    };
    policy
        .trusted
        .contract(contract.parse()?, chain_id.parse()?, None);
    let keystore = Keystore::open(dir)?;
    let log = SigningLogDb::open_in(keystore.dir(), keystore.signers()?)?;
    let now = bridgectl_tx::signing_log::unix_now();
    let context = Context {
        signer: input.raw_tx.from,
        gas_price_quote: None,
        nonce: Nonce::Next(NonceFacts {
            fixed: Some(nonce.parse()?),
            ..NonceFacts::default()
        }),
        // The log refuses a nonce this key signed already, and gives limits their totals.
        spent: bridgectl_tx::limits::read_spent(&policy, &input.raw_tx, None, &log, now)?,
    };
    // Every check happens here, before the key is touched.
    let verified = bridgectl_tx::verify(&input.raw_tx, input.intent.as_ref(), &policy, &context)?;
    let text = zeroize::Zeroizing::new(std::fs::read_to_string(std::env::var("PASSPHRASE_FILE")?)?);
    let mut passphrase = Passphrase::new(text.lines().next().unwrap_or("").to_owned());
    let signer = keystore.unlock(&input.raw_tx.from.to_string(), &mut passphrase)?;
    let signed = bridgectl_tx::sign_and_log(&verified, &signer, &log, now)?;
    println!("{}", signed.raw);
    Ok(())
}
