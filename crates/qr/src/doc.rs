//! `bridgectl-doc`: one of bridgectl's own JSON documents, carried byte for byte, so
//! that what is read from the frames is the very file that was shown (its SHA-256, the
//! request hash a signed bundle names, is the same either way).
//!
//! ```text
//! bridgectl-doc = {
//!     1: text,    ; kind: "sign-request" | "signed-bundle" | "batch-request" | "signed-batch"
//!     2: bytes,   ; the document's exact bytes (UTF-8 JSON, as written to its file)
//!   / 3: bytes,   ; or those bytes compressed: raw DEFLATE (RFC 1951)
//! }
//! ```
//!
//! Batch documents are written compressed (key 3): a redeem is about 500 bytes of JSON
//! that repeats itself from item to item, and about 60 once compressed, so a batch
//! request of a hundred redeems is 50 fragments instead of 420. The others are written
//! as they are (key 2), as every reader of bridgectl-doc so far reads them; both forms
//! are read for every kind. Decompression stops at [`MAX_DOCUMENT`] bytes: a stream that
//! would expand past it (a decompression bomb: DEFLATE expands up to about 1000 to 1) is
//! refused, never expanded.
//!
//! A new kind of document (a batch request file and its bundle, say) is a new
//! [`DocKind`]: a name here and in `docs/qr.md`; readers refuse kinds they do not know.

use crate::cbor::{Reader, write};
use crate::error::Error;
use crate::parts::{Ur, UrType};

/// The largest document read from a `bridgectl-doc`, decompressed: 16 times
/// [`crate::MAX_MESSAGE`]. A batch request compresses about 8 to 1 and a signed batch 3
/// to 1, so the message bound is reached first (about a thousand redeems to request,
/// 350 signed); more than this from 64 KiB is not a document bridgectl wrote.
pub const MAX_DOCUMENT: usize = 1 << 20;

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

    /// Whether it is written compressed (key 3): the batch documents, hundreds of items
    /// alike.
    pub fn compressed(self) -> bool {
        matches!(self, DocKind::BatchRequest | DocKind::SignedBatch)
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
        let (mut kind, mut bytes, mut compressed) = (None, None, None);
        r.map("bridgectl-doc", &[1, 2, 3], |r, key| {
            if key == 1 {
                let name = r.text("kind")?;
                kind = Some(DocKind::from_name(&name).ok_or_else(|| {
                    r.error(format!(
                        "kind {} is not one this bridgectl reads ({})",
                        crate::error::shorten(&name),
                        DocKind::ALL.map(DocKind::name).join(", ")
                    ))
                })?);
            } else if key == 2 {
                bytes = Some(r.bytes("document")?.to_vec());
            } else {
                compressed = Some(r.bytes("compressed document")?);
            }
            Ok(())
        })?;
        r.end()?;
        let kind = kind.ok_or_else(|| r.error("missing kind (key 1)"))?;
        let bytes = match (bytes, compressed) {
            (Some(bytes), None) => bytes,
            (None, Some(deflated)) => inflate(deflated, MAX_DOCUMENT).map_err(|e| {
                r.error(match e {
                    Inflate::TooLarge => format!(
                        "compressed document (key 3): expands past {MAX_DOCUMENT} bytes, the \
                         most a document may be (refused before it was expanded further)"
                    ),
                    Inflate::Trailing(n) => format!(
                        "compressed document (key 3): {n} byte(s) after the end of its \
                         DEFLATE stream"
                    ),
                    Inflate::Corrupt(status) => format!(
                        "compressed document (key 3): not a whole DEFLATE stream ({status:?})"
                    ),
                })
            })?,
            (Some(_), Some(_)) => {
                return Err(r.error(
                    "a document (key 2) and a compressed document (key 3): one or the other",
                ));
            }
            (None, None) => return Err(r.error("missing document (key 2 or 3)")),
        };
        Ok(Doc { kind, bytes })
    }

    /// Its CBOR: the document as it is, or compressed for the kinds that are
    /// ([`DocKind::compressed`]).
    pub fn to_cbor(&self) -> Vec<u8> {
        write(|e| {
            e.map(2)?.u8(1)?.str(self.kind.name())?;
            if self.kind.compressed() {
                e.u8(3)?
                    .bytes(&miniz_oxide::deflate::compress_to_vec(&self.bytes, 10))?;
            } else {
                e.u8(2)?.bytes(&self.bytes)?;
            }
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

/// Why a compressed document was refused.
#[derive(Debug)]
enum Inflate {
    /// It expands past the limit.
    TooLarge,
    /// Bytes after the end of the stream.
    Trailing(usize),
    /// Not a whole DEFLATE stream.
    Corrupt(miniz_oxide::inflate::TINFLStatus),
}

/// `deflated` (raw DEFLATE) expanded, if it is a whole stream with nothing after it that
/// expands to at most `limit` bytes. Never holds more than `limit + 1` bytes of output.
fn inflate(deflated: &[u8], limit: usize) -> Result<Vec<u8>, Inflate> {
    use miniz_oxide::inflate::TINFLStatus;
    use miniz_oxide::inflate::core::inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    use miniz_oxide::inflate::core::{DecompressorOxide, decompress};

    let mut out = vec![0; deflated.len().saturating_mul(4).max(1024).min(limit + 1)];
    let mut state = Box::<DecompressorOxide>::default();
    let (mut input, mut written) = (deflated, 0);
    loop {
        let (status, used, made) = decompress(
            &mut state,
            input,
            &mut out,
            written,
            TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
        );
        input = &input[used..];
        written += made;
        match status {
            TINFLStatus::Done if written > limit => return Err(Inflate::TooLarge),
            TINFLStatus::Done if !input.is_empty() => return Err(Inflate::Trailing(input.len())),
            TINFLStatus::Done => {
                out.truncate(written);
                return Ok(out);
            }
            TINFLStatus::HasMoreOutput if out.len() > limit => return Err(Inflate::TooLarge),
            TINFLStatus::HasMoreOutput => {
                let grown = out.len().saturating_mul(2).min(limit + 1);
                out.resize(grown, 0);
            }
            status => return Err(Inflate::Corrupt(status)),
        }
    }
}
