//! The one error type of the crate.

/// Everything that can go wrong reading or writing QR frames and the URs in them.
///
/// Every variant but [`Error::Render`] and [`Error::Png`] is a refusal of what was
/// read: nothing in it was used. Messages are lowercase and name what was expected and
/// what was found; the caller adds which file the frame came from.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The text of a QR code (or a line of a text file) is not a Uniform Resource.
    #[error("not a UR (`ur:TYPE/...`): {found}")]
    NotUr {
        /// The start of the text, escaped.
        found: String,
    },

    /// A UR of a type bridgectl does not read.
    #[error(
        "UR type {found} is not one bridgectl reads (eth-sign-request, eth-signature, bridgectl-doc)"
    )]
    UnknownType {
        /// The type, escaped.
        found: String,
    },

    /// A frame of another UR type among the frames being read.
    #[error(
        "a frame of type {found} among frames of type {expected}: frames of two things were mixed up"
    )]
    MixedTypes {
        /// The type of the frames read first.
        expected: &'static str,
        /// The type of this frame.
        found: &'static str,
    },

    /// A frame of the same type but of another message (another request or signature):
    /// its length, part count or checksum differ from the frames read first.
    #[error("a frame of another message: {reason}")]
    AnotherMessage {
        /// What differs.
        reason: String,
    },

    /// A UR whose text, bytewords or fountain part does not read (a truncated or
    /// damaged frame).
    #[error("malformed UR: {reason}")]
    Malformed {
        /// What is wrong.
        reason: String,
    },

    /// Something larger than this crate reads: checked before anything is allocated
    /// for it.
    #[error("{what} is {found}, over the limit of {limit}")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The limit.
        limit: usize,
        /// What was found (or announced).
        found: usize,
    },

    /// Not enough frames were read to rebuild the message.
    #[error("incomplete: {progress}; read more frames (any of them, in any order)")]
    Incomplete {
        /// How far it got: the parts known, of how many, from how many frames.
        progress: crate::progress::Progress,
    },

    /// No frame was read at all.
    #[error("no UR frame was read")]
    NoFrames,

    /// The rebuilt message's CBOR is not the document its UR type says.
    #[error("{ur_type}: {reason}")]
    Cbor {
        /// The UR type being read.
        ur_type: &'static str,
        /// What is wrong, naming the field.
        reason: String,
    },

    /// A well-formed UR that says something bridgectl does not do with it.
    #[error("{0}")]
    Refused(String),

    /// The transaction inside a request, or the signature in an answer, is refused.
    #[error(transparent)]
    Tx(#[from] bridgectl_tx::Error),

    /// An image that is not a readable PNG or JPEG (or is over the size limits).
    #[error("not a readable PNG or JPEG image")]
    Image(#[source] image::ImageError),

    /// The text does not fit a QR code.
    #[error("cannot draw a QR code of {len} characters")]
    Render {
        /// The text's length.
        len: usize,
        /// Why.
        #[source]
        source: qrcode::types::QrError,
    },

    /// A PNG could not be written.
    #[error("cannot write the PNG")]
    Png(#[source] image::ImageError),
}

/// `text` shortened to at most 60 characters and escaped, for messages.
pub(crate) fn shorten(text: &str) -> String {
    let mut out: String = text.chars().take(60).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    bridgectl_tx::text::printable(&out).to_string()
}
