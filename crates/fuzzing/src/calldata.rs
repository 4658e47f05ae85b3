//! Calldata decode against encode.

use std::collections::BTreeMap;

use bridgectl_tx::calldata::{Decoded, ParamKind, Value, classify, encode};

/// Input: calldata bytes.
///
/// Properties: [`classify`] never panics; a decoded call, re-encoded from its arguments
/// as text (the way the platform's `inputs` arrive), gives back the exact bytes; every
/// argument's text parses back to the same value.
pub fn calldata(data: &[u8]) {
    match classify(data) {
        Decoded::Call(call) => {
            let mut inputs = BTreeMap::new();
            for (param, value) in &call.args {
                let text = value.to_string();
                let kind = match value {
                    Value::Address(_) => ParamKind::Address,
                    Value::Uint(_) => ParamKind::Uint256,
                };
                assert_eq!(
                    Value::parse(kind, &text).as_ref(),
                    Ok(value),
                    "{text} does not parse back"
                );
                inputs.insert(param.name.to_owned(), text);
            }
            let again = encode(call.function.name, &inputs).expect("a decoded call re-encodes");
            assert_eq!(again, data, "decode then encode changed the calldata");
        }
        Decoded::Empty => assert!(data.is_empty()),
        Decoded::TooShort { len } => assert!(len < 4 && len == data.len()),
        Decoded::Unknown { len, .. } => assert_eq!(len, data.len()),
        Decoded::Malformed { .. } => {}
    }
    // The text side: whatever a user or the platform writes never panics.
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Value::parse(ParamKind::Uint256, text);
        let _ = Value::parse(ParamKind::Address, text);
    }
}
