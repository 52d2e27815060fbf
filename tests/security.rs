//! No SQL or FTS5 injection: dot paths, collection names, session ids and queries
//! with quotes, `*`, `NEAR`, `OR`, `"`, `;`, `--` … are data.

use robotmem::*;

const HOSTILE: &[&str] = &[
    "x' OR '1'='1",
    "\"; DROP TABLE memories; --",
    "a\" OR \"b",
    "NEAR(grasp mug, 2)",
    "grasp* OR mug^ AND NOT cup",
    "content:grasp",
    "{col1 col2}: x",
    "-- comment",
    "'); DELETE FROM memories_fts; --",
    "%_docsize",
];

fn db() -> Db {
    Db::open(OpenOptions::in_memory()).unwrap()
}

fn count(db: &Db, collection: Option<&str>) -> usize {
    db.recall(&RecallRequest { query: "*", n: 100, collection, ..Default::default() }).unwrap().hits.len()
}

#[test]
fn hostile_queries_are_words() {
    let db = db();
    let a = db.learn(&LearnRequest { insight: "grasp the mug near the sink", ..Default::default() }).unwrap();
    for q in HOSTILE {
        let r = db.recall(&RecallRequest { query: q, ..Default::default() }).unwrap();
        assert!(r.hits.iter().all(|h| h.memory.id == a.memory_id), "{q}");
    }
    assert_eq!(count(&db, None), 1);
    let r = db.recall(&RecallRequest { query: "NEAR(grasp mug, 2)", ..Default::default() }).unwrap();
    assert_eq!(r.hits.len(), 1, "NEAR is a word, grasp and mug match");
}

#[test]
fn hostile_text_is_stored_verbatim_and_deduplicated_safely() {
    let db = db();
    for (i, t) in HOSTILE.iter().enumerate() {
        let text = format!("{t} note {i}");
        let o = db.learn(&LearnRequest { insight: &text, ..Default::default() }).unwrap();
        assert!(o.duplicate.is_none(), "{text}");
        assert_eq!(db.get(o.memory_id).unwrap().content, text);
        let again = db.learn(&LearnRequest { insight: &text, ..Default::default() }).unwrap();
        assert_eq!(again.duplicate.map(|d| d.existing_id), Some(o.memory_id));
    }
    assert_eq!(count(&db, None), HOSTILE.len());
}

#[test]
fn hostile_collections_and_sessions_are_names() {
    let db = db();
    db.learn(&LearnRequest { insight: "default collection memory", ..Default::default() }).unwrap();
    for c in HOSTILE {
        db.learn(&LearnRequest { insight: "grasp in a strange collection", collection: Some(c), ..Default::default() })
            .unwrap();
        assert_eq!(count(&db, Some(c)), 1, "{c}");
        let e = db.learn(&LearnRequest { insight: "x y z", session_id: Some(c), ..Default::default() }).unwrap_err();
        assert_eq!(e.status, Status::NotFound, "{c}");
        assert_eq!(db.end_session(c, None).unwrap_err().status, Status::NotFound);
    }
    assert_eq!(count(&db, None), 1, "other collections untouched");
}

#[test]
fn hostile_dot_paths_are_keys() {
    let db = db();
    for (i, key) in HOSTILE.iter().enumerate() {
        let ctx = serde_json::json!({ "task": { *key: i } }).to_string();
        db.learn(&LearnRequest {
            insight: &format!("context key test {i}"),
            context: Some(&ctx),
            ..Default::default()
        })
        .unwrap();
    }
    for (i, key) in HOSTILE.iter().enumerate() {
        if key.contains('.') {
            continue; // a dot separates path segments by definition
        }
        let filter = serde_json::json!({ format!("task.{key}"): i }).to_string();
        let r = db
            .recall(&RecallRequest {
                query: "context key test",
                n: 100,
                context_filter: Some(&filter),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(r.hits.len(), 1, "{key}");
        assert!(r.hits[0].memory.content.ends_with(&format!(" {i}")));
    }
    let spatial = serde_json::json!({ "field": HOSTILE[1], "target": [0, 0] }).to_string();
    let r = db.recall(&RecallRequest { query: "context", spatial_sort: Some(&spatial), ..Default::default() }).unwrap();
    assert!(r.hits.iter().all(|h| h.distance == Some(f64::INFINITY)));
}
