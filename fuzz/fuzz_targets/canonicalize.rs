//! Arbitrary strings into the canonicalizer under the default and the RFC-only policy: it must
//! return an error or a URL, never panic, and its output must be a fixed point. The named
//! conventions reproduce other projects, which are not all idempotent: for them the output
//! must only respect the length limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_canon::{Canonicalizer, Convention, Policy, TrailingSlash};

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let mut folding = Policy::default();
    folding.fold_www = true;
    folding.fold_scheme = true;
    folding.lowercase_path = true;
    folding.trailing_slash = TrailingSlash::Remove;
    for policy in [Policy::default(), Policy::rfc3986(), folding] {
        let canon = Canonicalizer::new(policy);
        if let Ok(once) = canon.canonicalize(input) {
            assert!(once.len() <= canon.policy().max_len);
            let twice = canon
                .canonicalize(&once)
                .expect("canonical output is accepted");
            assert_eq!(twice, once, "not idempotent for {input:?}");
        }
    }
    for convention in [
        Convention::W3lib,
        Convention::SafeBrowsing,
        Convention::Ia,
        Convention::Surt,
    ] {
        let canon = convention.canonicalizer();
        if let Ok(out) = canon.canonicalize(input) {
            assert!(out.len() <= canon.policy().max_len);
        }
    }
});
