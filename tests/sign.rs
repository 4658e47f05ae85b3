//! `bridgectl sign` and `bridgectl tx decode` end to end.
