//! Counts per outcome, and the summary `--stats` prints.

use std::time::Duration;

use url_dedup::UrlDedup;

/// What happened to the input lines.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) lines: u64,
    pub(crate) new: u64,
    pub(crate) duplicate: u64,
    pub(crate) similar: u64,
    pub(crate) invalid: u64,
    pub(crate) empty: u64,
    /// The sum, over the URLs kept, of the filter's false-positive rate when each was looked
    /// up: the expected number of distinct URLs this run dropped by mistake.
    pub(crate) expected_false_drops: f64,
    /// The filter's false-positive rate when the sum above was last brought up to date.
    pub(crate) rate_counted: Option<f64>,
    /// Where the deciding thread's time went, when the system says.
    pub(crate) decider: Option<ThreadTimes>,
}

/// Where one thread's time went: running, waiting for a core (other threads and processes
/// had them), and the rest of the wall time, waiting for work or for its output.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ThreadTimes {
    pub(crate) running: f64,
    pub(crate) waiting_for_core: f64,
}

impl ThreadTimes {
    /// The calling thread's times so far, in seconds, where the kernel keeps them (Linux
    /// `/proc/thread-self/schedstat`).
    pub(crate) fn now() -> Option<Self> {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
        let (Some(Ok(running)), Some(Ok(waiting))) = (fields.next(), fields.next()) else {
            return None;
        };
        Some(Self {
            running: running as f64 / 1e9,
            waiting_for_core: waiting as f64 / 1e9,
        })
    }

    /// The times between `start` and `self`.
    pub(crate) fn since(self, start: Self) -> Self {
        Self {
            running: self.running - start.running,
            waiting_for_core: self.waiting_for_core - start.waiting_for_core,
        }
    }
}

impl Stats {
    pub(crate) fn report(&self, dedup: &UrlDedup, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let memory = dedup.memory_bytes();
        let urls = dedup.estimated_urls();
        let per_url = if urls.is_finite() && urls >= 1.0 {
            format!("{:.2} bytes per URL held", memory as f64 / urls)
        } else {
            "in Redis".to_owned()
        };
        let rate = dedup.false_positive_rate();
        let drops = if rate.is_finite() {
            format!(
                "{:.2e} expected (false-positive rate now {rate:.1e})",
                self.expected_false_drops
            )
        } else {
            "not known (the filter is in Redis)".to_owned()
        };
        let decider = self
            .decider
            .map(|t| {
                let idle = (secs - t.running - t.waiting_for_core).max(0.0);
                format!(
                    "deciding    {:>12.3} s on a core, {:.3} s waiting for one, {:.3} s for \
                     input or output\n",
                    t.running, t.waiting_for_core, idle
                )
            })
            .unwrap_or_default();
        let similar_rate = dedup
            .similarity_false_positive_rate()
            .map(|r| format!("similar rate {r:>11.1e} (a new feature value taken for seen, now)\n"))
            .unwrap_or_default();
        format!(
            "lines       {:>12}\n\
             new (kept)  {:>12}\n\
             duplicate   {:>12}\n\
             similar     {:>12}\n\
             invalid     {:>12}\n\
             empty       {:>12}\n\
             lost        {drops}\n\
             filter      {:>12} bytes ({per_url})\n\
             {similar_rate}\
             elapsed     {:>12.3} s ({:.0} lines/s)\n\
             {decider}",
            self.lines,
            self.new,
            self.duplicate,
            self.similar,
            self.invalid,
            self.empty,
            memory,
            secs,
            self.lines as f64 / secs,
        )
    }
}
