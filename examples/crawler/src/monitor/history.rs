//! The figures of one process over its run, for the status page's charts: at most
//! [`CAPACITY`] samples, evenly spaced. When the series is full every other sample goes and
//! the spacing doubles, so it always spans the whole run in bounded memory (a few KB), at
//! the resolution of a sample every couple of seconds for the first minutes.

/// Most samples kept (besides the newest, which is always shown).
pub(crate) const CAPACITY: usize = 240;

/// The window over which the "recent" page rate is measured, in seconds.
const RECENT_SECS: f64 = 10.0;

/// The figures at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub(crate) struct Sample {
    /// Seconds since the process started.
    pub(crate) at: f64,
    /// Pages fetched so far.
    pub(crate) fetched: u64,
    /// Failed fetches and 4xx/5xx answers so far.
    pub(crate) errors: u64,
    /// URLs waiting in the run queue then.
    pub(crate) queued: u64,
}

/// A bounded, evenly spaced series of samples.
#[derive(Debug)]
pub(crate) struct History {
    kept: Vec<Sample>,
    /// The newest sample, shown whether or not the spacing keeps it.
    newest: Option<Sample>,
    /// Samples pushed so far.
    pushed: u64,
    /// Every `stride`-th pushed sample is kept.
    stride: u64,
}

impl Default for History {
    fn default() -> Self {
        Self {
            kept: Vec::with_capacity(CAPACITY),
            newest: None,
            pushed: 0,
            stride: 1,
        }
    }
}

impl History {
    /// Adds the figures of now.
    pub(crate) fn push(&mut self, sample: Sample) {
        if self.pushed.is_multiple_of(self.stride) {
            if self.kept.len() == CAPACITY {
                // Keeps the samples pushed at multiples of twice the stride: the spacing
                // stays even.
                let mut i = 0;
                self.kept.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
            if self.pushed.is_multiple_of(self.stride) {
                self.kept.push(sample);
            }
        }
        self.pushed += 1;
        self.newest = Some(sample);
    }

    /// The samples to chart, oldest first: the kept ones and the newest.
    pub(crate) fn points(&self) -> Vec<Sample> {
        let mut points = self.kept.clone();
        if let Some(newest) = self.newest
            && points.last() != Some(&newest)
        {
            points.push(newest);
        }
        points
    }

    /// Pages per second between the newest sample and the latest one at least
    /// [`RECENT_SECS`] older (or the oldest); 0 before there are two samples.
    pub(crate) fn recent_rate(&self) -> f64 {
        let points = self.points();
        let Some(newest) = points.last() else {
            return 0.0;
        };
        let older = points
            .iter()
            .rev()
            .find(|s| s.at <= newest.at - RECENT_SECS)
            .or(points.first())
            .copied()
            .unwrap_or_default();
        rate(&older, newest)
    }
}

/// Pages per second from `a` to `b` (0 when no time passed).
pub(crate) fn rate(a: &Sample, b: &Sample) -> f64 {
    let secs = b.at - a.at;
    if secs > 0.0 {
        b.fetched.saturating_sub(a.fetched) as f64 / secs
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(i: u64) -> Sample {
        Sample {
            at: 2.0 * i as f64,
            fetched: 10 * i,
            errors: i / 7,
            queued: 10_000 - i,
        }
    }

    /// However long the run, the series stays within its capacity, spans the whole run,
    /// keeps its samples evenly spaced and always ends with the newest.
    #[test]
    fn the_series_spans_the_run_in_bounded_room() {
        let mut h = History::default();
        for n in 1..=5_000u64 {
            h.push(at(n - 1));
            let points = h.points();
            assert!(points.len() <= CAPACITY + 1, "{n}: {}", points.len());
            assert_eq!(points[0], at(0));
            assert_eq!(*points.last().unwrap(), at(n - 1));
            let kept = &h.kept;
            let steps: Vec<f64> = kept.windows(2).map(|w| w[1].at - w[0].at).collect();
            assert!(steps.windows(2).all(|w| w[0] == w[1]), "{n}: {steps:?}");
        }
        assert!(h.kept.len() >= CAPACITY / 2);
    }

    #[test]
    fn the_recent_rate_is_measured_over_ten_seconds() {
        let mut h = History::default();
        assert_eq!(h.recent_rate(), 0.0);
        h.push(at(0));
        assert_eq!(h.recent_rate(), 0.0);
        h.push(at(1));
        // 10 pages in 2 s.
        assert_eq!(h.recent_rate(), 5.0);
        for i in 2..20 {
            h.push(at(i));
        }
        h.push(Sample {
            at: 40.0,
            fetched: 290,
            ..at(20)
        });
        // From the sample at 30 s (150 pages) to the one at 40 s: 140 pages in 10 s.
        assert_eq!(h.recent_rate(), 14.0);
    }
}
