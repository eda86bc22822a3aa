//! SURT keys and the Internet Archive canonicalizers against the test vectors of the `surt`
//! package.
//!
//! Source: repository internetarchive/surt, file `tests/test_surt.py`, commit
//! 6934c321b3e2f66af9c001d882475949f00570c5 (the package's own port of archive-commons'
//! `URLParserTest`, `GoogleURLCanonicalizerTest`, `IAURLCanonicalizerTest`,
//! `DefaultIAURLCanonicalizerTest` and `WaybackURLKeyMakerTest`). Every assertion comparing a
//! URL or key with an expected string is a vector below, named after its test function;
//! repeated assertions are kept once. The helper tests (`test_attemptIPFormats`,
//! `test_unescapeRepeatedly`, `test_alphaReorderQuery`, `test_massageHost`,
//! `test_stripPathSessionID`, `test_stripQuerySessionID`, `test_hostToSURT`) are unit tests of
//! the module, where the helpers are visible; they all pass. Out of scope, and so not here:
//! `test_getPublicSuffix` and `test_getPublicPrefix` (the `public_suffix` option needs the
//! Public Suffix List, which this crate does not ship) and `test_surt_query`, which the
//! package itself marks as an expected failure (this module reproduces the package's actual
//! output for it).

use url_dedup_canon::conventions::surt::{ArchiveCanonicalizer, Surt};
use url_dedup_canon::{Canonicalizer, Policy, surt};

/// What a vector computes.
#[derive(Clone, Copy, Debug)]
enum Call {
    /// `handyurl.parse(url).geturl()`, or a canonicalizer's `getURLString()`.
    Url(ArchiveCanonicalizer),
    /// `surt.surt(url, ...)`.
    Key,
}

use ArchiveCanonicalizer::{DefaultIa, Google, Ia, Identity};
use Call::{Key, Url};

/// Options a vector passes (those it does not pass keep the package's defaults).
#[derive(Clone, Copy)]
struct Options {
    with_scheme: bool,
    trailing_comma: bool,
    host_massage: bool,
    reverse_ipaddr: bool,
    query_lowercase: bool,
    canonicalizer: ArchiveCanonicalizer,
}

const D: Options = Options {
    with_scheme: false,
    trailing_comma: false,
    host_massage: true,
    reverse_ipaddr: true,
    query_lowercase: true,
    canonicalizer: DefaultIa,
};
const SCHEME: Options = Options {
    with_scheme: true,
    ..D
};
const COMMA: Options = Options {
    trailing_comma: true,
    ..D
};
const SCHEME_COMMA: Options = Options {
    with_scheme: true,
    trailing_comma: true,
    ..D
};
const NO_MASSAGE: Options = Options {
    host_massage: false,
    ..D
};
const SCHEME_NO_MASSAGE: Options = Options {
    with_scheme: true,
    host_massage: false,
    ..D
};
const SCHEME_COMMA_NO_MASSAGE: Options = Options {
    with_scheme: true,
    trailing_comma: true,
    host_massage: false,
    ..D
};
const IP_KEPT: Options = Options {
    reverse_ipaddr: false,
    ..D
};
const QUERY_CASE: Options = Options {
    query_lowercase: false,
    ..D
};
const IDENTITY: Options = Options {
    canonicalizer: Identity,
    ..D
};

#[rustfmt::skip]
const VECTORS: &[(&str, Call, Options, &str, &str)] = &[
    ("handyurl_parse/1", Url(Identity), D, "http://www.archive.org/index.html#foo", "http://www.archive.org/index.html#foo"),
    ("handyurl_parse/2", Url(Identity), D, "http://www.archive.org/", "http://www.archive.org/"),
    ("handyurl_parse/3", Url(Identity), D, "http://www.archive.org", "http://www.archive.org"),
    ("handyurl_parse/4", Url(Identity), D, "http://www.archive.org?", "http://www.archive.org?"),
    ("handyurl_parse/5", Url(Identity), D, "http://www.archive.org:8080/index.html?query#foo", "http://www.archive.org:8080/index.html?query#foo"),
    ("handyurl_parse/6", Url(Identity), D, "http://www.archive.org:8080/index.html?#foo", "http://www.archive.org:8080/index.html#foo"),
    ("handyurl_parse/7", Url(Identity), D, "http://www.archive.org:8080?#foo", "http://www.archive.org:8080/#foo"),
    ("handyurl_parse/8", Url(Identity), D, "http://bücher.ch:8080?#foo", "http://bücher.ch:8080/#foo"),
    ("handyurl_parse/9", Url(Identity), D, "dns:bücher.ch", "dns:bücher.ch"),
    ("handyurl_parse/10", Url(Identity), D, "http:////////////////www.vikings.com", "http://www.vikings.com/"),
    ("handyurl_parse/11", Url(Identity), D, "http://https://order.1and1.com", "https://order.1and1.com"),
    ("handyurl_parse/12", Url(Identity), D, "http://mineral.galleries.com:/minerals/silicate/chabazit/chabazit.htm", "http://mineral.galleries.com/minerals/silicate/chabazit/chabazit.htm"),
    ("handyurl_parse/13", Url(Identity), D, "mailto:bot@archive.org", "mailto:bot@archive.org"),
    ("DefaultIAURLCanonicalizer/1", Url(DefaultIa), D, "http://www.alexa.com/", "http://alexa.com/"),
    ("DefaultIAURLCanonicalizer/2", Url(DefaultIa), D, "http://archive.org/index.html", "http://archive.org/index.html"),
    ("DefaultIAURLCanonicalizer/3", Url(DefaultIa), D, "http://archive.org/index.html?", "http://archive.org/index.html"),
    ("DefaultIAURLCanonicalizer/4", Url(DefaultIa), D, "http://archive.org/index.html?a=b", "http://archive.org/index.html?a=b"),
    ("DefaultIAURLCanonicalizer/5", Url(DefaultIa), D, "http://archive.org/index.html?b=b&a=b", "http://archive.org/index.html?a=b&b=b"),
    ("DefaultIAURLCanonicalizer/6", Url(DefaultIa), D, "http://archive.org/index.html?b=a&b=b&a=b", "http://archive.org/index.html?a=b&b=a&b=b"),
    ("DefaultIAURLCanonicalizer/7", Url(DefaultIa), D, "http://www34.archive.org/index.html?b=a&b=b&a=b", "http://archive.org/index.html?a=b&b=a&b=b"),
    ("GoogleURLCanonicalizer/1", Url(Google), D, "http://host/%25%32%35", "http://host/%25"),
    ("GoogleURLCanonicalizer/2", Url(Google), D, "http://host/%25%32%35%25%32%35", "http://host/%25%25"),
    ("GoogleURLCanonicalizer/3", Url(Google), D, "http://host/%2525252525252525", "http://host/%25"),
    ("GoogleURLCanonicalizer/4", Url(Google), D, "http://host/asdf%25%32%35asd", "http://host/asdf%25asd"),
    ("GoogleURLCanonicalizer/5", Url(Google), D, "http://host/%%%25%32%35asd%%", "http://host/%25%25%25asd%25%25"),
    ("GoogleURLCanonicalizer/6", Url(Google), D, "http://www.google.com/", "http://www.google.com/"),
    ("GoogleURLCanonicalizer/7", Url(Google), D, "http://%31%36%38%2e%31%38%38%2e%39%39%2e%32%36/%2E%73%65%63%75%72%65/%77%77%77%2E%65%62%61%79%2E%63%6F%6D/", "http://168.188.99.26/.secure/www.ebay.com/"),
    ("GoogleURLCanonicalizer/8", Url(Google), D, "http://195.127.0.11/uploads/%20%20%20%20/.verify/.eBaysecure=updateuserdataxplimnbqmn-xplmvalidateinfoswqpcmlx=hgplmcx/", "http://195.127.0.11/uploads/%20%20%20%20/.verify/.eBaysecure=updateuserdataxplimnbqmn-xplmvalidateinfoswqpcmlx=hgplmcx/"),
    ("GoogleURLCanonicalizer/9", Url(Google), D, "http://host%23.com/%257Ea%2521b%2540c%2523d%2524e%25f%255E00%252611%252A22%252833%252944_55%252B", "http://host%23.com/~a!b@c%23d$e%25f^00&11*22(33)44_55+"),
    ("GoogleURLCanonicalizer/10", Url(Google), D, "http://3279880203/blah", "http://195.127.0.11/blah"),
    ("GoogleURLCanonicalizer/11", Url(Google), D, "http://www.google.com/blah/..", "http://www.google.com/"),
    ("GoogleURLCanonicalizer/12", Url(Google), D, "www.google.com/", "http://www.google.com/"),
    ("GoogleURLCanonicalizer/13", Url(Google), D, "www.google.com", "http://www.google.com/"),
    ("GoogleURLCanonicalizer/14", Url(Google), D, "http://www.evil.com/blah#frag", "http://www.evil.com/blah"),
    ("GoogleURLCanonicalizer/15", Url(Google), D, "http://www.GOOgle.com/", "http://www.google.com/"),
    ("GoogleURLCanonicalizer/16", Url(Google), D, "http://www.google.com.../", "http://www.google.com/"),
    ("GoogleURLCanonicalizer/17", Url(Google), D, "http://www.google.com/foo\tbar\rbaz\n2", "http://www.google.com/foobarbaz2"),
    ("GoogleURLCanonicalizer/18", Url(Google), D, "http://www.google.com/q?", "http://www.google.com/q?"),
    ("GoogleURLCanonicalizer/19", Url(Google), D, "http://www.google.com/q?r?", "http://www.google.com/q?r?"),
    ("GoogleURLCanonicalizer/20", Url(Google), D, "http://www.google.com/q?r?s", "http://www.google.com/q?r?s"),
    ("GoogleURLCanonicalizer/21", Url(Google), D, "http://evil.com/foo#bar#baz", "http://evil.com/foo"),
    ("GoogleURLCanonicalizer/22", Url(Google), D, "http://evil.com/foo;", "http://evil.com/foo;"),
    ("GoogleURLCanonicalizer/23", Url(Google), D, "http://evil.com/foo?bar;", "http://evil.com/foo?bar;"),
    ("GoogleURLCanonicalizer/24", Url(Google), D, "http://\u{1}\u{80}.com/", "http://%01%C2%80.com/"),
    ("GoogleURLCanonicalizer/25", Url(Google), D, "B\u{fc}cher.ch:8080", "http://xn--bcher-kva.ch:8080/"),
    ("GoogleURLCanonicalizer/26", Url(Google), D, "☃.com", "http://xn--n3h.com/"),
    ("GoogleURLCanonicalizer/27", Url(Google), D, "http://www.t%EF%BF%BD%04.82.net/", "http://www.t%EF%BF%BD%04.82.net/"),
    ("GoogleURLCanonicalizer/28", Url(Google), D, "http://notrailingslash.com", "http://notrailingslash.com/"),
    ("GoogleURLCanonicalizer/29", Url(Google), D, "http://www.gotaport.com:1234/", "http://www.gotaport.com:1234/"),
    ("GoogleURLCanonicalizer/30", Url(Google), D, "  http://www.google.com/  ", "http://www.google.com/"),
    ("GoogleURLCanonicalizer/31", Url(Google), D, "http:// leadingspace.com/", "http://%20leadingspace.com/"),
    ("GoogleURLCanonicalizer/32", Url(Google), D, "http://%20leadingspace.com/", "http://%20leadingspace.com/"),
    ("GoogleURLCanonicalizer/33", Url(Google), D, "%20leadingspace.com/", "http://%20leadingspace.com/"),
    ("GoogleURLCanonicalizer/34", Url(Google), D, "https://www.securesite.com/", "https://www.securesite.com/"),
    ("GoogleURLCanonicalizer/35", Url(Google), D, "http://host.com/ab%23cd", "http://host.com/ab%23cd"),
    ("GoogleURLCanonicalizer/36", Url(Google), D, "http://host.com//twoslashes?more//slashes", "http://host.com/twoslashes?more//slashes"),
    ("GoogleURLCanonicalizer/37", Url(Google), D, "mailto:foo@example.com", "mailto:foo@example.com"),
    ("IAURLCanonicalizer/1", Url(Ia), D, "http://ARCHIVE.ORG/", "http://archive.org/"),
    ("IAURLCanonicalizer/2", Url(Ia), D, "http://www.archive.org:80/", "http://archive.org/"),
    ("IAURLCanonicalizer/3", Url(Ia), D, "https://www.archive.org:80/", "https://archive.org:80/"),
    ("IAURLCanonicalizer/4", Url(Ia), D, "http://www.archive.org:443/", "http://archive.org:443/"),
    ("IAURLCanonicalizer/5", Url(Ia), D, "https://www.archive.org:443/", "https://archive.org/"),
    ("IAURLCanonicalizer/6", Url(Ia), D, "http://www.archive.org/big/", "http://archive.org/big"),
    ("IAURLCanonicalizer/7", Url(Ia), D, "dns:www.archive.org", "dns:www.archive.org"),
    ("surt/1", Key, D, "", "-"),
    ("surt/2", Key, D, "filedesc:foo.arc.gz", "filedesc:foo.arc.gz"),
    ("surt/3", Key, D, "filedesc:/foo.arc.gz", "filedesc:/foo.arc.gz"),
    ("surt/4", Key, D, "filedesc://foo.arc.gz", "filedesc://foo.arc.gz"),
    ("surt/5", Key, D, "warcinfo:foo.warc.gz", "warcinfo:foo.warc.gz"),
    ("surt/6", Key, D, "dns:alexa.com", "dns:alexa.com"),
    ("surt/7", Key, D, "dns:archive.org", "dns:archive.org"),
    ("surt/8", Key, D, "http://www.archive.org/", "org,archive)/"),
    ("surt/9", Key, D, "http://archive.org/", "org,archive)/"),
    ("surt/10", Key, D, "http://archive.org/goo/", "org,archive)/goo"),
    ("surt/11", Key, D, "http://archive.org/goo/?", "org,archive)/goo"),
    ("surt/12", Key, D, "http://archive.org/goo/?b&a", "org,archive)/goo?a&b"),
    ("surt/13", Key, D, "http://archive.org/goo/?a=2&b&a=1", "org,archive)/goo?a=1&a=2&b"),
    ("surt/14", Key, COMMA, "http://archive.org/goo/?a=2&b&a=1", "org,archive,)/goo?a=1&a=2&b"),
    ("surt/15", Key, COMMA, "dns:archive.org", "dns:archive.org"),
    ("surt/16", Key, COMMA, "warcinfo:foo.warc.gz", "warcinfo:foo.warc.gz"),
    ("surt/17", Key, D, "http://archive.org/index.php?PHPSESSID=0123456789abcdefghijklemopqrstuv&action=profile;u=4221", "org,archive)/index.php?action=profile;u=4221"),
    ("surt/18", Key, D, "whois://whois.isoc.org.il/shaveh.co.il", "il,org,isoc,whois)/shaveh.co.il"),
    ("surt/19", Key, D, "http://visit.webhosting.yahoo.com/visit.gif?&r=http%3A//web.archive.org/web/20090517140029/http%3A//anthonystewarthead.electric-chi.com/&b=Netscape%205.0%20%28Windows%3B%20en-US%29&s=1366x768&o=Win32&c=24&j=true&v=1.2", "com,yahoo,webhosting,visit)/visit.gif?&b=netscape%205.0%20(windows;%20en-us)&c=24&j=true&o=win32&r=http://web.archive.org/web/20090517140029/http://anthonystewarthead.electric-chi.com/&s=1366x768&v=1.2"),
    ("surt/20", Key, IDENTITY, "http://www.example.com/", "com,example,www)/"),
    ("surt/21", Key, D, "mailto:foo@example.com", "mailto:foo@example.com"),
    ("surt/22", Key, SCHEME, "http://www.example.com/", "http://(com,example)/"),
    ("surt/23", Key, D, "http://www.example.com/", "com,example)/"),
    ("surt/24", Key, SCHEME_COMMA, "http://www.example.com/", "http://(com,example,)/"),
    ("surt/25", Key, SCHEME_COMMA, "https://www.example.com/", "https://(com,example,)/"),
    ("surt/26", Key, COMMA, "ftp://www.example.com/", "com,example,)/"),
    ("surt/27", Key, D, "ftp://www.example.com/", "com,example)/"),
    ("surt/28", Key, SCHEME_COMMA, "ftp://www.example.com/", "ftp://(com,example,)/"),
    ("surt/29", Key, SCHEME_NO_MASSAGE, "http://www.example.com/", "http://(com,example,www)/"),
    ("surt/30", Key, NO_MASSAGE, "http://www.example.com/", "com,example,www)/"),
    ("surt/31", Key, SCHEME_COMMA_NO_MASSAGE, "http://www.example.com/", "http://(com,example,www,)/"),
    ("surt/32", Key, SCHEME_COMMA_NO_MASSAGE, "https://www.example.com/", "https://(com,example,www,)/"),
    ("surt/33", Key, SCHEME_COMMA_NO_MASSAGE, "ftp://www.example.com/", "ftp://(com,example,www,)/"),
    ("surt/34", Key, SCHEME, "mailto:foo@example.com", "mailto:foo@example.com"),
    ("surt/35", Key, COMMA, "mailto:foo@example.com", "mailto:foo@example.com"),
    ("surt/36", Key, SCHEME_COMMA, "mailto:foo@example.com", "mailto:foo@example.com"),
    ("surt/37", Key, SCHEME, "dns:archive.org", "dns:archive.org"),
    ("surt/38", Key, SCHEME_COMMA, "dns:archive.org", "dns:archive.org"),
    ("surt/39", Key, SCHEME, "whois://whois.isoc.org.il/shaveh.co.il", "whois://(il,org,isoc,whois)/shaveh.co.il"),
    ("surt/40", Key, COMMA, "whois://whois.isoc.org.il/shaveh.co.il", "il,org,isoc,whois,)/shaveh.co.il"),
    ("surt/41", Key, SCHEME_COMMA, "whois://whois.isoc.org.il/shaveh.co.il", "whois://(il,org,isoc,whois,)/shaveh.co.il"),
    ("surt/42", Key, SCHEME, "warcinfo:foo.warc.gz", "warcinfo:foo.warc.gz"),
    ("surt/43", Key, SCHEME_COMMA, "warcinfo:foo.warc.gz", "warcinfo:foo.warc.gz"),
    ("surt_nonascii", Key, D, "http://example.com/app?item=Wroc%C5%82aw", "com,example)/app?item=wroc%c5%82aw"),
    ("surt_ipaddress/1", Key, IP_KEPT, "http://www.example.com/", "com,example)/"),
    ("surt_ipaddress/2", Key, D, "http://192.168.1.254/info/", "254,1,168,192)/info"),
    ("surt_ipaddress/3", Key, IP_KEPT, "http://192.168.1.254/info/", "192.168.1.254)/info"),
    ("options/1", Url(Ia), D, "http://example.com/foo?X=Y", "http://example.com/foo?x=y"),
    ("options/2", Url(Ia), QUERY_CASE, "http://example.com/foo?X=Y", "http://example.com/foo?X=Y"),
    ("options/3", Url(DefaultIa), D, "http://example.com/foo?X=Y", "http://example.com/foo?x=y"),
    ("options/4", Url(DefaultIa), QUERY_CASE, "http://example.com/foo?X=Y", "http://example.com/foo?X=Y"),
];

/// Vectors not reproduced (the same list is in `docs/canonicalization.md`).
const DISAGREEMENTS: &[&str] = &[];

fn run(call: Call, options: Options, input: &str) -> Result<String, url_dedup_canon::CanonError> {
    let surt = Surt {
        canonicalizer: match call {
            Url(canonicalizer) => canonicalizer,
            Key => options.canonicalizer,
        },
        with_scheme: options.with_scheme,
        trailing_comma: options.trailing_comma,
        reverse_ipaddr: options.reverse_ipaddr,
        host_massage: options.host_massage,
        query_lowercase: options.query_lowercase,
    };
    match call {
        Url(_) => surt.canonicalize(input),
        Key => surt.key(input),
    }
}

#[test]
fn agreement_with_the_surt_package() {
    let mut disagreements = Vec::new();
    for &(name, call, options, input, expected) in VECTORS {
        let got = run(call, options, input);
        if got.as_deref() != Ok(expected) {
            eprintln!("{name}: {input:?} gave {got:?}, surt {expected:?}");
            disagreements.push(name);
        }
    }
    let agreement = 1.0 - disagreements.len() as f64 / VECTORS.len() as f64;
    eprintln!(
        "surt: {} of {} vectors ({:.1}%)",
        VECTORS.len() - disagreements.len(),
        VECTORS.len(),
        100.0 * agreement
    );
    assert_eq!(disagreements, DISAGREEMENTS);
    assert!(agreement >= 0.95);
}

#[test]
fn the_policies_give_default_keys_and_urls() {
    let keys = Canonicalizer::new(Policy::surt());
    let urls = Canonicalizer::new(Policy::internet_archive());
    for &(name, call, options, input, expected) in VECTORS {
        let defaults = matches!(options.canonicalizer, DefaultIa)
            && !options.with_scheme
            && !options.trailing_comma
            && options.host_massage
            && options.reverse_ipaddr
            && options.query_lowercase;
        match call {
            Key if defaults && input.starts_with("http") => {
                assert_eq!(keys.canonicalize(input).as_deref(), Ok(expected), "{name}");
                assert_eq!(surt(input).as_deref(), Ok(expected), "{name}");
            }
            Url(DefaultIa) if defaults => {
                assert_eq!(urls.canonicalize(input).as_deref(), Ok(expected), "{name}");
            }
            _ => {}
        }
    }
}

/// Keys the `surt` package 0.3.1 itself computed (`data/surt-package.py`): the record schemes
/// CDX files hold (`dns:`, `filedesc:`, `warcinfo:`, `whois:`, `mailto:`), hand-picked hosts,
/// ports, escapes and session ids, and a sample of real URLs. `!error` marks an input the
/// package raises on.
const PACKAGE_KEYS: &str = include_str!("data/surt-package.tsv");

/// A field of `surt-package.tsv`, with `\\`, `\t`, `\r` and `\n` unescaped.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        out.push(match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('t') => '\t',
                Some('r') => '\r',
                Some('n') => '\n',
                Some(other) => other,
                None => '\\',
            },
            (c, false) => c,
        });
    }
    out
}

#[test]
fn keys_match_the_package_on_data_vectors() {
    let keys = Canonicalizer::new(Policy::surt());
    let mut count = 0;
    for line in PACKAGE_KEYS.lines().filter(|l| !l.starts_with('#')) {
        let (input, expected) = line.split_once('\t').expect("input TAB key");
        let (input, expected) = (unescape(input), unescape(expected));
        let got = surt(&input);
        if expected == "!error" {
            assert!(
                got.is_err(),
                "{input:?}: the package fails, the crate gave {got:?}"
            );
        } else {
            assert_eq!(got.as_deref(), Ok(expected.as_str()), "{input:?}");
            // The `surt` convention's canonical form is the key, whatever the scheme.
            assert_eq!(
                keys.canonicalize(&input).as_deref(),
                Ok(expected.as_str()),
                "{input:?}"
            );
        }
        count += 1;
    }
    assert!(count > 500, "{count} vectors");
}
