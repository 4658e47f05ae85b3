//! The signing log beside the keys: [`SigningLogDb`], an SQLite file
//! ([`SIGNING_LOG_FILE`]) in the keystore's directory, storing the entries that
//! `bridgectl_tx::signing_log` defines, hash-chained and each signed by its key.
//!
//! | promise | how |
//! |---|---|
//! | an entry is on disk before the signed bytes leave `sign_and_log` | one transaction per append, committed with `synchronous=FULL`: the log's one fsync per signature (see `bridgectl_local::sqlite`) |
//! | two signers never fork the chain | the head is read and the entry inserted inside one `BEGIN IMMEDIATE` |
//! | no guard is fooled by an edited index column | totals add up the bodies of checked entries; the nonce guard, a key's resets and a chain's block 0 are found through indexes of what the bodies say (`json_extract(body, ...)`), never the columns; and a row whose columns disagree with its body refuses signing (one lookup in the partial index `entries_edited`, not a walk) |
//! | limits are not reset by rolling the log back | a checkpoint kept beside it (`<log>.checkpoint`, written in place after each append, two slots: [`CHECKPOINT_SLOT_BYTES`]): a log that does not reach it (deleted, truncated, an older copy) refuses to sign until [`SigningLogDb::acknowledge`] |
//! | limits are not reset by a stranger's entry | every entry walked is checked (hash, link, signature); one by a key that is not the keystore's refuses; only the signing key's own entries start and end a window |
//! | limits are not reset by a clock stepped back | a key's new entry is never older than its newest one, which is also a floor under `now` |
//! | two signers cannot pass a limit together | the window is totalled again inside the append's `BEGIN IMMEDIATE` |
//! | one nonce, one signature per key, whatever journal or process signs | `signed_at_nonce` (indexed on the body's key, chain and nonce) answers the check made before unlocking; the append asks again inside its `BEGIN IMMEDIATE` and refuses another transaction at a signed nonce (the same transaction again is the same bytes: not recorded twice) |
//! | a signed nonce stays signed when its entry is lost (a deleted or restored log, acknowledged) or hidden (a body edited to another nonce, a row deleted) | each key's watermark on each chain (the highest nonce signed, and the gaps below it) is kept in the checkpoint and moved by every append; an acknowledgement carries the watermarks into the log, where they hold however the checkpoint fares; a nonce one holds without an entry refuses every transaction but a replacement; the key's chain-reset entry ends them |
//!
//! The columns besides `body`, `hash` and `sig` (time, key, chain, contract) exist to
//! filter `log show`; [`SigningLogDb::verify`] checks they agree with the bodies, and
//! so, for the addresses in lowercase, does every signature (`entries_edited`).

use bridgectl_local::PathError;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use alloy_primitives::{Address, B256};
use bridgectl_tx::signing_log::{BadEntry, ChainCheck, Checkpoint, Entry, EntryBody};
use rusqlite::{Connection, OptionalExtension, params};

use crate::Error;

use crate::kept::{
    CHECKPOINT_SLOT_BYTES, KeptCheckpoint, MAX_CHECKPOINT_FILE_BYTES, encode_slot, read_kept,
};

/// The log's file name in the keystore directory.
pub const SIGNING_LOG_FILE: &str = "signing-log.sqlite3";

/// Version 2 added `entries_nonce`, the nonce guard's index; version 3 `entries_reset`,
/// which finds a key's chain resets without reading its other entries; version 4
/// `entries_genesis`, which finds the entries that name a chain's block 0; version 5
/// `credit_claims`, a swap credit's one claim across every journal of the keystore;
/// version 6 made every index a guard reads an index of what the signed bodies say
/// (the columns beside them are for `log show`, and an edit of them changes nothing a
/// guard finds), added `entries_edited`, which finds a row whose columns disagree with
/// its body without reading the others, and `entries_watermarks`, the acknowledgements
/// that carry watermarks; version 7 `entries_body_key` and `entries_body_key_time`, which
/// find a key's entries next to a window's ends (the running totals they carry give the
/// window's sum), and `entries_carried`, the acknowledgements that carry spending.
const SCHEMA: bridgectl_local::sqlite::Schema = bridgectl_local::sqlite::Schema {
    version: 7,
    sql: SCHEMA_SQL,
};

/// A row whose index columns disagree with its signed body, in SQL: what an edit of the
/// columns leaves (the body's addresses are lowercase hex, the columns' checksummed, so
/// the addresses are compared in lowercase; [`columns_agree`] compares the case too).
macro_rules! edited_row {
    () => {
        "lower(key) IS NOT json_extract(body, '$.key') \
         OR chain_id IS NOT json_extract(body, '$.chainId') \
         OR time IS NOT json_extract(body, '$.time') \
         OR lower(contract) IS NOT json_extract(body, '$.to')"
    };
}

/// The first row whose columns disagree with its body: one lookup in `entries_edited`.
pub(crate) const EDITED_ROW_SQL: &str = concat!(
    "SELECT seq FROM entries WHERE ",
    edited_row!(),
    " ORDER BY seq LIMIT 1"
);

const SCHEMA_SQL: &str = concat!(
    "
CREATE TABLE IF NOT EXISTS entries (
    seq      INTEGER PRIMARY KEY,
    time     INTEGER NOT NULL,
    key      TEXT NOT NULL,
    chain_id INTEGER NOT NULL,
    contract TEXT NOT NULL,
    body     TEXT NOT NULL,
    hash     BLOB NOT NULL,
    sig      BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_key_time ON entries(key, time);
-- Indexes of version 2 to 4, on the key and chain columns: replaced by the ones below.
DROP INDEX IF EXISTS entries_nonce;
DROP INDEX IF EXISTS entries_genesis;
DROP INDEX IF EXISTS entries_reset;
-- What the guards find entries by: the signed body's key, chain and nonce.
CREATE INDEX IF NOT EXISTS entries_body_nonce ON entries(
    json_extract(body, '$.key'), json_extract(body, '$.chainId'), json_extract(body, '$.nonce'));
CREATE INDEX IF NOT EXISTS entries_body_genesis ON entries(json_extract(body, '$.chainId'), seq)
    WHERE json_extract(body, '$.genesis') IS NOT NULL
       OR json_extract(body, '$.chainReset') IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_body_reset ON entries(
    json_extract(body, '$.key'), json_extract(body, '$.chainId'), seq)
    WHERE json_extract(body, '$.chainReset') IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_watermarks ON entries(seq)
    WHERE json_extract(body, '$.watermarks') IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_carried ON entries(seq)
    WHERE json_extract(body, '$.carried') IS NOT NULL;
-- A key's entries in order, and by time (a key's entries are never older than the one
-- before them): its newest, the one next to another, its last before a window.
CREATE INDEX IF NOT EXISTS entries_body_key ON entries(json_extract(body, '$.key'), seq);
CREATE INDEX IF NOT EXISTS entries_body_key_time ON entries(
    json_extract(body, '$.key'), json_extract(body, '$.time'), seq);
-- The rows whose columns disagree with their bodies (EDITED_ROW): empty unless a row was
-- edited, so finding one costs a lookup, not a walk.
CREATE INDEX IF NOT EXISTS entries_edited ON entries(seq) WHERE ",
    edited_row!(),
    ";
-- The swap credits claimed by the keystore's swaps, whichever journal followed them: the
-- key makes one claim per credit (see SigningLog::claim_credit).
CREATE TABLE IF NOT EXISTS credit_claims (
    chain_id  INTEGER NOT NULL,
    genesis   TEXT NOT NULL,
    tx_hash   TEXT NOT NULL,
    log_index INTEGER NOT NULL,
    claimant  TEXT NOT NULL,
    key       TEXT NOT NULL,
    at        INTEGER NOT NULL,
    PRIMARY KEY (chain_id, genesis, tx_hash, log_index)
);
"
);

/// The signing log of one keystore directory.
#[derive(Debug)]
pub struct SigningLogDb {
    pub(crate) path: PathBuf,
    pub(crate) conn: Mutex<Connection>,
    /// The keystore's keys: an entry signed by another key refuses signing until a
    /// person acknowledges it. `None`: any key that signed its own entry is accepted.
    pub(crate) known_keys: Option<Vec<Address>>,
    /// Hashes of entries whose signature was checked in this process.
    pub(crate) seen: Mutex<std::collections::HashSet<B256>>,
}

pub(crate) fn row_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<Entry> {
    let seq: i64 = row.get("seq")?;
    let hash: Vec<u8> = row.get("hash")?;
    let sig: Vec<u8> = row.get("sig")?;
    Ok(Entry {
        seq: u64::try_from(seq).unwrap_or_default(),
        body: row.get("body")?,
        hash: B256::try_from(hash.as_slice()).unwrap_or_default(),
        sig: sig.into(),
    })
}

impl Drop for SigningLogDb {
    /// Keeps the log's write-ahead log small, after the work (see `bridgectl_local::sqlite::tidy`).
    fn drop(&mut self) {
        let conn = self.conn.get_mut().unwrap_or_else(|p| p.into_inner());
        let _ = bridgectl_local::sqlite::tidy(conn);
    }
}

impl SigningLogDb {
    /// Opens (creating if needed, `dir` too, mode 0700 like a keystore's) the log of the
    /// keystore in `dir` ([`SIGNING_LOG_FILE`] there), whose keys are `keys`: every
    /// signature made with them is recorded in it, and an entry signed by any other key
    /// refuses signing until a person acknowledges it
    /// ([`SigningLogDb::with_known_keys`]). The keystore lists its keys
    /// (`bridgectl_keystore::Keystore::signers`).
    pub fn open_in(dir: impl AsRef<Path>, keys: Vec<Address>) -> Result<SigningLogDb, Error> {
        let dir = dir.as_ref();
        // A log kept apart from any keystore (external signers only) may be the first
        // thing in its directory: without it, SQLite's error would read "cannot sync".
        bridgectl_local::files::create_private_dir(dir)
            .map_err(PathError::on("cannot create the directory", dir))?;
        Ok(SigningLogDb::open(dir.join(SIGNING_LOG_FILE))?.with_known_keys(keys))
    }

    /// Opens (creating if needed) the log at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<SigningLogDb, Error> {
        let path = path.as_ref().to_path_buf();
        let sql = |e| Error::Sql {
            path: path.clone(),
            source: e,
        };
        let conn = bridgectl_local::sqlite::open(&path, &SCHEMA).map_err(sql)?;
        // What was signed with which key is the keys' business: readable by their owner
        // only, like the key files (SQLite gives its -wal and -shm files the same mode).
        bridgectl_local::files::restrict(&path)
            .map_err(PathError::on("cannot set the mode of", &path))?;
        Ok(SigningLogDb {
            path,
            conn: Mutex::new(conn),
            known_keys: None,
            seen: Mutex::default(),
        })
    }

    /// The same log, refusing to sign past an entry made by a key not in `keys` (the
    /// keystore's): one stranger's entry must not decide a window. A key removed since
    /// it signed is accepted once a person acknowledges the log
    /// ([`SigningLogDb::acknowledge`]).
    pub fn with_known_keys(mut self, keys: Vec<Address>) -> SigningLogDb {
        self.known_keys = Some(keys);
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn)
    }

    pub(crate) fn sql(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        |e| Error::Sql {
            path: self.path.clone(),
            source: e,
        }
    }

    /// The head as stored (not checked: [`SigningLogDb::verify`] checks it).
    pub fn checkpoint(&self) -> Result<Checkpoint, Error> {
        self.with(|c| head(c).map_err(self.sql()))
    }

    /// The keys with entries on `chain_id`, as the entries' bodies say (unchecked: a
    /// listing of whom a chain reset concerns, not a total anything rests on).
    pub fn keys_on_chain(&self, chain_id: u64) -> Result<Vec<Address>, Error> {
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        let keys: Vec<String> = self.with(|c| {
            let mut stmt = c
                .prepare(
                    "SELECT DISTINCT json_extract(body, '$.key') AS k FROM entries \
                     WHERE json_extract(body, '$.chainId') = ?1 ORDER BY k",
                )
                .map_err(self.sql())?;
            let rows = stmt
                .query_map(params![chain], |r| r.get(0))
                .map_err(self.sql())?;
            rows.collect::<Result<_, _>>().map_err(self.sql())
        })?;
        Ok(keys.iter().filter_map(|k| k.parse().ok()).collect())
    }

    /// Checks the whole chain, and against `kept` when given, and returns the verified
    /// head. A log that does not hold is [`Error::Broken`], naming the first
    /// entry that does not; any other error is one of reading the log.
    pub fn verify(&self, kept: Option<Checkpoint>) -> Result<Checkpoint, Error> {
        self.verify_each(kept, |_| {})
    }

    /// [`SigningLogDb::verify`], handing `visit` each entry's body once it is checked,
    /// in order (of a log that turns out not to hold, those before the first bad one).
    pub(crate) fn verify_each(
        &self,
        kept: Option<Checkpoint>,
        mut visit: impl FnMut(&EntryBody),
    ) -> Result<Checkpoint, Error> {
        let mut check = ChainCheck::new();
        let mut seen = None;
        let mut bad = None;
        self.each(|entry, columns| {
            if bad.is_some() {
                return;
            }
            match check.push(&entry) {
                Ok(body) => {
                    if let Err(reason) = columns_agree(&body, &columns) {
                        bad = Some(BadEntry {
                            seq: entry.seq,
                            reason,
                        });
                        return;
                    }
                    if kept.is_some_and(|k| k.count == entry.seq) {
                        seen = Some(entry.hash);
                    }
                    visit(&body);
                }
                Err(e) => bad = Some(e),
            }
        })?;
        let broken = |bad| Error::Broken {
            path: self.path.clone(),
            bad,
        };
        if let Some(bad) = bad {
            return Err(broken(bad));
        }
        check.finish(kept, seen).map_err(broken)?;
        Ok(check.checkpoint())
    }

    /// Every entry in order, with its index columns, unchecked (export, show).
    pub fn each(&self, mut f: impl FnMut(Entry, Columns)) -> Result<(), Error> {
        self.with(|c| {
            let mut stmt = c
                .prepare(
                    "SELECT seq, time, key, chain_id, contract, body, hash, sig FROM entries \
                     ORDER BY seq",
                )
                .map_err(self.sql())?;
            let mut rows = stmt.query([]).map_err(self.sql())?;
            while let Some(row) = rows.next().map_err(self.sql())? {
                let entry = row_entry(row).map_err(self.sql())?;
                let columns = Columns {
                    time: row.get("time").map_err(self.sql())?,
                    key: row.get("key").map_err(self.sql())?,
                    chain_id: row.get("chain_id").map_err(self.sql())?,
                    contract: row.get("contract").map_err(self.sql())?,
                };
                f(entry, columns);
            }
            Ok(())
        })
    }

    /// Appends `entry` (already made and signed from the head read in the same
    /// transaction).
    pub(crate) fn insert(
        tx: &rusqlite::Transaction<'_>,
        entry: &Entry,
    ) -> Result<(), rusqlite::Error> {
        let body: Option<EntryBody> = serde_json::from_str(&entry.body).ok();
        let (time, key, chain, contract) = body.map_or((0, String::new(), 0, String::new()), |b| {
            (b.time, b.key.to_string(), b.chain_id, b.to.to_string())
        });
        tx.execute(
            "INSERT INTO entries (seq, time, key, chain_id, contract, body, hash, sig) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                i64::try_from(entry.seq).unwrap_or(i64::MAX),
                i64::try_from(time).unwrap_or(i64::MAX),
                key,
                i64::try_from(chain).unwrap_or(i64::MAX),
                contract,
                entry.body,
                entry.hash.as_slice(),
                entry.sig.as_ref(),
            ],
        )?;
        Ok(())
    }
}

/// The index columns of a row, as stored.
#[derive(Clone, Debug)]
pub struct Columns {
    /// `time`.
    pub time: i64,
    /// `key`.
    pub key: String,
    /// `chain_id`.
    pub chain_id: i64,
    /// `contract`.
    pub contract: String,
}

pub(crate) fn columns_agree(body: &EntryBody, c: &Columns) -> Result<(), String> {
    let agree = i64::try_from(body.time).ok() == Some(c.time)
        && body.key.to_string() == c.key
        && i64::try_from(body.chain_id).ok() == Some(c.chain_id)
        && body.to.to_string() == c.contract;
    if agree {
        Ok(())
    } else {
        Err(format!(
            "its index columns (time {}, key {}, chain {}, contract {}) disagree with its \
             signed body: the row was edited",
            c.time, c.key, c.chain_id, c.contract
        ))
    }
}

/// An address as an entry's body writes it (what its JSON indexes hold).
pub(crate) fn body_text(address: Address) -> String {
    match serde_json::to_value(address) {
        Ok(serde_json::Value::String(text)) => text,
        _ => format!("{address:#x}"),
    }
}

impl SigningLogDb {
    /// Refuses when a row's index columns disagree with its signed body
    /// ([`EDITED_ROW_SQL`]): the guards find entries by their bodies, so an edited column
    /// hides nothing from them, and it is still a refusal, not something to sign past.
    /// One lookup in `entries_edited`, whatever the log's length.
    pub(crate) fn no_edited_row(&self, c: &Connection) -> Result<(), Error> {
        let edited: Option<i64> = c
            .prepare_cached(EDITED_ROW_SQL)
            .and_then(|mut s| s.query_row([], |r| r.get(0)).optional())
            .map_err(self.sql())?;
        match edited {
            None => Ok(()),
            Some(seq) => Err(Error::Broken {
                path: self.path.clone(),
                bad: BadEntry {
                    seq: u64::try_from(seq).unwrap_or_default(),
                    reason: "its index columns disagree with its signed body: the row was \
                             edited"
                        .into(),
                },
            }),
        }
    }
}

pub(crate) fn head(c: &Connection) -> rusqlite::Result<Checkpoint> {
    let row: Option<(i64, Vec<u8>)> = c
        .prepare_cached("SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(match row {
        Some((seq, hash)) => Checkpoint {
            count: u64::try_from(seq).unwrap_or_default(),
            head: B256::try_from(hash.as_slice()).unwrap_or_default(),
        },
        None => Checkpoint::EMPTY,
    })
}

pub(crate) fn boxed(e: Error) -> bridgectl_tx::Error {
    bridgectl_tx::Error::Log(Box::new(e))
}

pub(crate) fn refused(e: Error) -> bridgectl_tx::Error {
    bridgectl_tx::Error::LogRefused(Box::new(e))
}

impl SigningLogDb {
    /// The file that keeps the log's checkpoint: [`SigningLogDb::path`] plus
    /// `.checkpoint`.
    pub fn checkpoint_path(&self) -> PathBuf {
        let mut s = self.path.as_os_str().to_owned();
        s.push(".checkpoint");
        PathBuf::from(s)
    }

    /// The checkpoint kept beside the log, if any: the newer of its two slots that
    /// holds one (see [`CHECKPOINT_SLOT_BYTES`]), or the whole file as an older version wrote it.
    pub fn kept(&self) -> Result<Option<KeptCheckpoint>, Error> {
        let path = self.checkpoint_path();
        let mut bytes = Vec::new();
        let read = std::fs::File::open(&path).and_then(|f| {
            // Never more than a checkpoint can be (two slots; a file of the older
            // version is shorter): one byte over says the file is something else.
            std::io::Read::read_to_end(
                &mut std::io::Read::take(f, MAX_CHECKPOINT_FILE_BYTES + 1),
                &mut bytes,
            )
        });
        match read {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(PathError::on("cannot read", &path)(e).into()),
        }
        if bytes.len() as u64 > MAX_CHECKPOINT_FILE_BYTES {
            return Err(Error::Checkpoint {
                path,
                reason: format!(
                    "it is larger than any checkpoint ({MAX_CHECKPOINT_FILE_BYTES} bytes)"
                ),
            });
        }
        read_kept(&bytes)
            .map(Some)
            .map_err(|reason| Error::Checkpoint { path, reason })
    }

    /// Moves the kept checkpoint to `kept` after an append: in place, into its slot
    /// (`kept.count % 2`), when the file has two slots; the whole file otherwise (missing,
    /// or written by an older version).
    pub(crate) fn advance_kept(&self, kept: &KeptCheckpoint) -> Result<(), Error> {
        let path = self.checkpoint_path();
        let slotted =
            std::fs::metadata(&path).is_ok_and(|m| m.len() == 2 * CHECKPOINT_SLOT_BYTES as u64);
        if !slotted {
            return self.write_kept(kept);
        }
        let offset = (kept.count % 2) * CHECKPOINT_SLOT_BYTES as u64;
        Ok(bridgectl_local::files::overwrite_at(
            &path,
            offset,
            &encode_slot(kept),
        )?)
    }

    /// Replaces the kept checkpoint with `kept` in both slots (a new file, or a person's
    /// acknowledgement, which may move it back).
    pub(crate) fn write_kept(&self, kept: &KeptCheckpoint) -> Result<(), Error> {
        let path = self.checkpoint_path();
        let slot = encode_slot(kept);
        Ok(bridgectl_local::files::write_replace(
            &path,
            &[slot.as_slice(), slot.as_slice()].concat(),
        )?)
    }
}

/// Filters for [`SigningLogDb::show`].
#[derive(Clone, Debug, Default)]
pub struct ShowFilter {
    /// Only this key's entries.
    pub key: Option<Address>,
    /// Only entries signed at or after this time (Unix seconds).
    pub since: Option<u64>,
}

impl SigningLogDb {
    /// The entries that match `filter`, with their parsed bodies (unchecked: `verify`
    /// is the check). An entry whose body does not parse is returned with `None`.
    pub fn show(&self, filter: &ShowFilter) -> Result<Vec<(Entry, Option<EntryBody>)>, Error> {
        let mut out = Vec::new();
        self.each(|entry, _| {
            let body: Option<EntryBody> = serde_json::from_str(&entry.body).ok();
            let keep = match &body {
                Some(b) => {
                    filter.key.is_none_or(|k| k == b.key)
                        && filter.since.is_none_or(|t| b.time >= t)
                }
                None => true,
            };
            if keep {
                out.push((entry, body));
            }
        })?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::decode_slot;
    use crate::kept::tests::kept;

    /// A log kept for external signers alone opens in a directory nothing made yet, as
    /// its doc says: the directory is made private (0700), the file beside it.
    #[test]
    fn open_in_makes_its_directory() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let logs = dir.path().join("external").join("log");
        let log = SigningLogDb::open_in(&logs, vec![Address::repeat_byte(1)]).expect("opens");
        assert!(logs.join(SIGNING_LOG_FILE).is_file());
        let mode = std::fs::metadata(&logs).expect("dir").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(log);
        SigningLogDb::open_in(&logs, Vec::new()).expect("opens again");
    }

    /// What a signature asks of the log: whether a row was edited, the entries at its
    /// nonce, and its window's ends. Each is one lookup in an index (its cost does not
    /// grow with the log), and the indexes are of what the bodies say.
    #[test]
    fn the_guards_lookups_use_their_indexes() {
        let dir = tempfile::tempdir().expect("dir");
        let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("log");
        let plan = |sql: &str| -> String {
            log.with(|c| {
                let mut stmt = c
                    .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                    .map_err(log.sql())?;
                let n = stmt.parameter_count();
                let args: Vec<i64> = vec![1; n];
                let rows = stmt
                    .query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))
                    .map_err(log.sql())?;
                Ok(rows.filter_map(Result::ok).collect::<Vec<_>>().join("; "))
            })
            .expect("plan")
        };
        let edited = plan(EDITED_ROW_SQL);
        assert!(edited.contains("USING INDEX entries_edited"), "{edited}");
        let nonce = plan(crate::walk::NONCE_ENTRIES_SQL);
        assert!(nonce.contains("USING INDEX entries_body_nonce"), "{nonce}");
        // A window's ends: the key's entries next to one another and to a time.
        for sql in [crate::walk::OWN_BEFORE_SQL, crate::walk::OWN_AFTER_SQL] {
            let own = plan(sql);
            assert!(own.contains("USING INDEX entries_body_key "), "{own}");
        }
        let before = plan(crate::walk::OWN_BEFORE_TIME_SQL);
        assert!(
            before.contains("USING INDEX entries_body_key_time"),
            "{before}"
        );
        let carried = plan(crate::walk::CARRIED_SQL);
        assert!(carried.contains("entries_carried"), "{carried}");
    }

    #[test]
    fn appends_write_their_slot_in_place_and_an_acknowledgement_both() {
        let dir = tempfile::tempdir().expect("dir");
        let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("log");
        let path = log.checkpoint_path();
        log.write_kept(&kept(1, 0)).expect("made whole");
        let inode =
            |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).expect("meta"));
        let made = inode(&path);
        log.advance_kept(&kept(2, 0)).expect("in place");
        log.advance_kept(&kept(3, 0)).expect("in place");
        assert_eq!(inode(&path), made, "written in place, not replaced");
        assert_eq!(log.kept().expect("reads"), Some(kept(3, 0)));
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(
            decode_slot(&bytes[..CHECKPOINT_SLOT_BYTES]),
            Some(kept(2, 0))
        );
        // A person's acknowledgement may move it back: both slots, or the newer one would win.
        log.write_kept(&kept(1, 1)).expect("replaced");
        assert_eq!(log.kept().expect("reads"), Some(kept(1, 1)));
        // A file of the older version is replaced whole by the next append.
        std::fs::write(&path, serde_json::to_vec(&kept(5, 0)).expect("json")).expect("old");
        log.advance_kept(&kept(6, 0)).expect("upgraded");
        assert_eq!(
            std::fs::metadata(&path).expect("meta").len(),
            2 * CHECKPOINT_SLOT_BYTES as u64
        );
        assert_eq!(log.kept().expect("reads"), Some(kept(6, 0)));
        // A file larger than two slots is no checkpoint, and is not read whole.
        std::fs::write(&path, vec![b' '; 1 << 20]).expect("big");
        let err = log.kept().expect_err("refused");
        assert!(
            err.to_string().contains("larger than any checkpoint"),
            "{err}"
        );
    }
}
