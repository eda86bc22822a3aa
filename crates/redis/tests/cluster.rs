//! Every shared structure on a real Redis Cluster: 3 masters with a replica each, on loopback.

use url_dedup_redis::testing::RedisCluster;

#[test]
fn the_test_cluster_starts_and_reshards() {
    let Some(mut cluster) = RedisCluster::start_or_skip("cluster harness", 3, 1) else {
        return;
    };
    let masters = cluster.masters();
    assert_eq!(masters.len(), 3);
    assert_eq!(masters.iter().map(|m| m.slots).sum::<usize>(), 16_384);
    let port = cluster.add_master().unwrap();
    cluster.rebalance().unwrap();
    assert_eq!(cluster.masters().len(), 4);
    cluster.remove_master(port).unwrap();
    assert_eq!(cluster.masters().len(), 3);
    let victim = cluster.masters()[0].port;
    cluster.kill_and_fail_over(victim).unwrap();
    assert_eq!(cluster.masters().len(), 3);
}
