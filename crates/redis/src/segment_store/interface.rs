//! The segmented filter's [`SegmentStore`] interface, answered by `BITFIELD` batches and
//! segment transfers.

use url_dedup_segmented::{Layout, Probe, SegmentStore};

use super::RedisSegmentStore;
use super::options::{Uncertain, WriteMode};
use crate::error::{Error, Result};

impl SegmentStore for RedisSegmentStore {
    type Error = Error;

    fn layout(&self) -> Layout {
        self.meta.layout
    }

    fn check_and_insert(&self, probes: &[Probe], new: &mut Vec<bool>) -> Result<()> {
        if probes.is_empty() {
            return Ok(());
        }
        self.check_probes(probes)?;
        let mut answers = vec![false; probes.len()];
        let uncertain = match self.options.mode {
            WriteMode::Bitfield => {
                let report = self.bitfield_batch(true, probes, &mut answers)?;
                let doubt = report.uncertain(probes.len());
                for (header, members) in &report.commands {
                    if header.layers > 1 {
                        return Err(self.grown(header.key));
                    }
                    let new = members.iter().filter(|&&i| answers[i]).count() as u64;
                    self.keys.add_pending(header.key, new);
                }
                doubt
            }
            WriteMode::Optimistic => {
                let ran = self.optimistic_check_and_insert(probes, &mut answers)?;
                vec![ran; probes.len()]
            }
        };
        if self.options.uncertain == Uncertain::AssumeNew {
            for (answer, doubt) in answers.iter_mut().zip(uncertain) {
                *answer |= doubt;
            }
        }
        new.extend_from_slice(&answers);
        Ok(())
    }

    fn contains(&self, probes: &[Probe], found: &mut Vec<bool>) -> Result<()> {
        if probes.is_empty() {
            return Ok(());
        }
        self.check_probes(probes)?;
        let mut answers = vec![true; probes.len()];
        let report = self.bitfield_batch(false, probes, &mut answers)?;
        for (header, members) in &report.commands {
            // Found in the first layer is found; not found there may be in another.
            if header.layers > 1 && members.iter().any(|&i| !answers[i]) {
                return Err(self.grown(header.key));
            }
        }
        found.extend_from_slice(&answers);
        Ok(())
    }

    fn read_segment(&self, segment: u64, out: &mut Vec<u64>) -> Result<()> {
        self.read_segments(segment, 1, out)
    }

    fn merge_segment(&self, segment: u64, words: &[u64]) -> Result<()> {
        if words.len() as u64 > self.meta.layout.segment_words() {
            return Err(Error::Segmented(
                url_dedup_segmented::Error::InvalidParameters("more words than a segment holds"),
            ));
        }
        self.merge_segments(segment, words)
    }
}
