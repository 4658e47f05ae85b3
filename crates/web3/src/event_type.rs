//! The event types the web3 API accepts (platform-facts.md, "Webhooks"), in one list that
//! the client, the listener's re-creation of removed webhooks and the sandbox all use.
//! `NEW_HEADS` is deprecated upstream and not offered.

use std::fmt;
use std::str::FromStr;

/// An event type of the web3 API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventType {
    /// Any activity of the given addresses.
    AddressActivity,
    /// Transactions of the given addresses.
    Transaction,
    /// Mined transactions of the given addresses.
    MinedTransaction,
    /// Successful transactions of the given addresses.
    SuccessfulTransaction,
    /// Failed transactions of the given addresses.
    FailedTransaction,
    /// Transfers of the given tokens.
    TokenTransfer,
    /// An address's balance fell below a threshold.
    BelowThresholdBalance,
    /// One notification per `period` blocks.
    BlockPeriod,
    /// Calls from listed callers.
    BlockListCaller,
    /// Calls from callers not on an allow list.
    AllowListCaller,
    /// Contract logs (deprecated upstream; condition given verbatim).
    Log,
}

impl EventType {
    /// Every type, in the documented order.
    pub const ALL: [EventType; 11] = [
        EventType::AddressActivity,
        EventType::Transaction,
        EventType::MinedTransaction,
        EventType::SuccessfulTransaction,
        EventType::FailedTransaction,
        EventType::TokenTransfer,
        EventType::BelowThresholdBalance,
        EventType::BlockPeriod,
        EventType::BlockListCaller,
        EventType::AllowListCaller,
        EventType::Log,
    ];

    /// The wire name, e.g. `BLOCK_PERIOD`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::AddressActivity => "ADDRESS_ACTIVITY",
            EventType::Transaction => "TRANSACTION",
            EventType::MinedTransaction => "MINED_TRANSACTION",
            EventType::SuccessfulTransaction => "SUCCESSFUL_TRANSACTION",
            EventType::FailedTransaction => "FAILED_TRANSACTION",
            EventType::TokenTransfer => "TOKEN_TRANSFER",
            EventType::BelowThresholdBalance => "BELOW_THRESHOLD_BALANCE",
            EventType::BlockPeriod => "BLOCK_PERIOD",
            EventType::BlockListCaller => "BLOCK_LIST_CALLER",
            EventType::AllowListCaller => "ALLOW_LIST_CALLER",
            EventType::Log => "LOG",
        }
    }

    /// The type whose wire name is exactly `name`: what the API itself accepts.
    pub fn from_wire(name: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Every wire name, comma separated, for messages.
    pub fn names() -> String {
        EventType::ALL.map(EventType::as_str).join(", ")
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not an event type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid webhook event type: {found:?} is not one of {}",
    EventType::names()
)]
pub struct UnknownEventType {
    /// The name as given.
    pub found: String,
}

impl FromStr for EventType {
    type Err = UnknownEventType;

    /// Accepts the wire name in any case, with `-` for `_` (what a person types).
    fn from_str(s: &str) -> Result<Self, UnknownEventType> {
        EventType::from_wire(&s.trim().to_ascii_uppercase().replace('-', "_")).ok_or_else(|| {
            UnknownEventType {
                found: s.to_owned(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_people_may_type_lowercase() {
        for t in EventType::ALL {
            assert_eq!(EventType::from_wire(t.as_str()), Some(t));
        }
        assert_eq!(
            "block-period".parse::<EventType>(),
            Ok(EventType::BlockPeriod)
        );
        assert_eq!(EventType::from_wire("block_period"), None);
        let err = "NEW_HEADS".parse::<EventType>().expect_err("deprecated");
        assert!(err.to_string().contains("BLOCK_PERIOD"), "{err}");
    }
}
