//! Spending limits and the destination allowlist: the policy's `[policy.limits]` table
//! (per token symbol: a rolling window's maximum, a per-transaction maximum) and
//! `allowed-destinations`.
//!
//! The verifier stays pure: it does not read the signing log. The caller asks
//! [`window_query`] which entries a limit adds up, reads their total from the log
//! ([`crate::log::SigningLog::window_total`]) and passes it in
//! [`crate::Context::spent`]. A windowed limit without that total is a refusal, never a
//! pass: a path that forgot to read the log cannot sign past a limit.

use std::fmt;
use std::str::FromStr;

use alloy_primitives::U256;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Error;
use crate::amount::{format_units, parse_units};
use crate::log::{WindowQuery, call_facts};
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
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("window {s:?}: expected a number and s, m, h or d (`24h`)");
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

/// What the signing log says about a windowed limit: the query that was totalled and
/// its total.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spent {
    /// What was added up.
    pub query: WindowQuery,
    /// The total, in base units.
    pub total: U256,
}

/// The limit for `token`, if the policy sets one (symbols match case-insensitively).
fn limit_for<'a>(policy: &'a Policy, token: &Token) -> Option<(&'a str, &'a Limit)> {
    policy
        .limits
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(&token.symbol))
        .map(|(k, v)| (k.as_str(), v))
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
        since: now.saturating_sub(per.0),
    })
}

/// The window total for `raw` read from `log` at time `now`, when the policy has a
/// windowed limit on its token: what [`crate::Context::spent`] takes.
pub fn read_spent(
    policy: &Policy,
    raw: &RawTx,
    log: &dyn crate::log::SigningLog,
    now: u64,
) -> Result<Option<Spent>, Error> {
    window_query(policy, raw, now)
        .map(|query| {
            let total = log.window_total(&query)?;
            Ok(Spent { query, total })
        })
        .transpose()
}

fn units(v: U256, t: &Token) -> String {
    match format_units(v, t.decimals) {
        Ok(s) => format!("{s} {}", t.symbol),
        Err(_) => format!("{v} base units"),
    }
}

/// Checks `raw` against the allowlist and the limits of `policy`, with the window total
/// in `spent`; `signing` is false for bytes signed before (their window was counted
/// where they were signed, so only the per-transaction checks apply). Returns the lines that say where the key stands, for the summary.
pub(crate) fn check(
    policy: &Policy,
    raw: &RawTx,
    token: Option<&Token>,
    spent: Option<&Spent>,
    signing: bool,
) -> Result<Vec<String>, Error> {
    let facts = call_facts(&raw.data);
    if !policy.allowed_destinations.is_empty()
        && let Some(dest) = facts.destination
        && !policy.allowed_destinations.contains(&dest)
    {
        let list: Vec<String> = policy
            .allowed_destinations
            .iter()
            .map(ToString::to_string)
            .collect();
        return Err(Error::Policy {
            by: crate::error::CheckedBy::Policy,
            field: "destination".into(),
            expected: format!("one of allowed-destinations: {}", list.join(", ")),
            found: dest.to_string(),
        });
    }
    let Some((name, limit)) = token.and_then(|t| limit_for(policy, t)) else {
        return Ok(Vec::new());
    };
    let token = token.unwrap_or_else(|| unreachable!("a limit is found only for a token"));
    let parse = |field: &str, text: &str| {
        parse_units(text, token.decimals).map_err(|e| {
            Error::Refused(format!(
                "policy limit {name}.{field} {text:?} is not an amount of {} ({e})",
                token.symbol
            ))
        })
    };
    let Some(amount) = facts.amount else {
        return Err(Error::Limit {
            limit: format!("on {}", token.symbol),
            total: "unknown".into(),
            attempted: "a call whose amount bridgectl cannot read".into(),
        });
    };
    let mut lines = Vec::new();
    if let Some(text) = &limit.max_per_tx {
        let max = parse("max-per-tx", text)?;
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
            let max = parse("max", text)?;
            let Some(spent) = spent.filter(|s| {
                s.query.key == raw.from
                    && s.query.chain_id == raw.chain_id
                    && s.query.contract == raw.to
            }) else {
                return Err(Error::Refused(format!(
                    "policy limit {name} ({} per {per}) needs this key's total from the \
                     signing log, and none was read",
                    units(max, token)
                )));
            };
            let after = spent.total.saturating_add(amount);
            if after > max {
                return Err(Error::Limit {
                    limit: format!("{} per {per}", units(max, token)),
                    total: units(spent.total, token),
                    attempted: units(amount, token),
                });
            }
            lines.push(format!(
                "last {per}: {} of {} signed by this key; this adds {}",
                units(spent.total, token),
                units(max, token),
                units(amount, token)
            ));
        }
        (Some(_), None) => {
            return Err(Error::Refused(format!(
                "policy limit {name}: `max` needs `per` (the window, `24h`)"
            )));
        }
        _ => {}
    }
    Ok(lines)
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
