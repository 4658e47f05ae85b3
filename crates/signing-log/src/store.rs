//! The signing log beside the keys: [`SigningLogDb`], an SQLite file
//! ([`SIGNING_LOG_FILE`]) in the keystore's directory, or tables in a PostgreSQL
//! database that several signer hosts share ([`SigningLogDb::open_at`]), storing the
//! entries that `bridgectl_tx::signing_log` defines, hash-chained and each signed by its
//! key. Where the table says `BEGIN IMMEDIATE`, read the store's write transaction: on
//! PostgreSQL it holds the advisory lock of the log's namespace, one writer across every
//! host (`bridgectl_store::Store::write`), so every check below made inside an append
//! holds across hosts as it does across processes.
//!
//! | promise | how |
//! |---|---|
//! | an entry is on disk before the signed bytes leave `sign_and_log` | one transaction per append, committed with `synchronous=FULL`: the log's one fsync per signature (see `bridgectl_local::sqlite`) |
//! | two signers never fork the chain | the head is read and the entry inserted inside one `BEGIN IMMEDIATE` |
//! | no guard is fooled by an edited index column | totals add up the bodies of checked entries; the nonce guard, a key's resets and a chain's block 0 are found through indexes of what the bodies say (`json_extract(body, ...)`), never the columns; and a row whose columns disagree with its body refuses signing (one lookup in the partial index `entries_edited`, not a walk) |
//! | limits are not reset by rolling the log back | a checkpoint kept beside it (`<log>.checkpoint`, written in place after each append, two slots: [`CHECKPOINT_SLOT_BYTES`]; for a shared log, each host's own, in its keystore directory): a log that does not reach it (deleted, truncated, an older copy) refuses to sign until [`SigningLogDb::acknowledge`] |
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

use alloy_primitives::{Address, B256};
use bridgectl_store::{Conn, Location, Row, Store, ToValue};
use bridgectl_tx::signing_log::{BadEntry, ChainCheck, Checkpoint, Entry, EntryBody};

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
/// window's sum), and `entries_carried`, the acknowledgements that carry spending;
/// version 8 reads the bodies' numbers (time, chain) as integers in `entries_edited` and
/// `entries_body_key_time`, one SQL text that PostgreSQL, whose JSON values are text,
/// reads the same; version 9 has PostgreSQL keep statistics of the fields few entries
/// have.
const SCHEMA: bridgectl_store::Schema = bridgectl_store::Schema {
    version: 9,
    sqlite: SCHEMA_SQL,
    sqlite_added_columns: &[],
    postgres: POSTGRES_SQL,
    namespace: "bridgectl_signing_log",
};

/// A row whose index columns disagree with its signed body, in SQL: what an edit of the
/// columns leaves (the body's addresses are lowercase hex, the columns' checksummed, so
/// the addresses are compared in lowercase; [`columns_agree`] compares the case too).
macro_rules! edited_row {
    () => {
        "lower(key) IS NOT json_extract(body, '$.key') \
         OR chain_id IS NOT CAST(json_extract(body, '$.chainId') AS INTEGER) \
         OR time IS NOT CAST(json_extract(body, '$.time') AS INTEGER) \
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
-- Versions 7's, on the time as SQLite's JSON reads it: remade on the time as an integer.
DROP INDEX IF EXISTS entries_body_key_time;
CREATE INDEX entries_body_key_time ON entries(
    json_extract(body, '$.key'), CAST(json_extract(body, '$.time') AS INTEGER), seq);
-- The rows whose columns disagree with their bodies (EDITED_ROW): empty unless a row was
-- edited, so finding one costs a lookup, not a walk.
DROP INDEX IF EXISTS entries_edited;
CREATE INDEX entries_edited ON entries(seq) WHERE ",
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

/// The same tables in PostgreSQL, shared by every host that signs with the keys: the
/// bodies are text (what was hashed and signed, byte for byte) and every index is of
/// what a body says, as the statements read it (`json_extract` is rewritten to
/// `(CAST(body AS jsonb) ->> 'name')`, a text; the numbers a guard orders by are cast).
const POSTGRES_SQL: &str = "
CREATE TABLE IF NOT EXISTS entries (
    seq      BIGINT PRIMARY KEY,
    time     BIGINT NOT NULL,
    key      TEXT NOT NULL,
    chain_id BIGINT NOT NULL,
    contract TEXT NOT NULL,
    body     TEXT NOT NULL,
    hash     BYTEA NOT NULL,
    sig      BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_key_time ON entries(key, time);
CREATE INDEX IF NOT EXISTS entries_body_nonce ON entries(
    (CAST(body AS jsonb) ->> 'key'), (CAST(body AS jsonb) ->> 'chainId'),
    (CAST(body AS jsonb) ->> 'nonce'));
CREATE INDEX IF NOT EXISTS entries_body_genesis ON entries((CAST(body AS jsonb) ->> 'chainId'), seq)
    WHERE (CAST(body AS jsonb) ->> 'genesis') IS NOT NULL
       OR (CAST(body AS jsonb) ->> 'chainReset') IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_body_reset ON entries(
    (CAST(body AS jsonb) ->> 'key'), (CAST(body AS jsonb) ->> 'chainId'), seq)
    WHERE (CAST(body AS jsonb) ->> 'chainReset') IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_watermarks ON entries(seq)
    WHERE (CAST(body AS jsonb) ->> 'watermarks') IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_carried ON entries(seq)
    WHERE (CAST(body AS jsonb) ->> 'carried') IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_body_key ON entries((CAST(body AS jsonb) ->> 'key'), seq);
CREATE INDEX IF NOT EXISTS entries_body_key_time ON entries(
    (CAST(body AS jsonb) ->> 'key'), (CAST((CAST(body AS jsonb) ->> 'time') AS BIGINT)), seq);
CREATE INDEX IF NOT EXISTS entries_edited ON entries(seq) WHERE
    lower(key) IS DISTINCT FROM (CAST(body AS jsonb) ->> 'key')
    OR chain_id IS DISTINCT FROM CAST((CAST(body AS jsonb) ->> 'chainId') AS BIGINT)
    OR time IS DISTINCT FROM CAST((CAST(body AS jsonb) ->> 'time') AS BIGINT)
    OR lower(contract) IS DISTINCT FROM (CAST(body AS jsonb) ->> 'to');
-- What the planner knows of the fields few entries have (how few: their null fraction),
-- gathered with the table's statistics: without them it took `x IS NOT NULL` for nearly
-- every row, and a guard's lookup of a key's chain resets or of the acknowledgements
-- walked the whole log backwards by seq, parsing every body, instead of taking the
-- partial index of the few.
CREATE STATISTICS IF NOT EXISTS entries_chain_reset ON ((CAST(body AS jsonb) ->> 'chainReset')) FROM entries;
CREATE STATISTICS IF NOT EXISTS entries_carried_field ON ((CAST(body AS jsonb) ->> 'carried')) FROM entries;
CREATE STATISTICS IF NOT EXISTS entries_watermarks_field ON ((CAST(body AS jsonb) ->> 'watermarks')) FROM entries;
CREATE TABLE IF NOT EXISTS credit_claims (
    chain_id  BIGINT NOT NULL,
    genesis   TEXT NOT NULL,
    tx_hash   TEXT NOT NULL,
    log_index BIGINT NOT NULL,
    claimant  TEXT NOT NULL,
    key       TEXT NOT NULL,
    at        BIGINT NOT NULL,
    PRIMARY KEY (chain_id, genesis, tx_hash, log_index)
);
-- The statistics above gathered now (a log made or upgraded), and again as it grows
-- (SigningLogDb::keep_statistics, and the server's autovacuum).
ANALYZE entries;
";

/// How many rows a walk reads at a time: a walk back from the head usually stops at the
/// signing key's newest entry, a few rows down, so it never reads the whole log into
/// memory (nor, from PostgreSQL, over the network).
pub(crate) const PAGE: usize = 256;

/// `$sql` (which selects `seq` first and ends with its cursor, `seq < ?N ORDER BY seq
/// DESC` or `seq > ?N ORDER BY seq`) with [`PAGE`]'s limit.
macro_rules! paged {
    ($sql:expr) => {
        concat!($sql, " LIMIT 256")
    };
}
pub(crate) use paged;

/// The signing log of one keystore directory (or of the keys several hosts share).
pub struct SigningLogDb {
    /// The file, or for a shared log the base of the checkpoint's file name in the
    /// keystore directory.
    pub(crate) path: PathBuf,
    /// Where the entries are, as errors name it (a URL without its password).
    pub(crate) log: String,
    pub(crate) store: Store,
    /// The keystore's keys: an entry signed by another key refuses signing until a
    /// person acknowledges it. `None`: any key that signed its own entry is accepted.
    pub(crate) known_keys: Option<Vec<Address>>,
    /// Hashes of entries whose signature was checked in this process.
    pub(crate) seen: std::sync::Mutex<std::collections::HashSet<B256>>,
    /// Entries this process appended (for [`SigningLogDb::keep_statistics`]).
    pub(crate) appends: std::sync::atomic::AtomicU64,
}

/// How many appends of one process pass between two looks at a shared log's statistics.
pub(crate) const STATISTICS_EVERY: u64 = 256;

impl std::fmt::Debug for SigningLogDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningLogDb")
            .field("log", &self.log)
            .field("known_keys", &self.known_keys)
            .finish_non_exhaustive()
    }
}

/// The entry of a row that selects `seq, body, hash, sig` first.
pub(crate) fn row_entry(row: &Row) -> Result<Entry, bridgectl_store::Error> {
    let hash: Vec<u8> = row.get(2)?;
    let sig: Vec<u8> = row.get(3)?;
    Ok(Entry {
        seq: row.get(0)?,
        body: row.get(1)?,
        hash: B256::try_from(hash.as_slice()).unwrap_or_default(),
        sig: sig.into(),
    })
}

impl Drop for SigningLogDb {
    /// Keeps the log's write-ahead log small, after the work (see `bridgectl_local::sqlite::tidy`).
    fn drop(&mut self) {
        self.store.tidy();
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
        SigningLogDb::open_at(Location::File(dir.join(SIGNING_LOG_FILE)), dir)
            .map(|log| log.with_known_keys(keys))
    }

    /// Opens (creating if needed) the log at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<SigningLogDb, Error> {
        let path = path.as_ref();
        let dir = path.parent().unwrap_or(Path::new("."));
        SigningLogDb::open_at(Location::File(path.to_path_buf()), dir)
    }

    /// Opens (creating its tables if needed) the log at `location`: a SQLite file, or a
    /// PostgreSQL database that several signer hosts share (feature `postgres`). The
    /// kept checkpoint, this host's record of how far the log reached when it last
    /// signed, is a file beside a SQLite log, and in `dir` (the keystore's directory,
    /// made if needed, mode 0700) for a shared one, named after the database: a log that
    /// loses entries (a table truncated, a database restored from an older copy) is
    /// refused by every host that saw them, whoever else appends.
    pub fn open_at(location: Location, dir: impl AsRef<Path>) -> Result<SigningLogDb, Error> {
        let dir = dir.as_ref();
        // A log kept apart from any keystore (external signers only) may be the first
        // thing in its directory: without it, SQLite's error would read "cannot sync".
        bridgectl_local::files::create_private_dir(dir)
            .map_err(PathError::on("cannot create the directory", dir))?;
        let log = location.to_string();
        let path = match &location {
            Location::File(path) => path.clone(),
            shared => {
                let id = alloy_primitives::keccak256(shared.to_string().as_bytes());
                dir.join(format!("signing-log.shared-{}", &hex_of(&id[..4])))
            }
        };
        let store = Store::open(location.clone(), &SCHEMA).map_err(|source| Error::Store {
            log: log.clone(),
            source,
        })?;
        if let Location::File(file) = &location {
            // What was signed with which key is the keys' business: readable by their
            // owner only, like the key files (SQLite gives its -wal and -shm files the
            // same mode).
            bridgectl_local::files::restrict(file)
                .map_err(PathError::on("cannot set the mode of", file))?;
        }
        let log = SigningLogDb {
            path,
            log,
            store,
            known_keys: None,
            seen: Default::default(),
            appends: Default::default(),
        };
        log.keep_statistics()?;
        Ok(log)
    }

    /// PostgreSQL only: has the server gather the entries' statistics again when it has
    /// none, or a tenth of the rows changed since (at open, and every [`STATISTICS_EVERY`]
    /// appends of this process). Without them its planner took a guard's lookup of a few
    /// rows (a key's chain resets) through an index of all the key's entries, reading and
    /// parsing every body: milliseconds a signature, growing with the log. (Its own
    /// autovacuum does the same, but a minute or more late.)
    pub(crate) fn keep_statistics(&self) -> Result<(), Error> {
        if self.store.backend() != bridgectl_store::Backend::Postgres {
            return Ok(());
        }
        self.with(|c| {
            let stale: Option<bool> = c.query_opt(
                "SELECT (last_analyze IS NULL AND last_autoanalyze IS NULL AND n_live_tup > 0) \
                     OR n_mod_since_analyze > GREATEST(50, n_live_tup / 10) \
                 FROM pg_stat_user_tables WHERE schemaname = current_schema() \
                   AND relname = 'entries'",
                &[],
                |r| r.get(0),
            )?;
            if stale == Some(true) {
                c.execute("ANALYZE entries", &[])?;
            }
            Ok(())
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

    /// The file of a SQLite log; for a shared one, the base of its kept checkpoint's
    /// file name ([`SigningLogDb::checkpoint_path`] adds `.checkpoint`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the entries are.
    pub fn location(&self) -> &Location {
        self.store.location()
    }

    /// Runs `f` on the store, outside a transaction; a store error names the log.
    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.store.read(f).map_err(|e| self.named(e))
    }

    /// `e`, a store error naming this log.
    pub(crate) fn named(&self, e: Error) -> Error {
        match e {
            Error::Store { log, source } if log.is_empty() => Error::Store {
                log: self.log.clone(),
                source,
            },
            other => other,
        }
    }

    /// The head as stored (not checked: [`SigningLogDb::verify`] checks it).
    pub fn checkpoint(&self) -> Result<Checkpoint, Error> {
        self.with(|c| head(c))
    }

    /// The keys with entries on `chain_id`, as the entries' bodies say (unchecked: a
    /// listing of whom a chain reset concerns, not a total anything rests on).
    pub fn keys_on_chain(&self, chain_id: u64) -> Result<Vec<Address>, Error> {
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        let keys: Vec<String> = self.with(|c| {
            Ok(c.query_map(
                "SELECT DISTINCT json_extract(body, '$.key') AS k FROM entries \
                 WHERE json_extract(body, '$.chainId') = ?1 ORDER BY k",
                &[&chain],
                |r| r.get(0),
            )?)
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
            log: self.log.clone(),
            bad,
        };
        if let Some(bad) = bad {
            return Err(broken(bad));
        }
        check.finish(kept, seen).map_err(broken)?;
        Ok(check.checkpoint())
    }

    /// Every entry in order, with its index columns, unchecked (export, show): read
    /// a page of rows at a time (never the whole log in memory).
    pub fn each(&self, mut f: impl FnMut(Entry, Columns)) -> Result<(), Error> {
        self.with(|c| {
            scan(
                c,
                paged!(
                    "SELECT seq, body, hash, sig, time, key, chain_id, contract FROM entries \
                     WHERE seq > ?1 ORDER BY seq"
                ),
                &[],
                FROM_FIRST,
                |row| {
                    let columns = Columns {
                        time: row.get(4)?,
                        key: row.get(5)?,
                        chain_id: row.get(6)?,
                        contract: row.get(7)?,
                    };
                    f(row_entry(row)?, columns);
                    Ok(true)
                },
            )
        })
    }

    /// Appends `entry` (already made and signed from the head read in the same
    /// transaction).
    pub(crate) fn insert(c: &mut dyn Conn, entry: &Entry) -> Result<(), bridgectl_store::Error> {
        let body: Option<EntryBody> = serde_json::from_str(&entry.body).ok();
        let (time, key, chain, contract) = body.map_or((0, String::new(), 0, String::new()), |b| {
            (b.time, b.key.to_string(), b.chain_id, b.to.to_string())
        });
        c.execute(
            "INSERT INTO entries (seq, time, key, chain_id, contract, body, hash, sig) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &[
                &i64::try_from(entry.seq).unwrap_or(i64::MAX),
                &i64::try_from(time).unwrap_or(i64::MAX),
                &key,
                &i64::try_from(chain).unwrap_or(i64::MAX),
                &contract,
                &entry.body,
                &entry.hash.to_vec(),
                &entry.sig.to_vec(),
            ],
        )?;
        Ok(())
    }
}

/// Lowercase hex of `bytes`.
fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads the rows of `sql` (written with [`paged!`]: `seq` first, the cursor its last
/// parameter after `params`, `seq < ?N ORDER BY seq DESC` down or `seq > ?N ORDER BY
/// seq` up), [`PAGE`] at a time from `start` ([`FROM_HEAD`] down, [`FROM_FIRST`] up),
/// handing each to `f` until it returns `false`.
pub(crate) fn scan(
    c: &mut dyn Conn,
    sql: &str,
    params: &[&dyn ToValue],
    start: i64,
    mut f: impl FnMut(&Row) -> Result<bool, Error>,
) -> Result<(), Error> {
    let mut cursor = start;
    loop {
        let mut all = params.to_vec();
        all.push(&cursor);
        let rows = c.query(sql, &all)?;
        let full = rows.len() >= PAGE;
        for row in &rows {
            cursor = row.get(0)?;
            if !f(row)? {
                return Ok(());
            }
        }
        if !full {
            return Ok(());
        }
    }
}

/// [`scan`] down from the head.
pub(crate) const FROM_HEAD: i64 = i64::MAX;

/// [`scan`] up from the first entry.
pub(crate) const FROM_FIRST: i64 = 0;

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
    pub(crate) fn no_edited_row(&self, c: &mut dyn Conn) -> Result<(), Error> {
        let edited: Option<i64> = c.query_opt(EDITED_ROW_SQL, &[], |r| r.get(0))?;
        match edited {
            None => Ok(()),
            Some(seq) => Err(Error::Broken {
                log: self.log.clone(),
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

pub(crate) fn head(c: &mut dyn Conn) -> Result<Checkpoint, Error> {
    let row: Option<(i64, Vec<u8>)> = c.query_opt(
        "SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1",
        &[],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
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
                let n = sql.matches('?').count();
                let one = 1i64;
                let args: Vec<&dyn ToValue> = vec![&one; n];
                let rows = c.query(&format!("EXPLAIN QUERY PLAN {sql}"), &args)?;
                let details: Vec<String> = rows.iter().filter_map(|r| r.get(3).ok()).collect();
                Ok(details.join("; "))
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
