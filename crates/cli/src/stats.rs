//! Counts per outcome, and the summary `--stats` prints.

use std::time::Duration;

/// What happened to the input lines.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) lines: u64,
    pub(crate) new: u64,
    pub(crate) duplicate: u64,
    pub(crate) similar: u64,
    pub(crate) invalid: u64,
    pub(crate) empty: u64,
}

impl Stats {
    pub(crate) fn report(&self, memory_bytes: u64, expected: u64, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let per_url = format!(
            "{:.2} bytes per URL, sized for {expected} URLs",
            memory_bytes as f64 / expected.max(1) as f64
        );
        format!(
            "lines       {:>12}\n\
             new (kept)  {:>12}\n\
             duplicate   {:>12}\n\
             similar     {:>12}\n\
             invalid     {:>12}\n\
             empty       {:>12}\n\
             filter      {:>12} bytes ({per_url})\n\
             elapsed     {:>12.3} s ({:.0} lines/s)\n",
            self.lines,
            self.new,
            self.duplicate,
            self.similar,
            self.invalid,
            self.empty,
            memory_bytes,
            secs,
            self.lines as f64 / secs,
        )
    }
}
