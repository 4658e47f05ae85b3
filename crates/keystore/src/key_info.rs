//! What describes a key file without its passphrase: [`KeyInfo`], what `list` and
//! `show` print, and the address form of a selector that names a key.

use std::path::PathBuf;

use alloy_primitives::Address;
use serde::Serialize;

/// What `list` and `show` print: the plaintext metadata of a key file. Reading it
/// needs no passphrase; every field is authenticated when the key is unlocked.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyInfo {
    /// The key's address (EIP-55 in JSON).
    #[serde(serialize_with = "checksummed")]
    pub address: Address,
    /// The label, unique in the keystore; it also names the file.
    pub label: String,
    /// A random id, stable across passphrase changes.
    pub id: uuid::Uuid,
    /// When the key entered the keystore (RFC 3339, UTC).
    pub created_at: String,
    /// The key file.
    pub path: PathBuf,
    /// The file's format version.
    pub version: u32,
    /// The KDF the file is encrypted with.
    pub kdf: KdfSummary,
}

/// The KDF of a key file, for display.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct KdfSummary {
    /// Always `argon2id` in format version 1.
    pub algorithm: String,
    /// Memory in KiB.
    pub m_kib: u32,
    /// Passes.
    pub t: u32,
    /// Lanes.
    pub p: u32,
}

fn checksummed<S: serde::Serializer>(address: &Address, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&address.to_checksum(None))
}

/// Parses an address selector: 40 hex digits, any case, with or without `0x`.
pub(crate) fn parse_address_selector(s: &str) -> Option<Address> {
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut bytes = [0u8; 20];
    hex::decode_to_slice(hex, &mut bytes).ok()?;
    Some(Address::from(bytes))
}
