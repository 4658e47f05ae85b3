//! Batch files: the JSONL or CSV an operator writes, read strictly into [`BatchItem`]s.
//!
//! One item per line: `op` (`redeem`, `transfer` or `swap`), `from`, `amount`, and for a
//! transfer `to` and `token` (`mt` or `st`); `id` is optional (`line-N` otherwise). Blank
//! lines and lines starting with `#` are skipped.
//!
//! An item's id is its idempotency key ([`BatchItem::key`]): the journal runs an id once,
//! in whichever batch records it first. An item without an id is keyed by the file's
//! SHA-256 and its line (two equal lines may be two payouts, and `line-3` of another
//! file is another item), so the same file run again runs none of its items again, and
//! an edited file (another hash) runs its unnamed items as new ones.
//!
//! ```text
//! {"op": "redeem", "from": "payouts-1", "amount": "12.5", "id": "invoice-7"}
//! ```
//! ```text
//! op,from,amount,to,token
//! transfer,payouts-1,3,0x8ba1f109551bD432803012645Ac136ddd64DBA72,mt
//! ```
//!
//! Everything that could be read two ways is refused, naming the line: a JSON key twice
//! (which amount was meant?), an amount written as a JSON number (already rounded by
//! whatever wrote it), a CSV column named twice, quoted CSV cells, an unknown field, a
//! zero amount or one with more decimals than its token has. Reading is separate from
//! resolving accounts: `from` and `to` go through a resolver the caller gives (a key
//! label, an address), so a wallet can read batch files with its own accounts.
//!
//! Every string from the file that appears in an error is escaped
//! ([`bridgectl_tx::text::printable`]), so a message can be printed as it is.

use std::collections::BTreeMap;
use std::path::Path;

use alloy_primitives::{Address, U256};
use serde_json::Value;

use crate::flows::{BatchItem, BatchOp, TokenSide};

/// The largest batch file a caller should read: far above a million items, far below
/// what could exhaust memory.
pub const MAX_BATCH_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The fields an item may have.
pub const FIELDS: [&str; 6] = ["op", "from", "amount", "to", "token", "id"];

/// How a batch file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchFormat {
    /// One JSON object per line, every value a string.
    Jsonl,
    /// A header line naming the columns, then one item per line; no quoting.
    Csv,
}

impl BatchFormat {
    /// CSV for a `.csv` file (any case), JSONL otherwise.
    pub fn for_path(path: &Path) -> BatchFormat {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            BatchFormat::Csv
        } else {
            BatchFormat::Jsonl
        }
    }
}

/// Why a batch file was refused, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{reason}", if *.line == 0 { String::new() } else { format!("line {line}: ") })]
#[non_exhaustive]
pub struct BatchFileError {
    /// The line (from 1); 0 for the file as a whole.
    pub line: usize,
    /// What is wrong, every string from the file escaped.
    pub reason: String,
}

/// One item line, its fields as text (empty CSV cells left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchRow {
    /// The line (from 1).
    pub line: usize,
    /// Field name to value.
    pub fields: BTreeMap<String, String>,
}

fn refuse(line: usize, reason: impl Into<String>) -> BatchFileError {
    BatchFileError {
        line,
        reason: reason.into(),
    }
}

/// `s` from the file, safe to put in a message.
fn shown(s: &str) -> String {
    format!("{:?}", bridgectl_tx::text::printable(s))
}

/// The item lines of `text`, checked for syntax only (no field is interpreted).
pub fn read_rows(text: &str, format: BatchFormat) -> Result<Vec<BatchRow>, BatchFileError> {
    let mut rows = Vec::new();
    let mut header: Option<Vec<String>> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields = match format {
            BatchFormat::Jsonl => json_fields(line, trimmed)?,
            BatchFormat::Csv => {
                if trimmed.contains('"') {
                    return Err(refuse(line, "quoted CSV fields are not supported"));
                }
                let cells: Vec<String> = trimmed.split(',').map(|c| c.trim().to_owned()).collect();
                let Some(names) = &header else {
                    let names: Vec<String> = cells.iter().map(|c| c.to_ascii_lowercase()).collect();
                    if let Some(twice) = names
                        .iter()
                        .enumerate()
                        .find_map(|(i, n)| names[..i].contains(n).then_some(n))
                    {
                        return Err(refuse(
                            line,
                            format!("column {} is named twice", shown(twice)),
                        ));
                    }
                    header = Some(names);
                    continue;
                };
                if cells.len() != names.len() {
                    return Err(refuse(
                        line,
                        format!("{} fields, the header has {}", cells.len(), names.len()),
                    ));
                }
                names
                    .iter()
                    .cloned()
                    .zip(cells)
                    .filter(|(_, v)| !v.is_empty())
                    .collect()
            }
        };
        rows.push(BatchRow { line, fields });
    }
    if rows.is_empty() {
        return Err(refuse(0, "no items"));
    }
    Ok(rows)
}

/// One JSONL line's fields: an object of strings, read by the project's strict reader (a
/// key twice is refused rather than read as the last one).
fn json_fields(line: usize, text: &str) -> Result<BTreeMap<String, String>, BatchFileError> {
    let value: Value = bridgectl_json::from_slice(text.as_bytes())
        .map_err(|e| refuse(line, format!("not a JSON object: {e}")))?;
    let Value::Object(map) = value else {
        return Err(refuse(line, "not a JSON object"));
    };
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            other => Err(refuse(
                line,
                format!(
                    "field {} must be a string (amounts are written \"1.5\", never as numbers), not {}",
                    shown(&k),
                    bridgectl_tx::text::printable(&other.to_string())
                ),
            )),
        })
        .collect()
}

/// An amount of a token with `decimals`: exact, and more than zero (a transaction that
/// moves nothing still costs its fee).
fn amount(text: &str, decimals: u8) -> Result<U256, String> {
    let amount = bridgectl_tx::amount::parse_units(text, decimals)
        .map_err(|e| format!("amount {}: {e}", shown(text)))?;
    if amount.is_zero() {
        return Err(format!(
            "amount {}: the amount must be more than zero",
            shown(text)
        ));
    }
    Ok(amount)
}

/// The idempotency key of an item without an id: line `line` of the file whose SHA-256 is
/// `file`.
pub fn line_key(file: alloy_primitives::B256, line: usize) -> String {
    format!("sha256:{file:x}/line-{line}")
}

impl BatchRow {
    /// The item this row stands for, in the file whose SHA-256 is `file` (what keys an
    /// item without an id: [`line_key`]). `account` resolves a `from`/`to` value (a key
    /// label, an address) or says why it cannot (its message is escaped like the file's
    /// text); `decimals` gives a token's decimals.
    pub fn item(
        &self,
        file: alloy_primitives::B256,
        account: &dyn Fn(&str) -> Result<Address, String>,
        decimals: &dyn Fn(TokenSide) -> u8,
    ) -> Result<BatchItem, BatchFileError> {
        let at = |reason: String| refuse(self.line, reason);
        if let Some(name) = self.fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(at(format!(
                "unknown field {} (known: {})",
                shown(name),
                FIELDS.join(", ")
            )));
        }
        let field = |name: &str| {
            self.fields
                .get(name)
                .ok_or_else(|| at(format!("missing field {name:?}")))
        };
        // The resolver's words may quote the file: escaped like the rest.
        let resolve = |text: &str| {
            account(text).map_err(|e| at(bridgectl_tx::text::printable(&e).into_owned()))
        };
        let from = resolve(field("from")?)?;
        let amount_of = |which: TokenSide| amount(field("amount")?, decimals(which)).map_err(&at);
        let op = match field("op")?.to_ascii_lowercase().as_str() {
            "redeem" => BatchOp::Redeem {
                from,
                amount: amount_of(TokenSide::St)?,
            },
            "swap" => BatchOp::Swap {
                from,
                amount: amount_of(TokenSide::Mt)?,
            },
            "transfer" => {
                let token = match field("token")?.to_ascii_lowercase().as_str() {
                    "mt" => TokenSide::Mt,
                    "st" => TokenSide::St,
                    other => return Err(at(format!("token {}: mt or st", shown(other)))),
                };
                BatchOp::Transfer {
                    token,
                    from,
                    to: resolve(field("to")?)?,
                    amount: amount_of(token)?,
                }
            }
            other => {
                return Err(at(format!("op {}: redeem, transfer or swap", shown(other))));
            }
        };
        Ok(match self.fields.get("id") {
            Some(id) => BatchItem::new(id.clone(), op),
            None => BatchItem {
                id: format!("line-{}", self.line),
                op,
                key: Some(line_key(file, self.line)),
            },
        })
    }
}

/// Every item of `text` ([`read_rows`], then [`BatchRow::item`] for each row, keyed by
/// the SHA-256 of `text`'s bytes: `sha256sum` of the file gives the same).
pub fn read_items(
    text: &str,
    format: BatchFormat,
    account: &dyn Fn(&str) -> Result<Address, String>,
    decimals: &dyn Fn(TokenSide) -> u8,
) -> Result<Vec<BatchItem>, BatchFileError> {
    let file = bridgectl_tx::request::request_hash(text.as_bytes());
    read_rows(text, format)?
        .iter()
        .map(|row| row.item(file, account, decimals))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> Result<Address, String> {
        text.parse().map_err(|_| format!("{text} is no account"))
    }

    fn decimals(which: TokenSide) -> u8 {
        match which {
            TokenSide::Mt => 18,
            TokenSide::St => 6,
        }
    }

    fn items(text: &str, format: BatchFormat) -> Result<Vec<BatchItem>, BatchFileError> {
        read_items(text, format, &address, &decimals)
    }

    const A: &str = "0x8ba1f109551bD432803012645Ac136ddd64DBA72";

    #[test]
    fn both_formats_read_the_same_items() {
        let jsonl = format!(
            "# payouts\n{{\"op\": \"redeem\", \"from\": \"{A}\", \"amount\": \"1.5\", \"id\": \"x\"}}\n\n\
             {{\"op\": \"Transfer\", \"from\": \"{A}\", \"to\": \"{A}\", \"amount\": \"2\", \"token\": \"MT\"}}\n"
        );
        let csv =
            format!("op,from,amount,to,token,id\nredeem,{A},1.5,,,x\n\ntransfer,{A},2,{A},mt,\n");
        let a = items(&jsonl, BatchFormat::Jsonl).expect("jsonl");
        let b = items(&csv, BatchFormat::Csv).expect("csv");
        let without_keys = |items: &[BatchItem]| -> Vec<(String, BatchOp)> {
            items.iter().map(|i| (i.id.clone(), i.op.clone())).collect()
        };
        assert_eq!(without_keys(&a), without_keys(&b));
        assert_eq!(a[0].id, "x");
        assert_eq!(a[1].id, "line-4");
        assert_eq!(
            a[0].op,
            BatchOp::Redeem {
                from: A.parse().expect("address"),
                amount: U256::from(1_500_000u64)
            }
        );
        assert!(
            matches!(a[1].op, BatchOp::Transfer { token: TokenSide::Mt, amount, .. }
            if amount == U256::from(2u64) * U256::from(10u64).pow(U256::from(18u64)))
        );
    }

    /// An item's id is its key; an item without one is keyed by its file's hash and its
    /// line: two equal lines are two items, the same line of another file another item,
    /// the same file read again the same items.
    #[test]
    fn an_item_is_keyed_by_its_id_or_by_its_file_and_line() {
        let line = format!("{{\"op\": \"redeem\", \"from\": \"{A}\", \"amount\": \"1\"}}\n");
        let named = format!(
            "{{\"op\": \"redeem\", \"from\": \"{A}\", \"amount\": \"1\", \"id\": \"p-1\"}}\n"
        );
        let file = format!("{named}{line}{line}");
        let hash = bridgectl_tx::request::request_hash(file.as_bytes());
        let read = items(&file, BatchFormat::Jsonl).expect("items");
        let keys: Vec<&str> = read.iter().map(BatchItem::key).collect();
        assert_eq!(
            keys,
            ["p-1".to_owned(), line_key(hash, 2), line_key(hash, 3)]
        );
        assert_eq!(keys[1], format!("sha256:{}/line-2", hex::encode(hash)));
        let again = items(&file, BatchFormat::Jsonl).expect("again");
        assert_eq!(again, read, "the same file, the same keys");
        let edited = items(&format!("# edited\n{file}"), BatchFormat::Jsonl).expect("edited");
        assert_eq!(edited[0].key(), "p-1", "an id is its key in any file");
        assert!(
            edited[1..].iter().all(|i| !keys.contains(&i.key())),
            "another file's unnamed lines are other items"
        );
        let suffixed: Vec<String> = read
            .into_iter()
            .map(|i| i.suffixed("-again").key().to_owned())
            .collect();
        assert_eq!(suffixed[0], "p-1-again");
        assert_eq!(suffixed[1], format!("{}-again", line_key(hash, 2)));
    }

    #[test]
    fn what_could_be_read_two_ways_is_refused_with_its_line() {
        let cases: &[(&str, BatchFormat, &str)] = &[
            (
                "{\"op\": \"redeem\", \"amount\": \"1\", \"amount\": \"2\"}",
                BatchFormat::Jsonl,
                "line 1: not a JSON object: duplicate key \"amount\"",
            ),
            (
                "{\"op\": \"redeem\", \"amount\": 1.5}",
                BatchFormat::Jsonl,
                "line 1: field \"amount\" must be a string",
            ),
            ("[1]", BatchFormat::Jsonl, "line 1: not a JSON object"),
            (
                "op,op\nredeem,swap",
                BatchFormat::Csv,
                "line 1: column \"op\" is named twice",
            ),
            (
                "op,amount\n\"redeem\",1",
                BatchFormat::Csv,
                "line 2: quoted CSV fields",
            ),
            (
                "op,amount\nredeem",
                BatchFormat::Csv,
                "line 2: 1 fields, the header has 2",
            ),
            ("# nothing\n\n", BatchFormat::Jsonl, "no items"),
            ("op\n", BatchFormat::Csv, "no items"),
        ];
        for (text, format, want) in cases {
            let err = read_rows(text, *format).expect_err(text).to_string();
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
        let row = |fields: &str| format!("{{\"from\": \"{A}\", {fields}}}");
        let refused: &[(String, &str)] = &[
            (row("\"op\": \"redeem\""), "missing field \"amount\""),
            (
                row("\"op\": \"redeem\", \"amount\": \"0\""),
                "must be more than zero",
            ),
            (
                row("\"op\": \"redeem\", \"amount\": \"0.0000001\""),
                "amount \"0.0000001\"",
            ),
            (
                row("\"op\": \"burn\", \"amount\": \"1\""),
                "op \"burn\": redeem, transfer or swap",
            ),
            (
                row("\"op\": \"transfer\", \"amount\": \"1\", \"token\": \"xt\", \"to\": \"x\""),
                "token \"xt\"",
            ),
            (
                row("\"op\": \"redeem\", \"amount\": \"1\", \"memo\": \"\\u001b[2J\""),
                "unknown field \"memo\"",
            ),
            (
                "{\"op\": \"redeem\", \"from\": \"alice\\u001b[31m\", \"amount\": \"1\"}".into(),
                "alice\\u{1b}[31m is no account",
            ),
        ];
        for (text, want) in refused {
            let err = items(text, BatchFormat::Jsonl).expect_err(text).to_string();
            assert!(
                err.starts_with("line 1: ") && err.contains(want),
                "{text}: {err}"
            );
            assert!(!err.contains('\u{1b}'), "unescaped: {err:?}");
        }
    }
}
