//! Key files: our v1 format and Web3 Secret Storage v3.

use bridgectl_keystore::fuzzing::{Cost, parse};
use bridgectl_keystore::{
    MAX_M_KIB, MAX_P, MAX_PBKDF2_C, MAX_SCRYPT_BYTES, MAX_SCRYPT_P, MAX_T, Passphrase,
};

/// Key files are refused above this size before parsing (the keystore's own limit).
const MAX_KEY_FILE: usize = 64 * 1024;

/// Input: the passphrase, a `\n`, then the key file (the layout of a fixture's
/// `.passphrase` file followed by the key file).
///
/// Properties: whatever parses asks for KDF work within the caps (checked before any
/// derivation); a file whose own parameters are cheap (as the test fixtures' are) and
/// that decrypts is re-encrypted with the same parameters to a file that parses, has
/// the same cost and decrypts to the same key. Files with expensive parameters are only
/// parsed: the fuzzer never lowers a cost to make them fast.
pub fn key_file(data: &[u8]) {
    let (passphrase, file) = crate::input::split_line(data);
    if file.len() > MAX_KEY_FILE {
        return;
    }
    let Ok(parsed) = parse(file) else {
        return;
    };
    let cost = parsed.cost();
    assert!(within_caps(cost), "parsed past the KDF caps: {cost:?}");
    if !cheap(cost) {
        return;
    }
    let passphrase = Passphrase::new(String::from_utf8_lossy(passphrase).into_owned());
    let Ok(signer) = parsed.decrypt(&passphrase) else {
        return;
    };
    let Some(again) = parsed
        .reencrypt(&signer, &passphrase)
        .expect("a decrypted key re-encrypts")
    else {
        return;
    };
    let reparsed = parse(&again).expect("a re-encrypted file parses");
    assert_eq!(reparsed.cost(), cost, "re-encryption changed the KDF cost");
    let back = reparsed
        .decrypt(&passphrase)
        .expect("a re-encrypted file decrypts");
    assert_eq!(
        back.to_bytes(),
        signer.to_bytes(),
        "a different key came back"
    );
}

fn within_caps(cost: Cost) -> bool {
    match cost {
        Cost::Argon2id { m_kib, t, p } => m_kib <= MAX_M_KIB && t <= MAX_T && p <= MAX_P,
        Cost::Scrypt { n, r, p } => {
            128 * u128::from(n) * u128::from(r) * u128::from(p) <= u128::from(MAX_SCRYPT_BYTES)
                && p <= MAX_SCRYPT_P
        }
        Cost::Pbkdf2 { c } => c <= MAX_PBKDF2_C,
    }
}

/// Parameters cheap enough to derive on every fuzz input (about a millisecond).
fn cheap(cost: Cost) -> bool {
    match cost {
        Cost::Argon2id { m_kib, t, .. } => u64::from(m_kib) * u64::from(t) <= 1024,
        Cost::Scrypt { n, r, p } => 128 * u128::from(n) * u128::from(r) * u128::from(p) <= 1 << 20,
        Cost::Pbkdf2 { c } => c <= 10_000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../keystore-fixtures");
        let file = std::fs::read(dir.join(name)).expect("fixture");
        let pass = std::fs::read(dir.join(name).with_extension("passphrase")).expect("pass");
        let mut input = pass.split(|&b| b == b'\n').next().unwrap_or(&[]).to_vec();
        input.push(b'\n');
        input.extend_from_slice(&file);
        input
    }

    /// The cheap fixtures reach the re-encryption property (not only the parser).
    #[test]
    fn cheap_fixtures_reach_the_round_trip() {
        for name in [
            "v1_test_cost.key",
            "geth_30_byte_key.json",
            "geth_31_byte_key.json",
        ] {
            let input = fixture(name);
            let (pass, file) = crate::input::split_line(&input);
            let parsed = parse(file).expect(name);
            assert!(cheap(parsed.cost()), "{name}");
            let pass = Passphrase::new(String::from_utf8_lossy(pass).into_owned());
            let signer = parsed.decrypt(&pass).expect(name);
            let again = parsed.reencrypt(&signer, &pass).expect(name);
            assert!(again.is_some(), "{name}");
            key_file(&input);
        }
    }

    /// Files over the caps never parse, so the caps hold before any derivation.
    #[test]
    fn excessive_fixtures_do_not_parse() {
        for name in [
            "fail_v1_excessive_memory.key",
            "fail_v1_excessive_passes.key",
            "fail_v1_excessive_lanes.key",
            "fail_web3_scrypt_excessive.json",
            "fail_web3_scrypt_excessive_p.json",
            "fail_web3_pbkdf2_excessive.json",
        ] {
            let input = fixture(name);
            let (_, file) = crate::input::split_line(&input);
            assert!(parse(file).is_err(), "{name} parsed");
        }
    }
}
