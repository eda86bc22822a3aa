//! Jobs, the unit of the run queue of document 002, and the set of jobs handed to workers and
//! not yet done, in admission (breadth-first) order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// What a queued URL is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// A page: fetched, stored, its links followed.
    Page,
    /// An XML sitemap: fetched, its entries admitted as pages (or sitemaps, for an index).
    Sitemap,
    /// What a page needs to be shown (image, script, stylesheet, font, icon): fetched whatever
    /// its type and stored in the mirror; a stylesheet's own references are requisites too.
    Requisite,
}

impl JobKind {
    pub(crate) fn code(self) -> char {
        match self {
            Self::Page => 'P',
            Self::Sitemap => 'S',
            Self::Requisite => 'R',
        }
    }

    pub(crate) fn from_code(c: &str) -> Option<Self> {
        match c {
            "P" => Some(Self::Page),
            "S" => Some(Self::Sitemap),
            "R" => Some(Self::Requisite),
            _ => None,
        }
    }
}

/// One admitted URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Job {
    /// Canonical URL.
    pub(crate) url: Arc<str>,
    /// Link distance from a seed.
    pub(crate) depth: u32,
    /// Redirects followed to reach it.
    pub(crate) hops: u32,
    pub(crate) kind: JobKind,
    /// In a shared crawl, the claim on the shared frontier this job was taken from (given
    /// back once the page is committed).
    pub(crate) claim: Option<Arc<crate::shared_queue::Claimed>>,
}

impl Job {
    /// A job of a single-process crawl (or one about to be pushed to the shared frontier).
    pub(crate) fn new(url: &str, depth: u32, hops: u32, kind: JobKind) -> Self {
        Self {
            url: url.into(),
            depth,
            hops,
            kind,
            claim: None,
        }
    }
}

/// Admitted, not yet done URLs, in admission order.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    by_seq: BTreeMap<u64, Job>,
    seq_of: HashMap<Arc<str>, u64>,
    next: u64,
}

impl Pending {
    pub(crate) fn push(&mut self, job: Job) {
        if self.seq_of.contains_key(&job.url) {
            return;
        }
        self.seq_of.insert(job.url.clone(), self.next);
        self.by_seq.insert(self.next, job);
        self.next += 1;
    }

    /// Removes `url`; whether it was pending.
    pub(crate) fn remove(&mut self, url: &str) -> bool {
        match self.seq_of.remove(url) {
            Some(seq) => self.by_seq.remove(&seq).is_some(),
            None => false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.by_seq.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Job> {
        self.by_seq.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(u: &str) -> Job {
        Job {
            url: u.into(),
            depth: 0,
            hops: 0,
            kind: JobKind::Page,
            claim: None,
        }
    }

    #[test]
    fn keeps_admission_order_and_removes() {
        let mut p = Pending::default();
        for u in ["a", "b", "c", "a"] {
            p.push(job(u));
        }
        assert_eq!(p.len(), 3);
        assert!(p.remove("b"));
        assert!(!p.remove("b"));
        assert_eq!(p.iter().map(|j| &*j.url).collect::<Vec<_>>(), ["a", "c"]);
    }
}
