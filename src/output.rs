//! Writing results: text for people on stdout, JSON for scripts, progress on stderr.
//!
//! Everything the CLI prints goes through here so `--json` is honoured in one place.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

use bridgectl_tx::text::printable_lines;
use serde::Serialize;

/// What this process has written on stdout as JSON so far, for [`json_error`]: nothing
/// (0), its one result document (1), or lines of a stream (2).
static JSON_WRITTEN: AtomicU8 = AtomicU8::new(0);
const DOCUMENT: u8 = 1;
const LINES: u8 = 2;

/// Prints `value` as pretty JSON followed by a newline on stdout.
pub fn json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    JSON_WRITTEN.store(DOCUMENT, Ordering::Relaxed);
    let value = checksummed(serde_json::to_value(value)?);
    let mut out = std::io::stdout().lock();
    // As an io::Error, so that a closed pipe is recognised as one.
    serde_json::to_writer_pretty(&mut out, &value).map_err(std::io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

/// Prints `value` as one line of compact JSON on stdout: for streams of results that a
/// script reads line by line (`batch run --json`).
pub fn json_line<T: Serialize>(value: &T) -> anyhow::Result<()> {
    JSON_WRITTEN.store(LINES, Ordering::Relaxed);
    let value = checksummed(serde_json::to_value(value)?);
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &value).map_err(std::io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// The token contracts the profile names (chain, address, and the token's symbol and
/// decimals where it gives them): what text for people shows amounts in. None without a
/// profile; `--json` keeps base units whatever the profile.
pub fn profile_tokens(
    global: &crate::global::GlobalOpts,
) -> Vec<bridgectl_tx::policy::TrustedContract> {
    crate::config::load_profile(global)
        .map(|p| {
            p.trust_root(bridgectl_tx::Policy::default())
                .trusted
                .contracts
        })
        .unwrap_or_default()
}

/// `amount` base units of the token contract `to` on chain `chain_id`, as a person reads
/// them (`1.5 ST`), when `tokens` (see [`profile_tokens`]) give its decimals.
pub fn token_units(
    tokens: &[bridgectl_tx::policy::TrustedContract],
    chain_id: u64,
    to: alloy_primitives::Address,
    amount: alloy_primitives::U256,
) -> Option<String> {
    let token = tokens
        .iter()
        .find(|c| c.chain_id == chain_id && c.address == to)?
        .token
        .as_ref()?;
    let units = bridgectl_tx::amount::format_units(amount, token.decimals).ok()?;
    Some(format!("{units} {}", untrusted(&token.symbol)))
}

/// `text` in EIP-55 mixed case when it is an address (`0x` and 40 hex digits), else as
/// it is.
pub fn checksummed_text(text: &str) -> String {
    match checksummed(serde_json::Value::String(text.to_owned())) {
        serde_json::Value::String(s) => s,
        _ => text.to_owned(),
    }
}

/// `value` with every address in EIP-55 mixed case, as keys, cast and block explorers
/// print them: one spelling of an address in every document, whichever part of the
/// program (or the platform) gave it. Only a string that is exactly `0x` and 40 hex
/// digits is an address here; hashes (64 digits) and calldata are left as they are.
pub fn checksummed(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => match s.parse::<alloy_primitives::Address>() {
            Ok(a) if s.len() == 42 && s.starts_with("0x") => Value::String(a.to_checksum(None)),
            _ => Value::String(s),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(checksummed).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, checksummed(v))).collect())
        }
        other => other,
    }
}

/// Says that this command's stdout is a stream of JSON lines (`batch run|resume --json`,
/// `webhook listen --json`): a failure before its first line is one line too, so that a
/// script reading lines gets whole documents whatever happens.
pub fn json_stream() {
    JSON_WRITTEN.store(LINES, Ordering::Relaxed);
}

/// Prints a failure for a script on stdout, `{"error": {"code", "message", "exit", ...}}`:
/// `code` the exit code's kind ([`crate::exit::Code::name`]), `message` what stderr
/// says after `error: `, `exit` the process's exit code; and where the failure names
/// them, `txId`, `batchId` and `hash` (see [`crate::exit::Handles`]) and `hint`, the
/// text of stderr's `hint:` line. A stream (`batch run --json`) gets it as its last
/// line. A command that already printed its one result document (`log verify` of a
/// log that does not hold) said there what failed, and stdout keeps that one document.
pub fn json_error(
    code: crate::exit::Code,
    message: &str,
    handles: &crate::exit::Handles,
    hint: Option<&str>,
) {
    let mut error =
        serde_json::json!({"code": code.name(), "message": message, "exit": code as u8});
    for (name, value) in [
        ("txId", handles.tx_id.as_deref()),
        ("batchId", handles.batch_id.as_deref()),
        ("hash", handles.hash.as_deref()),
        ("hint", hint),
    ] {
        if let Some(value) = value {
            error[name] = value.into();
        }
    }
    let value = serde_json::json!({ "error": error });
    // The process is failing already: a closed stdout changes nothing.
    let _ = match JSON_WRITTEN.load(Ordering::Relaxed) {
        0 => json(&value),
        LINES => json_line(&value),
        _ => Ok(()),
    };
}

/// Prints a line of text on stdout. Text from outside in it (platform values, labels,
/// webhook fields) reaches the terminal escaped: see [`untrusted()`].
pub fn line(text: impl std::fmt::Display) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", printable_lines(&text.to_string()))?;
    Ok(())
}

/// Prints a line on stderr: progress, warnings and prompts that must not pollute stdout.
/// Escaped like [`line()`].
pub fn note(text: impl std::fmt::Display) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", printable_lines(&text.to_string()));
}

/// Prints a table on stdout: a header line, then one line per row, every column as
/// wide as its widest cell so the columns line up. Columns whose index is in
/// `right` (amounts) are right-aligned; the last column is not padded. Cells from
/// outside must be escaped with [`untrusted()`] first (an escape is wider than the
/// character it stands for, so escaping afterwards would break the alignment).
pub fn table(headers: &[&str], right: &[usize], rows: &[Vec<String>]) -> anyhow::Result<()> {
    let width = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = headers.iter().map(|h| width(h)).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(width(cell));
            }
        }
    }
    let render = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (i, cell) in cells.enumerate() {
            let last = i + 1 == widths.len();
            let pad = widths[i].saturating_sub(width(cell));
            if i > 0 {
                text.push_str("  ");
            }
            if right.contains(&i) {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                if !last {
                    text.push_str(&" ".repeat(pad));
                }
            }
        }
        text.trim_end().to_owned()
    };
    line(render(&mut headers.iter().copied()))?;
    for row in rows {
        line(render(&mut row.iter().map(String::as_str)))?;
    }
    Ok(())
}

/// How a followed flow stands, for the line `resume`, `submit --wait` and `action exec
/// --wait` print: its state, with the redemption's status when there is one, and what
/// could not be observed (why it is still `submitted`).
pub fn flow_end(s: &bridgectl_flow::FlowStatus) -> String {
    let mut text = s
        .state
        .map_or_else(|| "unknown".to_owned(), |st| st.as_str().to_owned());
    if let (Some(ending), Some(bridgectl_flow::FlowState::Confirming)) = (s.ending, s.state) {
        text.push_str(&format!(
            " ({} once final{})",
            ending.as_str(),
            s.confirmations()
                .map(|c| format!(": {c}"))
                .unwrap_or_default()
        ));
    }
    for reorg in &s.reorgs {
        text.push_str(&format!(
            " (reorganised: {:?} of block {} taken back)",
            reorg.fact.kind, reorg.fact.block
        ));
    }
    if let Some(r) = &s.redemption {
        text.push_str(&format!(", redemption {}", untrusted(&r.status)));
    }
    for what in &s.unobserved {
        text.push_str(&format!(" (not observed: {what})"));
    }
    text
}

/// "paid 1.5 MT by payout 0x…": what a redemption record says it pays (its `mtAmount`
/// in `main`'s units) and the payout it names, once known.
pub fn payout_line(
    s: &bridgectl_flow::FlowStatus,
    main: &bridgectl_flow::ChainSide,
) -> Option<String> {
    let r = s.redemption.as_ref()?;
    let amount = r
        .raw
        .get("mtAmount")
        .and_then(|a| a.as_str())
        .map(|a| main.tokens_text(a));
    match (amount, s.payout) {
        (Some(a), Some(p)) => Some(format!("MT paid: {a} by payout {p}")),
        (Some(a), None) => Some(format!("MT to be paid: {a}")),
        (None, Some(p)) => Some(format!("MT payout {p}")),
        (None, None) => None,
    }
}

/// One string from outside, made safe to print inside a line: every control character
/// (newlines too) escaped, so it can neither drive the terminal nor fake a line. The
/// one helper for such strings; [`line()`] and [`note()`] also escape, as a last guard,
/// everything but line breaks.
pub fn untrusted(s: &str) -> std::borrow::Cow<'_, str> {
    bridgectl_tx::text::printable(s)
}

/// A time in ms since the Unix epoch as RFC 3339 in UTC, always with milliseconds so
/// that lines of them line up (`2026-01-02T03:04:05.600Z`); the number itself if it is
/// out of range.
pub fn time_ms(ms: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        ),
        Err(_) => ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{checksummed, untrusted};

    #[test]
    fn addresses_are_printed_in_one_spelling_and_nothing_else_changes() {
        let lower = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
        let mixed = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
        let hash = format!("0x{}", "ab".repeat(32));
        let doc = serde_json::json!({
            "from": lower, "to": mixed.to_uppercase().replace("0X", "0x"),
            "list": [lower, {"nested": lower}], "txHash": hash, "label": "dev",
            "short": "0x7099", "noPrefix": &lower[2..], "n": 7,
        });
        assert_eq!(
            checksummed(doc),
            serde_json::json!({
                "from": mixed, "to": mixed, "list": [mixed, {"nested": mixed}],
                "txHash": hash, "label": "dev", "short": "0x7099", "noPrefix": &lower[2..],
                "n": 7,
            })
        );
    }

    #[test]
    fn untrusted_text_leaves_nothing_a_terminal_would_act_on() {
        assert_eq!(untrusted("BLOCK_PERIOD"), "BLOCK_PERIOD");
        assert_eq!(untrusted("a\u{1b}[2Kb"), "a\\u{1b}[2Kb");
        assert_eq!(untrusted("x\r\ny\u{7f}"), "x\\r\\ny\\u{7f}");
        assert_eq!(untrusted("\u{202e}kcatta"), "\\u{202e}kcatta");
        assert_eq!(untrusted("a\\u{1b}"), "a\\\\u{1b}");
        assert!(!untrusted("\u{9b}31m").contains('\u{9b}'));
    }
}
