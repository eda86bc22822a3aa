//! The offline copy end to end: one file per URL, pages in other encodings than UTF-8, and
//! requisites outside the crawl's scope.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use common::{Reply, Site, crawl, skipped_for, temp_out, warc_files};

/// The mirror's directory of `origin` (`http://127.0.0.1:PORT`).
fn host_dir(out: &Path, origin: &str) -> PathBuf {
    out.join("mirror")
        .join("http")
        .join(origin.trim_start_matches("http://").replace(':', "+"))
}

/// The values of `attr="..."` in `html`, in order.
fn values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    html.split(&format!("{attr}=\""))
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect()
}

/// Every mirrored HTML file under `dir`, with its text.
fn html_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                let bytes = std::fs::read(&path).unwrap();
                if let Ok(text) = String::from_utf8(bytes) {
                    found.push((path, text));
                }
            }
        }
    }
    found
}

/// The file a relative link in `file` names.
fn target(file: &Path, link: &str) -> PathBuf {
    file.parent().unwrap().join(link.split('#').next().unwrap())
}

/// A site whose URLs all want the same few names under `wget -E`: `/a` and `/a.html`, `/d/`,
/// `/d/index.html` and `/d/index`; and `/pic` and `/shot.png`, each both an image and a link.
fn clashing_site() -> Site {
    Site::start(|target, _| {
        let page = |text: &str| Reply::html(format!("<p>{text}</p><a href=\"/\">home</a>"));
        match target {
            "/" => Reply::html(concat!(
                r#"<a href="/a">a</a><a href="/a.html">a.html</a><a href="/d/">d</a>"#,
                r#"<a href="/d/index.html">d/index.html</a><a href="/d/index">d/index</a>"#,
                r#"<a href="/pic">pic</a><img src="/pic">"#,
                r#"<a href="/shot.png"><img src="/shot.png"></a>"#,
                r#"<a href="/dir">dir</a><a href="/gone">gone</a>"#
            )),
            "/dir" => Reply::redirect("/d/"),
            "/gone" => Reply::redirect("http://elsewhere.invalid/x?a=1&b=2"),
            "/a" => page("page /a"),
            "/a.html" => page("page /a.html"),
            "/d/" => page("page /d/"),
            "/d/index.html" => page("page /d/index.html"),
            "/d/index" => page("page /d/index"),
            "/pic" => Reply::new(200, "image/png", b"\x89PNG pic".to_vec()),
            "/shot.png" => Reply::new(200, "image/png", b"\x89PNG shot".to_vec()),
            _ => Reply::not_found(),
        }
    })
}

#[test]
fn every_url_has_its_own_file_and_every_link_finds_it() {
    let site = clashing_site();
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &[]);
    for path in [
        "/",
        "/a",
        "/a.html",
        "/d/",
        "/d/index.html",
        "/d/index",
        "/pic",
        "/shot.png",
        "/dir",
        "/gone",
    ] {
        assert_eq!(site.hit(path), 1, "{path}");
    }
    let dir = host_dir(&out, &site.origin);
    let home = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let hrefs = values(&home, "href");
    let srcs = values(&home, "src");
    assert_eq!(
        hrefs,
        [
            "a.html",
            "a_.html",
            "d/index.html",
            "d/index_.html",
            "d/_index.html",
            "pic.html",
            "shot.png",
            "dir.html",
            "gone.html"
        ]
    );
    // A redirect's copy sends the browser on: to the local copy of a page the crawl
    // fetches, to the target itself otherwise.
    let dir_stub = std::fs::read_to_string(dir.join("dir.html")).unwrap();
    assert!(
        dir_stub.contains("content=\"0; url=d/index.html\""),
        "{dir_stub}"
    );
    let gone = std::fs::read_to_string(dir.join("gone.html")).unwrap();
    assert!(
        gone.contains("url=http://elsewhere.invalid/x?a=1&amp;b=2\""),
        "{gone}"
    );
    // An image that is also a linked page: one file, one name, from both.
    assert_eq!(srcs, ["pic.html", "shot.png"]);
    for (href, text) in hrefs.iter().zip([
        "page /a",
        "page /a.html",
        "page /d/",
        "page /d/index.html",
        "page /d/index",
    ]) {
        let copy = std::fs::read_to_string(target(&dir.join("index.html"), href)).unwrap();
        assert!(copy.contains(&format!("<p>{text}</p>")), "{href}: {copy}");
    }
    assert_eq!(std::fs::read(dir.join("pic.html")).unwrap(), b"\x89PNG pic");
    assert_eq!(
        std::fs::read(dir.join("shot.png")).unwrap(),
        b"\x89PNG shot"
    );
    // Links back resolve too, from every depth.
    for (file, html) in html_files(&out.join("mirror")) {
        let links = values(&html, "href")
            .into_iter()
            .chain(values(&html, "src"));
        for link in links.filter(|l| !l.contains("://")) {
            assert!(
                target(&file, link).is_file(),
                "{} links to missing {link}",
                file.display()
            );
        }
    }
}

/// `text` in Shift_JIS: only the characters the test uses.
fn shift_jis(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for c in text.chars() {
        match c {
            '日' => out.extend(b"\x93\xfa"),
            '本' => out.extend(b"\x96\x7b"),
            c if c.is_ascii() => out.push(c as u8),
            c => panic!("{c} is not in this table"),
        }
    }
    out
}

fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
    text.encode_utf16()
        .flat_map(|u| {
            if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            }
        })
        .collect()
}

/// Pages in five encodings, each named a different way (HTTP header, `<meta charset>`,
/// `<meta http-equiv>`, byte order mark), each linking to a page whose path and query are
/// not ASCII.
fn encoded_site() -> Site {
    Site::start(|target, _| {
        let html = |ct: &str, body: Vec<u8>| Reply::new(200, ct, body);
        match target {
            "/" => Reply::html(
                ["latin1", "cp1252", "sjis", "utf16le", "utf16be"]
                    .map(|p| format!("<a href=\"/{p}\">{p}</a>"))
                    .concat(),
            ),
            "/latin1" => html(
                "text/html; charset=ISO-8859-1",
                b"<link rel=stylesheet href=/latin1.css><p>caf\xe9</p><a href='/caf\xe9.html?q=\xe9'>x</a>"
                    .to_vec(),
            ),
            "/latin1.css" => Reply::new(
                200,
                "text/css",
                b"@charset \"iso-8859-1\"; /* caf\xe9 */ p { background: url(/caf\xe9.png) }".to_vec(),
            ),
            "/caf%C3%A9.png" => Reply::new(200, "image/png", b"\x89PNG".to_vec()),
            "/cp1252" => html(
                "text/html",
                b"<meta charset=\"windows-1252\"><a href='/\x80uro.html?q=\x80'>x</a>".to_vec(),
            ),
            "/sjis" => html(
                "text/html",
                shift_jis(concat!(
                    r#"<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">"#,
                    "<p>日本</p><a href='/日本.html?q=日本'>x</a>"
                )),
            ),
            "/utf16le" => html(
                "text/html",
                utf16(
                    "\u{feff}<p>\u{fc}</p><a href='/utf16le-\u{fc}.html'>x</a>",
                    false,
                ),
            ),
            "/utf16be" => html(
                "text/html; charset=utf-16be",
                utf16("<a href='/utf16be-\u{fc}.html?q=\u{fc}'>x</a>", true),
            ),
            t if t.contains(".html") => Reply::html("<p>target</p>"),
            _ => Reply::not_found(),
        }
    })
}

#[test]
fn links_on_pages_in_other_encodings_are_the_urls_a_browser_requests() {
    let site = encoded_site();
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &[]);
    // Paths are UTF-8 whatever the page's encoding; queries are in the page's encoding (UTF-8
    // for UTF-16 pages), as the URL standard says: 本 is 96 7B in Shift_JIS, and `{` stays
    // as it is in a query.
    for requested in [
        "/caf%C3%A9.html?q=%E9",
        "/%E2%82%ACuro.html?q=%80",
        "/%E6%97%A5%E6%9C%AC.html?q=%93%FA%96{",
        "/utf16le-%C3%BC.html",
        "/utf16be-%C3%BC.html?q=%C3%BC",
        "/caf%C3%A9.png",
    ] {
        assert_eq!(site.hit(requested), 1, "{requested} in {:?}", site.hits());
    }
    // Nothing else was requested: no mangled spelling of any of them.
    assert_eq!(site.hits().len(), 14, "{:?}", site.hits());

    // The copies are UTF-8, with a byte order mark and UTF-8 declared, and their links lead
    // to the local copies.
    let dir = host_dir(&out, &site.origin);
    for (page, text) in [
        ("latin1.html", "<p>caf\u{e9}</p>"),
        ("cp1252.html", "<meta charset=\"utf-8\">"),
        ("sjis.html", "<p>日本</p>"),
        ("sjis.html", "content=\"text/html; charset=utf-8\""),
        ("utf16le.html", "<p>\u{fc}</p>"),
        ("utf16be.html", "<a href"),
    ] {
        let copy = std::fs::read(dir.join(page)).unwrap();
        let copy = String::from_utf8(copy).unwrap_or_else(|e| panic!("{page}: {e}"));
        let copy = copy
            .strip_prefix('\u{feff}')
            .unwrap_or_else(|| panic!("{page} has no byte order mark"));
        assert!(copy.contains(text), "{page}: {text} not in {copy}");
        for link in values(copy, "href")
            .into_iter()
            .filter(|l| !l.ends_with(".css"))
        {
            let found = target(&dir.join(page), link);
            let linked = std::fs::read_to_string(&found).unwrap_or_default();
            assert!(linked.contains("<p>target</p>"), "{page}: {link}");
        }
    }
    let css = std::fs::read_to_string(dir.join("latin1.css")).unwrap();
    assert_eq!(
        css,
        "\u{feff}@charset \"utf-8\"; /* caf\u{e9} */ p { background: url(caf_25C3_25A9.png) }"
    );
    assert!(dir.join("caf_25C3_25A9.png").is_file());
    // The archive keeps the bytes as sent.
    let warc: Vec<u8> = warc_files(&out)
        .iter()
        .flat_map(|f| std::fs::read(f).unwrap())
        .collect();
    for sent in [
        &b"<a href='/caf\xe9.html?q=\xe9'>"[..],
        &utf16("<a href='/utf16be-\u{fc}", true),
    ] {
        assert!(warc.windows(sent.len()).any(|w| w == sent), "{sent:?}");
    }
}

/// Two hosts: A holds a documentation tree under `/std/` whose pages use stylesheets,
/// scripts and images elsewhere on A, and an image on B, whose robots.txt keeps `/private/`.
fn docs_and_cdn() -> Site {
    let cdn: Arc<OnceLock<String>> = Arc::default();
    let cdn_in = cdn.clone();
    let site = Site::start_ports(2, move |target, headers| {
        let host = common::header_value(headers, axum::http::header::HOST);
        let b = cdn_in.get().map(String::as_str).unwrap_or_default();
        if b.ends_with(host) {
            return match target {
                "/robots.txt" => Reply::new(
                    200,
                    "text/plain",
                    b"User-agent: *\nDisallow: /private/\n".to_vec(),
                ),
                "/logo.svg" => Reply::new(200, "image/svg+xml", b"<svg/>".to_vec()),
                "/page.html" | "/private/x.png" => Reply::html("never"),
                _ => Reply::not_found(),
            };
        }
        let page = |next: &str| {
            Reply::html(format!(
                r#"<link rel="stylesheet" href="../static.files/rustdoc.css">
                <script src="/static.files/main.js"></script>
                <img src="{b}/logo.svg"><img src="{b}/private/x.png">
                <a href="{next}">next</a><a href="/core/index.html">core</a>
                <a href="{b}/page.html">elsewhere</a>"#
            ))
        };
        match target {
            "/std/index.html" => page("vec.html"),
            "/std/vec.html" => page("index.html"),
            "/static.files/rustdoc.css" => Reply::new(
                200,
                "text/css",
                br#"@import "fonts.css"; body { background: url(../bg.png) }"#.to_vec(),
            ),
            "/static.files/fonts.css" => Reply::new(200, "text/css", b"h1 {}".to_vec()),
            "/static.files/main.js" => Reply::new(200, "text/javascript", b"1".to_vec()),
            "/bg.png" => Reply::new(200, "image/png", b"\x89PNG".to_vec()),
            "/core/index.html" => Reply::html("out of scope"),
            _ => Reply::not_found(),
        }
    });
    cdn.set(site.origins[1].clone()).unwrap();
    site
}

#[test]
fn requisites_are_fetched_outside_the_scope_but_pages_are_not() {
    let site = docs_and_cdn();
    let (_tmp, out) = temp_out();
    let prefix = site.url("/std/");
    crawl(
        &out,
        &site.url("/std/index.html"),
        &["--scope", "prefix", "--prefix", &prefix],
    );
    let hits = site.hits();
    // Each requisite once, however many pages use it, wherever it is.
    for path in [
        "/std/index.html",
        "/std/vec.html",
        "/static.files/rustdoc.css",
        "/static.files/fonts.css",
        "/static.files/main.js",
        "/bg.png",
        "/logo.svg",
    ] {
        assert_eq!(hits.get(path), Some(&1), "{path}: {hits:?}");
    }
    // Pages outside the scope are not fetched, and robots.txt holds for requisites too.
    for path in ["/core/index.html", "/page.html", "/private/x.png"] {
        assert_eq!(hits.get(path), None, "{path}: {hits:?}");
    }
    let cdn = &site.origins[1];
    assert_eq!(
        skipped_for(&out, "robots-disallowed"),
        [format!("{cdn}/private/x.png")]
    );
    // The copy is styled: its requisites are local, out-of-scope pages absolute.
    let a = host_dir(&out, &site.origin);
    let index = std::fs::read_to_string(a.join("std/index_.html")).unwrap();
    for local in [
        "../static_2Efiles/rustdoc.css",
        "../static_2Efiles/main.js",
        &format!(
            "../../{}/logo.svg",
            cdn.trim_start_matches("http://").replace(':', "+")
        ),
        "vec_.html",
    ] {
        assert!(
            index.contains(&format!("\"{local}\"")),
            "{local} in {index}"
        );
        assert!(
            target(&a.join("std/index_.html"), local).is_file(),
            "{local}"
        );
    }
    for absolute in [site.url("/core/index.html"), format!("{cdn}/page.html")] {
        assert!(
            index.contains(&format!("\"{absolute}\"")),
            "{absolute} in {index}"
        );
    }
    let css = std::fs::read_to_string(a.join("static_2Efiles/rustdoc.css")).unwrap();
    assert!(
        css.contains("@import \"fonts.css\"") && css.contains("url(../bg.png)"),
        "{css}"
    );
}
