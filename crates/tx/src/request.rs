//! What `bridgectl sign` accepts: a bare rawTx, the platform's transaction-action
//! envelope, or a versioned sign-request file. The schemas are documented in the
//! crate README.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::Error;
use crate::rawtx::{RawTx, reject_unknown};

/// The `format` value of a sign-request file.
pub const REQUEST_FORMAT: &str = "bridgectl-sign-request";
/// The sign-request version this crate writes and reads.
pub const REQUEST_VERSION: u64 = 1;

/// Which of the accepted shapes the input had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputKind {
    /// A bare rawTx object.
    RawTx,
    /// `{result, data: {from, rawTx, ...}}` from a transaction action.
    Envelope,
    /// A `bridgectl-sign-request` file.
    SignRequest,
    /// An EIP-4527 `eth-sign-request` (read from QR codes): the unsigned legacy
    /// transaction's EIP-155 signing preimage with its sender, no intent.
    EthSignRequest,
}

/// What the user asked for, written by the online half into a sign request. Every
/// field is optional; each present one is checked against the rawTx before signing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Intent {
    /// The contract function (`redeem`), as in [`crate::calldata::FUNCTIONS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// Expected arguments: parameter name -> decimal base units or address.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, String>,
    /// The expected callee (the token contract).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::rawtx::ser_opt_address"
    )]
    pub to: Option<Address>,
    /// The expected chain id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_id: Option<u64>,
    /// The token, to show amounts in its units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Token>,
    /// A line for people (`redeem 1.5 ST`); shown, never checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Set ([`Intent::pinned_by_caller`]) by code that built this intent from its own
    /// caller's arguments (a redeem's amount, a transfer's recipient and amount, an
    /// action's function and inputs as the operator gave them): the operator's pin of the
    /// call, as a policy's expectations are ([`crate::Verified::pins_call`]). Never read
    /// from or written to a document: a sign request's intent comes from the machine that
    /// made its transaction, so its agreeing with it proves nothing.
    #[serde(skip)]
    pub caller_pinned: bool,
}

impl Intent {
    /// A redeem of `amount` (base units) ST: the ST contract `token`'s
    /// `redeem(_amount)` on chain `chain_id`. What the platform's redeem action must
    /// return, whatever else it claims.
    pub fn redeem(token: Address, chain_id: u64, amount: U256) -> Intent {
        Intent::call(token, chain_id, "redeem", [("_amount", amount.to_string())])
    }

    /// An ERC-20 transfer of `amount` (base units) of the token at `token` on chain
    /// `chain_id` to `to`: `transfer(_to, _value)`.
    pub fn transfer(token: Address, chain_id: u64, to: Address, amount: U256) -> Intent {
        Intent::call(
            token,
            chain_id,
            "transfer",
            [("_to", to.to_string()), ("_value", amount.to_string())],
        )
    }

    /// A swap's signed half: `amount` (base units) MT of the token at `token` on chain
    /// `chain_id` to the swap address the platform issued; the ST arrives without a
    /// further signature. The same call as [`Intent::transfer`], described as a swap.
    pub fn swap(token: Address, chain_id: u64, swap_address: Address, amount: U256) -> Intent {
        Intent::transfer(token, chain_id, swap_address, amount)
            .described(format!("swap: send MT to the swap address {swap_address}"))
    }

    /// The same, with the token's symbol and decimals to show amounts by.
    pub fn with_token(self, symbol: impl Into<String>, decimals: u8) -> Intent {
        Intent {
            token: Some(Token {
                symbol: symbol.into(),
                decimals,
            }),
            ..self
        }
    }

    /// The same, with a line for people (shown, never checked).
    pub fn described(self, description: impl Into<String>) -> Intent {
        Intent {
            description: Some(description.into()),
            ..self
        }
    }

    /// The same, as the operator's own pin of the call (see [`Intent::caller_pinned`]):
    /// for an intent built from its caller's arguments, never for one read from a
    /// request or chosen by the platform (an action's function from its list).
    pub fn pinned_by_caller(self) -> Intent {
        Intent {
            caller_pinned: true,
            ..self
        }
    }

    fn call<const N: usize>(
        to: Address,
        chain_id: u64,
        function: &str,
        args: [(&str, String); N],
    ) -> Intent {
        Intent {
            function: Some(function.to_owned()),
            args: args.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            to: Some(to),
            chain_id: Some(chain_id),
            token: None,
            description: None,
            caller_pinned: false,
        }
    }
}

/// A token's display facts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Token {
    /// Its symbol (`ST`).
    pub symbol: String,
    /// Its decimals (0..=77).
    pub decimals: u8,
}

impl Token {
    /// `v` base units of this token as a person reads them (`2.5 ST`); `v base units`
    /// when its decimals cannot place them.
    pub(crate) fn units(&self, v: U256) -> String {
        match crate::amount::format_units(v, self.decimals) {
            Ok(s) => format!("{s} {}", self.symbol),
            Err(_) => format!("{v} base units"),
        }
    }
}

/// Where a sign request came from; recorded for the person and for `submit`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Origin {
    /// The platform base URL the rawTx was fetched from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The transaction action's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The `txId` (uuid) sent with the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_id: Option<String>,
    /// The config profile used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// When the request was written (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// A sign-request file, as the online half writes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignRequest {
    /// Always [`REQUEST_FORMAT`].
    pub format: &'static str,
    /// Always [`REQUEST_VERSION`].
    pub version: u64,
    /// The transaction to sign.
    pub raw_tx: RawTx,
    /// What the user asked for.
    pub intent: Intent,
    /// Where it came from.
    pub origin: Origin,
}

impl SignRequest {
    /// A request for `raw_tx` with the given intent and origin.
    pub fn new(raw_tx: RawTx, intent: Intent, origin: Origin) -> Self {
        Self {
            format: REQUEST_FORMAT,
            version: REQUEST_VERSION,
            raw_tx,
            intent,
            origin,
        }
    }
}

/// A parsed input of `sign`, whatever its shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignInput {
    /// The shape it had.
    pub kind: InputKind,
    /// The transaction.
    pub raw_tx: RawTx,
    /// The intent (sign requests only).
    pub intent: Option<Intent>,
    /// The origin (sign requests only).
    pub origin: Option<Origin>,
    /// The action's `txId`, from the envelope or the origin.
    pub tx_id: Option<String>,
    /// SHA-256 of the exact input bytes: `sha256sum` of the file gives the same.
    pub request_hash: B256,
}

/// SHA-256 of `bytes`, the `requestHash` of a signed bundle.
pub fn request_hash(bytes: &[u8]) -> B256 {
    B256::from_slice(&Sha256::digest(bytes))
}

impl SignInput {
    /// Parses the exact bytes of an input file (or stdin).
    pub fn parse(bytes: &[u8]) -> Result<SignInput, Error> {
        let hash = request_hash(bytes);
        // Strict: `{"to": A, "to": B}` must not mean B to bridgectl and A to a person.
        let v = bridgectl_json::from_slice(bytes).map_err(Error::Json)?;
        let obj = v.as_object().ok_or_else(|| Error::InvalidField {
            context: "input".into(),
            field: "(top level)".into(),
            expected: "a JSON object: a rawTx, an action envelope or a sign request".into(),
            found: crate::error::shorten(&v.to_string()),
        })?;
        if obj.contains_key("format") {
            parse_request(&v, hash)
        } else if obj.contains_key("result")
            || (obj.contains_key("data") && !obj.contains_key("to"))
        {
            parse_envelope(&v, hash)
        } else {
            Ok(SignInput {
                kind: InputKind::RawTx,
                raw_tx: RawTx::from_value(&v)?,
                intent: None,
                origin: None,
                tx_id: None,
                request_hash: hash,
            })
        }
    }
}

fn parse_request(v: &Value, hash: B256) -> Result<SignInput, Error> {
    const CTX: &str = "sign request";
    let obj = v
        .as_object()
        .ok_or_else(|| Error::Refused("sign request: not an object".into()))?;
    let format = obj
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if format != REQUEST_FORMAT {
        return Err(Error::InvalidField {
            context: CTX.into(),
            field: "format".into(),
            expected: format!("{REQUEST_FORMAT:?}"),
            found: crate::error::shorten(
                &obj.get("format").map(Value::to_string).unwrap_or_default(),
            ),
        });
    }
    let version = obj.get("version").ok_or_else(|| Error::MissingField {
        context: CTX.into(),
        field: "version".into(),
        hint: None,
    })?;
    if version.as_u64() != Some(REQUEST_VERSION) {
        return Err(Error::InvalidField {
            context: CTX.into(),
            field: "version".into(),
            expected: format!(
                "{REQUEST_VERSION} (this bridgectl reads version {REQUEST_VERSION} only)"
            ),
            found: crate::error::shorten(&version.to_string()),
        });
    }
    reject_unknown(
        CTX,
        obj,
        &["format", "version", "rawTx", "intent", "origin"],
    )?;
    let raw = obj.get("rawTx").ok_or_else(|| Error::MissingField {
        context: CTX.into(),
        field: "rawTx".into(),
        hint: None,
    })?;
    let raw_tx = RawTx::from_value(raw)?;
    let sub = |field: &str| -> Result<Option<Value>, Error> { Ok(obj.get(field).cloned()) };
    let intent: Intent = match sub("intent")? {
        None => Intent::default(),
        Some(i) => serde_json::from_value(i).map_err(|e| Error::InvalidField {
            context: CTX.into(),
            field: "intent".into(),
            expected: "the intent object of the documented schema".into(),
            found: e.to_string(),
        })?,
    };
    if let Some(t) = &intent.token
        && t.decimals > crate::amount::MAX_DECIMALS
    {
        return Err(Error::InvalidField {
            context: CTX.into(),
            field: "intent.token.decimals".into(),
            expected: format!("0 to {}", crate::amount::MAX_DECIMALS),
            found: t.decimals.to_string(),
        });
    }
    let origin: Origin = match sub("origin")? {
        None => Origin::default(),
        Some(o) => serde_json::from_value(o).map_err(|e| Error::InvalidField {
            context: CTX.into(),
            field: "origin".into(),
            expected: "the origin object of the documented schema".into(),
            found: e.to_string(),
        })?,
    };
    Ok(SignInput {
        kind: InputKind::SignRequest,
        raw_tx,
        tx_id: origin.tx_id.clone(),
        intent: Some(intent),
        origin: Some(origin),
        request_hash: hash,
    })
}

/// Reads the `data` of a transaction action's answer for an account that signs itself,
/// online (the platform client) and offline (an envelope given to `sign`) alike: its
/// `rawTx` parsed strictly, `data.from` (when present) equal to `rawTx.from`, and its
/// `txId`.
pub fn parse_action_data(data: &Map<String, Value>) -> Result<(RawTx, Option<String>), Error> {
    const CTX: &str = "envelope";
    let raw = data.get("rawTx").ok_or_else(|| {
        Error::Refused(
            "envelope: data has no rawTx: for accounts the platform holds keys for, it signs and \
             submits itself; there is nothing to sign here"
                .into(),
        )
    })?;
    let raw_tx = RawTx::from_value(raw)?;
    if let Some(from) = data.get("from") {
        let s = from.as_str().unwrap_or_default();
        let addr = crate::rawtx::parse_address(s).map_err(|expected| Error::InvalidField {
            context: CTX.into(),
            field: "data.from".into(),
            expected,
            found: crate::error::shorten(&from.to_string()),
        })?;
        if addr != raw_tx.from {
            return Err(Error::Refused(format!(
                "envelope: data.from {addr} differs from rawTx.from {}",
                raw_tx.from
            )));
        }
    }
    let tx_id = data.get("txId").and_then(Value::as_str).map(str::to_owned);
    Ok((raw_tx, tx_id))
}

fn parse_envelope(v: &Value, hash: B256) -> Result<SignInput, Error> {
    const CTX: &str = "envelope";
    let result = v.get("result").and_then(Value::as_bool);
    if result != Some(true) {
        let code = v.get("code").and_then(Value::as_str).unwrap_or("(none)");
        let message = v.get("message").and_then(Value::as_str).unwrap_or("(none)");
        return Err(Error::Refused(format!(
            "envelope: result is not true (code {code}, message {message:?}): nothing to sign"
        )));
    }
    let data = v
        .get("data")
        .and_then(Value::as_object)
        .ok_or_else(|| Error::MissingField {
            context: CTX.into(),
            field: "data".into(),
            hint: None,
        })?;
    let (raw_tx, tx_id) = parse_action_data(data)?;
    Ok(SignInput {
        kind: InputKind::Envelope,
        raw_tx,
        intent: None,
        origin: None,
        tx_id,
        request_hash: hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw() -> Value {
        json!({
            "from": "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f",
            "to": "0x3535353535353535353535353535353535353535",
            "data": "0x", "nonce": "0x9", "gasLimit": "0x5208",
            "gasPrice": "0x4a817c800", "chainId": 1
        })
    }

    #[test]
    fn three_shapes() {
        let bare = serde_json::to_vec(&raw()).expect("ser");
        let a = SignInput::parse(&bare).expect("bare");
        assert_eq!(a.kind, InputKind::RawTx);
        assert_eq!(a.request_hash, request_hash(&bare));

        let env = json!({"result": true, "status": 200, "code": "OK",
            "data": {"from": "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f", "rawTx": raw(), "txId": "abc"}});
        let b = SignInput::parse(&serde_json::to_vec(&env).expect("ser")).expect("env");
        assert_eq!(b.kind, InputKind::Envelope);
        assert_eq!(b.tx_id.as_deref(), Some("abc"));
        assert_eq!(b.raw_tx, a.raw_tx);

        let req = SignRequest::new(
            a.raw_tx.clone(),
            Intent {
                function: None,
                chain_id: Some(1),
                ..Intent::default()
            },
            Origin {
                tx_id: Some("t1".into()),
                ..Origin::default()
            },
        );
        let bytes = serde_json::to_vec_pretty(&req).expect("ser");
        let c = SignInput::parse(&bytes).expect("request");
        assert_eq!(c.kind, InputKind::SignRequest);
        assert_eq!(c.raw_tx, a.raw_tx);
        assert_eq!(c.tx_id.as_deref(), Some("t1"));
        assert_eq!(c.intent.expect("intent").chain_id, Some(1));
    }

    #[test]
    fn refusals() {
        let cases = vec![
            (
                json!({"result": false, "code": "E1", "message": "nope"}),
                "code E1",
            ),
            (json!({"result": true, "data": {"txId": "x"}}), "no rawTx"),
            (
                json!({"result": true, "data": {"from": "0x3535353535353535353535353535353535353535", "rawTx": raw()}}),
                "differs from rawTx.from",
            ),
            (
                json!({"format": "other", "version": 1, "rawTx": raw()}),
                "field `format`",
            ),
            (
                json!({"format": REQUEST_FORMAT, "version": 2, "rawTx": raw()}),
                "field `version`",
            ),
            (
                json!({"format": REQUEST_FORMAT, "version": 1, "rawTx": raw(), "extra": 1}),
                "unknown field(s) `extra`",
            ),
            (
                json!({"format": REQUEST_FORMAT, "version": 1, "rawTx": raw(), "intent": {"fn": "x"}}),
                "field `intent`",
            ),
            (
                json!({"format": REQUEST_FORMAT, "version": 1}),
                "missing field `rawTx`",
            ),
            (json!([1, 2]), "a JSON object"),
        ];
        for (v, want) in cases {
            let e = SignInput::parse(&serde_json::to_vec(&v).expect("ser"))
                .expect_err(want)
                .to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
    }
}
