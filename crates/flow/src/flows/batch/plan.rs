//! The plan of a batch, as data: what it moves per token and per account beside what each
//! account holds, where the tokens go (against the allowlist), the caps every item meets,
//! and what the run's own checks would refuse ([`super::BatchCheck`]). A wallet shows it
//! and asks once; the CLI's `batch plan` renders it. Like the check it is built from, it
//! unlocks nothing and records nothing.
//!
//! Every amount is exact, in base units ([`U256`]); [`ChainSide::tokens`] writes one in
//! token units for people.

use std::collections::BTreeMap;
use std::fmt;

use alloy_primitives::{Address, U256};

use super::refusal::{PlanRefusal, Tokens};
use super::{BatchCheck, BatchItem, BatchOp};
use crate::Error;
use crate::flows::{
    Bridge, ChainSide, DEFAULT_MAX_GAS_LIMIT, Flows, GAS_PRICE_SANITY_MULTIPLE, TokenSide,
};

/// What a batch would do, found before any key is unlocked ([`Flows::plan`]).
#[derive(Debug, Clone)]
pub struct BatchPlan {
    /// How many items.
    pub items: usize,
    /// Items per operation (`redeem`, `transfer`, `swap`).
    pub operations: BTreeMap<&'static str, usize>,
    /// Per token: what leaves the senders in all.
    pub totals: Vec<TokenTotal>,
    /// Where the tokens go, grouped by token and recipient: one stray line among a
    /// thousand shows here.
    pub recipients: Vec<RecipientTotal>,
    /// Per sender, in order of first appearance.
    pub accounts: Vec<AccountPlan>,
    /// The caps every item meets, from the policy.
    pub caps: Vec<Cap>,
    /// The most each token may move in all, as the caller set it ([`Flows::plan`]).
    pub max_totals: BTreeMap<TokenSide, U256>,
    /// What the run's checks would refuse, and each sender's gas.
    pub check: BatchCheck,
    bridge: Bridge,
}

/// One token's total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenTotal {
    /// The token.
    pub token: TokenSide,
    /// How many items move it.
    pub items: usize,
    /// Their amounts, summed, in base units (saturating at the uint256 maximum, which no
    /// balance or maximum total lets through).
    pub amount: U256,
}

/// Where an item's tokens go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Recipient {
    /// A transfer's recipient.
    Address(Address),
    /// Burned by a redeem: paid out in MT to the sender on the main chain.
    Redeemed,
    /// The swap address the platform issues when the item runs (the allowlist is applied
    /// to it then).
    SwapAddress,
}

/// What one recipient gets of one token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipientTotal {
    /// The token.
    pub token: TokenSide,
    /// Who gets it.
    pub to: Recipient,
    /// In how many items.
    pub items: usize,
    /// In all, in base units.
    pub amount: U256,
    /// Whether the policy's allowlist lets it receive: `None` when there is no allowlist,
    /// or the recipient is not an address known now.
    pub allowed: Option<bool>,
}

/// What one sender does in the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountPlan {
    /// The sender.
    pub address: Address,
    /// How many of the items it sends.
    pub items: usize,
    /// Per token it spends, in order of token.
    pub tokens: Vec<AccountSpend>,
}

/// What one sender spends of one token, beside what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountSpend {
    /// The token.
    pub token: TokenSide,
    /// What its items move, in base units.
    pub amount: U256,
    /// What it holds now, in base units.
    pub balance: U256,
}

impl AccountSpend {
    /// Whether what it holds covers what its items move.
    pub fn covered(&self) -> bool {
        self.amount <= self.balance
    }
}

/// A cap every item of the batch meets (the policy's, or the default).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cap {
    /// The gas price, in wei, from the policy.
    GasPrice(u128),
    /// No gas-price cap is set: at most this many times the node's quote.
    GasPriceQuoteMultiple(u128),
    /// The gas limit.
    GasLimit(u64),
    /// The fee (gas limit times gas price), in wei.
    Fee(U256),
    /// A spending limit on this token, from the policy.
    SpendingLimit(String),
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cap::GasPrice(wei) => write!(f, "gas price at most {wei} wei"),
            Cap::GasPriceQuoteMultiple(m) => write!(f, "gas price at most {m}x the node's quote"),
            Cap::GasLimit(gas) => write!(f, "gas limit at most {gas}"),
            Cap::Fee(wei) => write!(f, "fee at most {wei} wei"),
            Cap::SpendingLimit(token) => write!(f, "spending limit on {token} (from the policy)"),
        }
    }
}

impl Bridge {
    /// The chain of `which` token: the main network for MT, the side chain for ST.
    pub fn side(&self, which: TokenSide) -> &ChainSide {
        match which {
            TokenSide::Mt => &self.main,
            TokenSide::St => &self.side,
        }
    }

    /// The token `name` names, in any case: its symbol (`ST`), or `mt` / `st`.
    pub fn token_named(&self, name: &str) -> Option<TokenSide> {
        [TokenSide::Mt, TokenSide::St].into_iter().find(|w| {
            let short = match w {
                TokenSide::Mt => "mt",
                TokenSide::St => "st",
            };
            name.eq_ignore_ascii_case(&self.side(*w).symbol) || name.eq_ignore_ascii_case(short)
        })
    }
}

impl ChainSide {
    /// `amount` (base units) in this chain's token units, exact: `1500000` with 6
    /// decimals is `1.5`.
    pub fn tokens(&self, amount: U256) -> String {
        bridgectl_tx::amount::format_units(amount, self.decimals)
            .unwrap_or_else(|_| amount.to_string())
    }

    pub(crate) fn amount(&self, amount: U256) -> Tokens {
        Tokens {
            amount,
            symbol: self.symbol.clone(),
            decimals: self.decimals,
        }
    }
}

impl Flows {
    /// The plan of `items`: totals per token, per-sender spends beside balances,
    /// recipients against the allowlist, the caps, and the run's own checks
    /// ([`Flows::check_batch`]). `max_totals` is the most each token may move in all
    /// (checked by [`BatchPlan::verdict`]). An error is a failure to find out (a node,
    /// the signing log, no bridge); what the run would refuse is in the plan.
    pub async fn plan(
        &self,
        items: &[BatchItem],
        max_totals: &BTreeMap<TokenSide, U256>,
    ) -> Result<BatchPlan, Error> {
        let bridge = self.bridge()?.clone();
        let policy = self.trust_root();
        let mut operations = BTreeMap::new();
        let mut totals: BTreeMap<TokenSide, (usize, U256)> = BTreeMap::new();
        let mut recipients: BTreeMap<(TokenSide, Recipient), (usize, U256)> = BTreeMap::new();
        let mut accounts: Vec<(Address, usize, BTreeMap<TokenSide, U256>)> = Vec::new();
        for item in items {
            let (which, amount) = item.op.spends();
            let to = match &item.op {
                BatchOp::Transfer { to, .. } => Recipient::Address(*to),
                BatchOp::Redeem { .. } => Recipient::Redeemed,
                BatchOp::Swap { .. } => Recipient::SwapAddress,
            };
            *operations.entry(item.op.name()).or_insert(0) += 1;
            for (n, sum) in [
                totals.entry(which).or_insert((0, U256::ZERO)),
                recipients.entry((which, to)).or_insert((0, U256::ZERO)),
            ] {
                *n += 1;
                *sum = sum.saturating_add(amount);
            }
            let from = item.op.from();
            let index = match accounts.iter().position(|a| a.0 == from) {
                Some(i) => i,
                None => {
                    accounts.push((from, 0, BTreeMap::new()));
                    accounts.len() - 1
                }
            };
            let (_, n, spends) = &mut accounts[index];
            *n += 1;
            let spent = spends.entry(which).or_insert(U256::ZERO);
            *spent = spent.saturating_add(amount);
        }
        let mut planned = Vec::with_capacity(accounts.len());
        for (address, items, spends) in accounts {
            let mut tokens = Vec::with_capacity(spends.len());
            for (token, amount) in spends {
                let balance = self.token_balance(token, address).await?;
                tokens.push(AccountSpend {
                    token,
                    amount,
                    balance,
                });
            }
            planned.push(AccountPlan {
                address,
                items,
                tokens,
            });
        }
        let allowlist = &policy.allowed_destinations;
        let recipients = recipients
            .into_iter()
            .map(|((token, to), (items, amount))| RecipientTotal {
                token,
                to,
                items,
                amount,
                allowed: match to {
                    Recipient::Address(a) if !allowlist.is_empty() => Some(allowlist.contains(&a)),
                    _ => None,
                },
            })
            .collect();
        let mut caps = vec![match policy.max_gas_price {
            Some(wei) => Cap::GasPrice(wei),
            None => Cap::GasPriceQuoteMultiple(GAS_PRICE_SANITY_MULTIPLE),
        }];
        caps.push(Cap::GasLimit(
            policy.max_gas_limit.unwrap_or(DEFAULT_MAX_GAS_LIMIT),
        ));
        caps.extend(policy.max_fee.map(Cap::Fee));
        caps.extend(policy.limits.keys().cloned().map(Cap::SpendingLimit));
        let check = self.check_batch(items).await?;
        Ok(BatchPlan {
            items: items.len(),
            operations,
            totals: totals
                .into_iter()
                .map(|(token, (items, amount))| TokenTotal {
                    token,
                    items,
                    amount,
                })
                .collect(),
            recipients,
            accounts: planned,
            caps,
            max_totals: max_totals.clone(),
            check,
            bridge,
        })
    }
}

impl BatchPlan {
    /// The bridge the plan's tokens are on (symbols and decimals to write amounts by).
    pub fn bridge(&self) -> &Bridge {
        &self.bridge
    }

    /// The refusal the batch would meet: a total above its maximum
    /// ([`PlanRefusal::AboveMaxTotal`], what only a plan knows), then what the run's own
    /// checks would refuse ([`BatchCheck::verdict`]: each refused item with the error a
    /// single flow returns, for its balance, a limit, the allowlist, a cap or its nonce;
    /// the senders short of gas). `Ok` when it may run.
    pub fn verdict(&self) -> Result<(), Error> {
        let side = |which| self.bridge.side(which);
        for (which, max) in &self.max_totals {
            let total = self
                .totals
                .iter()
                .find(|t| t.token == *which)
                .map_or(U256::ZERO, |t| t.amount);
            if total > *max {
                return Err(PlanRefusal::AboveMaxTotal {
                    total: side(*which).amount(total),
                    max: side(*which).amount(*max),
                }
                .into());
            }
        }
        self.check.verdict()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(symbol: &str, decimals: u8) -> ChainSide {
        ChainSide {
            environment_id: "env".into(),
            symbol: symbol.into(),
            decimals,
            token: Address::repeat_byte(9),
            chain_id: 1,
            rpc_url: None,
            finality: None,
        }
    }

    fn plan() -> BatchPlan {
        let st = U256::from(1_000_000u64);
        BatchPlan {
            items: 2,
            operations: BTreeMap::from([("transfer", 2)]),
            totals: vec![TokenTotal {
                token: TokenSide::St,
                items: 2,
                amount: st * U256::from(3),
            }],
            recipients: vec![RecipientTotal {
                token: TokenSide::St,
                to: Recipient::Address(Address::repeat_byte(2)),
                items: 2,
                amount: st * U256::from(3),
                allowed: Some(true),
            }],
            accounts: vec![AccountPlan {
                address: Address::repeat_byte(1),
                items: 2,
                tokens: vec![AccountSpend {
                    token: TokenSide::St,
                    amount: st * U256::from(3),
                    balance: st * U256::from(4),
                }],
            }],
            caps: vec![Cap::GasLimit(DEFAULT_MAX_GAS_LIMIT)],
            max_totals: BTreeMap::new(),
            check: BatchCheck {
                refused: Vec::new(),
                gas: Vec::new(),
            },
            bridge: Bridge {
                main: side("MT", 18),
                side: side("ST", 6),
                redeem_action: "redeem".into(),
                swap_credit: Default::default(),
            },
        }
    }

    /// A token is named by its symbol or by `mt` / `st`, in any case; nothing else.
    #[test]
    fn a_token_is_named_by_its_symbol_or_its_side() {
        let bridge = Bridge {
            main: side("ETHX", 18),
            side: side("UsdS", 6),
            redeem_action: "redeem".into(),
            swap_credit: Default::default(),
        };
        for (name, which) in [
            ("ethx", Some(TokenSide::Mt)),
            ("MT", Some(TokenSide::Mt)),
            ("USDS", Some(TokenSide::St)),
            ("st", Some(TokenSide::St)),
            ("usd", None),
            ("", None),
        ] {
            assert_eq!(bridge.token_named(name), which, "{name:?}");
        }
    }

    /// Each refusal is a type to match, in the order the verdict meets them, and its
    /// message writes amounts in the token's units.
    #[test]
    fn the_verdict_names_the_first_refusal_in_library_words() {
        let ok = plan();
        assert!(ok.verdict().is_ok());
        assert_eq!(
            ok.bridge()
                .side(TokenSide::St)
                .tokens(U256::from(1_500_000)),
            "1.5"
        );

        let mut capped = plan();
        capped
            .max_totals
            .insert(TokenSide::St, U256::from(2_500_000));
        match capped.verdict() {
            Err(Error::PlanRefused(r)) => {
                let PlanRefusal::AboveMaxTotal { total, max } = *r;
                assert_eq!(total.to_string(), "3 ST");
                assert_eq!(max.to_string(), "2.5 ST");
            }
            other => panic!("above the maximum, got {other:?}"),
        }

        // A sender short of tokens is refused per item, with the single flow's error,
        // after the maximum total.
        let mut poor = plan();
        poor.accounts[0].tokens[0].balance = U256::from(1);
        assert!(!poor.accounts[0].tokens[0].covered());
        let short = crate::flows::ShortSender {
            from: Address::repeat_byte(1),
            needs: side("ST", 6).amount(U256::from(3_000_000)),
            holds: side("ST", 6).amount(U256::from(1)),
        };
        poor.check.refused.push(super::super::RefusedItem::new(
            1,
            "b".into(),
            Address::repeat_byte(1),
            Error::BalanceTooLow(Box::new(short)),
        ));
        let e = poor.verdict().expect_err("short");
        let refused = e.refused_items();
        assert_eq!(refused.len(), 1, "{e:?}");
        assert_eq!(
            refused[0].error.cause(),
            Some(crate::RefusalCause::Balance),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("holds 0.000001 ST, less than the 3 ST"),
            "{e}"
        );
        poor.max_totals.insert(TokenSide::St, U256::from(1));
        assert!(
            matches!(poor.verdict(), Err(Error::PlanRefused(ref r)) if matches!(**r, PlanRefusal::AboveMaxTotal { .. })),
            "the maximum total comes first"
        );
        assert!(!e.to_string().contains("--"), "{e}");
    }
}
