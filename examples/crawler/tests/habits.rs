//! Habits wget and Scrapy users bring: link patterns, their own User-Agent, seeds from a
//! file; and credentials in links, which are dropped unless asked for, and then recorded.

mod common;

use common::{Reply, Site, crawl, crawler, skipped_for, temp_out, warc_files};

/// `--accept-regex` and `--reject-regex` decide which links are followed (as wget's options
/// and Scrapy's `LinkExtractor(allow=, deny=)` do); seeds are fetched whatever they say.
#[test]
fn link_patterns_choose_what_is_followed() {
    let site = Site::start(|target, _| match target {
        "/start" => Reply::html(
            r#"<a href="/docs/a">a</a><a href="/docs/a.pdf">pdf</a><a href="/blog/b">b</a>"#,
        ),
        "/docs/a" | "/docs/a.pdf" | "/blog/b" => Reply::html("page"),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    crawl(
        &out,
        &site.url("/start"),
        &[
            "--ignore-robots",
            "--accept-regex",
            "/docs/",
            "--reject-regex",
            "\\.pdf$",
        ],
    );
    assert_eq!(
        site.hit("/start"),
        1,
        "a seed is fetched whatever the patterns"
    );
    assert_eq!(site.hit("/docs/a"), 1);
    assert_eq!(site.hit("/docs/a.pdf"), 0);
    assert_eq!(site.hit("/blog/b"), 0);
    let mut left_out = skipped_for(&out, "pattern");
    left_out.sort();
    assert_eq!(left_out, [site.url("/blog/b"), site.url("/docs/a.pdf")]);
}

/// `--user-agent` replaces the User-Agent header, and robots.txt is read for its product
/// token; `--seeds-file` adds seeds.
#[test]
fn a_user_agent_of_ones_own_and_seeds_from_a_file() {
    let site = Site::start(|target, headers| {
        let agent = common::header_value(headers, axum::http::header::USER_AGENT);
        match target {
            "/robots.txt" => Reply::new(
                200,
                "text/plain",
                b"User-agent: mybot\nDisallow: /private\n\nUser-agent: *\nDisallow: /\n".to_vec(),
            ),
            _ if agent != "mybot/2.0 (ops@example.org)" => Reply::not_found(),
            "/a" | "/b" | "/private" => Reply::html("page"),
            _ => Reply::not_found(),
        }
    });
    let (dir, out) = temp_out();
    let seeds = dir.path().join("seeds.txt");
    std::fs::write(
        &seeds,
        format!(
            "# two seeds\n{}\n{}\n",
            site.url("/b"),
            site.url("/private")
        ),
    )
    .unwrap();
    crawl(
        &out,
        &site.url("/a"),
        &[
            "--user-agent",
            "mybot/2.0 (ops@example.org)",
            "--seeds-file",
            seeds.to_str().unwrap(),
        ],
    );
    assert_eq!(site.hit("/a"), 1);
    assert_eq!(site.hit("/b"), 1);
    assert_eq!(
        site.hit("/private"),
        0,
        "mybot's own robots.txt group applies"
    );
    assert_eq!(
        skipped_for(&out, "robots-disallowed"),
        [site.url("/private")]
    );
}

/// Credentials in a link (`http://user:pw@host/x`) are dropped by default: the request goes
/// without them, the WARC holds no password, and the page with and without them is one page.
/// With `--keep-userinfo` the request carries them as basic authentication, and the WARC
/// request record shows the header that was sent (it once did not).
#[test]
fn credentials_in_links_are_dropped_or_recorded_as_sent() {
    let site = Site::start(|target, headers| {
        let auth = common::header_value(headers, axum::http::header::AUTHORIZATION).to_owned();
        match target {
            "/" => Reply::html("start"),
            "/x" => Reply::html(format!("auth [{auth}]")),
            _ => Reply::not_found(),
        }
    });
    let with_credentials = site.url("/x").replace("http://", "http://user:p%40ss@");
    let page = |out: &std::path::Path| {
        let warc = warc_files(out).into_iter().next().unwrap();
        String::from_utf8_lossy(&std::fs::read(warc).unwrap()).into_owned()
    };

    let (_tmp, out) = temp_out();
    let output = crawler(&out)
        .args([&with_credentials, &site.url("/x"), "--ignore-robots"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(site.hit("/x"), 1, "with and without credentials: one page");
    let warc = page(&out);
    assert!(
        !warc.contains("p%40ss") && !warc.contains("user:"),
        "{warc}"
    );
    assert!(warc.contains("auth []"));

    let (_tmp, out) = temp_out();
    let output = crawler(&out)
        .args([&with_credentials, "--ignore-robots", "--keep-userinfo"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let warc = page(&out);
    // user:p@ss in base64.
    assert!(
        warc.contains("authorization: Basic dXNlcjpwQHNz\r\n"),
        "{warc}"
    );
    assert!(warc.contains("auth [Basic dXNlcjpwQHNz]"), "{warc}");
}
