//! The server under replay: `http[s]://host[:port][/prefix]`, resolved once before the schedule.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::ReplayError;

#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    /// `host[:port]` as written, the Host header when neither the plan nor the caller gives one.
    pub authority: String,
    /// Prepended to every request's target (no trailing slash); empty for `/`.
    pub prefix: String,
    /// An https target: the host its certificate must name.
    pub tls_host: Option<String>,
}

impl Target {
    pub fn parse(url: &str) -> Result<Self, ReplayError> {
        let bad = |why: &str| ReplayError::Target(format!("target {url:?} {why}"));
        let (rest, tls) = if let Some(rest) = url.strip_prefix("http://") {
            (rest, false)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (rest, true)
        } else {
            return Err(bad("is not an http:// or https:// URL"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(bad("has no host (or has user information)"));
        }
        if path.contains(['?', '#']) {
            return Err(bad("has a query or fragment; give only a path prefix"));
        }
        let with_port = if has_port(authority) {
            authority.to_owned()
        } else {
            format!("{authority}:{}", if tls { 443 } else { 80 })
        };
        let host = match authority.rfind(':') {
            Some(colon) if has_port(authority) => &authority[..colon],
            _ => authority,
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| bad(&format!("does not resolve: {e}")))?
            .next()
            .ok_or_else(|| bad("resolves to no address"))?;
        Ok(Self {
            addr,
            authority: authority.to_owned(),
            prefix: path.trim_end_matches('/').to_owned(),
            tls_host: tls.then(|| host.to_owned()),
        })
    }
}

/// Whether `host[:port]` names a port (an IPv6 literal is bracketed: `[::1]:8080`).
fn has_port(authority: &str) -> bool {
    match authority.rfind(']') {
        Some(close) => authority[close..].contains(':'),
        None => authority.contains(':'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_address_host_header_and_prefix() {
        let t = Target::parse("http://127.0.0.1:8080/site/").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            (t.authority.as_str(), t.prefix.as_str()),
            ("127.0.0.1:8080", "/site")
        );
        let t = Target::parse("http://[::1]:81").unwrap();
        assert_eq!(t.addr, "[::1]:81".parse().unwrap());
        assert_eq!(Target::parse("http://127.0.0.1").unwrap().addr.port(), 80);
        let t = Target::parse("https://[::1]").unwrap();
        assert_eq!((t.addr.port(), t.tls_host.as_deref()), (443, Some("[::1]")));
        let t = Target::parse("https://127.0.0.1:8443/x").unwrap();
        assert_eq!(t.tls_host.as_deref(), Some("127.0.0.1"));
        assert_eq!(Target::parse("http://127.0.0.1").unwrap().tls_host, None);
    }

    #[test]
    fn what_is_not_an_http_url_is_refused_by_name() {
        for url in [
            "ftp://x",
            "127.0.0.1:80",
            "http://",
            "http://u@h/",
            "http://h/?q",
            "https://",
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(&format!("{url:?}")), "{e}");
        }
    }
}
