//! Snapshots of a [`SimilarityFilter`] in the workspace's shared format
//! (`url_dedup_bloom::snapshot`, kind [`Kind::SIMILARITY`]).
//!
//! Parameter block, little-endian: layout version (`u16`, 1), keyed flag (`u16`), key (16
//! bytes, zero when unkeyed), feature hash (`u16`: 0 MD5, 1 SipHash-1-3), region sizing (`u16`:
//! 0 per feature, 1 document 004, 2 to 5 blocked with blocks of 512, 1024, 2048, 4096 bits), region
//! bits `N` (`u64`), bits per value (`u32`), expected items `k` (`u64`), rate `P` (`f64`
//! bits), recorded items (`u64`), feature count (`u16`), then each feature name as a `u16`
//! length and its UTF-8 bytes. Payload: the `F * N` bits as little-endian words.

use std::io::{Read, Write};
use std::sync::Arc;

use url_dedup_bloom::HashKey;
use url_dedup_bloom::snapshot::{self, Kind, Limits, Params, SnapshotError};

use crate::filter::{check_feature_count, words_for};
use crate::region_sizing::Regions;
use crate::words::Words;
use url_dedup_bloom::sizing::MAX_HASHES;

use crate::{Error, Feature, FeatureHash, RegionSizing, SimilarityFilter, builtin};

const LAYOUT_VERSION: u16 = 1;

impl SimilarityFilter {
    /// Writes a snapshot.
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] when writing fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::SimilarityFilter;
    ///
    /// let mut f = SimilarityFilter::builder().expected_items(1_000).build()?;
    /// f.check_and_insert("https://a.example/x?id=1&ref=rss");
    /// let mut buf = Vec::new();
    /// f.write_to(&mut buf)?;
    /// let back = SimilarityFilter::read_from(&buf[..])?;
    /// assert_eq!(back, f);
    /// assert!(back.check("https://a.example/x?id=1&ref=atom").is_similar());
    /// assert!(back.check("https://a.example/x?id=2").is_new());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        let mut p = Params::new();
        p.put_u16(LAYOUT_VERSION)
            .put_u16(u16::from(self.key.is_some()))
            .put_bytes(&self.key.map_or([0; 16], HashKey::to_bytes))
            .put_u16(self.hash.id())
            .put_u16(self.sizing.id(self.regions.block_bits()))
            .put_u64(self.regions.bits)
            .put_u32(self.regions.hashes)
            .put_u64(self.expected_items)
            .put_u64(self.fpr.to_bits())
            .put_u64(self.items)
            .put_u16(self.feature_list().len() as u16);
        for name in self.features() {
            let bytes = name.as_bytes();
            let len = u16::try_from(bytes.len())
                .map_err(|_| Error::InvalidParameters("feature name longer than 65535 bytes"))?;
            p.put_u16(len).put_bytes(bytes);
        }
        let words = self.raw_words();
        snapshot::write(
            out,
            Kind::SIMILARITY,
            p.as_bytes(),
            words.len() as u64,
            words.iter().copied(),
        )?;
        Ok(())
    }

    /// Reads a snapshot whose features are all built in (both presets, and any
    /// [`builtin`] combination).
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] for damaged, truncated or foreign input, [`Error::UnknownFeature`]
    /// for a custom feature (use [`SimilarityFilter::read_from_with`]).
    ///
    /// # Examples
    ///
    /// See [`SimilarityFilter::write_to`].
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::read_with(input, None, Limits::default())
    }

    /// Reads a snapshot written with `features` (which may be custom), accepting at most
    /// `limits`.
    ///
    /// # Errors
    ///
    /// As [`SimilarityFilter::read_from`], and [`Error::FeatureMismatch`] when the names
    /// differ from the snapshot's.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::snapshot::Limits;
    /// use url_dedup_similarity::{Error, Preset, SimilarityFilter};
    ///
    /// let f = SimilarityFilter::builder().preset(Preset::Document004).build()?;
    /// let mut buf = Vec::new();
    /// f.write_to(&mut buf)?;
    /// let limits = Limits { max_payload_bytes: 1 << 30 };
    /// let err = SimilarityFilter::read_from_with(&buf[..], Preset::Crawler.features(), limits);
    /// assert!(matches!(err, Err(Error::FeatureMismatch { .. })));
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn read_from_with<R: Read>(
        input: R,
        features: Vec<Arc<dyn Feature>>,
        limits: Limits,
    ) -> Result<Self, Error> {
        Self::read_with(input, Some(features), limits)
    }

    fn read_with<R: Read>(
        mut input: R,
        supplied: Option<Vec<Arc<dyn Feature>>>,
        limits: Limits,
    ) -> Result<Self, Error> {
        let header = snapshot::read_header(&mut input, Kind::SIMILARITY, limits)?;
        let mut p = header.params();
        if p.u16()? != LAYOUT_VERSION {
            return Err(invalid("unknown similarity layout version"));
        }
        let keyed = match p.u16()? {
            0 => false,
            1 => true,
            _ => return Err(invalid("keyed flag must be 0 or 1")),
        };
        let key = HashKey::from_bytes(p.bytes::<16>()?);
        let hash = FeatureHash::from_id(p.u16()?).ok_or(invalid("unknown feature hash"))?;
        let (sizing, block_bits) =
            RegionSizing::from_id(p.u16()?).ok_or(invalid("unknown region sizing"))?;
        let region_bits = p.u64()?;
        let hashes = p.u32()?;
        let expected_items = p.u64()?;
        let fpr = f64::from_bits(p.u64()?);
        let items = p.u64()?;
        let count = usize::from(p.u16()?);
        let mut names = Vec::with_capacity(count.min(64));
        for _ in 0..count {
            let len = usize::from(p.u16()?);
            let mut name = Vec::with_capacity(len);
            for _ in 0..len {
                name.push(p.bytes::<1>()?[0]);
            }
            names.push(String::from_utf8(name).map_err(|_| invalid("feature name is not UTF-8"))?);
        }
        if !p.is_empty() {
            return Err(invalid("trailing bytes in the parameter block"));
        }
        let f = check_feature_count(names.len())?;
        if !(fpr > 0.0 && fpr < 1.0) || expected_items == 0 {
            return Err(invalid("expected items or rate out of range"));
        }
        check_hashes(hashes, sizing)?;
        let regions = Regions::restore(sizing, region_bits, hashes, block_bits)?;
        let words = words_for(region_bits, f)?;
        if header.payload_words() != words {
            return Err(invalid("payload length does not match the filter size"));
        }
        let features = match supplied {
            Some(features) => {
                let expected: Vec<String> = features.iter().map(|f| f.name().to_owned()).collect();
                if expected != names {
                    return Err(Error::FeatureMismatch {
                        expected,
                        found: names,
                    });
                }
                features
            }
            None => names
                .iter()
                .map(|n| builtin::by_name(n).ok_or_else(|| Error::UnknownFeature(n.clone())))
                .collect::<Result<_, _>>()?,
        };
        let mut bits = Words::zeroed(words as usize)?;
        let mut filled = 0;
        header.read_payload_with(&mut input, |chunk| {
            if let Some(to) = bits.as_mut_slice().get_mut(filled..filled + chunk.len()) {
                to.copy_from_slice(chunk);
            }
            filled += chunk.len();
        })?;
        check_padding(bits.as_slice(), region_bits * u64::from(f))?;
        Ok(Self::from_parts(
            features,
            (regions, sizing),
            bits,
            (keyed.then_some(key), hash),
            expected_items,
            fpr,
            items,
        ))
    }
}

/// Bits past the end of the last region must be zero, or `==` and snapshots would disagree
/// about equal filters.
pub(crate) fn check_padding(words: &[u64], bits: u64) -> Result<(), Error> {
    let used = bits % 64;
    match words.last() {
        Some(&last) if used != 0 && last >> used != 0 => {
            Err(invalid("bits set beyond the end of the filter"))
        }
        _ => Ok(()),
    }
}

/// Bits per value must be 1 for the document's layout and within `1..=MAX_HASHES` otherwise.
pub(crate) fn check_hashes(hashes: u32, sizing: RegionSizing) -> Result<(), Error> {
    let valid = match sizing {
        RegionSizing::Document004 => hashes == 1,
        _ => (1..=MAX_HASHES).contains(&hashes),
    };
    if valid {
        Ok(())
    } else {
        Err(invalid("bits per feature value out of range"))
    }
}

fn invalid(msg: &'static str) -> Error {
    Error::Snapshot(SnapshotError::InvalidParameters(msg))
}
