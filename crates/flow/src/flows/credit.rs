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
//!    - claimed by no other flow: the claim is made in the signing log (one claim per
//!      credit whatever journal or process follows the swap, as the nonce guard is
//!      kept) and in the journal, where it and the swap's conclusion are one commit.
//!
//! Both facts must then be final on their chains (`crate::finality`) before the swap is
//! completed; a credit the side chain takes back releases its claim and the swap waits
//! for a credit again.
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
use bridgectl_tx::CreditClaim;

use super::Flows;
use crate::Error;
use crate::journal::{Credit, Fact, FactKind};
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
    /// module doc), claimed for it (in the signing log, once per key whatever journal
    /// asks, then in the journal) and concluding it in one commit with `result`: the
    /// swap is `confirming` on `receipt` (its MT transfer's) and the credit's log until
    /// both are final. `mined_at` is the timestamp of the block its MT transfer was mined
    /// in; `timestamps` keeps the side chain's block times between looks. `None` while no
    /// credit of its own is on the side chain.
    pub(super) async fn claim_own_credit(
        &self,
        tx_id: &str,
        facts: &SwapFacts,
        mined_at: u64,
        result: &serde_json::Value,
        receipt: Fact,
        timestamps: &mut HashMap<u64, u64>,
    ) -> Result<Option<Credit>, Error> {
        if let Some(held) = self.journal.credit_of(tx_id)? {
            return Ok(Some(held));
        }
        let bridge = self.bridge()?;
        let side = &bridge.side;
        let node = self.node_of_chain(side.chain_id).ok_or(Error::Config(
            "a swap's ST credit is read from the side chain's node (its rpc_url)",
        ))??;
        let genesis = self.verify_chain(&*node, side.chain_id).await?;
        let search = CreditSearch {
            token: side.token,
            source: bridge.swap_credit.source,
            owner: facts.owner,
            expected: facts.expected,
            from: facts.side_from.saturating_add(1),
            mined_at,
        };
        // A credit another process claims between the look and the claim is skipped on
        // the next look; each round skips at least one more, so this ends.
        loop {
            let journal = &self.journal;
            let mut claimed = |log: &Log| -> Result<bool, Error> {
                if journal
                    .credit_claimed_by(
                        side.chain_id,
                        &log.transaction_hash.to_string(),
                        log.log_index,
                    )?
                    .is_some()
                {
                    return Ok(true);
                }
                let holder = self.signing_log.claim_credit(&CreditClaim {
                    key: facts.owner,
                    chain_id: side.chain_id,
                    genesis,
                    tx_hash: log.transaction_hash,
                    log_index: log.log_index,
                    claimant: tx_id.to_owned(),
                })?;
                Ok(holder.is_some())
            };
            let Some((log, amount)) = search
                .first_unclaimed(&*node, timestamps, &mut claimed)
                .await?
            else {
                return Ok(None);
            };
            let credit = Credit {
                chain_id: side.chain_id,
                tx_hash: log.transaction_hash.to_string(),
                log_index: log.log_index,
                block: log.block_number,
                amount: amount.to_string(),
            };
            let mut with_credit = result.clone();
            if let Some(o) = with_credit.as_object_mut() {
                o.insert(
                    "credit".into(),
                    serde_json::to_value(&credit).unwrap_or_default(),
                );
            }
            let credit_fact = Fact {
                kind: FactKind::Credit,
                chain_id: side.chain_id,
                tx_hash: log.transaction_hash,
                log_index: Some(log.log_index),
                block: log.block_number,
                block_hash: log.block_hash,
                is_final: false,
            };
            if self.journal.conclude_with_credit(
                tx_id,
                &credit,
                &with_credit,
                &[receipt.clone(), credit_fact],
            )? {
                return Ok(Some(credit));
            }
            if let Some(held) = self.journal.credit_of(tx_id)? {
                return Ok(Some(held));
            }
        }
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

/// What a swap's credit is searched for by (see the module doc): the decision is this
/// type's alone, from what the side chain's node answers, so that it is tested with a
/// node that answers what a test sets (near misses: one base unit off, one block early).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CreditSearch {
    /// The ST contract.
    pub token: Address,
    /// Whom a credit comes from (the zero address: a mint).
    pub source: Address,
    /// The swap's sender, whom it pays.
    pub owner: Address,
    /// The ST base units the peg gives for its MT, when the peg ratio is known.
    pub expected: Option<U256>,
    /// The first side-chain block searched: the one after the block the side chain was
    /// at when the swap began.
    pub from: u64,
    /// The timestamp of the block its MT transfer was mined in: a credit does not come
    /// before what it pays for.
    pub mined_at: u64,
}

impl CreditSearch {
    /// The first log on the side chain (in chain order) that could be this swap's credit
    /// and that `claimed` does not say is another flow's, with its amount. `claimed` is
    /// asked last, of a log that passed every other check: it may claim it (the claim is
    /// then this swap's). `timestamps` caches block times across looks.
    pub(crate) async fn first_unclaimed(
        &self,
        node: &dyn Node,
        timestamps: &mut HashMap<u64, u64>,
        claimed: &mut dyn FnMut(&Log) -> Result<bool, Error>,
    ) -> Result<Option<(Log, U256)>, Error> {
        let head = node.block_number().await?;
        let topics = [
            Some(TRANSFER_TOPIC),
            Some(address_topic(self.source)),
            Some(address_topic(self.owner)),
        ];
        let mut from = self.from;
        while from <= head {
            let to = head.min(from.saturating_add(MAX_LOG_RANGE - 1));
            let mut logs = node.logs(self.token, &topics, from, to).await?;
            logs.sort_by_key(|l| (l.block_number, l.log_index));
            for log in logs {
                let Some(amount) = credit_amount(&log, self.token, &topics, from, to) else {
                    continue;
                };
                if self.expected.is_some_and(|want| want != amount) {
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
                if at < self.mined_at || claimed(&log)? {
                    continue;
                }
                return Ok(Some((log, amount)));
            }
            from = to + 1;
        }
        Ok(None)
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
    use crate::node::fake::FakeNode;

    fn log(block: u64) -> Log {
        Log {
            address: Address::repeat_byte(0x11),
            block_number: block,
            block_hash: B256::ZERO,
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

    const TOKEN: Address = Address::repeat_byte(0x11);
    const OWNER: Address = Address::repeat_byte(0x22);

    /// A mint of `amount` to the owner in `block`, transaction `tx`.
    fn mint(block: u64, tx: u8, amount: u64) -> Log {
        Log {
            transaction_hash: B256::repeat_byte(tx),
            data: U256::from(amount).to_be_bytes::<32>().to_vec(),
            ..log(block)
        }
    }

    /// The search of a swap worth `expected` ST base units whose transfer was mined at
    /// block 5's time (the fake chain's block n has time 1000 + n), begun at block 2.
    fn search(expected: Option<u64>) -> CreditSearch {
        CreditSearch {
            token: TOKEN,
            source: Address::ZERO,
            owner: OWNER,
            expected: expected.map(U256::from),
            from: 3,
            mined_at: 1005,
        }
    }

    async fn found(node: &FakeNode, s: CreditSearch, claimed: &[u8]) -> Option<(u64, u8)> {
        let mut never = |l: &Log| Ok(claimed.contains(&l.transaction_hash[0]));
        s.first_unclaimed(node, &mut HashMap::new(), &mut never)
            .await
            .expect("search")
            .map(|(l, _)| (l.block_number, l.transaction_hash[0]))
    }

    /// Near misses decide a credit: the peg amount minus one and plus one are not it,
    /// the exact amount is; a mint before the transfer was mined is not it however
    /// exact; a claimed one is skipped for the next.
    #[tokio::test]
    async fn a_credit_is_the_exact_peg_amount_after_the_transfer_and_unclaimed() {
        let node = FakeNode::new(31338).with_head(9);
        node.add_log(mint(4, 0xa4, 100)); // exact, but before the transfer was mined
        node.add_log(mint(6, 0xb1, 99)); // one base unit short
        node.add_log(mint(6, 0xb2, 101)); // one over
        node.add_log(mint(7, 0xc1, 100)); // the credit
        node.add_log(mint(8, 0xc2, 100)); // a later one of the same amount
        assert_eq!(found(&node, search(Some(100)), &[]).await, Some((7, 0xc1)));
        assert_eq!(
            found(&node, search(Some(100)), &[0xc1]).await,
            Some((8, 0xc2)),
            "its claim held by another swap: the next"
        );
        assert_eq!(found(&node, search(Some(100)), &[0xc1, 0xc2]).await, None);
        assert_eq!(
            found(&node, search(Some(99)), &[]).await,
            Some((6, 0xb1)),
            "the amount decides, not the order"
        );
        assert_eq!(
            found(&node, search(None), &[]).await,
            Some((6, 0xb1)),
            "without a peg: the first after the transfer"
        );
    }

    /// A log the node marks removed is not a credit, nor one of another token.
    #[tokio::test]
    async fn a_removed_log_is_no_credit() {
        let node = FakeNode::new(31338).with_head(9);
        node.add_log(Log {
            removed: true,
            ..mint(7, 0xc1, 100)
        });
        node.add_log(Log {
            address: Address::repeat_byte(0x99),
            ..mint(7, 0xc2, 100)
        });
        assert_eq!(found(&node, search(Some(100)), &[]).await, None);
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
