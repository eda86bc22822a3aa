//! The [`Feature`] trait: one kind of URL feature, one Bloom region.

use std::fmt;

use crate::UrlParts;

/// One kind of URL feature. Each feature of a filter owns a region of the filter's bits; a
/// URL sets one bit per feature, chosen by the MD5 of the feature's value.
///
/// Implement it to add features; [`builtin`](crate::builtin) has the document's four and the
/// recommended additions.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, Preset, SimilarityFilter, UrlParts};
///
/// /// The port alone: URLs on the same port count as similar in this feature.
/// #[derive(Debug)]
/// struct Port;
///
/// impl Feature for Port {
///     fn name(&self) -> &str {
///         "port"
///     }
///     fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
///         let port = url.site().rsplit_once(':').map_or("", |(_, p)| p);
///         out.extend_from_slice(port.as_bytes());
///     }
/// }
///
/// let mut features = Preset::Document004.features();
/// features.push(std::sync::Arc::new(Port));
/// let mut filter = SimilarityFilter::builder()
///     .expected_items(1_000)
///     .false_positive_rate(0.01)
///     .features(features)
///     .build()?;
/// assert!(filter.check_and_insert("http://a.example/x/1").is_new());
/// assert!(filter.check_and_insert("http://a.example:8080/x/1").is_new());
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
pub trait Feature: fmt::Debug + Send + Sync + 'static {
    /// A short stable name; snapshots record it, so a filter is never reopened with other
    /// features.
    fn name(&self) -> &str;

    /// Appends this feature's value for `url` to `out` (which is empty on entry). Equal
    /// values mean "similar in this feature".
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>);
}
