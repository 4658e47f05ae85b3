//! EIP-4527's Ethereum types: `eth-sign-request` (an unsigned transaction for an
//! offline signer) and `eth-signature` (its answer), as Keystone, AirGap Vault and
//! MetaMask's QR keyring write them.
//!
//! ```text
//! eth-sign-request = {
//!     ? 1: #6.37(bytes .size 16),   ; request-id (uuid)
//!       2: bytes,                   ; sign-data: for type 1 the unsigned legacy
//!                                   ;   transaction's EIP-155 preimage
//!       3: uint,                    ; data-type: 1 legacy transaction, 2 typed data,
//!                                   ;   3 personal message, 4 typed transaction
//!     ? 4: uint,                    ; chain-id (default 1)
//!       5: #6.304(crypto-keypath),  ; derivation-path (40304 accepted too)
//!     ? 6: bytes .size 20,          ; address of the signing key
//!     ? 7: text,                    ; origin (the requesting wallet)
//! }
//! eth-signature = {
//!       1: #6.37(bytes .size 16),   ; request-id of the request it answers
//!       2: bytes,                   ; r (32) || s (32) || v (big-endian)
//!     ? 3: text,                    ; origin (the signer)
//! }
//! ```
//!
//! bridgectl signs legacy EIP-155 transactions only (data type 1), finds the key by
//! `address` (its keys have no derivation path to look up), and answers with `v` as
//! the signed transaction carries it: `35 + 2 * chainId + parity`, one byte up to
//! chain 109 (65 bytes in all, as the EIP sizes it), more above (what Keystone and
//! MetaMask's QR keyring do for such chains).

use alloy_primitives::{Address, U256};
use bridgectl_tx::RawTx;
use bridgectl_tx::request::{InputKind, SignInput, request_hash};
use minicbor::data::Tag;

use crate::cbor::{Reader, write};
use crate::error::Error;
use crate::parts::{Ur, UrType};

/// EIP-4527 data type 1: a legacy transaction's unsigned RLP.
pub const DATA_TYPE_LEGACY: u64 = 1;

const KEYPATH_TAGS: [u64; 2] = [304, 40304];
const UUID_TAG: u64 = 37;

/// One step of a derivation path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathComponent {
    /// The child index; `None` for a wildcard, `Some((low, high))` ranges are kept as
    /// their ends.
    pub index: PathIndex,
    /// Hardened derivation.
    pub hardened: bool,
}

/// A path component's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathIndex {
    /// One child index (below 2^31).
    Child(u32),
    /// A range `[low, high]`.
    Range(u32, u32),
    /// Any child (`[]`).
    Wildcard,
}

/// BCR-2020-007 `crypto-keypath`: `{1: components, ? 2: source-fingerprint, ? 3: depth}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPath {
    /// The steps, from the source key.
    pub components: Vec<PathComponent>,
    /// The fingerprint of the key the path starts at.
    pub source_fingerprint: Option<u32>,
    /// The depth of the key.
    pub depth: Option<u8>,
}

impl KeyPath {
    /// The path as people write it (`m/44'/60'/0'/0/0`).
    pub fn display(&self) -> String {
        let mut s = String::from("m");
        for c in &self.components {
            match c.index {
                PathIndex::Child(i) => s.push_str(&format!("/{i}")),
                PathIndex::Range(a, b) => s.push_str(&format!("/<{a}-{b}>")),
                PathIndex::Wildcard => s.push_str("/*"),
            }
            if c.hardened {
                s.push('\'');
            }
        }
        s
    }

    fn read(r: &mut Reader<'_>) -> Result<KeyPath, Error> {
        let mut path = KeyPath::default();
        let mut has_components = false;
        r.map("derivation-path", &[1, 2, 3], |r, key| {
            match key {
                1 => {
                    has_components = true;
                    let n = match r.d.array() {
                        Ok(Some(n)) => n,
                        _ => return Err(r.error("derivation-path components: not a definite array")),
                    };
                    if n % 2 != 0 || n > 2 * 32 {
                        return Err(r.error(format!(
                            "derivation-path components: {n} items, not index/hardened pairs of a path of at most 32 steps"
                        )));
                    }
                    for _ in 0..n / 2 {
                        let index = match r.d.datatype() {
                            Ok(minicbor::data::Type::Array) => {
                                match r.d.array() {
                                    Ok(Some(0)) => PathIndex::Wildcard,
                                    Ok(Some(2)) => {
                                        let a = index31(r)?;
                                        let b = index31(r)?;
                                        if a >= b {
                                            return Err(r.error("derivation-path: a range whose low end is not below its high end"));
                                        }
                                        PathIndex::Range(a, b)
                                    }
                                    _ => return Err(r.error("derivation-path: a range of other than 0 or 2 indexes")),
                                }
                            }
                            _ => PathIndex::Child(index31(r)?),
                        };
                        let hardened = r.bool("derivation-path is-hardened")?;
                        path.components.push(PathComponent { index, hardened });
                    }
                }
                2 => {
                    let f = r.u64("derivation-path source-fingerprint")?;
                    path.source_fingerprint = Some(
                        u32::try_from(f)
                            .ok()
                            .filter(|f| *f != 0)
                            .ok_or_else(|| r.error("derivation-path source-fingerprint: not a non-zero uint32"))?,
                    );
                }
                _ => {
                    let d = r.u64("derivation-path depth")?;
                    path.depth = Some(
                        u8::try_from(d).map_err(|_| r.error("derivation-path depth: not a uint8"))?,
                    );
                }
            }
            Ok(())
        })?;
        if !has_components {
            return Err(r.error("derivation-path: missing its components (key 1)"));
        }
        Ok(path)
    }

    fn write(
        &self,
        e: &mut minicbor::Encoder<&mut Vec<u8>>,
    ) -> Result<(), minicbor::encode::Error<std::convert::Infallible>> {
        let n = 1 + u64::from(self.source_fingerprint.is_some()) + u64::from(self.depth.is_some());
        e.map(n)?.u8(1)?.array(2 * self.components.len() as u64)?;
        for c in &self.components {
            match c.index {
                PathIndex::Child(i) => e.u32(i)?,
                PathIndex::Range(a, b) => e.array(2)?.u32(a)?.u32(b)?,
                PathIndex::Wildcard => e.array(0)?,
            };
            e.bool(c.hardened)?;
        }
        if let Some(f) = self.source_fingerprint {
            e.u8(2)?.u32(f)?;
        }
        if let Some(d) = self.depth {
            e.u8(3)?.u8(d)?;
        }
        Ok(())
    }
}

fn index31(r: &mut Reader<'_>) -> Result<u32, Error> {
    let i = r.u64("derivation-path index")?;
    u32::try_from(i)
        .ok()
        .filter(|i| *i < 0x8000_0000)
        .ok_or_else(|| r.error(format!("derivation-path index {i} is not below 2^31")))
}

/// An EIP-4527 `eth-sign-request`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EthSignRequest {
    /// The request's id, which its answer repeats.
    pub request_id: Option<[u8; 16]>,
    /// What to sign (for data type 1, the unsigned legacy transaction's EIP-155
    /// preimage).
    pub sign_data: Vec<u8>,
    /// What `sign_data` is (1 legacy transaction, 2 typed data, 3 personal message,
    /// 4 typed transaction).
    pub data_type: u64,
    /// The chain id.
    pub chain_id: u64,
    /// Where the key is in its wallet (not used by bridgectl, whose keys are found by
    /// address).
    pub derivation_path: KeyPath,
    /// The address of the key asked to sign.
    pub address: Option<Address>,
    /// Which wallet asked (a claim, shown escaped).
    pub origin: Option<String>,
}

impl EthSignRequest {
    /// The request to sign `tx` (a legacy EIP-155 transaction), with `request_id`: the
    /// sign data is its preimage, the address its sender. bridgectl's keys have no
    /// derivation path: the path is empty, with the first four bytes of the address as
    /// the source fingerprint the format asks an empty path to have (or 1 when they are
    /// zero); a signer finds the key by `address`.
    pub fn legacy(tx: &RawTx, request_id: [u8; 16], origin: Option<String>) -> EthSignRequest {
        let head = u32::from_be_bytes([tx.from[0], tx.from[1], tx.from[2], tx.from[3]]);
        EthSignRequest {
            request_id: Some(request_id),
            sign_data: bridgectl_tx::preimage::encode(tx),
            data_type: DATA_TYPE_LEGACY,
            chain_id: tx.chain_id,
            derivation_path: KeyPath {
                components: Vec::new(),
                source_fingerprint: Some(head.max(1)),
                depth: None,
            },
            address: Some(tx.from),
            origin,
        }
    }

    /// Reads one from its CBOR, strictly.
    pub fn from_cbor(bytes: &[u8]) -> Result<EthSignRequest, Error> {
        let mut r = Reader::new(bytes, UrType::EthSignRequest.name());
        let (mut request_id, mut sign_data, mut data_type, mut chain_id) = (None, None, None, None);
        let (mut path, mut address, mut origin) = (None, None, None);
        r.map("eth-sign-request", &[1, 2, 3, 4, 5, 6, 7], |r, key| {
            match key {
                1 => request_id = Some(r.uuid("request-id")?),
                2 => sign_data = Some(r.bytes("sign-data")?.to_vec()),
                3 => {
                    let t = r.u64("data-type")?;
                    if !(1..=4).contains(&t) {
                        return Err(r.error(format!("data-type {t}: expected 1, 2, 3 or 4")));
                    }
                    data_type = Some(t);
                }
                4 => chain_id = Some(r.u64("chain-id")?),
                5 => {
                    r.tag("derivation-path", &KEYPATH_TAGS)?;
                    path = Some(KeyPath::read(r)?);
                }
                6 => {
                    let b = r.bytes("address")?;
                    address = Some(Address::try_from(b).map_err(|_| {
                        r.error(format!("address: {} bytes, an address has 20", b.len()))
                    })?);
                }
                _ => origin = Some(r.text("origin")?),
            }
            Ok(())
        })?;
        r.end()?;
        let missing = |field: &str| r.error(format!("missing {field}"));
        Ok(EthSignRequest {
            request_id,
            sign_data: sign_data.ok_or_else(|| missing("sign-data (key 2)"))?,
            data_type: data_type.ok_or_else(|| missing("data-type (key 3)"))?,
            chain_id: chain_id.unwrap_or(1),
            derivation_path: path.ok_or_else(|| missing("derivation-path (key 5)"))?,
            address,
            origin,
        })
    }

    /// Its CBOR, keys in ascending order.
    pub fn to_cbor(&self) -> Vec<u8> {
        write(|e| {
            let n = 4
                + u64::from(self.request_id.is_some())
                + u64::from(self.address.is_some())
                + u64::from(self.origin.is_some());
            e.map(n)?;
            if let Some(id) = &self.request_id {
                e.u8(1)?.tag(Tag::new(UUID_TAG))?.bytes(id)?;
            }
            e.u8(2)?.bytes(&self.sign_data)?;
            e.u8(3)?.u64(self.data_type)?;
            e.u8(4)?.u64(self.chain_id)?;
            e.u8(5)?.tag(Tag::new(KEYPATH_TAGS[0]))?;
            self.derivation_path.write(e)?;
            if let Some(a) = &self.address {
                e.u8(6)?.bytes(a.as_slice())?;
            }
            if let Some(o) = &self.origin {
                e.u8(7)?.str(o)?;
            }
            Ok(())
        })
    }

    /// This request as the UR it travels in.
    pub fn to_ur(&self) -> Ur {
        Ur {
            ur_type: UrType::EthSignRequest,
            cbor: self.to_cbor(),
        }
    }

    /// What `bridgectl sign` checks and signs: the legacy transaction in the sign data,
    /// from `address`, with the request id as its `txId` and the SHA-256 of `cbor` (this
    /// request's exact bytes) as its request hash. No intent: the request carries none,
    /// and the signer's profile is the trust root either way. Refuses every data type
    /// but 1, and a request without an address.
    pub fn sign_input(&self, cbor: &[u8]) -> Result<SignInput, Error> {
        if self.data_type != DATA_TYPE_LEGACY {
            return Err(Error::Refused(format!(
                "eth-sign-request: data-type {} ({}): bridgectl signs legacy EIP-155 \
                 transactions only (data-type 1)",
                self.data_type,
                match self.data_type {
                    2 => "EIP-712 typed data",
                    3 => "a personal message",
                    _ => "a typed transaction",
                }
            )));
        }
        let from = self.address.ok_or_else(|| {
            Error::Refused(
                "eth-sign-request: no address: bridgectl finds the signing key by address \
                 (key 6), not by derivation path"
                    .into(),
            )
        })?;
        let raw_tx = bridgectl_tx::preimage::decode(&self.sign_data, from, self.chain_id)?;
        Ok(SignInput {
            kind: InputKind::EthSignRequest,
            raw_tx,
            intent: None,
            origin: None,
            tx_id: self.request_id.map(uuid_text),
            request_hash: request_hash(cbor),
        })
    }
}

/// A UUID's 16 bytes as its hyphenated text (the form of a bridgectl txId).
pub fn uuid_text(bytes: [u8; 16]) -> String {
    uuid::Uuid::from_bytes(bytes).hyphenated().to_string()
}

/// The 16 bytes of a UUID written as text (a bridgectl txId).
pub fn uuid_bytes(text: &str) -> Result<[u8; 16], Error> {
    uuid::Uuid::try_parse(text)
        .map(|u| *u.as_bytes())
        .map_err(|_| {
            Error::Refused(format!(
                "request id {} is not a UUID: an eth-sign-request names its request by one",
                crate::error::shorten(text)
            ))
        })
}

/// An EIP-4527 `eth-signature`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EthSignature {
    /// The id of the request it answers.
    pub request_id: [u8; 16],
    /// `r` (32 bytes) || `s` (32 bytes) || `v` (big-endian, 1 to 8 bytes).
    pub signature: Vec<u8>,
    /// Which signer answered (a claim).
    pub origin: Option<String>,
}

impl EthSignature {
    /// The answer to request `request_id` with the signed legacy transaction `raw`:
    /// its `r`, `s` and `v` as the transaction carries them.
    pub fn for_signed(
        request_id: [u8; 16],
        raw: &[u8],
        origin: Option<String>,
    ) -> Result<EthSignature, Error> {
        let decoded = bridgectl_tx::decode::decode_signed(raw)?;
        let mut signature = Vec::with_capacity(72);
        signature.extend_from_slice(&decoded.r.to_be_bytes::<32>());
        signature.extend_from_slice(&decoded.s.to_be_bytes::<32>());
        let v = decoded.v.to_be_bytes();
        let first = v.iter().position(|b| *b != 0).unwrap_or(v.len() - 1);
        signature.extend_from_slice(&v[first..]);
        Ok(EthSignature {
            request_id,
            signature,
            origin,
        })
    }

    /// `r`, `s` and `v`.
    pub fn rsv(&self) -> (U256, U256, u128) {
        let r = U256::from_be_slice(&self.signature[..32]);
        let s = U256::from_be_slice(&self.signature[32..64]);
        let v = self.signature[64..]
            .iter()
            .fold(0u128, |v, b| (v << 8) | u128::from(*b));
        (r, s, v)
    }

    /// The request id as text (a bridgectl txId).
    pub fn request_id_text(&self) -> String {
        uuid_text(self.request_id)
    }

    /// Reads one from its CBOR, strictly: the request id is required (it is what ties
    /// the answer to its request), the signature is 65 to 72 bytes.
    pub fn from_cbor(bytes: &[u8]) -> Result<EthSignature, Error> {
        let mut r = Reader::new(bytes, UrType::EthSignature.name());
        let (mut request_id, mut signature, mut origin) = (None, None, None);
        r.map("eth-signature", &[1, 2, 3], |r, key| {
            match key {
                1 => request_id = Some(r.uuid("request-id")?),
                2 => {
                    let b = r.bytes("signature")?;
                    if !(65..=72).contains(&b.len()) {
                        return Err(r.error(format!(
                            "signature: {} bytes, expected r (32) || s (32) || v (1 to 8)",
                            b.len()
                        )));
                    }
                    signature = Some(b.to_vec());
                }
                _ => origin = Some(r.text("origin")?),
            }
            Ok(())
        })?;
        r.end()?;
        let missing = |field: &str| r.error(format!("missing {field}"));
        Ok(EthSignature {
            request_id: request_id.ok_or_else(|| {
                missing("request-id (key 1): an answer names the request it answers")
            })?,
            signature: signature.ok_or_else(|| missing("signature (key 2)"))?,
            origin,
        })
    }

    /// Its CBOR, keys in ascending order.
    pub fn to_cbor(&self) -> Vec<u8> {
        write(|e| {
            e.map(2 + u64::from(self.origin.is_some()))?
                .u8(1)?
                .tag(Tag::new(UUID_TAG))?
                .bytes(&self.request_id)?
                .u8(2)?
                .bytes(&self.signature)?;
            if let Some(o) = &self.origin {
                e.u8(3)?.str(o)?;
            }
            Ok(())
        })
    }

    /// This signature as the UR it travels in.
    pub fn to_ur(&self) -> Ur {
        Ur {
            ur_type: UrType::EthSignature,
            cbor: self.to_cbor(),
        }
    }
}
