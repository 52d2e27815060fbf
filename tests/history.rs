//! History: every change keeps the version it replaces (`Db::history`), and a
//! view of the database as of a past time (`Db::as_of`) recalls, gets and lists
//! the memories as they were then: content, context, state (forgotten,
//! superseded, expired only if they were by then), over updates, forgets,
//! consolidation, expiry, imports and changes made outside robotmem.

#[path = "common/scratch.rs"]
mod scratch;
use robotmem::*;

fn open(p: &std::path::Path) -> Db {
    scratch::open_lexical(p)
}

fn learn(db: &Db, text: &str, session: Option<&str>) -> i64 {
    db.learn(&LearnRequest { insight: text, session_id: session, ..Default::default() }).unwrap().memory_id
}

fn recall_ids(db: &Db, q: &str) -> Vec<i64> {
    let r = db.recall_unrecorded(&RecallRequest { query: q, n: 20, min_confidence: 0.0, ..Default::default() });
    r.unwrap().hits.iter().map(|h| h.memory.id).collect()
}

/// The time now, after a pause so that what happened before is strictly earlier
/// (stored times have milliseconds).
fn mark() -> String {
    std::thread::sleep(std::time::Duration::from_millis(15));
    let t = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    std::thread::sleep(std::time::Duration::from_millis(15));
    t
}

#[test]
fn updates_and_forgets_keep_each_version_and_as_of_shows_each() {
    let d = scratch::Scratch::new("history");
    let db = open(&d.db());
    let before = mark();
    let id = learn(&db, "the left gripper pad is worn; grip force 12 N holds mugs", None);
    let other = learn(&db, "the charging dock is at the north wall", None);
    let t1 = mark();
    db.update(id, "the left gripper pad was replaced; grip force 8 N holds mugs", Some(r#"{"task": "grasp"}"#))
        .unwrap();
    let t2 = mark();
    db.forget(id, "the gripper was swapped for a suction cup").unwrap();
    let t3 = mark();

    let h = db.history(id).unwrap();
    let shape: Vec<_> = h.iter().map(|v| (v.cause.as_str(), v.status, v.content.contains("worn"))).collect();
    assert_eq!(
        shape,
        [
            ("learn", MemoryStatus::Active, true),
            ("update", MemoryStatus::Active, false),
            ("forget", MemoryStatus::Invalidated, false),
        ]
    );
    // Each version runs from where the one before ended; the last is current.
    for w in h.windows(2) {
        assert_eq!(w[0].valid_to.as_deref(), Some(w[1].valid_from.as_str()), "{h:?}");
    }
    assert!(h[0].valid_from < t1 && t1 < h[1].valid_from && h[1].valid_from < t2 && t2 < h[2].valid_from);
    assert_eq!(h[2].valid_to, None);
    assert!(h[1].context.contains("grasp") && !h[0].context.contains("grasp"));
    assert_eq!(h[2].invalidated_reason.as_deref(), Some("the gripper was swapped for a suction cup"));
    assert!(h.iter().all(|v| v.writer.is_empty() && v.cause_writer.is_empty()), "all this robot's");
    assert!(h[0].version < h[1].version && h[1].version < h[2].version);
    assert_eq!(db.history(other).unwrap().len(), 1, "never changed: one version");
    assert_eq!(db.history(999).unwrap_err().status, Status::NotFound);

    // As of each time: content, context, state, recall and listing of then.
    let v0 = db.as_of(&before).unwrap();
    assert_eq!(v0.get(id).unwrap_err().status, Status::NotFound, "not learned yet");
    assert!(recall_ids(&v0, "gripper").is_empty());
    assert_eq!(v0.list(&ListRequest::default()).unwrap().total, 0);
    let v1 = db.as_of(&t1).unwrap();
    let m = v1.get(id).unwrap();
    assert!(m.content.contains("worn") && m.status == MemoryStatus::Active, "{m:?}");
    assert_eq!(recall_ids(&v1, "worn gripper pad"), vec![id]);
    assert!(recall_ids(&v1, "replaced").is_empty(), "the later text is not known then");
    let v2 = db.as_of(&t2).unwrap();
    assert!(v2.get(id).unwrap().content.contains("replaced"));
    assert!(v2.get(id).unwrap().context.contains("grasp"));
    assert_eq!(recall_ids(&v2, "replaced gripper pad"), vec![id]);
    assert!(recall_ids(&v2, "worn").is_empty(), "the earlier text is gone by then");
    let filtered = v2.recall_unrecorded(&RecallRequest {
        query: "gripper",
        context_filter: Some(r#"{"task": "grasp"}"#),
        min_confidence: 0.0,
        ..Default::default()
    });
    assert_eq!(filtered.unwrap().hits.iter().map(|h| h.memory.id).collect::<Vec<_>>(), vec![id]);
    let v3 = db.as_of(&t3).unwrap();
    assert_eq!(v3.get(id).unwrap().status, MemoryStatus::Invalidated);
    assert!(recall_ids(&v3, "gripper").is_empty(), "forgotten by then");
    assert_eq!(recall_ids(&v3, "charging dock"), vec![other]);
    let active = v3.list(&ListRequest { status: Some(MemoryStatus::Active), ..Default::default() }).unwrap();
    assert_eq!(active.memories.iter().map(|m| m.id).collect::<Vec<_>>(), vec![other]);
    assert_eq!(v3.view_time(), Some(t3.as_str()));
    assert_eq!(db.view_time(), None);

    // A view is read-only; the future is not known; a view has no views.
    let e = v1.learn(&LearnRequest { insight: "a new fact about the dock", ..Default::default() }).unwrap_err();
    assert_eq!(e.status, Status::ReadOnly, "{e:?}");
    assert_eq!(v1.forget(other, "no").unwrap_err().status, Status::ReadOnly);
    assert_eq!(db.as_of("2999-01-01T00:00:00Z").err().unwrap().status, Status::InvalidArgument);
    assert_eq!(db.as_of("yesterday").err().unwrap().status, Status::InvalidArgument);
    assert_eq!(v1.as_of(&t1).err().unwrap().status, Status::InvalidArgument);
    // Building views wrote nothing to the database.
    assert_eq!(db.history(id).unwrap(), h);
    assert_eq!(db.get(id).unwrap().status, MemoryStatus::Invalidated);
}

#[test]
fn consolidation_and_sessions_as_of_before_and_after() {
    let d = scratch::Scratch::new("history-consolidation");
    let db = open(&d.db());
    let s = db.start_session(None, None).unwrap().session_id;
    let a = learn(&db, "approach the shelf slowly from the left side with the arm extended", Some(&s));
    let b = learn(&db, "approach the shelf slowly from the left", Some(&s));
    learn(&db, "grasp failed: mug slipped at 9.1N from the left side", Some(&s));
    learn(&db, "grasp succeeded: mug held at 37.8N from the left side", Some(&s));
    let t1 = mark();
    let e = db.end_session(&s, Some(1.0)).unwrap();
    assert_eq!(e.consolidated.superseded_count, 1, "{e:?}");
    let t2 = mark();
    let h = db.history(b).unwrap();
    assert_eq!(h.iter().map(|v| v.cause.as_str()).collect::<Vec<_>>(), ["learn", "consolidation"]);
    assert_eq!((h[1].status, h[1].superseded_by), (MemoryStatus::Superseded, Some(a)));
    let mut before = recall_ids(&db.as_of(&t1).unwrap(), "approach the shelf");
    before.sort();
    assert_eq!(before, vec![a, b], "both active before the session ended");
    assert_eq!(recall_ids(&db.as_of(&t2).unwrap(), "approach the shelf"), vec![a]);
    // The session of then: going at t1 (no outcome yet), ended at t2.
    let session = |at: &str| {
        let v = db.as_of(at).unwrap();
        let page = v.sessions(0, 10).unwrap();
        assert_eq!(page.sessions.len(), 1);
        let i = page.sessions[0].clone();
        (i.status, i.outcome_score, i.memory_count)
    };
    assert_eq!(session(&t1), ("active".to_string(), None, 4));
    assert_eq!(session(&t2), ("ended".to_string(), Some(1.0), 4));
}

#[test]
fn expiry_as_of_a_time_before_it_passed() {
    let d = scratch::Scratch::new("history-expiry");
    let db = open(&d.db());
    let soon = db
        .learn(&LearnRequest {
            insight: "the corridor to the dock is blocked by a pallet",
            ttl_seconds: Some(0.4),
            ..Default::default()
        })
        .unwrap()
        .memory_id;
    let t1 = mark();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(recall_ids(&db, "corridor pallet").is_empty(), "expired now");
    let v = db.as_of(&t1).unwrap();
    assert_eq!(recall_ids(&v, "corridor pallet"), vec![soon], "not expired then");
    let m = v.get(soon).unwrap();
    assert!(!m.expired && m.expires_at == db.get(soon).unwrap().expires_at, "{m:?}");
    assert!(db.get(soon).unwrap().expired);
    // A new expiry is a change of its own.
    db.set_expiry(soon, Some(3600.0), None).unwrap();
    let h = db.history(soon).unwrap();
    assert_eq!(h.iter().map(|v| v.cause.as_str()).collect::<Vec<_>>(), ["learn", "expiry"]);
    assert_eq!(recall_ids(&db, "corridor pallet"), vec![soon]);
}

#[test]
fn imports_purge_and_changes_made_outside_robotmem() {
    let d = scratch::Scratch::new("history-import");
    let a = open(&d.join("a.db"));
    let id = learn(&a, "door 4 jams when the cart pushes it", None);
    a.update(id, "door 4 jams when the cart pushes it fast", None).unwrap();
    let file = scratch::exported(&a);
    let created = a.get(id).unwrap().created_at;
    let t0 = mark();
    let b = open(&d.join("b.db"));
    assert_eq!(b.import_lines(file.as_bytes(), |_, _| {}).unwrap().memories, 1);
    let got = b.list(&ListRequest::default()).unwrap().memories[0].clone();
    assert_eq!(got.created_at, created, "the import keeps the creation time");
    let h = b.history(got.id).unwrap();
    assert_eq!(h.len(), 1, "an import brings the current version, not the history: {h:?}");
    assert_eq!(h[0].cause, "import");
    assert!(h[0].valid_from > t0, "known from the import on");
    assert!(b.as_of(&t0).unwrap().get(got.id).is_err(), "this file did not have it at t0");

    // A change made by hand in SQL is kept too, as `sql`.
    drop(b);
    let conn = rusqlite::Connection::open(d.join("b.db")).unwrap();
    conn.execute("UPDATE memories SET content = 'door 4 is fixed' WHERE id = ?1", [got.id]).unwrap();
    drop(conn);
    let b = open(&d.join("b.db"));
    let h = b.history(got.id).unwrap();
    assert_eq!(h.iter().map(|v| v.cause.as_str()).collect::<Vec<_>>(), ["import", "sql"]);
    assert_eq!(h[1].content, "door 4 is fixed");

    // Purge drops versions replaced before its cutoff, with the memories it removes.
    std::thread::sleep(std::time::Duration::from_millis(30));
    let h = a.history(id).unwrap();
    assert_eq!(h.len(), 2);
    a.purge(0.01).unwrap();
    assert_eq!(a.history(id).unwrap().len(), 1, "the replaced version is older than the cutoff");
    a.forget(id, "obsolete").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(30));
    learn(&a, "a memory that stays so the purge can remove the other", None);
    a.purge(0.01).unwrap();
    assert_eq!(a.history(id).unwrap_err().status, Status::NotFound, "purged with its versions");
    let conn = rusqlite::Connection::open(d.join("a.db")).unwrap();
    let left: i64 =
        conn.query_row("SELECT count(*) FROM memory_versions WHERE memory_id = ?1", [id], |r| r.get(0)).unwrap();
    assert_eq!(left, 0);
}

#[test]
fn a_file_of_robotmem_0_6_gets_history_from_its_upgrade_on() {
    let d = scratch::Scratch::new("history-upgrade");
    let (id, created) = {
        let db = open(&d.db());
        let id = learn(&db, "the lift at gate 2 is slow in the morning", None);
        (id, db.get(id).unwrap().created_at)
    };
    // Back to schema 8, as robotmem 0.6 wrote it.
    let c = rusqlite::Connection::open(d.db()).unwrap();
    c.execute_batch(&format!("{} PRAGMA user_version = 8;", scratch::UNDO_SCHEMA_9)).unwrap();
    drop(c);
    let db = open(&d.db());
    let h = db.history(id).unwrap();
    assert_eq!((h.len(), h[0].cause.as_str(), h[0].valid_from.as_str()), (1, "learn", created.as_str()));
    let t = mark();
    db.update(id, "the lift at gate 2 was repaired and is fast again", None).unwrap();
    assert_eq!(db.history(id).unwrap().len(), 2);
    assert!(db.as_of(&t).unwrap().get(id).unwrap().content.contains("slow"));
}
