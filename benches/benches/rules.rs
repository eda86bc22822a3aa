//! Applying learned rules, per URL, with 100 rules for each host that has rules:
//!
//! * `rules/apply`: `Rules::apply` on crawl-like URLs (`url_dedup_benches::urls`, 5,000
//!   hosts), each of the first 1,000 hosts with 100 rules (40 parameters, 40 substitutions, 10
//!   default documents, 10 trailing slashes; half the URLs carry a `ref` parameter a rule
//!   drops), beside the same URLs with no rules;
//! * `rules/check_and_insert`: the deduplicator users call, with and without those rules.
//!
//! ```sh
//! cargo bench -p url-dedup-benches --bench rules -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use url_dedup::UrlDedup;
use url_dedup_rules::{RuleSet, Rules};

fn rule_text(hosts: usize) -> String {
    let mut t = String::from("rules-format 1\n");
    for h in 0..hosts {
        t.push_str(&format!(
            "host \"www.site{h}.example.com\"\nignore-param \"ref\" in \"/**\"\n"
        ));
        for i in 1..40 {
            t.push_str(&format!("ignore-param \"p{i}\" in \"/news/*/**\"\n"));
        }
        for i in 0..40 {
            t.push_str(&format!("replace \"/print{i}/\" \"/\"\n"));
        }
        for i in 0..10 {
            t.push_str(&format!("default-document \"index{i}.html\" in \"/**\"\n"));
        }
        for i in 0..10 {
            t.push_str(&format!("trailing-slash remove in \"/section{i}/*\"\n"));
        }
    }
    t
}

fn apply(c: &mut Criterion) {
    const BATCH: usize = 1_000;
    let urls = url_dedup_benches::urls(100_000, 5);
    let set = RuleSet::parse(&rule_text(1_000)).expect("valid rules");
    let with = Rules::new(&set);
    let none = Rules::default();
    let mut group = c.benchmark_group("rules/apply");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, rules) in [
        ("no rules", &none),
        ("100 rules per host, 1,000 hosts", &with),
    ] {
        let mut next = 0usize;
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                for _ in 0..BATCH {
                    black_box(rules.apply(black_box(&urls[next])));
                    next = (next + 1) % urls.len();
                }
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("rules/check_and_insert");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, rules) in [
        ("no rules", None),
        ("100 rules per host, 1,000 hosts", Some(with)),
    ] {
        let mut b = UrlDedup::builder().expected_urls(1_000_000);
        if let Some(r) = rules {
            b = b.rules(r);
        }
        let dedup = b.build().expect("valid sizing");
        let mut next = 0usize;
        group.bench_function(BenchmarkId::from_parameter(name), |bench| {
            bench.iter(|| {
                for _ in 0..BATCH {
                    black_box(dedup.check_and_insert(black_box(&urls[next])).ok());
                    next = (next + 1) % urls.len();
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, apply);
criterion_main!(benches);
