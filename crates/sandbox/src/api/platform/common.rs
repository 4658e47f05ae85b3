//! What every handler of the platform API shares: parsing request fields, hex
//! quantities, and finding a chain by environment or id.

use alloy_primitives::{Address, B256};
use axum::response::Response;
use uuid::Uuid;

use crate::api::envelope::ApiError;
use crate::chain::Chain;
use crate::state::{AppState, Redemption, lock, now};

pub(crate) type ApiResult = Result<Response, ApiError>;

/// Parses an address from a request, naming the field on failure.
pub(crate) fn parse_address(field: &str, value: &str) -> Result<Address, ApiError> {
    let hex = value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"));
    match hex {
        Some(h) if h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            value.parse().map_err(|_| {
                ApiError::bad(
                    "INVALID_ADDRESS",
                    format!("{field}: invalid address {value:?}"),
                )
            })
        }
        _ => Err(ApiError::bad(
            "INVALID_ADDRESS",
            format!("{field}: expected a 0x-prefixed 20-byte hex address, found {value:?}"),
        )),
    }
}

pub(crate) fn hex_quantity(field: &str, v: &str) -> Result<u128, ApiError> {
    let h = v.strip_prefix("0x").ok_or_else(|| {
        ApiError::bad(
            "INVALID_RAW_TX",
            format!("{field}: expected a 0x-prefixed hex quantity, found {v:?}"),
        )
    })?;
    if h.is_empty() || h.len() > 32 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::bad(
            "INVALID_RAW_TX",
            format!("{field}: expected a 0x-prefixed hex quantity, found {v:?}"),
        ));
    }
    u128::from_str_radix(h, 16)
        .map_err(|_| ApiError::bad("INVALID_RAW_TX", format!("{field}: {v:?} is out of range")))
}

pub(crate) fn q(n: impl Into<u128>) -> String {
    format!("{:#x}", n.into())
}

impl AppState {
    pub(crate) fn chain_by_env(&self, env: &str) -> Option<&Chain> {
        if env == self.0.info.main.environment_id {
            Some(&self.0.main)
        } else if env == self.0.info.side.environment_id {
            Some(&self.0.side)
        } else {
            None
        }
    }

    pub(crate) fn chain_by_id(&self, id: u64) -> Option<&Chain> {
        [&self.0.main, &self.0.side]
            .into_iter()
            .find(|c| c.chain_id == id)
    }

    pub(crate) fn env_error(&self, field: &str, found: &str) -> ApiError {
        ApiError::not_found(
            "ENVIRONMENT_NOT_FOUND",
            format!(
                "{field}: unknown environment {found:?}; this sandbox has {:?} (main) and {:?} (side)",
                self.0.info.main.environment_id, self.0.info.side.environment_id
            ),
        )
    }

    /// Records a submitted ST redeem so it can be looked up before the relayer sees it.
    pub(crate) fn note_redeem(&self, hash: B256, tx_id: Option<Uuid>, redeemer: Address) {
        let info = &self.0.info;
        let t = now();
        lock(&self.0.redemptions)
            .entry(hash)
            // Noted before its link was known (a resend links it): linked now.
            .and_modify(|r| {
                if r.tx_id.is_none() {
                    r.tx_id = tx_id;
                }
            })
            .or_insert_with(|| Redemption {
                tx_id,
                tx_hash: hash,
                status: "requested".into(),
                side_environment_id: info.side.environment_id.clone(),
                main_environment_id: info.main.environment_id.clone(),
                redeemer,
                st_amount: None,
                mt_amount: None,
                main_tx_hash: None,
                reason: None,
                created_at: t.clone(),
                updated_at: t,
            });
    }
}
