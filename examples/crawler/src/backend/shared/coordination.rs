//! Membership, leadership and the stop flag of a shared crawl: one beat every third of the
//! lease, from the engine's housekeeping.
//!
//! **Faults.** Every Redis call retries for `--redis-give-up-ms`; a call that gives up stops
//! the process with one clear error. A pause or outage shorter than that is ridden out:
//!
//! * a process whose membership lease lapsed meanwhile joins again (at its next beat, or at
//!   its next claim, which Redis refuses to a non-member);
//! * the leader requeues the claims of processes whose lease expired, but only once it has
//!   itself been in touch with Redis for a whole lease since it took the lead or since its
//!   last gap: after a pause every lease has lapsed at once, and every live process rejoins
//!   within a third of a lease, so nothing a live process holds is handed out again. A
//!   process that really died is still requeued, one lease later.

use std::time::Duration;

use tokio::time::Instant;
use url_dedup_redis::Epoch;

use super::SharedBackend;
use crate::error::CrawlError;

/// This process's leadership.
#[derive(Debug, Default)]
pub(crate) struct Leadership {
    /// The lease's fencing epoch, while this process leads.
    epoch: Option<Epoch>,
    /// Since when this process has led in unbroken touch with Redis.
    since: Option<Instant>,
    /// When its last beat went through.
    last_beat: Option<Instant>,
}

/// One beat: heartbeats (joining again where a lease lapsed), the leader's duties, the stop
/// flag. Returns whether the stop flag is raised.
pub(crate) async fn beat(b: &SharedBackend) -> Result<bool, CrawlError> {
    if !heartbeat(b).await? {
        b.logger
            .warn("membership lease lapsed (Redis paused or unreachable?); joined again")
            .await;
    }
    let epoch = b.epoch();
    match lead(b).await {
        Ok(0) => {}
        Ok(n) => {
            b.logger
                .warn(&format!("requeued {n} URLs of a dead process"))
                .await
        }
        Err(e) => b.recover(epoch, e).await?,
    }
    stop_raised(b).await
}

/// Renews every lease; joins again where one lapsed. Returns whether all were still held.
async fn heartbeat(b: &SharedBackend) -> Result<bool, CrawlError> {
    b.called(1 + b.members.len());
    let mut held = b.main.heartbeat(&b.me).await?;
    if !held {
        b.main.join(&b.me).await?;
    }
    for m in &b.members {
        if !m.heartbeat(&b.me).await? {
            held = false;
            m.join(&b.me).await?;
        }
    }
    Ok(held)
}

/// Holds or takes the leader lease; a leader in touch with Redis for a whole lease requeues
/// the claims of dead processes. Returns how many URLs came back.
async fn lead(b: &SharedBackend) -> Result<u64, CrawlError> {
    b.called(1);
    let mut leader = b.leader.lock().await;
    let now = Instant::now();
    // A beat much later than due means this process lost touch with Redis meanwhile (or was
    // paused itself): other processes may not have had the chance to renew their leases.
    let gap = leader
        .last_beat
        .is_some_and(|last| now - last > b.lease_ttl / 2);
    let renewed = match leader.epoch {
        Some(epoch) => b.lease.renew(&b.me, epoch).await?,
        None => false,
    };
    if !renewed {
        leader.epoch = b.lease.try_acquire(&b.me).await?;
        leader.since = leader.epoch.map(|_| now);
    } else if gap {
        leader.since = Some(now);
    }
    leader.last_beat = Some(Instant::now());
    let settled = leader
        .since
        .is_some_and(|since| now - since >= b.lease_ttl + grace(b.lease_ttl));
    if leader.epoch.is_none() || !settled {
        return Ok(0);
    }
    let mut n = 0;
    for f in &b.store().stripes {
        b.called(1);
        n += f.requeue_dead().await?;
    }
    Ok(n)
}

/// Extra time a new leader leaves the other processes to renew: a beat's worth.
fn grace(lease: Duration) -> Duration {
    lease / 3
}

/// Whether the crawl's stop flag is raised.
pub(crate) async fn stop_raised(b: &SharedBackend) -> Result<bool, CrawlError> {
    let flag: Option<String> = b
        .query("read the stop flag", redis::cmd("GET").arg(&b.keys.stop))
        .await?;
    Ok(flag.is_some())
}

/// Gives back every URL this process still holds (claimed, not committed) and leaves.
pub(crate) async fn leave(b: &SharedBackend) -> Result<(), CrawlError> {
    for (frontier, members) in b.store().stripes.iter().zip(&b.members) {
        b.called(2);
        frontier.requeue_worker(&b.me).await?;
        members.leave(&b.me).await?;
    }
    b.called(1);
    b.main.leave(&b.me).await?;
    if let Some(epoch) = b.leader.lock().await.epoch.take() {
        b.called(1);
        b.lease.release(&b.me, epoch).await?;
    }
    Ok(())
}
