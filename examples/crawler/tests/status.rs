//! The status page on the wire, against the real binary, with the requests a browser sends:
//! another site's page (a form post, a preflight, a DNS-rebinding read) gets nothing, the
//! page itself and a command-line client with the run's token get what they ask for.

mod common;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::process::{Child, Stdio};
use std::time::Duration;

use common::{Gate, Lines, Reply, Site, StatusPage, request, temp_out};

/// A crawl of a site whose page `/held` waits for `gate`, serving its status page.
fn crawl_held(out: &std::path::Path, gate: &Gate) -> (Site, Child, StatusPage) {
    let g = gate.clone();
    let site = Site::start(move |target, _| match target {
        "/" => Reply::html(r#"<a href="/a">a</a><a href="/held">held</a>"#),
        "/a" => Reply::html("leaf"),
        "/held" => Reply::html("late").held(&g),
        _ => Reply::not_found(),
    });
    let mut child = common::crawler(out)
        .arg(site.url("/"))
        .args(["--status", "127.0.0.1:0", "--rate", "50"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = Lines::new(child.stderr.take().unwrap());
    let page = StatusPage::announced(&mut stderr);
    (site, child, page)
}

fn finish(mut child: Child, gate: &Gate) {
    gate.open();
    assert!(common::wait_exit(&mut child, Duration::from_secs(60)).success());
}

#[test]
fn other_sites_can_neither_read_nor_change_the_crawl() {
    let gate = Gate::default();
    let (_tmp, out) = temp_out();
    let (_site, child, page) = crawl_held(&out, &gate);
    let addr = page.addr.as_str();
    let port = addr.rsplit_once(':').unwrap().1;

    // The token printed is the one in the file, which only its owner may read.
    assert_eq!(page.token.len(), 64);
    assert_eq!(page.token_file, out.join("status-token"));
    let text = std::fs::read_to_string(&page.token_file).unwrap();
    assert_eq!(text.trim(), page.token);
    let mode = std::fs::metadata(&page.token_file)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // DNS rebinding: a name that resolves here reads nothing.
    for host in [
        format!("evil.example:{port}"),
        "127.0.0.1:1".to_owned(),
        String::new(),
    ] {
        for path in ["/status.json", "/", "/rate"] {
            let a = request(addr, "GET", path, &host, &[], "");
            assert_eq!(a.status, 421, "{host} {path}: {}", a.body);
            assert!(!a.body.contains("fetched"), "{}", a.body);
        }
    }
    // The page itself, by its address or as localhost.
    for host in [addr.to_owned(), format!("localhost:{port}")] {
        let a = request(addr, "GET", "/status.json", &host, &[], "");
        assert_eq!(a.status, 200, "{host}: {}", a.body);
        assert!(a.header("access-control-allow-origin").is_none());
        assert_eq!(a.header("x-frame-options"), Some("DENY"));
        assert_eq!(a.header("cache-control"), Some("no-store"));
    }

    // A preflight from another site is answered without granting anything.
    let preflight = request(
        addr,
        "OPTIONS",
        "/rate?pages_per_sec=1000",
        addr,
        &[
            ("Origin", "http://evil.example"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization"),
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "cors"),
        ],
        "",
    );
    assert!(preflight.status < 300, "{preflight:?}");
    assert!(
        preflight
            .headers
            .iter()
            .all(|(name, _)| !name.starts_with("access-control-allow")),
        "{preflight:?}"
    );

    // Another site's form post, even with the token, changes nothing.
    let form = format!("pages_per_sec=1000&token={}", page.token);
    let cross: [&[(&str, &str)]; 4] = [
        &[
            ("Origin", "http://evil.example"),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        &[("Origin", "http://evil.example")],
        &[("Origin", "null")],
        &[("Sec-Fetch-Site", "same-site")],
    ];
    for headers in cross {
        let mut headers = headers.to_vec();
        headers.push(("Content-Type", "application/x-www-form-urlencoded"));
        let a = request(addr, "POST", "/rate", addr, &headers, &form);
        assert_eq!(a.status, 403, "{headers:?}: {}", a.body);
    }
    // Without the token, or with another, nothing changes either.
    let wrong = format!("Bearer {}", "0".repeat(64));
    for headers in [vec![], vec![("Authorization", wrong.as_str())]] {
        let a = request(addr, "POST", "/rate?pages_per_sec=1000", addr, &headers, "");
        assert_eq!(a.status, 401, "{headers:?}: {}", a.body);
    }
    let a = request(
        addr,
        "POST",
        "/rate",
        addr,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        "pages_per_sec=1000&token=guess",
    );
    assert_eq!(a.status, 401, "{}", a.body);
    // With the token, under another name: refused before anything is read.
    let bearer = format!("Bearer {}", page.token);
    let a = request(
        addr,
        "POST",
        "/rate?pages_per_sec=1000",
        &format!("evil.example:{port}"),
        &[("Authorization", &bearer)],
        "",
    );
    assert_eq!(a.status, 421, "{}", a.body);
    assert_eq!(page.status()["rate_limit"], 50.0);

    // The page's own form, as the browser posts it: the limit changes, back to the page.
    let a = request(
        addr,
        "POST",
        "/rate",
        addr,
        &[
            ("Origin", &format!("http://{addr}")),
            ("Sec-Fetch-Site", "same-origin"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &format!("pages_per_sec=7.5&token={}", page.token),
    );
    assert_eq!(a.status, 303, "{}", a.body);
    assert_eq!(a.header("location"), Some("/"));
    assert_eq!(page.status()["rate_limit"], 7.5);
    // A command-line client with the token; values out of range are refused.
    assert_eq!(page.set_rate("0").status, 200);
    assert_eq!(page.set_rate("1e9").status, 400);
    assert_eq!(page.status()["rate_limit"], 0.0);
    // The form page is served, and reloads nothing while the person types.
    let form_page = page.get("/rate");
    assert_eq!(form_page.status, 200);
    assert!(form_page.body.contains("name=token"), "{}", form_page.body);
    assert!(!form_page.body.contains("refresh"), "{}", form_page.body);
    assert!(!form_page.body.contains(&page.token));
    finish(child, &gate);
}

/// Each run draws a new token, and the file is never written through a link planted in its
/// place.
#[test]
fn each_run_has_its_own_token_written_through_no_link() {
    let (tmp, out) = temp_out();
    let gate = Gate::default();
    let (_site, child, first) = crawl_held(&out, &gate);
    finish(child, &gate);
    let target = tmp.path().join("elsewhere");
    std::fs::write(&target, "untouched").unwrap();
    std::fs::remove_file(out.join("status-token")).unwrap();
    symlink(&target, out.join("status-token")).unwrap();
    let gate = Gate::default();
    let (_site, child, second) = crawl_held(&out, &gate);
    assert_ne!(first.token, second.token);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    let meta = std::fs::symlink_metadata(out.join("status-token")).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::read_to_string(out.join("status-token"))
            .unwrap()
            .trim(),
        second.token
    );
    // The first run's token no longer changes anything.
    let stale = StatusPage {
        token: first.token.clone(),
        ..second.clone()
    };
    assert_eq!(stale.set_rate("1").status, 401);
    assert_eq!(second.set_rate("1").status, 200);
    finish(child, &gate);
}
