//! A string secret (tokens, keys) that never shows in `Debug` and is wiped on drop.

use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

/// A secret string: the bearer token, the API secret key, a private key in hex.
///
/// No `Display`, no `Serialize`, a redacted `Debug`; read it with
/// [`Secret::expose_secret`] so a grep finds every place that does.
#[derive(Clone)]
pub struct Secret(SecretString);

impl Secret {
    /// Wraps a string.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(SecretString::from(value.into()))
    }

    /// The secret itself.
    pub fn expose_secret(&self) -> &str {
        self.0.expose_secret()
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.expose_secret() == other.expose_secret()
    }
}

impl Eq for Secret {}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Zeroizing::new(String::deserialize(d)?);
        Ok(Secret::new(s.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::new("hunter2-very-secret");
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(s.expose_secret(), "hunter2-very-secret");
    }
}
