//! Scopes: one caller's share of a sandbox that many callers use at once.
//!
//! A fault set with [`AppState::set_fault`] or a hostile mode set with
//! [`AppState::set_hostile`] is the whole platform's: every client meets it. A test suite
//! that runs its tests side by side against one sandbox needs the same faults for one
//! client only, or each test that drops, holds or tampers with an answer must start a
//! sandbox of its own. So a caller can be given a bearer token of its own
//! ([`AppState::issue_scoped_token`]), and faults and hostile modes can be set for the
//! requests made with that token only ([`AppState::set_scoped_fault`],
//! [`AppState::set_scoped_hostile`]). The request log names each request's scope
//! ([`crate::LoggedRequest::scope`]), so such a caller can also tell its own requests from
//! everyone else's.
//!
//! How a request learns its scope: the outermost layer of the API looks the bearer token
//! up and serves the rest of the request inside [`in_scope`]; every fault and hostile-mode
//! lookup made while the request is served ([`current`]) sees it, with no handler passing
//! it on. Work a handler moves to a task of its own must take the scope along
//! ([`in_scope`] again).
//!
//! What a scope does not reach: the chains, the relayer and the webhook deliverer. Their
//! faults (mining stopped, a chain reset) are the whole sandbox's.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, RwLock};

use crate::config::{FaultConfig, Hostile};

tokio::task_local! {
    /// The scope of the request being served, if its token has one.
    static SCOPE: Option<Arc<str>>;
}

/// The scope of the request being served on this task (`None` outside a request, or for a
/// token of no scope).
pub(crate) fn current() -> Option<Arc<str>> {
    SCOPE.try_with(Clone::clone).ok().flatten()
}

/// Runs `work` as part of a request in `scope`.
pub(crate) async fn in_scope<F: Future>(scope: Option<Arc<str>>, work: F) -> F::Output {
    SCOPE.scope(scope, work).await
}

/// Reads or writes what a lock holds, recovering from poisoning (a panicked holder leaves
/// plain data).
fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the scopes hold: which token is whose, and each scope's faults and hostile mode.
#[derive(Default)]
pub(crate) struct Scopes {
    /// bearer token -> scope
    tokens: Mutex<HashMap<String, Arc<str>>>,
    /// scope -> route -> fault
    faults: RwLock<HashMap<Arc<str>, HashMap<String, FaultConfig>>>,
    /// scope -> hostile mode
    hostile: RwLock<HashMap<Arc<str>, Hostile>>,
}

impl Scopes {
    /// The scope of bearer `token`, if it has one.
    pub(crate) fn of_token(&self, token: &str) -> Option<Arc<str>> {
        locked(&self.tokens).get(token).cloned()
    }

    /// Puts the requests made with `token` in `scope`.
    pub(crate) fn add_token(&self, token: String, scope: &str) {
        locked(&self.tokens).insert(token, Arc::from(scope));
    }

    /// Sets (or clears, with the default) the fault knobs of `route` in `scope`.
    pub(crate) fn set_fault(&self, scope: &str, route: &str, fault: FaultConfig) {
        let mut all = self
            .faults
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if fault == FaultConfig::default() {
            if let Some(routes) = all.get_mut(scope) {
                routes.remove(route);
            }
        } else {
            all.entry(Arc::from(scope))
                .or_default()
                .insert(route.to_owned(), fault);
        }
    }

    /// Sets (or clears) the hostile mode of `scope`.
    pub(crate) fn set_hostile(&self, scope: &str, hostile: Option<Hostile>) {
        let mut all = self
            .hostile
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match hostile {
            Some(h) => all.insert(Arc::from(scope), h),
            None => all.remove(scope),
        };
    }

    /// The fault knobs `route` has for the current request's scope, if it has any.
    pub(crate) fn fault(&self, route: &str) -> Option<FaultConfig> {
        let scope = current()?;
        self.faults
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&scope)?
            .get(route)
            .cloned()
    }

    /// The hostile mode of the current request's scope, if it has one.
    pub(crate) fn hostile(&self) -> Option<Hostile> {
        let scope = current()?;
        self.hostile
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&scope)
            .copied()
    }
}
