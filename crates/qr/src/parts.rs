//! Uniform Resources and their multi-part fountain-coded frames (BCR-2020-005).
//!
//! A message (the CBOR of an `eth-sign-request`, say) becomes `ur:TYPE/BYTEWORDS` when
//! it fits one frame, else an endless sequence of parts `ur:TYPE/SEQ-COUNT/BYTEWORDS`:
//! the first COUNT carry the fragments in order, every later one a seeded XOR of a few
//! of them. A reader needs about COUNT distinct parts, any of them, in any order, with
//! duplicates: what a camera pointed at an animation gets.
//!
//! [`Assembler`] bounds everything before the fountain decoder sees it: the text's
//! length, the message length and part count a part announces, the bytes held for
//! parts not yet resolved; and it refuses, naming why, a frame of another type, of
//! another message (another length, part count or checksum), a single-part UR among
//! parts, and a message whose checksum does not hold.

use std::collections::BTreeSet;

use crate::error::{Error, shorten};
use crate::fountain::{self, Added, Solver, Split};
use crate::progress::Progress;

/// The largest message read or written: a request with a few KiB of calldata is a few
/// dozen frames; 64 KiB is 550 frames at the default fragment size, minutes of
/// animation, the most a person will hold a camera for.
pub const MAX_MESSAGE: usize = 64 * 1024;

/// The most parts a message may be split into (a writer with tiny fragments).
pub const MAX_FRAGMENTS: usize = 4096;

/// The most bytes of fragment data held while a message is being rebuilt (parts that
/// could not be resolved yet): 256 times the largest message.
pub const MAX_HELD: usize = 256 * MAX_MESSAGE;

/// The longest UR text read: a single-part UR of [`MAX_MESSAGE`] bytes (two letters a
/// byte, plus its checksum and prefix).
pub const MAX_TEXT: usize = 2 * (MAX_MESSAGE + 4) + 64;

/// The fragment size bridgectl writes: 120 bytes make frames of about 310 characters,
/// a version 9-10 QR code at error correction L (53-57 modules): it reads at arm's
/// length from a phone or a laptop webcam, and fits a terminal of 80 columns in
/// half-block characters. Smaller frames read more easily but need more of them.
pub const FRAGMENT_LEN: usize = 120;

/// The UR types bridgectl reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UrType {
    /// EIP-4527 `eth-sign-request`: an unsigned transaction to sign.
    EthSignRequest,
    /// EIP-4527 `eth-signature`: the answer to one.
    EthSignature,
    /// bridgectl's own `bridgectl-doc`: one of its JSON documents, byte for byte
    /// (`docs/qr.md`).
    BridgectlDoc,
}

impl UrType {
    /// Every type, in the order messages list them.
    pub const ALL: [UrType; 3] = [
        UrType::EthSignRequest,
        UrType::EthSignature,
        UrType::BridgectlDoc,
    ];

    /// The type as written in a UR (`eth-sign-request`).
    pub fn name(self) -> &'static str {
        match self {
            UrType::EthSignRequest => "eth-sign-request",
            UrType::EthSignature => "eth-signature",
            UrType::BridgectlDoc => "bridgectl-doc",
        }
    }

    /// The type named `name` (lower case), if bridgectl reads it.
    pub fn from_name(name: &str) -> Option<UrType> {
        UrType::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl std::fmt::Display for UrType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A whole message: its UR type and its CBOR bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ur {
    /// The type.
    pub ur_type: UrType,
    /// The CBOR payload.
    pub cbor: Vec<u8>,
}

impl Ur {
    /// The frames of this message, in fragments of at most `max_fragment_len` bytes.
    pub fn frames(&self, max_fragment_len: usize) -> Result<Frames, Error> {
        if self.cbor.len() > MAX_MESSAGE {
            return Err(Error::TooLarge {
                what: "the message",
                limit: MAX_MESSAGE,
                found: self.cbor.len(),
            });
        }
        if self.cbor.is_empty() || max_fragment_len == 0 {
            return Err(Error::Refused(
                "an empty message or fragment size: nothing to show".into(),
            ));
        }
        if self.cbor.len() <= max_fragment_len {
            return Ok(Frames {
                ur_type: self.ur_type,
                single: Some(self.single_part()),
                split: None,
                next: 1,
            });
        }
        let split = Split::new(&self.cbor, max_fragment_len);
        if split.count() > MAX_FRAGMENTS {
            return Err(Error::TooLarge {
                what: "the part count",
                limit: MAX_FRAGMENTS,
                found: split.count(),
            });
        }
        Ok(Frames {
            ur_type: self.ur_type,
            single: None,
            split: Some(split),
            next: 1,
        })
    }

    /// The single-part UR text of this message (`ur:TYPE/BYTEWORDS`), as a text file
    /// holds it.
    pub fn single_part(&self) -> String {
        ur::ur::encode(&self.cbor, &ur::Type::Custom(self.ur_type.name()))
    }
}

/// The UR texts of one message's frames, as many as wanted: a single-part UR repeats;
/// a multi-part one gives its fragments in order, then fountain parts without end.
pub struct Frames {
    ur_type: UrType,
    single: Option<String>,
    split: Option<Split>,
    next: u32,
}

impl Frames {
    /// How many parts the message has (1 for a single-part UR): about as many frames as
    /// a reader needs.
    pub fn part_count(&self) -> usize {
        self.split.as_ref().map_or(1, Split::count)
    }

    /// The next frame's text (lower case, as URs are written; QR codes show it in upper
    /// case).
    pub fn next_frame(&mut self) -> String {
        let text = self.frame(self.next);
        self.next = self.next.wrapping_add(1).max(1);
        text
    }

    /// The text of part `seq` (1 or more; the single part of a single-part UR whatever
    /// `seq`).
    pub(crate) fn frame(&self, seq: u32) -> String {
        match (&self.single, &self.split) {
            (Some(single), _) => single.clone(),
            (None, Some(split)) => format!(
                "ur:{}/{seq}-{}/{}",
                self.ur_type,
                split.count(),
                ur::bytewords::encode(&split.part(seq), ur::bytewords::Style::Minimal)
            ),
            (None, None) => unreachable!("Frames holds one or the other"),
        }
    }
}

impl Frames {
    /// The part count and checksum of a multi-part message, which fix what each part
    /// mixes.
    pub(crate) fn fountain(&self) -> Option<(usize, u32)> {
        self.split.as_ref().map(|s| (s.count(), s.checksum()))
    }
}

impl std::fmt::Debug for Frames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frames")
            .field("parts", &self.part_count())
            .finish()
    }
}

/// What a multi-part message's parts announce; every part must agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    count: usize,
    length: usize,
    checksum: u32,
    fragment: usize,
}

/// What one frame did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// A part not seen before.
    New,
    /// A part already read (the same frame again): ignored.
    Duplicate,
    /// The message was complete already: ignored.
    AfterComplete,
}

/// Rebuilds one message from its frames' texts, in any order, duplicates allowed.
#[derive(Default)]
pub struct Assembler {
    ur_type: Option<UrType>,
    header: Option<Header>,
    single: Option<Vec<u8>>,
    solver: Option<Solver>,
    seen: BTreeSet<u32>,
    held: usize,
}

impl std::fmt::Debug for Assembler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembler")
            .field("ur_type", &self.ur_type)
            .field("progress", &self.progress())
            .finish()
    }
}

fn malformed(reason: impl Into<String>) -> Error {
    Error::Malformed {
        reason: reason.into(),
    }
}

fn bytewords(text: &str) -> Result<Vec<u8>, Error> {
    ur::bytewords::decode(text, ur::bytewords::Style::Minimal)
        .map_err(|e| malformed(format!("bytewords: {e} (a truncated or damaged frame)")))
}

/// Reads a fountain part's CBOR strictly: `[seq, count, length, checksum, fragment]`,
/// nothing after it.
fn part_header(cbor: &[u8]) -> Result<(u32, Header, &[u8]), Error> {
    let bad = |e: minicbor::decode::Error| malformed(format!("fountain part: {e}"));
    let mut d = minicbor::Decoder::new(cbor);
    if d.array().map_err(bad)? != Some(5) {
        return Err(malformed("fountain part: not an array of 5"));
    }
    let seq = d.u32().map_err(bad)?;
    let count = d.u32().map_err(bad)? as usize;
    let length = d.u32().map_err(bad)? as usize;
    let checksum = d.u32().map_err(bad)?;
    let data = d.bytes().map_err(bad)?;
    if d.position() != cbor.len() {
        return Err(malformed("fountain part: bytes after it"));
    }
    Ok((
        seq,
        Header {
            count,
            length,
            checksum,
            fragment: data.len(),
        },
        data,
    ))
}

impl Assembler {
    /// A new, empty assembler.
    pub fn new() -> Assembler {
        Assembler::default()
    }

    /// The type of the message being rebuilt, once a frame was read.
    pub fn ur_type(&self) -> Option<UrType> {
        self.ur_type
    }

    /// How far it is.
    pub fn progress(&self) -> Progress {
        match (&self.single, &self.solver) {
            (Some(_), _) => Progress {
                solved: 1,
                needed: 1,
                frames: 1,
            },
            (None, Some(solver)) => Progress {
                solved: solver.solved(),
                needed: self.header.map_or(0, |h| h.count),
                frames: self.seen.len(),
            },
            (None, None) => Progress {
                solved: 0,
                needed: 0,
                frames: 0,
            },
        }
    }

    /// Whether the whole message is there.
    pub fn is_complete(&self) -> bool {
        self.single.is_some() || self.solver.as_ref().is_some_and(Solver::is_complete)
    }

    /// Reads one frame's text (a QR code's content, or a line of a text file), in either
    /// case, with or without a byte order mark and surrounding white space.
    pub fn receive(&mut self, text: &str) -> Result<Received, Error> {
        let text = text.trim().trim_start_matches('\u{feff}').trim_start();
        if text.len() > MAX_TEXT {
            return Err(Error::TooLarge {
                what: "the UR text",
                limit: MAX_TEXT,
                found: text.len(),
            });
        }
        let lower = text.to_ascii_lowercase();
        let rest = lower.strip_prefix("ur:").ok_or_else(|| Error::NotUr {
            found: shorten(text),
        })?;
        let (name, rest) = rest
            .split_once('/')
            .ok_or_else(|| malformed("no `/` after the type"))?;
        let ur_type = UrType::from_name(name).ok_or_else(|| Error::UnknownType {
            found: shorten(name),
        })?;
        if let Some(expected) = self.ur_type
            && expected != ur_type
        {
            return Err(Error::MixedTypes {
                expected: expected.name(),
                found: ur_type.name(),
            });
        }
        if self.is_complete() {
            return Ok(Received::AfterComplete);
        }
        let result = match rest.split_once('/') {
            None => self.receive_single(rest),
            Some((indices, body)) => self.receive_part(indices, body),
        };
        if result.is_ok() {
            self.ur_type = Some(ur_type);
        }
        result
    }

    fn receive_single(&mut self, body: &str) -> Result<Received, Error> {
        if self.header.is_some() {
            return Err(Error::AnotherMessage {
                reason: "a single-part UR among the parts of a multi-part one".into(),
            });
        }
        let bytes = bytewords(body)?;
        if bytes.len() > MAX_MESSAGE {
            return Err(Error::TooLarge {
                what: "the message",
                limit: MAX_MESSAGE,
                found: bytes.len(),
            });
        }
        self.single = Some(bytes);
        Ok(Received::New)
    }

    fn receive_part(&mut self, indices: &str, body: &str) -> Result<Received, Error> {
        if self.single.is_some() {
            return Err(Error::AnotherMessage {
                reason: "a part of a multi-part UR after a single-part one".into(),
            });
        }
        let (seq_text, count_text) = indices.split_once('-').ok_or_else(|| {
            malformed(format!("part index {} is not SEQ-COUNT", shorten(indices)))
        })?;
        let number = |t: &str| -> Result<u32, Error> {
            if t.is_empty() || t.len() > 10 || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed(format!(
                    "part index {} is not SEQ-COUNT",
                    shorten(indices)
                )));
            }
            t.parse::<u32>()
                .map_err(|_| malformed(format!("part index {} is out of range", shorten(indices))))
        };
        let (seq_index, count_index) = (number(seq_text)?, number(count_text)?);
        let cbor = bytewords(body)?;
        let (seq, header, data) = part_header(&cbor)?;
        if seq != seq_index || header.count != count_index as usize || seq == 0 {
            return Err(malformed(format!(
                "the part says {seq}-{}, its text {indices}",
                header.count
            )));
        }
        if header.length > MAX_MESSAGE {
            return Err(Error::TooLarge {
                what: "the announced message length",
                limit: MAX_MESSAGE,
                found: header.length,
            });
        }
        if header.count > MAX_FRAGMENTS {
            return Err(Error::TooLarge {
                what: "the announced part count",
                limit: MAX_FRAGMENTS,
                found: header.count,
            });
        }
        // The encoder's split: `count` fragments of `fragment` bytes hold `length`
        // bytes with less than one fragment of padding.
        if header.fragment == 0
            || header.length == 0
            || header.count != header.length.div_ceil(header.fragment)
        {
            return Err(malformed(format!(
                "{} parts of {} bytes cannot hold a message of {} bytes",
                header.count, header.fragment, header.length
            )));
        }
        if let Some(first) = self.header
            && first != header
        {
            return Err(Error::AnotherMessage {
                reason: if first.checksum != header.checksum {
                    format!(
                        "checksum {:08x}, the frames read first have {:08x}",
                        header.checksum, first.checksum
                    )
                } else {
                    format!(
                        "{} bytes in {} parts, the frames read first have {} bytes in {}",
                        header.length, header.count, first.length, first.count
                    )
                },
            });
        }
        if self.seen.contains(&seq) {
            return Ok(Received::Duplicate);
        }
        if self.held + header.fragment > MAX_HELD {
            return Err(Error::TooLarge {
                what: "the fragment data held",
                limit: MAX_HELD,
                found: self.held + header.fragment,
            });
        }
        let solver = self
            .solver
            .get_or_insert_with(|| Solver::new(header.count, header.fragment));
        let indexes = fountain::indexes(seq, header.count, header.checksum);
        if solver.add(&indexes, data) == Added::Contradicts {
            return Err(Error::AnotherMessage {
                reason: format!(
                    "part {seq} does not agree with the parts read before it: frames of two \
                     messages with the same length and checksum, or a damaged frame"
                ),
            });
        }
        self.seen.insert(seq);
        self.held += header.fragment;
        self.header = Some(header);
        Ok(Received::New)
    }

    /// The rebuilt message, once complete: its checksum checked.
    pub fn finish(self) -> Result<Ur, Error> {
        let ur_type = self.ur_type.ok_or(Error::NoFrames)?;
        if let Some(cbor) = self.single {
            return Ok(Ur { ur_type, cbor });
        }
        let progress = self.progress();
        let (Some(solver), Some(header)) = (&self.solver, &self.header) else {
            return Err(Error::NoFrames);
        };
        let Some(cbor) = solver.message(header.length) else {
            return Err(Error::Incomplete { progress });
        };
        if crc32fast::hash(&cbor) != header.checksum {
            return Err(Error::AnotherMessage {
                reason: format!(
                    "the parts do not add up to the message their checksum names ({:08x}): \
                     frames of two messages with the same length, or a damaged frame",
                    header.checksum
                ),
            });
        }
        Ok(Ur { ur_type, cbor })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(len: usize) -> Ur {
        Ur {
            ur_type: UrType::BridgectlDoc,
            cbor: (0..len).map(|i| (i * 7 + 3) as u8).collect(),
        }
    }

    fn frames(ur: &Ur, n: usize) -> Vec<String> {
        let mut f = ur.frames(FRAGMENT_LEN).expect("frames");
        (0..n).map(|_| f.next_frame()).collect()
    }

    #[test]
    fn a_single_part_message_is_one_frame() {
        let ur = message(50);
        let f = frames(&ur, 2);
        assert_eq!(f[0], f[1]);
        assert!(f[0].starts_with("ur:bridgectl-doc/"), "{}", f[0]);
        let mut a = Assembler::new();
        assert_eq!(
            a.receive(&f[0].to_uppercase()).expect("read"),
            Received::New
        );
        assert_eq!(a.receive(&f[1]).expect("again"), Received::AfterComplete);
        assert_eq!(a.finish().expect("done"), ur);
    }

    #[test]
    fn parts_in_any_order_with_duplicates_and_losses() {
        let ur = message(1000);
        let mut f = frames(&ur, 20);
        let count = ur.frames(FRAGMENT_LEN).expect("frames").part_count();
        assert_eq!(count, 9);
        // Drop the 2nd and 5th fragment, repeat one, reverse the order.
        f.remove(4);
        f.remove(1);
        f.push(f[0].clone());
        f.reverse();
        let mut a = Assembler::new();
        for text in &f {
            a.receive(text).expect("part");
            if a.is_complete() {
                break;
            }
        }
        assert!(a.is_complete(), "{:?}", a.progress());
        assert_eq!(a.finish().expect("message"), ur);
    }

    #[test]
    fn progress_tells_frames_read_from_parts_known() {
        let ur = message(1000);
        let mut f = ur.frames(FRAGMENT_LEN).expect("frames");
        // A fountain part that mixes several fragments tells none of them alone.
        let mixed = (1..40)
            .map(|seq| f.frame(seq))
            .zip(1..)
            .find(|(_, seq)| fountain::indexes(*seq, 9, crc32fast::hash(&ur.cbor)).len() > 1)
            .expect("a mixed part")
            .0;
        let mut a = Assembler::new();
        a.receive(&mixed).expect("part");
        assert_eq!(a.progress().to_string(), "0 of 9 parts, from 1 frame");
        a.receive(&f.next_frame()).expect("part");
        assert_eq!(a.progress().frames, 2);
        assert!(a.progress().solved >= 1);
    }

    #[test]
    fn a_ur_with_a_byte_order_mark_in_any_case_reads() {
        let ur = message(50);
        let text = ur.single_part().to_uppercase();
        for variant in [format!("\u{feff}{text}\r\n"), format!(" \u{feff}{text}")] {
            let mut a = Assembler::new();
            a.receive(&variant).expect("read");
            assert_eq!(a.finish().expect("done"), ur);
        }
    }

    #[test]
    fn too_few_parts_is_incomplete_and_says_how_far() {
        let ur = message(1000);
        let f = frames(&ur, 3);
        let mut a = Assembler::new();
        for text in &f {
            a.receive(text).expect("part");
        }
        assert_eq!(
            a.progress(),
            Progress {
                solved: 3,
                needed: 9,
                frames: 3,
            }
        );
        let e = a.finish().expect_err("incomplete").to_string();
        assert!(
            e.contains("incomplete: 3 of 9 parts, from 3 frames;"),
            "{e}"
        );
    }

    #[test]
    fn frames_of_another_message_type_or_damage_are_refused() {
        let ur = message(1000);
        let other = message(1001);
        let f = frames(&ur, 2);
        let g = frames(&other, 2);
        let mut a = Assembler::new();
        a.receive(&f[0]).expect("first");
        let e = a.receive(&g[1]).expect_err("another message").to_string();
        assert!(e.contains("a frame of another message"), "{e}");
        let sig = f[1].replace("ur:bridgectl-doc/", "ur:eth-signature/");
        let e = a.receive(&sig).expect_err("mixed").to_string();
        assert!(e.contains("a frame of type eth-signature among"), "{e}");
        let truncated = &f[1][..f[1].len() - 10];
        let e = a.receive(truncated).expect_err("truncated").to_string();
        assert!(e.contains("malformed UR: bytewords"), "{e}");
        let e = a
            .receive("ur:crypto-psbt/lpad")
            .expect_err("type")
            .to_string();
        assert!(e.contains("UR type crypto-psbt"), "{e}");
        let e = a
            .receive("https://example.invalid")
            .expect_err("not ur")
            .to_string();
        assert!(e.contains("not a UR"), "{e}");
        // The good frames still complete it.
        for text in frames(&ur, 12) {
            a.receive(&text).expect("part");
        }
        assert_eq!(a.finish().expect("message"), ur);
    }

    #[test]
    fn announced_sizes_are_bounded_before_anything_is_held() {
        // A part that announces a 4 GiB message in 2^32-1 parts.
        let mut cbor = Vec::new();
        let mut e = minicbor::Encoder::new(&mut cbor);
        e.array(5)
            .and_then(|e| e.u32(1))
            .and_then(|e| e.u32(u32::MAX))
            .and_then(|e| e.u32(u32::MAX))
            .and_then(|e| e.u32(7))
            .and_then(|e| e.bytes(&[1, 2, 3]))
            .expect("cbor");
        let body = ur::bytewords::encode(&cbor, ur::bytewords::Style::Minimal);
        let text = format!("ur:bridgectl-doc/1-{}/{body}", u32::MAX);
        let e = Assembler::new()
            .receive(&text)
            .expect_err("huge")
            .to_string();
        assert!(e.contains("over the limit"), "{e}");
        let big = message(MAX_MESSAGE + 1);
        assert!(big.frames(FRAGMENT_LEN).is_err());
        let long = format!("ur:bridgectl-doc/{}", "ae".repeat(MAX_TEXT));
        let e = Assembler::new()
            .receive(&long)
            .expect_err("long")
            .to_string();
        assert!(e.contains("the UR text"), "{e}");
    }
}
