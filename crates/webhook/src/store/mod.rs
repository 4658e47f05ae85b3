//! Event stores: where the listener puts a delivery before it answers 200, and where the
//! hand-off, `webhook events` and the self-healing check read it back.
//!
//! [`EventStore`] is the seam; two stores implement it:
//!
//! | store | selected by | for |
//! |---|---|---|
//! | [`sqlite::SqliteStore`] | `sqlite:PATH` or a plain path (default) | one listener; embedded, nothing to run |
//! | `postgres::PgStore` (feature `postgres`) | `postgres://...` | two or more replicas behind a load balancer |
//!
//! # The contract every store keeps
//!
//! - **Durable before 200**: [`EventStore::insert`] returns only after the row is
//!   committed to stable storage (SQLite: WAL + `synchronous=FULL`; PostgreSQL:
//!   `synchronous_commit` as the server has it, on by default).
//! - **Once per event**: a verified event is unique by (subscriptionId, sequenceNumber),
//!   across every listener that shares the store; a retried delivery is a
//!   [`Outcome::Duplicate`]. Unverified rows are unique by body hash only, so a forgery
//!   never shadows the genuine event.
//! - **Bounded strangers**: unverified events and quarantined bodies are kept only up to
//!   [`Limits`] (rows and bytes), counted only for rows actually added (a retry or a
//!   duplicate spends nothing); beyond it a row keeps the hash, the length and the
//!   signature header but not the body. Every string field of such a row is cut to
//!   [`STRANGER_FIELD_MAX`] bytes, and [`EventStore::prune`] deletes the rows past the
//!   [`Retention`] (age, rows), so unsigned posts cannot fill the disk. Events whose
//!   subscription has no key yet keep their bodies under a quota of their own, so a
//!   genuine delivery that raced `webhook create` can still be re-verified.
//! - **Leased hand-off**: [`EventStore::claim`] hands a pending event to one claimant at
//!   a time until its lease expires (renewed by [`EventStore::renew`] while it runs), the
//!   events of one subscription one at a time and in order; [`EventStore::start_attempt`] counts an attempt
//!   durably before it runs, and [`EventStore::record_handoff`] ends the lease. A claimant
//!   that dies mid-hand-off loses the event to another after the lease, which sees the
//!   attempt counted and so knows its run is a re-run.

use std::future::Future;
use std::pin::Pin;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Error;
use crate::keys::SigningKey;

#[cfg(feature = "postgres")]
pub mod postgres;
mod spec;
pub mod sqlite;

pub use spec::StoreSpec;
pub use sqlite::SqliteStore;

/// Bit of the exec sink in `handed_off`.
pub const SINK_EXEC: u8 = 1;
/// Bit of the forward sink in `handed_off`.
pub const SINK_FORWARD: u8 = 2;

/// What a store method returns: boxed, so `dyn EventStore` works.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

/// Milliseconds since the Unix epoch, for the store's timestamps.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The outcome of checking `x-signature`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verification {
    /// The signature matched the subscription's stored key.
    Valid,
    /// No `x-signature` header.
    Missing,
    /// A signature that does not match the stored key: forged or corrupted.
    Mismatch,
    /// No signing key is stored for the subscription.
    NoKey,
}

impl Verification {
    /// The word stored in the `verification` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Verification::Valid => "valid",
            Verification::Missing => "missing signature",
            Verification::Mismatch => "signature mismatch",
            Verification::NoKey => "no signing key for subscription",
        }
    }
}

/// A delivery as the listener classified it, ready to store.
#[derive(Clone, Debug)]
pub struct Incoming {
    /// When it arrived.
    pub received_at_ms: i64,
    /// The raw body, byte for byte.
    pub body: Vec<u8>,
    /// SHA-256 of the body.
    pub body_sha256: [u8; 32],
    /// `x-signature` as received.
    pub signature: Option<String>,
    /// Event or quarantine.
    pub kind: IncomingKind,
}

impl Incoming {
    /// Whether the body is kept whatever the limits: only verified events are.
    pub fn is_verified(&self) -> bool {
        matches!(
            self.kind,
            IncomingKind::Event {
                verification: Verification::Valid,
                ..
            }
        )
    }
}

/// Where a delivery goes.
#[derive(Clone, Debug)]
pub enum IncomingKind {
    /// A well-formed event.
    Event {
        /// `subscriptionId`, as a string.
        subscription_id: String,
        /// `sequenceNumber`, as a decimal string.
        sequence_number: String,
        /// `eventType`, if present.
        event_type: Option<String>,
        /// The signature check.
        verification: Verification,
    },
    /// Not an event: kept for inspection.
    Quarantine {
        /// Why it was not accepted as an event.
        reason: String,
    },
}

/// What storing a delivery did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// A new event row.
    Stored(i64),
    /// An event already stored (a retried delivery): nothing written.
    Duplicate,
    /// A new quarantine row.
    Quarantined(i64),
    /// A body already in quarantine: nothing written.
    QuarantineDuplicate,
}

/// How much of what strangers send is kept: unverified events and quarantined bodies.
/// Past either bound a row keeps its hash, length and (bounded, see
/// [`STRANGER_FIELD_MAX`]) signature header, not its body.
///
/// Events of a subscription whose signing key is not known yet ("no signing key") have a
/// quota of their own: they may be genuine deliveries that raced `webhook create`'s
/// writing of the key, and only a kept body can be re-verified once the key is there, so
/// forgeries (signature mismatch, none) filling their quota must not cost them theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Unverified event rows (signature missing or wrong) that keep their body.
    pub unverified_rows: u64,
    /// Bytes of unverified bodies kept.
    pub unverified_bytes: u64,
    /// Quarantine rows that keep their body.
    pub quarantine_rows: u64,
    /// Bytes of quarantined bodies kept.
    pub quarantine_bytes: u64,
    /// "No signing key" event rows that keep their body, for re-verification.
    pub no_key_rows: u64,
    /// Bytes of "no signing key" bodies kept.
    pub no_key_bytes: u64,
}

impl Default for Limits {
    /// 1,000 rows or 16 MiB each: enough to see what an attacker or a misconfigured
    /// sender posts, far from filling a disk.
    fn default() -> Self {
        Limits {
            unverified_rows: 1_000,
            unverified_bytes: 16 * 1024 * 1024,
            quarantine_rows: 1_000,
            quarantine_bytes: 16 * 1024 * 1024,
            no_key_rows: 1_000,
            no_key_bytes: 16 * 1024 * 1024,
        }
    }
}

/// The most bytes a stranger's string field is stored with (an unverified event's
/// `eventType`, the `x-signature` header of an unverified or quarantined delivery):
/// longer ones are cut at a character boundary and end in a marker saying how much was
/// cut ([`bounded`]). A genuine `x-signature` is 64 hex digits, and event types are
/// short names, so only junk is ever cut. Ids are bounded at 128 characters by the
/// parser already.
pub const STRANGER_FIELD_MAX: usize = 256;

/// `text` within [`STRANGER_FIELD_MAX`] bytes: as it is, or cut with `…[+N bytes]`.
pub fn bounded(text: String) -> String {
    if text.len() <= STRANGER_FIELD_MAX {
        return text;
    }
    // The marker's own room, for any cut of up to 20 digits.
    let mut end = STRANGER_FIELD_MAX - 32;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[+{} bytes]", &text[..end], text.len() - end)
}

/// How long and how many strangers' rows (unverified events, quarantine) are kept:
/// past either bound the oldest are deleted by [`EventStore::prune`], which the listener
/// runs at start and every minute. With [`Limits`] and [`STRANGER_FIELD_MAX`] this
/// bounds what strangers can make the store hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Rows older than this are deleted.
    pub max_age: std::time::Duration,
    /// Past this many rows per table (unverified events; quarantine), the oldest are
    /// deleted.
    pub max_rows: u64,
}

impl Default for Retention {
    /// 7 days (time to look at what was posted), 100,000 rows per table (about 50 MB of
    /// rows without bodies at the field bounds).
    fn default() -> Self {
        Retention {
            max_age: std::time::Duration::from_secs(7 * 24 * 3600),
            max_rows: 100_000,
        }
    }
}

/// Rows [`EventStore::prune`] deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pruned {
    /// Unverified event rows.
    pub unverified: u64,
    /// Quarantine rows.
    pub quarantined: u64,
}

/// Running totals of kept stranger bodies, checked against [`Limits`] per insert.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Kept {
    pub unverified_rows: u64,
    pub unverified_bytes: u64,
    pub quarantine_rows: u64,
    pub quarantine_bytes: u64,
    pub no_key_rows: u64,
    pub no_key_bytes: u64,
}

impl Kept {
    /// The counters and bounds of `incoming`'s kind; `None`: verified, always kept.
    fn bucket<'a>(
        &'a mut self,
        limits: &Limits,
        kind: &IncomingKind,
    ) -> Option<(&'a mut u64, &'a mut u64, u64, u64)> {
        match kind {
            IncomingKind::Event {
                verification: Verification::Valid,
                ..
            } => None,
            IncomingKind::Event {
                verification: Verification::NoKey,
                ..
            } => Some((
                &mut self.no_key_rows,
                &mut self.no_key_bytes,
                limits.no_key_rows,
                limits.no_key_bytes,
            )),
            IncomingKind::Event { .. } => Some((
                &mut self.unverified_rows,
                &mut self.unverified_bytes,
                limits.unverified_rows,
                limits.unverified_bytes,
            )),
            IncomingKind::Quarantine { .. } => Some((
                &mut self.quarantine_rows,
                &mut self.quarantine_bytes,
                limits.quarantine_rows,
                limits.quarantine_bytes,
            )),
        }
    }

    /// Whether `incoming`'s body may be kept; if so, counts it. A store that then finds
    /// the delivery stored already gives it back ([`Kept::refund`]).
    pub(crate) fn admit(&mut self, limits: &Limits, incoming: &Incoming) -> bool {
        let len = incoming.body.len() as u64;
        let Some((rows, bytes, max_rows, max_bytes)) = self.bucket(limits, &incoming.kind) else {
            return true;
        };
        if *rows < max_rows && bytes.saturating_add(len) <= max_bytes {
            *rows += 1;
            *bytes += len;
            true
        } else {
            false
        }
    }

    /// `recount` (taken from the store while deliveries kept arriving) plus what was
    /// admitted since `before` (the totals when the recount began): admissions that raced
    /// the recount are counted, some maybe twice, so the limits err on the side of
    /// keeping less, never more.
    pub(crate) fn rebase(&mut self, before: Kept, recount: Kept) {
        let f = |now: u64, then: u64, counted: u64| counted + now.saturating_sub(then);
        *self = Kept {
            unverified_rows: f(
                self.unverified_rows,
                before.unverified_rows,
                recount.unverified_rows,
            ),
            unverified_bytes: f(
                self.unverified_bytes,
                before.unverified_bytes,
                recount.unverified_bytes,
            ),
            quarantine_rows: f(
                self.quarantine_rows,
                before.quarantine_rows,
                recount.quarantine_rows,
            ),
            quarantine_bytes: f(
                self.quarantine_bytes,
                before.quarantine_bytes,
                recount.quarantine_bytes,
            ),
            no_key_rows: f(self.no_key_rows, before.no_key_rows, recount.no_key_rows),
            no_key_bytes: f(self.no_key_bytes, before.no_key_bytes, recount.no_key_bytes),
        };
    }

    /// Gives back what [`Kept::admit`] counted for a delivery that added no row (a
    /// duplicate or a retry): only bodies actually kept spend the limits.
    pub(crate) fn refund(&mut self, limits: &Limits, kind: &IncomingKind, len: usize) {
        let len = len as u64;
        if let Some((rows, bytes, _, _)) = self.bucket(limits, kind) {
            *rows = rows.saturating_sub(1);
            *bytes = bytes.saturating_sub(len);
        }
    }
}

/// An event row.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredEvent {
    /// Row id: increasing in arrival order (per store).
    pub id: i64,
    /// When it arrived, Unix milliseconds.
    pub received_at_ms: i64,
    /// `subscriptionId`.
    pub subscription_id: String,
    /// `sequenceNumber`.
    pub sequence_number: String,
    /// `eventType`.
    pub event_type: Option<String>,
    /// Whether the signature matched a stored key.
    pub verified: bool,
    /// The signature check in words.
    pub verification: String,
    /// Sinks that took it (bit 1 exec, bit 2 forward).
    pub handed_off: u8,
    /// Hand-off attempts started so far (counted before each runs, so one whose
    /// listener died mid-way counts too).
    pub attempts: i64,
    /// The last hand-off error.
    pub last_error: Option<String>,
    /// `x-signature` as received.
    pub signature: Option<String>,
    /// The body's length as received (the body itself may be dropped past [`Limits`]).
    pub body_len: i64,
    /// The body, byte for byte; empty when it was over [`Limits`].
    #[serde(skip)]
    pub body: Vec<u8>,
}

/// A quarantined delivery.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quarantined {
    /// Row id.
    pub id: i64,
    /// When it arrived, Unix milliseconds.
    pub received_at_ms: i64,
    /// Why it is here.
    pub reason: String,
    /// `x-signature` as received.
    pub signature: Option<String>,
    /// The body's length as received.
    pub body_len: i64,
    /// The body, byte for byte; empty when it was over [`Limits`].
    #[serde(skip)]
    pub body: Vec<u8>,
}

/// A stretch of time in which a subscription delivered nothing because the platform had
/// removed or deactivated it: what an operator must fetch some other way.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Gap {
    /// Row id (0 before it is stored).
    pub id: i64,
    /// The subscription that stopped delivering.
    pub subscription_id: String,
    /// The subscription that delivers now: the same one re-activated, or a new one.
    pub replaced_by: String,
    /// `removed` or `inactive`.
    pub cause: String,
    /// Last delivery stored before the gap (Unix ms), or when the subscription was
    /// created or last seen healthy if it never delivered.
    pub from_ms: i64,
    /// When deliveries were restored (Unix ms).
    pub to_ms: i64,
    /// The last sequence number stored before the gap, if any.
    pub last_sequence: Option<String>,
}

/// Counts over the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Event rows.
    pub events: i64,
    /// Of which verified.
    pub verified: i64,
    /// Quarantine rows.
    pub quarantined: i64,
    /// Gap rows.
    pub gaps: i64,
}

/// A request for pending hand-offs: verified events that lack one of `sinks`, are due,
/// and are not leased to another claimant.
#[derive(Clone, Debug)]
pub struct Claim {
    /// Who claims: unique per listener process.
    pub owner: String,
    /// The sink bits the claimant serves.
    pub sinks: u8,
    /// Now, Unix ms.
    pub now_ms: i64,
    /// How long the lease lasts unless renewed ([`EventStore::renew`]).
    pub lease_ms: i64,
    /// At most this many subscriptions.
    pub limit: usize,
    /// At most this many events of each (its oldest due ones, in order).
    pub per_subscription: usize,
    /// Subscriptions the claimant is handing on already: not claimed again (their
    /// events wait for its lane to end), so a claim leases only what starts at once.
    pub busy: Vec<String>,
}

/// A hand-off result to record; it ends the claimant's lease.
#[derive(Clone, Debug)]
pub struct HandoffRecord {
    /// The event.
    pub id: i64,
    /// The claimant whose lease this ends.
    pub owner: String,
    /// Sink bits that succeeded in this attempt.
    pub done: u8,
    /// The failure, when a sink failed.
    pub error: Option<String>,
    /// When to try again (ignored when nothing failed).
    pub next_attempt_ms: i64,
}

/// One durable store of deliveries; see the module doc for the contract.
pub trait EventStore: Send + Sync {
    /// Where it is, for messages (never a password).
    fn location(&self) -> &str;

    /// Stores a delivery; returns once it is committed (durable), or the error.
    fn insert(&self, incoming: Incoming) -> StoreFuture<'_, Outcome>;

    /// Leases pending verified events to `claim.owner`, oldest first: the oldest due
    /// events (up to `claim.per_subscription`) of the subscriptions none of whose due
    /// events is leased to another claimant (up to `claim.limit`). So the events of one
    /// subscription are handed on by one claimant at a time, which runs them in stored
    /// order, across every listener on the store (a failed event waiting for its retry
    /// does not hold the later ones back).
    fn claim(&self, claim: Claim) -> StoreFuture<'_, Vec<StoredEvent>>;

    /// Extends `owner`'s leases on events `ids` to `until_ms`: the heartbeat of a
    /// claimant still at work, so a lease can be short (a dead claimant's events are
    /// taken over within seconds) however long its attempts run.
    fn renew(&self, owner: &str, ids: Vec<i64>, until_ms: i64) -> StoreFuture<'_, ()>;

    /// Records that `owner` starts a hand-off attempt of event `id`, durably and before
    /// anything runs, and returns its number (1 for the first attempt anywhere). A claimant
    /// that dies mid-attempt never records its end, so only this record lets the next one
    /// tell a re-run from a first run. `None` when `owner` no longer holds the lease:
    /// another claimant has the event, and nothing may run.
    fn start_attempt(&self, id: i64, owner: &str) -> StoreFuture<'_, Option<i64>>;

    /// Records how a hand-off attempt ended (the attempt itself was counted by
    /// [`EventStore::start_attempt`]) and ends its lease.
    fn record_handoff(&self, record: HandoffRecord) -> StoreFuture<'_, ()>;

    /// Ends every lease `owner` holds (a listener that stops): its claimed events need not
    /// wait for the leases to expire to be taken by the next start or another replica.
    fn release(&self, owner: &str) -> StoreFuture<'_, ()>;

    /// The earliest time a pending event for `sinks` is due, if any: when to look again.
    fn next_due(&self, sinks: u8) -> StoreFuture<'_, Option<i64>>;

    /// Events with `id > after_id`, oldest first, at most `limit`.
    fn events(&self, after_id: i64, limit: usize) -> StoreFuture<'_, Vec<StoredEvent>>;

    /// Quarantined deliveries with `id > after_id`, oldest first, at most `limit`.
    fn quarantined(&self, after_id: i64, limit: usize) -> StoreFuture<'_, Vec<Quarantined>>;

    /// Gaps with `id > after_id`, oldest first, at most `limit`.
    fn gaps(&self, after_id: i64, limit: usize) -> StoreFuture<'_, Vec<Gap>>;

    /// Stores a gap; returns its id.
    fn record_gap(&self, gap: Gap) -> StoreFuture<'_, i64>;

    /// The newest stored verified event of a subscription: (received_at_ms, sequenceNumber).
    fn last_event(&self, subscription_id: &str) -> StoreFuture<'_, Option<(i64, String)>>;

    /// Row counts.
    fn counts(&self) -> StoreFuture<'_, Counts>;

    /// A setting shared by every listener on this store, set to `value` if it has none
    /// yet; returns the value in force (so replicas agree on a generated path).
    fn setting_or_insert(&self, key: &str, value: &str) -> StoreFuture<'_, String>;

    /// Re-checks the events of `subscription_id` stored as "no signing key" against `key`
    /// (a delivery that raced `webhook create`'s writing of the key file); those that
    /// verify become verified events, so they are handed on. Returns how many did.
    fn reverify(&self, subscription_id: &str, key: SigningKey) -> StoreFuture<'_, u64>;

    /// Deletes strangers' rows (unverified events, quarantine) past `retention`, oldest
    /// first; verified events are never deleted. What it frees of [`Limits`] can be
    /// spent again.
    fn prune(&self, retention: Retention) -> StoreFuture<'_, Pruned>;

    /// Commits what is queued and releases the store's connections and threads.
    fn close(&self) -> StoreFuture<'_, ()>;

    /// Write transactions committed through this handle so far, where the store counts
    /// them (SQLite: its one writer's commits; PostgreSQL: `None`). Shows that a burst
    /// of deliveries is grouped into few commits (the SQLite module doc).
    fn commits(&self) -> Option<u64> {
        None
    }
}

/// Whether `signature` is `key`'s over `body`; an empty body (not kept) never matches.
pub(crate) fn signature_matches(key: &SigningKey, body: &[u8], signature: &str) -> bool {
    !body.is_empty()
        && bridgectl_web3::signature::verify(key.expose_secret().as_bytes(), body, signature)
}

/// `postgres://user:secret@host/db` as `postgres://user:***@host/db`.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => "(an unparsable connection string)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stranger_fields_are_cut_at_a_character_boundary_with_a_marker() {
        let cases: [(String, Option<&str>); 4] = [
            ("BLOCK_PERIOD".into(), None),
            ("x".repeat(STRANGER_FIELD_MAX), None),
            ("x".repeat(STRANGER_FIELD_MAX + 1), Some("…[+33 bytes]")),
            // 3-byte characters: the cut may not split one.
            ("€".repeat(200), Some("…[+378 bytes]")),
        ];
        for (text, marker) in cases {
            let cut = bounded(text.clone());
            assert!(cut.len() <= STRANGER_FIELD_MAX, "{} bytes", cut.len());
            match marker {
                None => assert_eq!(cut, text),
                Some(m) => {
                    assert!(cut.ends_with(m), "{cut}");
                    let kept = cut.strip_suffix(m).expect("marker");
                    assert!(text.starts_with(kept));
                }
            }
        }
    }

    #[test]
    fn a_recount_is_rebased_on_what_was_admitted_meanwhile() {
        // 10 rows kept when the recount began, 3 more admitted while it ran; the store,
        // pruned, holds 4 (maybe counting some of the 3): 4 + 3, never fewer.
        let before = Kept {
            unverified_rows: 10,
            ..Kept::default()
        };
        let mut now = Kept {
            unverified_rows: 13,
            quarantine_rows: 2,
            ..Kept::default()
        };
        let recount = Kept {
            unverified_rows: 4,
            ..Kept::default()
        };
        now.rebase(before, recount);
        assert_eq!((now.unverified_rows, now.quarantine_rows), (7, 2));
        // A refund meanwhile (fewer than before) adds nothing.
        let mut refunded = Kept {
            unverified_rows: 9,
            ..Kept::default()
        };
        refunded.rebase(before, recount);
        assert_eq!(refunded.unverified_rows, 4);
    }

    #[test]
    fn limits_keep_verified_bodies_and_bound_the_rest() {
        let limits = Limits {
            unverified_rows: 2,
            unverified_bytes: 10,
            quarantine_rows: 1,
            quarantine_bytes: 100,
            ..Limits::default()
        };
        let event = |len: usize, verification| Incoming {
            received_at_ms: 0,
            body: vec![b'x'; len],
            body_sha256: [0; 32],
            signature: None,
            kind: IncomingKind::Event {
                subscription_id: "1".into(),
                sequence_number: "1".into(),
                event_type: None,
                verification,
            },
        };
        let mut kept = Kept::default();
        assert!(kept.admit(&limits, &event(1000, Verification::Valid)));
        assert!(kept.admit(&limits, &event(6, Verification::Missing)));
        assert!(
            !kept.admit(&limits, &event(6, Verification::Missing)),
            "bytes"
        );
        assert!(kept.admit(&limits, &event(4, Verification::Mismatch)));
        assert!(
            !kept.admit(&limits, &event(0, Verification::Mismatch)),
            "rows"
        );
        let q = Incoming {
            kind: IncomingKind::Quarantine { reason: "x".into() },
            ..event(5, Verification::Missing)
        };
        assert!(kept.admit(&limits, &q));
        assert!(!kept.admit(&limits, &q));
    }
}
