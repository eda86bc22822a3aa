//! Generated sites whose aliases are known by construction, and the measure of rules on them
//! (feature `testing`): for the tests and benchmarks of this crate and of the crates that
//! learn rules while they crawl.
//!
//! A [`Site`] has articles, section listings and a home page. Each page is reached by several
//! URLs that serve it (session tokens in the query and in the path, a print view, sort orders,
//! a referrer parameter, the default document, a trailing slash, `?page=1`, and for some sites
//! wiki spellings `/index.php?title=X` beside `/wiki/X`), and some URLs that look like aliases
//! serve other pages (`?lang=` translations, `?page=2` and later). Most sites also have a
//! sign-in form that every article links with itself as the return address: one page with as
//! many URLs as there are articles. The names a site uses for
//! its parameters and paths are drawn from its seed, so rules learned on one site are no use
//! on another. [`Site::html`] serves each URL with what changes between fetches (a clock, a
//! counter, a "recent changes" box), so fingerprints are put to the test too.

use std::collections::HashMap;
use std::fmt::Write as _;

/// A deterministic random stream (splitmix64).
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }

    fn token(&mut self) -> String {
        format!("{:010x}", self.next() >> 24)
    }
}

const WORDS: &[&str] = &[
    "river", "stone", "garden", "window", "engine", "harbor", "winter", "letter", "market",
    "silver", "forest", "candle", "bridge", "planet", "signal", "ladder", "meadow", "copper",
    "lantern", "orchard", "thunder", "harvest", "compass", "velvet", "anchor", "saddle", "timber",
    "crystal", "falcon", "marble", "pepper", "quartz", "ribbon", "shadow", "tunnel", "violet",
    "walnut", "yellow", "zephyr", "basket", "cotton", "dragon", "feather", "ginger",
];

/// How a site spells its aliases.
#[derive(Clone, Debug)]
struct Conventions {
    session_param: &'static str,
    session_path: &'static str,
    print: &'static str,
    sort_param: &'static str,
    default_doc: &'static str,
    lang_param: &'static str,
    page_param: &'static str,
    ref_param: &'static str,
    wiki: bool,
    /// How many of an article's aliases a crawl meets, in percent.
    alias_rate: usize,
    /// Which kinds of alias the site has (bit i: kind i of [`Site::article`]).
    aliases: u32,
    /// The sign-in form's path and return-address parameter, when the site has one.
    form: Option<(&'static str, &'static str)>,
}

/// What a URL shows of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum View {
    Normal,
    Print,
    /// A listing sorted by title.
    Sorted,
}

/// One URL of a generated site: what it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteUrl {
    /// The absolute URL.
    pub url: String,
    /// The page it serves: equal for URLs of one page, different for different pages.
    pub page: u64,
    /// Whether this is the page's first URL (the one a site links to by default).
    pub first: bool,
    /// The page whose links hold this URL: the page itself, or for a URL of the sign-in form
    /// the article it returns to.
    pub from: u64,
}

#[derive(Clone, Debug)]
struct Served {
    page: u64,
    view: View,
}

/// A generated site.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::testing::Site;
///
/// let site = Site::generate(7, 40);
/// let urls = site.urls();
/// assert!(urls.len() > 200);
/// let first = &urls[0];
/// assert!(site.html(&first.url, 0).unwrap().contains("<main"));
/// assert!(site.html("https://other.example/", 0).is_none());
/// ```
#[derive(Clone, Debug)]
pub struct Site {
    host: String,
    conv: Conventions,
    urls: Vec<SiteUrl>,
    served: HashMap<String, Served>,
    /// Page id to its title, text and listed items.
    pages: HashMap<u64, (String, Vec<String>, Vec<String>)>,
}

impl Site {
    /// A site of about `articles` articles, with names and conventions drawn from `seed`.
    ///
    /// # Examples
    ///
    /// See [`Site`].
    pub fn generate(seed: u64, articles: usize) -> Self {
        let mut rng = Rng(seed ^ 0x005e_ed0f_5173);
        // The form is drawn from a stream of its own, so the rest of a site is the same with
        // or without it.
        let mut form_rng = Rng(seed ^ 0x00f0_7a55_17e5);
        let form = (form_rng.below(5) != 0).then(|| {
            (
                form_rng.pick(&["/login", "/account/sign-in", "/user/login", "/subscribe"]),
                form_rng.pick(&["returnto", "return_to", "next", "redirect"]),
            )
        });
        let conv = Conventions {
            session_param: rng.pick(&["visit", "ctx", "wsid", "tok", "uid", "vid"]),
            session_path: rng.pick(&["s-", "sess_", "~v", "c-"]),
            print: rng.pick(&["/print", "?printable=yes", "?view=print", "/print-view"]),
            sort_param: rng.pick(&["sort", "orderby", "o", "order"]),
            default_doc: rng.pick(&["index.html", "index.php", "default.aspx", "index.htm"]),
            lang_param: rng.pick(&["lang", "hl", "locale"]),
            page_param: rng.pick(&["page", "p", "pg"]),
            ref_param: rng.pick(&["ref", "from", "src", "via"]),
            wiki: rng.below(2) == 0,
            alias_rate: 50 + rng.below(51),
            // Every site has most kinds of alias, each a random few of them.
            aliases: (0..7).fold(0, |acc, i| acc | (u32::from(rng.below(5) != 0) << i)),
            form,
        };
        let host = format!("{}{}.example", rng.pick(WORDS), seed % 1000);
        let mut site = Site {
            host,
            conv,
            urls: Vec::new(),
            served: HashMap::new(),
            pages: HashMap::new(),
        };
        let sections: Vec<&str> = {
            let mut names: Vec<&str> = Vec::new();
            while names.len() < 3 + rng.below(4) {
                let w = rng.pick(WORDS);
                if !names.contains(&w) {
                    names.push(w);
                }
            }
            names
        };
        let mut next_id = 1u64;
        let mut section_items: Vec<Vec<String>> = vec![Vec::new(); sections.len()];
        let mut articles_made: Vec<(u64, String)> = Vec::new();
        for a in 0..articles {
            let s = a % sections.len();
            let slug = format!("{}-{}-{a}", rng.pick(WORDS), rng.pick(WORDS));
            let title = slug.replace('-', " ");
            let text: Vec<String> = (0..3 + rng.below(5))
                .map(|_| {
                    (0..8 + rng.below(20))
                        .map(|_| rng.pick(WORDS))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            let id = next_id;
            next_id += 1;
            site.pages
                .insert(id, (title.clone(), text.clone(), Vec::new()));
            section_items[s].push(title.clone());
            let path = if site.conv.wiki {
                format!("/wiki/{}", slug)
            } else {
                format!("/{}/{slug}", sections[s])
            };
            site.article(&mut rng, id, &path, &slug);
            articles_made.push((id, slug.clone()));
            // Translations: other pages behind an alias-looking parameter.
            if a % 3 == 0 {
                for lang in ["fr", "de"] {
                    let tid = next_id;
                    next_id += 1;
                    let translated: Vec<String> = text
                        .iter()
                        .map(|p| format!("{lang} {}", p.replace(' ', &format!(" {lang}"))))
                        .collect();
                    site.pages
                        .insert(tid, (format!("{title} ({lang})"), translated, Vec::new()));
                    site.add(
                        &format!("{path}?{}={lang}", site.conv.lang_param),
                        tid,
                        View::Normal,
                        true,
                    );
                }
            }
        }
        // Section listings, ten items a page.
        for (s, name) in sections.iter().enumerate() {
            let items = &section_items[s];
            let pages = items.len().div_ceil(10).max(1);
            for n in 1..=pages {
                let id = next_id;
                next_id += 1;
                let chunk: Vec<String> =
                    items.iter().skip((n - 1) * 10).take(10).cloned().collect();
                site.pages
                    .insert(id, (format!("{name}, page {n}"), Vec::new(), chunk));
                let dir = format!("/{name}/");
                let pp = site.conv.page_param;
                let base = if n == 1 {
                    dir.clone()
                } else {
                    format!("{dir}?{pp}={n}")
                };
                site.add(&base, id, View::Normal, true);
                if n == 1 {
                    site.add(
                        &format!("{dir}{}", site.conv.default_doc),
                        id,
                        View::Normal,
                        false,
                    );
                    site.add(&format!("{dir}?{pp}=1"), id, View::Normal, false);
                }
                let sort = site.conv.sort_param;
                // Sorted views: the same items in another order; the query stays sorted.
                let sorted = |v: &str| {
                    if n == 1 {
                        format!("{dir}?{sort}={v}")
                    } else {
                        let mut q = [format!("{pp}={n}"), format!("{sort}={v}")];
                        q.sort();
                        format!("{dir}?{}", q.join("&"))
                    }
                };
                site.add(&sorted("title"), id, View::Sorted, false);
                site.add(&sorted("date"), id, View::Normal, false);
            }
        }
        // The home page.
        let id = next_id;
        site.pages
            .insert(id, ("Home".into(), vec![sections.join(" ")], Vec::new()));
        site.add("/", id, View::Normal, true);
        site.add(
            &format!("/{}", site.conv.default_doc),
            id,
            View::Normal,
            false,
        );
        // The sign-in form: one page, a URL for each article, linked from it.
        if let Some((path, param)) = site.conv.form {
            let form = id + 1;
            let text = vec![format!(
                "Sign in to {} with your name and password",
                site.host
            )];
            site.pages
                .insert(form, ("Sign in".into(), text, Vec::new()));
            for (n, (article, slug)) in articles_made.iter().enumerate() {
                let url = format!("{path}?{param}={slug}");
                site.add_from(&url, form, View::Normal, n == 0, *article);
            }
        }
        site
    }

    fn add(&mut self, rest: &str, page: u64, view: View, first: bool) {
        self.add_from(rest, page, view, first, page);
    }

    fn add_from(&mut self, rest: &str, page: u64, view: View, first: bool, from: u64) {
        let url = format!("https://{}{rest}", self.host);
        if self.served.contains_key(&url) {
            return;
        }
        self.served.insert(url.clone(), Served { page, view });
        self.urls.push(SiteUrl {
            url,
            page,
            first,
            from,
        });
    }

    /// An article's URLs: its own, and the aliases of the kinds the site has, each met by a
    /// crawl at the site's rate.
    fn article(&mut self, rng: &mut Rng, id: u64, path: &str, slug: &str) {
        let c = self.conv.clone();
        self.add(path, id, View::Normal, true);
        let print = if c.print.starts_with('?') {
            format!("{path}{}", c.print)
        } else if c.print == "/print" {
            format!("/print{path}")
        } else {
            format!("{path}{}", c.print)
        };
        let aliases: [(Vec<String>, View); 7] = [
            (
                if c.wiki {
                    vec![format!("/index.php?title={slug}")]
                } else {
                    vec![]
                },
                View::Normal,
            ),
            (vec![format!("{path}/")], View::Normal),
            (
                (0..1 + rng.below(3))
                    .map(|_| format!("{path}?{}={}", c.session_param, rng.token()))
                    .collect(),
                View::Normal,
            ),
            (
                vec![format!("/{}{}{path}", c.session_path, rng.token())],
                View::Normal,
            ),
            (vec![print], View::Print),
            (vec![format!("{path}?{}=home", c.ref_param)], View::Normal),
            (
                vec![format!("{path}?replytocom={}", 100 + rng.below(900))],
                View::Normal,
            ),
        ];
        for (kind, (urls, view)) in aliases.into_iter().enumerate() {
            if c.aliases & (1 << kind) == 0 {
                continue;
            }
            for u in urls {
                if rng.below(100) < c.alias_rate {
                    self.add(&u, id, view, false);
                }
            }
        }
    }

    /// The site's host.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_rules::testing::Site::generate(1, 5).host().ends_with(".example"));
    /// ```
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Every URL of the site, each page's first URL before its aliases, in the order a
    /// crawler of the site would meet them roughly (page by page).
    ///
    /// # Examples
    ///
    /// See [`Site`].
    pub fn urls(&self) -> &[SiteUrl] {
        &self.urls
    }

    /// Every URL of the site in a fixed order that mixes pages, so aliases come now and then
    /// before their page's first URL (a fixed xorshift shuffle: every run sees one order).
    ///
    /// # Examples
    ///
    /// ```
    /// let site = url_dedup_rules::testing::Site::generate(1, 5);
    /// assert_eq!(site.crawl_order().len(), site.urls().len());
    /// assert_eq!(site.crawl_order(), site.crawl_order());
    /// ```
    pub fn crawl_order(&self) -> Vec<SiteUrl> {
        let mut urls = self.urls.clone();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for i in (1..urls.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            urls.swap(i, (state % (i as u64 + 1)) as usize);
        }
        urls
    }

    /// The number of distinct pages.
    ///
    /// # Examples
    ///
    /// ```
    /// let site = url_dedup_rules::testing::Site::generate(1, 30);
    /// assert!(site.pages() > 30);
    /// ```
    pub fn pages(&self) -> usize {
        self.pages.len()
    }

    /// The HTML served at `url` on its `fetch`-th fetch (the clock, the counter and the
    /// "recent changes" box change with it); `None` for a URL the site does not have.
    ///
    /// # Examples
    ///
    /// See [`Site`].
    pub fn html(&self, url: &str, fetch: u64) -> Option<String> {
        let served = self.served.get(url)?;
        let (title, text, items) = self.pages.get(&served.page)?;
        let mut rng = Rng(fetch.wrapping_mul(31).wrapping_add(served.page));
        let mut h = String::with_capacity(4096);
        let _ = write!(
            h,
            "<!DOCTYPE html><html><head><title>{title}</title><script>var t={fetch};</script></head><body>"
        );
        if served.view != View::Print {
            let _ = write!(
                h,
                "<header><a href=\"/\">{}</a> visitor {}</header><nav><a href=\"/\">Home</a></nav>",
                self.host,
                rng.below(100_000)
            );
        }
        let _ = write!(h, "<main><h1>{title}</h1>");
        for p in text {
            let _ = write!(h, "<p>{p}</p>");
        }
        if !items.is_empty() {
            let mut items = items.clone();
            if served.view == View::Sorted {
                items.sort();
            }
            h.push_str("<ul>");
            for i in &items {
                let _ = write!(h, "<li><a href=\"/{}\">{i}</a></li>", i.replace(' ', "-"));
            }
            h.push_str("</ul>");
        }
        h.push_str("</main>");
        if served.view != View::Print {
            h.push_str("<aside><h2>Recent changes</h2><ul>");
            for _ in 0..5 {
                let _ = write!(h, "<li>{} {}</li>", rng.pick(WORDS), rng.pick(WORDS));
            }
            let _ = write!(
                h,
                "</ul></aside><footer>Viewed {} times. Generated 2024-05-{:02} {:02}:{:02}.</footer>",
                rng.below(10_000),
                1 + rng.below(28),
                rng.below(24),
                rng.below(60)
            );
        }
        h.push_str("</body></html>");
        Some(h)
    }

    /// A WARC/1.1 file of `response` records, one for each of `urls` (fetched once each, in
    /// order), as a crawler would have written it.
    ///
    /// # Examples
    ///
    /// ```
    /// let site = url_dedup_rules::testing::Site::generate(1, 5);
    /// let warc = site.warc(site.urls().iter().map(|u| u.url.as_str()));
    /// assert!(warc.starts_with(b"WARC/1.1\r\n"));
    /// ```
    pub fn warc<'a>(&self, urls: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
        let mut out = Vec::new();
        for (n, url) in urls.into_iter().enumerate() {
            let Some(body) = self.html(url, n as u64) else {
                continue;
            };
            let http = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = write!(
                out_string(&mut out),
                "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{n:012x}>\r\n\
                 WARC-Date: 2024-05-01T00:00:00Z\r\nWARC-Target-URI: {url}\r\n\
                 Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
                http.len()
            );
        }
        out
    }
}

/// A `fmt::Write` over a byte buffer.
fn out_string(out: &mut Vec<u8>) -> impl std::fmt::Write + '_ {
    struct W<'a>(&'a mut Vec<u8>);
    impl std::fmt::Write for W<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.extend_from_slice(s.as_bytes());
            Ok(())
        }
    }
    W(out)
}

/// What deduplicating a site's URLs on a key did, beside deduplicating them as they are.
///
/// # Examples
///
/// See [`evaluate`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// URLs considered.
    pub urls: usize,
    /// Distinct pages among them.
    pub pages: usize,
    /// URLs fetched without the key (all of them, once each) that served a page fetched
    /// before: the duplicate fetches to avoid.
    pub duplicates: usize,
    /// Duplicate fetches the key avoided.
    pub avoided: usize,
    /// URLs skipped by the key.
    pub skipped: usize,
    /// Skipped URLs whose page had been fetched: the right skips.
    pub skipped_right: usize,
    /// Pages never fetched: every one of their URLs was skipped.
    pub pages_missed: usize,
}

/// Sums the counts of two measures (of several sites, say).
///
/// # Examples
///
/// ```
/// use url_dedup_rules::testing::{Site, evaluate_kept};
///
/// let site = Site::generate(3, 20);
/// let mut total = evaluate_kept(site.urls(), |_| true, |_| true);
/// total += evaluate_kept(site.urls(), |_| true, |_| true);
/// assert_eq!(total.urls, 2 * site.urls().len());
/// ```
impl std::ops::AddAssign for Evaluation {
    fn add_assign(&mut self, other: Self) {
        self.urls += other.urls;
        self.pages += other.pages;
        self.duplicates += other.duplicates;
        self.avoided += other.avoided;
        self.skipped += other.skipped;
        self.skipped_right += other.skipped_right;
        self.pages_missed += other.pages_missed;
    }
}

impl Evaluation {
    /// Of the duplicate fetches, the share avoided.
    ///
    /// # Examples
    ///
    /// See [`evaluate`].
    pub fn recall(&self) -> f64 {
        if self.duplicates == 0 {
            1.0
        } else {
            self.avoided as f64 / self.duplicates as f64
        }
    }

    /// Of the URLs skipped, the share that served a page already fetched.
    ///
    /// # Examples
    ///
    /// See [`evaluate`].
    pub fn precision(&self) -> f64 {
        if self.skipped == 0 {
            1.0
        } else {
            self.skipped_right as f64 / self.skipped as f64
        }
    }

    /// Of the pages, the share never fetched.
    ///
    /// # Examples
    ///
    /// See [`evaluate`].
    pub fn pages_missed_share(&self) -> f64 {
        if self.pages == 0 {
            0.0
        } else {
            self.pages_missed as f64 / self.pages as f64
        }
    }
}

/// Deduplicates `urls` in order on `key` (a URL is fetched when its key is new) and measures
/// it against the pages the URLs serve.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::testing::{Site, evaluate};
///
/// let site = Site::generate(3, 20);
/// let none = evaluate(site.urls(), |u| u.to_owned());
/// assert_eq!((none.avoided, none.pages_missed), (0, 0));
/// assert!(none.duplicates > 0);
/// let pages = evaluate(site.urls(), |u| {
///     site.urls().iter().find(|s| s.url == u).map(|s| s.page.to_string()).unwrap()
/// });
/// assert_eq!((pages.recall(), pages.precision(), pages.pages_missed), (1.0, 1.0, 0));
/// ```
pub fn evaluate(urls: &[SiteUrl], mut key: impl FnMut(&str) -> String) -> Evaluation {
    let mut keys = std::collections::HashSet::new();
    let kept: std::collections::HashSet<&str> = urls
        .iter()
        .filter(|u| keys.insert(key(&u.url)))
        .map(|u| u.url.as_str())
        .collect();
    evaluate_kept(urls, |u| kept.contains(u), |_| true)
}

/// Measures what a deduplicator kept of `urls` (fetched in order when `kept` says so) on the
/// URLs `judged` picks, such as those linked from pages a learner never saw. A page counts as
/// seen and as fetched by any URL of the list, judged or not: the sign-in form is linked from
/// pages of both kinds.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::testing::{Site, evaluate_kept};
///
/// let site = Site::generate(3, 20);
/// let all = evaluate_kept(site.urls(), |_| true, |_| true);
/// assert_eq!((all.skipped, all.avoided, all.pages_missed), (0, 0, 0));
/// let odd = evaluate_kept(site.urls(), |_| true, |u| u.from % 2 == 1);
/// assert!(odd.urls < all.urls && odd.duplicates <= all.duplicates);
/// ```
pub fn evaluate_kept(
    urls: &[SiteUrl],
    kept: impl Fn(&str) -> bool,
    judged: impl Fn(&SiteUrl) -> bool,
) -> Evaluation {
    let mut e = Evaluation::default();
    let mut seen = std::collections::HashSet::new();
    let mut fetched = std::collections::HashSet::new();
    let mut pages = std::collections::HashSet::new();
    let mut duplicates_fetched = 0;
    for u in urls {
        let judged = judged(u);
        let first_sight = seen.insert(u.page);
        if judged {
            e.urls += 1;
            pages.insert(u.page);
            e.duplicates += usize::from(!first_sight);
        }
        if kept(&u.url) {
            let again = !fetched.insert(u.page);
            duplicates_fetched += usize::from(judged && again);
        } else if judged {
            e.skipped += 1;
            e.skipped_right += usize::from(fetched.contains(&u.page));
        }
    }
    e.avoided = e.duplicates - duplicates_fetched;
    e.pages = pages.len();
    e.pages_missed = pages.iter().filter(|p| !fetched.contains(*p)).count();
    e
}

/// `kinds` applied in order to a URL's path, query and fragment, one rule after the other,
/// with no index: what [`crate::Rules`] computes, the plain way.
///
/// # Examples
///
/// ```
/// let kind: url_dedup_rules::RuleKind = r#"replace "/print/" "/""#.parse()?;
/// assert_eq!(url_dedup_rules::testing::apply_plain(&[&kind], "/print/a").as_deref(), Some("/a"));
/// # Ok::<(), url_dedup_rules::ParseError>(())
/// ```
pub fn apply_plain(kinds: &[&crate::RuleKind], rest: &str) -> Option<String> {
    crate::apply::apply_plain(kinds, rest)
}
