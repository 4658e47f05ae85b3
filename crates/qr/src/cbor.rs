//! Strict reading of the small CBOR maps EIP-4527 and bridgectl-doc define: definite
//! lengths only, every key known and given once, every value of its type, nothing after
//! the top-level item. A writer that sends more is refused, not half-read.

use minicbor::Decoder;
use minicbor::data::Tag;

use crate::error::Error;

/// The longest text field read (an `origin`, a document kind).
pub(crate) const MAX_TEXT_FIELD: usize = 256;

/// A reader of one UR type's CBOR, naming that type and the field in its errors.
pub(crate) struct Reader<'b> {
    pub(crate) d: Decoder<'b>,
    ur_type: &'static str,
    len: usize,
}

impl<'b> Reader<'b> {
    pub(crate) fn new(bytes: &'b [u8], ur_type: &'static str) -> Reader<'b> {
        Reader {
            d: Decoder::new(bytes),
            ur_type,
            len: bytes.len(),
        }
    }

    pub(crate) fn error(&self, reason: impl Into<String>) -> Error {
        Error::Cbor {
            ur_type: self.ur_type,
            reason: reason.into(),
        }
    }

    fn at(&self, field: &str, e: minicbor::decode::Error) -> Error {
        self.error(format!("{field}: {e}"))
    }

    /// Reads a definite-length map whose keys are among `keys` (each at most once),
    /// calling `field` with each key to read its value.
    pub(crate) fn map(
        &mut self,
        what: &str,
        keys: &[u64],
        mut field: impl FnMut(&mut Self, u64) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let n = match self.d.map() {
            Ok(Some(n)) => n,
            Ok(None) => return Err(self.error(format!("{what}: an indefinite-length map"))),
            Err(e) => return Err(self.at(what, e)),
        };
        if n > keys.len() as u64 {
            return Err(self.error(format!(
                "{what}: {n} entries, more than its {} keys",
                keys.len()
            )));
        }
        let mut seen = Vec::with_capacity(keys.len());
        for _ in 0..n {
            let key = self
                .d
                .u64()
                .map_err(|e| self.at(&format!("{what} key"), e))?;
            if !keys.contains(&key) {
                return Err(self.error(format!("{what}: unknown key {key}")));
            }
            if seen.contains(&key) {
                return Err(self.error(format!("{what}: key {key} given twice")));
            }
            seen.push(key);
            field(self, key)?;
        }
        Ok(())
    }

    pub(crate) fn u64(&mut self, field: &str) -> Result<u64, Error> {
        self.d.u64().map_err(|e| self.at(field, e))
    }

    pub(crate) fn bool(&mut self, field: &str) -> Result<bool, Error> {
        self.d.bool().map_err(|e| self.at(field, e))
    }

    pub(crate) fn bytes(&mut self, field: &str) -> Result<&'b [u8], Error> {
        self.d.bytes().map_err(|e| self.at(field, e))
    }

    pub(crate) fn text(&mut self, field: &str) -> Result<String, Error> {
        let s = self.d.str().map_err(|e| self.at(field, e))?;
        if s.len() > MAX_TEXT_FIELD {
            return Err(self.error(format!(
                "{field}: {} bytes of text, over the limit of {MAX_TEXT_FIELD}",
                s.len()
            )));
        }
        Ok(s.to_owned())
    }

    /// Reads tag `want` (one of them, when several are accepted) before a value.
    pub(crate) fn tag(&mut self, field: &str, want: &[u64]) -> Result<u64, Error> {
        let tag: Tag = self.d.tag().map_err(|e| self.at(field, e))?;
        if !want.contains(&tag.as_u64()) {
            return Err(self.error(format!(
                "{field}: tag {}, expected {}",
                tag.as_u64(),
                want.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(" or ")
            )));
        }
        Ok(tag.as_u64())
    }

    /// A UUID: tag 37 over 16 bytes.
    pub(crate) fn uuid(&mut self, field: &str) -> Result<[u8; 16], Error> {
        self.tag(field, &[37])?;
        let b = self.bytes(field)?;
        b.try_into()
            .map_err(|_| self.error(format!("{field}: {} bytes, a UUID has 16", b.len())))
    }

    /// Refuses anything after the top-level item.
    pub(crate) fn end(&self) -> Result<(), Error> {
        if self.d.position() != self.len {
            return Err(self.error(format!(
                "{} byte(s) after the document",
                self.len - self.d.position()
            )));
        }
        Ok(())
    }
}

/// A CBOR writer into a `Vec` (which cannot fail).
pub(crate) fn write(
    f: impl FnOnce(
        &mut minicbor::Encoder<&mut Vec<u8>>,
    ) -> Result<(), minicbor::encode::Error<std::convert::Infallible>>,
) -> Vec<u8> {
    let mut out = Vec::new();
    f(&mut minicbor::Encoder::new(&mut out)).expect("writing CBOR into a Vec cannot fail");
    out
}
