//! The hostile-offline matrix through the library: every `fail_` case in
//! `hostile-offline/` is refused by `SignInput::parse` or `verify` (or, for `--yes`
//! without a pinned call, verifies as not pinned), naming the field; every `ok_` case
//! verifies and signs. The CLI runs the same files in `tests/offline.rs`.

use std::path::PathBuf;

use alloy_primitives::Address;
use alloy_signer_local::PrivateKeySigner;
use bridgectl_tx::request::Token;
use bridgectl_tx::{Context, Nonce, NonceFacts, Policy, SignInput, sign_legacy, verify};
use serde_json::Value;

const KEY: &str = "4646464646464646464646464646464646464646464646464646464646464646";

fn policy_of(profile: &Value) -> Policy {
    let mut p = Policy {
        max_gas_price: profile["maxGasPrice"]
            .as_str()
            .map(|s| s.parse().expect("maxGasPrice")),
        ..Policy::default()
    };
    let chain = profile["sideChainId"].as_u64().expect("sideChainId");
    let st: Address = profile["stContract"]
        .as_str()
        .expect("stContract")
        .parse()
        .expect("address");
    let token = Token {
        symbol: profile["sideSymbol"].as_str().expect("symbol").into(),
        decimals: profile["sideDecimals"].as_u64().expect("decimals") as u8,
    };
    p.trusted.contract(st, chain, Some(token));
    if let Some(rules) = profile.get("autoApprove") {
        p.auto_approve = serde_json::from_value(rules.clone()).expect("autoApprove");
    }
    p
}

#[test]
fn every_hostile_case_is_refused_and_every_good_one_signs() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/hostile-offline");
    let key: PrivateKeySigner = KEY.parse().expect("key");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "{} cases", files.len());
    for path in files {
        let name = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let case: Value = serde_json::from_slice(&std::fs::read(&path).expect("read"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let bytes = match case.get("inputText") {
            Some(t) => t.as_str().expect("inputText").as_bytes().to_vec(),
            None => serde_json::to_vec(&case["input"]).expect("input"),
        };
        let context = Context {
            signer: key.address(),
            gas_price_quote: None,
            nonce: Nonce::Next(NonceFacts {
                fixed: case["nonce"].as_u64(),
                ..NonceFacts::default()
            }),
            spent: None,
        };
        let outcome = SignInput::parse(&bytes).and_then(|input| {
            verify(
                &input.raw_tx,
                input.intent.as_ref(),
                &policy_of(&case["profile"]),
                &context,
            )
        });
        let refused = case["refused"].as_str().expect("refused");
        let blind = case["yes"] == true && refused == "signing blind";
        match (name.starts_with("ok_"), outcome) {
            (true, Ok(v)) => {
                assert!(v.pins_call(), "{name}");
                sign_legacy(&v, &key).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            (false, Ok(v)) if blind => assert!(!v.pins_call(), "{name}: call counted as pinned"),
            (false, Err(e)) => {
                let text = e.to_string();
                assert!(e.is_refusal(), "{name}: {text}");
                assert!(text.contains(refused), "{name}: {text:?} lacks {refused:?}");
            }
            (ok, outcome) => panic!("{name}: expected ok={ok}, got {outcome:?}"),
        }
    }
}

#[test]
fn the_summary_is_told_the_trusted_facts_and_the_claim() {
    // What the person is shown comes from the profile (chain name, token, fee cap) and,
    // marked as a claim, the request's description: none of it may go missing.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hostile-offline/ok_redeem_request.json");
    let case: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    let input =
        SignInput::parse(&serde_json::to_vec(&case["input"]).expect("input")).expect("parse");
    let mut policy = policy_of(&case["profile"]);
    let chain = case["profile"]["sideChainId"].as_u64().expect("chain");
    policy.trusted.chain(chain, Some("side".into()));
    policy.max_fee =
        Some(alloy_primitives::U256::from(10u64).pow(alloy_primitives::U256::from(18)));
    let key: PrivateKeySigner = KEY.parse().expect("key");
    let context = Context {
        signer: key.address(),
        gas_price_quote: None,
        nonce: Nonce::Next(NonceFacts {
            fixed: Some(4),
            ..NonceFacts::default()
        }),
        spent: None,
    };
    let v = verify(&input.raw_tx, input.intent.as_ref(), &policy, &context).expect("verified");
    let ctx = v.summary_context();
    assert_eq!(ctx.chain_name.as_deref(), Some("side"));
    assert_eq!(
        ctx.token.as_ref().map(|t| (t.symbol.as_str(), t.decimals)),
        Some(("ST", 18))
    );
    assert_eq!(ctx.max_fee, policy.max_fee);
    assert_eq!(ctx.description.as_deref(), Some("redeem 1 ST"));
    assert_eq!(
        ctx.labels.get(&input.raw_tx.to).map(String::as_str),
        Some("ST token")
    );
}
