//! Reading the log back, every entry checked on the way: whether it reaches its kept
//! checkpoint, a key's spending window, the entries at a nonce, a chain's resets and
//! block 0.

use alloy_primitives::{Address, B256, U256};
use bridgectl_store::Conn;
use bridgectl_tx::signing_log::{
    AtNonce, BadEntry, Carried, ChainCheck, Entry, EntryBody, Running, Watermark, Watermarks,
    WindowQuery,
};

use crate::Error;

use crate::store::{FROM_HEAD, SigningLogDb, body_text, head, paged, row_entry, scan};

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
    /// The signing key's newest entry's time (or the newest spending carried for it,
    /// if later).
    pub(crate) newest_own: Option<u64>,
    /// The signing key's newest entry's running totals, checked against the entry before
    /// it: what the key's next entry carries on.
    pub(crate) running: Option<Running>,
}

/// The key `?1`'s newest entry before entry `?2`, by what the bodies say: one lookup in
/// `entries_body_key`.
pub(crate) const OWN_BEFORE_SQL: &str = "SELECT seq, body, hash, sig FROM entries \
     WHERE json_extract(body, '$.key') = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT 1";

/// The key `?1`'s oldest entry after entry `?2`: one lookup in `entries_body_key`.
pub(crate) const OWN_AFTER_SQL: &str = "SELECT seq, body, hash, sig FROM entries \
     WHERE json_extract(body, '$.key') = ?1 AND seq > ?2 ORDER BY seq LIMIT 1";

/// The key `?1`'s newest entry signed before time `?2` (its last before a window that
/// starts then): one lookup in `entries_body_key_time`. A key's entries are never
/// older than the one before them, so it is also the newest by position.
pub(crate) const OWN_BEFORE_TIME_SQL: &str = "SELECT seq, body, hash, sig FROM entries \
     WHERE json_extract(body, '$.key') = ?1 AND CAST(json_extract(body, '$.time') AS INTEGER) < ?2 \
     ORDER BY CAST(json_extract(body, '$.time') AS INTEGER) DESC, seq DESC LIMIT 1";

/// The acknowledgements that carry spending over, after entry `?1`: a lookup in
/// `entries_carried` (few rows: one per acknowledgement of a log that lost entries, so
/// read whole, not in pages). PostgreSQL takes this lookup, as the others of few rows,
/// through its partial index only when it has a parameter and no `LIMIT`: without the
/// parameter each execution took milliseconds, and with a `LIMIT` it walked the log
/// backwards by `seq`, reading every body.
pub(crate) const CARRIED_SQL: &str = "SELECT seq, body, hash, sig FROM entries \
     WHERE json_extract(body, '$.carried') IS NOT NULL AND seq > ?1 ORDER BY seq";

impl SigningLogDb {
    /// Checks that the log reaches the kept checkpoint: entry `kept.count` is there
    /// with the kept hash. Returns the acknowledged count.
    pub(crate) fn reaches_kept(&self, c: &mut dyn Conn) -> Result<u64, Error> {
        let Some(kept) = self.kept()? else {
            return Ok(0);
        };
        if kept.count == 0 {
            return Ok(kept.acknowledged);
        }
        if self.hash_at(c, kept.count)? != Some(kept.head) {
            return Err(Error::RolledBack {
                log: self.log.clone(),
                checkpoint: self.checkpoint_path(),
                kept: kept.checkpoint(),
                found: head(c)?.count,
            });
        }
        Ok(kept.acknowledged)
    }

    /// The hash of entry `seq`, if the log has it. (Cached: a signature checks the log
    /// twice, before it is made and again under the append's lock, and a batch once per
    /// item.)
    pub(crate) fn hash_at(&self, c: &mut dyn Conn, seq: u64) -> Result<Option<B256>, Error> {
        let hash: Option<Vec<u8>> = c.query_opt(
            "SELECT hash FROM entries WHERE seq = ?1",
            &[&i64::try_from(seq).unwrap_or(i64::MAX)],
            |r| r.get(0),
        )?;
        Ok(hash.and_then(|h| B256::try_from(h.as_slice()).ok()))
    }

    /// One of `key`'s entries found through an index of what the bodies say
    /// (`sql` with `key` and `arg`), checked on its own (hash, signature, position);
    /// `None` when there is none.
    fn own_entry(
        &self,
        c: &mut dyn Conn,
        sql: &str,
        key: Address,
        arg: u64,
    ) -> Result<Option<EntryBody>, Error> {
        let entry = c.query_opt(
            sql,
            &[&body_text(key), &i64::try_from(arg).unwrap_or(i64::MAX)],
            row_entry,
        )?;
        let Some(entry) = entry else { return Ok(None) };
        let body = self.checked_or_broken(&entry)?;
        if body.key != key {
            return Err(self.broken(body.seq, "its body names another key than its index".into()));
        }
        Ok(Some(body))
    }

    /// `key`'s newest entry before entry `before`, checked on its own.
    pub(crate) fn own_newest(
        &self,
        c: &mut dyn Conn,
        key: Address,
        before: u64,
    ) -> Result<Option<EntryBody>, Error> {
        self.own_entry(c, OWN_BEFORE_SQL, key, before)
    }

    fn broken(&self, seq: u64, reason: String) -> Error {
        Error::Broken {
            log: self.log.clone(),
            bad: BadEntry { seq, reason },
        }
    }

    /// Refuses unless `body`'s running totals are those of the key's entry before it
    /// (`before`, found by the body index) carried on by `body`'s own amount: a summary
    /// that lies about what the key spent, or a key's entry removed from between the
    /// two, is a log that does not hold. An entry without totals is not checked (a
    /// window that reaches it is added up entry by entry).
    fn running_follows(
        &self,
        c: &mut dyn Conn,
        body: &EntryBody,
        before: Option<&EntryBody>,
    ) -> Result<(), Error> {
        let Some(running) = &body.running else {
            return Ok(());
        };
        let fetched;
        let before = match before {
            Some(b) => Some(b),
            None if running.from < body.seq => {
                fetched = self.own_entry(c, OWN_BEFORE_SQL, body.key, body.seq)?;
                fetched.as_ref()
            }
            None => None,
        };
        let prior = if running.from == body.seq {
            None
        } else {
            match before {
                Some(b) if b.running.as_ref().is_some_and(|r| r.from == running.from) => {
                    b.running.as_ref()
                }
                _ => {
                    return Err(self.broken(
                        body.seq,
                        format!(
                            "its running totals continue a run from entry {} that the key's \
                             entry before it ({}) does not carry: an entry of the key was \
                             removed, or the totals were made up",
                            running.from,
                            before.map_or_else(|| "none".into(), |b| format!("entry {}", b.seq))
                        ),
                    ));
                }
            }
        };
        let expected = Running::after(prior, body);
        if &expected != running {
            return Err(self.broken(
                body.seq,
                format!(
                    "its running totals ({}) are not those of the key's entry before it \
                     ({}) plus its own amount ({}): an entry of the key was removed between \
                     them, or the totals lie about what the key spent",
                    sums(running),
                    before.map_or_else(|| "none".into(), |b| format!("entry {}", b.seq)),
                    sums(&expected)
                ),
            ));
        }
        Ok(())
    }

    /// The spending acknowledgements carried over from entries the log lost, `key`'s
    /// (each acknowledgement checked like any entry).
    fn carried_for(&self, c: &mut dyn Conn, key: Address) -> Result<Vec<Carried>, Error> {
        let mut carried = Vec::new();
        for row in c.query(CARRIED_SQL, &[&0i64])? {
            let body = self.checked_or_broken(&row_entry(&row)?)?;
            carried.extend(body.carried.into_iter().filter(|c| c.key == key));
        }
        Ok(carried)
    }

    /// Walks back from the head, checking every entry on the way (hash, link to the
    /// next, signature by its key, a key of the keystore unless acknowledged), to
    /// `key`'s newest entry: what was appended since the key last signed. The window
    /// (if asked) is then read from the running totals `key`'s entries carry: those of
    /// its newest entry less those of its last entry before the window, each checked
    /// against the key's entry next to it, so the cost does not grow with the window.
    /// Where the totals do not reach back far enough (entries written before they were
    /// kept), the walk goes on through the window, adding up every entry as it checks
    /// it. Only `key`'s own entries decide where the window starts and where the walk
    /// stops: a stranger's entry, whatever time it claims, moves neither.
    pub(crate) fn walk(
        &self,
        c: &mut dyn Conn,
        key: Address,
        window: Option<&WindowQuery>,
        acknowledged: u64,
    ) -> Result<Walked, Error> {
        let broken = |bad: BadEntry| Error::Broken {
            log: self.log.clone(),
            bad,
        };
        // Spending acknowledgements carried over from entries the log lost: `key`'s,
        // counted as the entries were, and a floor under the clock too.
        let carried = self.carried_for(c, key)?;
        let newest_carried = carried.iter().map(|c| c.time).max();
        let start = |time: u64| {
            window.map_or(0, |q| {
                q.now
                    .max(time)
                    .max(newest_carried.unwrap_or(0))
                    .saturating_sub(q.per)
            })
        };
        let mut walked = Walked {
            total: U256::ZERO,
            since: start(0),
            newest_own: newest_carried,
            running: None,
        };
        // The entry after the current one: its seq and the `prev` it names.
        let mut newer: Option<(u64, B256)> = None;
        let mut stopped = false;
        let mut own_seen = false;
        // Read from the head down, a page at a time: the first small (the walk usually
        // stops a few rows down, at the key's newest entry), each next one twice as
        // large, up to PAGE.
        let mut page: std::collections::VecDeque<Entry> = Default::default();
        let mut cursor = i64::MAX;
        let mut size: i64 = 8;
        let mut exhausted = false;
        loop {
            if page.is_empty() && !exhausted {
                let rows = c.query(
                    "SELECT seq, body, hash, sig FROM entries WHERE seq < ?1 \
                     ORDER BY seq DESC LIMIT ?2",
                    &[&cursor, &size],
                )?;
                exhausted = rows.len() < usize::try_from(size).unwrap_or(usize::MAX);
                size = (size * 2).min(crate::store::PAGE as i64);
                for row in &rows {
                    page.push_back(row_entry(row)?);
                }
                if let Some(last) = page.back() {
                    cursor = i64::try_from(last.seq).unwrap_or(i64::MAX);
                }
            }
            let Some(entry) = page.pop_front() else { break };
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
                    log: self.log.clone(),
                    seq: entry.seq,
                    key: body.key,
                });
            }
            newer = Some((entry.seq, body.prev));
            if body.key != key {
                continue;
            }
            if !own_seen {
                own_seen = true;
                // The key's newest entry: its totals must follow from the entry before
                // it, or the next entry would carry a lie on.
                self.running_follows(c, &body, None)?;
                walked.running = body.running.clone();
                walked.newest_own = Some(newest_carried.map_or(body.time, |t| t.max(body.time)));
                walked.since = start(body.time);
                let Some(q) = window else {
                    stopped = true;
                    break;
                };
                if let Some(total) = self.window_by_running(c, &body, q, walked.since)? {
                    walked.total = total;
                    stopped = true;
                    break;
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

    /// The window's total for `q` from the running totals of `newest` (the key's newest
    /// entry, checked) and of the key's last entry before `since`, when both are of one
    /// run: `None` when the run started inside the window (the entries before it are then
    /// added up one by one). The last entry before the window is checked against the
    /// key's entry after it, as `newest` was against the one before it.
    fn window_by_running(
        &self,
        c: &mut dyn Conn,
        newest: &EntryBody,
        q: &WindowQuery,
        since: u64,
    ) -> Result<Option<U256>, Error> {
        let Some(running) = &newest.running else {
            return Ok(None);
        };
        if newest.time < since {
            // The key signed nothing in the window.
            return Ok(Some(U256::ZERO));
        }
        let before = self.own_entry(c, OWN_BEFORE_TIME_SQL, newest.key, since)?;
        let Some(before) = before else {
            // Nothing of the key's before the window: the whole run is in it, if the run
            // is all the key signed.
            let first = self.own_entry(c, OWN_BEFORE_SQL, newest.key, running.from)?;
            return Ok(first
                .is_none()
                .then(|| running.spent(q.chain_id, q.contract)));
        };
        let Some(base) = before
            .running
            .as_ref()
            .filter(|r| r.from == running.from && before.seq < newest.seq)
        else {
            return Ok(None);
        };
        let next = self
            .own_entry(c, OWN_AFTER_SQL, newest.key, before.seq)?
            .ok_or_else(|| {
                self.broken(before.seq, "the key's entries after it are missing".into())
            })?;
        self.running_follows(c, &next, Some(&before))?;
        let (to, from) = (
            running.spent(q.chain_id, q.contract),
            base.spent(q.chain_id, q.contract),
        );
        if from > to {
            return Err(self.broken(
                newest.seq,
                format!(
                    "its running total ({to}) is less than entry {}'s ({from}): the totals \
                     were made up",
                    before.seq
                ),
            ));
        }
        Ok(Some(to - from))
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
        c: &mut dyn Conn,
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
        c: &mut dyn Conn,
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
        let key_text = body_text(key);
        let rows = match exact {
            Some((chain, nonce)) => c.query(sql, &[&key_text, &chain, &nonce])?,
            None => c.query(sql, &[&key_text])?,
        };
        let mut found = Vec::new();
        for row in &rows {
            let entry = row_entry(row)?;
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
        c: &mut dyn Conn,
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
        let rows = c.query(
            "SELECT seq, body, hash, sig FROM entries \
             WHERE json_extract(body, '$.watermarks') IS NOT NULL AND seq > ?1 ORDER BY seq",
            &[&i64::try_from(reset).unwrap_or(i64::MAX)],
        )?;
        for row in &rows {
            let body = self.checked_or_broken(&row_entry(row)?)?;
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
            log: self.log.clone(),
            bad,
        })
    }

    /// The seq of `key`'s newest chain-reset entry for `chain_id` (checked like any
    /// entry: only the key can write one), 0 when it has none.
    pub(crate) fn last_chain_reset_in(
        &self,
        c: &mut dyn Conn,
        key: Address,
        chain_id: u64,
    ) -> Result<u64, Error> {
        // (A chain id past i64, which SQLite's JSON numbers do not hold, finds no reset:
        // its entries all hold their nonces, stricter, never looser. EIP-155 keeps real
        // chain ids far below it.)
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        // Few rows (a key's resets of a chain): read whole, through `entries_body_reset`
        // (see CARRIED_SQL for why not in pages).
        let rows = c.query(
            "SELECT seq, body, hash, sig FROM entries \
             WHERE json_extract(body, '$.key') = ?1 \
               AND json_extract(body, '$.chainId') = ?2 \
               AND json_extract(body, '$.chainReset') IS NOT NULL ORDER BY seq DESC",
            &[&body_text(key), &chain],
        )?;
        for row in &rows {
            let body = self.checked_or_broken(&row_entry(row)?)?;
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
        c: &mut dyn Conn,
        chain_id: u64,
    ) -> Result<Option<B256>, Error> {
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        let mut found = None;
        scan(
            c,
            paged!(
                "SELECT seq, body, hash, sig FROM entries \
                 WHERE json_extract(body, '$.chainId') = ?1 \
                 AND (json_extract(body, '$.genesis') IS NOT NULL \
                      OR json_extract(body, '$.chainReset') IS NOT NULL) \
                 AND seq < ?2 ORDER BY seq DESC"
            ),
            &[&chain],
            FROM_HEAD,
            |row| {
                let body = self.checked_or_broken(&row_entry(row)?)?;
                if body.chain_id == chain_id
                    && let Some(genesis) = body.chain_reset.or(body.genesis)
                {
                    found = Some(genesis);
                    return Ok(false);
                }
                Ok(true)
            },
        )?;
        Ok(found)
    }

    pub(crate) fn window_in(
        &self,
        c: &mut dyn Conn,
        key: Address,
        query: Option<&WindowQuery>,
    ) -> Result<Walked, Error> {
        self.no_edited_row(c)?;
        let acknowledged = self.reaches_kept(c)?;
        self.walk(c, key, query, acknowledged)
    }
}

/// Running totals as text, for a refusal.
fn sums(running: &Running) -> String {
    let sums: Vec<String> = running
        .spent
        .iter()
        .map(|s| format!("{} on chain {} at {}", s.amount, s.chain_id, s.contract))
        .collect();
    format!(
        "from entry {}: {}",
        running.from,
        if sums.is_empty() {
            "nothing".into()
        } else {
            sums.join(", ")
        }
    )
}
