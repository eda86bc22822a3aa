//! The status page as HTML: a console read at a glance. The figures that matter most on top,
//! small charts of the run, then per-process and per-host rows, the last errors, the log, and
//! what each figure means. No script: the page reloads itself every few seconds.

use std::fmt::Write;

use super::Status;
use super::chart::{self, Series};
use super::history;

/// Rows of the last errors shown (the JSON has them all).
const ERROR_ROWS: usize = 10;

/// Seconds between two reloads of the page.
pub(crate) const RELOAD_SECS: u32 = 5;

/// The style of every page: system fonts, one accent per chart, tables that fit a laptop.
const STYLE: &str = "
:root{--ink:#1d2733;--soft:#5b6776;--line:#dde3ea;--bg:#f5f7fa;--card:#fff;--accent:#2563eb;
--bad:#c62828;--warn:#b26a00;--good:#1b7f3b}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;
color:var(--ink);background:var(--bg)}
header{background:#14202e;color:#fff;padding:14px 0}
header>div,main{max-width:1240px;margin:0 auto;padding-left:28px;padding-right:28px}
header h1{margin:0;font-size:20px;font-weight:600}
header p{margin:2px 0 0;color:#b9c4d0;font-size:13px}
main{padding-top:18px;padding-bottom:40px}
h2{font-size:15px;margin:26px 0 8px}
.cards{display:grid;grid-template-columns:repeat(6,1fr);gap:12px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.card .label{color:var(--soft);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card .value{display:block;font-size:26px;font-weight:600;font-variant-numeric:tabular-nums}
.card .note{color:var(--soft);font-size:12px}
.card.bad .value{color:var(--bad)}
.charts{display:grid;grid-template-columns:repeat(3,1fr);gap:12px;margin-top:14px}
figure{margin:0;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
figcaption{font-size:13px;color:var(--soft)}
figcaption b{color:var(--ink);font-size:15px}
svg.chart{width:100%;height:auto;display:block;margin-top:4px}
svg .grid{stroke:var(--line);stroke-width:1}
svg .scale{fill:var(--soft);font-size:10px}
svg .line{fill:none;stroke-width:2;stroke-linejoin:round}
svg .area{opacity:.12}
svg.pages .line{stroke:var(--accent)} svg.pages .area,svg.pages .dot{fill:var(--accent)}
svg.queue .line{stroke:#7c3aed} svg.queue .area,svg.queue .dot{fill:#7c3aed}
svg.errors .line{stroke:var(--bad)} svg.errors .area,svg.errors .dot{fill:var(--bad)}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line)}
th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-size:12px;color:var(--soft);font-weight:600;background:#fafbfc}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.url{word-break:break-all;width:40%}
td.what{white-space:nowrap}
.two{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.empty{color:var(--soft);background:var(--card);border:1px dashed var(--line);padding:10px 12px;margin:0}
.lvl-WARN{color:var(--warn);font-weight:600}.lvl-ERROR{color:var(--bad);font-weight:600}
.lvl-INFO{color:var(--soft)}
dl{display:grid;grid-template-columns:220px 1fr;gap:6px 16px;margin:0}
dt{font-weight:600}dd{margin:0;color:#33404f}
.verdict{font-size:12px;padding:1px 6px;border-radius:4px;margin-left:6px}
.verdict.good{background:#e3f4e8;color:var(--good)}.verdict.fair{background:#fff3dc;color:var(--warn)}
.verdict.poor{background:#fde5e5;color:var(--bad)}
footer{margin-top:28px;color:var(--soft);font-size:12px}
code{background:#eef1f5;padding:1px 4px;border-radius:3px}
form{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px;max-width:520px}
label{display:block;margin:8px 0 2px;font-weight:600}
input{font:inherit;padding:5px 8px;width:100%}
button{margin-top:12px;font:inherit;padding:6px 14px}
";

/// Escapes text for HTML content and quoted attributes.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `1234567` as `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes as a person reads them: `812 B`, `14.2 MB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A rate in pages per second, with the precision a glance needs.
fn per_sec(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The start of every page.
fn head(title: &str, reload: bool) -> String {
    format!(
        "<!doctype html><html lang=en><meta charset=utf-8>\
         <meta name=viewport content=\"width=device-width,initial-scale=1\">{}\
         <title>{}</title><style>{STYLE}</style>",
        if reload {
            format!("<meta http-equiv=refresh content={RELOAD_SECS}>")
        } else {
            String::new()
        },
        escape(title)
    )
}

/// The whole console.
pub(crate) fn render(s: &Status) -> String {
    let mut page = head(&format!("crawl {} · crawler status", s.crawl), true);
    let _ = write!(
        page,
        "<header><div><h1>{crawl}</h1><p>process {process} · {mode} · up {up} · \
         reloads every {RELOAD_SECS} s</p></div></header><main>",
        crawl = if s.mode == "shared" {
            format!("Crawl <b>{}</b>", escape(&s.crawl))
        } else {
            format!("Crawl into <b>{}</b>", escape(&s.crawl))
        },
        process = escape(&s.process),
        mode = if s.mode == "shared" {
            format!(
                "one of {} processes sharing the crawl through Redis",
                s.processes.len()
            )
        } else {
            "single process".to_owned()
        },
        up = chart::duration(s.uptime_secs),
    );
    page.push_str(&cards(s));
    page.push_str(&charts(s));
    if s.mode == "shared" {
        page.push_str(&processes(s));
    }
    page.push_str(&hosts(s));
    page.push_str(&last_errors(s));
    page.push_str("<div class=two><section>");
    page.push_str(&skips(s));
    page.push_str("</section><section>");
    page.push_str(&log(s));
    page.push_str("</section></div>");
    page.push_str(&meanings(s));
    page.push_str(
        "<footer>The same figures as JSON: <a href=\"/status.json\">/status.json</a>. \
         <a href=\"/rate\">Change the rate limit</a> (needs the token printed at start). \
         Every figure is this process's, unless it says the whole crawl.</footer></main>",
    );
    page
}

fn cards(s: &Status) -> String {
    // Failed fetches and 4xx/5xx answers (`http-error`) are counted once, in `errors`.
    let errors = s.errors;
    let queue = s.queue.map_or("not known".to_owned(), thousands);
    let cards = [
        (
            "pages fetched",
            thousands(s.fetched),
            format!("{} received", bytes(s.bytes)),
            false,
        ),
        (
            "pages / s",
            per_sec(s.recent_pages_per_sec),
            format!("{} over the run", per_sec(s.pages_per_sec)),
            false,
        ),
        (
            "queue",
            queue,
            if s.mode == "shared" {
                "whole crawl"
            } else {
                "waiting to be fetched"
            }
            .to_owned(),
            false,
        ),
        (
            "errors",
            thousands(errors),
            format!(
                "{} without an answer, {} 4xx/5xx",
                thousands(s.errors.saturating_sub(s.error_responses)),
                thousands(s.error_responses)
            ),
            errors > 0,
        ),
        (
            "duplicates avoided",
            thousands(s.duplicates),
            format!("{} new URLs queued", thousands(s.queued)),
            false,
        ),
        (
            "rules",
            thousands(s.rules),
            format!(
                "{} fetches saved, {} checks, {} rejected",
                thousands(s.saved),
                thousands(s.rule_checks),
                thousands(s.rules_rejected)
            ),
            false,
        ),
        (
            "rate limit",
            if s.rate_limit > 0.0 {
                per_sec(s.rate_limit)
            } else {
                "none".into()
            },
            if s.rate_limit > 0.0 {
                "pages/s at most"
            } else {
                "pages/s unlimited"
            }
            .to_owned(),
            false,
        ),
    ];
    let mut out = String::from("<section class=cards>");
    for (label, value, note, bad) in cards {
        let _ = write!(
            out,
            "<div class=\"card{}\" data-figure=\"{label}\"><span class=label>{label}</span>\
             <span class=value>{value}</span><span class=note>{note}</span></div>",
            if bad { " bad" } else { "" }
        );
    }
    out + "</section>"
}

fn charts(s: &Status) -> String {
    let h = &s.history;
    let rates: Vec<(f64, f64)> = h
        .windows(2)
        .map(|w| (w[1].at, history::rate(&w[0], &w[1])))
        .collect();
    let queue: Vec<(f64, f64)> = h.iter().map(|p| (p.at, p.queued as f64)).collect();
    let errors: Vec<(f64, f64)> = h.iter().map(|p| (p.at, p.errors as f64)).collect();
    let charts = [
        (
            "Pages per second",
            per_sec(s.recent_pages_per_sec),
            Series {
                name: "pages/s",
                points: rates,
                class: "pages",
            },
        ),
        (
            if s.mode == "shared" {
                "Queue, whole crawl"
            } else {
                "Queue"
            },
            s.queue.map_or("–".to_owned(), thousands),
            Series {
                name: "queue",
                points: queue,
                class: "queue",
            },
        ),
        (
            "Errors so far",
            thousands(s.errors),
            Series {
                name: "errors",
                points: errors,
                class: "errors",
            },
        ),
    ];
    let mut out = String::from("<section class=charts>");
    for (caption, value, series) in charts {
        let _ = write!(
            out,
            "<figure><figcaption>{caption} <b>{value}</b></figcaption>{}</figure>",
            chart::svg(&series)
        );
    }
    out + "</section>"
}

fn processes(s: &Status) -> String {
    let mut out = String::from(
        "<h2>Processes of the crawl</h2><table id=processes><tr><th>process<th>status page\
         <th class=n>pages<th class=n>pages/s<th class=n>errors<th class=n>queued\
         <th class=n>received<th class=n>rate limit<th class=n>up<th class=n>updated</tr>",
    );
    for p in &s.processes {
        let me = p.process == s.process;
        let _ = write!(
            out,
            "<tr><td>{name}{me}<td>{page}<td class=n>{pages}<td class=n>{rate}<td class=n>{errors}\
             <td class=n>{queued}<td class=n>{bytes}<td class=n>{limit}<td class=n>{up}\
             <td class=n>{age}</tr>",
            name = escape(&p.process),
            me = if me { " <small>(this one)</small>" } else { "" },
            page = p.status_page.as_deref().map_or("–".to_owned(), escape),
            pages = thousands(p.fetched),
            rate = per_sec(p.pages_per_sec),
            errors = thousands(p.errors),
            queued = thousands(p.queued),
            bytes = bytes(p.bytes),
            limit = if p.rate_limit > 0.0 {
                per_sec(p.rate_limit)
            } else {
                "none".into()
            },
            up = chart::duration(p.uptime_secs),
            age = if me {
                "now".to_owned()
            } else {
                format!("{} ago", chart::duration(p.age_secs))
            },
        );
    }
    out + "</table>"
}

fn hosts(s: &Status) -> String {
    let mut out = format!(
        "<h2>Hosts <small>({} seen; the busiest first, then any with errors)</small></h2>",
        thousands(s.hosts_seen)
    );
    if s.hosts.is_empty() {
        return out + "<p class=empty>No page fetched yet.</p>";
    }
    out.push_str(
        "<table id=hosts><tr><th>host<th class=n>pages<th class=n>4xx/5xx<th class=n>failed\
         <th class=n>received</tr>",
    );
    for h in &s.hosts {
        let _ = write!(
            out,
            "<tr><td>{host}<td class=n>{pages}{over}<td class=n>{bad}<td class=n>{failed}\
             <td class=n>{bytes}</tr>",
            host = escape(&h.host),
            pages = thousands(h.pages),
            over = if h.over > 0 {
                format!(" <small>(up to {} over)</small>", thousands(h.over))
            } else {
                String::new()
            },
            bad = thousands(h.error_responses),
            failed = thousands(h.failed),
            bytes = bytes(h.bytes),
        );
    }
    out.push_str("</table>");
    if !s.hosts_exact {
        out.push_str(
            "<p class=empty>More hosts than rows: a row marked \"over\" may count up to that \
             many jobs of the hosts whose rows it took.</p>",
        );
    }
    out
}

fn last_errors(s: &Status) -> String {
    let mut out = String::from("<h2>Last errors</h2>");
    if s.last_errors.is_empty() {
        return out + "<p class=empty>No failed fetch and no 4xx/5xx answer so far.</p>";
    }
    out.push_str("<table id=errors><tr><th class=n>when<th>what<th>URL<th>detail</tr>");
    for e in s.last_errors.iter().take(ERROR_ROWS) {
        let _ = write!(
            out,
            "<tr><td class=n>{when} ago<td class=what>{what}<td class=url>{url}<td>{detail}</tr>",
            when = chart::duration((s.uptime_secs - e.at).max(0.0)),
            what = escape(&e.what),
            url = escape(&e.url),
            detail = escape(&e.detail),
        );
    }
    out + "</table>"
}

fn skips(s: &Status) -> String {
    let mut out = String::from("<h2>Skipped, by reason <small>(as in skipped.tsv)</small></h2>");
    if s.skips.is_empty() {
        return out + "<p class=empty>Every URL found so far was fetched or already known.</p>";
    }
    out.push_str("<table id=skips><tr><th>reason<th class=n>URLs</tr>");
    for (reason, n) in &s.skips {
        let _ = write!(out, "<tr><td>{reason}<td class=n>{}</tr>", thousands(*n));
    }
    out + "</table>"
}

fn log(s: &Status) -> String {
    let mut out = format!(
        "<h2>Log <small>({}, newest first)</small></h2>",
        if s.mode == "shared" {
            "warnings and errors of every process"
        } else {
            "this process"
        }
    );
    if s.log.is_empty() {
        return out + "<p class=empty>Nothing logged yet.</p>";
    }
    out.push_str("<table id=log><tr><th>time (UTC)<th>level<th>message</tr>");
    for e in &s.log {
        let who = if s.mode == "shared" {
            format!("{}: ", escape(&e.process))
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<tr><td class=n>{time}<td class=\"lvl-{level}\">{level}<td>{who}{message}</tr>",
            time = time_of_day(&e.id),
            level = escape(&e.level),
            message = escape(&e.message),
        );
    }
    out + "</table>"
}

/// The UTC time of day of a log entry's id (`milliseconds-sequence`, as Redis streams name
/// entries).
fn time_of_day(id: &str) -> String {
    let Some(ms) = id.split('-').next().and_then(|m| m.parse::<u64>().ok()) else {
        return String::new();
    };
    let secs = (ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// How good a Redis figure is, as a short label and a class.
fn verdict(value: Option<f64>, good: f64, fair: f64) -> String {
    let Some(v) = value else {
        return "<span class=\"verdict fair\">not known until a page is done</span>".into();
    };
    let (class, word) = if v <= good {
        ("good", "good")
    } else if v <= fair {
        ("fair", "usual")
    } else {
        ("poor", "high")
    };
    format!("<b>{v:.2}</b><span class=\"verdict {class}\">{word}</span>")
}

fn meanings(s: &Status) -> String {
    let mut out = String::from("<h2>What the figures mean</h2><dl>");
    let mut item = |term: &str, meaning: String| {
        let _ = write!(out, "<dt>{term}</dt><dd>{meaning}</dd>");
    };
    item(
        "pages fetched",
        "Responses received, whatever their status (304 revisits included).".into(),
    );
    item(
        "pages / s",
        "Pages fetched per second over the last ten seconds; the note gives the average over \
         the run. A rate limit or a slow site holds it down; robots.txt delays and \
         <code>--delay-ms</code> pace each host."
            .into(),
    );
    item(
        "queue",
        "URLs admitted and waiting to be fetched. It grows while pages bring new links and \
         falls to 0 when the crawl is done."
            .into(),
    );
    item(
        "errors",
        "Fetches that gave no usable answer (timeout, connection refused or reset, body too \
         large, bad encoding) plus answers 4xx and 5xx. A few are normal on real sites; many \
         from one host (see Hosts) mean the host is down or refusing the crawler."
            .into(),
    );
    item(
        "duplicates avoided",
        "Links whose canonical URL the crawl had already seen, so they were not fetched again."
            .into(),
    );
    item(
        "rules",
        "URL rules applied: learned from pages that are the same under several URLs and \
         confirmed by fetching a few URLs they predict (<code>--learn</code>), or read from \
         <code>--rules</code>. Fetches saved are links skipped because a rule maps them onto \
         a page already fetched; checks are the fetches that tested a rule; a rule that \
         predicted wrong is rejected."
            .into(),
    );
    item(
        "skipped",
        "URLs not fetched, or fetched without a page: trap rules (too long, too deep, \
         repeated segments, budgets), scope, robots.txt, content type, and the failed \
         fetches counted in errors. <code>skipped.tsv</code> lists every one."
            .into(),
    );
    if s.mode == "shared" {
        let figure = |key: &str| s.backend.get(key).and_then(serde_json::Value::as_f64);
        item(
            "Redis calls per page",
            format!(
                "{} Round trips this process made to Redis per page it fetched. Pages are \
                 claimed and committed in batches, so it stays under 1 in a busy crawl and \
                 1.5 to 3.5 when processes wait for one host's slots; above 5 the batches are \
                 small (a short, slow or nearly idle crawl).",
                verdict(figure("redis_calls_per_page"), 1.0, 5.0)
            ),
        );
        item(
            "Redis commands per page",
            format!(
                "{} Every command Redis ran, those inside scripts included, per page done in \
                 the whole crawl since this process joined. 23 to 35 was measured on busy \
                 crawls; a short crawl pays more (joining and heartbeats are fixed costs), and \
                 so does a Redis that other clients use too.",
                verdict(figure("redis_commands_per_page"), 35.0, 60.0)
            ),
        );
    }
    out + "</dl>"
}

/// The page that changes the rate limit: a form, not reloaded, so typing is not lost.
pub(crate) fn rate_form(s: &Status) -> String {
    let mut page = head(&format!("rate limit · crawl {}", s.crawl), false);
    let _ = write!(
        page,
        "<header><div><h1>Rate limit of process {process}</h1><p>crawl {crawl} · now {now}</p>\
         </div></header><main><form method=post action=\"/rate\">\
         <label for=rate>Pages per second (0: no limit)</label>\
         <input id=rate name=pages_per_sec inputmode=decimal required value=\"{value}\">\
         <label for=token>Token</label>\
         <input id=token name=token type=password autocomplete=off required>\
         <p class=note>The token was printed when the crawl started, next to the page's \
         address, and is in the file <code>status-token</code> of the output directory \
         (<code>status-token-PROCESS</code> in a shared crawl), readable by its owner only.</p>\
         <button type=submit>Set the limit</button></form>\
         <footer><a href=\"/\">Back to the status page</a></footer></main>",
        process = escape(&s.process),
        crawl = escape(&s.crawl),
        now = if s.rate_limit > 0.0 {
            format!("{} pages/s at most", per_sec(s.rate_limit))
        } else {
            "no limit".to_owned()
        },
        value = s.rate_limit,
    );
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(escape("<a&b \"c\">"), "&lt;a&amp;b &quot;c&quot;&gt;");
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(bytes(812), "812 B");
        assert_eq!(bytes(14_200_000), "14.2 MB");
        assert_eq!(time_of_day("1700000000123-0"), "22:13:20");
        assert_eq!(time_of_day("garbage"), "");
    }
}
