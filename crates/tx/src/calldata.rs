//! Calldata of the side-chain token (ST) contract and of ERC-20 `transfer`: built from
//! a function name plus the platform's `inputs` map, and decoded back for display.
//!
//! The interface is declared once with alloy's `sol!` (see
//! `docs/platform.md`); the table of [`FUNCTIONS`] takes its selectors and
//! signatures from the generated types, so the two cannot drift apart.
//!
//! ```
//! use bridgectl_tx::calldata::{decode, encode};
//! use std::collections::BTreeMap;
//!
//! let inputs = BTreeMap::from([("_amount".to_string(), "1500000000000000000".to_string())]);
//! let data = encode("redeem", &inputs).unwrap();
//! assert_eq!(&data[..4], &[0xdb, 0x00, 0x6a, 0x75]);
//! let call = decode(&data).unwrap();
//! assert_eq!(call.function.name, "redeem");
//! ```

use std::collections::BTreeMap;
use std::fmt;

use alloy_primitives::{Address, U256};
use alloy_sol_types::{SolCall, sol};

use crate::Error;

sol! {
    /// The ST contract of the platform, as far as bridgectl signs calls to it.
    interface ST {
        function allowance(address _owner, address _spender) external view returns (uint256);
        function approve(address _spender, uint256 _value) external returns (bool);
        function balanceOf(address _owner) external view returns (uint256);
        function transfer(address _to, uint256 _value) external returns (bool);
        function transferWithFee(address _to, uint256 _amount, address _feeCollector, uint256 _fee) external;
        function redeem(uint256 _amount) external;
        function stake(uint256 _amount) external;
        function totalSupply() external view returns (uint256);
        function transferFrom(address _from, address _to, uint256 _value) external returns (bool);
        function unstake(uint256 _amount) external;
    }
}

sol! {
    /// ERC-20 `transfer`, used for the main-chain token in a swap. Same selector as
    /// `ST.transfer`; declared separately so the swap code reads as what it is.
    interface IERC20 {
        function transfer(address _to, uint256 _value) external returns (bool);
    }
}

/// The Solidity type of a parameter. Every function here takes only these two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// `address`
    Address,
    /// `uint256`
    Uint256,
}

/// One named parameter of a [`Function`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// The Solidity parameter name, as the platform's `inputs` map keys it (`_amount`).
    pub name: &'static str,
    /// Its type.
    pub kind: ParamKind,
    /// Whether it is a token amount, to be formatted with the token's decimals.
    pub is_amount: bool,
}

/// A known function: name, canonical signature, selector and parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function {
    /// The Solidity name (`redeem`).
    pub name: &'static str,
    /// The canonical signature (`redeem(uint256)`).
    pub signature: &'static str,
    /// The 4-byte selector.
    pub selector: [u8; 4],
    /// The parameters in order.
    pub params: &'static [Param],
}

const fn p(name: &'static str, kind: ParamKind, is_amount: bool) -> Param {
    Param {
        name,
        kind,
        is_amount,
    }
}

use ParamKind::{Address as A, Uint256 as U};

/// Every function bridgectl can encode and recognise.
pub static FUNCTIONS: &[Function] = &[
    Function {
        name: "allowance",
        signature: ST::allowanceCall::SIGNATURE,
        selector: ST::allowanceCall::SELECTOR,
        params: &[p("_owner", A, false), p("_spender", A, false)],
    },
    Function {
        name: "approve",
        signature: ST::approveCall::SIGNATURE,
        selector: ST::approveCall::SELECTOR,
        params: &[p("_spender", A, false), p("_value", U, true)],
    },
    Function {
        name: "balanceOf",
        signature: ST::balanceOfCall::SIGNATURE,
        selector: ST::balanceOfCall::SELECTOR,
        params: &[p("_owner", A, false)],
    },
    Function {
        name: "transfer",
        signature: ST::transferCall::SIGNATURE,
        selector: ST::transferCall::SELECTOR,
        params: &[p("_to", A, false), p("_value", U, true)],
    },
    Function {
        name: "transferWithFee",
        signature: ST::transferWithFeeCall::SIGNATURE,
        selector: ST::transferWithFeeCall::SELECTOR,
        params: &[
            p("_to", A, false),
            p("_amount", U, true),
            p("_feeCollector", A, false),
            // A percentage of `_amount` (the contract pays `_amount * _fee / 100` to
            // the collector), not an amount: see `crate::effects`.
            p("_fee", U, false),
        ],
    },
    Function {
        name: "redeem",
        signature: ST::redeemCall::SIGNATURE,
        selector: ST::redeemCall::SELECTOR,
        params: &[p("_amount", U, true)],
    },
    Function {
        name: "stake",
        signature: ST::stakeCall::SIGNATURE,
        selector: ST::stakeCall::SELECTOR,
        params: &[p("_amount", U, true)],
    },
    Function {
        name: "totalSupply",
        signature: ST::totalSupplyCall::SIGNATURE,
        selector: ST::totalSupplyCall::SELECTOR,
        params: &[],
    },
    Function {
        name: "transferFrom",
        signature: ST::transferFromCall::SIGNATURE,
        selector: ST::transferFromCall::SELECTOR,
        params: &[
            p("_from", A, false),
            p("_to", A, false),
            p("_value", U, true),
        ],
    },
    Function {
        name: "unstake",
        signature: ST::unstakeCall::SIGNATURE,
        selector: ST::unstakeCall::SELECTOR,
        params: &[p("_amount", U, true)],
    },
];

/// Looks a function up by name (`redeem`) or canonical signature (`redeem(uint256)`).
pub fn function_by_name(name: &str) -> Option<&'static Function> {
    FUNCTIONS
        .iter()
        .find(|f| f.name == name || f.signature == name)
}

/// Looks a function up by selector.
pub fn function_by_selector(selector: [u8; 4]) -> Option<&'static Function> {
    FUNCTIONS.iter().find(|f| f.selector == selector)
}

/// A decoded argument value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// An `address`.
    Address(Address),
    /// A `uint256`.
    Uint(U256),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Address(a) => write!(f, "{a}"),
            Value::Uint(u) => write!(f, "{u}"),
        }
    }
}

impl Value {
    /// Parses `text` as a value of `kind`: an address (EIP-55 checked when mixed case)
    /// or a decimal uint256 (also `0x` hex). Used for the platform's `inputs` and for
    /// the argument values a policy expects.
    pub fn parse(kind: ParamKind, text: &str) -> Result<Value, String> {
        match kind {
            ParamKind::Address => crate::rawtx::parse_address(text).map(Value::Address),
            ParamKind::Uint256 => parse_uint(text).map(Value::Uint),
        }
    }
}

fn parse_uint(text: &str) -> Result<U256, String> {
    if let Some(hex) = text.strip_prefix("0x") {
        if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err("a 0x hex or decimal integer".into());
        }
        return U256::from_str_radix(hex, 16).map_err(|_| "an integer below 2^256".into());
    }
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit()) {
        return Err("a decimal integer (base units, no sign, no decimal point)".into());
    }
    U256::from_str_radix(text, 10).map_err(|_| "an integer below 2^256".into())
}

/// A decoded call: the function and its arguments in order, with their names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The function.
    pub function: &'static Function,
    /// `(parameter, value)` in declaration order.
    pub args: Vec<(&'static Param, Value)>,
}

impl Call {
    /// The value of the argument named `name`.
    pub fn arg(&self, name: &str) -> Option<Value> {
        self.args
            .iter()
            .find(|(p, _)| p.name == name)
            .map(|(_, v)| *v)
    }
}

/// What calldata is, as far as bridgectl can tell. An unknown selector is reported as
/// such and never guessed at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// No calldata: a plain value transfer.
    Empty,
    /// A known function with well-formed arguments.
    Call(Call),
    /// A known selector but arguments that do not decode (or trailing bytes).
    Malformed {
        /// The function the selector belongs to.
        function: &'static Function,
        /// What is wrong.
        reason: String,
    },
    /// A selector bridgectl does not know.
    Unknown {
        /// The first four bytes.
        selector: [u8; 4],
        /// Total calldata length in bytes.
        len: usize,
    },
    /// Fewer than four bytes: not a function call.
    TooShort {
        /// The length.
        len: usize,
    },
}

fn addr(a: Value) -> Address {
    match a {
        Value::Address(a) => a,
        Value::Uint(_) => Address::ZERO,
    }
}
fn uint(v: Value) -> U256 {
    match v {
        Value::Uint(u) => u,
        Value::Address(_) => U256::ZERO,
    }
}

/// Encodes a call of `function` (a name from [`FUNCTIONS`]) from the platform's
/// `inputs` map (parameter name -> decimal string or address). A missing, extra or
/// malformed input is an error that names it.
pub fn encode(function: &str, inputs: &BTreeMap<String, String>) -> Result<Vec<u8>, Error> {
    let f = function_by_name(function).ok_or_else(|| Error::Calldata {
        function: function.to_owned(),
        reason: format!(
            "unknown function; known: {}",
            FUNCTIONS
                .iter()
                .map(|f| f.name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })?;
    let err = |reason: String| Error::Calldata {
        function: f.name.to_owned(),
        reason,
    };
    let extra: Vec<&str> = inputs
        .keys()
        .filter(|k| !f.params.iter().any(|p| p.name == k.as_str()))
        .map(String::as_str)
        .collect();
    if !extra.is_empty() {
        return Err(err(format!(
            "unexpected input(s) {}; {} takes {}",
            extra.join(", "),
            f.name,
            param_list(f)
        )));
    }
    let mut v = Vec::with_capacity(f.params.len());
    for p in f.params {
        let text = inputs.get(p.name).ok_or_else(|| {
            err(format!(
                "missing input {}; it takes {}",
                p.name,
                param_list(f)
            ))
        })?;
        let value = Value::parse(p.kind, text).map_err(|expected| {
            err(format!(
                "input {}: expected {expected}, found {:?}",
                p.name,
                crate::error::shorten(text)
            ))
        })?;
        v.push(value);
    }
    Ok(encode_values(f, &v))
}

fn param_list(f: &Function) -> String {
    if f.params.is_empty() {
        "no inputs".into()
    } else {
        f.params
            .iter()
            .map(|p| p.name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Encodes already typed values (in parameter order) through the `sol!` types.
fn encode_values(f: &Function, v: &[Value]) -> Vec<u8> {
    let g = |i: usize| v.get(i).copied().unwrap_or(Value::Uint(U256::ZERO));
    match f.name {
        "allowance" => ST::allowanceCall {
            _owner: addr(g(0)),
            _spender: addr(g(1)),
        }
        .abi_encode(),
        "approve" => ST::approveCall {
            _spender: addr(g(0)),
            _value: uint(g(1)),
        }
        .abi_encode(),
        "balanceOf" => ST::balanceOfCall { _owner: addr(g(0)) }.abi_encode(),
        "transfer" => ST::transferCall {
            _to: addr(g(0)),
            _value: uint(g(1)),
        }
        .abi_encode(),
        "transferWithFee" => ST::transferWithFeeCall {
            _to: addr(g(0)),
            _amount: uint(g(1)),
            _feeCollector: addr(g(2)),
            _fee: uint(g(3)),
        }
        .abi_encode(),
        "redeem" => ST::redeemCall {
            _amount: uint(g(0)),
        }
        .abi_encode(),
        "stake" => ST::stakeCall {
            _amount: uint(g(0)),
        }
        .abi_encode(),
        "totalSupply" => ST::totalSupplyCall {}.abi_encode(),
        "transferFrom" => ST::transferFromCall {
            _from: addr(g(0)),
            _to: addr(g(1)),
            _value: uint(g(2)),
        }
        .abi_encode(),
        "unstake" => ST::unstakeCall {
            _amount: uint(g(0)),
        }
        .abi_encode(),
        // FUNCTIONS and this match are kept in step by the `table_matches_sol` test.
        _ => f.selector.to_vec(),
    }
}

/// ERC-20 `transfer(to, amount)` calldata, for the main-chain token of a swap.
pub fn erc20_transfer(to: Address, amount: U256) -> Vec<u8> {
    IERC20::transferCall {
        _to: to,
        _value: amount,
    }
    .abi_encode()
}

/// Decodes calldata for display and for checks. Strict: the length must be exactly
/// the selector plus one word per parameter, and each word must be valid for its type.
pub fn decode(data: &[u8]) -> Result<Call, Decoded> {
    match classify(data) {
        Decoded::Call(c) => Ok(c),
        other => Err(other),
    }
}

/// Like [`decode`], but returns every outcome as a [`Decoded`].
pub fn classify(data: &[u8]) -> Decoded {
    if data.is_empty() {
        return Decoded::Empty;
    }
    let Some(selector) = data.get(..4).and_then(|s| <[u8; 4]>::try_from(s).ok()) else {
        return Decoded::TooShort { len: data.len() };
    };
    let Some(function) = function_by_selector(selector) else {
        return Decoded::Unknown {
            selector,
            len: data.len(),
        };
    };
    let want = 4 + 32 * function.params.len();
    if data.len() != want {
        return Decoded::Malformed {
            function,
            reason: format!("{} bytes of calldata, expected {want}", data.len()),
        };
    }
    let mut args = Vec::with_capacity(function.params.len());
    for (i, p) in function.params.iter().enumerate() {
        let start = 4 + 32 * i;
        let word = &data[start..start + 32];
        let value = match p.kind {
            ParamKind::Uint256 => Value::Uint(U256::from_be_slice(word)),
            ParamKind::Address => {
                if word[..12].iter().any(|b| *b != 0) {
                    return Decoded::Malformed {
                        function,
                        reason: format!("argument {} is not a clean address word", p.name),
                    };
                }
                Value::Address(Address::from_slice(&word[12..]))
            }
        };
        args.push((p, value));
    }
    Decoded::Call(Call { function, args })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors_match_the_platform_facts() {
        let want = [
            ("allowance", "dd62ed3e"),
            ("approve", "095ea7b3"),
            ("balanceOf", "70a08231"),
            ("transfer", "a9059cbb"),
            ("transferWithFee", "623454cf"),
            ("redeem", "db006a75"),
            ("stake", "a694fc3a"),
            ("totalSupply", "18160ddd"),
            ("transferFrom", "23b872dd"),
            ("unstake", "2e17de78"),
        ];
        for (name, sel) in want {
            let f = function_by_name(name).expect(name);
            assert_eq!(hex::encode(f.selector), sel, "{name}");
        }
        assert_eq!(FUNCTIONS.len(), want.len());
    }

    #[test]
    fn table_matches_sol() {
        for f in FUNCTIONS {
            // The signature's parameter types must be the table's kinds, in order.
            let types = f
                .signature
                .trim_start_matches(f.name)
                .trim_start_matches('(')
                .trim_end_matches(')');
            let kinds: Vec<&str> = f
                .params
                .iter()
                .map(|p| match p.kind {
                    ParamKind::Address => "address",
                    ParamKind::Uint256 => "uint256",
                })
                .collect();
            assert_eq!(types, kinds.join(","), "{}", f.name);
            // Encoding zero values round-trips through `classify`.
            let zero: BTreeMap<String, String> = f
                .params
                .iter()
                .map(|p| {
                    let v = match p.kind {
                        ParamKind::Address => format!("{}", Address::ZERO),
                        ParamKind::Uint256 => "0".into(),
                    };
                    (p.name.to_string(), v)
                })
                .collect();
            let data = encode(f.name, &zero).expect("encode");
            assert_eq!(&data[..4], &f.selector);
            let call = decode(&data).expect("decode");
            assert_eq!(call.function.name, f.name);
        }
    }

    #[test]
    fn redeem_and_transfer_encode_known_bytes() {
        let data = encode("redeem", &inputs(&[("_amount", "1500000000000000000")])).expect("ok");
        assert_eq!(
            hex::encode(&data),
            "db006a7500000000000000000000000000000000000000000000000014d1120d7b160000"
        );
        let to: Address = "0x3535353535353535353535353535353535353535"
            .parse()
            .expect("addr");
        let via_erc20 = erc20_transfer(to, U256::from(5));
        let via_st = encode(
            "transfer",
            &inputs(&[
                ("_to", "0x3535353535353535353535353535353535353535"),
                ("_value", "5"),
            ]),
        )
        .expect("ok");
        assert_eq!(via_erc20, via_st);
        let call = decode(&via_st).expect("decode");
        assert_eq!(call.arg("_to"), Some(Value::Address(to)));
        assert_eq!(call.arg("_value"), Some(Value::Uint(U256::from(5))));
    }

    #[test]
    fn input_errors_name_the_input() {
        let e = encode("redeem", &inputs(&[]))
            .expect_err("missing")
            .to_string();
        assert!(e.contains("missing input _amount"), "{e}");
        let e = encode("redeem", &inputs(&[("_amount", "1"), ("_x", "2")]))
            .expect_err("extra")
            .to_string();
        assert!(e.contains("unexpected input(s) _x"), "{e}");
        let e = encode("redeem", &inputs(&[("_amount", "1.5")]))
            .expect_err("bad")
            .to_string();
        assert!(
            e.contains("input _amount: expected a decimal integer"),
            "{e}"
        );
        let e = encode("transfer", &inputs(&[("_to", "0x12"), ("_value", "1")]))
            .expect_err("bad addr")
            .to_string();
        assert!(e.contains("input _to"), "{e}");
        let e = encode("mint", &inputs(&[]))
            .expect_err("unknown")
            .to_string();
        assert!(e.contains("unknown function"), "{e}");
        let e = encode(
            "redeem",
            &inputs(&[(
                "_amount",
                "115792089237316195423570985008687907853269984665640564039457584007913129639936",
            )]),
        )
        .expect_err("overflow")
        .to_string();
        assert!(e.contains("below 2^256"), "{e}");
    }

    #[test]
    fn unknown_and_malformed_are_reported_not_guessed() {
        assert_eq!(
            classify(&[0xde, 0xad, 0xbe, 0xef, 1]),
            Decoded::Unknown {
                selector: [0xde, 0xad, 0xbe, 0xef],
                len: 5
            }
        );
        assert_eq!(classify(&[1, 2]), Decoded::TooShort { len: 2 });
        assert_eq!(classify(&[]), Decoded::Empty);
        let mut data = encode("redeem", &inputs(&[("_amount", "1")])).expect("ok");
        data.push(0);
        assert!(matches!(classify(&data), Decoded::Malformed { .. }));
        let mut dirty = encode(
            "balanceOf",
            &inputs(&[("_owner", &Address::ZERO.to_string())]),
        )
        .expect("ok");
        dirty[4] = 1;
        assert!(matches!(classify(&dirty), Decoded::Malformed { .. }));
    }
}
