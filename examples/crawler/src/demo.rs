//! `crawler --demo`: an embedded site on loopback with every problem a crawler meets, crawled
//! with the default rules, and a report of what each mechanism did. No network needed.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode, Uri, header};
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::error::CrawlError;
use crate::options::Options;
use crate::skip::SkipReason;

/// Products on the demo site.
const PRODUCTS: u32 = 40;

/// The demo site: its pages, and the requests it received.
#[derive(Clone)]
struct Site {
    origin: String,
    hits: Arc<Mutex<BTreeMap<String, u32>>>,
    bomb: Arc<Vec<u8>>,
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"
    )
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

impl Site {
    fn respond(&self, uri: &Uri, headers: &HeaderMap) -> Response<Body> {
        let target = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        *self
            .hits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(target.clone())
            .or_default() += 1;
        let o = &self.origin;
        let path = uri.path();
        let query = uri.query().unwrap_or("");
        let html = |body: String| {
            (
                StatusCode::OK,
                "text/html; charset=utf-8",
                body.into_bytes(),
            )
        };
        let (status, ct, body) = match path {
            "/robots.txt" => (
                StatusCode::OK,
                "text/plain",
                format!("User-agent: *\nDisallow: /private/\nCrawl-delay: 0.002\nSitemap: {o}/sitemap.xml\n").into_bytes(),
            ),
            "/sitemap.xml" => (
                StatusCode::OK,
                "application/xml",
                format!("<?xml version=\"1.0\"?><urlset><url><loc>{o}/orphan</loc></url><url><loc>{o}/product/1</loc></url></urlset>").into_bytes(),
            ),
            "/" => html(page(
                "Demo shop",
                &format!(
                    "<a href=\"/product/1\">products</a> <a href=\"/list?page=1&amp;sort=name\">list</a>
                     <a href=\"/calendar/2026/1\">calendar</a> <a href=\"/deep/\">archive</a>
                     <a href=\"/search?q=a\">search</a> <a href=\"/old\">old link</a> <a href=\"/moved\">moved</a>
                     <a href=\"/loop/a\">loop</a> <a href=\"/private/secret\">private</a>
                     <a rel=\"nofollow\" href=\"/nofollow-target\">sponsored</a>
                     <a href=\"/brochure.pdf\">brochure</a> <img src=\"/logo.png\"><link rel=icon href=\"/logo.png\">
                     <a href=\"/bomb\">huge page</a> <a href=\"https://example.invalid/\">elsewhere</a>
                     <a href=\"/print/product/1\">print</a> <a href=\"mailto:shop@example.invalid\">mail</a>
                     <script>var config = {{\"next\": \"/from-script\", \"api\": \"{o}/api/v1\"}};</script>"
                ),
            )),
            _ if path.starts_with("/product/") || path.starts_with("/print/product/") => {
                let n: u32 = path.rsplit('/').next().and_then(|s| s.parse().ok()).unwrap_or(0);
                if !(1..=PRODUCTS).contains(&n) {
                    (StatusCode::NOT_FOUND, "text/html", page("Not found", "").into_bytes())
                } else {
                    let next = n % PRODUCTS + 1;
                    let prev = if n == 1 { PRODUCTS } else { n - 1 };
                    // One page, many spellings of its neighbours' addresses.
                    html(page(
                        &format!("Product {n}"),
                        &format!(
                            "<a href=\"/product/{next}\">next</a> <a href=\"/product/{next}?utm_source=demo\">next (tracked)</a>
                             <a href=\"/product/{next}#reviews\">reviews</a> <a href=\"HTTP://{host}/product/{next}\">next (shouting)</a>
                             <a href=\"/a/../product/{prev}\">previous</a> <a href=\"./{prev}\">previous again</a>
                             <a href=\"/print/product/{n}\">print</a> <a href=\"/\">home</a>",
                            host = o.trim_start_matches("http://")
                        ),
                    ))
                }
            }
            "/list" => {
                let p: u32 = query.split('&').find_map(|kv| kv.strip_prefix("page=")).and_then(|v| v.parse().ok()).unwrap_or(1);
                html(page(
                    &format!("List page {p}"),
                    &format!(
                        "<a href=\"/list?sort=name&amp;page={}\">next</a> <a href=\"/list?page={}&amp;sort=name\">next</a>",
                        p % 3 + 1,
                        p % 3 + 1
                    ),
                ))
            }
            _ if path.starts_with("/calendar/") => {
                let parts: Vec<i32> = path.split('/').filter_map(|s| s.parse().ok()).collect();
                let (y, m) = match parts[..] {
                    [y, m] => (y, m),
                    _ => (2026, 1),
                };
                let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                let (py, pm) = if m == 1 { (y - 1, 12) } else { (y, m - 1) };
                html(page(
                    &format!("{y}-{m:02}"),
                    &format!("<a href=\"/calendar/{py}/{pm}\">previous month</a> <a href=\"/calendar/{ny}/{nm}\">next month</a>"),
                ))
            }
            _ if path.starts_with("/deep/") => html(page("Archive", "<a href=\"a/\">older</a>")),
            "/search" => {
                // Each result page links a query twice as long: an endless family of URLs.
                let q = query.strip_prefix("q=").unwrap_or("a");
                html(page("Search", &format!("<a href=\"/search?q={q}{q}\">refine</a>")))
            }
            "/old" => return redirect(&format!("{o}/product/1")),
            "/moved" => return redirect("/new-home"),
            "/loop/a" => return redirect("/loop/b"),
            "/loop/b" => return redirect("/loop/a"),
            "/new-home" => html(page("New home", "<a href=\"/\">home</a>")),
            "/orphan" => html(page("Only in the sitemap", "<a href=\"/\">home</a>")),
            "/logo.png" => (StatusCode::OK, "image/png", b"\x89PNG\r\n\x1a\n".to_vec()),
            "/brochure.pdf" => (StatusCode::OK, "application/pdf", b"%PDF-1.4".to_vec()),
            "/bomb" => {
                return Response::builder()
                    .header(header::CONTENT_TYPE, "text/html")
                    .header(header::CONTENT_ENCODING, "gzip")
                    .body(Body::from(self.bomb.as_ref().clone()))
                    .unwrap_or_default();
            }
            _ => (StatusCode::NOT_FOUND, "text/html", page("Not found", "").into_bytes()),
        };
        let gzip_ok = headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("gzip"));
        let mut response = Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, ct);
        let body = if gzip_ok && ct.starts_with("text/html") {
            response = response.header(header::CONTENT_ENCODING, "gzip");
            gzip(&body)
        } else {
            body
        };
        response.body(Body::from(body)).unwrap_or_default()
    }
}

fn redirect(to: &str) -> Response<Body> {
    Response::builder()
        .status(StatusCode::MOVED_PERMANENTLY)
        .header(header::LOCATION, to)
        .body(Body::empty())
        .unwrap_or_default()
}

/// Starts the demo site, crawls it, prints the crawl summary and the site's view of it.
pub(crate) async fn run(options: &Options) -> Result<(), CrawlError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(CrawlError::io("binding demo site to", "127.0.0.1:0"))?;
    let addr = listener
        .local_addr()
        .map_err(CrawlError::io("binding demo site to", "127.0.0.1:0"))?;
    let site = Site {
        origin: format!("http://{addr}"),
        hits: Arc::default(),
        bomb: Arc::new(gzip(&vec![b' '; 64 << 20])),
    };
    let app_site = site.clone();
    let app = Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
        let site = app_site.clone();
        async move { site.respond(&uri, &headers) }
    });
    tokio::spawn(async move { axum::serve(listener, app).await });

    let out = tempfile::Builder::new()
        .prefix("crawler-demo-")
        .tempdir()
        .map_err(CrawlError::io(
            "creating demo output directory in",
            std::env::temp_dir(),
        ))?
        .keep();
    let mut options = Options::parse_demo(&site.origin, &out, options);
    options.respect_nofollow = true;
    println!(
        "demo site on {} (robots.txt, sitemap, {PRODUCTS} products with duplicate and respelled links,",
        site.origin
    );
    println!(
        "print copies, a calendar trap, an ever-deeper archive, a growing search URL, redirects,"
    );
    println!("a redirect loop, a nofollow link, a PDF, a gzip bomb, links hidden in a script)\n");
    let config = options.config()?;
    let summary = crate::engine::run(config, None).await?.summary;
    println!("{summary}");

    let hits = site.hits.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let requests: u32 = hits.values().sum();
    let twice: Vec<&String> = hits
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(p, _)| p)
        .collect();
    println!("what the site saw");
    println!(
        "  {requests} requests for {} distinct URLs; requested more than once: {}",
        hits.len(),
        if twice.is_empty() {
            "none".to_owned()
        } else {
            format!("{twice:?}")
        }
    );
    for (path, why) in [
        ("/from-script", "only mentioned inside <script>"),
        ("/private/secret", "disallowed by robots.txt"),
        ("/nofollow-target", "linked with rel=nofollow"),
        ("/orphan", "listed only in the sitemap"),
    ] {
        let seen = if hits.contains_key(path) {
            "requested"
        } else {
            "never requested"
        };
        println!("  {path:<18} {seen:<16} ({why})");
    }
    let calendar = hits.keys().filter(|p| p.starts_with("/calendar/")).count();
    let deep = hits.keys().filter(|p| p.starts_with("/deep/")).count();
    let search = hits.keys().filter(|p| p.starts_with("/search")).count();
    println!(
        "  traps            calendar {calendar} pages (then {}), archive {deep} levels (then {}), search {search} pages (then {})",
        SkipReason::TemplateBudget,
        SkipReason::RepeatedSegment,
        SkipReason::UrlTooLong
    );
    println!(
        "\noutput kept in {}: browse {}",
        out.display(),
        out.join("mirror")
            .join(crate::mirror::path(
                &url::Url::parse(&format!("{}/", site.origin))
                    .map_err(|_| CrawlError::BadSeed(site.origin.clone()))?
            ))
            .display()
    );
    if summary.skipped(SkipReason::TemplateBudget) == 0 {
        eprintln!("note: the calendar trap was not reached");
    }
    Ok(())
}
