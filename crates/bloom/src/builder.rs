use crate::hash::{ItemHasher, SipHash13};
use crate::shape::{Shape, zeroed_words};
use crate::sizing::{self, Sizing};
use crate::{AtomicBloomFilter, BloomFilter, Error};

/// Configures a [`BloomFilter`] or [`AtomicBloomFilter`].
///
/// Give the two numbers you know — [`expected_items`](Self::expected_items) and
/// [`false_positive_rate`](Self::false_positive_rate) (1% if not set) — and the builder derives
/// the size and the number of hashes. Experts can fix [`bits`](Self::bits) and
/// [`hashes`](Self::hashes) directly. The hasher is keyed SipHash-1-3 with a random key unless
/// [`key`](Self::key) or [`hasher`](Self::hasher) says otherwise.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::{BloomFilter, hash::HashKey};
///
/// let filter = BloomFilter::builder()
///     .expected_items(1_000_000)
///     .false_positive_rate(0.001)
///     .key(HashKey::from_bytes([42; 16]))
///     .build()?;
/// assert_eq!(filter.hashes(), 10);
///
/// let expert = BloomFilter::builder().bits(1 << 20).hashes(5).build()?;
/// assert_eq!(expert.bits(), 1 << 20);
/// # Ok::<(), url_dedup_bloom::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder<H = SipHash13> {
    expected_items: Option<u64>,
    fpr: f64,
    bits: Option<u64>,
    hashes: Option<u32>,
    hasher: Option<H>,
}

impl Default for Builder<SipHash13> {
    fn default() -> Self {
        Self {
            expected_items: None,
            fpr: 0.01,
            bits: None,
            hashes: None,
            hasher: None,
        }
    }
}

impl<H: ItemHasher> Builder<H> {
    /// How many distinct items the filter should hold at the target rate.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(100).build()?;
    /// assert_eq!(f.expected_items(), 100);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn expected_items(mut self, items: u64) -> Self {
        self.expected_items = Some(items);
        self
    }

    /// The false-positive rate wanted at [`expected_items`](Self::expected_items); 1% by default.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder()
    ///     .expected_items(1_000)
    ///     .false_positive_rate(0.001)
    ///     .build()?;
    /// assert_eq!(f.hashes(), 10);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn false_positive_rate(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// Fixes the number of bits instead of deriving it.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().bits(1_000).build()?;
    /// assert_eq!(f.bits(), 1_000);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn bits(mut self, bits: u64) -> Self {
        self.bits = Some(bits);
        self
    }

    /// Fixes the number of hash functions (1 to 64) instead of deriving it.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().bits(1_000).hashes(3).build()?;
    /// assert_eq!(f.hashes(), 3);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn hashes(mut self, hashes: u32) -> Self {
        self.hashes = Some(hashes);
        self
    }

    /// Keys the hasher explicitly, for reproducible filters or filters shared between processes.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{BloomFilter, hash::HashKey};
    ///
    /// let key = HashKey::from_bytes([1; 16]);
    /// let a = BloomFilter::builder().expected_items(10).key(key).build()?;
    /// let b = BloomFilter::builder().expected_items(10).key(key).build()?;
    /// assert_eq!(a.key(), b.key());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn key(mut self, key: crate::hash::HashKey) -> Self {
        self.hasher = Some(H::from_key(key));
        self
    }

    /// Uses another hasher, for instance [`Xxh3`](crate::hash::Xxh3) for trusted input.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{BloomFilter, hash::{HashKey, ItemHasher, Xxh3}};
    ///
    /// let f = BloomFilter::builder()
    ///     .expected_items(1_000)
    ///     .hasher(Xxh3::new(HashKey::random()))
    ///     .build()?;
    /// assert!(!f.contains("https://example.com/"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn hasher<H2: ItemHasher>(self, hasher: H2) -> Builder<H2> {
        Builder {
            expected_items: self.expected_items,
            fpr: self.fpr,
            bits: self.bits,
            hashes: self.hashes,
            hasher: Some(hasher),
        }
    }

    /// Builds a single-owner filter (`&mut self` inserts).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] when neither `expected_items` nor `bits` is set, or a value is
    /// out of range; [`Error::OutOfMemory`] when the bits cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_bloom::BloomFilter::builder().build().is_err());
    /// ```
    pub fn build(self) -> Result<BloomFilter<H>, Error> {
        let shape = self.shape()?;
        let words = zeroed_words(shape.words())?;
        Ok(BloomFilter::from_parts(shape, words, 0))
    }

    /// Builds a filter shared between threads (`&self` inserts over atomic words).
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(1_000).build_atomic()?;
    /// assert!(f.check_and_insert("https://example.com/"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn build_atomic(self) -> Result<AtomicBloomFilter<H>, Error> {
        let shape = self.shape()?;
        let words = zeroed_words(shape.words())?;
        Ok(AtomicBloomFilter::from_parts(shape, words))
    }

    fn shape(self) -> Result<Shape<H>, Error> {
        let fpr = self.fpr;
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::InvalidParameters(
                "false-positive rate must be strictly between 0 and 1",
            ));
        }
        let bits = match (self.bits, self.expected_items) {
            (Some(bits), _) => bits,
            (None, Some(items)) => sizing::optimal_bits(items, fpr)?,
            (None, None) => {
                return Err(Error::InvalidParameters(
                    "set expected_items (or bits) to size the filter",
                ));
            }
        };
        let hashes = match (self.hashes, self.expected_items) {
            (Some(k), _) => k,
            (None, Some(items)) if items > 0 => sizing::optimal_hashes(bits, items),
            // Without a count, the k that is optimal for the rate: log2(1/p).
            _ => ((-fpr.log2()).round() as u32).clamp(1, sizing::MAX_HASHES),
        };
        let expected = match self.expected_items {
            Some(0) => {
                return Err(Error::InvalidParameters(
                    "expected items must be at least 1",
                ));
            }
            Some(items) => items,
            None => Sizing { bits, hashes }.capacity(fpr),
        };
        let hasher = self.hasher.unwrap_or_else(H::random);
        Shape::new(bits, hashes, expected, hasher)
    }
}
