//! `--learn` and `--rules` end to end, on generated sites whose aliases are known by
//! construction (`url_dedup_rules::testing::Site`), served on loopback.
//!
//! Each page of the served site links to every URL of two other pages (a tree over the pages,
//! the home page at its root), so a crawl from `/` meets every URL of every page, and an alias
//! left out loses no link: its page's links are on every URL of it.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::shared::{finish_summary, spawn};
use common::{Reply, Site, crawl, crawl_ending, skipped_for, temp_out};

/// A generated site served on loopback.
struct DustSite {
    site: Site,
    /// Path and query of each URL, with its page.
    page_of: BTreeMap<String, u64>,
}

impl DustSite {
    fn start(seed: u64, articles: usize) -> Self {
        let generated = url_dedup_rules::testing::Site::generate(seed, articles);
        let prefix = format!("https://{}", generated.host());
        let rest = |u: &str| u.strip_prefix(&prefix).unwrap().to_owned();
        // Pages in order, the home page first; each with its URLs.
        let mut order: Vec<u64> = Vec::new();
        let mut urls: HashMap<u64, Vec<String>> = HashMap::new();
        let home = generated
            .urls()
            .iter()
            .find(|u| rest(&u.url) == "/")
            .unwrap()
            .page;
        order.push(home);
        for u in generated.urls() {
            if !order.contains(&u.page) {
                order.push(u.page);
            }
            urls.entry(u.page).or_default().push(rest(&u.url));
        }
        let position: HashMap<u64, usize> =
            order.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        let page_of: BTreeMap<String, u64> = generated
            .urls()
            .iter()
            .map(|u| (rest(&u.url), u.page))
            .collect();
        let fetches = Arc::new(Mutex::new(0u64));
        let (lookup, generated) = (page_of.clone(), Arc::new(generated));
        let site = Site::start(move |target, _| {
            let Some(page) = lookup.get(target) else {
                return Reply::not_found();
            };
            let n = {
                let mut f = fetches.lock().unwrap();
                *f += 1;
                *f
            };
            let html = generated.html(&format!("{prefix}{target}"), n).unwrap();
            // The generated listings link to paths the site does not have.
            let html = html.replace("href=\"/", "data-href=\"/");
            let k = position[page];
            let mut nav = String::from("<nav>");
            for child in [2 * k + 1, 2 * k + 2] {
                if let Some(p) = order.get(child) {
                    for u in &urls[p] {
                        nav.push_str(&format!(
                            "<a href=\"{}\">more</a> ",
                            u.replace('&', "&amp;")
                        ));
                    }
                }
            }
            nav.push_str("</nav></body>");
            Reply::html(html.replace("</body>", &nav))
        });
        Self { site, page_of }
    }

    fn pages(&self) -> usize {
        self.page_of.values().collect::<BTreeSet<_>>().len()
    }

    /// The page of an absolute URL of this site.
    fn page(&self, url: &str) -> Option<u64> {
        let rest = url.strip_prefix(&self.site.origin)?;
        self.page_of.get(rest).copied()
    }

    /// What a crawl fetched: requests per page.
    fn fetches_per_page(&self) -> BTreeMap<u64, u32> {
        let mut per = BTreeMap::new();
        for (target, n) in self.site.hits() {
            if let Some(&p) = self.page_of.get(&target) {
                *per.entry(p).or_default() += n;
            }
        }
        per
    }
}

/// Fetches beyond the first of each page.
fn duplicate_fetches(per: &BTreeMap<u64, u32>) -> u32 {
    per.values().map(|n| n - 1).sum()
}

const ARGS: [&str; 4] = ["--ignore-robots", "--no-mirror", "--workers", "1"];

fn args(extra: &[&str]) -> Vec<String> {
    ARGS.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn run(out: &Path, site: &DustSite, extra: &[&str]) {
    let a = args(extra);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    crawl(out, &site.site.url("/"), &a);
}

/// The rule lines (no details) of a rules file with their status.
fn rules_in(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.starts_with(|c: char| c.is_ascii_lowercase())
            && !line.starts_with("host ")
            && !line.starts_with("rules-format")
        {
            out.push((line.to_owned(), "confirmed".into()));
        } else if let Some(s) = line.trim().strip_prefix("status ")
            && let Some(last) = out.last_mut()
        {
            last.1 = s.split(' ').next().unwrap().to_owned();
        }
    }
    out
}

fn confirmed(text: &str) -> BTreeSet<String> {
    rules_in(text)
        .into_iter()
        .filter(|(_, s)| s == "confirmed")
        .map(|(r, _)| r)
        .collect()
}

#[test]
fn learning_avoids_most_duplicate_fetches_and_skips_no_page() {
    let plain = DustSite::start(1, 80);
    let (_d0, out0) = temp_out();
    run(&out0, &plain, &[]);
    let before = plain.fetches_per_page();
    // Every page is reached, and every URL of the site fetched once.
    assert_eq!(before.len(), plain.pages());
    let urls = plain.site.hits().len();
    assert!(plain.site.hits().values().all(|&n| n == 1));
    let dup0 = duplicate_fetches(&before);
    assert!(dup0 > 0 && urls > plain.pages());

    let site = DustSite::start(1, 80);
    let (_d1, out) = temp_out();
    run(&out, &site, &["--learn"]);
    let after = site.fetches_per_page();
    // No page is missed...
    assert_eq!(after.len(), site.pages(), "pages missed with --learn");
    // ...no URL skipped by a rule is of a page that was not fetched...
    let skipped = skipped_for(&out, "dust-rule");
    assert!(!skipped.is_empty());
    for url in &skipped {
        let page = site
            .page(url)
            .unwrap_or_else(|| panic!("{url} is no URL of the site"));
        assert!(
            after.contains_key(&page),
            "{url} skipped, its page never fetched"
        );
    }
    // ...and most duplicate fetches are avoided.
    let dup1 = duplicate_fetches(&after);
    eprintln!(
        "{} pages, {dup0} duplicate fetches without --learn, {dup1} with, {} skipped",
        site.pages(),
        skipped.len()
    );
    assert!(
        dup1 * 2 < dup0,
        "--learn fetched {dup1} duplicates, {dup0} without"
    );
    // The rules are kept in --out, private, and confirmed ones are there.
    let path = out.join("rules.txt");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!confirmed(&text).is_empty(), "{text}");
    // The page log names near duplicates: fetches of an alias before its rule was confirmed.
    let log = std::fs::read_to_string(out.join("pages.tsv")).unwrap();
    let near = log
        .lines()
        .filter(|l| !l.split('\t').nth(4).unwrap_or("").is_empty())
        .count();
    assert!(
        near as u32 >= dup1,
        "{near} near duplicates named, {dup1} duplicate fetches"
    );
}

#[test]
fn a_rules_file_applies_without_learning() {
    let site = DustSite::start(2, 60);
    let (_d, out) = temp_out();
    run(&out, &site, &["--learn"]);
    let learned = std::fs::read_to_string(out.join("rules.txt")).unwrap();
    let learning = duplicate_fetches(&site.fetches_per_page());
    assert!(!confirmed(&learned).is_empty(), "{learned}");

    // The file a crawl saved, given to a new crawl of the same site (on another port: the
    // host in the file is changed to it, as a person would).
    let again = DustSite::start(2, 60);
    let host = |s: &Site| s.origin.trim_start_matches("http://").to_owned();
    let text = learned.replace(&host(&site.site), &host(&again.site));
    let (_r, rules_dir) = temp_out();
    std::fs::create_dir_all(&rules_dir).unwrap();
    let file = rules_dir.join("site.rules");
    std::fs::write(&file, text).unwrap();
    let (_d2, out2) = temp_out();
    run(&out2, &again, &["--rules", file.to_str().unwrap()]);
    let per = again.fetches_per_page();
    assert_eq!(per.len(), again.pages());
    let given = duplicate_fetches(&per);
    assert!(
        given < learning,
        "{given} duplicate fetches with the file, {learning} learning"
    );
    assert!(!skipped_for(&out2, "dust-rule").is_empty());
    assert!(
        !out2.join("rules.txt").exists(),
        "nothing learned, nothing saved"
    );

    // A file that does not parse is refused with its line.
    std::fs::write(&file, "rules-format 1\nhost \"h\"\nreplace \"/a\"\n").unwrap();
    let (_d3, out3) = temp_out();
    let o = crawl_ending(
        &out3,
        &again.site.url("/"),
        &["--rules", file.to_str().unwrap()],
        2,
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("line 3"),
        "{o:?}"
    );
}

#[test]
fn a_resumed_crawl_keeps_its_rules() {
    let site = DustSite::start(3, 80);
    let (_d, out) = temp_out();
    run(&out, &site, &["--learn", "--max-pages", "100"]);
    let first = std::fs::read_to_string(out.join("rules.txt")).unwrap();
    let kept = confirmed(&first);
    assert!(
        !kept.is_empty(),
        "no rule confirmed in 100 fetches: {first}"
    );
    let skipped_first = skipped_for(&out, "dust-rule").len();
    eprintln!(
        "first run: {} fetches, {} pages, {skipped_first} skipped by rules",
        site.site.hits().values().sum::<u32>(),
        site.fetches_per_page().len()
    );

    // A rule a person added to the file meanwhile: only reading the file back keeps it.
    let added = r#"replace "/no-such-dir/" "/""#;
    let edited: String = first
        .lines()
        .flat_map(|l| match l.starts_with("host ") {
            true => vec![l.to_owned(), added.to_owned()],
            false => vec![l.to_owned()],
        })
        .map(|l| l + "\n")
        .collect();
    std::fs::write(out.join("rules.txt"), &edited).unwrap();
    assert!(confirmed(&edited).contains(added), "{edited}");
    run(&out, &site, &["--learn"]);
    let second = std::fs::read_to_string(out.join("rules.txt")).unwrap();
    assert!(
        kept.is_subset(&confirmed(&second)),
        "{first}\n---\n{second}"
    );
    assert!(confirmed(&second).contains(added), "{second}");
    // The second run skipped by the rules it read back.
    assert!(skipped_for(&out, "dust-rule").len() > skipped_first);
    assert_eq!(site.fetches_per_page().len(), site.pages());
}

#[test]
fn an_identical_payload_is_a_revisit_record() {
    let body = "<html><body><main><p>one page under two names</p></main>\
                <a href=\"/a\">a</a><a href=\"/b\">b</a><a href=\"/c\">c</a></body></html>";
    let site = Site::start(move |path, _| match path {
        "/" | "/a" | "/b" => Reply::html(body),
        "/c" => Reply::html("<html><body><p>another page</p></body></html>"),
        _ => Reply::not_found(),
    });
    let (_d, out) = temp_out();
    crawl(
        &out,
        &site.url("/"),
        &["--ignore-robots", "--no-mirror", "--learn"],
    );
    let warc = std::fs::read_to_string(out.join("crawl.warc")).unwrap();
    let revisits: Vec<&str> = warc
        .split("WARC/1.1\r\n")
        .filter(|r| r.contains("WARC-Type: revisit"))
        .collect();
    assert_eq!(revisits.len(), 2, "{warc}");
    for r in &revisits {
        assert!(r.contains(
            "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
        ));
        assert!(
            r.contains(&format!("WARC-Refers-To-Target-URI: {}", site.url("/"))),
            "{r}"
        );
        assert!(
            !r.contains("one page under two names"),
            "a revisit keeps no payload"
        );
    }
    assert_eq!(warc.matches("WARC-Type: response").count(), 2);
    // The page log names the page each one duplicates.
    let log = std::fs::read_to_string(out.join("pages.tsv")).unwrap();
    let near: Vec<&str> = log.lines().filter_map(|l| l.split('\t').nth(4)).collect();
    assert_eq!(
        near.iter().filter(|n| **n == site.url("/")).count(),
        2,
        "{log}"
    );
}

#[test]
fn a_shared_crawl_shares_its_rules() {
    let Some(redis) = url_dedup_redis::testing::RedisServer::start_or_skip("shared rules") else {
        return;
    };
    let site = DustSite::start(4, 80);
    let (_d, root) = temp_out();
    let (a, b) = (root.join("a"), root.join("b"));
    let seed = site.site.url("/");
    let extra = ["--learn", "--no-mirror", "--workers", "1"];
    let pa = spawn(&a, &redis.url(), "dust", &seed, &extra);
    let pb = spawn(&b, &redis.url(), "dust", &seed, &extra);
    finish_summary(pa, Duration::from_secs(300));
    finish_summary(pb, Duration::from_secs(300));
    assert_eq!(site.fetches_per_page().len(), site.pages());
    let rules = |dir: &Path| {
        let file = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("rules-")
            })
            .unwrap();
        confirmed(&std::fs::read_to_string(file).unwrap())
    };
    let (ra, rb) = (rules(&a), rules(&b));
    assert!(!ra.is_empty());
    // Every rule either process confirmed, both apply: each read the other's at the end.
    assert_eq!(ra, rb);
    // A process that joins the finished crawl fetches nothing and learns nothing, yet has
    // every rule: they came through Redis.
    let c = root.join("c");
    let summary = finish_summary(
        spawn(&c, &redis.url(), "dust", &seed, &extra),
        Duration::from_secs(300),
    );
    assert_eq!(summary["fetched"].as_u64(), Some(0), "{summary}");
    assert_eq!(rules(&c), ra);
}
