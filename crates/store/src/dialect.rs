//! One SQL text for both backends. Statements are written in the dialect both SQLite and
//! PostgreSQL understand (`ON CONFLICT ... DO NOTHING`, `CAST`, `COALESCE`, `EXISTS`),
//! with SQLite's numbered parameters (`?1`); this module turns such a statement into
//! PostgreSQL's once per statement (it is cached with its prepared form). What it
//! rewrites is what has no common spelling:
//!
//! | written (SQLite) | PostgreSQL |
//! |---|---|
//! | `?1`, `?` | `$1`, `$n` |
//! | `x = ?1 COLLATE NOCASE` | `x = $1` (PostgreSQL stores the one spelling the program writes) |
//! | `CAST(x AS INTEGER)` | `CAST(x AS BIGINT)` |
//! | `LIKE` | `ILIKE` (SQLite's `LIKE` ignores ASCII case) |
//! | `json_each(?3)` (its `value` column) | `json_array_elements_text(CAST($3 AS json)) AS value` |
//! | `json_extract(col, '$.name')` | `(CAST(col AS jsonb) ->> 'name')` (the value as text) |
//! | `a IS NOT b` | `a IS DISTINCT FROM b` |
//!
//! Text inside quotes is never rewritten.

/// `sql` (written for SQLite) as PostgreSQL reads it.
pub(crate) fn to_postgres(sql: &str) -> String {
    let numbered = placeholders(sql);
    let mut out = String::with_capacity(numbered.len() + 16);
    for (quoted, part) in split_quotes(&numbered) {
        if quoted {
            out.push_str(part);
        } else {
            out.push_str(&rewrite_words(part));
        }
    }
    rewrite_calls(&out)
}

/// `?N` as `$N` and a bare `?` as the next number, outside quotes.
fn placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut next = 1usize;
    let mut chars = sql.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
            out.push(c);
            continue;
        }
        if c != '?' || quoted {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        if digits.is_empty() {
            out.push_str(&format!("${next}"));
            next += 1;
        } else {
            next = digits.parse::<usize>().map_or(next, |n| n + 1);
            out.push('$');
            out.push_str(&digits);
        }
    }
    out
}

/// The parts of `sql` with whether each is a quoted string (quotes included).
fn split_quotes(sql: &str) -> Vec<(bool, &str)> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    for (i, c) in sql.char_indices() {
        if c != '\'' {
            continue;
        }
        if quoted {
            parts.push((true, &sql[start..=i]));
            start = i + 1;
        } else {
            parts.push((false, &sql[start..i]));
            start = i;
        }
        quoted = !quoted;
    }
    parts.push((quoted, &sql[start..]));
    parts
}

fn rewrite_words(part: &str) -> String {
    part.replace(" COLLATE NOCASE", "")
        .replace(" AS INTEGER)", " AS BIGINT)")
        .replace(" LIKE ", " ILIKE ")
        .replace(" IS NOT NULL", " IS NOT_NULL_KEEP")
        .replace(" IS NOT ", " IS DISTINCT FROM ")
        .replace(" IS NOT_NULL_KEEP", " IS NOT NULL")
}

/// The function calls without a common spelling (see the module's table).
fn rewrite_calls(sql: &str) -> String {
    let sql = replace_call(sql, "json_each(", |arg| {
        format!("json_array_elements_text(CAST({arg} AS json)) AS value")
    });
    replace_call(&sql, "json_extract(", |args| match args.split_once(",") {
        Some((column, path)) => {
            let name = path.trim().trim_matches('\'').trim_start_matches("$.");
            format!("(CAST({} AS jsonb) ->> '{name}')", column.trim())
        }
        None => format!("json_extract({args})"),
    })
}

/// Each call `name(args)` in `sql` (its parentheses balanced, quotes respected)
/// replaced by `with(args)`.
fn replace_call(sql: &str, name: &str, with: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(at) = rest.find(name) {
        out.push_str(&rest[..at]);
        let args_start = at + name.len();
        let mut depth = 1usize;
        let mut quoted = false;
        let mut end = None;
        for (i, c) in rest[args_start..].char_indices() {
            match c {
                '\'' => quoted = !quoted,
                '(' if !quoted => depth += 1,
                ')' if !quoted => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(args_start + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            out.push_str(&rest[at..]);
            return out;
        };
        out.push_str(&with(&rest[args_start..end]));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_numbered_and_quotes_left_alone() {
        assert_eq!(
            to_postgres("SELECT 1 FROM t WHERE a = ?2 AND b = '?' AND c = ?1"),
            "SELECT 1 FROM t WHERE a = $2 AND b = '?' AND c = $1"
        );
        assert_eq!(to_postgres("VALUES (?, ?, ?)"), "VALUES ($1, $2, $3)");
    }

    #[test]
    fn each_rewrite_of_the_table() {
        assert_eq!(
            to_postgres("WHERE from_addr = ?1 COLLATE NOCASE AND CAST(nonce AS INTEGER) = ?3"),
            "WHERE from_addr = $1 AND CAST(nonce AS BIGINT) = $3"
        );
        assert_eq!(
            to_postgres("WHERE id LIKE ?1 || '%' AND x LIKE 'A LIKE B'"),
            "WHERE id ILIKE $1 || '%' AND x ILIKE 'A LIKE B'"
        );
        assert_eq!(
            to_postgres("tx_id NOT IN (SELECT value FROM json_each(?3))"),
            "tx_id NOT IN (SELECT value FROM json_array_elements_text(CAST($3 AS json)) AS value)"
        );
        assert_eq!(
            to_postgres(
                "WHERE json_extract(body, '$.key') = ?1 AND k IS NOT json_extract(body, '$.chainId')"
            ),
            "WHERE (CAST(body AS jsonb) ->> 'key') = $1 AND k IS DISTINCT FROM (CAST(body AS jsonb) ->> 'chainId')"
        );
        assert_eq!(to_postgres("WHERE a IS NOT NULL"), "WHERE a IS NOT NULL");
    }
}
