//! Where a URL lives in the offline mirror, and how one mirrored file links to another.
//!
//! A URL maps to `SCHEME/HOST[+PORT]/dir/.../name`, a function of the URL alone: a page and a
//! requisite of one URL are one file, and a link can be written before its target is fetched.
//! Names are drawn from `[A-Za-z0-9.~-]`, `_XX` escapes of every other byte, and a few marks
//! that begin with a bare `_` (which no escape leaves), so every mirrored link is a plain
//! relative path that needs no percent-encoding and cannot climb out of the mirror.
//!
//! The names `wget -E` users expect are kept: a directory URL is `dir/index.html`, a name
//! without an extension gets `.html`, a name with one keeps it. Distinct URLs never share a
//! file:
//!
//! * a name the site gives that has the form of one the mirror makes (`a.html`, which `/a`
//!   becomes; `index.html`, which `/d/` becomes) gets `_` before its extension (`a_.html`);
//!   `/d/index`, whose made name would be the directory's, is `_index.html`;
//! * every file name holds a dot and no directory name does (a dot in a directory's name is
//!   escaped), so `/v1.2` and `/v1.2/x` do not fight over one name;
//! * the scheme is the first directory (wget's `--protocol-directories`): `http://h/` and
//!   `https://h/` are two URLs;
//! * a query is a 64-bit hash in the name (`_q` and 16 hex digits before the extension), and a
//!   name longer than [`MAX_NAME`] is cut and ends with a hash of the whole (`_h` and 16 hex
//!   digits): only those hashes can collide, with odds of 2^-64 per pair.
//!
//! The userinfo and the fragment are no part of the name. The names assume a case-sensitive
//! file system: on one that folds case, `/A` and `/a` share a file.

use std::path::PathBuf;

use url::Url;
use xxhash_rust::xxh3::xxh3_64;

/// Longest name kept whole; longer ones are cut and end with a hash, well below the 255-byte
/// limit of common file systems.
pub(crate) const MAX_NAME: usize = 160;

/// The made name of a directory URL.
const INDEX: &str = "index.html";

/// The path components of `url` inside the mirror: scheme, host, directories, file name.
pub(crate) fn components(url: &Url) -> Vec<String> {
    let mut parts = vec![escape(url.scheme(), Dots::Kept)];
    let mut host = match url.host_str() {
        Some(host) if !host.is_empty() => escape(host, Dots::Kept),
        // A bare `_` is no escaped name.
        _ => "_".to_owned(),
    };
    if let Some(port) = url.port() {
        // `+` is escaped everywhere else, so this suffix cannot collide with a host name.
        host.push('+');
        host.push_str(&port.to_string());
    }
    parts.push(fit(host));
    let segments: Vec<&str> = url.path_segments().map_or_else(Vec::new, Iterator::collect);
    let (dirs, last) = match segments.split_last() {
        Some((last, dirs)) => (dirs, *last),
        None => (&[][..], ""),
    };
    parts.extend(dirs.iter().map(|d| {
        if d.is_empty() {
            // An empty segment (`//`): a bare `_` is no escaped name.
            "_".to_owned()
        } else {
            fit(escape(d, Dots::Escaped))
        }
    }));
    parts.push(file_name(last, url.query()));
    parts
}

/// The file of `url` under the mirror root.
pub(crate) fn path(url: &Url) -> PathBuf {
    components(url).iter().collect()
}

/// The relative link from the mirrored file of `from` to the mirrored file of `to`.
pub(crate) fn relative(from: &Url, to: &Url) -> String {
    let a = components(from);
    let b = components(to);
    let a_dirs = &a[..a.len() - 1];
    let common = a_dirs.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = "../".repeat(a_dirs.len() - common);
    out.push_str(&b[common..].join("/"));
    out
}

/// The file name of a URL whose last path segment is `last`.
fn file_name(last: &str, query: Option<&str>) -> String {
    let name = escape(last, Dots::Kept);
    let mut name = match name.rfind('.') {
        _ if last.is_empty() => INDEX.to_owned(),
        None if name == "index" => format!("_{INDEX}"),
        None => format!("{name}.html"),
        // A site's `a.html` is what `/a` becomes: the site's gets the mark.
        Some(dot) if &name[dot..] == ".html" && !name[..dot].contains('.') => {
            format!("{}_.html", &name[..dot])
        }
        Some(_) => name,
    };
    if let Some(query) = query {
        // Every name holds a dot by now: the tag goes before the extension.
        let dot = name.rfind('.').unwrap_or(name.len());
        name.insert_str(dot, &format!("_q{:016x}", xxh3_64(query.as_bytes())));
    }
    fit(name)
}

/// Whether `escape` keeps dots (file and host names) or escapes them (directory names, so a
/// directory never has a file's name).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dots {
    Kept,
    Escaped,
}

/// `raw` with every byte but `[A-Za-z0-9~-]` (and `.`, when kept) written `_XX`; a leading
/// dot is always escaped, since "." and ".." would walk the tree and a leading dot hides a file.
fn escape(raw: &str, dots: Dots) -> String {
    let mut out = String::with_capacity(raw.len());
    for (i, b) in raw.bytes().enumerate() {
        let kept = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'~')
            || (b == b'.' && dots == Dots::Kept && i > 0);
        if kept {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    out
}

/// `name` when it is at most [`MAX_NAME`] bytes; otherwise cut, with `_h`, a hash of the whole
/// name and its extension (when short) at the end, [`MAX_NAME`] bytes in all.
fn fit(name: String) -> String {
    if name.len() <= MAX_NAME {
        return name;
    }
    let ext = match name.rfind('.') {
        Some(dot) if name.len() - dot <= 16 => &name[dot..],
        // A file name keeps a dot: files and directories never share a name.
        Some(_) => ".html",
        None => "",
    };
    let keep = MAX_NAME - 18 - ext.len();
    // Every byte is ASCII, so any cut is a char boundary.
    format!("{}_h{:016x}{ext}", &name[..keep], xxh3_64(name.as_bytes()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::canonical::Canonicalizer;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn p(s: &str) -> String {
        path(&u(s)).to_str().unwrap().to_owned()
    }

    /// The layout, one URL per row: the names `wget -E` gives where no other URL can want
    /// them, a mark where one can.
    #[test]
    fn layout() {
        for (url, want) in [
            ("http://h/", "http/h/index.html"),
            ("https://h/", "https/h/index.html"),
            ("http://h:8080/a/b", "http/h+8080/a/b.html"),
            ("http://h/a/b.css", "http/h/a/b.css"),
            ("http://h/a/", "http/h/a/index.html"),
            ("http://h/a/index.html", "http/h/a/index_.html"),
            ("http://h/a/index", "http/h/a/_index.html"),
            ("http://h/a", "http/h/a.html"),
            ("http://h/a.html", "http/h/a_.html"),
            ("http://h/struct.Vec.html", "http/h/struct.Vec.html"),
            ("http://h/a.htm", "http/h/a.htm"),
            ("http://h/v1.2/x.png", "http/h/v1_2E2/x.png"),
            ("http://h/v1.2", "http/h/v1.2"),
            ("http://h/a%20b/_x", "http/h/a_2520b/_5Fx.html"),
            ("http://h/.git/config", "http/h/_2Egit/config.html"),
            ("http://h/.htaccess", "http/h/_2Ehtaccess.html"),
            ("http://h//x", "http/h/_/x.html"),
            ("http://[::1]:3000/", "http/_5B_3A_3A1_5D+3000/index.html"),
        ] {
            assert_eq!(p(url), want, "{url}");
        }
        let q = p("http://h/p.html?x=1");
        assert!(q.starts_with("http/h/p__q") && q.ends_with(".html"), "{q}");
        assert_ne!(q, p("http://h/p.html?x=2"));
        assert_ne!(p("http://h/p?x=1"), q);
        assert!(p("http://h/s.css?v=3").ends_with(".css"));
    }

    #[test]
    fn long_names_are_cut_and_keep_their_extension() {
        let long = "a".repeat(300);
        let png = p(&format!("http://h/{long}.png"));
        let name = png.rsplit('/').next().unwrap();
        assert_eq!(name.len(), MAX_NAME);
        assert!(name.ends_with(".png") && name.contains("_h"), "{name}");
        assert_ne!(png, p(&format!("http://h/{long}b.png")));
        let dir = p(&format!("http://h/{long}/x"));
        assert!(dir.split('/').all(|c| c.len() <= MAX_NAME), "{dir}");
    }

    #[test]
    fn relative_links() {
        let r = |a: &str, b: &str| relative(&u(a), &u(b));
        assert_eq!(r("http://h/a/b", "http://h/a/c"), "c.html");
        assert_eq!(r("http://h/a/b", "http://h/"), "../index.html");
        assert_eq!(r("http://h/", "http://h/x/y/"), "x/y/index.html");
        assert_eq!(r("http://h/a/b", "http://g/c"), "../../g/c.html");
        assert_eq!(r("http://h/a", "https://h/a"), "../../https/h/a.html");
        assert_eq!(
            r("http://h/static/site.css", "http://h/static/fonts/a.woff2"),
            "fonts/a.woff2"
        );
    }

    /// Path segments chosen to meet each other: the names the mirror makes, the names sites
    /// give that look like them, dots, escapes, marks and long names.
    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("index".to_owned()),
            Just("index.html".to_owned()),
            Just("_index.html".to_owned()),
            Just("index_.html".to_owned()),
            Just("a".to_owned()),
            Just("a.html".to_owned()),
            Just("a_.html".to_owned()),
            Just("a.html.html".to_owned()),
            Just("a_2E".to_owned()),
            Just("a%2E".to_owned()),
            Just("v1.2".to_owned()),
            Just(".".to_owned()),
            Just("..".to_owned()),
            Just("%2e%2e".to_owned()),
            Just(".a".to_owned()),
            Just("_".to_owned()),
            Just("A".to_owned()),
            Just("x y".to_owned()),
            Just("é".to_owned()),
            Just(format!("{}.png", "l".repeat(170))),
            Just(format!("{}.png", "m".repeat(170))),
            "[a-z._%0-9~+-]{1,6}",
        ]
    }

    fn url() -> impl Strategy<Value = String> {
        (
            prop_oneof![Just("http"), Just("https")],
            prop_oneof![Just("h.example"), Just("g.example"), Just("h.example:8080")],
            proptest::collection::vec(segment(), 0..4),
            proptest::option::of(prop_oneof![
                Just(String::new()),
                Just("x=1".to_owned()),
                Just("x=2".to_owned()),
            ]),
        )
            .prop_map(|(scheme, host, segments, query)| {
                let mut s = format!("{scheme}://{host}/{}", segments.join("/"));
                if let Some(q) = query {
                    s.push('?');
                    s.push_str(&q);
                }
                s
            })
    }

    /// `file` as a `file:` URL under a mirror root, the way a browser opening it sees it.
    fn as_file_url(components: &[String]) -> Url {
        u(&format!("file:///mirror/{}", components.join("/")))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Distinct canonical URLs map to distinct files, every link from one file to another
        /// resolves to the target's file, and no name leaves the mirror.
        #[test]
        fn distinct_urls_distinct_files_and_links_resolve(raw in proptest::collection::vec(url(), 1..40)) {
            let canon = Canonicalizer::default();
            let urls: Vec<Url> = raw
                .iter()
                .filter_map(|s| canon.canonicalize(&u(s)).ok())
                .collect();
            let mut files: HashMap<PathBuf, &Url> = HashMap::new();
            let mut dirs = Vec::new();
            for url in &urls {
                let parts = components(url);
                for (i, part) in parts.iter().enumerate() {
                    prop_assert!(!part.is_empty() && part != "." && part != "..", "{url}: {parts:?}");
                    prop_assert!(part.len() <= MAX_NAME, "{url}: {part}");
                    prop_assert!(
                        part.bytes().all(|b| b.is_ascii_alphanumeric() || b"._~-+".contains(&b)),
                        "{url}: {part}"
                    );
                    prop_assert!(!part.starts_with('.'), "{url}: {part}");
                    // Files hold a dot; directories below the host never do.
                    if i == parts.len() - 1 {
                        prop_assert!(part.contains('.'), "{url}: {part}");
                    } else if i >= 2 {
                        prop_assert!(!part.contains('.'), "{url}: {part}");
                    }
                }
                dirs.push(parts[..parts.len() - 1].iter().collect::<PathBuf>());
                let file = path(url);
                if let Some(other) = files.insert(file.clone(), url) {
                    prop_assert_eq!(other.as_str(), url.as_str(), "{:?} is the file of both", file);
                }
            }
            // No file is another URL's directory.
            for dir in &dirs {
                for prefix in dir.ancestors() {
                    prop_assert!(!files.contains_key(prefix), "{prefix:?} is a file and a directory");
                }
            }
            for from in &urls {
                let base = as_file_url(&components(from));
                for to in &urls {
                    let link = relative(from, to);
                    let resolved = base.join(&link).unwrap();
                    prop_assert_eq!(resolved, as_file_url(&components(to)), "{} -> {}: {}", from, to, link);
                }
            }
        }
    }
}
