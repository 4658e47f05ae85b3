//! One vocabulary for names. Every option and input that names an account takes an
//! address, or a key's label or id (`--from`, `--to`, `log show --key`, an action input
//! typed `address`); every command that names a flow takes its txId, a unique start of
//! it, or the hash of a transaction it signed (`resume`, `history`, `status`).

use crate::flow::{units, view_balance_of};
use crate::live::Live;

#[test]
fn a_label_names_an_account_and_a_prefix_or_hash_names_a_flow_everywhere() {
    let mut live = Live::shared("names");
    let alice = live.sb.new_account();
    live.secrets
        .add_key("alice's key", alice.private_key.expose_secret());
    live.import_key(alice.private_key.expose_secret(), "alice");
    let (mt, st) = (live.sb.info.main.decimals, live.sb.info.side.decimals);

    // `--to alice` pays alice (it used to fail in clap: "odd number of digits").
    let mt0 = live.balance(false, alice.address);
    let out = live.ok(&[
        "transfer", "--token", "mt", "--from", "dev", "--to", "alice", "--amount", "1", "--yes",
    ]);
    assert_eq!(out["to"], alice.address.to_checksum(None), "{out:#}");
    assert_eq!(live.balance(false, alice.address) - mt0, units(1, mt));
    // A typo in an address is named as one, not looked up as a label.
    let typo = format!("{:#x}", alice.address);
    let err = live.fails(
        &[
            "transfer",
            "--token",
            "mt",
            "--from",
            "dev",
            "--to",
            &typo[..41],
            "--amount",
            "1",
            "--yes",
        ],
        2,
    );
    assert!(
        err.contains("expected an address (0x + 40 hex digits)"),
        "{err}"
    );

    // alice signs once; `log show --key alice` lists that entry and no other.
    live.ok(&[
        "transfer", "--token", "st", "--from", "alice", "--to", "dev", "--amount", "1", "--yes",
    ]);
    let shown = live.ok(&["log", "show", "--key", "alice"]);
    let entries = shown.as_array().expect("a list");
    assert_eq!(entries.len(), 1, "{shown:#}");
    assert!(
        entries[0]["entry"]["key"]
            .as_str()
            .expect("key")
            .eq_ignore_ascii_case(&alice.address.to_string()),
        "{shown:#}"
    );
    let err = live.fails(&["log", "show", "--key", "bob"], 6);
    assert!(err.contains("\"bob\" is neither an address"), "{err}");

    // `--input _owner=alice` asks for alice's balance, typed `address` by `--function`.
    assert_eq!(
        view_balance_of(&live, "alice", &["--function", "balanceOf"]),
        live.balance(true, alice.address).to_string()
    );
    assert_eq!(
        live.balance(true, alice.address),
        units(99, st),
        "alice sent one of her 100 ST"
    );

    // Stopped with the signed bytes journaled and nothing sent (failpoint, debug
    // builds): `resume` takes the start of the txId, and sends those bytes once.
    let nonce0 = live.nonce(false, live.dev);
    let mut c = live.cmd();
    c.args([
        "transfer", "--token", "mt", "--from", "dev", "--to", "alice", "--amount", "1", "--yes",
    ])
    .env("BRIDGECTL_FAILPOINT", "journaled-not-sent");
    crate::util::assert_aborted(&c.output(), "transfer");
    let flow = live.ok(&["history"])[0].clone();
    let tx_id = flow["txId"].as_str().expect("txId");
    let resumed = live.resume_unsigned(&tx_id[..8]);
    assert_eq!(resumed["txId"], tx_id, "{resumed:#}");
    assert_eq!(resumed["txHash"], flow["txHash"], "{resumed:#}");
    assert_eq!(live.nonce(false, live.dev), nonce0 + 1, "sent once");
    // The same flow by the hash it signed: done, nothing sent again.
    let hash = flow["txHash"].as_str().expect("txHash");
    let again = live.resume_unsigned(hash);
    assert_eq!(again["txId"], tx_id, "{again:#}");
    assert_eq!(again["resent"], false, "{again:#}");
    assert_eq!(live.ok(&["history", hash])["flow"]["txId"], tx_id);
}
