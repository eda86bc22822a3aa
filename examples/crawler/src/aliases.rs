//! Aliases queued before their rule was confirmed: skipped when they come up for fetching.
//!
//! Admission skips a link that the confirmed rules map onto a URL already done
//! ([`crate::admission`], step 6). A link queued before its rule was confirmed passed that
//! step with no rule to apply: a wiki's articles each link the sign-in form with their own
//! return address, a level below the articles, so a breadth-first crawl queues hundreds of
//! the form's URLs before it fetches the first. When such a URL comes up for fetching, the
//! confirmed rules map it onto the URL of a page this process fetched, and it is skipped
//! there, naming the rule.
//!
//! The committer writes ([`crate::dust::Dust`] keeps these up to date); the dispatcher reads.
//! Only hosts with confirmed rules are kept: each fetched URL of such a host, and its rewrite.

use std::collections::HashSet;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::dust::Applied;

/// The fetched pages of hosts with confirmed rules, by URL and by rewrite, with those rules.
/// Cheap to clone: clones share one state.
#[derive(Clone, Debug, Default)]
pub(crate) struct FetchedAliases(Arc<RwLock<Inner>>);

#[derive(Debug, Default)]
struct Inner {
    applied: Applied,
    keys: HashSet<String>,
}

impl FetchedAliases {
    /// The confirmed rules to apply from now on.
    pub(crate) fn set_rules(&self, applied: Applied) {
        self.write().applied = applied;
    }

    /// Records fetched URLs (and their rewrites, computed by the caller).
    pub(crate) fn insert(&self, keys: impl IntoIterator<Item = String>) {
        self.write().keys.extend(keys);
    }

    /// Why `url` (canonical) need not be fetched: the rules that map it onto a fetched page,
    /// and that page's URL, or its rewrite.
    pub(crate) fn skip(&self, url: &str) -> Option<String> {
        let inner = self.read();
        // The rules' names only for a URL skipped: most URLs come through unchanged or new.
        let key = inner.applied.key(url)?;
        if !inner.keys.contains(&key) {
            return None;
        }
        let (key, why) = inner.applied.rewrite(url)?;
        Some(format!("{why} -> {key}"))
    }

    /// How many URLs and rewrites are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.read().keys.len()
    }

    // A panic while holding the lock cannot leave the set half-written in a way that matters:
    // at worst a key is missing, and an alias is fetched.
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.0.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.0.write().unwrap_or_else(|p| p.into_inner())
    }
}
