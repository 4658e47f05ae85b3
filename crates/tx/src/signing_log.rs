//! The signing log's format: what one entry says, how entries are chained and signed,
//! how a chain of them is checked, and what a store of them answers ([`SigningLog`],
//! with the windows of the spending limits). The storage is behind that trait, so this
//! crate stays free of SQLite (`bridgectl-signing-log` keeps the log beside the keys).
//! Signing a transaction into a log, the one way the flows and `bridgectl sign` sign,
//! is [`crate::local_signing::sign_and_log`].
//!
//! The guarantee: every signature made through [`sign_and_log`] is in the log before
//! the signed bytes are returned. An entry is
//!
//! - `body`: the exact JSON text of an [`EntryBody`] (sequence number, hash of the
//!   previous entry, time, key, chain, nonce, callee, function and decoded arguments,
//!   token and amount, transaction hash);
//! - `hash = keccak256(body)` (the UTF-8 bytes of the text, as stored);
//! - `sig`: the signing key's EIP-191 `personal_sign` over the 32 bytes of `hash`
//!   (65 bytes `r || s || v`, `v` 27 or 28).
//!
//! So someone who can write the file but holds no key cannot alter or insert an entry
//! (its hash or signature breaks), cannot delete or reorder one (the next entry's `prev`
//! or `seq` breaks); removing the tail is the one change the chain alone cannot show,
//! and a [`Checkpoint`] kept elsewhere catches it. An auditor checks an export with
//! nothing but keccak and ecrecover (the crate README has the procedure).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use alloy_primitives::{Address, B256, Signature, U256, keccak256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::calldata::{self, Decoded};
use crate::effects::Effects;
use crate::policy::Window;
use crate::rawtx::{RawTx, signing_hash};
use crate::request::Token;
pub use crate::watermark::{Watermark, Watermarks};

// Public paths of the functions that sign a `Verified` into a log, kept for the wallets
// written against them: they live in `crate::local_signing`, and nothing here uses them.
#[doc(no_inline)]
pub use crate::local_signing::{make_entry, sign_and_log, unsigned_entry};

/// The `v` of every entry this version writes.
pub const ENTRY_VERSION: u64 = 1;

/// What one entry says. Its JSON text (as written, never re-serialized) is what is
/// hashed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryBody {
    /// Always [`ENTRY_VERSION`].
    pub v: u64,
    /// Position in the log, from 1.
    pub seq: u64,
    /// The previous entry's hash; zero for the first.
    pub prev: B256,
    /// When it was signed, in seconds since the Unix epoch.
    pub time: u64,
    /// The key that signed the transaction (and this entry).
    pub key: Address,
    /// The EIP-155 chain id.
    pub chain_id: u64,
    /// The nonce.
    pub nonce: u64,
    /// The callee.
    pub to: Address,
    /// The function's signature (`redeem(uint256)`), when bridgectl knows the call.
    pub function: Option<String>,
    /// The decoded arguments: name -> decimal base units or address.
    pub args: BTreeMap<String, String>,
    /// The token's symbol, as the policy names the callee.
    pub token: Option<String>,
    /// The token amount the call moves, in base units, decimal: everything
    /// [`crate::effects`] counts (a `transferWithFee` counts its fee too); `None` when
    /// the call moves none or has no model.
    #[serde(with = "decimal_opt")]
    pub amount: Option<U256>,
    /// Native value sent along, in wei, decimal.
    #[serde(with = "decimal")]
    pub value: U256,
    /// The signed transaction's hash.
    pub tx_hash: B256,
    /// The EIP-155 signing hash of the transaction ([`crate::local_signing::signing_hash`]): what the
    /// nonce guard compares before a key is unlocked, when the signed hash cannot be
    /// known yet. Signing is deterministic (RFC 6979), so the same signing hash means the
    /// same signed bytes. Absent from entries written before the guard: such an entry
    /// holds its nonce against any transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_hash: Option<B256>,
    /// The hash of the transaction this one deliberately replaces at the same nonce (a
    /// re-priced call or a cancel, [`crate::Nonce::Replacing`]): the one way a second
    /// signature at a signed nonce gets past [`nonce_free`], and the record an auditor
    /// reads both from. Absent for every other entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<B256>,
    /// Set on an entry that signs no transaction: the key's own record that chain
    /// `chain_id` was reset and its block 0 is now this hash ([`log_chain_reset`]). The
    /// key's entries on that chain before it hold no nonce any more
    /// ([`SigningLog::signed_at_nonce`] answers from after it); spending totals still
    /// count them. Its `nonce`, `to` and `tx_hash` are zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_reset: Option<B256>,
    /// The hash of block 0 of chain `chain_id` as the signer's node reported it when the
    /// transaction was signed (absent offline, where there is no node, and in entries
    /// written before it was recorded): the chain's identity, keystore-wide. A reset
    /// chain keeps its id but never its block 0, so a reset is believed only where the
    /// node's block 0 differs from the one the log recorded
    /// ([`SigningLog::chain_genesis`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub genesis: Option<B256>,
    /// Set on an acknowledgement, an entry that signs no transaction (`bridgectl log
    /// acknowledge`, signed by a key of the keystore): the checkpoint kept beside the log
    /// when a person accepted the log as it stands. Its `nonce`, `to` and `txHash` are
    /// zero, its chain 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledges: Option<Checkpoint>,
    /// Spending an acknowledgement carries over from entries the log no longer holds
    /// (the kept checkpoint's record of recent spending): counted in spending windows as
    /// the lost entries were, so accepting a log that lost entries forgets nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<Carried>,
    /// Watermarks an acknowledgement carries forward (the kept checkpoint's, the log's
    /// own, and a chain's nonce count where one was asked): every nonce one holds stays
    /// signed, whether or not the log still has its entry, until the key records a
    /// reset of that chain after it ([`AtNonce::watermark`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watermarks: Vec<Watermark>,
    /// The key's running totals as of this entry ([`Running`]): what it spent per chain
    /// and token since the start of the run, this entry included. What a spending
    /// window is read from without adding up its entries: the totals of the key's newest
    /// entry less those of its last entry before the window. Absent from entries written
    /// before they were kept (and from entries a signer made without them): a window
    /// that reaches such entries is added up entry by entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<Running>,
}

/// A key's running totals as of one of its entries ([`EntryBody::running`]), signed
/// with it: for each chain and token contract the key's entries moved an amount on, the
/// sum of those amounts from entry `from` (the first entry of the run) through this one.
/// Each entry of the key carries the totals of the key's entry before it plus its own
/// amount ([`Running::after`]); the first entry of a key, or one whose key's entry
/// before it carries none, starts a run. So the spending of any window of the key's
/// entries within a run is the difference of two entries' totals, whatever the number
/// of entries between them, and a store reads a window in a few lookups.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Running {
    /// The key's entry the run starts at.
    pub from: u64,
    /// The sums, ordered by chain and contract; none for a run without an amount yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spent: Vec<RunningSum>,
}

/// One sum of [`Running::spent`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunningSum {
    /// The chain.
    pub chain_id: u64,
    /// The token contract.
    pub contract: Address,
    /// The sum, in base units, decimal.
    #[serde(with = "decimal")]
    pub amount: U256,
}

impl Running {
    /// The totals of `body`, the key's entry after the one whose totals are `before`
    /// (`None`: `body` starts a run): `before`'s sums with `body`'s amount added to its
    /// chain and contract's. `body`'s own `running` is not read.
    pub fn after(before: Option<&Running>, body: &EntryBody) -> Running {
        let mut running = match before {
            Some(r) => r.clone(),
            None => Running {
                from: body.seq,
                spent: Vec::new(),
            },
        };
        if let Some(amount) = body.amount.filter(|a| !a.is_zero()) {
            let at = (body.chain_id, body.to);
            match running
                .spent
                .binary_search_by_key(&at, |s| (s.chain_id, s.contract))
            {
                Ok(i) => running.spent[i].amount = running.spent[i].amount.saturating_add(amount),
                Err(i) => running.spent.insert(
                    i,
                    RunningSum {
                        chain_id: body.chain_id,
                        contract: body.to,
                        amount,
                    },
                ),
            }
        }
        running
    }

    /// The sum for `chain_id` and `contract` (zero when the run moved none there).
    pub fn spent(&self, chain_id: u64, contract: Address) -> U256 {
        self.spent
            .iter()
            .find(|s| s.chain_id == chain_id && s.contract == contract)
            .map_or(U256::ZERO, |s| s.amount)
    }
}

impl EntryBody {
    /// Whether this entry records a signed transaction (not a chain reset or an
    /// acknowledgement): only those hold a nonce.
    pub fn signs_transaction(&self) -> bool {
        self.chain_reset.is_none() && self.acknowledges.is_none()
    }

    /// Takes this entry into account in `marks`, as every append moves a store's
    /// watermarks: a signature moves its key's watermark on its chain, the key's chain
    /// reset starts that chain over, an acknowledgement adds the watermarks it carries.
    pub fn mark(&self, marks: &mut Watermarks) {
        if self.chain_reset.is_some() {
            marks.reset(self.key, self.chain_id);
        } else if self.signs_transaction() {
            marks.signed(self.key, self.chain_id, self.nonce);
        }
        for carried in &self.watermarks {
            marks.merge(carried);
        }
    }
}

/// Recent spending of one key on one token, as the kept checkpoint records it and an
/// acknowledgement carries it ([`EntryBody::carried`]): the sum of the amounts of that
/// key's entries of one hour, dated by the newest of them (counting it whole in any
/// window that reaches that time is stricter, never looser).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Carried {
    /// The signing key.
    pub key: Address,
    /// The chain.
    pub chain_id: u64,
    /// The token contract.
    pub contract: Address,
    /// The newest signature summed here, in Unix seconds.
    pub time: u64,
    /// The amount, in base units, decimal.
    #[serde(with = "decimal")]
    pub amount: U256,
}

/// One entry as stored and exported: the body's text, its hash and the key's signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    /// Position in the log (repeated from the body, for the reader's eye and the
    /// storage's order).
    pub seq: u64,
    /// The JSON text of the [`EntryBody`], exactly as hashed.
    pub body: String,
    /// `keccak256(body)`.
    pub hash: B256,
    /// EIP-191 signature of `hash` by `body.key`, 65 bytes.
    pub sig: alloy_primitives::Bytes,
}

/// The head of a log: how many entries, and the last one's hash. Printed as
/// `COUNT:HASH` for the operator to keep elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Number of entries.
    pub count: u64,
    /// The hash of entry `count` (zero for an empty log).
    pub head: B256,
}

impl Checkpoint {
    /// The head of an empty log.
    pub const EMPTY: Checkpoint = Checkpoint {
        count: 0,
        head: B256::ZERO,
    };
}

impl fmt::Display for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.count, self.head)
    }
}

impl FromStr for Checkpoint {
    type Err = crate::ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = || crate::ParseError {
            what: "checkpoint",
            input: s.to_owned(),
            expected: "COUNT:0xHASH, as a checkpoint is printed (its `Display`)",
        };
        let (count, head) = s.trim().split_once(':').ok_or_else(expected)?;
        Ok(Checkpoint {
            count: count.parse().map_err(|_| expected())?,
            head: head.parse().map_err(|_| expected())?,
        })
    }
}

/// Where a log stops holding, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("entry {seq}: {reason}")]
pub struct BadEntry {
    /// The first entry that does not hold (for a truncated tail, the first missing one).
    pub seq: u64,
    /// What is wrong with it.
    pub reason: String,
}

/// Checks entries in order, one at a time, so a store can stream a large log through
/// it. Start with [`ChainCheck::new`] (a whole log) or [`ChainCheck::from`] (a slice
/// that continues after a known entry).
#[derive(Clone, Debug)]
pub struct ChainCheck {
    next_seq: u64,
    prev: B256,
}

impl Default for ChainCheck {
    fn default() -> Self {
        Self::new()
    }
}

impl ChainCheck {
    /// A check of a log from its first entry.
    pub fn new() -> Self {
        Self::from(Checkpoint::EMPTY)
    }

    /// A check of the entries after `after` (its count and head hash).
    pub fn from(after: Checkpoint) -> Self {
        ChainCheck {
            next_seq: after.count + 1,
            prev: after.head,
        }
    }

    /// The head so far.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            count: self.next_seq - 1,
            head: self.prev,
        }
    }

    /// Checks the next entry: its position, its hash, its link to the previous one, its
    /// signature by its own key. Returns its body.
    pub fn push(&mut self, entry: &Entry) -> Result<EntryBody, BadEntry> {
        let seq = self.next_seq;
        let bad = |reason: String| BadEntry { seq, reason };
        if entry.seq != seq {
            return Err(bad(if entry.seq > seq {
                format!(
                    "missing: the log goes from entry {} to entry {} (an entry was deleted)",
                    seq - 1,
                    entry.seq
                )
            } else {
                format!("entry {} appears again out of order", entry.seq)
            }));
        }
        let hash = keccak256(entry.body.as_bytes());
        if hash != entry.hash {
            return Err(bad(format!(
                "its contents do not match its hash (stored {}, computed {hash}): the entry \
                 was altered",
                entry.hash
            )));
        }
        let body: EntryBody = serde_json::from_str(&entry.body)
            .map_err(|e| bad(format!("its body is not an entry of version 1: {e}")))?;
        if body.v != ENTRY_VERSION {
            return Err(bad(format!("unknown entry version {}", body.v)));
        }
        if body.seq != seq {
            return Err(bad(format!(
                "its body says it is entry {}: entries were reordered",
                body.seq
            )));
        }
        if body.prev != self.prev {
            return Err(bad(format!(
                "it does not follow entry {} (prev {}, expected {}): entries were deleted, \
                 inserted or reordered",
                seq - 1,
                body.prev,
                self.prev
            )));
        }
        let signer = Signature::from_raw(&entry.sig)
            .ok()
            .and_then(|sig| crate::recover::signer_of_message(&sig, hash.as_slice()));
        if signer != Some(body.key) {
            return Err(bad(format!(
                "not signed by its key {} ({}): the entry was forged",
                body.key,
                signer.map_or_else(|| "no valid signature".into(), |a| format!("signed by {a}"))
            )));
        }
        self.next_seq += 1;
        self.prev = hash;
        Ok(body)
    }

    /// Checks an entry on its own, as the anchor of a slice: its hash and its signature
    /// by its own key, not its place (the entries before it are not read).
    pub fn anchor(entry: &Entry) -> Result<EntryBody, BadEntry> {
        let body: EntryBody = serde_json::from_str(&entry.body).map_err(|e| BadEntry {
            seq: entry.seq,
            reason: format!("its body is not an entry of version 1: {e}"),
        })?;
        let mut check = ChainCheck::from(Checkpoint {
            count: entry.seq.saturating_sub(1),
            head: body.prev,
        });
        let mut same = entry.clone();
        same.seq = body.seq;
        check.push(&same)
    }

    /// Ends the check against a kept checkpoint, if any: the log must reach it, and
    /// hold its hash at its count. `seen` holds the hash of entry `checkpoint.count`
    /// when the log was that long (the caller notes it while pushing).
    pub fn finish(&self, kept: Option<Checkpoint>, seen: Option<B256>) -> Result<(), BadEntry> {
        let Some(kept) = kept else { return Ok(()) };
        let count = self.next_seq - 1;
        if count < kept.count {
            return Err(BadEntry {
                seq: count + 1,
                reason: format!(
                    "missing: the log ends at entry {count} but the checkpoint {kept} says it \
                     had {} (the tail was removed)",
                    kept.count
                ),
            });
        }
        let at = if kept.count == 0 {
            Some(B256::ZERO)
        } else {
            seen
        };
        if at != Some(kept.head) {
            return Err(BadEntry {
                seq: kept.count,
                reason: format!(
                    "its hash is {} but the checkpoint {kept} says {}: the log was rewritten",
                    at.unwrap_or_default(),
                    kept.head
                ),
            });
        }
        Ok(())
    }
}

/// The longest spending window a limit may have: 31 days. A store carries each key's
/// spending of this long through an acknowledgement of a log that lost entries, so no
/// window reaches past what it remembers; a limit with a longer `per` is refused
/// ([`crate::limits::check_enforceable`]).
pub const MAX_WINDOW_SECS: u64 = 31 * 24 * 3600;

/// Where a log is kept. The library's own store is `bridgectl_signing_log::SigningLogDb`
/// (SQLite beside the keys); a wallet may bring another.
///
/// What a store promises, because spending limits rest on it:
/// - the log cannot be rolled back unseen: a checkpoint of its head is kept outside the
///   log, and a log that does not reach it (deleted, truncated, restored from an older
///   copy) refuses [`SigningLog::check`] and [`SigningLog::append`] until a person
///   acknowledges it;
/// - totals are read from entries checked on the way (hash, link, signature by the
///   entry's key), and an entry signed by a key that is not the store's refuses them;
/// - time does not go backwards for a window: the newest trusted entry's time is a floor
///   under `now`, and a new entry is never older than the head;
/// - an acknowledgement of a log that lost entries forgets neither their spending (each
///   key's of the last [`MAX_WINDOW_SECS`], carried into the log: no limit's window is
///   longer, see [`crate::limits::check_enforceable`]) nor their nonces (the watermarks,
///   [`SigningLog::signed_at_nonce`]).
pub trait SigningLog: Send + Sync + fmt::Debug {
    /// Appends the entry `make` builds from the current head, as one atomic step with
    /// reading that head (no other writer can append in between), durably (on disk when
    /// this returns). Inside the same step the log is checked against its kept
    /// checkpoint and, when `limit` is given, the window total is read again and the
    /// limit checked ([`WindowLimit::check`]): signers racing each other cannot pass it
    /// together. Returns the new head.
    /// `key` is the key that signs; [`Head::time`] is the time of its newest entry.
    fn append(
        &self,
        key: Address,
        limit: Option<&WindowLimit>,
        make: &mut dyn FnMut(Head) -> Result<Entry, Error>,
    ) -> Result<Checkpoint, Error>;

    /// The head an entry of `key` appended now would be made from (see [`Head`]): what
    /// a signer that signs outside the log's lock signs its entry after
    /// ([`crate::signer::sign_and_log_with`]), which [`SigningLog::append`] then takes
    /// only if the log is still there. The default asks `append` for it and writes
    /// nothing.
    fn head(&self, key: Address) -> Result<Head, Error> {
        let mut seen = None;
        let peek = self.append(key, None, &mut |head| {
            seen = Some(head);
            Err(Error::LogMoved)
        });
        match (seen, peek) {
            (Some(head), _) => Ok(head),
            (None, Err(e)) => Err(e),
            (None, Ok(_)) => Err(Error::Refused(
                "the signing log appended without building an entry".into(),
            )),
        }
    }

    /// Whether `key` may sign into the log now, without writing: called before any key
    /// is unlocked, so a rolled-back log refuses before a passphrase is asked for.
    fn check(&self, key: Address) -> Result<(), Error>;

    /// The sum of `amount` over the entries of `query.key` for `query.chain_id` and
    /// `query.contract` within the window ending at `query.now` (or at the newest
    /// trusted entry, if later), from entries that were checked on the way.
    fn window_total(&self, query: &WindowQuery) -> Result<Spent, Error>;

    /// What the log knows of `key`'s `nonce` on `chain_id`: what [`nonce_free`] decides
    /// on. Every log a key signs into answers this for every nonce that key signed
    /// through it, whatever journal or process did the signing, so one nonce gets one
    /// signature per keystore:
    /// - [`AtNonce::entries`]: the checked bodies of the entries in which `key` signed
    ///   `nonce` there since its newest chain-reset entry for the chain, oldest first,
    ///   found by what the signed bodies say (key, chain, nonce), never by anything
    ///   stored beside them that an edit could change without the key;
    /// - [`AtNonce::watermark`]: the key's watermark on the chain when it holds `nonce`.
    ///   Every store honours the watermarks its acknowledgement entries carry
    ///   ([`EntryBody::watermarks`]) after the key's newest reset of the chain; a store
    ///   that keeps watermarks of its own beside the log (moved by every append, as
    ///   [`EntryBody::mark`] moves them) adds them, so that an entry
    ///   lost or hidden still holds its nonce. A store without such a record answers
    ///   `None` where no acknowledgement holds the nonce.
    fn signed_at_nonce(&self, key: Address, chain_id: u64, nonce: u64) -> Result<AtNonce, Error>;

    /// The block 0 this log last recorded for chain `chain_id`, from entries checked on
    /// the way: a key's chain-reset entry names the new one, a signature made online the
    /// one its node reported ([`EntryBody::genesis`]); the newest of them decides. `None`
    /// when no entry recorded one. The default records nothing.
    fn chain_genesis(&self, chain_id: u64) -> Result<Option<B256>, Error> {
        let _ = chain_id;
        Ok(None)
    }

    /// What each key that signed on chain `chain_id` signed there since its last record
    /// of a reset of it: its newest `per_key` signature entries, checked, newest first
    /// (what a reset of the chain must be consistent with: a node that knows any of them
    /// is on the chain they were signed for). The default knows none.
    fn signed_on_chain(&self, chain_id: u64, per_key: usize) -> Result<Vec<EntryBody>, Error> {
        let _ = (chain_id, per_key);
        Ok(Vec::new())
    }

    /// Claims the credit `claim` names (a side-chain log that completes a swap) for its
    /// claimant, a swap flow's txId: `Ok(None)` when it is the claimant's now (claimed
    /// now, or before by the same claimant), `Ok(Some(other))` when another claimant
    /// holds it. One claim per credit across every journal and process that signs for
    /// the log's keys, decided in one transaction of the store (a unique key), so two
    /// swaps of one amount never complete on one credit.
    fn claim_credit(&self, claim: &CreditClaim) -> Result<Option<String>, Error>;

    /// Releases `claim` if its claimant holds it (the chain took the credit back: a
    /// reorganisation removed its block).
    fn release_credit(&self, claim: &CreditClaim) -> Result<(), Error>;

    /// Housekeeping that must not delay a signature (e.g. compacting the storage),
    /// called by long runs between signatures, after a signature's bytes have left. The
    /// default does nothing.
    fn tidy(&self) {}

    /// Appends the entries of `group` in order as one commit (a batch's signatures):
    /// each made by its `make` from the head the one before it left, each checked as
    /// [`SigningLog::append`] checks one (the kept checkpoint, the nonce guard against
    /// the log and the group's earlier entries, its limit counting the group's earlier
    /// entries too), and either every entry is on disk when this returns or none is
    /// (one refusal refuses the group). An entry of a transaction the log holds already
    /// (the very same signature, made again after a crash) is skipped: recorded once,
    /// counted once. Returns the new head; an empty group appends nothing.
    ///
    /// The default appends the entries one by one, each durable on its own but not
    /// together: a store that can commit several entries at once overrides it, so a
    /// batch pays one durable write instead of one per signature.
    fn append_group(&self, group: &mut [GroupEntry<'_>]) -> Result<Checkpoint, Error> {
        let mut last = None;
        for entry in group.iter_mut() {
            last = Some(self.append(entry.key, entry.limit.as_ref(), &mut *entry.make)?);
        }
        match last {
            Some(head) => Ok(head),
            None => Ok(self.head(Address::ZERO)?.checkpoint),
        }
    }
}

/// A claim of a swap's credit ([`SigningLog::claim_credit`]): the side chain's names for
/// the credit, who claims it, and the key whose swap it completes. Claims are not
/// signed by the key (following a swap unlocks none): they keep honest processes from
/// completing two swaps on one credit, not a writer of the store's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditClaim {
    /// The key the swap sends from (and the credit pays).
    pub key: Address,
    /// The side chain.
    pub chain_id: u64,
    /// The side chain's block 0: a chain reset under the same chain id is another chain,
    /// whose credits (the same transactions again, it may be) are claimed anew.
    pub genesis: B256,
    /// The transaction of the credit.
    pub tx_hash: B256,
    /// The credit's log index in its block.
    pub log_index: u64,
    /// The swap flow's txId.
    pub claimant: String,
}

/// One entry of a group appended together ([`SigningLog::append_group`]).
pub struct GroupEntry<'a> {
    /// The key that signs it.
    pub key: Address,
    /// The windowed limit it counts against, if any (checked inside the append, with
    /// the group's earlier entries counted).
    pub limit: Option<WindowLimit>,
    /// Builds and signs the entry from the head it follows.
    pub make: Box<dyn FnMut(Head) -> Result<Entry, Error> + Send + 'a>,
}

impl fmt::Debug for GroupEntry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupEntry")
            .field("key", &self.key)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// The head an entry is made from: the checkpoint it chains to, and the time and
/// running totals of the signing key's newest entry (a new entry of that key is never
/// older, so a clock stepped backwards cannot push its entries out of a window; and it
/// carries those totals on, [`Running::after`]). Only the key's own entries set them:
/// a stranger's entry dated in the future must not move a window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// Count and hash of the last entry.
    pub checkpoint: Checkpoint,
    /// The signing key's newest entry's time; 0 when it has none.
    pub time: u64,
    /// The signing key's newest entry's running totals, checked by the store; `None`
    /// when it has none (the new entry starts a run).
    pub running: Option<Running>,
}

impl Head {
    /// The head of an empty log.
    pub const EMPTY: Head = Head {
        checkpoint: Checkpoint::EMPTY,
        time: 0,
        running: None,
    };
}

/// Which entries a windowed limit adds up: see [`SigningLog::window_total`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowQuery {
    /// The signing key.
    pub key: Address,
    /// The chain.
    pub chain_id: u64,
    /// The token contract.
    pub contract: Address,
    /// The window's length, in seconds.
    pub per: u64,
    /// The window's end, in Unix seconds (the store may move it forward, never back):
    /// this machine's clock, but never past [`WindowQuery::ceiling`].
    pub now: u64,
    /// The latest time a second witness vouches for, when one was asked: the chain's
    /// newest block time plus [`crate::limits::CLOCK_TOLERANCE`]. A clock set ahead
    /// cannot end a window past it, so it cannot push what was signed out of the
    /// window; an idle chain's old block only makes the window reach further back.
    pub ceiling: Option<u64>,
    /// This machine's clock when the window was read, for messages (`now` differs from
    /// it when the ceiling held it back).
    pub clock: u64,
}

impl WindowQuery {
    /// A note for a refusal when the ceiling held this machine's clock back: both times,
    /// so a clock far ahead of the chain is named.
    fn clock_note(&self) -> String {
        match self.ceiling {
            Some(ceiling) if self.clock > ceiling => format!(
                ", the window ending at {ceiling} (the chain's newest block time, or the \
                 platform's clock where no node is known, and a tolerance), not at this \
                 machine's clock, {} ({} s ahead of it)",
                self.clock,
                self.clock - ceiling
            ),
            _ => String::new(),
        }
    }

    /// Whether an entry body is one this query adds up (any time).
    pub fn counts(&self, body: &EntryBody) -> bool {
        body.key == self.key && body.chain_id == self.chain_id && body.to == self.contract
    }
}

/// What the signing log says about a windowed limit: the query that was totalled, its
/// total, and the window's start as the log fixed it (never earlier than its newest
/// trusted entry allows: time does not go backwards for a window).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spent {
    /// What was added up.
    pub query: WindowQuery,
    /// The total, in base units.
    pub total: U256,
    /// The window's start, in Unix seconds.
    pub since: u64,
}

/// A windowed limit a signature must stay within: checked by the verifier against the
/// total read before approval, and again by [`SigningLog::append`] inside
/// the transaction that appends the entry, so concurrent signers cannot pass it
/// together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowLimit {
    /// Which entries count (its `now` is set to the entry's time when appending).
    pub query: WindowQuery,
    /// The most the window may hold, in base units.
    pub max: U256,
    /// What this signature adds, in base units.
    pub amount: U256,
    /// The token, for messages.
    pub token: Token,
}

impl WindowLimit {
    /// The same limit with its window ending at `now` (this machine's clock), or at the
    /// query's ceiling if that is earlier.
    pub fn at(&self, now: u64) -> WindowLimit {
        let mut limit = self.clone();
        limit.query.clock = now;
        limit.query.now = self.query.ceiling.map_or(now, |c| now.min(c));
        limit
    }

    /// Refuses when `total` (what the window already holds) plus this signature's
    /// amount would cross the limit.
    pub fn check(&self, total: U256) -> Result<(), Error> {
        if total.saturating_add(self.amount) > self.max {
            return Err(Error::Limit {
                limit: format!(
                    "{} per {}{}",
                    self.token.units(self.max),
                    Window(self.query.per),
                    self.query.clock_note()
                ),
                total: self.token.units(total),
                attempted: self.token.units(self.amount),
            });
        }
        Ok(())
    }
}

/// An entry's hash: keccak256 of its body's bytes.
pub fn entry_hash(body: &str) -> B256 {
    keccak256(body.as_bytes())
}

/// Seconds since the Unix epoch, now: the clock the CLI passes to [`sign_and_log`] and
/// the limits (tests pass their own).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What a call moves as the log records it: its function's signature, its arguments
/// as text, and everything it moves ([`Effects::total`]); `None` amount for a call
/// without a model.
pub(crate) struct CallFacts {
    pub function: Option<String>,
    pub args: BTreeMap<String, String>,
    pub amount: Option<U256>,
}

pub(crate) fn call_facts(data: &[u8]) -> CallFacts {
    match calldata::classify(data) {
        Decoded::Call(call) => CallFacts {
            function: Some(call.function.signature.to_owned()),
            args: call
                .args
                .iter()
                .map(|(p, v)| (p.name.to_owned(), v.to_string()))
                .collect(),
            amount: Effects::of_call(&call).total(),
        },
        _ => CallFacts {
            function: None,
            args: BTreeMap::new(),
            amount: None,
        },
    }
}

/// The entry of `body`: its text and hash, not signed yet.
pub(crate) fn unsigned(body: &EntryBody) -> Result<Entry, Error> {
    let text = serde_json::to_string(body).map_err(|e| Error::Refused(e.to_string()))?;
    Ok(Entry {
        seq: body.seq,
        hash: keccak256(text.as_bytes()),
        body: text,
        sig: alloy_primitives::Bytes::new(),
    })
}

/// The entry for `body`: its text, hash, and `signer`'s signature over the hash.
pub(crate) fn seal(body: &EntryBody, signer: &PrivateKeySigner) -> Result<Entry, Error> {
    let mut entry = unsigned(body)?;
    let sig = signer
        .sign_message_sync(entry.hash.as_slice())
        .map_err(Error::Signer)?;
    entry.sig = sig.as_bytes().to_vec().into();
    Ok(entry)
}

/// Records in `log`, signed by `signer`, that chain `chain_id` was reset and its block
/// 0 is now `genesis`: from this entry on, the key's earlier signatures on that chain no
/// longer hold their nonces (the chain they were for is gone), so its nonces can be used
/// again on the new chain. Only the key can write this, as every entry: a journal cannot
/// free a nonce the log holds.
pub fn log_chain_reset(
    log: &dyn SigningLog,
    signer: &PrivateKeySigner,
    chain_id: u64,
    genesis: B256,
    time: u64,
) -> Result<Checkpoint, Error> {
    log.append(signer.address(), None, &mut |head| {
        let mut body = EntryBody {
            chain_reset: Some(genesis),
            ..record(
                head.checkpoint,
                signer.address(),
                time.max(head.time),
                chain_id,
            )
        };
        body.running = Some(Running::after(head.running.as_ref(), &body));
        seal(&body, signer)
    })
}

/// An entry that signs no transaction (a chain reset, an acknowledgement) by `key` at
/// `time` on `chain_id`, following `head`: no call, nonce 0, to and hashes zero.
fn record(head: Checkpoint, key: Address, time: u64, chain_id: u64) -> EntryBody {
    EntryBody {
        v: ENTRY_VERSION,
        seq: head.count + 1,
        prev: head.head,
        time,
        key,
        chain_id,
        nonce: 0,
        to: Address::ZERO,
        function: None,
        args: BTreeMap::new(),
        token: None,
        amount: None,
        value: U256::ZERO,
        tx_hash: B256::ZERO,
        signing_hash: None,
        replaces: None,
        chain_reset: None,
        genesis: None,
        acknowledges: None,
        carried: Vec::new(),
        watermarks: Vec::new(),
        running: None,
    }
}

/// The body of an acknowledgement by `key` at `time`, following `head` (see
/// [`EntryBody::acknowledges`]): the checkpoint `kept` beside the log then, the
/// spending it `carried` over and the `watermarks` it carries forward.
pub fn acknowledgement(
    head: Checkpoint,
    key: Address,
    time: u64,
    kept: Checkpoint,
    carried: Vec<Carried>,
    watermarks: Vec<Watermark>,
) -> EntryBody {
    // Never dated before what it carries: a walk back that stops before it could not
    // reach a carried amount still inside a window.
    let time = carried.iter().map(|c| c.time).fold(time, u64::max);
    EntryBody {
        acknowledges: Some(kept),
        carried,
        watermarks,
        ..record(head, key, time, 0)
    }
}

/// `body` signed by `signer` (EIP-191 over its hash), as every entry is: for an entry
/// the caller made itself ([`acknowledgement`]).
pub fn seal_entry(body: &EntryBody, signer: &PrivateKeySigner) -> Result<Entry, Error> {
    seal(body, signer)
}

/// What a log knows of one nonce of one key on one chain
/// ([`SigningLog::signed_at_nonce`]): what [`nonce_free`] decides on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AtNonce {
    /// The checked bodies of the entries in which the key signed the nonce (since its
    /// last record of a reset of the chain), oldest first.
    pub entries: Vec<EntryBody>,
    /// The key's watermark on the chain, when it holds the nonce ([`Watermark::holds`]):
    /// the nonce was signed, whether or not one of `entries` records it. `None` when no
    /// watermark the log keeps or carries holds it.
    pub watermark: Option<Watermark>,
}

/// One nonce, one signature: refuses to sign the transaction with `signing_hash` as
/// `key`'s `nonce` on `chain_id` when `prior` (what the log knows of that nonce, from
/// [`SigningLog::signed_at_nonce`]) holds a different transaction, or holds the nonce
/// by a watermark without an entry of this very transaction (the entry was lost with a
/// log an acknowledgement accepted, or its row was edited out of sight). The same
/// transaction again is allowed when its entry is there: signing is deterministic, so
/// it yields the same bytes (a flow that stopped between its signature and its journal
/// signs again what it verified).
/// A deliberate replacement names the transaction it replaces (`replaces`): allowed
/// when that is one of `prior`'s entries, or when a watermark holds the nonce and the
/// log has no entry of it (the replacement's entry then records the hash it replaces,
/// which the log can no longer check). That one signature more is recorded with the
/// replaced hash.
/// Called before the key is unlocked ([`crate::limits::read_spent`]) and again inside
/// the append, where no other signer can slip in between.
pub fn nonce_free(
    prior: &AtNonce,
    key: Address,
    chain_id: u64,
    nonce: u64,
    signing_hash: B256,
    replaces: Option<B256>,
) -> Result<(), Error> {
    let entries = || {
        prior
            .entries
            .iter()
            .filter(move |b| b.key == key && b.chain_id == chain_id && b.nonce == nonce)
    };
    if let Some(replaced) = replaces
        && (entries().any(|b| b.tx_hash == replaced)
            || (entries().next().is_none() && prior.watermark.is_some()))
    {
        return Ok(());
    }
    if let Some(b) = entries().find(|b| b.signing_hash != Some(signing_hash)) {
        return Err(Error::NonceSigned {
            key,
            chain_id,
            nonce,
            tx_hash: b.tx_hash,
            seq: b.seq,
        });
    }
    match &prior.watermark {
        Some(w) if entries().next().is_none() => Err(Error::NonceWatermark {
            key,
            chain_id,
            nonce,
            watermark: w.nonce,
        }),
        _ => Ok(()),
    }
}

/// The entry of `log` that recorded `tx` itself (its signing hash at its key, chain and
/// nonce), if `tx` was signed into it: signing it again yields the same bytes. What a flow
/// that stopped after its signature looks for to take it up without a second one.
pub fn logged_signature(log: &dyn SigningLog, tx: &RawTx) -> Result<Option<EntryBody>, Error> {
    let hash = signing_hash(tx);
    Ok(log
        .signed_at_nonce(tx.from, tx.chain_id, tx.nonce)?
        .entries
        .into_iter()
        .find(|b| b.signing_hash == Some(hash)))
}

/// The entry of `prior` that recorded this very transaction (same key, chain, nonce and
/// signing hash), if one did: signing it again adds nothing to the log or a window.
pub fn same_signature<'a>(prior: &'a [EntryBody], body: &EntryBody) -> Option<&'a EntryBody> {
    prior.iter().find(|b| {
        b.key == body.key
            && b.chain_id == body.chain_id
            && b.nonce == body.nonce
            && b.tx_hash == body.tx_hash
    })
}

/// U256 as a decimal string: what an auditor reads without converting.
mod decimal {
    use alloy_primitives::U256;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub fn serialize<S: Serializer>(v: &U256, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<U256, D::Error> {
        let text = String::deserialize(d)?;
        U256::from_str_radix(&text, 10).map_err(D::Error::custom)
    }
}

/// `Option<U256>` as a decimal string or null.
mod decimal_opt {
    use alloy_primitives::U256;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub fn serialize<S: Serializer>(v: &Option<U256>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&v.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<U256>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| U256::from_str_radix(&t, 10).map_err(D::Error::custom))
            .transpose()
    }
}
