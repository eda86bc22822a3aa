//! Where a page lives in the offline mirror, and how one mirrored page links to another.
//!
//! A URL maps to `host[+port]/dir/.../name` with names drawn only from `[A-Za-z0-9.~-]` and
//! `_XX` escapes, so every mirrored link is a plain relative path that needs no
//! percent-encoding and cannot climb out of the mirror. A name without an extension gets
//! `.html` and a directory URL gets `index.html`, so a browser opens the files as pages (wget's
//! `-E`); a requisite (image, script, stylesheet) keeps its name as it is, since a browser
//! takes its type from the page that uses it. A query becomes a hash in the name, since the file
//! system has no query.

use std::path::PathBuf;

use url::Url;
use xxhash_rust::xxh3::xxh3_64;

use crate::links::LinkKind;

/// Longest escaped name kept whole; longer ones are cut and suffixed with a hash, well below
/// the 255-byte limit of common file systems.
const MAX_NAME: usize = 160;

/// The path components of `url` inside the mirror, as a page or as a requisite.
pub(crate) fn components_as(url: &Url, kind: LinkKind) -> Vec<String> {
    let mut host = escape(url.host_str().unwrap_or("no-host"));
    if let Some(port) = url.port() {
        // `+` is escaped everywhere else, so this suffix cannot collide with a host name.
        host.push('+');
        host.push_str(&port.to_string());
    }
    let mut parts = vec![host];
    let segments: Vec<&str> = url.path_segments().map_or_else(Vec::new, Iterator::collect);
    let (dirs, last) = match segments.split_last() {
        Some((last, dirs)) => (dirs, *last),
        None => (&[][..], ""),
    };
    // An empty segment (`//`) becomes `_`, which no escaped name can be.
    parts.extend(dirs.iter().map(|d| {
        if d.is_empty() {
            "_".to_owned()
        } else {
            escape(d)
        }
    }));
    let mut name = if last.is_empty() {
        "index.html".to_owned()
    } else if last.contains('.') || kind == LinkKind::Requisite {
        escape(last)
    } else {
        format!("{}.html", escape(last))
    };
    if let Some(query) = url.query() {
        let tag = format!("_q{:016x}", xxh3_64(query.as_bytes()));
        let at = name.rfind('.').unwrap_or(name.len());
        name.insert_str(at, &tag);
    }
    parts.push(name);
    parts
}

/// The file of the page `url` under the mirror root.
pub(crate) fn path(url: &Url) -> PathBuf {
    path_as(url, LinkKind::Page)
}

/// The file of `url` under the mirror root, as a page or as a requisite.
pub(crate) fn path_as(url: &Url, kind: LinkKind) -> PathBuf {
    components_as(url, kind).iter().collect()
}

/// The relative link from the mirrored file of `from` to the mirrored file of `to`, each a
/// page or a requisite.
pub(crate) fn relative_as(from: (&Url, LinkKind), to: (&Url, LinkKind)) -> String {
    let a = components_as(from.0, from.1);
    let b = components_as(to.0, to.1);
    let a_dirs = &a[..a.len() - 1];
    let common = a_dirs.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = "../".repeat(a_dirs.len() - common);
    out.push_str(&b[common..].join("/"));
    out
}

fn escape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    // "." and ".." would walk the tree; a leading dot would hide the file.
    if out.starts_with('.') {
        out.replace_range(0..1, "_2E");
    }
    if out.len() > MAX_NAME {
        let hash = xxh3_64(raw.as_bytes());
        out.truncate(MAX_NAME - 18);
        out.push_str(&format!("_h{hash:016x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relative(from: &Url, to: &Url) -> String {
        relative_as((from, LinkKind::Page), (to, LinkKind::Page))
    }

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn layout() {
        assert_eq!(path(&u("http://h/")), PathBuf::from("h/index.html"));
        assert_eq!(
            path(&u("http://h:8080/a/b")),
            PathBuf::from("h+8080/a/b.html")
        );
        assert_eq!(path(&u("http://h/a/b.css")), PathBuf::from("h/a/b.css"));
        assert_eq!(path(&u("http://h/a/")), PathBuf::from("h/a/index.html"));
        assert_eq!(
            path(&u("http://h/a%20b/_x")),
            PathBuf::from("h/a_2520b/_5Fx.html")
        );
        let q = path(&u("http://h/p.html?x=1"));
        assert!(q.to_str().unwrap().starts_with("h/p_q") && q.to_str().unwrap().ends_with(".html"));
        assert_ne!(q, path(&u("http://h/p.html?x=2")));
    }

    #[test]
    fn requisites_keep_their_names() {
        let img = u("http://h/img/logo");
        assert_eq!(
            path_as(&img, LinkKind::Requisite),
            PathBuf::from("h/img/logo")
        );
        assert_eq!(path(&img), PathBuf::from("h/img/logo.html"));
        let css = u("http://h/static/site.css?v=3");
        let css_path = path_as(&css, LinkKind::Requisite);
        assert!(css_path.to_str().unwrap().ends_with(".css"), "{css_path:?}");
        assert_eq!(
            relative_as(
                (&u("http://h/docs/a"), LinkKind::Page),
                (&img, LinkKind::Requisite)
            ),
            "../img/logo"
        );
        assert_eq!(
            relative_as(
                (&u("http://h/static/site.css"), LinkKind::Requisite),
                (&u("http://h/static/fonts/a.woff2"), LinkKind::Requisite)
            ),
            "fonts/a.woff2"
        );
    }

    #[test]
    fn relative_links() {
        assert_eq!(relative(&u("http://h/a/b"), &u("http://h/a/c")), "c.html");
        assert_eq!(
            relative(&u("http://h/a/b"), &u("http://h/")),
            "../index.html"
        );
        assert_eq!(
            relative(&u("http://h/"), &u("http://h/x/y/")),
            "x/y/index.html"
        );
        assert_eq!(
            relative(&u("http://h/a/b"), &u("http://g/c")),
            "../../g/c.html"
        );
    }

    proptest::proptest! {
        #[test]
        fn names_never_escape_the_mirror(path in "(/[a-zA-Z0-9%._~ -]{0,12}){1,5}") {
            let url = Url::parse(&format!("http://h.example{path}")).unwrap();
            for part in components_as(&url, LinkKind::Page) {
                proptest::prop_assert!(!part.is_empty() && !part.starts_with('.'));
                proptest::prop_assert!(part.bytes().all(|b| b.is_ascii_alphanumeric() || b"._~-+".contains(&b)));
            }
        }
    }
}
