#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

use std::fmt;

use secrecy::SecretString;
pub use secrecy::{ExposeSecret, ExposeSecretMut};
use zeroize::Zeroizing;

/// 32 bytes of key material (a private key, a key derived from a passphrase): `secrecy`'s
/// box as it is (wiped on drop, `Debug` prints nothing of it, read through
/// [`ExposeSecret::expose_secret`] and written through [`ExposeSecretMut::expose_secret_mut`]
/// only), on the heap so that moving it leaves no copy behind.
pub type KeyBytes = secrecy::SecretBox<[u8; 32]>;

/// A secret string. Wiped from memory on drop; never printed.
///
/// Cheap to clone (the copies share nothing but the text, each wiped on its own drop);
/// equal when the texts are. Deserializes from a JSON or TOML string, so a configuration
/// file's secret never passes through a plain `String` that outlives it.
#[derive(Clone)]
pub struct Secret(SecretString);

impl Secret {
    /// Wraps `text`. A `String` is moved in, so no copy stays behind.
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(SecretString::from(text.into()))
    }

    /// The text. Call at each read; do not keep the `&str` around.
    pub fn expose_secret(&self) -> &str {
        self.0.expose_secret()
    }
}

impl From<String> for Secret {
    fn from(text: String) -> Secret {
        Secret::new(text)
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.expose_secret() == other.expose_secret()
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Zeroizing::new(String::deserialize(d)?);
        Ok(Secret::new(text.as_str()))
    }
}

/// A secret that does not open what it was given for: a passphrase whose key derivation
/// fails the key file's authentication check (an AES-GCM tag, a Web3 Secret Storage MAC).
///
/// A crate that checks a secret returns it as the `source()` of its own "wrong
/// passphrase" error, so a caller several layers away (a flow whose approver could not
/// unlock its key) tells a wrong secret from every other failure by walking `source()`
/// and downcasting to this one type, without knowing the checking crate's error type.
/// It holds nothing: no part of the secret or of what it failed to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WrongSecret;

impl fmt::Display for WrongSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("its authentication check fails with this passphrase")
    }
}

impl std::error::Error for WrongSecret {}

/// Whether `err` or one of its causes is a [`WrongSecret`].
pub fn is_wrong_secret(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.is::<WrongSecret>() {
            return true;
        }
        next = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_text_and_expose_secret_reads_it() {
        let s = Secret::new("hunter2-very-secret");
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(s.expose_secret(), "hunter2-very-secret");
        assert_eq!(s.clone(), s);
        assert_ne!(Secret::new("a"), s);
    }

    #[test]
    fn key_bytes_debug_prints_none_of_them() {
        let mut key = KeyBytes::default();
        key.expose_secret_mut().fill(0xab);
        assert!(!format!("{key:?}").contains("171"));
        assert_eq!(key.expose_secret(), &[0xab; 32]);
    }

    #[test]
    fn deserializes_from_a_string_only() {
        let s: Secret = serde_json::from_str("\"tok\"").expect("a string");
        assert_eq!(s.expose_secret(), "tok");
        assert!(serde_json::from_str::<Secret>("42").is_err());
    }
}
