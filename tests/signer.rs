//! `--signer rpc:URL`: a redeem signed by a JSON-RPC signing endpoint (the sandbox's own
//! anvil, whose development account is unlocked) instead of a key of the keystore: no
//! passphrase is read, the redemption completes, and the signing log records the
//! signature, signed by the same account, verifiable as any other entry.

use std::io::{Read, Write};

use crate::live::Live;
use crate::util::CountingPassphrase;

#[test]
fn a_redeem_signed_by_an_external_rpc_signer_reads_no_passphrase_and_is_logged() {
    let live = Live::shared_dev("external_signer");
    let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    let dev = live.dev.to_string();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
        .env(
            "BRIDGECTL_SIGNER",
            format!("rpc:{}", live.sb.info.side.rpc_url),
        )
        .args(["--json", "redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let out = live.ok_cmd(c);
    assert_eq!(
        counter.finish(),
        0,
        "the keystore was asked for a passphrase"
    );
    assert_eq!(out["status"], "completed", "{out:#}");
    assert!(live.mined(true, out["txHash"].as_str().expect("hash")));
    let entries = live.ok(&["log", "show"]);
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{entries:#}");
    assert_eq!(entries[0]["entry"]["txHash"], out["txHash"]);
    assert_eq!(
        entries[0]["entry"]["key"].as_str().map(str::to_lowercase),
        Some(dev.to_lowercase())
    );
    assert_eq!(live.ok(&["log", "verify"])["ok"], true);
    // A signer that is not an rpc: endpoint is a usage error, before anything runs.
    let mut c = live.cmd();
    c.env("BRIDGECTL_SIGNER", "ledger:0")
        .args(["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let out = c.output();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A signing endpoint on 127.0.0.1 that reads each request and then answers with
/// `answer` (raw HTTP), or never answers when it is `None`; returns its `rpc:` URL.
fn endpoint(answer: Option<Vec<u8>>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("rpc:http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            match &answer {
                Some(bytes) => {
                    let _ = conn.write_all(bytes);
                }
                // Held open, never answered.
                None => held.push(conn),
            }
        }
    });
    url
}

/// An external signer's account is the keystore's own everywhere: a keystore with no key
/// file at all, whose every signature came through the endpoint, verifies. What the
/// endpoint does wrong is named as the endpoint's, with the exit code of a remote
/// failure; a URL it may not have is refused before anything is asked of the platform.
#[test]
fn an_external_signers_log_verifies_and_its_failures_are_named_as_the_endpoints() {
    let live = Live::shared("external_signer_only");
    let keystore = live.dir.join("endpoint-keystore");
    let dev = live.dev.to_string();
    // The main chain's anvil signs for its unlocked accounts, among them the sandbox's
    // development account (the test's own fresh account is not one of them).
    let signer_account = live.sb.info.dev.address.to_string();
    let signer = format!("rpc:{}", live.sb.info.main.rpc_url);
    for _ in 0..2 {
        let mut c = live.cmd();
        c.env("BRIDGECTL_KEYSTORE", &keystore)
            .env("BRIDGECTL_SIGNER", &signer)
            .args([
                "--json",
                "transfer",
                "--token",
                "mt",
                "--from",
                &signer_account,
                "--to",
                &dev,
                "--amount",
                "0.01",
                "--yes",
                "--direct",
            ]);
        live.ok_cmd(c);
    }
    let mut c = live.cmd();
    c.env("BRIDGECTL_KEYSTORE", &keystore)
        .args(["--json", "log", "verify"]);
    let verified = live.ok_cmd(c);
    assert_eq!(verified["ok"], true, "{verified:#}");

    let redeem = |url: &str, extra: &[(&str, &str)]| {
        let mut c = live.cmd();
        c.env("BRIDGECTL_SIGNER", url);
        for (k, v) in extra {
            c.env(k, v);
        }
        c.args(["redeem", "--from", &dev, "--amount", "0.01", "--yes"]);
        c
    };
    // Plain http to another host: refused before the platform is asked (nothing
    // journaled), in a signing endpoint's words.
    let before = live.journal_rows().len();
    let err = redeem("rpc:http://10.1.2.3:8545", &[]).fails_with(2);
    assert!(
        err.contains("signing endpoint http://10.1.2.3:8545") && !err.contains("access token"),
        "{err}"
    );
    assert_eq!(live.journal_rows().len(), before, "a flow was journaled");
    // No answer within its timeout, and an answer too large: the endpoint's failures,
    // exit 7 like a node's.
    let silent = endpoint(None);
    let err = redeem(&silent, &[("BRIDGECTL_SIGNER_TIMEOUT", "2")]).fails_with(7);
    assert!(
        err.contains("signing endpoint eth_signTransaction"),
        "{err}"
    );
    let mut huge =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5242880\r\n\r\n"
            .to_vec();
    huge.extend(std::iter::repeat_n(b' ', 5 << 20));
    let flood = endpoint(Some(huge));
    let err = redeem(&flood, &[]).fails_with(7);
    assert!(
        err.contains("reading the signing endpoint's answer to eth_signTransaction"),
        "{err}"
    );
}

/// The offline signer with `--signer rpc:URL` needs no key file for the account the
/// endpoint holds (anvil's account #2, in no keystore here): it signs through the
/// endpoint, reads no passphrase, and logs the signature as the keystore's external
/// signer's (before, "no usable key", exit 6).
#[test]
fn an_offline_signature_through_an_endpoint_needs_no_key_file() {
    let live = Live::shared("offline_rpc_signer");
    live.node_only();
    let side = &live.sb.info.side;
    let account = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
    let raw = serde_json::json!({
        "from": account,
        "to": "0x3535353535353535353535353535353535353535",
        "data": "0x",
        "nonce": "0x9",
        "gasLimit": "0x5208",
        "gasPrice": "0x4a817c800",
        "chainId": side.chain_id,
        "value": "0xde0b6b3a7640000"
    });
    let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path).args([
        "--json",
        "sign",
        "-",
        "--signer",
        &format!("rpc:{}", side.rpc_url),
        "--yes",
        "--expect-chain-id",
        &side.chain_id.to_string(),
        "--expect-to",
        "0x3535353535353535353535353535353535353535",
        "--expect-data",
        "0x",
        "--allow-value",
        "1ether",
        "--max-gas-price",
        "20gwei",
        "--nonce",
        "9",
    ]);
    let out = c.output_with_stdin(raw.to_string().as_bytes());
    live.check_secrets(&out);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(counter.finish(), 0, "a passphrase was read");
    let bundle = crate::util::strict_json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        bundle["from"].as_str().map(str::to_lowercase),
        Some(account.to_lowercase()),
        "{bundle:#}"
    );
    let entries = live.ok(&["log", "show"]);
    assert_eq!(
        entries[0]["entry"]["key"].as_str().map(str::to_lowercase),
        Some(account.to_lowercase()),
        "{entries:#}"
    );
}
