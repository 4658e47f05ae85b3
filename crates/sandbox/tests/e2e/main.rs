//! Sandbox tests over real anvil chains: in-process router tests (`oneshot`) and
//! over-socket flows. One test binary, so it links once.
//!
//! Every test that starts a sandbox ends with [`util::finish`], which checks that its anvil
//! processes are gone; `killed_sandbox_leaves_no_anvil` checks the SIGKILL case.

mod flows;
mod router;
mod util;
mod webhooks;
