//! Retention with an embedding model: eviction and purge drop the vectors too,
//! every handle's vector index follows the removals (also another handle on the
//! same file, and a stored vector snapshot older than the removals), and a hybrid
//! recall never returns a removed memory.

#[path = "model/mod.rs"]
mod model;
#[path = "common/scratch.rs"]
mod scratch;

use robotmem::*;

fn texts() -> Vec<String> {
    let things = ["pallet", "cart", "box", "drum", "crate", "tote"];
    (0..300).map(|i| format!("a {} blocks aisle {} near dock {}", things[i % 6], i, i % 17)).collect()
}

/// Hybrid recall of each text: no removed id comes back; the vector index holds
/// exactly the stored (active, embedded) memories.
fn check(db: &Db, texts: &[String], removed: &[i64], what: &str) {
    for t in texts.iter().step_by(7) {
        let r = db.recall_unrecorded(&RecallRequest { query: t, n: 20, min_confidence: 0.0, ..Default::default() });
        let r = r.unwrap();
        assert_eq!(r.mode, SearchMode::Hybrid, "{what}");
        for h in &r.hits {
            assert!(!removed.contains(&h.memory.id), "{what}: {t:?} returned removed #{}", h.memory.id);
        }
    }
    let s = db.stats().unwrap();
    assert_eq!(db.loaded_indexes().1 as i64, s.active + s.expired, "{what}: vector index vs stored memories");
}

#[test]
fn eviction_and_purge_drop_vectors_from_every_index_and_snapshot() {
    let Some(m) = model::default_model("retention-vectors") else { return };
    let d = scratch::Scratch::new("retention-vectors");
    let texts = texts();
    let ids: Vec<i64> = {
        let db = Db::open(m.options(d.db())).unwrap();
        let reqs: Vec<LearnRequest> = texts.iter().map(|t| LearnRequest { insight: t, ..Default::default() }).collect();
        let out = db.learn_batch(&reqs).unwrap();
        assert!(out.iter().all(|o| o.duplicate.is_none() && o.has_embedding));
        check(&db, &texts, &[], "learned");
        out.iter().map(|o| o.memory_id).collect()
        // closed: 300 changes store the vector snapshot
    };
    let mut removed = Vec::new();
    {
        let mut o = m.options(d.db());
        o.max_memories = 250;
        let db = Db::open(o).unwrap();
        let other = Db::open(m.options(d.db())).unwrap();
        check(&other, &texts, &[], "other handle before");
        let out = db.learn(&LearnRequest { insight: "a forklift blocks the ramp at dock 3", ..Default::default() });
        let out = out.unwrap();
        assert_eq!(out.evicted.len(), 51, "300 + 1 - 250");
        removed.extend(out.evicted);
        for id in &ids[100..120] {
            db.forget(*id, "moved").unwrap();
            removed.push(*id);
        }
        assert_eq!(db.purge(0.0).unwrap().purged, 20);
        check(&db, &texts, &removed, "evicting handle");
        check(&other, &texts, &removed, "other handle");
        // Few changes: no new snapshot at close, the removals stay behind the stored one.
    }
    let db = Db::open(m.options(d.db())).unwrap();
    check(&db, &texts, &removed, "reopened");
    assert_eq!(db.stats().unwrap().memories, 230);
}
