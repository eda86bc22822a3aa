//! A generated site whose aliases are known by construction (`url_dedup_rules::testing`),
//! served on loopback for `benches/dust.sh`.
//!
//! `dust_site SEED ARTICLES DIR` writes `DIR/urls.tsv` (each URL's path and query, and its
//! page), prints the site's origin, and serves until killed. Each page links to every URL of
//! two other pages (a tree over the pages, the home page `/` at its root), so a crawl from `/`
//! meets every URL. `GET /__report` answers `page<TAB>fetches` for each page.

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
    let site = url_dedup_rules::testing::Site::generate(seed, articles);
    let prefix = format!("https://{}", site.host());
    let rest = |u: &str| u.strip_prefix(&prefix).unwrap_or(u).to_owned();
    let mut order: Vec<u64> = Vec::new();
    let mut urls: HashMap<u64, Vec<String>> = HashMap::new();
    if let Some(home) = site.urls().iter().find(|u| rest(&u.url) == "/") {
        order.push(home.page);
    }
    let mut list = std::fs::File::create(std::path::Path::new(dir).join("urls.tsv"))
        .expect("creating urls.tsv");
    let mut page_of = HashMap::new();
    for u in site.urls() {
        if !order.contains(&u.page) {
            order.push(u.page);
        }
        urls.entry(u.page).or_default().push(rest(&u.url));
        page_of.insert(rest(&u.url), u.page);
        writeln!(list, "{}\t{}", rest(&u.url), u.page).expect("writing urls.tsv");
    }
    let position: HashMap<u64, usize> = order.iter().enumerate().map(|(i, &p)| (p, i)).collect();
    let fetches: Arc<Mutex<HashMap<u64, u64>>> = Arc::default();
    let state = Arc::new((site, prefix, page_of, order, urls, position));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("http://{}", listener.local_addr().expect("address"));
        let app = axum::Router::new().fallback(move |uri: Uri| {
            let (state, fetches) = (state.clone(), fetches.clone());
            async move {
                let (site, prefix, page_of, order, urls, position) = &*state;
                let target = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
                if target == "/__report" {
                    let f = fetches.lock().expect("lock");
                    let mut body = String::new();
                    for p in order {
                        body.push_str(&format!("{p}\t{}\n", f.get(p).copied().unwrap_or(0)));
                    }
                    return Response::new(body);
                }
                let Some(&page) = page_of.get(&target) else {
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
                let html = site
                    .html(&format!("{prefix}{target}"), n)
                    .unwrap_or_default();
                let html = html.replace("href=\"/", "data-href=\"/");
                let k = position[&page];
                let mut nav = String::from("<nav>");
                for child in [2 * k + 1, 2 * k + 2] {
                    if let Some(p) = order.get(child) {
                        for u in &urls[p] {
                            nav.push_str(&format!(
                                "<a href=\"{}\">more</a> ",
                                u.replace('&', "&amp;")
                            ));
                        }
                    }
                }
                nav.push_str("</nav></body>");
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
                    .body(html.replace("</body>", &nav))
                    .expect("response")
            }
        });
        axum::serve(listener, app).await.expect("serve");
    });
}
