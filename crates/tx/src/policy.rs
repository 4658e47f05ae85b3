//! What the signer trusts: the [`Policy`]. It comes from the operator's configuration (a
//! profile, or expectations given for one call) and is the only source of chain ids, contract addresses, symbols and decimals.
//! A sign request's intent and a platform's answer are claims checked against it by
//! [`crate::verify()`].

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use alloy_primitives::{Address, U256};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::request::Intent;
/// A trusted contract's token (symbol and decimals): named here beside [`Trusted`],
/// where it is trusted.
pub use crate::request::Token;

/// The highest gas limit signed unless the policy raises it: token calls need well
/// under 100,000; a transaction asking for millions is either broken or hostile.
pub const DEFAULT_MAX_GAS_LIMIT: u64 = 1_000_000;

/// Without a gas-price cap in the policy, a price above this multiple of the node's
/// quote is refused (online only: offline there is no quote, so a cap must be set).
pub const GAS_PRICE_SANITY_MULTIPLE: u128 = 10;

/// Expectations and caps, plus the chains and contracts the signer knows.
///
/// The serialized fields are the profile's `[profiles.<name>.policy]` table and the
/// policy flags. Defaults that hold when a field is unset: no native value
/// (`max-value` 0), a gas limit of at most [`DEFAULT_MAX_GAS_LIMIT`], and a gas-price
/// cap that must come from somewhere (this policy, or the node's quote online).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Policy {
    /// The chain id the transaction must be for; unset: one of [`Trusted::chains`].
    #[serde(default)]
    pub expect_chain_id: Option<u64>,
    /// The callee the transaction must go to; unset: one of [`Trusted::contracts`].
    #[serde(default)]
    pub expect_to: Option<Address>,
    /// The function the calldata must call: a name (`redeem`) or signature.
    #[serde(default)]
    pub expect_function: Option<String>,
    /// Arguments the call must have: parameter name -> decimal base units or address.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expect_args: BTreeMap<String, String>,
    /// The exact calldata the transaction must carry (`0x` for none): for calls
    /// bridgectl cannot decode, the person pins the bytes themselves.
    #[serde(default)]
    pub expect_data: Option<alloy_primitives::Bytes>,
    /// The highest acceptable gas price, in wei.
    #[serde(default)]
    pub max_gas_price: Option<u128>,
    /// The highest acceptable `gasLimit * gasPrice`, in wei.
    #[serde(default)]
    pub max_fee: Option<U256>,
    /// The most wei the transaction may send along; unset means zero: no bridge call
    /// sends native value.
    #[serde(default)]
    pub max_value: Option<U256>,
    /// The highest acceptable gas limit; unset means [`DEFAULT_MAX_GAS_LIMIT`].
    #[serde(default)]
    pub max_gas_limit: Option<u64>,
    /// Every argument of the call must be named in `expect_args` (an intent names the
    /// whole call; a function with an unnamed argument is not what was asked for).
    #[serde(default)]
    pub exact_args: bool,
    /// Spending limits per token symbol (`st = { per = "24h", max = "10000" }`),
    /// enforced from the signing log; see [`crate::limits`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, Limit>,
    /// Where tokens may go: when set, a call with any destination that is not listed
    /// (a `_to`, a `_spender`, a `transferWithFee`'s `_feeCollector`: every address of
    /// [`crate::effects`]) is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_destinations: Vec<Address>,
    /// Selectors (`0x12345678`) of calls that have no model of their effects and may be
    /// signed anyway under limits and an allowlist. Unset, such calls are refused there:
    /// what a call moves must be known before a limit can count it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_unmodelled: Vec<String>,
    /// Calls that may be signed without a person's confirmation (an unattended run) although no
    /// expectation pins them: the operator's standing approvals. A request's own intent
    /// never does this, because it comes from the same place as the transaction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_approve: Vec<AutoApprove>,
    /// The chains and contracts named by the profile (never by a request).
    #[serde(skip)]
    pub trusted: Trusted,
}

/// A standing approval: a call of `function` on the contract of `token` whose every
/// destination is one of `destinations` and that moves at most `max` of that token in
/// all (fees included, as [`crate::effects`] counts them) may be signed without a
/// confirmation. A rule names its token: `max = "5"` written for ST never approves 5 MT.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AutoApprove {
    /// The function: a name (`transfer`) or signature (`transfer(address,uint256)`).
    pub function: String,
    /// The token whose contract the call is on, by the symbol the profile gives it
    /// (`"ST"`): a call on any other contract is never approved by this rule.
    pub token: String,
    /// Where the call may send tokens; a call with no destination (`redeem`) needs none.
    #[serde(default)]
    pub destinations: Vec<Address>,
    /// The most the call may move, in token units (`"5"`, `"2.5"`).
    pub max: String,
}

/// The chains and contracts a profile names: the trust root for where a transaction may
/// go and how its amounts are shown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trusted {
    /// Chain id -> its configured name, if any.
    pub chains: BTreeMap<u64, Option<String>>,
    /// Contracts that may be called.
    pub contracts: Vec<TrustedContract>,
}

/// A contract the profile names, with the token it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedContract {
    /// Its address.
    pub address: Address,
    /// The chain it is on.
    pub chain_id: u64,
    /// The token's symbol and decimals, when the profile gives them.
    pub token: Option<Token>,
}

impl Trusted {
    /// Names a chain (and its name, if any).
    pub fn chain(&mut self, chain_id: u64, name: Option<String>) -> &mut Self {
        let entry = self.chains.entry(chain_id).or_default();
        if entry.is_none() {
            *entry = name;
        }
        self
    }

    /// Names a contract on `chain_id` (which becomes a trusted chain too).
    pub fn contract(&mut self, address: Address, chain_id: u64, token: Option<Token>) -> &mut Self {
        self.chain(chain_id, None);
        if !self
            .contracts
            .iter()
            .any(|c| c.address == address && c.chain_id == chain_id)
        {
            self.contracts.push(TrustedContract {
                address,
                chain_id,
                token,
            });
        }
        self
    }

    /// The contract `address` on `chain_id`, if the profile names it.
    pub fn find(&self, address: Address, chain_id: u64) -> Option<&TrustedContract> {
        self.contracts
            .iter()
            .find(|c| c.address == address && c.chain_id == chain_id)
    }

    fn merge(&mut self, other: &Trusted) {
        for (id, name) in &other.chains {
            self.chain(*id, name.clone());
        }
        for c in &other.contracts {
            self.contract(c.address, c.chain_id, c.token.clone());
        }
    }
}

impl Policy {
    /// Whether nothing was set: no expectation, no cap, nothing trusted.
    pub fn is_empty(&self) -> bool {
        *self == Policy::default()
    }

    /// Fills every unset field of `self` from `fallback` (flags over profile); the
    /// trusted chains and contracts are the union of both.
    pub fn or(mut self, fallback: &Policy) -> Policy {
        self.expect_chain_id = self.expect_chain_id.or(fallback.expect_chain_id);
        self.expect_to = self.expect_to.or(fallback.expect_to);
        if self.expect_function.is_none() {
            self.expect_function.clone_from(&fallback.expect_function);
        }
        if self.expect_data.is_none() {
            self.expect_data.clone_from(&fallback.expect_data);
        }
        for (k, v) in &fallback.expect_args {
            self.expect_args
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        self.max_gas_price = self.max_gas_price.or(fallback.max_gas_price);
        self.max_fee = self.max_fee.or(fallback.max_fee);
        self.max_value = self.max_value.or(fallback.max_value);
        self.max_gas_limit = self.max_gas_limit.or(fallback.max_gas_limit);
        self.exact_args |= fallback.exact_args;
        for (k, v) in &fallback.limits {
            self.limits.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if self.allowed_destinations.is_empty() {
            self.allowed_destinations
                .clone_from(&fallback.allowed_destinations);
        }
        if self.allow_unmodelled.is_empty() {
            self.allow_unmodelled.clone_from(&fallback.allow_unmodelled);
        }
        if self.auto_approve.is_empty() {
            self.auto_approve.clone_from(&fallback.auto_approve);
        }
        self.trusted.merge(&fallback.trusted);
        self
    }

    /// Whether the policy says exactly what the call does: the exact calldata, or a
    /// function with every one of its arguments (`exact_args`). A function alone
    /// (`transfer` to anyone, any amount) or some arguments alone (matched by name in
    /// any function) only narrow it. (A standing approval, [`Policy::auto_approve`], is
    /// matched against the call by the verifier.)
    pub fn pins_call(&self) -> bool {
        self.expect_data.is_some() || (self.expect_function.is_some() && self.exact_args)
    }
}

/// An intent's expectations as a policy: the call it names (whole: every argument) to
/// the callee and chain it names, sending no native value. This is the one conversion
/// from what was asked for to what is checked.
impl From<&Intent> for Policy {
    fn from(intent: &Intent) -> Policy {
        Policy {
            expect_chain_id: intent.chain_id,
            expect_to: intent.to,
            expect_function: intent.function.clone(),
            expect_args: intent.args.clone(),
            max_value: Some(U256::ZERO),
            exact_args: intent.function.is_some(),
            ..Policy::default()
        }
    }
}

/// One token's limits, in token units (`"10000"`, `"2.5"`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Limit {
    /// The rolling window `max` applies to (`24h`, `7d`, `30m`, `3600s`).
    #[serde(default)]
    pub per: Option<Window>,
    /// The most one key may sign for this token within one window.
    #[serde(default)]
    pub max: Option<String>,
    /// The most one transaction may move.
    #[serde(default)]
    pub max_per_tx: Option<String>,
}

/// A rolling window's length, in seconds; written `24h`, `7d`, `30m` or `3600s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window(pub u64);

impl FromStr for Window {
    type Err = crate::ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || crate::ParseError {
            what: "window",
            input: s.to_owned(),
            expected: "a number and s, m, h or d (`24h`)",
        };
        let (n, unit) = s.split_at(s.len().saturating_sub(1));
        let n: u64 = n.parse().map_err(|_| bad())?;
        let mult = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return Err(bad()),
        };
        match n.checked_mul(mult) {
            Some(secs) if secs > 0 => Ok(Window(secs)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        match s {
            _ if s.is_multiple_of(86_400) && s > 86_400 => write!(f, "{}d", s / 86_400),
            _ if s.is_multiple_of(3600) => write!(f, "{}h", s / 3600),
            _ if s.is_multiple_of(60) => write!(f, "{}m", s / 60),
            _ => write!(f, "{s}s"),
        }
    }
}

impl Serialize for Window {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Window {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_profile_and_trusted_facts_are_united() {
        let mut flags = Policy {
            max_fee: Some(U256::from(1)),
            ..Policy::default()
        };
        flags.trusted.chain(5, None);
        let mut profile = Policy {
            max_fee: Some(U256::from(2)),
            expect_chain_id: Some(5),
            ..Policy::default()
        };
        profile
            .trusted
            .chain(5, Some("goerli".into()))
            .contract(Address::repeat_byte(1), 7, None);
        let merged = flags.or(&profile);
        assert_eq!(merged.max_fee, Some(U256::from(1)));
        assert_eq!(merged.expect_chain_id, Some(5));
        assert_eq!(merged.trusted.chains.get(&5), Some(&Some("goerli".into())));
        assert!(merged.trusted.find(Address::repeat_byte(1), 7).is_some());
        assert!(merged.trusted.find(Address::repeat_byte(1), 5).is_none());
    }

    #[test]
    fn an_intent_becomes_an_exact_no_value_policy() {
        let intent = Intent {
            function: Some("redeem".into()),
            args: BTreeMap::from([("_amount".into(), "5".into())]),
            chain_id: Some(3),
            ..Intent::default()
        };
        let p = Policy::from(&intent);
        assert!(p.exact_args && p.pins_call());
        let function_only = Policy {
            expect_function: Some("transfer".into()),
            ..Policy::default()
        };
        assert!(
            !function_only.pins_call(),
            "transfer to anyone is not pinned"
        );
        assert_eq!(p.max_value, Some(U256::ZERO));
        assert_eq!(p.expect_chain_id, Some(3));
        assert!(!Policy::default().pins_call());
    }

    #[test]
    fn windows_parse_and_print() {
        for (text, secs, shown) in [
            ("24h", 86_400, "24h"),
            ("1d", 86_400, "24h"),
            ("7d", 604_800, "7d"),
            ("30m", 1800, "30m"),
            ("90s", 90, "90s"),
        ] {
            let w: Window = text.parse().expect(text);
            assert_eq!(w.0, secs, "{text}");
            assert_eq!(w.to_string(), shown, "{text}");
        }
        for bad in ["", "h", "0h", "24", "1w", "-1h", "1.5h"] {
            assert!(bad.parse::<Window>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_limit_table_reads_from_the_profile() {
        let p: Policy = toml_like(
            r#"{"limits": {"st": {"per": "24h", "max": "10000", "max-per-tx": "2500"}},
                "allowed-destinations": ["0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"]}"#,
        );
        let st = &p.limits["st"];
        assert_eq!(st.per, Some(Window(86_400)));
        assert_eq!(st.max.as_deref(), Some("10000"));
        assert_eq!(st.max_per_tx.as_deref(), Some("2500"));
        assert_eq!(p.allowed_destinations.len(), 1);
        let unknown = serde_json::from_str::<Policy>(r#"{"limits": {"st": {"maximum": "1"}}}"#);
        assert!(unknown.is_err(), "an unknown limit field is refused");
    }

    fn toml_like(json: &str) -> Policy {
        serde_json::from_str(json).expect("policy")
    }
}
