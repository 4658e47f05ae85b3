#![doc = include_str!("../README.md")]

mod cbor;
mod choose;
mod code;
mod doc;
mod error;
mod eth;
mod fountain;
mod parts;
mod progress;
pub use progress::Progress;
mod scan;

pub use choose::MAX_LOST_FRAMES;
pub use code::{Code, MAX_IMAGE_SIDE, PNG_SCALE, Undecodable, draw};
pub use doc::{Doc, DocKind, MAX_DOCUMENT};
pub use error::Error;
pub use eth::{
    DATA_TYPE_LEGACY, EthSignRequest, EthSignature, KeyPath, PathComponent, PathIndex, uuid_bytes,
    uuid_text,
};
pub use parts::{
    Assembler, FRAGMENT_LEN, Frames, MAX_FRAGMENTS, MAX_HELD, MAX_MESSAGE, MAX_TEXT, Received, Ur,
    UrType,
};
pub use scan::{Scan, is_ur_text, read};

/// What a UR carries, read strictly according to its type.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Payload {
    /// An EIP-4527 request to sign.
    EthSignRequest(EthSignRequest),
    /// An EIP-4527 signature.
    EthSignature(EthSignature),
    /// One of bridgectl's JSON documents.
    Doc(Doc),
}

impl Payload {
    /// Reads the payload of `ur` according to its type.
    pub fn from_ur(ur: &Ur) -> Result<Payload, Error> {
        Ok(match ur.ur_type {
            UrType::EthSignRequest => Payload::EthSignRequest(EthSignRequest::from_cbor(&ur.cbor)?),
            UrType::EthSignature => Payload::EthSignature(EthSignature::from_cbor(&ur.cbor)?),
            UrType::BridgectlDoc => Payload::Doc(Doc::from_cbor(&ur.cbor)?),
        })
    }

    /// The payload as a UR.
    pub fn to_ur(&self) -> Ur {
        match self {
            Payload::EthSignRequest(r) => r.to_ur(),
            Payload::EthSignature(s) => s.to_ur(),
            Payload::Doc(d) => d.to_ur(),
        }
    }

    /// What it is, for messages (`an eth-signature`, `a bridgectl-doc signed-bundle`).
    pub fn describe(&self) -> String {
        match self {
            Payload::EthSignRequest(_) => "an eth-sign-request".into(),
            Payload::EthSignature(_) => "an eth-signature".into(),
            Payload::Doc(d) => format!("a bridgectl-doc {}", d.kind),
        }
    }
}

/// The frames to show for `ur` (fragments of [`FRAGMENT_LEN`] bytes): one for a
/// message that fits a frame, else twice its part count (its fragments, then as many
/// fountain parts), so that a reader that misses a few frames of a pass most often still
/// has enough. Most often, not always: which lost fragment a fountain part makes up for
/// is chosen by the message's checksum, so a reader that lacks one reads more frames (an
/// animation keeps going; [`Assembler`] says how far it is).
pub fn frames(ur: &Ur) -> Result<Vec<String>, Error> {
    let mut frames = ur.frames(FRAGMENT_LEN)?;
    let n = match frames.part_count() {
        1 => 1,
        n => 2 * n,
    };
    Ok((0..n).map(|_| frames.next_frame()).collect())
}

/// The frames to write once, as files (images to show): every fragment of `ur`
/// (fragments of [`FRAGMENT_LEN`] bytes) and the fountain parts chosen so that any
/// [`MAX_LOST_FRAMES`] of the frames can be lost (unreadable files, a frame the camera
/// missed) and the rest still rebuild the message, for any BC-UR decoder. A message that
/// fits one frame is that frame `MAX_LOST_FRAMES + 1` times.
pub fn frame_set(ur: &Ur) -> Result<Vec<String>, Error> {
    let frames = ur.frames(FRAGMENT_LEN)?;
    let Some((count, checksum)) = frames.fountain() else {
        return Ok(vec![frames.frame(1); MAX_LOST_FRAMES + 1]);
    };
    Ok((1..=count as u32)
        .chain(choose::fountain_parts(count, checksum))
        .map(|seq| frames.frame(seq))
        .collect())
}
