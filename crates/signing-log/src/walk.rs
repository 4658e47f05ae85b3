//! Reading the log back, every entry checked on the way: whether it reaches its kept
//! checkpoint, a key's spending window, the entries at a nonce, a chain's resets and
//! block 0.

use alloy_primitives::{Address, B256, U256};
use bridgectl_tx::signing_log::{
    AtNonce, BadEntry, Carried, ChainCheck, Entry, EntryBody, Watermark, Watermarks, WindowQuery,
};
use rusqlite::{Connection, OptionalExtension, params};

use crate::Error;

use crate::store::{SigningLogDb, body_text, head, row_entry};

/// The entries whose bodies say key `?1` signed nonce `?3` on chain `?2`: one lookup in
/// `entries_body_nonce`, whatever the log's length.
pub(crate) const NONCE_ENTRIES_SQL: &str = "SELECT seq, body, hash, sig FROM entries \
     WHERE json_extract(body, '$.key') = ?1 AND json_extract(body, '$.chainId') = ?2 \
       AND json_extract(body, '$.nonce') = ?3 ORDER BY seq";

/// What a walk back from the head found.
pub(crate) struct Walked {
    /// The window's total for the query.
    pub(crate) total: U256,
    /// The window's start.
    pub(crate) since: u64,
    /// The signing key's newest entry's time.
    pub(crate) newest_own: Option<u64>,
}

impl SigningLogDb {
    /// Checks that the log reaches the kept checkpoint: entry `kept.count` is there
    /// with the kept hash. Returns the acknowledged count.
    pub(crate) fn reaches_kept(&self, c: &Connection) -> Result<u64, Error> {
        let Some(kept) = self.kept()? else {
            return Ok(0);
        };
        if kept.count == 0 {
            return Ok(kept.acknowledged);
        }
        if self.hash_at(c, kept.count)? != Some(kept.head) {
            return Err(Error::RolledBack {
                path: self.path.clone(),
                kept: kept.checkpoint(),
                found: head(c).map_err(self.sql())?.count,
            });
        }
        Ok(kept.acknowledged)
    }

    /// The hash of entry `seq`, if the log has it. (Cached: a signature checks the log
    /// twice, before it is made and again under the append's lock, and a batch once per
    /// item.)
    pub(crate) fn hash_at(&self, c: &Connection, seq: u64) -> Result<Option<B256>, Error> {
        let hash: Option<Vec<u8>> = c
            .prepare_cached("SELECT hash FROM entries WHERE seq = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([i64::try_from(seq).unwrap_or(i64::MAX)], |r| r.get(0))
                    .optional()
            })
            .map_err(self.sql())?;
        Ok(hash.and_then(|h| B256::try_from(h.as_slice()).ok()))
    }

    /// Walks back from the head, checking every entry on the way (hash, link to the
    /// next, signature by its key, a key of the keystore unless acknowledged), until
    /// `key`'s newest entry (no `window`) or `key`'s first entry before the window.
    /// Only `key`'s own entries decide where the window starts and where the walk
    /// stops: a stranger's entry, whatever time it claims, moves neither.
    pub(crate) fn walk(
        &self,
        c: &Connection,
        key: Address,
        window: Option<&WindowQuery>,
        acknowledged: u64,
    ) -> Result<Walked, Error> {
        let broken = |bad: BadEntry| Error::Broken {
            path: self.path.clone(),
            bad,
        };
        let mut stmt = c
            .prepare_cached("SELECT seq, body, hash, sig FROM entries ORDER BY seq DESC")
            .map_err(self.sql())?;
        let mut rows = stmt.query([]).map_err(self.sql())?;
        let mut walked = Walked {
            total: U256::ZERO,
            since: window.map_or(0, |q| q.now.saturating_sub(q.per)),
            newest_own: None,
        };
        // The entry after the current one: its seq and the `prev` it names.
        let mut newer: Option<(u64, B256)> = None;
        let mut stopped = false;
        // Spending acknowledgements carried over from entries the log lost: `key`'s,
        // counted against the window once its start is known.
        let mut carried: Vec<Carried> = Vec::new();
        while let Some(row) = rows.next().map_err(self.sql())? {
            let entry = row_entry(row).map_err(self.sql())?;
            if let Some((seq, prev)) = newer
                && (entry.seq + 1 != seq || entry.hash != prev)
            {
                return Err(broken(BadEntry {
                    seq,
                    reason: format!(
                        "it does not follow entry {} (prev {prev}, found entry {} with hash \
                         {}): entries were deleted, inserted or reordered",
                        seq - 1,
                        entry.seq,
                        entry.hash
                    ),
                }));
            }
            let body = self.checked_body(&entry).map_err(broken)?;
            if let Some(known) = &self.known_keys
                && !known.contains(&body.key)
                && entry.seq > acknowledged
            {
                return Err(Error::Foreign {
                    path: self.path.clone(),
                    seq: entry.seq,
                    key: body.key,
                });
            }
            newer = Some((entry.seq, body.prev));
            carried.extend(body.carried.iter().filter(|c| c.key == key).cloned());
            if body.key == key {
                if walked.newest_own.is_none() {
                    walked.newest_own = Some(body.time);
                    if let Some(q) = window {
                        // Time does not go backwards for a window: the key's newest
                        // entry is a floor under the clock.
                        walked.since = q.now.max(body.time).saturating_sub(q.per);
                    }
                }
                let Some(q) = window else {
                    stopped = true;
                    break;
                };
                if body.time < walked.since {
                    stopped = true;
                    break;
                }
                if q.counts(&body) {
                    walked.total = walked.total.saturating_add(body.amount.unwrap_or_default());
                }
            }
        }
        // What the log lost counts as the entries did: a floor under the clock too.
        if let Some(newest) = carried.iter().map(|c| c.time).max()
            && walked.newest_own.is_none_or(|t| t < newest)
        {
            walked.newest_own = Some(newest);
            if let Some(q) = window {
                walked.since = walked.since.max(q.now.max(newest).saturating_sub(q.per));
            }
        }
        if let Some(q) = window {
            for c in &carried {
                if c.chain_id == q.chain_id && c.contract == q.contract && c.time >= walked.since {
                    walked.total = walked.total.saturating_add(c.amount);
                }
            }
        }
        // Walked to the bottom (not stopped by the key's own entry): it must be entry 1.
        if !stopped
            && let Some((seq, prev)) = newer
            && (seq != 1 || prev != B256::ZERO)
        {
            return Err(broken(BadEntry {
                seq: 1,
                reason: format!(
                    "missing: the log starts at entry {seq} (entries before it were deleted)"
                ),
            }));
        }
        Ok(walked)
    }

    /// An entry's body, checked on its own (hash, signature by its key, its stated
    /// position); entries checked before in this process skip the signature.
    pub(crate) fn checked_body(&self, entry: &Entry) -> Result<EntryBody, BadEntry> {
        let cached = {
            let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.contains(&entry.hash)
        };
        let body = if cached && bridgectl_tx::signing_log::entry_hash(&entry.body) == entry.hash {
            serde_json::from_str::<EntryBody>(&entry.body).map_err(|e| BadEntry {
                seq: entry.seq,
                reason: format!("its body is not an entry of version 1: {e}"),
            })?
        } else {
            let body = ChainCheck::anchor(entry)?;
            self.seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(entry.hash);
            body
        };
        if body.seq != entry.seq {
            return Err(BadEntry {
                seq: entry.seq,
                reason: format!(
                    "its body says it is entry {}: entries were reordered",
                    body.seq
                ),
            });
        }
        Ok(body)
    }

    /// What the log knows of `key`'s `nonce` on `chain_id`
    /// ([`bridgectl_tx::SigningLog::signed_at_nonce`]): the checked bodies of its entries
    /// there since the key's last reset of the chain, found through the index of what
    /// the bodies say (key, chain, nonce), a row whose body does not hold refusing like
    /// any broken entry; and the watermark that holds the nonce, if one does.
    pub(crate) fn signed_at_nonce_in(
        &self,
        c: &Connection,
        key: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<AtNonce, Error> {
        let found = self.nonce_entries(c, key, chain_id, nonce)?;
        // Signatures made before the key recorded a reset of this chain were for the old
        // chain: they hold no nonce on the new one.
        let reset = self.last_chain_reset_in(c, key, chain_id)?;
        let entries = found.into_iter().filter(|b| b.seq > reset).collect();
        let watermark = self
            .watermark_in(c, key, chain_id, reset)?
            .filter(|w| w.holds(nonce));
        Ok(AtNonce { entries, watermark })
    }

    /// The checked bodies of the entries whose bodies say `key` signed `nonce` on
    /// `chain_id`, oldest first.
    pub(crate) fn nonce_entries(
        &self,
        c: &Connection,
        key: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<Vec<EntryBody>, Error> {
        // SQLite's JSON numbers stop at i64: a larger chain or nonce is looked for among
        // all the key's entries (the checks below keep the ones at this nonce).
        let (sql, exact) = match (i64::try_from(chain_id), i64::try_from(nonce)) {
            (Ok(chain), Ok(nonce)) => (NONCE_ENTRIES_SQL, Some((chain, nonce))),
            _ => (
                "SELECT seq, body, hash, sig FROM entries \
                 WHERE json_extract(body, '$.key') = ?1 ORDER BY seq",
                None,
            ),
        };
        let mut stmt = c.prepare_cached(sql).map_err(self.sql())?;
        let mut rows = match exact {
            Some((chain, nonce)) => stmt.query(params![body_text(key), chain, nonce]),
            None => stmt.query(params![body_text(key)]),
        }
        .map_err(self.sql())?;
        let mut found = Vec::new();
        while let Some(row) = rows.next().map_err(self.sql())? {
            let entry = row_entry(row).map_err(self.sql())?;
            let body = self.checked_or_broken(&entry)?;
            if body.key == key
                && body.chain_id == chain_id
                && body.nonce == nonce
                && body.signs_transaction()
            {
                found.push(body);
            }
        }
        Ok(found)
    }

    /// `key`'s watermark on `chain_id` after its reset entry `reset` (0: none): the
    /// kept checkpoint's, when it was written after that reset, and every watermark the
    /// log's acknowledgements after it carry (checked like any entry), merged.
    pub(crate) fn watermark_in(
        &self,
        c: &Connection,
        key: Address,
        chain_id: u64,
        reset: u64,
    ) -> Result<Option<Watermark>, Error> {
        let mut marks = Watermarks::default();
        if let Some(kept) = self.kept()?
            && kept.count >= reset
            && let Some(w) = kept
                .watermarks
                .iter()
                .find(|w| w.key == key && w.chain_id == chain_id)
        {
            marks.merge(w);
        }
        let mut stmt = c
            .prepare_cached(
                "SELECT seq, body, hash, sig FROM entries \
                 WHERE json_extract(body, '$.watermarks') IS NOT NULL AND seq > ?1 ORDER BY seq",
            )
            .map_err(self.sql())?;
        let mut rows = stmt
            .query([i64::try_from(reset).unwrap_or(i64::MAX)])
            .map_err(self.sql())?;
        while let Some(row) = rows.next().map_err(self.sql())? {
            let body = self.checked_or_broken(&row_entry(row).map_err(self.sql())?)?;
            for w in body
                .watermarks
                .iter()
                .filter(|w| w.key == key && w.chain_id == chain_id)
            {
                marks.merge(w);
            }
        }
        Ok(marks.get(key, chain_id).cloned())
    }

    /// [`Self::checked_body`], a bad entry as the refusal [`Error::Broken`].
    pub(crate) fn checked_or_broken(&self, entry: &Entry) -> Result<EntryBody, Error> {
        self.checked_body(entry).map_err(|bad| Error::Broken {
            path: self.path.clone(),
            bad,
        })
    }

    /// The seq of `key`'s newest chain-reset entry for `chain_id` (checked like any
    /// entry: only the key can write one), 0 when it has none.
    pub(crate) fn last_chain_reset_in(
        &self,
        c: &Connection,
        key: Address,
        chain_id: u64,
    ) -> Result<u64, Error> {
        // (A chain id past i64, which SQLite's JSON numbers do not hold, finds no reset:
        // its entries all hold their nonces, stricter, never looser. EIP-155 keeps real
        // chain ids far below it.)
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        let mut stmt = c
            .prepare_cached(
                "SELECT seq, body, hash, sig FROM entries \
                 WHERE json_extract(body, '$.key') = ?1 \
                   AND json_extract(body, '$.chainId') = ?2 \
                   AND json_extract(body, '$.chainReset') IS NOT NULL ORDER BY seq DESC",
            )
            .map_err(self.sql())?;
        let mut rows = stmt
            .query(params![body_text(key), chain])
            .map_err(self.sql())?;
        while let Some(row) = rows.next().map_err(self.sql())? {
            let entry = row_entry(row).map_err(self.sql())?;
            let body = self.checked_or_broken(&entry)?;
            if body.key == key && body.chain_id == chain_id && body.chain_reset.is_some() {
                return Ok(body.seq);
            }
        }
        Ok(0)
    }

    /// The block 0 the newest entry that names one records for `chain_id` (a signature's
    /// `genesis`, a reset's `chainReset`), its body checked like any entry's.
    pub(crate) fn chain_genesis_in(
        &self,
        c: &Connection,
        chain_id: u64,
    ) -> Result<Option<B256>, Error> {
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        let mut stmt = c
            .prepare_cached(
                "SELECT seq, body, hash, sig FROM entries \
                 WHERE json_extract(body, '$.chainId') = ?1 \
                 AND (json_extract(body, '$.genesis') IS NOT NULL \
                      OR json_extract(body, '$.chainReset') IS NOT NULL) \
                 ORDER BY seq DESC",
            )
            .map_err(self.sql())?;
        let mut rows = stmt.query(params![chain]).map_err(self.sql())?;
        while let Some(row) = rows.next().map_err(self.sql())? {
            let entry = row_entry(row).map_err(self.sql())?;
            let body = self.checked_or_broken(&entry)?;
            if body.chain_id != chain_id {
                continue;
            }
            if let Some(genesis) = body.chain_reset.or(body.genesis) {
                return Ok(Some(genesis));
            }
        }
        Ok(None)
    }

    pub(crate) fn window_in(
        &self,
        c: &Connection,
        key: Address,
        query: Option<&WindowQuery>,
    ) -> Result<Walked, Error> {
        self.no_edited_row(c)?;
        let acknowledged = self.reaches_kept(c)?;
        self.walk(c, key, query, acknowledged)
    }
}
