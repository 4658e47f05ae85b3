//! Replace and cancel: the one deliberate second signature at a nonce this journal signed.
//!
//! A signed transaction that cannot be mined (under-priced after a gas spike, stuck
//! behind a full pool) holds its sender's nonce, and the nonce discipline refuses every
//! other transaction at it. These are the ways on, each a flow step of the stuck flow
//! itself, never a new flow:
//!
//! - [`Flows::replace`] with [`Purpose::Replacement`]: the same call at a higher gas
//!   price;
//! - with [`Purpose::Cancel`]: a 0-value transfer to the sender itself, which uses the
//!   nonce up and does nothing else.
//!
//! Both go through the one verifier (the trust root's chains, caps and limits; a
//! replacement pinned to the replaced call byte for byte, a cancel to its fixed shape)
//! and the approver, are recorded in the signing log with the hash they replace (the
//! only way past its one-nonce-one-signature guard) and count against spending limits
//! as if both could be mined. The journal keeps every signature of the flow; whichever
//! the chain mines decides how the flow ends ([`Flows::follow_replaced`]).

use alloy_primitives::{B256, Bytes, U256};
use bridgectl_tx::request::Intent;
use bridgectl_tx::{Context, Nonce, Policy, RawTx};
use serde::Serialize;
use serde_json::json;

use super::follow::Ended;
use super::{Approver, Flows, Progress, Submitted};
use crate::Error;
use crate::journal::{FlowRecord, FlowState, Purpose};
use crate::rpc::Receipt;

/// The gas of a plain value transfer, which a cancel is.
pub const CANCEL_GAS_LIMIT: u64 = 21_000;

/// The default raise of a replacement's gas price, in basis points (12.5%): nodes refuse
/// a replacement that pays less than 10% more (geth's `txpool.pricebump`), and a little
/// over that clears it after rounding.
pub const DEFAULT_BUMP_BASIS_POINTS: u32 = 1_250;

/// How a replacement (or a cancel) is priced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repricing {
    /// Exactly this many wei per gas; more than the replaced transaction pays.
    GasPrice(u128),
    /// The replaced transaction's gas price raised by this many basis points (1250 is
    /// 12.5%); the node's going price when that is higher, but only up to the policy's
    /// gas-price cap (without a cap the node's quote does not raise it).
    Bump {
        /// The raise, in hundredths of a percent.
        basis_points: u32,
    },
}

impl Default for Repricing {
    fn default() -> Self {
        Repricing::Bump {
            basis_points: DEFAULT_BUMP_BASIS_POINTS,
        }
    }
}

/// What [`Flows::replace`] did, and how the flow ended.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replaced {
    /// The flow.
    pub tx_id: String,
    /// A replacement or a cancel.
    pub purpose: Purpose,
    /// The hash of the transaction replaced.
    pub replaces: B256,
    /// The new transaction's hash.
    pub tx_hash: B256,
    /// Its gas price, in wei.
    #[serde(with = "decimal_u128")]
    pub gas_price: u128,
    /// Whether the submission was answered "already known".
    pub already_known: bool,
    /// How the flow ended once one of its transactions was mined.
    pub ended: Ended,
}

/// A replacement or cancel sent, not yet awaited.
pub(crate) struct SentAgain {
    /// The hash of the transaction replaced.
    pub replaces: B256,
    /// The new gas price.
    pub gas_price: u128,
    /// The new transaction's submission.
    pub submitted: Submitted,
}

impl Flows {
    /// Signs flow `tx_id`'s transaction again at its nonce, sends it, and waits until one
    /// of the flow's transactions is mined (see the module doc). `purpose` says what is
    /// signed: [`Purpose::Replacement`] the same call at a higher gas price,
    /// [`Purpose::Cancel`] a 0-value transfer from the sender to itself (the flow ends
    /// `cancelled` when that is mined); [`Purpose::Original`] is refused.
    pub async fn replace(
        &self,
        tx_id: &str,
        purpose: Purpose,
        repricing: Repricing,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<Replaced, Error> {
        let sent = self
            .sign_again(tx_id, purpose, repricing, approver, progress)
            .await?;
        let rec = self.journal.get(&sent.submitted.tx_id)?;
        let ended = self.follow_replaced(&rec, progress).await?;
        Ok(Replaced {
            tx_id: sent.submitted.tx_id,
            purpose,
            replaces: sent.replaces,
            tx_hash: sent.submitted.tx_hash,
            gas_price: sent.gas_price,
            already_known: sent.submitted.already_known,
            ended,
        })
    }

    /// The replacement (or cancel) of flow `tx_id` checked, signed, journaled and sent,
    /// not yet awaited: [`Flows::follow_replaced`] says how the flow ends.
    pub(crate) async fn sign_again(
        &self,
        tx_id: &str,
        purpose: Purpose,
        repricing: Repricing,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<SentAgain, Error> {
        let rec = self.journal.find(tx_id)?;
        let tx_id = rec.tx_id.as_str();
        let not = |why: String| Error::CannotReplace {
            tx_id: tx_id.to_owned(),
            why,
        };
        if purpose == Purpose::Original {
            return Err(not("a replacement is a re-priced call or a cancel".into()));
        }
        if matches!(
            rec.state,
            FlowState::Completed | FlowState::Cancelled | FlowState::Retired
        ) {
            return Err(not(format!("it is {} already", rec.state.as_str())));
        }
        let Some(signed_hex) = &rec.signed_tx else {
            return Err(not(
                "it never signed a transaction, so it holds no nonce that could be mined; \
                 nothing needs replacing"
                    .into(),
            ));
        };
        let current = journaled_unsigned(&rec, signed_hex)?;
        let replaces = current.1;
        let current = current.0;
        if let Some((sig, receipt)) = self.mined_signature(&rec).await? {
            return Err(not(format!(
                "its transaction {} was mined in block {}: resuming flow {tx_id} records how \
                 it ended",
                sig.tx_hash, receipt.block_number
            )));
        }
        let quote = self.gas_price_quote(current.chain_id).await?;
        let cap = self.policy_for(current.chain_id).max_gas_price;
        let gas_price = new_gas_price(current.gas_price, repricing, quote, cap).map_err(not)?;
        let (raw, intent, policy) = match purpose {
            Purpose::Cancel => {
                let raw = cancel_tx(&current, gas_price);
                let mut policy = self.cancel_policy(&raw);
                // A cancel bumped from what the operator approved for this nonce is
                // allowed at that price even above today's cap (a node's quote fell, the
                // cap was lowered): it moves nothing, and leaving the nonce stuck is no
                // safer. A price the operator gives is checked like any other.
                if let Repricing::Bump { .. } = repricing {
                    policy.max_gas_price =
                        Some(policy.max_gas_price.map_or(gas_price, |c| c.max(gas_price)));
                }
                let intent = Intent {
                    to: Some(raw.to),
                    chain_id: Some(raw.chain_id),
                    description: Some(format!("cancel flow {tx_id}: use nonce {} up", raw.nonce)),
                    ..Intent::default()
                };
                (raw, intent, policy)
            }
            _ => {
                let raw = RawTx {
                    gas_price,
                    ..current.clone()
                };
                // The replaced call byte for byte: it passed the flow's intent when it was
                // signed, and only its price may change.
                let mut policy = self.policy_for(raw.chain_id);
                policy.expect_data = Some(raw.data.clone());
                let intent = Intent {
                    to: Some(raw.to),
                    chain_id: Some(raw.chain_id),
                    description: Some(format!("replace flow {tx_id} at a higher gas price")),
                    ..Intent::default()
                };
                (raw, intent, policy)
            }
        };
        let checked = (|| {
            let context = Context {
                signer: raw.from,
                gas_price_quote: quote,
                nonce: Nonce::Replacing {
                    nonce: current.nonce,
                    replaces,
                },
                spent: bridgectl_tx::limits::read_spent(
                    &policy,
                    &raw,
                    Some(replaces),
                    self.signing_log.as_ref(),
                    self.clock.now(),
                )?,
            };
            let verified = bridgectl_tx::verify(&raw, Some(&intent), &policy, &context)?;
            // The flow's own nonce, its reservation's lease renewed for the approval.
            self.journal
                .reserve_nonce(tx_id, raw.from, raw.chain_id, raw.nonce)?;
            Ok::<_, Error>(verified)
        })();
        let verified = checked.inspect_err(|e| {
            let _ = self.journal.note(
                tx_id,
                &format!("{}-refused", purpose.as_str()),
                &json!({"error": e.to_string()}),
            );
        })?;
        progress.step(&format!(
            "{} of {replaces} checked: nonce {}, gas price {gas_price} wei",
            purpose.as_str(),
            raw.nonce
        ));
        let run = self.run_of(tx_id, raw.from);
        let signed = run.sign(&verified, &intent, purpose, approver).await?;
        progress.step(&format!("signed {} (nonce {})", signed.hash, signed.nonce));
        let submitted = match run.submit(&signed, progress).await {
            Ok(submitted) => submitted,
            // Another of the flow's transactions was mined meanwhile: the wait that
            // follows finds which.
            Err(e) if super::is_nonce_too_low(&e) => Submitted {
                tx_id: tx_id.to_owned(),
                tx_hash: signed.hash,
                from: signed.from,
                chain_id: signed.chain_id,
                nonce: signed.nonce,
                already_known: false,
            },
            Err(e) => return Err(e),
        };
        Ok(SentAgain {
            replaces,
            gas_price,
            submitted,
        })
    }

    /// The trust root for a cancel: the trusted chains and the caps, with the callee
    /// fixed to the sender itself and no calldata (a cancel is never a contract call).
    pub(crate) fn cancel_policy(&self, raw: &RawTx) -> Policy {
        let mut policy = self.policy_for(raw.chain_id);
        policy.expect_to = Some(raw.from);
        policy.expect_data = Some(Bytes::new());
        policy.max_value = Some(U256::ZERO);
        policy
    }

    /// The first of flow `rec`'s signatures that its chain's node has a receipt for.
    /// `None` when none is mined, or when the chain's node is not known.
    pub(crate) async fn mined_signature(
        &self,
        rec: &FlowRecord,
    ) -> Result<Option<(crate::journal::SignatureRecord, Receipt)>, Error> {
        match rec.chain_id.and_then(|c| self.node_of_chain(c)) {
            Some(node) => self.mined_signature_on(&*node?, rec).await,
            None => Ok(None),
        }
    }

    /// Waits until one of flow `rec`'s transactions is mined and the flow's end is final
    /// ([`Flows::follow`]): `cancelled` when its cancel was mined, `failed` when the mined
    /// call reverted ([`Error::Reverted`]), and otherwise as the flow ends (a redeem when
    /// the platform reports its redemption). Needs the chain's node: only it can say
    /// which of several transactions won.
    pub(crate) async fn follow_replaced(
        &self,
        rec: &FlowRecord,
        progress: &mut dyn Progress,
    ) -> Result<Ended, Error> {
        let tx_id = rec.tx_id.as_str();
        if !rec.chain_id.is_some_and(|c| self.has_node(c)) {
            return Err(Error::Config(
                "following a replaced flow needs its chain's node (the chain's rpc_url): \
                 only the node can say which of its transactions was mined",
            ));
        }
        let signed = self.journal.signatures(tx_id)?.len();
        progress.step(&format!(
            "waiting for one of flow {tx_id}'s {signed} transactions to be mined"
        ));
        let status = self.follow(tx_id, progress).await?;
        status.ended.ok_or_else(|| Error::Timeout {
            what: format!(
                "flow {tx_id}: {}",
                status
                    .unobserved
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "its end to be observed".into())
            ),
            seconds: self.wait.timeout.as_secs(),
            flow: Some(tx_id.to_owned()),
            not_mined: None,
            tx_hash: status.tx_hash,
        })
    }
}

/// The unsigned transaction and hash of the signed bytes journaled for `rec`, checked to
/// be from its recorded sender.
fn journaled_unsigned(rec: &FlowRecord, signed_hex: &str) -> Result<(RawTx, B256), Error> {
    let corrupt = |reason: String| Error::JournalCorrupt {
        tx_id: rec.tx_id.clone(),
        reason,
    };
    let bytes = hex::decode(signed_hex.trim_start_matches("0x"))
        .map_err(|_| corrupt("the signed bytes are not hex".into()))?;
    let decoded = bridgectl_tx::decode::decode_signed(&bytes)
        .map_err(|e| corrupt(format!("the signed bytes do not decode: {e}")))?;
    let unsigned = decoded
        .unsigned()
        .ok_or_else(|| corrupt("the signed bytes are not a legacy transaction".into()))?;
    if rec.from.as_deref().and_then(|f| f.parse().ok()) != Some(decoded.sender) {
        return Err(corrupt(format!(
            "the signed bytes are from {}, the journal records {:?}",
            decoded.sender, rec.from
        )));
    }
    Ok((unsigned, decoded.hash))
}

/// The cancel of `current`: from its sender to itself, nothing sent, no call, at its
/// nonce and chain.
pub(crate) fn cancel_tx(current: &RawTx, gas_price: u128) -> RawTx {
    RawTx {
        from: current.from,
        to: current.from,
        data: Bytes::new(),
        nonce: current.nonce,
        gas_limit: CANCEL_GAS_LIMIT,
        gas_price,
        chain_id: current.chain_id,
        value: U256::ZERO,
    }
}

/// The gas price of a transaction replacing one that pays `old`: as asked, and always
/// more than `old` (a node keeps the first of two transactions that pay the same).
///
/// A bump is bounded by what the operator already approved: `old` raised by the bump.
/// The node's quote (one witness, which may lie or spike) raises it further only up to
/// the policy's own gas-price `cap`; without one it does not raise it at all (a price
/// above the bump is the operator's to give, [`Repricing::GasPrice`]).
fn new_gas_price(
    old: u128,
    repricing: Repricing,
    quote: Option<u128>,
    cap: Option<u128>,
) -> Result<u128, String> {
    let price = match repricing {
        Repricing::GasPrice(p) => p,
        Repricing::Bump { basis_points } => {
            let raised = bumped(old, basis_points)?;
            match cap {
                Some(cap) => raised.max(quote.unwrap_or(0).min(cap)),
                None => raised,
            }
        }
    };
    if price <= old {
        return Err(format!(
            "a replacement must pay more than the {old} wei per gas of the transaction it \
             replaces (a node keeps the first of two that pay the same); {price} wei is not"
        ));
    }
    Ok(price)
}

/// `old` raised by `basis_points`, rounded up.
fn bumped(old: u128, basis_points: u32) -> Result<u128, String> {
    old.checked_mul(10_000 + u128::from(basis_points))
        .map(|v| v.div_ceil(10_000))
        .ok_or_else(|| format!("{old} wei raised by {basis_points} basis points overflows"))
}

mod decimal_u128 {
    use serde::Serializer;

    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replacement_always_pays_more_than_what_it_replaces() {
        let bump = Repricing::default();
        assert_eq!(new_gas_price(1_000, bump, None, None), Ok(1_125));
        // Rounded up: 12.5% of 7 is 0.875.
        assert_eq!(new_gas_price(7, bump, None, None), Ok(8));
        assert_eq!(
            new_gas_price(1_000, Repricing::GasPrice(2_000), Some(9_000), None),
            Ok(2_000)
        );
        assert!(new_gas_price(1_000, Repricing::GasPrice(1_000), None, None).is_err());
        assert!(
            new_gas_price(0, Repricing::Bump { basis_points: 0 }, None, None).is_err(),
            "a raise of nothing is no replacement"
        );
        assert!(new_gas_price(u128::MAX, bump, None, None).is_err());
    }

    /// A node quoting 5,000 gwei (a spike, or a lie) does not price a replacement: without
    /// a cap of the policy it pays the bump over what was approved, with one the quote
    /// raises it only up to the cap.
    #[test]
    fn the_nodes_quote_raises_a_bump_only_within_the_policys_cap() {
        let gwei = 1_000_000_000u128;
        let bump = Repricing::default();
        let spike = Some(5_000 * gwei);
        assert_eq!(
            new_gas_price(2 * gwei, bump, spike, None),
            Ok(2_250_000_000)
        );
        assert_eq!(
            new_gas_price(2 * gwei, bump, spike, Some(50 * gwei)),
            Ok(50 * gwei)
        );
        assert_eq!(
            new_gas_price(2 * gwei, bump, Some(3 * gwei), Some(50 * gwei)),
            Ok(3 * gwei),
            "the going price, under the cap"
        );
        assert_eq!(
            new_gas_price(2 * gwei, bump, Some(gwei), Some(50 * gwei)),
            Ok(2_250_000_000),
            "never less than the bump"
        );
    }

    #[test]
    fn a_cancel_moves_nothing_and_keeps_the_nonce() {
        let current = RawTx {
            from: alloy_primitives::Address::repeat_byte(1),
            to: alloy_primitives::Address::repeat_byte(2),
            data: Bytes::from(vec![1, 2, 3, 4]),
            nonce: 7,
            gas_limit: 90_000,
            gas_price: 10,
            chain_id: 31_337,
            value: U256::from(5),
        };
        let c = cancel_tx(&current, 12);
        assert_eq!(
            (c.from, c.to, c.nonce, c.chain_id, c.gas_price),
            (current.from, current.from, 7, 31_337, 12)
        );
        assert!(c.data.is_empty() && c.value.is_zero());
        assert_eq!(c.gas_limit, CANCEL_GAS_LIMIT);
    }
}
