//! Shared by the concurrency tests: a thread's mixed workload.

use std::time::{Duration, Instant};

use robotmem::*;

pub fn p95(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() * 95 / 100).copied().unwrap_or(0)
}

/// What one thread did: final (id, content) of its live memories, learn µs, recall µs, errors.
pub type Work = (Vec<(i64, String)>, Vec<u64>, Vec<u64>, Vec<String>);

/// One thread's work.
pub fn worker(db: &Db, tag: &str, secs: u64) -> Work {
    let (mut live, mut learn_us, mut recall_us, mut errors) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let t0 = Instant::now();
    let mut k = 0u64;
    let mut session: Option<String> = None;
    while t0.elapsed() < Duration::from_secs(secs) {
        k += 1;
        let text = format!("{tag} visited waypoint {k} at heading {}.{} deg", k * 7, k % 10);
        let t = Instant::now();
        match db.learn(&LearnRequest { insight: &text, session_id: session.as_deref(), ..Default::default() }) {
            Ok(o) if o.duplicate.is_none() => live.push((o.memory_id, text)),
            Ok(o) => errors.push(format!("unexpected duplicate of #{}: {text}", o.memory_id)),
            Err(e) => errors.push(format!("learn: {e}")),
        }
        learn_us.push(t.elapsed().as_micros() as u64);
        let t = Instant::now();
        if let Err(e) = db.recall(&RecallRequest { query: "waypoint heading", ..Default::default() }) {
            errors.push(format!("recall: {e}"));
        }
        recall_us.push(t.elapsed().as_micros() as u64);
        if k.is_multiple_of(7) && !live.is_empty() {
            let (id, old) = live.swap_remove(0);
            let new = format!("{old} (re-measured)");
            match db.update(id, &new, None) {
                Ok(_) => live.push((id, new)),
                Err(e) => errors.push(format!("update #{id}: {e}")),
            }
        }
        if k.is_multiple_of(11) && !live.is_empty() {
            let (id, _) = live.swap_remove(0);
            if let Err(e) = db.forget(id, "superseded by a later survey") {
                errors.push(format!("forget #{id}: {e}"));
            }
        }
        if k.is_multiple_of(13) {
            match session.take() {
                None => match db.start_session(None, None) {
                    Ok(s) => session = Some(s.session_id),
                    Err(e) => errors.push(format!("start_session: {e}")),
                },
                Some(s) => {
                    if let Err(e) = db.end_session(&s, Some(0.5)) {
                        errors.push(format!("end_session: {e}"));
                    }
                }
            }
        }
    }
    (live, learn_us, recall_us, errors)
}
