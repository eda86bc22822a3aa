//! Tests of the learning stage ([`super`]), run in step with its learner.

use super::*;
use crate::learner::Study;
use url_dedup_fingerprint::Fingerprinter;

/// A stage with its learner, run in step: each page is learned from before the next.
struct Stage {
    dust: Dust,
    study: Study,
}

impl Stage {
    fn new() -> Self {
        Self {
            dust: Dust::new(true, None, None),
            study: Study::default(),
        }
    }

    fn observe(&mut self, url: &str, fp: PageFingerprint) -> Vec<String> {
        let marks = self.dust.observe(url, fp);
        for set in self.study.take(self.dust.take_evidence()) {
            self.dust.learned(set);
        }
        marks
    }
}

fn page(words: &str) -> PageFingerprint {
    let body = format!("<html><body><main><p>{words}</p></main></body></html>");
    Fingerprinter::new().fingerprint(body.as_bytes())
}

fn text(n: usize) -> String {
    format!("article number {n} tells of rivers and stones and gardens, page {n}")
}

/// Feeds `n` articles, each under its URL and a `?sid=` alias, in order.
fn feed(dust: &mut Stage, from: usize, to: usize) -> Vec<String> {
    let mut marks = Vec::new();
    for n in from..to {
        let fp = page(&text(n));
        marks.extend(dust.observe(&format!("http://h.example/a/{n}"), fp));
        marks.extend(dust.observe(&format!("http://h.example/a/{n}?sid=x{n}"), fp));
    }
    marks
}

#[test]
fn a_rule_is_learned_checked_then_applied() {
    let mut stage = Stage::new();
    feed(&mut stage, 0, 10);
    assert_eq!(stage.dust.figures.learned, 1, "{}", stage.dust.text());
    assert!(
        stage.dust.applied().is_empty(),
        "a candidate is not applied"
    );
    // Three more pages check it: it is confirmed, and the rewrites of the host's fetched
    // URLs are handed to the done set.
    let marks = feed(&mut stage, 10, 13);
    let dust = &mut stage.dust;
    assert_eq!(dust.figures.checks, 3);
    assert_eq!(dust.figures.confirmed, 1);
    assert!(
        marks.contains(&"http://h.example/a/0".to_owned()),
        "{marks:?}"
    );
    let (key, why) = dust
        .applied()
        .rewrite("http://h.example/a/99?sid=q")
        .unwrap();
    assert_eq!(key, "http://h.example/a/99");
    assert_eq!(why, r#"ignore-param "sid" in "/**""#);
    assert!(dust.take_dirty());
    assert!(dust.text().contains("status confirmed"), "{}", dust.text());
    let hosts = dust.take_changed_hosts();
    assert_eq!(hosts, ["h.example"]);
    let shared = dust.texts_of(hosts);
    assert!(shared[0].1.contains(r#"ignore-param "sid""#), "{shared:?}");
}

#[test]
fn a_form_whose_bare_url_is_never_linked_is_checked_on_its_own_urls() {
    // Each article links the login form with itself as the return address: one page,
    // many URLs, and `/login` alone is never fetched.
    let mut stage = Stage::new();
    let form = page("log in to the wiki with your name and password");
    let mut marks = Vec::new();
    for n in 0..20 {
        marks.extend(stage.observe(&format!("http://h.example/a/{n}"), page(&text(n))));
        marks.extend(stage.observe(&format!("http://h.example/login?returnto=a/{n}"), form));
    }
    let dust = &stage.dust;
    assert_eq!(dust.figures.confirmed, 1, "{}", dust.text());
    assert!(
        dust.text().contains(r#"ignore-param "returnto""#),
        "{}",
        dust.text()
    );
    assert!(
        marks.contains(&"http://h.example/login".to_owned()),
        "{marks:?}"
    );
    let (key, _) = dust
        .applied()
        .rewrite("http://h.example/login?returnto=a/99")
        .unwrap();
    assert_eq!(key, "http://h.example/login");
}

#[test]
fn aliases_queued_before_their_rule_are_skipped_when_dispatched() {
    let mut stage = Stage::new();
    let aliases = stage.dust.aliases();
    let form = page("log in to the wiki with your name and password");
    for n in 0..40 {
        stage.observe(&format!("http://h.example/a/{n}"), page(&text(n)));
    }
    // Queued with the articles, before any rule: the dispatcher knows nothing yet.
    let queued = "http://h.example/login?returnto=a/39";
    assert_eq!(aliases.skip(queued), None);
    let mut n = 0;
    while stage.dust.figures.confirmed == 0 {
        stage.observe(&format!("http://h.example/login?returnto=a/{n}"), form);
        n += 1;
    }
    let why = aliases.skip(queued).expect("the form was fetched");
    assert!(why.starts_with(r#"ignore-param "returnto""#), "{why}");
    // A page never fetched, another host, and the fetched URLs themselves are fetched.
    assert_eq!(aliases.skip("http://h.example/a/99"), None);
    assert_eq!(
        aliases.skip("http://other.example/login?returnto=a/1"),
        None
    );
    assert_eq!(aliases.skip("http://h.example/a/1"), None);
    let kept = aliases.len();
    // Pages fetched later join; a host without confirmed rules keeps nothing.
    stage.observe("http://h.example/a/100", page(&text(100)));
    stage.observe("http://other.example/x", page(&text(101)));
    assert_eq!(aliases.len(), kept + 1);
}

#[test]
fn aliases_met_late_are_learned_while_they_are_met() {
    // 531 articles first (the host is learned at 531); then a form each links, as a crawl
    // meets it a level deeper. Waiting for the host to grow by a quarter would take 132
    // fetches of the form.
    let mut stage = Stage::new();
    for n in 0..531 {
        stage.observe(&format!("http://h.example/a/{n}"), page(&text(n)));
    }
    let form = page("log in to the wiki with your name and password");
    let mut fetched = 0;
    while stage.dust.figures.confirmed == 0 && fetched < 200 {
        stage.observe(
            &format!("http://h.example/login?returnto=a/{fetched}"),
            form,
        );
        fetched += 1;
    }
    assert_eq!(stage.dust.figures.confirmed, 1, "{}", stage.dust.text());
    // 12 fetches saved make the rule, 16 duplicates make the host due, 3 checks confirm.
    assert!(
        fetched <= 24,
        "confirmed after {fetched} fetches of the form"
    );
}

#[test]
fn a_wrong_prediction_removes_the_rule_for_good() {
    let mut stage = Stage::new();
    feed(&mut stage, 0, 10);
    assert_eq!(stage.dust.figures.learned, 1);
    // `?sid=` shows another page here: the candidate goes, and is not learned again.
    stage.observe("http://h.example/a/11", page(&text(11)));
    stage.observe(
        "http://h.example/a/11?sid=y",
        page("something else entirely"),
    );
    assert_eq!(stage.dust.figures.rejected, 1);
    feed(&mut stage, 20, 40);
    assert_eq!(stage.dust.figures.learned, 1);
    assert!(stage.dust.set.is_empty(), "{}", stage.dust.text());
}

#[test]
fn rules_learned_late_are_taken_in_as_they_come() {
    // The learner is behind: the pages are seen, their evidence waits.
    let mut dust = Dust::new(true, None, None);
    for n in 0..10 {
        let fp = page(&text(n));
        dust.observe(&format!("http://h.example/a/{n}"), fp);
        dust.observe(&format!("http://h.example/a/{n}?sid=x{n}"), fp);
    }
    assert_eq!(dust.figures.learned, 0);
    let evidence = dust.take_evidence();
    let asked = evidence
        .iter()
        .filter(|e| matches!(e, Evidence::Learn(_)))
        .count();
    assert_eq!(asked, 1, "20 pages: one learning due");
    // Learned in one round however often it was asked for, then taken in.
    let mut twice = evidence;
    twice.push(Evidence::Learn("h.example".into()));
    let sets = Study::default().take(twice);
    assert_eq!(sets.len(), 1);
    for set in sets {
        dust.learned(set);
    }
    assert_eq!(dust.figures.learned, 1, "{}", dust.text());
    assert!(dust.take_dirty());
}

#[test]
fn given_and_shared_rules_are_trusted() {
    let given = RuleSet::parse(
        "rules-format 1\nhost \"h.example\"\nreplace \"/print/\" \"/\"\n    status candidate\n",
    )
    .unwrap();
    let dust = Dust::new(false, None, Some(&trusted(given)));
    assert!(dust.active());
    let (key, _) = dust.applied().rewrite("http://h.example/print/a").unwrap();
    assert_eq!(key, "http://h.example/a");

    let mut other = Stage::new();
    feed(&mut other, 0, 1);
    let other = &mut other.dust;
    let marks = other.take_shared(&dust.text());
    assert!(marks.is_empty());
    assert_eq!(
        other
            .applied()
            .rewrite("http://h.example/print/b")
            .unwrap()
            .0,
        "http://h.example/b"
    );
    assert!(other.take_changed_hosts().is_empty());
}
