//! Where a page lives in the offline mirror, and how one mirrored page links to another.
//!
//! A URL maps to `host[+port]/dir/.../name` with names drawn only from `[A-Za-z0-9.~-]` and
//! `_XX` escapes, so every mirrored link is a plain relative path that needs no
//! percent-encoding and cannot climb out of the mirror. A name without an extension gets
//! `.html` and a directory URL gets `index.html`, so a browser opens the files as pages (wget's
//! `-E`). A query becomes a hash in the name, since the file system has no query.

use std::path::PathBuf;

use url::Url;
use xxhash_rust::xxh3::xxh3_64;

/// Longest escaped name kept whole; longer ones are cut and suffixed with a hash, well below
/// the 255-byte limit of common file systems.
const MAX_NAME: usize = 160;

/// The path components of `url` inside the mirror (host first).
pub(crate) fn components(url: &Url) -> Vec<String> {
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
    } else if last.contains('.') {
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

/// The file of `url` under the mirror root.
pub(crate) fn path(url: &Url) -> PathBuf {
    components(url).iter().collect()
}

/// The relative link from the mirrored page `from` to the mirrored page `to`.
pub(crate) fn relative(from: &Url, to: &Url) -> String {
    let a = components(from);
    let b = components(to);
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
            for part in components(&url) {
                proptest::prop_assert!(!part.is_empty() && !part.starts_with('.'));
                proptest::prop_assert!(part.bytes().all(|b| b.is_ascii_alphanumeric() || b"._~-+".contains(&b)));
            }
        }
    }
}
