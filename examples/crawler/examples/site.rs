//! A generated site spread over many loopback hosts, for crawl benchmarks.
//!
//! `site PAGES HOSTS PORT` serves `PAGES` pages on `HOSTS` addresses 127.0.0.2, 127.0.0.3, ...
//! (all on `PORT`; Linux routes the whole 127.0.0.0/8 to the loopback interface). Page `i`
//! lives on host `i % HOSTS` and links to pages `2i+1`, `2i+2` (so every page is reachable from
//! page 0), `(i * 7 + 3) % PAGES` and the root: about four links a page, half of them already
//! seen. It prints the seed URL and serves until killed.

use std::sync::Arc;

use axum::http::{Response, StatusCode, Uri, header};

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
                    let page = uri
                        .path()
                        .strip_prefix("/p/")
                        .and_then(|n| n.parse::<u64>().ok())
                        .filter(|&i| i < pages && 2 + i % hosts == 2 + h);
                    let Some(i) = page else {
                        return Response::builder()
                            .status(StatusCode::NOT_FOUND)
                            .body(String::from("not found"))
                            .expect("response");
                    };
                    let mut body = format!("<html><body><h1>page {i}</h1>");
                    for j in [2 * i + 1, 2 * i + 2, (i * 7 + 3) % pages, 0] {
                        if j < pages {
                            body.push_str(&format!(
                                "<a href=\"http://{}/p/{j}\">page {j}</a> ",
                                host_of(j)
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
        println!("http://{}/p/0", host_of(0));
        std::future::pending::<()>().await;
    });
}
