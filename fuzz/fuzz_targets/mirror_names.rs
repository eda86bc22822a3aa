//! Pairs of URLs into the crawler's offline-mirror name mapping (`examples/crawler/src/mirror.rs`,
//! included by path since the crawler is a binary crate). The input is two URLs on two lines,
//! each read against `http://h.example/d/` so relative spellings reach odd paths. For each
//! http(s) URL, every name is safe (no `.` or `..`, no separator, only the mapping's
//! alphabet, at most `MAX_NAME` bytes) and a file name holds a dot where no directory name
//! does; for the pair, distinct URLs have distinct files, neither file is the other's
//! directory, and the relative link from each file resolves to the other's file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url::Url;

#[path = "../../examples/crawler/src/mirror.rs"]
#[allow(dead_code)]
mod mirror;

/// What names a mirrored file: everything but the userinfo and the fragment.
fn key(url: &Url) -> (&str, Option<&str>, Option<u16>, &str, Option<&str>) {
    (url.scheme(), url.host_str(), url.port(), url.path(), url.query())
}

fn file_url(parts: &[String]) -> Url {
    Url::parse(&format!("file:///mirror/{}", parts.join("/"))).expect("names need no escaping")
}

fn check(url: &Url) -> Vec<String> {
    let parts = mirror::components(url);
    let last = parts.len() - 1;
    for (i, part) in parts.iter().enumerate() {
        assert!(!part.is_empty() && !part.starts_with('.'), "{url}: {parts:?}");
        assert!(part.len() <= mirror::MAX_NAME, "{url}: {part}");
        assert!(
            part.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._~-+".contains(&b)),
            "{url}: {part}"
        );
        if i == last {
            assert!(part.contains('.'), "{url}: file {part}");
        } else if i >= 2 {
            assert!(!part.contains('.'), "{url}: directory {part}");
        }
    }
    parts
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (a, b) = text.split_once('\n').unwrap_or((&text, "/"));
    let base = Url::parse("http://h.example/d/").unwrap();
    let (Ok(a), Ok(b)) = (base.join(a), base.join(b)) else {
        return;
    };
    if ![&a, &b]
        .iter()
        .all(|u| matches!(u.scheme(), "http" | "https"))
    {
        return;
    }
    let (pa, pb) = (check(&a), check(&b));
    if key(&a) != key(&b) {
        assert_ne!(pa, pb, "{a} and {b} share a file");
    }
    assert!(
        !pb.starts_with(&pa) || pa == pb,
        "{a}'s file is a directory of {b}'s"
    );
    assert!(
        !pa.starts_with(&pb) || pa == pb,
        "{b}'s file is a directory of {a}'s"
    );
    for (from, to, pf, pt) in [(&a, &b, &pa, &pb), (&b, &a, &pb, &pa)] {
        let link = mirror::relative(from, to);
        let resolved = file_url(pf).join(&link).expect("a relative link");
        assert_eq!(resolved, file_url(pt), "{from} -> {to}: {link}");
    }
});
