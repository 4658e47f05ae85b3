//! `webhook events`: what the listener stored (events, the quarantine, the gaps `ensure`
//! found), once or followed until Ctrl-C.

use std::io::Write;
use std::time::Duration;

use bridgectl_webhook::store::{EventStore, Gap, Quarantined, StoreSpec, StoredEvent};
use clap::Args;
use serde_json::{Value, json};

use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::output;

// Arguments of `webhook events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Event store: sqlite:FILE or FILE, or postgres://...
    /// [default: $XDG_STATE_HOME/bridgectl/webhook-events.sqlite].
    #[arg(
        long,
        env = "BRIDGECTL_WEBHOOK_STORE",
        hide_env_values = true,
        value_name = "STORE"
    )]
    pub store: Option<String>,
    /// Keep printing new events as they arrive (JSON lines with --json), until Ctrl-C.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Show the quarantine (bodies that were not events) instead.
    #[arg(long, conflicts_with = "gaps")]
    pub quarantine: bool,
    /// Show only the gaps: stretches in which a removed or deactivated webhook delivered
    /// nothing, recorded when `ensure` restored it.
    #[arg(long)]
    pub gaps: bool,
    /// Only rows with an id above N.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub since: i64,
    /// At most N rows (without --follow).
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub limit: usize,
}

fn event_json(e: &StoredEvent) -> anyhow::Result<Value> {
    let mut v = serde_json::to_value(e)?;
    v["receivedAt"] = json!(output::time_ms(e.received_at_ms));
    v["event"] = serde_json::from_slice(&e.body).unwrap_or(Value::Null);
    Ok(v)
}

/// Our id, then the event's fields in the order `webhook listen` prints them.
fn event_line(e: &StoredEvent) -> String {
    // Every field but our own id and time came from the delivery (or a sink's answer):
    // escaped, so a forged one cannot rewrite the line, e.g. hide "UNVERIFIED".
    let mut line = format!(
        "{:<6} {}",
        e.id,
        crate::deliveries::EventFields {
            received_at_ms: e.received_at_ms,
            event_type: e.event_type.as_deref(),
            subscription_id: &e.subscription_id,
            sequence_number: &e.sequence_number,
            unverified: (!e.verified).then_some(e.verification.as_str()),
        }
    );
    if e.handed_off != 0 {
        line.push_str(&format!(" handed-off={}", e.handed_off));
    }
    if let Some(err) = &e.last_error {
        line.push_str(&format!(
            " last-error=\"{}\" attempts={}",
            output::untrusted(err),
            e.attempts
        ));
    }
    if e.body.is_empty() && e.body_len > 0 {
        line.push_str(&format!(" body-not-kept={}B", e.body_len));
    }
    line
}

/// A gap as `webhook events` and `webhook ensure` list it.
pub(super) fn gap_line(g: &Gap) -> String {
    format!(
        "GAP    sub={} {} from {} to {} (last seq {}), now delivered by {}",
        output::untrusted(&g.subscription_id),
        g.cause,
        output::time_ms(g.from_ms),
        output::time_ms(g.to_ms),
        output::untrusted(g.last_sequence.as_deref().unwrap_or("none")),
        output::untrusted(&g.replaced_by)
    )
}

fn quarantine_json(q: &Quarantined) -> anyhow::Result<Value> {
    let mut v = serde_json::to_value(q)?;
    v["receivedAt"] = json!(output::time_ms(q.received_at_ms));
    v["body"] = json!(String::from_utf8_lossy(&q.body));
    Ok(v)
}

/// Runs `bridgectl webhook events`.
pub(super) async fn run(global: &GlobalOpts, args: EventsArgs) -> anyhow::Result<()> {
    let spec = crate::paths::webhook_store(&args.store)?;
    if let StoreSpec::Sqlite(path) = &spec
        && !path.exists()
    {
        return Err(coded(
            Code::NotFound,
            format!(
                "no event store at {}: has `bridgectl webhook listen` run with this --store?",
                path.display()
            ),
        ));
    }
    let store = spec.open_existing().await?;
    let result = show_events(global, &args, store.as_ref()).await;
    store.close().await?;
    result
}

/// One row to show: its id, its JSON and its line.
type Row = (i64, Value, String);

async fn rows(
    store: &dyn EventStore,
    args: &EventsArgs,
    after: i64,
    limit: usize,
) -> anyhow::Result<Vec<Row>> {
    if args.quarantine {
        store
            .quarantined(after, limit)
            .await?
            .iter()
            .map(|q| {
                Ok((
                    q.id,
                    quarantine_json(q)?,
                    format!(
                        "{:<6} {} {}",
                        q.id,
                        output::time_ms(q.received_at_ms),
                        output::untrusted(&q.reason)
                    ),
                ))
            })
            .collect()
    } else if args.gaps {
        store
            .gaps(after, limit)
            .await?
            .iter()
            .map(|g| Ok((g.id, serde_json::to_value(g)?, gap_line(g))))
            .collect()
    } else {
        store
            .events(after, limit)
            .await?
            .iter()
            .map(|e| Ok((e.id, event_json(e)?, event_line(e))))
            .collect()
    }
}

async fn show_events(
    global: &GlobalOpts,
    args: &EventsArgs,
    store: &dyn EventStore,
) -> anyhow::Result<()> {
    let mut after = args.since;
    let stop = crate::shutdown::on_signal()?;
    tokio::pin!(stop);
    let mut first = true;
    loop {
        let limit = if args.follow { 1000 } else { args.limit };
        let rows = rows(store, args, after, limit).await?;
        if let Some(last) = rows.last() {
            after = last.0;
        }
        if !args.follow {
            if global.json {
                let values: Vec<Value> = rows.into_iter().map(|r| r.1).collect();
                return output::json(&values);
            }
            if rows.is_empty() && first {
                output::note("no events");
            }
            for r in rows {
                output::line(r.2)?;
            }
            // Gaps beside the events: what was missed matters as much as what came.
            if !args.quarantine && !args.gaps {
                for g in store.gaps(0, 1000).await? {
                    output::line(gap_line(&g))?;
                }
            }
            return Ok(());
        }
        first = false;
        for r in rows {
            if global.json {
                output::line(serde_json::to_string(&r.1)?)?;
            } else {
                output::line(r.2)?;
            }
        }
        let _ = std::io::stdout().flush();
        tokio::select! {
            _ = &mut stop => return Ok(()),
            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use bridgectl_webhook::listener::Delivery;
    use bridgectl_webhook::store::{IncomingKind, Outcome, StoredEvent, Verification};

    use super::event_line;

    /// `webhook events` prints an event's fields in the order `webhook listen` printed
    /// the delivery (and their JSON lists them): one vocabulary, one order.
    #[test]
    fn a_stored_event_reads_like_its_delivery() {
        for (verification, verified) in
            [(Verification::Valid, true), (Verification::Mismatch, false)]
        {
            let delivery = Delivery {
                received_at_ms: 1_700_000_000_123,
                kind: IncomingKind::Event {
                    subscription_id: "41".into(),
                    sequence_number: "7".into(),
                    event_type: Some("BLOCK_PERIOD".into()),
                    verification,
                },
                outcome: Some(Outcome::Stored(3)),
            };
            let stored = StoredEvent {
                id: 3,
                received_at_ms: 1_700_000_000_123,
                subscription_id: "41".into(),
                sequence_number: "7".into(),
                event_type: Some("BLOCK_PERIOD".into()),
                verified,
                verification: verification.as_str().into(),
                handed_off: 0,
                attempts: 0,
                last_error: None,
                signature: None,
                body_len: 0,
                body: Vec::new(),
            };
            let listened = crate::deliveries::delivery_line(&delivery);
            assert_eq!(event_line(&stored), format!("3      {listened}"));
        }
    }
}
