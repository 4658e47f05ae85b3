//! The platform access token and the secret files behind it: `BRIDGECTL_ACCESS_TOKEN`,
//! a token file, or the access-key exchange (cached with its expiry, 0600); and the web3
//! API's token, found the same way from its own flag, profile setting and variables.
//! Secrets are read into zeroizing buffers and files that group or others can read are
//! refused, as key files are.

use anyhow::{Context, Result, bail};
use bridgectl_flow::client::{AccessToken, ClientOptions, PlatformClient};
use bridgectl_secret::Secret;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::config::Profile;
use crate::opts::{PlatformOpts, Web3Api};

/// A cached exchanged token.
#[derive(Serialize, Deserialize)]
struct CachedToken {
    token: String,
    #[serde(rename = "expiryAt")]
    expiry_at: String,
}

impl Drop for CachedToken {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.token);
    }
}

/// HTTP options; `BRIDGECTL_RETRIES` sets how often a retry-safe request is retried
/// (default 3; 0 turns retries off, e.g. to see every fault).
pub fn client_options() -> Result<ClientOptions> {
    let mut options = ClientOptions::default();
    if let Ok(v) = std::env::var("BRIDGECTL_RETRIES") {
        options.retries = v
            .parse()
            .map_err(|_| anyhow::anyhow!("BRIDGECTL_RETRIES={v:?}: expected a small integer"))?;
    }
    Ok(options)
}

/// The first line of a secret file (a token, a secret key, a passphrase), refused when
/// group or others can read it. Zeroized when dropped.
pub fn read_secret_file(path: &std::path::Path, what: &str) -> Result<Secret> {
    bridgectl_keystore::check_private_file(path)?;
    let text = Zeroizing::new(
        std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {what} file {}", path.display()))?,
    );
    let first = text.lines().next().unwrap_or("").trim();
    if first.is_empty() {
        return Err(crate::exit::coded(
            crate::exit::Code::Usage,
            format!("{what} file {} is empty", path.display()),
        ));
    }
    Ok(Secret::new(first))
}

/// The access token: `BRIDGECTL_ACCESS_TOKEN`, then a token file, then the access-key
/// exchange (cached with its expiry, 0600, under the state dir).
pub async fn resolve_token(
    profile: &Profile,
    opts: &PlatformOpts,
    base_url: &str,
) -> Result<AccessToken> {
    if let Ok(t) = std::env::var("BRIDGECTL_ACCESS_TOKEN")
        && !t.is_empty()
    {
        return Ok(AccessToken::new(t));
    }
    if let Some(path) = opts.token_file.as_ref().or(profile.token_file.as_ref()) {
        let token = read_secret_file(path, "token")?;
        return Ok(AccessToken::new(token.expose_secret()));
    }
    let Some(access_key) = &profile.access_key else {
        bail!(
            "no access token: set BRIDGECTL_ACCESS_TOKEN, --token-file (or token_file in the \
             profile), or access_key in the profile with BRIDGECTL_SECRET_KEY(_FILE)"
        );
    };
    let cache = crate::paths::token_cache(base_url, access_key);
    let cached = cache
        .as_ref()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .map(Zeroizing::new)
        .and_then(|text| serde_json::from_str::<CachedToken>(&text).ok())
        .filter(|c| still_valid(&c.expiry_at));
    if let Some(mut c) = cached {
        return Ok(AccessToken::new(std::mem::take(&mut c.token)));
    }
    let secret = match std::env::var("BRIDGECTL_SECRET_KEY") {
        Ok(s) if !s.is_empty() => Secret::new(s),
        _ => match std::env::var_os("BRIDGECTL_SECRET_KEY_FILE") {
            Some(p) => read_secret_file(std::path::Path::new(&p), "secret key")?,
            None => bail!(
                "access_key is set but neither BRIDGECTL_SECRET_KEY nor BRIDGECTL_SECRET_KEY_FILE is"
            ),
        },
    };
    let issued = PlatformClient::issue_token(
        base_url,
        access_key,
        &secret,
        604_800,
        ClientOptions::default(),
    )
    .await?;
    if let Some(path) = &cache {
        let cached = CachedToken {
            token: issued.token.expose_secret().to_owned(),
            expiry_at: issued.expiry_at.clone(),
        };
        // Best effort: a failed cache write only costs another exchange next time.
        let text = Zeroizing::new(serde_json::to_string(&cached)?);
        let _ = crate::files::write_replace(path, text.as_bytes());
    }
    Ok(issued.token)
}

/// The web3 API's token, in this order: `--web3-token-file` (or the profile's
/// `web3_token_file`), `BRIDGECTL_WEB3_TOKEN`, then a key exchange at `url` with
/// `BRIDGECTL_WEB3_NODE_ID`, `BRIDGECTL_WEB3_KEY_ID` and `BRIDGECTL_WEB3_KEY_SECRET`.
pub async fn web3_token(
    url: &str,
    web3: &Web3Api,
    profile_file: Option<&std::path::Path>,
) -> Result<Secret> {
    if let Some(path) = web3.web3_token_file.as_deref().or(profile_file) {
        return read_secret_file(path, "web3 token");
    }
    if let Some(token) = env_nonempty("BRIDGECTL_WEB3_TOKEN") {
        return Ok(Secret::new(token));
    }
    let node = env_nonempty("BRIDGECTL_WEB3_NODE_ID");
    let key_id = env_nonempty("BRIDGECTL_WEB3_KEY_ID");
    let secret = env_nonempty("BRIDGECTL_WEB3_KEY_SECRET").map(Secret::new);
    match (node, key_id, secret) {
        (Some(node), Some(key_id), Some(secret)) => {
            bridgectl_webhook::client::exchange_token(url, &node, &key_id, &secret)
                .await
                .context("web3 token exchange failed")
        }
        _ => Err(crate::exit::coded(
            crate::exit::Code::Usage,
            "no web3 token: set --web3-token-file, BRIDGECTL_WEB3_TOKEN, or BRIDGECTL_WEB3_NODE_ID + BRIDGECTL_WEB3_KEY_ID + BRIDGECTL_WEB3_KEY_SECRET",
        )),
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn still_valid(expiry_at: &str) -> bool {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::parse(expiry_at, &Rfc3339)
        .map(|t| t > time::OffsetDateTime::now_utc() + time::Duration::minutes(1))
        .unwrap_or(false)
}
