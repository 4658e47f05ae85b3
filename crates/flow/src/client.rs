//! A typed client for the platform API (`{base_url}`): swap addresses, transaction
//! actions, managed signing, signed-transaction submission, redemption results, next
//! nonce, raw MT transfers, balances and the access-token exchange.
//!
//! Wire details follow `platform-facts.md`: every answer is an envelope
//! `{result, status, code, data}` or `{result: false, status, code, message}`; some GET
//! operations carry a JSON body. Where the real response shape is unknown (swap address,
//! redemption record) the client accepts the documented candidates and keeps the raw
//! `data` so a caller can show it as it came.
//!
//! Retries: only where resending cannot do harm. GETs are retried on connection errors
//! and 5xx; submitting a signed transaction is retried too, because the same bytes can
//! only ever be the same transaction (a node answering "already known" is success).
//! Executing a transaction action is never retried: the platform would see a reused txId.

use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Error;

/// The platform's bearer token: the one secret type of every bridgectl crate, so a
/// token the sandbox or a key exchange hands out goes to the client as it is. Never
/// printed, never logged: `Debug` shows nothing of it.
pub type AccessToken = bridgectl_secret::Secret;

/// Timeouts and retry budget of a [`PlatformClient`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Time allowed for a whole request, body included.
    pub request_timeout: Duration,
    /// How many times a retry-safe request is retried after the first attempt.
    pub retries: u32,
    /// First backoff; doubles each retry.
    pub backoff: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            retries: 3,
            backoff: Duration::from_millis(200),
        }
    }
}

/// Refuses to send a secret over plain http to anything but this machine.
///
/// A bearer token on the wire in cleartext is as good as handed out; loopback is the one
/// exception, for the sandbox and tests.
pub fn check_url_safe_for_secrets(url: &str) -> Result<reqwest::Url, Error> {
    let parsed = reqwest::Url::parse(url).map_err(|e| Error::BadUrl {
        url: crate::http::redact_url(url),
        reason: e.to_string(),
    })?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" => {
            if crate::http::is_loopback(&parsed) {
                Ok(parsed)
            } else {
                Err(Error::PlaintextRefused {
                    url: crate::http::redact_url(url),
                })
            }
        }
        other => Err(Error::BadUrl {
            url: crate::http::redact_url(url),
            reason: format!("unsupported scheme {other:?}: use https"),
        }),
    }
}

pub use crate::error::PlatformError;

/// Body of operation 1.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SwapAddressRequest {
    /// Main-network environment id.
    pub main_environment_id: String,
    /// Side-chain environment id.
    pub side_environment_id: String,
    /// MT symbol.
    pub main_token_symbol: String,
    /// ST symbol.
    pub side_token_symbol: String,
}

/// The swap address issued for a user, with the raw `data` as received (the fields are
/// named as in [`crate::SwapOutcome`], which carries them on).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SwapAddress {
    /// Where to send MT.
    pub swap_address: Address,
    /// `data` of the envelope, unchanged.
    pub swap_address_raw: Value,
}

/// Body of operation 4.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteRequest {
    /// UUID v4, fresh for every request.
    pub tx_id: String,
    /// The executing account.
    pub from: Address,
    /// Function parameter name -> decimal string / address.
    pub inputs: serde_json::Map<String, Value>,
}

/// A transaction action as the platform lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ActionInfo {
    /// The action name (the last path segment of its URL).
    pub name: String,
    /// The contract whose function it maps (`ST`, `MT`), when said.
    #[serde(default)]
    pub contract: Option<String>,
    /// The function it maps (`redeem`, `balanceOf`, ...).
    pub function: String,
    /// Whether the function only reads: executing the action returns a value and
    /// nothing is signed.
    #[serde(default)]
    pub view: bool,
    /// The console's free text.
    #[serde(default)]
    pub description: Option<String>,
}

/// A redemption record, in the candidate shapes of `platform-facts.md`.
#[derive(Debug, Clone, Serialize)]
pub struct Redemption {
    /// Status as the platform spells it (lowercased), e.g. `requested`, `completed`.
    pub status: String,
    /// `data` of the envelope, unchanged.
    pub raw: Value,
}

/// What a redemption's status means, whichever of the platform's spellings it came in
/// ([`Redemption::status`] keeps the spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RedemptionStatus {
    /// Not ended yet (`requested`, `pending`, or a status this client does not know: a
    /// new word is waited on rather than taken for an end).
    Pending,
    /// Ended well: `completed`, `complete`, `success`, `succeeded`.
    Completed,
    /// Ended without the MT paid out: `failed`, `failure`, `rejected`.
    Failed,
}

impl Redemption {
    /// Its status as a type to match.
    pub fn outcome(&self) -> RedemptionStatus {
        match self.status.as_str() {
            "completed" | "complete" | "success" | "succeeded" => RedemptionStatus::Completed,
            "failed" | "failure" | "rejected" => RedemptionStatus::Failed,
            _ => RedemptionStatus::Pending,
        }
    }

    /// Whether no further change is expected.
    pub fn is_terminal(&self) -> bool {
        self.outcome() != RedemptionStatus::Pending
    }

    /// Whether it ended well.
    pub fn is_success(&self) -> bool {
        self.outcome() == RedemptionStatus::Completed
    }
}

/// A token issued by the access-key exchange.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    /// The bearer token.
    pub token: AccessToken,
    /// When it expires, as the platform wrote it (ISO-8601).
    pub expiry_at: String,
}

/// The platform API client. Cheap to clone; connections are reused.
#[derive(Debug, Clone)]
pub struct PlatformClient {
    http: reqwest::Client,
    base: reqwest::Url,
    token: AccessToken,
    options: ClientOptions,
    timing: crate::timing::Timing,
    /// The platform's clock as its newest answer's `Date` header gave it (Unix seconds;
    /// 0: none yet): a second witness of time where no chain node can give one.
    server_time: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

fn build_http(base: &reqwest::Url, options: &ClientOptions) -> Result<reqwest::Client, Error> {
    crate::http::client_builder(base)
        .connect_timeout(options.connect_timeout)
        .timeout(options.request_timeout)
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| Error::Http {
            what: "building the HTTP client".into(),
            source: e.without_url(),
        })
}

/// What a request to the platform is, for how it is sent: whether it carries the token,
/// and whether a lost answer (or a 5xx) may be answered by sending it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    /// Obtaining the token: sent without one, and once (a repeat would mint a second).
    SignIn,
    /// A request a repeat could carry out twice (executing an action): sent once.
    Once,
    /// A read, or a submission of the same signed bytes (same hash, so a repeat cannot
    /// do it twice): sent again on a lost answer or a 5xx, with a backoff.
    Repeatable,
}

impl CallKind {
    fn may_repeat(self) -> bool {
        self == CallKind::Repeatable
    }

    fn carries_token(self) -> bool {
        self != CallKind::SignIn
    }
}

impl PlatformClient {
    /// A client for `base_url`. Refuses plain http to a non-loopback host, since every
    /// request carries the token.
    pub fn new(base_url: &str, token: AccessToken, options: ClientOptions) -> Result<Self, Error> {
        let mut base = check_url_safe_for_secrets(base_url)?;
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        Ok(Self {
            http: build_http(&base, &options)?,
            base,
            token,
            options,
            timing: crate::timing::Timing::default(),
            server_time: Default::default(),
        })
    }

    /// The platform's clock as the newest answer's `Date` header gave it, in Unix
    /// seconds: `None` before any answer, or when the platform sends none.
    pub fn server_time(&self) -> Option<u64> {
        match self.server_time.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            t => Some(t),
        }
    }

    /// Counts this client's HTTP waits and retry sleeps in `timing` (the flows built
    /// over it pass their journal's).
    pub(crate) fn counted_in(mut self, timing: &crate::timing::Timing) -> Self {
        self.timing = timing.clone();
        self
    }

    /// Exchanges an access key and secret key for a bearer token
    /// (`POST {base}/svc/v2/auth-tokens`).
    pub async fn issue_token(
        base_url: &str,
        access_key: &str,
        secret_key: &bridgectl_secret::Secret,
        expires_in_secs: u64,
        options: ClientOptions,
    ) -> Result<IssuedToken, Error> {
        let placeholder = Self::new(base_url, AccessToken::new(""), options)?;
        let mut body = json!({
            "accessKey": access_key,
            "secretKey": secret_key.expose_secret(),
            "expiresIn": expires_in_secs,
        });
        let answer = placeholder
            .call(
                Method::POST,
                "svc/v2/auth-tokens",
                &[],
                Some(&body),
                CallKind::SignIn,
            )
            .await;
        // The copy of the secret key in the request body is wiped as soon as it is sent.
        if let Some(Value::String(s)) = body.get_mut("secretKey") {
            zeroize::Zeroize::zeroize(s);
        }
        let mut data = answer?;
        // Moved out, not copied: the token then lives only in the AccessToken.
        let token = data
            .pointer_mut("/authToken/token")
            .and_then(|v| match v {
                Value::String(s) => Some(std::mem::take(s)),
                _ => None,
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(|| Error::UnexpectedShape {
                what: "auth token".into(),
                expected: "data.authToken.token".into(),
                data: redact_token(&data),
            })?;
        let expiry_at = data
            .pointer("/authToken/expiryAt")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Ok(IssuedToken {
            token: AccessToken::new(token),
            expiry_at,
        })
    }

    /// The base URL.
    pub fn base_url(&self) -> &reqwest::Url {
        &self.base
    }

    /// Operation 1: the swap address for `user`.
    pub async fn swap_address(
        &self,
        user: Address,
        request: &SwapAddressRequest,
    ) -> Result<SwapAddress, Error> {
        let body = serde_json::to_value(request).map_err(Error::Encode)?;
        let data = self
            .call(
                Method::POST,
                &format!("mx/v2.0/swap/{user}"),
                &[],
                Some(&body),
                CallKind::Once,
            )
            .await?;
        // The field name is unknown: accept the candidates, in order.
        let address = [
            "/swapAddress",
            "/address",
            "/swap/address",
            "/swapAddress/address",
        ]
        .iter()
        .find_map(|p| data.pointer(p).and_then(Value::as_str))
        .or_else(|| data.as_str())
        .ok_or_else(|| Error::UnexpectedShape {
            what: "swap address".into(),
            expected: "data.swapAddress or data.address".into(),
            data: data.clone(),
        })?;
        // MT is sent to this address: a mistyped (mixed-case, bad checksum) one is refused.
        let address = bridgectl_tx::rawtx::parse_address(address).map_err(|expected| {
            Error::UnexpectedShape {
                what: "swap address".into(),
                expected,
                data: data.clone(),
            }
        })?;
        Ok(SwapAddress {
            swap_address: address,
            swap_address_raw: data,
        })
    }

    /// Operation 2: asks the platform to sign `raw_tx` for a managed account.
    /// Returns the signed transaction bytes.
    pub async fn sign_managed(&self, address: Address, raw_tx: &Value) -> Result<Vec<u8>, Error> {
        let body = json!({ "rawTx": raw_tx });
        let data = self
            .call(
                Method::POST,
                &format!("mx/v2.0/wallets/{address}/sign"),
                &[],
                Some(&body),
                CallKind::Once,
            )
            .await?;
        let hex_str = data
            .get("signedTx")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::UnexpectedShape {
                what: "managed signature".into(),
                expected: "data.signedTx".into(),
                data: data.clone(),
            })?;
        decode_hex(hex_str, "data.signedTx")
    }

    /// Operation 3: submits a signed transaction. Safe to retry (same bytes, same hash).
    pub async fn submit_signed(&self, signed_tx: &[u8]) -> Result<B256, Error> {
        let body = json!({ "signedTx": format!("0x{}", hex::encode(signed_tx)) });
        let data = self
            .call(
                Method::POST,
                "mx/v2.0/transaction/send/signed-tx",
                &[],
                Some(&body),
                CallKind::Repeatable,
            )
            .await?;
        // The real platform nests it: data.txHash.txHash; accept a flat one too.
        let hash = data
            .pointer("/txHash/txHash")
            .or_else(|| data.get("txHash"))
            .and_then(Value::as_str)
            .ok_or_else(|| Error::UnexpectedShape {
                what: "submit result".into(),
                expected: "data.txHash.txHash".into(),
                data: data.clone(),
            })?;
        hash.parse().map_err(|_| Error::UnexpectedShape {
            what: "submit result".into(),
            expected: "a 32-byte hex hash".into(),
            data: data.clone(),
        })
    }

    /// Operation 4: executes a transaction action. Never retried (see module docs).
    /// Returns `data` unchanged; [`crate::ActionOutcome::classify`] reads it.
    pub async fn execute_action(
        &self,
        action: &str,
        request: &ExecuteRequest,
    ) -> Result<Value, Error> {
        check_path_segment(action, "action name")?;
        let body = serde_json::to_value(request).map_err(Error::Encode)?;
        self.call(
            Method::POST,
            &format!("tx/v2.0/transactions/{action}"),
            &[],
            Some(&body),
            CallKind::Once,
        )
        .await
    }

    /// The transaction actions defined (`GET /tx/v2.0/transactions` ->
    /// `data.items`). Not an operation of the spec: the sandbox offers it; a platform
    /// without it answers 404 ([`Error::Platform`] with status 404).
    pub async fn list_actions(&self) -> Result<Vec<ActionInfo>, Error> {
        let data = self
            .call(
                Method::GET,
                "tx/v2.0/transactions",
                &[],
                None,
                CallKind::Repeatable,
            )
            .await?;
        let shape = || Error::UnexpectedShape {
            what: "action list".into(),
            expected: "data.items: [{name, function, view}]".into(),
            data: data.clone(),
        };
        let items = data.get("items").ok_or_else(shape)?;
        serde_json::from_value(items.clone()).map_err(|_| shape())
    }

    /// Operation 5: the redemption record for a txId or a tx hash.
    pub async fn redemption(
        &self,
        tx_id_or_hash: &str,
        side_environment_id: &str,
    ) -> Result<Redemption, Error> {
        check_path_segment(tx_id_or_hash, "txId or tx hash")?;
        let body = json!({ "sideEnvironmentId": side_environment_id });
        let data = self
            .call(
                Method::GET,
                &format!("mx/v2.0/transactions/redeems/{tx_id_or_hash}"),
                &[],
                Some(&body),
                CallKind::Repeatable,
            )
            .await?;
        let status = ["/status", "/redeemStatus", "/state", "/redemption/status"]
            .iter()
            .find_map(|p| data.pointer(p).and_then(Value::as_str))
            .ok_or_else(|| Error::UnexpectedShape {
                what: "redemption record".into(),
                expected: "data.status".into(),
                data: data.clone(),
            })?
            .to_ascii_lowercase();
        Ok(Redemption { status, raw: data })
    }

    /// The next nonce of `address` in an environment (`GET .../wallets/{a}/nonce` with a
    /// JSON body).
    pub async fn next_nonce(&self, address: Address, environment_id: &str) -> Result<u64, Error> {
        let body = json!({ "environmentId": environment_id });
        let data = self
            .call(
                Method::GET,
                &format!("mx/v2.0/wallets/{address}/nonce"),
                &[],
                Some(&body),
                CallKind::Repeatable,
            )
            .await?;
        let nonce = data.get("nonce").ok_or_else(|| Error::UnexpectedShape {
            what: "next nonce".into(),
            expected: "data.nonce".into(),
            data: data.clone(),
        })?;
        quantity_u64(nonce).ok_or_else(|| Error::UnexpectedShape {
            what: "next nonce".into(),
            expected: "an integer or a 0x-hex quantity".into(),
            data: data.clone(),
        })
    }

    /// A raw MT transfer transaction built by the platform
    /// (`GET .../token/main-tokens/{symbol}/transfer/raw-tx?...`). Returns `data.rawTx`.
    pub async fn raw_mt_transfer(
        &self,
        symbol: &str,
        main_environment_id: &str,
        from: Address,
        to: Address,
        amount: U256,
    ) -> Result<Value, Error> {
        check_path_segment(symbol, "token symbol")?;
        let query = [
            ("mainEnvironmentId", main_environment_id.to_owned()),
            ("fromAddress", from.to_string()),
            ("toAddress", to.to_string()),
            ("amount", amount.to_string()),
        ];
        let data = self
            .call(
                Method::GET,
                &format!("mx/v2.0/token/main-tokens/{symbol}/transfer/raw-tx"),
                &query,
                None,
                CallKind::Repeatable,
            )
            .await?;
        data.get("rawTx")
            .cloned()
            .ok_or_else(|| Error::UnexpectedShape {
                what: "raw transfer".into(),
                expected: "data.rawTx".into(),
                data: data.clone(),
            })
    }

    /// Token balance of `address` (`GET /tx/v2.0/wallets/{a}/{mt}[/{st}]/balance`), in
    /// the token's smallest unit.
    pub async fn balance(
        &self,
        address: Address,
        main_symbol: &str,
        side_symbol: Option<&str>,
    ) -> Result<U256, Error> {
        check_path_segment(main_symbol, "token symbol")?;
        let path = match side_symbol {
            Some(st) => {
                check_path_segment(st, "token symbol")?;
                format!("tx/v2.0/wallets/{address}/{main_symbol}/{st}/balance")
            }
            None => format!("tx/v2.0/wallets/{address}/{main_symbol}/balance"),
        };
        let data = self
            .call(Method::GET, &path, &[], None, CallKind::Repeatable)
            .await?;
        let balance = data.get("balance").ok_or_else(|| Error::UnexpectedShape {
            what: "balance".into(),
            expected: "data.balance".into(),
            data: data.clone(),
        })?;
        let text = match balance {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => String::new(),
        };
        text.parse::<U256>().map_err(|_| Error::UnexpectedShape {
            what: "balance".into(),
            expected: "a decimal integer string".into(),
            data: data.clone(),
        })
    }

    /// Sends one request and unwraps the envelope; retries as `kind` allows.
    async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
        kind: CallKind,
    ) -> Result<Value, Error> {
        let retry_safe = kind.may_repeat();
        let url = self.base.join(path).map_err(|e| Error::BadUrl {
            url: crate::http::redact_url(self.base.as_str()),
            reason: e.to_string(),
        })?;
        let attempts = if retry_safe {
            self.options.retries + 1
        } else {
            1
        };
        let mut backoff = self.options.backoff;
        let mut last: Option<Error> = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                self.timing.sleep(backoff).await;
                backoff = backoff.saturating_mul(2);
            }
            let mut req = self.http.request(method.clone(), url.clone());
            if !query.is_empty() {
                req = req.query(query);
            }
            if kind.carries_token() {
                req = req.bearer_auth(self.token.expose_secret());
            }
            if let Some(body) = body {
                req = req.json(body);
            }
            let started = std::time::Instant::now();
            let answer = match req.send().await {
                Ok(resp) => {
                    self.note_server_time(&resp);
                    Ok(read_envelope(&method, &url, resp).await)
                }
                Err(source) => Err(source),
            };
            self.timing.http_done(started);
            match answer {
                Ok(read) => match read {
                    Ok(data) => return Ok(data),
                    Err(err @ Error::Platform { .. }) if err.is_server_error() && retry_safe => {
                        last = Some(err);
                    }
                    Err(err) => return Err(err),
                },
                Err(source) => {
                    let err = Error::Http {
                        what: format!("{method} {}", url.path()),
                        source: source.without_url(),
                    };
                    if !retry_safe {
                        return Err(err);
                    }
                    last = Some(err);
                }
            }
        }
        Err(last.unwrap_or_else(|| Error::UnexpectedShape {
            what: "request".into(),
            expected: "an attempt".into(),
            data: Value::Null,
        }))
    }
}

impl PlatformClient {
    /// Keeps the `Date` of `resp` (see [`PlatformClient::server_time`]).
    fn note_server_time(&self, resp: &reqwest::Response) {
        let date = resp
            .headers()
            .get(reqwest::header::DATE)
            .and_then(|d| d.to_str().ok())
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        if let Some(t) = date {
            self.server_time
                .store(t.as_secs(), std::sync::atomic::Ordering::Relaxed);
        }
    }
}

async fn read_envelope(
    method: &Method,
    url: &reqwest::Url,
    resp: reqwest::Response,
) -> Result<Value, Error> {
    let status = resp.status();
    // Zeroized when dropped: answers carry tokens (the access-key exchange).
    let bytes = zeroize::Zeroizing::new(crate::http::read_body(resp).await.map_err(|source| {
        Error::Body {
            what: format!("reading the answer to {method} {}", url.path()),
            source,
        }
    })?);
    parse_envelope(&format!("{method} {}", url.path()), status, &bytes)
}

/// Unwraps a platform answer: the `data` of a success envelope, or the error envelope
/// (or HTTP error) as [`Error::Platform`]. `operation` names the call in errors.
pub fn parse_envelope(
    operation: &str,
    status: reqwest::StatusCode,
    bytes: &[u8],
) -> Result<Value, Error> {
    // Strict: a duplicate key (`"rawTx": A, "rawTx": B`) or an inexact number is not an
    // envelope this client reads.
    let strict = bridgectl_json::from_slice(bytes);
    let refusal = strict.as_ref().err().map(ToString::to_string);
    let parsed: Option<Value> = strict.ok();
    let ok_envelope = parsed
        .as_ref()
        .and_then(|v| v.get("result"))
        .and_then(Value::as_bool);
    if status.is_success() && ok_envelope != Some(false) {
        let value = parsed.ok_or_else(|| Error::UnexpectedShape {
            what: format!("answer to {operation}"),
            expected: format!(
                "a JSON envelope{}",
                refusal.map(|r| format!(" ({r})")).unwrap_or_default()
            ),
            data: Value::String(String::from_utf8_lossy(bytes).chars().take(200).collect()),
        })?;
        // Some operations (webhook update/delete) answer `{result: true}` with no data.
        let mut value = value;
        return Ok(match value.get_mut("data") {
            // Taken, not cloned: a token in it is then held once.
            Some(data) => data.take(),
            None => value,
        });
    }
    let (code, message) = match &parsed {
        Some(v) => (
            v.get("code")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("HTTP_{}", status.as_u16())),
            v.get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned()),
        ),
        None => (
            format!("HTTP_{}", status.as_u16()),
            String::from_utf8_lossy(bytes).chars().take(200).collect(),
        ),
    };
    Err(Error::Platform {
        operation: operation.to_owned(),
        error: PlatformError {
            status: status.as_u16(),
            code,
            message,
        },
    })
}

/// Path segments come from users and configs: refuse anything that could walk the path.
fn check_path_segment(segment: &str, what: &str) -> Result<(), Error> {
    let ok = !segment.is_empty()
        && segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && segment != "."
        && segment != "..";
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidName {
            what: what.to_owned(),
            value: segment.to_owned(),
        })
    }
}

fn decode_hex(text: &str, what: &str) -> Result<Vec<u8>, Error> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    hex::decode(digits).map_err(|_| Error::UnexpectedShape {
        what: what.to_owned(),
        expected: "0x-prefixed hex".into(),
        data: Value::String(text.chars().take(80).collect()),
    })
}

/// Reads a JSON integer, decimal string or 0x-hex string as u64.
pub(crate) fn quantity_u64(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => match s.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => s.parse().ok(),
        },
        _ => None,
    }
}

fn redact_token(data: &Value) -> Value {
    let mut copy = data.clone();
    if let Some(t) = copy.pointer_mut("/authToken/token") {
        *t = Value::String("<redacted>".into());
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_redemption_status_has_one_meaning() {
        let of = |status: &str| Redemption {
            status: status.into(),
            raw: Value::Null,
        };
        for (spelled, meant) in [
            ("completed", RedemptionStatus::Completed),
            ("complete", RedemptionStatus::Completed),
            ("success", RedemptionStatus::Completed),
            ("succeeded", RedemptionStatus::Completed),
            ("failed", RedemptionStatus::Failed),
            ("failure", RedemptionStatus::Failed),
            ("rejected", RedemptionStatus::Failed),
            ("requested", RedemptionStatus::Pending),
            ("something new", RedemptionStatus::Pending),
        ] {
            let r = of(spelled);
            assert_eq!(r.outcome(), meant, "{spelled}");
            assert_eq!(
                r.is_terminal(),
                meant != RedemptionStatus::Pending,
                "{spelled}"
            );
            assert_eq!(
                r.is_success(),
                meant == RedemptionStatus::Completed,
                "{spelled}"
            );
        }
    }

    #[test]
    fn plain_http_only_to_loopback() {
        assert!(check_url_safe_for_secrets("http://127.0.0.1:8080").is_ok());
        assert!(check_url_safe_for_secrets("http://localhost:1").is_ok());
        assert!(check_url_safe_for_secrets("http://[::1]:1").is_ok());
        assert!(check_url_safe_for_secrets("https://api.example.com").is_ok());
        let err = check_url_safe_for_secrets("http://api.example.com").expect_err("refused");
        assert!(err.to_string().contains("plain http"), "{err}");
        assert!(check_url_safe_for_secrets("http://10.0.0.1").is_err());
        assert!(check_url_safe_for_secrets("ftp://x").is_err());
    }

    #[test]
    fn token_debug_is_redacted() {
        let t = AccessToken::new("super-secret-token-123");
        let client = PlatformClient::new("http://127.0.0.1:1", t.clone(), Default::default())
            .expect("client");
        for text in [format!("{t:?}"), format!("{client:?}")] {
            assert!(!text.contains("super-secret-token-123"), "{text}");
        }
    }

    #[test]
    fn path_segments_are_checked() {
        assert!(check_path_segment("redeem-st_1", "x").is_ok());
        assert!(check_path_segment("../admin", "x").is_err());
        assert!(check_path_segment("a/b", "x").is_err());
        assert!(check_path_segment("", "x").is_err());
        assert!(check_path_segment("..", "x").is_err());
    }

    #[test]
    fn quantities() {
        assert_eq!(quantity_u64(&json!(7)), Some(7));
        assert_eq!(quantity_u64(&json!("0x1f")), Some(31));
        assert_eq!(quantity_u64(&json!("12")), Some(12));
        assert_eq!(quantity_u64(&json!("0xzz")), None);
        assert_eq!(quantity_u64(&json!(null)), None);
    }
}
