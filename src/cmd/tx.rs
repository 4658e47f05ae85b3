//! `bridgectl tx ...`: offline transaction tools. No network is touched: this module
//! never constructs an HTTP client.

use anyhow::Context as _;
use bridgectl_tx::calldata::{self, Decoded};
use bridgectl_tx::decode::{DecodedTx, decode_signed, parse_hex_bytes};
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::exit::{Code, coded};
use crate::global::GlobalOpts;

/// Offline transaction tools.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum TxCommand {
    /// Decode a signed transaction (legacy; typed ones for display), recover its
    /// sender and decode its calldata. Exits 3 when it is malformed or invalid.
    Decode(DecodeArgs),
}

// Arguments of `tx decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// 0x hex, a file holding hex or a signed bundle, or `-` for stdin.
    #[arg(value_name = "HEX|FILE|-")]
    pub input: String,
    /// Decide as a node on this chain does: a transaction signed for another chain is
    /// invalid (exit 3). Without it the chain id is shown, not judged.
    #[arg(long, value_name = "ID", add = crate::completers::chain_ids())]
    pub expect_chain_id: Option<u64>,
}

/// Runs a tx command.
pub fn run(global: &GlobalOpts, cmd: TxCommand) -> anyhow::Result<()> {
    match cmd {
        TxCommand::Decode(args) => decode(global, &args),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DecodeOutput<'a> {
    #[serde(flatten)]
    tx: &'a DecodedTx,
    call: Option<CallOut>,
    valid: bool,
    errors: Vec<String>,
}

#[derive(Serialize)]
struct CallOut {
    function: String,
    /// Each argument by its parameter name, as a rawTx's intent and the signing log
    /// name them (`{"_to": "0x…", "_value": "1"}`).
    args: std::collections::BTreeMap<String, String>,
}

/// The hex text behind the argument: literal hex, a file (hex or a bundle's
/// `signedTx`), or stdin.
fn input_text(input: &str) -> anyhow::Result<String> {
    let text = if input == "-" {
        String::from_utf8(crate::files::read_input("-")?).context("stdin is not UTF-8")?
    } else if input.starts_with("0x") || !std::path::Path::new(input).exists() {
        input.to_owned()
    } else {
        String::from_utf8(crate::files::read_input(input)?)
            .with_context(|| format!("{input} is not UTF-8"))?
    };
    let trimmed = text.trim();
    if trimmed.starts_with('{') {
        // Strict, as `submit` reads a bundle: what is shown is what would be sent.
        let v = bridgectl_json::from_slice(trimmed.as_bytes())
            .map_err(|e| coded(Code::Refused, format!("input is not acceptable JSON: {e}")))?;
        return v
            .get("signedTx")
            .and_then(|s| s.as_str())
            .map(str::to_owned)
            .ok_or_else(|| coded(Code::Refused, "JSON input has no \"signedTx\" string"));
    }
    Ok(trimmed.to_owned())
}

fn decode(global: &GlobalOpts, args: &DecodeArgs) -> anyhow::Result<()> {
    let text = input_text(&args.input)?;
    let bytes = parse_hex_bytes(&text)?;
    let tx = decode_signed(&bytes)?;
    let mut errors = tx.validity_errors();
    if let Some(chain) = args.expect_chain_id.and_then(|c| tx.chain_error(c)) {
        errors.insert(0, chain);
    }
    if tx.is_pre_eip155() {
        // Valid on chain, but replayable everywhere: say so, without refusing.
        crate::output::note("note: pre-EIP-155 signature (no chain id): replayable on any chain");
    }
    let decoded = calldata::classify(&tx.input);
    let call = match &decoded {
        Decoded::Call(c) => Some(CallOut {
            function: c.function.signature.to_owned(),
            args: c
                .args
                .iter()
                .map(|(p, v)| (p.name.to_owned(), v.to_string()))
                .collect(),
        }),
        _ => None,
    };
    if global.json {
        crate::output::json(&DecodeOutput {
            tx: &tx,
            call,
            valid: errors.is_empty(),
            errors: errors.clone(),
        })?;
    } else {
        let line = |k: &str, v: String| crate::output::line(format!("{k:<16}{v}"));
        line("type:", tx.kind.to_owned())?;
        line(
            "chain id:",
            tx.chain_id
                .map_or("none (pre-EIP-155)".to_owned(), |c| c.to_string()),
        )?;
        line("hash:", tx.hash.to_string())?;
        line("from:", tx.sender.to_string())?;
        line(
            "to:",
            tx.to
                .map_or("(contract creation)".to_owned(), |a| a.to_string()),
        )?;
        line("nonce:", tx.nonce.to_string())?;
        line("gas limit:", tx.gas_limit.to_string())?;
        if let Some(p) = tx.gas_price {
            line("gas price:", format!("{p} wei"))?;
        }
        if let Some(p) = tx.max_fee_per_gas {
            line("max fee/gas:", format!("{p} wei"))?;
        }
        if let Some(p) = tx.max_priority_fee_per_gas {
            line("priority fee:", format!("{p} wei"))?;
        }
        line("value:", format!("{} wei", tx.value))?;
        line("v, r, s:", format!("{}, {:#x}, {:#x}", tx.v, tx.r, tx.s))?;
        line("signing hash:", tx.signing_hash.to_string())?;
        line("intrinsic gas:", tx.intrinsic_gas.to_string())?;
        match decoded {
            Decoded::Empty => line("data:", "(none)".into())?,
            Decoded::Call(c) => {
                line("call:", c.function.signature.to_owned())?;
                for (p, v) in &c.args {
                    line(&format!("  {}", p.name), v.to_string())?;
                }
            }
            Decoded::Unknown { selector, len } => line(
                "call:",
                format!(
                    "unknown selector 0x{} ({len} bytes of calldata)",
                    alloy_primitives::hex::encode(selector)
                ),
            )?,
            Decoded::Malformed { function, reason } => line(
                "call:",
                format!("malformed {} ({reason})", function.signature),
            )?,
            Decoded::TooShort { len } => line("data:", format!("{len} bytes"))?,
        }
    }
    if !errors.is_empty() {
        return Err(coded(
            Code::Refused,
            format!("invalid transaction: {}", errors.remove(0)),
        ));
    }
    Ok(())
}
