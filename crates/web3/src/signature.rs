//! The `x-signature` of a delivery: lowercase hex of HMAC-SHA256 over the raw request body,
//! keyed with the UTF-8 bytes of the webhook's `signingKey`.
//!
//! The algorithm is inferred (platform-facts.md: "HMAC-SHA256 of the raw body, hex"); it is
//! kept in this one module so a correction is one edit. Verification goes through
//! `Mac::verify_slice`, which compares in constant time.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Signs `body` with `key`: the value a sender puts in `x-signature`.
pub fn sign(key: &[u8], body: &[u8]) -> String {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable_invalid_length(),
    };
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// Checks `header` (hex, upper or lower case, an optional `0x` or `sha256=` prefix) against
/// the HMAC of `body` under `key`, in constant time.
pub fn verify(key: &[u8], body: &[u8], header: &str) -> bool {
    let header = header.trim();
    let header = header
        .strip_prefix("sha256=")
        .or_else(|| header.strip_prefix("0x"))
        .unwrap_or(header);
    let Ok(given) = hex::decode(header) else {
        return false;
    };
    let Ok(mut mac) = HmacSha256::new_from_slice(key) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

#[cold]
fn unreachable_invalid_length() -> ! {
    // `Hmac::new_from_slice` only fails for fixed-key MACs; HMAC takes any key length.
    unreachable!("hmac accepts keys of any length")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_case_2() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        assert_eq!(
            sign(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn verify_accepts_only_the_right_mac() {
        let sig = sign(b"k", b"body");
        assert!(verify(b"k", b"body", &sig));
        assert!(verify(b"k", b"body", &sig.to_uppercase()));
        assert!(verify(b"k", b"body", &format!("sha256={sig}")));
        assert!(!verify(b"k", b"body!", &sig));
        assert!(!verify(b"k2", b"body", &sig));
        assert!(!verify(b"k", b"body", &sig[..62]));
        assert!(!verify(b"k", b"body", "zz"));
        assert!(!verify(b"k", b"body", ""));
    }
}
