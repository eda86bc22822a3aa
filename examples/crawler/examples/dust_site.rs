//! A generated site whose aliases are known by construction (`url_dedup_rules::testing`),
//! served on loopback for `benches/dust.sh`.
//!
//! `dust_site SEED ARTICLES DIR` writes `DIR/urls.tsv` (each URL's path and query, and its
//! page), prints the site's origin, and serves until killed. Each page links to every URL of
//! two other pages (a tree over the pages, the home page `/` at its root), so a crawl from `/`
//! meets every URL. `GET /__report` answers `page<TAB>fetches` for each page.

#[path = "../tests/common/dust_site.rs"]
mod dust_site;

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::http::{Response, StatusCode, Uri, header};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [seed, articles, dir] = &args[..] else {
        eprintln!("usage: dust_site SEED ARTICLES DIR");
        std::process::exit(2);
    };
    let (Ok(seed), Ok(articles)) = (seed.parse::<u64>(), articles.parse::<usize>()) else {
        eprintln!("usage: dust_site SEED ARTICLES DIR");
        std::process::exit(2);
    };
    let site = dust_site::DustPages::generate(seed, articles);
    let mut list = std::fs::File::create(std::path::Path::new(dir).join("urls.tsv"))
        .expect("creating urls.tsv");
    // In the order of the tree, each page's URLs together.
    for &page in site.order() {
        for u in site.urls_of(page) {
            writeln!(list, "{u}\t{page}").expect("writing urls.tsv");
        }
    }
    let fetches: Arc<Mutex<HashMap<u64, u64>>> = Arc::default();
    let site = Arc::new(site);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("http://{}", listener.local_addr().expect("address"));
        let app = axum::Router::new().fallback(move |uri: Uri| {
            let (site, fetches) = (site.clone(), fetches.clone());
            async move {
                let target = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
                if target == "/__report" {
                    let f = fetches.lock().expect("lock");
                    let mut body = String::new();
                    for p in site.order() {
                        body.push_str(&format!("{p}\t{}\n", f.get(p).copied().unwrap_or(0)));
                    }
                    return Response::new(body);
                }
                let Some(page) = site.page_of(&target) else {
                    return Response::builder()
                        .status(StatusCode::NOT_FOUND)
                        .body(String::from("not found"))
                        .expect("response");
                };
                let n = {
                    let mut f = fetches.lock().expect("lock");
                    let n = f.entry(page).or_default();
                    *n += 1;
                    *n
                };
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
                    .body(site.html(&target, n).unwrap_or_default())
                    .expect("response")
            }
        });
        axum::serve(listener, app).await.expect("serve");
    });
}
