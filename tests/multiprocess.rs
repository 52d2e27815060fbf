//! Several processes on one database file (the ROS case: several nodes): 4
//! processes × 2 threads learn, recall, update, forget and run sessions (decay and
//! consolidation) at once. No "database is locked" may reach a caller, no write
//! may be lost, and every process's final state must be what it wrote.

#[path = "common/scratch.rs"]
mod scratch;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use robotmem::*;

mod common;
use common::{p95, worker};

const PROCESSES: usize = 4;
const THREADS: usize = 2;

fn run_secs() -> u64 {
    std::env::var("RM_MP_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(3)
}

/// Child process: runs THREADS workers on one shared handle and prints its results.
#[test]
fn mp_child() {
    let Some(path) = std::env::var_os("RM_MP_CHILD_DB") else { return };
    let me: usize = std::env::var("RM_MP_CHILD_ID").unwrap().parse().unwrap();
    let db = Arc::new(Db::open(OpenOptions::path(PathBuf::from(path))).unwrap());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || worker(&db, &format!("robot{me}arm{t}"), run_secs()))
        })
        .collect();
    for h in handles {
        let (live, mut learn_us, mut recall_us, errors) = h.join().unwrap();
        for e in &errors {
            println!("ERR {e}");
        }
        for (id, content) in &live {
            println!("LIVE {id} {content}");
        }
        println!("STAT {} {} {} {}", learn_us.len(), recall_us.len(), p95(&mut learn_us), p95(&mut recall_us));
    }
}

#[test]
fn processes_share_one_file_without_lock_errors_or_lost_writes() {
    let dir = scratch::Scratch::new("mp");
    let p = dir.db();
    drop(Db::open(OpenOptions::path(&p)).unwrap());
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|i| {
            Command::new(&exe)
                .args(["mp_child", "--exact", "--nocapture", "--test-threads=1"])
                .env("RM_MP_CHILD_DB", &p)
                .env("RM_MP_CHILD_ID", i.to_string())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<String> =
        children.into_iter().map(|c| String::from_utf8(c.wait_with_output().unwrap().stdout).unwrap()).collect();
    let lines: Vec<&str> = outputs.iter().flat_map(|o| o.lines()).collect();
    let errors: Vec<&&str> = lines.iter().filter(|l| l.starts_with("ERR ")).collect();
    assert!(errors.is_empty(), "{} errors reached callers, e.g. {:?}", errors.len(), &errors[..errors.len().min(5)]);
    let db = Db::open(OpenOptions::path(&p)).unwrap();
    let mut live = 0;
    for l in lines.iter().filter_map(|l| l.strip_prefix("LIVE ")) {
        let (id, content) = l.split_once(' ').unwrap();
        let m = db.get(id.parse().unwrap()).unwrap();
        // Consolidation may merge a session's memories into another; nothing else may change them.
        assert!(m.status == MemoryStatus::Active || m.status == MemoryStatus::Superseded, "#{id} {:?}", m.status);
        assert_eq!(m.content, content, "#{id}: the last write of its owner must stand");
        live += 1;
    }
    let (mut ops, mut learn_p95, mut recall_p95) = (0, 0, 0);
    for s in lines.iter().filter_map(|l| l.strip_prefix("STAT ")) {
        let v: Vec<u64> = s.split(' ').map(|x| x.parse().unwrap()).collect();
        ops += v[0] + v[1];
        learn_p95 = learn_p95.max(v[2]);
        recall_p95 = recall_p95.max(v[3]);
    }
    assert!(live > 0);
    println!(
        "{PROCESSES} processes x {THREADS} threads, {} s: {ops} operations ({:.0}/s), {live} live memories checked, \
         worst thread p95: learn {learn_p95} us, recall {recall_p95} us",
        run_secs(),
        ops as f64 / run_secs() as f64
    );
    let c = rusqlite::Connection::open(&p).unwrap();
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
}
