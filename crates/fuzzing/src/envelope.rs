//! Platform envelopes.

use bridgectl_flow::Error;
use bridgectl_flow::client::parse_envelope;
use reqwest::StatusCode;

/// Input: two bytes of HTTP status (big endian, mapped into 100..=599), then the body.
///
/// Properties: no panic; a success status with `"result": false` is an error, never
/// data; a 2xx body that is not JSON is an error that quotes at most 200 characters;
/// an error status is always an error.
pub fn envelope(data: &[u8]) {
    let Some((status, body)) = data.split_first_chunk::<2>() else {
        return;
    };
    let code = 100 + u16::from_be_bytes(*status) % 500;
    let Ok(status) = StatusCode::from_u16(code) else {
        return;
    };
    let answer = parse_envelope("POST /fuzz", status, body);
    // The reference is the strict parser the client uses: serde_json's default float
    // parsing is not correctly rounded (a fuzz input found `23333333333.333333333`
    // read one ULP apart), so it cannot stand in for it.
    let parsed: Option<serde_json::Value> = bridgectl_json::from_slice(body).ok();
    let result_false = parsed
        .as_ref()
        .and_then(|v| v.get("result"))
        .and_then(serde_json::Value::as_bool)
        == Some(false);
    if !status.is_success() || result_false {
        assert!(answer.is_err(), "HTTP {code} or result:false became data");
    }
    match answer {
        Ok(data) => {
            let whole = parsed.expect("data came from a JSON body");
            assert_eq!(whole.get("data").unwrap_or(&whole), &data);
        }
        Err(Error::UnexpectedShape { data, .. }) => {
            let quoted = data.as_str().map_or(0, |s| s.chars().count());
            assert!(quoted <= 200, "an unexpected answer is quoted whole");
        }
        Err(Error::Platform { error, .. }) => assert_eq!(error.status, code),
        Err(other) => panic!("unexpected error kind: {other}"),
    }
}
