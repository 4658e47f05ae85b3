//! Sandbox tests over real anvil chains: in-process router tests (`oneshot`),
//! over-socket flows, and the effects model of bridgectl-tx held to the ST contract
//! (`effects_model`). One test binary, so it links once.
//!
//! Every test that starts a sandbox ends with [`util::finish`], which checks that its anvil
//! processes are gone; `killed_sandbox_leaves_no_anvil` checks the SIGKILL case.

mod effects_model;
mod flows;
mod router;
mod util;
mod webhooks;
