//! A swap's own ST credit: the fact that completes a swap.
//!
//! The platform has no swap status and emits no event of a swap (spec: "Swap states and
//! transitions: not shown"), so a swap ends on chain facts that belong to it alone:
//!
//! 1. its MT transfer (of its transactions, the one mined at its nonce) has a successful
//!    receipt on the main chain; and
//! 2. an ST `Transfer` log to the swap's user is on the side chain that is this swap's:
//!    - from the credit source ([`SwapCredit::source`](crate::SwapCredit::source): the zero address, a mint, unless
//!      the bridge description names the account the bridge pays from),
//!    - in a block after the one the side chain was at when the swap began (journaled
//!      before its MT transfer was signed; that block was mined before the transfer
//!      existed, so nothing in it pays for it), with a timestamp no earlier than the block
//!      of (1): a credit does not come before what it pays for,
//!    - of the amount the peg ratio gives for the MT sent (rounded down to an ST base
//!      unit, as a bridge keeps the remainder), when the bridge description has the ratio,
//!    - claimed by no other flow of the journal: the claim and the swap's completion are
//!      one commit, and a credit completes one swap only.
//!
//! A balance never decides: another transfer to the user raises it, the user's own
//! spending lowers it, and neither says anything of this swap.
//!
//! Without a peg ratio the amount cannot be checked: a swap claims the first unclaimed
//! credit from the source to its user after its transfer. Each swap still completes on a
//! credit of its own that came after its transfer, and the credits of a user's swaps are
//! all accounted for; with several of a user's swaps open at once, which credit paid which
//! swap is not proven.
//!
//! The logs are read with `eth_getLogs` over ranges of at most
//! [`MAX_LOG_RANGE`](crate::rpc::MAX_LOG_RANGE) blocks, filtered by the node on the
//! token, the `Transfer` topic, the source and the user, and checked again here: a node's
//! answer is a claim like any other.

use std::collections::HashMap;

use alloy_primitives::{Address, B256, U256, b256};

use super::Flows;
use crate::Error;
use crate::journal::Credit;
use crate::node::Node;
use crate::rpc::{Log, MAX_LOG_RANGE};

/// `keccak256("Transfer(address,address,uint256)")`, the ERC-20 `Transfer` event.
const TRANSFER_TOPIC: B256 =
    b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

/// The step a swap journals, before its MT transfer is signed, with the side chain's
/// newest block: its credit is looked for from there on.
pub(super) const SIDE_FROM: &str = "side-from";

/// What a swap's credit is looked for by: read from its journal record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SwapFacts {
    /// The user the ST goes to (the swap's sender).
    pub owner: Address,
    /// The ST base units its MT is worth, when the peg ratio is known.
    pub expected: Option<U256>,
    /// The side chain's newest block when the swap began.
    pub side_from: u64,
}

/// `address` as a log topic (left-padded to 32 bytes).
fn address_topic(address: Address) -> B256 {
    address.into_word()
}

impl Flows {
    /// The credit swap `tx_id` holds, or else the first credit that is its own (see the
    /// module doc), claimed for it and completing it in one commit with `result`.
    /// `mined_at` is the timestamp of the block its MT transfer was mined in. `None`
    /// while no credit of its own is on the side chain.
    pub(super) async fn claim_own_credit(
        &self,
        tx_id: &str,
        facts: &SwapFacts,
        mined_at: u64,
        result: &serde_json::Value,
    ) -> Result<Option<Credit>, Error> {
        if let Some(held) = self.journal.credit_of(tx_id)? {
            return Ok(Some(held));
        }
        let side = &self.bridge()?.side;
        let node = self.node_of_chain(side.chain_id).ok_or(Error::Config(
            "a swap's ST credit is read from the side chain's node (its rpc_url)",
        ))??;
        let mut blocks = HashMap::new();
        // A credit another process claims between the look and the claim is skipped on
        // the next look; each round skips at least one more, so this ends.
        loop {
            let Some(credit) = self
                .first_unclaimed_credit(&*node, facts, mined_at, &mut blocks)
                .await?
            else {
                return Ok(None);
            };
            let mut with_credit = result.clone();
            if let Some(o) = with_credit.as_object_mut() {
                o.insert(
                    "credit".into(),
                    serde_json::to_value(&credit).unwrap_or_default(),
                );
            }
            if self
                .journal
                .complete_with_credit(tx_id, &credit, &with_credit)?
            {
                return Ok(Some(credit));
            }
            if let Some(held) = self.journal.credit_of(tx_id)? {
                return Ok(Some(held));
            }
        }
    }

    /// The first credit on the side chain that could be the swap's and no flow claimed.
    /// `timestamps` caches block timestamps across rounds.
    async fn first_unclaimed_credit(
        &self,
        node: &dyn Node,
        facts: &SwapFacts,
        mined_at: u64,
        timestamps: &mut HashMap<u64, u64>,
    ) -> Result<Option<Credit>, Error> {
        let bridge = self.bridge()?;
        let side = &bridge.side;
        let source = bridge.swap_credit.source;
        let head = node.block_number().await?;
        let topics = [
            Some(TRANSFER_TOPIC),
            Some(address_topic(source)),
            Some(address_topic(facts.owner)),
        ];
        // The block the side chain was at when the swap began is not searched: it was
        // mined before the transfer was signed (an account funded just before its swap
        // has its funding there, a mint from the source to its owner).
        let mut from = facts.side_from.saturating_add(1);
        while from <= head {
            let to = head.min(from.saturating_add(MAX_LOG_RANGE - 1));
            let mut logs = node.logs(side.token, &topics, from, to).await?;
            logs.sort_by_key(|l| (l.block_number, l.log_index));
            for log in logs {
                let Some(amount) = credit_amount(&log, side.token, &topics, from, to) else {
                    continue;
                };
                if facts.expected.is_some_and(|want| want != amount) {
                    continue;
                }
                let hash = log.transaction_hash.to_string();
                if self
                    .journal
                    .credit_claimed_by(side.chain_id, &hash, log.log_index)?
                    .is_some()
                {
                    continue;
                }
                let at = match timestamps.get(&log.block_number) {
                    Some(t) => *t,
                    None => {
                        let Some(t) = node.block_timestamp(log.block_number).await? else {
                            continue;
                        };
                        timestamps.insert(log.block_number, t);
                        t
                    }
                };
                if at < mined_at {
                    continue;
                }
                return Ok(Some(Credit {
                    chain_id: side.chain_id,
                    tx_hash: hash,
                    log_index: log.log_index,
                    block: log.block_number,
                    amount: amount.to_string(),
                }));
            }
            from = to + 1;
        }
        Ok(None)
    }

    /// The facts swap `tx_id` is completed by, from its journal record: `None` when it
    /// was journaled without the side chain's block (by an older bridgectl, or without a
    /// side-chain node), so nothing here can tell its credit apart.
    pub(super) fn swap_facts(
        &self,
        tx_id: &str,
        owner: Address,
        intent: &serde_json::Value,
    ) -> Result<Option<SwapFacts>, Error> {
        let bridge = self.bridge()?;
        let side_from = self
            .journal
            .steps(tx_id)?
            .iter()
            .rev()
            .find(|s| s.step == SIDE_FROM)
            .and_then(|s| s.detail.get("block")?.as_u64());
        let Some(side_from) = side_from else {
            return Ok(None);
        };
        let sent: Option<U256> = intent
            .get("amount")
            .and_then(|a| a.as_str())
            .and_then(|a| a.parse().ok());
        let expected = match (bridge.swap_credit.ratio, sent) {
            (Some(ratio), Some(sent)) => {
                ratio.credit_for(sent, bridge.main.decimals, bridge.side.decimals)
            }
            _ => None,
        };
        Ok(Some(SwapFacts {
            owner,
            expected,
            side_from,
        }))
    }
}

/// The ST amount `log` credits, when it is a `Transfer` of `token` with exactly
/// `topics` in blocks `from..=to`, 32 bytes of data, not removed by a reorganisation.
fn credit_amount(
    log: &Log,
    token: Address,
    topics: &[Option<B256>; 3],
    from: u64,
    to: u64,
) -> Option<U256> {
    let wanted: Vec<B256> = topics.iter().flatten().copied().collect();
    (log.address == token
        && !log.removed
        && log.topics == wanted
        && (from..=to).contains(&log.block_number)
        && log.data.len() == 32)
        .then(|| U256::from_be_slice(&log.data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(block: u64) -> Log {
        Log {
            address: Address::repeat_byte(0x11),
            block_number: block,
            transaction_hash: B256::repeat_byte(1),
            log_index: 0,
            topics: vec![
                TRANSFER_TOPIC,
                address_topic(Address::ZERO),
                address_topic(Address::repeat_byte(0x22)),
            ],
            data: U256::from(7u8).to_be_bytes::<32>().to_vec(),
            removed: false,
        }
    }

    #[test]
    fn only_a_transfer_of_the_token_from_the_source_to_the_user_is_a_credit() {
        let token = Address::repeat_byte(0x11);
        let topics = [
            Some(TRANSFER_TOPIC),
            Some(address_topic(Address::ZERO)),
            Some(address_topic(Address::repeat_byte(0x22))),
        ];
        assert_eq!(
            credit_amount(&log(5), token, &topics, 1, 9),
            Some(U256::from(7u8))
        );
        let mut other_token = log(5);
        other_token.address = Address::repeat_byte(0x12);
        let mut other_source = log(5);
        other_source.topics[1] = address_topic(Address::repeat_byte(0x33));
        let mut removed = log(5);
        removed.removed = true;
        let mut short = log(5);
        short.data.pop();
        for (what, l) in [
            ("another token", other_token),
            ("another source", other_source),
            ("removed by a reorganisation", removed),
            ("31 bytes of data", short),
            ("outside the range asked", log(10)),
        ] {
            assert_eq!(credit_amount(&l, token, &topics, 1, 9), None, "{what}");
        }
    }
}
