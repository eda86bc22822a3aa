//! Properties of learning, applying and writing rules, on random sites and random rules.

use std::collections::HashMap;

use proptest::prelude::*;
use url_dedup_rules::{
    LearnOptions, Learner, Rule, RuleKind, RuleSet, Rules, Status, Support, testing,
};

/// One fetched URL of a random site: its path and query, and its page.
fn site() -> impl Strategy<Value = Vec<(String, u128)>> {
    let page = (0u8..4, 0u32..25);
    let alias = prop::sample::select(vec![
        "",
        "?sort=name",
        "?sort=date",
        "?sid=a1b2c3d4e5",
        "/print",
        "/index.html",
        "/",
        "?page=2",
        "?page=1",
        "?lang=fr",
        "?view=all",
        "/amp",
    ]);
    prop::collection::vec((page, alias, 0u8..10), 1..250).prop_map(|fetches| {
        fetches
            .into_iter()
            .map(|((section, id), alias, noise)| {
                let section = ["a", "list", "wiki", "item"][section as usize];
                let base = format!("/{section}/{id}");
                let mut page = u128::from(section.len() as u32 * 1000 + id);
                let path = match alias {
                    "/print" => format!("/print{base}"),
                    "/index.html" | "/" | "/amp" => format!("{base}{alias}"),
                    q => format!("{base}{q}"),
                };
                // Some aliases are other pages, sometimes: the learner must not fold them.
                if alias == "?page=2" || alias == "?lang=fr" || (alias == "/amp" && noise < 3) {
                    page += 1 << 64 | u128::from(alias.len() as u32) << 32;
                }
                if noise == 9 {
                    // A page that only this URL serves.
                    page = 1 << 100 | u128::from(id) << 8 | u128::from(section.len() as u32);
                }
                (path, page)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Applied to the URLs they were learned from, the rules never put two different pages on
    /// one URL.
    #[test]
    fn rules_never_fold_different_pages(fetches in site(), min_pages in 1u64..4) {
        let mut learner = Learner::new(LearnOptions::default().with_min_pages(min_pages));
        let mut page_of: HashMap<String, u128> = HashMap::new();
        let mut unstable = std::collections::HashSet::new();
        for (rest, page) in &fetches {
            let url = format!("https://site.example{rest}");
            learner.add(&url, *page, None).unwrap();
            if let Some(p) = page_of.insert(url.clone(), *page) && p != *page {
                unstable.insert(url);
            }
        }
        let learned = learner.learn();
        let rules = Rules::new(&learned.rules);
        let mut seen: HashMap<String, (u128, String)> = HashMap::new();
        for (url, page) in &page_of {
            if unstable.contains(url) {
                continue;
            }
            let key = rules.apply(url).into_owned();
            if let Some((other, other_url)) = seen.insert(key.clone(), (*page, url.clone())) {
                prop_assert_eq!(other, *page, "{} and {} both become {}\n{}", url, other_url, key, learned.rules);
            }
        }
        // The text form of what was learned reads back as it was.
        prop_assert_eq!(RuleSet::parse(&learned.rules.to_string()).unwrap(), learned.rules.clone());
    }
}

fn name() -> impl Strategy<Value = String> {
    "[a-z_]{1,8}"
}

fn path_pattern() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "*", "wiki", "x.html", ""]),
        0..4,
    )
    .prop_flat_map(|segs| {
        (Just(segs), any::<bool>()).prop_map(|(segs, rest)| {
            let mut p: String = segs.iter().map(|s| format!("/{s}")).collect();
            if rest || p.is_empty() {
                p.push_str("/**");
            }
            p
        })
    })
}

fn kind() -> impl Strategy<Value = RuleKind> {
    let subst = prop::sample::select(vec![
        "/print/",
        "?title=",
        "index.php?title=",
        "/s-*/",
        "/sid/*/",
        "ab\"c",
        "x\\y/",
        "/amp",
    ]);
    let to = prop::sample::select(vec!["", "/", "index.php/", "/wiki/", "\"q\""]);
    prop_oneof![
        (name(), prop::option::of("[a-z0-9]{0,3}"), path_pattern()).prop_map(|(n, value, p)| {
            RuleKind::IgnoreParam {
                name: n,
                value,
                path: p.parse().unwrap(),
            }
        }),
        (subst, to).prop_map(|(f, t)| RuleKind::Replace {
            from: f.parse().unwrap(),
            to: t.to_owned()
        }),
        (
            prop::sample::select(vec!["index.html", "default.asp", "x.html"]),
            path_pattern()
        )
            .prop_map(|(n, p)| RuleKind::DefaultDocument {
                name: n.to_owned(),
                path: p.parse().unwrap()
            }),
        (any::<bool>(), path_pattern()).prop_map(|(add, p)| RuleKind::TrailingSlash {
            add,
            path: p.parse().unwrap()
        }),
    ]
}

fn rule() -> impl Strategy<Value = Rule> {
    (
        kind(),
        (any::<u32>(), any::<u32>(), 0u8..=100),
        any::<bool>(),
        any::<u16>(),
        prop::collection::vec(("[a-z/?=&\"\\\\]{0,12}", "[a-z/]{0,6}"), 0..3),
    )
        .prop_map(
            |(kind, (pages, saved, confidence), confirmed, checked, predicts)| Rule {
                kind,
                support: Support {
                    pages: pages.into(),
                    saved: saved.into(),
                    confidence,
                },
                status: if confirmed {
                    Status::Confirmed
                } else {
                    Status::Candidate
                },
                checked: checked.into(),
                predicts: predicts
                    .into_iter()
                    .map(|(a, b)| {
                        (
                            format!("https://h.example/{a}"),
                            format!("http://h.example:8080/{b}"),
                        )
                    })
                    .collect(),
            },
        )
}

fn rule_set() -> impl Strategy<Value = RuleSet> {
    prop::collection::vec(
        (
            prop::sample::select(vec!["a.example", "b.example:8080", "xn--bcher-kva.example"]),
            rule(),
        ),
        0..12,
    )
    .prop_map(|rules| {
        let mut set = RuleSet::new();
        // Hosts together, as the text form writes them.
        let mut sorted = rules;
        sorted.sort_by_key(|(h, _)| *h);
        for (h, r) in sorted {
            set.push(h, r);
        }
        set
    })
}

fn url() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["a.example", "b.example:8080", "c.example"]),
        prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "b",
                "print",
                "wiki",
                "index.php",
                "index.html",
                "s-1a2b3c",
                "sid",
                "x.html",
                "",
                "amp",
            ]),
            0..5,
        ),
        prop::collection::vec((name(), "[a-z0-9]{0,4}"), 0..4),
        any::<bool>(),
    )
        .prop_map(|(host, segs, params, title)| {
            let mut u = format!("https://{host}");
            for s in segs {
                u.push('/');
                u.push_str(s);
            }
            if u.ends_with(host) {
                u.push('/');
            }
            let mut q: Vec<String> = params
                .into_iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            if title {
                q.push("title=Main".into());
            }
            q.sort();
            if !q.is_empty() {
                u.push('?');
                u.push_str(&q.join("&"));
            }
            u
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Text written is text read back: the same set, and the same text.
    #[test]
    fn the_text_form_round_trips(set in rule_set()) {
        let text = set.to_string();
        let back = RuleSet::parse(&text).unwrap();
        prop_assert_eq!(&back, &set);
        prop_assert_eq!(back.to_string(), text);
    }

    /// The index finds exactly what trying every rule in order finds.
    #[test]
    fn indexed_apply_is_plain_apply(set in rule_set(), urls in prop::collection::vec(url(), 1..20)) {
        let rules = Rules::new(&set);
        for u in &urls {
            let host = u.split('/').nth(2).unwrap();
            let kinds: Vec<&RuleKind> = set
                .iter()
                .filter(|(_, h, _)| *h == host)
                .map(|(_, _, r)| &r.kind)
                .collect();
            let rest_at = u.find("://").unwrap() + 3 + host.len();
            let expected = match testing::apply_plain(&kinds, &u[rest_at..]) {
                Some(rest) => format!("{}{rest}", &u[..rest_at]),
                None => u.clone(),
            };
            prop_assert_eq!(rules.apply(u).into_owned(), expected, "{}", set);
        }
    }

    /// No text makes the parser fail other than with an error naming a line.
    #[test]
    fn any_text_parses_or_names_a_line(lines in prop::collection::vec(
        prop::sample::select(vec![
            "rules-format 1", "host \"a\"", "replace \"/p/\" \"/\"", "    support pages=1 saved=2 confidence=3%",
            "    status candidate checked=1", "    predicts \"http://a/x\" \"http://a/y\"", "# c", "",
            "ignore-param \"x\" in \"/**\"", "replace \"", "    status", "\u{0}", "host \"B\"", "trailing-slash add in \"/a/*\"",
        ]),
        0..12,
    )) {
        let text = lines.join("\n");
        match RuleSet::parse(&text) {
            Ok(set) => prop_assert_eq!(RuleSet::parse(&set.to_string()).unwrap(), set),
            Err(e) => prop_assert!(e.line >= 1 && e.line <= lines.len().max(1), "{e}"),
        }
    }
}
