//! Contention soak (not run in CI): several processes, several threads each, on
//! one database file, each thread running the mixed workload of tests/common
//! (learn, recall, update, forget, sessions) for a while; prints every process's
//! learn latency p50 / p95 / p99 / max and all processes' together.
//!
//!     cargo test --release --test contention -- --ignored --nocapture
//!     RM_CT_PROCS=4 RM_CT_THREADS=3 RM_CT_SECS=40 cargo test --release --test contention -- --ignored --nocapture
//!
//! Checks behaviour only (no error, no lost write); latency is recorded by hand
//! in docs/RELIABILITY.md ("Contention").

#[path = "common/scratch.rs"]
mod scratch;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use robotmem::*;

#[allow(dead_code)] // p95 and friends serve the other concurrency tests
mod common;
use common::worker;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Nearest-rank percentile `p` of sorted `v` (µs), in ms.
fn pct(v: &[u64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1] as f64 / 1e3
}

fn line(label: &str, v: &mut [u64]) -> String {
    v.sort_unstable();
    format!(
        "{label:<10} learns {:>6}  p50 {:>7.2} ms  p95 {:>7.2} ms  p99 {:>7.2} ms  max {:>8.2} ms",
        v.len(),
        pct(v, 50.0),
        pct(v, 95.0),
        pct(v, 99.0),
        pct(v, 100.0)
    )
}

/// Child process: RM_CT_THREADS workers on one handle; prints its errors, its
/// live memories and every learn latency (µs).
#[test]
fn ct_child() {
    let Some(path) = std::env::var_os("RM_CT_CHILD_DB") else { return };
    let me = env("RM_CT_CHILD_ID", 0);
    let db = Arc::new(Db::open(OpenOptions::path(PathBuf::from(path))).unwrap());
    let handles: Vec<_> = (0..env("RM_CT_THREADS", 3))
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || worker(&db, &format!("robot{me}arm{t}"), env("RM_CT_SECS", 40)))
        })
        .collect();
    for h in handles {
        let (live, learn_us, _, errors) = h.join().unwrap();
        for e in &errors {
            println!("ERR {e}");
        }
        for (id, content) in &live {
            println!("LIVE {id} {content}");
        }
        println!("LAT {}", learn_us.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
    }
    Arc::try_unwrap(db).ok().expect("threads are done").close().unwrap();
}

#[test]
#[ignore = "soak: run by hand and record in docs/RELIABILITY.md"]
fn processes_learn_on_one_file_with_a_bounded_tail() {
    let dir = scratch::Scratch::new("contention");
    let p = dir.db();
    drop(Db::open(OpenOptions::path(&p)).unwrap());
    let exe = std::env::current_exe().unwrap();
    let procs = env("RM_CT_PROCS", 4);
    let children: Vec<_> = (0..procs)
        .map(|i| {
            Command::new(&exe)
                .args(["ct_child", "--exact", "--nocapture", "--test-threads=1"])
                .env("RM_CT_CHILD_DB", &p)
                .env("RM_CT_CHILD_ID", i.to_string())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let (mut all, mut live, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "child {i} failed");
        let mut mine: Vec<u64> = Vec::new();
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(e) = l.strip_prefix("ERR ") {
                errors.push(format!("process {i}: {e}"));
            } else if let Some(rest) = l.strip_prefix("LIVE ") {
                let (id, content) = rest.split_once(' ').unwrap();
                live.push((id.parse::<i64>().unwrap(), content.to_string()));
            } else if let Some(rest) = l.strip_prefix("LAT ") {
                mine.extend(rest.split(' ').filter(|s| !s.is_empty()).map(|s| s.parse::<u64>().unwrap()));
            }
        }
        println!("{}", line(&format!("process {i}"), &mut mine));
        all.extend(mine);
    }
    println!("{}", line("all", &mut all));
    assert!(errors.is_empty(), "{errors:?}");
    let db = Db::open(OpenOptions::path(&p)).unwrap();
    for (id, content) in &live {
        assert_eq!(&db.get(*id).unwrap().content, content, "memory #{id}");
    }
    println!("{} live memories reconciled", live.len());
}
