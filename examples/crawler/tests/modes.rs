//! The same scenarios through both backends of the one engine: a single-process crawl (run
//! queue and done set in the output directory) and a shared crawl (both in Redis). Every
//! option gives the same crawl in both.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use common::{Reply, Site, skipped_for, temp_out, warc_responses};
use url_dedup_redis::testing::RedisServer;

/// Where a crawl keeps its run queue and done set.
#[derive(Clone, Copy, Debug)]
enum Mode<'a> {
    Local,
    Shared(&'a RedisServer, &'a str),
}

/// Runs a crawl of `seed` to its end in `mode`.
fn crawl(mode: Mode<'_>, out: &Path, seed: &str, args: &[&str]) -> Output {
    let mut command = common::crawler(out);
    if let Mode::Shared(redis, name) = mode {
        command.args(["--redis", &redis.url(), "--crawl-name", name]);
    }
    let output = command.arg(seed).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{mode:?} crawl failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs `scenario` once per mode (the shared one only where a redis-server can be started),
/// each with a fresh site from `site`.
fn in_both_modes(name: &str, site: impl Fn() -> Site, scenario: impl Fn(Mode<'_>, &Site)) {
    scenario(Mode::Local, &site());
    if let Some(redis) = RedisServer::start_or_skip(name) {
        scenario(Mode::Shared(&redis, name), &site());
    }
}

/// A site of `n` pages `/p/{i}`; page i links to 2i+1 and 2i+2 (a binary tree) and to the
/// root.
fn tree(n: usize) -> Site {
    Site::start(move |target, _| {
        let Some(i) = target
            .strip_prefix("/p/")
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&i| i < n)
        else {
            return Reply::not_found();
        };
        let mut body = String::from("<a href=\"/p/0\">root</a>");
        for child in [2 * i + 1, 2 * i + 2] {
            if child < n {
                body.push_str(&format!("<a href=\"/p/{child}\">{child}</a>"));
            }
        }
        Reply::html(body)
    })
}

#[test]
fn every_page_once_with_warc_and_mirror_in_both_modes() {
    const N: usize = 60;
    in_both_modes(
        "every_page_once_with_warc_and_mirror",
        || tree(N),
        |mode, site| {
            let (_tmp, out) = temp_out();
            crawl(mode, &out, &site.url("/p/0"), &["--ignore-robots"]);
            let pages: Vec<u32> = (0..N).map(|i| site.hit(&format!("/p/{i}"))).collect();
            assert_eq!(pages, vec![1; N], "{mode:?}");
            let responses = warc_responses(&out);
            assert_eq!(responses.len(), N, "{mode:?}");
            assert_eq!(
                responses.iter().collect::<BTreeSet<_>>().len(),
                N,
                "{mode:?}"
            );
            let host_dir = out
                .join("mirror")
                .join("http")
                .join(site.origin.trim_start_matches("http://").replace(':', "+"));
            let page = std::fs::read_to_string(host_dir.join("p").join("1.html")).unwrap();
            assert!(page.contains("href=\"3.html\""), "{mode:?}: {page}");
        },
    );
}

#[test]
fn depth_and_host_budgets_hold_in_both_modes() {
    in_both_modes(
        "depth_and_host_budgets",
        || tree(200),
        |mode, site| {
            // Depth 0 is /p/0; depth 3 reaches /p/7../p/14: 15 pages.
            let (_tmp, out) = temp_out();
            crawl(
                mode,
                &out,
                &site.url("/p/0"),
                &["--ignore-robots", "--max-depth", "3"],
            );
            let fetched = (0..200)
                .filter(|i| site.hit(&format!("/p/{i}")) > 0)
                .count();
            assert_eq!(fetched, 15, "{mode:?}");
            assert!(!skipped_for(&out, "too-deep").is_empty(), "{mode:?}");
        },
    );
    in_both_modes(
        "host_budget",
        || tree(200),
        |mode, site| {
            let (_tmp, out) = temp_out();
            crawl(
                mode,
                &out,
                &site.url("/p/0"),
                &["--ignore-robots", "--host-budget", "20"],
            );
            let fetched: u32 = (0..200).map(|i| site.hit(&format!("/p/{i}"))).sum();
            assert_eq!(fetched, 20, "{mode:?}");
            assert!(!skipped_for(&out, "host-budget").is_empty(), "{mode:?}");
        },
    );
}

#[test]
fn similar_urls_are_skipped_in_both_modes() {
    let site = || {
        Site::start(|target, _| match target {
            "/" => Reply::html(
                r#"<a href="/list?sort=price&page=1">a</a><a href="/list?sort=name&page=1">b</a><a href="/item/17">c</a>"#,
            ),
            t if t.starts_with("/list") || t.starts_with("/item/") => Reply::html("leaf"),
            _ => Reply::not_found(),
        })
    };
    in_both_modes("similar", site, |mode, site| {
        let (_tmp, out) = temp_out();
        crawl(
            mode,
            &out,
            &site.url("/"),
            &["--ignore-robots", "--similar"],
        );
        assert_eq!(site.hit("/list?page=1&sort=price"), 1, "{mode:?}");
        assert_eq!(site.hit("/item/17"), 1, "{mode:?}");
        assert_eq!(site.hit("/list?page=1&sort=name"), 0, "{mode:?}");
        assert_eq!(
            skipped_for(&out, "similar"),
            [site.url("/list?page=1&sort=name")],
            "{mode:?}"
        );
    });
}

#[test]
fn redirects_are_bounded_in_both_modes() {
    let site = || {
        Site::start(|target, _| match target {
            "/" => Reply::html(r#"<a href="/r1">r</a><a href="/loop">l</a>"#),
            "/r1" => Reply::redirect("/r2"),
            "/r2" => Reply::redirect("/final"),
            "/final" => Reply::html("done"),
            "/loop" => Reply::redirect("/loop?again"),
            "/loop?again" => Reply::redirect("/loop"),
            _ => Reply::not_found(),
        })
    };
    in_both_modes("redirects", site, |mode, site| {
        let (_tmp, out) = temp_out();
        crawl(mode, &out, &site.url("/"), &["--ignore-robots"]);
        for path in ["/r1", "/r2", "/final", "/loop", "/loop?again"] {
            assert_eq!(site.hit(path), 1, "{mode:?} {path}");
        }
    });
}

/// A small documentation site with everything a page uses to be shown: stylesheets (one
/// inside `<noscript>`, one imported by another), a script, images in `src` and `srcset`, an
/// icon, a font and a background image referenced from CSS.
fn styled_site() -> Site {
    Site::start(|target, _| {
        let page = |title: &str, next: &str| {
            Reply::html(format!(
                r#"<!doctype html><html><head><title>{title}</title>
                <link rel="stylesheet" href="/static/site.css"><link rel="icon" href="/favicon.ico">
                <script src="/static/app.js"></script>
                <noscript><link rel="stylesheet" href="/static/noscript.css"></noscript>
                <style>.hero {{ background: url(/img/hero.jpg) }}</style></head>
                <body><img src="/img/logo.png" srcset="/img/logo@2x.png 2x">
                <a href="{next}">next</a></body></html>"#
            ))
        };
        match target {
            "/" => page("home", "/docs/intro"),
            "/docs/intro" => page("intro", "/"),
            "/static/site.css" => Reply::new(
                200,
                "text/css",
                br#"@import "theme.css"; body { font-family: x; } @font-face { src: url(fonts/x.woff2) }"#
                    .to_vec(),
            ),
            "/static/theme.css" => Reply::new(200, "text/css", b"h1 { background: url('../img/bg.png') }".to_vec()),
            "/static/noscript.css" => Reply::new(200, "text/css", b".js { display: none }".to_vec()),
            "/static/app.js" => Reply::new(200, "application/javascript", b"console.log(1)".to_vec()),
            "/static/fonts/x.woff2" => Reply::new(200, "font/woff2", b"wOF2".to_vec()),
            "/favicon.ico" => Reply::new(200, "image/x-icon", b"ico".to_vec()),
            "/img/logo.png" | "/img/logo@2x.png" | "/img/hero.jpg" | "/img/bg.png" => {
                Reply::new(200, "image/png", b"\x89PNG".to_vec())
            }
            _ => Reply::not_found(),
        }
    })
}

/// Every relative reference of the mirror's HTML and CSS files, with the file it is in.
fn local_references(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let mut refs = Vec::new();
            for attr in ["href=\"", "src=\"", "srcset=\""] {
                for value in text.split(attr).skip(1) {
                    let value = value.split('"').next().unwrap();
                    refs.extend(
                        value
                            .split(',')
                            .map(|c| c.split_whitespace().next().unwrap_or("").to_owned()),
                    );
                }
            }
            for value in text.split("url(").skip(1) {
                let value = value
                    .split(')')
                    .next()
                    .unwrap()
                    .trim_matches(['\'', '"', ' ']);
                refs.push(value.to_owned());
            }
            for value in text.split("@import \"").skip(1) {
                refs.push(value.split('"').next().unwrap().to_owned());
            }
            for r in refs {
                if !r.is_empty() && !r.contains("://") {
                    found.push((path.clone(), r.split('#').next().unwrap().to_owned()));
                }
            }
        }
    }
    found
}

#[test]
fn the_mirror_is_an_offline_copy_with_every_requisite_in_both_modes() {
    in_both_modes("offline_copy", styled_site, |mode, site| {
        let (_tmp, out) = temp_out();
        crawl(mode, &out, &site.url("/"), &["--ignore-robots"]);
        for path in [
            "/static/site.css",
            "/static/theme.css",
            "/static/noscript.css",
            "/static/app.js",
            "/static/fonts/x.woff2",
            "/favicon.ico",
            "/img/logo.png",
            "/img/logo@2x.png",
            "/img/hero.jpg",
            "/img/bg.png",
        ] {
            assert_eq!(site.hit(path), 1, "{mode:?} {path}");
        }
        let refs = local_references(&out.join("mirror"));
        assert_eq!(refs.len(), 19, "{mode:?}: {refs:?}");
        for (file, r) in refs {
            assert!(
                file.parent().unwrap().join(&r).is_file(),
                "{mode:?}: {} refers to missing {r}",
                file.display()
            );
        }
        // The requisites are archived too.
        assert_eq!(warc_responses(&out).len(), 12, "{mode:?}");
    });
}

/// Both modes end with the same summary: as text, or as one JSON object with `--json`.
#[test]
fn both_modes_print_the_same_summary() {
    in_both_modes(
        "one_summary",
        || tree(20),
        |mode, site| {
            let (_tmp, out) = temp_out();
            let text = crawl(mode, &out, &site.url("/p/0"), &["--ignore-robots"]);
            let text = String::from_utf8_lossy(&text.stdout);
            assert!(text.starts_with("crawl complete: "), "{mode:?}: {text}");
            for line in [
                "  fetched          20 responses",
                "  done set         20 URLs admitted",
            ] {
                assert!(text.contains(line), "{mode:?}: {line} not in {text}");
            }
            let site = tree(20);
            let (_tmp, out) = temp_out();
            let json = crawl(
                mode,
                &out,
                &site.url("/p/0"),
                &["--ignore-robots", "--json"],
            );
            let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
            assert_eq!(json["stop"], "finished", "{mode:?}: {json}");
            assert_eq!(json["fetched"], 20, "{mode:?}: {json}");
            assert_eq!(json["queued"], 20, "{mode:?}: {json}");
            if let Mode::Shared(..) = mode {
                assert!(json["redis_calls_per_page"].as_f64().is_some(), "{json}");
            }
        },
    );
}
