//! `bridgectl key ...` end to end.
