#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

use std::borrow::Cow;
use std::collections::HashSet;

use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

/// Nesting deeper than this is refused (the same bound `serde_json` applies).
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// How strict to be beyond the rules that always hold (no duplicate keys, one value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The deepest nesting of arrays and objects accepted.
    pub max_depth: usize,
    /// Read integers beyond 64 bits as floating point (as `serde_json` does) instead of
    /// refusing them. Only for documents whose numbers are shown, never acted on.
    pub lenient_numbers: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            max_depth: DEFAULT_MAX_DEPTH,
            lenient_numbers: false,
        }
    }
}

/// Why a document was refused. Messages name the place (`$.rawTx.to`) and, for
/// syntax errors, the line and column.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Not JSON.
    #[error("not valid JSON at line {line}, column {column}: {reason}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What was wrong there.
        reason: &'static str,
    },
    /// An object has the same key twice.
    #[error("duplicate key {key:?} in {path}: refusing an ambiguous document")]
    DuplicateKey {
        /// The key (shortened when long).
        key: String,
        /// Where the object is.
        path: String,
    },
    /// Nesting is deeper than [`Options::max_depth`].
    #[error("nesting deeper than {limit} levels at {path}")]
    TooDeep {
        /// The limit.
        limit: usize,
        /// Where it was exceeded.
        path: String,
    },
    /// An integer does not fit in 64 bits and would be read inexactly.
    #[error(
        "integer {literal} at {path} does not fit in 64 bits and cannot be read exactly \
         (give large quantities as 0x hex strings)"
    )]
    InexactInteger {
        /// The literal exactly as written (shortened when very long).
        literal: String,
        /// Where it is.
        path: String,
    },
    /// The document is valid JSON but not of the expected type.
    #[error("{0}")]
    Type(serde_json::Error),
}

/// Parses `bytes` strictly with the default [`Options`].
pub fn from_slice(bytes: &[u8]) -> Result<Value, Error> {
    from_slice_with(bytes, Options::default())
}

/// Parses `bytes` strictly, then deserializes the value into `T`.
pub fn from_slice_to<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    serde_json::from_value(from_slice(bytes)?).map_err(Error::Type)
}

/// Parses `bytes` with `options`.
pub fn from_slice_with(bytes: &[u8], options: Options) -> Result<Value, Error> {
    parse(bytes, options, Build::All)
}

/// Checks `bytes` exactly as [`from_slice_with`] does (the whole document, duplicates,
/// depth and numbers included) but, when it is an object, builds only its top-level
/// members named in `keys`; the rest is checked and dropped. For a large document of
/// which a few fields are read on a hot path (a webhook delivery): no allocation for the
/// parts nobody reads. Any other document is returned whole.
///
/// ```
/// let v = bridgectl_json::pick_with(
///     br#"{"id": 7, "big": {"x": [1, 2, 3]}}"#,
///     bridgectl_json::Options::default(),
///     &["id"],
/// )
/// .unwrap();
/// assert_eq!(v, serde_json::json!({"id": 7}));
/// assert!(bridgectl_json::pick_with(br#"{"a": {"b": 1, "b": 2}}"#, Default::default(), &[]).is_err());
/// ```
pub fn pick_with(bytes: &[u8], options: Options, keys: &[&str]) -> Result<Value, Error> {
    parse(bytes, options, Build::Members(keys))
}

fn parse(bytes: &[u8], options: Options, build: Build<'_>) -> Result<Value, Error> {
    let mut p = Parser {
        bytes,
        pos: 0,
        options,
        path: Vec::new(),
    };
    p.skip_ws();
    let v = p.value(0, build)?;
    p.skip_ws();
    if p.pos != bytes.len() {
        return Err(p.syntax("trailing characters after the JSON value"));
    }
    Ok(v)
}

/// What a value is parsed into.
#[derive(Clone, Copy)]
enum Build<'k> {
    /// The value, whole.
    All,
    /// Nothing: checked only ([`Value::Null`] stands in).
    Nothing,
    /// An object keeps only these members (built whole); any other value is built whole.
    Members(&'k [&'k str]),
}

/// Where the parser is, for messages. A key is kept as the offset of its opening quote and
/// decoded again only when an error is reported, so a document costs no key copies.
enum Segment {
    Key(usize),
    Index(usize),
}

/// Keys of one object seen so far, when the object itself is not built: a list while
/// short (nearly every object), a hash set past [`LISTED_KEYS`], so an object with
/// thousands of keys costs linear time, not quadratic.
enum SeenKeys<'a> {
    Listed(Vec<Cow<'a, str>>),
    Hashed(HashSet<Cow<'a, str>>),
}

const LISTED_KEYS: usize = 16;

impl<'a> SeenKeys<'a> {
    /// Records `key`; false if it was there already.
    fn insert(&mut self, key: Cow<'a, str>) -> bool {
        match self {
            SeenKeys::Listed(list) => {
                if list.contains(&key) {
                    return false;
                }
                list.push(key);
                if list.len() > LISTED_KEYS {
                    *self = SeenKeys::Hashed(std::mem::take(list).into_iter().collect());
                }
                true
            }
            SeenKeys::Hashed(set) => set.insert(key),
        }
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    options: Options,
    path: Vec<Segment>,
}

const MAX_SHOWN: usize = 80;

fn shorten(s: &str) -> String {
    if s.chars().count() <= MAX_SHOWN {
        s.to_owned()
    } else {
        let head: String = s.chars().take(MAX_SHOWN).collect();
        format!("{head}... ({} chars)", s.chars().count())
    }
}

impl<'a> Parser<'a> {
    fn path(&self) -> String {
        let mut out = String::from("$");
        for seg in &self.path {
            match seg {
                Segment::Key(at) => {
                    // The key parsed once already, so it parses again.
                    let mut again = Parser {
                        bytes: self.bytes,
                        pos: *at,
                        options: self.options,
                        path: Vec::new(),
                    };
                    let key = again.string().unwrap_or_default();
                    out.push('.');
                    // A key comes from the document: its control characters escaped, so
                    // a message that names the place is safe to print.
                    for c in shorten(&key).chars() {
                        if c.is_control() {
                            out.extend(c.escape_default());
                        } else {
                            out.push(c);
                        }
                    }
                }
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    fn syntax(&self, reason: &'static str) -> Error {
        let upto = &self.bytes[..self.pos.min(self.bytes.len())];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = upto.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&upto[line_start..]).chars().count() + 1;
        Error::Syntax {
            line,
            column,
            reason,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect_literal(&mut self, word: &'static [u8], v: Value) -> Result<Value, Error> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.syntax("expected a value"))
        }
    }

    fn value(&mut self, depth: usize, build: Build<'_>) -> Result<Value, Error> {
        match self.peek() {
            None => Err(self.syntax("unexpected end of input")),
            Some(b'{') => self.object(depth + 1, build),
            Some(b'[') => self.array(depth + 1, build),
            Some(b'"') => {
                let s = self.string()?;
                Ok(match build {
                    Build::Nothing => Value::Null,
                    _ => Value::String(s.into_owned()),
                })
            }
            Some(b't') => self.expect_literal(b"true", Value::Bool(true)),
            Some(b'f') => self.expect_literal(b"false", Value::Bool(false)),
            Some(b'n') => self.expect_literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.syntax("expected a value")),
        }
    }

    fn check_depth(&self, depth: usize) -> Result<(), Error> {
        if depth > self.options.max_depth {
            Err(Error::TooDeep {
                limit: self.options.max_depth,
                path: self.path(),
            })
        } else {
            Ok(())
        }
    }

    fn object(&mut self, depth: usize, build: Build<'_>) -> Result<Value, Error> {
        self.check_depth(depth)?;
        self.pos += 1; // '{'
        let mut map = Map::new();
        // A built object finds duplicates in its map; otherwise the keys are kept apart.
        let mut seen = match build {
            Build::All => None,
            _ => Some(SeenKeys::Listed(Vec::new())),
        };
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(self.object_value(map, build));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.syntax("expected a string key"));
            }
            let key_at = self.pos;
            let key = self.string()?;
            let fresh = match &mut seen {
                None => !map.contains_key(&*key),
                Some(seen) => seen.insert(key.clone()),
            };
            if !fresh {
                return Err(Error::DuplicateKey {
                    key: shorten(&key),
                    path: self.path(),
                });
            }
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.syntax("expected ':' after a key"));
            }
            self.pos += 1;
            self.skip_ws();
            let member = match build {
                Build::All => Build::All,
                Build::Members(keys) if keys.contains(&&*key) => Build::All,
                _ => Build::Nothing,
            };
            self.path.push(Segment::Key(key_at));
            let v = self.value(depth, member)?;
            self.path.pop();
            if !matches!(member, Build::Nothing) {
                map.insert(key.into_owned(), v);
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(self.object_value(map, build));
                }
                _ => return Err(self.syntax("expected ',' or '}' in an object")),
            }
        }
    }

    fn object_value(&self, map: Map<String, Value>, build: Build<'_>) -> Value {
        match build {
            Build::Nothing => Value::Null,
            _ => Value::Object(map),
        }
    }

    fn array(&mut self, depth: usize, build: Build<'_>) -> Result<Value, Error> {
        self.check_depth(depth)?;
        self.pos += 1; // '['
        // Only objects are pruned by `Members`: an array is built whole or not at all.
        let item = match build {
            Build::Nothing => Build::Nothing,
            _ => Build::All,
        };
        let mut items = Vec::new();
        let mut index = 0;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            self.path.push(Segment::Index(index));
            let v = self.value(depth, item)?;
            self.path.pop();
            index += 1;
            if !matches!(item, Build::Nothing) {
                items.push(v);
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(match item {
                        Build::Nothing => Value::Null,
                        _ => Value::Array(items),
                    });
                }
                _ => return Err(self.syntax("expected ',' or ']' in an array")),
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, Error> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.syntax("unexpected end of input in a \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.syntax("invalid \\u escape"))?;
        if !text.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(self.syntax("invalid \\u escape"));
        }
        let v = u16::from_str_radix(text, 16).map_err(|_| self.syntax("invalid \\u escape"))?;
        self.pos += 4;
        Ok(v)
    }

    /// Moves past the longest run of bytes that stand for themselves in a string.
    fn plain_run(&mut self) -> &'a [u8] {
        let start = self.pos;
        let rest = &self.bytes[start..];
        let len = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    /// A string: borrowed from the input unless it has escapes.
    fn string(&mut self) -> Result<Cow<'a, str>, Error> {
        self.pos += 1; // opening quote
        let run = self.plain_run();
        if self.peek() == Some(b'"') {
            self.pos += 1;
            return std::str::from_utf8(run)
                .map(Cow::Borrowed)
                .map_err(|_| self.syntax("invalid UTF-8"));
        }
        let mut out = run.to_vec();
        loop {
            let Some(b) = self.peek() else {
                return Err(self.syntax("unexpected end of input in a string"));
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return String::from_utf8(out)
                        .map(Cow::Owned)
                        .map_err(|_| self.syntax("invalid UTF-8"));
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.syntax("unexpected end of input in an escape"));
                    };
                    self.pos += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(self.syntax("invalid escape")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                0..=0x1f => return Err(self.syntax("control character in a string")),
                _ => {
                    let run = self.plain_run();
                    out.extend_from_slice(run);
                }
            }
        }
    }

    fn unicode_escape(&mut self) -> Result<char, Error> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(self.syntax("lone surrogate in a \\u escape"));
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.syntax("lone surrogate in a \\u escape"));
                }
                0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.syntax("lone surrogate in a \\u escape")),
            other => u32::from(other),
        };
        char::from_u32(code).ok_or_else(|| self.syntax("invalid \\u escape"))
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, Error> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let int_digits = self.digits();
        if int_digits == 0 {
            return Err(self.syntax("invalid number"));
        }
        if int_digits > 1 && self.bytes[int_start] == b'0' {
            return Err(self.syntax("invalid number (leading zero)"));
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            integral = false;
            if self.digits() == 0 {
                return Err(self.syntax("invalid number (no digits after '.')"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            integral = false;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("invalid number (no digits in the exponent)"));
            }
        }
        // Only ASCII digits and signs were consumed.
        let text = std::str::from_utf8(&self.bytes[start..self.pos])
            .map_err(|_| self.syntax("invalid number"))?;
        if integral {
            if let Ok(u) = text.parse::<u64>() {
                return Ok(Value::Number(u.into()));
            }
            // `-0` is the float -0.0 in serde_json; keep the same value.
            if let Ok(i) = text.parse::<i64>()
                && i != 0
            {
                return Ok(Value::Number(i.into()));
            }
            if !self.options.lenient_numbers && text != "-0" {
                return Err(Error::InexactInteger {
                    literal: shorten(text),
                    path: self.path(),
                });
            }
        }
        let f: f64 = text.parse().map_err(|_| self.syntax("invalid number"))?;
        Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| self.syntax("number out of range"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn agrees_with_serde_json_on_ordinary_documents() {
        let docs = [
            r#"{"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d\u00e9\ud83d\ude00\n"}}"#,
            "[]",
            "{}",
            " \"x\" ",
            "0",
            "-0",
            "18446744073709551615",
            "-9223372036854775808",
            "1.5e-7",
        ];
        for d in docs {
            let ours = from_slice(d.as_bytes()).expect(d);
            let theirs: Value = serde_json::from_str(d).expect(d);
            assert_eq!(ours, theirs, "{d}");
        }
    }

    #[test]
    fn refusals_name_the_place() {
        let cases = [
            (r#"{"a": 1, "a": 2}"#, "duplicate key \"a\" in $"),
            (
                r#"{"x": [{"to": 1}, {"to": 1, "to": 2}]}"#,
                "duplicate key \"to\" in $.x[1]",
            ),
            (
                r#"{"v": 18446744073709551616}"#,
                "integer 18446744073709551616 at $.v",
            ),
            (
                r#"{"v": -9223372036854775809}"#,
                "integer -9223372036854775809",
            ),
            ("{\"a\": 1,}", "line 1, column 9: expected a string key"),
            (
                "{\"a\"\n: 01}",
                "line 2, column 5: invalid number (leading zero)",
            ),
            ("[1] x", "trailing characters"),
            ("\"\\ud800\"", "lone surrogate"),
            ("\"a\tb\"", "control character"),
            ("", "unexpected end of input"),
            ("nul", "expected a value"),
            ("1.", "no digits after '.'"),
            ("1e", "no digits in the exponent"),
            ("1e400", "number out of range"),
        ];
        for (doc, want) in cases {
            let e = from_slice(doc.as_bytes()).expect_err(doc).to_string();
            assert!(e.contains(want), "{doc:?}: {e:?} lacks {want:?}");
        }
    }

    #[test]
    fn picking_refuses_what_a_full_parse_refuses_with_the_same_message() {
        let docs = [
            r#"{"a": 1, "x": {"k": 1, "k": 2}}"#,
            r#"{"x": [{"to": 1}, {"to": 1, "to": 2}]}"#,
            r#"{"x": {"v": 18446744073709551616}}"#,
            r#"{"x": {"\u0061": 1, "a": 2}}"#,
            r#"{"x": "a\tb", "y": "\ud800"}"#,
            "{\"x\": [1, 2,]}",
        ];
        for doc in docs {
            let full = from_slice(doc.as_bytes()).expect_err(doc).to_string();
            let picked = pick_with(doc.as_bytes(), Options::default(), &["a"])
                .expect_err(doc)
                .to_string();
            assert_eq!(full, picked, "{doc}");
        }
        // Many keys in an object that is not built: still refused, still linear.
        let mut many: String = (0..1000).map(|i| format!("\"k{i}\": {i}, ")).collect();
        many = format!("{{\"x\": {{{many}\"k999\": 0}}}}");
        let e = pick_with(many.as_bytes(), Options::default(), &[]).expect_err("duplicate");
        assert!(
            e.to_string().contains("duplicate key \"k999\" in $.x"),
            "{e}"
        );
    }

    #[test]
    fn a_place_shows_the_keys_on_its_path_escaped() {
        let err = from_slice(b"{\"a\\u001b[2J\x7f\": {\"x\": 1, \"x\": 2}}").expect_err("twice");
        let msg = err.to_string();
        assert!(msg.contains("in $.a\\u{1b}[2J\\u{7f}"), "{msg}");
        assert!(!msg.chars().any(char::is_control), "{msg:?}");
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "[".repeat(129) + &"]".repeat(129);
        let e = from_slice(deep.as_bytes()).expect_err("too deep");
        assert!(matches!(e, Error::TooDeep { limit: 128, .. }), "{e}");
        let ok = "[".repeat(128) + &"]".repeat(128);
        from_slice(ok.as_bytes()).expect("128 levels");
    }

    #[test]
    fn lenient_numbers_read_big_integers_as_floats() {
        let opts = Options {
            lenient_numbers: true,
            ..Options::default()
        };
        let v = from_slice_with(b"[18446744073709551616]", opts).expect("lenient");
        assert_eq!(v, serde_json::json!([18446744073709551616.0]));
    }

    proptest! {
        // Whatever serde_json accepts without duplicate keys or big integers, we accept
        // with the same value; whatever we accept, serde_json accepts too.
        #[test]
        fn same_value_as_serde_json(s in "[\\[\\]{}\",:0-9a-z\\\\. e\\-]{0,40}") {
            let ours = from_slice(s.as_bytes());
            let theirs: Result<Value, _> = serde_json::from_str(&s);
            if let Ok(v) = &ours {
                prop_assert_eq!(Some(v), theirs.as_ref().ok());
            }
        }

        // Picking members checks exactly what a full parse checks, and keeps exactly the
        // named top-level members.
        #[test]
        fn picking_agrees_with_a_full_parse(s in "[\\[\\]{}\",:0-9a-z\\\\. e\\-]{0,40}") {
            let full = from_slice(s.as_bytes());
            let picked = pick_with(s.as_bytes(), Options::default(), &["a", "b"]);
            prop_assert_eq!(full.is_ok(), picked.is_ok(), "{:?} {:?}", full, picked);
            if let (Ok(Value::Object(full)), Ok(Value::Object(picked))) = (&full, &picked) {
                let want: Map<String, Value> = full
                    .iter()
                    .filter(|(k, _)| *k == "a" || *k == "b")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                prop_assert_eq!(&want, picked);
            } else if let Ok(v) = &full {
                prop_assert_eq!(Some(v), picked.as_ref().ok());
            }
        }

        #[test]
        fn picked_documents_round_trip(v in arb_value()) {
            let text = serde_json::to_string(&v).expect("serialize");
            let picked = pick_with(text.as_bytes(), Options::default(), &[]).expect("parse");
            if !v.is_object() {
                prop_assert_eq!(picked, v);
            }
        }

        #[test]
        fn serialized_values_round_trip(v in arb_value()) {
            let text = serde_json::to_string(&v).expect("serialize");
            prop_assert_eq!(from_slice(text.as_bytes()).expect("parse"), v);
        }
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| Value::Number(i.into())),
            any::<u64>().prop_map(|u| Value::Number(u.into())),
            "\\PC{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{0,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
