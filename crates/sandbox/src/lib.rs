//! bridgectl-sandbox (stub)
