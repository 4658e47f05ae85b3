//! Operation 0: an access token for an access key and secret key.

use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use crate::api::envelope::{ApiError, JsonBody, ok};
use crate::state::{AppState, lock};

use super::common::ApiResult;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct TokenRequest {
    access_key: String,
    secret_key: String,
    expires_in: Option<i64>,
}

pub(crate) async fn issue_token(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<TokenRequest>,
) -> ApiResult {
    let expires_in = req.expires_in.unwrap_or(604_800);
    if !(1..=31_536_000).contains(&expires_in) {
        return Err(ApiError::bad(
            "INVALID_FIELD",
            format!("expiresIn: expected 1..=31536000 seconds, found {expires_in}"),
        ));
    }
    if req.access_key != state.0.access_key || req.secret_key != state.0.secret_key.expose_secret()
    {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "INVALID_CREDENTIALS",
            "accessKey or secretKey is wrong",
        ));
    }
    let (token, expiry) = state.issue_token(expires_in)?;
    Ok(ok(
        json!({"authToken": {"token": token, "expiryAt": expiry}}),
    ))
}

impl AppState {
    /// Issues a random bearer token valid for `seconds`; returns it and its ISO-8601 expiry.
    pub(crate) fn issue_token(&self, seconds: i64) -> Result<(String, String), ApiError> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "no randomness",
            )
        })?;
        let token = hex::encode(b);
        let expiry = time::OffsetDateTime::now_utc() + time::Duration::seconds(seconds);
        lock(&self.0.tokens).insert(token.clone(), Some(expiry.unix_timestamp()));
        let iso = expiry
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Ok((token, iso))
    }
}
