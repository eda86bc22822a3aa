//! Per-host rows and the last errors of one process, for the status page.
//!
//! A broad crawl meets millions of hosts, so the rows are kept in bounded room with the
//! Space-Saving algorithm (Metwally, Agrawal and El Abbadi, 2005): up to [`HOST_SLOTS`] hosts
//! are counted exactly; past that, a new host takes over the row of the host with the fewest
//! jobs, and its counts start from that row's (so they may be over, by at most
//! [`HostRow::over`]). A host with more than one job in [`HOST_SLOTS`] of all always has a
//! row.

use std::collections::{HashMap, VecDeque};

/// Hosts counted at once.
pub(crate) const HOST_SLOTS: usize = 256;

/// Errors kept for the "last errors" table.
pub(crate) const LAST_ERRORS: usize = 20;

/// What one host gave this process.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub(crate) struct HostRow {
    pub(crate) host: String,
    /// Responses received (any status).
    pub(crate) pages: u64,
    /// Responses 4xx and 5xx.
    pub(crate) error_responses: u64,
    /// Fetches that gave no usable response (timeout, connection, size, encoding).
    pub(crate) failed: u64,
    /// Body bytes received.
    pub(crate) bytes: u64,
    /// Jobs that may have been other hosts' (0: the row is exact).
    pub(crate) over: u64,
}

impl HostRow {
    fn jobs(&self) -> u64 {
        self.pages + self.failed
    }

    /// Failed fetches and 4xx/5xx answers.
    pub(crate) fn errors(&self) -> u64 {
        self.failed + self.error_responses
    }
}

/// One failed fetch or 4xx/5xx answer.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub(crate) struct ErrorRow {
    /// Seconds since the process started.
    pub(crate) at: f64,
    pub(crate) url: String,
    /// `HTTP 503`, or the skip reason (`timeout`, `fetch-failed`, ...).
    pub(crate) what: String,
    /// The reason's detail (empty for an HTTP status).
    pub(crate) detail: String,
}

/// The per-host rows and the last errors.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    rows: HashMap<String, HostRow>,
    /// Distinct hosts seen, counted when a host first gets a row (a host that lost its row
    /// and comes back counts again, so past [`HOST_SLOTS`] this is an upper bound).
    seen: u64,
    /// Some row was handed over: counts may be over.
    evicted: bool,
    error_responses: u64,
    last: VecDeque<ErrorRow>,
}

impl Tally {
    /// Counts one finished job of `url`: its `answer` (status, body length) or its
    /// `failure` (reason, detail), `at` seconds into the run.
    pub(crate) fn note(
        &mut self,
        url: &str,
        answer: Option<(u16, usize)>,
        failure: Option<(&str, &str)>,
        at: f64,
    ) {
        if answer.is_none() && failure.is_none() {
            return;
        }
        let host = url::Url::parse(url)
            .map(|u| crate::job::host_of(&u))
            .unwrap_or_default();
        let row = self.row(host);
        let mut error = None;
        if let Some((status, len)) = answer {
            row.pages += 1;
            row.bytes += len as u64;
            if status >= 400 {
                row.error_responses += 1;
                error = Some((format!("HTTP {status}"), String::new()));
            }
        }
        if let Some((reason, detail)) = failure {
            row.failed += 1;
            error = Some((reason.to_owned(), detail.to_owned()));
        }
        if let Some((what, detail)) = error {
            if answer.is_some_and(|(s, _)| s >= 400) {
                self.error_responses += 1;
            }
            if self.last.len() == LAST_ERRORS {
                self.last.pop_back();
            }
            self.last.push_front(ErrorRow {
                at,
                url: crate::clip::clip(url, crate::clip::REPORT_FIELD).into_owned(),
                what,
                detail: crate::clip::clip(&detail, crate::clip::REPORT_FIELD).into_owned(),
            });
        }
    }

    /// The row of `host`, made (or handed over) when it has none.
    fn row(&mut self, host: String) -> &mut HostRow {
        if !self.rows.contains_key(&host) {
            self.seen += 1;
            let mut row = HostRow {
                host: host.clone(),
                ..HostRow::default()
            };
            if self.rows.len() >= HOST_SLOTS {
                let smallest = self
                    .rows
                    .values()
                    .min_by_key(|r| r.jobs())
                    .map(|r| r.host.clone())
                    .unwrap_or_default();
                if let Some(old) = self.rows.remove(&smallest) {
                    self.evicted = true;
                    row = HostRow {
                        host: host.clone(),
                        over: old.jobs(),
                        ..old
                    };
                }
            }
            self.rows.insert(host.clone(), row);
        }
        self.rows.entry(host).or_default()
    }

    /// The `by_pages` hosts with most pages, then those among the `by_errors` hosts with most
    /// errors that are not already listed.
    pub(crate) fn top(&self, by_pages: usize, by_errors: usize) -> Vec<HostRow> {
        let mut rows: Vec<&HostRow> = self.rows.values().collect();
        rows.sort_by(|a, b| b.pages.cmp(&a.pages).then(a.host.cmp(&b.host)));
        let mut top: Vec<HostRow> = rows.iter().take(by_pages).map(|r| (*r).clone()).collect();
        rows.sort_by(|a, b| b.errors().cmp(&a.errors()).then(a.host.cmp(&b.host)));
        for r in rows.iter().take(by_errors) {
            if r.errors() > 0 && !top.iter().any(|t| t.host == r.host) {
                top.push((*r).clone());
            }
        }
        top
    }

    pub(crate) fn hosts_seen(&self) -> u64 {
        self.seen
    }

    /// Whether every row counts its host alone.
    pub(crate) fn exact(&self) -> bool {
        !self.evicted
    }

    /// 4xx and 5xx answers received.
    pub(crate) fn error_responses(&self) -> u64 {
        self.error_responses
    }

    /// The last errors, newest first.
    pub(crate) fn last_errors(&self) -> Vec<ErrorRow> {
        self.last.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_pages_errors_and_bytes_per_host() {
        let mut t = Tally::default();
        t.note("http://a.example/1", Some((200, 100)), None, 1.0);
        t.note("https://a.example/2", Some((503, 10)), None, 2.0);
        t.note(
            "http://b.example:8080/",
            None,
            Some(("timeout", "after 30 s")),
            3.0,
        );
        t.note("http://a.example/3", Some((200, 5)), None, 4.0);
        // Neither an answer nor a failure (a trap, a robots.txt refusal): not a fetch.
        t.note("http://c.example/", None, None, 5.0);
        let top = t.top(10, 5);
        assert_eq!(
            top,
            [
                HostRow {
                    host: "a.example".into(),
                    pages: 3,
                    error_responses: 1,
                    failed: 0,
                    bytes: 115,
                    over: 0
                },
                HostRow {
                    host: "b.example:8080".into(),
                    pages: 0,
                    error_responses: 0,
                    failed: 1,
                    bytes: 0,
                    over: 0
                },
            ]
        );
        assert_eq!(t.hosts_seen(), 2);
        assert!(t.exact());
        assert_eq!(t.error_responses(), 1);
        let last: Vec<_> = t.last_errors().into_iter().map(|e| e.what).collect();
        assert_eq!(last, ["timeout", "HTTP 503"]);
    }

    /// A host with errors is shown even when the rows by pages are full of busier hosts.
    #[test]
    fn a_failing_host_is_listed_after_the_busiest() {
        let mut t = Tally::default();
        for h in 0..12 {
            for _ in 0..(20 - h) {
                t.note(&format!("http://h{h}.example/"), Some((200, 1)), None, 0.0);
            }
        }
        t.note(
            "http://bad.example/",
            None,
            Some(("fetch-failed", "reset")),
            0.0,
        );
        let hosts: Vec<_> = t.top(3, 5).into_iter().map(|r| r.host).collect();
        assert_eq!(
            hosts,
            ["h0.example", "h1.example", "h2.example", "bad.example"]
        );
    }

    /// Past its room, the tally keeps the heavy hosts exactly and says its rows may be over.
    #[test]
    fn the_rows_stay_bounded_and_keep_the_heavy_hosts() {
        let mut t = Tally::default();
        for i in 0..10 * HOST_SLOTS {
            t.note("http://big.example/", Some((200, 1)), None, 0.0);
            t.note(&format!("http://h{i}.example/"), Some((200, 1)), None, 0.0);
        }
        assert_eq!(t.rows.len(), HOST_SLOTS);
        assert!(!t.exact());
        let top = t.top(1, 0);
        assert_eq!(top[0].host, "big.example");
        assert_eq!(top[0].pages, 10 * HOST_SLOTS as u64);
        assert_eq!(top[0].over, 0);
    }

    #[test]
    fn the_last_errors_are_bounded_newest_first() {
        let mut t = Tally::default();
        for i in 0..LAST_ERRORS + 5 {
            t.note(
                &format!("http://a.example/{i}"),
                Some((404, 0)),
                None,
                i as f64,
            );
        }
        let last = t.last_errors();
        assert_eq!(last.len(), LAST_ERRORS);
        assert_eq!(last[0].url, format!("http://a.example/{}", LAST_ERRORS + 4));
        assert_eq!(t.error_responses(), (LAST_ERRORS + 5) as u64);
    }
}
