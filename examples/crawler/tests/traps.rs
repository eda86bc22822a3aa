//! Traps contained by what they look like, with the default rules: a deep documentation site
//! is crawled completely, while a calendar, branching path and query trees and a growing facet
//! query each stop within a few hundred pages, every URL not followed counted with its reason.

mod common;

use std::collections::BTreeSet;

use common::{Reply, Site, crawl, skipped, temp_out};

const SECTIONS: [&str; 20] = [
    "install",
    "configure",
    "networking",
    "storage",
    "security",
    "logging",
    "metrics",
    "scaling",
    "upgrades",
    "backups",
    "clients",
    "servers",
    "plugins",
    "templates",
    "queries",
    "indexes",
    "replication",
    "sharding",
    "tuning",
    "reference",
];
const ADJECTIVES: [&str; 12] = [
    "quick",
    "basic",
    "advanced",
    "common",
    "remote",
    "local",
    "secure",
    "custom",
    "default",
    "manual",
    "automatic",
    "legacy",
];
const NOUNS: [&str; 10] = [
    "overview", "setup", "options", "example", "errors", "limits", "commands", "files", "settings",
    "faq",
];
/// Pages per section: one chain of prev/next links, 120 deep.
const CHAIN: usize = ADJECTIVES.len() * NOUNS.len();

fn slug(i: usize) -> String {
    format!("{}-{}", ADJECTIVES[i / NOUNS.len()], NOUNS[i % NOUNS.len()])
}

/// `/docs/`: an index linking each section's first page; every page links to the previous and
/// next page of its section, the section's first page and the index, so the last pages of a
/// section are 120 links deep.
fn docs_site() -> Site {
    Site::start(|target, _| {
        if target == "/robots.txt" {
            return Reply::not_found();
        }
        if target == "/docs/" {
            let toc: String = SECTIONS
                .iter()
                .map(|s| format!("<li><a href=\"/docs/{s}/{}.html\">{s}</a>", slug(0)))
                .collect();
            return Reply::html(format!("<h1>Manual</h1><ul>{toc}</ul>"));
        }
        let Some((section, page)) = target
            .strip_prefix("/docs/")
            .and_then(|p| p.strip_suffix(".html"))
            .and_then(|p| p.split_once('/'))
        else {
            return Reply::not_found();
        };
        let Some(i) = (0..CHAIN).find(|&i| slug(i) == page) else {
            return Reply::not_found();
        };
        if !SECTIONS.contains(&section) {
            return Reply::not_found();
        }
        let mut nav = format!(
            "<a href=\"../\">manual</a> <a href=\"{}.html\">start of {section}</a>",
            slug(0)
        );
        if i > 0 {
            nav.push_str(&format!(" <a href=\"{}.html\">previous</a>", slug(i - 1)));
        }
        if i + 1 < CHAIN {
            nav.push_str(&format!(" <a href=\"{}.html\">next</a>", slug(i + 1)));
        }
        Reply::html(format!("<h1>{section}: {page}</h1><p>{nav}</p>"))
    })
}

#[test]
fn a_deep_documentation_site_is_crawled_completely_by_default() {
    let site = docs_site();
    let (_tmp, out) = temp_out();
    let output = crawl(&out, &site.url("/docs/"), &["--no-warc", "--no-mirror"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("crawl complete"), "{stdout}");
    let hits = site.hits();
    let pages: BTreeSet<&String> = hits.keys().filter(|k| k.ends_with(".html")).collect();
    assert_eq!(
        pages.len(),
        SECTIONS.len() * CHAIN,
        "every page of every chain"
    );
    assert!(hits.values().all(|&n| n == 1));
    assert!(skipped(&out).is_empty(), "{:?}", &skipped(&out)[..5]);
}

/// Parses the `N` of a `?k=N` style query, or 0.
fn number(s: &str) -> i64 {
    s.parse().unwrap_or(0)
}

/// A site of traps, each entered from `/`.
fn trap_site() -> Site {
    Site::start(|target, _| {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        match path {
            "/robots.txt" => Reply::not_found(),
            "/" => Reply::html(
                r#"<a href="/cal/2026/1">calendar</a> <a href="/tree/">tree</a>
                <a href="/search?q=a">search</a> <a href="/facets?a=1">facets</a>
                <a href="/loop/a/">loop</a> <a href="/about">about</a>"#,
            ),
            "/about" => Reply::html("a real page"),
            // Months forever, both ways, with year jumps.
            p if p.starts_with("/cal/") => {
                let mut f = p[5..].split('/').map(number);
                let (y, m) = (f.next().unwrap_or(2026), f.next().unwrap_or(1));
                let month = |y: i64, m: i64| {
                    let n = y * 12 + m - 1;
                    format!("/cal/{}/{}", n.div_euclid(12), n.rem_euclid(12) + 1)
                };
                Reply::html(format!(
                    r#"<a href="{}">prev</a><a href="{}">next</a><a href="{}">prev year</a><a href="{}">next year</a>"#,
                    month(y, m - 1),
                    month(y, m + 1),
                    month(y - 1, m),
                    month(y + 1, m)
                ))
            }
            // Ever-growing paths: every directory has three subdirectories.
            p if p.starts_with("/tree/") => {
                Reply::html(r#"<a href="0/">0</a><a href="1/">1</a><a href="2/">2</a>"#)
            }
            // Relative links that loop: /loop/a/b/a/b/...
            p if p.starts_with("/loop/") => Reply::html(r#"<a href="a/">a</a><a href="b/">b</a>"#),
            // Ever-growing queries, branching.
            "/search" => {
                let q = query.trim_start_matches("q=");
                Reply::html(format!(
                    r#"<a href="/search?q={q}a">a</a><a href="/search?q={q}b">b</a>"#
                ))
            }
            // Faceted navigation: each page adds one more parameter, in two values.
            "/facets" => {
                let n = query.split('&').count();
                Reply::html(format!(
                    r#"<a href="/facets?{query}&f{n}=1">1</a><a href="/facets?{query}&f{n}=2">2</a>"#
                ))
            }
            _ => Reply::not_found(),
        }
    })
}

#[test]
fn calendars_branching_trees_and_growing_queries_stop_within_a_few_hundred_pages() {
    let site = trap_site();
    let (_tmp, out) = temp_out();
    // --max-pages only bounds a crawl whose traps are not contained.
    let args = ["--no-warc", "--no-mirror", "--max-pages", "5000"];
    let output = crawl(&out, &site.url("/"), &args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("crawl complete"), "{stdout}");
    let hits = site.hits();
    assert_eq!(site.hit("/about"), 1);
    for trap in ["/cal/", "/tree/", "/loop/", "/search", "/facets"] {
        let n = hits.keys().filter(|k| k.starts_with(trap)).count();
        eprintln!("{trap}: {n} pages");
        assert!(n <= 300, "{trap}: {n} pages fetched");
        assert!(n >= 10, "{trap}: only {n} pages fetched");
    }
    // Each trap ended by a rule that says what it saw, counted in the summary with why.
    let reasons: BTreeSet<String> = skipped(&out).into_iter().map(|(r, _)| r).collect();
    for reason in ["template-budget", "repeated-segment"] {
        assert!(reasons.contains(reason), "{reasons:?}");
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(reason))
            .unwrap_or_else(|| panic!("{reason} not in the summary: {stdout}"));
        assert!(line.contains("--"), "the summary says which option: {line}");
    }
    assert!(!reasons.contains("too-deep"), "{reasons:?}");
    eprintln!("{stdout}");
}

#[test]
fn a_shared_crawl_contains_the_same_traps() {
    let Some(redis) = url_dedup_redis::testing::RedisServer::start_or_skip("shared crawl traps")
    else {
        return;
    };
    let site = trap_site();
    let (_tmp, out) = temp_out();
    let output = common::crawler(&out)
        .args(["--redis", &redis.url(), "--crawl-name", "traps", "--json"])
        .args(["--max-pages", "5000"])
        .arg(site.url("/"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let hits = site.hits();
    for trap in ["/cal/", "/tree/", "/loop/", "/search", "/facets"] {
        let n = hits.keys().filter(|k| k.starts_with(trap)).count();
        assert!((10..=300).contains(&n), "{trap}: {n} pages fetched");
    }
    for reason in ["template-budget", "repeated-segment"] {
        assert!(summary["skips"][reason].as_u64() > Some(0), "{summary}");
    }
    assert!(summary["fetched"].as_u64() < Some(1500), "{summary}");
}

/// A session id in the path, new on every page (`/sess/S<16 hex>/page`), passed every trap
/// rule (9,690 pages in 300 s and growing); its pages are one template now, so the template
/// budget stops it.
#[test]
fn a_session_token_in_the_path_is_one_template() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let next = std::sync::Arc::new(AtomicU64::new(1));
    let site = Site::start(move |target, _| {
        if target == "/" || target.starts_with("/sess/") {
            // A fresh token on every page, as a server handing out sessions does.
            let token = next
                .fetch_add(1, Ordering::SeqCst)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            Reply::html(format!("<a href=\"/sess/S{token:016x}/page\">on</a>"))
        } else {
            Reply::not_found()
        }
    });
    let (_tmp, out) = temp_out();
    crawl(
        &out,
        &site.url("/"),
        &["--ignore-robots", "--template-budget", "20"],
    );
    let fetched = site
        .hits()
        .keys()
        .filter(|k| k.starts_with("/sess/"))
        .count();
    // The first token page is linked from `/`, another template; the budget counts the rest.
    assert!(fetched <= 21, "{fetched} pages of one session trap");
    assert!(
        skipped(&out)
            .iter()
            .any(|(reason, _)| reason == "template-budget"),
        "{:?}",
        skipped(&out)
    );
}
