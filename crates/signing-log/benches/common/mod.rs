//! What the benches share: the key, its redeems of 1 ST, and a log written straight into
//! its file (building a log is not what they measure).

use std::collections::BTreeMap;

use alloy_primitives::{Address, Bytes, U256};
use alloy_signer_local::PrivateKeySigner;
use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::signing_log::{Entry, EntryBody};
use bridgectl_tx::{RawTx, Verified, verify};

/// The token contract the redeems call.
pub const ST: Address = Address::repeat_byte(0x57);
/// The chain they are signed for.
pub const CHAIN: u64 = 1337;

pub fn key() -> PrivateKeySigner {
    "4646464646464646464646464646464646464646464646464646464646464646"
        .parse()
        .expect("key")
}

/// The key's redeem of 1 ST at `nonce`.
pub fn redeem(nonce: u64) -> RawTx {
    let data = bridgectl_tx::calldata::encode(
        "redeem",
        &BTreeMap::from([("_amount".to_string(), "1000000000000000000".to_string())]),
    )
    .expect("calldata");
    RawTx {
        from: key().address(),
        to: ST,
        data: Bytes::from(data),
        nonce,
        gas_limit: 100_000,
        gas_price: 1_000_000_000,
        chain_id: CHAIN,
        value: U256::ZERO,
    }
}

/// [`redeem`] verified under a policy that allows exactly it.
pub fn verified(nonce: u64) -> Verified {
    let tx = redeem(nonce);
    let (policy, context) = bridgectl_tx::verify::exactly(&tx);
    verify(&tx, None, &policy, &context).expect("verified")
}

/// A log at `path` holding `entries`, inserted in one transaction, their columns as
/// their bodies say.
pub fn written(path: &std::path::Path, entries: &[Entry]) -> SigningLogDb {
    let log = SigningLogDb::open(path).expect("open");
    let mut conn = rusqlite::Connection::open(path).expect("raw");
    let tx = conn.transaction().expect("tx");
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO entries (seq, time, key, chain_id, contract, body, hash, sig) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .expect("prepare");
        for e in entries {
            let b: EntryBody = serde_json::from_str(&e.body).expect("body");
            insert
                .execute(rusqlite::params![
                    e.seq as i64,
                    b.time as i64,
                    b.key.to_string(),
                    b.chain_id as i64,
                    b.to.to_string(),
                    e.body,
                    e.hash.as_slice(),
                    e.sig.as_ref()
                ])
                .expect("insert");
        }
    }
    tx.commit().expect("commit");
    log
}
