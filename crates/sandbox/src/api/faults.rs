//! The fault knobs of a route (`[faults.<route>]`): held requests, latency and injected
//! errors before the work, dropped answers after it.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::envelope::ApiError;
use crate::state::AppState;

/// Draws true with probability `rate`.
pub(crate) fn chance(rate: f64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    if rate >= 1.0 {
        return true;
    }
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        return false;
    }
    ((u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64) < rate
}

pub(super) async fn faults(
    State((state, route)): State<(AppState, &'static str)>,
    req: Request,
    next: Next,
) -> Response {
    state.wait_while_held(route).await;
    if let Some(f) = state.fault(route) {
        if f.latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(f.latency_ms)).await;
        }
        if chance(f.error_rate) {
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                format!("injected fault on route {route}: nothing was done, try again"),
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// For submit and execute: whether to replace the answer, after the work, by a 502.
pub(crate) fn dropped(state: &AppState, route: &str) -> Option<ApiError> {
    let f = state.fault(route)?;
    chance(f.drop_after_work).then(|| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "BAD_GATEWAY",
            "upstream connection lost before the response was sent",
        )
    })
}
