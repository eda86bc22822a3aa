//! The default policy removes session ids, and never a parameter that can name a page.
//!
//! Names used only for sessions (`jsessionid`, `PHPSESSID`, ...) are always removed. Short
//! names that sites also use for content (`sid` is the story id of Slash and PHP-Nuke sites,
//! `s` a search word) are removed only when the value has the shape of a session token.

use url_dedup_canon::{Canonicalizer, looks_like_session_token};

fn canon(input: &str) -> String {
    Canonicalizer::default()
        .canonicalize(input)
        .unwrap_or_else(|e| panic!("{input}: {e}"))
        .into_owned()
}

#[test]
fn slashdot_story_ids_stay_distinct() {
    // Two different Slashdot stories: `sid` is the story id, written as a date and a number.
    let a = "https://yro.slashdot.org/article.pl?sid=01/05/17/222314";
    let b = "https://yro.slashdot.org/article.pl?sid=02/06/28/1257205";
    assert_eq!(canon(a), a);
    assert_eq!(canon(b), b);
    assert_ne!(canon(a), canon(b));
    // The same with the mode parameter Slash adds, sorted after `sid`.
    assert_eq!(
        canon("http://slashdot.org/article.pl?sid=99/03/31/0137221&mode=thread"),
        "http://slashdot.org/article.pl?mode=thread&sid=99/03/31/0137221",
    );
}

#[test]
fn php_nuke_numeric_story_ids_stay() {
    for url in [
        "http://www.example.org/modules.php?name=News&file=article&sid=123",
        "http://www.example.org/article.php?sid=4567",
    ] {
        assert!(canon(url).contains("sid="), "{url} lost its story id");
    }
    assert_ne!(
        canon("http://nuke.example/modules.php?name=News&file=article&sid=1"),
        canon("http://nuke.example/modules.php?name=News&file=article&sid=2"),
    );
}

#[test]
fn a_php_session_id_in_sid_is_removed() {
    // PHP's default session name is PHPSESSID, but many sites set `session.name = sid`; the
    // value is then 32 hex digits (or 26 characters of 0-9a-v with PHP 7.1's defaults).
    assert_eq!(
        canon("http://forum.example/index.php?sid=3f2a9c8e1b7d4a6f0e5c2b9a8d7f6e1c&topic=42"),
        "http://forum.example/index.php?topic=42",
    );
    assert_eq!(
        canon("http://forum.example/index.php?topic=42&SID=k3u8g9r2m1q5t0v7c4a6b8n2p1"),
        "http://forum.example/index.php?topic=42",
    );
}

#[test]
fn unambiguous_session_names_are_removed_whatever_the_value() {
    assert_eq!(
        canon("http://shop.example/cart.php?PHPSESSID=abc&item=7"),
        "http://shop.example/cart.php?item=7",
    );
    assert_eq!(
        canon("http://shop.example/item;jsessionid=0A1B2C3D4E5F?id=9"),
        "http://shop.example/item?id=9",
    );
    assert_eq!(
        canon("http://shop.example/a.cfm?CFID=1234&CFTOKEN=56789012&page=3"),
        "http://shop.example/a.cfm?page=3",
    );
    assert_eq!(
        canon("http://shop.example/x.asp?ASPSESSIONIDQQGGGNCU=LMNOPQRSTUVWXYZ&p=1"),
        "http://shop.example/x.asp?p=1",
    );
}

#[test]
fn a_search_word_in_s_stays_but_a_token_goes() {
    // WordPress searches are `?s=words`; vBulletin 3 put a 32-hex session hash in `s`.
    assert_eq!(
        canon("https://blog.example/?s=canonicalization"),
        "https://blog.example/?s=canonicalization",
    );
    for search in [
        "windows10professional",
        "iphone15promax256gb",
        "galaxys23ultra512",
    ] {
        let url = format!("https://shop.example/?s={search}");
        assert_eq!(canon(&url), url);
    }
    assert_eq!(
        canon("http://forum.example/showthread.php?s=6b1d6f3b0f7c2a9e8d4c5b6a7f8e9d0c&t=1234"),
        "http://forum.example/showthread.php?t=1234",
    );
}

#[test]
fn session_tokens_in_path_parameters_follow_the_same_rule() {
    assert_eq!(
        canon("http://a.example/page;sid=3f2a9c8e1b7d4a6f0e5c2b9a8d7f6e1c/x"),
        "http://a.example/page/x",
    );
    assert_eq!(
        canon("http://a.example/page;sid=12/x"),
        "http://a.example/page;sid=12/x",
    );
}

/// ASP.NET puts the session in the path for browsers without cookies
/// (`/(S(lit3py55t21z5v55vlm25s55))/default.aspx`), like `;jsessionid=` for Java: the same
/// page under a new URL for every visitor. Such segments were kept.
#[test]
fn asp_net_cookieless_sessions_are_removed_from_paths() {
    assert_eq!(
        canon("http://shop.example/(S(lit3py55t21z5v55vlm25s55))/default.aspx?id=9"),
        "http://shop.example/default.aspx?id=9",
    );
    assert_eq!(
        canon("http://shop.example/app/(S(x1b2)A(y3c4)F(z5))/page.aspx"),
        "http://shop.example/app/page.aspx",
    );
    // Parentheses that are no session ticket stay.
    assert_eq!(
        canon("http://wiki.example/wiki/Mercury_(planet)"),
        "http://wiki.example/wiki/Mercury_(planet)",
    );
    assert_eq!(
        canon("http://wiki.example/(notes)/x"),
        "http://wiki.example/(notes)/x",
    );
}

#[test]
fn the_token_shape() {
    for token in [
        "3f2a9c8e1b7d4a6f0e5c2b9a8d7f6e1c",
        "3F2A9C8E1B7D4A6F0E5C2B9A8D7F6E1C",
        "k3u8g9r2m1q5t0v7c4a6b8n2p1",
        "Xk3fP9aQz7LmN2bV",
    ] {
        assert!(looks_like_session_token(token), "{token}");
    }
    for value in [
        "01/05/17/222314",
        "123",
        "20240101123000000",
        "canonicalization",
        "windows10professional",
        "iphone15promax256gb",
        "3f2a9c8e-1b7d-4a6f-0e5c-2b9a8d7f6e1c",
        "short1a2b3c",
        "",
    ] {
        assert!(!looks_like_session_token(value), "{value}");
    }
}
