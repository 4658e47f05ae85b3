//! Batch files: the JSONL and CSV an operator writes, read into items.

use alloy_primitives::Address;
use bridgectl_flow::batch_file::{BatchFormat, FIELDS, read_rows};
use bridgectl_flow::{BatchOp, TokenSide};
use bridgectl_tx::amount::{format_units, parse_units};

/// The decimals the target reads amounts with: MT like ether, ST like a stablecoin.
fn decimals(which: TokenSide) -> u8 {
    match which {
        TokenSide::Mt => 18,
        TokenSide::St => 6,
    }
}

/// Accounts the target knows: a plain address, or `k0`..`k9` (key labels).
fn account(text: &str) -> Result<Address, String> {
    if let Some(n) = text.strip_prefix('k').and_then(|d| d.parse::<u8>().ok())
        && n < 10
    {
        return Ok(Address::with_last_byte(n + 1));
    }
    text.parse().map_err(|_| format!("{text} is no account"))
}

/// Input: one byte choosing the format (even: JSONL, odd: CSV), then the file.
///
/// Properties: reading never panics; rows come in file order, each on a line of the
/// file, and only with fields that were in it; no error message carries a control
/// character (the file's text is escaped); an accepted item has an amount above zero
/// that is exactly the one written (formatting it back with the token's decimals reads
/// the same value), its op is the one named, and its id is the file's or `line-N`.
pub fn batch_file(data: &[u8]) {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let format = if choice % 2 == 0 {
        BatchFormat::Jsonl
    } else {
        BatchFormat::Csv
    };
    let lines = text.lines().count();
    let rows = match read_rows(text, format) {
        Ok(rows) => rows,
        Err(e) => {
            assert!(e.line <= lines, "error on line {} of {lines}", e.line);
            assert_clean(&e.to_string());
            return;
        }
    };
    assert!(!rows.is_empty());
    for pair in rows.windows(2) {
        assert!(pair[0].line < pair[1].line, "rows out of order");
    }
    let file = bridgectl_tx::request::request_hash(text.as_bytes());
    for row in &rows {
        assert!(
            row.line >= 1 && row.line <= lines,
            "line {} of {lines}",
            row.line
        );
        let item = match row.item(file, &account, &decimals) {
            Ok(item) => item,
            Err(e) => {
                assert_eq!(e.line, row.line);
                assert_clean(&e.to_string());
                continue;
            }
        };
        assert!(row.fields.keys().all(|k| FIELDS.contains(&k.as_str())));
        let written = |name: &str| row.fields.get(name).map(|v| v.to_ascii_lowercase());
        let (op, which, amount) = match item.op {
            BatchOp::Redeem { amount, .. } => ("redeem", TokenSide::St, amount),
            BatchOp::Swap { amount, .. } => ("swap", TokenSide::Mt, amount),
            BatchOp::Transfer { token, amount, .. } => ("transfer", token, amount),
        };
        assert_eq!(written("op").as_deref(), Some(op));
        assert!(!amount.is_zero(), "a zero amount accepted");
        let d = decimals(which);
        let shown = format_units(amount, d).expect("an accepted amount formats");
        assert_eq!(parse_units(&shown, d).ok(), Some(amount), "{shown}");
        let from_file = row.fields.get("amount").expect("an amount was written");
        assert_eq!(parse_units(from_file, d).ok(), Some(amount), "{from_file}");
        match row.fields.get("id") {
            Some(id) => assert_eq!((&item.id, item.key()), (id, id.as_str())),
            None => {
                assert_eq!(item.id, format!("line-{}", row.line));
                assert_eq!(
                    item.key(),
                    bridgectl_flow::batch_file::line_key(file, row.line)
                );
            }
        }
    }
}

fn assert_clean(message: &str) {
    assert!(
        !message.chars().any(|c| c.is_control()),
        "a control character in {message:?}"
    );
}
