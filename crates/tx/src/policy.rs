//! What the signer trusts: the [`Policy`]. It comes from the operator's configuration (a
//! profile, or expectations given for one call) and is the only source of chain ids, contract addresses, symbols and decimals.
//! A sign request's intent and a platform's answer are claims checked against it by
//! [`crate::verify()`].

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use serde::{Deserialize, Serialize};

use crate::request::{Intent, Token};

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
    pub limits: BTreeMap<String, crate::limits::Limit>,
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

/// A standing approval: a call of `function` whose every destination is one of
/// `destinations` and that moves at most `max` of the callee's token in all (fees
/// included, as [`crate::effects`] counts them) may be signed without a confirmation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AutoApprove {
    /// The function: a name (`transfer`) or signature (`transfer(address,uint256)`).
    pub function: String,
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
}
