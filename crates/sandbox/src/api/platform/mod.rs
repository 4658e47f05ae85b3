//! Handlers of the platform API (`/svc`, `/mx`, `/tx`) and the sandbox-only routes.

mod accounts;
mod actions;
mod common;
mod hostile;
mod redemption;
mod registry;
mod sign;
mod submit;
mod swap;
mod token;

pub(super) use accounts::{balance_mt, balance_st, nonce, raw_transfer};
pub(super) use actions::{execute, list_actions};
pub(super) use redemption::redemption;
pub(super) use registry::{
    chain_rpc, create_managed, fund, hostile, list_managed, mining, register, registration, reorg,
};
pub(super) use sign::sign;
pub(super) use submit::submit;
pub(super) use swap::{list_swaps, swap};
pub(super) use token::issue_token;
