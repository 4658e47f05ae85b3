//! What every HTTP client of bridgectl shares (platform, node, web3): a bounded response
//! body, no proxy on the plain-http loopback exception, and URLs that lose their path and
//! query before they reach an error message or the journal.
//!
//! Why each: a server (or anything in between) can answer with an endless body, and
//! reading it whole would let it make us hold any amount of memory; a plain-http request
//! to loopback carries the bearer token in clear text, which a proxy from `HTTP_PROXY`
//! would see; a node URL often carries an API key in its path
//! (`https://host/v3/KEY`), and reqwest's error text quotes the whole URL.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

/// The largest response body any client reads: 1 MiB. Platform envelopes, node answers
/// and web3 pages are a few KiB; an answer this large is not one we can use.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Why a response body could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// The body is over [`MAX_BODY_BYTES`]; reading stopped there.
    #[error("the answer is larger than {limit} bytes; refusing to read more of it")]
    TooLarge {
        /// The cap, bytes.
        limit: usize,
    },
    /// The connection failed while reading (the error carries no URL).
    #[error("reading the answer failed")]
    Read(#[source] reqwest::Error),
}

/// Reads a response body of at most [`MAX_BODY_BYTES`], chunk by chunk with a counter:
/// memory use stays at the cap whatever the server sends or claims in
/// `Content-Length`.
pub async fn read_body(mut resp: reqwest::Response) -> Result<Vec<u8>, BodyError> {
    let limit = MAX_BODY_BYTES;
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| BodyError::Read(e.without_url()))?
    {
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Whether `url` names this machine: a loopback address, or `localhost`. The one place
/// plain http may carry a secret, and the only place the offline signer reaches.
pub fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(|host| {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// A client builder for requests to `url`: redirects off (a redirect would resend the
/// body, tokens and secret keys included, to another host), and no proxy when `url` is
/// plain http, which the clients allow only to loopback (the bearer token would
/// otherwise travel in clear text).
///
/// A plain-http client has no TLS roots either: it never speaks TLS, and loading the
/// machine's roots (parsing every PEM file of the system's store) is most of what
/// building a client costs, 15 ms a client in a debug build, on the caller's thread,
/// which is an async runtime's.
pub fn client_builder(url: &reqwest::Url) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    if url.scheme() == "http" {
        without_tls_roots(builder.no_proxy())
    } else {
        builder
    }
}

#[cfg(feature = "rustls")]
fn without_tls_roots(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    builder.tls_certs_only(Vec::new())
}

#[cfg(not(feature = "rustls"))]
fn without_tls_roots(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    builder
}

/// `url` without its path, query and credentials: `https://host:port/…`, for errors
/// and the journal. Text that is not a URL is cut at its first `/` after the scheme.
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            let mut out = format!("{}://{}", u.scheme(), u.host_str().unwrap_or(""));
            if let Some(port) = u.port() {
                out.push_str(&format!(":{port}"));
            }
            if u.path() != "/" || u.query().is_some() || u.fragment().is_some() {
                out.push_str("/…");
            }
            out
        }
        Err(_) => {
            let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            let host = authority.rsplit('@').next().unwrap_or("");
            let cut = if rest.len() > authority.len() {
                "/…"
            } else {
                ""
            };
            if scheme.is_empty() {
                format!("{host}{cut}")
            } else {
                format!("{scheme}://{host}{cut}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_path_query_and_credentials() {
        assert_eq!(
            redact_url("https://mainnet.example/v3/NODE-API-KEY-abc123"),
            "https://mainnet.example/…"
        );
        assert_eq!(
            redact_url("https://user:pw@node.example:8545/?key=SECRET"),
            "https://node.example:8545/…"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8080/"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(redact_url("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(redact_url("node .example/v3/KEY"), "node .example/…");
        assert_eq!(redact_url("x://u:pw@[bad/KEY"), "x://[bad/…");
        assert_eq!(redact_url("node.example/v3/KEY"), "node.example/…");
        assert!(!redact_url("ws//host/KEY123").contains("KEY123"));
    }
}
