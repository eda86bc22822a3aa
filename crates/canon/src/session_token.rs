//! The shape of a session token, for parameter names that name content on some sites and
//! sessions on others.

/// Shortest value taken for a token: PHP's shortest default session id has 22 characters and
/// Java's 16 hex digits; shorter values are more often ids, codes or words.
const MIN_LEN: usize = 16;
/// Longest value taken for a token: longer alphanumeric runs are encoded payloads rather than
/// session ids, and one may identify a page.
const MAX_LEN: usize = 256;

/// Whether `value` has the shape of a session token: a long run of random-looking letters and
/// digits, such as a 32-hex PHP session id or a base-62 Java one.
///
/// The rule, in order:
///
/// 1. 16 to 256 bytes long;
/// 2. ASCII letters and digits only: a separator (`/`, `-`, `.`, `_`, `+`, `%`, ...) marks a
///    date, a path, a slug, a UUID or words, all of which can name a page;
/// 3. at least one digit and at least one letter: all digits is a number, all letters a word;
/// 4. high entropy, measured as changes of character class: splitting the value into runs of
///    digits, lower-case letters and upper-case letters gives at least one run per three
///    bytes (at least 4 runs). A random 32-hex value has about 16 runs; words with numbers
///    have few (`windows10professional` 3, the search `iphone15promax256gb` 5 of the 6
///    needed). About 98% of random 32-hex ids and 93% of PHP's 26-character ids pass.
///
/// A token that fails the rule (it happens to be a mostly-letter run, say) is kept, which costs
/// a duplicate fetch; removing a value that names a page would lose the page, so the rule
/// errs towards keeping.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::looks_like_session_token;
///
/// assert!(looks_like_session_token("3f2a9c8e1b7d4a6f0e5c2b9a8d7f6e1c"));
/// assert!(looks_like_session_token("k3u8g9r2m1q5t0v7c4a6b8n2p1"));
/// // A Slashdot story id, a PHP-Nuke one, a search word: not tokens.
/// assert!(!looks_like_session_token("01/05/17/222314"));
/// assert!(!looks_like_session_token("123"));
/// assert!(!looks_like_session_token("canonicalization"));
/// ```
pub fn looks_like_session_token(value: &str) -> bool {
    let bytes = value.as_bytes();
    if !(MIN_LEN..=MAX_LEN).contains(&bytes.len()) {
        return false;
    }
    let (mut digits, mut letters, mut runs) = (false, false, 0usize);
    let mut previous = None;
    for &b in bytes {
        let class = match b {
            b'0'..=b'9' => 0u8,
            b'a'..=b'z' => 1,
            b'A'..=b'Z' => 2,
            _ => return false,
        };
        digits |= class == 0;
        letters |= class != 0;
        runs += usize::from(previous != Some(class));
        previous = Some(class);
    }
    digits && letters && runs >= (bytes.len() / 3).max(4)
}
