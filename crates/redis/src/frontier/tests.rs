//! The frontier against a real redis-server: host budgets and delays shared by workers.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::Membership;
use crate::testing::{RedisServer, runtime};

fn one_host(n: usize) -> Vec<NewTask> {
    (0..n)
        .map(|i| NewTask::from_url(&format!("https://one.example/{i}")).unwrap())
        .collect()
}

/// Many workers on one host share its request slots: never more claimed at once than
/// the budget, every worker gets a share, every task is done once.
#[test]
fn many_workers_share_one_hosts_budget() {
    let Some(server) = RedisServer::start_or_skip("many_workers_share_one_hosts_budget") else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let ns = Namespace::new("shared-host").unwrap();
        let settings = FrontierSettings {
            host_concurrency: 3,
            ..Default::default()
        };
        let frontier = Frontier::with_settings(link.clone(), ns.clone(), settings);
        frontier.push(&one_host(120)).await.unwrap();
        let held = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut workers = Vec::new();
        for w in 0..6 {
            let (frontier, held, most) = (frontier.clone(), held.clone(), most.clone());
            let members = Membership::new(link.clone(), ns.clone());
            workers.push(tokio::spawn(async move {
                let me = WorkerId::new(&format!("w{w}")).unwrap();
                members.join(&me).await.unwrap();
                let mut done = Vec::new();
                loop {
                    let got = frontier
                        .claim_batch_wait(&me, 2, Duration::from_millis(200))
                        .await
                        .unwrap();
                    if got.is_empty() {
                        if frontier.pending().await.unwrap() == 0 {
                            return done;
                        }
                        continue;
                    }
                    let now = held.fetch_add(got.len(), Ordering::SeqCst) + got.len();
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    held.fetch_sub(got.len(), Ordering::SeqCst);
                    assert_eq!(frontier.ack_batch(&got).await.unwrap(), got.len() as u64);
                    done.extend(got.into_iter().map(|t| t.url().to_owned()));
                }
            }));
        }
        let mut all = Vec::new();
        let mut shares = Vec::new();
        for w in workers {
            let done = w.await.unwrap();
            shares.push(done.len());
            all.extend(done);
        }
        assert!(most.load(Ordering::SeqCst) <= 3, "{most:?}");
        assert!(shares.iter().filter(|&&n| n > 0).count() >= 2, "{shares:?}");
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 120, "{shares:?}");
    });
}

/// With several slots, a host's claims still start `host_delay` apart.
#[test]
fn a_hosts_claims_start_the_delay_apart() {
    let Some(server) = RedisServer::start_or_skip("a_hosts_claims_start_the_delay_apart") else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let ns = Namespace::new("spaced").unwrap();
        let settings = FrontierSettings {
            host_concurrency: 4,
            host_delay: Duration::from_millis(100),
            ..Default::default()
        };
        let frontier = Frontier::with_settings(link.clone(), ns.clone(), settings);
        let me = WorkerId::new("w").unwrap();
        Membership::new(link, ns).join(&me).await.unwrap();
        frontier.push(&one_host(3)).await.unwrap();
        let begin = tokio::time::Instant::now();
        assert_eq!(frontier.claim_batch(&me, 4).await.unwrap().len(), 1);
        let second = frontier
            .claim_batch_wait(&me, 4, Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!(second.len(), 1);
        assert!(
            begin.elapsed() >= Duration::from_millis(90),
            "{:?}",
            begin.elapsed()
        );
    });
}

/// A host's budget counts over every commit and every worker; a stale claim (requeued
/// meanwhile) is not acknowledged twice.
#[test]
fn commit_budgets_hosts_across_calls_and_skips_stale_claims() {
    let Some(server) = RedisServer::start_or_skip("commit_budgets_hosts") else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let ns = Namespace::new("commit").unwrap();
        let frontier = Frontier::new(link.clone(), ns.clone());
        let me = WorkerId::new("w").unwrap();
        Membership::new(link, ns).join(&me).await.unwrap();
        let first = frontier.commit(&me, &one_host(3), 4, &[]).await.unwrap();
        assert_eq!(first, [true; 3]);
        let claimed = frontier.claim_batch(&me, 1).await.unwrap();
        assert_eq!(frontier.requeue_worker(&me).await.unwrap(), 1);
        let more: Vec<NewTask> = (3..6)
            .map(|i| NewTask::from_url(&format!("https://one.example/{i}")).unwrap())
            .collect();
        let second = frontier.commit(&me, &more, 4, &claimed).await.unwrap();
        assert_eq!(second, [true, false, false]);
        assert_eq!(frontier.acked().await.unwrap(), 0, "the claim was stale");
        assert_eq!(frontier.pending().await.unwrap(), 4);
    });
}

/// A host's own delay (from its robots.txt) spaces its claims even with several slots and
/// no delay in the settings.
#[test]
fn a_hosts_own_delay_spaces_its_claims() {
    let Some(server) = RedisServer::start_or_skip("a_hosts_own_delay") else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let ns = Namespace::new("own-delay").unwrap();
        let settings = FrontierSettings {
            host_concurrency: 4,
            ..Default::default()
        };
        let frontier = Frontier::with_settings(link.clone(), ns.clone(), settings);
        let me = WorkerId::new("w").unwrap();
        Membership::new(link, ns).join(&me).await.unwrap();
        frontier
            .set_host_delay("one.example", Duration::from_millis(150))
            .await
            .unwrap();
        let begin = tokio::time::Instant::now();
        frontier.push(&one_host(3)).await.unwrap();
        // Not due before the delay has passed since it was set, then a delay apart.
        for n in 1..=2u32 {
            let got = frontier
                .claim_batch_wait(&me, 4, Duration::from_secs(2))
                .await
                .unwrap();
            assert_eq!(got.len(), 1);
            assert!(
                begin.elapsed() >= Duration::from_millis(140) * n,
                "{n}: {:?}",
                begin.elapsed()
            );
        }
    });
}
