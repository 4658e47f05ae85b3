//! Every route in-process through `app(state).oneshot(..)`: auth, envelopes, validation.

use axum::body::Body;
use axum::http::{Method, Request};
use bridgectl_sandbox::{AppState, app};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::util::{finish, start};

struct Call<'a> {
    state: &'a AppState,
    token: Option<String>,
}

impl Call<'_> {
    async fn raw(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: &str,
    ) -> (u16, Value) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let resp = app(self.state.clone())
            .oneshot(req.body(Body::from(body.to_owned())).expect("request"))
            .await
            .expect("infallible");
        let status = resp.status().as_u16();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .expect("body");
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    async fn json(&self, method: Method, path: &str, body: Value) -> (u16, Value) {
        self.raw(method, path, Some("application/json"), &body.to_string())
            .await
    }

    async fn go(&self, method: Method, path: &str) -> (u16, Value) {
        self.raw(method, path, None, "").await
    }
}

/// Asserts an error envelope with `status` and `code`, and a message mentioning `needle`.
#[track_caller]
fn err(got: (u16, Value), status: u16, code: &str, needle: &str) {
    let (s, b) = got;
    assert_eq!(s, status, "{b}");
    assert_eq!(b["result"], false, "{b}");
    assert_eq!(b["status"], status, "{b}");
    assert_eq!(b["code"], code, "{b}");
    let m = b["message"].as_str().expect("message");
    assert!(
        m.contains(needle),
        "message {m:?} should mention {needle:?}"
    );
}

/// Asserts a success envelope and returns its data.
#[track_caller]
fn okd(got: (u16, Value)) -> Value {
    let (s, b) = got;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["result"], true, "{b}");
    assert_eq!(b["code"], "OK", "{b}");
    assert_eq!(b["status"], 200, "{b}");
    b["data"].clone()
}

#[tokio::test]
async fn every_route_checks_auth_envelopes_and_input() {
    let sb = start().await;
    let state = sb.state().clone();
    let info = sb.info().clone();
    let token = info.token.expose_secret().to_owned();
    let anon = Call {
        state: &state,
        token: None,
    };
    let wrong = Call {
        state: &state,
        token: Some("nope".into()),
    };
    let c = Call {
        state: &state,
        token: Some(token),
    };
    let dev = info.dev.address;
    let managed = info.managed_accounts[0];
    let (main_env, side_env) = (
        info.main.environment_id.clone(),
        info.side.environment_id.clone(),
    );

    // Auth on every protected route, including unknown paths.
    let protected: &[(Method, String)] = &[
        (Method::POST, format!("/mx/v2.0/swap/{dev}")),
        (Method::POST, format!("/mx/v2.0/wallets/{managed}/sign")),
        (Method::GET, format!("/mx/v2.0/wallets/{dev}/nonce")),
        (Method::POST, "/mx/v2.0/transaction/send/signed-tx".into()),
        (Method::POST, "/tx/v2.0/transactions/redeem".into()),
        (
            Method::GET,
            format!("/mx/v2.0/transactions/redeems/{}", uuid::Uuid::new_v4()),
        ),
        (
            Method::GET,
            "/mx/v2.0/token/main-tokens/MT/transfer/raw-tx".into(),
        ),
        (Method::GET, format!("/tx/v2.0/wallets/{dev}/MT/balance")),
        (Method::GET, format!("/tx/v2.0/wallets/{dev}/MT/ST/balance")),
        (Method::POST, format!("/sandbox/v1/fee-delegation/{dev}")),
        (Method::GET, "/sandbox/v1/managed-accounts".into()),
        (Method::GET, "/sandbox/v1/swaps".into()),
        (Method::GET, "/web3/v1/ethereum/mainnet/webhooks".into()),
        (Method::PATCH, "/web3/v1/ethereum/mainnet/webhooks/1".into()),
        (Method::GET, "/nowhere".into()),
    ];
    for (m, p) in protected {
        err(
            anon.go(m.clone(), p).await,
            401,
            "UNAUTHORIZED",
            "authorization",
        );
        err(
            wrong.go(m.clone(), p).await,
            401,
            "UNAUTHORIZED",
            "unknown or expired",
        );
    }
    err(
        c.go(Method::GET, "/nowhere").await,
        404,
        "NOT_FOUND",
        "/nowhere",
    );
    err(
        c.go(Method::DELETE, "/sandbox/v1/swaps").await,
        405,
        "METHOD_NOT_ALLOWED",
        "DELETE",
    );

    // Access tokens.
    let d = okd(
        anon.json(Method::POST, "/svc/v2/auth-tokens", json!({"accessKey": info.access_key, "secretKey": "sandbox-secret-key", "expiresIn": 60}))
            .await,
    );
    let issued = d["authToken"]["token"].as_str().expect("token").to_owned();
    assert!(
        d["authToken"]["expiryAt"]
            .as_str()
            .is_some_and(|t| t.contains('T'))
    );
    let via_issued = Call {
        state: &state,
        token: Some(issued),
    };
    okd(via_issued.go(Method::GET, "/sandbox/v1/swaps").await);
    err(
        anon.json(
            Method::POST,
            "/svc/v2/auth-tokens",
            json!({"accessKey": info.access_key, "secretKey": "bad"}),
        )
        .await,
        401,
        "INVALID_CREDENTIALS",
        "secretKey",
    );
    err(
        anon.json(
            Method::POST,
            "/svc/v2/auth-tokens",
            json!({"accessKey": "a", "secretKey": "b", "expiresIn": 99_999_999}),
        )
        .await,
        400,
        "INVALID_FIELD",
        "expiresIn",
    );
    err(
        anon.json(
            Method::POST,
            "/svc/v2/auth-tokens",
            json!({"accessKey": "a"}),
        )
        .await,
        400,
        "INVALID_FIELD",
        "secretKey",
    );
    let req = Request::builder()
        .method(Method::POST)
        .uri("/web3/v1/auth-token")
        .header("x-node-id", "n")
        .header("x-key-id", info.access_key.as_str())
        .header("x-key-secret", "sandbox-secret-key")
        .body(Body::empty())
        .expect("req");
    let resp = app(state.clone()).oneshot(req).await.expect("infallible");
    assert_eq!(resp.status(), 200);
    err(
        anon.go(Method::POST, "/web3/v1/auth-token").await,
        401,
        "INVALID_CREDENTIALS",
        "x-key-id",
    );

    // Swap address.
    let swap_body = json!({"mainEnvironmentId": main_env, "sideEnvironmentId": side_env, "mainTokenSymbol": "MT", "sideTokenSymbol": "ST"});
    let d = okd(c
        .json(
            Method::POST,
            &format!("/mx/v2.0/swap/{dev}"),
            swap_body.clone(),
        )
        .await);
    assert!(d["swapAddress"].as_str().is_some_and(|a| a.len() == 42));
    err(
        c.json(Method::POST, "/mx/v2.0/swap/0x12", swap_body.clone())
            .await,
        400,
        "INVALID_ADDRESS",
        "userAddress",
    );
    let mut b = swap_body.clone();
    b["sideEnvironmentId"] = json!("elsewhere");
    err(
        c.json(Method::POST, &format!("/mx/v2.0/swap/{dev}"), b)
            .await,
        404,
        "ENVIRONMENT_NOT_FOUND",
        "sideEnvironmentId",
    );
    let mut b = swap_body.clone();
    b["mainTokenSymbol"] = json!("XYZ");
    err(
        c.json(Method::POST, &format!("/mx/v2.0/swap/{dev}"), b)
            .await,
        404,
        "TOKEN_NOT_FOUND",
        "mainTokenSymbol",
    );
    err(
        c.json(Method::POST, &format!("/mx/v2.0/swap/{dev}"), json!({}))
            .await,
        400,
        "INVALID_FIELD",
        "mainEnvironmentId",
    );
    err(
        c.raw(
            Method::POST,
            &format!("/mx/v2.0/swap/{dev}"),
            Some("application/json"),
            "{nope",
        )
        .await,
        400,
        "INVALID_JSON",
        "not valid JSON",
    );
    err(
        c.raw(
            Method::POST,
            &format!("/mx/v2.0/swap/{dev}"),
            None,
            &swap_body.to_string(),
        )
        .await,
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "content-type",
    );
    err(
        c.go(Method::POST, &format!("/mx/v2.0/swap/{dev}")).await,
        400,
        "INVALID_JSON",
        "missing",
    );

    // Managed signing.
    let raw = json!({"from": managed, "to": info.side.token_address, "data": "0x18160ddd", "nonce": "0x0", "gasLimit": "0x10000", "gasPrice": "0x77359400", "chainId": info.side.chain_id});
    let d = okd(c
        .json(
            Method::POST,
            &format!("/mx/v2.0/wallets/{managed}/sign"),
            json!({"rawTx": raw}),
        )
        .await);
    assert!(d["signedTx"].as_str().is_some_and(|s| s.starts_with("0x")));
    err(
        c.json(
            Method::POST,
            &format!("/mx/v2.0/wallets/{dev}/sign"),
            json!({"rawTx": raw}),
        )
        .await,
        404,
        "ACCOUNT_NOT_MANAGED",
        "managed",
    );
    let mut r = raw.clone();
    r["nonce"] = json!("12");
    err(
        c.json(
            Method::POST,
            &format!("/mx/v2.0/wallets/{managed}/sign"),
            json!({"rawTx": r}),
        )
        .await,
        400,
        "INVALID_RAW_TX",
        "rawTx.nonce",
    );
    let mut r = raw.clone();
    r["chainId"] = json!(1);
    err(
        c.json(
            Method::POST,
            &format!("/mx/v2.0/wallets/{managed}/sign"),
            json!({"rawTx": r}),
        )
        .await,
        400,
        "WRONG_CHAIN",
        "rawTx.chainId",
    );
    let mut r = raw.clone();
    r["from"] = json!(dev);
    err(
        c.json(
            Method::POST,
            &format!("/mx/v2.0/wallets/{managed}/sign"),
            json!({"rawTx": r}),
        )
        .await,
        400,
        "INVALID_RAW_TX",
        "rawTx.from",
    );

    // Submit.
    let submit = "/mx/v2.0/transaction/send/signed-tx";
    err(
        c.json(Method::POST, submit, json!({"signedTx": "zz"}))
            .await,
        400,
        "INVALID_SIGNED_TX",
        "signedTx",
    );
    err(
        c.json(Method::POST, submit, json!({"signedTx": "0xdeadbeef"}))
            .await,
        400,
        "INVALID_SIGNED_TX",
        "signedTx",
    );
    let mut r = raw.clone();
    r["chainId"] = json!(info.main.chain_id);
    let d = okd(c
        .json(
            Method::POST,
            &format!("/mx/v2.0/wallets/{managed}/sign"),
            json!({"rawTx": r}),
        )
        .await);
    let signed = d["signedTx"].as_str().expect("signed").to_owned();
    let d = okd(c
        .json(Method::POST, submit, json!({"signedTx": signed}))
        .await);
    let first = d["txHash"]["txHash"].as_str().expect("hash").to_owned();
    let rpc = reqwest::Client::new();
    crate::util::eventually(10, "first tx mined", || async {
        let r: Value = rpc
            .post(&info.main.rpc_url)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "eth_getTransactionReceipt", "params": [first]}))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (!r["result"].is_null()).then_some(())
    })
    .await;
    // Nonce 0 is spent now: the same nonce with other bytes is "nonce too low".
    let mut r = raw.clone();
    r["chainId"] = json!(info.main.chain_id);
    r["gasPrice"] = json!("0x77359000");
    let d = okd(c
        .json(
            Method::POST,
            &format!("/mx/v2.0/wallets/{managed}/sign"),
            json!({"rawTx": r}),
        )
        .await);
    let again = d["signedTx"].as_str().expect("signed").to_owned();
    err(
        c.json(Method::POST, submit, json!({"signedTx": again}))
            .await,
        400,
        "NONCE_TOO_LOW",
        "nonce too low",
    );
    // Wrong chain: signed for chain id 1.
    let mut r = raw.clone();
    r["chainId"] = json!(1);
    let key = alloy_signer_local::PrivateKeySigner::from_slice(&[9u8; 32]).expect("key");
    let tx = alloy_consensus::TxLegacy {
        chain_id: Some(1),
        nonce: 0,
        gas_price: 1,
        gas_limit: 21_000,
        to: alloy_primitives::TxKind::Call(dev),
        value: alloy_primitives::U256::ZERO,
        input: Default::default(),
    };
    use alloy_consensus::SignableTransaction;
    use alloy_eips::eip2718::Encodable2718;
    use alloy_signer::SignerSync;
    let sig = key.sign_hash_sync(&tx.signature_hash()).expect("sign");
    let foreign = format!(
        "0x{}",
        hex::encode(alloy_consensus::TxEnvelope::Legacy(tx.into_signed(sig)).encoded_2718())
    );
    err(
        c.json(Method::POST, submit, json!({"signedTx": foreign}))
            .await,
        400,
        "WRONG_CHAIN",
        "chain id 1",
    );

    // Execute.
    let exec = |a: &str| format!("/tx/v2.0/transactions/{a}");
    let id = || uuid::Uuid::new_v4().to_string();
    err(
        c.json(
            Method::POST,
            &exec("nope"),
            json!({"txId": id(), "from": dev, "inputs": {}}),
        )
        .await,
        404,
        "ACTION_NOT_FOUND",
        "redeem",
    );
    err(
        c.json(
            Method::POST,
            &exec("redeem"),
            json!({"txId": "1", "from": dev, "inputs": {"_amount": "1"}}),
        )
        .await,
        400,
        "INVALID_TX_ID",
        "UUID v4",
    );
    err(
        c.json(Method::POST, &exec("redeem"), json!({"txId": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "from": dev, "inputs": {"_amount": "1"}})).await,
        400,
        "INVALID_TX_ID",
        "UUID v4",
    );
    err(
        c.json(
            Method::POST,
            &exec("redeem"),
            json!({"txId": id(), "from": dev, "inputs": {}}),
        )
        .await,
        400,
        "INVALID_INPUT",
        "inputs._amount: missing",
    );
    err(
        c.json(
            Method::POST,
            &exec("redeem"),
            json!({"txId": id(), "from": dev, "inputs": {"_amount": "1", "x": "2"}}),
        )
        .await,
        400,
        "INVALID_INPUT",
        "inputs.x",
    );
    err(
        c.json(
            Method::POST,
            &exec("redeem"),
            json!({"txId": id(), "from": dev, "inputs": {"_amount": "1.5"}}),
        )
        .await,
        400,
        "INVALID_INPUT",
        "decimal integer",
    );
    err(
        c.json(
            Method::POST,
            &exec("redeem"),
            json!({"txId": id(), "from": dev, "inputs": {"_amount": 1}}),
        )
        .await,
        400,
        "INVALID_INPUT",
        "expected a string",
    );
    err(
        c.json(
            Method::POST,
            &exec("transfer"),
            json!({"txId": id(), "from": dev, "inputs": {"_to": "0x1", "_value": "1"}}),
        )
        .await,
        400,
        "INVALID_INPUT",
        "inputs._to",
    );
    err(
        c.json(
            Method::POST,
            &exec("redeem"),
            json!({"txId": id(), "from": "me", "inputs": {"_amount": "1"}}),
        )
        .await,
        400,
        "INVALID_ADDRESS",
        "from",
    );
    err(
        c.json(
            Method::POST,
            &exec("redeem"),
            json!({"txId": id(), "from": dev, "inputs": {"_amount": "999999999999999"}}),
        )
        .await,
        400,
        "EXECUTION_REVERTED",
        "balance too low",
    );
    let d = okd(c
        .json(
            Method::POST,
            &exec("balanceOf"),
            json!({"txId": id(), "from": dev, "inputs": {"_owner": dev.to_string()}}),
        )
        .await);
    assert_eq!(d["value"], "50000000");
    let d = okd(c
        .json(
            Method::POST,
            &exec("redeem"),
            json!({"txId": id(), "from": dev, "inputs": {"_amount": "1"}}),
        )
        .await);
    let raw = &d["rawTx"];
    for k in ["nonce", "gasLimit", "gasPrice"] {
        assert!(
            raw[k].as_str().is_some_and(|v| v.starts_with("0x")),
            "{k}: {raw}"
        );
    }
    assert_eq!(raw["chainId"], info.side.chain_id);
    assert_eq!(
        d["from"].as_str().map(str::to_lowercase),
        Some(dev.to_string().to_lowercase())
    );

    // Redemption result.
    let red = |x: &str| format!("/mx/v2.0/transactions/redeems/{x}");
    err(
        c.go(Method::GET, &red(&id())).await,
        400,
        "INVALID_JSON",
        "missing",
    );
    err(
        c.json(Method::GET, &red(&id()), json!({"sideEnvironmentId": "x"}))
            .await,
        404,
        "ENVIRONMENT_NOT_FOUND",
        "sideEnvironmentId",
    );
    err(
        c.json(
            Method::GET,
            &red("abc"),
            json!({"sideEnvironmentId": side_env}),
        )
        .await,
        400,
        "INVALID_FIELD",
        "txId (UUID)",
    );
    err(
        c.json(
            Method::GET,
            &red(&id()),
            json!({"sideEnvironmentId": side_env}),
        )
        .await,
        404,
        "REDEMPTION_NOT_FOUND",
        "txId",
    );
    err(
        c.json(
            Method::GET,
            &red(&format!("0x{}", "ab".repeat(32))),
            json!({"sideEnvironmentId": side_env}),
        )
        .await,
        404,
        "REDEMPTION_NOT_FOUND",
        "0xabab",
    );

    // Nonce, raw transfer, balances.
    let d = okd(c
        .json(
            Method::GET,
            &format!("/mx/v2.0/wallets/{dev}/nonce"),
            json!({"environmentId": main_env}),
        )
        .await);
    assert!(d["nonce"].is_u64());
    err(
        c.json(
            Method::GET,
            &format!("/mx/v2.0/wallets/{dev}/nonce"),
            json!({"environmentId": "x"}),
        )
        .await,
        404,
        "ENVIRONMENT_NOT_FOUND",
        "environmentId",
    );
    let rt = "/mx/v2.0/token/main-tokens";
    let q = format!("mainEnvironmentId={main_env}&fromAddress={dev}&toAddress={managed}&amount=5");
    let d = okd(c
        .go(Method::GET, &format!("{rt}/MT/transfer/raw-tx?{q}"))
        .await);
    assert!(
        d["rawTx"]["data"]
            .as_str()
            .is_some_and(|s| s.starts_with("0xa9059cbb"))
    );
    assert_eq!(d["rawTx"]["chainId"], info.main.chain_id);
    err(
        c.go(Method::GET, &format!("{rt}/XX/transfer/raw-tx?{q}"))
            .await,
        404,
        "TOKEN_NOT_FOUND",
        "XX",
    );
    err(
        c.go(
            Method::GET,
            &format!("{rt}/MT/transfer/raw-tx?mainEnvironmentId={main_env}"),
        )
        .await,
        400,
        "INVALID_FIELD",
        "fromAddress",
    );
    err(
        c.go(
            Method::GET,
            &format!(
                "{rt}/MT/transfer/raw-tx?{}",
                q.replace("amount=5", "amount=1e3")
            ),
        )
        .await,
        400,
        "INVALID_FIELD",
        "amount",
    );
    let d = okd(c
        .go(Method::GET, &format!("/tx/v2.0/wallets/{dev}/MT/balance"))
        .await);
    assert_eq!(d["balance"], "100000000000000000000");
    let d = okd(c
        .go(
            Method::GET,
            &format!("/tx/v2.0/wallets/{dev}/MT/ST/balance"),
        )
        .await);
    assert_eq!(d["balance"], "50000000");
    err(
        c.go(
            Method::GET,
            &format!("/tx/v2.0/wallets/{dev}/MT/XX/balance"),
        )
        .await,
        404,
        "TOKEN_NOT_FOUND",
        "XX",
    );
    err(
        c.go(Method::GET, "/tx/v2.0/wallets/0xzz/MT/balance").await,
        400,
        "INVALID_ADDRESS",
        "address",
    );

    // Sandbox-only routes.
    let fresh = "0x000000000000000000000000000000000000f00d";
    assert_eq!(
        okd(c
            .go(Method::GET, &format!("/sandbox/v1/fee-delegation/{fresh}"))
            .await)["registered"],
        false
    );
    okd(c
        .go(Method::POST, &format!("/sandbox/v1/fee-delegation/{fresh}"))
        .await);
    assert_eq!(
        okd(c
            .go(Method::GET, &format!("/sandbox/v1/fee-delegation/{fresh}"))
            .await)["registered"],
        true
    );
    let d = okd(c.go(Method::POST, "/sandbox/v1/managed-accounts").await);
    let new_managed = d["address"].as_str().expect("address").to_owned();
    let d = okd(c.go(Method::GET, "/sandbox/v1/managed-accounts").await);
    assert_eq!(d["total"], 2);
    assert!(
        d["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|a| a.as_str().map(str::to_lowercase) == Some(new_managed.to_lowercase()))
    );
    assert_eq!(
        okd(c.go(Method::GET, "/sandbox/v1/swaps").await)["total"],
        0
    );

    // Webhooks (web3 shapes on success, envelopes on error).
    let wh = "/web3/v1/ethereum/mainnet/webhooks";
    let create = json!({"description": "d", "eventType": "BLOCK_PERIOD", "notification": {"webhookUrl": "http://127.0.0.1:9/x"}, "condition": {"period": 5}});
    err(
        c.json(
            Method::POST,
            "/web3/v1/ethereum/mumbai/webhooks",
            create.clone(),
        )
        .await,
        404,
        "UNSUPPORTED_NETWORK",
        "mumbai",
    );
    err(
        c.json(
            Method::POST,
            "/web3/v1/solana/mainnet/webhooks",
            create.clone(),
        )
        .await,
        404,
        "UNSUPPORTED_NETWORK",
        "solana",
    );
    let mut b = create.clone();
    b["eventType"] = json!("NEW_THING");
    err(
        c.json(Method::POST, wh, b).await,
        400,
        "INVALID_EVENT_TYPE",
        "NEW_THING",
    );
    let mut b = create.clone();
    b["condition"] = json!({"period": 0});
    err(
        c.json(Method::POST, wh, b).await,
        400,
        "INVALID_FIELD",
        "condition.period",
    );
    let mut b = create.clone();
    b["notification"] = json!({"webhookUrl": "ftp://x"});
    err(
        c.json(Method::POST, wh, b).await,
        400,
        "INVALID_FIELD",
        "webhookUrl",
    );
    let (s, created) = c.json(Method::POST, wh, create.clone()).await;
    assert_eq!(s, 200, "{created}");
    for k in ["subscriptionId", "signingKey", "createdAt"] {
        assert!(created[k].is_string(), "{k}: {created}");
    }
    assert_eq!(
        (created["protocol"].as_str(), created["network"].as_str()),
        (Some("ETHEREUM"), Some("MAINNET"))
    );
    let sid = created["subscriptionId"].as_str().expect("id").to_owned();
    let (s, list) = c.go(Method::GET, wh).await;
    assert_eq!(s, 200);
    assert_eq!(
        (
            list["total"].as_u64(),
            list["page"].as_u64(),
            list["rpp"].as_u64()
        ),
        (Some(1), Some(1), Some(20))
    );
    let (_, other) = c.go(Method::GET, "/web3/v1/polygon/mainnet/webhooks").await;
    assert_eq!(other["total"], 0, "webhooks are listed per chain/network");
    let (s, one) = c.go(Method::GET, &format!("{wh}/{sid}")).await;
    assert_eq!((s, one["isActive"].as_bool()), (200, Some(true)));
    let (s, r) = c
        .json(
            Method::PATCH,
            &format!("{wh}/{sid}"),
            json!({"isActive": false, "description": "off"}),
        )
        .await;
    assert_eq!((s, r), (200, json!({"result": true})));
    let (_, one) = c
        .go(Method::GET, &format!("{wh}?subscriptionId={sid}"))
        .await;
    assert_eq!(
        (
            one["items"][0]["isActive"].as_bool(),
            one["items"][0]["description"].as_str()
        ),
        (Some(false), Some("off"))
    );
    err(
        c.json(
            Method::PATCH,
            &format!("{wh}/{sid}"),
            json!({"colour": "red"}),
        )
        .await,
        400,
        "INVALID_FIELD",
        "colour",
    );
    err(
        c.json(
            Method::PATCH,
            &format!("{wh}/999"),
            json!({"isActive": true}),
        )
        .await,
        404,
        "WEBHOOK_NOT_FOUND",
        "999",
    );
    err(
        c.go(Method::GET, &format!("{wh}?page=0")).await,
        400,
        "INVALID_FIELD",
        "page",
    );
    let (s, r) = c.go(Method::DELETE, &format!("{wh}/{sid}")).await;
    assert_eq!((s, r), (200, json!({"result": true})));
    err(
        c.go(Method::DELETE, &format!("{wh}/{sid}")).await,
        404,
        "WEBHOOK_NOT_FOUND",
        &sid,
    );

    finish(sb).await;
}
