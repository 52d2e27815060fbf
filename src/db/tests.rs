//! Engine tests that need the engine's insides (its writer connection).

use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Db;
use crate::options::{Durability, OpenOptions};
use crate::types::LearnRequest;

/// Number-free sentences of real English text: the SQuAD development sentences
/// in ../shared/data (CI has it beside the clone), else None (skipped loudly).
pub(crate) fn real_sentences_without_digits(limit: usize) -> Option<Vec<String>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/squad-dev-sentences.jsonl.gz");
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if std::env::var_os("CI").is_some() => panic!("{path}: {e} (CI must have shared/ beside the clone)"),
        Err(_) => {
            eprintln!("SKIPPED: {path} not present beside the checkout");
            return None;
        }
    };
    let mut out = Vec::new();
    for line in std::io::BufReader::new(flate2::read::GzDecoder::new(file)).lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if let Some(t) = v["text"].as_str().filter(|_| v["type"] == "memory") {
            if !t.bytes().any(|b| b.is_ascii_digit()) {
                out.push(t.to_string());
                if out.len() == limit {
                    break;
                }
            }
        }
    }
    Some(out)
}

extern "C" fn count_op(ops: *mut std::ffi::c_void) -> std::ffi::c_int {
    // SAFETY: `vm_ops` passes a pointer to its counter, alive while the handler is set.
    unsafe { &*(ops as *const AtomicU64) }.fetch_add(1, Ordering::Relaxed);
    0
}

/// SQLite virtual-machine instructions the writer connection runs during `f`
/// (all statements, nested ones of FTS5 included).
pub(crate) fn vm_ops(db: &Db, f: impl FnOnce()) -> u64 {
    let ops = AtomicU64::new(0);
    let set = |on: bool| {
        let w = db.store.writer_for_test();
        // SAFETY: the handle is valid while the guard is held; the callback is a plain fn.
        unsafe {
            rusqlite::ffi::sqlite3_progress_handler(
                w.handle(),
                if on { 1 } else { 0 },
                if on { Some(count_op) } else { None },
                &ops as *const AtomicU64 as *mut std::ffi::c_void,
            )
        }
    };
    set(true);
    f();
    set(false);
    ops.load(Ordering::Relaxed)
}

/// Issue 11: the near-duplicate check of texts without numbers ran an FTS5 query
/// that SQLite planned as a loop over every number-free fact (learn 9 ms at 250
/// memories, 90 ms at 2,000). The work of a learn must not grow with the number
/// of stored memories: counted in SQLite instructions (deterministic), not time.
#[test]
fn learning_number_free_text_does_not_grow_with_the_database() {
    let Some(texts) = real_sentences_without_digits(3_300) else { return };
    let mut o = OpenOptions::in_memory();
    o.durability = Durability::Normal;
    o.embeddings = false;
    let db = Db::open(o).unwrap();
    let learn = |t: &str| db.learn(&LearnRequest { insight: t, ..Default::default() }).unwrap();
    let probes = &texts[3_000..];
    let mut per_learn = Vec::new();
    let mut stored = 0;
    for upto in [300, 3_000] {
        for t in &texts[stored..upto] {
            learn(t);
        }
        stored = upto;
        learn(&probes[per_learn.len() * 50]); // first learn after a batch may sync the index
        let ops: u64 = probes[per_learn.len() * 150 + 1..][..100].iter().map(|t| vm_ops(&db, || drop(learn(t)))).sum();
        per_learn.push(ops as f64 / 100.0);
    }
    let growth = per_learn[1] / per_learn[0];
    println!(
        "SQLite instructions per learn: {:.0} at 300 memories, {:.0} at 3,000 (x{growth:.2})",
        per_learn[0], per_learn[1]
    );
    assert!(growth < 1.5, "learn work grows with the database: {per_learn:?}");
}

/// The near-duplicate layer for texts without numbers finds exactly what a
/// comparison with every stored memory finds (texts from a small vocabulary with
/// stopwords, inflections and one-letter words, so near-duplicates are common).
#[test]
fn number_free_near_duplicates_match_a_full_comparison() {
    use crate::fingerprint::Terms;
    use crate::types::DupMethod;
    const VOCAB: &[&str] = &[
        "grasp",
        "grasping",
        "grasped",
        "cup",
        "cups",
        "red",
        "blue",
        "gripper",
        "slipped",
        "slips",
        "the",
        "a",
        "of",
        "on",
        "table",
        "shelf",
        "left",
        "arm",
        "x",
        "y",
        "moved",
        "moves",
        "quickly",
        "door",
        "does",
        "doe",
        "succeeded",
        "failed",
        "wet",
        "handle",
    ];
    let mut o = OpenOptions::in_memory();
    o.embeddings = false;
    let db = Db::open(o).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    let mut stored: Vec<(i64, String, Terms)> = Vec::new();
    let (mut near, mut exact) = (0, 0);
    for _ in 0..1_000 {
        // One to four texts, stored by one learn or one batch (its items see each other).
        let texts: Vec<String> = (0..1 + next(4))
            .map(|_| (0..1 + next(9)).map(|_| VOCAB[next(VOCAB.len() as u64) as usize]).collect::<Vec<_>>().join(" "))
            .collect();
        let reqs: Vec<LearnRequest> = texts.iter().map(|t| LearnRequest { insight: t, ..Default::default() }).collect();
        let outcomes = match reqs.len() {
            1 => vec![db.learn(&reqs[0]).unwrap()],
            _ => db.learn_batch(&reqs).unwrap(),
        };
        for (text, got) in texts.into_iter().zip(outcomes) {
            let terms = Terms::of(&text);
            let similarity =
                |t: &String, st: &Terms| if *t == text { Some(2.0) } else { terms.duplicate_similarity(st) };
            let want = stored
                .iter()
                .filter_map(|(_, t, st)| similarity(t, st))
                .fold(None::<f64>, |b, s| Some(b.map_or(s, |b| b.max(s))));
            match (want, got.duplicate) {
                (None, None) => stored.push((got.memory_id, text, terms)),
                (Some(w), Some(d)) => {
                    let best: Vec<i64> =
                        stored.iter().filter(|(_, t, st)| similarity(t, st) == Some(w)).map(|x| x.0).collect();
                    assert!(
                        best.contains(&d.existing_id),
                        "{text:?}: reported #{} not among the best {best:?}",
                        d.existing_id
                    );
                    match d.method {
                        DupMethod::Exact => exact += 1,
                        _ => near += 1,
                    }
                }
                (w, d) => panic!("{text:?}: expected {w:?}, learn reported {d:?}"),
            }
        }
    }
    println!("{near} near-duplicates, {exact} exact, {} stored", stored.len());
    // A batch's items see the items before them (rows the transaction wrote itself).
    let pair = ["gripper grasped wet handle of the blue door", "gripper grasped wet handle of the blue door quickly"];
    let reqs: Vec<LearnRequest> = pair.iter().map(|t| LearnRequest { insight: t, ..Default::default() }).collect();
    let out = db.learn_batch(&reqs).unwrap();
    assert!(out[0].duplicate.is_none());
    assert_eq!(out[1].duplicate.map(|d| (d.existing_id, d.method)), Some((out[0].memory_id, DupMethod::Jaccard)));
    assert!(near > 100 && stored.len() > 500, "the vocabulary must produce both outcomes");
}

/// Group commit: writes queued while the writer is busy run in one transaction;
/// each keeps its own outcome (a failing one rolls back alone), and every
/// acknowledged write is in the file afterwards.
#[test]
fn queued_writes_share_one_transaction_and_keep_their_own_outcomes() {
    use crate::error::Status;
    let dir = tempfile::Builder::new().prefix("rm-group-").tempdir().unwrap();
    let path = dir.path().join("m.db");
    let mut o = OpenOptions::path(&path);
    o.embeddings = false;
    let db = Db::open(o).unwrap();
    let ended = db.start_session(None, None).unwrap().session_id;
    db.end_session(&ended, None).unwrap();
    let (_, commits_before) = db.commit_counts();
    let writers = 6;
    let results = std::thread::scope(|s| {
        // Hold the writer so every learn below queues behind it.
        let held = db.store.writer_for_test();
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let (db, ended) = (&db, &ended);
                s.spawn(move || {
                    let text = format!("conveyor {i} stopped when the light curtain tripped");
                    // Writer 3 targets the ended session: its write fails, alone.
                    let session = (i == 3).then_some(ended.as_str());
                    db.learn(&LearnRequest { insight: &text, session_id: session, ..Default::default() })
                })
            })
            .collect();
        while db.store.queued_for_test() < writers {
            std::thread::yield_now();
        }
        drop(held);
        handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    let (_, commits_after) = db.commit_counts();
    assert_eq!(commits_after - commits_before, 1, "six queued writes, one transaction");
    for (i, r) in results.iter().enumerate() {
        match (i, r) {
            (3, Err(e)) => assert_eq!(e.status, Status::InvalidState),
            (3, Ok(_)) => panic!("a learn into an ended session must fail"),
            (_, r) => assert!(r.as_ref().unwrap().duplicate.is_none()),
        }
    }
    drop(db);
    let db = Db::open(OpenOptions { embeddings: false, ..OpenOptions::path(&path) }).unwrap();
    let stored = db
        .recall(&crate::types::RecallRequest { query: "conveyor light curtain", n: 10, ..Default::default() })
        .unwrap();
    assert_eq!(stored.hits.len(), writers - 1, "every acknowledged write is in the file");
}
