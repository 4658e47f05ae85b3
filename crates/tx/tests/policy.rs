//! The policy's merging and trust root, through the public API: what a profile and flags
//! add up to decides what is refused. Written to kill the mutants `bench/mutants.sh`
//! found missed in `policy.rs` (a merge that drops `exact_args`, a contract list that
//! keeps only one contract per address or per chain, an `is_empty` that lies).

use alloy_primitives::Address;
use bridgectl_tx::Policy;
use bridgectl_tx::request::Token;

fn token(symbol: &str) -> Option<Token> {
    Some(Token {
        symbol: symbol.into(),
        decimals: 6,
    })
}

#[test]
fn exact_args_from_either_side_survives_the_merge() {
    let exact = Policy {
        exact_args: true,
        ..Policy::default()
    };
    // Flags that do not ask for exact arguments do not switch off the profile's.
    assert!(Policy::default().or(&exact).exact_args);
    assert!(exact.clone().or(&Policy::default()).exact_args);
    assert!(!Policy::default().or(&Policy::default()).exact_args);
    // And with a function, that is the difference between a pinned call and not.
    let function = Policy {
        expect_function: Some("redeem".into()),
        ..Policy::default()
    };
    assert!(function.clone().or(&exact).pins_call());
    assert!(!function.or(&Policy::default()).pins_call());
}

#[test]
fn one_address_on_two_chains_and_two_addresses_on_one_chain_are_all_trusted() {
    let (a, b) = (Address::repeat_byte(0xa), Address::repeat_byte(0xb));
    let mut p = Policy::default();
    p.trusted
        .contract(a, 1, token("A1"))
        .contract(a, 2, token("A2"))
        .contract(b, 1, token("B1"))
        // The same contract again keeps the first entry.
        .contract(a, 1, token("again"));
    assert_eq!(p.trusted.contracts.len(), 3, "{:?}", p.trusted.contracts);
    let symbol = |addr, chain| {
        p.trusted
            .find(addr, chain)
            .and_then(|c| c.token.as_ref())
            .map(|t| t.symbol.clone())
    };
    assert_eq!(symbol(a, 1).as_deref(), Some("A1"));
    assert_eq!(symbol(a, 2).as_deref(), Some("A2"));
    assert_eq!(symbol(b, 1).as_deref(), Some("B1"));
    assert!(p.trusted.find(b, 2).is_none());
    assert!(p.trusted.chains.contains_key(&1) && p.trusted.chains.contains_key(&2));
}

#[test]
fn is_empty_means_nothing_set() {
    assert!(Policy::default().is_empty());
    let capped = Policy {
        max_gas_price: Some(1),
        ..Policy::default()
    };
    assert!(!capped.is_empty());
    let mut trusting = Policy::default();
    trusting.trusted.chain(1, None);
    assert!(!trusting.is_empty());
}

#[test]
fn an_intent_is_checked_field_by_field() {
    // Every field of what was asked for becomes an expectation: dropping one (the callee,
    // say) would let a rawTx to another contract through.
    let to = Address::repeat_byte(0x5c);
    let intent = bridgectl_tx::request::Intent {
        function: Some("redeem".into()),
        args: [("_amount".to_owned(), "5".to_owned())].into(),
        to: Some(to),
        chain_id: Some(3),
        ..Default::default()
    };
    let p = Policy::from(&intent);
    assert_eq!(p.expect_to, Some(to));
    assert_eq!(p.expect_chain_id, Some(3));
    assert_eq!(p.expect_function.as_deref(), Some("redeem"));
    assert_eq!(p.expect_args, intent.args);
    assert!(p.exact_args);
    assert_eq!(p.max_value, Some(alloy_primitives::U256::ZERO));
}
