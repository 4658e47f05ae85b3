//! What one file given to a reader holds: the texts of the QR codes in an image (a
//! screenshot, a webcam snapshot, a phone photo of a screen with several frames), or the
//! lines of a UR text file. What cannot be read in it is said, not fatal: a code that
//! does not decode is one lost frame, and the fountain code is there to make up for it.

use crate::code::{Undecodable, codes_in_image};
use crate::error::Error;

/// UTF-8's byte order mark, which some editors write at the start of a text file.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// What one file holds.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Scan {
    /// The frames' texts, in the order found: the QR codes that decode, or the
    /// non-blank lines of UR text (trimmed).
    pub texts: Vec<String>,
    /// The QR codes found that do not decode (a blurred or grainy snapshot): to skip
    /// with a note, like an image with no code (`texts` and `undecodable` both empty).
    pub undecodable: Vec<Undecodable>,
}

/// Whether `bytes` are UR text (one UR a line, the first starting `ur:` in either case,
/// after white space or a byte order mark), not an image.
pub fn is_ur_text(bytes: &[u8]) -> bool {
    let start = bytes.strip_prefix(BOM).unwrap_or(bytes).trim_ascii_start();
    start.len() >= 3 && start[..3].eq_ignore_ascii_case(b"ur:")
}

/// Reads a file's bytes: UR text ([`is_ur_text`]: UTF-8, a byte order mark and CRLF line
/// ends allowed) or an image (PNG or JPEG, with any number of codes in it, over
/// [`crate::MAX_IMAGE_SIDE`] pixels a side refused before it is decoded).
pub fn read(bytes: &[u8]) -> Result<Scan, Error> {
    if is_ur_text(bytes) {
        let text = std::str::from_utf8(bytes.strip_prefix(BOM).unwrap_or(bytes)).map_err(|_| {
            Error::Malformed {
                reason: "UR text that is not UTF-8".into(),
            }
        })?;
        return Ok(Scan {
            texts: text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
            undecodable: Vec::new(),
        });
    }
    let (texts, undecodable) = codes_in_image(bytes)?;
    Ok(Scan { texts, undecodable })
}
