//! The thread that runs the layer's connection tasks and timers.
//!
//! Each node's shared connection is a task on one small tokio runtime, on a thread of its own.
//! Async callers, on whatever runtime they run, talk to those tasks through channels only.
//! Blocking callers (the segment store) need no runtime of their own: [`block_on`] runs the
//! layer's futures on the caller's thread, with this runtime's timers, and their sockets are
//! their own (see [`crate::blocking`]).

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Wake, Waker};

use tokio::runtime::Handle;

/// The runtime's handle (the runtime itself lives on its thread until the process ends), or
/// the error of a system that refused the thread.
fn handle() -> std::io::Result<&'static Handle> {
    static HANDLE: OnceLock<Option<Handle>> = OnceLock::new();
    let handle = HANDLE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("url-dedup-redis-io".into())
            .spawn(move || {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => {
                        let _ = tx.send(Some(runtime.handle().clone()));
                        // Drives the connection tasks and the timers for as long as the process
                        // lives.
                        runtime.block_on(std::future::pending::<()>());
                    }
                    Err(_) => {
                        let _ = tx.send(None);
                    }
                }
            });
        spawned.ok().and_then(|_| rx.recv().ok().flatten())
    });
    handle.as_ref().ok_or_else(|| {
        std::io::Error::other("the system refused the thread that runs the Redis connections")
    })
}

/// Starts `task` on the I/O thread.
pub(crate) fn spawn<F>(task: F) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    drop(handle()?.spawn(task));
    Ok(())
}

/// Runs `future` to completion on the calling thread, with the I/O runtime's timers: how the
/// blocking API uses the same async code as everyone else.
///
/// The future only waits on channels and timers; sockets are the I/O thread's. Calling this
/// from an async task blocks that task's thread, as any blocking call does: use
/// `spawn_blocking` there.
pub(crate) fn block_on<F: Future>(future: F) -> std::io::Result<F::Output> {
    let _context = handle()?.enter();
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return Ok(value);
        }
        // A wake-up before the park makes the park return at once; spurious returns only cost
        // one more poll.
        std::thread::park();
    }
}

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn block_on_runs_timers_and_channels() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let _ = tx.send(7);
        })
        .unwrap();
        let got = block_on(async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            rx.await
        })
        .unwrap();
        assert_eq!(got, Ok(7));
    }

    #[test]
    fn block_on_works_inside_another_runtime() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let value = runtime.block_on(async {
            block_on(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                3
            })
            .unwrap()
        });
        assert_eq!(value, 3);
    }
}
