//! The web3 API's webhook operations: create, list, get, update, delete.
//!
//! Paths: `{web3}/v1/{chain}/{network}/webhooks[/{subscriptionId}]`; list and get are one
//! endpoint (`?subscriptionId=` filters). Every call checks chain/network against
//! [`networks`] before it sends anything, and the client refuses to carry
//! its token over plain http to anything but loopback.
//!
//! The token comes from [`exchange_token`] (`POST {web3}/v1/auth-token` with `X-NODE-ID`,
//! `X-Key-ID`, `X-Key-Secret`) or from wherever the caller keeps it; it is sent as
//! `Authorization: Bearer <token>` and never appears in an error or `Debug` output.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use bridgectl_secret::Secret;
use reqwest::{Method, Url};
use serde::Serialize;
use serde_json::{Value, json};

pub use bridgectl_web3::EventType;

use super::Error;
use super::keys::{KeyEntry, KeyFile, SigningKey};
use super::networks;

/// How long one request to the web3 API may take.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The parts of a webhook's condition, before they are checked against the event type.
///
/// Each part applies to some event types only; [`build_condition`] refuses a part the
/// type does not take, naming it by its field (`condition.period`, ...) so a caller can
/// say how it was given.
#[derive(Clone, Debug, Default)]
pub struct ConditionInput {
    /// Blocks per notification (BLOCK_PERIOD), at least 1.
    pub period: Option<u64>,
    /// Addresses to watch (the address and transaction types; exactly one for
    /// BELOW_THRESHOLD_BALANCE).
    pub addresses: Vec<String>,
    /// Token contract addresses (TOKEN_TRANSFER).
    pub tokens: Vec<String>,
    /// The balance in wei, decimal digits, below which to notify (BELOW_THRESHOLD_BALANCE).
    pub threshold: Option<String>,
    /// The whole condition object as JSON text, instead of the parts above (for types
    /// whose condition is not modelled here).
    pub json: Option<String>,
}

impl ConditionInput {
    fn uses_flags(&self) -> bool {
        self.period.is_some()
            || !self.addresses.is_empty()
            || !self.tokens.is_empty()
            || self.threshold.is_some()
    }
}

/// The field an [`Error::Invalid`] of a condition's period names.
pub const PERIOD: &str = "condition.period";
/// The field an [`Error::Invalid`] of a condition's addresses names.
pub const ADDRESSES: &str = "condition.addresses";
/// The field an [`Error::Invalid`] of a condition's token contracts names.
pub const TOKENS: &str = "condition.tokens";
/// The field an [`Error::Invalid`] of a condition's threshold names.
pub const THRESHOLD: &str = "condition.belowThresholdBalance";
/// The field an [`Error::Invalid`] of a whole condition object names.
pub const CONDITION: &str = "condition";
/// The field an [`Error::Invalid`] of an update that changes nothing names.
pub const UPDATE: &str = "update";

fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::Invalid {
        field,
        reason: reason.into(),
    }
}

fn parse_address(field: &'static str, text: &str) -> Result<String, Error> {
    Address::from_str(text.trim())
        .map(|a| a.to_checksum(None))
        .map_err(|e| invalid(field, format!("{text:?} is not a 20-byte 0x address: {e}")))
}

/// Builds the `condition` object for `event_type` from the flags, checking that the flags
/// given are the ones that type takes.
pub fn build_condition(event_type: EventType, input: &ConditionInput) -> Result<Value, Error> {
    if let Some(text) = &input.json {
        if input.uses_flags() {
            return Err(invalid(
                CONDITION,
                "a whole condition object replaces the period, addresses, tokens and threshold: give one or the other",
            ));
        }
        let value: Value = serde_json::from_str(text)
            .map_err(|e| invalid(CONDITION, format!("the condition object is not json: {e}")))?;
        if !value.is_object() {
            return Err(invalid(CONDITION, "the condition must be a json object"));
        }
        if event_type == EventType::BlockPeriod {
            check_period(value.get("period").and_then(Value::as_u64))?;
        }
        return Ok(value);
    }
    let only = |allowed: &[&str]| -> Result<(), Error> {
        let given = [
            (PERIOD, input.period.is_some()),
            (ADDRESSES, !input.addresses.is_empty()),
            (TOKENS, !input.tokens.is_empty()),
            (THRESHOLD, input.threshold.is_some()),
        ];
        for (field, present) in given {
            if present && !allowed.contains(&field) {
                return Err(invalid(field, format!("does not apply to {event_type}")));
            }
        }
        Ok(())
    };
    match event_type {
        EventType::BlockPeriod => {
            only(&[PERIOD])?;
            let period = check_period(input.period)?;
            Ok(json!({ "period": period }))
        }
        EventType::AddressActivity
        | EventType::Transaction
        | EventType::MinedTransaction
        | EventType::SuccessfulTransaction
        | EventType::FailedTransaction => {
            only(&[ADDRESSES])?;
            if input.addresses.is_empty() {
                return Err(invalid(
                    ADDRESSES,
                    format!("{event_type} needs at least one address"),
                ));
            }
            let addresses = input
                .addresses
                .iter()
                .map(|a| parse_address(ADDRESSES, a))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(json!({ "addresses": addresses }))
        }
        EventType::TokenTransfer => {
            only(&[TOKENS])?;
            if input.tokens.is_empty() {
                return Err(invalid(
                    TOKENS,
                    "TOKEN_TRANSFER needs at least one token contract",
                ));
            }
            let tokens = input
                .tokens
                .iter()
                .map(|t| parse_address(TOKENS, t).map(|a| json!({ "contractAddress": a })))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(json!({ "tokens": tokens }))
        }
        EventType::BelowThresholdBalance => {
            only(&[ADDRESSES, THRESHOLD])?;
            let [address] = input.addresses.as_slice() else {
                return Err(invalid(
                    ADDRESSES,
                    format!(
                        "BELOW_THRESHOLD_BALANCE needs exactly one address, found {}",
                        input.addresses.len()
                    ),
                ));
            };
            let address = parse_address(ADDRESSES, address)?;
            let threshold = input.threshold.as_deref().ok_or_else(|| {
                invalid(
                    THRESHOLD,
                    "BELOW_THRESHOLD_BALANCE needs a threshold in wei",
                )
            })?;
            let wei = parse_wei(threshold)?;
            Ok(json!({ "address": address, "belowThresholdBalance": wei.to_string() }))
        }
        // BLOCK_LIST_CALLER, ALLOW_LIST_CALLER, LOG, and any type added later.
        _ => Err(invalid(
            CONDITION,
            format!(
                "the condition of {event_type} is not modelled here: give the whole condition object"
            ),
        )),
    }
}

fn check_period(period: Option<u64>) -> Result<u64, Error> {
    match period {
        Some(p) if p >= 1 => Ok(p),
        Some(p) => Err(invalid(
            PERIOD,
            format!("expected an integer >= 1, found {p}"),
        )),
        None => Err(invalid(
            PERIOD,
            "BLOCK_PERIOD needs a period in blocks (an integer >= 1)",
        )),
    }
}

/// A wei amount in decimal digits only: no sign, point, exponent or separators.
fn parse_wei(text: &str) -> Result<U256, Error> {
    let field = THRESHOLD;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(
            field,
            format!("expected wei as decimal digits, found {text:?}"),
        ));
    }
    U256::from_str_radix(text, 10)
        .map_err(|_| invalid(field, format!("{text} does not fit in uint256")))
}

/// Checks a web3 URL: https anywhere, plain http only to a loopback host (the token
/// travels in every request; the platform client applies the same rule to its own).
pub fn check_url(url: &str) -> Result<Url, Error> {
    let parsed = Url::parse(url).map_err(|e| Error::Url {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if loopback => Ok(parsed),
        "http" => Err(Error::InsecureUrl {
            host: parsed.host_str().unwrap_or_default().to_owned(),
        }),
        other => Err(Error::Url {
            url: url.to_owned(),
            reason: format!("unsupported scheme {other:?}: use https"),
        }),
    }
}

/// Obtains a web3 access token by key exchange: `POST {web3}/v1/auth-token` with the
/// `X-NODE-ID`, `X-Key-ID` and `X-Key-Secret` headers; the answer's `access_token`.
pub async fn exchange_token(
    web3_url: &str,
    node_id: &str,
    key_id: &str,
    key_secret: &Secret,
) -> Result<Secret, Error> {
    let base = check_url(web3_url)?;
    let url = format!("{}/v1/auth-token", base.as_str().trim_end_matches('/'));
    let http = http_client(&base)?;
    let mut secret_header = reqwest::header::HeaderValue::from_str(key_secret.expose_secret())
        .map_err(|_| {
            invalid(
                "key secret",
                "the key secret holds characters not allowed in a header",
            )
        })?;
    secret_header.set_sensitive(true);
    let resp = http
        .post(&url)
        .header("X-NODE-ID", node_id)
        .header("X-Key-ID", key_id)
        .header("X-Key-Secret", secret_header)
        .send()
        .await
        .map_err(|source| Error::Http {
            method: "POST",
            url: url.clone(),
            source: source.without_url(),
        })?;
    let body = read_json("POST", &url, resp).await?;
    let token = ["access_token", "accessToken", "token"]
        .iter()
        .find_map(|k| {
            body.get(k)
                .or_else(|| body.get("data").and_then(|d| d.get(k)))
                .and_then(Value::as_str)
        })
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::Response {
            method: "POST",
            url: url.clone(),
            reason: "no access_token in the answer".into(),
        })?;
    Ok(Secret::new(token))
}

fn http_client(base: &Url) -> Result<reqwest::Client, Error> {
    crate::http::client_builder(base)
        .timeout(TIMEOUT)
        .build()
        .map_err(|source| Error::Http {
            method: "INIT",
            url: String::new(),
            source: source.without_url(),
        })
}

/// What `create` sends.
#[derive(Clone, Debug)]
pub struct NewWebhook {
    /// The event type.
    pub event_type: EventType,
    /// Free text.
    pub description: Option<String>,
    /// The listener URL.
    pub webhook_url: String,
    /// The condition object (see [`build_condition`]).
    pub condition: Value,
}

/// What `update` sends: only the fields that are set.
#[derive(Clone, Debug, Default)]
pub struct WebhookUpdate {
    /// A new listener URL.
    pub webhook_url: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// Enable or disable delivery.
    pub is_active: Option<bool>,
    /// A new condition.
    pub condition: Option<Value>,
}

impl WebhookUpdate {
    fn body(&self) -> Result<Value, Error> {
        let mut body = serde_json::Map::new();
        if let Some(url) = &self.webhook_url {
            check_listener_url(url)?;
            body.insert("notification".into(), json!({ "webhookUrl": url }));
        }
        if let Some(d) = &self.description {
            body.insert("description".into(), json!(d));
        }
        if let Some(a) = self.is_active {
            body.insert("isActive".into(), json!(a));
        }
        if let Some(c) = &self.condition {
            body.insert("condition".into(), c.clone());
        }
        if body.is_empty() {
            return Err(invalid(
                UPDATE,
                "nothing to change: give an active state, a url, a description or a condition",
            ));
        }
        Ok(Value::Object(body))
    }
}

fn check_listener_url(url: &str) -> Result<(), Error> {
    let parsed = Url::parse(url).map_err(|e| Error::Url {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::Url {
            url: url.to_owned(),
            reason: format!(
                "the listener url must be http or https, not {}",
                parsed.scheme()
            ),
        });
    }
    Ok(())
}

/// A webhook as the API describes it. The signing key is never part of it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// `subscriptionId`, numeric as a string.
    pub subscription_id: String,
    /// `eventType`.
    pub event_type: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `isActive`, when the API says.
    pub is_active: Option<bool>,
    /// `notification.webhookUrl`.
    pub webhook_url: Option<String>,
    /// `condition`.
    pub condition: Option<Value>,
    /// `protocol` (upper case on the wire).
    pub protocol: Option<String>,
    /// `network` (upper case on the wire).
    pub network: Option<String>,
    /// `createdAt`.
    pub created_at: Option<String>,
    /// The whole record as received, minus `signingKey`.
    pub raw: Value,
}

impl Webhook {
    fn from_value(mut raw: Value) -> Option<Webhook> {
        if let Some(obj) = raw.as_object_mut() {
            obj.remove("signingKey");
        }
        let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_owned);
        let subscription_id = match raw.get("subscriptionId")? {
            Value::String(s) if !s.is_empty() => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        Some(Webhook {
            subscription_id,
            event_type: text("eventType"),
            description: text("description"),
            is_active: raw.get("isActive").and_then(Value::as_bool),
            webhook_url: raw
                .get("notification")
                .and_then(|n| n.get("webhookUrl"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            condition: raw.get("condition").cloned(),
            protocol: text("protocol"),
            network: text("network"),
            created_at: text("createdAt"),
            raw,
        })
    }
}

/// What `create` returns: the webhook and its signing key (kept in the key file
/// already; the platform shows it once).
#[derive(Clone, Debug)]
pub struct Created {
    /// The webhook.
    pub webhook: Webhook,
    /// The HMAC key of its deliveries.
    pub signing_key: SigningKey,
}

/// One page of `list`.
#[derive(Clone, Debug, Serialize)]
pub struct Page {
    /// `total`.
    pub total: Option<u64>,
    /// `page`.
    pub page: Option<u64>,
    /// `rpp` (records per page).
    pub rpp: Option<u64>,
    /// `items`.
    pub items: Vec<Webhook>,
}

/// A client of the web3 API's webhook operations.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Arc<Secret>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

fn check_id(id: &str) -> Result<(), Error> {
    if id.is_empty()
        || id.len() > 128
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(invalid(
            "subscriptionId",
            format!("{id:?} is not an id (expected digits, as create returned)"),
        ));
    }
    Ok(())
}

impl Client {
    /// A client of the web3 API at `web3_url` with an access token.
    pub fn new(web3_url: &str, token: Secret) -> Result<Client, Error> {
        let base = check_url(web3_url)?;
        Ok(Client {
            http: http_client(&base)?,
            base: base.as_str().trim_end_matches('/').to_owned(),
            token: Arc::new(token),
        })
    }

    fn url(&self, chain: &str, network: &str, id: Option<&str>) -> Result<String, Error> {
        networks::check(chain, network)?;
        let mut url = format!("{}/v1/{chain}/{network}/webhooks", self.base);
        if let Some(id) = id {
            check_id(id)?;
            url.push('/');
            url.push_str(id);
        }
        Ok(url)
    }

    async fn call(
        &self,
        method: Method,
        url: &str,
        query: Option<(&str, &str)>,
        body: Option<&Value>,
    ) -> Result<Value, Error> {
        let name = method_name(&method);
        let mut auth = reqwest::header::HeaderValue::from_str(&format!(
            "Bearer {}",
            self.token.expose_secret()
        ))
        .map_err(|_| {
            Error::NoToken("the web3 token holds characters not allowed in a header".into())
        })?;
        auth.set_sensitive(true);
        let mut req = self
            .http
            .request(method, url)
            .header(reqwest::header::AUTHORIZATION, auth);
        if let Some(q) = query {
            req = req.query(&[q]);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|source| Error::Http {
            method: name,
            url: url.to_owned(),
            source: source.without_url(),
        })?;
        read_json(name, url, resp).await
    }

    /// Creates a webhook and keeps its signing key in `keys` before returning, with what
    /// [`crate::ensure`] needs to re-create it. The key is shown once, in the answer to
    /// this call: a webhook whose key is not kept has every delivery refused as
    /// unverified, so keeping it is not left to the caller. A key file that cannot be
    /// read fails before anything is created; one that cannot be written after the
    /// webhook exists deletes the webhook again ([`Error::KeyNotKept`] says whether that
    /// worked).
    pub async fn create(
        &self,
        chain: &str,
        network: &str,
        new: &NewWebhook,
        keys: &KeyFile,
    ) -> Result<Created, Error> {
        keys.load()?;
        let created = self.create_unkept(chain, network, new).await?;
        let id = created.webhook.subscription_id.clone();
        let entry = KeyEntry {
            webhook_url: Some(new.webhook_url.clone()),
            created_at: created.webhook.created_at.clone(),
            event_type: Some(new.event_type.to_string()),
            condition: created
                .webhook
                .condition
                .clone()
                .or_else(|| Some(new.condition.clone())),
            description: new.description.clone(),
            ..KeyEntry::new(created.signing_key.clone(), chain, network)
        };
        if let Err(source) = keys.insert(&id, &entry) {
            let deleted = self.delete(chain, network, &id).await.is_ok();
            return Err(Error::KeyNotKept {
                id,
                deleted,
                source: Box::new(source),
            });
        }
        Ok(created)
    }

    async fn create_unkept(
        &self,
        chain: &str,
        network: &str,
        new: &NewWebhook,
    ) -> Result<Created, Error> {
        let url = self.url(chain, network, None)?;
        check_listener_url(&new.webhook_url)?;
        let mut body = json!({
            "eventType": new.event_type.as_str(),
            "notification": { "webhookUrl": new.webhook_url },
            "condition": new.condition,
        });
        if let Some(d) = &new.description {
            body["description"] = json!(d);
        }
        let answer = self.call(Method::POST, &url, None, Some(&body)).await?;
        let record = answer
            .get("data")
            .filter(|d| d.is_object())
            .unwrap_or(&answer);
        let key = record
            .get("signingKey")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .map(|k| SigningKey::new(Secret::new(k)))
            .ok_or_else(|| Error::Response {
                method: "POST",
                url: url.clone(),
                reason: "no signingKey in the answer".into(),
            })?;
        let webhook = Webhook::from_value(record.clone()).ok_or_else(|| Error::Response {
            method: "POST",
            url: url.clone(),
            reason: "no subscriptionId in the answer".into(),
        })?;
        Ok(Created {
            webhook,
            signing_key: key,
        })
    }

    /// Lists the webhooks of a chain/network.
    pub async fn list(&self, chain: &str, network: &str) -> Result<Page, Error> {
        let url = self.url(chain, network, None)?;
        let answer = self.call(Method::GET, &url, None, None).await?;
        page_from(&url, answer)
    }

    /// One webhook by subscription id.
    pub async fn get(&self, chain: &str, network: &str, id: &str) -> Result<Webhook, Error> {
        check_id(id)?;
        let url = self.url(chain, network, None)?;
        let answer = self
            .call(Method::GET, &url, Some(("subscriptionId", id)), None)
            .await?;
        page_from(&url, answer)?
            .items
            .into_iter()
            .find(|w| w.subscription_id == id)
            .ok_or_else(|| Error::NotFound {
                id: id.to_owned(),
                chain: chain.to_owned(),
                network: network.to_owned(),
            })
    }

    /// Changes a webhook (`isActive=false` stops its deliveries).
    pub async fn update(
        &self,
        chain: &str,
        network: &str,
        id: &str,
        update: &WebhookUpdate,
    ) -> Result<(), Error> {
        let url = self.url(chain, network, Some(id))?;
        let body = update.body()?;
        let answer = self.call(Method::PATCH, &url, None, Some(&body)).await?;
        expect_result_true("PATCH", &url, &answer)
    }

    /// Deletes a webhook for good.
    pub async fn delete(&self, chain: &str, network: &str, id: &str) -> Result<(), Error> {
        let url = self.url(chain, network, Some(id))?;
        let answer = self.call(Method::DELETE, &url, None, None).await?;
        expect_result_true("DELETE", &url, &answer)
    }
}

fn method_name(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::PUT => "PUT",
        _ => "HTTP",
    }
}

fn expect_result_true(method: &'static str, url: &str, answer: &Value) -> Result<(), Error> {
    if answer.get("result").and_then(Value::as_bool) == Some(true) {
        Ok(())
    } else {
        Err(Error::Response {
            method,
            url: url.to_owned(),
            reason: format!(
                "expected {{\"result\": true}}, found {}",
                clip(&answer.to_string())
            ),
        })
    }
}

fn page_from(url: &str, answer: Value) -> Result<Page, Error> {
    let page = answer
        .get("data")
        .filter(|d| d.is_object())
        .unwrap_or(&answer);
    let items = page
        .get("items")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::Response {
            method: "GET",
            url: url.to_owned(),
            reason: "no items array in the answer".into(),
        })?;
    let items = items
        .iter()
        .map(|v| {
            Webhook::from_value(v.clone()).ok_or_else(|| Error::Response {
                method: "GET",
                url: url.to_owned(),
                reason: "an item has no subscriptionId".into(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page {
        total: page.get("total").and_then(Value::as_u64),
        page: page.get("page").and_then(Value::as_u64),
        rpp: page.get("rpp").and_then(Value::as_u64),
        items,
    })
}

fn clip(text: &str) -> String {
    let mut s: String = text.chars().take(300).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

async fn read_json(
    method: &'static str,
    url: &str,
    resp: reqwest::Response,
) -> Result<Value, Error> {
    let status = resp.status();
    let bytes = crate::http::read_body(resp)
        .await
        .map_err(|source| Error::Body {
            method,
            url: url.to_owned(),
            source,
        })?;
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    if !status.is_success() {
        let message = parsed
            .as_ref()
            .and_then(|v| {
                let code = v.get("code").and_then(Value::as_str);
                let msg = v
                    .get("message")
                    .or_else(|| v.get("error"))
                    .and_then(Value::as_str);
                match (code, msg) {
                    (Some(c), Some(m)) => Some(format!("{c}: {m}")),
                    (None, Some(m)) => Some(m.to_owned()),
                    (Some(c), None) => Some(c.to_owned()),
                    (None, None) => None,
                }
            })
            .unwrap_or_else(|| clip(String::from_utf8_lossy(&bytes).trim()));
        return Err(Error::Api {
            method,
            url: url.to_owned(),
            status: status.as_u16(),
            message,
        });
    }
    parsed.ok_or_else(|| Error::Response {
        method,
        url: url.to_owned(),
        reason: format!("not json: {}", clip(String::from_utf8_lossy(&bytes).trim())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_built_from_the_flags_that_apply() {
        let period = ConditionInput {
            period: Some(2),
            ..Default::default()
        };
        assert_eq!(
            build_condition(EventType::BlockPeriod, &period).expect("period"),
            json!({"period": 2})
        );
        assert!(build_condition(EventType::BlockPeriod, &ConditionInput::default()).is_err());
        let zero = ConditionInput {
            period: Some(0),
            ..Default::default()
        };
        assert!(build_condition(EventType::BlockPeriod, &zero).is_err());
        assert!(build_condition(EventType::TokenTransfer, &period).is_err());

        let addr = "0x52908400098527886e0f7030069857d2e4169ee7";
        let below = ConditionInput {
            addresses: vec![addr.into()],
            threshold: Some("1000000000000000000".into()),
            ..Default::default()
        };
        assert_eq!(
            build_condition(EventType::BelowThresholdBalance, &below).expect("below"),
            json!({"address": "0x52908400098527886E0F7030069857D2E4169EE7",
                   "belowThresholdBalance": "1000000000000000000"})
        );
        for bad in ["1.5", "-1", "1e18", ""] {
            let input = ConditionInput {
                threshold: Some(bad.into()),
                ..below.clone()
            };
            assert!(
                build_condition(EventType::BelowThresholdBalance, &input).is_err(),
                "{bad}"
            );
        }
        let tokens = ConditionInput {
            tokens: vec![addr.into()],
            ..Default::default()
        };
        assert_eq!(
            build_condition(EventType::TokenTransfer, &tokens).expect("tokens")["tokens"][0]["contractAddress"],
            json!("0x52908400098527886E0F7030069857D2E4169EE7")
        );
        let bad_addr = ConditionInput {
            addresses: vec!["0x1234".into()],
            ..Default::default()
        };
        assert!(build_condition(EventType::AddressActivity, &bad_addr).is_err());
        assert!(build_condition(EventType::Log, &ConditionInput::default()).is_err());
        let raw = ConditionInput {
            json: Some(r#"{"topics": []}"#.into()),
            ..Default::default()
        };
        assert_eq!(
            build_condition(EventType::Log, &raw).expect("json"),
            json!({"topics": []})
        );
    }

    #[test]
    fn event_types_parse_and_urls_are_checked() {
        assert_eq!(
            "block_period".parse::<EventType>().ok(),
            Some(EventType::BlockPeriod)
        );
        assert!("NEW_HEADS".parse::<EventType>().is_err());
        assert!(check_url("https://web3.example.com").is_ok());
        assert!(check_url("http://127.0.0.1:8080").is_ok());
        assert!(check_url("http://[::1]:8080").is_ok());
        assert!(check_url("http://localhost:1").is_ok());
        assert!(matches!(
            check_url("http://web3.example.com"),
            Err(Error::InsecureUrl { .. })
        ));
        assert!(check_url("ftp://x").is_err());
        let client = Client::new("http://127.0.0.1:9", Secret::new("tok-en")).expect("client");
        assert!(!format!("{client:?}").contains("tok-en"));
        assert!(client.url("ethereum", "sepolia", Some("12")).is_ok());
        assert!(client.url("ethereum", "sepolia", Some("../x")).is_err());
        assert!(client.url("ethereum", "mumbai", None).is_err());
    }
}
