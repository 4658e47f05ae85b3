//! The platform's envelope, the one shape of every answer: [`ApiError`] for errors,
//! [`ok`] for success, and [`JsonBody`], a JSON request body whose every rejection is an
//! error envelope naming what is wrong.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// An error answer: the platform's error envelope
/// `{result: false, status, code, message}` with a stable `code` (see the README).
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable machine code.
    pub code: &'static str,
    /// Lowercase human message naming the field or thing.
    pub message: String,
}

impl ApiError {
    /// An error with a status, a code and a message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub(crate) fn bad(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub(crate) fn not_found(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    pub(crate) fn node(e: crate::rpc::RpcError) -> ApiError {
        match e {
            crate::rpc::RpcError::Node { message, .. } => ApiError::bad(
                "EXECUTION_REVERTED",
                format!("the node refused the call: {message}"),
            ),
            other => ApiError::new(
                StatusCode::BAD_GATEWAY,
                "NODE_UNAVAILABLE",
                format!("the chain node failed: {other}"),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({
            "result": false,
            "status": self.status.as_u16(),
            "code": self.code,
            "message": self.message,
        });
        (self.status, axum::Json(body)).into_response()
    }
}

/// The success envelope `{result: true, status: 200, code: "OK", data}`.
pub(crate) fn ok(data: Value) -> Response {
    axum::Json(json!({"result": true, "status": 200, "code": "OK", "data": data})).into_response()
}

/// A JSON body, for POST and for the platform's GETs with a body. Requires
/// `Content-Type: application/json`; errors are envelopes naming what is wrong.
pub(crate) struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("application/json")
            });
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            ApiError::bad("INVALID_JSON", format!("cannot read the request body: {e}"))
        })?;
        if bytes.is_empty() {
            return Err(ApiError::bad(
                "INVALID_JSON",
                "request body is missing: expected a JSON object",
            ));
        }
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UNSUPPORTED_MEDIA_TYPE",
                "expected header content-type: application/json",
            ));
        }
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            use serde_json::error::Category;
            match e.classify() {
                Category::Data => {
                    ApiError::bad("INVALID_FIELD", format!("invalid request body: {e}"))
                }
                _ => ApiError::bad(
                    "INVALID_JSON",
                    format!("request body is not valid JSON: {e}"),
                ),
            }
        })
    }
}
