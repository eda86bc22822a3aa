//! Hashing shared by every filter: one 128-bit keyed hash per item, then all bit positions
//! derived from it.
//!
//! * [`ItemHasher`] turns an item's bytes into a [`Digest`]. The default, [`SipHash13`], is
//!   keyed with a random 128-bit [`HashKey`], so an adversary who does not know the key cannot
//!   craft URLs that collide in the filter (the attack that fills a public crawler's filter with
//!   a few thousand chosen URLs and makes it skip real pages). [`Xxh3`] is several times faster
//!   and fine for trusted input.
//! * Items are byte strings, never `T: Hash`: the bits a snapshot or a shared Redis filter holds
//!   must not depend on how a Rust version happens to feed a type to a `Hasher`.
//! * [`Digest::indexes`] derives `k` positions by *enhanced double hashing* (Dillinger and
//!   Manolios, 2004), and [`reduce`] maps a 64-bit value onto `0..n` with a multiply-shift, which
//!   is both faster than `%` and unbiased enough for any `n` below 2^64. Positions are `u64`, so
//!   filters beyond 2^32 bits stay correct.

use std::fmt;

/// A 128-bit hash of one item, split into two 64-bit halves.
///
/// `h1` and `h2` are the two independent values enhanced double hashing needs. Other crates use
/// `h1` for routing (segment, virtual node) and `h2` for bit positions, so one hash per URL is
/// enough everywhere.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::{Digest, HashKey, ItemHasher, SipHash13};
///
/// let hasher = SipHash13::new(HashKey::from_bytes([7; 16]));
/// let d: Digest = hasher.hash(b"https://example.com/");
/// assert_eq!(d, hasher.hash(b"https://example.com/"));
/// assert_ne!(d, hasher.hash(b"https://example.com/a"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Digest {
    /// The first half: the base position.
    pub h1: u64,
    /// The second half: the step between positions.
    pub h2: u64,
}

impl Digest {
    /// The `hashes` bit positions of this digest in a filter of `bits` bits.
    ///
    /// Enhanced double hashing: `x0 = h1`, `x(i+1) = x(i) + y(i)`, `y(i+1) = y(i) + i + 1` with
    /// `y0 = h2`, each `x(i)` reduced onto `0..bits` with [`reduce`]. The cubic term keeps
    /// positions distinct even when `h2` is a multiple of a power of two.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::Digest;
    ///
    /// let d = Digest { h1: 1 << 63, h2: 12345 };
    /// let idx: Vec<u64> = d.indexes(7, 1_000).collect();
    /// assert_eq!(idx.len(), 7);
    /// assert!(idx.iter().all(|&i| i < 1_000));
    /// ```
    #[inline]
    pub fn indexes(self, hashes: u32, bits: u64) -> Indexes {
        Indexes {
            x: self.h1,
            y: self.h2,
            step: 0,
            hashes,
            bits,
        }
    }

    /// The first `K` positions of [`indexes`](Self::indexes) as an array, for callers that know
    /// `k` at compile time: the same positions, computed by an unrolled loop.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::Digest;
    ///
    /// let d = Digest { h1: 0x0123_4567_89ab_cdef, h2: 0xfedc_ba98_7654_3210 };
    /// let listed: Vec<u64> = d.indexes(7, 1 << 30).collect();
    /// assert_eq!(d.index_array::<7>(1 << 30).to_vec(), listed);
    /// ```
    #[inline(always)]
    pub fn index_array<const K: usize>(self, bits: u64) -> [u64; K] {
        let (mut x, mut y) = (self.h1, self.h2);
        let mut out = [0; K];
        for (step, slot) in (1..).zip(out.iter_mut()) {
            *slot = reduce(x, bits);
            (x, y) = advance(x, y, step);
        }
        out
    }
}

/// Iterator over the bit positions of a [`Digest`]; see [`Digest::indexes`].
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::Digest;
///
/// let mut it = Digest { h1: 0, h2: 0 }.indexes(2, 64);
/// assert_eq!(it.next(), Some(0));
/// assert!(it.next().is_some());
/// assert_eq!(it.next(), None);
/// ```
#[derive(Clone, Debug)]
pub struct Indexes {
    x: u64,
    y: u64,
    step: u32,
    hashes: u32,
    bits: u64,
}

impl Iterator for Indexes {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.step >= self.hashes {
            return None;
        }
        let index = reduce(self.x, self.bits);
        self.step += 1;
        (self.x, self.y) = advance(self.x, self.y, self.step);
        Some(index)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.hashes - self.step) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Indexes {}

/// One step of enhanced double hashing: `x += y`, then `y += step` (the new step number).
#[inline(always)]
fn advance(x: u64, y: u64, step: u32) -> (u64, u64) {
    let x = x.wrapping_add(y);
    (x, y.wrapping_add(u64::from(step)))
}

/// Maps `x` onto `0..n` by multiply-shift: `(x * n) >> 64`.
///
/// Uses the high bits of `x`, needs no division, and is exact for every `n` up to `u64::MAX`
/// (a 32-bit variant is what broke filters past 2^32 bits in other libraries). Returns 0 when
/// `n` is 0.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::reduce;
///
/// assert_eq!(reduce(0, 10), 0);
/// assert_eq!(reduce(u64::MAX, 10), 9);
/// assert_eq!(reduce(1 << 63, 1 << 40), 1 << 39);
/// ```
#[inline]
pub fn reduce(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// SplitMix64's step and finalizer: 64 well-mixed bits from any 64-bit value, a bijection.
///
/// The one mixer of the workspace: it derives a [`Digest`]'s second half from a 64-bit hash
/// ([`Xxh3`]), fresh offset words in the segmented filter, and test data in benchmarks.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::mix64;
///
/// assert_ne!(mix64(1), mix64(2));
/// assert_eq!(mix64(0), 0xe220_a839_7b1d_cdaf);
/// ```
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A 128-bit secret that keys a hasher.
///
/// Two filters can only be combined, and a snapshot only means anything, with the same key, so
/// the key is part of every filter's parameters. `Debug` never prints the key.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::HashKey;
///
/// let fixed = HashKey::from_bytes([1; 16]);
/// assert_eq!(fixed.to_bytes(), [1; 16]);
/// assert_ne!(HashKey::random(), HashKey::random());
/// assert_eq!(format!("{fixed:?}"), "HashKey(..)");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HashKey([u8; 16]);

impl HashKey {
    /// A key from explicit bytes, for reproducible or shared filters.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::HashKey;
    ///
    /// let key = HashKey::from_bytes(*b"0123456789abcdef");
    /// assert_eq!(&key.to_bytes(), b"0123456789abcdef");
    /// ```
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// A fresh key from the operating system's random source.
    ///
    /// If the OS source fails (it practically never does), the key comes from the standard
    /// library's per-process random hash state instead, which is itself seeded by the OS: a
    /// constructor that cannot fail is worth more here than a panic or an error path.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::HashKey;
    ///
    /// assert_ne!(HashKey::random(), HashKey::random());
    /// ```
    pub fn random() -> Self {
        let mut bytes = [0u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            use std::hash::{BuildHasher, Hasher};
            let state = std::collections::hash_map::RandomState::new();
            for (i, chunk) in bytes.chunks_exact_mut(8).enumerate() {
                let mut h = state.build_hasher();
                h.write_usize(i);
                chunk.copy_from_slice(&h.finish().to_le_bytes());
            }
        }
        Self(bytes)
    }

    /// The key's bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::HashKey;
    ///
    /// assert_eq!(HashKey::from_bytes([9; 16]).to_bytes(), [9; 16]);
    /// ```
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    /// The key as 32 lower-case hex digits, the form key files and environment variables
    /// hold (see [`FromStr`](std::str::FromStr)).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::HashKey;
    ///
    /// let key = HashKey::from_bytes([0xab; 16]);
    /// assert_eq!(key.to_hex(), "ab".repeat(16));
    /// assert_eq!(key.to_hex().parse::<HashKey>()?, key);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn to_hex(self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn halves(self) -> (u64, u64) {
        let (a, b) = self.0.split_at(8);
        (le_u64(a), le_u64(b))
    }
}

fn le_u64(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(word)
}

/// Reads 32 hex digits (either case; white space around them is ignored).
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::HashKey;
///
/// let key: HashKey = " 000102030405060708090a0b0c0d0e0F\n".parse()?;
/// assert_eq!(key.to_bytes()[15], 15);
/// assert!("too short".parse::<HashKey>().is_err());
/// # Ok::<(), url_dedup_bloom::Error>(())
/// ```
impl std::str::FromStr for HashKey {
    type Err = crate::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let digits = text.trim().as_bytes();
        let bad = || crate::Error::InvalidParameters("a hash key is 32 hex digits");
        if digits.len() != 32 {
            return Err(bad());
        }
        let mut bytes = [0u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
        }
        Ok(Self(bytes))
    }
}

impl fmt::Debug for HashKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HashKey(..)")
    }
}

/// Identifies a hash algorithm inside snapshots, so a snapshot is never read with a hasher that
/// would compute different positions.
///
/// Built-in algorithms use small numbers; third-party hashers should pick a value at or above
/// [`HashAlgorithm::USER`].
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::{HashAlgorithm, ItemHasher, SipHash13, Xxh3};
///
/// assert_eq!(SipHash13::ALGORITHM, HashAlgorithm::SIPHASH13);
/// assert_ne!(SipHash13::ALGORITHM, Xxh3::ALGORITHM);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HashAlgorithm(pub u16);

impl HashAlgorithm {
    /// Keyed SipHash-1-3 with 128-bit output ([`SipHash13`]).
    pub const SIPHASH13: Self = Self(1);
    /// XXH3-64 with a key-derived secret, second half by [`mix64`] ([`Xxh3`]). (Code 2 was an
    /// earlier seeded XXH3-128 digest; data written with it is refused as another algorithm.)
    pub const XXH3: Self = Self(3);
    /// First value free for hashers defined outside this crate.
    pub const USER: Self = Self(0x8000);
}

/// Turns an item's bytes into a [`Digest`]. Implement it to plug in another hash function.
///
/// A hasher is fully described by its [`ALGORITHM`](Self::ALGORITHM) and its
/// [`key`](Self::key): [`from_key`](Self::from_key) of the same key must hash identically, which
/// is what lets snapshots and shared filters be reopened.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::{Digest, HashAlgorithm, HashKey, ItemHasher};
///
/// /// FNV-1a twice: fast, unkeyed, for trusted input only.
/// #[derive(Clone, Debug)]
/// struct Fnv;
///
/// impl ItemHasher for Fnv {
///     const ALGORITHM: HashAlgorithm = HashAlgorithm(0x8001);
///     fn hash(&self, item: &[u8]) -> Digest {
///         let mut h = 0xcbf29ce484222325u64;
///         for &b in item {
///             h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
///         }
///         Digest { h1: h, h2: h.rotate_left(32).wrapping_mul(0x9e3779b97f4a7c15) | 1 }
///     }
///     fn key(&self) -> HashKey { HashKey::from_bytes([0; 16]) }
///     fn from_key(_: HashKey) -> Self { Fnv }
///     fn random() -> Self { Fnv }
/// }
///
/// let filter = url_dedup_bloom::BloomFilter::builder()
///     .expected_items(1_000)
///     .false_positive_rate(0.01)
///     .hasher(Fnv)
///     .build()?;
/// assert!(!filter.contains("https://example.com/"));
/// # Ok::<(), url_dedup_bloom::Error>(())
/// ```
pub trait ItemHasher: Clone + fmt::Debug + Send + Sync + 'static {
    /// The identifier written into snapshots.
    const ALGORITHM: HashAlgorithm;

    /// Hashes one item.
    fn hash(&self, item: &[u8]) -> Digest;

    /// The key this hasher was built with.
    fn key(&self) -> HashKey;

    /// Rebuilds the hasher from a key; must hash exactly as the hasher that produced the key.
    fn from_key(key: HashKey) -> Self;

    /// A hasher with a fresh random key: the default for new filters.
    fn random() -> Self;
}

/// Keyed SipHash-1-3 with 128-bit output: the default hasher.
///
/// One call yields both halves of the [`Digest`]. Keyed with a secret 128-bit key, its outputs
/// cannot be predicted, so filters are safe to feed with URLs an adversary controls.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13};
///
/// let a = SipHash13::new(HashKey::from_bytes([1; 16]));
/// let b = SipHash13::new(HashKey::from_bytes([2; 16]));
/// assert_ne!(a.hash(b"https://example.com/"), b.hash(b"https://example.com/"));
/// ```
#[derive(Clone)]
pub struct SipHash13 {
    key: HashKey,
    /// The four state words after keying, so a hash starts from them.
    keyed: [u64; 4],
}

impl SipHash13 {
    /// A hasher keyed with `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13};
    ///
    /// let h = SipHash13::new(HashKey::from_bytes([0; 16]));
    /// assert_eq!(h.key(), HashKey::from_bytes([0; 16]));
    /// ```
    pub fn new(key: HashKey) -> Self {
        let (k0, k1) = key.halves();
        Self {
            key,
            // SipHash's initialization, with the 128-bit output's tweak of `v1`.
            keyed: [
                k0 ^ 0x736f_6d65_7073_6575,
                k1 ^ 0x646f_7261_6e64_6f6d ^ 0xee,
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
        }
    }
}

/// One SipRound.
#[inline(always)]
fn sip_round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

/// SipHash-1-3 with 128-bit output of `item` from keyed state `v`, in one pass: whole words
/// straight from the input, the tail and the length in the last word, then the two halves
/// of the finalization. The same values as the `siphasher` crate's `SipHasher13` (checked
/// below); written here so the whole hash inlines into a filter's loop, where a call per item
/// and the streaming hasher's buffering cost a fifth of the hash.
#[inline(always)]
fn siphash13_128(mut v: [u64; 4], item: &[u8]) -> Digest {
    let (words, tail) = item.as_chunks::<8>();
    for word in words {
        let m = u64::from_le_bytes(*word);
        v[3] ^= m;
        sip_round(&mut v);
        v[0] ^= m;
    }
    let mut last = (item.len() as u64) << 56;
    if let (false, Some(end)) = (tail.is_empty(), item.last_chunk::<8>()) {
        // The tail is the top of the input's last eight bytes: one load, no loop.
        last |= u64::from_le_bytes(*end) >> (64 - 8 * tail.len());
    } else {
        for (i, &b) in tail.iter().enumerate() {
            last |= u64::from(b) << (8 * i);
        }
    }
    v[3] ^= last;
    sip_round(&mut v);
    v[0] ^= last;
    v[2] ^= 0xee;
    sip_round(&mut v);
    sip_round(&mut v);
    sip_round(&mut v);
    let h1 = v[0] ^ v[1] ^ v[2] ^ v[3];
    v[1] ^= 0xdd;
    sip_round(&mut v);
    sip_round(&mut v);
    sip_round(&mut v);
    let h2 = v[0] ^ v[1] ^ v[2] ^ v[3];
    Digest { h1, h2 }
}

impl fmt::Debug for SipHash13 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SipHash13 { key: .. }")
    }
}

impl ItemHasher for SipHash13 {
    const ALGORITHM: HashAlgorithm = HashAlgorithm::SIPHASH13;

    #[inline(always)]
    fn hash(&self, item: &[u8]) -> Digest {
        siphash13_128(self.keyed, item)
    }

    fn key(&self) -> HashKey {
        self.key
    }

    fn from_key(key: HashKey) -> Self {
        Self::new(key)
    }

    fn random() -> Self {
        Self::new(HashKey::random())
    }
}

/// XXH3-64 with a key-derived secret: several times faster than SipHash on URLs.
///
/// The digest is `h1` = the 64-bit hash and `h2` = [`mix64`] of it. The 64-bit XXH3 costs about
/// half the 128-bit one on URL-sized input, and a filter needs no more than 64 bits of entropy
/// per item: even at 10^9 items the chance that two share all 64 bits is below 3%, while the
/// false-positive rate is orders of magnitude larger.
///
/// The key is stretched by [`mix64`] into XXH3's 192-byte secret, which varies the output
/// but is not a cryptographic key: XXH3 has collisions that do not depend on the secret, so
/// use it only for URLs you trust. (A secret read from memory also costs fewer instructions
/// per URL than a seed folded into every step, which matters to a filter's single calls.)
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::{HashKey, ItemHasher, Xxh3};
///
/// let h = Xxh3::new(HashKey::from_bytes([3; 16]));
/// assert_eq!(h.hash(b"a"), Xxh3::from_key(h.key()).hash(b"a"));
/// ```
#[derive(Clone)]
pub struct Xxh3 {
    key: HashKey,
    secret: [u8; XXH3_SECRET_BYTES],
}

/// The size of XXH3's default secret; custom secrets need at least 136 bytes.
const XXH3_SECRET_BYTES: usize = 192;

impl Xxh3 {
    /// A hasher whose secret is derived from `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::{HashKey, ItemHasher, Xxh3};
    ///
    /// let h = Xxh3::new(HashKey::from_bytes([0; 16]));
    /// assert_ne!(h.hash(b"a"), h.hash(b"b"));
    /// ```
    pub fn new(key: HashKey) -> Self {
        let (a, b) = key.halves();
        let mut secret = [0u8; XXH3_SECRET_BYTES];
        for (i, chunk) in secret.chunks_exact_mut(8).enumerate() {
            let word = mix64(a ^ mix64(b.wrapping_add(i as u64)));
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Self { key, secret }
    }
}

impl fmt::Debug for Xxh3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Xxh3 { secret: .. }")
    }
}

impl ItemHasher for Xxh3 {
    const ALGORITHM: HashAlgorithm = HashAlgorithm::XXH3;

    // Always inlined: a call per item keeps fewer items' cache misses in flight.
    #[inline(always)]
    fn hash(&self, item: &[u8]) -> Digest {
        let h = xxhash_rust::xxh3::xxh3_64_with_secret(item, &self.secret);
        Digest {
            h1: h,
            h2: mix64(h),
        }
    }

    fn key(&self) -> HashKey {
        self.key
    }

    fn from_key(key: HashKey) -> Self {
        Self::new(key)
    }

    fn random() -> Self {
        Self::new(HashKey::random())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_are_in_range_and_spread() {
        let h = SipHash13::new(HashKey::from_bytes([5; 16]));
        for i in 0..1_000u32 {
            let d = h.hash(&i.to_le_bytes());
            let idx: Vec<u64> = d.indexes(10, 1 << 40).collect();
            assert!(idx.iter().all(|&x| x < 1 << 40));
            let mut sorted = idx.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(
                sorted.len(),
                10,
                "positions of one item should not collide at 2^40"
            );
        }
    }

    #[test]
    fn reduce_covers_high_ranges() {
        // Beyond 2^32 bits a filter must still reach its top positions.
        let n = (1u64 << 33) + 17;
        assert_eq!(reduce(u64::MAX, n), n - 1);
        assert!(reduce(u64::MAX / 2, n) > 1 << 32);
    }

    #[test]
    fn key_bytes_mean_what_siphash_byte_keys_mean() {
        // A key written by one implementation must hash identically in another: our split of
        // the 16 bytes into two little-endian words must match SipHash's byte-key convention.
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        for data in [&b""[..], b"https://example.com/", &[0xff; 100]] {
            let h = SipHash13::new(HashKey::from_bytes(key)).hash(data);
            assert_eq!((h.h1, h.h2), siphasher_reference(&key, data));
        }
    }

    fn siphasher_reference(key: &[u8; 16], data: &[u8]) -> (u64, u64) {
        use siphasher::sip128::{Hasher128, SipHasher13};
        use std::hash::Hasher;
        let mut s = SipHasher13::new_with_key(key);
        s.write(data);
        let h = s.finish128();
        (h.h1, h.h2)
    }

    /// Every length from empty to several words past a URL's, on keys and bytes of every
    /// shape: the one-pass hash is the `siphasher` crate's SipHash-1-3-128, bit for bit, so
    /// snapshots and shared filters written before keep their meaning.
    #[test]
    fn the_one_pass_hash_is_siphash13_128() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            state = mix64(state);
            state
        };
        for len in 0..300 {
            for _ in 0..4 {
                let key: [u8; 16] = core::array::from_fn(|_| next() as u8);
                let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let h = SipHash13::new(HashKey::from_bytes(key)).hash(&data);
                assert_eq!(
                    (h.h1, h.h2),
                    siphasher_reference(&key, &data),
                    "length {len}"
                );
            }
        }
    }
}
