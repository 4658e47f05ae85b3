//! A string secret (tokens, keys) that never shows in `Debug` and is wiped on drop: the
//! one secret type of every bridgectl crate ([`bridgectl_secret::Secret`]), so what the
//! sandbox hands out (its token, a funded key) goes to the clients as it is.

pub use bridgectl_secret::Secret;
