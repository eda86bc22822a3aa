//! Putting back the tasks of dead workers, and counting what is queued and claimed.

use super::{Frontier, scripts};
use crate::error::Result;
use crate::namespace::WorkerId;

impl Frontier {
    /// Requeues the tasks of every worker whose membership lease has expired; returns how many
    /// tasks came back. Any process may call it periodically (the leader, typically): it is
    /// idempotent and each worker's requeue is one atomic script.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("requeue_dead example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let members = Membership::new(link, ns);
    /// let me = WorkerId::new("w")?;
    /// members.join(&me).await?;
    /// frontier.push(&[NewTask::from_url("https://a.example/")?]).await?;
    /// let Claim::Task(_) = frontier.claim(&me).await? else { panic!() };
    /// assert_eq!(frontier.requeue_dead().await?, 0); // still alive
    /// members.leave(&me).await?;                    // as if its lease expired
    /// assert_eq!(frontier.requeue_dead().await?, 1);
    /// assert_eq!(frontier.pending().await?, 1);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn requeue_dead(&self) -> Result<u64> {
        let workers: Vec<String> = self
            .link
            .run("list workers", |mut conn| {
                let key = self.keys.workers.clone();
                async move { redis::cmd("SMEMBERS").arg(key).query_async(&mut conn).await }
            })
            .await?;
        let mut total = 0;
        for name in workers {
            let Ok(worker) = WorkerId::new(&name) else {
                continue;
            };
            total += self.requeue(&worker, false).await?;
        }
        Ok(total)
    }

    /// Requeues every task `worker` holds, alive or not (for a worker that knows it is
    /// shutting down, or an operator's decision). Returns how many tasks came back.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("requeue_worker example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// frontier.push(&[NewTask::from_url("https://a.example/")?]).await?;
    /// let Claim::Task(task) = frontier.claim(&me).await? else { panic!() };
    /// assert_eq!(frontier.requeue_worker(&me).await?, 1);
    /// assert!(!frontier.ack(&task).await?); // the claim is stale now
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn requeue_worker(&self, worker: &WorkerId) -> Result<u64> {
        self.requeue(worker, true).await
    }

    async fn requeue(&self, worker: &WorkerId, force: bool) -> Result<u64> {
        let generation = self.generation().await?;
        let proc_key = self.proc_key(worker);
        let member_key = self.ns.member(worker);
        let n: i64 = self
            .link
            .run("requeue", |mut conn| {
                let mut call = scripts().requeue.prepare_invoke();
                call.key(&proc_key)
                    .key(&self.keys.busy)
                    .key(&self.keys.ready)
                    .key(&self.keys.workers)
                    .key(&self.keys.pending)
                    .key(&member_key)
                    .arg(&self.keys.queue_prefix)
                    .arg(worker.as_str())
                    .key(&self.keys.generation)
                    .arg(if force { "1" } else { "0" })
                    .arg(&self.keys.wake)
                    .arg(&generation);
                async move { call.invoke_async(&mut conn).await }
            })
            .await
            .map_err(|e| self.reset_or(e))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Tasks waiting in host queues (not counting claimed ones).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("pending example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, Link, Namespace, NewTask};
    /// let frontier = Frontier::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// frontier.push(&[NewTask::from_url("https://a.example/")?]).await?;
    /// assert_eq!(frontier.pending().await?, 1);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn pending(&self) -> Result<u64> {
        let key = self.keys.pending.clone();
        let n: Option<i64> = self
            .link
            .run("pending", |mut conn| {
                let key = key.clone();
                async move { redis::cmd("GET").arg(key).query_async(&mut conn).await }
            })
            .await?;
        Ok(n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
    }

    /// Tasks claimed and not yet acknowledged, over all workers.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("in_flight example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, Link, Namespace};
    /// let frontier = Frontier::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(frontier.in_flight().await?, 0);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn in_flight(&self) -> Result<u64> {
        let workers: Vec<String> = self
            .link
            .run("list workers", |mut conn| {
                let key = self.keys.workers.clone();
                async move { redis::cmd("SMEMBERS").arg(key).query_async(&mut conn).await }
            })
            .await?;
        let mut total = 0u64;
        for name in workers {
            let key = self.ns.key(&format!("proc:{name}"));
            let n: u64 = self
                .link
                .run("count claimed", |mut conn| {
                    let key = key.clone();
                    async move { redis::cmd("HLEN").arg(key).query_async(&mut conn).await }
                })
                .await?;
            total += n;
        }
        Ok(total)
    }
}
