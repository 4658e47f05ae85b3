use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};

use super::*;
use crate::policy::Trusted;

const SIDE: u64 = 617317;
const FROM: Address = Address::repeat_byte(0x11);
const ST: Address = Address::repeat_byte(0x35);

fn st() -> Token {
    Token {
        symbol: "ST".into(),
        decimals: 18,
    }
}

fn redeem_tx(amount: &str) -> RawTx {
    let data = calldata::encode(
        "redeem",
        &BTreeMap::from([("_amount".to_string(), amount.to_string())]),
    )
    .expect("encode");
    RawTx {
        from: FROM,
        to: ST,
        data: data.into(),
        nonce: 1,
        gas_limit: 100_000,
        gas_price: 50_000_000_000,
        chain_id: SIDE,
        value: U256::ZERO,
    }
}

/// A profile that names the side chain and the ST contract, with a gas-price cap.
fn profile() -> Policy {
    let mut trusted = Trusted::default();
    trusted.chain(SIDE, Some("side".into()));
    trusted.contract(ST, SIDE, Some(st()));
    Policy {
        max_gas_price: Some(100_000_000_000),
        trusted,
        ..Policy::default()
    }
}

fn context(nonce: NonceFacts) -> Context {
    Context {
        signer: FROM,
        gas_price_quote: None,
        nonce: Nonce::Next(nonce),
        spent: None,
    }
}

fn next(n: u64) -> NonceFacts {
    NonceFacts {
        pending: Some(n),
        ..NonceFacts::default()
    }
}

fn redeem_intent(amount: &str) -> Intent {
    Intent::redeem(ST, SIDE, amount.parse().expect("a decimal amount"))
        .with_token("ST", 18)
        .described("redeem 1.5 ST")
}

/// The constructors a wallet builds its intent with are the calls the verifier checks:
/// written out field by field they are the same, and a redeem of another amount, or a
/// transfer to another recipient, is refused.
#[test]
fn the_intent_constructors_are_the_calls_the_verifier_checks() {
    assert_eq!(
        redeem_intent("7"),
        Intent {
            function: Some("redeem".into()),
            args: BTreeMap::from([("_amount".into(), "7".into())]),
            to: Some(ST),
            chain_id: Some(SIDE),
            token: Some(st()),
            description: Some("redeem 1.5 ST".into()),
            caller_pinned: false,
        }
    );
    let ctx = context(next(1));
    let tx = redeem_tx("1500000000000000000");
    let amount = U256::from(15) * U256::from(10).pow(U256::from(17));
    verify(
        &tx,
        Some(&Intent::redeem(ST, SIDE, amount)),
        &profile(),
        &ctx,
    )
    .expect("same redeem");
    let e = refusal(
        &tx,
        Some(&Intent::redeem(ST, SIDE, U256::from(1))),
        &profile(),
        &ctx,
    );
    assert!(e.contains("_amount"), "{e}");

    let to = Address::repeat_byte(0x77);
    let data = calldata::encode(
        "transfer",
        &BTreeMap::from([
            ("_to".to_string(), to.to_string()),
            ("_value".to_string(), "5".to_string()),
        ]),
    )
    .expect("encode");
    let transfer = RawTx {
        data: data.into(),
        ..redeem_tx("1")
    };
    let five = U256::from(5);
    verify(
        &transfer,
        Some(&Intent::transfer(ST, SIDE, to, five)),
        &profile(),
        &ctx,
    )
    .expect("same transfer");
    let swap = Intent::swap(ST, SIDE, to, five);
    verify(&transfer, Some(&swap), &profile(), &ctx).expect("a swap is that transfer");
    assert!(swap.description.is_some_and(|d| d.starts_with("swap")));
    let elsewhere = Intent::transfer(ST, SIDE, Address::repeat_byte(0x78), five);
    let e = refusal(&transfer, Some(&elsewhere), &profile(), &ctx);
    assert!(e.contains("_to"), "{e}");
}

fn refusal(tx: &RawTx, intent: Option<&Intent>, policy: &Policy, ctx: &Context) -> String {
    verify(tx, intent, policy, ctx)
        .expect_err("refused")
        .to_string()
}

#[test]
fn a_matching_redeem_passes_with_trusted_display_facts() {
    let intent = redeem_intent("1500000000000000000");
    let v = verify(
        &redeem_tx("1500000000000000000"),
        Some(&intent),
        &profile(),
        &context(next(1)),
    )
    .expect("passes");
    assert_eq!(v.token(), Some(&st()));
    assert_eq!(v.chain_name(), Some("side"));
    assert_eq!(v.nonce_source(), Some("node"));
    assert!(
        !v.pins_call(),
        "a request's intent narrows what is signed; only the operator pins it for an unattended run"
    );
    assert_eq!(v.claimed_description(), Some("redeem 1.5 ST"));
    let ctx = v.summary_context();
    assert_eq!(ctx.labels.get(&ST).map(String::as_str), Some("ST token"));
}

#[test]
fn the_trust_root_decides_chain_and_callee() {
    let tx = redeem_tx("1");
    let ctx = context(next(1));
    let bare = Policy {
        max_gas_price: Some(1 << 60),
        ..Policy::default()
    };
    let e = refusal(&tx, None, &bare, &ctx);
    assert!(
        e.contains("chainId: expected a chain the profile names") && e.contains("names none"),
        "{e}"
    );
    let mut chain_only = bare.clone();
    chain_only.trusted.chain(SIDE, None);
    let e = refusal(&tx, None, &chain_only, &ctx);
    assert!(
        e.contains("to: expected a contract the profile names on chain 617317"),
        "{e}"
    );
    // The same address on another chain is not the trusted contract.
    let mut elsewhere = chain_only.clone();
    elsewhere.trusted.contract(ST, 1, Some(st()));
    let e = refusal(&tx, None, &elsewhere, &ctx);
    assert!(e.contains("to: expected"), "{e}");
    // An expected `to` stands in for a contract the profile does not name; no token facts.
    let flags = Policy {
        expect_to: Some(ST),
        ..chain_only
    };
    let v = verify(&tx, None, &flags, &ctx).expect("expect-to");
    assert_eq!(v.token(), None);
    assert!(
        !v.pins_call(),
        "a callee alone does not say what the call does"
    );
}

#[test]
fn a_request_cannot_change_the_token_or_the_chain() {
    let tx = redeem_tx("1000000000000000000000000");
    let ctx = context(next(1));
    let mut lying = redeem_intent("1000000000000000000000000");
    lying.token = Some(Token {
        symbol: "ST".into(),
        decimals: 24,
    });
    let e = refusal(&tx, Some(&lying), &profile(), &ctx);
    assert!(
        e.contains("intent check failed: token: expected ST with 18 decimals")
            && e.contains("ST with 24 decimals claimed by the request"),
        "{e}"
    );
    let mut other_chain = redeem_intent("1000000000000000000000000");
    other_chain.chain_id = Some(1);
    let e = refusal(&tx, Some(&other_chain), &profile(), &ctx);
    assert!(
        e.contains("intent check failed: chainId: expected 1"),
        "{e}"
    );
}

#[test]
fn defaults_hold_without_a_policy_saying_so() {
    let ctx = context(next(1));
    let mut valued = redeem_tx("1");
    valued.value = U256::from(100);
    let e = refusal(&valued, None, &profile(), &ctx);
    assert!(e.contains("value: expected 0 wei"), "{e}");
    let allowed = Policy {
        max_value: Some(U256::from(100)),
        ..profile()
    };
    verify(&valued, None, &allowed, &ctx).expect("native value allowed by the policy");

    let mut heavy = redeem_tx("1");
    heavy.gas_limit = 10_000_000;
    let e = refusal(&heavy, None, &profile(), &ctx);
    assert!(e.contains("gasLimit: expected at most 1000000"), "{e}");

    let uncapped = Policy {
        max_gas_price: None,
        ..profile()
    };
    let e = refusal(&redeem_tx("1"), None, &uncapped, &ctx);
    assert!(e.contains("gasPrice: expected a cap"), "{e}");
    // Online, the node's quote gives the cap.
    let quoted = Context {
        gas_price_quote: Some(1_000_000_000),
        ..context(next(1))
    };
    let e = refusal(&redeem_tx("1"), None, &uncapped, &quoted);
    assert!(
        e.contains("at most 10000000000 wei (10x the node's gas price 1000000000)"),
        "{e}"
    );
    let fee_only = Policy {
        max_fee: Some(U256::MAX),
        ..uncapped
    };
    verify(&redeem_tx("1"), None, &fee_only, &ctx).expect("a fee cap bounds the price");
}

#[test]
fn the_nonce_is_the_next_one() {
    let tx = redeem_tx("1"); // nonce 1
    let p = profile();
    let cases: Vec<(NonceFacts, &str)> = vec![
        (
            next(0),
            "nonce: expected 0 (the sender's next nonce, from the node), found 1: a gap",
        ),
        (
            next(2),
            "expected 2 (the sender's next nonce, from the node), found 1: a replacement",
        ),
        (
            NonceFacts {
                platform: Some(5),
                ..NonceFacts::default()
            },
            "from the platform), found 1: a replacement",
        ),
        (
            NonceFacts {
                pending: Some(1),
                journal_next: Some(2),
                ..NonceFacts::default()
            },
            "already signed or reserved in the journal",
        ),
        (
            NonceFacts {
                journal_next: Some(0),
                ..NonceFacts::default()
            },
            "expected 0 (the sender's next nonce, from the journal), found 1: a gap",
        ),
        (
            NonceFacts {
                fixed: Some(7),
                pending: Some(1),
                ..NonceFacts::default()
            },
            "from the nonce given",
        ),
        (
            NonceFacts {
                fixed: Some(1),
                journal_next: Some(2),
                ..NonceFacts::default()
            },
            "a replacement of a transaction already signed or reserved in the journal",
        ),
        (NonceFacts::default(), "nonce: expected a way to check it"),
    ];
    for (facts, want) in cases {
        let e = refusal(&tx, None, &p, &context(facts.clone()));
        assert!(e.contains(want), "{facts:?}: {e:?} lacks {want:?}");
    }
    for (facts, source) in [
        (next(1), "node"),
        (
            NonceFacts {
                platform: Some(1),
                journal_next: Some(1),
                ..NonceFacts::default()
            },
            "platform",
        ),
        (
            NonceFacts {
                journal_next: Some(1),
                ..NonceFacts::default()
            },
            "journal",
        ),
        (
            NonceFacts {
                fixed: Some(1),
                ..NonceFacts::default()
            },
            "given",
        ),
    ] {
        let v = verify(&tx, None, &p, &context(facts)).expect(source);
        assert_eq!(v.nonce_source(), Some(source));
    }
    // 2^64-1 is invalid on chain (EIP-2681), even given as the next nonce.
    let last = RawTx {
        nonce: u64::MAX,
        ..tx.clone()
    };
    let e = refusal(&last, None, &p, &context(next(u64::MAX)));
    assert!(
        e.contains("nonce: expected below 2^64-1 (EIP-2681"),
        "{e:?}"
    );
    let below = RawTx {
        nonce: u64::MAX - 1,
        ..tx.clone()
    };
    verify(&below, None, &p, &context(next(u64::MAX - 1))).expect("2^64-2 is valid");
    let resent = Context {
        nonce: Nonce::AlreadySigned,
        ..context(NonceFacts::default())
    };
    assert_eq!(
        verify(&tx, None, &p, &resent)
            .expect("signed before")
            .nonce_source(),
        None
    );
}

#[test]
fn an_intent_never_sends_value_even_where_the_policy_allows_it() {
    let mut tx = redeem_tx("1");
    tx.value = U256::from(5);
    let generous = Policy {
        max_value: Some(U256::from(10)),
        ..profile()
    };
    let ctx = context(next(1));
    verify(&tx, None, &generous, &ctx).expect("a bare rawTx within the allowed value");
    let e = refusal(&tx, Some(&redeem_intent("1")), &generous, &ctx);
    assert!(
        e.contains("intent check failed: value: expected 0 wei"),
        "{e}"
    );
}

#[test]
fn the_sender_is_the_key() {
    let ctx = Context {
        signer: Address::repeat_byte(0x22),
        ..context(next(1))
    };
    let e = refusal(&redeem_tx("1"), None, &profile(), &ctx);
    assert!(e.contains("from mismatch"), "{e}");
}

#[test]
fn an_intent_names_the_whole_call_and_sends_no_value() {
    // transferWithFee also has an `_amount`: naming only `_amount` must not let a
    // call with other, unnamed arguments through.
    let inputs = BTreeMap::from([
        ("_to".to_string(), format!("{}", Address::repeat_byte(0x66))),
        ("_amount".to_string(), "100".to_string()),
        (
            "_feeCollector".to_string(),
            format!("{}", Address::repeat_byte(0x66)),
        ),
        ("_fee".to_string(), "99".to_string()),
    ]);
    let mut t = redeem_tx("1");
    t.data = calldata::encode("transferWithFee", &inputs)
        .expect("encode")
        .into();
    let ctx = context(next(1));
    let named = Policy {
        expect_args: BTreeMap::from([("_amount".into(), "100".into())]),
        ..profile()
    };
    verify(&t, None, &named, &ctx).expect("a partial expectation checks only what it names");
    let intent = Intent {
        function: Some("transferWithFee".into()),
        args: BTreeMap::from([("_amount".into(), "100".into())]),
        ..Intent::default()
    };
    let e = refusal(&t, Some(&intent), &profile(), &ctx);
    assert!(
        e.contains(
            "intent check failed: args._to: expected only the arguments asked for (_amount)"
        ),
        "{e}"
    );
}

#[test]
fn each_check_refuses_naming_field_expected_found() {
    let cases: Vec<(Policy, &str)> = vec![
        (
            Policy {
                expect_chain_id: Some(1),
                ..profile()
            },
            "chainId: expected 1, found 617317",
        ),
        (
            Policy {
                expect_to: Some(Address::repeat_byte(0x36)),
                ..profile()
            },
            "to: expected 0x3636",
        ),
        (
            Policy {
                expect_function: Some("stake".into()),
                ..profile()
            },
            "function: expected stake(uint256), found redeem(uint256)",
        ),
        (
            Policy {
                expect_function: Some("mint".into()),
                ..profile()
            },
            "not a function bridgectl knows",
        ),
        (
            Policy {
                expect_args: BTreeMap::from([("_amount".into(), "1".into())]),
                ..profile()
            },
            "args._amount: expected 1, found 1500000000000000000",
        ),
        (
            Policy {
                expect_args: BTreeMap::from([("_to".into(), "1".into())]),
                ..profile()
            },
            "no such argument",
        ),
        (
            Policy {
                expect_data: Some(vec![1u8].into()),
                ..profile()
            },
            "data: expected 0x01, found 0xdb006a75",
        ),
        (
            Policy {
                max_gas_price: Some(49_999_999_999),
                ..profile()
            },
            "gasPrice: expected at most 49999999999 wei (policy), found 50000000000 wei",
        ),
        (
            Policy {
                max_fee: Some(U256::from(1)),
                ..profile()
            },
            "found 100000 x 50000000000 = 5000000000000000 wei",
        ),
    ];
    let tx = redeem_tx("1500000000000000000");
    for (p, want) in cases {
        let e = refusal(&tx, None, &p, &context(next(1)));
        assert!(e.contains(want), "{e:?} lacks {want:?}");
        assert!(e.starts_with("policy check failed"), "{e}");
    }
    let mut unknown = tx.clone();
    unknown.data = vec![0xde, 0xad, 0xbe, 0xef].into();
    let p = Policy {
        expect_function: Some("redeem".into()),
        ..profile()
    };
    let e = refusal(&unknown, None, &p, &context(next(1)));
    assert!(e.contains("unknown selector 0xdeadbeef"), "{e}");
}

#[test]
fn exactly_accepts_that_transaction_and_no_other() {
    let tx = redeem_tx("1");
    let (policy, ctx) = exactly(&tx);
    verify(&tx, None, &policy, &ctx).expect("itself");
    let mut other = tx.clone();
    other.nonce = 2;
    assert!(refusal(&other, None, &policy, &ctx).contains("nonce"));
    let mut other = tx;
    other.gas_price += 1;
    assert!(refusal(&other, None, &policy, &ctx).contains("gasPrice"));
}

#[test]
fn only_the_operator_pins_a_call_for_signing_without_a_question() {
    let tx = redeem_tx("1500000000000000000");
    let intent = redeem_intent("1500000000000000000");
    let ctx = context(next(1));
    // The intent names the whole call: it narrows, it does not approve (M5).
    let v = verify(&tx, Some(&intent), &profile(), &ctx).expect("passes");
    assert!(!v.pins_call());
    assert_eq!(v.auto_approved_by(), None);
    // A standing approval in the profile: the function, at most 2 ST.
    let rule = |function: &str, max: &str| crate::policy::AutoApprove {
        function: function.into(),
        token: "ST".into(),
        destinations: Vec::new(),
        max: max.into(),
    };
    let mut p = profile();
    p.auto_approve = vec![rule("transfer", "100"), rule("redeem", "2")];
    let v = verify(&tx, Some(&intent), &p, &ctx).expect("passes");
    assert!(v.pins_call());
    assert_eq!(v.auto_approved_by(), Some(2));
    // More than the rule's max: verified, but not approved in advance.
    p.auto_approve = vec![rule("redeem", "1")];
    let v = verify(&tx, Some(&intent), &p, &ctx).expect("passes");
    assert!(!v.pins_call());
    // An approval naming a function bridgectl does not know is refused outright.
    p.auto_approve = vec![rule("drain", "1")];
    let e = refusal(&tx, Some(&intent), &p, &ctx);
    assert!(e.contains("auto-approve #1") && e.contains("drain"), "{e}");
}

/// A rule names its token: one written for MT, with a `max` that would cover the call,
/// never approves a call on the ST contract (and one naming a token the profile does
/// not describe is refused).
#[test]
fn an_auto_approve_rule_approves_calls_on_its_own_token_only() {
    let tx = redeem_tx("1500000000000000000");
    let intent = redeem_intent("1500000000000000000");
    let ctx = context(next(1));
    let mut p = profile();
    p.trusted.contract(
        Address::repeat_byte(0x4d),
        SIDE,
        Some(Token {
            symbol: "MT".into(),
            decimals: 18,
        }),
    );
    let rule = |token: &str| crate::policy::AutoApprove {
        function: "redeem".into(),
        token: token.into(),
        destinations: Vec::new(),
        max: "5".into(),
    };
    p.auto_approve = vec![rule("MT")];
    let v = verify(&tx, Some(&intent), &p, &ctx).expect("passes");
    assert_eq!(v.auto_approved_by(), None, "an MT rule on an ST call");
    p.auto_approve = vec![rule("MT"), rule("st")];
    let v = verify(&tx, Some(&intent), &p, &ctx).expect("passes");
    assert_eq!(v.auto_approved_by(), Some(2), "its own token, any case");
    p.auto_approve = vec![rule("XT")];
    let e = refusal(&tx, Some(&intent), &p, &ctx);
    assert!(e.contains("auto-approve #1") && e.contains("XT"), "{e}");
}

#[test]
fn a_limit_on_a_token_the_profile_cannot_resolve_is_refused() {
    let tx = redeem_tx("1");
    let ctx = context(next(1));
    let mut p = profile();
    // A misspelled symbol (L1): refused, naming it and the tokens known.
    p.limits.insert(
        "stt".into(),
        crate::limits::Limit {
            max_per_tx: Some("1".into()),
            ..Default::default()
        },
    );
    let e = refusal(&tx, None, &p, &ctx);
    assert!(
        e.contains("\"stt\" names no token") && e.contains("known: ST"),
        "{e}"
    );
    // The right symbol, but a profile that does not say the contract is a token.
    let mut p = profile();
    p.limits.insert(
        "st".into(),
        crate::limits::Limit {
            max_per_tx: Some("1".into()),
            ..Default::default()
        },
    );
    verify(&tx, None, &p, &ctx).expect("enforceable");
    p.trusted.contracts.iter_mut().for_each(|c| c.token = None);
    let e = refusal(&tx, None, &p, &ctx);
    assert!(e.contains("names no token the profile knows"), "{e}");
}

fn call_tx(function: &str, inputs: &[(&str, String)]) -> RawTx {
    let inputs: BTreeMap<String, String> = inputs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    RawTx {
        data: calldata::encode(function, &inputs).expect("encode").into(),
        ..redeem_tx("1")
    }
}

/// H1: `transferWithFee(_to = allowed, _amount = 1 ST, _feeCollector = attacker,
/// _fee = 10000)` moves 101 ST, 100 of them to the attacker.
fn fee_attack(collector: Address) -> RawTx {
    call_tx(
        "transferWithFee",
        &[
            ("_to", Address::repeat_byte(0xa1).to_string()),
            ("_amount", "1000000000000000000".into()),
            ("_feeCollector", collector.to_string()),
            ("_fee", "10000".into()),
        ],
    )
}

#[test]
fn a_fee_collector_is_a_destination_and_the_fee_is_counted() {
    let allowed = Address::repeat_byte(0xa1);
    let attacker = Address::repeat_byte(0xee);
    let ctx = context(next(1));
    let mut p = profile();
    p.allowed_destinations = vec![allowed];
    let refused = verify(&fee_attack(attacker), None, &p, &ctx).expect_err("refused");
    assert_eq!(
        refused.refused_expectation(),
        Some(crate::Expectation::AllowedDestination)
    );
    let e = refused.to_string();
    assert!(
        e.contains("destination (_feeCollector)") && e.contains(&attacker.to_string()),
        "{e}"
    );
    // Both allowed: the per-transaction limit counts the fee as what it is, 100 ST.
    p.allowed_destinations.push(attacker);
    p.limits.insert(
        "st".into(),
        crate::limits::Limit {
            max_per_tx: Some("8".into()),
            ..Default::default()
        },
    );
    let e = refusal(&fee_attack(attacker), None, &p, &ctx);
    assert!(
        e.contains("8 ST per transaction") && e.contains("101 ST more"),
        "{e}"
    );
    // An approval is a destination with an amount.
    let approve = call_tx(
        "approve",
        &[
            ("_spender", attacker.to_string()),
            ("_value", "9000000000000000000".into()),
        ],
    );
    let e = refusal(&approve, None, &p, &ctx);
    assert!(e.contains("9 ST more"), "{e}");
}

#[test]
fn calls_without_a_model_are_refused_under_limits_unless_allowed_by_selector() {
    let ctx = context(next(1));
    let mut p = profile();
    p.max_gas_limit = Some(100_000);
    let mut unknown = redeem_tx("1");
    unknown.data = vec![0xde, 0xad, 0xbe, 0xef, 0, 1].into();
    verify(&unknown, None, &p, &ctx).expect("no limit, no allowlist: the caps decide");
    p.limits.insert(
        "st".into(),
        crate::limits::Limit {
            max_per_tx: Some("8".into()),
            ..Default::default()
        },
    );
    let refused = verify(&unknown, None, &p, &ctx).expect_err("refused");
    assert_eq!(
        refused.refused_expectation(),
        Some(crate::Expectation::ModelledCall)
    );
    let e = refused.to_string();
    assert!(
        e.contains("effects bridgectl models") && e.contains("0xdeadbeef"),
        "{e}"
    );
    p.allow_unmodelled = vec!["0xdeadbeef".into()];
    let e = refusal(&unknown, None, &p, &ctx);
    // Allowed past the model, the limit still cannot count it.
    assert!(e.contains("cannot read"), "{e}");
    p.limits.clear();
    p.allowed_destinations = vec![Address::repeat_byte(0xa1)];
    verify(&unknown, None, &p, &ctx).expect("allowed by selector under an allowlist");
}

/// Each refusal carries its field and the kind of expectation it failed, set where the
/// check refuses: what a caller matches on, whatever the words of `expected`. Near
/// misses: the same nonce gap from the node and from the journal alone are two kinds,
/// native value with no max-value and above a max-value are two kinds.
#[test]
fn each_refusal_carries_its_field_and_kind_of_expectation() {
    use crate::error::{Expectation as E, Field, NonceSource};
    let tx = redeem_tx("1500000000000000000");
    let facts = |journal_next: Option<u64>, pending: Option<u64>| NonceFacts {
        journal_next,
        pending,
        ..NonceFacts::default()
    };
    let at = |nonce: u64| RawTx {
        nonce,
        ..tx.clone()
    };
    let cases: Vec<(RawTx, Policy, NonceFacts, Field, E)> = vec![
        (
            tx.clone(),
            Policy {
                expect_chain_id: Some(1),
                ..profile()
            },
            next(1),
            Field::ChainId,
            E::Pinned,
        ),
        (
            tx.clone(),
            Policy {
                trusted: Trusted::default(),
                ..profile()
            },
            next(1),
            Field::ChainId,
            E::Trusted,
        ),
        (
            tx.clone(),
            Policy {
                expect_args: BTreeMap::from([("_amount".into(), "1".into())]),
                ..profile()
            },
            next(1),
            Field::Arg("_amount".into()),
            E::Pinned,
        ),
        (
            RawTx {
                value: U256::from(1),
                ..tx.clone()
            },
            profile(),
            next(1),
            Field::Value,
            E::NoValue,
        ),
        (
            RawTx {
                value: U256::from(2),
                ..tx.clone()
            },
            Policy {
                max_value: Some(U256::from(1)),
                ..profile()
            },
            next(1),
            Field::Value,
            E::AtMost,
        ),
        (
            tx.clone(),
            Policy {
                max_gas_price: None,
                ..profile()
            },
            next(1),
            Field::GasPrice,
            E::GasPriceCap,
        ),
        (
            tx.clone(),
            Policy {
                max_fee: Some(U256::from(1)),
                ..profile()
            },
            next(1),
            Field::MaxFee,
            E::AtMost,
        ),
        (
            at(5),
            profile(),
            facts(Some(3), Some(3)),
            Field::Nonce,
            E::NextNonce(NonceSource::Node),
        ),
        (
            at(5),
            profile(),
            facts(Some(3), None),
            Field::Nonce,
            E::NextNonce(NonceSource::Journal),
        ),
        (
            at(2),
            profile(),
            facts(Some(3), None),
            Field::Nonce,
            E::AboveJournalFloor,
        ),
        (
            at(5),
            profile(),
            facts(None, None),
            Field::Nonce,
            E::CheckedNonce,
        ),
        (
            at(u64::MAX),
            profile(),
            next(1),
            Field::Nonce,
            E::IncludableNonce,
        ),
    ];
    for (tx, policy, nonce, field, kind) in cases {
        let e = verify(&tx, None, &policy, &context(nonce)).expect_err("refused");
        assert_eq!(e.refused_field(), Some(field), "{e}");
        assert_eq!(e.refused_expectation(), Some(kind), "{e}");
    }
}
