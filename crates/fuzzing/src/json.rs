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
/// - picking top-level members ([`bridgectl_json::pick_with`], the webhook listener's
///   path) accepts and refuses exactly what the full parse does, with the same message,
///   and keeps exactly the picked members;
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
    check_picking(data, &strict);
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

/// The members picked are the two most common one-letter keys in fuzz inputs.
fn check_picking(data: &[u8], strict: &Result<Value, Error>) {
    const KEYS: [&str; 2] = ["a", "b"];
    let picked = bridgectl_json::pick_with(data, Options::default(), &KEYS);
    match (strict, &picked) {
        (Ok(Value::Object(full)), Ok(Value::Object(picked))) => {
            let want: serde_json::Map<String, Value> = full
                .iter()
                .filter(|(k, _)| KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(&want, picked, "picked members differ");
        }
        (Ok(full), Ok(picked)) => assert_eq!(full, picked, "picking changed a non-object"),
        (Err(full), Err(picked)) => {
            assert_eq!(full.to_string(), picked.to_string(), "another refusal")
        }
        (full, picked) => panic!("picking disagrees: {full:?} vs {picked:?}"),
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
