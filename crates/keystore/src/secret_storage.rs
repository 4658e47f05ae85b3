//! Web3 Secret Storage v3: import (geth, cast, ethers v6, eth-account) and export.
//!
//! Import is lenient where real files differ (`Crypto` with a capital C as ethers v6
//! writes it, plaintext shorter than 32 bytes as some geth files have, scrypt r=1 p=8
//! as eth-account writes) and strict where safety is concerned: the KDF cost is capped
//! before any derivation, the MAC is compared in constant time, and a stored `address`
//! must match the decrypted key.

use bridgectl_secret::{ExposeSecret, ExposeSecretMut};
use std::path::Path;

use aes::cipher::{KeyIvInit, StreamCipher};
use alloy_primitives::keccak256;
use alloy_signer_local::PrivateKeySigner;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::format::random;
use crate::secret::{Passphrase, SecretBytes};
use crate::{Error, signer_from_secret};

type Aes128Ctr = ctr::Ctr128BE<aes::Aes128>;

/// Largest scrypt memory × parallelism we run on import: 128·N·r·p ≤ 1 GiB
/// (geth's standard N=2^18, r=8, p=1 is 256 MiB).
pub const MAX_SCRYPT_BYTES: u64 = 1 << 30;
/// Largest scrypt parallelism we accept.
pub const MAX_SCRYPT_P: u32 = 16;
/// Largest PBKDF2 iteration count we run on import (OWASP asks for 600,000).
pub const MAX_PBKDF2_C: u32 = 10_000_000;
/// Largest salt we accept, in bytes.
const MAX_SALT: usize = 1024;

/// Scrypt parameters for exported Web3 v3 files.
///
/// [`Default`] is geth's standard: N = 2^18, r = 8, p = 1 (256 MiB), which geth, cast
/// and eth-account all read. [`Web3Params::insecure_for_tests`] is far cheaper and only
/// for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Web3Params {
    log_n: u8,
    r: u32,
    p: u32,
}

impl Default for Web3Params {
    fn default() -> Self {
        Self {
            log_n: 18,
            r: 8,
            p: 1,
        }
    }
}

impl Web3Params {
    /// N = 2^10, r = 8, p = 1: fast, for tests only.
    pub fn insecure_for_tests() -> Self {
        Self {
            log_n: 10,
            r: 8,
            p: 1,
        }
    }
}

#[derive(Debug, Deserialize)]
struct Web3File {
    #[serde(alias = "Crypto")]
    crypto: CryptoSection,
    version: u32,
    #[serde(default)]
    address: Option<String>,
    #[serde(default)]
    id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CryptoSection {
    cipher: String,
    cipherparams: CipherParams,
    ciphertext: String,
    kdf: String,
    kdfparams: serde_json::Value,
    mac: String,
}

#[derive(Debug, Deserialize, Serialize)]
struct CipherParams {
    iv: String,
}

#[derive(Debug, Deserialize)]
struct ScryptParams {
    dklen: u32,
    n: u64,
    r: u32,
    p: u32,
    salt: String,
}

#[derive(Debug, Deserialize)]
struct Pbkdf2Params {
    dklen: u32,
    c: u32,
    prf: String,
    salt: String,
}

enum Kdf {
    Scrypt {
        params: scrypt::Params,
        salt: Vec<u8>,
    },
    Pbkdf2 {
        c: u32,
        salt: Vec<u8>,
    },
}

/// A parsed and checked Web3 v3 file, ready to decrypt.
pub(crate) struct ParsedWeb3 {
    kdf: Kdf,
    iv: [u8; 16],
    ciphertext: Vec<u8>,
    mac: [u8; 32],
    /// The address the file claims, if it has one.
    pub address: Option<alloy_primitives::Address>,
}

fn hex_bytes(path: &Path, field: &str, value: &str) -> Result<Vec<u8>, Error> {
    hex::decode(value.strip_prefix("0x").unwrap_or(value))
        .map_err(|e| Error::malformed(path, format!("field `{field}` is not hex: {e}")))
}

fn hex_array<const N: usize>(path: &Path, field: &str, value: &str) -> Result<[u8; N], Error> {
    hex_bytes(path, field, value)?
        .try_into()
        .map_err(|b: Vec<u8>| {
            Error::malformed(
                path,
                format!("field `{field}` has {} bytes, expected {N}", b.len()),
            )
        })
}

fn salt(path: &Path, value: &str) -> Result<Vec<u8>, Error> {
    let salt = hex_bytes(path, "crypto.kdfparams.salt", value)?;
    if salt.len() > MAX_SALT {
        return Err(Error::malformed(
            path,
            format!(
                "field `crypto.kdfparams.salt` has {} bytes, at most {MAX_SALT} allowed",
                salt.len()
            ),
        ));
    }
    Ok(salt)
}

/// Parses a Web3 v3 file and checks every field and the KDF cap. Nothing is derived.
pub(crate) fn parse(path: &Path, value: serde_json::Value) -> Result<ParsedWeb3, Error> {
    let file: Web3File =
        serde_json::from_value(value).map_err(|e| Error::malformed(path, e.to_string()))?;
    if file.version != 3 {
        return Err(Error::UnsupportedVersion {
            path: path.to_owned(),
            found: format!("web3 secret storage {}", file.version),
            supported: "web3 secret storage 3".into(),
        });
    }
    let _ = file.id;
    let c = &file.crypto;
    if c.cipher != "aes-128-ctr" {
        return Err(Error::Unsupported {
            path: path.to_owned(),
            what: format!("cipher {}", c.cipher),
            expected: "aes-128-ctr".into(),
        });
    }
    let kdf = match c.kdf.as_str() {
        "scrypt" => {
            let p: ScryptParams = serde_json::from_value(c.kdfparams.clone())
                .map_err(|e| Error::malformed(path, format!("crypto.kdfparams: {e}")))?;
            check_dklen(path, p.dklen)?;
            if p.n < 2 || !p.n.is_power_of_two() {
                return Err(Error::malformed(
                    path,
                    format!("scrypt n={} is not a power of two above 1", p.n),
                ));
            }
            if p.r == 0 || p.p == 0 {
                return Err(Error::malformed(path, "scrypt r and p must be positive"));
            }
            let bytes = 128u128 * u128::from(p.n) * u128::from(p.r) * u128::from(p.p);
            if bytes > u128::from(MAX_SCRYPT_BYTES) || p.p > MAX_SCRYPT_P {
                return Err(Error::ExcessiveWork {
                    path: path.to_owned(),
                    found: format!(
                        "scrypt n={}, r={}, p={} ({} MiB of work)",
                        p.n,
                        p.r,
                        p.p,
                        bytes >> 20
                    ),
                    cap: format!(
                        "128*n*r*p <= {} MiB, p <= {MAX_SCRYPT_P}",
                        MAX_SCRYPT_BYTES >> 20
                    ),
                });
            }
            // n is a power of two below 2^63 here; r and p are small after the cap.
            let log_n = p.n.trailing_zeros() as u8;
            let params = scrypt::Params::new(log_n, p.r, p.p)
                .map_err(|e| Error::malformed(path, format!("scrypt parameters refused: {e}")))?;
            Kdf::Scrypt {
                params,
                salt: salt(path, &p.salt)?,
            }
        }
        "pbkdf2" => {
            let p: Pbkdf2Params = serde_json::from_value(c.kdfparams.clone())
                .map_err(|e| Error::malformed(path, format!("crypto.kdfparams: {e}")))?;
            check_dklen(path, p.dklen)?;
            if p.prf != "hmac-sha256" {
                return Err(Error::Unsupported {
                    path: path.to_owned(),
                    what: format!("pbkdf2 prf {}", p.prf),
                    expected: "hmac-sha256".into(),
                });
            }
            if p.c == 0 {
                return Err(Error::malformed(path, "pbkdf2 c must be positive"));
            }
            if p.c > MAX_PBKDF2_C {
                return Err(Error::ExcessiveWork {
                    path: path.to_owned(),
                    found: format!("pbkdf2 c={}", p.c),
                    cap: format!("c <= {MAX_PBKDF2_C}"),
                });
            }
            Kdf::Pbkdf2 {
                c: p.c,
                salt: salt(path, &p.salt)?,
            }
        }
        other => {
            return Err(Error::Unsupported {
                path: path.to_owned(),
                what: format!("kdf {other}"),
                expected: "scrypt or pbkdf2".into(),
            });
        }
    };
    let iv = hex_array::<16>(path, "crypto.cipherparams.iv", &c.cipherparams.iv)?;
    let ciphertext = hex_bytes(path, "crypto.ciphertext", &c.ciphertext)?;
    if ciphertext.is_empty() || ciphertext.len() > 32 {
        return Err(Error::malformed(
            path,
            format!(
                "field `crypto.ciphertext` has {} bytes, expected 1 to 32",
                ciphertext.len()
            ),
        ));
    }
    let mac = hex_array::<32>(path, "crypto.mac", &c.mac)?;
    let address = match &file.address {
        Some(a) => Some(crate::key_info::parse_address_selector(a).ok_or_else(|| {
            Error::malformed(path, format!("field `address` is not an address: '{a}'"))
        })?),
        None => None,
    };
    Ok(ParsedWeb3 {
        kdf,
        iv,
        ciphertext,
        mac,
        address,
    })
}

fn check_dklen(path: &Path, dklen: u32) -> Result<(), Error> {
    if dklen != 32 {
        return Err(Error::Unsupported {
            path: path.to_owned(),
            what: format!("dklen {dklen}"),
            expected: "dklen 32".into(),
        });
    }
    Ok(())
}

fn mac_of(derived: &SecretBytes, ciphertext: &[u8]) -> [u8; 32] {
    let mut body = Zeroizing::new(Vec::with_capacity(16 + ciphertext.len()));
    body.extend_from_slice(&derived.expose_secret()[16..]);
    body.extend_from_slice(ciphertext);
    keccak256(body.as_slice()).0
}

fn apply_ctr(
    path: &Path,
    derived: &SecretBytes,
    iv: &[u8; 16],
    buf: &mut [u8],
) -> Result<(), Error> {
    let mut cipher =
        Aes128Ctr::new_from_slices(&derived.expose_secret()[..16], iv).map_err(|e| {
            Error::Crypto {
                path: path.to_owned(),
                reason: e.to_string(),
            }
        })?;
    cipher.apply_keystream(buf);
    Ok(())
}

impl ParsedWeb3 {
    fn derive(&self, path: &Path, passphrase: &Passphrase) -> Result<SecretBytes, Error> {
        let mut dk = SecretBytes::default();
        let pw = passphrase.expose_secret().as_bytes();
        match &self.kdf {
            Kdf::Scrypt { params, salt } => {
                scrypt::scrypt(pw, salt, params, dk.expose_secret_mut()).map_err(|e| {
                    Error::Crypto {
                        path: path.to_owned(),
                        reason: e.to_string(),
                    }
                })?
            }
            Kdf::Pbkdf2 { c, salt } => {
                pbkdf2::pbkdf2_hmac::<sha2::Sha256>(pw, salt, *c, dk.expose_secret_mut())
            }
        }
        Ok(dk)
    }

    /// Derives, checks the MAC in constant time, decrypts, left-pads short keys and
    /// checks the stored address if there is one.
    pub(crate) fn decrypt(
        &self,
        path: &Path,
        passphrase: &Passphrase,
    ) -> Result<PrivateKeySigner, Error> {
        let dk = self.derive(path, passphrase)?;
        let mac = mac_of(&dk, &self.ciphertext);
        if !bool::from(mac.ct_eq(&self.mac)) {
            return Err(Error::WrongPassphrase {
                path: path.to_owned(),
                source: bridgectl_secret::WrongSecret,
            });
        }
        let mut secret = SecretBytes::default();
        let start = 32 - self.ciphertext.len();
        let out = &mut secret.expose_secret_mut()[start..];
        out.copy_from_slice(&self.ciphertext);
        apply_ctr(path, &dk, &self.iv, out)?;
        let signer = signer_from_secret(path, secret.expose_secret())?;
        if let Some(stored) = self.address
            && stored != signer.address()
        {
            return Err(Error::AddressMismatch {
                path: path.to_owned(),
                stored: stored.to_checksum(None),
                derived: signer.address().to_checksum(None),
            });
        }
        Ok(signer)
    }
}

#[cfg(feature = "fuzzing")]
impl ParsedWeb3 {
    /// The KDF work this file asks for, as parsed (the fuzzer checks it against the caps).
    pub(crate) fn kdf_cost(&self) -> crate::kdf::KdfCost {
        match &self.kdf {
            Kdf::Scrypt { params, .. } => crate::kdf::KdfCost::Scrypt {
                n: params.n(),
                r: params.r(),
                p: params.p(),
            },
            Kdf::Pbkdf2 { c, .. } => crate::kdf::KdfCost::Pbkdf2 { c: *c },
        }
    }

    /// Encrypts `signer` again with this file's own scrypt cost (never a cheaper one);
    /// `None` for PBKDF2, which export does not write.
    pub(crate) fn reencrypt(
        &self,
        signer: &PrivateKeySigner,
        passphrase: &Passphrase,
    ) -> Result<Option<String>, Error> {
        match &self.kdf {
            Kdf::Scrypt { params, .. } => {
                let same = Web3Params {
                    log_n: params.log_n(),
                    r: params.r(),
                    p: params.p(),
                };
                encrypt(signer, passphrase, &same).map(Some)
            }
            Kdf::Pbkdf2 { .. } => Ok(None),
        }
    }
}

/// Writes `signer`'s key as a Web3 v3 file (scrypt, aes-128-ctr, keccak MAC, with the
/// lowercase `address` geth writes).
pub(crate) fn encrypt(
    signer: &PrivateKeySigner,
    passphrase: &Passphrase,
    params: &Web3Params,
) -> Result<String, Error> {
    let path = Path::new("<exported file>");
    let mut salt = [0u8; 32];
    let mut iv = [0u8; 16];
    random(&mut salt)?;
    random(&mut iv)?;
    let sparams =
        scrypt::Params::new(params.log_n, params.r, params.p).map_err(|e| Error::WeakKdf {
            found: format!("{params:?}"),
            reason: e.to_string(),
        })?;
    let mut dk = SecretBytes::default();
    scrypt::scrypt(
        passphrase.expose_secret().as_bytes(),
        &salt,
        &sparams,
        dk.expose_secret_mut(),
    )
    .map_err(|e| Error::Crypto {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let mut buf = Zeroizing::new(<[u8; 32]>::from(signer.to_field_bytes()));
    apply_ctr(path, &dk, &iv, buf.as_mut_slice())?;
    let mac = mac_of(&dk, buf.as_slice());
    let id = uuid::Uuid::new_v4();
    let json = serde_json::json!({
        "address": hex::encode(signer.address()),
        "crypto": {
            "cipher": "aes-128-ctr",
            "cipherparams": { "iv": hex::encode(iv) },
            "ciphertext": hex::encode(buf.as_slice()),
            "kdf": "scrypt",
            "kdfparams": {
                "dklen": 32,
                "n": 1u64 << params.log_n,
                "p": params.p,
                "r": params.r,
                "salt": hex::encode(salt),
            },
            "mac": hex::encode(mac),
        },
        "id": id.hyphenated().to_string(),
        "version": 3,
    });
    serde_json::to_string_pretty(&json).map_err(|e| Error::malformed(path, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PBKDF2_VECTOR: &str = r#"{"crypto":{"cipher":"aes-128-ctr","cipherparams":{"iv":"6087dab2f9fdbbfaddc31a909735c1e6"},"ciphertext":"5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46","kdf":"pbkdf2","kdfparams":{"c":262144,"dklen":32,"prf":"hmac-sha256","salt":"ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd"},"mac":"517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2"},"id":"3198bc9c-6672-5ab3-d995-4942343ae5b6","version":3}"#;

    fn parsed(json: &str) -> ParsedWeb3 {
        parse(Path::new("v"), serde_json::from_str(json).expect("json")).expect("parse")
    }

    #[test]
    fn pbkdf2_intermediates() {
        let p = parsed(PBKDF2_VECTOR);
        let dk = p
            .derive(Path::new("v"), &Passphrase::new("testpassword"))
            .expect("derive");
        assert_eq!(
            hex::encode(dk.expose_secret()),
            "f06d69cdc7da0faffb1008270bca38f5e31891a3a773950e6d0fea48a7188551"
        );
        let signer = p
            .decrypt(Path::new("v"), &Passphrase::new("testpassword"))
            .expect("decrypt");
        assert_eq!(
            hex::encode(signer.to_bytes()),
            "7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d"
        );
        assert_eq!(
            signer.address().to_checksum(None),
            "0x008AeEda4D805471dF9b2A5B0f38A0C3bCBA786b"
        );
    }

    #[test]
    fn wrong_password_is_a_mac_failure() {
        let err = parsed(PBKDF2_VECTOR)
            .decrypt(Path::new("v"), &Passphrase::new("nope"))
            .expect_err("wrong password");
        assert_eq!(err.kind(), "wrong_passphrase");
    }

    /// The ethereum.org scrypt vector's published values only appear with the salt as
    /// ASCII; with hex-decoded salt scrypt gives b4130dc8… (test-vectors.md §3.1).
    #[test]
    fn scrypt_known_answer_for_ethereum_org_parameters() {
        let salt = hex::decode("25710c2ccd7c610b24d068af83b959b7a0e5f40641f0c82daeb1345766191034")
            .expect("hex");
        let params = scrypt::Params::new(18, 8, 1).expect("params");
        let mut out = [0u8; 32];
        scrypt::scrypt(b"testpassword", &salt, &params, &mut out).expect("scrypt");
        assert_eq!(
            hex::encode(out),
            "b4130dc81619f55f01a84b16c68f54fc0a166a2ca5903d9b24d2262dbd0420ec"
        );
    }

    #[test]
    fn export_round_trip_with_capital_crypto() {
        let signer =
            PrivateKeySigner::from_bytes(&alloy_primitives::B256::repeat_byte(0x46)).expect("key");
        let pass = Passphrase::new("x");
        let json = encrypt(&signer, &pass, &Web3Params::insecure_for_tests()).expect("export");
        let v: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert_eq!(v["address"], "9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f");
        assert_eq!(v["crypto"]["kdfparams"]["n"], 1024);
        let back = parsed(&json)
            .decrypt(Path::new("e"), &pass)
            .expect("decrypt");
        assert_eq!(back.to_bytes(), signer.to_bytes());
        let capital = json.replace("\"crypto\"", "\"Crypto\"");
        let back = parsed(&capital)
            .decrypt(Path::new("e"), &pass)
            .expect("decrypt Crypto");
        assert_eq!(back.address(), signer.address());
    }

    #[test]
    fn caps_refuse_before_deriving() {
        let huge_n = PBKDF2_VECTOR
            .replace("\"kdf\":\"pbkdf2\"", "\"kdf\":\"scrypt\"")
            .replace("\"c\":262144,", "\"n\":1073741824,\"r\":8,\"p\":1,")
            .replace(",\"prf\":\"hmac-sha256\"", "");
        let err = parse(Path::new("h"), serde_json::from_str(&huge_n).expect("json"))
            .err()
            .expect("refused");
        assert_eq!(err.kind(), "excessive_work", "{err}");
        let huge_c = PBKDF2_VECTOR.replace("\"c\":262144", "\"c\":4000000000");
        let err = parse(Path::new("h"), serde_json::from_str(&huge_c).expect("json"))
            .err()
            .expect("refused");
        assert_eq!(err.kind(), "excessive_work", "{err}");
        // Overflowing products must not wrap into a small number.
        let wrap = huge_n.replace("\"r\":8,\"p\":1", "\"r\":4294967295,\"p\":4294967295");
        let err = parse(Path::new("h"), serde_json::from_str(&wrap).expect("json"))
            .err()
            .expect("refused");
        assert_eq!(err.kind(), "excessive_work", "{err}");
    }

    /// The vector's file edited by `edit`, parsed (nothing is derived): `Ok(())` or the
    /// error's kind and message.
    fn parse_edited(edit: impl FnOnce(&mut serde_json::Value)) -> Result<(), (String, String)> {
        let mut v: serde_json::Value = serde_json::from_str(PBKDF2_VECTOR).expect("json");
        edit(&mut v);
        parse(Path::new("s"), v)
            .map(drop)
            .map_err(|e| (e.kind().to_owned(), e.to_string()))
    }

    /// The vector's file with scrypt parameters `n`, `r`, `p` and a salt of `salt_len`
    /// bytes, parsed.
    fn scrypt_parse(n: u64, r: u32, p: u32, salt_len: usize) -> Result<(), (String, String)> {
        parse_edited(|v| {
            v["crypto"]["kdf"] = "scrypt".into();
            v["crypto"]["kdfparams"] = serde_json::json!({
                "n": n, "r": r, "p": p, "dklen": 32, "salt": "ab".repeat(salt_len),
            });
        })
    }

    fn refused(r: Result<(), (String, String)>, kind: &str, text: &str) {
        let (k, m) = r.expect_err("refused");
        assert_eq!(k, kind, "{m}");
        assert!(m.contains(text), "{m}");
    }

    /// Every bound is exact: its own value is accepted, one more is refused, and a
    /// parameter scrypt cannot use is refused by our check (with its message), not
    /// left to the scrypt crate.
    #[test]
    fn scrypt_and_salt_bounds_are_exact() {
        // 128 * n * r * p at the cap (2^30 bytes) is allowed, twice that is not (by n or
        // by p).
        assert_eq!(scrypt_parse(1 << 20, 8, 1, 32), Ok(()));
        for (n, p) in [(1 << 21, 1), (1 << 20, 2)] {
            refused(scrypt_parse(n, 8, p, 32), "excessive_work", "MiB of work");
        }
        // p at its cap is allowed, one more is not, however cheap.
        assert_eq!(scrypt_parse(2, 1, MAX_SCRYPT_P, 32), Ok(()));
        refused(
            scrypt_parse(2, 1, MAX_SCRYPT_P + 1, 32),
            "excessive_work",
            "p <=",
        );
        // n must be a power of two above 1; r and p positive.
        for n in [0, 1, 3, 1000] {
            refused(scrypt_parse(n, 8, 1, 32), "malformed", "not a power of two");
        }
        for (r, p) in [(0, 1), (1, 0), (0, 0)] {
            refused(
                scrypt_parse(1024, r, p, 32),
                "malformed",
                "must be positive",
            );
        }
        // The salt: at most 1024 bytes.
        assert_eq!(scrypt_parse(1024, 8, 1, MAX_SALT), Ok(()));
        refused(
            scrypt_parse(1024, 8, 1, MAX_SALT + 1),
            "malformed",
            "at most 1024",
        );
    }

    /// PBKDF2's iteration cap, the ciphertext's length and `dklen` are exact too.
    #[test]
    fn pbkdf2_ciphertext_and_dklen_bounds_are_exact() {
        let pbkdf2_c = |c: u32| parse_edited(|v| v["crypto"]["kdfparams"]["c"] = c.into());
        assert_eq!(pbkdf2_c(MAX_PBKDF2_C), Ok(()));
        refused(pbkdf2_c(MAX_PBKDF2_C + 1), "excessive_work", "pbkdf2 c=");
        refused(pbkdf2_c(0), "malformed", "must be positive");
        let ciphertext =
            |bytes: usize| parse_edited(|v| v["crypto"]["ciphertext"] = "ab".repeat(bytes).into());
        assert_eq!(ciphertext(1), Ok(()));
        for bytes in [0, 33] {
            refused(ciphertext(bytes), "malformed", "expected 1 to 32");
        }
        refused(
            parse_edited(|v| v["crypto"]["kdfparams"]["dklen"] = 16.into()),
            "unsupported",
            "dklen 16",
        );
        let scrypt_dklen = parse_edited(|v| {
            v["crypto"]["kdf"] = "scrypt".into();
            v["crypto"]["kdfparams"] =
                serde_json::json!({"n": 2, "r": 1, "p": 1, "dklen": 64, "salt": "ab"});
        });
        refused(scrypt_dklen, "unsupported", "dklen 64");
    }
}
