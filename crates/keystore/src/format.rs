//! Key file format version 1 (see the crate README for the layout).
//!
//! Argon2id -> 256-bit key -> AES-256-GCM over the 32-byte secret. Every plaintext field
//! except the ciphertext is bound to it as associated data, in a canonical encoding
//! rebuilt from the parsed fields, so editing any of them makes decryption fail.

use bridgectl_secret::ExposeSecret;
use std::path::Path;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use alloy_primitives::Address;
use alloy_signer_local::PrivateKeySigner;
use serde::{Deserialize, Serialize};

use crate::kdf::KdfParams;
use crate::secret::Passphrase;
use crate::{Error, signer_from_secret};

/// The `format` field of our files.
pub const FORMAT_NAME: &str = "bridgectl-key";
/// The format version this build writes. Every version ever written stays readable.
pub const CURRENT_VERSION: u32 = 1;
/// Versions this build reads.
pub const READABLE_VERSIONS: &[u32] = &[1];
/// Prefix of the associated data, so a v1 header can never be mistaken for another
/// structure's AAD.
const AAD_PREFIX: &[u8] = b"bridgectl-key/v1\n";
const SALT_LEN: usize = 16;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// The file as it appears on disk. Field order here is the order in the file and in
/// the associated data.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileV1 {
    pub format: String,
    pub version: u32,
    pub address: String,
    pub label: String,
    pub id: String,
    pub created_at: String,
    pub kdf: KdfSection,
    pub cipher: CipherSection,
    pub ciphertext: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KdfSection {
    pub algorithm: String,
    pub version: u32,
    pub m_kib: u32,
    pub t: u32,
    pub p: u32,
    pub salt: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CipherSection {
    pub algorithm: String,
    pub nonce: String,
}

/// Everything but the ciphertext, borrowed, in file order: the associated data.
#[derive(Serialize)]
struct Header<'a> {
    format: &'a str,
    version: u32,
    address: &'a str,
    label: &'a str,
    id: &'a str,
    created_at: &'a str,
    kdf: &'a KdfSection,
    cipher: &'a CipherSection,
}

/// Plaintext metadata of a key, validated.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub address: Address,
    pub label: String,
    pub id: uuid::Uuid,
    pub created_at: String,
}

/// A parsed and checked v1 file, ready to decrypt.
#[derive(Debug, Clone)]
pub(crate) struct ParsedV1 {
    pub file: FileV1,
    pub meta: Meta,
    pub kdf: KdfParams,
    salt: [u8; SALT_LEN],
    nonce: [u8; NONCE_LEN],
    ciphertext: Vec<u8>,
}

impl FileV1 {
    fn aad(&self) -> Result<Vec<u8>, serde_json::Error> {
        let header = Header {
            format: &self.format,
            version: self.version,
            address: &self.address,
            label: &self.label,
            id: &self.id,
            created_at: &self.created_at,
            kdf: &self.kdf,
            cipher: &self.cipher,
        };
        let mut aad = AAD_PREFIX.to_vec();
        serde_json::to_writer(&mut aad, &header)?;
        Ok(aad)
    }
}

fn hex_field<const N: usize>(path: &Path, field: &str, value: &str) -> Result<[u8; N], Error> {
    let bytes = hex::decode(value)
        .map_err(|e| Error::malformed(path, format!("field `{field}` is not hex: {e}")))?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        Error::malformed(
            path,
            format!("field `{field}` has {} bytes, expected {N}", b.len()),
        )
    })
}

/// Checks a label: it names the file, so it is restricted to a safe alphabet, and it
/// must not look like an address or id (selectors would become ambiguous).
/// The number of hex digits of `text` when it is all hex (after an optional `0x`).
fn hex_digits(text: &str) -> Option<usize> {
    let hex = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    hex.bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then_some(hex.len())
}

/// Whether `text` could be a private key or a mnemonic: 32 or more hex digits that are
/// not an address's 40, or three or more words. Such text is never echoed in an error.
pub(crate) fn may_be_secret(text: &str) -> bool {
    hex_digits(text).is_some_and(|n| n >= 32 && n != 40) || text.split_whitespace().count() >= 3
}

pub(crate) fn check_label(label: &str) -> Result<(), Error> {
    // A private key or a mnemonic pasted where the label goes must never be echoed in
    // an error, nor end up in a file name: this check comes first, and the other
    // refusals quote the label only when it passed the alphabet check.
    if may_be_secret(label) || hex_digits(label) == Some(40) {
        return Err(Error::InvalidLabel {
            label: "<redacted>".into(),
            reason: "looks like a private key or a mnemonic: secrets are read from stdin or a \
                     prompt, never from arguments"
                .into(),
        });
    }
    let safe_alphabet = label
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    let bad = |reason: &str| Error::InvalidLabel {
        label: if safe_alphabet && label.len() <= 64 {
            label.to_owned()
        } else {
            format!("<{} characters>", label.chars().count())
        },
        reason: reason.to_owned(),
    };
    if label.is_empty() || label.len() > 64 {
        return Err(bad("must be 1 to 64 characters"));
    }
    if !safe_alphabet {
        return Err(bad("only letters, digits, '-', '_' and '.' are allowed"));
    }
    if label.starts_with(['.', '-']) {
        return Err(bad("must not start with '.' or '-'"));
    }
    if crate::key_info::parse_address_selector(label).is_some()
        || uuid::Uuid::parse_str(label).is_ok()
    {
        return Err(bad("must not look like an address or a key id"));
    }
    Ok(())
}

/// Parses a v1 file and checks every field and the KDF cap. Nothing is derived yet.
pub(crate) fn parse(path: &Path, value: serde_json::Value) -> Result<ParsedV1, Error> {
    let file: FileV1 =
        serde_json::from_value(value).map_err(|e| Error::malformed(path, e.to_string()))?;
    if file.format != FORMAT_NAME {
        return Err(Error::malformed(
            path,
            format!(
                "field `format` is '{}', expected '{FORMAT_NAME}'",
                file.format
            ),
        ));
    }
    if file.version != 1 {
        return Err(Error::UnsupportedVersion {
            path: path.to_owned(),
            found: file.version.to_string(),
            supported: "1".into(),
        });
    }
    let address = Address::parse_checksummed(&file.address, None).map_err(|e| {
        Error::malformed(
            path,
            format!("field `address` is not an EIP-55 address: {e}"),
        )
    })?;
    check_label(&file.label).map_err(|e| Error::malformed(path, format!("field `label`: {e}")))?;
    let id = uuid::Uuid::parse_str(&file.id)
        .map_err(|e| Error::malformed(path, format!("field `id` is not a uuid: {e}")))?;
    time::OffsetDateTime::parse(
        &file.created_at,
        &time::format_description::well_known::Rfc3339,
    )
    .map_err(|e| Error::malformed(path, format!("field `created_at` is not RFC 3339: {e}")))?;
    if file.kdf.algorithm != "argon2id" || file.kdf.version != 0x13 {
        return Err(Error::Unsupported {
            path: path.to_owned(),
            what: format!("kdf {} version {}", file.kdf.algorithm, file.kdf.version),
            expected: "argon2id version 19".into(),
        });
    }
    let kdf = KdfParams::from_file(path, file.kdf.m_kib, file.kdf.t, file.kdf.p)?;
    let salt = hex_field::<SALT_LEN>(path, "kdf.salt", &file.kdf.salt)?;
    if file.cipher.algorithm != "aes-256-gcm" {
        return Err(Error::Unsupported {
            path: path.to_owned(),
            what: format!("cipher {}", file.cipher.algorithm),
            expected: "aes-256-gcm".into(),
        });
    }
    let nonce = hex_field::<NONCE_LEN>(path, "cipher.nonce", &file.cipher.nonce)?;
    let ciphertext = hex_field::<{ 32 + TAG_LEN }>(path, "ciphertext", &file.ciphertext)?.to_vec();
    let meta = Meta {
        address,
        label: file.label.clone(),
        id,
        created_at: file.created_at.clone(),
    };
    Ok(ParsedV1 {
        file,
        meta,
        kdf,
        salt,
        nonce,
        ciphertext,
    })
}

impl ParsedV1 {
    /// Derives the key, decrypts, and checks the address against the stored one.
    pub(crate) fn decrypt(
        &self,
        path: &Path,
        passphrase: &Passphrase,
    ) -> Result<PrivateKeySigner, Error> {
        let key = self.kdf.derive(path, passphrase, &self.salt)?;
        let aad = self
            .file
            .aad()
            .map_err(|e| Error::malformed(path, e.to_string()))?;
        let cipher = Aes256Gcm::new_from_slice(key.expose_secret()).map_err(|e| Error::Crypto {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let nonce = Nonce::from(self.nonce);
        let plain = zeroize::Zeroizing::new(
            cipher
                .decrypt(
                    &nonce,
                    Payload {
                        msg: &self.ciphertext,
                        aad: &aad,
                    },
                )
                .map_err(|_| Error::WrongPassphrase {
                    path: path.to_owned(),
                    source: bridgectl_secret::WrongSecret,
                })?,
        );
        let signer = signer_from_secret(path, &plain)?;
        if signer.address() != self.meta.address {
            return Err(Error::AddressMismatch {
                path: path.to_owned(),
                stored: self.meta.address.to_checksum(None),
                derived: signer.address().to_checksum(None),
            });
        }
        Ok(signer)
    }
}

/// Encrypts `signer`'s key into a new v1 file with fresh salt and nonce.
pub(crate) fn encrypt(
    meta: &Meta,
    signer: &PrivateKeySigner,
    passphrase: &Passphrase,
    kdf: &KdfParams,
) -> Result<Vec<u8>, Error> {
    let path = Path::new("<new key file>");
    let mut salt = [0u8; SALT_LEN];
    let mut nonce = [0u8; NONCE_LEN];
    random(&mut salt)?;
    random(&mut nonce)?;
    let mut file = FileV1 {
        format: FORMAT_NAME.into(),
        version: CURRENT_VERSION,
        address: meta.address.to_checksum(None),
        label: meta.label.clone(),
        id: meta.id.hyphenated().to_string(),
        created_at: meta.created_at.clone(),
        kdf: KdfSection {
            algorithm: "argon2id".into(),
            version: 0x13,
            m_kib: kdf.m_kib(),
            t: kdf.t(),
            p: kdf.p(),
            salt: hex::encode(salt),
        },
        cipher: CipherSection {
            algorithm: "aes-256-gcm".into(),
            nonce: hex::encode(nonce),
        },
        ciphertext: String::new(),
    };
    let aad = file
        .aad()
        .map_err(|e| Error::malformed(path, e.to_string()))?;
    let key = kdf.derive(path, passphrase, &salt)?;
    let cipher = Aes256Gcm::new_from_slice(key.expose_secret()).map_err(|e| Error::Crypto {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let secret = zeroize::Zeroizing::new(<[u8; 32]>::from(signer.to_field_bytes()));
    let ciphertext = cipher
        .encrypt(
            &Nonce::from(nonce),
            Payload {
                msg: secret.as_slice(),
                aad: &aad,
            },
        )
        .map_err(|e| Error::Crypto {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    file.ciphertext = hex::encode(ciphertext);
    let mut bytes =
        serde_json::to_vec_pretty(&file).map_err(|e| Error::malformed(path, e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Fills `buf` from the OS random source.
pub(crate) fn random(buf: &mut [u8]) -> Result<(), Error> {
    getrandom::fill(buf).map_err(|e| {
        bridgectl_local::PathError::on("cannot read random bytes from the OS for", "<random>")(
            std::io::Error::other(e.to_string()),
        )
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Meta, PrivateKeySigner) {
        let signer = PrivateKeySigner::from_bytes(&alloy_primitives::B256::repeat_byte(0x46))
            .expect("valid key");
        let meta = Meta {
            address: signer.address(),
            label: "ops".into(),
            id: uuid::Uuid::nil(),
            created_at: "2025-01-01T00:00:00Z".into(),
        };
        (meta, signer)
    }

    fn value(bytes: &[u8]) -> serde_json::Value {
        serde_json::from_slice(bytes).expect("json")
    }

    #[test]
    fn round_trip_and_fresh_salt_nonce() {
        let (meta, signer) = sample();
        let pass = Passphrase::new("pw");
        let kdf = KdfParams::insecure_for_tests();
        let a = encrypt(&meta, &signer, &pass, &kdf).expect("encrypt");
        let b = encrypt(&meta, &signer, &pass, &kdf).expect("encrypt");
        let (fa, fb) = (value(&a), value(&b));
        assert_ne!(fa["kdf"]["salt"], fb["kdf"]["salt"]);
        assert_ne!(fa["cipher"]["nonce"], fb["cipher"]["nonce"]);
        let parsed = parse(Path::new("a"), fa).expect("parse");
        let back = parsed.decrypt(Path::new("a"), &pass).expect("decrypt");
        assert_eq!(back.to_bytes(), signer.to_bytes());
        assert_eq!(
            parsed.file.address,
            "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
        );
    }

    #[test]
    fn every_header_field_is_bound() {
        let (meta, signer) = sample();
        let pass = Passphrase::new("pw");
        let bytes = encrypt(&meta, &signer, &pass, &KdfParams::insecure_for_tests()).expect("enc");
        // Changes that still parse: each must fail decryption, not slip through.
        type Edit = fn(&mut serde_json::Value);
        let edits: &[(&str, Edit)] = &[
            ("label", |v| v["label"] = "other".into()),
            ("id", |v| {
                v["id"] = "00000000-0000-0000-0000-000000000001".into()
            }),
            ("created_at", |v| {
                v["created_at"] = "2024-01-01T00:00:00Z".into()
            }),
            ("address", |v| {
                v["address"] = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23".into()
            }),
            ("kdf.m_kib", |v| v["kdf"]["m_kib"] = 128.into()),
            ("kdf.t", |v| v["kdf"]["t"] = 2.into()),
            ("kdf.salt", |v| v["kdf"]["salt"] = "00".repeat(16).into()),
            ("cipher.nonce", |v| {
                v["cipher"]["nonce"] = "00".repeat(12).into()
            }),
        ];
        for (field, edit) in edits {
            let mut v = value(&bytes);
            edit(&mut v);
            let parsed = parse(Path::new("t"), v).expect("still parses");
            let err = parsed
                .decrypt(Path::new("t"), &pass)
                .expect_err("tampered field must not decrypt");
            assert_eq!(err.kind(), "wrong_passphrase", "{field}: {err}");
        }
    }

    /// A file whose key is not the key of the address it names, made by someone who knew
    /// the passphrase (so every field is bound and the decryption succeeds): the decrypted
    /// key's address is compared with the file's, and the file is refused, naming both.
    #[test]
    fn a_key_under_another_address_is_refused_after_decryption() {
        let (mut meta, signer) = sample();
        let claimed: Address = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
            .parse()
            .expect("address");
        meta.address = claimed;
        let pass = Passphrase::new("pw");
        let bytes = encrypt(&meta, &signer, &pass, &KdfParams::insecure_for_tests()).expect("enc");
        let parsed = parse(Path::new("t"), value(&bytes)).expect("parses");
        match parsed.decrypt(Path::new("t"), &pass) {
            Err(Error::AddressMismatch {
                stored, derived, ..
            }) => {
                assert_eq!(stored, claimed.to_checksum(None));
                assert_eq!(derived, signer.address().to_checksum(None));
            }
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(s) => panic!("unlocked {} from a file naming {claimed}", s.address()),
        }
    }

    #[test]
    fn aad_is_stable() {
        // The canonical header encoding is part of the format: pin it.
        let (meta, signer) = sample();
        let bytes = encrypt(
            &meta,
            &signer,
            &Passphrase::new("pw"),
            &KdfParams::insecure_for_tests(),
        )
        .expect("enc");
        let mut v = value(&bytes);
        v["kdf"]["salt"] = "11".repeat(16).into();
        v["cipher"]["nonce"] = "22".repeat(12).into();
        let file: FileV1 = serde_json::from_value(v).expect("file");
        let aad = String::from_utf8(file.aad().expect("aad")).expect("utf8");
        assert_eq!(
            aad,
            format!(
                "bridgectl-key/v1\n{{\"format\":\"bridgectl-key\",\"version\":1,\"address\":\"0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F\",\"label\":\"ops\",\"id\":\"00000000-0000-0000-0000-000000000000\",\"created_at\":\"2025-01-01T00:00:00Z\",\"kdf\":{{\"algorithm\":\"argon2id\",\"version\":19,\"m_kib\":64,\"t\":1,\"p\":1,\"salt\":\"{}\"}},\"cipher\":{{\"algorithm\":\"aes-256-gcm\",\"nonce\":\"{}\"}}}}",
                "11".repeat(16),
                "22".repeat(12)
            )
        );
    }

    #[test]
    fn labels() {
        for ok in ["ops", "a", "key-1", "Cold_Wallet.2"] {
            check_label(ok).expect(ok);
        }
        for bad in [
            "",
            ".hidden",
            "-x",
            "../etc",
            "a/b",
            "a b",
            "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F",
            "00000000-0000-0000-0000-000000000000",
        ] {
            assert!(check_label(bad).is_err(), "{bad:?} accepted");
        }
        let key = "46".repeat(32);
        let err = check_label(&key).expect_err("a private key as label");
        assert!(!err.to_string().contains(&key), "key echoed: {err}");
    }
}
