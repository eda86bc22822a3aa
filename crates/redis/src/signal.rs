//! Pub/sub wake-ups that degrade to polling: a lost message or a dropped subscription costs a
//! poll interval, never a missed change, because waiters always re-read the state itself.

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::link::Link;

/// A lazily (re)connected subscription to one channel.
pub(crate) struct Subscription {
    link: Link,
    channel: String,
    messages: Option<UnboundedReceiver<()>>,
}

impl Subscription {
    pub(crate) fn new(link: Link, channel: String) -> Self {
        Self {
            link,
            channel,
            messages: None,
        }
    }

    /// Subscribes if not subscribed; false when Redis cannot be reached right now.
    pub(crate) async fn ensure(&mut self, within: Duration) -> bool {
        if self.messages.is_some() {
            return true;
        }
        match self.link.subscribe(&self.channel, within).await {
            Ok(messages) => {
                self.messages = Some(messages);
                true
            }
            Err(_) => false,
        }
    }

    /// Waits up to `wait` for a message; true if one came. Sleeps out the wait when the
    /// subscription cannot be (re)established, so callers simply poll.
    pub(crate) async fn wait(&mut self, wait: Duration) -> bool {
        let start = tokio::time::Instant::now();
        if !self.ensure(wait).await {
            tokio::time::sleep(wait.saturating_sub(start.elapsed())).await;
            return false;
        }
        let Some(messages) = self.messages.as_mut() else {
            return false;
        };
        let left = wait.saturating_sub(start.elapsed());
        match tokio::time::timeout(left, messages.recv()).await {
            Ok(Some(())) => {
                // Several wake-ups may be queued; one re-check covers them all.
                while messages.try_recv().is_ok() {}
                true
            }
            Ok(None) => {
                self.messages = None;
                false
            }
            Err(_) => false,
        }
    }
}
