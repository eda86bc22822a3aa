//! Every structure of the crate against a real redis-server that stops answering: paused
//! (SIGSTOP), killed and restarted from its append-only file, or gone for good. One layer, one
//! rule: an outage shorter than the give-up budget is ridden out by every call made during
//! it; once Redis has been unreachable for the budget, every call fails at once, however
//! many structures are waiting on it.

use std::sync::Arc;
use std::time::Duration;

use url_dedup_redis::testing::{RedisServer, runtime};
use url_dedup_redis::{
    Backoff, Error, Frontier, GlobalIds, LeaderLease, Link, LinkStats, Membership, Namespace,
    NewTask, SharedConfig, SharedFilter, StoreOptions, WorkerId,
};

/// Every structure of one process, on one Redis.
struct Everything {
    link: Link,
    frontier: Frontier,
    members: Membership,
    lease: LeaderLease,
    config: SharedConfig,
    ids: GlobalIds,
    filter: Arc<SharedFilter>,
    me: WorkerId,
}

impl Everything {
    /// Opens every structure on `url` with `backoff` and makes one call of each, so that
    /// each has its connections and its state in Redis.
    async fn open(url: &str, backoff: Backoff) -> Self {
        let link = Link::connect_with(url, backoff).await.unwrap();
        let ns = Namespace::new("outage").unwrap();
        let me = WorkerId::new("w1").unwrap();
        let options = StoreOptions {
            backoff,
            ..StoreOptions::new("seen")
        };
        let url = url.to_owned();
        let filter = tokio::task::spawn_blocking(move || {
            SharedFilter::open(&url, options, 10_000, 0.01).unwrap()
        })
        .await
        .unwrap();
        let all = Self {
            frontier: Frontier::new(link.clone(), ns.clone()),
            members: Membership::new(link.clone(), ns.clone()),
            lease: LeaderLease::new(link.clone(), ns.clone()),
            config: SharedConfig::new(link.clone(), ns.clone()),
            ids: GlobalIds::new(link.clone(), ns),
            filter: Arc::new(filter),
            link,
            me,
        };
        all.members.join(&all.me).await.unwrap();
        for (name, result) in all.every_call(0).await {
            result.unwrap_or_else(|e| panic!("{name} before the outage: {e}"));
        }
        all
    }

    /// One call of every structure, all at once; `round` makes their data new.
    async fn every_call(&self, round: u32) -> Vec<(&'static str, Result<(), Error>)> {
        let url = format!("https://outage.example/{round}");
        let task = NewTask::from_url(&url).unwrap();
        let filter = self.filter.clone();
        let admitted = url.clone();
        let round_text = round.to_string();
        let fields = [("round", round_text.as_str())];
        let (push, claim, wait, beat, lease, config, id, seen) = tokio::join!(
            self.frontier.push(std::slice::from_ref(&task)),
            self.frontier.claim(&self.me),
            self.frontier
                .claim_wait(&self.me, Duration::from_millis(50)),
            self.members.heartbeat(&self.me),
            self.lease.try_acquire(&self.me),
            self.config.set(&fields),
            self.ids.next(),
            async move {
                tokio::task::spawn_blocking(move || filter.try_check_and_insert(&admitted))
                    .await
                    .unwrap()
            },
        );
        vec![
            ("frontier push", push.map(drop)),
            ("frontier claim", claim.map(drop)),
            ("frontier claim_wait (wake-ups)", wait.map(drop)),
            ("membership heartbeat", beat.map(drop)),
            ("leader lease", lease.map(drop)),
            ("shared config", config.map(drop)),
            ("global ids", id.map(drop)),
            ("shared filter", seen.map(drop)),
        ]
    }

    /// How many calls [`every_call`](Self::every_call) makes.
    const CALLS: u64 = 8;

    fn stats(&self) -> LinkStats {
        self.link.stats()
    }

    /// Waits until the calls under way have failed `failures` more times than `before`: the
    /// outage has been met, and retried, by the calls made during it.
    async fn until_failed(&self, before: LinkStats, failures: u64) {
        while self.stats().failed_attempts < before.failed_attempts + failures {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// A backoff whose replies time out quickly, so that calls made while Redis does not answer
/// fail and retry, and whose budget no outage of these tests comes near.
fn patient() -> Backoff {
    Backoff {
        response_timeout: Duration::from_millis(200),
        give_up_after: Duration::from_secs(120),
        ..Backoff::default()
    }
}

fn all_ok(results: Vec<(&'static str, Result<(), Error>)>) {
    for (name, result) in results {
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// Redis is paused (SIGSTOP): connections stay open and nothing is answered. Every structure's
/// call made during the pause times out, retries, and succeeds once Redis goes on; none gives
/// up. A membership lease that ran out during the pause is renewed by the next heartbeat,
/// which says it had lapsed.
#[test]
fn a_pause_shorter_than_the_budget_is_ridden_out_by_every_structure() {
    let Some(mut server) = RedisServer::start_or_skip("a pause is ridden out") else {
        return;
    };
    let url = server.url();
    runtime().block_on(async {
        let all = Everything::open(&url, patient()).await;
        let short = Membership::with_ttl(
            all.link.clone(),
            Namespace::new("outage-lease").unwrap(),
            Duration::from_millis(100),
        );
        short.join(&all.me).await.unwrap();
        let before = all.stats();
        server.pause().unwrap();
        let calls = async { tokio::join!(all.every_call(1), short.heartbeat(&all.me)) };
        let resume = async {
            // As many failures as calls: the pause has been met. Not many more: the pause
            // must stay well within the main lease (10 s).
            all.until_failed(before, Everything::CALLS + 1).await;
            // Longer than the short lease: it runs out while Redis is paused.
            tokio::time::sleep(Duration::from_millis(300)).await;
            server.resume().unwrap();
        };
        let ((results, beat), ()) = tokio::join!(calls, resume);
        all_ok(results);
        assert!(!beat.unwrap(), "the lease ran out during the pause");
        assert_eq!(short.live().await.unwrap(), vec![all.me.clone()]);
        assert_eq!(all.stats().unavailable, before.unavailable);
        assert_eq!(all.stats().outage, None);
    });
}

/// Redis (fsync-always append-only file) is killed and restarted. Every structure's call made
/// while it is down retries until it is back, then succeeds, and finds the state it had: the
/// filter is not taken for a reset, the frontier keeps its tasks, the ids go on.
#[test]
fn a_restart_with_aof_is_ridden_out_by_every_structure() {
    let Some(mut server) = RedisServer::start_durable_or_skip("a restart is ridden out") else {
        return;
    };
    let url = server.url();
    runtime().block_on(async {
        let all = Everything::open(&url, patient()).await;
        let id_before = all.ids.next().await.unwrap();
        let before = all.stats();
        server.kill();
        let restart = async {
            all.until_failed(before, Everything::CALLS).await;
            server.restart().unwrap();
        };
        let (results, ()) = tokio::join!(all.every_call(1), restart);
        all_ok(results);
        assert!(all.ids.next().await.unwrap() > id_before);
        let filter = all.filter.clone();
        let known = tokio::task::spawn_blocking(move || {
            filter.try_contains_batch(&["https://outage.example/0", "https://outage.example/1"])
        })
        .await
        .unwrap()
        .unwrap();
        assert_eq!(known, [true, true]);
        assert!(
            all.frontier.pending().await.unwrap() + all.frontier.in_flight().await.unwrap() >= 1
        );
        assert_eq!(all.stats().unavailable, before.unavailable);
    });
}

/// Redis is killed and never comes back. The first call to notice retries for the budget
/// and fails with a clear `Error::Unavailable`; from then on, a call of any structure makes
/// one attempt and fails, instead of waiting the budget again: the processes of a crawl end
/// one budget after the fault, not one budget per structure in turn.
#[test]
fn redis_gone_for_good_ends_every_call_after_one_budget() {
    let Some(mut server) = RedisServer::start_or_skip("redis gone for good") else {
        return;
    };
    let url = server.url();
    runtime().block_on(async {
        let budget = Duration::from_millis(800);
        let all = Everything::open(&url, Backoff::giving_up_after(budget)).await;
        server.kill();
        let first = all.members.heartbeat(&all.me).await.unwrap_err();
        let Error::Unavailable {
            elapsed,
            budget: said,
            attempts,
            ..
        } = &first
        else {
            panic!("{first}");
        };
        assert!(
            *elapsed >= budget && *said == budget && *attempts > 1,
            "{first}"
        );
        let message = first.to_string();
        assert!(
            message.contains("unreachable") && message.contains("give-up budget"),
            "{message}"
        );
        for round in 1..=3 {
            let before = all.stats();
            let results = all.every_call(round).await;
            for (name, result) in &results {
                assert!(
                    matches!(result, Err(Error::Unavailable { attempts: 1, .. })),
                    "{name}: {result:?}"
                );
            }
            let after = all.stats();
            assert_eq!(after.attempts, before.attempts + Everything::CALLS);
            assert_eq!(after.unavailable, before.unavailable + Everything::CALLS);
            assert!(after.outage.is_some_and(|o| o >= budget));
        }
    });
}
