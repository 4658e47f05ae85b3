//! The chains and networks of the web3 API, in one table.
//!
//! The spec names four chain families; public sources confirm the first two
//! (`ethereum`, `polygon`). The other two are inferred (`arbitrum`, `optimism`) and marked
//! so. Everything that validates a chain/network pair must use [`check`], so a correction
//! is one edit here.
//!
//! The web3 client (`bridgectl-webhook`) and the sandbox both validate against it.

/// One chain family and the networks it serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    /// The lowercase path segment, e.g. `ethereum`.
    pub name: &'static str,
    /// The network path segments, `mainnet` first.
    pub networks: &'static [&'static str],
    /// Whether a public source confirms this family (false: inferred).
    pub confirmed: bool,
}

/// Every chain family the web3 API serves, in the spec's order.
pub const CHAINS: &[Chain] = &[
    Chain {
        name: "ethereum",
        networks: &["mainnet", "goerli", "sepolia", "holesky"],
        confirmed: true,
    },
    Chain {
        name: "polygon",
        networks: &["mainnet", "mumbai"],
        confirmed: true,
    },
    Chain {
        name: "arbitrum",
        networks: &["mainnet", "goerli", "sepolia"],
        confirmed: false,
    },
    Chain {
        name: "optimism",
        networks: &["mainnet", "goerli", "sepolia"],
        confirmed: false,
    },
];

/// A chain/network pair the web3 API does not serve. The message lists what it does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnsupportedNetwork {
    /// No such chain family.
    #[error("unsupported chain {chain:?}: expected one of {expected}")]
    Chain {
        /// The chain as given.
        chain: String,
        /// The chains served.
        expected: String,
    },
    /// The chain family has no such network.
    #[error("chain {chain} has no network {network:?}: expected one of {expected}")]
    Network {
        /// The chain.
        chain: String,
        /// The network as given.
        network: String,
        /// Its networks.
        expected: String,
    },
}

/// Looks up a chain family by its path segment.
pub fn chain(name: &str) -> Option<&'static Chain> {
    CHAINS.iter().find(|c| c.name == name)
}

/// Checks that `chain`/`network` is a pair the web3 API serves, before any request.
///
/// Matching is exact (the path segments are lowercase); the error lists what is accepted.
pub fn check(chain_name: &str, network: &str) -> Result<&'static Chain, UnsupportedNetwork> {
    let found = chain(chain_name).ok_or_else(|| UnsupportedNetwork::Chain {
        chain: chain_name.to_owned(),
        expected: CHAINS.iter().map(|c| c.name).collect::<Vec<_>>().join(", "),
    })?;
    if found.networks.contains(&network) {
        Ok(found)
    } else {
        Err(UnsupportedNetwork::Network {
            chain: found.name.to_owned(),
            network: network.to_owned(),
            expected: found.networks.join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_every_listed_pair_and_nothing_else() {
        for c in CHAINS {
            for n in c.networks {
                assert_eq!(check(c.name, n).map(|c| c.name).ok(), Some(c.name));
            }
        }
        assert!(check("ethereum", "mumbai").is_err());
        assert!(check("polygon", "sepolia").is_err());
        assert!(check("Ethereum", "mainnet").is_err());
        assert!(check("bitcoin", "mainnet").is_err());
        let err = check("ethereum", "ropsten")
            .map(|_| ())
            .expect_err("ropsten is not served")
            .to_string();
        assert!(err.contains("ropsten") && err.contains("holesky"), "{err}");
    }
}
