//! Group commit: writes that several threads of one handle make at the same time
//! share one transaction, so one commit (one fsync with `Durability::Full`)
//! acknowledges all of them.
//!
//! A writer queues its job and waits. The writer at the front of the queue (the
//! leader) takes the writer connection, then every job queued by then — those
//! that arrived while the previous transaction was committing — and runs them in
//! one `BEGIN IMMEDIATE` transaction, each inside its own savepoint: a job that
//! fails is rolled back alone and gets its own error, the others commit. A job's
//! result is handed back only after the commit, so every acknowledgement is as
//! durable as before. The leader then marks its group done, removes it from the
//! queue and wakes the waiters: the group's writers return, and the next writer
//! in line leads the next group. First come, first served: a follower never waits
//! for the writer connection again (it used to, to read its result, and could be
//! overtaken by several later groups: a p95 of 10.7 ms at p50 0.15 ms with eight
//! threads and `Normal`).
//!
//! A group of one job runs without a savepoint: its transaction is its savepoint
//! (a failure rolls the transaction back). A savepoint makes SQLite copy every page
//! the job changes into the statement journal, held in memory in 1 KiB chunks
//! (`temp_store = MEMORY`), and every later statement that journals a page walks
//! that whole list when it ends: a job of thousands of writes (`learn_batch`) cost
//! the square of its size, more the larger the file (issue 26, F8). A large job
//! asks to run alone ([`Store::write_alone`]): it never shares a group.
//!
//! One thread alone sees no difference (a group of one). Under contention the fsync
//! wait, which dominates a durable write and grows with a busy CPU (the waiting
//! thread must be scheduled again), is paid once per group instead of once per write.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::Store;
use crate::error::{Error, Result, Status};

/// Attempts of a write transaction that keeps failing with `SQLITE_BUSY`.
const WRITE_ATTEMPTS: u32 = 3;

/// What the owner of the writes is told about each group transaction. The leader's
/// hooks serve the whole group: all jobs of a store come from the same owner.
pub trait TxHooks: Sync {
    /// The transaction has begun; no job has run yet.
    fn begin(&self, conn: &Connection) -> Result<()>;
    /// The transaction committed (`true`) or was rolled back.
    fn end(&self, committed: bool);
}

/// Hooks of a store without an owner (opening, migrations).
pub struct NoHooks;

impl TxHooks for NoHooks {
    fn begin(&self, _: &Connection) -> Result<()> {
        Ok(())
    }
    fn end(&self, _: bool) {}
}

type Job<'a> = dyn FnMut(&Connection) -> Result<()> + Send + 'a;
type Outcome = std::thread::Result<Result<()>>;

/// A queued job, on the stack of the thread that waits for it.
struct Slot {
    /// The job, its lifetime erased: the owner does not return before the job
    /// has run and every pointer to it is gone (see [`Store::write`]).
    job: *mut Job<'static>,
    outcome: Option<Outcome>,
}

/// How a waiting writer learns its job is done, or that it leads; beside its
/// slot, so the leader's `&mut Slot` never overlaps what the owner reads.
struct Waiter {
    /// Set (under the queue's lock) once the slot's `outcome` is final.
    done: AtomicBool,
    /// Wakes the owner: its job is done, or it is at the front of the line.
    wake: Condvar,
}

/// A queued slot, its waiter, and whether its job runs alone (in a group of its own).
#[derive(Clone, Copy, PartialEq)]
struct SlotPtr(*mut Slot, *const Waiter, bool);
// SAFETY: a slot's job and outcome are only touched by the leader running its
// group; its owner reads them after seeing `done`, which the leader sets under
// the queue's lock after the last touch. The waiter is only read through `&`.
unsafe impl Send for SlotPtr {}

/// Writers in line (the group being run first), and what groups have done so far.
#[derive(Default)]
pub struct Queue {
    waiting: Mutex<VecDeque<SlotPtr>>,
    /// Writes committed and the transactions that committed them.
    writes: AtomicU64,
    commits: AtomicU64,
}

impl Store {
    /// Runs `f` in a write transaction and commits it; `f` may share the
    /// transaction with other threads' writes (see the module docs) and may run
    /// again if the database stays busy, so it must have no effects outside it.
    pub fn write<T: Send>(&self, hooks: &dyn TxHooks, f: impl FnMut(&Connection) -> Result<T> + Send) -> Result<T> {
        self.write_in_line(hooks, false, f)
    }

    /// [`Store::write`] in a transaction of its own, never grouped with other
    /// writes, so it runs without a savepoint: for jobs of many writes, whose
    /// statement journal would grow with every page they touch (see the module docs).
    pub fn write_alone<T: Send>(
        &self,
        hooks: &dyn TxHooks,
        f: impl FnMut(&Connection) -> Result<T> + Send,
    ) -> Result<T> {
        self.write_in_line(hooks, true, f)
    }

    fn write_in_line<T: Send>(
        &self,
        hooks: &dyn TxHooks,
        alone: bool,
        mut f: impl FnMut(&Connection) -> Result<T> + Send,
    ) -> Result<T> {
        self.writable()?;
        let mut value: Option<T> = None;
        let mut run = |c: &Connection| -> Result<()> {
            value = Some(f(c)?);
            Ok(())
        };
        let job: *mut Job<'_> = &mut run;
        // SAFETY: only the lifetime is erased; see `Slot::job`.
        let job: *mut Job<'static> = unsafe { std::mem::transmute(job) };
        let mut slot = Slot { job, outcome: None };
        let waiter = Waiter { done: AtomicBool::new(false), wake: Condvar::new() };
        // The slot is reached only through this pointer (see `SlotPtr`).
        let me = SlotPtr(&mut slot, &waiter, alone);
        let done = || waiter.done.load(Ordering::Relaxed); // read and written under the queue's lock
        let mut line = self.queue.waiting.lock();
        line.push_back(me);
        while !done() && line.front() != Some(&me) {
            waiter.wake.wait(&mut line);
        }
        if !done() {
            // The front of the line leads: every writer queued once it holds the
            // connection joins its group (they stay in line until it is done).
            drop(line);
            let conn = self.writer.lock();
            let group = group_of(&self.queue.waiting.lock());
            self.run_group(&conn, hooks, &group);
            drop(conn);
            let mut line = self.queue.waiting.lock();
            for s in &group {
                line.pop_front();
                // SAFETY: the waiters are alive: their owners wait for `done`, and
                // read it under this lock, after this.
                let w = unsafe { &*s.1 };
                w.done.store(true, Ordering::Relaxed);
                w.wake.notify_one();
            }
            if let Some(next) = line.front() {
                // SAFETY: a waiter in line is alive (its owner waits in the loop above).
                unsafe { &*next.1 }.wake.notify_one();
            }
        } else {
            drop(line);
        }
        // `done` was seen or set under the lock: no other thread has a pointer to
        // the slot or the job any more.
        let outcome = slot.outcome.take();
        match outcome {
            Some(Ok(Ok(()))) => Ok(value.take().expect("a job that succeeded set its value")),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Err(Error::internal("a write was lost by the thread that ran it")),
        }
    }

    /// Writes committed through [`Store::write`] and the transactions that committed
    /// them (fewer when writes were grouped).
    pub fn commit_counts(&self) -> (u64, u64) {
        (self.queue.writes.load(Ordering::Relaxed), self.queue.commits.load(Ordering::Relaxed))
    }

    /// Writes waiting in the queue (tests).
    #[cfg(test)]
    pub fn queued_for_test(&self) -> usize {
        self.queue.waiting.lock().len()
    }

    /// Runs `group` in one transaction (retried while busy) and fills every slot's
    /// outcome, whatever happens.
    fn run_group(&self, conn: &Connection, hooks: &dyn TxHooks, group: &[SlotPtr]) {
        // This process's turn among the writers of the file, for the whole transaction.
        let _turn = self.turns.as_ref().and_then(|t| t.take(self.config.busy_timeout));
        let mut attempt = 0;
        let result = loop {
            attempt += 1;
            // SAFETY: the slots are alive (their owners wait for the writer lock we hold).
            let slots = || group.iter().map(|s| unsafe { &mut *s.0 });
            let run = catch_unwind(AssertUnwindSafe(|| attempt_group(conn, hooks, slots())));
            match run {
                Ok(Err(e)) if e.status == Status::Busy && attempt < WRITE_ATTEMPTS => {
                    std::thread::sleep(Duration::from_millis(10 * attempt as u64));
                }
                Ok(Err(e)) if e.status == Status::Busy => {
                    break Err(Error::new(
                        Status::Busy,
                        format!(
                            "database stayed locked by another connection for {WRITE_ATTEMPTS} attempts of {} ms: {}",
                            self.config.busy_timeout.as_millis(),
                            e.message
                        ),
                    ));
                }
                Ok(r) => break r,
                Err(_) => break Err(Error::internal("a write transaction failed unexpectedly (panic)")),
            }
        };
        if result.is_ok() {
            self.queue.commits.fetch_add(1, Ordering::Relaxed);
        }
        for s in group {
            // SAFETY: as above.
            let slot = unsafe { &mut *s.0 };
            if result.is_ok() && matches!(slot.outcome, Some(Ok(Ok(())))) {
                self.queue.writes.fetch_add(1, Ordering::Relaxed);
            }
            match &result {
                // The transaction committed: each job keeps its own outcome.
                Ok(()) => {}
                // Nothing committed: a job that succeeded inside it did not happen.
                Err(e) => {
                    if !matches!(slot.outcome, Some(Ok(Err(_)) | Err(_))) {
                        slot.outcome = Some(Ok(Err(e.clone())));
                    }
                }
            }
            if slot.outcome.is_none() {
                slot.outcome = Some(Ok(Err(Error::internal("a write transaction ended before this write ran"))));
            }
        }
    }
}

/// The group the leader (the front of `line`) runs: itself when it runs alone,
/// else every writer in line up to the first that runs alone. Always a prefix
/// of the line.
fn group_of(line: &VecDeque<SlotPtr>) -> Vec<SlotPtr> {
    match line.front() {
        Some(first) if first.2 => vec![*first],
        _ => line.iter().take_while(|s| !s.2).copied().collect(),
    }
}

/// One attempt: begin, every job in its savepoint (a lone job in none), commit.
/// A busy job makes the whole attempt busy (it is retried).
fn attempt_group<'s>(conn: &Connection, hooks: &dyn TxHooks, slots: impl Iterator<Item = &'s mut Slot>) -> Result<()> {
    let mut slots: Vec<&mut Slot> = slots.collect();
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let result = (|| {
        hooks.begin(&tx)?;
        if let [slot] = slots.as_mut_slice() {
            return run_lone(&tx, slot);
        }
        for slot in slots {
            slot.outcome = None;
            tx.execute_batch("SAVEPOINT rm_job")?;
            // SAFETY: the job is alive (its owner waits for the writer lock).
            let job = unsafe { &mut *slot.job };
            let outcome: Outcome = catch_unwind(AssertUnwindSafe(|| job(&tx)));
            match &outcome {
                Ok(Ok(())) => tx.execute_batch("RELEASE rm_job")?,
                Ok(Err(e)) if e.status == Status::Busy => return Err(e.clone()),
                // After some errors (SQLITE_FULL, I/O) SQLite has rolled back the whole
                // transaction: nothing of the group stands, every job gets the error.
                Ok(Err(e)) if tx.is_autocommit() => return Err(e.clone()),
                _ => tx.execute_batch("ROLLBACK TO rm_job; RELEASE rm_job")?,
            }
            slot.outcome = Some(outcome);
        }
        Ok(())
    })();
    let result = result.and_then(|()| Ok(tx.commit()?));
    hooks.end(result.is_ok());
    result
}

/// The job of a group of one, without a savepoint: when it fails the caller
/// rolls the transaction back (it is not committed), and the job keeps its own
/// error; a busy job leaves its outcome unset so the attempt is retried.
fn run_lone(tx: &Connection, slot: &mut Slot) -> Result<()> {
    slot.outcome = None;
    // SAFETY: the job is alive (its owner waits for the writer lock).
    let job = unsafe { &mut *slot.job };
    let outcome: Outcome = catch_unwind(AssertUnwindSafe(|| job(tx)));
    let failed = match &outcome {
        Ok(Ok(())) => None,
        Ok(Err(e)) if e.status == Status::Busy => return Err(e.clone()),
        Ok(Err(e)) => Some(e.clone()),
        Err(_) => Some(Error::internal("a write failed unexpectedly (panic)")),
    };
    slot.outcome = Some(outcome);
    failed.map_or(Ok(()), Err)
}
