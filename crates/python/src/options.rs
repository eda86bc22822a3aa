//! The keyword arguments of `UrlDedup(...)`, `UrlDedup.load` and `UrlDedup.from_bytes`, turned
//! into the facade's builder.

use std::sync::OnceLock;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use url_dedup::bloom::HashKey;
use url_dedup::canon::{Canonicalizer, Convention};
use url_dedup::similarity::Preset;
use url_dedup::{Builder, FilterKind, UrlDedup};

/// How a deduplicator is configured: everything but the state itself.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) expected_urls: u64,
    /// `None`: the facade's default (0.001, or 10⁻⁵ for a filter in Redis).
    pub(crate) false_positive_rate: Option<f64>,
    /// `None`: compare keys byte for byte.
    pub(crate) canonicalization: Option<Convention>,
    pub(crate) filter: FilterKind,
    pub(crate) similarity: Option<Preset>,
    /// The similarity filter's own rate per feature value (default: `false_positive_rate`).
    pub(crate) similarity_fpr: Option<f64>,
    pub(crate) hash_key: Option<HashKey>,
    /// Redis URL and key prefix of a shared filter.
    pub(crate) redis: Option<(String, String)>,
    pub(crate) accept_config_change: bool,
}

impl Options {
    /// Reads the Python arguments, refusing unknown names with a `ValueError` that lists the
    /// known ones.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn parse(
        expected_urls: u64,
        false_positive_rate: Option<f64>,
        canonicalization: Option<&str>,
        filter: &str,
        (similarity, similarity_fpr): (Option<&str>, Option<f64>),
        hash_key: Option<&[u8]>,
        redis: Option<String>,
        redis_prefix: String,
        accept_config_change: bool,
    ) -> PyResult<Self> {
        if similarity.is_none() && similarity_fpr.is_some() {
            return Err(PyValueError::new_err(
                "similarity_false_positive_rate needs a similarity preset (similarity=...)",
            ));
        }
        Ok(Self {
            expected_urls,
            false_positive_rate,
            canonicalization: canonicalization.map(convention).transpose()?,
            filter: filter_kind(filter)?,
            similarity: similarity.map(preset).transpose()?,
            similarity_fpr,
            hash_key: hash_key.map(key).transpose()?,
            redis: redis.map(|url| (url, redis_prefix)),
            accept_config_change,
        })
    }

    /// The facade's builder for these options.
    pub(crate) fn builder(&self) -> Builder {
        let mut b = UrlDedup::builder()
            .expected_urls(self.expected_urls)
            .filter(self.filter);
        if let Some(rate) = self.false_positive_rate {
            b = b.false_positive_rate(rate);
        }
        b = match self.canonicalization {
            Some(c) => b.canonicalization(c.policy()),
            None => b.no_canonicalization(),
        };
        if let Some(preset) = self.similarity {
            b = b.similarity(preset);
        }
        if let Some(rate) = self.similarity_fpr {
            b = b.similarity_false_positive_rate(rate);
        }
        if let Some(key) = self.hash_key {
            b = b.hash_key(key);
        }
        if let Some((url, prefix)) = &self.redis {
            b = b.redis(url, prefix);
        }
        if self.accept_config_change {
            b = b.accept_config_change();
        }
        b
    }
}

/// A named canonicalization convention.
fn convention(name: &str) -> PyResult<Convention> {
    name.parse::<Convention>()
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// One shared canonicalizer per convention, for the module-level `canonicalize`: building one
/// compiles its parameter lists, which would cost more than the call itself.
pub(crate) fn canonicalizer(name: &str) -> PyResult<&'static Canonicalizer> {
    static ALL: OnceLock<Vec<Canonicalizer>> = OnceLock::new();
    let wanted = convention(name)?;
    let all = ALL.get_or_init(|| Convention::ALL.iter().map(|c| c.canonicalizer()).collect());
    let index = Convention::ALL
        .iter()
        .position(|c| *c == wanted)
        .unwrap_or_default();
    Ok(&all[index])
}

fn filter_kind(name: &str) -> PyResult<FilterKind> {
    match name.to_ascii_lowercase().as_str() {
        "growing" => Ok(FilterKind::Growing),
        "segmented" => Ok(FilterKind::Segmented),
        "classic" => Ok(FilterKind::Classic),
        "exact" => Ok(FilterKind::Exact),
        _ => Err(PyValueError::new_err(format!(
            "unknown filter {name:?}; expected one of growing, segmented, classic, exact"
        ))),
    }
}

fn preset(name: &str) -> PyResult<Preset> {
    match name.to_ascii_lowercase().as_str() {
        "crawler" => Ok(Preset::Crawler),
        "page" => Ok(Preset::Page),
        "document004" | "document-004" => Ok(Preset::Document004),
        _ => Err(PyValueError::new_err(format!(
            "unknown similarity preset {name:?}; expected crawler, page or document004"
        ))),
    }
}

fn key(bytes: &[u8]) -> PyResult<HashKey> {
    let bytes: [u8; 16] = bytes
        .try_into()
        .map_err(|_| PyValueError::new_err("hash_key must be 16 bytes"))?;
    Ok(HashKey::from_bytes(bytes))
}
