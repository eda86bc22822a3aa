//! The frontier against a real redis-server: per-host exclusivity under concurrency, FIFO per
//! host, politeness delay, and a worker process killed while holding tasks.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use url_dedup_redis::testing::{RedisServer, runtime};
use url_dedup_redis::{
    Claim, Frontier, FrontierSettings, Link, Membership, Namespace, NewTask, WorkerId,
};

fn tasks(hosts: usize, per_host: usize) -> Vec<NewTask> {
    (0..per_host)
        .flat_map(|i| {
            (0..hosts).map(move |h| {
                NewTask::from_url(&format!("https://site{h}.example/page/{i}")).expect("valid")
            })
        })
        .collect()
}

/// Four workers, each on its own connection, drain 40 hosts x 25 tasks. No host is ever held
/// by two workers at once, every task is crawled exactly once (no failures here), and each
/// host's tasks are crawled in the order they were pushed.
#[test]
fn workers_never_share_a_host_and_keep_host_order() {
    let Some(server) = RedisServer::start_or_skip("workers_never_share_a_host") else {
        return;
    };
    runtime().block_on(async {
        let ns = Namespace::new("excl").unwrap();
        let link = Link::connect(&server.url()).await.unwrap();
        let all = tasks(40, 25);
        Frontier::new(link, ns.clone()).push(&all).await.unwrap();

        let holders: Arc<Mutex<HashMap<String, WorkerId>>> = Arc::default();
        let crawled: Arc<Mutex<Vec<(String, u64, String)>>> = Arc::default();
        let mut handles = Vec::new();
        for w in 0..4 {
            let (url, ns) = (server.url(), ns.clone());
            let (holders, crawled) = (holders.clone(), crawled.clone());
            handles.push(tokio::spawn(async move {
                let link = Link::connect(&url).await.unwrap();
                let frontier = Frontier::new(link.clone(), ns.clone());
                let me = WorkerId::new(&format!("w{w}")).unwrap();
                Membership::new(link, ns).join(&me).await.unwrap();
                while let Some(task) = frontier
                    .claim_wait(&me, Duration::from_millis(300))
                    .await
                    .unwrap()
                {
                    let previous = holders
                        .lock()
                        .unwrap()
                        .insert(task.host().to_owned(), me.clone());
                    assert_eq!(previous, None, "host {} held twice", task.host());
                    crawled.lock().unwrap().push((
                        task.host().to_owned(),
                        task.id(),
                        task.url().to_owned(),
                    ));
                    tokio::task::yield_now().await;
                    holders.lock().unwrap().remove(task.host());
                    assert!(frontier.ack(&task).await.unwrap());
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        let crawled = crawled.lock().unwrap();
        assert_eq!(crawled.len(), all.len());
        let urls: HashSet<&str> = crawled.iter().map(|(_, _, u)| u.as_str()).collect();
        assert_eq!(urls.len(), all.len(), "a task was crawled twice");
        let mut per_host: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for (host, id, _) in crawled.iter() {
            per_host.entry(host).or_default().push(*id);
        }
        for (host, ids) in per_host {
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "{host} out of order: {ids:?}"
            );
        }
    });
}

/// After a task of a host is acknowledged, the host's next task waits for the politeness delay,
/// measured on the Redis clock.
#[test]
fn host_delay_spaces_out_a_hosts_tasks() {
    let Some(server) = RedisServer::start_or_skip("host_delay_spaces_out_a_hosts_tasks") else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let ns = Namespace::new("polite").unwrap();
        let settings = FrontierSettings {
            host_delay: Duration::from_millis(300),
            ..FrontierSettings::default()
        };
        let frontier = Frontier::with_settings(link.clone(), ns.clone(), settings);
        let me = WorkerId::new("w").unwrap();
        Membership::new(link, ns).join(&me).await.unwrap();
        frontier.push(&tasks(1, 2)).await.unwrap();
        // Before the first claim: however long the machine takes between the calls below, the
        // second task cannot come sooner than the delay after this.
        let start = std::time::Instant::now();
        let Claim::Task(first) = frontier.claim(&me).await.unwrap() else {
            panic!("first task is due at once");
        };
        frontier.ack(&first).await.unwrap();
        match frontier.claim(&me).await.unwrap() {
            Claim::Empty {
                next_due: Some(wait),
            } => assert!(wait <= Duration::from_millis(300), "{wait:?}"),
            other => panic!("second task should wait for the delay, got {other:?}"),
        }
        let second = frontier
            .claim_wait(&me, Duration::from_secs(600))
            .await
            .unwrap()
            .expect("due after the delay");
        assert!(start.elapsed() >= Duration::from_millis(300));
        assert_eq!(second.url(), "https://site0.example/page/1");
    });
}

/// A claimed task that is released goes back to the front of its host's queue.
#[test]
fn released_task_comes_back_first() {
    let Some(server) = RedisServer::start_or_skip("released_task_comes_back_first") else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let ns = Namespace::new("rel").unwrap();
        let frontier = Frontier::new(link.clone(), ns.clone());
        let me = WorkerId::new("w").unwrap();
        Membership::new(link, ns).join(&me).await.unwrap();
        frontier.push(&tasks(1, 3)).await.unwrap();
        let Claim::Task(t) = frontier.claim(&me).await.unwrap() else {
            panic!()
        };
        assert!(frontier.release(&t).await.unwrap());
        assert!(
            !frontier.release(&t).await.unwrap(),
            "second release is stale"
        );
        assert_eq!(frontier.pending().await.unwrap(), 3);
        let Claim::Task(again) = frontier.claim(&me).await.unwrap() else {
            panic!()
        };
        assert_eq!(again.url(), t.url());
    });
}

const CHILD_ENV: &str = "URL_DEDUP_REDIS_CHILD_WORKER";

/// Runs only as a child process of `killed_worker_tasks_come_back`: joins, claims three
/// tasks, reports them on stdout, then waits to be killed without acknowledging anything.
#[test]
#[ignore = "helper process, started by its parent test"]
fn child_worker_that_gets_killed() {
    let Ok(url) = std::env::var(CHILD_ENV) else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&url).await.unwrap();
        let ns = Namespace::new("kill").unwrap();
        let frontier = Frontier::new(link.clone(), ns.clone());
        let me = WorkerId::new("doomed").unwrap();
        // Long enough that a busy machine does not let it lapse before the claims below.
        let members = Membership::with_ttl(link, ns, Duration::from_secs(3));
        members.join(&me).await.unwrap();
        for _ in 0..3 {
            let Claim::Task(task) = frontier.claim(&me).await.unwrap() else {
                panic!("parent pushed tasks")
            };
            println!("CLAIMED {}", task.url());
        }
        println!("READY");
        loop {
            members.heartbeat(&me).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// A worker process is killed (SIGKILL) while holding three tasks. Its lease runs out, the
/// tasks are requeued, and another worker crawls them: nothing is lost.
#[test]
fn killed_worker_tasks_come_back() {
    use std::io::{BufRead, BufReader};
    let Some(server) = RedisServer::start_or_skip("killed_worker_tasks_come_back") else {
        return;
    };
    let rt = runtime();
    let all = tasks(5, 2);
    rt.block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        Frontier::new(link, Namespace::new("kill").unwrap())
            .push(&all)
            .await
            .unwrap();
    });
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_worker_that_gets_killed",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, server.url())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut held = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(url) = line.strip_prefix("CLAIMED ") {
            held.push(url.to_owned());
        }
        if line == "READY" {
            break;
        }
    }
    assert_eq!(held.len(), 3);
    child.kill().unwrap();
    child.wait().unwrap();

    rt.block_on(async {
        let link = Link::connect(&server.url()).await.unwrap();
        let ns = Namespace::new("kill").unwrap();
        let frontier = Frontier::new(link.clone(), ns.clone());
        assert_eq!(frontier.in_flight().await.unwrap(), 3);
        // Until the lease runs out the dead worker is presumed alive.
        let mut requeued = frontier.requeue_dead().await.unwrap();
        assert!(requeued == 0 || requeued == 3);
        while requeued == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            requeued = frontier.requeue_dead().await.unwrap();
        }
        assert_eq!(requeued, 3);
        assert_eq!(frontier.in_flight().await.unwrap(), 0);

        let me = WorkerId::new("survivor").unwrap();
        Membership::new(link, ns).join(&me).await.unwrap();
        let mut crawled = HashSet::new();
        while let Claim::Task(task) = frontier.claim(&me).await.unwrap() {
            assert!(crawled.insert(task.url().to_owned()));
            frontier.ack(&task).await.unwrap();
        }
        let expected: HashSet<String> = all.iter().map(|t| t.url().to_owned()).collect();
        assert_eq!(crawled, expected);
        for url in held {
            assert!(crawled.contains(&url));
        }
    });
}
