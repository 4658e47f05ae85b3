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

use alloy_primitives::{B256, U256};

use crate::Error;
use crate::amount::parse_units;
use crate::effects::Effects;
use crate::policy::Policy;
use crate::rawtx::{RawTx, signing_hash};
use crate::request::Token;
use crate::signing_log::{SigningLog, WindowQuery, nonce_free};

// The policy's limit table and the log's window types, where they were first published.
pub use crate::policy::{Limit, Window};
pub use crate::signing_log::{Spent, WindowLimit};

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
        if let Some(per) = limit.per
            && per.0 > crate::signing_log::MAX_WINDOW_SECS
        {
            return Err(Error::Refused(format!(
                "policy limit {name}: per = \"{per}\" is longer than the signing log carries \
                 spending ({}: what an acknowledgement of a lost log keeps), so the window \
                 could not be enforced; use a `per` of {} or less",
                Window(crate::signing_log::MAX_WINDOW_SECS),
                Window(crate::signing_log::MAX_WINDOW_SECS)
            )));
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
        // The token it names, which the profile describes, and an amount of it.
        let Some(token) = known_tokens(policy).find(|t| t.symbol.eq_ignore_ascii_case(&rule.token))
        else {
            return Err(Error::Refused(format!(
                "policy auto-approve #{}: token {:?} is not a token the profile describes \
                 (known: {})",
                i + 1,
                rule.token,
                symbols()
            )));
        };
        if parse_units(&rule.max, token.decimals).is_err() {
            return Err(Error::Refused(format!(
                "policy auto-approve #{}: max {:?} is not an amount of {} ({} decimals)",
                i + 1,
                rule.max,
                token.symbol,
                token.decimals
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

/// How far past the chain's newest block time a window may end: a chain's blocks come
/// seconds apart, so five minutes is slack for a node a little behind, and little room for
/// a clock set ahead.
pub const CLOCK_TOLERANCE: u64 = 5 * 60;

/// Which entries of the signing log the policy's windowed limit on `raw`'s token adds
/// up at time `now`; `None` when no windowed limit applies to it.
pub fn window_query(policy: &Policy, raw: &RawTx, now: u64) -> Option<WindowQuery> {
    window_query_within(policy, raw, now, None)
}

/// [`window_query`] with the window's end held at or before `ceiling` (the latest time
/// a second witness, the chain, vouches for; see [`WindowQuery::ceiling`]).
pub fn window_query_within(
    policy: &Policy,
    raw: &RawTx,
    now: u64,
    ceiling: Option<u64>,
) -> Option<WindowQuery> {
    let token = policy.trusted.find(raw.to, raw.chain_id)?.token.as_ref()?;
    let (_, limit) = limit_for(policy, token)?;
    let per = limit.per?;
    limit.max.as_ref()?;
    Some(WindowQuery {
        key: raw.from,
        chain_id: raw.chain_id,
        contract: raw.to,
        per: per.0,
        now: ceiling.map_or(now, |c| now.min(c)),
        ceiling,
        clock: now,
    })
}

/// Checks that the signing log may be signed into (it reaches its kept checkpoint, no
/// stranger's entry sits where a total is read) and that `raw.from` has not signed
/// another transaction at `raw.nonce` ([`crate::signing_log::nonce_free`]; `replaces` names the
/// transaction a deliberate replacement replaces), then reads the
/// window total for `raw` at time `now` when the policy has a windowed limit on its
/// token: what [`crate::Context::spent`] takes. Called before anything is unlocked.
pub fn read_spent(
    policy: &Policy,
    raw: &RawTx,
    replaces: Option<B256>,
    log: &dyn SigningLog,
    now: u64,
) -> Result<Option<Spent>, Error> {
    read_spent_within(policy, raw, replaces, log, now, None)
}

/// [`read_spent`] with the window's end held at or before `ceiling`
/// ([`window_query_within`]): what an online signer passes, from the chain's newest
/// block time, so a clock set ahead of the chain cannot move what was signed out of the
/// window.
pub fn read_spent_within(
    policy: &Policy,
    raw: &RawTx,
    replaces: Option<B256>,
    log: &dyn SigningLog,
    now: u64,
    ceiling: Option<u64>,
) -> Result<Option<Spent>, Error> {
    log.check(raw.from)?;
    let prior = log.signed_at_nonce(raw.from, raw.chain_id, raw.nonce)?;
    nonce_free(
        &prior,
        raw.from,
        raw.chain_id,
        raw.nonce,
        signing_hash(raw),
        replaces,
    )?;
    window_query_within(policy, raw, now, ceiling)
        .map(|query| log.window_total(&query))
        .transpose()
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
                field: crate::error::Field::Function,
                kind: crate::error::Expectation::ModelledCall,
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
                    field: crate::error::Field::Destination(argument.to_string()),
                    kind: crate::error::Expectation::AllowedDestination,
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
                limit: format!("{} per transaction", token.units(max)),
                total: "-".into(),
                attempted: token.units(amount),
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
                    token.units(max)
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
                token.units(spent.total),
                token.units(max),
                token.units(amount)
            ));
            checked.window = Some(window);
        }
        // `max` without `per` was refused by `check_enforceable` before this runs.
        _ => {}
    }
    Ok(checked)
}

/// The first standing approval (1-based) that covers the call: the callee is the
/// contract of the rule's token, its function, every destination listed, and no more
/// moved than its `max` of that token.
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
            token.symbol.eq_ignore_ascii_case(&rule.token)
                && function.is_some_and(|f| f.selector == call.function.selector)
                && effects
                    .destinations()
                    .all(|(_, d)| rule.destinations.contains(&d))
                && parse_units(&rule.max, token.decimals).is_ok_and(|max| total <= max)
        })
        .map(|i| i + 1)
}
