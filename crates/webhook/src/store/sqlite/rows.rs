//! Reading rows of the event store: events, what was kept, and the SQL pieces the
//! writer and the readers share.

use rusqlite::Connection;

use crate::store::{Kept, StoredEvent, Verification};

/// What the store already keeps of strangers' bodies, so the limits hold across restarts.
pub(super) fn kept_so_far(conn: &Connection) -> rusqlite::Result<Kept> {
    let two = |sql: &str| -> rusqlite::Result<(u64, u64)> {
        conn.query_row(sql, [], |r| {
            Ok((
                u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
                u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
            ))
        })
    };
    let (unverified_rows, unverified_bytes) = two(&format!(
        "SELECT count(*), coalesce(sum(length(body)), 0) FROM events
         WHERE verified = 0 AND length(body) > 0 AND verification <> '{}'",
        Verification::NoKey.as_str()
    ))?;
    let (no_key_rows, no_key_bytes) = two(&format!(
        "SELECT count(*), coalesce(sum(length(body)), 0) FROM events
         WHERE verified = 0 AND length(body) > 0 AND verification = '{}'",
        Verification::NoKey.as_str()
    ))?;
    let (quarantine_rows, quarantine_bytes) = two(
        "SELECT count(*), coalesce(sum(length(body)), 0) FROM quarantine WHERE length(body) > 0",
    )?;
    Ok(Kept {
        unverified_rows,
        unverified_bytes,
        quarantine_rows,
        quarantine_bytes,
        no_key_rows,
        no_key_bytes,
    })
}

pub(super) fn query<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map(params, row)?;
    rows.collect()
}

/// `handed_off` values that lack one of `sinks`, as an SQL list: `handed_off & sinks !=
/// sinks` spelled so the index serves it.
pub(super) fn missing_bits(sinks: u8) -> String {
    (0u8..4)
        .filter(|h| h & sinks != sinks)
        .map(|h| h.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) const EVENT_COLUMNS: &str = "id, received_at_ms, subscription_id, sequence_number, event_type, \
    verified, verification, handed_off, attempts, last_error, signature, body_len, body";

/// The stored length, or the body's own for rows written before `body_len` existed.
pub(super) fn known_len(stored: i64, body: &[u8]) -> i64 {
    if stored >= 0 {
        stored
    } else {
        i64::try_from(body.len()).unwrap_or(i64::MAX)
    }
}

pub(super) fn event_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredEvent> {
    let body: Vec<u8> = r.get(12)?;
    Ok(StoredEvent {
        id: r.get(0)?,
        received_at_ms: r.get(1)?,
        subscription_id: r.get(2)?,
        sequence_number: r.get(3)?,
        event_type: r.get(4)?,
        verified: r.get::<_, i64>(5)? == 1,
        verification: r.get(6)?,
        handed_off: u8::try_from(r.get::<_, i64>(7)?).unwrap_or(0),
        attempts: r.get(8)?,
        last_error: r.get(9)?,
        signature: r.get(10)?,
        body_len: known_len(r.get(11)?, &body),
        body,
    })
}

pub(super) fn limit_i64(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}
