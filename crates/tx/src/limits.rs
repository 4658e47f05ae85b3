//! Spending limits and the destination allowlist: the policy's `[policy.limits]` table
//! (per token symbol: a rolling window's maximum, a per-transaction maximum) and
//! `allowed-destinations`. What a call moves and where is [`crate::effects`]'s model,
//! never a guess from argument names.
//!
//! The verifier stays pure: it does not read the signing log. The caller asks
//! [`read_spent`] for the window total (which also checks that the log reaches its
//! kept checkpoint) and passes it in [`crate::Context::spent`]. A windowed limit
//! without that total is a refusal, never a pass: a path that forgot to read the log
//! cannot sign past a limit. The total is read again inside the append
//! ([`WindowLimit`]), so two signers racing each other cannot both fit under it. The
//! same two steps guard the nonce: [`read_spent`] refuses a nonce the key signed
//! already before anything is unlocked, and the append refuses it again.

use std::fmt;
use std::str::FromStr;

use alloy_primitives::{B256, U256};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Error;
use crate::amount::{format_units, parse_units};
use crate::effects::Effects;
use crate::log::WindowQuery;
use crate::policy::Policy;
use crate::rawtx::RawTx;
use crate::request::Token;

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

/// What the signing log says about a windowed limit: the query that was totalled, its
/// total, and the window's start as the log fixed it (never earlier than its newest
/// trusted entry allows: time does not go backwards for a window).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spent {
    /// What was added up.
    pub query: WindowQuery,
    /// The total, in base units.
    pub total: U256,
    /// The window's start, in Unix seconds.
    pub since: u64,
}

/// A windowed limit a signature must stay within: checked by the verifier against the
/// total read before approval, and again by [`crate::log::SigningLog::append`] inside
/// the transaction that appends the entry, so concurrent signers cannot pass it
/// together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowLimit {
    /// Which entries count (its `now` is set to the entry's time when appending).
    pub query: WindowQuery,
    /// The most the window may hold, in base units.
    pub max: U256,
    /// What this signature adds, in base units.
    pub amount: U256,
    /// The token, for messages.
    pub token: Token,
}

impl WindowLimit {
    /// The same limit with its window ending at `now`.
    pub fn at(&self, now: u64) -> WindowLimit {
        let mut limit = self.clone();
        limit.query.now = now;
        limit
    }

    /// Refuses when `total` (what the window already holds) plus this signature's
    /// amount would cross the limit.
    pub fn check(&self, total: U256) -> Result<(), Error> {
        if total.saturating_add(self.amount) > self.max {
            return Err(Error::Limit {
                limit: format!(
                    "{} per {}",
                    units(self.max, &self.token),
                    Window(self.query.per)
                ),
                total: units(total, &self.token),
                attempted: units(self.amount, &self.token),
            });
        }
        Ok(())
    }
}

/// The limit for `token`, if the policy sets one (symbols match case-insensitively).
fn limit_for<'a>(policy: &'a Policy, token: &Token) -> Option<(&'a str, &'a Limit)> {
    policy
        .limits
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(&token.symbol))
        .map(|(k, v)| (k.as_str(), v))
}

/// Every token the policy's trusted contracts name.
fn known_tokens(policy: &Policy) -> impl Iterator<Item = &Token> {
    policy
        .trusted
        .contracts
        .iter()
        .filter_map(|c| c.token.as_ref())
}

/// Checks that every limit and standing approval of `policy` can be enforced: each
/// limit names a token that a trusted contract has (with its decimals), its amounts
/// are amounts of that token, `max` comes with `per`; each auto-approve names a known
/// function and an amount. A limit that cannot be enforced is a refusal, never a
/// silent pass (a misspelled symbol, a profile without `side_symbol`).
pub fn check_enforceable(policy: &Policy) -> Result<(), Error> {
    let symbols = || {
        let known: Vec<String> = known_tokens(policy).map(|t| t.symbol.clone()).collect();
        if known.is_empty() {
            "none: the profile names no token with its symbol and decimals".to_owned()
        } else {
            known.join(", ")
        }
    };
    for (name, limit) in &policy.limits {
        let Some(token) = known_tokens(policy).find(|t| t.symbol.eq_ignore_ascii_case(name)) else {
            return Err(Error::Refused(format!(
                "policy limit {name:?} names no token the profile knows (known: {}); a limit \
                 that cannot be enforced is refused, not ignored",
                symbols()
            )));
        };
        for (field, text) in [("max", &limit.max), ("max-per-tx", &limit.max_per_tx)] {
            if let Some(text) = text {
                parse_limit(name, field, text, token)?;
            }
        }
        if limit.max.is_some() && limit.per.is_none() {
            return Err(Error::Refused(format!(
                "policy limit {name}: `max` needs `per` (the window, `24h`)"
            )));
        }
        if limit.max.is_none() && limit.max_per_tx.is_none() {
            return Err(Error::Refused(format!(
                "policy limit {name}: sets neither `max` (with `per`) nor `max-per-tx`"
            )));
        }
    }
    for (i, rule) in policy.auto_approve.iter().enumerate() {
        if crate::calldata::function_by_name(&rule.function).is_none() {
            return Err(Error::Refused(format!(
                "policy auto-approve #{}: {:?} is not a function bridgectl knows",
                i + 1,
                rule.function
            )));
        }
        // An amount of some token the profile knows (the callee's is used when matching).
        let readable = known_tokens(policy).any(|t| parse_units(&rule.max, t.decimals).is_ok());
        if !readable {
            return Err(Error::Refused(format!(
                "policy auto-approve #{}: max {:?} is not an amount of a token the profile \
                 knows (known: {})",
                i + 1,
                rule.max,
                symbols()
            )));
        }
    }
    for selector in &policy.allow_unmodelled {
        if parse_selector(selector).is_none() {
            return Err(Error::Refused(format!(
                "policy allow-unmodelled: {selector:?} is not a selector (0x and 8 hex digits)"
            )));
        }
    }
    Ok(())
}

fn parse_selector(text: &str) -> Option<[u8; 4]> {
    let hex = text.strip_prefix("0x")?;
    let bytes = alloy_primitives::hex::decode(hex).ok()?;
    <[u8; 4]>::try_from(bytes.as_slice()).ok()
}

fn parse_limit(name: &str, field: &str, text: &str, token: &Token) -> Result<U256, Error> {
    parse_units(text, token.decimals).map_err(|e| {
        Error::Refused(format!(
            "policy limit {name}.{field} {text:?} is not an amount of {} ({e})",
            token.symbol
        ))
    })
}

/// Which entries of the signing log the policy's windowed limit on `raw`'s token adds
/// up at time `now`; `None` when no windowed limit applies to it.
pub fn window_query(policy: &Policy, raw: &RawTx, now: u64) -> Option<WindowQuery> {
    let token = policy.trusted.find(raw.to, raw.chain_id)?.token.as_ref()?;
    let (_, limit) = limit_for(policy, token)?;
    let per = limit.per?;
    limit.max.as_ref()?;
    Some(WindowQuery {
        key: raw.from,
        chain_id: raw.chain_id,
        contract: raw.to,
        per: per.0,
        now,
    })
}

/// Checks that the signing log may be signed into (it reaches its kept checkpoint, no
/// stranger's entry sits where a total is read) and that `raw.from` has not signed
/// another transaction at `raw.nonce` ([`crate::log::nonce_free`]; `replaces` names the
/// transaction a deliberate replacement replaces), then reads the
/// window total for `raw` at time `now` when the policy has a windowed limit on its
/// token: what [`crate::Context::spent`] takes. Called before anything is unlocked.
pub fn read_spent(
    policy: &Policy,
    raw: &RawTx,
    replaces: Option<B256>,
    log: &dyn crate::log::SigningLog,
    now: u64,
) -> Result<Option<Spent>, Error> {
    log.check(raw.from)?;
    let prior = log.signed_at_nonce(raw.from, raw.chain_id, raw.nonce)?;
    crate::log::nonce_free(
        &prior,
        raw.from,
        raw.chain_id,
        raw.nonce,
        crate::sign::signing_hash(raw),
        replaces,
    )?;
    window_query(policy, raw, now)
        .map(|query| log.window_total(&query))
        .transpose()
}

fn units(v: U256, t: &Token) -> String {
    match format_units(v, t.decimals) {
        Ok(s) => format!("{s} {}", t.symbol),
        Err(_) => format!("{v} base units"),
    }
}

/// What [`check`] found: the lines that say where the key stands (for the summary),
/// the windowed limit the append re-checks, and whether a standing approval of the
/// policy covers the call.
#[derive(Clone, Debug, Default)]
pub(crate) struct Checked {
    pub lines: Vec<String>,
    pub window: Option<WindowLimit>,
    pub auto_approved: Option<usize>,
}

/// Checks `raw` against the allowlist and the limits of `policy`, with the window total
/// in `spent`; `signing` is false for bytes signed before (their window was counted
/// where they were signed, so only the per-transaction checks apply). What a call moves
/// is what [`crate::effects`] says it moves: every destination is checked, every
/// movement counted; a call without a model is refused under a limit or an allowlist
/// unless the policy allows its selector.
pub(crate) fn check(
    policy: &Policy,
    raw: &RawTx,
    token: Option<&Token>,
    spent: Option<&Spent>,
    signing: bool,
) -> Result<Checked, Error> {
    let effects = Effects::of_calldata(&raw.data);
    let limit = token.and_then(|t| limit_for(policy, t));
    let guarded = !policy.allowed_destinations.is_empty() || limit.is_some();
    if let Effects::Unmodelled(why) = &effects
        && guarded
    {
        let allowed = raw.data.get(..4).is_some_and(|sel| {
            policy
                .allow_unmodelled
                .iter()
                .filter_map(|s| parse_selector(s))
                .any(|s| s == sel)
        });
        if !allowed {
            return Err(Error::Policy {
                by: crate::error::CheckedBy::Policy,
                field: "function".into(),
                expected: "a call whose effects bridgectl models, under spending limits and \
                           an allowlist (or its selector in allow-unmodelled)"
                    .into(),
                found: why.clone(),
            });
        }
    }
    if !policy.allowed_destinations.is_empty() {
        for (argument, dest) in effects.destinations() {
            if !policy.allowed_destinations.contains(&dest) {
                let list: Vec<String> = policy
                    .allowed_destinations
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                return Err(Error::Policy {
                    by: crate::error::CheckedBy::Policy,
                    field: format!("destination ({argument})"),
                    expected: format!("one of allowed-destinations: {}", list.join(", ")),
                    found: dest.to_string(),
                });
            }
        }
    }
    let mut checked = Checked {
        auto_approved: auto_approval(policy, raw, &effects, token),
        ..Checked::default()
    };
    let Some((name, limit)) = limit else {
        return Ok(checked);
    };
    let token = token.unwrap_or_else(|| unreachable!("a limit is found only for a token"));
    let Some(amount) = effects.total() else {
        return Err(Error::Limit {
            limit: format!("on {}", token.symbol),
            total: "unknown".into(),
            attempted: "a call whose amount bridgectl cannot read".into(),
        });
    };
    if let Some(text) = &limit.max_per_tx {
        let max = parse_limit(name, "max-per-tx", text, token)?;
        if amount > max {
            return Err(Error::Limit {
                limit: format!("{} per transaction", units(max, token)),
                total: "-".into(),
                attempted: units(amount, token),
            });
        }
    }
    match (&limit.max, limit.per) {
        (Some(_), Some(_)) if !signing => {}
        (Some(text), Some(per)) => {
            let max = parse_limit(name, "max", text, token)?;
            let Some(spent) = spent.filter(|s| {
                s.query.key == raw.from
                    && s.query.chain_id == raw.chain_id
                    && s.query.contract == raw.to
                    && s.query.per == per.0
            }) else {
                return Err(Error::Refused(format!(
                    "policy limit {name} ({} per {per}) needs this key's total from the \
                     signing log, and none was read",
                    units(max, token)
                )));
            };
            let window = WindowLimit {
                query: spent.query.clone(),
                max,
                amount,
                token: token.clone(),
            };
            window.check(spent.total)?;
            checked.lines.push(format!(
                "last {per}: {} of {} signed by this key; this adds {}",
                units(spent.total, token),
                units(max, token),
                units(amount, token)
            ));
            checked.window = Some(window);
        }
        // `max` without `per` was refused by `check_enforceable` before this runs.
        _ => {}
    }
    Ok(checked)
}

/// The first standing approval (1-based) that covers the call: its function, every
/// destination listed, and no more moved than its `max` of the callee's token.
fn auto_approval(
    policy: &Policy,
    raw: &RawTx,
    effects: &Effects,
    token: Option<&Token>,
) -> Option<usize> {
    let call = crate::calldata::decode(&raw.data).ok()?;
    let total = effects.total()?;
    let token = token?;
    policy
        .auto_approve
        .iter()
        .position(|rule| {
            let function = crate::calldata::function_by_name(&rule.function);
            function.is_some_and(|f| f.selector == call.function.selector)
                && effects
                    .destinations()
                    .all(|(_, d)| rule.destinations.contains(&d))
                && parse_units(&rule.max, token.decimals).is_ok_and(|max| total <= max)
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

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
