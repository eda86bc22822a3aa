//! Malformed and misrouted frames are rejected with a logged error and change nothing.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use url_dedup_two_tier::testing::{Cluster, quick_settings};
use url_dedup_two_tier::{Flag, Frame, UrlSet};

/// Log lines written by the nodes, captured for assertions.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every key of a node's Redis with its serialized value, except the transport's own keys
/// (inboxes and wake lists, which a delivery necessarily touches).
async fn state(cluster: &Cluster, ip: IpAddr) -> BTreeMap<String, Vec<u8>> {
    cluster
        .redis(ip)
        .run("snapshot", |mut conn| async move {
            let keys: Vec<String> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await?;
            let mut out = BTreeMap::new();
            for key in keys {
                if key.contains(":inbox:") || key.ends_with("wake") {
                    continue;
                }
                let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query_async(&mut conn).await?;
                out.insert(key, dump);
            }
            Ok(out)
        })
        .await
        .unwrap()
}

#[test]
fn malformed_frames_are_rejected_with_no_state_change() {
    let log = Captured::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::ERROR)
        .init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let settings = quick_settings();
        let Some(mut cluster) = Cluster::launch(&[2, 1], settings).await.unwrap() else {
            return;
        };
        cluster.start_all().await.unwrap();
        let center = cluster.center_ip(0);
        let (a, b) = (cluster.host_ip(0, 0), cluster.host_ip(0, 1));
        let other_center = cluster.center_ip(1);

        // Some real state first, so "no change" means something.
        let host_a = cluster.local_host(a).await.unwrap();
        cluster
            .local_host(b)
            .await
            .unwrap()
            .finish(&["https://s/old"])
            .await
            .unwrap();
        host_a
            .discover(&["https://s/old", "https://s/new"])
            .await
            .unwrap();
        assert!(cluster.wait_idle(Duration::from_secs(30)).await.unwrap());
        let before: Vec<_> = futures(&cluster).await;

        let good = Frame {
            url_set: UrlSet::from_urls(["https://m/1"]),
            ip: a,
            number: 900 << 10,
            flag: Flag::Submit,
        };
        let json = String::from_utf8(good.encode()).unwrap();
        let too_many = Frame {
            url_set: UrlSet::from_urls(
                (0..=settings.limits.max_urls).map(|i| format!("https://m/{i}")),
            ),
            ..good.clone()
        };
        let huge = format!(
            r#"{{"URL_set":{{"https://m/{}":0}},"IP":"{a}","number":901,"flag":1}}"#,
            "x".repeat(settings.limits.max_bytes)
        );
        let to_center: Vec<(IpAddr, Vec<u8>)> = vec![
            (a, b"not json at all".to_vec()),
            (a, b"".to_vec()),
            (a, json.replace(r#""flag":1"#, r#""flag":7"#).into_bytes()),
            (a, json.replace(":0}", ":2}").into_bytes()),
            (a, json.replace("}", r#","extra":1}"#).into_bytes()),
            (
                a,
                json.replace(r#""number":921600"#, r#""number":0"#)
                    .into_bytes(),
            ),
            (
                a,
                json.replace(r#""number":921600"#, r#""number":-5"#)
                    .into_bytes(),
            ),
            (a, json.replace(&a.to_string(), "999.1.1.1").into_bytes()),
            (
                a,
                json.replace("https://m/1\":0", "https://m/1\":0,\"https://m/1\":1")
                    .into_bytes(),
            ),
            (
                a,
                json.replace("https://m/1", "https://m/\\u0007")
                    .into_bytes(),
            ),
            (a, too_many.encode()),
            (a, huge.into_bytes()),
            // Well-formed but misrouted: a submission naming another host, a request from a
            // host, an answer naming nobody's request, a submission from another network.
            (b, good.encode()),
            (
                a,
                Frame {
                    flag: Flag::Request,
                    ..good.clone()
                }
                .encode(),
            ),
            (
                a,
                Frame {
                    flag: Flag::Answer,
                    ip: "10.9.9.9".parse().unwrap(),
                    ..good.clone()
                }
                .encode(),
            ),
            (other_center, good.encode()),
            (
                other_center,
                Frame {
                    flag: Flag::Answer,
                    ..good.clone()
                }
                .encode(),
            ),
        ];
        let sent = to_center.len() as u64;
        for (from, bytes) in to_center {
            cluster.deliver_raw(center, from, bytes).await.unwrap();
        }
        // A host accepts only requests from its center.
        cluster.deliver_raw(b, center, good.encode()).await.unwrap();
        cluster
            .deliver_raw(
                b,
                center,
                Frame {
                    flag: Flag::Answer,
                    ..good.clone()
                }
                .encode(),
            )
            .await
            .unwrap();
        cluster
            .deliver_raw(b, center, b"{\"URL_set\":")
            .await
            .unwrap();

        assert!(cluster.wait_idle(Duration::from_secs(30)).await.unwrap());
        assert_eq!(cluster.node_stats(center).rejected, sent);
        assert_eq!(cluster.node_stats(b).rejected, 3);
        assert_eq!(cluster.stats().rejected, sent + 3);
        assert_eq!(
            futures(&cluster).await,
            before,
            "a rejected frame changed state"
        );
        assert_eq!(cluster.all_tasks().await.unwrap(), ["https://s/new"]);

        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        let errors = text
            .lines()
            .filter(|l| l.contains("ERROR") && l.contains("rejected frame"))
            .count();
        assert_eq!(errors as u64, sent + 3, "{text}");
        assert!(text.contains("exceeds the limit"), "{text}");
        assert!(text.contains("must come from"), "{text}");
        cluster.shutdown().await.unwrap();
    });
}

async fn futures(cluster: &Cluster) -> Vec<BTreeMap<String, Vec<u8>>> {
    let mut all = Vec::new();
    for ip in cluster.nodes() {
        all.push(state(cluster, ip).await);
    }
    all
}
