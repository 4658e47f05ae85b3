//! One leak scan for every CLI test: the secrets a test knows, looked for in every place
//! a command leaves text or bytes (stdout, stderr, a listener's stderr, the journal and
//! event-store files with their WAL, the sandbox's request log with its headers).
//!
//! - a private key is found with or without `0x`, in any case, as its 32 raw bytes (a
//!   binary file such as SQLite could hold it unencoded), in base64 (standard or URL
//!   alphabet, any padding), as a decimal integer, and as a byte array the way `Debug`
//!   or JSON prints one (`[70, 70, ...]`, `[70,70,...]`);
//! - every other secret (passphrase, access and secret keys, issued tokens, webhook
//!   signing keys, node API keys, mnemonics) is found in any case, and in base64 at any
//!   alignment inside a longer encoded text (an `Authorization: Basic` header, a
//!   serialized blob);
//! - a secret shorter than 8 characters cannot be told from ordinary text and is refused
//!   when added: a test that wants its passphrase scanned gives it a long one.

#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

/// The secrets of one test.
#[derive(Clone, Default)]
pub struct Secrets {
    /// (what it is, lower-case text to look for)
    text: Vec<(String, String)>,
    /// (what it is, raw bytes to look for)
    raw: Vec<(String, Vec<u8>)>,
}

impl Secrets {
    /// No secrets yet.
    pub fn new() -> Secrets {
        Secrets::default()
    }

    /// A secret string, found in any case. `what` names it in a failure (never the value).
    pub fn add(&mut self, what: &str, value: &str) -> &mut Self {
        assert!(
            value.len() >= 8,
            "{what}: a secret under 8 characters cannot be scanned for without false alarms"
        );
        self.text.push((what.to_owned(), value.to_lowercase()));
        self.add_base64(what, value.as_bytes());
        self
    }

    /// `bytes` in base64, as the characters that depend on them alone at each of the
    /// three alignments a longer encoded text can put them at, in both alphabets.
    fn add_base64(&mut self, what: &str, bytes: &[u8]) {
        for alphabet in [STANDARD, URL_SAFE] {
            for (offset, needle) in base64_cores(bytes, alphabet).into_iter().enumerate() {
                self.raw.push((
                    format!("{what} (base64, alignment {offset})"),
                    needle.into_bytes(),
                ));
            }
        }
    }

    /// A private key in hex (with or without `0x`): found in hex with or without `0x`, in
    /// any case, and as its raw bytes.
    pub fn add_key(&mut self, what: &str, hex_key: &str) -> &mut Self {
        let digits = hex_key.trim().trim_start_matches("0x").to_lowercase();
        let raw = hex::decode(&digits).unwrap_or_else(|e| panic!("{what}: not hex: {e}"));
        assert_eq!(raw.len(), 32, "{what}: a private key is 32 bytes");
        self.text.push((format!("{what} (hex)"), digits));
        let decimal = alloy_primitives::U256::from_be_slice(&raw).to_string();
        self.text.push((format!("{what} (decimal)"), decimal));
        for separator in [", ", ","] {
            let array = raw
                .iter()
                .map(u8::to_string)
                .collect::<Vec<_>>()
                .join(separator);
            self.text
                .push((format!("{what} (byte array)"), format!("[{array}]")));
        }
        self.add_base64(what, &raw);
        self.raw.push((format!("{what} (raw bytes)"), raw));
        self
    }

    /// Adds every secret a sandbox holds or has handed out (its secret key, issued
    /// tokens, webhook signing keys, account keys).
    pub fn add_sandbox(&mut self, state: &bridgectl_sandbox::AppState) -> &mut Self {
        for s in state.secrets() {
            self.add_sandbox_secret(&s);
        }
        self
    }

    /// Adds one secret of a sandbox's: a key (32 bytes of hex) as a key, anything else as
    /// a secret string.
    pub fn add_sandbox_secret(&mut self, s: &str) -> &mut Self {
        match hex::decode(s.trim_start_matches("0x")) {
            Ok(b) if b.len() == 32 => self.add_key("a sandbox key", s),
            _ => self.add("a sandbox secret", s),
        }
    }

    /// Adds every secret of `other` (in every form it has there).
    pub fn extend(&mut self, other: &Secrets) -> &mut Self {
        self.text.extend(other.text.iter().cloned());
        self.raw.extend(other.raw.iter().cloned());
        self
    }

    /// These secrets but the ones named `what` (in any form): for a place that is
    /// meant to receive that one, e.g. a node and its API key.
    pub fn without(&self, what: &str) -> Secrets {
        let keep = |name: &String| !name.starts_with(what);
        Secrets {
            text: self.text.iter().filter(|(n, _)| keep(n)).cloned().collect(),
            raw: self.raw.iter().filter(|(n, _)| keep(n)).cloned().collect(),
        }
    }

    /// Fails the test if `bytes` (from `place`) hold any secret.
    pub fn scan(&self, place: &str, bytes: &[u8]) {
        let lower = bytes.to_ascii_lowercase();
        let text = self.text.iter().map(|(_, n)| n.as_bytes());
        if let Some((i, at)) = find_any(&lower, text) {
            let (what, needle) = &self.text[i];
            let from = at.saturating_sub(80);
            let to = (at + needle.len() + 80).min(bytes.len());
            panic!(
                "{what} appeared in {place}, here:\n{}",
                String::from_utf8_lossy(&bytes[from..to])
            );
        }
        if let Some((i, _)) = find_any(bytes, self.raw.iter().map(|(_, n)| n.as_slice())) {
            panic!("{} appeared in {place} (binary)", self.raw[i].0);
        }
    }

    /// Scans a command's stdout and stderr.
    pub fn scan_output(&self, what: &str, out: &Output) {
        self.scan(&format!("the stdout of {what}"), &out.stdout);
        self.scan(&format!("the stderr of {what}"), &out.stderr);
    }

    /// Scans a file and, for SQLite, its `-wal` and `-journal` siblings (where a crash
    /// leaves the last commits). A file that does not exist is a test error.
    pub fn scan_file(&self, path: &Path) {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        self.scan(&path.display().to_string(), &bytes);
        for suffix in ["-wal", "-journal"] {
            let mut side = path.as_os_str().to_owned();
            side.push(suffix);
            if let Ok(bytes) = std::fs::read(&side) {
                self.scan(&Path::new(&side).display().to_string(), &bytes);
            }
        }
    }

    /// Scans `requests` (lines of a sandbox's request log), with their headers.
    pub fn scan_requests(&self, requests: &[bridgectl_sandbox::LoggedRequest]) {
        for r in requests {
            let text = format!("{}\n{}", r.line, r.headers);
            self.scan("the sandbox's request log", text.as_bytes());
        }
    }
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// For each offset 0, 1, 2 (bytes before `bytes` in the encoded stream): the base64
/// characters whose six bits all come from `bytes`. Whatever surrounds the secret in a
/// longer encoded text, one of the three is in it.
fn base64_cores(bytes: &[u8], alphabet: &[u8; 64]) -> Vec<String> {
    (0..3usize)
        .map(|offset| {
            let first_bit = 8 * offset;
            let end_bit = 8 * (offset + bytes.len());
            let bit = |i: usize| -> u8 {
                let byte = bytes[(i - first_bit) / 8];
                (byte >> (7 - (i - first_bit) % 8)) & 1
            };
            (0..end_bit / 6)
                .filter(|c| 6 * c >= first_bit && 6 * c + 6 <= end_bit)
                .map(|c| {
                    let index = (0..6).fold(0u8, |acc, k| (acc << 1) | bit(6 * c + k));
                    alphabet[usize::from(index)] as char
                })
                .collect()
        })
        .collect()
}

/// The first place in `haystack` where one of `needles` starts: (which needle, where).
/// One pass over the haystack whatever the number of needles (a shared sandbox's secrets
/// are thousands of needles, and every output of every command is scanned for them):
/// each position's first bytes are looked up among the needles' first bytes, and only
/// the needles that start so are compared whole.
fn find_any<'a>(
    haystack: &[u8],
    needles: impl Iterator<Item = &'a [u8]>,
) -> Option<(usize, usize)> {
    let needles: Vec<&[u8]> = needles.collect();
    let k = needles
        .iter()
        .map(|n| n.len())
        .filter(|&l| l > 0)
        .min()?
        .min(8);
    let mut by_prefix: std::collections::HashMap<&[u8], Vec<usize>> =
        std::collections::HashMap::new();
    for (i, n) in needles.iter().enumerate() {
        if !n.is_empty() {
            by_prefix.entry(&n[..k]).or_default().push(i);
        }
    }
    for at in 0..haystack.len().saturating_sub(k - 1) {
        if let Some(candidates) = by_prefix.get(&haystack[at..at + k]) {
            for &i in candidates {
                if haystack[at..].starts_with(needles[i]) {
                    return Some((i, at));
                }
            }
        }
    }
    None
}

#[test]
fn the_scan_finds_a_key_in_every_form_and_nothing_else() {
    let key = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
    let mut s = Secrets::new();
    s.add_key("the key", key).add("the token", "Tok-En-1234");
    let caught = |bytes: &[u8]| {
        let s = s.clone();
        let bytes = bytes.to_vec();
        std::panic::catch_unwind(move || s.scan("x", &bytes)).is_err()
    };
    assert!(caught(key.as_bytes()));
    assert!(caught(format!("0x{key}").as_bytes()));
    assert!(caught(format!("0X{}", key.to_uppercase()).as_bytes()));
    assert!(caught(
        &[b"\x00\x01".as_slice(), &hex::decode(key).expect("hex")].concat()
    ));
    assert!(caught(b"bearer tok-en-1234"));
    // Encoded: base64 of the key alone and inside a longer text at every alignment, in
    // both alphabets; decimal; byte arrays as Debug and JSON print them.
    let raw = hex::decode(key).expect("hex");
    for prefix in [&b""[..], b"x", b"xy"] {
        let blob = [prefix, &raw, b"tail"].concat();
        for alphabet in [STANDARD, URL_SAFE] {
            let encoded = encode_base64(&blob, alphabet);
            assert!(
                caught(encoded.as_bytes()),
                "base64 at offset {}",
                prefix.len()
            );
        }
        let token = encode_base64(&[prefix, b"Tok-En-1234".as_slice()].concat(), STANDARD);
        assert!(caught(format!("Basic {token}").as_bytes()), "{token}");
    }
    let decimal = alloy_primitives::U256::from_be_slice(&raw).to_string();
    assert!(caught(format!("key={decimal}").as_bytes()));
    assert!(caught(format!("{raw:?}").as_bytes()));
    assert!(caught(
        serde_json::to_string(&raw).expect("json").as_bytes()
    ));
    // A place meant to receive one secret (a node and its API key) is scanned for the
    // others, in every form, and not for that one.
    let without = s.without("the token");
    let caught_without = |bytes: &[u8]| {
        let s = without.clone();
        let bytes = bytes.to_vec();
        std::panic::catch_unwind(move || s.scan("x", &bytes)).is_err()
    };
    assert!(!caught_without(b"?apikey=Tok-En-1234"));
    assert!(caught_without(key.as_bytes()));
    assert!(caught_without(encode_base64(&raw, URL_SAFE).as_bytes()));
    // Another key's encodings are not this one's.
    let other = [0x11u8; 32];
    assert!(!caught(encode_base64(&other, STANDARD).as_bytes()));
    assert!(!caught(format!("{other:?}").as_bytes()));
    assert!(!caught(&key.as_bytes()[..63]));
    assert!(!caught(b"token: <an issued token>"));
}

/// Plain base64 with padding: the encoder the scan is checked against (written apart
/// from [`base64_cores`]).
fn encode_base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .chain(std::iter::repeat(&0))
            .take(3)
            .fold(0u32, |acc, b| (acc << 8) | u32::from(*b));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(alphabet[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One secret type across the crates: what the sandbox hands out, a keystore passphrase,
/// the platform's token and the web3 token are the same type, so a wallet moves a secret
/// from one crate to another as it is, and one `Debug` keeps it out of every log.
#[test]
fn every_crate_takes_the_one_secret_type() {
    use std::any::TypeId;
    let one = TypeId::of::<bridgectl_secret::Secret>();
    for (name, t) in [
        (
            "keystore Passphrase",
            TypeId::of::<bridgectl_keystore::Passphrase>(),
        ),
        (
            "keystore SecretText",
            TypeId::of::<bridgectl_keystore::SecretText>(),
        ),
        (
            "flow AccessToken",
            TypeId::of::<bridgectl_flow::client::AccessToken>(),
        ),
        ("flow Secret", TypeId::of::<bridgectl_flow::Secret>()),
        ("webhook Secret", TypeId::of::<bridgectl_webhook::Secret>()),
        ("sandbox Secret", TypeId::of::<bridgectl_sandbox::Secret>()),
    ] {
        assert_eq!(t, one, "{name} is another type");
    }
    // The sandbox's token goes to the platform client unconverted.
    let token: bridgectl_sandbox::Secret = bridgectl_secret::Secret::new("sandbox-token-xyz");
    let client = bridgectl_flow::client::PlatformClient::new(
        "http://127.0.0.1:1",
        token.clone(),
        Default::default(),
    )
    .expect("client");
    assert!(!format!("{token:?} {client:?}").contains("sandbox-token-xyz"));
}
