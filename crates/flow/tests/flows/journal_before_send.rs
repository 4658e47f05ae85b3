//! The promise "every signed transaction is in the journal before it is submitted",
//! proved at the moment of submission: a fake node reads the journal when
//! `eth_sendRawTransaction` arrives and records whether the bytes it was sent are
//! already there, committed, as the flow's signed transaction.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use alloy_primitives::{Address, U256, keccak256};
use alloy_signer_local::PrivateKeySigner;
use bridgectl_flow::client::{AccessToken, ClientOptions, PlatformClient};
use bridgectl_flow::{
    Bridge, ChainSide, Flows, GasPriceCap, Journal, Quiet, Submitter, rpc::NodeClient,
};
use bridgectl_tx::{Context, Nonce, NonceFacts, Policy, RawTx, SignInput, SignedBundle};
use serde_json::{Value, json};

const CHAIN: u64 = 31337;

/// What the node saw at each `eth_sendRawTransaction`: the bytes, and whether the
/// journal already held exactly them.
type Seen = Arc<Mutex<Vec<(String, bool)>>>;

/// A JSON-RPC node on 127.0.0.1 that answers the three calls the flow makes.
fn fake_node(journal_path: std::path::PathBuf, seen: Seen) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (journal_path, seen) = (journal_path.clone(), seen.clone());
            std::thread::spawn(move || serve(stream, &journal_path, &seen));
        }
    });
    url
}

fn serve(stream: std::net::TcpStream, journal_path: &std::path::Path, seen: &Seen) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut out = stream;
    loop {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().expect("length");
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("body");
        let request: Value = serde_json::from_slice(&body).expect("json");
        let result = match request["method"].as_str().expect("method") {
            "eth_gasPrice" => json!("0x3b9aca00"),
            "eth_sendRawTransaction" => {
                let sent = request["params"][0].as_str().expect("hex").to_owned();
                // A second connection to the journal file, as another process would
                // have: it sees only what was committed.
                let journal = Journal::open(journal_path).expect("open journal");
                let flows = journal.list(10).expect("list");
                let held = flows.iter().any(|f| f.signed_tx.as_deref() == Some(&sent));
                seen.lock().expect("lock").push((sent.clone(), held));
                let bytes = alloy_primitives::hex::decode(&sent).expect("hex");
                json!(keccak256(bytes).to_string())
            }
            "eth_getTransactionReceipt" => json!({
                "transactionHash": request["params"][0],
                "blockNumber": "0x1", "blockHash": format!("0x{}", "11".repeat(32)),
                "gasUsed": "0x5208", "status": "0x1"
            }),
            "eth_chainId" => json!(format!("0x{CHAIN:x}")),
            "eth_blockNumber" => json!("0x1"),
            "eth_getBlockByNumber" => json!({
                "number": "0x1", "hash": format!("0x{}", "11".repeat(32)),
                "timestamp": "0x1"
            }),
            other => panic!("unexpected call {other}"),
        };
        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            answer.len()
        );
        out.write_all(head.as_bytes()).expect("write");
        out.write_all(answer.as_bytes()).expect("write");
    }
}

#[tokio::test]
async fn the_signed_bytes_are_committed_before_the_node_sees_them() {
    let dir = tempfile::tempdir().expect("tmp");
    let journal_path = dir.path().join("journal.sqlite3");
    let seen: Seen = Arc::default();
    let node_url = fake_node(journal_path.clone(), seen.clone());

    // An air-gap bundle: a redeem signed offline, submitted here through the node.
    let key = PrivateKeySigner::from_bytes(&[0x46; 32].into()).expect("key");
    let token = Address::repeat_byte(0x35);
    let raw = RawTx {
        from: key.address(),
        to: token,
        data: bridgectl_tx::calldata::erc20_transfer(Address::repeat_byte(1), U256::from(5)).into(),
        nonce: 3,
        gas_limit: 60_000,
        gas_price: 1_000_000_000,
        chain_id: CHAIN,
        value: U256::ZERO,
    };
    let request = serde_json::to_vec(&raw).expect("json");
    let input = SignInput::parse(&request).expect("input");
    let mut policy = Policy::default();
    policy.trusted.contract(token, CHAIN, None);
    policy.max_gas_price = Some(2_000_000_000);
    let context = Context {
        signer: key.address(),
        gas_price_quote: None,
        nonce: Nonce::Next(NonceFacts {
            fixed: Some(3),
            ..NonceFacts::default()
        }),
        spent: None,
    };
    let verified = bridgectl_tx::verify(&raw, None, &policy, &context).expect("verify");
    let signed = bridgectl_tx::sign_legacy(&verified, &key).expect("sign");
    let bundle = serde_json::to_vec(&SignedBundle::new(&signed, &input)).expect("bundle");
    let checked =
        bridgectl_flow::airgap::check_bundle(&bundle, Some(&request)).expect("checked bundle");

    let side = ChainSide {
        environment_id: "side".into(),
        symbol: "ST".into(),
        decimals: 18,
        token,
        chain_id: CHAIN,
        rpc_url: Some(node_url.clone()),
        finality: None,
    };
    let main = ChainSide {
        chain_id: 1,
        rpc_url: None,
        token: Address::repeat_byte(0x36),
        ..side.clone()
    };
    let client = PlatformClient::new(
        "http://127.0.0.1:9",
        AccessToken::new("unused"),
        ClientOptions::default(),
    )
    .expect("client");
    let journal = Arc::new(Journal::open(&journal_path).expect("journal"));
    let log = Arc::new(
        bridgectl_signing_log::SigningLogDb::open(dir.path().join("log.sqlite3")).expect("log"),
    );
    let flows = Flows::builder(client, journal, log)
        .bridge(Bridge {
            main,
            side,
            redeem_action: "redeem".into(),
            swap_credit: Default::default(),
        })
        .submitter(Submitter::Node(NodeClient::new(&node_url).expect("node")))
        .gas_price(GasPriceCap::Max(2_000_000_000))
        .build();
    let prepared = flows
        .prepare_bundle(checked, false, "test")
        .await
        .expect("prepared");
    let submitted = flows
        .send_bundle(&prepared, &mut Quiet)
        .await
        .expect("submitted");

    assert_eq!(submitted.tx_hash, signed.hash);
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 1, "one submission: {seen:?}");
    assert_eq!(seen[0].0, signed.raw.to_string());
    assert!(
        seen[0].1,
        "the node received bytes the journal did not hold yet"
    );
}
