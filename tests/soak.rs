//! Soak (not run in CI): `cargo test --release --test soak -- --ignored --nocapture`.
//! One handle shared by 8 threads doing learn / recall / update / forget / sessions
//! for RM_SOAK_SECS (default 30) seconds: no error, no deadlock, counts reconcile.

#[path = "common/scratch.rs"]
mod scratch;
use std::sync::Arc;

use robotmem::*;

mod common;
use common::{p95, worker};

#[test]
#[ignore = "soak: run by hand and record in docs/RELIABILITY.md"]
fn eight_threads_one_handle() {
    let secs: u64 = std::env::var("RM_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    let dir = scratch::Scratch::new("soak");
    let db = Arc::new(Db::open(OpenOptions::path(dir.db())).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || worker(&db, &format!("soakbot{t}"), secs))
        })
        .collect();
    let (mut ops, mut live, mut learn_all, mut recall_all) = (0usize, Vec::new(), Vec::new(), Vec::new());
    for h in handles {
        let (l, learn_us, recall_us, errors) = h.join().expect("no thread panicked");
        assert!(errors.is_empty(), "{errors:?}");
        ops += learn_us.len() + recall_us.len();
        learn_all.extend(learn_us);
        recall_all.extend(recall_us);
        live.extend(l);
    }
    for (id, content) in &live {
        let m = db.get(*id).unwrap();
        assert_eq!(&m.content, content);
    }
    let active = db.recall(&RecallRequest { query: "*", n: 100, ..Default::default() }).unwrap();
    assert!(!active.hits.is_empty());
    println!(
        "soak: 8 threads, {secs} s, {ops} operations ({:.0}/s), {} live memories reconciled, p95 learn {} us, recall {} us",
        ops as f64 / secs as f64,
        live.len(),
        p95(&mut learn_all),
        p95(&mut recall_all)
    );
}
