//! The policy flags, parsed once for every command that signs. The profile is the trust
//! root (`bridgectl_flow::Profile::trust_root`): the chains and contracts it names (with
//! their tokens) become the [`bridgectl_tx::Trusted`] facts the verifier checks every
//! transaction against, the flags over its policy. A sign request or a platform answer
//! never adds to them.

use std::collections::BTreeMap;

use anyhow::Context as _;
use bridgectl_tx::Policy;
use clap::Args;

use crate::exit::{Code, WithCode, coded};

// Caps on what a signature may cost or send; every signing command has them, each also
// settable per profile under `[profiles.<name>.policy]` (flags win).
#[derive(Debug, Args, Default, Clone)]
pub struct CapOpts {
    /// Refuse a gas price above this: wei, or with a unit (`50gwei`) [default: the
    /// profile's; online, else 10x the node's price; offline a cap is required].
    #[arg(long, value_name = "PRICE", help_heading = "Policy")]
    pub max_gas_price: Option<String>,
    /// Refuse when gasLimit x gasPrice is above this: wei, or with a unit (`0.01ether`).
    #[arg(long, value_name = "FEE", help_heading = "Policy")]
    pub max_fee: Option<String>,
    /// Refuse a gas limit above this [default: the profile's, else 1000000].
    #[arg(long, value_name = "GAS", help_heading = "Policy")]
    pub max_gas_limit: Option<u64>,
    /// Allow the transaction to send up to this much native value (`1ether`, wei)
    /// [default: 0: no bridge call sends value].
    #[arg(long, value_name = "AMOUNT", help_heading = "Policy")]
    pub allow_value: Option<String>,
}

// What the transaction must be, for input that carries no intent of its own (a bare
// rawTx or an envelope given to `sign`), plus the caps.
#[derive(Debug, Args, Default, Clone)]
pub struct ExpectOpts {
    /// Refuse unless the chain id is this [default: one the profile names].
    #[arg(
        long,
        value_name = "ID",
        help_heading = "Policy",
        add = crate::completers::chain_ids()
    )]
    pub expect_chain_id: Option<u64>,
    /// Refuse unless the transaction goes to this address [default: a contract the
    /// profile names].
    #[arg(long, value_name = "ADDRESS", help_heading = "Policy")]
    pub expect_to: Option<String>,
    /// Refuse unless the calldata calls this function (`redeem` or `redeem(uint256)`).
    #[arg(long, value_name = "NAME", help_heading = "Policy")]
    pub expect_function: Option<String>,
    /// Refuse unless the argument NAME has VALUE (base units or address); repeatable.
    #[arg(long, value_name = "NAME=VALUE", help_heading = "Policy")]
    pub expect_arg: Vec<String>,
    /// Refuse unless the calldata is exactly these bytes (`0x` for none).
    #[arg(long, value_name = "HEX", help_heading = "Policy")]
    pub expect_data: Option<String>,
    /// The caps.
    #[command(flatten)]
    pub caps: CapOpts,
}

impl CapOpts {
    /// The policy the flags describe; a malformed value is a usage error.
    pub fn to_policy(&self) -> anyhow::Result<Policy> {
        let mut p = Policy::default();
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
        if let Some(text) = &self.allow_value {
            p.max_value = Some(
                bridgectl_tx::amount::parse_native(text)
                    .context("--allow-value")
                    .code(Code::Usage)?,
            );
        }
        p.max_gas_limit = self.max_gas_limit;
        Ok(p)
    }
}

impl ExpectOpts {
    /// The policy the flags describe; a malformed value is a usage error.
    pub fn to_policy(&self) -> anyhow::Result<Policy> {
        let mut p = self.caps.to_policy()?;
        p.expect_chain_id = self.expect_chain_id;
        p.expect_function.clone_from(&self.expect_function);
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
        // Arguments a person names are the whole call: a function with other, unnamed
        // arguments (`transferWithFee` beside `_amount`) is not what was asked for.
        p.exact_args = !args.is_empty();
        p.expect_args = args;
        if let Some(hex) = &self.expect_data {
            let bytes = hex
                .strip_prefix("0x")
                .and_then(|h| alloy_primitives::hex::decode(h).ok())
                .ok_or_else(|| {
                    coded(
                        Code::Usage,
                        format!(
                            "--expect-data {hex:?}: expected 0x and an even number of hex digits"
                        ),
                    )
                })?;
            p.expect_data = Some(bytes.into());
        }
        Ok(p)
    }
}
