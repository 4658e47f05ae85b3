//! What a hostile platform does to the transactions it builds: the switches tests turn
//! on, applied in one place.

use alloy_primitives::{Address, Bytes, U256};
use serde_json::{Value, json};

use crate::contracts;

use super::common::q;

/// Hostile-platform mode: changes `raw_tx` the way `h` says (see [`Hostile`]).
pub(crate) fn tamper(
    raw_tx: &mut Value,
    h: crate::config::Hostile,
    data: &Bytes,
    gas_price: u128,
    chain_id: u64,
) {
    use crate::config::Hostile as H;
    let other = Address::repeat_byte(0x66);
    match h {
        H::OtherFrom => raw_tx["from"] = json!(other),
        H::OtherChainId => raw_tx["chainId"] = json!(chain_id + 1),
        H::OtherContract => raw_tx["to"] = json!(other),
        H::OtherSelector | H::OtherAmount => raw_tx["data"] = json!(tampered_data(h, data)),
        H::InflatedGasPrice => raw_tx["gasPrice"] = json!(q(gas_price.saturating_mul(1000))),
        H::InflatedGasLimit => raw_tx["gasLimit"] = json!(q(HOSTILE_GAS_LIMIT)),
        H::MissingChainId => {
            if let Some(o) = raw_tx.as_object_mut() {
                o.remove("chainId");
            }
        }
        H::ExtraField => raw_tx["maxFeePerGas"] = json!("0x1"),
        H::NonceGap | H::NonceReplacement => {
            let nonce = raw_tx["nonce"]
                .as_str()
                .and_then(|n| u64::from_str_radix(n.trim_start_matches("0x"), 16).ok())
                .unwrap_or_default();
            raw_tx["nonce"] = json!(q(tampered_nonce(h, nonce)));
        }
    }
}

/// The gas limit a hostile platform asks for.
pub(crate) const HOSTILE_GAS_LIMIT: u64 = 30_000_000;

/// The nonce a hostile platform hands out instead of `nonce` (the next one): 1000 above
/// for [`Hostile::NonceGap`], one below for [`Hostile::NonceReplacement`], else `nonce`.
///
/// [`Hostile::NonceGap`]: crate::config::Hostile::NonceGap
/// [`Hostile::NonceReplacement`]: crate::config::Hostile::NonceReplacement
pub(crate) fn tampered_nonce(h: crate::config::Hostile, nonce: u64) -> u64 {
    use crate::config::Hostile as H;
    match h {
        H::NonceGap => nonce + 1000,
        H::NonceReplacement => nonce.saturating_sub(1),
        _ => nonce,
    }
}

/// The calldata a hostile platform puts in place of `data`: another function with the
/// same argument layout (`stake` for `redeem`, `redeem` otherwise) for
/// [`Hostile::OtherSelector`], the last word plus one for [`Hostile::OtherAmount`].
///
/// [`Hostile::OtherSelector`]: crate::config::Hostile::OtherSelector
/// [`Hostile::OtherAmount`]: crate::config::Hostile::OtherAmount
pub(crate) fn tampered_data(h: crate::config::Hostile, data: &Bytes) -> Bytes {
    use crate::config::Hostile as H;
    let mut d = data.to_vec();
    match h {
        H::OtherSelector if d.len() >= 4 => {
            // redeem(uint256) 0xdb006a75 <-> stake(uint256) 0xa694fc3a
            let swap_to: [u8; 4] = if d[..4] == contracts::REDEEM_SELECTOR {
                [0xa6, 0x94, 0xfc, 0x3a]
            } else {
                contracts::REDEEM_SELECTOR
            };
            d[..4].copy_from_slice(&swap_to);
        }
        H::OtherAmount if d.len() >= 36 => {
            let n = d.len();
            let word = U256::from_be_slice(&d[n - 32..]).wrapping_add(U256::from(1u8));
            d[n - 32..].copy_from_slice(&word.to_be_bytes::<32>());
        }
        _ => {}
    }
    Bytes::from(d)
}
