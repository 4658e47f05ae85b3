//! The check of a batch before it runs: each item against its sender's token balance,
//! its nonce and the one verifier as the run would sign it, and each sender's native
//! balance against the gas its items would burn. An item is refused with the very error
//! a single flow returns for the same cause ([`crate::Error::cause`]).
//! It reads the nodes and the signing log; it unlocks nothing and records nothing, so
//! `batch plan` can show it and `batch run` can refuse on it before any passphrase is
//! read. A batch that passes here can still meet a refusal when it runs (the log or a
//! balance moved meanwhile, the platform sent something else): the run checks every
//! item again.
//!
//! What is known in advance, and how it is counted:
//! - token balances: each sender's balance of each token (its chain's node, else the
//!   platform), against its items in input order as if every earlier item were sent
//!   (an item refused adds nothing); one above it is [`crate::Error::BalanceTooLow`], as
//!   the run's item would be. A balance that cannot be read refuses nothing, as in the
//!   run;
//! - the nonce: the sender's next nonce on the chain (its node's pending count, else
//!   the platform's) held by a flow of this journal refuses every item of the sender
//!   there with [`crate::Error::NonceHeld`], as the run would; beyond that the run takes
//!   each item's nonce as it signs;
//! - spending limits: each key's window total is read from the signing log as the run's
//!   verifier reads it ([`bridgectl_tx::limits::window_query`]), and the batch's own items
//!   are added in input order as if every earlier item were signed (a refused item adds
//!   nothing: the run would not sign it);
//! - the allowlist: every transfer's recipient. A swap's destination is the address the
//!   platform issues when the item runs, so the allowlist is applied to it then;
//! - gas: the node's estimate of each item's call plus a fifth (what the run gives a
//!   transfer or swap it builds; a redeem's gas is the platform's choice, under the same
//!   caps) at the node's gas price quote, summed per sender and chain. A call the node
//!   cannot estimate counts the gas-limit cap, the most the run would sign.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use alloy_primitives::{Address, U256};
use bridgectl_tx::limits::Spent;
use bridgectl_tx::request::Intent;
use bridgectl_tx::{Context, Nonce, NonceFacts, Policy, RawTx};

use super::refusal::{GasNeed, earlier_items};
use super::{BatchItem, BatchOp, ShortSender};
use crate::Error;
use crate::error::RefusedItem;
use crate::flows::swap::swap_intent;
use crate::flows::transfer::plain_transfer_intent;
use crate::flows::{DEFAULT_MAX_GAS_LIMIT, Flows, TokenSide};

/// Where a swap's MT goes in the check: the platform issues the real address only when
/// the item runs. Used for the gas estimate (a transfer to an address that holds none of
/// the token: the dearer case) and nothing else.
const SWAP_ADDRESS_UNKNOWN: Address = Address::repeat_byte(0x5a);

/// What the run of a batch would meet, found before any key is unlocked
/// ([`Flows::check_batch`]): balances, nonces, limits, the allowlist, the caps, gas.
#[derive(Debug, Clone)]
pub struct BatchCheck {
    /// The items the run would refuse, in input order, each with the error a single
    /// flow returns for its cause.
    pub refused: Vec<RefusedItem>,
    /// Per sender and chain: the most gas its items would burn, beside its balance.
    pub gas: Vec<GasNeed>,
}

impl BatchCheck {
    /// The refusal the run would meet: the refused items and the senders short of gas.
    pub fn verdict(&self) -> Result<(), Error> {
        let short: Vec<GasNeed> = self.gas.iter().filter(|g| g.short()).cloned().collect();
        if self.refused.is_empty() && short.is_empty() {
            return Ok(());
        }
        Err(Error::BatchRefused {
            refused: self.refused.clone(),
            short,
        })
    }
}

/// The running total of one key's window: what the log holds, what the batch adds.
struct Window {
    logged: Spent,
    batch: U256,
}

impl Flows {
    /// Checks `items` as the run would before signing each (see the module doc): each
    /// sender's token balance against its items, its next nonce against the flows that
    /// hold one, the verifier with the signing log's window totals plus the batch's
    /// earlier items, and each sender's native balance against its items' gas. An error
    /// is a failure to find out (a node, the signing log); what the run would refuse is
    /// in the [`BatchCheck`] ([`BatchCheck::verdict`]), each refused item with the error
    /// a single flow returns ([`RefusedItem::error`]).
    pub async fn check_batch(&self, items: &[BatchItem]) -> Result<BatchCheck, Error> {
        let now = self.clock.now();
        // Per sender and token: what it holds (when it can be read) and what its
        // earlier items move.
        let mut balances: HashMap<(Address, TokenSide), (Option<U256>, U256)> = HashMap::new();
        // Per sender and chain: the refusal of its next nonce, when a flow holds it.
        let mut held: HashMap<(Address, u64), Option<std::sync::Arc<Error>>> = HashMap::new();
        let mut quotes: HashMap<u64, Option<u128>> = HashMap::new();
        let mut log_checked: Vec<Address> = Vec::new();
        let mut windows: HashMap<(Address, u64, Address, u64), Window> = HashMap::new();
        let mut check = BatchCheck {
            refused: Vec::new(),
            gas: Vec::new(),
        };
        for (index, item) in items.iter().enumerate() {
            let from = item.op.from();
            if !log_checked.contains(&from) {
                // What the run's first signature of this key checks first.
                self.signing_log.check(from)?;
                log_checked.push(from);
            }
            let (which, mut raw, intent) = self.item_call(&item.op)?;
            let side = self.side(which)?;
            let refuse = |error: std::sync::Arc<Error>| RefusedItem {
                index,
                id: item.id.clone(),
                from,
                reason: crate::chain(&*error),
                error,
            };
            let (_, amount) = item.op.spends();
            if let Entry::Vacant(slot) = balances.entry((from, which)) {
                slot.insert((self.token_balance(which, from).await.ok(), U256::ZERO));
            }
            if let Some((Some(holds), moved)) = balances.get_mut(&(from, which)) {
                let needs = moved.saturating_add(amount);
                if needs > *holds {
                    check
                        .refused
                        .push(refuse(std::sync::Arc::new(Error::BalanceTooLow(Box::new(
                            ShortSender {
                                from,
                                needs: side.amount(needs),
                                holds: side.amount(*holds),
                            },
                        )))));
                    continue;
                }
                *moved = needs;
            }
            if let Entry::Vacant(slot) = held.entry((from, side.chain_id)) {
                let refusal = self.next_nonce_held(from, side).await?;
                slot.insert(refusal.map(std::sync::Arc::new));
            }
            if let Some(Some(error)) = held.get(&(from, side.chain_id)) {
                check.refused.push(refuse(error.clone()));
                continue;
            }
            // The item's chain's policy (`Flows::policy_for`).
            let policy = self.policy_for(side.chain_id);
            // A swap's destination is not known yet: the run applies the allowlist to it.
            let without_allowlist = Policy {
                allowed_destinations: Vec::new(),
                ..policy.clone()
            };
            let cap = policy.max_gas_limit.unwrap_or(DEFAULT_MAX_GAS_LIMIT);
            let node = self.node_of_chain(side.chain_id).transpose()?;
            let quote = match quotes.get(&side.chain_id) {
                Some(q) => *q,
                None => {
                    let q = match &node {
                        Some(node) => Some(node.gas_price().await?),
                        None => None,
                    };
                    quotes.insert(side.chain_id, q);
                    q
                }
            };
            raw.gas_limit = match &node {
                Some(node) => node
                    .estimate_gas(from, raw.to, &raw.data)
                    .await
                    .map_or(cap, |e| e.saturating_add(e / 5)),
                None => cap,
            };
            raw.gas_price = quote.or(policy.max_gas_price).unwrap_or(0);
            let item_policy = match item.op {
                BatchOp::Swap { .. } => &without_allowlist,
                _ => &policy,
            };
            let key = bridgectl_tx::limits::window_query(item_policy, &raw, now)
                .map(|query| {
                    let key = (query.key, query.chain_id, query.contract, query.per);
                    if let std::collections::hash_map::Entry::Vacant(e) = windows.entry(key) {
                        e.insert(Window {
                            logged: self.signing_log.window_total(&query)?,
                            batch: U256::ZERO,
                        });
                    }
                    Ok::<_, Error>(key)
                })
                .transpose()?;
            let spent = key.and_then(|k| windows.get(&k)).map(|w| Spent {
                total: w.logged.total.saturating_add(w.batch),
                ..w.logged.clone()
            });
            let context = Context {
                signer: from,
                gas_price_quote: quote,
                nonce: Nonce::Next(NonceFacts {
                    fixed: Some(raw.nonce),
                    ..NonceFacts::default()
                }),
                spent,
            };
            match bridgectl_tx::verify(&raw, Some(&intent), item_policy, &context) {
                Ok(verified) => {
                    if let (Some(limit), Some(w)) = (
                        verified.window_limit(),
                        key.and_then(|k| windows.get_mut(&k)),
                    ) {
                        w.batch = w.batch.saturating_add(limit.amount);
                    }
                }
                Err(e) => {
                    let earlier = key
                        .and_then(|k| windows.get(&k))
                        .map_or(U256::ZERO, |w| w.batch);
                    let limit = matches!(e, bridgectl_tx::Error::Limit { .. });
                    let mut refused = refuse(std::sync::Arc::new(Error::Tx(e)));
                    if limit {
                        let earlier = earlier_items(earlier, side.decimals, &side.symbol);
                        refused.reason.push_str(&earlier);
                    }
                    check.refused.push(refused);
                }
            }
            let fee = U256::from(raw.gas_limit).saturating_mul(U256::from(raw.gas_price));
            match check
                .gas
                .iter_mut()
                .find(|g| g.from == from && g.chain_id == side.chain_id)
            {
                Some(g) => {
                    g.items += 1;
                    g.gas = g.gas.saturating_add(raw.gas_limit);
                    g.needed = g.needed.saturating_add(fee);
                }
                None => check.gas.push(GasNeed {
                    from,
                    chain_id: side.chain_id,
                    items: 1,
                    gas: raw.gas_limit,
                    gas_price: raw.gas_price,
                    needed: fee,
                    balance: None,
                }),
            }
        }
        for g in &mut check.gas {
            let node = self.node_of_chain(g.chain_id);
            if let (Some(node), Some(_)) = (node, quotes.get(&g.chain_id).copied().flatten()) {
                g.balance = Some(node?.balance(g.from).await?);
            }
        }
        Ok(check)
    }

    /// The refusal the run would meet at `from`'s next nonce on `side`'s chain (its node's
    /// pending count, else the platform's), when a flow here holds it
    /// ([`Error::NonceHeld`]); `None` when it is free or no count can be had.
    async fn next_nonce_held(
        &self,
        from: Address,
        side: &crate::flows::ChainSide,
    ) -> Result<Option<Error>, Error> {
        let Some(floor) = self.journal.next_nonce(from, side.chain_id, None)? else {
            return Ok(None);
        };
        let next = match self.node_of_chain(side.chain_id) {
            Some(node) => node?.pending_nonce(from).await?,
            None => match self.client.next_nonce(from, &side.environment_id).await {
                Ok(next) => next,
                Err(_) => return Ok(None),
            },
        };
        if next >= floor {
            return Ok(None);
        }
        self.nonce_held(from, side.chain_id, next)
    }

    /// The call an item makes, as the run builds or expects it (the token it moves, the
    /// unsigned transaction without its gas, the intent it is verified against). A
    /// swap's destination stands in for the address the platform will issue.
    fn item_call(&self, op: &BatchOp) -> Result<(TokenSide, RawTx, Intent), Error> {
        let (which, to, intent) = match *op {
            BatchOp::Redeem { from, amount } => (
                TokenSide::St,
                None,
                self.redeem_call(from, amount)?.full_intent(),
            ),
            BatchOp::Transfer {
                token, to, amount, ..
            } => (
                token,
                Some(to),
                plain_transfer_intent(self.side(token)?, to, amount),
            ),
            BatchOp::Swap { amount, .. } => (
                TokenSide::Mt,
                Some(SWAP_ADDRESS_UNKNOWN),
                swap_intent(self.side(TokenSide::Mt)?, SWAP_ADDRESS_UNKNOWN, amount),
            ),
        };
        let (_, amount) = op.spends();
        let data = match to {
            Some(to) => bridgectl_tx::calldata::erc20_transfer(to, amount),
            None => bridgectl_tx::calldata::encode("redeem", &intent.args)?,
        };
        let side = self.side(which)?;
        let raw = RawTx {
            from: op.from(),
            to: side.token,
            data: data.into(),
            nonce: 0,
            gas_limit: 0,
            gas_price: 0,
            chain_id: side.chain_id,
            value: U256::ZERO,
        };
        Ok((which, raw, intent))
    }
}
