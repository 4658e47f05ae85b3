//! The signing log beside the keys: [`SigningLogDb`], an SQLite file
//! ([`SIGNING_LOG_FILE`]) in the keystore's directory, storing the entries that
//! `bridgectl_tx::log` defines, hash-chained and each signed by its key.
//!
//! | promise | how |
//! |---|---|
//! | an entry is on disk before the signed bytes leave `sign_and_log` | one transaction per append, committed with `synchronous=FULL`: the log's one fsync per signature (see `bridgectl_sqlite`) |
//! | two signers never fork the chain | the head is read and the entry inserted inside one `BEGIN IMMEDIATE` |
//! | limits are not fooled by an edited index column | totals add up the bodies of checked entries, never the columns |
//! | limits are not reset by rolling the log back | a checkpoint kept beside it (`<log>.checkpoint`, written in place after each append, two slots: [`CHECKPOINT_SLOT_BYTES`]): a log that does not reach it (deleted, truncated, an older copy) refuses to sign until [`SigningLogDb::acknowledge`] |
//! | limits are not reset by a stranger's entry | every entry walked is checked (hash, link, signature); one by a key that is not the keystore's refuses; only the signing key's own entries start and end a window |
//! | limits are not reset by a clock stepped back | a key's new entry is never older than its newest one, which is also a floor under `now` |
//! | two signers cannot pass a limit together | the window is totalled again inside the append's `BEGIN IMMEDIATE` |
//! | one nonce, one signature per key, whatever journal or process signs | `signed_at_nonce` (indexed on key, chain and the body's nonce) answers the check made before unlocking; the append asks again inside its `BEGIN IMMEDIATE` and refuses another transaction at a signed nonce (the same transaction again is the same bytes: not recorded twice) |
//!
//! The columns besides `body`, `hash` and `sig` (time, key, chain, contract) exist to
//! filter `log show`; [`SigningLogDb::verify`] checks they agree with the bodies.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use alloy_primitives::{Address, B256, U256};
use bridgectl_tx::limits::{Spent, WindowLimit};
use bridgectl_tx::log::{
    BadEntry, Carried, ChainCheck, Checkpoint, Entry, EntryBody, Head, WindowQuery, nonce_free,
    same_signature,
};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::Error;

/// The log's file name in the keystore directory.
pub const SIGNING_LOG_FILE: &str = "signing-log.sqlite3";

/// Version 2 added `entries_nonce`, the nonce guard's index; version 3 `entries_reset`,
/// which finds a key's chain resets without reading its other entries; version 4
/// `entries_genesis`, which finds the entries that name a chain's block 0.
const SCHEMA: bridgectl_sqlite::Schema = bridgectl_sqlite::Schema {
    version: 4,
    sql: SCHEMA_SQL,
};

const SCHEMA_SQL: &str = "
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
CREATE INDEX IF NOT EXISTS entries_nonce ON entries(key, chain_id, json_extract(body, '$.nonce'));
CREATE INDEX IF NOT EXISTS entries_genesis ON entries(chain_id, seq)
    WHERE json_extract(body, '$.genesis') IS NOT NULL
       OR json_extract(body, '$.chainReset') IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_reset ON entries(key, chain_id, seq)
    WHERE json_extract(body, '$.chainReset') IS NOT NULL;
";

/// The signing log of one keystore directory.
#[derive(Debug)]
pub struct SigningLogDb {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// The keystore's keys: an entry signed by another key refuses signing until a
    /// person acknowledges it. `None`: any key that signed its own entry is accepted.
    known_keys: Option<Vec<Address>>,
    /// Hashes of entries whose signature was checked in this process.
    seen: Mutex<std::collections::HashSet<B256>>,
}

fn row_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<Entry> {
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
    /// Keeps the log's write-ahead log small, after the work (see `bridgectl_sqlite::tidy`).
    fn drop(&mut self) {
        let conn = self.conn.get_mut().unwrap_or_else(|p| p.into_inner());
        let _ = bridgectl_sqlite::tidy(conn);
    }
}

impl SigningLogDb {
    /// Opens (creating if needed) the log of the keystore in `dir`
    /// ([`SIGNING_LOG_FILE`] there), whose keys are `keys`: every signature made with
    /// them is recorded in it, and an entry signed by any other key refuses signing
    /// until a person acknowledges it ([`SigningLogDb::with_known_keys`]). The keystore
    /// lists its keys (`bridgectl_keystore::Keystore::signers`).
    pub fn open_in(dir: impl AsRef<Path>, keys: Vec<Address>) -> Result<SigningLogDb, Error> {
        Ok(SigningLogDb::open(dir.as_ref().join(SIGNING_LOG_FILE))?.with_known_keys(keys))
    }

    /// Opens (creating if needed) the log at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<SigningLogDb, Error> {
        let path = path.as_ref().to_path_buf();
        let sql = |e| Error::Sql {
            path: path.clone(),
            source: e,
        };
        let conn = bridgectl_sqlite::open(&path, &SCHEMA).map_err(sql)?;
        // What was signed with which key is the keys' business: readable by their owner
        // only, like the key files (SQLite gives its -wal and -shm files the same mode).
        bridgectl_files::restrict(&path).map_err(Error::io("cannot set the mode of", &path))?;
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

    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T, Error>) -> Result<T, Error> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn)
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        |e| Error::Sql {
            path: self.path.clone(),
            source: e,
        }
    }

    /// The head as stored (not checked: [`SigningLogDb::verify`] checks it).
    pub fn checkpoint(&self) -> Result<Checkpoint, Error> {
        self.with(|c| head(c).map_err(self.sql()))
    }

    /// The keys with entries on `chain_id`, as the index columns say (unchecked: a
    /// listing of whom a chain reset concerns, not a total anything rests on).
    pub fn keys_on_chain(&self, chain_id: u64) -> Result<Vec<Address>, Error> {
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        let keys: Vec<String> = self.with(|c| {
            let mut stmt = c
                .prepare("SELECT DISTINCT key FROM entries WHERE chain_id = ?1 ORDER BY key")
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
                    }
                    if kept.is_some_and(|k| k.count == entry.seq) {
                        seen = Some(entry.hash);
                    }
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
    fn insert(tx: &rusqlite::Transaction<'_>, entry: &Entry) -> Result<(), rusqlite::Error> {
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

fn columns_agree(body: &EntryBody, c: &Columns) -> Result<(), String> {
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

fn head(c: &Connection) -> rusqlite::Result<Checkpoint> {
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

fn boxed(e: Error) -> bridgectl_tx::Error {
    bridgectl_tx::Error::Log(Box::new(e))
}

fn refused(e: Error) -> bridgectl_tx::Error {
    bridgectl_tx::Error::LogRefused(Box::new(e))
}

/// The checkpoint kept beside the log (`<log>.checkpoint`): the head as this store last
/// wrote it, and how far a person acknowledged the log as it stands.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeptCheckpoint {
    /// Entries in the log when it was written.
    pub count: u64,
    /// The hash of entry `count`.
    pub head: B256,
    /// Entries up to this one were acknowledged by a person: a key that is not in the
    /// keystore any more (or never was) is accepted there.
    pub acknowledged: u64,
    /// Each key's recent spending per token (the last [`CARRY_SECS`], by the hour, at
    /// most [`MAX_CARRIED`] sums): what an acknowledgement of a log that lost entries
    /// carries over, so that accepting it forgets nothing of the windows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<Carried>,
}

/// How far back the kept checkpoint keeps each key's spending: the longest spending
/// window it protects through an acknowledgement.
pub const CARRY_SECS: u64 = 31 * 24 * 3600;

/// The most spending sums the kept checkpoint holds: older sums of a key and token are
/// merged (dated by the newer, so counted at least as long) to stay within it.
pub const MAX_CARRIED: usize = 64;

/// `carried` with `entry`'s amount added (its hour's sum, or a new one), sums older than
/// [`CARRY_SECS`] before it dropped, and merged down to [`MAX_CARRIED`].
fn carry(carried: &[Carried], entry: &EntryBody) -> Vec<Carried> {
    let mut out: Vec<Carried> = carried
        .iter()
        .filter(|c| c.time.saturating_add(CARRY_SECS) >= entry.time)
        .cloned()
        .collect();
    if let (Some(amount), true) = (entry.amount, entry.signs_transaction()) {
        let same = |c: &Carried| {
            c.key == entry.key
                && c.chain_id == entry.chain_id
                && c.contract == entry.to
                && c.time / 3600 == entry.time / 3600
        };
        match out.iter_mut().find(|c| same(c)) {
            Some(c) => {
                c.amount = c.amount.saturating_add(amount);
                c.time = c.time.max(entry.time);
            }
            None => out.push(Carried {
                key: entry.key,
                chain_id: entry.chain_id,
                contract: entry.to,
                time: entry.time,
                amount,
            }),
        }
    }
    merge_down(out)
}

/// Merges the two oldest sums of one key and token until at most [`MAX_CARRIED`] are
/// left: the merged sum is dated by the newer of the two.
fn merge_down(out: Vec<Carried>) -> Vec<Carried> {
    merge_down_to(out, MAX_CARRIED)
}

/// [`merge_down`] to at most `most` sums, as far as merging sums of one key and token
/// goes (one each at least).
fn merge_down_to(mut out: Vec<Carried>, most: usize) -> Vec<Carried> {
    while out.len() > most {
        out.sort_by_key(|c| (c.key, c.chain_id, c.contract, c.time));
        let Some(i) = (1..out.len())
            .filter(|&i| {
                let (a, b) = (&out[i - 1], &out[i]);
                (a.key, a.chain_id, a.contract) == (b.key, b.chain_id, b.contract)
            })
            .min_by_key(|&i| out[i - 1].time)
        else {
            break;
        };
        let older = out.remove(i - 1);
        let newer = &mut out[i - 1];
        newer.amount = newer.amount.saturating_add(older.amount);
    }
    out
}

impl KeptCheckpoint {
    /// The checkpoint part.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            count: self.count,
            head: self.head,
        }
    }
}

/// The kept checkpoint's file is two slots of this many bytes, written in place in
/// turn: checkpoint `count` goes to slot `count % 2`, so the other slot always holds the
/// one before it. Each slot is one line, a JSON object with a check of its own
/// (the first 8 bytes of the keccak-256 of its count, head, acknowledged count and
/// carried spending), padded with spaces.
///
/// Why not a temp file and a rename, as for the other private files: this one is
/// rewritten after every signature, and a rename over it costs a directory update and,
/// on ext4, a forced write-back of the file it replaces, every time. Written in place it
/// costs one `pwrite`. A write cut short (a crash, or a reader in another process at
/// that moment) spoils at most the slot being written, whose check then fails: the
/// reader takes the other slot, a checkpoint one signature older, which is safe (the
/// log still reaches it: it only ever grows past it). Both slots spoiled is refused like
/// any unreadable checkpoint, until a person acknowledges the log.
///
/// 32 KiB holds [`MAX_CARRIED`] spending sums of the largest values; files of the earlier
/// 256-byte slots are read as they were and rewritten at this size.
pub const CHECKPOINT_SLOT_BYTES: usize = 32 * 1024;

/// The slot of files written before spending was carried (count, head, acknowledged).
const LEGACY_SLOT_BYTES: usize = 256;

/// The largest kept checkpoint's file read: its two slots.
const MAX_CHECKPOINT_FILE_BYTES: u64 = 2 * CHECKPOINT_SLOT_BYTES as u64;

/// One slot of the kept checkpoint's file.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Slot {
    count: u64,
    head: B256,
    acknowledged: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    carried: Vec<Carried>,
    /// [`slot_check`] of the fields above.
    check: String,
}

/// The first 8 bytes of the keccak-256 of a slot's fields (count and acknowledged as
/// 8 bytes big-endian, the head's 32, and when spending is carried the keccak-256 of its
/// JSON): a slot half overwritten does not match it.
fn slot_check(kept: &KeptCheckpoint) -> String {
    let mut bytes = Vec::with_capacity(80);
    bytes.extend_from_slice(&kept.count.to_be_bytes());
    bytes.extend_from_slice(kept.head.as_slice());
    bytes.extend_from_slice(&kept.acknowledged.to_be_bytes());
    if !kept.carried.is_empty() {
        let json = serde_json::to_vec(&kept.carried).unwrap_or_default();
        bytes.extend_from_slice(alloy_primitives::keccak256(json).as_slice());
    }
    alloy_primitives::hex::encode(&alloy_primitives::keccak256(bytes)[..8])
}

fn encode_slot(kept: &KeptCheckpoint) -> Vec<u8> {
    let mut kept = kept.clone();
    loop {
        let slot = Slot {
            count: kept.count,
            head: kept.head,
            acknowledged: kept.acknowledged,
            carried: kept.carried.clone(),
            check: slot_check(&kept),
        };
        let json = serde_json::to_vec(&slot).unwrap_or_default();
        if json.len() < CHECKPOINT_SLOT_BYTES || kept.carried.is_empty() {
            let mut out = vec![b' '; CHECKPOINT_SLOT_BYTES];
            let len = json.len().min(CHECKPOINT_SLOT_BYTES - 1);
            out[..len].copy_from_slice(&json[..len]);
            out[CHECKPOINT_SLOT_BYTES - 1] = b'\n';
            return out;
        }
        // More keys and tokens than the slot holds sums of: merge, and past one sum per
        // key and token, drop the oldest.
        let fewer = merge_down_to(kept.carried.clone(), kept.carried.len() * 3 / 4);
        kept.carried = if fewer.len() < kept.carried.len() {
            fewer
        } else {
            let mut by_age = fewer;
            by_age.sort_by_key(|c| std::cmp::Reverse(c.time));
            by_age.truncate(by_age.len() * 3 / 4);
            by_age
        };
    }
}

fn decode_slot(bytes: &[u8]) -> Option<KeptCheckpoint> {
    let slot: Slot = serde_json::from_slice(bytes).ok()?;
    let kept = KeptCheckpoint {
        count: slot.count,
        head: slot.head,
        acknowledged: slot.acknowledged,
        carried: slot.carried,
    };
    (slot.check == slot_check(&kept)).then_some(kept)
}

/// The checkpoint a kept checkpoint's file holds: the newer valid slot (of either slot
/// size), or, for a file an older version wrote (one JSON object), that object.
fn read_kept(bytes: &[u8]) -> Result<KeptCheckpoint, String> {
    let slot = match bytes.len() {
        n if n == 2 * CHECKPOINT_SLOT_BYTES => CHECKPOINT_SLOT_BYTES,
        n if n == 2 * LEGACY_SLOT_BYTES => LEGACY_SLOT_BYTES,
        _ => return serde_json::from_slice(bytes).map_err(|e| e.to_string()),
    };
    let (a, b) = bytes.split_at(slot);
    match (decode_slot(a), decode_slot(b)) {
        (Some(a), Some(b)) => Ok(if (b.count, b.acknowledged) > (a.count, a.acknowledged) {
            b
        } else {
            a
        }),
        (Some(one), None) | (None, Some(one)) => Ok(one),
        (None, None) => Err("neither of its two slots holds a checkpoint".into()),
    }
}

/// What a walk back from the head found.
struct Walked {
    /// The window's total for the query.
    total: U256,
    /// The window's start.
    since: u64,
    /// The signing key's newest entry's time.
    newest_own: Option<u64>,
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
            Err(e) => return Err(Error::io("cannot read", &path)(e)),
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
    fn advance_kept(&self, kept: &KeptCheckpoint) -> Result<(), Error> {
        let path = self.checkpoint_path();
        let slotted =
            std::fs::metadata(&path).is_ok_and(|m| m.len() == 2 * CHECKPOINT_SLOT_BYTES as u64);
        if !slotted {
            return self.write_kept(kept);
        }
        let offset = (kept.count % 2) * CHECKPOINT_SLOT_BYTES as u64;
        Ok(bridgectl_files::overwrite_at(
            &path,
            offset,
            &encode_slot(kept),
        )?)
    }

    /// Replaces the kept checkpoint with `kept` in both slots (a new file, or a person's
    /// acknowledgement, which may move it back).
    fn write_kept(&self, kept: &KeptCheckpoint) -> Result<(), Error> {
        let path = self.checkpoint_path();
        let slot = encode_slot(kept);
        Ok(bridgectl_files::write_replace(
            &path,
            &[slot.as_slice(), slot.as_slice()].concat(),
        )?)
    }

    /// Accepts the log as it stands, by `signer`, a key of the keystore, at `time`:
    /// after `verify` found it whole (links, hashes, signatures, any key), an
    /// acknowledgement entry signed by that key is appended
    /// ([`bridgectl_tx::log::acknowledgement`]), its head becomes the kept checkpoint, and
    /// every entry so far counts as acknowledged (keys that are not in the keystore
    /// included). For a person who knows why the log no longer reaches its checkpoint
    /// (restored from a backup, moved aside) or why a stranger's key signed an entry (a
    /// key removed).
    ///
    /// What is not forgotten: when the log does not reach the kept checkpoint (entries
    /// were lost), the entry carries the checkpoint's record of each key's recent
    /// spending ([`KeptCheckpoint::carried`]), which the spending windows count from then
    /// on as they counted the lost entries. (Spending still in the log is then counted
    /// twice where its hour's sum is carried too: stricter, never looser.) A kept
    /// checkpoint that cannot be read at all carries nothing.
    pub fn acknowledge(
        &self,
        signer: &alloy_signer_local::PrivateKeySigner,
        time: u64,
    ) -> Result<Checkpoint, Error> {
        let head_before = self.verify(None)?;
        let kept = self.kept().ok().flatten();
        let reaches = kept.as_ref().is_none_or(|k| {
            k.count == 0
                || self
                    .with(|c| {
                        c.prepare_cached("SELECT hash FROM entries WHERE seq = ?1")
                            .and_then(|mut s| {
                                s.query_row([i64::try_from(k.count).unwrap_or(i64::MAX)], |r| {
                                    r.get::<_, Vec<u8>>(0)
                                })
                                .optional()
                            })
                            .map_err(self.sql())
                    })
                    .ok()
                    .flatten()
                    .as_deref()
                    == Some(k.head.as_slice())
        });
        let carried = kept.as_ref().map(|k| k.carried.clone()).unwrap_or_default();
        let body = bridgectl_tx::log::acknowledgement(
            head_before,
            signer.address(),
            time,
            kept.as_ref()
                .map_or(Checkpoint::EMPTY, KeptCheckpoint::checkpoint),
            if reaches { Vec::new() } else { carried.clone() },
        );
        let entry =
            bridgectl_tx::log::seal_entry(&body, signer).map_err(|e| Error::Acknowledgement {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let sql = self.sql();
        bridgectl_sqlite::durable(&mut conn, &sql, |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&sql)?;
            if head(&tx).map_err(&sql)? != head_before {
                return Err(Error::Acknowledgement {
                    path: self.path.clone(),
                    reason: "another signature was appended meanwhile: acknowledge again".into(),
                });
            }
            Self::insert(&tx, &entry).map_err(&sql)?;
            tx.commit().map_err(&sql)
        })?;
        drop(conn);
        let new = Checkpoint {
            count: entry.seq,
            head: entry.hash,
        };
        self.write_kept(&KeptCheckpoint {
            count: new.count,
            head: new.head,
            acknowledged: new.count,
            carried,
        })?;
        Ok(new)
    }

    /// Checks that the log reaches the kept checkpoint: entry `kept.count` is there
    /// with the kept hash. Returns the acknowledged count.
    fn reaches_kept(&self, c: &Connection) -> Result<u64, Error> {
        let Some(kept) = self.kept()? else {
            return Ok(0);
        };
        if kept.count == 0 {
            return Ok(kept.acknowledged);
        }
        // Cached: a signature checks the log twice (before it is made, and again under
        // the append's lock), and a batch once per item.
        let at: Option<Vec<u8>> = c
            .prepare_cached("SELECT hash FROM entries WHERE seq = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([i64::try_from(kept.count).unwrap_or(i64::MAX)], |r| {
                    r.get(0)
                })
                .optional()
            })
            .map_err(self.sql())?;
        if at.as_deref() != Some(kept.head.as_slice()) {
            return Err(Error::RolledBack {
                path: self.path.clone(),
                kept: kept.checkpoint(),
                found: head(c).map_err(self.sql())?.count,
            });
        }
        Ok(kept.acknowledged)
    }

    /// Walks back from the head, checking every entry on the way (hash, link to the
    /// next, signature by its key, a key of the keystore unless acknowledged), until
    /// `key`'s newest entry (no `window`) or `key`'s first entry before the window.
    /// Only `key`'s own entries decide where the window starts and where the walk
    /// stops: a stranger's entry, whatever time it claims, moves neither.
    fn walk(
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
    fn checked_body(&self, entry: &Entry) -> Result<EntryBody, BadEntry> {
        let cached = {
            let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.contains(&entry.hash)
        };
        let body = if cached && bridgectl_tx::log::entry_hash(&entry.body) == entry.hash {
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

    /// The checked bodies of `key`'s entries at `nonce` on `chain_id`, found through
    /// the index on the stored columns and decided by the signed bodies (a row whose
    /// body does not hold refuses, like any broken entry).
    fn signed_at_nonce_in(
        &self,
        c: &Connection,
        key: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<Vec<EntryBody>, Error> {
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        // SQLite's JSON numbers stop at i64: a larger nonce is looked for among all the
        // key's entries on the chain.
        let (sql, nonce_arg) = match i64::try_from(nonce) {
            Ok(n) => (
                "SELECT seq, body, hash, sig FROM entries WHERE key = ?1 AND chain_id = ?2 \
                 AND json_extract(body, '$.nonce') = ?3 ORDER BY seq",
                Some(n),
            ),
            Err(_) => (
                "SELECT seq, body, hash, sig FROM entries WHERE key = ?1 AND chain_id = ?2 \
                 AND ?3 IS NULL ORDER BY seq",
                None,
            ),
        };
        let mut stmt = c.prepare_cached(sql).map_err(self.sql())?;
        let mut rows = stmt
            .query(params![key.to_string(), chain, nonce_arg])
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
        // Signatures made before the key recorded a reset of this chain were for the old
        // chain: they hold no nonce on the new one.
        let reset = self.last_chain_reset_in(c, key, chain_id)?;
        found.retain(|b| b.seq > reset);
        Ok(found)
    }

    /// [`Self::checked_body`], a bad entry as the refusal [`Error::Broken`].
    fn checked_or_broken(&self, entry: &Entry) -> Result<EntryBody, Error> {
        self.checked_body(entry).map_err(|bad| Error::Broken {
            path: self.path.clone(),
            bad,
        })
    }

    /// The seq of `key`'s newest chain-reset entry for `chain_id` (checked like any
    /// entry: only the key can write one), 0 when it has none.
    fn last_chain_reset_in(
        &self,
        c: &Connection,
        key: Address,
        chain_id: u64,
    ) -> Result<u64, Error> {
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        let mut stmt = c
            .prepare_cached(
                "SELECT seq, body, hash, sig FROM entries WHERE key = ?1 AND chain_id = ?2 \
                 AND json_extract(body, '$.chainReset') IS NOT NULL ORDER BY seq DESC",
            )
            .map_err(self.sql())?;
        let mut rows = stmt
            .query(params![key.to_string(), chain])
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
    fn chain_genesis_in(&self, c: &Connection, chain_id: u64) -> Result<Option<B256>, Error> {
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        let mut stmt = c
            .prepare_cached(
                "SELECT seq, body, hash, sig FROM entries WHERE chain_id = ?1 \
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

    fn window_in(
        &self,
        c: &Connection,
        key: Address,
        query: Option<&WindowQuery>,
    ) -> Result<Walked, Error> {
        let acknowledged = self.reaches_kept(c)?;
        self.walk(c, key, query, acknowledged)
    }
}

/// A refusal of the log (it does not reach its checkpoint, does not hold, or holds a
/// stranger's entry) is a refusal to sign; anything else is a failure to read it.
fn as_tx(e: Error) -> bridgectl_tx::Error {
    match e {
        Error::Broken { .. }
        | Error::RolledBack { .. }
        | Error::Foreign { .. }
        | Error::Checkpoint { .. } => refused(e),
        other => boxed(other),
    }
}

impl SigningLogDb {
    /// After `entries` (not empty, in order) were committed: their signatures count as
    /// checked in this process, and the kept checkpoint moves to the last of them. It
    /// only moves forward (a concurrent signer may have written a later one); a stale
    /// one is safe, the log still reaches it. Returns the new head.
    fn appended(&self, entries: &[Entry]) -> Result<Checkpoint, bridgectl_tx::Error> {
        let last = entries.last().expect("called with the entries appended");
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(entries.iter().map(|e| e.hash));
        let new = Checkpoint {
            count: last.seq,
            head: last.hash,
        };
        // The kept checkpoint only moves forward (a concurrent signer may have written
        // a later one); a stale one is safe, the log still reaches it. It adds these
        // entries' spending to what it keeps of each key's.
        let kept = self.kept().ok().flatten();
        if kept.as_ref().is_none_or(|k| k.count < new.count) {
            let mut carried = kept.as_ref().map(|k| k.carried.clone()).unwrap_or_default();
            for entry in entries {
                if let Ok(body) = serde_json::from_str::<EntryBody>(&entry.body) {
                    carried = carry(&carried, &body);
                }
            }
            self.advance_kept(&KeptCheckpoint {
                count: new.count,
                head: new.head,
                acknowledged: kept.as_ref().map_or(0, |k| k.acknowledged),
                carried,
            })
            .map_err(boxed)?;
        }
        Ok(new)
    }
}

impl bridgectl_tx::SigningLog for SigningLogDb {
    fn append(
        &self,
        key: Address,
        limit: Option<&WindowLimit>,
        make: &mut dyn FnMut(Head) -> Result<Entry, bridgectl_tx::Error>,
    ) -> Result<Checkpoint, bridgectl_tx::Error> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let sql = self.sql();
        let entry = bridgectl_sqlite::durable(
            &mut conn,
            |e| boxed(sql(e)),
            |conn| {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| boxed(sql(e)))?;
                // With the log to ourselves: it reaches its checkpoint, the nonce is
                // still free, and the limit the verifier checked still holds now that
                // no other signer can append.
                let walked = self
                    .window_in(&tx, key, limit.map(|l| &l.query))
                    .map_err(as_tx)?;
                let at = Head {
                    checkpoint: head(&tx).map_err(|e| boxed(sql(e)))?,
                    time: walked.newest_own.unwrap_or(0),
                };
                let entry = make(at)?;
                let body: EntryBody = serde_json::from_str(&entry.body).map_err(|e| {
                    bridgectl_tx::Error::Refused(format!("the new log entry does not read: {e}"))
                })?;
                let prior = if body.signs_transaction() {
                    self.signed_at_nonce_in(&tx, body.key, body.chain_id, body.nonce)
                        .map_err(as_tx)?
                } else {
                    // A chain reset signs no transaction: no nonce to guard.
                    Vec::new()
                };
                if body.signs_transaction() && same_signature(&prior, &body).is_some() {
                    // The very transaction again (the same bytes): recorded once, counted
                    // once.
                    return Ok(None);
                }
                if body.signs_transaction() {
                    nonce_free(
                        &prior,
                        body.key,
                        body.chain_id,
                        body.nonce,
                        body.signing_hash.unwrap_or_default(),
                        body.replaces,
                    )?;
                }
                if let Some(limit) = limit {
                    limit.check(walked.total)?;
                }
                Self::insert(&tx, &entry).map_err(|e| boxed(sql(e)))?;
                tx.commit().map_err(|e| boxed(sql(e)))?;
                Ok(Some(entry))
            },
        )?;
        let Some(entry) = entry else {
            return head(&conn).map_err(|e| boxed(sql(e)));
        };
        drop(conn);
        self.appended(std::slice::from_ref(&entry))
    }

    /// One `BEGIN IMMEDIATE` for the whole group and one durable commit: a batch's
    /// signatures cost the log one fsync, not one each. Inside it, as for one append: the
    /// kept checkpoint is reached, each key's newest entry is read once (walking back
    /// from the head, every entry checked), each window is totalled once and the
    /// group's earlier entries added to it, and each entry's nonce is guarded against
    /// the log and the group's earlier entries. Any refusal rolls the whole group back.
    fn append_group(
        &self,
        group: &mut [bridgectl_tx::log::GroupEntry<'_>],
    ) -> Result<Checkpoint, bridgectl_tx::Error> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let sql = self.sql();
        let appended = bridgectl_sqlite::durable(
            &mut conn,
            |e| boxed(sql(e)),
            |conn| {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| boxed(sql(e)))?;
                let mut checkpoint = head(&tx).map_err(|e| boxed(sql(e)))?;
                let mut own_time: std::collections::HashMap<Address, u64> = Default::default();
                let mut windows: std::collections::HashMap<(Address, u64, Address, u64), U256> =
                    Default::default();
                let mut bodies: Vec<EntryBody> = Vec::new();
                let mut appended: Vec<Entry> = Vec::new();
                for item in group.iter_mut() {
                    let time = match own_time.get(&item.key) {
                        Some(t) => *t,
                        None => {
                            let walked = self.window_in(&tx, item.key, None).map_err(as_tx)?;
                            let t = walked.newest_own.unwrap_or(0);
                            own_time.insert(item.key, t);
                            t
                        }
                    };
                    let entry = (item.make)(Head { checkpoint, time })?;
                    let body: EntryBody = serde_json::from_str(&entry.body).map_err(|e| {
                        bridgectl_tx::Error::Refused(format!(
                            "the new log entry does not read: {e}"
                        ))
                    })?;
                    if body.signs_transaction() {
                        let mut prior = self
                            .signed_at_nonce_in(&tx, body.key, body.chain_id, body.nonce)
                            .map_err(as_tx)?;
                        prior.extend(
                            bodies
                                .iter()
                                .filter(|b| {
                                    b.signs_transaction()
                                        && b.key == body.key
                                        && b.chain_id == body.chain_id
                                        && b.nonce == body.nonce
                                })
                                .cloned(),
                        );
                        if same_signature(&prior, &body).is_some() {
                            // The very transaction again: recorded once, counted once.
                            continue;
                        }
                        nonce_free(
                            &prior,
                            body.key,
                            body.chain_id,
                            body.nonce,
                            body.signing_hash.unwrap_or_default(),
                            body.replaces,
                        )?;
                    }
                    if let Some(limit) = &item.limit {
                        let q = &limit.query;
                        let window = (q.key, q.chain_id, q.contract, q.per);
                        let total = match windows.get(&window) {
                            Some(total) => *total,
                            None => self.window_in(&tx, item.key, Some(q)).map_err(as_tx)?.total,
                        };
                        limit.check(total)?;
                        windows.insert(window, total.saturating_add(limit.amount));
                    }
                    Self::insert(&tx, &entry).map_err(|e| boxed(sql(e)))?;
                    checkpoint = Checkpoint {
                        count: entry.seq,
                        head: entry.hash,
                    };
                    own_time.insert(body.key, body.time.max(time));
                    bodies.push(body);
                    appended.push(entry);
                }
                if !appended.is_empty() {
                    tx.commit().map_err(|e| boxed(sql(e)))?;
                }
                Ok(appended)
            },
        )?;
        if appended.is_empty() {
            return head(&conn).map_err(|e| boxed(sql(e)));
        }
        drop(conn);
        self.appended(&appended)
    }

    /// Copies the log's write-ahead log into the file once it has grown past its
    /// bound (see `bridgectl_sqlite::tidy`); also done when the log is dropped.
    fn tidy(&self) {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let _ = bridgectl_sqlite::tidy(&conn);
    }

    fn check(&self, key: Address) -> Result<(), bridgectl_tx::Error> {
        self.with(|c| self.window_in(c, key, None)).map_err(as_tx)?;
        Ok(())
    }

    fn signed_at_nonce(
        &self,
        key: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<Vec<EntryBody>, bridgectl_tx::Error> {
        self.with(|c| self.signed_at_nonce_in(c, key, chain_id, nonce))
            .map_err(as_tx)
    }

    fn signed_on_chain(
        &self,
        chain_id: u64,
        per_key: usize,
    ) -> Result<Vec<EntryBody>, bridgectl_tx::Error> {
        let keys = self.keys_on_chain(chain_id).map_err(as_tx)?;
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        self.with(|c| {
            let mut found = Vec::new();
            let mut stmt = c
                .prepare_cached(
                    "SELECT seq, body, hash, sig FROM entries WHERE key = ?1 AND chain_id = ?2 \
                     ORDER BY seq DESC",
                )
                .map_err(self.sql())?;
            for key in keys {
                let mut rows = stmt
                    .query(params![key.to_string(), chain])
                    .map_err(self.sql())?;
                let mut taken = 0;
                while taken < per_key
                    && let Some(row) = rows.next().map_err(self.sql())?
                {
                    let body = self.checked_or_broken(&row_entry(row).map_err(self.sql())?)?;
                    if body.key != key || body.chain_id != chain_id {
                        continue;
                    }
                    if body.chain_reset.is_some() {
                        break;
                    }
                    found.push(body);
                    taken += 1;
                }
            }
            Ok(found)
        })
        .map_err(as_tx)
    }

    fn chain_genesis(&self, chain_id: u64) -> Result<Option<B256>, bridgectl_tx::Error> {
        self.with(|c| self.chain_genesis_in(c, chain_id))
            .map_err(as_tx)
    }

    fn window_total(&self, query: &WindowQuery) -> Result<Spent, bridgectl_tx::Error> {
        let walked = self
            .with(|c| self.window_in(c, query.key, Some(query)))
            .map_err(as_tx)?;
        Ok(Spent {
            query: query.clone(),
            total: walked.total,
            since: walked.since,
        })
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

    fn kept(count: u64, acknowledged: u64) -> KeptCheckpoint {
        KeptCheckpoint {
            count,
            head: B256::repeat_byte(u8::try_from(count % 251).expect("small")),
            acknowledged,
            carried: Vec::new(),
        }
    }

    fn file(a: &KeptCheckpoint, b: &KeptCheckpoint) -> Vec<u8> {
        [encode_slot(a), encode_slot(b)].concat()
    }

    #[test]
    fn a_slot_is_one_line_and_reads_back() {
        let big = KeptCheckpoint {
            count: u64::MAX,
            head: B256::repeat_byte(0xff),
            acknowledged: u64::MAX,
            carried: Vec::new(),
        };
        let slot = encode_slot(&big);
        assert_eq!(slot[CHECKPOINT_SLOT_BYTES - 1], b'\n');
        assert!(!slot[..CHECKPOINT_SLOT_BYTES - 1].contains(&b'\n'));
        assert_eq!(decode_slot(&slot), Some(big), "the largest values fit");
        // And as many spending sums as it keeps, the largest amounts.
        let full = KeptCheckpoint {
            carried: (0..MAX_CARRIED as u64)
                .map(|i| Carried {
                    key: Address::repeat_byte(u8::try_from(i % 250).expect("small")),
                    chain_id: u64::MAX,
                    contract: Address::repeat_byte(0xee),
                    time: u64::MAX - i,
                    amount: U256::MAX,
                })
                .collect(),
            ..kept(5, 5)
        };
        assert_eq!(decode_slot(&encode_slot(&full)), Some(full), "the sums fit");
        assert_eq!(read_kept(&file(&kept(7, 3), &kept(8, 3))), Ok(kept(8, 3)));
        assert_eq!(read_kept(&file(&kept(9, 3), &kept(8, 3))), Ok(kept(9, 3)));
        assert_eq!(read_kept(&file(&kept(8, 2), &kept(8, 5))), Ok(kept(8, 5)));
    }

    #[test]
    fn a_spoiled_slot_leaves_the_other() {
        let (older, newer) = (kept(10, 0), kept(11, 0));
        // A write cut short: the new slot half written over the old one.
        let mut torn = file(&older, &older);
        torn[CHECKPOINT_SLOT_BYTES..CHECKPOINT_SLOT_BYTES + 40]
            .copy_from_slice(&encode_slot(&newer)[..40]);
        assert_eq!(read_kept(&torn), Ok(older.clone()));
        // Parses, but a digit changed: the check refuses it.
        let mut edited = file(&older, &newer);
        let text = String::from_utf8(edited[CHECKPOINT_SLOT_BYTES..].to_vec()).expect("text");
        let changed = text.replacen("\"count\":11", "\"count\":12", 1);
        assert_ne!(changed, text);
        edited[CHECKPOINT_SLOT_BYTES..].copy_from_slice(changed.as_bytes());
        assert_eq!(read_kept(&edited), Ok(older.clone()));
        // Zeroes (a block lost in a power cut) in one slot, then in both.
        let mut zeroed = file(&older, &newer);
        zeroed[..CHECKPOINT_SLOT_BYTES].fill(0);
        assert_eq!(read_kept(&zeroed), Ok(newer));
        zeroed.fill(0);
        assert!(read_kept(&zeroed).is_err());
    }

    #[test]
    fn any_bytes_read_as_a_checkpoint_or_a_refusal_never_a_panic() {
        let good = file(&kept(3, 1), &kept(4, 1));
        for i in 0u64..2000 {
            let noise = alloy_primitives::keccak256(i.to_be_bytes());
            let mut bytes = good.clone();
            // Overwrite a stretch of a valid file, or take a prefix of it, or pure noise.
            let at = usize::from(noise[0]) * 2;
            let len = usize::from(noise[1] % 40);
            for (k, b) in bytes.iter_mut().skip(at).take(len).enumerate() {
                *b = noise[k % 32];
            }
            let cut = match i % 3 {
                0 => bytes.len(),
                1 => usize::from(noise[2]) * 2,
                _ => 0,
            };
            let input = if i % 3 == 2 {
                noise.to_vec()
            } else {
                bytes[..cut].to_vec()
            };
            if let Ok(k) = read_kept(&input) {
                assert!(k == kept(3, 1) || k == kept(4, 1) || input.len() != good.len());
            }
        }
    }

    #[test]
    fn a_file_of_the_older_version_reads_as_it_did() {
        let old = serde_json::to_vec(&kept(4, 2)).expect("json");
        assert_eq!(read_kept(&old), Ok(kept(4, 2)));
        assert!(read_kept(b"{\"count\":").is_err());
        // Two 256-byte slots, as written before spending was carried.
        let legacy = |k: &KeptCheckpoint| {
            let mut out = vec![b' '; LEGACY_SLOT_BYTES];
            let json = serde_json::to_vec(&serde_json::json!({
                "count": k.count, "head": k.head, "acknowledged": k.acknowledged,
                "check": slot_check(k),
            }))
            .expect("json");
            out[..json.len()].copy_from_slice(&json);
            out[LEGACY_SLOT_BYTES - 1] = b'\n';
            out
        };
        let file = [legacy(&kept(6, 1)), legacy(&kept(7, 1))].concat();
        assert_eq!(read_kept(&file), Ok(kept(7, 1)));
    }

    fn spent(key: u8, time: u64, amount: u64) -> EntryBody {
        let body = bridgectl_tx::log::acknowledgement(
            Checkpoint::EMPTY,
            Address::repeat_byte(key),
            time,
            Checkpoint::EMPTY,
            Vec::new(),
        );
        EntryBody {
            chain_id: 7,
            to: Address::repeat_byte(0xcc),
            amount: Some(U256::from(amount)),
            acknowledges: None,
            ..body
        }
    }

    /// Each key's spending is kept by the hour for a month, merged (dated by the newer)
    /// past [`MAX_CARRIED`] sums: never less than was spent in any window it reaches.
    #[test]
    fn spending_is_carried_by_the_hour_for_a_month_and_merged_never_lost() {
        let hour = 3600;
        let mut carried = carry(&[], &spent(1, 10 * hour, 5));
        carried = carry(&carried, &spent(1, 10 * hour + 60, 2));
        assert_eq!(carried.len(), 1, "one hour, one sum");
        assert_eq!(carried[0].amount, U256::from(7u8));
        assert_eq!(carried[0].time, 10 * hour + 60, "dated by the newest");
        carried = carry(&carried, &spent(2, 11 * hour, 3));
        assert_eq!(carried.len(), 2, "another key");
        // A month later the old sums are gone.
        carried = carry(&carried, &spent(1, 12 * hour + CARRY_SECS, 1));
        assert_eq!(carried.len(), 1);
        // Past MAX_CARRIED sums, the oldest of a key merge into the next.
        let mut many = Vec::new();
        for h in 0..(MAX_CARRIED as u64 + 10) {
            many = carry(&many, &spent(1, h * hour, 1));
        }
        assert_eq!(many.len(), MAX_CARRIED);
        let total: U256 = many.iter().map(|c| c.amount).sum();
        assert_eq!(total, U256::from(MAX_CARRIED as u64 + 10), "nothing lost");
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
