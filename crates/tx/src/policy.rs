//! Checks of a rawTx against what the user expects, run before any key is unlocked.
//! Each failure names the field, the expected value and the one found.

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::calldata::{self, Decoded, Value};
use crate::rawtx::RawTx;

/// Expectations and caps. Every field is optional: `None` (or empty) checks nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Policy {
    /// The chain id the transaction must be for.
    #[serde(default)]
    pub expect_chain_id: Option<u64>,
    /// The callee the transaction must go to.
    #[serde(default)]
    pub expect_to: Option<Address>,
    /// The function the calldata must call: a name (`redeem`) or signature.
    #[serde(default)]
    pub expect_function: Option<String>,
    /// Arguments the call must have: parameter name -> decimal base units or address.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expect_args: BTreeMap<String, String>,
    /// The highest acceptable gas price, in wei.
    #[serde(default)]
    pub max_gas_price: Option<u128>,
    /// The highest acceptable `gasLimit * gasPrice`, in wei.
    #[serde(default)]
    pub max_fee: Option<U256>,
    /// The most wei the transaction may send along. An intent sets zero: no bridge
    /// call sends native value.
    #[serde(default)]
    pub max_value: Option<U256>,
    /// Every argument of the call must be named in `expect_args` (an intent names the
    /// whole call; a function with an unnamed argument is not what was asked for).
    #[serde(default)]
    pub exact_args: bool,
}

impl Policy {
    /// Whether nothing at all is checked.
    pub fn is_empty(&self) -> bool {
        *self == Policy::default()
    }

    /// Fills every unset field of `self` from `fallback` (flags over profile).
    pub fn or(mut self, fallback: &Policy) -> Policy {
        self.expect_chain_id = self.expect_chain_id.or(fallback.expect_chain_id);
        self.expect_to = self.expect_to.or(fallback.expect_to);
        if self.expect_function.is_none() {
            self.expect_function.clone_from(&fallback.expect_function);
        }
        for (k, v) in &fallback.expect_args {
            self.expect_args
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        self.max_gas_price = self.max_gas_price.or(fallback.max_gas_price);
        self.max_fee = self.max_fee.or(fallback.max_fee);
        self.max_value = self.max_value.or(fallback.max_value);
        self.exact_args |= fallback.exact_args;
        self
    }
}

/// Checks `tx` against `policy`; `source_name` (`policy` or `intent`) goes in the error.
pub fn verify(tx: &RawTx, policy: &Policy, source_name: &'static str) -> Result<(), Error> {
    let fail = |field: &str, expected: String, found: String| Error::Policy {
        source_name,
        field: field.into(),
        expected,
        found,
    };
    if let Some(id) = policy.expect_chain_id
        && tx.chain_id != id
    {
        return Err(fail("chainId", id.to_string(), tx.chain_id.to_string()));
    }
    if let Some(to) = policy.expect_to
        && tx.to != to
    {
        return Err(fail("to", to.to_string(), tx.to.to_string()));
    }
    if let Some(cap) = policy.max_gas_price
        && tx.gas_price > cap
    {
        return Err(fail(
            "gasPrice",
            format!("at most {cap} wei"),
            format!("{} wei", tx.gas_price),
        ));
    }
    if let Some(cap) = policy.max_fee {
        let fee = tx.max_fee();
        if fee > cap {
            return Err(fail(
                "maxFee (gasLimit x gasPrice)",
                format!("at most {cap} wei"),
                format!("{} x {} = {fee} wei", tx.gas_limit, tx.gas_price),
            ));
        }
    }
    if let Some(cap) = policy.max_value
        && tx.value > cap
    {
        return Err(fail(
            "value",
            format!("at most {cap} wei"),
            format!("{} wei", tx.value),
        ));
    }
    if policy.expect_function.is_none() && policy.expect_args.is_empty() && !policy.exact_args {
        return Ok(());
    }
    let decoded = calldata::classify(&tx.data);
    let call = match decoded {
        Decoded::Call(c) => c,
        other => {
            let expected = policy
                .expect_function
                .clone()
                .unwrap_or_else(|| "a known function call".into());
            return Err(fail("function", expected, describe(&other)));
        }
    };
    if let Some(want) = &policy.expect_function {
        let Some(f) = calldata::function_by_name(want) else {
            return Err(fail(
                "function",
                format!("{want} (not a function bridgectl knows)"),
                call.function.signature.to_owned(),
            ));
        };
        if f.selector != call.function.selector {
            return Err(fail(
                "function",
                f.signature.to_owned(),
                call.function.signature.to_owned(),
            ));
        }
    }
    for (name, want_text) in &policy.expect_args {
        let field = format!("args.{name}");
        let Some(param) = call.function.params.iter().find(|p| p.name == name) else {
            return Err(fail(
                &field,
                want_text.clone(),
                format!("no such argument in {}", call.function.signature),
            ));
        };
        let want = Value::parse(param.kind, want_text).map_err(|expected| {
            fail(
                &field,
                expected,
                format!("{want_text:?} in the expectation itself"),
            )
        })?;
        let found = call.arg(name).unwrap_or(Value::Uint(U256::ZERO));
        if want != found {
            return Err(fail(&field, want.to_string(), found.to_string()));
        }
    }
    if policy.exact_args
        && let Some((param, value)) = call
            .args
            .iter()
            .find(|(p, _)| !policy.expect_args.contains_key(p.name))
    {
        return Err(fail(
            &format!("args.{}", param.name),
            format!("only the arguments asked for ({})", {
                let names: Vec<&str> = policy.expect_args.keys().map(String::as_str).collect();
                names.join(", ")
            }),
            format!("{} = {value} in {}", param.name, call.function.signature),
        ));
    }
    Ok(())
}

fn describe(d: &Decoded) -> String {
    match d {
        Decoded::Empty => "no calldata".into(),
        Decoded::Call(c) => c.function.signature.to_owned(),
        Decoded::Malformed { function, reason } => {
            format!("malformed {} call ({reason})", function.signature)
        }
        Decoded::Unknown { selector, .. } => {
            format!(
                "unknown selector 0x{}",
                alloy_primitives::hex::encode(selector)
            )
        }
        Decoded::TooShort { len } => format!("{len} bytes of calldata, not a call"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx() -> RawTx {
        let data = calldata::encode(
            "redeem",
            &BTreeMap::from([("_amount".to_string(), "1500000000000000000".to_string())]),
        )
        .expect("encode");
        RawTx {
            from: Address::repeat_byte(0x11),
            to: Address::repeat_byte(0x35),
            data: data.into(),
            nonce: 1,
            gas_limit: 100_000,
            gas_price: 50_000_000_000,
            chain_id: 617317,
            value: U256::ZERO,
        }
    }

    #[test]
    fn passes_when_all_match() {
        let p = Policy {
            expect_chain_id: Some(617317),
            expect_to: Some(Address::repeat_byte(0x35)),
            expect_function: Some("redeem".into()),
            expect_args: BTreeMap::from([("_amount".into(), "1500000000000000000".into())]),
            max_gas_price: Some(50_000_000_000),
            max_fee: Some(U256::from(5_000_000_000_000_000u64)),
            max_value: Some(U256::ZERO),
            exact_args: true,
        };
        verify(&tx(), &p, "policy").expect("passes");
    }

    #[test]
    fn an_intent_names_the_whole_call_and_sends_no_value() {
        // transferWithFee also has an `_amount`: naming only `_amount` must not let a
        // call with other, unnamed arguments through.
        let inputs = BTreeMap::from([
            ("_to".to_string(), format!("{}", Address::repeat_byte(0x66))),
            ("_amount".to_string(), "100".to_string()),
            (
                "_feeCollector".to_string(),
                format!("{}", Address::repeat_byte(0x66)),
            ),
            ("_fee".to_string(), "99".to_string()),
        ]);
        let mut t = tx();
        t.data = calldata::encode("transferWithFee", &inputs)
            .expect("encode")
            .into();
        let named = Policy {
            expect_args: BTreeMap::from([("_amount".into(), "100".into())]),
            ..Policy::default()
        };
        verify(&t, &named, "intent").expect("a partial expectation checks only what it names");
        let exact = Policy {
            exact_args: true,
            ..named
        };
        let err = verify(&t, &exact, "intent").expect_err("unnamed arguments refused");
        assert!(err.to_string().contains("args._to"), "{err}");

        let mut v = tx();
        v.value = U256::from(1);
        let no_value = Policy {
            max_value: Some(U256::ZERO),
            ..Policy::default()
        };
        let err = verify(&v, &no_value, "intent").expect_err("value refused");
        assert!(
            err.to_string()
                .contains("value: expected at most 0 wei, found 1 wei"),
            "{err}"
        );
    }

    #[test]
    fn each_check_refuses_naming_field_expected_found() {
        let cases: Vec<(Policy, &str)> = vec![
            (
                Policy {
                    expect_chain_id: Some(1),
                    ..Policy::default()
                },
                "chainId: expected 1, found 617317",
            ),
            (
                Policy {
                    expect_to: Some(Address::repeat_byte(0x36)),
                    ..Policy::default()
                },
                "to: expected 0x3636",
            ),
            (
                Policy {
                    expect_function: Some("stake".into()),
                    ..Policy::default()
                },
                "function: expected stake(uint256), found redeem(uint256)",
            ),
            (
                Policy {
                    expect_function: Some("mint".into()),
                    ..Policy::default()
                },
                "not a function bridgectl knows",
            ),
            (
                Policy {
                    expect_args: BTreeMap::from([("_amount".into(), "1".into())]),
                    ..Policy::default()
                },
                "args._amount: expected 1, found 1500000000000000000",
            ),
            (
                Policy {
                    expect_args: BTreeMap::from([("_to".into(), "1".into())]),
                    ..Policy::default()
                },
                "no such argument",
            ),
            (
                Policy {
                    max_gas_price: Some(49_999_999_999),
                    ..Policy::default()
                },
                "gasPrice: expected at most 49999999999 wei, found 50000000000 wei",
            ),
            (
                Policy {
                    max_fee: Some(U256::from(1)),
                    ..Policy::default()
                },
                "found 100000 x 50000000000 = 5000000000000000 wei",
            ),
        ];
        for (p, want) in cases {
            let e = verify(&tx(), &p, "policy").expect_err(want).to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
            assert!(e.starts_with("policy check failed"), "{e}");
        }
        let mut unknown = tx();
        unknown.data = vec![0xde, 0xad, 0xbe, 0xef].into();
        let e = verify(
            &unknown,
            &Policy {
                expect_function: Some("redeem".into()),
                ..Policy::default()
            },
            "intent",
        )
        .expect_err("unknown")
        .to_string();
        assert!(e.contains("unknown selector 0xdeadbeef"), "{e}");
    }

    #[test]
    fn flags_override_profile() {
        let flags = Policy {
            max_fee: Some(U256::from(1)),
            ..Policy::default()
        };
        let profile = Policy {
            max_fee: Some(U256::from(2)),
            expect_chain_id: Some(5),
            ..Policy::default()
        };
        let merged = flags.or(&profile);
        assert_eq!(merged.max_fee, Some(U256::from(1)));
        assert_eq!(merged.expect_chain_id, Some(5));
    }
}
