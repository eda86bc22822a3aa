//! Pub/sub wake-ups that degrade to polling: a lost message or a dropped subscription costs a
//! poll interval, never a missed change, because waiters always re-read the state itself.

use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use redis::Client;
use redis::aio::PubSubStream;

/// A lazily (re)connected subscription to one channel.
pub(crate) struct Subscription {
    client: Client,
    channel: String,
    stream: Option<PubSubStream>,
}

impl Subscription {
    pub(crate) fn new(client: Client, channel: String) -> Self {
        Self {
            client,
            channel,
            stream: None,
        }
    }

    /// Subscribes if not subscribed; false when Redis cannot be reached right now.
    pub(crate) async fn ensure(&mut self, within: Duration) -> bool {
        if self.stream.is_some() {
            return true;
        }
        let connect = async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            pubsub.subscribe(&self.channel).await?;
            Ok::<_, redis::RedisError>(pubsub.into_on_message())
        };
        match tokio::time::timeout(within, connect).await {
            Ok(Ok(stream)) => {
                self.stream = Some(stream);
                true
            }
            _ => false,
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
        let Some(stream) = self.stream.as_mut() else {
            return false;
        };
        let left = wait.saturating_sub(start.elapsed());
        match tokio::time::timeout(left, stream.next()).await {
            Ok(Some(_)) => {
                // Several wake-ups may be queued; one re-check covers them all.
                while let Some(Some(_)) = stream.next().now_or_never() {}
                true
            }
            Ok(None) => {
                self.stream = None;
                false
            }
            Err(_) => false,
        }
    }
}
