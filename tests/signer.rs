//! `--signer rpc:URL`: a redeem signed by a JSON-RPC signing endpoint (the sandbox's own
//! anvil, whose development account is unlocked) instead of a key of the keystore: no
//! passphrase is read, the redemption completes, and the signing log records the
//! signature, signed by the same account, verifiable as any other entry.

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
