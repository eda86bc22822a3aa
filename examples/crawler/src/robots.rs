//! robots.txt (RFC 9309) through `texting_robots`: what a host allows, its crawl delay, and its
//! sitemaps.

use std::time::Duration;

use reqwest::StatusCode;
use texting_robots::Robot;
use url::Url;

use crate::fetch::{BodyLimit, Fetcher};
use crate::skip::SkipReason;

/// RFC 9309 (section 2.5) asks crawlers to parse at least the first 500 KiB of a robots.txt;
/// this much is read and parsed, and the rest of a longer file is left unread.
const MAX_ROBOTS_BYTES: u64 = 512 * 1024;
/// Redirects followed for robots.txt (RFC 9309: at least five).
const MAX_ROBOTS_REDIRECTS: usize = 5;

/// The rules of one host.
#[derive(Debug)]
pub(crate) enum RobotsRules {
    /// No robots.txt (4xx), an unparsable one, or robots checking switched off.
    AllowAll,
    /// robots.txt could not be fetched (5xx or network failure): RFC 9309 says to assume a
    /// complete disallow.
    Unreachable(String),
    /// Parsed rules.
    Parsed(Box<Robot>),
}

impl RobotsRules {
    /// `None` when `url` may be fetched, else why not.
    pub(crate) fn verdict(&self, url: &str) -> Option<SkipReason> {
        match self {
            Self::AllowAll => None,
            Self::Unreachable(_) => Some(SkipReason::RobotsUnreachable),
            Self::Parsed(robot) => (!robot.allowed(url)).then_some(SkipReason::RobotsDisallowed),
        }
    }

    /// The host's `Crawl-delay`.
    pub(crate) fn crawl_delay(&self) -> Option<Duration> {
        match self {
            Self::Parsed(robot) => robot
                .delay
                .filter(|d| d.is_finite() && *d > 0.0)
                // A site cannot stall the crawl forever: a minute between requests at most.
                .map(|d| Duration::from_secs_f32(d.min(60.0))),
            _ => None,
        }
    }

    /// The sitemaps it lists.
    pub(crate) fn sitemaps(&self) -> &[String] {
        match self {
            Self::Parsed(robot) => &robot.sitemaps,
            _ => &[],
        }
    }

    /// Parses a fetched robots.txt; an unparsable file allows everything.
    pub(crate) fn parse(agent: &str, body: &[u8]) -> Self {
        match Robot::new(agent, body) {
            Ok(robot) => Self::Parsed(Box::new(robot)),
            Err(_) => Self::AllowAll,
        }
    }

    /// Fetches and parses the robots.txt of `origin`'s host, following a few redirects.
    pub(crate) async fn fetch(fetcher: &Fetcher, origin: &Url, agent: &str) -> Self {
        let Ok(mut url) = origin.join("/robots.txt") else {
            return Self::AllowAll;
        };
        for _ in 0..=MAX_ROBOTS_REDIRECTS {
            let limit = BodyLimit::Prefix(MAX_ROBOTS_BYTES);
            let exchange = match fetcher.get(&url, limit, false).await {
                Ok(x) => x,
                Err(f) => return Self::Unreachable(f.detail),
            };
            let status = exchange.status;
            if status.is_redirection() {
                match exchange
                    .header(reqwest::header::LOCATION)
                    .and_then(|l| url.join(l).ok())
                {
                    Some(next) => {
                        url = next;
                        continue;
                    }
                    None => return Self::AllowAll,
                }
            }
            if status.is_success() {
                let encoding = exchange.header(reqwest::header::CONTENT_ENCODING);
                return match crate::content_coding::decode_prefix(
                    encoding,
                    &exchange.body,
                    MAX_ROBOTS_BYTES,
                ) {
                    Ok(body) => {
                        let cut = exchange.truncated || body.len() as u64 >= MAX_ROBOTS_BYTES;
                        Self::parse(agent, if cut { whole_lines(&body) } else { &body })
                    }
                    Err(_) => Self::AllowAll,
                };
            }
            if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
                return Self::Unreachable(format!("robots.txt answered {status}"));
            }
            return Self::AllowAll;
        }
        Self::AllowAll
    }
}

/// `text` up to and including its last line break: the part of a file cut at an arbitrary
/// byte that holds only whole lines, so a rule is never read half-way (`Disallow: /a` of
/// `Disallow: /abc`).
fn whole_lines(text: &[u8]) -> &[u8] {
    text.iter()
        .rposition(|&b| b == b'\n')
        .map_or(&[][..], |end| &text[..=end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_delay_and_sitemaps() {
        let txt = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 0.5\nSitemap: http://h/sitemap.xml\n";
        let r = RobotsRules::parse("url-dedup-crawler", txt);
        assert_eq!(
            r.verdict("http://h/private/x"),
            Some(SkipReason::RobotsDisallowed)
        );
        assert_eq!(r.verdict("http://h/public"), None);
        assert_eq!(r.crawl_delay(), Some(Duration::from_millis(500)));
        assert_eq!(r.sitemaps(), ["http://h/sitemap.xml"]);
        assert_eq!(
            RobotsRules::Unreachable(String::new()).verdict("http://h/"),
            Some(SkipReason::RobotsUnreachable)
        );
    }

    #[test]
    fn a_cut_file_keeps_only_whole_lines() {
        assert_eq!(
            whole_lines(b"Disallow: /a\nDisallow: /abc"),
            b"Disallow: /a\n"
        );
        assert_eq!(whole_lines(b"no line break"), b"");
        assert_eq!(whole_lines(b"a\n"), b"a\n");
    }

    #[test]
    fn agent_specific_groups_win() {
        let txt = b"User-agent: url-dedup-crawler\nDisallow: /\n\nUser-agent: *\nAllow: /\n";
        let r = RobotsRules::parse("url-dedup-crawler", txt);
        assert_eq!(r.verdict("http://h/a"), Some(SkipReason::RobotsDisallowed));
    }
}
