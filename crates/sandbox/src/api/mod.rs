//! The HTTP API: platform routes (`/mx`, `/tx`, `/svc`), web3 webhook routes (`/web3/v1`),
//! and sandbox-only routes (`/sandbox/v1`). [`app`] builds the router; every answer is the
//! platform's envelope (web3 success bodies use the web3 API's own shapes).

mod envelope;
mod faults;
mod platform;
mod web3;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use serde_json::Value;

use crate::state::{AppState, LoggedRequest, lock};

pub use envelope::ApiError;
use faults::faults;

/// Builds the whole API over `state`.
pub fn app(state: AppState) -> Router {
    let f = |route: &'static str| from_fn_with_state((state.clone(), route), faults);
    let webhooks = "/web3/v1/{chain}/{network}/webhooks";
    Router::new()
        .route(
            "/svc/v2/auth-tokens",
            post(platform::issue_token).route_layer(f("auth")),
        )
        .route(
            "/web3/v1/auth-token",
            post(web3::issue_token).route_layer(f("auth")),
        )
        .route(
            "/mx/v2.0/swap/{user}",
            post(platform::swap).route_layer(f("swap")),
        )
        .route(
            "/mx/v2.0/wallets/{address}/sign",
            post(platform::sign).route_layer(f("sign")),
        )
        .route(
            "/mx/v2.0/wallets/{address}/nonce",
            get(platform::nonce).route_layer(f("nonce")),
        )
        .route(
            "/mx/v2.0/transaction/send/signed-tx",
            post(platform::submit).route_layer(f("submit")),
        )
        .route(
            "/tx/v2.0/transactions",
            get(platform::list_actions).route_layer(f("execute")),
        )
        .route(
            "/tx/v2.0/transactions/{action}",
            post(platform::execute).route_layer(f("execute")),
        )
        .route(
            "/mx/v2.0/transactions/redeems/{id}",
            get(platform::redemption).route_layer(f("redeems")),
        )
        .route(
            "/mx/v2.0/token/main-tokens/{symbol}/transfer/raw-tx",
            get(platform::raw_transfer).route_layer(f("raw_tx")),
        )
        .route(
            "/tx/v2.0/wallets/{address}/{mt}/balance",
            get(platform::balance_mt).route_layer(f("balance")),
        )
        .route(
            "/tx/v2.0/wallets/{address}/{mt}/{st}/balance",
            get(platform::balance_st).route_layer(f("balance")),
        )
        .route(
            "/sandbox/v1/fee-delegation/{address}",
            post(platform::register)
                .get(platform::registration)
                .route_layer(f("fee_delegation")),
        )
        .route(
            "/sandbox/v1/fund/{address}",
            post(platform::fund).route_layer(f("fee_delegation")),
        )
        .route(
            "/sandbox/v1/chains/{chain}/reorg",
            post(platform::reorg).route_layer(f("reorg")),
        )
        .route(
            "/sandbox/v1/chains/{chain}/rpc",
            post(platform::chain_rpc).route_layer(f("reorg")),
        )
        .route(
            "/sandbox/v1/chains/{chain}/mining",
            post(platform::mining).route_layer(f("reorg")),
        )
        .route(
            "/sandbox/v1/hostile",
            post(platform::hostile).route_layer(f("hostile")),
        )
        .route(
            "/sandbox/v1/managed-accounts",
            post(platform::create_managed)
                .get(platform::list_managed)
                .route_layer(f("managed_accounts")),
        )
        .route(
            "/sandbox/v1/swaps",
            get(platform::list_swaps).route_layer(f("swap")),
        )
        .route(
            webhooks,
            post(web3::create)
                .get(web3::list)
                .route_layer(f("webhooks")),
        )
        .route(
            "/web3/v1/{chain}/{network}/webhooks/{id}",
            patch(web3::update)
                .delete(web3::delete)
                .get(web3::get_one)
                .route_layer(f("webhooks")),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(from_fn_with_state(state.clone(), auth))
        .layer(from_fn_with_state(state.clone(), log_request))
        .layer(from_fn_with_state(state.clone(), in_its_scope))
        .with_state(state)
}

/// The outermost layer: serves the request in the scope of its bearer token (see
/// [`crate::scope`]).
async fn in_its_scope(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let scope = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|token| state.0.scopes.of_token(token.trim()));
    crate::scope::in_scope(scope, next.run(req)).await
}

/// Largest request body kept in the request log.
const LOG_BODY_LIMIT: usize = 64 * 1024;

/// Records every request (method, path and query, body, headers) in the state's request
/// log, as a platform's access log would, so tests can check what clients sent. A
/// credential is replaced by a placeholder only where the API takes it: an issued token in
/// `Authorization: Bearer`, the access and secret keys in `x-key-id` / `x-key-secret` on the
/// token routes (whose
/// bodies, which carry the secret key, are not kept either). Anything else is kept as
/// sent, so a secret sent anywhere else is in the log for a leak scan to find.
async fn log_request(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, 16 * 1024 * 1024).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "BODY_TOO_LARGE",
                "request body over 16 MiB",
            )
            .into_response();
        }
    };
    let token_route = OPEN_PATHS.contains(&parts.uri.path());
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes());
            let shown = match name.as_str() {
                "authorization"
                    if value
                        .strip_prefix("Bearer ")
                        .is_some_and(|t| state.is_issued_token(t.trim())) =>
                {
                    "Bearer <an issued token>".into()
                }
                "x-key-secret" if token_route && value == state.0.secret_key.expose_secret() => {
                    "<the secret key>".into()
                }
                "x-key-id" if token_route && value == state.0.access_key => {
                    "<the access key>".into()
                }
                _ => value,
            };
            format!("{name}: {shown}\n")
        })
        .collect();
    // The token routes carry the secret key in their body: their bodies are not kept.
    let line = if token_route {
        format!("{} {} <body not logged>", parts.method, parts.uri)
    } else {
        let shown: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            Value::String(String::from_utf8_lossy(&bytes[..bytes.len().min(LOG_BODY_LIMIT)]).into())
        });
        format!("{} {} {}", parts.method, parts.uri, shown)
    };
    let scope = crate::scope::current().map(|s| s.to_string());
    state.log_request(LoggedRequest {
        line,
        headers,
        scope,
    });
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(
        "NOT_FOUND",
        format!("no route for {} {}", req.method(), req.uri().path()),
    )
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        format!(
            "method {} is not allowed on {}",
            req.method(),
            req.uri().path()
        ),
    )
}

/// Paths that hand out tokens, so they cannot require one.
const OPEN_PATHS: &[&str] = &[
    "/svc/v2/auth-tokens",
    "/web3/v1/auth-token",
    // A chain's JSON-RPC endpoint is public, as a node provider's is.
    "/sandbox/v1/chains/main/rpc",
    "/sandbox/v1/chains/side/rpc",
];

async fn auth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if OPEN_PATHS.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(token) = token else {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "missing header authorization: Bearer <access token>",
        )
        .into_response();
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let valid = lock(&state.0.tokens)
        .get(token)
        .is_some_and(|exp| exp.is_none_or(|e| e > now));
    if !valid {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "the access token is unknown or expired",
        )
        .into_response();
    }
    next.run(req).await
}
