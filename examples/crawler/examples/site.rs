//! A generated site spread over many loopback hosts, for crawl benchmarks.
//!
//! `site PAGES HOSTS PORT` serves `PAGES` pages on `HOSTS` addresses 127.0.0.2, 127.0.0.3, ...
//! (all on `PORT`; Linux routes the whole 127.0.0.0/8 to the loopback interface). Page `i`
//! lives on host `i % HOSTS` and links to pages `2i+1`, `2i+2` (so every page is reachable from
//! page 0), `(i * 7 + 3) % PAGES` and the root: about four links a page, half of them already
//! seen. Pages have the paths of a documentation site (`/guide/crawler-bloom-host`, words
//! rather than numbers, so no two pages share a URL template) and about 6 KB of text each. It
//! prints one seed URL per host and serves until killed.

use std::sync::Arc;

use axum::http::{Response, StatusCode, Uri, header};

const WORDS: [&str; 16] = [
    "crawler",
    "filter",
    "bloom",
    "canonical",
    "segment",
    "host",
    "robots",
    "page",
    "link",
    "index",
    "archive",
    "partition",
    "frontier",
    "politeness",
    "snapshot",
    "journal",
];

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: site PAGES HOSTS PORT"))
        .collect();
    let [pages, hosts, port] = args[..] else {
        panic!("usage: site PAGES HOSTS PORT");
    };
    assert!((1..=250).contains(&hosts), "HOSTS must be 1..=250");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async move {
        let host_of = Arc::new(move |i: u64| format!("127.0.0.{}:{port}", 2 + i % hosts));
        for h in 0..hosts {
            let addr = format!("127.0.0.{}:{port}", 2 + h);
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .unwrap_or_else(|e| panic!("bind {addr}: {e}"));
            let host_of = host_of.clone();
            let app = axum::Router::new().fallback(move |uri: Uri| {
                let host_of = host_of.clone();
                async move {
                    let page = page_of(uri.path()).filter(|&i| i < pages && i % hosts == h);
                    let Some(i) = page else {
                        return Response::builder()
                            .status(StatusCode::NOT_FOUND)
                            .body(String::from("not found"))
                            .expect("response");
                    };
                    let mut body = format!("<html><body><h1>page {i}</h1>");
                    // Filler text of a realistic page size, different on every page.
                    for p in 0..12u64 {
                        body.push_str("<p>");
                        for w in 0..40u64 {
                            body.push_str(WORDS[((i * 31 + p * 7 + w * 13) % 16) as usize]);
                            body.push(' ');
                        }
                        body.push_str("</p>");
                    }
                    for j in [2 * i + 1, 2 * i + 2, (i * 7 + 3) % pages, 0] {
                        if j < pages {
                            body.push_str(&format!(
                                "<a href=\"http://{}{}\">page {j}</a> ",
                                host_of(j),
                                path_of(j)
                            ));
                        }
                    }
                    body.push_str("</body></html>");
                    Response::builder()
                        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
                        .body(body)
                        .expect("response")
                }
            });
            tokio::spawn(async move { axum::serve(listener, app).await });
        }
        // One seed per host (page h lives on host h), so a crawl scoped to its seeds' hosts
        // covers the whole site.
        for h in 0..hosts.min(pages) {
            println!("http://{}{}", host_of(h), path_of(h));
        }
        std::future::pending::<()>().await;
    });
}

/// The path of page `i`: `/` for page 0, else a section and a slug of words that spell `i`
/// in base 16, lowest digit first.
fn path_of(i: u64) -> String {
    if i == 0 {
        return "/".to_owned();
    }
    let mut words = Vec::new();
    let mut rest = i;
    while rest > 0 {
        words.push(WORDS[(rest % 16) as usize]);
        rest /= 16;
    }
    format!("/{}/{}", WORDS[(i * 7 % 16) as usize], words.join("-"))
}

/// The page whose path is `path`, if any.
fn page_of(path: &str) -> Option<u64> {
    if path == "/" {
        return Some(0);
    }
    let slug = path.rsplit('/').next()?;
    let mut i = 0u64;
    for word in slug.split('-').rev() {
        let digit = WORDS.iter().position(|w| *w == word)? as u64;
        i = i.checked_mul(16)?.checked_add(digit)?;
    }
    (i > 0 && path_of(i) == path).then_some(i)
}
