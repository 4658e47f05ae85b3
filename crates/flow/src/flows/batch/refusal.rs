//! What a batch is refused for before anything runs: the plan's refusals and the senders
//! the run's checks would refuse (an item refused, [`crate::RefusedItem`], is the crate
//! error's: it carries one). Plain data, so the crate's error can carry it without
//! reaching back into the batch's logic.

use std::fmt;

use alloy_primitives::{Address, U256};

/// The native gas one sender's items need on one chain.
#[derive(Debug, Clone)]
pub struct GasNeed {
    /// The sender.
    pub from: Address,
    /// The chain.
    pub chain_id: u64,
    /// How many of its items run on this chain.
    pub items: usize,
    /// Their gas limits, summed.
    pub gas: u64,
    /// The node's gas price quote, in wei.
    pub gas_price: u128,
    /// `gas` at `gas_price`, in wei: the most the items burn.
    pub needed: U256,
    /// The sender's native balance, in wei; `None` when the chain has no node to ask
    /// (then nothing is checked).
    pub balance: Option<U256>,
}

impl GasNeed {
    /// Whether the balance is known and below what the items need.
    pub fn short(&self) -> bool {
        self.balance.is_some_and(|b| b < self.needed)
    }
}

/// Why a plan is refused before anything runs, beside what the run's checks would refuse
/// ([`super::BatchCheck::verdict`]): what only a plan knows (a total the caller capped).
/// A recipient outside the allowlist and a sender short of tokens are refused per item,
/// with the errors a single flow returns ([`crate::Error::BatchRefused`]).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PlanRefusal {
    /// A token's total is above the most the caller allowed.
    #[error("the batch moves {total} in all, above its maximum total {max}")]
    AboveMaxTotal {
        /// What the batch moves.
        total: Tokens,
        /// The most allowed.
        max: Tokens,
    },
}

fn join<T: fmt::Display>(parts: &[T]) -> String {
    parts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// An amount of a token, with what it takes to write it for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    /// In base units.
    pub amount: U256,
    /// The token's symbol.
    pub symbol: String,
    /// The token's decimals.
    pub decimals: u8,
}

impl fmt::Display for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = bridgectl_tx::amount::format_units(self.amount, self.decimals)
            .unwrap_or_else(|_| self.amount.to_string());
        write!(f, "{units} {}", bridgectl_tx::text::printable(&self.symbol))
    }
}

/// A sender that holds less than its items move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortSender {
    /// The sender.
    pub from: Address,
    /// What its items move.
    pub needs: Tokens,
    /// What it holds.
    pub holds: Tokens,
}

impl fmt::Display for ShortSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} needs {} and holds {}",
            self.from, self.needs, self.holds
        )
    }
}

/// What a refusal for a spending limit adds when the window's total counts `earlier`
/// (base units of the token with `decimals` and `symbol`) of the batch's own earlier
/// items: which part of "signed already" is this batch's. Empty when none is.
pub(crate) fn earlier_items(earlier: U256, decimals: u8, symbol: &str) -> String {
    if earlier.is_zero() {
        return String::new();
    }
    format!(
        " (counting {} of this batch's earlier items as signed)",
        Tokens {
            amount: earlier,
            symbol: symbol.to_owned(),
            decimals,
        }
    )
}

/// An item of a batch being recorded whose idempotency key ([`super::BatchItem::key`]) a
/// batch recorded before holds: that batch's item is this payout, and this one is not
/// run ([`crate::Error::ItemsHeld`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldItem {
    /// Its position in the batch being recorded (0-based).
    pub index: usize,
    /// Its id.
    pub id: String,
    /// The batch that holds it.
    pub batch_id: String,
    /// How many items that batch has.
    pub batch_items: usize,
    /// The position of the item that holds it in that batch.
    pub held_index: usize,
    /// Where that item stands.
    pub state: super::state::ItemState,
    /// Whether that item does exactly the same (operation, accounts, amount); `false` is
    /// one id given to two different payouts.
    pub same: bool,
}

impl HeldItem {
    /// The batch that holds every one of a batch's `items` items, as they are (the same
    /// operations) and nothing else: the same file recorded before, which a run of it
    /// again resumes or reports instead. `None` when the items are held by several
    /// batches, in part, or as other payouts.
    pub fn one_batch(held: &[HeldItem], items: usize) -> Option<&str> {
        let first = held.first()?;
        let whole = held.len() == items
            && first.batch_items == items
            && held
                .iter()
                .all(|h| h.same && h.batch_id == first.batch_id && h.held_index == h.index);
        whole.then_some(first.batch_id.as_str())
    }
}

impl fmt::Display for HeldItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is item {} of batch {} ({}{})",
            bridgectl_tx::text::printable(&self.id),
            self.held_index,
            self.batch_id,
            self.state.as_str(),
            if self.same {
                ""
            } else {
                ", another payout under the same id"
            }
        )
    }
}

/// `held`, for a message: the first few, then how many more.
pub(crate) fn held_list(held: &[HeldItem]) -> String {
    const SHOWN: usize = 5;
    let mut text = join(&held[..held.len().min(SHOWN)]);
    if held.len() > SHOWN {
        text.push_str(&format!("; and {} more", held.len() - SHOWN));
    }
    text
}
