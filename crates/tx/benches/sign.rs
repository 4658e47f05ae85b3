//! One group, two ways to sign the same EIP-155 example transaction:
//!
//! - `bare_k256_sign_prehash_recoverable`: only the secp256k1 signature of a fixed hash
//!   (k256 with precomputed tables), the floor any signer pays;
//! - `sign_legacy_tx`: bridgectl's full path (`TxLegacy` signing hash, signature, signed
//!   RLP encoding, keccak of it).
//!
//! Target: the full path at >= 0.9x the bare signature rate.
//!
//! A second group, `recover`, prices who-signed-this: alloy's recovery (k256's, which
//! verifies what it recovered: two multiplications) against `bridgectl_tx::recover`
//! (one), on the same signature.

use std::hint::black_box;

use alloy_primitives::{Address, Bytes, U256};
use alloy_signer_local::PrivateKeySigner;
use bridgectl_tx::{RawTx, local_signing::signing_hash, sign_legacy};
use criterion::{Criterion, criterion_group, criterion_main};
use k256::ecdsa::SigningKey;

fn bench(c: &mut Criterion) {
    let key_bytes = [0x46u8; 32];
    let signer = PrivateKeySigner::from_slice(&key_bytes).expect("key");
    let sk = SigningKey::from_slice(&key_bytes).expect("key");
    let tx = RawTx {
        from: signer.address(),
        to: Address::repeat_byte(0x35),
        data: Bytes::new(),
        nonce: 9,
        gas_limit: 21000,
        gas_price: 20_000_000_000,
        chain_id: 1,
        value: U256::from(1_000_000_000_000_000_000u128),
    };
    let hash = signing_hash(&tx);
    let (policy, context) = bridgectl_tx::verify::exactly(&tx);
    let verified = bridgectl_tx::verify(&tx, None, &policy, &context).expect("verified");

    let mut g = c.benchmark_group("sign");
    g.bench_function("bare_k256_sign_prehash_recoverable", |b| {
        b.iter(|| {
            sk.sign_prehash_recoverable(black_box(hash.as_slice()))
                .expect("sign")
        })
    });
    g.bench_function("sign_legacy_tx", |b| {
        b.iter(|| sign_legacy(black_box(&verified), &signer).expect("sign"))
    });
    g.finish();

    let (sig, recid) = sk.sign_prehash_recoverable(hash.as_slice()).expect("sign");
    let sig = alloy_primitives::Signature::from_signature_and_parity(sig, recid.is_y_odd());
    let mut g = c.benchmark_group("recover");
    g.bench_function("alloy_recover_address_from_prehash", |b| {
        b.iter(|| {
            black_box(&sig)
                .recover_address_from_prehash(black_box(&hash))
                .expect("recovers")
        })
    });
    g.bench_function("bridgectl_signer_of_prehash", |b| {
        b.iter(|| {
            bridgectl_tx::recover::signer_of_prehash(black_box(&sig), black_box(&hash))
                .expect("recovers")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
