//! Writers of several processes take turns: a `flock` on `<database>-lock`, held
//! for each write transaction.
//!
//! Without it, every process's next writer polls SQLite's write lock (see
//! [`super::busy`]) and whoever polls first after a commit wins: a waiter can lose
//! many times in a row. With 4 processes × 3 threads writing one file on two
//! overloaded cores, learns had a p99 of 53–65 ms and a max of 140–200 ms; a waiter
//! blocked in `flock` is woken by the kernel when the lock is released, and the
//! turns even out: p99 29–38 ms, max 78–207 ms (docs/RELIABILITY.md, issue 26).
//!
//! The lock only orders robotmem's writers; SQLite's own locks still make every
//! transaction safe, so nothing depends on it for correctness:
//! - where the lock file cannot be made (a read-only directory), writers do
//!   without it;
//! - `flock` has no timeout, so a contended wait runs on a helper thread while the
//!   writer waits at most the connection's busy timeout; past it the writer goes
//!   on without its turn (SQLite's busy handling then decides, as without the
//!   lock), and the helper releases the lock as soon as it gets it. At most one
//!   such helper exists per store: while one is still waiting (a writer of
//!   another process stopped while holding its turn), writers do without turns;
//! - a process that dies holding the lock releases it (the kernel closes its file).
//!
//! `flock` locks belong to the open file, not the process, so two handles on one
//! file in one process take turns too, and they never touch SQLite's own POSIX
//! locks on the database (a separate file: closing it cannot drop those).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// The turn lock of one store.
pub(super) struct Turns {
    /// `<database>-lock`, opened (made) at the first write: a store that only
    /// reads, or a file refused at open, leaves no lock file behind.
    path: PathBuf,
    file: OnceLock<Option<Arc<File>>>,
    /// A helper thread is still waiting for the lock.
    waiting: Arc<AtomicBool>,
}

/// A turn: the lock is released when it drops.
pub(super) struct Turn<'a>(&'a File);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        unlock(self.0);
    }
}

/// Hand-over between a writer and the helper thread waiting for it.
#[derive(Default)]
struct Handover {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default, PartialEq)]
enum State {
    #[default]
    Waiting,
    /// The helper holds the lock for the writer.
    Held,
    /// The writer stopped waiting: the helper releases the lock when it gets it.
    Abandoned,
}

impl Turns {
    /// The turn lock beside the database at `db`.
    pub(super) fn new(db: &Path) -> Turns {
        let mut name = db.as_os_str().to_owned();
        name.push("-lock");
        Turns { path: name.into(), file: OnceLock::new(), waiting: Arc::new(AtomicBool::new(false)) }
    }

    /// The lock file; `None` when it cannot be opened or made (writers then do
    /// without turns). A symbolic link in its place is not followed.
    fn file(&self) -> Option<&Arc<File>> {
        self.file
            .get_or_init(|| {
                use std::os::unix::fs::OpenOptionsExt;
                let mut o = std::fs::OpenOptions::new();
                o.write(true).create(true).truncate(false).mode(0o600).custom_flags(libc::O_NOFOLLOW);
                o.open(&self.path).ok().map(Arc::new)
            })
            .as_ref()
    }

    /// Waits for this store's turn, at most `timeout`; `None` when it did not come
    /// in time (or a helper is still waiting from an earlier write, or there is no
    /// lock file).
    pub(super) fn take(&self, timeout: Duration) -> Option<Turn<'_>> {
        let file = self.file()?;
        // While a helper waits, the lock is not taken here either: the helper's
        // wait would end on this store's own lock (same open file) and release it.
        if self.waiting.load(Ordering::Acquire) {
            return None;
        }
        if lock(file, false) {
            return Some(Turn(file));
        }
        if self.waiting.swap(true, Ordering::AcqRel) {
            return None;
        }
        let hand = Arc::new(Handover::default());
        let (mine, waiting, theirs) = (file, Arc::clone(&self.waiting), Arc::clone(&hand));
        let file = Arc::clone(mine);
        let spawned = std::thread::Builder::new().name("robotmem-turn".into()).spawn(move || {
            let got = lock(&file, true);
            let mut state = theirs.state.lock();
            if *state == State::Abandoned {
                if got {
                    unlock(&file);
                }
            } else if got {
                *state = State::Held;
            } else {
                *state = State::Abandoned;
            }
            waiting.store(false, Ordering::Release);
            theirs.changed.notify_one();
        });
        if spawned.is_err() {
            self.waiting.store(false, Ordering::Release);
            return None;
        }
        let mut state = hand.state.lock();
        let deadline = std::time::Instant::now() + timeout;
        while *state == State::Waiting {
            if hand.changed.wait_until(&mut state, deadline).timed_out() {
                break;
            }
        }
        match *state {
            State::Held => Some(Turn(mine)),
            _ => {
                *state = State::Abandoned;
                None
            }
        }
    }
}

/// `flock(LOCK_EX)`, blocking or not; retried when interrupted by a signal.
fn lock(file: &File, block: bool) -> bool {
    let op = if block { libc::LOCK_EX } else { libc::LOCK_EX | libc::LOCK_NB };
    loop {
        // SAFETY: a valid descriptor owned by `file`.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return true;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}

fn unlock(file: &File) {
    // SAFETY: a valid descriptor owned by `file`.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new().prefix("rm-turns-").tempdir().unwrap()
    }

    #[test]
    fn two_stores_take_turns_and_a_stuck_holder_costs_only_the_timeout() {
        let dir = scratch();
        let db = dir.path().join("m.db");
        let (a, b) = (Turns::new(&db), Turns::new(&db));
        assert!(!dir.path().join("m.db-lock").exists(), "made at the first write");
        let held = a.take(Duration::from_secs(1)).expect("free");
        assert!(dir.path().join("m.db-lock").is_file());
        // b waits its timeout, then goes on without a turn; its helper keeps waiting.
        let t = std::time::Instant::now();
        assert!(b.take(Duration::from_millis(50)).is_none());
        assert!(t.elapsed() >= Duration::from_millis(50));
        // While that helper waits, b does not start another one.
        assert!(b.take(Duration::from_secs(5)).is_none());
        drop(held);
        // The abandoned helper gets the lock and gives it back at once.
        let t = std::time::Instant::now();
        let mut turn = None;
        while turn.is_none() && t.elapsed() < Duration::from_secs(5) {
            turn = b.take(Duration::from_millis(100));
        }
        assert!(turn.is_some(), "b gets its turn once the helper released the lock");
        assert!(a.take(Duration::from_millis(20)).is_none(), "and holds it against a");
    }

    #[test]
    fn a_waiting_writer_gets_the_turn_when_it_is_released() {
        let dir = scratch();
        let db = dir.path().join("m.db");
        let (a, b) = (Turns::new(&db), Arc::new(Turns::new(&db)));
        let held = a.take(Duration::from_secs(1)).unwrap();
        let waiter = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.take(Duration::from_secs(10)).is_some())
        };
        std::thread::sleep(Duration::from_millis(30));
        drop(held);
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn no_lock_file_no_turns_and_a_link_is_not_followed() {
        assert!(Turns::new(Path::new("/proc/no-such-dir/m.db")).take(Duration::from_secs(1)).is_none());
        let dir = scratch();
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("m.db-lock")).unwrap();
        assert!(Turns::new(&dir.path().join("m.db")).take(Duration::from_secs(1)).is_none());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }
}
