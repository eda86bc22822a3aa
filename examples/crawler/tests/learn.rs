//! `--learn` and `--rules` end to end, on generated sites whose aliases are known by
//! construction (`common/dust_site.rs`), served on loopback.

mod common;
#[path = "common/dust_site.rs"]
mod dust_site;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::shared::{finish_summary, spawn};
use common::{
    Gate, Lines, Reply, Site, StatusPage, crawl, crawl_ending, skipped_for, temp_out, wait_until,
};
use dust_site::DustPages;

/// A generated site served on loopback.
struct DustSite {
    site: Site,
    pages: Arc<DustPages>,
}

impl DustSite {
    fn start(seed: u64, articles: usize) -> Self {
        Self::start_holding(seed, articles, None)
    }

    /// The site of `seed`; with `hold`, the page last in the tree answers only once the gate
    /// is open.
    fn start_holding(seed: u64, articles: usize, hold: Option<&Gate>) -> Self {
        let pages = Arc::new(DustPages::generate(seed, articles));
        let fetches = Arc::new(Mutex::new(0u64));
        let (served, hold) = (pages.clone(), hold.cloned());
        let last = pages.last_in_tree();
        let site = Site::start(move |target, _| {
            let Some(page) = served.page_of(target) else {
                return Reply::not_found();
            };
            let n = {
                let mut f = fetches.lock().unwrap();
                *f += 1;
                *f
            };
            let reply = Reply::html(served.html(target, n).unwrap());
            match &hold {
                Some(gate) if page == last => reply.held(gate),
                _ => reply,
            }
        });
        Self { site, pages }
    }

    fn pages(&self) -> usize {
        self.pages.pages()
    }

    /// The page of an absolute URL of this site.
    fn page(&self, url: &str) -> Option<u64> {
        self.pages.page_of(url.strip_prefix(&self.site.origin)?)
    }

    /// What a crawl fetched: requests per page.
    fn fetches_per_page(&self) -> BTreeMap<u64, u32> {
        let mut per = BTreeMap::new();
        for (target, n) in self.site.hits() {
            if let Some(p) = self.pages.page_of(&target) {
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

fn run(out: &Path, site: &DustSite, extra: &[&str]) -> std::process::Output {
    let a = args(extra);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    crawl(out, &site.site.url("/"), &a)
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
    let summary = run(&out, &site, &["--learn", "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&summary.stdout).unwrap();
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
    // The sign-in form is one page with a URL per article, its bare URL never linked: its
    // rule is learned from its URLs and checked on them.
    let form = site.pages.form().expect("site 1 has a sign-in form");
    let form_urls = site.pages.urls_of(form).len() as u32;
    eprintln!("sign-in form: {} of {form_urls} URLs fetched", after[&form]);
    assert!(after[&form] < form_urls, "{} of {form_urls}", after[&form]);
    // The rules are kept in --out, private, and confirmed ones are there.
    let path = out.join("rules.txt");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!confirmed(&text).is_empty(), "{text}");
    // The summary has the figures of the status page's rules tile.
    let rules = confirmed(&text).len() as u64;
    assert_eq!(summary["rules"].as_u64(), Some(rules), "{summary}");
    assert_eq!(summary["saved"].as_u64(), Some(skipped.len() as u64));
    assert_eq!(summary["skips"]["dust-rule"], summary["saved"]);
    // A rule is confirmed by three checks.
    assert!(summary["rule_checks"].as_u64().unwrap() >= 3, "{summary}");
    assert!(summary["rules_rejected"].is_u64(), "{summary}");
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
    let summary = run(&out2, &again, &["--rules", file.to_str().unwrap()]);
    let summary = String::from_utf8(summary.stdout).unwrap();
    let per = again.fetches_per_page();
    assert_eq!(per.len(), again.pages());
    let given = duplicate_fetches(&per);
    assert!(
        given < learning,
        "{given} duplicate fetches with the file, {learning} learning"
    );
    let saved = skipped_for(&out2, "dust-rule").len();
    assert!(saved > 0);
    // The summary names what the rules did: every rule given is applied, unchecked.
    let line = format!(
        "  rules            {} applied: {saved} fetches saved, 0 checks, 0 rejected",
        rules_in(&learned).len()
    );
    assert!(summary.contains(&line), "{line:?} not in\n{summary}");
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
        let file = common::files_starting(dir, "rules-").remove(0);
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

#[test]
fn a_process_of_a_shared_crawl_learns_from_its_earlier_runs() {
    let Some(redis) = url_dedup_redis::testing::RedisServer::start_or_skip("shared resume") else {
        return;
    };
    // Twelve articles, each under two URLs: 25 pages with the seed.
    let site = Site::start(|target, _| {
        if target == "/" {
            let links: String = (0..12)
                .map(|n| format!("<a href=\"/a/{n}\">a</a> <a href=\"/a/{n}?sid=s{n}\">s</a> "))
                .collect();
            return Reply::html(format!("<html><body>{links}</body></html>"));
        }
        let n = target
            .trim_start_matches("/a/")
            .split('?')
            .next()
            .unwrap_or("");
        match n.parse::<u32>() {
            Ok(n) if n < 12 => Reply::html(format!(
                "<html><body><main><p>article {n} tells of rivers and stones, page {n}</p></main></body></html>"
            )),
            _ => Reply::not_found(),
        }
    });
    let (_d, out) = temp_out();
    let seed = site.url("/");
    // The first run stops after 16 pages: fewer than the 20 a host needs to be learned.
    let extra = ["--learn", "--no-mirror", "--workers", "1"];
    let first = [&extra[..], &["--max-pages", "16"]].concat();
    finish_summary(
        spawn(&out, &redis.url(), "resume", &seed, &first),
        Duration::from_secs(120),
    );
    let rules_of = |dir: &Path| -> String {
        common::files_starting(dir, "rules-")
            .into_iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    };
    assert!(
        !rules_of(&out).contains("ignore-param"),
        "{}",
        rules_of(&out)
    );
    // The second run, under a new process name, fetches the other 9: only with the first
    // run's pages has the host 20 pages to learn from.
    finish_summary(
        spawn(&out, &redis.url(), "resume", &seed, &extra),
        Duration::from_secs(120),
    );
    assert_eq!(site.hits().len(), 25, "{:?}", site.hits());
    let rules = rules_of(&out);
    assert!(rules.contains(r#"ignore-param "sid""#), "{rules}");
}

#[test]
fn a_learning_in_progress_holds_no_commit() {
    // A chain of distinct pages: each is found only on the page before it, so each fetch
    // after the first needs the commit of the page before.
    const LAST: usize = 60;
    let site = Site::start(|target, _| {
        let Some(n) = target
            .strip_prefix("/p/")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return Reply::not_found();
        };
        let next = match n < LAST {
            true => format!("<a href=\"/p/{}\">next</a>", n + 1),
            false => String::new(),
        };
        Reply::html(format!(
            "<html><body><main><p>chapter {n} of the tale, where the river turns {n} times \
             </p></main>{next}</body></html>"
        ))
    });
    // The learner asks `holder` before each learning, and waits for its answer.
    let gate = Gate::default();
    let g = gate.clone();
    let holder = Site::start(move |_, _| Reply::html("go").held(&g));
    let (_d, out) = temp_out();
    let mut child = common::crawler(&out)
        .arg(site.url("/p/0"))
        .args(args(&["--learn"]))
        .env("CRAWLER_TEST_HOLD_LEARNING", holder.url("/learning"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The host's first learning (after 20 pages) is under way and held...
    wait_until(Duration::from_secs(120), || holder.hit("/learning") > 0);
    // ...and the crawl goes on: 20 pages later, each committed while it is held.
    wait_until(Duration::from_secs(120), || site.hit("/p/45") > 0);
    assert_eq!(holder.hit("/learning"), 1, "the learner is still held");
    gate.open();
    assert!(common::wait_exit(&mut child, Duration::from_secs(120)).success());
    assert!((0..=LAST).all(|n| site.hit(&format!("/p/{n}")) == 1));
    // Every page is in the page log.
    let log = std::fs::read_to_string(out.join("pages.tsv")).unwrap();
    assert_eq!(log.lines().count(), LAST + 1);
}

#[test]
fn the_status_page_shows_what_the_rules_did() {
    let gate = Gate::default();
    let site = DustSite::start_holding(5, 80, Some(&gate));
    let (_d, out) = temp_out();
    let mut child = common::crawler(&out)
        .arg(site.site.url("/"))
        .args(args(&["--learn", "--json", "--status", "127.0.0.1:0"]))
        .args(["--timeout-ms", "600000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = Lines::new(child.stderr.take().unwrap());
    let mut stdout = child.stdout.take().unwrap();
    let page = StatusPage::announced(&mut stderr);
    // The page last in the tree is held: the crawl waits there, its rules at work. Figures
    // read while a commit goes on may differ; the JSON and the tile then agree on a reread.
    let tile = |s: &serde_json::Value| {
        let n = |k: &str| s[k].as_u64().unwrap();
        format!(
            "data-figure=\"rules\"><span class=label>rules</span><span class=value>{}</span>\
             <span class=note>{} fetches saved, {} checks, {} rejected</span>",
            n("rules"),
            n("saved"),
            n("rule_checks"),
            n("rules_rejected")
        )
    };
    let mut during = serde_json::Value::Null;
    wait_until(Duration::from_secs(300), || {
        during = page.status();
        let working = during["rules"].as_u64() > Some(0) && during["saved"].as_u64() > Some(0);
        working && page.get("/").body.contains(&tile(&during))
    });
    gate.open();
    assert!(common::wait_exit(&mut child, Duration::from_secs(300)).success());
    let mut text = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
    let after: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Each figure only grows, and the summary ends with what the page showed last.
    for k in ["rules", "saved", "rule_checks", "rules_rejected"] {
        assert!(
            after[k].as_u64() >= during[k].as_u64(),
            "{k}: {during} {after}"
        );
    }
    assert!(after["rule_checks"].as_u64() >= Some(3), "{after}");
    assert_eq!(
        after["saved"].as_u64(),
        Some(skipped_for(&out, "dust-rule").len() as u64)
    );
}

#[test]
fn a_shared_crawl_names_near_duplicates_another_process_fetched() {
    let Some(redis) = url_dedup_redis::testing::RedisServer::start_or_skip("near duplicates")
    else {
        return;
    };
    // Two pages one word apart: near duplicates, not identical.
    let words = "the harbour master counted the boats that came in with the tide, and \
                 wrote each name in a ledger kept under the counter of the old customs house";
    let x = format!("<html><body><main><p>{words} at dusk</p></main></body></html>");
    let y = format!("<html><body><main><p>{words} at night</p></main></body></html>");
    let fp = |b: &str| url_dedup_fingerprint::Fingerprinter::new().fingerprint(b.as_bytes());
    let (fx, fy) = (fp(&x), fp(&y));
    assert_ne!(fx.exact, fy.exact);
    assert!((1..=3).contains(&fx.simhash.distance(fy.simhash)));
    let site = Site::start(move |target, _| match target {
        "/" => Reply::html(r#"<a href="/x">x</a> <a href="/y">y</a>"#),
        "/x" => Reply::html(x.clone()),
        "/y" => Reply::html(y.clone()),
        _ => Reply::not_found(),
    });
    let (_d, root) = temp_out();
    let (a, b) = (root.join("a"), root.join("b"));
    let seed = site.url("/");
    // The first process fetches the seed and one of the pair, and leaves; the second fetches
    // the other.
    let learn = ["--learn", "--no-mirror", "--workers", "1"];
    let first = [&learn[..], &["--max-pages", "2"]].concat();
    finish_summary(
        spawn(&a, &redis.url(), "near", &seed, &first),
        Duration::from_secs(120),
    );
    finish_summary(
        spawn(&b, &redis.url(), "near", &seed, &learn),
        Duration::from_secs(120),
    );
    assert_eq!(site.hit("/x") + site.hit("/y"), 2, "{:?}", site.hits());
    let log = |dir: &Path| -> Vec<Vec<String>> {
        let file = common::files_starting(dir, "pages-").remove(0);
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .map(|l| l.split('\t').map(str::to_owned).collect())
            .collect()
    };
    let (la, lb) = (log(&a), log(&b));
    let pair = |l: &[Vec<String>]| -> Vec<Vec<String>> {
        l.iter()
            .filter(|f| f[0] == site.url("/x") || f[0] == site.url("/y"))
            .cloned()
            .collect()
    };
    let (pa, pb) = (pair(&la), pair(&lb));
    assert_eq!((pa.len(), pb.len()), (1, 1), "{la:?}\n{lb:?}");
    // The first of the pair had no near duplicate; the second names the first's page.
    assert_eq!(pa[0].get(4).map(String::as_str).unwrap_or(""), "", "{la:?}");
    assert_eq!(pb[0].get(4), Some(&pa[0][0]), "{lb:?}");
}
