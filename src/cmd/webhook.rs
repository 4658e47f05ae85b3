//! `bridgectl webhook`: the web3 API's webhooks (create, list, get, update, delete), a
//! listener that never loses an event (`listen`), a reader of what it stored (`events`),
//! and the self-healing check (`ensure`, or `listen --ensure`).
//!
//! Web3 token, in this order: `--web3-token-file` / `BRIDGECTL_WEB3_TOKEN_FILE` (first
//! line), `BRIDGECTL_WEB3_TOKEN`, then a key exchange with `BRIDGECTL_WEB3_NODE_ID`,
//! `BRIDGECTL_WEB3_KEY_ID` and `BRIDGECTL_WEB3_KEY_SECRET`. Never argv, never printed.
//!
//! Files (defaults under `$XDG_STATE_HOME/bridgectl/`):
//! - `webhook-keys.json` (`--keys`, `BRIDGECTL_WEBHOOK_KEYS`): signing keys from `create`,
//!   mode 0600; `listen` verifies `x-signature` against them.
//! - `webhook-events.sqlite` (`--store`, `BRIDGECTL_WEBHOOK_STORE`): the listener's store;
//!   `--store postgres://...` puts it in PostgreSQL instead, shared by replicas.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use bridgectl_secret::Secret;
use bridgectl_webhook::client::{
    self, Client, ConditionInput, EventType, NewWebhook, Webhook, WebhookUpdate,
};
use bridgectl_webhook::ensure;
use bridgectl_webhook::handoff::{HandoffOptions, Sinks};
use bridgectl_webhook::keys::KeyFile;
use bridgectl_webhook::listener::{
    DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, Listener, ListenerConfig, Timeouts,
};
use bridgectl_webhook::store::{EventStore, Gap, Quarantined, Retention, StoreSpec, StoredEvent};
use bridgectl_webhook::{Error as WebhookError, networks};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::output;

/// `bridgectl webhook ...`
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum WebhookCommand {
    /// Create a webhook; its signing key is stored locally (0600) for `listen`.
    Create(CreateArgs),
    /// List the webhooks of a chain/network.
    List(ListArgs),
    /// Show one webhook.
    Get(IdArgs),
    /// Change a webhook: `--active false` stops its deliveries.
    Update(UpdateArgs),
    /// Delete a webhook for good (and its stored signing key).
    Delete(IdArgs),
    /// Receive deliveries: answer 200 only once each is durable in the store.
    Listen(ListenArgs),
    /// Show what the listener stored, and the gaps `ensure` found.
    Events(EventsArgs),
    /// Restore this listener's webhooks that the platform removed or deactivated, once;
    /// each restored one leaves a gap record.
    Ensure(EnsureArgs),
}

// Where the web3 API is and how to authenticate.
#[derive(Debug, Args, Clone, Default)]
pub struct Web3Api {
    /// Web3 API URL [default: the profile's web3_url].
    #[arg(
        long,
        env = "BRIDGECTL_WEB3_URL",
        value_name = "URL",
        help_heading = "Web3 API"
    )]
    pub web3_url: Option<String>,

    /// Read the web3 token from the first line of FILE (keep it 0600).
    #[arg(
        long,
        env = "BRIDGECTL_WEB3_TOKEN_FILE",
        value_name = "FILE",
        help_heading = "Web3 API"
    )]
    pub web3_token_file: Option<PathBuf>,
}

// Where the web3 API is and which chain/network.
#[derive(Debug, Args, Clone)]
pub struct Web3Opts {
    /// The web3 API.
    #[command(flatten)]
    pub api: Web3Api,

    /// Chain path segment, e.g. ethereum, polygon [default: the profile's web3_chain].
    #[arg(long, env = "BRIDGECTL_WEB3_CHAIN", help_heading = "Web3 API")]
    pub chain: Option<String>,

    /// Network path segment, e.g. mainnet, sepolia [default: the profile's
    /// web3_network].
    #[arg(long, env = "BRIDGECTL_WEB3_NETWORK", help_heading = "Web3 API")]
    pub network: Option<String>,

    /// Signing-key file [default: $XDG_STATE_HOME/bridgectl/webhook-keys.json].
    #[arg(long, env = "BRIDGECTL_WEBHOOK_KEYS", value_name = "FILE")]
    pub keys: Option<PathBuf>,
}

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

// Arguments of `webhook listen`.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Address to listen on, e.g. 127.0.0.1:8080 (port 0 picks one; see the first line).
    #[arg(long, value_name = "ADDR")]
    pub bind: SocketAddr,
    /// The one path deliveries are accepted on: /hooks/SECRET. Not "/". Without it, one is
    /// generated on first start, kept in the store and shown.
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// Event store: sqlite:FILE or FILE, or postgres://... (shared by replicas)
    /// [default: $XDG_STATE_HOME/bridgectl/webhook-events.sqlite].
    #[arg(long, env = "BRIDGECTL_WEBHOOK_STORE", value_name = "STORE")]
    pub store: Option<String>,
    /// Signing-key file [default: $XDG_STATE_HOME/bridgectl/webhook-keys.json].
    #[arg(long, env = "BRIDGECTL_WEBHOOK_KEYS", value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Largest accepted body in bytes; larger ones get 413.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY, value_name = "BYTES")]
    pub max_body: usize,
    /// Connections served at once; more wait in the backlog.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS, value_name = "N")]
    pub max_connections: usize,
    /// Seconds a request may take to send its headers (also closes idle keep-alives).
    #[arg(long, default_value_t = Timeouts::default().header.as_secs_f64(), value_name = "SECS")]
    pub header_timeout: f64,
    /// Seconds a request may take from its headers to the answer.
    #[arg(long, default_value_t = Timeouts::default().request.as_secs_f64(), value_name = "SECS")]
    pub request_timeout: f64,
    /// Run `sh -c CMD` per verified event, the body on stdin; retried until it exits 0.
    /// Its environment holds only PATH, HOME, USER, LOGNAME, LANG, LC_ALL, TZ, TMPDIR and
    /// BRIDGECTL_EVENT_ID, _SUBSCRIPTION_ID, _SEQUENCE_NUMBER, _EVENT_TYPE, _ATTEMPT and
    /// _RERUN: no secret of this process. An event can run more than once (a failed
    /// attempt, a listener killed mid-run): dedupe on (BRIDGECTL_SUBSCRIPTION_ID,
    /// BRIDGECTL_SEQUENCE_NUMBER). Each attempt is counted before it starts, so
    /// BRIDGECTL_RERUN=1 (BRIDGECTL_ATTEMPT above 1) marks every run after the first,
    /// whichever replica ran it; BRIDGECTL_RERUN=0 is the first and only unmarked run. A
    /// marked run may also be the first (its runner died before starting it): check it
    /// against your records, never drop it.
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,
    /// Seconds one --exec run may take; then its process group is killed.
    #[arg(long, default_value_t = bridgectl_webhook::handoff::EXEC_TIMEOUT.as_secs_f64(), value_name = "SECS")]
    pub exec_timeout: f64,
    /// POST each verified event to URL; retried until it answers 2xx. Headers
    /// x-bridgectl-subscription-id and x-bridgectl-sequence-number identify the event
    /// (dedupe on them); x-bridgectl-attempt and x-bridgectl-rerun: 1 mark a re-run.
    /// A redirect is a failed attempt, never followed; no proxy is used for plain http;
    /// errors and the store name the URL by scheme, host and port only.
    #[arg(long, value_name = "URL")]
    pub forward: Option<String>,
    /// --exec commands run at once [default: two per core]. Events of one subscription
    /// (one webhook) still run one at a time, in the order they were stored, across
    /// replicas; different subscriptions run side by side.
    #[arg(long, value_name = "N")]
    pub exec_jobs: Option<usize>,
    /// --forward POSTs sent at once [default: four per core]; in order per subscription
    /// as for --exec-jobs.
    #[arg(long, value_name = "N")]
    pub forward_jobs: Option<usize>,
    /// Seconds a replica holds an event without renewing its lease before another may
    /// take it over; a live replica renews every second while it runs the event, so a
    /// dead one's events are taken over within this [default: 5].
    #[arg(long, value_name = "SECS")]
    pub lease: Option<f64>,
    /// Check the platform's webhook list every --ensure-interval and restore the ones
    /// pointing at --url that were removed or deactivated (needs the web3 API).
    #[arg(long, requires = "url")]
    pub ensure: bool,
    /// Seconds between two --ensure checks.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub ensure_interval: f64,
    /// The URL the platform delivers to (as given to `webhook create --url`); behind a
    /// load balancer it is not the bind address.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Print nothing per delivery (by default one line each on stdout as it is stored:
    /// time, event type, subscription, sequence, verified or UNVERIFIED, duplicate;
    /// with --json one {"delivery": {...}} object a line). `webhook events` shows what
    /// was stored either way.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Seconds strangers' rows (unverified events, quarantine) are kept before they are
    /// deleted (default 7 days); checked at start and every minute. Verified events are
    /// never deleted.
    #[arg(long, default_value_t = Retention::default().max_age.as_secs_f64(), value_name = "SECS")]
    pub stranger_max_age: f64,
    /// Rows of strangers kept per table (unverified events; quarantine): past it the
    /// oldest are deleted. Each such row holds at most 256 bytes per string field, and
    /// only the first 1,000 (16 MiB) keep their body.
    #[arg(long, default_value_t = Retention::default().max_rows, value_name = "N")]
    pub stranger_max_rows: u64,
    /// The web3 API, for --ensure.
    #[command(flatten)]
    pub web3: Web3Api,
}

// Arguments of `webhook ensure`.
#[derive(Debug, Args)]
pub struct EnsureArgs {
    /// Restore only webhooks created with this listener URL [default: every webhook in
    /// the key file].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Event store the gaps are recorded in (as for `listen`).
    #[arg(long, env = "BRIDGECTL_WEBHOOK_STORE", value_name = "STORE")]
    pub store: Option<String>,
    /// Signing-key file [default: $XDG_STATE_HOME/bridgectl/webhook-keys.json].
    #[arg(long, env = "BRIDGECTL_WEBHOOK_KEYS", value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// The web3 API.
    #[command(flatten)]
    pub web3: Web3Api,
}

// Arguments of `webhook events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Event store: sqlite:FILE or FILE, or postgres://...
    /// [default: $XDG_STATE_HOME/bridgectl/webhook-events.sqlite].
    #[arg(long, env = "BRIDGECTL_WEBHOOK_STORE", value_name = "STORE")]
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

/// Runs `bridgectl webhook ...`.
pub fn run(global: &GlobalOpts, cmd: WebhookCommand) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    match cmd {
        WebhookCommand::Create(args) => rt.block_on(create(global, args)),
        WebhookCommand::List(args) => rt.block_on(list(global, args)),
        WebhookCommand::Get(args) => rt.block_on(get(global, args)),
        WebhookCommand::Update(args) => rt.block_on(update(global, args)),
        WebhookCommand::Delete(args) => rt.block_on(delete(global, args)),
        WebhookCommand::Listen(args) => rt.block_on(listen(global, args)),
        WebhookCommand::Events(args) => rt.block_on(events(global, args)),
        WebhookCommand::Ensure(args) => rt.block_on(ensure_once(global, args)),
    }
}

/// The exit code a webhook error means.
fn code_of(e: &WebhookError) -> Code {
    match e {
        WebhookError::NotFound { .. } | WebhookError::Api { status: 404, .. } => Code::NotFound,
        // The web3 API answered with an error, or could not be reached: remote, as for
        // the platform.
        WebhookError::Http { .. } | WebhookError::Body { .. } | WebhookError::Api { .. } => {
            Code::Remote
        }
        WebhookError::Network(_)
        | WebhookError::EventType(_)
        | WebhookError::Invalid { .. }
        | WebhookError::Url { .. }
        | WebhookError::ListenerConfig { .. }
        | WebhookError::Unsupported { .. } => Code::Usage,
        WebhookError::InsecureUrl { .. } => Code::Refused,
        _ => Code::Failure,
    }
}

fn coded_err(e: WebhookError) -> anyhow::Error {
    let code = code_of(&e);
    anyhow::Error::new(crate::exit::Coded {
        code,
        error: anyhow::Error::new(e),
    })
}

fn keys_path(explicit: &Option<PathBuf>) -> anyhow::Result<PathBuf> {
    crate::paths::state_file(explicit.as_deref(), "webhook-keys.json")
}

fn store_spec(explicit: &Option<String>) -> anyhow::Result<StoreSpec> {
    match explicit {
        Some(text) => Ok(StoreSpec::parse(text)),
        None => Ok(StoreSpec::Sqlite(crate::paths::state_file(
            None,
            "webhook-events.sqlite",
        )?)),
    }
}

fn secs(flag: &'static str, value: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            coded(
                Code::Usage,
                format!("--{flag}: expected seconds above zero, found {value}"),
            )
        })
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Checks chain/network, finds the URL and the token, and builds the client. The chain
/// check comes first: a typo never costs a request, not even the token exchange.
async fn connect(global: &GlobalOpts, web3: &Web3Opts) -> anyhow::Result<(Client, Target)> {
    let profile = crate::config::load_profile(global).ok();
    let pick = |flag: &Option<String>, field: Option<&String>, name: &str| {
        flag.clone().or_else(|| field.cloned()).ok_or_else(|| {
            coded(
                Code::Usage,
                format!("no web3 {name}: give --{name} or web3_{name} in the profile"),
            )
        })
    };
    let target = Target {
        chain: pick(
            &web3.chain,
            profile.as_ref().and_then(|p| p.web3_chain.as_ref()),
            "chain",
        )?,
        network: pick(
            &web3.network,
            profile.as_ref().and_then(|p| p.web3_network.as_ref()),
            "network",
        )?,
    };
    networks::check(&target.chain, &target.network).map_err(|e| coded_err(e.into()))?;
    Ok((connect_api(global, &web3.api).await?, target))
}

/// The chain and network a webhook command works on.
struct Target {
    chain: String,
    network: String,
}

/// Finds the URL and the token and builds the client.
async fn connect_api(global: &GlobalOpts, web3: &Web3Api) -> anyhow::Result<Client> {
    let profile = match &web3.web3_url {
        Some(_) => crate::config::load_profile(global).ok(),
        None => Some(crate::config::load_profile(global)?),
    };
    let url = match &web3.web3_url {
        Some(u) => u.clone(),
        None => profile
            .as_ref()
            .and_then(|p| p.web3_url.clone())
            .ok_or_else(|| {
                coded(
                    Code::Usage,
                    "no web3 url: give --web3-url, BRIDGECTL_WEB3_URL or web3_url in the profile",
                )
            })?,
    };
    // Refuse an insecure URL before a token is read or exchanged.
    client::check_url(&url).map_err(coded_err)?;
    let token = web3_token(
        &url,
        web3,
        profile.as_ref().and_then(|p| p.web3_token_file.as_deref()),
    )
    .await?;
    Client::new(&url, token).map_err(coded_err)
}

async fn web3_token(
    url: &str,
    web3: &Web3Api,
    profile_file: Option<&std::path::Path>,
) -> anyhow::Result<Secret> {
    if let Some(path) = web3.web3_token_file.as_deref().or(profile_file) {
        return crate::auth::read_secret_file(path, "web3 token");
    }
    if let Some(token) = env_nonempty("BRIDGECTL_WEB3_TOKEN") {
        return Ok(Secret::new(token));
    }
    let node = env_nonempty("BRIDGECTL_WEB3_NODE_ID");
    let key_id = env_nonempty("BRIDGECTL_WEB3_KEY_ID");
    let secret = env_nonempty("BRIDGECTL_WEB3_KEY_SECRET").map(Secret::new);
    match (node, key_id, secret) {
        (Some(node), Some(key_id), Some(secret)) => {
            client::exchange_token(url, &node, &key_id, &secret)
                .await
                .map_err(coded_err)
                .context("web3 token exchange failed")
        }
        _ => Err(coded(
            Code::Usage,
            "no web3 token: set --web3-token-file, BRIDGECTL_WEB3_TOKEN, or BRIDGECTL_WEB3_NODE_ID + BRIDGECTL_WEB3_KEY_ID + BRIDGECTL_WEB3_KEY_SECRET",
        )),
    }
}

fn parse_type(s: &str) -> anyhow::Result<EventType> {
    s.parse::<EventType>().map_err(|e| coded_err(e.into()))
}

async fn create(global: &GlobalOpts, args: CreateArgs) -> anyhow::Result<()> {
    let event_type = parse_type(&args.event_type)?;
    let condition =
        client::build_condition(event_type, &args.condition.input()).map_err(coded_err)?;
    let keys = KeyFile::new(keys_path(&args.web3.keys)?);
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
        .await
        .map_err(coded_err)?;
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

async fn list(global: &GlobalOpts, args: ListArgs) -> anyhow::Result<()> {
    let (client, target) = connect(global, &args.web3).await?;
    let page = client
        .list(&target.chain, &target.network)
        .await
        .map_err(coded_err)?;
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

async fn get(global: &GlobalOpts, args: IdArgs) -> anyhow::Result<()> {
    let (client, target) = connect(global, &args.web3).await?;
    let w = client
        .get(&target.chain, &target.network, &args.id)
        .await
        .map_err(coded_err)?;
    if global.json {
        return output::json(&w);
    }
    describe(std::slice::from_ref(&w))
}

async fn update(global: &GlobalOpts, args: UpdateArgs) -> anyhow::Result<()> {
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
        Some(value.map_err(coded_err)?)
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
        .await
        .map_err(coded_err)?;
    if global.json {
        output::json(&json!({"subscriptionId": args.id, "updated": true}))
    } else {
        output::line(format!("updated webhook {}", args.id))
    }
}

async fn delete(global: &GlobalOpts, args: IdArgs) -> anyhow::Result<()> {
    let keys = KeyFile::new(keys_path(&args.web3.keys)?);
    let (client, target) = connect(global, &args.web3).await?;
    client
        .delete(&target.chain, &target.network, &args.id)
        .await
        .map_err(coded_err)?;
    let removed = keys.remove(&args.id).map_err(coded_err)?;
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

/// How long a stopping listener waits for stdout, once for the queued delivery lines and
/// once for the summary: a reader that stopped reading must not hold off SIGTERM.
const STOP_PRINTING: Duration = Duration::from_secs(1);

async fn listen(global: &GlobalOpts, args: ListenArgs) -> anyhow::Result<()> {
    if global.json {
        crate::output::json_stream();
    }
    let store = store_spec(&args.store)?;
    let keys = keys_path(&args.keys)?;
    let mut config = ListenerConfig::new(args.bind, store.clone(), &keys);
    config.path = args.path.clone();
    config.max_body = args.max_body;
    config.max_connections = args.max_connections;
    config.timeouts = Timeouts {
        header: secs("header-timeout", args.header_timeout)?,
        request: secs("request-timeout", args.request_timeout)?,
    };
    config.sinks = Sinks {
        exec: args.exec.clone(),
        forward: args.forward.clone(),
    };
    config.handoff = HandoffOptions::new(secs("exec-timeout", args.exec_timeout)?);
    config.retention = Retention {
        max_age: secs("stranger-max-age", args.stranger_max_age)?,
        max_rows: args.stranger_max_rows,
    };
    let printer = (!args.quiet).then(|| crate::deliveries::Printer::start(global.json));
    config.on_delivery = printer.as_ref().map(crate::deliveries::Printer::hook);
    if let Some(lease) = args.lease {
        config.handoff.lease = secs("lease", lease)?;
    }
    if let Some(jobs) = args.exec_jobs {
        config.handoff.exec_jobs = jobs;
    }
    if let Some(jobs) = args.forward_jobs {
        config.handoff.forward_jobs = jobs;
    }
    // The web3 client first: a missing token fails before the port is taken.
    let healer = if args.ensure {
        let url = args.url.clone().unwrap_or_default();
        Some((
            connect_api(global, &args.web3).await?,
            url,
            secs("ensure-interval", args.ensure_interval)?,
        ))
    } else {
        None
    };
    let stop = crate::shutdown::on_signal()?;
    let listener = Listener::bind(config).await.map_err(coded_err)?;
    let addr = listener.local_addr().map_err(coded_err)?;
    let path = listener.path().to_owned();
    let url = format!("http://{addr}{path}");
    if global.json {
        let line = serde_json::to_string(&json!({
            "listening": url,
            "addr": addr.to_string(),
            "path": path,
            "pathGenerated": listener.generated_path(),
            "store": store.display(),
        }))?;
        output::line(line)?;
    } else {
        if listener.generated_path() {
            output::note(format!(
                "generated the path {path} (kept in the store; give it to `webhook create --url`)"
            ));
        }
        output::note(format!(
            "listening on {url} (store {}, keys {}); Ctrl-C stops",
            store.display(),
            keys.display()
        ));
    }
    let _ = std::io::stdout().flush();
    let healing = healer.map(|(client, url, interval)| {
        let store = listener.store();
        let keys = KeyFile::new(&keys);
        let json = global.json;
        tokio::spawn(async move {
            loop {
                match ensure::check(&client, &keys, store.as_ref(), Some(&url)).await {
                    Ok(report) => report_healing(json, &report),
                    Err(e) => output::note(format!("ensure: {:#}", anyhow::Error::new(e))),
                }
                tokio::time::sleep(interval).await;
            }
        })
    });
    let stats = listener.run(stop).await.map_err(coded_err);
    if let Some(task) = healing {
        task.abort();
    }
    // Every delivery's line is out before the summary, unless stdout is stalled: then
    // the rest are dropped and counted, and the summary too is given up on after a bound,
    // so a stop never waits on the reader.
    let not_printed = printer.map_or(0, |p| p.finish(STOP_PRINTING));
    let stats = stats?;
    if global.json {
        let line = serde_json::to_string(&json!({ "stopped": stats, "notPrinted": not_printed }))?;
        crate::deliveries::line_within(line, STOP_PRINTING);
        Ok(())
    } else {
        output::note(format!(
            "stopped: {} stored ({} unverified), {} duplicates, {} quarantined, {} failed{}",
            stats.stored,
            stats.unverified,
            stats.duplicates,
            stats.quarantined,
            stats.failed,
            if not_printed > 0 {
                format!(
                    "; {not_printed} deliveries were not printed (stdout was too slow), \
                     `webhook events` shows them"
                )
            } else {
                String::new()
            }
        ));
        Ok(())
    }
}

/// Says what a check restored: one line per gap on stderr (stdout is the listener's).
fn report_healing(json: bool, report: &ensure::Report) {
    for gap in &report.gaps {
        if json {
            if let Ok(line) = serde_json::to_string(&json!({ "restored": gap })) {
                output::note(line);
            }
        } else {
            output::note(format!("restored: {}", gap_line(gap)));
        }
    }
    for (id, why) in &report.failed {
        output::note(format!(
            "ensure: webhook {}: {}",
            output::untrusted(id),
            output::untrusted(why)
        ));
    }
}

async fn ensure_once(global: &GlobalOpts, args: EnsureArgs) -> anyhow::Result<()> {
    let keys = KeyFile::new(keys_path(&args.keys)?);
    let client = connect_api(global, &args.web3).await?;
    let store = store_spec(&args.store)?
        .open(Default::default())
        .await
        .map_err(coded_err)?;
    let report = ensure::check(&client, &keys, store.as_ref(), args.url.as_deref()).await;
    store.close().await.map_err(coded_err)?;
    let report = report.map_err(coded_err)?;
    if global.json {
        output::json(&report)?;
    } else {
        output::line(format!(
            "checked {} webhooks: {} restored, {} could not be",
            report.checked,
            report.gaps.len(),
            report.failed.len()
        ))?;
        for gap in &report.gaps {
            output::line(gap_line(gap))?;
        }
    }
    if report.failed.is_empty() {
        Ok(())
    } else {
        report_healing(
            false,
            &ensure::Report {
                gaps: Vec::new(),
                ..report.clone()
            },
        );
        Err(coded(Code::Failure, "some webhooks could not be restored"))
    }
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

fn gap_line(g: &Gap) -> String {
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

async fn events(global: &GlobalOpts, args: EventsArgs) -> anyhow::Result<()> {
    let spec = store_spec(&args.store)?;
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
    let store = spec.open_existing().await.map_err(coded_err)?;
    let result = show_events(global, &args, store.as_ref()).await;
    store.close().await.map_err(coded_err)?;
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
            .await
            .map_err(coded_err)?
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
            .await
            .map_err(coded_err)?
            .iter()
            .map(|g| Ok((g.id, serde_json::to_value(g)?, gap_line(g))))
            .collect()
    } else {
        store
            .events(after, limit)
            .await
            .map_err(coded_err)?
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
                for g in store.gaps(0, 1000).await.map_err(coded_err)? {
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
