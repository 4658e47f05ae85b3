//! Over-socket flows against real anvil: swap, redeem, managed execute, faults, cleanup.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use alloy_consensus::{SignableTransaction, TxEnvelope, TxLegacy};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, Bytes, TxKind, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use bridgectl_sandbox::FaultConfig;
use bridgectl_sandbox::anvil::process_is_gone;
use serde_json::{Value, json};

use crate::util::{Client, eventually, finish, start};

fn hexq(v: &Value) -> u128 {
    let s = v.as_str().expect("hex string");
    u128::from_str_radix(s.strip_prefix("0x").expect("0x"), 16).expect("hex")
}

/// Signs a platform rawTx object with a local alloy signer, as an EOA wallet does.
fn sign_raw_tx(key: &PrivateKeySigner, raw: &Value) -> String {
    assert!(
        raw.get("value").is_none(),
        "rawTx must not carry value: {raw}"
    );
    assert!(raw["chainId"].is_u64(), "chainId is a JSON number: {raw}");
    assert_eq!(
        raw["from"].as_str().map(str::to_lowercase),
        Some(key.address().to_string().to_lowercase())
    );
    let tx = TxLegacy {
        chain_id: raw["chainId"].as_u64(),
        nonce: hexq(&raw["nonce"]) as u64,
        gas_price: hexq(&raw["gasPrice"]),
        gas_limit: hexq(&raw["gasLimit"]) as u64,
        to: TxKind::Call(raw["to"].as_str().expect("to").parse().expect("address")),
        value: U256::ZERO,
        input: raw["data"]
            .as_str()
            .expect("data")
            .parse::<Bytes>()
            .expect("hex data"),
    };
    let sig = key.sign_hash_sync(&tx.signature_hash()).expect("sign");
    let env = TxEnvelope::Legacy(tx.into_signed(sig));
    format!("0x{}", hex::encode(env.encoded_2718()))
}

fn dev_key(s: &bridgectl_sandbox::Sandbox) -> PrivateKeySigner {
    let bytes = hex::decode(s.info().dev.private_key.expose_secret()).expect("hex key");
    PrivateKeySigner::from_slice(&bytes).expect("key")
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[tokio::test]
async fn swap_end_to_end_credits_st_by_the_ratio() {
    let sb = start().await;
    let c = Client::new(&sb);
    let info = sb.info().clone();
    let key = dev_key(&sb);
    let user: Address = "0x00000000000000000000000000000000000b0b01"
        .parse()
        .expect("addr");
    let body = json!({
        "mainEnvironmentId": info.main.environment_id,
        "sideEnvironmentId": info.side.environment_id,
        "mainTokenSymbol": info.main.symbol,
        "sideTokenSymbol": info.side.symbol,
    });
    let (s, r) = c.post(&format!("/mx/v2.0/swap/{user}"), body.clone()).await;
    assert_eq!(s, 200, "{r}");
    let swap = r["data"]["swapAddress"]
        .as_str()
        .expect("swapAddress")
        .to_owned();
    let (_, again) = c.post(&format!("/mx/v2.0/swap/{user}"), body).await;
    assert_eq!(
        again["data"]["swapAddress"].as_str(),
        Some(swap.as_str()),
        "stable on repeat"
    );

    // raw MT transfer of 1.5 MT from the dev account to the swap address, signed locally.
    let path = format!(
        "/mx/v2.0/token/main-tokens/{}/transfer/raw-tx?mainEnvironmentId={}&fromAddress={}&toAddress={swap}&amount=1500000000000000000",
        info.main.symbol, info.main.environment_id, info.dev.address
    );
    let (s, r) = c.get(&path, None).await;
    assert_eq!(s, 200, "{r}");
    let signed = sign_raw_tx(&key, &r["data"]["rawTx"]);
    let (s, r) = c
        .post(
            "/mx/v2.0/transaction/send/signed-tx",
            json!({"signedTx": signed}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert!(
        r["data"]["txHash"]["txHash"]
            .as_str()
            .is_some_and(|h| h.len() == 66),
        "{r}"
    );

    // 1.5 MT at 1 MT = 2 ST with 6 decimals is 3_000_000 ST base units.
    let st_path = format!(
        "/tx/v2.0/wallets/{user}/{}/{}/balance",
        info.main.symbol, info.side.symbol
    );
    eventually(10, "ST credited", || async {
        (c.balance(&st_path).await == "3000000").then_some(())
    })
    .await;
    let (s, r) = c.get("/sandbox/v1/swaps", None).await;
    assert_eq!(s, 200);
    let rec = &r["data"]["items"][0];
    assert_eq!(rec["mtAmount"], "1500000000000000000");
    assert_eq!(rec["stAmount"], "3000000");
    eventually(5, "swap completed", || async {
        let (_, r) = c.get("/sandbox/v1/swaps", None).await;
        (r["data"]["items"][0]["status"] == "completed").then_some(())
    })
    .await;

    // An unregistered sender is refused at submit, with a clear error.
    let stranger = PrivateKeySigner::from_slice(&[7u8; 32]).expect("key");
    let tx = TxLegacy {
        chain_id: Some(info.main.chain_id),
        nonce: 0,
        gas_price: 2_000_000_000,
        gas_limit: 100_000,
        to: TxKind::Call(info.main.token_address),
        value: U256::ZERO,
        input: {
            let mut d = vec![0xa9, 0x05, 0x9c, 0xbb];
            d.extend_from_slice(&[0u8; 12]);
            d.extend_from_slice(&hex::decode(swap.trim_start_matches("0x")).expect("hex"));
            d.extend_from_slice(&U256::from(1u8).to_be_bytes::<32>());
            d.into()
        },
    };
    let sig = stranger.sign_hash_sync(&tx.signature_hash()).expect("sign");
    let raw = format!(
        "0x{}",
        hex::encode(TxEnvelope::Legacy(tx.into_signed(sig)).encoded_2718())
    );
    let (s, r) = c
        .post(
            "/mx/v2.0/transaction/send/signed-tx",
            json!({"signedTx": raw}),
        )
        .await;
    assert_eq!(
        (s, r["code"].as_str()),
        (403, Some("FEE_DELEGATION_NOT_REGISTERED")),
        "{r}"
    );
    finish(sb).await;
}

#[tokio::test]
async fn redeem_end_to_end_pays_mt_and_completes_then_fails_on_empty_reserve() {
    let sb = start().await;
    let c = Client::new(&sb);
    let info = sb.info().clone();
    let key = dev_key(&sb);
    let mt_path = format!(
        "/tx/v2.0/wallets/{}/{}/balance",
        info.dev.address, info.main.symbol
    );
    let before = U256::from_str_radix(&c.balance(&mt_path).await, 10).expect("num");

    // Redeem 4 ST (6 decimals) -> 2 MT at 1 MT = 2 ST.
    let tx_id = uuid();
    let (s, r) = c
        .post(
            "/tx/v2.0/transactions/redeem",
            json!({"txId": tx_id, "from": info.dev.address, "inputs": {"_amount": "4000000"}}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let raw = &r["data"]["rawTx"];
    assert_eq!(raw["chainId"], info.side.chain_id);
    assert!(
        raw["data"]
            .as_str()
            .is_some_and(|d| d.starts_with("0xdb006a75")),
        "{raw}"
    );
    let signed = sign_raw_tx(&key, raw);
    let (s, r) = c
        .post(
            "/mx/v2.0/transaction/send/signed-tx",
            json!({"signedTx": signed.clone()}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let hash = r["data"]["txHash"]["txHash"]
        .as_str()
        .expect("hash")
        .to_owned();
    // Resubmitting the same bytes is recognised, not sent twice.
    let (s, r) = c
        .post(
            "/mx/v2.0/transaction/send/signed-tx",
            json!({"signedTx": signed}),
        )
        .await;
    assert_eq!((s, r["code"].as_str()), (409, Some("ALREADY_KNOWN")), "{r}");

    let side = json!({"sideEnvironmentId": info.side.environment_id});
    let rec = eventually(10, "redemption completed", || async {
        let (s, r) = c
            .get(
                &format!("/mx/v2.0/transactions/redeems/{tx_id}"),
                Some(side.clone()),
            )
            .await;
        (s == 200 && r["data"]["status"] == "completed").then_some(r)
    })
    .await;
    assert_eq!(rec["data"]["txHash"], hash.as_str());
    assert_eq!(rec["data"]["stAmount"], "4000000");
    assert_eq!(rec["data"]["mtAmount"], "2000000000000000000");
    let (s, by_hash) = c
        .get(
            &format!("/mx/v2.0/transactions/redeems/{hash}"),
            Some(side.clone()),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(by_hash["data"]["status"], "completed");
    let after = U256::from_str_radix(&c.balance(&mt_path).await, 10).expect("num");
    assert_eq!(after - before, U256::from(2_000_000_000_000_000_000u128));

    // The reserve now holds 8 MT; redeeming 20 ST (10 MT) fails with a reason.
    let tx_id = uuid();
    let (_, r) = c
        .post(
            "/tx/v2.0/transactions/redeem",
            json!({"txId": tx_id, "from": info.dev.address, "inputs": {"_amount": "20000000"}}),
        )
        .await;
    let signed = sign_raw_tx(&key, &r["data"]["rawTx"]);
    let (s, r) = c
        .post(
            "/mx/v2.0/transaction/send/signed-tx",
            json!({"signedTx": signed}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let rec = eventually(10, "redemption failed", || async {
        let (_, r) = c
            .get(
                &format!("/mx/v2.0/transactions/redeems/{tx_id}"),
                Some(side.clone()),
            )
            .await;
        (r["data"]["status"] == "failed").then_some(r)
    })
    .await;
    assert!(
        rec["data"]["reason"]
            .as_str()
            .is_some_and(|m| m.contains("reserve")),
        "{rec}"
    );
    // A txId is never reused.
    let (s, r) = c
        .post(
            "/tx/v2.0/transactions/redeem",
            json!({"txId": tx_id, "from": info.dev.address, "inputs": {"_amount": "1"}}),
        )
        .await;
    assert_eq!((s, r["code"].as_str()), (409, Some("TXID_REUSED")), "{r}");
    finish(sb).await;
}

#[tokio::test]
async fn managed_account_execute_signs_and_submits() {
    let sb = start().await;
    let c = Client::new(&sb);
    let info = sb.info().clone();
    let managed = info.managed_accounts[0];
    // Give the managed account 10 ST from the dev account through a managed... no: EOA
    // transfer via the `transfer` action, signed locally.
    let key = dev_key(&sb);
    let (s, r) = c
        .post(
            "/tx/v2.0/transactions/transfer",
            json!({"txId": uuid(), "from": info.dev.address, "inputs": {"_to": managed.to_string(), "_value": "10000000"}}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let (s, r) = c
        .post(
            "/mx/v2.0/transaction/send/signed-tx",
            json!({"signedTx": sign_raw_tx(&key, &r["data"]["rawTx"])}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    // The managed account stakes 3 ST: the sandbox signs and submits.
    let tx_id = uuid();
    let (s, r) = c
        .post(
            "/tx/v2.0/transactions/stake",
            json!({"txId": tx_id, "from": managed, "inputs": {"_amount": "3000000"}}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["data"]["txId"], tx_id.as_str());
    assert!(
        r["data"]["txHash"].as_str().is_some_and(|h| h.len() == 66),
        "{r}"
    );
    assert!(r["data"].get("rawTx").is_none());
    let st_path = format!(
        "/tx/v2.0/wallets/{managed}/{}/{}/balance",
        info.main.symbol, info.side.symbol
    );
    eventually(10, "staked", || async {
        (c.balance(&st_path).await == "7000000").then_some(())
    })
    .await;
    // A view action returns the value.
    let (s, r) = c
        .post(
            "/tx/v2.0/transactions/totalSupply",
            json!({"txId": uuid(), "from": managed, "inputs": {}}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["data"]["value"], "50000000");
    // Operation 2 signs a given rawTx object for the managed account.
    let (_, nonce) = c
        .get(
            &format!("/mx/v2.0/wallets/{managed}/nonce"),
            Some(json!({"environmentId": info.side.environment_id})),
        )
        .await;
    let n = nonce["data"]["nonce"].as_u64().expect("nonce");
    assert_eq!(n, 1);
    let raw = json!({"from": managed, "to": info.side.token_address, "data": "0x2e17de7800000000000000000000000000000000000000000000000000000000000f4240",
        "nonce": format!("{n:#x}"), "gasLimit": "0x30000", "gasPrice": "0x3b9aca00", "chainId": info.side.chain_id});
    let (s, r) = c
        .post(
            &format!("/mx/v2.0/wallets/{managed}/sign"),
            json!({"rawTx": raw}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let signed = r["data"]["signedTx"].as_str().expect("signedTx").to_owned();
    let (s, r) = c
        .post(
            "/mx/v2.0/transaction/send/signed-tx",
            json!({"signedTx": signed}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    eventually(10, "unstaked", || async {
        (c.balance(&st_path).await == "8000000").then_some(())
    })
    .await;
    finish(sb).await;
}

#[tokio::test]
async fn fault_knobs_are_observable() {
    let sb = start().await;
    let c = Client::new(&sb);
    let info = sb.info().clone();
    let key = dev_key(&sb);
    let state = sb.state().clone();

    // Latency.
    state.set_fault(
        "nonce",
        FaultConfig {
            latency_ms: 400,
            ..Default::default()
        },
    );
    let t = Instant::now();
    let (s, _) = c
        .get(
            &format!("/mx/v2.0/wallets/{}/nonce", info.dev.address),
            Some(json!({"environmentId": info.main.environment_id})),
        )
        .await;
    assert_eq!(s, 200);
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "latency not applied: {:?}",
        t.elapsed()
    );

    // 5xx before any work: the txId is not consumed.
    state.set_fault(
        "execute",
        FaultConfig {
            error_rate: 1.0,
            ..Default::default()
        },
    );
    let tx_id = uuid();
    let body = json!({"txId": tx_id, "from": info.dev.address, "inputs": {"_amount": "1000000"}});
    let (s, r) = c.post("/tx/v2.0/transactions/redeem", body.clone()).await;
    assert_eq!(
        (s, r["code"].as_str()),
        (503, Some("SERVICE_UNAVAILABLE")),
        "{r}"
    );
    state.set_fault("execute", FaultConfig::default());
    let (s, r) = c.post("/tx/v2.0/transactions/redeem", body).await;
    assert_eq!(s, 200, "the txId survived the injected 503: {r}");

    // Drop after work on submit: the client sees 502, yet the transaction is on chain.
    let signed = sign_raw_tx(&key, &r["data"]["rawTx"]);
    state.set_fault(
        "submit",
        FaultConfig {
            drop_after_work: 1.0,
            ..Default::default()
        },
    );
    let (s, r) = c
        .post(
            "/mx/v2.0/transaction/send/signed-tx",
            json!({"signedTx": signed.clone()}),
        )
        .await;
    assert_eq!((s, r["code"].as_str()), (502, Some("BAD_GATEWAY")), "{r}");
    state.set_fault("submit", FaultConfig::default());
    redeemed_then_already_known(&c, &info, &tx_id, signed).await;

    // Drop after work on execute: the txId is consumed although the client saw a 502.
    state.set_fault(
        "execute",
        FaultConfig {
            drop_after_work: 1.0,
            ..Default::default()
        },
    );
    let body = json!({"txId": uuid(), "from": info.dev.address, "inputs": {"_amount": "1"}});
    let (s, _) = c.post("/tx/v2.0/transactions/redeem", body.clone()).await;
    assert_eq!(s, 502);
    state.set_fault("execute", FaultConfig::default());
    let (s, r) = c.post("/tx/v2.0/transactions/redeem", body).await;
    assert_eq!((s, r["code"].as_str()), (409, Some("TXID_REUSED")), "{r}");
    scoped_faults_meet_their_scope_only(&sb, &c, &key).await;
    finish(sb).await;
}

/// Faults and a hostile mode set for one scope meet the requests made with that scope's
/// token and no other (`c` has the sandbox's own token): the way tests that share one
/// sandbox each get faults of their own. The request log names the scope.
async fn scoped_faults_meet_their_scope_only(
    sb: &bridgectl_sandbox::Sandbox,
    c: &Client,
    key: &PrivateKeySigner,
) {
    let (info, state) = (sb.info().clone(), sb.state().clone());
    let token = state.issue_scoped_token("a").expect("token");
    let a = Client {
        token: token.expose_secret().to_owned(),
        ..Client::new(sb)
    };
    let redeem = |amount: &str| json!({"txId": uuid(), "from": info.dev.address, "inputs": {"_amount": amount}});
    let path = "/tx/v2.0/transactions/redeem";
    state.set_scoped_fault(
        "a",
        "execute",
        FaultConfig {
            error_rate: 1.0,
            ..Default::default()
        },
    );
    let (s, r) = a.post(path, redeem("1")).await;
    assert_eq!(
        (s, r["code"].as_str()),
        (503, Some("SERVICE_UNAVAILABLE")),
        "{r}"
    );
    let (s, r) = c.post(path, redeem("1")).await;
    assert_eq!(s, 200, "another scope's fault met the sandbox's token: {r}");
    state.set_scoped_fault("a", "execute", FaultConfig::default());

    // A dropped answer after the work, decided in the task the submission runs in.
    let (s, r) = a.post(path, redeem("2")).await;
    assert_eq!(s, 200, "{r}");
    state.set_scoped_fault(
        "a",
        "submit",
        FaultConfig {
            drop_after_work: 1.0,
            ..Default::default()
        },
    );
    let signed = sign_raw_tx(key, &r["data"]["rawTx"]);
    let submit = "/mx/v2.0/transaction/send/signed-tx";
    let (s, r) = a.post(submit, json!({"signedTx": signed})).await;
    assert_eq!((s, r["code"].as_str()), (502, Some("BAD_GATEWAY")), "{r}");
    let (s, r) = c.post(path, redeem("3")).await;
    assert_eq!(s, 200, "{r}");
    let signed = sign_raw_tx(key, &r["data"]["rawTx"]);
    let (s, r) = c.post(submit, json!({"signedTx": signed})).await;
    assert_eq!(s, 200, "another scope's drop met the sandbox's token: {r}");
    state.set_scoped_fault("a", "submit", FaultConfig::default());

    // Hostile for the scope: its rawTx is tampered with, the sandbox token's is not.
    state.set_scoped_hostile("a", Some(bridgectl_sandbox::Hostile::OtherAmount));
    let word = |v: &Value| {
        let data = v["data"]["rawTx"]["data"]
            .as_str()
            .expect("data")
            .to_owned();
        data[data.len() - 64..].to_owned()
    };
    let one = format!("{:064x}", 1);
    let (s, r) = a.post(path, redeem("1")).await;
    assert_eq!(s, 200, "{r}");
    assert_ne!(
        word(&r),
        one,
        "the scope's rawTx was not tampered with: {r}"
    );
    let (s, r) = c.post(path, redeem("1")).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(
        word(&r),
        one,
        "another scope's hostile mode met the sandbox's token"
    );
    state.set_scoped_hostile("a", None);
    let (_, r) = a.post(path, redeem("1")).await;
    assert_eq!(
        word(&r),
        one,
        "hostile mode still on after it was turned off"
    );

    // The request log names the scope of every request made with its token, only those.
    let mine = state.request_log_of("a");
    assert_eq!(mine.len(), 5, "{mine:#?}");
    assert!(
        mine.iter()
            .all(|l| l.contains("/tx/v2.0/transactions/redeem") || l.contains("/signed-tx"))
    );
    let all = state.request_log_with_headers();
    assert_eq!(all.iter().filter(|r| r.scope.is_some()).count(), 5);
}

#[tokio::test]
async fn a_submit_whose_client_disconnects_mid_request_is_finished_and_linked() {
    let sb = start().await;
    let c = Client::new(&sb);
    let info = sb.info().clone();
    let key = dev_key(&sb);
    let state = sb.state().clone();
    let tx_id = uuid();
    let body = json!({"txId": tx_id, "from": info.dev.address, "inputs": {"_amount": "1000000"}});
    let (s, r) = c.post("/tx/v2.0/transactions/redeem", body).await;
    assert_eq!(s, 200, "{r}");
    let signed = sign_raw_tx(&key, &r["data"]["rawTx"]);
    // The node takes the transaction, then the submission pauses before linking it to
    // its txId; the client gives up meanwhile and closes its connection.
    state.set_fault(
        "submit",
        FaultConfig {
            latency_mid_work_ms: 1_500,
            ..Default::default()
        },
    );
    let cut = c
        .http
        .post(format!("{}/mx/v2.0/transaction/send/signed-tx", c.base))
        .bearer_auth(&c.token)
        .json(&json!({"signedTx": signed.clone()}))
        .timeout(Duration::from_millis(500))
        .send()
        .await;
    assert!(cut.is_err(), "the client was meant to give up: {cut:?}");
    state.set_fault("submit", FaultConfig::default());
    // No resend first: the submission finished on its own, so the txId resolves.
    redeemed_then_already_known(&c, &info, &tx_id, signed).await;
    finish(sb).await;
}

/// The redemption of `tx_id` completes (looked up by txId), and sending its `signed`
/// bytes again is recognised as already known.
async fn redeemed_then_already_known(
    c: &Client,
    info: &bridgectl_sandbox::SandboxInfo,
    tx_id: &str,
    signed: String,
) {
    let side = json!({"sideEnvironmentId": info.side.environment_id});
    eventually(20, "the redemption by txId", || async {
        let (_, r) = c
            .get(
                &format!("/mx/v2.0/transactions/redeems/{tx_id}"),
                Some(side.clone()),
            )
            .await;
        (r["data"]["status"] == "completed").then_some(())
    })
    .await;
    // Retrying the same bytes is safe: recognised as already known.
    let (s, r) = c
        .post(
            "/mx/v2.0/transaction/send/signed-tx",
            json!({"signedTx": signed}),
        )
        .await;
    assert_eq!((s, r["code"].as_str()), (409, Some("ALREADY_KNOWN")), "{r}");
}

#[tokio::test]
async fn dropped_sandbox_leaves_no_anvil() {
    let sb = start().await;
    let pids = sb.info().anvil_pids.clone();
    drop(sb);
    eventually(5, "anvils gone after drop", || async {
        pids.iter().all(|p| process_is_gone(*p)).then_some(())
    })
    .await;
}

/// Not run alone: the body of the child process of `killed_sandbox_leaves_no_anvil`.
#[tokio::test]
#[ignore = "helper process for killed_sandbox_leaves_no_anvil"]
async fn child_sandbox_process() {
    if std::env::var_os("BRIDGECTL_SANDBOX_CHILD").is_none() {
        return;
    }
    let sb = start().await;
    let pids = &sb.info().anvil_pids;
    let mut out = std::io::stdout().lock();
    writeln!(out, "PIDS {} {}", pids[0], pids[1]).expect("stdout");
    out.flush().expect("flush");
    drop(out);
    tokio::time::sleep(Duration::from_secs(120)).await;
}

#[test]
fn killed_sandbox_leaves_no_anvil() {
    let exe = std::env::current_exe().expect("test exe");
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "flows::child_sandbox_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BRIDGECTL_SANDBOX_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("stdout");
    let mut pids = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.expect("line");
        // libtest prints "test <name> ... " without a newline first.
        if let Some(rest) = line.split_once("PIDS ").map(|(_, r)| r) {
            pids = rest
                .split_whitespace()
                .map(|p| p.parse::<u32>().expect("pid"))
                .collect();
            break;
        }
    }
    assert_eq!(pids.len(), 2, "child did not report its anvils");
    assert!(
        pids.iter().all(|p| !process_is_gone(*p)),
        "anvils should run before the kill"
    );
    child.kill().expect("SIGKILL the sandbox");
    child.wait().expect("reap");
    let end = Instant::now() + Duration::from_secs(5);
    while !pids.iter().all(|p| process_is_gone(*p)) {
        assert!(
            Instant::now() < end,
            "anvil {pids:?} survived the SIGKILL of its sandbox"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
