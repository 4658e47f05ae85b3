//! The effects model of `bridgectl_tx::effects` against the ST contract itself: for
//! random sequences of ST calls signed by bridgectl-tx and mined on a real anvil chain,
//! what `Effects::of_calldata` says a call moves is what the contract moved.
//!
//! Why: finding H1. In `transferWithFee(_to, _amount, _feeCollector, _fee)` the `_fee`
//! is not an amount but a percentage of `_amount`, paid to `_feeCollector`: a call that
//! sends 1 ST to `_to` with `_fee = 10000` also sends 100 ST to `_feeCollector`.
//! Spending limits, the destination allowlist, the signing log and the summary all read
//! the model, so a model that reads a call the way its arguments look rather than the
//! way the contract runs it lets a signature move more, and to more addresses, than
//! anything checked. Here the model is held to the chain, not to a second reading of
//! the Solidity.
//!
//! For every call that is mined (a reverted call moves nothing and is skipped):
//! - **total**: `total()` is the sum of the `Transfer` values, the `Approval` value and
//!   the `Staked` amount in the receipt. `redeem` burns with a `Transfer` to address 0,
//!   which counts; `Unstaked` returns tokens to the signer and does not;
//! - **destinations**: the addresses of `destinations()` are the non-zero `to` of every
//!   `Transfer` plus the `Approval` spender;
//! - **movements**: `movements()` are those events one for one, in order, with the same
//!   address (none for a burn or a stake) and amount.
//!
//! Each sequence opens with a `transferWithFee` whose `_fee` is above 100 (the H1 shape)
//! and goes on with random calls of the modelled functions (`transfer`,
//! `transferWithFee`, `approve`, `transferFrom` by a second account on an allowance
//! set up first, `redeem`, `stake`, `unstake`). Amounts are shares of the signer's live
//! balance, mostly within it, so most calls are mined; a few exceed it, name address 0
//! or fall one short of an allowance, and revert. One sandbox serves every sequence;
//! each takes two fresh accounts, so no sequence sees another's balances.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256, keccak256};
use alloy_signer_local::PrivateKeySigner;
use bridgectl_sandbox::rpc::{Receipt, Rpc};
use bridgectl_sandbox::{DevAccount, Sandbox};
use bridgectl_tx::RawTx;
use bridgectl_tx::effects::Effects;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::util;

/// Sequences per run, all on one sandbox.
const SEQUENCES: u32 = 8;
/// Random operations after the opening `transferWithFee` (a `transferFrom` is two
/// calls: its `approve`, then the spender's call).
const RANDOM_OPS: usize = 5;
/// ST base units minted to each sequence's signer (1000 ST at the 6 decimals of
/// [`util::fast_config`]).
const START_BALANCE: u64 = 1_000_000_000;
/// Enough for any ST call. Fixed: a call that reverts cannot be estimated.
const GAS_LIMIT: u64 = 200_000;

/// An address a call names.
#[derive(Clone, Copy, Debug)]
enum Party {
    /// The sequence's second account, the spender of `transferFrom`.
    Spender,
    /// An address that only receives.
    OutsiderA,
    /// Another one.
    OutsiderB,
    /// The signer itself.
    Signer,
    /// Address 0: a transfer to it reverts, an approval of it does not.
    Zero,
}

/// One step of a sequence. A `share` is per mille of the signer's balance (of its
/// staked balance for `unstake`) when the step runs; above 1000 the call reverts.
#[derive(Clone, Copy, Debug)]
enum Op {
    Transfer {
        to: Party,
        share: u32,
    },
    /// `_amount` is `share` of what the balance allows once the fee is added.
    TransferWithFee {
        to: Party,
        collector: Party,
        share: u32,
        fee: u32,
    },
    Approve {
        spender: Party,
        value: u64,
    },
    /// The signer approves the spender for `share` of its balance (one unit less when
    /// `short`, which reverts), then the spender calls `transferFrom` for `share`.
    TransferFrom {
        to: Party,
        share: u32,
        short: bool,
    },
    Redeem {
        share: u32,
    },
    Stake {
        share: u32,
    },
    Unstake {
        share: u32,
    },
}

fn party() -> impl Strategy<Value = Party> {
    prop_oneof![
        3 => Just(Party::Spender),
        3 => Just(Party::OutsiderA),
        3 => Just(Party::OutsiderB),
        2 => Just(Party::Signer),
        1 => Just(Party::Zero),
    ]
}

fn non_zero_party() -> impl Strategy<Value = Party> {
    prop_oneof![
        Just(Party::Spender),
        Just(Party::OutsiderA),
        Just(Party::OutsiderB),
        Just(Party::Signer),
    ]
}

fn share() -> impl Strategy<Value = u32> {
    prop_oneof![9 => 0..=1000u32, 1 => 1001..=1500u32]
}

/// A `_fee` from 0 to 20000 %, above 100 two times in three.
fn fee() -> impl Strategy<Value = u32> {
    prop_oneof![1 => 0..=100u32, 2 => 101..=20_000u32]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (party(), share()).prop_map(|(to, share)| Op::Transfer { to, share }),
        3 => (party(), party(), share(), fee()).prop_map(|(to, collector, share, fee)| {
            Op::TransferWithFee { to, collector, share, fee }
        }),
        1 => (party(), 0..=START_BALANCE).prop_map(|(spender, value)| Op::Approve {
            spender,
            value
        }),
        2 => (party(), share(), prop::bool::weighted(0.1))
            .prop_map(|(to, share, short)| Op::TransferFrom { to, share, short }),
        1 => share().prop_map(|share| Op::Redeem { share }),
        1 => share().prop_map(|share| Op::Stake { share }),
        1 => share().prop_map(|share| Op::Unstake { share }),
    ]
}

/// A sequence: the H1 shape first (a fee above 100 %, mined), then random steps.
fn sequence() -> impl Strategy<Value = Vec<Op>> {
    let h1 = (
        non_zero_party(),
        non_zero_party(),
        1..=1000u32,
        101..=20_000u32,
    )
        .prop_map(|(to, collector, share, fee)| Op::TransferWithFee {
            to,
            collector,
            share,
            fee,
        });
    (h1, prop::collection::vec(op(), RANDOM_OPS)).prop_map(|(first, mut rest)| {
        rest.insert(0, first);
        rest
    })
}

/// What a run did, over all its sequences.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    sent: u32,
    mined: u32,
    /// `transferWithFee` calls with `_fee` above 100 that were mined (and checked).
    big_fees_mined: u32,
}

#[test]
fn the_effects_model_is_what_the_st_contract_moves() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // The relayer pays every redeem in MT: a reserve that covers them all.
    let mut config = util::fast_config();
    config.reserve = "1000000".into();
    // Started from this thread, which outlives it (see `bridgectl_sandbox::anvil`).
    let sandbox = rt.block_on(Sandbox::start(config)).expect("sandbox starts");
    let side = Side::of(&sandbox);
    let tally = Cell::new(Tally::default());
    let mut runner = TestRunner::new(Config {
        cases: SEQUENCES,
        // Every attempt funds two accounts and mines its calls: keep a failure's
        // shrinking short.
        max_shrink_iters: 64,
        // No regression file: a failure prints its (shrunk) sequence.
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&sequence(), |ops| {
        rt.block_on(run_sequence(&sandbox, &side, &ops, &tally))
    });
    rt.block_on(util::finish(sandbox));
    if let Err(e) = result {
        panic!("the effects model differs from what the contract moved: {e}");
    }
    let t = tally.get();
    assert!(
        t.mined * 2 >= t.sent,
        "too few calls mined to exercise the model: {t:?}"
    );
    assert!(
        t.big_fees_mined >= SEQUENCES,
        "every sequence opens with a mined transferWithFee above 100 %: {t:?}"
    );
}

/// The side chain and its ST contract.
struct Side {
    rpc: Rpc,
    chain_id: u64,
    token: Address,
}

impl Side {
    fn of(sandbox: &Sandbox) -> Side {
        let side = &sandbox.info().side;
        Side {
            rpc: Rpc::new(side.rpc_url.clone()),
            chain_id: side.chain_id,
            token: side.token_address,
        }
    }

    /// A `view(address) returns (uint256)` of the ST contract.
    async fn view(&self, signature: &str, owner: Address) -> Result<U256, TestCaseError> {
        let mut data = keccak256(signature)[..4].to_vec();
        data.extend_from_slice(owner.into_word().as_slice());
        let out = self
            .rpc
            .eth_call(None, self.token, &data.into())
            .await
            .map_err(infra("eth_call"))?;
        word(&out).ok_or_else(|| TestCaseError::fail(format!("{signature}: returned {out}")))
    }

    /// Signs `data` to the ST contract as bridgectl signs (verified against a policy
    /// that pins exactly this transaction), sends it raw and waits for its receipt.
    async fn send(
        &self,
        signer: &PrivateKeySigner,
        data: Vec<u8>,
    ) -> Result<Receipt, TestCaseError> {
        let from = signer.address();
        let tx = RawTx {
            from,
            to: self.token,
            data: data.into(),
            nonce: self
                .rpc
                .pending_nonce(from)
                .await
                .map_err(infra("eth_getTransactionCount"))?,
            gas_limit: GAS_LIMIT,
            gas_price: self.rpc.gas_price().await.map_err(infra("eth_gasPrice"))?,
            chain_id: self.chain_id,
            value: U256::ZERO,
        };
        let (policy, context) = bridgectl_tx::verify::exactly(&tx);
        let verified =
            bridgectl_tx::verify(&tx, None, &policy, &context).map_err(infra("verify"))?;
        let signed = bridgectl_tx::sign_legacy(&verified, signer).map_err(infra("sign"))?;
        let hash = self
            .rpc
            .send_raw(&signed.raw)
            .await
            .map_err(infra("eth_sendRawTransaction"))?;
        prop_assert_eq!(hash, signed.hash, "the node's hash of the signed bytes");
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(receipt) = self
                .rpc
                .receipt(hash)
                .await
                .map_err(infra("eth_getTransactionReceipt"))?
            {
                return Ok(receipt);
            }
            if Instant::now() > end {
                return Err(TestCaseError::fail(format!("{hash} not mined within 30 s")));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends `call` signed by `signer`; when it is mined, checks the model of its
    /// calldata against the receipt's events. Returns whether it was mined.
    async fn check(
        &self,
        signer: &PrivateKeySigner,
        call: &Call,
        tally: &Cell<Tally>,
    ) -> Result<bool, TestCaseError> {
        let data = call.calldata()?;
        let effects = Effects::of_calldata(&data);
        let receipt = self.send(signer, data).await?;
        let mined = receipt.status.to::<u64>() == 1;
        let mut t = tally.get();
        t.sent += 1;
        t.mined += u32::from(mined);
        tally.set(t);
        if !mined {
            prop_assert!(receipt.logs.is_empty(), "{}: reverted with logs", call);
            return Ok(false);
        }
        let moved = Moved::from_receipt(&receipt, self.token)?;
        let Some(movements) = effects.movements() else {
            return Err(TestCaseError::fail(format!(
                "{call}: mined, but the model has none ({effects:?})"
            )));
        };
        prop_assert_eq!(
            effects.total(),
            Some(moved.total),
            "{}: the model's total (left) against what the contract moved (right)",
            call
        );
        let destinations: BTreeSet<Address> = effects.destinations().map(|(_, a)| a).collect();
        prop_assert_eq!(
            destinations,
            moved.destinations,
            "{}: the model's destinations (left) against the events' (right)",
            call
        );
        let modelled: Vec<(Option<Address>, U256)> =
            movements.iter().map(|m| (m.to, m.amount)).collect();
        prop_assert_eq!(
            modelled,
            moved.movements,
            "{}: the model's movements (left) against the events (right)",
            call
        );
        Ok(true)
    }
}

/// What a mined call moved, read from its receipt.
#[derive(Debug, Default)]
struct Moved {
    total: U256,
    destinations: BTreeSet<Address>,
    /// One per counted event: its address (`None` for a burn or a stake) and amount.
    movements: Vec<(Option<Address>, U256)>,
}

impl Moved {
    fn from_receipt(receipt: &Receipt, token: Address) -> Result<Moved, TestCaseError> {
        let transfer = keccak256("Transfer(address,address,uint256)");
        let approval = keccak256("Approval(address,address,uint256)");
        let staked = keccak256("Staked(address,uint256)");
        let mut moved = Moved::default();
        for log in receipt.logs.iter().filter(|l| l.address == token) {
            let bad = || TestCaseError::fail(format!("undecodable log {log:?}"));
            let indexed = |i: usize| log.topics.get(i).map(|t| Address::from_word(*t));
            let topic0 = *log.topics.first().ok_or_else(bad)?;
            let to = if topic0 == transfer {
                // `redeem` burns with a Transfer to address 0: counted, no destination.
                Some(indexed(2).ok_or_else(bad)?).filter(|to| !to.is_zero())
            } else if topic0 == approval {
                Some(indexed(2).ok_or_else(bad)?)
            } else if topic0 == staked {
                None
            } else {
                // `Redeem` repeats the burn's Transfer; `Unstaked` returns tokens to the
                // signer.
                continue;
            };
            let amount = word(&log.data).ok_or_else(bad)?;
            moved.total = moved.total.checked_add(amount).ok_or_else(bad)?;
            moved.destinations.extend(to);
            moved.movements.push((to, amount));
        }
        Ok(moved)
    }
}

/// One ABI word as a number.
fn word(bytes: &[u8]) -> Option<U256> {
    (bytes.len() == 32).then(|| U256::from_be_slice(bytes))
}

/// A failure of the test's own plumbing (RPC, signing, encoding), named.
fn infra<E: fmt::Debug>(what: &'static str) -> impl Fn(E) -> TestCaseError {
    move |e| TestCaseError::fail(format!("{what}: {e:?}"))
}

/// A call by function name and the platform's inputs.
struct Call {
    function: &'static str,
    inputs: Vec<(&'static str, String)>,
}

impl Call {
    fn new<const N: usize>(function: &'static str, inputs: [(&'static str, String); N]) -> Call {
        Call {
            function,
            inputs: inputs.into(),
        }
    }

    fn calldata(&self) -> Result<Vec<u8>, TestCaseError> {
        let inputs: BTreeMap<String, String> = self
            .inputs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        bridgectl_tx::calldata::encode(self.function, &inputs).map_err(infra("encode"))
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.function)?;
        for (i, (name, value)) in self.inputs.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{name} = {value}")?;
        }
        f.write_str(")")
    }
}

fn signer_of(account: &DevAccount) -> Result<PrivateKeySigner, TestCaseError> {
    account
        .private_key
        .expose_secret()
        .parse()
        .map_err(infra("the funded account's key"))
}

/// Runs one sequence with two fresh accounts: the signer (with ST) and the spender.
async fn run_sequence(
    sandbox: &Sandbox,
    side: &Side,
    ops: &[Op],
    tally: &Cell<Tally>,
) -> Result<(), TestCaseError> {
    let state = sandbox.state();
    let signer = state
        .fund_new_account(U256::ZERO, U256::from(START_BALANCE))
        .await
        .map_err(infra("funding the signer"))?;
    let spender = state
        .fund_new_account(U256::ZERO, U256::ZERO)
        .await
        .map_err(infra("funding the spender"))?;
    let (signer, spender) = (signer_of(&signer)?, signer_of(&spender)?);
    let address = |p: Party| {
        match p {
            Party::Spender => spender.address(),
            Party::OutsiderA => Address::repeat_byte(0x11),
            Party::OutsiderB => Address::repeat_byte(0x22),
            Party::Signer => signer.address(),
            Party::Zero => Address::ZERO,
        }
        .to_string()
    };
    for &op in ops {
        let balance = side.view("balanceOf(address)", signer.address()).await?;
        let of = |base: U256, share: u32| base * U256::from(share) / U256::from(1000);
        let call = match op {
            Op::Transfer { to, share } => Call::new(
                "transfer",
                [
                    ("_to", address(to)),
                    ("_value", of(balance, share).to_string()),
                ],
            ),
            Op::TransferWithFee {
                to,
                collector,
                share,
                fee,
            } => {
                // _amount + _amount * _fee / 100 within the balance when share <= 1000.
                let room = balance * U256::from(100) / U256::from(100 + fee);
                let call = Call::new(
                    "transferWithFee",
                    [
                        ("_to", address(to)),
                        ("_amount", of(room, share).to_string()),
                        ("_feeCollector", address(collector)),
                        ("_fee", fee.to_string()),
                    ],
                );
                if side.check(&signer, &call, tally).await? && fee > 100 {
                    let mut t = tally.get();
                    t.big_fees_mined += 1;
                    tally.set(t);
                }
                continue;
            }
            Op::Approve { spender, value } => Call::new(
                "approve",
                [
                    ("_spender", address(spender)),
                    ("_value", value.to_string()),
                ],
            ),
            Op::TransferFrom { to, share, short } => {
                let value = of(balance, share);
                let allowance = if short {
                    value.saturating_sub(U256::from(1))
                } else {
                    value
                };
                let approve = Call::new(
                    "approve",
                    [
                        ("_spender", address(Party::Spender)),
                        ("_value", allowance.to_string()),
                    ],
                );
                side.check(&signer, &approve, tally).await?;
                let call = Call::new(
                    "transferFrom",
                    [
                        ("_from", address(Party::Signer)),
                        ("_to", address(to)),
                        ("_value", value.to_string()),
                    ],
                );
                side.check(&spender, &call, tally).await?;
                continue;
            }
            Op::Redeem { share } => {
                Call::new("redeem", [("_amount", of(balance, share).to_string())])
            }
            Op::Stake { share } => {
                Call::new("stake", [("_amount", of(balance, share).to_string())])
            }
            Op::Unstake { share } => {
                let staked = side.view("stakedOf(address)", signer.address()).await?;
                Call::new("unstake", [("_amount", of(staked, share).to_string())])
            }
        };
        side.check(&signer, &call, tally).await?;
    }
    Ok(())
}
