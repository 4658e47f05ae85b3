//! Webhook deliveries: the body as the listener reads it, and the `x-signature` header.

use bridgectl_web3::signature::{sign, verify};
use bridgectl_webhook::listener::parse_delivery;

/// Input: the `x-signature` header value, a `\n`, then the body.
///
/// Properties: reading the body never panics and an accepted delivery has non-empty
/// ids of at most 128 characters; checking the header never panics, and a fixed key
/// accepts its own signature of the body (lower and upper case) and refuses the header
/// given unless it is that signature.
pub fn webhook_delivery(data: &[u8]) {
    let (header, body) = crate::input::split_line(data);
    if let Ok((subscription, sequence, _event)) = parse_delivery(body) {
        for id in [&subscription, &sequence] {
            assert!(!id.is_empty() && id.chars().count() <= 128, "id {id:?}");
        }
    }
    let key = b"fuzz-signing-key";
    let header = String::from_utf8_lossy(header);
    let right = sign(key, body);
    assert!(verify(key, body, &right));
    assert!(verify(key, body, &right.to_uppercase()));
    assert!(verify(key, body, &format!("sha256={right}")));
    if verify(key, body, &header) {
        let h = header.trim();
        let h = h
            .strip_prefix("sha256=")
            .or_else(|| h.strip_prefix("0x"))
            .unwrap_or(h);
        assert_eq!(
            h.to_ascii_lowercase(),
            right,
            "a header that is not the signature verified"
        );
    }
}
