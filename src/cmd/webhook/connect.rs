//! The web3 API a webhook command talks to: its URL and token (flag, profile, environment)
//! and, for the commands that manage webhooks, the chain and network.

use bridgectl_webhook::client::{self, Client};
use bridgectl_webhook::{Error as WebhookError, networks};

use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::opts::{Web3Api, Web3Opts};

/// Checks chain/network, finds the URL and the token, and builds the client. The chain
/// check comes first: a typo never costs a request, not even the token exchange.
pub(super) async fn connect(
    global: &GlobalOpts,
    web3: &Web3Opts,
) -> anyhow::Result<(Client, Target)> {
    let profile = crate::config::load_profile(global).ok();
    let pick = |flag: &Option<String>, field: Option<&String>, name: &str| {
        flag.clone().or_else(|| field.cloned()).ok_or_else(|| {
            coded(
                Code::Usage,
                format!("no web3 {name}: give --{name} or web3_{name} in the profile"),
            )
        })
    };
    let target = Target {
        chain: pick(
            &web3.chain,
            profile.as_ref().and_then(|p| p.web3_chain.as_ref()),
            "chain",
        )?,
        network: pick(
            &web3.network,
            profile.as_ref().and_then(|p| p.web3_network.as_ref()),
            "network",
        )?,
    };
    networks::check(&target.chain, &target.network).map_err(WebhookError::from)?;
    Ok((connect_api(global, &web3.api).await?, target))
}

/// The chain and network a webhook command works on.
pub(super) struct Target {
    pub(super) chain: String,
    pub(super) network: String,
}

/// Finds the URL and the token and builds the client.
pub(super) async fn connect_api(global: &GlobalOpts, web3: &Web3Api) -> anyhow::Result<Client> {
    let profile = match &web3.web3_url {
        Some(_) => crate::config::load_profile(global).ok(),
        None => Some(crate::config::load_profile(global)?),
    };
    let url = match &web3.web3_url {
        Some(u) => u.clone(),
        None => profile
            .as_ref()
            .and_then(|p| p.web3_url.clone())
            .ok_or_else(|| {
                coded(
                    Code::Usage,
                    "no web3 url: give --web3-url, BRIDGECTL_WEB3_URL or web3_url in the profile",
                )
            })?,
    };
    // Refuse an insecure URL before a token is read or exchanged.
    client::check_url(&url)?;
    let token = crate::auth::web3_token(
        &url,
        web3,
        profile.as_ref().and_then(|p| p.web3_token_file.as_deref()),
    )
    .await?;
    Ok(Client::new(&url, token)?)
}
