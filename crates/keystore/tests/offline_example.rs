//! `examples/offline_sign.rs` (keystore, tx and signing log only) signs a platform rawTx that passes
//! its checks, and refuses one to a contract it does not trust before the passphrase
//! file is read.

use std::process::Command;

use bridgectl_keystore::{KdfParams, Keystore, Passphrase, SecretText};

const KEY: &str = "4646464646464646464646464646464646464646464646464646464646464646";
const CONTRACT: &str = "0x3535353535353535353535353535353535353535";

fn example_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    profile_dir.join("examples").join("offline_sign")
}

fn envelope(from: alloy_primitives::Address, to: &str) -> String {
    // redeem(1e18), as the platform's transaction action returns it for an EOA.
    let data = format!("0xdb006a75{:064x}", 1_000_000_000_000_000_000u128);
    format!(
        r#"{{"result":true,"data":{{"from":"{from}","rawTx":{{"from":"{from}","to":"{to}",
            "data":"{data}","value":"0x0","nonce":"0x7","gasLimit":"0x186a0",
            "gasPrice":"0x3b9aca00","chainId":"0x7a69"}}}}}}"#
    )
}

fn run(dir: &std::path::Path, input: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(example_binary())
        .args([
            dir.join("ks").to_str().expect("utf8"),
            "31337",
            CONTRACT,
            "7",
        ])
        .env("PASSPHRASE_FILE", dir.join("passphrase"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the example");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    child.wait_with_output().expect("wait")
}

#[test]
fn the_offline_example_signs_what_it_trusts_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = Keystore::open(dir.path().join("ks")).expect("keystore");
    let info = keystore
        .import_raw(
            &SecretText::new(KEY.to_owned()),
            None,
            &mut Passphrase::new("pw".to_owned()),
            &KdfParams::insecure_for_tests(),
        )
        .expect("import");
    std::fs::write(dir.path().join("passphrase"), "pw\n").expect("write");

    let out = run(dir.path(), &envelope(info.address, CONTRACT));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let hex = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let raw = alloy_primitives::hex::decode(&hex).expect("hex");
    let decoded = bridgectl_tx::decode::decode_signed(&raw).expect("decodes");
    assert_eq!(decoded.sender, info.address);
    assert_eq!(decoded.chain_id, Some(31337));
    assert_eq!(decoded.nonce, 7);
    // The signature is in the keystore's signing log, as every signature is.
    let log = bridgectl_signing_log::SigningLogDb::open_in(
        keystore.dir(),
        keystore.signers().expect("keys"),
    )
    .expect("log");
    let head = log.verify(None).expect("intact");
    assert_eq!(head.count, 1, "signed through the log");

    // A contract the signer does not trust: refused, and the passphrase file (removed
    // here) is never needed.
    std::fs::remove_file(dir.path().join("passphrase")).expect("rm");
    let other = "0x1111111111111111111111111111111111111111";
    let out = run(dir.path(), &envelope(info.address, other));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(
        !stderr.contains("PASSPHRASE_FILE") && !stderr.contains("No such file"),
        "refused before the passphrase: {stderr}"
    );
}
