//! The Redis form answers as the in-memory index does, for several processes at once.

use url_dedup_fingerprint::{NearIndex, RedisNearIndex, SimHash, feature_hash};
use url_dedup_redis::Link;
use url_dedup_redis::testing::{RedisServer, runtime};

#[test]
fn redis_answers_as_memory_does() {
    let Some(server) = RedisServer::start_or_skip("redis_answers_as_memory_does") else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let shared = RedisNearIndex::open(link, "t", 3, 4).await.unwrap();
        let mut local = NearIndex::new(3).unwrap();
        // Clustered fingerprints: many have a neighbour within 3 bits.
        for i in 0..600u64 {
            let base = feature_hash(i / 4);
            let f =
                SimHash(base ^ (feature_hash(i) & 0x8000_0100_0010_0001 & (i % 5).wrapping_neg()));
            assert_eq!(
                shared.check_and_insert(f).await.unwrap(),
                local.check_and_insert(f),
                "fingerprint {i}"
            );
        }
        assert_eq!(shared.len().await.unwrap(), local.len());
        for i in 0..200u64 {
            let q = SimHash(feature_hash(i / 3) ^ (1 << (i % 64)) ^ (1 << ((i * 7) % 64)));
            assert_eq!(shared.nearest(q).await.unwrap(), local.nearest(q));
        }
    });
}

#[test]
fn of_processes_inserting_one_page_at_once_one_is_first() {
    let Some(server) = RedisServer::start_or_skip("of_processes_inserting_one_page") else {
        return;
    };
    runtime().block_on(async {
        let mut tasks = Vec::new();
        for p in 0..8u64 {
            let link = Link::connect(&server.url()).await.unwrap();
            let index = RedisNearIndex::open(link, "race", 3, 4).await.unwrap();
            tasks.push(tokio::spawn(async move {
                let mut firsts = 0;
                for page in 0..200u64 {
                    // Each process sees each page with its own small difference.
                    let f = SimHash(feature_hash(page) ^ (1 << p));
                    if index.check_and_insert(f).await.unwrap().is_none() {
                        firsts += 1;
                    }
                }
                firsts
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        assert_eq!(total, 200);
    });
}

#[test]
fn a_member_that_is_not_ours_is_reported() {
    let Some(server) = RedisServer::start_or_skip("a_member_that_is_not_ours") else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let index = RedisNearIndex::open(link.clone(), "bad", 3, 4)
            .await
            .unwrap();
        index.insert(SimHash(5)).await.unwrap();
        // Plant a member in the bucket of SimHash(5) in table 0 (bucket 0).
        let _: () = link
            .run("plant", |mut c| async move {
                redis::cmd("SADD")
                    .arg("{bad}:near:0:0")
                    .arg("0000000000000004")
                    .query_async(&mut c)
                    .await
            })
            .await
            .unwrap();
        assert_eq!(index.nearest(SimHash(5)).await.unwrap(), Some(SimHash(5)));
        let _: () = link
            .run("plant", |mut c| async move {
                redis::cmd("SADD")
                    .arg("{bad}:near:0:0")
                    .arg("zz")
                    .query_async(&mut c)
                    .await
            })
            .await
            .unwrap();
        // Lua reads `zz` as no number: the script fails and the error is Redis's.
        assert!(index.nearest(SimHash(5)).await.is_err());
    });
}
