//! Published canonicalization examples, and what this crate does with each.
//!
//! Sources:
//!
//! * RFC 3986, "Uniform Resource Identifier (URI): Generic Syntax", section 6
//!   ("Normalization and Comparison"), <https://www.rfc-editor.org/rfc/rfc3986#section-6>,
//!   and the dot-segment examples of section 5.2.4 that section 6.2.2.3 refers to.
//! * Google Safe Browsing, "URLs and Hashing", section "Canonicalization",
//!   <https://developers.google.com/safe-browsing/v4/urls-hashing#canonicalization>: the list of
//!   `Canonicalize(input) = output` examples published there.
//!
//! Safe Browsing canonicalizes to match URLs against blocklists, where merging too much is
//! harmless; a crawler fetches the canonical URL, so it must never change the resource. Each
//! Safe Browsing example below records whether the default policy produces Google's output
//! and, when it does not, why.

use url_dedup_canon::{CanonError, Canonicalizer, Policy};

fn canon(input: &str) -> Result<String, CanonError> {
    Canonicalizer::default()
        .canonicalize(input)
        .map(|c| c.into_owned())
}

fn rfc(input: &str) -> String {
    Canonicalizer::new(Policy::rfc3986())
        .canonicalize(input)
        .unwrap_or_else(|e| panic!("{input}: {e}"))
        .into_owned()
}

// ---------------------------------------------------------------------------------------
// RFC 3986 section 6
// ---------------------------------------------------------------------------------------

#[test]
fn rfc3986_6_2_2_1_case_normalization() {
    // Scheme and host are case-insensitive; hex digits of percent-encodings are upper case.
    assert_eq!(rfc("HTTP://www.EXAMPLE.com/"), "http://www.example.com/");
    assert_eq!(
        rfc("http://example.com/a%3ab%2fc"),
        "http://example.com/a%3Ab%2Fc"
    );
    // The path is case-sensitive and left alone.
    assert_eq!(rfc("http://example.com/Path"), "http://example.com/Path");
}

#[test]
fn rfc3986_6_2_2_2_percent_encoding_normalization() {
    // Unreserved characters are decoded...
    assert_eq!(
        rfc("http://example.com/%7Esmith/%41%2D%5F%2E%30"),
        "http://example.com/~smith/A-_.0"
    );
    // ...reserved ones never are: %2F is not a path separator, %3F not a query.
    assert_eq!(
        rfc("http://example.com/a%2Fb%3Fc%23d%26e"),
        "http://example.com/a%2Fb%3Fc%23d%26e"
    );
}

#[test]
fn rfc3986_6_2_2_syntax_based_example() {
    // Section 6.2.2: `eXAMPLE://a/./b/../b/%63/%7bfoo%7d` is equivalent to
    // `example://a/b/c/%7Bfoo%7D` (here with the http scheme).
    assert_eq!(
        rfc("hTTP://a/./b/../b/%63/%7bfoo%7d"),
        "http://a/b/c/%7Bfoo%7D"
    );
}

#[test]
fn rfc3986_6_2_2_3_and_5_2_4_dot_segments() {
    assert_eq!(rfc("http://a/a/b/c/./../../g"), "http://a/a/g");
    assert_eq!(rfc("http://a/b/c/../../../g"), "http://a/g");
    assert_eq!(rfc("http://a/b/c/."), "http://a/b/c/");
    assert_eq!(rfc("http://a/b/./g/.."), "http://a/b/");
}

#[test]
fn rfc3986_6_2_3_scheme_based_normalization() {
    // All four are equivalent for http (empty path is "/", default port removed).
    for input in [
        "http://example.com",
        "http://example.com/",
        "http://example.com:/",
        "http://example.com:80/",
    ] {
        assert_eq!(rfc(input), "http://example.com/", "{input}");
    }
    assert_eq!(rfc("https://example.com:443/x"), "https://example.com/x");
    assert_eq!(rfc("http://example.com:443/x"), "http://example.com:443/x");
    // `/data` and `/data/` may be different resources: the default policy keeps both.
    assert_ne!(
        rfc("http://example.com/data"),
        rfc("http://example.com/data/")
    );
}

#[test]
fn rfc3986_fragment_is_not_part_of_the_resource() {
    assert_eq!(
        rfc("http://example.com/a#section-2"),
        "http://example.com/a"
    );
}

// ---------------------------------------------------------------------------------------
// Google Safe Browsing "Canonicalization" examples
// ---------------------------------------------------------------------------------------

/// How the default policy relates to one published example.
enum Ours {
    /// Our output equals Google's.
    Same,
    /// Our output differs; the string is ours, the reason in the comment beside it.
    Differs(&'static str),
    /// We reject the input with an error.
    Rejected,
}

use Ours::{Differs, Rejected, Same};

#[rustfmt::skip]
const SAFE_BROWSING: &[(&str, &str, Ours)] = &[
    // Safe Browsing unescapes repeatedly. A server decodes once: `%2525` names a file called
    // `%25`, not `%`. Decoding anything but unreserved characters would change the resource.
    ("http://host/%25%32%35", "http://host/%25", Differs("http://host/%2525")),
    ("http://host/%25%32%35%25%32%35", "http://host/%25%25", Differs("http://host/%2525%2525")),
    ("http://host/%2525252525252525", "http://host/%25", Differs("http://host/%2525252525252525")),
    ("http://host/asdf%25%32%35asd", "http://host/asdf%25asd", Differs("http://host/asdf%2525asd")),
    // A `%` not followed by two hex digits is left as it is, as the WHATWG parser (and so
    // every browser) leaves it.
    ("http://host/%%%25%32%35asd%%", "http://host/%25%25%25asd%25%25", Differs("http://host/%%%2525asd%%")),
    ("http://www.google.com/", "http://www.google.com/", Same),
    // Percent-encoded host decoded to an IPv4 address; encoded unreserved path characters
    // decoded.
    ("http://%31%36%38%2e%31%38%38%2e%39%39%2e%32%36/%2E%73%65%63%75%72%65/%77%77%77%2E%65%62%61%79%2E%63%6F%6D/",
     "http://168.188.99.26/.secure/www.ebay.com/", Same),
    ("http://195.127.0.11/uploads/%20%20%20%20/.verify/.eBaysecure=updateuserdataxplimnbqmn-xplmvalidateinfoswqpcmlx=hgplmcx/",
     "http://195.127.0.11/uploads/%20%20%20%20/.verify/.eBaysecure=updateuserdataxplimnbqmn-xplmvalidateinfoswqpcmlx=hgplmcx/", Same),
    // `host%23.com` decodes to `host#.com`, which no DNS name can be: WHATWG rejects it.
    ("http://host%23.com/%257Ea%2521b%2540c%2523d%2524e%25f%255E%2526g%252Ah%2528i%2529j%255Fk%252Bl%253Dm%257Bn%257Do%257Cp%255Bq%255Dr%253Cs%253Et%253Fu%252Fv%253A%253Bw%2560x%252Cy%252Ez%257E",
     "http://host%23.com/~a!b@c%23d$e%25f^&g*h(i)j_k+l=m{n}o|p[q]r<s>t?u/v:;w`x,y.z~", Rejected),
    // A 32-bit number is an IPv4 address (WHATWG, like browsers).
    ("http://3279880203/blah", "http://195.127.0.11/blah", Same),
    ("http://www.google.com/blah/..", "http://www.google.com/", Same),
    // No scheme: a relative reference. A crawler resolves links against their page; guessing
    // `http://` would turn the relative link `www.google.com/` into another host.
    ("www.google.com/", "http://www.google.com/", Rejected),
    ("www.google.com", "http://www.google.com/", Rejected),
    ("http://www.evil.com/blah#frag", "http://www.evil.com/blah", Same),
    ("http://www.GOOgle.com/", "http://www.google.com/", Same),
    // Trailing dots make a different (fully qualified) name as far as HTTP `Host` goes; WHATWG
    // keeps them.
    ("http://www.google.com.../", "http://www.google.com/", Differs("http://www.google.com.../")),
    // Tabs and line breaks inside a URL are removed (WHATWG).
    ("http://www.google.com/foo\tbar\rbaz\n2", "http://www.google.com/foobarbaz2", Same),
    // The default policy drops an empty query; `Policy::rfc3986()` keeps it, as Google does.
    ("http://www.google.com/q?", "http://www.google.com/q?", Differs("http://www.google.com/q")),
    ("http://www.google.com/q?r?", "http://www.google.com/q?r?", Same),
    ("http://www.google.com/q?r?s", "http://www.google.com/q?r?s", Same),
    ("http://evil.com/foo#bar#baz", "http://evil.com/foo", Same),
    ("http://evil.com/foo;", "http://evil.com/foo;", Same),
    ("http://evil.com/foo?bar;", "http://evil.com/foo?bar;", Same),
    // Control characters cannot be in a host name: rejected rather than escaped.
    ("http://\x01\u{80}.com/", "http://%01%80.com/", Rejected),
    ("http://notrailingslash.com", "http://notrailingslash.com/", Same),
    // Google drops every port; a non-default port is a different server, so we keep it.
    ("http://www.gotaport.com:1234/", "http://www.gotaport.com/", Differs("http://www.gotaport.com:1234/")),
    ("  http://www.google.com/  ", "http://www.google.com/", Same),
    // Spaces cannot be in a host name: rejected.
    ("http:// leadingspace.com/", "http://%20leadingspace.com/", Rejected),
    ("http://%20leadingspace.com/", "http://%20leadingspace.com/", Rejected),
    ("%20leadingspace.com/", "http://%20leadingspace.com/", Rejected),
    ("https://www.securesite.com/", "https://www.securesite.com/", Same),
    ("http://host.com/ab%23cd", "http://host.com/ab%23cd", Same),
    // Empty path segments are significant to many servers (and to relative resolution);
    // they are kept.
    ("http://host.com//twoslashes?more//slashes", "http://host.com/twoslashes?more//slashes",
     Differs("http://host.com//twoslashes?more//slashes")),
];

#[test]
fn safe_browsing_examples() {
    let mut same = 0;
    for (input, google, ours) in SAFE_BROWSING {
        let got = canon(input);
        match ours {
            Same => {
                assert_eq!(got.as_deref(), Ok(*google), "{input:?}");
                same += 1;
            }
            Differs(expected) => {
                assert_eq!(got.as_deref(), Ok(*expected), "{input:?}");
                assert_ne!(expected, google);
            }
            Rejected => assert!(got.is_err(), "{input:?} gave {got:?}"),
        }
    }
    // Keeps the table honest about how much of Google's list we follow.
    assert_eq!(same, 17);
    assert_eq!(SAFE_BROWSING.len(), 33);
}

#[test]
fn safe_browsing_empty_query_under_rfc_policy() {
    assert_eq!(rfc("http://www.google.com/q?"), "http://www.google.com/q?");
}

#[test]
fn rejections_name_their_reason() {
    assert_eq!(canon("www.google.com"), Err(CanonError::NotAbsolute));
    assert!(matches!(
        canon("http://host%23.com/"),
        Err(CanonError::Unparsable(_))
    ));
    assert!(matches!(
        canon("mailto:someone@example.com"),
        Err(CanonError::UnsupportedScheme { scheme }) if scheme == "mailto"
    ));
}
