//! A generated site whose aliases are known by construction (`url_dedup_rules::testing`), as
//! served on loopback by the tests of `--learn` and by `examples/dust_site.rs`.
//!
//! Each page links to every URL of two other pages (a tree over the pages, the home page `/`
//! at its root), so a crawl from `/` meets every URL of every page, and an alias left out
//! loses no link: its page's links are on every URL of it. An article also links the site's
//! sign-in form with itself as the return address, as wikis do.
#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, HashMap};

/// The pages of a generated site and the HTML of each URL.
pub struct DustPages {
    site: url_dedup_rules::testing::Site,
    prefix: String,
    /// Path and query of each URL, with its page.
    page_of: BTreeMap<String, u64>,
    /// Pages in the order of the tree, the home page first.
    order: Vec<u64>,
    /// The URLs (path and query) of each page.
    urls: HashMap<u64, Vec<String>>,
    /// The URLs of each page that the tree links: all but the sign-in form's.
    tree: HashMap<u64, Vec<String>>,
    /// The URLs each page links besides the tree: the sign-in form's, with its return address.
    forms: HashMap<u64, Vec<String>>,
    /// Each page's place in `order`.
    position: HashMap<u64, usize>,
}

impl DustPages {
    /// The site of `seed` with `articles` articles.
    pub fn generate(seed: u64, articles: usize) -> Self {
        let site = url_dedup_rules::testing::Site::generate(seed, articles);
        let prefix = format!("https://{}", site.host());
        let rest = |u: &str| u.strip_prefix(&prefix).unwrap_or(u).to_owned();
        let mut order: Vec<u64> = Vec::new();
        if let Some(home) = site.urls().iter().find(|u| rest(&u.url) == "/") {
            order.push(home.page);
        }
        let mut urls: HashMap<u64, Vec<String>> = HashMap::new();
        let mut tree: HashMap<u64, Vec<String>> = HashMap::new();
        let mut forms: HashMap<u64, Vec<String>> = HashMap::new();
        let mut page_of = BTreeMap::new();
        for u in site.urls() {
            if !order.contains(&u.page) {
                order.push(u.page);
            }
            urls.entry(u.page).or_default().push(rest(&u.url));
            if u.from == u.page {
                tree.entry(u.page).or_default().push(rest(&u.url));
            } else {
                forms.entry(u.from).or_default().push(rest(&u.url));
            }
            page_of.insert(rest(&u.url), u.page);
        }
        let position = order.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        Self {
            site,
            prefix,
            page_of,
            order,
            urls,
            tree,
            forms,
            position,
        }
    }

    /// The page of a path and query, if it is a URL of the site.
    pub fn page_of(&self, target: &str) -> Option<u64> {
        self.page_of.get(target).copied()
    }

    /// Every URL (path and query) with its page.
    pub fn targets(&self) -> impl Iterator<Item = (&str, u64)> {
        self.page_of.iter().map(|(t, &p)| (t.as_str(), p))
    }

    /// The pages, the home page first.
    pub fn order(&self) -> &[u64] {
        &self.order
    }

    /// The page the tree links last: a crawl from `/` meets it after the others (the sign-in
    /// form, linked from every article, comes early).
    pub fn last_in_tree(&self) -> u64 {
        let linked = |p: &&u64| self.tree.contains_key(*p);
        *self
            .order
            .iter()
            .rev()
            .find(linked)
            .unwrap_or(&self.order[0])
    }

    /// The sign-in form's page, when the site has one.
    pub fn form(&self) -> Option<u64> {
        let urls = self.forms.values().next()?;
        self.page_of(&urls[0])
    }

    /// How many pages the site has.
    pub fn pages(&self) -> usize {
        self.order.len()
    }

    /// The URLs of `page` (paths and queries).
    pub fn urls_of(&self, page: u64) -> &[String] {
        self.urls.get(&page).map_or(&[], Vec::as_slice)
    }

    /// The HTML served for `target` on the site's `fetch`-th fetch (its counters change), with
    /// links to every URL of the page's two children; `None` for a URL the site has not.
    pub fn html(&self, target: &str, fetch: u64) -> Option<String> {
        let page = self.page_of(target)?;
        let html = self.site.html(&format!("{}{target}", self.prefix), fetch)?;
        // The generated listings link to paths the site does not have.
        let html = html.replace("href=\"/", "data-href=\"/");
        let k = self.position[&page];
        let mut nav = String::from("<nav>");
        let children = [2 * k + 1, 2 * k + 2].map(|c| self.order.get(c));
        for p in children.into_iter().flatten() {
            for u in self.tree.get(p).into_iter().flatten() {
                nav.push_str(&format!(
                    "<a href=\"{}\">more</a> ",
                    u.replace('&', "&amp;")
                ));
            }
        }
        for u in self.forms.get(&page).into_iter().flatten() {
            nav.push_str(&format!(
                "<a href=\"{}\">sign in</a> ",
                u.replace('&', "&amp;")
            ));
        }
        nav.push_str("</nav></body>");
        Some(html.replace("</body>", &nav))
    }
}
