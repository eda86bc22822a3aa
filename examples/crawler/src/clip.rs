//! Long texts cut to a size fit for a report line, with a marker saying so.
//!
//! A URL can be megabytes long (a trap, or a hostile page); the skip report, the summary and
//! the log stream each keep a bounded beginning of it instead.

use std::borrow::Cow;

/// Longest field of `skipped.tsv` and of the log stream, in bytes (marker included): twice the
/// default URL length limit, so every URL the crawl would follow is written whole.
pub(crate) const REPORT_FIELD: usize = 2048;

/// `text` when it is at most `max` bytes long; otherwise its beginning, cut at a character
/// boundary, and a marker with the full length (`...[cut from 9437189 bytes]`), together at
/// most `max` bytes (or the marker alone, when `max` is smaller than it).
pub(crate) fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let marker = format!("...[cut from {} bytes]", text.len());
    let mut keep = max.saturating_sub(marker.len());
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    Cow::Owned(format!("{}{marker}", &text[..keep]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_stay_whole() {
        assert_eq!(clip("abc", 3), "abc");
        assert!(matches!(clip("abc", 3), Cow::Borrowed(_)));
    }

    #[test]
    fn long_texts_keep_their_beginning_and_say_how_long_they_were() {
        let long = "x".repeat(10_000);
        let cut = clip(&long, 100);
        assert_eq!(cut.len(), 100);
        assert!(cut.starts_with("xxx") && cut.ends_with("...[cut from 10000 bytes]"));
    }

    proptest::proptest! {
        #[test]
        fn never_longer_than_asked_and_never_splits_a_character(text in "\\PC{0,300}", max in 24usize..200) {
            let cut = clip(&text, max);
            proptest::prop_assert!(cut.len() <= max);
            let kept = cut.split("...[cut from ").next().unwrap_or_default();
            proptest::prop_assert!(text.starts_with(kept));
        }
    }
}
