//! The frontier against a model: random pushes, claims, acks, releases and worker deaths keep
//! every task in exactly one place, one worker per host, and each host's tasks in order.

use std::collections::{BTreeMap, VecDeque};

use proptest::prelude::*;
use url_dedup_redis::testing::RedisServer;
use url_dedup_redis::{
    Claim, ClaimedTask, Frontier, Link, Membership, Namespace, NewTask, WorkerId,
};

#[derive(Clone, Debug)]
enum Op {
    Push { host: u8, count: u8 },
    Claim { worker: u8 },
    Ack { worker: u8, pick: u8 },
    Release { worker: u8, pick: u8 },
    Die { worker: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..4, 1u8..4).prop_map(|(host, count)| Op::Push { host, count }),
        (0u8..3).prop_map(|worker| Op::Claim { worker }),
        (0u8..3, any::<u8>()).prop_map(|(worker, pick)| Op::Ack { worker, pick }),
        (0u8..3, any::<u8>()).prop_map(|(worker, pick)| Op::Release { worker, pick }),
        (0u8..3).prop_map(|worker| Op::Die { worker }),
    ]
}

/// One server for every case. A `static` is never dropped; the harness kills the server when
/// this test process ends.
fn server() -> Option<&'static RedisServer> {
    static SERVER: std::sync::OnceLock<Option<RedisServer>> = std::sync::OnceLock::new();
    SERVER
        .get_or_init(|| RedisServer::start_or_skip("frontier_model"))
        .as_ref()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn frontier_matches_model(ops in prop::collection::vec(op(), 1..40), case: u64) {
        let Some(server) = server() else { return Ok(()) };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let link = Link::connect(&server.url()).await.unwrap();
            let ns = Namespace::new(&format!("model{case}")).unwrap();
            let frontier = Frontier::new(link.clone(), ns.clone());
            let members = Membership::new(link, ns);
            let workers: Vec<WorkerId> = (0..3).map(|w| WorkerId::new(&format!("w{w}")).unwrap()).collect();
            for w in &workers {
                members.join(w).await.unwrap();
            }
            // Model: each host's pending URLs in order, and what each worker holds.
            let mut queues: BTreeMap<String, VecDeque<String>> = BTreeMap::new();
            let mut held: Vec<Vec<ClaimedTask>> = vec![Vec::new(); 3];
            let mut next = 0u32;
            for op in ops {
                match op {
                    Op::Push { host, count } => {
                        let host = format!("h{host}.example");
                        let tasks: Vec<NewTask> = (0..count).map(|_| {
                            next += 1;
                            NewTask::new(host.clone(), format!("https://{host}/{next}")).unwrap()
                        }).collect();
                        frontier.push(&tasks).await.unwrap();
                        queues.entry(host).or_default().extend(tasks.iter().map(|t| t.url().to_owned()));
                    }
                    Op::Claim { worker } => {
                        let busy: Vec<&str> = held.iter().flatten().map(|t| t.host()).collect();
                        let available = queues.iter().any(|(h, q)| !q.is_empty() && !busy.contains(&h.as_str()));
                        match frontier.claim(&workers[worker as usize]).await.unwrap() {
                            Claim::Task(task) => {
                                assert!(!busy.contains(&task.host()), "host {} held twice", task.host());
                                let queue = queues.get_mut(task.host()).expect("known host");
                                assert_eq!(queue.pop_front().as_deref(), Some(task.url()), "out of order");
                                held[worker as usize].push(task);
                            }
                            Claim::Empty { .. } => assert!(!available, "a due host was not handed out"),
                        }
                    }
                    Op::Ack { worker, pick } | Op::Release { worker, pick } if !held[worker as usize].is_empty() => {
                        let mine = &mut held[worker as usize];
                        let task = mine.remove(pick as usize % mine.len());
                        if matches!(op, Op::Ack { .. }) {
                            assert!(frontier.ack(&task).await.unwrap());
                        } else {
                            assert!(frontier.release(&task).await.unwrap());
                            queues.get_mut(task.host()).unwrap().push_front(task.url().to_owned());
                        }
                    }
                    Op::Ack { .. } | Op::Release { .. } => {}
                    Op::Die { worker } => {
                        let lost = std::mem::take(&mut held[worker as usize]);
                        let back = frontier.requeue_worker(&workers[worker as usize]).await.unwrap();
                        assert_eq!(back, lost.len() as u64);
                        for task in lost {
                            queues.get_mut(task.host()).unwrap().push_front(task.url().to_owned());
                            assert!(!frontier.ack(&task).await.unwrap(), "a requeued claim is stale");
                        }
                    }
                }
                let pending: usize = queues.values().map(VecDeque::len).sum();
                let in_flight: usize = held.iter().map(Vec::len).sum();
                assert_eq!(frontier.pending().await.unwrap(), pending as u64);
                assert_eq!(frontier.in_flight().await.unwrap(), in_flight as u64);
            }
        });
    }
}
