//! Redis crashes, restarts and outages: calls wait them out (reconnect with backoff), report a
//! typed error when the outage outlasts the budget, and no task is lost or doubled.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use url_dedup_redis::testing::{RedisServer, runtime};
use url_dedup_redis::{
    Backoff, Claim, Error, Frontier, Link, Membership, Namespace, NewTask, WorkerId,
};

/// A producer pushes 1,000 tasks in chunks of 50 while a consumer claims and acknowledges;
/// Redis (fsync-always AOF) is SIGKILLed in the middle and restarted 300 ms later. Both calls
/// in flight wait out the outage; afterwards every pushed task was crawled exactly once.
#[test]
fn crash_mid_batch_loses_and_doubles_nothing() {
    let Some(server) = RedisServer::start_durable_or_skip("crash_mid_batch") else {
        return;
    };
    let url = server.url();
    let server = Arc::new(Mutex::new(server));
    let chunks_pushed = Arc::new(AtomicUsize::new(0));
    let killer = {
        let (server, chunks_pushed) = (server.clone(), chunks_pushed.clone());
        std::thread::spawn(move || {
            while chunks_pushed.load(Ordering::SeqCst) < 10 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let mut server = server.lock().unwrap();
            server.kill();
            std::thread::sleep(Duration::from_millis(300));
            server.restart().expect("restart");
        })
    };
    let all: Vec<NewTask> = (0..1_000)
        .map(|i| NewTask::from_url(&format!("https://h{}.example/{i}", i % 37)).unwrap())
        .collect();
    let crawled = runtime().block_on(async {
        let ns = Namespace::new("crash").unwrap();
        let link = Link::connect(&url).await.unwrap();
        let frontier = Frontier::new(link.clone(), ns.clone());
        let me = WorkerId::new("consumer").unwrap();
        let members = Membership::new(link, ns);
        members.join(&me).await.unwrap();

        let producer = {
            let (frontier, all, chunks_pushed) =
                (frontier.clone(), all.clone(), chunks_pushed.clone());
            tokio::spawn(async move {
                for chunk in all.chunks(50) {
                    frontier
                        .push(chunk)
                        .await
                        .expect("push waits out the crash");
                    chunks_pushed.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        let mut crawled = Vec::new();
        let mut last_beat = std::time::Instant::now();
        loop {
            // fsync-always makes every write wait for the disk: keep the lease alive as a real
            // worker would.
            if last_beat.elapsed() > Duration::from_secs(1) {
                members
                    .heartbeat(&me)
                    .await
                    .expect("heartbeat waits out the crash");
                last_beat = std::time::Instant::now();
            }
            match frontier
                .claim(&me)
                .await
                .expect("claim waits out the crash")
            {
                Claim::Task(task) => {
                    crawled.push(task.url().to_owned());
                    frontier.ack(&task).await.expect("ack waits out the crash");
                }
                Claim::Empty { .. } if producer.is_finished() => {
                    if frontier.pending().await.unwrap() == 0 {
                        break;
                    }
                }
                Claim::Empty { .. } => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
        producer.await.unwrap();
        assert_eq!(frontier.in_flight().await.unwrap(), 0);
        crawled
    });
    killer.join().unwrap();
    let unique: HashSet<&String> = crawled.iter().collect();
    let expected: HashSet<String> = all.iter().map(|t| t.url().to_owned()).collect();
    assert_eq!(unique.len(), expected.len(), "tasks lost");
    assert!(unique.iter().all(|u| expected.contains(*u)));
    assert_eq!(crawled.len(), expected.len(), "tasks crawled twice");
}

/// Calls made while Redis is down succeed once it is back within the backoff budget, on the
/// same `Link`.
#[test]
fn calls_wait_out_a_restart() {
    let Some(server) = RedisServer::start_or_skip("calls_wait_out_a_restart") else {
        return;
    };
    let server = Arc::new(Mutex::new(server));
    let url = server.lock().unwrap().url();
    runtime().block_on(async {
        let link = Link::connect(&url).await.unwrap();
        let frontier = Frontier::new(link.clone(), Namespace::new("down").unwrap());
        server.lock().unwrap().kill();
        let restarter = {
            let server = server.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500));
                server.lock().unwrap().restart().expect("restart");
            })
        };
        let first = frontier
            .push(&[NewTask::from_url("https://a.example/").unwrap()])
            .await
            .expect("push retried until Redis came back");
        restarter.join().unwrap();
        assert_eq!(first, Some(1));
        assert_eq!(frontier.pending().await.unwrap(), 1);
    });
}

/// An outage longer than the budget is `Error::Unavailable`, not a panic or a hang; the same
/// `Link` works again when Redis returns. A non-durable restart forgets memberships (the
/// worker's heartbeat notices and rejoins) and the frontier's tasks: the frontier says it was
/// reset instead of reporting an empty queue, which would end a crawl with its tasks lost.
#[test]
fn long_outage_is_a_typed_error_and_recovers() {
    let Some(mut server) = RedisServer::start_or_skip("long_outage_is_a_typed_error") else {
        return;
    };
    runtime().block_on(async {
        let quick = Backoff {
            give_up_after: Duration::from_millis(300),
            ..Backoff::default()
        };
        let link = Link::connect_with(&server.url(), quick).await.unwrap();
        let ns = Namespace::new("outage").unwrap();
        let frontier = Frontier::new(link.clone(), ns.clone());
        let members = Membership::new(link.clone(), ns);
        let me = WorkerId::new("w").unwrap();
        members.join(&me).await.unwrap();
        assert_eq!(
            frontier.claim(&me).await.unwrap(),
            Claim::Empty { next_due: None }
        );

        server.kill();
        let err = frontier.claim(&me).await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Unavailable {
                    operation: "claim",
                    ..
                }
            ),
            "{err}"
        );

        server.restart().unwrap();
        link.ping().await.expect("same link reconnects");
        assert!(!members.heartbeat(&me).await.unwrap(), "lease was lost");
        assert!(matches!(
            frontier.claim(&me).await,
            Err(Error::StoreReset {
                what: "frontier",
                ..
            })
        ));
        // A frontier opened afresh starts a new generation and works.
        let fresh = Frontier::new(link.clone(), Namespace::new("outage").unwrap());
        assert_eq!(
            fresh.claim(&me).await.unwrap(),
            Claim::Empty { next_due: None }
        );
    });
}

/// Credentials the server refuses are a permanent error, reported at once, not an outage
/// retried for the whole first-contact budget.
#[test]
fn refused_credentials_are_not_retried() {
    let Some(server) = RedisServer::start_or_skip("refused_credentials") else {
        return;
    };
    runtime().block_on(async {
        // This server has no password: AUTH fails.
        let url = format!("redis://:secret@127.0.0.1:{}/", server.port());
        let patient = Backoff {
            first_contact: Duration::from_secs(60),
            give_up_after: Duration::from_secs(60),
            ..Backoff::default()
        };
        let err = Link::connect_with(&url, patient).await.unwrap_err();
        assert!(matches!(err, Error::Redis { .. }), "{err}");
    });
}
