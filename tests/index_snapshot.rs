//! The index snapshots stored in the file (search/snapshot.rs: the text index, the
//! context_filter columns, the spatial_sort coordinates): a reopened file recalls
//! exactly what rebuilt indexes recall — after a clean close, after changes the
//! snapshots do not hold (a handle that never closed), with damaged snapshots, and
//! with ones of another format.

#[path = "common/scratch.rs"]
mod scratch;
use std::path::Path;

use robotmem::*;

const WORDS: &[&str] = &[
    "grasp", "mug", "red", "blue", "push", "box", "slipped", "dock", "arm", "cup", "force", "table", "shelf", "belt",
    "tray", "bowl", "wrench", "cable", "door", "lift", "speed", "angle", "tool", "plate", "抓取", "杯子", "导航",
];
const QUERIES: &[&str] =
    &["grasp red mug", "push box", "cable on belt", "blue bowl angle", "抓取杯子", "door lift speed", "wrench"];

use scratch::open_lexical as open;

/// Deterministic texts: each one different (a serial), most sharing common words.
fn text(i: u64) -> String {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let n = 3 + (x % 9) as usize;
    let mut words = Vec::new();
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        words.push(WORDS[(x % WORDS.len() as u64) as usize]);
    }
    format!("{} serial{i}", words.join(" "))
}

/// A context with values to filter on and a position (on a coarse lattice: ties).
fn context(i: u64) -> String {
    let name = ["grasp", "push", "place"][(i % 3) as usize];
    let (x, y) = ((i * 7 % 23) as f64 / 4.0, (i * 11 % 19) as f64 / 4.0);
    format!(
        r#"{{"task": {{"name": "{name}", "success": {}}}, "force": {}, "spatial": {{"p": [{x}, {y}]}}}}"#,
        !i.is_multiple_of(4),
        i % 40
    )
}

fn learn(db: &Db, from: u64, count: u64) -> Vec<i64> {
    (from..from + count)
        .map(|i| {
            let (t, c) = (text(i), context(i));
            db.learn(&LearnRequest { insight: &t, context: Some(&c), ..Default::default() }).unwrap().memory_id
        })
        .collect()
}

const FILTERS: &[&str] =
    &[r#"{"task.success": false}"#, r#"{"task.name": "push", "force": {"$lt": 12}}"#, r#"{"force": {"$gte": 30}}"#];
const SPATIAL: &[&str] = &[
    r#"{"field": "spatial.p", "target": [1.0, 2.0]}"#,
    r#"{"field": "spatial.p", "target": [5.5, 0.25], "max_distance": 1.5}"#,
];

/// Every query's hits (id, score bits, distance bits), n = 20: plain, with each
/// filter, with each spatial sort.
fn recalls(db: &Db) -> Vec<Vec<(i64, u64, Option<u64>)>> {
    let mut reqs: Vec<RecallRequest> =
        QUERIES.iter().map(|q| RecallRequest { query: q, n: 20, ..Default::default() }).collect();
    for (i, f) in FILTERS.iter().enumerate() {
        reqs.push(RecallRequest { query: QUERIES[i], context_filter: Some(f), n: 20, ..Default::default() });
    }
    for (i, sp) in SPATIAL.iter().enumerate() {
        reqs.push(RecallRequest { query: QUERIES[i + 3], spatial_sort: Some(sp), n: 20, ..Default::default() });
    }
    reqs.iter()
        .map(|req| {
            let r = db.recall(req).unwrap();
            r.hits.iter().map(|h| (h.memory.id, h.score.to_bits(), h.distance.map(f64::to_bits))).collect()
        })
        .collect()
}

fn snapshot_rows(p: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(p).unwrap();
    let mut st = c.prepare("SELECT name FROM index_snapshots ORDER BY name").unwrap();
    let rows = st.query_map([], |r| r.get(0)).unwrap();
    rows.map(|r| r.unwrap()).collect()
}

fn snapshot(p: &Path) -> Option<(i64, String, usize)> {
    let c = rusqlite::Connection::open(p).unwrap();
    c.query_row("SELECT rev, format, length(data) FROM index_snapshots WHERE name = 'text'", [], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as usize))
    })
    .ok()
}

fn max_rev(p: &Path) -> i64 {
    let c = rusqlite::Connection::open(p).unwrap();
    c.query_row("SELECT max(rev) FROM memories", [], |r| r.get(0)).unwrap()
}

fn sql(p: &Path, statement: &str) {
    rusqlite::Connection::open(p).unwrap().execute_batch(statement).unwrap();
}

/// What a handle that builds its index from the rows alone recalls.
fn rebuilt(p: &Path) -> Vec<Vec<(i64, u64, Option<u64>)>> {
    let copy = p.with_extension("rebuilt.db");
    let _ = std::fs::remove_file(&copy);
    rusqlite::Connection::open(p).unwrap().execute("VACUUM INTO ?1", [copy.to_str().unwrap()]).unwrap();
    sql(&copy, "DELETE FROM index_snapshots");
    let db = open(&copy);
    let out = recalls(&db);
    std::mem::forget(db); // no snapshot of its own
    out
}

#[test]
fn reopened_file_recalls_what_a_rebuilt_index_recalls() {
    let d = scratch::Scratch::new("snapshot-reopen");
    let p = d.db();
    let db = open(&p);
    let ids = learn(&db, 0, 1500);
    for id in ids.iter().step_by(7) {
        db.forget(*id, "test").unwrap();
    }
    for (k, id) in ids.iter().skip(3).step_by(14).enumerate() {
        db.update(*id, &text(10_000 + k as u64), None).unwrap();
    }
    let before = recalls(&db);
    db.close().unwrap();
    let (rev, format, bytes) = snapshot(&p).expect("close stores a snapshot");
    assert_eq!(rev, max_rev(&p), "the snapshot is of the last rev");
    assert!(format.starts_with(&format!("robotmem {} text index", VERSION)), "{format}");
    assert!(bytes > 1000);
    let rows = snapshot_rows(&p);
    for want in [
        r#"column ["force"]"#,
        r#"column ["task","name"]"#,
        r#"column ["task","success"]"#,
        r#"coordinates ["spatial","p"]"#,
        "text",
    ] {
        assert!(rows.iter().any(|r| r == want), "{want} in {rows:?}");
    }

    let db = open(&p);
    assert_eq!(recalls(&db), before, "loaded from the snapshot");
    db.close().unwrap();
    assert_eq!(snapshot(&p).unwrap().0, rev, "nothing changed: not rewritten");
    assert_eq!(rebuilt(&p), before);

    // A damaged snapshot (same length, other bytes) and a cut one are rebuilt.
    for damage in [
        "UPDATE index_snapshots SET data = randomblob(length(data))",
        "UPDATE index_snapshots SET data = substr(data, 1, length(data) / 2)",
    ] {
        sql(&p, damage);
        let db = open(&p);
        assert_eq!(recalls(&db), before, "{damage}");
        drop(db);
    }
    // Another build's format is rebuilt, and replaced when the handle closes.
    sql(&p, "UPDATE index_snapshots SET format = 'robotmem 0.0.1'");
    let db = open(&p);
    assert_eq!(recalls(&db), before);
    db.close().unwrap();
    assert_eq!(snapshot(&p).unwrap().1, format, "replaced by this build's");
}

#[test]
fn a_snapshot_behind_the_file_is_brought_up_to_date() {
    let d = scratch::Scratch::new("snapshot-behind");
    let p = d.db();
    let db = open(&p);
    let ids = learn(&db, 0, 800);
    db.close().unwrap();
    // These texts hold numbers, so no learn read the index: nothing to save.
    assert_eq!(snapshot(&p), None);
    let db = open(&p);
    let _ = recalls(&db);
    db.close().unwrap();
    let (rev, ..) = snapshot(&p).unwrap();

    // Changes after the snapshot, by a handle that never closes (a killed process).
    let db = open(&p);
    let _ = recalls(&db);
    learn(&db, 800, 300);
    for id in ids.iter().step_by(5) {
        db.forget(*id, "test").unwrap();
    }
    for (k, id) in ids.iter().skip(1).step_by(10).enumerate() {
        db.update(*id, &text(20_000 + k as u64), None).unwrap();
    }
    std::mem::forget(db);
    assert_eq!(snapshot(&p).unwrap().0, rev, "not saved without close");

    let db = open(&p);
    assert_eq!(recalls(&db), rebuilt(&p), "the snapshot plus the newer rows");
    // Fewer changes than the threshold: closing keeps the stored snapshot.
    learn(&db, 5000, 3);
    db.close().unwrap();
    let (after, ..) = snapshot(&p).unwrap();
    assert!(after > rev, "the many changes since were saved ({rev} -> {after})");
    let db = open(&p);
    learn(&db, 6000, 3);
    db.close().unwrap();
    assert_eq!(snapshot(&p).unwrap().0, after, "3 changes: not rewritten");
    let db = open(&p);
    assert_eq!(recalls(&db), rebuilt(&p));
}

#[test]
fn near_duplicates_are_still_found_after_reopening() {
    // The near-duplicate check of number-free facts reads the same index.
    let d = scratch::Scratch::new("snapshot-dedup");
    let p = d.db();
    let db = open(&p);
    learn(&db, 0, 300);
    let first =
        db.learn(&LearnRequest { insight: "the blue tray slipped off the steel shelf", ..Default::default() }).unwrap();
    db.close().unwrap();
    let db = open(&p);
    let again = db
        .learn(&LearnRequest { insight: "The blue tray slipped off the steel shelf.", ..Default::default() })
        .unwrap();
    assert_eq!(again.memory_id, first.memory_id);
    assert!(again.duplicate.is_some());
}
