//! `bridgectl-doc`: one of bridgectl's own JSON documents, carried byte for byte, so
//! that what is read from the frames is the very file that was shown (its SHA-256, the
//! request hash a signed bundle names, is the same either way).
//!
//! ```text
//! bridgectl-doc = {
//!     1: text,    ; kind: "sign-request" | "signed-bundle" | "batch-request" | "signed-batch"
//!     2: bytes,   ; the document's exact bytes (UTF-8 JSON, as written to its file)
//! }
//! ```
//!
//! A new kind of document (a batch request file and its bundle, say) is a new
//! [`DocKind`]: a name here and in `docs/qr.md`; readers refuse kinds they do not know.

use crate::cbor::{Reader, write};
use crate::error::Error;
use crate::parts::{Ur, UrType};

/// Which bridgectl document a `bridgectl-doc` carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DocKind {
    /// A sign request (`bridgectl-sign-request`), written by the online half.
    SignRequest,
    /// A signed bundle (`bridgectl-signed-bundle`), written by the offline signer.
    SignedBundle,
    /// A batch request (`bridgectl-batch-request`), written by `batch prepare`.
    BatchRequest,
    /// A signed batch (`bridgectl-signed-batch`), the offline signer's answer to a batch
    /// request.
    SignedBatch,
}

impl DocKind {
    /// Every kind.
    pub const ALL: [DocKind; 4] = [
        DocKind::SignRequest,
        DocKind::SignedBundle,
        DocKind::BatchRequest,
        DocKind::SignedBatch,
    ];

    /// The kind as written in the document (`sign-request`).
    pub fn name(self) -> &'static str {
        match self {
            DocKind::SignRequest => "sign-request",
            DocKind::SignedBundle => "signed-bundle",
            DocKind::BatchRequest => "batch-request",
            DocKind::SignedBatch => "signed-batch",
        }
    }

    /// The kind named `name`, if this bridgectl reads it.
    pub fn from_name(name: &str) -> Option<DocKind> {
        DocKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for DocKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A bridgectl document and its exact bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Doc {
    /// What it is.
    pub kind: DocKind,
    /// Its bytes, exactly as in its file.
    pub bytes: Vec<u8>,
}

impl Doc {
    /// Reads one from its CBOR, strictly.
    pub fn from_cbor(cbor: &[u8]) -> Result<Doc, Error> {
        let mut r = Reader::new(cbor, UrType::BridgectlDoc.name());
        let (mut kind, mut bytes) = (None, None);
        r.map("bridgectl-doc", &[1, 2], |r, key| {
            if key == 1 {
                let name = r.text("kind")?;
                kind = Some(DocKind::from_name(&name).ok_or_else(|| {
                    r.error(format!(
                        "kind {} is not one this bridgectl reads ({})",
                        crate::error::shorten(&name),
                        DocKind::ALL.map(DocKind::name).join(", ")
                    ))
                })?);
            } else {
                bytes = Some(r.bytes("document")?.to_vec());
            }
            Ok(())
        })?;
        r.end()?;
        Ok(Doc {
            kind: kind.ok_or_else(|| r.error("missing kind (key 1)"))?,
            bytes: bytes.ok_or_else(|| r.error("missing document (key 2)"))?,
        })
    }

    /// Its CBOR.
    pub fn to_cbor(&self) -> Vec<u8> {
        write(|e| {
            e.map(2)?
                .u8(1)?
                .str(self.kind.name())?
                .u8(2)?
                .bytes(&self.bytes)?;
            Ok(())
        })
    }

    /// This document as the UR it travels in.
    pub fn to_ur(&self) -> Ur {
        Ur {
            ur_type: UrType::BridgectlDoc,
            cbor: self.to_cbor(),
        }
    }
}
