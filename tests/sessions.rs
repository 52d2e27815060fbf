//! Session semantics: time decay applied once per elapsed day (never compounding),
//! protected categories, consolidation guards, proactive recall.

#[path = "common/scratch.rs"]
mod scratch;
use robotmem::*;

/// A database in a temporary directory; fields drop in order, the directory last.
struct TempDb {
    db: Db,
    path: std::path::PathBuf,
    _dir: scratch::Scratch,
}

fn temp_db(name: &str) -> TempDb {
    let dir = scratch::Scratch::new(&format!("sessions-{name}"));
    let path = dir.db();
    TempDb { db: Db::open(OpenOptions::path(&path)).unwrap(), path, _dir: dir }
}

fn learn(db: &Db, text: &str, session: Option<&str>) -> i64 {
    let o = db.learn(&LearnRequest { insight: text, session_id: session, ..Default::default() }).unwrap();
    assert!(o.duplicate.is_none(), "{text}");
    o.memory_id
}

/// Moves a memory's creation time `days` into the past (what a robot sees after idle days).
fn age(t: &TempDb, id: i64, days: f64) {
    let c = rusqlite::Connection::open(&t.path).unwrap();
    c.execute(
        "UPDATE memories SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?2), last_accessed = NULL,
            decay_next_at = CASE WHEN decay_next_at IS NULL THEN NULL
                                 ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?2, '+1 day') END
         WHERE id = ?1",
        rusqlite::params![id, format!("-{days} days")],
    )
    .unwrap();
    // The creation time is checksummed with the other texts (schema 6): keep it valid.
    let (collection, session, category, context, created): (String, Option<String>, String, String, String) = c
        .query_row(
            "SELECT collection, session_id, category, context, created_at FROM memories WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap();
    let hash =
        robotmem::internals::fingerprint::meta_hash(&collection, session.as_deref(), &category, &context, &created);
    c.execute("UPDATE memories SET meta_hash = ?2 WHERE id = ?1", rusqlite::params![id, hash]).unwrap();
}

fn end_new_session(db: &Db) -> SessionEnded {
    let s = db.start_session(None, None).unwrap().session_id;
    db.end_session(&s, None).unwrap()
}

#[test]
fn decay_applies_once_per_elapsed_day_and_never_compounds() {
    let t = temp_db("decay");
    let id = learn(&t.db, "gripper pads wear after long shifts", None);
    let base = t.db.get(id).unwrap().confidence;
    age(&t, id, 30.2);
    let first = end_new_session(&t.db);
    assert_eq!(first.decayed_count, 1);
    let expected = base * 0.99f64.powi(30);
    let c1 = t.db.get(id).unwrap().confidence;
    assert!((c1 - expected).abs() < 1e-9, "{c1} vs {expected}");
    for _ in 0..5 {
        assert_eq!(end_new_session(&t.db).decayed_count, 0, "same day: nothing more to decay");
    }
    assert_eq!(t.db.get(id).unwrap().confidence, c1, "repeated end_session calls never compound");
    age(&t, id, 31.5);
    end_new_session(&t.db);
    let c2 = t.db.get(id).unwrap().confidence;
    assert!((c2 - base * 0.99f64.powi(31)).abs() < 1e-9, "one more elapsed day, one more step");
}

#[test]
fn decay_spares_fresh_protected_and_floor() {
    let t = temp_db("protected");
    let fresh = learn(&t.db, "camera exposure tuned for the warehouse", None);
    let rule = learn(&t.db, "must never exceed 15N grip force on glass", None);
    assert_eq!(t.db.get(rule).unwrap().category, "constraint");
    age(&t, rule, 400.0);
    let old = learn(&t.db, "conveyor belt speed drifted", None);
    age(&t, old, 2000.0);
    end_new_session(&t.db);
    assert!(t.db.get(old).unwrap().confidence < 0.05);
    let floor = t.db.get(old).unwrap().confidence;
    age(&t, old, 4000.0);
    end_new_session(&t.db);
    assert_eq!(t.db.get(old).unwrap().confidence, floor, "at or below 0.05 nothing decays further");
    assert_eq!(t.db.get(rule).unwrap().confidence, 0.8, "protected categories never decay");
    assert_eq!(t.db.get(fresh).unwrap().confidence, 0.8, "less than a day old: untouched");
}

#[test]
fn recall_resets_the_decay_clock() {
    let t = temp_db("touch");
    let id = learn(&t.db, "dock alignment needs two passes", None);
    age(&t, id, 10.0);
    t.db.recall(&RecallRequest { query: "dock alignment", ..Default::default() }).unwrap();
    t.db.flush().unwrap();
    let m = t.db.get(id).unwrap();
    assert_eq!(m.access_count, 1);
    assert!(m.last_accessed.is_some());
    assert_eq!(end_new_session(&t.db).decayed_count, 0, "just accessed: no idle days");
}

#[test]
fn consolidation_merges_same_facts_but_not_different_numbers_or_outcomes() {
    let t = temp_db("consolidate");
    let s = t.db.start_session(None, None).unwrap().session_id;
    // Jaccard 4/7 = 0.57: below learn's duplicate threshold (0.70), above consolidation's (0.50).
    let a = learn(&t.db, "approach the shelf slowly from the left side with the arm extended", Some(&s));
    let b = learn(&t.db, "approach the shelf slowly from the left", Some(&s));
    let fail = learn(&t.db, "grasp failed: mug slipped at 9.1N from the left side", Some(&s));
    let ok = learn(&t.db, "grasp succeeded: mug held at 37.8N from the left side", Some(&s));
    let ok2 = learn(&t.db, "grasp succeeded: mug held at 9.1N from the left side", Some(&s));
    let e = t.db.end_session(&s, Some(1.0)).unwrap();
    assert_eq!(e.consolidated.merged_groups, 1, "{e:?}");
    assert_eq!(e.consolidated.superseded_count, 1);
    let (ma, mb) = (t.db.get(a).unwrap(), t.db.get(b).unwrap());
    // The survivor holds every word of the other ("with the arm extended" is not
    // lost), even though the spec's tie-break (newest) would pick the shorter one.
    assert_eq!(mb.status, MemoryStatus::Superseded);
    assert_eq!(mb.superseded_by, Some(a));
    assert_eq!(ma.status, MemoryStatus::Active);
    for id in [fail, ok, ok2] {
        assert_eq!(t.db.get(id).unwrap().status, MemoryStatus::Active, "different number or outcome: kept");
    }
    let r = t.db.recall(&RecallRequest { query: "approach shelf", ..Default::default() }).unwrap();
    assert!(r.hits.iter().all(|h| h.memory.id != b), "superseded memories leave search");
}

#[test]
fn a_memory_updated_out_of_a_protected_category_decays_again() {
    let t = temp_db("unprotect");
    let id = learn(&t.db, "must never exceed 15N grip force on glass", None);
    t.db.update(id, "grip force on glass tuned to 12N on the new gripper", None).unwrap();
    assert_ne!(t.db.get(id).unwrap().category, "constraint");
    age(&t, id, 3.5);
    assert_eq!(end_new_session(&t.db).decayed_count, 1);
}
