//! Threads that run part of a call while the caller goes on: a recall's query
//! embedding is made on one of them while the calling thread opens the read
//! transaction and makes the BM25 list.
//!
//! The threads stay for the next call instead of being started for each: a
//! thread start cost 160 µs at the median and 1.1 ms at p95 on the benchmark
//! machine (2 cores, 100k memories), on a recall of about 3 ms; a parked thread
//! wakes in a few tens of µs. At most [`MAX_THREADS`] are made (concurrent
//! recalls beyond them make their embedding on their own thread, as they would
//! wait for the model's sessions anyway), each only when a call finds none
//! idle, so a handle that never recalls with a model starts none. Dropping the
//! pool (closing the handle) ends and joins them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;

/// Most threads a handle keeps.
pub(crate) const MAX_THREADS: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// A job and the sender of the thread's own channel, which the thread puts back
/// in the idle list when the job is done: each thread's one sender is either
/// there or travelling with its job, so clearing the list closes every idle
/// thread's channel.
struct Message(Job, Sender<Message>);

#[derive(Default)]
struct Shared {
    /// One sender per idle thread.
    idle: Mutex<Vec<Sender<Message>>>,
    closed: AtomicBool,
}

/// The threads of one handle.
#[derive(Default)]
pub(crate) struct Pool {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// The result of a job run on a pool thread ([`Pool::run`]).
pub(crate) struct Pending<T> {
    result: Receiver<T>,
    done: Arc<AtomicBool>,
}

impl<T> Pending<T> {
    /// Waits for the job; `None` if it panicked.
    pub(crate) fn join(self) -> Option<T> {
        self.result.recv().ok()
    }

    /// A flag the job sets when it has finished (its result is then ready).
    pub(crate) fn done(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.done)
    }
}

impl Pool {
    /// Runs `f` on an idle thread of the pool, or on a new one when none is idle
    /// and fewer than [`MAX_THREADS`] exist; `None` (nothing run) otherwise or when
    /// no thread can be started.
    pub(crate) fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Option<Pending<T>> {
        let (tx, rx) = channel();
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let job: Job = Box::new(move || {
            let out = f();
            flag.store(true, Ordering::Release);
            let _ = tx.send(out);
        });
        let idle = self.shared.idle.lock().pop();
        let sender = match idle {
            Some(s) => s,
            None => self.start()?,
        };
        // A thread in the idle list waits on its channel until the pool closes.
        let back = sender.clone();
        sender.send(Message(job, back)).ok()?;
        Some(Pending { result: rx, done })
    }

    /// A new thread, if fewer than [`MAX_THREADS`] exist and one can be started.
    fn start(&self) -> Option<Sender<Message>> {
        let mut threads = self.threads.lock();
        if threads.len() >= MAX_THREADS || self.shared.closed.load(Ordering::Acquire) {
            return None;
        }
        let (tx, rx) = channel::<Message>();
        let shared = Arc::clone(&self.shared);
        let handle =
            std::thread::Builder::new().name("robotmem-overlap".into()).spawn(move || work(&shared, &rx)).ok()?;
        threads.push(handle);
        Some(tx)
    }

    /// Threads made so far (for tests).
    #[cfg(test)]
    fn threads(&self) -> usize {
        self.threads.lock().len()
    }
}

/// A pool thread: runs each job it is sent, then offers itself again, until the
/// pool closes.
fn work(shared: &Shared, jobs: &Receiver<Message>) {
    while let Ok(Message(job, me)) = jobs.recv() {
        // A panicking job drops its result sender: its caller sees `None`.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        let mut idle = shared.idle.lock();
        if shared.closed.load(Ordering::Acquire) {
            return;
        }
        idle.push(me);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        {
            let mut idle = self.shared.idle.lock();
            self.shared.closed.store(true, Ordering::Release);
            idle.clear(); // idle threads see their channel close
        }
        for t in self.threads.get_mut().drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn threads_are_reused_and_results_come_back() {
        let pool = Pool::default();
        for i in 0..50u64 {
            let p = pool.run(move || i * 2).expect("a thread");
            let done = p.done();
            assert_eq!(p.join(), Some(i * 2));
            assert!(done.load(Ordering::Acquire), "the flag is set before the result is sent");
        }
        // One call at a time: a thread made is offered again (one may not be idle
        // yet when the next call comes: then another is made, up to the cap).
        assert!(pool.threads() <= MAX_THREADS, "{} threads", pool.threads());
    }

    #[test]
    fn at_most_max_threads_then_the_caller_runs_it() {
        let pool = Pool::default();
        let gate = Arc::new(Barrier::new(MAX_THREADS + 1));
        let busy: Vec<_> = (0..MAX_THREADS)
            .map(|i| {
                let gate = Arc::clone(&gate);
                pool.run(move || {
                    gate.wait();
                    i
                })
                .expect("a thread")
            })
            .collect();
        assert!(pool.run(|| 0).is_none(), "every thread is busy and no more are made");
        gate.wait();
        let mut got: Vec<usize> = busy.into_iter().filter_map(Pending::join).collect();
        got.sort_unstable();
        assert_eq!(got, (0..MAX_THREADS).collect::<Vec<_>>());
        assert_eq!(pool.threads(), MAX_THREADS);
    }

    #[test]
    fn a_panicking_job_gives_none_and_the_thread_goes_on() {
        let pool = Pool::default();
        let p = pool.run(|| -> u8 { panic!("job fails") }).expect("a thread");
        assert_eq!(p.join(), None);
        for _ in 0..10 {
            assert_eq!(pool.run(|| 7u8).and_then(Pending::join), Some(7));
        }
        assert!(pool.threads() <= MAX_THREADS);
    }

    #[test]
    fn drop_ends_every_thread() {
        let pool = Pool::default();
        let pending: Vec<_> = (0..3).map(|i| pool.run(move || i).expect("a thread")).collect();
        let alive = Arc::clone(&pool.shared);
        drop(pool); // joins: returns only when every thread has ended
        assert_eq!(Arc::strong_count(&alive), 1, "no thread holds the pool any more");
        let got: Vec<i32> = pending.into_iter().filter_map(Pending::join).collect();
        assert_eq!(got.len(), 3, "jobs sent before the drop ran");
    }
}
