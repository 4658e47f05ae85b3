//! Webhook deliveries over sockets: a test listener checks the signature of every POST.
//!
//! The signature is checked against an HMAC-SHA256 written out here from RFC 2104 over
//! `sha2` (not the `hmac` crate, not `bridgectl-web3`), which the known answers computed
//! by OpenSSL (`scripts/x-signature-fixtures.sh`) pin first.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use bridgectl_sandbox::webhooks::signature;
use serde_json::{Value, json};

use crate::util::{Client, eventually, finish, start};

/// HMAC-SHA256 (RFC 2104) written out over `sha2`, as lowercase hex: the reference the
/// deliveries are checked against, independent of the code that signs them.
fn hmac_sha256_hex(key: &[u8], body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut block = [0u8; 64];
    if key.len() > block.len() {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| block.iter().map(|k| k ^ b).collect::<Vec<u8>>();
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(body)
        .finalize();
    hex::encode(
        Sha256::new()
            .chain_update(pad(0x5c))
            .chain_update(inner)
            .finalize(),
    )
}

/// The known answers: `(name, key, body, x-signature)`; a `fail_` header must not verify.
fn known_answers() -> Vec<(String, Vec<u8>, Vec<u8>, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../webhook/tests/fixtures/x-signature");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            name.strip_suffix(".key").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let read = |ext: &str| std::fs::read(dir.join(format!("{n}.{ext}"))).expect(ext);
            let header = String::from_utf8(read("x-signature")).expect("utf-8");
            (
                n.clone(),
                read("key"),
                read("body"),
                header.trim().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_sandbox_signs_exactly_the_known_answers() {
    let cases = known_answers();
    assert!(cases.len() >= 6, "{} cases", cases.len());
    for (name, key, body, header) in cases {
        let want = !name.starts_with("fail_");
        assert_eq!(
            hmac_sha256_hex(&key, &body) == header,
            want,
            "{name}: reference"
        );
        let key = String::from_utf8(key).expect("a signingKey is text");
        assert_eq!(
            signature(&key, &body) == header,
            want,
            "{name}: the sandbox"
        );
    }
}

#[derive(Clone, Default)]
struct Listener {
    got: Arc<Mutex<Vec<(String, Bytes)>>>,
    status: Arc<AtomicU16>,
}

impl Listener {
    fn count(&self) -> usize {
        self.got.lock().expect("lock").len()
    }
}

async fn receive(State(l): State<Listener>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let sig = headers
        .get("x-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    l.got.lock().expect("lock").push((sig, body));
    StatusCode::from_u16(l.status.load(Ordering::SeqCst)).unwrap_or(StatusCode::OK)
}

async fn listen(status: u16) -> (Listener, String) {
    let l = Listener::default();
    l.status.store(status, Ordering::SeqCst);
    let app = axum::Router::new()
        .route("/hook", post(receive))
        .with_state(l.clone());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", tcp.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(tcp, app).await });
    (l, url)
}

#[tokio::test]
async fn block_period_deliveries_are_signed_and_stop_when_told() {
    let sb = start().await;
    let c = Client::new(&sb);
    let web3 = sb.info().web3_url.trim_start_matches(&c.base).to_owned();
    let hooks = format!("{web3}/v1/ethereum/sepolia/webhooks");

    // A healthy listener gets signed deliveries with increasing sequence numbers.
    let (ok_listener, ok_url) = listen(200).await;
    let (s, created) = c
        .post(&hooks, json!({"description": "blocks", "eventType": "BLOCK_PERIOD", "notification": {"webhookUrl": ok_url}, "condition": {"period": 1}}))
        .await;
    assert_eq!(s, 200, "{created}");
    assert_eq!(created["protocol"], "ETHEREUM");
    assert_eq!(created["network"], "SEPOLIA");
    assert_eq!(created["isActive"], true);
    let id = created["subscriptionId"].as_str().expect("id").to_owned();
    assert!(id.parse::<u64>().is_ok());
    let key = created["signingKey"]
        .as_str()
        .expect("signingKey")
        .to_owned();
    eventually(10, "three deliveries", || async {
        (ok_listener.count() >= 3).then_some(())
    })
    .await;
    let got = ok_listener.got.lock().expect("lock").clone();
    let mut last = 0;
    for (sig, body) in &got {
        assert_eq!(
            sig,
            &hmac_sha256_hex(key.as_bytes(), body),
            "x-signature must be HMAC-SHA256 of the raw body"
        );
        let v: Value = serde_json::from_slice(body).expect("json body");
        assert_eq!(v["subscriptionId"], id.as_str());
        assert_eq!(v["eventType"], "BLOCK_PERIOD");
        assert_eq!(v["subscriptionType"], "WEBHOOK");
        assert!(v["event"]["message"]["parent_hash"].is_string(), "{v}");
        let seq = v["sequenceNumber"].as_u64().expect("seq");
        assert_eq!(seq, last + 1);
        last = seq;
    }
    assert_ne!(hmac_sha256_hex(b"wrong key", &got[0].1), got[0].0);

    // isActive=false stops deliveries.
    let (s, r) = c
        .send(
            reqwest::Method::PATCH,
            &format!("{hooks}/{id}"),
            Some(json!({"isActive": false})),
        )
        .await;
    assert_eq!((s, &r), (200, &json!({"result": true})));
    // No sleeping: the deliverer reports the blocks it has finished with. Past the block
    // it may have been delivering when the pause came, every block is read as paused;
    // three of them handled with nothing sent proves the pause.
    let num: u64 = id.parse().expect("numeric id");
    let handled = || {
        sb.state()
            .deliverer(num)
            .expect("a deliverer")
            .handled_block
    };
    let h0 = handled();
    eventually(10, "the block in hand when paused", || async {
        (handled() > h0).then_some(())
    })
    .await;
    let n = ok_listener.count();
    eventually(10, "three blocks handled while paused", || async {
        (handled() >= h0 + 4).then_some(())
    })
    .await;
    assert_eq!(
        ok_listener.count(),
        n,
        "deliveries continued after isActive=false"
    );
    let (_, list) = c.get(&format!("{hooks}?subscriptionId={id}"), None).await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["items"][0]["isActive"], false);

    // Reactivated, then deleted: deliveries resume, then stop for good.
    c.send(
        reqwest::Method::PATCH,
        &format!("{hooks}/{id}"),
        Some(json!({"isActive": true})),
    )
    .await;
    eventually(10, "resumed", || async {
        (ok_listener.count() > n).then_some(())
    })
    .await;
    let (s, r) = c
        .send(reqwest::Method::DELETE, &format!("{hooks}/{id}"), None)
        .await;
    assert_eq!((s, &r), (200, &json!({"result": true})));
    // Deleted: its deliverer ends, and with it every delivery it could make.
    eventually(10, "the deleted webhook's deliverer to end", || async {
        (!sb.state().deliverer(num).expect("a deliverer").running).then_some(())
    })
    .await;
    let n = ok_listener.count();
    let (s, r) = c.get(&format!("{hooks}/{id}"), None).await;
    assert_eq!((s, r["code"].as_str()), (404, Some("WEBHOOK_NOT_FOUND")));

    // A failing listener is retried (same sequence number), then removed without notice.
    let (bad, bad_url) = listen(500).await;
    let (_, created) = c
        .post(&hooks, json!({"eventType": "BLOCK_PERIOD", "notification": {"webhookUrl": bad_url}, "condition": {"period": 2}}))
        .await;
    let bad_id = created["subscriptionId"].as_str().expect("id").to_owned();
    eventually(10, "webhook removed", || async {
        let (_, list) = c
            .get(&format!("{hooks}?subscriptionId={bad_id}"), None)
            .await;
        (list["total"] == 0).then_some(())
    })
    .await;
    let tries = bad.got.lock().expect("lock").clone();
    assert_eq!(tries.len(), 3, "remove_after_failures = 3 attempts");
    assert!(
        tries.windows(2).all(|w| w[0].1 == w[1].1),
        "retries resend the same body"
    );
    let v: Value = serde_json::from_slice(&tries[0].1).expect("json");
    assert_eq!(v["sequenceNumber"], 1);
    assert_eq!(ok_listener.count(), n, "deliveries continued after delete");
    finish(sb).await;
}
