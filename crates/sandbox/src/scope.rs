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

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;

use crate::config::{FaultConfig, Hostile};
use crate::secret::Secret;
use crate::state::{AppState, lock};

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

/// The outermost layer: serves the request in the scope of its bearer token.
pub(crate) async fn layer(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let scope = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|token| lock(&state.0.scopes.tokens).get(token.trim()).cloned());
    in_scope(scope, next.run(req)).await
}

impl AppState {
    /// Issues a bearer token that never expires and whose requests are in `scope`: the
    /// faults and hostile mode set for `scope` apply to them (and to no other request),
    /// and the request log marks them with `scope`. Tokens of one scope share it.
    pub fn issue_scoped_token(&self, scope: &str) -> Result<Secret, crate::Error> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).map_err(|e| crate::Error::Deploy(format!("no randomness: {e}")))?;
        let token = hex::encode(b);
        lock(&self.0.tokens).insert(token.clone(), None);
        lock(&self.0.scopes.tokens).insert(token.clone(), Arc::from(scope));
        Ok(Secret::new(token))
    }

    /// Sets (or clears, with the default) the fault knobs of `route` for the requests of
    /// `scope` only. They take the place of the route's sandbox-wide knobs for those
    /// requests.
    pub fn set_scoped_fault(&self, scope: &str, route: &str, fault: FaultConfig) {
        let mut all = self
            .0
            .scopes
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
        drop(all);
        self.0.faults_changed.notify_waiters();
    }

    /// Turns hostile mode on (one kind of tampering, for every action, signature and
    /// platform-built transaction) or off for the requests of `scope` only.
    pub fn set_scoped_hostile(&self, scope: &str, hostile: Option<Hostile>) {
        let mut all = self
            .0
            .scopes
            .hostile
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match hostile {
            Some(h) => all.insert(Arc::from(scope), h),
            None => all.remove(scope),
        };
    }

    /// The fault knobs `route` has for the current request's scope, if it has any.
    pub(crate) fn scoped_fault(&self, route: &str) -> Option<FaultConfig> {
        let scope = current()?;
        self.0
            .scopes
            .faults
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&scope)?
            .get(route)
            .cloned()
    }

    /// The hostile mode of the current request's scope, if it has one.
    pub(crate) fn scoped_hostile(&self) -> Option<Hostile> {
        let scope = current()?;
        self.0
            .scopes
            .hostile
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&scope)
            .copied()
    }
}

impl AppState {
    /// The request log's lines (as [`AppState::request_log`]) of the requests in `scope`
    /// only, oldest first.
    pub fn request_log_of(&self, scope: &str) -> Vec<String> {
        lock(&self.0.request_log)
            .iter()
            .filter(|r| r.scope.as_deref() == Some(scope))
            .map(|r| r.line.clone())
            .collect()
    }
}
