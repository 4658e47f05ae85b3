//! Signing through a JSON-RPC signing endpoint instead of a local key, on the sandbox:
//! anvil's unlocked development account as the endpoint signs a redeem that completes,
//! its signing-log entry signed by the same account and verifiable like any other. Then
//! a hostile endpoint that signs something else (other bytes, another chain id, another
//! sender, a pre-EIP-155 signature, a malformed answer, no answer, a log entry by another
//! key): each refused naming the cause, nothing logged, nothing submitted, and the nonce
//! still free for the honest signature that follows.

use std::sync::Arc;
use std::time::Duration;

use alloy_consensus::{SignableTransaction, TxLegacy};
use alloy_primitives::{Bytes, TxKind, U256};
use alloy_signer::SignerSync;
use bridgectl_flow::rpc::RpcSigner;
use bridgectl_flow::{ApproveFuture, Approver, Quiet, Review};
use bridgectl_sandbox::{Sandbox, SandboxConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common;

/// Says yes and hands the signing to `signer`.
struct External(RpcSigner);

impl Approver for External {
    type Signer = RpcSigner;

    fn approve<'a>(&'a mut self, _review: &'a Review<'_>) -> ApproveFuture<'a, RpcSigner> {
        Box::pin(async move { Ok(self.0.clone()) })
    }
}

/// What the hostile endpoint does instead of signing what it was asked.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    OtherBytes,
    OtherChainId,
    OtherSender,
    Pre155,
    Malformed,
    NoAnswer,
    EntryByAnotherKey,
}

/// The transaction an `eth_signTransaction` request asks for.
fn asked(req: &Value) -> TxLegacy {
    let q = |k: &str| {
        u128::from_str_radix(req[k].as_str().expect(k).trim_start_matches("0x"), 16).expect(k)
    };
    let data = req["data"].as_str().expect("data").trim_start_matches("0x");
    TxLegacy {
        chain_id: Some(q("chainId") as u64),
        nonce: q("nonce") as u64,
        gas_price: q("gasPrice"),
        gas_limit: q("gas") as u64,
        to: TxKind::Call(req["to"].as_str().expect("to").parse().expect("to")),
        value: U256::from(q("value")),
        input: Bytes::from(alloy_primitives::hex::decode(data).expect("data")),
    }
}

/// The answer of the endpoint to one JSON-RPC request, signing with `key`.
fn answer(mode: Hostile, key: &alloy_signer_local::PrivateKeySigner, request: &Value) -> Value {
    let stranger = alloy_signer_local::PrivateKeySigner::random();
    let result = match request["method"].as_str() {
        Some("eth_signTransaction") => {
            let mut tx = asked(&request["params"][0]);
            let mut by = key;
            match mode {
                Hostile::OtherBytes => tx.input = Bytes::from(vec![0xa9, 0x05, 0x9c, 0xbb]),
                Hostile::OtherChainId => tx.chain_id = tx.chain_id.map(|c| c + 1),
                Hostile::OtherSender => by = &stranger,
                Hostile::Pre155 => tx.chain_id = None,
                Hostile::Malformed => return json!({"jsonrpc": "2.0", "id": 1, "result": "0x1234"}),
                Hostile::NoAnswer | Hostile::EntryByAnotherKey => {}
            }
            let sig = by.sign_hash_sync(&tx.signature_hash()).expect("sign");
            json!(bridgectl_tx::signer::encode_signed(&tx, &sig))
        }
        Some("personal_sign") => {
            let hash = request["params"][0].as_str().expect("hash");
            let bytes = alloy_primitives::hex::decode(hash.trim_start_matches("0x")).expect("hex");
            let by = match mode {
                Hostile::EntryByAnotherKey => &stranger,
                _ => key,
            };
            json!(alloy_primitives::hex::encode_prefixed(
                by.sign_message_sync(&bytes).expect("sign").as_bytes()
            ))
        }
        other => panic!("unexpected method {other:?}"),
    };
    json!({"jsonrpc": "2.0", "id": 1, "result": result})
}

/// A JSON-RPC endpoint on 127.0.0.1 that answers as `mode` says; returns its URL.
async fn hostile_endpoint(mode: Hostile, key: alloy_signer_local::PrivateKeySigner) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            let key = key.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let body = loop {
                    let n = conn.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(at) = text.find("\r\n\r\n") {
                        let len = text[..at]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if buf.len() >= at + 4 + len {
                            break buf[at + 4..at + 4 + len].to_vec();
                        }
                    }
                };
                let request: Value = serde_json::from_slice(&body).expect("json");
                if matches!(mode, Hostile::NoAnswer) {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    return;
                }
                let out = answer(mode, &key, &request).to_string();
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{out}",
                    out.len()
                );
                let _ = conn.write_all(response.as_bytes()).await;
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_signer_signs_a_redeem_and_a_hostile_one_is_refused_every_way() {
    let sandbox = Sandbox::start(SandboxConfig::default())
        .await
        .expect("sandbox");
    let info = sandbox.info().clone();
    let dir = tempfile::tempdir().expect("tmp");
    // The keystore only names the account (its log's known keys); it never signs here.
    let keystore = common::dev_keystore(dir.path(), &info, "unused passphrase");
    let log = Arc::new(common::signing_log(&keystore));
    let (flows, _journal) = common::flows(&info, dir.path(), log.clone());
    let from = info.dev.address;
    let one = U256::from(10).pow(U256::from(info.side.decimals));
    let submissions = || {
        sandbox
            .state()
            .request_log()
            .iter()
            .filter(|l| l.starts_with("POST /mx/v2.0/transaction/send/signed-tx"))
            .count()
    };
    let key: alloy_signer_local::PrivateKeySigner = info
        .dev
        .private_key
        .expose_secret()
        .parse()
        .expect("dev key");

    for mode in [
        Hostile::OtherBytes,
        Hostile::OtherChainId,
        Hostile::OtherSender,
        Hostile::Pre155,
        Hostile::Malformed,
        Hostile::NoAnswer,
        Hostile::EntryByAnotherKey,
    ] {
        let url = hostile_endpoint(mode, key.clone()).await;
        let signer = RpcSigner::with_timeout(&url, from, Duration::from_secs(2)).expect("signer");
        let before = (submissions(), log.checkpoint().expect("head"));
        let e = flows
            .redeem(from, one, &mut External(signer), &mut Quiet)
            .await
            .expect_err(&format!("{mode:?} refused"));
        let text = bridgectl_flow::chain(&e);
        let cause = match mode {
            Hostile::OtherBytes => "signed something else than asked: data:",
            Hostile::OtherChainId => "signed something else than asked: chainId:",
            Hostile::OtherSender => "signed something else than asked: from (recovered signer)",
            Hostile::Pre155 => "a pre-EIP-155 signature",
            Hostile::Malformed => "what it returned is not a signed transaction",
            Hostile::NoAnswer => "eth_signTransaction",
            Hostile::EntryByAnotherKey => "signing-log entry's signature does not recover",
        };
        assert!(text.contains(cause), "{mode:?}: {text}");
        assert_eq!(
            (submissions(), log.checkpoint().expect("head")),
            before,
            "{mode:?}: something was submitted or logged"
        );
    }

    // The honest endpoint: anvil's unlocked development account.
    let honest = RpcSigner::new(&info.side.rpc_url, from).expect("signer");
    let out = flows
        .redeem(from, one, &mut External(honest), &mut Quiet)
        .await
        .expect("redeem through the external signer");
    assert_eq!(
        out.redemption.as_ref().map(|r| r.status.as_str()),
        Some("completed")
    );
    assert_eq!(out.submitted.from, from);
    assert_eq!(submissions(), 1, "only the honest signature was sent");
    // Its log entry is the account's own, and the log holds.
    let head = log.verify(None).expect("intact");
    assert_eq!(head.count, 1);
    sandbox.shutdown().await.expect("shutdown");
}
