//! The ONNX Runtime sessions of one model, and how callers share them.
//!
//! Each session runs on one thread: with the runtime's threads not spinning
//! (spinning would hold a core while idle), a second intra-op thread makes one
//! text slower, not faster (a query: USE 1.09 → 1.41 ms, MiniLM 1.62 → 2.50 ms on
//! 2 cores), while two texts on two sessions take two cores fully. Sessions share
//! the mapped weights, so one more costs the runtime's own buffers, not the model.
//!
//! Slot 0 holds the session made at open; the others (up to `embed_threads`) are
//! made when they are first needed: by a batch (learn_batch, reembed, import)
//! that spreads its texts over them, or by a caller that finds every made session
//! busy. Callers of one text or a few — each learn, each recall's query — go
//! through [`Sessions::shared`]: a caller that finds a session free runs its texts
//! at once; otherwise its texts wait in a queue, and the next caller to get a
//! session runs the queued texts of every waiting caller in one model run (up to
//! the model's `max_batch`, at most [`MAX_SHARED_RUN`]), as group commit does for
//! their writes. With `max_batch` 1 (the default model) each run takes one text
//! and concurrent callers spread over the sessions instead.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use ort::session::{builder::GraphOptimizationLevel, Session};
use parking_lot::{Condvar, Mutex, MutexGuard};

use super::unavailable;
use crate::error::{Error, Result};

/// Most texts of waiting callers one shared run takes.
pub(crate) const MAX_SHARED_RUN: usize = 32;

/// Makes the session of a slot not made yet (`None`: it failed; the slot stays unused).
type Make<W> = Box<dyn Fn() -> Option<W> + Send + Sync>;

/// One caller's texts (already tokenised) waiting in the queue, and their result.
struct Job<I, O> {
    items: Vec<I>,
    out: Mutex<Option<Result<Vec<O>>>>,
}

/// `W`: a session with whatever its runs keep (the engine's: an ONNX Runtime
/// session and its input buffers); `I`, `O`: one text's input and output.
pub(crate) struct Sessions<W, I, O> {
    make: Make<W>,
    /// `None` inside: making that session failed; the slot is not used.
    slots: Vec<OnceLock<Option<Mutex<W>>>>,
    /// Callers of [`Self::shared`] waiting for a session, oldest first.
    queue: Mutex<VecDeque<Arc<Job<I, O>>>>,
    /// Signalled (under `queue`) when a session comes free or a job is done.
    freed: Condvar,
}

/// A session held by one caller; letting it go wakes the waiting callers.
pub(crate) struct Held<'a, W, I, O> {
    worker: Option<MutexGuard<'a, W>>,
    owner: &'a Sessions<W, I, O>,
}

impl<W, I, O> std::ops::Deref for Held<'_, W, I, O> {
    type Target = W;
    fn deref(&self) -> &W {
        self.worker.as_ref().expect("held until dropped")
    }
}

impl<W, I, O> std::ops::DerefMut for Held<'_, W, I, O> {
    fn deref_mut(&mut self) -> &mut W {
        self.worker.as_mut().expect("held until dropped")
    }
}

impl<W, I, O> Drop for Held<'_, W, I, O> {
    fn drop(&mut self) {
        // Unlocked before the wake-up, so a woken caller finds it free.
        drop(self.worker.take());
        let _queue = self.owner.queue.lock();
        self.owner.freed.notify_all();
    }
}

/// The jobs one shared run took; any not answered when it is dropped (the run
/// panicked) get an error, so their callers never wait forever.
struct Taken<'a, I, O>(Vec<Arc<Job<I, O>>>, &'a Condvar, &'a Mutex<VecDeque<Arc<Job<I, O>>>>);

impl<I, O> Drop for Taken<'_, I, O> {
    fn drop(&mut self) {
        for job in &self.0 {
            let mut out = job.out.lock();
            if out.is_none() {
                *out = Some(Err(unavailable("the model run stopped before it finished")));
            }
        }
        let _queue = self.2.lock();
        self.1.notify_all();
    }
}

impl<W, I, O> Sessions<W, I, O> {
    /// Up to `size` sessions, the first one `first`, the others made by `make`.
    pub(crate) fn new(first: W, size: usize, make: impl Fn() -> Option<W> + Send + Sync + 'static) -> Self {
        let slots: Vec<_> = (0..size.max(1)).map(|_| OnceLock::new()).collect();
        let _ = slots[0].set(Some(Mutex::new(first)));
        Sessions { make: Box::new(make), slots, queue: Mutex::new(VecDeque::new()), freed: Condvar::new() }
    }

    /// How many texts may be embedded at once.
    pub(crate) fn size(&self) -> usize {
        self.slots.len()
    }

    /// A free session, if there is one; with `grow`, a session not made yet is
    /// made for the caller when every made one is busy (~80 ms, once per slot).
    fn try_hold(&self, grow: bool) -> Option<Held<'_, W, I, O>> {
        let made = self.slots.iter().filter_map(|s| s.get().and_then(Option::as_ref));
        let worker = made.filter_map(Mutex::try_lock).next().or_else(|| {
            if !grow {
                return None;
            }
            let unmade = self.slots.iter().find(|s| s.get().is_none())?;
            let made = unmade.get_or_init(|| (self.make)().map(Mutex::new));
            made.as_ref().and_then(Mutex::try_lock)
        })?;
        Some(Held { worker: Some(worker), owner: self })
    }

    /// Runs `f` on a free session; with `grow` (a batch) a session not made yet is
    /// made for it; when every session is busy, waits for one to come free.
    pub(crate) fn with<T>(&self, grow: bool, f: impl FnOnce(&mut W) -> T) -> T {
        if let Some(mut held) = self.try_hold(grow) {
            return f(&mut held);
        }
        let mut queue = self.queue.lock();
        loop {
            if let Some(mut held) = self.try_hold(false) {
                drop(queue);
                return f(&mut held);
            }
            self.freed.wait(&mut queue);
        }
    }

    /// Runs one caller's `items` (see the module header): at once on a free
    /// session, or in one run with other waiting callers' items; `run` gets a
    /// session and the items of one run and returns one output per item.
    pub(crate) fn shared(
        &self,
        items: Vec<I>,
        max_run: usize,
        run: impl Fn(&mut W, &[&I]) -> Result<Vec<O>>,
    ) -> Result<Vec<O>> {
        let job = Arc::new(Job { items, out: Mutex::new(None) });
        let max_run = max_run.clamp(1, MAX_SHARED_RUN);
        let mut queue = self.queue.lock();
        queue.push_back(job.clone());
        loop {
            if let Some(r) = job.out.lock().take() {
                return r;
            }
            if queue.is_empty() {
                // Every job is taken: this caller's is being run by another.
                self.freed.wait(&mut queue);
                continue;
            }
            let waiting = queue.iter().any(|j| Arc::ptr_eq(j, &job));
            let held = match self.try_hold(false) {
                Some(h) => Some(h),
                // Every made session busy: make another (not under the queue lock).
                None if waiting => MutexGuard::unlocked(&mut queue, || self.try_hold(true)),
                None => None,
            };
            let Some(mut held) = held else {
                self.freed.wait(&mut queue);
                continue;
            };
            if queue.is_empty() {
                // Taken meanwhile; letting the session go locks the queue.
                MutexGuard::unlocked(&mut queue, || drop(held));
                continue;
            }
            // The oldest waiting callers' items, one caller at least.
            let mut taken = Taken(Vec::new(), &self.freed, &self.queue);
            let mut count = 0;
            while let Some(next) = queue.front() {
                if !taken.0.is_empty() && count + next.items.len() > max_run {
                    break;
                }
                count += next.items.len();
                taken.0.push(queue.pop_front().expect("front exists"));
            }
            MutexGuard::unlocked(&mut queue, || {
                let all: Vec<&I> = taken.0.iter().flat_map(|j| j.items.iter()).collect();
                answer(&taken.0, run(&mut held, &all));
                drop(held);
                drop(taken);
            });
        }
    }
}

/// Hands each job its share of one run's outputs (or the run's error).
fn answer<I, O>(jobs: &[Arc<Job<I, O>>], result: Result<Vec<O>>) {
    let total: usize = jobs.iter().map(|j| j.items.len()).sum();
    let mut outputs = match result {
        Ok(v) if v.len() == total => v.into_iter(),
        Ok(v) => {
            let e = unavailable(format!("the model gave {} outputs for {total} texts", v.len()));
            return fail(jobs, e);
        }
        Err(e) => return fail(jobs, e),
    };
    for job in jobs {
        *job.out.lock() = Some(Ok(outputs.by_ref().take(job.items.len()).collect()));
    }
}

fn fail<I, O>(jobs: &[Arc<Job<I, O>>], e: Error) {
    for job in jobs {
        *job.out.lock() = Some(Err(e.clone()));
    }
}

/// A session of `model_path` (its external data, `model.data`, is memory-mapped by
/// ONNX Runtime) running on the calling thread alone.
// The builder's error type is ONNX Runtime's own (large); it is mapped at once.
#[allow(clippy::result_large_err)]
pub(crate) fn create(env: &ort::environment::Environment, model_path: &std::path::Path) -> Result<Session> {
    let fail = |e: &dyn std::fmt::Display| unavailable(format!("cannot load {}: {e}", model_path.display()));
    ort::session::builder::SessionBuilder::new(env)
        .map_err(|e| fail(&e))?
        .with_intra_threads(1)
        .and_then(|b| b.with_inter_threads(1))
        .and_then(|b| b.with_intra_op_spinning(false))
        .and_then(|b| b.with_optimization_level(GraphOptimizationLevel::All))
        .map_err(|e| fail(&e))?
        .commit_from_file(model_path)
        .map_err(|e| fail(&e))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::*;

    /// A stand-in session: records the items of every run it makes.
    #[derive(Default)]
    struct Fake {
        runs: Vec<Vec<u32>>,
    }

    type S = Sessions<Fake, u32, u32>;

    fn run(w: &mut Fake, items: &[&u32]) -> Result<Vec<u32>> {
        w.runs.push(items.iter().map(|&&i| i).collect());
        Ok(items.iter().map(|&&i| i * 10).collect())
    }

    fn wait_for_queue(s: &S, len: usize) {
        let start = Instant::now();
        while s.queue.lock().len() < len {
            assert!(start.elapsed() < Duration::from_secs(20), "callers did not queue");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// `jobs` callers queued behind the held only session, released together.
    fn queued_runs(jobs: Vec<Vec<u32>>, max_run: usize) -> (Vec<Vec<u32>>, Vec<Result<Vec<u32>>>) {
        let s: S = Sessions::new(Fake::default(), 1, || None);
        let held = s.try_hold(false).expect("free");
        let n = jobs.len();
        let results = std::thread::scope(|sc| {
            let handles: Vec<_> = jobs
                .into_iter()
                .enumerate()
                .map(|(k, items)| {
                    wait_for_queue(&s, k); // in this order
                    let s = &s;
                    sc.spawn(move || s.shared(items, max_run, run))
                })
                .collect();
            wait_for_queue(&s, n);
            drop(held);
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let runs = std::mem::take(&mut s.try_hold(false).expect("free").runs);
        (runs, results)
    }

    #[test]
    fn waiting_callers_share_one_run_in_arrival_order() {
        let (runs, results) = queued_runs((1..=5).map(|i| vec![i]).collect(), 32);
        assert_eq!(runs, vec![vec![1, 2, 3, 4, 5]]);
        for (i, r) in results.into_iter().enumerate() {
            assert_eq!(r.unwrap(), vec![(i as u32 + 1) * 10], "each caller gets its own outputs");
        }
    }

    #[test]
    fn a_run_takes_at_most_max_run_items_but_always_one_caller() {
        let (runs, results) = queued_runs(vec![vec![1, 2], vec![3], vec![4, 5, 6], vec![7]], 2);
        assert_eq!(runs, vec![vec![1, 2], vec![3], vec![4, 5, 6], vec![7]]);
        assert_eq!(results[2].as_ref().unwrap(), &vec![40, 50, 60]);
        let (runs, _) = queued_runs((1..=5).map(|i| vec![i]).collect(), 1);
        assert_eq!(runs.len(), 5, "max_run 1 (the default model): one text per run");
    }

    #[test]
    fn a_run_that_panics_answers_its_callers_with_an_error() {
        fn boom(w: &mut Fake, items: &[&u32]) -> Result<Vec<u32>> {
            if items.len() > 1 {
                panic!("model run panicked");
            }
            run(w, items)
        }
        let s: S = Sessions::new(Fake::default(), 1, || None);
        let held = s.try_hold(false).expect("free");
        let (a, b) = std::thread::scope(|sc| {
            let s = &s;
            let a = sc.spawn(move || s.shared(vec![1], 8, boom));
            wait_for_queue(s, 1);
            let b = sc.spawn(move || s.shared(vec![2], 8, boom));
            wait_for_queue(s, 2);
            drop(held);
            (a.join(), b.join())
        });
        // Whichever caller led the shared run panicked; the other is told, never left waiting.
        let (panicked, told): (Vec<_>, Vec<_>) = [a, b].into_iter().partition(|r| r.is_err());
        assert_eq!((panicked.len(), told.len()), (1, 1));
        let told = told.into_iter().next().unwrap().unwrap();
        assert!(told.unwrap_err().message.contains("stopped"), "an error of its own");
        assert_eq!(s.shared(vec![3], 8, run).unwrap(), vec![30], "the session is usable afterwards");
    }

    #[test]
    fn a_busy_handle_makes_its_next_session_once() {
        let made = AtomicUsize::new(0);
        let made = &*Box::leak(Box::new(made));
        let s: S = Sessions::new(Fake::default(), 2, move || {
            made.fetch_add(1, Ordering::SeqCst);
            Some(Fake::default())
        });
        assert_eq!(s.shared(vec![1], 8, run).unwrap(), vec![10]);
        assert_eq!(made.load(Ordering::SeqCst), 0, "one caller at a time: the first session only");
        let held = s.try_hold(false).expect("free");
        assert_eq!(s.shared(vec![2], 8, run).unwrap(), vec![20], "ran at once on a second session");
        assert_eq!(made.load(Ordering::SeqCst), 1);
        let second = s.try_hold(false).expect("the second is free");
        assert_eq!(second.runs, vec![vec![2]]);
        drop((held, second));
        let failing: S = Sessions::new(Fake::default(), 2, || None);
        let held = failing.try_hold(false).expect("free");
        std::thread::scope(|sc| {
            let f = &failing;
            let h = sc.spawn(move || f.shared(vec![3], 8, run));
            wait_for_queue(f, 1);
            drop(held);
            assert_eq!(h.join().unwrap().unwrap(), vec![30], "a slot that cannot be made is skipped");
        });
    }

    #[test]
    fn many_callers_on_few_sessions_each_get_their_own_outputs() {
        for (size, max_run) in [(1, 1), (1, 32), (2, 1), (2, 4), (3, 32)] {
            let s: S = Sessions::new(Fake::default(), size, || Some(Fake::default()));
            std::thread::scope(|sc| {
                for t in 0..6u32 {
                    let s = &s;
                    sc.spawn(move || {
                        for i in 0..300u32 {
                            let items: Vec<u32> = (0..=(i % 3)).map(|k| t * 100_000 + i * 10 + k).collect();
                            let want: Vec<u32> = items.iter().map(|x| x * 10).collect();
                            let got = match i % 5 {
                                0 => s.with(true, |w| run(w, &items.iter().collect::<Vec<_>>())),
                                _ => s.shared(items, max_run, run),
                            };
                            assert_eq!(got.unwrap(), want);
                        }
                    });
                }
            });
            assert!(s.queue.lock().is_empty());
        }
    }
}
