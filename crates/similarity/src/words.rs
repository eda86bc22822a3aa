//! The filter's bits, as 64-bit words whose first one starts a cache line, so that a 512-bit
//! block of a [blocked](crate::RegionSizing::Blocked) region is exactly one line.

use crate::Error;

/// Words to allocate in front of the filter's so one of the first eight starts a cache line.
const SLACK: usize = 7;

/// `len` words, the first 64-byte aligned.
#[derive(Clone)]
pub(crate) struct Words {
    storage: Vec<u64>,
    /// Where the words start in `storage`.
    base: usize,
    len: usize,
}

impl Words {
    /// `len` zero words.
    pub(crate) fn zeroed(len: usize) -> Result<Self, Error> {
        let oom = || Error::OutOfMemory {
            bytes: (len as u64).saturating_mul(8),
        };
        let total = len.checked_add(SLACK).ok_or_else(oom)?;
        let mut storage = Vec::new();
        storage.try_reserve_exact(total).map_err(|_| oom())?;
        storage.resize(total, 0);
        // The address decides how many words of slack put the start on a 64-byte boundary.
        let base = (storage.as_ptr() as usize).wrapping_neg() % 64 / 8;
        Ok(Self { storage, base, len })
    }

    /// `words`, moved to aligned storage.
    #[cfg(any(test, feature = "serde"))]
    pub(crate) fn from_vec(words: Vec<u64>) -> Result<Self, Error> {
        if (words.as_ptr() as usize).is_multiple_of(64) {
            let len = words.len();
            return Ok(Self {
                storage: words,
                base: 0,
                len,
            });
        }
        let mut aligned = Self::zeroed(words.len())?;
        aligned.as_mut_slice().copy_from_slice(&words);
        Ok(aligned)
    }

    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[u64] {
        self.storage
            .get(self.base..self.base + self.len)
            .unwrap_or_default()
    }

    #[inline(always)]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u64] {
        self.storage
            .get_mut(self.base..self.base + self.len)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_start_a_cache_line_and_keep_their_values() {
        for len in [0, 1, 8, 1000] {
            let words = Words::zeroed(len).unwrap();
            assert_eq!(words.as_slice().len(), len);
            assert!((words.as_slice().as_ptr() as usize).is_multiple_of(64));
            let values: Vec<u64> = (0..len as u64).collect();
            let moved = Words::from_vec(values.clone()).unwrap();
            assert_eq!(moved.as_slice(), &values[..]);
            assert!((moved.as_slice().as_ptr() as usize).is_multiple_of(64));
        }
    }
}
