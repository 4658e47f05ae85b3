//! `webhook listen`'s line per delivery, printed as each is stored.
//!
//! The listener tells [`Printer::hook`] of a delivery once the store has answered, on
//! the request's task; the hook only queues it (a bounded queue, never waited on: when
//! stdout is slower than the deliveries, reports are dropped and counted, the events are
//! in the store all the same). A thread of its own writes the lines, so a stdout that
//! blocks never holds up an answer. Every field that came from the delivery is escaped
//! before it is printed, in JSON too, so a forged one can neither drive the terminal nor
//! fake a marker.
//!
//! Stopping never waits on stdout for longer than a bound ([`Printer::finish`],
//! [`line_within`]): a consumer that stopped reading (a stalled pipe, a full journald
//! socket) would otherwise hold SIGTERM off for as long as it stalls. What is still
//! queued then is dropped and counted. A line is written whole or not at all (one
//! write of under `PIPE_BUF` bytes to a pipe is atomic), so a reader never sees a torn
//! JSON line.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;

use bridgectl_webhook::listener::{Delivery, OnDelivery};
use bridgectl_webhook::store::{IncomingKind, Outcome, Verification};
use serde_json::json;

use crate::output;

/// Reports queued for the printing thread; past this many, reports are dropped.
const QUEUE: usize = 4096;

/// How many reports were queued, printed and dropped: what was not printed is the
/// dropped ones plus the queued ones never printed, whenever the thread was given up on.
#[derive(Default)]
struct Tally {
    queued: AtomicU64,
    printed: AtomicU64,
    dropped: AtomicU64,
}

impl Tally {
    fn not_printed(&self) -> u64 {
        let queued = self.queued.load(Ordering::Relaxed);
        let printed = self.printed.load(Ordering::Relaxed);
        self.dropped.load(Ordering::Relaxed) + queued.saturating_sub(printed)
    }
}

/// The printing thread and the queue to it.
pub struct Printer {
    queue: SyncSender<Option<Delivery>>,
    tally: Arc<Tally>,
    /// Closed (every sender gone) when the thread ends.
    ended: Receiver<()>,
}

impl Printer {
    /// Starts the thread that prints one line per delivery (JSON with `json`).
    pub fn start(json: bool) -> Printer {
        let (queue, rx) = sync_channel(QUEUE);
        let (end, ended) = sync_channel(0);
        let tally = Arc::new(Tally::default());
        let counts = tally.clone();
        // Detached: a thread blocked in a write to a stalled stdout must not hold up the
        // exit, and nothing joins it.
        std::thread::spawn(move || {
            print_all(&rx, json, &counts);
            drop(end);
        });
        Printer {
            queue,
            tally,
            ended,
        }
    }

    /// The listener's callback: queues the report, or counts it as dropped.
    pub fn hook(&self) -> OnDelivery {
        let queue = self.queue.clone();
        let tally = self.tally.clone();
        OnDelivery::new(move |delivery| {
            // Counted before it is sent, so the thread never prints more than was queued.
            tally.queued.fetch_add(1, Ordering::Relaxed);
            if queue.try_send(Some(delivery)).is_err() {
                tally.queued.fetch_sub(1, Ordering::Relaxed);
                tally.dropped.fetch_add(1, Ordering::Relaxed);
            }
        })
    }

    /// Prints what is queued for at most `bound`, then gives up on the thread (left
    /// blocked on stdout if it is, to die with the process), and returns how many
    /// reports were not printed: dropped while running, still queued, or stdout closed.
    pub fn finish(self, bound: Duration) -> u64 {
        // The end marker queues behind every report, so each line is out before the
        // summary that follows; a full queue means the thread is behind, and the bound
        // decides.
        let _ = self.queue.try_send(None);
        let _ = self.ended.recv_timeout(bound);
        self.tally.not_printed()
    }
}

fn print_all(rx: &Receiver<Option<Delivery>>, json: bool, tally: &Tally) {
    while let Ok(Some(delivery)) = rx.recv() {
        let text = if json {
            json!({ "delivery": delivery_json(&delivery) }).to_string()
        } else {
            delivery_line(&delivery)
        };
        // A closed stdout ends the printing, never the listener.
        if output::line(text).is_err() {
            return;
        }
        tally.printed.fetch_add(1, Ordering::Relaxed);
    }
}

/// Prints `text` as a line on stdout from a thread of its own and waits at most `bound`
/// for it: whether it was written. The last line of a command that must exit whatever
/// its reader does (the listener's summary); a line not written by then is dropped with
/// the process.
pub fn line_within(text: String, bound: Duration) -> bool {
    let (done, written) = sync_channel(1);
    std::thread::spawn(move || {
        let _ = done.send(output::line(text).is_ok());
    });
    written.recv_timeout(bound).unwrap_or(false)
}

/// Whether storing it found it stored already.
fn duplicate(d: &Delivery) -> bool {
    matches!(
        d.outcome,
        Some(Outcome::Duplicate | Outcome::QuarantineDuplicate)
    )
}

/// An event as both `webhook listen` (each delivery) and `webhook events` (each stored
/// event) print it, in the one order of the JSON fields: time, event type,
/// subscription, sequence, then `verified` or `UNVERIFIED (why)`. Every field but the
/// time came from the delivery and is escaped.
pub struct EventFields<'a> {
    /// When it was received, ms since the epoch.
    pub received_at_ms: i64,
    /// The event type it claims.
    pub event_type: Option<&'a str>,
    /// The webhook it claims to be for.
    pub subscription_id: &'a str,
    /// Its sequence number.
    pub sequence_number: &'a str,
    /// `None` when its signature checked out, else why not.
    pub unverified: Option<&'a str>,
}

impl std::fmt::Display for EventFields<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} sub={} seq={} ",
            output::time_ms(self.received_at_ms),
            output::untrusted(self.event_type.unwrap_or("?")),
            output::untrusted(self.subscription_id),
            output::untrusted(self.sequence_number),
        )?;
        match self.unverified {
            None => f.write_str("verified"),
            Some(why) => write!(f, "UNVERIFIED ({})", output::untrusted(why)),
        }
    }
}

/// One line of text: the [`EventFields`], then `duplicate` or `NOT STORED` when so.
pub fn delivery_line(d: &Delivery) -> String {
    let mut line = match &d.kind {
        IncomingKind::Event {
            subscription_id,
            sequence_number,
            event_type,
            verification,
        } => EventFields {
            received_at_ms: d.received_at_ms,
            event_type: event_type.as_deref(),
            subscription_id,
            sequence_number,
            unverified: (*verification != Verification::Valid).then(|| verification.as_str()),
        }
        .to_string(),
        IncomingKind::Quarantine { reason } => format!(
            "{} QUARANTINED ({})",
            output::time_ms(d.received_at_ms),
            output::untrusted(reason)
        ),
    };
    if duplicate(d) {
        line.push_str(" duplicate");
    }
    if d.outcome.is_none() {
        line.push_str(" NOT STORED (answered 500: the platform retries)");
    }
    line
}

/// The JSON object of a delivery (camelCase), its strings escaped as in text.
pub fn delivery_json(d: &Delivery) -> serde_json::Value {
    let mut v = match &d.kind {
        IncomingKind::Event {
            subscription_id,
            sequence_number,
            event_type,
            verification,
        } => json!({
            "eventType": event_type.as_deref().map(output::untrusted),
            "subscriptionId": output::untrusted(subscription_id),
            "sequenceNumber": output::untrusted(sequence_number),
            "verified": *verification == Verification::Valid,
            "verification": verification.as_str(),
        }),
        IncomingKind::Quarantine { reason } => json!({
            "quarantined": true,
            "reason": output::untrusted(reason),
        }),
    };
    v["receivedAt"] = json!(output::time_ms(d.received_at_ms));
    v["duplicate"] = json!(duplicate(d));
    v["stored"] = json!(d.outcome.is_some());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(verification: Verification, outcome: Option<Outcome>) -> Delivery {
        Delivery {
            received_at_ms: 1_700_000_000_123,
            kind: IncomingKind::Event {
                subscription_id: "41".into(),
                sequence_number: "7".into(),
                event_type: Some("BLOCK_PERIOD\u{1b}[2J verified\n".into()),
                verification,
            },
            outcome,
        }
    }

    #[test]
    fn a_line_names_the_delivery_with_its_markers_and_escapes_its_fields() {
        let stored = delivery_line(&event(Verification::Valid, Some(Outcome::Stored(1))));
        assert_eq!(
            stored,
            "2023-11-14T22:13:20.123Z BLOCK_PERIOD\\u{1b}[2J verified\\n sub=41 seq=7 verified"
        );
        let again = delivery_line(&event(Verification::Mismatch, Some(Outcome::Duplicate)));
        assert!(
            again.ends_with("sub=41 seq=7 UNVERIFIED (signature mismatch) duplicate"),
            "{again}"
        );
        let failed = delivery_line(&event(Verification::NoKey, None));
        assert!(failed.contains("NOT STORED"), "{failed}");
        let junk = delivery_line(&Delivery {
            received_at_ms: 0,
            kind: IncomingKind::Quarantine {
                reason: "not json: \u{202e}x".into(),
            },
            outcome: Some(Outcome::QuarantineDuplicate),
        });
        assert_eq!(
            junk,
            "1970-01-01T00:00:00.000Z QUARANTINED (not json: \\u{202e}x) duplicate"
        );
        for line in [&stored, &again, &failed, &junk] {
            assert!(!line.chars().any(char::is_control), "{line:?}");
        }
    }

    #[test]
    fn the_json_object_is_camel_case_and_escaped() {
        let v = delivery_json(&event(Verification::Missing, Some(Outcome::Duplicate)));
        assert_eq!(v["subscriptionId"], "41");
        assert_eq!(v["sequenceNumber"], "7");
        assert_eq!(v["verified"], false);
        assert_eq!(v["verification"], "missing signature");
        assert_eq!(v["duplicate"], true);
        assert_eq!(v["stored"], true);
        assert_eq!(v["receivedAt"], "2023-11-14T22:13:20.123Z");
        let text = v["eventType"].as_str().expect("eventType");
        assert!(!text.chars().any(char::is_control), "{text:?}");
    }
}
