//! One HTTP exchange, fetched safely: timeouts, no automatic redirects (the crawl decides about
//! each target), a cap on the body read from the wire, and a content-type filter decided on the
//! headers, before the body is read.

use std::time::{Duration, SystemTime};

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, StatusCode, Version, redirect};
use url::Url;

use crate::skip::SkipReason;

/// What a response said about its version, for a later conditional GET.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Validators {
    pub(crate) etag: Option<String>,
    pub(crate) last_modified: Option<String>,
}

impl Validators {
    /// The validators of a response; `None` when it has neither.
    pub(crate) fn of(headers: &HeaderMap) -> Option<Self> {
        let get = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        let v = Self {
            etag: get(header::ETAG),
            last_modified: get(header::LAST_MODIFIED),
        };
        (v.etag.is_some() || v.last_modified.is_some()).then_some(v)
    }

    /// One line per field (a header value holds no line break); empty for an absent one.
    pub(crate) fn encode(&self) -> String {
        format!(
            "{}\n{}",
            self.etag.as_deref().unwrap_or(""),
            self.last_modified.as_deref().unwrap_or("")
        )
    }

    /// The inverse of [`encode`](Self::encode); `None` for anything else or nothing stored.
    pub(crate) fn decode(s: &str) -> Option<Self> {
        let (etag, modified) = s.split_once('\n')?;
        let some = |x: &str| (!x.is_empty()).then(|| x.to_owned());
        let v = Self {
            etag: some(etag),
            last_modified: some(modified),
        };
        (v.etag.is_some() || v.last_modified.is_some()).then_some(v)
    }
}

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

/// How much of a body a fetch reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyLimit {
    /// A body longer than this many bytes is refused (`body-too-large`): pages.
    Refuse(u64),
    /// Only the first this many bytes are read and the rest is left unread: files whose
    /// beginning is what counts (robots.txt).
    Prefix(u64),
}

impl BodyLimit {
    fn bytes(self) -> u64 {
        match self {
            Self::Refuse(n) | Self::Prefix(n) => n,
        }
    }
}

/// A failed fetch.
#[derive(Debug)]
pub(crate) struct FetchFailure {
    pub(crate) reason: SkipReason,
    pub(crate) detail: String,
    /// A passing failure worth trying again: a timeout, a connection reset after it was
    /// made. A refused connection, a name that does not resolve or a refused type is not.
    pub(crate) transient: bool,
}

/// How failed fetches are tried again (`--retries`, `--retry-wait-ms`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retry {
    pub(crate) times: u32,
    pub(crate) first_wait: Duration,
}

/// The longest wait before a retry, whatever `Retry-After` asks.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(600);

impl Retry {
    /// The wait before retry number `attempt` (0 for the first): what the server's
    /// `Retry-After` asks, else the first wait doubled at each attempt, at most 10 minutes.
    pub(crate) fn wait(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        retry_after
            .unwrap_or_else(|| {
                self.first_wait
                    .saturating_mul(2u32.saturating_pow(attempt.min(20)))
            })
            .min(MAX_RETRY_WAIT)
    }

    /// Whether a response with `status` is worth trying again.
    pub(crate) fn transient(status: StatusCode) -> bool {
        matches!(status.as_u16(), 429 | 500 | 502 | 503 | 504)
    }

    /// What a response's `Retry-After` asks, in seconds (an HTTP date is taken as "later":
    /// the doubling wait applies).
    pub(crate) fn after(x: &Exchange) -> Option<Duration> {
        let secs: u64 = x.header(header::RETRY_AFTER)?.trim().parse().ok()?;
        Some(Duration::from_secs(secs))
    }
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
    /// Whether `body` is only the beginning of what the server sent ([`BodyLimit::Prefix`]).
    pub(crate) truncated: bool,
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
    /// their headers; the body is read as far as `limit` says, as it streams in.
    pub(crate) async fn get(
        &self,
        url: &Url,
        limit: BodyLimit,
        filter_type: bool,
    ) -> Result<Exchange, FetchFailure> {
        self.get_if_changed(url, limit, filter_type, None).await
    }

    /// [`get`](Self::get), conditional on the page having changed since `known` was stored
    /// (`If-None-Match`, `If-Modified-Since`): an unchanged page answers 304 with no body.
    pub(crate) async fn get_if_changed(
        &self,
        url: &Url,
        limit: BodyLimit,
        filter_type: bool,
        known: Option<&Validators>,
    ) -> Result<Exchange, FetchFailure> {
        let date = SystemTime::now();
        // The headers this request adds to the client's own, kept for the WARC record, so
        // the record holds what was sent.
        let mut extra: Vec<(HeaderName, String)> = Vec::new();
        if let Some(v) = known {
            if let Some(etag) = &v.etag {
                extra.push((header::IF_NONE_MATCH, etag.clone()));
            }
            if let Some(modified) = &v.last_modified {
                extra.push((header::IF_MODIFIED_SINCE, modified.clone()));
            }
        }
        // User information kept in a URL (`--keep-userinfo`) is sent as basic authentication,
        // here rather than by the client, so the WARC record shows it; the request target
        // holds no user information.
        let mut target = url.clone();
        if !url.username().is_empty() || url.password().is_some() {
            use base64::Engine as _;
            let user = percent_decoded(url.username());
            let password = url.password().map(percent_decoded).unwrap_or_default();
            let token =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            extra.push((header::AUTHORIZATION, format!("Basic {token}")));
            let _ = target.set_username("");
            let _ = target.set_password(None);
        }
        let mut request = self.client.get(target.clone());
        for (name, value) in &extra {
            request = request.header(name, value);
        }
        let mut response = request.send().await.map_err(failure)?;
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
                    transient: false,
                });
            }
        }
        let max = limit.bytes();
        let declared = response.content_length();
        if let BodyLimit::Refuse(max) = limit
            && declared.is_some_and(|len| len > max)
        {
            return Err(too_large(max));
        }
        // Sized from the declared length when there is one, so a body at the cap takes its
        // length in memory, not the next power of two.
        let mut body = Vec::with_capacity(declared.unwrap_or(0).min(max) as usize);
        let mut truncated = false;
        while let Some(chunk) = response.chunk().await.map_err(failure)? {
            let room = (max - body.len() as u64) as usize;
            if chunk.len() > room {
                match limit {
                    BodyLimit::Refuse(max) => return Err(too_large(max)),
                    BodyLimit::Prefix(_) => {
                        body.extend_from_slice(&chunk[..room]);
                        truncated = true;
                        break;
                    }
                }
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Exchange {
            request_head: self.request_head(&target, &extra),
            status,
            version: response.version(),
            headers,
            body,
            truncated,
            date,
        })
    }

    fn request_head(&self, url: &Url, extra: &[(HeaderName, String)]) -> Vec<u8> {
        let mut target = url.path().to_owned();
        if let Some(q) = url.query() {
            target.push('?');
            target.push_str(q);
        }
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_owned(),
        };
        let mut head = format!(
            "GET {target} HTTP/1.1\r\nhost: {host}\r\nuser-agent: {}\r\naccept: */*\r\naccept-encoding: {ACCEPT_ENCODING}\r\n",
            self.policy.user_agent
        );
        for (name, value) in extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        head.into_bytes()
    }
}

/// A URL's user or password, percent-decoded (as the URL standard encodes them).
fn percent_decoded(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

fn too_large(limit: u64) -> FetchFailure {
    FetchFailure {
        reason: SkipReason::BodyTooLarge,
        detail: format!("over {limit} bytes"),
        transient: false,
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
    // A connection never made (refused, no such name) stays so; one lost on the way, or an
    // answer too slow, may come through next time.
    let transient = e.is_timeout() || !e.is_connect();
    FetchFailure {
        reason,
        detail,
        transient,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn validators_round_trip(etag in "[ -~]{0,20}", modified in "[ -~]{0,30}") {
            let v = Validators {
                etag: (!etag.is_empty()).then_some(etag),
                last_modified: (!modified.is_empty()).then_some(modified),
            };
            let back = Validators::decode(&v.encode());
            if v.etag.is_none() && v.last_modified.is_none() {
                proptest::prop_assert_eq!(back, None);
            } else {
                proptest::prop_assert_eq!(back, Some(v));
            }
        }
    }

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
