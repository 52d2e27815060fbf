//! History with the embedding model: a view as of a past time recalls in hybrid
//! mode with the vectors of the texts of then (a text changed since is embedded
//! again for the view; an unchanged one keeps its stored vector), and building
//! views leaves the database's own vectors as they are.

#[path = "model/mod.rs"]
mod model;
#[path = "common/scratch.rs"]
mod scratch;

use robotmem::*;

fn recall(db: &Db, q: &str) -> RecallResult {
    db.recall_unrecorded(&RecallRequest { query: q, n: 10, min_confidence: 0.0, ..Default::default() }).unwrap()
}

#[test]
fn a_view_recalls_with_the_vectors_of_the_texts_of_then() {
    let Some(m) = model::default_model("history-vectors") else { return };
    let d = scratch::Scratch::new("history-vectors");
    let db = Db::open(m.options(d.db())).unwrap();
    const OLD: &str = "the left gripper pad is worn; grip force 12 N holds mugs";
    const NEW: &str = "the charging contacts on dock 3 are corroded and need cleaning";
    let id = db.learn(&LearnRequest { insight: OLD, ..Default::default() }).unwrap().memory_id;
    let kept = db
        .learn(&LearnRequest { insight: "the elevator to floor 2 is slow in the morning", ..Default::default() })
        .unwrap()
        .memory_id;
    std::thread::sleep(std::time::Duration::from_millis(15));
    let t1 = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    std::thread::sleep(std::time::Duration::from_millis(15));
    db.update(id, NEW, None).unwrap();

    let then = db.as_of(&t1).unwrap();
    let r = recall(&then, OLD);
    assert_eq!(r.mode, SearchMode::Hybrid);
    let hit = r.hits.iter().find(|h| h.memory.id == id).expect("the text of then is found");
    assert!(hit.cosine.unwrap() > 0.999, "embedded again from the text of then: {:?}", hit.cosine);
    let r = recall(&then, "the elevator to floor 2 is slow in the morning");
    assert!(r.hits[0].memory.id == kept && r.hits[0].cosine.unwrap() > 0.999, "an unchanged memory keeps its vector");
    // Now: the new text's vector, in the database and in a view of now.
    let now = recall(&db, NEW);
    assert!(now.hits[0].memory.id == id && now.hits[0].cosine.unwrap() > 0.999);
    let old_now = recall(&db, OLD);
    assert!(old_now.hits.iter().filter(|h| h.memory.id == id).all(|h| h.cosine.unwrap() < 0.9));
    let view_now = db.as_of(&chrono::Utc::now().to_rfc3339()).unwrap();
    assert!(recall(&view_now, NEW).hits[0].cosine.unwrap() > 0.999);
    assert_eq!(db.embedding_status().unwrap().pending, 0, "the views embedded nothing in the database");
}
