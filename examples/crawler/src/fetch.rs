//! One HTTP exchange, fetched safely: timeouts, no automatic redirects (the crawl decides about
//! each target), a cap on the body read from the wire, and a content-type filter decided on the
//! headers, before the body is read.

use std::time::{Duration, SystemTime};

use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Client, StatusCode, Version, redirect};
use url::Url;

use crate::skip::SkipReason;

/// Limits and filters applied to every fetch.
#[derive(Clone, Debug)]
pub(crate) struct FetchPolicy {
    /// User-Agent header, product token first.
    pub(crate) user_agent: String,
    /// Whole-request timeout (connect, headers and body).
    pub(crate) timeout: Duration,
    /// Connect timeout.
    pub(crate) connect_timeout: Duration,
    /// Largest body read from the wire.
    pub(crate) max_body: u64,
    /// Accepted content types of successful responses: exact types (`text/html`), prefixes
    /// ending in `/` (`image/`), or `*`.
    pub(crate) accept: Vec<String>,
}

impl FetchPolicy {
    /// Whether a `Content-Type` header value is accepted.
    pub(crate) fn accepts(&self, content_type: &str) -> bool {
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        self.accept
            .iter()
            .any(|a| a == "*" || (a.ends_with('/') && mime.starts_with(a.as_str())) || *a == mime)
    }
}

/// A failed fetch.
#[derive(Debug)]
pub(crate) struct FetchFailure {
    pub(crate) reason: SkipReason,
    pub(crate) detail: String,
}

/// A complete response, body as it came off the wire.
#[derive(Debug)]
pub(crate) struct Exchange {
    /// The request as sent, for the WARC request record.
    pub(crate) request_head: Vec<u8>,
    pub(crate) status: StatusCode,
    pub(crate) version: Version,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
    pub(crate) date: SystemTime,
}

impl Exchange {
    /// Status line and headers, for the WARC response record. `Transfer-Encoding` is left out
    /// because the body is stored de-chunked.
    pub(crate) fn response_head(&self) -> Vec<u8> {
        let version = match self.version {
            Version::HTTP_10 => "HTTP/1.0",
            Version::HTTP_2 => "HTTP/2",
            _ => "HTTP/1.1",
        };
        let mut out = format!(
            "{version} {} {}\r\n",
            self.status.as_u16(),
            self.status.canonical_reason().unwrap_or("")
        )
        .into_bytes();
        for (name, value) in &self.headers {
            if name == header::TRANSFER_ENCODING {
                continue;
            }
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    pub(crate) fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The HTTP client of the crawl.
#[derive(Clone, Debug)]
pub(crate) struct Fetcher {
    client: Client,
    policy: FetchPolicy,
}

const ACCEPT_ENCODING: &str = "gzip, deflate";

impl Fetcher {
    pub(crate) fn new(policy: FetchPolicy) -> Result<Self, reqwest::Error> {
        // Installing twice (tests, demo) is harmless: the first provider stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static(ACCEPT_ENCODING),
        );
        let client = Client::builder()
            .user_agent(policy.user_agent.clone())
            .default_headers(headers)
            .redirect(redirect::Policy::none())
            .timeout(policy.timeout)
            .connect_timeout(policy.connect_timeout)
            .no_proxy()
            .build()?;
        Ok(Self { client, policy })
    }

    /// GETs `url`. Successful responses of a type the policy does not accept are refused on
    /// their headers; any body larger than `max_body` is refused as it streams in.
    pub(crate) async fn get(
        &self,
        url: &Url,
        max_body: u64,
        filter_type: bool,
    ) -> Result<Exchange, FetchFailure> {
        let date = SystemTime::now();
        let mut response = self.client.get(url.clone()).send().await.map_err(failure)?;
        let status = response.status();
        let headers = response.headers().clone();
        if filter_type && status.is_success() {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/octet-stream");
            if !self.policy.accepts(ct) {
                return Err(FetchFailure {
                    reason: SkipReason::ContentType,
                    detail: ct.to_owned(),
                });
            }
        }
        if response.content_length().is_some_and(|len| len > max_body) {
            return Err(too_large(max_body));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failure)? {
            if (body.len() + chunk.len()) as u64 > max_body {
                return Err(too_large(max_body));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Exchange {
            request_head: self.request_head(url),
            status,
            version: response.version(),
            headers,
            body,
            date,
        })
    }

    fn request_head(&self, url: &Url) -> Vec<u8> {
        let mut target = url.path().to_owned();
        if let Some(q) = url.query() {
            target.push('?');
            target.push_str(q);
        }
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_owned(),
        };
        format!(
            "GET {target} HTTP/1.1\r\nhost: {host}\r\nuser-agent: {}\r\naccept: */*\r\naccept-encoding: {ACCEPT_ENCODING}\r\n\r\n",
            self.policy.user_agent
        )
        .into_bytes()
    }
}

fn too_large(limit: u64) -> FetchFailure {
    FetchFailure {
        reason: SkipReason::BodyTooLarge,
        detail: format!("over {limit} bytes"),
    }
}

fn failure(e: reqwest::Error) -> FetchFailure {
    let reason = if e.is_timeout() {
        SkipReason::Timeout
    } else {
        SkipReason::FetchFailed
    };
    let mut detail = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    FetchFailure { reason, detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_filter() {
        let p = FetchPolicy {
            user_agent: "t".into(),
            timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            max_body: 1,
            accept: vec!["text/html".into(), "image/".into()],
        };
        assert!(p.accepts("text/html; charset=utf-8"));
        assert!(p.accepts("TEXT/HTML"));
        assert!(p.accepts("image/png"));
        assert!(!p.accepts("application/pdf"));
        assert!(!p.accepts("text/htmlx"));
    }
}
