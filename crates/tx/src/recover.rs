//! Who signed: the address an ECDSA signature over secp256k1 recovers to, at half the
//! price of the libraries' recovery.
//!
//! `k256`'s `VerifyingKey::recover_from_prehash` (which alloy's `Signature::recover_*`
//! calls) recovers the public key `Q = r⁻¹(s·R − z·G)` and then verifies the signature
//! against `Q`: a second double scalar multiplication, `u1·G + u2·Q` with `u1 = z/s`,
//! `u2 = r/s`. That check cannot fail for a `Q` the first step produced:
//! `u1·G + u2·Q = (z·G + s·R − z·G)/s = R`, whose x is `r` because `R` was made from
//! `r`. So it is left out here, and every recovery on the signing side (the decoder's
//! sender, the self-check of each signature, the signing log's entries) costs one
//! multiplication instead of two: 70.6 µs instead of 131.2 µs on this machine (the
//! `recover` group of this crate's `sign` benchmark).
//!
//! What the libraries refuse is still refused: `r` and `s` must be non-zero scalars
//! below the group order, `R` must be on the curve, and the recovered key must not be
//! the point at infinity. A high `s` recovers the same key as its low twin with the
//! other parity, as alloy's recovery (which normalizes `s` first) does; the decoder
//! refuses high `s` on its own (EIP-2). Tests compare every result with alloy's, and
//! the sandbox, the platform's model, keeps alloy's recovery: an independent check of
//! the signatures bridgectl sends it.

use alloy_primitives::{Address, B256, Signature, U256, keccak256, uint};
use k256::elliptic_curve::PrimeField;
use k256::elliptic_curve::ops::{LinearCombination, Reduce};
use k256::elliptic_curve::point::DecompressPoint;
use k256::elliptic_curve::sec1::ToEncodedPoint;
use k256::elliptic_curve::subtle::Choice;
use k256::{AffinePoint, FieldBytes, ProjectivePoint, Scalar};

/// The order of the secp256k1 group.
pub const SECP256K1N: U256 =
    uint!(0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141_U256);

/// The address whose key made `signature` over the 32-byte `prehash`, or `None` when
/// no key can have made it (a scalar out of range, `r` not the x of a curve point, or
/// the point at infinity recovered).
pub fn signer_of_prehash(signature: &Signature, prehash: &B256) -> Option<Address> {
    let r_bytes = FieldBytes::from(signature.r().to_be_bytes::<32>());
    let r = Option::<Scalar>::from(Scalar::from_repr(r_bytes))?;
    let s = Option::<Scalar>::from(Scalar::from_repr(FieldBytes::from(
        signature.s().to_be_bytes::<32>(),
    )))?;
    if bool::from(r.is_zero() | s.is_zero()) {
        return None;
    }
    // Ethereum's recovery ids name only the parity of R's y: R's x is r itself, never
    // r + n (ecdsa's "x-reduced" ids do not exist here).
    let big_r = Option::<AffinePoint>::from(AffinePoint::decompress(
        &r_bytes,
        Choice::from(u8::from(signature.v())),
    ))?;
    let z = <Scalar as Reduce<k256::U256>>::reduce_bytes(&FieldBytes::from(prehash.0));
    let r_inv = Option::<Scalar>::from(r.invert())?;
    let u1 = -(r_inv * z);
    let u2 = r_inv * s;
    let q = ProjectivePoint::lincomb(
        &ProjectivePoint::GENERATOR,
        &u1,
        &ProjectivePoint::from(big_r),
        &u2,
    );
    if q == ProjectivePoint::IDENTITY {
        return None;
    }
    let point = q.to_affine().to_encoded_point(false);
    let hash = keccak256(&point.as_bytes()[1..]);
    Some(Address::from_slice(&hash[12..]))
}

/// [`signer_of_prehash`] of an EIP-191 personal message (`"\x19Ethereum Signed
/// Message:\n" || len || message`), as `Signature::recover_address_from_msg` hashes it.
pub fn signer_of_message(signature: &Signature, message: &[u8]) -> Option<Address> {
    signer_of_prehash(signature, &alloy_primitives::eip191_hash_message(message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k256::ecdsa::SigningKey;

    /// A deterministic stream of 32-byte values (no RNG dependency, reproducible).
    fn stream(seed: u64) -> impl Iterator<Item = [u8; 32]> {
        (0u64..).map(move |i| keccak256([seed.to_be_bytes(), i.to_be_bytes()].concat()).0)
    }

    fn next(values: &mut impl Iterator<Item = [u8; 32]>) -> [u8; 32] {
        values.next().expect("an endless stream")
    }

    fn alloy_signer(sig: &Signature, prehash: &B256) -> Option<Address> {
        sig.recover_address_from_prehash(prehash).ok()
    }

    #[test]
    fn agrees_with_alloy_on_signatures_made_by_keys() {
        let mut values = stream(1);
        for _ in 0..200 {
            let key = SigningKey::from_bytes(&next(&mut values).into()).expect("a valid key");
            let address = alloy_primitives::Address::from_private_key(&key);
            let prehash = B256::from(next(&mut values));
            let (sig, recid) = key
                .sign_prehash_recoverable(prehash.as_slice())
                .expect("signs");
            let sig = Signature::from_signature_and_parity(sig, recid.is_y_odd());
            assert_eq!(signer_of_prehash(&sig, &prehash), Some(address));
            assert_eq!(alloy_signer(&sig, &prehash), Some(address));
            // The high-s twin with the other parity is the same key, as alloy says.
            let n_minus_s = SECP256K1N - sig.s();
            let twin = Signature::new(sig.r(), n_minus_s, !sig.v());
            assert_eq!(signer_of_prehash(&twin, &prehash), Some(address));
            assert_eq!(alloy_signer(&twin, &prehash), Some(address));
            // The wrong parity recovers another key (or none), never this one.
            let flipped = Signature::new(sig.r(), sig.s(), !sig.v());
            assert_ne!(signer_of_prehash(&flipped, &prehash), Some(address));
            assert_eq!(
                signer_of_prehash(&flipped, &prehash),
                alloy_signer(&flipped, &prehash)
            );
        }
    }

    #[test]
    fn agrees_with_alloy_on_arbitrary_values() {
        // Random r, s and parity: about half of the r are not the x of a curve point.
        let mut values = stream(2);
        let (mut some, mut none) = (0, 0);
        for i in 0..400 {
            let sig = Signature::new(
                U256::from_be_bytes(next(&mut values)),
                U256::from_be_bytes(next(&mut values)),
                i % 2 == 0,
            );
            let prehash = B256::from(next(&mut values));
            let ours = signer_of_prehash(&sig, &prehash);
            assert_eq!(
                ours,
                alloy_signer(&sig, &prehash),
                "r {} s {}",
                sig.r(),
                sig.s()
            );
            if ours.is_some() { some += 1 } else { none += 1 }
        }
        assert!(some > 100 && none > 50, "{some} recovered, {none} refused");
    }

    #[test]
    fn refuses_scalars_out_of_range() {
        let prehash = B256::repeat_byte(7);
        let good = U256::from(5u64);
        for (r, s) in [
            (U256::ZERO, good),
            (good, U256::ZERO),
            (SECP256K1N, good),
            (good, SECP256K1N),
            (U256::MAX, good),
            (good, U256::MAX),
        ] {
            for parity in [false, true] {
                let sig = Signature::new(r, s, parity);
                assert_eq!(signer_of_prehash(&sig, &prehash), None, "r {r} s {s}");
                assert_eq!(alloy_signer(&sig, &prehash), None, "r {r} s {s}");
            }
        }
    }

    #[test]
    fn a_personal_message_recovers_as_alloy_recovers_it() {
        let key = SigningKey::from_bytes(&[0x46; 32].into()).expect("a valid key");
        let signer = alloy_signer_local::LocalSigner::from_signing_key(key);
        let message = b"signing-log entry";
        let sig = alloy_signer::SignerSync::sign_message_sync(&signer, message).expect("signs");
        assert_eq!(signer_of_message(&sig, message), Some(signer.address()));
        assert_eq!(
            sig.recover_address_from_msg(message).ok(),
            Some(signer.address())
        );
    }

    proptest::proptest! {
        /// Whatever the values (in range or not, on the curve or not, low or high `s`):
        /// the same answer as alloy's recovery.
        #[test]
        fn agrees_with_alloy_on_any_input(
            r in proptest::prelude::any::<[u8; 32]>(),
            s in proptest::prelude::any::<[u8; 32]>(),
            parity in proptest::prelude::any::<bool>(),
            prehash in proptest::prelude::any::<[u8; 32]>(),
        ) {
            let sig = Signature::new(U256::from_be_bytes(r), U256::from_be_bytes(s), parity);
            let prehash = B256::from(prehash);
            proptest::prop_assert_eq!(signer_of_prehash(&sig, &prehash), alloy_signer(&sig, &prehash));
        }
    }
}
