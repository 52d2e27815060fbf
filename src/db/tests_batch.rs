//! Issue 26, F8: `learn_batch` slowed down as the file grew (batches of 10,000 at
//! 0.49 / 0.95 / 2.42 / 5.92 s). Its transaction ran inside a savepoint (group
//! commit's, one per job), so every page the batch changed was copied into the
//! in-memory statement journal, and every later statement that journaled a page
//! walked that whole list when it ended. These tests count work, never time.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use parking_lot::Mutex;

use super::tests::vm_ops;
use super::Db;
use crate::error::Status;
use crate::options::{Durability, OpenOptions};
use crate::types::{LearnRequest, RecallRequest};

unsafe extern "C" fn record_stmt(_: c_uint, seen: *mut c_void, _: *mut c_void, sql: *mut c_void) -> c_int {
    // SAFETY: `statements` passes a pointer to its list, alive while the callback
    // is set; for SQLITE_TRACE_STMT the last argument is the statement's text.
    let seen = unsafe { &*(seen as *const Mutex<Vec<String>>) };
    let sql = unsafe { CStr::from_ptr(sql as *const c_char) };
    seen.lock().push(sql.to_string_lossy().into_owned());
    0
}

/// The SQL statements (and trigger programs, as "-- TRIGGER …") the writer
/// connection starts during `f`.
fn statements(db: &Db, f: impl FnOnce()) -> Vec<String> {
    let seen = Mutex::new(Vec::new());
    let set = |on: bool| {
        let w = db.store.writer_for_test();
        // SAFETY: the handle is valid while the guard is held; the callback is a plain fn.
        unsafe {
            rusqlite::ffi::sqlite3_trace_v2(
                w.handle(),
                if on { rusqlite::ffi::SQLITE_TRACE_STMT as c_uint } else { 0 },
                if on { Some(record_stmt) } else { None },
                &seen as *const Mutex<Vec<String>> as *mut c_void,
            )
        }
    };
    set(true);
    f();
    set(false);
    seen.into_inner()
}

/// Short texts like the ("batch item i xxxxxx"); every third one without
/// a number, so both near-duplicate paths (numbers index, text index) run.
fn texts(from: usize, n: usize) -> Vec<String> {
    (from..from + n)
        .map(|i| {
            let tag: String = (0..6).map(|k| (b'a' + ((i / 26usize.pow(k)) % 26) as u8) as char).collect();
            match i % 3 {
                0 => format!("batch item {tag} without a number"),
                _ => format!("batch item {i} {tag}"),
            }
        })
        .collect()
}

fn learn_batch(db: &Db, texts: &[String]) -> Result<Vec<crate::types::LearnOutcome>, crate::Error> {
    let reqs: Vec<LearnRequest> = texts.iter().map(|t| LearnRequest { insight: t, ..Default::default() }).collect();
    db.learn_batch(&reqs)
}

fn db() -> Db {
    let mut o = OpenOptions::in_memory();
    o.durability = Durability::Normal;
    o.embeddings = false;
    Db::open(o).unwrap()
}

/// A batch runs in a transaction of its own without a savepoint, and its work
/// per item (SQLite instructions and statements) is the same at 1,000 and at
/// 10,000 stored memories.
#[test]
fn a_batch_runs_without_a_savepoint_and_its_work_per_item_does_not_grow() {
    let db = db();
    let mut stored = 0;
    let mut per_item = Vec::new();
    for upto in [1_000, 10_000] {
        while stored < upto {
            learn_batch(&db, &texts(stored, 500)).unwrap();
            stored += 500;
        }
        let batch = texts(stored, 300);
        let mut ops = 0;
        let sql = statements(&db, || {
            ops = vm_ops(&db, || assert!(learn_batch(&db, &batch).unwrap().iter().all(|o| o.duplicate.is_none())))
        });
        stored += batch.len();
        let savepoints: Vec<&String> = sql.iter().filter(|s| s.to_ascii_uppercase().contains("SAVEPOINT")).collect();
        assert!(savepoints.is_empty(), "a batch's transaction must not run inside a savepoint: {savepoints:?}");
        per_item.push((ops as f64 / batch.len() as f64, sql.len() as f64 / batch.len() as f64));
    }
    println!("per batch item: {per_item:?} (SQLite instructions, statements) at 1,000 and 10,000 memories");
    let (ops, stmts) = (per_item[1].0 / per_item[0].0, per_item[1].1 / per_item[0].1);
    assert!(ops < 1.3, "a batch item's SQLite work grows with the database: {per_item:?}");
    assert!(stmts < 1.1, "a batch item's statements grow with the database: {per_item:?}");
}

/// Without its savepoint a failing batch still leaves nothing: an item into an
/// ended session fails the call after earlier items were written, and none of
/// them is in the database; the next write works.
#[test]
fn a_failing_batch_leaves_nothing() {
    let db = db();
    let ended = db.start_session(None, None).unwrap().session_id;
    db.end_session(&ended, None).unwrap();
    let items = ["conveyor seven stopped at the curtain", "conveyor eight stopped at the curtain"];
    let reqs = [
        LearnRequest { insight: items[0], ..Default::default() },
        LearnRequest { insight: items[1], session_id: Some(&ended), ..Default::default() },
    ];
    let err = db.learn_batch(&reqs).unwrap_err();
    assert_eq!(err.status, Status::InvalidState, "{err:?}");
    let found = db.recall(&RecallRequest { query: "conveyor curtain", n: 10, ..Default::default() }).unwrap();
    assert!(found.hits.is_empty(), "a failed batch wrote {:?}", found.hits);
    let again = db.learn(&LearnRequest { insight: items[0], ..Default::default() }).unwrap();
    assert!(again.duplicate.is_none());
}

/// A batch never shares a group transaction: writes queued before and after it
/// commit in groups of their own (three transactions for 3 + batch + 2 writes),
/// and all of them are stored.
#[test]
fn a_batch_queued_among_other_writes_commits_alone() {
    let db = db();
    let (_, before) = db.commit_counts();
    std::thread::scope(|s| {
        let held = db.store.writer_for_test();
        let mut handles = Vec::new();
        for i in 0..6 {
            let db = &db;
            handles.push(s.spawn(move || {
                match i {
                    3 => learn_batch(db, &texts(100, 50)).map(|o| o.len()),
                    _ => db
                        .learn(&LearnRequest {
                            insight: &format!("arm {i} parked beside the charger"),
                            ..Default::default()
                        })
                        .map(|_| 1),
                }
            }));
            while db.store.queued_for_test() < i + 1 {
                std::thread::yield_now();
            }
        }
        drop(held);
        let stored: usize = handles.into_iter().map(|h| h.join().unwrap().unwrap()).sum();
        assert_eq!(stored, 5 + 50);
    });
    let (_, after) = db.commit_counts();
    assert_eq!(after - before, 3, "3 writes, the batch alone, 2 writes");
    let found = db.recall(&RecallRequest { query: "arm parked charger", n: 10, ..Default::default() }).unwrap();
    assert_eq!(found.hits.len(), 5);
}
