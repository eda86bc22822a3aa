//! Smoke test.
use std::time::Duration;
use url_dedup_two_tier::testing::{Cluster, quick_settings};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke() {
    let Some(mut cluster) = Cluster::launch(&[1, 1], quick_settings()).await.unwrap() else {
        return;
    };
    eprintln!("launched");
    cluster.start_all().await.unwrap();
    eprintln!("started");
    let a = cluster.local_host(cluster.host_ip(0, 0)).await.unwrap();
    eprintln!("handle");
    a.discover(&["https://x/1", "https://x/2"]).await.unwrap();
    eprintln!("discovered");
    let idle = cluster.wait_idle(Duration::from_secs(5)).await.unwrap();
    eprintln!("idle {idle} {:?}", cluster.stats());
    eprintln!("{:?}", cluster.all_tasks().await.unwrap());
}
