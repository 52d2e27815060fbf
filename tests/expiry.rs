//! Expiry: a memory given a time to live (or an expiry time, or its collection's
//! default) leaves recall, listings and dedup when that time passes, stays
//! readable by id as expired (not forgotten), can be given a new expiry, and
//! travels through export and import.

#[path = "common/scratch.rs"]
mod scratch;
use robotmem::*;

fn open(p: &std::path::Path, default_ttl: &[(&str, f64)]) -> Db {
    let mut o = OpenOptions::path(p);
    o.embeddings = false;
    o.durability = Durability::Normal;
    o.default_ttl = default_ttl.iter().map(|(c, s)| (c.to_string(), *s)).collect();
    Db::open(o).unwrap()
}

fn recall_ids(db: &Db, q: &str, collection: Option<&str>) -> Vec<i64> {
    let r = db.recall(&RecallRequest { query: q, n: 20, min_confidence: 0.0, collection, ..Default::default() });
    r.unwrap().hits.iter().map(|h| h.memory.id).collect()
}

fn learn(db: &Db, text: &str, ttl: Option<f64>, at: Option<&str>) -> i64 {
    let req = LearnRequest { insight: text, ttl_seconds: ttl, expires_at: at, ..Default::default() };
    db.learn(&req).unwrap().memory_id
}

#[test]
fn an_expired_memory_leaves_recall_listing_and_dedup() {
    let d = scratch::Scratch::new("expiry");
    let db = open(&d.db(), &[]);
    let keep = learn(&db, "the charging dock is at the north wall", None, None);
    let soon = learn(&db, "the corridor to the charging dock is blocked by a pallet", Some(1.5), None);
    let past = learn(&db, "the charging dock door was open this morning", None, Some("2020-01-01T00:00:00Z"));
    let m = db.get(soon).unwrap();
    assert!(m.expires_at.is_some() && !m.expired, "{m:?}");
    assert!(db.get(past).unwrap().expired, "a past expiry is expired at once");
    assert_eq!(recall_ids(&db, "charging dock", None).len(), 2);
    assert!(!recall_ids(&db, "charging dock", None).contains(&past));
    std::thread::sleep(std::time::Duration::from_millis(1700));
    // Gone from recall (ranked and "*" listing), filters, the active listing and dedup, at once.
    assert_eq!(recall_ids(&db, "charging dock", None), vec![keep]);
    assert_eq!(recall_ids(&db, "*", None), vec![keep]);
    let filtered = db.recall(&RecallRequest {
        query: "corridor pallet",
        context_filter: Some(r#"{"source": "learn_tool"}"#),
        min_confidence: 0.0,
        ..Default::default()
    });
    assert!(filtered.unwrap().hits.iter().all(|h| h.memory.id == keep));
    let active = db.list(&ListRequest { status: Some(MemoryStatus::Active), ..Default::default() }).unwrap();
    assert_eq!(active.memories.iter().map(|m| m.id).collect::<Vec<_>>(), vec![keep]);
    let all = db.list(&ListRequest { status: None, ..Default::default() }).unwrap();
    assert_eq!(all.total, 3, "every status lists the expired too");
    let again = db.learn(&LearnRequest {
        insight: "the corridor to the charging dock is blocked by a pallet",
        ..Default::default()
    });
    assert!(again.unwrap().duplicate.is_none(), "an expired memory is no duplicate of a new one");
    // Readable by id, expired, not forgotten.
    let m = db.get(soon).unwrap();
    assert!(m.expired && m.status == MemoryStatus::Active, "{m:?}");
    let s = db.stats().unwrap();
    assert_eq!((s.active, s.expired, s.invalidated), (2, 2, 0), "{s:?}");
    // A new expiry brings it back; none keeps it for good.
    let m = db.set_expiry(soon, Some(3600.0), None).unwrap();
    assert!(!m.expired && m.expires_at.is_some());
    assert!(recall_ids(&db, "corridor pallet", None).contains(&soon));
    let m = db.set_expiry(past, None, None).unwrap();
    assert!(m.expires_at.is_none() && !m.expired);
    assert!(recall_ids(&db, "dock door open", None).contains(&past));
}

#[test]
fn a_collections_default_ttl_applies_unless_the_memory_says() {
    let d = scratch::Scratch::new("expiry-default");
    let db = open(&d.db(), &[("obstacles", 0.8)]);
    let obstacle = |text: &str, ttl: Option<f64>| {
        let req = LearnRequest { insight: text, collection: Some("obstacles"), ttl_seconds: ttl, ..Default::default() };
        db.learn(&req).unwrap().memory_id
    };
    let box_ = obstacle("a box on the floor of aisle 3", None);
    let wall = obstacle("a wall at the end of aisle 3", Some(3600.0));
    let kept = learn(&db, "aisle 3 is the narrowest aisle", None, None);
    assert!(db.get(box_).unwrap().expires_at.is_some() && db.get(kept).unwrap().expires_at.is_none());
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert_eq!(recall_ids(&db, "aisle 3", Some("obstacles")), vec![wall]);
    assert_eq!(recall_ids(&db, "aisle 3", None), vec![kept]);
    let perceived = db
        .save_perception(&PerceptionRequest {
            description: "lidar scan of aisle 3",
            perception_type: PerceptionType::Visual,
            collection: Some("obstacles"),
            ..Default::default()
        })
        .unwrap();
    assert!(db.get(perceived.memory_id).unwrap().expires_at.is_some(), "perceptions take the default too");
}

#[test]
fn bad_expiry_is_refused_by_name() {
    let d = scratch::Scratch::new("expiry-bad");
    let db = open(&d.db(), &[]);
    for (ttl, at, field) in [
        (Some(0.0), None, "ttl_seconds"),
        (Some(-1.0), None, "ttl_seconds"),
        (Some(f64::NAN), None, "ttl_seconds"),
        (Some(1e12), None, "ttl_seconds"),
        (None, Some("tomorrow"), "expires_at"),
        (Some(10.0), Some("2030-01-01T00:00:00Z"), "not both"),
    ] {
        let e = db
            .learn(&LearnRequest { insight: "x y z", ttl_seconds: ttl, expires_at: at, ..Default::default() })
            .unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains(field), "{e}");
    }
    let mut o = OpenOptions::in_memory();
    o.default_ttl.insert("obstacles".into(), -5.0);
    let e = Db::open(o).err().expect("refused");
    assert!(e.message.contains("default_ttl[\"obstacles\"]"), "{e}");
    let id = learn(&db, "the gripper pads were replaced", None, None);
    db.forget(id, "wrong robot").unwrap();
    assert_eq!(db.set_expiry(id, Some(5.0), None).unwrap_err().status, Status::InvalidState);
}

#[test]
fn expiry_travels_through_export_and_import() {
    let d = scratch::Scratch::new("expiry-transfer");
    let a = open(&d.join("a.db"), &[]);
    let later = learn(&a, "the elevator is out of service until friday", Some(7200.0), None);
    let gone = learn(&a, "the elevator was out of service last week", None, Some("2020-01-01T00:00:00Z"));
    let file = scratch::exported(&a);
    let b = open(&d.join("b.db"), &[("*", 1.0)]);
    let sum = b.import_lines(file.as_bytes(), |_, _| {}).unwrap();
    assert_eq!(sum.memories, 2);
    let ids = recall_ids(&b, "elevator out of service", None);
    assert_eq!(ids.len(), 1, "the expired one stays expired, the other keeps its own expiry");
    let m = b.get(ids[0]).unwrap();
    assert_eq!(m.expires_at, a.get(later).unwrap().expires_at);
    assert!(a.get(gone).unwrap().expired);
    // A log line with a ttl.
    let sum = b.import_lines(&b"{\"text\": \"door 4 jams\", \"ttl_seconds\": 60}\n"[..], |_, _| {}).unwrap();
    assert_eq!(sum.memories, 1);
    let m = b.get(recall_ids(&b, "door jams", None)[0]).unwrap();
    assert!(m.expires_at.is_some());
}
