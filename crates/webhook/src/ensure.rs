//! Self-healing subscriptions: the platform removes a webhook whose listener failed too
//! often (spec §3, §6.2) and says nothing; this check notices and restores it.
//!
//! One [`check`] lists the platform's webhooks for every chain/network in the key file and
//! compares them with the entries that point at this listener (their `webhookUrl`):
//! - present and active: nothing to do;
//! - present but inactive: re-activated (`isActive: true`);
//! - gone: re-created with the event type, condition and description kept in the key
//!   file at create time; the new signing key is stored and the old entry is marked
//!   `replacedBy`, so it is not restored twice.
//!
//! Either way a [`Gap`] is stored: from the last delivery stored for the old subscription
//! (or its creation) to now. Deliveries in that window are lost for good on the platform's
//! side, and `webhook events` shows the gap so an operator knows what to fetch another way.
//!
//! A listener repeats the check while it runs: a [`Healer`] checks at once and then every
//! interval on a task of its own, and hands each check's [`Report`] (or why the check
//! failed) to the embedder's callback; it stops when dropped. Like everything here it
//! prints nothing: what a report means to a person is the embedder's to say.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::Error;
use crate::client::{Client, EventType, NewWebhook, Webhook, WebhookUpdate};
use crate::keys::{KeyEntry, KeyFile};
use crate::store::{EventStore, Gap, now_ms};

/// What one check did.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Subscriptions compared with the platform.
    pub checked: usize,
    /// Gaps recorded (one per restored subscription).
    pub gaps: Vec<Gap>,
    /// Subscriptions that could not be restored, with why.
    pub failed: Vec<(String, String)>,
}

/// Checks every key-file entry whose `webhookUrl` is `webhook_url` (every entry with a
/// URL when `None`), restores what the platform removed or deactivated, and records the
/// gaps in `store`.
pub async fn check(
    client: &Client,
    keys: &KeyFile,
    store: &dyn EventStore,
    webhook_url: Option<&str>,
) -> Result<Report, Error> {
    let loaded = keys.load()?;
    let mut wanted: BTreeMap<(String, String), Vec<(String, KeyEntry)>> = BTreeMap::new();
    for (id, entry) in loaded.iter() {
        let ours = match (&entry.webhook_url, webhook_url) {
            (Some(url), Some(target)) => url == target,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if ours && entry.replaced_by.is_none() {
            wanted
                .entry((entry.chain.clone(), entry.network.clone()))
                .or_default()
                .push((id.to_owned(), entry.clone()));
        }
    }
    let mut report = Report::default();
    for ((chain, network), entries) in wanted {
        let listed = client.list(&chain, &network).await?;
        for (id, entry) in entries {
            report.checked += 1;
            let found = listed.items.iter().find(|w| w.subscription_id == id);
            match restore(client, keys, &id, &entry, found).await {
                Ok(None) => {}
                Ok(Some((replaced_by, cause))) => {
                    let last = store.last_event(&id).await?;
                    let gap = Gap {
                        id: 0,
                        subscription_id: id.clone(),
                        replaced_by,
                        cause: cause.into(),
                        from_ms: last
                            .as_ref()
                            .map(|l| l.0)
                            .or_else(|| entry.created_at.as_deref().and_then(parse_time))
                            .unwrap_or(0),
                        to_ms: now_ms(),
                        last_sequence: last.map(|l| l.1),
                    };
                    let gap_id = store.record_gap(gap.clone()).await?;
                    report.gaps.push(Gap { id: gap_id, ..gap });
                }
                Err(e) => report.failed.push((id, e.to_string())),
            }
        }
    }
    Ok(report)
}

/// [`check`] repeated for as long as it lives: once at start, then every interval after
/// the previous check ended. Dropping it stops it at once, a check in progress too.
#[derive(Debug)]
pub struct Healer {
    task: tokio::task::JoinHandle<()>,
}

impl Healer {
    /// Starts checking the key file's entries whose `webhookUrl` is `webhook_url` (as
    /// [`check`] does), recording gaps in `store`, every `interval`; `on_check` gets each
    /// check's outcome. Runs on the current Tokio runtime.
    pub fn start(
        client: Client,
        keys: KeyFile,
        store: Arc<dyn EventStore>,
        webhook_url: String,
        interval: Duration,
        mut on_check: impl FnMut(Result<Report, Error>) + Send + 'static,
    ) -> Healer {
        let task = tokio::spawn(async move {
            loop {
                on_check(check(&client, &keys, store.as_ref(), Some(&webhook_url)).await);
                tokio::time::sleep(interval).await;
            }
        });
        Healer { task }
    }
}

impl Drop for Healer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Restores one subscription if it needs it: the subscription that delivers now and why
/// it was needed, or `None` when it was healthy.
async fn restore(
    client: &Client,
    keys: &KeyFile,
    id: &str,
    entry: &KeyEntry,
    found: Option<&Webhook>,
) -> Result<Option<(String, &'static str)>, Error> {
    match found {
        Some(w) if w.is_active != Some(false) => Ok(None),
        Some(_) => {
            let update = WebhookUpdate {
                is_active: Some(true),
                ..WebhookUpdate::default()
            };
            client
                .update(&entry.chain, &entry.network, id, &update)
                .await?;
            Ok(Some((id.to_owned(), "inactive")))
        }
        None => {
            let heal = |reason: &str| Error::Heal {
                subscription_id: id.to_owned(),
                reason: reason.to_owned(),
            };
            let event_type: EventType = entry
                .event_type
                .as_deref()
                .ok_or_else(|| heal("the key file has no event type for it (created by an older bridgectl): re-create it by hand"))?
                .parse()?;
            let condition = entry.condition.clone().ok_or_else(|| {
                heal("the key file has no condition for it: re-create it by hand")
            })?;
            let webhook_url = entry
                .webhook_url
                .clone()
                .ok_or_else(|| heal("the key file has no listener url for it"))?;
            // Its key is kept by create itself; here the old entry points to the new one.
            let created = client
                .create(
                    &entry.chain,
                    &entry.network,
                    &NewWebhook {
                        event_type,
                        description: entry.description.clone(),
                        webhook_url,
                        condition,
                    },
                    keys,
                )
                .await?;
            let new_id = created.webhook.subscription_id.clone();
            keys.insert(
                id,
                &KeyEntry {
                    replaced_by: Some(new_id.clone()),
                    ..entry.clone()
                },
            )?;
            Ok(Some((new_id, "removed")))
        }
    }
}

/// `createdAt` as Unix ms: RFC 3339 text or a number of ms.
fn parse_time(text: &str) -> Option<i64> {
    if let Ok(ms) = text.parse::<i64>() {
        return Some(ms);
    }
    let t =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Secret;
    use crate::store::StoreSpec;

    /// The healer checks at once, again after each interval, and not after it is
    /// dropped; each check's report reaches the callback.
    #[tokio::test]
    async fn the_healer_reports_every_check_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn EventStore> = StoreSpec::Sqlite(dir.path().join("events.sqlite"))
            .open(Default::default())
            .await
            .expect("store")
            .into();
        // No key file: nothing to compare, so no request is made.
        let keys = KeyFile::new(dir.path().join("keys.json"));
        let client = Client::new("http://127.0.0.1:9", Secret::new("t")).expect("client");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let healer = Healer::start(
            client,
            keys,
            store,
            "http://127.0.0.1:9/hooks/x".into(),
            Duration::from_millis(20),
            move |report| {
                let _ = tx.send(report.map(|r| (r.checked, r.gaps.len(), r.failed.len())));
            },
        );
        for _ in 0..3 {
            let report = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .expect("a check within the interval")
                .expect("the healer runs");
            assert_eq!(report.expect("a check"), (0, 0, 0));
        }
        drop(healer);
        // The callback (and its sender) goes with the task: the channel closes.
        loop {
            match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
                Ok(Some(_)) => {} // a check that ended before the drop
                Ok(None) => break,
                Err(_) => panic!("the healer still runs after it was dropped"),
            }
        }
    }
}
