//! Leader election, global ids and membership with several connections racing.

use std::collections::HashSet;
use std::time::Duration;

use url_dedup_redis::testing::{RedisServer, runtime};
use url_dedup_redis::{
    Error, GlobalIds, LeaderLease, Link, Membership, Namespace, SharedConfig, WorkerId,
};

/// Eight candidates on eight connections race for the lease: exactly one wins each term, and
/// when the winner stops renewing, the next winner's epoch is larger and fences the old one.
#[test]
fn one_leader_per_term_and_fencing() {
    let Some(server) = RedisServer::start_or_skip("one_leader_per_term") else {
        return;
    };
    runtime().block_on(async {
        let ns = Namespace::new("lead").unwrap();
        let mut handles = Vec::new();
        for i in 0..8 {
            let (url, ns) = (server.url(), ns.clone());
            handles.push(tokio::spawn(async move {
                let link = Link::connect(&url).await.unwrap();
                // A lease far longer than the race: on a busy machine, a short one could
                // lapse before the last candidate tries, and two would win.
                let lease = LeaderLease::with_ttl(link, ns, Duration::from_secs(600));
                let me = WorkerId::new(&format!("c{i}")).unwrap();
                (me.clone(), lease.try_acquire(&me).await.unwrap())
            }));
        }
        let mut winners = Vec::new();
        for h in handles {
            let (who, epoch) = h.await.unwrap();
            if let Some(epoch) = epoch {
                winners.push((who, epoch));
            }
        }
        assert_eq!(winners.len(), 1, "{winners:?}");
        let (old_leader, old_epoch) = winners.pop().unwrap();

        let link = Link::connect(&server.url()).await.unwrap();
        let lease = LeaderLease::with_ttl(link.clone(), ns.clone(), Duration::from_secs(600));
        let config = SharedConfig::new(link, ns.clone());
        config.set_fenced(old_epoch, &[("k", "1")]).await.unwrap();
        // The leader stops renewing: its lease runs out (made to at once, not waited for).
        let mut conn = redis::Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let expired: bool = redis::cmd("PEXPIRE")
            .arg(ns.key("leader"))
            .arg(1)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(expired);
        while redis::cmd("EXISTS")
            .arg(ns.key("leader"))
            .query_async::<bool>(&mut conn)
            .await
            .unwrap()
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let next = WorkerId::new("next").unwrap();
        let new_epoch = lease
            .try_acquire(&next)
            .await
            .unwrap()
            .expect("lease expired");
        assert!(new_epoch > old_epoch);
        assert!(!lease.renew(&old_leader, old_epoch).await.unwrap());
        let err = config
            .set_fenced(old_epoch, &[("k", "2")])
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Fenced { .. }), "{err}");
        assert_eq!(config.snapshot().await.unwrap().get("k"), Some("1"));
        assert_eq!(lease.current().await.unwrap(), Some((next, new_epoch)));
    });
}

/// Four connections draw 2,000 ids between them, singly and in blocks: all distinct.
#[test]
fn global_ids_are_unique_across_connections() {
    let Some(server) = RedisServer::start_or_skip("global_ids_are_unique") else {
        return;
    };
    runtime().block_on(async {
        let mut handles = Vec::new();
        for _ in 0..4 {
            let url = server.url();
            handles.push(tokio::spawn(async move {
                let link = Link::connect(&url).await.unwrap();
                let ids = GlobalIds::new(link, Namespace::new("ids").unwrap());
                let mut got = Vec::new();
                for _ in 0..50 {
                    got.push(ids.next().await.unwrap());
                    got.extend(ids.reserve(9).await.unwrap());
                }
                got
            }));
        }
        let mut all = HashSet::new();
        for h in handles {
            for id in h.await.unwrap() {
                assert!(all.insert(id), "id {id} given twice");
            }
        }
        assert_eq!(all.len(), 2_000);
        assert_eq!(all.iter().max(), Some(&2_000));
    });
}

/// A member that keeps heartbeating stays; one that stops is pruned once, and a member that
/// rejoins before the prune is not removed.
#[test]
fn membership_tracks_heartbeats() {
    let Some(server) = RedisServer::start_or_skip("membership_tracks_heartbeats") else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let ns = Namespace::new("m").unwrap();
        // The member that keeps beating holds a long lease, so a busy machine that delays a
        // beat cannot drop it; the one that stops holds a short one.
        let members = Membership::with_ttl(link.clone(), ns.clone(), Duration::from_secs(600));
        let short = Membership::with_ttl(link, ns, Duration::from_millis(300));
        let (alive, dead) = (
            WorkerId::new("alive").unwrap(),
            WorkerId::new("dead").unwrap(),
        );
        members.join(&alive).await.unwrap();
        short.join(&dead).await.unwrap();
        // Beats until the silent member's lease has run out.
        while members.live().await.unwrap() != vec![alive.clone()] {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(members.heartbeat(&alive).await.unwrap());
        }
        assert_eq!(members.prune().await.unwrap(), vec![dead.clone()]);
        assert!(members.prune().await.unwrap().is_empty());
        members.join(&dead).await.unwrap();
        assert_eq!(members.live().await.unwrap(), vec![alive, dead]);
    });
}
