//! What a call does with tokens: the one model that spending limits, the destination
//! allowlist, the signing log's `amount` and the summary's recipients all read.
//!
//! Reading the arguments is not enough: `transferWithFee(_to, _amount, _feeCollector,
//! _fee)` moves `_amount` to `_to` **and** `_amount * _fee / 100` to `_feeCollector`
//! (the ST contract's own arithmetic), so its `_fee` is a percentage, not an amount,
//! and `_feeCollector` is a destination like `_to`. Each known function is modelled
//! here from the contract (`crates/sandbox/contracts/SideToken.sol`), and a property
//! test runs random calls on anvil and checks that what this model counts is what the
//! contract moved.
//!
//! | function | what leaves the signer's control |
//! |---|---|
//! | `transfer(_to, _value)` | `_value` to `_to` |
//! | `transferWithFee(_to, _amount, _feeCollector, _fee)` | `_amount` to `_to`; `_amount * _fee / 100` to `_feeCollector` |
//! | `approve(_spender, _value)` | an allowance of `_value` that `_spender` may take |
//! | `transferFrom(_from, _to, _value)` | `_value` from `_from` to `_to`, on the signer's allowance |
//! | `redeem(_amount)` | `_amount` burned (paid out in MT on the main chain) |
//! | `stake(_amount)` | `_amount` locked in the contract |
//! | `unstake`, `allowance`, `balanceOf`, `totalSupply` | nothing |
//!
//! Calldata that is not a well-formed call of a known function has no model: under a
//! limit or an allowlist it is refused unless the policy allows its selector by name
//! (`allow-unmodelled`).

use std::fmt;

use alloy_primitives::{Address, U256};

use crate::calldata::{self, Call, Decoded, Value};

/// How tokens leave the signer's control in one [`Movement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MoveKind {
    /// Sent to an address (`transfer`, `transferFrom`, the `_to` of
    /// `transferWithFee`).
    Transfer,
    /// Sent to a fee collector (`transferWithFee`).
    Fee,
    /// An allowance the address may take later (`approve`).
    Allowance,
    /// Burned by `redeem`: the bridge pays the sender in MT on the main chain.
    Burn,
    /// Locked in the contract by `stake`.
    Stake,
}

impl MoveKind {
    /// The word for people (`transfer`, `fee`, `allowance`, `burned`, `staked`).
    pub fn as_str(self) -> &'static str {
        match self {
            MoveKind::Transfer => "transfer",
            MoveKind::Fee => "fee",
            MoveKind::Allowance => "allowance",
            MoveKind::Burn => "burned",
            MoveKind::Stake => "staked",
        }
    }
}

impl fmt::Display for MoveKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One amount of the callee's token that a call moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Movement {
    /// How it moves.
    pub kind: MoveKind,
    /// Where it goes: an address for transfers, fees and allowances; `None` when it
    /// stays with the token contract (burned, staked).
    pub to: Option<Address>,
    /// How much, in base units.
    pub amount: U256,
    /// The argument that names the destination (`_to`, `_feeCollector`, `_spender`),
    /// or the amount for burns and stakes (`_amount`).
    pub argument: &'static str,
}

/// What a call does, as far as the model knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effects {
    /// A modelled call (or no calldata at all) and every amount it moves; empty for
    /// calls that move nothing (views, `unstake`, a plain value transfer).
    Modelled(Vec<Movement>),
    /// No model: an unknown selector, malformed arguments, or arithmetic the contract
    /// would revert on. The reason says which.
    Unmodelled(String),
}

impl Effects {
    /// The effects of calling the callee with `data`.
    pub fn of_calldata(data: &[u8]) -> Effects {
        match calldata::classify(data) {
            Decoded::Empty => Effects::Modelled(Vec::new()),
            Decoded::Call(call) => Effects::of_call(&call),
            Decoded::Malformed { function, reason } => {
                Effects::Unmodelled(format!("malformed {} call ({reason})", function.signature))
            }
            Decoded::Unknown { selector, .. } => Effects::Unmodelled(format!(
                "unknown selector 0x{}",
                alloy_primitives::hex::encode(selector)
            )),
            Decoded::TooShort { len } => {
                Effects::Unmodelled(format!("{len} bytes of calldata, not a call"))
            }
        }
    }

    /// The effects of a decoded call.
    pub fn of_call(call: &Call) -> Effects {
        let address = |name: &str| match call.arg(name) {
            Some(Value::Address(a)) => a,
            _ => Address::ZERO,
        };
        let uint = |name: &str| match call.arg(name) {
            Some(Value::Uint(u)) => u,
            _ => U256::ZERO,
        };
        let to = |kind, argument: &'static str, amount| Movement {
            kind,
            to: Some(address(argument)),
            amount,
            argument,
        };
        let kept = |kind, amount| Movement {
            kind,
            to: None,
            amount,
            argument: "_amount",
        };
        let moves = match call.function.name {
            "transfer" => vec![to(MoveKind::Transfer, "_to", uint("_value"))],
            "transferFrom" => vec![to(MoveKind::Transfer, "_to", uint("_value"))],
            "approve" => vec![to(MoveKind::Allowance, "_spender", uint("_value"))],
            "transferWithFee" => {
                let amount = uint("_amount");
                // The contract computes `(_amount * _fee) / 100` with checked
                // arithmetic: an overflow reverts, so no model says what it moves.
                let Some(product) = amount.checked_mul(uint("_fee")) else {
                    return Effects::Unmodelled(
                        "transferWithFee whose _amount * _fee overflows uint256 (the contract \
                         reverts)"
                            .into(),
                    );
                };
                vec![
                    to(MoveKind::Transfer, "_to", amount),
                    to(MoveKind::Fee, "_feeCollector", product / U256::from(100)),
                ]
            }
            "redeem" => vec![kept(MoveKind::Burn, uint("_amount"))],
            "stake" => vec![kept(MoveKind::Stake, uint("_amount"))],
            "unstake" | "allowance" | "balanceOf" | "totalSupply" => Vec::new(),
            other => {
                return Effects::Unmodelled(format!("{other} has no model of its effects"));
            }
        };
        Effects::Modelled(moves)
    }

    /// The movements, when modelled.
    pub fn movements(&self) -> Option<&[Movement]> {
        match self {
            Effects::Modelled(m) => Some(m),
            Effects::Unmodelled(_) => None,
        }
    }

    /// Everything the call moves, in base units; `None` when unmodelled or when the
    /// sum overflows (no real call moves more than 2^256 - 1).
    pub fn total(&self) -> Option<U256> {
        self.movements()?
            .iter()
            .try_fold(U256::ZERO, |sum, m| sum.checked_add(m.amount))
    }

    /// Every address tokens go to (or may be taken by), in argument order.
    pub fn destinations(&self) -> impl Iterator<Item = (&'static str, Address)> + '_ {
        self.movements()
            .unwrap_or_default()
            .iter()
            .filter_map(|m| m.to.map(|to| (m.argument, to)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn call(function: &str, inputs: &[(&str, String)]) -> Vec<u8> {
        let inputs: BTreeMap<String, String> = inputs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        calldata::encode(function, &inputs).expect("encode")
    }

    const A: &str = "0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
    const B: &str = "0xb2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";

    #[test]
    fn transfer_with_fee_moves_the_fee_as_a_percentage_to_its_collector() {
        // The H1 reproduction: 1 unit to an allowed address, a fee of 10000 % to
        // another one. The model says 100 units go to the collector: 101 in all.
        let data = call(
            "transferWithFee",
            &[
                ("_to", A.into()),
                ("_amount", "1".into()),
                ("_feeCollector", B.into()),
                ("_fee", "10000".into()),
            ],
        );
        let e = Effects::of_calldata(&data);
        assert_eq!(e.total(), Some(U256::from(101)));
        let dests: Vec<_> = e.destinations().collect();
        assert_eq!(
            dests,
            vec![
                ("_to", A.parse().expect("a")),
                ("_feeCollector", B.parse().expect("b"))
            ]
        );
        let fee = e.movements().expect("modelled")[1];
        assert_eq!((fee.kind, fee.amount), (MoveKind::Fee, U256::from(100)));
    }

    #[test]
    fn the_fee_rounds_down_like_solidity_and_an_overflow_has_no_model() {
        let data = |amount: &str, fee: &str| {
            call(
                "transferWithFee",
                &[
                    ("_to", A.into()),
                    ("_amount", amount.into()),
                    ("_feeCollector", B.into()),
                    ("_fee", fee.into()),
                ],
            )
        };
        // 199 * 3 / 100 = 5.97 -> 5
        assert_eq!(
            Effects::of_calldata(&data("199", "3")).total(),
            Some(U256::from(204))
        );
        let max = U256::MAX.to_string();
        assert!(matches!(
            Effects::of_calldata(&data(&max, "2")),
            Effects::Unmodelled(_)
        ));
    }

    #[test]
    fn every_known_function_has_a_model() {
        for f in calldata::FUNCTIONS {
            let inputs: Vec<(&str, String)> = f
                .params
                .iter()
                .map(|p| {
                    let v = match p.kind {
                        calldata::ParamKind::Address => A.to_owned(),
                        calldata::ParamKind::Uint256 => "7".to_owned(),
                    };
                    (p.name, v)
                })
                .collect();
            let e = Effects::of_calldata(&call(f.name, &inputs));
            assert!(matches!(e, Effects::Modelled(_)), "{}: {e:?}", f.signature);
        }
    }

    #[test]
    fn what_each_function_moves() {
        let seven = U256::from(7);
        for (function, inputs, total, dests) in [
            ("transfer", vec![("_to", A), ("_value", "7")], seven, 1),
            ("approve", vec![("_spender", A), ("_value", "7")], seven, 1),
            (
                "transferFrom",
                vec![("_from", B), ("_to", A), ("_value", "7")],
                seven,
                1,
            ),
            ("redeem", vec![("_amount", "7")], seven, 0),
            ("stake", vec![("_amount", "7")], seven, 0),
            ("unstake", vec![("_amount", "7")], U256::ZERO, 0),
            ("balanceOf", vec![("_owner", A)], U256::ZERO, 0),
        ] {
            let inputs: Vec<(&str, String)> =
                inputs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
            let e = Effects::of_calldata(&call(function, &inputs));
            assert_eq!(e.total(), Some(total), "{function}");
            assert_eq!(e.destinations().count(), dests, "{function}");
        }
        // transferFrom's destination is _to, never _from.
        let e = Effects::of_calldata(&call(
            "transferFrom",
            &[
                ("_from", B.into()),
                ("_to", A.into()),
                ("_value", "1".into()),
            ],
        ));
        assert_eq!(
            e.destinations().map(|(_, a)| a).collect::<Vec<_>>(),
            vec![A.parse::<Address>().expect("a")]
        );
        assert_eq!(Effects::of_calldata(&[]), Effects::Modelled(Vec::new()));
        assert!(matches!(
            Effects::of_calldata(&[1, 2, 3, 4, 5]),
            Effects::Unmodelled(_)
        ));
    }
}
