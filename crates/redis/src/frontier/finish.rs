//! Ending claims: acknowledged, released, or committed with the tasks they found; and the
//! politeness settings of a host.

use std::time::Duration;

use super::{Frontier, MAX_BATCH, PUSH_CHUNK, PUSH_TOKEN_TTL_MS, scripts};
use crate::error::{Error, Result};
use crate::namespace::{WorkerId, random_u64};
use crate::task::{ClaimedTask, NewTask};

impl Frontier {
    /// Marks a claimed task done and frees its host. Returns `false` when the claim is stale:
    /// the worker was presumed dead and the task requeued (another worker will crawl it again,
    /// which at-least-once allows). Acknowledging twice is harmless.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when Redis stays unreachable; the task stays claimed, and will be
    /// requeued if the worker dies before acknowledging it.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("ack example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// frontier.push(&[NewTask::from_url("https://a.example/")?]).await?;
    /// let Claim::Task(task) = frontier.claim(&me).await? else { panic!() };
    /// assert!(frontier.ack(&task).await?);
    /// assert!(!frontier.ack(&task).await?);
    /// assert_eq!(frontier.in_flight().await?, 0);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn ack(&self, task: &ClaimedTask) -> Result<bool> {
        Ok(self.finish(std::slice::from_ref(task), "ack").await? == 1)
    }

    /// [`ack`](Self::ack) for many tasks, one round trip per worker and 256 tasks;
    /// returns how many claims it ended (stale ones are not counted).
    ///
    /// # Errors
    ///
    /// As for [`ack`](Self::ack).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("ack_batch example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// let urls = ["https://a.example/", "https://b.example/"];
    /// frontier.push(&urls.map(|u| NewTask::from_url(u).unwrap())).await?;
    /// let claimed = frontier.claim_batch(&me, 10).await?;
    /// assert_eq!(claimed.len(), 2);
    /// assert_eq!(frontier.ack_batch(&claimed).await?, 2);
    /// assert_eq!(frontier.ack_batch(&claimed).await?, 0);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn ack_batch(&self, tasks: &[ClaimedTask]) -> Result<u64> {
        self.finish(tasks, "ack").await
    }

    /// Gives a claimed task back, to the front of its host's queue (for a fetch that should be
    /// retried later), and frees the host. Returns `false` when the claim is stale.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("release example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// frontier.push(&[NewTask::from_url("https://a.example/")?]).await?;
    /// let Claim::Task(task) = frontier.claim(&me).await? else { panic!() };
    /// assert!(frontier.release(&task).await?);
    /// let Claim::Task(again) = frontier.claim(&me).await? else { panic!() };
    /// assert_eq!(again.id(), task.id());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn release(&self, task: &ClaimedTask) -> Result<bool> {
        Ok(self.finish(std::slice::from_ref(task), "release").await? == 1)
    }

    /// Ends claims, grouped by worker, `MAX_BATCH` per script.
    async fn finish(&self, tasks: &[ClaimedTask], mode: &'static str) -> Result<u64> {
        let generation = self.generation().await?;
        let delay_ms = self.settings.host_delay.as_millis() as u64;
        let mut by_worker: Vec<(&WorkerId, Vec<&ClaimedTask>)> = Vec::new();
        for task in tasks {
            match by_worker.iter_mut().find(|(w, _)| *w == &task.worker) {
                Some((_, held)) => held.push(task),
                None => by_worker.push((&task.worker, vec![task])),
            }
        }
        let mut ended = 0;
        for (worker, held) in by_worker {
            let proc_key = self.proc_key(worker);
            for chunk in held.chunks(MAX_BATCH) {
                let n: i64 = self
                    .link
                    .run("finish task", |mut conn| {
                        let mut call = scripts().finish.prepare_invoke();
                        call.key(&proc_key)
                            .key(&self.keys.busy)
                            .key(&self.keys.ready)
                            .key(&self.keys.pending)
                            .key(&self.keys.acked)
                            .key(&self.keys.delays)
                            .key(&self.keys.generation)
                            .arg(&self.keys.queue_prefix)
                            .arg(delay_ms)
                            .arg(&self.keys.wake)
                            .arg(mode);
                        for task in chunk {
                            call.arg(format!("{:016x}", task.token));
                        }
                        call.arg(&generation);
                        async move { call.invoke_async(&mut conn).await }
                    })
                    .await
                    .map_err(|e| self.reset_or(e))?;
                ended += u64::try_from(n).unwrap_or(0);
            }
        }
        Ok(ended)
    }

    /// Queues the tasks that `done` (claims of `worker`) produced, then acknowledges `done`,
    /// in one atomic script: what a crawler calls once a page's links are admitted, one round
    /// trip instead of a push and an ack. A host already given `host_budget` tasks through
    /// this method refuses more (0: no budget); the answer says, per task, whether it was
    /// queued. Retried after a lost reply, the script does nothing twice.
    ///
    /// Every claim of `done` must be `worker`'s. Past 1,000 tasks or 256 claims, the work is
    /// split: the earlier scripts only queue, the last one also acknowledges.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTask`] for a URL longer than
    /// [`max_url_len`](crate::FrontierSettings::max_url_len) or a claim of another worker (nothing is
    /// done); [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("commit example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// frontier.push(&[NewTask::from_url("https://a.example/")?]).await?;
    /// let page = frontier.claim_batch(&me, 1).await?;
    /// let links = ["https://a.example/1", "https://a.example/2", "https://b.example/"];
    /// let links: Vec<NewTask> = links.iter().map(|u| NewTask::from_url(u).unwrap()).collect();
    /// // A budget of one task per host: a.example's second link is refused.
    /// assert_eq!(frontier.commit(&me, &links, 1, &page).await?, [true, false, true]);
    /// assert_eq!((frontier.pending().await?, frontier.in_flight().await?), (2, 0));
    /// assert_eq!(frontier.acked().await?, 1);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn commit(
        &self,
        worker: &WorkerId,
        tasks: &[NewTask],
        host_budget: u64,
        done: &[ClaimedTask],
    ) -> Result<Vec<bool>> {
        if tasks
            .iter()
            .any(|t| t.url().len() > self.settings.max_url_len)
        {
            return Err(Error::InvalidTask("url is longer than max_url_len"));
        }
        if done.iter().any(|t| &t.worker != worker) {
            return Err(Error::InvalidTask("a claim of another worker"));
        }
        let generation = self.generation().await?;
        let proc_key = self.proc_key(worker);
        let delay_ms = self.settings.host_delay.as_millis() as u64;
        let task_chunks: Vec<&[NewTask]> = tasks.chunks(PUSH_CHUNK).collect();
        let claim_chunks: Vec<&[ClaimedTask]> = done.chunks(MAX_BATCH).collect();
        let steps = task_chunks.len().max(claim_chunks.len()).max(1);
        let mut queued = Vec::with_capacity(tasks.len());
        for step in 0..steps {
            let chunk = task_chunks.get(step).copied().unwrap_or_default();
            let acks = claim_chunks.get(step).copied().unwrap_or_default();
            let token_key = self.ns.key(&format!("commit:{:016x}", random_u64()));
            let answer: String = self
                .link
                .run("commit", |mut conn| {
                    let mut call = scripts().commit.prepare_invoke();
                    call.key(&self.keys.ready)
                        .key(&self.keys.busy)
                        .key(&self.keys.ids)
                        .key(&self.keys.pending)
                        .key(&token_key)
                        .key(&proc_key)
                        .key(&self.keys.queued_per_host)
                        .key(&self.keys.acked)
                        .key(&self.keys.delays)
                        .key(&self.keys.next_start)
                        .key(&self.keys.generation)
                        .arg(&self.keys.queue_prefix)
                        .arg(&self.keys.wake)
                        .arg(PUSH_TOKEN_TTL_MS)
                        .arg(self.settings.host_concurrency.max(1))
                        .arg(host_budget)
                        .arg(delay_ms)
                        .arg(chunk.len());
                    for task in chunk {
                        call.arg(task.host()).arg(task.body());
                    }
                    for claim in acks {
                        call.arg(format!("{:016x}", claim.token));
                    }
                    call.arg(&generation);
                    async move { call.invoke_async(&mut conn).await }
                })
                .await
                .map_err(|e| self.reset_or(e))?;
            if answer.len() != chunk.len() {
                return Err(Error::Corrupt {
                    key: token_key,
                    detail: format!("commit answered {answer:?} for {} tasks", chunk.len()),
                });
            }
            queued.extend(answer.bytes().map(|b| b == b'1'));
        }
        Ok(queued)
    }

    /// Gives `host` its own politeness delay, in place of
    /// [`host_delay`](crate::FrontierSettings::host_delay), for every worker: what its robots.txt
    /// asks (`Crawl-delay`), learnt by whichever worker read it first. Its claims start at least
    /// this long apart from then on, and its next one at least this long from now (a request
    /// to it may have started just before).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("set_host_delay example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// let urls = ["https://slow.example/1", "https://slow.example/2"];
    /// frontier.push(&urls.map(|u| NewTask::from_url(u).unwrap())).await?;
    /// let first = frontier.claim_batch(&me, 10).await?;
    /// // Its robots.txt, read before the first request, asks for a minute between requests.
    /// frontier.set_host_delay("slow.example", Duration::from_secs(60)).await?;
    /// frontier.ack_batch(&first).await?;
    /// // The second is due a minute later.
    /// assert!(frontier.claim_batch(&me, 10).await?.is_empty());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn set_host_delay(&self, host: &str, delay: Duration) -> Result<()> {
        let ms = delay.as_millis() as u64;
        self.link
            .run("set host delay", |mut conn| {
                let mut call = scripts().host_delay.prepare_invoke();
                call.key(&self.keys.delays)
                    .key(&self.keys.next_start)
                    .key(&self.keys.ready)
                    .arg(host)
                    .arg(ms);
                async move { call.invoke_async::<i64>(&mut conn).await }
            })
            .await?;
        Ok(())
    }

    /// Tasks acknowledged so far, over all workers ([`ack`](Self::ack),
    /// [`ack_batch`](Self::ack_batch), [`commit`](Self::commit)).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("acked example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, Link, Namespace};
    /// let frontier = Frontier::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(frontier.acked().await?, 0);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn acked(&self) -> Result<u64> {
        let key = self.keys.acked.clone();
        let n: Option<u64> = self
            .link
            .run("acked", |mut conn| {
                let key = key.clone();
                async move { redis::cmd("GET").arg(key).query_async(&mut conn).await }
            })
            .await?;
        Ok(n.unwrap_or(0))
    }
}
