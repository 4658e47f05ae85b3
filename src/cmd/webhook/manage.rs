//! `webhook create|list|get|update|delete`: the web3 API's webhooks, one request each; the
//! signing key `create` receives is kept in the key file for `listen`, and `delete`
//! removes it.

use bridgectl_webhook::Error as WebhookError;
use bridgectl_webhook::client::{
    self, ConditionInput, EventType, NewWebhook, Webhook, WebhookUpdate,
};
use bridgectl_webhook::keys::KeyFile;
use clap::Args;
use serde_json::{Value, json};

use super::connect::connect;
use crate::global::GlobalOpts;
use crate::opts::Web3Opts;
use crate::output;

// Condition flags, checked against the event type.
#[derive(Debug, Args, Clone, Default)]
pub struct ConditionOpts {
    /// BLOCK_PERIOD: one notification every N blocks (N >= 1).
    #[arg(long, value_name = "N", help_heading = "Condition")]
    pub period: Option<u64>,
    /// Address to watch (ADDRESS_ACTIVITY, *_TRANSACTION; one for BELOW_THRESHOLD_BALANCE).
    #[arg(long = "address", value_name = "ADDRESS", help_heading = "Condition")]
    pub addresses: Vec<String>,
    /// Token contract to watch (TOKEN_TRANSFER).
    #[arg(long = "token", value_name = "ADDRESS", help_heading = "Condition")]
    pub tokens: Vec<String>,
    /// BELOW_THRESHOLD_BALANCE: the balance, in wei, below which to notify.
    #[arg(long, value_name = "WEI", help_heading = "Condition")]
    pub threshold: Option<String>,
    /// The condition object verbatim, instead of the flags above.
    #[arg(long, value_name = "JSON", help_heading = "Condition")]
    pub condition_json: Option<String>,
}

impl ConditionOpts {
    fn input(&self) -> ConditionInput {
        ConditionInput {
            period: self.period,
            addresses: self.addresses.clone(),
            tokens: self.tokens.clone(),
            threshold: self.threshold.clone(),
            json: self.condition_json.clone(),
        }
    }

    fn is_empty(&self) -> bool {
        self.period.is_none()
            && self.addresses.is_empty()
            && self.tokens.is_empty()
            && self.threshold.is_none()
            && self.condition_json.is_none()
    }
}

// Arguments of `webhook create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Event type, e.g. BLOCK_PERIOD, TOKEN_TRANSFER.
    #[arg(long = "type", value_name = "EVENT_TYPE")]
    pub event_type: String,
    /// The listener URL deliveries are POSTed to.
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// Free text.
    #[arg(long)]
    pub description: Option<String>,
    /// The condition.
    #[command(flatten)]
    pub condition: ConditionOpts,
    /// The web3 API.
    #[command(flatten)]
    pub web3: Web3Opts,
}

// Arguments of `webhook list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The web3 API.
    #[command(flatten)]
    pub web3: Web3Opts,
}

// Arguments of `webhook get` and `webhook delete`.
#[derive(Debug, Args)]
pub struct IdArgs {
    /// The subscriptionId `create` printed.
    pub id: String,
    /// The web3 API.
    #[command(flatten)]
    pub web3: Web3Opts,
}

// Arguments of `webhook update`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The subscriptionId.
    pub id: String,
    /// Enable (true) or disable (false) deliveries.
    #[arg(long, value_name = "true|false")]
    pub active: Option<bool>,
    /// A new listener URL.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// A new description.
    #[arg(long)]
    pub description: Option<String>,
    /// The event type the condition flags are for [default: BLOCK_PERIOD when only
    /// --period is given].
    #[arg(long = "type", value_name = "EVENT_TYPE")]
    pub event_type: Option<String>,
    /// A new condition.
    #[command(flatten)]
    pub condition: ConditionOpts,
    /// The web3 API.
    #[command(flatten)]
    pub web3: Web3Opts,
}

fn parse_type(s: &str) -> anyhow::Result<EventType> {
    Ok(s.parse::<EventType>().map_err(WebhookError::from)?)
}

/// Runs `bridgectl webhook create`.
pub(super) async fn create(global: &GlobalOpts, args: CreateArgs) -> anyhow::Result<()> {
    let event_type = parse_type(&args.event_type)?;
    let condition = client::build_condition(event_type, &args.condition.input())?;
    let keys = KeyFile::new(crate::paths::webhook_keys(&args.web3.keys)?);
    let (client, target) = connect(global, &args.web3).await?;
    let created = client
        .create(
            &target.chain,
            &target.network,
            &NewWebhook {
                event_type,
                description: args.description.clone(),
                webhook_url: args.url.clone(),
                condition,
            },
            &keys,
        )
        .await?;
    let id = created.webhook.subscription_id.clone();
    if global.json {
        let mut v = serde_json::to_value(&created.webhook)?;
        v["signingKeyFile"] = json!(keys.path());
        output::json(&v)
    } else {
        output::line(format!(
            "created webhook {id}: {} {} on {}/{} -> {}",
            event_type,
            created
                .webhook
                .condition
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default(),
            target.chain,
            target.network,
            args.url
        ))?;
        output::line(format!("signing key stored in {}", keys.path().display()))
    }
}

/// Webhooks as a table: a header, then one aligned row each.
fn describe(webhooks: &[Webhook]) -> anyhow::Result<()> {
    let rows: Vec<Vec<String>> = webhooks
        .iter()
        .map(|w| {
            let active = match w.is_active {
                Some(true) => "active",
                Some(false) => "inactive",
                None => "?",
            };
            vec![
                output::untrusted(&w.subscription_id).into_owned(),
                active.to_owned(),
                output::untrusted(w.event_type.as_deref().unwrap_or("?")).into_owned(),
                output::untrusted(
                    &w.condition
                        .as_ref()
                        .map(Value::to_string)
                        .unwrap_or_default(),
                )
                .into_owned(),
                output::untrusted(w.webhook_url.as_deref().unwrap_or("")).into_owned(),
            ]
        })
        .collect();
    output::table(
        &["ID", "STATE", "EVENT TYPE", "CONDITION", "URL"],
        &[],
        &rows,
    )
}

/// Runs `bridgectl webhook list`.
pub(super) async fn list(global: &GlobalOpts, args: ListArgs) -> anyhow::Result<()> {
    let (client, target) = connect(global, &args.web3).await?;
    let page = client.list(&target.chain, &target.network).await?;
    if global.json {
        return output::json(&page);
    }
    if page.items.is_empty() {
        output::note(format!(
            "no webhooks on {}/{}",
            target.chain, target.network
        ));
        return Ok(());
    }
    describe(&page.items)
}

/// Runs `bridgectl webhook get`.
pub(super) async fn get(global: &GlobalOpts, args: IdArgs) -> anyhow::Result<()> {
    let (client, target) = connect(global, &args.web3).await?;
    let w = client.get(&target.chain, &target.network, &args.id).await?;
    if global.json {
        return output::json(&w);
    }
    describe(std::slice::from_ref(&w))
}

/// Runs `bridgectl webhook update`.
pub(super) async fn update(global: &GlobalOpts, args: UpdateArgs) -> anyhow::Result<()> {
    let condition = if args.condition.is_empty() {
        None
    } else {
        let event_type = match &args.event_type {
            Some(t) => parse_type(t)?,
            None if args.condition.condition_json.is_some() => EventType::Log,
            None => EventType::BlockPeriod,
        };
        let input = args.condition.input();
        // --condition-json without --type is taken verbatim.
        let value = if args.event_type.is_none() && input.json.is_some() {
            client::build_condition(EventType::Log, &input)
        } else {
            client::build_condition(event_type, &input)
        };
        Some(value?)
    };
    let change = WebhookUpdate {
        webhook_url: args.url.clone(),
        description: args.description.clone(),
        is_active: args.active,
        condition,
    };
    let (client, target) = connect(global, &args.web3).await?;
    client
        .update(&target.chain, &target.network, &args.id, &change)
        .await?;
    if global.json {
        output::json(&json!({"subscriptionId": args.id, "updated": true}))
    } else {
        output::line(format!("updated webhook {}", args.id))
    }
}

/// Runs `bridgectl webhook delete`.
pub(super) async fn delete(global: &GlobalOpts, args: IdArgs) -> anyhow::Result<()> {
    let keys = KeyFile::new(crate::paths::webhook_keys(&args.web3.keys)?);
    let (client, target) = connect(global, &args.web3).await?;
    client
        .delete(&target.chain, &target.network, &args.id)
        .await?;
    let removed = keys.remove(&args.id)?;
    if global.json {
        output::json(&json!({
            "subscriptionId": args.id,
            "deleted": true,
            "signingKeyRemoved": removed,
        }))
    } else {
        output::line(format!("deleted webhook {}", args.id))
    }
}
