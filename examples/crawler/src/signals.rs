//! Ctrl-C (SIGINT) and SIGTERM, for the local and the shared crawl alike.
//!
//! The first signal asks the crawl to **drain**: no new fetch starts, the ones in flight finish
//! and are committed, then the run ends the way it always does (a checkpoint, or leaving the
//! shared crawl). The second signal **ends the process at once**: the crawl gets one chance to
//! flush what it has written (`abort`), then the process exits with status 128 + the signal
//! number. Both are resumable: everything committed is journaled (or acknowledged in Redis)
//! before the crawl acts on it, so the next run loses nothing and fetches again only the
//! requests that were in flight, exactly as after `kill -9`.
//!
//! Each signal kind is a stream ([`tokio::signal::unix::Signal`]), polled again for every
//! delivery; a one-shot future such as `tokio::signal::ctrl_c()` must not be polled after it
//! completed, and installing it replaces the default action, so a second Ctrl-C would be
//! swallowed.

use std::io;

use tokio::task::JoinHandle;

/// What a signal asks the crawl to do.
pub(crate) struct Handlers<D, A> {
    /// Stop starting fetches and finish the ones in flight (first signal).
    pub(crate) drain: D,
    /// Flush what is written, just before the process exits (second signal).
    pub(crate) abort: A,
}

/// Installs the handlers now (a signal arriving from here on is not lost) and serves them on a
/// background task until the process ends.
///
/// # Errors
///
/// The signal handlers could not be installed.
pub(crate) fn listen<D, A>(handlers: Handlers<D, A>) -> io::Result<JoinHandle<()>>
where
    D: FnOnce() + Send + 'static,
    A: FnOnce() + Send + 'static,
{
    let mut signals = Signals::install()?;
    Ok(tokio::spawn(async move {
        let Handlers { drain, abort } = handlers;
        let Some(first) = signals.next().await else {
            return;
        };
        eprintln!(
            "interrupted ({}): finishing the requests in flight, then stopping; \
             signal again to stop at once (the next run resumes)",
            first.name
        );
        drain();
        let Some(second) = signals.next().await else {
            return;
        };
        eprintln!(
            "interrupted again ({}): stopping at once; the next run resumes and fetches the \
             requests in flight again",
            second.name
        );
        abort();
        std::process::exit(128 + second.number);
    }))
}

/// One delivered signal.
struct Delivered {
    name: &'static str,
    number: i32,
}

#[cfg(unix)]
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn install() -> io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// The next signal; `None` once no more can arrive.
    async fn next(&mut self) -> Option<Delivered> {
        const SIGINT: i32 = 2;
        const SIGTERM: i32 = 15;
        tokio::select! {
            Some(()) = self.interrupt.recv() => Some(Delivered { name: "SIGINT", number: SIGINT }),
            Some(()) = self.terminate.recv() => Some(Delivered { name: "SIGTERM", number: SIGTERM }),
            else => None,
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> io::Result<Self> {
        Ok(Self)
    }

    /// The next Ctrl-C: a fresh future each time, so none is polled after it completed.
    async fn next(&mut self) -> Option<Delivered> {
        tokio::signal::ctrl_c().await.ok()?;
        Some(Delivered {
            name: "Ctrl-C",
            number: 2,
        })
    }
}
