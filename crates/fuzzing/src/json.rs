//! The strict JSON parser every untrusted document goes through.

use bridgectl_json::{Error, Options};
use serde_json::Value;

/// Input: the document.
///
/// Properties, with `serde_json` as the reference parser:
/// - no panic, whatever the bytes;
/// - what the strict parser accepts, `serde_json` accepts too, as the same value when
///   the document has no fractions or exponents (serde_json's default float reading is
///   not correctly rounded, so those are compared by the round trip below instead);
/// - its own output reads back as the same value (floats included);
/// - the lenient mode accepts everything the strict mode does, with the same value;
/// - a document `serde_json` accepts is refused only for a reason the strict parser
///   exists for: a duplicate key, an integer beyond 64 bits, or nesting too deep. Any
///   other disagreement is a syntax bug in one of the two.
pub fn json(data: &[u8]) {
    let strict = bridgectl_json::from_slice(data);
    let lenient = bridgectl_json::from_slice_with(
        data,
        Options {
            lenient_numbers: true,
            ..Options::default()
        },
    );
    let reference: Result<Value, _> = serde_json::from_slice(data);
    match &strict {
        Ok(value) => {
            assert_eq!(lenient.as_ref().ok(), Some(value), "lenient mode disagrees");
            let text = serde_json::to_vec(value).expect("a Value serializes");
            let again = bridgectl_json::from_slice(&text).expect("own output reads back");
            assert_eq!(&again, value, "round trip changed the value");
            let reference = reference.expect("serde_json refused an accepted document");
            if !has_fraction(value) {
                assert_eq!(&reference, value, "serde_json reads another value");
            }
        }
        Err(error) => {
            if reference.is_ok() {
                assert!(
                    matches!(
                        error,
                        Error::DuplicateKey { .. }
                            | Error::InexactInteger { .. }
                            | Error::TooDeep { .. }
                    ),
                    "serde_json accepts what the strict parser calls: {error}"
                );
            }
            if !matches!(error, Error::InexactInteger { .. }) {
                assert!(lenient.is_err(), "lenient mode accepts: {error}");
            }
        }
    }
}

fn has_fraction(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_fraction),
        Value::Object(map) => map.values().any(has_fraction),
        _ => false,
    }
}
