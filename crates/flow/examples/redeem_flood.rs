//! The baseline of `bench/batch.sh`: the same number of redeem transactions as a batch,
//! but pre-signed (no action, no verifier, no journal, no unlock), posted straight to the
//! platform's submit operation from every sender at once (each sender's in nonce
//! order, as a node needs them), then waited on until every redemption completed. What
//! the sandbox can do at best; a batch's rate is measured against it.
//!
//! Usage: `redeem_flood SANDBOX_JSON ITEMS KEYS AMOUNT_BASE_UNITS` (SANDBOX_JSON is what
//! `bridgectl --json sandbox` printed). Prints one JSON line: items, seconds, items/s,
//! p50/p99 latency from a transaction's submission to its completed redemption.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program owns its terminal
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use alloy_consensus::{SignableTransaction, transaction::RlpEcdsaEncodableTx};
use alloy_primitives::{Address, B256, U256};
use alloy_signer::SignerSync;
use bridgectl_flow::PrivateKeySigner;
use bridgectl_flow::client::{AccessToken, ClientOptions, PlatformClient};
use bridgectl_flow::rpc::NodeClient;
use bridgectl_tx::RawTx;
use serde_json::{Value, json};

type Failure = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let [_, info, items, keys, amount] = args.as_slice() else {
        return Err("usage: redeem_flood SANDBOX_JSON ITEMS KEYS AMOUNT_BASE_UNITS".into());
    };
    let info: Value = serde_json::from_str(&std::fs::read_to_string(info)?)?;
    let (items, keys): (usize, usize) = (items.parse()?, keys.parse()?);
    let amount = U256::from_str_radix(amount, 10)?;
    let text = |v: &Value| v.as_str().map(str::to_owned).ok_or("sandbox info field");
    let base = text(&info["baseUrl"])?;
    let token = text(&info["token"])?;
    let side = &info["side"];
    let st: Address = text(&side["tokenAddress"])?.parse()?;
    let chain_id = side["chainId"].as_u64().ok_or("chainId")?;
    let environment = text(&side["environmentId"])?;
    let node = NodeClient::new(&text(&side["rpcUrl"])?)?;
    let client = PlatformClient::new(
        &base,
        AccessToken::new(token.clone()),
        ClientOptions::default(),
    )?;

    // Senders, funded through the sandbox with exactly what their items redeem.
    let http = reqwest::Client::new();
    let signers: Vec<PrivateKeySigner> = (0..keys).map(|_| PrivateKeySigner::random()).collect();
    let per_key = items.div_ceil(keys);
    for s in &signers {
        let st_total = amount * U256::from(per_key);
        let answer = http
            .post(format!("{base}/sandbox/v1/fund/{}", s.address()))
            .bearer_auth(&token)
            .json(&json!({"st": st_total.to_string()}))
            .send()
            .await?;
        if !answer.status().is_success() {
            return Err(format!("fund: {}", answer.text().await?).into());
        }
    }

    // Pre-signed: every sender's items with consecutive nonces.
    let gas_price = node.gas_price().await?;
    let mut inputs = BTreeMap::new();
    inputs.insert("_amount".to_owned(), amount.to_string());
    let data = bridgectl_tx::calldata::encode("redeem", &inputs)?;
    let mut lanes: Vec<Vec<(Vec<u8>, B256)>> = vec![Vec::new(); keys];
    for k in 0..items {
        let signer = &signers[k % keys];
        let lane = &mut lanes[k % keys];
        let tx = RawTx {
            from: signer.address(),
            to: st,
            data: data.clone().into(),
            nonce: lane.len() as u64,
            gas_limit: 200_000,
            gas_price,
            chain_id,
            value: U256::ZERO,
        };
        let legacy = bridgectl_tx::local_signing::to_legacy(&tx);
        let sig = signer.sign_hash_sync(&legacy.signature_hash())?;
        let mut raw = Vec::new();
        legacy.rlp_encode_signed(&sig, &mut raw);
        let hash = alloy_primitives::keccak256(&raw);
        lane.push((raw, hash));
    }

    // The flood: all senders at once, each in nonce order; then every redemption awaited.
    let started = Instant::now();
    let sent: Vec<Vec<(B256, Instant)>> =
        futures_util::future::join_all(lanes.iter().map(|lane| {
            let client = &client;
            async move {
                let mut out = Vec::new();
                for (raw, hash) in lane {
                    let at = Instant::now();
                    client.submit_signed(raw).await?;
                    out.push((*hash, at));
                }
                Ok::<_, bridgectl_flow::Error>(out)
            }
        }))
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    let submitted_s = started.elapsed().as_secs_f64();
    let mut waiting: Vec<(B256, Instant)> = sent.into_iter().flatten().collect();
    let mut latencies = Vec::with_capacity(items);
    while !waiting.is_empty() {
        let mut still = Vec::new();
        let polls = futures_util::future::join_all(waiting.iter().map(|(hash, _)| {
            let (client, environment) = (&client, &environment);
            async move { client.redemption(&hash.to_string(), environment).await }
        }))
        .await;
        for ((hash, at), answer) in waiting.into_iter().zip(polls) {
            match answer {
                Ok(r) if r.is_terminal() => {
                    if !r.is_success() {
                        return Err(format!("redemption of {hash} ended {}", r.status).into());
                    }
                    latencies.push(at.elapsed());
                }
                _ => still.push((hash, at)),
            }
        }
        waiting = still;
        if started.elapsed() > Duration::from_secs(600) {
            return Err("redemptions not completed within 600 s".into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "{}",
        json!({
            "kind": "flood",
            "items": items,
            "keys": keys,
            "seconds": seconds,
            "submittedSeconds": submitted_s,
            "itemsPerSecond": items as f64 / seconds,
            "p50Ms": pct(0.5).as_millis() as u64,
            "p99Ms": pct(0.99).as_millis() as u64,
        })
    );
    Ok(())
}
